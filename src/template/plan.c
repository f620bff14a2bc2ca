/* Template plans: a template rendered ahead of time with some scalar leaves
 * of its data left open (holes), kept as literal text plus the places where
 * each hole's value goes. Building one runs the ordinary renderer
 * (render.c) with a recorder attached, so a plan cannot drift from what the
 * renderer produces; rendering one is copies and escapes. See
 * include/loom/template.h for what can and cannot be planned. */
#include <stdlib.h>
#include <string.h>

#include "template/template_int.h"

struct loom_template_plan {
    char *lit; /* the literal output, holes left out */
    size_t litlen;
    tplan_step_t *steps;
    size_t nsteps;
    bool *uses; /* per hole */
    size_t nholes;
};

int loom__template_rec_hole(tplan_rec_t *rec, size_t hole, loom_template_escape_t esc,
                            size_t lit_end)
{
    if (loom_vec_reserve((void **)&rec->steps, &rec->cap, rec->n + 1, sizeof *rec->steps, 16))
        return LOOM_ENOMEM;
    rec->steps[rec->n++] = (tplan_step_t){.lit_end = lit_end, .hole = hole, .esc = esc};
    return LOOM_OK;
}

int loom_template_plan_new(const loom_template_t *t, const json_t *data,
                           const loom_template_hole_t *holes, size_t nholes,
                           const loom_template_options_t *opts, loom_template_plan_t **out,
                           loom_err_t *err)
{
    *out = NULL;
    for (size_t i = 0; i < nholes; i++) {
        if (!holes[i].leaf || json_is_array(holes[i].leaf) || json_is_object(holes[i].leaf))
            return loom_err_set(err, LOOM_EINVAL, "template plan: hole %zu is not a scalar", i);
        if (holes[i].truthy < -1 || holes[i].truthy > 1)
            return loom_err_set(err, LOOM_EINVAL,
                                "template plan: hole %zu: truthy is %d, expected -1, 0 or 1", i,
                                holes[i].truthy);
    }
    tplan_rec_t rec = {.holes = holes, .nholes = nholes};
    loom_buf_t lit = LOOM_BUF_INIT;
    loom_template_plan_t *p = calloc(1, sizeof *p);
    int rc = p ? LOOM_OK : loom_err_set(err, LOOM_ENOMEM, "out of memory");
    if (rc == LOOM_OK)
        rc = loom__template_render_rec(t, data, opts, &rec, &lit, err);
    if (rc == LOOM_OK && !(p->uses = calloc(nholes ? nholes : 1, sizeof *p->uses)))
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
    if (rc != LOOM_OK) {
        free(rec.steps);
        loom_buf_free(&lit);
        free(p);
        return rc;
    }
    for (size_t i = 0; i < rec.n; i++)
        p->uses[rec.steps[i].hole] = true;
    p->nholes = nholes;
    p->steps = rec.steps;
    p->nsteps = rec.n;
    p->litlen = lit.len;
    p->lit = loom_buf_detach(&lit);
    *out = p;
    return LOOM_OK;
}

int loom_template_plan_render(const loom_template_plan_t *p, const loom_template_text_t *values,
                              loom_buf_t *out)
{
    size_t start = out->len, from = 0;
    if (loom_buf_reserve(out, p->litlen + 64))
        return LOOM_ENOMEM;
    for (size_t i = 0; i < p->nsteps; i++) {
        const tplan_step_t *st = &p->steps[i];
        const loom_template_text_t *v = &values[st->hole];
        if (loom_buf_append(out, p->lit + from, st->lit_end - from) ||
            (v->s && loom_template_escape_append(out, st->esc, v->s, v->len)))
            goto fail;
        from = st->lit_end;
    }
    if (loom_buf_append(out, p->lit + from, p->litlen - from))
        goto fail;
    return LOOM_OK;
fail:
    if (out->data) {
        out->len = start;
        out->data[start] = '\0';
    }
    return LOOM_ENOMEM;
}

bool loom_template_plan_uses(const loom_template_plan_t *p, size_t k)
{
    return k < p->nholes && p->uses[k];
}

size_t loom_template_plan_literal_len(const loom_template_plan_t *p)
{
    return p->litlen;
}

void loom_template_plan_free(loom_template_plan_t *p)
{
    if (!p)
        return;
    free(p->lit);
    free(p->steps);
    free(p->uses);
    free(p);
}
