/* Shape inference for the operators the model zoo uses, in topological
 * order, with constant folding of the small integer "shape subgraphs" that
 * exported transformers carry (Shape -> Gather -> Unsqueeze -> Concat ->
 * Reshape, Where(Equal(...)) for expand, Range for positions). Once the
 * batch is fixed every shape is concrete, so every such subgraph folds.
 *
 * A node whose operator has no rule here is an error naming the node and
 * the operator; nothing is skipped. Shape mismatches (a Conv whose channels
 * do not match its weight, a MatMul with unequal inner dimensions, shapes
 * that do not broadcast, a Reshape that changes the element count) are
 * errors naming the node.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/est.h"

typedef struct ctx {
    loom_est_model_t *m;
    loom_est_node_t *n;
    loom_err_t *err;
} ctx_t;

static int fail(ctx_t *c, const char *fmt, ...) LOOM_PRINTF(2, 3);
static int fail(ctx_t *c, const char *fmt, ...)
{
    char what[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return loom_err_set(c->err, LOOM_EINVAL, "%s: node '%s' (%s): %s", c->m->source,
                        *c->n->name ? c->n->name : "(unnamed)", c->n->op, what);
}

static loom_est_tensor_t *in(ctx_t *c, size_t i)
{
    if (i >= c->n->nin || c->n->in[i] < 0)
        return NULL;
    return &c->m->t[c->n->in[i]];
}

static loom_est_tensor_t *out(ctx_t *c, size_t i)
{
    if (i >= c->n->nout || c->n->out[i] < 0)
        return NULL;
    return &c->m->t[c->n->out[i]];
}

static int64_t attr_i(const loom_est_node_t *n, const char *name, int64_t def)
{
    const loom_est_attr_t *a = loom_est_attr(n, name);
    return a && a->has_i ? a->i : def;
}

static bool is_int_type(int d)
{
    return d != LOOM_EST_T_FLOAT && d != LOOM_EST_T_DOUBLE && d != LOOM_EST_T_FLOAT16 &&
           d != LOOM_EST_T_BFLOAT16 && d != LOOM_EST_T_UNDEF;
}

static double val(const loom_est_tensor_t *t, size_t i)
{
    if (t->nval == 0 || (t->nval > 1 && i >= t->nval))
        return 0; /* callers check counts; an empty constant reads as 0 */
    if (t->ival)
        return (double)t->ival[t->nval == 1 ? 0 : i];
    return t->fval[t->nval == 1 ? 0 : i];
}

/* double -> int64 without undefined behaviour: NaN is 0, out of range
 * clamps (folded values come from untrusted files). */
static int64_t to_i64(double v)
{
    if (v != v)
        return 0;
    if (v >= 9.2e18)
        return INT64_MAX;
    if (v <= -9.2e18)
        return INT64_MIN;
    return (int64_t)v;
}

static int set_shape(ctx_t *c, loom_est_tensor_t *t, int rank, const int64_t *dims, int dtype)
{
    if (!t)
        return LOOM_OK;
    if (rank < 0 || rank > LOOM_EST_MAX_RANK)
        return fail(c, "output '%s' would have rank %d (at most %d)", t->name, rank,
                    LOOM_EST_MAX_RANK);
    int64_t numel = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return fail(c, "output '%s' dimension %d is negative (%lld)", t->name, i,
                        (long long)dims[i]);
        if (dims[i] && numel > ((int64_t)1 << 48) / dims[i])
            return fail(c, "output '%s' would have more than 2^48 elements", t->name);
        numel *= dims[i];
        t->dims[i] = dims[i];
    }
    t->rank = rank;
    t->dtype = dtype;
    t->inferred = true;
    return LOOM_OK;
}

static int same_as(ctx_t *c, loom_est_tensor_t *o, const loom_est_tensor_t *x)
{
    return set_shape(c, o, x->rank, x->dims, x->dtype);
}

/* Allocates value storage for a folded output. */
static int alloc_vals(ctx_t *c, loom_est_tensor_t *o)
{
    int64_t n = loom_est_numel(o);
    if (n < 0 || n > EST_MAX_FOLD)
        return LOOM_OK; /* too big to fold: fine, just not constant */
    free(o->ival);
    free(o->fval);
    o->ival = NULL;
    o->fval = NULL;
    if (is_int_type(o->dtype))
        o->ival = calloc((size_t)(n ? n : 1), sizeof *o->ival);
    else
        o->fval = calloc((size_t)(n ? n : 1), sizeof *o->fval);
    if (!o->ival && !o->fval)
        return loom_err_set(c->err, LOOM_ENOMEM, "out of memory");
    o->nval = (size_t)n;
    o->has_val = true;
    return LOOM_OK;
}

static void put(loom_est_tensor_t *o, size_t i, double v)
{
    if (o->ival)
        o->ival[i] = to_i64(v);
    else
        o->fval[i] = v;
}

static bool all_const(ctx_t *c)
{
    for (size_t i = 0; i < c->n->nin; i++) {
        loom_est_tensor_t *t = in(c, i);
        if (t && !t->has_val)
            return false;
    }
    return true;
}

/* numpy broadcasting of a and b into out (rank returned). */
static int broadcast(ctx_t *c, const loom_est_tensor_t *a, const loom_est_tensor_t *b,
                     int64_t *dims)
{
    int r = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char sa[160], sb[160];
            size_t la = 0, lb = 0;
            for (int k = 0; k < a->rank; k++)
                la += (size_t)snprintf(sa + la, sizeof sa - la > 0 ? sizeof sa - la : 0, "%s%lld",
                                       k ? "x" : "", (long long)a->dims[k]);
            for (int k = 0; k < b->rank; k++)
                lb += (size_t)snprintf(sb + lb, sizeof sb - lb > 0 ? sizeof sb - lb : 0, "%s%lld",
                                       k ? "x" : "", (long long)b->dims[k]);
            sa[sizeof sa - 1] = sb[sizeof sb - 1] = '\0';
            return fail(c, "shapes [%s] and [%s] do not broadcast", la ? sa : "scalar",
                        lb ? sb : "scalar");
        }
        dims[i] = da == 1 ? db : da;
    }
    return r;
}

/* Flat index into t for output position idx of shape (r, dims). */
static size_t bindex(const loom_est_tensor_t *t, int r, const int64_t *dims, size_t idx)
{
    size_t off = 0, stride = 1;
    for (int i = r - 1; i >= 0; i--) {
        size_t coord = idx % (size_t)dims[i];
        idx /= (size_t)dims[i];
        int ti = i - (r - t->rank);
        if (ti < 0)
            continue;
        if (t->dims[ti] != 1)
            off += coord * stride;
        stride *= (size_t)t->dims[ti];
    }
    return off;
}

#define LIM ((int64_t)1 << 31) /* bound of kernel, stride, dilation, pads attributes */

static int64_t norm_axis(int64_t axis, int rank)
{
    return axis < 0 ? axis + rank : axis;
}

static int check_axis(ctx_t *c, int64_t *axis, int rank, bool inclusive)
{
    int64_t a = norm_axis(*axis, rank + (inclusive ? 1 : 0));
    if (a < 0 || a >= rank + (inclusive ? 1 : 0))
        return fail(c, "axis %lld is out of range for rank %d", (long long)*axis, rank);
    *axis = a;
    return LOOM_OK;
}

/* Integer list from an attribute or (opset >= 13) a constant input. */
static int int_list(ctx_t *c, const char *attr, size_t input, int64_t *vals, int *n, bool *found)
{
    *found = false;
    *n = 0;
    const loom_est_attr_t *a = loom_est_attr(c->n, attr);
    if (a && a->nints) {
        if (a->nints > LOOM_EST_MAX_RANK * 2)
            return fail(c, "attribute %s has %zu values", attr, a->nints);
        for (size_t i = 0; i < a->nints; i++)
            vals[i] = a->ints[i];
        *n = (int)a->nints;
        *found = true;
        return LOOM_OK;
    }
    loom_est_tensor_t *t = in(c, input);
    if (!t)
        return LOOM_OK;
    if (!t->has_val)
        return fail(c, "input %zu ('%s', %s) must be a constant the estimator can fold", input,
                    t->name, attr);
    if (t->nval > LOOM_EST_MAX_RANK * 2)
        return fail(c, "input '%s' has %zu values", t->name, t->nval);
    for (size_t i = 0; i < t->nval; i++)
        vals[i] = to_i64(val(t, i));
    *n = (int)t->nval;
    *found = true;
    return LOOM_OK;
}

/* An integer list attribute as int_list reads it (from the node only);
 * when the node has none, its first `count` values are `dflt`. */
static int int_list_or(ctx_t *c, const char *attr, int64_t *vals, int *n, int count, int64_t dflt)
{
    bool found;
    int rc = int_list(c, attr, 99, vals, n, &found);
    if (rc == LOOM_OK && !found)
        for (int i = 0; i < count; i++)
            vals[i] = dflt;
    return rc;
}

/* A sliding window's strides, dilations (1 by default) and pads (0 by
 * default, two per spatial dim) for convolution and pooling. */
static int window_lists(ctx_t *c, int sp, int64_t *s, int *ns, int64_t *d, int *nd, int64_t *p,
                        int *np)
{
    int rc;
    if ((rc = int_list_or(c, "strides", s, ns, sp, 1)) ||
        (rc = int_list_or(c, "dilations", d, nd, sp, 1)))
        return rc;
    return int_list_or(c, "pads", p, np, 2 * sp, 0);
}

/* ------------------------------------------------------------ operators */

static int op_elementwise(ctx_t *c, int out_dtype)
{
    loom_est_tensor_t *a = in(c, 0);
    int64_t dims[LOOM_EST_MAX_RANK];
    int r = a->rank;
    memcpy(dims, a->dims, sizeof dims);
    loom_est_tensor_t tmp = *a;
    for (size_t i = 1; i < c->n->nin; i++) {
        loom_est_tensor_t *b = in(c, i);
        if (!b)
            continue;
        tmp.rank = r;
        memcpy(tmp.dims, dims, sizeof dims);
        int64_t nd[LOOM_EST_MAX_RANK];
        int nr = broadcast(c, &tmp, b, nd);
        if (nr < 0)
            return nr;
        r = nr;
        memcpy(dims, nd, sizeof dims);
    }
    int dt = out_dtype ? out_dtype : a->dtype;
    if (strcmp(c->n->op, "Where") == 0)
        dt = in(c, 1)->dtype;
    loom_est_tensor_t *o = out(c, 0);
    int rc = set_shape(c, o, r, dims, dt);
    if (rc || !all_const(c))
        return rc;
    if ((rc = alloc_vals(c, o)) || !o->has_val)
        return rc;
    const char *op = c->n->op;
    for (size_t i = 0; i < o->nval; i++) {
        double x = val(a, bindex(a, r, dims, i));
        double y = c->n->nin > 1 && in(c, 1) ? val(in(c, 1), bindex(in(c, 1), r, dims, i)) : 0;
        double v;
        if (!strcmp(op, "Add"))
            v = x + y;
        else if (!strcmp(op, "Sub"))
            v = x - y;
        else if (!strcmp(op, "Mul"))
            v = x * y;
        else if (!strcmp(op, "Div")) {
            if (y == 0 && is_int_type(o->dtype))
                return fail(c, "integer division by zero while folding constants");
            if (is_int_type(o->dtype)) {
                int64_t xi = to_i64(x), yi = to_i64(y);
                v = yi == -1 ? -(double)xi : (double)(xi / yi);
            } else {
                v = x / y;
            }
        } else if (!strcmp(op, "Equal"))
            v = x == y;
        else if (!strcmp(op, "Less"))
            v = x < y;
        else if (!strcmp(op, "Greater"))
            v = x > y;
        else if (!strcmp(op, "Pow"))
            v = pow(x, y);
        else if (!strcmp(op, "Where")) {
            double z = val(in(c, 2), bindex(in(c, 2), r, dims, i));
            v = x != 0 ? y : z;
        } else if (!strcmp(op, "Cast"))
            v = x;
        else if (!strcmp(op, "Neg"))
            v = -x;
        else if (!strcmp(op, "Sqrt"))
            v = sqrt(x);
        else if (!strcmp(op, "Identity"))
            v = x;
        else if (!strcmp(op, "Not"))
            v = x == 0;
        else if (!strcmp(op, "Abs"))
            v = fabs(x);
        else if (!strcmp(op, "Mod")) { /* fmod=0: the sign of the divisor, as Python's % */
            if (y == 0 && is_int_type(o->dtype))
                return fail(c, "integer modulo by zero while folding constants");
            bool c_style = attr_i(c->n, "fmod", 0) == 1;
            v = fmod(x, y);
            if (!c_style && v != 0 && ((v < 0) != (y < 0)))
                v += y;
        } else if (!strcmp(op, "Max"))
            v = x > y ? x : y;
        else if (!strcmp(op, "Min"))
            v = x < y ? x : y;
        else {
            free(o->ival);
            free(o->fval);
            o->ival = NULL;
            o->fval = NULL;
            o->has_val = false;
            o->nval = 0;
            return LOOM_OK; /* a value-level op we do not fold: shape only */
        }
        put(o, i, v);
    }
    return LOOM_OK;
}

static int op_conv(ctx_t *c, bool transpose)
{
    loom_est_tensor_t *x = in(c, 0), *w = in(c, 1);
    if (!w)
        return fail(c, "missing weight input");
    if (x->rank < 3 || w->rank != x->rank)
        return fail(c, "input rank %d and weight rank %d (expected equal, >= 3)", x->rank, w->rank);
    int sp = x->rank - 2;
    int64_t group = attr_i(c->n, "group", 1);
    if (group < 1)
        return fail(c, "group %lld < 1", (long long)group);
    if (!transpose && x->dims[1] != w->dims[1] * group)
        return fail(c, "input has %lld channels, weight expects %lld x group %lld",
                    (long long)x->dims[1], (long long)w->dims[1], (long long)group);
    if (transpose && x->dims[1] != w->dims[0])
        return fail(c, "input has %lld channels, weight expects %lld", (long long)x->dims[1],
                    (long long)w->dims[0]);
    int64_t k[LOOM_EST_MAX_RANK], s[LOOM_EST_MAX_RANK], d[LOOM_EST_MAX_RANK],
        p[2 * LOOM_EST_MAX_RANK], op_[LOOM_EST_MAX_RANK];
    int nk, ns, nd, np, nop;
    bool f;
    int rc;
    if ((rc = int_list(c, "kernel_shape", 99, k, &nk, &f)))
        return rc;
    if (!f) {
        for (int i = 0; i < sp; i++)
            k[i] = w->dims[2 + i];
        nk = sp;
    }
    if ((rc = window_lists(c, sp, s, &ns, d, &nd, p, &np)) ||
        (rc = int_list_or(c, "output_padding", op_, &nop, sp, 0)))
        return rc;
    if (nk != sp || (ns && ns != sp) || (nd && nd != sp) || (np && np != 2 * sp))
        return fail(c, "kernel_shape/strides/dilations/pads do not match %d spatial dims", sp);
    const loom_est_attr_t *ap = loom_est_attr(c->n, "auto_pad");
    const char *auto_pad = ap && ap->s ? ap->s : "NOTSET";
    int64_t dims[LOOM_EST_MAX_RANK];
    dims[0] = x->dims[0];
    dims[1] = transpose ? w->dims[1] * group : w->dims[0];
    for (int i = 0; i < sp; i++) {
        if (s[i] < 1 || d[i] < 1 || k[i] < 1 || s[i] > LIM || d[i] > LIM || k[i] > LIM)
            return fail(c, "kernel, stride and dilation must be in [1, 2^31]");
        if (p[i] < 0 || p[i + sp] < 0 || p[i] > LIM || p[i + sp] > LIM || op_[i] < 0 ||
            op_[i] > LIM)
            return fail(c, "pads and output_padding must be in [0, 2^31]");
        int64_t in_ = x->dims[2 + i], ek = d[i] * (k[i] - 1) + 1;
        if (transpose) {
            if ((double)s[i] * (double)in_ > (double)((int64_t)1 << 48))
                return fail(c, "spatial dim %d: output larger than 2^48", i);
            dims[2 + i] = s[i] * (in_ - 1) + op_[i] + ek - p[i] - p[i + sp];
        } else if (!strcmp(auto_pad, "SAME_UPPER") || !strcmp(auto_pad, "SAME_LOWER")) {
            dims[2 + i] = (in_ + s[i] - 1) / s[i];
        } else {
            int64_t padded = in_ + (strcmp(auto_pad, "VALID") ? p[i] + p[i + sp] : 0);
            if (padded < ek)
                return fail(c,
                            "spatial dim %d: input %lld (padded %lld) is smaller than the "
                            "kernel extent %lld",
                            i, (long long)in_, (long long)padded, (long long)ek);
            dims[2 + i] = (padded - ek) / s[i] + 1;
        }
    }
    return set_shape(c, out(c, 0), x->rank, dims, x->dtype);
}

static int op_pool(ctx_t *c)
{
    loom_est_tensor_t *x = in(c, 0);
    if (x->rank < 3)
        return fail(c, "input rank %d < 3", x->rank);
    int sp = x->rank - 2;
    int64_t k[LOOM_EST_MAX_RANK], s[LOOM_EST_MAX_RANK], d[LOOM_EST_MAX_RANK],
        p[2 * LOOM_EST_MAX_RANK];
    int nk, ns, nd, np;
    bool f;
    int rc;
    if ((rc = int_list(c, "kernel_shape", 99, k, &nk, &f)))
        return rc;
    if (!f || nk != sp)
        return fail(c, "kernel_shape must have %d values", sp);
    if ((rc = window_lists(c, sp, s, &ns, d, &nd, p, &np)))
        return rc;
    int64_t ceil_mode = attr_i(c->n, "ceil_mode", 0);
    int64_t dims[LOOM_EST_MAX_RANK];
    dims[0] = x->dims[0];
    dims[1] = x->dims[1];
    for (int i = 0; i < sp; i++) {
        if (s[i] < 1 || k[i] < 1 || d[i] < 1 || s[i] > LIM || k[i] > LIM || d[i] > LIM)
            return fail(c, "kernel, stride and dilation must be in [1, 2^31]");
        if (p[i] < 0 || p[i + sp] < 0 || p[i] > LIM || p[i + sp] > LIM)
            return fail(c, "pads must be in [0, 2^31]");
        int64_t ek = d[i] * (k[i] - 1) + 1, padded = x->dims[2 + i] + p[i] + p[i + sp];
        if (padded < ek)
            return fail(c, "spatial dim %d: input %lld is smaller than the kernel %lld", i,
                        (long long)x->dims[2 + i], (long long)ek);
        int64_t num = padded - ek;
        dims[2 + i] = (ceil_mode ? (num + s[i] - 1) / s[i] : num / s[i]) + 1;
    }
    if ((rc = set_shape(c, out(c, 0), x->rank, dims, x->dtype)))
        return rc;
    return set_shape(c, out(c, 1), x->rank, dims, LOOM_EST_T_INT64);
}

static int op_matmul(ctx_t *c)
{
    loom_est_tensor_t *a = in(c, 0), *b = in(c, 1);
    if (a->rank < 1 || b->rank < 1)
        return fail(c, "MatMul of a scalar");
    int64_t ka = a->dims[a->rank - 1], kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    if (ka != kb)
        return fail(c, "inner dimensions differ: %lld and %lld", (long long)ka, (long long)kb);
    loom_est_tensor_t ba = *a, bb = *b; /* batch parts */
    ba.rank = a->rank > 2 ? a->rank - 2 : 0;
    bb.rank = b->rank > 2 ? b->rank - 2 : 0;
    int64_t dims[LOOM_EST_MAX_RANK];
    int r = broadcast(c, &ba, &bb, dims);
    if (r < 0)
        return r;
    if (a->rank >= 2)
        dims[r++] = a->dims[a->rank - 2];
    if (b->rank >= 2)
        dims[r++] = b->dims[b->rank - 1];
    return set_shape(c, out(c, 0), r, dims, a->dtype);
}

static int op_gemm(ctx_t *c)
{
    loom_est_tensor_t *a = in(c, 0), *b = in(c, 1);
    if (a->rank != 2 || b->rank != 2)
        return fail(c, "A and B must be matrices (ranks %d, %d)", a->rank, b->rank);
    bool ta = attr_i(c->n, "transA", 0), tb = attr_i(c->n, "transB", 0);
    int64_t m = ta ? a->dims[1] : a->dims[0], ka = ta ? a->dims[0] : a->dims[1];
    int64_t kb = tb ? b->dims[1] : b->dims[0], nn = tb ? b->dims[0] : b->dims[1];
    if (ka != kb)
        return fail(c, "inner dimensions differ: %lld and %lld", (long long)ka, (long long)kb);
    int64_t dims[2] = {m, nn};
    return set_shape(c, out(c, 0), 2, dims, a->dtype);
}

static int op_reshape(ctx_t *c)
{
    loom_est_tensor_t *x = in(c, 0), *s = in(c, 1);
    if (!s || !s->has_val)
        return fail(c, "the target shape must be a constant the estimator can fold");
    if (s->nval > LOOM_EST_MAX_RANK)
        return fail(c, "target shape has %zu dimensions", s->nval);
    int64_t dims[LOOM_EST_MAX_RANK], known = 1, total = loom_est_numel(x);
    int neg = -1;
    bool allowzero = attr_i(c->n, "allowzero", 0);
    for (size_t i = 0; i < s->nval; i++) {
        int64_t v = to_i64(val(s, i));
        if (v == 0 && !allowzero) {
            if ((int)i >= x->rank)
                return fail(c, "shape[%zu] = 0 copies a dimension the input lacks", i);
            v = x->dims[i];
        }
        if (v == -1) {
            if (neg >= 0)
                return fail(c, "more than one -1 in the target shape");
            neg = (int)i;
            dims[i] = 1;
            continue;
        }
        if (v < 0 || v > ((int64_t)1 << 40))
            return fail(c, "shape[%zu] = %lld is out of range", i, (long long)v);
        if (v && known > ((int64_t)1 << 48) / v)
            return fail(c, "target shape has more than 2^48 elements");
        dims[i] = v;
        known *= v;
    }
    if (neg >= 0) {
        if (known == 0 || total % known)
            return fail(c, "cannot infer -1: %lld elements into blocks of %lld", (long long)total,
                        (long long)known);
        dims[neg] = total / known;
    } else if (known != total) {
        return fail(c, "target shape has %lld elements, input '%s' has %lld", (long long)known,
                    x->name, (long long)total);
    }
    int rc = set_shape(c, out(c, 0), (int)s->nval, dims, x->dtype);
    if (!rc && x->has_val) {
        loom_est_tensor_t *o = out(c, 0);
        if (!(rc = alloc_vals(c, o)) && o->has_val)
            for (size_t i = 0; i < o->nval; i++)
                put(o, i, val(x, i));
    }
    return rc;
}

static int op_transpose(ctx_t *c)
{
    loom_est_tensor_t *x = in(c, 0);
    int64_t perm[2 * LOOM_EST_MAX_RANK], dims[LOOM_EST_MAX_RANK];
    int np;
    bool f;
    int rc = int_list(c, "perm", 99, perm, &np, &f);
    if (rc)
        return rc;
    if (!f) {
        np = x->rank;
        for (int i = 0; i < np; i++)
            perm[i] = x->rank - 1 - i;
    }
    if (np != x->rank)
        return fail(c, "perm has %d entries for rank %d", np, x->rank);
    unsigned seen = 0;
    for (int i = 0; i < np; i++) {
        if (perm[i] < 0 || perm[i] >= x->rank || (seen & (1u << perm[i])))
            return fail(c, "perm is not a permutation of 0..%d", x->rank - 1);
        seen |= 1u << perm[i];
        dims[i] = x->dims[perm[i]];
    }
    loom_est_tensor_t *o = out(c, 0);
    if ((rc = set_shape(c, o, x->rank, dims, x->dtype)) || !x->has_val)
        return rc;
    if ((rc = alloc_vals(c, o)) || !o->has_val)
        return rc;
    size_t xstride[LOOM_EST_MAX_RANK]; /* fold a constant (shape arithmetic: pads reversed) */
    for (int d = x->rank - 1, st = 1; d >= 0; st *= (int)x->dims[d], d--)
        xstride[d] = (size_t)st;
    for (size_t i = 0; i < o->nval; i++) {
        size_t rem = i, off = 0;
        for (int d = x->rank - 1; d >= 0; d--) {
            // cppcheck-suppress uninitvar ; perm[d] < rank, checked above, and [0, rank) is set
            off += rem % (size_t)dims[d] * xstride[perm[d]];
            rem /= (size_t)dims[d];
        }
        put(o, i, val(x, off));
    }
    return LOOM_OK;
}

static int op_concat(ctx_t *c)
{
    loom_est_tensor_t *a = in(c, 0);
    int64_t axis = attr_i(c->n, "axis", 0), dims[LOOM_EST_MAX_RANK];
    int rc = check_axis(c, &axis, a->rank, false);
    if (rc)
        return rc;
    memcpy(dims, a->dims, sizeof dims);
    dims[axis] = 0;
    for (size_t i = 0; i < c->n->nin; i++) {
        loom_est_tensor_t *t = in(c, i);
        if (!t)
            continue;
        if (t->rank != a->rank)
            return fail(c, "input %zu has rank %d, input 0 rank %d", i, t->rank, a->rank);
        for (int k = 0; k < a->rank; k++)
            if (k != axis && t->dims[k] != a->dims[k])
                return fail(c, "input %zu dimension %d is %lld, input 0 has %lld", i, k,
                            (long long)t->dims[k], (long long)a->dims[k]);
        dims[axis] += t->dims[axis];
    }
    loom_est_tensor_t *o = out(c, 0);
    if ((rc = set_shape(c, o, a->rank, dims, a->dtype)) || !all_const(c))
        return rc;
    if ((rc = alloc_vals(c, o)) || !o->has_val)
        return rc;
    /* fold: outer x (sum of inner blocks) */
    size_t outer = 1, inner = 1, pos = 0;
    for (int k = 0; k < axis; k++)
        outer *= (size_t)dims[k];
    for (int k = (int)axis + 1; k < a->rank; k++)
        inner *= (size_t)dims[k];
    for (size_t o_ = 0; o_ < outer; o_++)
        for (size_t i = 0; i < c->n->nin; i++) {
            loom_est_tensor_t *t = in(c, i);
            if (!t)
                continue;
            size_t blk = (size_t)t->dims[axis] * inner;
            for (size_t j = 0; j < blk; j++)
                put(o, pos++, val(t, o_ * blk + j));
        }
    return LOOM_OK;
}

static int op_gather(ctx_t *c)
{
    loom_est_tensor_t *x = in(c, 0), *idx = in(c, 1);
    int64_t axis = attr_i(c->n, "axis", 0), dims[LOOM_EST_MAX_RANK];
    int rc = check_axis(c, &axis, x->rank, false);
    if (rc)
        return rc;
    int r = 0;
    for (int i = 0; i < axis; i++)
        dims[r++] = x->dims[i];
    if (x->rank - 1 + idx->rank > LOOM_EST_MAX_RANK)
        return fail(c, "result rank exceeds %d", LOOM_EST_MAX_RANK);
    for (int i = 0; i < idx->rank; i++)
        dims[r++] = idx->dims[i];
    for (int i = (int)axis + 1; i < x->rank; i++)
        dims[r++] = x->dims[i];
    loom_est_tensor_t *o = out(c, 0);
    if ((rc = set_shape(c, o, r, dims, x->dtype)) || !all_const(c))
        return rc;
    if ((rc = alloc_vals(c, o)) || !o->has_val)
        return rc;
    size_t outer = 1, inner = 1, ni = (size_t)loom_est_numel(idx);
    for (int k = 0; k < axis; k++)
        outer *= (size_t)x->dims[k];
    for (int k = (int)axis + 1; k < x->rank; k++)
        inner *= (size_t)x->dims[k];
    size_t pos = 0;
    for (size_t o_ = 0; o_ < outer; o_++)
        for (size_t j = 0; j < ni; j++) {
            int64_t k = to_i64(val(idx, j));
            if (k < 0)
                k += x->dims[axis];
            if (k < 0 || k >= x->dims[axis])
                return fail(c, "index %lld out of range [0, %lld)", (long long)val(idx, j),
                            (long long)x->dims[axis]);
            for (size_t in_ = 0; in_ < inner; in_++)
                put(o, pos++, val(x, (o_ * (size_t)x->dims[axis] + (size_t)k) * inner + in_));
        }
    return LOOM_OK;
}

static int op_unsqueeze(ctx_t *c, bool squeeze)
{
    loom_est_tensor_t *x = in(c, 0);
    int64_t axes[2 * LOOM_EST_MAX_RANK], dims[LOOM_EST_MAX_RANK];
    int na;
    bool f;
    int rc = int_list(c, "axes", 1, axes, &na, &f);
    if (rc)
        return rc;
    int r;
    if (squeeze) {
        unsigned drop = 0;
        if (!f) {
            for (int i = 0; i < x->rank; i++)
                if (x->dims[i] == 1)
                    drop |= 1u << i;
        }
        for (int i = 0; i < na; i++) {
            if ((rc = check_axis(c, &axes[i], x->rank, false)))
                return rc;
            if (x->dims[axes[i]] != 1)
                return fail(c, "cannot squeeze axis %lld of size %lld", (long long)axes[i],
                            (long long)x->dims[axes[i]]);
            drop |= 1u << axes[i];
        }
        r = 0;
        for (int i = 0; i < x->rank; i++)
            if (!(drop & (1u << i)))
                dims[r++] = x->dims[i];
    } else {
        if (!f)
            return fail(c, "missing axes");
        r = x->rank + na;
        if (r > LOOM_EST_MAX_RANK)
            return fail(c, "result rank %d exceeds %d", r, LOOM_EST_MAX_RANK);
        unsigned add = 0;
        for (int i = 0; i < na; i++) {
            int64_t a = norm_axis(axes[i], r);
            if (a < 0 || a >= r || (add & (1u << a)))
                return fail(c, "axis %lld is out of range or repeated", (long long)axes[i]);
            add |= 1u << a;
        }
        for (int i = 0, k = 0; i < r; i++)
            dims[i] = (add & (1u << i)) ? 1 : x->dims[k++];
    }
    loom_est_tensor_t *o = out(c, 0);
    if ((rc = set_shape(c, o, r, dims, x->dtype)) || !x->has_val)
        return rc;
    if ((rc = alloc_vals(c, o)) || !o->has_val)
        return rc;
    for (size_t i = 0; i < o->nval; i++)
        put(o, i, val(x, i));
    return LOOM_OK;
}

static int op_slice(ctx_t *c)
{
    loom_est_tensor_t *x = in(c, 0);
    int64_t st[2 * LOOM_EST_MAX_RANK], en[2 * LOOM_EST_MAX_RANK], ax[2 * LOOM_EST_MAX_RANK],
        sp[2 * LOOM_EST_MAX_RANK];
    int ns, ne, na, np;
    bool f;
    int rc;
    if ((rc = int_list(c, "starts", 1, st, &ns, &f)) || (rc = int_list(c, "ends", 2, en, &ne, &f)))
        return rc;
    if ((rc = int_list(c, "axes", 3, ax, &na, &f)))
        return rc;
    if (!f) {
        na = ns;
        for (int i = 0; i < na; i++)
            ax[i] = i;
    }
    if ((rc = int_list(c, "steps", 4, sp, &np, &f)))
        return rc;
    if (!f) {
        np = ns;
        for (int i = 0; i < np; i++)
            sp[i] = 1;
    }
    if (ns != ne || na != ns || np != ns)
        return fail(c, "starts, ends, axes and steps differ in length");
    int64_t dims[LOOM_EST_MAX_RANK], first[LOOM_EST_MAX_RANK], step[LOOM_EST_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    for (int i = 0; i < x->rank; i++) {
        first[i] = 0;
        step[i] = 1;
    }
    for (int i = 0; i < ns; i++) {
        int64_t a = ax[i];
        if ((rc = check_axis(c, &a, x->rank, false)))
            return rc;
        int64_t d = x->dims[a], s = st[i], e = en[i], k = sp[i];
        if (k == 0 || k == INT64_MIN)
            return fail(c, "step %lld on axis %lld", (long long)k, (long long)a);
        if (s < 0)
            s += d;
        if (e < 0 && e > INT64_MIN / 2)
            e += d;
        if (k > 0) {
            s = s < 0 ? 0 : s > d ? d : s;
            e = e < 0 ? 0 : e > d ? d : e;
            dims[a] = e > s ? (e - s - 1) / k + 1 : 0;
        } else {
            s = s < 0 ? -1 : s > d - 1 ? d - 1 : s;
            e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
            dims[a] = s > e ? (s - e - 1) / (-k) + 1 : 0;
        }
        first[a] = s;
        step[a] = k;
    }
    loom_est_tensor_t *o = out(c, 0);
    if ((rc = set_shape(c, o, x->rank, dims, x->dtype)) || !x->has_val)
        return rc;
    if ((rc = alloc_vals(c, o)) || !o->has_val)
        return rc;
    for (size_t i = 0; i < o->nval; i++) {
        size_t rem = i, off = 0, stride = 1;
        for (int d = x->rank - 1; d >= 0; d--) {
            size_t coord = rem % (size_t)dims[d];
            rem /= (size_t)dims[d];
            off += (size_t)(first[d] + (int64_t)coord * step[d]) * stride;
            stride *= (size_t)x->dims[d];
        }
        put(o, i, val(x, off));
    }
    return LOOM_OK;
}

static int op_split(ctx_t *c)
{
    loom_est_tensor_t *x = in(c, 0);
    int64_t axis = attr_i(c->n, "axis", 0), parts[2 * LOOM_EST_MAX_RANK];
    int rc = check_axis(c, &axis, x->rank, false);
    if (rc)
        return rc;
    size_t nout = c->n->nout;
    int64_t *sizes = calloc(nout ? nout : 1, sizeof *sizes);
    if (!sizes)
        return loom_err_set(c->err, LOOM_ENOMEM, "out of memory");
    const loom_est_attr_t *a = loom_est_attr(c->n, "split");
    loom_est_tensor_t *s = in(c, 1);
    if (a && a->nints) {
        if (a->nints != nout) {
            free(sizes);
            return fail(c, "split has %zu sizes for %zu outputs", a->nints, nout);
        }
        memcpy(sizes, a->ints, nout * sizeof *sizes);
    } else if (s) {
        if (!s->has_val || s->nval != nout) {
            free(sizes);
            return fail(c, "split sizes must be a constant with one value per output");
        }
        for (size_t i = 0; i < nout; i++)
            sizes[i] = to_i64(val(s, i));
    } else {
        if (!nout || x->dims[axis] % (int64_t)nout) {
            free(sizes);
            return fail(c, "axis of %lld does not split evenly into %zu", (long long)x->dims[axis],
                        nout);
        }
        for (size_t i = 0; i < nout; i++)
            sizes[i] = x->dims[axis] / (int64_t)nout;
    }
    (void)parts;
    int64_t sum = 0;
    for (size_t i = 0; i < nout; i++)
        if (sizes[i] < 0 || sizes[i] > x->dims[axis]) {
            int64_t bad = sizes[i];
            free(sizes);
            return fail(c, "split size %lld is out of range [0, %lld]", (long long)bad,
                        (long long)x->dims[axis]);
        }
    for (size_t i = 0; i < nout && !rc; i++) {
        int64_t dims[LOOM_EST_MAX_RANK];
        memcpy(dims, x->dims, sizeof dims);
        dims[axis] = sizes[i];
        sum += sizes[i];
        rc = set_shape(c, out(c, i), x->rank, dims, x->dtype);
    }
    free(sizes);
    if (!rc && sum != x->dims[axis])
        return fail(c, "split sizes add to %lld, axis has %lld", (long long)sum,
                    (long long)x->dims[axis]);
    return rc;
}

static int op_reduce(ctx_t *c)
{
    loom_est_tensor_t *x = in(c, 0);
    int64_t axes[2 * LOOM_EST_MAX_RANK], dims[LOOM_EST_MAX_RANK];
    int na;
    bool f;
    int rc = int_list(c, "axes", 1, axes, &na, &f);
    if (rc)
        return rc;
    bool keep = attr_i(c->n, "keepdims", 1);
    unsigned red = 0;
    if (!f || na == 0) {
        if (attr_i(c->n, "noop_with_empty_axes", 0))
            return same_as(c, out(c, 0), x);
        red = (1u << x->rank) - 1;
    }
    for (int i = 0; i < na; i++) {
        if ((rc = check_axis(c, &axes[i], x->rank, false)))
            return rc;
        red |= 1u << axes[i];
    }
    int r = 0;
    for (int i = 0; i < x->rank; i++) {
        if (red & (1u << i)) {
            if (keep)
                dims[r++] = 1;
        } else {
            dims[r++] = x->dims[i];
        }
    }
    return set_shape(c, out(c, 0), r, dims, x->dtype);
}

static int op_lstm(ctx_t *c)
{
    loom_est_tensor_t *x = in(c, 0), *w = in(c, 1);
    int64_t h = attr_i(c->n, "hidden_size", -1);
    if (x->rank != 3 || !w || w->rank != 3)
        return fail(c, "X and W must have rank 3");
    if (h <= 0 || h > ((int64_t)1 << 40) || w->dims[1] != 4 * h)
        return fail(c, "hidden_size %lld does not match W's %lld rows (4 x hidden)", (long long)h,
                    (long long)w->dims[1]);
    bool batch_first = attr_i(c->n, "layout", 0) == 1;
    int64_t seq = batch_first ? x->dims[1] : x->dims[0], b = batch_first ? x->dims[0] : x->dims[1];
    int64_t dirs = w->dims[0];
    if (x->dims[2] != w->dims[2])
        return fail(c, "input size %lld does not match W's %lld", (long long)x->dims[2],
                    (long long)w->dims[2]);
    int64_t y[4] = {seq, dirs, b, h}, yb[4] = {b, seq, dirs, h}, hs[3] = {dirs, b, h},
            hb[3] = {b, dirs, h};
    int rc = set_shape(c, out(c, 0), 4, batch_first ? yb : y, x->dtype);
    if (!rc)
        rc = set_shape(c, out(c, 1), 3, batch_first ? hb : hs, x->dtype);
    if (!rc)
        rc = set_shape(c, out(c, 2), 3, batch_first ? hb : hs, x->dtype);
    return rc;
}

/* GRU (opset 7-14): W is [dirs, 3H, I]; outputs as the LSTM's first two. */
static int op_gru(ctx_t *c)
{
    loom_est_tensor_t *x = in(c, 0), *w = in(c, 1);
    int64_t h = attr_i(c->n, "hidden_size", -1);
    if (x->rank != 3 || !w || w->rank != 3)
        return fail(c, "X and W must have rank 3");
    if (h <= 0 || h > ((int64_t)1 << 40) || w->dims[1] != 3 * h)
        return fail(c, "hidden_size %lld does not match W's %lld rows (3 x hidden)", (long long)h,
                    (long long)w->dims[1]);
    if (x->dims[2] != w->dims[2])
        return fail(c, "input size %lld does not match W's %lld", (long long)x->dims[2],
                    (long long)w->dims[2]);
    bool batch_first = attr_i(c->n, "layout", 0) == 1;
    int64_t seq = batch_first ? x->dims[1] : x->dims[0], b = batch_first ? x->dims[0] : x->dims[1];
    int64_t dirs = w->dims[0];
    int64_t y[4] = {seq, dirs, b, h}, yb[4] = {b, seq, dirs, h}, hs[3] = {dirs, b, h},
            hb[3] = {b, dirs, h};
    int rc = set_shape(c, out(c, 0), 4, batch_first ? yb : y, x->dtype);
    return rc ? rc : set_shape(c, out(c, 1), 3, batch_first ? hb : hs, x->dtype);
}

/* Pad (opset 11+: pads as an input; before, an attribute): each dimension
 * grows by its begin and end pads (negative pads crop). */
static int op_pad(ctx_t *c)
{
    loom_est_tensor_t *x = in(c, 0);
    int64_t p[2 * LOOM_EST_MAX_RANK], dims[LOOM_EST_MAX_RANK];
    int np;
    bool f;
    int rc = int_list(c, "pads", 1, p, &np, &f);
    if (rc)
        return rc;
    if (!f || np != 2 * x->rank)
        return fail(c, "pads must have %d values (begin and end per dimension), not %d",
                    2 * x->rank, np);
    for (int i = 0; i < x->rank; i++) {
        if (p[i] < -LIM || p[i] > LIM || p[i + x->rank] < -LIM || p[i + x->rank] > LIM)
            return fail(c, "pads must be in [-2^31, 2^31]");
        dims[i] = x->dims[i] + p[i] + p[i + x->rank];
        if (dims[i] < 0)
            return fail(c, "dimension %d: pads crop %lld below 0", i, (long long)x->dims[i]);
    }
    return set_shape(c, out(c, 0), x->rank, dims, x->dtype);
}

/* Resize (opset 11-18: X, roi, scales, sizes; opset 10 Upsample-like X,
 * scales): the output size from `sizes` when given, else floor(dim x scale). */
static int op_resize(ctx_t *c)
{
    loom_est_tensor_t *x = in(c, 0);
    loom_est_tensor_t *sc = c->n->nin > 2 ? in(c, 2) : c->n->nin == 2 ? in(c, 1) : NULL;
    loom_est_tensor_t *sz = c->n->nin > 3 ? in(c, 3) : NULL;
    int64_t dims[LOOM_EST_MAX_RANK];
    if (sz && loom_est_numel(sz) > 0) {
        if (!sz->has_val || (int)sz->nval != x->rank)
            return fail(c, "sizes ('%s') must be a constant of %d values", sz->name, x->rank);
        for (int i = 0; i < x->rank; i++) {
            int64_t v = to_i64(val(sz, i));
            if (v < 0 || v > ((int64_t)1 << 40))
                return fail(c, "sizes[%d] = %lld is out of range", i, (long long)v);
            dims[i] = v;
        }
    } else if (sc && loom_est_numel(sc) > 0) {
        if (!sc->has_val || (int)sc->nval != x->rank)
            return fail(c, "scales ('%s') must be a constant of %d values", sc->name, x->rank);
        for (int i = 0; i < x->rank; i++) {
            double v = val(sc, i) * (double)x->dims[i];
            if (!(v >= 0 && v <= (double)((int64_t)1 << 40)))
                return fail(c, "scales[%d] = %g is out of range", i, val(sc, i));
            dims[i] = (int64_t)v;
        }
    } else {
        return fail(c, "neither scales nor sizes is given");
    }
    return set_shape(c, out(c, 0), x->rank, dims, x->dtype);
}

/* Einsum's equation split into its operands' letters ("bhij,bhjd->bhid";
 * spaces ignored; ellipsis not supported). Returns false if malformed. */
typedef struct einsum {
    int nin;
    char in[2][LOOM_EST_MAX_RANK + 1], out[LOOM_EST_MAX_RANK + 1];
} einsum_t;

static bool einsum_parse(const char *eq, einsum_t *e)
{
    memset(e, 0, sizeof *e);
    int part = 0, len = 0;
    bool arrow = false;
    for (const char *p = eq; *p; p++) {
        char ch = *p;
        if (ch == ' ')
            continue;
        if (ch == ',' && !arrow && part == 0) {
            part = 1, len = 0;
        } else if (ch == '-' && p[1] == '>' && !arrow) {
            arrow = true, len = 0, p++;
        } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
            char *dst = arrow ? e->out : e->in[part];
            if (len >= LOOM_EST_MAX_RANK)
                return false;
            dst[len++] = ch;
        } else {
            return false;
        }
    }
    e->nin = part + 1;
    if (!arrow) { /* implicit output: letters used once, alphabetical */
        int k = 0;
        for (char ch = 'A'; ch <= 'z'; ch++) {
            int uses = 0;
            for (int i = 0; i < e->nin; i++)
                uses += strchr(e->in[i], ch) != NULL;
            if (uses == 1 && k < LOOM_EST_MAX_RANK && ((ch >= 'a') || (ch <= 'Z')))
                e->out[k++] = ch;
        }
    }
    return true;
}

/* Sizes of an Einsum node (after shape inference): the product of every
 * letter's size (the multiply-adds), and M, N, K as a matrix product sees
 * them (letters only in the first operand and the output; only in the
 * second and the output; in both operands and not the output). */
bool est_einsum_sizes(const loom_est_model_t *m, const loom_est_node_t *n, double *total,
                      double *mm, double *nn, double *kk)
{
    const loom_est_attr_t *a = loom_est_attr(n, "equation");
    einsum_t e;
    if (!a || !a->s || !einsum_parse(a->s, &e) || (int)n->nin != e.nin)
        return false;
    double t = 1, M = 1, N = 1, K = 1;
    for (char ch = 'A'; ch <= 'z'; ch++) {
        int64_t d = -1;
        bool in0 = false, in1 = false;
        for (int i = 0; i < e.nin; i++) {
            const char *q = strchr(e.in[i], ch);
            if (q && n->in[i] >= 0) {
                d = m->t[n->in[i]].dims[q - e.in[i]];
                *(i ? &in1 : &in0) = true;
            }
        }
        if (d < 0)
            continue;
        bool o = strchr(e.out, ch) != NULL;
        t *= (double)d;
        if (in0 && !in1 && o)
            M *= (double)d;
        else if (in1 && !in0 && o)
            N *= (double)d;
        else if (in0 && in1 && !o)
            K *= (double)d;
    }
    *total = t, *mm = M, *nn = N, *kk = K;
    return true;
}

static int op_einsum(ctx_t *c)
{
    const loom_est_attr_t *a = loom_est_attr(c->n, "equation");
    einsum_t e;
    if (!a || !a->s || !einsum_parse(a->s, &e))
        return fail(c,
                    "equation '%s' is not of the form 'ab,bc->ac' (letters, at most %d "
                    "per operand, no ellipsis)",
                    a && a->s ? a->s : "", LOOM_EST_MAX_RANK);
    if ((int)c->n->nin != e.nin || e.nin > 2)
        return fail(c, "%zu inputs for an equation of %d operands (at most 2 supported)", c->n->nin,
                    e.nin);
    int64_t size[128];
    for (int i = 0; i < 128; i++)
        size[i] = -1;
    for (int i = 0; i < e.nin; i++) {
        loom_est_tensor_t *x = in(c, (size_t)i);
        if (!x || (int)strlen(e.in[i]) != x->rank)
            return fail(c, "operand %d has rank %d, the equation gives it %zu letters", i,
                        x ? x->rank : -1, strlen(e.in[i]));
        for (int j = 0; j < x->rank; j++) {
            int ch = (unsigned char)e.in[i][j];
            if (size[ch] >= 0 && size[ch] != x->dims[j] && size[ch] != 1 && x->dims[j] != 1)
                return fail(c, "letter '%c' is %lld in one place and %lld in another", ch,
                            (long long)size[ch], (long long)x->dims[j]);
            if (size[ch] < x->dims[j])
                size[ch] = x->dims[j];
        }
    }
    int64_t dims[LOOM_EST_MAX_RANK];
    int r = (int)strlen(e.out);
    for (int j = 0; j < r; j++) {
        int ch = (unsigned char)e.out[j];
        if (size[ch] < 0)
            return fail(c, "output letter '%c' is in no operand", ch);
        dims[j] = size[ch];
    }
    return set_shape(c, out(c, 0), r, dims, in(c, 0)->dtype);
}

/* ScatterND: the data's shape (values not folded). */
static int op_scatter(ctx_t *c)
{
    return same_as(c, out(c, 0), in(c, 0));
}

static int copy_const(ctx_t *c, loom_est_tensor_t *o, const loom_est_tensor_t *src)
{
    int rc = set_shape(c, o, src->rank, src->dims, src->dtype);
    if (rc || !src->has_val)
        return rc;
    if ((rc = alloc_vals(c, o)) || !o->has_val)
        return rc;
    for (size_t i = 0; i < o->nval; i++)
        put(o, i, val(src, i));
    return LOOM_OK;
}

static int op_constant(ctx_t *c)
{
    loom_est_tensor_t *o = out(c, 0);
    const loom_est_attr_t *a;
    if ((a = loom_est_attr(c->n, "value")) && a->t)
        return copy_const(c, o, a->t);
    loom_est_tensor_t tmp = {0};
    int64_t one[1];
    if ((a = loom_est_attr(c->n, "value_int")) && a->has_i) {
        tmp.dtype = LOOM_EST_T_INT64;
        tmp.rank = 0;
        one[0] = a->i;
        tmp.ival = one;
        tmp.nval = 1;
    } else if ((a = loom_est_attr(c->n, "value_float")) && a->has_f) {
        double d = a->f;
        tmp.dtype = LOOM_EST_T_FLOAT;
        tmp.rank = 0;
        tmp.fval = &d;
        tmp.nval = 1;
        tmp.has_val = true;
        return copy_const(c, o, &tmp);
    } else if ((a = loom_est_attr(c->n, "value_ints"))) {
        tmp.dtype = LOOM_EST_T_INT64;
        tmp.rank = 1;
        tmp.dims[0] = (int64_t)a->nints;
        tmp.ival = a->ints;
        tmp.nval = a->nints;
    } else if ((a = loom_est_attr(c->n, "value_floats"))) {
        tmp.dtype = LOOM_EST_T_FLOAT;
        tmp.rank = 1;
        tmp.dims[0] = (int64_t)a->nfloats;
        tmp.fval = a->floats;
        tmp.nval = a->nfloats;
    } else {
        return fail(c, "no value attribute the estimator understands (value, value_int, "
                       "value_float, value_ints, value_floats)");
    }
    tmp.has_val = tmp.nval > 0 || tmp.rank == 1;
    return copy_const(c, o, &tmp);
}

static int shape_from_value(ctx_t *c, const loom_est_tensor_t *s, int64_t *dims, int *rank)
{
    if (!s || !s->has_val)
        return fail(c, "the shape input must be a constant the estimator can fold");
    if (s->nval > LOOM_EST_MAX_RANK)
        return fail(c, "shape has %zu dimensions (at most %d)", s->nval, LOOM_EST_MAX_RANK);
    for (size_t i = 0; i < s->nval; i++)
        dims[i] = to_i64(val(s, i));
    *rank = (int)s->nval;
    return LOOM_OK;
}

static int op_constant_of_shape(ctx_t *c)
{
    int64_t dims[LOOM_EST_MAX_RANK];
    int r, rc;
    if ((rc = shape_from_value(c, in(c, 0), dims, &r)))
        return rc;
    const loom_est_attr_t *a = loom_est_attr(c->n, "value");
    int dt = a && a->t ? a->t->dtype : LOOM_EST_T_FLOAT;
    double v = a && a->t && a->t->has_val && a->t->nval ? val(a->t, 0) : 0;
    loom_est_tensor_t *o = out(c, 0);
    if ((rc = set_shape(c, o, r, dims, dt)) || (rc = alloc_vals(c, o)) || !o->has_val)
        return rc;
    for (size_t i = 0; i < o->nval; i++)
        put(o, i, v);
    return LOOM_OK;
}

static int op_expand(ctx_t *c)
{
    loom_est_tensor_t *x = in(c, 0), s = {0};
    int rc = shape_from_value(c, in(c, 1), s.dims, &s.rank);
    if (rc)
        return rc;
    for (int i = 0; i < s.rank; i++)
        if (s.dims[i] < 0)
            return fail(c, "shape[%d] = %lld", i, (long long)s.dims[i]);
    int64_t dims[LOOM_EST_MAX_RANK];
    int r = broadcast(c, x, &s, dims);
    if (r < 0)
        return r;
    loom_est_tensor_t *o = out(c, 0);
    if ((rc = set_shape(c, o, r, dims, x->dtype)) || !x->has_val)
        return rc;
    if ((rc = alloc_vals(c, o)) || !o->has_val)
        return rc;
    for (size_t i = 0; i < o->nval; i++)
        put(o, i, val(x, bindex(x, r, dims, i)));
    return LOOM_OK;
}

static int op_range(ctx_t *c)
{
    loom_est_tensor_t *s = in(c, 0), *l = in(c, 1), *d = in(c, 2);
    if (!s || !l || !d || !s->has_val || !l->has_val || !d->has_val || s->nval != 1 ||
        l->nval != 1 || d->nval != 1)
        return fail(c, "start, limit and delta must be scalar constants the estimator can fold");
    double st = val(s, 0), li = val(l, 0), de = val(d, 0);
    if (de == 0)
        return fail(c, "delta is 0");
    double n = ceil((li - st) / de);
    if (n != n)
        return fail(c, "start, limit and delta give no element count");
    if (n < 0)
        n = 0;
    if (n > (double)((int64_t)1 << 40))
        return fail(c, "range of %g elements", n);
    int64_t dims[1] = {(int64_t)n};
    loom_est_tensor_t *o = out(c, 0);
    int rc = set_shape(c, o, 1, dims, s->dtype);
    if (rc || (rc = alloc_vals(c, o)) || !o->has_val)
        return rc;
    for (size_t i = 0; i < o->nval; i++)
        put(o, i, st + (double)i * de);
    return LOOM_OK;
}

static int op_shape(ctx_t *c)
{
    loom_est_tensor_t *x = in(c, 0);
    int64_t start = attr_i(c->n, "start", 0), end = attr_i(c->n, "end", x->rank);
    if (start < 0)
        start += x->rank;
    if (end < 0)
        end += x->rank;
    start = start < 0 ? 0 : start > x->rank ? x->rank : start;
    end = end < start ? start : end > x->rank ? x->rank : end;
    int64_t dims[1] = {end - start};
    loom_est_tensor_t *o = out(c, 0);
    int rc = set_shape(c, o, 1, dims, LOOM_EST_T_INT64);
    if (rc || (rc = alloc_vals(c, o)) || !o->has_val)
        return rc;
    for (int64_t i = start; i < end; i++)
        put(o, (size_t)(i - start), (double)x->dims[i]);
    return LOOM_OK;
}

static int op_flatten(ctx_t *c)
{
    loom_est_tensor_t *x = in(c, 0);
    int64_t axis = attr_i(c->n, "axis", 1);
    int rc = check_axis(c, &axis, x->rank, true);
    if (rc)
        return rc;
    int64_t dims[2] = {1, 1};
    for (int i = 0; i < x->rank; i++)
        dims[i < axis ? 0 : 1] *= x->dims[i];
    return set_shape(c, out(c, 0), 2, dims, x->dtype);
}

static int op_norm(ctx_t *c, bool layer)
{
    loom_est_tensor_t *x = in(c, 0);
    int rc = same_as(c, out(c, 0), x);
    if (rc)
        return rc;
    if (layer) {
        int64_t axis = attr_i(c->n, "axis", -1), dims[LOOM_EST_MAX_RANK];
        if ((rc = check_axis(c, &axis, x->rank, false)))
            return rc;
        for (int i = 0; i < x->rank; i++)
            dims[i] = i < axis ? x->dims[i] : 1;
        for (size_t k = 1; k < c->n->nout && !rc; k++)
            rc = set_shape(c, out(c, k), x->rank, dims, LOOM_EST_T_FLOAT);
        return rc;
    }
    if (x->rank < 2)
        return fail(c, "input rank %d < 2", x->rank);
    int64_t ch[1] = {x->dims[1]};
    for (size_t k = 1; k < c->n->nout && !rc; k++)
        rc = set_shape(c, out(c, k), 1, ch, x->dtype);
    return rc;
}

static int op_dropout(ctx_t *c)
{
    loom_est_tensor_t *x = in(c, 0);
    int rc = same_as(c, out(c, 0), x);
    if (!rc)
        rc = set_shape(c, out(c, 1), x->rank, x->dims, LOOM_EST_T_BOOL);
    return rc;
}

static int op_global_pool(ctx_t *c)
{
    loom_est_tensor_t *x = in(c, 0);
    if (x->rank < 3)
        return fail(c, "input rank %d < 3", x->rank);
    int64_t dims[LOOM_EST_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        dims[i] = i < 2 ? x->dims[i] : 1;
    return set_shape(c, out(c, 0), x->rank, dims, x->dtype);
}

static int op_softmax(ctx_t *c)
{
    loom_est_tensor_t *x = in(c, 0);
    int64_t axis = attr_i(c->n, "axis", -1);
    int rc = check_axis(c, &axis, x->rank, false);
    return rc ? rc : same_as(c, out(c, 0), x);
}

static int op_cast(ctx_t *c)
{
    int64_t to = attr_i(c->n, "to", -1);
    if (to <= 0 || to > 16 || !est_dtype_size((int)to))
        return fail(c, "attribute 'to' = %lld is not a supported type", (long long)to);
    return op_elementwise(c, (int)to);
}

typedef int (*op_fn)(ctx_t *);
static int op_unary(ctx_t *c)
{
    return op_elementwise(c, 0);
}
static int op_compare(ctx_t *c)
{
    return op_elementwise(c, LOOM_EST_T_BOOL);
}
static int op_conv_(ctx_t *c)
{
    return op_conv(c, false);
}
static int op_convt(ctx_t *c)
{
    return op_conv(c, true);
}
static int op_unsq(ctx_t *c)
{
    return op_unsqueeze(c, false);
}
static int op_sq(ctx_t *c)
{
    return op_unsqueeze(c, true);
}
static int op_bn(ctx_t *c)
{
    return op_norm(c, false);
}
static int op_ln(ctx_t *c)
{
    return op_norm(c, true);
}

static const struct {
    const char *op;
    op_fn fn;
    int min_in;
} ops[] = {
    {"Conv", op_conv_, 2},
    {"ConvTranspose", op_convt, 2},
    {"Gemm", op_gemm, 2},
    {"MatMul", op_matmul, 2},
    {"BatchNormalization", op_bn, 5},
    {"LayerNormalization", op_ln, 2},
    {"Relu", op_unary, 1},
    {"Gelu", op_unary, 1},
    {"Erf", op_unary, 1},
    {"Sigmoid", op_unary, 1},
    {"Tanh", op_unary, 1},
    {"Sqrt", op_unary, 1},
    {"Exp", op_unary, 1},
    {"Log", op_unary, 1},
    {"Neg", op_unary, 1},
    {"Abs", op_unary, 1},
    {"Reciprocal", op_unary, 1},
    {"Clip", op_unary, 1},
    {"LeakyRelu", op_unary, 1},
    {"HardSigmoid", op_unary, 1},
    {"HardSwish", op_unary, 1},
    {"Softplus", op_unary, 1},
    {"Not", op_unary, 1},
    {"Identity", op_unary, 1},
    {"Add", op_unary, 2},
    {"Sub", op_unary, 2},
    {"Mul", op_unary, 2},
    {"Div", op_unary, 2},
    {"Pow", op_unary, 2},
    {"Mod", op_unary, 2},
    {"Max", op_unary, 1},
    {"Min", op_unary, 1},
    {"Where", op_unary, 3},
    {"Equal", op_compare, 2},
    {"Less", op_compare, 2},
    {"Greater", op_compare, 2},
    {"Cast", op_cast, 1},
    {"Softmax", op_softmax, 1},
    {"LogSoftmax", op_softmax, 1},
    {"MaxPool", op_pool, 1},
    {"AveragePool", op_pool, 1},
    {"GlobalAveragePool", op_global_pool, 1},
    {"GlobalMaxPool", op_global_pool, 1},
    {"Flatten", op_flatten, 1},
    {"Reshape", op_reshape, 2},
    {"Transpose", op_transpose, 1},
    {"Concat", op_concat, 1},
    {"Gather", op_gather, 2},
    {"LSTM", op_lstm, 3},
    {"GRU", op_gru, 3},
    {"Einsum", op_einsum, 1},
    {"ScatterND", op_scatter, 3},
    {"Pad", op_pad, 1},
    {"Resize", op_resize, 1},
    {"Slice", op_slice, 1},
    {"Split", op_split, 1},
    {"Unsqueeze", op_unsq, 1},
    {"Squeeze", op_sq, 1},
    {"Shape", op_shape, 1},
    {"Constant", op_constant, 0},
    {"ConstantOfShape", op_constant_of_shape, 1},
    {"Expand", op_expand, 2},
    {"Range", op_range, 3},
    {"Dropout", op_dropout, 1},
    {"ReduceMean", op_reduce, 1},
    {"ReduceSum", op_reduce, 1},
    {"ReduceMax", op_reduce, 1},
};

bool est_op_is_view(const char *op)
{
    static const char *views[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose",
                                  "Slice",   "Split",   "Expand",  "Identity"};
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++)
        if (strcmp(op, views[i]) == 0)
            return true;
    return false;
}

static int set_inputs(loom_est_model_t *m, int64_t batch, loom_err_t *err)
{
    for (size_t i = 0; i < m->nt; i++) {
        loom_est_tensor_t *t = &m->t[i];
        t->inferred = false;
        if (!t->is_input)
            continue;
        t->rank = t->decl_rank;
        for (int k = 0; k < t->rank; k++) {
            int64_t d = t->decl_dims[k];
            if (k == 0 && batch > 0)
                d = batch;
            if (d < 0)
                return loom_err_set(err, LOOM_EINVAL,
                                    "%s: graph input '%s' dimension %d is symbolic; only "
                                    "dimension 0 (the batch, set with --batch) may be",
                                    m->source, t->name, k);
            t->dims[k] = d;
        }
        if (!est_dtype_size(t->dtype))
            return loom_err_set(err, LOOM_EINVAL, "%s: graph input '%s' has element type %s",
                                m->source, t->name, est_dtype_name(t->dtype));
        t->inferred = true;
    }
    return LOOM_OK;
}

int loom_est_infer_shapes(loom_est_model_t *m, int64_t batch, loom_err_t *err)
{
    /* Values folded in an earlier run (another batch) must not leak. */
    for (size_t i = 0; i < m->nt; i++) {
        loom_est_tensor_t *t = &m->t[i];
        if (t->producer >= 0) {
            free(t->ival);
            free(t->fval);
            t->ival = NULL;
            t->fval = NULL;
            t->has_val = false;
            t->nval = 0;
            t->rank = -1;
        }
        if (t->is_init)
            t->inferred = true;
    }
    int rc = set_inputs(m, batch, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < m->nt; i++)
        if (m->t[i].is_init)
            m->t[i].inferred = true;
    for (size_t oi = 0; oi < m->nn; oi++) {
        loom_est_node_t *n = &m->n[m->order[oi]];
        ctx_t c = {m, n, err};
        if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx"))
            return fail(&c, "operator domain '%s' is not supported (only the default ONNX domain)",
                        n->domain);
        size_t k;
        for (k = 0; k < sizeof ops / sizeof ops[0]; k++)
            if (strcmp(ops[k].op, n->op) == 0)
                break;
        if (k == sizeof ops / sizeof ops[0])
            return fail(&c,
                        "operator '%s' is not supported by the estimator (docs/estimate.md "
                        "lists the supported operators)",
                        n->op);
        if ((int)n->nin < ops[k].min_in)
            return fail(&c, "%zu inputs, expected at least %d", n->nin, ops[k].min_in);
        for (int j = 0; j < ops[k].min_in; j++) /* required: not an empty name */
            if (!in(&c, (size_t)j))
                return fail(&c, "input %d is missing (an empty name; the operator needs it)", j);
        for (size_t j = 0; j < n->nin; j++) {
            loom_est_tensor_t *t = in(&c, j);
            if (t && (!t->inferred || t->rank < 0))
                return fail(&c, "input '%s' has no known shape", t->name);
        }
        if (n->nout == 0 || !out(&c, 0))
            return fail(&c, "no output");
        if ((rc = ops[k].fn(&c)))
            return rc;
        n->folded = true;
        for (size_t j = 0; j < n->nout; j++) {
            loom_est_tensor_t *t = out(&c, j);
            if (t && !t->inferred)
                return fail(&c, "output %zu ('%s') got no shape", j, t->name);
            if (t && !t->has_val)
                n->folded = false;
        }
    }
    return LOOM_OK;
}
