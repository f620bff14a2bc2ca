/* Shape inference, constant folding, FLOPs and the memory timeline
 * (src/estimate/shape.c, cost.c) on small hand-built graphs whose answers
 * are computed by hand in the comments. */
#include <stdio.h>

#include "test_util.h"

#include "est_build.h"
#include "loom/estimate.h"

static void expect_run_error(loom_est_model_t *m, int64_t batch, const char *needle)
{
    loom_est_options_t o = {.batch = batch};
    loom_est_result_t r;
    loom_err_t err = {0};
    assert_int_equal(loom_est_run(m, &o, &r, &err), LOOM_EINVAL);
    if (!strstr(err.msg, needle))
        fail_msg("error '%s' lacks '%s'", err.msg, needle);
}

static void expect_shape(loom_est_model_t *m, const char *t, int rank, const int64_t *dims)
{
    int64_t d[8];
    int r = loom_est_tensor_shape(m, t, d);
    if (r != rank)
        fail_msg("%s: rank %d, expected %d", t, r, rank);
    for (int i = 0; i < rank; i++)
        if (d[i] != dims[i])
            fail_msg("%s: dim %d is %lld, expected %lld", t, i, (long long)d[i],
                     (long long)dims[i]);
}

/* x[N,3,32,32] -> Conv(16, 3x3, pad 1) -> Relu -> MaxPool(2, 2) -> Flatten
 * -> Gemm(10, transB) -> y[N,10] */
static loom_est_model_t *small_cnn(void)
{
    pbw_t g = {0}, n;
    int64_t xd[4] = {-1, 3, 32, 32}, wd[4] = {16, 3, 3, 3}, bd[1] = {16}, fw[2] = {10, 4096},
            fb[1] = {10}, yd[2] = {-1, 10}, pads[4] = {1, 1, 1, 1}, k2[2] = {2, 2};
    onnx_node_begin(&n, "Conv", "conv", "x,w,b", "c");
    attr_ints(&n, "pads", 4, pads);
    onnx_node_end(&g, &n);
    onnx_node(&g, "Relu", "relu", "c", "r");
    onnx_node_begin(&n, "MaxPool", "pool", "r", "p");
    attr_ints(&n, "kernel_shape", 2, k2);
    attr_ints(&n, "strides", 2, k2);
    onnx_node_end(&g, &n);
    onnx_node(&g, "Flatten", "flat", "p", "f");
    onnx_node_begin(&n, "Gemm", "fc", "f,fw,fb", "y");
    attr_int(&n, "transB", 1);
    onnx_node_end(&g, &n);
    onnx_init(&g, "w", 1, 4, wd, NULL, 0);
    onnx_init(&g, "b", 1, 1, bd, NULL, 0);
    onnx_init(&g, "fw", 1, 2, fw, NULL, 0);
    onnx_init(&g, "fb", 1, 1, fb, NULL, 0);
    onnx_value_info(&g, 11, "x", 1, 4, xd);
    onnx_value_info(&g, 12, "y", 1, 2, yd);
    return build(&g);
}

static void test_cnn_shapes_and_flops(void **state)
{
    (void)state;
    loom_est_model_t *m = small_cnn();
    loom_est_options_t o = {.batch = 2, .train = true, .optimizer = LOOM_EST_SGD};
    loom_est_result_t r;
    run_ok(m, &o, &r);
    expect_shape(m, "c", 4, (int64_t[]){2, 16, 32, 32});
    expect_shape(m, "p", 4, (int64_t[]){2, 16, 16, 16});
    expect_shape(m, "f", 2, (int64_t[]){2, 4096});
    expect_shape(m, "y", 2, (int64_t[]){2, 10});
    /* params: 16*27 + 16 + 10*4096 + 10 */
    assert_int_equal(r.params, 41418);
    /* forward: conv 2*E*27 + E with E = 2*16*32*32 = 32768 -> 1802240;
     * relu E = 32768; maxpool 8192 outputs x 4 = 32768;
     * gemm 2*2*10*4096 + 20 = 163860. Sum 2031636. */
    assert_true(r.fwd_flops == 2031636.0);
    /* backward: conv 1x forward (x needs no gradient, only w) 1802240;
     * relu and pool 2x forward 65536 each; gemm 2x 327720. */
    assert_true(r.bwd_flops == 2261032.0);
    assert_int_equal(r.nops, 5);
    loom_est_result_free(&r);
    loom_est_model_free(m);
}

static const loom_est_device_t cpu = {.name = "test",
                                      .flops_fp32 = 1e9,
                                      .flops_half = 1e9,
                                      .flops_vector = 1e9,
                                      .mem_bandwidth = 1e9,
                                      .op_overhead_s = 0,
                                      .allocator = LOOM_EST_ALLOC_MALLOC};

static void test_cnn_memory_inference(void **state)
{
    (void)state;
    loom_est_model_t *m = small_cnn();
    loom_est_options_t o = {.batch = 2, .device = &cpu};
    loom_est_result_t r;
    run_ok(m, &o, &r);
    /* weights 4*(432+16+40960+10) = 165672; x 24576; conv out 131072.
     * On a CPU device oneDNN's scratch is in the peak: the conv reorders
     * x (24576) and w (1728) and computes into an output-sized buffer
     * (131072), and copies that into PyTorch's output while it lives, so
     * the peak is inside the conv: 165672 + x 24576 + scratch 131072 +
     * out 131072 = 452392 (without the scratch it was at the ReLU:
     * 165672 + 131072 + 131072 = 427816). */
    assert_int_equal(r.mem.peak_live, 452392);
    assert_int_equal(r.mem.weights, 165672);
    assert_int_equal(r.mem.activations, 24576 + 131072);
    assert_int_equal(r.mem.temporaries, 131072);
    /* malloc: no slack; the context is oneDNN's cached forward primitive
     * of the one convolution (52 KiB: cost.c, onednn_cache_bytes) */
    assert_int_equal(r.mem.context, 52 * 1024);
    assert_int_equal(r.mem.total, 452392 + 52 * 1024);
    /* roofline at 1 GFLOP/s and 1 GB/s: conv is compute bound:
     * 1802240 FLOP -> 1.80224 ms vs bytes 24576+1728+64+131072 */
    assert_true(r.ops[0].time_s > 1.8022e-3 && r.ops[0].time_s < 1.8023e-3);
    loom_est_result_free(&r);
    loom_est_model_free(m);
}

static void test_cnn_memory_training(void **state)
{
    (void)state;
    loom_est_model_t *m = small_cnn();
    loom_est_options_t o = {.batch = 2, .train = true, .optimizer = LOOM_EST_SGD, .device = &cpu};
    loom_est_result_t r;
    run_ok(m, &o, &r);
    /* Worked in docs/estimate.md ("A worked example"): the peak is in the
     * backward pass of the ReLU: weights 165672, gradients of fw, fb
     * 163880, kept x 24576 and relu output 131072, gradients of the conv
     * output and of the relu output 131072 each. */
    assert_int_equal(r.mem.peak_live, 747344);
    assert_int_equal(r.mem.weights, 165672);
    assert_int_equal(r.mem.gradients, 163880);
    assert_int_equal(r.mem.activations, 24576 + 131072);
    assert_int_equal(r.mem.temporaries, 2 * 131072);
    assert_int_equal(r.mem.optimizer_state, 0);
    loom_est_result_free(&r);
    /* Adam adds two states per parameter (2 x 165672, all fp32 params) */
    o.optimizer = LOOM_EST_ADAM;
    run_ok(m, &o, &r);
    assert_int_equal(r.mem.optimizer_state, 2 * 165672);
    assert_int_equal(r.mem.peak_live, 747344 + 2 * 165672);
    loom_est_result_free(&r);
    /* bf16: every float tensor halves, but the int64 max-pool indices do
     * not, so the peak moves to the pool's backward pass, where they still
     * live: fp32 there is 714576 = 649040 of floats + 65536 of indices;
     * 649040 / 2 + 65536 = 390056 (the ReLU's moment: 747344 / 2 = 373672). */
    o.optimizer = LOOM_EST_SGD;
    o.precision = LOOM_EST_BF16;
    run_ok(m, &o, &r);
    assert_int_equal(r.mem.peak_live, 390056);
    loom_est_result_free(&r);
    loom_est_model_free(m);
}

/* The shape subgraph torch exports for x.view(B, 4, 2, 4).transpose(1, 2):
 * Shape -> Gather(0) -> Unsqueeze -> Concat(consts) -> Reshape, then
 * attention-style MatMul and Softmax; and a decomposed LayerNorm. */
static void test_folding_and_fusion(void **state)
{
    (void)state;
    pbw_t g = {0}, n;
    int64_t xd[3] = {-1, 4, 8}, zero[1] = {0}, rest[3] = {4, 2, 4}, ax0[1] = {0};
    int64_t perm[4] = {0, 2, 1, 3}, permt[4] = {0, 1, 3, 2}, one[1] = {1}, d8[1] = {8};
    onnx_node(&g, "Shape", "shape", "x", "s");
    onnx_node(&g, "Gather", "g0", "s,i0", "b");
    onnx_node(&g, "Unsqueeze", "u", "b,axes", "bu");
    onnx_node(&g, "Concat", "cat", "bu,rest", "tgt");
    pbw_t *gg = &g;
    pbw_t c;
    onnx_node_begin(&c, "Concat", "unused", "", "");
    free(c.d);
    onnx_node(gg, "Reshape", "reshape", "x,tgt", "x4");
    onnx_node_begin(&n, "Transpose", "tr", "x4", "q");
    attr_ints(&n, "perm", 4, perm);
    onnx_node_end(&g, &n);
    onnx_node_begin(&n, "Transpose", "trk", "q", "kt");
    attr_ints(&n, "perm", 4, permt);
    onnx_node_end(&g, &n);
    onnx_node(&g, "MatMul", "scores", "q,kt", "sc");
    onnx_node(&g, "Softmax", "softmax", "sc", "att");
    /* LayerNorm over x's last axis, decomposed as torch 1.13 exports it */
    onnx_node_begin(&n, "ReduceMean", "ln_mean", "x", "mu");
    attr_ints(&n, "axes", 1, (int64_t[]){-1});
    onnx_node_end(&g, &n);
    onnx_node(&g, "Sub", "ln_sub", "x,mu", "d");
    onnx_node(&g, "Pow", "ln_pow", "d,two", "d2");
    onnx_node_begin(&n, "ReduceMean", "ln_var", "d2", "var");
    attr_ints(&n, "axes", 1, (int64_t[]){-1});
    onnx_node_end(&g, &n);
    onnx_node(&g, "Add", "ln_eps", "var,eps", "ve");
    onnx_node(&g, "Sqrt", "ln_sqrt", "ve", "sd");
    onnx_node(&g, "Div", "ln_div", "d,sd", "xn");
    onnx_node(&g, "Mul", "ln_mul", "xn,gamma", "xg");
    onnx_node(&g, "Add", "ln_add", "xg,beta", "ln");
    onnx_init(&g, "i0", 7, 0, NULL, zero, 1);
    onnx_init(&g, "axes", 7, 1, one, ax0, 1);
    onnx_init(&g, "rest", 7, 1, (int64_t[]){3}, rest, 3);
    onnx_init(&g, "two", 1, 0, NULL, NULL, 0);
    onnx_init(&g, "eps", 1, 0, NULL, NULL, 0);
    onnx_init(&g, "gamma", 1, 1, d8, NULL, 0);
    onnx_init(&g, "beta", 1, 1, d8, NULL, 0);
    onnx_value_info(&g, 11, "x", 1, 3, xd);
    onnx_value_info(&g, 12, "att", 1, 4, (int64_t[]){-1, 2, 4, 4});
    onnx_value_info(&g, 12, "ln", 1, 3, xd);
    loom_est_model_t *m = build(&g);
    loom_est_options_t o = {.batch = 3};
    loom_est_result_t r;
    run_ok(m, &o, &r);
    expect_shape(m, "tgt", 1, (int64_t[]){4});
    expect_shape(m, "x4", 4, (int64_t[]){3, 4, 2, 4});
    expect_shape(m, "q", 4, (int64_t[]){3, 2, 4, 4});
    expect_shape(m, "att", 4, (int64_t[]){3, 2, 4, 4});
    expect_shape(m, "ln", 3, (int64_t[]){3, 4, 8});
    /* the shape nodes fold away: Reshape, 2 Transposes, MatMul, Softmax and
     * one fused LayerNorm remain */
    assert_int_equal(r.nops, 6);
    bool fused = false;
    for (size_t i = 0; i < r.nops; i++)
        fused |= strcmp(r.ops[i].op_type, "LayerNorm(fused)") == 0;
    assert_true(fused);
    /* MatMul 2 * (3*2*4*4) * 4 = 768; softmax 5 * 96 = 480; LN members:
     * mean 96 + sub 96 + pow 96 + mean 96 + add 12 + sqrt 12 + div 96 +
     * mul 96 + add 96 = 696 */
    assert_true(r.fwd_flops == 768.0 + 480.0 + 696.0);
    /* batch 5 re-infers (no stale folded values) */
    loom_est_result_free(&r);
    o.batch = 5;
    run_ok(m, &o, &r);
    expect_shape(m, "att", 4, (int64_t[]){5, 2, 4, 4});
    loom_est_result_free(&r);
    loom_est_model_free(m);
}

static void test_broadcast_and_errors(void **state)
{
    (void)state;
    pbw_t g = {0};
    onnx_node(&g, "Add", "add", "a,b", "y");
    onnx_value_info(&g, 11, "a", 1, 3, (int64_t[]){-1, 1, 5});
    onnx_init(&g, "b", 1, 2, (int64_t[]){4, 1}, NULL, 0);
    loom_est_model_t *m = build(&g);
    loom_est_options_t o = {.batch = 2};
    loom_est_result_t r;
    run_ok(m, &o, &r);
    expect_shape(m, "y", 3, (int64_t[]){2, 4, 5});
    loom_est_result_free(&r);
    loom_est_model_free(m);

    g = (pbw_t){0};
    onnx_node(&g, "Add", "bad_add", "a,b", "y");
    onnx_value_info(&g, 11, "a", 1, 2, (int64_t[]){-1, 3});
    onnx_init(&g, "b", 1, 1, (int64_t[]){4}, NULL, 0);
    m = build(&g);
    expect_run_error(m, 2, "node 'bad_add' (Add): shapes [2x3] and [4] do not broadcast");
    loom_est_model_free(m);

    g = (pbw_t){0};
    onnx_node(&g, "NonMaxSuppression", "nms", "a", "y");
    onnx_value_info(&g, 11, "a", 1, 1, (int64_t[]){-1});
    m = build(&g);
    expect_run_error(m, 2, "operator 'NonMaxSuppression' is not supported");
    loom_est_model_free(m);

    g = (pbw_t){0};
    onnx_node(&g, "MatMul", "mm", "a,b", "y");
    onnx_value_info(&g, 11, "a", 1, 2, (int64_t[]){-1, 3});
    onnx_init(&g, "b", 1, 2, (int64_t[]){4, 5}, NULL, 0);
    m = build(&g);
    expect_run_error(m, 2, "inner dimensions differ: 3 and 4");
    loom_est_model_free(m);

    g = (pbw_t){0}; /* only the batch may be symbolic */
    onnx_node(&g, "Relu", "r", "a", "y");
    onnx_value_info(&g, 11, "a", 1, 2, (int64_t[]){-1, -1});
    m = build(&g);
    expect_run_error(m, 2, "graph input 'a' dimension 1 is symbolic");
    loom_est_model_free(m);

    g = (pbw_t){0}; /* a reshape whose shape is not constant */
    onnx_node(&g, "Reshape", "rs", "a,a2", "y");
    onnx_value_info(&g, 11, "a", 1, 1, (int64_t[]){-1});
    onnx_value_info(&g, 11, "a2", 7, 1, (int64_t[]){-1});
    m = build(&g);
    expect_run_error(m, 2, "target shape must be a constant");
    loom_est_model_free(m);

    g = (pbw_t){0}; /* a folded shape whose product overflows (found by fuzz.onnx) */
    onnx_node(&g, "Reshape", "rs", "a,shp", "y");
    onnx_value_info(&g, 11, "a", 1, 1, (int64_t[]){-1});
    onnx_init(&g, "shp", 7, 1, (int64_t[]){3}, (int64_t[]){1 << 30, 1 << 30, 1 << 30}, 3);
    m = build(&g);
    expect_run_error(m, 2, "more than 2^48 elements");
    loom_est_model_free(m);

    g = (pbw_t){0}; /* a required input left empty (found by fuzz.onnx, 2026-12-04) */
    onnx_node(&g, "MatMul", "mm", "a,,b", "y");
    onnx_value_info(&g, 11, "a", 1, 2, (int64_t[]){-1, 3});
    onnx_init(&g, "b", 1, 2, (int64_t[]){3, 5}, NULL, 0);
    m = build(&g);
    expect_run_error(m, 2, "node 'mm' (MatMul): input 1 is missing");
    loom_est_model_free(m);
}

static void test_lstm_and_gather(void **state)
{
    (void)state;
    pbw_t g = {0}, n;
    /* ids[N,5] -> Gather(emb[100,8]) -> [N,5,8] -> Transpose -> [5,N,8] -> LSTM(16) */
    onnx_node(&g, "Gather", "emb", "table,ids", "e");
    onnx_node_begin(&n, "Transpose", "tr", "e", "et");
    attr_ints(&n, "perm", 3, (int64_t[]){1, 0, 2});
    onnx_node_end(&g, &n);
    onnx_node_begin(&n, "LSTM", "lstm", "et,W,R", "Y,Yh,Yc");
    attr_int(&n, "hidden_size", 16);
    onnx_node_end(&g, &n);
    onnx_init(&g, "table", 1, 2, (int64_t[]){100, 8}, NULL, 0);
    onnx_init(&g, "W", 1, 3, (int64_t[]){1, 64, 8}, NULL, 0);
    onnx_init(&g, "R", 1, 3, (int64_t[]){1, 64, 16}, NULL, 0);
    onnx_value_info(&g, 11, "ids", 7, 2, (int64_t[]){-1, 5});
    onnx_value_info(&g, 12, "Y", 1, 4, (int64_t[]){5, 1, -1, 16});
    loom_est_model_t *m = build(&g);
    loom_est_options_t o = {.batch = 3};
    loom_est_result_t r;
    run_ok(m, &o, &r);
    expect_shape(m, "e", 3, (int64_t[]){3, 5, 8});
    expect_shape(m, "Y", 4, (int64_t[]){5, 1, 3, 16});
    expect_shape(m, "Yh", 3, (int64_t[]){1, 3, 16});
    /* LSTM: 15 steps x batch x (8H(I+H) + 14H) = 15 * (8*16*24 + 224) = 49440 */
    assert_true(r.fwd_flops == 49440.0);
    loom_est_result_free(&r);
    loom_est_model_free(m);
}

/* Linear as torch exports it: MatMul, then Add(bias, product) with the
 * bias first. The fused Linear must keep x (for W's gradient). */
/* Linear(8 -> 16) then an activation `act` (SiLU as torch exports it:
 * Sigmoid and Mul by the same input; or Relu). */
static loom_est_model_t *linear_act(bool silu)
{
    pbw_t g = {0};
    onnx_node(&g, "MatMul", "mm", "x,W", "p");
    onnx_node(&g, "Add", "bias", "b,p", "h");
    if (silu) {
        onnx_node(&g, "Sigmoid", "sig", "h", "s");
        onnx_node(&g, "Mul", "mul", "h,s", "y");
    } else {
        onnx_node(&g, "Relu", "relu", "h", "y");
    }
    onnx_init(&g, "W", 1, 2, (int64_t[]){8, 16}, NULL, 0);
    onnx_init(&g, "b", 1, 1, (int64_t[]){16}, NULL, 0);
    onnx_value_info(&g, 11, "x", 1, 2, (int64_t[]){-1, 8});
    onnx_value_info(&g, 12, "y", 1, 2, (int64_t[]){-1, 16});
    return build(&g);
}

static void test_silu_fused(void **state)
{
    (void)state;
    loom_est_model_t *m = linear_act(true), *relu = linear_act(false);
    loom_est_options_t o = {.batch = 2, .train = true, .optimizer = LOOM_EST_SGD, .device = &cpu};
    loom_est_result_t r, rr;
    run_ok(m, &o, &r);
    run_ok(relu, &o, &rr);
    /* one operator, sigmoid + mul = 2 x 32 elements of FLOPs */
    assert_int_equal(r.nops, 2);
    assert_string_equal(r.ops[1].op_type, "SiLU(fused)");
    assert_true(r.ops[1].fwd_flops == 64.0);
    /* The peak is in the Linear's backward (test_linear_keeps_input:
     * 1344), after the activation's backward released what it kept: the
     * same for both, and the fused group is freed like one operator. */
    assert_int_equal(r.mem.peak_live, 1344);
    assert_int_equal(rr.mem.peak_live, 1344);
    /* At inference SiLU is one output (128 B) beside its input h (128 B),
     * not a sigmoid output and a product, and the caller's x (64 B) lives
     * through the step: weights 576 + x + h + y = 896. A fused group frees
     * its inputs only after its output exists. */
    o.train = false;
    loom_est_result_free(&r);
    run_ok(m, &o, &r);
    assert_int_equal(r.mem.peak_live, 576 + 64 + 128 + 128);
    loom_est_result_free(&r);
    loom_est_result_free(&rr);
    loom_est_model_free(m);
    loom_est_model_free(relu);
}

static void test_linear_keeps_input(void **state)
{
    (void)state;
    pbw_t g = {0};
    onnx_node(&g, "MatMul", "mm", "x,W", "p");
    onnx_node(&g, "Add", "bias", "b,p", "l");
    onnx_node(&g, "Relu", "relu", "l", "y");
    onnx_init(&g, "W", 1, 2, (int64_t[]){8, 16}, NULL, 0);
    onnx_init(&g, "b", 1, 1, (int64_t[]){16}, NULL, 0);
    onnx_value_info(&g, 11, "x", 1, 2, (int64_t[]){-1, 8});
    onnx_value_info(&g, 12, "y", 1, 2, (int64_t[]){-1, 16});
    loom_est_model_t *m = build(&g);
    loom_est_options_t o = {.batch = 2, .train = true, .optimizer = LOOM_EST_SGD, .device = &cpu};
    loom_est_result_t r;
    run_ok(m, &o, &r);
    /* weights 576; the peak is in the Linear's backward, after both
     * parameter gradients (576) exist while x (64, kept) and the gradient
     * of the Linear's output (128) still live: 1344 */
    assert_int_equal(r.nops, 2);
    assert_string_equal(r.ops[0].op_type, "Linear(fused)");
    assert_int_equal(r.mem.peak_live, 1344);
    assert_int_equal(r.mem.activations, 64);
    assert_int_equal(r.mem.gradients, 576);
    loom_est_result_free(&r);
    /* Adam: two states (1152) for the whole step; the peak moves to the
     * optimizer step, where the single-tensor update makes two temporaries
     * of the largest parameter (W, 512 each) while the gradients (576)
     * and the caller's input x (64) live: 576 + 1152 + 576 + 1024 + 64 =
     * 3392 (backward: 1344 + 1152) */
    o.optimizer = LOOM_EST_ADAM;
    run_ok(m, &o, &r);
    assert_int_equal(r.mem.peak_live, 3392);
    assert_int_equal(r.mem.optimizer_state, 1152);
    assert_int_equal(r.mem.temporaries, 1024);
    loom_est_result_free(&r);
    loom_est_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cnn_shapes_and_flops), cmocka_unit_test(test_cnn_memory_inference),
        cmocka_unit_test(test_cnn_memory_training),  cmocka_unit_test(test_folding_and_fusion),
        cmocka_unit_test(test_broadcast_and_errors), cmocka_unit_test(test_lstm_and_gather),
        cmocka_unit_test(test_linear_keeps_input),   cmocka_unit_test(test_silu_fused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
