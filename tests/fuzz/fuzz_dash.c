/* Fuzz loomd's dashboard routes (src/daemon/dash.c) through the real RPC
 * server on 127.0.0.1: the first byte picks what the rest becomes:
 *   0  a whole raw HTTP request (no session)
 *   1  the path and query (visible ASCII) of a GET with a live session (/events excluded:
 *      a stream would wait for events)
 *   2  the body of POST /api/rpc with a live session and its CSRF token
 *      (reaching loomd's real job.* methods on a store in a temp directory)
 * Checks that every request gets an HTTP answer and that nothing is
 * answered 200 without the session. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../unit/rmtree.h"
#include "daemon/dash.h"
#include "daemon/methods.h"

static loom_store_t *store;
static loom_rpc_dispatcher_t *disp;
static loomd_dash_t *dash;
static loom_rpc_server_t *server;
static loomd_info_t info;
static loomd_methods_t methods;
static char dir[64], token[LOOM_RPC_TOKEN_HEX + 1], cookie[128], csrf[65];
static uint16_t port;

/* A connection to the server. The socket closes with a reset (linger 0), so
 * this client leaves no TIME_WAIT behind: a thousand connections a second
 * would otherwise use up loopback's ephemeral ports within a minute, more
 * so with other tests doing the same, and connect() would fail with
 * EADDRNOTAVAIL. If it still does, wait for ports to free up. A connect()
 * that waits on a full listen backlog can also be cut short by libFuzzer's
 * timeout alarm (EINTR): that too is tried again, on a new socket. */
static int connect_local(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int attempt = 0;; attempt++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) {
            perror("fuzz_dash: socket");
            abort();
        }
        struct linger l = {.l_onoff = 1, .l_linger = 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
            return fd;
        int e = errno;
        close(fd);
        if ((e != EADDRNOTAVAIL && e != EINTR) || attempt == 200) {
            fprintf(stderr, "fuzz_dash: connect to 127.0.0.1:%u: %s\n", port, strerror(e));
            abort();
        }
        usleep(10000);
    }
}

static size_t exchange(const char *req, size_t len, char *buf, size_t cap)
{
    int fd = connect_local();
    if (write(fd, req, len) < 0) {
        close(fd);
        buf[0] = '\0';
        return 0;
    }
    shutdown(fd, SHUT_WR);
    size_t n = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (n + 1 < cap) {
        int r = poll(&p, 1, 10000);
        if (r < 0 && errno == EINTR)
            continue; /* libFuzzer's alarm */
        if (r != 1)
            break;
        ssize_t k = read(fd, buf + n, cap - 1 - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    buf[n] = '\0';
    close(fd);
    return n;
}

static void cleanup(void)
{
    loomd_dash_stop(dash);
    loom_rpc_server_stop(server);
    loomd_dash_free(dash);
    loom_rpc_dispatcher_free(disp);
    loom_store_close(store);
    if (loom_test_rmtree(dir) != 0)
        fprintf(stderr, "fuzz_dash: could not remove %s\n", dir);
}

static void log_in(void)
{
    static const char call[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"dash.login\"}";
    loom_rpc_transport_t t = {.unix_socket = true};
    loom_buf_t out = LOOM_BUF_INIT;
    if (loom_rpc_handle(disp, call, sizeof call - 1, &t, &out))
        abort();
    json_t *r = json_loads(out.data, 0, NULL);
    const char *path = json_string_value(json_object_get(json_object_get(r, "result"), "path"));
    char req[256], buf[4096];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                     path ? path : "/");
    exchange(req, (size_t)n, buf, sizeof buf);
    json_decref(r);
    loom_buf_free(&out);
    const char *c = strstr(buf, "loom_session=");
    if (!c || sscanf(c, "loom_session=%64[0-9a-f]", csrf) != 1)
        abort();
    snprintf(cookie, sizeof cookie, "Cookie: loom_session=%s\r\n", csrf);
    n = snprintf(req, sizeof req,
                 "GET /api/session HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\n\r\n", cookie);
    exchange(req, (size_t)n, buf, sizeof buf);
    c = strstr(buf, "\"csrf\":\"");
    if (!c || sscanf(c, "\"csrf\":\"%64[0-9a-f]", csrf) != 1)
        abort();
}

static void init(void)
{
    loom_log_set_level(LOOM_LOG_ERROR);
    snprintf(dir, sizeof dir, "/tmp/loom-fuzz-dash-XXXXXX");
    if (!mkdtemp(dir))
        abort();
    char path[128];
    snprintf(path, sizeof path, "%s/loom.db", dir);
    loom_err_t err;
    if (loom_rpc_token_ensure(dir, token, &err) || loom_store_open(path, NULL, &store, &err) ||
        loom_rpc_dispatcher_new(NULL, &disp, &err))
        abort();
    info = (loomd_info_t){.state_dir = dir, .durability = "normal"};
    methods = (loomd_methods_t){.store = store, .info = &info};
    if (loomd_methods_add(disp, &methods, &err) ||
        loomd_dash_new(disp, store, &info, NULL, &dash, &err))
        abort();
    loom_rpc_server_config_t cfg;
    loom_rpc_server_config_init(&cfg);
    cfg.listen = "127.0.0.1:0";
    cfg.token = token;
    cfg.max_per_address = 1000;
    cfg.http_hook = loomd_dash_hook(dash);
    if (loom_rpc_server_start(&cfg, disp, &server, &err))
        abort();
    port = loom_rpc_server_port(server);
    atexit(cleanup);
    log_in();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static int ready;
    if (!ready) {
        init();
        ready = 1;
    }
    if (size < 1 || size > 8192)
        return 0;
    int mode = data[0] % 3;
    const char *rest = (const char *)data + 1;
    size_t len = size - 1;
    static char req[16384], buf[65536];
    size_t n;
    if (mode == 0) {
        memcpy(req, rest, len);
        n = len;
    } else if (mode == 1) {
        if (len == 0 || (len >= 7 && !memcmp(rest, "/events", 7)))
            return 0;
        for (size_t i = 0; i < len; i++) /* a well-formed request target: visible ASCII */
            if (rest[i] < 0x21 || rest[i] > 0x7e)
                return 0;
        n = (size_t)snprintf(req, sizeof req,
                             "GET %.*s HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\n\r\n",
                             (int)len, rest, cookie);
    } else {
        n = (size_t)snprintf(
            req, sizeof req,
            "POST /api/rpc HTTP/1.1\r\nHost: x\r\n%sX-Loom-CSRF: %s\r\nContent-Type: "
            "application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
            cookie, csrf, len);
        memcpy(req + n, rest, len);
        n += len;
    }
    size_t got = exchange(req, n, buf, sizeof buf);
    /* A connection may be closed unanswered before its request is read:
     * unauthenticated TCP connections past the per-address limit are evicted
     * oldest first (docs/protocol.md, Limits), and a fuzzer opening a
     * thousand a second is such a client. A client retries; so does this. */
    for (int retry = 0; mode != 0 && got == 0 && retry < 3; retry++)
        got = exchange(req, n, buf, sizeof buf);
    if (mode != 0 && (got < 12 || strncmp(buf, "HTTP/1.1 ", 9) != 0))
        abort(); /* a well-formed request always gets an answer */
    if (mode == 0 && strstr(buf, "HTTP/1.1 200") && strstr(buf, "<!doctype html>"))
        abort(); /* the page without a session */
    return 0;
}
