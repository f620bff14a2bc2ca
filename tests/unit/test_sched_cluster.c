/* sched cluster model: allocate/free never over-commit, GPU shares are
 * conserved, the consistency check catches corruption. */
#include <stdio.h>

#include "test_util.h"

#include "loom/sched.h"

static void two_nodes(loom_sched_cluster_t *c)
{
    loom_sched_cluster_init(c);
    assert_int_equal(
        loom_sched_cluster_add_node(c, "a", 8000, 65536, 2, "V100", 16384, "rack=1", NULL),
        LOOM_OK);
    assert_int_equal(loom_sched_cluster_add_node(c, "b", 4000, 32768, 0, NULL, 0, NULL, NULL),
                     LOOM_OK);
}

static void test_add_and_types(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    two_nodes(&c);
    assert_int_equal(c.nnodes, 2);
    assert_int_equal(c.gpu_milli_total, 2000);
    assert_int_equal(c.cpu_milli_total, 12000);
    assert_int_equal(c.ntypes, 1);
    assert_string_equal(c.nodes[0].labels, "rack=1");
    assert_int_equal(c.nodes[1].gpu_type, -1);
    assert_int_equal(loom_sched_cluster_type_mask(&c, "V100"), 1);
    assert_int_equal(loom_sched_cluster_type_mask(&c, ""), 0);
    assert_true(loom_sched_cluster_type_mask(&c, "A100|V100") & LOOM_SCHED_TYPE_UNKNOWN);
    assert_true(loom_sched_cluster_type_mask(&c, "A100|V100") & 1);
    loom_err_t err;
    assert_int_equal(loom_sched_cluster_add_node(&c, "x", 1, 1, 17, "T4", 0, NULL, &err),
                     LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "17 GPUs"));
    loom_sched_cluster_free(&c);
}

static void test_validate(void **state)
{
    (void)state;
    loom_err_t err;
    loom_sched_req_t r = {1000, 0, 2, 500, 0, 0};
    assert_int_equal(loom_sched_req_validate(&r, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "one GPU"));
    r = (loom_sched_req_t){1000, 0, 0, 300, 0, 0};
    assert_int_equal(loom_sched_req_validate(&r, &err), LOOM_EINVAL);
    r = (loom_sched_req_t){1000, 0, 1, 0, 2048, 0}; /* GPU memory only */
    assert_int_equal(loom_sched_req_validate(&r, &err), LOOM_OK);
    r = (loom_sched_req_t){-1, 0, 0, 0, 0, 0};
    assert_int_equal(loom_sched_req_validate(&r, &err), LOOM_EINVAL);
}

static void test_share_and_overcommit(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    two_nodes(&c);
    loom_err_t err;
    loom_sched_alloc_t live[4];
    uint8_t g0[] = {0};
    loom_sched_req_t half = {2000, 1024, 1, 600, 4096, 0};
    assert_int_equal(loom_sched_alloc(&c, 0, &half, g0, 1, &live[0], &err), LOOM_OK);
    assert_int_equal(c.nodes[0].gpu_free[0], 400);
    assert_int_equal(c.nodes[0].gpu_mem_free[0], 12288);
    /* a second 600 on GPU 0 would over-commit it: refused, nothing changes */
    assert_int_equal(loom_sched_alloc(&c, 0, &half, g0, 1, NULL, &err), LOOM_ESTATE);
    assert_int_equal(c.nodes[0].gpu_free[0], 400);
    assert_int_equal(c.nodes[0].cpu_free, 6000);
    /* 400 fits on GPU 0 next to it: two jobs share one GPU */
    loom_sched_req_t small = {1000, 0, 1, 400, 0, 0};
    assert_int_equal(loom_sched_alloc(&c, 0, &small, g0, 1, &live[1], &err), LOOM_OK);
    assert_int_equal(c.nodes[0].gpu_free[0], 0);
    assert_int_equal(c.gpu_milli_used, 1000);
    /* GPU 1 has the memory limit: 16 GiB, 20 GiB asked */
    uint8_t g1[] = {1};
    loom_sched_req_t big = {0, 0, 1, 100, 20480, 0};
    assert_int_equal(loom_sched_alloc(&c, 0, &big, g1, 1, NULL, &err), LOOM_ESTATE);
    /* CPU over-commit refused on the CPU node */
    loom_sched_req_t cpu = {5000, 0, 0, 0, 0, 0};
    assert_int_equal(loom_sched_alloc(&c, 1, &cpu, NULL, 0, NULL, &err), LOOM_ESTATE);
    cpu.cpu_milli = 4000;
    assert_int_equal(loom_sched_alloc(&c, 1, &cpu, NULL, 0, &live[2], &err), LOOM_OK);
    assert_int_equal(loom_sched_cluster_check(&c, live, 3, &err), LOOM_OK);
    /* the check sees an allocation the nodes do not reflect */
    live[3] = live[1];
    assert_int_equal(loom_sched_cluster_check(&c, live, 4, &err), LOOM_EINTERNAL);
    /* free everything: back to the empty state, and a double free is refused */
    for (int i = 0; i < 3; i++)
        assert_int_equal(loom_sched_free(&c, &live[i], &err), LOOM_OK);
    assert_int_equal(loom_sched_free(&c, &live[0], &err), LOOM_ESTATE);
    assert_int_equal(c.gpu_milli_used, 0);
    assert_int_equal(c.nodes[0].gpu_free[0], 1000);
    assert_int_equal(c.nodes[0].gpu_mem_free[0], 16384);
    assert_int_equal(loom_sched_cluster_check(&c, live, 0, &err), LOOM_OK);
    loom_sched_cluster_free(&c);
}

static void test_whole_gpus_and_type(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    two_nodes(&c);
    loom_err_t err;
    loom_sched_req_t two = {1000, 0, 2, 1000, 0, loom_sched_cluster_type_mask(&c, "V100")};
    assert_true(loom_sched_fits(&c.nodes[0], &two));
    assert_false(loom_sched_fits(&c.nodes[1], &two));
    uint8_t dup[] = {1, 1};
    assert_int_equal(loom_sched_alloc(&c, 0, &two, dup, 2, NULL, &err), LOOM_EINVAL);
    two.gpu_types = loom_sched_cluster_type_mask(&c, "T4");
    assert_false(loom_sched_fits(&c.nodes[0], &two));
    uint8_t gs[] = {0, 1};
    assert_int_equal(loom_sched_alloc(&c, 0, &two, gs, 2, NULL, &err), LOOM_ESTATE);
    two.gpu_types = 0;
    loom_sched_alloc_t a;
    assert_int_equal(loom_sched_alloc(&c, 0, &two, gs, 2, &a, &err), LOOM_OK);
    assert_int_equal(c.nodes[0].class_count[LOOM_SCHED_CLASS_2], 1);
    assert_int_equal(loom_sched_node_gpus_idle(&c.nodes[0]), 0);
    /* corrupt a node by hand: the check names it */
    c.nodes[0].gpu_free[1] = -5;
    assert_int_equal(loom_sched_cluster_check(&c, NULL, 0, &err), LOOM_EINTERNAL);
    assert_non_null(strstr(err.msg, "node a GPU 1"));
    c.nodes[0].gpu_free[1] = 0;
    loom_sched_cluster_t copy;
    assert_int_equal(loom_sched_cluster_copy(&copy, &c, &err), LOOM_OK);
    assert_int_equal(loom_sched_free(&copy, &a, &err), LOOM_OK);
    assert_int_equal(c.gpu_milli_used, 2000); /* the original is untouched */
    loom_sched_cluster_reset(&c);
    assert_int_equal(c.gpu_milli_used, 0);
    assert_int_equal(loom_sched_cluster_check(&c, NULL, 0, &err), LOOM_OK);
    loom_sched_cluster_free(&copy);
    loom_sched_cluster_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_and_types),
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_share_and_overcommit),
        cmocka_unit_test(test_whole_gpus_and_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
