/* sim/dynamic.c — arrivals and departures over time, through the runtime.
 *
 * Jobs arrive at their creation (due) time and run for their duration once
 * started. At every event time: departures first, then arrivals join the
 * runtime's queue, then one step of the runtime (libloom's runtime part, the
 * very step loomd takes): queue order, placement with backfill (greedy, or
 * with reservations from the jobs' time limits),
 * Gandiva's time-slicing when a quantum is given. The simulator applies the
 * step's actions in virtual time: a start schedules the job's departure, a
 * suspend stops its remaining run time and a resume continues it. A job
 * that would not fit even on the empty cluster is rejected by the runtime
 * and counted as unfit.
 *
 * Events are arrivals, departures and the runtime's own wake-ups (the end of
 * a time-slicing quantum).
 *
 * With users, each user's GPU-seconds are kept in all and over the
 * contended time (every user has a backlog), where fair share shows. */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/runtime.h"
#include "loom/sim.h"

#define TIMELINE_MIN_CAP 1024

void loom_sim_dynamic_result_free(loom_sim_dynamic_result_t *r)
{
    if (!r)
        return;
    free(r->timeline);
    r->timeline = NULL;
    r->ntimeline = 0;
    free(r->jcts);
    r->jcts = NULL;
    r->njcts = 0;
}

enum {
    JOB_FUTURE,
    JOB_PENDING,
    JOB_RUNNING,
    JOB_DONE,
    JOB_UNFIT,
    JOB_SUSPENDED,
    JOB_CANCELLED,
    JOB_REFUSED /* a submission quota refused it */
};

typedef struct job {
    const loom_sim_task_t *task;
    double submit_s, start_s, finish_s, remaining_s;
    int state;
    bool started;            /* has run at least once */
    uint32_t user;           /* 1..users, 0: none */
    uint32_t gen;            /* bumped by a suspend: older heap entries are stale */
    uint32_t owner, account; /* the runtime's user and account numbers */
    double gpus;             /* GPUs it holds while running */
} job_t;

/* min-heap of departures by time; an entry is valid while its gen matches */
typedef struct dep {
    double t;
    job_t *j;
    uint32_t gen;
} dep_t;

typedef struct heap {
    dep_t *a;
    size_t n, cap;
} heap_t;

static int heap_push(heap_t *h, job_t *j)
{
    if (loom_vec_reserve((void **)&h->a, &h->cap, h->n + 1, sizeof *h->a, 64))
        return LOOM_ENOMEM;
    size_t i = h->n++;
    h->a[i] = (dep_t){j->finish_s, j, j->gen};
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h->a[p].t <= h->a[i].t)
            break;
        dep_t t = h->a[p];
        h->a[p] = h->a[i];
        h->a[i] = t;
        i = p;
    }
    return LOOM_OK;
}

static dep_t heap_pop(heap_t *h)
{
    dep_t top = h->a[0];
    h->a[0] = h->a[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->a[l].t < h->a[m].t)
            m = l;
        if (r < h->n && h->a[r].t < h->a[m].t)
            m = r;
        if (m == i)
            break;
        dep_t t = h->a[m];
        h->a[m] = h->a[i];
        h->a[i] = t;
        i = m;
    }
    return top;
}

/* Drops stale entries from the top; the next departure time. */
static double heap_next(heap_t *h)
{
    while (h->n && h->a[0].gen != h->a[0].j->gen)
        heap_pop(h);
    return h->n ? h->a[0].t : INFINITY;
}

static int cmp_arrival(const void *x, const void *y)
{
    const job_t *a = *(job_t *const *)x, *b = *(job_t *const *)y;
    if (a->submit_s != b->submit_s)
        return a->submit_s < b->submit_s ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* The state of one run, which the runtime's actions change. */
typedef struct run {
    job_t *jobs;
    size_t njobs;
    double compress; /* trace seconds per simulated second */
    heap_t heap;
    double now;
    double *waits;
    size_t nwaits;
    loom_sim_dynamic_result_t *res;
    loom_sim_start_fn on_start;
    void *on_start_ctx;
    int rc; /* out of memory while applying */
    uint32_t users, accounts;
    double user_jct[LOOM_SIM_MAX_USERS];
    /* Per user: GPUs its running jobs hold, and GPUs its waiting jobs ask. */
    double user_gpus[LOOM_SIM_MAX_USERS];
    double user_waiting[LOOM_SIM_MAX_USERS];
    double gpus;           /* the cluster's */
    double preempt_cost_s; /* added to a resumed job's remaining run time */
    /* Held jobs by release time, and begin times, ascending: steps are due
     * then (the next of each at *_next). */
    job_t **held;
    size_t nheld, held_next;
    double *begins;
    size_t nbegins, begins_next;
    const loom_runtime_quota_rule_t *quotas; /* submission quotas judged at arrival */
    size_t nquotas;
} run_t;

/* GPUs a job asks for. */
static double asks(const job_t *j)
{
    return (double)loom_sched_req_gpu_total(&j->task->req) / LOOM_SCHED_MILLI;
}

/* A user's job starts or resumes (+1 on gpus) or stops (-1); waiting:
 * +1 when it waits from now on, -1 when it no longer waits. */
static void user_runs(run_t *r, job_t *j, int sign, double gpus, int waiting)
{
    if (!j->user)
        return;
    if (sign > 0)
        j->gpus = gpus;
    r->user_gpus[j->user - 1] += sign * j->gpus;
    r->user_waiting[j->user - 1] += waiting * asks(j);
}

static int apply(void *ctx, const loom_runtime_action_t *act)
{
    run_t *r = ctx;
    job_t *j = &r->jobs[act->id - 1];
    switch (act->kind) {
    case LOOM_RUNTIME_START:
        user_runs(r, j, 1, (double)loom_sched_req_gpu_total(&act->alloc.req) / LOOM_SCHED_MILLI,
                  -1);
        j->state = JOB_RUNNING;
        j->start_s = r->now;
        j->started = true;
        r->waits[r->nwaits++] = r->now - j->submit_s;
        if (r->on_start)
            r->on_start(r->on_start_ctx, (size_t)(act->id - 1), r->now, &act->alloc);
        if (j->task->duration_s < 0) {
            r->res->running_at_end++;
            return LOOM_OK;
        }
        j->finish_s = r->now + j->task->duration_s;
        break;
    case LOOM_RUNTIME_CANCEL:
        j->state = JOB_CANCELLED;
        r->res->cancelled++;
        if (j->user)
            r->user_waiting[j->user - 1] -= asks(j);
        return LOOM_OK;
    case LOOM_RUNTIME_REJECT:
        j->state = JOB_UNFIT;
        r->res->unfit++;
        if (j->user)
            r->user_waiting[j->user - 1] -= asks(j);
        return LOOM_OK;
    case LOOM_RUNTIME_SUSPEND:
        user_runs(r, j, -1, 0, 1);
        j->state = JOB_SUSPENDED;
        j->remaining_s = j->finish_s - r->now;
        j->gen++;
        return LOOM_OK;
    case LOOM_RUNTIME_RESUME:
        user_runs(r, j, 1, j->gpus, -1);
        j->state = JOB_RUNNING;
        if (j->task->duration_s < 0)
            return LOOM_OK;
        j->finish_s = r->now + j->remaining_s + r->preempt_cost_s;
        break;
    default: return LOOM_OK; /* reconfigure, note: nothing to change in virtual time */
    }
    if (heap_push(&r->heap, j) != LOOM_OK) {
        r->rc = LOOM_ENOMEM;
        return LOOM_ENOMEM;
    }
    return LOOM_OK;
}

static int new_runtime(const loom_sched_cluster_t *c0, const loom_sim_trace_t *t,
                       const loom_sim_opts_t *o, loom_sched_workload_t *learned,
                       loom_runtime_t **rt, loom_err_t *err)
{
    const loom_sched_workload_t *wl = o->workload;
    if (!wl) {
        int rc = loom_sim_trace_workload(t, learned, err);
        if (rc)
            return rc;
        wl = learned;
    }
    loom_sched_cluster_t c;
    int rc = loom_sched_cluster_copy(&c, c0, err);
    if (rc)
        return rc;
    loom_sched_cluster_reset(&c);
    loom_runtime_config_t cfg = {.queue = o->queue ? o->queue : "fifo",
                                 .placement = o->policy,
                                 .placer = {o->seed, wl, o->exact_scores, o->ties},
                                 .timeslice_s = o->timeslice_s,
                                 .backfill = (loom_runtime_backfill_t)o->backfill,
                                 .default_limit_s = o->default_limit_s};
    rc = loom_runtime_new(&c, &cfg, rt, err);
    loom_sched_cluster_free(&c);
    return rc;
}

/* A quota rule's user or account: its number, as the trace gives it. */
static int resolve_number(void *ctx, loom_runtime_quota_kind_t kind, const char *name,
                          uint32_t *who)
{
    (void)ctx;
    (void)kind;
    char *end;
    unsigned long n = strtoul(name, &end, 10);
    if (!*name || *end || name[0] == '-' || n == 0 || n > INT32_MAX)
        return LOOM_EINVAL;
    *who = (uint32_t)n;
    return LOOM_OK;
}

static int apply_quotas(loom_runtime_t *rt, const loom_sim_opts_t *o, loom_err_t *err)
{
    for (size_t i = 0; i < o->nquotas; i++) {
        uint32_t who;
        if (o->quotas[i].kind != '*' &&
            resolve_number(NULL, LOOM_RUNTIME_QUOTA_USER, o->quotas[i].name, &who) != LOOM_OK)
            return loom_err_set(err, LOOM_EINVAL,
                                "quota '%s': expected a user or account number from 1 to %d "
                                "(the trace's \"user\"/\"account\", or --users/--accounts)",
                                o->quotas[i].text, INT32_MAX);
    }
    return o->nquotas
               ? loom_runtime_quota_apply(rt, o->quotas, o->nquotas, resolve_number, NULL, err)
               : LOOM_OK;
}

/* Where a job the runtime no longer holds stands (its dependents ask):
 * a trace's jobs that ended ran to completion; dropped ones did not; one
 * not arrived yet is to come. */
static loom_runtime_dep_job_t outcome(void *ctx, uint64_t id)
{
    const run_t *r = ctx;
    if (id == 0 || id > r->njobs)
        return LOOM_RUNTIME_DEP_UNKNOWN;
    switch (r->jobs[id - 1].state) {
    case JOB_FUTURE: return LOOM_RUNTIME_DEP_PENDING;
    case JOB_DONE: return LOOM_RUNTIME_DEP_OK;
    case JOB_UNFIT:
    case JOB_REFUSED:
    case JOB_CANCELLED: return LOOM_RUNTIME_DEP_NOTOK;
    default: return LOOM_RUNTIME_DEP_RUNNING;
    }
}

static int cmp_release(const void *a, const void *b)
{
    double x = (*(job_t *const *)a)->task->release_s, y = (*(job_t *const *)b)->task->release_s;
    return x < y ? -1 : x > y;
}

static int cmp_time(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The trace's holds with a release time and its begin times, as events. */
static int timed_events(run_t *r, size_t n)
{
    r->held = calloc(n, sizeof *r->held);
    r->begins = calloc(n, sizeof *r->begins);
    if (!r->held || !r->begins)
        return LOOM_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const loom_sim_task_t *tk = r->jobs[i].task;
        if (tk->hold && tk->release_s > 0)
            r->held[r->nheld++] = &r->jobs[i];
        if (tk->begin_s > 0)
            r->begins[r->nbegins++] = tk->begin_s / r->compress;
    }
    qsort(r->held, r->nheld, sizeof *r->held, cmp_release);
    qsort(r->begins, r->nbegins, sizeof *r->begins, cmp_time);
    return LOOM_OK;
}

/* The next hold release or begin time after now (INFINITY: none). */
static double next_timed(run_t *r)
{
    while (r->begins_next < r->nbegins && r->begins[r->begins_next] <= r->now)
        r->begins_next++;
    double t = r->begins_next < r->nbegins ? r->begins[r->begins_next] : INFINITY;
    if (r->held_next < r->nheld) {
        double rel = r->held[r->held_next]->task->release_s / r->compress;
        t = rel < t ? rel : t;
    }
    return t;
}

/* Holds whose release time has come (a job not arrived yet keeps its
 * release for its arrival: released then). */
static void release_due(run_t *r, loom_runtime_t *rt)
{
    for (;
         r->held_next < r->nheld && r->held[r->held_next]->task->release_s / r->compress <= r->now;
         r->held_next++)
        loom_runtime_hold(rt, (uint64_t)(r->held[r->held_next] - r->jobs) + 1, false);
}

/* The jobs a submission's user or account has pending (held ones too, as
 * loomd's store counts them): a scan, done only where a pending quota
 * applies. */
static int count_pending(void *ctx, const loom_runtime_submission_t *s, bool by_account, int64_t *n,
                         loom_err_t *err)
{
    (void)err;
    const run_t *r = ctx;
    const char *name = by_account ? s->account : s->user;
    unsigned long who = name ? strtoul(name, NULL, 10) : 0;
    int64_t k = 0;
    for (size_t i = 0; i < r->njobs; i++) {
        const job_t *j = &r->jobs[i];
        k += j->state == JOB_PENDING && (by_account ? j->account : j->owner) == who;
    }
    *n = k;
    return LOOM_OK;
}

/* A submission quota refuses the arriving job (its numbers written out as
 * the rules name them): it never enters the runtime. */
static bool refused(const run_t *r, const loom_runtime_job_t *rj, int64_t tasks)
{
    if (!r->nquotas)
        return false;
    char user[16], account[16];
    snprintf(user, sizeof user, "%" PRIu32, rj->user);
    snprintf(account, sizeof account, "%" PRIu32, rj->account);
    loom_runtime_submission_t s = {rj->user ? user : NULL, rj->account ? account : NULL,
                                   rj->time_limit_s > 0 ? (int64_t)ceil(rj->time_limit_s) : 0,
                                   tasks};
    loom_runtime_quota_refusal_t why;
    loom_err_t err;
    return loom_runtime_quota_check_submission(r->quotas, r->nquotas, &s, count_pending, (void *)r,
                                               &why, &err) == LOOM_ELIMIT;
}
/* Departures due by now, then arrivals due by now. */
static int advance(run_t *r, loom_runtime_t *rt, job_t **order, size_t n, size_t *next,
                   double *jct_sum, double *last_end, loom_err_t *err)
{
    while (heap_next(&r->heap) <= r->now) {
        job_t *j = heap_pop(&r->heap).j;
        loom_runtime_remove(rt, (uint64_t)(j - r->jobs) + 1, r->now);
        user_runs(r, j, -1, 0, 0);
        j->state = JOB_DONE;
        r->res->completed++;
        *jct_sum += j->finish_s - j->submit_s;
        r->res->jcts[r->res->njcts++] = j->finish_s - j->submit_s;
        if (j->user) {
            r->res->user_completed[j->user - 1]++;
            r->user_jct[j->user - 1] += j->finish_s - j->submit_s;
        }
        *last_end = j->finish_s > *last_end ? j->finish_s : *last_end;
    }
    for (; *next < n && order[*next]->submit_s <= r->now; (*next)++) {
        job_t *j = order[*next];
        const loom_sim_task_t *tk = j->task;
        loom_runtime_job_t rj = {
            .id = (uint64_t)(j - r->jobs) + 1,
            .req = tk->req,
            .submit_s = j->submit_s,
            .priority = tk->priority,
            /* no estimate given: the trace's own run time (an oracle for sjf) */
            .estimate_s = tk->estimate_s > 0    ? tk->estimate_s
                          : tk->duration_s >= 0 ? tk->duration_s
                                                : 0,
            .time_limit_s = tk->time_limit_s,
            .user = tk->user ? tk->user : j->user,
            .account = tk->account              ? tk->account
                       : j->user && r->accounts ? 1 + (j->user - 1) % r->accounts
                                                : 0,
            .dependency = tk->dependency,
            .name_key = tk->name_key,
            .hold = tk->hold,
            .begin_s = tk->begin_s > 0 ? tk->begin_s / r->compress : 0};
        /* released before it arrived: it comes free */
        rj.hold = rj.hold && !(tk->release_s > 0 && tk->release_s / r->compress <= r->now);
        if (refused(r, &rj, 1)) {
            j->state = JOB_REFUSED;
            r->res->refused++;
            continue;
        }
        j->owner = rj.user;
        j->account = rj.account;
        int rc = loom_runtime_submit(rt, &rj, err);
        if (rc)
            return rc;
        j->state = JOB_PENDING;
        if (j->user)
            r->user_waiting[j->user - 1] += asks(j);
    }
    return LOOM_OK;
}

static int keep_point(loom_sim_dynamic_result_t *res, size_t *cap, const loom_runtime_t *rt,
                      double now, double capacity)
{
    if (loom_vec_reserve((void **)&res->timeline, cap, res->ntimeline + 1, sizeof *res->timeline,
                         TIMELINE_MIN_CAP))
        return LOOM_ENOMEM;
    const loom_sched_cluster_t *c = loom_runtime_cluster(rt);
    res->timeline[res->ntimeline++] = (loom_sim_util_point_t){
        now, (float)(100.0 * (double)c->gpu_milli_used / capacity),
        (uint32_t)loom_runtime_npending(rt), (uint32_t)loom_runtime_nrunning(rt)};
    return LOOM_OK;
}

/* Owners for the tasks: Zipf over 1..users with exponent skew, from seed
 * (its own stream, so placement's draws are unchanged). */
static void assign_users(job_t *jobs, size_t n, const loom_sim_opts_t *o)
{
    double cdf[LOOM_SIM_MAX_USERS], sum = 0;
    for (uint32_t k = 0; k < o->users; k++)
        cdf[k] = sum += pow((double)(k + 1), -o->user_skew);
    loom_rng_t rng;
    loom_rng_init(&rng, o->seed, 0x75736572 /* "user" */);
    for (size_t i = 0; i < n; i++) {
        double u = loom_rng_uniform(&rng) * sum;
        uint32_t k = 0;
        // cppcheck-suppress uninitvar ; k < users - 1, and cdf[0..users) is set above
        while (k + 1 < o->users && cdf[k] <= u)
            k++;
        jobs[i].user = k + 1;
    }
}

/* GPU-seconds per user over dt, and over the contended time: every user
 * has a backlog, i.e. its waiting jobs ask for at least its equal part of
 * the cluster's GPUs. */
static void account_gpu_time(run_t *r, double dt)
{
    if (!r->users || dt <= 0)
        return;
    bool contended = true;
    for (uint32_t k = 0; k < r->users; k++)
        contended = contended && r->user_waiting[k] >= r->gpus / r->users - 1e-9;
    for (uint32_t k = 0; k < r->users; k++) {
        r->res->user_gpu_s[k] += dt * r->user_gpus[k];
        if (contended)
            r->res->user_backlog_gpu_s[k] += dt * r->user_gpus[k];
    }
    if (contended)
        r->res->backlog_s += dt;
}

static void summarize_users(loom_sim_dynamic_result_t *res, const double *jct, uint32_t users)
{
    double s = 0, s2 = 0;
    int n = 0;
    res->users = users;
    for (uint32_t k = 0; k < users; k++) {
        if (!res->user_completed[k])
            continue;
        double m = res->user_mean_jct_s[k] = jct[k] / (double)res->user_completed[k];
        s += m;
        s2 += m * m;
        n++;
    }
    res->jain_jct = n && s2 > 0 ? s * s / ((double)n * s2) : 0;
}

static void summarize(loom_sim_dynamic_result_t *res, double *waits, size_t nwaits, double jct_sum)
{
    res->mean_jct_s = res->completed ? jct_sum / (double)res->completed : 0;
    double wsum = 0;
    for (size_t i = 0; i < nwaits; i++)
        wsum += waits[i];
    res->mean_wait_s = nwaits ? wsum / (double)nwaits : 0;
    if (nwaits) {
        loom_stats_sort(waits, nwaits);
        res->p99_wait_s = loom_stats_quantile_lower(waits, nwaits, 0.99);
    }
    if (res->njcts) {
        loom_stats_sort(res->jcts, res->njcts);
        res->p99_jct_s = loom_stats_quantile_lower(res->jcts, res->njcts, 0.99);
    }
}

int loom_sim_dynamic(const loom_sched_cluster_t *c0, const loom_sim_trace_t *t,
                     const loom_sim_opts_t *o, loom_sim_dynamic_result_t *res, loom_err_t *err)
{
    memset(res, 0, sizeof *res);
    int64_t t0 = loom_time_mono_ns();
    if (t->n == 0)
        return loom_err_set(err, LOOM_EINVAL, "dynamic: empty trace");
    if (o->accounts > LOOM_SIM_MAX_USERS)
        return loom_err_set(err, LOOM_EINVAL, "dynamic: accounts: expected 0 to %d, found %u",
                            LOOM_SIM_MAX_USERS, (unsigned)o->accounts);
    if (o->users > LOOM_SIM_MAX_USERS || o->user_skew < 0 || !isfinite(o->user_skew))
        return loom_err_set(err, LOOM_EINVAL,
                            "dynamic: users: expected 0 to %d users and a skew >= 0, found %u "
                            "and %g",
                            LOOM_SIM_MAX_USERS, (unsigned)o->users, o->user_skew);
    loom_sched_workload_t learned = {0};
    loom_runtime_t *rt = NULL;
    run_t r = {.jobs = calloc(t->n, sizeof *r.jobs),
               .njobs = t->n,
               .compress = o->compress > 0 ? o->compress : 1.0,
               .waits = calloc(t->n, sizeof *r.waits),
               .res = res,
               .on_start = o->on_start,
               .on_start_ctx = o->on_start_ctx,
               .preempt_cost_s = o->preempt_cost_s > 0 ? o->preempt_cost_s : 0,
               .users = o->users,
               .accounts = o->accounts,
               .quotas = o->quotas,
               .nquotas = o->nquotas};
    job_t **order = calloc(t->n, sizeof *order);
    res->jcts = calloc(t->n, sizeof *res->jcts);
    size_t cap_tl = 0;
    int rc;
    if (!r.jobs || !r.waits || !order || !res->jcts) {
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = new_runtime(c0, t, o, &learned, &rt, err)))
        goto out;
    loom_runtime_set_outcomes(rt, outcome, &r);
    if ((rc = apply_quotas(rt, o, err)))
        goto out;
    for (size_t i = 0; i < t->n; i++) {
        r.jobs[i].task = &t->tasks[i];
        r.jobs[i].submit_s = t->tasks[i].create_s / r.compress;
        order[i] = &r.jobs[i];
    }
    if (timed_events(&r, t->n)) {
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
        goto out;
    }
    if (o->users)
        assign_users(r.jobs, t->n, o);
    qsort(order, t->n, sizeof *order, cmp_arrival);
    res->jobs = t->n;
    const loom_sched_cluster_t *c = loom_runtime_cluster(rt);
    const double cap = c->gpu_milli_total > 0 ? (double)c->gpu_milli_total : 1;
    r.gpus = (double)c->gpu_milli_total / LOOM_SCHED_MILLI;
    size_t next = 0;
    double first = order[0]->submit_s, last_end = first;
    double util_area = 0, last_t = first, jct_sum = 0;
    for (;;) {
        double ta = next < t->n ? order[next]->submit_s : INFINITY;
        double tf = heap_next(&r.heap);
        double tw = fmin(loom_runtime_next_wakeup(rt), next_timed(&r));
        double tnext = fmin(ta, fmin(tf, tw));
        if (!isfinite(tnext))
            break;
        util_area += (tnext - last_t) * (double)c->gpu_milli_used / cap;
        account_gpu_time(&r, tnext - last_t);
        last_t = r.now = tnext;
        if ((rc = advance(&r, rt, order, t->n, &next, &jct_sum, &last_end, err)))
            goto out;
        release_due(&r, rt);
        loom_runtime_step(rt, r.now, apply, &r);
        if ((rc = r.rc)) {
            rc = loom_err_set(err, rc, "out of memory");
            goto out;
        }
        if (loom_runtime_nomem(rt)) { /* a step put work off: the replay would differ */
            rc = loom_err_set(err, LOOM_ENOMEM, "out of memory at t=%g", r.now);
            goto out;
        }
        if (o->debug_check && (rc = loom_runtime_check(rt, err))) {
            rc = loom_err_prefix(err, "at t=%g", r.now);
            goto out;
        }
        if (o->keep_points && keep_point(res, &cap_tl, rt, r.now, cap)) {
            rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
            goto out;
        }
    }
    res->never_started = loom_runtime_npending(rt);
    res->makespan_s = last_end - first;
    res->mean_util_pct = last_t > first ? 100.0 * util_area / (last_t - first) : 0;
    summarize(res, r.waits, r.nwaits, jct_sum);
    summarize_users(res, r.user_jct, o->users);
    rc = LOOM_OK;
out:
    if (rc)
        loom_sim_dynamic_result_free(res);
    free(r.waits);
    free(r.held);
    free(r.begins);
    free(r.heap.a);
    free(order);
    free(r.jobs);
    loom_runtime_free(rt);
    loom_sched_workload_free(&learned);
    res->seconds = (double)(loom_time_mono_ns() - t0) / 1e9;
    return rc;
}
