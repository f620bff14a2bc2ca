/* Mustache renderer: walks a compiled tree against a stack of JSON contexts.
 *
 * Name lookup follows the spec: "." is the top of the stack; for "a.b.c"
 * the first part is searched from the top of the stack down, the rest only
 * inside what it found. Inheritance keeps a list of block overrides; the
 * first one listed (the outermost template's) wins. Blocks whose tags are
 * standalone reindent their content: the indentation they were written with
 * is removed, that of the place they expand into is added. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "template/template_int.h"

typedef struct override {
    const tnode_t *block;
    struct override *next;
} override_t;

typedef struct rctx {
    const loom_template_options_t *o;
    loom_err_t *err;
    const json_t **stack;
    size_t depth, cap;
    size_t nest; /* partial / parent nesting */
} rctx_t;

static int render_list(rctx_t *r, const tnode_list_t *l, const override_t *ov, loom_buf_t *out);

static int push(rctx_t *r, const json_t *v)
{
    if (r->depth == r->cap) {
        size_t nc = r->cap * 2;
        const json_t **s = realloc(r->stack, nc * sizeof *s);
        if (!s)
            return loom_err_set(r->err, LOOM_ENOMEM, "out of memory");
        r->stack = s;
        r->cap = nc;
    }
    r->stack[r->depth++] = v;
    return LOOM_OK;
}

/* NULL if the name does not resolve. */
static const json_t *lookup(const rctx_t *r, const tnode_t *n)
{
    if (n->nparts == 0)
        return r->stack[r->depth - 1];
    const json_t *v = NULL;
    for (size_t i = r->depth; i-- > 0;) {
        if (json_is_object(r->stack[i]) && (v = json_object_get(r->stack[i], n->parts[0])))
            break;
    }
    for (size_t k = 1; v && k < n->nparts; k++)
        v = json_is_object(v) ? json_object_get(v, n->parts[k]) : NULL;
    return v;
}

static bool truthy(const json_t *v)
{
    if (!v || json_is_false(v) || json_is_null(v))
        return false;
    if (json_is_array(v))
        return json_array_size(v) > 0;
    if (json_is_string(v))
        return json_string_length(v) > 0;
    return true;
}

/* Shortest "%.Ng" that reads back as the same double. */
static void format_real(double d, char *buf, size_t n)
{
    if (!isfinite(d)) {
        snprintf(buf, n, "%s", isnan(d) ? "nan" : d > 0 ? "inf" : "-inf");
        return;
    }
    /* Most sampled reals need 16 or 17 digits, short ones far fewer: try 15
     * first, then either search downwards (binary) or go up to 17. */
    if (snprintf(buf, n, "%.15g", d) > 0 && strtod(buf, NULL) == d) {
        int lo = 1, hi = 15; /* hi round-trips */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            snprintf(buf, n, "%.*g", mid, d);
            if (strtod(buf, NULL) == d)
                hi = mid;
            else
                lo = mid + 1;
        }
        snprintf(buf, n, "%.*g", hi, d);
        return;
    }
    snprintf(buf, n, "%.16g", d);
    if (strtod(buf, NULL) != d)
        snprintf(buf, n, "%.17g", d);
}

static int append_value(rctx_t *r, const json_t *v, bool raw, loom_buf_t *out)
{
    loom_template_escape_t esc = raw ? LOOM_TEMPLATE_ESCAPE_NONE : r->o->escape;
    char num[64];
    const char *s = num;
    size_t len;
    loom_buf_t tmp = LOOM_BUF_INIT;
    switch (json_typeof(v)) {
    case JSON_NULL:
    case JSON_FALSE: return LOOM_OK;
    case JSON_TRUE:
        s = "true";
        len = 4;
        break;
    case JSON_STRING:
        s = json_string_value(v);
        len = json_string_length(v);
        break;
    case JSON_INTEGER:
        len = (size_t)snprintf(num, sizeof num, "%" PRId64, (int64_t)json_integer_value(v));
        break;
    case JSON_REAL:
        format_real(json_real_value(v), num, sizeof num);
        len = strlen(num);
        break;
    default:
        if (loom_json_dump(&tmp, v))
            return loom_err_set(r->err, LOOM_ENOMEM, "out of memory");
        s = tmp.data;
        len = tmp.len;
        break;
    }
    int rc = loom_template_escape_append(out, esc, s, len);
    loom_buf_free(&tmp);
    return rc ? loom_err_set(r->err, LOOM_ENOMEM, "out of memory") : LOOM_OK;
}

static int missing(rctx_t *r, const tnode_t *n, const char *what)
{
    return loom_err_set(r->err, LOOM_ENOTFOUND, "%s:%d:%d: %s '%s' is missing in the data",
                        n->tname, n->line, n->col, what, n->text);
}

/* Appends text with `strip` removed from, and `add` put before, each line. */
static int reindent(const char *s, size_t len, const char *strip, const char *add, loom_buf_t *out)
{
    size_t sl = strip ? strlen(strip) : 0, al = add ? strlen(add) : 0;
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(s + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - s) + 1 : len;
        if (sl && end - i >= sl && memcmp(s + i, strip, sl) == 0)
            i += sl;
        if (loom_buf_append(out, add ? add : "", al) || loom_buf_append(out, s + i, end - i))
            return LOOM_ENOMEM;
        i = end;
    }
    return LOOM_OK;
}

static int render_block(rctx_t *r, const tnode_t *b, const override_t *ov, loom_buf_t *out)
{
    const tnode_t *use = b;
    for (const override_t *o = ov; o; o = o->next)
        if (strcmp(o->block->text, b->text) == 0) {
            use = o->block;
            break;
        }
    if (!use->indent && !b->indent)
        return render_list(r, &use->kids, ov, out);
    loom_buf_t tmp = LOOM_BUF_INIT;
    int rc = render_list(r, &use->kids, ov, &tmp);
    if (rc == LOOM_OK && reindent(tmp.data ? tmp.data : "", tmp.len, use->indent, b->indent, out))
        rc = loom_err_set(r->err, LOOM_ENOMEM, "out of memory");
    loom_buf_free(&tmp);
    return rc;
}

static int render_partial(rctx_t *r, const tnode_t *n, const override_t *ov, loom_buf_t *out)
{
    const char *name = n->text;
    if (n->dynamic) {
        const json_t *v = lookup(r, n);
        if (!json_is_string(v)) {
            if (r->o->strict)
                return loom_err_set(r->err, LOOM_ENOTFOUND,
                                    "%s:%d:%d: dynamic partial name '%s': expected a string in "
                                    "the data, found %s",
                                    n->tname, n->line, n->col, n->text, loom_json_type_name(v));
            return LOOM_OK;
        }
        name = json_string_value(v);
    }
    size_t max = r->o->max_depth ? r->o->max_depth : LOOM_TEMPLATE_DEFAULT_MAX_DEPTH;
    if (r->nest >= max)
        return loom_err_set(r->err, LOOM_ELIMIT,
                            "%s:%d:%d: partial '%s' nested deeper than %zu levels (recursion?)",
                            n->tname, n->line, n->col, name, max);
    const loom_template_t *t = NULL;
    if (r->o->partials) {
        int rc = loom__template_partial_get(r->o->partials, name, n->indent, &t, r->err);
        if (rc)
            return loom_err_prefix(r->err, "%s:%d:%d: in partial '%s': ", n->tname, n->line, n->col,
                                   name);
    }
    if (!t) {
        if (r->o->strict)
            return loom_err_set(r->err, LOOM_ENOTFOUND, "%s:%d:%d: partial '%s' not found",
                                n->tname, n->line, n->col, name);
        return LOOM_OK;
    }
    /* A parent passes its blocks down; the caller's overrides come first. */
    override_t *added = NULL;
    const override_t *use = ov;
    int rc = LOOM_OK;
    if (n->kind == TN_PARENT) {
        for (size_t i = n->kids.n; i-- > 0;) {
            const tnode_t *k = &n->kids.v[i];
            if (k->kind != TN_BLOCK)
                continue;
            bool shadowed = false;
            for (const override_t *o = ov; o && !shadowed; o = o->next)
                shadowed = strcmp(o->block->text, k->text) == 0;
            for (const override_t *o = added; o && !shadowed; o = o->next)
                shadowed = strcmp(o->block->text, k->text) == 0;
            if (shadowed)
                continue;
            override_t *e = malloc(sizeof *e);
            if (!e) {
                rc = loom_err_set(r->err, LOOM_ENOMEM, "out of memory");
                goto done;
            }
            e->block = k;
            e->next = added;
            added = e;
        }
        /* Chain: the caller's overrides, then ours. */
        if (added) {
            override_t *tail = added;
            while (tail->next)
                tail = tail->next;
            tail->next = (override_t *)ov;
            use = added;
        }
    }
    r->nest++;
    rc = render_list(r, &t->nodes, use, out);
    r->nest--;
done:
    /* Free only our entries (they precede ov in the chain). */
    while (added && added != ov) {
        override_t *next = added->next;
        free(added);
        added = next;
    }
    return rc;
}

static int render_node(rctx_t *r, const tnode_t *n, const override_t *ov, loom_buf_t *out)
{
    switch (n->kind) {
    case TN_TEXT:
        return loom_buf_append(out, n->text, n->len) ? loom_err_set(r->err, LOOM_ENOMEM, "oom")
                                                     : LOOM_OK;
    case TN_VAR: {
        const json_t *v = lookup(r, n);
        if (!v)
            return r->o->strict ? missing(r, n, "variable") : LOOM_OK;
        return append_value(r, v, n->raw, out);
    }
    case TN_SECTION: {
        const json_t *v = lookup(r, n);
        if (!truthy(v))
            return LOOM_OK;
        if (json_is_array(v)) {
            for (size_t i = 0; i < json_array_size(v); i++) {
                int rc = push(r, json_array_get(v, i));
                if (!rc)
                    rc = render_list(r, &n->kids, ov, out);
                r->depth--;
                if (rc)
                    return rc;
            }
            return LOOM_OK;
        }
        int rc = push(r, v);
        if (rc)
            return rc;
        rc = render_list(r, &n->kids, ov, out);
        r->depth--;
        return rc;
    }
    case TN_INVERTED:
        if (truthy(lookup(r, n)))
            return LOOM_OK;
        return render_list(r, &n->kids, ov, out);
    case TN_PARTIAL:
    case TN_PARENT: return render_partial(r, n, ov, out);
    case TN_BLOCK: return render_block(r, n, ov, out);
    }
    return loom_err_set(r->err, LOOM_EINTERNAL, "unknown node kind");
}

static int render_list(rctx_t *r, const tnode_list_t *l, const override_t *ov, loom_buf_t *out)
{
    for (size_t i = 0; i < l->n; i++) {
        int rc = render_node(r, &l->v[i], ov, out);
        if (rc)
            return rc;
    }
    return LOOM_OK;
}

int loom_template_render(const loom_template_t *t, const json_t *data,
                         const loom_template_options_t *opts, loom_buf_t *out, loom_err_t *err)
{
    static const loom_template_options_t defaults = {0};
    json_t *empty = NULL;
    if (!data)
        data = empty = json_object();
    rctx_t r = {.o = opts ? opts : &defaults, .err = err, .cap = 16};
    size_t start = out->len;
    int rc = LOOM_OK;
    if (!(r.stack = malloc(r.cap * sizeof *r.stack)) || !data) {
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
        goto done;
    }
    r.stack[r.depth++] = data;
    if (loom_buf_reserve(out, 1)) {
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
        goto done;
    }
    out->data[out->len] = 0;
    rc = render_list(&r, &t->nodes, NULL, out);
done:
    if (rc && out->data) {
        out->len = start;
        out->data[start] = 0;
    }
    free(r.stack);
    json_decref(empty);
    return rc;
}

int loom_template_render_string(const char *text, size_t len, const char *name, const json_t *data,
                                const loom_template_options_t *opts, loom_buf_t *out,
                                loom_err_t *err)
{
    loom_template_t *t;
    int rc = loom_template_compile(text, len, name, &t, err);
    if (rc)
        return rc;
    rc = loom_template_render(t, data, opts, out, err);
    loom_template_free(t);
    return rc;
}
