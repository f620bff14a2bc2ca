/* loom usage: what jobs held, per user and account (usage.report), as
 * Slurm's sreport tells it. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: loom usage [--user U] [--account A] [--since T] [--json]\n\n"
               "Reports what jobs held per user and account (loomd's usage.report): jobs that\n"
               "ran, GPU-seconds (a share counts as its fraction of a GPU), CPU-seconds and\n"
               "memory GiB-seconds allocated, and run time, from each job's start to its end\n"
               "(or now), within the window.\n\n"
               "  --user U      only user U\n"
               "  --account A   only account A\n"
               "  --since T     from T: an RFC 3339 time (2026-12-03T13:00:00Z, or with an\n"
               "                offset: +01:00) or a duration ago (24h, 7d); default: from\n"
               "                the first job\n"
               "  --json        the result of usage.report as JSON\n");
}

/* A duration ago, or an RFC 3339 time, sent as UTC. */
static int since_param(const char *text, char out[32], loom_err_t *err)
{
    int64_t d;
    if (loom_parse_duration(text, &d, NULL) == LOOM_OK) {
        loom_time_format_rfc3339(loom_time_real_ns() - d, out);
        return 0;
    }
    if (loom_time_parse_rfc3339(text, &d, err))
        return -1;
    loom_time_format_rfc3339(d, out);
    return 0;
}

static void print_rows(const json_t *r)
{
    printf("%-16s %-16s %6s %14s %14s %14s %12s\n", "USER", "ACCOUNT", "JOBS", "GPU-HOURS",
           "CPU-HOURS", "MEM-GIB-HOURS", "RUN-HOURS");
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(r, "rows"), i, u)
    {
        const char *user = json_string_value(json_object_get(u, "user"));
        const char *acct = json_string_value(json_object_get(u, "account"));
        printf("%-16s %-16s %6lld %14.3f %14.3f %14.3f %12.3f\n", user && *user ? user : "-",
               acct && *acct ? acct : "-",
               (long long)json_integer_value(json_object_get(u, "jobs")),
               json_number_value(json_object_get(u, "gpu_seconds")) / 3600,
               json_number_value(json_object_get(u, "cpu_seconds")) / 3600,
               json_number_value(json_object_get(u, "memory_gib_seconds")) / 3600,
               json_number_value(json_object_get(u, "wall_seconds")) / 3600);
    }
}

int loom_cmd_usage(int argc, char **argv)
{
    static const struct option opts[] = {
        {"user", required_argument, NULL, 'u'},  {"account", required_argument, NULL, 'A'},
        {"since", required_argument, NULL, 's'}, {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0}};
    json_t *params = json_object();
    bool as_json = false;
    char since[32];
    loom_err_t err;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":u:A:s:jh", opts, NULL)) != -1) {
        switch (c) {
        case 'u': json_object_set_new(params, "user", json_string(optarg)); break;
        case 'A': json_object_set_new(params, "account", json_string(optarg)); break;
        case 's':
            if (since_param(optarg, since, &err) != 0) {
                fprintf(stderr,
                        "loom usage: --since: expected a duration (24h) or an RFC 3339 time "
                        "(2026-12-03T13:00:00Z): %s\n",
                        err.msg);
                json_decref(params);
                return LOOM_EXIT_USAGE;
            }
            json_object_set_new(params, "since", json_string(since));
            break;
        case 'j': as_json = true; break;
        case 'h':
            usage(stdout);
            json_decref(params);
            return LOOM_EXIT_OK;
        default: json_decref(params); return loom_cli_bad_option("usage", c, argv[optind - 1]);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "loom usage: unexpected argument '%s'\n", argv[optind]);
        json_decref(params);
        return LOOM_EXIT_USAGE;
    }
    loom_cli_conn_t conn;
    int rc = loom_cli_connect("usage", &conn);
    json_t *r = NULL;
    if (rc == LOOM_EXIT_OK)
        rc = loom_cli_call("usage", &conn, "usage.report", params, LOOM_RPC_CALL_RETRY, &r);
    if (rc == LOOM_EXIT_OK) {
        if (as_json)
            loom_cli_print_json(r);
        else
            print_rows(r = loom_cli_safe_tree(r));
    }
    json_decref(r);
    json_decref(params);
    loom_cli_disconnect(&conn);
    return rc;
}
