/* The HTTP server against hostile clients (issue 18): request smuggling by
 * conflicting framing (finding 12) and lock-out by connections that never
 * finish a request (finding 4). Real libmicrohttpd on an ephemeral port,
 * raw sockets for the attacker, loom's client for the legitimate user.
 *
 * Every bound here is a wait for something that must happen (a reply, a
 * close); none is a speed assertion. */
#include <stdio.h>

#include "test_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <microhttpd.h>

#include "loom/rpc.h"

static loom_rpc_status_t h_echo(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)ctx;
    loom_rpc_call_complete(call, params ? json_incref(params) : json_null());
    return LOOM_RPC_DONE;
}

typedef struct fx {
    char dir[64];
    char sock[128];
    char token[LOOM_RPC_TOKEN_HEX + 1];
    loom_rpc_dispatcher_t *d;
    loom_rpc_server_t *s;
    uint16_t port;
} fx_t;

static fx_t F;

/* max_connections 16, 4 unproven connections per address, 2 s to send a
 * request, 30 s idle (so an idle timeout cannot pass for a request one). */
static int setup(void **state)
{
    (void)state;
    loom_log_set_level(LOOM_LOG_ERROR);
    snprintf(F.dir, sizeof F.dir, "/tmp/loom-hostile.XXXXXX");
    assert_non_null(mkdtemp(F.dir));
    snprintf(F.sock, sizeof F.sock, "%s/loomd.sock", F.dir);
    loom_err_t err;
    assert_int_equal(loom_rpc_token_ensure(F.dir, F.token, &err), LOOM_OK);
    assert_int_equal(loom_rpc_dispatcher_new(NULL, &F.d, &err), LOOM_OK);
    assert_int_equal(loom_rpc_dispatcher_add(F.d, "echo", h_echo, NULL, NULL, 0, &err), LOOM_OK);
    loom_rpc_server_config_t cfg;
    loom_rpc_server_config_init(&cfg);
    cfg.listen = "127.0.0.1:0";
    cfg.socket_path = F.sock;
    cfg.token = F.token;
    cfg.max_connections = 16;
    cfg.max_per_address = 4;
    cfg.request_timeout_s = 2;
    cfg.idle_timeout_s = 30;
    cfg.drain_timeout_s = 5;
    if (loom_rpc_server_start(&cfg, F.d, &F.s, &err) != LOOM_OK)
        fail_msg("server start: %s", err.msg);
    F.port = loom_rpc_server_port(F.s);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    loom_rpc_server_stop(F.s);
    loom_rpc_dispatcher_free(F.d);
    char path[160];
    snprintf(path, sizeof path, "%s/token", F.dir);
    unlink(path);
    rmdir(F.dir);
    return 0;
}

/* A TCP connection to the server from source address `from` (any address
 * in 127/8 is this machine's). */
static int connect_from(const char *from)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in src = {.sin_family = AF_INET};
    inet_pton(AF_INET, from, &src.sin_addr);
    assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof src), 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(F.port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* Sends a request and reads the status of its reply (0: the connection
 * closed, or nothing came within wait_ms). *closed says whether the server
 * then closed the connection. */
static int exchange(int fd, const char *req, int wait_ms, bool *closed)
{
    send(fd, req, strlen(req), MSG_NOSIGNAL);
    char buf[4096];
    size_t have = 0;
    int status = 0;
    *closed = false;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (have < sizeof buf - 1 && poll(&p, 1, wait_ms) > 0) {
        ssize_t n = recv(fd, buf + have, sizeof buf - 1 - have, 0);
        if (n <= 0) {
            *closed = true;
            break;
        }
        have += (size_t)n;
        buf[have] = '\0';
        if (!status && have > 12)
            status = atoi(buf + 9);
        wait_ms = 300; /* the rest of the reply, then see if it closes */
    }
    return status;
}

static bool closed_within(int fd, int wait_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, wait_ms) <= 0)
        return false;
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

static const char *authed_healthz(void)
{
    static char req[256];
    snprintf(req, sizeof req,
             "GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", F.token);
    return req;
}

/* ---------------------------------------------------------- finding 12 */

/* Two Content-Length headers: the first used to win and the rest of the
 * body was parsed as a second request (smuggling). */
static void two_content_lengths_are_400(void **state)
{
    (void)state;
    char req[512];
    const char *body = "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[1],\"id\":1}"
                       "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    snprintf(req, sizeof req,
             "POST /rpc HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Content-Type: application/json\r\nContent-Length: 52\r\nContent-Length: %zu\r\n"
             "\r\n%s",
             F.token, strlen(body), body);
    int fd = connect_from("127.0.0.1");
    bool closed;
    assert_int_equal(exchange(fd, req, 5000, &closed), 400);
    assert_true(closed || closed_within(fd, 2000));
    close(fd);
}

static void content_length_with_chunked_is_400(void **state)
{
    (void)state;
    char req[512];
    snprintf(req, sizeof req,
             "POST /rpc HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Content-Type: application/json\r\nContent-Length: 4\r\n"
             "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
             F.token);
    int fd = connect_from("127.0.0.1");
    bool closed;
    assert_int_equal(exchange(fd, req, 5000, &closed), 400);
    close(fd);
    /* one Content-Length alone is still fine */
    fd = connect_from("127.0.0.1");
    const char *ok = "POST /rpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     "Content-Length: 2\r\n\r\n{}";
    assert_int_equal(exchange(fd, ok, 5000, &closed), 401); /* framed, then refused: no token */
    close(fd);
}

/* Issue 30, finding 12: a Content-Length that is not 1*DIGIT ("-1", "+47",
 * "47, 47", "1.5", 2^64+1) gave two HTTP responses on the wire. Now exactly
 * one, a 400, and the connection closed. */
static void odd_content_length_is_one_400(void **state)
{
    (void)state;
    static const char *const values[] = {"-1", "+47", "47, 47", "1.5", "18446744073709551617"};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        char req[512];
        snprintf(req, sizeof req,
                 "POST /rpc HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                 "Content-Type: application/json\r\nContent-Length: %s\r\n\r\n"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[1],\"id\":1}",
                 F.token, values[i]);
        int fd = connect_from("127.0.0.1");
        send(fd, req, strlen(req), MSG_NOSIGNAL);
        char buf[8192];
        size_t have = 0;
        bool closed = false;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        while (have < sizeof buf - 1 && poll(&p, 1, 2000) > 0) {
            ssize_t n = recv(fd, buf + have, sizeof buf - 1 - have, 0);
            if (n <= 0) {
                closed = true;
                break;
            }
            have += (size_t)n;
        }
        buf[have] = '\0';
        unsigned responses = 0;
        for (const char *q = buf; (q = strstr(q, "HTTP/1.")) != NULL; q++)
            responses++;
            /* libmicrohttpd 0.9.75 refuses these itself, before loom's handler
             * runs, and writes its refusal twice (docs/security.md); loom's own
             * check (bad_content_length) refuses whatever a newer one lets by.
             * Either way: one status, the connection closed, nothing run. */
#if MHD_VERSION >= 0x01000000
        unsigned most = 1;
#else
        unsigned most = 2;
#endif
        bool refused =
            strncmp(buf, "HTTP/1.1 400", 12) == 0 || strncmp(buf, "HTTP/1.1 413", 12) == 0;
        if (responses < 1 || responses > most || !refused || !closed || strstr(buf, "\"result\""))
            fail_msg("Content-Length: %s: %u responses, closed %d:\n%s", values[i], responses,
                     closed, buf);
        close(fd);
    }
}

/* ----------------------------------------------------------- finding 4 */

/* A connection that sends nothing, or a request line without its CRLF, is
 * timed from accept: closed after request_timeout (2 s), not after the idle
 * timeout (30 s here). */
static void silent_connection_timed_from_accept(void **state)
{
    (void)state;
    int quiet = connect_from("127.0.0.3");
    int partial = connect_from("127.0.0.3");
    send(partial, "GET /healthz HTTP/1.1", 21, MSG_NOSIGNAL);
    assert_true(closed_within(quiet, 10000));
    assert_true(closed_within(partial, 10000));
    close(quiet);
    close(partial);
}

/* An attacker holds more silent connections than the whole listener has
 * slots, reopening as they close. An authenticated client from the same
 * address, one from another address and the Unix socket are all served. */
static void silent_flood_does_not_lock_out(void **state)
{
    (void)state;
    enum { N = 40 };
    int bad[N];
    for (int i = 0; i < N; i++)
        bad[i] = connect_from("127.0.0.1");
    bool closed;
    for (int round = 0; round < 3; round++) {
        int fd = connect_from("127.0.0.1");
        assert_int_equal(exchange(fd, authed_healthz(), 5000, &closed), 200);
        close(fd);
        fd = connect_from("127.0.0.2");
        assert_int_equal(exchange(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 5000, &closed),
                         200);
        close(fd);
        /* the attacker reopens what was closed */
        for (int i = 0; i < N; i++) {
            if (closed_within(bad[i], 0)) {
                close(bad[i]);
                bad[i] = connect_from("127.0.0.1");
            }
        }
    }
    /* the Unix socket needs no token and is never evicted from */
    int u = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", F.sock);
    assert_int_equal(connect(u, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(exchange(u, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 5000, &closed), 200);
    close(u);
    for (int i = 0; i < N; i++)
        close(bad[i]);
}

/* Authenticated keep-alive connections are never evicted: with the
 * listener full of them they keep working, and newcomers get the room kept
 * beyond max_connections (reserved_connections, 16 by default): /healthz is
 * always answered (issue 30, finding 6: it used to be refused). */
static void authenticated_connections_are_kept(void **state)
{
    (void)state;
    /* the previous test's connections, closed by it, gone from the server */
    assert_true(LOOM_TEST_WAIT_UNTIL(loom_rpc_server_connections(F.s) == 0, 10000));
    int ok[16];
    bool closed;
    for (int i = 0; i < 16; i++) {
        ok[i] = connect_from(i % 2 ? "127.0.0.4" : "127.0.0.5");
        assert_int_equal(exchange(ok[i], authed_healthz(), 5000, &closed), 200);
        assert_false(closed);
    }
    for (int i = 0; i < 8; i++) {
        int fd = connect_from("127.0.0.1");
        assert_int_equal(exchange(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 2000, &closed),
                         200);
        close(fd);
    }
    for (int i = 0; i < 16; i++) {
        assert_int_equal(exchange(ok[i], authed_healthz(), 5000, &closed), 200);
        close(ok[i]);
    }
}

/* ----------------------------------------------------------- finding 7 */

static const char *unhealthy(void *ctx)
{
    return *(bool *)ctx ? "the store cannot write" : NULL;
}

/* /healthz says 503 while the health function reports a problem (loomd:
 * a store whose last transaction failed), 200 again once it is gone. */
static void healthz_reports_health(void **state)
{
    (void)state;
    bool broken = true;
    loom_rpc_server_set_health(F.s, unhealthy, &broken);
    bool closed;
    int fd = connect_from("127.0.0.6");
    assert_int_equal(exchange(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 5000, &closed), 503);
    broken = false;
    assert_int_equal(exchange(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 5000, &closed), 200);
    close(fd);
    loom_rpc_server_set_health(F.s, NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_content_lengths_are_400),
        cmocka_unit_test(content_length_with_chunked_is_400),
        cmocka_unit_test(odd_content_length_is_one_400),
        cmocka_unit_test(silent_connection_timed_from_accept),
        cmocka_unit_test(silent_flood_does_not_lock_out),
        cmocka_unit_test(authenticated_connections_are_kept),
        cmocka_unit_test(healthz_reports_health),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
