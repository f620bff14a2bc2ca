/* Usage over time of running jobs (docs/monitoring.md, "Usage series"):
 * the sampler thread that records it and the job.usage method that
 * returns it. */
#ifndef LOOMD_JOBUSAGE_H
#define LOOMD_JOBUSAGE_H

#include "daemon/runner.h"
#include "loom/rpc.h"
#include "loom/store.h"

typedef struct loomd_jobusage loomd_jobusage_t;

/* start: run the sampler thread (once a second); runner may be NULL
 * (--executor none: nothing to sample, job.usage still answers). */
int loomd_jobusage_open(loom_store_t *store, loomd_runner_t *runner, bool start,
                        loomd_jobusage_t **out, loom_err_t *err);
void loomd_jobusage_close(loomd_jobusage_t *u);
/* How long the cluster series is kept (0: 30 days). */
void loomd_jobusage_set_window(loomd_jobusage_t *u, int64_t window_ns);
/* One round of sampling (the thread's; tests call it directly). */
void loomd_jobusage_tick(loomd_jobusage_t *u);
loom_store_t *loomd_jobusage_store(const loomd_jobusage_t *u);
/* job.usage and cluster.usage. */
int loomd_jobusage_add_methods(loom_rpc_dispatcher_t *d, loomd_jobusage_t *u, loom_err_t *err);
/* The job's usage summary (jobusage_summary.c) from its series: CPU
 * efficiency, memory, GPUs against the request, hints; NULL when n is 0. */
json_t *loomd_usage_summary(const loom_job_t *job, const loom_usage_point_t *p, size_t n);
/* job.get's addition: job's summary set on j as "usage_summary" when it
 * has usage points. */
void loomd_usage_summary_add(loom_store_t *store, const loom_job_t *job, json_t *j);
/* A series as job.usage's "columns" and "gpus" members, set on res. */
void loomd_jobusage_columns(const loom_usage_point_t *p, size_t n, json_t *res);

#endif
