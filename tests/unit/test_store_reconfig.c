/* What the store keeps for reconfigurable jobs: job.submit's "reconfig"
 * (schema 7) survives a reopen and shows in the job object, a text that is
 * not a JSON object is refused naming it, and a transition to the same
 * state with a reason (a running job reconfigured) is an event. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "loom/store.h"
#include "store_fixture.h"

static void kept(void **state)
{
    (void)state;
    loom_store_t *s = open_store();
    loom_job_spec_t spec;
    loom_job_spec_init(&spec);
    spec.name = "a";
    spec.script = "true";
    spec.gpus = 1;
    spec.reconfig_json = "{\"global_batch\":256,\"model\":\"lstm\"}";
    int64_t id = submit_spec(s, &spec);
    loom_job_t j;
    loom_err_t err;
    spec.reconfig_json = "[1]";
    assert_int_equal(loom_store_submit(s, &spec, &j, NULL, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "reconfig"));
    spec.reconfig_json = NULL; /* a black box */
    int64_t plain = submit_spec(s, &spec);
    loom_store_close(s);

    s = open_store();
    assert_int_equal(loom_store_get(s, id, &j, &err), LOOM_OK);
    assert_string_equal(j.reconfig_json, "{\"global_batch\":256,\"model\":\"lstm\"}");
    json_t *o = loom_job_to_json(&j, false);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(o, "reconfig"), "global_batch")), 256);
    json_decref(o);
    loom_job_t c;
    assert_int_equal(loom_job_copy(&c, &j), LOOM_OK);
    assert_string_equal(c.reconfig_json, j.reconfig_json);
    loom_job_free(&c);
    loom_job_free(&j);
    assert_int_equal(loom_store_get(s, plain, &j, &err), LOOM_OK);
    assert_null(j.reconfig_json);
    o = loom_job_to_json(&j, false);
    assert_true(json_is_null(json_object_get(o, "reconfig")));
    json_decref(o);
    loom_job_free(&j);
    loom_store_close(s);
}

static void reconfigured_event(void **state)
{
    (void)state;
    loom_store_t *s = open_store();
    int64_t id = submit_named(s, "a");
    loom_job_t j;
    loom_err_t err;
    assert_int_equal(loom_store_transition(s, id, LOOM_JOB_PENDING, LOOM_JOB_RUNNING, "placed",
                                           "{\"plan\":{\"workers\":1}}", NULL, &err),
                     LOOM_OK);
    /* run information alone: no event */
    assert_int_equal(loom_store_transition(s, id, LOOM_JOB_RUNNING, -1, NULL,
                                           "{\"plan\":{\"workers\":1}}", NULL, &err),
                     LOOM_OK);
    /* the same state with a reason: an event */
    assert_int_equal(loom_store_transition(s, id, LOOM_JOB_RUNNING, LOOM_JOB_RUNNING,
                                           "reconfigured", "{\"plan\":{\"workers\":2}}", &j, &err),
                     LOOM_OK);
    assert_int_equal(j.state, LOOM_JOB_RUNNING);
    assert_string_equal(j.reason, "reconfigured");
    loom_job_free(&j);
    loom_job_event_t *ev;
    size_t n;
    assert_int_equal(loom_store_events(s, id, &ev, &n, &err), LOOM_OK);
    assert_int_equal(n, 3); /* submitted, placed, reconfigured */
    assert_int_equal(ev[2].from, LOOM_JOB_RUNNING);
    assert_int_equal(ev[2].to, LOOM_JOB_RUNNING);
    assert_string_equal(ev[2].reason, "reconfigured");
    loom_store_events_free(ev, n);
    loom_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(kept, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(reconfigured_event, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
