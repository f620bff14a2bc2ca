/* sim/dynamic.c — arrivals and departures over time, with a queue.
 *
 * Jobs arrive at their creation (due) time and run for their duration once
 * placed. At every event time: departures first, then arrivals join the
 * queue, then one scheduling pass walks the queue in the queue policy's
 * order and places every job that fits (jobs that do not fit are skipped,
 * not blocking the ones behind: "skip" backfilling). A job that would not
 * fit even on the empty cluster is counted as unfit and dropped.
 *
 * The pass is kept cheap: a job shape that failed since the last departure
 * cannot fit now either (resources only shrank), so it is not retried. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/sim.h"

void loom_sim_dynamic_result_free(loom_sim_dynamic_result_t *r)
{
    if (!r)
        return;
    free(r->timeline);
    r->timeline = NULL;
    r->ntimeline = 0;
}

typedef struct job {
    const loom_sim_task_t *task;
    loom_sched_qjob_t q;
    loom_sched_alloc_t alloc;
    double start_s, finish_s;
    int state;             /* 0 future, 1 pending, 2 running, 3 done, 4 unfit */
    uint64_t failed_epoch; /* frees count + 1 when it last failed */
    size_t live_slot;
} job_t;

/* min-heap of running jobs by finish time */
typedef struct heap {
    job_t **a;
    size_t n;
} heap_t;

static void heap_push(heap_t *h, job_t *j)
{
    size_t i = h->n++;
    h->a[i] = j;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h->a[p]->finish_s <= h->a[i]->finish_s)
            break;
        job_t *t = h->a[p];
        h->a[p] = h->a[i];
        h->a[i] = t;
        i = p;
    }
}

static job_t *heap_pop(heap_t *h)
{
    job_t *top = h->a[0];
    h->a[0] = h->a[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->a[l]->finish_s < h->a[m]->finish_s)
            m = l;
        if (r < h->n && h->a[r]->finish_s < h->a[m]->finish_s)
            m = r;
        if (m == i)
            break;
        job_t *t = h->a[m];
        h->a[m] = h->a[i];
        h->a[i] = t;
        i = m;
    }
    return top;
}

static int cmp_arrival(const void *x, const void *y)
{
    const job_t *a = *(job_t *const *)x, *b = *(job_t *const *)y;
    if (a->q.submit_s != b->q.submit_s)
        return a->q.submit_s < b->q.submit_s ? -1 : 1;
    return a->q.id < b->q.id ? -1 : a->q.id > b->q.id;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static bool fits_empty(const loom_sched_cluster_t *c, const loom_sched_req_t *r)
{
    for (size_t i = 0; i < c->nnodes; i++) {
        loom_sched_node_t n = c->nodes[i];
        n.cpu_free = n.cpu_milli;
        n.mem_free = n.mem_mib;
        for (int g = 0; g < n.ngpus; g++) {
            n.gpu_free[g] = LOOM_SCHED_MILLI;
            n.gpu_mem_free[g] = n.gpu_mem_mib;
        }
        if (loom_sched_fits(&n, r))
            return true;
    }
    return false;
}

int loom_sim_dynamic(const loom_sched_cluster_t *c0, const loom_sim_trace_t *t,
                     const loom_sim_opts_t *o, loom_sim_dynamic_result_t *res, loom_err_t *err)
{
    memset(res, 0, sizeof *res);
    int64_t t0 = loom_time_mono_ns();
    loom_sched_queue_cfg_t qcfg;
    int rc = loom_sched_queue_cfg_parse(o->queue ? o->queue : "fifo", &qcfg, err);
    if (rc)
        return rc;
    if (t->n == 0)
        return loom_err_set(err, LOOM_EINVAL, "dynamic: empty trace");
    loom_sched_cluster_t c;
    if ((rc = loom_sched_cluster_copy(&c, c0, err)))
        return rc;
    loom_sched_cluster_reset(&c);
    loom_sched_workload_t learned = {0};
    loom_sched_placer_t *pl = NULL;
    job_t *jobs = calloc(t->n, sizeof *jobs);
    job_t **order = calloc(t->n, sizeof *order);
    loom_sched_qjob_t **pend = calloc(t->n, sizeof *pend);
    heap_t heap = {calloc(t->n, sizeof(job_t *)), 0};
    loom_sched_alloc_t *live = o->debug_check ? calloc(t->n, sizeof *live) : NULL;
    job_t **live_job = o->debug_check ? calloc(t->n, sizeof *live_job) : NULL;
    size_t nlive = 0;
    double *waits = calloc(t->n, sizeof *waits);
    loom_sim_util_point_t *tl = NULL;
    size_t ntl = 0, cap_tl = 0;
    if (!jobs || !order || !pend || !heap.a || !waits || (o->debug_check && (!live || !live_job))) {
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
        goto out;
    }
    const loom_sched_workload_t *wl = o->workload;
    if (!wl) {
        if ((rc = loom_sim_trace_workload(t, &learned, err)))
            goto out;
        wl = &learned;
    }
    loom_sched_placer_opts_t po = {o->seed, wl, o->exact_scores, o->ties};
    if ((rc = loom_sched_placer_new(o->policy, &c, &po, &pl, err)))
        goto out;
    const double compress = o->compress > 0 ? o->compress : 1.0;
    for (size_t i = 0; i < t->n; i++) {
        job_t *j = &jobs[i];
        j->task = &t->tasks[i];
        j->q.id = i;
        j->q.submit_s = j->task->create_s / compress;
        j->q.priority = j->task->priority;
        /* no estimate given: the trace's own run time (an oracle for sjf) */
        j->q.estimate_s = j->task->estimate_s > 0    ? j->task->estimate_s
                          : j->task->duration_s >= 0 ? j->task->duration_s
                                                     : 0;
        j->q.time_limit_s = j->task->time_limit_s;
        j->q.wait_since_s = j->q.submit_s;
        j->q.user = j;
        order[i] = j;
    }
    qsort(order, t->n, sizeof *order, cmp_arrival);
    res->jobs = t->n;
    const double cap = c.gpu_milli_total > 0 ? (double)c.gpu_milli_total : 1;
    size_t next = 0, npend = 0, nwaits = 0;
    double first = order[0]->q.submit_s, now = first, last_end = first;
    double util_area = 0, last_t = first, jct_sum = 0;
    for (;;) {
        double ta = next < t->n ? order[next]->q.submit_s : INFINITY;
        double tf = heap.n ? heap.a[0]->finish_s : INFINITY;
        double tnext = ta < tf ? ta : tf;
        if (!isfinite(tnext))
            break;
        util_area += (tnext - last_t) * (double)c.gpu_milli_used / cap;
        last_t = now = tnext;
        while (heap.n && heap.a[0]->finish_s <= now) {
            job_t *j = heap_pop(&heap);
            loom_err_t e;
            if ((rc = loom_sched_free(&c, &j->alloc, &e))) {
                rc = loom_err_set(err, LOOM_EINTERNAL, "freeing job %s: %s", j->task->name, e.msg);
                goto out;
            }
            if (live) { /* swap-remove from the live list */
                size_t s = j->live_slot;
                live[s] = live[--nlive];
                live_job[s] = live_job[nlive];
                live_job[s]->live_slot = s;
            }
            j->state = 3;
            res->completed++;
            jct_sum += j->finish_s - j->q.submit_s;
            last_end = j->finish_s > last_end ? j->finish_s : last_end;
        }
        while (next < t->n && order[next]->q.submit_s <= now) {
            job_t *j = order[next++];
            if (!fits_empty(&c, &j->task->req)) {
                j->state = 4;
                res->unfit++;
                continue;
            }
            j->state = 1;
            pend[npend++] = &j->q;
        }
        loom_sched_queue_order(&qcfg, pend, npend, now);
        size_t keep = 0;
        for (size_t k = 0; k < npend; k++) {
            job_t *j = pend[k]->user;
            if (j->failed_epoch == c.frees + 1) {
                pend[keep++] = pend[k];
                continue;
            }
            loom_sched_alloc_t a;
            int prc = loom_sched_place(pl, &c, &j->task->req, &a);
            if (prc == LOOM_ENOTFOUND) {
                j->failed_epoch = c.frees + 1;
                pend[keep++] = pend[k];
                continue;
            }
            loom_err_t e;
            if (prc || (prc = loom_sched_alloc(&c, a.node, &j->task->req, a.gpus, a.ngpus,
                                               &j->alloc, &e))) {
                rc = loom_err_set(err, LOOM_EINTERNAL, "policy %s failed on job %s", o->policy,
                                  j->task->name);
                goto out;
            }
            j->state = 2;
            j->start_s = now;
            waits[nwaits++] = now - j->q.submit_s;
            if (j->task->duration_s >= 0) {
                j->finish_s = now + j->task->duration_s;
                heap_push(&heap, j);
            } else {
                res->running_at_end++;
            }
            if (live) {
                j->live_slot = nlive;
                live[nlive] = j->alloc;
                live_job[nlive++] = j;
            }
        }
        npend = keep;
        if (live) {
            loom_err_t e;
            if ((rc = loom_sched_cluster_check(&c, live, nlive, &e))) {
                rc = loom_err_set(err, rc, "at t=%g: %s", now, e.msg);
                goto out;
            }
        }
        if (o->keep_points) {
            if (ntl == cap_tl) {
                size_t nc = cap_tl ? cap_tl * 2 : 1024;
                loom_sim_util_point_t *np = realloc(tl, nc * sizeof *np);
                if (!np) {
                    rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
                    goto out;
                }
                tl = np;
                cap_tl = nc;
            }
            tl[ntl++] =
                (loom_sim_util_point_t){now, (float)(100.0 * (double)c.gpu_milli_used / cap),
                                        (uint32_t)npend, (uint32_t)(heap.n + res->running_at_end)};
        }
    }
    res->never_started = npend;
    res->makespan_s = last_end - first;
    res->mean_util_pct = last_t > first ? 100.0 * util_area / (last_t - first) : 0;
    res->mean_jct_s = res->completed ? jct_sum / (double)res->completed : 0;
    double wsum = 0;
    for (size_t i = 0; i < nwaits; i++)
        wsum += waits[i];
    res->mean_wait_s = nwaits ? wsum / (double)nwaits : 0;
    if (nwaits) {
        qsort(waits, nwaits, sizeof *waits, cmp_double);
        res->p99_wait_s = waits[(size_t)floor(0.99 * (double)(nwaits - 1))];
    }
    res->timeline = tl;
    res->ntimeline = ntl;
    tl = NULL;
    rc = LOOM_OK;
out:
    free(tl);
    free(waits);
    free(live);
    free(live_job);
    free(heap.a);
    free(pend);
    free(order);
    free(jobs);
    loom_sched_placer_free(pl);
    loom_sched_workload_free(&learned);
    loom_sched_cluster_free(&c);
    res->seconds = (double)(loom_time_mono_ns() - t0) / 1e9;
    return rc;
}
