/* gen's option rules (loom_gen_check_options): each rule fires on the
 * setting it names and a complete run passes. */
#include "loom/gen.h"
#include "test_util.h"

static void rules(void **state)
{
    (void)state;
    loom_gen_config_t cfg = {.arrivals = {.process = LOOM_GEN_CONSTANT}, .count = 10};
    loom_gen_given_t g = {.catalog = true, .rate = true, .sinks = 1};
    assert_null(loom_gen_check_options(&cfg, &g));

    g.catalog = false;
    assert_string_equal(loom_gen_check_options(&cfg, &g), "--catalog FILE is required");
    g.catalog = true;
    g.rate = false;
    assert_non_null(strstr(loom_gen_check_options(&cfg, &g), "--rate R is required"));
    g.rate = true;
    g.trace = true;
    assert_string_equal(loom_gen_check_options(&cfg, &g), "--trace needs --process trace");
    g.trace = false;
    cfg.count = 0;
    assert_string_equal(loom_gen_check_options(&cfg, &g), "give --count N or --duration D");
    cfg.duration_ns = 1;
    assert_null(loom_gen_check_options(&cfg, &g));
    g.sinks = 2;
    assert_non_null(strstr(loom_gen_check_options(&cfg, &g), "give one sink"));
    g.sinks = 0;

    cfg.arrivals.process = LOOM_GEN_GAMMA;
    assert_string_equal(loom_gen_check_options(&cfg, &g), "--process gamma needs --cv X");
    cfg.arrivals.cv = 0.5;
    assert_null(loom_gen_check_options(&cfg, &g));

    /* a trace paces the run: no rate, count or duration needed */
    cfg = (loom_gen_config_t){.arrivals = {.process = LOOM_GEN_TRACE}};
    g = (loom_gen_given_t){.catalog = true};
    assert_non_null(strstr(loom_gen_check_options(&cfg, &g), "--rate R is required"));
    g.time_scale = true;
    assert_string_equal(loom_gen_check_options(&cfg, &g), "--process trace needs --trace FILE");
    g.trace = true;
    assert_null(loom_gen_check_options(&cfg, &g));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(rules)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
