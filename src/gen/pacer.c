/* The pacer: releases each job at its due time and keeps the schedule even
 * when the sink is slow.
 *
 * One thread (the caller's) walks the arrival process. For each arrival it
 * draws the job's choice, sleeps until start + due on the injected clock
 * (absolute deadlines, so nothing accumulates), stamps the send time and
 * puts the job into a queue. Sender threads take jobs from the queue in
 * batches, render them (the source's make(), with the job's own RNG stream)
 * and hand them to the sink. Jobs queued or in a sink call count against
 * the in-flight window; when it is full the configured policy decides:
 * wait for a slot, drop the job, or stop the run. Either way it is counted.
 *
 * The pacer never renders or talks to a sink itself, so its only work per
 * job is a few arithmetic operations and, at most once per batch, a lock
 * and a wake-up. When arrivals come faster than 1 per 50 us the jobs
 * released in the meantime are handed over together (at most `batch`, and
 * never held longer than 1 ms), which keeps 100,000 jobs/s within reach of
 * one core.
 */
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "loom/gen.h"

#define FLUSH_SLACK_NS (50 * LOOM_NS_PER_US)  /* enough time left to hand over now */
#define MAX_HOLD_NS    (1 * LOOM_NS_PER_MS)   /* a released job waits at most this */
#define STOP_SLICE_NS  (100 * LOOM_NS_PER_MS) /* longest sleep between stop checks */

#define PREALLOC_JOBS 4096 /* jobs made before the run starts */

/* Writes to every page of [p, p + n), so that they are there before the
 * run (calloc'd memory may be untouched zero pages). */
static void prefault(void *p, size_t n)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t step = page > 0 ? (size_t)page : 4096;
    volatile char *c = p;
    for (size_t k = 0; k < n; k += step)
        // cppcheck-suppress selfAssignment ; a volatile write: it faults the page in
        c[k] = c[k];
}

/* The pacer's stack, 64 KiB deep: its frames (and the batch arrays on
 * them) fault in now. */
__attribute__((noinline)) static void prefault_stack(void)
{
    volatile char deep[64 * 1024];
    for (size_t k = 0; k < sizeof deep; k += 4096)
        deep[k] = 0;
}

static bool stop_requested(const loom_gen_config_t *cfg)
{
    return cfg->stop && __atomic_load_n(cfg->stop, __ATOMIC_RELAXED);
}

static const char *const backlog_names[] = {"wait", "drop", "fail"};

int loom_gen_backlog_parse(const char *name, loom_gen_backlog_t *out, loom_err_t *err)
{
    for (int i = 0; i < 3; i++) {
        if (name && strcmp(name, backlog_names[i]) == 0) {
            *out = (loom_gen_backlog_t)i;
            return LOOM_OK;
        }
    }
    return loom_err_set(err, LOOM_EINVAL, "on-backlog '%s': expected wait, drop or fail",
                        name ? name : "");
}

const char *loom_gen_backlog_name(loom_gen_backlog_t b)
{
    return (unsigned)b < 3 ? backlog_names[b] : "?";
}

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void loom_gen_submit_id(uint64_t seed, const char *run_tag, uint64_t nonce, uint64_t index,
                        char out[64])
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a over the tag */
    for (const char *p = run_tag ? run_tag : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
    h = mix64(mix64(seed + 0x9E3779B97F4A7C15ULL) ^ h ^ mix64(nonce)); /* mix64(0) is 0 */
    snprintf(out, 64, "g%016llx-%llu", (unsigned long long)h, (unsigned long long)index);
}

void loom_gen_job_fail(loom_gen_job_t *job, const loom_err_t *err)
{
    job->rc = err && err->code ? err->code : LOOM_EINTERNAL;
    free(job->error);
    job->error = strdup(err && err->msg[0] ? err->msg : "failed");
}

/* Empties a job for reuse; its text buffer keeps its memory. */
static void job_clear(loom_gen_job_t *job)
{
    loom_buf_t text = job->text;
    loom_buf_reset(&text);
    if (job->spec)
        json_decref(job->spec);
    free(job->error);
    free(job->remote_id);
    memset(job, 0, sizeof *job);
    job->text = text;
}

static void job_free(loom_gen_job_t *job)
{
    job_clear(job);
    loom_buf_free(&job->text);
    free(job);
}

typedef struct engine {
    const loom_gen_config_t *cfg;
    const loom_gen_source_t *src;
    loom_gen_sink_t *sink;
    loom_gen_clock_t clock;
    loom_gen_realclock_t *real; /* the real clock's state; NULL with an injected clock */
    int64_t t0;
    unsigned window, batch;

    pthread_mutex_t mu;
    pthread_cond_t space_cv;
    /* Idle senders wait on a semaphore, not a condition variable: posting
     * takes no lock, so a realtime pacer can never wait behind a preempted
     * sender inside the condition variable's own lock. */
    sem_t work_sem;
    loom_gen_job_t **q; /* ring of window slots */
    size_t qhead, qlen;
    size_t inflight; /* queued or in a sink call; written under mu */
    unsigned idle;
    bool closing;
    int broken; /* a sink call failed as a whole: its code */
    loom_err_t broken_err;
    int64_t last_ack;
    loom_gen_report_t *rep;
    /* Finished jobs come back here for the pacer to reuse, so the pacer
     * does not call malloc: a sender freeing into the pacer's malloc arena
     * would make the pacer wait for a lock held by a preempted thread. */
    loom_gen_job_t **pool;
    size_t npool, pool_cap;
} engine_t;

/* Renders and sends one batch; called without the lock. */
static void process_batch(engine_t *e, loom_gen_job_t **jobs, size_t n)
{
    loom_gen_job_t *ready[n];
    size_t m = 0;
    int broken = __atomic_load_n(&e->broken, __ATOMIC_ACQUIRE);
    for (size_t i = 0; i < n; i++) {
        loom_gen_job_t *job = jobs[i];
        loom_err_t err = {0};
        if (broken) {
            err.code = broken;
            snprintf(err.msg, sizeof err.msg, "not sent: %s", e->broken_err.msg);
            loom_gen_job_fail(job, &err);
            continue;
        }
        loom_gen_submit_id(e->cfg->seed, e->cfg->run_tag, e->cfg->run_nonce, job->index,
                           job->submit_id);
        loom_rng_t rng;
        loom_rng_init(&rng, e->cfg->seed, LOOM_GEN_STREAM_JOB + job->index);
        int rc = e->src->make ? e->src->make(e->src->ctx, job, &rng, &err) : LOOM_OK;
        if (rc != LOOM_OK) {
            if (!err.code)
                err.code = rc;
            loom_gen_job_fail(job, &err);
        } else {
            ready[m++] = job;
        }
    }
    if (m > 0) {
        loom_err_t err = {0};
        int rc = e->sink->send(e->sink->ctx, ready, m, &err);
        if (rc != LOOM_OK) {
            if (!err.code)
                err.code = rc;
            for (size_t i = 0; i < m; i++)
                if (ready[i]->rc == LOOM_OK)
                    loom_gen_job_fail(ready[i], &err);
            pthread_mutex_lock(&e->mu);
            if (!e->broken) {
                e->broken_err = err;
                __atomic_store_n(&e->broken, rc, __ATOMIC_RELEASE);
            }
            pthread_mutex_unlock(&e->mu);
        }
    }
}

static void account_batch(engine_t *e, loom_gen_job_t **jobs, size_t n)
{
    int64_t ack = e->clock.now(e->clock.ctx) - e->t0;
    loom_gen_report_t *r = e->rep;
    /* Everything that may call free() happens before the lock is taken:
     * a sender blocked in malloc while holding it would stall the pacer. */
    struct {
        uint64_t index;
        int64_t send;
        size_t choice;
        bool ok;
    } out[n];
    char first_error[sizeof r->first_error] = "";
    for (size_t i = 0; i < n; i++) {
        loom_gen_job_t *job = jobs[i];
        job->ack_ns = ack;
        out[i].index = job->index;
        out[i].send = job->send_ns;
        out[i].choice = job->choice;
        out[i].ok = job->rc == LOOM_OK;
        if (!out[i].ok && !first_error[0])
            snprintf(first_error, sizeof first_error, "job %llu: %s",
                     (unsigned long long)job->index, job->error ? job->error : "failed");
        job_clear(job);
    }
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < n; i++) {
        if (out[i].ok) {
            r->ok++;
            r->per_choice_ok[out[i].choice]++;
        } else {
            r->failed++;
        }
        loom_gen_hist_add(&r->ack, ack - out[i].send);
        if (r->records && out[i].index < r->n_records) {
            r->records[out[i].index].ack_ns = ack;
            r->records[out[i].index].state = out[i].ok ? LOOM_GEN_JOB_OK : LOOM_GEN_JOB_FAILED;
        }
    }
    if (first_error[0] && !r->first_error[0])
        memcpy(r->first_error, first_error, sizeof first_error);
    size_t overflow = 0;
    for (size_t i = 0; i < n; i++) {
        if (e->npool < e->pool_cap)
            e->pool[e->npool++] = jobs[i];
        else
            jobs[overflow++] = jobs[i]; /* freed below, outside the lock */
    }
    if (ack > e->last_ack)
        e->last_ack = ack;
    __atomic_fetch_sub(&e->inflight, n, __ATOMIC_RELAXED);
    pthread_cond_signal(&e->space_cv);
    pthread_mutex_unlock(&e->mu);
    for (size_t i = 0; i < overflow; i++)
        job_free(jobs[i]);
}

static void *worker_main(void *arg)
{
    engine_t *e = arg;
    loom_gen_job_t *jobs[e->batch];
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (e->qlen == 0 && !e->closing) {
            e->idle++;
            pthread_mutex_unlock(&e->mu);
            while (sem_wait(&e->work_sem) != 0) { /* EINTR */
            }
            pthread_mutex_lock(&e->mu);
            e->idle--;
        }
        if (e->qlen == 0)
            break;
        size_t n = e->qlen < e->batch ? e->qlen : e->batch;
        for (size_t i = 0; i < n; i++) {
            jobs[i] = e->q[e->qhead];
            e->qhead = (e->qhead + 1) % e->window;
        }
        e->qlen -= n;
        pthread_mutex_unlock(&e->mu);
        process_batch(e, jobs, n);
        account_batch(e, jobs, n);
        pthread_mutex_lock(&e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* The pacer's own stock of empty jobs, refilled from the pool. */
typedef struct job_cache {
    loom_gen_job_t **jobs;
    size_t n, cap;
} job_cache_t;

static void refill_locked(engine_t *e, job_cache_t *c)
{
    while (c->n < c->cap && e->npool > 0)
        c->jobs[c->n++] = e->pool[--e->npool];
}

static loom_gen_job_t *take_job(engine_t *e, job_cache_t *c)
{
    if (c->n == 0) {
        pthread_mutex_lock(&e->mu);
        refill_locked(e, c);
        pthread_mutex_unlock(&e->mu);
    }
    if (c->n > 0)
        return c->jobs[--c->n];
    return calloc(1, sizeof(loom_gen_job_t)); /* only while the pool warms up */
}

/* Hands the pacer's released jobs to the workers. */
static void flush(engine_t *e, loom_gen_job_t **pending, size_t *npending, job_cache_t *cache)
{
    if (*npending == 0)
        return;
    pthread_mutex_lock(&e->mu);
    refill_locked(e, cache);
    for (size_t i = 0; i < *npending; i++)
        e->q[(e->qhead + e->qlen + i) % e->window] = pending[i];
    e->qlen += *npending;
    __atomic_store_n(&e->inflight, e->inflight + *npending, __ATOMIC_RELAXED);
    size_t wake = e->idle < *npending ? e->idle : *npending;
    pthread_mutex_unlock(&e->mu);
    for (size_t i = 0; i < wake; i++)
        sem_post(&e->work_sem);
    *npending = 0;
}

static void finish_rates(loom_gen_report_t *r, const loom_gen_config_t *cfg, int64_t first_send,
                         int64_t last_send, int64_t last_due)
{
    r->rate_target = loom_gen_arrivals_rate(&cfg->arrivals);
    r->rate_schedule =
        r->scheduled > 1 && last_due > 0 ? (double)(r->scheduled - 1) * 1e9 / (double)last_due : 0;
    r->rate_achieved = r->sent > 1 && last_send > first_send
                           ? (double)(r->sent - 1) * 1e9 / (double)(last_send - first_send)
                           : 0;
    r->rate_error_pct = r->rate_target > 0 && r->rate_achieved > 0
                            ? (r->rate_achieved - r->rate_target) / r->rate_target * 100.0
                            : 0;
}

static void progress(engine_t *e, int64_t first_send, int64_t last_send, int64_t last_due)
{
    /* A copy taken under the lock: the workers keep counting meanwhile. */
    loom_gen_report_t *snap = malloc(sizeof *snap);
    if (!snap)
        return;
    pthread_mutex_lock(&e->mu);
    *snap = *e->rep;
    pthread_mutex_unlock(&e->mu);
    finish_rates(snap, e->cfg, first_send, last_send, last_due);
    snap->elapsed_ns = e->clock.now(e->clock.ctx) - e->t0;
    e->cfg->progress(e->cfg->progress_ctx, snap);
    free(snap);
}

static int report_init(loom_gen_report_t *r, const loom_gen_config_t *cfg,
                       const loom_gen_source_t *src, loom_err_t *err)
{
    memset(r, 0, sizeof *r);
    r->pacer_cpu = -1;
    loom_gen_hist_init(&r->lateness);
    loom_gen_hist_init(&r->ack);
    loom_gen_hist_init(&r->wake);
    r->n_choices = src->n;
    r->per_choice = calloc(src->n, sizeof *r->per_choice);
    r->per_choice_ok = calloc(src->n, sizeof *r->per_choice_ok);
    if (!r->per_choice || !r->per_choice_ok)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    if (cfg->keep_records) {
        uint64_t n = cfg->count;
        if (cfg->arrivals.process == LOOM_GEN_TRACE && cfg->arrivals.trace &&
            (n == 0 || n > cfg->arrivals.trace->n))
            n = cfg->arrivals.trace->n;
        if (n == 0 || n > ((uint64_t)1 << 28))
            return loom_err_set(err, LOOM_EINVAL,
                                "keep_records needs a count (or a trace) of at most 2^28 jobs");
        r->records = calloc((size_t)n, sizeof *r->records);
        if (!r->records)
            return loom_err_set(err, LOOM_ENOMEM, "out of memory for %llu records",
                                (unsigned long long)n);
        r->n_records = (size_t)n;
    }
    return LOOM_OK;
}

static int check_config(const loom_gen_config_t *cfg, const loom_gen_source_t *src,
                        const loom_gen_sink_t *sink, loom_err_t *err)
{
    if (!src || src->n == 0 || !src->weights)
        return loom_err_set(err, LOOM_EINVAL, "generator: the source has no jobs to choose from");
    double sum = 0;
    for (size_t i = 0; i < src->n; i++) {
        if (!(src->weights[i] >= 0) || src->weights[i] > 1e300)
            return loom_err_set(err, LOOM_EINVAL,
                                "generator: weight of job %zu is %g, expected >= 0", i,
                                src->weights[i]);
        sum += src->weights[i];
    }
    if (!(sum > 0))
        return loom_err_set(err, LOOM_EINVAL, "generator: the job weights sum to 0");
    if (!sink || !sink->send)
        return loom_err_set(err, LOOM_EINVAL, "generator: no sink");
    if (cfg->count == 0 && cfg->duration_ns <= 0 && cfg->arrivals.process != LOOM_GEN_TRACE)
        return loom_err_set(err, LOOM_EINVAL,
                            "generator: give a count or a duration (or a trace) to stop at");
    if (cfg->duration_ns < 0)
        return loom_err_set(err, LOOM_EINVAL, "generator: duration must not be negative");
    if (cfg->spin_ns < 0 && cfg->spin_ns != LOOM_GEN_SPIN_NONE)
        return loom_err_set(err, LOOM_EINVAL,
                            "generator: spin %lld ns: expected 0 (adaptive), > 0 or "
                            "LOOM_GEN_SPIN_NONE",
                            (long long)cfg->spin_ns);
    if (cfg->window > (1u << 24))
        return loom_err_set(err, LOOM_EINVAL, "generator: window %u is above 16777216",
                            cfg->window);
    if (cfg->batch > 4096)
        return loom_err_set(err, LOOM_EINVAL, "generator: batch %u is above 4096", cfg->batch);
    if (cfg->workers > 256)
        return loom_err_set(err, LOOM_EINVAL, "generator: %u workers is above 256", cfg->workers);
    if ((unsigned)cfg->on_backlog > LOOM_GEN_BACKLOG_FAIL)
        return loom_err_set(err, LOOM_EINVAL, "generator: unknown backlog policy");
    return LOOM_OK;
}

/* The pacer loop proper; returns LOOM_OK or LOOM_ELIMIT (backlog fail). */
static int pace(engine_t *e, loom_gen_arrivals_t *arr, loom_err_t *err)
{
    const loom_gen_config_t *cfg = e->cfg;
    loom_gen_report_t *r = e->rep;
    loom_rng_t crng;
    loom_rng_init(&crng, cfg->seed, LOOM_GEN_STREAM_CHOICES);
    loom_gen_job_t *pending[e->batch], *cached[e->batch];
    size_t npending = 0;
    job_cache_t cache = {.jobs = cached, .cap = e->batch};
    int64_t first_send = -1, last_send = 0, last_due = 0, oldest = 0;
    int64_t next_progress = cfg->progress && cfg->progress_ns > 0 ? cfg->progress_ns : INT64_MAX;
    int rc = LOOM_OK;
    int carry = LOOM_GEN_LATE_NONE; /* why the previous job was late, if it was */

    for (uint64_t i = 0;; i++) {
        int64_t due;
        if (cfg->count && i >= cfg->count)
            break;
        if (__atomic_load_n(&e->broken, __ATOMIC_ACQUIRE))
            break;
        if (stop_requested(cfg)) {
            r->stopped = true;
            break;
        }
        if (!loom_gen_arrivals_next(arr, &due))
            break;
        if (cfg->duration_ns > 0 && due >= cfg->duration_ns)
            break;
        size_t choice = loom_rng_weighted(&crng, e->src->weights, e->src->n);
        r->scheduled++;
        r->per_choice[choice]++;
        int64_t prev_due = last_due;
        last_due = due;
        int64_t deadline = e->t0 + due;
        int64_t now = e->clock.now(e->clock.ctx);
        int cause = LOOM_GEN_LATE_NONE;
        bool slept = false;
        if (now - e->t0 >= next_progress) {
            progress(e, first_send, last_send, last_due);
            while (next_progress <= now - e->t0)
                next_progress += cfg->progress_ns;
        }
        if (now < deadline) {
            if (npending && (deadline - now >= FLUSH_SLACK_NS || now - oldest >= MAX_HOLD_NS))
                flush(e, pending, &npending, &cache);
            /* Long waits are cut into slices so that a stop request (and
             * progress) is seen within STOP_SLICE_NS. */
            while (deadline - now > STOP_SLICE_NS && !stop_requested(cfg)) {
                e->clock.sleep_until(e->clock.ctx, now + STOP_SLICE_NS);
                now = e->clock.now(e->clock.ctx);
                if (now - e->t0 >= next_progress) {
                    progress(e, first_send, last_send, last_due);
                    while (next_progress <= now - e->t0)
                        next_progress += cfg->progress_ns;
                }
            }
            if (stop_requested(cfg)) {
                r->scheduled--; /* job i never left */
                r->per_choice[choice]--;
                last_due = prev_due;
                r->stopped = true;
                break;
            }
            e->clock.sleep_until(e->clock.ctx, deadline);
            now = e->clock.now(e->clock.ctx);
            slept = true;
            if (e->real)
                cause = e->real->last_cause;
        }
        bool waited = false;
        if (__atomic_load_n(&e->inflight, __ATOMIC_RELAXED) + npending >= e->window) {
            flush(e, pending, &npending, &cache);
            pthread_mutex_lock(&e->mu);
            bool full = e->inflight >= e->window;
            pthread_mutex_unlock(&e->mu);
            if (full) {
                /* The decision is taken on this observation, whatever the
                 * hook or the workers do meanwhile. */
                if (cfg->backlog_hook)
                    cfg->backlog_hook(cfg->backlog_ctx, i);
                if (cfg->on_backlog == LOOM_GEN_BACKLOG_DROP) {
                    r->dropped++;
                    if (r->records && i < r->n_records) {
                        r->records[i] = (loom_gen_record_t){.due_ns = due,
                                                            .send_ns = -1,
                                                            .ack_ns = -1,
                                                            .choice = (uint32_t)choice,
                                                            .state = LOOM_GEN_JOB_DROPPED};
                    }
                    continue;
                }
                if (cfg->on_backlog == LOOM_GEN_BACKLOG_FAIL) {
                    r->backlog_failed = true;
                    rc =
                        loom_err_set(err, LOOM_ELIMIT,
                                     "in-flight window of %u jobs full at job %llu (due at %.6f s):"
                                     " the sink is slower than the rate (--on-backlog fail)",
                                     e->window, (unsigned long long)i, (double)due / 1e9);
                    r->scheduled--; /* job i never left */
                    r->per_choice[choice]--;
                    last_due = prev_due;
                    break;
                }
                int64_t w0 = e->clock.now(e->clock.ctx);
                pthread_mutex_lock(&e->mu);
                while (e->inflight >= e->window && !e->broken)
                    pthread_cond_wait(&e->space_cv, &e->mu);
                pthread_mutex_unlock(&e->mu);
                now = e->clock.now(e->clock.ctx);
                if (now - w0 > r->backlog_wait_max_ns)
                    r->backlog_wait_max_ns = now - w0;
                r->backlog_waits++;
                waited = true;
            }
        }
        loom_gen_job_t *job = take_job(e, &cache);
        if (!job) {
            rc = loom_err_set(err, LOOM_ENOMEM, "out of memory at job %llu", (unsigned long long)i);
            break;
        }
        job->index = i;
        job->due_ns = due;
        job->send_ns = now - e->t0;
        job->choice = choice;
        job->name = e->src->names ? e->src->names[choice] : NULL;
        int64_t late = job->send_ns - due;
        loom_gen_hist_add(&r->lateness, late);
        if (late > LOOM_GEN_LATE_NS) {
            /* A job that was already due when the pacer came to it is late
             * for its predecessor's reason (the pacer catching up). */
            if (cause == LOOM_GEN_LATE_NONE)
                cause = !slept && carry != LOOM_GEN_LATE_NONE ? carry : LOOM_GEN_LATE_BEHIND;
            r->late[cause]++;
            if (late > r->late_max_ns[cause])
                r->late_max_ns[cause] = late;
            carry = cause;
        } else {
            carry = LOOM_GEN_LATE_NONE;
        }
        if (r->records && i < r->n_records)
            r->records[i] = (loom_gen_record_t){.due_ns = due,
                                                .send_ns = job->send_ns,
                                                .ack_ns = -1,
                                                .choice = (uint32_t)choice,
                                                .state = LOOM_GEN_JOB_UNSENT,
                                                .waited = waited};
        if (first_send < 0)
            first_send = job->send_ns;
        last_send = job->send_ns;
        r->sent++;
        if (npending == 0)
            oldest = now;
        pending[npending++] = job;
        if (npending == e->batch)
            flush(e, pending, &npending, &cache);
    }
    flush(e, pending, &npending, &cache);
    pthread_mutex_lock(&e->mu);
    for (size_t k = 0; k < cache.n; k++) /* back to the pool, freed at the end */
        if (e->npool < e->pool_cap)
            e->pool[e->npool++] = cache.jobs[k];
        else
            job_free(cache.jobs[k]);
    pthread_mutex_unlock(&e->mu);
    finish_rates(r, cfg, first_send < 0 ? 0 : first_send, last_send, last_due);
    return rc;
}

int loom_gen_run(const loom_gen_config_t *cfg, const loom_gen_source_t *src, loom_gen_sink_t *sink,
                 loom_gen_report_t *report, loom_err_t *err)
{
    memset(report, 0, sizeof *report);
    report->pacer_cpu = -1;
    int rc = check_config(cfg, src, sink, err);
    if (rc != LOOM_OK)
        return rc;
    if ((rc = report_init(report, cfg, src, err)) != LOOM_OK)
        return rc;
    loom_gen_arrivals_t arr;
    if ((rc = loom_gen_arrivals_init(&arr, &cfg->arrivals, cfg->seed, err)) != LOOM_OK)
        return rc;

    /* The real clock: set up below, once the pacer's policy is known. */
    loom_gen_realclock_t *real = calloc(1, sizeof *real);
    if (!real)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    engine_t e = {.cfg = cfg, .src = src, .sink = sink, .rep = report};
    e.clock = cfg->clock ? *cfg->clock : loom_gen_clock_real(real);
    e.real = cfg->clock ? NULL : real;
    e.window = cfg->window ? cfg->window : 1024;
    e.batch = cfg->batch ? cfg->batch : 64;
    unsigned nworkers = cfg->workers ? cfg->workers : 2;
    if (sink->max_workers && nworkers > sink->max_workers)
        nworkers = sink->max_workers;
    e.q = calloc(e.window, sizeof *e.q);
    e.pool_cap = (size_t)e.window + 2 * (size_t)e.batch;
    e.pool = calloc(e.pool_cap, sizeof *e.pool);
    if (!e.q || !e.pool) {
        free(e.q);
        free(e.pool);
        free(real);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory for a window of %u", e.window);
    }
    /* Everything the pacer touches is touched now, not during the run: a
     * page fault costs it tens of microseconds on a virtual machine. The
     * pool gets the jobs the pacer would otherwise calloc() while it warms
     * up (its own malloc arena growing meanwhile). */
    prefault(e.q, e.window * sizeof *e.q);
    if (report->records)
        prefault(report->records, report->n_records * sizeof *report->records);
    size_t premade = e.pool_cap < PREALLOC_JOBS ? e.pool_cap : PREALLOC_JOBS;
    while (e.npool < premade) {
        loom_gen_job_t *job = calloc(1, sizeof *job);
        if (!job)
            break;
        e.pool[e.npool++] = job;
    }
    prefault_stack();
    /* Priority inheritance: a realtime pacer must not wait behind a sender
     * that was preempted while holding the lock. */
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
    pthread_mutex_init(&e.mu, &ma);
    pthread_mutexattr_destroy(&ma);
    sem_init(&e.work_sem, 0, 0);
    pthread_cond_init(&e.space_cv, NULL);

    /* Pinning: the pacer on the last CPU this thread may use. The senders
     * keep every CPU: on a busy machine rendering needs whatever share of
     * the pacer's CPU the pacer leaves (they run there only while it
     * sleeps; under SCHED_FIFO it preempts them when it wakes). */
    cpu_set_t old_mask;
    bool have_mask = pthread_getaffinity_np(pthread_self(), sizeof old_mask, &old_mask) == 0;
    int pacer_cpu = -1;
    report->pacer_cpu = -1;
    if (cfg->pin && have_mask && CPU_COUNT(&old_mask) >= 2) {
        for (int c = CPU_SETSIZE - 1; c >= 0; c--) {
            if (CPU_ISSET(c, &old_mask)) {
                pacer_cpu = c;
                break;
            }
        }
    }
    pthread_t threads[256];
    unsigned started = 0;
    for (; started < nworkers; started++) {
        if (pthread_create(&threads[started], NULL, worker_main, &e) != 0)
            break;
    }
    if (started == 0) {
        rc = loom_err_set(err, LOOM_EIO, "generator: cannot start a sender thread");
        goto out;
    }
    if (pacer_cpu >= 0) { /* restored below, after the run */
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(pacer_cpu, &one);
        if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0)
            report->pacer_cpu = pacer_cpu;
    }

    /* A timer slack of 1 ns: the default 50 us would be added to every
     * sleep of the pacer. Restored afterwards. */
    /* SCHED_FIFO for this thread only: the workers were created before, so
     * they keep the normal policy. */
    int old_policy = SCHED_OTHER;
    struct sched_param old_param = {0};
    pthread_getschedparam(pthread_self(), &old_policy, &old_param);
    if (cfg->realtime) {
        struct sched_param rt = {.sched_priority = 1};
        report->realtime_errno = pthread_setschedparam(pthread_self(), SCHED_FIFO, &rt);
        report->realtime = report->realtime_errno == 0;
    }
    /* The real clock's spin adapts to how late its sleeps wake up, for a
     * realtime pacer; a fixed spin if asked (docs/generator.md). */
    loom_gen_realclock_default(real, loom_gen_arrivals_rate(&cfg->arrivals), report->realtime);
    if (cfg->spin_ns != 0) {
        real->spin_ns = cfg->spin_ns > 0 ? cfg->spin_ns : 0;
        real->spin_max_ns = 0;
    }
    real->overshoot = &report->wake;
    if (!cfg->clock)
        loom_gen_realclock_schedstat(real); /* tells QUEUED from WAKE where it can */
    int old_slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
    struct timespec cpu0, cpu1;
    struct rusage ru0, ru1;
    getrusage(RUSAGE_THREAD, &ru0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
    e.t0 = e.clock.now(e.clock.ctx);
    rc = pace(&e, &arr, err);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
    getrusage(RUSAGE_THREAD, &ru1);
    report->pacer_faults =
        (uint64_t)(ru1.ru_minflt - ru0.ru_minflt + ru1.ru_majflt - ru0.ru_majflt);
    report->pacer_preempted = (uint64_t)(ru1.ru_nivcsw - ru0.ru_nivcsw);
    loom_gen_realclock_close(real);
    report->pacer_cpu_ns =
        (cpu1.tv_sec - cpu0.tv_sec) * LOOM_NS_PER_S + (cpu1.tv_nsec - cpu0.tv_nsec);
    if (old_slack > 0)
        prctl(PR_SET_TIMERSLACK, (unsigned long)old_slack, 0, 0, 0);
    if (report->realtime)
        pthread_setschedparam(pthread_self(), old_policy, &old_param);
    if (report->pacer_cpu >= 0)
        pthread_setaffinity_np(pthread_self(), sizeof old_mask, &old_mask);

    pthread_mutex_lock(&e.mu);
    e.closing = true;
    pthread_mutex_unlock(&e.mu);
    for (unsigned i = 0; i < started; i++)
        sem_post(&e.work_sem);
    for (unsigned i = 0; i < started; i++)
        pthread_join(threads[i], NULL);

    report->elapsed_ns = e.last_ack;
    if (!cfg->clock) {
        report->spin_ns = real->spin_max_ns > real->spin_ns ? real->spin_now_ns : real->spin_ns;
        report->spin_max_ns =
            real->spin_peak_ns > report->spin_ns ? real->spin_peak_ns : report->spin_ns;
    }
    if (report->sent > 0 || report->dropped > 0)
        loom_gen_chi2(report->per_choice, src->weights, src->n, &report->chi2, &report->chi2_dof,
                      &report->chi2_p, NULL);
    else
        report->chi2_p = 1;

    loom_err_t ferr = {0};
    int frc = sink->finish ? sink->finish(sink->ctx, &ferr) : LOOM_OK;
    if (e.broken && rc == LOOM_OK) {
        rc = e.broken;
        if (err) {
            *err = e.broken_err;
            loom_err_prefix(err, "sink %s", sink->name ? sink->name : "?");
        }
    } else if (frc != LOOM_OK && rc == LOOM_OK) {
        if (err)
            *err = ferr;
        rc = frc;
    }
out:
    pthread_cond_destroy(&e.space_cv);
    sem_destroy(&e.work_sem);
    pthread_mutex_destroy(&e.mu);
    for (size_t k = 0; k < e.npool; k++)
        job_free(e.pool[k]);
    free(e.pool);
    free(e.q);
    free(real);
    return rc;
}

void loom_gen_report_free(loom_gen_report_t *r)
{
    free(r->per_choice);
    free(r->per_choice_ok);
    free(r->records);
    memset(r, 0, sizeof *r);
}
