/* The runtime tests' two checks: a job's state as the runtime reports it,
 * and the runtime's own consistency check (loom_runtime_check). */
#ifndef LOOM_TEST_RUNTIME_FIXTURE_H
#define LOOM_TEST_RUNTIME_FIXTURE_H
#include "loom/runtime.h"
#include "test_util.h"

static inline loom_runtime_info_t info(loom_runtime_t *rt, uint64_t id)
{
    loom_runtime_info_t i;
    assert_int_equal(loom_runtime_get(rt, id, &i), LOOM_OK);
    return i;
}

static inline void check(loom_runtime_t *rt)
{
    loom_err_t err;
    if (loom_runtime_check(rt, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
}
#endif
