/* Placement policies on small clusters, with the expected choices worked
 * out by hand in the comments (scores as the published FGD simulator
 * computes them, see docs/scheduling.md). */
#include <math.h>
#include <stdio.h>

#include "test_util.h"

#include "loom/sched.h"

/* n0: 8 CPUs, 2 idle GPUs.
 * n1: 16 CPUs, 2 GPUs; a sharing job (2 CPUs, 600 milli-GPU) on GPU 0, so
 *     GPU 0 has 400 free, GPU 1 1000; 14 CPUs free.
 * n2: 4 CPUs, 1 idle GPU. */
static void cluster_a(loom_sched_cluster_t *c)
{
    loom_sched_cluster_init(c);
    assert_int_equal(loom_sched_cluster_add_node(c, "n0", 8000, 0, 2, "G", 0, NULL, NULL), 0);
    assert_int_equal(loom_sched_cluster_add_node(c, "n1", 16000, 0, 2, "G", 0, NULL, NULL), 0);
    assert_int_equal(loom_sched_cluster_add_node(c, "n2", 4000, 0, 1, "G", 0, NULL, NULL), 0);
    loom_sched_req_t share = {2000, 0, 1, 600, 0, 0};
    uint8_t g0[] = {0};
    assert_int_equal(loom_sched_alloc(c, 1, &share, g0, 1, NULL, NULL), 0);
}

static loom_sched_placer_t *placer(const char *name, loom_sched_cluster_t *c,
                                   const loom_sched_workload_t *w, bool exact)
{
    loom_sched_placer_opts_t o = {7, w, exact, LOOM_SCHED_TIES_FIRST};
    loom_sched_placer_t *p = NULL;
    loom_err_t err;
    int rc = loom_sched_placer_new(name, c, &o, &p, &err);
    if (rc)
        fail_msg("%s", err.msg);
    return p;
}

static int place(const char *name, loom_sched_cluster_t *c, const loom_sched_workload_t *w,
                 bool exact, loom_sched_req_t r, int *gpu)
{
    loom_sched_placer_t *p = placer(name, c, w, exact);
    loom_sched_alloc_t a;
    int rc = loom_sched_place(p, c, &r, &a);
    loom_sched_placer_free(p);
    if (rc)
        return -1;
    if (gpu)
        *gpu = a.ngpus ? a.gpus[0] : -1;
    return a.node;
}

static void test_names(void **state)
{
    (void)state;
    assert_true(loom_sched_place_known("fgd"));
    assert_false(loom_sched_place_known("tetris"));
    loom_sched_cluster_t c;
    cluster_a(&c);
    loom_sched_placer_t *p;
    loom_err_t err;
    assert_int_equal(loom_sched_placer_new("tetris", &c, NULL, &p, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "expected one of"));
    /* FGD without a target workload is refused */
    assert_int_equal(loom_sched_placer_new("fgd", &c, NULL, &p, &err), LOOM_EINVAL);
    loom_sched_cluster_free(&c);
}

static void test_firstfit_and_none(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    cluster_a(&c);
    loom_sched_req_t whole = {1000, 0, 1, 1000, 0, 0};
    assert_int_equal(place("firstfit", &c, NULL, false, whole, NULL), 0);
    loom_sched_req_t huge = {64000, 0, 0, 0, 0, 0};
    assert_int_equal(place("firstfit", &c, NULL, false, huge, NULL), -1);
    loom_sched_cluster_free(&c);
}

/* bestfit, job (2 CPUs, 1 GPU): leftover 0.5*cpu/128 + 0.5*gpu/8 after
 *   n0: 0.5*6/128 + 0.5*1/8   = 0.0859 -> int((1-0.0859)*100) = 91
 *   n1: 0.5*12/128 + 0.5*0.4/8 = 0.0719 -> 92
 *   n2: 0.5*2/128 + 0         = 0.0078 -> 99
 * normalised (s-91)*100/(99-91): n2 = 100 wins. */
static void test_bestfit(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    cluster_a(&c);
    loom_sched_req_t r = {2000, 0, 1, 1000, 0, 0};
    assert_int_equal(place("bestfit", &c, NULL, false, r, NULL), 2);
    assert_int_equal(place("bestfit", &c, NULL, true, r, NULL), 2);
    /* 6 CPUs: n2 cannot; n1 (0.0508+0.025) beats n0 (0.0078+0.0625) */
    r.cpu_milli = 6000;
    assert_int_equal(place("bestfit", &c, NULL, true, r, NULL), 1);
    loom_sched_cluster_free(&c);
}

/* dotprod, job (2 CPUs, 1 GPU): free.req with [cpu/128, gpu/8]
 *   n0: (8/128)(2/128) + (2/8)(1/8)   = 0.03223 -> int(100*(1-0.0161)) = 98
 *   n1: (14/128)(2/128) + (1.4/8)(1/8) = 0.02358 -> 98
 *   n2: (4/128)(2/128) + (1/8)(1/8)   = 0.01611 -> 99   -> n2
 * With exact scores the order is n2 < n1 < n0; without n2, n1 wins (and
 * with integer scores n0, the first of the tied 98s). */
static void test_dotprod(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    cluster_a(&c);
    loom_sched_req_t r = {2000, 0, 1, 1000, 0, 0};
    assert_int_equal(place("dotprod", &c, NULL, false, r, NULL), 2);
    assert_int_equal(place("dotprod", &c, NULL, true, r, NULL), 2);
    r.cpu_milli = 5000; /* n2 cannot */
    assert_int_equal(place("dotprod", &c, NULL, true, r, NULL), 1);
    assert_int_equal(place("dotprod", &c, NULL, false, r, NULL), 0);
    loom_sched_cluster_free(&c);
}

/* packing, share of 300: n1 fits it on its shared GPU 0 (400 free):
 *   100 - (400*100/1000)/10 = 96; idle n0: max(33-2, 2) = 31; idle n2: 32.
 * Whole GPU: n1 must open its idle GPU 1: max(50-1, 33) = 49 > 32 > 31. */
static void test_packing(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    cluster_a(&c);
    int g;
    loom_sched_req_t share = {1000, 0, 1, 300, 0, 0};
    assert_int_equal(place("packing", &c, NULL, false, share, &g), 1);
    assert_int_equal(g, 0); /* smallest free share that fits */
    loom_sched_req_t whole = {1000, 0, 1, 1000, 0, 0};
    assert_int_equal(place("packing", &c, NULL, false, whole, &g), 1);
    assert_int_equal(g, 1);
    /* n1 too small in CPU now: idle n2 (32) beats idle n0 (31) */
    whole.cpu_milli = 3000;
    share.cpu_milli = 15000;
    assert_int_equal(place("packing", &c, NULL, false, share, &g), -1);
    whole.cpu_milli = 4000;
    assert_int_equal(place("packing", &c, NULL, false, whole, &g), 1);
    loom_sched_cluster_free(&c);
}

/* clustering, share job: n1 holds only sharing jobs: 75 + 25*(8000-1400)/8000
 * = 95; idle n0: 25 + 25*6000/8000 = 43; idle n2: 25 + 21 = 46.
 * A 2-GPU job does not fit n1; n0 is the only choice. A 1-GPU job: n1 has
 * another class (band 0: 0 + 20), idle n2 (46) beats idle n0 (43). */
static void test_clustering(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    cluster_a(&c);
    loom_sched_req_t share = {1000, 0, 1, 200, 0, 0};
    assert_int_equal(place("clustering", &c, NULL, false, share, NULL), 1);
    loom_sched_req_t two = {1000, 0, 2, 1000, 0, 0};
    assert_int_equal(place("clustering", &c, NULL, false, two, NULL), 0);
    loom_sched_req_t one = {1000, 0, 1, 1000, 0, 0};
    assert_int_equal(place("clustering", &c, NULL, false, one, NULL), 2);
    loom_sched_cluster_free(&c);
}

static void test_random(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    cluster_a(&c);
    loom_sched_placer_opts_t o = {99, NULL, false, LOOM_SCHED_TIES_FIRST};
    loom_sched_placer_t *p;
    assert_int_equal(loom_sched_placer_new("random", &c, &o, &p, NULL), 0);
    int seen[3] = {0};
    loom_sched_req_t r = {5000, 0, 1, 1000, 0, 0}; /* n2 (4 CPUs) cannot */
    for (int i = 0; i < 300; i++) {
        loom_sched_alloc_t a;
        assert_int_equal(loom_sched_place(p, &c, &r, &a), 0);
        seen[a.node]++;
    }
    assert_int_equal(seen[2], 0);
    assert_true(seen[0] > 100 && seen[1] > 100); /* ~150 each */
    loom_sched_placer_free(p);
    loom_sched_cluster_free(&c);
}

/* FGD, workload: A = (1 CPU, 500 milli) and B = (1 CPU, 1 GPU), 0.5 each.
 * X: 2 idle GPUs, 8 CPUs: frag 0. A on GPU 0 -> [500, 1000]: A sees no GPU
 *    below 500; B sees 500 -> frag 0.5*500 = 250, delta +250.
 * Y: GPUs [700, 1000] (a 300 share on GPU 0), 7 CPUs free: frag = B's 0.5*700
 *    = 350. A on GPU 0 -> [200, 1000]: A 0.5*200 + B 0.5*200 = 200, delta
 *    -150; on GPU 1 -> [700, 500]: A 0 + B 0.5*1200 = 600, delta +250.
 * FGD chooses Y, GPU 0: score int(sigmoid(0.15)*100) = 53 vs X 43. */
static void test_fgd_delta(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    assert_int_equal(loom_sched_cluster_add_node(&c, "X", 8000, 0, 2, "G", 0, NULL, NULL), 0);
    assert_int_equal(loom_sched_cluster_add_node(&c, "Y", 8000, 0, 2, "G", 0, NULL, NULL), 0);
    loom_sched_req_t s300 = {1000, 0, 1, 300, 0, 0};
    uint8_t g0[] = {0}, g1[] = {1};
    assert_int_equal(loom_sched_alloc(&c, 1, &s300, g0, 1, NULL, NULL), 0);
    loom_sched_shape_t shapes[] = {{1000, 1, 500, 0, 0.5}, {1000, 1, 1000, 0, 0.5}};
    loom_sched_workload_t w;
    assert_int_equal(loom_sched_workload_set(&w, shapes, 2, NULL), 0);
    assert_true(fabs(loom_sched_node_frag(&c.nodes[0], &w) - 0) < 1e-9);
    assert_true(fabs(loom_sched_node_frag(&c.nodes[1], &w) - 350) < 1e-9);
    int g;
    loom_sched_req_t a = {1000, 0, 1, 500, 0, 0};
    assert_int_equal(place("fgd", &c, &w, false, a, &g), 1);
    assert_int_equal(g, 0);
    assert_int_equal(place("fgd", &c, &w, true, a, &g), 1);
    assert_int_equal(g, 0);
    /* after taking it, Y's frag is 200 as computed above */
    assert_int_equal(loom_sched_alloc(&c, 1, &a, g0, 1, NULL, NULL), 0);
    assert_true(fabs(loom_sched_node_frag(&c.nodes[1], &w) - 200) < 1e-9);
    (void)g1;
    loom_sched_workload_free(&w);
    loom_sched_cluster_free(&c);
}

/* FGD's GPU choice differs from best fit: workload C = (0 CPU, 300 milli).
 * Z: GPUs [600, 800]. A 500 job: on GPU 0 -> [100, 800]: C sees 100 below
 * 300 -> frag 100; on GPU 1 -> [600, 300]: nothing below 300 -> 0. FGD takes
 * GPU 1; every other policy takes GPU 0 (smallest free share that fits). */
static void test_fgd_gpu_choice(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    assert_int_equal(loom_sched_cluster_add_node(&c, "Z", 8000, 0, 2, "G", 0, NULL, NULL), 0);
    loom_sched_req_t s400 = {0, 0, 1, 400, 0, 0}, s200 = {0, 0, 1, 200, 0, 0};
    uint8_t g0[] = {0}, g1[] = {1};
    assert_int_equal(loom_sched_alloc(&c, 0, &s400, g0, 1, NULL, NULL), 0);
    assert_int_equal(loom_sched_alloc(&c, 0, &s200, g1, 1, NULL, NULL), 0);
    loom_sched_shape_t shapes[] = {{0, 1, 300, 0, 1.0}};
    loom_sched_workload_t w;
    assert_int_equal(loom_sched_workload_set(&w, shapes, 1, NULL), 0);
    int g;
    loom_sched_req_t a = {0, 0, 1, 500, 0, 0};
    assert_int_equal(place("fgd", &c, &w, true, a, &g), 0);
    assert_int_equal(g, 1);
    assert_int_equal(place("bestfit", &c, NULL, true, a, &g), 0);
    assert_int_equal(g, 0);
    loom_sched_workload_free(&w);
    loom_sched_cluster_free(&c);
}

/* GPU memory on shared GPUs (what loomd requests from a model's estimate).
 * M: 2 GPUs of 16 GiB; GPU 0 holds a 300 milli-GPU job with 12 GiB, so it
 * has 700 milli and 4 GiB free. N: 1 idle GPU of 16 GiB. A 200 milli job
 * asking 6 GiB fits GPU 0's share but not its memory: no policy may put it
 * there (without the memory request, the smallest-free-share rule would). */
static void test_shared_gpu_memory(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    assert_int_equal(loom_sched_cluster_add_node(&c, "M", 8000, 0, 2, "G", 16384, NULL, NULL), 0);
    assert_int_equal(loom_sched_cluster_add_node(&c, "N", 8000, 0, 1, "G", 16384, NULL, NULL), 0);
    loom_sched_req_t big = {1000, 0, 1, 300, 12288, 0};
    uint8_t g0[] = {0};
    loom_sched_alloc_t live[4];
    assert_int_equal(loom_sched_alloc(&c, 0, &big, g0, 1, &live[0], NULL), 0);
    loom_sched_shape_t shapes[] = {{1000, 1, 200, 0, 1.0}};
    loom_sched_workload_t w;
    assert_int_equal(loom_sched_workload_set(&w, shapes, 1, NULL), 0);
    const char *names[] = {"firstfit",   "bestfit", "dotprod", "packing",
                           "clustering", "random",  "fgd",     "fgd-cpu"};
    loom_sched_req_t j6 = {1000, 0, 1, 200, 6144, 0}, j0 = j6;
    j0.gpu_mem_mib = 0;
    int g;
    /* without a memory request, first fit shares GPU 0 of M */
    assert_int_equal(place("firstfit", &c, NULL, false, j0, &g), 0);
    assert_int_equal(g, 0);
    assert_int_equal(place("packing", &c, NULL, false, j0, &g), 0);
    assert_int_equal(g, 0);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        for (int exact = 0; exact < 2; exact++) {
            int n = place(names[i], &c, &w, exact, j6, &g);
            if (n < 0 || (n == 0 && g == 0))
                fail_msg("%s: placed the 6 GiB job on node %d GPU %d", names[i], n, g);
        }
    }
    assert_int_equal(place("firstfit", &c, NULL, false, j6, &g), 0); /* M's idle GPU 1 */
    assert_int_equal(g, 1);
    /* more than any GPU has: fits nowhere, for every policy */
    loom_sched_req_t j20 = {1000, 0, 1, 200, 20480, 0};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_int_equal(place(names[i], &c, &w, false, j20, NULL), -1);
    /* two jobs whose memory fits together share N's GPU; a third that fits
     * the share (400 milli left) but not the memory (2 GiB left) waits */
    loom_sched_req_t j7 = {1000, 0, 1, 300, 7168, 0};
    loom_sched_placer_t *p = placer("firstfit", &c, NULL, false);
    loom_sched_alloc_t a;
    for (int k = 1; k <= 2; k++) {
        assert_int_equal(loom_sched_place(p, &c, &j7, &a), LOOM_OK);
        assert_int_equal(loom_sched_alloc(&c, a.node, &a.req, a.gpus, a.ngpus, &live[k], NULL), 0);
    }
    /* first on M GPU 1 (idle; GPU 0 lacks memory), then M GPU 1 again:
     * 14 GiB of its 16 */
    assert_true(live[1].node == 0 && live[1].gpus[0] == 1);
    assert_true(live[2].node == 0 && live[2].gpus[0] == 1);
    assert_int_equal(c.nodes[0].gpu_free[1], 400);
    assert_int_equal(c.nodes[0].gpu_mem_free[1], 2048);
    assert_int_equal(loom_sched_place(p, &c, &j7, &a), LOOM_OK); /* goes elsewhere: N */
    assert_true(a.node == 1 && a.gpus[0] == 0);
    assert_int_equal(loom_sched_alloc(&c, a.node, &a.req, a.gpus, a.ngpus, &live[3], NULL), 0);
    assert_int_equal(loom_sched_cluster_check(&c, live, 4, NULL), LOOM_OK);
    /* N now has 9 GiB free: a fourth 7 GiB job still fits there, a 10 GiB
     * one fits nowhere until a job ends */
    loom_sched_req_t j10 = {1000, 0, 1, 100, 10240, 0};
    assert_int_equal(loom_sched_place(p, &c, &j10, &a), LOOM_ENOTFOUND);
    assert_int_equal(loom_sched_free(&c, &live[0], NULL), 0); /* M GPU 0: 16 GiB free again */
    assert_int_equal(loom_sched_place(p, &c, &j10, &a), LOOM_OK);
    assert_true(a.node == 0 && a.gpus[0] == 0);
    assert_int_equal(loom_sched_cluster_check(&c, live + 1, 3, NULL), LOOM_OK);
    loom_sched_placer_free(p);
    loom_sched_workload_free(&w);
    loom_sched_cluster_free(&c);
}

/* fgd-cpu: workload S = (4 CPUs, 1 GPU), so 4 milli-CPU per milli-GPU.
 * P: 3 GPUs, 12 CPUs; Q: 3 GPUs, 40 CPUs. Job: 5 CPUs, 1 GPU. Both leave
 * S runnable (7 and 35 CPUs >= 4), so FGD's delta is 0 on both and it
 * takes the first, P. Stranded GPUs (free GPU - free CPU / 4): P before
 * 3000 - 3000 = 0, after 2000 - 1750 = 250; Q stays 0. fgd-cpu takes Q. */
static void test_fgd_cpu(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    assert_int_equal(loom_sched_cluster_add_node(&c, "P", 12000, 0, 3, "G", 0, NULL, NULL), 0);
    assert_int_equal(loom_sched_cluster_add_node(&c, "Q", 40000, 0, 3, "G", 0, NULL, NULL), 0);
    loom_sched_shape_t shapes[] = {{4000, 1, 1000, 0, 1.0}};
    loom_sched_workload_t w;
    assert_int_equal(loom_sched_workload_set(&w, shapes, 1, NULL), 0);
    loom_sched_req_t r = {5000, 0, 1, 1000, 0, 0};
    assert_int_equal(place("fgd", &c, &w, false, r, NULL), 0);
    assert_int_equal(place("fgd", &c, &w, true, r, NULL), 0);
    assert_int_equal(place("fgd-cpu", &c, &w, false, r, NULL), 1);
    assert_int_equal(place("fgd-cpu", &c, &w, true, r, NULL), 1);
    loom_sched_workload_free(&w);
    loom_sched_cluster_free(&c);
}

/* The grouped fragmentation model used by the placer agrees with the plain
 * definition, and FGD's cached deltas stay right as nodes change. */
static void test_fgd_cache_consistent(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    for (int i = 0; i < 6; i++) {
        char name[8];
        snprintf(name, sizeof name, "m%d", i);
        assert_int_equal(
            loom_sched_cluster_add_node(&c, name, 32000, 0, 4, i % 2 ? "A" : "B", 0, NULL, NULL),
            0);
    }
    loom_sched_req_t reqs[] = {{4000, 0, 1, 300, 0, 0}, {8000, 0, 1, 1000, 0, 0},
                               {2000, 0, 0, 0, 0, 0},   {6000, 0, 2, 1000, 0, 0},
                               {3000, 0, 1, 700, 0, 0}, {1000, 0, 1, 500, 0, 2}};
    loom_sched_workload_t w;
    assert_int_equal(loom_sched_workload_learn(reqs, 6, 1.0, &w, NULL), 0);
    assert_int_equal(w.nshapes, 6);
    loom_sched_placer_t *cached = placer("fgd", &c, &w, true);
    loom_rng_t rng;
    loom_rng_init(&rng, 5, 0);
    for (int k = 0; k < 40; k++) {
        loom_sched_req_t r = reqs[loom_rng_below(&rng, 6)];
        /* a fresh placer (no cache) must agree with the long-lived one */
        loom_sched_placer_t *fresh = placer("fgd", &c, &w, true);
        loom_sched_alloc_t a, b;
        int rc1 = loom_sched_place(cached, &c, &r, &a);
        int rc2 = loom_sched_place(fresh, &c, &r, &b);
        loom_sched_placer_free(fresh);
        assert_int_equal(rc1, rc2);
        if (rc1)
            continue;
        assert_int_equal(a.node, b.node);
        assert_memory_equal(a.gpus, b.gpus, (size_t)a.ngpus);
        assert_int_equal(loom_sched_alloc(&c, a.node, &r, a.gpus, a.ngpus, NULL, NULL), 0);
    }
    loom_sched_placer_free(cached);
    loom_sched_workload_free(&w);
    loom_sched_cluster_free(&c);
}

/* More distinct job shapes than the per-shape cache holds: still the same
 * choices as a fresh placer. */
static void test_fgd_many_shapes(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    cluster_a(&c);
    loom_sched_shape_t shapes[] = {{1000, 1, 500, 0, 0.5}, {1000, 1, 1000, 0, 0.5}};
    loom_sched_workload_t w;
    assert_int_equal(loom_sched_workload_set(&w, shapes, 2, NULL), 0);
    loom_sched_placer_t *p = placer("fgd", &c, &w, false);
    for (int i = 0; i < 1300; i++) {
        loom_sched_req_t r = {i, 0, 1, 100 + (i % 7) * 100, 0, 0};
        loom_sched_alloc_t a, b;
        assert_int_equal(loom_sched_place(p, &c, &r, &a), 0);
        if (i % 97 == 0) {
            loom_sched_placer_t *fresh = placer("fgd", &c, &w, false);
            assert_int_equal(loom_sched_place(fresh, &c, &r, &b), 0);
            assert_int_equal(a.node, b.node);
            assert_int_equal(a.gpus[0], b.gpus[0]);
            loom_sched_placer_free(fresh);
        }
    }
    loom_sched_placer_free(p);
    loom_sched_workload_free(&w);
    loom_sched_cluster_free(&c);
}

static void test_workload_learn(void **state)
{
    (void)state;
    /* 5 x shape a, 3 x b, 1 x c, 1 x d: 95% needs all; 80% needs a and b */
    loom_sched_req_t a = {1000, 0, 1, 500, 0, 0}, b = {2000, 0, 1, 1000, 0, 0},
                     cc = {0, 0, 0, 0, 0, 0}, d = {0, 0, 8, 1000, 0, 0};
    loom_sched_req_t reqs[] = {a, b, a, cc, a, b, a, d, b, a};
    loom_sched_workload_t w;
    assert_int_equal(loom_sched_workload_learn(reqs, 10, 0.8, &w, NULL), 0);
    assert_int_equal(w.nshapes, 2);
    assert_true(fabs(w.shapes[0].weight - 5.0 / 8) < 1e-12);
    assert_int_equal(w.shapes[0].gpu_milli, 500);
    assert_true(fabs(w.shapes[1].weight - 3.0 / 8) < 1e-12);
    loom_sched_workload_free(&w);
    assert_int_equal(loom_sched_workload_learn(reqs, 10, 0.95, &w, NULL), 0);
    assert_int_equal(w.nshapes, 4);
    loom_sched_workload_free(&w);
    loom_err_t err;
    assert_int_equal(loom_sched_workload_learn(reqs, 0, 0.95, &w, &err), LOOM_EINVAL);
}

static void test_random_ties(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "t%d", i);
        assert_int_equal(loom_sched_cluster_add_node(&c, name, 8000, 0, 1, "G", 0, NULL, NULL), 0);
    }
    loom_sched_req_t r = {1000, 0, 1, 1000, 0, 0};
    int hits[4] = {0};
    for (uint64_t seed = 1; seed <= 200; seed++) {
        loom_sched_placer_opts_t o = {seed, NULL, false, LOOM_SCHED_TIES_RANDOM};
        loom_sched_placer_t *p;
        assert_int_equal(loom_sched_placer_new("bestfit", &c, &o, &p, NULL), 0);
        loom_sched_alloc_t a;
        assert_int_equal(loom_sched_place(p, &c, &r, &a), 0);
        hits[a.node]++;
        loom_sched_placer_free(p);
    }
    for (int i = 0; i < 4; i++)
        assert_true(hits[i] > 20); /* ~50 each */
    loom_sched_cluster_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_firstfit_and_none),
        cmocka_unit_test(test_bestfit),
        cmocka_unit_test(test_dotprod),
        cmocka_unit_test(test_packing),
        cmocka_unit_test(test_clustering),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_fgd_delta),
        cmocka_unit_test(test_fgd_gpu_choice),
        cmocka_unit_test(test_fgd_cpu),
        cmocka_unit_test(test_fgd_cache_consistent),
        cmocka_unit_test(test_fgd_many_shapes),
        cmocka_unit_test(test_workload_learn),
        cmocka_unit_test(test_random_ties),
        cmocka_unit_test(test_shared_gpu_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
