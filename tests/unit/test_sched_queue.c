/* Queue order policies: fifo, sjf, priority, tiresias (thresholds and the
 * starvation guard), fairshare (by user and by account), tiresias+fairshare
 * and drf, on factors and shares given by hand (the runtime computes them:
 * unit.fairshare, unit.runtime_share). */
#include <stdio.h>

#include "test_util.h"

#include "loom/sched.h"

static void order(const char *name, loom_sched_queue_cfg_t *cfg, loom_sched_qjob_t *jobs, size_t n,
                  double now, uint64_t *ids)
{
    loom_sched_qjob_t *ptr[16];
    for (size_t i = 0; i < n; i++)
        ptr[i] = &jobs[i];
    if (name)
        assert_int_equal(loom_sched_queue_cfg_parse(name, cfg, NULL), 0);
    loom_sched_queue_order(cfg, ptr, n, now);
    for (size_t i = 0; i < n; i++)
        ids[i] = ptr[i]->id;
}

static void test_fifo_sjf_priority(void **state)
{
    (void)state;
    loom_sched_qjob_t j[4] = {
        {.id = 1, .submit_s = 30, .priority = 0, .estimate_s = 0, .time_limit_s = 600},
        {.id = 2, .submit_s = 10, .priority = 5, .estimate_s = 900},
        {.id = 3, .submit_s = 20, .priority = 5, .estimate_s = 60},
        {.id = 4, .submit_s = 10, .priority = -1},
    };
    loom_sched_queue_cfg_t cfg;
    uint64_t ids[4];
    order("fifo", &cfg, j, 4, 100, ids);
    assert_int_equal(ids[0], 2); /* submit 10, id 2 before id 4 */
    assert_int_equal(ids[1], 4);
    assert_int_equal(ids[2], 3);
    assert_int_equal(ids[3], 1);
    order("sjf", &cfg, j, 4, 100, ids); /* 60, 600 (limit), 900, unknown */
    assert_int_equal(ids[0], 3);
    assert_int_equal(ids[1], 1);
    assert_int_equal(ids[2], 2);
    assert_int_equal(ids[3], 4);
    order("priority", &cfg, j, 4, 100, ids); /* 5 (t10), 5 (t20), 0, -1 */
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 3);
    assert_int_equal(ids[2], 1);
    assert_int_equal(ids[3], 4);
    loom_err_t err;
    assert_int_equal(loom_sched_queue_cfg_parse("lifo", &cfg, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "tiresias"));
}

static void test_tiresias_levels(void **state)
{
    (void)state;
    loom_sched_queue_cfg_t cfg;
    assert_int_equal(loom_sched_queue_cfg_parse("tiresias", &cfg, NULL), 0);
    assert_int_equal(cfg.k, 2);
    cfg.k = 3;
    cfg.thresholds[0] = 100;
    cfg.thresholds[1] = 1000;
    cfg.starve_factor = 0;
    /* attained GPU-seconds 0, 50, 100, 500, 2000 -> queues 0, 0, 1, 1, 2 */
    loom_sched_qjob_t j[5] = {
        {.id = 1, .submit_s = 5, .attained_gpu_s = 2000},
        {.id = 2, .submit_s = 4, .attained_gpu_s = 500},
        {.id = 3, .submit_s = 3, .attained_gpu_s = 100},
        {.id = 4, .submit_s = 2, .attained_gpu_s = 50},
        {.id = 5, .submit_s = 1, .attained_gpu_s = 0},
    };
    uint64_t ids[5];
    order(NULL, &cfg, j, 5, 10, ids);
    uint64_t want[5] = {5, 4, 3, 2, 1}; /* by queue, FIFO within one */
    for (int i = 0; i < 5; i++)
        assert_int_equal(ids[i], want[i]);
    assert_int_equal(j[0].level, 2);
    assert_int_equal(j[1].level, 1);
    assert_int_equal(j[2].level, 1);
    assert_int_equal(j[4].level, 0);
    /* a job in queue 1 submitted earlier still comes after queue 0 */
    j[2].submit_s = 0;
    order(NULL, &cfg, j, 5, 10, ids);
    assert_int_equal(ids[0], 5);
    assert_int_equal(ids[2], 3);
}

/* tiresias[:OPTS]: K - 1 thresholds and the starvation knob; bad forms
 * are errors naming the text. */
static void test_tiresias_options(void **state)
{
    (void)state;
    loom_sched_queue_cfg_t cfg;
    loom_err_t err;
    assert_int_equal(
        loom_sched_queue_cfg_parse("tiresias:thresholds=100/1000/1e4,knob=0.5", &cfg, &err),
        LOOM_OK);
    assert_int_equal(cfg.k, 4);
    assert_true(cfg.thresholds[0] == 100 && cfg.thresholds[1] == 1000 && cfg.thresholds[2] == 1e4);
    assert_true(cfg.starve_factor == 0.5);
    assert_int_equal(loom_sched_queue_cfg_parse("tiresias:knob=0", &cfg, &err), LOOM_OK);
    assert_int_equal(cfg.k, 2);
    assert_true(cfg.thresholds[0] == 3200 && cfg.starve_factor == 0);
    static const char *bad[] = {"tiresias:",
                                "tiresias:thresholds=",
                                "tiresias:thresholds=100/50",
                                "tiresias:knob=-1",
                                "tiresias:thresholds=100/",
                                "tiresias:thresholds=0",
                                "tiresias:knob=2,",
                                "tiresias:thresholds=1/2/3/4/5/6/7/8",
                                "tiresias:what=1",
                                "tiresiasx",
                                "tiresias:knob=nan"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        assert_int_equal(loom_sched_queue_cfg_parse(bad[k], &cfg, &err), LOOM_EINVAL);
        assert_non_null(strstr(err.msg, bad[k]));
    }
}

static void test_tiresias_starvation(void **state)
{
    (void)state;
    loom_sched_queue_cfg_t cfg;
    assert_int_equal(loom_sched_queue_cfg_parse("tiresias", &cfg, NULL), 0);
    /* K=2, threshold 3200 GPU-s, promote after waiting 2 x the last run */
    loom_sched_qjob_t old = {
        .id = 1, .submit_s = 0, .attained_gpu_s = 8000, .wait_since_s = 1000, .last_run_s = 100};
    loom_sched_qjob_t fresh = {.id = 2, .submit_s = 900, .attained_gpu_s = 0, .wait_since_s = 900};
    assert_int_equal(loom_sched_tiresias_level(&cfg, &old, 1150), 1); /* waited 150 < 200 */
    assert_int_equal(loom_sched_tiresias_level(&cfg, &old, 1200), 0); /* waited 200: promoted */
    loom_sched_qjob_t j[2] = {old, fresh};
    uint64_t ids[2];
    order(NULL, &cfg, j, 2, 1100, ids);
    assert_int_equal(ids[0], 2);
    order(NULL, &cfg, j, 2, 1250, ids); /* promoted, and submitted earlier */
    assert_int_equal(ids[0], 1);
    /* the absolute limit promotes a job that never ran, too */
    cfg.starve_limit_s = 500;
    old.last_run_s = 0;
    assert_int_equal(loom_sched_tiresias_level(&cfg, &old, 1499), 1);
    assert_int_equal(loom_sched_tiresias_level(&cfg, &old, 1500), 0);
}

/* A constructed case where tiresias+fairshare orders differently from
 * either alone. User A has used much (factor 0.25), user B little (0.9).
 * a1 (A, never ran, submitted at 1), b1 (B, 5000 GPU-s attained: Tiresias
 * queue 1, submitted at 0), b2 (B, never ran, submitted at 2).
 *   tiresias:            a1 b2 | b1   (queue 0 first, FIFO within)
 *   fairshare:           b1 b2 a1     (B's factor first, FIFO within B)
 *   tiresias+fairshare:  b2 a1 | b1   (queue 0 first, B before A within) */
static void test_tiresias_fairshare(void **state)
{
    (void)state;
    enum { A1 = 1, B1, B2 };
    loom_sched_qjob_t j[3] = {
        {.id = A1, .submit_s = 1, .fairshare = 0.25, .wait_since_s = 1},
        {.id = B1, .submit_s = 0, .fairshare = 0.9, .attained_gpu_s = 5000, .wait_since_s = 99},
        {.id = B2, .submit_s = 2, .fairshare = 0.9, .wait_since_s = 2},
    };
    loom_sched_queue_cfg_t cfg;
    uint64_t ids[3];
    order("tiresias", &cfg, j, 3, 100, ids);
    assert_int_equal(ids[0], A1);
    assert_int_equal(ids[1], B2);
    assert_int_equal(ids[2], B1);
    order("fairshare", &cfg, j, 3, 100, ids);
    assert_int_equal(ids[0], B1);
    assert_int_equal(ids[1], B2);
    assert_int_equal(ids[2], A1);
    order("tiresias+fairshare", &cfg, j, 3, 100, ids);
    assert_int_equal(ids[0], B2);
    assert_int_equal(ids[1], A1);
    assert_int_equal(ids[2], B1);
    assert_int_equal(j[1].level, 1);
    /* The starvation guard still promotes: b1 waited 300 s after a 100 s run. */
    j[1].last_run_s = 100;
    j[1].wait_since_s = 0;
    order("tiresias+fairshare", &cfg, j, 3, 300, ids);
    assert_int_equal(ids[0], B1);
    assert_int_equal(ids[1], B2);
    assert_int_equal(ids[2], A1);
}

/* By account: the account's factor first, then the user's within it. */
static void test_fairshare_by_account(void **state)
{
    (void)state;
    loom_sched_qjob_t j[3] = {
        {.id = 1, .submit_s = 0, .fairshare = 0.5, .fairshare_sub = 0.2},
        {.id = 2, .submit_s = 1, .fairshare = 0.5, .fairshare_sub = 0.8},
        {.id = 3, .submit_s = 2, .fairshare = 0.7, .fairshare_sub = 0.1},
    };
    loom_sched_queue_cfg_t cfg;
    uint64_t ids[3];
    order("fairshare:by=account", &cfg, j, 3, 0, ids);
    assert_int_equal(ids[0], 3);
    assert_int_equal(ids[1], 2);
    assert_int_equal(ids[2], 1);
}

/* drf: smaller dominant share first, ties by submission. */
static void test_drf_order(void **state)
{
    (void)state;
    loom_sched_qjob_t j[3] = {
        {.id = 1, .submit_s = 0, .dominant = 0.6},
        {.id = 2, .submit_s = 1, .dominant = 0.1},
        {.id = 3, .submit_s = 2, .dominant = 0.1},
    };
    loom_sched_queue_cfg_t cfg;
    uint64_t ids[3];
    order("drf", &cfg, j, 3, 0, ids);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 3);
    assert_int_equal(ids[2], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_sjf_priority),  cmocka_unit_test(test_tiresias_levels),
        cmocka_unit_test(test_tiresias_options),   cmocka_unit_test(test_tiresias_starvation),
        cmocka_unit_test(test_tiresias_fairshare), cmocka_unit_test(test_fairshare_by_account),
        cmocka_unit_test(test_drf_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
