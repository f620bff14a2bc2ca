/* Statistics the generator reports about itself: a log-linear histogram for
 * lateness and ack latency (constant memory at any rate), Pearson's
 * chi-square for the job choices against their weights, and a
 * one-sample Kolmogorov-Smirnov test used to check the arrival processes.
 * The special functions are the textbook ones: the regularized incomplete
 * gamma function by its series below a+1 and by a Lentz continued fraction
 * above, and the Kolmogorov distribution by its alternating series.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/gen.h"

/* ------------------------------------------------------------- histogram */

static int bucket_of(uint64_t v)
{
    if (v < 128)
        return (int)v;
    int msb = 63 - __builtin_clzll(v);
    int shift = msb - 6; /* keep 7 significant bits: 64 sub-buckets */
    return (shift + 1) * 64 + (int)((v >> shift) & 63);
}

/* The largest value that falls in bucket b. */
static uint64_t bucket_top(int b)
{
    if (b < 128)
        return (uint64_t)b;
    int shift = b / 64 - 1;
    uint64_t sub = (uint64_t)(b % 64) + 64;
    return ((sub + 1) << shift) - 1;
}

void loom_gen_hist_init(loom_gen_hist_t *h)
{
    memset(h, 0, sizeof *h);
}

void loom_gen_hist_add(loom_gen_hist_t *h, int64_t v)
{
    if (v < 0)
        v = 0;
    h->counts[bucket_of((uint64_t)v)]++;
    h->n++;
    h->sum += (double)v;
    if (v > h->max)
        h->max = v;
}

void loom_gen_hist_merge(loom_gen_hist_t *into, const loom_gen_hist_t *from)
{
    for (int i = 0; i < LOOM_GEN_HIST_BUCKETS; i++)
        into->counts[i] += from->counts[i];
    into->n += from->n;
    into->sum += from->sum;
    if (from->max > into->max)
        into->max = from->max;
}

int64_t loom_gen_hist_quantile(const loom_gen_hist_t *h, double q)
{
    if (h->n == 0)
        return 0;
    if (q <= 0)
        q = 0;
    if (q > 1)
        q = 1;
    /* The smallest value with at least ceil(q n) values at or below it. */
    uint64_t rank = (uint64_t)ceil(q * (double)h->n);
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (int b = 0; b < LOOM_GEN_HIST_BUCKETS; b++) {
        seen += h->counts[b];
        if (seen >= rank) {
            uint64_t top = bucket_top(b);
            return (int64_t)top < h->max ? (int64_t)top : h->max;
        }
    }
    return h->max;
}

/* ------------------------------------------------------------ chi-square */

/* Regularized lower incomplete gamma P(a, x) by its series (x < a + 1). */
static double gamma_p_series(double a, double x)
{
    double sum = 1.0 / a, term = sum, ap = a;
    for (int i = 0; i < 10000; i++) {
        ap += 1.0;
        term *= x / ap;
        sum += term;
        if (fabs(term) < fabs(sum) * 1e-15)
            break;
    }
    return sum * exp(-x + a * log(x) - lgamma(a));
}

/* Regularized upper incomplete gamma Q(a, x) by a continued fraction
 * (x >= a + 1), evaluated with the modified Lentz method. */
static double gamma_q_fraction(double a, double x)
{
    const double tiny = 1e-300;
    double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
    for (int i = 1; i < 10000; i++) {
        double an = -i * (i - a);
        b += 2.0;
        d = an * d + b;
        if (fabs(d) < tiny)
            d = tiny;
        c = b + an / c;
        if (fabs(c) < tiny)
            c = tiny;
        d = 1.0 / d;
        double delta = d * c;
        h *= delta;
        if (fabs(delta - 1.0) < 1e-15)
            break;
    }
    return exp(-x + a * log(x) - lgamma(a)) * h;
}

double loom_gen_gamma_p(double a, double x)
{
    if (!(a > 0))
        return NAN;
    if (!(x > 0))
        return 0.0;
    if (x < a + 1.0)
        return gamma_p_series(a, x);
    return 1.0 - gamma_q_fraction(a, x);
}

double loom_gen_chi2_sf(double x, double dof)
{
    if (!(dof > 0))
        return NAN;
    if (!(x > 0))
        return 1.0;
    double a = dof / 2.0, hx = x / 2.0;
    if (hx < a + 1.0)
        return 1.0 - gamma_p_series(a, hx);
    return gamma_q_fraction(a, hx);
}

int loom_gen_chi2(const uint64_t *observed, const double *weights, size_t n, double *stat,
                  double *dof, double *p, loom_err_t *err)
{
    double wsum = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(weights[i] >= 0) || !isfinite(weights[i]))
            return loom_err_set(err, LOOM_EINVAL, "chi-square: weight %zu is %g, expected >= 0", i,
                                weights[i]);
        wsum += weights[i];
        total += observed[i];
    }
    if (!(wsum > 0))
        return loom_err_set(err, LOOM_EINVAL, "chi-square: the weights sum to 0");
    double x2 = 0;
    size_t k = 0;
    bool impossible = false;
    for (size_t i = 0; i < n; i++) {
        if (weights[i] == 0) {
            impossible |= observed[i] > 0;
            continue;
        }
        double e = (double)total * weights[i] / wsum;
        double d = (double)observed[i] - e;
        x2 += e > 0 ? d * d / e : 0;
        k++;
    }
    *stat = x2;
    *dof = k > 1 ? (double)(k - 1) : 0;
    if (impossible)
        *p = 0;
    else if (k <= 1 || total == 0)
        *p = 1; /* one possible outcome: nothing to test */
    else
        *p = loom_gen_chi2_sf(x2, *dof);
    return LOOM_OK;
}

/* -------------------------------------------------------------------- KS */

/* P(K > lambda) for the Kolmogorov distribution. */
static double kolmogorov_sf(double lambda)
{
    if (lambda < 0.2)
        return 1.0;
    double sum = 0, sign = 1;
    for (int j = 1; j <= 100; j++) {
        double term = exp(-2.0 * j * j * lambda * lambda);
        sum += sign * term;
        if (term < 1e-16)
            break;
        sign = -sign;
    }
    double p = 2.0 * sum;
    return p < 0 ? 0 : p > 1 ? 1 : p;
}

void loom_gen_ks(double *x, size_t n, double (*cdf)(double x, void *ctx), void *ctx, double *d,
                 double *p)
{
    if (n == 0) {
        *d = 0;
        *p = 1;
        return;
    }
    loom_stats_sort(x, n);
    double dmax = 0;
    for (size_t i = 0; i < n; i++) {
        double f = cdf(x[i], ctx);
        double lo = f - (double)i / (double)n, hi = (double)(i + 1) / (double)n - f;
        if (lo > dmax)
            dmax = lo;
        if (hi > dmax)
            dmax = hi;
    }
    double sn = sqrt((double)n);
    *d = dmax;
    *p = kolmogorov_sf((sn + 0.12 + 0.11 / sn) * dmax);
}
