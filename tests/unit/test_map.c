/* loom_map_t (core/map.c): integer and string keys, replace and removal,
 * the walk, overflowing sizes, every allocation failing in turn (the map
 * must be exactly as it was, and nothing leaks: ASan checks at exit), and
 * long random runs against a plain array searched linearly.
 *
 * tests.cmake links this program with -Wl,--wrap=malloc,calloc,realloc so
 * that the Nth allocation of core's code can be made to fail. */
#include "loom/core.h"
#include "test_util.h"

static long alloc_count, fail_at;
static bool wrap_on;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);

static bool fail_now(void)
{
    if (!wrap_on)
        return false;
    return ++alloc_count == fail_at;
}

void *__wrap_malloc(size_t n)
{
    return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    return fail_now() ? NULL : __real_realloc(p, n);
}

static void arm(long n)
{
    alloc_count = 0;
    fail_at = n;
    wrap_on = true;
}

static void disarm(void)
{
    wrap_on = false;
}

static void u64_keys(void **state)
{
    (void)state;
    loom_map_t m = LOOM_MAP_INIT(LOOM_MAP_U64);
    uint64_t v = 7;
    assert_false(loom_map_get_u64(&m, 1, &v)); /* empty: no table yet */
    assert_int_equal(v, 7);
    assert_false(loom_map_del_u64(&m, 1));
    for (uint64_t k = 0; k < 5000; k++)
        assert_int_equal(loom_map_put_u64(&m, k * 0x10000, k + 1), 1);
    assert_int_equal(loom_map_count(&m), 5000);
    assert_int_equal(loom_map_put_u64(&m, 0, 99), 0); /* there: replaced */
    assert_true(loom_map_get_u64(&m, 0, &v));
    assert_int_equal(v, 99);
    assert_true(loom_map_get_u64(&m, 4999 * 0x10000, &v));
    assert_int_equal(v, 5000);
    assert_true(loom_map_get_u64(&m, 3, NULL) == false);
    for (uint64_t k = 0; k < 5000; k += 2)
        assert_true(loom_map_del_u64(&m, k * 0x10000));
    assert_false(loom_map_del_u64(&m, 0));
    assert_int_equal(loom_map_count(&m), 2500);
    for (uint64_t k = 1; k < 5000; k += 2) {
        assert_true(loom_map_get_u64(&m, k * 0x10000, &v));
        assert_int_equal(v, k + 1);
    }
    /* the walk gives every entry once */
    size_t it = 0, seen = 0;
    uint64_t sum = 0;
    loom_map_entry_t e;
    while (loom_map_next(&m, &it, &e)) {
        assert_int_equal(e.val, e.key / 0x10000 + 1);
        assert_null(e.str);
        sum += e.key / 0x10000;
        seen++;
    }
    assert_int_equal(seen, 2500);
    assert_int_equal(sum, 2500u * 2500u); /* 1 + 3 + ... + 4999 */
    assert_false(loom_map_next(&m, &it, &e));
    /* the other kind's calls */
    assert_int_equal(loom_map_put_str(&m, "a", 1), LOOM_EINVAL);
    assert_false(loom_map_get_str(&m, "a", NULL));
    assert_false(loom_map_del_str(&m, "a"));
    /* pointers as values */
    int x;
    assert_int_equal(loom_map_put_u64(&m, UINT64_MAX, loom_map_ptr(&x)), 1);
    assert_true(loom_map_get_u64(&m, UINT64_MAX, &v));
    assert_ptr_equal(loom_map_to_ptr(v), &x);
    loom_map_free(&m);
    assert_int_equal(loom_map_count(&m), 0);
    assert_int_equal(m.kind, LOOM_MAP_U64);
    assert_int_equal(loom_map_put_u64(&m, 1, 2), 1); /* usable again */
    loom_map_free(&m);
}

static void str_keys(void **state)
{
    (void)state;
    loom_map_t m;
    loom_map_init(&m, LOOM_MAP_STR);
    char buf[32];
    snprintf(buf, sizeof buf, "alpha");
    assert_int_equal(loom_map_put_str(&m, buf, 1), 1);
    snprintf(buf, sizeof buf, "beta"); /* the map kept its own copy */
    uint64_t v = 0;
    assert_true(loom_map_get_str(&m, "alpha", &v));
    assert_int_equal(v, 1);
    assert_false(loom_map_get_str(&m, "beta", NULL));
    assert_false(loom_map_get_str(&m, "alph", NULL));
    assert_false(loom_map_get_str(&m, "alphab", NULL));
    assert_int_equal(loom_map_put_str(&m, "", 2), 1); /* the empty string is a key */
    assert_true(loom_map_get_str(&m, "", &v));
    assert_int_equal(v, 2);
    /* bytes: a NUL inside is part of the key */
    assert_int_equal(loom_map_put_bytes(&m, "a\0b", 3, 3), 1);
    assert_int_equal(loom_map_put_bytes(&m, "a\0c", 3, 4), 1);
    assert_true(loom_map_get_bytes(&m, "a\0c", 3, &v));
    assert_int_equal(v, 4);
    assert_false(loom_map_get_str(&m, "a", NULL));
    assert_int_equal(loom_map_put_bytes(&m, NULL, 0, 5), 0); /* the empty key again */
    assert_int_equal(loom_map_put_bytes(&m, NULL, 1, 5), LOOM_EINVAL);
    assert_int_equal(loom_map_put_str(&m, NULL, 5), LOOM_EINVAL);
    assert_int_equal(loom_map_put_u64(&m, 1, 1), LOOM_EINVAL);
    assert_false(loom_map_get_u64(&m, 1, NULL));
    size_t it = 0, seen = 0;
    loom_map_entry_t e;
    while (loom_map_next(&m, &it, &e)) {
        seen++;
        if (e.val == 1)
            assert_string_equal(e.str, "alpha");
        if (e.val == 4)
            assert_memory_equal(e.str, "a\0c", 4); /* NUL-terminated copy */
    }
    assert_int_equal(seen, 4);
    assert_true(loom_map_del_str(&m, "alpha"));
    assert_false(loom_map_del_str(&m, "alpha"));
    assert_false(loom_map_del_str(&m, NULL));
    assert_int_equal(loom_map_count(&m), 3);
    loom_map_free(&m); /* frees the copies: ASan's leak check */
}

/* Overflowing sizes are refused with the map unchanged. */
static void overflow(void **state)
{
    (void)state;
    loom_map_t m = LOOM_MAP_INIT(LOOM_MAP_U64);
    assert_int_equal(loom_map_put_u64(&m, 5, 6), 1);
    loom_map_slot_t *slot = m.slot;
    size_t cap = m.cap;
    assert_int_equal(loom_map_reserve(&m, SIZE_MAX), LOOM_ENOMEM);
    assert_int_equal(loom_map_reserve(&m, SIZE_MAX / 2), LOOM_ENOMEM);
    assert_int_equal(loom_map_reserve(&m, SIZE_MAX / 4 + 1), LOOM_ENOMEM);
    assert_int_equal(loom_map_reserve(&m, SIZE_MAX / sizeof(loom_map_slot_t)), LOOM_ENOMEM);
    assert_ptr_equal(m.slot, slot);
    assert_int_equal(m.cap, cap);
    assert_int_equal(loom_map_count(&m), 1);
    assert_int_equal(loom_map_reserve(&m, 0), LOOM_OK);
    loom_map_free(&m);
    loom_map_t s = LOOM_MAP_INIT(LOOM_MAP_STR);
    assert_int_equal(loom_map_put_bytes(&s, "x", SIZE_MAX, 1), LOOM_ENOMEM); /* no room for NUL */
    assert_int_equal(loom_map_count(&s), 0);
    loom_map_free(&s);
}

/* After loom_map_reserve(n), n puts allocate nothing (U64). */
static void reserve(void **state)
{
    (void)state;
    loom_map_t m = LOOM_MAP_INIT(LOOM_MAP_U64);
    assert_int_equal(loom_map_reserve(&m, 1000), LOOM_OK);
    arm(1); /* the first allocation would fail */
    for (uint64_t k = 0; k < 1000; k++)
        assert_int_equal(loom_map_put_u64(&m, k, k), 1);
    assert_int_equal(alloc_count, 0);
    disarm();
    assert_int_equal(loom_map_put_u64(&m, 1000, 0), 1);
    loom_map_free(&m);
}

/* A steady mix of puts and removals keeps the table small: tombstones are
 * swept, not grown over. */
static void churn(void **state)
{
    (void)state;
    loom_map_t m = LOOM_MAP_INIT(LOOM_MAP_U64);
    for (uint64_t k = 0; k < 100; k++)
        assert_int_equal(loom_map_put_u64(&m, k, k), 1);
    for (uint64_t k = 100; k < 200000; k++) {
        assert_true(loom_map_del_u64(&m, k - 100));
        assert_int_equal(loom_map_put_u64(&m, k, k), 1);
    }
    assert_int_equal(loom_map_count(&m), 100);
    assert_true(m.cap <= 512);
    loom_map_free(&m);
}

/* --------------------------------------------------- against a reference */

typedef struct ref {
    uint64_t key[512];
    char str[512][16];
    uint64_t val[512];
    size_t n;
} ref_t;

static long ref_find(const ref_t *r, bool strk, uint64_t key, const char *s)
{
    for (size_t i = 0; i < r->n; i++)
        if (strk ? strcmp(r->str[i], s) == 0 : r->key[i] == key)
            return (long)i;
    return -1;
}

/* The map holds exactly the reference's entries. */
static void same_as(const loom_map_t *m, const ref_t *r, bool strk)
{
    assert_int_equal(loom_map_count(m), r->n);
    size_t it = 0, seen = 0;
    loom_map_entry_t e;
    while (loom_map_next(m, &it, &e)) {
        long i = ref_find(r, strk, e.key, e.str);
        assert_true(i >= 0);
        assert_int_equal(e.val, r->val[i]);
        if (strk)
            assert_int_equal(e.len, strlen(e.str));
        seen++;
    }
    assert_int_equal(seen, r->n);
}

static void random_run(bool strk, uint64_t seed, bool failing)
{
    loom_rng_t rng;
    loom_rng_init(&rng, seed, strk);
    loom_map_t m = LOOM_MAP_INIT(strk ? LOOM_MAP_STR : LOOM_MAP_U64);
    static ref_t r;
    r.n = 0;
    for (int op = 0; op < 20000; op++) {
        /* a small key space, so that puts replace and removals hit */
        uint64_t key = loom_rng_below(&rng, 400) * UINT64_C(0x9E3779B97F4A7C15);
        char s[16];
        snprintf(s, sizeof s, "k%u", (unsigned)(key % 100000));
        uint64_t val = loom_rng_u64(&rng);
        long at = ref_find(&r, strk, key, s);
        uint64_t got = 0;
        switch (loom_rng_below(&rng, 4)) {
        case 0:
        case 1: {
            if (failing)
                arm((long)loom_rng_below(&rng, 3) + 1); /* one of its first allocations fails */
            int rc = strk ? loom_map_put_str(&m, s, val) : loom_map_put_u64(&m, key, val);
            disarm();
            if (rc == LOOM_ENOMEM) {
                assert_true(failing && at < 0); /* replacing allocates nothing */
                same_as(&m, &r, strk);          /* unchanged */
                break;
            }
            assert_int_equal(rc, at < 0 ? 1 : 0);
            if (at < 0) {
                at = (long)r.n++;
                r.key[at] = key;
                snprintf(r.str[at], sizeof r.str[at], "%s", s);
            }
            r.val[at] = val;
            break;
        }
        case 2: {
            bool had = strk ? loom_map_del_str(&m, s) : loom_map_del_u64(&m, key);
            assert_int_equal(had, at >= 0);
            if (at >= 0) {
                r.n--;
                r.key[at] = r.key[r.n];
                memcpy(r.str[at], r.str[r.n], sizeof r.str[at]);
                r.val[at] = r.val[r.n];
            }
            break;
        }
        default: {
            bool has = strk ? loom_map_get_str(&m, s, &got) : loom_map_get_u64(&m, key, &got);
            assert_int_equal(has, at >= 0);
            if (has)
                assert_int_equal(got, r.val[at]);
        }
        }
        if (op % 997 == 0)
            same_as(&m, &r, strk);
    }
    same_as(&m, &r, strk);
    loom_map_free(&m);
}

static void random_u64(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 5; seed++)
        random_run(false, seed, false);
}

static void random_str(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 5; seed++)
        random_run(true, seed, false);
}

static void random_failing(void **state)
{
    (void)state;
    random_run(false, 11, true);
    random_run(true, 12, true);
}

/* Every allocation of a run of puts fails in turn (the Nth of the run, for
 * every N until a run needs fewer): the refused put leaves the map exactly
 * as it was (same entries, same table), and once memory is back the same
 * put succeeds and the run ends with every entry. */
static void each_allocation_fails(void **state)
{
    (void)state;
    for (int strk = 0; strk < 2; strk++) {
        long n;
        for (n = 1;; n++) {
            loom_map_t m = LOOM_MAP_INIT(strk ? LOOM_MAP_STR : LOOM_MAP_U64);
            bool failed = false;
            arm(n);
            for (uint64_t k = 0; k < 300; k++) {
                char s[16];
                snprintf(s, sizeof s, "key-%u", (unsigned)k);
                loom_map_slot_t *slot = m.slot;
                size_t cap = m.cap, count = m.n, used = m.used;
                int rc = strk ? loom_map_put_str(&m, s, k) : loom_map_put_u64(&m, k, k);
                if (rc == LOOM_ENOMEM) {
                    assert_false(failed);
                    failed = true;
                    assert_ptr_equal(m.slot, slot);
                    assert_int_equal(m.cap, cap);
                    assert_int_equal(m.n, count);
                    assert_int_equal(m.used, used);
                    assert_false(strk ? loom_map_get_str(&m, s, NULL)
                                      : loom_map_get_u64(&m, k, NULL));
                    rc = strk ? loom_map_put_str(&m, s, k) : loom_map_put_u64(&m, k, k);
                }
                assert_int_equal(rc, 1);
            }
            disarm();
            assert_int_equal(loom_map_count(&m), 300);
            for (uint64_t k = 0; k < 300; k++) {
                char s[16];
                snprintf(s, sizeof s, "key-%u", (unsigned)k);
                uint64_t v = 0;
                assert_true(strk ? loom_map_get_str(&m, s, &v) : loom_map_get_u64(&m, k, &v));
                assert_int_equal(v, k);
            }
            loom_map_free(&m);
            if (!failed)
                break; /* the run needed fewer than n allocations: all tried */
        }
        /* U64: a handful of table growths; STR: a copy per key besides */
        assert_true(n > (strk ? 300 : 3));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(u64_keys),
        cmocka_unit_test(str_keys),
        cmocka_unit_test(overflow),
        cmocka_unit_test(reserve),
        cmocka_unit_test(churn),
        cmocka_unit_test(random_u64),
        cmocka_unit_test(random_str),
        cmocka_unit_test(random_failing),
        cmocka_unit_test(each_allocation_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
