/* runtime/backfill.c — backfill with reservations (EASY and conservative).
 *
 * A job that waits for resources gets a reservation: the earliest time at
 * which, by the running jobs' time limits, some node holds it, and the GPUs
 * it will take there. EASY gives one to the first job in queue order that
 * waits; conservative gives one to every waiting job, each planned around
 * the ones before it. A later job starts now only where running to its own
 * time limit delays no reservation: it ends before the reservation starts,
 * or the reserved node still holds the reserved job beside it.
 *
 * Reservations live for one step: each step plans them afresh from the
 * jobs running then (as Slurm's sched/backfill does on each cycle). A job
 * without a time limit is taken to run the configured default. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_int.h"

int loom_runtime_backfill_parse(const char *text, loom_runtime_backfill_t *out, loom_err_t *err)
{
    static const char *const names[] = {"greedy", "easy", "conservative"};
    for (int k = 0; text && k < 3; k++)
        if (strcmp(text, names[k]) == 0) {
            *out = (loom_runtime_backfill_t)k;
            return LOOM_OK;
        }
    return loom_err_set(err, LOOM_EINVAL, "backfill '%.40s': expected greedy, easy or conservative",
                        text ? text : "");
}

const char *loom_runtime_backfill_name(loom_runtime_backfill_t b)
{
    return b == LOOM_RUNTIME_BACKFILL_EASY           ? "easy"
           : b == LOOM_RUNTIME_BACKFILL_CONSERVATIVE ? "conservative"
                                                     : "greedy";
}

double rt__limit(const loom_runtime_t *rt, const rjob_t *j)
{
    return j->job.time_limit_s > 0 ? j->job.time_limit_s : rt->default_limit_s;
}

/* When a running job is expected to give its resources back: at its time
 * limit (one already past it is expected to go now). */
static double end_of(const loom_runtime_t *rt, const rjob_t *j)
{
    double left = rt__limit(rt, j) - j->ran_s;
    double end = j->resumed_s + (left > 0 ? left : 0);
    return end > rt->now ? end : rt->now;
}

/* ---------------------------------------------------- a node over time */

typedef struct nstate {
    int64_t cpu, mem;
    int64_t gpu[LOOM_SCHED_MAX_GPUS];
    int64_t gmem[LOOM_SCHED_MAX_GPUS];
} nstate_t;

static void st_add(nstate_t *s, const loom_sched_alloc_t *a, int64_t sign)
{
    s->cpu += sign * a->req.cpu_milli;
    s->mem += sign * a->req.mem_mib;
    for (int i = 0; i < a->ngpus; i++) {
        s->gpu[a->gpus[i]] += sign * a->req.gpu_milli;
        s->gmem[a->gpus[i]] += sign * a->req.gpu_mem_mib;
    }
}

static bool st_over(const loom_sched_node_t *n, const nstate_t *s)
{
    if (s->cpu < 0 || s->mem < 0)
        return true;
    for (int g = 0; g < n->ngpus; g++)
        if (s->gpu[g] < 0 || (n->gpu_mem_mib > 0 && s->gmem[g] < 0))
            return true;
    return false;
}

/* The running jobs of one node with their expected ends (all nodes': run
 * is NULL). */
typedef struct seg {
    const rt_end_t *run;
    size_t n;
} seg_t;

/* What node k has free at time t: its free resources now, plus what the
 * running jobs ending by t give back, less the reservations active at t. */
static void state_at(const loom_runtime_t *rt, size_t k, seg_t sg, double t, nstate_t *s)
{
    const loom_sched_node_t *n = &rt->cluster.nodes[k];
    s->cpu = n->cpu_free;
    s->mem = n->mem_free;
    for (int g = 0; g < LOOM_SCHED_MAX_GPUS; g++) {
        s->gpu[g] = g < n->ngpus ? n->gpu_free[g] : 0;
        s->gmem[g] = g < n->ngpus ? n->gpu_mem_free[g] : 0;
    }
    if (sg.run) {
        for (size_t i = 0; i < sg.n; i++)
            if (sg.run[i].end_s <= t)
                st_add(s, sg.run[i].alloc, 1);
    } else
        for (size_t i = 0; i < rt->nact; i++) {
            const rjob_t *j = rt->act[i];
            if (j->held && j->alloc.node == (int)k && end_of(rt, j) <= t)
                st_add(s, &j->alloc, 1);
        }
    for (size_t i = 0; i < rt->nresv; i++) {
        const rt_resv_t *r = &rt->resv[i];
        if (r->alloc.node == (int)k && r->start_s <= t && t < r->end_s)
            st_add(s, &r->alloc, -1);
    }
}

/* Does a, held over [from, to), leave every reservation on its node room?
 * Load only grows at a reservation's start, so those are the times to
 * check (and from itself). */
static bool window_clear(const loom_runtime_t *rt, seg_t sg, const loom_sched_alloc_t *a,
                         double from, double to)
{
    const loom_sched_node_t *n = &rt->cluster.nodes[a->node];
    for (size_t i = 0; i < rt->nresv; i++) {
        const rt_resv_t *r = &rt->resv[i];
        if (r->alloc.node != a->node || r->start_s >= to || r->end_s <= from)
            continue;
        nstate_t s;
        state_at(rt, (size_t)a->node, sg, r->start_s > from ? r->start_s : from, &s);
        st_add(&s, a, -1);
        if (st_over(n, &s))
            return false;
    }
    return true;
}

bool rt__resv_conflict(const loom_runtime_t *rt, const loom_sched_alloc_t *a, double end_s)
{
    return !window_clear(rt, (seg_t){NULL, 0}, a, rt->now, end_s);
}

/* Chooses GPUs for req on node n as it would be in state s (false: it
 * does not fit there). */
static bool fits_in(const loom_sched_node_t *n, const nstate_t *s, const loom_sched_req_t *req,
                    loom_sched_alloc_t *out)
{
    loom_sched_node_t v = *n;
    if (s->cpu > INT64_MAX / 2 || s->mem > INT64_MAX / 2)
        return false;
    v.cpu_free = s->cpu;
    v.mem_free = s->mem;
    for (int g = 0; g < n->ngpus; g++) {
        v.gpu_free[g] = (int32_t)(s->gpu[g] < 0 ? -1 : s->gpu[g]);
        v.gpu_mem_free[g] = s->gmem[g];
    }
    if (!loom_sched_fits(&v, req))
        return false;
    *out = (loom_sched_alloc_t){.req = *req};
    for (int g = 0; g < n->ngpus && out->ngpus < req->num_gpus; g++)
        if (loom_sched_gpu_fits(&v, g, req))
            out->gpus[out->ngpus++] = (uint8_t)g;
    return out->ngpus == req->num_gpus;
}

/* The earliest time node k holds j for its whole limit, with its GPUs
 * (INFINITY: never, by the running jobs and reservations). Candidate times
 * are now and the times resources come back on k. */
static double earliest_on(const loom_runtime_t *rt, size_t k, seg_t sg, const rjob_t *j, double len,
                          loom_sched_alloc_t *out)
{
    double best = INFINITY;
    const loom_sched_node_t *n = &rt->cluster.nodes[k];
    for (size_t c = 0; c < 1 + sg.n + rt->nresv; c++) {
        double t = c == 0      ? rt->now
                   : c <= sg.n ? sg.run[c - 1].end_s
                               : rt->resv[c - 1 - sg.n].end_s;
        if (c > sg.n && rt->resv[c - 1 - sg.n].alloc.node != (int)k)
            continue;
        if (t >= best)
            continue;
        nstate_t s;
        loom_sched_alloc_t a;
        state_at(rt, k, sg, t, &s);
        if (!fits_in(n, &s, &j->job.req, &a))
            continue;
        a.node = (int)k;
        if (window_clear(rt, sg, &a, t, t + len)) {
            best = t;
            *out = a;
        }
    }
    return best;
}

static int cmp_end(const void *pa, const void *pb)
{
    const rt_end_t *a = pa, *b = pb;
    if (a->alloc->node != b->alloc->node)
        return a->alloc->node < b->alloc->node ? -1 : 1;
    return (a->end_s > b->end_s) - (a->end_s < b->end_s);
}

/* The running jobs that hold resources, by node then expected end (in
 * rt->ends); false: out of memory. */
static bool ends_by_node(loom_runtime_t *rt, size_t *n)
{
    if (loom_vec_reserve((void **)&rt->ends, &rt->cap_ends, rt->nact + 1, sizeof *rt->ends,
                         RT_ARRAY_MIN_CAP) != LOOM_OK)
        return false;
    *n = 0;
    for (size_t i = 0; i < rt->nact; i++)
        if (rt->act[i]->held)
            rt->ends[(*n)++] = (rt_end_t){end_of(rt, rt->act[i]), &rt->act[i]->alloc};
    qsort(rt->ends, *n, sizeof *rt->ends, cmp_end);
    return true;
}

/* Gives j a reservation at the earliest time some node up holds it (none
 * when no node ever does, or the step has made its share of them). */
void rt__reserve(loom_runtime_t *rt, rjob_t *j)
{
    size_t nrun;
    if (rt->nresv >= LOOM_RUNTIME_MAX_RESERVATIONS)
        return;
    if (loom_vec_reserve((void **)&rt->resv, &rt->cap_resv, rt->nresv + 1, sizeof *rt->resv,
                         RT_ARRAY_MIN_CAP) != LOOM_OK ||
        !ends_by_node(rt, &nrun)) {
        rt->nomem++;
        return; /* out of memory: it waits as under greedy backfill */
    }
    double len = rt__limit(rt, j), best = INFINITY;
    loom_sched_alloc_t at = {0};
    size_t from = 0;
    for (size_t k = 0; k < rt->cluster.nnodes; k++) {
        seg_t sg = {rt->ends + from, 0};
        while (from + sg.n < nrun && rt->ends[from + sg.n].alloc->node == (int)k)
            sg.n++;
        from += sg.n;
        loom_sched_alloc_t a;
        double t = rt->down[k] ? INFINITY : earliest_on(rt, k, sg, j, len, &a);
        if (t < best) {
            best = t;
            at = a;
        }
    }
    if (!isfinite(best))
        return;
    rt->resv[rt->nresv++] = (rt_resv_t){j->job.id, best, best + len, at};
    j->resv_step = rt->steps;
    j->resv_start_s = best;
    j->resv_node = at.node;
}
