/* The protocol's JSON form of jobs: job.submit params -> spec (with the
 * parameter named in every error), job -> JSON. */
#include "loom/store.h"
#include "test_util.h"

static int parse(const char *text, loom_job_spec_t *spec, char **labels, json_t **keep,
                 loom_err_t *err)
{
    json_error_t je;
    *keep = json_loads(text, JSON_ALLOW_NUL, &je);
    if (!*keep)
        fail_msg("bad test JSON %s: %s", text, je.text);
    return loom_job_spec_from_json(*keep, spec, labels, err);
}

static void full_spec(void **state)
{
    loom_job_spec_t s;
    char *labels;
    json_t *p;
    loom_err_t err;
    int rc =
        parse("{\"name\":\"n\",\"script\":\"s\",\"format\":\"yaml\",\"resources\":{\"cpus\":4,"
              "\"memory\":\"16GiB\",\"gpu_share\":500,\"gpu_memory\":1024,\"gpu_type\":\"A100\"},"
              "\"time_limit\":\"1h30m\",\"priority\":7,\"labels\":{\"b\":\"2\",\"a\":\"1\"},"
              "\"submit_id\":\"k1\"}",
              &s, &labels, &p, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_string_equal(s.name, "n");
    assert_int_equal(s.format, LOOM_JOB_FORMAT_YAML);
    assert_int_equal(s.cpus, 4);
    assert_int_equal(s.memory_bytes, 16ULL << 30);
    assert_int_equal(s.gpu_share_milli, 500);
    assert_int_equal(s.gpu_memory_bytes, 1024);
    assert_string_equal(s.gpu_type, "A100");
    assert_int_equal(s.time_limit_s, 5400);
    assert_int_equal(s.priority, 7);
    assert_string_equal(s.submit_id, "k1");
    assert_string_equal(s.labels_json, "{\"a\":\"1\",\"b\":\"2\"}");
    free(labels);
    json_decref(p);

    /* Defaults. */
    assert_int_equal(parse("{\"name\":\"n\",\"script\":\"\"}", &s, &labels, &p, &err), LOOM_OK);
    assert_int_equal(s.cpus, 1);
    assert_int_equal(s.format, LOOM_JOB_FORMAT_BATCH);
    assert_null(s.submit_id);
    assert_null(labels);
    json_decref(p);
}

static void errors_name_the_parameter(void **state)
{
    static const struct {
        const char *json, *expect;
    } cases[] = {
        {"[]", "params: expected an object, found an array"},
        {"{\"script\":\"\"}", "name: required"},
        {"{\"name\":3,\"script\":\"\"}", "name: expected a string, found an integer"},
        {"{\"name\":\"n\"}", "script: required"},
        {"{\"name\":\"n\",\"script\":\"\",\"format\":\"xml\"}", "format: unknown job format 'xml'"},
        {"{\"name\":\"n\",\"script\":\"\",\"resources\":{\"cpus\":\"4\"}}",
         "resources.cpus: expected an integer, found a string"},
        {"{\"name\":\"n\",\"script\":\"\",\"resources\":{\"cpus\":1.5}}",
         "resources.cpus: expected an integer, found a real"},
        {"{\"name\":\"n\",\"script\":\"\",\"resources\":{\"memory\":\"lots\"}}",
         "resources.memory"},
        {"{\"name\":\"n\",\"script\":\"\",\"resources\":{\"memory\":-1}}", "resources.memory"},
        {"{\"name\":\"n\",\"script\":\"\",\"resources\":{\"gpu\":1}}",
         "resources: unknown member 'gpu'"},
        {"{\"name\":\"n\",\"script\":\"\",\"resources\":[]}", "resources: expected an object"},
        {"{\"name\":\"n\",\"script\":\"\",\"time_limit\":\"soon\"}", "time_limit"},
        {"{\"name\":\"n\",\"script\":\"\",\"time_limit\":true}", "time_limit: expected an integer"},
        {"{\"name\":\"n\",\"script\":\"\",\"priority\":null}", "priority: expected an integer"},
        {"{\"name\":\"n\",\"script\":\"\",\"labels\":{\"a b\":\"x\"}}", "labels: key 'a b'"},
        {"{\"name\":\"n\",\"script\":\"\",\"labels\":\"x\"}", "labels: expected an object"},
        {"{\"name\":\"n\",\"script\":\"\",\"submit_id\":5}", "submit_id: expected a string"},
        {"{\"name\":\"n\",\"script\":\"\",\"colour\":5}", "unknown parameter 'colour'"},
        {"{\"name\":\"n\",\"script\":\"\",\"resources\":{\"gpus\":2,\"gpu_share\":100}}",
         "not both"},
        {"{\"name\":\"n\\u0000x\",\"script\":\"\"}", "name: contains a NUL"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        loom_job_spec_t s;
        char *labels;
        json_t *p;
        loom_err_t err;
        assert_int_equal(parse(cases[i].json, &s, &labels, &p, &err), LOOM_EINVAL);
        assert_null(labels);
        if (!strstr(err.msg, cases[i].expect))
            fail_msg("case %zu: expected '%s' in '%s'", i, cases[i].expect, err.msg);
        json_decref(p);
    }
}

static void job_object(void **state)
{
    loom_job_t j = {0};
    j.id = 42;
    j.name = "train";
    j.script = "echo";
    j.labels_json = "{\"a\":\"b\"}";
    j.cpus = 2;
    j.gpu_share_milli = 250;
    j.state = LOOM_JOB_CANCELLED;
    j.reason = "user";
    j.submit_time_ns = 1000000000LL * 1700000000;
    json_t *o = loom_job_to_json(&j, false);
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "id")), 42);
    assert_string_equal(json_string_value(json_object_get(o, "state")), "CANCELLED");
    assert_string_equal(json_string_value(json_object_get(o, "submit_time")),
                        "2023-11-14T22:13:20.000000Z");
    assert_true(json_is_null(json_object_get(o, "start_time")));
    assert_true(json_is_null(json_object_get(o, "submit_id")));
    assert_true(json_is_null(json_object_get(o, "estimate")));
    assert_null(json_object_get(o, "script"));
    json_t *r = json_object_get(o, "resources");
    assert_int_equal(json_integer_value(json_object_get(r, "gpu_share")), 250);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "labels"), "a")), "b");
    json_decref(o);
    o = loom_job_to_json(&j, true);
    assert_string_equal(json_string_value(json_object_get(o, "script")), "echo");
    json_decref(o);
    /* the estimate record as an object */
    j.estimate_json = "{\"request_bytes\":1048576,\"applied\":true}";
    o = loom_job_to_json(&j, false);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(o, "estimate"), "request_bytes")),
        1048576);
    json_decref(o);
}

/* "model" is taken as an object for loomd to interpret; nothing else. */
static void model_param(void **state)
{
    (void)state;
    loom_job_spec_t s;
    char *labels;
    loom_err_t err;
    json_t *p =
        json_loads("{\"name\":\"n\",\"script\":\"\",\"model\":{\"path\":\"/m.onnx\"}}", 0, NULL);
    assert_int_equal(loom_job_spec_from_json(p, &s, &labels, &err), LOOM_OK);
    assert_ptr_equal(s.model, json_object_get(p, "model"));
    assert_null(s.estimate_json);
    free(labels);
    json_object_set_new(p, "model", json_null());
    assert_int_equal(loom_job_spec_from_json(p, &s, &labels, &err), LOOM_OK);
    assert_null(s.model);
    free(labels);
    json_object_set_new(p, "model", json_string("/m.onnx"));
    assert_int_equal(loom_job_spec_from_json(p, &s, &labels, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "model: expected an object"));
    json_decref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(full_spec),
        cmocka_unit_test(errors_name_the_parameter),
        cmocka_unit_test(job_object),
        cmocka_unit_test(model_param),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
