/* Rubick's policy inside the runtime's step (loomd --rubick): jobs whose
 * "reconfig" names a model are started and reconfigured by the policy,
 * with their configuration on the action; black boxes still go through the
 * queue and placement policies; a refused reconfiguration keeps the old
 * allocation; a job found running is adopted with its plan; the baseline
 * modes and the period; what a shrink gives up stays held until the
 * caller reports the reconfiguration done (hold_until_reconfigured). */
#include <math.h>
#include <string.h>

#include "test_util.h"

#include "loom/runtime.h"
#include "runtime_fixture.h"

#define MAX_LOG 64

typedef struct log {
    loom_runtime_action_t a[MAX_LOG];
    loom_rubick_config_t cfg[MAX_LOG]; /* a->config is valid only during the call */
    bool has_cfg[MAX_LOG];
    size_t n;
    uint64_t refuse; /* refuse RECONFIGURE of this id */
} log_t;

static int record(void *ctx, const loom_runtime_action_t *a)
{
    log_t *l = ctx;
    if (l->refuse && a->id == l->refuse && a->kind == LOOM_RUNTIME_RECONFIGURE)
        return LOOM_EUNAVAIL;
    assert_true(l->n < MAX_LOG);
    l->a[l->n] = *a;
    l->a[l->n].reason = NULL;
    l->has_cfg[l->n] = a->config != NULL;
    if (a->config)
        l->cfg[l->n] = *a->config;
    l->a[l->n].config = NULL;
    l->n++;
    return LOOM_OK;
}

static const char device[] = "{\"flops_half\": 989e12, \"memory_bytes\": 151397597184, "
                             "\"link_bandwidth\": 450e9, \"host_bandwidth\": 55e9}";

/* One node of 2 GPUs, 2 CPUs, 16 GiB; the policy in mode (NULL: rubick),
 * holding what a reconfiguration gives up when hold. */
static loom_runtime_t *runtime_hold(bool rubick, const char *mode, bool hold)
{
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    assert_int_equal(loom_sched_cluster_add_node(&c, "n0", 2000, 16384, 2, "g", 0, NULL, NULL),
                     LOOM_OK);
    loom_runtime_rubick_t rb = {
        .reconf_cost_s = 10, .min_gain = -1, .mode = mode, .hold_until_reconfigured = hold};
    loom_err_t err;
    assert_int_equal(loom_rubick_device_parse(device, sizeof device - 1, "h200", &rb.device, &err),
                     LOOM_OK);
    loom_runtime_config_t cfg = {.placer = {.ties = LOOM_SCHED_TIES_FIRST},
                                 .rubick = rubick ? &rb : NULL};
    loom_runtime_t *rt;
    if (loom_runtime_new(&c, &cfg, &rt, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    loom_sched_cluster_free(&c);
    return rt;
}

static loom_runtime_t *runtime_mode(bool rubick, const char *mode)
{
    return runtime_hold(rubick, mode, false);
}

static loom_runtime_t *runtime(bool rubick)
{
    return runtime_mode(rubick, NULL);
}

/* A reconfigurable lstm job asking 1 GPU, 1 CPU, 4 GiB, allowed up to
 * gpus_max GPUs (and as many CPUs, 4 GiB each); model NULL: none named. */
static void submit(loom_runtime_t *rt, uint64_t id, int gpus_max, const char *model, double t)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"global_batch\": 256, \"gpus\": {\"min\": 1, \"max\": %d}, \"cpus\": {\"min\": 1, "
             "\"max\": %d}, \"memory\": {\"min\": \"4GiB\", \"max\": \"%dGiB\"}%s%s%s}",
             gpus_max, gpus_max, 4 * gpus_max, model ? ", \"model\": \"" : "", model ? model : "",
             model ? "\"" : "");
    json_t *o = json_loads(text, 0, NULL);
    assert_non_null(o);
    loom_rubick_spec_t s;
    loom_err_t err;
    if (loom_rubick_spec_parse(o, "reconfig", &s, &err) ||
        loom_rubick_spec_check_asked(&s, 1, 1000, 4096, "reconfig", &err))
        fail_msg("%s", err.msg);
    json_decref(o);
    loom_runtime_job_t j = {
        .id = id,
        .req = {.cpu_milli = 1000, .mem_mib = 4096, .num_gpus = 1, .gpu_milli = 1000},
        .submit_s = t,
        .time_limit_s = 3600,
        .reconfig = &s};
    if (loom_runtime_submit(rt, &j, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
}

/* b (1 GPU at most) and a (up to 2) start on one GPU each, with their plan
 * on the START; when b leaves, a grows to both GPUs (RECONFIGURE 1 -> 2,
 * the plan on it); its progress is counted. */
static void test_grow_when_other_ends(void **state)
{
    (void)state;
    loom_runtime_t *rt = runtime(true);
    static log_t l;
    memset(&l, 0, sizeof l);
    submit(rt, 1, 1, "lstm", 0); /* b */
    loom_runtime_step(rt, 0, record, &l);
    submit(rt, 2, 2, "lstm", 1); /* a */
    loom_runtime_step(rt, 1, record, &l);
    assert_int_equal(l.n, 2);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(l.a[k].kind, LOOM_RUNTIME_START);
        assert_true(l.has_cfg[k]);
        assert_int_equal(l.cfg[k].plan.gpus, 1);
        assert_int_equal(l.a[k].alloc.ngpus, 1);
        /* the model's throughput, never below the guarantee */
        assert_true(l.a[k].samples_per_s >= info(rt, l.a[k].id).guarantee * (1 - 1e-12));
    }
    assert_true(info(rt, 2).guarantee > 0);
    assert_true(info(rt, 2).rubick);
    assert_int_equal(info(rt, 2).config.plan.gpus, 1);
    loom_runtime_step(rt, 2, record, &l); /* nothing moved: nothing decided */
    assert_int_equal(l.n, 2);
    assert_int_equal(loom_runtime_remove(rt, 1, 100), LOOM_OK);
    loom_runtime_step(rt, 100, record, &l);
    assert_int_equal(l.n, 3);
    assert_int_equal(l.a[2].kind, LOOM_RUNTIME_RECONFIGURE);
    assert_int_equal(l.a[2].id, 2);
    assert_int_equal(l.a[2].old_alloc.ngpus, 1);
    assert_int_equal(l.a[2].alloc.ngpus, 2);
    assert_int_equal(l.a[2].alloc.gpus[0], l.a[1].alloc.gpus[0]); /* keeps its own GPU first */
    assert_true(l.has_cfg[2]);
    assert_int_equal(l.cfg[2].plan.gpus, 2);
    assert_int_equal(l.a[2].alloc.req.num_gpus, 2);
    assert_true(l.a[2].samples_per_s > l.a[1].samples_per_s); /* it grows to go faster */
    loom_runtime_info_t i = info(rt, 2);
    assert_int_equal(i.reconfigurations, 1);
    assert_int_equal(i.config.plan.gpus, 2);
    assert_true(i.samples_done > 0); /* 99 s at one GPU's throughput */
    assert_int_equal(loom_runtime_cluster(rt)->gpu_milli_used, 2000);
    check(rt);
    loom_runtime_free(rt);
}

/* A refused RECONFIGURE keeps the job on what it had. */
static void test_refused_keeps_old(void **state)
{
    (void)state;
    loom_runtime_t *rt = runtime(true);
    static log_t l;
    memset(&l, 0, sizeof l);
    submit(rt, 1, 1, "lstm", 0);
    loom_runtime_step(rt, 0, record, &l);
    submit(rt, 2, 2, "lstm", 1);
    loom_runtime_step(rt, 1, record, &l);
    l.refuse = 2;
    loom_runtime_remove(rt, 1, 100);
    loom_runtime_step(rt, 100, record, &l);
    assert_int_equal(l.n, 2);
    assert_int_equal(info(rt, 2).alloc.ngpus, 1);
    assert_int_equal(info(rt, 2).reconfigurations, 0);
    assert_int_equal(loom_runtime_cluster(rt)->gpu_milli_used, 1000);
    check(rt);
    loom_runtime_free(rt);
}

/* Without the policy, or without a model named, a reconfigurable job is a
 * black box: started by the queue and placement policies, no config, and
 * never reconfigured. */
static void test_black_boxes(void **state)
{
    (void)state;
    for (int mode = 0; mode < 2; mode++) {
        loom_runtime_t *rt = runtime(mode == 1);
        static log_t l;
        memset(&l, 0, sizeof l);
        submit(rt, 1, 2, mode == 1 ? NULL : "lstm", 0);
        loom_runtime_step(rt, 0, record, &l);
        assert_int_equal(l.n, 1);
        assert_int_equal(l.a[0].kind, LOOM_RUNTIME_START);
        assert_false(l.has_cfg[0]);
        assert_false(info(rt, 1).rubick);
        loom_runtime_step(rt, 200, record, &l);
        assert_int_equal(l.n, 1);
        check(rt);
        loom_runtime_free(rt);
    }
}

/* A job found running (loomd restarted) on 2 GPUs is Rubick's again, with
 * that many workers. */
static void test_adopted(void **state)
{
    (void)state;
    loom_runtime_t *rt = runtime(true);
    char text[] =
        "{\"global_batch\": 256, \"gpus\": {\"min\": 1, \"max\": 2}, \"model\": \"lstm\"}";
    json_t *o = json_loads(text, 0, NULL);
    loom_rubick_spec_t s;
    assert_int_equal(loom_rubick_spec_parse(o, "reconfig", &s, NULL), LOOM_OK);
    assert_int_equal(loom_rubick_spec_check_asked(&s, 1, 1000, 4096, "reconfig", NULL), LOOM_OK);
    json_decref(o);
    loom_runtime_job_t j = {
        .id = 5,
        .req = {.cpu_milli = 1000, .mem_mib = 8192, .num_gpus = 2, .gpu_milli = 1000},
        .reconfig = &s};
    loom_sched_alloc_t at = {.node = 0, .ngpus = 2, .gpus = {0, 1}};
    assert_int_equal(loom_runtime_adopt(rt, &j, &at, false, 10, NULL), LOOM_OK);
    loom_runtime_info_t i = info(rt, 5);
    assert_true(i.rubick);
    assert_int_equal(i.config.plan.gpus, 2);
    check(rt);
    loom_runtime_free(rt);
}

/* The black-box baseline modes run in the same pass: "fixed" never
 * reconfigures; an unknown mode is refused by name. The period wakes the
 * caller while the policy has jobs, and no longer once they are gone. */
/* loomd fits the model to a job's measured steps (issue 33): steps twice
 * as slow as the model predicts halve the job's guarantee; without them
 * the model's constants stand. */
static void test_fitted(void **state)
{
    (void)state;
    double g[2];
    for (int k = 0; k < 2; k++) {
        loom_runtime_t *rt = runtime(true);
        loom_rubick_device_t d;
        loom_err_t err;
        assert_int_equal(loom_rubick_device_parse(device, sizeof device - 1, "h200", &d, &err),
                         LOOM_OK);
        const loom_rubick_model_t *m = loom_rubick_model_find("lstm");
        char text[1024];
        int n = snprintf(text, sizeof text,
                         "{\"global_batch\": 256, \"gpus\": {\"min\": 1, \"max\": 1}, "
                         "\"model\": \"lstm\"");
        if (k == 1) { /* measured at 1 GPU, accumulation 1 and 2, 1 CPU: twice the model */
            for (int a = 1; a <= 2; a++) {
                loom_rubick_config_t c = {{1, a, false, 0, false}, 1000, 0};
                loom_rubick_estimate_t e;
                const loom_rubick_fit_t twice = {2, 2, 0, 2};
                loom_rubick_predict(m, &d, &twice, 256, &c, &e);
                n += snprintf(text + n, sizeof text - (size_t)n,
                              "%s{\"gpus\": 1, \"plan\": {\"accumulation\": %d}, \"cpus\": 1, "
                              "\"step_s\": %.9g, \"data_s\": %.9g}",
                              a == 1 ? ", \"measured\": [" : ", ", a, e.step_s, e.data_s);
            }
            n += snprintf(text + n, sizeof text - (size_t)n, "]");
        }
        snprintf(text + n, sizeof text - (size_t)n, "}");
        json_t *o = json_loads(text, 0, NULL);
        assert_non_null(o);
        loom_rubick_spec_t s;
        if (loom_rubick_spec_parse(o, "reconfig", &s, &err) ||
            loom_rubick_spec_check_asked(&s, 1, 1000, 4096, "reconfig", &err))
            fail_msg("%s", err.msg);
        json_decref(o);
        loom_runtime_job_t j = {
            .id = 1,
            .req = {.cpu_milli = 1000, .mem_mib = 4096, .num_gpus = 1, .gpu_milli = 1000},
            .time_limit_s = 3600,
            .reconfig = &s};
        assert_int_equal(loom_runtime_submit(rt, &j, &err), LOOM_OK);
        loom_runtime_info_t info;
        assert_int_equal(loom_runtime_get(rt, 1, &info), LOOM_OK);
        assert_true(info.rubick);
        g[k] = info.guarantee;
        loom_runtime_free(rt);
    }
    assert_float_equal(g[1], g[0] / 2, g[0] * 1e-6);
}

static void test_modes_and_period(void **state)
{
    (void)state;
    loom_runtime_t *rt = runtime_mode(true, "fixed");
    static log_t l;
    memset(&l, 0, sizeof l);
    submit(rt, 1, 1, "lstm", 0);
    submit(rt, 2, 2, "lstm", 0);
    loom_runtime_step(rt, 0, record, &l);
    assert_int_equal(l.n, 2);
    assert_float_equal(loom_runtime_next_wakeup(rt), 60, 1e-9); /* the default period */
    loom_runtime_remove(rt, 1, 100);
    loom_runtime_step(rt, 100, record, &l);
    assert_int_equal(l.n, 2); /* a keeps its one GPU */
    assert_int_equal(info(rt, 2).alloc.ngpus, 1);
    loom_runtime_remove(rt, 2, 200);
    loom_runtime_step(rt, 200, record, &l);
    assert_true(isinf(loom_runtime_next_wakeup(rt)));
    loom_runtime_free(rt);

    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    assert_int_equal(loom_sched_cluster_add_node(&c, "n0", 2000, 16384, 2, "g", 0, NULL, NULL),
                     LOOM_OK);
    loom_runtime_rubick_t rb = {.mode = "pollux"};
    loom_runtime_config_t cfg = {.rubick = &rb};
    loom_err_t err;
    assert_int_equal(loom_runtime_new(&c, &cfg, &rt, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "rubick mode 'pollux': expected rubick, rubick-plan"));
    loom_sched_cluster_free(&c);
}

/* a starts on both GPUs alone; c arrives and a is shrunk to one GPU to
 * admit it. Without the hold c starts at once on the GPU a gives up (its
 * old process may still be checkpointing there). With it, that GPU stays
 * held (a draining, not reconfigured again) until the caller reports the
 * reconfiguration done (or removes a); then c starts there. */
static void test_shrink_holds_until_done(void **state)
{
    (void)state;
    for (int hold = 0; hold < 3; hold++) { /* 2: a is removed while it drains */
        loom_runtime_t *rt = runtime_hold(true, NULL, hold > 0);
        static log_t l;
        memset(&l, 0, sizeof l);
        submit(rt, 1, 2, "lstm", 0); /* a */
        loom_runtime_step(rt, 0, record, &l);
        assert_int_equal(info(rt, 1).alloc.ngpus, 2);
        submit(rt, 3, 1, "lstm", 1000); /* c */
        loom_runtime_step(rt, 1000, record, &l);
        assert_int_equal(l.a[1].kind, LOOM_RUNTIME_RECONFIGURE);
        assert_int_equal(l.a[1].id, 1);
        assert_int_equal(l.a[1].old_alloc.ngpus, 2);
        assert_int_equal(l.a[1].alloc.ngpus, 1);
        int freed = l.a[1].old_alloc.gpus[l.a[1].old_alloc.gpus[0] == l.a[1].alloc.gpus[0]];
        check(rt);
        if (!hold) { /* c at once, on the GPU a gave up */
            assert_int_equal(l.n, 3);
            assert_int_equal(l.a[2].kind, LOOM_RUNTIME_START);
            assert_int_equal(l.a[2].id, 3);
            assert_int_equal(l.a[2].alloc.gpus[0], freed);
            assert_false(info(rt, 1).draining);
            assert_int_equal(loom_runtime_reconfigured(rt, 1, 1001), LOOM_ESTATE);
            loom_runtime_free(rt);
            continue;
        }
        assert_int_equal(l.n, 2); /* c waits: a's old process still holds that GPU */
        assert_true(info(rt, 1).draining);
        assert_int_equal(info(rt, 3).state, LOOM_RUNTIME_PENDING);
        assert_int_equal(loom_runtime_cluster(rt)->gpu_milli_used, 2000);
        if (hold == 2) {
            assert_int_equal(loom_runtime_remove(rt, 1, 1003), LOOM_OK);
            assert_int_equal(loom_runtime_cluster(rt)->gpu_milli_used, 0);
            assert_int_equal(loom_runtime_cluster(rt)->nodes[0].mem_free, 16384);
            check(rt);
            loom_runtime_free(rt);
            continue;
        }
        loom_runtime_step(rt, 1005, record, &l); /* nothing changes meanwhile */
        loom_runtime_step(rt, 1100, record, &l); /* the period passed */
        assert_int_equal(l.n, 2);
        assert_int_equal(loom_runtime_reconfigured(rt, 1, 1010), LOOM_OK);
        assert_false(info(rt, 1).draining);
        assert_int_equal(loom_runtime_reconfigured(rt, 1, 1010), LOOM_ESTATE);
        assert_int_equal(loom_runtime_reconfigured(rt, 9, 1010), LOOM_ENOTFOUND);
        loom_runtime_step(rt, 1010, record, &l);
        assert_int_equal(l.n, 3);
        assert_int_equal(l.a[2].kind, LOOM_RUNTIME_START);
        assert_int_equal(l.a[2].id, 3);
        assert_int_equal(l.a[2].alloc.gpus[0], freed);
        check(rt);
        assert_int_equal(loom_runtime_remove(rt, 1, 2001), LOOM_OK);
        assert_int_equal(loom_runtime_remove(rt, 3, 2001), LOOM_OK);
        assert_int_equal(loom_runtime_cluster(rt)->gpu_milli_used, 0);
        assert_int_equal(loom_runtime_cluster(rt)->nodes[0].mem_free, 16384);
        check(rt);
        loom_runtime_free(rt);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow_when_other_ends),
        cmocka_unit_test(test_refused_keeps_old),
        cmocka_unit_test(test_black_boxes),
        cmocka_unit_test(test_adopted),
        cmocka_unit_test(test_modes_and_period),
        cmocka_unit_test(test_fitted),
        cmocka_unit_test(test_shrink_holds_until_done),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
