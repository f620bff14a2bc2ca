/* loomd's methods through the real JSON-RPC dispatcher and a real store:
 * results, parameter errors naming the parameter, application errors, and
 * that the calls of one batch share a transaction. methods.c belongs to the
 * loomd executable; this test links loomd's wiring (loomd_lib). */
#include <pthread.h>
#include <semaphore.h>
#include <sqlite3.h>
#include <stdio.h>
#include <unistd.h>

#include "daemon/methods.h"
#include "daemon/runner.h"
#include "daemon/usage.h"
#include "daemon/zoo_methods.h"
#include "test_util.h"

#include "est_pb.h"

typedef struct {
    char dir[64];
    char db[128];
    loom_store_t *store;
    loom_rpc_dispatcher_t *disp;
    loomd_info_t info;
    loomd_methods_t m;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/loom-test-methods-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->db, sizeof f->db, "%s/loom.db", f->dir);
    loom_err_t err;
    if (loom_store_open(f->db, NULL, &f->store, &err))
        fail_msg("%s", err.msg);
    f->info = (loomd_info_t){.state_dir = f->dir,
                             .durability = "normal",
                             .started_real_ns = loom_time_real_ns(),
                             .started_mono_ns = loom_time_mono_ns()};
    f->m = (loomd_methods_t){.store = f->store, .info = &f->info};
    assert_int_equal(loom_rpc_dispatcher_new(NULL, &f->disp, &err), LOOM_OK);
    assert_int_equal(loomd_methods_add(f->disp, &f->m, &err), LOOM_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    loom_store_close(f->store);
    loom_rpc_dispatcher_free(f->disp);
    assert_int_equal(loom_test_rmtree(f->dir), 0);
    free(f);
    return 0;
}

/* Sends body, returns the parsed response (NULL if none). */
static json_t *rpc(fixture_t *f, const char *body)
{
    loom_buf_t out = LOOM_BUF_INIT;
    assert_int_equal(loom_rpc_handle(f->disp, body, strlen(body), NULL, &out), LOOM_OK);
    if (!out.data || out.len == 0) {
        loom_buf_free(&out);
        return NULL;
    }
    json_error_t je;
    json_t *v = json_loads(out.data, 0, &je);
    if (!v)
        fail_msg("response is not JSON: %s", out.data);
    loom_buf_free(&out);
    return v;
}

static json_t *result_of(json_t *resp)
{
    json_t *r = json_object_get(resp, "result");
    if (!r) {
        char *s = json_dumps(resp, 0);
        fail_msg("expected a result, got %s", s);
    }
    return r;
}

static void expect_error(fixture_t *f, const char *body, int code, const char *needle)
{
    json_t *resp = rpc(f, body);
    json_t *e = json_object_get(resp, "error");
    char *s = json_dumps(resp, 0);
    if (!e || json_integer_value(json_object_get(e, "code")) != code ||
        !strstr(json_string_value(json_object_get(e, "message")), needle))
        fail_msg("for %s expected error %d with '%s', got %s", body, code, needle, s);
    free(s);
    json_decref(resp);
}

static loom_rpc_status_t m_late(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)params;
    (void)ctx;
    loom_rpc_call_complete(call, json_object());
    return LOOM_RPC_DONE;
}

static bool has_string(const json_t *arr, const char *s)
{
    for (size_t i = 0; i < json_array_size(arr); i++)
        if (strcmp(json_string_value(json_array_get(arr, i)), s) == 0)
            return true;
    return false;
}

/* server.info's "methods" is read from the dispatcher: every method added,
 * by any part and after loomd_methods_add too, is listed once, in order. */
static void server_info_lists_every_method(void **state)
{
    fixture_t *f = *state;
    loom_err_t err;
    loomd_zoo_t *zoo = NULL;
    if (loomd_usage_add_methods(f->disp, f->store, &err) ||
        loomd_zoo_open(f->dir, NULL, NULL, &zoo, &err) ||
        loomd_zoo_add_methods(f->disp, zoo, &err) ||
        loom_rpc_dispatcher_add(f->disp, "test.late", m_late, NULL, NULL, LOOM_RPC_NO_PARAMS, &err))
        fail_msg("%s", err.msg);
    json_t *resp = rpc(f, "{\"jsonrpc\":\"2.0\",\"method\":\"server.info\",\"id\":1}");
    json_t *methods = json_object_get(result_of(resp), "methods");
    size_t n = loom_rpc_dispatcher_method_count(f->disp);
    assert_int_equal(json_array_size(methods), n);
    assert_true(n >= 12 + 1 + 6 + 1);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(json_string_value(json_array_get(methods, i)),
                            loom_rpc_dispatcher_method_name(f->disp, i));
    assert_null(loom_rpc_dispatcher_method_name(f->disp, n));
    const char *expect[] = {"server.info", "job.submit", "job.update", "usage.report",
                            "zoo.add",     "zoo.warm",   "test.late"};
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
        if (!has_string(methods, expect[i]))
            fail_msg("server.info does not list %s", expect[i]);
    json_decref(resp);
    loomd_zoo_close(zoo);
}

/* usage.report's since: RFC 3339 through loom_time_parse_rfc3339, offsets
 * included, and a day its month lacks refused with the place. */
static void usage_report_since(void **state)
{
    fixture_t *f = *state;
    loom_err_t err;
    if (loomd_usage_add_methods(f->disp, f->store, &err))
        fail_msg("%s", err.msg);
    json_t *resp = rpc(f, "{\"jsonrpc\":\"2.0\",\"method\":\"usage.report\",\"id\":1,"
                          "\"params\":{\"since\":\"2026-12-03T14:00:00.5+01:00\"}}");
    assert_string_equal(json_string_value(json_object_get(result_of(resp), "since")),
                        "2026-12-03T13:00:00.500000Z");
    json_decref(resp);
    expect_error(f,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"usage.report\",\"id\":2,"
                 "\"params\":{\"since\":\"2026-02-30T00:00:00Z\"}}",
                 -32602,
                 "since (an RFC 3339 time such as 2026-12-03T13:00:00Z): '2026-02-30T00:00:00Z': "
                 "byte 8: expected a two-digit day 01-28 (February 2026), found '30'");
    expect_error(f,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"usage.report\",\"id\":3,"
                 "\"params\":{\"since\":7}}",
                 -32602, "since (an RFC 3339 time");
}

static void server_info(void **state)
{
    fixture_t *f = *state;
    json_t *resp = rpc(f, "{\"jsonrpc\":\"2.0\",\"method\":\"server.info\",\"id\":1}");
    json_t *r = result_of(resp);
    assert_string_equal(json_string_value(json_object_get(r, "name")), "loomd");
    assert_string_equal(json_string_value(json_object_get(r, "durability")), "normal");
    assert_int_equal(json_integer_value(json_object_get(r, "api_version")), 1);
    /* loomd_methods_add's own (without monitor.snapshot and usage.report,
     * which other parts add): server.info, job.submit/get/list/cancel,
     * node.list, job.wait/logs, job.hold/release/requeue/update */
    assert_int_equal(json_array_size(json_object_get(r, "methods")), 12);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "jobs"), "PENDING")), 0);
    json_decref(resp);
    expect_error(f,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"server.info\",\"params\":{\"x\":1},\"id\":1}",
                 -32602, "");
}

static void submit_get(void **state)
{
    fixture_t *f = *state;
    json_t *resp = rpc(f, "{\"jsonrpc\":\"2.0\",\"method\":\"job.submit\",\"id\":7,\"params\":"
                          "{\"name\":\"train\",\"script\":\"#!/bin/sh\\necho\\n\",\"resources\":"
                          "{\"cpus\":4,\"memory\":\"8GiB\",\"gpus\":2},\"time_limit\":\"2h\","
                          "\"labels\":{\"team\":\"nlp\"},\"submit_id\":\"s1\"}}");
    assert_int_equal(json_integer_value(json_object_get(resp, "id")), 7);
    json_t *r = result_of(resp);
    assert_true(json_is_true(json_object_get(r, "created")));
    json_int_t id = json_integer_value(json_object_get(r, "id"));
    assert_true(id > 0);
    assert_string_equal(json_string_value(json_object_get(r, "state")), "PENDING");
    assert_int_equal(json_object_size(r), 3);
    json_decref(resp);

    char body[256];
    snprintf(body, sizeof body,
             "{\"jsonrpc\":\"2.0\",\"method\":\"job.get\",\"params\":{\"id\":%lld},\"id\":\"g\"}",
             (long long)id);
    resp = rpc(f, body);
    json_t *job = json_object_get(result_of(resp), "job");
    assert_string_equal(json_string_value(json_object_get(job, "script")), "#!/bin/sh\necho\n");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(job, "resources"), "memory")),
        8LL << 30);
    assert_int_equal(json_array_size(json_object_get(job, "events")), 1);
    assert_int_equal(json_integer_value(json_object_get(job, "time_limit")), 7200);
    json_decref(resp);

    /* Positional params follow the documented order (name, script, ...). */
    resp = rpc(f, "{\"jsonrpc\":\"2.0\",\"method\":\"job.submit\",\"params\":[\"p\",\"echo\","
                  "\"batch\"],\"id\":2}");
    loom_job_t pj;
    assert_int_equal(loom_store_get(f->store,
                                    json_integer_value(json_object_get(result_of(resp), "id")), &pj,
                                    NULL),
                     LOOM_OK);
    assert_string_equal(pj.name, "p");
    loom_job_free(&pj);
    json_decref(resp);

    /* The same submit_id again: the first job, not a new one. */
    resp = rpc(f, "{\"jsonrpc\":\"2.0\",\"method\":\"job.submit\",\"id\":8,\"params\":"
                  "{\"name\":\"other\",\"script\":\"\",\"submit_id\":\"s1\"}}");
    r = result_of(resp);
    assert_false(json_is_true(json_object_get(r, "created")));
    assert_int_equal(json_integer_value(json_object_get(r, "id")), id);
    json_decref(resp);

    expect_error(f, "{\"jsonrpc\":\"2.0\",\"method\":\"job.get\",\"params\":{\"id\":999},\"id\":1}",
                 -32001, "job 999 not found");
    expect_error(f,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"job.get\",\"params\":{\"id\":\"1\"},\"id\":1}",
                 -32602, "id: expected a positive integer");
    expect_error(f, "{\"jsonrpc\":\"2.0\",\"method\":\"job.get\",\"id\":1}", -32602,
                 "id: required");
}

/* Every method that takes a job id reads it one way, with one wording. */
static void job_id_errors_agree(void **state)
{
    fixture_t *f = *state;
    static const char *const methods[] = {"job.get",     "job.cancel",  "job.hold",
                                          "job.release", "job.requeue", "job.update"};
    char body[256];
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"id\":1}", methods[i]);
        expect_error(f, body, -32602, "id: required (a positive integer job id)");
        snprintf(body, sizeof body,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":{\"id\":0},\"id\":1}",
                 methods[i]);
        expect_error(f, body, -32602, "id: expected a positive integer job id, found 0");
        snprintf(body, sizeof body,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":{\"id\":\"7\"},"
                 "\"id\":1}",
                 methods[i]);
        expect_error(f, body, -32602, "id: expected a positive integer job id, found a string");
    }
}

static void submit_errors(void **state)
{
    fixture_t *f = *state;
    static const struct {
        const char *params, *needle;
    } cases[] = {
        {"{\"script\":\"\"}", "name: required"},
        {"{\"name\":\"n\",\"script\":\"\",\"resources\":{\"cpus\":\"many\"}}", "resources.cpus"},
        {"{\"name\":\"n\",\"script\":\"\",\"resources\":{\"gpu_share\":2000}}",
         "resources.gpu_share"},
        {"{\"name\":\"n\",\"script\":\"\",\"format\":\"json\"}", "format"},
        {"{\"name\":\"n\",\"script\":\"\",\"time_limit\":-5}", "time_limit"},
        {"{\"name\":\"n\",\"script\":\"\",\"labels\":{\"k\":1}}", "labels/k"},
        {"[1,2]", "name: expected a string"},
        {"{\"name\":\"n\",\"script\":\"\",\"bogus\":1}", "bogus"},
        {"{\"name\":\"n\",\"script\":\"\",\"reconfig\":{\"global_batch\":8,\"gpus\":5}}",
         "reconfig/gpus: found an integer, expected an object"},
        {"{\"name\":\"n\",\"script\":\"\",\"resources\":{\"gpus\":3},"
         "\"reconfig\":{\"global_batch\":8}}",
         "reconfig/global_batch: 8 does not split into 3 GPUs"},
        {"{\"name\":\"n\",\"script\":\"\",\"reconfig\":{\"global_batch\":8}}",
         "reconfig: the job asks for 0 GPUs"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"job.submit\",\"params\":%s,\"id\":1}",
                 cases[i].params);
        expect_error(f, body, -32602, cases[i].needle);
    }
    loom_store_stats_t st;
    loom_store_stats(f->store, &st, NULL);
    assert_int_equal(st.writes, 0); /* nothing reached the store */
}

/* x[N, 1024] -> MatMul W[1024, 4096] -> y, written to path. */
static void write_model(const char *path)
{
    pbw_t g = {0};
    int64_t xd[2] = {-1, 1024}, wd[2] = {1024, 4096}, yd[2] = {-1, 4096};
    onnx_node(&g, "MatMul", "fc", "x,w", "y");
    onnx_init(&g, "w", 1, 2, wd, NULL, 0);
    onnx_value_info(&g, 11, "x", 1, 2, xd);
    onnx_value_info(&g, 12, "y", 1, 2, yd);
    pbw_t m = onnx_model(&g);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(m.d, 1, m.n, fp), m.n);
    fclose(fp);
    free(m.d);
}

static json_t *submit_model(fixture_t *f, const char *extra, const char *path)
{
    char body[1024];
    snprintf(body, sizeof body,
             "{\"jsonrpc\":\"2.0\",\"method\":\"job.submit\",\"id\":1,\"params\":{\"name\":\"m\","
             "\"script\":\"\",%s\"model\":{\"path\":\"%s\",\"batch\":8,\"train\":true}}}",
             extra, path);
    return rpc(f, body);
}

static json_t *get_job(fixture_t *f, json_t *submit_resp)
{
    char body[128];
    snprintf(body, sizeof body,
             "{\"jsonrpc\":\"2.0\",\"method\":\"job.get\",\"params\":{\"id\":%lld},\"id\":1}",
             (long long)json_integer_value(json_object_get(result_of(submit_resp), "id")));
    json_t *resp = rpc(f, body);
    json_t *job = json_incref(json_object_get(result_of(resp), "job"));
    json_decref(resp);
    return job;
}

/* A submission that names a model gets its GPU memory request from the
 * estimate plus the margin; an explicit gpu_memory wins; a model that cannot
 * be estimated is -32006 and stores nothing. */
static void submit_model_estimate(void **state)
{
    fixture_t *f = *state;
    char path[160], missing[160];
    snprintf(path, sizeof path, "%s/m.onnx", f->dir);
    snprintf(missing, sizeof missing, "%s/missing.onnx", f->dir);
    write_model(path);
    loom_est_sizer_opts_t o = {
        .margin = {0.10, 256 << 20}, .device = "h200", .device_dir = "workloads/devices"};
    loom_err_t err;
    assert_int_equal(loom_est_sizer_new(&o, &f->m.sizer, &err), LOOM_OK);
    /* the reference answer: the sizer itself, on the same reference */
    loom_est_ref_t ref = {.path = path, .batch = 8, .train = true, .optimizer = LOOM_EST_ADAM};
    json_t *rec;
    uint64_t want;
    assert_int_equal(loom_est_sizer_size(f->m.sizer, &ref, &rec, &want, &err), LOOM_OK);
    assert_true((json_int_t)want >
                json_integer_value(json_object_get(json_object_get(rec, "memory"), "total")));
    json_decref(rec);

    json_t *resp = submit_model(f, "\"resources\":{\"gpu_share\":250},\"submit_id\":\"m1\",", path);
    json_t *job = get_job(f, resp);
    json_t *res = json_object_get(job, "resources"), *est = json_object_get(job, "estimate");
    assert_int_equal(json_integer_value(json_object_get(res, "gpu_memory")), want);
    assert_int_equal(json_integer_value(json_object_get(est, "request_bytes")), want);
    assert_true(json_is_true(json_object_get(est, "applied")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(est, "model"), "path")),
                        path);
    json_decref(job);
    json_decref(resp);

    /* explicit gpu_memory wins; the estimate is kept for comparison */
    resp = submit_model(f, "\"resources\":{\"gpus\":1,\"gpu_memory\":\"1GiB\"},", path);
    job = get_job(f, resp);
    res = json_object_get(job, "resources");
    est = json_object_get(job, "estimate");
    assert_int_equal(json_integer_value(json_object_get(res, "gpu_memory")), 1LL << 30);
    assert_false(json_is_true(json_object_get(est, "applied")));
    assert_int_equal(json_integer_value(json_object_get(est, "request_bytes")), want);
    json_decref(job);
    json_decref(resp);
    /* a job without a model has "estimate": null */
    resp = rpc(f, "{\"jsonrpc\":\"2.0\",\"method\":\"job.submit\",\"id\":1,\"params\":"
                  "{\"name\":\"plain\",\"script\":\"\"}}");
    job = get_job(f, resp);
    assert_true(json_is_null(json_object_get(job, "estimate")));
    json_decref(job);
    json_decref(resp);

    loom_store_stats_t before, after;
    loom_store_stats(f->store, &before, NULL);
    /* the estimator fails: -32006 naming the file, with data */
    resp = submit_model(f, "\"resources\":{\"gpu_share\":250},", missing);
    json_t *e = json_object_get(resp, "error");
    assert_int_equal(json_integer_value(json_object_get(e, "code")), -32006);
    assert_non_null(strstr(json_string_value(json_object_get(e, "message")), missing));
    assert_string_equal(json_string_value(json_object_get(json_object_get(e, "data"), "model")),
                        missing);
    json_decref(resp);
    /* a bad reference or a job without GPU: -32602 naming the parameter */
    resp = submit_model(f, "\"resources\":{\"gpu_share\":250},", "rel.onnx");
    e = json_object_get(resp, "error");
    assert_int_equal(json_integer_value(json_object_get(e, "code")), -32602);
    assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "model.path"));
    json_decref(resp);
    resp = submit_model(f, "", path);
    e = json_object_get(resp, "error");
    assert_int_equal(json_integer_value(json_object_get(e, "code")), -32602);
    assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "asks for no GPU"));
    json_decref(resp);
    expect_error(f,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"job.submit\",\"id\":1,\"params\":{\"name\":"
                 "\"m\",\"script\":\"\",\"model\":\"/x.onnx\"}}",
                 -32602, "model: expected an object");
    loom_store_stats(f->store, &after, NULL);
    assert_int_equal(after.writes, before.writes); /* nothing was stored */

    /* a resend of a stored submission whose model has gone since: its job */
    assert_int_equal(rename(path, missing), 0);
    resp = submit_model(f, "\"resources\":{\"gpu_share\":250},\"submit_id\":\"m1\",", missing);
    assert_false(json_is_true(json_object_get(result_of(resp), "created")));
    json_decref(resp);

    /* server.info shows the estimator and its cache */
    f->info.estimate_device = "h200";
    f->info.estimate_margin = "10%+256MiB";
    resp = rpc(f, "{\"jsonrpc\":\"2.0\",\"method\":\"server.info\",\"id\":1}");
    json_t *ei = json_object_get(result_of(resp), "estimator");
    assert_string_equal(json_string_value(json_object_get(ei, "margin")), "10%+256MiB");
    assert_int_equal(json_integer_value(json_object_get(ei, "cache_hits")), 2);
    json_decref(resp);
    loom_est_sizer_free(f->m.sizer);
    f->m.sizer = NULL;
}

static void cancel_and_list(void **state)
{
    fixture_t *f = *state;
    for (int i = 0; i < 12; i++)
        json_decref(rpc(f, "{\"jsonrpc\":\"2.0\",\"method\":\"job.submit\",\"params\":{\"name\":"
                           "\"l\",\"script\":\"\"},\"id\":1}"));
    json_t *resp = rpc(f, "{\"jsonrpc\":\"2.0\",\"method\":\"job.cancel\",\"params\":{\"id\":3,"
                          "\"reason\":\"test\"},\"id\":1}");
    json_t *job = json_object_get(result_of(resp), "job");
    assert_string_equal(json_string_value(json_object_get(job, "state")), "CANCELLED");
    assert_string_equal(json_string_value(json_object_get(job, "reason")), "test");
    json_decref(resp);
    expect_error(f,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"job.cancel\",\"params\":{\"id\":3},\"id\":1}",
                 -32002, "already CANCELLED");
    expect_error(f, "{\"jsonrpc\":\"2.0\",\"method\":\"job.cancel\",\"params\":[77],\"id\":1}",
                 -32001, "not found");
    expect_error(f,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"job.cancel\",\"params\":{\"id\":0},\"id\":1}",
                 -32602, "id");

    /* Pages of 5 over 12 jobs. */
    char body[256];
    const char *cursor = NULL;
    char cur[32];
    int total = 0, pages = 0;
    do {
        if (cursor)
            snprintf(body, sizeof body,
                     "{\"jsonrpc\":\"2.0\",\"method\":\"job.list\",\"params\":{\"limit\":5,"
                     "\"cursor\":\"%s\"},\"id\":1}",
                     cursor);
        else
            snprintf(
                body, sizeof body,
                "{\"jsonrpc\":\"2.0\",\"method\":\"job.list\",\"params\":{\"limit\":5},\"id\":1}");
        resp = rpc(f, body);
        json_t *r = result_of(resp);
        total += (int)json_array_size(json_object_get(r, "jobs"));
        json_t *next = json_object_get(r, "next_cursor");
        cursor = NULL;
        if (json_is_string(next)) {
            snprintf(cur, sizeof cur, "%s", json_string_value(next));
            cursor = cur;
        }
        pages++;
        json_decref(resp);
    } while (cursor);
    assert_int_equal(total, 12);
    assert_int_equal(pages, 3);
    resp = rpc(f, "{\"jsonrpc\":\"2.0\",\"method\":\"job.list\",\"params\":{\"state\":"
                  "[\"cancelled\"]},\"id\":1}");
    assert_int_equal(json_array_size(json_object_get(result_of(resp), "jobs")), 1);
    json_decref(resp);
    resp = rpc(f, "{\"jsonrpc\":\"2.0\",\"method\":\"job.list\",\"params\":{\"state\":\"PENDING\"},"
                  "\"id\":1}");
    assert_int_equal(json_array_size(json_object_get(result_of(resp), "jobs")), 11);
    json_decref(resp);
    expect_error(f,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"job.list\",\"params\":{\"state\":\"DONE\"},"
                 "\"id\":1}",
                 -32602, "state");
    expect_error(f,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"job.list\",\"params\":{\"limit\":0},\"id\":1}",
                 -32602, "limit");
    expect_error(f,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"job.list\",\"params\":{\"cursor\":\"x\"},"
                 "\"id\":1}",
                 -32602, "cursor");
    expect_error(f,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"job.list\",\"params\":{\"cursor\":5},"
                 "\"id\":1}",
                 -32602, "cursor");

    /* Newest first (the dashboard's Finished tab, issue 31): pages of 5
     * over the 12 jobs, 12 down to 1, each once. */
    int64_t want = 12;
    cursor = NULL;
    pages = 0;
    do {
        snprintf(body, sizeof body,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"job.list\",\"params\":{\"limit\":5,"
                 "\"newest_first\":true,\"cursor\":%s%s%s},\"id\":1}",
                 cursor ? "\"" : "", cursor ? cursor : "null", cursor ? "\"" : "");
        resp = rpc(f, body);
        json_t *r = result_of(resp);
        size_t i;
        json_t *j;
        json_array_foreach(json_object_get(r, "jobs"), i, j)
            assert_int_equal(json_integer_value(json_object_get(j, "id")), want--);
        json_t *next = json_object_get(r, "next_cursor");
        cursor = NULL;
        if (json_is_string(next)) {
            snprintf(cur, sizeof cur, "%s", json_string_value(next));
            cursor = cur;
        }
        pages++;
        json_decref(resp);
    } while (cursor);
    assert_int_equal(want, 0);
    assert_int_equal(pages, 3);
    expect_error(f,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"job.list\",\"params\":{\"newest_first\":"
                 "1},\"id\":1}",
                 -32602, "newest_first");

    loom_buf_t m = LOOM_BUF_INIT;
    assert_int_equal(loomd_methods_metrics(&m, &f->m), LOOM_OK);
    assert_non_null(strstr(m.data, "loom_jobs{state=\"PENDING\"} 11\n"));
    assert_non_null(strstr(m.data, "loom_jobs{state=\"CANCELLED\"} 1\n"));
    assert_non_null(strstr(m.data, "loom_store_queue_depth 0\n"));
    loom_buf_free(&m);
}

/* Issue 18, finding 1: a batch of job.list calls over many jobs used to make
 * a response of (calls x jobs x ~370 bytes) -- 368 MB for 1000 calls over
 * 246k jobs. With a response budget (16 KiB here) the body stays within it
 * (plus small errors), the first call returns a short page with a cursor,
 * the rest fail -32010 without touching the store, and paging still yields
 * every job exactly once. */
static void response_budget(void **state)
{
    fixture_t *f = *state;
    loom_rpc_dispatcher_t *d;
    loom_err_t err;
    loom_rpc_limits_t lim = {.max_response = 16384};
    assert_int_equal(loom_rpc_dispatcher_new(&lim, &d, &err), LOOM_OK);
    assert_int_equal(loomd_methods_add(d, &f->m, &err), LOOM_OK);
    loom_buf_t b = LOOM_BUF_INIT;
    loom_buf_append_str(&b, "[");
    for (int i = 0; i < 200; i++)
        loom_buf_appendf(&b,
                         "%s{\"jsonrpc\":\"2.0\",\"method\":\"job.submit\",\"params\":{"
                         "\"name\":\"j%d\",\"script\":\"\"},\"id\":%d}",
                         i ? "," : "", i, i);
    loom_buf_append_str(&b, "]");
    loom_buf_t out = LOOM_BUF_INIT;
    assert_int_equal(loom_rpc_handle(d, b.data, b.len, NULL, &out), LOOM_OK);
    loom_buf_reset(&b);
    loom_buf_reset(&out);
    loom_buf_append_str(&b, "[");
    for (int i = 0; i < 50; i++)
        loom_buf_appendf(&b,
                         "%s{\"jsonrpc\":\"2.0\",\"method\":\"job.list\",\"params\":{"
                         "\"limit\":1000},\"id\":%d}",
                         i ? "," : "", i);
    loom_buf_append_str(&b, "]");
    assert_int_equal(loom_rpc_handle(d, b.data, b.len, NULL, &out), LOOM_OK);
    assert_true(out.len < 16384 + 50 * 512);
    json_t *resp = json_loads(out.data, 0, NULL);
    assert_int_equal(json_array_size(resp), 50);
    json_t *first = json_object_get(json_array_get(resp, 0), "result");
    size_t got = json_array_size(json_object_get(first, "jobs"));
    assert_true(got > 0 && got < 200);
    assert_true(json_is_string(json_object_get(first, "next_cursor")));
    json_t *e = json_object_get(json_array_get(resp, 49), "error");
    assert_int_equal(json_integer_value(json_object_get(e, "code")), LOOM_RPC_RESPONSE_TOO_LARGE);
    assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "narrow the query"));
    json_decref(resp);
    /* paging one call at a time reaches every job once */
    char cursor[32] = "";
    int64_t last = 0;
    size_t total = 0;
    do {
        char body[200];
        snprintf(body, sizeof body,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"job.list\",\"params\":{\"limit\":1000,"
                 "\"cursor\":%s%s%s},\"id\":1}",
                 cursor[0] ? "\"" : "", cursor[0] ? cursor : "null", cursor[0] ? "\"" : "");
        loom_buf_reset(&out);
        assert_int_equal(loom_rpc_handle(d, body, strlen(body), NULL, &out), LOOM_OK);
        assert_true(out.len <= 16384);
        resp = json_loads(out.data, 0, NULL);
        json_t *r = result_of(resp);
        size_t i;
        json_t *j;
        json_array_foreach(json_object_get(r, "jobs"), i, j)
        {
            int64_t id = json_integer_value(json_object_get(j, "id"));
            assert_true(id > last);
            last = id;
            total++;
        }
        json_t *next = json_object_get(r, "next_cursor");
        snprintf(cursor, sizeof cursor, "%s", json_is_string(next) ? json_string_value(next) : "");
        json_decref(resp);
    } while (cursor[0]);
    assert_int_equal(total, 200);
    loom_buf_free(&b);
    loom_buf_free(&out);
    loom_rpc_dispatcher_free(d);
}

/* Issue 30, finding 9: a job.list that cannot fit its response budget
 * still read (and serialised) up to its limit of 1000 jobs before it failed
 * -32010. Now it reads no more jobs than the budget could hold (one per
 * 128 bytes): the store's count of jobs read says so, not a timing. */
static void list_bounded_before_it_reads(void **state)
{
    fixture_t *f = *state;
    char value[251];
    memset(value, 'v', sizeof value - 1);
    value[sizeof value - 1] = '\0';
    loom_buf_t labels = LOOM_BUF_INIT; /* about 3.2 KB of labels per job */
    for (int k = 0; k < 12; k++)
        loom_buf_appendf(&labels, "%s\"k%d\":\"%s\"", k ? "," : "", k, value);
    loom_buf_t b = LOOM_BUF_INIT, out = LOOM_BUF_INIT;
    for (int batch = 0; batch < 20; batch++) { /* 1000 jobs, 50 a batch */
        loom_buf_reset(&b);
        loom_buf_append_str(&b, "[");
        for (int i = 0; i < 50; i++)
            loom_buf_appendf(&b,
                             "%s{\"jsonrpc\":\"2.0\",\"method\":\"job.submit\",\"params\":{"
                             "\"name\":\"j\",\"script\":\"\",\"labels\":{%s}},\"id\":%d}",
                             i ? "," : "", labels.data, i);
        loom_buf_append_str(&b, "]");
        loom_buf_reset(&out);
        assert_int_equal(loom_rpc_handle(f->disp, b.data, b.len, NULL, &out), LOOM_OK);
        assert_null(strstr(out.data, "\"error\""));
    }
    loom_rpc_dispatcher_t *d;
    loom_err_t err;
    loom_rpc_limits_t lim = {.max_response = 3072}; /* less than one job */
    assert_int_equal(loom_rpc_dispatcher_new(&lim, &d, &err), LOOM_OK);
    assert_int_equal(loomd_methods_add(d, &f->m, &err), LOOM_OK);
    loom_store_stats_t before, after;
    assert_int_equal(loom_store_stats(f->store, &before, &err), LOOM_OK);
    const char *list = "{\"jsonrpc\":\"2.0\",\"method\":\"job.list\",\"params\":{\"limit\":1000},"
                       "\"id\":1}";
    loom_buf_reset(&out);
    assert_int_equal(loom_rpc_handle(d, list, strlen(list), NULL, &out), LOOM_OK);
    assert_int_equal(loom_store_stats(f->store, &after, &err), LOOM_OK);
    json_t *resp = json_loads(out.data, 0, NULL);
    json_t *e = json_object_get(resp, "error");
    assert_int_equal(json_integer_value(json_object_get(e, "code")), LOOM_RPC_RESPONSE_TOO_LARGE);
    uint64_t read = after.jobs_listed - before.jobs_listed;
    if (read == 0 || read > 3072 / 128)
        fail_msg("job.list read %llu jobs for a 3072-byte budget (the most that could fit: %d)",
                 (unsigned long long)read, 3072 / 128);
    json_decref(resp);
    loom_buf_free(&labels);
    loom_buf_free(&b);
    loom_buf_free(&out);
    loom_rpc_dispatcher_free(d);
}

/* A batch of 100 submissions while another connection holds SQLite's
 * write lock and the committer waits for it with one earlier write: every
 * handler of the batch queues its write and returns PENDING; once the lock
 * goes, the committer writes the earlier write, then all 100 in one
 * transaction, and only then is the batch answered. */
static sem_t batch_done;

static void on_batch(const char *response, size_t len, void *ctx)
{
    *(char **)ctx = strndup(response, len);
    sem_post(&batch_done);
}

static void batch_shares_transactions(void **state)
{
    fixture_t *f = *state;
    sqlite3 *blocker;
    assert_int_equal(sqlite3_open(f->db, &blocker), SQLITE_OK);
    assert_int_equal(sqlite3_exec(blocker, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);

    /* A first call takes the committer, which then waits for the lock. */
    sem_init(&batch_done, 0, 0);
    const char *one = "{\"jsonrpc\":\"2.0\",\"method\":\"job.submit\",\"params\":{\"name\":"
                      "\"first\",\"script\":\"\"},\"id\":0}";
    char *single_response = NULL, *batch_response = NULL;
    assert_int_equal(loom_rpc_dispatch(f->disp, one, strlen(one), NULL, on_batch, &single_response),
                     LOOM_OK);
    loom_store_stats_t st;
    do {
        usleep(1000);
        loom_store_stats(f->store, &st, NULL);
    } while (st.queued != 0);
    loom_buf_t body = LOOM_BUF_INIT;
    loom_buf_append_char(&body, '[');
    for (int i = 0; i < 100; i++)
        loom_buf_appendf(&body,
                         "%s{\"jsonrpc\":\"2.0\",\"method\":\"job.submit\",\"params\":{\"name\":"
                         "\"b%d\",\"script\":\"\",\"submit_id\":\"%s\"},\"id\":%d}",
                         i ? "," : "", i, i == 51 ? "k50" : (i == 50 ? "k50" : "x"), i);
    loom_buf_append_char(&body, ']');
    /* Keys: "x" for 98 calls (one job), "k50" twice (one job). */
    assert_int_equal(
        loom_rpc_dispatch(f->disp, body.data, body.len, NULL, on_batch, &batch_response), LOOM_OK);
    loom_buf_free(&body);
    usleep(20000);
    assert_int_equal(sem_trywait(&batch_done), -1); /* not answered before commit */
    sqlite3_exec(blocker, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(blocker);
    sem_wait(&batch_done); /* the single call and the batch, in either order */
    sem_wait(&batch_done);
    assert_non_null(single_response);
    free(single_response);
    sem_destroy(&batch_done);

    json_t *resp = json_loads(batch_response, 0, NULL);
    free(batch_response);
    assert_int_equal(json_array_size(resp), 100);
    json_int_t x_id = 0;
    size_t i;
    json_t *r;
    int created = 0;
    json_array_foreach(resp, i, r)
    {
        json_t *res = result_of(r);
        json_int_t id = json_integer_value(json_object_get(res, "id"));
        created += json_is_true(json_object_get(res, "created"));
        json_int_t call = json_integer_value(json_object_get(r, "id"));
        if (call != 50 && call != 51) {
            if (!x_id)
                x_id = id;
            assert_int_equal(id, x_id);
        }
    }
    assert_int_equal(created, 2);
    json_decref(resp);
    loom_store_stats(f->store, &st, NULL);
    assert_int_equal(st.commits, 2);
    assert_int_equal(st.max_group, 100);
    assert_int_equal(st.jobs_by_state[LOOM_JOB_PENDING], 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(server_info, setup, teardown),
        cmocka_unit_test_setup_teardown(usage_report_since, setup, teardown),
        cmocka_unit_test_setup_teardown(submit_get, setup, teardown),
        cmocka_unit_test_setup_teardown(submit_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(submit_model_estimate, setup, teardown),
        cmocka_unit_test_setup_teardown(cancel_and_list, setup, teardown),
        cmocka_unit_test_setup_teardown(response_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(list_bounded_before_it_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(batch_shares_transactions, setup, teardown),
        cmocka_unit_test_setup_teardown(server_info_lists_every_method, setup, teardown),
        cmocka_unit_test_setup_teardown(job_id_errors_agree, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
