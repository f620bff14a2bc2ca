/* loom cancel ID...: cancel jobs, all in one JSON-RPC batch (job.cancel). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: loom cancel ID... [--reason TEXT] [--json]\n\n"
               "Cancels the jobs (one batch request). A job that already ended is an error.\n"
               "An array's id (the first task's) cancels all its active tasks, ID_TASK one task.\n"
               "exit codes: 0 all cancelled, 4 some job does not exist, 1 some other failure\n"
               "(e.g. already ended), 3 cannot connect.\n");
}

/* "loom cancel: job 9 not found", never "job 9: job 9 not found": the
 * job is named once, by loomd's message when it names it already. */
static void report_failure(int64_t id, const char *message)
{
    char job[40];
    int n = snprintf(job, sizeof job, "job %lld", (long long)id);
    if (message && strncmp(message, job, (size_t)n) == 0 &&
        (message[n] == ' ' || message[n] == ':' || message[n] == 0))
        fprintf(stderr, "loom cancel: %s\n", message);
    else
        fprintf(stderr, "loom cancel: %s: %s\n", job, message ? message : "failed");
}

int loom_cmd_cancel(int argc, char **argv)
{
    static const struct option opts[] = {{"reason", required_argument, NULL, 'r'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *reason = NULL;
    bool as_json = false;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'r': reason = optarg; break;
        case 'j': as_json = true; break;
        case 'h': usage(stdout); return LOOM_EXIT_OK;
        default: usage(stderr); return LOOM_EXIT_USAGE;
        }
    }
    if (argc - optind == 0) {
        fprintf(stderr, "loom cancel: expected at least one job ID (see loom cancel --help)\n");
        return LOOM_EXIT_USAGE;
    }
    /* an array's id stands for all its active tasks, ID_TASK for one */
    int64_t *ids = NULL;
    size_t n = 0;
    int rc = loom_cli_job_ids("cancel", argc, argv, optind, &ids, &n);
    if (rc)
        return rc;
    loom_rpc_batch_item_t *items = calloc(n ? n : 1, sizeof *items);
    json_t **params = calloc(n ? n : 1, sizeof *params);
    if (!items || !params) {
        fprintf(stderr, "loom cancel: out of memory\n");
        rc = LOOM_EXIT_FAILURE;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        params[i] = json_pack("{s:I}", "id", (json_int_t)ids[i]);
        if (reason)
            json_object_set_new(params[i], "reason", json_string(reason));
        items[i].method = "job.cancel";
        items[i].params = params[i];
    }
    loom_cli_conn_t conn;
    if ((rc = loom_cli_connect("cancel", &conn)))
        goto out;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    /* Cancel is idempotent in effect (a repeat reports "already CANCELLED"),
     * but a retry could turn success into that error; do not retry. */
    if (loom_rpc_client_batch(conn.client, items, n, 0, &e) != LOOM_OK) {
        rc = loom_cli_report("cancel", &conn, &e);
        loom_rpc_client_error_clear(&e);
        loom_cli_disconnect(&conn);
        goto out;
    }
    loom_rpc_client_error_clear(&e);
    loom_cli_disconnect(&conn);
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++) {
        if (items[i].code == 0) {
            json_array_append_new(out,
                                  json_pack("{s:I, s:b, s:O}", "id", (json_int_t)ids[i], "ok", 1,
                                            "job", json_object_get(items[i].result, "job")));
            if (!as_json)
                printf("Cancelled job %lld\n", (long long)ids[i]);
        } else {
            json_array_append_new(out,
                                  json_pack("{s:I, s:b, s:{s:i, s:s}}", "id", (json_int_t)ids[i],
                                            "ok", 0, "error", "code", items[i].code, "message",
                                            items[i].message ? items[i].message : ""));
            report_failure(ids[i], items[i].message);
            int code = loom_cli_exit_for_rpc(items[i].code);
            /* Report "not found" over other failures. */
            if (code == LOOM_EXIT_NOTFOUND || rc == LOOM_EXIT_OK)
                rc = code;
        }
    }
    if (as_json)
        loom_cli_print_json(out);
    json_decref(out);
out:
    if (items)
        loom_rpc_batch_items_clear(items, n);
    for (size_t i = 0; params && i < n; i++)
        json_decref(params[i]);
    free(params);
    free(items);
    free(ids);
    return rc;
}
