/* The whole warm start for one new model: match it against the repository,
 * choose the parent, align the two graphs, transform the parent's weights
 * and write the child's weights file, whose "meta" says where they came
 * from (the job and `loom show` report it). Timed, since the point of a
 * warm start is lost if finding it costs a noticeable part of a run. */
#include <stdio.h>
#include <string.h>

#include "estimate/est.h"
#include "loom/zoo.h"

static double secs(int64_t t0)
{
    return (double)(loom_time_mono_ns() - t0) / 1e9;
}

static int load_parent(loom_zoo_t *z, int64_t id, json_t **row, loom_est_model_t **m,
                       loom_zoo_sig_t *sig, loom_zoo_weights_t *w, loom_err_t *err)
{
    int rc = loom_zoo_get(z, id, row, err);
    if (rc)
        return rc;
    const char *mp = json_string_value(json_object_get(*row, "model_path"));
    const char *wp = json_string_value(json_object_get(*row, "weights_path"));
    if ((rc = loom_est_model_load(mp, m, err)))
        return rc;
    if ((rc = loom_zoo_sig_from_model(*m, sig, err)))
        return rc;
    return loom_zoo_weights_load(wp, w, err);
}

/* [[child node, parent node, score], ...]: the layers mapped. */
static json_t *mapping_json(const loom_zoo_alignment_t *al, const loom_zoo_sig_t *sc,
                            const loom_est_model_t *mc, const loom_zoo_sig_t *sp,
                            const loom_est_model_t *mp)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < al->npairs; i++) {
        const loom_zoo_pair_t *p = &al->pairs[i];
        int nc = sc->layers[p->child].node, np = sp->layers[p->parent].node;
        const char *a = nc >= 0 ? mc->n[nc].name : NULL;
        const char *b = np >= 0 ? mp->n[np].name : NULL;
        json_array_append_new(arr, json_pack("[s,s,f]", a ? a : "", b ? b : "", p->score));
    }
    return arr;
}

int loom_zoo_warm(loom_zoo_t *z, const char *child_onnx, const loom_zoo_match_opts_t *mopts,
                  const loom_zoo_transform_opts_t *topts, const char *out_path, json_t **report,
                  loom_err_t *err)
{
    int64_t t0 = loom_time_mono_ns();
    loom_est_model_t *mc = NULL, *mp = NULL;
    loom_zoo_sig_t sc = {0}, sp = {0};
    loom_zoo_weights_t wp = {0}, wc = {0};
    loom_zoo_alignment_t al = {0};
    json_t *match = NULL, *row = NULL;
    if (report)
        *report = NULL;
    int rc = loom_est_model_load(child_onnx, &mc, err);
    if (!rc)
        rc = loom_zoo_sig_from_model(mc, &sc, err);
    if (!rc)
        rc = loom_zoo_match(z, &sc, mopts, &match, err);
    if (!rc && json_is_null(json_object_get(match, "parent")))
        rc = loom_err_set(err, LOOM_ENOTFOUND,
                          "%s: no stored model of this task is similar enough to start from",
                          child_onnx);
    double match_s = secs(t0);
    int64_t t1 = loom_time_mono_ns();
    int64_t pid = rc ? 0 : json_integer_value(json_object_get(match, "parent"));
    if (!rc)
        rc = load_parent(z, pid, &row, &mp, &sp, &wp, err);
    if (!rc)
        rc = loom_zoo_align(&sc, &sp, &al, err);
    loom_zoo_transform_stats_t st;
    if (!rc)
        rc = loom_zoo_transform(mc, &sc, mp, &sp, &al, &wp, topts, &wc, &st, err);
    double transform_s = secs(t1);
    if (!rc) {
        json_t *meta = json_pack(
            "{s:I,s:O,s:O,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "parent", (json_int_t)pid,
            "parent_name", json_object_get(row, "name"), "parent_metric",
            json_object_get(row, "metric"), "similarity", al.similarity, "layers_child",
            (json_int_t)sc.n, "layers_parent", (json_int_t)sp.n, "layers_mapped",
            (json_int_t)st.layers_mapped, "tensors_copied", (json_int_t)st.tensors_copied,
            "tensors_widened", (json_int_t)st.tensors_widened, "tensors_deepened",
            (json_int_t)st.tensors_deepened, "pairs", mapping_json(&al, &sc, mc, &sp, mp));
        json_object_set_new(meta, "tensors_child", json_integer((json_int_t)st.tensors_child));
        json_object_set_new(meta, "match_s", json_real(match_s));
        json_object_set_new(meta, "transform_s", json_real(transform_s));
        json_decref(wc.meta);
        wc.meta = meta;
        rc = loom_zoo_weights_save(&wc, out_path, err);
        if (!rc && report) {
            *report = json_deep_copy(meta);
            json_object_set_new(*report, "weights", json_string(out_path));
            json_object_set(*report, "candidates", json_object_get(match, "candidates"));
        }
    }
    loom_zoo_alignment_free(&al);
    loom_zoo_weights_free(&wc);
    loom_zoo_weights_free(&wp);
    loom_zoo_sig_free(&sc);
    loom_zoo_sig_free(&sp);
    loom_est_model_free(mc);
    loom_est_model_free(mp);
    json_decref(match);
    json_decref(row);
    return rc;
}
