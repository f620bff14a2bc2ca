/* Small statistics over arrays of doubles, written once: the comparator
 * qsort needs, two quantile definitions (interpolated for reports of
 * measurements, a sample's own value for the simulator's p99s, each kept as
 * its callers have always computed it) and a mean with its 95% confidence
 * interval. */
#include <math.h>
#include <stdlib.h>

#include "loom/core.h"

int loom_stats_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void loom_stats_sort(double *x, size_t n)
{
    if (n > 1)
        qsort(x, n, sizeof *x, loom_stats_cmp_double);
}

double loom_stats_quantile(const double *sorted, size_t n, double q)
{
    if (n == 0)
        return NAN;
    if (q <= 0)
        return sorted[0];
    if (q >= 1)
        return sorted[n - 1];
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    double f = pos - (double)i;
    return i + 1 < n ? sorted[i] + f * (sorted[i + 1] - sorted[i]) : sorted[i];
}

double loom_stats_quantile_lower(const double *sorted, size_t n, double q)
{
    if (n == 0)
        return NAN;
    if (q <= 0)
        return sorted[0];
    if (q >= 1)
        return sorted[n - 1];
    return sorted[(size_t)floor(q * (double)(n - 1))];
}

double loom_stats_mean(const double *x, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    return n ? sum / (double)n : 0;
}

double loom_stats_t95(size_t df)
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

void loom_stats_mean_ci95(const double *x, size_t n, double *mean, double *half)
{
    double sq = 0;
    *mean = loom_stats_mean(x, n);
    for (size_t i = 0; i < n; i++)
        sq += (x[i] - *mean) * (x[i] - *mean);
    *half = n < 2 ? INFINITY : loom_stats_t95(n - 1) * sqrt(sq / (double)(n - 1) / (double)n);
}
