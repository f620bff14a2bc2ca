/* loomd's dashboard (src/daemon/dash.c, dash_feed.c) behind a real RPC
 * server on TCP, spoken to over raw sockets: nothing without a session,
 * single-use codes, the cookie's attributes, CSRF, the allowed methods, the
 * event stream's numbering, resumption and its bound on readers. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/dash.h"
#include "rmtree.h"

static struct {
    char dir[64];
    char token[LOOM_RPC_TOKEN_HEX + 1];
    loom_store_t *store;
    loom_rpc_dispatcher_t *d;
    loomd_dash_t *dash;
    loom_rpc_server_t *s;
    uint16_t port;
    loomd_info_t info;
} F;

static int setup(void **state)
{
    (void)state;
    loom_log_set_level(LOOM_LOG_WARN);
    snprintf(F.dir, sizeof F.dir, "/tmp/loom-dash-test.XXXXXX");
    assert_non_null(mkdtemp(F.dir));
    char db[128];
    snprintf(db, sizeof db, "%s/loom.db", F.dir);
    loom_err_t err;
    assert_int_equal(loom_rpc_token_ensure(F.dir, F.token, &err), LOOM_OK);
    assert_int_equal(loom_store_open(db, NULL, &F.store, &err), LOOM_OK);
    assert_int_equal(loom_rpc_dispatcher_new(NULL, &F.d, &err), LOOM_OK);
    assert_int_equal(loomd_dash_new(F.d, F.store, &F.info, NULL, &F.dash, &err), LOOM_OK);
    loom_rpc_server_config_t cfg;
    loom_rpc_server_config_init(&cfg);
    cfg.listen = "127.0.0.1:0";
    cfg.token = F.token;
    cfg.drain_timeout_s = 5;
    cfg.http_hook = loomd_dash_hook(F.dash);
    assert_int_equal(loom_rpc_server_start(&cfg, F.d, &F.s, &err), LOOM_OK);
    F.port = loom_rpc_server_port(F.s);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    loomd_dash_stop(F.dash);
    loom_rpc_server_stop(F.s);
    loomd_dash_free(F.dash);
    loom_rpc_dispatcher_free(F.d);
    loom_store_close(F.store);
    assert_int_equal(loom_test_rmtree(F.dir), 0);
    return 0;
}

/* ------------------------------------------------------------- helpers */

static int connect_tcp(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(F.port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

/* Reads what arrives within ms milliseconds of quiet (or until EOF). */
static size_t read_some(int fd, char *buf, size_t cap, int ms)
{
    size_t n = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (n + 1 < cap && poll(&p, 1, ms) == 1) {
        ssize_t k = read(fd, buf + n, cap - 1 - n);
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    buf[n] = '\0';
    return n;
}

/* One request on a new connection, "Connection: close"; returns the status
 * and the whole answer in buf. */
static int request(const char *method, const char *path, const char *headers, const char *body,
                   char *buf, size_t cap)
{
    int fd = connect_tcp();
    char req[2048];
    int n =
        snprintf(req, sizeof req,
                 "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%sContent-Length: "
                 "%zu\r\n\r\n%s",
                 method, path, headers ? headers : "", body ? strlen(body) : 0, body ? body : "");
    assert_int_equal(write(fd, req, (size_t)n), n);
    read_some(fd, buf, cap, 2000);
    close(fd);
    int status = 0;
    sscanf(buf, "HTTP/1.1 %d", &status);
    return status;
}

static void new_code(char code[65])
{
    static const char call[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"dash.login\"}";
    loom_rpc_transport_t t = {.unix_socket = true};
    loom_buf_t out = LOOM_BUF_INIT;
    assert_int_equal(loom_rpc_handle(F.d, call, sizeof call - 1, &t, &out), LOOM_OK);
    json_t *r = json_loads(out.data, 0, NULL);
    const char *c = json_string_value(json_object_get(json_object_get(r, "result"), "code"));
    assert_non_null(c);
    assert_int_equal(strlen(c), 64);
    assert_true(json_is_null(json_object_get(json_object_get(r, "result"), "url")));
    memcpy(code, c, 65);
    json_decref(r);
    loom_buf_free(&out);
}

/* Logs in; fills "Cookie: loom_session=...\r\n" and the CSRF token. */
static void login(char *cookie_hdr, size_t len, char csrf[65])
{
    char code[65], path[128], buf[8192];
    new_code(code);
    snprintf(path, sizeof path, "/login?code=%s", code);
    assert_int_equal(request("GET", path, NULL, NULL, buf, sizeof buf), 303);
    const char *c = strstr(buf, "Set-Cookie: loom_session=");
    assert_non_null(c);
    char id[65];
    assert_int_equal(sscanf(c, "Set-Cookie: loom_session=%64[0-9a-f];", id), 1);
    snprintf(cookie_hdr, len, "Cookie: loom_session=%s\r\n", id);
    assert_int_equal(request("GET", "/api/session", cookie_hdr, NULL, buf, sizeof buf), 200);
    const char *j = strstr(buf, "\r\n\r\n");
    json_t *s = json_loads(j + 4, 0, NULL);
    memcpy(csrf, json_string_value(json_object_get(s, "csrf")), 65);
    json_decref(s);
}

/* ---------------------------------------------------------------- tests */

static void nothing_without_a_session(void **state)
{
    (void)state;
    char buf[8192];
    const char *paths[] = {"/",       "/index.html",  "/app.js",      "/app.css",
                           "/events", "/api/session", "/api/log?id=1"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        assert_int_equal(request("GET", paths[i], NULL, NULL, buf, sizeof buf), 401);
        assert_null(strstr(buf, "<html"));
    }
    assert_int_equal(request("POST", "/api/rpc", NULL, "{}", buf, sizeof buf), 401);
    char bearer[128];
    snprintf(bearer, sizeof bearer, "Authorization: Bearer %s\r\n", F.token);
    assert_int_equal(request("GET", "/", bearer, NULL, buf, sizeof buf), 401);
    assert_int_equal(request("GET", "/", "Cookie: loom_session=abc\r\n", NULL, buf, sizeof buf),
                     401);
    char fake[128];
    snprintf(fake, sizeof fake, "Cookie: loom_session=%064d\r\n", 0);
    assert_int_equal(request("GET", "/", fake, NULL, buf, sizeof buf), 401);
    assert_int_equal(request("GET", "/elsewhere", NULL, NULL, buf, sizeof buf), 404);
    /* the RPC's own paths are untouched: /rpc still wants the token */
    assert_int_equal(
        request("POST", "/rpc", "Content-Type: application/json\r\n", "{}", buf, sizeof buf), 401);
}

static void codes_work_once(void **state)
{
    (void)state;
    char code[65], path[128], buf[8192];
    new_code(code);
    snprintf(path, sizeof path, "/login?code=%s", code);
    assert_int_equal(request("POST", path, NULL, "", buf, sizeof buf), 405);
    assert_int_equal(request("GET", path, NULL, NULL, buf, sizeof buf), 303);
    assert_non_null(strstr(buf, "HttpOnly"));
    assert_non_null(strstr(buf, "SameSite=Strict"));
    assert_non_null(strstr(buf, "Location: /\r\n"));
    assert_int_equal(request("GET", path, NULL, NULL, buf, sizeof buf), 403);
    code[0] = code[0] == 'a' ? 'b' : 'a'; /* near misses and bad shapes */
    snprintf(path, sizeof path, "/login?code=%s", code);
    assert_int_equal(request("GET", path, NULL, NULL, buf, sizeof buf), 403);
    assert_int_equal(request("GET", "/login?code=XYZ", NULL, NULL, buf, sizeof buf), 403);
    assert_int_equal(request("GET", "/login", NULL, NULL, buf, sizeof buf), 403);
}

static void actions_need_csrf(void **state)
{
    (void)state;
    char cookie[128], csrf[65], h[512], buf[16384];
    login(cookie, sizeof cookie, csrf);
    assert_int_equal(request("GET", "/", cookie, NULL, buf, sizeof buf), 200);
    assert_non_null(strstr(buf, "<!doctype html>"));
    assert_non_null(strstr(buf, "Content-Security-Policy: default-src 'self'"));
    const char *call =
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"job.cancel\",\"params\":{\"id\":1}}";
    snprintf(h, sizeof h, "%sContent-Type: application/json\r\n", cookie);
    assert_int_equal(request("POST", "/api/rpc", h, call, buf, sizeof buf), 403);
    snprintf(h, sizeof h, "%sX-Loom-CSRF: %064d\r\n", cookie, 0);
    assert_int_equal(request("POST", "/api/rpc", h, call, buf, sizeof buf), 403);
    snprintf(h, sizeof h, "%sX-Loom-CSRF: %s\r\n", cookie, csrf);
    /* allowed: reaches the dispatcher (which here has no job.cancel: -32601) */
    assert_int_equal(request("POST", "/api/rpc", h, call, buf, sizeof buf), 200);
    assert_non_null(strstr(buf, "-32601"));
    /* beyond the page's methods, batches and junk: 400 */
    assert_int_equal(request("POST", "/api/rpc", h,
                             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"dash.login\"}", buf,
                             sizeof buf),
                     400);
    assert_int_equal(request("POST", "/api/rpc", h, "[]", buf, sizeof buf), 400);
    assert_int_equal(request("POST", "/api/rpc", h, "{", buf, sizeof buf), 400);
    /* logout needs the header too, then ends the session */
    assert_int_equal(request("POST", "/logout", cookie, "", buf, sizeof buf), 403);
    assert_int_equal(request("POST", "/logout", h, "", buf, sizeof buf), 200);
    assert_int_equal(request("GET", "/", cookie, NULL, buf, sizeof buf), 401);
}

static int open_stream(const char *cookie, const char *extra, char *buf, size_t cap)
{
    int fd = connect_tcp();
    char req[512];
    int n = snprintf(req, sizeof req, "GET /events HTTP/1.1\r\nHost: x\r\n%s%s\r\n", cookie,
                     extra ? extra : "");
    assert_int_equal(write(fd, req, (size_t)n), n);
    read_some(fd, buf, cap, 300);
    return fd;
}

static void submit_job(const char *name)
{
    loom_job_spec_t spec;
    loom_job_spec_init(&spec);
    spec.name = name;
    spec.script = "true";
    loom_err_t err;
    assert_int_equal(loom_store_submit(F.store, &spec, NULL, NULL, &err), LOOM_OK);
}

static void events_numbered_and_resumable(void **state)
{
    (void)state;
    char cookie[128], csrf[65], buf[16384];
    login(cookie, sizeof cookie, csrf);
    int fd = open_stream(cookie, NULL, buf, sizeof buf);
    assert_non_null(strstr(buf, "200 OK"));
    assert_non_null(strstr(buf, "text/event-stream"));
    assert_non_null(strstr(buf, "event: hello"));
    submit_job("seen-live");
    read_some(fd, buf, sizeof buf, 1500);
    const char *ev = strstr(buf, "event: job\ndata: ");
    assert_non_null(ev);
    assert_non_null(strstr(ev, "\"state\":\"PENDING\""));
    /* its id, as the line before says */
    const char *idl = ev;
    while (idl > buf && strncmp(idl, "id: ", 4) != 0)
        idl--;
    unsigned long long id = strtoull(idl + 4, NULL, 10);
    assert_true(id >= 1);
    close(fd);
    /* resuming just before it gets it again */
    char last[64];
    snprintf(last, sizeof last, "Last-Event-ID: %llu\r\n", id - 1);
    fd = open_stream(cookie, last, buf, sizeof buf);
    size_t got = strlen(buf);
    read_some(fd, buf + got, sizeof buf - got, 500);
    assert_non_null(strstr(buf, "event: job"));
    close(fd);
}

/* Codes and sessions expire (shortened here to 1 s and 2 s); a stream ends
 * with its session. */
static void codes_and_sessions_expire(void **state)
{
    (void)state;
    loomd_dash_set_ttls(F.dash, 1, 2);
    char code[65], path[128], buf[8192], cookie[128], csrf[65];
    new_code(code);
    usleep(1200 * 1000);
    snprintf(path, sizeof path, "/login?code=%s", code);
    assert_int_equal(request("GET", path, NULL, NULL, buf, sizeof buf), 403);
    login(cookie, sizeof cookie, csrf);
    int fd = open_stream(cookie, NULL, buf, sizeof buf);
    assert_non_null(strstr(buf, "200 OK"));
    usleep(2200 * 1000);
    assert_int_equal(request("GET", "/", cookie, NULL, buf, sizeof buf), 401);
    read_some(fd, buf, sizeof buf, 3000); /* the end of the chunked stream, then EOF */
    assert_non_null(strstr(buf, "0\r\n\r\n"));
    close(fd);
    loomd_dash_set_ttls(F.dash, 0, 0);
}

static void readers_are_bounded(void **state)
{
    (void)state;
    char cookie[128], csrf[65], buf[4096];
    login(cookie, sizeof cookie, csrf);
    usleep(1500 * 1000); /* the streams the previous test closed are noticed within 1 s */
    int fds[DASH_FEED_MAX_SUBS];
    for (int i = 0; i < DASH_FEED_MAX_SUBS; i++) {
        fds[i] = open_stream(cookie, NULL, buf, sizeof buf);
        assert_non_null(strstr(buf, "200 OK"));
    }
    int extra = open_stream(cookie, NULL, buf, sizeof buf);
    if (!strstr(buf, "503"))
        fprintf(stderr, "17th stream: %s\n", buf);
    assert_non_null(strstr(buf, "503"));
    assert_non_null(strstr(buf, "Retry-After: 10"));
    close(extra);
    close(fds[0]);
    /* the server notices the closed reader within a second, without a write */
    int ok = 0;
    for (int tries = 0; tries < 50 && !ok; tries++) {
        int fd = open_stream(cookie, NULL, buf, sizeof buf);
        ok = strstr(buf, "200 OK") != NULL;
        if (ok)
            fds[0] = fd;
        else
            close(fd);
        if (!ok)
            usleep(100 * 1000);
    }
    assert_true(ok);
    for (int i = 0; i < DASH_FEED_MAX_SUBS; i++)
        close(fds[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nothing_without_a_session),
        cmocka_unit_test(codes_work_once),
        cmocka_unit_test(actions_need_csrf),
        cmocka_unit_test(events_numbered_and_resumable),
        cmocka_unit_test(readers_are_bounded),
        cmocka_unit_test(codes_and_sessions_expire),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
