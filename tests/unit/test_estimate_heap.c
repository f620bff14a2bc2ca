/* The glibc heap model (src/estimate/heap.c): fresh pages of brk growth,
 * mappings above the mmap threshold, the dynamic threshold, trimming with
 * top pad, best fit and the tcache. Every figure is worked out by hand
 * from the rules at the top of heap.c. */
#include "test_util.h"

#include "loom/estimate.h"

#define KIB 1024u

static void test_brk_growth_and_trim(void **state)
{
    (void)state;
    loom_est_heap_t *h = loom_est_heap_new();
    assert_non_null(h);
    /* 100 KiB < the initial mmap threshold (128 KiB): from the heap.
     * chunk 102400 + 8 -> 102416; brk grows by page_up(102416 + 32 +
     * 131072) = 237568; the chunk touches 26 pages = 106496 bytes. */
    uint64_t a = loom_est_heap_malloc(h, 100 * KIB);
    assert_true(a > 0);
    assert_int_equal(loom_est_heap_size(h), 237568);
    assert_int_equal(loom_est_heap_fresh_bytes(h), 106496);
    /* freeing it merges it into the top (237568 >= the trim threshold of
     * 128 KiB): trim to top pad: (237568 - 131072 - 33) rounded down to
     * pages = 102400 released; the heap keeps 135168, still covering the
     * touched 102416 bytes, so the same request again faults nothing */
    loom_est_heap_release(h, a);
    assert_int_equal(loom_est_heap_size(h), 135168);
    a = loom_est_heap_malloc(h, 100 * KIB);
    assert_int_equal(loom_est_heap_fresh_bytes(h), 106496);
    loom_est_heap_release(h, a);
    assert_false(loom_est_heap_failed(h));
    loom_est_heap_free_all(h);
}

static void test_mmap_threshold(void **state)
{
    (void)state;
    loom_est_heap_t *h = loom_est_heap_new();
    /* 1 MiB >= 128 KiB: a mapping of page_up(1048592 + 8) = 1052672,
     * all of it fresh */
    uint64_t a = loom_est_heap_malloc(h, 1024 * KIB);
    assert_int_equal(loom_est_heap_fresh_bytes(h), 1052672);
    assert_int_equal(loom_est_heap_size(h), 0);
    /* unmapping it raises the threshold to 1052672 (trim at twice that) */
    loom_est_heap_release(h, a);
    assert_int_equal(loom_est_heap_mmap_threshold(h), 1052672);
    /* the same request now comes from the heap: brk page_up(1048592 + 32
     * + 131072) = 1183744, touching 257 pages = 1052672 */
    a = loom_est_heap_malloc(h, 1024 * KIB);
    assert_int_equal(loom_est_heap_size(h), 1183744);
    assert_int_equal(loom_est_heap_fresh_bytes(h), 2 * 1052672);
    /* freed, the top (1183744) stays under the trim threshold (2105344):
     * no trim, and the next one is not fresh */
    loom_est_heap_release(h, a);
    assert_int_equal(loom_est_heap_size(h), 1183744);
    a = loom_est_heap_malloc(h, 1024 * KIB);
    assert_int_equal(loom_est_heap_fresh_bytes(h), 2 * 1052672);
    loom_est_heap_release(h, a);
    /* above 32 MiB every request is a fresh mapping, and the threshold
     * does not follow it */
    uint64_t big = 40u << 20;
    for (int i = 0; i < 3; i++) {
        a = loom_est_heap_malloc(h, big);
        loom_est_heap_release(h, a);
    }
    assert_int_equal(loom_est_heap_fresh_bytes(h), 2 * 1052672 + 3 * (big + 4096));
    assert_int_equal(loom_est_heap_mmap_threshold(h), 1052672);
    loom_est_heap_free_all(h);
}

static void test_best_fit(void **state)
{
    (void)state;
    loom_est_heap_t *h = loom_est_heap_new();
    /* raise the threshold to 2 MiB + 4096 so that what follows is heap */
    loom_est_heap_release(h, loom_est_heap_malloc(h, 2048 * KIB));
    uint64_t f0 = loom_est_heap_fresh_bytes(h);
    uint64_t a = loom_est_heap_malloc(h, 200 * KIB), g1 = loom_est_heap_malloc(h, 16 * KIB);
    uint64_t c = loom_est_heap_malloc(h, 300 * KIB), g2 = loom_est_heap_malloc(h, 16 * KIB);
    uint64_t size = loom_est_heap_size(h), fresh = loom_est_heap_fresh_bytes(h);
    assert_true(fresh > f0);
    loom_est_heap_release(h, a);
    loom_est_heap_release(h, c);
    /* 250 KiB fits only the 300 KiB hole; 190 KiB then fits the 200 KiB
     * one (best fit: the 50 KiB rest of the other is too small): neither
     * grows the heap nor touches a new page */
    uint64_t x = loom_est_heap_malloc(h, 250 * KIB), y = loom_est_heap_malloc(h, 190 * KIB);
    assert_int_equal(loom_est_heap_size(h), size);
    assert_int_equal(loom_est_heap_fresh_bytes(h), fresh);
    /* 100 KiB fits no hole left (50 KiB and 10 KiB): the top */
    uint64_t z = loom_est_heap_malloc(h, 100 * KIB);
    assert_true(loom_est_heap_fresh_bytes(h) > fresh);
    loom_est_heap_release(h, x);
    loom_est_heap_release(h, y);
    loom_est_heap_release(h, z);
    loom_est_heap_release(h, g1);
    loom_est_heap_release(h, g2);
    loom_est_heap_free_all(h);
}

static void test_tcache_pins_the_top(void **state)
{
    (void)state;
    /* a small block freed into the tcache stays in use for the heap: the
     * large block below it cannot merge into the top, so no trim; without
     * the small block the large one is trimmed away (as in the first test) */
    for (int pinned = 0; pinned < 2; pinned++) {
        loom_est_heap_t *h = loom_est_heap_new();
        uint64_t big = loom_est_heap_malloc(h, 100 * KIB);
        uint64_t small = pinned ? loom_est_heap_malloc(h, 200) : 0;
        assert_int_equal(loom_est_heap_size(h), 237568);
        loom_est_heap_release(h, small); /* into the tcache */
        loom_est_heap_release(h, big);
        assert_int_equal(loom_est_heap_size(h), pinned ? 237568 : 135168);
        loom_est_heap_free_all(h);
    }
}

static void test_null_and_stale_handles(void **state)
{
    (void)state;
    loom_est_heap_t *h = loom_est_heap_new();
    loom_est_heap_release(h, 0);
    loom_est_heap_release(h, 12345); /* never handed out: ignored */
    uint64_t a = loom_est_heap_malloc(h, 64 * KIB);
    loom_est_heap_release(h, a);
    loom_est_heap_release(h, a); /* twice: ignored */
    assert_false(loom_est_heap_failed(h));
    loom_est_heap_free_all(h);
    loom_est_heap_free_all(NULL);
}

static void test_tunables_parse(void **state)
{
    (void)state;
    loom_est_malloc_cfg_t c;
    loom_err_t err = {0};
    /* nothing set: glibc's defaults, dynamic threshold on */
    assert_int_equal(loom_est_malloc_cfg_parse("", "dev", &c, &err), LOOM_OK);
    assert_int_equal(c.mmap_threshold, 131072);
    assert_int_equal(c.trim_threshold, 131072);
    assert_int_equal(c.top_pad, 131072);
    assert_int_equal(c.mmap_max, 65536);
    assert_false(c.fixed);
    /* decimal and 0x hex; what is not named keeps its default */
    assert_int_equal(loom_est_malloc_cfg_parse("glibc.malloc.mmap_max=0:glibc.malloc."
                                               "trim_threshold=0x7fffffffffffffff:glibc.malloc."
                                               "top_pad=4096",
                                               "dev", &c, &err),
                     LOOM_OK);
    assert_int_equal(c.mmap_max, 0);
    assert_int_equal(c.trim_threshold, 0x7fffffffffffffffull);
    assert_int_equal(c.top_pad, 4096);
    assert_int_equal(c.mmap_threshold, 131072);
    assert_true(c.fixed);
    assert_int_equal(
        loom_est_malloc_cfg_parse("glibc.malloc.mmap_threshold=33554432", "dev", &c, &err),
        LOOM_OK);
    assert_int_equal(c.mmap_threshold, 33554432);
    /* errors name the place, the tunable and what was expected */
    assert_int_equal(
        loom_est_malloc_cfg_parse("glibc.malloc.arena_max=2", "dev /malloc_tunables", &c, &err),
        LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "dev /malloc_tunables: 'glibc.malloc.arena_max=2'"));
    assert_non_null(strstr(err.msg, "glibc.malloc.mmap_max"));
    assert_int_equal(loom_est_malloc_cfg_parse("glibc.malloc.top_pad", "dev", &c, &err),
                     LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "NAME=VALUE"));
    assert_int_equal(loom_est_malloc_cfg_parse("glibc.malloc.top_pad=12k", "dev", &c, &err),
                     LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "glibc.malloc.top_pad: value '12k'"));
    assert_int_equal(loom_est_malloc_cfg_parse("glibc.malloc.mmap_max=", "dev", &c, &err),
                     LOOM_EINVAL);
    assert_int_equal(
        loom_est_malloc_cfg_parse("glibc.malloc.mmap_max=18446744073709551616", "dev", &c, &err),
        LOOM_EINVAL);
    /* glibc ignores a threshold above 32 MiB: refused rather than misread */
    assert_int_equal(
        loom_est_malloc_cfg_parse("glibc.malloc.mmap_threshold=33554433", "dev", &c, &err),
        LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "above glibc's maximum"));
}

static void test_retaining_heap(void **state)
{
    (void)state;
    loom_est_malloc_cfg_t c;
    loom_err_t err = {0};
    assert_int_equal(loom_est_malloc_cfg_parse("glibc.malloc.mmap_max=0:glibc.malloc."
                                               "trim_threshold=0x7fffffffffffffff",
                                               "dev", &c, &err),
                     LOOM_OK);
    loom_est_heap_t *h = loom_est_heap_new_cfg(&c);
    assert_non_null(h);
    /* 1 MiB, no mapping allowed: from the heap. chunk 1048592; brk grows
     * by page_up(1048592 + 32 + 131072) = 1183744; 257 pages touched */
    uint64_t a = loom_est_heap_malloc(h, 1024 * KIB);
    assert_int_equal(loom_est_heap_size(h), 1183744);
    assert_int_equal(loom_est_heap_fresh_bytes(h), 1052672);
    /* freed: never trimmed, and the mmap threshold stays (no dynamic
     * threshold once a tunable is set) */
    loom_est_heap_release(h, a);
    assert_int_equal(loom_est_heap_size(h), 1183744);
    assert_int_equal(loom_est_heap_mmap_threshold(h), 131072);
    /* 40 MiB, which the defaults would map afresh every time: the heap
     * grows once by page_up(41943056 + 32 + 131072 - 1183744) = 40894464
     * (the free top counts) and touches page_up(41943056) = 41943040 +
     * 4096 bytes from 0, of which 1052672 were touched already */
    uint64_t big = 40u << 20;
    for (int i = 0; i < 3; i++) {
        a = loom_est_heap_malloc(h, big);
        loom_est_heap_release(h, a);
    }
    assert_int_equal(loom_est_heap_size(h), 1183744 + 40894464);
    assert_int_equal(loom_est_heap_fresh_bytes(h), 41947136);
    loom_est_heap_free_all(h);
}

static void test_fixed_threshold_and_mmap_max(void **state)
{
    (void)state;
    loom_est_malloc_cfg_t c;
    loom_err_t err = {0};
    assert_int_equal(loom_est_malloc_cfg_parse("glibc.malloc.mmap_threshold=65536:glibc.malloc."
                                               "mmap_max=1:glibc.malloc.top_pad=0",
                                               "dev", &c, &err),
                     LOOM_OK);
    loom_est_heap_t *h = loom_est_heap_new_cfg(&c);
    /* 200000 B >= 65536: mapped, page_up(200016 + 8) = 200704 fresh */
    uint64_t a = loom_est_heap_malloc(h, 200000);
    assert_int_equal(loom_est_heap_fresh_bytes(h), 200704);
    assert_int_equal(loom_est_heap_size(h), 0);
    /* a second one while the first is mapped: mmap_max 1 is reached, so
     * the heap: brk page_up(200016 + 32 + 0) = 200704, 49 pages touched */
    uint64_t b = loom_est_heap_malloc(h, 200000);
    assert_int_equal(loom_est_heap_size(h), 200704);
    assert_int_equal(loom_est_heap_fresh_bytes(h), 2 * 200704);
    /* unmapping the first leaves the threshold at 65536 (fixed) */
    loom_est_heap_release(h, a);
    assert_int_equal(loom_est_heap_mmap_threshold(h), 65536);
    loom_est_heap_release(h, b);
    loom_est_heap_free_all(h);
    /* a zeroed configuration (fixed false) means glibc's defaults */
    loom_est_malloc_cfg_t zero = {0};
    h = loom_est_heap_new_cfg(&zero);
    assert_int_equal(loom_est_heap_mmap_threshold(h), 131072);
    loom_est_heap_free_all(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_brk_growth_and_trim),
        cmocka_unit_test(test_mmap_threshold),
        cmocka_unit_test(test_best_fit),
        cmocka_unit_test(test_tcache_pins_the_top),
        cmocka_unit_test(test_null_and_stale_handles),
        cmocka_unit_test(test_tunables_parse),
        cmocka_unit_test(test_retaining_heap),
        cmocka_unit_test(test_fixed_threshold_and_mmap_max),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
