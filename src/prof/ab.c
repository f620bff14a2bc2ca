/* --ab: the profiler measures its own cost.
 *
 * Pairs of runs of the same command, one sampled and one not (the baseline
 * still reads step markers, which costs the workload the same pipe writes),
 * alternating which goes first so that drift in the machine's load falls
 * evenly on both. Per pair, the overhead is (prof - base) / base of the
 * mean steady step time; the report is the mean over pairs with a 95%
 * Student t interval (pairs are independent; the pairing removes the
 * slow drift between pairs). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prof/prof_internal.h"

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

/* Mean of per-pair relative differences and its 95% t half-width. */
static void rel_diff(const double *base, const double *prof, size_t n, double *mean, double *lo,
                     double *hi)
{
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++)
        sum += (prof[i] - base[i]) / base[i];
    *mean = n ? sum / (double)n : 0;
    for (size_t i = 0; i < n; i++) {
        double d = (prof[i] - base[i]) / base[i] - *mean;
        sq += d * d;
    }
    if (n < 2) {
        *lo = -INFINITY;
        *hi = INFINITY;
        return;
    }
    double half = loom_prof_t95(n - 1) * sqrt(sq / (double)(n - 1)) / sqrt((double)n);
    *lo = *mean - half;
    *hi = *mean + half;
}

void loom_prof_ab_stats(loom_prof_ab_t *ab)
{
    rel_diff(ab->base_mean_s, ab->prof_mean_s, ab->pairs, &ab->overhead, &ab->ci_low, &ab->ci_high);
    if (ab->base_p50_s && ab->prof_p50_s)
        rel_diff(ab->base_p50_s, ab->prof_p50_s, ab->pairs, &ab->overhead_p50, &ab->ci_low_p50,
                 &ab->ci_high_p50);
}

static int one(const loom_prof_opts_t *o, bool sampled, size_t pair, double *mean, double *p50,
               double *cpu_share, loom_err_t *err)
{
    loom_prof_opts_t x = *o;
    if (!sampled) {
        x.interval_ns = 0;
        x.kernels = false;
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
                          pair + 1, sampled ? "profiled" : "baseline", r->exit_status);
    } else {
        *mean = s.steady.mean;
        *p50 = s.steady.p50;
        if (cpu_share)
            *cpu_share = s.profiler_cpu_share;
        loom_log_info("prof.ab", "pair=%zu profiled=%d steps=%zu warmup=%zu mean_ms=%.3f", pair + 1,
                      sampled, s.nsteps, s.warmup_steps, s.steady.mean * 1e3);
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
    ab->base_mean_s = calloc(pairs, sizeof *ab->base_mean_s);
    ab->prof_mean_s = calloc(pairs, sizeof *ab->prof_mean_s);
    ab->base_p50_s = calloc(pairs, sizeof *ab->base_p50_s);
    ab->prof_p50_s = calloc(pairs, sizeof *ab->prof_p50_s);
    ab->prof_cpu_share = calloc(pairs, sizeof *ab->prof_cpu_share);
    if (!ab->base_mean_s || !ab->prof_mean_s || !ab->base_p50_s || !ab->prof_p50_s ||
        !ab->prof_cpu_share) {
        loom_prof_ab_free(ab);
        return loom_err_set(err, LOOM_ENOMEM, "prof --ab: out of memory");
    }
    for (size_t i = 0; i < pairs; i++) {
        bool prof_first = i % 2 == 0;
        int rc;
        double *pm = &ab->prof_mean_s[i], *pp = &ab->prof_p50_s[i];
        double *bm = &ab->base_mean_s[i], *bp = &ab->base_p50_s[i];
        double *cs = &ab->prof_cpu_share[i];
        if ((rc = one(o, prof_first, i, prof_first ? pm : bm, prof_first ? pp : bp,
                      prof_first ? cs : NULL, err)) ||
            (rc = one(o, !prof_first, i, prof_first ? bm : pm, prof_first ? bp : pp,
                      prof_first ? NULL : cs, err))) {
            loom_prof_ab_free(ab);
            return rc;
        }
        ab->pairs = i + 1;
    }
    loom_prof_ab_stats(ab);
    return LOOM_OK;
}

void loom_prof_ab_free(loom_prof_ab_t *ab)
{
    free(ab->base_mean_s);
    free(ab->prof_mean_s);
    free(ab->base_p50_s);
    free(ab->prof_p50_s);
    free(ab->prof_cpu_share);
    ab->prof_cpu_share = NULL;
    ab->base_mean_s = ab->prof_mean_s = ab->base_p50_s = ab->prof_p50_s = NULL;
    ab->pairs = 0;
}
