/* Fuzz the zoo over arbitrary ONNX graphs: any model the estimator's reader
 * accepts must give a signature or a clean error; its alignment with
 * itself scores 1; transforming weights along it (the parent's weights: a
 * small tensor for every initializer, of the declared rank) must neither
 * crash nor allocate without bound. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loom/zoo.h"

static void fake_weights(const loom_est_model_t *m, loom_zoo_weights_t *w)
{
    memset(w, 0, sizeof *w);
    w->meta = json_object();
    w->t = calloc(m->nt ? m->nt : 1, sizeof *w->t);
    for (size_t i = 0; w->t && i < m->nt; i++) {
        const loom_est_tensor_t *t = &m->t[i];
        if (!t->is_init || t->rank <= 0 || t->rank > 8 || loom_zoo_weights_find(w, t->name))
            continue;
        loom_zoo_tensor_t *o = &w->t[w->n];
        o->name = strdup(t->name);
        o->rank = t->rank;
        o->numel = 1;
        for (int k = 0; k < t->rank; k++) /* small: 1 to 3 per dim */
            o->numel *= (size_t)(o->dims[k] = 1 + (t->dims[k] > 0 ? t->dims[k] % 3 : 0));
        o->data = calloc(o->numel, sizeof *o->data);
        w->n++;
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    loom_est_model_t *m = NULL;
    loom_err_t err;
    if (loom_est_model_parse(data, size, "fuzz.onnx", &m, &err) != LOOM_OK)
        return 0;
    loom_zoo_sig_t s;
    if (loom_zoo_sig_from_model(m, &s, &err) == LOOM_OK) {
        loom_zoo_alignment_t al;
        /* a graph aligns with itself fully unless it has more parallel
         * branches than the passes (docs/zoo.md); never above the bounds */
        if (loom_zoo_align(&s, &s, &al, &err) != LOOM_OK || !(al.similarity > 0) ||
            al.similarity > 1.0 || loom_zoo_bound(&s, &s) < al.similarity - 1e-9)
            abort();
        loom_zoo_keys_t k;
        if (loom_zoo_keys_of(&s, &k) == LOOM_OK) {
            if (loom_zoo_keys_bound(&k, &k) < al.similarity - 1e-6)
                abort();
            loom_zoo_keys_free(&k);
        }
        loom_zoo_weights_t w, out;
        fake_weights(m, &w);
        loom_zoo_transform_stats_t st;
        loom_zoo_transform_opts_t o = {.noise = 0.01, .seed = 1};
        if (loom_zoo_transform(m, &s, m, &s, &al, &w, &o, &out, &st, &err) == LOOM_OK)
            loom_zoo_weights_free(&out);
        loom_zoo_weights_free(&w);
        loom_zoo_alignment_free(&al);
        loom_zoo_sig_free(&s);
    } else if (err.msg[0] == '\0' || s.layers) {
        abort();
    }
    loom_est_model_free(m);
    return 0;
}
