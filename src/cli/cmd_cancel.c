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

int loom_cmd_cancel(int argc, char **argv)
{
    static const struct option opts[] = {{"reason", required_argument, NULL, 'r'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *reason = NULL;
    bool as_json = false;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'r': reason = optarg; break;
        case 'j': as_json = true; break;
        case 'h': usage(stdout); return LOOM_EXIT_OK;
        default: return loom_cli_bad_option("cancel", c, argv[optind - 1]);
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
    json_t *extra = reason ? json_pack("{s:s}", "reason", reason) : NULL;
    if (reason && !extra) {
        fprintf(stderr, "loom cancel: out of memory\n");
        rc = LOOM_EXIT_FAILURE;
    } else {
        rc = loom_cli_batch_per_job("cancel", "job.cancel", "Cancelled", ids, n, extra, as_json);
    }
    json_decref(extra);
    free(ids);
    return rc;
}
