/* The fairshare queue policy (Slurm's classic fair-share factor) through the
 * runtime: two users with equal shares on one GPU, the first submitting
 * four jobs for every one of the second's, both with a backlog: the GPU
 * time they get is within 5% of 1:1 (fifo, for contrast, gives about 4:1).
 * Also: unequal shares split in proportion, the half-life parses, and a
 * user's usage decays (after a long idle time the order is FIFO again).
 * By account (Fair Tree's rule over classic factors): an account alone
 * with one user gets half of the GPU against an account of four users.
 * The spellings of the policies parse, bad ones are named in the error. */
#include <math.h>

#include "loom/runtime.h"
#include "test_util.h"

typedef struct sim {
    double now;
    uint64_t running; /* the job on the GPU, 0: none */
    double ends_at;
    double gpu_s[3]; /* per user */
    uint32_t user_of[4096];
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
    assert_non_null(strstr(err.msg, "half-life"));
    assert_int_equal(loom_sched_queue_cfg_parse("fairshares", &q, &err), LOOM_EINVAL);
    assert_int_equal(q.share_by, LOOM_SCHED_SHARE_BY_USER);
    assert_int_equal(loom_sched_queue_cfg_parse("fairshare:by=account", &q, &err), LOOM_OK);
    assert_int_equal(q.share_by, LOOM_SCHED_SHARE_BY_ACCOUNT);
    assert_true(fabs(q.fairshare_half_life_s - 7 * 86400.0) < 1e-6);
    assert_int_equal(loom_sched_queue_cfg_parse("fairshare:1h,by=account", &q, &err), LOOM_OK);
    assert_true(fabs(q.fairshare_half_life_s - 3600.0) < 1e-6);
    assert_int_equal(q.share_by, LOOM_SCHED_SHARE_BY_ACCOUNT);
    assert_int_equal(loom_sched_queue_cfg_parse("fairshare:by=user,half-life=2m", &q, &err),
                     LOOM_OK);
    assert_true(fabs(q.fairshare_half_life_s - 120.0) < 1e-6);
    assert_int_equal(q.share_by, LOOM_SCHED_SHARE_BY_USER);
    assert_int_equal(loom_sched_queue_cfg_parse("tiresias+fairshare:10m", &q, &err), LOOM_OK);
    assert_int_equal(q.kind, LOOM_SCHED_QUEUE_TIRESIAS_FAIRSHARE);
    assert_int_equal(q.k, 2);
    assert_true(fabs(q.fairshare_half_life_s - 600.0) < 1e-6);
    assert_true(loom_sched_queue_fairshare(&q));
    assert_int_equal(loom_sched_queue_cfg_parse("drf", &q, &err), LOOM_OK);
    assert_int_equal(q.kind, LOOM_SCHED_QUEUE_DRF);
    assert_false(loom_sched_queue_fairshare(&q));
    const char *bad[] = {
        "fairshare:",  "fairshare:by=group",   "fairshare:1h,",       "fairshare:,1h",
        "fairshare1h", "tiresias+fairshare:x", "tiresias+fairshares", "drf:1h"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(loom_sched_queue_cfg_parse(bad[i], &q, &err), LOOM_EINVAL);
        if (!strstr(err.msg, bad[i]))
            fail_msg("%s: the error does not name the input: %s", bad[i], err.msg);
    }
}

/* Fair share by account: on one GPU, account 1 has user 1 alone, account 2
 * users 2..5; every user submits a 10 s job every 10 s (all have a
 * backlog). By user each user gets 1/5 of the GPU time; by account
 * (equal account shares) account 1 gets half and each user of account 2
 * an eighth. Returns user u's part in part[u]. */
static void run_accounts(const char *queue, double part[6])
{
    loom_runtime_t *rt = make(queue);
    sim_t s = {0};
    double gpu_s[6] = {0}, total = 0;
    uint64_t next_id = 1;
    loom_err_t err;
    for (int t = 0; t < 2000; t++) {
        s.now = t;
        if (s.running && s.now >= s.ends_at) {
            loom_runtime_remove(rt, s.running, s.now);
            s.running = 0;
        }
        for (uint32_t user = 1; t % 10 == 0 && user <= 5; user++) {
            loom_runtime_job_t j = {.id = next_id,
                                    .submit_s = s.now,
                                    .user = user,
                                    .account = user == 1 ? 1 : 2,
                                    .req = {.cpu_milli = 1000, .num_gpus = 1, .gpu_milli = 1000}};
            s.user_of[next_id++] = user;
            assert_int_equal(loom_runtime_submit(rt, &j, &err), LOOM_OK);
        }
        loom_runtime_step(rt, s.now, apply, &s);
        if (t >= 400 && s.running) {
            gpu_s[s.user_of[s.running]] += 1;
            total += 1;
        }
    }
    for (int u = 1; u <= 5; u++)
        part[u] = gpu_s[u] / total;
    loom_runtime_free(rt);
}

static void test_by_account(void **state)
{
    (void)state;
    double by_user[6], by_acct[6];
    run_accounts("fairshare:5m", by_user);
    run_accounts("fairshare:5m,by=account", by_acct);
    for (int u = 1; u <= 5; u++)
        if (fabs(by_user[u] - 0.2) > 0.02)
            fail_msg("by user: user %d got %.3f of the GPU time (expected 0.2)", u, by_user[u]);
    if (fabs(by_acct[1] - 0.5) > 0.025)
        fail_msg("by account: account 1 got %.3f of the GPU time (expected 0.5)", by_acct[1]);
    for (int u = 2; u <= 5; u++)
        if (fabs(by_acct[u] - 0.125) > 0.02)
            fail_msg("by account: user %d got %.3f (expected 0.125)", u, by_acct[u]);
    print_message("user 1 (alone in its account): by user %.3f, by account %.3f\n", by_user[1],
                  by_acct[1]);
}

/* Account shares 3:1 (accounts 1 and 2, one user each) split 3:1. */
static void test_account_weights(void **state)
{
    (void)state;
    loom_runtime_t *rt = make("fairshare:5m,by=account");
    loom_runtime_set_account_share(rt, 1, 3);
    assert_true(fabs(loom_runtime_account_share(rt, 1) - 3) < 1e-12);
    assert_true(fabs(loom_runtime_account_share(rt, 2) - 1) < 1e-12);
    sim_t s = {0};
    double gpu_s[3] = {0};
    uint64_t next_id = 1;
    loom_err_t err;
    for (int t = 0; t < 2000; t++) {
        s.now = t;
        if (s.running && s.now >= s.ends_at) {
            loom_runtime_remove(rt, s.running, s.now);
            s.running = 0;
        }
        for (uint32_t user = 1; t % 10 == 0 && user <= 2; user++) {
            loom_runtime_job_t j = {.id = next_id,
                                    .submit_s = s.now,
                                    .user = user,
                                    .account = user,
                                    .req = {.cpu_milli = 1000, .num_gpus = 1, .gpu_milli = 1000}};
            s.user_of[next_id++] = user;
            assert_int_equal(loom_runtime_submit(rt, &j, &err), LOOM_OK);
        }
        loom_runtime_step(rt, s.now, apply, &s);
        if (t >= 400 && s.running)
            gpu_s[s.user_of[s.running]] += 1;
    }
    double part = gpu_s[1] / (gpu_s[1] + gpu_s[2]);
    if (fabs(part - 0.75) > 0.05)
        fail_msg("account shares 3:1 gave account 1 %.3f of the GPU time", part);
    loom_runtime_free(rt);
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
        cmocka_unit_test(test_parse),           cmocka_unit_test(test_equal_shares),
        cmocka_unit_test(test_weighted_shares), cmocka_unit_test(test_decay),
        cmocka_unit_test(test_by_account),      cmocka_unit_test(test_account_weights),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
