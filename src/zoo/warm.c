/* The whole warm start for one new model: match it against the repository,
 * choose the parent, align the two graphs, transform the parent's weights
 * and write the child's weights file, whose "meta" says where they came
 * from (the job and `loom show` report it). Timed, since the point of a
 * warm start is lost if finding it costs a noticeable part of a run.
 *
 * An eval-mode export (torch.onnx.export's default) folds each BatchNorm
 * into the convolution before it: the graph has no BatchNormalization, and
 * the folded weights are new tensors named by the exporter (onnx::Conv_12),
 * found in no weights file saved by parameter name. Such a parent's
 * convolutions are mapped from the values in its ONNX file (the child's
 * BatchNorm keeps its initialisation: training-mode BatchNorm normalises
 * each channel, so the folded per-channel scale washes out), and the
 * report warns, saying why, when few layers mapped. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/zoo.h"
#include "zoo/zoo_int.h"

static double secs(int64_t t0)
{
    return (double)(loom_time_mono_ns() - t0) / 1e9;
}

/* The parent: its repository row, its graph parsed from bytes (kept in
 * *bytes for folded weights), its signature and its weights. */
static int load_parent(loom_zoo_t *z, int64_t id, json_t **row, loom_buf_t *bytes,
                       loom_est_model_t **m, loom_zoo_sig_t *sig, loom_zoo_weights_t *w,
                       loom_err_t *err)
{
    int rc = loom_zoo_get(z, id, NULL, row, err);
    if (rc)
        return rc;
    const char *mp = json_string_value(json_object_get(*row, "model_path"));
    const char *wp = json_string_value(json_object_get(*row, "weights_path"));
    loom_file_t f;
    if ((rc = loom_file_open(&f, mp, 0, LOOM_EST_MODEL_MAX, err)))
        return rc;
    rc = loom_file_read(&f, bytes, err);
    loom_file_close(&f);
    if (rc || (rc = loom_est_model_parse(bytes->data, bytes->len, mp, m, err)))
        return rc;
    if ((rc = loom_zoo_sig_from_model(*m, sig, err)))
        return rc;
    return loom_zoo_weights_load(wp, w, err);
}

static bool is_weighted_op(const char *op)
{
    return !strcmp(op, "Conv") || !strcmp(op, "ConvTranspose") || !strcmp(op, "Gemm") ||
           !strcmp(op, "MatMul");
}

/* A name PyTorch's exporter made up for a tensor it computed (a folded
 * BatchNorm: "onnx::Conv_193", older versions "193"), not a parameter's. */
static bool exporter_name(const char *name)
{
    if (!strncmp(name, "onnx::", 6))
        return true;
    for (const char *p = name; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    return *name != '\0';
}

/* Adds to w the float initializers the parent's layers read as weights,
 * named by the exporter (an eval-mode export's folded convolutions), that
 * its weights file lacks, with the values of its ONNX file; *added counts
 * them. A parameter's values come from the weights file only: the ONNX
 * file's may be older (exported before training). */
static int fill_folded(const loom_est_model_t *m, const loom_buf_t *bytes, loom_zoo_weights_t *w,
                       size_t *added, loom_err_t *err)
{
    *added = 0;
    for (size_t i = 0; i < m->nn; i++) {
        const loom_est_node_t *n = &m->n[i];
        for (size_t k = 1; is_weighted_op(n->op) && k < n->nin; k++) {
            int name_ti;
            bool tr;
            int ti = zoo_weight_of(m, n->in[k], &name_ti, &tr);
            if (ti < 0)
                continue;
            const loom_est_tensor_t *t = &m->t[ti];
            int64_t numel = loom_est_numel(t);
            if (!exporter_name(m->t[name_ti].name) || t->dtype != LOOM_EST_T_FLOAT ||
                t->rank <= 0 || t->rank > 8 || numel <= 0 || t->raw_len != (size_t)numel * 4 ||
                t->raw_off + t->raw_len > bytes->len || loom_zoo_weights_find(w, t->name) ||
                w->n >= LOOM_ZOO_MAX_TENSORS)
                continue;
            loom_zoo_tensor_t nt = {.rank = t->rank, .numel = (size_t)numel};
            memcpy(nt.dims, t->dims, (size_t)t->rank * sizeof *t->dims);
            nt.data = malloc(nt.numel * sizeof *nt.data);
            nt.name = strdup(t->name);
            if (!nt.data || !nt.name ||
                loom_vec_reserve((void **)&w->t, &w->cap, w->n + 1, sizeof *w->t, 16)) {
                free(nt.data);
                free(nt.name);
                return loom_err_set(err, LOOM_ENOMEM, "warm start: out of memory");
            }
            memcpy(nt.data, bytes->data + t->raw_off, t->raw_len); /* float32 LE, as ours */
            w->t[w->n++] = nt;
            (*added)++;
        }
    }
    return LOOM_OK;
}

/* What a graph holds that tells an eval-mode export: its BatchNormalization
 * nodes, and the weights of its layers named by the exporter. */
typedef struct graph_facts {
    size_t batchnorms, weighted, unnamed, unnamed_conv;
    const char *example; /* one exporter-made name */
} graph_facts_t;

static graph_facts_t facts_of(const loom_est_model_t *m, const loom_zoo_sig_t *sig)
{
    graph_facts_t g = {0};
    for (size_t i = 0; i < m->nn; i++)
        g.batchnorms += !strcmp(m->n[i].op, "BatchNormalization");
    for (size_t l = 0; l < sig->n; l++) {
        int ni = sig->layers[l].node;
        if (ni < 0 || (size_t)ni >= m->nn)
            continue;
        const loom_est_node_t *n = &m->n[ni];
        bool weighted = false, unnamed = false;
        for (size_t k = 0; k < n->nin; k++) {
            int name_ti;
            bool tr;
            int ti = zoo_weight_of(m, n->in[k], &name_ti, &tr);
            if (ti < 0 || m->t[ti].rank <= 0)
                continue;
            weighted = true;
            if (is_weighted_op(n->op) && exporter_name(m->t[name_ti].name)) {
                unnamed = true;
                g.unnamed_conv += !strcmp(n->op, "Conv") && k == 1;
                if (!g.example)
                    g.example = m->t[name_ti].name;
            }
        }
        g.weighted += weighted;
        g.unnamed += unnamed;
    }
    return g;
}

/* Matched parent layers with weights of which the parent's weights file
 * (filled from its ONNX file) has none, under either name the graph gives
 * them; *example names one. */
static size_t weights_missing(const loom_zoo_alignment_t *al, const loom_zoo_sig_t *sp,
                              const loom_est_model_t *mp, const loom_zoo_weights_t *wp,
                              const char **example)
{
    size_t n = 0;
    for (size_t i = 0; i < al->npairs; i++) {
        int ni = al->pairs[i].parent >= 0 && (size_t)al->pairs[i].parent < sp->n
                     ? sp->layers[al->pairs[i].parent].node
                     : -1;
        if (ni < 0 || (size_t)ni >= mp->nn)
            continue;
        const loom_est_node_t *nd = &mp->n[ni];
        bool weighted = false, found = false;
        const char *name = NULL;
        for (size_t k = 1; k < nd->nin; k++) {
            int name_ti;
            bool tr;
            int ti = zoo_weight_of(mp, nd->in[k], &name_ti, &tr);
            if (ti < 0 || mp->t[ti].rank <= 0)
                continue;
            weighted = true;
            found |= loom_zoo_weights_find(wp, mp->t[name_ti].name) ||
                     loom_zoo_weights_find(wp, mp->t[ti].name);
            name = name ? name : mp->t[name_ti].name;
        }
        if (weighted && !found) {
            n++;
            if (!*example)
                *example = name;
        }
    }
    return n;
}

/* Why a graph's layer weights carry exporter-made names. */
static const char *why(const graph_facts_t *g)
{
    return g->batchnorms == 0 && g->unnamed_conv
               ? "it looks like an eval-mode export (torch.onnx.export's default), BatchNorm "
                 "folded into its convolutions"
               : "the export folded constants into them (do_constant_folding)";
}

/* "warnings" of the report: few layers mapped, and why, when the graphs
 * say so. */
static json_t *warnings(const graph_facts_t *c, const graph_facts_t *p, size_t mapped,
                        size_t folded, size_t missing, const char *missing_name, int64_t pid)
{
    json_t *w = json_array();
    char msg[768];
    if (2 * mapped < c->weighted) {
        int at = snprintf(msg, sizeof msg,
                          "only %zu of this model's %zu layers with weights were mapped from "
                          "parent %lld (the rest keep their fresh initialisation): ",
                          mapped, c->weighted, (long long)pid);
        if (at < 0 || (size_t)at >= sizeof msg)
            at = (int)sizeof msg - 1;
        if (missing)
            snprintf(msg + at, sizeof msg - (size_t)at,
                     "%zu matched layers found no weights in the parent's weights file under "
                     "the names its ONNX graph gives them (e.g. '%s'); save the weights with the "
                     "names the export uses (loom.warmstart.save of the exported module)",
                     missing, missing_name ? missing_name : "");
        else
            snprintf(msg + at, sizeof msg - (size_t)at,
                     "the two architectures share few layers with weights");
        json_array_append_new(w, json_string(msg));
    }
    if (p->unnamed) {
        snprintf(msg, sizeof msg,
                 "parent %lld has %zu layer weights named by the exporter (e.g. '%s'), not by "
                 "parameter: %s%s%s; store parents exported in training mode (docs/zoo.md, "
                 "Using it)",
                 (long long)pid, p->unnamed, p->example ? p->example : "", why(p),
                 folded ? "; they were mapped from the values in its ONNX file" : "",
                 folded && c->batchnorms ? ", and this model's BatchNorm parameters keep their "
                                           "defaults"
                                         : "");
        json_array_append_new(w, json_string(msg));
    }
    if (c->unnamed) {
        snprintf(msg, sizeof msg,
                 "this model has %zu layer weights named by the exporter (e.g. '%s'), not by "
                 "parameter: %s; loom.warmstart.apply finds tensors by parameter name and "
                 "cannot place them; export it in training mode (docs/zoo.md, Using it)",
                 c->unnamed, c->example ? c->example : "", why(c));
        json_array_append_new(w, json_string(msg));
    }
    return w;
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
        rc = loom_zoo_warm_model(z, mc, child_onnx, mopts, topts, out_path, -1, report, err);
    loom_est_model_free(mc);
    return rc;
}

int loom_zoo_warm_model(loom_zoo_t *z, loom_est_model_t *mc, const char *child_onnx,
                        const loom_zoo_match_opts_t *mopts, const loom_zoo_transform_opts_t *topts,
                        const char *out_path, int out_fd, json_t **report, loom_err_t *err)
{
    int64_t t0 = loom_time_mono_ns();
    loom_est_model_t *mp = NULL;
    loom_zoo_sig_t sc = {0}, sp = {0};
    loom_zoo_weights_t wp = {0}, wc = {0};
    loom_zoo_alignment_t al = {0};
    json_t *match = NULL, *row = NULL;
    loom_buf_t pbytes = LOOM_BUF_INIT;
    size_t folded = 0;
    if (report)
        *report = NULL;
    int rc = loom_zoo_sig_from_model(mc, &sc, err);
    if (!rc)
        rc = loom_zoo_match(z, &sc, mopts, &match, err);
    if (!rc && json_is_null(json_object_get(match, "parent"))) {
        json_int_t other = json_integer_value(json_object_get(match, "other_data"));
        if (other)
            rc =
                loom_err_set(err, LOOM_ENOTFOUND,
                             "%s: no stored model of this task and data ('%s') is similar "
                             "enough to start from; %lld trained on other data were left out "
                             "(predicted not to help): start cold",
                             child_onnx, mopts && mopts->data ? mopts->data : "", (long long)other);
        else
            rc = loom_err_set(err, LOOM_ENOTFOUND,
                              "%s: no stored model of this task is similar enough to start from",
                              child_onnx);
    }
    double match_s = secs(t0);
    int64_t t1 = loom_time_mono_ns();
    int64_t pid = rc ? 0 : json_integer_value(json_object_get(match, "parent"));
    if (!rc)
        rc = load_parent(z, pid, &row, &pbytes, &mp, &sp, &wp, err);
    if (!rc)
        rc = fill_folded(mp, &pbytes, &wp, &folded, err);
    loom_buf_free(&pbytes);
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
        graph_facts_t fc = facts_of(mc, &sc), fp = facts_of(mp, &sp);
        json_object_set_new(meta, "layers_weighted", json_integer((json_int_t)fc.weighted));
        json_object_set_new(meta, "tensors_folded", json_integer((json_int_t)folded));
        const char *missing_name = NULL;
        size_t missing = weights_missing(&al, &sp, mp, &wp, &missing_name);
        json_object_set_new(
            meta, "warnings",
            warnings(&fc, &fp, st.layers_mapped, folded, missing, missing_name, pid));
        json_object_set_new(meta, "match_s", json_real(match_s));
        json_object_set_new(meta, "transform_s", json_real(transform_s));
        json_decref(wc.meta);
        wc.meta = meta;
        rc = out_fd >= 0 ? loom_zoo_weights_write_fd(&wc, out_fd, out_path, err)
                         : loom_zoo_weights_save(&wc, out_path, err);
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
