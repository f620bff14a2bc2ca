/* What the loom commands that talk to loomd share: finding loomd (URL and
 * token), making calls, turning failures into a message on stderr and the
 * exit code of docs/cli.md, and a few formatting helpers for tables. */
#ifndef LOOM_CLI_CLIENT_H
#define LOOM_CLI_CLIENT_H

#include "loom/rpc.h"

typedef struct loom_cli_conn {
    loom_rpc_client_t *client;
    char url[4200];
    bool munge; /* TCP without a token: a MUNGE credential (docs/security.md) */
} loom_cli_conn_t;

/* Gets a new MUNGE credential for conn's client (TCP, multi-user loomd). */
int loom_cli_munge(loom_cli_conn_t *conn);

/* Connects per loom_cli (--url, LOOM_URL, LOOM_TOKEN, LOOM_STATE_DIR).
 * Returns an exit code (0 ok) after printing why on stderr. */
/* loomd's address as every command uses it: --url, else $LOOM_URL, else
 * unix:$LOOM_STATE_DIR/loomd.sock. Prints the error and returns an exit code. */
int loom_cli_url(const char *cmd, char *url, size_t len);
int loom_cli_connect(const char *cmd, loom_cli_conn_t *conn);
void loom_cli_disconnect(loom_cli_conn_t *conn);

/* One call; on failure prints "loom CMD: ..." and returns the exit code. */
int loom_cli_call(const char *cmd, loom_cli_conn_t *conn, const char *method, const json_t *params,
                  unsigned flags, json_t **result);

/* Exit code for a JSON-RPC error code (-32001 job not found -> 4, ...). */
int loom_cli_exit_for_rpc(int rpc_code);

/* `loom cancel/hold/release/requeue ID...`: one call per job in one batch
 * on a new connection to loomd; prints "DONE job ID" per success (or, with
 * as_json, one array of {"id", "ok", "job" | "error"}); returns the exit
 * code. Each call's params are extra's members (extra may be NULL) and "id". */
int loom_cli_batch_per_job(const char *cmd, const char *method, const char *done,
                           const int64_t *ids, size_t n, const json_t *extra, bool as_json);
/* Exit code and message for a failed call. */
int loom_cli_report(const char *cmd, const loom_cli_conn_t *conn, const loom_rpc_client_error_t *e);

/* Text from loomd, shown on a terminal (docs/security.md): s with every
 * control, C1 and bidirectional-override character escaped ("\x1b",
 * "\u202e"), in out (reset first); "" for NULL. */
const char *loom_cli_safe(const char *s, loom_buf_t *out);
/* A result about to be shown as text: every string and key in v escaped
 * as loom_cli_safe does. Takes v's reference, returns the tree to use
 * (v itself, or a copy for an object). Not for --json output (whose
 * writer escapes the same characters as \uXXXX) nor for a job's own output
 * (loom logs prints the job's bytes as they are). */
json_t *loom_cli_safe_tree(json_t *v);

/* Prints a JSON value, indented, with a newline. */
void loom_cli_print_json(const json_t *v);
/* Parses a command's --json and --help (getopt_long; optind then points at
 * the first operand). Returns 0 to go on, 'h' for --help (the caller prints
 * its usage), '?' for a bad option (said here, loom_cli_bad_option). */
int loom_cli_json_opts(const char *cmd, int argc, char **argv, bool *as_json);
/* The whole of a command that takes only [--json] and calls one method
 * without params: parses the options (--help prints usage and returns 0
 * with *result NULL), connects, calls. On success *result is the method's
 * result (json_decref it) and url holds loomd's address. */
int loom_cli_simple_call(int argc, char **argv, const char *cmd, void (*usage)(FILE *),
                         const char *method, bool *as_json, json_t **result, char *url,
                         size_t urllen);

/* Table cells. out must hold 32 bytes. */
const char *loom_cli_fmt_size(json_int_t bytes, char *out);        /* "16GiB" or "-" */
const char *loom_cli_fmt_seconds(json_int_t s, char *out);         /* "1h30m" or "-" */
const char *loom_cli_fmt_gpus(const json_t *resources, char *out); /* "2", "0.25" or "-" */
/* "2026-12-02T08:26:15.123456Z" -> "2026-12-02 08:26:15"; "-" for null. */
const char *loom_cli_fmt_time(const json_t *t, char *out);

#endif
