/* The ONNX reader (src/estimate/onnx.c): a valid hand-built model parses;
 * every malformed input is an error that names the field path and byte
 * offset: truncation at every length, wrong wire types, varint overflow,
 * absurd dimensions, raw_data of the wrong size, undefined inputs, a
 * tensor produced twice, and cycles. */
#include <stdio.h>

#include "test_util.h"

#include "est_pb.h"
#include "loom/estimate.h"

static pbw_t small_graph(void)
{
    pbw_t g = {0};
    int64_t xd[2] = {-1, 4}, wd[2] = {3, 4};
    pbw_t n;
    onnx_node_begin(&n, "Gemm", "fc", "x,w", "y");
    attr_int(&n, "transB", 1);
    onnx_node_end(&g, &n);
    onnx_node_begin(&n, "Relu", "act", "y", "z");
    onnx_node_end(&g, &n);
    onnx_init(&g, "w", 1, 2, wd, NULL, 0);
    onnx_value_info(&g, 11, "x", 1, 2, xd);
    int64_t zd[2] = {-1, 3};
    onnx_value_info(&g, 12, "z", 1, 2, zd);
    return g;
}

static loom_est_model_t *parse_ok(const pbw_t *m)
{
    loom_est_model_t *model = NULL;
    loom_err_t err = {0};
    int rc = loom_est_model_parse(m->d, m->n, "t.onnx", &model, &err);
    if (rc)
        fail_msg("unexpected error: %s", err.msg);
    return model;
}

static void expect_error(const pbw_t *m, const char *needle)
{
    loom_est_model_t *model = NULL;
    loom_err_t err = {0};
    int rc = loom_est_model_parse(m->d, m->n, "t.onnx", &model, &err);
    assert_int_equal(rc, LOOM_EINVAL);
    assert_null(model);
    if (!strstr(err.msg, needle))
        fail_msg("error '%s' lacks '%s'", err.msg, needle);
}

static void test_valid(void **state)
{
    (void)state;
    pbw_t g = small_graph(), m = onnx_model(&g);
    loom_est_model_t *model = parse_ok(&m);
    assert_int_equal(loom_est_model_node_count(model), 2);
    assert_int_equal(loom_est_model_opset(model), 13);
    loom_est_options_t o = {.batch = 5};
    loom_est_result_t r;
    loom_err_t err = {0};
    if (loom_est_run(model, &o, &r, &err))
        fail_msg("%s", err.msg);
    int64_t d[8];
    assert_int_equal(loom_est_tensor_shape(model, "z", d), 2);
    assert_int_equal(d[0], 5);
    assert_int_equal(d[1], 3);
    assert_int_equal(r.params, 12);
    loom_est_result_free(&r);
    loom_est_model_free(model);
    free(m.d);
}

static void test_truncated_everywhere(void **state)
{
    (void)state;
    pbw_t g = small_graph(), m = onnx_model(&g);
    for (size_t len = 0; len < m.n; len++) {
        loom_est_model_t *model = NULL;
        loom_err_t err = {0};
        int rc = loom_est_model_parse(m.d, len, "t.onnx", &model, &err);
        if (rc != LOOM_EINVAL || model)
            fail_msg("prefix of %zu/%zu bytes was accepted", len, m.n);
        assert_non_null(strstr(err.msg, "t.onnx"));
    }
    /* cut inside the graph: the message names the length and the offset */
    loom_est_model_t *model = NULL;
    loom_err_t err = {0};
    assert_int_equal(loom_est_model_parse(m.d, m.n - 3, "t.onnx", &model, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "runs past the end"));
    assert_non_null(strstr(err.msg, "byte "));
    free(m.d);
}

static void test_wrong_wire_type(void **state)
{
    (void)state;
    pbw_t m = {0};
    pbw_int(&m, 7, 1); /* graph as a varint */
    expect_error(&m, "field graph (7) has wire type varint, expected length-delimited");
    free(m.d);
    /* op_type as a varint, inside node[0] */
    pbw_t g = {0}, n = {0};
    pbw_int(&n, 4, 3);
    pbw_msg(&g, 1, &n);
    m = onnx_model(&g);
    expect_error(&m, "ModelProto.graph.node[0]: field op_type (4) has wire type varint");
    free(m.d);
    /* a group (wire type 3) */
    pbw_t m2 = {0};
    pbw_key(&m2, 5, 3);
    expect_error(&m2, "groups");
    free(m2.d);
    /* invalid wire type 7 */
    pbw_t m3 = {0};
    pbw_key(&m3, 5, 7);
    expect_error(&m3, "invalid wire type 7");
    free(m3.d);
}

static void test_varint_overflow(void **state)
{
    (void)state;
    pbw_t m = {0};
    uint8_t bytes[12] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    pbw_raw(&m, bytes, sizeof bytes);
    expect_error(&m, "varint");
    expect_error(&m, "byte 1");
    free(m.d);
    pbw_t m2 = {0}; /* 10 bytes but the last one sets bits above 64 */
    uint8_t b2[11] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    pbw_raw(&m2, b2, sizeof b2);
    expect_error(&m2, "overflows 64 bits");
    free(m2.d);
}

static void test_absurd_dims(void **state)
{
    (void)state;
    int64_t big[1] = {(int64_t)1 << 41}, wide[3] = {1 << 20, 1 << 20, 1 << 20}, neg[1] = {-4};
    const int64_t *cases[3] = {big, wide, neg};
    int ranks[3] = {1, 3, 1};
    const char *msgs[3] = {"out of range", "more than 2^48", "out of range"};
    for (int i = 0; i < 3; i++) {
        pbw_t g = {0};
        onnx_init(&g, "w", 1, ranks[i], cases[i], NULL, 0);
        pbw_t m = onnx_model(&g);
        expect_error(&m, msgs[i]);
        expect_error(&m, "ModelProto.graph.initializer[0]");
        free(m.d);
    }
    /* declared input dimension */
    pbw_t g = {0};
    int64_t d[1] = {(int64_t)1 << 42};
    onnx_value_info(&g, 11, "x", 1, 1, d);
    pbw_t m = onnx_model(&g);
    expect_error(&m, "ModelProto.graph.input[0].type.tensor_type.shape.dim[0]");
    free(m.d);
}

static void test_raw_data_size(void **state)
{
    (void)state;
    pbw_t g = {0}, t = {0};
    int64_t d[1] = {4};
    onnx_tensor(&t, "w", 1, 1, d, NULL, 0);
    pbw_bytes(&t, 9, "12345678", 8); /* 4 floats need 16 bytes */
    pbw_msg(&g, 5, &t);
    pbw_t m = onnx_model(&g);
    expect_error(&m, "raw_data holds 8 bytes, but 4 elements of float need 16");
    free(m.d);
}

static void test_graph_errors(void **state)
{
    (void)state;
    int64_t xd[1] = {4};
    /* undefined input */
    pbw_t g = {0};
    onnx_node(&g, "Relu", "r", "nope", "y");
    onnx_value_info(&g, 11, "x", 1, 1, xd);
    pbw_t m = onnx_model(&g);
    expect_error(&m, "node 'r' (Relu) input 0 'nope' is undefined");
    free(m.d);
    /* produced twice */
    g = (pbw_t){0};
    onnx_node(&g, "Relu", "a", "x", "y");
    onnx_node(&g, "Relu", "b", "x", "y");
    onnx_value_info(&g, 11, "x", 1, 1, xd);
    m = onnx_model(&g);
    expect_error(&m, "tensor 'y' is produced twice");
    free(m.d);
    /* cycle: a reads b's output, b reads a's */
    g = (pbw_t){0};
    onnx_node(&g, "Add", "a", "x,q", "p");
    onnx_node(&g, "Relu", "b", "p", "q");
    onnx_value_info(&g, 11, "x", 1, 1, xd);
    m = onnx_model(&g);
    expect_error(&m, "cycle through node 'a' (Add)");
    free(m.d);
    /* no graph */
    pbw_t e = {0};
    expect_error(&e, "has no graph");
    /* initializer without a name */
    g = (pbw_t){0};
    onnx_init(&g, NULL, 1, 1, xd, NULL, 0);
    m = onnx_model(&g);
    expect_error(&m, "initializer[0] has no name");
    free(m.d);
}

static void test_load_missing_file(void **state)
{
    (void)state;
    loom_est_model_t *m = NULL;
    loom_err_t err = {0};
    assert_int_equal(loom_est_model_load("/nonexistent/x.onnx", &m, &err), LOOM_ENOTFOUND);
    assert_non_null(strstr(err.msg, "/nonexistent/x.onnx"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),           cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_wrong_wire_type), cmocka_unit_test(test_varint_overflow),
        cmocka_unit_test(test_absurd_dims),     cmocka_unit_test(test_raw_data_size),
        cmocka_unit_test(test_graph_errors),    cmocka_unit_test(test_load_missing_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
