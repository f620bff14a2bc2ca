/* The store's run transitions: what the scheduler and executor record. */
#include <stdio.h>
#include <unistd.h>

#include "loom/store.h"
#include "store_fixture.h"

static void lifecycle(void **state)
{
    loom_store_t *s = open_store();
    int64_t id = submit_named(s, "a");
    loom_job_t j;
    loom_err_t err;
    /* wrong expectation: nothing changes */
    assert_int_equal(
        loom_store_transition(s, id, LOOM_JOB_RUNNING, LOOM_JOB_COMPLETED, "x", NULL, NULL, &err),
        LOOM_ESTATE);
    assert_non_null(strstr(err.msg, "is PENDING, not RUNNING"));
    assert_int_equal(loom_store_transition(s, id, LOOM_JOB_PENDING, LOOM_JOB_RUNNING,
                                           "placed on n1", "{\"node\":\"n1\",\"gpus\":[0,1]}", &j,
                                           &err),
                     LOOM_OK);
    assert_int_equal(j.state, LOOM_JOB_RUNNING);
    assert_true(j.start_time_ns > 0);
    assert_string_equal(j.run_json, "{\"node\":\"n1\",\"gpus\":[0,1]}");
    loom_job_free(&j);
    /* run info only: state and events stay */
    assert_int_equal(loom_store_transition(s, id, LOOM_JOB_RUNNING, -1, NULL,
                                           "{\"node\":\"n1\",\"pid\":5}", &j, &err),
                     LOOM_OK);
    assert_int_equal(j.state, LOOM_JOB_RUNNING);
    assert_string_equal(j.reason, "placed on n1");
    loom_job_free(&j);
    assert_int_equal(loom_store_transition(s, id, LOOM_JOB_RUNNING, LOOM_JOB_FAILED, "exit code 3",
                                           NULL, &j, &err),
                     LOOM_OK);
    assert_true(j.end_time_ns >= j.start_time_ns);
    loom_job_free(&j);
    loom_store_close(s);

    /* durable, with the events and stats after reopening */
    s = open_store();
    assert_int_equal(loom_store_get(s, id, &j, &err), LOOM_OK);
    assert_int_equal(j.state, LOOM_JOB_FAILED);
    assert_string_equal(j.reason, "exit code 3");
    assert_string_equal(j.run_json, "{\"node\":\"n1\",\"pid\":5}");
    json_t *o = loom_job_to_json(&j, false);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "run"), "pid")), 5);
    json_decref(o);
    loom_job_free(&j);
    loom_job_event_t *ev;
    size_t n;
    assert_int_equal(loom_store_events(s, id, &ev, &n, &err), LOOM_OK);
    assert_int_equal(n, 3); /* submitted, running, failed */
    assert_int_equal(ev[1].to, LOOM_JOB_RUNNING);
    assert_string_equal(ev[2].reason, "exit code 3");
    loom_store_events_free(ev, n);
    loom_store_stats_t st;
    assert_int_equal(loom_store_stats(s, &st, &err), LOOM_OK);
    assert_int_equal(st.jobs_by_state[LOOM_JOB_FAILED], 1);
    assert_int_equal(st.jobs_by_state[LOOM_JOB_RUNNING], 0);

    /* a job cancelled while pending is not started */
    int64_t id2 = submit_named(s, "b");
    assert_int_equal(loom_store_cancel(s, id2, NULL, NULL, &err), LOOM_OK);
    assert_int_equal(
        loom_store_transition(s, id2, LOOM_JOB_PENDING, LOOM_JOB_RUNNING, NULL, "{}", NULL, &err),
        LOOM_ESTATE);
    assert_int_equal(loom_store_transition(s, 999, -1, LOOM_JOB_FAILED, NULL, NULL, NULL, &err),
                     LOOM_ENOTFOUND);
    loom_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(lifecycle, setup_dir, teardown_dir)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
