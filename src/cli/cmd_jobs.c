/* loom jobs: list jobs (job.list), following cursors. By default the active
 * ones (PENDING and RUNNING), as squeue shows them; with --all every state,
 * the newest --limit of them (so new jobs never vanish from the view). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "loom/store.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: loom jobs [--all | --state S[,S...]] [--name TEXT] [--limit N] [--json]\n\n"
               "Lists the active jobs (PENDING and RUNNING), oldest first.\n\n"
               "  --all        jobs in every state; the newest 100 unless --limit says otherwise\n"
               "  --state S    only jobs in these states: PENDING, RUNNING, COMPLETED, FAILED,\n"
               "               CANCELLED, TIMEOUT (comma-separated, any case)\n"
               "  --name TEXT  only jobs whose name contains TEXT\n"
               "  --limit N    the first N jobs, with a cursor for more (0 = all)\n"
               "  --json       print {\"jobs\": [...], \"next_cursor\": ...} as JSON\n"
               "  -h, --help   this help\n");
}

static void print_row(const json_t *j)
{
    const json_t *r = json_object_get(j, "resources");
    char mem[32], gpus[32], tl[32], sub[32];
    const char *owner = json_string_value(json_object_get(json_object_get(j, "owner"), "user"));
    printf("%-8lld %-24.24s %-12.12s %-10s %5lld %6s %9s %9s %s\n",
           (long long)json_integer_value(json_object_get(j, "id")),
           json_string_value(json_object_get(j, "name")), owner ? owner : "-",
           json_string_value(json_object_get(j, "state")),
           (long long)json_integer_value(json_object_get(r, "cpus")), loom_cli_fmt_gpus(r, gpus),
           loom_cli_fmt_size(json_integer_value(json_object_get(r, "memory")), mem),
           loom_cli_fmt_seconds(json_integer_value(json_object_get(j, "time_limit")), tl),
           loom_cli_fmt_time(json_object_get(j, "submit_time"), sub));
}

/* Drops jobs whose name lacks name, then all but the newest keep (0: all);
 * returns how many were dropped for keep. */
static size_t keep_newest(json_t *jobs, const char *name, size_t keep)
{
    for (size_t i = json_array_size(jobs); name && i-- > 0;) {
        const char *n = json_string_value(json_object_get(json_array_get(jobs, i), "name"));
        if (!n || !strstr(n, name))
            json_array_remove(jobs, i);
    }
    size_t n = json_array_size(jobs), drop = keep && n > keep ? n - keep : 0;
    for (size_t i = 0; i < drop; i++)
        json_array_remove(jobs, 0);
    return drop;
}

int loom_cmd_jobs(int argc, char **argv)
{
    static const struct option opts[] = {
        {"state", required_argument, NULL, 's'},
        {"limit", required_argument, NULL, 'l'},
        {"all", no_argument, NULL, 'a'},
        {"name", required_argument, NULL, 'n'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    json_t *states = json_array();
    int64_t limit = 0;
    bool as_json = false, all_states = false, limit_given = false;
    const char *name = NULL;
    int rc = LOOM_EXIT_OK, c;
    loom_err_t err;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's': {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", optarg);
            for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
                 t = strtok_r(NULL, ",", &save)) {
                loom_job_state_t st;
                if (loom_job_state_parse(t, &st, &err)) {
                    fprintf(stderr, "loom jobs: --state: %s\n", err.msg);
                    json_decref(states);
                    return LOOM_EXIT_USAGE;
                }
                json_array_append_new(states, json_string(loom_job_state_name(st)));
            }
            break;
        }
        case 'l':
            limit_given = true;
            if (loom_parse_i64(optarg, 0, INT64_MAX, &limit, "limit", &err)) {
                fprintf(stderr, "loom jobs: --limit: %s\n", err.msg);
                json_decref(states);
                return LOOM_EXIT_USAGE;
            }
            break;
        case 'j': as_json = true; break;
        case 'a': all_states = true; break;
        case 'n': name = optarg; break;
        case 'h':
            usage(stdout);
            json_decref(states);
            return LOOM_EXIT_OK;
        default:
            usage(stderr);
            json_decref(states);
            return LOOM_EXIT_USAGE;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "loom jobs: unexpected argument '%s'\n", argv[optind]);
        json_decref(states);
        return LOOM_EXIT_USAGE;
    }
    if (!all_states && json_array_size(states) == 0) {
        json_array_append_new(states, json_string("PENDING"));
        json_array_append_new(states, json_string("RUNNING"));
    }
    loom_cli_conn_t conn;
    if ((rc = loom_cli_connect("jobs", &conn))) {
        json_decref(states);
        return rc;
    }
    json_t *all = json_array();
    json_t *cursor = json_null();
    int64_t left = limit;
    for (;;) {
        int64_t page = left == 0 && limit == 0 ? 1000 : (left > 1000 ? 1000 : left);
        json_t *params = json_pack("{s:I, s:O}", "limit", (json_int_t)page, "cursor", cursor);
        if (json_array_size(states))
            json_object_set(params, "state", states);
        json_t *result = NULL;
        rc = loom_cli_call("jobs", &conn, "job.list", params, LOOM_RPC_CALL_RETRY, &result);
        json_decref(params);
        if (rc)
            break;
        json_array_extend(all, json_object_get(result, "jobs"));
        json_decref(cursor);
        cursor = json_incref(json_object_get(result, "next_cursor"));
        json_decref(result);
        if (limit)
            left = limit - (int64_t)json_array_size(all);
        if (json_is_null(cursor) || (limit && left <= 0))
            break;
    }
    loom_cli_disconnect(&conn);
    size_t hidden = keep_newest(all, name, all_states && !limit_given ? 100 : 0);
    if (rc == LOOM_EXIT_OK) {
        if (as_json) {
            json_t *out = json_pack("{s:O, s:O}", "jobs", all, "next_cursor", cursor);
            loom_cli_print_json(out);
            json_decref(out);
        } else {
            printf("%-8s %-24s %-12s %-10s %5s %6s %9s %9s %s\n", "ID", "NAME", "OWNER", "STATE",
                   "CPUS", "GPUS", "MEM", "TIME", "SUBMITTED");
            size_t i;
            json_t *j;
            json_array_foreach(all, i, j) print_row(j);
            if (!json_is_null(cursor))
                printf("(more jobs; raise --limit, or --limit 0 for all)\n");
            if (hidden)
                printf("(%zu older jobs not shown; --limit 0 for all)\n", hidden);
        }
    }
    json_decref(cursor);
    json_decref(all);
    json_decref(states);
    return rc;
}
