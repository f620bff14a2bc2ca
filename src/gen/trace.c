/* Trace replay input: arrival times from one column of a CSV file.
 *
 * The reader follows RFC 4180 (header row, comma separators, fields
 * optionally in double quotes with "" for a quote, LF or CRLF line ends)
 * and is strict about what it cannot read: a stray quote, an unterminated
 * quoted field or a value that is not a number is an error naming the file,
 * the line and the column. Empty values (the Alibaba 2023 pod lists leave
 * scheduled_time empty for pending pods) follow the missing-value policy:
 * an error by default, or skipped and counted. Rows may come in any order
 * (several of those lists are not sorted by creation_time); times are
 * sorted after reading, and the number of out-of-order rows is kept.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/gen.h"

enum { CSV_COMMA, CSV_EOL, CSV_EOF };

typedef struct csv {
    const char *p, *end;
    const char *name;
    size_t line;
    const char *line_start;
} csv_t;

static int csv_error(csv_t *c, const char *at, loom_err_t *err, const char *what)
{
    return loom_err_set(err, LOOM_EINVAL, "%s:%zu:%zu: %s", c->name, c->line,
                        (size_t)(at - c->line_start) + 1, what);
}

static void csv_newline(csv_t *c)
{
    /* c->p is at '\n' or '\r'. */
    if (*c->p == '\r' && c->p + 1 < c->end && c->p[1] == '\n')
        c->p++;
    c->p++;
    c->line++;
    c->line_start = c->p;
}

/* Reads one field into out (if out is not NULL) and tells how it ended. */
static int csv_field(csv_t *c, loom_buf_t *out, int *ended, loom_err_t *err)
{
    if (out)
        loom_buf_reset(out);
    if (c->p < c->end && *c->p == '"') {
        const char *open = c->p++;
        for (;;) {
            if (c->p >= c->end)
                return csv_error(c, open, err, "unterminated quoted field");
            char ch = *c->p;
            if (ch == '"') {
                if (c->p + 1 < c->end && c->p[1] == '"') {
                    if (out && loom_buf_append_char(out, '"') != LOOM_OK)
                        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
                    c->p += 2;
                    continue;
                }
                c->p++;
                break;
            }
            if (ch == '\n' || ch == '\r') {
                /* A line break inside quotes is part of the value. */
                if (out && loom_buf_append_char(out, '\n') != LOOM_OK)
                    return loom_err_set(err, LOOM_ENOMEM, "out of memory");
                csv_newline(c);
                continue;
            }
            if (out && loom_buf_append_char(out, ch) != LOOM_OK)
                return loom_err_set(err, LOOM_ENOMEM, "out of memory");
            c->p++;
        }
        if (c->p < c->end && *c->p != ',' && *c->p != '\n' && *c->p != '\r')
            return csv_error(c, c->p, err,
                             "expected ',' or the end of the line after a closing quote");
    } else {
        const char *start = c->p;
        while (c->p < c->end && *c->p != ',' && *c->p != '\n' && *c->p != '\r') {
            if (*c->p == '"')
                return csv_error(
                    c, c->p, err,
                    "unexpected '\"' inside an unquoted field (quote the whole field)");
            c->p++;
        }
        if (out && loom_buf_append(out, start, (size_t)(c->p - start)) != LOOM_OK)
            return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    if (c->p >= c->end) {
        *ended = CSV_EOF;
    } else if (*c->p == ',') {
        c->p++;
        *ended = CSV_COMMA;
    } else {
        csv_newline(c);
        *ended = CSV_EOL;
    }
    return LOOM_OK;
}

/* Parses a time in seconds: a finite real number, blanks around allowed. */
static bool parse_seconds(const char *s, size_t len, double *out)
{
    while (len > 0 && isspace((unsigned char)*s)) {
        s++;
        len--;
    }
    while (len > 0 && isspace((unsigned char)s[len - 1]))
        len--;
    if (len == 0 || len > 64)
        return false;
    char tmp[65];
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    if (memchr(tmp, '\0', len)) /* an embedded NUL */
        return false;
    /* strtod also takes hex floats, "inf" and "nan"; only decimal here. */
    for (size_t i = 0; i < len; i++) {
        char ch = tmp[i];
        if (!(isdigit((unsigned char)ch) || ch == '.' || ch == '-' || ch == '+' || ch == 'e' ||
              ch == 'E'))
            return false;
    }
    char *end;
    errno = 0;
    double v = strtod(tmp, &end);
    if (end != tmp + len || errno == ERANGE || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int push_time(loom_gen_trace_t *t, size_t *cap, double v)
{
    if (t->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 1024;
        double *nt = realloc(t->times, ncap * sizeof *nt);
        if (!nt)
            return LOOM_ENOMEM;
        t->times = nt;
        *cap = ncap;
    }
    t->times[t->n++] = v;
    return LOOM_OK;
}

/* Reads the header and returns the index of column in *col. */
static int read_header(csv_t *c, const char *column, size_t *col, loom_err_t *err)
{
    loom_buf_t f = LOOM_BUF_INIT, names = LOOM_BUF_INIT;
    int ended = CSV_COMMA, rc = LOOM_OK;
    bool found = false;
    for (size_t i = 0; ended == CSV_COMMA; i++) {
        if ((rc = csv_field(c, &f, &ended, err)) != LOOM_OK)
            goto out;
        const char *v = f.data ? f.data : "";
        if (!found && f.len == strlen(column) && strcmp(v, column) == 0) {
            *col = i;
            found = true;
        }
        if (names.len < 400)
            loom_buf_appendf(&names, "%s%s", i ? ", " : "", v);
    }
    if (!found)
        rc = loom_err_set(err, LOOM_EINVAL, "%s:1: no column '%s' in the header (columns: %s)",
                          c->name, column, names.data ? names.data : "");
out:
    loom_buf_free(&f);
    loom_buf_free(&names);
    return rc;
}

int loom_gen_trace_parse(loom_gen_trace_t *t, const char *text, size_t len, const char *name,
                         const char *column, loom_gen_missing_t missing, loom_err_t *err)
{
    memset(t, 0, sizeof *t);
    if (!column || !*column)
        return loom_err_set(err, LOOM_EINVAL, "trace %s: no column named", name);
    csv_t c = {.p = text, .end = text + len, .name = name, .line = 1, .line_start = text};
    /* A UTF-8 byte order mark before the header is not part of its name. */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        c.p += 3;
    if (c.p >= c.end)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s: empty file, expected a CSV header with a '%s' column", name,
                            column);
    size_t col = 0, cap = 0;
    int rc = read_header(&c, column, &col, err);
    if (rc != LOOM_OK)
        return rc;
    loom_buf_t f = LOOM_BUF_INIT;
    double prev = -INFINITY;
    while (c.p < c.end) {
        size_t line = c.line;
        const char *row = c.p;
        int ended = CSV_COMMA;
        bool have = false;
        double v = 0;
        size_t i;
        const char *field_at = row;
        for (i = 0; ended == CSV_COMMA; i++) {
            if (i == col)
                field_at = c.p;
            if ((rc = csv_field(&c, i == col ? &f : NULL, &ended, err)) != LOOM_OK)
                goto fail;
            if (i == col)
                have = true;
        }
        if (i == 1 && c.p - row <= 2 && (row[0] == '\n' || row[0] == '\r'))
            continue; /* a blank line */
        bool ok = have && parse_seconds(f.data ? f.data : "", f.len, &v);
        if (!ok) {
            if (missing == LOOM_GEN_MISSING_SKIP) {
                t->skipped++;
                continue;
            }
            if (!have)
                rc = loom_err_set(
                    err, LOOM_EINVAL,
                    "%s:%zu: row has %zu fields, no '%s' (field %zu); "
                    "use --trace-missing skip (the skip policy) to leave such rows out",
                    name, line, i, column, col + 1);
            else if (f.len == 0)
                rc = loom_err_set(
                    err, LOOM_EINVAL,
                    "%s:%zu:%zu: '%s' is empty, expected a time in seconds; "
                    "use --trace-missing skip (the skip policy) to leave such rows out",
                    name, line, (size_t)(field_at - row) + 1, column);
            else
                rc = loom_err_set(err, LOOM_EINVAL,
                                  "%s:%zu:%zu: '%s' is '%.40s', expected a time in seconds", name,
                                  line, (size_t)(field_at - row) + 1, column, f.data);
            goto fail;
        }
        if (v < prev)
            t->unsorted++;
        prev = v;
        if (push_time(t, &cap, v) != LOOM_OK) {
            rc = loom_err_set(err, LOOM_ENOMEM, "%s: out of memory at line %zu", name, line);
            goto fail;
        }
    }
    loom_buf_free(&f);
    if (t->n == 0) {
        loom_gen_trace_free(t);
        return loom_err_set(err, LOOM_EINVAL, "%s: no arrival times in column '%s'", name, column);
    }
    qsort(t->times, t->n, sizeof *t->times, cmp_double);
    return LOOM_OK;

fail:
    loom_buf_free(&f);
    loom_gen_trace_free(t);
    return rc;
}

int loom_gen_trace_load(loom_gen_trace_t *t, const char *path, const char *column,
                        loom_gen_missing_t missing, loom_err_t *err)
{
    memset(t, 0, sizeof *t);
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = loom_buf_read_file(&b, path, err);
    if (rc == LOOM_OK)
        rc = loom_gen_trace_parse(t, b.data ? b.data : "", b.len, path, column, missing, err);
    loom_buf_free(&b);
    return rc;
}

void loom_gen_trace_free(loom_gen_trace_t *t)
{
    free(t->times);
    memset(t, 0, sizeof *t);
}

double loom_gen_trace_scale_for_rate(const loom_gen_trace_t *t, double rate)
{
    if (t->n < 2 || rate <= 0)
        return 0;
    double span = t->times[t->n - 1] - t->times[0];
    if (span <= 0)
        return 0;
    /* n - 1 gaps over span * scale seconds give rate. */
    return (double)(t->n - 1) / (span * rate);
}
