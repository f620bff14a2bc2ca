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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_brk_growth_and_trim),
        cmocka_unit_test(test_mmap_threshold),
        cmocka_unit_test(test_best_fit),
        cmocka_unit_test(test_tcache_pins_the_top),
        cmocka_unit_test(test_null_and_stale_handles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
