/* loomd's web dashboard: who may see it, and its routes.
 *
 * Access follows Jupyter's one-time URL. `loom dash` calls dash.login over
 * the authenticated RPC (the Unix socket, or TCP with the token) and gets a
 * code; GET /login?code=C exchanges it, once and within 60 s (DASH_CODE_TTL_S),
 * for a session: an HttpOnly, SameSite=Strict cookie bound to the identity
 * of dash.login's caller and a per-session CSRF token that the page reads
 * from GET /api/session and sends in X-Loom-CSRF with every POST. Without a
 * live session every path but /login is 401.
 *
 * In multi-user mode the identity is the one loomd saw when the code was
 * issued (SO_PEERCRED on the Unix socket, MUNGE or the operator token on
 * TCP): the page's calls run as that user, so job.cancel and job.get obey
 * the same rules as the RPC, and the log route checks them too and opens
 * the output as that user. Single-user mode keeps no identity: every
 * session is loomd's own user, as every RPC caller is.
 *
 * Routes (with a session):
 *   GET  /, /app.js, /app.css   the page, built into loomd (dash_assets.c)
 *   GET  /api/session           {"csrf", "who", "expires"}
 *   POST /api/rpc               one JSON-RPC call of the read methods and
 *                               job.cancel, run by the dispatcher
 *   GET  /api/log?id=N&offset=K a job's output from byte K (K < 0: the tail; an
 *                               ended job without one: "error" and its "reason")
 *   GET  /events                Server-Sent Events (dash_feed.c)
 *   POST /logout                ends the session
 *
 * Codes and sessions live in small fixed tables, so memory is bounded
 * whatever clients do. In multi-user mode one user (not an operator) holds
 * at most DASH_CODES_PER_USER live codes and DASH_SESSIONS_PER_USER
 * sessions: a new one replaces that user's own oldest, never another
 * user's; when the table is full of other users' live entries the new one
 * is refused (-32015). Operators (and single-user mode) replace the oldest. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

#include "daemon/authz.h"
#include "daemon/dash.h"
#include "daemon/identity.h"

#define DASH_MAX_CODES         64
#define DASH_MAX_SESSIONS      256
#define DASH_CODES_PER_USER    4
#define DASH_SESSIONS_PER_USER 8
#define DASH_CODE_TTL_S        60
#define DASH_SESSION_TTL_S     (8 * 3600)
#define DASH_LOG_CHUNK         (64 * 1024)
#define DASH_LOG_TAIL          (16 * 1024)
#define SECRET_HEX             64

/* Who a code or session acts as: in multi-user mode (bound) the caller of
 * dash.login; else nobody in particular (loomd's own user). */
typedef struct dash_owner {
    bool bound;
    loom_auth_identity_t id;
} dash_owner_t;

typedef struct dash_code {
    char code[SECRET_HEX + 1];
    int64_t expires_ns; /* 0: free */
    dash_owner_t owner;
} dash_code_t;

typedef struct dash_session {
    char id[SECRET_HEX + 1];
    char csrf[SECRET_HEX + 1];
    char who[96];
    int64_t expires_ns; /* 0: free */
    dash_owner_t owner;
} dash_session_t;

struct loomd_dash {
    loom_rpc_dispatcher_t *d;
    loom_store_t *store;
    const loomd_info_t *info;
    const loomd_identity_t *ident;
    loom_rpc_http_hook_t hook;
    dash_feed_t *feed;
    dash_logs_t *logs;
    int code_ttl_s, session_ttl_s;
    pthread_mutex_t mu;
    dash_code_t codes[DASH_MAX_CODES];
    dash_session_t sessions[DASH_MAX_SESSIONS];
};

/* The methods a page may call: what it shows, and the one action. */
static const char *const page_methods[] = {"server.info",  "job.list",  "job.get",
                                           "job.cancel",   "node.list", "monitor.snapshot",
                                           "usage.report", "job.usage", "cluster.usage"};

/* ------------------------------------------------------------ secrets */

static int random_hex(char out[SECRET_HEX + 1])
{
    return loom_secret_hex(out, SECRET_HEX / 2, NULL);
}

/* A given secret of the right shape: exactly SECRET_HEX hex digits. */
static bool secret_shape(const char *s, size_t n)
{
    if (n != SECRET_HEX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* --------------------------------------------------------- dash.login */

/* The session's name on the page: the user (uid), or, single-user, the
 * token holder (the one user loomd serves). */
static void owner_name(const dash_owner_t *o, char *out, size_t len)
{
    if (!o->bound)
        snprintf(out, len, "token holder");
    else if (o->id.user[0])
        snprintf(out, len, "%s (uid %u)%s", o->id.user, (unsigned)o->id.uid,
                 o->id.is_operator ? ", operator" : "");
    else
        snprintf(out, len, "uid %u%s", (unsigned)o->id.uid, o->id.is_operator ? ", operator" : "");
}

/* The slot for a new code or session of who in a table of n entries (their
 * expiry times and owners), or -1 when the table is full of other users'
 * live entries (see the top of the file). */
static long pick_slot(size_t n, const int64_t *expires, const dash_owner_t *const *owners,
                      const dash_owner_t *who, unsigned per_user, int64_t now)
{
    bool limited = who->bound && !who->id.is_operator;
    unsigned mine = 0;
    long my_oldest = -1, free_slot = -1, oldest = -1;
    for (size_t i = 0; i < n; i++) {
        if (expires[i] <= now) {
            free_slot = free_slot < 0 ? (long)i : free_slot;
            continue;
        }
        if (oldest < 0 || expires[i] < expires[oldest])
            oldest = (long)i;
        if (limited && owners[i]->bound && owners[i]->id.uid == who->id.uid) {
            mine++;
            if (my_oldest < 0 || expires[i] < expires[my_oldest])
                my_oldest = (long)i;
        }
    }
    if (limited && mine >= per_user)
        return my_oldest;
    if (free_slot >= 0)
        return free_slot;
    return limited ? -1 : oldest;
}

static long pick_code_slot(loomd_dash_t *dash, const dash_owner_t *who, int64_t now)
{
    int64_t expires[DASH_MAX_CODES];
    const dash_owner_t *owners[DASH_MAX_CODES];
    for (size_t i = 0; i < DASH_MAX_CODES; i++) {
        expires[i] = dash->codes[i].expires_ns;
        owners[i] = &dash->codes[i].owner;
    }
    return pick_slot(DASH_MAX_CODES, expires, owners, who, DASH_CODES_PER_USER, now);
}

static long pick_session_slot(loomd_dash_t *dash, const dash_owner_t *who, int64_t now)
{
    int64_t expires[DASH_MAX_SESSIONS];
    const dash_owner_t *owners[DASH_MAX_SESSIONS];
    for (size_t i = 0; i < DASH_MAX_SESSIONS; i++) {
        expires[i] = dash->sessions[i].expires_ns;
        owners[i] = &dash->sessions[i].owner;
    }
    return pick_slot(DASH_MAX_SESSIONS, expires, owners, who, DASH_SESSIONS_PER_USER, now);
}

static loom_rpc_status_t m_dash_login(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)params;
    loomd_dash_t *dash = ctx;
    loom_auth_identity_t local;
    dash_owner_t owner = {.bound = loomd_identity_multi_user(dash->ident)};
    owner.id = *loomd_caller(dash->ident, call, &local);
    char code[SECRET_HEX + 1];
    if (random_hex(code) != LOOM_OK) {
        loom_rpc_call_fail(call, LOOM_RPC_INTERNAL_ERROR, "dash.login: no random bytes", NULL);
        return LOOM_RPC_DONE;
    }
    int64_t now = loom_time_mono_ns();
    pthread_mutex_lock(&dash->mu);
    long slot = pick_code_slot(dash, &owner, now);
    if (slot >= 0) {
        memcpy(dash->codes[slot].code, code, sizeof code);
        dash->codes[slot].expires_ns = now + (int64_t)dash->code_ttl_s * LOOM_NS_PER_S;
        dash->codes[slot].owner = owner;
    }
    pthread_mutex_unlock(&dash->mu);
    if (slot < 0) {
        explicit_bzero(code, sizeof code);
        loom_rpc_call_failf(
            call, LOOM_RPC_USER_LIMIT,
            json_pack("{s:s,s:i}", "limit", "dashboard login codes", "allowed", DASH_MAX_CODES),
            "dash.login: %d login codes of other users are outstanding, the most "
            "loomd keeps; retry within %d s",
            DASH_MAX_CODES, dash->code_ttl_s);
        return LOOM_RPC_DONE;
    }
    char path[100];
    snprintf(path, sizeof path, "/login?code=%s", code);
    json_t *url = json_null();
    if (dash->info && dash->info->tcp_url) {
        char full[400];
        snprintf(full, sizeof full, "%s%s", dash->info->tcp_url, path);
        url = json_string(full);
    }
    char who[96];
    owner_name(&owner, who, sizeof who);
    json_t *res = json_pack("{s:s,s:s,s:o,s:i,s:s}", "code", code, "path", path, "url", url,
                            "expires_in", dash->code_ttl_s, "who", who);
    explicit_bzero(code, sizeof code);
    loom_rpc_call_complete(call, res);
    return LOOM_RPC_DONE;
}

/* Uses a code up: true (and a new session in *out) if it was live. */
static bool exchange_code(loomd_dash_t *dash, const char *code, dash_session_t *out)
{
    if (!code || !secret_shape(code, strlen(code)))
        return false;
    int64_t now = loom_time_mono_ns();
    bool ok = false;
    dash_owner_t owner;
    pthread_mutex_lock(&dash->mu);
    for (size_t i = 0; i < DASH_MAX_CODES && !ok; i++) {
        dash_code_t *c = &dash->codes[i];
        if (c->expires_ns > now && loom_rpc_token_equal(c->code, code)) {
            owner = c->owner;
            explicit_bzero(c, sizeof *c); /* single use */
            ok = true;
        }
    }
    long slot = ok ? pick_session_slot(dash, &owner, now) : -1;
    ok = slot >= 0; /* full of other users' sessions: the code is used up */
    if (ok) {
        dash_session_t *s = &dash->sessions[slot];
        if (random_hex(s->id) != LOOM_OK || random_hex(s->csrf) != LOOM_OK) {
            explicit_bzero(s, sizeof *s);
            ok = false;
        } else {
            s->owner = owner;
            owner_name(&owner, s->who, sizeof s->who);
            s->expires_ns = now + (int64_t)dash->session_ttl_s * LOOM_NS_PER_S;
            *out = *s;
        }
    }
    pthread_mutex_unlock(&dash->mu);
    return ok;
}

/* The session named by the request's loom_session cookie, copied to *out. */
static bool find_session(loomd_dash_t *dash, struct MHD_Connection *c, dash_session_t *out)
{
    const char *id = MHD_lookup_connection_value(c, MHD_COOKIE_KIND, "loom_session");
    if (!id || !secret_shape(id, strlen(id)))
        return false;
    int64_t now = loom_time_mono_ns();
    bool ok = false;
    pthread_mutex_lock(&dash->mu);
    for (size_t i = 0; i < DASH_MAX_SESSIONS && !ok; i++) {
        dash_session_t *s = &dash->sessions[i];
        if (s->expires_ns > now && loom_rpc_token_equal(s->id, id)) {
            *out = *s;
            ok = true;
        }
    }
    pthread_mutex_unlock(&dash->mu);
    return ok;
}

static void drop_session(loomd_dash_t *dash, const char *id)
{
    pthread_mutex_lock(&dash->mu);
    for (size_t i = 0; i < DASH_MAX_SESSIONS; i++)
        if (dash->sessions[i].expires_ns && strcmp(dash->sessions[i].id, id) == 0)
            explicit_bzero(&dash->sessions[i], sizeof dash->sessions[i]);
    pthread_mutex_unlock(&dash->mu);
}

/* ---------------------------------------------------------- responses */

static void secure_headers(struct MHD_Response *resp)
{
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "Content-Security-Policy",
                            "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
                            "form-action 'none'; base-uri 'none'");
}

/* Queues a response; cookie and location may be NULL. */
static int reply(struct MHD_Connection *c, loom_rpc_http_req_t *req, unsigned status,
                 const char *type, const void *body, size_t len, const char *cookie,
                 const char *location)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    secure_headers(resp);
    if (type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (cookie)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_SET_COOKIE, cookie);
    if (location)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
    enum MHD_Result ret = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    req->status = status;
    return ret;
}

static int reply_text(struct MHD_Connection *c, loom_rpc_http_req_t *req, unsigned status,
                      const char *text)
{
    return reply(c, req, status, "text/plain; charset=utf-8", text, strlen(text), NULL, NULL);
}

static int reply_json(struct MHD_Connection *c, loom_rpc_http_req_t *req, unsigned status,
                      json_t *v)
{
    char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    if (!text)
        return reply_text(c, req, 500, "out of memory\n");
    int ret = reply(c, req, status, "application/json", text, strlen(text), NULL, NULL);
    free(text);
    return ret;
}

/* ------------------------------------------------------------- routes */

static int serve_login(loomd_dash_t *dash, struct MHD_Connection *c, loom_rpc_http_req_t *req)
{
    const char *code = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "code");
    dash_session_t s;
    if (!exchange_code(dash, code, &s)) {
        loom_log_info("dash login refused", "peer=%s", req->peer);
        return reply_text(c, req, 403,
                          "This login link is invalid, expired or already used: run `loom dash` "
                          "for a new one.\n");
    }
    char cookie[200];
    snprintf(cookie, sizeof cookie,
             "loom_session=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%d", s.id,
             dash->session_ttl_s);
    loom_log_info("dash login", "peer=%s who=\"%s\"", req->peer, s.who);
    req->proven = true;
    int ret = reply(c, req, 303, "text/plain; charset=utf-8", "", 0, cookie, "/");
    explicit_bzero(&s, sizeof s);
    explicit_bzero(cookie, sizeof cookie);
    return ret;
}

static bool allowed_method(const char *m)
{
    for (size_t i = 0; i < sizeof page_methods / sizeof page_methods[0]; i++)
        if (strcmp(m, page_methods[i]) == 0)
            return true;
    return false;
}

/* POST /api/rpc: one call (no batch) of page_methods, run as the session's
 * identity would over TCP. */
static int serve_rpc(loomd_dash_t *dash, struct MHD_Connection *c, loom_rpc_http_req_t *req,
                     const dash_session_t *s)
{
    json_error_t jerr;
    json_t *call = json_loadb(req->body, req->body_len, 0, &jerr);
    const char *m =
        json_is_object(call) ? json_string_value(json_object_get(call, "method")) : NULL;
    if (!m || !allowed_method(m)) {
        json_decref(call);
        return reply_text(c, req, 400,
                          "expected one JSON-RPC call of server.info, job.list, job.get, "
                          "job.cancel, node.list, monitor.snapshot or usage.report\n");
    }
    json_decref(call);
    loom_rpc_transport_t t = {.unix_socket = false,
                              .identity = s->owner.bound ? &s->owner.id : NULL};
    snprintf(t.peer, sizeof t.peer, "dash %.50s", req->peer);
    loom_buf_t out = LOOM_BUF_INIT;
    int rc = loom_rpc_handle(dash->d, req->body, req->body_len, &t, &out);
    int ret;
    if (rc != LOOM_OK)
        ret = reply_text(c, req, 500, "out of memory\n");
    else
        ret = reply(c, req, 200, "application/json", out.data ? out.data : "{}",
                    out.data ? out.len : 2, NULL, NULL);
    loom_buf_free(&out);
    return ret;
}

/* A window of job's output for the session: opened as its user when it is
 * bound to one that is neither loomd's nor an operator (the page reads only
 * what that user could); else as loomd, and in multi-user mode only a
 * regular file of the job's owner (as job.logs: no symbolic link, nor
 * someone else's file reached through one). dash_log.c. */
static json_t *read_log(loomd_dash_t *dash, const dash_session_t *s, const loom_job_t *job,
                        const char *path, long long offset)
{
    bool as_user = s->owner.bound && !s->owner.id.is_operator && s->owner.id.uid != geteuid();
    int64_t owner = s->owner.bound && job->uid >= 0 ? job->uid : -1;
    return dash_logs_read(dash->logs, as_user ? &s->owner.id : NULL, owner, job->id, path, offset,
                          DASH_LOG_CHUNK, DASH_LOG_TAIL);
}

/* Whether the session may read job's output (its owner or an operator, in
 * multi-user mode); if not, the 403 has been queued in *ret. */
static bool log_allowed(loomd_dash_t *dash, struct MHD_Connection *c, loom_rpc_http_req_t *req,
                        const dash_session_t *s, const loom_job_t *job, int *ret)
{
    if (!s->owner.bound ||
        loomd_authz_allows(dash->ident, loomd_authz_find("GET /api/log"), &s->owner.id, job))
        return true;
    char text[200];
    snprintf(text, sizeof text, "permission denied: job %lld belongs to another user (%s)\n",
             (long long)job->id, job->user && *job->user ? job->user : "unknown");
    *ret = reply_text(c, req, 403, text);
    return false;
}

static int serve_log(loomd_dash_t *dash, struct MHD_Connection *c, loom_rpc_http_req_t *req,
                     const dash_session_t *s)
{
    const char *id_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "id");
    const char *off_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "offset");
    char *end = NULL;
    long long id = id_s ? strtoll(id_s, &end, 10) : 0;
    if (!id_s || *end || id < 1)
        return reply_text(c, req, 400, "/api/log: expected id=JOB_ID (an integer >= 1)\n");
    long long offset = off_s ? strtoll(off_s, &end, 10) : -1;
    if (off_s && *end)
        return reply_text(c, req, 400, "/api/log: offset must be an integer\n");
    loom_job_t job;
    loom_err_t err;
    if (loom_store_get(dash->store, id, &job, &err) != LOOM_OK)
        return reply_text(c, req, 404, "/api/log: no such job\n");
    int ret;
    if (!log_allowed(dash, c, req, s, &job, &ret)) {
        loom_job_free(&job);
        return ret;
    }
    json_t *run = job.run_json ? json_loads(job.run_json, 0, NULL) : NULL;
    const char *path = json_string_value(json_object_get(run, "stdout"));
    json_t *res = path ? read_log(dash, s, &job, path, offset)
                       : json_pack("{s:n,s:s}", "path", "error", "the job has no output file yet");
    /* Why an ended job has no output (e.g. it could not be opened). */
    if (json_object_get(res, "error") && loom_job_state_terminal(job.state) && job.reason)
        json_object_set_new(res, "reason", json_string(job.reason));
    json_decref(run);
    loom_job_free(&job);
    return reply_json(c, req, 200, res);
}

static int serve_asset(struct MHD_Connection *c, loom_rpc_http_req_t *req, const char *path)
{
    for (size_t i = 0; i < dash_assets_n; i++)
        if (strcmp(dash_assets[i].path, path) == 0)
            return reply(c, req, 200, dash_assets[i].type, dash_assets[i].data, dash_assets[i].len,
                         NULL, NULL);
    return reply_text(c, req, 404, "no such page\n");
}

static int serve_events(loomd_dash_t *dash, struct MHD_Connection *c, loom_rpc_http_req_t *req,
                        const dash_session_t *s)
{
    const char *last = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
    char *end = NULL;
    unsigned long long n = last ? strtoull(last, &end, 10) : 0;
    uint64_t from = last && end != last && *end == '\0' && n < UINT64_MAX ? n + 1 : 0;
    int64_t user = s->owner.bound && !s->owner.id.is_operator ? (int64_t)s->owner.id.uid : -1;
    return dash_feed_serve(dash->feed, c, from, s->expires_ns, user, &req->status);
}

/* GET /api/session: the CSRF token and who the session acts as. */
static int serve_whoami(struct MHD_Connection *c, loom_rpc_http_req_t *req, const dash_session_t *s)
{
    int64_t left_s = (s->expires_ns - loom_time_mono_ns()) / LOOM_NS_PER_S;
    const loom_auth_identity_t *id = &s->owner.id;
    json_t *user = s->owner.bound ? json_pack("{s:s,s:I,s:b}", "name", id->user, "uid",
                                              (json_int_t)id->uid, "operator", id->is_operator)
                                  : json_null();
    return reply_json(c, req, 200,
                      json_pack("{s:s,s:s,s:I,s:o}", "csrf", s->csrf, "who", s->who, "expires_in",
                                (json_int_t)left_s, "user", user));
}

/* The routes that need a session (s). POSTs also need its CSRF token. */
static int serve_session(loomd_dash_t *dash, struct MHD_Connection *c, loom_rpc_http_req_t *req,
                         const char *path, const dash_session_t *s)
{
    bool get = strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0;
    bool post = strcmp(req->method, "POST") == 0;
    if (post) {
        const char *csrf = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Loom-CSRF");
        if (!csrf || !loom_rpc_token_equal(s->csrf, csrf))
            return reply_text(c, req, 403,
                              "missing or wrong X-Loom-CSRF header (the page's session token)\n");
        if (strcmp(path, "/api/rpc") == 0)
            return serve_rpc(dash, c, req, s);
        if (strcmp(path, "/logout") == 0) {
            drop_session(dash, s->id);
            return reply(c, req, 200, "text/plain; charset=utf-8", "", 0,
                         "loom_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0", NULL);
        }
    } else if (get && strcmp(path, "/api/session") == 0) {
        return serve_whoami(c, req, s);
    } else if (get && strcmp(path, "/api/log") == 0) {
        return serve_log(dash, c, req, s);
    } else if (get && strcmp(path, "/events") == 0) {
        return serve_events(dash, c, req, s);
    } else if (get) {
        return serve_asset(c, req, strcmp(path, "/index.html") == 0 ? "/" : path);
    }
    return reply_text(c, req, 405, "method not allowed here\n");
}

/* The dashboard's paths; any other is 404 (with or without a session). */
static bool dash_path(const char *path)
{
    static const char *const fixed[] = {"/login",   "/index.html", "/api/session", "/api/rpc",
                                        "/api/log", "/events",     "/logout"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (strcmp(path, fixed[i]) == 0)
            return true;
    for (size_t i = 0; i < dash_assets_n; i++)
        if (strcmp(path, dash_assets[i].path) == 0)
            return true;
    return false;
}

static int dash_hook(void *ctx, void *conn, loom_rpc_http_req_t *req)
{
    loomd_dash_t *dash = ctx;
    struct MHD_Connection *c = conn;
    char path[128];
    size_t n = strcspn(req->url, "?");
    if (n >= sizeof path)
        return reply_text(c, req, 404, "no such page\n");
    memcpy(path, req->url, n);
    path[n] = '\0';
    if (!dash_path(path))
        return reply_text(c, req, 404, "no such path; try POST /rpc, or the dashboard at /\n");
    if (strcmp(path, "/login") == 0)
        return strcmp(req->method, "GET") == 0 ? serve_login(dash, c, req)
                                               : reply_text(c, req, 405, "use GET /login\n");
    dash_session_t s;
    if (!find_session(dash, c, &s))
        return reply_text(c, req, 401,
                          "No dashboard session: run `loom dash` and open the URL it prints.\n");
    req->proven = true;
    int ret = serve_session(dash, c, req, path, &s);
    explicit_bzero(&s, sizeof s);
    return ret;
}

/* -------------------------------------------------------------- public */

int loomd_dash_new(loom_rpc_dispatcher_t *d, loom_store_t *store, const loomd_info_t *info,
                   const loomd_identity_t *ident, loomd_dash_t **out, loom_err_t *err)
{
    loomd_dash_t *dash = calloc(1, sizeof *dash);
    if (!dash)
        return loom_err_set(err, LOOM_ENOMEM, "dashboard: out of memory");
    dash->d = d;
    dash->store = store;
    dash->info = info;
    dash->ident = ident;
    dash->code_ttl_s = DASH_CODE_TTL_S;
    dash->session_ttl_s = DASH_SESSION_TTL_S;
    dash->hook.fn = dash_hook;
    dash->hook.ctx = dash;
    pthread_mutex_init(&dash->mu, NULL);
    int rc =
        loom_rpc_dispatcher_add(d, "dash.login", m_dash_login, dash, NULL, LOOM_RPC_NO_PARAMS, err);
    if (rc == LOOM_OK)
        rc = dash_logs_new(&dash->logs, err);
    if (rc == LOOM_OK)
        rc = dash_feed_start(store, d, &dash->feed, err);
    if (rc != LOOM_OK) {
        dash_logs_free(dash->logs);
        pthread_mutex_destroy(&dash->mu);
        free(dash);
        return rc;
    }
    *out = dash;
    return LOOM_OK;
}

void loomd_dash_set_ttls(loomd_dash_t *dash, int code_s, int session_s)
{
    pthread_mutex_lock(&dash->mu);
    dash->code_ttl_s = code_s > 0 ? code_s : DASH_CODE_TTL_S;
    dash->session_ttl_s = session_s > 0 ? session_s : DASH_SESSION_TTL_S;
    pthread_mutex_unlock(&dash->mu);
}

loom_rpc_http_hook_t *loomd_dash_hook(loomd_dash_t *dash)
{
    return &dash->hook;
}

void loomd_dash_stop(loomd_dash_t *dash)
{
    if (dash)
        dash_feed_stop(dash->feed);
}

void loomd_dash_free(loomd_dash_t *dash)
{
    if (!dash)
        return;
    dash_feed_free(dash->feed);
    dash_logs_free(dash->logs);
    explicit_bzero(dash->codes, sizeof dash->codes);
    explicit_bzero(dash->sessions, sizeof dash->sessions);
    pthread_mutex_destroy(&dash->mu);
    free(dash);
}
