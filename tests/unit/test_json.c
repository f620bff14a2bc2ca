#include <stdio.h>

#include "loom/core.h"
#include "test_util.h"

static void parse_errors_have_position(void **state)
{
    json_t *v = NULL;
    loom_err_t err;
    const char *text = "{\n  \"a\": 1,\n  \"b\": tru\n}";
    assert_int_equal(loom_json_parse(text, strlen(text), "req.json", 0, &v, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "req.json:3:"));
    assert_null(v);
    const char *dup = "{\"a\":1,\"a\":2}";
    assert_int_equal(loom_json_parse(dup, strlen(dup), "d", 0, &v, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "duplicate"));
    const char *bad_utf8 = "\"\xff\"";
    assert_int_equal(loom_json_parse(bad_utf8, strlen(bad_utf8), "u", 0, &v, &err), LOOM_EINVAL);
    const char *nul = "\"a\\u0000b\"";
    assert_int_equal(loom_json_parse(nul, strlen(nul), "n", 0, &v, &err), LOOM_EINVAL);
}

static void depth_limit(void **state)
{
    char deep[200];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    json_t *v = NULL;
    loom_err_t err;
    assert_int_equal(loom_json_parse(deep, 200, "deep", 64, &v, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "deep:1:65: nesting deeper than 64"));
    assert_int_equal(loom_json_parse(deep, 200, "deep", 100, &v, &err), LOOM_OK);
    json_decref(v);
    /* brackets inside strings do not count */
    const char *s = "[\"[[[[[[[[[[\"]";
    assert_int_equal(loom_json_parse(s, strlen(s), "s", 2, &v, &err), LOOM_OK);
    json_decref(v);
}

static void getters(void **state)
{
    json_t *o = json_pack("{s:s, s:i, s:f, s:b, s:n}", "name", "x", "n", 5, "r", 1.5, "t", 1, "z");
    const char *s = NULL;
    int64_t i = 0;
    double d = 0;
    bool b = false;
    loom_err_t err;
    assert_int_equal(loom_json_get_string(o, "name", true, "/job", &s, &err), LOOM_OK);
    assert_string_equal(s, "x");
    assert_int_equal(loom_json_get_int(o, "n", true, "/job", 0, 10, &i, &err), LOOM_OK);
    assert_int_equal(i, 5);
    assert_int_equal(loom_json_get_number(o, "n", true, "/job", &d, &err), LOOM_OK);
    assert_true(d == 5);
    assert_int_equal(loom_json_get_bool(o, "t", true, "/job", &b, &err), LOOM_OK);
    assert_true(b);
    assert_int_equal(loom_json_get_int(o, "n", true, "/job", 6, 10, &i, &err), LOOM_EINVAL);
    assert_string_equal(err.msg, "/job/n: 5 is out of range, expected 6..10");
    assert_int_equal(loom_json_get_string(o, "n", true, "/job", &s, &err), LOOM_EINVAL);
    assert_string_equal(err.msg, "/job/n: expected a string, found an integer");
    assert_int_equal(loom_json_get_int(o, "r", true, "/job", 0, 10, &i, &err), LOOM_EINVAL);
    assert_int_equal(loom_json_get_bool(o, "z", true, "/job", &b, &err), LOOM_EINVAL);
    assert_string_equal(err.msg, "/job/z: expected true or false, found null");
    assert_int_equal(loom_json_get_string(o, "missing", true, "/job", &s, &err), LOOM_EINVAL);
    assert_string_equal(err.msg, "/job/missing: required member is missing");
    s = "kept";
    assert_int_equal(loom_json_get_string(o, "missing", false, "/job", &s, &err), LOOM_OK);
    assert_string_equal(s, "kept");
    json_t *arr = json_array();
    assert_int_equal(loom_json_get_string(arr, "a", false, "", &s, &err), LOOM_EINVAL);
    assert_string_equal(err.msg, "/: expected an object, found an array");
    json_decref(arr);
    json_decref(o);
}

static void dump_and_pointer(void **state)
{
    json_t *o = json_pack("{s:[i,i]}", "a", 1, 2);
    loom_buf_t b = LOOM_BUF_INIT;
    assert_int_equal(loom_json_dump(&b, o), LOOM_OK);
    assert_string_equal(b.data, "{\"a\":[1,2]}");
    loom_buf_reset(&b);
    loom_json_pointer_append(&b, "jobs");
    loom_json_pointer_append(&b, "a/b~c");
    assert_string_equal(b.data, "/jobs/a~1b~0c");
    loom_buf_free(&b);
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_errors_have_position),
        cmocka_unit_test(depth_limit),
        cmocka_unit_test(getters),
        cmocka_unit_test(dump_and_pointer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
