/* The sampling thread: one thread, an absolute schedule.
 *
 * Tick k fires at start + k * interval on CLOCK_MONOTONIC, so lateness in
 * one tick does not shift the next; a tick that could not be taken in its
 * slot is skipped and counted (missed), never bunched up. The thread waits
 * on a condition variable with an absolute monotonic deadline, so stopping
 * does not wait for the next tick. Samples stay owned by the thread until
 * it is joined: no locking on the sample path. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prof/prof_internal.h"

static void append(prof_sampler_t *s, const loom_prof_sample_t *x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        loom_prof_sample_t *p = realloc(s->samples, cap * sizeof *p);
        if (!p) {
            s->oom = true;
            return;
        }
        s->samples = p;
        s->cap = cap;
    }
    s->samples[s->n++] = *x;
}

static void *run(void *arg)
{
    prof_sampler_t *s = arg;
    int64_t start = loom_time_mono_ns();
    int64_t next = start, next_rescan = start;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->stop && loom_time_mono_ns() < next) {
            struct timespec ts = {next / LOOM_NS_PER_S, next % LOOM_NS_PER_S};
            pthread_cond_timedwait(&s->wake, &s->lock, &ts);
        }
        if (s->stop)
            break;
        pthread_mutex_unlock(&s->lock);
        int64_t now = loom_time_mono_ns();
        if (now >= next_rescan) {
            prof_tree_rescan(&s->tree);
            next_rescan = now + s->rescan_ns;
        }
        loom_prof_sample_t x;
        prof_tree_sample(&s->tree, &x);
        append(s, &x);
        next += s->interval_ns;
        now = loom_time_mono_ns();
        if (now >= next) {
            int64_t late = (now - next) / s->interval_ns + 1;
            s->missed += (size_t)late;
            next += late * s->interval_ns;
        }
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    /* The last sample: the caller stops us after the command exited and
     * before reaping it, so the zombie's totals are still readable. */
    prof_tree_rescan(&s->tree);
    loom_prof_sample_t x;
    prof_tree_sample(&s->tree, &x);
    append(s, &x);
    return NULL;
}

int prof_sampler_start(prof_sampler_t *s, pid_t root, int64_t interval_ns, int64_t rescan_ns,
                       loom_err_t *err)
{
    memset(s, 0, sizeof *s);
    if (interval_ns <= 0)
        return loom_err_set(err, LOOM_EINVAL, "sampling interval must be > 0");
    s->interval_ns = interval_ns;
    s->rescan_ns = rescan_ns > 0 ? rescan_ns : LOOM_NS_PER_S;
    int rc = prof_tree_init(&s->tree, root, err);
    if (rc)
        return rc;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&s->lock, NULL);
    int e = pthread_create(&s->thread, NULL, run, s);
    if (e) {
        pthread_cond_destroy(&s->wake);
        pthread_mutex_destroy(&s->lock);
        prof_tree_free(&s->tree);
        return loom_err_errno(err, LOOM_EIO, e, "cannot start the sampling thread");
    }
    return LOOM_OK;
}

void prof_sampler_stop(prof_sampler_t *s)
{
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    prof_tree_free(&s->tree);
}

void prof_sampler_free(prof_sampler_t *s)
{
    free(s->samples);
    s->samples = NULL;
    s->n = s->cap = 0;
}
