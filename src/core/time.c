/* Clocks. Schedules in loom are absolute: callers compute each deadline
 * from a fixed start and sleep until it, so sleeps never accumulate error. */
#include <errno.h>
#include <time.h>

#include "loom/core.h"

static int64_t read_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * LOOM_NS_PER_S + ts.tv_nsec;
}

int64_t loom_time_mono_ns(void)
{
    return read_clock(CLOCK_MONOTONIC);
}
int64_t loom_time_real_ns(void)
{
    return read_clock(CLOCK_REALTIME);
}

void loom_time_sleep_until_ns(int64_t deadline_ns)
{
    struct timespec ts = {.tv_sec = deadline_ns / LOOM_NS_PER_S,
                          .tv_nsec = deadline_ns % LOOM_NS_PER_S};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

void loom_time_format_rfc3339(int64_t real_ns, char out[32])
{
    time_t secs = (time_t)(real_ns / LOOM_NS_PER_S);
    long us = (long)((real_ns % LOOM_NS_PER_S) / LOOM_NS_PER_US);
    if (us < 0) {
        us += 1000000;
        secs -= 1;
    }
    struct tm tm;
    gmtime_r(&secs, &tm);
    snprintf(out, 32, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, us);
}
