/* The real clock's spin (src/gen/clock.c), fed with overshoots by hand, so
 * nothing here depends on how this machine's sleeps wake up: the spin
 * covers the 99.5th percentile of recent overshoots within its limits,
 * rises at once to cover a wake-up it did not and comes down slowly,
 * starts at the most, forgets old overshoots, and stays put when fixed;
 * and the set-up loom_gen_run uses for a realtime pacer and for a normal
 * one. */
#include <time.h>
#include <unistd.h>

#include "loom/gen.h"
#include "test_util.h"

#define US LOOM_NS_PER_US
#define MS LOOM_NS_PER_MS

static void adaptive(loom_gen_realclock_t *rc)
{
    memset(rc, 0, sizeof *rc);
    rc->spin_ns = 20 * US;
    rc->spin_max_ns = 5 * MS;
}

/* The spin covers the value that 99.5% of the samples do not exceed, and
 * is not much above it (the histogram has four buckets per octave). */
static void assert_covers(const loom_gen_realclock_t *rc, int64_t q)
{
    int64_t spin = loom_gen_realclock_spin(rc);
    if (spin < q || spin > q + q / 4 + US)
        fail_msg("spin %lld ns for a 99.5th percentile of %lld ns", (long long)spin, (long long)q);
}

static void follows_the_overshoot(void **state)
{
    loom_gen_realclock_t rc;
    adaptive(&rc);
    assert_int_equal(loom_gen_realclock_spin(&rc), 5 * MS); /* nothing known yet: the most */
    for (int i = 0; i < 31; i++)
        loom_gen_realclock_observe(&rc, 50 * US);
    assert_int_equal(loom_gen_realclock_spin(&rc), 5 * MS); /* still warming up */
    loom_gen_realclock_observe(&rc, 50 * US);
    assert_covers(&rc, 50 * US); /* warm: the 99.5th percentile at once */
    for (int i = 0; i < 1000; i++)
        loom_gen_realclock_observe(&rc, 50 * US);
    assert_covers(&rc, 50 * US);
    /* one wake-up the spin did not cover: the spin covers it at once */
    loom_gen_realclock_observe(&rc, 3 * MS);
    assert_covers(&rc, 3 * MS);
    assert_true(rc.spin_peak_ns >= 3 * MS);
    /* and comes down slowly: still above half of it 64 wake-ups later */
    for (int i = 0; i < 64; i++)
        loom_gen_realclock_observe(&rc, 50 * US);
    assert_true(loom_gen_realclock_spin(&rc) > 3 * MS / 2);
    /* back to 50 us once that one is below the 99.5th percentile (0.1%) */
    for (int i = 0; i < 1000; i++)
        loom_gen_realclock_observe(&rc, 50 * US);
    assert_covers(&rc, 50 * US);
    adaptive(&rc);
    for (int i = 0; i < 1000; i++) /* 1% at 3 ms: above the 99.5th percentile */
        loom_gen_realclock_observe(&rc, i % 100 == 7 ? 3 * MS : 50 * US);
    assert_covers(&rc, 3 * MS);
    assert_true(rc.spin_peak_ns >= loom_gen_realclock_spin(&rc));
    assert_int_equal(rc.wakes, 1000);
}

static void limits(void **state)
{
    loom_gen_realclock_t rc;
    adaptive(&rc);
    for (int i = 0; i < 500; i++)
        loom_gen_realclock_observe(&rc, 300); /* sub-microsecond wake-ups */
    assert_int_equal(loom_gen_realclock_spin(&rc), 20 * US);
    adaptive(&rc);
    for (int i = 0; i < 500; i++)
        loom_gen_realclock_observe(&rc, 80 * MS); /* far past the most */
    assert_int_equal(loom_gen_realclock_spin(&rc), 5 * MS);
    adaptive(&rc);
    for (int i = 0; i < 500; i++)
        loom_gen_realclock_observe(&rc, -5); /* clock noise: counts as on time */
    assert_int_equal(loom_gen_realclock_spin(&rc), 20 * US);
}

static void forgets(void **state)
{
    loom_gen_realclock_t rc;
    adaptive(&rc);
    for (int i = 0; i < 2000; i++)
        loom_gen_realclock_observe(&rc, 2 * MS);
    assert_covers(&rc, 2 * MS);
    /* the machine calms down: after a few thousand quick wake-ups the old
     * slow ones are forgotten and the spin comes down */
    for (int i = 0; i < 6000; i++)
        loom_gen_realclock_observe(&rc, 40 * US);
    assert_covers(&rc, 40 * US);
    assert_true(rc.spin_peak_ns >= 2 * MS);
}

static void fixed_and_hist(void **state)
{
    loom_gen_hist_t *h = malloc(sizeof *h);
    loom_gen_hist_init(h);
    loom_gen_realclock_t rc = {.spin_ns = 30 * US, .overshoot = h};
    for (int i = 0; i < 1000; i++)
        loom_gen_realclock_observe(&rc, (i % 10 + 1) * 100 * US);
    assert_int_equal(loom_gen_realclock_spin(&rc), 30 * US); /* fixed stays fixed */
    assert_int_equal(h->n, 1000);                            /* every wake-up recorded */
    assert_int_equal(h->max, 1000 * US);
    free(h);
    loom_gen_realclock_t none = {0};
    assert_int_equal(loom_gen_realclock_spin(&none), 0);
}

static void defaults(void **state)
{
    loom_gen_realclock_t rc;
    /* realtime: adaptive from 20 us (at most half the gap) to 5 ms, with rests */
    loom_gen_realclock_default(&rc, 1000, true);
    assert_int_equal(rc.spin_ns, 20 * US);
    assert_int_equal(rc.spin_max_ns, 5 * MS);
    assert_true(rc.rest_cpu_share == LOOM_GEN_REST_CPU_SHARE);
    assert_true(LOOM_GEN_REST_CPU_SHARE < 0.95); /* below realtime throttling */
    assert_int_equal(rc.rest_ns, 20 * US);
    assert_int_equal(rc.rest_every_ns, 1 * MS); /* the fallback */
    loom_gen_realclock_default(&rc, 100000, true);
    assert_int_equal(rc.spin_ns, 5 * US);
    assert_int_equal(rc.spin_max_ns, 5 * MS);
    assert_true(rc.rest_cpu_share == LOOM_GEN_REST_CPU_SHARE);
    /* normal policy: a fixed 20 us, no rests */
    loom_gen_realclock_default(&rc, 1000, false);
    assert_int_equal(rc.spin_ns, 20 * US);
    assert_true(rc.spin_max_ns <= rc.spin_ns);
    assert_int_equal(rc.rest_every_ns, 0);
    assert_true(rc.rest_cpu_share == 0);
    assert_int_equal(loom_gen_realclock_spin(&rc), 20 * US);
    assert_int_equal(loom_gen_default_spin_ns(10), 20 * US);
    /* the most: 5 ms, at low rates a tenth of the gap up to 20 ms */
    assert_int_equal(loom_gen_default_spin_max_ns(1000), 5 * MS);
    assert_int_equal(loom_gen_default_spin_max_ns(20), 5 * MS);
    assert_int_equal(loom_gen_default_spin_max_ns(10), 10 * MS);
    assert_int_equal(loom_gen_default_spin_max_ns(1), 20 * MS);
}

static void schedstat_line(void **state)
{
    assert_int_equal(loom_gen_schedstat_run_delay("2439334 14526195 11\n"), 14526195);
    assert_int_equal(loom_gen_schedstat_run_delay("5 0 1"), 0);
    assert_int_equal(loom_gen_schedstat_run_delay(""), -1);
    assert_int_equal(loom_gen_schedstat_run_delay("12"), -1);
    assert_int_equal(loom_gen_schedstat_run_delay("12 x 3"), -1);
    assert_int_equal(loom_gen_schedstat_run_delay("12 7x 3"), -1);
    /* the real file of this thread, where the kernel has one */
    loom_gen_realclock_t rc = {0};
    if (loom_gen_realclock_schedstat(&rc)) {
        char buf[128];
        ssize_t n = pread(rc.schedstat_fd, buf, sizeof buf - 1, 0);
        assert_true(n > 0);
        buf[n] = '\0';
        assert_true(loom_gen_schedstat_run_delay(buf) >= 0);
        loom_gen_realclock_close(&rc);
        assert_false(rc.has_schedstat);
    }
}

/* The real clock says why it returned late. A deadline already past: the
 * busy wait does not run and nothing is blamed on the clock; a sleep to a
 * deadline far enough ahead normally returns on time, but this is a real
 * clock, so only the set of possible answers is checked. */
static void late_cause_names(void **state)
{
    assert_string_equal(loom_gen_late_cause_name(LOOM_GEN_LATE_WAKE), "wake");
    assert_string_equal(loom_gen_late_cause_name(LOOM_GEN_LATE_QUEUED), "queued");
    assert_string_equal(loom_gen_late_cause_name(LOOM_GEN_LATE_STALL), "stall");
    assert_string_equal(loom_gen_late_cause_name(LOOM_GEN_LATE_REST), "rest");
    assert_string_equal(loom_gen_late_cause_name(LOOM_GEN_LATE_BEHIND), "behind");
    assert_string_equal(loom_gen_late_cause_name(LOOM_GEN_LATE_NCAUSES), "?");
    loom_gen_realclock_t rc;
    loom_gen_realclock_default(&rc, 1000, true);
    loom_gen_clock_t c = loom_gen_clock_real(&rc);
    rc.last_cause = -1;
    c.sleep_until(c.ctx, c.now(c.ctx) - MS);
    assert_int_equal(rc.last_cause, LOOM_GEN_LATE_NONE);
    /* by the CPU budget: a thread that used all of the last millisecond
     * (as far as the clock knows) owes 100 us and rests 20 + 80 us */
    struct timespec ts;
    assert_int_equal(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts), 0);
    rc.budget_at_ns = c.now(c.ctx) - MS;
    rc.budget_cpu_ns = (int64_t)ts.tv_sec * LOOM_NS_PER_S + ts.tv_nsec - MS;
    rc.budget_debt_ns = 0;
    int64_t t0 = c.now(c.ctx);
    c.sleep_until(c.ctx, t0 + 1 * US);
    assert_int_equal(rc.rests, 1);
    assert_true(c.now(c.ctx) - t0 >= 100 * US);
    assert_true(rc.last_cause == LOOM_GEN_LATE_REST || rc.last_cause == LOOM_GEN_LATE_NONE);
    /* without a budget: a rest when the clock has not slept for rest_every_ns */
    rc.rest_cpu_share = 0;
    rc.last_sleep_ns = c.now(c.ctx) - 2 * MS;
    c.sleep_until(c.ctx, c.now(c.ctx) + 1 * US);
    assert_int_equal(rc.rests, 2);
    assert_true(rc.last_cause == LOOM_GEN_LATE_REST || rc.last_cause == LOOM_GEN_LATE_NONE);
}

/* The CPU budget's arithmetic, fed readings by hand. */
static void budget(void **state)
{
    loom_gen_realclock_t rc;
    memset(&rc, 0, sizeof rc);
    rc.rest_cpu_share = 0.9;
    rc.rest_ns = 20 * US;
    assert_int_equal(loom_gen_realclock_budget(&rc, 1 * MS, 0), 0); /* starts the count */
    /* busy all of 100 us: 10 us over its share, a rest of 20 + 10 us */
    assert_int_equal(loom_gen_realclock_budget(&rc, 1 * MS + 100 * US, 100 * US), 30 * US);
    assert_int_equal(rc.budget_debt_ns, 10 * US);
    /* that rest took 30 us and 10 us of CPU: 10 + 10 - 27 = -7 us, no rest */
    assert_int_equal(loom_gen_realclock_budget(&rc, 1 * MS + 130 * US, 110 * US), 0);
    assert_int_equal(rc.budget_debt_ns, -7 * US);
    /* a long sleep banks at most LOOM_GEN_BUDGET_CREDIT_NS */
    assert_int_equal(loom_gen_realclock_budget(&rc, 100 * MS, 200 * US), 0);
    assert_int_equal(rc.budget_debt_ns, -LOOM_GEN_BUDGET_CREDIT_NS);
    /* busy 1 ms: within the credit */
    assert_int_equal(loom_gen_realclock_budget(&rc, 101 * MS, 1200 * US), 0);
    assert_int_equal(rc.budget_debt_ns, -900 * US);
    /* busy 10 ms more: 100 us owed; a rest is at most 5 rest_ns */
    assert_int_equal(loom_gen_realclock_budget(&rc, 111 * MS, 11200 * US), 100 * US);
    assert_int_equal(rc.budget_debt_ns, 100 * US);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(follows_the_overshoot),
        cmocka_unit_test(limits),
        cmocka_unit_test(forgets),
        cmocka_unit_test(fixed_and_hist),
        cmocka_unit_test(defaults),
        cmocka_unit_test(schedstat_line),
        cmocka_unit_test(late_cause_names),
        cmocka_unit_test(budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
