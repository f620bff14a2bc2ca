/* Private interfaces between the files of src/prof. */
#ifndef LOOM_PROF_INTERNAL_H
#define LOOM_PROF_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "loom/mon.h"
#include "loom/prof.h"

/* record.c: summary of the CUPTI tracer's kernels.csv text (header line,
 * then kind,start_ns,end_ns,bytes,device,stream,name): an object with
 * records, malformed_lines, by_kind and by_class. */
json_t *prof_kernels_parse(const char *text, size_t len);
/* record.c: NVML's mean GPU utilisation against CUPTI's kernel busy time
 * (the union of the kernel intervals) over the span of the NVML samples:
 * {"compared": true, nvml_index, cuda_device, span_s, nvml_samples,
 * nvml_util_mean_pct, cupti_busy_pct, difference_pct_points}, or
 * {"compared": false, "why": ...} (timestamps not on CLOCK_MONOTONIC, not
 * one GPU, too few samples, no kernels). text is the tracer's kernels.csv. */
json_t *prof_gpu_busy(const char *text, size_t len, bool monotonic, const loom_prof_gpu_sample_t *g,
                      size_t ng);

/* plot.c: figures as SVG text (appended to b). */
void prof_svg_text(loom_buf_t *b, const char *s); /* XML-escaped text */
void prof_steps_svg(const loom_prof_run_t *r, const loom_prof_summary_t *s, loom_buf_t *b);
/* Needs rf->have_counts and rf->have_device. */
void prof_roofline_svg(const loom_prof_roofline_t *rf, const char *device, loom_buf_t *b);

/* sampler.c: one thread sampling a tree on an absolute schedule. */
typedef struct prof_sampler {
    loom_mon_t *mon;       /* the tree's /proc, and the GPUs */
    loom_mon_tree_t *tree; /* the command's process tree */
    loom_prof_sample_t last;
    int64_t interval_ns, rescan_ns;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop;    /* under lock */
    bool paused;  /* under lock: --toggle's off blocks */
    bool resumed; /* under lock: take a tick at once, restart the schedule */
    loom_prof_sample_t *samples;
    size_t n, cap;
    size_t missed;
    int64_t self_cpu_ns; /* the thread's CPU time, read as it ends */
    bool oom;
    /* GPUs, through the monitoring part (gpu_on: asked for). */
    bool gpu_on;
    int64_t gpu_interval_ns;
    loom_mon_snapshot_t snap;
    char gpu_status[256];
    json_t *gpu_names;
    loom_prof_gpu_sample_t *gpu;
    size_t ngpu, capgpu;
} prof_sampler_t;

int prof_sampler_start(prof_sampler_t *s, pid_t root, int64_t interval_ns, int64_t rescan_ns,
                       int64_t gpu_interval_ns, loom_err_t *err);
/* Pauses (no wake-ups at all) or resumes sampling; returns when the
 * change is requested, which the thread sees within microseconds. */
void prof_sampler_pause(prof_sampler_t *s, bool paused);
/* Takes a last sample, stops the thread and hands the samples over. */
void prof_sampler_stop(prof_sampler_t *s);
void prof_sampler_free(prof_sampler_t *s);

#endif
