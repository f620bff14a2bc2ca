/* job.submit's "options" (docs/protocol.md): checked member by member,
 * stored in jobs.options (schema 5) and given back in the job object; a
 * database of schema 4 is migrated, its jobs without options. */
#include <sqlite3.h>
#include <unistd.h>

#include "loom/store.h"
#include "store/store_int.h"
#include "test_util.h"

static int from_text(const char *text, loom_job_spec_t *spec, char **texts, json_t **keep,
                     loom_err_t *err)
{
    *keep = json_loads(text, 0, NULL);
    assert_non_null(*keep);
    return loom_job_spec_from_json(*keep, spec, texts, err);
}

static void checked(void **state)
{
    (void)state;
    static const struct {
        const char *options;
        const char *msg; /* NULL: accepted */
    } cases[] = {
        {"{\"workdir\": \"/w\", \"output\": \"o-%j\", \"env\": [\"A=1\"], \"hold\": true, "
         "\"nice\": -5, \"retries\": 3, \"array\": \"0-9\"}",
         NULL},
        {"{\"bogus\": 1}", "options: unknown member 'bogus'"},
        {"{\"workdir\": 3}", "options.workdir: expected a string"},
        {"{\"workdir\": \"\"}", "options.workdir: expected a string of 1 to"},
        {"{\"env\": [\"NOEQUALS\"]}", "options.env[0]: expected a \"NAME=VALUE\""},
        {"{\"env\": \"A=1\"}", "options.env: expected an array"},
        {"{\"hold\": 1}", "options.hold: expected a boolean"},
        {"{\"retries\": 101}", "options.retries: expected an integer within +-100"},
        {"[]", "options: expected an object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"name\": \"n\", \"script\": \"\", \"labels\": {\"a\": "
                 "\"b\"}, \"options\": %s}",
                 cases[i].options);
        loom_job_spec_t spec;
        char *texts = NULL;
        json_t *keep;
        loom_err_t err;
        int rc = from_text(text, &spec, &texts, &keep, &err);
        if (!cases[i].msg) {
            if (rc)
                fail_msg("case %zu: %s", i, err.msg);
            assert_string_equal(spec.labels_json, "{\"a\":\"b\"}");
            assert_non_null(strstr(spec.options_json, "\"workdir\":\"/w\""));
        } else if (rc != LOOM_EINVAL || !strstr(err.msg, cases[i].msg)) {
            fail_msg("case %zu: rc %d '%s', expected '%s'", i, rc, rc ? err.msg : "", cases[i].msg);
        }
        free(texts);
        json_decref(keep);
    }
}

static char dir[64];

/* Fixture: a fresh temporary directory for the database, removed after. */
static int setup_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/loom-test-options-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
    (void)state;
    return loom_test_rmtree(dir);
}

static void stored_and_migrated(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/loom.db", dir);
    /* A database at schema 4, with one job, as an older loom left it. */
    sqlite3 *db;
    loom_err_t err;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(loom_store_migrate(db, 4, &err), LOOM_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO jobs (name, script, format, cpus, state, "
                                  "submit_time_ns, update_time_ns) VALUES ('old', '', 'batch', 1, "
                                  "'PENDING', 1, 1)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    loom_store_t *s;
    assert_int_equal(loom_store_open(path, NULL, &s, &err), LOOM_OK);
    assert_true(loom_store_schema_version(s) >= 5);
    loom_job_t old;
    assert_int_equal(loom_store_get(s, 1, &old, &err), LOOM_OK);
    assert_null(old.options_json);
    json_t *j = loom_job_to_json(&old, false);
    assert_int_equal(json_object_size(json_object_get(j, "options")), 0);
    json_decref(j);
    loom_job_free(&old);
    loom_job_spec_t spec;
    loom_job_spec_init(&spec);
    spec.name = "new";
    spec.script = "";
    spec.options_json = "{\"workdir\":\"/w\",\"array\":\"0-3\"}";
    loom_job_t job;
    assert_int_equal(loom_store_submit(s, &spec, &job, NULL, &err), LOOM_OK);
    loom_job_free(&job);
    assert_int_equal(loom_store_get(s, 2, &job, &err), LOOM_OK);
    assert_string_equal(job.options_json, spec.options_json);
    j = loom_job_to_json(&job, false);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "options"), "array")),
                        "0-3");
    json_decref(j);
    loom_job_free(&job);
    spec.options_json = "{\"hold\":\"yes\"}"; /* checked by the store too */
    assert_int_equal(loom_store_submit(s, &spec, NULL, NULL, &err), LOOM_EINVAL);
    loom_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(checked),
        cmocka_unit_test_setup_teardown(stored_and_migrated, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
