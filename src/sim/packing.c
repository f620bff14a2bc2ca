/* sim/packing.c — the FGD paper's packing experiment.
 *
 * Tasks are drawn uniformly with replacement from the trace (seeded) until
 * their total GPU request reaches `inflate` times the cluster's GPU
 * capacity. Nothing departs. Each task is placed by the policy or counted
 * as failed. After each arrival we record the arrived GPU request and the
 * allocated GPUs (both as % of capacity) and the fragmented GPUs under the
 * target workload (kept per node and updated only for the changed node). */
#include <stdlib.h>
#include <string.h>

#include "loom/sim.h"

void loom_sim_packing_result_free(loom_sim_packing_result_t *r)
{
    if (!r)
        return;
    free(r->points);
    r->points = NULL;
    r->npoints = 0;
}

/* Allocations kept for the debug check. */
typedef struct live {
    loom_sched_alloc_t *a;
    size_t n, cap;
} live_t;

static int live_push(live_t *l, const loom_sched_alloc_t *a)
{
    if (loom_vec_reserve((void **)&l->a, &l->cap, l->n + 1, sizeof *l->a, 256))
        return LOOM_ENOMEM;
    l->a[l->n++] = *a;
    return LOOM_OK;
}

int loom_sim_packing(const loom_sched_cluster_t *c0, const loom_sim_trace_t *t,
                     const loom_sim_opts_t *o, loom_sim_packing_result_t *res, loom_err_t *err)
{
    memset(res, 0, sizeof *res);
    int64_t t0 = loom_time_mono_ns();
    if (c0->gpu_milli_total <= 0)
        return loom_err_set(err, LOOM_EINVAL, "packing: the cluster has no GPUs");
    int64_t trace_gpu = 0;
    for (size_t i = 0; i < t->n; i++)
        trace_gpu += loom_sched_req_gpu_total(&t->tasks[i].req);
    if (t->n == 0 || trace_gpu == 0)
        return loom_err_set(err, LOOM_EINVAL, "packing: the trace requests no GPU");
    double inflate = o->inflate > 0 ? o->inflate : 1.3;
    if (inflate > 100)
        return loom_err_set(err, LOOM_EINVAL, "packing: inflate %g: expected at most 100", inflate);

    loom_sched_cluster_t c;
    loom_sched_workload_t learned = {0};
    loom_sched_placer_t *pl = NULL;
    double *frag = NULL;
    live_t live = {0};
    loom_sim_point_t *pts = NULL;
    size_t npts = 0, cap_pts = 0;
    int rc = loom_sched_cluster_copy(&c, c0, err);
    if (rc)
        return rc;
    loom_sched_cluster_reset(&c);
    const loom_sched_workload_t *wl = o->workload;
    if (!wl) {
        if ((rc = loom_sim_trace_workload(t, &learned, err)))
            goto out;
        wl = &learned;
    }
    loom_sched_placer_opts_t po = {o->seed, wl, o->exact_scores, o->ties};
    if ((rc = loom_sched_placer_new(o->policy, &c, &po, &pl, err)))
        goto out;
    frag = calloc(c.nnodes ? c.nnodes : 1, sizeof *frag);
    if (!frag) {
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
        goto out;
    }
    double frag_total = 0;
    for (size_t i = 0; i < c.nnodes; i++)
        frag_total += frag[i] = loom_sched_node_frag(&c.nodes[i], wl);

    loom_rng_t rng;
    loom_rng_init(&rng, o->seed, 1);
    const double cap = (double)c.gpu_milli_total;
    const double target = inflate * cap;
    double arrived = 0;
    bool seen100 = false;
    while (arrived < target) {
        const loom_sim_task_t *task = &t->tasks[loom_rng_below(&rng, t->n)];
        arrived += (double)loom_sched_req_gpu_total(&task->req);
        res->arrivals++;
        loom_sched_alloc_t a;
        bool failed = false;
        int prc = loom_sched_place(pl, &c, &task->req, &a);
        if (prc == LOOM_OK) {
            loom_err_t e;
            if ((rc = loom_sched_alloc(&c, a.node, &task->req, a.gpus, a.ngpus, &a, &e))) {
                rc = loom_err_set(err, LOOM_EINTERNAL, "policy %s chose an impossible place: %s",
                                  o->policy, e.msg);
                goto out;
            }
            frag_total -= frag[a.node];
            frag_total += frag[a.node] = loom_sched_node_frag(&c.nodes[a.node], wl);
            if (o->debug_check && live_push(&live, &a)) {
                rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
                goto out;
            }
        } else if (prc == LOOM_ENOTFOUND) {
            failed = true;
            res->failed++;
            res->failed_gpus += (double)loom_sched_req_gpu_total(&task->req) / 1000.0;
        } else {
            rc = loom_err_set(err, prc, "policy %s failed on task %s", o->policy, task->name);
            goto out;
        }
        if (o->debug_check) {
            loom_err_t e;
            if ((rc = loom_sched_cluster_check(&c, live.a, live.n, &e))) {
                rc = loom_err_set(err, rc, "after arrival %zu: %s", res->arrivals, e.msg);
                goto out;
            }
            /* the incremental fragmentation must match a full recount */
            double full = 0;
            for (size_t i = 0; i < c.nnodes; i++)
                full += loom_sched_node_frag(&c.nodes[i], wl);
            if (full - frag_total > 1e-3 * (1 + full) || frag_total - full > 1e-3 * (1 + full)) {
                rc = loom_err_set(err, LOOM_EINTERNAL,
                                  "after arrival %zu: fragmentation %g, recount %g", res->arrivals,
                                  frag_total, full);
                goto out;
            }
        }
        loom_sim_point_t pt = {(float)(100.0 * arrived / cap),
                               (float)(100.0 * (double)c.gpu_milli_used / cap),
                               (float)(frag_total / 1000.0), failed};
        if (!seen100 && arrived >= cap) {
            seen100 = true;
            res->alloc_at_100 = 100.0 * (double)c.gpu_milli_used / cap;
            res->frag_at_100 = frag_total / 1000.0;
            double idle = cap - (double)c.gpu_milli_used;
            res->unalloc_at_100 = idle / 1000.0;
            res->frag_pct_at_100 = idle > 0 ? 100.0 * frag_total / idle : 0;
        }
        if (o->keep_points) {
            if (loom_vec_reserve((void **)&pts, &cap_pts, npts + 1, sizeof *pts, 4096)) {
                rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
                goto out;
            }
            pts[npts++] = pt;
        }
    }
    if (!seen100) { /* inflate < 1: report the end */
        res->alloc_at_100 = 100.0 * (double)c.gpu_milli_used / cap;
        res->frag_at_100 = frag_total / 1000.0;
        res->unalloc_at_100 = (cap - (double)c.gpu_milli_used) / 1000.0;
    }
    res->final_alloc = 100.0 * (double)c.gpu_milli_used / cap;
    res->points = pts;
    res->npoints = npts;
    pts = NULL;
    rc = LOOM_OK;
out:
    free(pts);
    free(live.a);
    free(frag);
    loom_sched_placer_free(pl);
    loom_sched_workload_free(&learned);
    loom_sched_cluster_free(&c);
    res->seconds = (double)(loom_time_mono_ns() - t0) / 1e9;
    return rc;
}
