/* Fuzz the Mustache compiler and renderer. Input layout:
 *   byte 0        options: bits 0-1 escaper, bit 2 strict
 *   bytes 1..     template text, then optionally a NUL byte and JSON data
 * The template is also registered as partials "p" and "self", so partial
 * and parent tags (and recursion) are reached; the depth limit is small to
 * keep each run short. */
#include <string.h>

#include "loom/template.h"

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
        loom_template_render(t, ctx, &o, &out, &err);
        loom_buf_free(&out);
        loom_template_free(t);
    }
    loom_template_partials_free(parts);
    json_decref(ctx);
    return 0;
}
