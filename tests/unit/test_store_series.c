/* Usage series in the store (series.c): points come back as written (NAN
 * as unknown, GPUs included) in time order and outlive a reopening; merging
 * pairs keeps span-weighted means and peaks; downsampling bounds a series
 * at its maximum and keeps the time it covers. */
#include <math.h>
#include <stdio.h>

#include "loom/store.h"
#include "store_fixture.h"

static loom_usage_point_t point(int64_t t, double cpu, double mem)
{
    loom_usage_point_t p = {.time_ns = t * LOOM_NS_PER_S,
                            .span_ns = LOOM_NS_PER_S,
                            .cpu_cores = cpu,
                            .memory_bytes = mem,
                            .memory_peak_bytes = mem,
                            .read_bytes_per_second = NAN,
                            .write_bytes_per_second = 10};
    return p;
}

static void test_append_read(void **state)
{
    (void)state;
    loom_store_t *s = open_store();
    int64_t a = submit_named(s, "a"), b = submit_named(s, "b");
    loom_usage_point_t p[3] = {point(2, 0.5, 100), point(1, 1.5, 200), point(1, 3, 300)};
    p[0].ngpus = 1;
    p[0].gpus[0] = (loom_usage_gpu_t){.index = 2,
                                      .util_pct = 37,
                                      .util_peak_pct = 40,
                                      .memory_bytes = 52613349376.0,
                                      .memory_peak_bytes = 52613349376.0,
                                      .power_watts = NAN};
    int64_t jobs[3] = {a, a, b};
    loom_err_t err;
    assert_int_equal(loom_store_usage_append(s, jobs, p, 3, &err), LOOM_OK);
    loom_store_close(s);
    s = open_store();
    loom_usage_point_t *out;
    size_t n;
    assert_int_equal(loom_store_usage_series(s, a, &out, &n, &err), LOOM_OK);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].time_ns, LOOM_NS_PER_S); /* oldest first */
    assert_true(out[0].cpu_cores == 1.5);
    assert_int_equal(out[0].ngpus, 0);
    assert_true(isnan(out[1].read_bytes_per_second));
    assert_true(out[1].write_bytes_per_second == 10);
    assert_int_equal(out[1].ngpus, 1);
    assert_int_equal(out[1].gpus[0].index, 2);
    assert_true(out[1].gpus[0].util_pct == 37 && out[1].gpus[0].util_peak_pct == 40);
    assert_true(out[1].gpus[0].memory_bytes == 52613349376.0);
    assert_true(isnan(out[1].gpus[0].power_watts));
    free(out);
    assert_int_equal(loom_store_usage_series(s, 999, &out, &n, &err), LOOM_OK);
    assert_int_equal(n, 0);
    assert_null(out);
    p[0].ngpus = LOOM_USAGE_GPUS_MAX + 1;
    assert_int_equal(loom_store_usage_append(s, jobs, p, 1, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "GPUs"));
    loom_store_close(s);
}

static void test_merge_pairs(void **state)
{
    (void)state;
    loom_usage_point_t p[3] = {point(1, 1, 100), point(4, 4, 50), point(5, 2, 10)};
    p[1].span_ns = 3 * LOOM_NS_PER_S; /* covers (1 s, 4 s] */
    p[0].ngpus = p[1].ngpus = 1;
    p[0].gpus[0] = (loom_usage_gpu_t){.index = 0,
                                      .util_pct = 100,
                                      .util_peak_pct = 100,
                                      .memory_bytes = 8,
                                      .memory_peak_bytes = 8,
                                      .power_watts = 300};
    p[1].gpus[0] = (loom_usage_gpu_t){.index = 0,
                                      .util_pct = 0,
                                      .util_peak_pct = 10,
                                      .memory_bytes = 4,
                                      .memory_peak_bytes = 16,
                                      .power_watts = NAN};
    assert_int_equal(loom_usage_merge_pairs(p, 3), 2);
    assert_int_equal(p[0].time_ns, 4 * LOOM_NS_PER_S);
    assert_int_equal(p[0].span_ns, 4 * LOOM_NS_PER_S);
    assert_true(fabs(p[0].cpu_cores - (1 * 1 + 4 * 3) / 4.0) < 1e-9);
    assert_true(p[0].memory_peak_bytes == 100);
    assert_true(fabs(p[0].gpus[0].util_pct - 25) < 1e-9);
    assert_true(p[0].gpus[0].util_peak_pct == 100);
    assert_true(p[0].gpus[0].memory_peak_bytes == 16);
    assert_true(p[0].gpus[0].power_watts == 300);      /* the known one */
    assert_int_equal(p[1].time_ns, 5 * LOOM_NS_PER_S); /* the odd one out, alone */
    assert_true(p[1].cpu_cores == 2);
}

static void test_downsample_bounds(void **state)
{
    (void)state;
    loom_store_t *s = open_store();
    int64_t a = submit_named(s, "long");
    enum { N = LOOM_USAGE_POINTS_MAX + 1 };
    static loom_usage_point_t p[N];
    static int64_t jobs[N];
    for (int i = 0; i < N; i++) {
        p[i] = point(i + 1, i % 2 ? 2 : 0, i);
        jobs[i] = a;
    }
    loom_err_t err;
    assert_int_equal(loom_store_usage_append(s, jobs, p, N, &err), LOOM_OK);
    size_t n;
    assert_int_equal(loom_store_usage_downsample(s, a, 0, &n, &err), LOOM_OK);
    assert_int_equal(n, (N + 1) / 2);
    assert_int_equal(loom_store_usage_downsample(s, a, 0, &n, &err), LOOM_OK); /* under: kept */
    assert_int_equal(n, (N + 1) / 2);
    loom_usage_point_t *out;
    assert_int_equal(loom_store_usage_series(s, a, &out, &n, &err), LOOM_OK);
    assert_int_equal(n, (N + 1) / 2);
    int64_t span = 0;
    for (size_t i = 0; i < n; i++)
        span += out[i].span_ns;
    assert_int_equal(span, (int64_t)N * LOOM_NS_PER_S);
    assert_true(out[0].cpu_cores == 1); /* 0 and 2 over one second each */
    assert_true(out[n - 1].memory_peak_bytes == N - 1);
    assert_int_equal(out[n - 1].time_ns, (int64_t)N * LOOM_NS_PER_S);
    free(out);
    loom_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_append_read, setup_dir, teardown_dir),
        cmocka_unit_test(test_merge_pairs),
        cmocka_unit_test_setup_teardown(test_downsample_bounds, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
