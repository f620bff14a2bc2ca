/* loom rpc: JSON-RPC 2.0, transport-free codec and dispatcher, an HTTP server
 * (libmicrohttpd) and an HTTP client (libcurl).
 *
 * Three layers, each usable alone:
 *
 *  1. The dispatcher (loom_rpc_dispatcher_t) takes the bytes of one request
 *     body — a single call or a batch — and produces the bytes of the response
 *     body (or nothing, when every call was a notification). It implements the
 *     JSON-RPC 2.0 specification completely: params by name and by position,
 *     batches, notifications, the standard errors -32700/-32600/-32601/-32602/
 *     -32603 with the messages the specification's examples show. It knows
 *     nothing of HTTP.
 *
 *     A handler may finish its call at once or later, from ANY thread
 *     ("deferred completion"): it returns LOOM_RPC_PENDING and someone calls
 *     loom_rpc_call_complete() / loom_rpc_call_fail() afterwards. The response
 *     is assembled when every call of the request (one call, or the whole
 *     batch) is complete. This lets a committer thread acknowledge a batch of
 *     100 job.submit calls after one SQLite transaction.
 *
 *  2. The server (loom_rpc_server_t): HTTP/1.1 `POST /rpc`, `GET /healthz`,
 *     `GET /metrics` on TCP and/or a Unix socket, keep-alive, bearer-token
 *     auth on TCP, limits (body, connections, idle and request timeouts).
 *
 *  3. The client (loom_rpc_client_t): one keep-alive connection, timeouts,
 *     retries with backoff for calls the caller marks as safe to repeat.
 *
 * Auth tokens (loom_rpc_token_*) are 256 random bits written as 64 lower-case
 * hex characters to STATE_DIR/token (mode 0600).
 *
 * Wire contract and limits: docs/rpc.md. Threading: the dispatcher and server
 * are thread-safe once all methods are added; a client is used by one thread
 * at a time.
 */
#ifndef LOOM_RPC_H
#define LOOM_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "loom/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ error codes */

/* Standard JSON-RPC 2.0 error codes. */
enum {
    LOOM_RPC_PARSE_ERROR = -32700,      /* "Parse error": invalid JSON */
    LOOM_RPC_INVALID_REQUEST = -32600,  /* "Invalid Request": not a Request object, or a limit */
    LOOM_RPC_METHOD_NOT_FOUND = -32601, /* "Method not found" */
    LOOM_RPC_INVALID_PARAMS = -32602,   /* "Invalid params" */
    LOOM_RPC_INTERNAL_ERROR = -32603,   /* "Internal error" */
    /* Application ("server") errors: -32099 .. -32000. Their meanings are
     * listed in docs/protocol.md by whoever defines them. */
    LOOM_RPC_APP_ERROR_FIRST = -32099,
    LOOM_RPC_APP_ERROR_LAST = -32000,
    /* The dispatcher's own server error: this call's response would take
     * the request's response past loom_rpc_limits_t.max_response. */
    LOOM_RPC_RESPONSE_TOO_LARGE = -32010,
    /* A per-user limit of the server's own capacity (connections, waiting
     * calls): the caller holds its share; the message names the limit. */
    LOOM_RPC_USER_LIMIT = -32015,
    /* A call of a batch not run: its client left, or the server is stopping
     * (the same code as loomd's "shutting down"). */
    LOOM_RPC_ABANDONED = -32005
};

/* The specification's message for a standard code ("Parse error", ...), or
 * "Server error" for -32099..-32000, or NULL for any other code. */
const char *loom_rpc_error_message(int code);

/* ------------------------------------------------------------- dispatcher */

typedef struct loom_rpc_dispatcher loom_rpc_dispatcher_t;
typedef struct loom_rpc_call loom_rpc_call_t;

/* What a handler returns. */
typedef enum loom_rpc_status {
    /* The handler has completed the call (loom_rpc_call_complete or _fail)
     * before returning. Returning DONE without completing is a bug; the
     * dispatcher then answers -32603 "Internal error". */
    LOOM_RPC_DONE = 0,
    /* The call will be completed later, exactly once, from any thread. The
     * call object stays valid until it is completed (and no longer). It may
     * already have been completed by another thread when the handler
     * returns PENDING; that is fine. */
    LOOM_RPC_PENDING = 1
} loom_rpc_status_t;

/* A method handler. params is NULL when the request had no "params" member,
 * otherwise an object or an array (borrowed; valid until the call is
 * completed — json_incref it to keep it longer). When the method was added
 * with parameter names, positional params have already been turned into an
 * object, so the handler always sees an object (or NULL). ctx is the pointer
 * given to loom_rpc_dispatcher_add. Handlers run on the thread that called
 * loom_rpc_dispatch / loom_rpc_handle, one call after another in batch order. */
typedef loom_rpc_status_t (*loom_rpc_handler_fn)(loom_rpc_call_t *call, json_t *params, void *ctx);

/* Flags for loom_rpc_dispatcher_add. */
enum {
    /* With param_names: a named parameter not in the list is -32602. */
    LOOM_RPC_STRICT_PARAMS = 1u << 0,
    /* The method takes no parameters: "params" must be absent, [] or {}. */
    LOOM_RPC_NO_PARAMS = 1u << 1
};

/* Input limits of the dispatcher. Zero in a field means its default. */
typedef struct loom_rpc_limits {
    size_t max_body;  /* bytes of one request body; default 1 MiB (1048576) */
    size_t max_depth; /* JSON nesting depth; default 64 */
    size_t max_batch; /* calls in one batch; default 1000 */
    /* Bytes of one response body (a batch's responses together); default
     * 8 MiB. A call whose response would go past it is answered
     * LOOM_RPC_RESPONSE_TOO_LARGE instead. */
    size_t max_response;
} loom_rpc_limits_t;

/* Creates a dispatcher. limits may be NULL (all defaults). */
int loom_rpc_dispatcher_new(const loom_rpc_limits_t *limits, loom_rpc_dispatcher_t **out,
                            loom_err_t *err);
/* Frees the dispatcher. No request may be in progress. NULL is fine. */
void loom_rpc_dispatcher_free(loom_rpc_dispatcher_t *d);
/* The effective limits (defaults filled in). */
loom_rpc_limits_t loom_rpc_dispatcher_limits(const loom_rpc_dispatcher_t *d);

/* Adds a method. name must be non-empty and must not start with "rpc."
 * (reserved by the specification); a name may be added once (LOOM_EEXIST).
 *
 * param_names, if not NULL, is a NULL-terminated list of the method's
 * parameter names in positional order. Then a call may pass params by
 * position ([a, b]) or by name ({"x": a, "y": b}); positional params are
 * converted to an object before the handler runs (more positional values
 * than names is -32602). With param_names NULL the handler gets params as
 * sent. The list is copied.
 *
 * Add every method before the first dispatch; adding is not synchronised
 * with dispatching. */
int loom_rpc_dispatcher_add(loom_rpc_dispatcher_t *d, const char *name, loom_rpc_handler_fn fn,
                            void *ctx, const char *const *param_names, unsigned flags,
                            loom_err_t *err);

/* Called once with the response of a request: `response` is the response
 * body (compact JSON, NUL-terminated, len bytes), or NULL with len 0 when
 * the request produced no response (notifications only). The buffer is
 * valid only during the callback. May run on the dispatching thread (before
 * loom_rpc_dispatch returns) or on the thread completing the last call. */
typedef void (*loom_rpc_done_fn)(const char *response, size_t len, void *done_ctx);

/* Asynchronous entry point: parses body[0..len), runs the handlers and calls
 * done(…) exactly once when every call is complete. request_ctx is made
 * available to handlers via loom_rpc_call_request_ctx (e.g. the transport a
 * request came on). Returns LOOM_OK, or LOOM_ENOMEM if nothing could be
 * started (then done is not called). Errors in the request itself are
 * JSON-RPC error responses, not return codes. */
int loom_rpc_dispatch(loom_rpc_dispatcher_t *d, const char *body, size_t len, void *request_ctx,
                      loom_rpc_done_fn done, void *done_ctx);

/* Synchronous entry point: like loom_rpc_dispatch, but waits (on a
 * condition variable) until every call is complete and appends the response
 * body to *response (nothing is appended when there is no response; the
 * caller resets the buffer). This is what the HTTP server uses. */
int loom_rpc_handle(loom_rpc_dispatcher_t *d, const char *body, size_t len, void *request_ctx,
                    loom_buf_t *response);

/* Called on the dispatching thread once per request (single call or whole
 * batch), after the handlers of all its calls have been invoked and before
 * its response is awaited; not called for requests rejected as a whole
 * (parse error, limits, empty batch). A method that queues deferred calls
 * for a committer (group commit) can use it to kick the committer once per
 * request. Note that loom_rpc_call_index/_batch_size count every element of
 * a batch, including invalid ones that never reach a handler, so "index + 1
 * == batch_size" does not reliably mark the last queued call; this hook
 * does. Set it before the first dispatch; fn NULL removes it. */
typedef void (*loom_rpc_dispatched_fn)(void *request_ctx, void *ctx);
void loom_rpc_dispatcher_on_dispatched(loom_rpc_dispatcher_t *d, loom_rpc_dispatched_fn fn,
                                       void *ctx);

/* Called by loom_rpc_handle on its own thread once a request is dispatched
 * and before that thread sleeps until the request's calls are complete (not
 * by loom_rpc_dispatch, whose caller does not wait): a thread that would
 * only wait can do the work its deferred calls wait for. loomd commits the
 * store writes the calls queued (docs/store.md). Set it before the first
 * dispatch; fn NULL removes it. */
void loom_rpc_dispatcher_on_wait(loom_rpc_dispatcher_t *d, loom_rpc_dispatched_fn fn, void *ctx);

/* Called before every handler, once the call's params are shaped (an
 * object or NULL), with the method's name: true lets the handler run;
 * false means the guard has answered the call itself (a refusal). The one
 * place a program checks who may call what (loomd's authorization table,
 * docs/security.md). Set it before the first dispatch; fn NULL removes it. */
typedef bool (*loom_rpc_guard_fn)(loom_rpc_call_t *call, const char *method, json_t *params,
                                  void *ctx);
void loom_rpc_dispatcher_set_guard(loom_rpc_dispatcher_t *d, loom_rpc_guard_fn fn, void *ctx);

/* Whether a request's work should stop: its client left, or the server is
 * stopping. Between the calls of a batch the dispatcher asks it, and a
 * call not yet run is answered LOOM_RPC_ABANDONED instead; long-running
 * handlers ask it through loom_rpc_call_abandoned. The HTTP server sets
 * it (loom_rpc_server_start). fn NULL removes it. */
typedef bool (*loom_rpc_abandoned_fn)(void *request_ctx, void *ctx);
void loom_rpc_dispatcher_on_abandoned(loom_rpc_dispatcher_t *d, loom_rpc_abandoned_fn fn,
                                      void *ctx);

/* Calls in progress (dispatched, not yet completed), for metrics. */
size_t loom_rpc_dispatcher_in_flight(const loom_rpc_dispatcher_t *d);

/* The methods added so far, in the order they were added: their number, and
 * the name of the i-th (NULL when i is past the end). The name is the
 * dispatcher's and lives as long as it. Like loom_rpc_dispatcher_add, not
 * safe against a concurrent add: read once every method is added. */
size_t loom_rpc_dispatcher_method_count(const loom_rpc_dispatcher_t *d);
const char *loom_rpc_dispatcher_method_name(const loom_rpc_dispatcher_t *d, size_t i);

/* Appends the dispatcher's Prometheus families (text format 0.0.4):
 *   loom_rpc_calls_total{method,outcome}            counter
 *   loom_rpc_call_duration_seconds{method}          histogram
 *   loom_rpc_calls_in_flight                        gauge
 *   loom_rpc_requests_total{kind}                   counter (single|batch|invalid)
 * method is a registered name or "_unknown"; outcome is "ok",
 * "parse_error", "invalid_request", "method_not_found", "invalid_params",
 * "internal_error" or "app_error". Notifications count like calls. */
int loom_rpc_dispatcher_metrics(const loom_rpc_dispatcher_t *d, loom_buf_t *out);

/* ------------------------------------------------------------------ calls */

/* Method name of the call (valid until completion). */
const char *loom_rpc_call_method(const loom_rpc_call_t *call);
/* The request's id (borrowed: string, integer, real or null), or NULL for a
 * notification. */
const json_t *loom_rpc_call_id(const loom_rpc_call_t *call);
bool loom_rpc_call_is_notification(const loom_rpc_call_t *call);
/* The request_ctx given to loom_rpc_dispatch / loom_rpc_handle. */
void *loom_rpc_call_request_ctx(const loom_rpc_call_t *call);
/* Position of the call within its batch (0 for a single request) and the
 * number of calls in the batch (1 for a single request). A handler may use
 * these to group the calls of one batch (e.g. one transaction). */
size_t loom_rpc_call_index(const loom_rpc_call_t *call);
size_t loom_rpc_call_batch_size(const loom_rpc_call_t *call);
/* Whether the call's request came through loom_rpc_handle with an on_wait
 * hook set: that hook will run on the dispatching thread after every
 * handler of the request has returned. */
bool loom_rpc_call_waited_on(const loom_rpc_call_t *call);
/* Bytes the call's result may still take before the request's response
 * reaches max_response (shared by the calls of a batch as they complete).
 * A handler that makes large results (a listing) stops early when its
 * result would exceed this, or fails with LOOM_RPC_RESPONSE_TOO_LARGE
 * before doing the work when not even a small result would fit. */
size_t loom_rpc_call_budget(const loom_rpc_call_t *call);
/* Whether the call's work should stop now (loom_rpc_dispatcher_on_abandoned):
 * a handler that waits or loops asks it and answers with what it has. */
bool loom_rpc_call_abandoned(const loom_rpc_call_t *call);

/* Completes the call with a result. Takes the reference to result (NULL
 * means JSON null). Thread-safe; exactly once per call. After the last call
 * of a request is completed the call object must not be touched. */
void loom_rpc_call_complete(loom_rpc_call_t *call, json_t *result);

/* Completes the call with an error. message is copied (NULL: the standard
 * message of code). data (may be NULL) is taken over and becomes the error
 * object's "data" member. code should be one of the standard codes or in
 * -32099..-32000 for application errors; other codes are sent as given. */
void loom_rpc_call_fail(loom_rpc_call_t *call, int code, const char *message, json_t *data);

/* Like loom_rpc_call_fail with a printf-formatted message. */
void loom_rpc_call_failf(loom_rpc_call_t *call, int code, json_t *data, const char *fmt, ...)
    LOOM_PRINTF(4, 5);

/* -32602 naming the parameter and what was expected. The message reads
 *   "Invalid params: 'name': expected a string, found an integer"
 * where the found part is the JSON type of `found`, or "nothing" when found
 * is NULL (the parameter is missing). data is
 *   {"param": "name", "expected": "a string", "found": "an integer"}.
 * `param` may be a JSON pointer for nested members ("resources/gpus"). */
void loom_rpc_call_invalid_param(loom_rpc_call_t *call, const char *param, const char *expected,
                                 const json_t *found);

/* -32602 from a loom_err_t filled by the loom_json_get_* helpers (whose
 * messages already name the JSON pointer and the expected type):
 * message "Invalid params: <err->msg>", data {"detail": err->msg}. */
void loom_rpc_call_fail_params(loom_rpc_call_t *call, const loom_err_t *err);

/* --------------------------------------------------------- codec helpers */

/* Builds a request object {"jsonrpc":"2.0","method":…,"params":…,"id":…}.
 * params is borrowed (NULL: no "params" member); id NULL makes a
 * notification (id borrowed). Returns a new reference or NULL (no memory). */
json_t *loom_rpc_request_new(const char *method, const json_t *params, const json_t *id);

/* Decomposes one response object. On success exactly one of *result (new
 * reference) or the error fields is set: *code != 0 marks an error, with
 * *message (copied into message[msglen]) and *data (new reference or NULL).
 * *id receives a borrowed pointer to the response's id. Returns LOOM_EINVAL
 * with a message if the object is not a valid JSON-RPC 2.0 response. */
int loom_rpc_response_parse(const json_t *response, json_t **result, int *code, char *message,
                            size_t msglen, json_t **data, const json_t **id, loom_err_t *err);

/* ------------------------------------------------------------------- auth */

#define LOOM_RPC_TOKEN_HEX 64 /* 256 bits as lower-case hex */

/* Creates STATE_DIR/token with 256 bits from getrandom(2), mode 0600,
 * written atomically (temporary file, fsync, link); an existing token file
 * is never overwritten: then it is loaded instead. state_dir must exist.
 * out receives the 64 hex characters and a NUL. Loading refuses a token file
 * that group or others may read (LOOM_EINVAL naming the path and mode). */
int loom_rpc_token_ensure(const char *state_dir, char out[LOOM_RPC_TOKEN_HEX + 1], loom_err_t *err);

/* Reads a token file: exactly 64 hex characters, optionally followed by one
 * newline. Errors name the path and what was wrong. */
int loom_rpc_token_load(const char *path, char out[LOOM_RPC_TOKEN_HEX + 1], loom_err_t *err);

/* Token for a client: $LOOM_TOKEN if set and non-empty, else the file
 * STATE_DIR/token (state_dir may be NULL: then only $LOOM_TOKEN is tried;
 * LOOM_ENOTFOUND if neither gives a token). */
int loom_rpc_token_resolve(const char *state_dir, char out[LOOM_RPC_TOKEN_HEX + 1],
                           loom_err_t *err);

/* Constant-time comparison of two NUL-terminated strings (time depends only
 * on the length of `expected`). */
bool loom_rpc_token_equal(const char *expected, const char *given);

/* ----------------------------------------------------------------- server */

typedef struct loom_rpc_server loom_rpc_server_t;

/* What the identity hook sees of a request (strings valid during the call). */
typedef struct loom_rpc_auth_input {
    bool unix_socket;
    int fd;                    /* the connection's socket (for SO_PEERCRED) */
    const char *authorization; /* the Authorization header's value, or NULL */
    const char *peer;          /* "127.0.0.1:51234", "unix" */
} loom_rpc_auth_input_t;

/* Makes the identity of a request's caller in *identity (freed with the
 * hook's identity_free), or refuses with an error whose message goes back in
 * the 401. *valid_until_ns (monotonic clock) says how long the identity may
 * serve later requests of the same connection that carry the same
 * Authorization value (a Unix socket peer: the connection's life,
 * INT64_MAX); 0: authenticate every request. Runs on the connection's
 * thread; must be thread-safe. */
typedef int (*loom_rpc_authenticate_fn)(const loom_rpc_auth_input_t *in, void **identity,
                                        int64_t *valid_until_ns, loom_err_t *err, void *ctx);

/* Server settings. Call loom_rpc_server_config_init first, then change
 * fields. Strings are copied by loom_rpc_server_start. */
typedef struct loom_rpc_server_config {
    /* TCP address "HOST:PORT" (IPv4 literal, "[IPv6]" literal or
     * "localhost"); default "127.0.0.1:7750"; port 0 picks a free port (see
     * loom_rpc_server_port). NULL or "" disables TCP. */
    const char *listen;
    /* Unix socket path, or NULL for none. An existing socket file at the
     * path is replaced (a regular file there is an error). Mode 0600. */
    const char *socket_path;
    /* Bearer token required on TCP (64 hex chars). NULL on TCP is an error
     * unless allow_no_auth is set (tests only). The Unix socket never asks. */
    const char *token;
    bool allow_no_auth;
    /* If true, GET /healthz over TCP needs no token (default true: it says
     * only "ok" and is what load balancers and scripts poll). */
    bool healthz_without_auth;
    size_t max_body;          /* default 1 MiB; larger -> HTTP 413 */
    unsigned max_connections; /* per listener; default 128 */
    /* TCP connections one client address may hold before it has shown the
     * token; a newcomer beyond it evicts the address's oldest such
     * connection (so do newcomers to a full listener). Default 32. */
    unsigned max_per_address;
    /* Fair share (with the identity hook, multi-user): connections one
     * unprivileged user may hold at once over both listeners (default 32;
     * beyond it HTTP 429, JSON-RPC -32015), and connections per listener
     * beyond max_connections kept for privileged callers (operators, the
     * token holder) and TCP /healthz (default 16). Unprivileged users
     * together hold at most max_connections per listener (beyond: 503). */
    unsigned max_per_user;
    unsigned reserved_connections;
    unsigned idle_timeout_s;    /* keep-alive idle; default 30 */
    unsigned request_timeout_s; /* to receive one whole request; default 10 */
    unsigned drain_timeout_s;   /* graceful stop waits this long; default 30 */
    /* Extra routes (loomd's dashboard, docs/dashboard.md): see
     * loom_rpc_http_hook_fn. NULL: every other path is 404. */
    struct loom_rpc_http_hook *http_hook;
    /* The identity hook (multi-user loomd, docs/security.md). When set, it
     * replaces the token check on both listeners: every request but a TCP
     * /healthz (with healthz_without_auth) is authenticated by it, and a
     * refusal is HTTP 401 with the hook's message and no side effect. The
     * identity it makes reaches the methods in loom_rpc_transport_t. */
    struct loom_rpc_identity_hook {
        loom_rpc_authenticate_fn authenticate;
        void (*identity_free)(void *identity);
        void *ctx;
        /* The WWW-Authenticate value of a 401, e.g. "Munge realm=\"loom\"". */
        const char *challenge;
        /* Who an identity is, for the fair-share limits: its user key and
         * name (for messages); true when it is privileged (never limited).
         * NULL: no per-user limits. */
        bool (*principal)(const void *identity, int64_t *user, char *name, size_t namelen);
    } identity;
} loom_rpc_server_config_t;

/* A request on a path other than /rpc, /healthz and /metrics, handed to the
 * hook once its body (at most max_body bytes; larger is 413) has been read.
 * The bearer token is NOT checked for these paths: the hook does its own
 * access control (the dashboard's session cookie). */
typedef struct loom_rpc_http_req {
    const char *method; /* "GET", "POST", ... */
    const char *url;    /* path and query as sent */
    const char *body;   /* NUL-terminated; "" when none */
    size_t body_len;
    bool unix_socket; /* came on the Unix socket */
    const char *peer; /* "127.0.0.1:51234", "unix" */
    /* Set by the hook: the HTTP status it queued (for the server's
     * metrics), and true once the client proved who it is (its connection
     * is then no longer first to be evicted). */
    unsigned status;
    bool proven;
} loom_rpc_http_req_t;

/* Answers one request on conn (a struct MHD_Connection *, with
 * MHD_queue_response) and returns MHD's result (1 = MHD_YES, 0 = MHD_NO).
 * Runs on the connection's own thread, which it may keep (a stream). */
typedef int (*loom_rpc_http_hook_fn)(void *ctx, void *conn, loom_rpc_http_req_t *req);
typedef struct loom_rpc_http_hook {
    loom_rpc_http_hook_fn fn;
    void *ctx;
} loom_rpc_http_hook_t;

void loom_rpc_server_config_init(loom_rpc_server_config_t *cfg);

/* Starts listening and serving with the given dispatcher (which must
 * outlive the server). Requests are served on libmicrohttpd's threads, one
 * per connection; POST /rpc calls loom_rpc_handle with request_ctx pointing
 * to a loom_rpc_transport_t. */
int loom_rpc_server_start(const loom_rpc_server_config_t *cfg, loom_rpc_dispatcher_t *d,
                          loom_rpc_server_t **out, loom_err_t *err);

/* What loom_rpc_call_request_ctx returns for calls that came over HTTP. */
typedef struct loom_rpc_transport {
    bool unix_socket; /* came on the Unix socket (else TCP, authenticated) */
    char peer[64];    /* "127.0.0.1:51234", "unix" */
    /* What the identity hook made of the caller (valid during the call), or
     * NULL when the server has no hook (single-user: the token holder or
     * the socket's one user). */
    const void *identity;
    bool has_fd; /* fd is the connection's socket (to see whether the client left) */
    int fd;
} loom_rpc_transport_t;

/* Health for GET /healthz: returns NULL when healthy, else a short static
 * reason ("the store cannot write"), answered 503 with that text. Called
 * on a server thread per /healthz request; must be thread-safe and quick.
 * Set before or after start; NULL fn removes it. */
typedef const char *(*loom_rpc_health_fn)(void *ctx);
void loom_rpc_server_set_health(loom_rpc_server_t *s, loom_rpc_health_fn fn, void *ctx);

/* The TCP port actually bound (useful with port 0), or 0 without TCP. */
uint16_t loom_rpc_server_port(const loom_rpc_server_t *s);

/* Connections open now on both listeners (the loom_http_connections
 * gauge): a connection counts from its accept until the server has seen it
 * close, so a test can wait for closed ones to be gone. */
long loom_rpc_server_connections(loom_rpc_server_t *s);

/* Appends Prometheus text (0.0.4) families to `out` on every GET /metrics.
 * Called after the server's own families, in the order added, on a server
 * thread; must be thread-safe. Return LOOM_OK, or an error code to make the
 * scrape fail with HTTP 500. Add sources before or after start. */
typedef int (*loom_rpc_metrics_fn)(loom_buf_t *out, void *ctx);
int loom_rpc_server_add_metrics_source(loom_rpc_server_t *s, loom_rpc_metrics_fn fn, void *ctx);

/* Graceful stop: stops accepting connections, lets requests in progress
 * finish (up to drain_timeout_s), closes idle keep-alive connections,
 * removes the Unix socket file and frees the server. NULL is fine. */
void loom_rpc_server_stop(loom_rpc_server_t *s);

/* ----------------------------------------------------------------- client */

typedef struct loom_rpc_client loom_rpc_client_t;

typedef struct loom_rpc_client_config {
    /* "http://HOST:PORT" (path /rpc is added unless the URL has a path) or
     * "unix:PATH". Default (NULL): $LOOM_URL, else http://127.0.0.1:7750. */
    const char *url;
    const char *token;          /* bearer token, or NULL (Unix socket) */
    int64_t connect_timeout_ms; /* default 2000 */
    int64_t timeout_ms;         /* whole call; default 30000 */
    unsigned retries;           /* extra attempts for LOOM_RPC_CALL_RETRY; default 3 */
    int64_t backoff_ms;         /* first backoff, doubled each retry; default 100 */
} loom_rpc_client_config_t;

void loom_rpc_client_config_init(loom_rpc_client_config_t *cfg);

int loom_rpc_client_new(const loom_rpc_client_config_t *cfg, loom_rpc_client_t **out,
                        loom_err_t *err);
void loom_rpc_client_free(loom_rpc_client_t *c);

/* Why a client call failed (kind); LOOM_RPC_FAIL_NONE on success. */
typedef enum loom_rpc_fail_kind {
    LOOM_RPC_FAIL_NONE = 0,
    LOOM_RPC_FAIL_CONNECT,   /* could not connect (refused, no such socket, DNS) */
    LOOM_RPC_FAIL_TIMEOUT,   /* connect or total timeout */
    LOOM_RPC_FAIL_TRANSPORT, /* connection broke, malformed HTTP */
    LOOM_RPC_FAIL_HTTP,      /* HTTP status other than 200/204: http_status */
    LOOM_RPC_FAIL_PROTOCOL,  /* 200 but the body is not a valid JSON-RPC response */
    LOOM_RPC_FAIL_RPC        /* a JSON-RPC error: rpc_code, err.msg, rpc_data */
} loom_rpc_fail_kind_t;

/* Failure details. err.code is a loom code (LOOM_EUNAVAIL for CONNECT,
 * LOOM_ETIMEDOUT, LOOM_EIO for TRANSPORT/HTTP/PROTOCOL, LOOM_EINVAL for RPC
 * errors); err.msg is a sentence for humans (for RPC errors, the server's
 * message). Free with loom_rpc_client_error_clear. */
typedef struct loom_rpc_client_error {
    loom_rpc_fail_kind_t kind;
    loom_err_t err;
    long http_status; /* HTTP and RPC kinds: the status line's code */
    int rpc_code;     /* RPC kind: the JSON-RPC error code */
    json_t *rpc_data; /* RPC kind: the error's data member, or NULL (owned) */
} loom_rpc_client_error_t;

void loom_rpc_client_error_init(loom_rpc_client_error_t *e);
void loom_rpc_client_error_clear(loom_rpc_client_error_t *e);
/* True for a failure worth trying again: no connection, a timeout, a broken
 * transport, or HTTP 502/503/504. */
bool loom_rpc_client_retryable(const loom_rpc_client_error_t *e);

/* Call flags. */
enum {
    /* The call may be repeated safely (reads, or submissions carrying a
     * submit_id idempotency key): on CONNECT, TIMEOUT, TRANSPORT failures
     * and HTTP 502/503/504 it is retried up to cfg.retries times with
     * exponential backoff. Never retried: HTTP 4xx, JSON-RPC errors. */
    LOOM_RPC_CALL_RETRY = 1u << 0
};

/* One call. params borrowed (NULL: none). On success *result is a new
 * reference (JSON null for a null result) and returns LOOM_OK; otherwise
 * returns e->err.code and fills *e (e may be NULL). */
int loom_rpc_client_call(loom_rpc_client_t *c, const char *method, const json_t *params,
                         unsigned flags, json_t **result, loom_rpc_client_error_t *e);

/* Replaces the client's credential: every later request carries
 * "Authorization: VALUE" (e.g. "Munge CRED"; NULL: none). */
int loom_rpc_client_set_authorization(loom_rpc_client_t *c, const char *value, loom_err_t *err);

/* A notification (no id, no response). Errors only for transport/HTTP. */
int loom_rpc_client_notify(loom_rpc_client_t *c, const char *method, const json_t *params,
                           loom_rpc_client_error_t *e);

/* One element of a batch. Fill method and params (borrowed); the client
 * fills the outcome: result (new reference) or code/message/data. */
typedef struct loom_rpc_batch_item {
    const char *method;
    const json_t *params;
    /* out */
    json_t *result;
    int code;      /* 0 on success */
    char *message; /* malloc'd, NULL on success */
    json_t *data;
} loom_rpc_batch_item_t;

/* Sends items[0..n) as one batch request (ids are assigned by the client)
 * and matches the responses by id. Returns LOOM_OK when a valid batch
 * response arrived (each item then has its own outcome) or the failure in
 * *e for the whole batch. Same retry rule as loom_rpc_client_call. */
int loom_rpc_client_batch(loom_rpc_client_t *c, loom_rpc_batch_item_t *items, size_t n,
                          unsigned flags, loom_rpc_client_error_t *e);
/* Frees the outcomes in items[0..n) (result, message, data). */
void loom_rpc_batch_items_clear(loom_rpc_batch_item_t *items, size_t n);

/* Sends a raw body and returns the raw response (for tests and tools):
 * *http_status and the body appended to *response. */
int loom_rpc_client_post_raw(loom_rpc_client_t *c, const char *body, size_t len, long *http_status,
                             loom_buf_t *response, loom_rpc_client_error_t *e);

#ifdef __cplusplus
}
#endif
#endif
