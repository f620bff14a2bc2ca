/* The calibrated step-time model (src/estimate/cost.c, "time"): cost
 * functions and curves, operator classes, the loss, the optimizer, the
 * fixed cost and fresh pages, on hand-built graphs and devices whose
 * answers are worked out in the comments. */
#include <math.h>

#include "test_util.h"

#include "est_build.h"
#include "loom/estimate.h"

static void near(double got, double want)
{
    if (fabs(got - want) > 1e-12 + 1e-9 * fabs(want))
        fail_msg("got %.15g, expected %.15g", got, want);
}

static void load_device(const char *text, loom_est_device_t *d)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fail_msg("device JSON: %s", je.text);
    loom_err_t err = {0};
    if (loom_est_device_from_json(j, "t.json", d, &err))
        fail_msg("device: %s", err.msg);
    json_decref(j);
}

static void test_curve_and_cost_fn(void **state)
{
    (void)state;
    /* [[10, 1], [1000, 3]]: at 100 halfway in log -> 2; clamped outside */
    loom_est_curve_t c = {.n = 2, .x = {10, 1000}, .y = {1, 3}};
    near(loom_est_curve_eval(&c, 100), 2);
    near(loom_est_curve_eval(&c, 1), 1);
    near(loom_est_curve_eval(&c, 1e6), 3);
    loom_est_curve_t none = {0};
    near(loom_est_curve_eval(&none, 5), 0);
    /* overhead 1e-6 + 3 steps x 1e-7 + strided 2e-6 + 4e8 FLOP at
     * 1e12 x 16/(16+16) + 1000 elements x 2 ns */
    loom_est_cost_fn_t f = {.set = true,
                            .overhead_s = 1e-6,
                            .step_s = 1e-7,
                            .strided_s = 2e-6,
                            .peak = 1e12,
                            .half_dim = 16,
                            .power = 1,
                            .elem_s = {.n = 1, .x = {1}, .y = {2e-9}}};
    near(loom_est_cost_eval(&f, 4e8, 16, 1000, 3, true), 1e-6 + 3e-7 + 2e-6 + 8e-4 + 2e-6);
    /* not strided, power 2 at d = 32: eff = 1024 / (1024 + 256) = 0.8 */
    f.power = 2;
    near(loom_est_cost_eval(&f, 4e8, 32, 0, 0, false), 1e-6 + 4e8 / 0.8e12);
    /* half_dim 0: the peak itself */
    f.half_dim = 0;
    near(loom_est_cost_eval(&f, 4e8, 1, 0, 0, false), 1e-6 + 4e-4);
}

/* x[N,4] -> Gemm(w[3,4], b[3], transB) -> Relu -> y[N,3] */
static loom_est_model_t *gemm_relu(void)
{
    pbw_t g = {0}, n;
    int64_t xd[2] = {-1, 4}, wd[2] = {3, 4}, bd[1] = {3}, yd[2] = {-1, 3};
    onnx_node_begin(&n, "Gemm", "fc", "x,w,b", "h");
    attr_int(&n, "transB", 1);
    onnx_node_end(&g, &n);
    onnx_node(&g, "Relu", "relu", "h", "y");
    onnx_init(&g, "w", 1, 2, wd, NULL, 0);
    onnx_init(&g, "b", 1, 1, bd, NULL, 0);
    onnx_value_info(&g, 11, "x", 1, 2, xd);
    onnx_value_info(&g, 12, "y", 1, 2, yd);
    return build(&g);
}

static const char *classes_device =
    "{\"name\": \"t\", \"flops_fp32\": 1e9, \"mem_bandwidth\": 1e9, \"allocator\": \"malloc\","
    " \"step_overhead_s\": 1e-5,"
    " \"op_classes\": {"
    "  \"matmul\": {\"fwd\": {\"overhead_s\": 1e-6, \"rate\": {\"peak\": 1e9, \"half_dim\": 2,"
    "                 \"power\": 1}, \"elem_s\": [[1, 1e-9]]},"
    "             \"bwd\": {\"overhead_s\": 2e-6, \"rate\": {\"peak\": 1e9, \"half_dim\": 2,"
    "                 \"power\": 1}, \"elem_s\": [[1, 1e-9]]}},"
    "  \"unary\": {\"fwd\": {\"overhead_s\": 5e-7, \"elem_s\": [[1, 1e-9]]},"
    "            \"bwd\": {\"overhead_s\": 1e-6, \"elem_s\": [[1, 1e-9]]}},"
    "  \"loss\": {\"fwd\": {\"overhead_s\": 3e-6}, \"bwd\": {\"overhead_s\": 4e-6}}},"
    " \"optimizer\": {\"sgd\": {\"tensor_s\": 1e-6, \"elem_s\": [[1, 1e-9]]}}}";

static void test_class_step_time(void **state)
{
    (void)state;
    loom_est_device_t d;
    load_device(classes_device, &d);
    assert_true(d.has_classes);
    loom_est_model_t *m = gemm_relu();
    loom_est_options_t o = {.batch = 2, .train = true, .optimizer = LOOM_EST_SGD, .device = &d};
    loom_est_result_t r;
    run_ok(m, &o, &r);
    /* Gemm (class matmul): E = 2x3 = 6, K = 4: 2*6*4 + 6 = 54 FLOP; its
     * backward: only w needs a gradient (x is data) -> 54 FLOP. d = min(M
     * 2, K 4, N 3) = 2 -> eff 2/(2+2) = 0.5 -> 54 / 5e8 = 1.08e-7 s.
     * elems = inputs 8 + 12 + 3 + output 6 = 29 -> 2.9e-8 s.
     *   forward  1e-6 + 1.08e-7 + 2.9e-8 = 1.137e-6
     *   backward 2e-6 + 1.08e-7 + 2.9e-8 = 2.137e-6 */
    assert_int_equal(r.ops[0].cls, LOOM_EST_CL_MATMUL);
    near(r.ops[0].time_s, 1.137e-6 + 2.137e-6);
    /* Relu (unary): 6 elements x 1 ns: 5.06e-7 + 1.006e-6 */
    assert_int_equal(r.ops[1].cls, LOOM_EST_CL_UNARY);
    near(r.ops[1].time_s, 5.06e-7 + 1.006e-6);
    /* the loss, a pseudo-operator after them: 3e-6 + 4e-6 */
    assert_int_equal(r.nops, 3);
    assert_string_equal(r.ops[2].op_type, "CrossEntropy(loss)");
    near(r.ops[2].time_s, 7e-6);
    near(r.fwd_time_s, 1.137e-6 + 5.06e-7 + 3e-6);
    near(r.bwd_time_s, 2.137e-6 + 1.006e-6 + 4e-6);
    /* SGD: 2 tensors x 1 us + 15 elements x 1 ns */
    near(r.opt_time_s, 2.015e-6);
    near(r.fixed_time_s, 1e-5);
    near(r.step_time_s, 2.3801e-5);
    /* no page fault cost on this device: no heap model, nothing fresh */
    assert_int_equal(r.fresh_bytes, 0);
    loom_est_result_free(&r);
    /* inference: forward only, no loss, optimizer or fixed cost */
    o.train = false;
    run_ok(m, &o, &r);
    assert_int_equal(r.nops, 2);
    near(r.step_time_s, 1.137e-6 + 5.06e-7);
    loom_est_result_free(&r);
    loom_est_model_free(m);
}

/* A GRU's recurrence has a class of its own where the device calibrated
 * one (its cell runs other kernels than the LSTM's); else the lstm class.
 * Both pay per time step. */
static void test_gru_class(void **state)
{
    (void)state;
    static const char *dev =
        "{\"name\": \"t\", \"flops_fp32\": 1e9, \"mem_bandwidth\": 1e9,"
        " \"op_classes\": {"
        "  \"lstm\": {\"fwd\": {\"step_s\": 1e-7}, \"bwd\": {\"step_s\": 2e-7}},"
        "  \"gru\": {\"fwd\": {\"step_s\": 3e-7}, \"bwd\": {\"step_s\": 5e-7}}}}";
    static const char *lstm_only =
        "{\"name\": \"t\", \"flops_fp32\": 1e9, \"mem_bandwidth\": 1e9,"
        " \"op_classes\": {"
        "  \"lstm\": {\"fwd\": {\"step_s\": 1e-7}, \"bwd\": {\"step_s\": 2e-7}}}}";
    loom_est_device_t with, without;
    load_device(dev, &with);
    load_device(lstm_only, &without);
    loom_est_model_t *m = rnn_small("GRU", 3); /* est_build.h */
    int cls;
    double t;
    /* no matmul class: the projection stays in the recurrence's terms;
     * 3 steps: 9e-7 forward, 1.5e-6 backward */
    op_class_time(m, &with, true, 0, &cls, &t);
    assert_int_equal(cls, LOOM_EST_CL_GRU);
    near(t, 9e-7 + 1.5e-6);
    op_class_time(m, &without, true, 0, &cls, &t);
    assert_int_equal(cls, LOOM_EST_CL_LSTM);
    near(t, 3e-7 + 6e-7);
    loom_est_model_free(m);
}

/* x[N,4,hw,hw] -> depthwise Conv k x k (group 4, same padding) -> y */
static loom_est_model_t *dwconv_k(int64_t k, int64_t hw)
{
    pbw_t g = {0}, n;
    onnx_node_begin(&n, "Conv", "dw", "x,w", "y");
    attr_int(&n, "group", 4);
    attr_ints(&n, "pads", 4, (int64_t[]){k / 2, k / 2, k / 2, k / 2});
    onnx_node_end(&g, &n);
    onnx_init(&g, "w", 1, 4, (int64_t[]){4, 1, k, k}, NULL, 0);
    onnx_value_info(&g, 11, "x", 1, 4, (int64_t[]){-1, 4, hw, hw});
    onnx_value_info(&g, 12, "y", 1, 4, (int64_t[]){-1, 4, hw, hw});
    return build(&g);
}

/* Depthwise convolutions are classed by kernel: 3 dwconv, 5 dwconv5, 7 and
 * up dwconv7, each falling back to the next smaller class a device has. */
static void test_dwconv_by_kernel(void **state)
{
    (void)state;
    static const char *all =
        "{\"name\": \"t\", \"flops_fp32\": 1e9, \"mem_bandwidth\": 1e9, \"op_classes\": {"
        "  \"dwconv\": {\"fwd\": {\"overhead_s\": 1e-6}, \"bwd\": {\"overhead_s\": 1e-6}},"
        "  \"dwconv5\": {\"fwd\": {\"overhead_s\": 2e-6}, \"bwd\": {\"overhead_s\": 2e-6}},"
        "  \"dwconv7\": {\"fwd\": {\"overhead_s\": 3e-6}, \"bwd\": {\"overhead_s\": 3e-6}}}}";
    static const char *small =
        "{\"name\": \"t\", \"flops_fp32\": 1e9, \"mem_bandwidth\": 1e9, \"op_classes\": {"
        "  \"dwconv\": {\"fwd\": {\"overhead_s\": 1e-6}, \"bwd\": {\"overhead_s\": 1e-6}},"
        "  \"dwconv5\": {\"fwd\": {\"overhead_s\": 2e-6}, \"bwd\": {\"overhead_s\": 2e-6}}}}";
    loom_est_device_t d3, d2;
    load_device(all, &d3);
    load_device(small, &d2);
    static const struct {
        int64_t k;
        int with_all, with_two;
    } cases[] = {{3, LOOM_EST_CL_DWCONV, LOOM_EST_CL_DWCONV},
                 {5, LOOM_EST_CL_DWCONV5, LOOM_EST_CL_DWCONV5},
                 {7, LOOM_EST_CL_DWCONV7, LOOM_EST_CL_DWCONV5},
                 {9, LOOM_EST_CL_DWCONV7, LOOM_EST_CL_DWCONV5}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        loom_est_model_t *m = dwconv_k(cases[i].k, 8);
        int cls;
        double t;
        op_class_time(m, &d3, false, 0, &cls, &t);
        assert_int_equal(cls, cases[i].with_all);
        op_class_time(m, &d2, false, 0, &cls, &t);
        assert_int_equal(cls, cases[i].with_two);
        loom_est_model_free(m);
    }
}

/* A depthwise kernel larger than its input map (3x3 over 2x2) pays its
 * class's step_s per plane, batch x channels; over a map as large as the
 * kernel or larger, nothing per plane. */
static void test_dwconv_small_map(void **state)
{
    (void)state;
    static const char *dev =
        "{\"name\": \"t\", \"flops_fp32\": 1e9, \"mem_bandwidth\": 1e9, \"op_classes\": {"
        "  \"dwconv\": {\"fwd\": {\"overhead_s\": 1e-6, \"step_s\": 1e-7},"
        "              \"bwd\": {\"overhead_s\": 2e-6, \"step_s\": 3e-7}}}}";
    loom_est_device_t d;
    load_device(dev, &d);
    loom_est_model_t *small = dwconv_k(3, 2), *same = dwconv_k(3, 3);
    int cls;
    double t;
    /* batch 2 x 4 channels = 8 planes: 1e-6 + 8e-7 forward, 2e-6 + 2.4e-6
     * backward (the input is data: x needs no gradient, w does) */
    op_class_time(small, &d, true, 0, &cls, &t);
    assert_int_equal(cls, LOOM_EST_CL_DWCONV);
    near(t, 1.8e-6 + 4.4e-6);
    op_class_time(same, &d, true, 0, &cls, &t);
    near(t, 1e-6 + 2e-6);
    loom_est_model_free(small);
    loom_est_model_free(same);
}

/* x[N,6,hw,hw] -> Conv 1x1 (6 -> 5 channels) -> y */
static loom_est_model_t *conv1x1_map(int64_t hw)
{
    pbw_t g = {0};
    onnx_node(&g, "Conv", "pw", "x,w", "y");
    onnx_init(&g, "w", 1, 4, (int64_t[]){5, 6, 1, 1}, NULL, 0);
    onnx_value_info(&g, 11, "x", 1, 4, (int64_t[]){-1, 6, hw, hw});
    onnx_value_info(&g, 12, "y", 1, 4, (int64_t[]){-1, 5, hw, hw});
    return build(&g);
}

/* PyTorch's pointwise path (conv1x1: batch under 16) runs one GEMM per
 * sample and each packs the whole weight: step_s per sample and weight
 * element; over a 1x1 map (a matrix-vector product) nothing. The oneDNN
 * class (conv) has no such term. */
static void test_conv1x1_weight_per_sample(void **state)
{
    (void)state;
    static const char *dev =
        "{\"name\": \"t\", \"flops_fp32\": 1e9, \"mem_bandwidth\": 1e9, \"op_classes\": {"
        "  \"conv1x1\": {\"fwd\": {\"overhead_s\": 1e-6, \"step_s\": 1e-8},"
        "               \"bwd\": {\"overhead_s\": 2e-6, \"step_s\": 3e-8}}}}";
    loom_est_device_t d;
    load_device(dev, &d);
    loom_est_model_t *map2 = conv1x1_map(2), *map1 = conv1x1_map(1);
    int cls;
    double t;
    /* batch 2 x 5 x 6 weight elements = 60: 1e-6 + 6e-7 forward,
     * 2e-6 + 1.8e-6 backward */
    op_class_time(map2, &d, true, 0, &cls, &t);
    assert_int_equal(cls, LOOM_EST_CL_CONV1X1);
    near(t, 1.6e-6 + 3.8e-6);
    op_class_time(map1, &d, true, 0, &cls, &t);
    assert_int_equal(cls, LOOM_EST_CL_CONV1X1);
    near(t, 1e-6 + 2e-6);
    loom_est_model_free(map2);
    loom_est_model_free(map1);
}

/* x[N,3,hw,hw] -> BatchNormalization -> y */
static loom_est_model_t *bn_map(int64_t hw)
{
    static const char *params[] = {"s", "b", "m", "v"}; /* scale, bias, mean, variance */
    pbw_t g = {0};
    onnx_node(&g, "BatchNormalization", "bn", "x,s,b,m,v", "y");
    for (size_t i = 0; i < sizeof params / sizeof *params; i++)
        onnx_init(&g, params[i], 1, 1, (int64_t[]){3}, NULL, 0);
    onnx_value_info(&g, 11, "x", 1, 4, (int64_t[]){-1, 3, hw, hw});
    onnx_value_info(&g, 12, "y", 1, 4, (int64_t[]){-1, 3, hw, hw});
    return build(&g);
}

/* Batch norm pays step_s per plane (batch x channels) where a plane has
 * more than one and fewer than 16 elements (2x2, 3x3 maps); over 1x1 and
 * 4x4 maps, nothing per plane. */
static void test_bn_small_planes(void **state)
{
    (void)state;
    static const char *dev =
        "{\"name\": \"t\", \"flops_fp32\": 1e9, \"mem_bandwidth\": 1e9, \"op_classes\": {"
        "  \"bn\": {\"fwd\": {\"overhead_s\": 1e-6, \"step_s\": 1e-8},"
        "          \"bwd\": {\"overhead_s\": 2e-6, \"step_s\": 1e-7}}}}";
    loom_est_device_t d;
    load_device(dev, &d);
    static const struct {
        int64_t hw;
        double t;
    } cases[] = {
        /* batch 2 x 3 channels = 6 planes: 1e-6 + 6e-8 forward, 2e-6 + 6e-7 backward */
        {2, 1.06e-6 + 2.6e-6},
        {3, 1.06e-6 + 2.6e-6},
        {1, 1e-6 + 2e-6},
        {4, 1e-6 + 2e-6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        loom_est_model_t *m = bn_map(cases[i].hw);
        int cls;
        double t;
        op_class_time(m, &d, true, 0, &cls, &t);
        assert_int_equal(cls, LOOM_EST_CL_BN);
        near(t, cases[i].t);
        loom_est_model_free(m);
    }
}

/* x[N,4] -> Gemm(w[3,4], b[3], transB) -> Dropout(ratio) -> y[N,3] */
static loom_est_model_t *gemm_dropout(float ratio)
{
    pbw_t g = {0}, n;
    int64_t xd[2] = {-1, 4}, wd[2] = {3, 4}, bd[1] = {3}, yd[2] = {-1, 3};
    onnx_node_begin(&n, "Gemm", "fc", "x,w,b", "h");
    attr_int(&n, "transB", 1);
    onnx_node_end(&g, &n);
    onnx_node(&g, "Dropout", "drop", "h,r", "y,mask");
    onnx_init(&g, "w", 1, 2, wd, NULL, 0);
    onnx_init(&g, "b", 1, 1, bd, NULL, 0);
    onnx_init_float(&g, "r", ratio);
    onnx_value_info(&g, 11, "x", 1, 2, xd);
    onnx_value_info(&g, 12, "y", 1, 2, yd);
    return build(&g);
}

/* Dropout in training has a class of its own where the device calibrated
 * one (a CPU draws Bernoulli noise per element: 4x a relu there); without
 * it, the unary class's cost; at ratio 0 PyTorch returns the input, so it
 * costs no element time at all. */
static void test_dropout_class(void **state)
{
    (void)state;
    static const char *dev =
        "{\"name\": \"t\", \"flops_fp32\": 1e9, \"mem_bandwidth\": 1e9,"
        " \"op_classes\": {"
        "  \"unary\": {\"fwd\": {\"overhead_s\": 5e-7, \"elem_s\": [[1, 1e-9]]},"
        "            \"bwd\": {\"overhead_s\": 1e-6, \"elem_s\": [[1, 1e-9]]}},"
        "  \"dropout\": {\"fwd\": {\"overhead_s\": 3e-7, \"elem_s\": [[1, 5e-9]]},"
        "              \"bwd\": {\"overhead_s\": 6e-7, \"elem_s\": [[1, 2e-9]]}},"
        "  \"view\": {\"fwd\": {\"overhead_s\": 1e-7}, \"bwd\": {\"overhead_s\": 2e-7}}}}";
    loom_est_device_t with, without;
    load_device(dev, &with);
    load_device(classes_device, &without);
    loom_est_model_t *m = gemm_dropout(0.1f), *zero = gemm_dropout(0);
    int cls;
    double t;
    /* 6 elements: fwd 3e-7 + 3e-8, bwd 6e-7 + 1.2e-8 */
    op_class_time(m, &with, true, 1, &cls, &t);
    assert_int_equal(cls, LOOM_EST_CL_DROPOUT);
    near(t, 3.3e-7 + 6.12e-7);
    op_class_time(m, &without, true, 1, &cls, &t);
    assert_int_equal(cls, LOOM_EST_CL_UNARY);
    near(t, 5.06e-7 + 1.006e-6);
    /* ratio 0: a view, nothing allocated */
    loom_est_options_t o = {.batch = 2, .train = true, .optimizer = LOOM_EST_SGD, .device = &with};
    loom_est_result_t r;
    run_ok(zero, &o, &r);
    assert_int_equal(r.ops[1].cls, LOOM_EST_CL_VIEW);
    assert_int_equal(r.ops[1].bytes, 0);
    near(r.ops[1].time_s, 3e-7);
    loom_est_result_free(&r);
    loom_est_model_free(m);
    loom_est_model_free(zero);
}

/* An LSTM layer as PyTorch's CPU build runs it: the input projection of the
 * whole sequence is one GEMM (the matmul class), the recurrence is the lstm
 * class, once per time step and direction. x[N, 3 steps, 4] -> LSTM(H 2). */
static void test_rnn_projection(void **state)
{
    (void)state;
    static const char *dev =
        "{\"name\": \"t\", \"flops_fp32\": 1e9, \"mem_bandwidth\": 1e9,"
        " \"op_classes\": {"
        "  \"matmul\": {\"fwd\": {\"overhead_s\": 1e-6, \"rate\": {\"peak\": 1e9, \"half_dim\": 2,"
        "                 \"power\": 1}, \"elem_s\": [[1, 1e-9]]},"
        "             \"bwd\": {\"overhead_s\": 2e-6, \"rate\": {\"peak\": 1e9, \"half_dim\": 2,"
        "                 \"power\": 1}, \"elem_s\": [[1, 1e-9]]}},"
        "  \"lstm\": {\"fwd\": {\"step_s\": 1e-7, \"rate\": {\"peak\": 1e9, \"half_dim\": 2,"
        "                 \"power\": 1}, \"elem_s\": [[1, 1e-9]]},"
        "           \"bwd\": {\"step_s\": 2e-7, \"rate\": {\"peak\": 1e9, \"half_dim\": 2,"
        "                 \"power\": 1}, \"elem_s\": [[1, 1e-9]]}}}}";
    loom_est_device_t d;
    load_device(dev, &d);
    loom_est_model_t *m = lstm_small();
    loom_est_options_t o = {.batch = 2, .train = true, .optimizer = LOOM_EST_SGD, .device = &d};
    loom_est_result_t r;
    run_ok(m, &o, &r);
    /* FLOPs: 3 steps x batch 2 x (8H(I+H) + 14H) = 6 x 124 = 744, of which
     * the projection 2 x 6 rows x 8 x 4 = 384 and the recurrence 360.
     * Backward: x is data, so the projection only for W (384), the
     * recurrence twice (720): 1104. */
    assert_int_equal(r.ops[0].cls, LOOM_EST_CL_LSTM);
    near(r.ops[0].fwd_flops, 744);
    near(r.ops[0].bwd_flops, 1104);
    /* projection (matmul): d = min(6, 8, 4) = 4 -> eff 2/3; elements
     * 6x4 + 6x8 + 8x4 = 104: fwd 1e-6 + 5.76e-7 + 1.04e-7 = 1.68e-6,
     * bwd 2e-6 + 5.76e-7 + 1.04e-7 = 2.68e-6.
     * recurrence (lstm): d = batch 2 -> eff 1/2; 3 steps; 4 x 12 elements:
     * fwd 3e-7 + 7.2e-7 + 4.8e-8 = 1.068e-6, bwd 6e-7 + 1.44e-6 + 4.8e-8 =
     * 2.088e-6 */
    near(r.ops[0].time_s, 1.68e-6 + 2.68e-6 + 1.068e-6 + 2.088e-6);
    loom_est_result_free(&r);
    loom_est_model_free(m);
}

static void test_in_step_factor(void **state)
{
    (void)state;
    loom_est_device_t d;
    load_device(classes_device, &d);
    near(d.in_step_factor, 1); /* absent: 1 */
    d.in_step_factor = 1.5;
    loom_est_model_t *m = gemm_relu();
    loom_est_options_t o = {.batch = 2, .train = true, .optimizer = LOOM_EST_SGD, .device = &d};
    loom_est_result_t r;
    run_ok(m, &o, &r);
    /* the figures of test_class_step_time: the operators' work terms
     * (FLOPs, elements) times 1.5, not their overheads; loss and optimizer
     * times 1.5; the fixed cost not:
     *   Gemm  fwd 1e-6 + 1.5 x 1.37e-7, bwd 2e-6 + 1.5 x 1.37e-7 = 3.411e-6
     *   Relu  fwd 5e-7 + 1.5 x 6e-9,    bwd 1e-6 + 1.5 x 6e-9    = 1.518e-6
     *   loss  1.5 x 7e-6                                         = 1.05e-5
     *   SGD   1.5 x 2.015e-6                                     = 3.0225e-6
     *   step  6.2145e-6 + 9.2145e-6 + 3.0225e-6 + 1e-5           = 2.84515e-5 */
    near(r.ops[0].time_s, 3.411e-6);
    near(r.ops[1].time_s, 1.518e-6);
    near(r.ops[2].time_s, 1.05e-5);
    near(r.fwd_time_s, 1.2055e-6 + 5.09e-7 + 1.5 * 3e-6);
    near(r.bwd_time_s, 2.2055e-6 + 1.009e-6 + 1.5 * 4e-6);
    near(r.opt_time_s, 3.0225e-6);
    near(r.fixed_time_s, 1e-5);
    near(r.step_time_s, 2.84515e-5);
    loom_est_result_free(&r);
    /* inference is not a training step: unscaled */
    o.train = false;
    run_ok(m, &o, &r);
    near(r.step_time_s, 1.137e-6 + 5.06e-7);
    loom_est_result_free(&r);
    loom_est_model_free(m);
    /* read from the device file */
    load_device("{\"name\": \"t\", \"flops_fp32\": 1e9, \"mem_bandwidth\": 1e9,"
                " \"in_step_factor\": 1.25}",
                &d);
    near(d.in_step_factor, 1.25);
}

static void test_class_fallback_to_roofline(void **state)
{
    (void)state;
    /* a device with op_classes that leave out unary: the Relu is costed by
     * the roofline, max(6 FLOP / 1e9, (24 + 24) B / 1e9) = 4.8e-8 forward,
     * max(12 / 1e9, 96 / 1e9) = 9.6e-8 backward; no op overhead given */
    loom_est_device_t d;
    load_device("{\"name\": \"t\", \"flops_fp32\": 1e9, \"mem_bandwidth\": 1e9,"
                " \"op_classes\": {\"matmul\": {\"fwd\": {\"overhead_s\": 1e-6}}}}",
                &d);
    loom_est_model_t *m = gemm_relu();
    loom_est_options_t o = {.batch = 2, .train = true, .optimizer = LOOM_EST_SGD, .device = &d};
    loom_est_result_t r;
    run_ok(m, &o, &r);
    assert_int_equal(r.ops[1].cls, -1);
    near(r.ops[1].time_s, 4.8e-8 + 9.6e-8);
    /* the matmul class has no backward: the backward costs the forward again */
    near(r.ops[0].time_s, 2e-6);
    loom_est_result_free(&r);
    loom_est_model_free(m);
}

/* x[N,K] -> Relu -> y: inference, the Relu's output is the only
 * allocation of the step, freed by the caller after it */
static loom_est_model_t *relu_only(int64_t k)
{
    pbw_t g = {0};
    int64_t xd[2] = {-1, k};
    onnx_node(&g, "Relu", "relu", "x", "y");
    onnx_value_info(&g, 11, "x", 1, 2, xd);
    onnx_value_info(&g, 12, "y", 1, 2, xd);
    return build(&g);
}

static void test_fresh_pages(void **state)
{
    (void)state;
    loom_est_device_t d;
    load_device("{\"name\": \"t\", \"flops_fp32\": 1e9, \"mem_bandwidth\": 1e9,"
                " \"allocator\": \"malloc\", \"page_fault_s\": 1e-5,"
                " \"op_classes\": {\"unary\": {\"fwd\": {\"overhead_s\": 0}}}}",
                &d);
    /* 2 x 65536 floats = 512 KiB: the first step maps it (>= 128 KiB) and
     * unmapping it raises the mmap threshold; from then on it comes from
     * the heap, whose top stays under the trim threshold: the steady
     * state (the last steps the model counts) has no fresh page */
    loom_est_model_t *m = relu_only(65536);
    loom_est_options_t o = {.batch = 2, .device = &d};
    loom_est_result_t r;
    run_ok(m, &o, &r);
    assert_int_equal(r.fresh_bytes, 0);
    near(r.step_time_s, 0);
    loom_est_result_free(&r);
    loom_est_model_free(m);
    /* 2 x 8 Mi floats = 64 MiB: above 32 MiB it is mapped every step:
     * page_up(67108864 + 16 + 8) = 67112960 bytes = 16385 pages fresh,
     * at 10 us each */
    m = relu_only(8 << 20);
    run_ok(m, &o, &r);
    assert_int_equal(r.fresh_bytes, 67112960);
    assert_int_equal(r.ops[0].fresh_bytes, 67112960);
    near(r.fault_time_s, 16385 * 1e-5);
    near(r.step_time_s, 16385 * 1e-5);
    loom_est_result_free(&r);
    /* the same device run with glibc retaining its heap (no mapping, no
     * trim): the first step grows the heap by the 64 MiB block, every later
     * step reuses it, so the counted steps have nothing fresh */
    load_device("{\"name\": \"t\", \"flops_fp32\": 1e9, \"mem_bandwidth\": 1e9,"
                " \"allocator\": \"malloc\", \"page_fault_s\": 1e-5,"
                " \"malloc_tunables\": \"glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold="
                "0x7fffffffffffffff\","
                " \"op_classes\": {\"unary\": {\"fwd\": {\"overhead_s\": 0}}}}",
                &d);
    assert_string_equal(d.malloc_tunables,
                        "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=0x7fffffffffffffff");
    assert_int_equal(d.malloc_cfg.mmap_max, 0);
    run_ok(m, &o, &r);
    assert_int_equal(r.fresh_bytes, 0);
    near(r.fault_time_s, 0);
    near(r.step_time_s, 0);
    json_t *j = loom_est_result_json(&r, &o);
    assert_string_equal(json_string_value(json_object_get(j, "malloc_tunables")),
                        d.malloc_tunables);
    json_decref(j);
    loom_est_result_free(&r);
    /* a GPU device (caching allocator) has no heap model */
    d.allocator = LOOM_EST_ALLOC_CUDA_CACHING;
    run_ok(m, &o, &r);
    assert_int_equal(r.fresh_bytes, 0);
    loom_est_result_free(&r);
    loom_est_model_free(m);
}

static void test_device_classes_json(void **state)
{
    (void)state;
    loom_est_device_t d;
    load_device(classes_device, &d);
    assert_true(d.cls[LOOM_EST_CL_MATMUL][0].set && d.cls[LOOM_EST_CL_MATMUL][1].set);
    assert_false(d.cls[LOOM_EST_CL_CONV][0].set);
    near(d.cls[LOOM_EST_CL_MATMUL][1].overhead_s, 2e-6);
    near(d.cls[LOOM_EST_CL_MATMUL][0].half_dim, 2);
    assert_int_equal(d.cls[LOOM_EST_CL_UNARY][0].elem_s.n, 1);
    assert_true(d.opt[LOOM_EST_SGD].set && !d.opt[LOOM_EST_ADAM].set);
    near(d.step_overhead_s, 1e-5);
    assert_false(d.calibrated);
    assert_string_equal(loom_est_class_name(LOOM_EST_CL_DWCONV), "dwconv");
    assert_string_equal(loom_est_class_name(LOOM_EST_CL_N), "unknown");
    static const struct {
        const char *json, *needle;
    } bad[] = {
        {"{\"op_classes\": {\"convv\": {}}}", "/op_classes/convv: unknown operator class"},
        {"{\"op_classes\": {\"conv\": {\"up\": {}}}}", "/op_classes/conv: unknown member 'up'"},
        {"{\"op_classes\": {\"conv\": {\"fwd\": {\"overhead\": 1}}}}",
         "/op_classes/conv/fwd: unknown member 'overhead'"},
        {"{\"op_classes\": {\"conv\": {\"fwd\": {\"overhead_s\": -1}}}}",
         "/op_classes/conv/fwd/overhead_s must be a number in [0, 1e20]"},
        {"{\"op_classes\": {\"conv\": {\"fwd\": {\"rate\": {\"peak\": 0}}}}}",
         "/op_classes/conv/fwd/rate needs peak > 0"},
        {"{\"op_classes\": {\"conv\": {\"fwd\": {\"elem_s\": [[10, 1], [5, 1]]}}}}",
         "/op_classes/conv/fwd/elem_s/1 must be [x > 0, y >= 0] with x increasing"},
        {"{\"op_classes\": {\"conv\": {\"fwd\": {\"elem_s\": []}}}}",
         "/op_classes/conv/fwd/elem_s must be an array of 1 to 16"},
        {"{\"optimizer\": {\"lion\": {}}}", "/optimizer: unknown member 'lion'"},
        {"{\"optimizer\": {\"adam\": {\"elem_s\": [[1, \"x\"]]}}}", "/optimizer/adam/elem_s/0"},
        {"{\"page_fault_s\": \"fast\"}", "/page_fault_s must be a number"},
        {"{\"calibrated\": 1}", "/calibrated must be true or false"},
        {"{\"in_step_factor\": 0.1}", "/in_step_factor must be in [0.25, 4]"},
        {"{\"in_step_factor\": 5}", "/in_step_factor must be in [0.25, 4]"},
        {"{\"in_step_factor\": \"1\"}", "/in_step_factor must be a number"},
        {"{\"op_classes\": []}", "/op_classes must be an object"},
        {"{\"malloc_tunables\": \"glibc.malloc.tcache_count=0\"}",
         "/malloc_tunables: 'glibc.malloc.tcache_count=0': expected NAME=VALUE"},
        {"{\"malloc_tunables\": \"glibc.malloc.mmap_max=none\"}",
         "/malloc_tunables: glibc.malloc.mmap_max: value 'none'"},
        {"{\"malloc_tunables\": 0}", "malloc_tunables"},
        /* more bytes than a uint64_t holds (fuzz.est_device, 2026-12-04) */
        {"{\"memory_bytes\": 2.5e19}", "/memory_bytes must be at most 1e+18 bytes"},
        {"{\"context_bytes\": 1e20}", "/context_bytes must be at most 1e+18 bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_error_t je;
        json_t *j = json_loads(bad[i].json, 0, &je);
        assert_non_null(j);
        json_object_set_new(j, "name", json_string("t"));
        json_object_set_new(j, "flops_fp32", json_real(1e9));
        json_object_set_new(j, "mem_bandwidth", json_real(1e9));
        loom_err_t err = {0};
        assert_int_equal(loom_est_device_from_json(j, "t.json", &d, &err), LOOM_EINVAL);
        if (!strstr(err.msg, bad[i].needle) || !strstr(err.msg, "device t.json"))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, bad[i].needle);
        json_decref(j);
    }
}

static void test_shipped_devices(void **state)
{
    (void)state;
    loom_est_device_t d;
    loom_err_t err = {0};
    /* the H200 file has the calibrated schema, marked as not measured */
    assert_int_equal(loom_est_device_load("h200", "workloads/devices", &d, &err), LOOM_OK);
    assert_true(d.has_classes);
    assert_false(d.calibrated);
    for (int c = 0; c < LOOM_EST_CL_N; c++)
        if (!d.cls[c][0].set || !d.cls[c][1].set)
            fail_msg("h200: class %s lacks a direction", loom_est_class_name((loom_est_class_t)c));
    assert_true(d.opt[LOOM_EST_ADAM].set);
    /* the CPU files bench/estimate.sh writes load too; the retaining one
     * says how its runtime's malloc is set */
    assert_int_equal(loom_est_device_load("cpu-local", "workloads/devices", &d, &err), LOOM_OK);
    assert_string_equal(d.malloc_tunables, "");
    assert_int_equal(loom_est_device_load("cpu-local-retain", "workloads/devices", &d, &err),
                     LOOM_OK);
    assert_int_equal(d.malloc_cfg.mmap_max, 0);
    assert_true(d.malloc_cfg.fixed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_curve_and_cost_fn),
        cmocka_unit_test(test_class_step_time),
        cmocka_unit_test(test_in_step_factor),
        cmocka_unit_test(test_rnn_projection),
        cmocka_unit_test(test_dropout_class),
        cmocka_unit_test(test_gru_class),
        cmocka_unit_test(test_dwconv_by_kernel),
        cmocka_unit_test(test_dwconv_small_map),
        cmocka_unit_test(test_conv1x1_weight_per_sample),
        cmocka_unit_test(test_bn_small_planes),
        cmocka_unit_test(test_class_fallback_to_roofline),
        cmocka_unit_test(test_fresh_pages),
        cmocka_unit_test(test_device_classes_json),
        cmocka_unit_test(test_shipped_devices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
