/* Catalog: every kind of validation problem (exact file:line:column, JSON
 * pointer and message), all problems in one pass, defaults merging, and
 * sampling (determinism for a seed, chi-square of choices against weights,
 * ranges, log-uniform draws, ${param} substitution). */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "test_util.h"

#include "loom/catalog.h"

/* Tests run from the source tree; templates are found from here. */
#define BASE "workloads/catalogs"

static void expect(const char *json, const char *const *want, size_t n)
{
    loom_catalog_t *c = (loom_catalog_t *)0x1;
    loom_catalog_issues_t is = LOOM_CATALOG_ISSUES_INIT;
    loom_err_t err;
    int rc = loom_catalog_load_string(json, strlen(json), "c.json", BASE, &c, &is, &err);
    assert_int_equal(rc, LOOM_EINVAL);
    assert_null(c);
    bool same = is.count == n;
    for (size_t i = 0; same && i < n; i++)
        same = strcmp(is.items[i].text, want[i]) == 0;
    if (!same) {
        for (size_t i = 0; i < is.count; i++)
            printf("got:  %s\n", is.items[i].text);
        for (size_t i = 0; i < n; i++)
            printf("want: %s\n", want[i]);
        fail_msg("issues differ for %s", json);
    }
    /* err summarises: the first issue, plus how many more. */
    assert_non_null(strstr(err.msg, want[0]));
    loom_catalog_issues_free(&is);
}
#define EXPECT(json, ...)                                                                          \
    do {                                                                                           \
        const char *const w_[] = {__VA_ARGS__};                                                    \
        expect(json, w_, sizeof w_ / sizeof w_[0]);                                                \
    } while (0)

/* ------------------------------------------------------------- syntax */

static void test_err_syntax(void **s)
{
    (void)s;
    EXPECT("{\"jobs\": [1,]}", "c.json:1:13: /jobs/1: found ']', expected a JSON value (object, "
                               "array, string, number, true, false or null)");
    EXPECT("{\n  \"jobs\": [\n    {\"name\": \"x\" \"executable\": \"y\"}\n  ]\n}",
           "c.json:3:18: /jobs/0: found '\"', expected ',' or '}' after a member");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\"}]} x",
           "c.json:1:46: (root): found 'x' after the document, expected the end of the input");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\x01\"}]}",
           "c.json:1:41: /jobs/0/executable: found byte 0x01 inside a string, expected control "
           "characters escaped (\\n, \\t, \\u0001)");
    EXPECT("\n\n  {\"jobs\": [\"a\\u0000\"]}",
           "c.json:3:15: /jobs/0: found \\u0000 (NUL) in a string, expected text without NUL");
    EXPECT("{\"jobs\": \"abc", "c.json:1:10: /jobs: found the end of the input inside a string, "
                               "expected a closing '\"'");
    EXPECT("{\"jobs\": [1e999]}",
           "c.json:1:11: /jobs/0: found a number out of range, expected a finite number");
    EXPECT("{\"jobs\": \"\\ud800\"}", "c.json:1:11: /jobs: found a lone high surrogate in a \\u "
                                      "escape, expected a low surrogate \\uDC00-\\uDFFF to follow");
    EXPECT("{\"jobs\": \"\xff\"}",
           "c.json:1:11: /jobs: found invalid UTF-8 in a string, expected UTF-8 text");
    EXPECT("", "c.json:1:1: (root): found the end of the input, expected a value");
    char deep[200];
    memset(deep, '[', 100);
    deep[100] = 0;
    /* The 66th '[' is a value at depth 65: its pointer has 65 tokens. */
    char want[400] = "c.json:1:66: ";
    for (int i = 0; i < 65; i++)
        strcat(want, "/0");
    strcat(want, ": found nesting deeper than 64 levels, expected a flatter document");
    const char *w[] = {want};
    expect(deep, w, 1);
}

static void test_err_duplicate_key(void **s)
{
    (void)s;
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"name\": \"b\"}]}",
           "c.json:1:44: /jobs/0/name: found a duplicate key 'name', expected each key once per "
           "object");
}

/* ------------------------------------------------------------- structure */

static void test_err_root_and_jobs(void **s)
{
    (void)s;
    EXPECT("[1]", "c.json:1:1: (root): found an array, expected an object with \"jobs\"");
    EXPECT("{}", "c.json:1:1: (root): found no member 'jobs', expected \"jobs\": an array of jobs");
    EXPECT("{\"jobs\": []}",
           "c.json:1:10: /jobs: found an empty array, expected a non-empty array of jobs");
    EXPECT("{\"jobs\": {}}",
           "c.json:1:10: /jobs: found an object, expected a non-empty array of jobs");
    EXPECT("{\"jobs\": [7]}",
           "c.json:1:11: /jobs/0: found the integer 7, expected an object (a job)");
    EXPECT("{\"version\": 2, \"jobs\": [{\"name\": \"a\", \"executable\": \"x\"}]}",
           "c.json:1:13: /version: found the integer 2, expected 1");
}

/* "reconfig" (docs/scheduling.md): the field and what was expected, from
 * the catalog's table of Rubick's fields (no call into rubick). */
static void test_err_reconfig(void **s)
{
    (void)s;
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\",\n"
           "           \"reconfig\": {\"global_batch\": 64, \"zero\": [7]}}]}",
           "c.json:2:54: /jobs/0/reconfig/zero/0: found the integer 7, expected an integer "
           "from 0 to 3");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\",\n"
           "           \"reconfig\": {\"global_bach\": 64}}]}",
           "c.json:2:25: /jobs/0/reconfig/global_bach: found an unknown key 'global_bach', "
           "expected one of the reconfig keys: global_batch, gpus, accumulation, recompute, zero, "
           "offload, cpus, memory, plan, model, measured (did you mean 'global_batch'?)",
           "c.json:2:24: /jobs/0/reconfig: found no member 'global_batch', expected "
           "\"global_batch\" in reconfig");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\",\n"
           "           \"reconfig\": {\"global_batch\": 64, \"gpus\": {\"min\": 4, \"max\": 2},\n"
           "                        \"plan\": {\"offload\": 1}}}]}",
           "c.json:2:53: /jobs/0/reconfig/gpus: found min above max, expected min <= max",
           "c.json:3:45: /jobs/0/reconfig/plan/offload: found the integer 1, expected true or "
           "false");
}

/* "array": an sbatch array spec, named in the error. */
static void test_err_array(void **s)
{
    (void)s;
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"array\": \"x-9\"}]}",
           "c.json:1:53: /jobs/0/array: found the string \"x-9\", expected an sbatch array spec of "
           "at most 256 characters such as \"0-9\", \"1,3,5\" or \"0-99:2%8\"");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"array\": 7}]}",
           "c.json:1:53: /jobs/0/array: found the integer 7, expected an sbatch array spec of "
           "at most 256 characters such as \"0-9\", \"1,3,5\" or \"0-99:2%8\"");
}

/* "then" (a pipeline): its shape, and names of jobs that exist, are not the
 * job itself and have no stages of their own. */
static void test_err_then(void **s)
{
    (void)s;
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"then\": []}]}",
           "c.json:1:52: /jobs/0/then: found an empty array, expected an array of 1 to 16 job "
           "names (the later stages)");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"then\": [3]}]}",
           "c.json:1:53: /jobs/0/then/0: found the integer 3, expected the name of a job of the "
           "catalog");
    EXPECT(
        "{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"then\": [\"b\", \"a\", \"c\"]},\n"
        "          {\"name\": \"c\", \"executable\": \"x\", \"then\": [\"a\"]}]}",
        "c.json:1:53: /jobs/0/then/0: found the name \"b\", expected the name of a job of "
        "the catalog",
        "c.json:1:58: /jobs/0/then/1: found the job's own name \"a\", expected another job",
        "c.json:1:63: /jobs/0/then/2: found \"c\", a job with stages of its own, expected a "
        "job without \"then\" (pipelines do not nest)",
        "c.json:2:53: /jobs/1/then/0: found \"a\", a job with stages of its own, expected a "
        "job without \"then\" (pipelines do not nest)");
}

static void test_err_unknown_keys(void **s)
{
    (void)s;
    EXPECT("{\"jbos\": [{\"name\": \"a\", \"executable\": \"x\"}]}",
           "c.json:1:2: /jbos: found an unknown key 'jbos', expected one of the catalog keys: "
           "$schema, version, description, defaults, jobs (did you mean 'jobs'?)",
           "c.json:1:1: (root): found no member 'jobs', expected \"jobs\": an array of jobs");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\",\n"
           "           \"argumnets\": [], \"zzzzzz\": 1}]}",
           "c.json:2:12: /jobs/0/argumnets: found an unknown key 'argumnets', expected one of the "
           "job keys: name, description, executable, arguments, environment, resources, "
           "time_limit, weight, parameters, template, labels, model, image, reconfig, array, then, "
           "warm_start "
           "(did you mean 'arguments'?)",
           "c.json:2:29: /jobs/0/zzzzzz: found an unknown key 'zzzzzz', expected one of the job "
           "keys: name, description, executable, arguments, environment, resources, time_limit, "
           "weight, parameters, template, labels, model, image, reconfig, array, then, warm_start");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"resources\": {\"GPUS\": 1}}]}",
           "c.json:1:58: /jobs/0/resources/GPUS: found an unknown key 'GPUS', expected one of the "
           "resources keys: cpus, memory, gpus, gpu_share, gpu_memory, gpu_type (did you mean "
           "'gpus'?)");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"parameters\": {\"p\": "
           "{\"type\": \"choice\", \"value\": [1]}}}]}",
           "c.json:1:83: /jobs/0/parameters/p/value: found an unknown key 'value', expected one "
           "of the choice parameter keys: type, values, weights (did you mean 'values'?)",
           "c.json:1:64: /jobs/0/parameters/p: found no member 'values', expected \"values\": a "
           "non-empty array of choices");
}

/* ------------------------------------------------------------- jobs */

static void test_err_names(void **s)
{
    (void)s;
    EXPECT("{\"jobs\": [{\"executable\": \"x\"}]}",
           "c.json:1:11: /jobs/0: found no member 'name', expected \"name\": the job's name");
    EXPECT("{\"jobs\": [{\"name\": \"a b\", \"executable\": \"x\"}]}",
           "c.json:1:20: /jobs/0/name: found the string \"a b\", expected a name of 1-128 "
           "characters from [A-Za-z0-9._-] starting with a letter or digit");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\"},\n"
           "          {\"name\": \"a\", \"executable\": \"y\"}]}",
           "c.json:2:20: /jobs/1/name: found the name \"a\" again, expected unique job names "
           "(first used by /jobs/0)");
    EXPECT(
        "{\"defaults\": {\"name\": \"x\"}, \"jobs\": [{\"name\": \"a\", \"executable\": \"x\"}]}",
        "c.json:1:15: /defaults/name: found 'name' in defaults, expected a name only in each "
        "job");
}

static void test_err_executable(void **s)
{
    (void)s;
    EXPECT("{\"jobs\": [{\"name\": \"a\"}]}",
           "c.json:1:11: /jobs/0: found no member 'executable' (neither in the job nor in "
           "defaults), expected the program to run");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": 3}]}",
           "c.json:1:39: /jobs/0/executable: found the integer 3, expected a non-empty string");
    /* From defaults is fine. */
    loom_catalog_t *c;
    loom_err_t err;
    const char *ok = "{\"defaults\": {\"executable\": \"x\"}, \"jobs\": [{\"name\": \"a\"}]}";
    assert_int_equal(loom_catalog_load_string(ok, strlen(ok), "c.json", BASE, &c, NULL, &err),
                     LOOM_OK);
    assert_string_equal(loom_catalog_job(c, 0)->executable, "x");
    loom_catalog_free(c);
}

static void test_err_arguments_environment_labels(void **s)
{
    (void)s;
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"arguments\": \"-v\"}]}",
           "c.json:1:57: /jobs/0/arguments: found the string \"-v\", expected an array of strings");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"arguments\": [\"-v\", null]}]}",
           "c.json:1:64: /jobs/0/arguments/1: found null, expected a string (or a number)");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\",\n"
           "  \"environment\": {\"1A\": \"x\", \"B\": [1]}}]}",
           "c.json:2:19: /jobs/0/environment/1A: found the variable name '1A', expected a name "
           "matching [A-Za-z_][A-Za-z0-9_]*",
           "c.json:2:35: /jobs/0/environment/B: found an array, expected a string (or a number)");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"labels\": {\"a b\": \"x\"}}]}",
           "c.json:1:55: /jobs/0/labels/a b: found the label name 'a b', expected 1-253 "
           "characters from [A-Za-z0-9._/-]");
}

static void test_err_resources(void **s)
{
    (void)s;
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"resources\":\n"
           "  {\"cpus\": 0, \"memory\": \"12XB\", \"gpus\": 65, \"gpu_share\": 0,\n"
           "   \"gpu_memory\": -1, \"gpu_type\": \"a 100\"}}]}",
           "c.json:2:12: /jobs/0/resources/cpus: found the integer 0, expected an integer from 1 "
           "to 4096",
           "c.json:2:25: /jobs/0/resources/memory: found the string \"12XB\", expected a positive "
           "size such as \"16GiB\", \"512M\" or a number of bytes",
           "c.json:2:41: /jobs/0/resources/gpus: found the integer 65, expected an integer from "
           "0 to 64",
           "c.json:2:58: /jobs/0/resources/gpu_share: found the integer 0, expected an integer "
           "from 1 to 1000",
           "c.json:3:18: /jobs/0/resources/gpu_memory: found the integer -1, expected a positive "
           "size such as \"16GiB\", \"512M\" or a number of bytes",
           "c.json:3:34: /jobs/0/resources/gpu_type: found the string \"a 100\", expected a GPU "
           "type of 1-64 characters from [A-Za-z0-9._-]");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"resources\": 4}]}",
           "c.json:1:57: /jobs/0/resources: found the integer 4, expected an object with cpus, "
           "memory, gpus, ...");
}

static void test_err_gpu_share(void **s)
{
    (void)s;
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"resources\": {\"gpus\": 2, "
           "\"gpu_share\": 500}}]}",
           "c.json:1:82: /jobs/0/resources/gpu_share: found a GPU share of 500 milli-GPU with "
           "several GPUs, expected \"gpus\": 1 for a fractional share");
    /* The rule sees the merged job: the share can come from defaults. */
    EXPECT("{\"defaults\": {\"resources\": {\"gpu_share\": 250}},\n"
           " \"jobs\": [{\"name\": \"a\", \"executable\": \"x\"}]}",
           "c.json:1:42: /defaults/resources/gpu_share: found a GPU share of 250 milli-GPU with no "
           "GPUs, expected \"gpus\": 1 for a fractional share");
}

static void test_err_time_and_weight(void **s)
{
    (void)s;
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"time_limit\": \"soon\", "
           "\"weight\": 0}]}",
           "c.json:1:58: /jobs/0/time_limit: found the string \"soon\", expected a positive "
           "duration such as \"90m\", \"1h30m\", \"01:30:00\" or a number of seconds",
           "c.json:1:76: /jobs/0/weight: found the integer 0, expected a positive number");
}

static void test_err_files(void **s)
{
    (void)s;
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"template\": \"nope.mustache\", "
           "\"model\": \"m.onnx\"}]}",
           "c.json:1:56: /jobs/0/template: found \"nope.mustache\" "
           "(workloads/catalogs/nope.mustache), expected a readable template file (paths are "
           "relative to the catalog's directory)",
           "c.json:1:82: /jobs/0/model: found \"m.onnx\" (workloads/catalogs/m.onnx), expected a "
           "readable model file (paths are relative to the catalog's directory)");
}

/* A model object (what loomd estimates): its members, and parameter
 * references whose every draw must be a valid value. */
#define ONNX "../../tests/fuzz/corpus/onnx/cnn.onnx"
static void test_err_model(void **s)
{
    (void)s;
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"model\": 3}]}",
           "c.json:1:53: /jobs/0/model: found the integer 3, expected a model file path or an "
           "object {\"path\", \"batch\", ...}");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"model\": {\"bach\": 2}}]}",
           "c.json:1:54: /jobs/0/model/bach: found an unknown key 'bach', expected one of the "
           "model keys: path, batch, train, optimizer, precision, device (did you mean 'batch'?)",
           "c.json:1:53: /jobs/0/model: found no member 'path', expected \"path\": the model "
           "file (ONNX)",
           "c.json:1:53: /jobs/0/model: found no member 'batch', expected \"batch\": the batch "
           "size per GPU (an integer or \"${param}\")");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"model\": {\"path\": \"" ONNX
           "\",\n \"batch\": 0, \"train\": \"yes\", \"optimizer\": \"lamb\", \"precision\": "
           "\"fp8\", \"device\": \"H 200\"}}]}",
           "c.json:2:11: /jobs/0/model/batch: found the integer 0, expected a batch size (an "
           "integer from 1 to 16777216) or a parameter reference \"${name}\"",
           "c.json:2:23: /jobs/0/model/train: found the string \"yes\", expected true, false or "
           "a parameter reference \"${name}\"",
           "c.json:2:43: /jobs/0/model/optimizer: found the string \"lamb\", expected sgd, "
           "momentum or adam or a parameter reference \"${name}\"",
           "c.json:2:64: /jobs/0/model/precision: found the string \"fp8\", expected fp32, "
           "fp16, bf16 or mixed or a parameter reference \"${name}\"",
           "c.json:2:81: /jobs/0/model/device: found the string \"H 200\", expected a device "
           "name (1-63 of a-z 0-9 - _) or a device file path");
    /* references: to a parameter that can draw a bad value, to none */
    EXPECT("{\"defaults\": {\"model\": {\"path\": \"" ONNX "\", \"batch\": \"${bs}\",\n"
           "\"train\": \"${t}\", \"precision\": \"${p}\"}},\n"
           "\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"parameters\": {\n"
           "\"bs\": {\"type\": \"int\", \"min\": 0, \"max\": 8},\n"
           "\"t\": {\"type\": \"choice\", \"values\": [true, 1]}}}]}",
           "c.json:1:83: /defaults/model/batch: found a reference to parameter 'bs', expected an "
           "int parameter within 1..16777216 or a choice of such integers",
           "c.json:2:10: /defaults/model/train: found a reference to parameter 't', expected a "
           "choice of true/false",
           "c.json:2:31: /defaults/model/precision: found a reference to an unknown parameter "
           "'p', expected one of the job's parameters (a choice of fp32, fp16, bf16, mixed)");
}

static void test_model_spec(void **s)
{
    (void)s;
    const char *json =
        "{\"defaults\": {\"resources\": {\"gpus\": 1, \"gpu_share\": 500}},\n"
        " \"jobs\": [{\"name\": \"a\", \"executable\": \"x\",\n"
        "  \"model\": {\"path\": \"" ONNX "\", \"batch\": \"${bs}\", \"train\": true,\n"
        "            \"precision\": \"${prec}\", \"device\": \"cpu-local\"},\n"
        "  \"parameters\": {\"bs\": {\"type\": \"choice\", \"values\": [4, 8]},\n"
        "                 \"prec\": {\"type\": \"choice\", \"values\": [\"fp16\", \"bf16\"]}}},\n"
        "  {\"name\": \"b\", \"executable\": \"x\", \"model\": \"" ONNX "\"}]}";
    loom_catalog_t *c;
    loom_err_t err;
    if (loom_catalog_load_string(json, strlen(json), "m.json", BASE, &c, NULL, &err))
        fail_msg("%s", err.msg);
    loom_rng_t rng;
    loom_rng_init(&rng, 3, 0);
    int seen[2] = {0, 0};
    for (int i = 0; i < 40; i++) {
        json_t *ctx;
        assert_int_equal(loom_catalog_sample(c, 0, &rng, &ctx, &err), LOOM_OK);
        json_t *spec = json_object_get(ctx, "model_spec");
        json_t *params = json_object_get(ctx, "params");
        /* references replaced by the draws, with their JSON types */
        assert_true(json_is_integer(json_object_get(spec, "batch")));
        assert_true(json_equal(json_object_get(spec, "batch"), json_object_get(params, "bs")));
        assert_string_equal(json_string_value(json_object_get(spec, "precision")),
                            json_string_value(json_object_get(params, "prec")));
        assert_true(json_is_true(json_object_get(spec, "train")));
        assert_string_equal(json_string_value(json_object_get(spec, "device")), "cpu-local");
        assert_string_equal(json_string_value(json_object_get(spec, "path")), BASE "/" ONNX);
        assert_string_equal(json_string_value(json_object_get(ctx, "model")), BASE "/" ONNX);
        seen[json_integer_value(json_object_get(spec, "batch")) == 8]++;
        json_decref(ctx);
    }
    assert_true(seen[0] > 0 && seen[1] > 0);
    /* a model given as a path: no model_spec, nothing to estimate */
    json_t *ctx;
    assert_int_equal(loom_catalog_sample(c, 1, &rng, &ctx, &err), LOOM_OK);
    assert_null(json_object_get(ctx, "model_spec"));
    assert_string_equal(json_string_value(json_object_get(ctx, "model")), BASE "/" ONNX);
    json_decref(ctx);
    loom_catalog_free(c);
}

static void test_err_parameters(void **s)
{
    (void)s;
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"parameters\": {\n"
           "\"lr\": {\"type\": \"real\", \"min\": 0, \"max\": 1, \"log\": true},\n"
           "\"b\": {\"type\": \"int\", \"min\": 5, \"max\": 1},\n"
           "\"c\": {\"type\": \"choice\", \"values\": []},\n"
           "\"d\": {\"values\": [1]},\n"
           "\"e\": {\"type\": \"enum\"},\n"
           "\"f\": {\"type\": \"choice\", \"values\": [1, 2], \"weights\": [0, 0]},\n"
           "\"g\": {\"type\": \"choice\", \"values\": [1, 2], \"weights\": [1]},\n"
           "\"h\": {\"type\": \"choice\", \"values\": [[1]], \"weights\": [-1]},\n"
           "\"9x\": {\"type\": \"int\", \"min\": 1.5, \"max\": 2, \"log\": 1},\n"
           "\"i\": {\"type\": \"int\", \"max\": 2},\n"
           "\"j\": 5}}]}",
           "c.json:2:31: /jobs/0/parameters/lr/min: found the integer 0 with \"log\": true, "
           "expected min > 0",
           "c.json:3:39: /jobs/0/parameters/b/max: found a max (the integer 1) below the min, "
           "expected max >= min",
           "c.json:4:35: /jobs/0/parameters/c/values: found an empty array, expected a non-empty "
           "array of choices",
           "c.json:5:6: /jobs/0/parameters/d: found no member 'type', expected \"type\": "
           "\"choice\", \"int\" or \"real\"",
           "c.json:6:15: /jobs/0/parameters/e/type: found the string \"enum\", expected "
           "\"choice\", \"int\" or \"real\"",
           "c.json:7:54: /jobs/0/parameters/f/weights: found weights that sum to 0, expected a "
           "positive sum",
           "c.json:8:54: /jobs/0/parameters/g/weights: found 1 weights, expected 2 (one per value)",
           "c.json:9:36: /jobs/0/parameters/h/values/0: found an array, expected a string, number "
           "or boolean",
           "c.json:9:54: /jobs/0/parameters/h/weights/0: found the integer -1, expected a "
           "non-negative number",
           "c.json:10:1: /jobs/0/parameters/9x: found the parameter name '9x', expected a name "
           "matching [A-Za-z_][A-Za-z0-9_]*",
           "c.json:10:30: /jobs/0/parameters/9x/min: found the number 1.5, expected an integer "
           "from -9007199254740992 to 9007199254740992",
           "c.json:10:52: /jobs/0/parameters/9x/log: found the integer 1, expected true or false",
           "c.json:11:6: /jobs/0/parameters/i: found no member 'min', expected \"min\": an integer",
           "c.json:12:6: /jobs/0/parameters/j: found the integer 5, expected an object such as "
           "{\"type\": \"choice\", \"values\": [...]}");
}

static void test_err_references(void **s)
{
    (void)s;
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\",\n"
           " \"arguments\": [\"--bs=${batchsize}\", \"${lr\", \"${}\"],\n"
           " \"environment\": {\"N\": \"${nope}\"},\n"
           " \"parameters\": {\"batch_size\": {\"type\": \"int\", \"min\": 1, \"max\": 8}}}]}",
           "c.json:2:16: /jobs/0/arguments/0: found a reference to an unknown parameter "
           "'batchsize', expected one of the job's parameters (did you mean 'batch_size'?)",
           "c.json:2:37: /jobs/0/arguments/1: found an unterminated reference \"${lr\", expected "
           "${name} (or $$ for a literal $)",
           "c.json:2:45: /jobs/0/arguments/2: found a reference \"${}\", expected ${name} with a "
           "parameter name",
           "c.json:3:23: /jobs/0/environment/N: found a reference to an unknown parameter 'nope', "
           "expected one of the job's parameters");
    /* A reference in defaults is checked against each job's parameters,
     * and reported once. */
    EXPECT("{\"defaults\": {\"arguments\": [\"${p}\"]},\n"
           " \"jobs\": [{\"name\": \"a\", \"executable\": \"x\"}, {\"name\": \"b\", "
           "\"executable\": \"x\"}]}",
           "c.json:1:29: /defaults/arguments/0: found a reference to an unknown parameter 'p', "
           "expected one of the job's parameters (the job has none)");
}

/* All problems of a file in one pass, and the issue fields. */
static void test_err_all_in_one_pass(void **s)
{
    (void)s;
    const char *j = "{\"jobs\": [{\"name\": \"a\", \"executable\": 1, \"weight\": -1,\n"
                    "  \"resources\": {\"cpus\": 0}}, {\"nmae\": \"b\"}]}";
    loom_catalog_t *c;
    loom_catalog_issues_t is = LOOM_CATALOG_ISSUES_INIT;
    loom_err_t err;
    assert_int_equal(loom_catalog_load_string(j, strlen(j), "c.json", BASE, &c, &is, &err),
                     LOOM_EINVAL);
    assert_null(c);
    assert_int_equal(is.count, 6);
    assert_string_equal(is.items[0].file, "c.json");
    assert_int_equal(is.items[0].line, 1);
    assert_int_equal(is.items[0].column, 39);
    assert_string_equal(is.items[0].pointer, "/jobs/0/executable");
    assert_string_equal(is.items[0].message, "found the integer 1, expected a non-empty string");
    assert_non_null(strstr(err.msg, "(and 5 more problems)"));
    loom_catalog_issues_free(&is);
    /* NULL issues: still refused, err still says why. */
    assert_int_equal(loom_catalog_load_string(j, strlen(j), "c.json", BASE, &c, NULL, &err),
                     LOOM_EINVAL);
    assert_null(c);
    /* A missing file is an I/O error, not a list of issues. */
    assert_int_equal(loom_catalog_load_file("/nonexistent/c.json", &c, &is, &err), LOOM_ENOTFOUND);
    assert_int_equal(is.count, 0);
}

/* ------------------------------------------------------------- model */

static const char *good =
    "{\"defaults\": {\"resources\": {\"cpus\": 2, \"memory\": \"3GiB\"}, \"environment\": "
    "{\"A\": \"1\", \"B\": \"2\"}, \"time_limit\": \"1d2h\", \"labels\": {\"suite\": \"t\"}},\n"
    " \"jobs\": [\n"
    "  {\"name\": \"Train.Big_1\", \"executable\": \"python3\", \"weight\": 1,\n"
    "   \"arguments\": [\"--lr\", \"${lr}\", \"--bs=${bs}\", \"$$HOME\", \"${catalog_dir}\", 7],\n"
    "   \"environment\": {\"B\": \"${mode}\", \"C\": 3},\n"
    "   \"resources\": {\"gpus\": 1, \"gpu_share\": 500, \"gpu_memory\": \"10GiB\", \"gpu_type\": "
    "\"a100\", \"memory\": 1000000},\n"
    "   \"parameters\": {\"lr\": {\"type\": \"real\", \"min\": 0.0001, \"max\": 0.1, \"log\": "
    "true},\n"
    "                  \"bs\": {\"type\": \"int\", \"min\": 1, \"max\": 6},\n"
    "                  \"mode\": {\"type\": \"choice\", \"values\": [\"a\", \"b\", \"c\"], "
    "\"weights\": [1, 2, 7]},\n"
    "                  \"n\": {\"type\": \"int\", \"min\": 1, \"max\": 999, \"log\": true}},\n"
    "   \"template\": \"../templates/slurm.sh.mustache\"},\n"
    "  {\"name\": \"b\", \"executable\": \"sleep\", \"weight\": 2, \"time_limit\": 90},\n"
    "  {\"name\": \"c\", \"executable\": \"sleep\", \"weight\": 3},\n"
    "  {\"name\": \"d\", \"executable\": \"sleep\", \"weight\": 4}]}";

static loom_catalog_t *load_good(void)
{
    loom_catalog_t *c;
    loom_catalog_issues_t is = LOOM_CATALOG_ISSUES_INIT;
    loom_err_t err;
    int rc = loom_catalog_load_string(good, strlen(good), "good.json", BASE, &c, &is, &err);
    if (rc)
        fail_msg("%s", err.msg);
    return c;
}

static void test_model_merge(void **s)
{
    (void)s;
    /* Template existence is checked against the base dir: use the real one. */
    loom_catalog_t *c;
    loom_err_t err;
    assert_int_equal(
        loom_catalog_load_string(good, strlen(good), "good.json", BASE, &c, NULL, &err), LOOM_OK);
    assert_int_equal(loom_catalog_job_count(c), 4);
    const loom_catalog_job_t *j = loom_catalog_job(c, 0);
    assert_string_equal(j->name, "Train.Big_1");
    assert_int_equal(j->resources.cpus, 2);               /* from defaults */
    assert_int_equal(j->resources.memory_bytes, 1000000); /* the job's own */
    assert_int_equal(j->resources.gpus, 1);
    assert_int_equal(j->resources.gpu_share, 500);
    assert_int_equal(j->resources.gpu_memory_bytes, 10ull << 30);
    assert_string_equal(j->resources.gpu_type, "a100");
    assert_int_equal(j->time_limit_ns, (int64_t)26 * 3600 * LOOM_NS_PER_S);
    assert_string_equal(j->template_path, BASE "/../templates/slurm.sh.mustache");
    assert_int_equal(j->param_count, 4);
    assert_string_equal(json_string_value(json_object_get(j->environment, "A")), "1");
    assert_string_equal(json_string_value(json_object_get(j->environment, "B")), "${mode}");
    assert_string_equal(json_string_value(json_object_get(j->environment, "C")), "3");
    assert_string_equal(json_string_value(json_array_get(j->arguments, 5)), "7");
    const loom_catalog_job_t *b = loom_catalog_job(c, 1);
    assert_int_equal(b->time_limit_ns, 90 * LOOM_NS_PER_S);
    assert_int_equal(b->resources.memory_bytes, 3ull << 30);
    assert_int_equal(b->resources.gpus, 0);
    assert_null(b->template_path);
    assert_int_equal(loom_catalog_find(c, "c"), 2);
    assert_int_equal(loom_catalog_find(c, "zz"), -1);
    assert_null(loom_catalog_job(c, 4));
    assert_true(fabs(loom_catalog_probability(c, 3) - 0.4) < 1e-12);
    loom_catalog_free(c);
}

static void test_sample_context(void **s)
{
    (void)s;
    loom_catalog_t *c;
    loom_err_t err;
    assert_int_equal(
        loom_catalog_load_string(good, strlen(good), "good.json", BASE, &c, NULL, &err), LOOM_OK);
    loom_rng_t rng;
    loom_rng_init(&rng, 7, 0);
    json_t *ctx;
    assert_int_equal(loom_catalog_sample(c, 0, &rng, &ctx, &err), LOOM_OK);
    json_t *params = json_object_get(ctx, "params");
    double lr = json_real_value(json_object_get(params, "lr"));
    json_int_t bs = json_integer_value(json_object_get(params, "bs"));
    const char *mode = json_string_value(json_object_get(params, "mode"));
    assert_true(lr >= 0.0001 && lr <= 0.1);
    assert_true(bs >= 1 && bs <= 6);
    json_t *args = json_object_get(ctx, "arguments");
    char want[64];
    snprintf(want, sizeof want, "--bs=%d", (int)bs);
    assert_string_equal(json_string_value(json_array_get(args, 2)), want);
    assert_string_equal(json_string_value(json_array_get(args, 3)), "$HOME");
    assert_string_equal(json_string_value(json_array_get(args, 4)), BASE);
    assert_string_equal(
        strtod(json_string_value(json_array_get(args, 1)), NULL) == lr ? "exact" : "", "exact");
    json_t *cmd = json_object_get(ctx, "command");
    assert_string_equal(json_string_value(json_array_get(cmd, 0)), "python3");
    assert_int_equal(json_array_size(cmd), 7);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(ctx, "environment"), "B")), mode);
    json_t *env = json_object_get(ctx, "env");
    assert_int_equal(json_array_size(env), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(env, 0), "name")), "A");
    assert_string_equal(json_string_value(json_object_get(json_array_get(env, 2), "name")), "C");
    json_t *r = json_object_get(ctx, "resources");
    assert_int_equal(json_integer_value(json_object_get(r, "memory_mib")), 1); /* rounded up */
    assert_int_equal(json_integer_value(json_object_get(r, "gpu_memory_mib")), 10240);
    assert_true(json_is_true(json_object_get(r, "has_gpus")));
    assert_true(fabs(json_real_value(json_object_get(r, "gpu_fraction")) - 0.5) < 1e-12);
    json_t *tl = json_object_get(ctx, "time_limit");
    assert_string_equal(json_string_value(json_object_get(tl, "slurm")), "1-02:00:00");
    assert_int_equal(json_integer_value(json_object_get(tl, "minutes")), 26 * 60);
    assert_string_equal(json_string_value(json_object_get(ctx, "dns_name")), "train-big-1");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(ctx, "label_list"), 0), "value")),
                        "t");
    json_decref(ctx);
    assert_int_equal(loom_catalog_sample(c, 9, &rng, &ctx, &err), LOOM_EINVAL);
    loom_catalog_free(c);
}

static char *sample_run(uint64_t seed, int n)
{
    loom_catalog_t *c = load_good();
    loom_rng_t rng;
    loom_rng_init(&rng, seed, 0);
    loom_buf_t b = LOOM_BUF_INIT;
    loom_err_t err;
    for (int i = 0; i < n; i++) {
        size_t k = loom_catalog_pick(c, &rng);
        json_t *ctx;
        assert_int_equal(loom_catalog_sample(c, k, &rng, &ctx, &err), LOOM_OK);
        loom_json_dump(&b, ctx);
        loom_buf_append_char(&b, '\n');
        json_decref(ctx);
    }
    loom_catalog_free(c);
    return loom_buf_detach(&b);
}

static void test_sample_deterministic(void **s)
{
    (void)s;
    char *a = sample_run(1234, 300), *b = sample_run(1234, 300), *d = sample_run(1235, 300);
    assert_string_equal(a, b);
    assert_true(strcmp(a, d) != 0);
    free(a);
    free(b);
    free(d);
}

/* Pearson's chi-square statistic of counts against probabilities. */
static double chi2(const long *counts, const double *p, int k, long n)
{
    double x = 0;
    for (int i = 0; i < k; i++) {
        double e = p[i] * (double)n;
        x += (counts[i] - e) * (counts[i] - e) / e;
    }
    return x;
}

static void test_sample_chi_square(void **s)
{
    (void)s;
    loom_catalog_t *c = load_good();
    loom_rng_t rng;
    loom_rng_init(&rng, 99, 3);
    const long n = 40000;
    long jobs[4] = {0}, modes[3] = {0}, bs[6] = {0}, decades[3] = {0}, ndec[3] = {0};
    loom_err_t err;
    for (long i = 0; i < n; i++) {
        size_t k = loom_catalog_pick(c, &rng);
        jobs[k]++;
        json_t *ctx;
        assert_int_equal(loom_catalog_sample(c, 0, &rng, &ctx, &err), LOOM_OK);
        json_t *p = json_object_get(ctx, "params");
        modes[json_string_value(json_object_get(p, "mode"))[0] - 'a']++;
        json_int_t b = json_integer_value(json_object_get(p, "bs"));
        assert_true(b >= 1 && b <= 6);
        bs[b - 1]++;
        double lr = json_real_value(json_object_get(p, "lr"));
        decades[lr < 1e-3 ? 0 : lr < 1e-2 ? 1 : 2]++;
        json_int_t nn = json_integer_value(json_object_get(p, "n"));
        assert_true(nn >= 1 && nn <= 999);
        ndec[nn < 10 ? 0 : nn < 100 ? 1 : 2]++;
        json_decref(ctx);
    }
    /* Critical values at p = 0.001: df 1: 10.83, 2: 13.82, 3: 16.27, 5: 20.52. */
    const double pj[4] = {0.1, 0.2, 0.3, 0.4}, pm[3] = {0.1, 0.2, 0.7},
                 pb[6] = {1 / 6., 1 / 6., 1 / 6., 1 / 6., 1 / 6., 1 / 6.},
                 pd[3] = {1 / 3., 1 / 3., 1 / 3.};
    /* Log-uniform integers on [1, 1000): decades 1-9, 10-99, 100-999. */
    const double pn[3] = {log(10) / log(1000), log(10) / log(1000), log(10) / log(1000)};
    double xj = chi2(jobs, pj, 4, n), xm = chi2(modes, pm, 3, n), xb = chi2(bs, pb, 6, n),
           xd = chi2(decades, pd, 3, n), xn = chi2(ndec, pn, 3, n);
    printf("chi2 jobs %.2f (df 3), mode %.2f (df 2), bs %.2f (df 5), lr decades %.2f (df 2), "
           "n decades %.2f (df 2)\n",
           xj, xm, xb, xd, xn);
    assert_true(xj < 16.27);
    assert_true(xm < 13.82);
    assert_true(xb < 20.52);
    assert_true(xd < 13.82);
    assert_true(xn < 13.82);
    /* And the test can fail: the same counts against wrong weights. */
    const double wrong[4] = {0.25, 0.25, 0.25, 0.25};
    assert_true(chi2(jobs, wrong, 4, n) > 16.27);
    loom_catalog_free(c);
}

static void test_demo_catalog(void **s)
{
    (void)s;
    loom_catalog_t *c;
    loom_catalog_issues_t is = LOOM_CATALOG_ISSUES_INIT;
    loom_err_t err;
    int rc = loom_catalog_load_file("workloads/catalogs/demo.json", &c, &is, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_true(loom_catalog_job_count(c) >= 3);
    for (size_t i = 0; i < loom_catalog_job_count(c); i++) {
        const loom_catalog_job_t *j = loom_catalog_job(c, i);
        assert_non_null(j->template_path);
        assert_int_equal(j->template_path[0], '/'); /* absolute: from the file's directory */
        assert_int_equal(access(j->template_path, R_OK), 0);
    }
    loom_catalog_free(c);
}

/* A catalog of 3000 jobs: the binary-search pick agrees draw for draw with
 * core's linear loom_rng_weighted on the same RNG state. */
static void test_pick_many_jobs(void **s)
{
    (void)s;
    loom_buf_t j = LOOM_BUF_INIT;
    const size_t n = 3000;
    double *w = calloc(n, sizeof *w);
    loom_buf_append_str(&j, "{\"jobs\": [");
    for (size_t i = 0; i < n; i++) {
        w[i] = (double)(i % 7 + 1) * (i % 3 ? 1.0 : 0.25);
        loom_buf_appendf(&j, "%s{\"name\": \"j%zu\", \"executable\": \"x\", \"weight\": %.17g}",
                         i ? "," : "", i, w[i]);
    }
    loom_buf_append_str(&j, "]}");
    loom_catalog_t *c;
    loom_err_t err;
    assert_int_equal(loom_catalog_load_string(j.data, j.len, "big.json", BASE, &c, NULL, &err),
                     LOOM_OK);
    loom_rng_t a, b;
    loom_rng_init(&a, 5, 0);
    loom_rng_init(&b, 5, 0);
    bool first = false, last = false;
    for (int k = 0; k < 200000; k++) {
        size_t x = loom_catalog_pick(c, &a), y = loom_rng_weighted(&b, w, n);
        assert_int_equal(x, y);
        first |= x == 0;
        last |= x == n - 1;
    }
    assert_true(first && last);
    loom_catalog_free(c);
    loom_buf_free(&j);
    free(w);
}

/* The JSON Schema and the loader agree on which keys exist: the loader's
 * "unknown key" message lists the keys it accepts; they must be exactly the
 * schema's properties, at every level. */
static void keys_agree(const char *json, const char *marker, const json_t *props)
{
    loom_catalog_t *c;
    loom_catalog_issues_t is = LOOM_CATALOG_ISSUES_INIT;
    loom_err_t err;
    assert_int_equal(loom_catalog_load_string(json, strlen(json), "c.json", BASE, &c, &is, &err),
                     LOOM_EINVAL);
    const char *list = NULL;
    for (size_t i = 0; i < is.count && !list; i++)
        if ((list = strstr(is.items[i].message, marker)))
            list += strlen(marker);
    if (!list)
        fail_msg("no '%s' in the issues of %s", marker, json);
    size_t n = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok(buf, ", "); tok; tok = strtok(NULL, ", ")) {
        if (!json_object_get(props, tok))
            fail_msg("loader key '%s' is not in the schema", tok);
        n++;
    }
    assert_int_equal(n, json_object_size(props));
    loom_catalog_issues_free(&is);
}

static void test_schema_in_sync(void **s)
{
    (void)s;
    json_t *schema;
    loom_err_t err;
    if (loom_json_load_file("workloads/catalog.schema.json", &schema, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(json_string_value(json_object_get(schema, "$schema")),
                        "https://json-schema.org/draft/2020-12/schema");
    json_t *defs = json_object_get(schema, "$defs");
    keys_agree("{\"zzz\": 1, \"jobs\": [{\"name\": \"a\", \"executable\": \"x\"}]}",
               "expected one of the catalog keys: ", json_object_get(schema, "properties"));
    keys_agree("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"zzz\": 1}]}",
               "expected one of the job keys: ",
               json_object_get(json_object_get(defs, "jobFields"), "properties"));
    keys_agree(
        "{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"resources\": {\"zzz\": 1}}]}",
        "expected one of the resources keys: ",
        json_object_get(json_object_get(defs, "resources"), "properties"));
    keys_agree("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"model\": {\"zzz\": 1}}]}",
               "expected one of the model keys: ",
               json_object_get(json_object_get(defs, "modelRef"), "properties"));
    json_t *variants = json_object_get(json_object_get(defs, "parameter"), "oneOf");
    const char *types[] = {"choice", "int", "real"};
    for (size_t i = 0; i < 3; i++) {
        char json[256], marker[64];
        snprintf(json, sizeof json,
                 "{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"parameters\": "
                 "{\"p\": {\"type\": \"%s\", \"zzz\": 1}}}]}",
                 types[i]);
        snprintf(marker, sizeof marker, "expected one of the %s parameter keys: ", types[i]);
        keys_agree(json, marker, json_object_get(json_array_get(variants, i), "properties"));
    }
    json_decref(schema);
}

/* "warm_start": true/false or {"task": NAME}, and only next to a model
 * (docs/zoo.md); every message names the field. */
static void test_warm_start(void **s)
{
    (void)s;
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"warm_start\": 1}]}",
           "c.json:1:58: /jobs/0/warm_start: found the integer 1, expected true, false or an "
           "object {\"task\": NAME}");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"model\": \"" ONNX "\",\n"
           "           \"warm_start\": {\"tsak\": \"d\"}}]}",
           "c.json:2:27: /jobs/0/warm_start/tsak: found an unknown key 'tsak', expected one of the "
           "warm_start keys: task (did you mean 'task'?)");
    EXPECT("{\"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"model\": \"" ONNX "\",\n"
           "           \"warm_start\": {\"task\": \"a b\"}}]}",
           "c.json:2:35: /jobs/0/warm_start/task: found the string \"a b\", expected a task name "
           "of 1-128 characters from [A-Za-z0-9._-]");
    EXPECT("{\"defaults\": {\"warm_start\": true},\n"
           " \"jobs\": [{\"name\": \"a\", \"executable\": \"x\"}]}",
           "c.json:1:29: /defaults/warm_start: found a warm start without a model, expected "
           "\"model\" next to it");
    const char *json =
        "{\"defaults\": {\"warm_start\": {\"task\": \"digits\"}},\n"
        " \"jobs\": [{\"name\": \"a\", \"executable\": \"x\", \"model\": \"" ONNX "\"},\n"
        "  {\"name\": \"b\", \"executable\": \"x\", \"warm_start\": false}]}";
    loom_catalog_t *c;
    loom_err_t err;
    if (loom_catalog_load_string(json, strlen(json), "w.json", BASE, &c, NULL, &err))
        fail_msg("%s", err.msg);
    const json_t *ws = json_object_get(loom_catalog_job(c, 0)->merged, "warm_start");
    assert_string_equal(json_string_value(json_object_get(ws, "task")), "digits");
    assert_true(json_is_false(json_object_get(loom_catalog_job(c, 1)->merged, "warm_start")));
    loom_catalog_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_err_syntax),
        cmocka_unit_test(test_err_duplicate_key),
        cmocka_unit_test(test_err_root_and_jobs),
        cmocka_unit_test(test_err_unknown_keys),
        cmocka_unit_test(test_err_reconfig),
        cmocka_unit_test(test_err_array),
        cmocka_unit_test(test_err_then),
        cmocka_unit_test(test_warm_start),
        cmocka_unit_test(test_err_names),
        cmocka_unit_test(test_err_executable),
        cmocka_unit_test(test_err_arguments_environment_labels),
        cmocka_unit_test(test_err_resources),
        cmocka_unit_test(test_err_gpu_share),
        cmocka_unit_test(test_err_time_and_weight),
        cmocka_unit_test(test_err_files),
        cmocka_unit_test(test_err_parameters),
        cmocka_unit_test(test_err_model),
        cmocka_unit_test(test_model_spec),
        cmocka_unit_test(test_err_references),
        cmocka_unit_test(test_err_all_in_one_pass),
        cmocka_unit_test(test_model_merge),
        cmocka_unit_test(test_sample_context),
        cmocka_unit_test(test_sample_deterministic),
        cmocka_unit_test(test_sample_chi_square),
        cmocka_unit_test(test_demo_catalog),
        cmocka_unit_test(test_schema_in_sync),
        cmocka_unit_test(test_pick_many_jobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
