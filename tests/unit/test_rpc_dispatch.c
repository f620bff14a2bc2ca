/* The JSON-RPC 2.0 dispatcher against every example of the specification
 * (https://www.jsonrpc.org/specification, section 7), plus params by name
 * and position, limits, and deferred completion from other threads. */
#include <stdio.h>

#include "test_util.h"

#include <pthread.h>
#include <unistd.h>

#include "loom/rpc.h"

/* ------------------------------------------------------------ handlers */

static loom_rpc_status_t h_subtract(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)ctx;
    json_t *a = json_object_get(params, "minuend");
    json_t *b = json_object_get(params, "subtrahend");
    if (!json_is_integer(a)) {
        loom_rpc_call_invalid_param(call, "minuend", "an integer", a);
        return LOOM_RPC_DONE;
    }
    if (!json_is_integer(b)) {
        loom_rpc_call_invalid_param(call, "subtrahend", "an integer", b);
        return LOOM_RPC_DONE;
    }
    loom_rpc_call_complete(call, json_integer(json_integer_value(a) - json_integer_value(b)));
    return LOOM_RPC_DONE;
}

static int update_calls;

static loom_rpc_status_t h_sum(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)ctx;
    json_int_t s = 0;
    size_t i;
    json_t *v;
    json_array_foreach(params, i, v) s += json_integer_value(v);
    if (strncmp(loom_rpc_call_method(call), "notify_", 7) == 0 ||
        strcmp(loom_rpc_call_method(call), "update") == 0)
        update_calls++;
    loom_rpc_call_complete(call, json_integer(s));
    return LOOM_RPC_DONE;
}

static loom_rpc_status_t h_get_data(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)ctx;
    (void)params;
    loom_rpc_call_complete(call, json_pack("[s,i]", "hello", 5));
    return LOOM_RPC_DONE;
}

static loom_rpc_status_t h_forgetful(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)call;
    (void)params;
    (void)ctx;
    return LOOM_RPC_DONE; /* a bug: never completes */
}

static loom_rpc_status_t h_app_error(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)params;
    (void)ctx;
    loom_rpc_call_fail(call, -32004, "Job not found", json_pack("{s:i}", "id", 42));
    return LOOM_RPC_DONE;
}

static loom_rpc_status_t h_echo_params(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)ctx;
    loom_rpc_call_complete(call, params ? json_incref(params) : json_string("none"));
    return LOOM_RPC_DONE;
}

static loom_rpc_status_t h_ctx(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)params;
    loom_rpc_call_complete(call,
                           json_pack("{s:s,s:s,s:i,s:i}", "method_ctx", (const char *)ctx,
                                     "request_ctx", (const char *)loom_rpc_call_request_ctx(call),
                                     "index", (json_int_t)loom_rpc_call_index(call), "size",
                                     (json_int_t)loom_rpc_call_batch_size(call)));
    return LOOM_RPC_DONE;
}

static loom_rpc_status_t h_typed(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)ctx;
    loom_err_t err;
    const char *name = NULL;
    if (loom_json_get_string(params, "name", true, "", &name, &err) != LOOM_OK) {
        loom_rpc_call_fail_params(call, &err);
        return LOOM_RPC_DONE;
    }
    loom_rpc_call_complete(call, json_string(name));
    return LOOM_RPC_DONE;
}

/* ---------------------------------------------- deferred: a worker thread */

typedef struct worker {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    loom_rpc_call_t *queue[256];
    json_int_t value[256];
    size_t n;
    size_t expect; /* complete when this many are queued (one "commit") */
    bool stop;
    bool reverse;
    pthread_t tid;
    pthread_t completed_on;
} worker_t;

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->stop && (w->n == 0 || w->n < w->expect))
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->stop && w->n == 0)
            break;
        size_t n = w->n;
        loom_rpc_call_t *calls[256];
        json_int_t vals[256];
        memcpy(calls, w->queue, n * sizeof *calls);
        memcpy(vals, w->value, n * sizeof *vals);
        w->n = 0;
        w->completed_on = pthread_self();
        pthread_mutex_unlock(&w->mu);
        usleep(1000); /* the "commit" */
        for (size_t k = 0; k < n; k++) {
            size_t i = w->reverse ? n - 1 - k : k;
            if (vals[i] < 0)
                loom_rpc_call_fail(calls[i], -32010, "Rejected", NULL);
            else
                loom_rpc_call_complete(calls[i], json_integer(vals[i] * 10));
        }
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static loom_rpc_status_t h_deferred(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    worker_t *w = ctx;
    pthread_mutex_lock(&w->mu);
    w->value[w->n] = json_integer_value(json_object_get(params, "x"));
    w->queue[w->n++] = call;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return LOOM_RPC_PENDING;
}

/* Completes on another thread and waits for it before returning PENDING:
 * the call is already complete when the handler returns. */
static void *complete_now(void *arg)
{
    loom_rpc_call_complete(arg, json_string("early"));
    return NULL;
}

static loom_rpc_status_t h_early(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)params;
    (void)ctx;
    pthread_t t;
    pthread_create(&t, NULL, complete_now, call);
    pthread_join(t, NULL);
    return LOOM_RPC_PENDING;
}

/* Answers whether its request's thread will run the on_wait hook. */
static loom_rpc_status_t h_waited(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)params;
    (void)ctx;
    loom_rpc_call_complete(call, json_boolean(loom_rpc_call_waited_on(call)));
    return LOOM_RPC_DONE;
}

/* -------------------------------------------------------------- fixture */

typedef struct fx {
    loom_rpc_dispatcher_t *d;
    worker_t w;
} fx_t;

static const char *const subtract_params[] = {"minuend", "subtrahend", NULL};
static const char *const typed_params[] = {"name", "size", NULL};
static const char *const x_params[] = {"x", NULL};

static fx_t *fx_new(const loom_rpc_limits_t *limits)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    loom_err_t err;
    assert_int_equal(loom_rpc_dispatcher_new(limits, &f->d, &err), LOOM_OK);
    struct {
        const char *name;
        loom_rpc_handler_fn fn;
        void *ctx;
        const char *const *params;
        unsigned flags;
    } m[] = {
        {"subtract", h_subtract, NULL, subtract_params, 0},
        {"sum", h_sum, NULL, NULL, 0},
        {"update", h_sum, NULL, NULL, 0},
        {"notify_hello", h_sum, NULL, NULL, 0},
        {"notify_sum", h_sum, NULL, NULL, 0},
        {"get_data", h_get_data, NULL, NULL, 0},
        {"forgetful", h_forgetful, NULL, NULL, 0},
        {"app.error", h_app_error, NULL, NULL, 0},
        {"echo", h_echo_params, NULL, NULL, 0},
        {"echo.strict", h_echo_params, NULL, typed_params, LOOM_RPC_STRICT_PARAMS},
        {"echo.none", h_echo_params, NULL, NULL, LOOM_RPC_NO_PARAMS},
        {"ctx", h_ctx, "method-ctx", NULL, 0},
        {"typed", h_typed, NULL, typed_params, 0},
        {"deferred", h_deferred, &f->w, x_params, 0},
        {"early", h_early, NULL, NULL, 0},
        {"waited", h_waited, NULL, NULL, 0},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        assert_int_equal(loom_rpc_dispatcher_add(f->d, m[i].name, m[i].fn, m[i].ctx, m[i].params,
                                                 m[i].flags, &err),
                         LOOM_OK);
    pthread_mutex_init(&f->w.mu, NULL);
    pthread_cond_init(&f->w.cv, NULL);
    assert_int_equal(pthread_create(&f->w.tid, NULL, worker_main, &f->w), 0);
    return f;
}

static void fx_free(fx_t *f)
{
    pthread_mutex_lock(&f->w.mu);
    f->w.stop = true;
    pthread_cond_signal(&f->w.cv);
    pthread_mutex_unlock(&f->w.mu);
    pthread_join(f->w.tid, NULL);
    pthread_mutex_destroy(&f->w.mu);
    pthread_cond_destroy(&f->w.cv);
    assert_int_equal(loom_rpc_dispatcher_in_flight(f->d), 0);
    loom_rpc_dispatcher_free(f->d);
    free(f);
}

static int setup(void **state)
{
    *state = fx_new(NULL);
    return 0;
}

static int teardown(void **state)
{
    fx_free(*state);
    return 0;
}

/* Sends body, returns the response as JSON (NULL when there is none). */
static json_t *send_ctx(loom_rpc_dispatcher_t *d, const char *body, void *rctx)
{
    loom_buf_t out = LOOM_BUF_INIT;
    assert_int_equal(loom_rpc_handle(d, body, strlen(body), rctx, &out), LOOM_OK);
    json_t *v = NULL;
    if (out.len) {
        json_error_t je;
        v = json_loadb(out.data, out.len, 0, &je);
        if (!v)
            fail_msg("response is not JSON: %s", out.data);
    }
    loom_buf_free(&out);
    return v;
}

static json_t *send(loom_rpc_dispatcher_t *d, const char *body)
{
    return send_ctx(d, body, NULL);
}

/* Removes error.data members (the specification's examples carry none;
 * ours add details) so the response can be compared with the example. */
static void strip_data(json_t *v)
{
    if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) strip_data(e);
    } else if (json_is_object(v)) {
        json_t *err = json_object_get(v, "error");
        if (err)
            json_object_del(err, "data");
    }
}

/* Asserts that body gets exactly `expected` (JSON text, or NULL for no
 * response), ignoring error data. */
static void expect(loom_rpc_dispatcher_t *d, const char *body, const char *expected)
{
    json_t *got = send(d, body);
    if (!expected) {
        if (got) {
            char *s = json_dumps(got, JSON_COMPACT);
            fail_msg("%s: expected no response, got %s", body, s);
        }
        return;
    }
    if (!got)
        fail_msg("%s: expected %s, got no response", body, expected);
    json_error_t je;
    json_t *want = json_loads(expected, 0, &je);
    assert_non_null(want);
    strip_data(got);
    if (!json_equal(got, want)) {
        char *s = json_dumps(got, JSON_COMPACT);
        fail_msg("%s:\n  expected %s\n  got      %s", body, expected, s);
    }
    json_decref(got);
    json_decref(want);
}

/* ------------------------------------------- the specification's examples */

static void spec_positional(void **state)
{
    fx_t *f = *state;
    expect(f->d,
           "{\"jsonrpc\": \"2.0\", \"method\": \"subtract\", \"params\": [42, 23], \"id\": 1}",
           "{\"jsonrpc\": \"2.0\", \"result\": 19, \"id\": 1}");
    expect(f->d,
           "{\"jsonrpc\": \"2.0\", \"method\": \"subtract\", \"params\": [23, 42], \"id\": 2}",
           "{\"jsonrpc\": \"2.0\", \"result\": -19, \"id\": 2}");
}

static void spec_named(void **state)
{
    fx_t *f = *state;
    expect(f->d,
           "{\"jsonrpc\": \"2.0\", \"method\": \"subtract\", \"params\": {\"subtrahend\": 23, "
           "\"minuend\": 42}, \"id\": 3}",
           "{\"jsonrpc\": \"2.0\", \"result\": 19, \"id\": 3}");
    expect(f->d,
           "{\"jsonrpc\": \"2.0\", \"method\": \"subtract\", \"params\": {\"minuend\": 42, "
           "\"subtrahend\": 23}, \"id\": 4}",
           "{\"jsonrpc\": \"2.0\", \"result\": 19, \"id\": 4}");
}

static void spec_notification(void **state)
{
    fx_t *f = *state;
    update_calls = 0;
    expect(f->d, "{\"jsonrpc\": \"2.0\", \"method\": \"update\", \"params\": [1,2,3,4,5]}", NULL);
    assert_int_equal(update_calls, 1); /* the handler did run */
    expect(f->d, "{\"jsonrpc\": \"2.0\", \"method\": \"foobar\"}", NULL);
}

static void spec_method_not_found(void **state)
{
    fx_t *f = *state;
    expect(f->d, "{\"jsonrpc\": \"2.0\", \"method\": \"foobar\", \"id\": \"1\"}",
           "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32601, \"message\": \"Method not "
           "found\"}, \"id\": \"1\"}");
}

static void spec_invalid_json(void **state)
{
    fx_t *f = *state;
    expect(f->d, "{\"jsonrpc\": \"2.0\", \"method\": \"foobar, \"params\": \"bar\", \"baz]",
           "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32700, \"message\": \"Parse error\"}, "
           "\"id\": null}");
}

static void spec_invalid_request(void **state)
{
    fx_t *f = *state;
    expect(f->d, "{\"jsonrpc\": \"2.0\", \"method\": 1, \"params\": \"bar\"}",
           "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32600, \"message\": \"Invalid "
           "Request\"}, \"id\": null}");
}

static void spec_batch_invalid_json(void **state)
{
    fx_t *f = *state;
    expect(f->d,
           "[\n  {\"jsonrpc\": \"2.0\", \"method\": \"sum\", \"params\": [1,2,4], \"id\": \"1\"},\n"
           "  {\"jsonrpc\": \"2.0\", \"method\"\n]",
           "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32700, \"message\": \"Parse error\"}, "
           "\"id\": null}");
}

static void spec_empty_array(void **state)
{
    fx_t *f = *state;
    expect(f->d, "[]",
           "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32600, \"message\": \"Invalid "
           "Request\"}, \"id\": null}");
}

static void spec_batch_of_one_invalid(void **state)
{
    fx_t *f = *state;
    expect(f->d, "[1]",
           "[{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32600, \"message\": \"Invalid "
           "Request\"}, \"id\": null}]");
}

static void spec_batch_of_three_invalid(void **state)
{
    fx_t *f = *state;
    const char *e = "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32600, \"message\": \"Invalid "
                    "Request\"}, \"id\": null}";
    char want[1024];
    snprintf(want, sizeof want, "[%s,%s,%s]", e, e, e);
    expect(f->d, "[1,2,3]", want);
}

static void spec_mixed_batch(void **state)
{
    fx_t *f = *state;
    expect(f->d,
           "[\n"
           "  {\"jsonrpc\": \"2.0\", \"method\": \"sum\", \"params\": [1,2,4], \"id\": \"1\"},\n"
           "  {\"jsonrpc\": \"2.0\", \"method\": \"notify_hello\", \"params\": [7]},\n"
           "  {\"jsonrpc\": \"2.0\", \"method\": \"subtract\", \"params\": [42,23], \"id\": "
           "\"2\"},\n"
           "  {\"foo\": \"boo\"},\n"
           "  {\"jsonrpc\": \"2.0\", \"method\": \"foo.get\", \"params\": {\"name\": \"myself\"}, "
           "\"id\": \"5\"},\n"
           "  {\"jsonrpc\": \"2.0\", \"method\": \"get_data\", \"id\": \"9\"}\n"
           "]",
           "[\n"
           "  {\"jsonrpc\": \"2.0\", \"result\": 7, \"id\": \"1\"},\n"
           "  {\"jsonrpc\": \"2.0\", \"result\": 19, \"id\": \"2\"},\n"
           "  {\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32600, \"message\": \"Invalid "
           "Request\"}, \"id\": null},\n"
           "  {\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32601, \"message\": \"Method not "
           "found\"}, \"id\": \"5\"},\n"
           "  {\"jsonrpc\": \"2.0\", \"result\": [\"hello\", 5], \"id\": \"9\"}\n"
           "]");
}

static void spec_all_notifications(void **state)
{
    fx_t *f = *state;
    update_calls = 0;
    expect(f->d,
           "[\n  {\"jsonrpc\": \"2.0\", \"method\": \"notify_sum\", \"params\": [1,2,4]},\n"
           "  {\"jsonrpc\": \"2.0\", \"method\": \"notify_hello\", \"params\": [7]}\n]",
           NULL);
    assert_int_equal(update_calls, 2);
}

/* ------------------------------------------------------ request validity */

static void ids_echoed(void **state)
{
    fx_t *f = *state;
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"get_data\",\"id\":\"abc\"}",
           "{\"jsonrpc\":\"2.0\",\"result\":[\"hello\",5],\"id\":\"abc\"}");
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"get_data\",\"id\":-7}",
           "{\"jsonrpc\":\"2.0\",\"result\":[\"hello\",5],\"id\":-7}");
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"get_data\",\"id\":1.5}",
           "{\"jsonrpc\":\"2.0\",\"result\":[\"hello\",5],\"id\":1.5}");
    /* id null is a call (not a notification), answered with id null */
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"get_data\",\"id\":null}",
           "{\"jsonrpc\":\"2.0\",\"result\":[\"hello\",5],\"id\":null}");
}

static const char *const INVALID =
    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,\"message\":\"Invalid Request\"},"
    "\"id\":null}";

static void invalid_requests(void **state)
{
    fx_t *f = *state;
    const char *bodies[] = {
        "{\"jsonrpc\":\"1.0\",\"method\":\"sum\",\"params\":[1],\"id\":1}",
        "{\"method\":\"sum\",\"params\":[1],\"id\":1}",
        "{\"jsonrpc\":2.0,\"method\":\"sum\",\"id\":1}",
        "{\"jsonrpc\":\"2.0\",\"params\":[1],\"id\":1}",
        "{\"jsonrpc\":\"2.0\",\"method\":null,\"id\":1}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":\"bar\",\"id\":1}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":7,\"id\":1}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":null,\"id\":1}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"extra\":1,\"id\":1}",
        "\"just a string\"",
        "42",
        "null",
        "true",
        "{}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        json_t *got = send(f->d, bodies[i]);
        assert_non_null(got);
        json_t *e = json_object_get(got, "error");
        if (json_integer_value(json_object_get(e, "code")) != -32600)
            fail_msg("%s: expected -32600", bodies[i]);
        assert_string_equal(json_string_value(json_object_get(e, "message")), "Invalid Request");
        /* the data member says what was wrong */
        assert_true(json_is_string(json_object_get(e, "data")));
        /* a usable id is echoed even when the request is invalid */
        json_t *id = json_object_get(got, "id");
        if (strstr(bodies[i], "\"id\":1"))
            assert_int_equal(json_integer_value(id), 1);
        else
            assert_true(json_is_null(id));
        json_decref(got);
    }
    /* an id of the wrong type: invalid, answered with id null */
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"id\":{\"a\":1}}", INVALID);
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"id\":[1]}", INVALID);
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"id\":true}", INVALID);
}

static void detail_names_the_problem(void **state)
{
    fx_t *f = *state;
    json_t *got = send(f->d, "[{\"jsonrpc\":\"2.0\",\"method\":\"sum\"},{\"jsonrpc\":\"2.0\","
                             "\"method\":\"sum\",\"params\":\"x\",\"id\":1}]");
    assert_true(json_is_array(got));
    assert_int_equal(json_array_size(got), 1);
    const char *data = json_string_value(
        json_object_get(json_object_get(json_array_get(got, 0), "error"), "data"));
    assert_non_null(data);
    assert_non_null(strstr(data, "request[1]/params"));
    assert_non_null(strstr(data, "expected an object or an array"));
    json_decref(got);
}

static void parse_errors(void **state)
{
    fx_t *f = *state;
    const char *bodies[] = {"",
                            " ",
                            "{",
                            "[",
                            "{\"jsonrpc\":\"2.0\",}",
                            "nul",
                            "[1,]",
                            "{\"a\":1,\"a\":2}", /* duplicate keys */
                            "\"\\u0000\"",
                            "{\"jsonrpc\":\"2.0\"} trailing",
                            "{\"s\":\"\xff\xfe\"}", /* invalid UTF-8 */
                            "\xc3\x28"};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        json_t *got = send(f->d, bodies[i]);
        assert_non_null(got);
        json_t *e = json_object_get(got, "error");
        if (json_integer_value(json_object_get(e, "code")) != -32700)
            fail_msg("body %zu: expected -32700", i);
        assert_string_equal(json_string_value(json_object_get(e, "message")), "Parse error");
        assert_true(json_is_null(json_object_get(got, "id")));
        assert_true(json_is_string(json_object_get(e, "data")));
        json_decref(got);
    }
}

static void reserved_rpc_names(void **state)
{
    fx_t *f = *state;
    loom_err_t err;
    assert_int_equal(loom_rpc_dispatcher_add(f->d, "rpc.discover", h_sum, NULL, NULL, 0, &err),
                     LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "reserved"));
    assert_int_equal(loom_rpc_dispatcher_add(f->d, "sum", h_sum, NULL, NULL, 0, &err), LOOM_EEXIST);
    assert_int_equal(loom_rpc_dispatcher_add(f->d, "", h_sum, NULL, NULL, 0, &err), LOOM_EINVAL);
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"rpc.discover\",\"id\":1}",
           "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32601,\"message\":\"Method not found\"},"
           "\"id\":1}");
}

/* ------------------------------------------------------------------ params */

static void params_positional_to_named(void **state)
{
    fx_t *f = *state;
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"echo.strict\",\"params\":[\"a\",3],\"id\":1}",
           "{\"jsonrpc\":\"2.0\",\"result\":{\"name\":\"a\",\"size\":3},\"id\":1}");
    /* fewer positional values than names: the rest are absent */
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"echo.strict\",\"params\":[\"a\"],\"id\":1}",
           "{\"jsonrpc\":\"2.0\",\"result\":{\"name\":\"a\"},\"id\":1}");
    /* no params: the handler sees NULL */
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"echo.strict\",\"id\":1}",
           "{\"jsonrpc\":\"2.0\",\"result\":\"none\",\"id\":1}");
    /* without names, params arrive as sent */
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[1,{\"x\":[]}],\"id\":1}",
           "{\"jsonrpc\":\"2.0\",\"result\":[1,{\"x\":[]}],\"id\":1}");
}

static json_t *error_of(json_t *resp, int code)
{
    json_t *e = json_object_get(resp, "error");
    assert_non_null(e);
    assert_int_equal(json_integer_value(json_object_get(e, "code")), code);
    return e;
}

static void params_errors(void **state)
{
    fx_t *f = *state;
    /* too many positional params */
    json_t *r =
        send(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[1,2,3],\"id\":1}");
    json_t *e = error_of(r, -32602);
    assert_non_null(strstr(json_string_value(json_object_get(e, "message")),
                           "subtract takes at most 2 positional parameters, found 3"));
    json_decref(r);
    /* a wrong type, named by the helper */
    r = send(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[\"x\",2],\"id\":1}");
    e = error_of(r, -32602);
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "Invalid params: 'minuend': expected an integer, found a string");
    assert_string_equal(json_string_value(json_object_get(json_object_get(e, "data"), "param")),
                        "minuend");
    assert_string_equal(json_string_value(json_object_get(json_object_get(e, "data"), "expected")),
                        "an integer");
    json_decref(r);
    /* a missing parameter */
    r = send(f->d,
             "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":{\"minuend\":2},\"id\":1}");
    e = error_of(r, -32602);
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "Invalid params: 'subtrahend': expected an integer, found nothing");
    json_decref(r);
    /* unknown named parameter on a strict method */
    r = send(f->d,
             "{\"jsonrpc\":\"2.0\",\"method\":\"echo.strict\",\"params\":{\"nmae\":1},\"id\":1}");
    e = error_of(r, -32602);
    assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "'nmae'"));
    assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "name, size"));
    json_decref(r);
    /* no-params method */
    r = send(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"echo.none\",\"params\":[1],\"id\":1}");
    error_of(r, -32602);
    json_decref(r);
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"echo.none\",\"params\":{},\"id\":1}",
           "{\"jsonrpc\":\"2.0\",\"result\":{},\"id\":1}");
    /* loom_json_get_* errors through loom_rpc_call_fail_params */
    r = send(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"typed\",\"params\":[5],\"id\":1}");
    e = error_of(r, -32602);
    assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "/name"));
    assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "expected a string"));
    json_decref(r);
    /* a notification with bad params gets no response */
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[1,2,3]}", NULL);
}

static void app_and_internal_errors(void **state)
{
    fx_t *f = *state;
    json_t *r = send(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"app.error\",\"id\":7}");
    json_t *e = error_of(r, -32004);
    assert_string_equal(json_string_value(json_object_get(e, "message")), "Job not found");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "data"), "id")), 42);
    json_decref(r);
    r = send(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"forgetful\",\"id\":7}");
    e = error_of(r, -32603);
    assert_string_equal(json_string_value(json_object_get(e, "message")), "Internal error");
    json_decref(r);
    assert_string_equal(loom_rpc_error_message(-32050), "Server error");
    assert_null(loom_rpc_error_message(12));
}

static void contexts(void **state)
{
    fx_t *f = *state;
    json_t *r = send_ctx(f->d,
                         "[{\"jsonrpc\":\"2.0\",\"method\":\"ctx\",\"id\":1},"
                         "{\"jsonrpc\":\"2.0\",\"method\":\"ctx\",\"id\":2}]",
                         "req-ctx");
    json_t *second = json_object_get(json_array_get(r, 1), "result");
    assert_string_equal(json_string_value(json_object_get(second, "method_ctx")), "method-ctx");
    assert_string_equal(json_string_value(json_object_get(second, "request_ctx")), "req-ctx");
    assert_int_equal(json_integer_value(json_object_get(second, "index")), 1);
    assert_int_equal(json_integer_value(json_object_get(second, "size")), 2);
    json_decref(r);
}

/* ------------------------------------------------------------------ limits */

static void limits(void **state)
{
    (void)state;
    loom_rpc_limits_t lim = {.max_body = 200, .max_depth = 4, .max_batch = 3};
    fx_t *f = fx_new(&lim);
    loom_rpc_limits_t eff = loom_rpc_dispatcher_limits(f->d);
    assert_int_equal(eff.max_batch, 3);
    char big[256];
    memset(big, ' ', sizeof big - 1);
    big[sizeof big - 1] = 0;
    const char *call = "{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":1}";
    memcpy(big, call, strlen(call));
    json_t *r = send(f->d, big);
    json_t *e = error_of(r, -32600);
    assert_non_null(strstr(json_string_value(json_object_get(e, "data")),
                           "255 bytes exceeds the limit of 200"));
    json_decref(r);
    /* depth: 4 levels fine, 5 too deep */
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[[[1]]],\"id\":1}",
           "{\"jsonrpc\":\"2.0\",\"result\":[[[1]]],\"id\":1}");
    r = send(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[[[[1]]]],\"id\":1}");
    e = error_of(r, -32600);
    assert_non_null(strstr(json_string_value(json_object_get(e, "data")), "deeper than 4"));
    json_decref(r);
    /* brackets inside strings do not count */
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"[[[[[[\"],\"id\":1}",
           "{\"jsonrpc\":\"2.0\",\"result\":[\"[[[[[[\"],\"id\":1}");
    /* batch length */
    r = send(f->d,
             "[{\"jsonrpc\":\"2.0\",\"method\":\"sum\"},{\"jsonrpc\":\"2.0\",\"method\":\"sum\"},"
             "1,2]");
    assert_true(json_is_object(r));
    e = error_of(r, -32600);
    assert_non_null(strstr(json_string_value(json_object_get(e, "data")),
                           "batch of 4 calls exceeds the limit of 3"));
    json_decref(r);
    fx_free(f);
}

/* ------------------------------------------------------ deferred completion */

/* Issue 18, finding 1: a response (a batch's together) is bounded by
 * max_response; a call whose result does not fit gets -32010, and the
 * calls after it are not run at all (bounded work, not only bytes). */
static int big_calls;

static loom_rpc_status_t h_big(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)params;
    (void)ctx;
    big_calls++;
    char *s = malloc(3000);
    memset(s, 'x', 2999);
    s[2999] = '\0';
    loom_rpc_call_complete(call, json_string(s));
    free(s);
    return LOOM_RPC_DONE;
}

static void response_limit(void **state)
{
    (void)state;
    loom_rpc_limits_t lim = {.max_response = 8000};
    loom_rpc_dispatcher_t *d;
    loom_err_t err;
    assert_int_equal(loom_rpc_dispatcher_new(&lim, &d, &err), LOOM_OK);
    assert_int_equal(loom_rpc_dispatcher_add(d, "big", h_big, NULL, NULL, 0, &err), LOOM_OK);
    const char *body = "[{\"jsonrpc\":\"2.0\",\"method\":\"big\",\"id\":1},"
                       "{\"jsonrpc\":\"2.0\",\"method\":\"big\",\"id\":2},"
                       "{\"jsonrpc\":\"2.0\",\"method\":\"big\",\"id\":3},"
                       "{\"jsonrpc\":\"2.0\",\"method\":\"big\",\"id\":4},"
                       "{\"jsonrpc\":\"2.0\",\"method\":\"big\",\"id\":5}]";
    loom_buf_t out = LOOM_BUF_INIT;
    big_calls = 0;
    assert_int_equal(loom_rpc_handle(d, body, strlen(body), NULL, &out), LOOM_OK);
    assert_int_equal(big_calls, 3); /* the 4th and 5th never ran */
    json_t *resp = json_loads(out.data, 0, NULL);
    assert_int_equal(json_array_size(resp), 5);
    assert_non_null(json_object_get(json_array_get(resp, 1), "result"));
    for (size_t i = 2; i < 5; i++) {
        json_t *e = json_object_get(json_array_get(resp, i), "error");
        assert_int_equal(json_integer_value(json_object_get(e, "code")),
                         LOOM_RPC_RESPONSE_TOO_LARGE);
        assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "fewer calls"));
    }
    assert_true(out.len < 8000 + 3 * 400);
    json_decref(resp);
    loom_buf_free(&out);
    loom_rpc_dispatcher_free(d);
}

static void deferred_single(void **state)
{
    fx_t *f = *state;
    f->w.expect = 1;
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"deferred\",\"params\":[4],\"id\":1}",
           "{\"jsonrpc\":\"2.0\",\"result\":40,\"id\":1}");
    assert_false(pthread_equal(f->w.completed_on, pthread_self()));
    expect(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"deferred\",\"params\":[-1],\"id\":1}",
           "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32010,\"message\":\"Rejected\"},\"id\":1}");
}

/* 100 deferred calls of one batch completed together by the worker (one
 * "transaction"), in reverse order; the response keeps batch order. */
static void deferred_batch_of_100(void **state)
{
    fx_t *f = *state;
    f->w.expect = 100;
    f->w.reverse = true;
    loom_buf_t body = LOOM_BUF_INIT;
    loom_buf_append_char(&body, '[');
    for (int i = 0; i < 100; i++)
        loom_buf_appendf(&body,
                         "%s{\"jsonrpc\":\"2.0\",\"method\":\"deferred\",\"params\":{\"x\":%d},"
                         "\"id\":%d}",
                         i ? "," : "", i, i);
    loom_buf_append_char(&body, ']');
    json_t *r = send(f->d, body.data);
    loom_buf_free(&body);
    assert_int_equal(json_array_size(r), 100);
    for (int i = 0; i < 100; i++) {
        json_t *e = json_array_get(r, i);
        assert_int_equal(json_integer_value(json_object_get(e, "id")), i);
        assert_int_equal(json_integer_value(json_object_get(e, "result")), i * 10);
    }
    json_decref(r);
    assert_int_equal(loom_rpc_dispatcher_in_flight(f->d), 0);
}

/* Deferred and immediate calls and notifications mixed in a batch. */
static void deferred_mixed(void **state)
{
    fx_t *f = *state;
    f->w.expect = 2;
    expect(f->d,
           "[{\"jsonrpc\":\"2.0\",\"method\":\"deferred\",\"params\":[1],\"id\":\"a\"},"
           "{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1,1],\"id\":\"b\"},"
           "{\"jsonrpc\":\"2.0\",\"method\":\"deferred\",\"params\":[2]},"
           "{\"jsonrpc\":\"2.0\",\"method\":\"early\",\"id\":\"c\"}]",
           "[{\"jsonrpc\":\"2.0\",\"result\":10,\"id\":\"a\"},"
           "{\"jsonrpc\":\"2.0\",\"result\":2,\"id\":\"b\"},"
           "{\"jsonrpc\":\"2.0\",\"result\":\"early\",\"id\":\"c\"}]");
}

/* The dispatched hook: once per request, after the last handler, even when
 * the last element of a batch is invalid; the worker "commits" on it. */
static int dispatched_count;
static void on_dispatched(void *request_ctx, void *ctx)
{
    worker_t *w = ctx;
    assert_string_equal((const char *)request_ctx, "rq");
    dispatched_count++;
    pthread_mutex_lock(&w->mu);
    w->expect = 0; /* commit whatever is queued now */
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void dispatched_hook(void **state)
{
    fx_t *f = *state;
    f->w.expect = 1000; /* never by count: only the hook releases the worker */
    loom_rpc_dispatcher_on_dispatched(f->d, on_dispatched, &f->w);
    dispatched_count = 0;
    json_t *r = send_ctx(f->d,
                         "[{\"jsonrpc\":\"2.0\",\"method\":\"deferred\",\"params\":[1],\"id\":1},"
                         "{\"jsonrpc\":\"2.0\",\"method\":\"deferred\",\"params\":[2],\"id\":2},"
                         "{\"foo\":1}]",
                         "rq");
    assert_int_equal(json_array_size(r), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(r, 1), "result")), 20);
    json_decref(r);
    assert_int_equal(dispatched_count, 1);
    /* not called for a request rejected as a whole */
    json_decref(send_ctx(f->d, "[]", "rq"));
    json_decref(send_ctx(f->d, "{", "rq"));
    assert_int_equal(dispatched_count, 1);
    loom_rpc_dispatcher_on_dispatched(f->d, NULL, NULL);
}

/* The wait hook: run by loom_rpc_handle's own thread once per request,
 * after the handlers, and only there (not by loom_rpc_dispatch, whose caller
 * does not wait); loom_rpc_call_waited_on tells a handler which it is. */
static int wait_count;
static pthread_t wait_thread;
static void on_wait(void *request_ctx, void *ctx)
{
    assert_string_equal((const char *)request_ctx, "rq");
    assert_string_equal((const char *)ctx, "hook");
    wait_count++;
    wait_thread = pthread_self();
}

static void async_done_flag(const char *resp, size_t len, void *ctx)
{
    snprintf(ctx, 128, "%.*s", (int)len, resp ? resp : "");
}

static void wait_hook(void **state)
{
    fx_t *f = *state;
    const char *one = "{\"jsonrpc\":\"2.0\",\"method\":\"waited\",\"id\":1}";
    /* No hook: nobody will run it, so no call is told it will be. */
    json_t *r = send_ctx(f->d, one, "rq");
    assert_true(json_is_false(json_object_get(r, "result")));
    json_decref(r);

    static char hook_ctx[] = "hook";
    loom_rpc_dispatcher_on_wait(f->d, on_wait, hook_ctx);
    wait_count = 0;
    r = send_ctx(f->d, one, "rq");
    assert_true(json_is_true(json_object_get(r, "result")));
    json_decref(r);
    assert_int_equal(wait_count, 1);
    assert_true(pthread_equal(wait_thread, pthread_self()));
    r = send_ctx(f->d,
                 "[{\"jsonrpc\":\"2.0\",\"method\":\"waited\",\"id\":1},"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"waited\",\"id\":2}]",
                 "rq");
    assert_true(json_is_true(json_object_get(json_array_get(r, 1), "result")));
    json_decref(r);
    assert_int_equal(wait_count, 2); /* once per request, not per call */

    /* The asynchronous entry point: no hook, and calls are told so. */
    char body[128] = "";
    assert_int_equal(loom_rpc_dispatch(f->d, one, strlen(one), "rq", async_done_flag, body),
                     LOOM_OK);
    assert_string_equal(body, "{\"jsonrpc\":\"2.0\",\"result\":false,\"id\":1}");
    assert_int_equal(wait_count, 2);
    loom_rpc_dispatcher_on_wait(f->d, NULL, NULL);
}

/* The asynchronous entry point: done runs on the completing thread. */
typedef struct async_result {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    char body[256];
    pthread_t on;
} async_result_t;

static void on_done(const char *resp, size_t len, void *ctx)
{
    async_result_t *a = ctx;
    pthread_mutex_lock(&a->mu);
    snprintf(a->body, sizeof a->body, "%.*s", (int)len, resp ? resp : "");
    a->on = pthread_self();
    a->done = true;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

static void async_dispatch(void **state)
{
    fx_t *f = *state;
    f->w.expect = 1;
    async_result_t a = {.done = false};
    pthread_mutex_init(&a.mu, NULL);
    pthread_cond_init(&a.cv, NULL);
    const char *body = "{\"jsonrpc\":\"2.0\",\"method\":\"deferred\",\"params\":[3],\"id\":9}";
    assert_int_equal(loom_rpc_dispatch(f->d, body, strlen(body), NULL, on_done, &a), LOOM_OK);
    pthread_mutex_lock(&a.mu);
    while (!a.done)
        pthread_cond_wait(&a.cv, &a.mu);
    pthread_mutex_unlock(&a.mu);
    assert_string_equal(a.body, "{\"jsonrpc\":\"2.0\",\"result\":30,\"id\":9}");
    assert_false(pthread_equal(a.on, pthread_self()));
    pthread_mutex_destroy(&a.mu);
    pthread_cond_destroy(&a.cv);
}

/* Many threads dispatching concurrently into one worker. */
static void *hammer(void *arg)
{
    fx_t *f = arg;
    for (int i = 0; i < 50; i++) {
        char body[128];
        snprintf(body, sizeof body,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"deferred\",\"params\":[%d],\"id\":%d}", i, i);
        loom_buf_t out = LOOM_BUF_INIT;
        assert_int_equal(loom_rpc_handle(f->d, body, strlen(body), NULL, &out), LOOM_OK);
        char want[128];
        snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\",\"result\":%d,\"id\":%d}", i * 10, i);
        assert_string_equal(out.data, want);
        loom_buf_free(&out);
    }
    return NULL;
}

static void concurrent_dispatch(void **state)
{
    fx_t *f = *state;
    f->w.expect = 0;
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, hammer, f);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    loom_buf_t m = LOOM_BUF_INIT;
    assert_int_equal(loom_rpc_dispatcher_metrics(f->d, &m), LOOM_OK);
    assert_non_null(
        strstr(m.data, "loom_rpc_calls_total{method=\"deferred\",outcome=\"ok\"} 400\n"));
    assert_non_null(
        strstr(m.data, "loom_rpc_call_duration_seconds_count{method=\"deferred\"} 400\n"));
    assert_non_null(strstr(m.data, "loom_rpc_calls_in_flight 0\n"));
    loom_buf_free(&m);
}

static void metrics_outcomes(void **state)
{
    fx_t *f = *state;
    json_decref(send(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":1}"));
    json_decref(send(f->d, "{"));
    json_decref(send(f->d, "[1]"));
    json_decref(
        send(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[1],\"id\":1}"));
    json_decref(send(f->d, "{\"jsonrpc\":\"2.0\",\"method\":\"app.error\",\"id\":1}"));
    loom_buf_t m = LOOM_BUF_INIT;
    assert_int_equal(loom_rpc_dispatcher_metrics(f->d, &m), LOOM_OK);
    const char *want[] = {
        "loom_rpc_calls_total{method=\"_unknown\",outcome=\"method_not_found\"} 1\n",
        "loom_rpc_calls_total{method=\"_unknown\",outcome=\"parse_error\"} 1\n",
        "loom_rpc_calls_total{method=\"_unknown\",outcome=\"invalid_request\"} 1\n",
        "loom_rpc_calls_total{method=\"subtract\",outcome=\"invalid_params\"} 1\n",
        "loom_rpc_calls_total{method=\"app.error\",outcome=\"app_error\"} 1\n",
        "loom_rpc_requests_total{kind=\"single\"} 3\n",
        "loom_rpc_requests_total{kind=\"batch\"} 1\n",
        "loom_rpc_requests_total{kind=\"invalid\"} 1\n",
        "# TYPE loom_rpc_call_duration_seconds histogram\n",
        "loom_rpc_call_duration_seconds_bucket{method=\"subtract\",le=\"+Inf\"} 1\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(m.data, want[i]))
            fail_msg("metrics lack %s\n%s", want[i], m.data);
    loom_buf_free(&m);
}

/* ------------------------------------------------------- client-side codec */

static void codec_roundtrip(void **state)
{
    (void)state;
    json_t *params = json_pack("[i,i]", 1, 2);
    json_t *id = json_integer(5);
    json_t *req = loom_rpc_request_new("sum", params, id);
    char *s = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(s, "{\"id\":5,\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1,2]}");
    free(s);
    json_decref(req);
    req = loom_rpc_request_new("n", NULL, NULL);
    s = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(s, "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}");
    free(s);
    json_decref(req);
    json_decref(params);
    json_decref(id);

    json_t *result, *data;
    int code;
    char msg[64];
    const json_t *rid;
    loom_err_t err;
    json_t *resp = json_loads("{\"jsonrpc\":\"2.0\",\"result\":[1],\"id\":3}", 0, NULL);
    assert_int_equal(
        loom_rpc_response_parse(resp, &result, &code, msg, sizeof msg, &data, &rid, &err), LOOM_OK);
    assert_int_equal(code, 0);
    assert_int_equal(json_array_size(result), 1);
    assert_int_equal(json_integer_value(rid), 3);
    json_decref(result);
    json_decref(resp);
    resp = json_loads("{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32001,\"message\":\"m\",\"data\":"
                      "{\"k\":1}},\"id\":null}",
                      0, NULL);
    assert_int_equal(
        loom_rpc_response_parse(resp, &result, &code, msg, sizeof msg, &data, &rid, &err), LOOM_OK);
    assert_null(result);
    assert_int_equal(code, -32001);
    assert_string_equal(msg, "m");
    assert_int_equal(json_integer_value(json_object_get(data, "k")), 1);
    json_decref(data);
    json_decref(resp);
    const char *bad[] = {
        "[]",
        "{\"jsonrpc\":\"2.0\",\"id\":1}",
        "{\"jsonrpc\":\"2.0\",\"result\":1,\"error\":{},\"id\":1}",
        "{\"jsonrpc\":\"1.0\",\"result\":1,\"id\":1}",
        "{\"jsonrpc\":\"2.0\",\"result\":1}",
        "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":\"x\",\"message\":\"m\"},\"id\":1}",
        "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-1},\"id\":1}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        resp = json_loads(bad[i], 0, NULL);
        assert_non_null(resp);
        assert_int_equal(
            loom_rpc_response_parse(resp, &result, &code, msg, sizeof msg, &data, &rid, &err),
            LOOM_EINVAL);
        json_decref(resp);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(spec_positional, setup, teardown),
        cmocka_unit_test(response_limit),
        cmocka_unit_test_setup_teardown(wait_hook, setup, teardown),
        cmocka_unit_test_setup_teardown(spec_named, setup, teardown),
        cmocka_unit_test_setup_teardown(spec_notification, setup, teardown),
        cmocka_unit_test_setup_teardown(spec_method_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(spec_invalid_json, setup, teardown),
        cmocka_unit_test_setup_teardown(spec_invalid_request, setup, teardown),
        cmocka_unit_test_setup_teardown(spec_batch_invalid_json, setup, teardown),
        cmocka_unit_test_setup_teardown(spec_empty_array, setup, teardown),
        cmocka_unit_test_setup_teardown(spec_batch_of_one_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown(spec_batch_of_three_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown(spec_mixed_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(spec_all_notifications, setup, teardown),
        cmocka_unit_test_setup_teardown(ids_echoed, setup, teardown),
        cmocka_unit_test_setup_teardown(invalid_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(detail_names_the_problem, setup, teardown),
        cmocka_unit_test_setup_teardown(parse_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(reserved_rpc_names, setup, teardown),
        cmocka_unit_test_setup_teardown(params_positional_to_named, setup, teardown),
        cmocka_unit_test_setup_teardown(params_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(app_and_internal_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(contexts, setup, teardown),
        cmocka_unit_test(limits),
        cmocka_unit_test_setup_teardown(deferred_single, setup, teardown),
        cmocka_unit_test_setup_teardown(deferred_batch_of_100, setup, teardown),
        cmocka_unit_test_setup_teardown(deferred_mixed, setup, teardown),
        cmocka_unit_test_setup_teardown(dispatched_hook, setup, teardown),
        cmocka_unit_test_setup_teardown(async_dispatch, setup, teardown),
        cmocka_unit_test_setup_teardown(concurrent_dispatch, setup, teardown),
        cmocka_unit_test_setup_teardown(metrics_outcomes, setup, teardown),
        cmocka_unit_test(codec_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
