/* job.usage (docs/protocol.md): a job's usage series as columns, one array
 * per quantity aligned with "time", so that a chart or a data frame takes
 * them as they are; "since" gives only newer points (a live chart's
 * increments). Unknown values are null. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/jobusage.h"
#include "daemon/methods.h"

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* The columns of the job itself. */
static json_t *job_columns(const loom_usage_point_t *p, size_t n)
{
    static const char *const names[] = {"time",
                                        "span_seconds",
                                        "cpu_cores",
                                        "memory_bytes",
                                        "memory_peak_bytes",
                                        "read_bytes_per_second",
                                        "write_bytes_per_second"};
    enum { NCOLS = sizeof names / sizeof names[0] };
    json_t *cols[NCOLS];
    for (size_t c = 0; c < NCOLS; c++)
        cols[c] = json_array();
    for (size_t i = 0; i < n; i++) {
        const double v[NCOLS] = {
            (double)p[i].time_ns / 1e9, (double)p[i].span_ns / 1e9, p[i].cpu_cores,
            p[i].memory_bytes,          p[i].memory_peak_bytes,     p[i].read_bytes_per_second,
            p[i].write_bytes_per_second};
        for (size_t c = 0; c < NCOLS; c++)
            json_array_append_new(cols[c], num(v[c]));
    }
    json_t *o = json_object();
    for (size_t c = 0; c < NCOLS; c++)
        json_object_set_new(o, names[c], cols[c]);
    return o;
}

/* GPU index's columns, null where a point lacks that GPU. */
static json_t *gpu_columns(const loom_usage_point_t *p, size_t n, int index)
{
    json_t *util = json_array(), *peak = json_array(), *mem = json_array(), *mpeak = json_array(),
           *power = json_array();
    for (size_t i = 0; i < n; i++) {
        const loom_usage_gpu_t *g = NULL;
        for (int k = 0; k < p[i].ngpus && !g; k++)
            if (p[i].gpus[k].index == index)
                g = &p[i].gpus[k];
        json_array_append_new(util, num(g ? g->util_pct : NAN));
        json_array_append_new(peak, num(g ? g->util_peak_pct : NAN));
        json_array_append_new(mem, num(g ? g->memory_bytes : NAN));
        json_array_append_new(mpeak, num(g ? g->memory_peak_bytes : NAN));
        json_array_append_new(power, num(g ? g->power_watts : NAN));
    }
    return json_pack("{s:i, s:o, s:o, s:o, s:o, s:o}", "index", index, "util_percent", util,
                     "util_peak_percent", peak, "memory_bytes", mem, "memory_peak_bytes", mpeak,
                     "power_watts", power);
}

static bool has_index(const json_t *gpus, int index)
{
    const json_t *g;
    size_t i;
    json_array_foreach(gpus, i, g)
    {
        if (json_integer_value(json_object_get(g, "index")) == index)
            return true;
    }
    return false;
}

void loomd_jobusage_columns(const loom_usage_point_t *p, size_t n, json_t *res)
{
    json_t *gpus = json_array();
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < p[i].ngpus; k++)
            if (!has_index(gpus, p[i].gpus[k].index))
                json_array_append_new(gpus, gpu_columns(p, n, p[i].gpus[k].index));
    json_object_set_new(res, "points", json_integer((json_int_t)n));
    json_object_set_new(res, "columns", job_columns(p, n));
    json_object_set_new(res, "gpus", gpus);
}

/* since (Unix seconds, a double: exact to about a microsecond) as the
 * last nanosecond of its microsecond, so a point's own time given back as
 * since excludes that point. */
static int64_t since_ns(double since_s)
{
    return since_s > 0 ? llround(since_s * 1e6) * 1000 + 999 : 0;
}

/* Drops the points that end at or before since_s. */
static size_t after(loom_usage_point_t *p, size_t n, double since_s)
{
    size_t k = 0;
    while (k < n && p[k].time_ns <= since_ns(since_s))
        k++;
    if (k > 0)
        memmove(p, p + k, (n - k) * sizeof *p);
    return n - k;
}

static loom_rpc_status_t m_usage(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_jobusage_t *u = ctx;
    loom_store_t *store = loomd_jobusage_store(u);
    loom_err_t err;
    int64_t id;
    double since = 0;
    if (loomd_param_job_id(params, "id", &id, &err) != LOOM_OK ||
        loom_json_get_number(params, "since", false, "", &since, &err) != LOOM_OK) {
        loom_rpc_call_fail_params(call, &err);
        return LOOM_RPC_DONE;
    }
    loom_job_t job;
    if (loom_store_get(store, id, &job, &err) != LOOM_OK) {
        loom_rpc_call_fail(call, LOOMD_ERR_JOB_NOT_FOUND, err.msg,
                           json_pack("{s:I}", "id", (json_int_t)id));
        return LOOM_RPC_DONE;
    }
    loom_usage_point_t *p;
    size_t n;
    if (loom_store_usage_series(store, id, &p, &n, &err) != LOOM_OK) {
        loom_job_free(&job);
        loom_rpc_call_fail(call, LOOMD_ERR_STORE, err.msg, NULL);
        return LOOM_RPC_DONE;
    }
    json_t *summary = loomd_usage_summary(&job, p, n);
    n = after(p, n, since);
    json_t *res = json_pack("{s:I, s:s, s:i}", "id", (json_int_t)id, "state",
                            loom_job_state_name(job.state), "max_points", LOOM_USAGE_POINTS_MAX);
    loomd_jobusage_columns(p, n, res);
    json_object_set_new(res, "summary", summary ? summary : json_null());
    free(p);
    loom_job_free(&job);
    loom_rpc_call_complete(call, res);
    return LOOM_RPC_DONE;
}

/* cluster.usage's columns. */
static json_t *cluster_columns(const loom_cluster_point_t *p, size_t n)
{
    static const char *const names[] = {"time",
                                        "span_seconds",
                                        "gpus_total",
                                        "gpus_allocated",
                                        "gpus_whole",
                                        "gpus_shared",
                                        "gpus_busy",
                                        "cpus_total",
                                        "cpus_allocated",
                                        "memory_total_bytes",
                                        "memory_allocated_bytes",
                                        "pending",
                                        "running"};
    enum { NCOLS = sizeof names / sizeof names[0] };
    json_t *cols[NCOLS];
    for (size_t c = 0; c < NCOLS; c++)
        cols[c] = json_array();
    for (size_t i = 0; i < n; i++) {
        const double v[NCOLS] = {(double)p[i].time_ns / 1e9,
                                 (double)p[i].span_ns / 1e9,
                                 p[i].gpus_total,
                                 p[i].gpus_allocated,
                                 p[i].gpus_whole,
                                 p[i].gpus_shared,
                                 p[i].gpus_busy,
                                 p[i].cpus_total,
                                 p[i].cpus_allocated,
                                 p[i].memory_total_bytes,
                                 p[i].memory_allocated_bytes,
                                 p[i].pending,
                                 p[i].running};
        for (size_t c = 0; c < NCOLS; c++)
            json_array_append_new(cols[c], num(v[c]));
    }
    json_t *o = json_object();
    for (size_t c = 0; c < NCOLS; c++)
        json_object_set_new(o, names[c], cols[c]);
    return o;
}

static loom_rpc_status_t m_cluster_usage(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_jobusage_t *u = ctx;
    loom_err_t err;
    double since = (double)loom_time_real_ns() / 1e9 - 86400;
    if (params && loom_json_get_number(params, "since", false, "", &since, &err) != LOOM_OK) {
        loom_rpc_call_fail_params(call, &err);
        return LOOM_RPC_DONE;
    }
    loom_cluster_point_t *p;
    size_t n;
    if (loom_store_cluster_series(loomd_jobusage_store(u), since_ns(since), &p, &n, &err) !=
        LOOM_OK) {
        loom_rpc_call_fail(call, LOOMD_ERR_STORE, err.msg, NULL);
        return LOOM_RPC_DONE;
    }
    json_t *res =
        json_pack("{s:I, s:o}", "points", (json_int_t)n, "columns", cluster_columns(p, n));
    free(p);
    loom_rpc_call_complete(call, res);
    return LOOM_RPC_DONE;
}

int loomd_jobusage_add_methods(loom_rpc_dispatcher_t *d, loomd_jobusage_t *u, loom_err_t *err)
{
    static const char *const params[] = {"id", "since", NULL};
    static const char *const cparams[] = {"since", NULL};
    int rc =
        loom_rpc_dispatcher_add(d, "job.usage", m_usage, u, params, LOOM_RPC_STRICT_PARAMS, err);
    return rc ? rc
              : loom_rpc_dispatcher_add(d, "cluster.usage", m_cluster_usage, u, cparams,
                                        LOOM_RPC_STRICT_PARAMS, err);
}
