/* The value formats of job files: Slurm's times and memory sizes, sbatch's
 * --array, --dependency and --begin, Kubernetes quantities, and the %-patterns of
 * output file names. Each parser takes the whole text or refuses it with a
 * message that quotes it and says what was expected. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loom/jobspec.h"

/* A decimal integer of at most 18 digits starting at *p (no sign);
 * advances *p. */
static bool read_uint(const char **p, int64_t *out)
{
    const char *s = *p;
    int64_t v = 0;
    int n = 0;
    while (isdigit((unsigned char)*s)) {
        if (++n > 18)
            return false;
        v = v * 10 + (*s++ - '0');
    }
    if (n == 0)
        return false;
    *p = s;
    *out = v;
    return true;
}

/* ------------------------------------------------------------------ time */

/* Slurm's forms, in exact seconds. */
static int slurm_time(const char *text, int64_t *seconds, loom_err_t *err)
{
    /* Up to four numbers: days (before '-'), then up to three ':'-parts. */
    const char *p = text;
    int64_t days = -1, part[3];
    int n = 0;
    if (!read_uint(&p, &part[0]))
        goto bad;
    if (*p == '-') {
        days = part[0];
        p++;
        if (!read_uint(&p, &part[0]))
            goto bad;
    }
    n = 1;
    while (*p == ':' && n < 3) {
        p++;
        if (!read_uint(&p, &part[n++]))
            goto bad;
    }
    if (*p)
        goto bad;
    for (int i = 0; i < n; i++)
        if (part[i] > 1000000000 || days > 100000)
            return loom_err_set(err, LOOM_EINVAL, "time '%.40s': too large", text);
    int64_t s;
    if (days < 0) {
        /* M, M:S, H:M:S */
        if (n == 1)
            s = part[0] * 60;
        else if (n == 2)
            s = part[0] * 60 + part[1];
        else
            s = part[0] * 3600 + part[1] * 60 + part[2];
    } else {
        /* D-H, D-H:M, D-H:M:S */
        s = days * 86400 + part[0] * 3600;
        if (n >= 2)
            s += part[1] * 60;
        if (n == 3)
            s += part[2];
    }
    if (days > 100000 || s > 100000LL * 86400)
        return loom_err_set(err, LOOM_EINVAL, "time '%.40s': too large", text);
    *seconds = s;
    return LOOM_OK;
bad:
    return loom_err_set(err, LOOM_EINVAL,
                        "time '%.40s': expected minutes, M:S, H:M:S, D-H, D-H:M, D-H:M:S, "
                        "UNLIMITED or a duration with units such as 1h30m",
                        text);
}

/* One reading of a time limit for every place that takes one: #SBATCH,
 * #LOOM, loom submit -t/--time, loom update --time. A bare number is
 * minutes, as sbatch reads it; Slurm's forms are rounded up to whole
 * minutes, the granularity Slurm keeps ("7:30" is 8 minutes). A value with
 * unit letters ("1h30m", "90s") is loom's duration, kept to the second. */
int loom_jobspec_parse_time(const char *text, int64_t *seconds, loom_err_t *err)
{
    if (strcasecmp(text, "INFINITE") == 0 || strcasecmp(text, "UNLIMITED") == 0 ||
        strcmp(text, "-1") == 0) {
        *seconds = 0;
        return LOOM_OK;
    }
    bool units = false;
    for (const char *p = text; *p; p++)
        units = units || isalpha((unsigned char)*p);
    if (units) {
        int64_t ns = 0;
        loom_err_t e;
        if (loom_parse_duration(text, &ns, &e) || ns < 0)
            return loom_err_set(err, LOOM_EINVAL, "time '%.40s': %s", text,
                                ns < 0 ? "expected a duration >= 0" : e.msg);
        if (ns / LOOM_NS_PER_S > 100000LL * 86400)
            return loom_err_set(err, LOOM_EINVAL, "time '%.40s': too large", text);
        *seconds = ns / LOOM_NS_PER_S + (ns % LOOM_NS_PER_S ? 1 : 0);
        return LOOM_OK;
    }
    if (slurm_time(text, seconds, err))
        return LOOM_EINVAL;
    *seconds = (*seconds + 59) / 60 * 60;
    return LOOM_OK;
}

/* ---------------------------------------------------------------- memory */

int loom_jobspec_parse_slurm_mem(const char *text, uint64_t *bytes, loom_err_t *err)
{
    const char *p = text;
    int64_t v;
    if (!read_uint(&p, &v))
        goto bad;
    int shift = 20; /* megabytes by default */
    if (*p) {
        switch (toupper((unsigned char)*p)) {
        case 'K': shift = 10; break;
        case 'M': shift = 20; break;
        case 'G': shift = 30; break;
        case 'T': shift = 40; break;
        default: goto bad;
        }
        p++;
        /* "16GB" and "16GiB" are read as sbatch would not, but as users write them. */
        if (*p == 'i' || *p == 'I')
            p++;
        if (*p == 'B' || *p == 'b')
            p++;
        if (*p)
            goto bad;
    }
    if ((uint64_t)v > (UINT64_MAX >> 1) >> shift)
        return loom_err_set(err, LOOM_EINVAL, "memory '%.40s': too large", text);
    *bytes = (uint64_t)v << shift;
    return LOOM_OK;
bad:
    return loom_err_set(err, LOOM_EINVAL,
                        "memory '%.40s': expected an integer with an optional K, M, G or T "
                        "suffix (no suffix: megabytes)",
                        text);
}

/* ------------------------------------------------------------ quantities */

int loom_jobspec_parse_quantity(const char *text, bool milli, uint64_t *out, loom_err_t *err)
{
    static const struct {
        const char *s;
        long double f;
    } suffixes[] = {
        {"Ki", 1024.0L},
        {"Mi", 1048576.0L},
        {"Gi", 1073741824.0L},
        {"Ti", 1099511627776.0L},
        {"Pi", 1125899906842624.0L},
        {"Ei", 1152921504606846976.0L},
        {"n", 1e-9L},
        {"u", 1e-6L},
        {"m", 1e-3L},
        {"k", 1e3L},
        {"M", 1e6L},
        {"G", 1e9L},
        {"T", 1e12L},
        {"P", 1e15L},
        {"E", 1e18L},
        {"", 1.0L},
    };
    const char *p = text;
    if (*p == '+')
        p++;
    const char *digits = p;
    while (isdigit((unsigned char)*p))
        p++;
    bool whole = p > digits;
    if (*p == '.') {
        p++;
        const char *f = p;
        while (isdigit((unsigned char)*p))
            p++;
        whole = whole || p > f;
    }
    if (!whole || p - text > 40)
        goto bad;
    char num[64];
    snprintf(num, sizeof num, "%.*s", (int)(p - text), text);
    long double v = strtold(num, NULL);
    if ((*p == 'e' || *p == 'E') && (isdigit((unsigned char)p[1]) || p[1] == '+' || p[1] == '-')) {
        char *end;
        errno = 0;
        long e = strtol(p + 1, &end, 10);
        if (errno || end == p + 1 || *end || e > 30 || e < -30)
            goto bad;
        v *= powl(10.0L, (long double)e);
        p = end;
    } else {
        size_t i;
        for (i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
            if (strcmp(p, suffixes[i].s) == 0)
                break;
        if (i == sizeof suffixes / sizeof suffixes[0])
            goto bad;
        v *= suffixes[i].f;
    }
    if (milli)
        v *= 1000.0L;
    /* A decimal fraction read into binary may land a hair off an integer. */
    long double r = roundl(v);
    v = fabsl(v - r) <= 1e-12L * (r > 1 ? r : 1) ? r : ceill(v);
    if (!(v >= 0) || v > 9.2e18L)
        return loom_err_set(err, LOOM_EINVAL, "quantity '%.40s': too large", text);
    *out = (uint64_t)v;
    return LOOM_OK;
bad:
    return loom_err_set(err, LOOM_EINVAL,
                        "quantity '%.40s': expected a number with an optional suffix (m, k, M, "
                        "G, T, Ki, Mi, Gi, Ti, or an exponent like e6)",
                        text);
}

/* ----------------------------------------------------------------- array */

/* The elements "A", "A-B", "A-B:S" of an array, and its %N cap. */
typedef struct range {
    int64_t a, b, step;
} range_t;

static int array_ranges(const char *text, range_t *r, size_t max, size_t *n, int64_t *cap,
                        loom_err_t *err)
{
    const char *p = text;
    *n = 0;
    *cap = 0;
    for (;;) {
        range_t x = {0, 0, 1};
        if (!read_uint(&p, &x.a))
            goto bad;
        x.b = x.a;
        if (*p == '-') {
            p++;
            if (!read_uint(&p, &x.b))
                goto bad;
            if (*p == ':') {
                p++;
                if (!read_uint(&p, &x.step) || x.step < 1)
                    goto bad;
            }
        }
        if (x.b < x.a)
            return loom_err_set(err, LOOM_EINVAL, "array '%.60s': range %lld-%lld goes down", text,
                                (long long)x.a, (long long)x.b);
        if (x.b > LOOM_JOBSPEC_ARRAY_INDEX_MAX)
            return loom_err_set(err, LOOM_EINVAL, "array '%.60s': index %lld beyond %d", text,
                                (long long)x.b, LOOM_JOBSPEC_ARRAY_INDEX_MAX);
        if (*n == max)
            return loom_err_set(err, LOOM_EINVAL, "array '%.60s': more than %zu ranges", text, max);
        r[(*n)++] = x;
        if (*p == ',') {
            p++;
            continue;
        }
        break;
    }
    if (*p == '%') {
        p++;
        if (!read_uint(&p, cap) || *cap < 1)
            goto bad;
    }
    if (*p)
        goto bad;
    return LOOM_OK;
bad:
    return loom_err_set(err, LOOM_EINVAL,
                        "array '%.60s': expected indices like 0-99, 0-15:4 or 1,3,5-7, with an "
                        "optional %%N cap",
                        text);
}

#define ARRAY_RANGES_MAX 1000

int loom_jobspec_array_parse(const char *text, loom_jobspec_array_t *out, loom_err_t *err)
{
    range_t *rs = malloc(sizeof(range_t) * ARRAY_RANGES_MAX);
    if (!rs)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    size_t n;
    int64_t cap;
    int rc = array_ranges(text, rs, ARRAY_RANGES_MAX, &n, &cap, err);
    if (rc) {
        free(rs);
        return rc;
    }
    int64_t count = 0, first = INT64_MAX, last = -1;
    for (size_t i = 0; i < n; i++) {
        int64_t c = (rs[i].b - rs[i].a) / rs[i].step + 1;
        int64_t top = rs[i].a + (c - 1) * rs[i].step;
        count += c;
        first = rs[i].a < first ? rs[i].a : first;
        last = top > last ? top : last;
    }
    free(rs);
    if (count > LOOM_JOBSPEC_ARRAY_TASKS_MAX)
        return loom_err_set(err, LOOM_EINVAL, "array '%.60s': %lld tasks, more than %d", text,
                            (long long)count, LOOM_JOBSPEC_ARRAY_TASKS_MAX);
    out->count = count; /* repeated indices count twice; sbatch merges them */
    out->first = first;
    out->last = last;
    out->max_running = cap;
    return LOOM_OK;
}

bool loom_jobspec_array_has(const char *text, int64_t index)
{
    range_t *rs = malloc(sizeof(range_t) * ARRAY_RANGES_MAX);
    size_t n;
    int64_t cap;
    bool found = false;
    if (rs && array_ranges(text, rs, ARRAY_RANGES_MAX, &n, &cap, NULL) == LOOM_OK)
        for (size_t i = 0; i < n && !found; i++)
            found = index >= rs[i].a && index <= rs[i].b && (index - rs[i].a) % rs[i].step == 0;
    free(rs);
    return found;
}

/* ------------------------------------------------------------ dependency */

int loom_jobspec_dependency_check(const char *text, loom_err_t *err)
{
    static const char *const types[] = {"after",      "afterany",  "afterok",
                                        "afternotok", "aftercorr", "afterburstbuffer"};
    if (strcmp(text, "singleton") == 0)
        return LOOM_OK;
    const char *p = text;
    char sep = 0;
    for (;;) {
        if (strncmp(p, "singleton", 9) == 0 && (p[9] == 0 || p[9] == ',' || p[9] == '?')) {
            p += 9;
        } else {
            size_t len = strcspn(p, ":");
            size_t t;
            for (t = 0; t < sizeof types / sizeof types[0]; t++)
                if (strlen(types[t]) == len && strncmp(p, types[t], len) == 0)
                    break;
            if (t == sizeof types / sizeof types[0] || p[len] != ':')
                goto bad;
            p += len;
            while (*p == ':') {
                p++;
                int64_t id, mins;
                if (!read_uint(&p, &id) || id < 1)
                    goto bad;
                if (*p == '_') { /* an array task: 12_3 */
                    p++;
                    if (*p == '*')
                        p++;
                    else if (!read_uint(&p, &mins))
                        goto bad;
                }
                if (*p == '+') {
                    p++;
                    if (!read_uint(&p, &mins))
                        goto bad;
                }
            }
        }
        if (!*p)
            return LOOM_OK;
        if (*p != ',' && *p != '?')
            goto bad;
        if (sep && *p != sep)
            return loom_err_set(err, LOOM_EINVAL,
                                "dependency '%.60s': mixes ',' (all of) and '?' (any of)", text);
        sep = *p++;
    }
bad:
    return loom_err_set(err, LOOM_EINVAL,
                        "dependency '%.60s': expected TYPE:ID[:ID...] with TYPE after, afterany, "
                        "afterok, afternotok or aftercorr, joined by ',' or '?', or singleton",
                        text);
}

/* -------------------------------------------------------------- patterns */

static int put(char *out, size_t outlen, size_t *at, const char *s, int width)
{
    size_t len = strlen(s);
    size_t pad = width > 0 && (size_t)width > len ? (size_t)width - len : 0;
    if (*at + pad + len >= outlen)
        return LOOM_ELIMIT;
    memset(out + *at, '0', pad);
    memcpy(out + *at + pad, s, len);
    *at += pad + len;
    out[*at] = 0;
    return LOOM_OK;
}

int loom_jobspec_expand(const char *pattern, const loom_jobspec_ids_t *ids, const char *node,
                        char *out, size_t outlen, loom_err_t *err)
{
    size_t at = 0;
    if (outlen == 0)
        return loom_err_set(err, LOOM_ELIMIT, "no room");
    out[0] = 0;
    if (pattern[0] == '\\') /* sbatch: a leading backslash turns patterns off */
        return put(out, outlen, &at, pattern + 1, 0) == LOOM_OK
                   ? LOOM_OK
                   : loom_err_set(err, LOOM_ELIMIT, "path '%.60s': too long", pattern);
    for (const char *p = pattern; *p; p++) {
        char buf[64];
        const char *s = buf;
        int width = 0;
        if (*p != '%') {
            buf[0] = *p;
            buf[1] = 0;
        } else {
            const char *q = p + 1;
            while (isdigit((unsigned char)*q) && width < 100)
                width = width * 10 + (*q++ - '0');
            if (width > 10)
                width = 10; /* as sbatch: padding is capped */
            int64_t array_job = ids->array_job_id > 0 ? ids->array_job_id : ids->job_id;
            switch (*q) {
            case '%':
                s = "%";
                width = 0;
                break;
            case 'j': snprintf(buf, sizeof buf, "%lld", (long long)ids->job_id); break;
            case 'J': snprintf(buf, sizeof buf, "%lld.batch", (long long)ids->job_id); break;
            case 'A': snprintf(buf, sizeof buf, "%lld", (long long)array_job); break;
            case 'a':
                snprintf(buf, sizeof buf, "%lld",
                         ids->array_task >= 0 ? (long long)ids->array_task : 4294967294LL);
                break;
            case 'x':
                s = ids->name ? ids->name : "";
                width = 0;
                break;
            case 'u':
                s = ids->user ? ids->user : "";
                width = 0;
                break;
            case 'N':
                s = node ? node : "";
                width = 0;
                break;
            case 'n':
            case 't': s = "0"; break;
            case 's':
                s = "batch";
                width = 0;
                break;
            default:
                /* Not a pattern: kept as written (sbatch does the same). */
                snprintf(buf, sizeof buf, "%.*s", (int)(q - p + (*q ? 1 : 0)), p);
                width = 0;
                break;
            }
            p = *q ? q : q - 1;
        }
        if (put(out, outlen, &at, s, width))
            return loom_err_set(err, LOOM_ELIMIT,
                                "path '%.60s': longer than %zu bytes once "
                                "expanded",
                                pattern, outlen - 1);
    }
    return LOOM_OK;
}

/* ------------------------------------------------------------- --begin */

static bool read_num(const char **p, long long *out, int digits)
{
    char *end;
    long long v = strtoll(*p, &end, 10);
    if (end == *p || *p[0] == '-' || *p[0] == '+' || (digits && end - *p != digits))
        return false;
    *p = end;
    *out = v;
    return true;
}

/* now+N[seconds|minutes|hours|days|weeks] */
static int begin_relative(const char *p, int64_t submit_ns, int64_t *out)
{
    long long n = 0;
    if (*p == '+' && (p++, !read_num(&p, &n, 0)))
        return LOOM_EINVAL;
    static const struct {
        const char *unit;
        long long s;
    } units[] = {{"", 1},         {"s", 1},        {"second", 1},    {"seconds", 1},
                 {"m", 60},       {"minute", 60},  {"minutes", 60},  {"h", 3600},
                 {"hour", 3600},  {"hours", 3600}, {"d", 86400},     {"day", 86400},
                 {"days", 86400}, {"w", 604800},   {"week", 604800}, {"weeks", 604800}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(p, units[i].unit)) {
            if (n > 10LL * 366 * 86400 / units[i].s)
                return LOOM_EINVAL;
            *out = submit_ns + (int64_t)(n * units[i].s) * LOOM_NS_PER_S;
            return LOOM_OK;
        }
    return LOOM_EINVAL;
}

/* YYYY-MM-DD[THH:MM[:SS]] in local time, or an RFC 3339 time with its zone
 * (loom_time_parse_datetime); 1970 to 2200. */
static int begin_date(const char *p, int64_t *out, loom_err_t *why)
{
    const int64_t y2201 = 7289654400LL; /* 2201-01-01T00:00:00Z */
    int64_t ns;
    if (loom_time_parse_datetime(
            p, LOOM_TIME_DATE_ONLY | LOOM_TIME_NO_SECONDS | LOOM_TIME_ZONELESS_LOCAL, &ns, why))
        return LOOM_EINVAL;
    if (ns < 0 || ns / LOOM_NS_PER_S >= y2201)
        return loom_err_set(why, LOOM_EINVAL, "'%.64s': expected a time from 1970 to 2200", p);
    *out = ns;
    return LOOM_OK;
}

/* HH:MM[:SS] in local time: today's, or tomorrow's once it has passed (as
 * sbatch). */
static int begin_time_of_day(const char *p, int64_t submit_ns, int64_t *out)
{
    time_t now = (time_t)(submit_ns / LOOM_NS_PER_S);
    struct tm tm;
    localtime_r(&now, &tm);
    long long h, mi, s = 0;
    if (!read_num(&p, &h, 2) || *p++ != ':' || !read_num(&p, &mi, 2) || h > 23 || mi > 59)
        return LOOM_EINVAL;
    if (*p == ':' && (p++, !read_num(&p, &s, 2) || s > 59))
        return LOOM_EINVAL;
    if (*p)
        return LOOM_EINVAL;
    tm.tm_hour = (int)h;
    tm.tm_min = (int)mi;
    tm.tm_sec = (int)s;
    tm.tm_isdst = -1;
    time_t t = mktime(&tm);
    if (t == (time_t)-1 || t < 0 || t > INT64_MAX / LOOM_NS_PER_S - 86400)
        return LOOM_EINVAL;
    if (t < now)
        t += 86400;
    *out = (int64_t)t * LOOM_NS_PER_S;
    return LOOM_OK;
}

int loom_jobspec_parse_begin(const char *text, int64_t submit_ns, int64_t *out_ns, loom_err_t *err)
{
    loom_err_t why = {0};
    int rc = !strncmp(text, "now", 3) ? begin_relative(text + 3, submit_ns, out_ns)
             : strchr(text, '-')      ? begin_date(text, out_ns, &why)
                                      : begin_time_of_day(text, submit_ns, out_ns);
    if (rc)
        return loom_err_set(err, LOOM_EINVAL,
                            "options.begin: expected now[+N[seconds|minutes|hours|days|weeks]], "
                            "YYYY-MM-DD[THH:MM[:SS]] (local time, or RFC 3339 with a zone) or "
                            "HH:MM[:SS], found '%.64s'%s%s%s",
                            text, why.msg[0] ? " (" : "", why.msg, why.msg[0] ? ")" : "");
    return LOOM_OK;
}
