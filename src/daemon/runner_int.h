/* Internals of loomd's runner shared by runner.c and gandiva.c. The
 * scheduling state and its step live in libloom's runtime part; the runner
 * keeps what only loomd has: the executor's handles, the store, the
 * thread. */
#ifndef LOOMD_RUNNER_INT_H
#define LOOMD_RUNNER_INT_H

#include <pthread.h>

#include "daemon/runner.h"
#include "loom/exec.h"
#include "loom/runtime.h"
#include "loom/sched.h"

#define LOOMD_STEP_LINE_MAX 1100 /* longest stdout line read for a step marker */
#define LOOMD_NOTE_MAX      160

typedef struct active {
    int64_t id;
    loom_sched_alloc_t alloc; /* as the runtime placed it (kept while suspended) */
    loom_exec_handle_t h;
    bool cancel_sent;
    bool requeue;   /* slurm: cancelled because its node went down before it started */
    int attempt;    /* placements of this job so far, this one included (1, 2, ...) */
    bool suspended; /* stopped by time-slicing or by packing introspection */
    /* Packing introspection (gandiva.c): step markers read from stdout. */
    int64_t out_off;
    char partial[LOOMD_STEP_LINE_MAX];
    size_t partial_len;
    char gandiva[LOOMD_NOTE_MAX]; /* last decision, for the run record */
    /* A job of Rubick's (reconfig.c): the plan it runs with, how often it
     * was reconfigured, and whether it is checkpointing to restart with
     * plan on alloc (both already the new ones). */
    bool has_plan;
    loom_rubick_config_t plan;
    int reconfigs;
    bool reconfiguring;
    char reconf_why[LOOMD_NOTE_MAX];
} active_t;

struct loomd_runner {
    loom_store_t *store;
    const loom_exec_ops_t *ops; /* the executor: local or Slurm */
    void *exec;                 /* its self */
    loom_exec_local_t *local;   /* when local (time-slicing needs it) */
    loom_exec_slurm_t *slurm;   /* when Slurm */
    int64_t refresh_ns, next_refresh_ns;
    loom_runtime_t *rt;         /* the cluster model, the queue and the step */
    loom_rubick_spec_t rb_spec; /* job_rt's scratch: the runtime copies it */
    int64_t tick_ns;
    bool pack_check; /* packing introspection */
    int64_t seen_id; /* the highest job id read as pending */
    int64_t next_resync_ns;
    int64_t real_minus_mono_ns;      /* puts the store's times on the runtime's (monotonic) clock */
    struct loomd_accounts *accounts; /* account names to the runtime's numbers (quota.h) */

    pthread_t thread;
    pthread_mutex_t wmu; /* stop and wake only: RPC handlers never wait for a step */
    pthread_cond_t cv;
    bool stop, wake;
    pthread_mutex_t mu; /* everything below, and the model for readers */

    active_t *active;
    size_t nactive, cap;

    uint64_t started, ended, failed_to_start;
    uint64_t steps;          /* steps completed since start (server.info: tests wait on it) */
    double gpu_busy_milli_s; /* integral of GPUs in use over time */
    int64_t last_account_ns;
    int64_t since_ns;

    char *dep_text; /* loomd__job_blocks' scratch: the runtime copies it */
};

void loomd__account(loomd_runner_t *r);
json_t *loomd__run_json(const loomd_runner_t *r, const active_t *a);
int loomd__store_run(loomd_runner_t *r, int64_t id, int expect, int to, const char *reason,
                     json_t *run, loom_err_t *err);
active_t *loomd__find_active(loomd_runner_t *r, int64_t id);

/* Starts a's process for job j on a->alloc. */
int loomd__launch(loomd_runner_t *r, active_t *a, const loom_job_t *j, loom_err_t *err);
/* The job is gone / goes back to the queue: its resources go back. */
void loomd__release(loomd_runner_t *r, size_t i, bool back_to_queue);

/* Reconfigurable jobs (reconfig.c): the plan's environment, RECONFIGURE
 * (ask the job to checkpoint), and its end (restart it with the new plan). */
#define LOOMD_PLAN_VARS 8
typedef struct loomd_plan_env {
    char text[LOOMD_PLAN_VARS][LOOMD_NOTE_MAX + 64];
    const char *vars[LOOMD_PLAN_VARS + 1];
} loomd_plan_env_t;
void loomd__plan_env(const active_t *a, loomd_plan_env_t *env);
void loomd__plan_json(const active_t *a, json_t *run);
void loomd__plan_read(active_t *a, const json_t *run);
void loomd__plan_req(const json_t *run, loom_sched_req_t *req);
int loomd__reconf_apply(loomd_runner_t *r, const loom_runtime_action_t *act);
bool loomd__reconf_ended(loomd_runner_t *r, size_t i, loom_exec_outcome_t *o);
/* The stored "reconfig" of j, parsed into *s (false: none, or unusable). */
bool loomd__reconfig_of(const loom_job_t *j, loom_rubick_spec_t *s);

/* Holds, begin times, dependencies (deps.c): a stored job's options onto
 * its runtime record (rj->dependency points into r's scratch until the
 * next call). LOOM_ENOMEM: the job is not ready to hand over (try again
 * later). */
int loomd__job_blocks(loomd_runner_t *r, const loom_job_t *j, loom_runtime_job_t *rj);
/* The runtime's outcome function: where a job it does not hold stands, by
 * the store (ctx: the runner). */
loom_runtime_dep_job_t loomd__dep_outcome(void *ctx, uint64_t id);

/* Gandiva's mechanisms on loomd's side (gandiva.c): the runtime decides,
 * these carry the decisions out and feed it the step markers. */
void loomd__gandiva_introspect(loomd_runner_t *r);
int loomd__gandiva_apply(loomd_runner_t *r, const loom_runtime_action_t *act);

#endif
