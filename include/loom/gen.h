/* loom gen: the workload generator's engine.
 *
 * - arrival processes (constant, poisson, gamma with a coefficient of
 *   variation, trace replay from a CSV column) that yield each job's due
 *   time as an absolute offset from the start of the run;
 * - a pacer that releases jobs at their due times on an injectable clock
 *   (real or virtual) and hands them to sender threads through a bounded
 *   in-flight window, so a slow sink cannot bend the schedule;
 * - a source (what a job is: a choice among weighted entries, rendered by
 *   the caller's make function) and sinks (dry run, stream, directory,
 *   loomd, Slurm) behind one small interface;
 * - statistics: lateness histograms, chi-square and Kolmogorov-Smirnov.
 *
 * A seed decides everything that is random: arrival gaps come from RNG
 * stream LOOM_GEN_STREAM_ARRIVALS, job choices from LOOM_GEN_STREAM_CHOICES
 * (drawn in index order by the pacer), and each job's own parameters from
 * stream LOOM_GEN_STREAM_JOB + index, so job i is the same whatever the
 * timing, the thread that renders it or the jobs dropped before it.
 * See docs/generator.md.
 */
#ifndef LOOM_GEN_H
#define LOOM_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loom/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_GEN_STREAM_ARRIVALS 1
#define LOOM_GEN_STREAM_CHOICES  2
#define LOOM_GEN_STREAM_JOB      ((uint64_t)1 << 32)

/* ---------------------------------------------------------------- traces */

/* What to do with a row whose time field is empty or not a number. */
typedef enum loom_gen_missing {
    LOOM_GEN_MISSING_ERROR = 0, /* stop with an error naming file:line (default) */
    LOOM_GEN_MISSING_SKIP = 1   /* leave the row out and count it */
} loom_gen_missing_t;

/* Arrival times read from one column of a CSV file (RFC 4180: a header
 * row, commas, optional double quotes, LF or CRLF). Times are seconds
 * (any real number); rows may come in any order and are sorted. */
typedef struct loom_gen_trace {
    double *times; /* seconds, ascending */
    size_t n;
    size_t skipped;  /* rows left out under LOOM_GEN_MISSING_SKIP */
    size_t unsorted; /* rows that came earlier than the row before */
} loom_gen_trace_t;

int loom_gen_trace_parse(loom_gen_trace_t *t, const char *text, size_t len, const char *name,
                         const char *column, loom_gen_missing_t missing, loom_err_t *err);
/* Reads a file (plain or gzip-compressed) or a shipped trace by name
 * (loom_data_trace). */
int loom_gen_trace_load(loom_gen_trace_t *t, const char *path, const char *column,
                        loom_gen_missing_t missing, loom_err_t *err);
void loom_gen_trace_free(loom_gen_trace_t *t);
/* The time scale that makes the trace's mean rate equal to rate (jobs/s);
 * 0 if the trace spans no time. */
double loom_gen_trace_scale_for_rate(const loom_gen_trace_t *t, double rate);

/* -------------------------------------------------------------- arrivals */

typedef enum loom_gen_process {
    LOOM_GEN_CONSTANT = 0, /* gaps of exactly 1/rate */
    LOOM_GEN_POISSON = 1,  /* exponential gaps, mean 1/rate */
    LOOM_GEN_GAMMA = 2,    /* gamma gaps, mean 1/rate, coefficient of variation cv */
    LOOM_GEN_TRACE = 3     /* (t_i - t_0) * time_scale from a trace */
} loom_gen_process_t;

int loom_gen_process_parse(const char *name, loom_gen_process_t *out, loom_err_t *err);
const char *loom_gen_process_name(loom_gen_process_t p);

typedef struct loom_gen_arrivals_config {
    loom_gen_process_t process;
    double rate;                   /* jobs per second (not used by trace) */
    double cv;                     /* gamma only: > 0; shape = 1/cv^2 */
    const loom_gen_trace_t *trace; /* trace only, borrowed */
    double time_scale;             /* trace only: > 0 */
} loom_gen_arrivals_config_t;

typedef struct loom_gen_arrivals {
    loom_gen_arrivals_config_t cfg;
    loom_rng_t rng;
    uint64_t index;
    double t_ns; /* poisson/gamma: due time of the next arrival */
} loom_gen_arrivals_t;

/* Checks cfg (errors name the option: rate, cv, time scale, trace). */
int loom_gen_arrivals_init(loom_gen_arrivals_t *a, const loom_gen_arrivals_config_t *cfg,
                           uint64_t seed, loom_err_t *err);
/* The next arrival's due time in ns from the start. The first arrival is
 * due at 0. Constant and trace times are computed from the index, never
 * summed; poisson and gamma times are the running sum of their gaps (kept
 * in double precision). Returns false at the end of a trace. */
bool loom_gen_arrivals_next(loom_gen_arrivals_t *a, int64_t *due_ns);
/* The mean rate the configuration asks for, in jobs/s. */
double loom_gen_arrivals_rate(const loom_gen_arrivals_config_t *cfg);

/* ----------------------------------------------------------------- clock */

/* The pacer's clock. now() may be called from any thread; sleep_until()
 * only from the pacer. Times are ns on the clock's own axis. */
typedef struct loom_gen_clock {
    int64_t (*now)(void *ctx);
    void (*sleep_until)(void *ctx, int64_t deadline_ns);
    void *ctx;
} loom_gen_clock_t;

/* CLOCK_MONOTONIC. sleep_until sleeps (loom_time_sleep_until_ns) until
 * `spin` before the deadline and busy-waits the rest, so that a late
 * wake-up (the kernel's, or a virtual machine's, which can be tens of
 * microseconds to milliseconds late) does not make the deadline late.
 *
 * Fixed: spin_max_ns <= spin_ns; the spin is spin_ns (0: none).
 * Adaptive: spin_max_ns > spin_ns; the clock measures how late each of its
 * sleeps wakes up (the overshoot) and keeps the spin at the 99.5th
 * percentile of the recent overshoots, between spin_ns and spin_max_ns
 * (spin_max_ns for the first 32 wake-ups).
 *
 * Rests. When deadlines come closer together than the spin, the clock
 * never sleeps, and a SCHED_FIFO thread that never sleeps is stopped by the
 * kernel for about 50 ms a second (realtime throttling: it may use 95% of
 * a CPU per second). Short rests spread idle time out instead:
 * - rest_cpu_share > 0 (a CPU budget): the clock reads its thread's CPU
 *   time (at most every LOOM_GEN_BUDGET_CHECK_NS while it cannot sleep)
 *   and keeps a debt: CPU time used minus rest_cpu_share of the time
 *   passed, never below -LOOM_GEN_BUDGET_CREDIT_NS. While the debt is
 *   positive it rests rest_ns plus the debt (at most 5 rest_ns) before
 *   spinning on. So it rests exactly as often as the machine makes it:
 *   where a sleep costs much CPU (a virtual machine), more often.
 * - else rest_every_ns > 0: after rest_every_ns without a sleep it sleeps
 *   rest_ns. */
#define LOOM_GEN_WAKE_BUCKETS 72
struct loom_gen_hist;
typedef struct loom_gen_realclock {
    int64_t spin_ns;
    int64_t spin_max_ns;
    int64_t rest_every_ns, rest_ns;
    double rest_cpu_share;
    struct loom_gen_hist *overshoot; /* if set: every wake-up's overshoot is added */
    /* Kept by the clock (zero them to start over): */
    int64_t spin_now_ns;                    /* the spin in use */
    int64_t spin_peak_ns;                   /* the largest spin used after the first 32 wake-ups */
    uint64_t wakes;                         /* sleeps that ended in a wake-up */
    uint64_t rests;                         /* rests taken */
    int64_t budget_at_ns, budget_cpu_ns;    /* the last reading of the thread's CPU time */
    int64_t budget_debt_ns;                 /* CPU time used beyond its share (may be < 0) */
    bool budget_failed;                     /* the CPU time could not be read: rest_every_ns */
    int64_t last_sleep_ns;                  /* when the last sleep ended */
    uint32_t recent[LOOM_GEN_WAKE_BUCKETS]; /* overshoots, 4 buckets per octave, decaying */
    uint32_t nrecent;
    /* Why the last sleep_until returned after its deadline (a
     * loom_gen_late_cause_t; LOOM_GEN_LATE_NONE when it returned on time). */
    int last_cause;
    /* If has_schedstat: an open /proc/thread-self/schedstat of the thread
     * that sleeps (loom_gen_realclock_schedstat), read before each sleep
     * and after a late one, to tell QUEUED from WAKE. */
    bool has_schedstat;
    int schedstat_fd;
} loom_gen_realclock_t;
#define LOOM_GEN_BUDGET_CHECK_NS  (50 * LOOM_NS_PER_US)
#define LOOM_GEN_BUDGET_CREDIT_NS (1 * LOOM_NS_PER_MS)
/* Records a reading of the sleeping thread's CPU time (cpu_ns, as
 * CLOCK_THREAD_CPUTIME_ID) taken at now_ns, as sleep_until does with
 * rest_cpu_share > 0, and returns how long to rest now: 0 while the CPU
 * time is within its share (the first reading only starts the count). */
int64_t loom_gen_realclock_budget(loom_gen_realclock_t *rc, int64_t now_ns, int64_t cpu_ns);
/* Opens /proc/thread-self/schedstat for the calling thread (the one that
 * will sleep); false where there is none (no CONFIG_SCHEDSTATS). Close
 * with loom_gen_realclock_close. */
bool loom_gen_realclock_schedstat(loom_gen_realclock_t *rc);
void loom_gen_realclock_close(loom_gen_realclock_t *rc);
/* The run_delay field of a schedstat line ("exec run_delay pcount"): ns
 * spent runnable but waiting for a CPU; -1 if the text is not such a
 * line. */
int64_t loom_gen_schedstat_run_delay(const char *text);

/* Why a job was released late (report.late). A sleep_until of the real
 * clock returns late because its sleep woke up after the deadline (WAKE:
 * the spin did not cover the wake-up; QUEUED when, by schedstat, the
 * thread was woken but spent most of that lateness waiting for a CPU,
 * i.e. another thread held it), because the thread did not run for
 * a while during the busy wait and the deadline passed meanwhile (STALL:
 * preempted, an interrupt, or the virtual CPU not running), or because it
 * took a rest (REST). A job whose due time has already passed when the
 * pacer comes to it was late for the reason its predecessor was (the
 * pacer is catching up), or, when its predecessor was on time, BEHIND:
 * the pacer's own work between jobs (hand-off, window wait, progress) or a
 * stall outside the clock. */
typedef enum loom_gen_late_cause {
    LOOM_GEN_LATE_NONE = 0,
    LOOM_GEN_LATE_WAKE = 1,
    LOOM_GEN_LATE_QUEUED = 2,
    LOOM_GEN_LATE_STALL = 3,
    LOOM_GEN_LATE_REST = 4,
    LOOM_GEN_LATE_BEHIND = 5,
    LOOM_GEN_LATE_NCAUSES = 6
} loom_gen_late_cause_t;
/* A busy wait that does not see the clock for this long has stalled. */
#define LOOM_GEN_STALL_NS (20 * LOOM_NS_PER_US)
/* report.late counts jobs released more than this late. */
#define LOOM_GEN_LATE_NS (100 * LOOM_NS_PER_US)
const char *loom_gen_late_cause_name(loom_gen_late_cause_t cause);
loom_gen_clock_t loom_gen_clock_real(loom_gen_realclock_t *rc);
/* The real clock as loom_gen_run sets it up when config.spin_ns is 0, for
 * a pacer at rate (jobs/s) under SCHED_FIFO (realtime) or not: realtime,
 * an adaptive spin from loom_gen_default_spin_ns to
 * loom_gen_default_spin_max_ns and rests of 20 us and more that hold its
 * CPU time to LOOM_GEN_REST_CPU_SHARE of a CPU; otherwise a fixed spin of
 * loom_gen_default_spin_ns.
 * Clears *rc first. */
void loom_gen_realclock_default(loom_gen_realclock_t *rc, double rate, bool realtime);
/* Records one wake-up that came overshoot_ns late, as sleep_until does
 * after each of its sleeps (for tests, and for callers that sleep by
 * themselves); and the spin the next sleep will use. */
void loom_gen_realclock_observe(loom_gen_realclock_t *rc, int64_t overshoot_ns);
int64_t loom_gen_realclock_spin(const loom_gen_realclock_t *rc);
/* The least spin loom_gen_run's default clock uses: 20 us, at most half
 * the mean gap at rate (jobs/s). */
int64_t loom_gen_default_spin_ns(double rate);
/* The most: 5 ms (at low rates up to a tenth of the gap, at most 20 ms). */
int64_t loom_gen_default_spin_max_ns(double rate);
/* The realtime default clock's CPU budget: 90% of a CPU, below the 95% at
 * which Linux stops a realtime thread for the rest of the second. */
#define LOOM_GEN_REST_CPU_SHARE 0.90

/* A virtual clock for tests and simulation: sleep_until() moves time
 * forward to the deadline at once; nothing else moves it. */
typedef struct loom_gen_vclock {
    int64_t now_ns;
} loom_gen_vclock_t;
loom_gen_clock_t loom_gen_clock_virtual(loom_gen_vclock_t *vc);

/* ------------------------------------------------------- jobs and sinks */

/* One generated job as it travels from the pacer to a sink. */
typedef struct loom_gen_job {
    uint64_t index;
    int64_t due_ns;     /* from the start of the run */
    int64_t send_ns;    /* when the pacer released it (lateness = send - due) */
    int64_t ack_ns;     /* when the sink finished with it */
    size_t choice;      /* index into the source's entries */
    const char *name;   /* the source's name of that entry (borrowed) */
    char submit_id[64]; /* loom_gen_submit_id, set by the sender before make() */
    /* Filled by the source's make(): */
    loom_buf_t text; /* the rendered script or manifest */
    json_t *spec;    /* the job as job.submit takes it (owned; may be NULL) */
    /* Filled by the sink: */
    int rc;          /* LOOM_OK or an error code */
    char *error;     /* malloc'd message when rc != LOOM_OK */
    char *remote_id; /* malloc'd id the sink assigned (job id), or NULL */
} loom_gen_job_t;

/* Sets job->rc and job->error (a copy of err's message). */
void loom_gen_job_fail(loom_gen_job_t *job, const loom_err_t *err);

/* What the jobs are: n weighted entries; make() renders job->choice into
 * job->text / job->spec, drawing its parameters from rng only. make() runs
 * on sender threads, several at once: it must be thread-safe. */
typedef struct loom_gen_source {
    size_t n;
    const double *weights;
    const char *const *names;
    int (*make)(void *ctx, loom_gen_job_t *job, loom_rng_t *rng, loom_err_t *err);
    void *ctx;
} loom_gen_source_t;

/* Where jobs go. send() delivers n jobs and sets each job's rc; it returns
 * LOOM_OK unless the sink as a whole broke (then the run stops). It runs
 * on sender threads, several at once unless max_workers is 1. finish()
 * runs once after the last job (flush, fsync); destroy() frees ctx. */
typedef struct loom_gen_sink {
    const char *name;
    int (*send)(void *ctx, loom_gen_job_t **jobs, size_t n, loom_err_t *err);
    int (*finish)(void *ctx, loom_err_t *err);
    void (*destroy)(void *ctx);
    void *ctx;
    unsigned max_workers; /* 0: any number */
} loom_gen_sink_t;

/* Generate and render, then discard. */
int loom_gen_sink_dry_run(loom_gen_sink_t *out, loom_err_t *err);
/* Each job's text to f in index order, each preceded by a line
 * "# loom-gen job INDEX submit_id=ID" and followed by a newline if the
 * text lacks one. f is borrowed. */
int loom_gen_sink_stream(loom_gen_sink_t *out, FILE *f, loom_err_t *err);
/* DIR/job-INDEX.EXT (written atomically) plus DIR/manifest.jsonl, one line
 * per job appended in one write after its script exists. DIR is created;
 * it must not already hold a manifest.jsonl. ext: "sh", "yaml", ... */
int loom_gen_sink_dir(loom_gen_sink_t *out, const char *dir, const char *ext, loom_err_t *err);
/* job.submit to loomd at url (NULL: $LOOM_URL, else the default) with a
 * bearer token (NULL: none), a JSON-RPC batch per sender batch, each call
 * with its job's spec (submit_id included). Batches that may not have
 * arrived (connect, timeout, transport failures, HTTP 502-504) are sent
 * again with the same submit_ids for up to retry_for_ns (0: 30 s), so
 * loomd can restart during a run without duplicates or losses.
 * A spec's "warm_start" is asked of the same loomd (zoo.warm) and its
 * answer applied to the spec's labels and script by warm (the zoo's
 * loom_zoo_warm_apply; gen itself does not link the zoo). warm NULL: such
 * a job fails alone, saying so. */
typedef int (*loom_gen_warm_apply_fn)(const json_t *res, json_t *labels, loom_buf_t *script,
                                      loom_err_t *err);
int loom_gen_sink_submit(loom_gen_sink_t *out, const char *url, const char *token,
                         int64_t retry_for_ns, loom_gen_warm_apply_fn warm, loom_err_t *err);
/* sbatch --parsable EXTRA_ARGS... with the script on standard input;
 * sbatch is the program to run (NULL: "sbatch" from PATH); extra_args a
 * NULL-terminated list (may be NULL), e.g. {"--hold", "-p", "gpu", NULL}.
 * The job id sbatch prints becomes job->remote_id. */
int loom_gen_sink_slurm(loom_gen_sink_t *out, const char *sbatch, const char *const *extra_args,
                        loom_err_t *err);

/* --------------------------------------------------- catalog as a source */

struct loom_catalog; /* include/loom/catalog.h */

/* The kind of output; each has a shipped template in the templates
 * directory (workloads/templates): slurm.sh.mustache,
 * k8s-job.yaml.mustache, local.sh.mustache. */
typedef enum loom_gen_kind {
    LOOM_GEN_KIND_SLURM = 0,
    LOOM_GEN_KIND_K8S = 1,
    LOOM_GEN_KIND_LOCAL = 2
} loom_gen_kind_t;

int loom_gen_kind_parse(const char *name, loom_gen_kind_t *out, loom_err_t *err);
const char *loom_gen_kind_name(loom_gen_kind_t k);
/* The shipped template of kind: templates_dir (NULL: $LOOM_TEMPLATE_DIR,
 * else loom_data_path("templates")) + its file name. */
int loom_gen_kind_template(loom_gen_kind_t kind, const char *templates_dir, char *out,
                           size_t outlen, loom_err_t *err);

typedef struct loom_gen_catalog_options {
    loom_gen_kind_t kind;      /* the shipped template for jobs without their own */
    const char *template_path; /* if set, used for every job */
    const char *templates_dir; /* see loom_gen_kind_template */
    uint64_t seed;             /* put into the render context as "seed" */
    /* Render every job by walking the template over its whole JSON context
     * (loom_catalog_sample), never from a plan: slower, the same output.
     * For tests and benchmarks that compare the two. */
    bool no_plans;
} loom_gen_catalog_options_t;

/* A source over a loaded catalog (borrowed; must outlive the source).
 * Weights are the catalog's; make() samples the job's parameters
 * (loom_catalog_sample), adds submit_id, index, seed and due_s to the
 * context, renders the job's template strictly (a template named *.yaml*
 * or *.yml* with YAML escaping and job format "yaml", any other with shell
 * escaping and format "batch") and builds job->spec as job.submit takes
 * it. Every template is compiled here, so a broken one fails at once, and
 * planned for each job where it can be (loom_catalog_shape_new,
 * loom_template_plan_new): a planned job is rendered without building its
 * context, to the same bytes. */
typedef struct loom_gen_catalog_source loom_gen_catalog_source_t;
int loom_gen_catalog_source_new(const struct loom_catalog *cat,
                                const loom_gen_catalog_options_t *opts,
                                loom_gen_catalog_source_t **out, loom_err_t *err);
const loom_gen_source_t *loom_gen_catalog_source_get(const loom_gen_catalog_source_t *s);
/* Whether catalog job i renders from a plan (false: the ordinary way,
 * because of no_plans or a template that cannot be planned for it). */
bool loom_gen_catalog_source_planned(const loom_gen_catalog_source_t *s, size_t i);
void loom_gen_catalog_source_free(loom_gen_catalog_source_t *s);

/* ------------------------------------------------------------ statistics */

/* A log-linear histogram of non-negative ns values: exact below 128,
 * then 64 buckets per power of two (relative error < 1.6%). */
#define LOOM_GEN_HIST_BUCKETS 3904
typedef struct loom_gen_hist {
    uint64_t counts[LOOM_GEN_HIST_BUCKETS];
    uint64_t n;
    int64_t max;
    double sum;
} loom_gen_hist_t;

void loom_gen_hist_init(loom_gen_hist_t *h);
void loom_gen_hist_add(loom_gen_hist_t *h, int64_t v); /* v < 0 counts as 0 */
void loom_gen_hist_merge(loom_gen_hist_t *into, const loom_gen_hist_t *from);
/* The q-quantile (0..1): the upper edge of its bucket, at most max. */
int64_t loom_gen_hist_quantile(const loom_gen_hist_t *h, double q);

/* Pearson's chi-square of observed counts against expected proportions
 * weights/sum(weights). Entries of weight 0 are left out of the degrees
 * of freedom; a count in one makes p 0. p is the upper tail. */
int loom_gen_chi2(const uint64_t *observed, const double *weights, size_t n, double *stat,
                  double *dof, double *p, loom_err_t *err);
/* Regularized lower incomplete gamma P(a, x): the CDF of Gamma(a, 1) at x. */
double loom_gen_gamma_p(double a, double x);
/* Upper tail of the chi-square distribution: Q(dof/2, x/2). */
double loom_gen_chi2_sf(double x, double dof);
/* One-sample Kolmogorov-Smirnov of x against cdf (sorts x in place):
 * statistic D and the asymptotic p-value (with Stephens' correction). */
void loom_gen_ks(double *x, size_t n, double (*cdf)(double x, void *ctx), void *ctx, double *d,
                 double *p);

/* ------------------------------------------------------------------- run */

#define LOOM_GEN_SPIN_NONE ((int64_t)-1)

typedef enum loom_gen_backlog {
    LOOM_GEN_BACKLOG_WAIT = 0, /* the pacer waits for a free slot (later sends) */
    LOOM_GEN_BACKLOG_DROP = 1, /* the job is dropped and counted */
    LOOM_GEN_BACKLOG_FAIL = 2  /* the run stops with LOOM_ELIMIT */
} loom_gen_backlog_t;

int loom_gen_backlog_parse(const char *name, loom_gen_backlog_t *out, loom_err_t *err);
const char *loom_gen_backlog_name(loom_gen_backlog_t b);

/* What happened to one job (kept when config.keep_records). */
enum {
    LOOM_GEN_JOB_UNSENT = 0, /* never released (run stopped first) */
    LOOM_GEN_JOB_OK = 1,
    LOOM_GEN_JOB_FAILED = 2,
    LOOM_GEN_JOB_DROPPED = 3
};

typedef struct loom_gen_record {
    int64_t due_ns, send_ns, ack_ns;
    uint32_t choice;
    uint8_t state;
    uint8_t waited; /* the pacer waited for a window slot first */
} loom_gen_record_t;

typedef struct loom_gen_report {
    uint64_t scheduled;     /* arrivals that came due (sent + dropped) */
    uint64_t sent;          /* released to the sink */
    uint64_t ok, failed;    /* sink outcomes */
    uint64_t dropped;       /* --on-backlog drop */
    uint64_t backlog_waits; /* jobs that waited for a slot (--on-backlog wait) */
    bool backlog_failed;    /* --on-backlog fail stopped the run */
    bool stopped;           /* config.stop ended the run early */
    int64_t backlog_wait_max_ns;
    double rate_target;   /* what was asked, jobs/s */
    double rate_schedule; /* of the due times actually generated */
    double rate_achieved; /* (sent - 1) / (last send - first send) */
    double rate_error_pct;
    int64_t elapsed_ns;       /* start to the last ack */
    loom_gen_hist_t lateness; /* send - due, sent jobs */
    loom_gen_hist_t ack;      /* ack - send */
    size_t n_choices;
    uint64_t *per_choice; /* jobs chosen per entry (sent or dropped) */
    uint64_t *per_choice_ok;
    double chi2, chi2_dof, chi2_p;
    char first_error[512];
    bool realtime;      /* the pacer ran under SCHED_FIFO */
    int realtime_errno; /* config.realtime refused: why (EPERM: not allowed) */
    /* With the real clock (config.clock NULL): how late the pacer's sleeps
     * woke up (the overshoot its spin has to cover), the spin in use at the
     * end and the largest it was after the first 32 wake-ups. */
    loom_gen_hist_t wake;
    int64_t spin_ns, spin_max_ns;
    int64_t pacer_cpu_ns; /* CPU time of the pacer thread (its sleeps are free, its spins not) */
    /* Jobs released more than LOOM_GEN_LATE_NS late, by cause (index: a
     * loom_gen_late_cause_t; [0] unused), and the most late of each. */
    uint64_t late[LOOM_GEN_LATE_NCAUSES];
    int64_t late_max_ns[LOOM_GEN_LATE_NCAUSES];
    /* The pacer thread during the run (getrusage RUSAGE_THREAD): page
     * faults, and times it lost the CPU to another thread. */
    uint64_t pacer_faults, pacer_preempted;
    int pacer_cpu;              /* the CPU the pacer was pinned to (config.pin), or -1 */
    loom_gen_record_t *records; /* config.keep_records: one per index */
    size_t n_records;
} loom_gen_report_t;

typedef struct loom_gen_config {
    loom_gen_arrivals_config_t arrivals;
    uint64_t seed;
    const char *run_tag; /* mixed into submit_id (NULL: none) */
    uint64_t run_nonce;  /* mixed into submit_id; `loom gen` draws a random one per run */
    uint64_t count;      /* stop after this many arrivals (0: no limit) */
    int64_t duration_ns; /* stop at the first arrival due at or after (0: none) */
    unsigned window;     /* in-flight bound (0: 1024) */
    unsigned workers;    /* sender threads (0: 2) */
    unsigned batch;      /* most jobs per sink call (0: 64) */
    loom_gen_backlog_t on_backlog;
    const loom_gen_clock_t *clock; /* NULL: the real clock (see spin_ns) */
    /* With the real clock (clock NULL): 0 adaptive spin between
     * loom_gen_default_spin_ns and loom_gen_default_spin_max_ns; > 0 a
     * fixed spin of that many ns; LOOM_GEN_SPIN_NONE no spin at all. */
    int64_t spin_ns;
    bool keep_records; /* needs count, or a trace */
    /* Run the pacer thread (only) under SCHED_FIFO priority 1 when allowed
     * (root or CAP_SYS_NICE), so that other processes cannot delay its
     * wake-ups; report.realtime says whether it took effect (`loom gen`
     * asks for it unless --no-realtime). */
    bool realtime;
    /* Pin the pacer thread to one CPU (the last one the calling thread may
     * use) for the run, so that it never migrates and always wakes up
     * where its timer is. Needs at least two CPUs in the thread's affinity
     * mask; otherwise nothing is pinned (report.pacer_cpu -1). The sender
     * threads keep every CPU. The caller's affinity is restored at the
     * end. `loom gen` asks for it unless --no-pin. */
    bool pin;
    /* Called on the pacer thread about every progress_ns (0: never). */
    void (*progress)(void *ctx, const loom_gen_report_t *snapshot);
    void *progress_ctx;
    int64_t progress_ns;
    /* Called on the pacer thread when the window is full (before the
     * policy acts), with the job's index. */
    void (*backlog_hook)(void *ctx, uint64_t index);
    void *backlog_ctx;
    /* If not NULL: when *stop becomes non-zero (e.g. set by a SIGINT
     * handler) no further job is released; the jobs in flight are finished
     * and the run returns LOOM_OK with report.stopped set. Checked at least
     * every 100 ms. */
    volatile int *stop;
} loom_gen_config_t;

/* Which of a run's inputs were given (named after loom gen's options). */
typedef struct loom_gen_given {
    bool catalog;    /* a catalog */
    bool rate;       /* a rate (config.arrivals.rate) */
    bool trace;      /* a trace file */
    bool time_scale; /* a trace time scale */
    unsigned sinks;  /* how many sinks were named */
} loom_gen_given_t;
/* The rules between the settings: a catalog; a rate unless a trace paces
 * the run; a trace exactly with the trace process; a cv > 0 with gamma; a
 * count or a duration unless a trace ends the run; one sink. NULL when they
 * hold, else what is wrong, in the options' words. */
const char *loom_gen_check_options(const loom_gen_config_t *cfg, const loom_gen_given_t *given);

/* submit_id of job index in a run: "g" + 16 hex digits of a hash of seed,
 * run_tag and the run's nonce + "-" + index. Same inputs, same id, on any
 * machine; a random nonce keeps the ids of a run unpredictable from seed,
 * tag and index (another user could otherwise claim them first). */
void loom_gen_submit_id(uint64_t seed, const char *run_tag, uint64_t nonce, uint64_t index,
                        char out[64]);

/* Runs the generator to the end (count, duration or end of trace). Fills
 * report (free it with loom_gen_report_free) even when it fails: a broken
 * sink (LOOM_EIO, ...) or --on-backlog fail (LOOM_ELIMIT) stop the run
 * after the jobs in flight are finished. Per-job failures do not stop it;
 * they are counted. */
int loom_gen_run(const loom_gen_config_t *cfg, const loom_gen_source_t *src, loom_gen_sink_t *sink,
                 loom_gen_report_t *report, loom_err_t *err);
void loom_gen_report_free(loom_gen_report_t *r);
/* The summary as a JSON object (see docs/generator.md). */
json_t *loom_gen_report_json(const loom_gen_report_t *r, const loom_gen_source_t *src,
                             const loom_gen_config_t *cfg);

#ifdef __cplusplus
}
#endif
#endif
