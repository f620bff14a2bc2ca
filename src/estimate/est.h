/* Private parts of the estimator, shared by onnx.c (reader), shape.c
 * (inference and constant folding) and cost.c. The graph's types are
 * public (loom/estimate.h, "The graph"): the zoo reads them. */
#ifndef LOOM_EST_PRIVATE_H
#define LOOM_EST_PRIVATE_H

#include "loom/estimate.h"

#define EST_MAX_FOLD 4096 /* elements of a constant we keep values of */

size_t est_dtype_size(int dtype);
const char *est_dtype_name(int dtype);
int est_tensor_find(const loom_est_model_t *m, const char *name);

/* An Einsum's multiply-adds (every letter's size multiplied) and its M, N, K. */
bool est_einsum_sizes(const loom_est_model_t *m, const loom_est_node_t *n, double *total,
                      double *mm, double *nn, double *kk);
/* True for ops whose output aliases the input storage in PyTorch. */
bool est_op_is_view(const char *op);

#endif
