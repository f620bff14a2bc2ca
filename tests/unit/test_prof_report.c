/* The profiler's numbers (src/prof/report.c, ab.c), on inputs whose answers
 * are known by hand. */
#include <stdio.h>

#include "test_util.h"

#include <math.h>
#include <unistd.h>

#include "loom/estimate.h"
#include "loom/prof.h"
#include "prof/prof_internal.h"

/* cmocka's assert_float_equal works in float; the numbers here need double. */
#define assert_double_equal(a, b, eps)                                                             \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (eps)))                                                             \
            fail_msg("%s = %.12g, expected %.12g (within %g)", #a, a_, b_, (double)(eps));         \
    } while (0)

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

static void test_ab(void **state)
{
    (void)state;
    double base[] = {1.0, 1.0, 1.0, 1.0}, prof[] = {1.01, 1.03, 1.01, 1.03};
    loom_prof_ab_est_t e, again;
    loom_prof_ab_estimate(base, prof, 4, 7, &e);
    assert_int_equal(e.n, 4);
    assert_double_equal(e.overhead, 0.02, 1e-12);
    /* sd of {.01,.03,.01,.03} = 0.011547; t(3) = 3.182; half = 3.182*0.011547/2 */
    double half = 3.182 * sqrt(4 * 0.0001 / 3) / 2;
    assert_double_equal(e.ci_low, 0.02 - half, 1e-9);
    assert_double_equal(e.ci_high, 0.02 + half, 1e-9);
    /* Geometric mean of the ratios, and its interval on the log scale. */
    assert_double_equal(e.ratio, sqrt(1.01 * 1.03), 1e-12);
    double l = (log(1.03) - log(1.01)) / 2, lh = 3.182 * sqrt(4 * l * l / 3) / 2;
    assert_double_equal(e.ratio_low, sqrt(1.01 * 1.03) * exp(-lh), 1e-9);
    assert_double_equal(e.ratio_high, sqrt(1.01 * 1.03) * exp(lh), 1e-9);
    /* Bootstrap of the mean of 4 values drawn from {.01, .03}: all four
     * are .01 with probability 1/16 > 2.5%, so the 2.5% quantile is .01 and
     * likewise the 97.5% one is .03; the same seed gives the same result. */
    assert_double_equal(e.boot_low, 0.01, 1e-12);
    assert_double_equal(e.boot_high, 0.03, 1e-12);
    loom_prof_ab_estimate(base, prof, 4, 7, &again);
    assert_memory_equal(&e, &again, sizeof e);
    /* No spread: every interval collapses onto the estimate. */
    double bp[] = {2.0, 2.0, 2.0, 2.0}, pp[] = {1.9, 1.9, 1.9, 1.9};
    loom_prof_ab_estimate(bp, pp, 4, 7, &e);
    assert_double_equal(e.overhead, -0.05, 1e-12);
    assert_double_equal(e.ci_low, -0.05, 1e-12);
    assert_double_equal(e.boot_high, -0.05, 1e-12);
    assert_double_equal(e.ratio, 0.95, 1e-12);
    /* Pairs with an unknown value (<= 0) are left out; one pair has no
     * interval. */
    double b1[] = {1.0, -1, 2.0}, p1[] = {1.1, 1.0, -1};
    loom_prof_ab_estimate(b1, p1, 3, 7, &e);
    assert_int_equal(e.n, 1);
    assert_double_equal(e.overhead, 0.1, 1e-12);
    assert_true(isinf(e.ci_low) && isinf(e.ci_high) && isinf(e.boot_high));
}

/* A/B statistics from the runs as they ran (ABBA), the direct cost, and
 * the files --ab writes. */
static void test_ab_runs(void **state)
{
    (void)state;
    loom_prof_ab_run_t runs[6];
    memset(runs, 0, sizeof runs);
    for (size_t i = 0; i < 6; i++) {
        loom_prof_ab_run_t *r = &runs[i];
        r->pair = i / 2;
        r->first = i % 2 == 0;
        r->profiled = (r->first) == (r->pair % 2 == 0); /* ABBA */
        double f = r->profiled ? 1.02 : 1.0;
        r->value[LOOM_PROF_AB_WALL_MEAN] = f * (1 + (double)r->pair);
        r->value[LOOM_PROF_AB_WALL_P50] = f * 0.5;
        r->value[LOOM_PROF_AB_CPU_MEAN] = (r->profiled ? 1.01 : 1.0) * 0.25;
        r->value[LOOM_PROF_AB_CPU_P50] = -1; /* unknown */
        r->value[LOOM_PROF_AB_WALL_MIN] = f * 0.25;
        r->value[LOOM_PROF_AB_CPU_MIN] = -1;
        r->wall_s = 10;
        r->command_cpu_s = 5;
        r->sampler_cpu_s = r->profiled ? 0.01 * (1 + (double)r->pair) : 0;
        r->loom_cpu_s = r->profiled ? 0.05 : 0.02;
    }
    loom_prof_ab_t ab = {.pairs = 3, .runs = runs};
    loom_prof_ab_stats(&ab);
    assert_double_equal(ab.est[LOOM_PROF_AB_WALL_MEAN].overhead, 0.02, 1e-12);
    assert_double_equal(ab.est[LOOM_PROF_AB_WALL_P50].ratio, 1.02, 1e-12);
    assert_double_equal(ab.est[LOOM_PROF_AB_CPU_MEAN].overhead, 0.01, 1e-12);
    assert_int_equal(ab.est[LOOM_PROF_AB_CPU_P50].n, 0);
    assert_double_equal(ab.est[LOOM_PROF_AB_WALL_MIN].boot_high, 0.02, 1e-12);
    /* Sampler: 0.001, 0.002, 0.003 cores: mean .002, sd .001, t(2) 4.303. */
    assert_double_equal(ab.sampler_cores, 0.002, 1e-12);
    assert_double_equal(ab.sampler_cores_ci, 4.303 * 0.001 / sqrt(3), 1e-12);
    assert_double_equal(ab.profiler_cores, 0.005, 1e-12);
    assert_double_equal(ab.profiler_cores_ci, 0, 1e-12);
    assert_double_equal(ab.baseline_loom_cores, 0.002, 1e-12);
    assert_double_equal(ab.profiler_cpu_share, 0.01, 1e-12);

    char dir[] = "/tmp/loom-test-prof-ab-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *argv[] = {"work", "--fast", NULL};
    loom_prof_opts_t o = {.argv = argv, .interval_ns = 10 * LOOM_NS_PER_MS};
    loom_err_t err;
    assert_int_equal(loom_prof_ab_write(&ab, &o, dir, &err), LOOM_OK);
    char path[256];
    snprintf(path, sizeof path, "%s/ab.json", dir);
    json_t *j;
    assert_int_equal(loom_json_load_file(path, &j, &err), LOOM_OK);
    json_t *wm = json_object_get(json_object_get(j, "metrics"), "wall_mean");
    assert_double_equal(json_number_value(json_object_get(wm, "overhead")), 0.02, 1e-9);
    assert_int_equal(json_integer_value(json_object_get(wm, "pairs")), 3);
    json_t *cp = json_object_get(json_object_get(j, "metrics"), "cpu_p50");
    assert_true(json_is_null(json_object_get(cp, "overhead")) ||
                json_integer_value(json_object_get(cp, "pairs")) == 0);
    assert_true(json_is_null(json_array_get(json_object_get(cp, "ci95_t"), 0)));
    assert_double_equal(
        json_number_value(json_object_get(json_object_get(j, "direct"), "sampler_cores")), 0.002,
        1e-12);
    json_decref(j);
    unlink(path);
    snprintf(path, sizeof path, "%s/ab_runs.csv", dir);
    loom_buf_t b = LOOM_BUF_INIT;
    assert_int_equal(loom_buf_read_file(&b, path, &err), LOOM_OK);
    size_t lines = 0;
    for (size_t i = 0; i < b.len; i++)
        lines += b.data[i] == '\n';
    assert_int_equal(lines, 7); /* header + 6 runs */
    assert_non_null(
        strstr(b.data, "wall_mean_s,wall_p50_s,wall_min_s,cpu_mean_s,cpu_p50_s,cpu_min_s"));
    assert_non_null(strstr(b.data, "\n1,1,prof,"));
    assert_non_null(strstr(b.data, "\n2,1,base,"));
    loom_buf_free(&b);
    unlink(path);
    rmdir(dir);
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
        r->steps[i] = LOOM_PROF_STEP_INIT(i, t, t + d);
        r->steps[i].items = 8;
        r->steps[i].data_ns = 10 * LOOM_NS_PER_MS;
        r->steps[i].cpu_ns = d / 2;
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

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* A small XML well-formedness check, enough for the SVG loom writes: tags
 * nest and close in order, attribute values are quoted, '&' starts one of
 * the five predefined entities, and no '<' appears inside text or values. */
static void assert_xml_well_formed(const char *x)
{
    const char *stack[64];
    size_t lens[64], depth = 0;
    bool root_seen = false;
    const char *p = x;
    if (strncmp(p, "<?xml", 5) == 0) {
        p = strstr(p, "?>");
        assert_non_null(p);
        p += 2;
    }
    while (*p) {
        if (*p == '&') {
            static const char *ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
            bool ok = false;
            for (size_t i = 0; i < 5; i++)
                ok |= strncmp(p, ents[i], strlen(ents[i])) == 0;
            if (!ok)
                fail_msg("bare '&' at offset %td", p - x);
            p++;
            continue;
        }
        if (*p != '<') {
            p++;
            continue;
        }
        bool closing = p[1] == '/';
        const char *name = p + 1 + closing;
        size_t nlen = strcspn(name, " \t\n/>");
        assert_true(nlen > 0);
        const char *q = name + nlen;
        bool self = false;
        while (*q && *q != '>') { /* attributes */
            if (*q == '"') {
                const char *end = strchr(q + 1, '"');
                if (!end)
                    fail_msg("unterminated attribute value at offset %td", q - x);
                for (const char *c = q + 1; c < end; c++)
                    if (*c == '<')
                        fail_msg("'<' inside an attribute value at offset %td", c - x);
                q = end + 1;
                continue;
            }
            if (*q == '=' && q[1] != '"')
                fail_msg("unquoted attribute value at offset %td", q - x);
            if (*q == '/' && q[1] == '>')
                self = true;
            q++;
        }
        if (!*q)
            fail_msg("unterminated tag at offset %td", p - x);
        if (closing) {
            if (depth == 0 || lens[depth - 1] != nlen || strncmp(stack[depth - 1], name, nlen))
                fail_msg("closing tag '%.*s' does not match at offset %td", (int)nlen, name, p - x);
            depth--;
        } else if (!self) {
            if (depth == 0) {
                assert_false(root_seen); /* one root element */
                root_seen = true;
            }
            assert_true(depth < 64);
            stack[depth] = name;
            lens[depth++] = nlen;
        }
        p = q + 1;
    }
    assert_int_equal(depth, 0);
    assert_true(root_seen);
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
    assert_int_equal(s.steady_cpu.n, 5);
    assert_double_equal(s.steady_cpu.mean, 0.05, 1e-9);
    assert_double_equal(s.steady_cpu.p95, 0.05, 1e-9);
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
    const char *files[] = {"run.json", "steps.csv", "samples.csv",
                           "cpu.svg",  "report.md", "steps.svg"};
    char path[256];
    for (size_t i = 0; i < 6; i++) {
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
        if (i == 3 || i == 5)
            assert_xml_well_formed(b.data);
        if (i == 5) { /* one dot per step, the warm-up step in orange */
            assert_int_equal(count(b.data, "<circle"), 6);
            assert_int_equal(count(b.data, "fill=\"#ff7f0e\""), 1);
            assert_non_null(strstr(b.data, "grey: CPU time of each step"));
        }
        loom_buf_free(&b);
        unlink(path);
    }
    rmdir(dir);
    /* No counts: no roofline figure. */
    snprintf(path, sizeof path, "%s/roofline.svg", dir);
    assert_int_equal(access(path, F_OK), -1);
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
    const char *names[] = {"run.json", "steps.csv", "samples.csv",
                           "cpu.svg",  "report.md", "steps.svg"};
    for (size_t i = 0; i < 6; i++) {
        snprintf(rec, sizeof rec, "%s/%s", out, names[i]);
        unlink(rec);
    }
    rmdir(out);
    unlink(path);
    unlink(status);
    rmdir(dir);
    loom_prof_run_free(r);
}

/* NVML's utilisation against CUPTI's kernel time: the union of the
 * kernel intervals over the span of the NVML samples, and every case where
 * the two cannot be set side by side said as such. */
static void test_gpu_busy(void **state)
{
    (void)state;
    const char *csv = "kind,start_ns,end_ns,bytes,device,stream,name\n"
                      "kernel,2000,4000,0,0,7,b\n"
                      "kernel,1000,3000,0,0,7,a\n" /* overlaps b: 1000-4000 */
                      "memcpy_htod,4000,6000,64,0,7,\n"
                      "kernel,6000,7000,0,0,8,c\n"
                      "kernel,500,900,0,0,7,before\n"  /* before the first sample */
                      "kernel,9000,12000,0,0,7,late\n" /* clipped at the last one */
                      "kernel,bad\n";
    loom_prof_gpu_sample_t g[3] = {
        {.t_ns = 1000, .index = 0, .util_gpu_pct = 50},
        {.t_ns = 5000, .index = 0, .util_gpu_pct = 60},
        {.t_ns = 10000, .index = 0, .util_gpu_pct = 70},
    };
    json_t *j = prof_gpu_busy(csv, strlen(csv), true, g, 3);
    assert_true(json_is_true(json_object_get(j, "compared")));
    /* busy: 3000 + 1000 + 1000 of 9000 ns; NVML: mean of 60 and 70 */
    assert_double_equal(json_real_value(json_object_get(j, "cupti_busy_pct")), 100.0 * 5 / 9, 1e-9);
    assert_double_equal(json_real_value(json_object_get(j, "nvml_util_mean_pct")), 65, 1e-9);
    assert_double_equal(json_real_value(json_object_get(j, "difference_pct_points")),
                        65 - 100.0 * 5 / 9, 1e-9);
    assert_double_equal(json_real_value(json_object_get(j, "span_s")), 9e-6, 1e-15);
    assert_int_equal(json_integer_value(json_object_get(j, "nvml_samples")), 2);
    json_decref(j);

    const struct {
        bool mono;
        int index2, device2, n;
        const char *why;
    } no[] = {
        {false, 0, 0, 3, "not on loom's clock"},
        {true, 1, 0, 3, "several GPUs"},
        {true, 0, 1, 3, "several devices"},
        {true, 0, 0, 2, "fewer than 3"},
    };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "kind,start_ns,end_ns,bytes,device,stream,name\n"
                 "kernel,1000,2000,0,0,7,a\nkernel,3000,4000,0,%d,7,b\n",
                 no[i].device2);
        loom_prof_gpu_sample_t h[3];
        memcpy(h, g, sizeof h);
        h[2].index = no[i].index2;
        j = prof_gpu_busy(text, strlen(text), no[i].mono, h, (size_t)no[i].n);
        assert_false(json_is_true(json_object_get(j, "compared")));
        assert_non_null(strstr(json_string_value(json_object_get(j, "why")), no[i].why));
        json_decref(j);
    }
    j = prof_gpu_busy("kind,start_ns,end_ns,bytes,device,stream,name\n", 46, true, g, 3);
    assert_non_null(strstr(json_string_value(json_object_get(j, "why")), "no kernel records"));
    json_decref(j);
}

/* Counts from an estimate, peaks from a device file, the run placed on
 * the roofline; counts for another setup are refused with the reason. */
static void test_roofline(void **state)
{
    (void)state;
    loom_prof_run_t *r = fake_run(); /* steady steps of 100 ms, cpu_ns 50 ms */
    json_object_set_new(r->meta, "batch", json_string("8"));
    json_object_set_new(r->meta, "mode", json_string("train"));
    loom_err_t err;
    json_t *est = json_pack("{s:I,s:b,s:s,s:f,s:f,s:f,s:{s:f}}", "batch", (json_int_t)8, "train", 1,
                            "precision", "fp32", "fwd_flops", 2e9, "bwd_flops", 4e9, "opt_flops",
                            0.0, "bytes", "step", 1e9);
    assert_int_equal(loom_prof_roof_from_estimate(&r->roof, est, "est.json", &err), LOOM_OK);
    assert_double_equal(r->roof.flops_per_step, 6e9, 0);
    assert_string_equal(r->roof.mode, "train");
    /* An estimate without byte totals is refused, naming the member. */
    loom_prof_roof_input_t other;
    memset(&other, 0, sizeof other);
    json_object_del(est, "bytes");
    assert_int_equal(loom_prof_roof_from_estimate(&other, est, "old.json", &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "old.json/bytes"));
    json_decref(est);

    char dir[] = "/tmp/loom-test-prof-roof-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char dev[256];
    snprintf(dev, sizeof dev, "%s/dev.json", dir);
    const char *dj = "{\"name\": \"t<1>\", \"description\": \"a & b <test>\", "
                     "\"flops_fp32\": 1e11, \"flops_half\": 4e11, \"flops_vector\": 1e10, "
                     "\"mem_bandwidth\": 2e10, \"op_overhead_s\": 0, \"memory_bytes\": 0, "
                     "\"context_bytes\": 0, \"allocator\": \"malloc\"}";
    assert_int_equal(loom_write_file_atomic(dev, dj, strlen(dj), 0644, &err), LOOM_OK);
    loom_est_device_t d;
    assert_int_equal(loom_est_device_load(dev, dir, &d, &err), LOOM_OK);
    loom_prof_roof_set_device(&r->roof, &(loom_prof_peaks_t){d.name, d.description, d.flops_fp32,
                                                             d.flops_half, d.mem_bandwidth});

    loom_prof_summary_t s;
    loom_prof_summarize(r, &s);
    loom_prof_roofline_t rf;
    loom_prof_roofline(r, &s, &rf);
    assert_true(rf.have_counts && rf.have_device);
    assert_double_equal(rf.intensity, 6, 1e-12);
    assert_double_equal(rf.achieved_flops, 6e10, 1); /* 6 GFLOP / 0.1 s */
    assert_double_equal(rf.achieved_bw, 1e10, 1);
    assert_double_equal(rf.achieved_flops_cpu, 1.2e11, 1); /* per 50 ms of CPU */
    assert_double_equal(rf.ridge, 5, 1e-12);
    assert_double_equal(rf.attainable, 1e11, 1); /* 6 > 5: under the flat roof */
    assert_double_equal(rf.fraction, 0.6, 1e-9);
    assert_false(rf.memory_bound);

    /* The files: roofline.svg well-formed with the device name escaped;
     * the record and the report carry the numbers. */
    char out[300], path[400];
    snprintf(out, sizeof out, "%s/out", dir);
    assert_int_equal(loom_prof_write(r, out, &err), LOOM_OK);
    snprintf(path, sizeof path, "%s/roofline.svg", out);
    loom_buf_t b = LOOM_BUF_INIT;
    assert_int_equal(loom_buf_read_file(&b, path, &err), LOOM_OK);
    assert_xml_well_formed(b.data);
    assert_non_null(strstr(b.data, "t&lt;1&gt;"));
    assert_int_equal(count(b.data, "<circle"), 2); /* wall and CPU-time points */
    loom_buf_free(&b);
    snprintf(path, sizeof path, "%s/run.json", out);
    json_t *j;
    assert_int_equal(loom_json_load_file(path, &j, &err), LOOM_OK);
    json_t *rj = json_object_get(j, "roofline");
    assert_true(json_is_true(json_object_get(rj, "counts")));
    assert_double_equal(json_number_value(json_object_get(rj, "fraction_of_roof")), 0.6, 1e-9);
    assert_string_equal(json_string_value(json_object_get(rj, "bound")), "compute");
    json_t *sc = json_object_get(json_object_get(j, "summary"), "step_cpu_s");
    assert_double_equal(json_number_value(json_object_get(sc, "mean")), 0.05, 1e-9);
    json_decref(j);
    b = (loom_buf_t)LOOM_BUF_INIT;
    assert_int_equal(loom_prof_report_md(r, &b), LOOM_OK);
    assert_non_null(strstr(b.data, "| achieved / roof | 60.00% |"));
    assert_non_null(strstr(b.data, "compute-bound"));
    loom_buf_free(&b);
    const char *names[] = {"run.json",  "steps.csv", "samples.csv", "cpu.svg",
                           "report.md", "steps.svg", "roofline.svg"};
    for (size_t i = 0; i < 7; i++) {
        snprintf(path, sizeof path, "%s/%s", out, names[i]);
        assert_int_equal(unlink(path), 0);
    }
    rmdir(out);

    /* bf16 uses the device's half-precision peak: the roof is memory now. */
    json_object_set_new(r->meta, "precision", json_string("bf16"));
    snprintf(r->roof.precision, sizeof r->roof.precision, "bf16");
    loom_prof_roofline(r, &s, &rf);
    assert_double_equal(rf.peak_flops, 4e11, 1);
    assert_double_equal(rf.ridge, 20, 1e-12);
    assert_true(rf.memory_bound);
    assert_double_equal(rf.attainable, 1.2e11, 1);

    /* Counts for another batch than the run's are not used. */
    json_object_set_new(r->meta, "batch", json_string("16"));
    loom_prof_roofline(r, &s, &rf);
    assert_false(rf.have_counts);
    assert_non_null(strstr(rf.why, "batch 8"));
    assert_non_null(strstr(rf.why, "batch=16"));

    /* Without an estimate, the workload's own LOOM_META counts. */
    memset(&r->roof, 0, sizeof r->roof);
    json_object_set_new(r->meta, "flops_per_step", json_string("1e9"));
    json_object_set_new(r->meta, "bytes_per_step", json_string("1e8"));
    loom_prof_roofline(r, &s, &rf);
    assert_true(rf.have_counts);
    assert_false(rf.have_device);
    assert_double_equal(rf.intensity, 10, 1e-12);
    json_object_set_new(r->meta, "bytes_per_step", json_string("many"));
    loom_prof_roofline(r, &s, &rf);
    assert_false(rf.have_counts);
    assert_non_null(strstr(rf.why, "positive numbers"));
    unlink(dev);
    rmdir(dir);
    loom_prof_run_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_warmup),          cmocka_unit_test(test_ab),
        cmocka_unit_test(test_summary),         cmocka_unit_test(test_write_record),
        cmocka_unit_test(test_kernels_summary), cmocka_unit_test(test_ab_runs),
        cmocka_unit_test(test_roofline),        cmocka_unit_test(test_gpu_busy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
