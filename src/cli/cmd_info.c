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
    bool as_json;
    json_t *r;
    char url[4200];
    int rc = loom_cli_simple_call(argc, argv, "info", usage, "server.info", &as_json, &r, url,
                                  sizeof url);
    if (rc || !r)
        return rc;
    if (as_json) {
        loom_cli_print_json(r);
    } else {
        printf("loomd %s (pid %lld) at %s\n", json_string_value(json_object_get(r, "version")),
               (long long)json_integer_value(json_object_get(r, "pid")), url);
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
