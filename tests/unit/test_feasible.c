/* The one feasibility test (loom_sched_feasible, src/sched/cluster.c):
 * which requests no node of a cluster could ever hold, what the refusal
 * says, and that the runtime rejects exactly those, with the same words
 * (job.submit's refusal and the runtime's rejection ask the same
 * function; before, loomd's own check read node.list's JSON and could
 * refuse what the runtime would run, "A100|V100", or accept what it would
 * reject). */
#include <math.h>

#include "loom/runtime.h"
#include "test_util.h"

/* a100x4: 32 CPUs, 256 GiB, 4 A100 of 80 GiB; v100x8: 16 CPUs, 128 GiB,
 * 8 V100 (GPU memory not tracked); cpu1: 64 CPUs, 512 GiB. */
static void cluster(loom_sched_cluster_t *c)
{
    loom_sched_cluster_init(c);
    assert_int_equal(
        loom_sched_cluster_add_node(c, "a100x4", 32000, 262144, 4, "A100", 81920, NULL, NULL), 0);
    assert_int_equal(
        loom_sched_cluster_add_node(c, "v100x8", 16000, 131072, 8, "V100", 0, NULL, NULL), 0);
    assert_int_equal(loom_sched_cluster_add_node(c, "cpu1", 64000, 524288, 0, NULL, 0, NULL, NULL),
                     0);
}

static loom_sched_req_t req(const loom_sched_cluster_t *c, int64_t cpus, int64_t mem_gib, int gpus,
                            const char *type, int64_t gmem_gib)
{
    return (loom_sched_req_t){.cpu_milli = cpus * 1000,
                              .mem_mib = mem_gib << 10,
                              .num_gpus = gpus,
                              .gpu_milli = gpus ? LOOM_SCHED_MILLI : 0,
                              .gpu_mem_mib = gpus ? gmem_gib << 10 : 0,
                              .gpu_types = type ? loom_sched_cluster_type_mask(c, type) : 0};
}

static void feasible_requests(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    cluster(&c);
    loom_err_t err;
    assert_int_equal(loom_sched_feasible(&c, &(loom_sched_req_t){0}, NULL, &err), LOOM_OK);
    loom_sched_req_t ok[] = {
        req(&c, 32, 256, 4, "A100", 80),  req(&c, 16, 128, 8, NULL, 0),
        req(&c, 16, 128, 8, "V100", 200),                              /* not tracked there */
        req(&c, 64, 512, 0, NULL, 0),     req(&c, 1, 0, 0, "H100", 0), /* no GPU: type unused */
        req(&c, 1, 0, 8, "A100|V100", 0),                              /* one of two types */
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (loom_sched_feasible(&c, &ok[i], NULL, &err) != LOOM_OK)
            fail_msg("case %zu: %s", i, err.msg);
    /* allocations do not matter: the cluster as if empty */
    loom_sched_alloc_t a;
    uint8_t g[4] = {0, 1, 2, 3};
    loom_sched_req_t all = req(&c, 32, 256, 4, "A100", 80);
    assert_int_equal(loom_sched_alloc(&c, 0, &all, g, 4, &a, &err), LOOM_OK);
    assert_int_equal(loom_sched_feasible(&c, &all, NULL, &err), LOOM_OK);
    loom_sched_cluster_free(&c);
    loom_sched_cluster_init(&c); /* no node at all */
    assert_int_equal(loom_sched_feasible(&c, &ok[3], NULL, &err), LOOM_ELIMIT);
    loom_sched_cluster_free(&c);
}

static const struct refused {
    int64_t cpus, mem;
    int gpus;
    const char *type;
    int64_t gmem;
    loom_sched_lack_t lack;
    const char *msg;
} refused[] = {
    {1, 0, 9, NULL, 0, LOOM_SCHED_LACK_GPUS,
     "gpus: 9 GPUs requested, but the largest node (v100x8) has 8"},
    {1, 0, 5, "A100", 0, LOOM_SCHED_LACK_GPUS,
     "gpus: 5 GPUs requested, but the largest node (a100x4) has 4"},
    {1, 0, 1, "H100", 0, LOOM_SCHED_LACK_GPU_TYPE, "gpu_type: no node has GPUs of the type asked"},
    {65, 0, 0, NULL, 0, LOOM_SCHED_LACK_CPUS,
     "cpus: 65 CPUs requested, but the largest node (cpu1) has 64"},
    {1, 600, 0, NULL, 0, LOOM_SCHED_LACK_MEMORY,
     "memory: 614400 MiB requested, but the largest node (cpu1) has 524288"},
    {1, 0, 1, "A100", 100, LOOM_SCHED_LACK_GPU_MEMORY,
     "gpu_memory: 102400 MiB per GPU requested, but the largest node (a100x4) has 81920"},
    {17, 0, 8, NULL, 0, LOOM_SCHED_LACK_TOGETHER, "no node has all the CPUs, memory and GPUs"},
    {1, 0, 20, NULL, 0, LOOM_SCHED_LACK_GPUS,
     "gpus: 20 GPUs requested, but the largest node (v100x8) has 8"},
};

static void refused_requests(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    cluster(&c);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        const struct refused *k = &refused[i];
        loom_sched_req_t r = req(&c, k->cpus, k->mem, k->gpus, k->type, k->gmem);
        loom_sched_infeasible_t why;
        loom_err_t err;
        int rc = loom_sched_feasible(&c, &r, &why, &err);
        if (rc != LOOM_ELIMIT || !strstr(err.msg, k->msg) || why.lack != k->lack)
            fail_msg("case %zu: rc %d '%s' lack %d, expected '%s'", i, rc, rc ? err.msg : "",
                     (int)why.lack, k->msg);
    }
    loom_sched_cluster_free(&c);
}

typedef struct verdicts {
    uint64_t rejected[32];
    char why[32][LOOM_ERR_MSG_MAX + 32];
    size_t n;
} verdicts_t;

static int record(void *ctx, const loom_runtime_action_t *a)
{
    verdicts_t *v = ctx;
    if (a->kind == LOOM_RUNTIME_REJECT && v->n < 32) {
        v->rejected[v->n] = a->id;
        snprintf(v->why[v->n++], sizeof v->why[0], "%s", a->reason ? a->reason : "");
    }
    return LOOM_OK;
}

/* Every request above, and those that fit, through the runtime: it rejects
 * exactly those loom_sched_feasible refuses, giving its message. */
static void runtime_agrees(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    cluster(&c);
    loom_runtime_t *rt;
    loom_err_t err;
    assert_int_equal(loom_runtime_new(&c, &(loom_runtime_config_t){0}, &rt, &err), LOOM_OK);
    size_t nref = sizeof refused / sizeof refused[0];
    loom_sched_req_t reqs[32];
    size_t n = 0;
    for (size_t i = 0; i < nref; i++) {
        const struct refused *k = &refused[i];
        reqs[n++] = req(&c, k->cpus, k->mem, k->gpus, k->type, k->gmem);
    }
    reqs[n++] = req(&c, 1, 0, 8, "A100|V100", 0);
    reqs[n++] = req(&c, 16, 128, 8, "V100", 200);
    reqs[n++] = req(&c, 64, 512, 0, NULL, 0);
    for (size_t i = 0; i < n; i++) {
        loom_runtime_job_t j = {.id = i + 1, .submit_s = (double)i, .req = reqs[i]};
        assert_int_equal(loom_runtime_submit(rt, &j, &err), LOOM_OK);
    }
    verdicts_t v = {0};
    loom_runtime_step(rt, 100, record, &v);
    assert_int_equal(v.n, nref);
    for (size_t i = 0; i < n; i++) {
        loom_err_t why;
        bool never = loom_sched_feasible(&c, &reqs[i], NULL, &why) != LOOM_OK;
        size_t k = 0;
        while (k < v.n && v.rejected[k] != i + 1)
            k++;
        assert_true(never == (k < v.n));
        if (never && !strstr(v.why[k], why.msg))
            fail_msg("job %zu: rejected with '%s', refused with '%s'", i + 1, v.why[k], why.msg);
    }
    loom_runtime_free(rt);
    loom_sched_cluster_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(feasible_requests),
        cmocka_unit_test(refused_requests),
        cmocka_unit_test(runtime_agrees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
