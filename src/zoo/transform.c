/* Weight transformation: the parent's trained weights mapped onto the
 * child's architecture along an alignment.
 *
 * For each matched layer pair, each weight input position both have (the
 * Gemm's B and C, the Conv's W and B, the norm's scale, bias and running
 * statistics, the W behind a MatMul's Transpose(W)), the parent tensor is mapped dimension by
 * dimension onto the child's shape:
 *   - same size: copied;
 *   - a channel dimension the child has more of: Net2Net's widening, new unit
 *     j a copy of unit j mod p, and where the dimension is the layer's input
 *     side, each copy's weights divided by the number of copies of its
 *     source; since the rule depends only on (p, c), the producer's output
 *     and the consumer's input agree, and a widened chain computes the same
 *     function (small noise on the copies breaks their symmetry);
 *   - fewer: cropped to the first units;
 *   - spatial kernel dims: centred crop, or a centred pad of small noise;
 *   - embedding rows (a Gather's table): kept, new rows small noise.
 * An unmatched Gemm or Conv with a square weight whose output feeds a Relu
 * is set to the identity (Net2Net's deepening: relu(I relu(x)) = relu(x)).
 * An unmatched projection added to a residual stream (a transformer block's
 * output projection, its second feed-forward layer) is set to zero, so the
 * new block adds nothing. Other unmatched layers keep the child's fresh
 * initialisation (they are simply absent from the output). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/zoo.h"
#include "zoo/zoo_int.h"

/* Elements of one child tensor at most (1 GiB of float32); larger ones keep
 * their fresh initialisation. */
#define MAX_ELEMS ((size_t)1 << 28)

typedef struct roles {
    int in_dim;       /* the layer's input channels, -1 none */
    int rows_dim;     /* embedding rows, -1 none */
    int spatial_from; /* first spatial kernel dim, 8 none */
} roles_t;

/* The role of each dim of the tensor at input k of node ni (child graph). */
static roles_t tensor_roles(const loom_est_model_t *m, int ni, size_t k, int rank)
{
    const loom_est_node_t *n = &m->n[ni];
    roles_t r = {-1, -1, 8};
    if (!strcmp(n->op, "Gemm") && k == 1) {
        const loom_est_attr_t *a = loom_est_attr(n, "transB");
        r.in_dim = a && a->i ? 1 : 0;
    } else if (!strcmp(n->op, "MatMul") && k == 1 && rank >= 2) {
        r.in_dim = rank - 2;
    } else if ((!strcmp(n->op, "Conv") || !strcmp(n->op, "ConvTranspose")) && k == 1) {
        const loom_est_attr_t *g = loom_est_attr(n, "group");
        if (!g || g->i <= 1)
            r.in_dim = !strcmp(n->op, "Conv") ? 1 : 0;
        r.spatial_from = 2;
    } else if (!strcmp(n->op, "Gather") && k == 0) {
        r.rows_dim = 0;
    }
    return r;
}

static double tensor_sd(const loom_zoo_tensor_t *t)
{
    if (t->numel < 2)
        return fabs(t->numel ? t->data[0] : 0);
    double s = 0, s2 = 0;
    for (size_t i = 0; i < t->numel; i++) {
        s += t->data[i];
        s2 += (double)t->data[i] * t->data[i];
    }
    double mean = s / (double)t->numel, var = s2 / (double)t->numel - mean * mean;
    return var > 0 ? sqrt(var) : 0;
}

/* Source index and scale per child index of one dim; src -1: pad. */
static int dim_map(int64_t c, int64_t p, int k, const roles_t *r, int32_t *src, float *scale,
                   uint8_t *fresh)
{
    for (int64_t j = 0; j < c; j++) {
        scale[j] = 1;
        fresh[j] = 0;
        if (k == r->rows_dim) {
            src[j] = j < p ? (int32_t)j : -1;
        } else if (k >= r->spatial_from) {
            int64_t s = j + (p - c) / 2;
            src[j] = s >= 0 && s < p ? (int32_t)s : -1;
        } else if (c <= p) {
            src[j] = (int32_t)j;
        } else {
            src[j] = (int32_t)(j % p);
            fresh[j] = j >= p;
            if (k == r->in_dim)
                scale[j] = 1.0f / (float)((c - 1 - src[j]) / p + 1);
        }
    }
    return 0;
}

/* Maps parent tensor `from` onto a child tensor of rank/dims. */
static int map_tensor(const loom_zoo_tensor_t *from, int rank, const int64_t *dims,
                      const roles_t *r, double noise, loom_rng_t *rng, loom_zoo_tensor_t *to)
{
    size_t numel = 1, maxd = 1;
    for (int k = 0; k < rank; k++) {
        /* the child's dims come from its ONNX file: bounded before use */
        if (dims[k] <= 0 || from->dims[k] <= 0 || (size_t)dims[k] > MAX_ELEMS / numel)
            return LOOM_EINVAL;
        numel *= (size_t)dims[k];
        maxd = (size_t)dims[k] > maxd ? (size_t)dims[k] : maxd;
    }
    int32_t *src = malloc((size_t)rank * maxd * sizeof *src);
    float *scale = malloc((size_t)rank * maxd * sizeof *scale);
    uint8_t *fresh = malloc((size_t)rank * maxd);
    to->data = malloc(numel * sizeof *to->data);
    if (!src || !scale || !fresh || !to->data) {
        free(src), free(scale), free(fresh);
        return LOOM_ENOMEM;
    }
    for (int k = 0; k < rank; k++)
        dim_map(dims[k], from->dims[k], k, r, src + k * maxd, scale + k * maxd, fresh + k * maxd);
    double sd = noise * tensor_sd(from);
    int64_t idx[8] = {0};
    for (size_t e = 0; e < numel; e++) {
        size_t off = 0;
        float sc = 1;
        bool pad = false, isnew = false;
        for (int k = 0; k < rank; k++) {
            int32_t s = src[k * maxd + idx[k]];
            pad |= s < 0;
            off = off * (size_t)from->dims[k] + (size_t)(s < 0 ? 0 : s);
            sc *= scale[k * maxd + idx[k]];
            isnew |= fresh[k * maxd + idx[k]] != 0;
        }
        double v = pad ? 0 : from->data[off] * sc;
        if ((pad || isnew) && sd > 0)
            v += sd * loom_rng_normal(rng);
        to->data[e] = (float)v;
        for (int k = rank - 1; k >= 0 && ++idx[k] == dims[k]; k--)
            idx[k] = 0;
    }
    free(src), free(scale), free(fresh);
    to->rank = rank;
    memcpy(to->dims, dims, (size_t)rank * sizeof *dims);
    to->numel = numel;
    return LOOM_OK;
}

static bool have(const loom_zoo_weights_t *w, const char *name)
{
    return loom_zoo_weights_find(w, name) != NULL;
}

static int push(loom_zoo_weights_t *out, loom_zoo_tensor_t *t, const char *name)
{
    if (loom_vec_reserve((void **)&out->t, &out->cap, out->n + 1, sizeof *out->t, 16))
        return LOOM_ENOMEM;
    t->name = strdup(name);
    if (!t->name)
        return LOOM_ENOMEM;
    out->t[out->n++] = *t;
    return LOOM_OK;
}

/* Maps every weight input of one matched pair; returns tensors mapped. */
static int map_pair(loom_est_model_t *mc, int nc, loom_est_model_t *mp, int np,
                    const loom_zoo_weights_t *parent, double noise, loom_rng_t *rng,
                    loom_zoo_weights_t *out, loom_zoo_transform_stats_t *st, int *mapped)
{
    const loom_est_node_t *a = &mc->n[nc], *b = &mp->n[np];
    *mapped = 0;
    for (size_t k = 0; k < a->nin && k < b->nin; k++) {
        if (a->in[k] < 0 || b->in[k] < 0)
            continue;
        /* named as the graph uses it (the module's parameter name), shaped
         * as the initializer behind it */
        int nc_ti, np_ti;
        bool trc, trp;
        int wc = zoo_weight_of(mc, a->in[k], &nc_ti, &trc);
        int wp = zoo_weight_of(mp, b->in[k], &np_ti, &trp);
        if (wc < 0 || wp < 0 || trc != trp)
            continue;
        const loom_est_tensor_t *uc = &mc->t[nc_ti], *up = &mp->t[np_ti];
        const loom_est_tensor_t *tc = &mc->t[wc], *tp = &mp->t[wp];
        if (tc->rank != tp->rank || tc->rank <= 0 || have(out, uc->name))
            continue;
        const loom_zoo_tensor_t *from = loom_zoo_weights_find(parent, up->name);
        if (!from)
            from = loom_zoo_weights_find(parent, tp->name);
        if (!from || from->rank != tp->rank)
            continue;
        roles_t r = tensor_roles(mc, nc, k, tc->rank);
        if (trc) /* W, not the B = W^T the node reads: the dims swap */
            r.in_dim = r.in_dim == 0 ? 1 : r.in_dim == 1 ? 0 : -1;
        loom_zoo_tensor_t t = {0};
        int rc = map_tensor(from, tc->rank, tc->dims, &r, noise, rng, &t);
        if (rc == LOOM_EINVAL)
            continue;
        if (rc || (rc = push(out, &t, uc->name))) {
            free(t.data);
            return rc;
        }
        bool same = from->numel == t.numel;
        for (int d = 0; same && d < t.rank; d++)
            same = from->dims[d] == t.dims[d];
        if (same)
            st->tensors_copied++;
        else
            st->tensors_widened++;
        (*mapped)++;
    }
    return LOOM_OK;
}

/* The first node that reads node ni's first output, and at which input;
 * -1 when none. */
static int consumer(const loom_est_model_t *m, int ni, size_t *slot)
{
    const loom_est_node_t *n = &m->n[ni];
    if (!n->nout || n->out[0] < 0)
        return -1;
    for (size_t i = 0; i < m->nn; i++)
        for (size_t k = 0; k < m->n[i].nin; k++)
            if (m->n[i].in[k] == n->out[0]) {
                if (slot)
                    *slot = k;
                return (int)i;
            }
    return -1;
}

static bool feeds_relu(const loom_est_model_t *m, int ni)
{
    int c = consumer(m, ni, NULL);
    return c >= 0 && !strcmp(m->n[c].op, "Relu");
}

/* A zero tensor of t's shape named `name` (the graph's name for it). */
static int push_zero(loom_zoo_weights_t *out, const loom_est_tensor_t *t, const char *name,
                     loom_zoo_transform_stats_t *st)
{
    size_t numel = 1;
    for (int k = 0; k < t->rank; k++) {
        if (t->dims[k] <= 0 || (size_t)t->dims[k] > MAX_ELEMS / numel)
            return LOOM_OK;
        numel *= (size_t)t->dims[k];
    }
    loom_zoo_tensor_t z = {.rank = t->rank, .numel = numel};
    memcpy(z.dims, t->dims, sizeof z.dims);
    z.data = calloc(numel, sizeof *z.data);
    if (!z.data || push(out, &z, name)) {
        free(z.data);
        return LOOM_ENOMEM;
    }
    st->tensors_deepened++;
    return LOOM_OK;
}

/* Net2Net deepening of a residual block: an unmatched projection whose
 * output (after an optional bias Add) is added to the residual stream (an
 * Add of two computed tensors) is set to zero, weight and bias, so the new
 * block adds nothing: x + 0. Covers Gemm, MatMul with a weight, and
 * PyTorch's Transpose(W) feeding a MatMul. */
static int zero_residual(loom_est_model_t *mc, int nc, loom_zoo_weights_t *out,
                         loom_zoo_transform_stats_t *st)
{
    const loom_est_node_t *n = &mc->n[nc];
    int w = -1, name_ti = -1, proj = nc;
    bool tr;
    if ((strcmp(n->op, "Gemm") && strcmp(n->op, "MatMul")) || n->nin < 2 ||
        (w = zoo_weight_of(mc, n->in[1], &name_ti, &tr)) < 0)
        return LOOM_OK;
    int bias = -1, c = consumer(mc, proj, NULL);
    if (!strcmp(mc->n[proj].op, "Gemm") && mc->n[proj].nin > 2 && mc->n[proj].in[2] >= 0 &&
        mc->t[mc->n[proj].in[2]].is_init)
        bias = mc->n[proj].in[2];
    if (c >= 0 && !strcmp(mc->n[c].op, "Add") && mc->n[c].nin == 2) {
        for (size_t k = 0; k < 2 && bias < 0; k++)
            if (mc->n[c].in[k] >= 0 && mc->t[mc->n[c].in[k]].is_init) {
                bias = mc->n[c].in[k];
                c = consumer(mc, c, NULL);
            }
    }
    if (c < 0 || strcmp(mc->n[c].op, "Add") || mc->n[c].nin != 2 || mc->n[c].in[0] < 0 ||
        mc->n[c].in[1] < 0 || mc->t[mc->n[c].in[0]].is_init || mc->t[mc->n[c].in[1]].is_init)
        return LOOM_OK; /* not added to a residual stream */
    if (have(out, mc->t[name_ti].name))
        return LOOM_OK;
    int rc = push_zero(out, &mc->t[w], mc->t[name_ti].name, st);
    if (!rc && bias >= 0 && !have(out, mc->t[bias].name))
        rc = push_zero(out, &mc->t[bias], mc->t[bias].name, st);
    return rc;
}

/* Net2Net deepening of an unmatched layer: identity weight, zero bias. */
static int deepen(loom_est_model_t *mc, int nc, loom_zoo_weights_t *out,
                  loom_zoo_transform_stats_t *st)
{
    const loom_est_node_t *n = &mc->n[nc];
    bool gemm = !strcmp(n->op, "Gemm"), conv = !strcmp(n->op, "Conv");
    if ((!gemm && !conv) || n->nin < 2 || n->in[1] < 0 || !feeds_relu(mc, nc))
        return zero_residual(mc, nc, out, st);
    const loom_est_tensor_t *w = &mc->t[n->in[1]];
    const loom_est_attr_t *g = loom_est_attr(n, "group");
    if (!w->is_init || have(out, w->name) || w->dims[0] != w->dims[1] || w->dims[0] <= 0 ||
        (gemm && w->rank != 2) || (conv && (w->rank < 3 || (g && g->i > 1))))
        return LOOM_OK;
    size_t inner = 1;
    for (int k = 2; k < w->rank; k++) {
        if (w->dims[k] <= 0 || w->dims[k] % 2 == 0 || (size_t)w->dims[k] > MAX_ELEMS / inner)
            return LOOM_OK; /* an even kernel has no centre */
        inner *= (size_t)w->dims[k];
    }
    size_t c = (size_t)w->dims[0];
    if (inner > MAX_ELEMS || c > MAX_ELEMS / c || c * c > MAX_ELEMS / inner)
        return LOOM_OK;
    loom_zoo_tensor_t t = {.rank = w->rank, .numel = c * c * inner};
    memcpy(t.dims, w->dims, sizeof t.dims);
    t.data = calloc(t.numel, sizeof *t.data);
    if (!t.data || push(out, &t, w->name)) {
        free(t.data);
        return LOOM_ENOMEM;
    }
    for (size_t i = 0; i < c; i++)
        out->t[out->n - 1].data[(i * c + i) * inner + inner / 2] = 1;
    st->tensors_deepened++;
    if (n->nin > 2 && n->in[2] >= 0 && mc->t[n->in[2]].is_init && mc->t[n->in[2]].rank == 1 &&
        !have(out, mc->t[n->in[2]].name)) {
        loom_zoo_tensor_t b = {.rank = 1, .numel = c, .dims = {(int64_t)c}};
        b.data = calloc(c, sizeof *b.data);
        if (!b.data || push(out, &b, mc->t[n->in[2]].name)) {
            free(b.data);
            return LOOM_ENOMEM;
        }
        st->tensors_deepened++;
    }
    return LOOM_OK;
}

int loom_zoo_transform(loom_est_model_t *m_c, const loom_zoo_sig_t *s_c, loom_est_model_t *m_p,
                       const loom_zoo_sig_t *s_p, const loom_zoo_alignment_t *al,
                       const loom_zoo_weights_t *parent, const loom_zoo_transform_opts_t *opts,
                       loom_zoo_weights_t *out, loom_zoo_transform_stats_t *stats, loom_err_t *err)
{
    memset(out, 0, sizeof *out);
    memset(stats, 0, sizeof *stats);
    double noise = opts && opts->noise >= 0 ? opts->noise : 0.01;
    loom_rng_t rng;
    loom_rng_init(&rng, opts ? opts->seed : 0, 0x2009);
    out->meta = json_object();
    bool *matched = calloc(s_c->n ? s_c->n : 1, sizeof *matched);
    if (!out->meta || !matched) {
        free(matched);
        return loom_err_set(err, LOOM_ENOMEM, "transform: out of memory");
    }
    int rc = LOOM_OK;
    for (size_t i = 0; !rc && i < al->npairs; i++) {
        const loom_zoo_pair_t *pr = &al->pairs[i];
        if (pr->child < 0 || (size_t)pr->child >= s_c->n || pr->parent < 0 ||
            (size_t)pr->parent >= s_p->n) {
            rc = loom_err_set(err, LOOM_EINVAL, "transform: pair %zu out of range", i);
            break;
        }
        int nc = s_c->layers[pr->child].node, np = s_p->layers[pr->parent].node;
        if (nc < 0 || np < 0 || (size_t)nc >= m_c->nn || (size_t)np >= m_p->nn)
            continue;
        matched[pr->child] = true;
        int mapped = 0;
        rc = map_pair(m_c, nc, m_p, np, parent, noise, &rng, out, stats, &mapped);
        stats->layers_mapped += mapped > 0;
    }
    for (size_t i = 0; !rc && !(opts && opts->no_deepen) && i < s_c->n; i++)
        if (!matched[i] && s_c->layers[i].node >= 0)
            rc = deepen(m_c, s_c->layers[i].node, out, stats);
    for (size_t i = 0; i < m_c->nt; i++)
        stats->tensors_child += m_c->t[i].is_init && m_c->t[i].rank > 0;
    free(matched);
    if (rc) {
        loom_zoo_weights_free(out);
        if (rc == LOOM_ENOMEM)
            loom_err_set(err, LOOM_ENOMEM, "transform: out of memory");
    }
    return rc;
}
