/* rubick/policy.c — GPUs, CPUs, memory and a plan for every job.
 *
 * Each job's best configuration per (GPUs, CPU step) is worked out once
 * (loom_rubick_job_prepare) from the performance model, over the plans its
 * spec allows and the mode permits. A decision then runs in three passes
 * over a working copy of the cluster:
 *  1. admission, in arrival order with greedy backfill: a pending job starts
 *     with the fewest GPUs whose best configuration reaches its guarantee,
 *     on the fullest node that holds it; when no node does, running jobs
 *     on a node that have more GPUs than their own minimum give some back
 *     (if each still ends no later than at its guarantee);
 *  2. plan and CPU changes at the same GPU count, for running jobs;
 *  3. the free GPUs, one job at a time, to the job that gains the most
 *     normalised throughput (samples/s over its guarantee) per added GPU.
 * No configuration runs below the job's guarantee. A running job is changed
 * only when it still ends no later than it would have at its guarantee
 * from its start (its lead, samples ahead of the guarantee, makes up for
 * the checkpoint-restart pause), and, to grow or re-plan, when the time it
 * saves on its remaining samples exceeds the pause by min_gain of the time
 * it has left. Jobs are kept on one node (loom's allocation model). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/rubick.h"

/* Does the policy use part p (LOOM_RUBICK_PART_*)? Only the full mode
 * leaves parts out. */
static bool part(const loom_rubick_opts_t *o, unsigned p)
{
    return o->mode != LOOM_RUBICK_FULL || !o->parts || (o->parts & p);
}

/* The CPU of step k for g GPUs under the mode (0: no such step). */
static int64_t cpu_step(const loom_rubick_spec_t *s, const loom_rubick_opts_t *o, int g, int k)
{
    loom_rubick_mode_t mode = o->mode;
    if (mode == LOOM_RUBICK_FIXED || mode == LOOM_RUBICK_ELASTIC || !s->reconfigurable ||
        !part(o, LOOM_RUBICK_PART_CPU))
        return k == 0 ? s->asked_cpu * g / s->asked.gpus : 0;
    return s->cpu_min + (s->cpu_max - s->cpu_min) * k / (LOOM_RUBICK_CPU_STEPS - 1);
}

/* Host memory for a need, under the mode (0: cannot be met). */
static int64_t mem_for(const loom_rubick_spec_t *s, const loom_rubick_opts_t *o, int g, double need)
{
    loom_rubick_mode_t mode = o->mode;
    if (mode == LOOM_RUBICK_FIXED || mode == LOOM_RUBICK_ELASTIC || !s->reconfigurable) {
        int64_t m = s->asked_mem * g / s->asked.gpus;
        return need <= (double)m ? m : 0;
    }
    if (!part(o, LOOM_RUBICK_PART_CPU)) {
        /* the asked share, or what a chosen plan needs (offload) */
        int64_t m = s->asked_mem * g / s->asked.gpus;
        if (need > (double)m)
            m = (int64_t)ceil(need);
        return m <= s->mem_max ? m : 0;
    }
    int64_t m = (int64_t)ceil(need);
    m = m < s->mem_min ? s->mem_min : m;
    return m <= s->mem_max ? m : 0;
}

static bool plan_in_mode(const loom_rubick_spec_t *s, const loom_rubick_opts_t *o,
                         const loom_rubick_plan_t *p)
{
    loom_rubick_mode_t mode = o->mode;
    const loom_rubick_plan_t *a = &s->asked;
    bool same_plan = p->accum == a->accum && p->recompute == a->recompute && p->zero == a->zero &&
                     p->offload == a->offload;
    if (mode == LOOM_RUBICK_FIXED || mode == LOOM_RUBICK_SYNERGY || !s->reconfigurable)
        return same_plan && p->gpus == a->gpus;
    if (mode == LOOM_RUBICK_ELASTIC)
        return same_plan && loom_rubick_plan_allowed(s, p);
    if (!part(o, LOOM_RUBICK_PART_PLAN) && !same_plan)
        return false;
    if (!part(o, LOOM_RUBICK_PART_RECONF) && p->gpus != a->gpus)
        return false;
    return loom_rubick_plan_allowed(s, p);
}

/* The best plan for g GPUs at CPU cpu; ties keep the first. */
static void best_plan(loom_rubick_job_t *j, const loom_rubick_opts_t *o, int g, int64_t cpu,
                      loom_rubick_choice_t *out)
{
    const loom_rubick_spec_t *s = j->spec;
    memset(out, 0, sizeof *out);
    for (int accum = 1; accum <= LOOM_RUBICK_ACCUM_MAX; accum++) {
        if (!(s->accum_mask >> (accum - 1) & 1))
            continue;
        for (int v = 0; v < 16; v++) {
            loom_rubick_config_t c = {{g, accum, v & 1, (v >> 1) & 3, (v >> 3) & 1}, cpu, 0};
            if (!plan_in_mode(s, o, &c.plan))
                continue;
            loom_rubick_estimate_t e;
            loom_rubick_predict(j->model, o->device, &j->fit, s->global_batch, &c, &e);
            c.mem_mib = mem_for(s, o, g, e.host_mem_mib);
            if (!e.fits || !c.mem_mib)
                continue;
            if (e.samples_per_s > out->samples_per_s * (1 + 1e-9))
                *out = (loom_rubick_choice_t){c, e.samples_per_s};
        }
    }
}

int loom_rubick_job_prepare(loom_rubick_job_t *j, const loom_rubick_opts_t *o, loom_err_t *err)
{
    const loom_rubick_spec_t *s = j->spec;
    memset(j->table, 0, sizeof j->table);
    loom_rubick_config_t asked = {s->asked, s->asked_cpu, s->asked_mem};
    loom_rubick_estimate_t e;
    loom_rubick_predict(j->model, o->device, &j->fit, s->global_batch, &asked, &e);
    if (!e.fits)
        return loom_err_set(err, LOOM_EINVAL,
                            "job %llu: its asked plan does not fit the device (%.1f GiB a GPU, "
                            "%.0f MiB of host memory)",
                            (unsigned long long)j->id, e.gpu_mem_bytes / 1073741824.0,
                            e.host_mem_mib);
    j->guarantee = e.samples_per_s;
    int gmin = s->reconfigurable ? s->gpus_min : s->asked.gpus;
    int gmax = s->reconfigurable ? s->gpus_max : s->asked.gpus;
    for (int g = gmin; g <= gmax; g++)
        for (int k = 0; k < LOOM_RUBICK_CPU_STEPS; k++) {
            int64_t cpu = cpu_step(s, o, g, k);
            if (cpu > 0)
                best_plan(j, o, g, cpu, &j->table[g][k]);
        }
    /* the asked configuration itself is always a choice */
    loom_rubick_choice_t *t = &j->table[s->asked.gpus][0];
    if (o->mode == LOOM_RUBICK_FIXED || !s->reconfigurable || t->samples_per_s < j->guarantee)
        *t = (loom_rubick_choice_t){asked, j->guarantee};
    return LOOM_OK;
}

/* ------------------------------------------------------------ decide */

typedef struct work {
    loom_sched_cluster_t c;
    loom_rubick_job_t *jobs;
    size_t n;
    const loom_rubick_opts_t *o;
    bool *touched; /* started or reconfigured in this decision */
    bool *start;
    loom_rubick_config_t *cfg;
    loom_sched_alloc_t *alloc;
    double *thr;
    bool *held; /* holds cfg/alloc in c */
    int *give;  /* shrink_for's scratch */
} work_t;

/* The best choice on a node with g GPUs within the CPU and memory it may
 * use there (what it holds plus what is free). */
static const loom_rubick_choice_t *choose(const loom_rubick_job_t *j, int g, int64_t cpu_cap,
                                          int64_t mem_cap)
{
    const loom_rubick_choice_t *best = NULL;
    for (int k = 0; k < LOOM_RUBICK_CPU_STEPS; k++) {
        const loom_rubick_choice_t *ch = &j->table[g][k];
        if (ch->samples_per_s <= 0 || ch->config.cpu_milli > cpu_cap ||
            ch->config.mem_mib > mem_cap)
            continue;
        /* within 1% of the best: fewer CPUs win */
        if (!best || ch->samples_per_s > best->samples_per_s * 1.01)
            best = ch;
    }
    return best;
}

/* Takes cfg on node for job i (its old allocation already given back). */
static bool take(work_t *w, size_t i, int node, const loom_rubick_choice_t *ch)
{
    const loom_sched_node_t *nd = &w->c.nodes[node];
    loom_sched_req_t r = {.cpu_milli = ch->config.cpu_milli,
                          .mem_mib = ch->config.mem_mib,
                          .num_gpus = ch->config.plan.gpus,
                          .gpu_milli = LOOM_SCHED_MILLI};
    if (!loom_sched_fits(nd, &r))
        return false;
    uint8_t gpus[LOOM_SCHED_MAX_GPUS];
    int ng = 0;
    /* the GPUs it had first, so that a grown job keeps its own */
    if (w->held[i] || w->jobs[i].running)
        for (int k = 0; k < w->alloc[i].ngpus && ng < r.num_gpus; k++)
            if (nd->gpu_free[w->alloc[i].gpus[k]] == LOOM_SCHED_MILLI)
                gpus[ng++] = w->alloc[i].gpus[k];
    for (int g = 0; g < nd->ngpus && ng < r.num_gpus; g++) {
        bool dup = false;
        for (int k = 0; k < ng; k++)
            dup |= gpus[k] == g;
        if (!dup && nd->gpu_free[g] == LOOM_SCHED_MILLI)
            gpus[ng++] = (uint8_t)g;
    }
    loom_sched_alloc_t a;
    if (ng < r.num_gpus || loom_sched_alloc(&w->c, node, &r, gpus, ng, &a, NULL) != LOOM_OK)
        return false;
    w->alloc[i] = a;
    w->cfg[i] = ch->config;
    w->thr[i] = ch->samples_per_s;
    w->held[i] = true;
    return true;
}

/* Would running job i, paused now and then run at thr, still end no later
 * than at its guarantee from its start? Its lead is what it has done beyond
 * the guarantee so far: it ends in time iff pause + remaining / thr <=
 * (remaining + lead) / guarantee. */
static bool on_time(const work_t *w, size_t i, double thr)
{
    const loom_rubick_job_t *j = &w->jobs[i];
    if (thr < j->guarantee)
        return false;
    double pause = w->touched[i] ? 0 : w->o->reconf_cost_s; /* it restarts anyway */
    return pause + j->remaining / thr <= (j->remaining + j->lead) / j->guarantee;
}

/* Would changing job i to throughput thr pay for its pause? */
static bool pays(const work_t *w, size_t i, double thr)
{
    const loom_rubick_job_t *j = &w->jobs[i];
    if (w->start[i] || thr < j->guarantee)
        return thr >= j->guarantee;
    if (thr <= w->thr[i] || !on_time(w, i, thr))
        return false;
    if (w->touched[i])
        return true;
    double now_left = j->remaining / w->thr[i];
    double new_left = w->o->reconf_cost_s + j->remaining / thr;
    return new_left < now_left * (1 - w->o->min_gain);
}

/* Moves job i on its node to choice ch; false (nothing changed) if it
 * does not fit. */
static bool move(work_t *w, size_t i, const loom_rubick_choice_t *ch)
{
    loom_sched_alloc_t old = w->alloc[i];
    loom_rubick_config_t oc = w->cfg[i];
    double ot = w->thr[i];
    if (loom_sched_free(&w->c, &old, NULL) != LOOM_OK)
        return false;
    w->held[i] = false;
    if (take(w, i, old.node, ch)) {
        w->touched[i] = true;
        return true;
    }
    w->alloc[i] = old;
    w->cfg[i] = oc;
    w->thr[i] = ot;
    w->held[i] = loom_sched_alloc(&w->c, old.node, &old.req, old.gpus, old.ngpus, &w->alloc[i],
                                  NULL) == LOOM_OK;
    return false;
}

static int min_gpus(const loom_rubick_job_t *j, int64_t cpu_cap, int64_t mem_cap)
{
    for (int g = 1; g <= LOOM_RUBICK_GPUS_MAX; g++) {
        const loom_rubick_choice_t *ch = choose(j, g, cpu_cap, mem_cap);
        if (ch && ch->samples_per_s >= j->guarantee)
            return g;
    }
    return 0;
}

/* Running jobs on node give back GPUs (down to their own minimum) until
 * job p fits there; false, with nothing changed, if they cannot. */
static bool shrink_for(work_t *w, size_t p, int node)
{
    const loom_sched_node_t *nd = &w->c.nodes[node];
    int need = w->jobs[p].spec->asked.gpus, spare = loom_sched_node_gpus_idle(nd);
    int64_t pm =
        w->jobs[p].spec->reconfigurable ? min_gpus(&w->jobs[p], nd->cpu_milli, nd->mem_mib) : need;
    need = pm > 0 ? (int)pm : need;
    int *give = w->give;
    memset(give, 0, w->n * sizeof *give);
    for (size_t i = 0; i < w->n && spare < need; i++) {
        const loom_rubick_job_t *j = &w->jobs[i];
        if (!w->held[i] || w->start[i] || w->alloc[i].node != node || !j->spec->reconfigurable ||
            w->o->mode == LOOM_RUBICK_FIXED || w->o->mode == LOOM_RUBICK_SYNERGY)
            continue;
        int m = min_gpus(j, w->cfg[i].cpu_milli, w->cfg[i].mem_mib);
        const loom_rubick_choice_t *mc =
            m > 0 ? choose(j, m, w->cfg[i].cpu_milli, w->cfg[i].mem_mib) : NULL;
        /* down to its minimum only if it still ends in time from there */
        if (mc && m < w->cfg[i].plan.gpus && on_time(w, i, mc->samples_per_s)) {
            give[i] =
                w->cfg[i].plan.gpus - m < need - spare ? w->cfg[i].plan.gpus - m : need - spare;
            spare += give[i];
        }
    }
    if (spare < need)
        return false;
    for (size_t i = 0; i < w->n; i++) {
        if (!give[i])
            continue;
        const loom_rubick_choice_t *ch = choose(&w->jobs[i], w->cfg[i].plan.gpus - give[i],
                                                w->cfg[i].cpu_milli, w->cfg[i].mem_mib);
        if (ch && ch->samples_per_s >= w->jobs[i].guarantee)
            move(w, i, ch);
    }
    return true;
}

/* Starts pending job i on the fullest node that holds its minimum. */
static bool admit(work_t *w, size_t i, bool may_shrink)
{
    const loom_rubick_job_t *j = &w->jobs[i];
    int best = -1, best_idle = 1 << 30;
    const loom_rubick_choice_t *bch = NULL;
    for (size_t nd = 0; nd < w->c.nnodes; nd++) {
        const loom_sched_node_t *n = &w->c.nodes[nd];
        int idle = loom_sched_node_gpus_idle(n);
        for (int g = 1; g <= idle && g <= LOOM_RUBICK_GPUS_MAX; g++) {
            const loom_rubick_choice_t *ch = choose(j, g, n->cpu_free, n->mem_free);
            if (ch && ch->samples_per_s >= j->guarantee) {
                if (idle < best_idle)
                    best = (int)nd, best_idle = idle, bch = ch;
                break;
            }
        }
    }
    if (bch && take(w, i, best, bch)) {
        w->start[i] = w->touched[i] = true;
        return true;
    }
    if (!may_shrink)
        return false;
    for (size_t nd = 0; nd < w->c.nnodes; nd++)
        if (shrink_for(w, i, (int)nd))
            return admit(w, i, false);
    return false;
}

/* Pass 2: a better plan or more CPUs at the same GPU count. */
static void replan(work_t *w)
{
    for (size_t i = 0; i < w->n; i++) {
        if (!w->held[i] || !w->jobs[i].spec->reconfigurable || w->o->mode == LOOM_RUBICK_FIXED)
            continue;
        const loom_sched_node_t *nd = &w->c.nodes[w->alloc[i].node];
        const loom_rubick_choice_t *ch =
            choose(&w->jobs[i], w->cfg[i].plan.gpus, w->cfg[i].cpu_milli + nd->cpu_free,
                   w->cfg[i].mem_mib + nd->mem_free);
        if (ch && ch->samples_per_s > w->thr[i] * 1.001 && pays(w, i, ch->samples_per_s))
            move(w, i, ch);
    }
}

/* Pass 3: free GPUs to the job that gains most per added GPU. */
static void grow(work_t *w)
{
    if (w->o->mode == LOOM_RUBICK_FIXED || w->o->mode == LOOM_RUBICK_SYNERGY)
        return;
    for (;;) {
        size_t bi = 0;
        double best = 0;
        const loom_rubick_choice_t *bch = NULL;
        for (size_t i = 0; i < w->n; i++) {
            const loom_rubick_job_t *j = &w->jobs[i];
            if (!w->held[i] || !j->spec->reconfigurable)
                continue;
            const loom_sched_node_t *nd = &w->c.nodes[w->alloc[i].node];
            int g0 = w->cfg[i].plan.gpus, idle = loom_sched_node_gpus_idle(nd);
            for (int g = g0 + 1; g <= g0 + idle && g <= j->spec->gpus_max; g++) {
                const loom_rubick_choice_t *ch = choose(j, g, w->cfg[i].cpu_milli + nd->cpu_free,
                                                        w->cfg[i].mem_mib + nd->mem_free);
                if (!ch)
                    continue;
                double gain = (ch->samples_per_s - w->thr[i]) / j->guarantee / (g - g0);
                if (gain > best && pays(w, i, ch->samples_per_s))
                    best = gain, bi = i, bch = ch;
            }
        }
        if (!bch || !move(w, bi, bch))
            return;
    }
}

static int work_init(work_t *w, const loom_sched_cluster_t *c, loom_rubick_job_t *jobs, size_t n,
                     const loom_rubick_opts_t *o, loom_err_t *err)
{
    memset(w, 0, sizeof *w);
    w->jobs = jobs;
    w->n = n;
    w->o = o;
    w->touched = calloc(n ? n : 1, sizeof *w->touched);
    w->start = calloc(n ? n : 1, sizeof *w->start);
    w->held = calloc(n ? n : 1, sizeof *w->held);
    w->cfg = calloc(n ? n : 1, sizeof *w->cfg);
    w->alloc = calloc(n ? n : 1, sizeof *w->alloc);
    w->thr = calloc(n ? n : 1, sizeof *w->thr);
    w->give = calloc(n ? n : 1, sizeof *w->give);
    if (!w->touched || !w->start || !w->held || !w->cfg || !w->alloc || !w->thr || !w->give)
        return loom_err_set(err, LOOM_ENOMEM, "rubick: out of memory");
    int rc = loom_sched_cluster_copy(&w->c, c, err);
    if (rc)
        return rc;
    w->c.frees = 0;
    for (size_t i = 0; i < n; i++)
        if (jobs[i].running) {
            w->held[i] = true;
            w->cfg[i] = jobs[i].cur;
            w->alloc[i] = jobs[i].alloc;
            loom_rubick_estimate_t e;
            loom_rubick_predict(jobs[i].model, o->device, &jobs[i].fit, jobs[i].spec->global_batch,
                                &jobs[i].cur, &e);
            w->thr[i] = e.samples_per_s;
        }
    return LOOM_OK;
}

static void work_free(work_t *w)
{
    if (w->c.nodes)
        loom_sched_cluster_free(&w->c);
    free(w->touched);
    free(w->start);
    free(w->held);
    free(w->cfg);
    free(w->alloc);
    free(w->thr);
    free(w->give);
}

static bool same_config(const loom_rubick_config_t *a, const loom_rubick_config_t *b)
{
    return a->plan.gpus == b->plan.gpus && a->plan.accum == b->plan.accum &&
           a->plan.recompute == b->plan.recompute && a->plan.zero == b->plan.zero &&
           a->plan.offload == b->plan.offload && a->cpu_milli == b->cpu_milli &&
           a->mem_mib == b->mem_mib;
}

int loom_rubick_decide(const loom_sched_cluster_t *c, loom_rubick_job_t *jobs, size_t n,
                       const loom_rubick_opts_t *o, loom_rubick_decision_t *out, size_t *nout,
                       loom_err_t *err)
{
    *nout = 0;
    work_t w;
    int rc = work_init(&w, c, jobs, n, o, err);
    if (rc) {
        work_free(&w);
        return rc;
    }
    bool reconf = o->mode != LOOM_RUBICK_FIXED && part(o, LOOM_RUBICK_PART_RECONF);
    for (size_t i = 0; i < n; i++)
        if (!jobs[i].running)
            admit(&w, i, reconf && o->mode != LOOM_RUBICK_SYNERGY);
    if (reconf) { /* running jobs are changed */
        replan(&w);
        grow(&w);
    }
    for (size_t i = 0; i < n; i++) {
        if (!w.touched[i] || !w.held[i])
            continue;
        if (!w.start[i] && same_config(&w.cfg[i], &jobs[i].cur) &&
            w.alloc[i].ngpus == jobs[i].alloc.ngpus &&
            memcmp(w.alloc[i].gpus, jobs[i].alloc.gpus, (size_t)w.alloc[i].ngpus) == 0)
            continue; /* back where it was */
        out[(*nout)++] =
            (loom_rubick_decision_t){jobs[i].id, w.start[i], w.cfg[i], w.alloc[i], w.thr[i]};
    }
    work_free(&w);
    return LOOM_OK;
}
