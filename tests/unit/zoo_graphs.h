/* Hand-built ONNX graphs for the zoo's tests: MLPs of given widths (Gemm,
 * Relu, Gemm, ...) with an optional residual Add, as PyTorch exports them
 * (weights "fcK.weight" [out, in] with transB = 1, biases "fcK.bias"). */
#ifndef LOOM_TEST_ZOO_GRAPHS_H
#define LOOM_TEST_ZOO_GRAPHS_H
#include <stdio.h>

#include "est_pb.h"
#include "loom/estimate.h"

/* widths[0] inputs, widths[n-1] outputs; a Relu after every Gemm but the
 * last. residual_at >= 1: after that Gemm's Relu, Add the Relu's input
 * (the Gemm's output) back: a skip connection over the Relu. */
static inline pbw_t zoo_mlp(const int64_t *widths, int n, int residual_at)
{
    pbw_t g = {0};
    char prev[32] = "x", out[32], name[64], ins[128], w[32], b[32];
    for (int k = 1; k < n; k++) {
        snprintf(w, sizeof w, "fc%d.weight", k);
        snprintf(b, sizeof b, "fc%d.bias", k);
        snprintf(out, sizeof out, "h%d", k);
        snprintf(ins, sizeof ins, "%s,%s,%s", prev, w, b);
        snprintf(name, sizeof name, "fc%d", k);
        pbw_t node;
        onnx_node_begin(&node, "Gemm", name, ins, out);
        attr_int(&node, "transB", 1);
        onnx_node_end(&g, &node);
        int64_t wd[2] = {widths[k], widths[k - 1]}, bd[1] = {widths[k]};
        onnx_init(&g, w, 1, 2, wd, NULL, 0);
        onnx_init(&g, b, 1, 1, bd, NULL, 0);
        snprintf(prev, sizeof prev, "%s", out);
        if (k == n - 1)
            break;
        snprintf(out, sizeof out, "r%d", k);
        snprintf(name, sizeof name, "relu%d", k);
        onnx_node(&g, "Relu", name, prev, out);
        if (k == residual_at) {
            char sum[32];
            snprintf(sum, sizeof sum, "s%d", k);
            snprintf(ins, sizeof ins, "%s,%s", out, prev);
            snprintf(name, sizeof name, "add%d", k);
            onnx_node(&g, "Add", name, ins, sum);
            snprintf(out, sizeof out, "%s", sum);
        }
        snprintf(prev, sizeof prev, "%s", out);
    }
    int64_t xd[2] = {-1, widths[0]}, yd[2] = {-1, widths[n - 1]};
    onnx_value_info(&g, 11, "x", 1, 2, xd);
    onnx_value_info(&g, 12, prev, 1, 2, yd);
    return onnx_model(&g);
}

static inline loom_est_model_t *zoo_parse(const pbw_t *m)
{
    loom_est_model_t *model = NULL;
    loom_err_t err = {0};
    if (loom_est_model_parse(m->d, m->n, "t.onnx", &model, &err))
        fail_msg("unexpected error: %s", err.msg);
    return model;
}
#endif
