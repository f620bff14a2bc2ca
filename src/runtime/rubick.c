/* runtime/rubick.c — Rubick's policy inside the scheduling step.
 *
 * Jobs whose "reconfig" names a model are Rubick's: the step hands them,
 * pending and running, to loom_rubick_decide (libloom's rubick part) over
 * the runtime's cluster model, which already holds every other job's
 * allocation, and carries its decisions out as START and RECONFIGURE
 * actions with the chosen configuration. Black-box jobs are left to the
 * queue and placement policies (the pending pass that follows).
 *
 * The runtime has no view of a job's real progress, so it counts it as the
 * simulator does: at the model's throughput of what the job runs, less the
 * pause of each reconfiguration; a job's work is its guarantee times its
 * time limit. Decisions are taken when the jobs or the resources in use
 * change, and every period.
 *
 * With hold_until_reconfigured, what a reconfiguration gives up (GPUs,
 * CPUs, memory the old process still runs on while it checkpoints) stays
 * held in the model until the caller says the old process is gone
 * (loom_runtime_reconfigured), the job is removed or requeued. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_int.h"

static int mode_parse(const char *name, loom_rubick_mode_t *out, unsigned *parts, loom_err_t *err)
{
    static const struct {
        const char *name;
        loom_rubick_mode_t mode;
        unsigned parts;
    } modes[] = {{"rubick", LOOM_RUBICK_FULL, LOOM_RUBICK_PART_ALL},
                 {"elastic", LOOM_RUBICK_ELASTIC, 0},
                 {"synergy", LOOM_RUBICK_SYNERGY, 0},
                 {"fixed", LOOM_RUBICK_FIXED, 0},
                 /* Rubick with one part alone (the decomposition) */
                 {"rubick-plan", LOOM_RUBICK_FULL, LOOM_RUBICK_PART_PLAN},
                 {"rubick-cpu", LOOM_RUBICK_FULL, LOOM_RUBICK_PART_CPU},
                 {"rubick-reconf", LOOM_RUBICK_FULL, LOOM_RUBICK_PART_RECONF}};
    for (size_t k = 0; k < sizeof modes / sizeof *modes; k++)
        if (!name || strcmp(name, modes[k].name) == 0) {
            *out = modes[k].mode;
            *parts = modes[k].parts;
            return LOOM_OK;
        }
    return loom_err_set(err, LOOM_EINVAL,
                        "rubick mode '%.40s': expected rubick, rubick-plan, rubick-cpu, "
                        "rubick-reconf, elastic, synergy or fixed",
                        name);
}

int rt__rubick_config(loom_runtime_t *rt, const loom_runtime_rubick_t *cfg, loom_err_t *err)
{
    if (!cfg)
        return LOOM_OK;
    loom_rubick_mode_t mode;
    unsigned parts;
    int rc = mode_parse(cfg->mode, &mode, &parts, err);
    if (rc != LOOM_OK)
        return rc;
    rt->rb_on = true;
    rt->rb = *cfg;
    rt->rb.mode = NULL; /* the caller's pointer is not kept */
    if (!(rt->rb.reconf_cost_s > 0))
        rt->rb.reconf_cost_s = 30;
    if (!(rt->rb.min_gain >= 0))
        rt->rb.min_gain = 0.05;
    if (!(rt->rb.period_s > 0))
        rt->rb.period_s = 60;
    if (!(rt->rb.work_s > 0))
        rt->rb.work_s = 3600;
    rt->rb_opts = (loom_rubick_opts_t){.mode = mode,
                                       .parts = parts,
                                       .device = &rt->rb.device,
                                       .reconf_cost_s = rt->rb.reconf_cost_s,
                                       .min_gain = rt->rb.min_gain};
    rt->rb_next_s = -INFINITY;
    return LOOM_OK;
}

/* The next periodic decision, while the policy has jobs. */
double rt__rubick_wakeup(const loom_runtime_t *rt)
{
    if (!rt->rb_on || !(rt->rb_next_s > rt->now))
        return INFINITY;
    for (size_t k = 0; k < rt->nact; k++)
        if (rt->act[k]->rb)
            return rt->rb_next_s;
    for (size_t k = 0; k < rt->npend; k++)
        if (rt->pend[k].j->rb && !rt->pend[k].j->dead)
            return rt->rb_next_s;
    for (size_t k = 0; k < rt->nfresh; k++)
        if (((const rjob_t *)rt->fresh[k]->user)->rb)
            return rt->rb_next_s;
    return INFINITY;
}

/* A new job: Rubick's when the policy is on and its spec names a model
 * whose asked configuration fits the device; else a black box. */
void rt__rubick_new(loom_runtime_t *rt, rjob_t *j, const loom_runtime_job_t *job)
{
    const loom_rubick_spec_t *s = job->reconfig;
    j->job.reconfig = NULL; /* the caller's pointer is not kept */
    if (!rt->rb_on || !s || !s->reconfigurable || !loom_rubick_model_find(s->model))
        return;
    rt_rubick_t *rb = calloc(1, sizeof *rb);
    if (!rb)
        return;
    rb->spec = *s;
    rb->job.id = job->id;
    rb->job.spec = &rb->spec;
    rb->job.model = loom_rubick_model_find(s->model);
    rb->job.fit = (loom_rubick_fit_t){1, 1, 0, 1};
    /* coefficients fitted to the job's first measured steps, if it has any */
    if (s->nmeasured && loom_rubick_fit(rb->job.model, &rt->rb.device, s->global_batch, s->measured,
                                        s->nmeasured, &rb->job.fit, NULL) != LOOM_OK)
        rb->job.fit = (loom_rubick_fit_t){1, 1, 0, 1};
    rb->job.submit_s = job->submit_s;
    if (loom_rubick_job_prepare(&rb->job, &rt->rb_opts, NULL) != LOOM_OK) {
        free(rb);
        return;
    }
    double work = job->time_limit_s > 0 ? job->time_limit_s : rt->rb.work_s;
    rb->total = rb->job.guarantee * work;
    j->rb = rb;
}

/* What a configuration's request is. */
static loom_sched_req_t req_of(const loom_rubick_config_t *c)
{
    return (loom_sched_req_t){.cpu_milli = c->cpu_milli,
                              .mem_mib = c->mem_mib,
                              .num_gpus = c->plan.gpus,
                              .gpu_milli = LOOM_SCHED_MILLI};
}

static void set_running(loom_runtime_t *rt, rt_rubick_t *rb, const loom_rubick_config_t *c,
                        double thr)
{
    rb->job.cur = *c;
    rb->thr = thr;
    rb->last_s = rt->now;
}

/* A job found running (loomd restarted): as asked, on the GPUs it holds. */
void rt__rubick_adopted(loom_runtime_t *rt, rjob_t *j)
{
    rt_rubick_t *rb = j->rb;
    if (!rb)
        return;
    loom_rubick_config_t c = {rb->spec.asked, j->alloc.req.cpu_milli, j->alloc.req.mem_mib};
    c.plan.gpus = j->alloc.ngpus > 0 ? j->alloc.ngpus : rb->spec.asked.gpus;
    loom_rubick_estimate_t e;
    loom_rubick_predict(rb->job.model, &rt->rb.device, &rb->job.fit, rb->spec.global_batch, &c, &e);
    set_running(rt, rb, &c, e.samples_per_s > 0 ? e.samples_per_s : rb->job.guarantee);
    rb->start_s = rb->last_s = j->resumed_s;
}

/* Progress of the running jobs up to now. */
static void progress(loom_runtime_t *rt)
{
    for (size_t k = 0; k < rt->nact; k++) {
        rt_rubick_t *rb = rt->act[k]->rb;
        if (!rb || !rt->act[k]->held)
            continue;
        double from = fmax(rb->last_s, rb->pause_until);
        if (rt->now > from)
            rb->done += rb->thr * (rt->now - from);
        rb->last_s = rt->now;
    }
}

/* What the decisions watch: jobs and the resources in use. */
static void seen_now(const loom_runtime_t *rt, uint64_t seen[3])
{
    seen[0] = rt->nact;
    seen[1] = rt->npend;
    seen[2] = (uint64_t)rt->cluster.gpu_milli_used;
}

/* Re-decide when jobs came or went, resources in use moved (other than by
 * the last decision itself), or the period passed. */
static bool due(loom_runtime_t *rt)
{
    uint64_t seen[3];
    seen_now(rt, seen);
    bool moved = memcmp(seen, rt->rb_seen, sizeof seen) != 0;
    if (!moved && rt->now < rt->rb_next_s)
        return false;
    rt->rb_next_s = rt->now + rt->rb.period_s;
    return true;
}

/* The end of a step in which the policy decided: its own starts and
 * changes are no reason to decide again. */
void rt__rubick_step_done(loom_runtime_t *rt)
{
    if (rt->rb_decided)
        seen_now(rt, rt->rb_seen);
    rt->rb_decided = false;
}

static int cmp_id(const void *x, const void *y)
{
    uint64_t a = (*(rjob_t *const *)x)->job.id, b = (*(rjob_t *const *)y)->job.id;
    return a < b ? -1 : a > b;
}

/* The jobs for the policy: running ones by id (the order of submission,
 * whatever order the running array is in), then pending ones in queue
 * order. */
static size_t gather(loom_runtime_t *rt, rjob_t **who, loom_rubick_job_t *jobs, size_t max)
{
    size_t n = 0;
    for (size_t k = 0; k < rt->nact && n < max; k++)
        if (rt->act[k]->rb && rt->act[k]->held)
            who[n++] = rt->act[k];
    qsort(who, n, sizeof *who, cmp_id);
    for (size_t k = 0; k < n; k++) {
        rjob_t *j = who[k];
        rt_rubick_t *rb = j->rb;
        jobs[k] = rb->job;
        jobs[k].running = true;
        jobs[k].alloc = j->alloc;
        jobs[k].remaining = fmax(rb->total - rb->done, rb->job.guarantee);
        jobs[k].lead = rb->done - rb->job.guarantee * (rt->now - rb->start_s);
    }
    for (size_t k = 0; k < rt->npend && n < max; k++) {
        rjob_t *j = rt->pend[k].j;
        if (!j->rb || j->dead || j->reject || j->state != LOOM_RUNTIME_PENDING ||
            rt__blocked(rt, j) != LOOM_RUNTIME_REASON_NONE)
            continue;
        who[n] = j;
        jobs[n] = j->rb->job;
        jobs[n].running = false;
        jobs[n].remaining = fmax(j->rb->total - j->rb->done, j->rb->job.guarantee);
        jobs[n].lead = 0;
        n++;
    }
    return n;
}

static void start(loom_runtime_t *rt, rjob_t *j, const loom_rubick_decision_t *d)
{
    loom_sched_req_t q = req_of(&d->config);
    const loom_sched_alloc_t *a = &d->alloc;
    if (loom_vec_reserve((void **)&rt->act, &rt->cap_act, rt->nact + 1, sizeof *rt->act,
                         RT_ARRAY_MIN_CAP)) {
        rt->nomem++;
        return;
    }
    if (loom_sched_alloc(&rt->cluster, a->node, &q, a->gpus, a->ngpus, &j->alloc, NULL) != LOOM_OK)
        return;
    char why[LOOM_SCHED_NAME_MAX + 96];
    snprintf(why, sizeof why, "placed on %s by rubick: %d GPU(s), %.1f samples/s predicted",
             rt->cluster.nodes[a->node].name, d->config.plan.gpus, d->samples_per_s);
    loom_runtime_action_t act = {
        .kind = LOOM_RUNTIME_START, .id = j->job.id, .alloc = j->alloc, .reason = why};
    act.config = &d->config;
    act.samples_per_s = d->samples_per_s;
    if ((rt->apply ? rt->apply(rt->ctx, &act) : LOOM_OK) != LOOM_OK) {
        loom_sched_free(&rt->cluster, &j->alloc, NULL);
        loom_runtime_remove(rt, j->job.id, rt->now); /* its start failed: dropped */
        return;
    }
    rt->applied++;
    rt->nran -= j->q.last_run_s > 0;
    j->job.req = q;
    rt__started(rt, j);
    j->rb->start_s = rt->now;
    j->rb->pause_until = -INFINITY;
    set_running(rt, j->rb, &d->config, d->samples_per_s);
}

/* What j gave up from old to neu (whole GPUs, CPUs, memory), held in the
 * model while its old process checkpoints (hold_until_reconfigured). */
static void hold_given_up(loom_runtime_t *rt, rjob_t *j, const loom_sched_alloc_t *old,
                          const loom_sched_alloc_t *neu)
{
    bool same = old->node == neu->node;
    uint8_t gpus[LOOM_SCHED_MAX_GPUS];
    int n = 0;
    for (int k = 0; k < old->ngpus; k++) {
        bool kept = false;
        for (int m = 0; same && m < neu->ngpus; m++)
            kept = kept || neu->gpus[m] == old->gpus[k];
        if (!kept)
            gpus[n++] = old->gpus[k];
    }
    loom_sched_req_t q = {.cpu_milli =
                              same ? old->req.cpu_milli - neu->req.cpu_milli : old->req.cpu_milli,
                          .mem_mib = same ? old->req.mem_mib - neu->req.mem_mib : old->req.mem_mib,
                          .num_gpus = n,
                          .gpu_milli = n ? old->req.gpu_milli : 0,
                          .gpu_mem_mib = n ? old->req.gpu_mem_mib : 0};
    q.cpu_milli = q.cpu_milli > 0 ? q.cpu_milli : 0;
    q.mem_mib = q.mem_mib > 0 ? q.mem_mib : 0;
    if (!n && !q.cpu_milli && !q.mem_mib)
        return; /* it gave up nothing */
    /* cannot fail: old was free a moment ago, and neu took none of this */
    j->rb->draining =
        loom_sched_alloc(&rt->cluster, old->node, &q, gpus, n, &j->rb->drain, NULL) == LOOM_OK;
}

void rt__rubick_release(loom_runtime_t *rt, rjob_t *j)
{
    if (!j->rb || !j->rb->draining)
        return;
    loom_sched_free(&rt->cluster, &j->rb->drain, NULL);
    j->rb->draining = false;
}

size_t rt__rubick_drains(const loom_runtime_t *rt, loom_sched_alloc_t *out)
{
    size_t n = 0;
    for (size_t k = 0; k < rt->nact; k++)
        if (rt->act[k]->rb && rt->act[k]->rb->draining)
            out[n++] = rt->act[k]->rb->drain;
    return n;
}

int loom_runtime_reconfigured(loom_runtime_t *rt, uint64_t id, double now_s)
{
    (void)now_s;
    rjob_t *j = rt__find(rt, id);
    if (!j)
        return LOOM_ENOTFOUND;
    if (!j->rb || !j->rb->draining)
        return LOOM_ESTATE;
    rt__rubick_release(rt, j);
    return LOOM_OK;
}

/* j's old allocation is already out of the model. */
static void reconfigure(loom_runtime_t *rt, rjob_t *j, const loom_sched_alloc_t *old,
                        const loom_rubick_decision_t *d)
{
    loom_sched_req_t q = req_of(&d->config);
    const loom_sched_alloc_t *a = &d->alloc;
    loom_sched_alloc_t neu;
    bool ok = loom_sched_alloc(&rt->cluster, a->node, &q, a->gpus, a->ngpus, &neu, NULL) == LOOM_OK;
    char why[160];
    snprintf(why, sizeof why, "reconfigured by rubick: %d to %d GPU(s), %.1f to %.1f samples/s",
             old->ngpus, d->config.plan.gpus, j->rb->thr, d->samples_per_s);
    loom_runtime_action_t act = {.kind = LOOM_RUNTIME_RECONFIGURE,
                                 .id = j->job.id,
                                 .alloc = neu,
                                 .old_alloc = *old,
                                 .reason = why,
                                 .config = &d->config,
                                 .samples_per_s = d->samples_per_s};
    if (ok && (rt->apply ? rt->apply(rt->ctx, &act) : LOOM_OK) == LOOM_OK) {
        rt->applied++;
        rt__account(j, rt->now);
        j->alloc = neu;
        j->job.req = q;
        j->resumed_s = rt->now;
        j->rb->reconfigs++;
        j->rb->pause_until = rt->now + rt->rb.reconf_cost_s;
        set_running(rt, j->rb, &d->config, d->samples_per_s);
        if (rt->rb.hold_until_reconfigured)
            hold_given_up(rt, j, old, &neu);
        return;
    }
    if (ok)
        loom_sched_free(&rt->cluster, &neu, NULL);
    /* refused or no longer fits: it keeps what it had */
    loom_sched_alloc(&rt->cluster, old->node, &old->req, old->gpus, old->ngpus, &j->alloc, NULL);
}

void rt__rubick_pass(loom_runtime_t *rt)
{
    if (!rt->rb_on)
        return;
    progress(rt);
    if (!due(rt))
        return;
    size_t max = rt->nact + rt->npend;
    rjob_t **who = calloc(max + 1, sizeof *who);
    loom_rubick_job_t *jobs = calloc(max + 1, sizeof *jobs);
    loom_rubick_decision_t *dec = calloc(max + 1, sizeof *dec);
    loom_sched_alloc_t *old = calloc(max + 1, sizeof *old);
    size_t n = who && jobs && dec && old ? gather(rt, who, jobs, max) : 0, nd = 0;
    for (size_t k = 0; k < n; k++) /* the policy reads spec through job.spec */
        jobs[k].spec = &who[k]->rb->spec;
    if (n && loom_rubick_decide(&rt->cluster, jobs, n, &rt->rb_opts, dec, &nd, NULL) == LOOM_OK) {
        /* old allocations out first, then the new ones in */
        for (size_t k = 0; k < nd; k++) {
            rjob_t *j = rt__find(rt, dec[k].id);
            if (j && !dec[k].start && j->held && !(j->rb && j->rb->draining)) {
                old[k] = j->alloc;
                loom_sched_free(&rt->cluster, &j->alloc, NULL);
            }
        }
        for (size_t k = 0; k < nd; k++) {
            rjob_t *j = rt__find(rt, dec[k].id);
            if (!j || !j->rb)
                continue;
            if (dec[k].start && j->state == LOOM_RUNTIME_PENDING)
                start(rt, j, &dec[k]);
            else if (!dec[k].start && j->held && !j->rb->draining)
                reconfigure(rt, j, &old[k], &dec[k]); /* not again while it checkpoints */
        }
    }
    rt->rb_decided = true;
    free(who);
    free(jobs);
    free(dec);
    free(old);
}
