/* Trace replay: the CSV reader (quotes, CRLF, BOM, blank lines, errors with
 * file:line:column), the missing-value policies, sorting of unsorted rows,
 * scaling, and the Alibaba 2023 pod lists loom ships (workloads/traces). */
#include <math.h>
#include <stdio.h>

#include "loom/gen.h"
#include "test_util.h"

static int parse(const char *text, const char *col, loom_gen_missing_t m, loom_gen_trace_t *t,
                 loom_err_t *err)
{
    return loom_gen_trace_parse(t, text, strlen(text), "t.csv", col, m, err);
}

static void basic_unsorted_quoted(void **state)
{
    loom_gen_trace_t t;
    loom_err_t err;
    const char *csv = "\xEF\xBB\xBFname,\"creation_time\",x\r\n"
                      "a,10,1\r\n"
                      "\"b,\"\"q\"\"\",  2.5 ,2\r\n"
                      "\r\n"
                      "c,7,\"multi\nline\"\n"
                      "d,1e1,4";
    assert_int_equal(parse(csv, "creation_time", LOOM_GEN_MISSING_ERROR, &t, &err), LOOM_OK);
    assert_int_equal(t.n, 4);
    assert_true(t.times[0] == 2.5 && t.times[1] == 7 && t.times[2] == 10 && t.times[3] == 10);
    assert_int_equal(t.unsorted, 1); /* 2.5 after 10 (7 after 2.5 is in order) */
    assert_int_equal(t.skipped, 0);
    loom_gen_trace_free(&t);
}

static void errors_name_the_place(void **state)
{
    loom_gen_trace_t t;
    loom_err_t err;
    assert_int_equal(parse("a,b\n1,2\n", "c", 0, &t, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "t.csv:1: no column 'c'"));
    assert_non_null(strstr(err.msg, "columns: a, b"));

    assert_int_equal(parse("a,b\n1,2\n3,\n", "b", 0, &t, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "t.csv:3:3: 'b' is empty"));

    assert_int_equal(parse("a,b\n1,2\n3\n", "b", 0, &t, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "t.csv:3: row has 1 fields"));

    assert_int_equal(parse("a,b\n1,x7\n", "b", 0, &t, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "t.csv:2:3: 'b' is 'x7', expected a time in seconds"));

    assert_int_equal(parse("a,b\n1,nan\n", "b", 0, &t, &err), LOOM_EINVAL);
    assert_int_equal(parse("a,b\n1,0x10\n", "b", 0, &t, &err), LOOM_EINVAL);
    assert_int_equal(parse("a,b\n1,1e999\n", "b", 0, &t, &err), LOOM_EINVAL);

    assert_int_equal(parse("a,b\n1,\"2\n", "b", 0, &t, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "unterminated quoted field"));
    assert_int_equal(parse("a,b\n1,\"2\"x\n", "b", 0, &t, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "t.csv:2:6: expected ','"));
    assert_int_equal(parse("a,b\n1,2\"\n", "b", 0, &t, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "t.csv:2:4: unexpected '\"'"));

    assert_int_equal(parse("", "b", 0, &t, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "empty file"));
    assert_int_equal(parse("a,b\n", "b", 0, &t, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "no arrival times"));
    assert_null(t.times);
}

static void skip_policy(void **state)
{
    loom_gen_trace_t t;
    loom_err_t err;
    assert_int_equal(parse("a,b\n1,5\n2,\n3\n4,x\n5,3\n", "b", LOOM_GEN_MISSING_SKIP, &t, &err),
                     LOOM_OK);
    assert_int_equal(t.n, 2);
    assert_int_equal(t.skipped, 3);
    assert_true(t.times[0] == 3 && t.times[1] == 5);
    loom_gen_trace_free(&t);
    /* Syntax errors are not "missing values": skip does not hide them. */
    assert_int_equal(parse("a,b\n1,\"5\n", "b", LOOM_GEN_MISSING_SKIP, &t, &err), LOOM_EINVAL);
}

static void replay_order_and_scale(void **state)
{
    loom_gen_trace_t t;
    loom_err_t err;
    assert_int_equal(parse("t\n100\n40\n70\n40\n", "t", 0, &t, &err), LOOM_OK);
    loom_gen_arrivals_config_t cfg = {.process = LOOM_GEN_TRACE, .trace = &t, .time_scale = 0.5};
    loom_gen_arrivals_t a;
    assert_int_equal(loom_gen_arrivals_init(&a, &cfg, 1, &err), LOOM_OK);
    int64_t want[] = {0, 0, 15000000000LL, 30000000000LL}, due;
    for (int i = 0; i < 4; i++) {
        assert_true(loom_gen_arrivals_next(&a, &due));
        assert_true(due == want[i]);
    }
    assert_false(loom_gen_arrivals_next(&a, &due)); /* the trace ends */
    /* 3 gaps over 60 s of trace: rate 0.05/s at scale 1. */
    double scale = loom_gen_trace_scale_for_rate(&t, 10.0);
    assert_true(fabs(scale - 3.0 / (60.0 * 10.0)) < 1e-15);
    cfg.time_scale = scale;
    assert_true(fabs(loom_gen_arrivals_rate(&cfg) - 10.0) < 1e-9);
    loom_gen_trace_free(&t);
}

static void alibaba_pod_lists(void **state)
{
    loom_gen_trace_t t;
    loom_err_t err;
    /* cpu050: 7,439 pods, 191 rows earlier than the row before. */
    const char *path = "openb-cpu050";
    assert_int_equal(loom_gen_trace_load(&t, path, "creation_time", 0, &err), LOOM_OK);
    assert_int_equal(t.n, 7439);
    assert_int_equal(t.unsorted, 191);
    for (size_t i = 1; i < t.n; i++)
        assert_true(t.times[i] >= t.times[i - 1]);
    loom_gen_arrivals_config_t cfg = {.process = LOOM_GEN_TRACE, .trace = &t, .time_scale = 1e-3};
    loom_gen_arrivals_t a;
    assert_int_equal(loom_gen_arrivals_init(&a, &cfg, 1, &err), LOOM_OK);
    int64_t due, prev = -1;
    size_t n = 0;
    while (loom_gen_arrivals_next(&a, &due)) {
        assert_true(due >= prev);
        prev = due;
        n++;
    }
    assert_int_equal(n, 7439);
    assert_true(prev == llround((t.times[t.n - 1] - t.times[0]) * 1e-3 * 1e9));
    loom_gen_trace_free(&t);

    /* default: pending pods have no scheduled_time. */
    path = "openb-default";
    assert_int_equal(loom_gen_trace_load(&t, path, "scheduled_time", 0, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "openb_pod_list_default.csv.gz:"));
    assert_non_null(strstr(err.msg, "'scheduled_time' is empty"));
    assert_int_equal(loom_gen_trace_load(&t, path, "scheduled_time", LOOM_GEN_MISSING_SKIP, &err),
                     LOOM_OK);
    assert_true(t.skipped > 0);
    assert_int_equal(t.n + t.skipped, 8152);
    loom_gen_trace_free(&t);

    /* multigpu lists carry only the first five columns. */
    path = "openb_pod_list_multigpu20";
    assert_int_equal(loom_gen_trace_load(&t, path, "creation_time", 0, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "no column 'creation_time'"));
    assert_non_null(strstr(err.msg, "gpu_milli"));

    assert_int_equal(loom_gen_trace_load(&t, "/nonexistent/x.csv", "t", 0, &err), LOOM_ENOTFOUND);
    assert_non_null(strstr(err.msg, "/nonexistent/x.csv"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(basic_unsorted_quoted), cmocka_unit_test(errors_name_the_place),
        cmocka_unit_test(skip_policy),           cmocka_unit_test(replay_order_and_scale),
        cmocka_unit_test(alibaba_pod_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
