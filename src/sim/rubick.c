/* sim/rubick.c — the Rubick experiment: reconfigurable jobs in virtual
 * time.
 *
 * Policies "rubick", "elastic", "synergy" and "fixed" run libloom's Rubick
 * policy (loom_rubick_decide, in that mode) over a job's work counted in
 * samples: the asked configuration's throughput times the trace's run
 * time. A running job progresses at its configuration's throughput from
 * the performance model; a reconfiguration pauses it for the
 * checkpoint-restart cost. Decisions are taken at arrivals, completions and
 * every period_s. A job counts as below its guarantee if it is ever given a
 * configuration slower than the one it asked for, or ends later after its
 * start than its run time at that configuration (a pause it did not make
 * up).
 *
 * "fifo", "tiresias" and "gandiva" run the very same jobs through loomd's
 * runtime (sim dynamic mode): black boxes that run their trace duration on
 * the asked resources. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/sim.h"

void loom_sim_rresult_free(loom_sim_rresult_t *r)
{
    if (!r)
        return;
    free(r->jcts);
    r->jcts = NULL;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static void finish_stats(loom_sim_rresult_t *res, double first, double last)
{
    double sum = 0;
    for (size_t i = 0; i < res->completed; i++)
        sum += res->jcts[i];
    qsort(res->jcts, res->completed, sizeof *res->jcts, cmp_double);
    res->mean_jct_s = res->completed ? sum / (double)res->completed : 0;
    res->p99_jct_s =
        res->completed ? res->jcts[(size_t)floor(0.99 * (double)(res->completed - 1))] : 0;
    res->makespan_s = last - first;
}

/* ---------------------------------------------------- loomd's runtime */

static int run_runtime(const loom_sched_cluster_t *c, const loom_sim_rworkload_t *w,
                       const char *queue, double timeslice_s, loom_sim_rresult_t *res,
                       loom_err_t *err)
{
    loom_sim_trace_t t = {calloc(w->n, sizeof *t.tasks), w->n, w->n};
    if (!t.tasks)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    for (size_t i = 0; i < w->n; i++) {
        const loom_sim_rjob_t *j = &w->jobs[i];
        loom_sim_task_t *k = &t.tasks[i];
        snprintf(k->name, sizeof k->name, "job-%zu", i);
        k->req = (loom_sched_req_t){.cpu_milli = j->spec.asked_cpu,
                                    .mem_mib = j->spec.asked_mem,
                                    .num_gpus = j->spec.asked.gpus,
                                    .gpu_milli = LOOM_SCHED_MILLI};
        k->create_s = j->submit_s;
        k->duration_s = j->duration_s;
    }
    loom_sim_opts_t o = {
        .policy = "bestfit", .queue = queue, .seed = 42, .timeslice_s = timeslice_s};
    loom_sim_dynamic_result_t d;
    int rc = loom_sim_dynamic(c, &t, &o, &d, err);
    free(t.tasks);
    if (rc)
        return rc;
    res->completed = d.completed;
    res->jcts = d.jcts; /* taken over, ascending */
    d.jcts = NULL;
    res->mean_jct_s = d.mean_jct_s;
    res->p99_jct_s = d.p99_jct_s;
    res->makespan_s = d.makespan_s;
    res->util_pct = d.mean_util_pct;
    loom_sim_dynamic_result_free(&d);
    return LOOM_OK;
}

/* ------------------------------------------------- the Rubick policy */

typedef struct sj {
    double total, done; /* samples */
    double start_s, pause_until;
    double thr; /* samples/s while not paused */
    bool running, finished;
    int reconfigs;
    bool below;
} sj_t;

typedef struct rrun {
    loom_sched_cluster_t c;
    const loom_sim_rworkload_t *w;
    const loom_rubick_opts_t *o;
    sj_t *s;
    loom_rubick_job_t *act; /* active jobs, in arrival order */
    size_t nact;
    loom_rubick_decision_t *dec;
    double now, util_area, first, last;
    loom_sim_rresult_t *res;
} rrun_t;

static loom_rubick_job_t *find(rrun_t *r, uint64_t id)
{
    for (size_t k = 0; k < r->nact; k++)
        if (r->act[k].id == id)
            return &r->act[k];
    return NULL;
}

/* Progress from r->now to t; then completions. */
static bool advance(rrun_t *r, double t)
{
    bool changed = false;
    for (size_t k = 0; k < r->nact; k++) {
        loom_rubick_job_t *a = &r->act[k];
        sj_t *s = &r->s[a->id - 1];
        if (!s->running)
            continue;
        double from = fmax(r->now, s->pause_until);
        if (t > from)
            s->done += s->thr * (t - from);
        r->util_area += (double)a->cur.plan.gpus * (t - r->now);
    }
    r->now = t;
    for (size_t k = 0; k < r->nact;) {
        loom_rubick_job_t *a = &r->act[k];
        sj_t *s = &r->s[a->id - 1];
        if (s->running && s->done >= s->total * (1 - 1e-9)) {
            loom_sched_free(&r->c, &a->alloc, NULL);
            s->running = false;
            s->finished = true;
            /* the guarantee: it ends no later than at its asked configuration */
            if (t - s->start_s > r->w->jobs[a->id - 1].duration_s * (1 + 1e-9) + 1e-6)
                s->below = true;
            r->res->jcts[r->res->completed++] = t - r->w->jobs[a->id - 1].submit_s;
            r->last = t;
            memmove(a, a + 1, (r->nact - k - 1) * sizeof *a);
            r->nact--;
            changed = true;
            continue;
        }
        k++;
    }
    return changed;
}

/* The next time anything happens after r->now. */
static double next_event(const rrun_t *r, size_t next, double tick)
{
    double t = next < r->w->n ? r->w->jobs[next].submit_s : INFINITY;
    for (size_t k = 0; k < r->nact; k++) {
        const sj_t *s = &r->s[r->act[k].id - 1];
        if (!s->running)
            continue;
        double from = fmax(r->now, s->pause_until);
        if (s->pause_until > r->now)
            t = fmin(t, s->pause_until);
        t = fmin(t, from + (s->total - s->done) / s->thr);
    }
    return r->nact ? fmin(t, tick) : t;
}

static int decide(rrun_t *r, loom_err_t *err)
{
    for (size_t k = 0; k < r->nact; k++) {
        loom_rubick_job_t *a = &r->act[k];
        const sj_t *s = &r->s[a->id - 1];
        a->running = s->running;
        a->remaining = s->total - s->done;
        a->lead = s->running ? s->done - a->guarantee * (r->now - s->start_s) : 0;
    }
    size_t nd;
    int rc = loom_rubick_decide(&r->c, r->act, r->nact, r->o, r->dec, &nd, err);
    if (rc)
        return rc;
    for (size_t k = 0; k < nd; k++) /* old allocations out first */
        if (!r->dec[k].start)
            loom_sched_free(&r->c, &find(r, r->dec[k].id)->alloc, NULL);
    for (size_t k = 0; k < nd; k++) {
        const loom_rubick_decision_t *d = &r->dec[k];
        loom_rubick_job_t *a = find(r, d->id);
        sj_t *s = &r->s[d->id - 1];
        const loom_sched_alloc_t *al = &d->alloc;
        if ((rc = loom_sched_alloc(&r->c, al->node, &al->req, al->gpus, al->ngpus, &a->alloc, err)))
            return loom_err_prefix(err, "rubick: job %llu", (unsigned long long)d->id);
        a->cur = d->config;
        s->thr = d->samples_per_s;
        if (s->thr < a->guarantee * (1 - 1e-12)) /* the guarantee: never a slower configuration */
            s->below = true;
        if (d->start) {
            s->running = true;
            s->start_s = r->now;
        } else {
            s->reconfigs++;
            s->pause_until = r->now + r->o->reconf_cost_s;
        }
    }
    return LOOM_OK;
}

static int arrive(rrun_t *r, size_t i, loom_err_t *err)
{
    size_t nm;
    const loom_rubick_model_t *models = loom_sim_rubick_models(&nm);
    const loom_sim_rjob_t *j = &r->w->jobs[i];
    loom_rubick_job_t *a = &r->act[r->nact];
    memset(a, 0, sizeof *a);
    a->id = i + 1;
    a->spec = &j->spec;
    a->model = &models[j->model];
    a->fit = (loom_rubick_fit_t){1, 1, 0};
    a->submit_s = j->submit_s;
    int rc = loom_rubick_job_prepare(a, r->o, err);
    if (rc)
        return rc;
    r->s[i].total = a->guarantee * j->duration_s;
    r->nact++;
    return LOOM_OK;
}

static int run_rubick(rrun_t *r, double period_s, loom_err_t *err)
{
    size_t next = 0, n = r->w->n;
    r->first = n ? r->w->jobs[0].submit_s : 0;
    r->now = r->first;
    double tick = r->now + period_s;
    int rc = LOOM_OK;
    while (r->res->completed < n) {
        double t = next_event(r, next, r->o->mode == LOOM_RUBICK_FIXED ? INFINITY : tick);
        if (!isfinite(t))
            return loom_err_set(err, LOOM_ESTATE,
                                "rubick: %zu jobs can never start (larger than any node)",
                                n - r->res->completed);
        bool changed = advance(r, t);
        while (next < n && r->w->jobs[next].submit_s <= r->now) {
            if ((rc = arrive(r, next++, err)))
                return rc;
            changed = true;
        }
        if (r->now >= tick) {
            changed = true;
            tick = r->now + period_s;
        }
        if (changed && (rc = decide(r, err)))
            return rc;
    }
    return LOOM_OK;
}

static loom_rubick_mode_t mode_of(const char *policy)
{
    if (strcmp(policy, "rubick") == 0)
        return LOOM_RUBICK_FULL;
    if (strcmp(policy, "elastic") == 0)
        return LOOM_RUBICK_ELASTIC;
    if (strcmp(policy, "synergy") == 0)
        return LOOM_RUBICK_SYNERGY;
    return LOOM_RUBICK_FIXED;
}

int loom_sim_rubick_run(const loom_sched_cluster_t *c, const loom_sim_rworkload_t *w,
                        const char *policy, const loom_rubick_opts_t *o, double period_s,
                        double timeslice_s, loom_sim_rresult_t *res, loom_err_t *err)
{
    memset(res, 0, sizeof *res);
    int64_t t0 = loom_time_mono_ns();
    res->jobs = w->n;
    int rc;
    if (!strcmp(policy, "fifo") || !strcmp(policy, "tiresias") || !strcmp(policy, "gandiva")) {
        rc = run_runtime(c, w, strcmp(policy, "tiresias") ? "fifo" : "tiresias",
                         strcmp(policy, "gandiva") ? 0 : timeslice_s, res, err);
        res->seconds = (double)(loom_time_mono_ns() - t0) / 1e9;
        return rc;
    }
    if (strcmp(policy, "rubick") && strcmp(policy, "elastic") && strcmp(policy, "synergy") &&
        strcmp(policy, "fixed"))
        return loom_err_set(err, LOOM_EINVAL,
                            "policy '%s': expected rubick, elastic, synergy, fixed, fifo, "
                            "tiresias or gandiva",
                            policy);
    if (!(period_s > 0))
        return loom_err_set(err, LOOM_EINVAL, "rubick: expected a period > 0");
    loom_rubick_opts_t mo = *o;
    mo.mode = mode_of(policy);
    rrun_t r = {.w = w, .o = &mo, .res = res};
    r.s = calloc(w->n ? w->n : 1, sizeof *r.s);
    r.act = calloc(w->n ? w->n : 1, sizeof *r.act);
    r.dec = calloc(w->n ? w->n : 1, sizeof *r.dec);
    res->jcts = calloc(w->n ? w->n : 1, sizeof *res->jcts);
    if (!r.s || !r.act || !r.dec || !res->jcts)
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
    else if ((rc = loom_sched_cluster_copy(&r.c, c, err)) == LOOM_OK) {
        loom_sched_cluster_reset(&r.c);
        rc = run_rubick(&r, period_s, err);
        loom_sched_cluster_free(&r.c);
    }
    if (rc == LOOM_OK) {
        size_t nre = 0;
        for (size_t i = 0; i < w->n; i++) {
            nre += (size_t)r.s[i].reconfigs;
            res->below_guarantee += r.s[i].below;
        }
        res->reconfigs_per_job = w->n ? (double)nre / (double)w->n : 0;
        finish_stats(res, r.first, r.last);
        double cap = (double)c->gpu_milli_total / LOOM_SCHED_MILLI;
        res->util_pct = res->makespan_s > 0 ? 100 * r.util_area / (cap * res->makespan_s) : 0;
    } else {
        loom_sim_rresult_free(res);
    }
    free(r.s);
    free(r.act);
    free(r.dec);
    res->seconds = (double)(loom_time_mono_ns() - t0) / 1e9;
    return rc;
}
