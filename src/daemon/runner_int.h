/* Internals of loomd's runner shared by runner.c and gandiva.c. */
#ifndef LOOMD_RUNNER_INT_H
#define LOOMD_RUNNER_INT_H

#include <pthread.h>

#include "daemon/runner.h"
#include "loom/exec.h"
#include "loom/sched.h"

typedef struct active {
    int64_t id;
    loom_sched_alloc_t alloc;
    loom_exec_handle_t h;
    bool cancel_sent;
    bool requeue;        /* slurm: cancelled because its node went down before it started */
    int attempt;         /* placements of this job so far, this one included (1, 2, ...) */
    bool held;           /* its allocation is in the model (false while suspended) */
    bool suspended;      /* stopped by time-slicing or by packing introspection */
    bool no_pack;        /* introspection found packing hurts: resume it only alone */
    int64_t resumed_ns;  /* monotonic: start, or last resume */
    int64_t suspended_ns;
    /* Packing introspection (gandiva.c): step markers read from stdout. */
    int64_t out_off;
    char partial[1100];
    size_t partial_len;
    double solo_step_s, packed_step_s; /* mean step time alone / with others */
    int solo_n, packed_n;
    int tenancy;          /* jobs on its GPU when packed_* began */
    int64_t tenancy_since; /* monotonic */
    int skip;             /* steps still to ignore after the tenancy changed */
    bool decided;         /* a packing decision was made for this tenancy */
    int64_t probe_for;    /* suspended so that this job's solo step time can be measured */
    char gandiva[160];    /* last decision, for the run record */
} active_t;

struct loomd_runner {
    loom_store_t *store;
    const loom_exec_ops_t *ops; /* the executor: local or Slurm */
    void *exec;                 /* its self */
    loom_exec_local_t *local;   /* when local (time-slicing needs it) */
    loom_exec_slurm_t *slurm;   /* when Slurm */
    bool *down;                 /* per node: unavailable for placement (Slurm: down, drained) */
    int64_t refresh_ns, next_refresh_ns;
    loom_sched_cluster_t cluster, empty;
    loom_sched_placer_t *placer;
    loom_sched_queue_cfg_t queue;
    char queue_name[32], place_name[32];
    int64_t tick_ns;
    int64_t timeslice_ns; /* 0: no time-slicing */
    bool pack_check;      /* packing introspection */

    pthread_t thread;
    pthread_mutex_t wmu; /* stop and wake only: RPC handlers never wait for a step */
    pthread_cond_t cv;
    bool stop, wake;
    pthread_mutex_t mu; /* everything below, and the cluster for readers */

    active_t *active;
    size_t nactive, cap;

    uint64_t started, ended, failed_to_start;
    double gpu_busy_milli_s; /* integral of GPUs in use over time */
    int64_t last_account_ns;
    int64_t since_ns;
};


void loomd__account(loomd_runner_t *r);
json_t *loomd__run_json(const loomd_runner_t *r, const active_t *a);
int loomd__store_run(loomd_runner_t *r, int64_t id, int expect, int to, const char *reason,
                     json_t *run, loom_err_t *err);

/* Gandiva's mechanisms (gandiva.c). */
void loomd__gandiva_introspect(loomd_runner_t *r);
void loomd__gandiva_resume(loomd_runner_t *r);
bool loomd__gandiva_make_room(loomd_runner_t *r, const loom_sched_req_t *req);
int loomd__gandiva_suspend(loomd_runner_t *r, active_t *a, const char *why);

#endif
