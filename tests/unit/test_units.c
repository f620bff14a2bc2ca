#include <math.h>
#include <stdio.h>

#include "loom/core.h"
#include "test_util.h"

static void sizes_accepted(void **state)
{
    static const struct {
        const char *text;
        uint64_t bytes;
    } cases[] = {
        {"0", 0},
        {"4096", 4096},
        {"512B", 512},
        {"1K", 1024},
        {"1KiB", 1024},
        {"1kib", 1024},
        {"512M", 512ULL << 20},
        {"512Mi", 512ULL << 20},
        {"16GiB", 16ULL << 30},
        {"16G", 16ULL << 30},
        {"2T", 2ULL << 40},
        {"1.5GiB", 3ULL << 29},
        {"10kB", 10000},
        {"3MB", 3000000},
        {"1GB", 1000000000},
        {"0.5K", 512},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t b = 12345;
        loom_err_t err;
        int rc = loom_parse_size(cases[i].text, &b, &err);
        if (rc != LOOM_OK)
            fail_msg("'%s': %s", cases[i].text, err.msg);
        assert_int_equal(b, cases[i].bytes);
    }
}

static void sizes_rejected(void **state)
{
    static const char *bad[] = {"",
                                "GiB",
                                "-1",
                                "1 GiB",
                                "1X",
                                "1GiBs",
                                "1.2.3",
                                "0x10",
                                "1e3",
                                "99999999999999999999",
                                "17179869184GiB",
                                "16EiB",
                                "nan"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t b = 7;
        loom_err_t err;
        if (loom_parse_size(bad[i], &b, &err) != LOOM_EINVAL)
            fail_msg("'%s' was accepted as %llu", bad[i], (unsigned long long)b);
        assert_int_equal(b, 7); /* output untouched on error */
        assert_non_null(strstr(err.msg, "size '"));
    }
}

static void durations(void **state)
{
    static const struct {
        const char *text;
        int64_t ns;
    } cases[] = {
        {"90s", 90 * LOOM_NS_PER_S},
        {"90", 90 * LOOM_NS_PER_S},
        {"1h30m", 5400 * LOOM_NS_PER_S},
        {"1h30m15s", 5415 * LOOM_NS_PER_S},
        {"500ms", 500 * LOOM_NS_PER_MS},
        {"250us", 250 * LOOM_NS_PER_US},
        {"1.5h", 5400 * LOOM_NS_PER_S},
        {"2d", 172800 * LOOM_NS_PER_S},
        {"10min", 600 * LOOM_NS_PER_S},
        {"01:00:00", 3600 * LOOM_NS_PER_S},
        {"100:00:00", 360000 * LOOM_NS_PER_S},
        {"05:30", 330 * LOOM_NS_PER_S},
        {"1-12:00:00", 129600 * LOOM_NS_PER_S},
        {"1-12", 129600 * LOOM_NS_PER_S},
        {"0s", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t ns = -1;
        loom_err_t err;
        if (loom_parse_duration(cases[i].text, &ns, &err) != LOOM_OK)
            fail_msg("'%s': %s", cases[i].text, err.msg);
        if (ns != cases[i].ns)
            fail_msg("'%s': got %lld ns, want %lld", cases[i].text, (long long)ns,
                     (long long)cases[i].ns);
    }
    static const char *bad[] = {"",    "h",  "1x",  "1h 30m", "1:2:3:4", "01:60:00", "00:61",
                                "-5s", "1-", ":30", "1h30",   "abc",     "1-2-3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ns = 7;
        loom_err_t err;
        if (loom_parse_duration(bad[i], &ns, &err) != LOOM_EINVAL)
            fail_msg("'%s' was accepted as %lld", bad[i], (long long)ns);
        assert_non_null(strstr(err.msg, "duration '"));
    }
}

static void rates(void **state)
{
    static const struct {
        const char *text;
        double per_s;
    } cases[] = {
        {"10/s", 10},   {"600/min", 10}, {"2.5/h", 2.5 / 3600}, {"3/d", 3.0 / 86400}, {"100", 100},
        {"5/10s", 0.5}, {"1/ms", 1000},  {"100000/s", 100000},  {"60/minute", 1.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double r = -1;
        loom_err_t err;
        if (loom_parse_rate(cases[i].text, &r, &err) != LOOM_OK)
            fail_msg("'%s': %s", cases[i].text, err.msg);
        assert_true(fabs(r - cases[i].per_s) <= cases[i].per_s * 1e-12);
    }
    static const char *bad[] = {"", "/s", "0/s", "10/", "10/x", "10/s/s", "-1/s", "10 /s", "10/0s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double r = 7;
        loom_err_t err;
        if (loom_parse_rate(bad[i], &r, &err) != LOOM_EINVAL)
            fail_msg("'%s' was accepted as %g", bad[i], r);
        assert_true(r == 7);
    }
}

static void formatting(void **state)
{
    char out[32];
    assert_string_equal(loom_format_size(16ULL << 30, out, sizeof out), "16GiB");
    assert_string_equal(loom_format_size(512, out, sizeof out), "512B");
    assert_string_equal(loom_format_size(1536ULL << 20, out, sizeof out), "1536MiB");
    assert_string_equal(loom_format_size(1000000, out, sizeof out), "976.6KiB");
    assert_string_equal(loom_format_duration(5400 * LOOM_NS_PER_S, out, sizeof out), "1h30m");
    assert_string_equal(loom_format_duration(250 * LOOM_NS_PER_MS, out, sizeof out), "250ms");
    assert_string_equal(loom_format_duration(0, out, sizeof out), "0ms");
    assert_string_equal(loom_format_duration(90061 * LOOM_NS_PER_S, out, sizeof out), "1d1h1m1s");
    /* round trip */
    uint64_t b;
    assert_int_equal(loom_parse_size(loom_format_size(3ULL << 40, out, sizeof out), &b, NULL),
                     LOOM_OK);
    assert_int_equal(b, 3ULL << 40);
}

static void integers_and_utf8(void **state)
{
    int64_t v;
    loom_err_t err;
    assert_int_equal(loom_parse_i64("42", 0, 100, &v, "count", &err), LOOM_OK);
    assert_int_equal(v, 42);
    assert_int_equal(loom_parse_i64("101", 0, 100, &v, "count", &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "out of range"));
    assert_int_equal(loom_parse_i64("4x", 0, 100, &v, "count", &err), LOOM_EINVAL);
    assert_int_equal(loom_parse_i64(" 4", 0, 100, &v, "count", &err), LOOM_EINVAL);
    assert_true(loom_utf8_valid("h\xc3\xa9llo", 6));
    assert_true(loom_utf8_valid("\xf0\x9f\x98\x80", 4));
    assert_false(loom_utf8_valid("\xc0\xaf", 2));         /* overlong */
    assert_false(loom_utf8_valid("\xed\xa0\x80", 3));     /* surrogate */
    assert_false(loom_utf8_valid("\xe2\x82", 2));         /* truncated */
    assert_false(loom_utf8_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
}

/* The definition: the smallest N in 1..17 whose "%.Ng" reads back. */
static void shortest_by_search(double d, char *out, size_t n)
{
    for (int p = 1; p <= 17; p++) {
        snprintf(out, n, "%.*g", p, d);
        if (strtod(out, NULL) == d)
            return;
    }
}

static void real_formatting(void **state)
{
    char got[32], want[32];
    static const double fixed[] = {0.0,
                                   -0.0,
                                   0.1,
                                   1e10,
                                   1200,
                                   1e21,
                                   1e-5,
                                   123456,
                                   1e15,
                                   1e16,
                                   1e17,
                                   0.3,
                                   1.0 / 3,
                                   2.0 / 3,
                                   5e-324,
                                   2.2250738585072014e-308,
                                   1.7976931348623157e308,
                                   -42.5,
                                   100,
                                   9007199254740993.0,
                                   0.1 + 0.2};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        size_t len = loom_format_real(fixed[i], got, sizeof got);
        shortest_by_search(fixed[i], want, sizeof want);
        assert_string_equal(got, want);
        assert_int_equal(len, strlen(want));
    }
    assert_string_equal((loom_format_real(NAN, got, sizeof got), got), "nan");
    assert_string_equal((loom_format_real(-INFINITY, got, sizeof got), got), "-inf");
    /* Random doubles of every kind: any bit pattern (subnormals included),
     * short decimals, integers, log-uniform values as catalogs draw them. */
    loom_rng_t rng;
    loom_rng_init(&rng, 5, 0);
    for (int i = 0; i < 200000; i++) {
        double d;
        switch (i % 4) {
        case 0: {
            uint64_t bits = loom_rng_u64(&rng);
            memcpy(&d, &bits, sizeof d);
            if (!isfinite(d))
                continue;
            break;
        }
        case 1:
            d = (double)loom_rng_below(&rng, 100000) / pow(10, (double)loom_rng_below(&rng, 12));
            break;
        case 2:
            d = (double)(int64_t)loom_rng_u64(&rng) / (double)(1ULL << loom_rng_below(&rng, 64));
            break;
        default: d = exp(log(1e-4) + loom_rng_uniform(&rng) * (log(1e-1) - log(1e-4))); break;
        }
        loom_format_real(d, got, sizeof got);
        shortest_by_search(d, want, sizeof want);
        if (strcmp(got, want) != 0)
            fail_msg("%a: got %s, want %s", d, got, want);
    }
}

static void utf8_word_at_a_time(void **state)
{
    /* A bad byte at every offset of a long ASCII text is found, whether it
     * falls in a word checked whole or in the tail. */
    char text[67];
    memset(text, 'a', sizeof text);
    assert_true(loom_utf8_valid(text, sizeof text));
    for (size_t at = 0; at < sizeof text; at++) {
        text[at] = (char)0xff;
        assert_false(loom_utf8_valid(text, sizeof text));
        text[at] = 'a';
    }
    memcpy(text + 31, "\xc3\xa9", 2); /* a two-byte sequence across a word boundary */
    assert_true(loom_utf8_valid(text, sizeof text));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sizes_accepted),  cmocka_unit_test(sizes_rejected),
        cmocka_unit_test(durations),       cmocka_unit_test(rates),
        cmocka_unit_test(formatting),      cmocka_unit_test(integers_and_utf8),
        cmocka_unit_test(real_formatting), cmocka_unit_test(utf8_word_at_a_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
