/* The overhead measurement's statistics (src/prof/ab.c): the median's
 * distribution-free interval, the paired log-ratio estimates, the rule for
 * disturbed pairs and the within-run (--toggle) block pairs, on inputs
 * whose answers are known by hand. */
#include <stdio.h>

#include "test_util.h"

#include <math.h>
#include <unistd.h>

#include "loom/prof.h"

#define assert_double_equal(a, b, eps)                                                             \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (eps)))                                                             \
            fail_msg("%s = %.12g, expected %.12g (within %g)", #a, a_, b_, (double)(eps));         \
    } while (0)

static void test_median_ci(void **state)
{
    (void)state;
    double x[17];
    for (int i = 0; i < 17; i++)
        x[i] = i + 1;
    double lo, hi, conf;
    /* n = 10: P(B <= 1) = 11/1024 <= .025 < P(B <= 2) = 56/1024, so k = 2:
     * [x(2), x(9)], coverage 1 - 22/1024. */
    loom_prof_median_ci(x, 10, &lo, &hi, &conf);
    assert_double_equal(lo, 2, 0);
    assert_double_equal(hi, 9, 0);
    assert_double_equal(conf, 1 - 22.0 / 1024, 1e-12);
    /* n = 6: P(B = 0) = 1/64: [x(1), x(6)], coverage 62/64. */
    loom_prof_median_ci(x, 6, &lo, &hi, &conf);
    assert_double_equal(lo, 1, 0);
    assert_double_equal(hi, 6, 0);
    assert_double_equal(conf, 62.0 / 64, 1e-12);
    /* n = 17: P(B <= 4) = (1 + 17 + 136 + 680 + 2380) / 2^17 = 3214/131072
     * = .0245; P(B <= 5) adds 6188: .0717. k = 5: [x(5), x(13)]. */
    loom_prof_median_ci(x, 17, &lo, &hi, &conf);
    assert_double_equal(lo, 5, 0);
    assert_double_equal(hi, 13, 0);
    assert_double_equal(conf, 1 - 2 * 3214.0 / 131072, 1e-12);
    /* n = 5: P(B = 0) = 1/32 > .025: no interval. */
    loom_prof_median_ci(x, 5, &lo, &hi, &conf);
    assert_true(isinf(lo) && lo < 0 && isinf(hi) && hi > 0);
    assert_double_equal(conf, 0, 0);
    loom_prof_median_ci(x, 0, &lo, &hi, &conf);
    assert_double_equal(conf, 0, 0);
    /* Large n: k near n/2 - 1.96 sqrt(n)/2; for n = 1000 the normal
     * approximation gives x(470) .. x(531); the exact k is 469 or 470. */
    double *y = malloc(1000 * sizeof *y);
    for (int i = 0; i < 1000; i++)
        y[i] = i + 1;
    loom_prof_median_ci(y, 1000, &lo, &hi, &conf);
    assert_true(lo >= 468 && lo <= 471);
    assert_double_equal(hi, 1001 - lo, 0);
    assert_true(conf >= 0.95 && conf < 0.96);
    free(y);
}

static void test_log_ratio(void **state)
{
    (void)state;
    /* Ratios 1.01, 1.03, 1.01, 1.03: the bootstrap of the mean log ratio
     * over 4 draws from {log 1.01, log 1.03} is all log 1.01 with
     * probability 1/16 > 2.5%, so its quantiles are the two values; the
     * median of the 4 ratios is the geometric mean of the middle two; 4
     * pairs are too few for the sign test's interval. */
    double base[] = {1.0, 1.0, 1.0, 1.0}, prof[] = {1.01, 1.03, 1.01, 1.03};
    loom_prof_ab_est_t e;
    loom_prof_ab_estimate(base, prof, 4, 7, &e);
    assert_double_equal(e.ratio_boot_low, 1.01, 1e-12);
    assert_double_equal(e.ratio_boot_high, 1.03, 1e-12);
    assert_double_equal(e.ratio_median, sqrt(1.01 * 1.03), 1e-12);
    assert_double_equal(e.ratio_median_conf, 0, 0);
    assert_true(isnan(e.ratio_median_low) && isnan(e.ratio_median_high));
    /* Six pairs, ratios 1.05 .. 0.99 in any order: the median is between
     * 1.01 and 1.02 (geometric), the interval the extremes, coverage
     * 62/64. A log-ratio scale makes a halving and a doubling cancel. */
    double b6[] = {2, 2, 2, 2, 2, 2}, p6[] = {2.1, 1.98, 2.04, 2.0, 2.06, 2.02};
    loom_prof_ab_estimate(b6, p6, 6, 7, &e);
    assert_int_equal(e.n, 6);
    assert_double_equal(e.ratio_median, sqrt(1.01 * 1.02), 1e-12);
    assert_double_equal(e.ratio_median_low, 0.99, 1e-12);
    assert_double_equal(e.ratio_median_high, 1.05, 1e-12);
    assert_double_equal(e.ratio_median_conf, 62.0 / 64, 1e-12);
    double b2[] = {1, 2}, p2[] = {2, 1};
    loom_prof_ab_estimate(b2, p2, 2, 7, &e);
    assert_double_equal(e.ratio, 1, 1e-12);
    assert_double_equal(e.overhead, 0.25, 1e-12); /* (+100% - 50%) / 2 */
}

static loom_prof_ab_run_t env_run(int ncpus, double others, double steal)
{
    loom_prof_ab_run_t r;
    memset(&r, 0, sizeof r);
    r.ncpus = ncpus;
    r.others_cores = others;
    r.steal_frac = steal;
    return r;
}

static void test_quiet_rule(void **state)
{
    (void)state;
    loom_prof_ab_run_t a = env_run(1, 0.50, 0), b = env_run(1, 0.55, 0.01);
    assert_true(loom_prof_ab_pair_quiet(&a, &b)); /* level <= .75, differ by .05 */
    b = env_run(1, 0.65, 0);
    assert_false(loom_prof_ab_pair_quiet(&a, &b)); /* differ by .15 > .10 */
    a = env_run(1, 0.80, 0), b = env_run(1, 0.80, 0);
    assert_false(loom_prof_ab_pair_quiet(&a, &b)); /* level .80 > .75 */
    a = env_run(1, 0.1, 0.03), b = env_run(1, 0.1, 0);
    assert_false(loom_prof_ab_pair_quiet(&a, &b)); /* steal 3% > 2% */
    a = env_run(2, 1.4, 0), b = env_run(2, 1.3, 0);
    assert_true(loom_prof_ab_pair_quiet(&a, &b)); /* per CPU .70 and .65 */
    a = env_run(2, -1, -1);
    assert_false(loom_prof_ab_pair_quiet(&a, &b)); /* unknown */
    a = env_run(0, 0, 0);
    assert_false(loom_prof_ab_pair_quiet(&a, &b));

    /* Four pairs in ABBA order; pairs 2 and 4 disturbed (one arm's others
     * .5 cores above the other's). All pairs: ratios 1.02, 1.5, 1.02, 1.5;
     * quiet pairs: 1.02 twice. */
    loom_prof_ab_run_t runs[8];
    for (size_t i = 0; i < 8; i++) {
        size_t pair = i / 2;
        bool first = i % 2 == 0, prof = first == (pair % 2 == 0);
        bool noisy = pair % 2 == 1;
        runs[i] = env_run(1, noisy && prof ? 0.6 : 0.1, 0);
        runs[i].pair = pair;
        runs[i].first = first;
        runs[i].profiled = prof;
        for (int m = 0; m < LOOM_PROF_AB_NMETRICS; m++)
            runs[i].value[m] = prof ? (noisy ? 1.5 : 1.02) : 1.0;
        runs[i].wall_s = 1;
    }
    loom_prof_ab_t ab = {.pairs = 4, .runs = runs};
    loom_prof_ab_stats(&ab);
    assert_int_equal(ab.quiet_pairs, 2);
    assert_int_equal(ab.est[LOOM_PROF_AB_WALL_P50].n, 4);
    assert_double_equal(ab.est[LOOM_PROF_AB_WALL_P50].ratio, sqrt(1.02 * 1.5), 1e-12);
    assert_int_equal(ab.est_quiet[LOOM_PROF_AB_WALL_P50].n, 2);
    assert_double_equal(ab.est_quiet[LOOM_PROF_AB_WALL_P50].ratio, 1.02, 1e-12);
    assert_double_equal(ab.est_quiet[LOOM_PROF_AB_WALL_P50].ratio_high, 1.02, 1e-12);
}

/* A --toggle 3 run built by hand: 12 steps back to back from t = 0, steps
 * with the sampler on take 110 ms and off 100 ms (CPU half of that); the
 * blocks are on, off, off, on, and each block's state takes effect 1 ms
 * after its first step began (the marker of the step before arrives just
 * after that step ended), so the first step of blocks 1..3 is not clean. */
static loom_prof_run_t *toggle_run(void)
{
    loom_prof_run_t *r = calloc(1, sizeof *r);
    r->toggle_steps = 3;
    r->nsteps = 12;
    r->steps = calloc(12, sizeof *r->steps);
    r->toggles = calloc(4, sizeof *r->toggles);
    r->ntoggles = 4;
    bool on[4] = {true, false, false, true};
    int64_t t = 0;
    for (int i = 0; i < 12; i++) {
        int b = i / 3;
        if (i % 3 == 0)
            r->toggles[b] = (loom_prof_toggle_t){b == 0 ? 0 : t + LOOM_NS_PER_MS, on[b]};
        int64_t d = (on[b] ? 110 : 100) * LOOM_NS_PER_MS;
        r->steps[i] = LOOM_PROF_STEP_INIT(i, t, t + d);
        r->steps[i].cpu_ns = d / 2;
        t += d;
    }
    return r;
}

static void test_blocks(void **state)
{
    (void)state;
    loom_prof_run_t *r = toggle_run();
    loom_prof_ab_block_t *bl = NULL;
    size_t n = 0;
    assert_int_equal(loom_prof_ab_blocks(r, 0, 4, &bl, &n), LOOM_OK);
    assert_int_equal(n, 2);
    assert_int_equal(bl[0].run, 4);
    assert_int_equal(bl[0].index, 0);
    assert_true(bl[0].on_first);
    assert_int_equal(bl[0].n_on, 3);  /* steps 0, 1, 2 */
    assert_int_equal(bl[0].n_off, 2); /* steps 4, 5 */
    assert_int_equal(bl[1].index, 2);
    assert_false(bl[1].on_first);
    assert_int_equal(bl[1].n_on, 2);
    assert_int_equal(bl[1].n_off, 2);
    assert_double_equal(bl[0].on[LOOM_PROF_AB_WALL_P50], 0.110, 1e-12);
    assert_double_equal(bl[0].off[LOOM_PROF_AB_WALL_MEAN], 0.100, 1e-12);
    assert_double_equal(bl[1].on[LOOM_PROF_AB_CPU_MIN], 0.055, 1e-12);

    /* The within-run estimate over those two block pairs: 10% on all
     * six numbers. */
    loom_prof_ab_run_t runs[1];
    memset(runs, 0, sizeof runs);
    runs[0].profiled = true;
    runs[0].wall_s = 1;
    loom_prof_ab_t ab = {.pairs = 1, .runs = runs, .toggle_steps = 3, .blocks = bl, .nblocks = n};
    loom_prof_ab_stats(&ab);
    for (int m = 0; m < LOOM_PROF_AB_NMETRICS; m++) {
        assert_int_equal(ab.est[m].n, 2);
        assert_double_equal(ab.est[m].ratio, 1.1, 1e-12);
        assert_double_equal(ab.est[m].overhead, 0.1, 1e-12);
    }

    /* Warm-up through step 4: block 1 keeps only step 5, too few; the
     * first block pair goes. */
    free(bl);
    bl = NULL;
    n = 0;
    assert_int_equal(loom_prof_ab_blocks(r, 5, 0, &bl, &n), LOOM_OK);
    assert_int_equal(n, 1);
    assert_int_equal(bl[0].index, 2);
    free(bl);
    /* A run cut short inside block 3 (one step of it): no second pair. */
    r->nsteps = 10;
    bl = NULL;
    n = 0;
    assert_int_equal(loom_prof_ab_blocks(r, 0, 0, &bl, &n), LOOM_OK);
    assert_int_equal(n, 1);
    free(bl);
    loom_prof_run_free(r);
}

/* The files of a within-run measurement. */
static void test_write_blocks(void **state)
{
    (void)state;
    loom_prof_run_t *r = toggle_run();
    loom_prof_ab_t ab;
    memset(&ab, 0, sizeof ab);
    ab.pairs = 1;
    ab.toggle_steps = 3;
    ab.runs = calloc(1, sizeof *ab.runs);
    ab.runs[0].profiled = true;
    ab.runs[0].first = true;
    ab.runs[0].wall_s = 1.2;
    assert_int_equal(loom_prof_ab_blocks(r, 0, 0, &ab.blocks, &ab.nblocks), LOOM_OK);
    loom_prof_ab_stats(&ab);
    char dir[] = "/tmp/loom-test-prof-abt-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *argv[] = {"work", NULL};
    loom_prof_opts_t o = {.argv = argv, .interval_ns = 10 * LOOM_NS_PER_MS, .toggle_steps = 3};
    loom_err_t err;
    assert_int_equal(loom_prof_ab_write(&ab, &o, dir, &err), LOOM_OK);
    char path[256];
    snprintf(path, sizeof path, "%s/ab.json", dir);
    json_t *j;
    assert_int_equal(loom_json_load_file(path, &j, &err), LOOM_OK);
    assert_string_equal(json_string_value(json_object_get(j, "design")), "within-run");
    assert_int_equal(json_integer_value(json_object_get(j, "block_pairs")), 2);
    json_t *p50 = json_object_get(json_object_get(j, "metrics"), "wall_p50");
    assert_double_equal(json_number_value(json_object_get(p50, "ratio_median")), 1.1, 1e-9);
    json_decref(j);
    unlink(path);
    snprintf(path, sizeof path, "%s/ab_blocks.csv", dir);
    loom_buf_t b = LOOM_BUF_INIT;
    assert_int_equal(loom_buf_read_file(&b, path, &err), LOOM_OK);
    assert_non_null(strstr(b.data, "run,block,first,n_on,n_off,on_wall_mean_s,"));
    assert_non_null(strstr(b.data, "\n1,0,on,3,2,0.110000000,"));
    assert_non_null(strstr(b.data, "\n1,2,off,2,2,"));
    loom_buf_free(&b);
    unlink(path);
    snprintf(path, sizeof path, "%s/ab_runs.csv", dir);
    assert_int_equal(loom_buf_read_file(&b, path, &err), LOOM_OK);
    assert_non_null(strstr(b.data, ",others_cores,steal_frac,run_delay_s,quiet\n1,1,toggle,"));
    loom_buf_free(&b);
    unlink(path);
    rmdir(dir);
    loom_prof_ab_free(&ab);
    loom_prof_run_free(r);
}

static void test_cpustat(void **state)
{
    (void)state;
    loom_prof_cpustat_t a, b;
    int n = loom_prof_cpustat_read(&a);
    assert_true(n >= 1);
    /* Burn a little CPU: this process's CPUs get busier. */
    volatile double x = 0;
    for (int i = 0; i < 20000000; i++)
        x += i;
    assert_true(x > 0);
    assert_int_equal(loom_prof_cpustat_read(&b), n);
    assert_true(b.t_ns > a.t_ns);
    assert_true(b.total >= a.total && b.busy >= a.busy && b.steal >= a.steal);
    assert_true(a.busy <= a.total && a.steal <= a.busy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median_ci),    cmocka_unit_test(test_log_ratio),
        cmocka_unit_test(test_quiet_rule),   cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_write_blocks), cmocka_unit_test(test_cpustat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
