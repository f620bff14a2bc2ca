/* JSON-RPC 2.0 dispatcher: from the bytes of a request body to the bytes of
 * its response, with no transport in sight.
 *
 * Shape. A request (one call or a batch) becomes a `request` holding one
 * loom_rpc_call_t per element. Elements that are not valid Request objects
 * are "completed" at once with their error; valid ones run their handler.
 * A handler may complete its call before returning or later from any thread
 * (deferred completion). The request counts outstanding calls plus one guard
 * held by the dispatching loop; whoever drops the count to zero assembles
 * the response in batch order, hands it to the done callback and frees
 * everything. The guard keeps the request (and the parsed JSON the handlers
 * borrow) alive while handlers are still being called, even if another
 * thread completes every call meanwhile.
 *
 * Error responses follow the specification's examples: the messages are
 * exactly "Parse error", "Invalid Request", "Method not found", "Internal
 * error"; a "data" member says what exactly was wrong. -32602 carries the
 * parameter and expectation in its message (see rpc.h). */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "loom/rpc.h"
#include "rpc/rpc_metrics.h"

enum {
    OUT_OK,
    OUT_PARSE,
    OUT_INVALID_REQUEST,
    OUT_NOT_FOUND,
    OUT_INVALID_PARAMS,
    OUT_INTERNAL,
    OUT_APP,
    OUT_N
};
static const char *const outcome_name[OUT_N] = {"ok",
                                                "parse_error",
                                                "invalid_request",
                                                "method_not_found",
                                                "invalid_params",
                                                "internal_error",
                                                "app_error"};

typedef struct method {
    char *name;
    loom_rpc_handler_fn fn;
    void *ctx;
    char **params; /* NULL-terminated, or NULL */
    size_t nparams;
    unsigned flags;
    _Atomic uint64_t outcome[OUT_N];
    rpc_hist_t latency;
} method_t;

enum { REQ_SINGLE, REQ_BATCH, REQ_INVALID, REQ_N };

struct loom_rpc_dispatcher {
    loom_rpc_limits_t limits;
    method_t **methods;
    size_t nmethods, cap;
    method_t unknown; /* metrics of calls that matched no method */
    _Atomic size_t in_flight;
    _Atomic uint64_t requests[REQ_N];
    loom_rpc_dispatched_fn on_dispatched;
    void *on_dispatched_ctx;
    loom_rpc_dispatched_fn on_wait;
    void *on_wait_ctx;
    loom_rpc_guard_fn guard;
    void *guard_ctx;
    loom_rpc_abandoned_fn on_abandoned;
    void *on_abandoned_ctx;
};

typedef struct request request_t;

struct loom_rpc_call {
    request_t *req;
    method_t *m;        /* NULL for invalid elements and unknown methods */
    const char *method; /* borrowed from req->root */
    json_t *id;         /* borrowed; NULL for notifications */
    json_t *params;     /* borrowed or owned (converted positional params) */
    bool params_owned;
    size_t index;
    int64_t start_ns;
    char *text; /* the response, serialised at completion; NULL for notifications */
    size_t text_len;
    atomic_int completed;
};

struct request {
    loom_rpc_dispatcher_t *d;
    json_t *root;
    bool batch;
    size_t n;
    loom_rpc_call_t *calls;
    _Atomic size_t remaining; /* outstanding calls + the dispatch guard */
    _Atomic size_t bytes;     /* of the responses so far (budgeted ones) */
    atomic_bool spent;        /* a response did not fit: later calls are not run */
    void *request_ctx;
    bool waited_on; /* loom_rpc_handle's thread runs the on_wait hook before waiting */
    loom_rpc_done_fn done;
    void *done_ctx;
};

/* ------------------------------------------------------------- messages */

const char *loom_rpc_error_message(int code)
{
    switch (code) {
    case LOOM_RPC_PARSE_ERROR: return "Parse error";
    case LOOM_RPC_INVALID_REQUEST: return "Invalid Request";
    case LOOM_RPC_METHOD_NOT_FOUND: return "Method not found";
    case LOOM_RPC_INVALID_PARAMS: return "Invalid params";
    case LOOM_RPC_INTERNAL_ERROR: return "Internal error";
    default:
        if (code >= LOOM_RPC_APP_ERROR_FIRST && code <= LOOM_RPC_APP_ERROR_LAST)
            return "Server error";
        return NULL;
    }
}

static int outcome_of(int code)
{
    switch (code) {
    case 0: return OUT_OK;
    case LOOM_RPC_PARSE_ERROR: return OUT_PARSE;
    case LOOM_RPC_INVALID_REQUEST: return OUT_INVALID_REQUEST;
    case LOOM_RPC_METHOD_NOT_FOUND: return OUT_NOT_FOUND;
    case LOOM_RPC_INVALID_PARAMS: return OUT_INVALID_PARAMS;
    case LOOM_RPC_INTERNAL_ERROR: return OUT_INTERNAL;
    default: return OUT_APP;
    }
}

/* A JSON string of text that may hold bytes that are not UTF-8 (parser
 * messages quote the input): such bytes become '?'. */
static json_t *safe_string(const char *text)
{
    size_t len = strlen(text);
    if (loom_utf8_valid(text, len))
        return json_stringn(text, len);
    char *copy = strdup(text);
    if (!copy)
        return NULL;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)copy[i] >= 0x80 || (unsigned char)copy[i] < 0x20)
            copy[i] = '?';
    json_t *v = json_stringn(copy, len);
    free(copy);
    return v;
}

/* {"jsonrpc":"2.0","error":{"code":..,"message":..[,"data":..]},"id":..}.
 * Takes data; id borrowed (NULL means null). NULL only when out of memory. */
static json_t *error_response(int code, const char *message, json_t *data, const json_t *id)
{
    if (!message)
        message = loom_rpc_error_message(code);
    if (!message)
        message = "Error";
    json_t *err = json_pack("{s:i,s:o}", "code", code, "message", safe_string(message));
    if (err && data)
        json_object_set_new(err, "data", data);
    else
        json_decref(data);
    if (!err)
        return NULL;
    json_t *r = json_pack("{s:s,s:o,s:O}", "jsonrpc", "2.0", "error", err, "id",
                          id ? (json_t *)id : json_null());
    return r;
}

/* {"jsonrpc":"2.0","result":..,"id":..}; takes result, borrows id. Built
 * member by member because this is the hot path: json_pack took 6% of the
 * instructions of a dispatched call; building directly saves 2.6% of them
 * (callgrind, batches of 100 with bench/rpc_echo's payload). */
static json_t *result_response(json_t *result, const json_t *id)
{
    json_t *r = json_object();
    if (!r || json_object_set_new_nocheck(r, "jsonrpc", json_string_nocheck("2.0")) != 0) {
        json_decref(r);
        json_decref(result);
        return NULL;
    }
    if (json_object_set_new_nocheck(r, "result", result ? result : json_null()) != 0 ||
        json_object_set_nocheck(r, "id", (json_t *)id) != 0) {
        json_decref(r);
        return NULL;
    }
    return r;
}

/* --------------------------------------------------------- dispatcher */

int loom_rpc_dispatcher_new(const loom_rpc_limits_t *limits, loom_rpc_dispatcher_t **out,
                            loom_err_t *err)
{
    loom_rpc_dispatcher_t *d = calloc(1, sizeof *d);
    if (!d)
        return loom_err_set(err, LOOM_ENOMEM, "rpc dispatcher: out of memory");
    if (limits)
        d->limits = *limits;
    if (!d->limits.max_body)
        d->limits.max_body = 1u << 20;
    if (!d->limits.max_depth)
        d->limits.max_depth = 64;
    if (!d->limits.max_batch)
        d->limits.max_batch = 1000;
    if (!d->limits.max_response)
        d->limits.max_response = 8u << 20;
    d->unknown.name = "_unknown";
    *out = d;
    return LOOM_OK;
}

static void method_free(method_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nparams; i++)
        free(m->params[i]);
    free(m->params);
    free(m->name);
    free(m);
}

void loom_rpc_dispatcher_free(loom_rpc_dispatcher_t *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nmethods; i++)
        method_free(d->methods[i]);
    free(d->methods);
    free(d);
}

loom_rpc_limits_t loom_rpc_dispatcher_limits(const loom_rpc_dispatcher_t *d)
{
    return d->limits;
}

static method_t *find_method(const loom_rpc_dispatcher_t *d, const char *name)
{
    for (size_t i = 0; i < d->nmethods; i++)
        if (strcmp(d->methods[i]->name, name) == 0)
            return d->methods[i];
    return NULL;
}

int loom_rpc_dispatcher_add(loom_rpc_dispatcher_t *d, const char *name, loom_rpc_handler_fn fn,
                            void *ctx, const char *const *param_names, unsigned flags,
                            loom_err_t *err)
{
    if (!name || !name[0])
        return loom_err_set(err, LOOM_EINVAL, "rpc method: expected a non-empty name");
    if (strncmp(name, "rpc.", 4) == 0)
        return loom_err_set(err, LOOM_EINVAL,
                            "rpc method \"%s\": names starting with \"rpc.\" are reserved", name);
    if (!fn)
        return loom_err_set(err, LOOM_EINVAL, "rpc method \"%s\": expected a handler", name);
    if (find_method(d, name))
        return loom_err_set(err, LOOM_EEXIST, "rpc method \"%s\": already added", name);
    if (loom_vec_reserve((void **)&d->methods, &d->cap, d->nmethods + 1, sizeof *d->methods, 16))
        return loom_err_set(err, LOOM_ENOMEM, "rpc method \"%s\": out of memory", name);
    method_t *m = calloc(1, sizeof *m);
    if (!m || !(m->name = strdup(name)))
        goto nomem;
    m->fn = fn;
    m->ctx = ctx;
    m->flags = flags;
    if (param_names) {
        size_t n = 0;
        while (param_names[n])
            n++;
        m->params = calloc(n + 1, sizeof *m->params);
        if (!m->params)
            goto nomem;
        for (size_t i = 0; i < n; i++) {
            if (!(m->params[i] = strdup(param_names[i])))
                goto nomem;
            m->nparams = i + 1;
        }
    }
    d->methods[d->nmethods++] = m;
    return LOOM_OK;
nomem:
    method_free(m);
    return loom_err_set(err, LOOM_ENOMEM, "rpc method \"%s\": out of memory", name);
}

void loom_rpc_dispatcher_on_wait(loom_rpc_dispatcher_t *d, loom_rpc_dispatched_fn fn, void *ctx)
{
    d->on_wait = fn;
    d->on_wait_ctx = ctx;
}

void loom_rpc_dispatcher_set_guard(loom_rpc_dispatcher_t *d, loom_rpc_guard_fn fn, void *ctx)
{
    d->guard = fn;
    d->guard_ctx = ctx;
}

void loom_rpc_dispatcher_on_abandoned(loom_rpc_dispatcher_t *d, loom_rpc_abandoned_fn fn, void *ctx)
{
    d->on_abandoned = fn;
    d->on_abandoned_ctx = ctx;
}

bool loom_rpc_call_abandoned(const loom_rpc_call_t *call)
{
    const loom_rpc_dispatcher_t *d = call->req->d;
    return d->on_abandoned && d->on_abandoned(call->req->request_ctx, d->on_abandoned_ctx);
}

void loom_rpc_dispatcher_on_dispatched(loom_rpc_dispatcher_t *d, loom_rpc_dispatched_fn fn,
                                       void *ctx)
{
    d->on_dispatched = fn;
    d->on_dispatched_ctx = ctx;
}

size_t loom_rpc_dispatcher_in_flight(const loom_rpc_dispatcher_t *d)
{
    return atomic_load(&((loom_rpc_dispatcher_t *)d)->in_flight);
}

size_t loom_rpc_dispatcher_method_count(const loom_rpc_dispatcher_t *d)
{
    return d->nmethods;
}

const char *loom_rpc_dispatcher_method_name(const loom_rpc_dispatcher_t *d, size_t i)
{
    return i < d->nmethods ? d->methods[i]->name : NULL;
}

static int method_metrics(const method_t *m, loom_buf_t *out)
{
    int rc = LOOM_OK;
    loom_buf_t lbl = LOOM_BUF_INIT;
    rc = loom_buf_append_str(&lbl, "method=\"");
    if (rc == LOOM_OK)
        rc = rpc_prom_escape(&lbl, m->name);
    if (rc == LOOM_OK)
        rc = loom_buf_append_char(&lbl, '"');
    for (int o = 0; o < OUT_N && rc == LOOM_OK; o++) {
        uint64_t v = atomic_load_explicit(&((method_t *)m)->outcome[o], memory_order_relaxed);
        rc = loom_buf_appendf(out, "loom_rpc_calls_total{%s,outcome=\"%s\"} %llu\n", lbl.data,
                              outcome_name[o], (unsigned long long)v);
    }
    loom_buf_free(&lbl);
    return rc;
}

static int method_latency(const method_t *m, loom_buf_t *out)
{
    loom_buf_t lbl = LOOM_BUF_INIT;
    int rc = loom_buf_append_str(&lbl, "method=\"");
    if (rc == LOOM_OK)
        rc = rpc_prom_escape(&lbl, m->name);
    if (rc == LOOM_OK)
        rc = loom_buf_append_char(&lbl, '"');
    if (rc == LOOM_OK)
        rc = rpc_hist_format(&m->latency, "loom_rpc_call_duration_seconds", lbl.data, out);
    loom_buf_free(&lbl);
    return rc;
}

int loom_rpc_dispatcher_metrics(const loom_rpc_dispatcher_t *d, loom_buf_t *out)
{
    int rc = loom_buf_append_str(
        out, "# HELP loom_rpc_calls_total JSON-RPC calls by method and outcome.\n"
             "# TYPE loom_rpc_calls_total counter\n");
    for (size_t i = 0; i < d->nmethods && rc == LOOM_OK; i++)
        rc = method_metrics(d->methods[i], out);
    if (rc == LOOM_OK)
        rc = method_metrics(&d->unknown, out);
    if (rc == LOOM_OK)
        rc = loom_buf_append_str(
            out, "# HELP loom_rpc_call_duration_seconds Time from dispatch to completion of a "
                 "JSON-RPC call.\n"
                 "# TYPE loom_rpc_call_duration_seconds histogram\n");
    for (size_t i = 0; i < d->nmethods && rc == LOOM_OK; i++)
        rc = method_latency(d->methods[i], out);
    if (rc == LOOM_OK)
        rc = loom_buf_appendf(out,
                              "# HELP loom_rpc_calls_in_flight JSON-RPC calls dispatched and not "
                              "yet completed.\n"
                              "# TYPE loom_rpc_calls_in_flight gauge\n"
                              "loom_rpc_calls_in_flight %zu\n",
                              loom_rpc_dispatcher_in_flight(d));
    static const char *const kind[REQ_N] = {"single", "batch", "invalid"};
    if (rc == LOOM_OK)
        rc = loom_buf_append_str(out,
                                 "# HELP loom_rpc_requests_total JSON-RPC request bodies by kind.\n"
                                 "# TYPE loom_rpc_requests_total counter\n");
    for (int k = 0; k < REQ_N && rc == LOOM_OK; k++)
        rc = loom_buf_appendf(
            out, "loom_rpc_requests_total{kind=\"%s\"} %llu\n", kind[k],
            (unsigned long long)atomic_load(&((loom_rpc_dispatcher_t *)d)->requests[k]));
    return rc;
}

/* ------------------------------------------------------------- requests */

static void request_free(request_t *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->calls[i].text);
        if (r->calls[i].params_owned)
            json_decref(r->calls[i].params);
    }
    free(r->calls);
    json_decref(r->root);
    free(r);
}

static const char oom_response[] =
    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32603,\"message\":\"Internal "
    "error\"},\"id\":null}";

/* Emits a response body (or none) through done. Out of memory while
 * serialising turns into a bare -32603 that needs no allocation. */
static void emit(loom_rpc_done_fn done, void *done_ctx, const json_t *body)
{
    if (!body) {
        done(NULL, 0, done_ctx);
        return;
    }
    loom_buf_t b = LOOM_BUF_INIT;
    if (loom_json_dump(&b, body) == LOOM_OK && b.data)
        done(b.data, b.len, done_ctx);
    else
        done(oom_response, sizeof oom_response - 1, done_ctx);
    loom_buf_free(&b);
}

/* The response body from the calls' serialised responses: one text, or
 * "[a,b,...]" for a batch (nothing when every call was a notification). */
static void request_finish(request_t *r)
{
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = LOOM_OK;
    size_t answered = 0;
    for (size_t i = 0; i < r->n && rc == LOOM_OK; i++) {
        const char *text = r->calls[i].text;
        size_t len = r->calls[i].text_len;
        if (!text && !r->calls[i].id)
            continue; /* a notification */
        if (!text) {  /* its response could not be made: still answered */
            text = oom_response;
            len = sizeof oom_response - 1;
        }
        if (r->batch)
            rc = loom_buf_append(&b, answered ? "," : "[", 1);
        if (rc == LOOM_OK)
            rc = loom_buf_append(&b, text, len);
        answered++;
    }
    if (rc == LOOM_OK && r->batch && answered)
        rc = loom_buf_append(&b, "]", 1);
    loom_rpc_done_fn done = r->done;
    void *done_ctx = r->done_ctx;
    request_free(r);
    if (rc != LOOM_OK)
        done(oom_response, sizeof oom_response - 1, done_ctx);
    else if (!answered)
        done(NULL, 0, done_ctx);
    else
        done(b.data, b.len, done_ctx);
    loom_buf_free(&b);
}

static void request_release(request_t *r)
{
    if (atomic_fetch_sub(&r->remaining, 1) == 1)
        request_finish(r);
}

/* The error that replaces a response over the budget. */
static json_t *too_large_response(const loom_rpc_call_t *call, size_t len)
{
    size_t max = call->req->d->limits.max_response;
    char msg[320];
    snprintf(msg, sizeof msg,
             "response too large: this call's result (%zu bytes) would take the response past "
             "its limit of %zu bytes; narrow the query (a smaller limit, a state filter, fewer "
             "calls per batch) and page with next_cursor",
             len, max);
    return error_response(LOOM_RPC_RESPONSE_TOO_LARGE, msg,
                          json_pack("{s:I,s:I}", "size", (json_int_t)len, "limit", (json_int_t)max),
                          call->id);
}

/* Serialises a call's response into call->text, within the request's
 * response budget: a response that does not fit becomes the (small,
 * unbudgeted) too-large error. Owns response. */
static void call_serialise(loom_rpc_call_t *call, json_t *response)
{
    loom_buf_t b = LOOM_BUF_INIT;
    if (loom_json_dump(&b, response) != LOOM_OK || !b.data) {
        loom_buf_free(&b);
        call->text = strdup(oom_response);
        call->text_len = call->text ? sizeof oom_response - 1 : 0;
        json_decref(response);
        return;
    }
    json_decref(response);
    request_t *r = call->req;
    size_t max = r->d->limits.max_response;
    size_t before = atomic_fetch_add(&r->bytes, b.len + 1);
    if (before + b.len + 1 > max) {
        atomic_fetch_sub(&r->bytes, b.len + 1);
        atomic_store(&r->spent, true);
        size_t len = b.len;
        loom_buf_free(&b);
        json_t *err = too_large_response(call, len);
        if (!err || loom_json_dump(&b, err) != LOOM_OK || !b.data) {
            loom_buf_free(&b);
            loom_buf_append(&b, oom_response, sizeof oom_response - 1);
        }
        json_decref(err);
    }
    call->text_len = b.len;
    call->text = loom_buf_detach(&b);
}

/* Records the response of a call and releases it. response may be NULL
 * (notification). Owns response. */
static void call_finish(loom_rpc_call_t *call, json_t *response, int code)
{
    if (atomic_exchange(&call->completed, 1)) {
        loom_log_error("rpc call completed twice", "method=\"%s\"",
                       call->method ? call->method : "?");
        json_decref(response);
        return;
    }
    loom_rpc_dispatcher_t *d = call->req->d;
    method_t *m = call->m ? call->m : &d->unknown;
    atomic_fetch_add_explicit(&m->outcome[outcome_of(code)], 1, memory_order_relaxed);
    if (call->m) {
        rpc_hist_observe(&call->m->latency, loom_time_mono_ns() - call->start_ns);
        atomic_fetch_sub(&d->in_flight, 1);
    }
    if (response)
        call_serialise(call, response);
    request_release(call->req);
}

void loom_rpc_call_complete(loom_rpc_call_t *call, json_t *result)
{
    json_t *resp = NULL;
    if (call->id) {
        resp = result_response(result, call->id);
        if (!resp) /* out of memory: still answer */
            resp = error_response(LOOM_RPC_INTERNAL_ERROR, NULL, NULL, call->id);
    } else {
        json_decref(result);
    }
    call_finish(call, resp, 0);
}

void loom_rpc_call_fail(loom_rpc_call_t *call, int code, const char *message, json_t *data)
{
    json_t *resp = NULL;
    if (call->id) /* a notification gets no response, not even an error */
        resp = error_response(code, message, data, call->id);
    else
        json_decref(data);
    call_finish(call, resp, code);
}

void loom_rpc_call_failf(loom_rpc_call_t *call, int code, json_t *data, const char *fmt, ...)
{
    char msg[LOOM_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    loom_rpc_call_fail(call, code, msg, data);
}

void loom_rpc_call_invalid_param(loom_rpc_call_t *call, const char *param, const char *expected,
                                 const json_t *found)
{
    const char *what = loom_json_type_name(found); /* "nothing" for NULL */
    json_t *data = json_pack("{s:s,s:s,s:s}", "param", param, "expected", expected, "found", what);
    loom_rpc_call_failf(call, LOOM_RPC_INVALID_PARAMS, data,
                        "Invalid params: '%s': expected %s, found %s", param, expected, what);
}

void loom_rpc_call_fail_params(loom_rpc_call_t *call, const loom_err_t *err)
{
    const char *msg = err && err->msg[0] ? err->msg : "invalid parameters";
    loom_rpc_call_failf(call, LOOM_RPC_INVALID_PARAMS,
                        json_pack("{s:o}", "detail", safe_string(msg)), "Invalid params: %s", msg);
}

const char *loom_rpc_call_method(const loom_rpc_call_t *call)
{
    return call->method;
}

const json_t *loom_rpc_call_id(const loom_rpc_call_t *call)
{
    return call->id;
}

bool loom_rpc_call_is_notification(const loom_rpc_call_t *call)
{
    return call->id == NULL;
}

void *loom_rpc_call_request_ctx(const loom_rpc_call_t *call)
{
    return call->req->request_ctx;
}

size_t loom_rpc_call_index(const loom_rpc_call_t *call)
{
    return call->index;
}

size_t loom_rpc_call_batch_size(const loom_rpc_call_t *call)
{
    return call->req->n;
}

bool loom_rpc_call_waited_on(const loom_rpc_call_t *call)
{
    return call->req->waited_on;
}

size_t loom_rpc_call_budget(const loom_rpc_call_t *call)
{
    size_t used = atomic_load(&call->req->bytes);
    size_t max = call->req->d->limits.max_response;
    return used < max ? max - used : 0;
}

/* ------------------------------------------------------------ validation */

/* An element's id if it is usable in an error response, else NULL. */
static json_t *usable_id(json_t *elem)
{
    if (!json_is_object(elem))
        return NULL;
    json_t *id = json_object_get(elem, "id");
    if (id && (json_is_string(id) || json_is_number(id) || json_is_null(id)))
        return id;
    return NULL;
}

static void fail_invalid(loom_rpc_call_t *call, json_t *elem, const char *fmt, ...)
    LOOM_PRINTF(3, 4);

/* Completes an element that is not a valid Request object: -32600, with
 * the element's id when it has a usable one, else null. */
static void fail_invalid(loom_rpc_call_t *call, json_t *elem, const char *fmt, ...)
{
    /* "request" for a single request, "request[i]" inside a batch; built
     * only here, on the error path */
    char detail[512];
    int n = call->req->batch ? snprintf(detail, sizeof detail, "request[%zu]", call->index)
                             : snprintf(detail, sizeof detail, "request");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail + n, sizeof detail - (size_t)n, fmt, ap);
    va_end(ap);
    json_t *id = usable_id(elem);
    json_t *resp = error_response(LOOM_RPC_INVALID_REQUEST, NULL, safe_string(detail), id);
    call->id = NULL;
    call->method = NULL;
    call_finish(call, resp, LOOM_RPC_INVALID_REQUEST);
}

static const char *const member_names[] = {"jsonrpc", "method", "params", "id", NULL};

/* Validates a Request object. On failure completes the call and returns
 * false. */
static bool validate(loom_rpc_call_t *call, json_t *elem)
{
    if (!json_is_object(elem)) {
        fail_invalid(call, elem, ": expected an object, found %s", loom_json_type_name(elem));
        return false;
    }
    const char *key;
    json_t *val;
    json_object_foreach(elem, key, val)
    {
        bool known = false;
        for (int i = 0; member_names[i]; i++)
            known |= strcmp(key, member_names[i]) == 0;
        if (!known) {
            fail_invalid(call, elem,
                         ": unexpected member \"%s\" (a Request has jsonrpc, method, "
                         "params, id)",
                         key);
            return false;
        }
    }
    json_t *v = json_object_get(elem, "jsonrpc");
    if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0) {
        fail_invalid(call, elem, "/jsonrpc: expected \"2.0\", found %s",
                     v && json_is_string(v) ? json_string_value(v) : loom_json_type_name(v));
        return false;
    }
    json_t *m = json_object_get(elem, "method");
    if (!json_is_string(m)) {
        fail_invalid(call, elem, "/method: expected a string, found %s", loom_json_type_name(m));
        return false;
    }
    json_t *p = json_object_get(elem, "params");
    if (p && !json_is_object(p) && !json_is_array(p)) {
        fail_invalid(call, elem, "/params: expected an object or an array, found %s",
                     loom_json_type_name(p));
        return false;
    }
    json_t *id = json_object_get(elem, "id");
    if (id && !usable_id(elem)) {
        fail_invalid(call, elem, "/id: expected a string, a number or null, found %s",
                     loom_json_type_name(id));
        return false;
    }
    call->method = json_string_value(m);
    call->id = id;
    call->params = p;
    return true;
}

/* Applies the method's parameter rules. On failure completes the call with
 * -32602 and returns false. */
static bool shape_params(loom_rpc_call_t *call, method_t *m)
{
    json_t *p = call->params;
    if (m->flags & LOOM_RPC_NO_PARAMS) {
        if (p && ((json_is_array(p) && json_array_size(p)) ||
                  (json_is_object(p) && json_object_size(p)))) {
            loom_rpc_call_failf(call, LOOM_RPC_INVALID_PARAMS,
                                json_pack("{s:s}", "expected", "no parameters"),
                                "Invalid params: %s takes no parameters", m->name);
            return false;
        }
        return true;
    }
    if (!m->params || !p)
        return true;
    if (json_is_array(p)) {
        if (json_array_size(p) > m->nparams) {
            loom_rpc_call_failf(call, LOOM_RPC_INVALID_PARAMS,
                                json_pack("{s:s,s:i}", "expected",
                                          "at most this many positional "
                                          "parameters",
                                          "max", (json_int_t)m->nparams),
                                "Invalid params: %s takes at most %zu positional parameters, "
                                "found %zu",
                                m->name, m->nparams, json_array_size(p));
            return false;
        }
        json_t *obj = json_object();
        if (!obj) {
            loom_rpc_call_fail(call, LOOM_RPC_INTERNAL_ERROR, NULL, NULL);
            return false;
        }
        for (size_t i = 0; i < json_array_size(p); i++)
            json_object_set(obj, m->params[i], json_array_get(p, i));
        call->params = obj;
        call->params_owned = true;
        return true;
    }
    if (m->flags & LOOM_RPC_STRICT_PARAMS) {
        const char *key;
        json_t *val;
        json_object_foreach(p, key, val)
        {
            bool known = false;
            for (size_t i = 0; i < m->nparams; i++)
                known |= strcmp(key, m->params[i]) == 0;
            if (!known) {
                loom_buf_t names = LOOM_BUF_INIT;
                for (size_t i = 0; i < m->nparams; i++)
                    loom_buf_appendf(&names, "%s%s", i ? ", " : "", m->params[i]);
                loom_rpc_call_failf(
                    call, LOOM_RPC_INVALID_PARAMS,
                    json_pack("{s:s,s:s}", "param", key, "expected", "a known parameter"),
                    "Invalid params: '%s': unknown parameter of %s (expected "
                    "one of: %s)",
                    key, m->name, names.data ? names.data : "none");
                loom_buf_free(&names);
                return false;
            }
        }
    }
    return true;
}

static void run_call(loom_rpc_dispatcher_t *d, loom_rpc_call_t *call, json_t *elem)
{
    if (!validate(call, elem))
        return;
    method_t *m = find_method(d, call->method);
    if (!m) {
        loom_rpc_call_fail(call, LOOM_RPC_METHOD_NOT_FOUND, NULL,
                           json_pack("{s:s}", "method", call->method));
        return;
    }
    call->m = m;
    call->start_ns = loom_time_mono_ns();
    atomic_fetch_add(&d->in_flight, 1);
    if (call->index > 0 && loom_rpc_call_abandoned(call)) { /* nobody waits for the rest */
        loom_rpc_call_fail(call, LOOM_RPC_ABANDONED,
                           "not run: the client closed its connection or the server is stopping",
                           NULL);
        return;
    }
    if (atomic_load(&call->req->spent)) { /* bounded work per batch, not only bytes */
        loom_rpc_call_failf(call, LOOM_RPC_RESPONSE_TOO_LARGE,
                            json_pack("{s:I}", "limit", (json_int_t)d->limits.max_response),
                            "response too large: an earlier call of this batch already filled "
                            "the response's limit of %zu bytes, so this one was not run; send "
                            "fewer calls per batch or narrow the queries",
                            d->limits.max_response);
        return;
    }
    if (!shape_params(call, m))
        return;
    if (d->guard && !d->guard(call, m->name, call->params, d->guard_ctx)) {
        if (!atomic_load(&call->completed)) /* a guard that refuses answers */
            loom_rpc_call_fail(call, LOOM_RPC_INTERNAL_ERROR, NULL,
                               json_string("the call was refused without an answer"));
        return;
    }
    loom_rpc_status_t st = m->fn(call, call->params, m->ctx);
    if (st != LOOM_RPC_PENDING && !atomic_load(&call->completed)) {
        loom_log_error("rpc handler returned without completing its call", "method=\"%s\"",
                       m->name);
        loom_rpc_call_fail(call, LOOM_RPC_INTERNAL_ERROR, NULL,
                           json_string("the handler returned without a result"));
    }
}

/* Answers a request that could not be split into calls. */
static void whole_error(loom_rpc_dispatcher_t *d, int code, const char *detail,
                        loom_rpc_done_fn done, void *done_ctx)
{
    atomic_fetch_add(&d->requests[REQ_INVALID], 1);
    atomic_fetch_add_explicit(&d->unknown.outcome[outcome_of(code)], 1, memory_order_relaxed);
    json_t *resp = error_response(code, NULL, safe_string(detail), NULL);
    emit(done, done_ctx, resp);
    json_decref(resp);
}

static int dispatch(loom_rpc_dispatcher_t *d, const char *body, size_t len, void *request_ctx,
                    loom_rpc_done_fn done, void *done_ctx, bool waited_on)
{
    char detail[LOOM_ERR_MSG_MAX + 64];
    if (len > d->limits.max_body) {
        snprintf(detail, sizeof detail, "request body of %zu bytes exceeds the limit of %zu bytes",
                 len, d->limits.max_body);
        whole_error(d, LOOM_RPC_INVALID_REQUEST, detail, done, done_ctx);
        return LOOM_OK;
    }
    json_t *root = NULL;
    loom_err_t err;
    if (loom_json_parse(body ? body : "", len, "request", d->limits.max_depth, &root, &err) !=
        LOOM_OK) {
        /* Too deep (a limit, -32600), not JSON (-32700) or no memory to
         * read it (-32603)? loom_json_parse checks depth before parsing, so
         * deep input cost no recursion. */
        if (err.code == LOOM_ENOMEM) {
            whole_error(d, LOOM_RPC_INTERNAL_ERROR, err.msg, done, done_ctx);
        } else if (loom_json_too_deep(body ? body : "", len, d->limits.max_depth, NULL)) {
            snprintf(detail, sizeof detail, "request body nests deeper than %zu levels",
                     d->limits.max_depth);
            whole_error(d, LOOM_RPC_INVALID_REQUEST, detail, done, done_ctx);
        } else {
            whole_error(d, LOOM_RPC_PARSE_ERROR, err.msg, done, done_ctx);
        }
        return LOOM_OK;
    }
    size_t n = 1;
    bool batch = json_is_array(root);
    if (batch) {
        n = json_array_size(root);
        if (n == 0) {
            json_decref(root);
            whole_error(d, LOOM_RPC_INVALID_REQUEST, "request: expected a non-empty batch", done,
                        done_ctx);
            return LOOM_OK;
        }
        if (n > d->limits.max_batch) {
            json_decref(root);
            snprintf(detail, sizeof detail, "batch of %zu calls exceeds the limit of %zu calls", n,
                     d->limits.max_batch);
            whole_error(d, LOOM_RPC_INVALID_REQUEST, detail, done, done_ctx);
            return LOOM_OK;
        }
    }
    request_t *r = calloc(1, sizeof *r);
    loom_rpc_call_t *calls = calloc(n, sizeof *calls);
    if (!r || !calls) {
        free(r);
        free(calls);
        json_decref(root);
        return LOOM_ENOMEM;
    }
    r->d = d;
    r->root = root;
    r->batch = batch;
    r->n = n;
    r->calls = calls;
    r->request_ctx = request_ctx;
    r->done = done;
    r->done_ctx = done_ctx;
    r->waited_on = waited_on && d->on_wait;
    atomic_store(&r->remaining, n + 1);
    atomic_fetch_add(&d->requests[batch ? REQ_BATCH : REQ_SINGLE], 1);
    for (size_t i = 0; i < n; i++) {
        calls[i].req = r;
        calls[i].index = i;
    }
    for (size_t i = 0; i < n; i++) {
        run_call(d, &calls[i], batch ? json_array_get(root, i) : root);
    }
    if (d->on_dispatched)
        d->on_dispatched(request_ctx, d->on_dispatched_ctx);
    request_release(r); /* drop the guard; may finish the request now */
    return LOOM_OK;
}

int loom_rpc_dispatch(loom_rpc_dispatcher_t *d, const char *body, size_t len, void *request_ctx,
                      loom_rpc_done_fn done, void *done_ctx)
{
    return dispatch(d, body, len, request_ctx, done, done_ctx, false);
}

/* ----------------------------------------------------- synchronous entry */

/* The caller's thread sleeps on a semaphore until the completion posts it.
 * A semaphore rather than a mutex and condition variable: the poster takes
 * no lock, so the woken thread never wakes only to block again on a mutex
 * the poster still holds (two futex calls saved per request), and glibc's
 * sem_post is safe when the waiter destroys the semaphore as soon as
 * sem_wait returns. */
typedef struct waiter {
    sem_t posted;
    int rc;
    loom_buf_t *out;
} waiter_t;

static void waiter_done(const char *response, size_t len, void *ctx)
{
    waiter_t *w = ctx;
    if (response)
        w->rc = loom_buf_append(w->out, response, len);
    sem_post(&w->posted); /* last touch of w */
}

int loom_rpc_handle(loom_rpc_dispatcher_t *d, const char *body, size_t len, void *request_ctx,
                    loom_buf_t *response)
{
    waiter_t w = {.rc = LOOM_OK, .out = response};
    sem_init(&w.posted, 0, 0);
    int rc = dispatch(d, body, len, request_ctx, waiter_done, &w, true);
    if (rc == LOOM_OK) {
        if (d->on_wait)
            d->on_wait(request_ctx, d->on_wait_ctx);
        while (sem_wait(&w.posted) != 0) /* EINTR only */
            ;
        rc = w.rc;
    }
    sem_destroy(&w.posted);
    return rc;
}

/* ----------------------------------------------------------- client side */

json_t *loom_rpc_request_new(const char *method, const json_t *params, const json_t *id)
{
    json_t *r = json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", method);
    if (!r)
        return NULL;
    if (params && json_object_set(r, "params", (json_t *)params) != 0)
        goto fail;
    if (id && json_object_set(r, "id", (json_t *)id) != 0)
        goto fail;
    return r;
fail:
    json_decref(r);
    return NULL;
}

int loom_rpc_response_parse(const json_t *response, json_t **result, int *code, char *message,
                            size_t msglen, json_t **data, const json_t **id, loom_err_t *err)
{
    *result = NULL;
    *code = 0;
    if (message && msglen)
        message[0] = '\0';
    if (data)
        *data = NULL;
    if (!json_is_object(response))
        return loom_err_set(err, LOOM_EINVAL, "response: expected an object, found %s",
                            loom_json_type_name(response));
    json_t *v = json_object_get(response, "jsonrpc");
    if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0)
        return loom_err_set(err, LOOM_EINVAL, "response/jsonrpc: expected \"2.0\"");
    json_t *rid = json_object_get(response, "id");
    if (!rid)
        return loom_err_set(err, LOOM_EINVAL, "response/id: missing");
    if (id)
        *id = rid;
    json_t *res = json_object_get(response, "result");
    json_t *e = json_object_get(response, "error");
    if ((res == NULL) == (e == NULL))
        return loom_err_set(err, LOOM_EINVAL,
                            "response: expected exactly one of \"result\" and \"error\"");
    if (res) {
        *result = json_incref(res);
        return LOOM_OK;
    }
    json_t *c = json_object_get(e, "code");
    json_t *m = json_object_get(e, "message");
    if (!json_is_object(e) || !json_is_integer(c) || !json_is_string(m))
        return loom_err_set(err, LOOM_EINVAL,
                            "response/error: expected an object with an integer \"code\" and a "
                            "string \"message\"");
    json_int_t cv = json_integer_value(c);
    if (cv == 0 || cv < INT32_MIN || cv > INT32_MAX)
        return loom_err_set(err, LOOM_EINVAL, "response/error/code: %lld is not a valid code",
                            (long long)cv);
    *code = (int)cv;
    if (message && msglen)
        snprintf(message, msglen, "%s", json_string_value(m));
    if (data) {
        json_t *dv = json_object_get(e, "data");
        *data = dv ? json_incref(dv) : NULL;
    }
    return LOOM_OK;
}
