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
    size_t nest;      /* partial / parent nesting */
    tplan_rec_t *rec; /* building a plan (plan.c): holes become plan steps */
} rctx_t;

static int render_list(rctx_t *r, const tnode_list_t *l, const override_t *ov, loom_buf_t *out);
static bool truthy(const json_t *v);

static int push(rctx_t *r, const json_t *v)
{
    if (loom_vec_reserve((void **)&r->stack, &r->cap, r->depth + 1, sizeof *r->stack, 16))
        return loom_err_set(r->err, LOOM_ENOMEM, "out of memory");
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

/* The index of v among the plan's holes, or -1 (always -1 when no plan is
 * being built). */
static ptrdiff_t hole_of(const rctx_t *r, const json_t *v)
{
    for (size_t i = 0; r->rec && v && i < r->rec->nholes; i++)
        if (r->rec->holes[i].leaf == v)
            return (ptrdiff_t)i;
    return -1;
}

/* Building a plan, the template did something with a hole that depends on
 * the value the hole will have. */
static int unplannable(rctx_t *r, const tnode_t *n, const char *why)
{
    return loom_err_set(r->err, LOOM_EUNAVAIL, "%s:%d:%d: '%s' %s; the template cannot be planned",
                        n->tname, n->line, n->col, n->text, why);
}

/* Whether a container holds a hole anywhere inside. */
static bool holds_hole(const rctx_t *r, const json_t *v)
{
    if (hole_of(r, v) >= 0)
        return true;
    size_t i;
    const char *k;
    json_t *e;
    if (json_is_array(v)) {
        json_array_foreach(v, i, e) if (holds_hole(r, e)) return true;
    } else if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, e) if (holds_hole(r, e)) return true;
    }
    return false;
}

/* Truthiness of a section's value; for a hole, what the plan was told
 * (-1 when that depends on the value: the caller gives up the plan). */
static int truth_of(const rctx_t *r, const json_t *v)
{
    ptrdiff_t h = hole_of(r, v);
    if (h >= 0)
        return r->rec->holes[h].truthy;
    return truthy(v);
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

static int append_value(rctx_t *r, const tnode_t *n, const json_t *v, bool raw, loom_buf_t *out)
{
    loom_template_escape_t esc = raw ? LOOM_TEMPLATE_ESCAPE_NONE : r->o->escape;
    if (r->rec) {
        ptrdiff_t h = hole_of(r, v);
        if (h >= 0)
            return loom__template_rec_hole(r->rec, (size_t)h, esc, out->len)
                       ? loom_err_set(r->err, LOOM_ENOMEM, "out of memory")
                       : LOOM_OK;
        if ((json_is_array(v) || json_is_object(v)) && holds_hole(r, v))
            return unplannable(r, n, "renders a value that holds a hole as JSON");
    }
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
    case JSON_REAL: len = loom_format_real(json_real_value(v), num, sizeof num); break;
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
    if (r->rec) /* reindenting would move the holes' places */
        return unplannable(r, b, "is a reindented block");
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
        if (hole_of(r, v) >= 0)
            return unplannable(r, n, "takes a partial's name from a hole");
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
        return append_value(r, n, v, n->raw, out);
    }
    case TN_SECTION: {
        const json_t *v = lookup(r, n);
        int t = truth_of(r, v);
        if (t < 0)
            return unplannable(r, n, "is a section on a hole that may be true or false");
        if (!t)
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
    case TN_INVERTED: {
        int t = truth_of(r, lookup(r, n));
        if (t < 0)
            return unplannable(r, n, "is an inverted section on a hole that may be true or false");
        if (t)
            return LOOM_OK;
        return render_list(r, &n->kids, ov, out);
    }
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

int loom__template_render_rec(const loom_template_t *t, const json_t *data,
                              const loom_template_options_t *opts, tplan_rec_t *rec,
                              loom_buf_t *out, loom_err_t *err)
{
    static const loom_template_options_t defaults = {0};
    json_t *empty = NULL;
    if (!data)
        data = empty = json_object();
    rctx_t r = {.o = opts ? opts : &defaults, .err = err, .cap = 16, .rec = rec};
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

int loom_template_render(const loom_template_t *t, const json_t *data,
                         const loom_template_options_t *opts, loom_buf_t *out, loom_err_t *err)
{
    return loom__template_render_rec(t, data, opts, NULL, out, err);
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
