/* loom runtime: the scheduling step as a state machine over a given clock.
 *
 * One runtime holds a cluster's scheduling state: the cluster model, the
 * pending queue (every pending job, kept in the queue policy's order), the
 * running and suspended jobs, and which nodes are down. loom_runtime_step
 * advances it at a time the caller gives: it orders the queue, places jobs
 * with the placement policy, and applies Gandiva's time-slicing and packing
 * decisions. It does nothing itself: each decision is handed to the caller
 * as an action (start, suspend, resume, reconfigure, reject, note), which loomd
 * carries out with its executor and the simulator applies in virtual time.
 * The runtime commits an action to its model only when the caller reports
 * success, so a job whose process cannot be started holds nothing.
 *
 * Time is a double in seconds on any clock the caller likes (loomd: the
 * monotonic clock; the simulator: virtual time), as long as submission
 * times, step times and step observations use the same one.
 *
 * Not thread-safe: one thread drives a runtime (loomd's runner thread). */
#ifndef LOOM_RUNTIME_H
#define LOOM_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loom/core.h"
#include "loom/rubick.h"
#include "loom/sched.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_runtime loom_runtime_t;

/* Rubick's policy for reconfigurable jobs (docs/scheduling.md, "Rubick"):
 * every job with a "reconfig" that names a model is started and
 * reconfigured by loom_rubick_decide (GPUs, CPUs, memory and plan
 * together); the others go through the queue and placement policies as
 * before. Decisions are taken when jobs arrive or leave and every
 * period_s. A job's work is its guarantee (the asked configuration's
 * throughput) times its time limit (work_s without one); its progress is
 * counted at the model's throughput of what it runs, less the pause of
 * each reconfiguration. The simulator's Rubick experiment (loom sim
 * --policy rubick) runs this same pass. */
typedef struct loom_runtime_rubick {
    loom_rubick_device_t device; /* the performance model's device */
    double reconf_cost_s;        /* checkpoint + restart + warm-up; <= 0: 30 s */
    double min_gain;             /* share of the time left a change must save; < 0: 0.05 */
    double period_s;             /* re-decide at least this often; <= 0: 60 s */
    double work_s;               /* a job without a time limit; <= 0: 3600 s */
    /* loom_rubick_decide's mode: "rubick" (NULL), or one of the black-box
     * baselines of the simulator's experiment, "elastic", "synergy",
     * "fixed" (LOOM_RUBICK_ELASTIC, _SYNERGY, _FIXED). */
    const char *mode;
    /* When a RECONFIGURE gives up GPUs, CPUs or memory (a shrink, a move
     * to another node), the old process still runs on them while it
     * checkpoints: true keeps what the job gives up held in the model
     * (no other job is placed there, and the job is not reconfigured
     * again) until the caller reports the old process gone with
     * loom_runtime_reconfigured (or removes or requeues the job). false:
     * given back at once (loomd today; the caller must then make sure
     * the old process is gone before starting another job there). */
    bool hold_until_reconfigured;
} loom_runtime_rubick_t;

/* Backfill (docs/scheduling.md, "Backfill"): which pending jobs may start
 * past one that waits for resources. */
typedef enum loom_runtime_backfill {
    LOOM_RUNTIME_BACKFILL_GREEDY = 0,  /* any job that fits starts (no reservation) */
    LOOM_RUNTIME_BACKFILL_EASY,        /* the first job that waits gets a reservation */
    LOOM_RUNTIME_BACKFILL_CONSERVATIVE /* every waiting job gets one (up to
                                          LOOM_RUNTIME_MAX_RESERVATIONS a step) */
} loom_runtime_backfill_t;

#define LOOM_RUNTIME_MAX_RESERVATIONS 256
#define LOOM_RUNTIME_DEFAULT_LIMIT_S  3600.0

/* "greedy", "easy", "conservative" (LOOM_EINVAL naming the text otherwise). */
int loom_runtime_backfill_parse(const char *text, loom_runtime_backfill_t *out, loom_err_t *err);
const char *loom_runtime_backfill_name(loom_runtime_backfill_t b);

typedef struct loom_runtime_config {
    const char *queue;     /* queue policy (loom_sched_queue_cfg_parse); NULL: fifo */
    const char *placement; /* placement policy (loom_sched_place_names); NULL: firstfit */
    loom_sched_placer_opts_t placer;
    /* Gandiva time-slicing: the quantum in seconds; 0: off. */
    double timeslice_s;
    /* Gandiva packing introspection: decide from step-time observations
     * (loom_runtime_observe_step) whether jobs sharing a GPU stay packed. */
    bool pack_check;
    /* Rubick's policy for reconfigurable jobs; NULL: off (copied). */
    const loom_runtime_rubick_t *rubick;
    /* Backfill with reservations (greedy: none). Reservations are planned
     * from the running jobs' time limits; a job without one is taken to
     * run default_limit_s (<= 0: LOOM_RUNTIME_DEFAULT_LIMIT_S). */
    loom_runtime_backfill_t backfill;
    double default_limit_s;
} loom_runtime_config_t;

/* Why a pending job is still pending after the last step (as Slurm's
 * squeue reasons). */
typedef enum loom_runtime_reason {
    LOOM_RUNTIME_REASON_NONE = 0,    /* not yet considered by a step */
    LOOM_RUNTIME_REASON_RESOURCES,   /* it was the first in the queue order that did not fit */
    LOOM_RUNTIME_REASON_PRIORITY,    /* jobs ahead of it in the queue order wait too */
    LOOM_RUNTIME_REASON_HELD,        /* held (JobHeld) */
    LOOM_RUNTIME_REASON_BEGIN_TIME,  /* its begin time is still ahead (BeginTime) */
    LOOM_RUNTIME_REASON_DEPENDENCY,  /* its dependencies are not met yet (Dependency) */
    LOOM_RUNTIME_REASON_ARRAY_LIMIT, /* its array runs group_max tasks already (JobArrayTaskLimit)
                                      */
    LOOM_RUNTIME_REASON_QUOTA,       /* its start would exceed its user's or account's running
                                        quota (loom_runtime_set_quota): QuotaLimit */
    LOOM_RUNTIME_REASON_RESERVATION  /* it would fit now, but running until its time limit
                                        would delay the reservation of a job ahead of it
                                        (backfill easy, conservative): Reservation */
} loom_runtime_reason_t;
#define LOOM_RUNTIME_REASON_LAST LOOM_RUNTIME_REASON_RESERVATION

/* A job as the runtime sees it. */
typedef struct loom_runtime_job {
    uint64_t id; /* unique, > 0 */
    /* Held jobs stay pending whatever the resources (a reason each). These
     * come first, beside the id: the step reads them of every pending job,
     * so together they cost one cache line per job in a long queue. */
    bool hold;     /* held until released (loom_runtime_hold): JobHeld */
    bool dep_wait; /* its dependencies are not met yet (loom_runtime_dep_eval and
                      loom_runtime_set_dep_wait): Dependency */
    /* The pending reason the caller has on record for it (NONE: none):
     * loom_runtime_reason_changes reports a change against it. */
    loom_runtime_reason_t recorded;
    double begin_s; /* not before this time (sbatch --begin); 0: at once: BeginTime */
    uint64_t group; /* a job array's id (0: none) */
    int group_max;  /* at most this many of the group run at once (0: no cap):
                       JobArrayTaskLimit */
    loom_sched_req_t req;
    double submit_s;
    int priority;        /* larger first (queue policy "priority") */
    double estimate_s;   /* 0: unknown */
    double time_limit_s; /* 0: none */
    uint32_t user;       /* fair share and drf: its owner (see loom_runtime_set_share) */
    uint32_t account;    /* its account, one number per account name (0: none): fair share
                            by account (loom_runtime_set_account_share) and running quotas
                            per account (loom_runtime_set_quota) */
    /* What may change (copied; check_asked done). Under the rubick policy a
     * spec that names a model makes the job Rubick's; NULL: a black box. */
    const loom_rubick_spec_t *reconfig;
    /* sbatch's --dependency (copied; NULL or "": none). The job waits with
     * reason Dependency (dep_wait) until the runtime judges it met at a
     * step, from the jobs it holds and, for those it does not, the
     * caller's outcome function (loom_runtime_set_outcomes); one that can
     * never be met leaves with LOOM_RUNTIME_CANCEL. */
    const char *dependency;
    uint64_t name_key; /* singleton: loom_runtime_name_key of its name */
} loom_runtime_job_t;

typedef enum loom_runtime_action_kind {
    LOOM_RUNTIME_START,       /* start the job on alloc */
    LOOM_RUNTIME_SUSPEND,     /* stop it in place; its resources go back to the model */
    LOOM_RUNTIME_RESUME,      /* continue it on the very alloc it had */
    LOOM_RUNTIME_RECONFIGURE, /* change a running job from old_alloc to alloc */
    LOOM_RUNTIME_REJECT,      /* a pending job no node can ever hold: drop it */
    LOOM_RUNTIME_CANCEL,      /* a pending job whose dependencies can never be met: end it
                                 (reason DependencyNeverSatisfied); refused, it is judged
                                 again at a later step */
    LOOM_RUNTIME_NOTE         /* a decision that changes nothing (packing kept): record it */
} loom_runtime_action_kind_t;

typedef struct loom_runtime_action {
    loom_runtime_action_kind_t kind;
    uint64_t id;
    loom_sched_alloc_t alloc;     /* START, RESUME, RECONFIGURE (new), SUSPEND (the held one) */
    loom_sched_alloc_t old_alloc; /* RECONFIGURE */
    const char *reason;           /* why, for the job's record (valid during the call) */
    /* START, RECONFIGURE of a job of Rubick's: the plan, CPUs and memory it
     * runs with (alloc.req holds the same resources); NULL otherwise. */
    const loom_rubick_config_t *config;
    double samples_per_s; /* the same: its throughput as the model predicts it; 0 otherwise */
} loom_runtime_action_t;

/* Carries an action out. LOOM_OK commits it to the model. Anything else
 * refuses it: a refused START drops the job from the runtime (its start
 * failed: the caller records why), a refused SUSPEND or RESUME leaves the
 * job as it was, a refused RECONFIGURE keeps the old allocation. */
typedef int (*loom_runtime_apply_fn)(void *ctx, const loom_runtime_action_t *a);
/* (The callback may read the runtime, loom_runtime_get and the like, but
 * not change it: no submit, remove or requeue from inside a step.) */

const char *loom_runtime_reason_name(loom_runtime_reason_t r); /* "Resources", ... */

/* The runtime takes a copy of c (its allocations included: loomd's adopted
 * jobs are added with loom_runtime_adopt on an empty copy instead). */
int loom_runtime_new(const loom_sched_cluster_t *c, const loom_runtime_config_t *cfg,
                     loom_runtime_t **out, loom_err_t *err);
void loom_runtime_free(loom_runtime_t *rt);

/* The model (read only: change it through the runtime). */
const loom_sched_cluster_t *loom_runtime_cluster(const loom_runtime_t *rt);
const char *loom_runtime_queue_name(const loom_runtime_t *rt);
const char *loom_runtime_placement_name(const loom_runtime_t *rt);

/* A new pending job (LOOM_EEXIST if the id is known). A request that is
 * not well formed or fits no node even when the cluster is empty is
 * rejected by the next step (a REJECT action with the reason). */
int loom_runtime_submit(loom_runtime_t *rt, const loom_runtime_job_t *job, loom_err_t *err);
/* A job that already runs (or is suspended) on alloc, e.g. found running
 * when loomd restarts. A running one takes alloc in the model now
 * (LOOM_ESTATE if that would over-commit). */
int loom_runtime_adopt(loom_runtime_t *rt, const loom_runtime_job_t *job,
                       const loom_sched_alloc_t *alloc, bool suspended, double now_s,
                       loom_err_t *err);
/* The job is gone: ended, cancelled, lost. Its resources go back. Returns
 * LOOM_ENOTFOUND for an unknown id. */
int loom_runtime_remove(loom_runtime_t *rt, uint64_t id, double now_s);
/* A running or suspended job goes back to the queue (its process never
 * really ran, e.g. Slurm never started it); its resources go back. */
int loom_runtime_requeue(loom_runtime_t *rt, uint64_t id, double now_s);
/* A pending job's hold (JobHeld) or dependency wait (Dependency) is set or
 * lifted; it takes effect at the next step. LOOM_ENOTFOUND for an unknown
 * id, LOOM_ESTATE when the job is not pending. */
int loom_runtime_hold(loom_runtime_t *rt, uint64_t id, bool hold);
int loom_runtime_set_dep_wait(loom_runtime_t *rt, uint64_t id, bool waiting);

/* sbatch's dependencies ("afterok:12:13,afterany:14", "?" between parts
 * for any-of, "after:12", "afternotok:12", "singleton"), judged from what
 * the caller says of the jobs they name. */
typedef enum loom_runtime_dep_job {
    LOOM_RUNTIME_DEP_UNKNOWN = 0, /* no such job */
    LOOM_RUNTIME_DEP_PENDING,     /* not started yet */
    LOOM_RUNTIME_DEP_RUNNING,     /* started, not ended */
    LOOM_RUNTIME_DEP_OK,          /* ended, completed with exit code 0 */
    LOOM_RUNTIME_DEP_NOTOK        /* ended otherwise (failed, cancelled, timed out) */
} loom_runtime_dep_job_t;
typedef enum loom_runtime_dep {
    LOOM_RUNTIME_DEP_MET = 0, /* may start */
    LOOM_RUNTIME_DEP_WAIT,    /* not yet */
    LOOM_RUNTIME_DEP_NEVER    /* can no longer be met (DependencyNeverSatisfied) */
} loom_runtime_dep_t;
/* job(ctx, id) says where a named job stands; singleton(ctx) whether an
 * earlier job of the same name and user is still pending or running (NULL:
 * singleton is met). Text in the wrong form: LOOM_EINVAL. */
int loom_runtime_dep_eval(const char *text, loom_runtime_dep_job_t (*job)(void *ctx, uint64_t id),
                          bool (*singleton)(void *ctx), void *ctx, loom_runtime_dep_t *out,
                          loom_err_t *err);

/* What became of a job the runtime does not hold (ended, or not handed
 * to it): LOOM_RUNTIME_DEP_OK or _NOTOK once ended, _PENDING or _RUNNING
 * if the caller has it so, _UNKNOWN for no such job. The runtime answers
 * for the jobs it holds itself. Without one, a job it does not hold is
 * unknown (a dependency on it is never met). */
typedef loom_runtime_dep_job_t (*loom_runtime_outcome_fn)(void *ctx, uint64_t id);
void loom_runtime_set_outcomes(loom_runtime_t *rt, loom_runtime_outcome_fn fn, void *ctx);
/* singleton's key of a job name (FNV-1a, 64 bits; NULL is ""): jobs of the
 * same user and key have the same name. */
uint64_t loom_runtime_name_key(const char *name);
/* Jobs waiting for their dependencies to be judged (those with a dependency
 * text not met yet). */
size_t loom_runtime_dep_waiting(const loom_runtime_t *rt);

/* Down nodes take no placement (their free resources are hidden from the
 * placement policy); their jobs stay until the caller removes them. */
void loom_runtime_set_down(loom_runtime_t *rt, size_t node, bool down);
bool loom_runtime_is_down(const loom_runtime_t *rt, size_t node);

/* Packing introspection: one training step of job id that began at
 * start_s and took duration_s (loomd reads them from LOOM_STEP markers). */
void loom_runtime_observe_step(loom_runtime_t *rt, uint64_t id, double start_s, double duration_s);

/* Hook for reconfigurable jobs (Rubick): ask that a running job be given
 * req instead of its current request. The next step tries it (RECONFIGURE
 * with the new allocation) and keeps the old one when the new does not fit
 * or the caller refuses. */
int loom_runtime_reconfigure(loom_runtime_t *rt, uint64_t id, const loom_sched_req_t *req,
                             loom_err_t *err);
/* The old process of a job reconfigured under hold_until_reconfigured is
 * gone: what it gave up goes back to the model (the next step may place
 * jobs there). LOOM_ENOTFOUND for an unknown id, LOOM_ESTATE when the job
 * holds nothing given up. */
int loom_runtime_reconfigured(loom_runtime_t *rt, uint64_t id, double now_s);
/* Fair share and drf: a user's weight (its shares; default 1, > 0), and an
 * account's (fair share by account; default 1). */
void loom_runtime_set_share(loom_runtime_t *rt, uint32_t user, double weight);
double loom_runtime_share(const loom_runtime_t *rt, uint32_t user);
void loom_runtime_set_account_share(loom_runtime_t *rt, uint32_t account, double weight);
double loom_runtime_account_share(const loom_runtime_t *rt, uint32_t account);

/* Hook for running quotas (Slurm's GrpTRES=gres/gpu and MaxJobs per user
 * and per account): a pending job whose start would take its user's (by
 * job.user) or its account's (by job.account) running GPUs or running jobs
 * past the limit stays pending with reason QuotaLimit, holding back none
 * of the jobs behind it. Running and suspended jobs count, by the GPUs
 * (milli-GPU, shares as requested) of their request. who's own limits, or
 * with LOOM_RUNTIME_QUOTA_EVERY_* (who ignored) the default of every user or
 * account that has no limits of its own; limits NULL: who has none of its
 * own again (the default applies). Takes effect at the next step. A job
 * that alone asks more GPUs than its limit waits until the limit grows. */
typedef enum loom_runtime_quota_kind {
    LOOM_RUNTIME_QUOTA_USER = 0,
    LOOM_RUNTIME_QUOTA_ACCOUNT,
    LOOM_RUNTIME_QUOTA_EVERY_USER,
    LOOM_RUNTIME_QUOTA_EVERY_ACCOUNT
} loom_runtime_quota_kind_t;
typedef struct loom_runtime_limits {
    int64_t gpu_milli; /* running milli-GPU at most; < 0: no limit */
    int64_t jobs;      /* running jobs at most; < 0: no limit */
} loom_runtime_limits_t;
int loom_runtime_set_quota(loom_runtime_t *rt, loom_runtime_quota_kind_t kind, uint32_t who,
                           const loom_runtime_limits_t *limits);
/* Quota rules as loomd's --quota and `loom sim --quota` give them:
 * "user:NAME=LIMITS", "account:NAME=LIMITS" or "*=LIMITS" (every user),
 * LIMITS "pending=N,time=D,gpus=G,running=N" (any of them; G in GPUs with
 * up to three decimals). pending and time are submission quotas (loomd's
 * job.submit checks them); gpus and running are running quotas, which
 * loom_runtime_quota_apply hands to the runtime. */
typedef struct loom_runtime_quota_rule {
    char kind;         /* 'u' user, 'a' account, '*' every user */
    char name[64];     /* user or account name */
    int64_t pending;   /* -1: no limit */
    int64_t time_s;    /* longest time limit, seconds; -1: no limit */
    int64_t gpu_milli; /* running milli-GPU; -1: no limit */
    int64_t running;   /* running jobs; -1: no limit */
    char text[160];    /* as given */
} loom_runtime_quota_rule_t;
int loom_runtime_quota_parse(const char *spec, loom_runtime_quota_rule_t *out, loom_err_t *err);
/* A rule's user or account name to its number (*who): LOOM_OK;
 * LOOM_ENOTFOUND skips the rule (no such user); anything else stops. */
typedef int (*loom_runtime_quota_resolve_fn)(void *ctx, loom_runtime_quota_kind_t kind,
                                             const char *name, uint32_t *who);
/* Every running quota that applies holds, the least of them: the rules
 * for "*" make every user's default; each user's or account's own limits
 * are the least of its rules (a user's with the default's). */
int loom_runtime_quota_apply(loom_runtime_t *rt, const loom_runtime_quota_rule_t *rules, size_t n,
                             loom_runtime_quota_resolve_fn resolve, void *ctx, loom_err_t *err);

/* Submission quotas (a rule's pending and time): a submission by `user`
 * (a login; a simulator's user number written out) charged to `account`
 * (NULL or "": none) with `time_limit_s` (0: none) that creates `count`
 * pending jobs (an array: its tasks; 0: a change of a job that exists,
 * checked for its time limit only). */
typedef struct loom_runtime_submission {
    const char *user;
    const char *account;
    int64_t time_limit_s;
    int64_t count;
} loom_runtime_submission_t;
/* How many jobs the submission's user (by_account false) or account
 * (true) has pending now, into *n: the caller's count (loomd its store). */
typedef int (*loom_runtime_pending_fn)(void *ctx, const loom_runtime_submission_t *s,
                                       bool by_account, int64_t *n, loom_err_t *err);
/* The rule a submission would pass, what of it ("time limit (s)" or
 * "pending jobs"), what the submission would make it and what is allowed. */
typedef struct loom_runtime_quota_refusal {
    const loom_runtime_quota_rule_t *rule;
    const char *what;
    int64_t used, allowed;
} loom_runtime_quota_refusal_t;
/* Checks a submission against every rule that applies, in order: LOOM_OK,
 * or LOOM_ELIMIT with the message naming the rule and *why filled; an
 * error of `pending` is returned as it is. */
int loom_runtime_quota_check_submission(const loom_runtime_quota_rule_t *rules, size_t n,
                                        const loom_runtime_submission_t *s,
                                        loom_runtime_pending_fn pending, void *ctx,
                                        loom_runtime_quota_refusal_t *why, loom_err_t *err);

/* What who runs now (user or account), against the limits that apply. */
typedef struct loom_runtime_usage {
    int64_t gpu_milli, jobs;
    loom_runtime_limits_t limits;
} loom_runtime_usage_t;
void loom_runtime_quota_usage(const loom_runtime_t *rt, loom_runtime_quota_kind_t kind,
                              uint32_t who, loom_runtime_usage_t *out);
/* Which limit holds a pending job now (its reason QuotaLimit): the user's
 * (checked first) or the account's, GPUs (checked first) or jobs.
 * LOOM_ENOTFOUND for an unknown id, LOOM_ESTATE when no quota holds it. */
typedef struct loom_runtime_quota_hold {
    loom_runtime_quota_kind_t kind; /* LOOM_RUNTIME_QUOTA_USER or _ACCOUNT */
    uint32_t who;
    bool gpus;       /* the GPU limit (milli-GPU); else the jobs limit */
    int64_t used;    /* what who runs now */
    int64_t asks;    /* what the job would add */
    int64_t allowed; /* the limit */
} loom_runtime_quota_hold_t;
int loom_runtime_quota_hold(const loom_runtime_t *rt, uint64_t id, loom_runtime_quota_hold_t *out);

/* One scheduling step at now_s: packing decisions (pack_check), resumes of
 * suspended jobs (time-slicing), then the pending queue in the queue
 * policy's order, every job the placement policy finds room for (greedy
 * backfill: a job that does not fit does not hold back those behind it).
 * Each action goes to apply(ctx, action). Returns the number of actions
 * applied (committed). */
size_t loom_runtime_step(loom_runtime_t *rt, double now_s, loom_runtime_apply_fn apply, void *ctx);
/* When a step could decide something new although nothing else happens
 * (a time-slicing quantum ends, Rubick's period passes while it has jobs);
 * INFINITY if never. */
double loom_runtime_next_wakeup(const loom_runtime_t *rt);

/* The pending jobs whose reason changed in the last step, against the
 * reason last reported (or the job's `recorded` one): what a caller that
 * keeps reasons on its records writes, instead of every pending job after
 * every step. Each was pending at the end of that step; valid until the
 * next step. */
typedef struct loom_runtime_reason_change {
    uint64_t id;
    loom_runtime_reason_t reason;
} loom_runtime_reason_change_t;
size_t loom_runtime_reason_changes(const loom_runtime_t *rt,
                                   const loom_runtime_reason_change_t **out);

/* ----------------------------------------------------------- reading */

typedef enum loom_runtime_state {
    LOOM_RUNTIME_PENDING = 1,
    LOOM_RUNTIME_RUNNING,
    LOOM_RUNTIME_SUSPENDED
} loom_runtime_state_t;

typedef struct loom_runtime_info {
    loom_runtime_state_t state;
    loom_runtime_reason_t reason; /* pending */
    loom_sched_alloc_t alloc;     /* running, suspended */
    double attained_gpu_s;        /* GPUs x seconds run so far */
    const char *note;             /* the last Gandiva decision about it ("" if none) */
    /* Rubick's jobs: */
    bool rubick;                 /* the rubick policy decides for it */
    loom_rubick_config_t config; /* running: what it runs with */
    int reconfigurations;        /* carried out so far */
    double samples_done;         /* its progress as the model counts it */
    double guarantee;            /* samples/s of the configuration it asked for */
    bool draining; /* holds what a reconfiguration gave up (hold_until_reconfigured) */
    /* Pending, backfill easy or conservative: the reservation the last step
     * gave it (squeue --start): its expected start on the runtime's clock,
     * and the node. has_start false: none. */
    bool has_start;
    double expected_start_s;
    int expected_node;
} loom_runtime_info_t;

/* LOOM_ENOTFOUND for an unknown id. */
int loom_runtime_get(const loom_runtime_t *rt, uint64_t id, loom_runtime_info_t *out);
size_t loom_runtime_npending(const loom_runtime_t *rt);
/* How many times a step put work off for lack of memory (a start, a
 * reservation, a reason, the queue's order), since the runtime was made.
 * loomd needs nothing more: the next step does it. A simulator does: the
 * schedule it replays would differ from the one it reports (loom_sim_*
 * fail with LOOM_ENOMEM instead). */
uint64_t loom_runtime_nomem(const loom_runtime_t *rt);
size_t loom_runtime_nrunning(const loom_runtime_t *rt); /* suspended ones included */
/* The pending jobs' ids, in queue order as of the last step (arrivals since
 * then at the end): up to max; returns how many there are. */
size_t loom_runtime_pending_ids(const loom_runtime_t *rt, uint64_t *ids, size_t max);
/* The ids of running and suspended jobs on node (up to max; returns how many there are). */
size_t loom_runtime_jobs_on(const loom_runtime_t *rt, size_t node, uint64_t *ids, size_t max);
/* Debug check of the model (loom_sched_cluster_check with every held allocation). */
int loom_runtime_check(const loom_runtime_t *rt, loom_err_t *err);

#ifdef __cplusplus
}
#endif
#endif
