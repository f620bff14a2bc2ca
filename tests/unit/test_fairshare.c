/* The fairshare queue policy (Slurm's classic fair-share factor) through the
 * runtime: two users with equal shares on one GPU, the first submitting
 * four jobs for every one of the second's, both with a backlog: the GPU
 * time they get is within 5% of 1:1 (fifo, for contrast, gives about 4:1).
 * Also: unequal shares split in proportion, the half-life parses, and a
 * user's usage decays (after a long idle time the order is FIFO again). */
#include <math.h>

#include "loom/runtime.h"
#include "test_util.h"

typedef struct sim {
    double now;
    uint64_t running; /* the job on the GPU, 0: none */
    double ends_at;
    double gpu_s[3]; /* per user */
    uint32_t user_of[2048];
} sim_t;

static int apply(void *ctx, const loom_runtime_action_t *a)
{
    sim_t *s = ctx;
    if (a->kind == LOOM_RUNTIME_START) {
        assert_int_equal(s->running, 0);
        s->running = a->id;
        s->ends_at = s->now + 10;
    }
    return LOOM_OK;
}

static loom_runtime_t *make(const char *queue)
{
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    loom_err_t err;
    assert_int_equal(loom_sched_cluster_add_node(&c, "n", 64000, 1 << 20, 1, "g", 0, NULL, &err),
                     LOOM_OK);
    loom_runtime_config_t cfg = {.queue = queue};
    loom_runtime_t *rt = NULL;
    if (loom_runtime_new(&c, &cfg, &rt, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    loom_sched_cluster_free(&c);
    return rt;
}

/* 1000 s of arrivals, every 10 s: four jobs of user 1, one of user 2 (jobs
 * of 10 s on the one GPU: both build a backlog at once), then the GPU time
 * each user got over [200 s, 1000 s). */
static void run(const char *queue, double w1, double w2, double *share1)
{
    loom_runtime_t *rt = make(queue);
    loom_runtime_set_share(rt, 1, w1);
    loom_runtime_set_share(rt, 2, w2);
    sim_t s = {0};
    uint64_t next_id = 1;
    loom_err_t err;
    for (int t = 0; t < 1000; t++) {
        s.now = t;
        if (s.running && s.now >= s.ends_at) {
            loom_runtime_remove(rt, s.running, s.now);
            s.running = 0;
        }
        for (int k = 0; t % 10 == 0 && k < 5; k++) {
            uint32_t user = k < 4 ? 1 : 2;
            loom_runtime_job_t j = {.id = next_id,
                                    .submit_s = s.now,
                                    .user = user,
                                    .req = {.cpu_milli = 1000, .num_gpus = 1, .gpu_milli = 1000}};
            s.user_of[next_id++] = user;
            assert_int_equal(loom_runtime_submit(rt, &j, &err), LOOM_OK);
        }
        loom_runtime_step(rt, s.now, apply, &s);
        if (t >= 200 && s.running)
            s.gpu_s[s.user_of[s.running]] += 1;
    }
    *share1 = s.gpu_s[1] / (s.gpu_s[1] + s.gpu_s[2]);
    loom_runtime_free(rt);
}

static void test_equal_shares(void **state)
{
    (void)state;
    double fair, fifo;
    run("fairshare:5m", 1, 1, &fair);
    run("fifo", 1, 1, &fifo);
    /* 1:1 within 5%: user 1's part of the GPU time in [0.475, 0.525] */
    if (fabs(fair - 0.5) > 0.025)
        fail_msg("fairshare gave user 1 %.3f of the GPU time", fair);
    if (fifo < 0.7)
        fail_msg("fifo gave user 1 only %.3f (expected about 0.8)", fifo);
    print_message("user 1 of the GPU time: fairshare %.3f, fifo %.3f\n", fair, fifo);
}

static void test_weighted_shares(void **state)
{
    (void)state;
    double fair;
    run("fairshare:5m", 3, 1, &fair); /* user 1 has 3/4 of the shares */
    if (fabs(fair - 0.75) > 0.05)
        fail_msg("fairshare 3:1 gave user 1 %.3f of the GPU time", fair);
}

static void test_parse(void **state)
{
    (void)state;
    loom_sched_queue_cfg_t q;
    loom_err_t err;
    assert_int_equal(loom_sched_queue_cfg_parse("fairshare", &q, &err), LOOM_OK);
    assert_int_equal(q.kind, LOOM_SCHED_QUEUE_FAIRSHARE);
    assert_true(fabs(q.fairshare_half_life_s - 7 * 86400.0) < 1e-6);
    assert_int_equal(loom_sched_queue_cfg_parse("fairshare:90m", &q, &err), LOOM_OK);
    assert_true(fabs(q.fairshare_half_life_s - 5400.0) < 1e-6);
    assert_int_equal(loom_sched_queue_cfg_parse("fairshare:0s", &q, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "fairshare:HALF_LIFE"));
    assert_int_equal(loom_sched_queue_cfg_parse("fairshares", &q, &err), LOOM_EINVAL);
}

/* User 1 used the GPU for 100 s; user 2 none. Right after, user 2's job
 * (submitted later) goes first; many half-lives later the usage has
 * decayed and submission order rules again. */
static void test_decay(void **state)
{
    (void)state;
    double idle[2] = {0, 100000};
    for (int c = 0; c < 2; c++) {
        loom_runtime_t *rt = make("fairshare:10s");
        sim_t s = {0};
        loom_err_t err;
        loom_runtime_job_t j = {
            .id = 1, .user = 1, .req = {.cpu_milli = 1000, .num_gpus = 1, .gpu_milli = 1000}};
        assert_int_equal(loom_runtime_submit(rt, &j, &err), LOOM_OK);
        loom_runtime_step(rt, 0, apply, &s);
        loom_runtime_step(rt, 100, apply, &s);
        loom_runtime_remove(rt, 1, 100);
        s.running = 0;
        loom_runtime_step(rt, 100 + idle[c], apply, &s); /* usage decays */
        j.id = 2;
        j.submit_s = 101 + idle[c];
        assert_int_equal(loom_runtime_submit(rt, &j, &err), LOOM_OK);
        j.id = 3;
        j.user = 2;
        j.submit_s = 102 + idle[c];
        assert_int_equal(loom_runtime_submit(rt, &j, &err), LOOM_OK);
        loom_runtime_step(rt, 103 + idle[c], apply, &s);
        assert_int_equal(s.running, c == 0 ? 3 : 2);
        loom_runtime_free(rt);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_equal_shares),
        cmocka_unit_test(test_weighted_shares),
        cmocka_unit_test(test_decay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
