/* Latency histograms and Prometheus text helpers used by the dispatcher and
 * the HTTP server. Buckets are fixed (100 us .. 10 s): the same on every
 * family, so dashboards can compare them. */
#include "rpc/rpc_metrics.h"

static const double bucket_le[RPC_HIST_BUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                   0.005,  0.01,    0.025,  0.05,  0.1,
                                                   0.25,   0.5,     1.0,    2.5,   10.0};

void rpc_hist_observe(rpc_hist_t *h, int64_t ns)
{
    if (ns < 0)
        ns = 0;
    double s = (double)ns / 1e9;
    for (int i = 0; i < RPC_HIST_BUCKETS; i++) {
        if (s <= bucket_le[i]) {
            atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
            break;
        }
    }
    atomic_fetch_add_explicit(&h->sum_ns, (uint64_t)ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
}

int rpc_hist_format(const rpc_hist_t *h, const char *name, const char *labels, loom_buf_t *out)
{
    const char *sep = labels[0] ? "," : "";
    uint64_t cum = 0;
    int rc = LOOM_OK;
    for (int i = 0; i < RPC_HIST_BUCKETS && rc == LOOM_OK; i++) {
        cum += atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
        rc = loom_buf_appendf(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep,
                              bucket_le[i], (unsigned long long)cum);
    }
    uint64_t count = atomic_load_explicit(&h->count, memory_order_relaxed);
    if (count < cum)
        count = cum; /* a concurrent observation: keep +Inf >= every bucket */
    uint64_t sum = atomic_load_explicit(&h->sum_ns, memory_order_relaxed);
    if (rc == LOOM_OK)
        rc = loom_buf_appendf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
                              (unsigned long long)count);
    if (rc == LOOM_OK)
        rc = loom_buf_appendf(out, "%s_sum%s%s%s %.9f\n", name, labels[0] ? "{" : "", labels,
                              labels[0] ? "}" : "", (double)sum / 1e9);
    if (rc == LOOM_OK)
        rc = loom_buf_appendf(out, "%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "", labels,
                              labels[0] ? "}" : "", (unsigned long long)count);
    return rc;
}

int rpc_prom_escape(loom_buf_t *out, const char *value)
{
    int rc = LOOM_OK;
    for (const char *p = value; *p && rc == LOOM_OK; p++) {
        if (*p == '\\')
            rc = loom_buf_append_str(out, "\\\\");
        else if (*p == '"')
            rc = loom_buf_append_str(out, "\\\"");
        else if (*p == '\n')
            rc = loom_buf_append_str(out, "\\n");
        else
            rc = loom_buf_append_char(out, *p);
    }
    return rc;
}
