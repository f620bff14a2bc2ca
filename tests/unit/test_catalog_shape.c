/* Catalog shapes (loom_catalog_shape_*, src/catalog/sample.c) against
 * loom_catalog_sample: for every job of the shipped catalogs and of an
 * awkward one, draw after draw from the same RNG state, the shape's
 * context and the sampled context have the same structure and the same
 * values everywhere but at the holes, every hole's text is what a template
 * prints for the sampled value there, its declared truthiness holds, and
 * both consume the same draws. Then: the buffer protocol (too small: say
 * how much, draw again) and a job index out of range. (A job whose choice
 * values are arrays or objects would have no shape, but the catalog
 * refuses such values, so no test can make one.) */
#include <stdio.h>

#include "test_util.h"

#include "loom/catalog.h"
#include "loom/template.h"

#define BASE "workloads/catalogs"

/* The awkward catalog: choices of false, "", true, reals and quoted
 * text; "$$", ${catalog_dir}; an argument that may come
 * out empty; environment values built from parameters. */
static const char *awkward =
    "{\"version\": 1, \"jobs\": ["
    " {\"name\": \"odd\", \"executable\": \"/bin/echo\","
    "  \"arguments\": [\"${flag}\", \"--x=${x}\", \"$$HOME\", \"${catalog_dir}/f\","
    "                 \"a$$b$$\", \"lit\", \"${word}${flag}\", \"${r}:${n}\"],"
    "  \"environment\": {\"B_VAR\": \"${word}\", \"A_VAR\": \"n=${n}\", \"FIXED\": \"1\"},"
    "  \"parameters\": {"
    "    \"flag\": {\"type\": \"choice\", \"values\": [true, false, \"\", \"yes\"]},"
    "    \"x\": {\"type\": \"choice\", \"values\": [0.1, 2.5e-7, 3, \"it's\"], \"weights\": "
    "[1,2,3,4]},"
    "    \"word\": {\"type\": \"choice\", \"values\": [\"\", \"a b\", \"$(x)\"]},"
    "    \"r\": {\"type\": \"real\", \"min\": 1e-6, \"max\": 10, \"log\": true},"
    "    \"n\": {\"type\": \"int\", \"min\": -5, \"max\": 1000000, \"log\": false}}},"
    " {\"name\": \"plain\", \"executable\": \"x\"}"
    "]}";

/* What a template prints for a scalar (template.h), written out here. */
static void printed(const json_t *v, loom_buf_t *out)
{
    char num[64];
    if (json_is_string(v))
        loom_buf_append(out, json_string_value(v), json_string_length(v));
    else if (json_is_integer(v))
        loom_buf_appendf(out, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        loom_buf_append(out, num, loom_format_real(json_real_value(v), num, sizeof num));
    else if (json_is_true(v))
        loom_buf_append_str(out, "true");
}

static bool truthy(const json_t *v)
{
    if (json_is_string(v))
        return json_string_length(v) > 0;
    return !json_is_false(v) && !json_is_null(v);
}

typedef struct cmp {
    const loom_catalog_hole_t *holes;
    size_t nholes;
    const char *buf;
    const loom_catalog_span_t *spans;
    size_t *seen; /* per hole: how often it was met */
} cmp_t;

static void same_but_holes(const cmp_t *c, const json_t *shape, const json_t *real,
                           const char *where)
{
    for (size_t k = 0; k < c->nholes; k++) {
        if (c->holes[k].leaf != shape)
            continue;
        c->seen[k]++;
        if (json_is_array(real) || json_is_object(real))
            fail_msg("%s: hole %zu stands for a container", where, k);
        loom_buf_t want = LOOM_BUF_INIT;
        printed(real, &want);
        const char *got = c->buf + c->spans[k].off;
        if (c->spans[k].len != want.len || memcmp(got, want.data ? want.data : "", want.len))
            fail_msg("%s: hole %zu is '%.*s', the sampled value prints '%s'", where, k,
                     (int)c->spans[k].len, got, want.data ? want.data : "");
        if (c->spans[k].none != (json_is_false(real) || json_is_null(real)))
            fail_msg("%s: hole %zu: none is %d for %s", where, k, c->spans[k].none,
                     loom_json_type_name(real));
        if (c->holes[k].truthy >= 0 && c->holes[k].truthy != truthy(real))
            fail_msg("%s: hole %zu claims truthy %d", where, k, c->holes[k].truthy);
        loom_buf_free(&want);
        return;
    }
    if (json_typeof(shape) != json_typeof(real))
        fail_msg("%s: %s in the shape, %s sampled", where, loom_json_type_name(shape),
                 loom_json_type_name(real));
    char sub[512];
    if (json_is_object(shape)) {
        assert_int_equal(json_object_size(shape), json_object_size(real));
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)shape, k, v)
        {
            snprintf(sub, sizeof sub, "%s/%s", where, k);
            const json_t *r = json_object_get(real, k);
            if (!r)
                fail_msg("%s: missing from the sampled context", sub);
            same_but_holes(c, v, r, sub);
        }
    } else if (json_is_array(shape)) {
        assert_int_equal(json_array_size(shape), json_array_size(real));
        for (size_t i = 0; i < json_array_size(shape); i++) {
            snprintf(sub, sizeof sub, "%s/%zu", where, i);
            same_but_holes(c, json_array_get(shape, i), json_array_get(real, i), sub);
        }
    } else if (!json_equal((json_t *)shape, (json_t *)real)) {
        fail_msg("%s: a fixed value differs", where);
    }
}

static void check_catalog(loom_catalog_t *cat, size_t draws, size_t *shaped)
{
    for (size_t i = 0; i < loom_catalog_job_count(cat); i++) {
        loom_catalog_shape_t *s;
        loom_err_t err;
        if (loom_catalog_shape_new(cat, i, &s, &err) != LOOM_OK)
            continue; /* checked in no_shape */
        (*shaped)++;
        const loom_catalog_hole_t *holes;
        size_t nh = loom_catalog_shape_holes(s, &holes);
        size_t *seen = calloc(nh + 1, sizeof *seen);
        loom_catalog_span_t *spans = calloc(nh + 1, sizeof *spans);
        for (size_t d = 0; d < draws; d++) {
            loom_rng_t a, b;
            loom_rng_init(&a, 99, d);
            b = a;
            json_t *ctx;
            assert_int_equal(loom_catalog_sample(cat, i, &a, &ctx, &err), LOOM_OK);
            char buf[4096];
            size_t need = loom_catalog_shape_draw(s, &b, buf, sizeof buf, spans);
            assert_true(need <= sizeof buf);
            assert_memory_equal(&a, &b, sizeof a); /* the same draws */
            cmp_t c = {.holes = holes, .nholes = nh, .buf = buf, .spans = spans, .seen = seen};
            same_but_holes(&c, loom_catalog_shape_context(s), ctx, loom_catalog_job(cat, i)->name);
            json_decref(ctx);
        }
        for (size_t k = 0; k < nh; k++) /* every hole is somewhere in the context */
            assert_true(seen[k] >= draws);
        free(seen);
        free(spans);
        loom_catalog_shape_free(s);
    }
}

static void shapes_match_samples(void **state)
{
    static const char *const files[] = {"workloads/catalogs/demo.json",
                                        "workloads/catalogs/zoo.json"};
    size_t shaped = 0, jobs = 0;
    loom_err_t err;
    for (size_t f = 0; f < 2; f++) {
        loom_catalog_t *cat;
        if (loom_catalog_load_file(files[f], &cat, NULL, &err) != LOOM_OK)
            fail_msg("%s", err.msg);
        jobs += loom_catalog_job_count(cat);
        check_catalog(cat, 300, &shaped);
        loom_catalog_free(cat);
    }
    assert_int_equal(shaped, jobs); /* every shipped job has a shape */
    loom_catalog_t *cat;
    if (loom_catalog_load_string(awkward, strlen(awkward), "awkward.json", BASE, &cat, NULL,
                                 &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    shaped = 0;
    check_catalog(cat, 3000, &shaped);
    assert_int_equal(shaped, 2);
    loom_catalog_free(cat);
}

static void buffer_too_small(void **state)
{
    loom_catalog_t *cat;
    loom_err_t err;
    assert_int_equal(
        loom_catalog_load_string(awkward, strlen(awkward), "awkward.json", BASE, &cat, NULL, &err),
        LOOM_OK);
    loom_catalog_shape_t *s;
    assert_int_equal(loom_catalog_shape_new(cat, 0, &s, &err), LOOM_OK);
    const loom_catalog_hole_t *holes;
    size_t nh = loom_catalog_shape_holes(s, &holes);
    loom_catalog_span_t big[64], small[64];
    assert_true(nh <= 64);
    for (uint64_t d = 0; d < 200; d++) {
        loom_rng_t a, b;
        loom_rng_init(&a, 3, d);
        b = a;
        char full[4096], tiny[8];
        size_t need = loom_catalog_shape_draw(s, &a, full, sizeof full, big);
        size_t need2 = loom_catalog_shape_draw(s, &b, tiny, sizeof tiny, small);
        assert_int_equal(need, need2); /* the same count either way */
        assert_true(need > sizeof tiny);
        assert_memory_equal(&a, &b, sizeof a);
        for (size_t k = 0; k < nh; k++) /* spans are the same too */
            assert_true(big[k].off == small[k].off && big[k].len == small[k].len &&
                        big[k].none == small[k].none);
        /* the holes that fit whole are there */
        for (size_t k = 0; k < nh; k++)
            if (small[k].off + small[k].len <= sizeof tiny)
                assert_memory_equal(tiny + small[k].off, full + big[k].off, small[k].len);
    }
    loom_catalog_shape_free(s);
    loom_catalog_free(cat);
}

static void out_of_range(void **state)
{
    loom_catalog_t *cat;
    loom_err_t err;
    assert_int_equal(
        loom_catalog_load_string(awkward, strlen(awkward), "awkward.json", BASE, &cat, NULL, &err),
        LOOM_OK);
    loom_catalog_shape_t *s = (loom_catalog_shape_t *)&err;
    assert_int_equal(loom_catalog_shape_new(cat, 2, &s, &err), LOOM_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err.msg, "catalog job index 2: expected < 2"));
    loom_catalog_free(cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shapes_match_samples),
        cmocka_unit_test(buffer_too_small),
        cmocka_unit_test(out_of_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
