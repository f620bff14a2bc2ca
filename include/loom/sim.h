/* loom sim: a trace-driven simulator that runs the very same sched policies
 * as loomd.
 *
 * Inputs: the Alibaba GPU cluster trace 2023 (node list and pod list CSVs)
 * and loom's own JSONL job manifests (docs/scheduling.md, "Traces").
 *
 * Modes:
 * - packing: the FGD paper's evaluation. Tasks are drawn at random with
 *   replacement until their total GPU request reaches `inflate` times the
 *   cluster's GPU capacity; no departures; a task that fits nowhere is
 *   counted as failed. After every arrival: arrived GPU request (% of
 *   capacity), GPU allocation ratio (%), fragmented GPUs.
 * - dynamic: arrivals at creation times, departures after the trace's run
 *   time, and loomd's own scheduling step (libloom runtime: queue policy,
 *   placement, Gandiva's time-slicing) in virtual time: JCT, waiting time,
 *   makespan, utilization over time.
 *
 * With debug_check the bookkeeping (no over-commit, conservation of GPU
 * shares) is verified after every event; the tests run that way. */
#ifndef LOOM_SIM_H
#define LOOM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loom/core.h"
#include "loom/rubick.h"
#include "loom/runtime.h"
#include "loom/sched.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_sim_task {
    char name[48];
    loom_sched_req_t req;
    double create_s;   /* arrival (due) time */
    double duration_s; /* run time; < 0: unknown (runs to the end) */
    int priority;
    double estimate_s;
    double time_limit_s;
    /* What decides when it may start besides resources (JSONL traces,
     * docs/scheduling.md): sbatch's --dependency, where job N is the trace's
     * Nth task ("": none); singleton's name (its "name", else its "id");
     * held from arrival until release_s (0: for ever); not before begin_s
     * (0: at once); its owner and account for the runtime's quotas and
     * fair share (0: the simulator's own assignment, or none). Times are
     * trace seconds, like create_s. */
    char dependency[256];
    uint64_t name_key;
    bool hold;
    double release_s, begin_s;
    uint32_t user, account;
} loom_sim_task_t;

typedef struct loom_sim_trace {
    loom_sim_task_t *tasks;
    size_t n, cap;
} loom_sim_trace_t;

/* Node list CSV (columns sn, cpu_milli, memory_mib, gpu, model; by name,
 * any order, extra columns ignored). Adds the nodes to c. Errors read
 * "NAME:LINE:COLUMN: ...". */
int loom_sim_nodes_parse_csv(const char *text, size_t len, const char *name,
                             loom_sched_cluster_t *c, loom_err_t *err);
/* The *_load functions read a file (plain or gzip-compressed) or a trace
 * loom ships, by name ("openb", "openb-default": loom_data_trace). */
int loom_sim_nodes_load(const char *arg, loom_sched_cluster_t *c, loom_err_t *err);

/* Pod list CSV (name, cpu_milli, memory_mib, num_gpu, gpu_milli required;
 * gpu_spec, creation_time, deletion_time, scheduled_time optional). GPU
 * types are resolved against c. Appends to t. */
int loom_sim_pods_parse_csv(const char *text, size_t len, const char *name,
                            const loom_sched_cluster_t *c, loom_sim_trace_t *t, loom_err_t *err);
/* loom's JSONL manifest: one JSON object per line (docs/scheduling.md). */
int loom_sim_jsonl_parse(const char *text, size_t len, const char *name,
                         const loom_sched_cluster_t *c, loom_sim_trace_t *t, loom_err_t *err);
/* By content: a file whose first non-blank byte is '{' is JSONL, else CSV. */
int loom_sim_tasks_load(const char *arg, const loom_sched_cluster_t *c, loom_sim_trace_t *t,
                        loom_err_t *err);
void loom_sim_trace_free(loom_sim_trace_t *t);
/* FGD's target workload learned from the trace's tasks: the most common
 * shapes covering 95% of them (loom_sched_workload_learn). */
int loom_sim_trace_workload(const loom_sim_trace_t *t, loom_sched_workload_t *out, loom_err_t *err);

/* ----------------------------------------------------------------- runs */

/* Called for every start in dynamic mode: the task's index in the trace,
 * the (virtual) time and where it went. */
typedef void (*loom_sim_start_fn)(void *ctx, size_t task, double t_s,
                                  const loom_sched_alloc_t *alloc);

typedef struct loom_sim_opts {
    const char *policy; /* placement policy name */
    const char *queue;  /* queue policy (dynamic mode), NULL: fifo */
    uint64_t seed;
    double inflate;                        /* packing: 0 means 1.3 */
    double compress;                       /* dynamic: arrival times divided by this (0 means 1) */
    bool exact_scores;                     /* see loom_sched_placer_opts_t */
    loom_sched_ties_t ties;                /* see loom_sched_placer_opts_t */
    bool debug_check;                      /* verify bookkeeping after every event */
    bool keep_points;                      /* keep the per-arrival records */
    const loom_sched_workload_t *workload; /* FGD's; NULL: learned from the trace */
    double timeslice_s;                    /* dynamic: Gandiva time-slicing quantum; 0: off */
    /* dynamic: backfill with reservations (loom_runtime_config_t's
     * backfill and default_limit_s; greedy: none). */
    int backfill; /* loom_runtime_backfill_t */
    double default_limit_s;
    /* dynamic: what a preemption costs (seconds): each resumed job runs
     * this much longer (restoring its state; 0: free, as SIGSTOP/SIGCONT) */
    double preempt_cost_s;
    loom_sim_start_fn on_start; /* dynamic: NULL, or told of every start */
    void *on_start_ctx;
    /* dynamic: owners for the trace's tasks (docs/scheduling.md, "Users in
     * the simulator"): task i belongs to user k in 1..users with
     * probability proportional to 1/k^user_skew (Zipf; 0: uniform), drawn
     * from seed; 0 users: no owners. At most LOOM_SIM_MAX_USERS. */
    uint32_t users;
    double user_skew;
    /* dynamic: accounts for the users (fair share by account): user k
     * belongs to account 1 + (k - 1) % accounts; 0: every job's account
     * is 0. */
    uint32_t accounts;
    /* dynamic: quotas (loom_runtime_quota_rule_t, as `loom sim --quota`):
     * users and accounts named by number ("user:3=running=1",
     * "account:2=gpus=4,pending=10"), the numbers of the trace's
     * "user"/"account" or of --users/--accounts. Running quotas (gpus,
     * running) hold jobs in the runtime; submission quotas (pending, time)
     * refuse a job at its arrival, as loomd's job.submit does (refused). */
    const loom_runtime_quota_rule_t *quotas;
    size_t nquotas;
} loom_sim_opts_t;

#define LOOM_SIM_MAX_USERS 64

typedef struct loom_sim_point {
    float arrived_pct; /* arrived GPU request, % of capacity */
    float alloc_pct;   /* allocated GPU, % of capacity */
    float frag_gpus;   /* fragmented GPUs under the target workload */
    uint8_t failed;    /* this arrival did not fit */
} loom_sim_point_t;

typedef struct loom_sim_packing_result {
    size_t arrivals, failed;
    double failed_gpus;       /* GPUs asked by failed tasks */
    double alloc_at_100;      /* allocation ratio (%) when arrived reaches 100% */
    double frag_at_100;       /* fragmented GPUs then */
    double frag_pct_at_100;   /* fragmented share of the idle GPUs (%) then */
    double unalloc_at_100;    /* idle GPUs then */
    double final_alloc;       /* at the end */
    double seconds;           /* wall time of this run */
    loom_sim_point_t *points; /* per arrival, when keep_points */
    size_t npoints;
} loom_sim_packing_result_t;

int loom_sim_packing(const loom_sched_cluster_t *c, const loom_sim_trace_t *t,
                     const loom_sim_opts_t *o, loom_sim_packing_result_t *res, loom_err_t *err);
void loom_sim_packing_result_free(loom_sim_packing_result_t *r);

typedef struct loom_sim_util_point {
    double t_s;
    float gpu_pct; /* allocated GPU, % of capacity, from t_s on */
    uint32_t pending;
    uint32_t running;
} loom_sim_util_point_t;

typedef struct loom_sim_dynamic_result {
    size_t jobs, completed, unfit, running_at_end;
    size_t cancelled;     /* their dependencies could never be met (DependencyNeverSatisfied) */
    size_t never_started; /* still pending when nothing else could happen */
    size_t refused;       /* refused at arrival by a submission quota (pending, time) */
    double mean_jct_s, mean_wait_s, p99_wait_s, makespan_s, mean_util_pct;
    double p99_jct_s;
    double *jcts; /* the completed jobs' JCTs, ascending (njcts of them) */
    size_t njcts;
    double seconds;
    loom_sim_util_point_t *timeline; /* when keep_points */
    size_t ntimeline;
    /* With users: each user's completed jobs and mean JCT (index k-1 for
     * user k), and Jain's fairness index over the users' mean JCTs,
     * (sum x)^2 / (n sum x^2) over users that completed a job (1: equal). */
    uint32_t users;
    size_t user_completed[LOOM_SIM_MAX_USERS];
    double user_mean_jct_s[LOOM_SIM_MAX_USERS];
    double jain_jct;
    /* GPU-seconds each user's jobs held, in all and while every user had
     * a backlog (its waiting jobs, pending or suspended, asked for at least
     * 1/users of the cluster's GPUs): the contended time, backlog_s
     * seconds, in which fair share is judged. */
    double user_gpu_s[LOOM_SIM_MAX_USERS];
    double user_backlog_gpu_s[LOOM_SIM_MAX_USERS];
    double backlog_s;
} loom_sim_dynamic_result_t;

int loom_sim_dynamic(const loom_sched_cluster_t *c, const loom_sim_trace_t *t,
                     const loom_sim_opts_t *o, loom_sim_dynamic_result_t *res, loom_err_t *err);
void loom_sim_dynamic_result_free(loom_sim_dynamic_result_t *r);

/* ------------------------------------ reconfigurable jobs (Rubick, sim/rubick.c) */

/* The experiment's model table: the zoo's models (workloads/models) at
 * published full sizes (docs/scheduling.md, "Rubick"). */
const loom_rubick_model_t *loom_sim_rubick_models(size_t *n);

typedef struct loom_sim_rjob {
    double submit_s;
    double duration_s; /* run time at the asked configuration (from the trace) */
    size_t model;      /* index into loom_sim_rubick_models() */
    loom_rubick_spec_t spec;
    /* The hidden truth the job runs on (every policy's jobs progress at
     * its samples/s, and the guarantee is checked against it): the model
     * with the job's own efficiency, input loading, communication and
     * per-micro-batch cost (loom_sim_rwl_opts_t's truth_drawn, assumed_*). */
    loom_rubick_model_t truth;
    loom_rubick_fit_t truth_fit;
} loom_sim_rjob_t;

typedef struct loom_sim_rworkload {
    loom_sim_rjob_t *jobs; /* in arrival order */
    size_t n;
    double compress; /* the trace's arrival times were divided by this */
    /* what choosing at admission could gain, means over the jobs of the
     * samples/s at their asked GPUs over those of their asked configuration
     * (loom_sim_rubick_workload): the best plan at the asked CPUs, and the
     * best plan with the CPUs of up to the node's */
    double plan_speedup, cpu_speedup;
    size_t input_bound; /* jobs whose asked configuration waits on input loading */
} loom_sim_rworkload_t;

typedef struct loom_sim_rwl_opts {
    size_t count;           /* jobs */
    double load;            /* offered GPU-time / (cluster GPUs x arrival span) */
    uint64_t seed;          /* model, GPU count and plan draws */
    bool tuned;             /* asked plans: the best for the asked GPUs (else uniform) */
    double min_s, max_s;    /* durations clipped to [min_s, max_s] */
    int cluster_gpus;       /* the cluster's GPUs, for the load */
    int64_t node_cpu_milli; /* CPUs and memory of a node (ranges, asked CPUs) */
    int64_t node_mem_mib;
    const loom_rubick_device_t *device;
    /* the truth: drawn per job around the model (efficiency and
     * communication 0.67-1.5x, input loading 0.5-2x, log-uniform, and 0-5 ms
     * a micro-batch), else the model itself;
     * the model's efficiency (mfu) and input-loading (cpu_s_per_sample)
     * constants are assumed_eff and assumed_cpu times the truth's (0: 1) */
    bool truth_drawn;
    double assumed_eff, assumed_cpu;
    /* each job carries its first measured steps (spec.measured: the asked
     * configuration and a few profiled ones, on the truth, 2% noise), to
     * which the policies fit the model's coefficients; else none */
    bool fit;
} loom_sim_rwl_opts_t;

/* Jobs from the pod list's whole-GPU tasks with positive creation and run
 * times, the first `count` in creation order: their arrivals (compressed
 * to the load) and run times; a zoo model, GPU count (the trace's when
 * above one) and asked plan drawn per job. */
int loom_sim_rubick_workload(const loom_sim_trace_t *pods, const loom_sim_rwl_opts_t *o,
                             loom_sim_rworkload_t *out, loom_err_t *err);
void loom_sim_rubick_workload_free(loom_sim_rworkload_t *w);
/* The plan-aware copy of w (out, freed with loom_sim_rubick_workload_free):
 * every job asks for the plan the model predicts best at its asked GPUs and
 * CPUs (what a scheduler choosing the plan at admission would run; the
 * model fitted to the job's measured steps where it has them, as rubick's
 * is), with the host memory that plan needs, and a run time scaled by its
 * truth's throughputs so that it does the same work (samples) as in w. */
int loom_sim_rubick_plan_aware(const loom_sim_rworkload_t *w, const loom_rubick_device_t *d,
                               loom_sim_rworkload_t *out, loom_err_t *err);
/* Samples/s of job j under configuration c on its truth (0: does not fit). */
double loom_sim_rubick_true_rate(const loom_sim_rjob_t *j, const loom_rubick_device_t *d,
                                 const loom_rubick_config_t *c);

typedef struct loom_sim_rresult {
    size_t jobs, completed;
    double mean_jct_s, p99_jct_s, makespan_s, util_pct;
    double reconfigs_per_job;
    size_t below_guarantee; /* jobs whose progress ever fell behind their guarantee */
    double gpu_hours;       /* GPU time held by jobs (util x GPUs x makespan) */
    double *jcts;           /* ascending, completed jobs */
    double seconds;         /* wall time of the run */
} loom_sim_rresult_t;

/* Runs policy over the workload on cluster c: "rubick", "elastic",
 * "synergy", "fixed" (the runtime's Rubick pass in that mode, as loomd
 * --rubick runs it, with o's device, reconfiguration cost (> 0) and min
 * gain and period_s; jobs progressing in samples at the model's
 * throughput), or "fifo", "tiresias", "gandiva"
 * (loomd's runtime in dynamic mode, each job running its trace duration;
 * gandiva: time-slicing with quantum timeslice_s). Any of them followed
 * by "+plan" runs on the plan-aware copy of w (loom_sim_rubick_plan_aware):
 * the same policy, given the best plan at admission. */
int loom_sim_rubick_run(const loom_sched_cluster_t *c, const loom_sim_rworkload_t *w,
                        const char *policy, const loom_rubick_opts_t *o, double period_s,
                        double timeslice_s, loom_sim_rresult_t *res, loom_err_t *err);
void loom_sim_rresult_free(loom_sim_rresult_t *r);
/* A markdown table of the runs (appended to out), and under dir: that
 * table (table.md), every JCT (jct.csv: policy, jct_s, cdf), and the JCT
 * CDF and makespan figures (jct_cdf, makespan: SVG and PNG, gnuplot). */
int loom_sim_rubick_table(loom_buf_t *out, const char *const *policies,
                          const loom_sim_rresult_t *res, size_t n);
int loom_sim_rubick_report(const char *dir, const char *const *policies,
                           const loom_sim_rresult_t *res, size_t n, loom_err_t *err);

/* ------------------------------------------------- many runs, in threads */

typedef struct loom_sim_run {
    /* in */
    const loom_sim_trace_t *trace;
    const char *trace_name;
    const loom_sched_workload_t *workload;
    const char *policy;
    uint64_t seed;
    /* out */
    int rc;
    loom_err_t err;
    loom_sim_packing_result_t packing;
    loom_sim_dynamic_result_t dynamic;
} loom_sim_run_t;

/* Runs every run (packing, or dynamic when `dynamic`) on `threads` threads;
 * o supplies the shared options (policy, seed and workload per run). */
int loom_sim_run_all(const loom_sched_cluster_t *c, loom_sim_run_t *runs, size_t n, int threads,
                     bool dynamic, const loom_sim_opts_t *o, loom_err_t *err);

/* Reports over runs grouped by policy (same order as first seen). */
int loom_sim_report_table(loom_buf_t *out, const loom_sim_run_t *runs, size_t n, bool dynamic);
int loom_sim_report_json(loom_buf_t *out, const loom_sim_run_t *runs, size_t n, bool dynamic);
/* Per-arrival CSVs (packing) or timelines (dynamic) under dir, one file per
 * run: POLICY-seedN.csv (plus -TRACE when several traces). */
int loom_sim_write_csvs(const char *dir, const loom_sim_run_t *runs, size_t n, bool dynamic,
                        bool multi_trace, loom_err_t *err);
/* Allocation-ratio and fragmentation figures (SVG and PNG, gnuplot) with one
 * line per policy (mean over seeds, on a 1% grid of arrived workload). */
int loom_sim_plot(const char *dir, const loom_sim_run_t *runs, size_t n, loom_err_t *err);

#ifdef __cplusplus
}
#endif
#endif
