/* loomd's side of live reconfiguration (src/daemon/reconfig.c): a plan's
 * environment for the restarted job, its run record and its reading back
 * after a restart of loomd, and the stored "reconfig" of a job. */
#include <string.h>

#include "daemon/runner_int.h"
#include "test_util.h"

static active_t planned(void)
{
    active_t a;
    memset(&a, 0, sizeof a);
    a.has_plan = true;
    a.plan =
        (loom_rubick_config_t){{.gpus = 2, .accum = 4, .recompute = true, .zero = 1}, 2500, 8192};
    a.reconfigs = 3;
    a.reconfiguring = true;
    return a;
}

static bool has(const loomd_plan_env_t *e, const char *var)
{
    for (int k = 0; e->vars[k]; k++)
        if (strcmp(e->vars[k], var) == 0)
            return true;
    return false;
}

static void test_env(void **state)
{
    (void)state;
    active_t a = planned();
    loomd_plan_env_t e;
    loomd__plan_env(&a, &e);
    assert_true(has(&e, "LOOM_PLAN={\"workers\": 2, \"accumulation\": 4, \"recompute\": true, "
                        "\"zero\": 1, \"offload\": false}"));
    assert_true(has(&e, "LOOM_WORLD_SIZE=2"));
    assert_true(has(&e, "WORLD_SIZE=2"));
    assert_true(has(&e, "LOOM_RANKS=0,1"));
    assert_true(has(&e, "LOOM_CPUS=3")); /* 2.5 CPUs: 3 threads' worth */
    assert_true(has(&e, "LOOM_RECONFIGURATIONS=3"));
    /* the plan parses as JSON */
    json_t *p = json_loads(strchr(e.vars[0], '=') + 1, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(p, "workers")), 2);
    json_decref(p);
    a.has_plan = false; /* a black box: nothing */
    loomd__plan_env(&a, &e);
    assert_null(e.vars[0]);
}

static void test_run_record(void **state)
{
    (void)state;
    active_t a = planned(), b;
    json_t *run = json_object();
    loomd__plan_json(&a, run);
    assert_int_equal(json_integer_value(json_object_get(run, "reconfigurations")), 3);
    assert_true(json_is_true(json_object_get(run, "reconfiguring")));
    memset(&b, 0, sizeof b);
    loomd__plan_read(&b, run);
    assert_true(b.has_plan && b.reconfiguring);
    assert_int_equal(b.reconfigs, 3);
    assert_int_equal(b.plan.plan.gpus, 2);
    assert_int_equal(b.plan.plan.accum, 4);
    assert_true(b.plan.plan.recompute && !b.plan.plan.offload);
    assert_int_equal(b.plan.plan.zero, 1);
    assert_int_equal(b.plan.cpu_milli, 2500);
    assert_int_equal(b.plan.mem_mib, 8192);
    loom_sched_req_t q = {.cpu_milli = 1000, .mem_mib = 4096, .num_gpus = 1};
    loomd__plan_req(run, &q);
    assert_int_equal(q.num_gpus, 2);
    assert_int_equal(q.gpu_milli, LOOM_SCHED_MILLI);
    assert_int_equal(q.cpu_milli, 2500);
    assert_int_equal(q.mem_mib, 8192);
    json_decref(run);
    /* a run without a plan changes nothing */
    run = json_object();
    memset(&b, 0, sizeof b);
    loomd__plan_read(&b, run);
    assert_false(b.has_plan);
    loomd__plan_req(run, &q);
    assert_int_equal(q.num_gpus, 2);
    json_decref(run);
}

static void test_reconfig_of(void **state)
{
    (void)state;
    loom_job_t j;
    memset(&j, 0, sizeof j);
    j.gpus = 1;
    j.cpus = 1;
    j.memory_bytes = 4ull << 30;
    loom_rubick_spec_t s;
    assert_false(loomd__reconfig_of(&j, &s)); /* none */
    char ok[] = "{\"global_batch\": 256, \"gpus\": {\"min\": 1, \"max\": 2}, \"model\": \"lstm\"}";
    j.reconfig_json = ok;
    assert_true(loomd__reconfig_of(&j, &s));
    assert_string_equal(s.model, "lstm");
    assert_int_equal(s.asked.gpus, 1);
    assert_int_equal(s.asked_mem, 4096);
    char outside[] = "{\"global_batch\": 256, \"gpus\": {\"min\": 2, \"max\": 4}}";
    j.reconfig_json = outside; /* the asked GPU is outside its range: unusable */
    assert_false(loomd__reconfig_of(&j, &s));
    char broken[] = "{\"global_batch\": ";
    j.reconfig_json = broken;
    assert_false(loomd__reconfig_of(&j, &s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_run_record),
        cmocka_unit_test(test_reconfig_of),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
