/* Private to runtime: the job record and the runtime's state, shared by
 * runtime.c (queue, placement, bookkeeping), gandiva.c (time-slicing and
 * packing introspection), tiresias.c (preemptive 2D-LAS), backfill.c,
 * share.c, rubick.c and quota.c (running quotas). */
#ifndef LOOM_RUNTIME_INT_H
#define LOOM_RUNTIME_INT_H

#include "loom/runtime.h"

/* Bounds of Gandiva's searches (candidates examined per decision). */
#define RT_MAX_VICTIMS    64  /* jobs suspended so that one suspended job resumes */
#define RT_MAX_MAKE_ROOM  256 /* running jobs considered to make room for a pending one */
#define RT_MIN_STEPS      4   /* steps of each kind before a packing decision */
#define RT_KEEP_THRESHOLD 1.0 /* normalized throughput below which packing is undone */
#define RT_NOTE_MAX       160
#define RT_ARRAY_MIN_CAP  64 /* first capacity of the runtime's arrays (loom_vec_reserve) */

/* A job of Rubick's (rubick.c). */
typedef struct rt_rubick {
    loom_rubick_spec_t spec;
    loom_rubick_job_t job; /* job.spec points at spec; its table of choices */
    double total, done;    /* samples: its work; done as the model counts it */
    double thr;            /* samples/s of what it runs (the model's) */
    double start_s, last_s, pause_until;
    int reconfigs;
    bool draining;            /* drain is held: what its last reconfiguration gave up */
    loom_sched_alloc_t drain; /* while its old process checkpoints */
} rt_rubick_t;

typedef struct rjob {
    /* What the pending pass reads of every job first, together: a long
     * queue's walk costs a cache miss per line it touches (bench/sched_step). */
    loom_runtime_state_t state;
    bool dead;              /* removed while in the pending array (freed at its compaction) */
    uint32_t shape;         /* index of its request in rt->shapes */
    bool fresh;             /* in the arrivals array, not yet merged into the order */
    char *reject;           /* pending: why no node can ever hold it (REJECT at the next step) */
    loom_runtime_job_t job; /* job.recorded: the pending reason last reported */
    loom_sched_qjob_t q;    /* q.user points back here */
    loom_sched_alloc_t alloc;
    bool held;        /* alloc is in the model (false while suspended) */
    size_t slot;      /* index in rt->act while running or suspended */
    double resumed_s; /* start, or last resume */
    double suspended_s;
    double attained_gpu_s;
    double ran_s; /* seconds run before its current start or resume */
    /* Tiresias: attained service at its last promotion (its queue counts
     * the service since), and its level as of the last step. */
    double promo_base;
    int tlevel;
    /* Backfill: the reservation it got in step resv_step (0: none). */
    uint64_t resv_step;
    bool held_back; /* the last step held it back for a reservation (Reservation) */
    double resv_start_s;
    int resv_node;
    /* Reconfiguration asked (loom_runtime_reconfigure). */
    bool reconf;
    loom_sched_req_t reconf_req;
    /* Gandiva. */
    bool no_pack;       /* packing hurt it: resume it only alone on its GPUs */
    bool decided;       /* a packing decision was made for this tenancy */
    uint64_t probe_for; /* suspended so that this job's solo step time is measured */
    double solo_step_s, packed_step_s;
    int solo_n, packed_n;
    int tenancy;
    double tenancy_since;
    int skip;
    char note[RT_NOTE_MAX];
    /* Running quotas: its user's and account's entries (index + 1 in
     * rt->quotas; 0: none, out of memory), the milli-GPU charged to them. */
    uint32_t quser, qacct;
    int64_t quota_gpu;
    /* Fair share and drf: its entries in rt->shares, index + 1 (0: not yet
     * looked up): user, account, (account, user). */
    uint32_t ix_user, ix_acct, ix_assoc;
    rt_rubick_t *rb; /* Rubick's job; NULL: a black box */
    char *dep;       /* its dependency text while it waits (deps.c) */
} rjob_t;

enum { SHARE_USER, SHARE_ACCOUNT, SHARE_ASSOC };

/* What became of a pending job the step considered. */
enum { RT_STAYS, RT_STARTED, RT_GONE, RT_HELD_BACK /* fits, but would delay a reservation */ };

/* A backfill reservation of this step: job id's alloc on alloc.node over
 * [start_s, end_s). */
typedef struct rt_resv {
    uint64_t id;
    double start_s, end_s;
    loom_sched_alloc_t alloc;
} rt_resv_t;

typedef struct rt_end {
    double end_s;
    const loom_sched_alloc_t *alloc;
} rt_end_t;

struct loom_runtime {
    loom_sched_cluster_t cluster;
    loom_sched_placer_t *placer;
    loom_sched_queue_cfg_t queue;
    char queue_name[96], place_name[32];
    double timeslice_s;
    bool pack_check;
    bool tiresias; /* queue tiresias or tiresias+fairshare: preemptive (tiresias.c) */
    bool *down;
    size_t ndown;
    uint64_t up_events; /* nodes that came back (resources grew) */
    double now;         /* of the last step */
    uint64_t steps;     /* steps taken */
    uint64_t nomem;     /* step work put off for memory (loom_runtime_nomem) */

    loom_map_t jobs; /* id -> job (loom_map_ptr) */

    /* Pending, in queue order, with each job's shape beside it so that the
     * walk of a long queue reads one array in order. */
    struct pent {
        rjob_t *j;
        uint32_t shape;
    } * pend;
    size_t npend, cap_pend;
    size_t ndead;              /* removed pending jobs still in pend */
    size_t nran;               /* pending jobs that ran before (their Tiresias level may move) */
    uint64_t first_blocked;    /* id of the first job in order the last step could not start */
    loom_sched_qjob_t **fresh; /* arrivals since the last step */
    size_t nfresh, cap_fresh;
    rjob_t **act; /* running and suspended */
    size_t nact, cap_act;

    /* Distinct requests (interned at submission), each with the epoch in
     * which it last fitted nowhere; shape_idx maps a request (req_key's
     * bytes) to its index. */
    struct shape {
        loom_sched_req_t req;
        uint64_t fail_epoch;     /* 0: never failed */
        uint64_t room_fail_step; /* the step in which time-slicing could not make room for it */
    } * shapes;
    size_t nshapes, cap_shapes;
    loom_map_t shape_idx; /* LOOM_MAP_STR */

    /* Fair share and drf: one entry per user, per account and per
     * (account, user) pair seen (never removed, so indices stay valid). */
    struct share {
        uint8_t kind;           /* SHARE_USER, SHARE_ACCOUNT, SHARE_ASSOC */
        uint32_t user, account; /* the one its kind names */
        double weight;          /* user, account: shares (default 1) */
        double usage;           /* fair share: decayed GPU-seconds, as of usage_t */
        double sum_w;           /* account: its users' weights (by=account) */
        double factor;          /* fair share: 2^-(U/S) among its siblings */
        double cpu, mem, gpu;   /* drf, user: what its running jobs hold */
    } * shares;
    size_t nshares, cap_shares;
    double usage_t; /* fair share: when usage was last brought up to date */
    double mem_mib; /* drf: the cluster's memory (CPU and GPU: in cluster) */

    /* Running (and suspended) jobs per group (job arrays with a cap). */
    struct group {
        uint64_t id;
        int running;
    } * groups;
    size_t ngroups, cap_groups;
    /* Running quotas (quota.c): an entry per user and per account seen,
     * found by key (kind << 32 | id) through quota_idx (its index). */
    struct quota {
        uint64_t key;
        int64_t gpu_milli, jobs; /* running now */
        loom_runtime_limits_t limits;
        bool own; /* limits of its own (else the kind's default) */
    } * quotas;
    size_t nquotas, cap_quotas;
    loom_map_t quota_idx;
    loom_runtime_limits_t quota_every[2]; /* users', accounts' default */
    bool quota_on;                        /* any limit was ever set */

    /* Pending reasons that changed in the last step. */
    loom_runtime_reason_change_t *changes;
    size_t nchanges, cap_changes;

    /* Rubick's policy (rubick.c): on when rb_on. */
    bool rb_on;
    loom_runtime_rubick_t rb;
    loom_rubick_opts_t rb_opts;
    double rb_next_s;    /* the next periodic decision */
    uint64_t rb_seen[3]; /* jobs and resources after the last decision: re-decide when they move */
    bool rb_decided;     /* in this step */
    /* Backfill (backfill.c): the reservations of this step. */
    loom_runtime_backfill_t backfill;
    double default_limit_s;
    rt_resv_t *resv;
    size_t nresv, cap_resv;
    rt_end_t *ends; /* scratch: running jobs by node and expected end */
    size_t cap_ends;
    /* Dependencies (deps.c): the jobs whose dependency text is not met yet,
     * judged at a step when a job started or left (events moved) or a
     * second passed; outcomes of jobs it does not hold come from the caller. */
    struct rt_deps {
        rjob_t **wait;
        size_t n, cap;
        uint64_t events, seen; /* starts and removals; as of the last judging */
        bool dirty;            /* a job arrived, or the last judging released one */
        double next_s;
        loom_runtime_outcome_fn outcome;
        void *ctx;
    } deps;
    /* The step's callback. */
    loom_runtime_apply_fn apply;
    void *ctx;
    size_t applied;
};

/* runtime.c */
void rt__act_remove(loom_runtime_t *rt, rjob_t *j);
rjob_t *rt__find(const loom_runtime_t *rt, uint64_t id);
int rt__emit(loom_runtime_t *rt, loom_runtime_action_kind_t kind, rjob_t *j,
             const loom_sched_alloc_t *alloc, const loom_sched_alloc_t *old, const char *reason);
void rt__account(rjob_t *j, double now);

/* quota.c */
int rt__quota_attach(loom_runtime_t *rt, rjob_t *j);
void rt__quota_track(loom_runtime_t *rt, rjob_t *j, int delta);
bool rt__quota_blocks(const loom_runtime_t *rt, const rjob_t *j);
void rt__quota_free(loom_runtime_t *rt);
int rt__consider(loom_runtime_t *rt, struct pent e, uint64_t ep, bool cheap_skip);

/* deps.c */
int rt__deps_add(loom_runtime_t *rt, rjob_t *j, const char *text);
void rt__deps_forget(loom_runtime_t *rt, rjob_t *j);
void rt__deps_pass(loom_runtime_t *rt);
void rt__deps_free(loom_runtime_t *rt);

/* share.c */
int rt__share_update(loom_runtime_t *rt, size_t nf);
void rt__drf_pass(loom_runtime_t *rt, uint64_t ep, bool cheap_skip);
loom_runtime_reason_t rt__blocked(const loom_runtime_t *rt, const rjob_t *j);
void rt__started(loom_runtime_t *rt, rjob_t *j);

/* rubick.c */
int rt__rubick_config(loom_runtime_t *rt, const loom_runtime_rubick_t *cfg, loom_err_t *err);
double rt__rubick_wakeup(const loom_runtime_t *rt);
void rt__rubick_new(loom_runtime_t *rt, rjob_t *j, const loom_runtime_job_t *job);
void rt__rubick_adopted(loom_runtime_t *rt, rjob_t *j);
void rt__rubick_pass(loom_runtime_t *rt);
void rt__rubick_step_done(loom_runtime_t *rt);
void rt__rubick_release(loom_runtime_t *rt, rjob_t *j);
size_t rt__rubick_drains(const loom_runtime_t *rt, loom_sched_alloc_t *out);

/* backfill.c */
double rt__limit(const loom_runtime_t *rt, const rjob_t *j);
bool rt__resv_conflict(const loom_runtime_t *rt, const loom_sched_alloc_t *a, double end_s);
void rt__reserve(loom_runtime_t *rt, rjob_t *j);

/* runtime.c: the step's pieces other passes use. */
typedef struct hidden hidden_t;
int rt__try_start(loom_runtime_t *rt, rjob_t *j);
hidden_t *rt__hide_down(loom_runtime_t *rt);
void rt__unhide_down(loom_runtime_t *rt, hidden_t *h);

/* tiresias.c */
void rt__tiresias_pass(loom_runtime_t *rt);
double rt__tiresias_wakeup(const loom_runtime_t *rt);
bool rt__resume(loom_runtime_t *rt, rjob_t *j);

/* gandiva.c */
int rt__suspend(loom_runtime_t *rt, rjob_t *j, const char *why);
void rt__resume_pass(loom_runtime_t *rt);
bool rt__make_room(loom_runtime_t *rt, const loom_sched_req_t *req);
void rt__pack_pass(loom_runtime_t *rt);
int rt__tenants(const loom_runtime_t *rt, const rjob_t *a);
void rt__set_tenancy(loom_runtime_t *rt, rjob_t *a, int ten);

#endif
