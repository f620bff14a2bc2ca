/* Fuzz the zoo's two binary parsers: weights files (LOOMWTS1 + JSON header
 * + float data) and stored layer signatures (LZS1). Any bytes give a value
 * or a clean error; a parsed value must round-trip through its writer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loom/zoo.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    loom_err_t err;
    loom_zoo_weights_t w;
    if (loom_zoo_weights_parse(data, size, "fuzz.w", &w, &err) == LOOM_OK) {
        for (size_t i = 0; i < w.n; i++)
            if (loom_zoo_weights_find(&w, w.t[i].name) != &w.t[i])
                abort(); /* names are unique */
        loom_zoo_weights_free(&w);
    } else if (err.msg[0] == '\0' || w.n || w.t) {
        abort();
    }
    loom_zoo_sig_t s;
    if (loom_zoo_sig_decode(data, size, "fuzz.sig", &s, &err) == LOOM_OK) {
        loom_buf_t b;
        loom_buf_init(&b);
        if (loom_zoo_sig_encode(&s, &b) || b.len != size)
            abort();
        if (loom_zoo_similarity(&s, &s) < 0 || loom_zoo_bound(&s, &s) < 0)
            abort();
        loom_buf_free(&b);
        loom_zoo_sig_free(&s);
    } else if (err.msg[0] == '\0' || s.layers) {
        abort();
    }
    return 0;
}
