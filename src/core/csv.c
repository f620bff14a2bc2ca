/* core/csv.c — the one CSV reader (RFC 4180) the trace readers share:
 * quoted fields with "" inside, LF or CRLF line ends, blank lines skipped.
 * Every error names the input, the line and the column. */
#include <stdlib.h>
#include <string.h>

#include "loom/core.h"

void loom_csv_init(loom_csv_t *c, const char *text, size_t len, const char *name, unsigned flags,
                   size_t max_fields)
{
    memset(c, 0, sizeof *c);
    c->p = text;
    c->end = text + len;
    c->name = name;
    c->flags = flags;
    c->max_fields = max_fields;
    c->line = 1;
}

void loom_csv_free(loom_csv_t *c)
{
    loom_buf_free(&c->buf);
    free(c->f);
    c->f = NULL;
    c->nf = c->cap = 0;
}

static int oom(loom_err_t *err)
{
    return loom_err_set(err, LOOM_ENOMEM, "out of memory");
}

/* At a line break: '\n', "\r\n" or (with LOOM_CSV_CR_EOL) a lone '\r'. Gives
 * its length, 0 if c->p is not at one. */
static size_t eol_len(const loom_csv_t *c)
{
    if (c->p >= c->end)
        return 0;
    if (*c->p == '\n')
        return 1;
    if (*c->p == '\r') {
        if (c->p + 1 < c->end && c->p[1] == '\n')
            return 2;
        if (c->flags & LOOM_CSV_CR_EOL)
            return 1;
    }
    return 0;
}

static int start_field(loom_csv_t *c, const char *line_start, loom_err_t *err)
{
    if (c->max_fields && c->nf == c->max_fields)
        return loom_err_set(err, LOOM_EINVAL, "%s:%zu: more than %zu fields", c->name, c->rec_line,
                            c->max_fields);
    if (loom_vec_reserve((void **)&c->f, &c->cap, c->nf + 1, sizeof *c->f, 16))
        return oom(err);
    c->f[c->nf].off = c->buf.len;
    c->f[c->nf].len = 0;
    c->f[c->nf].col = (size_t)(c->p - line_start) + 1;
    c->nf++;
    return LOOM_OK;
}

static int bad_nul(const loom_csv_t *c, const char *line_start, loom_err_t *err)
{
    return loom_err_set(err, LOOM_EINVAL, "%s:%zu:%zu: NUL byte in a field", c->name, c->line,
                        (size_t)(c->p - line_start) + 1);
}

/* A quoted field, c->p at its opening quote. */
static int quoted(loom_csv_t *c, const char **line_start, loom_err_t *err)
{
    size_t qline = c->line, qcol = (size_t)(c->p - *line_start) + 1;
    c->p++;
    for (;;) {
        if (c->p >= c->end)
            return loom_err_set(err, LOOM_EINVAL,
                                "%s:%zu:%zu: unterminated quoted field (expected a closing '\"')",
                                c->name, qline, qcol);
        if (*c->p == '"') {
            if (c->p + 1 < c->end && c->p[1] == '"') {
                if (loom_buf_append_char(&c->buf, '"'))
                    return oom(err);
                c->p += 2;
                continue;
            }
            c->p++;
            break;
        }
        if (*c->p == '\0' && !(c->flags & LOOM_CSV_ALLOW_NUL))
            return bad_nul(c, *line_start, err);
        size_t eol = eol_len(c);
        if (eol) { /* a line break inside quotes is part of the value */
            if (loom_buf_append(&c->buf, c->p, eol))
                return oom(err);
            c->p += eol;
            c->line++;
            *line_start = c->p;
            continue;
        }
        if (loom_buf_append_char(&c->buf, *c->p))
            return oom(err);
        c->p++;
    }
    if (c->p < c->end && *c->p != ',' && *c->p != '\n' && *c->p != '\r')
        return loom_err_set(err, LOOM_EINVAL,
                            "%s:%zu:%zu: expected ',' or the end of the line after a closing quote",
                            c->name, c->line, (size_t)(c->p - *line_start) + 1);
    return LOOM_OK;
}

static int unquoted(loom_csv_t *c, const char *line_start, loom_err_t *err)
{
    const char *start = c->p;
    while (c->p < c->end && *c->p != ',' && *c->p != '\n' && *c->p != '\r') {
        if (*c->p == '\0' && !(c->flags & LOOM_CSV_ALLOW_NUL))
            return bad_nul(c, line_start, err);
        if (*c->p == '"')
            return loom_err_set(
                err, LOOM_EINVAL,
                "%s:%zu:%zu: unexpected '\"' inside an unquoted field (quote the whole field)",
                c->name, c->line, (size_t)(c->p - line_start) + 1);
        c->p++;
    }
    if (loom_buf_append(&c->buf, start, (size_t)(c->p - start)))
        return oom(err);
    return LOOM_OK;
}

int loom_csv_next(loom_csv_t *c, loom_err_t *err)
{
    size_t eol;
    while ((eol = eol_len(c))) { /* skip blank lines */
        c->p += eol;
        c->line++;
    }
    if (c->p >= c->end)
        return 0;
    loom_buf_reset(&c->buf);
    c->nf = 0;
    c->rec_line = c->line;
    const char *line_start = c->p;
    int rc;
    for (;;) {
        if ((rc = start_field(c, line_start, err)))
            return rc;
        if (c->p < c->end && *c->p == '"')
            rc = quoted(c, &line_start, err);
        else
            rc = unquoted(c, line_start, err);
        if (rc)
            return rc;
        c->f[c->nf - 1].len = c->buf.len - c->f[c->nf - 1].off;
        if (loom_buf_append_char(&c->buf, '\0'))
            return oom(err);
        if (c->p >= c->end)
            break;
        if (*c->p == ',') {
            c->p++;
            continue;
        }
        if (!(eol = eol_len(c)))
            return loom_err_set(err, LOOM_EINVAL, "%s:%zu:%zu: bare carriage return", c->name,
                                c->line, (size_t)(c->p - line_start) + 1);
        c->p += eol;
        c->line++;
        break;
    }
    return 1;
}

const char *loom_csv_field(const loom_csv_t *c, size_t i)
{
    return c->buf.data + c->f[i].off;
}

size_t loom_csv_field_len(const loom_csv_t *c, size_t i)
{
    return c->f[i].len;
}

int loom_csv_find(const loom_csv_t *c, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < c->nf; i++)
        if (loom_csv_field_len(c, i) == n && memcmp(loom_csv_field(c, i), name, n) == 0)
            return (int)i;
    return -1;
}

size_t loom_csv_field_col(const loom_csv_t *c, size_t i)
{
    return c->f[i].col;
}
