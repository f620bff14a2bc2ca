/* loom info: what loomd says about itself (server.info). */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/client.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: loom info [--json]\n\nShows loomd's version, state directory, durability, "
               "listeners and job counts.\n");
}

int loom_cmd_info(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    bool as_json = false;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': as_json = true; break;
        case 'h': usage(stdout); return LOOM_EXIT_OK;
        default: usage(stderr); return LOOM_EXIT_USAGE;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "loom info: unexpected argument '%s'\n", argv[optind]);
        return LOOM_EXIT_USAGE;
    }
    loom_cli_conn_t conn;
    int rc = loom_cli_connect("info", &conn);
    if (rc)
        return rc;
    json_t *r = NULL;
    rc = loom_cli_call("info", &conn, "server.info", NULL, LOOM_RPC_CALL_RETRY, &r);
    loom_cli_disconnect(&conn);
    if (rc)
        return rc;
    if (as_json) {
        loom_cli_print_json(r);
    } else {
        printf("loomd %s (pid %lld) at %s\n", json_string_value(json_object_get(r, "version")),
               (long long)json_integer_value(json_object_get(r, "pid")), conn.url);
        printf("  started:     %s (up %.0f s)\n",
               json_string_value(json_object_get(r, "started_at")),
               json_real_value(json_object_get(r, "uptime_s")));
        printf("  state dir:   %s\n", json_string_value(json_object_get(r, "state_dir")));
        printf("  durability:  %s\n", json_string_value(json_object_get(r, "durability")));
        const json_t *tcp = json_object_get(r, "tcp"), *sock = json_object_get(r, "socket");
        printf("  tcp:         %s\n", json_is_string(tcp) ? json_string_value(tcp) : "-");
        printf("  socket:      %s\n", json_is_string(sock) ? json_string_value(sock) : "-");
        printf("  jobs:");
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(r, "jobs"), k, v)
            printf(" %s=%lld", k, (long long)json_integer_value(v));
        printf("\n");
    }
    json_decref(r);
    return LOOM_EXIT_OK;
}
