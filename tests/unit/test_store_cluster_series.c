/* The cluster series in the store (cluster_series.c): minute points come
 * back as written; once an hour ended more than a day before the newest
 * point its minutes are one point (span-weighted means, NAN kept as
 * unknown), and points older than the window are gone. */
#include <math.h>

#include "loom/store.h"
#include "store_fixture.h"

#define MIN (60 * LOOM_NS_PER_S)
#define T0  (1000 * LOOM_CLUSTER_COARSE_NS) /* on an hour */

static loom_cluster_point_t pt(int64_t t, double running)
{
    return (loom_cluster_point_t){.time_ns = t,
                                  .span_ns = MIN,
                                  .gpus_total = 8,
                                  .gpus_allocated = running,
                                  .gpus_busy = NAN,
                                  .running = running,
                                  .pending = 2};
}

static void test_coarsen_and_window(void **state)
{
    (void)state;
    loom_store_t *s = open_store();
    loom_err_t err;
    assert_int_equal(loom_store_cluster_append(s, &(loom_cluster_point_t){0}, 0, &err),
                     LOOM_EINVAL);
    for (int m = 1; m <= 120; m++) { /* two hours: running 1 then 3 */
        loom_cluster_point_t x = pt(T0 + m * MIN, m <= 60 ? 1 : 3);
        assert_int_equal(loom_store_cluster_append(s, &x, 0, &err), LOOM_OK);
    }
    loom_cluster_point_t *p;
    size_t n;
    assert_int_equal(loom_store_cluster_series(s, 0, &p, &n, &err), LOOM_OK);
    assert_int_equal(n, 120); /* all within a day of the newest */
    assert_true(isnan(p[0].gpus_busy) && p[0].gpus_total == 8);
    free(p);
    /* a day and an hour later: both hours are one point each */
    int64_t later = T0 + 120 * MIN + LOOM_CLUSTER_FINE_NS;
    assert_int_equal(
        loom_store_cluster_append(s, &(loom_cluster_point_t[]){pt(later, 5)}[0], 0, &err), LOOM_OK);
    assert_int_equal(loom_store_cluster_series(s, 0, &p, &n, &err), LOOM_OK);
    assert_int_equal(n, 3);
    assert_int_equal(p[0].time_ns, T0 + 60 * MIN);
    assert_int_equal(p[0].span_ns, 60 * MIN);
    assert_true(p[0].running == 1 && p[1].running == 3 && p[2].running == 5);
    assert_true(isnan(p[1].gpus_busy));
    free(p);
    assert_int_equal(loom_store_cluster_series(s, T0 + 60 * MIN, &p, &n, &err), LOOM_OK);
    assert_int_equal(n, 2); /* since: only those ending after */
    free(p);
    /* past a 2-day window the first two hours are gone */
    assert_int_equal(loom_store_cluster_append(
                         s, &(loom_cluster_point_t[]){pt(later + 2 * LOOM_CLUSTER_FINE_NS, 0)}[0],
                         2 * LOOM_CLUSTER_FINE_NS, &err),
                     LOOM_OK);
    assert_int_equal(loom_store_cluster_series(s, 0, &p, &n, &err), LOOM_OK);
    assert_int_equal(n, 2);
    assert_true(p[0].running == 5);
    free(p);
    loom_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_coarsen_and_window, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
