/* The GPU collector against the NVML test double (BUILD/nvml-double/
 * libnvidia-ml.so.1, the tests/nvml scenarios): values and units, per-
 * field NOT_SUPPORTED, MIG instances, process lists grown through
 * INSUFFICIENT_SIZE, per-process utilization with the last-seen timestamp,
 * a device that is lost, a driver that fails to initialise, and no library
 * at all. */
#include <stdio.h>

#include "test_util.h"

#include <math.h>
#include <unistd.h>

#include "loom/mon.h"

static char lib[1024], logpath[256], scen[256];

/* Writes a copy of tests/nvml/NAME with "call_log" set, and points the
 * double at it. */
static void use_scenario(const char *name)
{
    char src[512];
    snprintf(src, sizeof src, "tests/nvml/%s", name);
    json_t *doc;
    loom_err_t e;
    if (loom_json_load_file(src, &doc, &e))
        fail_msg("%s", e.msg);
    snprintf(logpath, sizeof logpath, "/tmp/loom-nvml-log-%d.txt", (int)getpid());
    unlink(logpath);
    json_object_set_new(doc, "call_log", json_string(logpath));
    snprintf(scen, sizeof scen, "/tmp/loom-nvml-scenario-%d.json", (int)getpid());
    assert_int_equal(json_dump_file(doc, scen, 0), 0);
    json_decref(doc);
    setenv("LOOM_NVML_SCENARIO", scen, 1);
}

static int setup(void **st)
{
    (void)st;
    const char *bd = getenv("LOOM_BUILD_DIR");
    snprintf(lib, sizeof lib, "%s/nvml-double/libnvidia-ml.so.1", bd ? bd : "build");
    return access(lib, R_OK) == 0 ? 0 : -1;
}

static int teardown(void **st)
{
    (void)st;
    unlink(logpath);
    unlink(scen);
    return 0;
}

/* Lines of the double's call log that start with fn, in order. */
static int log_lines(const char *fn, char out[][256], int max)
{
    FILE *f = fopen(logpath, "r");
    if (!f)
        return 0;
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < max)
        if (strncmp(line, fn, strlen(fn)) == 0 && line[strlen(fn)] == ' ')
            snprintf(out[n++], 256, "%s", line);
    fclose(f);
    return n;
}

static void test_h200(void **st)
{
    (void)st;
    use_scenario("h200x2.json");
    loom_mon_opts_t o = {.nvml_lib = lib};
    loom_mon_t *m;
    loom_err_t e;
    assert_int_equal(loom_mon_open(&m, &o, &e), LOOM_OK);
    loom_mon_snapshot_t a, b;
    loom_mon_snapshot_init(&a);
    loom_mon_snapshot_init(&b);
    assert_int_equal(loom_mon_read(m, LOOM_MON_GPU, &a, &e), LOOM_OK);
    const loom_mon_gpus_t *g = &a.gpu;
    assert_int_equal(g->source.status, LOOM_OK);
    assert_string_equal(g->driver_version, "550.54.15");
    assert_int_equal(g->n, 3);

    const loom_mon_gpu_t *d = &g->gpus[0];
    assert_int_equal(d->status, 0);
    assert_string_equal(d->name, "NVIDIA H200");
    assert_string_equal(d->uuid, "GPU-11111111-2222-3333-4444-555555555555");
    for (int f = 0; f < LOOM_MON_GPU_NFIELDS; f++)
        assert_int_equal(d->field_status[f], 0);
    assert_int_equal(d->util_gpu_pct, 37);
    assert_int_equal(d->memory_total_bytes, 150754820096ull);
    assert_int_equal(d->memory_used_bytes, 52613349376ull);
    assert_true(d->power_watts == 312.5);        /* mW -> W */
    assert_true(d->energy_joules == 123556.789); /* mJ -> J, one call of +100 J */
    assert_true(d->sm_clock_hz == 1980e6);       /* MHz -> Hz */
    assert_true(d->memory_clock_hz == 3201e6);
    assert_true(d->pcie_rx_bytes_per_second == 2000 * 1024.0); /* KB/s -> B/s */
    assert_int_equal(d->clocks_event_reasons, 4);
    assert_int_equal(d->ecc_corrected, 3);
    assert_int_equal(d->mig_current, 0);
    /* Three compute processes (the list was fetched through
     * INSUFFICIENT_SIZE); one without a memory figure. */
    assert_int_equal(d->n_procs, 3);
    assert_int_equal(d->procs[0].pid, 4242);
    assert_true(d->procs[0].memory_known);
    assert_int_equal(d->procs[0].used_memory_bytes, 42949672960ull);
    assert_false(d->procs[2].memory_known);
    /* Per-process utilization: the newest sample per pid. */
    assert_true(d->procs[0].util_valid);
    assert_int_equal(d->procs[0].sm_util_pct, 60);
    assert_int_equal(d->procs[0].util_timestamp_us, 1700000000200000ull);
    assert_true(d->procs[1].util_valid);
    assert_int_equal(d->procs[1].sm_util_pct, 5);
    assert_false(d->procs[2].util_valid);

    /* Device 1: MIG on, utilization of MIG devices NOT_SUPPORTED (as the
     * real driver), ECC and process utilization NOT_SUPPORTED. */
    d = &g->gpus[1];
    assert_int_equal(d->mig_current, 1);
    assert_int_equal(d->field_status[LOOM_MON_GPU_F_MIG], 0);
    assert_int_equal(d->n_migs, 2);
    assert_string_equal(d->migs[0].uuid, "MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
    assert_int_equal(d->migs[0].memory_status, 0);
    assert_int_equal(d->migs[0].memory_used_bytes, 13631488);
    assert_string_equal(loom_mon_nvml_error_name(d->migs[0].util_status),
                        "NVML_ERROR_NOT_SUPPORTED");
    assert_string_equal(loom_mon_nvml_error_name(d->field_status[LOOM_MON_GPU_F_ECC]),
                        "NVML_ERROR_NOT_SUPPORTED");
    assert_string_equal(loom_mon_nvml_error_name(d->field_status[LOOM_MON_GPU_F_PROC_UTIL]),
                        "NVML_ERROR_NOT_SUPPORTED");
    assert_int_equal(d->field_status[LOOM_MON_GPU_F_POWER], 0);
    /* A deep copy holds its own process and MIG arrays. */
    loom_mon_snapshot_t cp;
    loom_mon_snapshot_init(&cp);
    assert_int_equal(loom_mon_snapshot_copy(&cp, &a, &e), LOOM_OK);
    assert_int_equal(cp.gpu.n, 3);
    assert_true(cp.gpu.gpus[0].procs != a.gpu.gpus[0].procs);
    assert_int_equal(cp.gpu.gpus[0].n_procs, 3);
    assert_int_equal(cp.gpu.gpus[0].procs[0].sm_util_pct, 60);
    assert_string_equal(cp.gpu.gpus[1].migs[1].uuid, "MIG-ffffffff-bbbb-cccc-dddd-eeeeeeeeeeee");
    assert_int_equal(loom_mon_snapshot_copy(&cp, &a, &e), LOOM_OK); /* again: arrays reused */
    assert_int_equal(cp.gpu.gpus[1].n_migs, 2);
    loom_mon_snapshot_free(&cp);
    /* Device 2 answers this reading, and is lost in the next. */
    assert_int_equal(g->gpus[2].status, 0);

    usleep(5000);
    assert_int_equal(loom_mon_read(m, LOOM_MON_GPU, &b, &e), LOOM_OK);
    d = &b.gpu.gpus[0];
    /* No sample newer than the last seen: utilization is absent, not stale. */
    assert_int_equal(d->field_status[LOOM_MON_GPU_F_PROC_UTIL], 0);
    for (size_t i = 0; i < d->n_procs; i++)
        assert_false(d->procs[i].util_valid);
    char lines[8][256];
    int n = log_lines("nvmlDeviceGetProcessUtilization", lines, 8);
    /* Reading 1: count query then fetch, both from 0; reading 2: from the
     * newest timestamp of reading 1 (device 0 only: device 1 refuses). */
    assert_true(n >= 3);
    assert_non_null(strstr(lines[0], "nvmlDeviceGetProcessUtilization 0 last_seen=0 "));
    assert_non_null(strstr(lines[n - 1], "last_seen=1700000000200000 "));
    assert_string_equal(loom_mon_nvml_error_name(b.gpu.gpus[2].status), "NVML_ERROR_GPU_IS_LOST");
    assert_int_equal(b.gpu.gpus[1].status, 0);

    /* Energy rate from two readings: +100 J per reading. */
    loom_mon_rates_t r;
    loom_mon_rates_init(&r);
    assert_int_equal(loom_mon_rates(&a, &b, &r, &e), LOOM_OK);
    assert_int_equal(r.n_gpus, 3);
    assert_true(fabs(r.gpus[0].watts - 100.0 / r.interval_seconds) < 1e-6 * r.gpus[0].watts);
    assert_true(isnan(r.gpus[2].watts));

    /* Renderings: JSON says which fields are unsupported; Prometheus has
     * the values in base units. */
    loom_buf_t buf = LOOM_BUF_INIT;
    assert_int_equal(loom_mon_to_json(&a, NULL, &buf, &e), LOOM_OK);
    json_t *doc;
    assert_int_equal(loom_json_parse(buf.data, buf.len, "gpu", 0, &doc, &e), LOOM_OK);
    json_t *d1 = json_array_get(json_object_get(json_object_get(doc, "gpu"), "devices"), 1);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(d1, "unavailable"), "ecc")),
        "NVML_ERROR_NOT_SUPPORTED");
    assert_true(json_is_null(json_object_get(d1, "ecc_corrected_errors")));
    json_decref(doc);
    loom_buf_reset(&buf);
    assert_int_equal(loom_mon_to_prom(&a, &buf, &e), LOOM_OK);
    assert_non_null(strstr(buf.data, "loom_gpu_power_watts{gpu=\"0\",uuid=\"GPU-11111111-2222-"
                                     "3333-4444-555555555555\"} 312.5\n"));
    assert_non_null(strstr(buf.data, "loom_gpu_process_memory_bytes{gpu=\"0\",pid=\"4242\"} "
                                     "42949672960\n"));
    assert_null(strstr(buf.data, "loom_gpu_ecc_corrected_errors_total{gpu=\"1\""));
    loom_buf_free(&buf);

    loom_mon_rates_free(&r);
    loom_mon_snapshot_free(&a);
    loom_mon_snapshot_free(&b);
    loom_mon_close(m);
}

static void test_no_driver(void **st)
{
    (void)st;
    use_scenario("no_driver.json");
    loom_mon_opts_t o = {.nvml_lib = lib};
    loom_mon_t *m;
    loom_err_t e;
    assert_int_equal(loom_mon_open(&m, &o, &e), LOOM_OK);
    loom_mon_snapshot_t s;
    loom_mon_snapshot_init(&s);
    assert_int_equal(loom_mon_read(m, LOOM_MON_GPU, &s, &e), LOOM_OK);
    assert_int_equal(s.gpu.source.status, LOOM_EUNAVAIL);
    assert_non_null(strstr(s.gpu.source.reason, "NVML_ERROR_DRIVER_NOT_LOADED"));
    assert_int_equal(s.gpu.n, 0);
    loom_mon_snapshot_free(&s);
    loom_mon_close(m);
}

static void test_no_library(void **st)
{
    (void)st;
    loom_mon_opts_t o = {.nvml_lib = "/nonexistent/libnvidia-ml.so.1"};
    loom_mon_t *m;
    loom_err_t e;
    assert_int_equal(loom_mon_open(&m, &o, &e), LOOM_OK);
    loom_mon_snapshot_t s;
    loom_mon_snapshot_init(&s);
    assert_int_equal(loom_mon_read(m, LOOM_MON_GPU, &s, &e), LOOM_OK);
    assert_int_equal(s.gpu.source.status, LOOM_EUNAVAIL);
    assert_non_null(strstr(s.gpu.source.reason, "cannot load /nonexistent/libnvidia-ml.so.1"));
    /* A library that is not NVML (libc here) is refused by name. */
    loom_mon_close(m);
    o.nvml_lib = "libc.so.6";
    assert_int_equal(loom_mon_open(&m, &o, &e), LOOM_OK);
    assert_int_equal(loom_mon_read(m, LOOM_MON_GPU, &s, &e), LOOM_OK);
    assert_int_equal(s.gpu.source.status, LOOM_EUNAVAIL);
    assert_non_null(strstr(s.gpu.source.reason, "lacks nvmlInit_v2"));
    loom_mon_snapshot_free(&s);
    loom_mon_close(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h200),
        cmocka_unit_test(test_no_driver),
        cmocka_unit_test(test_no_library),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
