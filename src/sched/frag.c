/* sched/frag.c — FGD's target workload and its measure of fragmentation
 * (Weng et al., "Beware of Fragmentation", USENIX ATC 2023).
 *
 * A node's free GPU share is a fragment for a task shape when that task
 * cannot use it: all of it when the task needs no GPU or cannot run on the
 * node at all (CPU, GPU type or GPU count), else the GPUs whose free share
 * is below the task's per-GPU demand. The node's fragmentation is the
 * popularity-weighted sum over the target workload's shapes.
 *
 * loom_sched_frag_state is the definition written plainly; the grouped model
 * (sched_internal.h) computes the same value faster and is what the placer
 * uses. The unit tests check that the two agree. */
#include <stdlib.h>
#include <string.h>

#include "sched/sched_internal.h"

void loom_sched_workload_free(loom_sched_workload_t *w)
{
    if (!w)
        return;
    free(w->shapes);
    w->shapes = NULL;
    w->nshapes = 0;
}

static int shape_key_cmp(const loom_sched_shape_t *a, const loom_sched_shape_t *b)
{
    if (a->num_gpus != b->num_gpus)
        return a->num_gpus < b->num_gpus ? -1 : 1;
    if (a->gpu_milli != b->gpu_milli)
        return a->gpu_milli < b->gpu_milli ? -1 : 1;
    if (a->gpu_types != b->gpu_types)
        return a->gpu_types < b->gpu_types ? -1 : 1;
    if (a->cpu_milli != b->cpu_milli)
        return a->cpu_milli < b->cpu_milli ? -1 : 1;
    return 0;
}

static int cmp_key(const void *x, const void *y)
{
    return shape_key_cmp(x, y);
}

static int cmp_count_desc(const void *x, const void *y)
{
    const loom_sched_shape_t *a = x, *b = y;
    if (a->weight != b->weight)
        return a->weight > b->weight ? -1 : 1;
    return shape_key_cmp(a, b);
}

int loom_sched_workload_learn(const loom_sched_req_t *reqs, size_t n, double coverage,
                              loom_sched_workload_t *out, loom_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return loom_err_set(err, LOOM_EINVAL, "workload: no jobs to learn from");
    if (!(coverage > 0 && coverage <= 1))
        return loom_err_set(err, LOOM_EINVAL, "workload coverage %g: expected (0, 1]", coverage);
    loom_sched_shape_t *all = malloc(n * sizeof *all);
    if (!all)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        all[i] = (loom_sched_shape_t){reqs[i].cpu_milli, reqs[i].num_gpus, reqs[i].gpu_milli,
                                      reqs[i].num_gpus ? reqs[i].gpu_types : 0, 1.0};
    }
    qsort(all, n, sizeof *all, cmp_key);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k > 0 && shape_key_cmp(&all[k - 1], &all[i]) == 0)
            all[k - 1].weight += 1.0;
        else
            all[k++] = all[i];
    }
    qsort(all, k, sizeof *all, cmp_count_desc);
    double need = coverage * (double)n, cum = 0;
    size_t take = 0;
    while (take < k && cum < need - 1e-9)
        cum += all[take++].weight;
    for (size_t i = 0; i < take; i++)
        all[i].weight /= cum;
    /* keep only the shapes taken (the first take of n); without memory for
     * the smaller copy, the whole array does */
    out->shapes = malloc(take * sizeof *all);
    if (out->shapes) {
        memcpy(out->shapes, all, take * sizeof *all);
        free(all);
    } else {
        out->shapes = all;
    }
    out->nshapes = take;
    return LOOM_OK;
}

int loom_sched_workload_set(loom_sched_workload_t *out, const loom_sched_shape_t *shapes, size_t n,
                            loom_err_t *err)
{
    memset(out, 0, sizeof *out);
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(shapes[i].weight >= 0))
            return loom_err_set(err, LOOM_EINVAL, "workload shape %zu: negative weight", i);
        loom_sched_req_t r = {shapes[i].cpu_milli, 0, shapes[i].num_gpus,
                              shapes[i].gpu_milli, 0, shapes[i].gpu_types};
        if (r.num_gpus >= 1 && r.gpu_milli == 0)
            r.gpu_mem_mib = 1; /* a memory-only shape is valid */
        int rc = loom_sched_req_validate(&r, err);
        if (rc) {
            if (err)
                loom_err_prefix(err, "workload shape %zu", i);
            return rc;
        }
        sum += shapes[i].weight;
    }
    if (n == 0 || !(sum > 0))
        return loom_err_set(err, LOOM_EINVAL, "workload: expected shapes with positive weight");
    out->shapes = malloc(n * sizeof *out->shapes);
    if (!out->shapes)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        out->shapes[i] = shapes[i];
        out->shapes[i].weight /= sum;
    }
    out->nshapes = n;
    return LOOM_OK;
}

/* F_n(m) for one shape, in milli-GPU. */
static double shape_frag(int64_t cpu_free, int gpu_type, int ngpus, const int32_t *gpu_free,
                         int64_t total, const loom_sched_shape_t *m)
{
    if (m->num_gpus == 0)
        return (double)total;
    if (gpu_type < 0 || (m->gpu_types && !((m->gpu_types >> gpu_type) & 1)))
        return (double)total;
    if (cpu_free < m->cpu_milli)
        return (double)total;
    int fit = 0;
    int64_t partial = 0;
    for (int g = 0; g < ngpus; g++) {
        if (gpu_free[g] >= m->gpu_milli)
            fit++;
        else
            partial += gpu_free[g];
    }
    return fit >= m->num_gpus ? (double)partial : (double)total;
}

double loom_sched_frag_state(int64_t cpu_free, int gpu_type, int ngpus, const int32_t *gpu_free,
                             const loom_sched_workload_t *w)
{
    int64_t total = 0;
    for (int g = 0; g < ngpus; g++)
        total += gpu_free[g];
    if (total == 0)
        return 0;
    double f = 0;
    for (size_t i = 0; i < w->nshapes; i++)
        f += w->shapes[i].weight *
             shape_frag(cpu_free, gpu_type, ngpus, gpu_free, total, &w->shapes[i]);
    return f;
}

double loom_sched_node_frag(const loom_sched_node_t *n, const loom_sched_workload_t *w)
{
    return loom_sched_frag_state(n->cpu_free, n->gpu_type, n->ngpus, n->gpu_free, w);
}

/* ---------------------------------------------------------- grouped model */

void loom_frag_model_free(loom_frag_model_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->ngroups; i++) {
        free(m->groups[i].cpu);
        free(m->groups[i].cum);
    }
    free(m->groups);
    memset(m, 0, sizeof *m);
}

int loom_frag_model_build(loom_frag_model_t *m, const loom_sched_workload_t *w, loom_err_t *err)
{
    memset(m, 0, sizeof *m);
    loom_sched_shape_t *s = malloc((w->nshapes ? w->nshapes : 1) * sizeof *s);
    if (!s)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    if (w->nshapes)
        memcpy(s, w->shapes, w->nshapes * sizeof *s);
    qsort(s, w->nshapes, sizeof *s, cmp_key); /* groups together, CPU ascending */
    m->groups = calloc(w->nshapes ? w->nshapes : 1, sizeof *m->groups);
    if (!m->groups) {
        free(s);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    size_t i = 0;
    while (i < w->nshapes) {
        if (s[i].num_gpus == 0) {
            m->w_nogpu += s[i].weight;
            i++;
            continue;
        }
        size_t j = i;
        while (j < w->nshapes && s[j].num_gpus == s[i].num_gpus &&
               s[j].gpu_milli == s[i].gpu_milli && s[j].gpu_types == s[i].gpu_types)
            j++;
        loom_frag_group_t *g = &m->groups[m->ngroups++];
        g->num_gpus = s[i].num_gpus;
        g->gpu_milli = s[i].gpu_milli;
        g->types = s[i].gpu_types;
        g->n = j - i;
        g->cpu = malloc(g->n * sizeof *g->cpu);
        g->cum = malloc((g->n + 1) * sizeof *g->cum);
        if (!g->cpu || !g->cum) {
            free(s);
            loom_frag_model_free(m);
            return loom_err_set(err, LOOM_ENOMEM, "out of memory");
        }
        g->cum[0] = 0;
        for (size_t k = 0; k < g->n; k++) {
            g->cpu[k] = s[i + k].cpu_milli;
            g->cum[k + 1] = g->cum[k] + s[i + k].weight;
        }
        i = j;
    }
    free(s);
    return LOOM_OK;
}

double loom_frag_model_eval(const loom_frag_model_t *m, int64_t cpu_free, int gpu_type, int ngpus,
                            const int32_t *gpu_free)
{
    int64_t total = 0;
    for (int g = 0; g < ngpus; g++)
        total += gpu_free[g];
    if (total == 0)
        return 0;
    double f = m->w_nogpu * (double)total;
    for (size_t i = 0; i < m->ngroups; i++) {
        const loom_frag_group_t *g = &m->groups[i];
        double wsum = g->cum[g->n];
        if (gpu_type < 0 || (g->types && !((g->types >> gpu_type) & 1))) {
            f += wsum * (double)total;
            continue;
        }
        int fit = 0;
        int64_t partial = 0;
        for (int k = 0; k < ngpus; k++) {
            if (gpu_free[k] >= g->gpu_milli)
                fit++;
            else
                partial += gpu_free[k];
        }
        if (fit < g->num_gpus) {
            f += wsum * (double)total;
            continue;
        }
        /* shapes 0..lo-1 have cpu <= cpu_free */
        size_t lo = 0, hi = g->n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (g->cpu[mid] <= cpu_free)
                lo = mid + 1;
            else
                hi = mid;
        }
        double pf = g->cum[lo];
        f += pf * (double)partial + (wsum - pf) * (double)total;
    }
    return f;
}
