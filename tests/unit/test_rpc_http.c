/* The real HTTP server (libmicrohttpd) on an ephemeral TCP port and a Unix
 * socket, driven by loom's libcurl client and by raw sockets: auth, keep-
 * alive reuse, HTTP errors (401 404 405 413 415), metrics, deferred
 * completion through HTTP, slow-client timeouts, graceful stop, retries. */
#include <stdio.h>

#include "test_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "loom/rpc.h"

/* --------------------------------------------------------------- handlers */

static atomic_int handler_calls;

static loom_rpc_status_t h_sum(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&handler_calls, 1);
    json_int_t s = 0;
    size_t i;
    json_t *v;
    json_array_foreach(params, i, v) s += json_integer_value(v);
    loom_rpc_call_complete(call, json_integer(s));
    return LOOM_RPC_DONE;
}

static loom_rpc_status_t h_whoami(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)ctx;
    (void)params;
    const loom_rpc_transport_t *t = loom_rpc_call_request_ctx(call);
    loom_rpc_call_complete(call, json_pack("{s:b,s:s}", "unix", t->unix_socket, "peer", t->peer));
    return LOOM_RPC_DONE;
}

static loom_rpc_status_t h_fail(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)ctx;
    (void)params;
    loom_rpc_call_fail(call, -32004, "Job not found", json_pack("{s:i}", "id", 9));
    return LOOM_RPC_DONE;
}

/* A committer thread: completes queued calls together after a pause. */
typedef struct committer {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    loom_rpc_call_t *q[1024];
    size_t n;
    bool stop;
    int delay_ms;
    pthread_t tid;
    atomic_int commits;
} committer_t;

static committer_t com;

static void *committer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&com.mu);
    for (;;) {
        while (!com.stop && com.n == 0)
            pthread_cond_wait(&com.cv, &com.mu);
        if (com.n == 0 && com.stop)
            break;
        loom_rpc_call_t *calls[1024];
        size_t n = com.n;
        memcpy(calls, com.q, n * sizeof *calls);
        com.n = 0;
        int delay = com.delay_ms;
        pthread_mutex_unlock(&com.mu);
        usleep((useconds_t)delay * 1000);
        atomic_fetch_add(&com.commits, 1);
        for (size_t i = 0; i < n; i++)
            loom_rpc_call_complete(calls[i], json_string("committed"));
        pthread_mutex_lock(&com.mu);
    }
    pthread_mutex_unlock(&com.mu);
    return NULL;
}

static void set_delay(int ms)
{
    pthread_mutex_lock(&com.mu);
    com.delay_ms = ms;
    pthread_mutex_unlock(&com.mu);
}

static loom_rpc_status_t h_commit(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)ctx;
    (void)params;
    pthread_mutex_lock(&com.mu);
    com.q[com.n++] = call;
    pthread_cond_signal(&com.cv);
    pthread_mutex_unlock(&com.mu);
    return LOOM_RPC_PENDING;
}

static int metrics_source(loom_buf_t *out, void *ctx)
{
    return loom_buf_appendf(out, "# TYPE loom_test_queue_size gauge\nloom_test_queue_size %d\n",
                            *(int *)ctx);
}

/* ---------------------------------------------------------------- fixture */

typedef struct fx {
    char dir[64];
    char sock[128];
    char token[LOOM_RPC_TOKEN_HEX + 1];
    char url[64];
    char unix_url[160];
    loom_rpc_dispatcher_t *d;
    loom_rpc_server_t *s;
    uint16_t port;
    int queue_size;
} fx_t;

static fx_t F;

static int start_server(unsigned request_timeout, unsigned idle_timeout, const char *listen)
{
    loom_rpc_server_config_t cfg;
    loom_rpc_server_config_init(&cfg);
    cfg.listen = listen;
    cfg.socket_path = F.sock;
    cfg.token = F.token;
    if (request_timeout)
        cfg.request_timeout_s = request_timeout;
    if (idle_timeout)
        cfg.idle_timeout_s = idle_timeout;
    cfg.drain_timeout_s = 10;
    loom_err_t err;
    int rc = loom_rpc_server_start(&cfg, F.d, &F.s, &err);
    if (rc != LOOM_OK) {
        print_error("server start: %s\n", err.msg);
        return rc;
    }
    F.port = loom_rpc_server_port(F.s);
    snprintf(F.url, sizeof F.url, "http://127.0.0.1:%u", F.port);
    return LOOM_OK;
}

static int setup(void **state)
{
    (void)state;
    loom_log_set_level(LOOM_LOG_WARN);
    snprintf(F.dir, sizeof F.dir, "/tmp/loom-rpc-test.XXXXXX");
    assert_non_null(mkdtemp(F.dir));
    snprintf(F.sock, sizeof F.sock, "%s/loomd.sock", F.dir);
    snprintf(F.unix_url, sizeof F.unix_url, "unix:%s", F.sock);
    loom_err_t err;
    assert_int_equal(loom_rpc_token_ensure(F.dir, F.token, &err), LOOM_OK);
    assert_int_equal(loom_rpc_dispatcher_new(NULL, &F.d, &err), LOOM_OK);
    assert_int_equal(loom_rpc_dispatcher_add(F.d, "sum", h_sum, NULL, NULL, 0, &err), LOOM_OK);
    assert_int_equal(loom_rpc_dispatcher_add(F.d, "whoami", h_whoami, NULL, NULL, 0, &err),
                     LOOM_OK);
    assert_int_equal(loom_rpc_dispatcher_add(F.d, "fail", h_fail, NULL, NULL, 0, &err), LOOM_OK);
    assert_int_equal(loom_rpc_dispatcher_add(F.d, "commit", h_commit, NULL, NULL, 0, &err),
                     LOOM_OK);
    pthread_mutex_init(&com.mu, NULL);
    pthread_cond_init(&com.cv, NULL);
    set_delay(2);
    pthread_create(&com.tid, NULL, committer_main, NULL);
    assert_int_equal(start_server(2, 3, "127.0.0.1:0"), LOOM_OK);
    F.queue_size = 17;
    assert_int_equal(loom_rpc_server_add_metrics_source(F.s, metrics_source, &F.queue_size),
                     LOOM_OK);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    loom_rpc_server_stop(F.s);
    pthread_mutex_lock(&com.mu);
    com.stop = true;
    pthread_cond_signal(&com.cv);
    pthread_mutex_unlock(&com.mu);
    pthread_join(com.tid, NULL);
    loom_rpc_dispatcher_free(F.d);
    char path[160];
    snprintf(path, sizeof path, "%s/token", F.dir);
    unlink(path);
    rmdir(F.dir);
    return 0;
}

static loom_rpc_client_t *client(const char *url, const char *token)
{
    loom_rpc_client_config_t cfg;
    loom_rpc_client_config_init(&cfg);
    cfg.url = url;
    cfg.token = token;
    cfg.timeout_ms = 10000;
    loom_rpc_client_t *c;
    loom_err_t err;
    if (loom_rpc_client_new(&cfg, &c, &err) != LOOM_OK)
        fail_msg("client: %s", err.msg);
    return c;
}

/* ------------------------------------------------------------ raw sockets */

static int raw_connect_tcp(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

static int raw_connect_unix(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

static void raw_send(int fd, const char *data, size_t len)
{
    while (len) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n <= 0)
            return; /* the server may have closed early (413): read the reply */
        data += n;
        len -= (size_t)n;
    }
}

typedef struct reply {
    int status;
    char headers[4096];
    loom_buf_t body;
} reply_t;

/* Reads one HTTP response (Content-Length framed, or up to EOF). Returns
 * false if the connection closed before a status line arrived. */
static bool raw_read(int fd, reply_t *r)
{
    char buf[8192];
    size_t have = 0;
    memset(r->headers, 0, sizeof r->headers);
    loom_buf_init(&r->body);
    char *end = NULL;
    while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
        ssize_t n = recv(fd, buf + have, sizeof buf - have - 1, 0);
        if (n <= 0)
            return false;
        have += (size_t)n;
    }
    size_t hlen = (size_t)(end - buf) + 4;
    memcpy(r->headers, buf, hlen < sizeof r->headers ? hlen : sizeof r->headers - 1);
    r->status = atoi(buf + 9);
    const char *cl = strcasestr(r->headers, "\r\nContent-Length:");
    long want = cl ? atol(cl + 17) : -1;
    if (r->status == 204 || r->status == 304)
        want = 0; /* no body by definition */
    loom_buf_append(&r->body, buf + hlen, have - hlen);
    while (want < 0 || (long)r->body.len < want) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0)
            break;
        loom_buf_append(&r->body, buf, (size_t)n);
    }
    return true;
}

static reply_t raw_request(int fd, const char *req)
{
    raw_send(fd, req, strlen(req));
    reply_t r;
    assert_true(raw_read(fd, &r));
    return r;
}

static char *rpc_post(const char *body, bool auth)
{
    static char req[4096];
    char hdr[200] = "";
    if (auth)
        snprintf(hdr, sizeof hdr, "Authorization: Bearer %s\r\n", F.token);
    snprintf(req, sizeof req,
             "POST /rpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s"
             "Content-Length: %zu\r\n\r\n%s",
             hdr, strlen(body), body);
    return req;
}

/* True when the server closed the connection (EOF or reset) within
 * max_wait_ms; the bound only keeps a broken server from hanging the test. */
static bool closed_by_server(int fd, int max_wait_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, max_wait_ms) <= 0)
        return false;
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

static uint64_t metric(const char *name)
{
    loom_rpc_client_t *c = client(F.url, F.token);
    long status = 0;
    (void)c;
    int fd = raw_connect_tcp(F.port);
    char req[256];
    snprintf(req, sizeof req,
             "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", F.token);
    reply_t r = raw_request(fd, req);
    close(fd);
    status = r.status;
    assert_int_equal(status, 200);
    char key[128];
    snprintf(key, sizeof key, "\n%s", name); /* a sample line, not # HELP */
    const char *p = strstr(r.body.data, key);
    uint64_t v = p ? strtoull(p + strlen(key), NULL, 10) : UINT64_MAX;
    loom_buf_free(&r.body);
    loom_rpc_client_free(c);
    return v;
}

/* ------------------------------------------------------------------ tests */

static void client_calls_over_tcp(void **state)
{
    (void)state;
    loom_rpc_client_t *c = client(F.url, F.token);
    json_t *params = json_pack("[i,i,i]", 1, 2, 3);
    json_t *result = NULL;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    assert_int_equal(loom_rpc_client_call(c, "sum", params, 0, &result, &e), LOOM_OK);
    assert_int_equal(json_integer_value(result), 6);
    json_decref(result);
    /* a JSON-RPC error: code, message, data */
    assert_int_equal(loom_rpc_client_call(c, "fail", NULL, 0, &result, &e), LOOM_EINVAL);
    assert_int_equal(e.kind, LOOM_RPC_FAIL_RPC);
    assert_int_equal(e.rpc_code, -32004);
    assert_string_equal(e.err.msg, "Job not found");
    assert_int_equal(json_integer_value(json_object_get(e.rpc_data, "id")), 9);
    loom_rpc_client_error_clear(&e);
    assert_int_equal(loom_rpc_client_call(c, "nope", NULL, 0, &result, &e), LOOM_EINVAL);
    assert_int_equal(e.rpc_code, -32601);
    loom_rpc_client_error_clear(&e);
    /* transport tag for TCP */
    assert_int_equal(loom_rpc_client_call(c, "whoami", NULL, 0, &result, &e), LOOM_OK);
    assert_false(json_is_true(json_object_get(result, "unix")));
    assert_non_null(strstr(json_string_value(json_object_get(result, "peer")), "127.0.0.1:"));
    json_decref(result);
    /* a notification: 204, no error */
    int before = atomic_load(&handler_calls);
    assert_int_equal(loom_rpc_client_notify(c, "sum", params, &e), LOOM_OK);
    assert_int_equal(atomic_load(&handler_calls), before + 1);
    json_decref(params);
    loom_rpc_client_free(c);
}

static void client_batch(void **state)
{
    (void)state;
    loom_rpc_client_t *c = client(F.url, F.token);
    json_t *p1 = json_pack("[i,i]", 2, 2);
    loom_rpc_batch_item_t items[4] = {
        {.method = "sum", .params = p1},
        {.method = "fail"},
        {.method = "commit"},
        {.method = "missing"},
    };
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    assert_int_equal(loom_rpc_client_batch(c, items, 4, 0, &e), LOOM_OK);
    assert_int_equal(items[0].code, 0);
    assert_int_equal(json_integer_value(items[0].result), 4);
    assert_int_equal(items[1].code, -32004);
    assert_string_equal(items[1].message, "Job not found");
    assert_int_equal(json_integer_value(json_object_get(items[1].data, "id")), 9);
    assert_string_equal(json_string_value(items[2].result), "committed");
    assert_int_equal(items[3].code, -32601);
    loom_rpc_batch_items_clear(items, 4);
    json_decref(p1);
    loom_rpc_client_free(c);
}

static void unix_socket_needs_no_token(void **state)
{
    (void)state;
    struct stat st;
    assert_int_equal(stat(F.sock, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);
    loom_rpc_client_t *c = client(F.unix_url, NULL);
    json_t *result = NULL;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    assert_int_equal(loom_rpc_client_call(c, "whoami", NULL, 0, &result, &e), LOOM_OK);
    assert_true(json_is_true(json_object_get(result, "unix")));
    json_decref(result);
    loom_rpc_client_free(c);
    /* raw socket too, two requests on one connection */
    int fd = raw_connect_unix(F.sock);
    for (int i = 0; i < 2; i++) {
        reply_t r = raw_request(
            fd,
            rpc_post("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[5],\"id\":1}", false));
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body.data, "{\"jsonrpc\":\"2.0\",\"result\":5,\"id\":1}");
        loom_buf_free(&r.body);
    }
    close(fd);
}

static void auth_required_on_tcp(void **state)
{
    (void)state;
    int before = atomic_load(&handler_calls);
    json_t *params = json_pack("[i]", 1);
    json_t *result = NULL;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    /* no token */
    loom_rpc_client_t *c = client(F.url, NULL);
    assert_int_equal(loom_rpc_client_call(c, "sum", params, 0, &result, &e), LOOM_EIO);
    assert_int_equal(e.kind, LOOM_RPC_FAIL_HTTP);
    assert_int_equal(e.http_status, 401);
    assert_non_null(strstr(e.err.msg, "bearer token"));
    loom_rpc_client_free(c);
    /* wrong token (right length) */
    char wrong[LOOM_RPC_TOKEN_HEX + 1];
    memcpy(wrong, F.token, sizeof wrong);
    wrong[10] = wrong[10] == 'a' ? 'b' : 'a';
    c = client(F.url, wrong);
    assert_int_equal(loom_rpc_client_call(c, "sum", params, 0, &result, &e), LOOM_EIO);
    assert_int_equal(e.http_status, 401);
    loom_rpc_client_free(c);
    /* a prefix of the token, and the token with a suffix */
    char prefix[17];
    memcpy(prefix, F.token, 16);
    prefix[16] = 0;
    c = client(F.url, prefix);
    assert_int_equal(loom_rpc_client_call(c, "sum", params, 0, &result, &e), LOOM_EIO);
    assert_int_equal(e.http_status, 401);
    loom_rpc_client_free(c);
    /* raw: other schemes, notifications and batches are refused too */
    int fd = raw_connect_tcp(F.port);
    char req[512];
    snprintf(req, sizeof req,
             "POST /rpc HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\nContent-Length: "
             "2\r\n\r\n[]",
             F.token);
    reply_t r = raw_request(fd, req);
    assert_int_equal(r.status, 401);
    assert_non_null(strcasestr(r.headers, "WWW-Authenticate: Bearer"));
    json_t *body = json_loads(r.body.data, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(body, "error"), "code")),
                     -32600);
    json_decref(body);
    loom_buf_free(&r.body);
    close(fd);
    fd = raw_connect_tcp(F.port);
    r = raw_request(fd, rpc_post("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1]}", false));
    assert_int_equal(r.status, 401);
    loom_buf_free(&r.body);
    close(fd);
    /* /metrics needs the token; /healthz does not (documented) */
    fd = raw_connect_tcp(F.port);
    r = raw_request(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(r.status, 401);
    loom_buf_free(&r.body);
    r = raw_request(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.data, "ok\n");
    loom_buf_free(&r.body);
    close(fd);
    assert_int_equal(atomic_load(&handler_calls), before); /* nothing happened */
    json_decref(params);
}

static void keep_alive_reuse(void **state)
{
    (void)state;
    /* the client: 20 calls on one connection */
    loom_rpc_client_t *c = client(F.url, F.token);
    json_t *result;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    assert_int_equal(loom_rpc_client_call(c, "sum", NULL, 0, &result, &e), LOOM_OK);
    json_decref(result);
    uint64_t before = metric("loom_http_connections_total ");
    for (int i = 0; i < 20; i++) {
        assert_int_equal(loom_rpc_client_call(c, "sum", NULL, LOOM_RPC_CALL_RETRY, &result, &e),
                         LOOM_OK);
        json_decref(result);
    }
    /* one more connection: the metric() scrape itself */
    assert_int_equal(metric("loom_http_connections_total "), before + 1);
    loom_rpc_client_free(c);
    /* raw: pipelined-free sequential requests on one socket, incl. errors */
    int fd = raw_connect_tcp(F.port);
    for (int i = 0; i < 5; i++) {
        reply_t r = raw_request(
            fd,
            rpc_post("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1,1],\"id\":7}", true));
        assert_int_equal(r.status, 200);
        assert_null(strcasestr(r.headers, "Connection: close"));
        loom_buf_free(&r.body);
        r = raw_request(fd, rpc_post("{\"jsonrpc\":\"2.0\",\"method\":\"sum\"}", true));
        assert_int_equal(r.status, 204); /* notification: no content */
        assert_int_equal(r.body.len, 0);
        loom_buf_free(&r.body);
        r = raw_request(fd, rpc_post("{bad json", true));
        assert_int_equal(r.status, 200); /* JSON-RPC errors travel in 200 */
        assert_non_null(strstr(r.body.data, "-32700"));
        loom_buf_free(&r.body);
    }
    close(fd);
}

/* The server closes an idle keep-alive connection (3 s here); the client's
 * next call, not marked for retry, opens a new one and succeeds. */
static void client_survives_idle_close(void **state)
{
    (void)state;
    loom_rpc_client_t *c = client(F.url, F.token);
    json_t *result;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    assert_int_equal(loom_rpc_client_call(c, "sum", NULL, 0, &result, &e), LOOM_OK);
    json_decref(result);
    uint64_t timeouts = metric("loom_http_timeouts_total ");
    uint64_t accepted = metric("loom_http_connections_total ");
    /* wait until the server has closed it */
    for (int i = 0; i < 150 && metric("loom_http_timeouts_total ") == timeouts; i++)
        usleep(100 * 1000);
    assert_true(metric("loom_http_timeouts_total ") > timeouts);
    int rc = loom_rpc_client_call(c, "sum", NULL, 0, &result, &e);
    if (rc != LOOM_OK)
        fail_msg("call after idle close: %s", e.err.msg);
    json_decref(result);
    assert_true(metric("loom_http_connections_total ") > accepted + 1); /* a new one */
    loom_rpc_client_free(c);
}

static void http_errors(void **state)
{
    (void)state;
    char auth[128];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s\r\n", F.token);
    struct {
        const char *method, *path, *extra;
        int status;
    } cases[] = {
        {"GET", "/rpc", "", 405},
        {"PUT", "/rpc", "Content-Length: 0\r\n", 405},
        {"POST", "/healthz", "Content-Length: 0\r\n", 405},
        {"DELETE", "/metrics", "", 405},
        {"GET", "/", "", 404},
        {"GET", "/rpc/x", "", 404},
        {"POST", "/rpc", "Content-Type: text/plain\r\nContent-Length: 2\r\n", 415},
        {"POST", "/rpc", "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 2\r\n",
         415},
        {"GET", "/healthz?x=1", "", 200},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int fd = raw_connect_tcp(F.port);
        char req[512];
        snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: x\r\n%s%s\r\n%s", cases[i].method,
                 cases[i].path, auth, cases[i].extra,
                 strstr(cases[i].extra, "Length: 2") ? "[]" : "");
        reply_t r = raw_request(fd, req);
        if (r.status != cases[i].status)
            fail_msg("%s %s: expected %d, got %d", cases[i].method, cases[i].path, cases[i].status,
                     r.status);
        if (r.status == 405)
            assert_non_null(strcasestr(r.headers, "\r\nAllow: "));
        loom_buf_free(&r.body);
        close(fd);
    }
}

/* HEAD /healthz: the headers of GET, no body; the connection stays usable. */
static void head_healthz(void **state)
{
    (void)state;
    int fd = raw_connect_tcp(F.port);
    const char *req = "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    raw_send(fd, req, strlen(req));
    char buf[1024];
    size_t have = 0;
    while (!memmem(buf, have, "\r\n\r\n", 4)) {
        ssize_t n = recv(fd, buf + have, sizeof buf - have - 1, 0);
        assert_true(n > 0);
        have += (size_t)n;
    }
    buf[have] = '\0';
    assert_int_equal(atoi(buf + 9), 200);
    assert_non_null(strstr(buf, "\r\n\r\n"));
    assert_string_equal(strstr(buf, "\r\n\r\n"), "\r\n\r\n"); /* no body */
    reply_t r = raw_request(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.data, "ok\n");
    loom_buf_free(&r.body);
    close(fd);
}

static void body_too_large(void **state)
{
    (void)state;
    int before = atomic_load(&handler_calls);
    /* announced by Content-Length: answered before the body is read */
    int fd = raw_connect_tcp(F.port);
    char req[512];
    snprintf(req, sizeof req,
             "POST /rpc HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: "
             "application/json\r\nContent-Length: %d\r\n\r\n",
             F.token, 9 * 1024 * 1024);
    reply_t r = raw_request(fd, req); /* far over: answered before the body */
    assert_int_equal(r.status, 413);
    json_t *body = json_loads(r.body.data, 0, NULL);
    json_t *err = json_object_get(body, "error");
    assert_int_equal(json_integer_value(json_object_get(err, "code")), -32600);
    assert_non_null(strstr(json_string_value(json_object_get(err, "data")),
                           "exceeds the limit of 1048576 bytes"));
    assert_true(json_is_null(json_object_get(body, "id")));
    json_decref(body);
    loom_buf_free(&r.body);
    close(fd);
    /* chunked, discovered while reading */
    fd = raw_connect_tcp(F.port);
    snprintf(req, sizeof req,
             "POST /rpc HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: "
             "application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
             F.token);
    raw_send(fd, req, strlen(req));
    char *chunk = malloc(65536 + 16);
    int hl = sprintf(chunk, "10000\r\n");
    memset(chunk + hl, ' ', 65536);
    memcpy(chunk + hl + 65536, "\r\n", 2);
    for (int i = 0; i < 17; i++)
        raw_send(fd, chunk, (size_t)hl + 65536 + 2);
    raw_send(fd, "0\r\n\r\n", 5);
    free(chunk);
    assert_true(raw_read(fd, &r));
    assert_int_equal(r.status, 413);
    loom_buf_free(&r.body);
    close(fd);
    /* through the client: an HTTP failure with the server's reason */
    loom_rpc_client_t *c = client(F.url, F.token);
    loom_buf_t big = LOOM_BUF_INIT;
    loom_buf_append_str(&big, "{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[\"");
    for (int i = 0; i < 1100000 / 64; i++)
        loom_buf_append_str(&big,
                            "0123456789012345678901234567890123456789012345678901234567890123");
    loom_buf_append_str(&big, "\"],\"id\":1}");
    long status = 0;
    loom_buf_t out = LOOM_BUF_INIT;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    /* a little over: the body is read and dropped, then 413 */
    assert_int_equal(loom_rpc_client_post_raw(c, big.data, big.len, &status, &out, &e), LOOM_OK);
    assert_int_equal(status, 413);
    assert_non_null(strstr(out.data, "exceeds the limit of 1048576 bytes"));
    /* the same connection still works */
    loom_buf_reset(&out);
    const char *ok = "{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":1}";
    assert_int_equal(loom_rpc_client_post_raw(c, ok, strlen(ok), &status, &out, &e), LOOM_OK);
    assert_int_equal(status, 200);
    /* and loom_rpc_client_call reports it as an HTTP failure with the reason */
    loom_buf_reset(&out);
    json_t *huge = json_pack("[s]", big.data);
    json_t *result = NULL;
    assert_int_equal(loom_rpc_client_call(c, "sum", huge, 0, &result, &e), LOOM_EIO);
    assert_int_equal(e.kind, LOOM_RPC_FAIL_HTTP);
    assert_int_equal(e.http_status, 413);
    assert_non_null(strstr(e.err.msg, "HTTP 413: request body of"));
    json_decref(huge);
    loom_buf_free(&out);
    loom_buf_free(&big);
    loom_rpc_client_free(c);
    /* only the one good call above ran a handler */
    assert_int_equal(atomic_load(&handler_calls), before + 1);
}

static void metrics_exposition(void **state)
{
    (void)state;
    loom_rpc_client_t *c = client(F.url, F.token);
    json_t *result;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    assert_int_equal(loom_rpc_client_call(c, "sum", NULL, 0, &result, &e), LOOM_OK);
    json_decref(result);
    loom_rpc_client_free(c);
    int fd = raw_connect_tcp(F.port);
    char req[256];
    snprintf(req, sizeof req,
             "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", F.token);
    reply_t r = raw_request(fd, req);
    close(fd);
    assert_int_equal(r.status, 200);
    assert_non_null(strcasestr(r.headers, "Content-Type: text/plain; version=0.0.4"));
    const char *want[] = {
        "# TYPE loom_http_requests_total counter\n",
        "loom_http_requests_total{path=\"/rpc\",code=\"200\"} ",
        "# TYPE loom_http_request_duration_seconds histogram\n",
        "loom_http_request_duration_seconds_bucket{path=\"/rpc\",le=\"+Inf\"} ",
        "\nloom_http_requests_in_flight ",
        "# TYPE loom_http_connections gauge\n",
        "# TYPE loom_rpc_calls_total counter\n",
        "loom_rpc_calls_total{method=\"sum\",outcome=\"ok\"} ",
        "loom_rpc_call_duration_seconds_count{method=\"sum\"} ",
        "loom_test_queue_size 17\n", /* the added source */
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(r.body.data, want[i]))
            fail_msg("metrics lack '%s'", want[i]);
    /* every sample line is NAME{...} VALUE or NAME VALUE */
    char *save = NULL;
    for (char *line = strtok_r(r.body.data, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#')
            continue;
        char *sp = strrchr(line, ' ');
        assert_non_null(sp);
        char *endp;
        strtod(sp + 1, &endp);
        if (*endp != '\0')
            fail_msg("bad sample line: %s", line);
    }
    loom_buf_free(&r.body);
}

/* Concurrent clients whose calls a committer completes together (what the
 * daemon's group commit does). */
static void *commit_client(void *arg)
{
    (void)arg;
    loom_rpc_client_t *c = client(F.url, F.token);
    for (int i = 0; i < 25; i++) {
        json_t *result = NULL;
        loom_rpc_client_error_t e;
        loom_rpc_client_error_init(&e);
        if (loom_rpc_client_call(c, "commit", NULL, 0, &result, &e) != LOOM_OK)
            fail_msg("commit: %s", e.err.msg);
        assert_string_equal(json_string_value(result), "committed");
        json_decref(result);
    }
    loom_rpc_client_free(c);
    return NULL;
}

static void deferred_over_http(void **state)
{
    (void)state;
    set_delay(5);
    int commits0 = atomic_load(&com.commits);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, commit_client, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    int commits = atomic_load(&com.commits) - commits0;
    /* 100 calls, fewer commits than calls is likely but not guaranteed;
     * what must hold is that every call got its answer (checked above). */
    assert_true(commits >= 1 && commits <= 100);
    set_delay(2);
}

static void slow_clients_time_out(void **state)
{
    (void)state;
    /* the request line and headers trickle in: closed after request_timeout
     * (2 s here) although every byte resets MHD's inactivity timer */
    int slow = raw_connect_tcp(F.port);
    const char *req = "POST /rpc HTTP/1.1\r\nHost: x\r\nX-Pad: "
                      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    bool closed = false;
    for (size_t i = 0; req[i] && !closed; i++) {
        send(slow, req + i, 1, MSG_NOSIGNAL);
        closed = closed_by_server(slow, 200);
    }
    assert_true(closed); /* sending it all would take ~20 s */
    close(slow);
    /* a slow body after complete headers */
    slow = raw_connect_tcp(F.port);
    char hdr[256];
    snprintf(hdr, sizeof hdr,
             "POST /rpc HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: "
             "200\r\n\r\n",
             F.token);
    raw_send(slow, hdr, strlen(hdr));
    closed = false;
    for (int i = 0; i < 200 && !closed; i++) {
        send(slow, " ", 1, MSG_NOSIGNAL);
        closed = closed_by_server(slow, 200);
    }
    assert_true(closed);
    close(slow);
    /* an idle keep-alive connection: closed after idle_timeout (3 s) */
    int idle = raw_connect_tcp(F.port);
    reply_t r = raw_request(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(r.status, 200);
    loom_buf_free(&r.body);
    assert_true(closed_by_server(idle, 15000));
    close(idle);
    /* meanwhile normal clients were served; the timeouts were counted */
    assert_true(metric("loom_http_timeouts_total ") >= 2);
}

/* While slow clients hold connections, others still get answers. */
static void slow_clients_do_not_block_others(void **state)
{
    (void)state;
    int slow[8];
    for (int i = 0; i < 8; i++) {
        slow[i] = raw_connect_tcp(F.port);
        send(slow[i], "POST /rpc HTTP/1.1\r\n", 20, MSG_NOSIGNAL);
    }
    loom_rpc_client_t *c = client(F.url, F.token);
    json_t *result;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    assert_int_equal(loom_rpc_client_call(c, "sum", NULL, 0, &result, &e), LOOM_OK);
    json_decref(result);
    loom_rpc_client_free(c);
    for (int i = 0; i < 8; i++)
        close(slow[i]);
}

/* A call the server itself takes longer than idle_timeout (3 s) to answer
 * is not cut off: the wait is ours, not the client's. */
static void slow_handler_is_not_a_slow_client(void **state)
{
    (void)state;
    set_delay(4000);
    loom_rpc_client_t *c = client(F.url, F.token);
    json_t *result = NULL;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    int rc = loom_rpc_client_call(c, "commit", NULL, 0, &result, &e);
    set_delay(2);
    if (rc != LOOM_OK)
        fail_msg("slow call: %s", e.err.msg);
    assert_string_equal(json_string_value(result), "committed");
    json_decref(result);
    /* and the connection is still good for the next call */
    assert_int_equal(loom_rpc_client_call(c, "sum", NULL, 0, &result, &e), LOOM_OK);
    json_decref(result);
    loom_rpc_client_free(c);
}

/* The client's total timeout: a call the server answers too late fails as
 * TIMEOUT (LOOM_ETIMEDOUT), and the client works again afterwards. */
static void client_total_timeout(void **state)
{
    (void)state;
    set_delay(1500);
    loom_rpc_client_config_t cfg;
    loom_rpc_client_config_init(&cfg);
    cfg.url = F.url;
    cfg.token = F.token;
    cfg.timeout_ms = 300;
    loom_rpc_client_t *c;
    loom_err_t err;
    assert_int_equal(loom_rpc_client_new(&cfg, &c, &err), LOOM_OK);
    json_t *result = NULL;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    assert_int_equal(loom_rpc_client_call(c, "commit", NULL, 0, &result, &e), LOOM_ETIMEDOUT);
    assert_int_equal(e.kind, LOOM_RPC_FAIL_TIMEOUT);
    assert_non_null(strstr(e.err.msg, "timed out"));
    set_delay(2);
    /* let the late commit finish, then the same client goes on */
    while (loom_rpc_dispatcher_in_flight(F.d) > 0)
        usleep(10 * 1000);
    assert_int_equal(loom_rpc_client_call(c, "sum", NULL, 0, &result, &e), LOOM_OK);
    json_decref(result);
    loom_rpc_client_free(c);
}

/* Over the connection limit, new connections are closed at once while the
 * ones admitted (authenticated, so never evicted) keep working. */
static void connection_limit(void **state)
{
    (void)state;
    loom_rpc_server_config_t cfg;
    loom_rpc_server_config_init(&cfg);
    cfg.listen = "127.0.0.1:0";
    cfg.token = F.token;
    cfg.max_connections = 3;
    cfg.reserved_connections = 0; /* the hard limit alone */
    loom_rpc_server_t *s2;
    loom_err_t err;
    assert_int_equal(loom_rpc_server_start(&cfg, F.d, &s2, &err), LOOM_OK);
    uint16_t port = loom_rpc_server_port(s2);
    int fds[3];
    char authed[256];
    snprintf(authed, sizeof authed,
             "GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", F.token);
    for (int i = 0; i < 3; i++) {
        fds[i] = raw_connect_tcp(port);
        reply_t r = raw_request(fds[i], authed);
        assert_int_equal(r.status, 200);
        loom_buf_free(&r.body);
    }
    int extra = raw_connect_tcp(port); /* the kernel accepts; MHD closes it */
    raw_send(extra, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 35);
    reply_t r;
    assert_false(raw_read(extra, &r));
    close(extra);
    r = raw_request(fds[0], authed);
    assert_int_equal(r.status, 200);
    loom_buf_free(&r.body);
    for (int i = 0; i < 3; i++)
        close(fds[i]);
    loom_rpc_server_stop(s2);
}

/* IPv6 loopback, where the machine has it. */
static void ipv6_listen(void **state)
{
    (void)state;
    int probe = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 sa6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    bool have = probe >= 0 && bind(probe, (struct sockaddr *)&sa6, sizeof sa6) == 0;
    if (probe >= 0)
        close(probe);
    if (!have) {
        print_message("no IPv6 loopback here; skipped\n");
        skip();
    }
    loom_rpc_server_config_t cfg;
    loom_rpc_server_config_init(&cfg);
    cfg.listen = "[::1]:0";
    cfg.token = F.token;
    loom_rpc_server_t *s2;
    loom_err_t err;
    assert_int_equal(loom_rpc_server_start(&cfg, F.d, &s2, &err), LOOM_OK);
    char url[64];
    snprintf(url, sizeof url, "http://[::1]:%u", loom_rpc_server_port(s2));
    loom_rpc_client_t *c = client(url, F.token);
    json_t *result;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    assert_int_equal(loom_rpc_client_call(c, "whoami", NULL, 0, &result, &e), LOOM_OK);
    assert_non_null(strstr(json_string_value(json_object_get(result, "peer")), "[::1]:"));
    json_decref(result);
    loom_rpc_client_free(c);
    loom_rpc_server_stop(s2);
}

static void connect_failures(void **state)
{
    (void)state;
    json_t *result;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    char url[200];
    snprintf(url, sizeof url, "unix:%s/nonexistent.sock", F.dir);
    loom_rpc_client_t *c = client(url, NULL);
    assert_int_equal(loom_rpc_client_call(c, "sum", NULL, 0, &result, &e), LOOM_EUNAVAIL);
    assert_int_equal(e.kind, LOOM_RPC_FAIL_CONNECT);
    assert_non_null(strstr(e.err.msg, "nonexistent.sock"));
    loom_rpc_client_free(c);
    /* a closed TCP port: bind one, note it, close it */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    bind(fd, (struct sockaddr *)&sa, sizeof sa);
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    close(fd);
    snprintf(url, sizeof url, "http://127.0.0.1:%u", ntohs(sa.sin_port));
    c = client(url, F.token);
    assert_int_equal(loom_rpc_client_call(c, "sum", NULL, 0, &result, &e), LOOM_EUNAVAIL);
    assert_int_equal(e.kind, LOOM_RPC_FAIL_CONNECT);
    loom_rpc_client_free(c);
    /* malformed URLs */
    loom_rpc_client_config_t cfg;
    loom_rpc_client_config_init(&cfg);
    loom_err_t err;
    const char *bad[] = {"ftp://x", "unix:", "http://", "127.0.0.1:7750"};
    for (size_t i = 0; i < 4; i++) {
        cfg.url = bad[i];
        assert_int_equal(loom_rpc_client_new(&cfg, &c, &err), LOOM_EINVAL);
        assert_non_null(strstr(err.msg, bad[i]));
    }
}

/* Retries: a marked call survives the server being down for a moment; an
 * unmarked one fails at once. */
static void *restart_later(void *arg)
{
    char *listen = arg;
    usleep(400 * 1000);
    assert_int_equal(start_server(2, 3, listen), LOOM_OK);
    return NULL;
}

static void retries_only_when_marked(void **state)
{
    (void)state;
    char listen[32];
    snprintf(listen, sizeof listen, "127.0.0.1:%u", F.port);
    loom_rpc_server_stop(F.s);
    F.s = NULL;
    loom_rpc_client_config_t cfg;
    loom_rpc_client_config_init(&cfg);
    cfg.url = F.url;
    cfg.token = F.token;
    cfg.retries = 6;
    cfg.backoff_ms = 100; /* 100+200+400+800+... >> 400 ms */
    loom_rpc_client_t *c;
    loom_err_t err;
    assert_int_equal(loom_rpc_client_new(&cfg, &c, &err), LOOM_OK);
    json_t *result;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    assert_int_equal(loom_rpc_client_call(c, "sum", NULL, 0, &result, &e), LOOM_EUNAVAIL);
    pthread_t t;
    pthread_create(&t, NULL, restart_later, listen);
    int rc = loom_rpc_client_call(c, "sum", NULL, LOOM_RPC_CALL_RETRY, &result, &e);
    pthread_join(t, NULL);
    if (rc != LOOM_OK)
        fail_msg("retry: %s", e.err.msg);
    json_decref(result);
    loom_rpc_client_free(c);
    assert_true(F.port == (uint16_t)atoi(strrchr(listen, ':') + 1));
}

/* Graceful stop: a request in flight finishes; then nothing listens. */
static void *call_slow(void *arg)
{
    int *rc = arg;
    loom_rpc_client_t *c = client(F.unix_url, NULL);
    json_t *result = NULL;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    *rc = loom_rpc_client_call(c, "commit", NULL, 0, &result, &e);
    if (*rc == LOOM_OK && strcmp(json_string_value(result), "committed") != 0)
        *rc = -100;
    json_decref(result);
    loom_rpc_client_free(c);
    return NULL;
}

static void *stop_server(void *arg)
{
    (void)arg;
    loom_rpc_server_stop(F.s); /* returns after the call in flight was answered */
    return NULL;
}

static void graceful_stop(void **state)
{
    (void)state;
    /* a keep-alive connection opened before the stop */
    int fd = raw_connect_tcp(F.port);
    reply_t r = raw_request(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(r.status, 200);
    loom_buf_free(&r.body);
    set_delay(1000);
    int rc = -1;
    pthread_t t, stopper;
    pthread_create(&t, NULL, call_slow, &rc);
    while (loom_rpc_dispatcher_in_flight(F.d) == 0)
        usleep(1000);
    pthread_create(&stopper, NULL, stop_server, NULL);
    /* while draining: no new connections; the open one hears 503 and close */
    struct stat st;
    while (stat(F.sock, &st) == 0) /* the socket file goes first */
        usleep(1000);
    r = raw_request(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(r.status, 503);
    assert_non_null(strcasestr(r.headers, "Connection: close"));
    assert_string_equal(r.body.data, "stopping\n");
    loom_buf_free(&r.body);
    close(fd);
    pthread_join(stopper, NULL);
    F.s = NULL;
    pthread_join(t, NULL);
    assert_int_equal(rc, LOOM_OK); /* the call in flight was answered */
    set_delay(2);
    loom_rpc_client_t *c = client(F.url, F.token);
    json_t *result;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    assert_int_equal(loom_rpc_client_call(c, "sum", NULL, 0, &result, &e), LOOM_EUNAVAIL);
    loom_rpc_client_free(c);
    /* restart for teardown */
    assert_int_equal(start_server(2, 3, "127.0.0.1:0"), LOOM_OK);
}

static void socket_path_rules(void **state)
{
    (void)state;
    loom_rpc_server_config_t cfg;
    loom_rpc_server_config_init(&cfg);
    cfg.listen = NULL;
    loom_err_t err;
    loom_rpc_server_t *s2;
    /* a live server's socket is not taken over */
    cfg.socket_path = F.sock;
    assert_int_equal(loom_rpc_server_start(&cfg, F.d, &s2, &err), LOOM_EEXIST);
    assert_non_null(strstr(err.msg, "another server"));
    /* a regular file is not replaced */
    char path[160];
    snprintf(path, sizeof path, "%s/file", F.dir);
    FILE *f = fopen(path, "w");
    fclose(f);
    cfg.socket_path = path;
    assert_int_equal(loom_rpc_server_start(&cfg, F.d, &s2, &err), LOOM_EEXIST);
    unlink(path);
    /* TCP without a token is refused; bad addresses are named */
    cfg.socket_path = NULL;
    cfg.listen = "127.0.0.1:0";
    assert_int_equal(loom_rpc_server_start(&cfg, F.d, &s2, &err), LOOM_EINVAL);
    cfg.token = F.token;
    const char *bad[] = {"nohost", "127.0.0.1:99999", "127.0.0.1:x", "[::1:5"};
    for (size_t i = 0; i < 4; i++) {
        cfg.listen = bad[i];
        assert_int_not_equal(loom_rpc_server_start(&cfg, F.d, &s2, &err), LOOM_OK);
        assert_non_null(strstr(err.msg, bad[i]));
    }
    /* a port in use */
    char inuse[32];
    snprintf(inuse, sizeof inuse, "127.0.0.1:%u", F.port);
    cfg.listen = inuse;
    assert_int_equal(loom_rpc_server_start(&cfg, F.d, &s2, &err), LOOM_EEXIST);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(client_calls_over_tcp),
        cmocka_unit_test(client_batch),
        cmocka_unit_test(unix_socket_needs_no_token),
        cmocka_unit_test(auth_required_on_tcp),
        cmocka_unit_test(keep_alive_reuse),
        cmocka_unit_test(client_survives_idle_close),
        cmocka_unit_test(http_errors),
        cmocka_unit_test(head_healthz),
        cmocka_unit_test(body_too_large),
        cmocka_unit_test(metrics_exposition),
        cmocka_unit_test(deferred_over_http),
        cmocka_unit_test(slow_clients_do_not_block_others),
        cmocka_unit_test(slow_clients_time_out),
        cmocka_unit_test(slow_handler_is_not_a_slow_client),
        cmocka_unit_test(client_total_timeout),
        cmocka_unit_test(connection_limit),
        cmocka_unit_test(ipv6_listen),
        cmocka_unit_test(connect_failures),
        cmocka_unit_test(socket_path_rules),
        cmocka_unit_test(retries_only_when_marked),
        cmocka_unit_test(graceful_stop),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
