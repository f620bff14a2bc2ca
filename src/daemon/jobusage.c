/* Usage over time of running jobs (docs/monitoring.md, "Usage series"):
 * a sampler thread reads each running local job's cgroup (or, without one,
 * its process tree) and, where NVML is present, its GPUs, and appends one
 * point per due job to the store in one transaction per tick. A job is due
 * at an interval that grows with its age (loom_usage_interval_ns); the
 * store's downsampling keeps each series under LOOM_USAGE_POINTS_MAX. The
 * job.usage method returns a series as columns.
 *
 * The sampler has its own mon collector (a collector is not thread-safe),
 * and its per-job state is touched by its thread only. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/jobusage.h"
#include "daemon/methods.h"
#include "loom/mon.h"

/* The most running jobs sampled at one tick. */
#define SAMPLED_MAX 8192

/* One running job as the sampler knows it. */
typedef struct tracked {
    int64_t id;
    pid_t pid;
    int64_t first_ns, last_ns; /* monotonic: first seen, last sampled */
    double cpu_s, read_b, write_b;
    bool have_prev, seen;
    size_t points; /* in the store */
    loom_mon_tree_t *tree;
} tracked_t;

struct loomd_jobusage {
    loom_store_t *store;
    loomd_runner_t *runner;
    loom_mon_t *mon;
    pthread_t thread;
    pthread_mutex_t mu; /* stop, cv */
    pthread_cond_t cv;
    bool stop, started;
    int64_t tick_ns;
    /* sampler thread only */
    tracked_t *jobs;
    size_t njobs, cap;
    loomd_running_t *run;
    loom_mon_snapshot_t gpu;
    bool gpu_read; /* gpu holds this tick's reading */
    int64_t *batch_ids;
    loom_usage_point_t *batch;
    size_t nbatch;
    int64_t cluster_ns;        /* monotonic: the last cluster point (0: none yet) */
    _Atomic int64_t window_ns; /* the cluster series kept */
};

/* The cluster series' resolution. */
#define CLUSTER_EVERY_NS (60 * LOOM_NS_PER_S)

/* ------------------------------------------------------------ readings */

/* What one reading of a job gives: cumulative counters and levels. */
typedef struct reading {
    int64_t mono_ns;
    double cpu_s, read_b, write_b, mem_b;
} reading_t;

static tracked_t *track(loomd_jobusage_t *u, const loomd_running_t *r, int64_t now)
{
    for (size_t i = 0; i < u->njobs; i++)
        if (u->jobs[i].id == r->id && u->jobs[i].pid == r->pid) {
            u->jobs[i].seen = true;
            return &u->jobs[i];
        }
    if (loom_vec_reserve((void **)&u->jobs, &u->cap, u->njobs + 1, sizeof *u->jobs, 64))
        return NULL;
    tracked_t *t = &u->jobs[u->njobs++];
    *t = (tracked_t){.id = r->id, .pid = r->pid, .first_ns = now, .seen = true};
    loom_usage_point_t *pts = NULL;
    /* after a restart the job may have a series already: its length counts */
    if (loom_store_usage_series(u->store, r->id, &pts, &t->points, NULL) != LOOM_OK)
        t->points = 0;
    free(pts);
    /* With many jobs, looking for new members at every reading (any pid
     * allocated on the host triggers a look) and walking /proc every 10 s
     * per job dominated the sampler's cost (docs/bench/usage.md): look at
     * most every 2 s, walk every minute. Reaped children's CPU still counts. */
    loom_mon_tree_opts_t o = {
        .details = true, .discover_ns = 2 * LOOM_NS_PER_S, .rescan_ns = 60 * LOOM_NS_PER_S};
    if (loom_mon_tree_open(&t->tree, u->mon, r->pid, &o, NULL) != LOOM_OK)
        t->tree = NULL;
    return t;
}

/* The cgroup's counters when it has them, else the process tree's. */
static int read_job(loomd_jobusage_t *u, tracked_t *t, const loomd_running_t *r, reading_t *out)
{
    loom_mon_proc_t p;
    bool tree_ok = t->tree && loom_mon_tree_read(t->tree, &p, NULL) == LOOM_OK && p.n_processes;
    out->mono_ns = loom_time_mono_ns();
    out->cpu_s = tree_ok ? p.user_seconds + p.system_seconds : NAN;
    out->mem_b = tree_ok ? (double)p.rss_bytes : NAN;
    bool io = tree_ok && p.io_source.status == LOOM_OK;
    out->read_b = io ? (double)p.read_bytes : NAN;
    out->write_b = io ? (double)p.write_bytes : NAN;
    loom_mon_cgroup_t c;
    if (r->cgroup[0] && loom_mon_cgroup_read(u->mon, r->cgroup, &c, NULL) == LOOM_OK) {
        if (c.cpu_source.status == LOOM_OK)
            out->cpu_s = c.cpu_usage_seconds;
        if (c.memory_source.status == LOOM_OK)
            out->mem_b = (double)c.memory_current_bytes;
        if (c.io_source.status == LOOM_OK) {
            out->read_b = (double)c.io_read_bytes;
            out->write_b = (double)c.io_write_bytes;
        }
    }
    return tree_ok || r->cgroup[0] ? LOOM_OK : LOOM_ENOTFOUND;
}

static double rate(double now, double before, double seconds)
{
    if (isnan(now) || isnan(before) || seconds <= 0 || now < before)
        return NAN;
    return (now - before) / seconds;
}

/* ---------------------------------------------------------------- GPUs */

static const loom_mon_gpu_t *gpu_at(loomd_jobusage_t *u, int index)
{
    if (!u->gpu_read) {
        u->gpu_read = true;
        if (loom_mon_read(u->mon, LOOM_MON_GPU, &u->gpu, NULL) != LOOM_OK)
            u->gpu.gpu.n = 0;
    }
    if (u->gpu.gpu.source.status != LOOM_OK)
        return NULL;
    for (size_t i = 0; i < u->gpu.gpu.n; i++)
        if ((int)u->gpu.gpu.gpus[i].index == index)
            return &u->gpu.gpu.gpus[i];
    return NULL;
}

static double field(const loom_mon_gpu_t *g, int f, double v)
{
    return g->field_status[f] == 0 ? v : NAN;
}

/* A whole GPU: the device's own figures. A share: the job's processes'
 * memory and utilisation, no power (the board's is not the job's). */
static void gpu_point(const loom_mon_gpu_t *g, const tracked_t *t, bool whole, loom_usage_gpu_t *o)
{
    o->index = (int)g->index;
    if (whole) {
        o->util_pct = field(g, LOOM_MON_GPU_F_UTIL, g->util_gpu_pct);
        o->memory_bytes = field(g, LOOM_MON_GPU_F_MEMORY, (double)g->memory_used_bytes);
        o->power_watts = field(g, LOOM_MON_GPU_F_POWER, g->power_watts);
    } else {
        double util = 0, mem = 0;
        for (size_t k = 0; k < g->n_procs; k++) {
            const loom_mon_gpu_process_t *p = &g->procs[k];
            if (!t->tree || !loom_mon_tree_has(t->tree, (pid_t)p->pid))
                continue;
            mem += p->memory_known ? (double)p->used_memory_bytes : 0;
            util += p->util_valid ? p->sm_util_pct : 0;
        }
        o->util_pct = field(g, LOOM_MON_GPU_F_PROC_UTIL, util > 100 ? 100 : util);
        o->memory_bytes = field(g, LOOM_MON_GPU_F_PROCESSES, mem);
        o->power_watts = NAN;
    }
    o->util_peak_pct = o->util_pct;
    o->memory_peak_bytes = o->memory_bytes;
}

static void add_gpus(loomd_jobusage_t *u, const tracked_t *t, const loomd_running_t *r,
                     loom_usage_point_t *p)
{
    for (int k = 0; k < r->ngpus && p->ngpus < LOOM_USAGE_GPUS_MAX; k++) {
        const loom_mon_gpu_t *g = gpu_at(u, r->gpus[k]);
        if (g)
            gpu_point(g, t, r->gpu_milli <= 0 || r->gpu_milli >= 1000, &p->gpus[p->ngpus++]);
    }
}

/* ------------------------------------------------------------- a tick */

/* Samples t if it is due: a point from the last reading to this one goes
 * to the batch (the first reading only sets the counters). */
static void sample(loomd_jobusage_t *u, tracked_t *t, const loomd_running_t *r, int64_t now)
{
    if (t->have_prev && now - t->last_ns < loom_usage_interval_ns(now - t->first_ns))
        return;
    reading_t x;
    if (read_job(u, t, r, &x) != LOOM_OK)
        return;
    if (t->have_prev) {
        double dt = (double)(x.mono_ns - t->last_ns) / 1e9;
        loom_usage_point_t *p = &u->batch[u->nbatch];
        memset(p, 0, sizeof *p);
        p->time_ns = loom_time_real_ns();
        p->span_ns = x.mono_ns - t->last_ns;
        p->cpu_cores = rate(x.cpu_s, t->cpu_s, dt);
        p->memory_bytes = p->memory_peak_bytes = x.mem_b;
        p->read_bytes_per_second = rate(x.read_b, t->read_b, dt);
        p->write_bytes_per_second = rate(x.write_b, t->write_b, dt);
        add_gpus(u, t, r, p);
        u->batch_ids[u->nbatch++] = t->id;
    }
    t->have_prev = true;
    t->last_ns = x.mono_ns;
    t->cpu_s = x.cpu_s;
    t->read_b = x.read_b;
    t->write_b = x.write_b;
}

/* Forgets the jobs that no longer run. */
static void drop_unseen(loomd_jobusage_t *u)
{
    size_t k = 0;
    for (size_t i = 0; i < u->njobs; i++) {
        if (!u->jobs[i].seen) {
            loom_mon_tree_close(u->jobs[i].tree);
            continue;
        }
        u->jobs[i].seen = false;
        u->jobs[k++] = u->jobs[i];
    }
    u->njobs = k;
}

/* Writes the batch; downsamples the series that grew past the bound. */
static void flush(loomd_jobusage_t *u)
{
    loom_err_t err;
    if (u->nbatch == 0)
        return;
    if (loom_store_usage_append(u->store, u->batch_ids, u->batch, u->nbatch, &err) != LOOM_OK) {
        loom_log_warn("jobusage.append", "points=%zu error=\"%s\"", u->nbatch, err.msg);
        u->nbatch = 0;
        return;
    }
    for (size_t i = 0; i < u->njobs; i++)
        for (size_t b = 0; b < u->nbatch; b++)
            if (u->batch_ids[b] == u->jobs[i].id && ++u->jobs[i].points > LOOM_USAGE_POINTS_MAX &&
                loom_store_usage_downsample(u->store, u->jobs[i].id, 0, &u->jobs[i].points, &err) !=
                    LOOM_OK)
                loom_log_warn("jobusage.downsample", "job=%lld error=\"%s\"",
                              (long long)u->jobs[i].id, err.msg);
    u->nbatch = 0;
}

/* GPUs NVML sees at 5% utilisation or more; NAN without NVML. */
static double gpus_busy(loomd_jobusage_t *u)
{
    gpu_at(u, -1); /* reads this tick's GPUs if no job did */
    if (u->gpu.gpu.source.status != LOOM_OK)
        return NAN;
    double busy = 0;
    for (size_t i = 0; i < u->gpu.gpu.n; i++)
        busy += u->gpu.gpu.gpus[i].field_status[LOOM_MON_GPU_F_UTIL] == 0 &&
                u->gpu.gpu.gpus[i].util_gpu_pct >= 5;
    return busy;
}

/* One cluster point a minute: the allocation, the queue, busy GPUs. */
static void cluster_sample(loomd_jobusage_t *u, int64_t now)
{
    if (u->cluster_ns && now - u->cluster_ns < CLUSTER_EVERY_NS)
        return;
    loomd_alloc_t a;
    loomd_runner_alloc(u->runner, &a);
    loom_store_stats_t st;
    loom_err_t err;
    double pending = loom_store_stats(u->store, &st, NULL) == LOOM_OK
                         ? (double)st.jobs_by_state[LOOM_JOB_PENDING]
                         : NAN;
    loom_cluster_point_t p = {.time_ns = loom_time_real_ns(),
                              .span_ns = u->cluster_ns ? now - u->cluster_ns : CLUSTER_EVERY_NS,
                              .gpus_total = a.gpus_total,
                              .gpus_allocated = a.gpus_allocated,
                              .gpus_whole = a.gpus_whole,
                              .gpus_shared = a.gpus_shared,
                              .gpus_busy = gpus_busy(u),
                              .cpus_total = a.cpus_total,
                              .cpus_allocated = a.cpus_allocated,
                              .memory_total_bytes = a.memory_total_bytes,
                              .memory_allocated_bytes = a.memory_allocated_bytes,
                              .pending = pending,
                              .running = a.running};
    u->cluster_ns = now;
    if (loom_store_cluster_append(u->store, &p, u->window_ns, &err) != LOOM_OK)
        loom_log_warn("jobusage.cluster", "error=\"%s\"", err.msg);
}

void loomd_jobusage_set_window(loomd_jobusage_t *u, int64_t window_ns)
{
    u->window_ns = window_ns;
}

void loomd_jobusage_tick(loomd_jobusage_t *u)
{
    size_t n = loomd_runner_sampled(u->runner, u->run, SAMPLED_MAX);
    int64_t now = loom_time_mono_ns();
    u->gpu_read = false;
    for (size_t i = 0; i < n; i++) {
        tracked_t *t = track(u, &u->run[i], now);
        if (t)
            sample(u, t, &u->run[i], now);
    }
    drop_unseen(u);
    flush(u);
    cluster_sample(u, now);
}

static void *run_thread(void *arg)
{
    loomd_jobusage_t *u = arg;
    pthread_mutex_lock(&u->mu);
    while (!u->stop) {
        pthread_mutex_unlock(&u->mu);
        loomd_jobusage_tick(u);
        pthread_mutex_lock(&u->mu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t at = (int64_t)ts.tv_sec * LOOM_NS_PER_S + ts.tv_nsec + u->tick_ns;
        ts.tv_sec = (time_t)(at / LOOM_NS_PER_S);
        ts.tv_nsec = (long)(at % LOOM_NS_PER_S);
        while (!u->stop && pthread_cond_timedwait(&u->cv, &u->mu, &ts) == 0)
            ;
    }
    pthread_mutex_unlock(&u->mu);
    return NULL;
}

/* ------------------------------------------------------------ lifetime */

int loomd_jobusage_open(loom_store_t *store, loomd_runner_t *runner, bool start,
                        loomd_jobusage_t **out, loom_err_t *err)
{
    loomd_jobusage_t *u = calloc(1, sizeof *u);
    if (!u)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cv, NULL);
    loom_mon_snapshot_init(&u->gpu);
    u->store = store;
    u->runner = runner;
    u->tick_ns = LOOM_NS_PER_S;
    if (!(u->run = malloc(SAMPLED_MAX * sizeof *u->run)) ||
        !(u->batch = malloc(SAMPLED_MAX * sizeof *u->batch)) ||
        !(u->batch_ids = malloc(SAMPLED_MAX * sizeof *u->batch_ids))) {
        loomd_jobusage_close(u);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    if (loom_mon_open(&u->mon, NULL, err) != LOOM_OK) {
        loomd_jobusage_close(u);
        return loom_err_prefix(err, "usage sampler");
    }
    if (start && runner && pthread_create(&u->thread, NULL, run_thread, u) == 0)
        u->started = true;
    *out = u;
    return LOOM_OK;
}

loom_store_t *loomd_jobusage_store(const loomd_jobusage_t *u)
{
    return u->store;
}

void loomd_jobusage_close(loomd_jobusage_t *u)
{
    if (!u)
        return;
    if (u->started) {
        pthread_mutex_lock(&u->mu);
        u->stop = true;
        pthread_cond_signal(&u->cv);
        pthread_mutex_unlock(&u->mu);
        pthread_join(u->thread, NULL);
    }
    for (size_t i = 0; i < u->njobs; i++)
        loom_mon_tree_close(u->jobs[i].tree);
    free(u->jobs);
    free(u->run);
    free(u->batch);
    free(u->batch_ids);
    loom_mon_snapshot_free(&u->gpu);
    loom_mon_close(u->mon);
    pthread_mutex_destroy(&u->mu);
    pthread_cond_destroy(&u->cv);
    free(u);
}
