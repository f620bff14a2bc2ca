/* Step markers (src/prof/marker.c): what is a marker, what each malformed
 * form is told, round trips through the formatter. */
#include <stdio.h>

#include "test_util.h"

#include "loom/prof.h"

static int parse(const char *line, loom_prof_line_kind_t *kind, loom_prof_step_t *st, json_t *meta,
                 loom_err_t *err)
{
    return loom_prof_marker_parse(line, strlen(line), kind, st, meta, err);
}

static void test_step_full(void **state)
{
    (void)state;
    loom_prof_line_kind_t k;
    loom_prof_step_t st;
    loom_err_t err;
    assert_int_equal(
        parse("LOOM_STEP 7 100 250 items=8 data_ns=30 copy_ns=5 cpu_ns=140", &k, &st, NULL, &err),
        LOOM_OK);
    assert_int_equal(k, LOOM_PROF_LINE_STEP);
    assert_int_equal(st.step, 7);
    assert_int_equal(st.start_ns, 100);
    assert_int_equal(st.end_ns, 250);
    assert_int_equal(st.items, 8);
    assert_int_equal(st.data_ns, 30);
    assert_int_equal(st.copy_ns, 5);
    assert_int_equal(st.cpu_ns, 140);
    /* A known key may appear once. */
    assert_int_equal(parse("LOOM_STEP 7 100 250 cpu_ns=1 cpu_ns=2", &k, &st, NULL, &err),
                     LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "'cpu_ns' given twice"));
}

static void test_step_minimal_and_blanks(void **state)
{
    (void)state;
    loom_prof_line_kind_t k;
    loom_prof_step_t st;
    loom_err_t err;
    assert_int_equal(parse("LOOM_STEP\t0  5 5 \r", &k, &st, NULL, &err), LOOM_OK);
    assert_int_equal(k, LOOM_PROF_LINE_STEP);
    assert_int_equal(st.items, -1);
    assert_int_equal(st.data_ns, -1);
    assert_int_equal(st.copy_ns, -1);
    assert_int_equal(st.cpu_ns, -1);
    /* Unknown keys are checked and skipped. */
    assert_int_equal(parse("LOOM_STEP 1 5 6 gpu_ns=3 note=hi", &k, &st, NULL, &err), LOOM_OK);
}

static void test_not_markers(void **state)
{
    (void)state;
    loom_prof_line_kind_t k = LOOM_PROF_LINE_STEP;
    loom_err_t err;
    const char *lines[] = {
        "", "hello", "LOOM_STEPS 1 2 3", "loom_step 1 2 3", " LOOM_STEP 1 2 3", "LOOM_METAX a=b"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        assert_int_equal(parse(lines[i], &k, NULL, NULL, &err), LOOM_OK);
        assert_int_equal(k, LOOM_PROF_LINE_OTHER);
    }
}

static void expect_error(const char *line, const char *needle)
{
    loom_prof_line_kind_t k;
    loom_prof_step_t st;
    loom_err_t err;
    loom_err_clear(&err);
    assert_int_equal(parse(line, &k, &st, NULL, &err), LOOM_EINVAL);
    if (!strstr(err.msg, needle))
        fail_msg("'%s': message '%s' lacks '%s'", line, err.msg, needle);
}

static void test_step_errors(void **state)
{
    (void)state;
    expect_error("LOOM_STEP", "missing step number");
    expect_error("LOOM_STEP 1 2", "missing end_ns");
    expect_error("LOOM_STEP x 1 2", "step number: expected a whole number");
    expect_error("LOOM_STEP -1 1 2", "step number");
    expect_error("LOOM_STEP 1 5 4", "end_ns 4 is before start_ns 5");
    expect_error("LOOM_STEP 1 2 99999999999999999999", "end_ns");
    expect_error("LOOM_STEP 1 2 9223372036854775808", "too large");
    expect_error("LOOM_STEP 1 2 3 items", "expected key=value");
    expect_error("LOOM_STEP 1 2 3 Items=1", "expected a key");
    expect_error("LOOM_STEP 1 2 3 items=", "expected a value");
    expect_error("LOOM_STEP 1 2 3 items=1.5", "items: expected a whole number");
    expect_error("LOOM_STEP 1 2 3 items=1 items=2", "given twice");
    char longline[LOOM_PROF_MARKER_MAX + 20];
    memset(longline, 'a', sizeof longline);
    memcpy(longline, "LOOM_STEP 1 2 3 k=", 18);
    longline[sizeof longline - 1] = '\0';
    expect_error(longline, "longer than");
}

static void test_meta(void **state)
{
    (void)state;
    json_t *meta = json_object();
    loom_prof_line_kind_t k;
    loom_err_t err;
    assert_int_equal(parse("LOOM_META model=resnet18 batch=8", &k, NULL, meta, &err), LOOM_OK);
    assert_int_equal(k, LOOM_PROF_LINE_META);
    assert_string_equal(json_string_value(json_object_get(meta, "model")), "resnet18");
    assert_string_equal(json_string_value(json_object_get(meta, "batch")), "8");
    /* A bad line changes nothing. */
    assert_int_equal(parse("LOOM_META model=x a=b a=c", &k, NULL, meta, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "'a' given twice"));
    assert_string_equal(json_string_value(json_object_get(meta, "model")), "resnet18");
    assert_null(json_object_get(meta, "a"));
    assert_int_equal(parse("LOOM_META v=\x01", &k, NULL, meta, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "printable ASCII"));
    json_decref(meta);
}

static void test_format_roundtrip(void **state)
{
    (void)state;
    loom_prof_step_t in = LOOM_PROF_STEP_INIT(12, 1000, 3000), out;
    in.items = 64;
    in.copy_ns = 7;
    in.cpu_ns = 1500;
    char line[LOOM_PROF_MARKER_MAX + 2];
    size_t n = loom_prof_marker_format(&in, line, sizeof line);
    assert_string_equal(line, "LOOM_STEP 12 1000 3000 items=64 copy_ns=7 cpu_ns=1500\n");
    loom_prof_line_kind_t k;
    loom_err_t err;
    assert_int_equal(loom_prof_marker_parse(line, n - 1, &k, &out, NULL, &err), LOOM_OK);
    assert_memory_equal(&in, &out, sizeof in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_full),   cmocka_unit_test(test_step_minimal_and_blanks),
        cmocka_unit_test(test_not_markers), cmocka_unit_test(test_step_errors),
        cmocka_unit_test(test_meta),        cmocka_unit_test(test_format_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
