/* loomd's monitoring surfaces (docs/monitoring.md, "loomd"): the
 * monitor.snapshot method and the host, GPU and per-job families of
 * GET /metrics, all read through libloom's mon part when asked. */
#ifndef LOOMD_MONITOR_H
#define LOOMD_MONITOR_H

#include "daemon/runner.h"
#include "loom/rpc.h"
#include "loom/store.h"

typedef struct loomd_monitor loomd_monitor_t;

/* runner may be NULL (--executor none: no per-job metrics). */
int loomd_monitor_open(loom_store_t *store, loomd_runner_t *runner, loomd_monitor_t **out,
                       loom_err_t *err);
void loomd_monitor_close(loomd_monitor_t *m);
int loomd_monitor_add_methods(loom_rpc_dispatcher_t *d, loomd_monitor_t *m, loom_err_t *err);
/* A loom_rpc_metrics_fn: host and GPU families, and loom_job_process_* for
 * each running job's process tree. */
int loomd_monitor_metrics(loom_buf_t *out, void *ctx);

#endif
