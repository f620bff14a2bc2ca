/* Reconfigurable jobs' "reconfig" object: a full spec, defaults, the asked
 * plan always allowed, and errors that name the field and what was
 * expected. */
#include "test_util.h"

#include "loom/rubick.h"

static int parse(const char *text, loom_rubick_spec_t *s, loom_err_t *err)
{
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    int rc = loom_rubick_spec_parse(j, "/reconfig", s, err);
    json_decref(j);
    return rc;
}

static void test_full(void **state)
{
    (void)state;
    loom_rubick_spec_t s;
    loom_err_t err;
    assert_int_equal(parse("{\"global_batch\": 256, \"gpus\": {\"min\": 1, \"max\": 8},"
                           " \"accumulation\": [1, 2, 4], \"recompute\": [false, true],"
                           " \"zero\": [0, 1, 2], \"offload\": [false],"
                           " \"cpus\": {\"min\": 2, \"max\": 32.5},"
                           " \"memory\": {\"min\": \"16GiB\", \"max\": \"64GiB\"},"
                           " \"plan\": {\"accumulation\": 8, \"zero\": 1}}",
                           &s, &err),
                     LOOM_OK);
    assert_true(s.reconfigurable);
    assert_int_equal(s.global_batch, 256);
    assert_int_equal(s.gpus_min, 1);
    assert_int_equal(s.gpus_max, 8);
    /* 1, 2, 4 and the asked 8 */
    assert_int_equal(s.accum_mask, 0x8b);
    assert_int_equal(s.recompute_mask, 3);
    assert_int_equal(s.zero_mask, 7);
    assert_int_equal(s.offload_mask, 1);
    assert_int_equal(s.cpu_min, 2000);
    assert_int_equal(s.cpu_max, 32500);
    assert_int_equal(s.mem_min, 16384);
    assert_int_equal(s.mem_max, 65536);
    assert_int_equal(s.asked.accum, 8);
    assert_int_equal(s.asked.zero, 1);
    assert_int_equal(loom_rubick_spec_check_asked(&s, 4, 8000, 32768, "/reconfig", &err), LOOM_OK);
    loom_rubick_plan_t p = {2, 4, true, 2, false};
    assert_true(loom_rubick_plan_allowed(&s, &p));
    p.zero = 3; /* not allowed */
    assert_false(loom_rubick_plan_allowed(&s, &p));
    p = (loom_rubick_plan_t){8, 8, false, 1, false}; /* 256 / 64: fine */
    assert_true(loom_rubick_plan_allowed(&s, &p));
    p = (loom_rubick_plan_t){3, 1, false, 0, false}; /* 256 / 3: no */
    assert_false(loom_rubick_plan_allowed(&s, &p));
}

static void test_black_box_and_defaults(void **state)
{
    (void)state;
    loom_rubick_spec_t s;
    loom_err_t err;
    assert_int_equal(loom_rubick_spec_parse(NULL, "/reconfig", &s, &err), LOOM_OK);
    assert_false(s.reconfigurable);
    assert_int_equal(parse("{\"global_batch\": 64}", &s, &err), LOOM_OK);
    assert_int_equal(loom_rubick_spec_check_asked(&s, 2, 4000, 0, "/reconfig", &err), LOOM_OK);
    assert_int_equal(s.gpus_min, 2); /* nothing declared: the asked values only */
    assert_int_equal(s.gpus_max, 2);
    assert_int_equal(s.cpu_min, 4000);
    assert_int_equal(s.accum_mask, 1);
    assert_int_equal(s.zero_mask, 1);
}

static void expect_error(const char *text, const char *want)
{
    loom_rubick_spec_t s;
    loom_err_t err;
    assert_int_equal(parse(text, &s, &err), LOOM_EINVAL);
    if (!strstr(err.msg, want))
        fail_msg("'%s': got '%s', wanted '%s'", text, err.msg, want);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("[]", "/reconfig: found an array, expected an object");
    expect_error("{}", "global_batch");
    expect_error("{\"global_batch\": 0}", "global_batch");
    expect_error("{\"global_batch\": 8, \"gpu\": 1}", "/reconfig/gpu: unknown member");
    expect_error("{\"global_batch\": 8, \"gpus\": 4}", "/reconfig/gpus: found an integer");
    expect_error("{\"global_batch\": 8, \"gpus\": {\"min\": 4, \"max\": 2}}",
                 "min 4 is above max 2");
    expect_error("{\"global_batch\": 8, \"gpus\": {\"min\": 1, \"max\": 99}}", "/reconfig/gpus");
    expect_error("{\"global_batch\": 8, \"accumulation\": []}",
                 "/reconfig/accumulation: found an empty array");
    expect_error("{\"global_batch\": 8, \"accumulation\": [1, 0]}",
                 "/reconfig/accumulation/1: found an integer, expected an integer 1..64");
    expect_error("{\"global_batch\": 8, \"zero\": [4]}", "/reconfig/zero/0");
    expect_error("{\"global_batch\": 8, \"recompute\": [1]}",
                 "/reconfig/recompute/0: found an integer, expected true or false");
    expect_error("{\"global_batch\": 8, \"cpus\": {\"min\": 4, \"max\": 2}}", "/reconfig/cpus");
    expect_error("{\"global_batch\": 8, \"memory\": {\"min\": \"lots\", \"max\": \"1G\"}}",
                 "/reconfig/memory/min");
    expect_error("{\"global_batch\": 8, \"plan\": {\"zero\": 5}}", "/reconfig/plan");
    expect_error("{\"global_batch\": 8, \"plan\": {\"offload\": true}}",
                 "/reconfig/plan/offload: true with zero 0");
    expect_error("{\"global_batch\": 8, \"plan\": {\"pipeline\": 2}}",
                 "/reconfig/plan/pipeline: unknown member");
    expect_error("{\"global_batch\": 8, \"model\": \"alexnet\"}",
                 "/reconfig/model: found 'alexnet', expected one of resnet18, resnet50");
    expect_error("{\"global_batch\": 8, \"model\": 3}", "/reconfig/model: found an integer");
}

/* "model" names one of the zoo's models, kept for the performance model. */
static void test_model(void **state)
{
    (void)state;
    loom_rubick_spec_t s;
    loom_err_t err;
    assert_int_equal(parse("{\"global_batch\": 8, \"model\": \"lstm\"}", &s, &err), LOOM_OK);
    assert_string_equal(s.model, "lstm");
    assert_non_null(loom_rubick_model_find(s.model));
    assert_int_equal(parse("{\"global_batch\": 8}", &s, &err), LOOM_OK);
    assert_string_equal(s.model, "");
    assert_null(loom_rubick_model_find("alexnet"));
    size_t n;
    assert_int_equal(loom_rubick_models(&n)[7].name[0], 'l');
    assert_int_equal(n, 9);
}

static void test_asked_checked(void **state)
{
    (void)state;
    loom_rubick_spec_t s;
    loom_err_t err;
    assert_int_equal(parse("{\"global_batch\": 96, \"gpus\": {\"min\": 2, \"max\": 4},"
                           " \"cpus\": {\"min\": 2, \"max\": 8}}",
                           &s, &err),
                     LOOM_OK);
    assert_int_equal(loom_rubick_spec_check_asked(&s, 8, 4000, 0, "/reconfig", &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "/reconfig/gpus: the job asks for 8 GPUs, outside 2..4"));
    assert_int_equal(loom_rubick_spec_check_asked(&s, 4, 16000, 0, "/reconfig", &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "/reconfig/cpus"));
    assert_int_equal(parse("{\"global_batch\": 10, \"gpus\": {\"min\": 1, \"max\": 4}}", &s, &err),
                     LOOM_OK);
    assert_int_equal(loom_rubick_spec_check_asked(&s, 4, 4000, 0, "/reconfig", &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "does not split into 4 GPUs"));
    assert_int_equal(loom_rubick_spec_check_asked(&s, 0, 4000, 0, "/reconfig", &err), LOOM_EINVAL);
}

/* A job's first measured steps (issue 33), for the policy's fit: read with
 * their plan and CPUs; a bad one is named by its index. */
static void test_measured(void **state)
{
    (void)state;
    loom_rubick_spec_t s;
    loom_err_t err;
    assert_int_equal(parse("{\"global_batch\": 256, \"gpus\": {\"min\": 1, \"max\": 8},"
                           " \"model\": \"bert\", \"measured\": [{\"gpus\": 2, \"cpus\": 8,"
                           " \"step_s\": 0.5, \"data_s\": 0.1}, {\"gpus\": 1, \"plan\":"
                           " {\"accumulation\": 4, \"zero\": 1}, \"cpus\": 4, \"step_s\": 0.9}]}",
                           &s, &err),
                     LOOM_OK);
    assert_int_equal(s.nmeasured, 2);
    assert_int_equal(s.measured[0].config.plan.gpus, 2);
    assert_int_equal(s.measured[0].config.cpu_milli, 8000);
    assert_float_equal(s.measured[0].step_s, 0.5, 0);
    assert_float_equal(s.measured[0].data_s, 0.1, 0);
    assert_int_equal(s.measured[1].config.plan.accum, 4);
    assert_int_equal(s.measured[1].config.plan.zero, 1);
    assert_float_equal(s.measured[1].data_s, 0, 0);
    assert_int_equal(parse("{\"global_batch\": 256, \"measured\": [{\"gpus\": 1, \"cpus\": 1,"
                           " \"step_s\": -1}]}",
                           &s, &err),
                     LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "/reconfig/measured/0: cpus 1, step_s -1"));
    assert_int_equal(parse("{\"global_batch\": 256, \"measured\": [{\"gpus\": 1, \"cpus\": 1,"
                           " \"step_s\": 1, \"loss\": 2}]}",
                           &s, &err),
                     LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "/reconfig/measured/0/loss: unknown member"));
    assert_int_equal(parse("{\"global_batch\": 256, \"measured\": [{}, {}, {}, {}, {}, {}, {}, {},"
                           " {}]}",
                           &s, &err),
                     LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "expected an array of at most 8 steps"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full),          cmocka_unit_test(test_black_box_and_defaults),
        cmocka_unit_test(test_errors),        cmocka_unit_test(test_model),
        cmocka_unit_test(test_asked_checked), cmocka_unit_test(test_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
