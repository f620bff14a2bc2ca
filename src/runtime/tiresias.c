/* runtime/tiresias.c — Tiresias (Gu et al., NSDI'19) as the runtime runs it:
 * discretized two-dimensional least-attained-service, preemptive.
 *
 * A job's attained service is GPUs x seconds it has run. K queues split
 * it at thresholds (loom_sched_queue_cfg_t); a job falls to a lower queue
 * as its service crosses one. Waiting jobs are served highest queue first,
 * FIFO by arrival within a queue (the queue order, sched/queue.c), and a
 * waiting job of a higher queue preempts running jobs of lower queues:
 * they are suspended (the caller stops them in place, as Gandiva's
 * time-slicing does: loomd SIGSTOPs the process group, the simulator stops
 * the job's remaining run time) and resumed on the very GPUs they hold
 * when those are free again and no job of a higher queue waits for them.
 * Starvation: a job that has waited at least PROMOTEKNOB x its last run
 * goes back to the highest queue; its service counts afresh from there.
 *
 * Each step, after the queue is ordered: running jobs' queues are brought
 * up to date; suspended and pending jobs are walked together in queue
 * order; each resumes or starts if it fits, else preempts the lowest
 * running jobs of lower queues until it fits (up to RT_TIRESIAS_TRIES
 * searches a step). The pending pass then starts what else fits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_int.h"

#define RT_TIRESIAS_TRIES 64 /* waiting jobs per step that may search for victims */

static double gpus_of(const rjob_t *j)
{
    return (double)loom_sched_req_gpu_total(&j->alloc.req) / LOOM_SCHED_MILLI;
}

/* Its service as the queues count it: GPUs x seconds since its last
 * promotion, the current run included. */
static double service(const loom_runtime_t *rt, const rjob_t *j)
{
    double s = j->attained_gpu_s - j->promo_base;
    if (j->held && rt->now > j->resumed_s)
        s += (rt->now - j->resumed_s) * gpus_of(j);
    return s;
}

/* Its queue by service alone (no starvation rule). */
static int service_level(const loom_runtime_t *rt, double svc)
{
    int level = 0;
    while (level < rt->queue.k - 1 && svc >= rt->queue.thresholds[level])
        level++;
    return level;
}

/* A running job's queue (by its service), or a suspended one's (which the
 * starvation rule may promote). */
static int act_level(const loom_runtime_t *rt, const rjob_t *j)
{
    loom_sched_qjob_t q = j->q;
    q.attained_gpu_s = service(rt, j);
    if (j->held) {
        q.wait_since_s = rt->now;
        q.last_run_s = 0;
    }
    return loom_sched_tiresias_level(&rt->queue, &q, rt->now);
}

/* A job that starts or resumes in a higher queue than its service says was
 * promoted: its service counts afresh, so it stays there until it has
 * attained the first threshold again. */
static void promoted(rjob_t *j, const loom_runtime_t *rt, int level)
{
    if (level < service_level(rt, j->attained_gpu_s - j->promo_base))
        j->promo_base = j->attained_gpu_s;
}

static _Thread_local const loom_sched_queue_cfg_t *sort_cfg;

static int first_served(const void *x, const void *y)
{
    const rjob_t *a = *(rjob_t *const *)x, *b = *(rjob_t *const *)y;
    return loom_sched_queue_cmp(sort_cfg, &a->q, &b->q);
}

static int last_served(const void *x, const void *y)
{
    return first_served(y, x);
}

/* Victims for c (of queue level) among the running jobs of lower queues,
 * lowest first: on node (its own GPUs, for a suspended c) or on the first
 * node where c fits once they are gone. Returns how many (0: none do). */
static size_t choose(const loom_runtime_t *rt, const rjob_t *c, int level, rjob_t **vic, size_t nv,
                     rjob_t **out)
{
    loom_sched_cluster_t copy;
    if (loom_sched_cluster_copy(&copy, &rt->cluster, NULL) != LOOM_OK)
        return 0;
    bool suspended = c->state == LOOM_RUNTIME_SUSPENDED;
    int node = -1;
    size_t n = 0;
    for (size_t i = 0; i < nv && node < 0; i++) {
        rjob_t *v = vic[i];
        if (!v->held || v->tlevel <= level || (suspended && v->alloc.node != c->alloc.node))
            continue;
        loom_sched_free(&copy, &v->alloc, NULL);
        out[n++] = v;
        loom_sched_alloc_t tmp;
        if (suspended)
            node = loom_sched_alloc(&copy, c->alloc.node, &c->alloc.req, c->alloc.gpus,
                                    c->alloc.ngpus, &tmp, NULL) == LOOM_OK
                       ? c->alloc.node
                       : -1;
        else if (!rt->down[v->alloc.node] &&
                 loom_sched_fits(&copy.nodes[v->alloc.node], &c->job.req))
            node = v->alloc.node;
    }
    loom_sched_cluster_free(&copy);
    size_t m = 0;
    for (size_t i = 0; node >= 0 && i < n; i++)
        if (out[i]->alloc.node == node)
            out[m++] = out[i];
    return m;
}

/* Suspends the victims chosen for c; false when none would make room. */
static bool preempt(loom_runtime_t *rt, const rjob_t *c, int level, rjob_t **vic, size_t nv,
                    rjob_t **scratch)
{
    size_t n = choose(rt, c, level, vic, nv, scratch);
    for (size_t i = 0; i < n; i++) {
        rjob_t *v = scratch[i];
        char why[128];
        snprintf(why, sizeof why, "preempted by job %llu (Tiresias queue %d over %d)",
                 (unsigned long long)c->job.id, level, v->tlevel);
        double run = rt->now - v->resumed_s;
        if (rt__suspend(rt, v, why) != LOOM_OK)
            return false;
        v->q.wait_since_s = rt->now;
        v->q.last_run_s = run > 0 ? run : 1e-9;
    }
    return n > 0;
}

/* A suspended job resumes on its GPUs, preempting for them if it must. */
static void serve_suspended(loom_runtime_t *rt, rjob_t *c, rjob_t **vic, size_t nv, rjob_t **tmp,
                            int *tries)
{
    bool ok = rt__resume(rt, c);
    if (!ok && *tries < RT_TIRESIAS_TRIES) {
        ++*tries;
        ok = preempt(rt, c, c->tlevel, vic, nv, tmp) && rt__resume(rt, c);
    }
    if (ok)
        promoted(c, rt, c->tlevel);
}

/* A pending job that may start now: not held, rejected or Rubick's. */
static bool startable(const loom_runtime_t *rt, const rjob_t *j)
{
    return !j->dead && !j->reject && !(rt->rb_on && j->rb) && j->state == LOOM_RUNTIME_PENDING &&
           rt__blocked(rt, j) == LOOM_RUNTIME_REASON_NONE;
}

/* pend[k] starts, preempting if it must; false when it was dropped from
 * pend (its start was refused: the job is gone). */
static bool serve_pending(loom_runtime_t *rt, size_t k, int maxrun, rjob_t **vic, size_t nv,
                          rjob_t **tmp, int *tries)
{
    rjob_t *c = rt->pend[k].j;
    int level = c->q.level;
    int what = rt__try_start(rt, c);
    if (what == RT_STAYS && level < maxrun && *tries < RT_TIRESIAS_TRIES) {
        ++*tries;
        if (preempt(rt, c, level, vic, nv, tmp))
            what = rt__try_start(rt, c);
    }
    if (what == RT_STARTED)
        promoted(c, rt, level);
    if (what != RT_GONE)
        return true;
    memmove(rt->pend + k, rt->pend + k + 1, (rt->npend - k - 1) * sizeof *rt->pend);
    rt->npend--;
    return false;
}

/* The suspended jobs (by queue order) and the running ones that may be
 * preempted (lowest first), their levels as worth_it set them. */
static int gather(loom_runtime_t *rt, rjob_t **sus, size_t *ns, rjob_t **vic, size_t *nv)
{
    int maxrun = -1;
    *ns = *nv = 0;
    for (size_t i = 0; i < rt->nact; i++) {
        rjob_t *j = rt->act[i];
        if (j->rb)
            continue; /* Rubick's: its own pass decides */
        if (j->state == LOOM_RUNTIME_SUSPENDED && !j->no_pack && !j->probe_for)
            sus[(*ns)++] = j;
        else if (j->held && j->state == LOOM_RUNTIME_RUNNING) {
            vic[(*nv)++] = j;
            maxrun = j->tlevel > maxrun ? j->tlevel : maxrun;
        }
    }
    sort_cfg = &rt->queue;
    qsort(sus, *ns, sizeof *sus, first_served);
    qsort(vic, *nv, sizeof *vic, last_served);
    sort_cfg = NULL;
    return maxrun;
}

/* Whether the pass has anything to do: a suspended job, or a pending job
 * of a higher queue than some running job (the queue is sorted by level
 * first, so the head has the highest). Brings the jobs' levels up to date. */
static bool worth_it(loom_runtime_t *rt)
{
    int maxrun = -1;
    bool suspended = false;
    for (size_t i = 0; i < rt->nact; i++) {
        rjob_t *j = rt->act[i];
        j->tlevel = j->q.level = act_level(rt, j);
        suspended |= j->state == LOOM_RUNTIME_SUSPENDED;
        if (j->held && j->state == LOOM_RUNTIME_RUNNING && j->tlevel > maxrun)
            maxrun = j->tlevel;
    }
    return suspended || (rt->npend > 0 && rt->pend[0].j->q.level < maxrun);
}

void rt__tiresias_pass(loom_runtime_t *rt)
{
    rt->nresv = 0;
    if (!worth_it(rt))
        return;
    size_t cap = rt->nact + 1, ns, nv;
    rjob_t **sus = malloc(cap * sizeof *sus), **vic = malloc(cap * sizeof *vic),
           **tmp = malloc(cap * sizeof *tmp);
    hidden_t *h = sus && vic && tmp ? rt__hide_down(rt) : NULL;
    if (!sus || !vic || !tmp || (rt->ndown && !h))
        goto out; /* out of memory: the pending pass alone, no preemption this step */
    int maxrun = gather(rt, sus, &ns, vic, &nv), tries = 0;
    size_t i = 0, k = 0;
    while (i < ns || k < rt->npend) {
        if (k < rt->npend && !startable(rt, rt->pend[k].j)) {
            k++;
            continue;
        }
        const rjob_t *p = k < rt->npend ? rt->pend[k].j : NULL;
        if (i < ns && (!p || loom_sched_queue_cmp(&rt->queue, &sus[i]->q, &p->q) < 0)) {
            serve_suspended(rt, sus[i++], vic, nv, tmp, &tries);
            continue;
        }
        if (i >= ns && p->q.level >= maxrun)
            break; /* nothing left to resume or preempt: the pending pass does the rest */
        if (serve_pending(rt, k, maxrun, vic, nv, tmp, &tries))
            k++;
    }
    rt__unhide_down(rt, h);
out:
    free(sus);
    free(vic);
    free(tmp);
}

/* When the next queue change may call for a decision: a running job's
 * service crossing its queue's threshold, a waiting job's promotion. */
static double change_of(const loom_runtime_t *rt, const rjob_t *j)
{
    const loom_sched_queue_cfg_t *q = &rt->queue;
    if (j->held && j->state == LOOM_RUNTIME_RUNNING) {
        double svc = service(rt, j), g = gpus_of(j);
        int lvl = service_level(rt, svc);
        return lvl < q->k - 1 && g > 0 ? rt->now + (q->thresholds[lvl] - svc) / g + 1e-6 : INFINITY;
    }
    if (j->held || j->q.level == 0)
        return INFINITY;
    double t = INFINITY;
    if (q->starve_factor > 0 && j->q.last_run_s > 0)
        t = j->q.wait_since_s + fmax(q->starve_factor * j->q.last_run_s, q->starve_min_s);
    if (q->starve_limit_s > 0)
        t = fmin(t, j->q.wait_since_s + q->starve_limit_s);
    return t;
}

double rt__tiresias_wakeup(const loom_runtime_t *rt)
{
    bool waiting = rt->npend + rt->nfresh > 0;
    for (size_t k = 0; k < rt->nact && !waiting; k++)
        waiting = !rt->act[k]->held;
    if (!waiting)
        return INFINITY;
    double t = INFINITY;
    for (size_t k = 0; k < rt->nact; k++) {
        double w = change_of(rt, rt->act[k]);
        t = w > rt->now && w < t ? w : t;
    }
    for (size_t k = 0; rt->nran && k < rt->npend; k++) {
        double w = rt->pend[k].j->dead ? INFINITY : change_of(rt, rt->pend[k].j);
        t = w > rt->now && w < t ? w : t;
    }
    return t;
}
