/* Fuzz the catalog loader: the positioned JSON parser, every validation
 * rule, the defaults merge, and (for inputs that are valid catalogs) job
 * picking and parameter sampling. Relative paths resolve against a
 * directory that does not exist, so template/model checks fail fast;
 * absolute ones are checked as usual. */
#include "loom/catalog.h"

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
            if (loom_catalog_sample(c, loom_catalog_pick(c, &rng), &rng, &ctx, &err) == LOOM_OK)
                json_decref(ctx);
        }
        loom_catalog_free(c);
    }
    loom_catalog_issues_free(&is);
    return 0;
}
