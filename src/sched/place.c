/* sched/place.c — placement policies: which node, and which GPUs on it.
 *
 * Each policy scores every node the job fits on; the highest score wins and
 * ties are broken uniformly at random from the placer's seeded RNG. By
 * default the scores are the published FGD simulator's integer scores in
 * 0..100 (that is how its results were produced, ties included); with
 * exact_scores the same quantities are compared as real numbers.
 *
 * GPU choice: whole-GPU jobs take the lowest-numbered GPUs that fit; a
 * sharing job takes the GPU with the smallest free share that fits, except
 * under FGD, which tries each GPU and keeps the one that least increases
 * fragmentation.
 *
 * FGD is incremental: a node's fragmentation and, per task shape, its best
 * fragmentation delta are cached with the node's version, so a decision
 * recomputes only nodes changed since that shape was last scored. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched_internal.h"

typedef enum {
    P_FIRSTFIT,
    P_BESTFIT,
    P_DOTPROD,
    P_PACKING,
    P_CLUSTERING,
    P_RANDOM,
    P_FGD,
    P_FGDCPU
} pkind_t;

static const struct {
    const char *name;
    pkind_t kind;
} kinds[] = {
    {"firstfit", P_FIRSTFIT}, {"bestfit", P_BESTFIT},       {"dotprod", P_DOTPROD},
    {"packing", P_PACKING},   {"clustering", P_CLUSTERING}, {"random", P_RANDOM},
    {"fgd", P_FGD},           {"fgd-cpu", P_FGDCPU},
};

#define MAX_SHAPES   1024     /* task shapes with cached FGD deltas */
#define MAX_SPEC_CPU 128000.0 /* the published simulator's normalisers */
#define MAX_SPEC_GPU 8000.0

typedef struct shape_key {
    int64_t cpu_milli, gpu_mem_mib;
    uint64_t gpu_types;
    int32_t gpu_milli;
    int num_gpus;
} shape_key_t;

struct loom_sched_placer {
    pkind_t kind;
    char name[16];
    bool exact;
    loom_rng_t rng;
    uint64_t seed;
    loom_sched_ties_t ties;
    uint32_t *rank; /* tie order: lower rank wins (TIES_FIRST, TIES_ORDER) */
    loom_sched_workload_t wl;
    loom_frag_model_t model;
    bool has_model;
    /* FGD caches */
    const loom_sched_cluster_t *bound;
    size_t nnodes;
    uint32_t *frag_ver; /* version + 1 of the node when frag[] was computed; 0: none */
    double *frag;
    shape_key_t *shapes; /* interned shapes, index = shape id */
    size_t nshapes, scap, shapes_cap;
    uint32_t *c_ver; /* [node * scap + sid] */
    double *c_delta; /* best frag increase (milli-GPU), or -HUGE_VAL if nothing fits */
    int8_t *c_gpu;   /* GPU of the best delta (sharing jobs), -1 otherwise */
    /* scratch for normalised scores (bestfit) */
    int64_t *raw;
    int *cand;
    double *pscore;
    int8_t *cgpu;
    double cpu_per_gpu; /* the workload's milli-CPU per milli-GPU */
};

const char *loom_sched_place_names(void)
{
    return "firstfit bestfit dotprod packing clustering random fgd fgd-cpu";
}

bool loom_sched_place_known(const char *name)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i].name, name) == 0)
            return true;
    return false;
}

const char *loom_sched_placer_name(const loom_sched_placer_t *p)
{
    return p->name;
}

static void caches_free(loom_sched_placer_t *p)
{
    free(p->frag_ver);
    free(p->frag);
    free(p->c_ver);
    free(p->c_delta);
    free(p->c_gpu);
    free(p->raw);
    free(p->cand);
    free(p->pscore);
    free(p->cgpu);
    free(p->rank);
    p->rank = NULL;
    p->pscore = NULL;
    p->cgpu = NULL;
    p->frag_ver = NULL;
    p->frag = NULL;
    p->c_ver = NULL;
    p->c_delta = NULL;
    p->c_gpu = NULL;
    p->raw = NULL;
    p->cand = NULL;
    p->nnodes = 0;
}

/* (Re)binds the caches to cluster c with room for scap shapes. */
static int caches_bind(loom_sched_placer_t *p, const loom_sched_cluster_t *c, size_t scap)
{
    caches_free(p);
    size_t nn = c->nnodes ? c->nnodes : 1;
    p->frag_ver = calloc(nn, sizeof *p->frag_ver);
    p->frag = calloc(nn, sizeof *p->frag);
    p->raw = calloc(nn, sizeof *p->raw);
    p->cand = calloc(nn, sizeof *p->cand);
    p->pscore = calloc(nn, sizeof *p->pscore);
    p->cgpu = calloc(nn, sizeof *p->cgpu);
    p->rank = calloc(nn, sizeof *p->rank);
    p->c_ver = calloc(nn * scap, sizeof *p->c_ver);
    p->c_delta = calloc(nn * scap, sizeof *p->c_delta);
    p->c_gpu = calloc(nn * scap, sizeof *p->c_gpu);
    if (!p->frag_ver || !p->frag || !p->raw || !p->cand || !p->c_ver || !p->c_delta || !p->c_gpu ||
        !p->pscore || !p->cgpu || !p->rank) {
        caches_free(p);
        return LOOM_ENOMEM;
    }
    for (size_t i = 0; i < c->nnodes; i++)
        p->rank[i] = (uint32_t)i;
    if (p->ties == LOOM_SCHED_TIES_ORDER) { /* one seeded order for the whole run */
        loom_rng_t r;
        loom_rng_init(&r, p->seed, 0x0de7);
        loom_rng_shuffle(&r, p->rank, c->nnodes, sizeof *p->rank);
    }
    p->bound = c;
    p->nnodes = c->nnodes;
    p->scap = scap;
    return LOOM_OK;
}

int loom_sched_placer_set_workload(loom_sched_placer_t *p, const loom_sched_workload_t *w,
                                   loom_err_t *err)
{
    loom_sched_workload_t copy = {0};
    loom_frag_model_t model;
    if (w && w->nshapes) {
        int rc = loom_sched_workload_set(&copy, w->shapes, w->nshapes, err);
        if (rc)
            return rc;
    }
    int rc = loom_frag_model_build(&model, &copy, err);
    if (rc) {
        loom_sched_workload_free(&copy);
        return rc;
    }
    loom_sched_workload_free(&p->wl);
    if (p->has_model)
        loom_frag_model_free(&p->model);
    p->wl = copy;
    p->model = model;
    double cpu = 0, gpu = 0;
    for (size_t i = 0; i < copy.nshapes; i++) {
        cpu += copy.shapes[i].weight * (double)copy.shapes[i].cpu_milli;
        gpu += copy.shapes[i].weight * (double)copy.shapes[i].num_gpus * copy.shapes[i].gpu_milli;
    }
    p->cpu_per_gpu = gpu > 0 ? cpu / gpu : 1e9;
    p->has_model = true;
    /* every cached value depends on the workload */
    if (p->frag_ver) {
        memset(p->frag_ver, 0, (p->nnodes ? p->nnodes : 1) * sizeof *p->frag_ver);
        memset(p->c_ver, 0, (p->nnodes ? p->nnodes : 1) * p->scap * sizeof *p->c_ver);
    }
    return LOOM_OK;
}

int loom_sched_placer_new(const char *name, const loom_sched_cluster_t *c,
                          const loom_sched_placer_opts_t *opts, loom_sched_placer_t **out,
                          loom_err_t *err)
{
    *out = NULL;
    int kind = -1;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i].name, name) == 0)
            kind = (int)kinds[i].kind;
    if (kind < 0)
        return loom_err_set(err, LOOM_EINVAL, "placement policy '%s': expected one of: %s", name,
                            loom_sched_place_names());
    loom_sched_placer_t *p = calloc(1, sizeof *p);
    if (!p)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    p->kind = (pkind_t)kind;
    snprintf(p->name, sizeof p->name, "%s", name);
    p->exact = opts && opts->exact_scores;
    p->seed = opts ? opts->seed : 0;
    p->ties = opts ? opts->ties : LOOM_SCHED_TIES_ORDER;
    loom_rng_init(&p->rng, opts ? opts->seed : 0, 0x91ace);
    bool fgd = p->kind == P_FGD || p->kind == P_FGDCPU;
    if (fgd && (!opts || !opts->workload || opts->workload->nshapes == 0)) {
        free(p);
        return loom_err_set(err, LOOM_EINVAL,
                            "placement policy '%s' needs a target workload (task shapes)", name);
    }
    int rc = loom_sched_placer_set_workload(p, opts ? opts->workload : NULL, err);
    if (rc) {
        free(p);
        return rc;
    }
    if (caches_bind(p, c, 32)) {
        loom_sched_placer_free(p);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    *out = p;
    return LOOM_OK;
}

void loom_sched_placer_free(loom_sched_placer_t *p)
{
    if (!p)
        return;
    caches_free(p);
    free(p->shapes);
    loom_sched_workload_free(&p->wl);
    if (p->has_model)
        loom_frag_model_free(&p->model);
    free(p);
}

/* ---------------------------------------------------------------- helpers */

static int64_t gpu_left(const loom_sched_node_t *n)
{
    return loom_sched_node_gpu_free(n);
}

/* The GPUs a non-FGD choice takes: lowest-numbered fitting GPUs for whole
 * GPUs; the fitting GPU with the smallest free share for a share. */
static int pick_gpus(const loom_sched_node_t *n, const loom_sched_req_t *r, uint8_t *gpus)
{
    if (r->num_gpus == 0)
        return 0;
    if (r->gpu_milli >= LOOM_SCHED_MILLI) {
        int k = 0;
        for (int g = 0; g < n->ngpus && k < r->num_gpus; g++)
            if (loom_sched_gpu_fits(n, g, r))
                gpus[k++] = (uint8_t)g;
        return k;
    }
    int best = -1;
    for (int g = 0; g < n->ngpus; g++)
        if (loom_sched_gpu_fits(n, g, r) && (best < 0 || n->gpu_free[g] < n->gpu_free[best]))
            best = g;
    if (best < 0)
        return 0;
    gpus[0] = (uint8_t)best;
    return 1;
}

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

static int64_t int_bestfit(const loom_sched_node_t *n, const loom_sched_req_t *r)
{
    double s = 0.5 * (double)(n->cpu_free - r->cpu_milli) / MAX_SPEC_CPU +
               0.5 * (double)(gpu_left(n) - loom_sched_req_gpu_total(r)) / MAX_SPEC_GPU;
    return (int64_t)((1.0 - s) * 100.0);
}

static double dot(const loom_sched_node_t *n, const loom_sched_req_t *r)
{
    return ((double)n->cpu_free / MAX_SPEC_CPU) * ((double)r->cpu_milli / MAX_SPEC_CPU) +
           ((double)gpu_left(n) / MAX_SPEC_GPU) *
               ((double)loom_sched_req_gpu_total(r) / MAX_SPEC_GPU);
}

static int64_t packing_score(const loom_sched_node_t *n, const loom_sched_req_t *r)
{
    if (loom_sched_req_gpu_total(r) <= 0)
        return 0;
    int idle = loom_sched_node_gpus_idle(n);
    if (idle == n->ngpus) { /* an idle node: fewer GPUs first */
        int64_t s = 100 / 3 - idle;
        return s > idle ? s : idle;
    }
    /* greedily the GPUs with the least free share first */
    int order[LOOM_SCHED_MAX_GPUS];
    for (int g = 0; g < n->ngpus; g++)
        order[g] = g;
    for (int i = 1; i < n->ngpus; i++) { /* stable insertion sort by free share */
        int v = order[i], j = i;
        while (j > 0 && n->gpu_free[order[j - 1]] > n->gpu_free[v]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
    int need = r->num_gpus, fresh = 0;
    int64_t ratio = 0;
    for (int i = 0; i < n->ngpus && need > 0; i++) {
        int g = order[i];
        if (loom_sched_gpu_fits(n, g, r)) {
            need--;
            fresh += n->gpu_free[g] == LOOM_SCHED_MILLI;
            ratio += (int64_t)n->gpu_free[g] * 100 / LOOM_SCHED_MILLI;
        }
    }
    if (fresh > 0) { /* has to open fully free GPUs on a used node */
        int64_t s = 100 / 2 - fresh;
        return s > 100 / 3 ? s : 100 / 3;
    }
    int64_t s = 100 - ratio / 10; /* fits on already shared GPUs */
    return s > 100 / 2 ? s : 100 / 2;
}

static double clustering_score(const loom_sched_node_t *n, const loom_sched_req_t *r, bool exact)
{
    int cls = loom_sched_req_class(r);
    if (cls < 0)
        return 0;
    int kinds_here = 0;
    for (int k = 0; k < LOOM_SCHED_NCLASSES; k++)
        kinds_here += n->class_count[k] > 0;
    int band;
    if (n->class_count[cls] > 0)
        band = kinds_here == 1 ? 3 : 2;
    else
        band = kinds_here == 0 ? 1 : 0;
    int64_t used = (int64_t)MAX_SPEC_GPU - gpu_left(n);
    if (exact)
        return band * 25.0 + 25.0 * (double)used / MAX_SPEC_GPU;
    return (double)(band * 25 + 25 * used / (int64_t)MAX_SPEC_GPU);
}

/* --------------------------------------------------------------- FGD part */

static int shape_id(loom_sched_placer_t *p, const loom_sched_req_t *r)
{
    shape_key_t k = {r->cpu_milli, r->gpu_mem_mib, r->num_gpus ? r->gpu_types : 0, r->gpu_milli,
                     r->num_gpus};
    for (size_t i = 0; i < p->nshapes; i++)
        if (memcmp(&p->shapes[i], &k, sizeof k) == 0)
            return (int)i;
    if (p->nshapes == p->scap) {
        /* Bounded memory (nodes x shapes): beyond MAX_SHAPES distinct
         * shapes a job is scored without the per-shape cache. */
        if (p->scap >= MAX_SHAPES)
            return -1;
        if (caches_bind(p, p->bound, p->scap * 2))
            return -2;
    }
    if (loom_vec_reserve((void **)&p->shapes, &p->shapes_cap, p->nshapes + 1, sizeof *p->shapes,
                         16))
        return -2;
    memset(&p->shapes[p->nshapes], 0, sizeof k);
    p->shapes[p->nshapes] = k;
    return (int)p->nshapes++;
}

static double node_frag(loom_sched_placer_t *p, const loom_sched_cluster_t *c, size_t i)
{
    const loom_sched_node_t *n = &c->nodes[i];
    if (p->frag_ver[i] != n->version + 1) {
        p->frag[i] =
            loom_frag_model_eval(&p->model, n->cpu_free, n->gpu_type, n->ngpus, n->gpu_free);
        p->frag_ver[i] = n->version + 1;
    }
    return p->frag[i];
}

static int64_t fgd_int(double delta)
{
    return (int64_t)(sigmoid(-delta / 1000.0) * 100.0);
}

/* The smallest fragmentation increase of placing r on node i (which r fits),
 * and for a sharing job the GPU that gives it. */
static double fgd_delta(loom_sched_placer_t *p, const loom_sched_cluster_t *c, size_t i, int sid,
                        const loom_sched_req_t *r, int *gpu)
{
    const loom_sched_node_t *n = &c->nodes[i];
    size_t at = i * p->scap + (size_t)sid;
    if (sid >= 0 && p->c_ver[at] == n->version + 1) {
        *gpu = p->c_gpu[at];
        return p->c_delta[at];
    }
    double before = node_frag(p, c, i);
    int32_t after[LOOM_SCHED_MAX_GPUS];
    memcpy(after, n->gpu_free, sizeof after);
    double best = HUGE_VAL;
    int bestg = -1;
    if (r->num_gpus == 1 && r->gpu_milli < LOOM_SCHED_MILLI) {
        int64_t best_int = INT64_MIN;
        for (int g = 0; g < n->ngpus; g++) {
            if (!loom_sched_gpu_fits(n, g, r))
                continue;
            bool seen = false; /* same free share as an earlier GPU: same result */
            for (int h = 0; h < g && !seen; h++)
                seen = n->gpu_free[h] == n->gpu_free[g] && loom_sched_gpu_fits(n, h, r);
            if (seen)
                continue;
            after[g] -= r->gpu_milli;
            double d = loom_frag_model_eval(&p->model, n->cpu_free - r->cpu_milli, n->gpu_type,
                                            n->ngpus, after) -
                       before;
            after[g] += r->gpu_milli;
            if (p->exact) {
                if (bestg < 0 || d < best) {
                    best = d;
                    bestg = g;
                }
            } else {
                int64_t s = fgd_int(d);
                if (bestg < 0 || s > best_int) {
                    best_int = s;
                    best = d;
                    bestg = g;
                }
            }
        }
    } else {
        uint8_t gs[LOOM_SCHED_MAX_GPUS];
        int k = pick_gpus(n, r, gs);
        for (int j = 0; j < k; j++)
            after[gs[j]] -= r->gpu_milli;
        best = loom_frag_model_eval(&p->model, n->cpu_free - r->cpu_milli, n->gpu_type, n->ngpus,
                                    after) -
               before;
    }
    if (sid >= 0) {
        p->c_ver[at] = n->version + 1;
        p->c_delta[at] = best;
        p->c_gpu[at] = (int8_t)bestg;
    }
    *gpu = bestg;
    return best;
}

/* -------------------------------------------------------------- the choice */

/* The best candidate so far and how many tie with it (reservoir sampling
 * keeps each of them with equal probability). */
typedef struct best {
    double score;
    int node, ties, gpu;
} best_t;

static double primary_score(loom_sched_placer_t *p, const loom_sched_cluster_t *c, size_t i,
                            int sid, const loom_sched_req_t *r, int *gpu)
{
    const loom_sched_node_t *n = &c->nodes[i];
    *gpu = -1;
    switch (p->kind) {
    case P_FIRSTFIT: return -(double)i;
    case P_RANDOM: return 0;
    case P_BESTFIT:
        if (p->exact)
            return -(0.5 * (double)(n->cpu_free - r->cpu_milli) / MAX_SPEC_CPU +
                     0.5 * (double)(gpu_left(n) - loom_sched_req_gpu_total(r)) / MAX_SPEC_GPU);
        return (double)int_bestfit(n, r); /* normalised afterwards */
    case P_DOTPROD: {
        double s = 1.0 - dot(n, r) / 2.0;
        return p->exact ? s : (double)(int64_t)(100.0 * s);
    }
    case P_PACKING: return (double)packing_score(n, r);
    case P_CLUSTERING: return clustering_score(n, r, p->exact);
    case P_FGD: {
        double d = fgd_delta(p, c, i, sid, r, gpu);
        return p->exact ? -d : (double)fgd_int(d);
    }
    case P_FGDCPU: {
        /* FGD's delta plus the change in GPUs stranded for lack of CPU:
         * free GPUs beyond what the node's free CPU can feed at the
         * workload's CPU per GPU. */
        double d = fgd_delta(p, c, i, sid, r, gpu);
        double gb = (double)gpu_left(n), ga = gb - (double)loom_sched_req_gpu_total(r);
        double cb = (double)n->cpu_free, ca = cb - (double)r->cpu_milli;
        double sb = gb - cb / p->cpu_per_gpu, sa = ga - ca / p->cpu_per_gpu;
        sb = sb > 0 ? sb : 0;
        sa = sa > 0 ? sa : 0;
        d += sa - sb;
        return p->exact ? -d : (double)fgd_int(d);
    }
    }
    return 0;
}

int loom_sched_place(loom_sched_placer_t *p, const loom_sched_cluster_t *c,
                     const loom_sched_req_t *r, loom_sched_alloc_t *out)
{
    memset(out, 0, sizeof *out);
    out->node = -1;
    if (loom_sched_req_validate(r, NULL))
        return LOOM_EINVAL;
    bool fgd = p->kind == P_FGD || p->kind == P_FGDCPU;
    if (p->bound != c || p->nnodes != c->nnodes) {
        if (caches_bind(p, c, p->scap))
            return LOOM_ENOMEM;
    }
    int sid = fgd ? shape_id(p, r) : -1;
    if (sid == -2)
        return LOOM_ENOMEM;
    size_t nc = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < c->nnodes; i++) {
        if (!loom_sched_fits(&c->nodes[i], r))
            continue;
        int g;
        double s = primary_score(p, c, i, sid, r, &g);
        p->cand[nc] = (int)i;
        p->pscore[nc] = s;
        p->cgpu[nc] = (int8_t)g;
        if (p->kind == P_BESTFIT && !p->exact) {
            lo = (int64_t)s < lo ? (int64_t)s : lo;
            hi = (int64_t)s > hi ? (int64_t)s : hi;
        }
        nc++;
    }
    if (nc == 0)
        return LOOM_ENOTFOUND;
    best_t b = {0, -1, 0, -1};
    if (p->kind == P_RANDOM) { /* uniform over the feasible nodes */
        size_t k = (size_t)loom_rng_below(&p->rng, nc);
        b.node = p->cand[k];
    }
    const double eps = 1e-9;
    for (size_t k = 0; k < nc && p->kind != P_RANDOM; k++) {
        double s = p->pscore[k];
        if (p->kind == P_BESTFIT && !p->exact) /* min-max normalised to 0..100 */
            s = hi == lo ? 0 : (double)(((int64_t)s - lo) * 100 / (hi - lo));
        bool tie = b.node >= 0 && s >= b.score - eps && s <= b.score + eps;
        if (b.node < 0 || s > b.score + eps ||
            (tie && p->ties != LOOM_SCHED_TIES_RANDOM && p->rank[p->cand[k]] < p->rank[b.node])) {
            b.score = s;
            b.node = p->cand[k];
            b.gpu = p->cgpu[k];
            b.ties = 1;
        } else if (tie && p->ties == LOOM_SCHED_TIES_RANDOM) {
            b.ties++;
            if (loom_rng_below(&p->rng, (uint64_t)b.ties) == 0) {
                b.node = p->cand[k];
                b.gpu = p->cgpu[k];
            }
        }
    }
    const loom_sched_node_t *n = &c->nodes[b.node];
    out->node = b.node;
    out->req = *r;
    if (fgd && r->num_gpus == 1 && r->gpu_milli < LOOM_SCHED_MILLI && b.gpu >= 0) {
        out->gpus[0] = (uint8_t)b.gpu;
        out->ngpus = 1;
    } else if (p->kind == P_RANDOM && r->num_gpus == 1 && r->gpu_milli < LOOM_SCHED_MILLI) {
        int seen = 0; /* a random GPU that fits, as the published simulator */
        for (int g = 0; g < n->ngpus; g++)
            if (loom_sched_gpu_fits(n, g, r) && loom_rng_below(&p->rng, (uint64_t)++seen) == 0)
                out->gpus[0] = (uint8_t)g;
        out->ngpus = seen > 0;
    } else {
        out->ngpus = pick_gpus(n, r, out->gpus);
    }
    if (out->ngpus != r->num_gpus) {
        out->node = -1;
        return LOOM_EINTERNAL;
    }
    return LOOM_OK;
}
