/* loom prof: profiling DNN workloads (docs/profiling.md).
 *
 * `loom prof -- COMMAND` runs a command, samples its process tree on an
 * absolute schedule from one thread, collects the step markers it reports
 * (a stdout line or a line on the descriptor named by LOOM_PROF_FD), and
 * turns both into a run record (JSON, CSV) and a report: step-time
 * distribution, throughput, warm-up, CPU utilisation, memory peak and the
 * time split the markers allow. With --kernels it injects a CUPTI activity
 * tracer (src/prof/cupti/) through CUDA_INJECTION64_PATH. loom_prof_ab
 * measures the profiler's own cost by alternating runs with and without it.
 *
 * The process tree is sampled through the monitoring part's incremental
 * tree reader (loom_mon_tree_*: one pread of an open /proc/PID/stat per
 * member and tick, a look at new pids only when the kernel allocated some;
 * costs in docs/bench/prof_sample.md). GPUs are read through the
 * monitoring part too (NVML).
 */
#ifndef LOOM_PROF_H
#define LOOM_PROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loom/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------- step markers */

#define LOOM_PROF_FD_ENV     "LOOM_PROF_FD"
#define LOOM_PROF_MARKER_MAX 1024 /* longest marker line, bytes, no newline */

/* One step as the workload reported it. Unknown optional fields are -1. */
typedef struct loom_prof_step {
    int64_t step;     /* the workload's step number, >= 0 */
    int64_t start_ns; /* CLOCK_MONOTONIC */
    int64_t end_ns;   /* >= start_ns */
    int64_t items;    /* samples processed in the step (for throughput) */
    int64_t data_ns;  /* input preparation inside the step */
    int64_t copy_ns;  /* host<->device copies inside the step */
    int64_t cpu_ns;   /* the workload process's CPU time inside the step */
} loom_prof_step_t;

/* A step with every optional field unknown. */
#define LOOM_PROF_STEP_INIT(n, start, end) ((loom_prof_step_t){(n), (start), (end), -1, -1, -1, -1})

typedef enum loom_prof_line_kind {
    LOOM_PROF_LINE_OTHER = 0, /* not a marker: ordinary output */
    LOOM_PROF_LINE_STEP = 1,
    LOOM_PROF_LINE_META = 2
} loom_prof_line_kind_t;

/* Classifies and parses one line (without its newline). A line is a marker
 * if it starts with "LOOM_STEP" or "LOOM_META" followed by a space or the
 * end; anything else is LOOM_PROF_LINE_OTHER and returns LOOM_OK. A
 * malformed marker returns LOOM_EINVAL with a message naming the field.
 * For META lines, each key=value is set as a string member of meta (which
 * may be NULL to only validate). */
int loom_prof_marker_parse(const char *line, size_t len, loom_prof_line_kind_t *kind,
                           loom_prof_step_t *step, json_t *meta, loom_err_t *err);

/* Formats a step marker into out (>= LOOM_PROF_MARKER_MAX + 2 bytes),
 * newline included; returns its length. Optional fields < 0 are left out. */
size_t loom_prof_marker_format(const loom_prof_step_t *s, char *out, size_t outlen);

/* ---------------------------------------------------------------- sampling */

/* One sample of the profiled process tree. */
typedef struct loom_prof_sample {
    int64_t t_ns;      /* CLOCK_MONOTONIC when the sample was taken */
    int64_t user_ns;   /* cumulative user CPU time of the tree, exited members included */
    int64_t sys_ns;    /* cumulative system CPU time, likewise */
    int64_t rss_bytes; /* resident set of the live members, summed */
    int32_t nprocs;    /* live processes in the tree */
    int32_t nthreads;  /* their threads */
} loom_prof_sample_t;

/* One reading of one GPU (through libloom's monitoring part, NVML).
 * Values NVML could not give are -1. */
typedef struct loom_prof_gpu_sample {
    int64_t t_ns;
    uint32_t index;
    int status;          /* NVML code of the device (0 ok) */
    double util_gpu_pct; /* NVML's utilisation over its own window */
    double util_mem_pct;
    double mem_used_bytes;
    double mem_total_bytes;
    double power_w;
    double tree_mem_bytes; /* memory of the profiled tree's processes on this GPU */
} loom_prof_gpu_sample_t;

/* --------------------------------------------------------------------- run */

typedef struct loom_prof_opts {
    char *const *argv;       /* the command; argv[0] is looked up in PATH */
    int64_t interval_ns;     /* sampling period; 0 = do not sample (A/B baseline) */
    int64_t rescan_ns;       /* how often all of /proc is walked for new members; 0 = 10 s */
    int64_t gpu_interval_ns; /* GPU sampling period; 0 = no GPU sampling */
    bool kernels;            /* inject the CUPTI tracer */
    const char *cupti_lib;   /* path of libloom_cupti.so (needed with kernels) */
    const char *work_dir;    /* where the tracer writes (needed with kernels) */
    int echo_fd;             /* the workload's stdout is copied here; -1 = discarded */
    /* Within-run A/B (--toggle K): the sampler is paused and resumed every
     * K step markers, in blocks on, off, off, on, on, off, ... (ABBA);
     * 0 = always on. */
    size_t toggle_steps;
    /* Read the machine's CPU counters (/proc/stat, over the CPUs loom may
     * run on) as each step marker arrives (--ab, in both arms). */
    bool cpu_stat;
} loom_prof_opts_t;

/* The machine's CPU counters summed over a set of CPUs (/proc/stat, in
 * clock ticks of 1/sysconf(_SC_CLK_TCK) s), and when they were read. */
typedef struct loom_prof_cpustat {
    int64_t t_ns;               /* CLOCK_MONOTONIC */
    int64_t busy, steal, total; /* busy: all but idle and iowait (steal included) */
} loom_prof_cpustat_t;

/* A change of the sampler's state in a --toggle run. */
typedef struct loom_prof_toggle {
    int64_t t_ns; /* CLOCK_MONOTONIC when it took effect */
    bool on;      /* sampling from then on */
} loom_prof_toggle_t;

/* What the roofline needs besides the run (docs/profiling.md, "Roofline"):
 * the FLOPs and bytes of one step and the device's peak rates. Zero means
 * unknown. Filled by loom_prof_roof_load_estimate and _set_device; without an
 * estimate, the counts come from the workload's LOOM_META flops_per_step=
 * and bytes_per_step= if it gives them. */
typedef struct loom_prof_roof_input {
    double flops_per_step;   /* forward, backward and update of one step */
    double bytes_per_step;   /* bytes read and written to memory in one step */
    char counts_source[256]; /* where the counts came from */
    /* What the counts were computed for, checked against the run's
     * LOOM_META (batch, mode, precision); 0 or "" = not stated. */
    int64_t batch;
    char mode[8];      /* "train" or "infer" */
    char precision[8]; /* "fp32", "fp16", "bf16", "mixed" */
    double peak_fp32;  /* FLOP/s */
    double peak_half;  /* FLOP/s at fp16/bf16 */
    double peak_bw;    /* bytes/s */
    char device[64];   /* device name, "" if none */
    char device_desc[160];
} loom_prof_roof_input_t;

/* Everything one profiled run produced. */
typedef struct loom_prof_run {
    char **argv;              /* a copy of the command */
    int64_t start_ns, end_ns; /* monotonic: fork and reap */
    int64_t start_real_ns;    /* wall clock at fork */
    int exit_status;          /* as from waitpid */
    int64_t rusage_user_ns;   /* kernel's account of the tree (the command and its */
    int64_t rusage_sys_ns;    /* waited-for descendants): the ground truth */
    int64_t rusage_maxrss_bytes;
    loom_prof_sample_t *samples;
    size_t nsamples;
    int64_t interval_ns;
    size_t missed_ticks;    /* schedule slots skipped because the sampler ran late */
    int64_t sampler_cpu_ns; /* CPU time of the sampling thread (its own clock) */
    int64_t loom_cpu_ns;    /* CPU time of the whole profiler process over the run */
    loom_prof_step_t *steps;
    size_t nsteps;
    json_t *meta;        /* LOOM_META key/values (an object, never NULL) */
    size_t bad_markers;  /* malformed marker lines (ignored) */
    char first_bad[256]; /* the first one's error, "" if none */
    bool kernels;
    char *kernels_path;   /* the tracer's record file (if kernels) */
    bool gpu;             /* GPU sampling was asked for */
    char gpu_status[256]; /* "" if NVML answered, else why not */
    json_t *gpu_names;    /* array: name of each GPU index */
    loom_prof_gpu_sample_t *gpu_samples;
    size_t ngpu_samples;
    loom_prof_roof_input_t roof;    /* set by the caller before writing; zeros: unknown */
    int64_t run_delay_ns;           /* the command's main thread waiting for a CPU while runnable
                                     * (/proc/PID/schedstat, read before the reap); -1 unknown */
    loom_prof_cpustat_t *step_stat; /* with opts.cpu_stat: one per step, as its marker came */
    int ncpus;                      /* CPUs that step_stat sums over */
    size_t toggle_steps;            /* opts.toggle_steps */
    loom_prof_toggle_t *toggles;    /* with toggle_steps: each pause and resume, in order */
    size_t ntoggles;
} loom_prof_run_t;

/* Reads the counters of the CPUs this process may run on (its affinity
 * mask); returns the number of CPUs summed, 0 if /proc/stat is unreadable. */
int loom_prof_cpustat_read(loom_prof_cpustat_t *out);

/* Runs the command to completion. Fails (and returns no run) only if it
 * cannot start it; a command that fails is a run with its exit status. */
int loom_prof_run(const loom_prof_opts_t *opts, loom_prof_run_t **out, loom_err_t *err);
void loom_prof_run_free(loom_prof_run_t *run);

/* ------------------------------------------------------------------ report */

typedef struct loom_prof_dist {
    size_t n;
    double mean, stdev, min, p5, p50, p95, p99, max; /* seconds */
} loom_prof_dist_t;

typedef struct loom_prof_summary {
    double wall_s;    /* fork to reap */
    double startup_s; /* fork to the start of the first step; -1 if no steps */
    size_t nsteps;
    size_t warmup_steps;         /* see docs/profiling.md, "Warm-up" */
    double warmup_s;             /* their total duration */
    loom_prof_dist_t steady;     /* step times after warm-up */
    loom_prof_dist_t steady_cpu; /* their CPU times (markers' cpu_ns); n = 0 unless all carry it */
    double steps_per_s;          /* steady: steps / summed step time */
    double items_per_s;          /* steady: items / summed step time; -1 if unknown */
    double cpu_cores_run;        /* sampled CPU time / wall time, whole run */
    double cpu_cores_steady;     /* sampled, over the steady steps' span; -1 if n/a */
    double user_frac;            /* user share of sampled CPU time */
    double sampled_cpu_s;        /* last sample's cumulative CPU */
    double kernel_cpu_s;         /* rusage ground truth */
    double cpu_error;            /* (sampled - kernel) / kernel; 0 if kernel is 0 */
    double rss_peak_bytes;       /* sampled peak of the tree */
    double data_frac, copy_frac, compute_frac; /* of steady step time; -1 if unknown */
    double interval_achieved_s;                /* mean gap between samples */
    double profiler_cpu_share; /* loom's CPU time / the command's (kernel) CPU time */
    double sampler_cores;      /* the sampling thread's CPU time / wall time */
    double profiler_cores;     /* loom's whole CPU time / wall time */
} loom_prof_summary_t;

/* Derives the summary of a run. */
void loom_prof_summarize(const loom_prof_run_t *run, loom_prof_summary_t *s);

/* Warm-up length of a series of step times (seconds), as defined in
 * docs/profiling.md: the steps before the first one within the steady band
 * of the second half. */
size_t loom_prof_warmup(const double *t, size_t n);

/* Cumulative CPU (ns) of the tree at time t_ns, linearly interpolated
 * between samples (and from 0 at the fork); -1 before the fork or after
 * the last sample. */
double loom_prof_cpu_at(const loom_prof_run_t *run, int64_t t_ns);

/* ---------------------------------------------------------------- roofline */

typedef struct loom_prof_roofline {
    bool have_counts; /* FLOP and byte counts known, and for this run's setup */
    bool have_device; /* peak rates known */
    char why[256];    /* when !have_counts: why not */
    double flops_per_step, bytes_per_step;
    double intensity;          /* FLOP/byte: flops_per_step / bytes_per_step */
    double achieved_flops;     /* FLOP/s: flops_per_step / mean steady step time */
    double achieved_bw;        /* bytes/s, likewise */
    double achieved_flops_cpu; /* FLOP per CPU second (mean steady cpu_ns); -1 unknown */
    double peak_flops;         /* for the run's precision */
    double peak_bw;
    double ridge;      /* peak_flops / peak_bw: the intensity where the roofs meet */
    double attainable; /* min(peak_flops, intensity * peak_bw) */
    double fraction;   /* achieved_flops / attainable */
    bool memory_bound; /* intensity < ridge */
} loom_prof_roofline_t;

/* Reads the output of `loom estimate MODEL --json` (total FLOPs, bytes.step,
 * batch, train, precision) into in. The estimate must carry "bytes". */
int loom_prof_roof_load_estimate(loom_prof_roof_input_t *in, const char *path, loom_err_t *err);
int loom_prof_roof_from_estimate(loom_prof_roof_input_t *in, const json_t *est, const char *what,
                                 loom_err_t *err);
/* A device's peak rates for the roofline (`loom prof --device` reads them
 * from a device description with loom_est_device_load). */
typedef struct loom_prof_peaks {
    const char *name, *description; /* may be NULL */
    double flops_fp32;              /* FLOP/s */
    double flops_half;              /* FLOP/s at fp16/bf16; 0: as fp32 */
    double mem_bandwidth;           /* bytes/s */
} loom_prof_peaks_t;
/* Sets in's peaks and device name. */
void loom_prof_roof_set_device(loom_prof_roof_input_t *in, const loom_prof_peaks_t *peaks);
/* Places the run on its roofline. */
void loom_prof_roofline(const loom_prof_run_t *run, const loom_prof_summary_t *s,
                        loom_prof_roofline_t *out);

/* Writes run.json, samples.csv, steps.csv, report.md, cpu.svg, steps.svg
 * (and gpu.csv when GPUs were sampled, roofline.svg when the roofline is
 * known) into dir
 * (created if missing); each file atomically. */
int loom_prof_write(const loom_prof_run_t *run, const char *dir, loom_err_t *err);
/* The report as Markdown (appended to b). */
int loom_prof_report_md(const loom_prof_run_t *run, loom_buf_t *b);

/* ------------------------------------------------------------------- A/B */

/* What each run of an A/B pair contributes (docs/profiling.md, "Overhead"). */
typedef enum loom_prof_ab_metric {
    LOOM_PROF_AB_WALL_MEAN = 0, /* mean steady step time, wall clock */
    LOOM_PROF_AB_WALL_P50,      /* median steady step time, wall clock */
    LOOM_PROF_AB_WALL_MIN,      /* shortest steady step: the least disturbed by other load */
    LOOM_PROF_AB_CPU_MEAN,      /* mean steady step CPU time (markers' cpu_ns) */
    LOOM_PROF_AB_CPU_P50,       /* median of those */
    LOOM_PROF_AB_CPU_MIN,       /* shortest of those */
    LOOM_PROF_AB_NMETRICS
} loom_prof_ab_metric_t;

extern const char *const loom_prof_ab_metric_names[LOOM_PROF_AB_NMETRICS];

typedef struct loom_prof_ab_run {
    size_t pair; /* 0-based (with --toggle: the run) */
    bool profiled;
    bool first;                          /* ran first in its pair */
    double value[LOOM_PROF_AB_NMETRICS]; /* seconds; -1 when unknown */
    size_t steps, warmup_steps;
    double wall_s;        /* fork to reap */
    double command_cpu_s; /* kernel's account of the command */
    double sampler_cpu_s; /* the sampling thread (0 in baseline runs) */
    double loom_cpu_s;    /* the whole profiler process over the run */
    /* The machine around the run (-1 unknown). others_cores: CPU time of
     * other programs on the CPUs this run could use, per second, over its
     * steady steps ((busy ticks - the command's step CPU - loom's) / span);
     * steal_frac: steal ticks / all ticks there; run_delay_s: the command's
     * main thread runnable but waiting for a CPU, whole run. */
    double load1_before, load1_after; /* /proc/loadavg */
    int ncpus;
    double others_cores, steal_frac, run_delay_s;
} loom_prof_ab_run_t;

/* The overhead on one metric, from the pairs where it is known. */
typedef struct loom_prof_ab_est {
    size_t n;                               /* pairs used */
    double overhead;                        /* mean over pairs of (prof - base) / base */
    double ci_low, ci_high;                 /* 95% Student t interval of that mean */
    double boot_low, boot_high;             /* 95% percentile bootstrap interval of that mean */
    double ratio;                           /* geometric mean over pairs of prof / base */
    double ratio_low, ratio_high;           /* exp of the 95% t interval of the mean log ratio */
    double ratio_boot_low, ratio_boot_high; /* exp of its 95% percentile bootstrap interval */
    double ratio_median;                    /* median over pairs of prof / base */
    double ratio_median_low, ratio_median_high; /* distribution-free interval (sign test) */
    double ratio_median_conf;                   /* its exact coverage; 0: too few pairs */
} loom_prof_ab_est_t;

/* The pre-declared rule for pairs disturbed by other programs
 * (docs/profiling.md, "Overhead"): a pair is quiet when both runs' others
 * and steal are known, neither run's others_cores / ncpus exceeds
 * LOOM_PROF_AB_QUIET_LEVEL, the two differ by at most LOOM_PROF_AB_QUIET_DIFF
 * (per CPU), and neither run's steal_frac exceeds LOOM_PROF_AB_QUIET_STEAL. */
#define LOOM_PROF_AB_QUIET_LEVEL 0.75
#define LOOM_PROF_AB_QUIET_DIFF  0.10
#define LOOM_PROF_AB_QUIET_STEAL 0.02
bool loom_prof_ab_pair_quiet(const loom_prof_ab_run_t *a, const loom_prof_ab_run_t *b);

/* Within-run design (--toggle K): one pair of blocks of steps, one with
 * the sampler on and one with it off, from one run. */
typedef struct loom_prof_ab_block {
    size_t run;   /* 0-based */
    size_t index; /* the pair's first block: 2 * pair within the run */
    bool on_first;
    size_t n_on, n_off;                /* clean steps in each block */
    double on[LOOM_PROF_AB_NMETRICS];  /* the six numbers over the on block */
    double off[LOOM_PROF_AB_NMETRICS]; /* and over the off block; -1 unknown */
} loom_prof_ab_block_t;

typedef struct loom_prof_ab {
    size_t pairs;             /* pairs of runs; with toggle_steps: runs */
    loom_prof_ab_run_t *runs; /* 2 per pair (1 per run with toggle_steps), in the order they ran */
    loom_prof_ab_est_t est[LOOM_PROF_AB_NMETRICS];
    size_t quiet_pairs;                                  /* pairs the rule keeps */
    loom_prof_ab_est_t est_quiet[LOOM_PROF_AB_NMETRICS]; /* over those alone */
    /* Within-run design: block pairs of all runs; est[] is over these. */
    size_t toggle_steps;
    loom_prof_ab_block_t *blocks;
    size_t nblocks;
    /* Direct cost, over the profiled runs: CPU time per second of run
     * (cores), mean and 95% t half-width. */
    double sampler_cores, sampler_cores_ci;
    double profiler_cores, profiler_cores_ci;
    double baseline_loom_cores; /* the same for loom in baseline runs (reading markers) */
    double profiler_cpu_share;  /* mean of loom CPU / command CPU, profiled runs */
} loom_prof_ab_t;

/* Runs `pairs` pairs of the command, with and without sampling, in ABBA
 * order (profiled first in pairs 1, 3, ...), and computes the estimates.
 * With opts->toggle_steps: `pairs` runs, each toggling the sampler, and
 * estimates over their block pairs. Every run must report steps. */
int loom_prof_ab_run(const loom_prof_opts_t *opts, size_t pairs, loom_prof_ab_t *out,
                     loom_err_t *err);
/* Computes est[], est_quiet[] and the direct cost from runs[] (or, with
 * toggle_steps, est[] from blocks[]). */
void loom_prof_ab_stats(loom_prof_ab_t *ab);
/* One estimate from n paired values (pairs where either is <= 0 are
 * skipped); the bootstrap draws 10000 resamples from a generator seeded
 * with seed, so the result is reproducible. */
void loom_prof_ab_estimate(const double *base, const double *prof, size_t n, uint64_t seed,
                           loom_prof_ab_est_t *out);
/* Distribution-free 95% interval for the median of sorted[0..n): the order
 * statistics x(k) and x(n+1-k) (1-based) with k the largest such that
 * P(Binomial(n, 1/2) <= k-1) <= 0.025; *conf = 1 - 2 P(Binomial <= k-1).
 * For n < 6 there is none: -inf, +inf, conf 0. */
void loom_prof_median_ci(const double *sorted, size_t n, double *lo, double *hi, double *conf);
/* The block pairs of one --toggle run (steps after warm-up, wholly inside
 * one sampler state; a block needs 2 such steps). Appends to *blocks
 * (realloc'd, *n updated); returns LOOM_ENOMEM or LOOM_OK. */
int loom_prof_ab_blocks(const loom_prof_run_t *run, size_t warmup, size_t run_index,
                        loom_prof_ab_block_t **blocks, size_t *n);
/* Writes DIR/ab.json and DIR/ab_runs.csv (and DIR/ab_blocks.csv with
 * toggle_steps) (dir created if missing). */
int loom_prof_ab_write(const loom_prof_ab_t *ab, const loom_prof_opts_t *opts, const char *dir,
                       loom_err_t *err);
void loom_prof_ab_free(loom_prof_ab_t *ab);

#ifdef __cplusplus
}
#endif
#endif
