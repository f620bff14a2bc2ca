/* loom sched: the cluster model and the scheduling policies.
 *
 * Pure policy code: no RPC, no SQLite, no processes. loomd and the simulator
 * (sim) call the very same functions, which are plain functions of
 * (cluster, queue, job) so that tests can check them against expectations
 * worked out by hand.
 *
 * - Cluster model: nodes with CPUs (milli-CPU), memory (MiB), labels and
 *   GPUs of one type per node. Each GPU has a free share in milli-GPU (1000 =
 *   a whole GPU) and free memory, so one GPU can host several sharing jobs.
 *   loom_sched_alloc / loom_sched_free never over-commit (asserted), and
 *   loom_sched_cluster_check verifies the bookkeeping.
 * - Queue order: fifo, sjf, priority, tiresias (discretized 2D-LAS),
 *   fairshare (Slurm's classic fair-share factor, by user or by account
 *   then user), tiresias+fairshare (fair share within Tiresias' queues),
 *   drf (dominant-resource fairness).
 * - Placement: firstfit, bestfit, dotprod, packing, clustering, random, fgd
 *   and fgd-cpu (see docs/scheduling.md), chosen by name.
 */
#ifndef LOOM_SCHED_H
#define LOOM_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loom/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_SCHED_MILLI        1000                /* milli-GPU in one GPU */
#define LOOM_SCHED_MAX_GPUS     16                  /* GPUs on one node */
#define LOOM_SCHED_MAX_TYPES    63                  /* distinct GPU types in one cluster */
#define LOOM_SCHED_TYPE_UNKNOWN (UINT64_C(1) << 63) /* a type no node has */
#define LOOM_SCHED_NAME_MAX     64

/* GPU classes of a job, as GPU clustering groups them. */
enum {
    LOOM_SCHED_CLASS_NONE = -1, /* no GPU */
    LOOM_SCHED_CLASS_SHARE = 0, /* part of one GPU */
    LOOM_SCHED_CLASS_1,
    LOOM_SCHED_CLASS_2,
    LOOM_SCHED_CLASS_4,
    LOOM_SCHED_CLASS_8,
    LOOM_SCHED_CLASS_OTHER,
    LOOM_SCHED_NCLASSES
};

/* ------------------------------------------------------------- the model */

typedef struct loom_sched_node {
    char name[LOOM_SCHED_NAME_MAX];
    int64_t cpu_milli, cpu_free; /* milli-CPU */
    int64_t mem_mib, mem_free;
    int gpu_type; /* index into the cluster's type table; -1: no GPU */
    int ngpus;
    int64_t gpu_mem_mib;                       /* memory of each GPU; 0: not tracked */
    int32_t gpu_free[LOOM_SCHED_MAX_GPUS];     /* milli-GPU free on each GPU */
    int64_t gpu_mem_free[LOOM_SCHED_MAX_GPUS]; /* MiB free on each GPU */
    char *labels;                              /* "k=v,k=v" or NULL (owned) */
    /* Bookkeeping the policies read. */
    uint32_t ntasks;
    uint32_t class_count[LOOM_SCHED_NCLASSES];
    uint32_t version; /* bumped by every alloc and free on this node */
} loom_sched_node_t;

typedef struct loom_sched_cluster {
    loom_sched_node_t *nodes;
    size_t nnodes, cap;
    char *types[LOOM_SCHED_MAX_TYPES];
    int ntypes;
    int64_t gpu_milli_total, gpu_milli_used; /* over all nodes */
    int64_t cpu_milli_total, cpu_milli_used;
    uint64_t frees; /* number of loom_sched_free calls (resources only grow then) */
} loom_sched_cluster_t;

/* What a job asks for. A job takes num_gpus whole GPUs (gpu_milli = 1000),
 * or a share of one GPU (num_gpus = 1, gpu_milli < 1000), and/or GPU memory
 * per GPU (gpu_mem_mib); gpu_types is a bit mask over the cluster's type
 * table (0: any type). */
typedef struct loom_sched_req {
    int64_t cpu_milli;
    int64_t mem_mib;
    int num_gpus;
    int32_t gpu_milli;   /* per GPU */
    int64_t gpu_mem_mib; /* per GPU */
    uint64_t gpu_types;
} loom_sched_req_t;

/* Where a job went: its node and GPUs and what it holds there. */
typedef struct loom_sched_alloc {
    int node;
    int ngpus;
    uint8_t gpus[LOOM_SCHED_MAX_GPUS];
    loom_sched_req_t req;
} loom_sched_alloc_t;

void loom_sched_cluster_init(loom_sched_cluster_t *c);
void loom_sched_cluster_free(loom_sched_cluster_t *c);
/* Index of a GPU type name, added if new (-1 with err if the table is full). */
int loom_sched_cluster_type(loom_sched_cluster_t *c, const char *name, loom_err_t *err);
/* Bit mask for "A|B|C" (empty: 0 = any). Names no node has map to
 * LOOM_SCHED_TYPE_UNKNOWN so that such a job fits nowhere. */
uint64_t loom_sched_cluster_type_mask(const loom_sched_cluster_t *c, const char *spec);
/* Adds a node with everything free. gpu_type may be NULL when ngpus is 0. */
int loom_sched_cluster_add_node(loom_sched_cluster_t *c, const char *name, int64_t cpu_milli,
                                int64_t mem_mib, int ngpus, const char *gpu_type,
                                int64_t gpu_mem_mib, const char *labels, loom_err_t *err);
/* Frees every allocation (all nodes back to empty). */
void loom_sched_cluster_reset(loom_sched_cluster_t *c);
/* A deep copy of src into dst (dst uninitialised). */
int loom_sched_cluster_copy(loom_sched_cluster_t *dst, const loom_sched_cluster_t *src,
                            loom_err_t *err);

/* Checks a request is well formed (ranges, share only with one GPU). */
int loom_sched_req_validate(const loom_sched_req_t *r, loom_err_t *err);
/* GPU class (LOOM_SCHED_CLASS_*). */
int loom_sched_req_class(const loom_sched_req_t *r);
/* Total milli-GPU the job takes. */
static inline int64_t loom_sched_req_gpu_total(const loom_sched_req_t *r)
{
    return (int64_t)r->num_gpus * r->gpu_milli;
}

/* Can GPU g of node n take one GPU's worth of r? */
bool loom_sched_gpu_fits(const loom_sched_node_t *n, int g, const loom_sched_req_t *r);
/* Does r fit on node n (CPU, memory, GPU type, enough GPUs)? */
bool loom_sched_fits(const loom_sched_node_t *n, const loom_sched_req_t *r);
/* What no node of a cluster could ever give a request (loom_sched_feasible). */
typedef enum loom_sched_lack {
    LOOM_SCHED_LACK_NONE = 0,
    LOOM_SCHED_LACK_NODES,      /* the cluster has no node */
    LOOM_SCHED_LACK_GPU_TYPE,   /* no node has GPUs of a type it allows */
    LOOM_SCHED_LACK_GPUS,       /* GPUs */
    LOOM_SCHED_LACK_CPUS,       /* milli-CPU */
    LOOM_SCHED_LACK_MEMORY,     /* MiB */
    LOOM_SCHED_LACK_GPU_MEMORY, /* MiB per GPU */
    LOOM_SCHED_LACK_TOGETHER    /* each fits some node, not all of them one */
} loom_sched_lack_t;
typedef struct loom_sched_infeasible {
    loom_sched_lack_t lack;
    int64_t requested, largest; /* in lack's unit (above) */
    int node;                   /* the node with the largest; -1: none */
    char node_name[LOOM_SCHED_NAME_MAX];
} loom_sched_infeasible_t;
/* Whether some node of c could ever hold r: loom_sched_fits on the node
 * with everything free (allocations and down nodes do not matter: they
 * end, or come back). The one feasibility test of loom: job.submit's
 * refusal and the runtime's rejection (LOOM_RUNTIME_REJECT) both ask it.
 * LOOM_OK; LOOM_EINVAL for a malformed request (loom_sched_req_validate);
 * LOOM_ELIMIT when no node could, err naming the resource, the request and
 * the largest node's capacity, and *why (may be NULL) the same as fields. */
int loom_sched_feasible(const loom_sched_cluster_t *c, const loom_sched_req_t *r,
                        loom_sched_infeasible_t *why, loom_err_t *err);
/* The resource's name in loom_sched_feasible's messages ("gpus", "cpus",
 * "memory", "gpu_memory", "gpu_type"; "resources" for the others). */
const char *loom_sched_lack_name(loom_sched_lack_t lack);

/* Free milli-GPU on a node, and its number of fully free GPUs. */
int64_t loom_sched_node_gpu_free(const loom_sched_node_t *n);
int loom_sched_node_gpus_idle(const loom_sched_node_t *n);

/* Takes r on node `node`, GPUs gpus[0..ngpus) (ngpus must equal r->num_gpus).
 * Refuses (LOOM_ESTATE, nothing changed) anything that would over-commit. */
int loom_sched_alloc(loom_sched_cluster_t *c, int node, const loom_sched_req_t *r,
                     const uint8_t *gpus, int ngpus, loom_sched_alloc_t *out, loom_err_t *err);
/* Gives an allocation back. Refuses (LOOM_ESTATE) one that was not held. */
int loom_sched_free(loom_sched_cluster_t *c, const loom_sched_alloc_t *a, loom_err_t *err);
/* Debug consistency check: no free value below zero or above capacity, the
 * totals agree with the nodes, and, when live allocations are given, the
 * sum of what they hold equals what the nodes miss (conservation). */
int loom_sched_cluster_check(const loom_sched_cluster_t *c, const loom_sched_alloc_t *live,
                             size_t nlive, loom_err_t *err);

/* -------------------------------------------------------- target workload */

/* FGD's target workload: task shapes (cpu, gpu share, gpu count, gpu types)
 * with popularity weights that sum to 1. */
typedef struct loom_sched_shape {
    int64_t cpu_milli;
    int num_gpus;
    int32_t gpu_milli;
    uint64_t gpu_types;
    double weight;
} loom_sched_shape_t;

typedef struct loom_sched_workload {
    loom_sched_shape_t *shapes;
    size_t nshapes;
} loom_sched_workload_t;

/* The most common shapes of reqs[0..n) that together cover at least
 * `coverage` (e.g. 0.95) of them, weights renormalised to sum to 1. Ties in
 * count are broken by the shape's values, so the result is deterministic. */
int loom_sched_workload_learn(const loom_sched_req_t *reqs, size_t n, double coverage,
                              loom_sched_workload_t *out, loom_err_t *err);
/* A given workload (weights need not sum to 1; they are normalised). */
int loom_sched_workload_set(loom_sched_workload_t *out, const loom_sched_shape_t *shapes, size_t n,
                            loom_err_t *err);
void loom_sched_workload_free(loom_sched_workload_t *w);

/* FGD's fragmentation of a node under a workload, in milli-GPU:
 * sum over shapes m of weight(m) * F_n(m), where F_n(m) is all free GPU
 * share of n if m needs no GPU or cannot run on n, else the free shares of
 * the GPUs whose free share is below m's per-GPU demand. */
double loom_sched_node_frag(const loom_sched_node_t *n, const loom_sched_workload_t *w);
/* The same for a node given only its state (free CPU and per-GPU frees). */
double loom_sched_frag_state(int64_t cpu_free, int gpu_type, int ngpus, const int32_t *gpu_free,
                             const loom_sched_workload_t *w);

/* -------------------------------------------------------------- placement */

typedef struct loom_sched_placer loom_sched_placer_t;

/* Which node wins among equal best scores. The published FGD simulator
 * (Kubernetes' scheduler over a fake API server) takes the first best node
 * in an order that is fixed for a run but arbitrary: TIES_ORDER models it
 * with a seeded shuffle of the nodes and reproduces its results
 * (docs/scheduling.md). */
typedef enum loom_sched_ties {
    LOOM_SCHED_TIES_ORDER = 0, /* first in a seeded, fixed order (default) */
    LOOM_SCHED_TIES_FIRST,     /* lowest-numbered node */
    LOOM_SCHED_TIES_RANDOM     /* uniformly at random, per decision */
} loom_sched_ties_t;

typedef struct loom_sched_placer_opts {
    uint64_t seed;                         /* random choices and tie breaks */
    const loom_sched_workload_t *workload; /* FGD's target workload (copied) */
    bool exact_scores;                     /* compare real-valued scores instead of the published
                                              simulator's integer 0..100 scores */
    loom_sched_ties_t ties;
} loom_sched_placer_opts_t;

/* "firstfit bestfit dotprod packing clustering random fgd fgd-cpu" */
const char *loom_sched_place_names(void);
bool loom_sched_place_known(const char *name);
/* FGD-family policies need a workload; others ignore it. */
int loom_sched_placer_new(const char *name, const loom_sched_cluster_t *c,
                          const loom_sched_placer_opts_t *opts, loom_sched_placer_t **out,
                          loom_err_t *err);
void loom_sched_placer_free(loom_sched_placer_t *p);
const char *loom_sched_placer_name(const loom_sched_placer_t *p);
/* Replaces the target workload (e.g. relearned from recent jobs). */
int loom_sched_placer_set_workload(loom_sched_placer_t *p, const loom_sched_workload_t *w,
                                   loom_err_t *err);
/* Chooses a node and GPUs for r on c (c is not changed). LOOM_OK with *out
 * filled (out->node, out->gpus, out->ngpus, out->req), or LOOM_ENOTFOUND
 * when r fits nowhere. Pass *out to loom_sched_alloc to take it. */
int loom_sched_place(loom_sched_placer_t *p, const loom_sched_cluster_t *c,
                     const loom_sched_req_t *r, loom_sched_alloc_t *out);

/* ------------------------------------------------------------ queue order */

typedef enum loom_sched_queue_kind {
    LOOM_SCHED_QUEUE_FIFO,
    LOOM_SCHED_QUEUE_SJF,
    LOOM_SCHED_QUEUE_PRIORITY,
    LOOM_SCHED_QUEUE_TIRESIAS,
    LOOM_SCHED_QUEUE_FAIRSHARE,
    LOOM_SCHED_QUEUE_TIRESIAS_FAIRSHARE, /* Tiresias' level, then fair share */
    LOOM_SCHED_QUEUE_DRF
} loom_sched_queue_kind_t;

/* Whom fair share and DRF are fair between. */
typedef enum loom_sched_share_by {
    LOOM_SCHED_SHARE_BY_USER = 0, /* users, flat */
    LOOM_SCHED_SHARE_BY_ACCOUNT   /* accounts, then users within an account */
} loom_sched_share_by_t;

#define LOOM_SCHED_TIRESIAS_MAXK 8

typedef struct loom_sched_queue_cfg {
    loom_sched_queue_kind_t kind;
    /* Tiresias: K queues; a job is in queue k when its attained service
     * (GPUs x seconds) is below thresholds[k] (ascending, K-1 of them) and at
     * least thresholds[k-1]. Starvation guard: a job that has waited at
     * least starve_factor x its last run (and at least starve_min_s), or
     * starve_limit_s in all, is promoted to queue 0. 0 disables a rule. */
    int k;
    double thresholds[LOOM_SCHED_TIRESIAS_MAXK - 1];
    double starve_factor;
    double starve_min_s;
    double starve_limit_s;
    /* Fair share: the half-life of usage (seconds; "fairshare:D", default
     * 7 days as Slurm's PriorityDecayHalfLife). */
    double fairshare_half_life_s;
    loom_sched_share_by_t share_by; /* fair share: ",by=account" */
} loom_sched_queue_cfg_t;

/* Does the policy read fair-share factors (fairshare, tiresias+fairshare)? */
static inline bool loom_sched_queue_fairshare(const loom_sched_queue_cfg_t *cfg)
{
    return cfg->kind == LOOM_SCHED_QUEUE_FAIRSHARE ||
           cfg->kind == LOOM_SCHED_QUEUE_TIRESIAS_FAIRSHARE;
}

/* A pending job as the queue policies see it. */
typedef struct loom_sched_qjob {
    uint64_t id;
    double submit_s;       /* submission time */
    int priority;          /* larger first */
    double estimate_s;     /* 0: unknown */
    double time_limit_s;   /* 0: none */
    double attained_gpu_s; /* GPUs x seconds served so far */
    double wait_since_s;   /* start of its current wait */
    double last_run_s;     /* length of its last run (0: never ran) */
    int level;             /* out: Tiresias queue after ordering */
    double fairshare;      /* fair share: its user's (by=account: its account's)
                              factor in (0, 1], larger first */
    double fairshare_sub;  /* fair share by account: its user's factor among the
                              account's users, larger first (ties of fairshare) */
    double dominant;       /* drf: its owner's dominant share / weight, smaller first */
    void *user;
} loom_sched_qjob_t;

/* "fifo" | "sjf" | "priority" | "tiresias" | "drf" | "fairshare[:OPTS]" |
 * "tiresias+fairshare[:OPTS]", OPTS a comma-separated list of a half-life
 * (a duration: "30m", "1h"; also "half-life=1h") and "by=user|account".
 * "tiresias:OPTS", OPTS a comma-separated list of "thresholds=T1/T2/..."
 * (K - 1 ascending GPU-seconds) and "knob=X" (starve_factor, PROMOTEKNOB).
 * Tiresias defaults: K = 2, threshold 3200 GPU-seconds, starve_factor 2 (as
 * recorded from the Tiresias paper); fair share: half-life 7d, by user. */
int loom_sched_queue_cfg_parse(const char *name, loom_sched_queue_cfg_t *out, loom_err_t *err);
/* Tiresias queue of one job at time now (with the starvation guard). */
int loom_sched_tiresias_level(const loom_sched_queue_cfg_t *cfg, const loom_sched_qjob_t *j,
                              double now_s);
/* Sorts jobs[0..n) into the order they should be considered (stable, ties
 * by submit time then id) and sets each job's level. */
void loom_sched_queue_order(const loom_sched_queue_cfg_t *cfg, loom_sched_qjob_t **jobs, size_t n,
                            double now_s);
/* The order loom_sched_queue_order sorts by (levels as set by it): < 0 when
 * a comes first. A total order: ties by submit time, then id. */
int loom_sched_queue_cmp(const loom_sched_queue_cfg_t *cfg, const loom_sched_qjob_t *a,
                         const loom_sched_qjob_t *b);

#ifdef __cplusplus
}
#endif
#endif
