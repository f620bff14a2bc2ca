/* JSON helpers over jansson. Parsing reports NAME:LINE:COLUMN; member access
 * reports the JSON pointer of the member and what type was expected. One
 * place for these messages keeps every part's errors alike. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "loom/core.h"

/* Nesting depth of JSON text, ignoring brackets inside strings. Scanning the
 * text is cheaper than letting the parser recurse and then walking the tree,
 * and it bounds the parser's recursion before it starts. */
bool loom_json_too_deep(const char *text, size_t len, size_t max, size_t *at)
{
    size_t depth = 0;
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max) {
                if (at)
                    *at = i;
                return true;
            }
        } else if ((c == ']' || c == '}') && depth) {
            depth--;
        }
    }
    return false;
}

static void line_col(const char *text, size_t pos, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < pos; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

int loom_json_parse(const char *text, size_t len, const char *name, size_t max_depth, json_t **out,
                    loom_err_t *err)
{
    if (max_depth == 0)
        max_depth = 64;
    size_t at;
    if (loom_json_too_deep(text, len, max_depth, &at)) {
        size_t line, col;
        line_col(text, at, &line, &col);
        return loom_err_set(err, LOOM_EINVAL, "%s:%zu:%zu: nesting deeper than %zu levels", name,
                            line, col, max_depth);
    }
    json_error_t je;
    json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    /* Out of memory is not bad input. jansson says so, or sets no error
     * at all (its lexer's buffer), or reports a syntax error where a
     * string's buffer could not grow: text that fails again is bad, text
     * that parses the second time was refused for memory. */
    bool nomem =
        !v && (json_error_code(&je) == json_error_out_of_memory || (je.line < 0 && !je.text[0]));
    if (!v && !nomem) {
        json_t *again = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
        nomem = again != NULL;
        json_decref(again);
    }
    if (nomem)
        return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory reading JSON", name);
    if (!v)
        return loom_err_set(err, LOOM_EINVAL, "%s:%d:%d: %s", name, je.line, je.column, je.text);
    *out = v;
    return LOOM_OK;
}

int loom_json_load_file(const char *path, json_t **out, loom_err_t *err)
{
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = loom_buf_read_file(&b, path, err);
    if (rc == LOOM_OK)
        rc = loom_json_parse(b.data, b.len, path, 0, out, err);
    loom_buf_free(&b);
    return rc;
}

static int dump_cb(const char *buffer, size_t size, void *data)
{
    return loom_buf_append(data, buffer, size) == LOOM_OK ? 0 : -1;
}

int loom_json_dump(loom_buf_t *b, const json_t *value)
{
    if (json_dump_callback(value, dump_cb, b, JSON_COMPACT | JSON_ENCODE_ANY) != 0)
        return LOOM_ENOMEM;
    return LOOM_OK;
}

const char *loom_json_type_name(const json_t *v)
{
    if (!v)
        return "nothing";
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    case JSON_NULL: return "null";
    }
    return "unknown";
}

/* Looks a member up; returns 1 if present, 0 if absent and optional, or an
 * error code if absent and required or obj is not an object. */
static int member(const json_t *obj, const char *key, bool required, const char *where,
                  json_t **out, loom_err_t *err)
{
    if (!json_is_object(obj))
        return loom_err_set(err, LOOM_EINVAL, "%s: expected an object, found %s",
                            *where ? where : "/", loom_json_type_name(obj));
    json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            return loom_err_set(err, LOOM_EINVAL, "%s/%s: required member is missing", where, key);
        return 0;
    }
    *out = v;
    return 1;
}

int loom_json_get_string(const json_t *obj, const char *key, bool required, const char *where,
                         const char **out, loom_err_t *err)
{
    json_t *v;
    int rc = member(obj, key, required, where, &v, err);
    if (rc <= 0)
        return rc;
    if (!json_is_string(v))
        return loom_err_set(err, LOOM_EINVAL, "%s/%s: expected a string, found %s", where, key,
                            loom_json_type_name(v));
    *out = json_string_value(v);
    return LOOM_OK;
}

int loom_json_get_int(const json_t *obj, const char *key, bool required, const char *where,
                      int64_t min, int64_t max, int64_t *out, loom_err_t *err)
{
    json_t *v;
    int rc = member(obj, key, required, where, &v, err);
    if (rc <= 0)
        return rc;
    if (!json_is_integer(v))
        return loom_err_set(err, LOOM_EINVAL, "%s/%s: expected an integer, found %s", where, key,
                            loom_json_type_name(v));
    int64_t x = json_integer_value(v);
    if (x < min || x > max)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s/%s: %" PRId64 " is out of range, expected %" PRId64 "..%" PRId64,
                            where, key, x, min, max);
    *out = x;
    return LOOM_OK;
}

int loom_json_get_number(const json_t *obj, const char *key, bool required, const char *where,
                         double *out, loom_err_t *err)
{
    json_t *v;
    int rc = member(obj, key, required, where, &v, err);
    if (rc <= 0)
        return rc;
    if (!json_is_number(v))
        return loom_err_set(err, LOOM_EINVAL, "%s/%s: expected a number, found %s", where, key,
                            loom_json_type_name(v));
    *out = json_number_value(v);
    return LOOM_OK;
}

int loom_json_get_bool(const json_t *obj, const char *key, bool required, const char *where,
                       bool *out, loom_err_t *err)
{
    json_t *v;
    int rc = member(obj, key, required, where, &v, err);
    if (rc <= 0)
        return rc;
    if (!json_is_boolean(v))
        return loom_err_set(err, LOOM_EINVAL, "%s/%s: expected true or false, found %s", where, key,
                            loom_json_type_name(v));
    *out = json_is_true(v);
    return LOOM_OK;
}

int loom_json_pointer_append(loom_buf_t *ptr, const char *token)
{
    if (loom_buf_append_char(ptr, '/') != LOOM_OK)
        return LOOM_ENOMEM;
    for (const char *p = token; *p; p++) {
        int rc = *p == '~'   ? loom_buf_append_str(ptr, "~0")
                 : *p == '/' ? loom_buf_append_str(ptr, "~1")
                             : loom_buf_append_char(ptr, *p);
        if (rc != LOOM_OK)
            return rc;
    }
    return LOOM_OK;
}

/* ------------------------------------------------------- loom_json_write */

static int write_string(loom_buf_t *b, const char *s, size_t len)
{
    int rc = loom_buf_append_char(b, '"');
    for (size_t i = 0; i < len && rc == LOOM_OK; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': rc = loom_buf_append_str(b, "\\\""); break;
        case '\\': rc = loom_buf_append_str(b, "\\\\"); break;
        case '\n': rc = loom_buf_append_str(b, "\\n"); break;
        case '\t': rc = loom_buf_append_str(b, "\\t"); break;
        case '\r': rc = loom_buf_append_str(b, "\\r"); break;
        default: {
            /* C1 and bidirectional controls as \uXXXX too: the same text,
             * but nothing a terminal acts on (docs/security.md) */
            unsigned cp;
            size_t n = c >= 0x80 ? loom_text_unsafe_char(s + i, len - i, &cp) : 0;
            if (n > 1) {
                rc = loom_buf_appendf(b, "\\u%04x", cp);
                i += n - 1;
            } else {
                rc = c < 0x20 || c == 0x7f ? loom_buf_appendf(b, "\\u%04x", c)
                                           : loom_buf_append_char(b, (char)c);
            }
        }
        }
    }
    return rc ? rc : loom_buf_append_char(b, '"');
}

static int write_real(loom_buf_t *b, double d)
{
    char num[40];
    if (!isfinite(d))
        return loom_buf_append_str(b, "null");
    loom_format_real(d, num, sizeof num);
    if (!strpbrk(num, ".en"))
        strcat(num, ".0");
    return loom_buf_append_str(b, num);
}

static int write_newline(loom_buf_t *b, int indent, int depth)
{
    if (indent <= 0)
        return LOOM_OK;
    int rc = loom_buf_append_char(b, '\n');
    for (int i = 0; i < indent * depth && rc == LOOM_OK; i++)
        rc = loom_buf_append_char(b, ' ');
    return rc;
}

static int write_value(loom_buf_t *b, const json_t *v, int indent, int depth)
{
    int rc = LOOM_OK;
    if (depth > 256)
        return LOOM_ELIMIT;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        json_t *m;
        size_t n = 0;
        rc = loom_buf_append_char(b, '{');
        json_object_foreach((json_t *)v, k, m)
        {
            if (rc == LOOM_OK && n++)
                rc = loom_buf_append_char(b, ',');
            if (rc == LOOM_OK)
                rc = write_newline(b, indent, depth + 1);
            if (rc == LOOM_OK)
                rc = write_string(b, k, strlen(k));
            if (rc == LOOM_OK)
                rc = loom_buf_append_str(b, indent > 0 ? ": " : ":");
            if (rc == LOOM_OK)
                rc = write_value(b, m, indent, depth + 1);
        }
        if (rc == LOOM_OK && n)
            rc = write_newline(b, indent, depth);
        return rc ? rc : loom_buf_append_char(b, '}');
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *m;
        rc = loom_buf_append_char(b, '[');
        json_array_foreach(v, i, m)
        {
            if (rc == LOOM_OK && i)
                rc = loom_buf_append_char(b, ',');
            if (rc == LOOM_OK)
                rc = write_newline(b, indent, depth + 1);
            if (rc == LOOM_OK)
                rc = write_value(b, m, indent, depth + 1);
        }
        if (rc == LOOM_OK && json_array_size(v))
            rc = write_newline(b, indent, depth);
        return rc ? rc : loom_buf_append_char(b, ']');
    }
    case JSON_STRING: return write_string(b, json_string_value(v), json_string_length(v));
    case JSON_INTEGER: return loom_buf_appendf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    case JSON_REAL: return write_real(b, json_real_value(v));
    case JSON_TRUE: return loom_buf_append_str(b, "true");
    case JSON_FALSE: return loom_buf_append_str(b, "false");
    default: return loom_buf_append_str(b, "null");
    }
}

int loom_json_write(loom_buf_t *b, const json_t *value, int indent)
{
    return value ? write_value(b, value, indent, 0) : loom_buf_append_str(b, "null");
}
