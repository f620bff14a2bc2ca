/* loom dash: a one-time URL for loomd's web dashboard (dash.login), as
 * Jupyter prints one: opened within a minute, once, it gives the browser a
 * session (docs/dashboard.md). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: loom dash [--json]\n\n"
               "Prints a one-time URL that logs a browser into loomd's dashboard: open it\n"
               "within 60 seconds; it works once. The dashboard shows the cluster, the queue\n"
               "and each job live, usage per user, and lets you cancel jobs\n"
               "(docs/dashboard.md). With loomd --multi-user the session is yours: the page\n"
               "may do what you may (cancel your own jobs; an operator, anyone's).\n\n"
               "  --json   print dash.login's result (code, path, url, expires_in, who)\n"
               "  -h, --help\n");
}

/* The URL to print: the one this CLI reached loomd at, when that is TCP
 * (it works through an SSH tunnel too), else loomd's own TCP listener. */
static int print_url(const char *conn_url, json_t *r)
{
    const char *path = json_string_value(json_object_get(r, "path"));
    const char *own = json_string_value(json_object_get(r, "url"));
    char url[4400];
    if (path && strncmp(conn_url, "http://", 7) == 0) {
        /* http://HOST:PORT/rpc, as every command takes it, is the RPC
         * endpoint; the dashboard is served beside it, at the root. */
        size_t n = strlen(conn_url);
        while (n && conn_url[n - 1] == '/')
            n--;
        if (n >= 4 && strncmp(conn_url + n - 4, "/rpc", 4) == 0)
            n -= 4;
        snprintf(url, sizeof url, "%.*s%s", (int)n, conn_url, path);
    } else if (own) {
        snprintf(url, sizeof url, "%s", own);
    } else {
        fprintf(stderr, "loom dash: loomd has no TCP listener (it runs with --listen none), and "
                        "browsers reach the dashboard only over TCP\n");
        return LOOM_EXIT_FAILURE;
    }
    printf("Open this URL in a browser within %lld seconds (it works once):\n\n    %s\n",
           (long long)json_integer_value(json_object_get(r, "expires_in")), url);
    return LOOM_EXIT_OK;
}

int loom_cmd_dash(int argc, char **argv)
{
    bool as_json;
    json_t *r;
    char url[4200];
    int rc = loom_cli_simple_call(argc, argv, "dash", usage, "dash.login", &as_json, &r, url,
                                  sizeof url);
    if (rc || !r)
        return rc;
    if (as_json)
        loom_cli_print_json(r);
    else
        rc = print_url(url, r);
    json_decref(r);
    return rc;
}
