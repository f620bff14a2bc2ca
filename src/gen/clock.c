/* The pacer's clocks: the real monotonic one, whose sleeps end in a short
 * busy wait so that a job is released within microseconds of its due time
 * (clock_nanosleep alone wakes tens of microseconds late), and a virtual
 * one for tests, where sleeping moves time forward at once and nothing
 * else does, so a test of the pacer never depends on the machine's speed.
 */
#include "loom/gen.h"

static int64_t real_now(void *ctx)
{
    return loom_time_mono_ns();
}

static void real_sleep_until(void *ctx, int64_t deadline)
{
    const loom_gen_realclock_t *rc = ctx;
    int64_t spin = rc ? rc->spin_ns : 0;
    if (loom_time_mono_ns() < deadline - spin)
        loom_time_sleep_until_ns(deadline - spin);
    while (loom_time_mono_ns() < deadline) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

int64_t loom_gen_default_spin_ns(double rate)
{
    int64_t spin = 20 * LOOM_NS_PER_US;
    if (rate > 0 && 0.5e9 / rate < (double)spin)
        spin = (int64_t)(0.5e9 / rate);
    return spin;
}

loom_gen_clock_t loom_gen_clock_real(loom_gen_realclock_t *rc)
{
    return (loom_gen_clock_t){.now = real_now, .sleep_until = real_sleep_until, .ctx = rc};
}

static int64_t virtual_now(void *ctx)
{
    return __atomic_load_n(&((loom_gen_vclock_t *)ctx)->now_ns, __ATOMIC_ACQUIRE);
}

static void virtual_sleep_until(void *ctx, int64_t deadline)
{
    loom_gen_vclock_t *vc = ctx;
    if (__atomic_load_n(&vc->now_ns, __ATOMIC_ACQUIRE) < deadline)
        __atomic_store_n(&vc->now_ns, deadline, __ATOMIC_RELEASE);
}

loom_gen_clock_t loom_gen_clock_virtual(loom_gen_vclock_t *vc)
{
    return (loom_gen_clock_t){.now = virtual_now, .sleep_until = virtual_sleep_until, .ctx = vc};
}
