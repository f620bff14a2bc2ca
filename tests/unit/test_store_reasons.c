/* Pending reasons in the store (loom_store_set_reasons): each pending job's
 * reason column is replaced, a job no longer pending is left alone, no
 * event is added, the update time is kept, and the reasons outlive a
 * reopening of the database. */
#include <stdio.h>

#include "loom/store.h"
#include "store_fixture.h"

static void expect(loom_store_t *s, int64_t id, const char *reason, int64_t updated)
{
    loom_job_t j;
    assert_int_equal(loom_store_get(s, id, &j, NULL), LOOM_OK);
    if (reason)
        assert_string_equal(j.reason, reason);
    else
        assert_null(j.reason);
    if (updated)
        assert_int_equal(j.update_time_ns, updated);
    loom_job_free(&j);
}

static void test_set_reasons(void **state)
{
    (void)state;
    loom_store_t *s = open_store();
    int64_t a = submit_named(s, "j"), b = submit_named(s, "j"), c = submit_named(s, "j");
    loom_err_t err;
    assert_int_equal(loom_store_transition(s, c, -1, LOOM_JOB_RUNNING, "placed", NULL, NULL, &err),
                     LOOM_OK);
    loom_job_t before;
    assert_int_equal(loom_store_get(s, a, &before, NULL), LOOM_OK);
    int64_t ids[] = {a, b, c, 999};
    const char *why[] = {"Resources", "QuotaLimit", "Priority", "Priority"};
    assert_int_equal(loom_store_set_reasons(s, ids, why, 4, &err), LOOM_OK);
    expect(s, a, "Resources", before.update_time_ns);
    expect(s, b, "QuotaLimit", 0);
    expect(s, c, "placed", 0); /* running: left alone */
    loom_job_event_t *ev;
    size_t n;
    assert_int_equal(loom_store_events(s, a, &ev, &n, &err), LOOM_OK);
    assert_int_equal(n, 1); /* the submission only */
    loom_store_events_free(ev, n);
    assert_int_equal(loom_store_set_reasons(s, NULL, NULL, 0, &err), LOOM_OK);
    const char *none[] = {NULL};
    assert_int_equal(loom_store_set_reasons(s, &b, none, 1, &err), LOOM_OK);
    expect(s, b, NULL, 0);
    loom_store_close(s);
    s = open_store();
    expect(s, a, "Resources", 0);
    loom_store_close(s);
    loom_job_free(&before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_set_reasons, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
