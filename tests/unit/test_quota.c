/* loomd's quotas (src/daemon/quota.c): running limits parsed (gpus in GPUs
 * with up to three decimals, running jobs), refused with the input named,
 * ignored by the submission check, and handed to a runtime with the least
 * of every quota that applies: a user's own beside the default of every
 * user, two quotas of one account, accounts by name. */
#include "test_util.h"

#include "daemon/quota.h"
#include "loom/runtime.h"

/* An account's number (LOOM_OK asserted). */
static uint32_t account_no(loomd_accounts_t *acc, const char *name)
{
    uint32_t id;
    assert_int_equal(loomd_account_id(acc, name, &id), LOOM_OK);
    return id;
}

static void test_parse_running(void **state)
{
    (void)state;
    static loomd_quotas_t qs;
    memset(&qs, 0, sizeof qs);
    loom_err_t err;
    assert_int_equal(loomd_quota_parse("account:vision=gpus=1.5,running=4", &qs, &err), LOOM_OK);
    assert_int_equal(qs.q[0].gpu_milli, 1500);
    assert_int_equal(qs.q[0].running, 4);
    assert_int_equal(qs.q[0].pending, -1);
    assert_int_equal(qs.q[0].time_s, -1);
    assert_int_equal(loomd_quota_parse("*=gpus=2", &qs, &err), LOOM_OK);
    assert_int_equal(qs.q[1].gpu_milli, 2000);
    assert_int_equal(qs.q[1].running, -1);
    assert_int_equal(loomd_quota_parse("user:4242=gpus=0.25,pending=3", &qs, &err), LOOM_OK);
    assert_int_equal(qs.q[2].gpu_milli, 250);
    assert_int_equal(qs.q[2].pending, 3);
    assert_int_equal(loomd_quota_parse("user:4242=gpus=0", &qs, &err), LOOM_OK);
    assert_int_equal(qs.q[3].gpu_milli, 0);
    const char *bad[] = {"*=gpus=1.2345",  "*=gpus=-1",
                         "*=gpus=",        "*=gpus=1.",
                         "*=gpus=.5",      "*=gpus=1e3",
                         "*=gpus=1000001", "*=running=-1",
                         "*=running=x",    "*=gpus=99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(loomd_quota_parse(bad[i], &qs, &err), LOOM_EINVAL);
        assert_non_null(strstr(err.msg, bad[i]));
    }
    assert_int_equal(qs.n, 4);
    /* running limits do not refuse a submission */
    loom_auth_identity_t who = {.uid = 4242};
    snprintf(who.user, sizeof who.user, "x");
    json_t *data = NULL;
    static loomd_quotas_t only;
    memset(&only, 0, sizeof only);
    assert_int_equal(loomd_quota_parse("*=gpus=1,running=1", &only, &err), LOOM_OK);
    assert_int_equal(loomd_quota_check(&only, NULL, &who, "vision", 0, 1, &data, &err), LOOM_OK);
    assert_null(data);
}

static loom_runtime_t *runtime(void)
{
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    assert_int_equal(loom_sched_cluster_add_node(&c, "n", 64000, 65536, 8, "g", 0, NULL, NULL),
                     LOOM_OK);
    loom_runtime_config_t cfg = {0};
    loom_runtime_t *rt;
    loom_err_t err;
    assert_int_equal(loom_runtime_new(&c, &cfg, &rt, &err), LOOM_OK);
    loom_sched_cluster_free(&c);
    return rt;
}

static void test_apply(void **state)
{
    (void)state;
    static loomd_quotas_t qs;
    memset(&qs, 0, sizeof qs);
    loom_err_t err;
    const char *specs[] = {"*=running=3",
                           "user:4242=gpus=2,running=5", /* 5 > the default's 3: 3 holds */
                           "account:vision=gpus=4",
                           "account:nlp=pending=2", /* no running limit: no id */
                           "account:vision=running=2,gpus=6",
                           "user:no-such-user-loomq=running=1"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        assert_int_equal(loomd_quota_parse(specs[i], &qs, &err), LOOM_OK);
    loomd_accounts_t *acc;
    assert_int_equal(loomd_accounts_new(&acc, &err), LOOM_OK);
    loom_runtime_t *rt = runtime();
    assert_int_equal(loomd_quota_apply(&qs, acc, rt, &err), LOOM_OK);
    uint32_t vision = account_no(acc, "vision"); /* numbered by apply, first */
    assert_int_equal(vision, 1);
    loom_runtime_usage_t u;
    loom_runtime_quota_usage(rt, LOOM_RUNTIME_QUOTA_USER, 4242, &u);
    assert_int_equal(u.limits.gpu_milli, 2000);
    assert_int_equal(u.limits.jobs, 3);
    loom_runtime_quota_usage(rt, LOOM_RUNTIME_QUOTA_USER, 7, &u); /* the default */
    assert_int_equal(u.limits.gpu_milli, -1);
    assert_int_equal(u.limits.jobs, 3);
    loom_runtime_quota_usage(rt, LOOM_RUNTIME_QUOTA_ACCOUNT, vision, &u);
    assert_int_equal(u.limits.gpu_milli, 4000);
    assert_int_equal(u.limits.jobs, 2);
    loom_runtime_quota_usage(rt, LOOM_RUNTIME_QUOTA_ACCOUNT, account_no(acc, "nlp"), &u);
    assert_int_equal(u.limits.gpu_milli, -1);
    assert_int_equal(u.limits.jobs, -1);
    loom_runtime_free(rt);
    /* no quotas at all: nothing is limited */
    rt = runtime();
    assert_int_equal(loomd_quota_apply(NULL, acc, rt, &err), LOOM_OK);
    loom_runtime_quota_usage(rt, LOOM_RUNTIME_QUOTA_USER, 4242, &u);
    assert_int_equal(u.limits.jobs, -1);
    loom_runtime_free(rt);
    loomd_accounts_free(acc);
}

/* One number per account name, the same every time, none for no name;
 * the table grows past its first size without renumbering. */
static void test_account_ids(void **state)
{
    (void)state;
    loomd_accounts_t *acc;
    loom_err_t err;
    assert_int_equal(loomd_accounts_new(&acc, &err), LOOM_OK);
    assert_int_equal(account_no(acc, NULL), 0);
    assert_int_equal(account_no(acc, ""), 0);
    assert_int_equal(account_no(NULL, "x"), 0);
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "acct%d", i);
        assert_int_equal(account_no(acc, name), (uint32_t)i + 1);
    }
    for (int i = 999; i >= 0; i--) {
        snprintf(name, sizeof name, "acct%d", i);
        assert_int_equal(account_no(acc, name), (uint32_t)i + 1);
    }
    loomd_accounts_free(acc);
    loomd_accounts_free(NULL);
}

/* The counts the fake queue has pending: user "ann" 2, account "vision" 5. */
static int fake_pending(void *ctx, const loom_runtime_submission_t *s, bool by_account, int64_t *n,
                        loom_err_t *err)
{
    int *calls = ctx;
    (*calls)++;
    if (s->user && strcmp(s->user, "broken") == 0)
        return loom_err_set(err, LOOM_EIO, "the count failed");
    *n = by_account ? (s->account && strcmp(s->account, "vision") == 0 ? 5 : 0)
                    : (strcmp(s->user, "ann") == 0 ? 2 : 0);
    return LOOM_OK;
}

/* The runtime's submission check: the rule that applies (user, account,
 * every user), pending counted only when the submission adds jobs, time
 * limits (none given, too long), the first refusal named, a count that
 * would overflow, the caller's error passed on. */
static void test_submission(void **state)
{
    (void)state;
    loom_runtime_quota_rule_t r[3];
    loom_err_t err;
    assert_int_equal(loom_runtime_quota_parse("user:ann=pending=3", &r[0], &err), LOOM_OK);
    assert_int_equal(loom_runtime_quota_parse("account:vision=pending=6", &r[1], &err), LOOM_OK);
    assert_int_equal(loom_runtime_quota_parse("*=time=1h", &r[2], &err), LOOM_OK);
    loom_runtime_quota_refusal_t why;
    int calls = 0;
    loom_runtime_submission_t s = {"ann", NULL, 60, 1};
    assert_int_equal(
        loom_runtime_quota_check_submission(r, 3, &s, fake_pending, &calls, &why, &err), LOOM_OK);
    assert_int_equal(calls, 1);
    s.count = 2; /* 2 pending + 2 > 3 */
    assert_int_equal(
        loom_runtime_quota_check_submission(r, 3, &s, fake_pending, &calls, &why, &err),
        LOOM_ELIMIT);
    assert_ptr_equal(why.rule, &r[0]);
    assert_string_equal(why.what, "pending jobs");
    assert_int_equal(why.used, 4);
    assert_int_equal(why.allowed, 3);
    assert_non_null(strstr(err.msg, "quota user:ann=pending=3: pending jobs 4"));
    s = (loom_runtime_submission_t){"bob", "vision", 60, 2}; /* 5 + 2 > 6 */
    assert_int_equal(
        loom_runtime_quota_check_submission(r, 3, &s, fake_pending, &calls, &why, &err),
        LOOM_ELIMIT);
    assert_ptr_equal(why.rule, &r[1]);
    s.count = 0; /* a change: time only, nothing counted */
    calls = 0;
    assert_int_equal(
        loom_runtime_quota_check_submission(r, 3, &s, fake_pending, &calls, &why, &err), LOOM_OK);
    assert_int_equal(calls, 0);
    s.time_limit_s = 0; /* none given */
    assert_int_equal(
        loom_runtime_quota_check_submission(r, 3, &s, fake_pending, &calls, &why, &err),
        LOOM_ELIMIT);
    assert_ptr_equal(why.rule, &r[2]);
    assert_non_null(strstr(err.msg, "no time limit given"));
    s.time_limit_s = 3601;
    assert_int_equal(
        loom_runtime_quota_check_submission(r, 3, &s, fake_pending, &calls, &why, &err),
        LOOM_ELIMIT);
    assert_non_null(strstr(err.msg, "time limit too long; the longest time limit allowed is 3600"));
    assert_int_equal(why.used, 3601);
    s = (loom_runtime_submission_t){"ann", NULL, 60, INT64_MAX};
    assert_int_equal(
        loom_runtime_quota_check_submission(r, 3, &s, fake_pending, &calls, &why, &err),
        LOOM_ELIMIT);
    assert_int_equal(why.used, INT64_MAX);
    s = (loom_runtime_submission_t){"broken", "vision", 60, 1};
    assert_int_equal(
        loom_runtime_quota_check_submission(r, 3, &s, fake_pending, &calls, &why, &err), LOOM_EIO);
    assert_null(why.rule);
    s = (loom_runtime_submission_t){NULL, NULL, 60, 1}; /* no user: only "*" applies */
    assert_int_equal(
        loom_runtime_quota_check_submission(r, 3, &s, fake_pending, &calls, &why, &err), LOOM_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_running),
        cmocka_unit_test(test_account_ids),
        cmocka_unit_test(test_apply),
        cmocka_unit_test(test_submission),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
