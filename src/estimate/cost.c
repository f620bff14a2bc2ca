/* Costing: FLOPs, a memory timeline through the allocator model, and a
 * roofline step time, for one inference pass or one training step.
 *
 * The graph is the exported ONNX graph, but the costs are PyTorch's: three
 * decompositions the exporter produces are fused back into the one kernel
 * PyTorch runs (LayerNorm from ReduceMean/Sub/Pow/.../Add; erf-GELU from
 * Div/Erf/Add/Mul/Mul; Linear from MatMul + bias Add), view operators
 * (Reshape, Transpose, Squeeze, ...) allocate nothing unless PyTorch must
 * copy (a Reshape/Flatten of a transposed tensor), and every operator
 * keeps for its backward pass exactly what its PyTorch autograd formula
 * saves (docs/estimate.md lists them). The timeline:
 *
 *   persistent  weights, buffers, optimizer state (steady state: step >= 2)
 *   forward     outputs allocated in topological order; a tensor is freed
 *               after its last use unless the backward pass saved it
 *   loss        log-softmax of the logits (kept) for cross-entropy
 *   backward    reverse order: gradients of inputs allocated, gradients of
 *               outputs and the node's saved tensors released
 *   optimizer   parameter gradients live; Adam's two temporaries per tensor
 *
 * Every allocation goes through loom_est_alloc_* so the caching allocator's
 * rounding and segments are in the peak.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/est.h"

enum { CAT_WEIGHT, CAT_GRAD, CAT_OPT, CAT_ACT, CAT_TEMP, CAT_N };
/* The heap event log (malloc devices): what the step allocates and frees,
 * in order, replayed through the glibc model (heap.c) for fresh pages. */
enum { EV_ALLOC, EV_FREE, EV_OPT };
enum { PH_PERSIST, PH_INPUT, PH_FWD, PH_LOSS, PH_BWD, PH_END };
typedef struct hev {
    uint8_t kind, phase;
    int node;
    uint64_t id, bytes;
} hev_t;
enum { G_NONE, G_LAYERNORM, G_GELU, G_LINEAR, G_SILU, G_RNN_WEIGHT };

typedef struct cost {
    loom_est_model_t *m;
    const loom_est_options_t *opt;
    loom_err_t *err;
    /* per node */
    int *leader; /* group leader node, or self */
    int *gkind;  /* G_* of a leader */
    int *gin;    /* the group's data input tensor (leader only), -1 */
    int *pos;    /* position in the compute order, -1 if folded */
    /* per tensor */
    int *root; /* storage root */
    bool *param, *buffer, *req, *half, *contig;
    int *last_use; /* position of last forward use of a root */
    int *nsaved;   /* remaining backward users of a root */
    uint64_t *handle, *ghandle;
    /* compute order */
    int *order;
    size_t norder;
    /* allocator and categories */
    loom_est_alloc_t *alloc;
    int *hcat;
    uint64_t *hbytes;
    size_t hcap, hbcap; /* of hcat, hbytes */
    uint64_t live[CAT_N], live_total, peak_total;
    uint64_t at_peak[CAT_N];
    bool oom;
    /* heap event log */
    bool log;      /* keep one (malloc devices with a page fault cost) */
    bool log_skip; /* the next allocations are the memory model's only */
    bool scratch;  /* CPU device: oneDNN's and BatchNorm's scratch is in the peak */
    bool cpu;      /* a CPU device (malloc allocator): PyTorch's CPU kernels */
    int cur_node, cur_phase;
    hev_t *ev;
    size_t nev, capev;
    uint64_t *logid; /* allocator handle -> log id */
    size_t caplog;
    uint64_t nlog;
} cost_t;

/* ------------------------------------------------------------ helpers */

static bool is_float(int d)
{
    return d == LOOM_EST_T_FLOAT || d == LOOM_EST_T_DOUBLE || d == LOOM_EST_T_FLOAT16 ||
           d == LOOM_EST_T_BFLOAT16;
}

/* The host heap an RNN layer's autograd graph takes per time step and
 * direction in training (its ~30 nodes, saved-variable records and tensor
 * headers), beyond the tensors' data: 13.2-13.9 KB for nn.LSTM, 13.7-14.5 KB
 * for nn.GRU over hidden sizes 1-160, the slope of live heap bytes after a
 * forward from 50 to 100 steps (bench/estimate_rnn_heap.py, table
 * docs/bench/estimate_rnn_heap.md; torch 1.13). Host memory: CPU devices
 * only. */
#define RNN_STEP_GRAPH_BYTES 13800

static int64_t attr_int(const loom_est_node_t *n, const char *name, int64_t def);

static bool op_is(const loom_est_node_t *n, const char *op)
{
    return strcmp(n->op, op) == 0;
}

static bool is_rnn(const loom_est_node_t *n)
{
    return op_is(n, "LSTM") || op_is(n, "GRU");
}

static bool matmul_class(const loom_est_node_t *n)
{
    return op_is(n, "Conv") || op_is(n, "ConvTranspose") || op_is(n, "Gemm") ||
           op_is(n, "MatMul") || op_is(n, "Einsum") || is_rnn(n);
}

static int64_t numel(const loom_est_tensor_t *t)
{
    int64_t n = loom_est_numel(t);
    return n < 0 ? 0 : n;
}

/* Dropout's mask on a CPU device: PyTorch 1.13 fuses dropout (a bool mask,
 * native_dropout) only on CUDA; on the CPU at::dropout draws the noise as a
 * tensor of the input's type (empty_like(x).bernoulli_().div_()) and keeps
 * it for x * noise's backward: 4 bytes an element in fp32, not 1. */
static bool cpu_dropout_mask(const cost_t *c, int t)
{
    int p = c->m->t[t].producer;
    const loom_est_node_t *n = p >= 0 ? &c->m->n[p] : NULL;
    return c->cpu && n && op_is(n, "Dropout") && n->nout > 1 && n->out[1] == t && n->nin > 0 &&
           n->in[0] >= 0 && is_float(c->m->t[n->in[0]].dtype);
}

static uint64_t esize(const cost_t *c, int t)
{
    const loom_est_tensor_t *x = &c->m->t[t];
    if (cpu_dropout_mask(c, t))
        return esize(c, c->m->n[x->producer].in[0]);
    if (!is_float(x->dtype))
        return est_dtype_size(x->dtype);
    switch (c->opt->precision) {
    case LOOM_EST_FP16:
    case LOOM_EST_BF16: return 2;
    case LOOM_EST_MIXED: return c->half[t] ? 2 : 4;
    default: return 4;
    }
}

static uint64_t tbytes(const cost_t *c, int t)
{
    return (uint64_t)numel(&c->m->t[t]) * esize(c, t);
}

static loom_est_tensor_t *tin(const cost_t *c, const loom_est_node_t *n, size_t i)
{
    return i < n->nin && n->in[i] >= 0 ? &c->m->t[n->in[i]] : NULL;
}

/* ------------------------------------------------------------ allocator */

static void log_event(cost_t *c, int kind, uint64_t id, uint64_t bytes)
{
    if (loom_vec_reserve((void **)&c->ev, &c->capev, c->nev + 1, sizeof *c->ev, 1024)) {
        c->oom = true;
        return;
    }
    c->ev[c->nev++] = (hev_t){(uint8_t)kind, (uint8_t)c->cur_phase, c->cur_node, id, bytes};
}

/* A transient buffer PyTorch allocates inside an operator (log only; the
 * memory model does not see it: it dies within the operator). */
static uint64_t hid_alloc(cost_t *c, uint64_t bytes)
{
    if (!c->log || bytes == 0)
        return 0;
    uint64_t id = ++c->nlog;
    log_event(c, EV_ALLOC, id, bytes);
    return id;
}

static void hid_free(cost_t *c, uint64_t *id)
{
    if (c->log && *id)
        log_event(c, EV_FREE, *id, 0);
    *id = 0;
}

static uint64_t mem_alloc(cost_t *c, uint64_t bytes, int cat);
static void mem_free(cost_t *c, uint64_t *h);

/* Scratch an operator allocates and frees within itself (oneDNN's reordered
 * operands, BatchNorm's backward buffer): on a CPU device a real allocation
 * of the memory model (PyTorch's CPU allocator holds it while the operator
 * runs, so it can make the peak: ResNet-18's peak is inside a convolution's
 * backward), else the heap log's only. */
static uint64_t scr_alloc(cost_t *c, uint64_t bytes)
{
    return c->scratch ? mem_alloc(c, bytes, CAT_TEMP) : hid_alloc(c, bytes);
}

static void scr_free(cost_t *c, uint64_t *id)
{
    if (c->scratch)
        mem_free(c, id);
    else
        hid_free(c, id);
}

static void log_alloc(cost_t *c, uint64_t h, uint64_t bytes)
{
    size_t had = c->caplog;
    if (h >= SIZE_MAX ||
        loom_vec_reserve((void **)&c->logid, &c->caplog, (size_t)h + 1, sizeof *c->logid, 1024)) {
        c->oom = true;
        return;
    }
    if (c->caplog > had)
        memset(c->logid + had, 0, (c->caplog - had) * sizeof *c->logid);
    c->logid[h] = ++c->nlog;
    log_event(c, EV_ALLOC, c->logid[h], bytes);
}

static uint64_t mem_alloc(cost_t *c, uint64_t bytes, int cat)
{
    if (bytes == 0)
        return 0;
    uint64_t h = loom_est_alloc_malloc(c->alloc, bytes);
    if (!h) {
        c->oom = true;
        return 0;
    }
    if (c->log && !c->log_skip)
        log_alloc(c, h, bytes);
    if (h >= SIZE_MAX ||
        loom_vec_reserve((void **)&c->hcat, &c->hcap, (size_t)h + 1, sizeof *c->hcat, 1024) ||
        loom_vec_reserve((void **)&c->hbytes, &c->hbcap, (size_t)h + 1, sizeof *c->hbytes, 1024)) {
        c->oom = true;
        return 0;
    }
    c->hcat[h] = cat;
    c->hbytes[h] = bytes;
    c->live[cat] += bytes;
    c->live_total += bytes;
    if (c->live_total > c->peak_total) {
        c->peak_total = c->live_total;
        memcpy(c->at_peak, c->live, sizeof c->live);
    }
    return h;
}

static void mem_free(cost_t *c, uint64_t *h)
{
    if (!*h)
        return;
    if (c->log && *h < c->caplog && c->logid[*h]) {
        log_event(c, EV_FREE, c->logid[*h], 0);
        c->logid[*h] = 0;
    }
    loom_est_alloc_release(c->alloc, *h);
    c->live[c->hcat[*h]] -= c->hbytes[*h];
    c->live_total -= c->hbytes[*h];
    *h = 0;
}

/* ------------------------------------------------------------ analysis */

/* Consumers of tensor t among compute nodes (fills up to max). */
static int consumers(const cost_t *c, int t, int *out, int max)
{
    int k = 0;
    for (size_t i = 0; i < c->norder; i++) {
        const loom_est_node_t *n = &c->m->n[c->order[i]];
        for (size_t j = 0; j < n->nin; j++)
            if (n->in[j] == t) {
                if (k < max)
                    out[k] = c->order[i];
                k++;
                break;
            }
    }
    return k;
}

static int only_consumer(const cost_t *c, int t, const char *op)
{
    int who[2];
    if (t < 0 || consumers(c, t, who, 2) != 1 || c->m->t[t].is_output)
        return -1;
    return op_is(&c->m->n[who[0]], op) ? who[0] : -1;
}

static int other_input(const loom_est_node_t *n, int t)
{
    return n->nin == 2 ? (n->in[0] == t ? n->in[1] : n->in[0]) : -1;
}

static void group(cost_t *c, const int *nodes, int k, int kind, int input)
{
    int lead = nodes[k - 1];
    for (int i = 0; i < k; i++)
        c->leader[nodes[i]] = lead;
    c->gkind[lead] = kind;
    c->gin[lead] = input;
}

/* Pattern fusion: LayerNorm, erf-GELU, SiLU (torch.nn.SiLU exports as
 * Sigmoid and Mul), Linear (MatMul + bias Add). */
static void fuse(cost_t *c)
{
    loom_est_model_t *m = c->m;
    for (size_t i = 0; i < c->norder; i++) {
        int ni = c->order[i];
        loom_est_node_t *n = &m->n[ni];
        if (c->leader[ni] != ni)
            continue;
        if (op_is(n, "ReduceMean")) { /* LN: mean -> sub -> pow -> mean -> add -> sqrt -> div */
            int x = n->in[0], g[9], k = 0, who[4];
            g[k++] = ni;
            int nc = consumers(c, n->out[0], who, 4);
            if (nc != 1 || !op_is(&m->n[who[0]], "Sub") || m->n[who[0]].in[0] != x)
                continue;
            int sub = who[0];
            g[k++] = sub;
            nc = consumers(c, m->n[sub].out[0], who, 4);
            if (nc != 2)
                continue;
            int pw = op_is(&m->n[who[0]], "Pow") ? who[0] : who[1];
            int dv = pw == who[0] ? who[1] : who[0];
            if (!op_is(&m->n[pw], "Pow") || !op_is(&m->n[dv], "Div"))
                continue;
            int r2 = only_consumer(c, m->n[pw].out[0], "ReduceMean");
            int ad = r2 >= 0 ? only_consumer(c, m->n[r2].out[0], "Add") : -1;
            int sq = ad >= 0 ? only_consumer(c, m->n[ad].out[0], "Sqrt") : -1;
            if (sq < 0 || only_consumer(c, m->n[sq].out[0], "Div") != dv)
                continue;
            g[k++] = pw;
            g[k++] = r2;
            g[k++] = ad;
            g[k++] = sq;
            g[k++] = dv;
            int mu = only_consumer(c, m->n[dv].out[0], "Mul");
            if (mu >= 0 && c->param[other_input(&m->n[mu], m->n[dv].out[0])]) {
                g[k++] = mu;
                int ab = only_consumer(c, m->n[mu].out[0], "Add");
                if (ab >= 0 && c->param[other_input(&m->n[ab], m->n[mu].out[0])])
                    g[k++] = ab;
            }
            group(c, g, k, G_LAYERNORM, x);
        } else if (op_is(n, "Erf")) { /* GELU: div -> erf -> add -> mul(x) -> mul */
            int dv = m->t[n->in[0]].producer;
            if (dv < 0 || !op_is(&m->n[dv], "Div") || c->leader[dv] != dv)
                continue;
            int x = m->n[dv].in[0];
            int ad = only_consumer(c, n->out[0], "Add");
            int m1 = ad >= 0 ? only_consumer(c, m->n[ad].out[0], "Mul") : -1;
            if (m1 < 0 || other_input(&m->n[m1], m->n[ad].out[0]) != x)
                continue;
            int m2 = only_consumer(c, m->n[m1].out[0], "Mul");
            int g[5] = {dv, ni, ad, m1, m2};
            group(c, g, m2 >= 0 ? 5 : 4, G_GELU, x);
        } else if (op_is(n, "Sigmoid")) { /* SiLU: x * sigmoid(x) -> one op saving x */
            int x = n->in[0];
            int mu = only_consumer(c, n->out[0], "Mul");
            if (mu < 0 || c->leader[mu] != mu || other_input(&m->n[mu], n->out[0]) != x)
                continue;
            int g[2] = {ni, mu};
            group(c, g, 2, G_SILU, x);
        } else if (op_is(n, "MatMul")) {
            int ad = only_consumer(c, n->out[0], "Add");
            if (ad < 0)
                continue;
            int b = other_input(&m->n[ad], n->out[0]);
            if (b < 0 || !c->param[b] || m->t[b].rank != 1)
                continue;
            int g[2] = {ni, ad};
            group(c, g, 2, G_LINEAR, n->in[0]);
        }
    }
}

/* A tensor fixed by the graph: a non-parameter initializer, a folded value
 * or a Constant's output (Slice bounds, Concat axes, Unsqueeze axes). */
static bool graph_constant(const cost_t *c, int t)
{
    const loom_est_tensor_t *x = &c->m->t[t];
    int p = x->producer;
    return (x->is_init && !c->param[t]) || x->has_val ||
           (p >= 0 && (op_is(&c->m->n[p], "Constant") || c->m->n[p].folded));
}

/* Does every consumer of NI's outputs take them as an RNN's W, R or B (or
 * is it such a layout node itself)? */
static bool feeds_rnn_weights(const cost_t *c, int ni)
{
    const loom_est_node_t *n = &c->m->n[ni];
    for (size_t k = 0; k < n->nout; k++) {
        int t = n->out[k];
        if (t < 0)
            continue;
        if (c->m->t[t].is_output)
            return false;
        for (size_t q = 0; q < c->norder; q++) {
            int j = c->order[q];
            const loom_est_node_t *u = &c->m->n[j];
            for (size_t a = 0; a < u->nin; a++)
                if (u->in[a] == t &&
                    !(c->gkind[j] == G_RNN_WEIGHT || (is_rnn(u) && a >= 1 && a <= 3)))
                    return false;
        }
    }
    return true;
}

/* The weight layout an ONNX export puts before each LSTM and GRU: Slices,
 * Concats and Unsqueezes of the layer's parameters into ONNX's gate order
 * and [directions, ...] shape (its W, R and B). PyTorch runs the layer on
 * the parameters themselves (cuDNN on one flat buffer of them), so these
 * nodes are views here: no time, nothing allocated; gradients still reach
 * the parameters through them. */
static void rnn_weight_layout(cost_t *c)
{
    loom_est_model_t *m = c->m;
    bool any_rnn = false;
    for (size_t i = 0; i < c->norder; i++)
        any_rnn |= is_rnn(&m->n[c->order[i]]);
    bool *from_param = any_rnn ? calloc(m->nt, sizeof *from_param) : NULL;
    if (!from_param)
        return; /* no RNN (or no memory: the layout is then costed as copies) */
    int *cand = calloc(c->norder, sizeof *cand);
    size_t ncand = 0;
    for (size_t i = 0; cand && i < c->norder; i++) {
        const loom_est_node_t *n = &m->n[c->order[i]];
        bool any = false, ok = !is_rnn(n) && !op_is(n, "Constant") && n->nout > 0;
        for (size_t k = 0; ok && k < n->nin; k++) {
            int t = n->in[k];
            if (t >= 0 && (c->param[t] || from_param[t]))
                any = true;
            else if (t >= 0 && !graph_constant(c, t))
                ok = false;
        }
        if (!ok || !any)
            continue;
        for (size_t k = 0; k < n->nout; k++)
            if (n->out[k] >= 0)
                from_param[n->out[k]] = true;
        cand[ncand++] = c->order[i];
    }
    while (cand && ncand-- > 0) /* consumers first */
        if (feeds_rnn_weights(c, cand[ncand]))
            c->gkind[cand[ncand]] = G_RNN_WEIGHT;
    free(cand);
    free(from_param);
}

/* An RNN's W, R or B laid out from parameters (rnn_weight_layout): its
 * gradient is the parameters' own, as PyTorch's layer writes them. */
static bool laid_weight(const cost_t *c, int t)
{
    int p = c->m->t[t].producer;
    return p >= 0 && c->gkind[p] == G_RNN_WEIGHT;
}

static bool differentiable(const loom_est_node_t *n)
{
    static const char *no[] = {"Shape", "Equal",           "Mod",   "Less",    "Greater",
                               "Not",   "ConstantOfShape", "Range", "Constant"};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (op_is(n, no[i]))
            return false;
    if (op_is(n, "Cast") && n->nout && n->out[0] >= 0)
        return true;
    return true;
}

/* A Dropout that changes nothing: ratio 0, where PyTorch's dropout returns
 * its input, in training too, allocating and saving nothing (torchvision's
 * ViT and Swin export their p=0 dropouts). Opset 12 on: the ratio is input 1
 * (default 0.5); before that the "ratio" attribute. */
static bool dropout_identity(const cost_t *c, const loom_est_node_t *n)
{
    if (!op_is(n, "Dropout"))
        return false;
    if (n->nin > 1 && n->in[1] >= 0) {
        const loom_est_tensor_t *r = &c->m->t[n->in[1]];
        return r->has_val && r->nval == 1 && r->fval && r->fval[0] == 0;
    }
    const loom_est_attr_t *a = loom_est_attr(n, "ratio");
    return a && a->has_f && a->f == 0;
}

/* Does this view-op output alias its input in PyTorch? */
static bool is_alias(cost_t *c, const loom_est_node_t *n)
{
    if (c->gkind[n - c->m->n] == G_RNN_WEIGHT)
        return true;
    if (op_is(n, "Gather")) { /* x[:, 0] on an activation is a select view */
        const loom_est_tensor_t *d = tin(c, n, 0), *i = tin(c, n, 1);
        return !c->param[n->in[0]] && !d->is_init && i->rank == 0;
    }
    if (op_is(n, "Dropout"))
        return !c->opt->train || dropout_identity(c, n);
    if (!est_op_is_view(n->op))
        return false;
    if ((op_is(n, "Reshape") || op_is(n, "Flatten")) && !c->contig[n->in[0]])
        return false; /* reshape of a non-contiguous tensor copies */
    return true;
}

static bool makes_noncontig(cost_t *c, const loom_est_node_t *n)
{
    const loom_est_tensor_t *x = tin(c, n, 0);
    if (op_is(n, "Transpose")) {
        const loom_est_attr_t *p = loom_est_attr(n, "perm");
        int last = -1;
        for (int i = 0; p && i < (int)p->nints; i++) { /* moving size-1 dims keeps it contiguous */
            int64_t d = p->ints[i];
            if (d < 0 || d >= x->rank || x->dims[d] == 1)
                continue;
            if (d < last)
                return true;
            last = (int)d;
        }
        return !p;
    }
    if (op_is(n, "Expand"))
        return true;
    if (op_is(n, "Slice") || op_is(n, "Split") || op_is(n, "Gather")) {
        const loom_est_tensor_t *o = &c->m->t[n->out[0]];
        int lead = 0; /* slicing after leading size-1 dims only: still contiguous */
        while (lead < x->rank && o->dims[lead] == 1 && x->dims[lead] == 1)
            lead++;
        for (int i = lead + 1; i < x->rank && i < o->rank; i++)
            if (o->dims[i] != x->dims[i])
                return true;
        return op_is(n, "Gather") || !c->contig[n->in[0]];
    }
    return !c->contig[n->in[0]];
}

/* The MatMul member of the Linear group led by NI, -1 if none. */
static int linear_matmul(const cost_t *c, int ni)
{
    const loom_est_node_t *n = &c->m->n[ni];
    for (size_t j = 0; j < n->nin; j++) {
        int mm = n->in[j] >= 0 ? c->m->t[n->in[j]].producer : -1;
        if (mm >= 0 && c->leader[mm] == ni && op_is(&c->m->n[mm], "MatMul"))
            return mm;
    }
    return -1;
}

/* torch.nn.functional.linear over a non-contiguous input of rank 3 or more
 * (nn.MultiheadAttention's batch_first transpose, a permuted sequence) is
 * matmul's folding: input.reshape(-1, in_features), a contiguous copy that
 * mm keeps for the weight's gradient in place of the view (seen with an
 * allocation tracer on PyTorch 1.13; a 2-D input goes to addmm uncopied). */
static bool linear_copies_input(const cost_t *c, int ni)
{
    int mm = c->gkind[ni] == G_LINEAR ? linear_matmul(c, ni) : -1;
    if (mm < 0)
        return false;
    int x = c->m->n[mm].in[0];
    return x >= 0 && !c->contig[x] && c->m->t[x].rank >= 3;
}

/* What the node's backward keeps (tensor ids, roots resolved later). */
static int saved_of(cost_t *c, int ni, int *s)
{
    loom_est_node_t *n = &c->m->n[ni];
    int k = 0, x = n->in[0];
    switch (c->gkind[ni]) {
    case G_LAYERNORM:
    case G_GELU:
    case G_SILU: s[k++] = c->gin[ni]; return k;
    case G_LINEAR: { /* the MatMul member keeps its input (x, or x's copy: extra_bytes;
                        the weight is a parameter) */
        int mm = linear_matmul(c, ni);
        if (mm >= 0) {
            if (!linear_copies_input(c, ni))
                s[k++] = c->m->n[mm].in[0];
            s[k++] = c->m->n[mm].in[1];
        }
        return k;
    }
    default: break;
    }
    if (op_is(n, "Conv") || op_is(n, "ConvTranspose") || op_is(n, "BatchNormalization") ||
        op_is(n, "Clip") || op_is(n, "Erf") || op_is(n, "LeakyRelu") || op_is(n, "HardSwish") ||
        op_is(n, "Gelu") || op_is(n, "LayerNormalization") || op_is(n, "Pow") ||
        op_is(n, "MaxPool") || is_rnn(n))
        s[k++] = x;
    else if (op_is(n, "Gemm") || op_is(n, "MatMul") || op_is(n, "Einsum")) {
        /* each operand is kept for the other's gradient; a non-contiguous
         * batched operand is copied first and the copy is kept (extra_bytes) */
        for (int j = 0; j < 2; j++) {
            int t = n->in[j], other = n->in[1 - j];
            bool copied = op_is(n, "MatMul") && !c->contig[t] && c->m->t[t].rank >= 3;
            if (c->req[other] && !copied)
                s[k++] = t;
        }
    } else if (op_is(n, "Mul") || op_is(n, "Div")) {
        /* a*b keeps b for a's gradient and a for b's; a/b keeps b, and a
         * only for b's gradient; constants are scalars, not tensors */
        int a = n->in[0], b = n->in[1];
        bool bconst = c->m->t[b].has_val, aconst = c->m->t[a].has_val;
        if (op_is(n, "Mul")) {
            if (c->req[b] && !aconst)
                s[k++] = a;
            if (c->req[a] && !bconst)
                s[k++] = b;
        } else {
            if (c->req[b] && !aconst)
                s[k++] = a;
            if ((c->req[a] || c->req[b]) && !bconst)
                s[k++] = b;
        }
    } else if (op_is(n, "Relu") || op_is(n, "Sigmoid") || op_is(n, "Tanh") || op_is(n, "Sqrt") ||
               op_is(n, "Softmax") || op_is(n, "LogSoftmax") || op_is(n, "Exp")) {
        s[k++] = n->out[0];
    } else if (op_is(n, "Where")) {
        s[k++] = x;
    } else if (op_is(n, "Gather") && c->param[x]) {
        s[k++] = n->in[1];
    } else if (op_is(n, "Dropout") && n->nout > 1 && n->out[1] >= 0 && !dropout_identity(c, n)) {
        s[k++] = n->out[1];
    }
    return k;
}

/* PyTorch's CPU RNN layer (FullLayer in ATen's RNN.cpp) runs the input
 * projection of the whole sequence as one GEMM per direction, seq x batch
 * rows, before the recurrence; only the hidden-state GEMMs and the gates run
 * per time step, at batch rows. The projection's share of an LSTM/GRU node:
 * its FLOPs, the GEMM's smallest dimension and the elements it touches. */
typedef struct rnn_proj {
    double flops, d, el;
    double out; /* elements of one direction's projection: rows x gates x H */
} rnn_proj_t;

static rnn_proj_t rnn_projection(const cost_t *c, const loom_est_node_t *n)
{
    rnn_proj_t p = {0};
    const loom_est_tensor_t *x = tin(c, n, 0), *w = tin(c, n, 1);
    if (!x || x->rank != 3 || !w || w->rank != 3)
        return p;
    double dirs = (double)w->dims[0], gh = (double)w->dims[1], in = (double)w->dims[2];
    double rows = (double)x->dims[0] * (double)x->dims[1]; /* seq x batch */
    p.flops = dirs * 2 * rows * gh * in;
    p.d = fmin(rows, fmin(gh, in));
    p.el = dirs * (rows * in + rows * gh + gh * in);
    p.out = rows * gh;
    return p;
}

/* Extra tensors PyTorch allocates that the ONNX graph does not show:
 * max-pool indices (int64, output-sized, kept), the LSTM's per-step
 * gate activations and cell states kept for backward, and the contiguous
 * copies torch.matmul makes of non-contiguous batched operands (and linear
 * of a non-contiguous input: linear_copies_input). */
static uint64_t extra_bytes(const cost_t *c, int ni)
{
    const loom_est_node_t *n = &c->m->n[ni];
    const loom_est_tensor_t *o = &c->m->t[n->out[0]];
    if (linear_copies_input(c, ni))
        return tbytes(c, c->m->n[linear_matmul(c, ni)].in[0]);
    if (op_is(n, "MaxPool") && (n->nout < 2 || n->out[1] < 0))
        return (uint64_t)numel(o) * 8;
    if (is_rnn(n)) {
        /* Y is seq x dirs x batch x H; per step PyTorch's CPU cell keeps
         * about 8 more [batch, H] tensors for backward, LSTM and GRU alike
         * (measured 8.9 with Y and glibc's chunk headers: LSTM the gates,
         * c, tanh(c); GRU the hidden projections, the gates, h - n;
         * bench/estimate_rnn_heap.py). On a CPU device the host heap holds
         * the autograd graph too: its nodes, saved-variable records and
         * tensor headers, RNN_STEP_GRAPH_BYTES per time step and direction
         * (a layer of some 30 autograd nodes per step). */
        uint64_t b = (uint64_t)numel(o) * 8 * esize(c, n->out[0]);
        const loom_est_tensor_t *w = tin(c, n, 1), *x = tin(c, n, 0);
        if (c->cpu && c->opt->train && w && w->rank == 3 && x && x->rank == 3) {
            bool bf = attr_int(n, "layout", 0) == 1;
            b += (uint64_t)(w->dims[0] * x->dims[bf ? 1 : 0]) * RNN_STEP_GRAPH_BYTES;
        }
        return b;
    }
    if (op_is(n, "MatMul")) { /* torch.matmul reshapes batched operands: copies */
        uint64_t b = 0;
        for (int j = 0; j < 2; j++)
            if (!c->contig[n->in[j]] && c->m->t[n->in[j]].rank >= 3)
                b += tbytes(c, n->in[j]);
        return b;
    }
    return 0;
}

/* ------------------------------------------------------------ FLOPs */

static double fwd_flops(const cost_t *c, const loom_est_node_t *n)
{
    const loom_est_tensor_t *x = tin(c, n, 0), *w = tin(c, n, 1);
    const loom_est_tensor_t *o = n->nout && n->out[0] >= 0 ? &c->m->t[n->out[0]] : NULL;
    double E = o ? (double)numel(o) : 0;
    if (op_is(n, "Conv")) {
        double k = 1;
        for (int i = 1; i < w->rank; i++)
            k *= (double)w->dims[i]; /* Cin/group x kernel */
        return 2 * E * k + (tin(c, n, 2) ? E : 0);
    }
    if (op_is(n, "ConvTranspose")) {
        double k = 1;
        for (int i = 1; i < w->rank; i++)
            k *= (double)w->dims[i]; /* Cout/group x kernel */
        return 2 * (double)numel(x) * k + (tin(c, n, 2) ? E : 0);
    }
    if (op_is(n, "Gemm")) {
        bool ta = false;
        const loom_est_attr_t *a = loom_est_attr(n, "transA");
        if (a && a->i)
            ta = true;
        double K = (double)(ta ? x->dims[0] : x->dims[1]);
        return 2 * E * K + (tin(c, n, 2) ? E : 0);
    }
    if (op_is(n, "MatMul"))
        return 2 * E * (double)x->dims[x->rank - 1];
    if (op_is(n, "Einsum")) {
        double t, M, N, K;
        return est_einsum_sizes(c->m, n, &t, &M, &N, &K) ? 2 * t : 0;
    }
    if (op_is(n, "LSTM")) {
        double H = (double)w->dims[1] / 4, I = (double)w->dims[2];
        double steps_batch = E / H; /* seq x dirs x batch */
        return steps_batch * (8 * H * (I + H) + 14 * H);
    }
    if (op_is(n, "GRU")) { /* 3 gates: 6H(I+H) multiply-adds FLOPs, ~12H element-wise */
        double H = (double)w->dims[1] / 3, I = (double)w->dims[2];
        return E / H * (6 * H * (I + H) + 12 * H);
    }
    if (op_is(n, "BatchNormalization"))
        return 5 * E;
    if (op_is(n, "LayerNormalization"))
        return 8 * E;
    if (op_is(n, "Softmax") || op_is(n, "LogSoftmax"))
        return 5 * E;
    if (op_is(n, "MaxPool") || op_is(n, "AveragePool")) {
        const loom_est_attr_t *k = loom_est_attr(n, "kernel_shape");
        double kk = 1;
        for (size_t i = 0; k && i < k->nints; i++)
            kk *= (double)k->ints[i];
        return E * kk;
    }
    if (op_is(n, "GlobalAveragePool") || op_is(n, "GlobalMaxPool") || op_is(n, "ReduceMean") ||
        op_is(n, "ReduceSum") || op_is(n, "ReduceMax"))
        return (double)numel(x);
    if (op_is(n, "Gelu"))
        return 8 * E;
    static const char *ew[] = {"Add",  "Sub",       "Mul",         "Div",       "Pow",
                               "Relu", "Sigmoid",   "Tanh",        "Erf",       "Sqrt",
                               "Exp",  "Log",       "Neg",         "Abs",       "Reciprocal",
                               "Clip", "LeakyRelu", "HardSigmoid", "HardSwish", "Softplus",
                               "Max",  "Min",       "Where",       "Resize",    "Mod"};
    for (size_t i = 0; i < sizeof ew / sizeof ew[0]; i++)
        if (op_is(n, ew[i]))
            return E;
    return 0; /* data movement only: Gather, Concat, Cast, copies */
}

/* ------------------------------------------------------------ the run */

static void cost_free(cost_t *c)
{
    free(c->leader);
    free(c->gkind);
    free(c->gin);
    free(c->pos);
    free(c->root);
    free(c->param);
    free(c->buffer);
    free(c->req);
    free(c->half);
    free(c->contig);
    free(c->last_use);
    free(c->nsaved);
    free(c->handle);
    free(c->ghandle);
    free(c->order);
    free(c->hcat);
    free(c->hbytes);
    free(c->ev);
    free(c->logid);
    loom_est_alloc_free_all(c->alloc);
}

static int cost_init(cost_t *c)
{
    size_t nn = c->m->nn ? c->m->nn : 1, nt = c->m->nt ? c->m->nt : 1;
    c->leader = calloc(nn, sizeof *c->leader);
    c->gkind = calloc(nn, sizeof *c->gkind);
    c->gin = calloc(nn, sizeof *c->gin);
    c->pos = calloc(nn, sizeof *c->pos);
    c->order = calloc(nn, sizeof *c->order);
    c->root = calloc(nt, sizeof *c->root);
    c->param = calloc(nt, sizeof *c->param);
    c->buffer = calloc(nt, sizeof *c->buffer);
    c->req = calloc(nt, sizeof *c->req);
    c->half = calloc(nt, sizeof *c->half);
    c->contig = calloc(nt, sizeof *c->contig);
    c->last_use = calloc(nt, sizeof *c->last_use);
    c->nsaved = calloc(nt, sizeof *c->nsaved);
    c->handle = calloc(nt, sizeof *c->handle);
    c->ghandle = calloc(nt, sizeof *c->ghandle);
    c->alloc = loom_est_alloc_new(c->opt->device ? c->opt->device->allocator
                                                 : LOOM_EST_ALLOC_CUDA_CACHING);
    if (!c->leader || !c->gkind || !c->gin || !c->pos || !c->order || !c->root || !c->param ||
        !c->buffer || !c->req || !c->half || !c->contig || !c->last_use || !c->nsaved ||
        !c->handle || !c->ghandle || !c->alloc)
        return loom_err_set(c->err, LOOM_ENOMEM, "out of memory");
    return LOOM_OK;
}

static void classify(cost_t *c)
{
    loom_est_model_t *m = c->m;
    for (size_t i = 0; i < m->nt; i++) {
        c->root[i] = (int)i;
        c->contig[i] = true;
        c->last_use[i] = -1;
        c->param[i] = m->t[i].is_init && is_float(m->t[i].dtype);
        c->buffer[i] = m->t[i].is_init && !c->param[i];
    }
    for (size_t i = 0; i < m->nn; i++) {
        loom_est_node_t *n = &m->n[i];
        c->leader[i] = (int)i;
        c->gin[i] = -1;
        c->pos[i] = -1;
        /* BatchNorm's running statistics are buffers; Resize's roi and
         * scales and Pad's value are arguments, not parameters */
        size_t from = op_is(n, "BatchNormalization") ? 3
                      : op_is(n, "Resize")           ? 1
                      : op_is(n, "Pad")              ? 2
                                                     : n->nin;
        size_t to = op_is(n, "BatchNormalization") ? 5 : n->nin;
        for (size_t k = from; k < to && k < n->nin; k++)
            if (n->in[k] >= 0 && m->t[n->in[k]].is_init) {
                c->param[n->in[k]] = false;
                c->buffer[n->in[k]] = op_is(n, "BatchNormalization");
            }
    }
    for (size_t i = 0; i < m->nn; i++) {
        int ni = m->order[i];
        if (m->n[ni].folded)
            continue;
        c->pos[ni] = (int)c->norder;
        c->order[c->norder++] = ni;
    }
    for (size_t i = 0; i < m->nt; i++)
        c->req[i] = c->opt->train && c->param[i];
}

static void propagate(cost_t *c)
{
    loom_est_model_t *m = c->m;
    for (size_t i = 0; i < c->norder; i++) {
        loom_est_node_t *n = &m->n[c->order[i]];
        bool any_req = false, all_half = true, any_float = false;
        for (size_t k = 0; k < n->nin; k++) {
            int t = n->in[k];
            if (t < 0)
                continue;
            if (c->req[t] && !(op_is(n, "Where") && k == 0))
                any_req = true;
            if (is_float(m->t[t].dtype) && !m->t[t].has_val) {
                any_float = true;
                if (!c->half[t])
                    all_half = false;
            }
        }
        bool half;
        if (matmul_class(n))
            half = true;
        else if (op_is(n, "Softmax") || op_is(n, "LogSoftmax") || op_is(n, "LayerNormalization") ||
                 op_is(n, "Pow") || op_is(n, "ReduceSum") || op_is(n, "Exp") || op_is(n, "Log"))
            half = false;
        else
            half = any_float && all_half;
        bool alias = is_alias(c, n);
        bool noncontig = alias && makes_noncontig(c, n);
        for (size_t k = 0; k < n->nout; k++) {
            int t = n->out[k];
            if (t < 0)
                continue;
            c->req[t] = any_req && differentiable(n) && is_float(m->t[t].dtype);
            c->half[t] = half && is_float(m->t[t].dtype);
            if (alias) {
                c->root[t] = c->root[n->in[0]];
                c->contig[t] = !noncontig;
            }
        }
        /* Dropout's mask and BN's running statistics are not on the grad path */
        if (op_is(n, "Dropout") || op_is(n, "BatchNormalization"))
            for (size_t k = 1; k < n->nout; k++)
                if (n->out[k] >= 0)
                    c->req[n->out[k]] = false;
    }
}

static int leader_pos(const cost_t *c, int ni)
{
    return c->pos[c->leader[ni]];
}

static void lifetimes(cost_t *c)
{
    loom_est_model_t *m = c->m;
    for (size_t i = 0; i < c->norder; i++) {
        int ni = c->order[i];
        loom_est_node_t *n = &m->n[ni];
        int p = leader_pos(c, ni);
        for (size_t k = 0; k < n->nin; k++)
            if (n->in[k] >= 0) {
                int r = c->root[n->in[k]];
                if (p > c->last_use[r])
                    c->last_use[r] = p;
            }
        if (c->opt->train && c->leader[ni] == ni) {
            bool out_req = false;
            for (size_t k = 0; k < n->nout; k++)
                if (n->out[k] >= 0 && c->req[n->out[k]])
                    out_req = true;
            if (!out_req)
                continue;
            int s[4];
            int ns = saved_of(c, ni, s);
            for (int k = 0; k < ns; k++)
                if (s[k] >= 0 && !m->t[c->root[s[k]]].is_init)
                    c->nsaved[c->root[s[k]]]++;
        }
    }
    for (size_t i = 0; i < m->nouts; i++) /* the loss reads the outputs */
        c->last_use[c->root[m->graph_outputs[i]]] = (int)c->norder;
}

/* The step's inputs are the caller's (`x = next(batch)` lives across
 * forward, backward and the optimizer's step): walk_step frees them last. */
static bool held_by_caller(const cost_t *c, int r)
{
    return c->m->t[r].is_input;
}

static void maybe_free_fwd(cost_t *c, int t, int p)
{
    int r = c->root[t];
    if (!c->handle[r] || c->nsaved[r] > 0 || c->last_use[r] > p || held_by_caller(c, r))
        return;
    mem_free(c, &c->handle[r]);
}

/* After the node at order position i (a group's leader: its members come
 * before it, within GROUP_SPAN positions) ran: free what it and its
 * members read or wrote for the last time. */
#define GROUP_SPAN 64
static void free_after(cost_t *c, size_t i)
{
    int lead = c->order[i];
    size_t from = c->gkind[lead] == G_NONE ? i : i > GROUP_SPAN ? i - GROUP_SPAN : 0;
    int p = (int)i;
    for (size_t q = from; q <= i; q++) {
        int ni = c->order[q];
        if (c->leader[ni] != lead)
            continue;
        const loom_est_node_t *n = &c->m->n[ni];
        for (size_t k = 0; k < n->nin; k++)
            if (n->in[k] >= 0)
                maybe_free_fwd(c, n->in[k], p);
        for (size_t k = 0; k < n->nout; k++)
            if (n->out[k] >= 0)
                maybe_free_fwd(c, n->out[k], p);
    }
}

static int64_t attr_int(const loom_est_node_t *n, const char *name, int64_t def)
{
    const loom_est_attr_t *a = loom_est_attr(n, name);
    return a && a->has_i ? a->i : def;
}

static bool any_above_one(const loom_est_node_t *n, const char *name)
{
    const loom_est_attr_t *a = loom_est_attr(n, name);
    for (size_t i = 0; a && i < a->nints; i++)
        if (a->ints[i] > 1)
            return true;
    return false;
}

/* A convolution PyTorch's CPU build (1.13, one thread) runs without
 * oneDNN: Convolution.cpp's use_mkldnn() declines a 1x1, stride-1,
 * undilated, ungrouped convolution of a batch under 16 (it goes to the
 * im2col/GEMM path). */
static bool conv_pointwise(const cost_t *c, const loom_est_node_t *n)
{
    const loom_est_tensor_t *x = tin(c, n, 0), *w = tin(c, n, 1);
    if (!op_is(n, "Conv") || !x || !w || w->rank != 4 || x->rank != 4)
        return false;
    return w->dims[2] == 1 && w->dims[3] == 1 && !any_above_one(n, "strides") &&
           !any_above_one(n, "dilations") && attr_int(n, "group", 1) == 1 && x->dims[0] < 16;
}

static bool conv_depthwise(const cost_t *c, const loom_est_node_t *n)
{
    const loom_est_tensor_t *w = tin(c, n, 1);
    return op_is(n, "Conv") && w && w->rank >= 2 && attr_int(n, "group", 1) > 1 && w->dims[1] == 1;
}

/* A depthwise convolution's class by its kernel: PyTorch 1.13's CPU kernels
 * differ with the kernel size (on this host 3x3's backward runs at about 7
 * GFLOP/s, 5x5's at 4: bench/estimate_calibrate.py fits each apart); a
 * device without the larger classes uses the next smaller one. */
static int dwconv_class(const cost_t *c, const loom_est_node_t *n)
{
    const loom_est_tensor_t *w = tin(c, n, 1);
    int64_t k = 1;
    for (int i = 2; w && i < w->rank; i++)
        k = w->dims[i] > k ? w->dims[i] : k;
    const loom_est_cost_fn_t(*cls)[2] = c->opt->device->cls;
    if (k >= 7 && cls[LOOM_EST_CL_DWCONV7][0].set)
        return LOOM_EST_CL_DWCONV7;
    if (k >= 5 && cls[LOOM_EST_CL_DWCONV5][0].set)
        return LOOM_EST_CL_DWCONV5;
    return LOOM_EST_CL_DWCONV;
}

/* oneDNN convolutions reorder their operands into scratch buffers: forward
 * input-, weight- and output-sized ones; backward the output gradient
 * twice, the weight, the input, and a result of each gradient before its
 * copy into PyTorch's layout (seen with an allocation tracer on PyTorch
 * 1.13). The heap model gets them; the memory model does not (they die
 * within the operator). */
static bool conv_onednn(const cost_t *c, const loom_est_node_t *n)
{
    return (op_is(n, "Conv") || op_is(n, "ConvTranspose")) && !conv_pointwise(c, n);
}

/* oneDNN's primitive cache (CPU devices): every distinct convolution
 * oneDNN runs is created once per process and kept (its JIT kernel and
 * descriptors): on PyTorch 1.13 here 40-75 KiB for the forward primitive
 * and 35-110 KiB for the backward ones, about 128 KiB a convolution in
 * training (the development cases and the zoo's CNNs: the heap the first
 * step leaves behind, per distinct convolution). Identical convolutions
 * (same shapes, strides, pads, dilations, groups) share one. */
#define ONEDNN_FWD_BYTES (52u << 10)
#define ONEDNN_BWD_BYTES (76u << 10)

static bool attr_same(const loom_est_node_t *a, const loom_est_node_t *b, const char *name)
{
    const loom_est_attr_t *x = loom_est_attr(a, name), *y = loom_est_attr(b, name);
    if (!x || !y)
        return !x && !y;
    if (x->nints != y->nints || x->has_i != y->has_i || (x->has_i && x->i != y->i))
        return false;
    return !x->nints || !memcmp(x->ints, y->ints, x->nints * sizeof *x->ints);
}

static bool same_conv(const cost_t *c, const loom_est_node_t *a, const loom_est_node_t *b)
{
    static const char *attrs[] = {"strides", "pads", "dilations", "group", "auto_pad"};
    if (strcmp(a->op, b->op) != 0)
        return false;
    for (size_t k = 0; k < 2; k++) {
        const loom_est_tensor_t *x = tin(c, a, k), *y = tin(c, b, k);
        if (!x || !y || x->rank != y->rank || memcmp(x->dims, y->dims, sizeof x->dims) != 0)
            return false;
    }
    for (size_t k = 0; k < sizeof attrs / sizeof attrs[0]; k++)
        if (!attr_same(a, b, attrs[k]))
            return false;
    return (a->nin > 2 && a->in[2] >= 0) == (b->nin > 2 && b->in[2] >= 0);
}

static uint64_t onednn_cache_bytes(const cost_t *c)
{
    uint64_t bytes = 0;
    if (!c->cpu)
        return 0;
    for (size_t i = 0; i < c->norder; i++) {
        const loom_est_node_t *n = &c->m->n[c->order[i]];
        if (!conv_onednn(c, n))
            continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = same_conv(c, n, &c->m->n[c->order[j]]);
        if (seen)
            continue;
        bytes += ONEDNN_FWD_BYTES;
        if (c->opt->train && c->req[n->out[0]])
            bytes += ONEDNN_BWD_BYTES;
    }
    return bytes;
}

/* Persistent state: weights and buffers, and the optimizer's states of
 * each weight when training; returns the largest weight's bytes. */
static uint64_t walk_persist(cost_t *c, loom_est_result_t *res, uint64_t *persist)
{
    loom_est_model_t *m = c->m;
    uint64_t largest = 0;
    for (size_t i = 0; i < m->nt; i++) {
        if (!c->param[i] && !c->buffer[i])
            continue;
        uint64_t b = (uint64_t)numel(&m->t[i]) *
                     (c->opt->precision == LOOM_EST_FP16 || c->opt->precision == LOOM_EST_BF16
                          ? (is_float(m->t[i].dtype) ? 2 : est_dtype_size(m->t[i].dtype))
                          : est_dtype_size(m->t[i].dtype));
        c->cur_phase = PH_PERSIST;
        persist[4 * i] = mem_alloc(c, b, CAT_WEIGHT);
        if (c->param[i]) {
            res->params += (uint64_t)numel(&m->t[i]);
            if (b > largest)
                largest = b;
        } else {
            res->buffers += (uint64_t)numel(&m->t[i]);
        }
        if (c->opt->train && c->param[i]) {
            int nstate = c->opt->optimizer == LOOM_EST_ADAM       ? 2
                         : c->opt->optimizer == LOOM_EST_MOMENTUM ? 1
                                                                  : 0;
            c->log_skip = true; /* the heap replay creates them in step 1 */
            for (int s = 0; s < nstate; s++)
                persist[4 * i + 1 + (size_t)s] = mem_alloc(c, b, CAT_OPT);
            c->log_skip = false;
        }
    }
    return largest;
}

/* The forward pass, node by node in order. */
static void walk_forward(cost_t *c, uint64_t *persist, uint64_t *extra_handles)
{
    loom_est_model_t *m = c->m;
    c->cur_phase = PH_FWD;
    for (size_t i = 0; i < c->norder; i++) {
        int ni = c->order[i];
        loom_est_node_t *n = &m->n[ni];
        bool alias = is_alias(c, n);
        bool internal = c->leader[ni] != ni;
        c->cur_node = c->leader[ni];
        uint64_t hy = 0;
        if (!alias && !internal && (c->log || c->scratch) && conv_onednn(c, n)) {
            uint64_t hx = scr_alloc(c, tbytes(c, n->in[0])), hw = scr_alloc(c, tbytes(c, n->in[1]));
            hy = scr_alloc(c, tbytes(c, n->out[0]));
            scr_free(c, &hw);
            scr_free(c, &hx);
        }
        if (!alias && !internal && is_rnn(n) && (c->log || c->scratch)) {
            /* the input projection of one direction (rnn_projection): live
             * while that direction's time steps run, freed with the layer */
            hy = scr_alloc(c, (uint64_t)rnn_projection(c, n).out * esize(c, n->out[0]));
        }
        if (!alias && !internal) {
            for (size_t k = 0; k < n->nout; k++)
                if (n->out[k] >= 0 && c->root[n->out[k]] == n->out[k])
                    c->handle[n->out[k]] = mem_alloc(c, tbytes(c, n->out[k]), CAT_ACT);
            if (!is_rnn(n))
                scr_free(c, &hy);
            uint64_t ex = extra_bytes(c, ni);
            if (ex) {
                bool kept = false;
                for (size_t k = 0; k < n->nout; k++)
                    kept |= n->out[k] >= 0 && c->req[n->out[k]];
                extra_handles[ni] = mem_alloc(c, ex, CAT_ACT);
                if (!c->opt->train || !kept)
                    mem_free(c, &extra_handles[ni]);
            }
            scr_free(c, &hy); /* an RNN's projection outlives its outputs */
        }
        if (c->opt->precision == LOOM_EST_MIXED && matmul_class(n))
            for (size_t k = 1; k < n->nin; k++) /* autocast's half copies of weights */
                if (n->in[k] >= 0 && c->param[n->in[k]] && !persist[4 * n->in[k] + 3])
                    persist[4 * n->in[k] + 3] = mem_alloc(c, tbytes(c, n->in[k]) / 2, CAT_TEMP);
        if (!internal) /* a group frees its members' inputs once its output exists */
            free_after(c, i);
    }
}

/* The loss and the outputs not saved for backward; the heap log's ids of
 * the latter go to DEFERRED (at most 8): returns how many. */
static int walk_loss(cost_t *c, uint64_t deferred[8])
{
    loom_est_model_t *m = c->m;
    /* cross-entropy = log_softmax (its output kept) + nll_loss; its
     * backward makes d(log_softmax), then d(logits) while both live */
    uint64_t lsm_bytes = 0, glsm = 0, loss = 0;
    c->cur_phase = PH_LOSS;
    c->cur_node = -1;
    for (size_t i = 0; i < m->nouts; i++)
        lsm_bytes += (uint64_t)numel(&m->t[m->graph_outputs[i]]) * 4;
    loss = mem_alloc(c, lsm_bytes, CAT_ACT);
    glsm = mem_alloc(c, lsm_bytes, CAT_TEMP);
    for (size_t i = 0; i < m->nouts; i++) {
        int t = m->graph_outputs[i];
        if (c->req[t] && !c->ghandle[t])
            c->ghandle[t] = mem_alloc(c, tbytes(c, t), CAT_TEMP);
    }
    mem_free(c, &loss);
    mem_free(c, &glsm);
    /* outputs not saved die now for the memory model; the caller's
     * reference (`out = model(x)`) keeps them until its step returns,
     * after the optimizer, which is where the heap log frees them */
    int ndef = 0;
    for (size_t i = 0; i < m->nouts; i++) {
        int r = c->root[m->graph_outputs[i]];
        if (c->nsaved[r] == 0) {
            uint64_t h = c->handle[r];
            if (c->log && h < c->caplog && c->logid[h] && ndef < 8) {
                deferred[ndef++] = c->logid[h];
                c->logid[h] = 0;
            }
            mem_free(c, &c->handle[r]);
        }
    }
    return ndef;
}

/* The inputs of the group led by NI: every member's inputs, each once (at
 * most 64); returns how many. */
static int group_inputs(const cost_t *c, int ni, int ins[64])
{
    int nin = 0;
    for (size_t q = 0; q < c->norder; q++) {
        const loom_est_node_t *mn = &c->m->n[c->order[q]];
        if (c->leader[c->order[q]] != ni)
            continue;
        for (size_t k = 0; k < mn->nin && nin < 64; k++) {
            bool dup = false;
            for (int j = 0; j < nin; j++)
                dup |= ins[j] == mn->in[k];
            if (mn->in[k] >= 0 && !dup)
                ins[nin++] = mn->in[k];
        }
    }
    return nin;
}

/* The gradients of the inputs of the group led by NI (internal ones
 * skipped); true if the first output's gradient was passed on to an
 * input (a view's). */
static bool input_grads(cost_t *c, int ni, const loom_est_node_t *n)
{
    loom_est_model_t *m = c->m;
    bool alias = is_alias(c, n) || op_is(n, "Concat");
    int ins[64];
    int nin = group_inputs(c, ni, ins);
    uint64_t gh = n->out[0] >= 0 ? c->ghandle[n->out[0]] : 0;
    bool passed = false;
    /* oneDNN's scratch (conv_onednn) around each gradient: for dx,
     * dy and w reordered and dx computed, then copied out; for dw,
     * dy and x reordered and dw computed, then copied out */
    bool onednn = (c->log || c->scratch) && conv_onednn(c, n);
    for (int k = 0; k < nin; k++) {
        int t = ins[k];
        int pr = m->t[t].producer;
        if (!c->req[t] || (pr >= 0 && pr != ni && c->leader[pr] == ni))
            continue; /* not on the grad path, or internal to the group */
        uint64_t tmp = 0;
        if (onednn && (t == n->in[0] || t == n->in[1])) {
            int other = t == n->in[0] ? n->in[1] : n->in[0];
            uint64_t g = scr_alloc(c, tbytes(c, n->out[0]));
            uint64_t o = scr_alloc(c, tbytes(c, other));
            tmp = scr_alloc(c, tbytes(c, t));
            scr_free(c, &o);
            scr_free(c, &g);
        }
        if (c->param[t] || laid_weight(c, t)) {
            if (!c->ghandle[t])
                c->ghandle[t] = mem_alloc(c, tbytes(c, t), CAT_GRAD);
        } else if (alias && !passed && !c->ghandle[t]) {
            c->ghandle[t] = gh; /* the gradient of a view is a view */
            passed = true;
        } else if (!c->ghandle[t]) {
            c->ghandle[t] = mem_alloc(c, tbytes(c, t), CAT_TEMP);
        }
        scr_free(c, &tmp);
    }
    return passed;
}

/* The backward of the group led by NI (nothing if no output needs a
 * gradient). */
static void walk_backward_node(cost_t *c, int ni, uint64_t *extra_handles)
{
    loom_est_model_t *m = c->m;
    loom_est_node_t *n = &m->n[ni];
    c->cur_node = ni;
    bool out_req = false;
    for (size_t k = 0; k < n->nout; k++)
        if (n->out[k] >= 0 && c->req[n->out[k]])
            out_req = true;
    if (!out_req || c->gkind[ni] == G_RNN_WEIGHT)
        return; /* the layout's gradient is the parameters' (laid_weight) */
    bool passed = input_grads(c, ni, n);
    if ((c->log || c->scratch) && op_is(n, "BatchNormalization")) { /* input-sized scratch */
        uint64_t t = scr_alloc(c, tbytes(c, n->in[0]));
        scr_free(c, &t);
    }
    for (size_t k = 0; k < n->nout; k++) {
        int t = n->out[k];
        if (t < 0)
            continue;
        if (passed && k == 0)
            c->ghandle[t] = 0;
        else
            mem_free(c, &c->ghandle[t]);
    }
    int s[4];
    int ns = saved_of(c, ni, s);
    for (int k = 0; k < ns; k++) {
        if (s[k] < 0 || m->t[c->root[s[k]]].is_init)
            continue;
        int r = c->root[s[k]];
        if (--c->nsaved[r] == 0 && !held_by_caller(c, r))
            mem_free(c, &c->handle[r]);
    }
    mem_free(c, &extra_handles[ni]);
}

/* After backward: what is left of the forward, then the optimizer's step
 * (the deferred outputs die after it in the heap log). */
static void walk_step(cost_t *c, uint64_t *persist, uint64_t largest, const uint64_t *deferred,
                      int ndef)
{
    loom_est_model_t *m = c->m;
    /* anything left of the forward (inputs, unused outputs) */
    c->cur_phase = PH_END;
    c->cur_node = -1;
    for (size_t i = 0; i < m->nt; i++) {
        if (!c->param[i] && !laid_weight(c, (int)i))
            mem_free(c, &c->ghandle[i]);
        if (!held_by_caller(c, (int)i))
            mem_free(c, &c->handle[i]);
        mem_free(c, &persist[4 * i + 3]);
    }
    /* optimizer: Adam's single-tensor step divides into two temporaries */
    if (c->log)
        log_event(c, EV_OPT, 0, 0); /* the heap replay runs the optimizer here */
    for (int i = 0; i < ndef; i++)
        log_event(c, EV_FREE, deferred[i], 0);
    if (c->opt->optimizer == LOOM_EST_ADAM) {
        c->log_skip = true;
        uint64_t a = mem_alloc(c, largest, CAT_TEMP), b = mem_alloc(c, largest, CAT_TEMP);
        c->log_skip = false;
        mem_free(c, &a);
        mem_free(c, &b);
    }
    for (size_t i = 0; i < m->nt; i++)
        if (held_by_caller(c, (int)i))
            mem_free(c, &c->handle[i]);
}

static int cost_walk(cost_t *c, loom_est_result_t *res, uint64_t *extra_handles)
{
    loom_est_model_t *m = c->m;
    uint64_t *persist =
        calloc(m->nt ? m->nt : 1, 4 * sizeof *persist); /* weight, 2 states, half copy */
    if (!persist)
        return loom_err_set(c->err, LOOM_ENOMEM, "out of memory");
    uint64_t largest = walk_persist(c, res, persist);
    c->cur_phase = PH_INPUT;
    for (size_t i = 0; i < m->nt; i++)
        if (m->t[i].is_input)
            c->handle[i] = mem_alloc(c, tbytes(c, (int)i), CAT_ACT);
    walk_forward(c, persist, extra_handles);
    if (c->opt->train) {
        uint64_t deferred[8];
        int ndef = walk_loss(c, deferred);
        c->cur_phase = PH_BWD;
        for (size_t i = c->norder; i-- > 0;)
            if (c->leader[c->order[i]] == c->order[i])
                walk_backward_node(c, c->order[i], extra_handles);
        walk_step(c, persist, largest, deferred, ndef);
    }
    for (size_t i = 0; i < m->nt; i++) {
        mem_free(c, &c->ghandle[i]);
        mem_free(c, &c->handle[i]);
        for (int s = 0; s < 4; s++)
            mem_free(c, &persist[4 * i + (size_t)s]);
    }
    free(persist);
    if (c->oom)
        return loom_err_set(c->err, LOOM_ENOMEM, "out of memory in the memory model");
    return LOOM_OK;
}

static double node_bytes(const cost_t *c, int ni)
{
    const loom_est_node_t *n = &c->m->n[ni];
    double b = 0;
    if (c->gin[ni] >= 0)
        b += (double)tbytes(c, c->gin[ni]);
    for (size_t k = 0; k < n->nin; k++)
        if (n->in[k] >= 0 && (c->gin[ni] < 0 || c->m->t[n->in[k]].producer < 0 ||
                              c->leader[c->m->t[n->in[k]].producer] != ni))
            b += (double)tbytes(c, n->in[k]);
    for (size_t k = 0; k < n->nout; k++)
        if (n->out[k] >= 0)
            b += (double)tbytes(c, n->out[k]);
    return b;
}

/* Smallest of M, N, K of a matrix product node (0 for anything else). */
static double product_min_dim(const cost_t *c, int ni)
{
    const loom_est_node_t *n = &c->m->n[ni];
    if (c->gkind[ni] == G_LINEAR)
        for (size_t j = 0; j < n->nin; j++) {
            int p = n->in[j] >= 0 ? c->m->t[n->in[j]].producer : -1;
            if (p >= 0 && p != ni && c->leader[p] == ni)
                return product_min_dim(c, p);
        }
    const loom_est_tensor_t *a = tin(c, n, 0), *b = tin(c, n, 1);
    if (!a || !b || a->rank < 1 || b->rank < 1)
        return 0;
    double M, K, N;
    if (op_is(n, "Einsum")) {
        double t;
        return est_einsum_sizes(c->m, n, &t, &M, &N, &K) ? fmin(M, fmin(K, N)) : 0;
    }
    if (op_is(n, "MatMul")) {
        K = (double)a->dims[a->rank - 1];
        /* a 2-D right operand (a Linear): PyTorch folds every leading
         * dimension of the left one into a single GEMM's M */
        M = b->rank <= 2   ? (double)numel(a) / (K > 0 ? K : 1)
            : a->rank >= 2 ? (double)a->dims[a->rank - 2]
                           : 1;
        N = b->rank >= 2 ? (double)b->dims[b->rank - 1] : 1;
    } else if (op_is(n, "Gemm") && a->rank == 2 && b->rank == 2) {
        const loom_est_attr_t *ta = loom_est_attr(n, "transA"), *tb = loom_est_attr(n, "transB");
        M = (double)(ta && ta->i ? a->dims[1] : a->dims[0]);
        K = (double)(ta && ta->i ? a->dims[0] : a->dims[1]);
        N = (double)(tb && tb->i ? b->dims[0] : b->dims[1]);
    } else {
        return 0;
    }
    return fmin(M, fmin(K, N));
}

static double curve_rate(const loom_est_device_t *d, double dim)
{
    if (dim <= d->curve_dim[0])
        return d->curve_flops[0];
    for (int i = 1; i < d->ncurve; i++)
        if (dim <= d->curve_dim[i]) {
            double t = (log(dim) - log(d->curve_dim[i - 1])) /
                       (log(d->curve_dim[i]) - log(d->curve_dim[i - 1]));
            return d->curve_flops[i - 1] + t * (d->curve_flops[i] - d->curve_flops[i - 1]);
        }
    return d->curve_flops[d->ncurve - 1];
}

double loom_est_curve_eval(const loom_est_curve_t *c, double x)
{
    if (c->n <= 0)
        return 0;
    if (x <= c->x[0])
        return c->y[0];
    for (int i = 1; i < c->n; i++)
        if (x <= c->x[i]) {
            double t = (log(x) - log(c->x[i - 1])) / (log(c->x[i]) - log(c->x[i - 1]));
            return c->y[i - 1] + t * (c->y[i] - c->y[i - 1]);
        }
    return c->y[c->n - 1];
}

double loom_est_cost_eval(const loom_est_cost_fn_t *f, double flops, double d, double elems,
                          double steps, bool strided)
{
    double t = f->overhead_s + steps * f->step_s + (strided ? f->strided_s : 0);
    if (f->peak > 0 && flops > 0) {
        double eff = 1;
        if (f->half_dim > 0) {
            double dp = pow(d > 0 ? d : 1, f->power), hp = pow(f->half_dim, f->power);
            eff = dp / (dp + hp);
        }
        t += flops / (f->peak * eff);
    }
    if (elems > 0)
        t += elems * loom_est_curve_eval(&f->elem_s, elems);
    return t;
}

/* ------------------------------------------------------------ fresh pages */

/* Replays the heap event log through the glibc model the way
 * bench/estimate_measure.py runs the model: weights, the input batch, then
 * steps (the optimizer creating its state in the first), and averages the
 * fresh bytes of the last three steps per node and phase. */
enum { REPLAY_STEPS = 6, REPLAY_COUNTED = 3 };

static int replay_heap(cost_t *c, double *fresh_fwd, double *fresh_bwd, double *fresh_loss,
                       double *fresh_opt)
{
    loom_est_model_t *m = c->m;
    loom_est_heap_t *h = loom_est_heap_new_cfg(&c->opt->device->malloc_cfg);
    uint64_t *hh = calloc(c->nlog + 1, sizeof *hh);
    bool *keep = calloc(c->nlog + 1, sizeof *keep);
    uint64_t *state = calloc(2 * (m->nt ? m->nt : 1), sizeof *state);
    int rc = LOOM_OK;
    if (!h || !hh || !keep || !state) {
        rc = loom_err_set(c->err, LOOM_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t e = 0; e < c->nev; e++) {
        const hev_t *v = &c->ev[e];
        if (v->phase <= PH_INPUT && v->kind == EV_ALLOC) {
            hh[v->id] = loom_est_heap_malloc(h, v->bytes);
            keep[v->id] = true; /* held by the caller across steps */
        }
    }
    int nstate = c->opt->optimizer == LOOM_EST_ADAM       ? 2
                 : c->opt->optimizer == LOOM_EST_MOMENTUM ? 1
                                                          : 0;
    double w = 1.0 / REPLAY_COUNTED;
    for (int step = 0; step < REPLAY_STEPS; step++) {
        bool count = step >= REPLAY_STEPS - REPLAY_COUNTED;
        for (size_t e = 0; e < c->nev; e++) {
            const hev_t *v = &c->ev[e];
            if (v->phase <= PH_INPUT)
                continue;
            uint64_t before = loom_est_heap_fresh_bytes(h);
            if (v->kind == EV_ALLOC) {
                hh[v->id] = loom_est_heap_malloc(h, v->bytes);
            } else if (v->kind == EV_FREE) {
                if (!keep[v->id])
                    loom_est_heap_release(h, hh[v->id]);
                if (!keep[v->id])
                    hh[v->id] = 0;
            } else { /* the optimizer, parameter by parameter */
                uint64_t denom = 0;
                for (size_t t = 0; t < m->nt && step == 0 && nstate; t++) {
                    /* the first step creates the state of every parameter:
                     * Adam's step counter (a scalar tensor) and moments */
                    if (!c->param[t])
                        continue;
                    if (c->opt->optimizer == LOOM_EST_ADAM)
                        (void)loom_est_heap_malloc(h, 4);
                    for (int s = 0; s < nstate; s++)
                        state[2 * t + (size_t)s] = loom_est_heap_malloc(h, tbytes(c, (int)t));
                }
                for (size_t t = 0; t < m->nt; t++) {
                    if (!c->param[t])
                        continue;
                    uint64_t b = tbytes(c, (int)t);
                    if (c->opt->optimizer == LOOM_EST_ADAM) {
                        /* denom = (exp_avg_sq.sqrt() / bc).add_(eps): two
                         * temporaries, the first dies at once, the second
                         * when the next parameter's replaces it */
                        uint64_t sq = loom_est_heap_malloc(h, b);
                        uint64_t dv = loom_est_heap_malloc(h, b);
                        loom_est_heap_release(h, sq);
                        loom_est_heap_release(h, denom);
                        denom = dv;
                    }
                }
                loom_est_heap_release(h, denom);
            }
            if (!count)
                continue;
            double f = (double)(loom_est_heap_fresh_bytes(h) - before) * w;
            if (v->kind == EV_OPT)
                *fresh_opt += f;
            else if (v->phase == PH_LOSS || v->node < 0)
                *fresh_loss += f;
            else if (v->phase == PH_FWD)
                fresh_fwd[v->node] += f;
            else
                fresh_bwd[v->node] += f;
        }
    }
    if (loom_est_heap_failed(h))
        rc = loom_err_set(c->err, LOOM_ENOMEM, "out of memory in the heap model");
out:
    free(state);
    free(keep);
    free(hh);
    loom_est_heap_free_all(h);
    return rc;
}

/* ------------------------------------------------------------ classes */

static int op_class(cost_t *c, int ni)
{
    const loom_est_node_t *n = &c->m->n[ni];
    switch (c->gkind[ni]) {
    case G_LAYERNORM: return LOOM_EST_CL_LN;
    case G_GELU: return LOOM_EST_CL_GELU;
    case G_SILU: return LOOM_EST_CL_ACT;
    case G_LINEAR: return LOOM_EST_CL_MATMUL;
    default: break;
    }
    if (op_is(n, "Gather") && n->in[0] >= 0 && c->param[n->in[0]])
        return LOOM_EST_CL_EMBEDDING;
    if (is_alias(c, n))
        return LOOM_EST_CL_VIEW;
    if (op_is(n, "Conv") || op_is(n, "ConvTranspose"))
        return conv_depthwise(c, n)   ? dwconv_class(c, n)
               : conv_pointwise(c, n) ? LOOM_EST_CL_CONV1X1
                                      : LOOM_EST_CL_CONV;
    if (op_is(n, "Gemm"))
        return LOOM_EST_CL_MATMUL;
    if (op_is(n, "MatMul")) {
        const loom_est_tensor_t *b = tin(c, n, 1);
        return b && b->rank <= 2 ? LOOM_EST_CL_MATMUL : LOOM_EST_CL_BMM;
    }
    if (op_is(n, "Einsum"))
        return LOOM_EST_CL_BMM;
    if (is_rnn(n))
        return op_is(n, "GRU") && c->opt->device->cls[LOOM_EST_CL_GRU][0].set ? LOOM_EST_CL_GRU
                                                                              : LOOM_EST_CL_LSTM;
    if (op_is(n, "Dropout") && c->opt->device->cls[LOOM_EST_CL_DROPOUT][0].set)
        return LOOM_EST_CL_DROPOUT; /* training: views in inference, above */
    if (op_is(n, "BatchNormalization"))
        return LOOM_EST_CL_BN;
    if (op_is(n, "LayerNormalization"))
        return LOOM_EST_CL_LN;
    if (op_is(n, "Softmax") || op_is(n, "LogSoftmax"))
        return LOOM_EST_CL_SOFTMAX;
    if (op_is(n, "Gelu"))
        return LOOM_EST_CL_GELU;
    if (op_is(n, "MaxPool") || op_is(n, "AveragePool"))
        return LOOM_EST_CL_POOL;
    if (op_is(n, "GlobalAveragePool") || op_is(n, "GlobalMaxPool") || op_is(n, "ReduceMean") ||
        op_is(n, "ReduceSum") || op_is(n, "ReduceMax"))
        return LOOM_EST_CL_REDUCE;
    static const char *unary[] = {"Relu", "Clip",        "LeakyRelu", "Neg",    "Abs",
                                  "Not",  "HardSigmoid", "HardSwish", "Dropout"};
    for (size_t i = 0; i < sizeof unary / sizeof *unary; i++)
        if (op_is(n, unary[i]))
            return LOOM_EST_CL_UNARY;
    static const char *binary[] = {"Add", "Sub",   "Mul",   "Div",  "Max",    "Mod",
                                   "Min", "Where", "Equal", "Less", "Greater"};
    for (size_t i = 0; i < sizeof binary / sizeof *binary; i++)
        if (op_is(n, binary[i]))
            return LOOM_EST_CL_BINARY;
    static const char *act[] = {"Erf",  "Tanh", "Sigmoid",  "Exp",       "Log",
                                "Sqrt", "Pow",  "Softplus", "Reciprocal"};
    for (size_t i = 0; i < sizeof act / sizeof *act; i++)
        if (op_is(n, act[i]))
            return LOOM_EST_CL_ACT;
    return LOOM_EST_CL_COPY; /* Concat, Gather, Cast, copying reshapes, ... */
}

typedef struct feat {
    double d, el_f, el_b, steps;
    bool strided;
} feat_t;

static double nel(const cost_t *c, int t)
{
    return t >= 0 ? (double)numel(&c->m->t[t]) : 0;
}

/* The element counts etc. each class's cost function takes (docs/estimate.md). */
static feat_t op_features(cost_t *c, int ni, int cls, double min_dim)
{
    const loom_est_node_t *n = &c->m->n[ni];
    int x = c->gin[ni] >= 0 ? c->gin[ni] : n->nin ? n->in[0] : -1;
    double E = n->nout ? nel(c, n->out[0]) : 0, X = nel(c, x);
    feat_t f = {.d = min_dim};
    switch (cls) {
    case LOOM_EST_CL_CONV:
    case LOOM_EST_CL_CONV1X1: {
        const loom_est_tensor_t *w = tin(c, n, 1);
        double k = 1;
        for (int i = 1; w && i < w->rank; i++)
            k *= (double)w->dims[i]; /* Cin/group x kernel */
        double cout = w && w->rank ? (double)w->dims[0] : 1;
        double grp = (double)attr_int(n, "group", 1);
        f.d = fmin(E / (cout > 0 ? cout : 1), fmin(cout / grp, k));
        f.el_f = f.el_b = X + E + nel(c, n->in[1]);
        f.strided = any_above_one(n, "strides");
        /* the pointwise path runs one GEMM per sample, and each (but over a
         * 1x1 map, a matrix-vector product) packs the whole weight: its
         * class pays step_s per sample and weight element, which is what a
         * large weight over a 2x2 map costs (1488 -> 248 channels at 2x2,
         * batch 8: 2.7 ms where the FLOPs say 1.4; docs/estimate.md) */
        const loom_est_tensor_t *xt = tin(c, n, 0);
        if (cls == LOOM_EST_CL_CONV1X1 && xt && xt->rank == 4 && xt->dims[0] > 0 &&
            (double)xt->dims[2] * (double)xt->dims[3] > 1)
            f.steps = (double)xt->dims[0] * cout * k;
        break;
    }
    case LOOM_EST_CL_DWCONV:
    case LOOM_EST_CL_DWCONV5:
    case LOOM_EST_CL_DWCONV7: {
        f.el_f = f.el_b = X + E;
        f.strided = any_above_one(n, "strides");
        /* a kernel larger than its input map (a mobile network's last
         * stages: 3x3 over 2x2) leaves oneDNN's depthwise kernels for a path
         * that costs per plane (batch x channels), whatever the work */
        const loom_est_tensor_t *xt = tin(c, n, 0), *wt = tin(c, n, 1);
        bool small = xt && wt && xt->rank == 4 && wt->rank == 4 &&
                     (xt->dims[2] < wt->dims[2] || xt->dims[3] < wt->dims[3]);
        if (small && xt->dims[0] > 0 && xt->dims[1] > 0)
            f.steps = (double)xt->dims[0] * (double)xt->dims[1];
        break;
    }
    case LOOM_EST_CL_MATMUL:
    case LOOM_EST_CL_BMM: {
        double el = 0;
        for (size_t j = 0; j < n->nin; j++)
            el += nel(c, n->in[j]);
        if (c->gkind[ni] == G_LINEAR)
            el = X + E; /* the MatMul's input and the output; the weight below */
        for (size_t j = 0; c->gkind[ni] == G_LINEAR && j < n->nin; j++) {
            int p = n->in[j] >= 0 ? c->m->t[n->in[j]].producer : -1;
            if (p >= 0 && p != ni && c->leader[p] == ni)
                el += nel(c, c->m->n[p].in[1]);
        }
        f.el_f = f.el_b = el + (c->gkind[ni] == G_LINEAR ? 0 : E);
        break;
    }
    case LOOM_EST_CL_LSTM:
    case LOOM_EST_CL_GRU: {
        const loom_est_tensor_t *xt = tin(c, n, 0);
        bool bf = attr_int(n, "layout", 0) == 1;
        const loom_est_tensor_t *wt = tin(c, n, 1);
        double dirs = wt && wt->rank == 3 ? (double)wt->dims[0] : 1; /* run one after the other */
        f.steps = (xt && xt->rank == 3 ? (double)xt->dims[bf ? 1 : 0] : 1) * dirs;
        f.d = xt && xt->rank == 3 ? (double)xt->dims[bf ? 0 : 1] : 1;
        f.el_f = f.el_b = (op_is(n, "GRU") ? 3 : 4) * E;
        break;
    }
    case LOOM_EST_CL_EMBEDDING:
        f.el_f = E;
        f.el_b = nel(c, n->in[0]) + E;
        break;
    case LOOM_EST_CL_BN: {
        /* PyTorch's CPU batch norm pays per plane (one sample's channel)
         * where a plane has fewer than 16 elements (a 2x2 or 3x3 map):
         * 75-100 ns a plane in backward here whatever its size, step_s in
         * the class (bench/estimate_calibrate.py cal_bn). A 1x1 map runs as
         * channels-last, without it. */
        const loom_est_tensor_t *xt = tin(c, n, 0);
        f.el_f = f.el_b = E;
        if (xt && xt->rank == 4 && xt->dims[0] > 0 && xt->dims[1] > 0) {
            double hw = (double)xt->dims[2] * (double)xt->dims[3]; /* no int64 overflow */
            if (hw > 1 && hw < 16)
                f.steps = (double)xt->dims[0] * (double)xt->dims[1];
        }
        break;
    }
    case LOOM_EST_CL_POOL: f.el_f = f.el_b = X + E; break;
    case LOOM_EST_CL_REDUCE: f.el_f = f.el_b = X; break;
    case LOOM_EST_CL_VIEW: break;
    default: f.el_f = f.el_b = E; break;
    }
    return f;
}

/* ------------------------------------------------------------ time */

static double n_esize(const cost_t *c, int ni)
{
    const loom_est_node_t *n = &c->m->n[ni];
    return n->nout && n->out[0] >= 0 ? (double)esize(c, n->out[0]) : 4;
}

static bool matrix_op(const char *op_type)
{
    return strcmp(op_type, "Conv") == 0 || strcmp(op_type, "Gemm") == 0 ||
           strcmp(op_type, "MatMul") == 0 || strcmp(op_type, "LSTM") == 0 ||
           strcmp(op_type, "GRU") == 0 || strcmp(op_type, "Einsum") == 0 ||
           strcmp(op_type, "ConvTranspose") == 0 || strcmp(op_type, "Linear(fused)") == 0;
}

/* The plain roofline of one operator (devices without op_classes). */
static void roofline_op(const cost_t *c, loom_est_op_t *op, double *tf, double *tb)
{
    const loom_est_device_t *d = c->opt->device;
    bool half = c->opt->precision != LOOM_EST_FP32;
    bool mm = matrix_op(op->op_type);
    double rate = mm ? (half ? d->flops_half : d->flops_fp32) : d->flops_vector;
    if (op->min_dim > 0 && d->ncurve > 0)
        rate = curve_rate(d, op->min_dim) * (half ? d->flops_half / d->flops_fp32 : 1);
    if (strcmp(op->op_type, "Conv") == 0 || strcmp(op->op_type, "ConvTranspose") == 0)
        rate = d->flops_conv > 0
                   ? (half ? d->flops_half * d->flops_conv / d->flops_fp32 : d->flops_conv)
                   : rate;
    *tf = fmax(op->fwd_flops / rate, op->bytes / d->mem_bandwidth) + d->op_overhead_s;
    *tb = 0;
    if (op->bwd_flops > 0)
        *tb = fmax(op->bwd_flops / rate, 2 * op->bytes / d->mem_bandwidth) + 2 * d->op_overhead_s;
}

static void flops_pass(cost_t *c, loom_est_result_t *res, int *opnode, bool *opreq)
{
    loom_est_model_t *m = c->m;
    size_t k = 0;
    for (size_t i = 0; i < c->norder; i++) {
        int ni = c->order[i];
        loom_est_node_t *n = &m->n[ni];
        int lead = c->leader[ni];
        double f = fwd_flops(c, n);
        bool any_req = false;
        for (size_t j = 0; j < n->nout; j++)
            if (n->out[j] >= 0 && c->req[n->out[j]])
                any_req = true;
        double b = 0;
        if (any_req && c->opt->train) {
            if (matmul_class(n)) {
                int nreq = 0;
                for (size_t j = 0; j < n->nin && j < 2; j++)
                    if (n->in[j] >= 0 && c->req[n->in[j]])
                        nreq++;
                b = f * nreq;
                if (is_rnn(n)) { /* the recurrence's backward runs whatever the input needs */
                    double pr = rnn_projection(c, n).flops;
                    b = pr * nreq + 2 * (f - pr);
                }
            } else {
                b = 2 * f;
            }
        }
        res->fwd_flops += f;
        res->bwd_flops += b;
        if (lead == ni) {
            loom_est_op_t *op = &res->ops[k];
            opnode[k] = ni;
            opreq[k] = any_req && c->opt->train;
            k++;
            op->name = n->name;
            op->op_type = c->gkind[ni] == G_LAYERNORM ? "LayerNorm(fused)"
                          : c->gkind[ni] == G_GELU    ? "Gelu(fused)"
                          : c->gkind[ni] == G_SILU    ? "SiLU(fused)"
                          : c->gkind[ni] == G_LINEAR  ? "Linear(fused)"
                                                      : n->op;
            op->fwd_flops += f;
            op->bwd_flops += b;
            op->bytes = is_alias(c, n) ? 0 : node_bytes(c, ni);
            op->min_dim = product_min_dim(c, ni);
            op->cls = -1;
            for (size_t j = 0; j < n->nout; j++)
                if (n->out[j] >= 0 && !is_alias(c, n))
                    op->out_bytes += tbytes(c, n->out[j]);
        } else {
            /* accumulate into a scratch slot: the leader's index is found below */
            for (size_t q = i + 1; q < c->norder; q++)
                if (c->order[q] == lead) {
                    size_t slot = k; /* leader not emitted yet: count leaders before it */
                    for (size_t r = i + 1; r < q; r++)
                        if (c->leader[c->order[r]] == c->order[r])
                            slot++;
                    res->ops[slot].fwd_flops += f;
                    res->ops[slot].bwd_flops += b;
                    break;
                }
        }
    }
    res->nops = k;
    /* Memory traffic under the roofline rules (each operator reads its
     * inputs and writes its outputs once; backward twice that; the update
     * per parameter as many times as the optimizer touches it),
     * device-independent, for rooflines (loom prof). */
    for (size_t i = 0; i < res->nops; i++) {
        res->fwd_bytes += res->ops[i].bytes;
        if (res->ops[i].bwd_flops > 0)
            res->bwd_bytes += 2 * res->ops[i].bytes;
    }
    if (c->opt->train) {
        double per = c->opt->optimizer == LOOM_EST_ADAM       ? 7
                     : c->opt->optimizer == LOOM_EST_MOMENTUM ? 5
                                                              : 3;
        double elem =
            c->opt->precision == LOOM_EST_FP16 || c->opt->precision == LOOM_EST_BF16 ? 2 : 4;
        res->opt_bytes = (double)res->params * per * elem;
    }
}

/* The optimizer's time without a calibration: bytes per parameter over
 * bandwidth, plus an overhead per parameter tensor per kernel. */
static double optimizer_roofline(const cost_t *c, const loom_est_result_t *res, size_t ntensors)
{
    const loom_est_device_t *d = c->opt->device;
    double per = c->opt->optimizer == LOOM_EST_ADAM       ? 7
                 : c->opt->optimizer == LOOM_EST_MOMENTUM ? 5
                                                          : 3;
    double elem = c->opt->precision == LOOM_EST_FP16 || c->opt->precision == LOOM_EST_BF16 ? 2 : 4;
    double kernels = c->opt->optimizer == LOOM_EST_ADAM       ? 10
                     : c->opt->optimizer == LOOM_EST_MOMENTUM ? 3
                                                              : 1;
    return (double)res->params * per * elem / d->mem_bandwidth +
           (double)ntensors * kernels * d->op_overhead_s;
}

/* A cost function's fixed part: what it charges whatever the work. */
static double fixed_cost(const loom_est_cost_fn_t *f, double steps, bool strided)
{
    return f->overhead_s + steps * f->step_s + (strided ? f->strided_s : 0);
}

/* One operator's forward and backward time under its class's cost
 * functions (docs/estimate.md, "The calibrated model"); an RNN's input
 * projection under the matmul class when the device has it. The in-step
 * factor K scales the work terms (FLOPs, elements), not the fixed ones: a
 * step finds some operands in cache that the cold microbenchmarks did not,
 * but pays each operator's dispatch as they did. */
static void class_time(cost_t *c, int ni, const loom_est_op_t *op, int cls, bool req, double k,
                       double *tf, double *tb)
{
    const loom_est_device_t *d = c->opt->device;
    double hscale = c->opt->precision != LOOM_EST_FP32 ? d->flops_half / d->flops_fp32 : 1;
    feat_t f = op_features(c, ni, cls, op->min_dim);
    double es = n_esize(c, ni) / 4.0; /* element terms scale with the element size */
    bool rnn = cls == LOOM_EST_CL_LSTM || cls == LOOM_EST_CL_GRU;
    bool dw = cls == LOOM_EST_CL_DWCONV || cls == LOOM_EST_CL_DWCONV5 || cls == LOOM_EST_CL_DWCONV7;
    bool mx = cls == LOOM_EST_CL_CONV || cls == LOOM_EST_CL_CONV1X1 || dw ||
              cls == LOOM_EST_CL_MATMUL || cls == LOOM_EST_CL_BMM || rnn;
    double fl = mx ? op->fwd_flops / hscale : 0, bl = mx ? op->bwd_flops / hscale : 0;
    const loom_est_cost_fn_t *mm = d->cls[LOOM_EST_CL_MATMUL];
    double pf = 0, pb = 0, xf = 0, xb = 0; /* the RNN projection's time; the fixed parts */
    if (rnn && mm[0].set && fl > 0) {
        rnn_proj_t p = rnn_projection(c, &c->m->n[ni]);
        double pfl = fmin(p.flops / hscale, fl), rec = fl - pfl;
        double pbl = fmax(bl - 2 * rec, 0); /* flops_pass: the recurrence's is 2 x rec */
        pf = loom_est_cost_eval(&mm[0], pfl, p.d, p.el * es, 0, false);
        xf = fixed_cost(&mm[0], 0, false);
        if (req && mm[1].set) {
            pb = loom_est_cost_eval(&mm[1], pbl, p.d, p.el * es, 0, false);
            xb = fixed_cost(&mm[1], 0, false);
        }
        fl = rec;
        bl -= pbl;
    }
    const loom_est_cost_fn_t *fw = &d->cls[cls][0], *bw = &d->cls[cls][1];
    *tf = pf + loom_est_cost_eval(fw, fl, f.d, f.el_f * es, f.steps, f.strided);
    xf += fixed_cost(fw, f.steps, f.strided);
    *tf = xf + k * (*tf - xf);
    *tb = 0;
    if (req && bw->set) {
        *tb = pb + loom_est_cost_eval(bw, bl, f.d, f.el_b * es, f.steps, f.strided);
        xb += fixed_cost(bw, f.steps, f.strided);
        *tb = xb + k * (*tb - xb);
    } else if (req) {
        *tb = *tf; /* no backward calibration: as much again */
    }
}

static int step_time(cost_t *c, loom_est_result_t *res)
{
    loom_est_model_t *m = c->m;
    const loom_est_device_t *d = c->opt->device;
    bool train = c->opt->train;
    int rc = LOOM_OK;
    size_t nn = m->nn ? m->nn : 1;
    int *opnode = calloc(c->norder + 1, sizeof *opnode);
    bool *opreq = calloc(c->norder + 1, sizeof *opreq);
    double *ffwd = calloc(nn, sizeof *ffwd), *fbwd = calloc(nn, sizeof *fbwd);
    double floss = 0, fopt = 0;
    if (!opnode || !opreq || !ffwd || !fbwd) {
        rc = loom_err_set(c->err, LOOM_ENOMEM, "out of memory");
        goto out;
    }
    flops_pass(c, res, opnode, opreq);
    res->opt_flops =
        train ? (double)res->params * (c->opt->optimizer == LOOM_EST_ADAM ? 12 : 3) : 0;
    if (!d)
        goto out;
    if (c->log && (rc = replay_heap(c, ffwd, fbwd, &floss, &fopt)))
        goto out;
    double pf = c->log ? d->page_fault_s / 4096 : 0; /* per fresh byte */
    /* operators cost more inside a training step than in the isolated
     * microbenchmarks their classes come from: the device's in_step_factor
     * (calibrated on whole steps of models outside the zoo) scales the
     * operator, loss and optimizer terms, not page faults or the fixed cost */
    double k = train && d->has_classes && d->in_step_factor > 0 ? d->in_step_factor : 1;
    for (size_t i = 0; i < res->nops; i++) {
        loom_est_op_t *op = &res->ops[i];
        int ni = opnode[i];
        double tf, tb;
        roofline_op(c, op, &tf, &tb);
        int cls = d->has_classes ? op_class(c, ni) : -1;
        if (cls >= 0 && d->cls[cls][0].set) {
            op->cls = cls;
            class_time(c, ni, op, cls, opreq[i], k, &tf, &tb); /* scaled there */
        } else {
            tf *= k;
            tb *= k;
        }
        if (c->gkind[ni] == G_RNN_WEIGHT)
            tf = tb = 0; /* not run by PyTorch (rnn_weight_layout) */
        op->fresh_bytes = (uint64_t)(ffwd[ni] + fbwd[ni]);
        tf += ffwd[ni] * pf;
        tb += fbwd[ni] * pf;
        res->fault_time_s += (ffwd[ni] + fbwd[ni]) * pf;
        res->fresh_bytes += op->fresh_bytes;
        op->time_s = tf + tb;
        res->fwd_time_s += tf;
        res->bwd_time_s += tb;
    }
    if (train && d->has_classes && d->cls[LOOM_EST_CL_LOSS][0].set) {
        /* the loss: cross-entropy over the outputs (a pseudo-operator) */
        double E = 0;
        for (size_t i = 0; i < m->nouts; i++)
            E += nel(c, m->graph_outputs[i]);
        loom_est_op_t *op = &res->ops[res->nops++];
        op->name = "loss";
        op->op_type = "CrossEntropy(loss)";
        op->cls = LOOM_EST_CL_LOSS;
        op->fwd_flops = 5 * E;
        op->bwd_flops = 10 * E;
        double tf = loom_est_cost_eval(&d->cls[LOOM_EST_CL_LOSS][0], 0, 0, E, 0, false);
        double tb = d->cls[LOOM_EST_CL_LOSS][1].set
                        ? loom_est_cost_eval(&d->cls[LOOM_EST_CL_LOSS][1], 0, 0, E, 0, false)
                        : tf;
        tf *= k;
        tb *= k;
        op->fresh_bytes = (uint64_t)floss;
        tb += floss * pf;
        op->time_s = tf + tb;
        res->fwd_time_s += tf;
        res->bwd_time_s += tb;
    }
    res->fault_time_s += floss * pf;
    res->fresh_bytes += (uint64_t)floss;
    if (train) {
        size_t ntensors = 0;
        const loom_est_opt_cost_t *oc = &d->opt[c->opt->optimizer];
        double t = 0;
        for (size_t i = 0; i < m->nt; i++) {
            if (!c->param[i])
                continue;
            ntensors++;
            double e = (double)numel(&m->t[i]);
            if (oc->set)
                t += oc->tensor_s + e * loom_est_curve_eval(&oc->elem_s, e);
        }
        res->opt_time_s = k * (oc->set ? t : optimizer_roofline(c, res, ntensors));
        res->opt_time_s += fopt * pf;
        res->fault_time_s += fopt * pf;
        res->fresh_bytes += (uint64_t)fopt;
        res->fixed_time_s = d->has_classes ? d->step_overhead_s : 0;
    }
    res->step_time_s = res->fwd_time_s + res->bwd_time_s + res->opt_time_s + res->fixed_time_s;
out:
    free(opnode);
    free(opreq);
    free(ffwd);
    free(fbwd);
    return rc;
}

int loom_est_run(loom_est_model_t *m, const loom_est_options_t *opt, loom_est_result_t *res,
                 loom_err_t *err)
{
    memset(res, 0, sizeof *res);
    if (opt->batch < 0 || opt->batch > ((int64_t)1 << 24))
        return loom_err_set(err, LOOM_EINVAL, "batch %lld is out of range [1, 2^24]",
                            (long long)opt->batch);
    int rc = loom_est_infer_shapes(m, opt->batch, err);
    if (rc)
        return rc;
    cost_t c = {.m = m, .opt = opt, .err = err};
    uint64_t *extra = NULL;
    if ((rc = cost_init(&c)))
        goto out;
    classify(&c);
    fuse(&c);
    rnn_weight_layout(&c);
    propagate(&c);
    lifetimes(&c);
    res->ops = calloc(c.norder + 1, sizeof *res->ops); /* + the loss */
    extra = calloc(m->nn ? m->nn : 1, sizeof *extra);
    if (!res->ops || !extra) {
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < m->nt; i++)
        if (m->t[i].is_input)
            res->batch = m->t[i].dims[0];
    c.log = opt->device && opt->device->allocator == LOOM_EST_ALLOC_MALLOC &&
            opt->device->page_fault_s > 0;
    c.scratch = opt->device && opt->device->allocator == LOOM_EST_ALLOC_MALLOC;
    c.cpu = c.scratch;
    if ((rc = cost_walk(&c, res, extra)))
        goto out;
    if ((rc = step_time(&c, res)))
        goto out;
    loom_est_memory_t *mem = &res->mem;
    mem->weights = c.at_peak[CAT_WEIGHT];
    mem->gradients = c.at_peak[CAT_GRAD];
    mem->optimizer_state = c.at_peak[CAT_OPT];
    mem->activations = c.at_peak[CAT_ACT];
    mem->temporaries = c.at_peak[CAT_TEMP];
    mem->peak_live = c.peak_total;
    mem->peak_reserved = loom_est_alloc_peak_reserved(c.alloc);
    if (mem->peak_reserved < mem->peak_live)
        mem->peak_reserved = mem->peak_live;
    mem->allocator_slack = mem->peak_reserved - mem->peak_live;
    mem->context = (opt->device ? opt->device->context_bytes : 0) + onednn_cache_bytes(&c);
    mem->total = mem->peak_reserved + mem->context;
out:
    free(extra);
    cost_free(&c);
    if (rc)
        loom_est_result_free(res);
    return rc;
}

void loom_est_result_free(loom_est_result_t *r)
{
    if (!r)
        return;
    free(r->ops);
    r->ops = NULL;
    r->nops = 0;
}
