/* sched/cluster.c — the cluster model: nodes, GPUs with fractional free
 * shares, and the allocate/free pair that never over-commits.
 *
 * Every resource is an integer (milli-CPU, MiB, milli-GPU) so that
 * conservation is exact: what allocations hold plus what is free is always
 * the capacity, which loom_sched_cluster_check verifies. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/sched.h"

void loom_sched_cluster_init(loom_sched_cluster_t *c)
{
    memset(c, 0, sizeof *c);
}

void loom_sched_cluster_free(loom_sched_cluster_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nnodes; i++)
        free(c->nodes[i].labels);
    free(c->nodes);
    for (int t = 0; t < c->ntypes; t++)
        free(c->types[t]);
    memset(c, 0, sizeof *c);
}

int loom_sched_cluster_type(loom_sched_cluster_t *c, const char *name, loom_err_t *err)
{
    for (int t = 0; t < c->ntypes; t++)
        if (strcmp(c->types[t], name) == 0)
            return t;
    if (c->ntypes >= LOOM_SCHED_MAX_TYPES) {
        loom_err_set(err, LOOM_ELIMIT, "GPU type '%s': more than %d GPU types in one cluster", name,
                     LOOM_SCHED_MAX_TYPES);
        return -1;
    }
    char *dup = strdup(name);
    if (!dup) {
        loom_err_set(err, LOOM_ENOMEM, "out of memory");
        return -1;
    }
    c->types[c->ntypes] = dup;
    return c->ntypes++;
}

uint64_t loom_sched_cluster_type_mask(const loom_sched_cluster_t *c, const char *spec)
{
    uint64_t mask = 0;
    if (!spec)
        return 0;
    const char *p = spec;
    while (*p) {
        const char *end = strchr(p, '|');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > 0) {
            bool found = false;
            for (int t = 0; t < c->ntypes; t++) {
                if (strlen(c->types[t]) == len && memcmp(c->types[t], p, len) == 0) {
                    mask |= UINT64_C(1) << t;
                    found = true;
                }
            }
            if (!found)
                mask |= LOOM_SCHED_TYPE_UNKNOWN;
        }
        if (!end)
            break;
        p = end + 1;
    }
    return mask;
}

int loom_sched_cluster_add_node(loom_sched_cluster_t *c, const char *name, int64_t cpu_milli,
                                int64_t mem_mib, int ngpus, const char *gpu_type,
                                int64_t gpu_mem_mib, const char *labels, loom_err_t *err)
{
    if (!name || !*name || strlen(name) >= LOOM_SCHED_NAME_MAX)
        return loom_err_set(err, LOOM_EINVAL, "node name: expected 1 to %d bytes",
                            LOOM_SCHED_NAME_MAX - 1);
    if (cpu_milli < 0 || mem_mib < 0 || gpu_mem_mib < 0)
        return loom_err_set(err, LOOM_EINVAL, "node %s: negative capacity", name);
    if (ngpus < 0 || ngpus > LOOM_SCHED_MAX_GPUS)
        return loom_err_set(err, LOOM_EINVAL, "node %s: %d GPUs; expected 0 to %d", name, ngpus,
                            LOOM_SCHED_MAX_GPUS);
    int type = -1;
    if (ngpus > 0) {
        type = loom_sched_cluster_type(c, gpu_type && *gpu_type ? gpu_type : "gpu", err);
        if (type < 0)
            return err ? err->code : LOOM_ELIMIT;
    }
    if (loom_vec_reserve((void **)&c->nodes, &c->cap, c->nnodes + 1, sizeof *c->nodes, 16))
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    loom_sched_node_t *n = &c->nodes[c->nnodes];
    memset(n, 0, sizeof *n);
    snprintf(n->name, sizeof n->name, "%s", name);
    if (labels && *labels) {
        n->labels = strdup(labels);
        if (!n->labels)
            return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    n->cpu_milli = n->cpu_free = cpu_milli;
    n->mem_mib = n->mem_free = mem_mib;
    n->gpu_type = type;
    n->ngpus = ngpus;
    n->gpu_mem_mib = gpu_mem_mib;
    for (int g = 0; g < ngpus; g++) {
        n->gpu_free[g] = LOOM_SCHED_MILLI;
        n->gpu_mem_free[g] = gpu_mem_mib;
    }
    c->nnodes++;
    c->gpu_milli_total += (int64_t)ngpus * LOOM_SCHED_MILLI;
    c->cpu_milli_total += cpu_milli;
    return LOOM_OK;
}

void loom_sched_cluster_reset(loom_sched_cluster_t *c)
{
    for (size_t i = 0; i < c->nnodes; i++) {
        loom_sched_node_t *n = &c->nodes[i];
        n->cpu_free = n->cpu_milli;
        n->mem_free = n->mem_mib;
        for (int g = 0; g < n->ngpus; g++) {
            n->gpu_free[g] = LOOM_SCHED_MILLI;
            n->gpu_mem_free[g] = n->gpu_mem_mib;
        }
        n->ntasks = 0;
        memset(n->class_count, 0, sizeof n->class_count);
        n->version++;
    }
    c->gpu_milli_used = 0;
    c->cpu_milli_used = 0;
}

int loom_sched_cluster_copy(loom_sched_cluster_t *dst, const loom_sched_cluster_t *src,
                            loom_err_t *err)
{
    loom_sched_cluster_init(dst);
    *dst = *src;
    dst->nodes = NULL;
    dst->nnodes = dst->cap = 0;
    memset(dst->types, 0, sizeof dst->types);
    dst->ntypes = 0;
    for (int t = 0; t < src->ntypes; t++) {
        if (!(dst->types[t] = strdup(src->types[t])))
            goto oom;
        dst->ntypes++;
    }
    if (src->nnodes) {
        dst->nodes = malloc(src->nnodes * sizeof *dst->nodes);
        if (!dst->nodes)
            goto oom;
        for (size_t i = 0; i < src->nnodes; i++) {
            dst->nodes[i] = src->nodes[i];
            dst->nodes[i].labels = NULL;
            dst->nnodes = i + 1;
            if (src->nodes[i].labels && !(dst->nodes[i].labels = strdup(src->nodes[i].labels)))
                goto oom;
        }
        dst->cap = src->nnodes;
    }
    return LOOM_OK;
oom:
    loom_sched_cluster_free(dst);
    return loom_err_set(err, LOOM_ENOMEM, "out of memory");
}

int loom_sched_req_validate(const loom_sched_req_t *r, loom_err_t *err)
{
    if (r->cpu_milli < 0 || r->mem_mib < 0 || r->gpu_mem_mib < 0)
        return loom_err_set(err, LOOM_EINVAL, "negative resource request");
    if (r->num_gpus < 0 || r->num_gpus > LOOM_SCHED_MAX_GPUS)
        return loom_err_set(err, LOOM_EINVAL, "num_gpus %d: expected 0 to %d", r->num_gpus,
                            LOOM_SCHED_MAX_GPUS);
    if (r->gpu_milli < 0 || r->gpu_milli > LOOM_SCHED_MILLI)
        return loom_err_set(err, LOOM_EINVAL, "gpu_milli %d: expected 0 to %d", (int)r->gpu_milli,
                            LOOM_SCHED_MILLI);
    if (r->num_gpus == 0 && (r->gpu_milli > 0 || r->gpu_mem_mib > 0))
        return loom_err_set(err, LOOM_EINVAL, "a GPU share or GPU memory needs num_gpus >= 1");
    if (r->num_gpus > 1 && r->gpu_milli != LOOM_SCHED_MILLI)
        return loom_err_set(err, LOOM_EINVAL,
                            "a share of a GPU (gpu_milli %d) is for one GPU, not %d",
                            (int)r->gpu_milli, r->num_gpus);
    if (r->num_gpus >= 1 && r->gpu_milli == 0 && r->gpu_mem_mib == 0)
        return loom_err_set(err, LOOM_EINVAL, "num_gpus %d with neither a share nor GPU memory",
                            r->num_gpus);
    return LOOM_OK;
}

int loom_sched_req_class(const loom_sched_req_t *r)
{
    if (r->num_gpus == 0)
        return LOOM_SCHED_CLASS_NONE;
    if (r->gpu_milli < LOOM_SCHED_MILLI)
        return LOOM_SCHED_CLASS_SHARE;
    switch (r->num_gpus) {
    case 1: return LOOM_SCHED_CLASS_1;
    case 2: return LOOM_SCHED_CLASS_2;
    case 4: return LOOM_SCHED_CLASS_4;
    case 8: return LOOM_SCHED_CLASS_8;
    default: return LOOM_SCHED_CLASS_OTHER;
    }
}

bool loom_sched_gpu_fits(const loom_sched_node_t *n, int g, const loom_sched_req_t *r)
{
    if (n->gpu_free[g] < r->gpu_milli)
        return false;
    if (r->gpu_mem_mib > 0 && n->gpu_mem_mib > 0 && n->gpu_mem_free[g] < r->gpu_mem_mib)
        return false;
    return true;
}

static bool type_ok(const loom_sched_node_t *n, const loom_sched_req_t *r)
{
    if (r->num_gpus == 0 || r->gpu_types == 0)
        return true;
    return n->gpu_type >= 0 && (r->gpu_types >> n->gpu_type) & 1;
}

bool loom_sched_fits(const loom_sched_node_t *n, const loom_sched_req_t *r)
{
    if (n->cpu_free < r->cpu_milli || n->mem_free < r->mem_mib)
        return false;
    if (r->num_gpus == 0)
        return true;
    if (n->ngpus < r->num_gpus || !type_ok(n, r))
        return false;
    int ok = 0;
    for (int g = 0; g < n->ngpus && ok < r->num_gpus; g++)
        ok += loom_sched_gpu_fits(n, g, r);
    return ok >= r->num_gpus;
}

/* ---------------------------------------------------------- feasibility */

/* n as it is with nothing allocated. */
static void emptied(const loom_sched_node_t *n, loom_sched_node_t *e)
{
    *e = *n;
    e->cpu_free = n->cpu_milli;
    e->mem_free = n->mem_mib;
    for (int g = 0; g < n->ngpus; g++) {
        e->gpu_free[g] = LOOM_SCHED_MILLI;
        e->gpu_mem_free[g] = n->gpu_mem_mib;
    }
}

/* Node n's capacity of one resource; INT64_MAX where it does not limit
 * (GPU memory not tracked). */
static int64_t capacity(const loom_sched_node_t *n, loom_sched_lack_t k)
{
    switch (k) {
    case LOOM_SCHED_LACK_GPUS: return n->ngpus;
    case LOOM_SCHED_LACK_CPUS: return n->cpu_milli;
    case LOOM_SCHED_LACK_MEMORY: return n->mem_mib;
    default: return n->gpu_mem_mib > 0 ? n->gpu_mem_mib : INT64_MAX;
    }
}

const char *loom_sched_lack_name(loom_sched_lack_t lack)
{
    switch (lack) {
    case LOOM_SCHED_LACK_GPU_TYPE: return "gpu_type";
    case LOOM_SCHED_LACK_GPUS: return "gpus";
    case LOOM_SCHED_LACK_CPUS: return "cpus";
    case LOOM_SCHED_LACK_MEMORY: return "memory";
    case LOOM_SCHED_LACK_GPU_MEMORY: return "gpu_memory";
    default: return "resources";
    }
}

static int lacks(const loom_sched_cluster_t *c, loom_sched_infeasible_t *w, loom_err_t *err)
{
    const char *what = loom_sched_lack_name(w->lack);
    switch (w->lack) {
    case LOOM_SCHED_LACK_NODES: return loom_err_set(err, LOOM_ELIMIT, "the cluster has no node");
    case LOOM_SCHED_LACK_GPU_TYPE:
        return loom_err_set(err, LOOM_ELIMIT, "gpu_type: no node has GPUs of the type asked");
    case LOOM_SCHED_LACK_TOGETHER:
        return loom_err_set(err, LOOM_ELIMIT,
                            "no node has all the CPUs, memory and GPUs asked together, though "
                            "each fits some node");
    default: break;
    }
    const char *node = c->nodes[w->node].name;
    snprintf(w->node_name, sizeof w->node_name, "%s", node);
    if (w->lack == LOOM_SCHED_LACK_CPUS && (w->requested % 1000 || w->largest % 1000))
        return loom_err_set(err, LOOM_ELIMIT,
                            "cpus: %lld milli-CPU requested, but the largest node (%s) has %lld",
                            (long long)w->requested, node, (long long)w->largest);
    if (w->lack == LOOM_SCHED_LACK_CPUS)
        return loom_err_set(err, LOOM_ELIMIT,
                            "cpus: %lld CPUs requested, but the largest node (%s) has %lld",
                            (long long)(w->requested / 1000), node, (long long)(w->largest / 1000));
    const char *unit = w->lack == LOOM_SCHED_LACK_GPUS     ? "GPUs"
                       : w->lack == LOOM_SCHED_LACK_MEMORY ? "MiB"
                                                           : "MiB per GPU";
    return loom_err_set(err, LOOM_ELIMIT,
                        "%s: %lld %s requested, but the largest node (%s) has %lld", what,
                        (long long)w->requested, unit, node, (long long)w->largest);
}

int loom_sched_feasible(const loom_sched_cluster_t *c, const loom_sched_req_t *r,
                        loom_sched_infeasible_t *why, loom_err_t *err)
{
    loom_sched_infeasible_t w = {.lack = LOOM_SCHED_LACK_NONE, .node = -1, .node_name = ""};
    if (why)
        *why = w;
    /* more GPUs than a node can have: said as such below */
    int rc = r->num_gpus > LOOM_SCHED_MAX_GPUS && r->gpu_milli == LOOM_SCHED_MILLI
                 ? LOOM_OK
                 : loom_sched_req_validate(r, err);
    if (rc != LOOM_OK)
        return rc;
    bool typed = false; /* some node has GPUs of an allowed type */
    for (size_t i = 0; i < c->nnodes; i++) {
        loom_sched_node_t e;
        emptied(&c->nodes[i], &e);
        if (loom_sched_fits(&e, r))
            return LOOM_OK;
        typed |= type_ok(&c->nodes[i], r) && c->nodes[i].ngpus > 0;
    }
    if (!c->nnodes) {
        w.lack = LOOM_SCHED_LACK_NODES;
    } else if (r->num_gpus > 0 && !typed && r->gpu_types) {
        w.lack = LOOM_SCHED_LACK_GPU_TYPE;
    } else if (r->num_gpus > 0 && !typed) {
        w = (loom_sched_infeasible_t){LOOM_SCHED_LACK_GPUS, r->num_gpus, 0, 0, ""};
    } else {
        /* the first resource that even the largest node of an allowed type lacks */
        const struct {
            loom_sched_lack_t k;
            int64_t asked;
        } need[] = {{LOOM_SCHED_LACK_GPUS, r->num_gpus},
                    {LOOM_SCHED_LACK_CPUS, r->cpu_milli},
                    {LOOM_SCHED_LACK_MEMORY, r->mem_mib},
                    {LOOM_SCHED_LACK_GPU_MEMORY, r->num_gpus ? r->gpu_mem_mib : 0}};
        w.lack = LOOM_SCHED_LACK_TOGETHER;
        for (size_t k = 0; k < sizeof need / sizeof need[0] && w.lack == LOOM_SCHED_LACK_TOGETHER;
             k++) {
            int big = -1;
            for (size_t i = 0; i < c->nnodes; i++)
                if ((!r->num_gpus || (type_ok(&c->nodes[i], r) && c->nodes[i].ngpus > 0)) &&
                    (big < 0 ||
                     capacity(&c->nodes[i], need[k].k) > capacity(&c->nodes[big], need[k].k)))
                    big = (int)i;
            if (big >= 0 && need[k].asked > capacity(&c->nodes[big], need[k].k))
                w = (loom_sched_infeasible_t){need[k].k, need[k].asked,
                                              capacity(&c->nodes[big], need[k].k), big, ""};
        }
    }
    rc = lacks(c, &w, err);
    if (why)
        *why = w;
    return rc;
}

int64_t loom_sched_node_gpu_free(const loom_sched_node_t *n)
{
    int64_t s = 0;
    for (int g = 0; g < n->ngpus; g++)
        s += n->gpu_free[g];
    return s;
}

int loom_sched_node_gpus_idle(const loom_sched_node_t *n)
{
    int k = 0;
    for (int g = 0; g < n->ngpus; g++)
        k += n->gpu_free[g] == LOOM_SCHED_MILLI;
    return k;
}

int loom_sched_alloc(loom_sched_cluster_t *c, int node, const loom_sched_req_t *r,
                     const uint8_t *gpus, int ngpus, loom_sched_alloc_t *out, loom_err_t *err)
{
    int rc = loom_sched_req_validate(r, err);
    if (rc)
        return rc;
    if (node < 0 || (size_t)node >= c->nnodes)
        return loom_err_set(err, LOOM_EINVAL, "node index %d out of range", node);
    loom_sched_node_t *n = &c->nodes[node];
    if (ngpus != r->num_gpus)
        return loom_err_set(err, LOOM_EINVAL, "%d GPUs given for a job of %d", ngpus, r->num_gpus);
    if (n->cpu_free < r->cpu_milli || n->mem_free < r->mem_mib)
        return loom_err_set(err, LOOM_ESTATE, "node %s: not enough CPU or memory", n->name);
    if (!type_ok(n, r))
        return loom_err_set(err, LOOM_ESTATE, "node %s: GPU type not allowed", n->name);
    for (int i = 0; i < ngpus; i++) {
        if (gpus[i] >= n->ngpus)
            return loom_err_set(err, LOOM_EINVAL, "node %s: no GPU %d", n->name, gpus[i]);
        for (int j = 0; j < i; j++)
            if (gpus[j] == gpus[i])
                return loom_err_set(err, LOOM_EINVAL, "node %s: GPU %d given twice", n->name,
                                    gpus[i]);
        if (!loom_sched_gpu_fits(n, gpus[i], r))
            return loom_err_set(err, LOOM_ESTATE, "node %s: GPU %d has %d milli-GPU free, %d asked",
                                n->name, gpus[i], (int)n->gpu_free[gpus[i]], (int)r->gpu_milli);
    }
    n->cpu_free -= r->cpu_milli;
    n->mem_free -= r->mem_mib;
    for (int i = 0; i < ngpus; i++) {
        n->gpu_free[gpus[i]] -= r->gpu_milli;
        if (n->gpu_mem_mib > 0)
            n->gpu_mem_free[gpus[i]] -= r->gpu_mem_mib;
        assert(n->gpu_free[gpus[i]] >= 0 && n->gpu_mem_free[gpus[i]] >= 0);
    }
    assert(n->cpu_free >= 0 && n->mem_free >= 0);
    n->ntasks++;
    int cls = loom_sched_req_class(r);
    if (cls >= 0)
        n->class_count[cls]++;
    n->version++;
    c->gpu_milli_used += loom_sched_req_gpu_total(r);
    c->cpu_milli_used += r->cpu_milli;
    if (out) { /* out may alias gpus or r (out->gpus, out->req) */
        loom_sched_alloc_t a;
        memset(&a, 0, sizeof a);
        a.node = node;
        a.ngpus = ngpus;
        if (ngpus > 0)
            memcpy(a.gpus, gpus, (size_t)ngpus);
        a.req = *r;
        *out = a;
    }
    return LOOM_OK;
}

int loom_sched_free(loom_sched_cluster_t *c, const loom_sched_alloc_t *a, loom_err_t *err)
{
    if (a->node < 0 || (size_t)a->node >= c->nnodes)
        return loom_err_set(err, LOOM_EINVAL, "node index %d out of range", a->node);
    loom_sched_node_t *n = &c->nodes[a->node];
    const loom_sched_req_t *r = &a->req;
    int cls = loom_sched_req_class(r);
    if (n->ntasks == 0 || (cls >= 0 && n->class_count[cls] == 0) ||
        n->cpu_free + r->cpu_milli > n->cpu_milli || n->mem_free + r->mem_mib > n->mem_mib)
        return loom_err_set(err, LOOM_ESTATE, "node %s: freeing what it does not hold", n->name);
    for (int i = 0; i < a->ngpus; i++) {
        int g = a->gpus[i];
        if (g >= n->ngpus || n->gpu_free[g] + r->gpu_milli > LOOM_SCHED_MILLI ||
            (n->gpu_mem_mib > 0 && n->gpu_mem_free[g] + r->gpu_mem_mib > n->gpu_mem_mib))
            return loom_err_set(err, LOOM_ESTATE, "node %s: GPU %d does not hold this share",
                                n->name, g);
    }
    n->cpu_free += r->cpu_milli;
    n->mem_free += r->mem_mib;
    for (int i = 0; i < a->ngpus; i++) {
        n->gpu_free[a->gpus[i]] += r->gpu_milli;
        if (n->gpu_mem_mib > 0)
            n->gpu_mem_free[a->gpus[i]] += r->gpu_mem_mib;
    }
    n->ntasks--;
    if (cls >= 0)
        n->class_count[cls]--;
    n->version++;
    c->gpu_milli_used -= loom_sched_req_gpu_total(r);
    c->cpu_milli_used -= r->cpu_milli;
    c->frees++;
    return LOOM_OK;
}

int loom_sched_cluster_check(const loom_sched_cluster_t *c, const loom_sched_alloc_t *live,
                             size_t nlive, loom_err_t *err)
{
    int64_t gpu_total = 0, gpu_used = 0, cpu_total = 0, cpu_used = 0;
    for (size_t i = 0; i < c->nnodes; i++) {
        const loom_sched_node_t *n = &c->nodes[i];
        if (n->cpu_free < 0 || n->cpu_free > n->cpu_milli || n->mem_free < 0 ||
            n->mem_free > n->mem_mib)
            return loom_err_set(err, LOOM_EINTERNAL, "node %s: CPU or memory free out of range",
                                n->name);
        for (int g = 0; g < n->ngpus; g++) {
            if (n->gpu_free[g] < 0 || n->gpu_free[g] > LOOM_SCHED_MILLI)
                return loom_err_set(err, LOOM_EINTERNAL, "node %s GPU %d: free share %d", n->name,
                                    g, (int)n->gpu_free[g]);
            if (n->gpu_mem_free[g] < 0 || n->gpu_mem_free[g] > n->gpu_mem_mib)
                return loom_err_set(err, LOOM_EINTERNAL, "node %s GPU %d: free memory %lld",
                                    n->name, g, (long long)n->gpu_mem_free[g]);
            gpu_used += LOOM_SCHED_MILLI - n->gpu_free[g];
        }
        uint32_t cls_sum = 0;
        for (int k = 0; k < LOOM_SCHED_NCLASSES; k++)
            cls_sum += n->class_count[k];
        if (cls_sum > n->ntasks)
            return loom_err_set(err, LOOM_EINTERNAL, "node %s: class counts exceed tasks", n->name);
        gpu_total += (int64_t)n->ngpus * LOOM_SCHED_MILLI;
        cpu_total += n->cpu_milli;
        cpu_used += n->cpu_milli - n->cpu_free;
    }
    if (gpu_total != c->gpu_milli_total || gpu_used != c->gpu_milli_used ||
        cpu_total != c->cpu_milli_total || cpu_used != c->cpu_milli_used)
        return loom_err_set(err, LOOM_EINTERNAL,
                            "cluster totals disagree with the nodes: GPU used %lld vs %lld, CPU "
                            "used %lld vs %lld",
                            (long long)gpu_used, (long long)c->gpu_milli_used, (long long)cpu_used,
                            (long long)c->cpu_milli_used);
    if (!live)
        return LOOM_OK;
    /* Conservation: rebuild every node's usage from the live allocations. */
    size_t nn = c->nnodes ? c->nnodes : 1;
    int64_t *use = calloc(nn * (3 + 2 * LOOM_SCHED_MAX_GPUS), sizeof *use);
    if (!use)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    const size_t W = 3 + 2 * LOOM_SCHED_MAX_GPUS;
    int rc = LOOM_OK;
    for (size_t k = 0; k < nlive; k++) {
        const loom_sched_alloc_t *a = &live[k];
        if (a->node < 0 || (size_t)a->node >= c->nnodes) {
            rc = loom_err_set(err, LOOM_EINTERNAL, "allocation %zu: bad node %d", k, a->node);
            goto out;
        }
        int64_t *u = use + (size_t)a->node * W;
        u[0] += a->req.cpu_milli;
        u[1] += a->req.mem_mib;
        u[2] += 1;
        for (int i = 0; i < a->ngpus; i++) {
            u[3 + a->gpus[i]] += a->req.gpu_milli;
            u[3 + LOOM_SCHED_MAX_GPUS + a->gpus[i]] += a->req.gpu_mem_mib;
        }
    }
    for (size_t i = 0; i < c->nnodes; i++) {
        const loom_sched_node_t *n = &c->nodes[i];
        const int64_t *u = use + i * W;
        if (u[0] != n->cpu_milli - n->cpu_free || u[1] != n->mem_mib - n->mem_free ||
            u[2] != (int64_t)n->ntasks) {
            rc = loom_err_set(err, LOOM_EINTERNAL,
                              "node %s: allocations hold %lld milli-CPU in %lld tasks, node "
                              "misses %lld in %u",
                              n->name, (long long)u[0], (long long)u[2],
                              (long long)(n->cpu_milli - n->cpu_free), n->ntasks);
            goto out;
        }
        for (int g = 0; g < n->ngpus; g++) {
            if (u[3 + g] != LOOM_SCHED_MILLI - n->gpu_free[g] ||
                (n->gpu_mem_mib > 0 &&
                 u[3 + LOOM_SCHED_MAX_GPUS + g] != n->gpu_mem_mib - n->gpu_mem_free[g])) {
                rc = loom_err_set(err, LOOM_EINTERNAL,
                                  "node %s GPU %d: allocations hold %lld milli-GPU, GPU misses %d",
                                  n->name, g, (long long)u[3 + g],
                                  (int)(LOOM_SCHED_MILLI - n->gpu_free[g]));
                goto out;
            }
        }
    }
out:
    free(use);
    return rc;
}
