/* A job's usage summary (docs/protocol.md, the job object's
 * "usage_summary"): what a user asks first once a job has run. Mean and
 * peak GPU utilisation and memory against what it asked for, CPU
 * efficiency as Slurm's seff computes it (CPU time over allocated cores x
 * elapsed time), and hints when a request was far above use. Read from the
 * job's usage series and, once it has ended, its outcome's CPU time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/jobusage.h"

/* A GPU counts as used if it was ever busier than this or held this much
 * memory; below both, the job only held it. */
#define GPU_USED_PCT   5.0
#define GPU_USED_BYTES (256.0 * 1024 * 1024)
/* A hint when the use is under this fraction of the request. */
#define HINT_FRACTION 0.25

typedef struct gpu_acc {
    int index;
    double util_sum, mem_sum, weight, util_peak, mem_peak;
} gpu_acc_t;

typedef struct acc {
    double seconds, cpu_sum, cpu_peak, mem_sum, mem_peak, mem_weight;
    gpu_acc_t gpus[LOOM_USAGE_GPUS_MAX];
    int ngpus;
} acc_t;

static double maxd(double a, double b)
{
    return isnan(b) || a >= b ? a : b;
}

static gpu_acc_t *acc_gpu(acc_t *a, int index)
{
    for (int g = 0; g < a->ngpus; g++)
        if (a->gpus[g].index == index)
            return &a->gpus[g];
    if (a->ngpus == LOOM_USAGE_GPUS_MAX)
        return NULL;
    a->gpus[a->ngpus] = (gpu_acc_t){.index = index};
    return &a->gpus[a->ngpus++];
}

static void add_point(acc_t *a, const loom_usage_point_t *p)
{
    double w = (double)p->span_ns / 1e9;
    a->seconds += w;
    if (isfinite(p->cpu_cores))
        a->cpu_sum += p->cpu_cores * w;
    a->cpu_peak = maxd(a->cpu_peak, p->cpu_cores);
    if (isfinite(p->memory_bytes)) {
        a->mem_sum += p->memory_bytes * w;
        a->mem_weight += w;
    }
    a->mem_peak = maxd(a->mem_peak, p->memory_peak_bytes);
    for (int k = 0; k < p->ngpus; k++) {
        const loom_usage_gpu_t *x = &p->gpus[k];
        gpu_acc_t *g = acc_gpu(a, x->index);
        if (!g || isnan(x->util_pct))
            continue;
        g->util_sum += x->util_pct * w;
        g->mem_sum += isfinite(x->memory_bytes) ? x->memory_bytes * w : 0;
        g->weight += w;
        g->util_peak = maxd(g->util_peak, x->util_peak_pct);
        g->mem_peak = maxd(g->mem_peak, x->memory_peak_bytes);
    }
}

/* The GPU part: per GPU and over them; *used counts the GPUs used. */
static json_t *gpus_json(const acc_t *a, const loom_job_t *job, int *used)
{
    json_t *per = json_array();
    double util = 0, mem = 0, upeak = 0, mpeak = 0;
    *used = 0;
    for (int g = 0; g < a->ngpus; g++) {
        const gpu_acc_t *x = &a->gpus[g];
        double u = x->weight > 0 ? x->util_sum / x->weight : 0;
        double m = x->weight > 0 ? x->mem_sum / x->weight : 0;
        bool is_used = x->util_peak >= GPU_USED_PCT || x->mem_peak >= GPU_USED_BYTES;
        *used += is_used;
        util += u / a->ngpus;
        mem += m / a->ngpus;
        upeak = maxd(upeak, x->util_peak);
        mpeak = maxd(mpeak, x->mem_peak);
        json_array_append_new(per, json_pack("{s:i, s:f, s:f, s:f, s:f, s:b}", "index", x->index,
                                             "util_mean_percent", u, "util_peak_percent",
                                             x->util_peak, "memory_mean_bytes", m,
                                             "memory_peak_bytes", x->mem_peak, "used", is_used));
    }
    return json_pack("{s:I, s:I, s:I, s:i, s:f, s:f, s:f, s:f, s:o}", "requested",
                     (json_int_t)job->gpus, "share_milli", (json_int_t)job->gpu_share_milli,
                     "memory_requested_bytes", (json_int_t)job->gpu_memory_bytes, "used", *used,
                     "util_mean_percent", util, "util_peak_percent", upeak, "memory_mean_bytes",
                     mem, "memory_peak_bytes", mpeak, "per_gpu", per);
}

/* seff's CPU efficiency: CPU time / (cores x elapsed). An ended job's CPU
 * time and elapsed time are its outcome's; a running one's, the series'. */
static double cpu_efficiency(const acc_t *a, const loom_job_t *job)
{
    json_t *run = job->run_json ? json_loads(job->run_json, 0, NULL) : NULL;
    const json_t *o = json_object_get(run, "outcome");
    double cpu = a->cpu_sum, secs = a->seconds;
    if (json_is_object(o) && job->end_time_ns > job->start_time_ns && job->start_time_ns > 0) {
        cpu = json_number_value(json_object_get(o, "cpu_user_s")) +
              json_number_value(json_object_get(o, "cpu_sys_s"));
        secs = (double)(job->end_time_ns - job->start_time_ns) / 1e9;
    }
    json_decref(run);
    double cores = job->cpus > 0 ? (double)job->cpus : 1;
    return secs > 0 ? cpu / (cores * secs) : NAN;
}

static void hint(json_t *hints, const char *fmt, double a, double b)
{
    char text[200];
    snprintf(text, sizeof text, fmt, a, b);
    json_array_append_new(hints, json_string(text));
}

static void add_hints(const acc_t *a, const loom_job_t *job, int used, double eff, json_t *hints)
{
    if (a->ngpus > 0 && job->gpus > 1 && used < job->gpus)
        hint(
            hints,
            "asked for %.0f GPUs, used %.0f (the others stayed idle): ask for fewer, or check that "
            "the job spreads over all of them",
            (double)job->gpus, (double)used);
    else if (job->gpus >= 1 && used == 0 && a->ngpus > 0)
        hint(hints, "asked for %.0f GPU(s), used %.0f: the job may not use the GPU at all",
             (double)job->gpus, (double)used);
    if (job->cpus >= 2 && isfinite(eff) && eff < HINT_FRACTION)
        hint(hints, "asked for %.0f CPUs, used %.2f on average (CPU efficiency below 25%%)",
             (double)job->cpus, eff * (double)job->cpus);
    if (job->memory_bytes > 0 && a->mem_peak > 0 &&
        a->mem_peak < HINT_FRACTION * (double)job->memory_bytes)
        hint(hints, "asked for %.1f GiB of memory, used at most %.2f GiB",
             (double)job->memory_bytes / 1073741824.0, a->mem_peak / 1073741824.0);
}

void loomd_usage_summary_add(loom_store_t *store, const loom_job_t *job, json_t *j)
{
    loom_usage_point_t *p;
    size_t n;
    if (loom_store_usage_series(store, job->id, &p, &n, NULL) != LOOM_OK)
        return;
    json_t *s = loomd_usage_summary(job, p, n);
    if (s)
        json_object_set_new(j, "usage_summary", s);
    free(p);
}

json_t *loomd_usage_summary(const loom_job_t *job, const loom_usage_point_t *p, size_t n)
{
    if (n == 0)
        return NULL;
    acc_t a = {0};
    for (size_t i = 0; i < n; i++)
        add_point(&a, &p[i]);
    int used;
    json_t *gpus = gpus_json(&a, job, &used);
    double eff = cpu_efficiency(&a, job);
    json_t *hints = json_array();
    add_hints(&a, job, used, eff, hints);
    json_t *cpu = json_pack("{s:I, s:f, s:f}", "allocated", (json_int_t)job->cpus, "mean_cores",
                            a.seconds > 0 ? a.cpu_sum / a.seconds : 0, "peak_cores", a.cpu_peak);
    json_object_set_new(cpu, "efficiency", isfinite(eff) ? json_real(eff) : json_null());
    json_t *mem =
        json_pack("{s:I, s:f, s:f}", "requested_bytes", (json_int_t)job->memory_bytes, "mean_bytes",
                  a.mem_weight > 0 ? a.mem_sum / a.mem_weight : 0, "peak_bytes", a.mem_peak);
    return json_pack("{s:I, s:f, s:o, s:o, s:o, s:o}", "points", (json_int_t)n, "seconds",
                     a.seconds, "cpu", cpu, "memory", mem, "gpus", gpus, "hints", hints);
}
