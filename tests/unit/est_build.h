/* The estimator tests' two steps: parse a hand-built ONNX graph (est_pb.h)
 * into a model, and run an estimate that must succeed; and a small LSTM
 * graph more than one test reasons about. */
#ifndef LOOM_TEST_EST_BUILD_H
#define LOOM_TEST_EST_BUILD_H
#include "est_pb.h"
#include "loom/estimate.h"
#include "test_util.h"

static inline loom_est_model_t *build(pbw_t *g)
{
    pbw_t m = onnx_model(g);
    loom_est_model_t *model = NULL;
    loom_err_t err = {0};
    if (loom_est_model_parse(m.d, m.n, "t.onnx", &model, &err))
        fail_msg("parse: %s", err.msg);
    free(m.d);
    return model;
}

static inline void run_ok(loom_est_model_t *m, const loom_est_options_t *o, loom_est_result_t *r)
{
    loom_err_t err = {0};
    if (loom_est_run(m, o, r, &err))
        fail_msg("run: %s", err.msg);
}

/* x[N, 3 steps, 4] -> OP (LSTM: 4 gates, GRU: 3; hidden 2, one direction,
 * batch first: layout 1) -> Y[N, 3, 1, 2]; W[1, 2 gates, 4], R[1, 2 gates,
 * 2], no bias. */
static inline loom_est_model_t *rnn_small(const char *op, int64_t gates)
{
    pbw_t g = {0}, n;
    onnx_node_begin(&n, op, "rnn", "x,W,R", "Y");
    attr_int(&n, "layout", 1);
    attr_int(&n, "hidden_size", 2);
    onnx_node_end(&g, &n);
    onnx_init(&g, "W", 1, 3, (int64_t[]){1, 2 * gates, 4}, NULL, 0);
    onnx_init(&g, "R", 1, 3, (int64_t[]){1, 2 * gates, 2}, NULL, 0);
    onnx_value_info(&g, 11, "x", 1, 3, (int64_t[]){-1, 3, 4});
    onnx_value_info(&g, 12, "Y", 1, 4, (int64_t[]){-1, 3, 1, 2});
    return build(&g);
}

static inline loom_est_model_t *lstm_small(void)
{
    return rnn_small("LSTM", 4);
}

/* Run M on D (batch 2; training with SGD when TRAIN) and give operator I's
 * class and time. */
static inline void op_class_time(loom_est_model_t *m, const loom_est_device_t *d, bool train,
                                 size_t i, int *cls, double *time_s)
{
    loom_est_options_t o = {.batch = 2, .train = train, .optimizer = LOOM_EST_SGD, .device = d};
    loom_est_result_t r;
    run_ok(m, &o, &r);
    if (i >= r.nops)
        fail_msg("operator %zu of %zu", i, r.nops);
    *cls = r.ops[i].cls;
    *time_s = r.ops[i].time_s;
    loom_est_result_free(&r);
}
/* lstm_small with its weights laid out the way torch.onnx exports them:
 * W = Unsqueeze(Concat(Slice(w, 0:4), Slice(w, 4:8)), 0) from w[8, 4] (the
 * gate reordering), R = Unsqueeze(r[8, 2], 0). */
static inline loom_est_model_t *lstm_small_layout(void)
{
    pbw_t g = {0}, n;
    onnx_node(&g, "Slice", "s0", "w,at0,at4,ax0", "w0");
    onnx_node(&g, "Slice", "s1", "w,at4,at8,ax0", "w1");
    onnx_node_begin(&n, "Concat", "cat", "w0,w1", "wc");
    attr_int(&n, "axis", 0);
    onnx_node_end(&g, &n);
    onnx_node(&g, "Unsqueeze", "uw", "wc,ax0", "W");
    onnx_node(&g, "Unsqueeze", "ur", "r,ax0", "R");
    onnx_node_begin(&n, "LSTM", "lstm", "x,W,R", "Y");
    attr_int(&n, "layout", 1);
    attr_int(&n, "hidden_size", 2);
    onnx_node_end(&g, &n);
    onnx_init(&g, "w", 1, 2, (int64_t[]){8, 4}, NULL, 0);
    onnx_init(&g, "r", 1, 2, (int64_t[]){8, 2}, NULL, 0);
    onnx_init(&g, "at0", 7, 1, (int64_t[]){1}, (int64_t[]){0}, 1);
    onnx_init(&g, "at4", 7, 1, (int64_t[]){1}, (int64_t[]){4}, 1);
    onnx_init(&g, "at8", 7, 1, (int64_t[]){1}, (int64_t[]){8}, 1);
    onnx_init(&g, "ax0", 7, 1, (int64_t[]){1}, (int64_t[]){0}, 1);
    onnx_value_info(&g, 11, "x", 1, 3, (int64_t[]){-1, 3, 4});
    onnx_value_info(&g, 12, "Y", 1, 4, (int64_t[]){-1, 3, 1, 2});
    return build(&g);
}
#endif
