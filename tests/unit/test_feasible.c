/* Submission-time feasibility (src/daemon/feasible.c): which requests no
 * node of a cluster could ever hold, and what the refusal says. */
#include "daemon/feasible.h"
#include "test_util.h"

static json_t *cluster(void)
{
    return json_pack("[{s:s, s:I, s:I, s:i, s:s, s:I}, {s:s, s:I, s:I, s:i, s:s, s:I},"
                     " {s:s, s:I, s:I, s:i, s:n, s:I}]",
                     "name", "a100x4", "cpu_milli", (json_int_t)32000, "memory_bytes",
                     (json_int_t)256 << 30, "gpu_count", 4, "gpu_type", "A100", "gpu_memory_bytes",
                     (json_int_t)80 << 30, "name", "v100x8", "cpu_milli", (json_int_t)16000,
                     "memory_bytes", (json_int_t)128 << 30, "gpu_count", 8, "gpu_type", "V100",
                     "gpu_memory_bytes", (json_int_t)0, "name", "cpu1", "cpu_milli",
                     (json_int_t)64000, "memory_bytes", (json_int_t)512 << 30, "gpu_count", 0,
                     "gpu_type", "gpu_memory_bytes", (json_int_t)0);
}

static int check(json_t *nodes, int64_t cpus, uint64_t mem_gib, int64_t gpus, const char *type,
                 uint64_t gmem_gib, loom_err_t *err)
{
    loom_job_spec_t s;
    loom_job_spec_init(&s);
    s.cpus = cpus;
    s.memory_bytes = mem_gib << 30;
    s.gpus = gpus;
    s.gpu_type = type;
    s.gpu_memory_bytes = gmem_gib << 30;
    json_t *data = NULL;
    int rc = loomd_feasible(nodes, &s, err, &data);
    assert_true(rc == LOOM_OK ? data == NULL : data != NULL);
    json_decref(data);
    return rc;
}

static void feasible_requests(void **state)
{
    (void)state;
    json_t *n = cluster();
    loom_err_t err;
    assert_int_equal(check(n, 32, 256, 4, "A100", 80, &err), LOOM_OK);
    assert_int_equal(check(n, 16, 128, 8, NULL, 0, &err), LOOM_OK);
    assert_int_equal(check(n, 16, 128, 8, "V100", 200, &err), LOOM_OK); /* not tracked there */
    assert_int_equal(check(n, 64, 512, 0, NULL, 0, &err), LOOM_OK);
    assert_int_equal(check(n, 1, 0, 0, "H100", 0, &err), LOOM_OK); /* no GPU: type unused */
    json_t *empty = json_array();
    assert_int_equal(check(empty, 4096, 0, 1024, "X", 0, &err), LOOM_OK); /* nothing known */
    json_decref(empty);
    json_decref(n);
}

static void refused_requests(void **state)
{
    (void)state;
    static const struct {
        int64_t cpus;
        uint64_t mem;
        int64_t gpus;
        const char *type;
        uint64_t gmem;
        const char *msg;
    } cases[] = {
        {1, 0, 9, NULL, 0, "resources.gpus: 9 GPUs requested, but the largest node (v100x8) has 8"},
        {1, 0, 5, "A100", 0,
         "resources.gpus: 5 GPUs requested of type A100, but the largest node (a100x4) has 4"},
        {1, 0, 1, "H100", 0, "resources.gpu_type: no node has GPUs of type 'H100'"},
        {65, 0, 0, NULL, 0,
         "resources.cpus: 65 CPUs requested, but the largest node (cpu1) "
         "has 64"},
        {1, 600, 0, NULL, 0,
         "resources.memory: 614400 MiB requested, but the largest node "
         "(cpu1) has 524288"},
        {1, 0, 1, "A100", 100,
         "resources.gpu_memory: 102400 MiB per GPU requested of type "
         "A100, but the largest node (a100x4) has 81920"},
        {33, 0, 8, NULL, 0, "resources: no node has all of 33 CPUs, 8 GPUs"},
    };
    json_t *n = cluster();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        loom_err_t err;
        int rc = check(n, cases[i].cpus, cases[i].mem, cases[i].gpus, cases[i].type, cases[i].gmem,
                       &err);
        if (rc != LOOM_ELIMIT || !strstr(err.msg, cases[i].msg))
            fail_msg("case %zu: rc %d '%s', expected '%s'", i, rc, rc ? err.msg : "", cases[i].msg);
    }
    json_decref(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(feasible_requests),
        cmocka_unit_test(refused_requests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
