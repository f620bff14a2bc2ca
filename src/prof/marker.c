/* Step markers: the one-line protocol by which a workload tells loom prof
 * where its steps begin and end (docs/profiling.md, "Step markers").
 *
 *     LOOM_STEP <step> <start_ns> <end_ns> [key=value ...]
 *     LOOM_META [key=value ...]
 *
 * The parser is strict about what it recognises (numbers are whole
 * decimal, keys are [a-z][a-z0-9_]*, values printable ASCII) so that a
 * garbled line is reported, never half-read, and lenient about what it does
 * not know: unknown keys are checked for syntax and skipped, which lets
 * newer workloads add fields without breaking older profilers. */
#include <string.h>

#include "loom/prof.h"

#define KEY_MAX   32
#define VALUE_MAX 128

typedef struct cursor {
    const char *p, *end;
} cursor_t;

static void skip_blanks(cursor_t *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

/* The next blank-separated token; false at the end of the line. */
static bool next_token(cursor_t *c, const char **tok, size_t *len)
{
    skip_blanks(c);
    if (c->p >= c->end)
        return false;
    *tok = c->p;
    while (c->p < c->end && *c->p != ' ' && *c->p != '\t')
        c->p++;
    *len = (size_t)(c->p - *tok);
    return true;
}

static int parse_u63(const char *tok, size_t len, const char *what, int64_t *out, loom_err_t *err)
{
    if (len == 0 || len > 19)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s: expected a whole number of at most 19 digits, "
                            "found '%.*s'",
                            what, (int)(len > 40 ? 40 : len), tok);
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (tok[i] < '0' || tok[i] > '9')
            return loom_err_set(err, LOOM_EINVAL, "%s: expected a whole number, found '%.*s'", what,
                                (int)(len > 40 ? 40 : len), tok);
        int d = tok[i] - '0';
        if (v > (INT64_MAX - d) / 10)
            return loom_err_set(err, LOOM_EINVAL, "%s: '%.*s' is too large", what, (int)len, tok);
        v = v * 10 + d;
    }
    *out = v;
    return LOOM_OK;
}

/* Splits key=value and checks both; key is NUL-terminated into kbuf. */
static int split_field(const char *tok, size_t len, size_t index, char kbuf[KEY_MAX + 1],
                       const char **val, size_t *vlen, loom_err_t *err)
{
    const char *eq = memchr(tok, '=', len);
    if (!eq)
        return loom_err_set(err, LOOM_EINVAL, "field %zu: expected key=value, found '%.*s'", index,
                            (int)(len > 40 ? 40 : len), tok);
    size_t klen = (size_t)(eq - tok);
    if (klen == 0 || klen > KEY_MAX || tok[0] < 'a' || tok[0] > 'z')
        goto bad_key;
    for (size_t i = 0; i < klen; i++) {
        char ch = tok[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_'))
            goto bad_key;
    }
    memcpy(kbuf, tok, klen);
    kbuf[klen] = '\0';
    *val = eq + 1;
    *vlen = len - klen - 1;
    if (*vlen == 0 || *vlen > VALUE_MAX)
        return loom_err_set(err, LOOM_EINVAL, "field '%s': expected a value of 1 to %d bytes", kbuf,
                            VALUE_MAX);
    for (size_t i = 0; i < *vlen; i++)
        if ((*val)[i] < '!' || (*val)[i] > '~')
            return loom_err_set(err, LOOM_EINVAL,
                                "field '%s': value has a byte 0x%02x outside "
                                "printable ASCII",
                                kbuf, (unsigned char)(*val)[i]);
    return LOOM_OK;
bad_key:
    return loom_err_set(err, LOOM_EINVAL,
                        "field %zu: expected a key of [a-z][a-z0-9_]* (at most "
                        "%d bytes) before '=', found '%.*s'",
                        index, KEY_MAX, (int)(klen > 40 ? 40 : klen), tok);
}

static bool starts_marker(const char *line, size_t len, const char *word)
{
    size_t w = strlen(word);
    return len >= w && memcmp(line, word, w) == 0 &&
           (len == w || line[w] == ' ' || line[w] == '\t');
}

static int parse_step(cursor_t *c, loom_prof_step_t *s, loom_err_t *err)
{
    static const char *names[3] = {"step number", "start_ns", "end_ns"};
    int64_t v[3];
    for (int i = 0; i < 3; i++) {
        const char *tok;
        size_t len;
        if (!next_token(c, &tok, &len))
            return loom_err_set(err, LOOM_EINVAL,
                                "LOOM_STEP: missing %s (expected 'LOOM_STEP "
                                "<step> <start_ns> <end_ns> [key=value ...]')",
                                names[i]);
        if (parse_u63(tok, len, names[i], &v[i], err))
            return loom_err_prefix(err, "LOOM_STEP");
    }
    if (v[2] < v[1])
        return loom_err_set(err, LOOM_EINVAL, "LOOM_STEP: end_ns %lld is before start_ns %lld",
                            (long long)v[2], (long long)v[1]);
    loom_prof_step_t st = LOOM_PROF_STEP_INIT(v[0], v[1], v[2]);
    const char *tok;
    size_t len;
    for (size_t index = 4; next_token(c, &tok, &len); index++) {
        char key[KEY_MAX + 1];
        const char *val;
        size_t vlen;
        if (split_field(tok, len, index, key, &val, &vlen, err))
            return loom_err_prefix(err, "LOOM_STEP");
        int64_t *slot = strcmp(key, "items") == 0     ? &st.items
                        : strcmp(key, "data_ns") == 0 ? &st.data_ns
                        : strcmp(key, "copy_ns") == 0 ? &st.copy_ns
                        : strcmp(key, "cpu_ns") == 0  ? &st.cpu_ns
                                                      : NULL;
        if (!slot)
            continue; /* unknown key: skipped (forward compatibility) */
        if (*slot >= 0)
            return loom_err_set(err, LOOM_EINVAL, "LOOM_STEP: field '%s' given twice", key);
        if (parse_u63(val, vlen, key, slot, err))
            return loom_err_prefix(err, "LOOM_STEP");
    }
    *s = st;
    return LOOM_OK;
}

static int parse_meta(cursor_t *c, json_t *meta, loom_err_t *err)
{
    json_t *seen = json_object();
    if (!seen)
        return loom_err_set(err, LOOM_ENOMEM, "LOOM_META: out of memory");
    const char *tok;
    size_t len;
    int rc = LOOM_OK;
    for (size_t index = 1; next_token(c, &tok, &len); index++) {
        char key[KEY_MAX + 1];
        const char *val;
        size_t vlen;
        if ((rc = split_field(tok, len, index, key, &val, &vlen, err))) {
            loom_err_prefix(err, "LOOM_META");
            break;
        }
        if (json_object_get(seen, key)) {
            rc = loom_err_set(err, LOOM_EINVAL, "LOOM_META: field '%s' given twice", key);
            break;
        }
        json_t *s = json_stringn(val, vlen);
        if (!s || json_object_set_new(seen, key, s)) {
            rc = loom_err_set(err, LOOM_ENOMEM, "LOOM_META: out of memory");
            break;
        }
    }
    if (rc == LOOM_OK && meta && json_object_update(meta, seen))
        rc = loom_err_set(err, LOOM_ENOMEM, "LOOM_META: out of memory");
    json_decref(seen);
    return rc;
}

int loom_prof_marker_parse(const char *line, size_t len, loom_prof_line_kind_t *kind,
                           loom_prof_step_t *step, json_t *meta, loom_err_t *err)
{
    *kind = LOOM_PROF_LINE_OTHER;
    if (len > 0 && line[len - 1] == '\r')
        len--;
    bool is_step = starts_marker(line, len, "LOOM_STEP");
    bool is_meta = !is_step && starts_marker(line, len, "LOOM_META");
    if (!is_step && !is_meta)
        return LOOM_OK;
    const char *word = is_step ? "LOOM_STEP" : "LOOM_META";
    if (len > LOOM_PROF_MARKER_MAX)
        return loom_err_set(err, LOOM_EINVAL, "%s: line of %zu bytes is longer than %d", word, len,
                            LOOM_PROF_MARKER_MAX);
    if (memchr(line, '\0', len))
        return loom_err_set(err, LOOM_EINVAL, "%s: line contains a NUL byte", word);
    cursor_t c = {line + 9, line + len};
    if (is_step) {
        loom_prof_step_t tmp;
        int rc = parse_step(&c, &tmp, err);
        if (rc)
            return rc;
        if (step)
            *step = tmp;
        *kind = LOOM_PROF_LINE_STEP;
        return LOOM_OK;
    }
    int rc = parse_meta(&c, meta, err);
    if (rc)
        return rc;
    *kind = LOOM_PROF_LINE_META;
    return LOOM_OK;
}

size_t loom_prof_marker_format(const loom_prof_step_t *s, char *out, size_t outlen)
{
    loom_buf_t b = LOOM_BUF_INIT;
    loom_buf_appendf(&b, "LOOM_STEP %lld %lld %lld", (long long)s->step, (long long)s->start_ns,
                     (long long)s->end_ns);
    if (s->items >= 0)
        loom_buf_appendf(&b, " items=%lld", (long long)s->items);
    if (s->data_ns >= 0)
        loom_buf_appendf(&b, " data_ns=%lld", (long long)s->data_ns);
    if (s->copy_ns >= 0)
        loom_buf_appendf(&b, " copy_ns=%lld", (long long)s->copy_ns);
    if (s->cpu_ns >= 0)
        loom_buf_appendf(&b, " cpu_ns=%lld", (long long)s->cpu_ns);
    loom_buf_append_char(&b, '\n');
    size_t n = 0;
    if (b.data && outlen > 0) {
        n = b.len < outlen - 1 ? b.len : outlen - 1;
        memcpy(out, b.data, n);
        out[n] = '\0';
    }
    loom_buf_free(&b);
    return n;
}
