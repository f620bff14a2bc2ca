/* Fuzz the Mustache compiler and renderer. Input layout:
 *   byte 0        options: bits 0-1 escaper, bit 2 strict
 *   bytes 1..     template text, then optionally a NUL byte and JSON data
 * The template is also registered as partials "p" and "self", so partial
 * and parent tags (and recursion) are reached; the depth limit is small to
 * keep each run short.
 *
 * Then the same template as a plan (plan.c), every scalar of the data a
 * hole: a plan that can be built must render what the renderer rendered,
 * and a render that failed must not plan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/template.h"

typedef struct holes {
    loom_template_hole_t h[256];
    loom_template_text_t v[256];
    char text[256][64];
    size_t n;
} holes_t;

/* A copy of v with its scalars replaced by stand-ins (NULL when there are
 * too many, or a string too long for this harness). */
static json_t *punch(const json_t *v, holes_t *hs)
{
    if (json_is_object(v) || json_is_array(v)) {
        json_t *c = json_is_object(v) ? json_object() : json_array();
        const char *k;
        json_t *e;
        size_t i;
        if (json_is_object(v)) {
            json_object_foreach((json_t *)v, k, e)
            {
                json_t *p = punch(e, hs);
                if (!p || json_object_set_new(c, k, p))
                    goto fail;
            }
        } else {
            json_array_foreach(v, i, e)
            {
                json_t *p = punch(e, hs);
                if (!p || json_array_append_new(c, p))
                    goto fail;
            }
        }
        return c;
    fail:
        json_decref(c);
        return NULL;
    }
    if (hs->n == 256)
        return NULL;
    char *t = hs->text[hs->n];
    size_t len = 0;
    int truthy = !json_is_false(v) && !json_is_null(v);
    if (json_is_string(v)) {
        len = json_string_length(v);
        if (len >= 64)
            return NULL;
        memcpy(t, json_string_value(v), len);
        truthy = len > 0;
    } else if (json_is_integer(v)) {
        len = (size_t)snprintf(t, 64, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        len = loom_format_real(json_real_value(v), t, 64);
    } else if (json_is_true(v)) {
        len = (size_t)snprintf(t, 64, "true");
    }
    json_t *s = json_string("");
    if (!s)
        return NULL;
    hs->h[hs->n] = (loom_template_hole_t){.leaf = s, .truthy = truthy};
    /* false and null print nothing at all */
    hs->v[hs->n++] = (loom_template_text_t){json_is_false(v) || json_is_null(v) ? NULL : t, len};
    return s;
}

static void check_plan(const loom_template_t *t, const json_t *ctx,
                       const loom_template_options_t *o, int render_rc, const loom_buf_t *want)
{
    static holes_t hs;
    hs.n = 0;
    json_t *shape = punch(ctx, &hs);
    if (!shape)
        return;
    loom_template_plan_t *p = NULL;
    loom_err_t err;
    int rc = loom_template_plan_new(t, shape, hs.h, hs.n, o, &p, &err);
    if (rc == LOOM_OK) {
        if (render_rc != LOOM_OK)
            abort(); /* planned what does not render */
        loom_buf_t got = LOOM_BUF_INIT;
        if (loom_template_plan_render(p, hs.v, &got) == LOOM_OK &&
            (got.len != want->len || memcmp(got.data, want->data, got.len) != 0))
            abort(); /* the plan and the renderer disagree */
        loom_buf_free(&got);
        loom_template_plan_free(p);
    }
    json_decref(shape);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1 || size > 512)
        return 0;
    unsigned opt = data[0];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    const char *nul = memchr(text, 0, len);
    json_t *ctx = NULL;
    if (nul) {
        size_t dlen = len - (size_t)(nul - text) - 1;
        len = (size_t)(nul - text);
        loom_json_parse(nul + 1, dlen, "data", 16, &ctx, NULL);
    }
    if (!ctx)
        ctx = json_pack("{s:s,s:[i,i],s:{s:s},s:b,s:s}", "a", "<x>'\"$(y)", "list", 1, 2, "obj",
                        "name", "p", "t", 1, "dyn", "self");
    loom_template_partials_t *parts = NULL;
    loom_template_t *t = NULL;
    loom_err_t err;
    if (loom_template_partials_new(&parts, &err) == LOOM_OK) {
        loom_template_partials_add(parts, "p", text, len, &err);
        loom_template_partials_add(parts, "self", text, len, &err);
    }
    if (loom_template_compile(text, len, "fuzz", &t, &err) == LOOM_OK) {
        loom_template_options_t o = {.escape = (loom_template_escape_t)(opt & 3),
                                     .strict = (opt & 4) != 0,
                                     .partials = parts,
                                     .max_depth = 3};
        loom_buf_t out = LOOM_BUF_INIT;
        int rc = loom_template_render(t, ctx, &o, &out, &err);
        check_plan(t, ctx, &o, rc, &out);
        loom_buf_free(&out);
        loom_template_free(t);
    }
    loom_template_partials_free(parts);
    json_decref(ctx);
    return 0;
}
