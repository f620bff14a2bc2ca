/* Trace replay input: arrival times from one column of a CSV file.
 *
 * The file is read by core's RFC 4180 reader (loom_csv_*: header row, comma
 * separators, fields optionally in double quotes with "" for a quote, LF,
 * CRLF or CR line ends), which is strict about what it cannot read: a stray quote, an unterminated
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

/* Reads the header and returns the index of column in *col. */
static int read_header(loom_csv_t *c, const char *column, size_t *col, loom_err_t *err)
{
    int rc = loom_csv_next(c, err);
    if (rc < 0)
        return rc;
    int at = rc == 1 ? loom_csv_find(c, column) : -1;
    if (at >= 0) {
        *col = (size_t)at;
        return LOOM_OK;
    }
    loom_buf_t names = LOOM_BUF_INIT;
    for (size_t i = 0; rc == 1 && i < c->nf && names.len < 400; i++)
        loom_buf_appendf(&names, "%s%s", i ? ", " : "", loom_csv_field(c, i));
    rc = loom_err_set(err, LOOM_EINVAL, "%s:1: no column '%s' in the header (columns: %s)", c->name,
                      column, names.data ? names.data : "");
    loom_buf_free(&names);
    return rc;
}

/* Why a row has no time: the error for the missing-value policy "error". */
static int row_error(const loom_csv_t *c, const char *column, size_t col, loom_err_t *err)
{
    if (col >= c->nf)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s:%zu: row has %zu fields, no '%s' (field %zu); "
                            "use --trace-missing skip (the skip policy) to leave such rows out",
                            c->name, c->rec_line, c->nf, column, col + 1);
    if (loom_csv_field_len(c, col) == 0)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s:%zu:%zu: '%s' is empty, expected a time in seconds; "
                            "use --trace-missing skip (the skip policy) to leave such rows out",
                            c->name, c->rec_line, loom_csv_field_col(c, col), column);
    return loom_err_set(err, LOOM_EINVAL, "%s:%zu:%zu: '%s' is '%.40s', expected a time in seconds",
                        c->name, c->rec_line, loom_csv_field_col(c, col), column,
                        loom_csv_field(c, col));
}

int loom_gen_trace_parse(loom_gen_trace_t *t, const char *text, size_t len, const char *name,
                         const char *column, loom_gen_missing_t missing, loom_err_t *err)
{
    memset(t, 0, sizeof *t);
    if (!column || !*column)
        return loom_err_set(err, LOOM_EINVAL, "trace %s: no column named", name);
    /* A UTF-8 byte order mark before the header is not part of its name. */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
        text += 3;
        len -= 3;
    }
    if (len == 0)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s: empty file, expected a CSV header with a '%s' column", name,
                            column);
    loom_csv_t c;
    loom_csv_init(&c, text, len, name, LOOM_CSV_ALLOW_NUL | LOOM_CSV_CR_EOL, 0);
    size_t col = 0, cap = 0;
    int rc = read_header(&c, column, &col, err);
    double prev = -INFINITY;
    while (rc == LOOM_OK && (rc = loom_csv_next(&c, err)) == 1) {
        double v = 0;
        rc = LOOM_OK;
        if (col >= c.nf ||
            !parse_seconds(loom_csv_field(&c, col), loom_csv_field_len(&c, col), &v)) {
            if (missing == LOOM_GEN_MISSING_SKIP)
                t->skipped++;
            else
                rc = row_error(&c, column, col, err);
            continue;
        }
        if (v < prev)
            t->unsorted++;
        prev = v;
        if (loom_vec_reserve((void **)&t->times, &cap, t->n + 1, sizeof *t->times, 1024)) {
            rc = loom_err_set(err, LOOM_ENOMEM, "%s: out of memory at line %zu", name, c.rec_line);
            break;
        }
        t->times[t->n++] = v;
    }
    loom_csv_free(&c);
    if (rc < 0) {
        loom_gen_trace_free(t);
        return rc;
    }
    if (t->n == 0) {
        loom_gen_trace_free(t);
        return loom_err_set(err, LOOM_EINVAL, "%s: no arrival times in column '%s'", name, column);
    }
    loom_stats_sort(t->times, t->n);
    return LOOM_OK;
}

int loom_gen_trace_load(loom_gen_trace_t *t, const char *path, const char *column,
                        loom_gen_missing_t missing, loom_err_t *err)
{
    memset(t, 0, sizeof *t);
    char file[4096];
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = loom_data_trace(path, file, sizeof file, err);
    if (rc == LOOM_OK)
        rc = loom_buf_read_data(&b, file, (size_t)1 << 30, err);
    if (rc == LOOM_OK)
        rc = loom_gen_trace_parse(t, b.data ? b.data : "", b.len, file, column, missing, err);
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
