/* loom_time_parse_rfc3339 and loom_time_parse_datetime: the forms taken,
 * every error with its message, the calendar against timegm, and round
 * trips through loom_time_format_rfc3339. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loom/core.h"
#include "test_util.h"

#define S LOOM_NS_PER_S

static void valid_forms(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t ns;
    } cases[] = {
        {"1970-01-01T00:00:00Z", 0},
        {"2026-12-05T18:24:25Z", 1796495065 * S},
        {"2023-11-14T22:13:20.123456Z", 1700000000123456000},
        {"2023-11-14t22:13:20.123456789z", 1700000000123456789},
        {"2023-11-14 22:13:20Z", 1700000000 * S},
        {"2023-11-14T22:13:20.1234567891234Z", 1700000000123456789}, /* truncated */
        {"2023-11-14T22:13:20.5Z", 1700000000 * S + S / 2},
        {"2023-11-14T23:13:20+01:00", 1700000000 * S},
        {"2023-11-14T16:43:20-05:30", 1700000000 * S},
        {"2023-11-14T22:13:20-00:00", 1700000000 * S},
        {"2023-11-15T21:52:20+23:39", 1700000000 * S},
        {"2016-12-31T23:59:60Z", 1483228800 * S}, /* leap second: 2017-01-01T00:00:00Z */
        {"2024-02-29T00:00:00Z", 1709164800 * S},
        {"2000-02-29T12:00:00Z", 951825600 * S},
        {"1969-12-31T23:59:59.5Z", -S / 2},
        {"1900-03-01T00:00:00Z", -2203891200 * S},
        {"1677-09-21T00:12:44Z", -9223372036 * S},
        {"2262-04-11T23:47:16.854775807Z", INT64_MAX},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t ns = 42;
        loom_err_t err = {0};
        if (loom_time_parse_rfc3339(cases[i].text, &ns, &err) != LOOM_OK)
            fail_msg("%s: %s", cases[i].text, err.msg);
        if (ns != cases[i].ns)
            fail_msg("%s: %lld, expected %lld", cases[i].text, (long long)ns,
                     (long long)cases[i].ns);
    }
}

static void errors(void **state)
{
    (void)state;
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"", "'': byte 0: expected a four-digit year, found the end"},
        {" 2026-12-05T18:24:25Z",
         "' 2026-12-05T18:24:25Z': byte 0: expected a four-digit year, found ' '"},
        {"\001", "'\001': byte 0: expected a four-digit year, found byte 0x01"},
        {"26-12-05T18:24:25Z", "'26-12-05T18:24:25Z': byte 2: expected a four-digit year, "
                               "found '-'"},
        {"2026/12/05T18:24:25Z",
         "'2026/12/05T18:24:25Z': byte 4: expected '-' after the year, found '/'"},
        {"2026-1-05T18:24:25Z",
         "'2026-1-05T18:24:25Z': byte 6: expected a two-digit month 01-12, found '-'"},
        {"2026-13-01T00:00:00Z",
         "'2026-13-01T00:00:00Z': byte 5: expected a two-digit month 01-12, found '13'"},
        {"2026-00-01T00:00:00Z",
         "'2026-00-01T00:00:00Z': byte 5: expected a two-digit month 01-12, found '00'"},
        {"2026-12.05T00:00:00Z",
         "'2026-12.05T00:00:00Z': byte 7: expected '-' after the month, found '.'"},
        {"2026-02-29T00:00:00Z", "'2026-02-29T00:00:00Z': byte 8: expected a two-digit day 01-28 "
                                 "(February 2026), found '29'"},
        {"1900-02-29T00:00:00Z", "'1900-02-29T00:00:00Z': byte 8: expected a two-digit day 01-28 "
                                 "(February 1900), found '29'"},
        {"2026-04-31T00:00:00Z", "'2026-04-31T00:00:00Z': byte 8: expected a two-digit day 01-30 "
                                 "(April 2026), found '31'"},
        {"2026-12-00T00:00:00Z", "'2026-12-00T00:00:00Z': byte 8: expected a two-digit day 01-31 "
                                 "(December 2026), found '00'"},
        {"2026-12-05", "'2026-12-05': byte 10: expected 'T' and a time of day, found the end"},
        {"2026-12-05_18:24:25Z",
         "'2026-12-05_18:24:25Z': byte 10: expected 'T' and a time of day, found '_'"},
        {"2026-12-05T24:00:00Z",
         "'2026-12-05T24:00:00Z': byte 11: expected a two-digit hour 00-23, found '24'"},
        {"2026-12-05T18-24:25Z",
         "'2026-12-05T18-24:25Z': byte 13: expected ':' after the hour, found '-'"},
        {"2026-12-05T18:60:00Z",
         "'2026-12-05T18:60:00Z': byte 14: expected a two-digit minute 00-59, found '60'"},
        {"2026-12-05T18:24Z",
         "'2026-12-05T18:24Z': byte 16: expected ':' after the minute, found 'Z'"},
        {"2026-12-05T18:24:61Z",
         "'2026-12-05T18:24:61Z': byte 17: expected two-digit seconds 00-60, found '61'"},
        {"2026-12-05T18:24:2Z",
         "'2026-12-05T18:24:2Z': byte 18: expected two-digit seconds 00-60, found 'Z'"},
        {"2026-12-05T18:24:25.Z",
         "'2026-12-05T18:24:25.Z': byte 20: expected a digit of the fraction after '.', found "
         "'Z'"},
        {"2026-12-05T18:24:25", "'2026-12-05T18:24:25': byte 19: expected 'Z' or an offset such "
                                "as +01:00, found the end"},
        {"2026-12-05T18:24:25 UTC", "'2026-12-05T18:24:25 UTC': byte 19: expected 'Z' or an "
                                    "offset such as +01:00, found ' '"},
        {"2026-12-05T18:24:25+0100",
         "'2026-12-05T18:24:25+0100': byte 22: expected ':' in the offset, found '0'"},
        {"2026-12-05T18:24:25+24:00", "'2026-12-05T18:24:25+24:00': byte 20: expected a "
                                      "two-digit offset hour 00-23, found '24'"},
        {"2026-12-05T18:24:25+01:60", "'2026-12-05T18:24:25+01:60': byte 23: expected "
                                      "two-digit offset minutes 00-59, found '60'"},
        {"2026-12-05T18:24:25Zjunk",
         "'2026-12-05T18:24:25Zjunk': byte 20: expected the end of the time, found 'j'"},
        {"2026-12-05T18:24:25Z ",
         "'2026-12-05T18:24:25Z ': byte 20: expected the end of the time, found ' '"},
        {"2262-04-11T23:47:16.854775808Z", "'2262-04-11T23:47:16.854775808Z': out of range: "
                                           "expected a time from 1677-09-21 to 2262-04-11"},
        {"1677-09-21T00:12:43Z",
         "'1677-09-21T00:12:43Z': out of range: expected a time from 1677-09-21 to 2262-04-11"},
        {"9999-12-31T23:59:60-23:59",
         "'9999-12-31T23:59:60-23:59': out of range: expected a time from 1677-09-21 to "
         "2262-04-11"},
        {"0000-01-01T00:00:00+23:59",
         "'0000-01-01T00:00:00+23:59': out of range: expected a time from 1677-09-21 to "
         "2262-04-11"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t ns = 42;
        loom_err_t err = {0};
        if (loom_time_parse_rfc3339(cases[i].text, &ns, &err) != LOOM_EINVAL)
            fail_msg("%s: accepted as %lld", cases[i].text, (long long)ns);
        assert_int_equal(err.code, LOOM_EINVAL);
        if (strcmp(err.msg, cases[i].msg))
            fail_msg("%s:\n  got      %s\n  expected %s", cases[i].text, err.msg, cases[i].msg);
        assert_true(ns == 42); /* untouched on error */
    }
    int64_t ns;
    loom_err_t err;
    assert_int_equal(loom_time_parse_rfc3339(NULL, &ns, &err), LOOM_EINVAL);
    assert_string_equal(err.msg, "'': byte 0: expected a four-digit year, found the end");
    assert_int_equal(loom_time_parse_rfc3339("x", &ns, NULL), LOOM_EINVAL); /* err may be NULL */
}

/* The forms some callers take besides RFC 3339. */
static void extra_forms(void **state)
{
    (void)state;
    int64_t ns;
    loom_err_t err;
    const unsigned since = LOOM_TIME_DATE_ONLY | LOOM_TIME_ZONELESS_UTC;
    assert_int_equal(loom_time_parse_datetime("2026-12-03", since, &ns, &err), LOOM_OK);
    assert_true(ns == 1796256000 * S);
    assert_int_equal(loom_time_parse_datetime("2026-12-03T10:00:00", since, &ns, &err), LOOM_OK);
    assert_true(ns == (1796256000 + 36000) * S);
    assert_int_equal(loom_time_parse_datetime("2026-12-03T10:00:00+01:00", since, &ns, &err),
                     LOOM_OK);
    assert_true(ns == (1796256000 + 32400) * S);
    assert_int_equal(loom_time_parse_datetime("2026-12-03T10:00", since, &ns, &err), LOOM_EINVAL);
    assert_string_equal(
        err.msg, "'2026-12-03T10:00': byte 16: expected ':' after the minute, found the end");
    assert_int_equal(loom_time_parse_datetime("2026-12-03X", since, &ns, &err), LOOM_EINVAL);
    assert_string_equal(err.msg, "'2026-12-03X': byte 10: expected the end or 'T' and a time of "
                                 "day, found 'X'");
    assert_int_equal(loom_time_parse_datetime("2026-12-03T10:00:00 ", since, &ns, &err),
                     LOOM_EINVAL);
    assert_string_equal(err.msg, "'2026-12-03T10:00:00 ': byte 19: expected the end, 'Z' or an "
                                 "offset such as +01:00, found ' '");

    assert_int_equal(loom_time_parse_datetime("2026-12-03T10:05", LOOM_TIME_NO_SECONDS, &ns, &err),
                     LOOM_EINVAL); /* no zone, and none allowed */
    assert_int_equal(loom_time_parse_datetime("2026-12-03T10:05Z", LOOM_TIME_NO_SECONDS, &ns, &err),
                     LOOM_OK);
    assert_true(ns == (1796256000 + 36300) * S);

    /* Local time: a POSIX TZ rule, so no tz database is needed. */
    const char *old = getenv("TZ");
    char *saved = old ? strdup(old) : NULL;
    setenv("TZ", "EST5EDT,M3.2.0,M11.1.0", 1);
    tzset();
    const unsigned local = LOOM_TIME_DATE_ONLY | LOOM_TIME_NO_SECONDS | LOOM_TIME_ZONELESS_LOCAL;
    assert_int_equal(loom_time_parse_datetime("2026-12-03T10:00", local, &ns, &err), LOOM_OK);
    assert_true(ns == (1796256000 + 15 * 3600) * S); /* EST: UTC-5 */
    assert_int_equal(loom_time_parse_datetime("2026-07-03T10:00:30", local, &ns, &err), LOOM_OK);
    assert_true(ns == (1783087200 + 30) * S); /* EDT: UTC-4, 14:00:30Z */
    assert_int_equal(loom_time_parse_datetime("2026-12-03", local, &ns, &err), LOOM_OK);
    assert_true(ns == (1796256000 + 5 * 3600) * S);
    assert_int_equal(loom_time_parse_datetime("2026-12-03T10:00Z", local, &ns, &err), LOOM_OK);
    assert_true(ns == (1796256000 + 10 * 3600) * S); /* a zone given wins */
    if (saved) {
        setenv("TZ", saved, 1);
        free(saved);
    } else {
        unsetenv("TZ");
    }
    tzset();
}

/* Every day from 1678 to 2261 against glibc's timegm (64-bit time_t). */
static void calendar_matches_timegm(void **state)
{
    (void)state;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    for (int y = 1678; y <= 2261; y++)
        for (int m = 1; m <= 12; m++) {
            bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            int n = m == 2 && leap ? 29 : mdays[m - 1];
            for (int d = 1; d <= n + 1; d++) {
                char text[32];
                snprintf(text, sizeof text, "%04d-%02d-%02dT12:00:00Z", y, m, d);
                struct tm tm = {.tm_year = y - 1900, .tm_mon = m - 1, .tm_mday = d, .tm_hour = 12};
                int64_t ns;
                int rc = loom_time_parse_rfc3339(text, &ns, NULL);
                if (d > n) {
                    if (rc != LOOM_EINVAL)
                        fail_msg("%s accepted", text);
                } else if (rc != LOOM_OK || ns != (int64_t)timegm(&tm) * S) {
                    fail_msg("%s: rc %d, %lld", text, rc, (long long)ns);
                }
            }
        }
}

/* Whatever loom writes, it reads back (to the microsecond it writes), in UTC
 * and with the same instant written at other offsets. */
static void round_trip(void **state)
{
    (void)state;
    loom_rng_t rng;
    loom_rng_init(&rng, 34, 0);
    const int64_t lo = -9223372036 * S, hi = INT64_MAX - 1000;
    for (int i = 0; i < 20000; i++) {
        int64_t v =
            i < 4 ? (int64_t[]){lo, hi, 0, -1}[i]
                  : (int64_t)((uint64_t)lo + loom_rng_below(&rng, (uint64_t)hi - (uint64_t)lo));
        char text[32];
        loom_time_format_rfc3339(v, text);
        int64_t us = v / 1000 * 1000; /* the formatter truncates towards zero */
        int64_t ns;
        loom_err_t err;
        if (loom_time_parse_rfc3339(text, &ns, &err))
            fail_msg("%lld -> %s: %s", (long long)v, text, err.msg);
        if (ns != us)
            fail_msg("%lld -> %s -> %lld", (long long)v, text, (long long)ns);
        /* The same instant at a random offset, as another writer might. */
        int off = (int)loom_rng_below(&rng, 2 * 1439 + 1) - 1439; /* minutes east */
        time_t secs = (time_t)(us / S - (us % S < 0)) + off * 60;
        if (secs < -9223372036 + 86400 || secs > 9223372036 - 86400)
            continue;
        struct tm tm;
        gmtime_r(&secs, &tm);
        long frac = (long)((us % S + S) % S / 1000);
        char alt[48];
        snprintf(alt, sizeof alt, "%04d-%02d-%02dT%02d:%02d:%02d.%06ld%c%02d:%02d",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 frac, off < 0 ? '-' : '+', abs(off) / 60, abs(off) % 60);
        if (loom_time_parse_rfc3339(alt, &ns, &err))
            fail_msg("%s: %s", alt, err.msg);
        if (ns != us)
            fail_msg("%s -> %lld, expected %lld", alt, (long long)ns, (long long)us);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(valid_forms), cmocka_unit_test(errors),
        cmocka_unit_test(extra_forms), cmocka_unit_test(calendar_matches_timegm),
        cmocka_unit_test(round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
