/* usage.report: the accounting view of the jobs table. Everyone may read
 * everyone's usage (sreport's default); the figures come from the store, so
 * they survive restarts. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/usage.h"

/* "since": an RFC 3339 time; the error names the parameter. */
static int parse_since(const char *text, int64_t *ns, loom_err_t *err)
{
    int rc = loom_time_parse_rfc3339(text, ns, err);
    if (rc && err)
        loom_err_prefix(err, "since (an RFC 3339 time such as 2026-12-03T13:00:00Z)");
    return rc;
}

static json_t *row_json(const loom_store_usage_row_t *u)
{
    return json_pack("{s:s, s:s, s:I, s:f, s:f, s:f, s:f}", "user", u->user, "account", u->account,
                     "jobs", (json_int_t)u->jobs, "gpu_seconds", u->gpu_seconds, "cpu_seconds",
                     u->cpu_seconds, "memory_gib_seconds", u->memory_gib_seconds, "wall_seconds",
                     u->wall_seconds);
}

static int get_name(const json_t *params, const char *key, const char **out, loom_err_t *err)
{
    const json_t *v = params ? json_object_get(params, key) : NULL;
    *out = NULL;
    if (!v || json_is_null(v))
        return LOOM_OK;
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 256)
        return loom_err_set(err, LOOM_EINVAL, "%s: expected a name of 1 to 256 bytes, found %s",
                            key, loom_json_type_name(v));
    *out = json_string_value(v);
    return LOOM_OK;
}

static loom_rpc_status_t m_usage_report(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loom_store_t *store = ctx;
    loom_err_t err;
    loom_store_usage_query_t q = {.now_ns = loom_time_real_ns()};
    const json_t *since = params ? json_object_get(params, "since") : NULL;
    if (get_name(params, "user", &q.user, &err) || get_name(params, "account", &q.account, &err) ||
        (since && !json_is_null(since) &&
         parse_since(json_string_value(since), &q.since_ns, &err))) {
        loom_rpc_call_fail_params(call, &err);
        return LOOM_RPC_DONE;
    }
    loom_store_usage_row_t *rows;
    size_t n;
    if (loom_store_usage(store, &q, &rows, &n, &err)) {
        loom_rpc_call_fail(call, -32004, err.msg, NULL);
        return LOOM_RPC_DONE;
    }
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        json_array_append_new(arr, row_json(&rows[i]));
    loom_store_usage_free(rows, n);
    char from[32] = "", until[32];
    if (q.since_ns)
        loom_time_format_rfc3339(q.since_ns, from);
    loom_time_format_rfc3339(q.now_ns, until);
    json_t *res =
        json_pack("{s:o, s:s, s:o}", "since", q.since_ns ? json_string(from) : json_null(), "until",
                  until, "rows", arr ? arr : json_array());
    if (!res) {
        loom_rpc_call_fail(call, LOOM_RPC_INTERNAL_ERROR, "out of memory", NULL);
        return LOOM_RPC_DONE;
    }
    loom_rpc_call_complete(call, res);
    return LOOM_RPC_DONE;
}

int loomd_usage_add_methods(loom_rpc_dispatcher_t *d, loom_store_t *store, loom_err_t *err)
{
    static const char *const params[] = {"user", "account", "since", NULL};
    return loom_rpc_dispatcher_add(d, "usage.report", m_usage_report, store, params,
                                   LOOM_RPC_STRICT_PARAMS, err);
}
