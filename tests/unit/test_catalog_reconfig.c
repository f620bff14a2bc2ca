/* The catalog's "reconfig" check (src/catalog/catalog.c) is a table of
 * Rubick's fields (catalog_int.h), not a call into rubick: catalog sits
 * below rubick (docs/design.md, issue 34). This keeps the table in step
 * with rubick's parser: the same member names and bounds, and a set of
 * reconfig objects that both accept or both refuse. The two differences
 * are by design and checked as such: the model name (rubick knows its
 * models, the catalog only that it is a short name) and offload without a
 * ZeRO stage (a rule across fields); loomd checks both at job.submit. */
#include <stdio.h>

#include "test_util.h"

#include "catalog/catalog_int.h"
#include "loom/catalog.h"
#include "loom/rubick.h"

/* Does the catalog take a job with this reconfig? */
static bool catalog_takes(const char *reconfig)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"reconfig\": %s}]}", reconfig);
    loom_catalog_t *c = NULL;
    loom_catalog_issues_t is = LOOM_CATALOG_ISSUES_INIT;
    loom_err_t err;
    int rc =
        loom_catalog_load_string(text, strlen(text), "c.json", "workloads/catalogs", &c, &is, &err);
    loom_catalog_issues_free(&is);
    loom_catalog_free(c);
    return rc == LOOM_OK;
}

static bool rubick_takes(const char *reconfig)
{
    json_error_t je;
    json_t *j = json_loads(reconfig, JSON_DECODE_ANY, &je);
    assert_non_null(j);
    loom_rubick_spec_t s;
    loom_err_t err;
    int rc = loom_rubick_spec_parse(j, "reconfig", &s, &err);
    json_decref(j);
    return rc == LOOM_OK;
}

static const loom__reconfig_field_t *field(const loom__reconfig_field_t *f, size_t n,
                                           const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(f[i].name, name) == 0)
            return &f[i];
    fail_msg("no reconfig field '%s' in the catalog's table", name);
    return NULL;
}

/* The members rubick lists when it meets an unknown one are the table's. */
static void test_same_members(void **s)
{
    (void)s;
    size_t n;
    const loom__reconfig_field_t *f = loom__catalog_reconfig_fields(&n);
    json_t *j = json_pack("{s:i}", "no_such_member", 1);
    loom_rubick_spec_t spec;
    loom_err_t err;
    assert_int_equal(loom_rubick_spec_parse(j, "r", &spec, &err), LOOM_EINVAL);
    json_decref(j);
    char want[512] = "r/no_such_member: unknown member, expected one of ";
    for (size_t i = 0; i < n; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", i ? ", " : "", f[i].name);
    assert_string_equal(err.msg, want);
    const loom__reconfig_field_t *plan = field(f, n, "plan");
    j = json_pack("{s:i,s:{s:i}}", "global_batch", 8, "plan", "no_such_member", 1);
    assert_int_equal(loom_rubick_spec_parse(j, "r", &spec, &err), LOOM_EINVAL);
    json_decref(j);
    snprintf(want, sizeof want, "r/plan/no_such_member: unknown member, expected one of ");
    for (size_t i = 0; i < plan->nmembers; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", i ? ", " : "",
                 plan->members[i].name);
    assert_string_equal(err.msg, want);
}

/* Rubick's bounds are the table's. */
static void test_same_bounds(void **s)
{
    (void)s;
    size_t n;
    const loom__reconfig_field_t *f = loom__catalog_reconfig_fields(&n);
    assert_int_equal(field(f, n, "global_batch")->hi, LOOM_RUBICK_BATCH_MAX);
    assert_int_equal(field(f, n, "gpus")->hi, LOOM_RUBICK_GPUS_MAX);
    assert_int_equal(field(f, n, "accumulation")->hi, LOOM_RUBICK_ACCUM_MAX);
    const loom__reconfig_field_t *plan = field(f, n, "plan");
    assert_int_equal(field(plan->members, plan->nmembers, "accumulation")->hi,
                     LOOM_RUBICK_ACCUM_MAX);
    assert_int_equal((int64_t)sizeof((loom_rubick_spec_t){0}.model) - 1, field(f, n, "model")->hi);
}

/* Both take or both refuse each of these. */
static void test_same_verdicts(void **s)
{
    (void)s;
    static const char *const cases[] = {
        "{\"global_batch\": 64}",
        "{}",
        "7",
        "{\"global_batch\": 0}",
        "{\"global_batch\": 16777216}",
        "{\"global_batch\": 16777217}",
        "{\"global_batch\": 64, \"gpus\": {\"min\": 1, \"max\": 16}}",
        "{\"global_batch\": 64, \"gpus\": {\"min\": 1, \"max\": 17}}",
        "{\"global_batch\": 64, \"gpus\": {\"min\": 4, \"max\": 2}}",
        "{\"global_batch\": 64, \"gpus\": {\"min\": 1}}",
        "{\"global_batch\": 64, \"gpus\": {\"min\": 1, \"max\": 2, \"step\": 1}}",
        "{\"global_batch\": 64, \"gpus\": [1, 2]}",
        "{\"global_batch\": 64, \"accumulation\": [1, 2, 64]}",
        "{\"global_batch\": 64, \"accumulation\": [65]}",
        "{\"global_batch\": 64, \"accumulation\": []}",
        "{\"global_batch\": 64, \"accumulation\": [0]}",
        "{\"global_batch\": 64, \"zero\": [0, 3]}",
        "{\"global_batch\": 64, \"zero\": [7]}",
        "{\"global_batch\": 64, \"recompute\": [true, false]}",
        "{\"global_batch\": 64, \"recompute\": [1]}",
        "{\"global_batch\": 64, \"offload\": true}",
        "{\"global_batch\": 64, \"cpus\": {\"min\": 0.5, \"max\": 8}}",
        "{\"global_batch\": 64, \"cpus\": {\"min\": 0.0001, \"max\": 8}}",
        "{\"global_batch\": 64, \"cpus\": {\"min\": 1, \"max\": 4097}}",
        "{\"global_batch\": 64, \"cpus\": {\"min\": 8, \"max\": 2}}",
        "{\"global_batch\": 64, \"memory\": {\"min\": \"16GiB\", \"max\": \"64GiB\"}}",
        "{\"global_batch\": 64, \"memory\": {\"min\": 1048576, \"max\": \"1MiB\"}}",
        "{\"global_batch\": 64, \"memory\": {\"min\": \"64GiB\", \"max\": \"16GiB\"}}",
        "{\"global_batch\": 64, \"memory\": {\"min\": \"2PiB\", \"max\": \"4PiB\"}}",
        "{\"global_batch\": 64, \"memory\": {\"min\": \"lots\", \"max\": \"64GiB\"}}",
        "{\"global_batch\": 64, \"memory\": {\"min\": 0, \"max\": \"64GiB\"}}",
        "{\"global_batch\": 64, \"memory\": \"16GiB\"}",
        ("{\"global_batch\": 64, \"plan\": {\"accumulation\": 2, \"zero\": 1, \"offload\": "
         "true, \"recompute\": false}}"),
        "{\"global_batch\": 64, \"plan\": {\"accumulation\": 65}}",
        "{\"global_batch\": 64, \"plan\": {\"zero\": 4}}",
        "{\"global_batch\": 64, \"plan\": {\"recompute\": 1}}",
        "{\"global_batch\": 64, \"plan\": {\"shard\": 1}}",
        "{\"global_batch\": 64, \"plan\": []}",
        "{\"global_batch\": 64, \"model\": \"resnet50\"}",
        "{\"global_batch\": 64, \"model\": 5}",
        "{\"global_batch\": 64, \"gpu\": {\"min\": 1, \"max\": 2}}",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool c = catalog_takes(cases[i]), r = rubick_takes(cases[i]);
        if (c != r)
            fail_msg("%s: the catalog %s it, rubick %s it", cases[i], c ? "takes" : "refuses",
                     r ? "takes" : "refuses");
    }
}

/* What the table leaves to loomd: taken by the catalog, refused by rubick
 * (and so at job.submit). */
static void test_left_to_loomd(void **s)
{
    (void)s;
    static const char *const cases[] = {
        "{\"global_batch\": 64, \"model\": \"no-such-model\"}",
        "{\"global_batch\": 64, \"plan\": {\"zero\": 0, \"offload\": true}}",
    };
    for (size_t i = 0; i < 2; i++) {
        assert_true(catalog_takes(cases[i]));
        assert_false(rubick_takes(cases[i]));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_members),
        cmocka_unit_test(test_same_bounds),
        cmocka_unit_test(test_same_verdicts),
        cmocka_unit_test(test_left_to_loomd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
