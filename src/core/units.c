/* Parsers for the quantities users type: sizes, durations, rates. Each
 * accepts the whole string or fails with a message that quotes the input,
 * names the position and says what was expected. Numbers are read with a
 * hand-written decimal scanner (no locale, no hex, no "inf"). */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "loom/core.h"

/* A number as scan_number reads it: its value, its integer part (exact up
 * to 2^63) and whether it had no fraction. */
typedef struct number {
    double value;
    uint64_t whole;
    bool is_int;
} number_t;

/* Scans an unsigned decimal number "123", "1.5", ".5" at *p. Returns false
 * if there is no digit. */
static bool scan_number(const char **p, number_t *out)
{
    const char *s = *p;
    uint64_t w = 0;
    bool overflow = false, digits = false;
    while (isdigit((unsigned char)*s)) {
        unsigned d = (unsigned)(*s - '0');
        if (w > (UINT64_MAX - d) / 10)
            overflow = true;
        else
            w = w * 10 + d;
        s++;
        digits = true;
    }
    double v = (double)w;
    bool integer = true;
    if (*s == '.') {
        const char *f = s + 1;
        double scale = 0.1;
        while (isdigit((unsigned char)*f)) {
            v += (*f - '0') * scale;
            scale /= 10;
            f++;
            digits = true;
            integer = false;
        }
        if (f == s + 1 && !digits)
            return false;
        s = f;
    }
    if (!digits || overflow)
        return false;
    *p = s;
    out->value = v;
    out->whole = w;
    out->is_int = integer;
    return true;
}

int loom_parse_i64(const char *text, int64_t min, int64_t max, int64_t *out, const char *what,
                   loom_err_t *err)
{
    if (!text || !*text)
        return loom_err_set(err, LOOM_EINVAL, "%s: expected an integer, found an empty string",
                            what);
    errno = 0;
    char *end;
    long long v = strtoll(text, &end, 10);
    if (*end != '\0' || isspace((unsigned char)text[0]))
        return loom_err_set(err, LOOM_EINVAL, "%s '%s': expected an integer", what, text);
    if (errno == ERANGE || v < min || v > max)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s '%s': out of range, expected %" PRId64 "..%" PRId64, what, text,
                            min, max);
    *out = v;
    return LOOM_OK;
}

/* ------------------------------------------------------------------ sizes */

static int size_multiplier(const char *suf, uint64_t *mult)
{
    static const char letters[] = "KMGTPE";
    if (*suf == '\0' || strcmp(suf, "B") == 0 || strcmp(suf, "b") == 0) {
        *mult = 1;
        return 0;
    }
    const char *l = strchr(letters, toupper((unsigned char)suf[0]));
    if (!l)
        return -1;
    int power = (int)(l - letters) + 1;
    const char *rest = suf + 1;
    bool decimal = false;
    if (strcasecmp(rest, "") == 0 || strcasecmp(rest, "i") == 0 || strcasecmp(rest, "ib") == 0)
        decimal = false;
    else if (strcmp(rest, "B") == 0)
        decimal = true; /* kB, MB, GB: SI */
    else if (strcmp(rest, "b") == 0)
        decimal = false; /* "mb", "gb": treated as binary, as Slurm does */
    else
        return -1;
    uint64_t m = 1;
    for (int i = 0; i < power; i++)
        m *= decimal ? 1000 : 1024;
    *mult = m;
    return 0;
}

int loom_parse_size(const char *text, uint64_t *bytes, loom_err_t *err)
{
    const char *p = text;
    number_t num;
    if (!text || !scan_number(&p, &num))
        return loom_err_set(err, LOOM_EINVAL,
                            "size '%s': expected a number with an optional unit (B, KiB, MiB, "
                            "GiB, TiB, K, M, G, T, kB, MB, GB)",
                            text ? text : "");
    uint64_t mult;
    if (size_multiplier(p, &mult) != 0)
        return loom_err_set(err, LOOM_EINVAL,
                            "size '%s': unknown unit '%s' at column %zu, expected B, KiB, MiB, "
                            "GiB, TiB, K, M, G, T, kB, MB, GB",
                            text, p, (size_t)(p - text) + 1);
    if (num.is_int) {
        if (num.whole > UINT64_MAX / mult)
            return loom_err_set(err, LOOM_EINVAL, "size '%s': too large", text);
        *bytes = num.whole * mult;
    } else {
        double b = num.value * (double)mult;
        if (b >= 18446744073709551616.0)
            return loom_err_set(err, LOOM_EINVAL, "size '%s': too large", text);
        *bytes = (uint64_t)b;
    }
    return LOOM_OK;
}

/* -------------------------------------------------------------- durations */

static int64_t unit_ns(const char *u, size_t n)
{
    static const struct {
        const char *name;
        int64_t ns;
    } units[] = {
        {"ns", 1},
        {"us", LOOM_NS_PER_US},
        {"ms", LOOM_NS_PER_MS},
        {"s", LOOM_NS_PER_S},
        {"sec", LOOM_NS_PER_S},
        {"secs", LOOM_NS_PER_S},
        {"second", LOOM_NS_PER_S},
        {"seconds", LOOM_NS_PER_S},
        {"m", 60 * LOOM_NS_PER_S},
        {"min", 60 * LOOM_NS_PER_S},
        {"mins", 60 * LOOM_NS_PER_S},
        {"minute", 60 * LOOM_NS_PER_S},
        {"minutes", 60 * LOOM_NS_PER_S},
        {"h", 3600 * LOOM_NS_PER_S},
        {"hr", 3600 * LOOM_NS_PER_S},
        {"hrs", 3600 * LOOM_NS_PER_S},
        {"hour", 3600 * LOOM_NS_PER_S},
        {"hours", 3600 * LOOM_NS_PER_S},
        {"d", 86400 * LOOM_NS_PER_S},
        {"day", 86400 * LOOM_NS_PER_S},
        {"days", 86400 * LOOM_NS_PER_S},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strlen(units[i].name) == n && strncasecmp(units[i].name, u, n) == 0)
            return units[i].ns;
    return 0;
}

/* [D-]H:MM:SS, MM:SS, D-HH, D-HH:MM — the forms Slurm's --time accepts. */
static int parse_clock_form(const char *text, int64_t *ns, loom_err_t *err)
{
    int64_t f[4] = {0};
    int nf = 0;
    int64_t days = 0;
    bool has_days = false;
    const char *p = text;
    const char *dash = strchr(text, '-');
    if (dash) {
        char *end;
        errno = 0;
        days = strtoll(text, &end, 10);
        if (end != dash || end == text || errno || days < 0 || days > 100000)
            goto bad;
        has_days = true;
        p = dash + 1;
    }
    while (*p) {
        if (nf == 3 || !isdigit((unsigned char)*p))
            goto bad;
        char *end;
        errno = 0;
        f[nf++] = strtoll(p, &end, 10);
        if (errno || end - p > 9)
            goto bad;
        p = end;
        if (*p == ':') {
            p++;
            if (!*p)
                goto bad;
        } else if (*p) {
            goto bad;
        }
    }
    if (nf == 0)
        goto bad;
    int64_t h = 0, m = 0, s = 0;
    if (has_days) { /* D-HH, D-HH:MM, D-HH:MM:SS */
        h = f[0];
        m = nf > 1 ? f[1] : 0;
        s = nf > 2 ? f[2] : 0;
    } else if (nf == 3) {
        h = f[0], m = f[1], s = f[2];
    } else if (nf == 2) {
        m = f[0], s = f[1];
    } else {
        goto bad;
    }
    if ((nf > 1 && m > 59 && (has_days || nf == 3)) || (nf >= 2 && s > 59))
        return loom_err_set(err, LOOM_EINVAL, "duration '%s': minutes and seconds must be below 60",
                            text);
    /* Each field has at most 9 digits, so this cannot overflow; the total
     * must still fit in int64 nanoseconds (292 years). */
    int64_t secs = ((days * 24 + h) * 60 + m) * 60 + s;
    if (secs > INT64_MAX / LOOM_NS_PER_S)
        return loom_err_set(err, LOOM_EINVAL, "duration '%s': too long", text);
    *ns = secs * LOOM_NS_PER_S;
    return LOOM_OK;
bad:
    return loom_err_set(err, LOOM_EINVAL,
                        "duration '%s': expected a form such as 90s, 1h30m, 500ms, 01:00:00, "
                        "05:30 or 1-12:00:00",
                        text);
}

int loom_parse_duration(const char *text, int64_t *ns, loom_err_t *err)
{
    if (!text || !*text)
        return loom_err_set(err, LOOM_EINVAL,
                            "duration '': expected a form such as 90s, "
                            "1h30m, 500ms or 01:00:00");
    if (strchr(text, ':') || (strchr(text, '-') && isdigit((unsigned char)text[0])))
        return parse_clock_form(text, ns, err);
    const char *p = text;
    double total = 0;
    bool first = true;
    while (*p) {
        const char *start = p;
        number_t num;
        if (!scan_number(&p, &num))
            return loom_err_set(err, LOOM_EINVAL, "duration '%s': expected a number at column %zu",
                                text, (size_t)(start - text) + 1);
        const char *u = p;
        while (isalpha((unsigned char)*p))
            p++;
        int64_t mult;
        if (u == p) {
            if (!first || *p)
                return loom_err_set(err, LOOM_EINVAL,
                                    "duration '%s': expected a unit (ns, us, ms, s, m, h, d) "
                                    "at column %zu",
                                    text, (size_t)(u - text) + 1);
            mult = LOOM_NS_PER_S; /* a bare number is seconds */
        } else if ((mult = unit_ns(u, (size_t)(p - u))) == 0) {
            return loom_err_set(err, LOOM_EINVAL,
                                "duration '%s': unknown unit '%.*s' at column %zu, expected "
                                "ns, us, ms, s, m, h or d",
                                text, (int)(p - u), u, (size_t)(u - text) + 1);
        }
        total += num.value * (double)mult;
        first = false;
    }
    if (total >= 9.2e18)
        return loom_err_set(err, LOOM_EINVAL, "duration '%s': too long", text);
    *ns = (int64_t)llround(total);
    return LOOM_OK;
}

/* ------------------------------------------------------------------ rates */

int loom_parse_rate(const char *text, double *per_second, loom_err_t *err)
{
    const char *p = text;
    number_t num;
    if (!text || !scan_number(&p, &num))
        return loom_err_set(err, LOOM_EINVAL,
                            "rate '%s': expected COUNT/UNIT such as 10/s, 600/min or 2.5/h",
                            text ? text : "");
    double secs = 1.0;
    if (*p == '/') {
        p++;
        const char *u = p;
        /* An optional multiplier: "5/10s" means 5 per 10 seconds. */
        number_t n = {.value = 1};
        if (isdigit((unsigned char)*u) || *u == '.') {
            if (!scan_number(&p, &n) || n.value <= 0)
                goto bad_unit;
            u = p;
        }
        while (isalpha((unsigned char)*p))
            p++;
        int64_t ns = unit_ns(u, (size_t)(p - u));
        if (ns == 0 || *p)
            goto bad_unit;
        secs = n.value * (double)ns / (double)LOOM_NS_PER_S;
    } else if (*p) {
        goto bad_unit;
    }
    double r = num.value / secs;
    if (!(r > 0) || !isfinite(r))
        return loom_err_set(err, LOOM_EINVAL, "rate '%s': must be greater than zero", text);
    *per_second = r;
    return LOOM_OK;
bad_unit:
    return loom_err_set(err, LOOM_EINVAL,
                        "rate '%s': unknown time unit at column %zu, expected s, min, h or d "
                        "(as in 10/s, 600/min, 2.5/h)",
                        text, (size_t)(p - text) + 1);
}

/* ------------------------------------------------------------- formatting */

char *loom_format_size(uint64_t bytes, char *out, size_t outlen)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    uint64_t b = bytes;
    while (u < 6 && b >= 1024 && b % 1024 == 0) {
        b /= 1024;
        u++;
    }
    if (b < 10240 || u == 6) {
        snprintf(out, outlen, "%" PRIu64 "%s", b, units[u]);
        return out;
    }
    double v = (double)bytes;
    u = 0;
    while (u < 6 && v >= 1024) {
        v /= 1024;
        u++;
    }
    snprintf(out, outlen, "%.1f%s", v, units[u]);
    return out;
}

char *loom_format_duration(int64_t ns, char *out, size_t outlen)
{
    if (ns < 0) {
        snprintf(out, outlen, "-");
        return out;
    }
    if (ns < LOOM_NS_PER_S) {
        if (ns % LOOM_NS_PER_MS == 0)
            snprintf(out, outlen, "%" PRId64 "ms", ns / LOOM_NS_PER_MS);
        else if (ns % LOOM_NS_PER_US == 0)
            snprintf(out, outlen, "%" PRId64 "us", ns / LOOM_NS_PER_US);
        else
            snprintf(out, outlen, "%" PRId64 "ns", ns);
        return out;
    }
    int64_t s = ns / LOOM_NS_PER_S;
    int64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
    int n = 0;
    out[0] = '\0';
    if (d)
        n += snprintf(out + n, outlen - (size_t)n, "%" PRId64 "d", d);
    if (h && (size_t)n < outlen)
        n += snprintf(out + n, outlen - (size_t)n, "%" PRId64 "h", h);
    if (m && (size_t)n < outlen)
        n += snprintf(out + n, outlen - (size_t)n, "%" PRId64 "m", m);
    if ((sec || n == 0) && (size_t)n < outlen)
        snprintf(out + n, outlen - (size_t)n, "%" PRId64 "s", sec);
    return out;
}

/* Significant digits of a "%g" text: leading and trailing zeros, sign,
 * point and exponent left out ("0.00120" and "1.2e-03" have 2). */
static int significant_digits(const char *s)
{
    int first = -1, last = -1, i = 0;
    for (const char *c = s; *c && *c != 'e'; c++) {
        if (*c < '0' || *c > '9')
            continue;
        if (*c != '0') {
            if (first < 0)
                first = i;
            last = i;
        }
        i++;
    }
    return first < 0 ? 1 : last - first + 1;
}

size_t loom_format_real(double d, char *buf, size_t n)
{
    if (!isfinite(d))
        return (size_t)snprintf(buf, n, "%s", isnan(d) ? "nan" : d > 0 ? "inf" : "-inf");
    int len = snprintf(buf, n, "%.15g", d);
    if (strtod(buf, NULL) == d) {
        if (fabs(d) >= DBL_MIN) {
            /* A normal double's rounding interval (relative width at most
             * 2^-52) holds at most one 15-digit decimal, so every shorter
             * form that reads back has the value just printed: the
             * shortest has its significant digits. "%.Ng" with that N
             * may still choose the other notation ("1e+10"), so print
             * again unless N is 15. */
            int sd = significant_digits(buf);
            return sd == 15 ? (size_t)len : (size_t)snprintf(buf, n, "%.*g", sd, d);
        }
        /* 0 and subnormals (fewer bits): search downwards, as N digits
         * reading back means N + 1 do too. */
        int lo = 1, hi = 15; /* hi round-trips */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            snprintf(buf, n, "%.*g", mid, d);
            if (strtod(buf, NULL) == d)
                hi = mid;
            else
                lo = mid + 1;
        }
        return (size_t)snprintf(buf, n, "%.*g", hi, d);
    }
    len = snprintf(buf, n, "%.16g", d);
    if (strtod(buf, NULL) != d)
        len = snprintf(buf, n, "%.17g", d);
    return (size_t)len;
}

/* ------------------------------------------------------------------ UTF-8 */ /* ------------------------------------------------------------------
                                                                                  UTF-8 */

bool loom_utf8_valid(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        /* Eight ASCII bytes at a time (scripts are mostly ASCII). */
        uint64_t w;
        if (len - i >= 8 && (memcpy(&w, s + i, 8), (w & 0x8080808080808080ULL) == 0)) {
            i += 8;
            continue;
        }
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp, min;
        if ((c & 0xE0) == 0xC0)
            n = 2, cp = c & 0x1F, min = 0x80;
        else if ((c & 0xF0) == 0xE0)
            n = 3, cp = c & 0x0F, min = 0x800;
        else if ((c & 0xF8) == 0xF0)
            n = 4, cp = c & 0x07, min = 0x10000;
        else
            return false;
        if (i + n > len)
            return false;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n;
    }
    return true;
}
