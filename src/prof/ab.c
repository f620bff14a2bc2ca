/* --ab: the profiler measures its own cost.
 *
 * Pairs of runs of the same command, one sampled and one not (the baseline
 * still reads step markers, which costs the workload the same pipe writes),
 * in ABBA order (profiled first in pairs 1, 3, ...) so that a linear drift
 * in the machine's load falls evenly on both arms. Per run, six numbers:
 * the mean, median and shortest steady step time on the wall clock, and
 * the same on the workload's own CPU clock (markers' cpu_ns), which other
 * programs move less: waiting for a core does not count as CPU time, only
 * their sharing of caches and cores does. Per pair and number, prof / base;
 * over pairs, the
 * mean relative difference with a Student t and a bootstrap interval, and
 * the geometric mean ratio with a t interval on the log ratios.
 *
 * The direct cost is also measured: the sampling thread's and the whole
 * profiler's CPU time per second of run. On a workload that saturates the
 * cores, that is the CPU the profiler takes from it. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prof/prof_internal.h"

const char *const loom_prof_ab_metric_names[LOOM_PROF_AB_NMETRICS] = {
    "wall_mean", "wall_p50", "wall_min", "cpu_mean", "cpu_p50", "cpu_min"};

#define BOOT_RESAMPLES 10000
#define BOOT_SEED      0x6c6f6f6d /* "loom" */

double loom_prof_t95(size_t df)
{
    static const double t[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                               2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                               2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                               2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
    if (df == 0)
        return INFINITY;
    if (df < sizeof t / sizeof t[0])
        return t[df];
    if (df < 60)
        return 2.042 - (2.042 - 2.000) * (double)(df - 30) / 30.0;
    if (df < 120)
        return 2.000 - (2.000 - 1.980) * (double)(df - 60) / 60.0;
    return 1.960;
}

/* Mean and 95% t half-width of x[0..n). */
static void mean_ci(const double *x, size_t n, double *mean, double *half)
{
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    *mean = n ? sum / (double)n : 0;
    for (size_t i = 0; i < n; i++)
        sq += (x[i] - *mean) * (x[i] - *mean);
    *half = n < 2 ? INFINITY : loom_prof_t95(n - 1) * sqrt(sq / (double)(n - 1) / (double)n);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void loom_prof_ab_estimate(const double *base, const double *prof, size_t n, uint64_t seed,
                           loom_prof_ab_est_t *o)
{
    memset(o, 0, sizeof *o);
    o->ci_low = o->boot_low = o->ratio_low = -INFINITY;
    o->ci_high = o->boot_high = o->ratio_high = INFINITY;
    double *rel = n ? malloc(n * sizeof *rel) : NULL, *lr = n ? malloc(n * sizeof *lr) : NULL;
    double *boot = malloc(BOOT_RESAMPLES * sizeof *boot);
    size_t k = 0;
    if (!rel || !lr || !boot)
        goto out;
    for (size_t i = 0; i < n; i++) {
        if (!(base[i] > 0) || !(prof[i] > 0))
            continue;
        rel[k] = (prof[i] - base[i]) / base[i];
        lr[k] = log(prof[i] / base[i]);
        k++;
    }
    o->n = k;
    if (k == 0)
        goto out;
    double half;
    mean_ci(rel, k, &o->overhead, &half);
    o->ci_low = o->overhead - half;
    o->ci_high = o->overhead + half;
    double lmean, lhalf;
    mean_ci(lr, k, &lmean, &lhalf);
    o->ratio = exp(lmean);
    o->ratio_low = exp(lmean - lhalf);
    o->ratio_high = exp(lmean + lhalf);
    if (k < 2)
        goto out;
    /* Percentile bootstrap of the mean relative difference over pairs. */
    loom_rng_t rng;
    loom_rng_init(&rng, seed, 1);
    for (size_t b = 0; b < BOOT_RESAMPLES; b++) {
        double sum = 0;
        for (size_t i = 0; i < k; i++)
            sum += rel[loom_rng_below(&rng, k)];
        boot[b] = sum / (double)k;
    }
    qsort(boot, BOOT_RESAMPLES, sizeof *boot, cmp_double);
    o->boot_low = loom_prof_quantile(boot, BOOT_RESAMPLES, 0.025);
    o->boot_high = loom_prof_quantile(boot, BOOT_RESAMPLES, 0.975);
out:
    free(rel);
    free(lr);
    free(boot);
}

void loom_prof_ab_stats(loom_prof_ab_t *ab)
{
    size_t n = ab->pairs;
    double *base = calloc(n ? n : 1, sizeof *base), *prof = calloc(n ? n : 1, sizeof *prof);
    double *sc = calloc(n ? n : 1, sizeof *sc), *pc = calloc(n ? n : 1, sizeof *pc);
    if (!base || !prof || !sc || !pc)
        goto out;
    for (int m = 0; m < LOOM_PROF_AB_NMETRICS; m++) {
        for (size_t i = 0; i < 2 * n; i++) {
            const loom_prof_ab_run_t *r = &ab->runs[i];
            (r->profiled ? prof : base)[r->pair] = r->value[m];
        }
        loom_prof_ab_estimate(base, prof, n, BOOT_SEED + (uint64_t)m, &ab->est[m]);
    }
    size_t nb = 0;
    double share = 0, bl = 0;
    for (size_t i = 0; i < 2 * n; i++) {
        const loom_prof_ab_run_t *r = &ab->runs[i];
        double w = r->wall_s > 0 ? r->wall_s : 1;
        if (r->profiled) {
            sc[r->pair] = r->sampler_cpu_s / w;
            pc[r->pair] = r->loom_cpu_s / w;
            share += r->command_cpu_s > 0 ? r->loom_cpu_s / r->command_cpu_s / (double)n : 0;
        } else {
            bl += r->loom_cpu_s / w;
            nb++;
        }
    }
    mean_ci(sc, n, &ab->sampler_cores, &ab->sampler_cores_ci);
    mean_ci(pc, n, &ab->profiler_cores, &ab->profiler_cores_ci);
    ab->baseline_loom_cores = nb ? bl / (double)nb : 0;
    ab->profiler_cpu_share = share;
out:
    free(base);
    free(prof);
    free(sc);
    free(pc);
}

static int one(const loom_prof_opts_t *o, loom_prof_ab_run_t *out, loom_err_t *err)
{
    loom_prof_opts_t x = *o;
    if (!out->profiled) {
        x.interval_ns = 0;
        x.kernels = false;
        x.gpu_interval_ns = 0;
    }
    loom_prof_run_t *r;
    int rc = loom_prof_run(&x, &r, err);
    if (rc)
        return rc;
    loom_prof_summary_t s;
    loom_prof_summarize(r, &s);
    if (s.steady.n == 0 || s.steady.mean <= 0) {
        rc = loom_err_set(err, LOOM_EINVAL,
                          "prof --ab: pair %zu, %s run reported no steps "
                          "(exit status %d)",
                          out->pair + 1, out->profiled ? "profiled" : "baseline", r->exit_status);
    } else {
        out->value[LOOM_PROF_AB_WALL_MEAN] = s.steady.mean;
        out->value[LOOM_PROF_AB_WALL_P50] = s.steady.p50;
        out->value[LOOM_PROF_AB_WALL_MIN] = s.steady.min;
        out->value[LOOM_PROF_AB_CPU_MEAN] = s.steady_cpu.n ? s.steady_cpu.mean : -1;
        out->value[LOOM_PROF_AB_CPU_P50] = s.steady_cpu.n ? s.steady_cpu.p50 : -1;
        out->value[LOOM_PROF_AB_CPU_MIN] = s.steady_cpu.n ? s.steady_cpu.min : -1;
        out->steps = s.nsteps;
        out->warmup_steps = s.warmup_steps;
        out->wall_s = s.wall_s;
        out->command_cpu_s = s.kernel_cpu_s;
        out->sampler_cpu_s = (double)r->sampler_cpu_ns / 1e9;
        out->loom_cpu_s = (double)r->loom_cpu_ns / 1e9;
        loom_log_info("prof.ab", "pair=%zu profiled=%d steps=%zu warmup=%zu mean_ms=%.3f",
                      out->pair + 1, out->profiled, s.nsteps, s.warmup_steps, s.steady.mean * 1e3);
    }
    loom_prof_run_free(r);
    return rc;
}

int loom_prof_ab_run(const loom_prof_opts_t *o, size_t pairs, loom_prof_ab_t *ab, loom_err_t *err)
{
    memset(ab, 0, sizeof *ab);
    if (pairs < 2)
        return loom_err_set(err, LOOM_EINVAL,
                            "prof --ab: need at least 2 pairs for an "
                            "interval, got %zu",
                            pairs);
    if (o->interval_ns <= 0)
        return loom_err_set(err, LOOM_EINVAL, "prof --ab: the profiled runs need an interval");
    ab->runs = calloc(2 * pairs, sizeof *ab->runs);
    if (!ab->runs)
        return loom_err_set(err, LOOM_ENOMEM, "prof --ab: out of memory");
    for (size_t i = 0; i < pairs; i++) {
        bool prof_first = i % 2 == 0;
        for (int j = 0; j < 2; j++) {
            loom_prof_ab_run_t *r = &ab->runs[2 * i + (size_t)j];
            r->pair = i;
            r->first = j == 0;
            r->profiled = (j == 0) == prof_first;
            int rc = one(o, r, err);
            if (rc) {
                loom_prof_ab_free(ab);
                return rc;
            }
        }
        ab->pairs = i + 1;
    }
    loom_prof_ab_stats(ab);
    return LOOM_OK;
}

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *est_json(const loom_prof_ab_est_t *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "pairs", json_integer((json_int_t)e->n));
    json_object_set_new(o, "overhead", num(e->overhead));
    json_object_set_new(o, "ci95_t", json_pack("[o,o]", num(e->ci_low), num(e->ci_high)));
    json_object_set_new(o, "ci95_bootstrap",
                        json_pack("[o,o]", num(e->boot_low), num(e->boot_high)));
    json_object_set_new(o, "ratio_geomean", num(e->ratio));
    json_object_set_new(o, "ratio_ci95_t",
                        json_pack("[o,o]", num(e->ratio_low), num(e->ratio_high)));
    return o;
}

static int write_text(const char *dir, const char *name, const char *text, size_t len,
                      loom_err_t *err)
{
    loom_buf_t path = LOOM_BUF_INIT;
    if (loom_buf_appendf(&path, "%s/%s", dir, name)) {
        loom_buf_free(&path);
        return loom_err_set(err, LOOM_ENOMEM, "prof --ab: out of memory");
    }
    int rc = loom_write_file_atomic(path.data, text, len, 0644, err);
    loom_buf_free(&path);
    return rc;
}

int loom_prof_ab_write(const loom_prof_ab_t *ab, const loom_prof_opts_t *o, const char *dir,
                       loom_err_t *err)
{
    if (mkdir(dir, 0755) && errno != EEXIST)
        return loom_err_errno(err, LOOM_EIO, errno, "prof --ab: cannot create '%s'", dir);
    json_t *cmd = json_array(), *metrics = json_object();
    for (size_t i = 0; o->argv[i]; i++)
        json_array_append_new(cmd, json_string(o->argv[i]));
    for (int m = 0; m < LOOM_PROF_AB_NMETRICS; m++)
        json_object_set_new(metrics, loom_prof_ab_metric_names[m], est_json(&ab->est[m]));
    char when[32];
    loom_time_format_rfc3339(loom_time_real_ns(), when);
    json_t *j = json_object();
    json_object_set_new(j, "version", json_integer(2));
    json_object_set_new(j, "command", cmd);
    json_object_set_new(j, "finished", json_string(when));
    json_object_set_new(j, "interval_s", json_real((double)o->interval_ns / 1e9));
    json_object_set_new(j, "pairs", json_integer((json_int_t)ab->pairs));
    json_object_set_new(j, "order", json_string("ABBA: profiled first in pairs 1, 3, ..."));
    json_object_set_new(j, "metrics", metrics);
    json_object_set_new(
        j, "direct",
        json_pack("{s:o,s:o,s:o,s:o,s:f,s:f}", "sampler_cores", num(ab->sampler_cores),
                  "sampler_cores_ci95_half", num(ab->sampler_cores_ci), "profiler_cores",
                  num(ab->profiler_cores), "profiler_cores_ci95_half", num(ab->profiler_cores_ci),
                  "baseline_loom_cores", ab->baseline_loom_cores, "profiler_cpu_share",
                  ab->profiler_cpu_share));
    char *text = json_dumps(j, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    json_decref(j);
    if (!text)
        return loom_err_set(err, LOOM_ENOMEM, "prof --ab: out of memory");
    int rc = write_text(dir, "ab.json", text, strlen(text), err);
    free(text);
    if (rc)
        return rc;
    loom_buf_t b = LOOM_BUF_INIT;
    loom_buf_append_str(&b, "pair,order,arm,steps,warmup_steps");
    for (int m = 0; m < LOOM_PROF_AB_NMETRICS; m++)
        loom_buf_appendf(&b, ",%s_s", loom_prof_ab_metric_names[m]);
    loom_buf_append_str(&b, ",run_wall_s,command_cpu_s,sampler_cpu_s,loom_cpu_s\n");
    for (size_t i = 0; i < 2 * ab->pairs; i++) {
        const loom_prof_ab_run_t *r = &ab->runs[i];
        loom_buf_appendf(&b, "%zu,%d,%s,%zu,%zu", r->pair + 1, r->first ? 1 : 2,
                         r->profiled ? "prof" : "base", r->steps, r->warmup_steps);
        for (int m = 0; m < LOOM_PROF_AB_NMETRICS; m++)
            loom_buf_appendf(&b, ",%.9f", r->value[m]);
        loom_buf_appendf(&b, ",%.6f,%.6f,%.6f,%.6f\n", r->wall_s, r->command_cpu_s,
                         r->sampler_cpu_s, r->loom_cpu_s);
    }
    rc = b.data ? write_text(dir, "ab_runs.csv", b.data, b.len, err)
                : loom_err_set(err, LOOM_ENOMEM, "prof --ab: out of memory");
    loom_buf_free(&b);
    return rc;
}

void loom_prof_ab_free(loom_prof_ab_t *ab)
{
    free(ab->runs);
    ab->runs = NULL;
    ab->pairs = 0;
}
