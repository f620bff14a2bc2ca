/* core's stats: the comparator and sort, both quantile definitions (with
 * the values the callers' old code gave), the mean and its 95% CI. */
#include <math.h>
#include <stdlib.h>

#include "loom/core.h"
#include "test_util.h"

#define assert_near(a, b, eps)                                                                     \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (eps)))                                                             \
            fail_msg("%s = %.17g, expected %.17g (within %g)", #a, a_, b_, (double)(eps));         \
    } while (0)

static void sort(void **state)
{
    (void)state;
    double v[] = {3, -1, 2.5, 0, -INFINITY, 1e300, 2.5, -0.5};
    loom_stats_sort(v, sizeof v / sizeof v[0]);
    for (size_t i = 1; i < sizeof v / sizeof v[0]; i++)
        assert_true(v[i - 1] <= v[i]);
    assert_true(isinf(v[0]) && v[7] == 1e300);
    loom_stats_sort(NULL, 0); /* nothing to sort */
    double one = 4;
    loom_stats_sort(&one, 1);
    assert_true(one == 4);
    double a = 1, b = 2;
    assert_int_equal(loom_stats_cmp_double(&a, &b), -1);
    assert_int_equal(loom_stats_cmp_double(&b, &a), 1);
    assert_int_equal(loom_stats_cmp_double(&a, &a), 0);
}

/* Interpolated (type 7): what loom_prof_quantile gave. */
static void quantile_interpolated(void **state)
{
    (void)state;
    double v[] = {1, 2, 3, 4, 5};
    assert_near(loom_stats_quantile(v, 5, 0.5), 3, 1e-12);
    assert_near(loom_stats_quantile(v, 5, 0.25), 2, 1e-12);
    assert_near(loom_stats_quantile(v, 5, 0.1), 1.4, 1e-12);
    assert_near(loom_stats_quantile(v, 5, 1), 5, 1e-12);
    assert_near(loom_stats_quantile(v, 5, 2), 5, 1e-12);
    assert_near(loom_stats_quantile(v, 5, -1), 1, 1e-12);
    assert_near(loom_stats_quantile(v, 4, 0.5), 2.5, 1e-12);
    assert_near(loom_stats_quantile(v, 1, 0.99), 1, 1e-12);
    assert_true(isnan(loom_stats_quantile(v, 0, 0.5)));
}

/* Lower rank (sorted[floor(q*(n-1))]): what the simulators' p99s gave. */
static void quantile_lower(void **state)
{
    (void)state;
    double v[100];
    for (int i = 0; i < 100; i++)
        v[i] = i + 1;
    assert_true(loom_stats_quantile_lower(v, 100, 0.99) == 99); /* floor(98.01) = 98 */
    assert_true(loom_stats_quantile_lower(v, 100, 0.5) == 50);  /* floor(49.5) = 49 */
    assert_true(loom_stats_quantile_lower(v, 100, 1) == 100);
    assert_true(loom_stats_quantile_lower(v, 100, 0) == 1);
    assert_true(loom_stats_quantile_lower(v, 1, 0.99) == 1);
    assert_true(isnan(loom_stats_quantile_lower(v, 0, 0.99)));
    /* Every n and q the old expression could see: the same element. */
    for (size_t n = 1; n <= 100; n++)
        for (int k = 1; k < 100; k++) {
            double q = k / 100.0;
            assert_true(loom_stats_quantile_lower(v, n, q) ==
                        v[(size_t)floor(q * (double)(n - 1))]);
        }
    /* It is always a value of the sample; the interpolated one need not be. */
    double w[] = {1, 10};
    assert_true(loom_stats_quantile_lower(w, 2, 0.99) == 1);
    assert_near(loom_stats_quantile(w, 2, 0.99), 9.91, 1e-12);
}

static void mean_and_ci(void **state)
{
    (void)state;
    double x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    double mean, half;
    assert_near(loom_stats_mean(x, 10), 5.5, 1e-12);
    assert_true(loom_stats_mean(x, 0) == 0);
    loom_stats_mean_ci95(x, 10, &mean, &half);
    /* sd = sqrt(55/6), se = sd/sqrt(10), t(9) = 2.262 */
    assert_near(mean, 5.5, 1e-12);
    assert_near(half, 2.262 * sqrt(55.0 / 6.0 / 10.0), 1e-12);
    loom_stats_mean_ci95(x, 1, &mean, &half);
    assert_near(mean, 1, 0);
    assert_true(isinf(half));
    loom_stats_mean_ci95(x, 0, &mean, &half);
    assert_true(mean == 0 && isinf(half));
    double same[] = {2, 2, 2};
    loom_stats_mean_ci95(same, 3, &mean, &half);
    assert_true(mean == 2 && half == 0);
    assert_near(loom_stats_t95(1), 12.706, 1e-9);
    assert_near(loom_stats_t95(9), 2.262, 1e-9);
    assert_near(loom_stats_t95(30), 2.042, 1e-9);
    assert_near(loom_stats_t95(45), 2.021, 1e-9);
    assert_near(loom_stats_t95(90), 1.990, 1e-9);
    assert_near(loom_stats_t95(1000), 1.96, 1e-9);
    assert_true(isinf(loom_stats_t95(0)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sort),
        cmocka_unit_test(quantile_interpolated),
        cmocka_unit_test(quantile_lower),
        cmocka_unit_test(mean_and_ci),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
