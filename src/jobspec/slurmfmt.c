/* Slurm's output formats (loom/slurmfmt.h): format strings and field lists
 * as squeue, sinfo and sacct 22.05 read them, cells as they print them,
 * and Slurm's names for loom's states and reasons. Written from Slurm's
 * documentation and from what its commands print (the conformance test,
 * tests/integration/test_slurm_front.py, compares the two). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "loom/slurmfmt.h"

/* ------------------------------------------------------- format strings */

void loom_slurmfmt_free(loom_slurmfmt_t *f)
{
    free(f->prefix);
    f->prefix = NULL;
    for (size_t i = 0; i < f->n; i++)
        free(f->fields[i].suffix);
    f->n = 0;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

/* One field at s (just after its '%'), up to end. */
static int parse_field(const char *text, const char *s, const char *end, const char *letters,
                       loom_slurmfmt_field_t *f, loom_err_t *err)
{
    const char *p = s;
    f->right = *p == '.';
    if (f->right)
        p++;
    long width = 0;
    while (p < end && isdigit((unsigned char)*p)) {
        width = width * 10 + (*p++ - '0');
        if (width > LOOM_SLURMFMT_MAX_WIDTH)
            return loom_err_set(err, LOOM_EINVAL,
                                "format '%.80s': the width of field %%%.*s is over %d", text,
                                (int)(end - s > 12 ? 12 : end - s), s, LOOM_SLURMFMT_MAX_WIDTH);
    }
    if (p == end)
        return loom_err_set(err, LOOM_EINVAL,
                            "format '%.80s': '%%%.*s' has no field letter (expected %%[.][WIDTH]X, "
                            "X one of %s)",
                            text, (int)(end - s), s, letters);
    if (!isalpha((unsigned char)*p) || !strchr(letters, *p))
        return loom_err_set(err, LOOM_EINVAL,
                            "format '%.80s': '%c' in '%%%.*s' is not a field letter (expected "
                            "%%[.][WIDTH]X, X one of %s)",
                            text, isprint((unsigned char)*p) ? *p : '?', (int)(p - s + 1), s,
                            letters);
    f->letter = *p++;
    f->width = (int)width;
    f->suffix = dup_n(p, (size_t)(end - p));
    return f->suffix ? LOOM_OK : loom_err_set(err, LOOM_ENOMEM, "out of memory");
}

int loom_slurmfmt_parse(const char *text, const char *letters, loom_slurmfmt_t *out,
                        loom_err_t *err)
{
    memset(out, 0, sizeof *out);
    size_t len = strlen(text);
    if (len == 0)
        return loom_err_set(err, LOOM_EINVAL, "format: empty (expected fields such as '%%i %%j')");
    if (len > LOOM_SLURMFMT_MAX_TEXT)
        return loom_err_set(err, LOOM_ELIMIT, "format: %zu bytes, more than the %d allowed", len,
                            LOOM_SLURMFMT_MAX_TEXT);
    const char *pct = strchr(text, '%');
    out->prefix = dup_n(text, pct ? (size_t)(pct - text) : len);
    if (!out->prefix)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    /* Slurm splits at every '%' and skips the empty pieces ("%%", a '%'
     * at the end). */
    for (const char *s = pct; s && *s;) {
        s++; /* past '%' */
        const char *end = strchr(s, '%');
        if (!end)
            end = s + strlen(s);
        if (end > s) {
            if (out->n == LOOM_SLURMFMT_MAX_FIELDS) {
                loom_slurmfmt_free(out);
                return loom_err_set(err, LOOM_ELIMIT, "format '%.80s': more than %d fields", text,
                                    LOOM_SLURMFMT_MAX_FIELDS);
            }
            if (parse_field(text, s, end, letters, &out->fields[out->n], err)) {
                loom_slurmfmt_free(out);
                return err ? err->code : LOOM_EINVAL;
            }
            out->n++;
        }
        s = *end ? end : NULL;
    }
    if (out->n == 0) {
        loom_slurmfmt_free(out);
        return loom_err_set(err, LOOM_EINVAL,
                            "format '%.80s': no field (expected %%[.][WIDTH]X, X one of %s)", text,
                            letters);
    }
    return LOOM_OK;
}

int loom_slurmfmt_cell(loom_buf_t *out, const char *text, int width, bool right)
{
    if (!text)
        text = "";
    size_t len = strlen(text);
    if (width <= 0)
        return loom_buf_append(out, text, len);
    size_t w = (size_t)width, shown = len < w ? len : w;
    int rc = LOOM_OK;
    /* right-justified: Slurm pads first, then cuts to the width, so a long
     * value keeps its beginning either way */
    for (size_t i = shown; right && i < w && rc == LOOM_OK; i++)
        rc = loom_buf_append_char(out, ' ');
    if (rc == LOOM_OK)
        rc = loom_buf_append(out, text, shown);
    for (size_t i = shown; !right && i < w && rc == LOOM_OK; i++)
        rc = loom_buf_append_char(out, ' ');
    return rc;
}

/* ------------------------------------------------------------ field lists */

static int find_name(const char *word, size_t wlen, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(names[i]) == wlen && strncasecmp(names[i], word, wlen) == 0)
            return (int)i;
    for (size_t i = 0; i < n; i++)
        if (strncasecmp(names[i], word, wlen) == 0)
            return (int)i;
    return -1;
}

/* "NAME" or "NAME%W" (W may be negative) of length len at w. */
static int parse_col(const char *text, const char *w, size_t len, const char *const *names,
                     const int *lens, size_t n, loom_slurmfmt_col_t *col, loom_err_t *err)
{
    const char *pct = memchr(w, '%', len);
    size_t wlen = pct ? (size_t)(pct - w) : len;
    int idx = wlen ? find_name(w, wlen, names, n) : -1;
    if (idx < 0)
        return loom_err_set(err, LOOM_EINVAL,
                            "format '%.80s': invalid field requested: '%.*s' (see --helpformat)",
                            text, (int)(wlen > 64 ? 64 : wlen), w);
    col->field = (size_t)idx;
    col->len = lens[idx];
    if (!pct)
        return LOOM_OK;
    const char *p = pct + 1, *end = w + len;
    bool neg = p < end && *p == '-';
    if (neg)
        p++;
    long v = 0;
    if (p == end)
        v = -1;
    while (p < end && v >= 0) {
        if (!isdigit((unsigned char)*p) || v > LOOM_SLURMFMT_MAX_WIDTH)
            v = -1;
        else
            v = v * 10 + (*p++ - '0');
    }
    if (v < 0 || v > LOOM_SLURMFMT_MAX_WIDTH)
        return loom_err_set(err, LOOM_EINVAL,
                            "format '%.80s': '%.*s': expected NAME%%WIDTH, WIDTH a number up "
                            "to %d (negative: left-justified)",
                            text, (int)(len > 64 ? 64 : len), w, LOOM_SLURMFMT_MAX_WIDTH);
    if (v)
        col->len = neg ? -(int)v : (int)v;
    return LOOM_OK;
}

int loom_slurmfmt_fields(const char *text, const char *const *names, const int *lens, size_t n,
                         loom_slurmfmt_cols_t *out, loom_err_t *err)
{
    out->n = 0;
    size_t len = strlen(text);
    if (len > LOOM_SLURMFMT_MAX_TEXT)
        return loom_err_set(err, LOOM_ELIMIT, "format: %zu bytes, more than the %d allowed", len,
                            LOOM_SLURMFMT_MAX_TEXT);
    for (const char *s = text; *s;) {
        const char *end = strchr(s, ',');
        if (!end)
            end = s + strlen(s);
        if (end > s) {
            if (out->n == LOOM_SLURMFMT_MAX_FIELDS)
                return loom_err_set(err, LOOM_ELIMIT, "format '%.80s': more than %d fields", text,
                                    LOOM_SLURMFMT_MAX_FIELDS);
            if (parse_col(text, s, (size_t)(end - s), names, lens, n, &out->cols[out->n], err))
                return err ? err->code : LOOM_EINVAL;
            out->n++;
        }
        s = *end ? end + 1 : end;
    }
    if (out->n == 0)
        return loom_err_set(err, LOOM_EINVAL, "format: no field (expected NAME[%%WIDTH],...)");
    return LOOM_OK;
}

int loom_slurmfmt_sacct_cell(loom_buf_t *out, const char *value, int len, loom_slurmfmt_mode_t mode,
                             bool last)
{
    if (mode != LOOM_SLURMFMT_COLUMNS) {
        int rc = loom_buf_append_str(out, value ? value : "");
        if (rc == LOOM_OK && !(mode == LOOM_SLURMFMT_PARSABLE2 && last))
            rc = loom_buf_append_char(out, '|');
        return rc;
    }
    size_t w = (size_t)(len < 0 ? -len : len);
    const char *v = value ? value : " ";
    size_t vl = strlen(v), shown = vl < w ? vl : w;
    int rc = LOOM_OK;
    for (size_t i = shown; len > 0 && i < w && rc == LOOM_OK; i++)
        rc = loom_buf_append_char(out, ' ');
    if (rc == LOOM_OK && shown)
        rc = loom_buf_append(out, v, vl > w ? shown - 1 : shown);
    if (rc == LOOM_OK && vl > w && w > 0)
        rc = loom_buf_append_char(out, '+'); /* sacct marks a cut value */
    for (size_t i = shown; len < 0 && i < w && rc == LOOM_OK; i++)
        rc = loom_buf_append_char(out, ' ');
    return rc == LOOM_OK ? loom_buf_append_char(out, ' ') : rc;
}

int loom_slurmfmt_sacct_header(loom_buf_t *out, const loom_slurmfmt_cols_t *cols,
                               const char *const *names, loom_slurmfmt_mode_t mode)
{
    int rc = LOOM_OK;
    /* titles are justified as the column's values (JobID's default and a
     * %-N width: left) and cut without a '+' (as sacct 22.05 printed) */
    for (size_t i = 0; i < cols->n && rc == LOOM_OK; i++) {
        const char *name = names[cols->cols[i].field];
        int len = cols->cols[i].len;
        if (mode != LOOM_SLURMFMT_COLUMNS) {
            rc = loom_slurmfmt_sacct_cell(out, name, len, mode, i + 1 == cols->n);
            continue;
        }
        rc = loom_slurmfmt_cell(out, name, len < 0 ? -len : len, len >= 0);
        if (rc == LOOM_OK)
            rc = loom_buf_append_char(out, ' ');
    }
    if (rc == LOOM_OK)
        rc = loom_buf_append_char(out, '\n');
    for (size_t i = 0; mode == LOOM_SLURMFMT_COLUMNS && i < cols->n && rc == LOOM_OK; i++) {
        int len = cols->cols[i].len;
        for (int k = 0; k < (len < 0 ? -len : len) && rc == LOOM_OK; k++)
            rc = loom_buf_append_char(out, '-');
        if (rc == LOOM_OK)
            rc = loom_buf_append_char(out, ' ');
    }
    if (rc == LOOM_OK && mode == LOOM_SLURMFMT_COLUMNS)
        rc = loom_buf_append_char(out, '\n');
    return rc;
}

/* ------------------------------------------------------- times and names */

const char *loom_slurmfmt_duration(int64_t s, char out[32])
{
    if (s < 0) {
        strcpy(out, "INVALID");
        return out;
    }
    long long d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
    if (d)
        snprintf(out, 32, "%lld-%02lld:%02lld:%02lld", d, h, m, sec);
    else if (h)
        snprintf(out, 32, "%lld:%02lld:%02lld", h, m, sec);
    else
        snprintf(out, 32, "%lld:%02lld", m, sec);
    return out;
}

const char *loom_slurmfmt_elapsed(int64_t s, char out[32])
{
    if (s < 0) {
        strcpy(out, "INVALID");
        return out;
    }
    long long d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
    if (d)
        snprintf(out, 32, "%lld-%02lld:%02lld:%02lld", d, h, m, sec);
    else
        snprintf(out, 32, "%02lld:%02lld:%02lld", h, m, sec);
    return out;
}

static const struct {
    const char *loom, *slurm, *code;
} states[] = {
    {"PENDING", "PENDING", "PD"},     {"RUNNING", "RUNNING", "R"},
    {"COMPLETED", "COMPLETED", "CD"}, {"FAILED", "FAILED", "F"},
    {"CANCELLED", "CANCELLED", "CA"}, {"TIMEOUT", "TIMEOUT", "TO"},
    {"SUSPENDED", "SUSPENDED", "S"},
};
#define NSTATES (sizeof states / sizeof states[0])

const char *loom_slurmfmt_state(const char *loom_state, bool short_code)
{
    for (size_t i = 0; loom_state && i < NSTATES; i++)
        if (strcmp(states[i].loom, loom_state) == 0)
            return short_code ? states[i].code : states[i].slurm;
    return NULL;
}

const char *loom_slurmfmt_state_parse(const char *text)
{
    if (strcasecmp(text, "all") == 0)
        return "ALL";
    for (size_t i = 0; i < NSTATES; i++)
        if (strcasecmp(states[i].slurm, text) == 0 || strcasecmp(states[i].code, text) == 0)
            return states[i].loom;
    return NULL;
}

const char *loom_slurmfmt_reason(const char *reason, const char *quota_on, const char *quota_limit)
{
    if (!reason)
        return "None";
    if (strcmp(reason, "JobHeld") == 0)
        return "JobHeldUser";
    /* loom holds a job back for a backfill reservation of a job ahead of
     * it; Slurm says Priority for that */
    if (strcmp(reason, "Reservation") == 0)
        return "Priority";
    if (strcmp(reason, "QuotaLimit") == 0) {
        bool user = !quota_on || strcmp(quota_on, "account") != 0;
        bool gpus = !quota_limit || strcmp(quota_limit, "running") != 0;
        return user ? (gpus ? "QOSMaxGRESPerUser" : "QOSMaxJobsPerUserLimit")
                    : (gpus ? "AssocGrpGRES" : "AssocGrpJobsLimit");
    }
    return reason;
}

/* ---------------------------------------------------------------- hostlist */

typedef struct host {
    const char *name;
    size_t plen;  /* prefix length (up to the trailing digits) */
    size_t ndig;  /* trailing digits; 0: none */
    uint64_t num; /* their value */
} host_t;

static int host_cmp(const void *a, const void *b)
{
    const host_t *x = a, *y = b;
    size_t p = x->plen < y->plen ? x->plen : y->plen;
    int c = strncmp(x->name, y->name, p);
    if (c)
        return c;
    if (x->plen != y->plen)
        return x->plen < y->plen ? -1 : 1;
    if (x->ndig != y->ndig && (x->ndig == 0 || y->ndig == 0))
        return x->ndig < y->ndig ? -1 : 1;
    return x->num < y->num ? -1 : x->num > y->num;
}

int loom_slurmfmt_hostlist(loom_buf_t *out, const char *const *names, size_t n)
{
    host_t *h = calloc(n ? n : 1, sizeof *h);
    if (!h)
        return LOOM_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(names[i]), p = len;
        while (p > 0 && isdigit((unsigned char)names[i][p - 1]) && len - p < 18)
            p--;
        h[i] = (host_t){names[i], p, len - p, strtoull(names[i] + p, NULL, 10)};
    }
    qsort(h, n, sizeof *h, host_cmp);
    int rc = LOOM_OK;
    for (size_t i = 0; i < n && rc == LOOM_OK;) {
        /* the run of hosts with h[i]'s prefix and digit count */
        size_t j = i + 1;
        while (j < n && h[j].ndig && h[i].ndig && h[j].plen == h[i].plen &&
               h[j].ndig == h[i].ndig && strncmp(h[j].name, h[i].name, h[i].plen) == 0)
            j++;
        if (i)
            rc = loom_buf_append_char(out, ',');
        if (j == i + 1) {
            rc = rc ? rc : loom_buf_append_str(out, h[i].name);
            i = j;
            continue;
        }
        rc = rc ? rc : loom_buf_appendf(out, "%.*s[", (int)h[i].plen, h[i].name);
        for (size_t k = i; k < j && rc == LOOM_OK;) {
            size_t e = k;
            while (e + 1 < j && h[e + 1].num <= h[e].num + 1)
                e++;
            int w = (int)h[k].ndig;
            rc = loom_buf_appendf(out, "%s%0*llu", k > i ? "," : "", w,
                                  (unsigned long long)h[k].num);
            if (rc == LOOM_OK && e > k)
                rc = loom_buf_appendf(out, "-%0*llu", w, (unsigned long long)h[e].num);
            k = e + 1;
        }
        rc = rc ? rc : loom_buf_append_char(out, ']');
        i = j;
    }
    free(h);
    return rc;
}
