/* A store in a fresh temporary directory per test, for the store's unit
 * tests: cmocka's setup_dir/teardown_dir make and remove the directory,
 * open_store opens (or reopens) the database in it; submit_spec and
 * submit_named add a job and return its id. */
#ifndef LOOM_TEST_STORE_FIXTURE_H
#define LOOM_TEST_STORE_FIXTURE_H
#include "loom/store.h"
#include "test_util.h"

static char dir[64], path[128];

static inline int setup_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/loom-store-test-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/loom.db", dir);
    return 0;
}

static inline int teardown_dir(void **state)
{
    (void)state;
    return loom_test_rmtree(dir);
}

static inline loom_store_t *open_store(void)
{
    loom_store_t *s = NULL;
    loom_err_t err;
    if (loom_store_open(path, NULL, &s, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    return s;
}

static inline int64_t submit_spec(loom_store_t *s, const loom_job_spec_t *spec)
{
    loom_job_t j;
    loom_err_t err;
    if (loom_store_submit(s, spec, &j, NULL, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    int64_t id = j.id;
    loom_job_free(&j);
    return id;
}

/* A job NAME whose script is `true`. */
static inline int64_t submit_named(loom_store_t *s, const char *name)
{
    loom_job_spec_t spec;
    loom_job_spec_init(&spec);
    spec.name = name;
    spec.script = "true";
    return submit_spec(s, &spec);
}
#endif
