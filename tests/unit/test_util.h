/* Shared includes for cmocka tests (cmocka.h needs these first). */
#ifndef LOOM_TEST_UTIL_H
#define LOOM_TEST_UTIL_H
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmtree.h"

/* True when this process runs in a chroot (scripts/fresh-check.sh): its
 * root is not PID 1's. There the mount table still names the host's mount
 * points, so "/" may not be one of them. */
#include <sys/stat.h>
static inline bool loom_test_in_chroot(void)
{
    struct stat a, b;
    if (stat("/", &a) != 0 || stat("/proc/1/root/", &b) != 0)
        return false; /* /proc/1/root unreadable: not known to be one */
    return a.st_dev != b.st_dev || a.st_ino != b.st_ino;
}

static inline int64_t loom_test_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for another thread's state: polls `cond` every millisecond until it
 * holds (true) or timeout_ms pass (false), instead of sleeping a fixed time
 * that is too long on an idle machine and too short on a loaded one. */
#define LOOM_TEST_WAIT_UNTIL(cond, timeout_ms)                                                     \
    ({                                                                                             \
        int64_t until_ = loom_test_mono_ms() + (timeout_ms);                                       \
        bool held_;                                                                                \
        while (!(held_ = (cond)) && loom_test_mono_ms() < until_)                                  \
            usleep(1000);                                                                          \
        held_;                                                                                     \
    })
#endif
