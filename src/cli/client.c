/* Shared by the loom commands that talk to loomd; see client.h. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "loom/auth.h"

/* The system loomd's socket (the systemd unit's --socket); a user without a
 * loomd of their own talks to it. $LOOM_SYSTEM_SOCKET overrides. */
#ifndef LOOM_SYSTEM_SOCKET
#define LOOM_SYSTEM_SOCKET "/run/loom/loomd.sock"
#endif

int loom_cli_url(const char *cmd, char *url, size_t len)
{
    loom_err_t err;
    char state_dir[4096] = "";
    if (loom_cli.url && *loom_cli.url) {
        snprintf(url, len, "%s", loom_cli.url);
    } else if (loom_default_state_dir(state_dir, sizeof state_dir, &err) == LOOM_OK) {
        snprintf(url, len, "unix:%s/loomd.sock", state_dir);
        const char *sys = getenv("LOOM_SYSTEM_SOCKET");
        sys = sys && *sys ? sys : LOOM_SYSTEM_SOCKET;
        if (!getenv("LOOM_STATE_DIR") && access(url + 5, F_OK) != 0 && access(sys, F_OK) == 0)
            snprintf(url, len, "unix:%s", sys);
    } else {
        fprintf(stderr, "loom %s: no loomd address: give --url or set LOOM_URL (%s)\n", cmd,
                err.msg);
        return LOOM_EXIT_USAGE;
    }
    return LOOM_EXIT_OK;
}

int loom_cli_connect(const char *cmd, loom_cli_conn_t *conn)
{
    memset(conn, 0, sizeof *conn);
    loom_err_t err;
    char state_dir[4096] = "";
    bool have_state = loom_default_state_dir(state_dir, sizeof state_dir, &err) == LOOM_OK;
    int rc = loom_cli_url(cmd, conn->url, sizeof conn->url);
    if (rc != LOOM_EXIT_OK)
        return rc;
    loom_rpc_client_config_t cfg;
    loom_rpc_client_config_init(&cfg);
    cfg.url = conn->url;
    char token[LOOM_RPC_TOKEN_HEX + 1];
    if (strncmp(conn->url, "unix:", 5) != 0) {
        if (loom_cli.token && *loom_cli.token)
            cfg.token = loom_cli.token;
        else if (loom_rpc_token_resolve(have_state ? state_dir : NULL, token, &err) == LOOM_OK)
            cfg.token = token;
        /* else: no token; loomd answers 401 and we say so. */
    }
    if (loom_rpc_client_new(&cfg, &conn->client, &err)) {
        fprintf(stderr, "loom %s: %s\n", cmd, err.msg);
        return err.code == LOOM_EINVAL ? LOOM_EXIT_USAGE : LOOM_EXIT_FAILURE;
    }
    /* TCP without a token: a multi-user loomd knows us by MUNGE. */
    conn->munge = strncmp(conn->url, "unix:", 5) != 0 && !cfg.token;
    if (conn->munge)
        loom_cli_munge(conn);
    return LOOM_EXIT_OK;
}

void loom_cli_disconnect(loom_cli_conn_t *conn)
{
    loom_rpc_client_free(conn->client);
    conn->client = NULL;
}

int loom_cli_exit_for_rpc(int rpc_code)
{
    switch (rpc_code) {
    case -32001: return LOOM_EXIT_NOTFOUND;
    case -32020: return LOOM_EXIT_NOTFOUND;   /* no zoo entry, no parent: docs/zoo.md */
    case -32008: return LOOM_EXIT_PERMISSION; /* another user's job */
    case LOOM_RPC_INVALID_PARAMS: return LOOM_EXIT_USAGE;
    default: return LOOM_EXIT_FAILURE;
    }
}

static int cli_report(const char *cmd, const loom_cli_conn_t *conn,
                      const loom_rpc_client_error_t *e, const char *msg);

/* ------------------------------------------------- text for terminals */

const char *loom_cli_safe(const char *s, loom_buf_t *out)
{
    loom_buf_reset(out);
    if (!s || loom_text_escape(out, s, strlen(s)) != LOOM_OK || !out->data)
        return "";
    return out->data;
}

/* s escaped as a new JSON string, or NULL when nothing needs escaping. */
static json_t *safe_string(const char *s, size_t len)
{
    if (loom_text_unsafe_at(s, len) == len)
        return NULL;
    loom_buf_t b = LOOM_BUF_INIT;
    json_t *v = loom_text_escape(&b, s, len) == LOOM_OK && b.data ? json_string(b.data) : NULL;
    loom_buf_free(&b);
    return v ? v : json_string("?");
}

json_t *loom_cli_safe_tree(json_t *v)
{
    if (json_is_string(v)) {
        json_t *s = safe_string(json_string_value(v), json_string_length(v));
        if (!s)
            return v;
        json_decref(v);
        return s;
    }
    if (json_is_array(v))
        for (size_t i = 0; i < json_array_size(v); i++)
            json_array_set_new(v, i, loom_cli_safe_tree(json_incref(json_array_get(v, i))));
    if (json_is_object(v)) {
        json_t *copy = json_object();
        const char *k;
        json_t *e;
        json_object_foreach(v, k, e)
        {
            json_t *key = safe_string(k, strlen(k));
            json_object_set_new(copy, key ? json_string_value(key) : k,
                                loom_cli_safe_tree(json_incref(e)));
            json_decref(key);
        }
        json_decref(v);
        return copy;
    }
    return v;
}

int loom_cli_report(const char *cmd, const loom_cli_conn_t *conn, const loom_rpc_client_error_t *e)
{
    loom_buf_t b = LOOM_BUF_INIT; /* the server's message may carry a client's text */
    int rc = cli_report(cmd, conn, e, loom_cli_safe(e->err.msg, &b));
    loom_buf_free(&b);
    return rc;
}

static int cli_report(const char *cmd, const loom_cli_conn_t *conn,
                      const loom_rpc_client_error_t *e, const char *msg)
{
    switch (e->kind) {
    case LOOM_RPC_FAIL_CONNECT:
    case LOOM_RPC_FAIL_TIMEOUT:
    case LOOM_RPC_FAIL_TRANSPORT:
        fprintf(stderr, "loom %s: cannot reach loomd at %s: %s\n", cmd, conn->url, msg);
        return LOOM_EXIT_CONNECT;
    case LOOM_RPC_FAIL_HTTP:
        if (e->http_status == 401 || e->http_status == 403) {
            fprintf(stderr,
                    "loom %s: loomd at %s refused the request (%s): set LOOM_TOKEN or make "
                    "the token file $LOOM_STATE_DIR/token readable, or (a multi-user loomd) "
                    "check that munged runs here with the cluster's key\n",
                    cmd, conn->url, msg);
            return LOOM_EXIT_CONNECT;
        }
        fprintf(stderr, "loom %s: %s\n", cmd, msg);
        return LOOM_EXIT_FAILURE;
    case LOOM_RPC_FAIL_RPC:
        fprintf(stderr, "loom %s: %s\n", cmd, msg);
        return loom_cli_exit_for_rpc(e->rpc_code);
    default: fprintf(stderr, "loom %s: %s\n", cmd, msg); return LOOM_EXIT_FAILURE;
    }
}

int loom_cli_munge(loom_cli_conn_t *conn)
{
    loom_err_t err;
    char *cred = NULL;
    if (loom_auth_munge_encode(NULL, &cred, &err) != LOOM_OK)
        return err.code; /* no munged: loomd answers 401 and we say so */
    loom_buf_t h = LOOM_BUF_INIT;
    int rc = loom_buf_appendf(&h, "Munge %s", cred);
    if (rc == LOOM_OK)
        rc = loom_rpc_client_set_authorization(conn->client, h.data, &err);
    loom_buf_free(&h);
    free(cred);
    return rc;
}

int loom_cli_call(const char *cmd, loom_cli_conn_t *conn, const char *method, const json_t *params,
                  unsigned flags, json_t **result)
{
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    int rc = loom_rpc_client_call(conn->client, method, params, flags, result, &e);
    /* A credential serves one connection; a new connection needs a new one
     * (munged refuses replays). */
    if (rc != LOOM_OK && conn->munge && e.kind == LOOM_RPC_FAIL_HTTP && e.http_status == 401 &&
        loom_cli_munge(conn) == LOOM_OK) {
        loom_rpc_client_error_clear(&e);
        rc = loom_rpc_client_call(conn->client, method, params, flags, result, &e);
    }
    if (rc == LOOM_OK) {
        loom_rpc_client_error_clear(&e);
        return LOOM_EXIT_OK;
    }
    int code = loom_cli_report(cmd, conn, &e);
    loom_rpc_client_error_clear(&e);
    return code;
}

void loom_cli_print_json(const json_t *v)
{
    /* Reals in their shortest form (0.2, not 0.20000000000000001). */
    loom_buf_t b = LOOM_BUF_INIT;
    if (loom_json_write(&b, v, 2) == LOOM_OK && b.data) {
        fputs(b.data, stdout);
        fputc('\n', stdout);
    }
    loom_buf_free(&b);
}

const char *loom_cli_fmt_size(json_int_t bytes, char *out)
{
    if (bytes <= 0)
        return strcpy(out, "-");
    return loom_format_size((uint64_t)bytes, out, 32);
}

const char *loom_cli_fmt_seconds(json_int_t s, char *out)
{
    if (s <= 0)
        return strcpy(out, "-");
    return loom_format_duration((int64_t)s * LOOM_NS_PER_S, out, 32);
}

const char *loom_cli_fmt_gpus(const json_t *r, char *out)
{
    json_int_t gpus = json_integer_value(json_object_get(r, "gpus"));
    json_int_t share = json_integer_value(json_object_get(r, "gpu_share"));
    if (gpus > 0)
        snprintf(out, 32, "%lld", (long long)gpus);
    else if (share > 0)
        snprintf(out, 32, "%g", (double)share / 1000.0);
    else
        strcpy(out, "-");
    return out;
}

const char *loom_cli_fmt_time(const json_t *t, char *out)
{
    const char *s = json_string_value(t);
    if (!s || strlen(s) < 19)
        return strcpy(out, "-");
    snprintf(out, 32, "%.10s %.8s", s, s + 11);
    return out;
}

int loom_cli_bad_option(const char *cmd, int c, const char *word)
{
    if (c == ':')
        fprintf(stderr, "loom %s: option '%s' needs a value; try 'loom %s --help'\n", cmd, word,
                cmd);
    else if (optopt > 0 && optopt < 256 && word[0] == '-' && word[1] != '-' &&
             strchr(word + 1, optopt)) /* -x, or x of a cluster -jx */
        fprintf(stderr, "loom %s: unknown option '-%c'; try 'loom %s --help'\n", cmd, optopt, cmd);
    else
        fprintf(stderr, "loom %s: unknown option '%s'; try 'loom %s --help'\n", cmd, word, cmd);
    return LOOM_EXIT_USAGE;
}

int loom_cli_json_opts(const char *cmd, int argc, char **argv, bool *as_json)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    *as_json = false;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == 'h')
            return 'h';
        if (c != 'j') {
            loom_cli_bad_option(cmd, c, argv[optind - 1]);
            return '?';
        }
        *as_json = true;
    }
    return 0;
}

int loom_cli_simple_call(int argc, char **argv, const char *cmd, void (*usage)(FILE *),
                         const char *method, bool *as_json, json_t **result, char *url,
                         size_t urllen)
{
    *result = NULL;
    int c = loom_cli_json_opts(cmd, argc, argv, as_json);
    if (c == 'h')
        usage(stdout);
    if (c)
        return c == 'h' ? LOOM_EXIT_OK : LOOM_EXIT_USAGE;
    if (optind != argc) {
        fprintf(stderr, "loom %s: unexpected argument '%s'\n", cmd, argv[optind]);
        return LOOM_EXIT_USAGE;
    }
    loom_cli_conn_t conn;
    int rc = loom_cli_connect(cmd, &conn);
    if (rc)
        return rc;
    snprintf(url, urllen, "%s", conn.url);
    rc = loom_cli_call(cmd, &conn, method, NULL, LOOM_RPC_CALL_RETRY, result);
    loom_cli_disconnect(&conn);
    return rc;
}

/* A job's failure, without repeating its id when loomd's message already
 * starts with it ("job 999 not found", not "job 999: job 999 not found"). */
static void report_failure(const char *cmd, int64_t id, const char *text)
{
    loom_buf_t b = LOOM_BUF_INIT; /* the message may carry a client's text */
    const char *msg = loom_cli_safe(text, &b);
    char job[40];
    int n = snprintf(job, sizeof job, "job %lld", (long long)id);
    if (strncmp(msg, job, (size_t)n) == 0 && (msg[n] == ' ' || msg[n] == ':' || msg[n] == 0))
        fprintf(stderr, "loom %s: %s\n", cmd, msg);
    else
        fprintf(stderr, "loom %s: %s: %s\n", cmd, job, msg);
    loom_buf_free(&b);
}

/* Calls per batch request: within loomd's 1000 calls and 1 MiB a request
 * even with a 1024-byte reason each, so an array of 100k tasks is cancelled
 * in requests of this many (it was one request, refused with HTTP 413). */
#define PER_JOB_BATCH 256

/* Sends one call per job in batches of PER_JOB_BATCH on one connection
 * (no retry: a repeat could turn a success into "already ..."), prints "DONE job ID" or the failure
 * of each, and returns the exit code, "not found" over other failures. */
static int send_per_job(const char *cmd, const char *done, loom_rpc_batch_item_t *items,
                        const int64_t *ids, size_t n, bool as_json)
{
    loom_cli_conn_t conn;
    int rc = loom_cli_connect(cmd, &conn);
    if (rc)
        return rc;
    for (size_t from = 0; from < n; from += PER_JOB_BATCH) {
        loom_rpc_client_error_t e;
        loom_rpc_client_error_init(&e);
        size_t k = n - from < PER_JOB_BATCH ? n - from : PER_JOB_BATCH;
        if (loom_rpc_client_batch(conn.client, items + from, k, 0, &e) != LOOM_OK) {
            rc = loom_cli_report(cmd, &conn, &e);
            loom_rpc_client_error_clear(&e);
            loom_cli_disconnect(&conn);
            if (from > 0)
                fprintf(stderr, "loom %s: the first %zu of %zu jobs were sent before this\n", cmd,
                        from, n);
            return rc;
        }
        loom_rpc_client_error_clear(&e);
    }
    loom_cli_disconnect(&conn);
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++) {
        if (items[i].code == 0) {
            json_array_append_new(out,
                                  json_pack("{s:I, s:b, s:O}", "id", (json_int_t)ids[i], "ok", 1,
                                            "job", json_object_get(items[i].result, "job")));
            if (!as_json)
                printf("%s job %lld\n", done, (long long)ids[i]);
            continue;
        }
        const char *msg = items[i].message ? items[i].message : "failed";
        json_array_append_new(out,
                              json_pack("{s:I, s:b, s:{s:i, s:s}}", "id", (json_int_t)ids[i], "ok",
                                        0, "error", "code", items[i].code, "message", msg));
        report_failure(cmd, ids[i], msg);
        int code = loom_cli_exit_for_rpc(items[i].code);
        if (code == LOOM_EXIT_NOTFOUND || rc == LOOM_EXIT_OK)
            rc = code;
    }
    if (as_json)
        loom_cli_print_json(out);
    json_decref(out);
    return rc;
}

int loom_cli_batch_per_job(const char *cmd, const char *method, const char *done,
                           const int64_t *ids, size_t n, const json_t *extra, bool as_json)
{
    loom_rpc_batch_item_t *items = calloc(n ? n : 1, sizeof *items);
    json_t **params = calloc(n ? n : 1, sizeof *params);
    int rc = LOOM_EXIT_OK;
    for (size_t i = 0; items && params && i < n; i++) {
        params[i] = extra ? json_deep_copy(extra) : json_object();
        if (!params[i] || json_object_set_new(params[i], "id", json_integer(ids[i]))) {
            rc = LOOM_EXIT_FAILURE;
            break;
        }
        items[i].method = method;
        items[i].params = params[i];
    }
    if (!items || !params || rc != LOOM_EXIT_OK) {
        fprintf(stderr, "loom %s: out of memory\n", cmd);
        rc = LOOM_EXIT_FAILURE;
    } else {
        rc = send_per_job(cmd, done, items, ids, n, as_json);
    }
    if (items)
        loom_rpc_batch_items_clear(items, n);
    for (size_t i = 0; params && i < n; i++)
        json_decref(params[i]);
    free(params);
    free(items);
    return rc;
}
