/* Job owners in the store (schema 6) and usage from the jobs table: an
 * owner round trip and its JSON, a job without one, and usage per user and
 * account: GPU, CPU and memory seconds over each job's run, clipped to the
 * window, a running job counted up to now, filters. */
#include <math.h>
#include <stdio.h>
#include <sqlite3.h>
#include <unistd.h>

#include "loom/store.h"
#include "store/store_int.h"
#include "store_fixture.h"

static int64_t submit(loom_store_t *s, const char *user, const char *account, int64_t gpus,
                      int64_t share)
{
    loom_job_spec_t spec;
    loom_job_spec_init(&spec);
    spec.name = "j";
    spec.script = "true";
    spec.cpus = 2;
    spec.memory_bytes = 1ULL << 30;
    spec.gpus = gpus;
    spec.gpu_share_milli = share;
    if (user) {
        spec.has_owner = true;
        spec.uid = 1000;
        spec.gid = 1000;
        spec.user = user;
        spec.group = user;
        spec.account = account;
    }
    return submit_spec(s, &spec);
}

static void move(loom_store_t *s, int64_t id, loom_job_state_t to)
{
    loom_err_t err;
    if (loom_store_transition(s, id, -1, to, "test", NULL, NULL, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
}

static void test_owner_round_trip(void **state)
{
    (void)state;
    loom_store_t *s = open_store();
    int64_t a = submit(s, "ana", NULL, 0, 0), b = submit(s, NULL, NULL, 0, 0);
    loom_job_t j;
    loom_err_t err;
    assert_int_equal(loom_store_get(s, a, &j, &err), LOOM_OK);
    assert_int_equal(j.uid, 1000);
    assert_int_equal(j.gid, 1000);
    assert_string_equal(j.user, "ana");
    assert_string_equal(j.account, "ana"); /* defaults to the group */
    json_t *o = loom_job_to_json(&j, false);
    char *text = json_dumps(json_object_get(o, "owner"), JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(text, "{\"account\":\"ana\",\"gid\":1000,\"group\":\"ana\",\"uid\":1000,"
                              "\"user\":\"ana\"}");
    free(text);
    json_decref(o);
    loom_job_t copy;
    assert_int_equal(loom_job_copy(&copy, &j), LOOM_OK);
    assert_string_equal(copy.user, "ana");
    loom_job_free(&copy);
    loom_job_free(&j);
    assert_int_equal(loom_store_get(s, b, &j, &err), LOOM_OK);
    assert_int_equal(j.uid, -1);
    assert_null(j.user);
    o = loom_job_to_json(&j, false);
    assert_true(json_is_null(json_object_get(o, "owner")));
    json_decref(o);
    loom_job_free(&j);
    loom_store_close(s);
}

static const loom_store_usage_row_t *row(loom_store_usage_row_t *rows, size_t n, const char *u)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].user, u) == 0)
            return &rows[i];
    fail_msg("no usage row for '%s'", u);
    return NULL;
}

static void test_usage(void **state)
{
    (void)state;
    loom_store_t *s = open_store();
    int64_t t0 = loom_time_real_ns();
    int64_t a = submit(s, "ana", "vision", 2, 0), b = submit(s, "bo", NULL, 0, 250);
    submit(s, "cy", NULL, 1, 0); /* never runs: no usage */
    move(s, a, LOOM_JOB_RUNNING);
    move(s, b, LOOM_JOB_RUNNING);
    usleep(200 * 1000);
    move(s, a, LOOM_JOB_COMPLETED);
    loom_store_usage_row_t *rows;
    size_t n;
    loom_err_t err;
    loom_store_usage_query_t q = {.now_ns = loom_time_real_ns()};
    assert_int_equal(loom_store_usage(s, &q, &rows, &n, &err), LOOM_OK);
    assert_int_equal(n, 2);
    const loom_store_usage_row_t *ra = row(rows, n, "ana"), *rb = row(rows, n, "bo");
    assert_string_equal(ra->account, "vision");
    assert_string_equal(rb->account, "bo");
    assert_int_equal(ra->jobs, 1);
    assert_true(ra->wall_seconds >= 0.2 && ra->wall_seconds < 5);
    assert_true(fabs(ra->gpu_seconds - 2 * ra->wall_seconds) < 1e-6);
    assert_true(fabs(ra->cpu_seconds - 2 * ra->wall_seconds) < 1e-6);
    assert_true(fabs(ra->memory_gib_seconds - ra->wall_seconds) < 1e-6);
    /* bo still runs: counted to now, a quarter of a GPU */
    assert_true(rb->wall_seconds >= 0.2);
    assert_true(fabs(rb->gpu_seconds - 0.25 * rb->wall_seconds) < 1e-6);
    double bo_then = rb->wall_seconds;
    loom_store_usage_free(rows, n);
    /* a window that starts later clips; filters select */
    usleep(50 * 1000);
    q.since_ns = q.now_ns;
    q.now_ns = loom_time_real_ns();
    q.user = "bo";
    assert_int_equal(loom_store_usage(s, &q, &rows, &n, &err), LOOM_OK);
    assert_int_equal(n, 1);
    assert_true(rows[0].wall_seconds > 0 && rows[0].wall_seconds < bo_then);
    loom_store_usage_free(rows, n);
    q.user = NULL;
    q.account = "vision";
    q.since_ns = t0;
    assert_int_equal(loom_store_usage(s, &q, &rows, &n, &err), LOOM_OK);
    assert_int_equal(n, 1);
    assert_string_equal(rows[0].user, "ana");
    loom_store_usage_free(rows, n);
    loom_store_close(s);
}

/* Finding 8 (issue 30): submit_id is keyed by owner. Schema 8 rebuilds
 * the jobs table: a database of schema 7 keeps its jobs, their events and
 * their submit_ids, and afterwards the same submit_id of two owners is two
 * jobs, while the same owner's replay answers with the first. */
static int64_t submit_keyed(loom_store_t *s, int64_t uid, const char *key, bool *created)
{
    loom_job_spec_t spec;
    loom_job_spec_init(&spec);
    spec.name = "k";
    spec.script = "true";
    spec.submit_id = key;
    if (uid >= 0) {
        spec.has_owner = true;
        spec.uid = spec.gid = uid;
        spec.user = spec.group = uid == 1000 ? "ana" : "bo";
    }
    loom_job_t j;
    loom_err_t err;
    if (loom_store_submit(s, &spec, &j, created, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    int64_t id = j.id;
    loom_job_free(&j);
    return id;
}

static void test_submit_id_per_owner(void **state)
{
    (void)state;
    sqlite3 *db;
    loom_err_t err;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(loom_store_migrate(db, 7, &err), LOOM_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO jobs (submit_id, name, script, format, cpus, state, "
                                  "submit_time_ns, update_time_ns, uid, gid, user, grp) VALUES "
                                  "('k1', 'old', 'true', 'batch', 1, 'PENDING', 1, 1, 1001, 1001, "
                                  "'bo', 'bo');"
                                  "INSERT INTO job_events VALUES (1, 0, 1, NULL, 'PENDING', NULL);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    loom_store_t *s = open_store();
    assert_int_equal(loom_store_schema_version(s), loom_store_schema_latest());
    loom_job_event_t *ev;
    size_t nev;
    assert_int_equal(loom_store_events(s, 1, &ev, &nev, &err), LOOM_OK);
    assert_int_equal(nev, 1);
    loom_store_events_free(ev, nev);
    bool created;
    assert_int_equal(submit_keyed(s, 1001, "k1", &created), 1); /* bo's replay: his job */
    assert_false(created);
    int64_t anas = submit_keyed(s, 1000, "k1", &created); /* ana's: her own */
    assert_true(created);
    assert_int_not_equal(anas, 1);
    assert_int_equal(submit_keyed(s, 1000, "k1", &created), anas);
    assert_false(created);
    int64_t none = submit_keyed(s, -1, "k1", &created); /* no owner: a namespace too */
    assert_true(created);
    assert_int_equal(submit_keyed(s, -1, "k1", &created), none);
    loom_job_t j;
    assert_int_equal(loom_store_get_by_submit_id(s, 1000, "k1", &j, &err), LOOM_OK);
    assert_int_equal(j.id, anas);
    loom_job_free(&j);
    assert_int_equal(loom_store_get_by_submit_id(s, 1002, "k1", &j, &err), LOOM_ENOTFOUND);
    loom_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_owner_round_trip, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_usage, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_submit_id_per_owner, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
