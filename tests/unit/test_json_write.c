/* loom_json_write: indented or compact JSON with reals in their shortest
 * round-tripping form, read back by jansson to the same values. */
#include "loom/core.h"
#include "test_util.h"

static char *written(const char *json, int indent)
{
    json_t *v = json_loads(json, JSON_DECODE_ANY, NULL);
    assert_non_null(v);
    loom_buf_t b = LOOM_BUF_INIT;
    assert_int_equal(loom_json_write(&b, v, indent), LOOM_OK);
    json_decref(v);
    return loom_buf_detach(&b);
}

static void shortest_reals(void **state)
{
    (void)state;
    char *s = written("[0.2, 1e-7, 1.0, 2.5e300, -0.0, 0.1, 123456789.125]", 0);
    assert_string_equal(s, "[0.2,1e-07,1.0,2.5e+300,-0.0,0.1,123456789.125]");
    json_t *back = json_loads(s, 0, NULL);
    assert_true(json_real_value(json_array_get(back, 0)) == 0.2);
    assert_true(json_real_value(json_array_get(back, 1)) == 1e-7);
    assert_true(json_is_real(json_array_get(back, 2)));
    json_decref(back);
    free(s);
}

static void indented_and_escaped(void **state)
{
    (void)state;
    char *s = written("{\"b\": [1, {\"x\": null}], \"a\": \"q\\\"\\\\\\n\\u0001\u00e9\", "
                      "\"e\": {}, \"f\": []}",
                      2);
    assert_string_equal(s, "{\n  \"b\": [\n    1,\n    {\n      \"x\": null\n    }\n  ],\n"
                           "  \"a\": \"q\\\"\\\\\\n\\u0001\u00e9\",\n  \"e\": {},\n  \"f\": []\n}");
    json_t *back = json_loads(s, 0, NULL);
    assert_non_null(back);
    assert_string_equal(json_string_value(json_object_get(back, "a")), "q\"\\\n\001\u00e9");
    json_decref(back);
    free(s);
}

/* Issue 30 finding 10: C1 controls (U+009B, a one-character CSI) and
 * bidirectional controls (U+202E, U+2066) are written as \uXXXX, so JSON
 * output a terminal shows carries nothing it acts on; other non-ASCII
 * text (é) stays as it is, and jansson reads back the same string. */
static void terminal_controls_escaped(void **state)
{
    (void)state;
    char *s = written("[\"a\\u009b2J\\u202eb\\u2066c\u00e9\\u001b\"]", 0);
    assert_string_equal(s, "[\"a\\u009b2J\\u202eb\\u2066c\u00e9\\u001b\"]");
    json_t *back = json_loads(s, 0, NULL);
    assert_non_null(back);
    assert_string_equal(json_string_value(json_array_get(back, 0)),
                        "a\xc2\x9b" /* U+009B */ "2J\u202eb\u2066c\u00e9\x1b");
    json_decref(back);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shortest_reals),
        cmocka_unit_test(indented_and_escaped),
        cmocka_unit_test(terminal_controls_escaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
