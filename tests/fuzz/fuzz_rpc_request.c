/* Fuzz the JSON-RPC request path: arbitrary bytes through the dispatcher
 * (limits, parsing, validation, params shaping, batches, deferred
 * completion). Every response must be valid JSON-RPC 2.0: an object or a
 * non-empty array of objects, each with jsonrpc "2.0", an id and exactly one
 * of result and error. */
#include <stdlib.h>
#include <string.h>

#include "loom/rpc.h"

static loom_rpc_call_t *pending[1024];
static size_t npending;

static loom_rpc_status_t h_echo(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)ctx;
    loom_rpc_call_complete(call, params ? json_incref(params) : NULL);
    return LOOM_RPC_DONE;
}

static loom_rpc_status_t h_typed(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)ctx;
    loom_err_t err;
    const char *name = NULL;
    int64_t n = 0;
    if (loom_json_get_string(params, "name", true, "", &name, &err) != LOOM_OK ||
        loom_json_get_int(params, "n", false, "", 0, 100, &n, &err) != LOOM_OK) {
        loom_rpc_call_fail_params(call, &err);
        return LOOM_RPC_DONE;
    }
    if (n == 13) {
        loom_rpc_call_invalid_param(call, "n", "not 13", json_object_get(params, "n"));
        return LOOM_RPC_DONE;
    }
    if (n == 7)
        return LOOM_RPC_DONE; /* a forgetful handler: becomes -32603 */
    loom_rpc_call_fail(call, -32001, NULL, json_string(name));
    return LOOM_RPC_DONE;
}

static loom_rpc_status_t h_later(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)params;
    (void)ctx;
    pending[npending++] = call;
    return LOOM_RPC_PENDING;
}

static int got_response;

static void check(const json_t *r)
{
    if (!json_is_object(r))
        abort();
    const char *v = json_string_value(json_object_get(r, "jsonrpc"));
    if (!v || strcmp(v, "2.0") != 0)
        abort();
    json_t *res, *data;
    int code;
    char msg[256];
    const json_t *id;
    if (loom_rpc_response_parse(r, &res, &code, msg, sizeof msg, &data, &id, NULL) != LOOM_OK)
        abort();
    json_decref(res);
    json_decref(data);
}

static void on_done(const char *resp, size_t len, void *ctx)
{
    (void)ctx;
    got_response = 1;
    if (!resp)
        return;
    json_error_t je;
    json_t *v = json_loadb(resp, len, 0, &je);
    if (!v)
        abort();
    if (json_is_array(v)) {
        if (json_array_size(v) == 0)
            abort();
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) check(e);
    } else {
        check(v);
    }
    json_decref(v);
}

static const char *const typed_params[] = {"name", "n", NULL};

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static loom_rpc_dispatcher_t *d;
    if (!d) {
        loom_rpc_limits_t lim = {.max_body = 64 * 1024, .max_depth = 32, .max_batch = 1000};
        loom_log_set_level(LOOM_LOG_OFF);
        if (loom_rpc_dispatcher_new(&lim, &d, NULL) != LOOM_OK ||
            loom_rpc_dispatcher_add(d, "echo", h_echo, NULL, NULL, 0, NULL) != LOOM_OK ||
            loom_rpc_dispatcher_add(d, "typed", h_typed, NULL, typed_params, LOOM_RPC_STRICT_PARAMS,
                                    NULL) != LOOM_OK ||
            loom_rpc_dispatcher_add(d, "none", h_echo, NULL, NULL, LOOM_RPC_NO_PARAMS, NULL) !=
                LOOM_OK ||
            loom_rpc_dispatcher_add(d, "later", h_later, NULL, typed_params, 0, NULL) != LOOM_OK)
            abort();
    }
    got_response = 0;
    npending = 0;
    if (loom_rpc_dispatch(d, (const char *)data, size, NULL, on_done, NULL) != LOOM_OK)
        return 0;
    /* complete deferred calls afterwards, last first */
    size_t n = npending;
    for (size_t i = n; i-- > 0;) {
        if (i % 2)
            loom_rpc_call_complete(pending[i], json_integer((json_int_t)i));
        else
            loom_rpc_call_fail(pending[i], -32002, "later failed", NULL);
    }
    if (!got_response || loom_rpc_dispatcher_in_flight(d) != 0)
        abort();
    return 0;
}
