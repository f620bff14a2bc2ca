/* ONNX reader: a hand-written decoder of the protobuf wire format for the
 * subset of onnx.proto the estimator needs (field numbers from onnx.proto,
 * IR version 8): ModelProto (ir_version 1, graph 7, opset_import 8),
 * OperatorSetIdProto (domain 1, version 2), GraphProto (node 1,
 * initializer 5, input 11, output 12), NodeProto (input 1, output 2, name 3,
 * op_type 4, attribute 5, domain 7), AttributeProto (name 1, f 2, i 3, s 4,
 * t 5, floats 7, ints 8, type 20), TensorProto (dims 1, data_type 2,
 * float_data 4, int32_data 5, int64_data 7, name 8, raw_data 9,
 * double_data 10, data_location 14), ValueInfoProto (name 1, type 2),
 * TypeProto (tensor_type 1), TypeProto.Tensor (elem_type 1, shape 2),
 * TensorShapeProto (dim 1), Dimension (dim_value 1, dim_param 2).
 *
 * Every other field is skipped by its wire type. Malformed input — a
 * truncated message, a wrong wire type for a known field, a varint longer
 * than 10 bytes, a length past the end of its message, absurd dimensions,
 * raw_data of the wrong size — is an error naming the source, the field
 * path and the byte offset. Weight data is never copied: only the values of
 * small integer/float constants (<= EST_MAX_FOLD elements), which the shape
 * folding needs. After decoding, the graph is linked and checked (undefined
 * inputs, two producers of one tensor, cycles) and sorted topologically.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "estimate/est.h"

#define PB_MAX_DEPTH  16
#define EST_MAX_DIM   ((int64_t)1 << 40) /* one dimension */
#define EST_MAX_NUMEL ((int64_t)1 << 48) /* elements of one tensor */

/* ------------------------------------------------------------ wire format */

typedef struct pb {
    const uint8_t *p; /* whole input */
    size_t pos, end;  /* current message: [pos, end) */
    const char *src;
    char path[512];
    size_t plen;
    int depth;
    loom_err_t *err;
} pb_t;

static int pb_fail(pb_t *r, size_t off, const char *fmt, ...) LOOM_PRINTF(3, 4);
static int pb_fail(pb_t *r, size_t off, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return loom_err_set(r->err, LOOM_EINVAL, "%s: byte %zu: %s: %s", r->src, off, r->path, what);
}

/* Path helpers: push ".name" or ".name[i]", pop back to a saved length. */
static size_t pb_push(pb_t *r, const char *name, long idx)
{
    size_t saved = r->plen;
    int n = idx >= 0 ? snprintf(r->path + r->plen, sizeof r->path - r->plen, ".%s[%ld]", name, idx)
                     : snprintf(r->path + r->plen, sizeof r->path - r->plen, ".%s", name);
    if (n > 0)
        r->plen += (size_t)n < sizeof r->path - r->plen ? (size_t)n : sizeof r->path - r->plen - 1;
    return saved;
}

static void pb_pop(pb_t *r, size_t saved)
{
    r->plen = saved;
    r->path[saved] = '\0';
}

static int pb_varint(pb_t *r, uint64_t *v, const char *what)
{
    size_t start = r->pos;
    uint64_t x = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->pos >= r->end)
            return pb_fail(r, start, "truncated varint (%s)", what);
        uint8_t b = r->p[r->pos++];
        if (shift == 63 && (b & 0x7e))
            return pb_fail(r, start, "varint overflows 64 bits (%s)", what);
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return LOOM_OK;
        }
    }
    return pb_fail(r, start, "varint longer than 10 bytes (%s)", what);
}

static const char *wt_name(int wt)
{
    static const char *names[] = {"varint",    "64-bit", "length-delimited", "start-group",
                                  "end-group", "32-bit", "invalid(6)",       "invalid(7)"};
    return names[wt & 7];
}

/* Reads a key. */
static int pb_key(pb_t *r, uint32_t *field, int *wt, size_t *key_off)
{
    *key_off = r->pos;
    uint64_t k;
    int rc = pb_varint(r, &k, "field key");
    if (rc)
        return rc;
    *wt = (int)(k & 7);
    if (k >> 3 == 0 || k >> 3 > 536870911)
        return pb_fail(r, *key_off, "invalid field number %llu", (unsigned long long)(k >> 3));
    *field = (uint32_t)(k >> 3);
    if (*wt == 3 || *wt == 4)
        return pb_fail(r, *key_off, "field %u: groups (wire type %d) are not used by ONNX", *field,
                       *wt);
    if (*wt > 5)
        return pb_fail(r, *key_off, "field %u: invalid wire type %d", *field, *wt);
    return LOOM_OK;
}

/* The next field's key in the current message, for a parser's loop: false
 * at the message's end, or when *rc is (or becomes) an error. */
static bool pb_next(pb_t *r, uint32_t *field, int *wt, size_t *key_off, int *rc)
{
    if (*rc != LOOM_OK || r->pos >= r->end)
        return false;
    *rc = pb_key(r, field, wt, key_off);
    return *rc == LOOM_OK;
}

static int pb_expect(pb_t *r, size_t off, uint32_t field, const char *name, int wt, int want)
{
    if (wt == want)
        return LOOM_OK;
    return pb_fail(r, off, "field %s (%u) has wire type %s, expected %s", name, field, wt_name(wt),
                   wt_name(want));
}

/* Length-delimited payload: [*start, *start + *len). */
static int pb_bytes(pb_t *r, size_t *start, size_t *len, const char *what)
{
    size_t off = r->pos;
    uint64_t n;
    int rc = pb_varint(r, &n, what);
    if (rc)
        return rc;
    if (n > r->end - r->pos)
        return pb_fail(r, off, "%s: length %llu runs past the end of its message (%zu bytes left)",
                       what, (unsigned long long)n, r->end - r->pos);
    *start = r->pos;
    *len = (size_t)n;
    r->pos += (size_t)n;
    return LOOM_OK;
}

static int pb_skip(pb_t *r, int wt, uint32_t field)
{
    uint64_t v;
    size_t s, l;
    size_t off = r->pos;
    switch (wt) {
    case 0: return pb_varint(r, &v, "skipped field");
    case 1:
    case 5: {
        size_t n = wt == 1 ? 8 : 4;
        if (r->end - r->pos < n)
            return pb_fail(r, off, "field %u: truncated %s value", field, wt_name(wt));
        r->pos += n;
        return LOOM_OK;
    }
    case 2: return pb_bytes(r, &s, &l, "skipped field");
    default: return pb_fail(r, off, "field %u: invalid wire type %d", field, wt);
    }
}

static int pb_string(pb_t *r, char **out, const char *what)
{
    size_t s, l;
    int rc = pb_bytes(r, &s, &l, what);
    if (rc)
        return rc;
    if (memchr(r->p + s, '\0', l))
        return pb_fail(r, s, "%s contains a NUL byte", what);
    char *c = malloc(l + 1);
    if (!c)
        return loom_err_set(r->err, LOOM_ENOMEM, "%s: out of memory", r->src);
    memcpy(c, r->p + s, l);
    c[l] = '\0';
    free(*out); /* a repeated optional field: last one wins */
    *out = c;
    return LOOM_OK;
}

/* A string field (wire type 2) named `what` (Message.field) in errors. */
static int pb_text(pb_t *r, size_t off, uint32_t field, int wt, char **out, const char *what)
{
    const char *name = strrchr(what, '.');
    int rc = pb_expect(r, off, field, name ? name + 1 : what, wt, 2);
    return rc ? rc : pb_string(r, out, what);
}

/* Enter a sub-message: returns the saved end; the caller restores it. */
static int pb_enter(pb_t *r, const char *what, size_t *saved_end)
{
    size_t s = 0, l = 0;
    int rc = pb_bytes(r, &s, &l, what);
    if (rc)
        return rc;
    if (r->depth >= PB_MAX_DEPTH)
        return pb_fail(r, s, "messages nested deeper than %d", PB_MAX_DEPTH);
    r->depth++;
    *saved_end = r->end;
    r->pos = s;
    r->end = s + l;
    return LOOM_OK;
}

static void pb_leave(pb_t *r, size_t saved_end)
{
    r->pos = r->end;
    r->end = saved_end;
    r->depth--;
}

/* A repeated scalar field, packed (wire type 2) or not. kind: 0 varint
 * (int64), 5 fixed32 float, 1 fixed64 double. Appends to *vals / *dvals
 * (*n values, room for *cap). */
static int pb_repeated(pb_t *r, int wt, int kind, const char *what, int64_t **vals, double **dvals,
                       size_t *n, size_t *cap)
{
    size_t start = r->pos, end;
    bool packed = wt == 2;
    if (packed) {
        size_t s, l;
        int rc = pb_bytes(r, &s, &l, what);
        if (rc)
            return rc;
        start = s;
        end = s + l;
    } else if (wt != kind) {
        return pb_fail(r, start, "%s has wire type %s, expected %s or packed", what, wt_name(wt),
                       wt_name(kind));
    } else {
        end = r->end;
    }
    size_t saved_pos = r->pos, saved_end = r->end;
    r->pos = start;
    r->end = end;
    int rc = LOOM_OK;
    do {
        if (*n >= ((size_t)1 << 28)) {
            rc = pb_fail(r, r->pos, "%s: more than 2^28 values", what);
            break;
        }
        if (kind == 0) {
            uint64_t v;
            if ((rc = pb_varint(r, &v, what)))
                break;
            if (loom_vec_reserve((void **)vals, cap, *n + 1, sizeof **vals, 16)) {
                rc = loom_err_set(r->err, LOOM_ENOMEM, "%s: out of memory", r->src);
                break;
            }
            (*vals)[(*n)++] = (int64_t)v;
        } else {
            size_t w = kind == 5 ? 4 : 8;
            if (r->end - r->pos < w) {
                rc = pb_fail(r, r->pos, "truncated %s", what);
                break;
            }
            double d;
            if (w == 4) {
                float f;
                memcpy(&f, r->p + r->pos, 4);
                d = f;
            } else {
                memcpy(&d, r->p + r->pos, 8);
            }
            r->pos += w;
            if (loom_vec_reserve((void **)dvals, cap, *n + 1, sizeof **dvals, 16)) {
                rc = loom_err_set(r->err, LOOM_ENOMEM, "%s: out of memory", r->src);
                break;
            }
            (*dvals)[(*n)++] = d;
        }
    } while (packed && r->pos < r->end);
    size_t stop = r->pos;
    r->end = saved_end;
    r->pos = packed ? saved_pos : stop;
    return rc;
}

/* ---------------------------------------------------------------- tensors */

size_t est_dtype_size(int dtype)
{
    switch (dtype) {
    case LOOM_EST_T_FLOAT:
    case LOOM_EST_T_INT32:
    case LOOM_EST_T_UINT32: return 4;
    case LOOM_EST_T_UINT8:
    case LOOM_EST_T_INT8:
    case LOOM_EST_T_BOOL: return 1;
    case LOOM_EST_T_UINT16:
    case LOOM_EST_T_INT16:
    case LOOM_EST_T_FLOAT16:
    case LOOM_EST_T_BFLOAT16: return 2;
    case LOOM_EST_T_INT64:
    case LOOM_EST_T_DOUBLE:
    case LOOM_EST_T_UINT64:
    case LOOM_EST_T_COMPLEX64: return 8;
    case LOOM_EST_T_COMPLEX128: return 16;
    default: return 0;
    }
}

const char *est_dtype_name(int dtype)
{
    static const char *names[] = {"undefined",  "float",   "uint8",  "int8",   "uint16",
                                  "int16",      "int32",   "int64",  "string", "bool",
                                  "float16",    "double",  "uint32", "uint64", "complex64",
                                  "complex128", "bfloat16"};
    return dtype >= 0 && dtype <= 16 ? names[dtype] : "unknown";
}

static bool dtype_is_int(int d)
{
    return d == LOOM_EST_T_INT64 || d == LOOM_EST_T_INT32 || d == LOOM_EST_T_BOOL ||
           d == LOOM_EST_T_INT8 || d == LOOM_EST_T_UINT8 || d == LOOM_EST_T_INT16 ||
           d == LOOM_EST_T_UINT16 || d == LOOM_EST_T_UINT32 || d == LOOM_EST_T_UINT64;
}

int64_t loom_est_numel(const loom_est_tensor_t *t)
{
    if (t->rank < 0)
        return -1;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0)
            return -1;
        n *= t->dims[i];
    }
    return n;
}

static void tensor_clear(loom_est_tensor_t *t)
{
    free(t->name);
    free(t->ival);
    free(t->fval);
    memset(t, 0, sizeof *t);
}

/* One little-endian integer element of type dtype at p, widened. */
static int64_t raw_int(const uint8_t *p, int dtype)
{
#define LOAD(type)                                                                                 \
    do {                                                                                           \
        type x_;                                                                                   \
        memcpy(&x_, p, sizeof x_);                                                                 \
        return (int64_t)x_;                                                                        \
    } while (0)
    switch (dtype) {
    case LOOM_EST_T_INT64:
    case LOOM_EST_T_UINT64: LOAD(int64_t);
    case LOOM_EST_T_INT32: LOAD(int32_t);
    case LOOM_EST_T_UINT32: LOAD(uint32_t);
    case LOOM_EST_T_INT16: LOAD(int16_t);
    case LOOM_EST_T_UINT16: LOAD(uint16_t);
    case LOOM_EST_T_INT8: return (int8_t)p[0];
    default: return p[0];
    }
#undef LOAD
}

/* Converts raw little-endian bytes of a small constant into values. */
static void raw_to_values(loom_est_tensor_t *t, const uint8_t *raw, size_t n)
{
    size_t es = est_dtype_size(t->dtype);
    if (dtype_is_int(t->dtype)) {
        t->ival = calloc(n ? n : 1, sizeof *t->ival);
        if (!t->ival)
            return;
        for (size_t i = 0; i < n; i++)
            t->ival[i] = raw_int(raw + i * es, t->dtype);
    } else if (t->dtype == LOOM_EST_T_FLOAT || t->dtype == LOOM_EST_T_DOUBLE) {
        t->fval = calloc(n ? n : 1, sizeof *t->fval);
        if (!t->fval)
            return;
        for (size_t i = 0; i < n; i++) {
            if (t->dtype == LOOM_EST_T_FLOAT) {
                float f;
                memcpy(&f, raw + i * 4, 4);
                t->fval[i] = f;
            } else {
                memcpy(&t->fval[i], raw + i * 8, 8);
            }
        }
    } else {
        return;
    }
    t->nval = n;
    t->has_val = true;
}

/* The messages an embedded field holds, parsed by pb_message. */
typedef enum {
    MSG_TENSOR,      /* TensorProto, loom_est_tensor_t */
    MSG_DIM,         /* TensorShapeProto.Dimension idx, loom_est_tensor_t */
    MSG_TENSOR_TYPE, /* TypeProto.Tensor, loom_est_tensor_t */
    MSG_VALUE_INFO,  /* ValueInfoProto, loom_est_tensor_t */
    MSG_ATTR,        /* AttributeProto, loom_est_attr_t */
    MSG_NODE,        /* NodeProto, raw_node_t */
    MSG_GRAPH,       /* GraphProto, raw_graph_t */
} msg_kind_t;

static int pb_message(pb_t *r, const char *name, long idx, msg_kind_t kind, void *msg);

static int parse_tensor(pb_t *r, loom_est_tensor_t *t)
{
    int64_t *dims = NULL, *ints = NULL;
    double *reals = NULL;
    size_t ndims = 0, nints = 0, nreals = 0;
    size_t cap_dims = 0, cap_ints = 0, cap_reals = 0;
    size_t raw_s = 0, raw_l = 0, msg_start = r->pos;
    bool has_raw = false, external = false;
    int64_t dtype = 0;
    int rc = LOOM_OK;
    t->rank = -1;
    t->producer = -1;
    t->view_of = -1;
    uint32_t f;
    int wt;
    size_t off;
    while (pb_next(r, &f, &wt, &off, &rc)) {
        uint64_t v;
        switch (f) {
        case 1:
            rc = pb_repeated(r, wt, 0, "TensorProto.dims", &dims, NULL, &ndims, &cap_dims);
            break;
        case 2:
            if (!(rc = pb_expect(r, off, f, "data_type", wt, 0)) &&
                !(rc = pb_varint(r, &v, "data_type")))
                dtype = (int64_t)v;
            break;
        case 4: rc = pb_repeated(r, wt, 5, "float_data", NULL, &reals, &nreals, &cap_reals); break;
        case 5: rc = pb_repeated(r, wt, 0, "int32_data", &ints, NULL, &nints, &cap_ints); break;
        case 7: rc = pb_repeated(r, wt, 0, "int64_data", &ints, NULL, &nints, &cap_ints); break;
        case 10:
            rc = pb_repeated(r, wt, 1, "double_data", NULL, &reals, &nreals, &cap_reals);
            break;
        case 8: rc = pb_text(r, off, f, wt, &t->name, "TensorProto.name"); break;
        case 9:
            if (!(rc = pb_expect(r, off, f, "raw_data", wt, 2)))
                rc = pb_bytes(r, &raw_s, &raw_l, "raw_data");
            has_raw = true;
            break;
        case 14:
            if (!(rc = pb_expect(r, off, f, "data_location", wt, 0)) &&
                !(rc = pb_varint(r, &v, "data_location")))
                external = v == 1;
            break;
        default: rc = pb_skip(r, wt, f); break;
        }
    }
    if (rc)
        goto out;
    if (dtype < 0 || dtype > 16) {
        rc = pb_fail(r, msg_start, "data_type %lld is not an ONNX type", (long long)dtype);
        goto out;
    }
    if (ndims > LOOM_EST_MAX_RANK) {
        rc = pb_fail(r, msg_start, "%zu dimensions; at most %d are supported", ndims,
                     LOOM_EST_MAX_RANK);
        goto out;
    }
    t->dtype = (int)dtype;
    t->rank = (int)ndims;
    int64_t numel = 1;
    for (size_t i = 0; i < ndims; i++) {
        if (dims[i] < 0 || dims[i] > EST_MAX_DIM) {
            rc = pb_fail(r, msg_start, "dims[%zu] = %lld is out of range [0, 2^40]", i,
                         (long long)dims[i]);
            goto out;
        }
        t->dims[i] = dims[i];
        if (dims[i] && numel > EST_MAX_NUMEL / dims[i]) {
            rc = pb_fail(r, msg_start, "dims multiply to more than 2^48 elements");
            goto out;
        }
        numel *= dims[i];
    }
    size_t es = est_dtype_size(t->dtype);
    if (has_raw && es && !external && (uint64_t)raw_l != (uint64_t)numel * es) {
        rc = pb_fail(r, raw_s, "raw_data holds %zu bytes, but %lld elements of %s need %llu", raw_l,
                     (long long)numel, est_dtype_name(t->dtype), (unsigned long long)numel * es);
        goto out;
    }
    if (has_raw && es && !external) {
        t->raw_off = raw_s;
        t->raw_len = raw_l;
    }
    if (numel <= EST_MAX_FOLD && !external) {
        if (has_raw && es) {
            raw_to_values(t, r->p + raw_s, (size_t)numel);
        } else if (nints == (size_t)numel && dtype_is_int(t->dtype)) {
            t->ival = ints;
            ints = NULL;
            t->nval = nints;
            t->has_val = true;
        } else if (nreals == (size_t)numel &&
                   (t->dtype == LOOM_EST_T_FLOAT || t->dtype == LOOM_EST_T_DOUBLE)) {
            t->fval = reals;
            reals = NULL;
            t->nval = nreals;
            t->has_val = true;
        }
    }
out:
    free(dims);
    free(ints);
    free(reals);
    return rc;
}

/* ------------------------------------------------------------ value infos */

static int parse_dim(pb_t *r, loom_est_tensor_t *t, int idx)
{
    int64_t val = -1;
    int rc = LOOM_OK;
    uint32_t f;
    int wt;
    size_t off;
    while (pb_next(r, &f, &wt, &off, &rc)) {
        uint64_t v;
        char *param = NULL;
        if (f == 1) {
            if (!(rc = pb_expect(r, off, f, "dim_value", wt, 0)) &&
                !(rc = pb_varint(r, &v, "dim_value"))) {
                if ((int64_t)v < 0 || (int64_t)v > EST_MAX_DIM)
                    rc = pb_fail(r, off, "dim_value %lld is out of range [0, 2^40]", (long long)v);
                val = (int64_t)v;
            }
        } else if (f == 2) {
            if (!(rc = pb_expect(r, off, f, "dim_param", wt, 2)))
                rc = pb_string(r, &param, "dim_param");
            free(param);
            val = -1;
        } else {
            rc = pb_skip(r, wt, f);
        }
    }
    if (idx < LOOM_EST_MAX_RANK)
        t->decl_dims[idx] = val;
    return rc;
}

static int parse_tensor_type(pb_t *r, loom_est_tensor_t *t)
{
    int rc = LOOM_OK;
    uint32_t f;
    int wt;
    size_t off;
    while (pb_next(r, &f, &wt, &off, &rc)) {
        size_t end;
        uint64_t v;
        if (f == 1) {
            if (!(rc = pb_expect(r, off, f, "elem_type", wt, 0)) &&
                !(rc = pb_varint(r, &v, "elem_type"))) {
                if (v > 16)
                    rc = pb_fail(r, off, "elem_type %llu is not an ONNX type",
                                 (unsigned long long)v);
                t->dtype = (int)v;
            }
        } else if (f == 2) {
            if ((rc = pb_expect(r, off, f, "shape", wt, 2)))
                break;
            size_t saved = pb_push(r, "shape", -1);
            if ((rc = pb_enter(r, "shape", &end)))
                break;
            t->decl_rank = 0;
            while (pb_next(r, &f, &wt, &off, &rc)) {
                if (f != 1) {
                    rc = pb_skip(r, wt, f);
                    continue;
                }
                if ((rc = pb_expect(r, off, f, "dim", wt, 2)))
                    break;
                if (t->decl_rank >= LOOM_EST_MAX_RANK) {
                    rc = pb_fail(r, off, "more than %d dimensions", LOOM_EST_MAX_RANK);
                    break;
                }
                rc = pb_message(r, "dim", t->decl_rank, MSG_DIM, t);
                t->decl_rank++;
            }
            pb_leave(r, end);
            pb_pop(r, saved);
        } else {
            rc = pb_skip(r, wt, f);
        }
    }
    return rc;
}

/* ValueInfoProto -> name, dtype, declared shape. */
static int parse_value_info(pb_t *r, loom_est_tensor_t *t)
{
    int rc = LOOM_OK;
    t->decl_rank = -1;
    uint32_t f;
    int wt;
    size_t off;
    while (pb_next(r, &f, &wt, &off, &rc)) {
        size_t end;
        if (f == 1) {
            rc = pb_text(r, off, f, wt, &t->name, "ValueInfoProto.name");
        } else if (f == 2) {
            if ((rc = pb_expect(r, off, f, "type", wt, 2)))
                break;
            size_t saved = pb_push(r, "type", -1);
            if ((rc = pb_enter(r, "type", &end)))
                break;
            while (pb_next(r, &f, &wt, &off, &rc)) {
                if (f != 1) {
                    rc = pb_skip(r, wt, f);
                    continue;
                }
                if ((rc = pb_expect(r, off, f, "tensor_type", wt, 2)))
                    break;
                rc = pb_message(r, "tensor_type", -1, MSG_TENSOR_TYPE, t);
            }
            pb_leave(r, end);
            pb_pop(r, saved);
        } else {
            rc = pb_skip(r, wt, f);
        }
    }
    return rc;
}

/* ------------------------------------------------------------------ nodes */

typedef struct strv {
    char **v;
    size_t n, cap;
} strv_t;

static int strv_push(pb_t *r, strv_t *s, const char *what)
{
    if (loom_vec_reserve((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v, 4))
        return loom_err_set(r->err, LOOM_ENOMEM, "%s: out of memory", r->src);
    s->v[s->n] = NULL;
    int rc = pb_string(r, &s->v[s->n], what);
    s->n++;
    return rc;
}

static void strv_free(strv_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
}

static void attr_clear(loom_est_attr_t *a)
{
    free(a->name);
    free(a->s);
    free(a->ints);
    free(a->floats);
    if (a->t) {
        tensor_clear(a->t);
        free(a->t);
    }
}

static int parse_attr(pb_t *r, loom_est_attr_t *a)
{
    int rc = LOOM_OK;
    size_t cap_floats = a->nfloats, cap_ints = a->nints; /* what they hold at least */
    uint32_t f;
    int wt;
    size_t off;
    while (pb_next(r, &f, &wt, &off, &rc)) {
        uint64_t v;
        switch (f) {
        case 1: rc = pb_text(r, off, f, wt, &a->name, "AttributeProto.name"); break;
        case 20:
            if (!(rc = pb_expect(r, off, f, "type", wt, 0)) && !(rc = pb_varint(r, &v, "type")))
                a->type = (int)(v & 0xff);
            break;
        case 2:
            if (!(rc = pb_expect(r, off, f, "f", wt, 5))) {
                if (r->end - r->pos < 4) {
                    rc = pb_fail(r, r->pos, "truncated float f");
                    break;
                }
                float x;
                memcpy(&x, r->p + r->pos, 4);
                r->pos += 4;
                a->f = x;
                a->has_f = true;
            }
            break;
        case 3:
            if (!(rc = pb_expect(r, off, f, "i", wt, 0)) && !(rc = pb_varint(r, &v, "i"))) {
                a->i = (int64_t)v;
                a->has_i = true;
            }
            break;
        case 4:
            if (!(rc = pb_expect(r, off, f, "s", wt, 2))) {
                size_t s, l;
                if ((rc = pb_bytes(r, &s, &l, "s")))
                    break;
                free(a->s);
                a->s = strndup((const char *)r->p + s, l);
                if (!a->s)
                    rc = loom_err_set(r->err, LOOM_ENOMEM, "%s: out of memory", r->src);
            }
            break;
        case 5: {
            if ((rc = pb_expect(r, off, f, "t", wt, 2)))
                break;
            if (a->t) {
                tensor_clear(a->t);
                free(a->t);
            }
            a->t = calloc(1, sizeof *a->t);
            if (!a->t) {
                rc = loom_err_set(r->err, LOOM_ENOMEM, "%s: out of memory", r->src);
                break;
            }
            rc = pb_message(r, "t", -1, MSG_TENSOR, a->t);
            break;
        }
        case 7:
            rc = pb_repeated(r, wt, 5, "AttributeProto.floats", NULL, &a->floats, &a->nfloats,
                             &cap_floats);
            break;
        case 8:
            rc = pb_repeated(r, wt, 0, "AttributeProto.ints", &a->ints, NULL, &a->nints, &cap_ints);
            break;
        default: rc = pb_skip(r, wt, f); break;
        }
    }
    return rc;
}

typedef struct raw_node {
    strv_t in, out;
    char *name, *op, *domain;
    loom_est_attr_t *attrs;
    size_t nattrs, cap_attrs;
    size_t offset;
} raw_node_t;

static void raw_node_free(raw_node_t *n)
{
    strv_free(&n->in);
    strv_free(&n->out);
    free(n->name);
    free(n->op);
    free(n->domain);
    for (size_t i = 0; i < n->nattrs; i++)
        attr_clear(&n->attrs[i]);
    free(n->attrs);
}

static int parse_node(pb_t *r, raw_node_t *n)
{
    int rc = LOOM_OK;
    uint32_t f;
    int wt;
    size_t off;
    while (pb_next(r, &f, &wt, &off, &rc)) {
        switch (f) {
        case 1:
            if (!(rc = pb_expect(r, off, f, "input", wt, 2)))
                rc = strv_push(r, &n->in, "NodeProto.input");
            break;
        case 2:
            if (!(rc = pb_expect(r, off, f, "output", wt, 2)))
                rc = strv_push(r, &n->out, "NodeProto.output");
            break;
        case 3: rc = pb_text(r, off, f, wt, &n->name, "NodeProto.name"); break;
        case 4: rc = pb_text(r, off, f, wt, &n->op, "NodeProto.op_type"); break;
        case 7: rc = pb_text(r, off, f, wt, &n->domain, "NodeProto.domain"); break;
        case 5: {
            if ((rc = pb_expect(r, off, f, "attribute", wt, 2)))
                break;
            if (loom_vec_reserve((void **)&n->attrs, &n->cap_attrs, n->nattrs + 1, sizeof *n->attrs,
                                 4)) {
                rc = loom_err_set(r->err, LOOM_ENOMEM, "%s: out of memory", r->src);
                break;
            }
            loom_est_attr_t *na = &n->attrs[n->nattrs++];
            memset(na, 0, sizeof *na);
            rc = pb_message(r, "attribute", (long)n->nattrs - 1, MSG_ATTR, na);
            break;
        }
        default: rc = pb_skip(r, wt, f); break;
        }
    }
    return rc;
}

/* ------------------------------------------------------------------ graph */

typedef struct raw_graph {
    raw_node_t *nodes;
    size_t nnodes;
    loom_est_tensor_t *inits, *inputs, *outputs;
    size_t ninits, ninputs, noutputs;
    size_t cap_nodes, cap_inits, cap_inputs, cap_outputs;
} raw_graph_t;

static void raw_graph_free(raw_graph_t *g)
{
    for (size_t i = 0; i < g->nnodes; i++)
        raw_node_free(&g->nodes[i]);
    free(g->nodes);
    for (size_t i = 0; i < g->ninits; i++)
        tensor_clear(&g->inits[i]);
    for (size_t i = 0; i < g->ninputs; i++)
        tensor_clear(&g->inputs[i]);
    for (size_t i = 0; i < g->noutputs; i++)
        tensor_clear(&g->outputs[i]);
    free(g->inits);
    free(g->inputs);
    free(g->outputs);
}

/* Room for element n of *arr (capacity *cap), zeroed. */
static int grow(pb_t *r, void **arr, size_t *cap, size_t n, size_t size)
{
    if (loom_vec_reserve(arr, cap, n + 1, size, 16))
        return loom_err_set(r->err, LOOM_ENOMEM, "%s: out of memory", r->src);
    memset((char *)*arr + n * size, 0, size);
    return LOOM_OK;
}

static int parse_graph(pb_t *r, raw_graph_t *g)
{
    int rc = LOOM_OK;
    uint32_t f;
    int wt;
    size_t off;
    while (pb_next(r, &f, &wt, &off, &rc)) {
        switch (f) {
        case 1:
            if ((rc = pb_expect(r, off, f, "node", wt, 2)) ||
                (rc = grow(r, (void **)&g->nodes, &g->cap_nodes, g->nnodes, sizeof *g->nodes)))
                break;
            g->nodes[g->nnodes].offset = off;
            g->nnodes++;
            rc = pb_message(r, "node", (long)g->nnodes - 1, MSG_NODE, &g->nodes[g->nnodes - 1]);
            break;
        case 5:
            if ((rc = pb_expect(r, off, f, "initializer", wt, 2)) ||
                (rc = grow(r, (void **)&g->inits, &g->cap_inits, g->ninits, sizeof *g->inits)))
                break;
            g->ninits++;
            rc = pb_message(r, "initializer", (long)g->ninits - 1, MSG_TENSOR,
                            &g->inits[g->ninits - 1]);
            break;
        case 11:
        case 12: {
            bool in = f == 11;
            loom_est_tensor_t **arr = in ? &g->inputs : &g->outputs;
            size_t *n = in ? &g->ninputs : &g->noutputs;
            size_t *cap = in ? &g->cap_inputs : &g->cap_outputs;
            const char *what = in ? "input" : "output";
            if ((rc = pb_expect(r, off, f, what, wt, 2)) ||
                (rc = grow(r, (void **)arr, cap, *n, sizeof **arr)))
                break;
            (*n)++;
            rc = pb_message(r, what, (long)*n - 1, MSG_VALUE_INFO, &(*arr)[*n - 1]);
            break;
        }
        default: rc = pb_skip(r, wt, f); break;
        }
    }
    return rc;
}

/* Parses embedded message field `name` (element idx of a repeated field, or
 * -1) into msg, whose type `kind` says. The path names it in errors. */
static int pb_message(pb_t *r, const char *name, long idx, msg_kind_t kind, void *msg)
{
    size_t saved = pb_push(r, name, idx), end;
    int rc = pb_enter(r, name, &end);
    if (rc != LOOM_OK)
        return rc;
    switch (kind) {
    case MSG_TENSOR: rc = parse_tensor(r, msg); break;
    case MSG_DIM: rc = parse_dim(r, msg, (int)idx); break;
    case MSG_TENSOR_TYPE: rc = parse_tensor_type(r, msg); break;
    case MSG_VALUE_INFO: rc = parse_value_info(r, msg); break;
    case MSG_ATTR: rc = parse_attr(r, msg); break;
    case MSG_NODE: rc = parse_node(r, msg); break;
    case MSG_GRAPH: rc = parse_graph(r, msg); break;
    }
    pb_leave(r, end);
    pb_pop(r, saved);
    return rc;
}

/* ------------------------------------------------------------------ model */

int est_tensor_find(const loom_est_model_t *m, const char *name)
{
    uint64_t idx;
    return loom_map_get_str(&m->names, name, &idx) ? (int)idx : -1;
}

/* Adds a tensor (taking ownership of src's contents) or returns the index
 * of the existing one with that name; *is_new tells which. On an error src
 * is left to the caller. */
static int tensor_intern(loom_est_model_t *m, loom_est_tensor_t *src, bool *is_new, loom_err_t *err)
{
    *is_new = false;
    int idx = est_tensor_find(m, src->name);
    if (idx >= 0)
        return idx;
    if (m->nt >= (size_t)INT32_MAX / 2)
        return loom_err_set(err, LOOM_ELIMIT, "%s: too many tensors", m->source);
    if (loom_vec_reserve((void **)&m->t, &m->capt, m->nt + 1, sizeof *m->t, 64) != LOOM_OK ||
        loom_map_put_str(&m->names, src->name, m->nt) < 0)
        return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", m->source);
    m->t[m->nt] = *src;
    memset(src, 0, sizeof *src);
    m->t[m->nt].producer = -1;
    m->t[m->nt].view_of = -1;
    *is_new = true;
    return (int)m->nt++;
}

static int intern_name(loom_est_model_t *m, const char *name, loom_err_t *err)
{
    loom_est_tensor_t t = {0};
    t.rank = -1;
    t.decl_rank = -1;
    t.name = strdup(name);
    if (!t.name)
        return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", m->source);
    bool is_new;
    int idx = tensor_intern(m, &t, &is_new, err);
    if (!is_new || idx < 0)
        free(t.name);
    return idx;
}

static const char *node_label(const loom_est_node_t *n, char *buf, size_t len)
{
    snprintf(buf, len, "'%s' (%s)", n->name && *n->name ? n->name : "(unnamed)", n->op);
    return buf;
}

/* Links names to tensor indices, checks producers and definitions, sorts. */
static int link_graph(loom_est_model_t *m, raw_graph_t *g, loom_err_t *err)
{
    int rc;
    bool is_new;
    char lbl[300];
    for (size_t i = 0; i < g->ninits; i++) {
        if (!g->inits[i].name || !*g->inits[i].name)
            return loom_err_set(err, LOOM_EINVAL,
                                "%s: ModelProto.graph.initializer[%zu] has no name", m->source, i);
        int idx = tensor_intern(m, &g->inits[i], &is_new, err);
        if (idx < 0)
            return idx;
        if (!is_new)
            return loom_err_set(err, LOOM_EINVAL, "%s: initializer '%s' is defined twice",
                                m->source, m->t[idx].name);
        m->t[idx].is_init = true;
        m->t[idx].decl_rank = -1;
    }
    for (size_t i = 0; i < g->ninputs; i++) {
        if (!g->inputs[i].name || !*g->inputs[i].name)
            return loom_err_set(err, LOOM_EINVAL, "%s: ModelProto.graph.input[%zu] has no name",
                                m->source, i);
        int idx = est_tensor_find(m, g->inputs[i].name);
        if (idx >= 0 && m->t[idx].is_init)
            continue; /* IR < 4 lists initializers as inputs too */
        if (idx >= 0)
            return loom_err_set(err, LOOM_EINVAL, "%s: graph input '%s' is listed twice", m->source,
                                g->inputs[i].name);
        if (g->inputs[i].decl_rank < 0)
            return loom_err_set(err, LOOM_EINVAL,
                                "%s: graph input '%s' has no tensor type with a shape", m->source,
                                g->inputs[i].name);
        idx = tensor_intern(m, &g->inputs[i], &is_new, err);
        if (idx < 0)
            return idx;
        m->t[idx].is_input = true;
    }
    m->n = calloc(g->nnodes ? g->nnodes : 1, sizeof *m->n);
    if (!m->n)
        return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", m->source);
    m->nn = g->nnodes;
    for (size_t i = 0; i < g->nnodes; i++) {
        raw_node_t *rn = &g->nodes[i];
        loom_est_node_t *n = &m->n[i];
        n->offset = rn->offset;
        n->name = rn->name ? rn->name : strdup("");
        n->op = rn->op;
        n->domain = rn->domain;
        n->attrs = rn->attrs;
        n->nattrs = rn->nattrs;
        rn->name = rn->op = rn->domain = NULL;
        rn->attrs = NULL;
        rn->nattrs = 0;
        if (!n->name)
            return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", m->source);
        if (!n->op || !*n->op)
            return loom_err_set(err, LOOM_EINVAL,
                                "%s: byte %zu: ModelProto.graph.node[%zu] has no op_type",
                                m->source, rn->offset, i);
        n->in = calloc(rn->in.n ? rn->in.n : 1, sizeof *n->in);
        n->out = calloc(rn->out.n ? rn->out.n : 1, sizeof *n->out);
        if (!n->in || !n->out)
            return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", m->source);
        n->nin = rn->in.n;
        n->nout = rn->out.n;
        for (size_t k = 0; k < rn->out.n; k++) {
            if (!*rn->out.v[k]) {
                n->out[k] = -1; /* an unused optional output */
                continue;
            }
            int idx = intern_name(m, rn->out.v[k], err);
            if (idx < 0)
                return idx;
            loom_est_tensor_t *t = &m->t[idx];
            if (t->is_init || t->is_input)
                return loom_err_set(
                    err, LOOM_EINVAL, "%s: node %s output '%s' overwrites a graph %s", m->source,
                    node_label(n, lbl, sizeof lbl), t->name, t->is_init ? "initializer" : "input");
            if (t->producer >= 0) {
                char l2[300];
                return loom_err_set(err, LOOM_EINVAL,
                                    "%s: tensor '%s' is produced twice: by node %s and by node %s",
                                    m->source, t->name,
                                    node_label(&m->n[t->producer], l2, sizeof l2),
                                    node_label(n, lbl, sizeof lbl));
            }
            t->producer = (int)i;
            n->out[k] = idx;
        }
    }
    for (size_t i = 0; i < m->nn; i++) {
        raw_node_t *rn = &g->nodes[i];
        loom_est_node_t *n = &m->n[i];
        for (size_t k = 0; k < rn->in.n; k++) {
            if (!*rn->in.v[k]) {
                n->in[k] = -1;
                continue;
            }
            int idx = est_tensor_find(m, rn->in.v[k]);
            if (idx < 0 || (!m->t[idx].is_init && !m->t[idx].is_input && m->t[idx].producer < 0))
                return loom_err_set(err, LOOM_EINVAL,
                                    "%s: node %s input %zu '%s' is undefined (no initializer, "
                                    "graph input or node output has that name)",
                                    m->source, node_label(n, lbl, sizeof lbl), k, rn->in.v[k]);
            n->in[k] = idx;
        }
    }
    m->graph_outputs = calloc(g->noutputs ? g->noutputs : 1, sizeof *m->graph_outputs);
    if (!m->graph_outputs)
        return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", m->source);
    for (size_t i = 0; i < g->noutputs; i++) {
        int idx = g->outputs[i].name ? est_tensor_find(m, g->outputs[i].name) : -1;
        if (idx < 0)
            return loom_err_set(err, LOOM_EINVAL,
                                "%s: graph output '%s' is not produced by any node", m->source,
                                g->outputs[i].name ? g->outputs[i].name : "");
        m->t[idx].is_output = true;
        m->graph_outputs[m->nouts++] = idx;
    }
    /* Kahn's algorithm; a leftover node lies on (or after) a cycle. */
    int *indeg = calloc(m->nn ? m->nn : 1, sizeof *indeg);
    m->order = calloc(m->nn ? m->nn : 1, sizeof *m->order);
    /* consumers as CSR */
    size_t nedges = 0;
    for (size_t i = 0; i < m->nn; i++)
        nedges += m->n[i].nin;
    int *cstart = calloc(m->nt + 1, sizeof *cstart);
    int *cons = calloc(nedges ? nedges : 1, sizeof *cons);
    rc = LOOM_OK;
    if (!indeg || !m->order || !cstart || !cons) {
        rc = loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", m->source);
        goto done;
    }
    for (size_t i = 0; i < m->nn; i++)
        for (size_t k = 0; k < m->n[i].nin; k++)
            if (m->n[i].in[k] >= 0) {
                cstart[m->n[i].in[k] + 1]++;
                if (m->t[m->n[i].in[k]].producer >= 0)
                    indeg[i]++;
            }
    for (size_t t = 0; t < m->nt; t++)
        cstart[t + 1] += cstart[t];
    {
        int *fill = calloc(m->nt ? m->nt : 1, sizeof *fill);
        if (!fill) {
            rc = loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", m->source);
            goto done;
        }
        for (size_t i = 0; i < m->nn; i++)
            for (size_t k = 0; k < m->n[i].nin; k++) {
                int t = m->n[i].in[k];
                if (t >= 0)
                    cons[cstart[t] + fill[t]++] = (int)i;
            }
        free(fill);
    }
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < m->nn; i++)
        if (indeg[i] == 0)
            m->order[tail++] = (int)i;
    while (head < tail) {
        const loom_est_node_t *n = &m->n[m->order[head++]];
        for (size_t k = 0; k < n->nout; k++) {
            int t = n->out[k];
            if (t < 0)
                continue;
            for (int c = cstart[t]; c < cstart[t + 1]; c++)
                if (--indeg[cons[c]] == 0)
                    m->order[tail++] = cons[c];
        }
    }
    if (tail < m->nn) {
        for (size_t i = 0; i < m->nn; i++)
            if (indeg[i] > 0) {
                rc = loom_err_set(err, LOOM_EINVAL,
                                  "%s: byte %llu: the graph has a cycle through node %s "
                                  "(%zu nodes cannot be ordered)",
                                  m->source, (unsigned long long)m->n[i].offset,
                                  node_label(&m->n[i], lbl, sizeof lbl), m->nn - tail);
                break;
            }
    }
done:
    free(indeg);
    free(cstart);
    free(cons);
    return rc;
}

int loom_est_model_parse(const void *data, size_t len, const char *name, loom_est_model_t **out,
                         loom_err_t *err)
{
    *out = NULL;
    loom_est_model_t *m = calloc(1, sizeof *m);
    if (!m)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    loom_map_init(&m->names, LOOM_MAP_STR);
    m->source = strdup(name ? name : "<onnx>");
    if (!m->source) {
        free(m);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    pb_t r = {.p = data, .pos = 0, .end = len, .src = m->source, .err = err};
    snprintf(r.path, sizeof r.path, "ModelProto");
    r.plen = strlen(r.path);
    raw_graph_t g = {0};
    bool have_graph = false;
    int rc = LOOM_OK;
    m->opset = -1;
    uint32_t f;
    int wt;
    size_t off;
    while (pb_next(&r, &f, &wt, &off, &rc)) {
        size_t end;
        uint64_t v;
        if (f == 1) {
            if (!(rc = pb_expect(&r, off, f, "ir_version", wt, 0)) &&
                !(rc = pb_varint(&r, &v, "ir_version")))
                m->ir_version = (int64_t)v;
        } else if (f == 7) {
            if ((rc = pb_expect(&r, off, f, "graph", wt, 2)))
                break;
            if (have_graph) {
                rc = pb_fail(&r, off, "a second graph field (graphs are not merged)");
                break;
            }
            have_graph = true;
            rc = pb_message(&r, "graph", -1, MSG_GRAPH, &g);
        } else if (f == 8) {
            if ((rc = pb_expect(&r, off, f, "opset_import", wt, 2)))
                break;
            size_t saved = pb_push(&r, "opset_import", -1);
            char *domain = NULL;
            int64_t version = -1;
            if (!(rc = pb_enter(&r, "opset_import", &end))) {
                size_t o2;
                while (pb_next(&r, &f, &wt, &o2, &rc)) {
                    if (f == 1 && !(rc = pb_expect(&r, o2, f, "domain", wt, 2)))
                        rc = pb_string(&r, &domain, "domain");
                    else if (f == 2 && !(rc = pb_expect(&r, o2, f, "version", wt, 0)) &&
                             !(rc = pb_varint(&r, &v, "version")))
                        version = (int64_t)v;
                    else if (f != 1 && f != 2)
                        rc = pb_skip(&r, wt, f);
                }
                pb_leave(&r, end);
            }
            if (!rc && (!domain || !*domain || strcmp(domain, "ai.onnx") == 0))
                m->opset = version;
            free(domain);
            if (!rc)
                pb_pop(&r, saved);
        } else {
            rc = pb_skip(&r, wt, f);
        }
    }
    if (!rc && !have_graph)
        rc = loom_err_set(err, LOOM_EINVAL, "%s: ModelProto has no graph (field 7)%s", m->source,
                          len == 0 ? "; the file is empty" : "");
    if (!rc)
        rc = link_graph(m, &g, err);
    raw_graph_free(&g);
    if (rc) {
        loom_est_model_free(m);
        return rc;
    }
    *out = m;
    return LOOM_OK;
}

int loom_est_model_load(const char *path, loom_est_model_t **out, loom_err_t *err)
{
    *out = NULL;
    /* Read, never mapped: a file truncated under a mapping is SIGBUS
     * (issue 30); O_NONBLOCK and a regular file only (issue 18). */
    loom_file_t f;
    int rc = loom_file_open(&f, path, 0, LOOM_EST_MODEL_MAX, err);
    if (rc)
        return rc;
    loom_buf_t b = LOOM_BUF_INIT;
    rc = loom_file_read(&f, &b, err);
    loom_file_close(&f);
    if (!rc)
        rc = loom_est_model_parse(b.data, b.len, path, out, err);
    loom_buf_free(&b);
    return rc;
}

void loom_est_model_free(loom_est_model_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nt; i++)
        tensor_clear(&m->t[i]);
    for (size_t i = 0; i < m->nn; i++) {
        loom_est_node_t *n = &m->n[i];
        free(n->name);
        free(n->op);
        free(n->domain);
        free(n->in);
        free(n->out);
        for (size_t k = 0; k < n->nattrs; k++)
            attr_clear(&n->attrs[k]);
        free(n->attrs);
    }
    free(m->t);
    free(m->n);
    free(m->order);
    loom_map_free(&m->names);
    free(m->graph_outputs);
    free(m->source);
    free(m);
}

size_t loom_est_model_node_count(const loom_est_model_t *m)
{
    return m->nn;
}
int64_t loom_est_model_opset(const loom_est_model_t *m)
{
    return m->opset;
}

const loom_est_attr_t *loom_est_attr(const loom_est_node_t *n, const char *name)
{
    for (size_t i = 0; i < n->nattrs; i++)
        if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

int loom_est_tensor_shape(const loom_est_model_t *m, const char *tensor, int64_t dims[8])
{
    int idx = est_tensor_find(m, tensor);
    if (idx < 0 || m->t[idx].rank < 0)
        return -1;
    for (int i = 0; i < m->t[idx].rank; i++)
        dims[i] = m->t[idx].dims[i];
    return m->t[idx].rank;
}
