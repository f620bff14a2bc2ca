/* loom hold, release, requeue ID... and loom update ID: change queued jobs
 * (job.hold, job.release, job.requeue, job.update), as scontrol's hold,
 * release, requeue and update. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "loom/jobspec.h"

typedef struct verb {
    const char *cmd, *method, *done, *help;
} verb_t;

static const verb_t verbs[] = {
    {"hold", "job.hold", "Held",
     "Holds pending jobs: they stay PENDING with reason JobHeld until `loom release`\n"
     "(sbatch --hold submits a job held)."},
    {"release", "job.release", "Released", "Releases held jobs: they are scheduled again."},
    {"requeue", "job.requeue", "Requeued",
     "Puts jobs back in the queue: a running job is stopped and queued again; a FAILED,\n"
     "CANCELLED or TIMEOUT one is queued again (a new attempt). A pending or COMPLETED\n"
     "job is an error (a completed job is never run twice: submit it again)."},
};

static void usage(FILE *f, const verb_t *v)
{
    fprintf(f,
            "usage: loom %s ID... [--json]\n\n%s\n"
            "exit codes: 0 all done, 4 some job does not exist, 1 some other failure\n"
            "(e.g. the job is not pending), 3 cannot connect.\n",
            v->cmd, v->help);
}

/* ids from argv[first..]; params built by extra (may be NULL). */
static int run_ids(const char *cmd, const char *method, const char *done, int argc, char **argv,
                   int first, const json_t *extra, bool as_json)
{
    size_t n = (size_t)(argc - first);
    if (n == 0) {
        fprintf(stderr, "loom %s: expected at least one job ID (see loom %s --help)\n", cmd, cmd);
        return LOOM_EXIT_USAGE;
    }
    int64_t *ids = calloc(n, sizeof *ids);
    if (!ids) {
        fprintf(stderr, "loom %s: out of memory\n", cmd);
        return LOOM_EXIT_FAILURE;
    }
    int rc = LOOM_EXIT_OK;
    loom_err_t err;
    for (size_t i = 0; rc == LOOM_EXIT_OK && i < n; i++) {
        if (loom_parse_i64(argv[first + (int)i], 1, INT64_MAX, &ids[i], "job ID", &err)) {
            fprintf(stderr, "loom %s: %s\n", cmd, err.msg);
            rc = LOOM_EXIT_USAGE;
        }
    }
    if (rc == LOOM_EXIT_OK)
        rc = loom_cli_batch_per_job(cmd, method, done, ids, n, extra, as_json);
    free(ids);
    return rc;
}

static int ids_command(const verb_t *v, int argc, char **argv)
{
    bool as_json;
    int c = loom_cli_json_opts(v->cmd, argc, argv, &as_json);
    if (c == 'h')
        usage(stdout, v);
    if (c)
        return c == 'h' ? LOOM_EXIT_OK : LOOM_EXIT_USAGE;
    return run_ids(v->cmd, v->method, v->done, argc, argv, optind, NULL, as_json);
}

int loom_cmd_hold(int argc, char **argv)
{
    return ids_command(&verbs[0], argc, argv);
}

int loom_cmd_release(int argc, char **argv)
{
    return ids_command(&verbs[1], argc, argv);
}

int loom_cmd_requeue(int argc, char **argv)
{
    return ids_command(&verbs[2], argc, argv);
}

static void update_usage(FILE *f)
{
    fprintf(f, "usage: loom update ID... [--time T] [--priority N] [--name NAME] [--json]\n\n"
               "Changes pending jobs (as scontrol update): the time limit (sbatch's forms:\n"
               "MM, MM:SS, HH:MM:SS, D-HH[:MM[:SS]], UNLIMITED), the priority, the name.\n"
               "A job that is no longer pending is an error.\n"
               "exit codes: 0 all done, 4 some job does not exist, 1 some other failure,\n"
               "2 bad usage, 3 cannot connect.\n");
}

int loom_cmd_update(int argc, char **argv)
{
    static const struct option opts[] = {
        {"time", required_argument, NULL, 't'}, {"priority", required_argument, NULL, 'p'},
        {"name", required_argument, NULL, 'n'}, {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0}};
    json_t *p = json_object();
    bool as_json = false;
    int c, rc = LOOM_EXIT_OK;
    loom_err_t err;
    while (rc == LOOM_EXIT_OK && (c = getopt_long(argc, argv, ":ht:n:", opts, NULL)) != -1) {
        int64_t v;
        switch (c) {
        case 't':
            if (loom_jobspec_parse_time(optarg, &v, &err) != LOOM_OK) {
                fprintf(stderr, "loom update: --time: %s\n", err.msg);
                rc = LOOM_EXIT_USAGE;
            } else
                json_object_set_new(p, "time_limit", json_integer(v));
            break;
        case 'p':
            if (loom_parse_i64(optarg, INT32_MIN, INT32_MAX, &v, "--priority", &err)) {
                fprintf(stderr, "loom update: %s\n", err.msg);
                rc = LOOM_EXIT_USAGE;
            } else
                json_object_set_new(p, "priority", json_integer(v));
            break;
        case 'n': json_object_set_new(p, "name", json_string(optarg)); break;
        case 'j': as_json = true; break;
        case 'h':
            update_usage(stdout);
            json_decref(p);
            return LOOM_EXIT_OK;
        default: rc = loom_cli_bad_option("update", c, argv[optind - 1]);
        }
    }
    if (rc == LOOM_EXIT_OK && json_object_size(p) == 0) {
        fprintf(stderr,
                "loom update: expected --time, --priority or --name (see loom update --help)\n");
        rc = LOOM_EXIT_USAGE;
    }
    if (rc == LOOM_EXIT_OK)
        rc = run_ids("update", "job.update", "Updated", argc, argv, optind, p, as_json);
    json_decref(p);
    return rc;
}

/* ------------------------------------------------- array ids (cancel) */

/* The active jobs' (array id, task id, job id) for resolving A and A_T. */
static json_t *active_tasks(const char *cmd)
{
    loom_cli_conn_t conn;
    if (loom_cli_connect(cmd, &conn))
        return NULL;
    json_t *all = json_array(), *cursor = json_null();
    for (;;) {
        json_t *params = json_pack("{s:i, s:O, s:[s,s]}", "limit", 1000, "cursor", cursor, "state",
                                   "PENDING", "RUNNING");
        json_t *result = NULL;
        int rc = loom_cli_call(cmd, &conn, "job.list", params, LOOM_RPC_CALL_RETRY, &result);
        json_decref(params);
        if (rc) {
            json_decref(all);
            all = NULL;
            break;
        }
        size_t i;
        json_t *j;
        json_array_foreach(json_object_get(result, "jobs"), i, j)
        {
            const json_t *o = json_object_get(j, "options");
            if (json_is_integer(json_object_get(o, "array_job_id")))
                json_array_append_new(all, json_pack("[O,O,O]", json_object_get(o, "array_job_id"),
                                                     json_object_get(o, "array_task_id"),
                                                     json_object_get(j, "id")));
        }
        json_decref(cursor);
        cursor = json_incref(json_object_get(result, "next_cursor"));
        json_decref(result);
        if (json_is_null(cursor))
            break;
    }
    json_decref(cursor);
    loom_cli_disconnect(&conn);
    return all;
}

int loom_cli_job_ids(const char *cmd, int argc, char **argv, int first, int64_t **out, size_t *nout)
{
    json_t *tasks = NULL, *ids = json_array();
    loom_err_t err;
    int rc = LOOM_EXIT_OK;
    for (int a = first; a < argc && rc == LOOM_EXIT_OK; a++) {
        char head[32];
        const char *us = strchr(argv[a], '_');
        snprintf(head, sizeof head, "%.*s", us ? (int)(us - argv[a]) : 31, argv[a]);
        int64_t id, task = -1;
        if (loom_parse_i64(head, 1, INT64_MAX, &id, "job ID", &err) ||
            (us && loom_parse_i64(us + 1, 0, INT64_MAX, &task, "array task", &err))) {
            fprintf(stderr, "loom %s: %s (expected ID or ARRAYID_TASK)\n", cmd, err.msg);
            rc = LOOM_EXIT_USAGE;
            break;
        }
        if (!tasks && !(tasks = active_tasks(cmd))) {
            rc = LOOM_EXIT_CONNECT;
            break;
        }
        size_t i, found = 0;
        json_t *t;
        json_array_foreach(tasks, i, t)
        {
            if (json_integer_value(json_array_get(t, 0)) == id &&
                (task < 0 || json_integer_value(json_array_get(t, 1)) == task)) {
                json_array_append(ids, json_array_get(t, 2));
                found++;
            }
        }
        if (us && !found) {
            fprintf(stderr, "loom %s: array task %s not found (or not active)\n", cmd, argv[a]);
            rc = LOOM_EXIT_NOTFOUND;
        } else if (!found)
            json_array_append_new(ids, json_integer(id)); /* a job, not an array */
    }
    json_decref(tasks);
    *nout = json_array_size(ids);
    *out = rc == LOOM_EXIT_OK ? calloc(*nout ? *nout : 1, sizeof **out) : NULL;
    for (size_t i = 0; *out && i < *nout; i++)
        (*out)[i] = json_integer_value(json_array_get(ids, i));
    json_decref(ids);
    if (rc == LOOM_EXIT_OK && !*out)
        rc = LOOM_EXIT_FAILURE;
    return rc;
}
