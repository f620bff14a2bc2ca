/* A job's usage summary (src/daemon/jobusage_summary.c): GPU means and
 * peaks against the request, CPU efficiency as seff computes it (from the
 * outcome once the job ended), and the hints: a job that asked for 4 GPUs
 * and kept 3 idle, 8 CPUs and used one, 64 GiB and touched 2. A job that
 * used what it asked for gets no hint. */
#include <math.h>
#include <string.h>

#include "daemon/jobusage.h"
#include "test_util.h"

#define GIB (1024.0 * 1024 * 1024)

/* n one-second points, GPU 0 busy at util %, GPUs 1-3 idle. */
static loom_usage_point_t *series(size_t n, double cpu, double util, int ngpus)
{
    loom_usage_point_t *p = calloc(n, sizeof *p);
    for (size_t i = 0; i < n; i++) {
        p[i].time_ns = (int64_t)(i + 1) * LOOM_NS_PER_S;
        p[i].span_ns = LOOM_NS_PER_S;
        p[i].cpu_cores = cpu;
        p[i].memory_bytes = p[i].memory_peak_bytes = 2 * GIB;
        p[i].read_bytes_per_second = p[i].write_bytes_per_second = NAN;
        p[i].ngpus = ngpus;
        for (int g = 0; g < ngpus; g++) {
            double u = g == 0 ? util * (double)(i % 2) * 2 : 0; /* 0, 2u, 0, 2u: mean u */
            p[i].gpus[g] = (loom_usage_gpu_t){.index = g,
                                              .util_pct = u,
                                              .util_peak_pct = u,
                                              .memory_bytes = g == 0 ? 40 * GIB : 0,
                                              .memory_peak_bytes = g == 0 ? 40 * GIB : 0,
                                              .power_watts = NAN};
        }
    }
    return p;
}

static bool has_hint(const json_t *s, const char *text)
{
    const json_t *h;
    size_t i;
    json_array_foreach(json_object_get(s, "hints"), i, h)
    {
        if (strstr(json_string_value(h), text))
            return true;
    }
    return false;
}

static double num(const json_t *o, const char *a, const char *b)
{
    return json_number_value(json_object_get(json_object_get(o, a), b));
}

static void test_over_asked(void **state)
{
    (void)state;
    loom_job_t job = {.id = 1, .cpus = 8, .memory_bytes = (uint64_t)(64 * GIB), .gpus = 4};
    loom_usage_point_t *p = series(10, 1.0, 30, 4);
    json_t *s = loomd_usage_summary(&job, p, 10);
    assert_non_null(s);
    assert_true(fabs(num(s, "gpus", "util_mean_percent") - 30.0 / 4) < 1e-9); /* over 4 GPUs */
    assert_true(num(s, "gpus", "util_peak_percent") == 60);
    assert_true(num(s, "gpus", "memory_peak_bytes") == 40 * GIB);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(s, "gpus"), "used")), 1);
    assert_true(fabs(num(s, "cpu", "efficiency") - 1.0 / 8) < 1e-9);
    assert_true(has_hint(s, "asked for 4 GPUs, used 1"));
    assert_true(has_hint(s, "asked for 8 CPUs, used 1.00 on average"));
    assert_true(has_hint(s, "asked for 64.0 GiB of memory, used at most 2.00 GiB"));
    json_decref(s);
    free(p);
}

static void test_outcome_efficiency(void **state)
{
    (void)state;
    /* ended: seff's figure is the outcome's CPU time over cores x elapsed */
    char run[] = "{\"outcome\": {\"cpu_user_s\": 30.0, \"cpu_sys_s\": 10.0}}";
    loom_job_t job = {.id = 1,
                      .cpus = 2,
                      .gpus = 1,
                      .start_time_ns = 100 * LOOM_NS_PER_S,
                      .end_time_ns = 140 * LOOM_NS_PER_S,
                      .run_json = run};
    loom_usage_point_t *p = series(4, 0.1, 50, 1);
    json_t *s = loomd_usage_summary(&job, p, 4);
    assert_true(fabs(num(s, "cpu", "efficiency") - 40.0 / (2 * 40)) < 1e-9);
    assert_int_equal(json_array_size(json_object_get(s, "hints")), 0); /* used what it asked */
    json_decref(s);
    assert_null(loomd_usage_summary(&job, p, 0));
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_over_asked),
        cmocka_unit_test(test_outcome_efficiency),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
