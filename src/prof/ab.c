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
#include <stdio.h>
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

void loom_prof_median_ci(const double *sorted, size_t n, double *lo, double *hi, double *conf)
{
    *lo = -INFINITY;
    *hi = INFINITY;
    *conf = 0;
    if (n == 0)
        return;
    /* P(Binomial(n, 1/2) = i), from i = 0 up, in logs (n may be large). */
    double lp = -(double)n * log(2.0), cdf = 0, below = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double c = cdf + exp(lp);
        if (c > 0.025)
            break;
        cdf = c;
        k = i + 1; /* P(B <= k - 1) <= 0.025 */
        below = cdf;
        lp += log((double)(n - i) / (double)(i + 1));
    }
    if (k == 0)
        return;
    *lo = sorted[k - 1];
    *hi = sorted[n - k];
    *conf = 1 - 2 * below;
}

void loom_prof_ab_estimate(const double *base, const double *prof, size_t n, uint64_t seed,
                           loom_prof_ab_est_t *o)
{
    memset(o, 0, sizeof *o);
    o->ci_low = o->boot_low = o->ratio_low = o->ratio_boot_low = o->ratio_median_low = -INFINITY;
    o->ci_high = o->boot_high = o->ratio_high = o->ratio_boot_high = o->ratio_median_high =
        INFINITY;
    double *rel = n ? malloc(n * sizeof *rel) : NULL, *lr = n ? malloc(n * sizeof *lr) : NULL;
    double *boot = malloc(BOOT_RESAMPLES * sizeof *boot);
    double *lboot = malloc(BOOT_RESAMPLES * sizeof *lboot);
    size_t k = 0;
    if (!rel || !lr || !boot || !lboot)
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
    loom_stats_mean_ci95(rel, k, &o->overhead, &half);
    o->ci_low = o->overhead - half;
    o->ci_high = o->overhead + half;
    double lmean, lhalf;
    loom_stats_mean_ci95(lr, k, &lmean, &lhalf);
    o->ratio = exp(lmean);
    o->ratio_low = exp(lmean - lhalf);
    o->ratio_high = exp(lmean + lhalf);
    if (k < 2)
        goto out;
    /* Percentile bootstrap of the mean relative difference and of the mean
     * log ratio over pairs (the same resamples for both). */
    loom_rng_t rng;
    loom_rng_init(&rng, seed, 1);
    for (size_t b = 0; b < BOOT_RESAMPLES; b++) {
        double sum = 0, lsum = 0;
        for (size_t i = 0; i < k; i++) {
            size_t j = loom_rng_below(&rng, k);
            sum += rel[j];
            lsum += lr[j];
        }
        boot[b] = sum / (double)k;
        lboot[b] = lsum / (double)k;
    }
    loom_stats_sort(boot, BOOT_RESAMPLES);
    loom_stats_sort(lboot, BOOT_RESAMPLES);
    o->boot_low = loom_stats_quantile(boot, BOOT_RESAMPLES, 0.025);
    o->boot_high = loom_stats_quantile(boot, BOOT_RESAMPLES, 0.975);
    o->ratio_boot_low = exp(loom_stats_quantile(lboot, BOOT_RESAMPLES, 0.025));
    o->ratio_boot_high = exp(loom_stats_quantile(lboot, BOOT_RESAMPLES, 0.975));
out:
    if (k >= 1 && lr) {
        /* The median pair, with the sign test's interval. */
        loom_stats_sort(lr, k);
        double lo, hi;
        o->ratio_median = exp(loom_stats_quantile(lr, k, 0.5));
        loom_prof_median_ci(lr, k, &lo, &hi, &o->ratio_median_conf);
        o->ratio_median_low = o->ratio_median_conf > 0 ? exp(lo) : NAN;
        o->ratio_median_high = o->ratio_median_conf > 0 ? exp(hi) : NAN;
    }
    free(rel);
    free(lr);
    free(boot);
    free(lboot);
}

bool loom_prof_ab_pair_quiet(const loom_prof_ab_run_t *a, const loom_prof_ab_run_t *b)
{
    if (a->ncpus <= 0 || b->ncpus <= 0 || a->others_cores < -0.5 || b->others_cores < -0.5 ||
        a->steal_frac < 0 || b->steal_frac < 0)
        return false; /* unknown: not shown to be quiet */
    double la = a->others_cores / a->ncpus, lb = b->others_cores / b->ncpus;
    return la <= LOOM_PROF_AB_QUIET_LEVEL && lb <= LOOM_PROF_AB_QUIET_LEVEL &&
           fabs(la - lb) <= LOOM_PROF_AB_QUIET_DIFF && a->steal_frac <= LOOM_PROF_AB_QUIET_STEAL &&
           b->steal_frac <= LOOM_PROF_AB_QUIET_STEAL;
}

/* The six numbers over steps[idx[0..n)] (n >= 1) into v[]. */
static void six(const loom_prof_step_t *steps, const size_t *idx, size_t n, double *tmp,
                double v[LOOM_PROF_AB_NMETRICS])
{
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        tmp[i] = (double)(steps[idx[i]].end_ns - steps[idx[i]].start_ns) / 1e9;
        sum += tmp[i];
    }
    loom_stats_sort(tmp, n);
    v[LOOM_PROF_AB_WALL_MEAN] = sum / (double)n;
    v[LOOM_PROF_AB_WALL_P50] = loom_stats_quantile(tmp, n, 0.5);
    v[LOOM_PROF_AB_WALL_MIN] = tmp[0];
    bool cpu = true;
    sum = 0;
    for (size_t i = 0; i < n; i++) {
        cpu = cpu && steps[idx[i]].cpu_ns >= 0;
        tmp[i] = (double)steps[idx[i]].cpu_ns / 1e9;
        sum += tmp[i];
    }
    loom_stats_sort(tmp, n);
    v[LOOM_PROF_AB_CPU_MEAN] = cpu ? sum / (double)n : -1;
    v[LOOM_PROF_AB_CPU_P50] = cpu ? loom_stats_quantile(tmp, n, 0.5) : -1;
    v[LOOM_PROF_AB_CPU_MIN] = cpu ? tmp[0] : -1;
}

int loom_prof_ab_blocks(const loom_prof_run_t *r, size_t warmup, size_t run_index,
                        loom_prof_ab_block_t **blocks, size_t *nb)
{
    size_t k = r->toggle_steps;
    if (!k || r->nsteps == 0)
        return LOOM_OK;
    size_t *idx = malloc(2 * k * sizeof *idx);
    double *tmp = malloc(k * sizeof *tmp);
    if (!idx || !tmp) {
        free(idx);
        free(tmp);
        return LOOM_ENOMEM;
    }
    int rc = LOOM_OK;
    size_t cap = *nb; /* *blocks holds at least *nb */
    size_t nblocks = (r->nsteps + k - 1) / k;
    for (size_t b = 0; b + 1 < nblocks && b + 1 < r->ntoggles; b += 2) {
        /* Clean steps of blocks b and b + 1: past warm-up, started after
         * their block's state took effect. */
        size_t n[2] = {0, 0};
        size_t *in[2] = {idx, idx + k};
        for (int h = 0; h < 2; h++)
            for (size_t j = (b + (size_t)h) * k; j < (b + (size_t)h + 1) * k && j < r->nsteps; j++)
                if (j >= warmup && r->steps[j].start_ns >= r->toggles[b + (size_t)h].t_ns)
                    in[h][n[h]++] = j;
        if (n[0] < 2 || n[1] < 2 || r->toggles[b].on == r->toggles[b + 1].on)
            continue;
        if (loom_vec_reserve((void **)blocks, &cap, *nb + 1, sizeof **blocks, 8)) {
            rc = LOOM_ENOMEM;
            break;
        }
        loom_prof_ab_block_t *x = &(*blocks)[(*nb)++];
        memset(x, 0, sizeof *x);
        x->run = run_index;
        x->index = b;
        x->on_first = r->toggles[b].on;
        int on = x->on_first ? 0 : 1;
        x->n_on = n[on];
        x->n_off = n[1 - on];
        six(r->steps, in[on], n[on], tmp, x->on);
        six(r->steps, in[1 - on], n[1 - on], tmp, x->off);
    }
    free(idx);
    free(tmp);
    return rc;
}

static void stats_blocks(loom_prof_ab_t *ab)
{
    size_t n = ab->nblocks;
    double *base = calloc(n ? n : 1, sizeof *base), *prof = calloc(n ? n : 1, sizeof *prof);
    if (!base || !prof)
        goto out;
    for (int m = 0; m < LOOM_PROF_AB_NMETRICS; m++) {
        for (size_t i = 0; i < n; i++) {
            base[i] = ab->blocks[i].off[m];
            prof[i] = ab->blocks[i].on[m];
        }
        loom_prof_ab_estimate(base, prof, n, BOOT_SEED + (uint64_t)m, &ab->est[m]);
    }
out:
    free(base);
    free(prof);
}

void loom_prof_ab_stats(loom_prof_ab_t *ab)
{
    size_t n = ab->pairs;
    double *base = calloc(n ? n : 1, sizeof *base), *prof = calloc(n ? n : 1, sizeof *prof);
    double *qb = calloc(n ? n : 1, sizeof *qb), *qp = calloc(n ? n : 1, sizeof *qp);
    double *sc = calloc(n ? n : 1, sizeof *sc), *pc = calloc(n ? n : 1, sizeof *pc);
    if (!base || !prof || !qb || !qp || !sc || !pc)
        goto out;
    size_t per = ab->toggle_steps ? 1 : 2; /* runs per pair */
    if (ab->toggle_steps) {
        stats_blocks(ab);
    } else {
        const loom_prof_ab_run_t *arm[2];
        ab->quiet_pairs = 0;
        for (size_t i = 0; i < n; i++) {
            arm[0] = &ab->runs[2 * i];
            arm[1] = &ab->runs[2 * i + 1];
            ab->quiet_pairs += loom_prof_ab_pair_quiet(arm[0], arm[1]);
        }
        for (int m = 0; m < LOOM_PROF_AB_NMETRICS; m++) {
            size_t q = 0;
            for (size_t i = 0; i < n; i++) {
                arm[0] = &ab->runs[2 * i];
                arm[1] = &ab->runs[2 * i + 1];
                for (int j = 0; j < 2; j++)
                    (arm[j]->profiled ? prof : base)[i] = arm[j]->value[m];
                if (loom_prof_ab_pair_quiet(arm[0], arm[1])) {
                    qb[q] = base[i];
                    qp[q] = prof[i];
                    q++;
                }
            }
            loom_prof_ab_estimate(base, prof, n, BOOT_SEED + (uint64_t)m, &ab->est[m]);
            loom_prof_ab_estimate(qb, qp, q, BOOT_SEED + (uint64_t)m, &ab->est_quiet[m]);
        }
    }
    size_t nb = 0, np = 0;
    double share = 0, bl = 0;
    for (size_t i = 0; i < per * n; i++) {
        const loom_prof_ab_run_t *r = &ab->runs[i];
        double w = r->wall_s > 0 ? r->wall_s : 1;
        if (r->profiled) {
            sc[np] = r->sampler_cpu_s / w;
            pc[np] = r->loom_cpu_s / w;
            share += r->command_cpu_s > 0 ? r->loom_cpu_s / r->command_cpu_s / (double)n : 0;
            np++;
        } else {
            bl += r->loom_cpu_s / w;
            nb++;
        }
    }
    loom_stats_mean_ci95(sc, np, &ab->sampler_cores, &ab->sampler_cores_ci);
    loom_stats_mean_ci95(pc, np, &ab->profiler_cores, &ab->profiler_cores_ci);
    ab->baseline_loom_cores = nb ? bl / (double)nb : 0;
    ab->profiler_cpu_share = share;
out:
    free(base);
    free(prof);
    free(qb);
    free(qp);
    free(sc);
    free(pc);
}

static double load1(void)
{
    FILE *f = fopen("/proc/loadavg", "re");
    double v = -1;
    if (f) {
        if (fscanf(f, "%lf", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

/* others_cores and steal_frac over the steady steps: from the counters
 * read as the marker of the last warm-up step (or of the first step) came
 * to those read as the last marker came. */
static void machine(const loom_prof_run_t *r, size_t warmup, double loom_cores,
                    loom_prof_ab_run_t *out)
{
    out->ncpus = r->ncpus;
    out->others_cores = out->steal_frac = -1;
    if (!r->step_stat || r->nsteps < 2 || r->ncpus <= 0)
        return;
    size_t a = warmup ? warmup - 1 : 0, b = r->nsteps - 1;
    const loom_prof_cpustat_t *x = &r->step_stat[a], *y = &r->step_stat[b];
    if (x->busy < 0 || y->busy < 0 || y->t_ns <= x->t_ns || y->total <= x->total)
        return;
    double span = (double)(y->t_ns - x->t_ns) / 1e9, mine = 0;
    for (size_t j = a + 1; j <= b; j++)
        mine += r->steps[j].cpu_ns > 0 ? (double)r->steps[j].cpu_ns / 1e9 : 0;
    long hz = sysconf(_SC_CLK_TCK);
    double busy = (double)(y->busy - x->busy) / (double)(hz > 0 ? hz : 100);
    out->others_cores = (busy - mine - loom_cores * span) / span;
    out->steal_frac = (double)(y->steal - x->steal) / (double)(y->total - x->total);
}

static int one(const loom_prof_opts_t *o, loom_prof_ab_run_t *out, loom_prof_ab_t *ab,
               loom_err_t *err)
{
    loom_prof_opts_t x = *o;
    x.cpu_stat = true; /* in both arms: the same reads at each marker */
    if (!out->profiled) {
        x.interval_ns = 0;
        x.kernels = false;
        x.gpu_interval_ns = 0;
        x.toggle_steps = 0;
    }
    out->load1_before = load1();
    loom_prof_run_t *r;
    int rc = loom_prof_run(&x, &r, err);
    out->load1_after = load1();
    if (rc)
        return rc;
    loom_prof_summary_t s;
    loom_prof_summarize(r, &s);
    if (s.steady.n == 0 || s.steady.mean <= 0) {
        rc = loom_err_set(err, LOOM_EINVAL,
                          "prof --ab: %s %zu, %s run reported no steps "
                          "(exit status %d)",
                          o->toggle_steps ? "run" : "pair", out->pair + 1,
                          out->profiled ? "profiled" : "baseline", r->exit_status);
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
        out->run_delay_s = r->run_delay_ns >= 0 ? (double)r->run_delay_ns / 1e9 : -1;
        machine(r, s.warmup_steps, s.wall_s > 0 ? out->loom_cpu_s / s.wall_s : 0, out);
        if (x.toggle_steps &&
            loom_prof_ab_blocks(r, s.warmup_steps, out->pair, &ab->blocks, &ab->nblocks))
            rc = loom_err_set(err, LOOM_ENOMEM, "prof --ab: out of memory");
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
    ab->toggle_steps = o->toggle_steps;
    size_t per = o->toggle_steps ? 1 : 2;
    ab->runs = calloc(per * pairs, sizeof *ab->runs);
    if (!ab->runs)
        return loom_err_set(err, LOOM_ENOMEM, "prof --ab: out of memory");
    for (size_t i = 0; i < pairs; i++) {
        bool prof_first = i % 2 == 0;
        for (size_t j = 0; j < per; j++) {
            loom_prof_ab_run_t *r = &ab->runs[per * i + j];
            r->pair = i;
            r->first = j == 0;
            r->profiled = o->toggle_steps || (j == 0) == prof_first;
            int rc = one(o, r, ab, err);
            if (rc) {
                loom_prof_ab_free(ab);
                return rc;
            }
        }
        ab->pairs = i + 1;
    }
    if (o->toggle_steps && ab->nblocks < 2) {
        loom_prof_ab_free(ab);
        return loom_err_set(err, LOOM_EINVAL,
                            "prof --ab --toggle %zu: fewer than 2 block pairs with 2 steady steps "
                            "in each block; run more steps",
                            o->toggle_steps);
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
    json_object_set_new(o, "ratio_ci95_bootstrap",
                        json_pack("[o,o]", num(e->ratio_boot_low), num(e->ratio_boot_high)));
    json_object_set_new(o, "ratio_median", num(e->ratio_median));
    json_object_set_new(o, "ratio_median_ci",
                        json_pack("[o,o]", num(e->ratio_median_low), num(e->ratio_median_high)));
    json_object_set_new(o, "ratio_median_ci_level", num(e->ratio_median_conf));
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
    json_t *cmd = json_array(), *metrics = json_object(), *quiet = json_object();
    for (size_t i = 0; o->argv[i]; i++)
        json_array_append_new(cmd, json_string(o->argv[i]));
    for (int m = 0; m < LOOM_PROF_AB_NMETRICS; m++) {
        json_object_set_new(metrics, loom_prof_ab_metric_names[m], est_json(&ab->est[m]));
        if (!ab->toggle_steps)
            json_object_set_new(quiet, loom_prof_ab_metric_names[m], est_json(&ab->est_quiet[m]));
    }
    char when[32];
    loom_time_format_rfc3339(loom_time_real_ns(), when);
    json_t *j = json_object();
    json_object_set_new(j, "version", json_integer(3));
    json_object_set_new(j, "command", cmd);
    json_object_set_new(j, "finished", json_string(when));
    json_object_set_new(j, "interval_s", json_real((double)o->interval_ns / 1e9));
    json_object_set_new(j, "design", json_string(ab->toggle_steps ? "within-run" : "runs"));
    if (ab->toggle_steps) {
        json_object_set_new(j, "runs", json_integer((json_int_t)ab->pairs));
        json_object_set_new(j, "toggle_steps", json_integer((json_int_t)ab->toggle_steps));
        json_object_set_new(j, "block_pairs", json_integer((json_int_t)ab->nblocks));
        json_object_set_new(j, "order",
                            json_string("blocks of toggle_steps steps: on, off, off, on, ..."));
        json_decref(quiet);
    } else {
        json_object_set_new(j, "pairs", json_integer((json_int_t)ab->pairs));
        json_object_set_new(j, "order", json_string("ABBA: profiled first in pairs 1, 3, ..."));
        json_t *rule = json_pack("{s:f,s:f,s:f}", "others_per_cpu_max", LOOM_PROF_AB_QUIET_LEVEL,
                                 "others_per_cpu_diff_max", LOOM_PROF_AB_QUIET_DIFF, "steal_max",
                                 LOOM_PROF_AB_QUIET_STEAL);
        json_object_set_new(j, "quiet",
                            json_pack("{s:o,s:I,s:o}", "rule", rule, "pairs",
                                      (json_int_t)ab->quiet_pairs, "metrics", quiet));
    }
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
    size_t per = ab->toggle_steps ? 1 : 2;
    loom_buf_t b = LOOM_BUF_INIT;
    loom_buf_append_str(&b, "pair,order,arm,steps,warmup_steps");
    for (int m = 0; m < LOOM_PROF_AB_NMETRICS; m++)
        loom_buf_appendf(&b, ",%s_s", loom_prof_ab_metric_names[m]);
    loom_buf_append_str(&b, ",run_wall_s,command_cpu_s,sampler_cpu_s,loom_cpu_s,load1_before,"
                            "load1_after,ncpus,others_cores,steal_frac,run_delay_s,quiet\n");
    for (size_t i = 0; i < per * ab->pairs; i++) {
        const loom_prof_ab_run_t *r = &ab->runs[i];
        loom_buf_appendf(&b, "%zu,%d,%s,%zu,%zu", r->pair + 1, r->first ? 1 : 2,
                         ab->toggle_steps ? "toggle"
                         : r->profiled    ? "prof"
                                          : "base",
                         r->steps, r->warmup_steps);
        for (int m = 0; m < LOOM_PROF_AB_NMETRICS; m++)
            loom_buf_appendf(&b, ",%.9f", r->value[m]);
        int q = ab->toggle_steps
                    ? -1
                    : loom_prof_ab_pair_quiet(&ab->runs[2 * r->pair], &ab->runs[2 * r->pair + 1]);
        loom_buf_appendf(&b, ",%.6f,%.6f,%.6f,%.6f,%.2f,%.2f,%d,%.4f,%.4f,%.6f,%d\n", r->wall_s,
                         r->command_cpu_s, r->sampler_cpu_s, r->loom_cpu_s, r->load1_before,
                         r->load1_after, r->ncpus, r->others_cores, r->steal_frac, r->run_delay_s,
                         q);
    }
    rc = b.data ? write_text(dir, "ab_runs.csv", b.data, b.len, err)
                : loom_err_set(err, LOOM_ENOMEM, "prof --ab: out of memory");
    loom_buf_free(&b);
    if (rc || !ab->toggle_steps)
        return rc;
    loom_buf_append_str(&b, "run,block,first,n_on,n_off");
    for (int m = 0; m < LOOM_PROF_AB_NMETRICS; m++)
        loom_buf_appendf(&b, ",on_%s_s", loom_prof_ab_metric_names[m]);
    for (int m = 0; m < LOOM_PROF_AB_NMETRICS; m++)
        loom_buf_appendf(&b, ",off_%s_s", loom_prof_ab_metric_names[m]);
    loom_buf_append_str(&b, "\n");
    for (size_t i = 0; i < ab->nblocks; i++) {
        const loom_prof_ab_block_t *x = &ab->blocks[i];
        loom_buf_appendf(&b, "%zu,%zu,%s,%zu,%zu", x->run + 1, x->index, x->on_first ? "on" : "off",
                         x->n_on, x->n_off);
        for (int m = 0; m < LOOM_PROF_AB_NMETRICS; m++)
            loom_buf_appendf(&b, ",%.9f", x->on[m]);
        for (int m = 0; m < LOOM_PROF_AB_NMETRICS; m++)
            loom_buf_appendf(&b, ",%.9f", x->off[m]);
        loom_buf_append_str(&b, "\n");
    }
    rc = b.data ? write_text(dir, "ab_blocks.csv", b.data, b.len, err)
                : loom_err_set(err, LOOM_ENOMEM, "prof --ab: out of memory");
    loom_buf_free(&b);
    return rc;
}

void loom_prof_ab_free(loom_prof_ab_t *ab)
{
    free(ab->runs);
    ab->runs = NULL;
    free(ab->blocks);
    ab->blocks = NULL;
    ab->nblocks = 0;
    ab->pairs = 0;
}
