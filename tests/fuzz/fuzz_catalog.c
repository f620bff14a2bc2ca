/* Fuzz the catalog loader: the positioned JSON parser, every validation
 * rule, the defaults merge, and (for inputs that are valid catalogs) job
 * picking and parameter sampling, and shapes: a shape's draw makes the
 * same draws as sampling, and a buffer too small gets the same count.
 * Relative paths resolve against a directory that does not exist, so
 * template/model checks fail fast; absolute ones are checked as usual. */
#include <stdlib.h>
#include <string.h>

#include "loom/catalog.h"

static void check_shape(const loom_catalog_t *c, size_t job, const loom_rng_t *state)
{
    loom_catalog_shape_t *s;
    loom_err_t err;
    if (loom_catalog_shape_new(c, job, &s, &err) != LOOM_OK)
        return;
    const loom_catalog_hole_t *holes;
    size_t nh = loom_catalog_shape_holes(s, &holes);
    loom_catalog_span_t *spans = calloc(nh + 1, sizeof *spans);
    char small[16], *big = NULL;
    loom_rng_t a = *state, b = *state, d = *state;
    json_t *ctx;
    if (spans && loom_catalog_sample(c, job, &a, &ctx, &err) == LOOM_OK) {
        json_decref(ctx);
        size_t need = loom_catalog_shape_draw(s, &b, small, sizeof small, spans);
        if (memcmp(&a, &b, sizeof a) != 0)
            abort(); /* a shape must draw exactly what sampling draws */
        if ((big = malloc(need + 1)) != NULL &&
            loom_catalog_shape_draw(s, &d, big, need, spans) != need)
            abort(); /* the count does not depend on the buffer */
        for (size_t k = 0; big && k < nh; k++)
            if (spans[k].off + spans[k].len > need)
                abort();
    }
    free(big);
    free(spans);
    loom_catalog_shape_free(s);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    loom_catalog_t *c = NULL;
    loom_catalog_issues_t is = LOOM_CATALOG_ISSUES_INIT;
    loom_err_t err;
    if (loom_catalog_load_string((const char *)data, size, "fuzz.json", "/nonexistent-loom-fuzz",
                                 &c, &is, &err) == LOOM_OK) {
        loom_rng_t rng;
        loom_rng_init(&rng, size, 0);
        for (int i = 0; i < 4; i++) {
            json_t *ctx;
            size_t job = loom_catalog_pick(c, &rng);
            check_shape(c, job, &rng);
            if (loom_catalog_sample(c, job, &rng, &ctx, &err) == LOOM_OK)
                json_decref(ctx);
        }
        loom_catalog_free(c);
    }
    loom_catalog_issues_free(&is);
    return 0;
}
