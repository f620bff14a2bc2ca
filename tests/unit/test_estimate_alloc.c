/* The caching-allocator model (src/estimate/alloc.c) against worked
 * examples of PyTorch's CUDACachingAllocator rules (docs/estimate.md). */
#include <stdio.h>

#include "test_util.h"

#include "loom/estimate.h"

#define KiB 1024ull
#define MiB (1024ull * 1024ull)

static void test_rounding_and_segments(void **state)
{
    (void)state;
    assert_int_equal(loom_est_alloc_round(0), 512);
    assert_int_equal(loom_est_alloc_round(1), 512);
    assert_int_equal(loom_est_alloc_round(512), 512);
    assert_int_equal(loom_est_alloc_round(513), 1024);
    assert_int_equal(loom_est_alloc_segment_size(1), 2 * MiB);
    assert_int_equal(loom_est_alloc_segment_size(1 * MiB), 2 * MiB);
    assert_int_equal(loom_est_alloc_segment_size(1 * MiB + 512), 20 * MiB);
    assert_int_equal(loom_est_alloc_segment_size(10 * MiB - 512), 20 * MiB);
    assert_int_equal(loom_est_alloc_segment_size(10 * MiB), 10 * MiB);
    assert_int_equal(loom_est_alloc_segment_size(11 * MiB + 1), 12 * MiB);
}

static void test_worked_example(void **state)
{
    (void)state;
    loom_est_alloc_t *a = loom_est_alloc_new(LOOM_EST_ALLOC_CUDA_CACHING);
    /* 1000 B -> 1024 B block in a new 2 MiB small segment */
    uint64_t h1 = loom_est_alloc_malloc(a, 1000);
    assert_int_equal(loom_est_alloc_allocated(a), 1024);
    assert_int_equal(loom_est_alloc_reserved(a), 2 * MiB);
    /* 3000 B -> 3072 B, split from the same segment */
    uint64_t h2 = loom_est_alloc_malloc(a, 3000);
    assert_int_equal(loom_est_alloc_allocated(a), 4096);
    assert_int_equal(loom_est_alloc_reserved(a), 2 * MiB);
    /* freeing keeps the segment cached */
    loom_est_alloc_release(a, h1);
    loom_est_alloc_release(a, h2);
    assert_int_equal(loom_est_alloc_allocated(a), 0);
    assert_int_equal(loom_est_alloc_reserved(a), 2 * MiB);
    /* a 2 MiB - 512 B request is > 1 MiB: large pool, new 20 MiB segment,
     * even though the small segment is entirely free */
    uint64_t h3 = loom_est_alloc_malloc(a, 3 * MiB / 2);
    assert_int_equal(loom_est_alloc_reserved(a), 22 * MiB);
    /* 5 MiB fits in the 18.5 MiB remainder */
    uint64_t h4 = loom_est_alloc_malloc(a, 5 * MiB);
    assert_int_equal(loom_est_alloc_reserved(a), 22 * MiB);
    /* 15 MiB does not fit the 13.5 MiB left: a new segment of 16 MiB */
    uint64_t h5 = loom_est_alloc_malloc(a, 15 * MiB);
    assert_int_equal(loom_est_alloc_reserved(a), 38 * MiB);
    /* the 1 MiB remainder is not split off (large pool: only > 1 MiB), so
     * the block, and the allocated bytes, are the whole 16 MiB */
    assert_int_equal(loom_est_alloc_allocated(a), 3 * MiB / 2 + 5 * MiB + 16 * MiB);
    /* after freeing it, 14 MiB reuses the cached 16 MiB block (best fit:
     * the 13.5 MiB block is too small), splitting off 2 MiB */
    loom_est_alloc_release(a, h5);
    uint64_t h6 = loom_est_alloc_malloc(a, 14 * MiB);
    assert_int_equal(loom_est_alloc_reserved(a), 38 * MiB);
    /* 2 MiB left of that segment and 13.5 MiB of the first: a 13 MiB
     * request takes the 13.5 MiB block, remainder 0.5 MiB is not split
     * off (large pool splits only remainders > 1 MiB) */
    uint64_t h7 = loom_est_alloc_malloc(a, 13 * MiB);
    assert_int_equal(loom_est_alloc_reserved(a), 38 * MiB);
    assert_int_equal(loom_est_alloc_allocated(a), 3 * MiB / 2 + 5 * MiB + 14 * MiB + 27 * MiB / 2);
    assert_int_equal(loom_est_alloc_peak_reserved(a), 38 * MiB);
    /* frees merge neighbours: everything free again, one request of the
     * whole first segment (20 MiB) fits without a new segment */
    loom_est_alloc_release(a, h3);
    loom_est_alloc_release(a, h4);
    loom_est_alloc_release(a, h7);
    uint64_t h8 = loom_est_alloc_malloc(a, 20 * MiB);
    assert_int_equal(loom_est_alloc_reserved(a), 38 * MiB);
    loom_est_alloc_release(a, h8);
    loom_est_alloc_release(a, h6);
    assert_int_equal(loom_est_alloc_allocated(a), 0);
    assert_int_equal(loom_est_alloc_peak_allocated(a),
                     3 * MiB / 2 + 5 * MiB + 14 * MiB + 27 * MiB / 2);
    loom_est_alloc_free_all(a);
}

static void test_fragmentation(void **state)
{
    (void)state;
    /* 100 blocks of 600 KiB (small pool: 3 per 2 MiB segment), free every
     * other one: 1.2 MiB holes that a 1 MiB request cannot use, because
     * they are not adjacent; it needs... no: a freed 600 KiB block next to
     * another freed one merges. Free blocks 0,1 of segment 0 -> 1200 KiB
     * hole; a 1 MiB request fits there. */
    loom_est_alloc_t *a = loom_est_alloc_new(LOOM_EST_ALLOC_CUDA_CACHING);
    uint64_t h[6];
    for (int i = 0; i < 6; i++)
        h[i] = loom_est_alloc_malloc(a, 600 * KiB);
    assert_int_equal(loom_est_alloc_reserved(a), 4 * MiB);
    loom_est_alloc_release(a, h[0]);
    loom_est_alloc_release(a, h[2]); /* not adjacent to h[0] */
    uint64_t big = loom_est_alloc_malloc(a, 1 * MiB);
    assert_int_equal(loom_est_alloc_reserved(a), 6 * MiB); /* no hole fits */
    loom_est_alloc_release(a, h[1]);                       /* h0+h1+h2 merge: 1800 KiB */
    uint64_t big2 = loom_est_alloc_malloc(a, 1 * MiB);
    assert_int_equal(loom_est_alloc_reserved(a), 6 * MiB);
    loom_est_alloc_release(a, big);
    loom_est_alloc_release(a, big2);
    for (int i = 3; i < 6; i++)
        loom_est_alloc_release(a, h[i]);
    assert_int_equal(loom_est_alloc_allocated(a), 0);
    loom_est_alloc_free_all(a);
}

static void test_malloc_kind(void **state)
{
    (void)state;
    loom_est_alloc_t *a = loom_est_alloc_new(LOOM_EST_ALLOC_MALLOC);
    uint64_t x = loom_est_alloc_malloc(a, 1000), y = loom_est_alloc_malloc(a, 3);
    assert_int_equal(loom_est_alloc_reserved(a), 1003);
    loom_est_alloc_release(a, x);
    assert_int_equal(loom_est_alloc_reserved(a), 3);
    assert_int_equal(loom_est_alloc_peak_reserved(a), 1003);
    loom_est_alloc_release(a, y);
    loom_est_alloc_free_all(a);
}

static void test_device_json(void **state)
{
    (void)state;
    loom_err_t err = {0};
    loom_est_device_t d;
    json_t *j = json_pack("{s:s, s:f, s:f, s:s}", "name", "x", "flops_fp32", 1e12, "mem_bandwidth",
                          1e11, "allocator", "malloc");
    assert_int_equal(loom_est_device_from_json(j, "x.json", &d, &err), LOOM_OK);
    assert_true(d.flops_half == 1e12);
    assert_int_equal(d.allocator, LOOM_EST_ALLOC_MALLOC);
    json_object_set_new(j, "allocator", json_string("jemalloc"));
    assert_int_equal(loom_est_device_from_json(j, "x.json", &d, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "/allocator is 'jemalloc'"));
    json_object_set_new(j, "allocator", json_string("malloc"));
    json_object_set_new(j, "mem_bandwidth", json_real(-1));
    assert_int_equal(loom_est_device_from_json(j, "x.json", &d, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "mem_bandwidth"));
    /* a matmul rate curve: sizes increasing, rates positive */
    json_object_set_new(j, "mem_bandwidth", json_real(1e11));
    json_object_set_new(j, "matmul_curve", json_pack("[[i,f],[i,f]]", 16, 1e10, 256, 1e11));
    assert_int_equal(loom_est_device_from_json(j, "x.json", &d, &err), LOOM_OK);
    assert_int_equal(d.ncurve, 2);
    assert_true(d.curve_dim[1] == 256 && d.curve_flops[0] == 1e10);
    json_object_set_new(j, "matmul_curve", json_pack("[[i,f],[i,f]]", 256, 1e10, 16, 1e11));
    assert_int_equal(loom_est_device_from_json(j, "x.json", &d, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "/matmul_curve/1"));
    json_decref(j);
    /* the shipped H200 description loads by name */
    assert_int_equal(loom_est_device_load("h200", "workloads/devices", &d, &err), LOOM_OK);
    assert_string_equal(d.name, "h200");
    assert_int_equal(d.allocator, LOOM_EST_ALLOC_CUDA_CACHING);
    assert_int_equal(loom_est_device_load("H 200!", "workloads/devices", &d, &err), LOOM_EINVAL);
    assert_int_equal(loom_est_device_load("nonexistent", "workloads/devices", &d, &err),
                     LOOM_ENOTFOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounding_and_segments), cmocka_unit_test(test_worked_example),
        cmocka_unit_test(test_fragmentation),         cmocka_unit_test(test_malloc_kind),
        cmocka_unit_test(test_device_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
