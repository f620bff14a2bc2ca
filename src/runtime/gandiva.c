/* runtime/gandiva.c — Gandiva's mechanisms (Xiao et al., OSDI'18) as
 * decisions over the runtime's model; the caller carries them out (loomd:
 * SIGSTOP/SIGCONT of the job's process group; the simulator: the job's
 * remaining run time stops and resumes).
 *
 * - Time-slicing (timeslice_s = Q). When a job cannot be placed, jobs that
 *   have run for at least one quantum since they last (re)started are
 *   suspended, longest-running first, until the waiting job fits; their
 *   resources go back to the model. Suspended jobs come first when
 *   resources free up: each is resumed on the very GPUs it holds, and once
 *   it has waited a quantum, jobs there that have had theirs are suspended
 *   in turn.
 *
 * - Packing with introspection (pack_check). Jobs that share a GPU report
 *   their steps (loom_runtime_observe_step). For each job the runtime keeps
 *   its mean step time alone on its GPU and with the current co-tenants.
 *   Once every tenant has a few steps of both, the packing's normalized
 *   throughput is sum(solo step / packed step): above 1 packing stays;
 *   below, the newest tenant is suspended and resumed only when its GPU has
 *   no other job. A tenant that never ran alone is probed first: the others
 *   are suspended until it has run a few steps alone, then resumed. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_int.h"

/* Jobs holding an allocation on any GPU that a holds (a itself included). */
int rt__tenants(const loom_runtime_t *rt, const rjob_t *a)
{
    int n = 0;
    for (size_t k = 0; k < rt->nact; k++) {
        const rjob_t *b = rt->act[k];
        if (!b->held || b->alloc.node != a->alloc.node)
            continue;
        bool shares = false;
        for (int i = 0; i < a->alloc.ngpus && !shares; i++)
            for (int g = 0; g < b->alloc.ngpus; g++)
                shares |= a->alloc.gpus[i] == b->alloc.gpus[g];
        n += shares;
    }
    return n;
}

static bool shares_one_gpu(const rjob_t *a)
{
    return a->held && a->alloc.req.gpu_milli < LOOM_SCHED_MILLI && a->alloc.ngpus == 1;
}

void rt__set_tenancy(loom_runtime_t *rt, rjob_t *a, int ten)
{
    if (ten == a->tenancy)
        return;
    a->tenancy = ten;
    a->tenancy_since = rt->now;
    a->packed_n = 0;
    a->packed_step_s = 0;
    a->decided = false;
    a->skip = 1; /* the first step after a change may straddle it */
}

void loom_runtime_observe_step(loom_runtime_t *rt, uint64_t id, double start_s, double duration_s)
{
    rjob_t *a = rt__find(rt, id);
    if (!a || !shares_one_gpu(a) || duration_s <= 0)
        return;
    int ten = rt__tenants(rt, a);
    rt__set_tenancy(rt, a, ten);
    if (start_s < a->tenancy_since)
        return;
    if (a->skip > 0) {
        a->skip--;
        return;
    }
    if (ten <= 1) {
        a->solo_step_s = (a->solo_step_s * a->solo_n + duration_s) / (a->solo_n + 1);
        a->solo_n++;
    } else {
        a->packed_step_s = (a->packed_step_s * a->packed_n + duration_s) / (a->packed_n + 1);
        a->packed_n++;
    }
}

int rt__suspend(loom_runtime_t *rt, rjob_t *j, const char *why)
{
    int rc = rt__emit(rt, LOOM_RUNTIME_SUSPEND, j, &j->alloc, NULL, why);
    if (rc != LOOM_OK)
        return rc;
    rt__account(j, rt->now);
    loom_sched_free(&rt->cluster, &j->alloc, NULL);
    j->held = false;
    j->state = LOOM_RUNTIME_SUSPENDED;
    j->suspended_s = rt->now;
    return LOOM_OK;
}

bool rt__resume(loom_runtime_t *rt, rjob_t *j)
{
    loom_sched_alloc_t again;
    if (loom_sched_alloc(&rt->cluster, j->alloc.node, &j->alloc.req, j->alloc.gpus, j->alloc.ngpus,
                         &again, NULL) != LOOM_OK)
        return false;
    if (rt->down[j->alloc.node] ||
        rt__emit(rt, LOOM_RUNTIME_RESUME, j, &again, NULL, "resumed") != LOOM_OK) {
        loom_sched_free(&rt->cluster, &again, NULL);
        return false;
    }
    j->alloc = again;
    j->held = true;
    j->state = LOOM_RUNTIME_RUNNING;
    j->resumed_s = j->tenancy_since = rt->now;
    j->decided = false;
    return true;
}

/* Would `a` fit on its own GPUs if the jobs in `victims` let go? */
static bool fits_without(const loom_runtime_t *rt, const rjob_t *a, rjob_t **victims, size_t n)
{
    loom_sched_cluster_t c;
    if (loom_sched_cluster_copy(&c, &rt->cluster, NULL) != LOOM_OK)
        return false;
    for (size_t i = 0; i < n; i++)
        loom_sched_free(&c, &victims[i]->alloc, NULL);
    loom_sched_alloc_t tmp;
    bool ok = loom_sched_alloc(&c, a->alloc.node, &a->alloc.req, a->alloc.gpus, a->alloc.ngpus,
                               &tmp, NULL) == LOOM_OK;
    loom_sched_cluster_free(&c);
    return ok;
}

static bool had_quantum(const loom_runtime_t *rt, const rjob_t *a)
{
    return rt->timeslice_s > 0 && a->held && a->state == LOOM_RUNTIME_RUNNING &&
           rt->now - a->resumed_s >= rt->timeslice_s;
}

static bool alone_on_gpus(const loom_runtime_t *rt, const rjob_t *a)
{
    const loom_sched_node_t *n = &rt->cluster.nodes[a->alloc.node];
    bool alone = true;
    for (int g = 0; g < a->alloc.ngpus; g++)
        alone &= n->gpu_free[a->alloc.gpus[g]] == LOOM_SCHED_MILLI;
    return alone;
}

/* A suspended job that has waited a quantum: the jobs on its GPUs that have
 * had theirs make way. */
static void take_turn(loom_runtime_t *rt, rjob_t *a)
{
    rjob_t *victims[RT_MAX_VICTIMS];
    size_t nv = 0;
    for (size_t k = 0; k < rt->nact && nv < RT_MAX_VICTIMS; k++) {
        rjob_t *b = rt->act[k];
        if (b == a || !had_quantum(rt, b) || b->alloc.node != a->alloc.node)
            continue;
        bool overlaps = a->alloc.ngpus == 0; /* a CPU job: anyone on the node */
        for (int ga = 0; ga < a->alloc.ngpus && !overlaps; ga++)
            for (int gb = 0; gb < b->alloc.ngpus; gb++)
                overlaps |= a->alloc.gpus[ga] == b->alloc.gpus[gb];
        if (overlaps)
            victims[nv++] = b;
    }
    if (!nv || !fits_without(rt, a, victims, nv))
        return;
    for (size_t k = 0; k < nv; k++)
        rt__suspend(rt, victims[k], "suspended for time-slicing");
    rt__resume(rt, a);
}

void rt__resume_pass(loom_runtime_t *rt)
{
    for (size_t i = 0; i < rt->nact; i++) {
        rjob_t *a = rt->act[i];
        if (a->state != LOOM_RUNTIME_SUSPENDED)
            continue;
        if (a->probe_for) {
            /* Resume once the probed job has its solo steps, or is gone. */
            const rjob_t *p = rt__find(rt, a->probe_for);
            if (p && p->solo_n < RT_MIN_STEPS && p->held)
                continue;
            if (rt__resume(rt, a))
                a->probe_for = 0;
            continue;
        }
        if (a->no_pack) { /* packing hurt it: only alone on its GPUs */
            if (alone_on_gpus(rt, a))
                rt__resume(rt, a);
            continue;
        }
        if (rt__resume(rt, a) || rt->timeslice_s <= 0 || rt->now - a->suspended_s < rt->timeslice_s)
            continue;
        take_turn(rt, a);
    }
}

static int by_resumed(const void *x, const void *y)
{
    const rjob_t *a = *(rjob_t *const *)x, *b = *(rjob_t *const *)y;
    if (a->resumed_s != b->resumed_s)
        return a->resumed_s < b->resumed_s ? -1 : 1;
    return a->job.id < b->job.id ? -1 : a->job.id > b->job.id;
}

bool rt__make_room(loom_runtime_t *rt, const loom_sched_req_t *req)
{
    /* Longest-running first, until the request fits somewhere up. */
    rjob_t *cand[RT_MAX_MAKE_ROOM];
    size_t nc = 0;
    for (size_t k = 0; k < rt->nact && nc < RT_MAX_MAKE_ROOM; k++)
        if (had_quantum(rt, rt->act[k]))
            cand[nc++] = rt->act[k];
    if (!nc)
        return false;
    qsort(cand, nc, sizeof *cand, by_resumed);
    loom_sched_cluster_t c;
    if (loom_sched_cluster_copy(&c, &rt->cluster, NULL) != LOOM_OK)
        return false;
    size_t used = 0;
    bool fits = false;
    while (used < nc && !fits) {
        loom_sched_free(&c, &cand[used++]->alloc, NULL);
        for (size_t n = 0; n < c.nnodes && !fits; n++)
            fits = !rt->down[n] && loom_sched_fits(&c.nodes[n], req);
    }
    loom_sched_cluster_free(&c);
    if (!fits)
        return false;
    for (size_t i = 0; i < used; i++)
        rt__suspend(rt, cand[i], "suspended for time-slicing");
    return true;
}

/* Someone in the group never ran alone: the others step aside for a few
 * of its steps. */
static void probe(loom_runtime_t *rt, rjob_t **group, size_t ng)
{
    rjob_t *p = NULL;
    for (size_t k = 0; k < ng; k++) {
        if (group[k]->packed_n < RT_MIN_STEPS)
            return;
        if (group[k]->solo_n < RT_MIN_STEPS && !p)
            p = group[k];
    }
    if (!p)
        return;
    for (size_t k = 0; k < ng; k++) {
        if (group[k] == p)
            continue;
        char why[96];
        snprintf(why, sizeof why, "suspended while job %llu runs alone (packing probe)",
                 (unsigned long long)p->job.id);
        if (rt__suspend(rt, group[k], why) == LOOM_OK)
            group[k]->probe_for = p->job.id;
    }
}

static void decide(loom_runtime_t *rt, rjob_t **group, size_t ng, int gpu)
{
    double norm = 0;
    rjob_t *newest = group[0];
    for (size_t k = 0; k < ng; k++) {
        norm += group[k]->solo_step_s / group[k]->packed_step_s;
        if (group[k]->resumed_s > newest->resumed_s)
            newest = group[k];
    }
    for (size_t k = 0; k < ng; k++)
        group[k]->decided = true;
    if (norm >= RT_KEEP_THRESHOLD) {
        for (size_t k = 0; k < ng; k++) {
            snprintf(group[k]->note, sizeof group[k]->note,
                     "packing kept: normalized throughput %.2f on GPU %d", norm, gpu);
            rt__emit(rt, LOOM_RUNTIME_NOTE, group[k], &group[k]->alloc, NULL, group[k]->note);
        }
        return;
    }
    snprintf(newest->note, sizeof newest->note,
             "packing undone: normalized throughput %.2f on GPU %d; suspended until the GPU is "
             "free",
             norm, gpu);
    newest->no_pack = true;
    rt__suspend(rt, newest, newest->note);
}

void rt__pack_pass(loom_runtime_t *rt)
{
    for (size_t i = 0; i < rt->nact; i++)
        if (shares_one_gpu(rt->act[i]))
            rt__set_tenancy(rt, rt->act[i], rt__tenants(rt, rt->act[i]));
    /* One decision per shared GPU and tenancy. */
    for (size_t i = 0; i < rt->nact; i++) {
        rjob_t *a = rt->act[i];
        if (!a->held || a->tenancy < 2 || a->decided || a->alloc.req.gpu_milli >= LOOM_SCHED_MILLI)
            continue;
        rjob_t *group[LOOM_SCHED_MILLI];
        size_t ng = 0;
        bool ready = true;
        for (size_t k = 0; k < rt->nact && ng < LOOM_SCHED_MILLI; k++) {
            rjob_t *b = rt->act[k];
            if (!b->held || b->alloc.node != a->alloc.node || b->alloc.ngpus != 1 ||
                b->alloc.gpus[0] != a->alloc.gpus[0])
                continue;
            group[ng++] = b;
            ready &= b->solo_n >= RT_MIN_STEPS && b->packed_n >= RT_MIN_STEPS;
        }
        if (ng < 2)
            continue;
        if (!ready)
            probe(rt, group, ng);
        else
            decide(rt, group, ng, a->alloc.gpus[0]);
    }
}
