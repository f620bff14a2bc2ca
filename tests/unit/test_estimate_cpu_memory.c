/* The memory model's PyTorch-CPU mechanisms found on the estimator's
 * development cases (issue #24, workloads/models/devcases.txt): a Linear's
 * copy of a non-contiguous input, the caller's hold on the step's inputs,
 * dropout's noise tensor on the CPU, and oneDNN's primitive cache. Small
 * hand-built graphs whose answers are worked out in the comments. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

#include "est_build.h"
#include "loom/estimate.h"

static const loom_est_device_t cpu = {.name = "test-cpu",
                                      .flops_fp32 = 1e9,
                                      .flops_half = 1e9,
                                      .flops_vector = 1e9,
                                      .mem_bandwidth = 1e9,
                                      .allocator = LOOM_EST_ALLOC_MALLOC};
static const loom_est_device_t gpu = {.name = "test-gpu",
                                      .flops_fp32 = 1e9,
                                      .flops_half = 1e9,
                                      .flops_vector = 1e9,
                                      .mem_bandwidth = 1e9,
                                      .allocator = LOOM_EST_ALLOC_CUDA_CACHING};

/* x[N,4,8] -> (Transpose perm) -> MatMul W[8,16] -> Add b[16] -> y */
static loom_est_model_t *linear3d(const int64_t *perm)
{
    pbw_t g = {0}, n;
    const char *mm_in = "x,W";
    if (perm) {
        onnx_node_begin(&n, "Transpose", "t", "x", "xt");
        attr_ints(&n, "perm", 3, perm);
        onnx_node_end(&g, &n);
        mm_in = "xt,W";
    }
    onnx_node(&g, "MatMul", "mm", mm_in, "p");
    onnx_node(&g, "Add", "bias", "p,b", "y");
    onnx_init(&g, "W", 1, 2, (int64_t[]){8, 16}, NULL, 0);
    onnx_init(&g, "b", 1, 1, (int64_t[]){16}, NULL, 0);
    onnx_value_info(&g, 11, "x", 1, 3, (int64_t[]){-1, 4, 8});
    onnx_value_info(&g, 12, "y", 1, 3, (int64_t[]){-1, 4, 16});
    return build(&g);
}

/* nn.MultiheadAttention(batch_first=True) projects x.transpose(0, 1):
 * linear over a non-contiguous 3-D input copies it (matmul's fold) and
 * keeps the copy for the weight's gradient. */
static void test_linear_noncontig_input_copy(void **state)
{
    (void)state;
    loom_est_model_t *plain = linear3d(NULL), *tr = linear3d((int64_t[]){1, 0, 2});
    loom_est_options_t o = {.batch = 2, .train = true, .optimizer = LOOM_EST_SGD, .device = &gpu};
    loom_est_result_t a, b;
    run_ok(plain, &o, &a);
    run_ok(tr, &o, &b);
    /* x is 2*4*8 floats = 256 B, y 512 B. The peak is at the loss: weights
     * 576, x (the caller's), y and its log-softmax (512 each) as
     * activations, the loss's two gradients (512 each). Contiguous: the
     * Linear keeps x itself; transposed: its copy (256 B) too, an
     * activation of its own kept until the Linear's backward. */
    assert_int_equal(a.mem.activations, 256 + 512 + 512);
    assert_int_equal(b.mem.activations, 256 + 256 + 512 + 512);
    assert_int_equal(a.mem.peak_live, 576 + 1280 + 1024);
    assert_int_equal(b.mem.peak_live, a.mem.peak_live + 256);
    loom_est_result_free(&a);
    loom_est_result_free(&b);
    /* at inference nothing is kept: the copy lives only beside its output */
    o.train = false;
    run_ok(plain, &o, &a);
    run_ok(tr, &o, &b);
    assert_int_equal(a.mem.peak_live, 576 + 256 + 512);
    assert_int_equal(b.mem.peak_live, 576 + 256 + 256 + 512);
    loom_est_result_free(&a);
    loom_est_result_free(&b);
    loom_est_model_free(plain);
    loom_est_model_free(tr);
}

/* The step's inputs belong to the caller (`x = batch` lives across the
 * whole step), so they are not freed after their last use. */
static void test_inputs_live_through_step(void **state)
{
    (void)state;
    pbw_t g = {0};
    onnx_node(&g, "Relu", "r1", "x", "h");
    onnx_node(&g, "Relu", "r2", "h", "y");
    onnx_value_info(&g, 11, "x", 1, 2, (int64_t[]){-1, 16});
    onnx_value_info(&g, 12, "y", 1, 2, (int64_t[]){-1, 16});
    loom_est_model_t *m = build(&g);
    loom_est_options_t o = {.batch = 2, .device = &cpu};
    loom_est_result_t r;
    run_ok(m, &o, &r);
    /* 128 B each: x, h, y at once (x was freed after r1: 256 before) */
    assert_int_equal(r.mem.peak_live, 3 * 128);
    loom_est_result_free(&r);
    loom_est_model_free(m);
}

/* x[N,64] -> MatMul V[64,64] -> Dropout -> (d, mask) -> MatMul W[64,4] -> y;
 * the ratio an input when ratio >= 0 (ONNX's default 0.5 otherwise) */
static loom_est_model_t *dropout_mm(float ratio)
{
    pbw_t g = {0};
    onnx_node(&g, "MatMul", "mm1", "x,V", "h");
    onnx_node(&g, "Dropout", "drop", ratio >= 0 ? "h,r" : "h", "d,mask");
    if (ratio >= 0)
        onnx_init_float(&g, "r", ratio);
    onnx_node(&g, "MatMul", "mm2", "d,W", "y");
    onnx_init(&g, "V", 1, 2, (int64_t[]){64, 64}, NULL, 0);
    onnx_init(&g, "W", 1, 2, (int64_t[]){64, 4}, NULL, 0);
    onnx_value_info(&g, 11, "x", 1, 2, (int64_t[]){-1, 64});
    onnx_value_info(&g, 12, "y", 1, 2, (int64_t[]){-1, 4});
    return build(&g);
}

/* PyTorch 1.13 fuses dropout (native_dropout, a bool mask) only on CUDA;
 * on the CPU the noise is a float tensor kept for x * noise's backward. */
static void test_dropout_mask_cpu_float(void **state)
{
    (void)state;
    loom_est_model_t *m = dropout_mm(-1);
    loom_est_options_t o = {.batch = 64, .train = true, .optimizer = LOOM_EST_SGD, .device = &gpu};
    loom_est_result_t g, c;
    run_ok(m, &o, &g);
    o.device = &cpu;
    run_ok(m, &o, &c);
    /* batch 64: x, d 16 KiB each; the mask 4096 elements, 4 KiB as bool
     * on the GPU, 16 KiB as fp32 noise on the CPU; all three kept at the
     * peak (the second MatMul's backward) */
    assert_int_equal(g.mem.activations, 16384 + 16384 + 4096);
    assert_int_equal(c.mem.activations, 3 * 16384);
    assert_int_equal(c.mem.peak_live, g.mem.peak_live + 12288);
    loom_est_result_free(&g);
    loom_est_result_free(&c);
    loom_est_model_free(m);
    /* at ratio 0 PyTorch's dropout returns its input, on either device:
     * d is h itself, no noise or mask; x and h are kept */
    m = dropout_mm(0);
    run_ok(m, &o, &c);
    assert_int_equal(c.mem.activations, 2 * 16384);
    o.device = &gpu;
    run_ok(m, &o, &g);
    assert_int_equal(g.mem.activations, 2 * 16384);
    loom_est_result_free(&g);
    loom_est_result_free(&c);
    loom_est_model_free(m);
}

/* torch.onnx reorders an RNN's gates and stacks its directions with
 * Slice, Concat and Unsqueeze of the parameters; PyTorch runs the layer on
 * the parameters themselves: the layout is free, and the estimate is the
 * one of the same layer with its weights given directly. */
static void test_rnn_weight_layout(void **state)
{
    (void)state;
    loom_est_model_t *plain = lstm_small(), *laid = lstm_small_layout();
    loom_est_options_t o = {.batch = 4, .train = true, .optimizer = LOOM_EST_ADAM, .device = &cpu};
    loom_est_result_t a, b;
    run_ok(plain, &o, &a);
    run_ok(laid, &o, &b);
    assert_int_equal(b.params, a.params);
    assert_int_equal(b.mem.activations, a.mem.activations);
    /* the peak: the same but for the Slice bounds and axes, four int64
     * initializers here (buffers; an export has them as Constant nodes) */
    assert_int_equal(b.buffers, 4);
    assert_int_equal(b.mem.peak_live, a.mem.peak_live + 4 * 8);
    assert_int_equal(b.nops, a.nops + 5);
    for (size_t i = 0; i < b.nops; i++)
        if (strcmp(b.ops[i].op_type, "LSTM") != 0 &&
            strcmp(b.ops[i].op_type, "CrossEntropy(loss)")) {
            assert_int_equal(b.ops[i].bytes, 0);
            assert_true(b.ops[i].time_s == 0);
        }
    assert_true(fabs(b.step_time_s - a.step_time_s) <= 1e-12 + 1e-9 * a.step_time_s);
    loom_est_result_free(&a);
    loom_est_result_free(&b);
    loom_est_model_free(plain);
    loom_est_model_free(laid);
}

static void conv(pbw_t *g, const char *name, const char *ins, const char *out, bool pad)
{
    pbw_t n;
    onnx_node_begin(&n, "Conv", name, ins, out);
    if (pad)
        attr_ints(&n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    onnx_node_end(g, &n);
}

/* x[N,4,8,8] -> conv 3x3 (4->4) -> conv 3x3 (4->4, the same shapes) ->
 * conv 3x3 (4->8) -> conv 1x1 (8->8) -> y: oneDNN runs the 3x3s (two
 * distinct primitives); a 1x1 stride-1 conv of a batch under 16 takes
 * PyTorch's own GEMM path. */
static void test_onednn_primitive_cache(void **state)
{
    (void)state;
    pbw_t g = {0};
    conv(&g, "c1", "x,w1", "a", true);
    conv(&g, "c2", "a,w2", "b", true);
    conv(&g, "c3", "b,w3", "c", true);
    conv(&g, "c4", "c,w4", "y", false);
    onnx_init(&g, "w1", 1, 4, (int64_t[]){4, 4, 3, 3}, NULL, 0);
    onnx_init(&g, "w2", 1, 4, (int64_t[]){4, 4, 3, 3}, NULL, 0);
    onnx_init(&g, "w3", 1, 4, (int64_t[]){8, 4, 3, 3}, NULL, 0);
    onnx_init(&g, "w4", 1, 4, (int64_t[]){8, 8, 1, 1}, NULL, 0);
    onnx_value_info(&g, 11, "x", 1, 4, (int64_t[]){-1, 4, 8, 8});
    onnx_value_info(&g, 12, "y", 1, 4, (int64_t[]){-1, 8, 8, 8});
    loom_est_model_t *m = build(&g);
    loom_est_options_t o = {.batch = 2, .device = &cpu};
    loom_est_result_t r;
    run_ok(m, &o, &r);
    /* inference: two forward primitives of 52 KiB */
    assert_int_equal(r.mem.context, 2 * 52 * 1024);
    assert_int_equal(r.mem.total, r.mem.peak_reserved + 2 * 52 * 1024);
    loom_est_result_free(&r);
    /* training: and their backward ones, 76 KiB each */
    o.train = true;
    o.optimizer = LOOM_EST_SGD;
    run_ok(m, &o, &r);
    assert_int_equal(r.mem.context, 2 * (52 + 76) * 1024);
    loom_est_result_free(&r);
    /* batch 16: the 1x1 conv is oneDNN's too */
    o.batch = 16;
    run_ok(m, &o, &r);
    assert_int_equal(r.mem.context, 3 * (52 + 76) * 1024);
    loom_est_result_free(&r);
    /* a GPU device has no such cache in its heap */
    o.device = &gpu;
    run_ok(m, &o, &r);
    assert_int_equal(r.mem.context, 0);
    loom_est_result_free(&r);
    loom_est_model_free(m);
}

/* x[N,3 steps,4] -> LSTM(H 2, batch first) -> Y[N,3,1,2]. PyTorch's CPU
 * LSTM computes the input projection of the sequence first (6 rows x 8 =
 * 48 floats at batch 2: 192 bytes, freed when the layer returns), and in
 * training its autograd graph holds RNN_STEP_GRAPH_BYTES (13800) of host
 * heap per time step; a GPU device has neither in its memory. */
static void test_rnn_projection_and_graph(void **state)
{
    (void)state;
    loom_est_model_t *m = lstm_small(); /* est_build.h */
    loom_est_options_t o = {.batch = 2, .train = true, .optimizer = LOOM_EST_SGD, .device = &gpu};
    loom_est_result_t gr, cr;
    run_ok(m, &o, &gr);
    o.device = &cpu;
    run_ok(m, &o, &cr);
    /* the graph: 3 steps x 13800 bytes (and glibc's rounding of the few
     * small tensors, under 8 bytes each); the projection at the peak */
    uint64_t more = cr.mem.activations - gr.mem.activations;
    assert_true(cr.mem.activations > gr.mem.activations);
    assert_true(more >= 3 * 13800 && more < 3 * 13800 + 64);
    assert_int_equal(cr.mem.temporaries, 192);
    loom_est_result_free(&gr);
    loom_est_result_free(&cr);
    /* inference: no autograd graph; the projection is still made */
    o.train = false;
    run_ok(m, &o, &cr);
    assert_true(cr.mem.peak_live < 1024);
    assert_int_equal(cr.mem.temporaries, 192);
    loom_est_result_free(&cr);
    loom_est_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_noncontig_input_copy),
        cmocka_unit_test(test_inputs_live_through_step),
        cmocka_unit_test(test_dropout_mask_cpu_float),
        cmocka_unit_test(test_rnn_weight_layout),
        cmocka_unit_test(test_onednn_primitive_cache),
        cmocka_unit_test(test_rnn_projection_and_graph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
