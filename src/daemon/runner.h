/* loomd's runner: the loop that takes pending jobs from the store, orders
 * them with the queue policy, places them with the placement policy on the
 * cluster model, starts them with the executor, and records how they end.
 * Private to loomd (src/daemon). */
#ifndef LOOMD_RUNNER_H
#define LOOMD_RUNNER_H

#include <sys/types.h>

#include "loom/core.h"
#include "loom/exec.h"
#include "loom/runtime.h"
#include "loom/store.h"

typedef struct loomd_runner loomd_runner_t;

typedef struct loomd_runner_config {
    const char *queue_policy; /* fifo | sjf | priority | tiresias */
    const char *placement; /* firstfit | bestfit | dotprod | packing | clustering | random | fgd */
    const char *jobs_dir;  /* per-job directories */
    int64_t grace_ns;      /* TERM -> KILL; 0: 10 s */
    int64_t tick_ns;       /* poll interval; 0: 100 ms */
    uint64_t seed;         /* random placement and ties */
    int64_t timeslice_ns;  /* Gandiva time-slicing quantum; 0: off (local executor only) */
    bool pack_check;       /* Gandiva packing introspection (local executor only) */
    loom_runtime_backfill_t backfill; /* backfill with reservations (greedy: none) */
    int64_t default_limit_ns;         /* backfill's limit of a job without one; 0: 1 h */
    const json_t *nodes;         /* array of node objects (docs/daemon.md); borrowed; local only */
    const char *executor;        /* "local" (default) or "slurm" (docs/slurm.md) */
    const char *slurm_partition; /* slurm: NULL = the default partition */
    int64_t node_refresh_ns;     /* slurm: how often the partition's nodes are re-read; 0: 5 s */
    uint64_t output_max;         /* local: stdout + stderr bytes per job; 0: no limit */
    const struct loomd_quotas *quotas; /* running quotas (quota.h); borrowed, outlives the
                                          runner; NULL: none */
    /* Rubick's policy for reconfigurable jobs (local only): the device of
     * its performance model, a name (looked up in rubick_device_dir, else
     * $LOOM_DEVICE_DIR, else loom's devices) or a file; NULL: off. */
    const char *rubick_device;
    const char *rubick_device_dir;
    int64_t rubick_cost_ns; /* one reconfiguration's cost; 0: 30 s */
} loomd_runner_config_t;

/* Builds the cluster model (slurm: from the partition's nodes), adopts the jobs the store says are
 * RUNNING, and starts the runner thread. */
int loomd_runner_start(loom_store_t *store, const loomd_runner_config_t *cfg, loomd_runner_t **out,
                       loom_err_t *err);
/* Something changed (a submission, a cancel): run a step soon. */
void loomd_runner_wake(loomd_runner_t *r);
/* Stops the thread. Running jobs go on (their shepherds keep them) and are
 * adopted by the next loomd. NULL is a no-op. */
void loomd_runner_stop(loomd_runner_t *r);
/* Whether some node of the cluster could ever hold spec's resources, by
 * the runtime's own test (loom_sched_feasible on its model, the request
 * made as for the runtime): job.submit's refusal. */
int loomd_runner_feasible(loomd_runner_t *r, const loom_job_spec_t *spec,
                          loom_sched_infeasible_t *why, loom_err_t *err);
/* node.list: the nodes with capacity, free resources and running jobs. */
json_t *loomd_runner_nodes(loomd_runner_t *r);
/* Counters for server.info and /metrics: jobs started/ended, GPU
 * occupancy integrated over time (milli-GPU seconds), capacity. */
json_t *loomd_runner_stats(loomd_runner_t *r);
/* The running (not suspended) jobs: up to max ids and shepherd PIDs.
 * Returns how many. */
size_t loomd_runner_running(loomd_runner_t *r, int64_t *ids, pid_t *pids, size_t max);

/* What the usage sampler (jobusage.c) needs of a running job. */
typedef struct loomd_running {
    int64_t id;
    pid_t pid;                       /* its shepherd */
    char cgroup[LOOM_EXEC_PATH_MAX]; /* "" without one */
    int ngpus;
    int gpus[LOOM_SCHED_MAX_GPUS]; /* the node's GPU indices */
    int gpu_milli;                 /* per GPU; 1000: whole GPUs */
} loomd_running_t;

/* The cluster's allocation now, for the cluster series. */
typedef struct loomd_alloc {
    double gpus_total, gpus_allocated, gpus_whole, gpus_shared;
    double cpus_total, cpus_allocated, memory_total_bytes, memory_allocated_bytes;
    double running;
} loomd_alloc_t;
void loomd_runner_alloc(loomd_runner_t *r, loomd_alloc_t *out);

/* The running (not suspended) local jobs, up to max; returns how many. */
size_t loomd_runner_sampled(loomd_runner_t *r, loomd_running_t *out, size_t max);
/* Pending reasons (squeue's: Resources, Priority, QuotaLimit, ...): every
 * PENDING job object in jobs (an array, or one object) gets the
 * scheduler's present one as "reason", read from the runtime under the
 * runner's lock. The runner also writes each pending job's reason to the
 * store when it changes (after the step that changed it), so readers of
 * the store alone (the dashboard's feed) see it too. */
void loomd_runner_reasons(loomd_runner_t *r, json_t *jobs);
/* A pending job changed in the store (job.update, job.hold, job.release,
 * or it was put back to PENDING by job.requeue after it ended): the runtime
 * takes it again as the store now has it. */
int loomd_runner_changed(loomd_runner_t *r, int64_t id, loom_err_t *err);
/* job.requeue of a running job: its process is stopped and, once it has
 * ended, the job goes back to PENDING (the runner's Slurm requeue path).
 * LOOM_ESTATE if the runner does not run it. */
int loomd_runner_requeue(loomd_runner_t *r, int64_t id, loom_err_t *err);
/* Prometheus families (appends). */
void loomd_runner_metrics(loomd_runner_t *r, loom_buf_t *out);

/* The default node: this machine's name, CPUs and memory, and gpus virtual
 * GPUs (0: none) of type gpu_type with gpu_memory bytes each. */
json_t *loomd_default_node(int gpus, const char *gpu_type, uint64_t gpu_memory);
/* This machine's NVIDIA GPUs as NVML reports them (through libloom mon):
 * their number, a type made from the first one's name ("NVIDIA H200" ->
 * "h200") and the smallest memory among them. LOOM_EUNAVAIL when NVML
 * cannot be loaded or sees no GPU. */
int loomd_detect_gpus(int *ngpus, char *type, size_t typelen, uint64_t *memory_bytes,
                      loom_err_t *err);
/* Parses "name=N,cpus=C,memory=16GiB,gpus=4,gpu_type=T,gpu_memory=80GiB". */
int loomd_parse_node(const char *spec, json_t **out, loom_err_t *err);

#endif
