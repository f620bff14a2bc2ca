/* Shared includes for cmocka tests (cmocka.h needs these first). */
#ifndef LOOM_TEST_UTIL_H
#define LOOM_TEST_UTIL_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmtree.h"

/* Path under ../shared (LOOM_SHARED_DIR), in a static buffer. */
static inline const char *loom_test_shared(const char *rel)
{
    static char path[4096];
    const char *dir = getenv("LOOM_SHARED_DIR");
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "../shared", rel);
    return path;
}
#endif
