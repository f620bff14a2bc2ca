/* The job catalog: load, validate (every problem, with positions), build.
 *
 * Validation runs in passes over the positioned JSON tree (jsonpos.c):
 * first every member of "defaults" and of each job on its own (types,
 * ranges, unknown keys, files), then each job merged with the defaults
 * (required members, cross-member rules, ${param} references). Problems are
 * collected, never returned early, so one run shows them all. Only a
 * catalog without problems is turned into loom_catalog_t. */
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/catalog_int.h"
#include "catalog/catalog_model.h"

/* ------------------------------------------------------------- issues */

int loom__catalog_issue_add(loom_catalog_issues_t *issues, const char *file, int line, int col,
                            const char *pointer, const char *fmt, ...)
{
    if (!issues)
        return LOOM_OK;
    loom_buf_t msg = LOOM_BUF_INIT, text = LOOM_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    int rc = loom_buf_vappendf(&msg, fmt, ap);
    va_end(ap);
    if (rc || loom_buf_appendf(&text, "%s:%d:%d: %s: %s", file, line, col,
                               *pointer ? pointer : "(root)", msg.data))
        goto oom;
    for (size_t i = 0; i < issues->count; i++)
        if (strcmp(issues->items[i].text, text.data) == 0) { /* said already */
            loom_buf_free(&msg);
            loom_buf_free(&text);
            return LOOM_OK;
        }
    if (loom_vec_reserve((void **)&issues->items, &issues->cap, issues->count + 1,
                         sizeof *issues->items, 8))
        goto oom;
    loom_catalog_issue_t *it = &issues->items[issues->count];
    it->file = strdup(file);
    it->pointer = strdup(pointer);
    it->line = line;
    it->column = col;
    it->message = loom_buf_detach(&msg);
    it->text = loom_buf_detach(&text);
    if (!it->file || !it->pointer || !it->message || !it->text) {
        free(it->file);
        free(it->pointer);
        free(it->message);
        free(it->text);
        goto oom;
    }
    issues->count++;
    return LOOM_OK;
oom:
    loom_buf_free(&msg);
    loom_buf_free(&text);
    return LOOM_ENOMEM;
}

void loom_catalog_issues_free(loom_catalog_issues_t *issues)
{
    if (!issues)
        return;
    for (size_t i = 0; i < issues->count; i++) {
        free(issues->items[i].file);
        free(issues->items[i].pointer);
        free(issues->items[i].message);
        free(issues->items[i].text);
    }
    free(issues->items);
    issues->items = NULL;
    issues->count = issues->cap = 0;
}

/* ------------------------------------------------------------- context */

typedef struct vctx {
    const char *file;
    const char *base_dir;
    loom__jsonpos_t pos;
    loom_catalog_issues_t *issues;
    int oom;
} vctx_t;

static void vissue(vctx_t *v, const char *ptr, bool at_key, const char *fmt, va_list ap)
{
    json_t *p = json_object_get(at_key ? v->pos.keys : v->pos.values, ptr);
    if (!p) /* e.g. a missing member: fall back to the enclosing value */
        p = json_object_get(v->pos.values, ptr);
    json_int_t pos = p ? json_integer_value(p) : LOOM__POS(1, 1);
    loom_buf_t msg = LOOM_BUF_INIT;
    if (loom_buf_vappendf(&msg, fmt, ap) ||
        loom__catalog_issue_add(v->issues, v->file, LOOM__POS_LINE(pos), LOOM__POS_COL(pos), ptr,
                                "%s", msg.data))
        v->oom = 1;
    loom_buf_free(&msg);
}

static void issue(vctx_t *v, const char *ptr, const char *fmt, ...) LOOM_PRINTF(3, 4);
static void issue(vctx_t *v, const char *ptr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vissue(v, ptr, false, fmt, ap);
    va_end(ap);
}

static void issue_key(vctx_t *v, const char *ptr, const char *fmt, ...) LOOM_PRINTF(3, 4);
static void issue_key(vctx_t *v, const char *ptr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vissue(v, ptr, true, fmt, ap);
    va_end(ap);
}

/* ptr + "/" + token (escaped); caller frees. */
static char *child(vctx_t *v, const char *ptr, const char *tok)
{
    loom_buf_t b = LOOM_BUF_INIT;
    if (loom_buf_append_str(&b, ptr) || loom_json_pointer_append(&b, tok)) {
        loom_buf_free(&b);
        v->oom = 1;
        return NULL;
    }
    return loom_buf_detach(&b);
}

static char *child_idx(vctx_t *v, const char *ptr, size_t i)
{
    char tok[32];
    snprintf(tok, sizeof tok, "%zu", i);
    return child(v, ptr, tok);
}

/* "a string \"abc\"", "the integer -1", "an object", ... */
static const char *found(const json_t *j, char *buf, size_t n)
{
    switch (json_typeof(j)) {
    case JSON_STRING: {
        const char *s = json_string_value(j);
        size_t l = json_string_length(j);
        snprintf(buf, n, "the string \"%.*s%s\"", (int)(l > 40 ? 40 : l), s, l > 40 ? "..." : "");
        return buf;
    }
    case JSON_INTEGER:
        snprintf(buf, n, "the integer %" JSON_INTEGER_FORMAT, json_integer_value(j));
        return buf;
    case JSON_REAL: {
        char num[40];
        loom_format_real(json_real_value(j), num, sizeof num);
        snprintf(buf, n, "the number %s", num);
        return buf;
    }
    default: return loom_json_type_name(j);
    }
}
#define FOUND(j) found((j), fbuf, sizeof fbuf)

/* ------------------------------------------------------------- keys */

/* Optimal-string-alignment distance (Levenshtein plus adjacent
 * transpositions, so "jbos" is one edit from "jobs"), ignoring case. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    size_t d[65][65];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            size_t best = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

/* Reports members of obj not in allowed[]; returns how many. */
static int check_keys(vctx_t *v, const json_t *obj, const char *ptr, const char *const *allowed,
                      size_t n, const char *what)
{
    const char *k;
    json_t *val;
    int bad = 0;
    json_object_foreach((json_t *)obj, k, val)
    {
        bool ok = false;
        for (size_t i = 0; i < n && !ok; i++)
            ok = strcmp(k, allowed[i]) == 0;
        if (ok)
            continue;
        bad++;
        const char *best = NULL;
        size_t bd = SIZE_MAX;
        for (size_t i = 0; i < n; i++) {
            size_t d = edit_distance(k, allowed[i]);
            if (d < bd) {
                bd = d;
                best = allowed[i];
            }
        }
        size_t limit = strlen(k) <= 4 ? 1 : strlen(k) <= 8 ? 2 : 3;
        loom_buf_t list = LOOM_BUF_INIT;
        for (size_t i = 0; i < n; i++)
            loom_buf_appendf(&list, "%s%s", i ? ", " : "", allowed[i]);
        char *p = child(v, ptr, k);
        if (p) {
            if (best && bd <= limit)
                issue_key(v, p,
                          "found an unknown key '%s', expected one of the %s keys: %s (did you "
                          "mean '%s'?)",
                          k, what, list.data, best);
            else
                issue_key(v, p, "found an unknown key '%s', expected one of the %s keys: %s", k,
                          what, list.data);
        }
        free(p);
        loom_buf_free(&list);
    }
    return bad;
}

/* ------------------------------------------------------------- values */

static bool name_ok(const char *s, bool first_alpha_only)
{
    if (!*s)
        return false;
    for (const char *c = s; *c; c++) {
        bool alnum = isalnum((unsigned char)*c) && (unsigned char)*c < 0x80;
        if (c == s && !alnum && !(first_alpha_only && *c == '_'))
            return false;
        if (!alnum && !strchr(first_alpha_only ? "_" : "._-", *c))
            return false;
        if (first_alpha_only && c == s && isdigit((unsigned char)*c))
            return false;
    }
    return true;
}

static bool want_string(vctx_t *v, const json_t *j, const char *ptr, bool nonempty)
{
    char fbuf[96];
    if (!json_is_string(j) || (nonempty && json_string_length(j) == 0)) {
        issue(v, ptr, "found %s, expected a%s string", FOUND(j), nonempty ? " non-empty" : "");
        return false;
    }
    return true;
}

static bool want_int(vctx_t *v, const json_t *j, const char *ptr, int64_t lo, int64_t hi,
                     int64_t *out)
{
    char fbuf[96];
    if (!json_is_integer(j) || json_integer_value(j) < lo || json_integer_value(j) > hi) {
        if (lo == hi)
            issue(v, ptr, "found %s, expected %" PRId64, FOUND(j), lo);
        else
            issue(v, ptr, "found %s, expected an integer from %" PRId64 " to %" PRId64, FOUND(j),
                  lo, hi);
        return false;
    }
    if (out)
        *out = json_integer_value(j);
    return true;
}

static bool want_size(vctx_t *v, const json_t *j, const char *ptr, uint64_t *out)
{
    char fbuf[96];
    uint64_t b = 0;
    loom_err_t e;
    bool ok =
        (json_is_integer(j) && json_integer_value(j) > 0 &&
         (b = (uint64_t)json_integer_value(j))) ||
        (json_is_string(j) && loom_parse_size(json_string_value(j), &b, &e) == LOOM_OK && b > 0);
    if (!ok) {
        issue(v, ptr,
              "found %s, expected a positive size such as \"16GiB\", \"512M\" or a number of bytes",
              FOUND(j));
        return false;
    }
    if (out)
        *out = b;
    return true;
}

static bool want_duration(vctx_t *v, const json_t *j, const char *ptr, int64_t *out)
{
    char fbuf[96];
    int64_t ns = 0;
    loom_err_t e;
    bool ok = (json_is_integer(j) && json_integer_value(j) > 0 &&
               json_integer_value(j) < INT64_MAX / LOOM_NS_PER_S &&
               (ns = json_integer_value(j) * LOOM_NS_PER_S)) ||
              (json_is_string(j) && loom_parse_duration(json_string_value(j), &ns, &e) == LOOM_OK &&
               ns > 0);
    if (!ok) {
        issue(v, ptr,
              "found %s, expected a positive duration such as \"90m\", \"1h30m\", "
              "\"01:30:00\" or a number of seconds",
              FOUND(j));
        return false;
    }
    if (out)
        *out = ns;
    return true;
}

static bool want_number(vctx_t *v, const json_t *j, const char *ptr, bool positive, double *out)
{
    char fbuf[96];
    if (!json_is_number(j) || (positive && !(json_number_value(j) > 0))) {
        issue(v, ptr, "found %s, expected a%s number", FOUND(j), positive ? " positive" : "");
        return false;
    }
    if (out)
        *out = json_number_value(j);
    return true;
}

/* Resolves a path against the catalog's directory; caller frees. NULL:
 * out of memory (not "", which would read as a missing file). */
static char *resolve(const char *base, const char *path)
{
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = path[0] == '/' || !base || !*base ? loom_buf_append_str(&b, path)
                                               : loom_buf_appendf(&b, "%s/%s", base, path);
    if (rc != LOOM_OK) {
        loom_buf_free(&b);
        return NULL;
    }
    return loom_buf_detach(&b);
}

static void want_file(vctx_t *v, const json_t *j, const char *ptr, const char *what)
{
    if (!want_string(v, j, ptr, true))
        return;
    char *p = resolve(v->base_dir, json_string_value(j));
    if (!p) {
        v->oom = 1;
        return;
    }
    if (access(p, R_OK) != 0)
        issue(v, ptr,
              "found \"%s\" (%s), expected a readable %s file (paths are relative to the "
              "catalog's directory)",
              json_string_value(j), p, what);
    free(p);
}

/* Checks "${name}" references in s against the parameters object. */
static void check_refs(vctx_t *v, const char *s, const json_t *params, const char *ptr)
{
    for (const char *c = s; *c; c++) {
        if (*c != '$')
            continue;
        if (c[1] == '$') {
            c++;
            continue;
        }
        if (c[1] != '{')
            continue;
        const char *end = strchr(c + 2, '}');
        if (!end) {
            issue(v, ptr,
                  "found an unterminated reference \"%.20s\", expected ${name} (or $$ for a "
                  "literal $)",
                  c);
            return;
        }
        size_t n = (size_t)(end - c - 2);
        char name[128];
        if (n == 0 || n >= sizeof name) {
            issue(v, ptr, "found a reference \"%.*s\", expected ${name} with a parameter name",
                  (int)(end - c + 1 > 60 ? 60 : end - c + 1), c);
            c = end;
            continue;
        }
        memcpy(name, c + 2, n);
        name[n] = 0;
        if (!json_object_get(params, name) && strcmp(name, "catalog_dir") != 0) {
            const char *best = NULL, *k;
            size_t bd = SIZE_MAX;
            json_t *pv;
            json_object_foreach((json_t *)params, k, pv)
            {
                size_t d = edit_distance(name, k);
                if (d < bd)
                    bd = d, best = k;
            }
            if (best && bd <= 2)
                issue(v, ptr,
                      "found a reference to an unknown parameter '%s', expected one of the "
                      "job's parameters (did you mean '%s'?)",
                      name, best);
            else
                issue(v, ptr,
                      "found a reference to an unknown parameter '%s', expected one of the "
                      "job's parameters%s",
                      name, json_object_size(params) ? "" : " (the job has none)");
        }
        c = end;
    }
}

/* ------------------------------------------------------------- members */

static const char *const top_keys[] = {"$schema", "version", "description", "defaults", "jobs"};
static const char *const job_keys[] = {
    "name",       "description", "executable", "arguments", "environment", "resources",
    "time_limit", "weight",      "parameters", "template",  "labels",      "model",
    "image",      "reconfig",    "array",      "then",      "warm_start"};
static const char *const res_keys[] = {"cpus",      "memory",     "gpus",
                                       "gpu_share", "gpu_memory", "gpu_type"};
static const char *const model_keys[] = {"path",      "batch",     "train",
                                         "optimizer", "precision", "device"};
/* The estimator's names (docs/estimate.md); loomd checks them again. */
static const char *const optimizer_names[] = {"sgd", "momentum", "adam"};
static const char *const precision_names[] = {"fp32", "fp16", "bf16", "mixed"};
#define MODEL_BATCH_MAX ((int64_t)1 << 24)
static const char *const choice_keys[] = {"type", "values", "weights"};
static const char *const range_keys[] = {"type", "min", "max", "log"};
static const char *const any_param_keys[] = {"type", "values", "weights", "min", "max", "log"};
#define N(a) (sizeof(a) / sizeof((a)[0]))

#define MAX_INT_PARAM ((int64_t)1 << 53)

static void check_param(vctx_t *v, const json_t *pj, const char *ptr)
{
    char fbuf[96];
    if (!json_is_object(pj)) {
        issue(v, ptr,
              "found %s, expected an object such as {\"type\": \"choice\", \"values\": [...]}",
              FOUND(pj));
        return;
    }
    const json_t *type = json_object_get(pj, "type");
    const char *t = json_string_value(type);
    char *tp = child(v, ptr, "type");
    if (!type) {
        issue(v, ptr, "found no member 'type', expected \"type\": \"choice\", \"int\" or \"real\"");
        check_keys(v, pj, ptr, any_param_keys, N(any_param_keys), "parameter");
        free(tp);
        return;
    }
    if (!t || (strcmp(t, "choice") && strcmp(t, "int") && strcmp(t, "real"))) {
        issue(v, tp, "found %s, expected \"choice\", \"int\" or \"real\"", FOUND(type));
        check_keys(v, pj, ptr, any_param_keys, N(any_param_keys), "parameter");
        free(tp);
        return;
    }
    free(tp);
    if (strcmp(t, "choice") == 0) {
        check_keys(v, pj, ptr, choice_keys, N(choice_keys), "choice parameter");
        const json_t *vals = json_object_get(pj, "values");
        const json_t *w = json_object_get(pj, "weights");
        char *vp = child(v, ptr, "values"), *wp = child(v, ptr, "weights");
        if (!vals)
            issue(v, ptr,
                  "found no member 'values', expected \"values\": a non-empty array of choices");
        else if (!json_is_array(vals) || json_array_size(vals) == 0)
            issue(v, vp, "found %s, expected a non-empty array of choices",
                  json_is_array(vals) ? "an empty array" : FOUND(vals));
        else {
            size_t i;
            json_t *e;
            json_array_foreach(vals, i, e)
            {
                if (json_is_object(e) || json_is_array(e) || json_is_null(e)) {
                    char *ep = child_idx(v, vp, i);
                    if (ep)
                        issue(v, ep, "found %s, expected a string, number or boolean", FOUND(e));
                    free(ep);
                }
            }
        }
        if (w) {
            if (!json_is_array(w))
                issue(v, wp, "found %s, expected an array of non-negative numbers", FOUND(w));
            else if (json_array_size(vals) > 0 && json_array_size(w) != json_array_size(vals))
                issue(v, wp, "found %zu weights, expected %zu (one per value)", json_array_size(w),
                      json_array_size(vals));
            else {
                double sum = 0;
                size_t i;
                json_t *e;
                bool ok = true;
                json_array_foreach(w, i, e)
                {
                    if (!json_is_number(e) || !(json_number_value(e) >= 0)) {
                        char *ep = child_idx(v, wp, i);
                        if (ep)
                            issue(v, ep, "found %s, expected a non-negative number", FOUND(e));
                        free(ep);
                        ok = false;
                    } else {
                        sum += json_number_value(e);
                    }
                }
                if (ok && !(sum > 0) && json_array_size(w) > 0)
                    issue(v, wp, "found weights that sum to 0, expected a positive sum");
            }
        }
        free(vp);
        free(wp);
        return;
    }
    bool is_int = strcmp(t, "int") == 0;
    check_keys(v, pj, ptr, range_keys, N(range_keys), is_int ? "int parameter" : "real parameter");
    const json_t *mn = json_object_get(pj, "min"), *mx = json_object_get(pj, "max"),
                 *lg = json_object_get(pj, "log");
    char *mnp = child(v, ptr, "min"), *mxp = child(v, ptr, "max"), *lgp = child(v, ptr, "log");
    bool ok = true;
    double lo = 0, hi = 0;
    for (int k = 0; k < 2; k++) {
        const json_t *j = k ? mx : mn;
        const char *jp = k ? mxp : mnp;
        double *d = k ? &hi : &lo;
        if (!j) {
            issue(v, ptr, "found no member '%s', expected \"%s\": %s", k ? "max" : "min",
                  k ? "max" : "min", is_int ? "an integer" : "a number");
            ok = false;
        } else if (is_int) {
            int64_t x;
            if (want_int(v, j, jp, -MAX_INT_PARAM, MAX_INT_PARAM, &x))
                *d = (double)x;
            else
                ok = false;
        } else if (!want_number(v, j, jp, false, d)) {
            ok = false;
        }
    }
    bool log = false;
    if (lg && !json_is_boolean(lg)) {
        issue(v, lgp, "found %s, expected true or false", FOUND(lg));
    } else if (lg) {
        log = json_is_true(lg);
    }
    if (ok && lo > hi)
        issue(v, mxp, "found a max (%s) below the min, expected max >= min", FOUND(mx));
    else if (ok && log && (is_int ? lo < 1 : !(lo > 0)))
        issue(v, mnp, "found %s with \"log\": true, expected min %s", FOUND(mn),
              is_int ? ">= 1" : "> 0");
    free(mnp);
    free(mxp);
    free(lgp);
}

static void check_string_map(vctx_t *v, const json_t *j, const char *ptr, bool env_names,
                             const char *what)
{
    char fbuf[96];
    if (!json_is_object(j)) {
        issue(v, ptr, "found %s, expected an object of %s", FOUND(j), what);
        return;
    }
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)j, k, val)
    {
        char *p = child(v, ptr, k);
        if (!p)
            return;
        if (env_names && !name_ok(k, true))
            issue_key(v, p,
                      "found the variable name '%s', expected a name matching "
                      "[A-Za-z_][A-Za-z0-9_]*",
                      k);
        else if (!env_names && (!*k || strlen(k) > 253 ||
                                strspn(k, "abcdefghijklmnopqrstuvwxyz"
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789._/-") != strlen(k)))
            issue_key(v, p,
                      "found the label name '%s', expected 1-253 characters from "
                      "[A-Za-z0-9._/-]",
                      k);
        if (!json_is_string(val) && !json_is_number(val))
            issue(v, p, "found %s, expected a string (or a number)", FOUND(val));
        free(p);
    }
}

/* "${name}" exactly (one whole reference); its name in out. */
static bool whole_ref(const json_t *j, char *out, size_t n)
{
    const char *s = json_string_value(j);
    size_t len = s ? strlen(s) : 0;
    if (len < 4 || len - 3 >= n || s[0] != '$' || s[1] != '{' || s[len - 1] != '}' ||
        memchr(s + 2, '}', len - 3))
        return false;
    memcpy(out, s + 2, len - 3);
    out[len - 3] = '\0';
    return name_ok(out, true);
}

static bool in_names(const char *s, const char *const *names, size_t n)
{
    for (size_t i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return true;
    return false;
}

/* A member of the model object that may name a parameter instead of a
 * value; the literal is checked here, the reference in check_model_refs. */
/* An sbatch array spec ("0-9", "1,3,5", "0-99:2%8"), passed to loomd as
 * job.submit's options.array; loomd parses it fully, this checks its shape. */
#define ARRAY_SPEC_MAX 256
static void check_array_spec(vctx_t *v, const json_t *val, const char *p)
{
    char fbuf[96];
    const char *s = json_is_string(val) ? json_string_value(val) : NULL;
    size_t n = s ? strlen(s) : 0;
    bool ok = s && n > 0 && n <= ARRAY_SPEC_MAX && s[0] >= '0' && s[0] <= '9';
    for (size_t i = 0; ok && i < n; i++)
        ok = strchr("0123456789,-:%", s[i]) != NULL;
    if (!ok)
        issue(v, p,
              "found %s, expected an sbatch array spec of at most %d characters such as "
              "\"0-9\", \"1,3,5\" or \"0-99:2%%8\"",
              FOUND(val), ARRAY_SPEC_MAX);
}

/* "then": the names of the pipeline's later stages, in order (checked
 * against the catalog's jobs by check_then_names). */
#define THEN_MAX 16
static void check_then_shape(vctx_t *v, const json_t *val, const char *p)
{
    char fbuf[96];
    size_t n = json_is_array(val) ? json_array_size(val) : 0;
    if (n == 0 || n > THEN_MAX) {
        issue(v, p, "found %s, expected an array of 1 to %d job names (the later stages)",
              json_is_array(val) ? (n ? "too many stages" : "an empty array") : FOUND(val),
              THEN_MAX);
        return;
    }
    size_t i;
    json_t *e;
    json_array_foreach(val, i, e)
    {
        if (json_is_string(e) && json_string_length(e) > 0)
            continue;
        char *ep = child_idx(v, p, i);
        if (ep)
            issue(v, ep, "found %s, expected the name of a job of the catalog", FOUND(e));
        free(ep);
    }
}

/* ---------------------------------------------------------- reconfig */

/* Rubick's fields (catalog_int.h). The bounds are rubick's: LOOM_RUBICK_*
 * in include/loom/rubick.h and LOOM_SCHED_MAX_GPUS. */
#define RC_BATCH_MAX ((int64_t)1 << 24)
#define RC_GPUS_MAX  16
#define RC_ACCUM_MAX 64
static const loom__reconfig_field_t reconfig_plan_fields[] = {
    {"accumulation", LOOM__RC_INT, false, 1, RC_ACCUM_MAX, NULL, 0},
    {"recompute", LOOM__RC_BOOL, false, 0, 0, NULL, 0},
    {"zero", LOOM__RC_INT, false, 0, 3, NULL, 0},
    {"offload", LOOM__RC_BOOL, false, 0, 0, NULL, 0},
};
static const loom__reconfig_field_t reconfig_fields[] = {
    {"global_batch", LOOM__RC_INT, true, 1, RC_BATCH_MAX, NULL, 0},
    {"gpus", LOOM__RC_INT_RANGE, false, 1, RC_GPUS_MAX, NULL, 0},
    {"accumulation", LOOM__RC_INT_SET, false, 1, RC_ACCUM_MAX, NULL, 0},
    {"recompute", LOOM__RC_BOOL_SET, false, 0, 0, NULL, 0},
    {"zero", LOOM__RC_INT_SET, false, 0, 3, NULL, 0},
    {"offload", LOOM__RC_BOOL_SET, false, 0, 0, NULL, 0},
    {"cpus", LOOM__RC_MILLI_RANGE, false, 1, 4096000, NULL, 0},
    {"memory", LOOM__RC_SIZE_RANGE, false, 1, (int64_t)1 << 50, NULL, 0},
    {"plan", LOOM__RC_OBJECT, false, 0, 0, reconfig_plan_fields, N(reconfig_plan_fields)},
    {"model", LOOM__RC_NAME, false, 1, 31, NULL, 0},
    /* the job's first measured steps, LOOM_RUBICK_MEASURED_MAX at most */
    {"measured", LOOM__RC_OBJECTS, false, 0, 8, NULL, 0},
};

const loom__reconfig_field_t *loom__catalog_reconfig_fields(size_t *n)
{
    *n = N(reconfig_fields);
    return reconfig_fields;
}

/* A size in bytes (an integer or "16GiB") within f's bounds, or -1. */
static int64_t reconfig_size(const json_t *j, const loom__reconfig_field_t *f)
{
    uint64_t b = 0;
    loom_err_t e;
    if (json_is_integer(j) && json_integer_value(j) > 0)
        b = (uint64_t)json_integer_value(j);
    else if (!json_is_string(j) || loom_parse_size(json_string_value(j), &b, &e) != LOOM_OK)
        return -1;
    return b >= (uint64_t)f->lo && b <= (uint64_t)f->hi ? (int64_t)b : -1;
}

/* {"min": X, "max": X} of f's kind; the pair compared as rubick compares
 * it (integers, milli-units, MiB rounded up). */
static void check_reconfig_range(vctx_t *v, const json_t *j, const char *ptr,
                                 const loom__reconfig_field_t *f)
{
    static const char *const minmax[] = {"min", "max"};
    char fbuf[96];
    const char *what = f->kind == LOOM__RC_INT_RANGE     ? "integers"
                       : f->kind == LOOM__RC_MILLI_RANGE ? "numbers"
                                                         : "sizes such as \"16GiB\"";
    if (!json_is_object(j)) {
        issue(v, ptr, "found %s, expected an object {\"min\": X, \"max\": X} of %s", FOUND(j),
              what);
        return;
    }
    if (check_keys(v, j, ptr, minmax, 2, "range"))
        return;
    int64_t val[2];
    for (int k = 0; k < 2; k++) {
        const json_t *m = json_object_get(j, minmax[k]);
        if (!m) {
            issue(v, ptr, "found no member '%s', expected {\"min\": X, \"max\": X} of %s",
                  minmax[k], what);
            return;
        }
        char *p = child(v, ptr, minmax[k]);
        if (!p)
            return;
        bool ok = true;
        if (f->kind == LOOM__RC_INT_RANGE) {
            ok = want_int(v, m, p, f->lo, f->hi, &val[k]);
        } else if (f->kind == LOOM__RC_MILLI_RANGE) {
            double d = json_is_number(m) ? json_number_value(m) * 1000 : NAN;
            ok = d >= (double)f->lo && d <= (double)f->hi;
            if (ok)
                val[k] = llround(d);
            else
                issue(v, p, "found %s, expected a number from %g to %g", FOUND(m),
                      (double)f->lo / 1000, (double)f->hi / 1000);
        } else {
            int64_t b = reconfig_size(m, f);
            ok = b > 0;
            if (ok)
                val[k] = (b + (1 << 20) - 1) >> 20;
            else
                issue(v, p, "found %s, expected a size from 1 byte to 1PiB such as \"16GiB\"",
                      FOUND(m));
        }
        free(p);
        if (!ok)
            return;
    }
    if (val[0] > val[1])
        issue(v, ptr, "found min above max, expected min <= max");
}

/* A non-empty array of integers lo..hi or of booleans. */
static void check_reconfig_set(vctx_t *v, const json_t *j, const char *ptr,
                               const loom__reconfig_field_t *f)
{
    char fbuf[96];
    bool boolean = f->kind == LOOM__RC_BOOL_SET;
    if (!json_is_array(j) || json_array_size(j) == 0) {
        issue(v, ptr, "found %s, expected a non-empty array of %s",
              json_is_array(j) ? "an empty array" : FOUND(j), boolean ? "true/false" : "integers");
        return;
    }
    size_t i;
    json_t *e;
    json_array_foreach(j, i, e)
    {
        char *p = child_idx(v, ptr, i);
        if (!p)
            return;
        if (boolean && !json_is_boolean(e))
            issue(v, p, "found %s, expected true or false", FOUND(e));
        else if (!boolean)
            want_int(v, e, p, f->lo, f->hi, NULL);
        free(p);
    }
}

static void check_reconfig(vctx_t *v, const json_t *obj, const char *ptr,
                           const loom__reconfig_field_t *fields, size_t n, const char *what);

static void check_reconfig_value(vctx_t *v, const json_t *j, const char *ptr,
                                 const loom__reconfig_field_t *f)
{
    char fbuf[96];
    switch (f->kind) {
    case LOOM__RC_INT: want_int(v, j, ptr, f->lo, f->hi, NULL); break;
    case LOOM__RC_INT_RANGE:
    case LOOM__RC_MILLI_RANGE:
    case LOOM__RC_SIZE_RANGE: check_reconfig_range(v, j, ptr, f); break;
    case LOOM__RC_INT_SET:
    case LOOM__RC_BOOL_SET: check_reconfig_set(v, j, ptr, f); break;
    case LOOM__RC_BOOL:
        if (!json_is_boolean(j))
            issue(v, ptr, "found %s, expected true or false", FOUND(j));
        break;
    case LOOM__RC_NAME:
        if (!json_is_string(j) || (int64_t)json_string_length(j) < f->lo ||
            (int64_t)json_string_length(j) > f->hi)
            issue(v, ptr, "found %s, expected a name of %" PRId64 " to %" PRId64 " bytes", FOUND(j),
                  f->lo, f->hi);
        break;
    case LOOM__RC_OBJECT: check_reconfig(v, j, ptr, f->members, f->nmembers, f->name); break;
    case LOOM__RC_OBJECTS: {
        bool ok = json_is_array(j) && (int64_t)json_array_size(j) >= f->lo &&
                  (int64_t)json_array_size(j) <= f->hi;
        size_t i;
        const json_t *e;
        json_array_foreach(j, i, e) ok = ok && json_is_object(e);
        if (!ok)
            issue(v, ptr, "found %s, expected an array of at most %" PRId64 " objects", FOUND(j),
                  f->hi);
        break;
    }
    }
}

/* obj against fields: the members known, each of its kind, the required
 * ones there. */
static void check_reconfig(vctx_t *v, const json_t *obj, const char *ptr,
                           const loom__reconfig_field_t *fields, size_t n, const char *what)
{
    char fbuf[96];
    if (!json_is_object(obj)) {
        issue(v, ptr, "found %s, expected an object (%s)", FOUND(obj), what);
        return;
    }
    const char *names[16];
    for (size_t i = 0; i < n && i < N(names); i++)
        names[i] = fields[i].name;
    check_keys(v, obj, ptr, names, n < N(names) ? n : N(names), what);
    for (size_t i = 0; i < n; i++) {
        const json_t *val = json_object_get(obj, fields[i].name);
        if (!val) {
            if (fields[i].required)
                issue(v, ptr, "found no member '%s', expected \"%s\" in %s", fields[i].name,
                      fields[i].name, what);
            continue;
        }
        char *p = child(v, ptr, fields[i].name);
        if (!p)
            return;
        check_reconfig_value(v, val, p, &fields[i]);
        free(p);
    }
}

static void check_model_value(vctx_t *v, const char *key, const json_t *val, const char *ptr)
{
    char fbuf[96], ref[128];
    if (whole_ref(val, ref, sizeof ref))
        return;
    if (strcmp(key, "batch") == 0) {
        if (!json_is_integer(val) || json_integer_value(val) < 1 ||
            json_integer_value(val) > MODEL_BATCH_MAX)
            issue(v, ptr,
                  "found %s, expected a batch size (an integer from 1 to %" PRId64
                  ") or a parameter reference \"${name}\"",
                  FOUND(val), MODEL_BATCH_MAX);
    } else if (strcmp(key, "train") == 0) {
        if (!json_is_boolean(val))
            issue(v, ptr, "found %s, expected true, false or a parameter reference \"${name}\"",
                  FOUND(val));
    } else {
        bool opt = strcmp(key, "optimizer") == 0;
        if (!in_names(json_string_value(val), opt ? optimizer_names : precision_names,
                      opt ? N(optimizer_names) : N(precision_names)))
            issue(v, ptr, "found %s, expected %s or a parameter reference \"${name}\"", FOUND(val),
                  opt ? "sgd, momentum or adam" : "fp32, fp16, bf16 or mixed");
    }
}

/* "model": a path, or an object that lets loomd estimate the job's GPU
 * memory: {"path", "batch", "train", "optimizer", "precision", "device"}. */
static void check_model(vctx_t *v, const json_t *m, const char *ptr)
{
    char fbuf[96];
    if (json_is_string(m)) {
        want_file(v, m, ptr, "model");
        return;
    }
    if (!json_is_object(m)) {
        issue(v, ptr,
              "found %s, expected a model file path or an object {\"path\", \"batch\", ...}",
              FOUND(m));
        return;
    }
    check_keys(v, m, ptr, model_keys, N(model_keys), "model");
    if (!json_object_get(m, "path"))
        issue(v, ptr, "found no member 'path', expected \"path\": the model file (ONNX)");
    if (!json_object_get(m, "batch"))
        issue(v, ptr,
              "found no member 'batch', expected \"batch\": the batch size per GPU (an integer "
              "or \"${param}\")");
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)m, k, val)
    {
        char *p = child(v, ptr, k);
        if (!p)
            return;
        if (strcmp(k, "path") == 0) {
            want_file(v, val, p, "model");
        } else if (strcmp(k, "device") == 0) {
            if (want_string(v, val, p, true)) {
                const char *d = json_string_value(val);
                size_t n = strlen(d);
                if (strchr(d, '/') || (n > 5 && strcmp(d + n - 5, ".json") == 0))
                    want_file(v, val, p, "device");
                else if (n > 63 || strspn(d, "abcdefghijklmnopqrstuvwxyz0123456789-_") != n)
                    issue(v, p,
                          "found %s, expected a device name (1-63 of a-z 0-9 - _) or a device "
                          "file path",
                          FOUND(val));
            }
        } else if (in_names(k, model_keys, N(model_keys))) {
            check_model_value(v, k, val, p);
        }
        free(p);
    }
}

/* Checks the members of a job or of "defaults" on their own. */
/* "warm_start": true/false, or {"task": NAME} (docs/zoo.md): loom gen
 * --submit warm-starts the job's model from loomd's zoo. */
static void check_warm_start(vctx_t *v, const json_t *val, const char *p)
{
    char fbuf[96];
    if (json_is_boolean(val))
        return;
    if (!json_is_object(val)) {
        issue(v, p, "found %s, expected true, false or an object {\"task\": NAME}", FOUND(val));
        return;
    }
    static const char *const keys[] = {"task"};
    check_keys(v, val, p, keys, N(keys), "warm_start");
    const json_t *t = json_object_get(val, "task");
    char *tp = t ? child(v, p, "task") : NULL;
    if (tp && want_string(v, t, tp, true) &&
        (!name_ok(json_string_value(t), false) || json_string_length(t) > 128))
        issue(v, tp, "found %s, expected a task name of 1-128 characters from [A-Za-z0-9._-]",
              FOUND(t));
    free(tp);
}

static void check_job_members(vctx_t *v, const json_t *job, const char *ptr, bool defaults)
{
    char fbuf[96];
    if (!json_is_object(job)) {
        issue(v, ptr, "found %s, expected an object (%s)", FOUND(job),
              defaults ? "the defaults" : "a job");
        return;
    }
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)job, k, val)
    {
        char *p = child(v, ptr, k);
        if (!p)
            return;
        if (strcmp(k, "name") == 0) {
            if (defaults)
                issue_key(v, p, "found 'name' in defaults, expected a name only in each job");
            else if (want_string(v, val, p, true) &&
                     (!name_ok(json_string_value(val), false) || json_string_length(val) > 128))
                issue(v, p,
                      "found %s, expected a name of 1-128 characters from [A-Za-z0-9._-] "
                      "starting with a letter or digit",
                      FOUND(val));
        } else if (strcmp(k, "description") == 0) {
            want_string(v, val, p, false);
        } else if (strcmp(k, "executable") == 0) {
            want_string(v, val, p, true);
        } else if (strcmp(k, "image") == 0) {
            want_string(v, val, p, true);
        } else if (strcmp(k, "array") == 0) {
            check_array_spec(v, val, p);
        } else if (strcmp(k, "then") == 0) {
            check_then_shape(v, val, p);
        } else if (strcmp(k, "arguments") == 0) {
            if (!json_is_array(val)) {
                issue(v, p, "found %s, expected an array of strings", FOUND(val));
            } else {
                size_t i;
                json_t *e;
                json_array_foreach(val, i, e)
                {
                    if (json_is_string(e) || json_is_number(e))
                        continue;
                    char *ep = child_idx(v, p, i);
                    if (ep)
                        issue(v, ep, "found %s, expected a string (or a number)", FOUND(e));
                    free(ep);
                }
            }
        } else if (strcmp(k, "environment") == 0) {
            check_string_map(v, val, p, true, "variable names to strings");
        } else if (strcmp(k, "labels") == 0) {
            check_string_map(v, val, p, false, "label names to strings");
        } else if (strcmp(k, "resources") == 0) {
            if (!json_is_object(val)) {
                issue(v, p, "found %s, expected an object with cpus, memory, gpus, ...",
                      FOUND(val));
            } else {
                check_keys(v, val, p, res_keys, N(res_keys), "resources");
                const char *rk;
                json_t *rv;
                json_object_foreach(val, rk, rv)
                {
                    char *rp = child(v, p, rk);
                    if (!rp)
                        break;
                    if (strcmp(rk, "cpus") == 0)
                        want_int(v, rv, rp, 1, 4096, NULL);
                    else if (strcmp(rk, "gpus") == 0)
                        want_int(v, rv, rp, 0, 64, NULL);
                    else if (strcmp(rk, "gpu_share") == 0)
                        want_int(v, rv, rp, 1, 1000, NULL);
                    else if (strcmp(rk, "memory") == 0 || strcmp(rk, "gpu_memory") == 0)
                        want_size(v, rv, rp, NULL);
                    else if (strcmp(rk, "gpu_type") == 0 && want_string(v, rv, rp, true) &&
                             (!name_ok(json_string_value(rv), false) ||
                              json_string_length(rv) > 64))
                        issue(v, rp,
                              "found %s, expected a GPU type of 1-64 characters from "
                              "[A-Za-z0-9._-]",
                              FOUND(rv));
                    free(rp);
                }
            }
        } else if (strcmp(k, "time_limit") == 0) {
            want_duration(v, val, p, NULL);
        } else if (strcmp(k, "weight") == 0) {
            double w;
            if (want_number(v, val, p, true, &w) && !isfinite(w))
                issue(v, p, "found %s, expected a finite positive number", FOUND(val));
        } else if (strcmp(k, "parameters") == 0) {
            if (!json_is_object(val)) {
                issue(v, p, "found %s, expected an object of parameter name -> definition",
                      FOUND(val));
            } else {
                const char *pk;
                json_t *pv;
                json_object_foreach(val, pk, pv)
                {
                    char *pp = child(v, p, pk);
                    if (!pp)
                        break;
                    if (!name_ok(pk, true))
                        issue_key(v, pp,
                                  "found the parameter name '%s', expected a name matching "
                                  "[A-Za-z_][A-Za-z0-9_]*",
                                  pk);
                    check_param(v, pv, pp);
                    free(pp);
                }
            }
        } else if (strcmp(k, "template") == 0) {
            want_file(v, val, p, "template");
        } else if (strcmp(k, "model") == 0) {
            check_model(v, val, p);
        } else if (strcmp(k, "warm_start") == 0) {
            check_warm_start(v, val, p);
        } else if (strcmp(k, "reconfig") == 0) {
            check_reconfig(v, val, p, reconfig_fields, N(reconfig_fields), "reconfig");
        }
        free(p);
    }
    /* "name" in defaults has its own message above. */
    check_keys(v, job, ptr, job_keys, N(job_keys), defaults ? "defaults" : "job");
}

/* ------------------------------------------------------------- merge */

/* The job merged with the defaults (objects member by member). */
static json_t *merge(const json_t *defaults, const json_t *job)
{
    json_t *m = json_is_object(defaults) ? json_deep_copy(defaults) : json_object();
    if (!m)
        return NULL;
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)job, k, val)
    {
        json_t *dv = json_object_get(m, k);
        if (json_is_object(dv) && json_is_object(val) &&
            (!strcmp(k, "resources") || !strcmp(k, "environment") || !strcmp(k, "labels") ||
             !strcmp(k, "parameters"))) {
            if (json_object_update(dv, val)) {
                json_decref(m);
                return NULL;
            }
        } else if (json_object_set(m, k, val)) {
            json_decref(m);
            return NULL;
        }
    }
    return m;
}

/* Pointer of member key (and sub, if not NULL) as it was written: in the
 * job if it has it, else in the defaults. */
static char *origin(vctx_t *v, const json_t *job, const char *jptr, const char *key,
                    const char *sub)
{
    const json_t *jm = json_object_get(job, key);
    bool in_job = jm && (!sub || json_object_get(jm, sub));
    char *a = child(v, in_job ? jptr : "/defaults", key);
    if (!a || !sub)
        return a;
    char *b = child(v, a, sub);
    free(a);
    return b;
}

/* Every value the parameter can draw satisfies ok(). */
static bool param_values_all(const json_t *pdef, bool (*ok)(const json_t *))
{
    const char *t = json_string_value(json_object_get(pdef, "type"));
    if (!t || strcmp(t, "choice") != 0)
        return false;
    const json_t *vals = json_object_get(pdef, "values");
    size_t i;
    json_t *e;
    json_array_foreach(vals, i, e) if (!ok(e)) return false;
    return json_array_size(vals) > 0;
}

static bool is_batch(const json_t *e)
{
    return json_is_integer(e) && json_integer_value(e) >= 1 &&
           json_integer_value(e) <= MODEL_BATCH_MAX;
}
static bool is_bool(const json_t *e)
{
    return json_is_boolean(e);
}
static bool is_optimizer(const json_t *e)
{
    return in_names(json_string_value(e), optimizer_names, N(optimizer_names));
}
static bool is_precision(const json_t *e)
{
    return in_names(json_string_value(e), precision_names, N(precision_names));
}

/* The model object's "${name}" members name parameters whose every draw
 * is a valid value (so a sampled job never carries a bad reference). */
static void check_model_refs(vctx_t *v, const json_t *job, const json_t *m, const char *jptr,
                             const json_t *params)
{
    static const char *const keys[] = {"batch", "train", "optimizer", "precision"};
    static const char *const want[] = {
        "an int parameter within 1..16777216 or a choice of such integers",
        "a choice of true/false", "a choice of sgd, momentum, adam",
        "a choice of fp32, fp16, bf16, mixed"};
    bool (*const oks[])(const json_t *) = {is_batch, is_bool, is_optimizer, is_precision};
    const json_t *model = json_object_get(m, "model");
    if (!json_is_object(model))
        return;
    for (size_t i = 0; i < N(keys); i++) {
        char ref[128];
        if (!whole_ref(json_object_get(model, keys[i]), ref, sizeof ref))
            continue;
        const json_t *pdef = json_object_get(params, ref);
        bool ok = pdef && param_values_all(pdef, oks[i]);
        if (pdef && i == 0 && !ok) { /* an int range also makes batch sizes */
            const char *t = json_string_value(json_object_get(pdef, "type"));
            const json_t *mn = json_object_get(pdef, "min"), *mx = json_object_get(pdef, "max");
            ok = t && strcmp(t, "int") == 0 && is_batch(mn) && is_batch(mx);
        }
        if (ok)
            continue;
        char *p = origin(v, job, jptr, "model", keys[i]);
        if (p)
            issue(v, p,
                  pdef ? "found a reference to parameter '%s', expected %s"
                       : "found a reference to an unknown parameter '%s', expected one of the "
                         "job's parameters (%s)",
                  ref, want[i]);
        free(p);
    }
}

/* Rules over the merged job. */
static void check_merged(vctx_t *v, const json_t *job, const json_t *m, const char *jptr)
{
    if (!json_object_get(m, "executable"))
        issue(v, jptr,
              "found no member 'executable' (neither in the job nor in defaults), expected "
              "the program to run");
    const json_t *res = json_object_get(m, "resources");
    const json_t *share = json_object_get(res, "gpu_share");
    const json_t *gpus = json_object_get(res, "gpus");
    if (json_is_integer(share) && json_integer_value(share) >= 1 &&
        json_integer_value(share) < 1000 &&
        (!json_is_integer(gpus) || json_integer_value(gpus) != 1)) {
        char *p = origin(v, job, jptr, "resources", "gpu_share");
        if (p)
            issue(v, p,
                  "found a GPU share of %" JSON_INTEGER_FORMAT " milli-GPU with %s GPUs, "
                  "expected \"gpus\": 1 for a fractional share",
                  json_integer_value(share),
                  json_is_integer(gpus) ? (json_integer_value(gpus) == 0 ? "0" : "several") : "no");
        free(p);
    }
    const json_t *params = json_object_get(m, "parameters");
    json_t *empty = json_object();
    if (!json_is_object(params))
        params = empty;
    const json_t *args = json_object_get(m, "arguments");
    if (json_is_array(args)) {
        char *ap = origin(v, job, jptr, "arguments", NULL);
        size_t i;
        json_t *e;
        json_array_foreach(args, i, e)
        {
            if (!json_is_string(e))
                continue;
            char *ep = ap ? child_idx(v, ap, i) : NULL;
            if (ep)
                check_refs(v, json_string_value(e), params, ep);
            free(ep);
        }
        free(ap);
    }
    const json_t *env = json_object_get(m, "environment");
    if (json_is_object(env)) {
        const char *k;
        json_t *e;
        json_object_foreach((json_t *)env, k, e)
        {
            if (!json_is_string(e))
                continue;
            char *ep = origin(v, job, jptr, "environment", k);
            if (ep)
                check_refs(v, json_string_value(e), params, ep);
            free(ep);
        }
    }
    check_model_refs(v, job, m, jptr, params);
    const json_t *ws = json_object_get(m, "warm_start");
    if ((json_is_true(ws) || json_is_object(ws)) && !json_object_get(m, "model")) {
        char *p = origin(v, job, jptr, "warm_start", NULL);
        if (p)
            issue(v, p, "found a warm start without a model, expected \"model\" next to it");
        free(p);
    }
    json_decref(empty);
}

/* ------------------------------------------------------------- load */

/* Every stage of a "then" names another job of the catalog that has no
 * stages of its own (pipelines do not nest, so there are no cycles). */
static void check_then_names(vctx_t *v, const json_t *jobs, json_t *const *merged,
                             const json_t *seen)
{
    size_t i;
    json_t *job;
    json_array_foreach(jobs, i, job)
    {
        const json_t *then = merged[i] ? json_object_get(merged[i], "then") : NULL;
        if (!json_is_array(then))
            continue;
        bool own = json_is_object(job) && json_object_get(job, "then");
        char base[64];
        snprintf(base, sizeof base, own ? "/jobs/%zu/then" : "/defaults/then", i);
        size_t k;
        json_t *e;
        json_array_foreach(then, k, e)
        {
            if (!json_is_string(e))
                continue;
            const char *name = json_string_value(e);
            const json_t *t = json_object_get(seen, name);
            size_t ti = t ? (size_t)json_integer_value(t) : 0;
            char *ep = child_idx(v, base, k);
            if (!ep)
                return;
            if (!t)
                issue(v, ep, "found the name \"%s\", expected the name of a job of the catalog",
                      name);
            else if (ti == i)
                issue(v, ep, "found the job's own name \"%s\", expected another job", name);
            else if (merged[ti] && json_object_get(merged[ti], "then"))
                issue(v, ep,
                      "found \"%s\", a job with stages of its own, expected a job without "
                      "\"then\" (pipelines do not nest)",
                      name);
            free(ep);
        }
    }
}

static void check_catalog(vctx_t *v, const json_t *root, json_t **merged)
{
    char fbuf[96];
    if (!json_is_object(root)) {
        issue(v, "", "found %s, expected an object with \"jobs\"", FOUND(root));
        return;
    }
    check_keys(v, root, "", top_keys, N(top_keys), "catalog");
    const json_t *ver = json_object_get(root, "version");
    if (ver)
        want_int(v, ver, "/version", 1, 1, NULL);
    const json_t *desc = json_object_get(root, "description");
    if (desc)
        want_string(v, desc, "/description", false);
    const json_t *schema = json_object_get(root, "$schema");
    if (schema)
        want_string(v, schema, "/$schema", false);
    const json_t *defaults = json_object_get(root, "defaults");
    if (defaults)
        check_job_members(v, defaults, "/defaults", true);
    const json_t *jobs = json_object_get(root, "jobs");
    if (!jobs) {
        issue(v, "", "found no member 'jobs', expected \"jobs\": an array of jobs");
        return;
    }
    if (!json_is_array(jobs) || json_array_size(jobs) == 0) {
        issue(v, "/jobs", "found %s, expected a non-empty array of jobs",
              json_is_array(jobs) ? "an empty array" : FOUND(jobs));
        return;
    }
    json_t *seen = json_object();
    if (!seen) {
        v->oom = 1;
        return;
    }
    size_t i;
    json_t *job;
    json_array_foreach(jobs, i, job)
    {
        char *jp = child_idx(v, "/jobs", i);
        if (!jp)
            break;
        check_job_members(v, job, jp, false);
        if (json_is_object(job)) {
            const json_t *name = json_object_get(job, "name");
            if (!name)
                issue(v, jp, "found no member 'name', expected \"name\": the job's name");
            /* Names seen so far -> index of first use (linear time). */
            json_t *first =
                json_is_string(name) ? json_object_get(seen, json_string_value(name)) : NULL;
            if (first) {
                char *np = child(v, jp, "name");
                if (np)
                    issue(v, np,
                          "found the name \"%s\" again, expected unique job names (first "
                          "used by /jobs/%" JSON_INTEGER_FORMAT ")",
                          json_string_value(name), json_integer_value(first));
                free(np);
            } else if (json_is_string(name) && json_object_set_new(seen, json_string_value(name),
                                                                   json_integer((json_int_t)i))) {
                v->oom = 1;
            }
            json_t *m = merge(json_is_object(defaults) ? defaults : NULL, job);
            if (!m)
                v->oom = 1;
            else
                check_merged(v, job, m, jp);
            merged[i] = m;
        }
        free(jp);
    }
    check_then_names(v, jobs, merged, seen);
    json_decref(seen);
}

static void dir_of(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, n, ".");
    else if (slash == path)
        snprintf(out, n, "/");
    else
        snprintf(out, n, "%.*s", (int)(slash - path), path);
}

int loom_catalog_load_string(const char *text, size_t len, const char *name, const char *base_dir,
                             loom_catalog_t **out, loom_catalog_issues_t *issues, loom_err_t *err)
{
    loom_catalog_issues_t local = LOOM_CATALOG_ISSUES_INIT;
    loom_catalog_issues_t *iss = issues ? issues : &local;
    size_t before = iss->count;
    if (!name)
        name = "<catalog>";
    vctx_t v = {.file = name, .base_dir = base_dir, .issues = iss};
    v.pos.values = json_object();
    v.pos.keys = json_object();
    json_t *root = NULL, **merged = NULL;
    loom_catalog_t *c = NULL;
    int rc = LOOM_OK;
    *out = NULL;
    if (!v.pos.values || !v.pos.keys) {
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
        goto done;
    }
    rc = loom__jsonpos_parse(text, len, name, &root, &v.pos, iss);
    if (rc == LOOM_ENOMEM) {
        loom_err_set(err, rc, "%s: out of memory", name);
        goto done;
    }
    if (rc == LOOM_OK) {
        size_t nj = json_array_size(json_object_get(root, "jobs"));
        merged = calloc(nj ? nj : 1, sizeof *merged);
        if (!merged) {
            rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
            goto done;
        }
        check_catalog(&v, root, merged);
        if (v.oom) {
            rc = loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", name);
            goto done;
        }
    }
    if (iss->count > before) {
        size_t n = iss->count - before;
        if (n > 1)
            rc = loom_err_set(err, LOOM_EINVAL, "%s (and %zu more problem%s)",
                              iss->items[before].text, n - 1, n > 2 ? "s" : "");
        else
            rc = loom_err_set(err, LOOM_EINVAL, "%s", iss->items[before].text);
        goto done;
    }
    rc = loom__catalog_build(root, merged, name, base_dir, &c, err);
    root = NULL; /* taken by build, in every case */
    merged = NULL;
    if (rc == LOOM_OK)
        *out = c;
done:
    if (merged) {
        size_t nj = json_array_size(json_object_get(root, "jobs"));
        for (size_t i = 0; i < nj; i++)
            json_decref(merged[i]);
        free(merged);
    }
    json_decref(root);
    json_decref(v.pos.values);
    json_decref(v.pos.keys);
    loom_catalog_issues_free(&local);
    return rc;
}

int loom_catalog_load_file(const char *path, loom_catalog_t **out, loom_catalog_issues_t *issues,
                           loom_err_t *err)
{
    loom_buf_t b = LOOM_BUF_INIT;
    *out = NULL;
    int rc = loom_buf_read_file(&b, path, err);
    if (rc == LOOM_OK) {
        char dir[4096];
        dir_of(path, dir, sizeof dir);
        char abs[PATH_MAX];
        rc = loom_catalog_load_string(b.data ? b.data : "", b.len, path,
                                      realpath(dir, abs) ? abs : dir, out, issues, err);
    }
    loom_buf_free(&b);
    return rc;
}
