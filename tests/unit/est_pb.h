/* A tiny protobuf writer for the estimator's tests: builds ONNX ModelProto
 * bytes by hand (field numbers from onnx.proto), so every test graph is
 * visible in the test that uses it. */
#ifndef LOOM_TEST_EST_PB_H
#define LOOM_TEST_EST_PB_H
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct pbw {
    uint8_t *d;
    size_t n, cap;
} pbw_t;

static inline void pbw_raw(pbw_t *w, const void *p, size_t n)
{
    if (w->n + n > w->cap) {
        w->cap = (w->n + n) * 2 + 64;
        w->d = realloc(w->d, w->cap);
    }
    memcpy(w->d + w->n, p, n);
    w->n += n;
}

static inline void pbw_varint(pbw_t *w, uint64_t v)
{
    uint8_t b[10];
    size_t k = 0;
    do {
        b[k] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            b[k] |= 0x80;
        k++;
    } while (v);
    pbw_raw(w, b, k);
}

static inline void pbw_key(pbw_t *w, unsigned field, unsigned wt)
{
    pbw_varint(w, (uint64_t)field << 3 | wt);
}
static inline void pbw_int(pbw_t *w, unsigned field, int64_t v)
{
    pbw_key(w, field, 0);
    pbw_varint(w, (uint64_t)v);
}
static inline void pbw_bytes(pbw_t *w, unsigned field, const void *p, size_t n)
{
    pbw_key(w, field, 2);
    pbw_varint(w, n);
    pbw_raw(w, p, n);
}
static inline void pbw_str(pbw_t *w, unsigned field, const char *s)
{
    pbw_bytes(w, field, s, strlen(s));
}
/* Appends sub as a length-delimited field and frees it. */
static inline void pbw_msg(pbw_t *w, unsigned field, pbw_t *sub)
{
    pbw_bytes(w, field, sub->d ? sub->d : (uint8_t *)"", sub->n);
    free(sub->d);
    memset(sub, 0, sizeof *sub);
}

/* ValueInfoProto with a tensor type; dims < 0 are dim_param "batch". */
static inline void onnx_value_info(pbw_t *g, unsigned field, const char *name, int elem, int rank,
                                   const int64_t *dims)
{
    pbw_t vi = {0}, tp = {0}, tt = {0}, sh = {0};
    pbw_str(&vi, 1, name);
    pbw_int(&tt, 1, elem);
    for (int i = 0; i < rank; i++) {
        pbw_t d = {0};
        if (dims[i] < 0)
            pbw_str(&d, 2, "batch");
        else
            pbw_int(&d, 1, dims[i]);
        pbw_msg(&sh, 1, &d);
    }
    pbw_msg(&tt, 2, &sh);
    pbw_msg(&tp, 1, &tt);
    pbw_msg(&vi, 2, &tp);
    pbw_msg(g, field, &vi);
}

/* TensorProto; int64 values (may be NULL) as packed int64_data, float
 * tensors get zero raw_data of the right size when raw is true. */
static inline void onnx_tensor(pbw_t *t, const char *name, int dtype, int rank, const int64_t *dims,
                               const int64_t *ivals, int nvals)
{
    pbw_t packed = {0};
    for (int i = 0; i < rank; i++)
        pbw_varint(&packed, (uint64_t)dims[i]);
    if (rank)
        pbw_msg(t, 1, &packed);
    pbw_int(t, 2, dtype);
    if (name)
        pbw_str(t, 8, name);
    if (ivals) {
        pbw_t v = {0};
        for (int i = 0; i < nvals; i++)
            pbw_varint(&v, (uint64_t)ivals[i]);
        pbw_msg(t, 7, &v);
    }
}

static inline void onnx_init(pbw_t *g, const char *name, int dtype, int rank, const int64_t *dims,
                             const int64_t *ivals, int nvals)
{
    pbw_t t = {0};
    onnx_tensor(&t, name, dtype, rank, dims, ivals, nvals);
    pbw_msg(g, 5, &t);
}

/* A float scalar initializer (raw_data), e.g. Dropout's ratio. */
static inline void onnx_init_float(pbw_t *g, const char *name, float v)
{
    pbw_t t = {0};
    onnx_tensor(&t, name, 1, 0, NULL, NULL, 0);
    pbw_bytes(&t, 9, &v, sizeof v);
    pbw_msg(g, 5, &t);
}

static inline void attr_ints(pbw_t *node, const char *name, int n, const int64_t *v)
{
    pbw_t a = {0}, p = {0};
    pbw_str(&a, 1, name);
    pbw_int(&a, 20, 7);
    for (int i = 0; i < n; i++)
        pbw_varint(&p, (uint64_t)v[i]);
    pbw_msg(&a, 8, &p);
    pbw_msg(node, 5, &a);
}

static inline void attr_int(pbw_t *node, const char *name, int64_t v)
{
    pbw_t a = {0};
    pbw_str(&a, 1, name);
    pbw_int(&a, 20, 2);
    pbw_int(&a, 3, v);
    pbw_msg(node, 5, &a);
}

/* NodeProto: "in1,in2" and "out1" comma lists ("" entries allowed). The
 * node is left open in *node for attributes; call onnx_node_end. */
static inline void onnx_node_begin(pbw_t *node, const char *op, const char *name, const char *ins,
                                   const char *outs)
{
    memset(node, 0, sizeof *node);
    const char *lists[2] = {ins, outs};
    for (int k = 0; k < 2; k++) {
        const char *s = lists[k];
        while (s && *s) {
            const char *e = strchr(s, ',');
            size_t len = e ? (size_t)(e - s) : strlen(s);
            pbw_bytes(node, k == 0 ? 1 : 2, s, len);
            s = e ? e + 1 : NULL;
        }
    }
    pbw_str(node, 3, name);
    pbw_str(node, 4, op);
}

static inline void onnx_node_end(pbw_t *g, pbw_t *node)
{
    pbw_msg(g, 1, node);
}

static inline void onnx_node(pbw_t *g, const char *op, const char *name, const char *ins,
                             const char *outs)
{
    pbw_t n;
    onnx_node_begin(&n, op, name, ins, outs);
    onnx_node_end(g, &n);
}

/* ModelProto: ir_version 8, opset 13, then the graph (last, so every
 * strict prefix of the bytes is incomplete). Frees g. */
static inline pbw_t onnx_model(pbw_t *g)
{
    pbw_t m = {0}, op = {0};
    pbw_int(&m, 1, 8);
    pbw_str(&op, 1, "");
    pbw_int(&op, 2, 13);
    pbw_msg(&m, 8, &op);
    pbw_msg(&m, 7, g);
    return m;
}
#endif
