/* loom scancel: cancel jobs as Slurm's scancel does (job.cancel): by id
 * (ID, an array's ID for all its tasks, ID_TASK), and by filters that all
 * must hold (-u user, --me, -n name, -t state, -p partition); silent on
 * success, as scancel. docs/slurm.md. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/slurm.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: loom scancel [ID...] [-u USER] [--me] [-n NAME] [-t STATE] [-p PART]\n"
               "                    [-Q]\n\n"
               "Cancels the active (pending or running) jobs that match as Slurm's scancel\n"
               "does (docs/slurm.md): the jobs named (ID, an array's ID for all its tasks,\n"
               "ID_TASK for one), of which only those that pass every filter given:\n\n"
               "  -u, --user USER     jobs of USER\n"
               "  --me                your jobs\n"
               "  -n, --name NAME     jobs named NAME (--jobname too)\n"
               "  -t, --state STATE   PENDING (PD), RUNNING (R) or SUSPENDED (S)\n"
               "  -p, --partition P   jobs of partition P (loom has one: " LOOM_CLI_PARTITION ")\n"
               "  -Q, --quiet         no message for a job that does not exist or has ended\n"
               "  -h, --help          this help\n\n"
               "Nothing is printed when all went well. exit codes: 0 ok, 1 a job could not be\n"
               "cancelled (no such job, already ended, another user's), 2 usage, 3 cannot\n"
               "connect.\n");
}

typedef struct scancel_args {
    json_t *ids, *users, *names, *states;
    const char *partition;
    bool quiet;
} scancel_args_t;

static bool active(const json_t *j)
{
    const char *s = json_string_value(json_object_get(j, "state"));
    return s && (!strcmp(s, "PENDING") || !strcmp(s, "RUNNING"));
}

static bool keep(const scancel_args_t *a, const json_t *j)
{
    const char *name = json_string_value(json_object_get(j, "name"));
    if (json_array_size(a->users) && !loom_slurm_has(a->users, loom_slurm_user(j)))
        return false;
    if (json_array_size(a->names) && !loom_slurm_has(a->names, name ? name : ""))
        return false;
    if (json_array_size(a->states) &&
        !loom_slurm_has(a->states, json_string_value(json_object_get(j, "state"))))
        return false;
    if (a->partition && strcmp(a->partition, LOOM_CLI_PARTITION) != 0)
        return false;
    return !json_array_size(a->ids) || loom_slurm_id_match(a->ids, j);
}

/* An id given that names no active job: scancel's message. */
static int report_missing(const scancel_args_t *a, const json_t *jobs)
{
    int rc = LOOM_EXIT_OK;
    size_t i, k;
    json_t *p, *j;
    json_array_foreach(a->ids, i, p)
    {
        json_t *one = json_array();
        json_array_append(one, p);
        bool any = false, any_active = false;
        json_array_foreach(jobs, k, j) if (loom_slurm_id_match(one, j))
        {
            any = true;
            any_active = any_active || active(j);
        }
        json_decref(one);
        if (any_active)
            continue;
        rc = LOOM_EXIT_FAILURE;
        long long id = (long long)json_integer_value(json_array_get(p, 0));
        long long task = (long long)json_integer_value(json_array_get(p, 1));
        char text[64];
        snprintf(text, sizeof text, task >= 0 ? "%lld_%lld" : "%lld", id, task);
        if (!a->quiet)
            fprintf(stderr, "loom scancel: error: Kill job error on job id %s: %s\n", text,
                    any ? "Job/step already completing or completed" : "Invalid job id specified");
    }
    return rc;
}

static int cancel(const scancel_args_t *a, const json_t *jobs)
{
    loom_cli_conn_t conn;
    int rc = loom_cli_connect("scancel", &conn), worst = LOOM_EXIT_OK;
    if (rc)
        return rc;
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j)
    {
        if (!active(j) || !keep(a, j))
            continue;
        json_t *params = json_pack("{s:O}", "id", json_object_get(j, "id")), *result = NULL;
        rc = loom_cli_call("scancel", &conn, "job.cancel", params, LOOM_RPC_CALL_RETRY, &result);
        json_decref(params);
        json_decref(result);
        if (rc == LOOM_EXIT_CONNECT) {
            worst = rc;
            break;
        }
        if (rc)
            worst = LOOM_EXIT_FAILURE;
    }
    loom_cli_disconnect(&conn);
    return worst;
}

/* -1: help printed. */
static int parse_args(int argc, char **argv, scancel_args_t *a)
{
    static const struct option opts[] = {
        {"user", required_argument, NULL, 'u'},
        {"me", no_argument, NULL, 'M'},
        {"name", required_argument, NULL, 'n'},
        {"jobname", required_argument, NULL, 'n'},
        {"state", required_argument, NULL, 't'},
        {"partition", required_argument, NULL, 'p'},
        {"quiet", no_argument, NULL, 'Q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, rc = LOOM_EXIT_OK;
    opterr = 0;
    while (rc == LOOM_EXIT_OK && (c = getopt_long(argc, argv, ":u:n:t:p:Qh", opts, NULL)) != -1) {
        switch (c) {
        case 'u': rc = loom_slurm_parse_users("scancel", optarg, true, a->users); break;
        case 'M': {
            const char *me = loom_slurm_me("scancel");
            if (!me)
                return LOOM_EXIT_FAILURE;
            json_array_append_new(a->users, json_string(me));
            break;
        }
        case 'n': loom_slurm_split(optarg, a->names); break;
        case 't': rc = loom_slurm_parse_states("scancel", optarg, a->states); break;
        case 'p': a->partition = optarg; break;
        case 'Q': a->quiet = true; break;
        case 'h': usage(stdout); return -1;
        default: return loom_slurm_bad_option("scancel", c, argv[optind - 1]);
        }
    }
    for (int i = optind; rc == LOOM_EXIT_OK && i < argc; i++)
        rc = loom_slurm_parse_ids("scancel", argv[i], a->ids);
    if (rc == LOOM_EXIT_OK && !json_array_size(a->ids) && !json_array_size(a->users) &&
        !json_array_size(a->names) && !json_array_size(a->states) && !a->partition) {
        fprintf(stderr, "loom scancel: no job identification provided (a job ID, -u, --me, -n, "
                        "-t or -p); try 'loom scancel --help'\n");
        rc = LOOM_EXIT_USAGE;
    }
    return rc;
}

int loom_cmd_scancel(int argc, char **argv)
{
    scancel_args_t a = {
        .ids = json_array(), .users = json_array(), .names = json_array(), .states = json_array()};
    json_t *jobs = NULL;
    int rc = parse_args(argc, argv, &a);
    /* with ids, every state (to tell "ended" from "no such job") */
    json_t *want = json_pack("[s, s]", "PENDING", "RUNNING");
    if (rc == LOOM_EXIT_OK)
        rc = loom_slurm_jobs("scancel", json_array_size(a.ids) ? NULL : want, &jobs);
    if (rc == LOOM_EXIT_OK) {
        int missing = report_missing(&a, jobs);
        rc = cancel(&a, jobs);
        if (rc == LOOM_EXIT_OK)
            rc = missing;
    }
    json_decref(want);
    json_decref(jobs);
    json_decref(a.ids);
    json_decref(a.users);
    json_decref(a.names);
    json_decref(a.states);
    return rc < 0 ? LOOM_EXIT_OK : rc;
}
