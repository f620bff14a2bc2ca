/* A small JSON parser that remembers where every value and key came from.
 *
 * jansson reports a position only for syntax errors; the catalog needs one
 * for every value so that "cpus must be >= 1" can say which line and column.
 * This parser builds the same json_t tree and, on the side, maps each value's
 * JSON pointer to its line:column (and each member's key to the key's
 * position). It follows RFC 8259 strictly: no comments, no trailing commas,
 * no NaN; strings must be UTF-8 and may not hold NUL. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog_int.h"

#define MAX_DEPTH 64

typedef struct jp {
    const char *s;
    size_t len, i;
    int line;
    size_t line_start;
    const char *file;
    loom__jsonpos_t *pos;
    loom_catalog_issues_t *issues;
    loom_buf_t ptr; /* JSON pointer of the value being parsed */
    int fatal;      /* LOOM_EINVAL after a syntax error, LOOM_ENOMEM */
} jp_t;

static int col_at(const jp_t *p, size_t i)
{
    return (int)(i - p->line_start) + 1;
}

static void syntax(jp_t *p, size_t at, const char *fmt, const char *found)
{
    if (p->fatal)
        return;
    char msg[256];
    snprintf(msg, sizeof msg, fmt, found);
    if (loom__catalog_issue_add(p->issues, p->file, p->line, col_at(p, at),
                                p->ptr.data ? p->ptr.data : "", "%s", msg))
        p->fatal = LOOM_ENOMEM;
    else
        p->fatal = LOOM_EINVAL;
}

/* What is at i, for messages: "'x'", "end of input". */
static const char *found_at(const jp_t *p, size_t i, char buf[16])
{
    if (i >= p->len)
        return "the end of the input";
    unsigned char c = (unsigned char)p->s[i];
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, 16, "'%c'", c);
    else
        snprintf(buf, 16, "byte 0x%02X", c);
    return buf;
}

static void skip_ws(jp_t *p)
{
    while (p->i < p->len) {
        char c = p->s[p->i];
        if (c == '\n') {
            p->line++;
            p->line_start = p->i + 1;
        } else if (c != ' ' && c != '\t' && c != '\r') {
            return;
        }
        p->i++;
    }
}

static void record(jp_t *p, json_t *table, size_t at)
{
    json_t *v = json_integer(LOOM__POS(p->line, col_at(p, at)));
    if (!v || json_object_set_new(table, p->ptr.data ? p->ptr.data : "", v))
        p->fatal = LOOM_ENOMEM;
}

static int hex4(const char *s, unsigned *out)
{
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        char c = s[k];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static int put_utf8(loom_buf_t *b, unsigned cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp, n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
    }
    return loom_buf_append(b, u, n);
}

/* Parses a string at p->i (which is '"') into b. */
static bool parse_string(jp_t *p, loom_buf_t *b)
{
    size_t start = p->i++;
    char fb[16];
    while (p->i < p->len) {
        size_t run = p->i;
        while (p->i < p->len && p->s[p->i] != '"' && p->s[p->i] != '\\' &&
               (unsigned char)p->s[p->i] >= 0x20)
            p->i++;
        if (!loom_utf8_valid(p->s + run, p->i - run)) {
            syntax(p, run, "found invalid UTF-8 in a string, expected UTF-8 text%s", "");
            return false;
        }
        if (loom_buf_append(b, p->s + run, p->i - run)) {
            p->fatal = LOOM_ENOMEM;
            return false;
        }
        if (p->i >= p->len)
            break;
        char c = p->s[p->i];
        if (c == '"') {
            p->i++;
            return true;
        }
        if ((unsigned char)c < 0x20) {
            syntax(
                p, p->i,
                "found %s inside a string, expected control characters escaped (\\n, \\t, \\u0001)",
                found_at(p, p->i, fb));
            return false;
        }
        /* Escape. */
        size_t at = p->i;
        if (p->i + 1 >= p->len)
            break;
        char e = p->s[p->i + 1];
        p->i += 2;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char map[] = "\"\\/\b\f\n\r\t";
            if (loom_buf_append_char(b, map[simple - "\"\\/bfnrt"])) {
                p->fatal = LOOM_ENOMEM;
                return false;
            }
            continue;
        }
        if (e != 'u') {
            syntax(p, at,
                   "found an unknown escape %s, expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t "
                   "\\uXXXX",
                   found_at(p, at + 1, fb));
            return false;
        }
        unsigned cp, lo;
        if (p->i + 4 > p->len || hex4(p->s + p->i, &cp)) {
            syntax(p, at, "found a malformed \\u escape, expected four hex digits%s", "");
            return false;
        }
        p->i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (p->i + 6 > p->len || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u' ||
                hex4(p->s + p->i + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                syntax(p, at,
                       "found a lone high surrogate in a \\u escape, expected a low surrogate "
                       "\\uDC00-\\uDFFF to follow%s",
                       "");
                return false;
            }
            p->i += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            syntax(
                p, at,
                "found a lone low surrogate in a \\u escape, expected a high surrogate before it%s",
                "");
            return false;
        }
        if (cp == 0) {
            syntax(p, at, "found \\u0000 (NUL) in a string, expected text without NUL%s", "");
            return false;
        }
        if (put_utf8(b, cp)) {
            p->fatal = LOOM_ENOMEM;
            return false;
        }
    }
    syntax(p, start, "found the end of the input inside a string, expected a closing '\"'%s", "");
    return false;
}

static json_t *parse_value(jp_t *p, int depth);

static json_t *parse_number(jp_t *p)
{
    size_t st = p->i, i = p->i;
    char fb[16];
    bool is_int = true;
    if (i < p->len && p->s[i] == '-')
        i++;
    if (i < p->len && p->s[i] == '0') {
        i++;
    } else if (i < p->len && p->s[i] >= '1' && p->s[i] <= '9') {
        while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
            i++;
    } else {
        syntax(p, i, "found %s, expected a digit", found_at(p, i, fb));
        return NULL;
    }
    if (i < p->len && p->s[i] == '.') {
        is_int = false;
        i++;
        if (i >= p->len || p->s[i] < '0' || p->s[i] > '9') {
            syntax(p, i, "found %s, expected a digit after '.'", found_at(p, i, fb));
            return NULL;
        }
        while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
            i++;
    }
    if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
        is_int = false;
        i++;
        if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
            i++;
        if (i >= p->len || p->s[i] < '0' || p->s[i] > '9') {
            syntax(p, i, "found %s, expected a digit in the exponent", found_at(p, i, fb));
            return NULL;
        }
        while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
            i++;
    }
    char buf[128];
    if (i - st >= sizeof buf) {
        syntax(p, st, "found a number longer than 127 characters, expected a shorter one%s", "");
        return NULL;
    }
    memcpy(buf, p->s + st, i - st);
    buf[i - st] = 0;
    p->i = i;
    errno = 0;
    json_t *v;
    if (is_int) {
        long long n = strtoll(buf, NULL, 10);
        if (errno == ERANGE) {
            syntax(p, st, "found an integer out of range, expected one that fits in 64 bits%s", "");
            return NULL;
        }
        v = json_integer(n);
    } else {
        double d = strtod(buf, NULL);
        if (!isfinite(d)) {
            syntax(p, st, "found a number out of range, expected a finite number%s", "");
            return NULL;
        }
        v = json_real(d);
    }
    if (!v)
        p->fatal = LOOM_ENOMEM;
    return v;
}

/* Steps over the opening bracket of a container (c: the new object or
 * array, NULL when out of memory: then false) and over `close` when it
 * follows at once, which *empty tells. */
static bool enter_container(jp_t *p, const json_t *c, char close, bool *empty)
{
    if (!c) {
        p->fatal = LOOM_ENOMEM;
        return false;
    }
    p->i++;
    skip_ws(p);
    *empty = p->i < p->len && p->s[p->i] == close;
    if (*empty)
        p->i++;
    return true;
}

/* After a member or element: the path back to its container's (base),
 * then ',' (1: another follows) or `close` (0: the container ends), both
 * stepped over; otherwise a syntax error and -1. */
static int after_item(jp_t *p, size_t base, char close, const char *what)
{
    p->ptr.len = base;
    if (p->ptr.data)
        p->ptr.data[base] = 0;
    skip_ws(p);
    if (p->i < p->len && p->s[p->i] == ',') {
        p->i++;
        return 1;
    }
    if (p->i < p->len && p->s[p->i] == close) {
        p->i++;
        return 0;
    }
    char fb[16], fmt[64];
    snprintf(fmt, sizeof fmt, "found %%s, expected ',' or '%c' after %s", close, what);
    syntax(p, p->i, fmt, found_at(p, p->i, fb));
    return -1;
}

static json_t *parse_object(jp_t *p, int depth)
{
    json_t *obj = json_object();
    bool empty;
    if (!enter_container(p, obj, '}', &empty))
        return NULL;
    if (empty)
        return obj;
    char fb[16];
    size_t base = p->ptr.len;
    loom_buf_t key = LOOM_BUF_INIT;
    for (;;) {
        skip_ws(p);
        if (p->i >= p->len || p->s[p->i] != '"') {
            syntax(p, p->i, "found %s, expected a member name in double quotes",
                   found_at(p, p->i, fb));
            goto fail;
        }
        size_t kat = p->i;
        loom_buf_reset(&key);
        if (!parse_string(p, &key))
            goto fail;
        const char *k = key.data ? key.data : "";
        if (loom_json_pointer_append(&p->ptr, k)) {
            p->fatal = LOOM_ENOMEM;
            goto fail;
        }
        bool dup = json_object_get(obj, k) != NULL;
        if (dup) {
            if (loom__catalog_issue_add(p->issues, p->file, p->line, col_at(p, kat), p->ptr.data,
                                        "found a duplicate key '%s', expected each key once per "
                                        "object",
                                        k)) {
                p->fatal = LOOM_ENOMEM;
                goto fail;
            }
        } else {
            record(p, p->pos->keys, kat);
        }
        skip_ws(p);
        if (p->i >= p->len || p->s[p->i] != ':') {
            syntax(p, p->i, "found %s, expected ':' after the member name", found_at(p, p->i, fb));
            goto fail;
        }
        p->i++;
        /* A duplicate's value is parsed (for syntax) under a pointer that
         * cannot collide, then dropped. */
        json_t *v;
        if (dup) {
            json_t *vt = p->pos->values, *kt = p->pos->keys;
            json_t *scratch_v = json_object(), *scratch_k = json_object();
            p->pos->values = scratch_v;
            p->pos->keys = scratch_k;
            v = parse_value(p, depth + 1);
            p->pos->values = vt;
            p->pos->keys = kt;
            json_decref(scratch_v);
            json_decref(scratch_k);
            json_decref(v);
            if (p->fatal)
                goto fail;
        } else {
            v = parse_value(p, depth + 1);
            if (!v || json_object_set_new_nocheck(obj, k, v)) {
                if (!p->fatal)
                    p->fatal = LOOM_ENOMEM;
                goto fail;
            }
        }
        int more = after_item(p, base, '}', "a member");
        if (more > 0)
            continue;
        if (more == 0) {
            loom_buf_free(&key);
            return obj;
        }
        goto fail;
    }
fail:
    loom_buf_free(&key);
    json_decref(obj);
    return NULL;
}

static json_t *parse_array(jp_t *p, int depth)
{
    json_t *arr = json_array();
    bool empty;
    if (!enter_container(p, arr, ']', &empty))
        return NULL;
    if (empty)
        return arr;
    size_t base = p->ptr.len;
    for (size_t idx = 0;; idx++) {
        char tok[32];
        snprintf(tok, sizeof tok, "%zu", idx);
        if (loom_json_pointer_append(&p->ptr, tok)) {
            p->fatal = LOOM_ENOMEM;
            goto fail;
        }
        json_t *v = parse_value(p, depth + 1);
        if (!v || json_array_append_new(arr, v)) {
            if (!p->fatal)
                p->fatal = LOOM_ENOMEM;
            goto fail;
        }
        int more = after_item(p, base, ']', "an element");
        if (more > 0)
            continue;
        if (more == 0)
            return arr;
        goto fail;
    }
fail:
    json_decref(arr);
    return NULL;
}

static bool word(jp_t *p, const char *w)
{
    size_t n = strlen(w);
    if (p->len - p->i >= n && memcmp(p->s + p->i, w, n) == 0) {
        p->i += n;
        return true;
    }
    return false;
}

static json_t *parse_value(jp_t *p, int depth)
{
    char fb[16];
    skip_ws(p);
    if (depth > MAX_DEPTH) {
        syntax(p, p->i, "found nesting deeper than 64 levels, expected a flatter document%s", "");
        return NULL;
    }
    record(p, p->pos->values, p->i);
    if (p->fatal)
        return NULL;
    if (p->i >= p->len) {
        syntax(p, p->i, "found the end of the input, expected a value%s", "");
        return NULL;
    }
    char c = p->s[p->i];
    json_t *v = NULL;
    switch (c) {
    case '{': return parse_object(p, depth);
    case '[': return parse_array(p, depth);
    case '"': {
        loom_buf_t b = LOOM_BUF_INIT;
        if (parse_string(p, &b)) {
            v = json_stringn_nocheck(b.data ? b.data : "", b.len);
            if (!v)
                p->fatal = LOOM_ENOMEM;
        }
        loom_buf_free(&b);
        return v;
    }
    case 't':
        if (word(p, "true"))
            return json_true();
        break;
    case 'f':
        if (word(p, "false"))
            return json_false();
        break;
    case 'n':
        if (word(p, "null"))
            return json_null();
        break;
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return parse_number(p);
    }
    syntax(p, p->i,
           "found %s, expected a JSON value (object, array, string, number, true, false or null)",
           found_at(p, p->i, fb));
    return NULL;
}

int loom__jsonpos_parse(const char *text, size_t len, const char *file, json_t **out,
                        loom__jsonpos_t *pos, loom_catalog_issues_t *issues)
{
    jp_t p = {.s = text, .len = len, .line = 1, .file = file, .pos = pos, .issues = issues};
    *out = NULL;
    if (loom_buf_append_str(&p.ptr, ""))
        return LOOM_ENOMEM;
    /* A UTF-8 byte order mark is tolerated. */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        p.i = p.line_start = 3;
    json_t *v = parse_value(&p, 0);
    if (v && !p.fatal) {
        skip_ws(&p);
        if (p.i < p.len) {
            char fb[16];
            syntax(&p, p.i, "found %s after the document, expected the end of the input",
                   found_at(&p, p.i, fb));
        }
    }
    loom_buf_free(&p.ptr);
    if (p.fatal) {
        json_decref(v);
        return p.fatal;
    }
    *out = v;
    return LOOM_OK;
}
