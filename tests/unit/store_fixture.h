/* A store in a fresh temporary directory per test, for the store's unit
 * tests: cmocka's setup_dir/teardown_dir make and remove the directory,
 * open_store opens (or reopens) the database in it. */
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
#endif
