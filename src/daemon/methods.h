/* loomd's JSON-RPC methods (server.info, job.*), wired to the store with
 * deferred completion: a job.submit or job.cancel handler queues its write
 * and returns LOOM_RPC_PENDING; the thread that commits the transaction
 * holding it (the request's own thread for requests of a few calls served by
 * loom_rpc_handle, else the store's committer) completes the call after the
 * commit. So concurrent requests and the calls of one batch share
 * transactions. The contract is docs/protocol.md. */
#ifndef LOOMD_METHODS_H
#define LOOMD_METHODS_H

#include "loom/estimate.h"
#include "loom/rpc.h"
#include "loom/store.h"

/* Application error codes (docs/protocol.md). */
enum {
    LOOMD_ERR_JOB_NOT_FOUND = -32001,
    LOOMD_ERR_INVALID_STATE = -32002,
    LOOMD_ERR_BUSY = -32003,
    LOOMD_ERR_STORE = -32004,
    LOOMD_ERR_SHUTTING_DOWN = -32005,
    LOOMD_ERR_ESTIMATE = -32006,   /* the submission's model could not be estimated */
    LOOMD_ERR_INFEASIBLE = -32007, /* no node could ever hold the request (feasible.c) */
    LOOMD_ERR_PERMISSION = -32008, /* the job belongs to another user (identity.c) */
    LOOMD_ERR_QUOTA = -32009       /* a submission beyond a quota (quota.c) */
};

typedef struct loomd_info {
    const char *state_dir;
    const char *durability;
    const char *tcp_url; /* "http://127.0.0.1:7750" or NULL */
    const char *socket;  /* socket path or NULL */
    int64_t started_real_ns;
    int64_t started_mono_ns;
    const char *estimate_device; /* default device of model estimates */
    const char *estimate_margin; /* the margin as configured, e.g. "10%+256MiB" */
} loomd_info_t;

typedef struct loomd_runner loomd_runner_t;
typedef struct loomd_identity loomd_identity_t;
typedef struct loomd_quotas loomd_quotas_t;

typedef struct loomd_methods {
    loom_store_t *store;
    const loomd_info_t *info;
    loomd_runner_t *runner;  /* NULL: jobs are queued but not run (--executor none) */
    loom_est_sizer_t *sizer; /* GPU memory from a submission's model; NULL: models refused */
    /* The longest job.wait and job.logs hold a call (follow.c): 0 = their
     * timeout as asked (at most 30 s); negative: they answer at once
     * (the fuzz target, whose inputs must not sleep). */
    int64_t follow_max_ms;
    const loomd_identity_t *ident; /* callers and owners; NULL: single-user */
    const loomd_quotas_t *quotas;  /* submission quotas; NULL: none */
    struct loomd_waits *waits;     /* waiting calls per user (follow.c); NULL: no limit */
    /* Set by loomd_methods_add: server.info lists every method added to it
     * (these and the other parts' methods added after them). */
    const loom_rpc_dispatcher_t *disp;
} loomd_methods_t;

/* Adds every method to d; m must outlive d. */
int loomd_methods_add(loom_rpc_dispatcher_t *d, loomd_methods_t *m, loom_err_t *err);

/* params' member name as a job id (a positive integer); LOOM_EINVAL naming
 * the member when it is missing, not an integer or not positive. The one
 * reader of job ids for every method (methods.c, queue.c). */
int loomd_param_job_id(const json_t *params, const char *name, int64_t *out, loom_err_t *err);

/* Prometheus families of the store (a loom_rpc_metrics_fn; ctx is a
 * loomd_methods_t). */
int loomd_methods_metrics(loom_buf_t *out, void *ctx);

/* For GET /healthz (loom_rpc_server_set_health): NULL, or why not. */
const char *loomd_health(void *ctx);

#endif
