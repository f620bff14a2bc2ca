/* The whole warm start for one new model: match it against the repository,
 * choose the parent, align the two graphs, transform the parent's weights
 * and write the child's weights file, whose "meta" says where they came
 * from (the job and `loom show` report it). Timed, since the point of a
 * warm start is lost if finding it costs a noticeable part of a run. */
#include <stdio.h>
#include <stdlib.h>
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
    int rc = loom_zoo_get(z, id, NULL, row, err);
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
    loom_est_model_t *mc = NULL;
    if (report)
        *report = NULL;
    int rc = loom_est_model_load(child_onnx, &mc, err);
    if (!rc)
        rc = loom_zoo_warm_model(z, mc, child_onnx, mopts, topts, out_path, report, err);
    loom_est_model_free(mc);
    return rc;
}

int loom_zoo_warm_model(loom_zoo_t *z, loom_est_model_t *mc, const char *child_onnx,
                        const loom_zoo_match_opts_t *mopts, const loom_zoo_transform_opts_t *topts,
                        const char *out_path, json_t **report, loom_err_t *err)
{
    int64_t t0 = loom_time_mono_ns();
    loom_est_model_t *mp = NULL;
    loom_zoo_sig_t sc = {0}, sp = {0};
    loom_zoo_weights_t wp = {0}, wc = {0};
    loom_zoo_alignment_t al = {0};
    json_t *match = NULL, *row = NULL;
    if (report)
        *report = NULL;
    int rc = loom_zoo_sig_from_model(mc, &sc, err);
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
    loom_est_model_free(mp);
    json_decref(match);
    json_decref(row);
    return rc;
}

double loom_zoo_speedup(double similarity)
{
    if (!(similarity >= 0.5))
        return 1.0;
    if (similarity > 1.0)
        similarity = 1.0;
    return 1.3 + 6.0 * (similarity - 0.5);
}

double loom_zoo_expected_s(double base_s, const char *labels_json)
{
    if (!labels_json || !strstr(labels_json, "zoo.speedup"))
        return base_s; /* the common case: no JSON parse per job */
    json_t *labels = json_loads(labels_json, 0, NULL);
    const char *v = json_string_value(json_object_get(labels, "zoo.speedup"));
    char *end = NULL;
    double f = v ? strtod(v, &end) : 1.0;
    if (!v || end == v || *end != '\0' || !(f >= 1.0))
        f = 1.0;
    if (f > LOOM_ZOO_SPEEDUP_MAX)
        f = LOOM_ZOO_SPEEDUP_MAX;
    json_decref(labels);
    return base_s / f;
}

int loom_zoo_warm_apply(const json_t *res, json_t *labels, loom_buf_t *script, loom_err_t *err)
{
    const char *path = json_string_value(json_object_get(res, "weights"));
    if (!path || !*path || strlen(path) > 256 || strchr(path, '\'') || strchr(path, '\n'))
        return loom_err_set(err, LOOM_EINVAL,
                            "zoo.warm result: expected \"weights\", a path of 1-256 bytes "
                            "without quotes or newlines");
    double sim = json_real_value(json_object_get(res, "similarity"));
    char v[64];
    int bad = 0;
    snprintf(v, sizeof v, "%lld", (long long)json_integer_value(json_object_get(res, "parent")));
    bad |= json_object_set_new(labels, "zoo.parent", json_string(v));
    snprintf(v, sizeof v, "%.4f", sim);
    bad |= json_object_set_new(labels, "zoo.similarity", json_string(v));
    snprintf(v, sizeof v, "%.2f", loom_zoo_speedup(sim));
    bad |= json_object_set_new(labels, "zoo.speedup", json_string(v));
    snprintf(v, sizeof v, "%lld of %lld",
             (long long)json_integer_value(json_object_get(res, "layers_mapped")),
             (long long)json_integer_value(json_object_get(res, "layers_child")));
    bad |= json_object_set_new(labels, "zoo.layers_mapped", json_string(v));
    bad |= json_object_set_new(labels, "zoo.weights", json_string(path));
    if (bad)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    loom_buf_t out = LOOM_BUF_INIT;
    const char *body = script->data ? script->data : "";
    size_t head = 0;
    if (strncmp(body, "#!", 2) == 0) {
        const char *nl = strchr(body, '\n');
        head = nl ? (size_t)(nl - body) + 1 : strlen(body);
    }
    loom_buf_append(&out, body, head);
    if (head && body[head - 1] != '\n')
        loom_buf_append_char(&out, '\n');
    loom_buf_appendf(&out, "export LOOM_WARM_START='%s'\n", path);
    loom_buf_append_str(&out, body + head);
    loom_buf_free(script);
    *script = out;
    return LOOM_OK;
}
