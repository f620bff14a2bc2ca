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
    out->layers = calloc(n, sizeof *out->layers);
    if (!out->layers) {
        free(layer_of);
        return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", m->source);
    }
    for (size_t i = 0; i < m->nn; i++) {
        int ni = m->order[i];
        if (layer_of[ni] < 0)
            continue;
        loom_zoo_layer_t *l = &out->layers[layer_of[ni]];
        fill_layer(m, ni, layer_of, l);
        out->hist[l->op % LOOM_ZOO_HIST]++;
    }
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
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------ binary form
 *
 *   "LZS1"  u32 count   then per layer: u16 op, u8 nin, u8 wrank, u8 orank,
 *   3 bytes zero, i32 wdims[4], i32 odims[4]      (little-endian, 40 bytes)
 */
#define SIG_MAGIC "LZS1"
#define SIG_REC   40

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
    memcpy(head, SIG_MAGIC, 4);
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
        for (int k = 0; k < LOOM_ZOO_DIMS; k++) {
            put_u32(r + 8 + 4 * k, (uint32_t)l->wdims[k]);
            put_u32(r + 24 + 4 * k, (uint32_t)l->odims[k]);
        }
        if (loom_buf_append(out, r, sizeof r))
            return LOOM_ENOMEM;
    }
    return LOOM_OK;
}

int loom_zoo_sig_decode(const void *data, size_t len, const char *name, loom_zoo_sig_t *out,
                        loom_err_t *err)
{
    const uint8_t *p = data;
    memset(out, 0, sizeof *out);
    if (len < 8 || memcmp(p, SIG_MAGIC, 4))
        return loom_err_set(err, LOOM_EINVAL, "%s: byte 0: expected a layer signature ('%s')", name,
                            SIG_MAGIC);
    uint32_t n = get_u32(p + 4);
    if (n == 0 || n > LOOM_ZOO_MAX_LAYERS)
        return loom_err_set(err, LOOM_EINVAL, "%s: byte 4: %u layers; expected 1 to %d", name, n,
                            LOOM_ZOO_MAX_LAYERS);
    if (len != 8 + (size_t)n * SIG_REC)
        return loom_err_set(err, LOOM_EINVAL, "%s: %zu bytes; expected %zu for %u layers", name,
                            len, 8 + (size_t)n * SIG_REC, n);
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
    return LOOM_OK;
}
