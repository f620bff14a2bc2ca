/* sim/rubick.c — the Rubick experiment: reconfigurable jobs in virtual
 * time.
 *
 * Policies "rubick", "elastic", "synergy" and "fixed" run through loomd's
 * runtime: the very step loomd --rubick runs (runtime/rubick.c, its pass
 * calling loom_rubick_decide in that mode) decides when it is stepped at
 * arrivals, completions and its period, and this file carries out its
 * START and RECONFIGURE actions in virtual time. A job's work is counted
 * in samples: the asked configuration's throughput times the trace's run
 * time (given to the runtime as the job's time limit, so that it counts the
 * same work). A running job progresses at its configuration's throughput
 * on the job's hidden truth (loom_sim_rjob_t's truth: not the model the
 * policy predicts with, which it may fit to the job's measured steps); a
 * reconfiguration pauses it for the checkpoint-restart cost. A job counts
 * as below its guarantee if it is ever given a configuration truly slower
 * than the one it asked for, or ends later after its start than its run
 * time at that configuration (a pause it did not make up).
 *
 * "fifo", "tiresias" and "gandiva" run the very same jobs through the
 * runtime's queue and placement policies (sim dynamic mode): black boxes
 * that run their trace duration on the asked resources; a job that
 * tiresias preempts or gandiva suspends pays the same checkpoint-restart
 * cost as a reconfiguration when it resumes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/runtime.h"
#include "loom/sim.h"

void loom_sim_rresult_free(loom_sim_rresult_t *r)
{
    if (!r)
        return;
    free(r->jcts);
    r->jcts = NULL;
}

static void finish_stats(loom_sim_rresult_t *res, double first, double last)
{
    double sum = 0;
    for (size_t i = 0; i < res->completed; i++)
        sum += res->jcts[i];
    loom_stats_sort(res->jcts, res->completed);
    res->mean_jct_s = res->completed ? sum / (double)res->completed : 0;
    res->p99_jct_s =
        res->completed ? loom_stats_quantile_lower(res->jcts, res->completed, 0.99) : 0;
    res->makespan_s = last - first;
}

/* ---------------------------------------------------- loomd's runtime */

static int run_runtime(const loom_sched_cluster_t *c, const loom_sim_rworkload_t *w,
                       const char *queue, double timeslice_s, double preempt_cost_s,
                       loom_sim_rresult_t *res, loom_err_t *err)
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
    /* a suspended job resumes from its checkpoint: what a reconfiguration pauses */
    loom_sim_opts_t o = {.policy = "bestfit",
                         .queue = queue,
                         .seed = 42,
                         .timeslice_s = timeslice_s,
                         .preempt_cost_s = preempt_cost_s};
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

/* ------------------------------------- Rubick's policy, in the runtime */

/* A job's progress in virtual time, as the runtime's actions set it. */
typedef struct sj {
    double total, done; /* samples */
    double guarantee;   /* samples/s of the asked configuration */
    double start_s, pause_until;
    double thr; /* samples/s while not paused */
    bool running;
    int reconfigs;
    bool below;
} sj_t;

typedef struct rrun {
    loom_runtime_t *rt;
    const loom_sim_rworkload_t *w;
    const loom_rubick_device_t *device;
    double reconf_cost_s;
    sj_t *s;
    double now, util_area, first, last;
    int rc; /* an action the experiment cannot carry out */
    loom_sim_rresult_t *res;
} rrun_t;

/* Carries out the runtime's actions in virtual time: a start runs the job
 * at the configuration's predicted throughput, a reconfiguration pauses it
 * for the checkpoint-restart cost and then runs it at the new one. */
static int apply(void *ctx, const loom_runtime_action_t *a)
{
    rrun_t *r = ctx;
    sj_t *s = &r->s[a->id - 1];
    if (a->kind != LOOM_RUNTIME_START && a->kind != LOOM_RUNTIME_RECONFIGURE)
        return LOOM_OK; /* notes; nothing else comes for Rubick's jobs */
    if (!a->config || !(a->samples_per_s > 0)) {
        r->rc = LOOM_ESTATE; /* a black box: its asked configuration does not fit the device */
        return LOOM_ESTATE;
    }
    if (a->kind == LOOM_RUNTIME_START) {
        s->running = true;
        s->start_s = r->now;
    } else {
        s->reconfigs++;
        s->pause_until = r->now + r->reconf_cost_s;
    }
    /* it runs on its truth, whatever the policy's model predicted */
    s->thr = loom_sim_rubick_true_rate(&r->w->jobs[a->id - 1], r->device, a->config);
    if (!(s->thr > 0)) {
        r->rc = LOOM_ESTATE; /* the chosen configuration does not fit the truth */
        return LOOM_ESTATE;
    }
    /* the guarantee, on the truth: never a slower configuration than the one asked */
    if (s->thr < s->guarantee * (1 - 1e-12))
        s->below = true;
    return LOOM_OK;
}

/* Progress from r->now to t. */
static void advance(rrun_t *r, double t)
{
    const loom_sched_cluster_t *c = loom_runtime_cluster(r->rt);
    r->util_area += (double)c->gpu_milli_used / LOOM_SCHED_MILLI * (t - r->now);
    for (size_t i = 0; i < r->w->n; i++) {
        sj_t *s = &r->s[i];
        double from = fmax(r->now, s->pause_until);
        if (s->running && t > from)
            s->done += s->thr * (t - from);
    }
    r->now = t;
}

/* Jobs whose work is done leave the runtime. */
static void complete(rrun_t *r)
{
    for (size_t i = 0; i < r->w->n; i++) {
        sj_t *s = &r->s[i];
        if (!s->running || s->done < s->total * (1 - 1e-9))
            continue;
        s->running = false;
        loom_runtime_remove(r->rt, i + 1, r->now);
        /* the guarantee: it ends no later than at its asked configuration */
        if (r->now - s->start_s > r->w->jobs[i].duration_s * (1 + 1e-9) + 1e-6)
            s->below = true;
        r->res->jcts[r->res->completed++] = r->now - r->w->jobs[i].submit_s;
        r->last = r->now;
    }
}

/* The next time anything happens after r->now. */
static double next_event(const rrun_t *r, size_t next)
{
    double t = next < r->w->n ? r->w->jobs[next].submit_s : INFINITY;
    for (size_t i = 0; i < r->w->n; i++) {
        const sj_t *s = &r->s[i];
        if (!s->running)
            continue;
        if (s->pause_until > r->now)
            t = fmin(t, s->pause_until);
        t = fmin(t, fmax(r->now, s->pause_until) + (s->total - s->done) / s->thr);
    }
    return fmin(t, loom_runtime_next_wakeup(r->rt));
}

/* A job arrives: the runtime's job with its reconfig spec, its time limit
 * the trace's run time (so the runtime counts the same work: its
 * guarantee times that). */
static int arrive(rrun_t *r, size_t i, loom_err_t *err)
{
    const loom_sim_rjob_t *j = &r->w->jobs[i];
    loom_runtime_job_t rj = {.id = i + 1,
                             .req = {.cpu_milli = j->spec.asked_cpu,
                                     .mem_mib = j->spec.asked_mem,
                                     .num_gpus = j->spec.asked.gpus,
                                     .gpu_milli = LOOM_SCHED_MILLI},
                             .submit_s = j->submit_s,
                             .time_limit_s = j->duration_s,
                             .reconfig = &j->spec};
    int rc = loom_runtime_submit(r->rt, &rj, err);
    if (rc)
        return rc;
    loom_runtime_info_t info;
    loom_runtime_get(r->rt, i + 1, &info);
    if (!info.rubick)
        return loom_err_set(err, LOOM_EINVAL,
                            "rubick: job %zu: its asked configuration does not fit the device", i);
    /* the work and the guarantee on the job's truth (the runtime counts
     * them on its model) */
    loom_rubick_config_t asked = {j->spec.asked, j->spec.asked_cpu, j->spec.asked_mem};
    r->s[i].guarantee = loom_sim_rubick_true_rate(j, r->device, &asked);
    r->s[i].total = r->s[i].guarantee * j->duration_s;
    return LOOM_OK;
}

static int run_rubick(rrun_t *r, loom_err_t *err)
{
    size_t next = 0, n = r->w->n;
    r->first = n ? r->w->jobs[0].submit_s : 0;
    r->now = r->first;
    while (r->res->completed < n) {
        double t = next_event(r, next);
        if (!isfinite(t))
            return loom_err_set(err, LOOM_ESTATE,
                                "rubick: %zu jobs can never start (larger than any node)",
                                n - r->res->completed);
        advance(r, t);
        complete(r);
        int rc;
        while (next < n && r->w->jobs[next].submit_s <= r->now)
            if ((rc = arrive(r, next++, err)))
                return rc;
        loom_runtime_step(r->rt, r->now, apply, r);
        if (r->rc)
            return loom_err_set(err, r->rc, "rubick: a job ran as a black box");
    }
    return LOOM_OK;
}

int loom_sim_rubick_run(const loom_sched_cluster_t *c, const loom_sim_rworkload_t *w,
                        const char *policy, const loom_rubick_opts_t *o, double period_s,
                        double timeslice_s, loom_sim_rresult_t *res, loom_err_t *err)
{
    memset(res, 0, sizeof *res);
    size_t pl = strlen(policy);
    if (pl > 5 && !strcmp(policy + pl - 5, "+plan")) {
        /* the same policy, given the best plan at admission */
        char base[32];
        if (pl - 5 >= sizeof base)
            return loom_err_set(err, LOOM_EINVAL, "policy '%s': name too long", policy);
        memcpy(base, policy, pl - 5);
        base[pl - 5] = '\0';
        loom_sim_rworkload_t pw;
        int rc = loom_sim_rubick_plan_aware(w, o->device, &pw, err);
        if (rc == LOOM_OK)
            rc = loom_sim_rubick_run(c, &pw, base, o, period_s, timeslice_s, res, err);
        loom_sim_rubick_workload_free(&pw);
        return rc;
    }
    int64_t t0 = loom_time_mono_ns();
    res->jobs = w->n;
    int rc;
    double cap = (double)c->gpu_milli_total / LOOM_SCHED_MILLI;
    if (!strcmp(policy, "gandiva") && !(o->reconf_cost_s < timeslice_s))
        return loom_err_set(err, LOOM_EINVAL,
                            "gandiva: a resume's cost (%g s) must be below the quantum (%g s), "
                            "else no job progresses",
                            o->reconf_cost_s, timeslice_s);
    if (!strcmp(policy, "fifo") || !strcmp(policy, "tiresias") || !strcmp(policy, "gandiva")) {
        rc = run_runtime(c, w, strcmp(policy, "tiresias") ? "fifo" : "tiresias",
                         strcmp(policy, "gandiva") ? 0 : timeslice_s, o->reconf_cost_s, res, err);
        res->gpu_hours = res->util_pct / 100 * cap * res->makespan_s / 3600;
        res->seconds = (double)(loom_time_mono_ns() - t0) / 1e9;
        return rc;
    }
    if (strcmp(policy, "rubick") && strcmp(policy, "elastic") && strcmp(policy, "synergy") &&
        strcmp(policy, "fixed") && strcmp(policy, "rubick-plan") && strcmp(policy, "rubick-cpu") &&
        strcmp(policy, "rubick-reconf"))
        return loom_err_set(err, LOOM_EINVAL,
                            "policy '%s': expected rubick, rubick-plan, rubick-cpu, "
                            "rubick-reconf, elastic, synergy, fixed, fifo, tiresias or gandiva, "
                            "each optionally followed by +plan",
                            policy);
    if (!(period_s > 0))
        return loom_err_set(err, LOOM_EINVAL, "rubick: expected a period > 0");
    if (!(o->reconf_cost_s > 0))
        return loom_err_set(err, LOOM_EINVAL, "rubick: expected a reconfiguration cost > 0 s");
    /* the runtime's rubick pass in this mode: what loomd runs */
    loom_runtime_rubick_t rb = {.device = *o->device,
                                .reconf_cost_s = o->reconf_cost_s,
                                .min_gain = o->min_gain,
                                .period_s = period_s,
                                .mode = policy};
    loom_runtime_config_t cfg = {.queue = "fifo", .rubick = &rb};
    rrun_t r = {.w = w, .device = o->device, .reconf_cost_s = o->reconf_cost_s, .res = res};
    loom_sched_cluster_t empty;
    r.s = calloc(w->n ? w->n : 1, sizeof *r.s);
    res->jcts = calloc(w->n ? w->n : 1, sizeof *res->jcts);
    if (!r.s || !res->jcts)
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
    else if ((rc = loom_sched_cluster_copy(&empty, c, err)) == LOOM_OK) {
        loom_sched_cluster_reset(&empty);
        rc = loom_runtime_new(&empty, &cfg, &r.rt, err);
        loom_sched_cluster_free(&empty);
        if (rc == LOOM_OK)
            rc = run_rubick(&r, err);
        loom_runtime_free(r.rt);
    }
    if (rc == LOOM_OK) {
        size_t nre = 0;
        for (size_t i = 0; i < w->n; i++) {
            nre += (size_t)r.s[i].reconfigs;
            res->below_guarantee += r.s[i].below;
        }
        res->reconfigs_per_job = w->n ? (double)nre / (double)w->n : 0;
        finish_stats(res, r.first, r.last);
        res->gpu_hours = r.util_area / 3600;
        res->util_pct = res->makespan_s > 0 ? 100 * r.util_area / (cap * res->makespan_s) : 0;
    } else {
        loom_sim_rresult_free(res);
    }
    free(r.s);
    res->seconds = (double)(loom_time_mono_ns() - t0) / 1e9;
    return rc;
}
