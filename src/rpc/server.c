/* HTTP transport for the dispatcher, on libmicrohttpd.
 *
 *   POST /rpc      JSON-RPC 2.0 body -> loom_rpc_handle -> 200 (or 204)
 *   GET  /healthz  "ok"
 *   GET  /metrics  Prometheus text 0.0.4
 *   any other path: the configured http_hook (loomd's dashboard), else 404
 *
 * One MHD daemon per listener (TCP and/or Unix socket), each on a socket
 * we create ourselves: TCP bound exactly where asked (MHD alone would bind
 * 0.0.0.0), the Unix socket chmod 0600 between bind and listen so nobody
 * can connect while it is still open to all. A listener knows whether it is
 * the Unix one, which needs no token.
 *
 * MHD runs one thread per connection, so loom_rpc_handle may block on its
 * condition variable while a committer thread completes the calls.
 *
 * Slow clients. MHD's connection timeout only measures inactivity, so a
 * client trickling one byte a second would hold a connection forever. A
 * watchdog thread therefore tracks each connection's phase: IDLE (between
 * requests; limit idle_timeout_s) and REQUEST (request line seen, request not
 * yet handed to the dispatcher; limit request_timeout_s). A connection over
 * its limit is shut down (shutdown(2) on its fd, under the lock that MHD's
 * close notification also takes, so the fd is still ours); MHD then sees
 * the end of the stream and cleans up. While the dispatcher works on a
 * request (BUSY) no limit applies: the delay is ours, not the client's.
 *
 * Fair share (with the identity hook): a connection is claimed by the user
 * its identity names (on the Unix socket at accept, from the peer's
 * credentials; on TCP at its first authenticated request). One unprivileged
 * user holds at most max_per_user connections; unprivileged users together
 * at most max_connections per listener; MHD's own limit is higher by
 * reserved_connections, room that only privileged callers (and TCP's
 * unauthenticated /healthz) reach. A connection over a limit gets one
 * answer naming the limit (429 or 503, JSON-RPC -32015) and is closed; one
 * that arrives while the users' room is full is closed at once.
 *
 * Graceful stop: quiesce (stop accepting), wait for requests in flight,
 * then stop MHD (which closes idle keep-alive connections). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <microhttpd.h>

#include "loom/rpc.h"
#include "rpc/rpc_metrics.h"

enum { PATH_RPC, PATH_HEALTHZ, PATH_METRICS, PATH_OTHER, PATH_HOOK, PATH_N };
static const char *const path_label[PATH_N] = {"/rpc", "/healthz", "/metrics", "other", "hook"};
static const unsigned status_codes[] = {200, 204, 400, 401, 404, 405, 413, 415, 429, 500, 503};
#define N_STATUS       (sizeof status_codes / sizeof status_codes[0])
#define MAX_SOURCES    32
#define EVICTION_SLACK 32

typedef enum phase { PHASE_IDLE, PHASE_REQUEST, PHASE_BUSY } phase_t;

typedef struct listener listener_t;

/* A client address as the accept policy compares them. */
typedef struct addr_key {
    sa_family_t family;
    unsigned char bytes[16];
} addr_key_t;

typedef struct conn {
    struct conn *prev, *next;
    listener_t *l;
    int fd;
    phase_t phase;
    int64_t since_ns;
    int64_t accepted_ns;
    addr_key_t addr;
    unsigned served; /* requests answered */
    bool handed;     /* a request went to the dispatcher */
    bool proven;     /* showed the token (or needs none) */
    bool killed;
    /* Fair share: the user that claimed the connection (see the top). */
    bool claimed, privileged;
    int64_t user;
    unsigned over_status; /* 429/503: the answer to its next request */
    char over_detail[200];
    /* The identity hook's last answer on this connection (auth_request):
     * reused while valid for requests with the same Authorization value. */
    void *identity;
    char *identity_auth; /* that value ("" for none) */
    int64_t identity_until_ns;
} conn_t;

typedef struct req {
    loom_rpc_server_t *s;
    conn_t *conn;
    int64_t start_ns;
    int path;
    unsigned status;
    bool counted;
    bool too_large;
    bool responded;
    unsigned early_status; /* an error found in the headers, sent after the body */
    bool early_close;      /* and the connection closed after it */
    char early_detail[200];
    loom_buf_t body;
    loom_rpc_transport_t transport;
} req_t;

struct listener {
    loom_rpc_server_t *s;
    struct MHD_Daemon *mhd;
    int fd;
    bool is_unix;
    bool quiesced;
};

struct loom_rpc_server {
    loom_rpc_dispatcher_t *d;
    loom_rpc_server_config_t cfg;
    char *listen_copy, *socket_copy, *challenge_copy;
    char token[LOOM_RPC_TOKEN_HEX + 1];
    bool auth;
    listener_t tcp, unx;
    uint16_t port;

    pthread_mutex_t mu; /* conns, sources */
    conn_t conns;       /* list head */
    struct {
        loom_rpc_metrics_fn fn;
        void *ctx;
    } sources[MAX_SOURCES];
    size_t nsources;

    _Atomic(loom_rpc_health_fn) health;
    void *_Atomic health_ctx;

    pthread_t watchdog;
    pthread_cond_t wake;
    bool stopping;
    atomic_bool draining;

    _Atomic long in_flight;
    _Atomic long connections;
    _Atomic uint64_t accepted;
    _Atomic uint64_t timeouts; /* closed for being idle or slow */
    _Atomic uint64_t evicted;
    _Atomic uint64_t requests[PATH_N][N_STATUS + 1];
    rpc_hist_t latency[PATH_N];
};

/* --------------------------------------------------------------- helpers */

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    for (char *p = msg; *p; p++)
        if (*p == '"')
            *p = '\'';
    loom_log_debug("http", "detail=\"%s\"", msg);
}

static void count_request(loom_rpc_server_t *s, req_t *r)
{
    if (r->counted)
        return;
    r->counted = true;
    size_t k = N_STATUS;
    for (size_t i = 0; i < N_STATUS; i++)
        if (status_codes[i] == r->status)
            k = i;
    atomic_fetch_add_explicit(&s->requests[r->path][k], 1, memory_order_relaxed);
    rpc_hist_observe(&s->latency[r->path], loom_time_mono_ns() - r->start_ns);
}

static enum MHD_Result respond(struct MHD_Connection *c, req_t *r, unsigned status,
                               const char *ctype, const char *body, size_t len, bool close)
{
    loom_rpc_server_t *s = r->s;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    if (ctype)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                s->cfg.identity.challenge ? s->cfg.identity.challenge
                                                          : "Bearer realm=\"loom\"");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
                                r->path == PATH_RPC ? "POST" : "GET, HEAD");
    if (close || atomic_load(&s->draining))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    r->status = status;
    r->responded = true;
    return ret;
}

/* An HTTP-level error on /rpc carries a JSON-RPC error body, so that a
 * client parsing JSON still gets a message; elsewhere plain text. */
static enum MHD_Result respond_error(struct MHD_Connection *c, req_t *r, unsigned status,
                                     const char *detail, bool close)
{
    if (r->path != PATH_RPC) {
        char text[512];
        int n = snprintf(text, sizeof text, "%s\n", detail);
        return respond(c, r, status, "text/plain; charset=utf-8", text, (size_t)n, close);
    }
    /* 429 and 503 on /rpc are the fair-share limits: their message is the
     * detail, which names the limit. */
    bool limit = status == MHD_HTTP_TOO_MANY_REQUESTS || status == MHD_HTTP_SERVICE_UNAVAILABLE;
    json_t *body = json_pack("{s:s,s:{s:i,s:s,s:s},s:n}", "jsonrpc", "2.0", "error", "code",
                             limit ? LOOM_RPC_USER_LIMIT : LOOM_RPC_INVALID_REQUEST, "message",
                             limit ? detail : "Invalid Request", "data", detail, "id");
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    enum MHD_Result ret = respond(c, r, status, "application/json", text ? text : "{}",
                                  text ? strlen(text) : 2, close);
    free(text);
    return ret;
}

static void set_phase(loom_rpc_server_t *s, conn_t *conn, phase_t p)
{
    if (!conn)
        return;
    pthread_mutex_lock(&s->mu);
    conn->phase = p;
    conn->since_ns = loom_time_mono_ns();
    if (p == PHASE_BUSY)
        conn->handed = true;
    pthread_mutex_unlock(&s->mu);
}

/* ------------------------------------------------- connection tracking */

static void addr_key_of(const struct sockaddr *sa, addr_key_t *k)
{
    memset(k, 0, sizeof *k);
    k->family = sa->sa_family;
    if (sa->sa_family == AF_INET)
        memcpy(k->bytes, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
    else if (sa->sa_family == AF_INET6)
        memcpy(k->bytes, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
}

/* Shuts a connection down; MHD sees the end of the stream and cleans up.
 * Called with s->mu held, so the fd is still the connection's. */
static void conn_kill(conn_t *c)
{
    shutdown(c->fd, SHUT_RDWR);
    c->killed = true;
}

/* Counts, with s->mu held, the unprivileged claimed connections of user
 * (over both listeners) and of listener l. */
static void count_claims(loom_rpc_server_t *s, const listener_t *l, int64_t user, unsigned *mine,
                         unsigned *users)
{
    *mine = *users = 0;
    for (conn_t *c = s->conns.next; c != &s->conns; c = c->next) {
        if (c->killed || !c->claimed || c->privileged)
            continue;
        *users += c->l == l;
        *mine += c->user == user;
    }
}

/* Fair share: conn is claimed by the user identity names, or marked over
 * a limit (over_status, over_detail). Returns over_status (0: claimed). */
static unsigned conn_claim(loom_rpc_server_t *s, conn_t *conn, const void *identity)
{
    if (!s->cfg.identity.principal || !identity)
        return 0;
    int64_t user = -1;
    char name[64] = "";
    bool priv = s->cfg.identity.principal(identity, &user, name, sizeof name);
    pthread_mutex_lock(&s->mu);
    if (conn->claimed && conn->user == user && conn->privileged == priv) {
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    conn->claimed = false; /* a new user on this connection: claim again */
    unsigned mine, users;
    count_claims(s, conn->l, user, &mine, &users);
    conn->over_status = 0;
    if (!priv && mine >= s->cfg.max_per_user) {
        conn->over_status = MHD_HTTP_TOO_MANY_REQUESTS;
        snprintf(conn->over_detail, sizeof conn->over_detail,
                 "too many connections: user '%.40s' holds %u, the most one user may hold at "
                 "once (max_connections_per_user %u); close one and retry",
                 name, mine, s->cfg.max_per_user);
    } else if (!priv && users >= s->cfg.max_connections) {
        conn->over_status = MHD_HTTP_SERVICE_UNAVAILABLE;
        snprintf(conn->over_detail, sizeof conn->over_detail,
                 "server busy: users hold %u connections, the most this listener serves "
                 "(max_connections %u; the rest is kept for operators); retry later",
                 users, s->cfg.max_connections);
    } else {
        conn->claimed = true;
        conn->privileged = priv;
        conn->user = user;
    }
    unsigned st = conn->over_status;
    pthread_mutex_unlock(&s->mu);
    return st;
}

/* The Unix socket's peer is known at accept: claim the connection at once,
 * so that silent connections count too. Over a limit while the listener is
 * into its reserve, it is closed at once; else it keeps its answer. */
static void claim_unix(loom_rpc_server_t *s, conn_t *conn)
{
    if (!s->cfg.identity.principal || !s->cfg.identity.authenticate)
        return;
    loom_rpc_auth_input_t in = {true, conn->fd, NULL, "unix"};
    void *id = NULL;
    int64_t until = 0;
    loom_err_t err;
    if (s->cfg.identity.authenticate(&in, &id, &until, &err, s->cfg.identity.ctx) != LOOM_OK)
        return; /* answered 401 at its first request */
    conn->identity = id;
    conn->identity_auth = strdup("");
    conn->identity_until_ns = conn->identity_auth ? until : 0;
    if (!conn_claim(s, conn, id))
        return;
    pthread_mutex_lock(&s->mu);
    unsigned live = 0;
    for (conn_t *c = s->conns.next; c != &s->conns; c = c->next)
        live += c->l == conn->l && !c->killed;
    if (live > s->cfg.max_connections)
        conn_kill(conn);
    pthread_mutex_unlock(&s->mu);
}

/* MHD's accept policy for the TCP listener (see the top of the file):
 * makes room by evicting the oldest unproven connection of the address, or
 * of the listener when it is full; refuses only when nothing can go. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *sa, socklen_t len)
{
    listener_t *l = cls;
    loom_rpc_server_t *s = l->s;
    if (l->is_unix || !sa || len < sizeof(sa_family_t))
        return MHD_YES;
    addr_key_t k;
    addr_key_of(sa, &k);
    enum MHD_Result ok = MHD_YES;
    pthread_mutex_lock(&s->mu);
    unsigned live = 0, mine = 0;
    conn_t *oldest_mine = NULL, *oldest = NULL;
    for (conn_t *c = s->conns.next; c != &s->conns; c = c->next) {
        if (c->l != l || c->killed)
            continue;
        live++;
        if (c->proven || c->phase == PHASE_BUSY || c->fd < 0)
            continue;
        bool same = memcmp(&c->addr, &k, sizeof k) == 0;
        if (same)
            mine++;
        if (same && (!oldest_mine || c->accepted_ns < oldest_mine->accepted_ns))
            oldest_mine = c;
        if (!oldest || c->accepted_ns < oldest->accepted_ns)
            oldest = c;
    }
    if (mine >= s->cfg.max_per_address && oldest_mine) {
        conn_kill(oldest_mine);
        atomic_fetch_add(&s->evicted, 1);
    } else if (live >= s->cfg.max_connections && oldest) {
        conn_kill(oldest);
        atomic_fetch_add(&s->evicted, 1);
    } else if (live >= s->cfg.max_connections + s->cfg.reserved_connections) {
        ok = MHD_NO; /* the reserve too is taken by authenticated callers */
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    listener_t *l = cls;
    loom_rpc_server_t *s = l->s;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        conn_t *conn = calloc(1, sizeof *conn);
        if (!conn)
            return;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn->fd = ci ? ci->connect_fd : -1;
        conn->l = l;
        conn->phase = PHASE_IDLE;
        conn->since_ns = conn->accepted_ns = loom_time_mono_ns();
        conn->proven = l->is_unix;
        ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (ci && ci->client_addr)
            addr_key_of(ci->client_addr, &conn->addr);
        pthread_mutex_lock(&s->mu);
        conn->next = s->conns.next;
        conn->prev = &s->conns;
        s->conns.next->prev = conn;
        s->conns.next = conn;
        pthread_mutex_unlock(&s->mu);
        atomic_fetch_add(&s->connections, 1);
        atomic_fetch_add(&s->accepted, 1);
        *socket_context = conn;
        if (l->is_unix)
            claim_unix(s, conn);
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_t *conn = *socket_context;
        if (!conn)
            return;
        pthread_mutex_lock(&s->mu);
        conn->prev->next = conn->next;
        conn->next->prev = conn->prev;
        pthread_mutex_unlock(&s->mu);
        atomic_fetch_sub(&s->connections, 1);
        if (conn->identity && s->cfg.identity.identity_free)
            s->cfg.identity.identity_free(conn->identity);
        free(conn->identity_auth);
        free(conn);
        *socket_context = NULL;
    }
}

static conn_t *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* Called when the request line has arrived: the start of a request. Its
 * return value becomes the request's context. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)uri;
    listener_t *l = cls;
    req_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->start_ns = loom_time_mono_ns();
    r->s = l->s;
    r->conn = conn_of(c);
    r->path = PATH_OTHER;
    r->status = 0;
    atomic_fetch_add(&l->s->in_flight, 1);
    set_phase(l->s, r->conn, PHASE_REQUEST);
    return r;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)c;
    listener_t *l = cls;
    req_t *r = *con_cls;
    if (!r)
        return;
    if (r->responded)
        count_request(l->s, r);
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        loom_log_debug("http request ended early", "code=%d", (int)toe);
    if (r->conn && r->responded) {
        pthread_mutex_lock(&l->s->mu);
        r->conn->served++;
        pthread_mutex_unlock(&l->s->mu);
    }
    set_phase(l->s, r->conn, PHASE_IDLE);
    loom_buf_free(&r->body);
    free(r);
    *con_cls = NULL;
    atomic_fetch_sub(&l->s->in_flight, 1);
}

static void *watchdog_main(void *arg)
{
    loom_rpc_server_t *s = arg;
    int64_t idle_ns = (int64_t)s->cfg.idle_timeout_s * LOOM_NS_PER_S;
    int64_t req_ns = (int64_t)s->cfg.request_timeout_s * LOOM_NS_PER_S;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        int64_t now = loom_time_mono_ns();
        for (conn_t *c = s->conns.next; c != &s->conns; c = c->next) {
            if (c->killed || c->fd < 0 || c->phase == PHASE_BUSY)
                continue;
            int64_t limit = c->phase == PHASE_IDLE ? idle_ns : req_ns;
            int64_t since = c->since_ns;
            /* the first request is timed from accept until it is handed
             * over; its answer, like any, from the end of the call (a first
             * call that ran past request_timeout_s was once cut off while
             * its answer was being sent) */
            if (c->served == 0 && !c->handed) {
                limit = req_ns;
                since = c->accepted_ns;
            }
            if (c->over_status && c->phase == PHASE_IDLE) /* 1 s to hear why */
                limit = LOOM_NS_PER_S < limit ? LOOM_NS_PER_S : limit;
            if (now - since > limit) {
                loom_log_info("http connection timed out", "phase=%s after_s=%.1f",
                              c->served == 0           ? "first request"
                              : c->phase == PHASE_IDLE ? "idle"
                                                       : "request",
                              (double)(now - since) / 1e9);
                conn_kill(c);
                atomic_fetch_add(&s->timeouts, 1);
            }
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 200L * 1000 * 1000; /* wake every 200 ms */
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&s->wake, &s->mu, &ts);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* --------------------------------------------------------------- routes */

static bool authorized(loom_rpc_server_t *s, struct MHD_Connection *c)
{
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h)
        return false;
    while (*h == ' ')
        h++;
    if (strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    h += 7;
    while (*h == ' ')
        h++;
    char given[LOOM_RPC_TOKEN_HEX + 2];
    size_t n = 0;
    while (h[n] && h[n] != ' ' && n < sizeof given - 1) {
        given[n] = h[n];
        n++;
    }
    given[n] = '\0';
    bool ok = loom_rpc_token_equal(s->token, given);
    explicit_bzero(given, sizeof given);
    return ok;
}

static bool is_json_type(const char *ct)
{
    if (!ct)
        return true; /* absent: assume JSON */
    while (*ct == ' ')
        ct++;
    size_t n = strlen("application/json");
    return strncasecmp(ct, "application/json", n) == 0 &&
           (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static enum MHD_Result serve_metrics(loom_rpc_server_t *s, struct MHD_Connection *c, req_t *r)
{
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = loom_buf_append_str(&b, "# HELP loom_http_requests_total HTTP requests by path and "
                                     "status.\n# TYPE loom_http_requests_total counter\n");
    for (int p = 0; p < PATH_N && rc == LOOM_OK; p++) {
        for (size_t k = 0; k <= N_STATUS && rc == LOOM_OK; k++) {
            uint64_t v = atomic_load_explicit(&s->requests[p][k], memory_order_relaxed);
            /* always show the /rpc 200 series so that rates start at 0 */
            if (v == 0 && !(p == PATH_RPC && k == 0))
                continue;
            char code[16];
            if (k < N_STATUS)
                snprintf(code, sizeof code, "%u", status_codes[k]);
            else
                snprintf(code, sizeof code, "other");
            rc = loom_buf_appendf(&b, "loom_http_requests_total{path=\"%s\",code=\"%s\"} %llu\n",
                                  path_label[p], code, (unsigned long long)v);
        }
    }
    if (rc == LOOM_OK)
        rc = loom_buf_append_str(&b, "# HELP loom_http_request_duration_seconds Time from the "
                                     "request line to the queued response.\n"
                                     "# TYPE loom_http_request_duration_seconds histogram\n");
    for (int p = 0; p < PATH_N && rc == LOOM_OK; p++) {
        char lbl[64];
        snprintf(lbl, sizeof lbl, "path=\"%s\"", path_label[p]);
        rc = rpc_hist_format(&s->latency[p], "loom_http_request_duration_seconds", lbl, &b);
    }
    if (rc == LOOM_OK)
        rc = loom_buf_appendf(
            &b,
            "# HELP loom_http_requests_in_flight HTTP requests received and not yet answered.\n"
            "# TYPE loom_http_requests_in_flight gauge\n"
            "loom_http_requests_in_flight %ld\n"
            "# HELP loom_http_connections Open HTTP connections.\n"
            "# TYPE loom_http_connections gauge\n"
            "loom_http_connections %ld\n"
            "# HELP loom_http_connections_total HTTP connections accepted.\n"
            "# TYPE loom_http_connections_total counter\n"
            "loom_http_connections_total %llu\n"
            "# HELP loom_http_timeouts_total Connections closed for being idle or slow.\n"
            "# TYPE loom_http_timeouts_total counter\n"
            "loom_http_timeouts_total %llu\n"
            "# HELP loom_http_evictions_total Unauthenticated connections closed to make room.\n"
            "# TYPE loom_http_evictions_total counter\n"
            "loom_http_evictions_total %llu\n",
            atomic_load(&s->in_flight), atomic_load(&s->connections),
            (unsigned long long)atomic_load(&s->accepted),
            (unsigned long long)atomic_load(&s->timeouts),
            (unsigned long long)atomic_load(&s->evicted));
    if (rc == LOOM_OK)
        rc = loom_rpc_dispatcher_metrics(s->d, &b);
    pthread_mutex_lock(&s->mu);
    size_t n = s->nsources;
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < n && rc == LOOM_OK; i++)
        rc = s->sources[i].fn(&b, s->sources[i].ctx);
    enum MHD_Result ret;
    if (rc == LOOM_OK)
        ret = respond(c, r, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
                      b.data ? b.data : "", b.len, false);
    else
        ret = respond_error(c, r, MHD_HTTP_INTERNAL_SERVER_ERROR, "a metrics source failed", false);
    loom_buf_free(&b);
    return ret;
}

/* The answer to a request whose body passed the limit. The body was read
 * (and dropped): the connection stays in step. */
static enum MHD_Result refuse_too_large(loom_rpc_server_t *s, struct MHD_Connection *c, req_t *r)
{
    char detail[160];
    snprintf(detail, sizeof detail, "request body exceeds the limit of %zu bytes", s->cfg.max_body);
    return respond_error(c, r, MHD_HTTP_CONTENT_TOO_LARGE, detail, false);
}

static enum MHD_Result serve_rpc(loom_rpc_server_t *s, struct MHD_Connection *c, req_t *r)
{
    if (r->too_large)
        return refuse_too_large(s, c, r);
    set_phase(s, r->conn, PHASE_BUSY);
    loom_buf_t out = LOOM_BUF_INIT;
    int rc =
        loom_rpc_handle(s->d, r->body.data ? r->body.data : "", r->body.len, &r->transport, &out);
    set_phase(s, r->conn, PHASE_REQUEST);
    enum MHD_Result ret;
    if (rc != LOOM_OK)
        ret = respond_error(c, r, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory", false);
    else if (out.len == 0) /* notifications only */
        ret = respond(c, r, MHD_HTTP_NO_CONTENT, NULL, "", 0, false);
    else
        ret = respond(c, r, MHD_HTTP_OK, "application/json", out.data, out.len, false);
    loom_buf_free(&out);
    return ret;
}

/* Hands a request to the configured hook. The connection is BUSY while the
 * hook has it (until the request completes), so a stream it holds open is
 * not closed by the watchdog as a slow request. */
static enum MHD_Result serve_hook(loom_rpc_server_t *s, struct MHD_Connection *c, req_t *r,
                                  const char *url, const char *method)
{
    if (r->too_large)
        return refuse_too_large(s, c, r);
    set_phase(s, r->conn, PHASE_BUSY);
    loom_rpc_http_req_t hr = {.method = method,
                              .url = url,
                              .body = r->body.data ? r->body.data : "",
                              .body_len = r->body.len,
                              .unix_socket = r->transport.unix_socket,
                              .peer = r->transport.peer};
    int ret = s->cfg.http_hook->fn(s->cfg.http_hook->ctx, c, &hr);
    if (hr.proven && r->conn) {
        pthread_mutex_lock(&s->mu);
        r->conn->proven = true;
        pthread_mutex_unlock(&s->mu);
    }
    r->status = hr.status ? hr.status : 500;
    r->responded = true;
    return ret ? MHD_YES : MHD_NO;
}

/* The dispatcher's abandon check (loom_rpc_dispatcher_on_abandoned): the
 * server is stopping, or the client closed its end (a client waiting for
 * its answer keeps it open; one that left shows a hang-up). */
static bool request_abandoned(void *request_ctx, void *ctx)
{
    loom_rpc_server_t *s = ctx;
    const loom_rpc_transport_t *t = request_ctx;
    if (atomic_load(&s->draining))
        return true;
    if (!t || !t->has_fd || t->fd < 0)
        return false;
    struct pollfd p = {.fd = t->fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static void describe_peer(listener_t *l, struct MHD_Connection *c, loom_rpc_transport_t *t)
{
    t->unix_socket = l->is_unix;
    const union MHD_ConnectionInfo *fi =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    t->has_fd = fi != NULL;
    t->fd = fi ? fi->connect_fd : -1;
    if (l->is_unix) {
        snprintf(t->peer, sizeof t->peer, "unix");
        return;
    }
    snprintf(t->peer, sizeof t->peer, "?");
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr)
        return;
    char host[INET6_ADDRSTRLEN] = "?";
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        snprintf(t->peer, sizeof t->peer, "%s:%u", host, ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const void *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        snprintf(t->peer, sizeof t->peer, "[%s]:%u", host, ntohs(in6->sin6_port));
    }
}

/* Request smuggling: two Content-Length headers (MHD would use the first
 * and read the rest as a new request), or Content-Length together with
 * Transfer-Encoding (RFC 9112 6.3: the two disagree on where the body
 * ends). Either is answered 400 and the connection closed. */
typedef struct framing {
    unsigned content_length, transfer_encoding;
} framing_t;

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    (void)value;
    framing_t *f = cls;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
        f->content_length++;
    else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
        f->transfer_encoding++;
    return MHD_YES;
}

/* RFC 9110 8.6: Content-Length = 1*DIGIT. A sign ("-1", "+47"), a list
 * ("47, 47"), a fraction ("1.5") or a value past 2^63 is read one way by
 * one parser and another way by the next: refused the same way. */
static bool bad_content_length(struct MHD_Connection *c)
{
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!cl)
        return false;
    size_t n = strspn(cl, "0123456789");
    return n == 0 || n > 18 || cl[n] != '\0';
}

static bool bad_framing(struct MHD_Connection *c)
{
    framing_t f = {0, 0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_framing, &f);
    return f.content_length > 1 || (f.content_length && f.transfer_encoding) ||
           bad_content_length(c);
}

/* Notes an error found in the headers. It is answered once the body (if
 * any) has been read and discarded, so the connection stays usable and the
 * client never meets a reset while its body is still in flight. */
static bool defer_error(req_t *r, unsigned status, const char *detail)
{
    r->early_status = status;
    snprintf(r->early_detail, sizeof r->early_detail, "%s", detail);
    return false;
}

/* The identity hook (multi-user): the caller of this request, from the
 * connection's cached identity while it is valid for the same
 * Authorization value, else from the hook. The identity is owned by the
 * connection, whose requests run one after another on its thread. */
static bool auth_request(loom_rpc_server_t *s, listener_t *l, struct MHD_Connection *c, req_t *r,
                         loom_err_t *err)
{
    conn_t *conn = r->conn;
    if (!conn) {
        loom_err_set(err, LOOM_ENOMEM, "out of memory");
        return false;
    }
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    const char *given = h ? h : "";
    if (conn->identity && conn->identity_auth && strcmp(conn->identity_auth, given) == 0 &&
        loom_time_mono_ns() < conn->identity_until_ns) {
        r->transport.identity = conn->identity;
        conn_claim(s, conn, conn->identity);
        return true;
    }
    loom_rpc_auth_input_t in = {l->is_unix, conn->fd, h, r->transport.peer};
    void *id = NULL;
    int64_t until = 0;
    if (s->cfg.identity.authenticate(&in, &id, &until, err, s->cfg.identity.ctx) != LOOM_OK)
        return false;
    if (conn->identity && s->cfg.identity.identity_free)
        s->cfg.identity.identity_free(conn->identity);
    free(conn->identity_auth);
    conn->identity = id;
    conn->identity_auth = strdup(given);
    conn->identity_until_ns = conn->identity_auth ? until : 0;
    r->transport.identity = id;
    conn_claim(s, conn, id);
    return true;
}

/* First call for a request (headers complete): route, method, auth,
 * announced size. Returns true and sets *ret when it answered already (an
 * announced body over the limit: answered at once, connection closed). */
static bool first_call(listener_t *l, struct MHD_Connection *c, req_t *r, const char *url,
                       const char *method, enum MHD_Result *ret)
{
    loom_rpc_server_t *s = l->s;
    const char *q = strchr(url, '?');
    size_t ulen = q ? (size_t)(q - url) : strlen(url);
    if (ulen == 4 && strncmp(url, "/rpc", 4) == 0)
        r->path = PATH_RPC;
    else if (ulen == 8 && strncmp(url, "/healthz", 8) == 0)
        r->path = PATH_HEALTHZ;
    else if (ulen == 8 && strncmp(url, "/metrics", 8) == 0)
        r->path = PATH_METRICS;
    else if (s->cfg.http_hook)
        r->path = PATH_HOOK; /* its own access control: see serve_hook */
    describe_peer(l, c, &r->transport);

    if (bad_framing(c)) {
        *ret = respond_error(c, r, MHD_HTTP_BAD_REQUEST,
                             "bad message framing: more than one Content-Length, "
                             "Content-Length with Transfer-Encoding, or a Content-Length that "
                             "is not a decimal number of bytes",
                             true);
        return true;
    }
    /* The identity hook judges /rpc and the fixed paths; the HTTP hook's
     * paths (the dashboard) do their own access control (its session
     * cookie, bound to a user when its login code was issued). */
    bool hook = s->cfg.identity.authenticate != NULL && r->path != PATH_HOOK;
    bool exempt = !l->is_unix && r->path == PATH_HEALTHZ && s->cfg.healthz_without_auth;
    loom_err_t aerr = {0};
    bool proven = hook ? exempt || auth_request(s, l, c, r, &aerr)
                       : !s->auth || l->is_unix || authorized(s, c);
    if (hook && !proven) {
        char detail[sizeof aerr.msg + 32];
        snprintf(detail, sizeof detail, "not authenticated: %s", aerr.msg);
        return defer_error(r, MHD_HTTP_UNAUTHORIZED, detail);
    }
    if (!exempt && r->conn && r->conn->over_status) { /* fair share: see the top */
        r->early_close = true;
        return defer_error(r, r->conn->over_status, r->conn->over_detail);
    }
    if (proven && r->conn) {
        pthread_mutex_lock(&s->mu);
        r->conn->proven = true;
        pthread_mutex_unlock(&s->mu);
    }
    if (r->path == PATH_HOOK)
        return false;
    bool needs_token =
        s->auth && !l->is_unix && !(r->path == PATH_HEALTHZ && s->cfg.healthz_without_auth);
    if (needs_token && !proven) {
        return defer_error(r, MHD_HTTP_UNAUTHORIZED,
                           "missing or wrong bearer token: send 'Authorization: Bearer "
                           "<token>' (the token is in STATE_DIR/token)");
    }
    if (r->path == PATH_OTHER) {
        return defer_error(r, MHD_HTTP_NOT_FOUND, "no such path; try POST /rpc");
    }
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if ((r->path == PATH_RPC && strcmp(method, "POST") != 0) || (r->path != PATH_RPC && !get)) {
        char detail[128];
        snprintf(detail, sizeof detail, "method %.16s not allowed on %s; use %s", method,
                 path_label[r->path], r->path == PATH_RPC ? "POST" : "GET");
        return defer_error(r, MHD_HTTP_METHOD_NOT_ALLOWED, detail);
    }
    if (r->path == PATH_RPC) {
        const char *ct =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (!is_json_type(ct)) {
            char detail[160];
            snprintf(detail, sizeof detail,
                     "Content-Type '%.64s' not supported; expected application/json", ct);
            return defer_error(r, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, detail);
        }
        const char *cl =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl) {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(cl, &end, 10);
            if (errno == 0 && *end == '\0' && n > s->cfg.max_body) {
                char detail[160];
                snprintf(detail, sizeof detail,
                         "request body of %llu bytes exceeds the limit of %zu bytes", n,
                         s->cfg.max_body);
                /* Up to 8 times the limit, read and drop the body, then
                 * answer: a client still sending would otherwise meet a
                 * reset instead of the 413 (curl reports "send failure").
                 * Beyond that, answer at once and close. */
                if (n / 8 <= s->cfg.max_body)
                    return defer_error(r, MHD_HTTP_CONTENT_TOO_LARGE, detail);
                *ret = respond_error(c, r, MHD_HTTP_CONTENT_TOO_LARGE, detail, true);
                return true;
            }
        }
    }
    return false;
}

/* "ok", or 503 with the health function's reason (a store that cannot
 * write: balancers and monitors should see it, not only clients whose
 * writes fail). */
static enum MHD_Result serve_healthz(loom_rpc_server_t *s, struct MHD_Connection *c, req_t *r)
{
    loom_rpc_health_fn fn = atomic_load(&s->health);
    const char *why = fn ? fn(atomic_load(&s->health_ctx)) : NULL;
    if (!why)
        return respond(c, r, MHD_HTTP_OK, "text/plain; charset=utf-8", "ok\n", 3, false);
    char text[256];
    int n = snprintf(text, sizeof text, "unhealthy: %s\n", why);
    return respond(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", text,
                   (size_t)n < sizeof text ? (size_t)n : sizeof text - 1, false);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    listener_t *l = cls;
    loom_rpc_server_t *s = l->s;
    req_t *r = *con_cls;
    if (!r) /* on_uri failed to allocate */
        return MHD_NO;
    if (r->status == 0) {
        r->status = 1; /* first call seen */
        enum MHD_Result ret;
        if (first_call(l, c, r, url, method, &ret))
            return ret;
        return MHD_YES; /* the next calls bring the body, then the end */
    }
    if (*upload_data_size) {
        if ((r->path == PATH_RPC || r->path == PATH_HOOK) && !r->early_status && !r->too_large) {
            if (r->body.len + *upload_data_size > s->cfg.max_body) {
                r->too_large = true;
                loom_buf_free(&r->body);
            } else if (loom_buf_append(&r->body, upload_data, *upload_data_size) != LOOM_OK) {
                return MHD_NO;
            }
        }
        *upload_data_size = 0; /* consumed (or discarded) */
        return MHD_YES;
    }
    if (r->responded)
        return MHD_YES;
    if (r->early_status)
        return respond_error(c, r, r->early_status, r->early_detail, r->early_close);
    if (r->path == PATH_RPC)
        return serve_rpc(s, c, r);
    if (r->path == PATH_HOOK)
        return serve_hook(s, c, r, url, method);
    if (r->path == PATH_HEALTHZ && atomic_load(&s->draining)) /* tell balancers to go */
        return respond(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8",
                       "stopping\n", 9, true);
    if (r->path == PATH_HEALTHZ)
        return serve_healthz(s, c, r);
    return serve_metrics(s, c, r);
}

/* -------------------------------------------------------------- sockets */

static int listen_tcp(const char *addr, int *out_fd, uint16_t *port, loom_err_t *err)
{
    char host[256];
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr)
        return loom_err_set(err, LOOM_EINVAL, "listen address '%s': expected HOST:PORT", addr);
    size_t hlen = (size_t)(colon - addr);
    const char *h = addr;
    if (addr[0] == '[') {
        if (hlen < 2 || addr[hlen - 1] != ']')
            return loom_err_set(err, LOOM_EINVAL, "listen address '%s': expected [IPV6]:PORT",
                                addr);
        h = addr + 1;
        hlen -= 2;
    }
    if (hlen >= sizeof host)
        return loom_err_set(err, LOOM_EINVAL, "listen address '%s': host too long", addr);
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    int64_t p;
    if (loom_parse_i64(colon + 1, 0, 65535, &p, "port", err) != LOOM_OK)
        return loom_err_prefix(err, "listen address '%s'", addr);

    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | AI_PASSIVE};
    struct addrinfo *ai = NULL;
    int gai = getaddrinfo(host, colon + 1, &hints, &ai);
    if (gai != 0)
        return loom_err_set(err, LOOM_EINVAL, "listen address '%s': %s", addr, gai_strerror(gai));
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        freeaddrinfo(ai);
        return loom_err_errno(err, LOOM_EIO, errno, "listen address '%s': socket", addr);
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
        int e = errno;
        freeaddrinfo(ai);
        close(fd);
        return loom_err_errno(err, e == EADDRINUSE ? LOOM_EEXIST : LOOM_EIO, e,
                              "cannot listen on '%s'", addr);
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss = {0};
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
        int e = errno;
        close(fd);
        return loom_err_errno(err, LOOM_EIO, e, "listen address '%s': getsockname", addr);
    }
    *port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                     : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    *out_fd = fd;
    return LOOM_OK;
}

static int listen_unix(const char *path, int *out_fd, loom_err_t *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return loom_err_set(err, LOOM_EINVAL, "socket path '%s': longer than %zu bytes", path,
                            sizeof sa.sun_path - 1);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return loom_err_set(err, LOOM_EEXIST,
                                "socket path '%s': exists and is not a socket; not replacing it",
                                path);
        /* A socket file: in use by a live server, or stale? */
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
            close(probe);
            return loom_err_set(err, LOOM_EEXIST,
                                "socket path '%s': another server is listening there", path);
        }
        if (probe >= 0)
            close(probe);
        unlink(path);
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return loom_err_errno(err, LOOM_EIO, errno, "socket path '%s': socket", path);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        close(fd);
        return loom_err_errno(err, LOOM_EIO, e, "cannot bind socket '%s'", path);
    }
    /* Nobody can connect before listen(), so the mode is right in time. */
    if (chmod(path, 0600) != 0 || listen(fd, SOMAXCONN) != 0) {
        int e = errno;
        close(fd);
        unlink(path);
        return loom_err_errno(err, LOOM_EIO, e, "cannot listen on socket '%s'", path);
    }
    *out_fd = fd;
    return LOOM_OK;
}

/* MHD's own inactivity timeout is set 2 s beyond idle_timeout_s: the
 * watchdog closes idle connections (and counts them); MHD's is a backstop. */
static int start_mhd(loom_rpc_server_t *s, listener_t *l, loom_err_t *err)
{
    l->s = s;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    /* MHD's own limit leaves room for evicted connections still closing:
     * on TCP the accept policy keeps the count of live ones. */
    unsigned limit =
        s->cfg.max_connections + s->cfg.reserved_connections + (l->is_unix ? 0 : EVICTION_SLACK);
    l->mhd = MHD_start_daemon(flags, 0, on_accept, l, on_request, l, MHD_OPTION_EXTERNAL_LOGGER,
                              mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)l->fd,
                              MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_CONNECTION_TIMEOUT,
                              (unsigned)s->cfg.idle_timeout_s + 2, MHD_OPTION_NOTIFY_CONNECTION,
                              on_connection, l, MHD_OPTION_URI_LOG_CALLBACK, on_uri, l,
                              MHD_OPTION_NOTIFY_COMPLETED, on_completed, l, MHD_OPTION_END);
    if (!l->mhd)
        return loom_err_set(err, LOOM_EIO, "cannot start the HTTP server on the %s listener",
                            l->is_unix ? "Unix socket" : "TCP");
    return LOOM_OK;
}

/* --------------------------------------------------------------- public */

void loom_rpc_server_config_init(loom_rpc_server_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->listen = "127.0.0.1:7750";
    cfg->healthz_without_auth = true;
    cfg->max_body = 1u << 20;
    cfg->max_connections = 128;
    cfg->max_per_address = 32;
    cfg->max_per_user = 32;
    cfg->reserved_connections = 16;
    cfg->idle_timeout_s = 30;
    cfg->request_timeout_s = 10;
    cfg->drain_timeout_s = 30;
}

static void server_free(loom_rpc_server_t *s)
{
    free(s->listen_copy);
    free(s->socket_copy);
    free(s->challenge_copy);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->wake);
    explicit_bzero(s->token, sizeof s->token);
    free(s);
}

int loom_rpc_server_start(const loom_rpc_server_config_t *cfg, loom_rpc_dispatcher_t *d,
                          loom_rpc_server_t **out, loom_err_t *err)
{
    bool tcp = cfg->listen && cfg->listen[0];
    if (!tcp && !cfg->socket_path)
        return loom_err_set(err, LOOM_EINVAL,
                            "rpc server: expected a listen address, a socket path or both");
    if (tcp && !cfg->token && !cfg->allow_no_auth && !cfg->identity.authenticate)
        return loom_err_set(err, LOOM_EINVAL, "rpc server: TCP listener needs a token");
    if (cfg->token && strlen(cfg->token) != LOOM_RPC_TOKEN_HEX)
        return loom_err_set(err, LOOM_EINVAL, "rpc server: token: expected %d hex characters",
                            LOOM_RPC_TOKEN_HEX);
    loom_rpc_server_t *s = calloc(1, sizeof *s);
    if (!s)
        return loom_err_set(err, LOOM_ENOMEM, "rpc server: out of memory");
    s->d = d;
    s->cfg = *cfg;
    loom_rpc_server_config_t def;
    loom_rpc_server_config_init(&def);
    if (!s->cfg.max_body)
        s->cfg.max_body = def.max_body;
    if (!s->cfg.max_connections)
        s->cfg.max_connections = def.max_connections;
    if (!s->cfg.max_per_address)
        s->cfg.max_per_address = def.max_per_address;
    if (!s->cfg.max_per_user)
        s->cfg.max_per_user = def.max_per_user;
    if (!s->cfg.idle_timeout_s)
        s->cfg.idle_timeout_s = def.idle_timeout_s;
    if (!s->cfg.request_timeout_s)
        s->cfg.request_timeout_s = def.request_timeout_s;
    if (!s->cfg.drain_timeout_s)
        s->cfg.drain_timeout_s = def.drain_timeout_s;
    s->listen_copy = tcp ? strdup(cfg->listen) : NULL;
    s->socket_copy = cfg->socket_path ? strdup(cfg->socket_path) : NULL;
    s->cfg.listen = s->listen_copy;
    s->cfg.socket_path = s->socket_copy;
    s->cfg.token = NULL;
    s->cfg.identity.challenge = NULL;
    s->challenge_copy = cfg->identity.challenge ? strdup(cfg->identity.challenge) : NULL;
    s->cfg.identity.challenge = s->challenge_copy;
    if (cfg->token) {
        memcpy(s->token, cfg->token, LOOM_RPC_TOKEN_HEX + 1);
        s->auth = true;
    }
    s->conns.next = s->conns.prev = &s->conns;
    s->tcp.fd = s->unx.fd = -1;
    s->unx.is_unix = true;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &ca);
    pthread_condattr_destroy(&ca);
    int rc = LOOM_OK;
    if ((tcp && !s->listen_copy) || (cfg->socket_path && !s->socket_copy) ||
        (cfg->identity.challenge && !s->challenge_copy)) {
        rc = loom_err_set(err, LOOM_ENOMEM, "rpc server: out of memory");
        goto fail;
    }
    if (tcp && (rc = listen_tcp(s->listen_copy, &s->tcp.fd, &s->port, err)) != LOOM_OK)
        goto fail;
    if (s->socket_copy && (rc = listen_unix(s->socket_copy, &s->unx.fd, err)) != LOOM_OK)
        goto fail_tcp;
    loom_rpc_dispatcher_on_abandoned(d, request_abandoned, s);
    if (pthread_create(&s->watchdog, NULL, watchdog_main, s) != 0) {
        rc = loom_err_set(err, LOOM_EIO, "rpc server: cannot start the watchdog thread");
        goto fail_unix;
    }
    /* If MHD fails to start, whether it closed the socket we handed it is
     * not documented: forget the fd (a leak on a failed start) rather than
     * risk closing a number that may already be reused. */
    if (tcp && (rc = start_mhd(s, &s->tcp, err)) != LOOM_OK) {
        s->tcp.fd = -1;
        goto fail_watchdog;
    }
    if (s->socket_copy && (rc = start_mhd(s, &s->unx, err)) != LOOM_OK) {
        s->unx.fd = -1;
        unlink(s->socket_copy);
        goto fail_mhd;
    }
    loom_log_info("rpc server listening", "tcp=\"%s\" port=%u unix=\"%s\" auth=%s",
                  tcp ? s->listen_copy : "", s->port, s->socket_copy ? s->socket_copy : "",
                  s->cfg.identity.authenticate ? "identity hook"
                  : s->auth                    ? "token"
                                               : "none");
    *out = s;
    return LOOM_OK;

fail_mhd:
    if (s->tcp.mhd) {
        MHD_stop_daemon(s->tcp.mhd); /* closes its listen socket */
        s->tcp.fd = -1;
    }
fail_watchdog:
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->watchdog, NULL);
fail_unix:
    if (s->unx.fd >= 0) {
        close(s->unx.fd);
        unlink(s->socket_copy);
    }
fail_tcp:
    if (s->tcp.fd >= 0)
        close(s->tcp.fd);
fail:
    loom_rpc_dispatcher_on_abandoned(d, NULL, NULL);
    server_free(s);
    return rc;
}

void loom_rpc_server_set_health(loom_rpc_server_t *s, loom_rpc_health_fn fn, void *ctx)
{
    atomic_store(&s->health_ctx, ctx);
    atomic_store(&s->health, fn);
}

long loom_rpc_server_connections(loom_rpc_server_t *s)
{
    return atomic_load(&s->connections);
}

uint16_t loom_rpc_server_port(const loom_rpc_server_t *s)
{
    return s->port;
}

int loom_rpc_server_add_metrics_source(loom_rpc_server_t *s, loom_rpc_metrics_fn fn, void *ctx)
{
    pthread_mutex_lock(&s->mu);
    if (s->nsources == MAX_SOURCES) {
        pthread_mutex_unlock(&s->mu);
        return LOOM_ELIMIT;
    }
    s->sources[s->nsources].fn = fn;
    s->sources[s->nsources].ctx = ctx;
    s->nsources++;
    pthread_mutex_unlock(&s->mu);
    return LOOM_OK;
}

void loom_rpc_server_stop(loom_rpc_server_t *s)
{
    if (!s)
        return;
    atomic_store(&s->draining, true);
    listener_t *ls[2] = {&s->tcp, &s->unx};
    for (int i = 0; i < 2; i++) {
        if (ls[i]->mhd && MHD_quiesce_daemon(ls[i]->mhd) != MHD_INVALID_SOCKET)
            ls[i]->quiesced = true; /* the listen fd is ours to close after stop */
    }
    if (s->socket_copy)
        unlink(s->socket_copy); /* new clients fail at once, not time out */
    int64_t deadline = loom_time_mono_ns() + (int64_t)s->cfg.drain_timeout_s * LOOM_NS_PER_S;
    while (atomic_load(&s->in_flight) > 0 && loom_time_mono_ns() < deadline)
        loom_time_sleep_until_ns(loom_time_mono_ns() + 5 * LOOM_NS_PER_MS);
    long left = atomic_load(&s->in_flight);
    if (left > 0)
        loom_log_warn("rpc server stopping with requests in flight", "count=%ld", left);
    for (int i = 0; i < 2; i++) {
        if (ls[i]->mhd)
            MHD_stop_daemon(ls[i]->mhd);
        if (ls[i]->quiesced && ls[i]->fd >= 0)
            close(ls[i]->fd);
    }
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->watchdog, NULL);
    loom_rpc_dispatcher_on_abandoned(s->d, NULL, NULL);
    loom_log_info("rpc server stopped", NULL);
    server_free(s);
}
