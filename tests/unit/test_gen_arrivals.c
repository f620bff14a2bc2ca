/* Arrival processes: exact constant schedules, a Kolmogorov-Smirnov test of
 * poisson gaps against the exponential CDF and of gamma gaps against the
 * gamma CDF (with negative controls, so the tests can fail), the gamma
 * coefficient of variation, determinism per seed, and the statistics
 * helpers (histogram quantiles, chi-square tail). No clock is involved. */
#include <math.h>
#include <stdio.h>

#include "loom/gen.h"
#include "test_util.h"

static double *gaps(loom_gen_arrivals_config_t *cfg, uint64_t seed, size_t n)
{
    loom_gen_arrivals_t a;
    loom_err_t err;
    assert_int_equal(loom_gen_arrivals_init(&a, cfg, seed, &err), LOOM_OK);
    double *g = malloc(n * sizeof *g);
    int64_t prev, due;
    assert_true(loom_gen_arrivals_next(&a, &prev));
    assert_true(prev == 0); /* the first job is due at the start */
    for (size_t i = 0; i < n; i++) {
        assert_true(loom_gen_arrivals_next(&a, &due));
        assert_true(due >= prev);
        g[i] = (double)(due - prev) / 1e9;
        prev = due;
    }
    return g;
}

static double exp_cdf(double x, void *ctx)
{
    double rate = *(double *)ctx;
    return x <= 0 ? 0 : 1.0 - exp(-rate * x);
}

typedef struct {
    double shape, scale;
} gamma_params_t;

static double gamma_cdf(double x, void *ctx)
{
    gamma_params_t *g = ctx;
    return loom_gen_gamma_p(g->shape, x / g->scale);
}

static void constant_is_exact(void **state)
{
    loom_gen_arrivals_config_t cfg = {.process = LOOM_GEN_CONSTANT, .rate = 3.0};
    loom_gen_arrivals_t a;
    assert_int_equal(loom_gen_arrivals_init(&a, &cfg, 1, NULL), LOOM_OK);
    for (int64_t i = 0; i < 100000; i++) {
        int64_t due;
        assert_true(loom_gen_arrivals_next(&a, &due));
        /* computed from the index, not summed: no drift even after 1e5 */
        assert_true(due == llround((double)i * 1e9 / 3.0));
    }
    assert_true(loom_gen_arrivals_rate(&cfg) == 3.0);
}

static void poisson_ks(void **state)
{
    enum { N = 20000 };
    double rate = 250.0;
    loom_gen_arrivals_config_t cfg = {.process = LOOM_GEN_POISSON, .rate = rate};
    double *g = gaps(&cfg, 12345, N);
    double d, p;
    loom_gen_ks(g, N, exp_cdf, &rate, &d, &p);
    assert_true(p > 0.001);
    assert_true(d < 1.95 / sqrt((double)N));
    /* Negative control: the same gaps are not exponential at 1.1x the rate. */
    double wrong = rate * 1.1;
    loom_gen_ks(g, N, exp_cdf, &wrong, &d, &p);
    assert_true(p < 1e-6);
    free(g);
}

static void gamma_cv_and_ks(void **state)
{
    enum { N = 50000 };
    double cvs[] = {0.5, 2.0, 4.0};
    for (size_t k = 0; k < 3; k++) {
        /* A low rate: gaps are rounded to whole ns, and at a high rate and
         * cv 2 about 1% of the gamma's mass lies below 1 ns. */
        double rate = 0.01, cv = cvs[k];
        loom_gen_arrivals_config_t cfg = {.process = LOOM_GEN_GAMMA, .rate = rate, .cv = cv};
        double *g = gaps(&cfg, 99 + k, N);
        double sum = 0, sq = 0;
        for (size_t i = 0; i < N; i++)
            sum += g[i];
        double mean = sum / N;
        for (size_t i = 0; i < N; i++)
            sq += (g[i] - mean) * (g[i] - mean);
        double sd = sqrt(sq / (N - 1)), got_cv = sd / mean;
        assert_true(fabs(mean * rate - 1.0) < 0.06);
        assert_true(fabs(got_cv / cv - 1.0) < 0.08);
        double shape = 1.0 / (cv * cv);
        gamma_params_t gp = {shape, 1.0 / (shape * rate)};
        double d, p;
        if (cv <= 2.0) { /* at cv 4 (shape 1/16) ns rounding shows even here */
            loom_gen_ks(g, N, gamma_cdf, &gp, &d, &p);
            assert_true(p > 0.001);
            /* Negative control: exponential gaps of the same mean. */
            loom_gen_ks(g, N, exp_cdf, &rate, &d, &p);
            assert_true(p < 1e-6);
        }
        free(g);
    }
}

static void deterministic_per_seed(void **state)
{
    loom_gen_arrivals_config_t cfg = {.process = LOOM_GEN_GAMMA, .rate = 1000, .cv = 1.5};
    loom_gen_arrivals_t a, b, c;
    loom_gen_arrivals_init(&a, &cfg, 7, NULL);
    loom_gen_arrivals_init(&b, &cfg, 7, NULL);
    loom_gen_arrivals_init(&c, &cfg, 8, NULL);
    int same_c = 0;
    for (int i = 0; i < 1000; i++) {
        int64_t x, y, z;
        loom_gen_arrivals_next(&a, &x);
        loom_gen_arrivals_next(&b, &y);
        loom_gen_arrivals_next(&c, &z);
        assert_true(x == y);
        same_c += x == z;
    }
    assert_true(same_c < 5); /* only the shared first arrival at 0 */
    loom_gen_arrivals_config_t pc = {.process = LOOM_GEN_POISSON, .rate = 10};
    loom_gen_arrivals_t p1, p2;
    loom_gen_arrivals_init(&p1, &pc, 42, NULL);
    loom_gen_arrivals_init(&p2, &pc, 42, NULL);
    int64_t due;
    for (int i = 0; i < 5; i++) {
        loom_gen_arrivals_next(&p1, &due);
        int64_t again;
        loom_gen_arrivals_next(&p2, &again);
        assert_true(due == again);
    }
}

static void init_errors(void **state)
{
    loom_gen_arrivals_t a;
    loom_err_t err;
    loom_gen_arrivals_config_t c1 = {.process = LOOM_GEN_POISSON, .rate = 0};
    assert_int_equal(loom_gen_arrivals_init(&a, &c1, 1, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "rate"));
    loom_gen_arrivals_config_t c2 = {.process = LOOM_GEN_GAMMA, .rate = 1, .cv = 0};
    assert_int_equal(loom_gen_arrivals_init(&a, &c2, 1, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "cv"));
    loom_gen_arrivals_config_t c3 = {.process = LOOM_GEN_TRACE, .time_scale = 1};
    assert_int_equal(loom_gen_arrivals_init(&a, &c3, 1, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "trace"));
    loom_gen_arrivals_config_t c4 = {.process = LOOM_GEN_CONSTANT, .rate = NAN};
    assert_int_equal(loom_gen_arrivals_init(&a, &c4, 1, &err), LOOM_EINVAL);
    loom_gen_process_t p;
    assert_int_equal(loom_gen_process_parse("gamma", &p, &err), LOOM_OK);
    assert_int_equal(p, LOOM_GEN_GAMMA);
    assert_int_equal(loom_gen_process_parse("weibull", &p, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "weibull"));
}

static void histogram(void **state)
{
    loom_gen_hist_t *h = malloc(sizeof *h);
    loom_gen_hist_init(h);
    assert_true(loom_gen_hist_quantile(h, 0.5) == 0);
    for (int64_t v = 1; v <= 100000; v++)
        loom_gen_hist_add(h, v * 1000); /* 1 us .. 100 ms */
    int64_t p50 = loom_gen_hist_quantile(h, 0.5), p99 = loom_gen_hist_quantile(h, 0.99);
    assert_true(p50 >= 50000000 && p50 <= 50000000 * 1.016);
    assert_true(p99 >= 99000000 && p99 <= 99000000 * 1.016);
    assert_true(loom_gen_hist_quantile(h, 1.0) == 100000000);
    assert_true(h->max == 100000000);
    loom_gen_hist_init(h);
    for (int64_t v = 0; v < 128; v++)
        loom_gen_hist_add(h, v); /* exact below 128 */
    assert_true(loom_gen_hist_quantile(h, 0.5) == 63);
    loom_gen_hist_add(h, -5); /* counts as 0 */
    assert_true(h->n == 129);
    loom_gen_hist_add(h, INT64_MAX);
    assert_true(loom_gen_hist_quantile(h, 1.0) == INT64_MAX);
    free(h);
}

static void chi_square(void **state)
{
    /* Table values: the 5% points of chi-square with 1 and 10 dof. */
    assert_true(fabs(loom_gen_chi2_sf(3.841459, 1) - 0.05) < 1e-5);
    assert_true(fabs(loom_gen_chi2_sf(18.307038, 10) - 0.05) < 1e-5);
    assert_true(fabs(loom_gen_chi2_sf(2.0, 2) - exp(-1.0)) < 1e-12);
    uint64_t obs[] = {100, 200, 300, 400};
    double w[] = {1, 2, 3, 4};
    double x2, dof, p;
    assert_int_equal(loom_gen_chi2(obs, w, 4, &x2, &dof, &p, NULL), LOOM_OK);
    assert_true(x2 == 0 && dof == 3 && p == 1.0);
    uint64_t skew[] = {250, 250, 250, 250};
    loom_gen_chi2(skew, w, 4, &x2, &dof, &p, NULL);
    assert_true(p < 1e-6);
    uint64_t zero_hit[] = {1, 200, 300, 400};
    double wz[] = {0, 2, 3, 4};
    loom_gen_chi2(zero_hit, wz, 4, &x2, &dof, &p, NULL);
    assert_true(dof == 2 && p == 0);
    double bad[] = {1, -1};
    loom_err_t err;
    assert_int_equal(loom_gen_chi2(obs, bad, 2, &x2, &dof, &p, &err), LOOM_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(constant_is_exact), cmocka_unit_test(poisson_ks),
        cmocka_unit_test(gamma_cv_and_ks),   cmocka_unit_test(deterministic_per_seed),
        cmocka_unit_test(init_errors),       cmocka_unit_test(histogram),
        cmocka_unit_test(chi_square),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
