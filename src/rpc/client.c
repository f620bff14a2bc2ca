/* JSON-RPC client over HTTP, on libcurl.
 *
 * One client holds one CURL easy handle, so consecutive calls reuse one
 * keep-alive connection (TCP or Unix socket). Failures are sorted into what
 * a caller can act on: could not connect, timed out, the connection broke,
 * an HTTP status (401 ...), a malformed reply, or a JSON-RPC error (code,
 * message, data).
 *
 * Retries happen only for calls the caller marks LOOM_RPC_CALL_RETRY, i.e.
 * safe to repeat (reads; submissions carrying a submit_id idempotency key),
 * and only for failures where the call may not have reached the server or
 * the server asked to come back later (connect, timeout, broken connection,
 * HTTP 502/503/504). A JSON-RPC error or HTTP 4xx is an answer, never
 * retried. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "loom/rpc.h"

struct loom_rpc_client {
    CURL *h;
    char *url;       /* full http URL including the path */
    char *unix_path; /* or NULL */
    struct curl_slist *headers;
    loom_rpc_client_config_t cfg;
    json_int_t next_id;
    loom_buf_t resp;
    char curl_err[CURL_ERROR_SIZE];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

void loom_rpc_client_config_init(loom_rpc_client_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->connect_timeout_ms = 2000;
    cfg->timeout_ms = 30000;
    cfg->retries = 3;
    cfg->backoff_ms = 100;
}

void loom_rpc_client_error_init(loom_rpc_client_error_t *e)
{
    memset(e, 0, sizeof *e);
}

void loom_rpc_client_error_clear(loom_rpc_client_error_t *e)
{
    if (!e)
        return;
    json_decref(e->rpc_data);
    loom_rpc_client_error_init(e);
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    loom_buf_t *b = ud;
    size_t n = size * nmemb;
    return loom_buf_append(b, ptr, n) == LOOM_OK ? n : 0;
}

/* Splits url into the http URL to request and an optional Unix socket. */
static int parse_url(loom_rpc_client_t *c, const char *url, loom_err_t *err)
{
    if (strncmp(url, "unix:", 5) == 0) {
        const char *path = url + 5;
        if (!path[0])
            return loom_err_set(err, LOOM_EINVAL, "URL '%s': expected unix:PATH", url);
        c->unix_path = strdup(path);
        c->url = strdup("http://localhost/rpc");
    } else if (strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0) {
        const char *host = strstr(url, "://") + 3;
        if (!host[0] || host[0] == '/')
            return loom_err_set(err, LOOM_EINVAL, "URL '%s': expected a host after '://'", url);
        const char *slash = strchr(host, '/');
        loom_buf_t b = LOOM_BUF_INIT;
        if (!slash || strcmp(slash, "/") == 0) {
            loom_buf_append(&b, url, slash ? (size_t)(slash - url) : strlen(url));
            loom_buf_append_str(&b, "/rpc");
        } else {
            loom_buf_append_str(&b, url);
        }
        c->url = loom_buf_detach(&b);
    } else {
        return loom_err_set(err, LOOM_EINVAL, "URL '%s': expected http://HOST:PORT or unix:PATH",
                            url);
    }
    if (!c->url || (strncmp(url, "unix:", 5) == 0 && !c->unix_path))
        return loom_err_set(err, LOOM_ENOMEM, "rpc client: out of memory");
    return LOOM_OK;
}

int loom_rpc_client_new(const loom_rpc_client_config_t *cfg, loom_rpc_client_t **out,
                        loom_err_t *err)
{
    pthread_once(&curl_once, curl_init_once);
    loom_rpc_client_t *c = calloc(1, sizeof *c);
    if (!c)
        return loom_err_set(err, LOOM_ENOMEM, "rpc client: out of memory");
    loom_rpc_client_config_t def;
    loom_rpc_client_config_init(&def);
    c->cfg = cfg ? *cfg : def;
    if (c->cfg.connect_timeout_ms <= 0)
        c->cfg.connect_timeout_ms = def.connect_timeout_ms;
    if (c->cfg.timeout_ms <= 0)
        c->cfg.timeout_ms = def.timeout_ms;
    if (c->cfg.backoff_ms <= 0)
        c->cfg.backoff_ms = def.backoff_ms;
    const char *url = c->cfg.url;
    if (!url || !url[0])
        url = getenv("LOOM_URL");
    if (!url || !url[0])
        url = "http://127.0.0.1:7750";
    int rc = parse_url(c, url, err);
    if (rc != LOOM_OK)
        goto fail;
    c->cfg.url = NULL;
    c->cfg.token = NULL;
    c->h = curl_easy_init();
    if (!c->h) {
        rc = loom_err_set(err, LOOM_ENOMEM, "rpc client: curl_easy_init failed");
        goto fail;
    }
    c->headers = curl_slist_append(NULL, "Content-Type: application/json");
    c->headers = curl_slist_append(c->headers, "Accept: application/json");
    c->headers = curl_slist_append(c->headers, "Expect:"); /* no 100-continue round trip */
    if (cfg && cfg->token && cfg->token[0]) {
        char auth[LOOM_RPC_TOKEN_HEX + 64];
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", cfg->token);
        c->headers = curl_slist_append(c->headers, auth);
        explicit_bzero(auth, sizeof auth);
    }
    if (!c->headers) {
        rc = loom_err_set(err, LOOM_ENOMEM, "rpc client: out of memory");
        goto fail;
    }
    CURL *h = c->h;
    curl_easy_setopt(h, CURLOPT_URL, c->url);
    if (c->unix_path)
        curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->unix_path);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->cfg.connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->cfg.timeout_ms);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &c->resp);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->curl_err);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "loom/" LOOM_VERSION);
    *out = c;
    return LOOM_OK;
fail:
    loom_rpc_client_free(c);
    return rc;
}

int loom_rpc_client_set_authorization(loom_rpc_client_t *c, const char *value, loom_err_t *err)
{
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = h ? curl_slist_append(h, "Accept: application/json") : NULL;
    h = h ? curl_slist_append(h, "Expect:") : NULL;
    if (h && value) {
        loom_buf_t line = LOOM_BUF_INIT;
        if (loom_buf_appendf(&line, "Authorization: %s", value) == LOOM_OK)
            h = curl_slist_append(h, line.data);
        else
            h = NULL;
        explicit_bzero(line.data, line.len);
        loom_buf_free(&line);
    }
    if (!h)
        return loom_err_set(err, LOOM_ENOMEM, "rpc client: out of memory");
    curl_slist_free_all(c->headers);
    c->headers = h;
    curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->headers);
    return LOOM_OK;
}

void loom_rpc_client_free(loom_rpc_client_t *c)
{
    if (!c)
        return;
    if (c->h)
        curl_easy_cleanup(c->h);
    curl_slist_free_all(c->headers);
    free(c->url);
    free(c->unix_path);
    loom_buf_free(&c->resp);
    free(c);
}

static int fail(loom_rpc_client_error_t *e, loom_rpc_fail_kind_t kind, int code, const char *fmt,
                ...) LOOM_PRINTF(4, 5);

static int fail(loom_rpc_client_error_t *e, loom_rpc_fail_kind_t kind, int code, const char *fmt,
                ...)
{
    if (!e)
        return code;
    loom_rpc_client_error_clear(e);
    e->kind = kind;
    e->err.code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->err.msg, sizeof e->err.msg, fmt, ap);
    va_end(ap);
    return code;
}

static const char *endpoint(const loom_rpc_client_t *c)
{
    return c->unix_path ? c->unix_path : c->url;
}

/* One HTTP exchange. On LOOM_OK, *status and c->resp hold the reply. */
static int post_once(loom_rpc_client_t *c, const char *body, size_t len, long *status,
                     loom_rpc_client_error_t *e)
{
    loom_buf_reset(&c->resp);
    c->curl_err[0] = '\0';
    curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    CURLcode cc = curl_easy_perform(c->h);
    const char *why = c->curl_err[0] ? c->curl_err : curl_easy_strerror(cc);
    switch (cc) {
    case CURLE_OK: break;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return fail(e, LOOM_RPC_FAIL_CONNECT, LOOM_EUNAVAIL, "cannot connect to %s: %s",
                    endpoint(c), why);
    case CURLE_OPERATION_TIMEDOUT:
        return fail(e, LOOM_RPC_FAIL_TIMEOUT, LOOM_ETIMEDOUT, "%s: timed out: %s", endpoint(c),
                    why);
    default: return fail(e, LOOM_RPC_FAIL_TRANSPORT, LOOM_EIO, "%s: %s", endpoint(c), why);
    }
    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, status);
    return LOOM_OK;
}

bool loom_rpc_client_retryable(const loom_rpc_client_error_t *e)
{
    switch (e->kind) {
    case LOOM_RPC_FAIL_CONNECT:
    case LOOM_RPC_FAIL_TIMEOUT:
    case LOOM_RPC_FAIL_TRANSPORT: return true;
    case LOOM_RPC_FAIL_HTTP:
        return e->http_status == 502 || e->http_status == 503 || e->http_status == 504;
    default: return false;
    }
}

/* Turns a non-2xx reply into an HTTP failure, quoting the server's
 * explanation (the JSON-RPC error data, or the text body). */
static int http_failure(loom_rpc_client_t *c, long status, loom_rpc_client_error_t *e)
{
    char detail[512] = "";
    json_t *v = c->resp.len ? json_loadb(c->resp.data, c->resp.len, 0, NULL) : NULL;
    json_t *data = json_object_get(json_object_get(v, "error"), "data");
    if (json_is_string(data))
        snprintf(detail, sizeof detail, ": %s", json_string_value(data));
    else if (!v && c->resp.len)
        snprintf(detail, sizeof detail, ": %.*s", (int)strcspn(c->resp.data, "\n"), c->resp.data);
    json_decref(v);
    int code = LOOM_EIO;
    fail(e, LOOM_RPC_FAIL_HTTP, code, "%s: HTTP %ld%s", endpoint(c), status, detail);
    if (e)
        e->http_status = status;
    return code;
}

/* POSTs body with the retry policy; on LOOM_OK c->resp holds a 200 or 204
 * reply and *status says which. */
static int exchange(loom_rpc_client_t *c, const char *body, size_t len, unsigned flags,
                    long *status, loom_rpc_client_error_t *e)
{
    loom_rpc_client_error_t local;
    loom_rpc_client_error_init(&local);
    if (!e)
        e = &local;
    unsigned attempts = (flags & LOOM_RPC_CALL_RETRY) ? c->cfg.retries + 1 : 1;
    int64_t backoff = c->cfg.backoff_ms;
    int rc = LOOM_OK;
    for (unsigned a = 0; a < attempts; a++) {
        if (a > 0) {
            loom_log_debug("rpc retry", "attempt=%u backoff_ms=%lld reason=\"%s\"", a + 1,
                           (long long)backoff, e->err.msg);
            loom_time_sleep_until_ns(loom_time_mono_ns() + backoff * LOOM_NS_PER_MS);
            backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
        }
        rc = post_once(c, body, len, status, e);
        if (rc == LOOM_OK) {
            if (*status == 200 || *status == 204) {
                loom_rpc_client_error_clear(e);
                break;
            }
            rc = http_failure(c, *status, e);
        }
        if (!loom_rpc_client_retryable(e))
            break;
    }
    loom_rpc_client_error_clear(&local);
    return rc;
}

int loom_rpc_client_post_raw(loom_rpc_client_t *c, const char *body, size_t len, long *http_status,
                             loom_buf_t *response, loom_rpc_client_error_t *e)
{
    int rc = post_once(c, body, len, http_status, e);
    if (rc == LOOM_OK && c->resp.len)
        rc = loom_buf_append(response, c->resp.data, c->resp.len);
    return rc;
}

/* Serialises a request value (object or array; taken: freed here, NULL
 * when building it ran out of memory) and exchanges it: the reply is in
 * c->resp, its HTTP status in *status. */
static int send_json(loom_rpc_client_t *c, json_t *req, unsigned flags, long *status,
                     loom_rpc_client_error_t *e)
{
    loom_buf_t body = LOOM_BUF_INIT;
    int rc = LOOM_OK;
    *status = 0;
    if (!req)
        rc = fail(e, LOOM_RPC_FAIL_PROTOCOL, LOOM_ENOMEM, "cannot build the request");
    else if (loom_json_dump(&body, req) != LOOM_OK)
        rc = fail(e, LOOM_RPC_FAIL_PROTOCOL, LOOM_ENOMEM, "cannot serialise the request");
    json_decref(req);
    if (rc == LOOM_OK)
        rc = exchange(c, body.data, body.len, flags, status, e);
    loom_buf_free(&body);
    return rc;
}

static json_t *parse_reply(loom_rpc_client_t *c, loom_rpc_client_error_t *e, int *rc)
{
    loom_err_t perr;
    json_t *v = NULL;
    if (loom_json_parse(c->resp.data ? c->resp.data : "", c->resp.len, "response", 0, &v, &perr) !=
        LOOM_OK) {
        *rc = fail(e, LOOM_RPC_FAIL_PROTOCOL, LOOM_EIO, "%s: malformed reply: %s", endpoint(c),
                   perr.msg);
        return NULL;
    }
    *rc = LOOM_OK;
    return v;
}

/* Fills e from an error response object; returns LOOM_EINVAL. */
static int rpc_failure(const json_t *resp, loom_rpc_client_error_t *e)
{
    json_t *result = NULL, *data = NULL;
    int code = 0;
    char msg[LOOM_ERR_MSG_MAX];
    const json_t *id;
    loom_rpc_response_parse(resp, &result, &code, msg, sizeof msg, &data, &id, NULL);
    json_decref(result);
    fail(e, LOOM_RPC_FAIL_RPC, LOOM_EINVAL, "%s", msg);
    if (e) {
        e->rpc_code = code;
        e->http_status = 200;
        e->rpc_data = data;
    } else {
        json_decref(data);
    }
    return LOOM_EINVAL;
}

int loom_rpc_client_call(loom_rpc_client_t *c, const char *method, const json_t *params,
                         unsigned flags, json_t **result, loom_rpc_client_error_t *e)
{
    *result = NULL;
    json_t *id = json_integer(++c->next_id);
    long status;
    int rc = send_json(c, loom_rpc_request_new(method, params, id), flags, &status, e);
    if (rc == LOOM_OK && status != 200)
        rc = fail(e, LOOM_RPC_FAIL_PROTOCOL, LOOM_EIO, "%s: HTTP %ld without a response to %s",
                  endpoint(c), status, method);
    json_t *reply = rc == LOOM_OK ? parse_reply(c, e, &rc) : NULL;
    if (rc == LOOM_OK) {
        json_t *res = NULL, *data = NULL;
        int code = 0;
        char msg[LOOM_ERR_MSG_MAX];
        const json_t *rid = NULL;
        loom_err_t perr;
        if (loom_rpc_response_parse(reply, &res, &code, msg, sizeof msg, &data, &rid, &perr) !=
            LOOM_OK) {
            rc = fail(e, LOOM_RPC_FAIL_PROTOCOL, LOOM_EIO, "%s: %s", endpoint(c), perr.msg);
        } else if (code != 0) {
            json_decref(data);
            rc = rpc_failure(reply, e);
        } else if (!json_equal((json_t *)rid, id)) {
            json_decref(res);
            rc = fail(e, LOOM_RPC_FAIL_PROTOCOL, LOOM_EIO, "%s: response id does not match",
                      endpoint(c));
        } else {
            *result = res;
        }
    }
    json_decref(reply);
    json_decref(id);
    return rc;
}

int loom_rpc_client_notify(loom_rpc_client_t *c, const char *method, const json_t *params,
                           loom_rpc_client_error_t *e)
{
    long status;
    return send_json(c, loom_rpc_request_new(method, params, NULL), 0, &status, e);
}

void loom_rpc_batch_items_clear(loom_rpc_batch_item_t *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_decref(items[i].result);
        json_decref(items[i].data);
        free(items[i].message);
        items[i].result = NULL;
        items[i].data = NULL;
        items[i].message = NULL;
        items[i].code = 0;
    }
}

static void item_error(loom_rpc_batch_item_t *it, int code, const char *msg, json_t *data)
{
    it->code = code;
    it->message = strdup(msg);
    it->data = data;
}

int loom_rpc_client_batch(loom_rpc_client_t *c, loom_rpc_batch_item_t *items, size_t n,
                          unsigned flags, loom_rpc_client_error_t *e)
{
    if (n == 0)
        return fail(e, LOOM_RPC_FAIL_PROTOCOL, LOOM_EINVAL, "a batch needs at least one call");
    loom_rpc_batch_items_clear(items, n);
    json_int_t base = c->next_id + 1;
    c->next_id += (json_int_t)n;
    json_t *arr = json_array();
    int rc = arr ? LOOM_OK : fail(e, LOOM_RPC_FAIL_PROTOCOL, LOOM_ENOMEM, "out of memory");
    for (size_t i = 0; i < n && rc == LOOM_OK; i++) {
        json_t *id = json_integer(base + (json_int_t)i);
        json_t *req = loom_rpc_request_new(items[i].method, items[i].params, id);
        json_decref(id);
        if (!req || json_array_append_new(arr, req) != 0)
            rc = fail(e, LOOM_RPC_FAIL_PROTOCOL, LOOM_ENOMEM, "cannot build the request");
    }
    long status = 0;
    if (rc == LOOM_OK)
        rc = send_json(c, arr, flags, &status, e);
    else
        json_decref(arr);
    if (rc == LOOM_OK && status != 200)
        rc = fail(e, LOOM_RPC_FAIL_PROTOCOL, LOOM_EIO, "%s: HTTP %ld without a batch response",
                  endpoint(c), status);
    json_t *reply = rc == LOOM_OK ? parse_reply(c, e, &rc) : NULL;
    if (rc == LOOM_OK && json_is_object(reply) && json_object_get(reply, "error")) {
        rc = rpc_failure(reply, e); /* the batch as a whole was refused */
    } else if (rc == LOOM_OK && !json_is_array(reply)) {
        rc = fail(e, LOOM_RPC_FAIL_PROTOCOL, LOOM_EIO, "%s: expected an array in reply to a batch",
                  endpoint(c));
    } else if (rc == LOOM_OK) {
        size_t i;
        json_t *r;
        json_array_foreach(reply, i, r)
        {
            json_t *res = NULL, *data = NULL;
            int code = 0;
            char msg[LOOM_ERR_MSG_MAX];
            const json_t *rid = NULL;
            loom_err_t perr;
            if (loom_rpc_response_parse(r, &res, &code, msg, sizeof msg, &data, &rid, &perr) !=
                LOOM_OK) {
                rc = fail(e, LOOM_RPC_FAIL_PROTOCOL, LOOM_EIO, "%s: reply[%zu]: %s", endpoint(c), i,
                          perr.msg);
                break;
            }
            json_int_t k = json_is_integer(rid) ? json_integer_value(rid) - base : -1;
            if (k < 0 || (size_t)k >= n || items[k].result || items[k].code) {
                json_decref(res);
                json_decref(data);
                continue; /* unknown or repeated id: ignore */
            }
            if (code)
                item_error(&items[k], code, msg, data);
            else
                items[k].result = res;
        }
        for (i = 0; rc == LOOM_OK && i < n; i++)
            if (!items[i].result && !items[i].code)
                item_error(&items[i], LOOM_RPC_INTERNAL_ERROR, "no response for this call", NULL);
        if (rc != LOOM_OK)
            loom_rpc_batch_items_clear(items, n);
    }
    json_decref(reply);
    return rc;
}
