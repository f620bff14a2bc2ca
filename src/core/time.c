/* Clocks and RFC 3339 times. Schedules in loom are absolute: callers compute
 * each deadline from a fixed start and sleep until it, so sleeps never
 * accumulate error. The parser is written by hand: libc's takes unpadded
 * fields and leading blanks, and its UTC conversion rolls 02-31 into March;
 * here every field is checked. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <time.h>

#include "loom/core.h"

static int64_t read_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * LOOM_NS_PER_S + ts.tv_nsec;
}

int64_t loom_time_mono_ns(void)
{
    return read_clock(CLOCK_MONOTONIC);
}
int64_t loom_time_real_ns(void)
{
    return read_clock(CLOCK_REALTIME);
}

void loom_time_sleep_until_ns(int64_t deadline_ns)
{
    struct timespec ts = {.tv_sec = deadline_ns / LOOM_NS_PER_S,
                          .tv_nsec = deadline_ns % LOOM_NS_PER_S};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

void loom_time_format_rfc3339(int64_t real_ns, char out[32])
{
    time_t secs = (time_t)(real_ns / LOOM_NS_PER_S);
    long us = (long)((real_ns % LOOM_NS_PER_S) / LOOM_NS_PER_US);
    if (us < 0) {
        us += 1000000;
        secs -= 1;
    }
    struct tm tm;
    gmtime_r(&secs, &tm);
    snprintf(out, 32, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, us);
}

/* ------------------------------------------------------------- parsing */

/* One parse: the text, where we are, and the error to fill. */
typedef struct tparse {
    const char *text, *p;
    loom_err_t *err;
} tparse_t;

/* "found '13'", "found 'x'", "found the end": what stands at p, n bytes. */
static void found(const char *p, size_t n, char *out, size_t len)
{
    if (!*p) {
        snprintf(out, len, "the end");
        return;
    }
    size_t k = 0;
    while (k < n && p[k])
        k++;
    if (k == 1 && !isprint((unsigned char)*p))
        snprintf(out, len, "byte 0x%02x", (unsigned char)*p);
    else
        snprintf(out, len, "'%.*s'", (int)k, p);
}

/* The error at byte `at`, what stands there being n bytes long. */
static int tp_fail(tparse_t *t, const char *at, size_t n, const char *expected)
{
    char f[32];
    found(at, n, f, sizeof f);
    return loom_err_set(t->err, LOOM_EINVAL, "'%.64s': byte %zu: expected %s, found %s", t->text,
                        (size_t)(at - t->text), expected, f);
}

/* Exactly `width` digits into *v, within [lo, hi]. */
static int tp_num(tparse_t *t, int width, int lo, int hi, const char *what, int *v)
{
    const char *at = t->p;
    int x = 0;
    for (int i = 0; i < width; i++) {
        if (!isdigit((unsigned char)at[i]))
            return tp_fail(t, at + i, 1, what);
        x = x * 10 + (at[i] - '0');
    }
    if (x < lo || x > hi)
        return tp_fail(t, at, (size_t)width, what);
    *v = x;
    t->p += width;
    return LOOM_OK;
}

static int tp_char(tparse_t *t, char c, const char *what)
{
    if (*t->p != c)
        return tp_fail(t, t->p, 1, what);
    t->p++;
    return LOOM_OK;
}

static bool leap_year(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
    static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap_year(y) ? 29 : d[m - 1];
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar: whole
 * 400-year eras (146097 days) from 0000-03-01, the year counted from March
 * so that February's leap day falls at its end. */
static int64_t days_from_epoch(int y, int m, int d)
{
    int64_t yy = m <= 2 ? y - 1 : y;
    int64_t era = (yy >= 0 ? yy : yy - 399) / 400;
    int64_t yoe = yy - era * 400;                                  /* [0, 399] */
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* [0, 365] */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           /* [0, 146096] */
    return era * 146097 + doe - 719468; /* 719468: 0000-03-01 to 1970-01-01 */
}

typedef struct tfields {
    int year, mon, day, hour, min, sec;
    int64_t frac_ns;
    bool zone;      /* Z or an offset was given */
    int offset_min; /* east of UTC */
} tfields_t;

static int tp_date(tparse_t *t, tfields_t *f)
{
    static const char *const month[] = {"January",   "February", "March",    "April",
                                        "May",       "June",     "July",     "August",
                                        "September", "October",  "November", "December"};
    char what[64];
    if (tp_num(t, 4, 0, 9999, "a four-digit year", &f->year) ||
        tp_char(t, '-', "'-' after the year") ||
        tp_num(t, 2, 1, 12, "a two-digit month 01-12", &f->mon) ||
        tp_char(t, '-', "'-' after the month"))
        return LOOM_EINVAL;
    snprintf(what, sizeof what, "a two-digit day 01-%02d (%s %04d)", days_in_month(f->year, f->mon),
             month[f->mon - 1], f->year);
    return tp_num(t, 2, 1, days_in_month(f->year, f->mon), what, &f->day);
}

static int tp_clock(tparse_t *t, unsigned flags, tfields_t *f)
{
    if (tp_num(t, 2, 0, 23, "a two-digit hour 00-23", &f->hour) ||
        tp_char(t, ':', "':' after the hour") ||
        tp_num(t, 2, 0, 59, "a two-digit minute 00-59", &f->min))
        return LOOM_EINVAL;
    if (*t->p != ':' && (flags & LOOM_TIME_NO_SECONDS))
        return LOOM_OK;
    if (tp_char(t, ':', "':' after the minute") ||
        tp_num(t, 2, 0, 60, "two-digit seconds 00-60", &f->sec))
        return LOOM_EINVAL;
    if (*t->p != '.')
        return LOOM_OK;
    t->p++;
    if (!isdigit((unsigned char)*t->p))
        return tp_fail(t, t->p, 1, "a digit of the fraction after '.'");
    int64_t scale = LOOM_NS_PER_S;
    for (; isdigit((unsigned char)*t->p); t->p++)
        if (scale > 1) {
            scale /= 10;
            f->frac_ns += (*t->p - '0') * scale;
        }
    return LOOM_OK;
}

static int tp_zone(tparse_t *t, unsigned flags, tfields_t *f)
{
    const char *want = flags & (LOOM_TIME_ZONELESS_UTC | LOOM_TIME_ZONELESS_LOCAL)
                           ? "the end, 'Z' or an offset such as +01:00"
                           : "'Z' or an offset such as +01:00";
    char c = *t->p;
    if (!c && (flags & (LOOM_TIME_ZONELESS_UTC | LOOM_TIME_ZONELESS_LOCAL)))
        return LOOM_OK;
    if (c == 'Z' || c == 'z') {
        t->p++;
        f->zone = true;
        return LOOM_OK;
    }
    if (c != '+' && c != '-')
        return tp_fail(t, t->p, 1, want);
    t->p++;
    int h, m;
    if (tp_num(t, 2, 0, 23, "a two-digit offset hour 00-23", &h) ||
        tp_char(t, ':', "':' in the offset") ||
        tp_num(t, 2, 0, 59, "two-digit offset minutes 00-59", &m))
        return LOOM_EINVAL;
    f->zone = true;
    f->offset_min = (c == '-' ? -1 : 1) * (h * 60 + m);
    return LOOM_OK;
}

static int tp_fields(tparse_t *t, unsigned flags, tfields_t *f)
{
    if (tp_date(t, f))
        return LOOM_EINVAL;
    if (!*t->p && (flags & LOOM_TIME_DATE_ONLY))
        return LOOM_OK;
    char c = *t->p;
    if (c != 'T' && c != 't' && c != ' ')
        return tp_fail(t, t->p, 1,
                       flags & LOOM_TIME_DATE_ONLY ? "the end or 'T' and a time of day"
                                                   : "'T' and a time of day");
    t->p++;
    if (tp_clock(t, flags, f) || tp_zone(t, flags, f))
        return LOOM_EINVAL;
    if (*t->p)
        return tp_fail(t, t->p, 1, "the end of the time");
    return LOOM_OK;
}

/* Zone-less fields as the machine's local time. */
static int local_seconds(tparse_t *t, const tfields_t *f, int64_t *secs)
{
    struct tm tm = {.tm_year = f->year - 1900,
                    .tm_mon = f->mon - 1,
                    .tm_mday = f->day,
                    .tm_hour = f->hour,
                    .tm_min = f->min,
                    .tm_sec = f->sec,
                    .tm_isdst = -1};
    time_t s = mktime(&tm);
    if (s == (time_t)-1)
        return loom_err_set(t->err, LOOM_EINVAL, "'%.64s': not a time this machine can represent",
                            t->text);
    *secs = (int64_t)s;
    return LOOM_OK;
}

int loom_time_parse_datetime(const char *text, unsigned flags, int64_t *ns, loom_err_t *err)
{
    tparse_t t = {.text = text ? text : "", .p = text ? text : "", .err = err};
    tfields_t f = {0};
    if (tp_fields(&t, flags, &f))
        return LOOM_EINVAL;
    int64_t secs;
    if (!f.zone && (flags & LOOM_TIME_ZONELESS_LOCAL)) {
        if (local_seconds(&t, &f, &secs))
            return LOOM_EINVAL;
    } else {
        secs = days_from_epoch(f.year, f.mon, f.day) * 86400 + f.hour * 3600 + f.min * 60 + f.sec -
               (int64_t)f.offset_min * 60;
    }
    /* int64 ns: -9223372036.854775808 s to 9223372036.854775807 s. */
    const int64_t max_s = INT64_MAX / LOOM_NS_PER_S;
    if (secs < -max_s || secs > max_s || (secs == max_s && f.frac_ns > INT64_MAX % LOOM_NS_PER_S))
        return loom_err_set(err, LOOM_EINVAL,
                            "'%.64s': out of range: expected a time from 1677-09-21 to 2262-04-11",
                            t.text);
    *ns = secs * LOOM_NS_PER_S + f.frac_ns;
    return LOOM_OK;
}

int loom_time_parse_rfc3339(const char *text, int64_t *ns, loom_err_t *err)
{
    return loom_time_parse_datetime(text, 0, ns, err);
}
