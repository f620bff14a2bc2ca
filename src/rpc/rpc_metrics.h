/* Private to rpc: a lock-free latency histogram and Prometheus text helpers
 * shared by the dispatcher (per-method call latency) and the HTTP server
 * (per-request latency). Counters are relaxed atomics: a scrape may see one
 * observation half-recorded (count ahead of a bucket), which Prometheus
 * tolerates; no observation is ever lost. */
#ifndef LOOM_RPC_METRICS_H
#define LOOM_RPC_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

#include "loom/core.h"

#define RPC_HIST_BUCKETS 15

typedef struct rpc_hist {
    _Atomic uint64_t bucket[RPC_HIST_BUCKETS]; /* non-cumulative */
    _Atomic uint64_t count;
    _Atomic uint64_t sum_ns;
} rpc_hist_t;

void rpc_hist_observe(rpc_hist_t *h, int64_t ns);
/* Appends NAME_bucket{LABELS,le=..}, NAME_sum{LABELS}, NAME_count{LABELS}.
 * labels is "" or `key="value",...` without braces. */
int rpc_hist_format(const rpc_hist_t *h, const char *name, const char *labels, loom_buf_t *out);
/* Appends a Prometheus label value with \\, \" and \n escaped. */
int rpc_prom_escape(loom_buf_t *out, const char *value);

#endif
