/* The profiler's numbers (src/prof/report.c, ab.c), on inputs whose answers
 * are known by hand. */
#include <stdio.h>

#include "test_util.h"

#include <math.h>
#include <unistd.h>

#include "loom/prof.h"
#include "prof/prof_internal.h"

/* cmocka's assert_float_equal works in float; the numbers here need double. */
#define assert_double_equal(a, b, eps)                                                             \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (eps)))                                                             \
            fail_msg("%s = %.12g, expected %.12g (within %g)", #a, a_, b_, (double)(eps));         \
    } while (0)

static void test_quantile(void **state)
{
    (void)state;
    double v[] = {1, 2, 3, 4, 5};
    assert_double_equal(loom_prof_quantile(v, 5, 0.5), 3, 1e-12);
    assert_double_equal(loom_prof_quantile(v, 5, 0.25), 2, 1e-12);
    assert_double_equal(loom_prof_quantile(v, 5, 0.1), 1.4, 1e-12);
    assert_double_equal(loom_prof_quantile(v, 5, 1), 5, 1e-12);
    assert_true(isnan(loom_prof_quantile(v, 0, 0.5)));
}

static void test_warmup(void **state)
{
    (void)state;
    /* Three slow steps, then steady at 1.0 with small noise. */
    double a[] = {5, 3, 1.5, 1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.0, 1.01};
    assert_int_equal(loom_prof_warmup(a, 12), 3);
    /* A late outlier does not extend the warm-up. */
    double b[] = {4, 1.0, 1.0, 1.0, 1.0, 9, 1.0, 1.0, 1.0, 1.0};
    assert_int_equal(loom_prof_warmup(b, 10), 1);
    /* Within 5% of the median counts as steady even with zero spread. */
    double c[] = {1.04, 1, 1, 1, 1, 1};
    assert_int_equal(loom_prof_warmup(c, 6), 0);
    double d[] = {1.06, 1, 1, 1, 1, 1};
    assert_int_equal(loom_prof_warmup(d, 6), 1);
    /* Too few steps to tell. */
    double e[] = {9, 1, 1};
    assert_int_equal(loom_prof_warmup(e, 3), 0);
}

static void test_t95_and_ab(void **state)
{
    (void)state;
    assert_double_equal(loom_prof_t95(1), 12.706, 1e-9);
    assert_double_equal(loom_prof_t95(9), 2.262, 1e-9);
    assert_double_equal(loom_prof_t95(1000), 1.96, 1e-9);
    double base[] = {1.0, 1.0, 1.0, 1.0}, prof[] = {1.01, 1.03, 1.01, 1.03};
    loom_prof_ab_t ab = {.pairs = 4, .base_mean_s = base, .prof_mean_s = prof};
    loom_prof_ab_stats(&ab);
    assert_double_equal(ab.overhead, 0.02, 1e-12);
    /* sd of {.01,.03,.01,.03} = 0.011547; t(3) = 3.182; half = 3.182*0.011547/2 */
    double half = 3.182 * sqrt(4 * 0.0001 / 3) / 2;
    assert_double_equal(ab.ci_low, 0.02 - half, 1e-9);
    assert_double_equal(ab.ci_high, 0.02 + half, 1e-9);
    double bp[] = {2.0, 2.0, 2.0, 2.0}, pp[] = {1.9, 1.9, 1.9, 1.9};
    ab.base_p50_s = bp;
    ab.prof_p50_s = pp;
    loom_prof_ab_stats(&ab);
    assert_double_equal(ab.overhead_p50, -0.05, 1e-12);
    assert_double_equal(ab.ci_low_p50, -0.05, 1e-12); /* no spread */
    assert_double_equal(ab.overhead, 0.02, 1e-12);
}

/* A run built by hand: 6 steps of 100 ms (the first 400 ms), CPU at one
 * core during steps, samples every 50 ms. */
static loom_prof_run_t *fake_run(void)
{
    loom_prof_run_t *r = calloc(1, sizeof *r);
    r->argv = calloc(2, sizeof *r->argv);
    r->argv[0] = strdup("fake");
    r->meta = json_object();
    r->start_ns = 0;
    r->end_ns = 1000 * LOOM_NS_PER_MS;
    r->interval_ns = 50 * LOOM_NS_PER_MS;
    r->nsteps = 6;
    r->steps = calloc(6, sizeof *r->steps);
    int64_t t = 100 * LOOM_NS_PER_MS;
    for (int i = 0; i < 6; i++) {
        int64_t d = (i == 0 ? 400 : 100) * LOOM_NS_PER_MS;
        r->steps[i] = (loom_prof_step_t){i, t, t + d, 8, 10 * LOOM_NS_PER_MS, -1};
        t += d;
    }
    /* CPU accrues at 1 core from 100 ms to 1000 ms (steps end at 1000). */
    r->nsamples = 21;
    r->samples = calloc(r->nsamples, sizeof *r->samples);
    for (size_t i = 0; i < r->nsamples; i++) {
        int64_t ts = (int64_t)i * 50 * LOOM_NS_PER_MS;
        int64_t cpu = ts > 100 * LOOM_NS_PER_MS ? ts - 100 * LOOM_NS_PER_MS : 0;
        r->samples[i] = (loom_prof_sample_t){ts, cpu * 3 / 4, cpu / 4, (int64_t)i << 20, 1, 4};
    }
    r->rusage_user_ns = 700 * LOOM_NS_PER_MS;
    r->rusage_sys_ns = 200 * LOOM_NS_PER_MS;
    return r;
}

static void test_summary(void **state)
{
    (void)state;
    loom_prof_run_t *r = fake_run();
    loom_prof_summary_t s;
    loom_prof_summarize(r, &s);
    assert_int_equal(s.nsteps, 6);
    assert_int_equal(s.warmup_steps, 1);
    assert_double_equal(s.warmup_s, 0.4, 1e-9);
    assert_double_equal(s.startup_s, 0.1, 1e-9);
    assert_int_equal(s.steady.n, 5);
    assert_double_equal(s.steady.mean, 0.1, 1e-9);
    assert_double_equal(s.steps_per_s, 10, 1e-6);
    assert_double_equal(s.items_per_s, 80, 1e-6);
    assert_double_equal(s.data_frac, 0.1, 1e-9);
    assert_double_equal(s.copy_frac, -1, 0);
    assert_double_equal(s.compute_frac, 0.9, 1e-9);
    assert_double_equal(s.sampled_cpu_s, 0.9, 1e-9);
    assert_double_equal(s.cpu_cores_run, 0.9, 1e-9);
    assert_double_equal(s.cpu_cores_steady, 1.0, 1e-9);
    assert_double_equal(s.user_frac, 0.75, 1e-9);
    assert_double_equal(s.kernel_cpu_s, 0.9, 1e-9);
    assert_double_equal(s.cpu_error, 0, 1e-9);
    assert_double_equal(s.rss_peak_bytes, (double)(20 << 20), 0);
    assert_double_equal(s.interval_achieved_s, 0.05, 1e-9);
    /* Interpolation between samples, and from 0 at the fork. */
    assert_double_equal(loom_prof_cpu_at(r, 125 * LOOM_NS_PER_MS), 25e6, 1);
    assert_double_equal(loom_prof_cpu_at(r, 1001 * LOOM_NS_PER_MS), -1, 0);
    loom_buf_t b = LOOM_BUF_INIT;
    assert_int_equal(loom_prof_report_md(r, &b), LOOM_OK);
    assert_non_null(strstr(b.data, "| 6 | 1 | 0.400 | 0.100 |"));
    assert_non_null(strstr(b.data, "80.00 items/s"));
    loom_buf_free(&b);
    loom_prof_run_free(r);
}

static void test_write_record(void **state)
{
    (void)state;
    loom_prof_run_t *r = fake_run();
    char dir[] = "/tmp/loom-test-prof-XXXXXX";
    assert_non_null(mkdtemp(dir));
    loom_err_t err;
    assert_int_equal(loom_prof_write(r, dir, &err), LOOM_OK);
    const char *files[] = {"run.json", "steps.csv", "samples.csv", "cpu.svg", "report.md"};
    char path[256];
    for (size_t i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        loom_buf_t b = LOOM_BUF_INIT;
        assert_int_equal(loom_buf_read_file(&b, path, &err), LOOM_OK);
        assert_true(b.len > 0);
        if (i == 0) {
            json_t *j;
            assert_int_equal(loom_json_parse(b.data, b.len, path, 0, &j, &err), LOOM_OK);
            assert_int_equal(json_array_size(json_object_get(j, "steps")), 6);
            json_decref(j);
        }
        if (i == 1) /* header + 6 rows */
            assert_int_equal(b.data[b.len - 1], '\n');
        loom_buf_free(&b);
        unlink(path);
    }
    rmdir(dir);
    /* A directory that cannot be made is an error naming it. */
    assert_int_equal(loom_prof_write(r, "/proc/nonexistent/x", &err), LOOM_EIO);
    assert_non_null(strstr(err.msg, "/proc/nonexistent/x"));
    loom_prof_run_free(r);
}

/* The CUPTI tracer's records summarised by kind and kernel class; a
 * malformed line is counted, not trusted. */
static void test_kernels_summary(void **state)
{
    (void)state;
    loom_prof_run_t *r = fake_run();
    char dir[] = "/tmp/loom-test-prof-k-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], status[256];
    snprintf(path, sizeof path, "%s/kernels.csv", dir);
    snprintf(status, sizeof status, "%s/kernels.csv.status", dir);
    const char *csv = "kind,start_ns,end_ns,bytes,device,stream,name\n"
                      "kernel,1000,3000,0,0,7,void cutlass::Kernel<cutlass_80_gemm, 128>(Params)\n"
                      "kernel,4000,5000,0,0,7,ampere_sgemm_128x64_nn\n"
                      "kernel,5000,5500,0,0,7,implicit_convolve_sgemm\n"
                      "kernel,6000,6100,0,0,7,at::native::vectorized_elementwise_kernel<4>\n"
                      "kernel,7000,7050,0,0,7,some_custom_thing\n"
                      "memcpy_htod,100,900,4096,0,7,\n"
                      "kernel,9,8,0,0,7,backwards\n"
                      "garbage\n";
    loom_err_t err;
    assert_int_equal(loom_write_file_atomic(path, csv, strlen(csv), 0644, &err), LOOM_OK);
    const char *st = "ok records=6 dropped=0\n";
    assert_int_equal(loom_write_file_atomic(status, st, strlen(st), 0644, &err), LOOM_OK);
    r->kernels = true;
    r->kernels_path = strdup(path);
    char out[300];
    snprintf(out, sizeof out, "%s/out", dir);
    assert_int_equal(loom_prof_write(r, out, &err), LOOM_OK);
    char rec[320];
    snprintf(rec, sizeof rec, "%s/run.json", out);
    json_t *j;
    assert_int_equal(loom_json_load_file(rec, &j, &err), LOOM_OK);
    json_t *k = json_object_get(j, "kernels");
    assert_string_equal(json_string_value(json_object_get(k, "status")), "ok records=6 dropped=0");
    assert_int_equal(json_integer_value(json_object_get(k, "records")), 6);
    assert_int_equal(json_integer_value(json_object_get(k, "malformed_lines")), 2);
    json_t *cls = json_object_get(k, "by_class");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(cls, "gemm"), "count")), 2);
    assert_double_equal(json_number_value(json_object_get(json_object_get(cls, "gemm"), "total_s")),
                        3e-6, 1e-15);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(cls, "convolution"), "count")), 1);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(cls, "elementwise"), "count")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(cls, "other"), "count")),
                     1);
    json_t *copy = json_object_get(json_object_get(k, "by_kind"), "memcpy_htod");
    assert_int_equal(json_integer_value(json_object_get(copy, "bytes")), 4096);
    json_decref(j);
    const char *names[] = {"run.json", "steps.csv", "samples.csv", "cpu.svg", "report.md"};
    for (size_t i = 0; i < 5; i++) {
        snprintf(rec, sizeof rec, "%s/%s", out, names[i]);
        unlink(rec);
    }
    rmdir(out);
    unlink(path);
    unlink(status);
    rmdir(dir);
    loom_prof_run_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantile),     cmocka_unit_test(test_warmup),
        cmocka_unit_test(test_t95_and_ab),   cmocka_unit_test(test_summary),
        cmocka_unit_test(test_write_record), cmocka_unit_test(test_kernels_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
