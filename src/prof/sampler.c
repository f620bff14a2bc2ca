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
#include <stdio.h>
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

/* One GPU reading: per device, the NVML values and the memory that the
 * tree's processes hold on it. A device NVML fails on is recorded with its
 * status; a failed read as a whole is kept as gpu_status (first failure). */
static void read_gpus(prof_sampler_t *s)
{
    loom_err_t err;
    if (loom_mon_read(s->mon, LOOM_MON_GPU, &s->snap, &err)) {
        if (!s->gpu_status[0])
            snprintf(s->gpu_status, sizeof s->gpu_status, "%s", err.msg);
        return;
    }
    const loom_mon_gpus_t *g = &s->snap.gpu;
    if (g->source.status != LOOM_OK) {
        if (!s->gpu_status[0])
            snprintf(s->gpu_status, sizeof s->gpu_status, "%s", g->source.reason);
        return;
    }
    if (s->gpu_names && json_array_size(s->gpu_names) == 0)
        for (size_t i = 0; i < g->n; i++)
            json_array_append_new(s->gpu_names, json_string(g->gpus[i].name));
    int64_t now = loom_time_mono_ns();
    for (size_t i = 0; i < g->n; i++) {
        const loom_mon_gpu_t *d = &g->gpus[i];
        if (s->ngpu == s->capgpu) {
            size_t cap = s->capgpu ? 2 * s->capgpu : 256;
            loom_prof_gpu_sample_t *p = realloc(s->gpu, cap * sizeof *p);
            if (!p) {
                s->oom = true;
                return;
            }
            s->gpu = p;
            s->capgpu = cap;
        }
        const int *fs = d->field_status;
        bool ok = d->status == 0;
        double tree = -1;
        if (ok && fs[LOOM_MON_GPU_F_PROCESSES] == 0) {
            tree = 0;
            for (size_t k = 0; k < d->n_procs; k++)
                if (d->procs[k].memory_known && prof_tree_has(&s->tree, (pid_t)d->procs[k].pid))
                    tree += (double)d->procs[k].used_memory_bytes;
        }
        bool util = ok && fs[LOOM_MON_GPU_F_UTIL] == 0, mem = ok && fs[LOOM_MON_GPU_F_MEMORY] == 0;
        s->gpu[s->ngpu++] = (loom_prof_gpu_sample_t){
            now,
            d->index,
            d->status,
            util ? (double)d->util_gpu_pct : -1.0,
            util ? (double)d->util_memory_pct : -1.0,
            mem ? (double)d->memory_used_bytes : -1,
            mem ? (double)d->memory_total_bytes : -1,
            ok && fs[LOOM_MON_GPU_F_POWER] == 0 ? d->power_watts : -1,
            tree,
        };
    }
}

static void *run(void *arg)
{
    prof_sampler_t *s = arg;
    int64_t start = loom_time_mono_ns();
    int64_t next = start, next_rescan = start, next_gpu = start;
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
        if (s->mon && now >= next_gpu) {
            read_gpus(s);
            next_gpu += s->gpu_interval_ns;
            if (next_gpu <= now)
                next_gpu = now + s->gpu_interval_ns;
        }
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
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
        s->self_cpu_ns = (int64_t)ts.tv_sec * LOOM_NS_PER_S + ts.tv_nsec;
    return NULL;
}

int prof_sampler_start(prof_sampler_t *s, pid_t root, int64_t interval_ns, int64_t rescan_ns,
                       int64_t gpu_interval_ns, loom_err_t *err)
{
    memset(s, 0, sizeof *s);
    if (interval_ns <= 0)
        return loom_err_set(err, LOOM_EINVAL, "sampling interval must be > 0");
    s->interval_ns = interval_ns;
    s->rescan_ns = rescan_ns > 0 ? rescan_ns : LOOM_NS_PER_S;
    int rc = prof_tree_init(&s->tree, root, err);
    if (rc)
        return rc;
    loom_mon_snapshot_init(&s->snap);
    if (gpu_interval_ns > 0) {
        /* No GPU source is not an error: the run goes on and says why. */
        loom_err_t merr;
        s->gpu_interval_ns = gpu_interval_ns;
        s->gpu_names = json_array();
        if (loom_mon_open(&s->mon, NULL, &merr)) {
            snprintf(s->gpu_status, sizeof s->gpu_status, "%s", merr.msg);
            s->mon = NULL;
        }
    }
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
        loom_mon_close(s->mon);
        loom_mon_snapshot_free(&s->snap);
        json_decref(s->gpu_names);
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
    loom_mon_close(s->mon);
    s->mon = NULL;
    loom_mon_snapshot_free(&s->snap);
}

void prof_sampler_free(prof_sampler_t *s)
{
    free(s->samples);
    s->samples = NULL;
    s->n = s->cap = 0;
    free(s->gpu);
    s->gpu = NULL;
    s->ngpu = s->capgpu = 0;
    json_decref(s->gpu_names);
    s->gpu_names = NULL;
}
