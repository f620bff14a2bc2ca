/* Template plans (src/template/plan.c) against the ordinary renderer and
 * the Mustache cases (loom's own, tests/data/mustache; the official
 * specification's too with --spec where LOOM_MUSTACHE_SPEC gives a copy,
 * as conformance.mustache_plans): every scalar in a case's data becomes a
 * hole, and the plan, filled with the scalars' texts, must give the case's
 * expected output. Then: the other escapers with hostile values, the
 * constructs that cannot be planned (each refused with LOOM_EUNAVAIL and
 * the tag's place), errors that are the renderer's own, and bad holes. */
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>

#include "test_util.h"

#include "loom/template.h"

/* ------------------------------------------------------------ holes */

typedef struct holes {
    loom_template_hole_t *h;
    loom_template_text_t *text;
    char **owned;
    size_t n, cap;
} holes_t;

static void holes_free(holes_t *hs)
{
    for (size_t i = 0; i < hs->n; i++)
        free(hs->owned[i]);
    free(hs->h);
    free(hs->text);
    free(hs->owned);
    memset(hs, 0, sizeof *hs);
}

/* A scalar's text as template.h defines it (written out here, not taken
 * from the renderer); NULL for false and null, which print nothing. */
static char *scalar_text(const json_t *v)
{
    char num[64] = "";
    if (json_is_false(v) || json_is_null(v))
        return NULL;
    if (json_is_string(v))
        return strndup(json_string_value(v), json_string_length(v));
    if (json_is_integer(v))
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        loom_format_real(json_real_value(v), num, sizeof num);
    else if (json_is_true(v))
        snprintf(num, sizeof num, "true");
    return strdup(num);
}

static bool scalar_truthy(const json_t *v)
{
    if (json_is_string(v))
        return json_string_length(v) > 0;
    return !json_is_false(v) && !json_is_null(v);
}

/* A copy of v with every scalar replaced by a fresh stand-in, each
 * recorded as a hole with the original's text and truthiness. */
static json_t *punch(const json_t *v, holes_t *hs)
{
    if (json_is_object(v)) {
        json_t *o = json_object();
        const char *k;
        json_t *e;
        json_object_foreach((json_t *)v, k, e) json_object_set_new(o, k, punch(e, hs));
        return o;
    }
    if (json_is_array(v)) {
        json_t *a = json_array();
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) json_array_append_new(a, punch(e, hs));
        return a;
    }
    if (hs->n == hs->cap) {
        hs->cap = hs->cap ? hs->cap * 2 : 16;
        hs->h = realloc(hs->h, hs->cap * sizeof *hs->h);
        hs->text = realloc(hs->text, hs->cap * sizeof *hs->text);
        hs->owned = realloc(hs->owned, hs->cap * sizeof *hs->owned);
    }
    json_t *s = json_string("");
    char *t = scalar_text(v);
    hs->h[hs->n] = (loom_template_hole_t){.leaf = s, .truthy = scalar_truthy(v)};
    hs->text[hs->n] = (loom_template_text_t){t, t ? strlen(t) : 0};
    hs->owned[hs->n++] = t;
    return s;
}

/* Plans t over data with every scalar a hole and renders it; LOOM_OK with
 * the output in out, or the plan's error. */
static int planned(const char *tmpl, const json_t *data, const loom_template_options_t *o,
                   loom_buf_t *out, loom_err_t *err)
{
    loom_template_t *t;
    int rc = loom_template_compile(tmpl, strlen(tmpl), "t", &t, err);
    if (rc)
        return rc;
    holes_t hs = {0};
    json_t *shape = punch(data, &hs);
    loom_template_plan_t *p;
    rc = loom_template_plan_new(t, shape, hs.h, hs.n, o, &p, err);
    if (rc == LOOM_OK) {
        /* twice: a plan is reusable */
        assert_int_equal(loom_template_plan_render(p, hs.text, out), LOOM_OK);
        loom_buf_reset(out);
        assert_int_equal(loom_template_plan_render(p, hs.text, out), LOOM_OK);
        loom_template_plan_free(p);
    }
    json_decref(shape);
    holes_free(&hs);
    loom_template_free(t);
    return rc;
}

/* ------------------------------------------------ the specification */

static void spec_file(const char *dir, const char *file, int *total, int *planned_ok, int *refused)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.json", dir, file);
    json_t *spec;
    loom_err_t err;
    if (loom_json_load_file(path, &spec, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(spec, "tests"), i, t)
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
        int rc = planned(tmpl, json_object_get(t, "data"), &o, &out, &err);
        (*total)++;
        if (rc == LOOM_EUNAVAIL) {
            (*refused)++;
            /* the refusal names the tag's place */
            assert_non_null(strstr(err.msg, "cannot be planned"));
            assert_true(strncmp(err.msg, "t:", 2) == 0 || strstr(err.msg, ":"));
        } else if (rc != LOOM_OK || strcmp(out.data ? out.data : "", expected) != 0) {
            fail_msg("%s / %s: template %s\nexpected [%s]\ngot      [%s] %s", file, name, tmpl,
                     expected, out.data ? out.data : "", rc ? err.msg : "");
        } else {
            (*planned_ok)++;
        }
        loom_buf_free(&out);
        loom_template_partials_free(parts);
    }
    json_decref(spec);
}

/* Every case of the module files in dir through plans. */
static void cases_through_plans(const char *dir)
{
    static const char *const files[] = {"interpolation", "sections",      "inverted",
                                        "comments",      "delimiters",    "partials",
                                        "~inheritance",  "~dynamic-names"};
    int total = 0, ok = 0, refused = 0;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        spec_file(dir, files[i], &total, &ok, &refused);
    printf("mustache cases through plans (%s): %d of %d planned and equal, %d refused\n", dir, ok,
           total, refused);
    assert_int_equal(ok + refused, total);
    /* Refusals are the few constructs that look at a value in ways a plan
     * cannot replay; the cases are mostly plain interpolation and sections. */
    assert_true(ok >= total * 8 / 10);
}

static void own_cases_through_plans(void **state)
{
    char dir[4096];
    const char *src = getenv("LOOM_SOURCE_DIR");
    snprintf(dir, sizeof dir, "%s/tests/data/mustache", src ? src : ".");
    cases_through_plans(dir);
}

static void the_spec_through_plans(void **state)
{
    cases_through_plans(getenv("LOOM_MUSTACHE_SPEC"));
}

/* ------------------------------------------ escapers, hostile values */

static void escapers_match_the_renderer(void **state)
{
    static const char *const values[] = {"plain",    "",      "it's",        "$(rm -rf /)",
                                         "a\nb\tc",  "\"q\"", "caf\xc3\xa9", "\x01\x7f",
                                         "\xff\xfe", "`x`;'"};
    const char *tmpl = "#!/bin/sh\nexport A={{a}}\nB={{&a}} {{#list}}[{{.}}]{{/list}}\n"
                       "{{#flag}}on {{n}} {{x}}{{/flag}}{{^off}}!{{/off}} [{{off}}] [{{flag}}]\n";
    loom_template_escape_t escs[] = {LOOM_TEMPLATE_ESCAPE_SHELL, LOOM_TEMPLATE_ESCAPE_YAML,
                                     LOOM_TEMPLATE_ESCAPE_HTML, LOOM_TEMPLATE_ESCAPE_NONE};
    for (size_t e = 0; e < 4; e++) {
        for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
            json_t *data = json_pack("{s:s, s:[s, s, i, b, n], s:b, s:i, s:f, s:b}", "a", values[v],
                                     "list", values[(v + 1) % 10], values[(v + 2) % 10], (int)v, 0,
                                     "flag", 1, "n", -7 * (int)v, "x", 0.1 * (double)v, "off", 0);
            if (!data) /* invalid UTF-8 is not a JSON string */
                continue;
            loom_template_options_t o = {.escape = escs[e], .strict = true};
            loom_buf_t want = LOOM_BUF_INIT, got = LOOM_BUF_INIT;
            loom_err_t err;
            assert_int_equal(
                loom_template_render_string(tmpl, strlen(tmpl), "t", data, &o, &want, &err),
                LOOM_OK);
            assert_int_equal(planned(tmpl, data, &o, &got, &err), LOOM_OK);
            assert_string_equal(got.data, want.data);
            loom_buf_free(&want);
            loom_buf_free(&got);
            json_decref(data);
        }
    }
    /* Values the renderer never sees as JSON (bytes that are not UTF-8)
     * are escaped the same way by the plan. */
    loom_template_t *t;
    loom_err_t err;
    assert_int_equal(loom_template_compile("v={{v}}", 7, "t", &t, &err), LOOM_OK);
    json_t *sin = json_string("");
    json_t *data = json_pack("{s:O}", "v", sin);
    loom_template_hole_t h = {.leaf = sin, .truthy = -1};
    loom_template_options_t o = {.escape = LOOM_TEMPLATE_ESCAPE_YAML};
    loom_template_plan_t *p;
    assert_int_equal(loom_template_plan_new(t, data, &h, 1, &o, &p, &err), LOOM_OK);
    loom_buf_t got = LOOM_BUF_INIT, want = LOOM_BUF_INIT;
    loom_template_text_t val = {"\xff"
                                "a",
                                2};
    assert_int_equal(loom_template_plan_render(p, &val, &got), LOOM_OK);
    loom_buf_append_str(&want, "v=");
    loom_template_escape_append(&want, LOOM_TEMPLATE_ESCAPE_YAML,
                                "\xff"
                                "a",
                                2);
    assert_string_equal(got.data, want.data);
    assert_true(loom_template_plan_uses(p, 0));
    loom_buf_free(&got);
    loom_buf_free(&want);
    loom_template_plan_free(p);
    loom_template_free(t);
    json_decref(data);
    json_decref(sin);
}

/* --------------------------------------------- what cannot be planned */

static int plan_one(const char *tmpl, const json_t *data, const loom_template_hole_t *h, size_t n,
                    loom_template_partials_t *parts, loom_err_t *err)
{
    loom_template_t *t;
    int rc = loom_template_compile(tmpl, strlen(tmpl), "t", &t, err);
    assert_int_equal(rc, LOOM_OK);
    loom_template_options_t o = {
        .escape = LOOM_TEMPLATE_ESCAPE_SHELL, .strict = true, .partials = parts};
    loom_template_plan_t *p = NULL;
    rc = loom_template_plan_new(t, data, h, n, &o, &p, err);
    assert_true(rc == LOOM_OK ? p != NULL : p == NULL);
    loom_template_plan_free(p);
    loom_template_free(t);
    return rc;
}

static void refusals(void **state)
{
    json_t *x = json_string(""), *y = json_string("");
    json_t *data = json_pack("{s:O, s:[O], s:{s:O}}", "x", x, "list", y, "obj", "y", y);
    loom_template_hole_t h[] = {{.leaf = x, .truthy = -1}, {.leaf = y, .truthy = 1}};
    loom_err_t err;
    /* a section or inverted section on a hole of unknown truthiness */
    assert_int_equal(plan_one("a\n{{#x}}on{{/x}}", data, h, 2, NULL, &err), LOOM_EUNAVAIL);
    assert_string_equal(err.msg, "t:2:1: 'x' is a section on a hole that may be true or false; "
                                 "the template cannot be planned");
    assert_int_equal(plan_one("{{^x}}off{{/x}}", data, h, 2, NULL, &err), LOOM_EUNAVAIL);
    assert_non_null(strstr(err.msg, "t:1:1: 'x' is an inverted section"));
    /* ...but printing it, or a section on a hole known to be truthy, is fine */
    assert_int_equal(
        plan_one("{{x}}{{#list}}{{.}}{{/list}}{{#obj.y}}{{.}}{{/obj.y}}", data, h, 2, NULL, &err),
        LOOM_OK);
    /* a container holding a hole, printed as JSON */
    assert_int_equal(plan_one("{{list}}", data, h, 2, NULL, &err), LOOM_EUNAVAIL);
    assert_non_null(strstr(err.msg, "'list' renders a value that holds a hole as JSON"));
    assert_int_equal(plan_one("{{obj}}", data, h, 2, NULL, &err), LOOM_EUNAVAIL);
    /* a dynamic partial named by a hole */
    loom_template_partials_t *parts;
    assert_int_equal(loom_template_partials_new(&parts, &err), LOOM_OK);
    assert_int_equal(loom_template_partials_add(parts, "p", "[{{x}}]", 7, &err), LOOM_OK);
    assert_int_equal(loom_template_partials_add(parts, "parent",
                                                "<\n  {{$b}}\n  in {{x}}\n  {{/b}}\n>", 31, &err),
                     LOOM_OK);
    assert_int_equal(plan_one("{{>*x}}", data, h, 2, parts, &err), LOOM_EUNAVAIL);
    assert_non_null(strstr(err.msg, "takes a partial's name from a hole"));
    /* a partial whose content has holes is fine */
    assert_int_equal(plan_one("{{>p}}", data, h, 2, parts, &err), LOOM_OK);
    /* a reindented block */
    assert_int_equal(plan_one("{{<parent}}\n    {{$b}}\n    mine {{x}}\n    {{/b}}\n{{/parent}}",
                              data, h, 2, parts, &err),
                     LOOM_EUNAVAIL);
    assert_non_null(strstr(err.msg, "is a reindented block"));
    /* the renderer's own errors come through as they are */
    assert_int_equal(plan_one("{{nope}}", data, h, 2, NULL, &err), LOOM_ENOTFOUND);
    assert_non_null(strstr(err.msg, "t:1:1: variable 'nope' is missing"));
    /* holes must be scalars with a truthiness of -1, 0 or 1 */
    json_t *arr = json_object_get(data, "list");
    loom_template_hole_t bad[] = {{.leaf = arr, .truthy = 1}};
    assert_int_equal(plan_one("{{x}}", data, bad, 1, NULL, &err), LOOM_EINVAL);
    loom_template_hole_t bad2[] = {{.leaf = x, .truthy = 2}};
    assert_int_equal(plan_one("{{x}}", data, bad2, 1, NULL, &err), LOOM_EINVAL);
    loom_template_partials_free(parts);
    json_decref(data);
    json_decref(x);
    json_decref(y);
}

/* A hole the template never prints is reported unused (and may be left
 * without a value); literal text around holes is kept exactly. */
static void uses_and_literals(void **state)
{
    json_t *a = json_string(""), *b = json_string("");
    json_t *data = json_pack("{s:O, s:O}", "a", a, "b", b);
    loom_template_hole_t h[] = {{.leaf = a, .truthy = 1}, {.leaf = b, .truthy = 1}};
    loom_template_t *t;
    loom_err_t err;
    const char *tmpl = "x{{&a}}y{{&a}}z";
    assert_int_equal(loom_template_compile(tmpl, strlen(tmpl), "t", &t, &err), LOOM_OK);
    loom_template_options_t o = {.escape = LOOM_TEMPLATE_ESCAPE_SHELL};
    loom_template_plan_t *p;
    assert_int_equal(loom_template_plan_new(t, data, h, 2, &o, &p, &err), LOOM_OK);
    assert_true(loom_template_plan_uses(p, 0));
    assert_false(loom_template_plan_uses(p, 1));
    assert_false(loom_template_plan_uses(p, 2));
    assert_int_equal(loom_template_plan_literal_len(p), 3);
    loom_template_text_t v[] = {{"AB", 2}, {NULL, 0}};
    loom_buf_t out = LOOM_BUF_INIT;
    loom_buf_append_str(&out, "keep:");
    assert_int_equal(loom_template_plan_render(p, v, &out), LOOM_OK);
    assert_string_equal(out.data, "keep:xAByABz");
    loom_buf_free(&out);
    loom_template_plan_free(p);
    loom_template_free(t);
    json_decref(data);
    json_decref(a);
    json_decref(b);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--spec") == 0) {
        const char *dir = getenv("LOOM_MUSTACHE_SPEC");
        struct stat st;
        if (!dir || !*dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            printf("skipped: no copy of the official Mustache specification (set "
                   "LOOM_MUSTACHE_SPEC=DIR to its specs/ folder)\n");
            return 77;
        }
        const struct CMUnitTest spec[] = {cmocka_unit_test(the_spec_through_plans)};
        return cmocka_run_group_tests(spec, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(own_cases_through_plans),
        cmocka_unit_test(escapers_match_the_renderer),
        cmocka_unit_test(refusals),
        cmocka_unit_test(uses_and_literals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
