/* The pacer's clocks: the real monotonic one, whose sleeps end in a busy
 * wait so that a job is released within microseconds of its due time
 * although a sleep may wake up late, and a virtual one for tests, where
 * sleeping moves time forward at once and nothing else does, so a test of
 * the pacer never depends on the machine's speed.
 *
 * How long to busy-wait depends on the machine: on bare metal a sleep with
 * a timer slack of 1 ns wakes a few microseconds late, on the virtual
 * machines loom is developed on tens of microseconds typically and
 * milliseconds now and then (the hypervisor delivers the timer). So the
 * real clock can learn it: it keeps a decaying histogram of its own
 * wake-ups' overshoot and spins for its 99.5th percentile, within limits
 * the caller sets (loom_gen_run: at most half of each gap). */
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "loom/gen.h"

#define WARMUP_WAKES 32   /* spin the most until this many wake-ups are known */
#define RECOMPUTE    16   /* recompute the spin every this many wake-ups */
#define DECAY_AT     1024 /* halve the histogram at this many samples */
#define QUANTILE     0.995

static int64_t real_now(void *ctx)
{
    return loom_time_mono_ns();
}

/* Bucket of an overshoot: 0 below 1 us, then four per octave of us:
 * bucket 1 + 4l + q holds [2^l (1 + q/4), 2^l (1 + (q+1)/4)) us. */
static unsigned bucket_of(int64_t ns)
{
    uint64_t us = ns > 0 ? (uint64_t)ns / 1000 : 0;
    if (us == 0)
        return 0;
    unsigned l = 63u - (unsigned)__builtin_clzll(us);
    unsigned q = l >= 2 ? (unsigned)(us >> (l - 2)) & 3 : (unsigned)(us << (2 - l)) & 3;
    unsigned b = 1 + 4 * l + q;
    return b < LOOM_GEN_WAKE_BUCKETS ? b : LOOM_GEN_WAKE_BUCKETS - 1;
}

/* The upper edge of bucket b, ns. */
static int64_t bucket_edge(unsigned b)
{
    if (b == 0)
        return 1000;
    unsigned l = (b - 1) / 4, q = (b - 1) % 4;
    return (int64_t)(((uint64_t)(5 + q) * 1000) << l) / 4;
}

static int64_t clamp_spin(const loom_gen_realclock_t *rc, int64_t spin)
{
    if (spin < rc->spin_ns)
        spin = rc->spin_ns;
    if (spin > rc->spin_max_ns)
        spin = rc->spin_max_ns;
    return spin;
}

static void set_spin(loom_gen_realclock_t *rc, int64_t spin)
{
    rc->spin_now_ns = spin;
    if (spin > rc->spin_peak_ns)
        rc->spin_peak_ns = spin;
}

/* At the end of the warm-up the spin becomes the 99.5th percentile of the
 * overshoots seen. Then, every RECOMPUTE wake-ups, it comes down towards the 99.5th
 * percentile of the recent overshoots, by an eighth of the difference at a
 * time (slowly: a quiet moment on a busy machine is no reason to stop
 * covering its slow wake-ups), or goes up to it at once. */
static void adapt(loom_gen_realclock_t *rc, bool first)
{
    uint64_t want = (uint64_t)(QUANTILE * rc->nrecent + 0.999999), seen = 0;
    unsigned b = 0;
    for (; b < LOOM_GEN_WAKE_BUCKETS - 1; b++) {
        seen += rc->recent[b];
        if (seen >= want)
            break;
    }
    int64_t q = clamp_spin(rc, bucket_edge(b));
    int64_t cur = rc->spin_now_ns > 0 ? rc->spin_now_ns : rc->spin_max_ns;
    set_spin(rc, first || q >= cur ? q : cur - (cur - q + 7) / 8);
}

void loom_gen_realclock_observe(loom_gen_realclock_t *rc, int64_t over)
{
    if (rc->overshoot)
        loom_gen_hist_add(rc->overshoot, over);
    rc->wakes++;
    if (rc->spin_max_ns <= rc->spin_ns)
        return;
    unsigned b = bucket_of(over);
    rc->recent[b]++;
    if (++rc->nrecent >= DECAY_AT) { /* forget the old half by half */
        rc->nrecent = 0;
        for (unsigned k = 0; k < LOOM_GEN_WAKE_BUCKETS; k++)
            rc->nrecent += rc->recent[k] /= 2;
    }
    if (rc->wakes < WARMUP_WAKES)
        return;
    /* A wake-up the spin did not cover raises it at once to cover that
     * one: on this kind of machine slow wake-ups come in bursts (another
     * virtual machine or a build busy for a while), and waiting for them
     * to reach the 99.5th percentile would let dozens of jobs go out late
     * first. */
    if (rc->wakes > WARMUP_WAKES && over > rc->spin_now_ns)
        set_spin(rc, clamp_spin(rc, bucket_edge(b)));
    else if (rc->wakes == WARMUP_WAKES || rc->wakes % RECOMPUTE == 0)
        adapt(rc, rc->wakes == WARMUP_WAKES);
}

int64_t loom_gen_realclock_spin(const loom_gen_realclock_t *rc)
{
    if (!rc)
        return 0;
    if (rc->spin_max_ns <= rc->spin_ns)
        return rc->spin_ns;
    if (rc->wakes < WARMUP_WAKES || rc->spin_now_ns <= 0)
        return rc->spin_max_ns;
    return rc->spin_now_ns;
}

/* Digits only (at most 18: no overflow); NULL if there are none. */
static const char *digits(const char *p, int64_t *out)
{
    int64_t v = 0;
    int n = 0;
    for (; *p >= '0' && *p <= '9'; p++, n++) {
        if (n == 18)
            return NULL;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return n > 0 ? p : NULL;
}

int64_t loom_gen_schedstat_run_delay(const char *text)
{
    int64_t exec, delay;
    const char *p = digits(text, &exec);
    if (!p || *p != ' ')
        return -1;
    p = digits(p + 1, &delay);
    if (!p || (*p != ' ' && *p != '\n' && *p != '\0'))
        return -1;
    return delay;
}

bool loom_gen_realclock_schedstat(loom_gen_realclock_t *rc)
{
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    rc->schedstat_fd = fd;
    rc->has_schedstat = true;
    return true;
}

void loom_gen_realclock_close(loom_gen_realclock_t *rc)
{
    if (rc->has_schedstat)
        close(rc->schedstat_fd);
    rc->has_schedstat = false;
}

static int64_t run_delay(const loom_gen_realclock_t *rc)
{
    char buf[128];
    ssize_t n = pread(rc->schedstat_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return loom_gen_schedstat_run_delay(buf);
}

int64_t loom_gen_realclock_budget(loom_gen_realclock_t *rc, int64_t now_ns, int64_t cpu_ns)
{
    if (rc->budget_at_ns > 0) {
        double share = rc->rest_cpu_share > 0 ? rc->rest_cpu_share : 1.0;
        int64_t debt = rc->budget_debt_ns + (cpu_ns - rc->budget_cpu_ns) -
                       (int64_t)(share * (double)(now_ns - rc->budget_at_ns));
        rc->budget_debt_ns = debt < -LOOM_GEN_BUDGET_CREDIT_NS ? -LOOM_GEN_BUDGET_CREDIT_NS : debt;
    }
    rc->budget_at_ns = now_ns;
    rc->budget_cpu_ns = cpu_ns;
    if (rc->budget_debt_ns <= 0)
        return 0;
    int64_t extra = rc->budget_debt_ns < 4 * rc->rest_ns ? rc->budget_debt_ns : 4 * rc->rest_ns;
    return rc->rest_ns + extra;
}

/* The calling thread's CPU time, ns; -1 if it cannot be read. */
static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return -1;
    return (int64_t)ts.tv_sec * LOOM_NS_PER_S + ts.tv_nsec;
}

/* How long to rest before the next deadline, given that the clock cannot
 * sleep before it (now >= wake_at); 0: no rest. */
static int64_t rest_for(loom_gen_realclock_t *rc, int64_t now)
{
    if (rc->rest_cpu_share > 0 && !rc->budget_failed) {
        if (rc->budget_at_ns > 0 && now - rc->budget_at_ns < LOOM_GEN_BUDGET_CHECK_NS)
            return 0;
        int64_t cpu = thread_cpu_ns();
        if (cpu >= 0)
            return loom_gen_realclock_budget(rc, now, cpu);
        rc->budget_failed = true;
    }
    if (rc->rest_every_ns > 0 && now - rc->last_sleep_ns >= rc->rest_every_ns)
        return rc->rest_ns;
    return 0;
}

static void real_sleep_until(void *ctx, int64_t deadline)
{
    loom_gen_realclock_t *rc = ctx;
    int64_t wake_at = deadline - loom_gen_realclock_spin(rc), now = loom_time_mono_ns();
    int cause = LOOM_GEN_LATE_NONE;
    if (rc && rc->last_sleep_ns == 0)
        rc->last_sleep_ns = now;
    if (rc && now >= wake_at) {
        int64_t rest = rest_for(rc, now);
        if (rest > 0) {
            wake_at = now + rest; /* a rest: may make this deadline late */
            rc->rests++;
            cause = LOOM_GEN_LATE_REST;
        }
    }
    if (now < wake_at) {
        int64_t delay0 = rc && rc->has_schedstat ? run_delay(rc) : -1;
        loom_time_sleep_until_ns(wake_at);
        now = loom_time_mono_ns();
        if (rc) {
            rc->last_sleep_ns = now;
            loom_gen_realclock_observe(rc, now - wake_at);
        }
        if (cause == LOOM_GEN_LATE_REST && now <= deadline)
            cause = LOOM_GEN_LATE_NONE; /* the rest ended in time */
        if (now > deadline && cause == LOOM_GEN_LATE_NONE) {
            /* Woke up late: queued behind another thread if most of the
             * lateness was spent runnable, waiting for the CPU. */
            int64_t delay1 = delay0 >= 0 ? run_delay(rc) : -1;
            cause = delay1 >= 0 && 2 * (delay1 - delay0) > now - deadline ? LOOM_GEN_LATE_QUEUED
                                                                          : LOOM_GEN_LATE_WAKE;
        }
    }
    /* The busy wait. A gap between two readings of the clock longer than
     * LOOM_GEN_STALL_NS across the deadline means the thread did not run
     * when the deadline came (preempted, an interrupt, the virtual CPU
     * descheduled): that is the cause when it returns late. */
    int64_t prev = now;
    while (now < deadline) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        prev = now;
        now = loom_time_mono_ns();
    }
    if (cause == LOOM_GEN_LATE_NONE && now - deadline > 0 && now - prev > LOOM_GEN_STALL_NS &&
        prev < deadline)
        cause = LOOM_GEN_LATE_STALL;
    if (rc)
        rc->last_cause = cause;
}

const char *loom_gen_late_cause_name(loom_gen_late_cause_t cause)
{
    static const char *const names[LOOM_GEN_LATE_NCAUSES] = {"none",  "wake", "queued",
                                                             "stall", "rest", "behind"};
    return (unsigned)cause < LOOM_GEN_LATE_NCAUSES ? names[cause] : "?";
}

int64_t loom_gen_default_spin_ns(double rate)
{
    int64_t spin = 20 * LOOM_NS_PER_US;
    if (rate > 0 && 0.5e9 / rate < (double)spin)
        spin = (int64_t)(0.5e9 / rate);
    return spin;
}

int64_t loom_gen_default_spin_max_ns(double rate)
{
    /* 5 ms; at low rates up to a tenth of the gap (at most 20 ms), which
     * costs at most a tenth of a core and is spent only while the machine
     * wakes the pacer that late. */
    int64_t most = 5 * LOOM_NS_PER_MS;
    if (rate > 0 && 0.1e9 / rate > (double)most)
        most = 0.1e9 / rate < 20e6 ? (int64_t)(0.1e9 / rate) : 20 * LOOM_NS_PER_MS;
    return most;
}

void loom_gen_realclock_default(loom_gen_realclock_t *rc, double rate, bool realtime)
{
    memset(rc, 0, sizeof *rc);
    rc->spin_ns = loom_gen_default_spin_ns(rate);
    if (realtime) {
        /* Adaptive, and rests: a realtime pacer whose deadlines come closer
         * together than its spin never sleeps, and the kernel would stop it
         * for ~50 ms a second. Under the normal policy a longer spin does
         * not help: it spends the pacer's fair share of the CPU and the
         * scheduler then delays its later wake-ups.
         * Rests by a CPU budget of 90%: a fixed pattern (it was 100 us
         * after 1 ms without a sleep) either rests more than needed, which
         * makes more jobs late, or, where a short sleep costs much CPU, too
         * little: one run at 10,000/s averaged 90% and was stopped for
         * 48 ms. Rests of 20 us (plus any debt) make a job due during one
         * at most ~20 us + the wake-up's overshoot late. rest_every_ns is
         * the fallback where the thread's CPU time cannot be read. */
        rc->spin_max_ns = loom_gen_default_spin_max_ns(rate);
        rc->rest_cpu_share = LOOM_GEN_REST_CPU_SHARE;
        rc->rest_every_ns = LOOM_NS_PER_MS;
        rc->rest_ns = 20 * LOOM_NS_PER_US;
    }
    rc->spin_now_ns = loom_gen_realclock_spin(rc);
}

loom_gen_clock_t loom_gen_clock_real(loom_gen_realclock_t *rc)
{
    if (rc)
        rc->spin_now_ns = loom_gen_realclock_spin(rc);
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
