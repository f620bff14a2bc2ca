/* The sampling thread: one thread, an absolute schedule.
 *
 * Tick k fires at start + k * interval on CLOCK_MONOTONIC, so lateness in
 * one tick does not shift the next; a tick that could not be taken in its
 * slot is skipped and counted (missed), never bunched up. The thread waits
 * on a condition variable with an absolute monotonic deadline, so stopping
 * does not wait for the next tick. Samples stay owned by the thread until
 * it is joined: no locking on the sample path.
 *
 * The process tree is read through the monitoring part's incremental tree
 * reader (loom_mon_tree_*, src/mon/tree.c): one pread of each member's
 * open /proc/PID/stat per tick; every PROF_LOOK_NS one pread of
 * /proc/loadavg and, when the kernel allocated a pid since, a look at the
 * members' children; a full walk of /proc every --rescan. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "prof/prof_internal.h"

/* How often the tree is checked for new processes: a tenth of a second
 * finds a DataLoader worker soon after it starts, at a tenth of the cost
 * of checking at every 10 ms tick (docs/bench/prof_sample.md). */
#define PROF_LOOK_NS (100 * LOOM_NS_PER_MS)
/* The default --rescan: a full walk of /proc opens every process's stat
 * (~0.5 ms with 70 processes here, tens of ms on a node with thousands);
 * the looks above already find new children within PROF_LOOK_NS, so the
 * walk is only a safety net and need not come every second. */
#define PROF_RESCAN_NS (10 * LOOM_NS_PER_S)

static void append(prof_sampler_t *s, const loom_prof_sample_t *x)
{
    if (loom_vec_reserve((void **)&s->samples, &s->cap, s->n + 1, sizeof *s->samples, 1024)) {
        s->oom = true;
        return;
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
        if (loom_vec_reserve((void **)&s->gpu, &s->capgpu, s->ngpu + 1, sizeof *s->gpu, 256)) {
            s->oom = true;
            return;
        }
        const int *fs = d->field_status;
        bool ok = d->status == 0;
        double tree = -1;
        if (ok && fs[LOOM_MON_GPU_F_PROCESSES] == 0) {
            tree = 0;
            for (size_t k = 0; k < d->n_procs; k++)
                if (d->procs[k].memory_known && loom_mon_tree_has(s->tree, (pid_t)d->procs[k].pid))
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

/* One tick of the tree: cumulative CPU (ns), memory, processes, threads. */
static void sample_tree(prof_sampler_t *s, loom_prof_sample_t *x)
{
    loom_mon_proc_t p;
    memset(x, 0, sizeof *x);
    if (loom_mon_tree_read(s->tree, &p, NULL) == LOOM_OK) {
        x->user_ns = (int64_t)llround(p.user_seconds * 1e9);
        x->sys_ns = (int64_t)llround(p.system_seconds * 1e9);
        x->rss_bytes = (int64_t)p.rss_bytes;
        x->nprocs = (int32_t)p.n_processes;
        x->nthreads = (int32_t)p.threads;
        s->last = *x;
    } else {
        *x = s->last; /* a failed look (out of memory): repeat the totals */
    }
    x->t_ns = loom_time_mono_ns();
}

static void *run(void *arg)
{
    prof_sampler_t *s = arg;
    int64_t start = loom_time_mono_ns();
    int64_t next = start, next_gpu = start;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        for (;;) {
            if (s->stop)
                break;
            if (s->paused) {
                pthread_cond_wait(&s->wake, &s->lock);
                continue;
            }
            if (s->resumed) {
                /* Back from a pause: the schedule restarts now, and the
                 * ticks not taken while paused are not missed ones. */
                s->resumed = false;
                next = loom_time_mono_ns();
                break;
            }
            if (loom_time_mono_ns() >= next)
                break;
            struct timespec ts = {next / LOOM_NS_PER_S, next % LOOM_NS_PER_S};
            pthread_cond_timedwait(&s->wake, &s->lock, &ts);
        }
        if (s->stop)
            break;
        pthread_mutex_unlock(&s->lock);
        int64_t now = loom_time_mono_ns();
        loom_prof_sample_t x;
        sample_tree(s, &x);
        append(s, &x);
        if (s->gpu_on && now >= next_gpu) {
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
     * before reaping it, so the zombie's totals are still readable; a full
     * walk first, so that no process born since the last check is missed. */
    loom_mon_tree_rescan(s->tree, NULL);
    loom_prof_sample_t x;
    sample_tree(s, &x);
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
    s->rescan_ns = rescan_ns > 0 ? rescan_ns : PROF_RESCAN_NS;
    loom_mon_snapshot_init(&s->snap);
    int rc = loom_mon_open(&s->mon, NULL, err);
    if (rc)
        return rc;
    /* New processes: a check every PROF_LOOK_NS (and a look at the members'
     * children when the kernel allocated a pid since), a full walk every
     * --rescan. */
    loom_mon_tree_opts_t to = {.rescan_ns = s->rescan_ns, .discover_ns = PROF_LOOK_NS};
    if ((rc = loom_mon_tree_open(&s->tree, s->mon, root, &to, err)))
        goto fail_mon;
    if (gpu_interval_ns > 0) {
        /* No GPU source is not an error: the run goes on and says why
         * (the first reading records it in gpu_status). */
        s->gpu_on = true;
        s->gpu_interval_ns = gpu_interval_ns;
        s->gpu_names = json_array();
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&s->lock, NULL);
    int e = pthread_create(&s->thread, NULL, run, s);
    if (e) {
        rc = loom_err_errno(err, LOOM_EIO, e, "cannot start the sampling thread");
        pthread_cond_destroy(&s->wake);
        pthread_mutex_destroy(&s->lock);
        json_decref(s->gpu_names);
        s->gpu_names = NULL;
        loom_mon_tree_close(s->tree);
        goto fail_mon;
    }
    return LOOM_OK;
fail_mon:
    loom_mon_close(s->mon);
    s->mon = NULL;
    s->tree = NULL;
    loom_mon_snapshot_free(&s->snap);
    return rc;
}

void prof_sampler_pause(prof_sampler_t *s, bool paused)
{
    pthread_mutex_lock(&s->lock);
    if (s->paused != paused) {
        s->paused = paused;
        s->resumed = !paused;
        pthread_cond_signal(&s->wake);
    }
    pthread_mutex_unlock(&s->lock);
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
    loom_mon_tree_close(s->tree);
    s->tree = NULL;
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
