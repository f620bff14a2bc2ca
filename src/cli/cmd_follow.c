/* loom wait ID... and loom logs ID [-f]: both ride loomd's long-poll
 * methods (job.wait, job.logs): each call returns when there is news or
 * after its timeout, and the command calls again. No sleeping or polling
 * here: loomd answers as soon as the jobs end or the log grows. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"

#define WAIT_IDS_MAX 100
#define CALL_TIMEOUT 20 /* seconds per long-poll call; the client's own is 30 */

static void wait_usage(FILE *f)
{
    fprintf(f, "usage: loom wait ID... [--json]\n\n"
               "Waits until the jobs (at most 100) have ended and prints how each ended.\n"
               "exit codes: 0 all COMPLETED; else the exit code of the first job that did not\n"
               "complete if it is 1..125, else 1; 4 a job does not exist, 3 cannot connect.\n");
}

/* The exit status of the ended jobs. */
static int wait_status(const json_t *jobs)
{
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j)
    {
        if (strcmp(json_string_value(json_object_get(j, "state")), "COMPLETED") == 0)
            continue;
        json_int_t code = json_integer_value(json_object_get(j, "exit_code"));
        return code >= 1 && code <= 125 ? (int)code : LOOM_EXIT_FAILURE;
    }
    return LOOM_EXIT_OK;
}

static void wait_print(const json_t *jobs)
{
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j)
    {
        const char *reason = json_string_value(json_object_get(j, "reason"));
        printf("%lld %s%s%s\n", (long long)json_integer_value(json_object_get(j, "id")),
               json_string_value(json_object_get(j, "state")), reason ? " " : "",
               reason ? reason : "");
    }
}

int loom_cmd_wait(int argc, char **argv)
{
    bool as_json;
    int c = loom_cli_json_opts("wait", argc, argv, &as_json);
    if (c == 'h')
        wait_usage(stdout);
    if (c)
        return c == 'h' ? LOOM_EXIT_OK : LOOM_EXIT_USAGE;
    int n = argc - optind;
    if (n < 1 || n > WAIT_IDS_MAX) {
        fprintf(stderr, "loom wait: expected 1 to %d job IDs (see loom wait --help)\n",
                WAIT_IDS_MAX);
        return LOOM_EXIT_USAGE;
    }
    json_t *ids = json_array();
    loom_err_t err;
    for (int i = 0; i < n; i++) {
        int64_t id;
        if (loom_parse_i64(argv[optind + i], 1, INT64_MAX, &id, "job ID", &err)) {
            fprintf(stderr, "loom wait: %s\n", err.msg);
            json_decref(ids);
            return LOOM_EXIT_USAGE;
        }
        json_array_append_new(ids, json_integer(id));
    }
    loom_cli_conn_t conn;
    int rc = loom_cli_connect("wait", &conn);
    bool connected = rc == LOOM_EXIT_OK;
    json_t *params = json_pack("{s:o, s:i}", "ids", ids, "timeout", CALL_TIMEOUT), *result = NULL;
    while (rc == LOOM_EXIT_OK) {
        json_decref(result);
        result = NULL;
        rc = loom_cli_call("wait", &conn, "job.wait", params, LOOM_RPC_CALL_RETRY, &result);
        if (rc == LOOM_EXIT_OK && json_is_true(json_object_get(result, "ended")))
            break;
    }
    if (rc == LOOM_EXIT_OK) {
        json_t *jobs = json_object_get(result, "jobs");
        if (as_json)
            loom_cli_print_json(jobs);
        else {
            json_t *safe = loom_cli_safe_tree(json_incref(jobs)); /* reasons escaped */
            wait_print(safe);
            json_decref(safe);
        }
        rc = wait_status(jobs);
    }
    if (connected)
        loom_cli_disconnect(&conn);
    json_decref(result);
    json_decref(params);
    return rc;
}

static void logs_usage(FILE *f)
{
    fprintf(f,
            "usage: loom logs ID [-f] [--stderr] [--json]\n\n"
            "Prints the job's output file (its error file with --stderr; the same file\n"
            "when the job merges them).\n\n"
            "  -f, --follow  keep printing as the job writes, until it ends\n"
            "  --stderr      the error file\n"
            "  --json        print {\"id\", \"stream\", \"data\", \"next_offset\", \"eof\",\n"
            "                \"state\", \"path\"} once all is read (with -f: once the job ended)\n"
            "exit codes: 0 printed, 1 the job ended without an output file (the reason\n"
            "is printed: e.g. its output could not be opened), 4 no such job, 3 cannot\n"
            "connect.\n");
}

/* One job.logs call; prints its text, or with --json gathers it into
 * *gathered (the last result, its data the whole text). *done: nothing
 * more to come. */
static int logs_once(loom_cli_conn_t *conn, json_t *params, bool follow, json_t **gathered,
                     bool *done)
{
    json_t *result = NULL;
    int rc = loom_cli_call("logs", conn, "job.logs", params, LOOM_RPC_CALL_RETRY, &result);
    if (rc)
        return rc;
    const json_t *data = json_object_get(result, "data");
    if (gathered) {
        loom_buf_t b = LOOM_BUF_INIT;
        const json_t *before = json_object_get(*gathered, "data");
        loom_buf_append(&b, json_string_value(before) ? json_string_value(before) : "",
                        json_string_length(before));
        loom_buf_append(&b, json_string_value(data), json_string_length(data));
        json_decref(*gathered);
        *gathered = json_deep_copy(result);
        json_object_set_new(*gathered, "data", json_stringn(b.data ? b.data : "", b.len));
        loom_buf_free(&b);
    } else {
        fwrite(json_string_value(data), 1, json_string_length(data), stdout);
        fflush(stdout);
    }
    bool eof = json_is_true(json_object_get(result, "eof"));
    /* An ended job with no output file at all: say why (the file could not
     * be opened, or the job never ran) rather than print nothing. */
    if (!gathered && eof && json_integer_value(json_object_get(params, "offset")) == 0 &&
        json_is_false(json_object_get(result, "exists"))) {
        const char *path = json_string_value(json_object_get(result, "path"));
        fprintf(stderr, "loom logs: job %lld (%s) has no output%s%s%s: %s\n",
                (long long)json_integer_value(json_object_get(params, "id")),
                json_string_value(json_object_get(result, "state")), path && *path ? " '" : "",
                path && *path ? path : "", path && *path ? "'" : "",
                json_string_value(json_object_get(result, "reason")));
        rc = LOOM_EXIT_FAILURE;
    }
    json_object_set(params, "offset", json_object_get(result, "next_offset"));
    /* Without -f: stop at the end of what is written now. */
    *done = eof || (!follow && json_string_length(data) == 0);
    json_decref(result);
    return rc;
}

int loom_cmd_logs(int argc, char **argv)
{
    static const struct option opts[] = {{"follow", no_argument, NULL, 'f'},
                                         {"stderr", no_argument, NULL, 'e'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    bool follow = false, want_stderr = false, as_json = false;
    int c;
    while ((c = getopt_long(argc, argv, ":fh", opts, NULL)) != -1) {
        switch (c) {
        case 'f': follow = true; break;
        case 'e': want_stderr = true; break;
        case 'j': as_json = true; break;
        case 'h': logs_usage(stdout); return LOOM_EXIT_OK;
        default: return loom_cli_bad_option("logs", c, argv[optind - 1]);
        }
    }
    int64_t id;
    loom_err_t err;
    if (argc - optind != 1) {
        fprintf(stderr, "loom logs: expected one job ID (see loom logs --help)\n");
        return LOOM_EXIT_USAGE;
    }
    if (loom_parse_i64(argv[optind], 1, INT64_MAX, &id, "job ID", &err)) {
        fprintf(stderr, "loom logs: %s\n", err.msg);
        return LOOM_EXIT_USAGE;
    }
    loom_cli_conn_t conn;
    int rc = loom_cli_connect("logs", &conn);
    if (rc)
        return rc;
    json_t *params = json_pack("{s:I, s:s, s:i, s:i}", "id", (json_int_t)id, "stream",
                               want_stderr ? "stderr" : "stdout", "offset", 0, "timeout",
                               follow ? CALL_TIMEOUT : 0);
    bool done = false;
    json_t *gathered = NULL;
    while (rc == LOOM_EXIT_OK && !done)
        rc = logs_once(&conn, params, follow, as_json ? &gathered : NULL, &done);
    loom_cli_disconnect(&conn);
    if (rc == LOOM_EXIT_OK && gathered) {
        json_object_set_new(gathered, "id", json_integer(id));
        json_object_set_new(gathered, "stream", json_string(want_stderr ? "stderr" : "stdout"));
        loom_cli_print_json(gathered);
    }
    json_decref(gathered);
    json_decref(params);
    return rc;
}
