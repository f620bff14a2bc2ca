/* Private types of the estimator: the graph as read from ONNX, shared by
 * onnx.c (reader), shape.c (inference and constant folding) and cost.c. */
#ifndef LOOM_EST_PRIVATE_H
#define LOOM_EST_PRIVATE_H

#include "loom/estimate.h"

#define EST_MAX_RANK 8
#define EST_MAX_FOLD 4096 /* elements of a constant we keep values of */

/* ONNX TensorProto.DataType */
enum {
    EST_T_UNDEF = 0,
    EST_T_FLOAT = 1,
    EST_T_UINT8 = 2,
    EST_T_INT8 = 3,
    EST_T_UINT16 = 4,
    EST_T_INT16 = 5,
    EST_T_INT32 = 6,
    EST_T_INT64 = 7,
    EST_T_STRING = 8,
    EST_T_BOOL = 9,
    EST_T_FLOAT16 = 10,
    EST_T_DOUBLE = 11,
    EST_T_UINT32 = 12,
    EST_T_UINT64 = 13,
    EST_T_COMPLEX64 = 14,
    EST_T_COMPLEX128 = 15,
    EST_T_BFLOAT16 = 16
};

typedef struct est_tensor {
    char *name;
    int dtype;                  /* EST_T_*, 0 unknown */
    int rank;                   /* -1 unknown */
    int64_t dims[EST_MAX_RANK]; /* -1: symbolic / unknown */
    int producer;               /* node index, -1 none */
    bool is_init, is_input, is_output;
    /* Values of small constants (initializers, Constant nodes, folded
     * shape arithmetic); ints for integer/bool types, reals for floats. */
    bool has_val;
    size_t nval;
    int64_t *ival;
    double *fval;
    /* An initializer's raw_data: its place in the bytes the model was
     * parsed from (raw_len 0: none, or stored elsewhere), so that a reader
     * that keeps those bytes (the zoo's warm start) can take its values. */
    size_t raw_off, raw_len;
    /* Declared shape of a graph input (before the batch override). */
    int decl_rank;
    int64_t decl_dims[EST_MAX_RANK];
    /* Set by shape inference / costing. */
    bool inferred;
    bool requires_grad;
    int view_of; /* tensor whose storage this aliases, -1 */
} est_tensor_t;

typedef struct est_attr {
    char *name;
    int type; /* AttributeProto.AttributeType */
    int64_t i;
    double f;
    char *s;
    int64_t *ints;
    size_t nints;
    double *floats;
    size_t nfloats;
    est_tensor_t *t; /* TENSOR attribute (Constant value) */
    bool has_i, has_f;
} est_attr_t;

typedef struct est_node {
    char *name, *op, *domain;
    int *in; /* tensor indices; -1 = omitted optional input */
    size_t nin;
    int *out;
    size_t nout;
    est_attr_t *attrs;
    size_t nattrs;
    uint64_t offset; /* byte offset of the NodeProto in the file */
    bool folded;     /* every output is a known constant */
} est_node_t;

struct loom_est_model {
    char *source;
    int64_t ir_version, opset;
    est_tensor_t *t;
    size_t nt, capt;
    est_node_t *n;
    size_t nn, capn;
    int *order; /* topological order of nodes */
    /* name -> tensor index, open addressing */
    int *hash;
    size_t hcap;
    int *graph_outputs;
    size_t nouts;
};

size_t est_dtype_size(int dtype);
const char *est_dtype_name(int dtype);
int est_tensor_find(const loom_est_model_t *m, const char *name);
const est_attr_t *est_attr(const est_node_t *n, const char *name);
int64_t est_numel(const est_tensor_t *t); /* -1 if unknown */

/* shape.c: infers every tensor's shape in topological order, folding
 * constant shape arithmetic. Errors name the node and operator. */
int est_infer_shapes(loom_est_model_t *m, int64_t batch, loom_err_t *err);
/* An Einsum's multiply-adds (every letter's size multiplied) and its M, N, K. */
bool est_einsum_sizes(const loom_est_model_t *m, const est_node_t *n, double *total, double *mm,
                      double *nn, double *kk);
/* True for ops whose output aliases the input storage in PyTorch. */
bool est_op_is_view(const char *op);

#endif
