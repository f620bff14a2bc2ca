/* Layer signatures: what the matcher knows of a model. An ONNX graph (read
 * by the estimator's reader) becomes its compute nodes in topological
 * order, each with its operator, how many inputs come from other layers
 * (branches and skip connections show as fan-in 2+), the shape of its
 * first weight and of its first output. Constant and shape arithmetic the
 * estimator folds is left out: it is an artefact of the export, not of the
 * architecture. The compact binary form is what the repository keeps, so
 * matching 10,000 stored models never reparses ONNX. */
#include <stdlib.h>
#include <string.h>

#include "loom/zoo.h"
#include "zoo/zoo_int.h"

/* Operators with a fixed id (index + 1); the order never changes, new ones
 * are appended. */
static const char *const known_ops[] = {"Conv",
                                        "ConvTranspose",
                                        "Gemm",
                                        "MatMul",
                                        "Add",
                                        "Sub",
                                        "Mul",
                                        "Div",
                                        "Relu",
                                        "LeakyRelu",
                                        "Sigmoid",
                                        "Tanh",
                                        "Gelu",
                                        "Erf",
                                        "Softmax",
                                        "LogSoftmax",
                                        "BatchNormalization",
                                        "LayerNormalization",
                                        "MaxPool",
                                        "AveragePool",
                                        "GlobalAveragePool",
                                        "GlobalMaxPool",
                                        "Flatten",
                                        "Reshape",
                                        "Transpose",
                                        "Concat",
                                        "Split",
                                        "Slice",
                                        "Gather",
                                        "Dropout",
                                        "Pow",
                                        "Sqrt",
                                        "ReduceMean",
                                        "ReduceSum",
                                        "Squeeze",
                                        "Unsqueeze",
                                        "Expand",
                                        "Where",
                                        "Cast",
                                        "Clip",
                                        "Pad",
                                        "Resize",
                                        "LSTM",
                                        "GRU",
                                        "Einsum",
                                        "Identity",
                                        "Neg",
                                        "Exp",
                                        "Log",
                                        "Max",
                                        "Min",
                                        "HardSigmoid",
                                        "HardSwish",
                                        "Equal",
                                        "Not",
                                        "Tile",
                                        "Shape",
                                        "ConstantOfShape",
                                        "Range",
                                        "InstanceNormalization",
                                        "GroupNormalization",
                                        "Sum",
                                        "Mean",
                                        "Abs"};

uint16_t loom_zoo_op_id(const char *op)
{
    for (size_t i = 0; i < sizeof known_ops / sizeof *known_ops; i++)
        if (!strcmp(known_ops[i], op))
            return (uint16_t)(i + 1);
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)op; *p; p++)
        h = (h ^ *p) * 16777619u;
    return (uint16_t)(256 + h % (65536 - 256));
}

static bool is_2d_transpose(const loom_est_model_t *m, const loom_est_node_t *n)
{
    if (strcmp(n->op, "Transpose") || n->nin < 1 || n->in[0] < 0 || m->t[n->in[0]].rank != 2)
        return false;
    const loom_est_attr_t *perm = loom_est_attr(n, "perm");
    return !perm || (perm->nints == 2 && perm->ints[0] == 1 && perm->ints[1] == 0);
}

int zoo_weight_of(const loom_est_model_t *m, int ti, int *name_ti, bool *transposed)
{
    *transposed = false;
    *name_ti = ti;
    if (ti < 0)
        return -1;
    int p = m->t[ti].producer;
    if (!m->t[ti].is_init && p >= 0 && is_2d_transpose(m, &m->n[p])) {
        *transposed = true;
        ti = *name_ti = m->n[p].in[0];
    }
    for (int hops = 0; ti >= 0 && hops < 4; hops++) {
        const loom_est_tensor_t *t = &m->t[ti];
        if (t->is_init)
            return ti;
        if (t->producer < 0 || strcmp(m->n[t->producer].op, "Identity") ||
            m->n[t->producer].nin < 1)
            return -1;
        ti = m->n[t->producer].in[0];
    }
    return -1;
}

/* Nodes that carry no architecture: constants, plumbing, and the
 * Transpose of a weight (part of the MatMul that uses it). */
static bool skipped(const loom_est_model_t *m, const loom_est_node_t *n)
{
    if (n->folded || !strcmp(n->op, "Constant") || !strcmp(n->op, "Identity") ||
        !strcmp(n->op, "Shape"))
        return true;
    int name_ti;
    bool tr;
    return is_2d_transpose(m, n) && zoo_weight_of(m, n->in[0], &name_ti, &tr) >= 0;
}

static int32_t clamp_dim(int64_t d)
{
    if (d < 0)
        return -1;
    return d > INT32_MAX ? INT32_MAX : (int32_t)d;
}

/* Keeps the first LOOM_ZOO_DIMS - 1 dims and folds the rest into the last
 * (a 5-D kernel keeps its size). */
static uint8_t put_dims(int rank, const int64_t *dims, int32_t out[LOOM_ZOO_DIMS])
{
    if (rank <= 0)
        return 0;
    int k = rank < LOOM_ZOO_DIMS ? rank : LOOM_ZOO_DIMS;
    for (int i = 0; i < k; i++)
        out[i] = clamp_dim(dims[i]);
    for (int i = k; i < rank; i++) {
        if (out[k - 1] < 0 || dims[i] < 0)
            out[k - 1] = -1;
        else
            out[k - 1] = clamp_dim((int64_t)out[k - 1] * dims[i]);
    }
    return (uint8_t)k;
}

static void fill_layer(const loom_est_model_t *m, int ni, const int *layer_of, loom_zoo_layer_t *l)
{
    const loom_est_node_t *n = &m->n[ni];
    memset(l, 0, sizeof *l);
    l->op = loom_zoo_op_id(n->op);
    l->node = ni;
    for (size_t k = 0; k < n->nin; k++) {
        if (n->in[k] < 0)
            continue;
        const loom_est_tensor_t *t = &m->t[n->in[k]];
        int name_ti;
        bool tr;
        int wi = zoo_weight_of(m, n->in[k], &name_ti, &tr);
        if (wi >= 0) {
            if (!l->wrank && m->t[wi].rank > 0)
                l->wrank = put_dims(m->t[wi].rank, m->t[wi].dims, l->wdims);
        } else if (t->producer >= 0 && layer_of[t->producer] >= 0 && l->nin < 255) {
            l->nin++;
        }
    }
    if (n->nout && n->out[0] >= 0) {
        const loom_est_tensor_t *t = &m->t[n->out[0]];
        l->orank = put_dims(t->rank, t->dims, l->odims);
    }
}

/* The layer whose output tensor ti carries, through nodes the signature
 * leaves out (Identity, a weight's Transpose, folded nodes: their first
 * input), or -1 (a graph input or a constant). */
static int producer_layer(const loom_est_model_t *m, const int *layer_of, int ti)
{
    for (int hops = 0; ti >= 0 && hops < 16; hops++) {
        int p = m->t[ti].producer;
        if (p < 0 || m->t[ti].is_init)
            return -1;
        if (layer_of[p] >= 0)
            return layer_of[p];
        if (m->n[p].nin < 1)
            return -1;
        ti = m->n[p].in[0];
    }
    return -1;
}

/* Layer li's distinct predecessor layers into pred (at most max). */
static size_t preds_of(const loom_est_model_t *m, const int *layer_of, int ni, int li,
                       uint16_t *pred, size_t max)
{
    const loom_est_node_t *n = &m->n[ni];
    size_t k = 0;
    for (size_t i = 0; i < n->nin && k < max; i++) {
        int name_ti;
        bool tr;
        if (n->in[i] < 0 || zoo_weight_of(m, n->in[i], &name_ti, &tr) >= 0)
            continue;
        int p = producer_layer(m, layer_of, n->in[i]);
        if (p < 0 || p >= li)
            continue;
        bool seen = false;
        for (size_t j = 0; j < k && !seen; j++)
            seen = pred[j] == (uint16_t)p;
        if (!seen)
            pred[k++] = (uint16_t)p;
    }
    return k;
}

int loom_zoo_sig_from_model(loom_est_model_t *m, loom_zoo_sig_t *out, loom_err_t *err)
{
    memset(out, 0, sizeof *out);
    loom_err_t ignored;
    /* Shapes make the score finer; a graph the estimator cannot infer is
     * still matched by operators and weight shapes. */
    (void)loom_est_infer_shapes(m, 1, &ignored);
    int *layer_of = malloc((m->nn ? m->nn : 1) * sizeof *layer_of);
    if (!layer_of)
        return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", m->source);
    size_t n = 0;
    for (size_t i = 0; i < m->nn; i++) {
        int ni = m->order[i];
        layer_of[ni] = skipped(m, &m->n[ni]) ? -1 : (int)n;
        n += layer_of[ni] >= 0;
    }
    if (n == 0 || n > LOOM_ZOO_MAX_LAYERS) {
        free(layer_of);
        return loom_err_set(err, LOOM_EINVAL, "%s: %zu layers; expected 1 to %d", m->source, n,
                            LOOM_ZOO_MAX_LAYERS);
    }
    size_t npred = 0;
    for (size_t i = 0; i < m->nn; i++)
        npred += layer_of[i] >= 0 ? m->n[i].nin : 0;
    out->layers = calloc(n, sizeof *out->layers);
    out->pstart = calloc(n + 1, sizeof *out->pstart);
    out->pred = calloc(npred ? npred : 1, sizeof *out->pred);
    if (!out->layers || !out->pstart || !out->pred) {
        free(layer_of);
        loom_zoo_sig_free(out);
        return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", m->source);
    }
    size_t k = 0;
    for (size_t i = 0; i < m->nn; i++) {
        int ni = m->order[i];
        if (layer_of[ni] < 0)
            continue;
        loom_zoo_layer_t *l = &out->layers[layer_of[ni]];
        fill_layer(m, ni, layer_of, l);
        out->hist[l->op % LOOM_ZOO_HIST]++;
        out->pstart[layer_of[ni]] = (uint32_t)k;
        k += preds_of(m, layer_of, ni, layer_of[ni], out->pred + k, npred - k);
    }
    out->pstart[n] = (uint32_t)k;
    out->n = n;
    free(layer_of);
    return LOOM_OK;
}

int loom_zoo_sig_parse(const void *data, size_t len, const char *name, loom_zoo_sig_t *out,
                       loom_err_t *err)
{
    loom_est_model_t *m;
    memset(out, 0, sizeof *out);
    int rc = loom_est_model_parse(data, len, name, &m, err);
    if (rc)
        return rc;
    rc = loom_zoo_sig_from_model(m, out, err);
    loom_est_model_free(m);
    return rc;
}

int loom_zoo_sig_load(const char *onnx_path, loom_zoo_sig_t *out, loom_err_t *err)
{
    loom_est_model_t *m;
    memset(out, 0, sizeof *out);
    int rc = loom_est_model_load(onnx_path, &m, err);
    if (rc)
        return rc;
    rc = loom_zoo_sig_from_model(m, out, err);
    loom_est_model_free(m);
    return rc;
}

void loom_zoo_sig_free(loom_zoo_sig_t *s)
{
    if (!s)
        return;
    free(s->layers);
    free(s->pstart);
    free(s->pred);
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------ binary form
 *
 *   "LZS2"  u32 count   then per layer: u16 op, u8 nin, u8 wrank, u8 orank,
 *   u8 npred, 2 bytes zero, i32 wdims[4], i32 odims[4]   (little-endian, 40
 *   bytes), then the predecessors: npred u16 layer indices per layer, in
 *   layer order, each below its layer's index.
 *   "LZS1"  the same without predecessors (npred 0, nothing after the
 *   records): repositories from before edges were kept; decoded without
 *   edges (pstart NULL: aligned as a chain) and encoded back as LZS1.
 */
#define SIG_MAGIC  "LZS2"
#define SIG_MAGIC1 "LZS1"
#define SIG_REC    40

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int loom_zoo_sig_encode(const loom_zoo_sig_t *s, loom_buf_t *out)
{
    uint8_t head[8];
    memcpy(head, s->pstart ? SIG_MAGIC : SIG_MAGIC1, 4);
    put_u32(head + 4, (uint32_t)s->n);
    if (loom_buf_append(out, head, sizeof head))
        return LOOM_ENOMEM;
    for (size_t i = 0; i < s->n; i++) {
        const loom_zoo_layer_t *l = &s->layers[i];
        uint8_t r[SIG_REC] = {0};
        r[0] = (uint8_t)l->op;
        r[1] = (uint8_t)(l->op >> 8);
        r[2] = l->nin;
        r[3] = l->wrank;
        r[4] = l->orank;
        size_t np = s->pstart ? s->pstart[i + 1] - s->pstart[i] : 0;
        r[5] = (uint8_t)(np > 255 ? 255 : np);
        for (int k = 0; k < LOOM_ZOO_DIMS; k++) {
            put_u32(r + 8 + 4 * k, (uint32_t)l->wdims[k]);
            put_u32(r + 24 + 4 * k, (uint32_t)l->odims[k]);
        }
        if (loom_buf_append(out, r, sizeof r))
            return LOOM_ENOMEM;
    }
    for (size_t i = 0; s->pstart && i < s->n; i++) {
        size_t np = s->pstart[i + 1] - s->pstart[i];
        for (size_t k = 0; k < np && k < 255; k++) {
            uint16_t v = s->pred[s->pstart[i] + k];
            uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
            if (loom_buf_append(out, b, 2))
                return LOOM_ENOMEM;
        }
    }
    return LOOM_OK;
}

int loom_zoo_sig_decode(const void *data, size_t len, const char *name, loom_zoo_sig_t *out,
                        loom_err_t *err)
{
    const uint8_t *p = data;
    memset(out, 0, sizeof *out);
    bool v1 = len >= 8 && !memcmp(p, SIG_MAGIC1, 4);
    if (len < 8 || (!v1 && memcmp(p, SIG_MAGIC, 4)))
        return loom_err_set(err, LOOM_EINVAL,
                            "%s: byte 0: expected a layer signature ('%s' or '%s')", name,
                            SIG_MAGIC, SIG_MAGIC1);
    uint32_t n = get_u32(p + 4);
    if (n == 0 || n > LOOM_ZOO_MAX_LAYERS)
        return loom_err_set(err, LOOM_EINVAL, "%s: byte 4: %u layers; expected 1 to %d", name, n,
                            LOOM_ZOO_MAX_LAYERS);
    size_t recs = 8 + (size_t)n * SIG_REC, npred = 0;
    if (len < recs)
        return loom_err_set(err, LOOM_EINVAL, "%s: %zu bytes; expected at least %zu for %u layers",
                            name, len, recs, n);
    for (uint32_t i = 0; i < n && !v1; i++)
        npred += p[8 + (size_t)i * SIG_REC + 5];
    if (len != recs + 2 * npred)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s: %zu bytes; expected %zu for %u layers and %zu predecessors", name,
                            len, recs + 2 * npred, n, npred);
    out->layers = calloc(n, sizeof *out->layers);
    if (!out->layers)
        return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", name);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *r = p + 8 + (size_t)i * SIG_REC;
        loom_zoo_layer_t *l = &out->layers[i];
        if (r[3] > LOOM_ZOO_DIMS || r[4] > LOOM_ZOO_DIMS) {
            loom_zoo_sig_free(out);
            return loom_err_set(err, LOOM_EINVAL, "%s: byte %zu: rank above %d", name,
                                8 + (size_t)i * SIG_REC + 3, LOOM_ZOO_DIMS);
        }
        l->op = (uint16_t)(r[0] | r[1] << 8);
        l->nin = r[2];
        l->wrank = r[3];
        l->orank = r[4];
        l->node = -1;
        for (int k = 0; k < LOOM_ZOO_DIMS; k++) {
            l->wdims[k] = (int32_t)get_u32(r + 8 + 4 * k);
            l->odims[k] = (int32_t)get_u32(r + 24 + 4 * k);
        }
        out->hist[l->op % LOOM_ZOO_HIST]++;
    }
    out->n = n;
    if (v1)
        return LOOM_OK; /* no edges: a chain */
    out->pstart = calloc(n + 1, sizeof *out->pstart);
    out->pred = calloc(npred ? npred : 1, sizeof *out->pred);
    if (!out->pstart || !out->pred) {
        loom_zoo_sig_free(out);
        return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", name);
    }
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        out->pstart[i] = (uint32_t)k;
        for (unsigned j = 0; j < p[8 + (size_t)i * SIG_REC + 5]; j++, k++) {
            const uint8_t *b = p + recs + 2 * k;
            uint16_t v = (uint16_t)(b[0] | b[1] << 8);
            if (v >= i) {
                loom_zoo_sig_free(out);
                return loom_err_set(err, LOOM_EINVAL,
                                    "%s: byte %zu: predecessor %u of layer %u; expected one "
                                    "below %u",
                                    name, recs + 2 * k, v, i, i);
            }
            out->pred[k] = v;
        }
    }
    out->pstart[n] = (uint32_t)k;
    return LOOM_OK;
}
