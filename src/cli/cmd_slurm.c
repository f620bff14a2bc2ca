/* The Slurm-compatible front's shared parts (slurm.h), `loom slurm-links
 * DIR` (links named sbatch, squeue, scancel, sacct, sinfo to loom), and
 * the dispatch on the name loom was run as. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/slurm.h"
#include "loom/slurmfmt.h"

static const struct {
    const char *name;
    loom_cli_fn run;
} slurm_cmds[] = {
    {"sbatch", loom_cmd_sbatch}, {"squeue", loom_cmd_squeue}, {"scancel", loom_cmd_scancel},
    {"sacct", loom_cmd_sacct},   {"sinfo", loom_cmd_sinfo},
};
#define NSLURM (sizeof slurm_cmds / sizeof slurm_cmds[0])

loom_cli_fn loom_cli_slurm_by_name(const char *argv0)
{
    const char *base = strrchr(argv0, '/');
    base = base ? base + 1 : argv0;
    for (size_t i = 0; i < NSLURM; i++)
        if (strcmp(base, slurm_cmds[i].name) == 0)
            return slurm_cmds[i].run;
    return NULL;
}

static void links_usage(FILE *f)
{
    fprintf(f, "usage: loom slurm-links DIR [--force]\n\n"
               "Makes symbolic links DIR/sbatch, squeue, scancel, sacct and sinfo to this\n"
               "loom: run by those names, loom is that command (loom sbatch, ...), so that\n"
               "people and scripts written for Slurm use loom unchanged. Put DIR early in\n"
               "PATH. An existing file of one of these names is an error unless --force\n"
               "(which replaces it). docs/slurm.md.\n");
}

/* This loom's own path, for the links. */
static int self_path(char *out, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", out, len - 1);
    if (n <= 0) {
        fprintf(stderr, "loom slurm-links: cannot find this loom's path: %s\n", strerror(errno));
        return LOOM_EXIT_FAILURE;
    }
    out[n] = 0;
    return LOOM_EXIT_OK;
}

int loom_cmd_slurm_links(int argc, char **argv)
{
    static const struct option opts[] = {
        {"force", no_argument, NULL, 'f'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    bool force = false;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == 'h') {
            links_usage(stdout);
            return LOOM_EXIT_OK;
        }
        if (c != 'f')
            return loom_slurm_bad_option("slurm-links", c, argv[optind - 1]);
        force = true;
    }
    if (argc - optind != 1) {
        fprintf(stderr, "loom slurm-links: expected one DIR; try 'loom slurm-links --help'\n");
        return LOOM_EXIT_USAGE;
    }
    char self[PATH_MAX], path[PATH_MAX];
    if (self_path(self, sizeof self))
        return LOOM_EXIT_FAILURE;
    for (size_t i = 0; i < NSLURM; i++) {
        snprintf(path, sizeof path, "%s/%s", argv[optind], slurm_cmds[i].name);
        if (force)
            unlink(path);
        if (symlink(self, path) != 0) {
            fprintf(stderr, "loom slurm-links: %s: %s%s\n", path, strerror(errno),
                    errno == EEXIST ? " (--force replaces it)" : "");
            return LOOM_EXIT_FAILURE;
        }
        printf("%s -> %s\n", path, self);
    }
    return LOOM_EXIT_OK;
}

/* ------------------------------------------------------------- shared */

int loom_slurm_jobs(const char *cmd, const json_t *states, json_t **jobs)
{
    loom_cli_conn_t conn;
    int rc = loom_cli_connect(cmd, &conn);
    if (rc)
        return rc;
    *jobs = json_array();
    json_t *cursor = json_null();
    for (;;) {
        json_t *params = json_pack("{s:i, s:O}", "limit", 1000, "cursor", cursor);
        if (json_array_size(states))
            json_object_set(params, "state", (json_t *)states);
        json_t *result = NULL;
        rc = loom_cli_call(cmd, &conn, "job.list", params, LOOM_RPC_CALL_RETRY, &result);
        json_decref(params);
        if (rc)
            break;
        json_array_extend(*jobs, json_object_get(result, "jobs"));
        json_decref(cursor);
        cursor = json_incref(json_object_get(result, "next_cursor"));
        json_decref(result);
        if (json_is_null(cursor))
            break;
    }
    json_decref(cursor);
    loom_cli_disconnect(&conn);
    if (rc) {
        json_decref(*jobs);
        *jobs = NULL;
    }
    return rc;
}

const char *loom_slurm_me(const char *cmd)
{
    struct passwd *pw = getpwuid(getuid());
    if (!pw)
        fprintf(stderr, "loom %s: uid %u has no user name\n", cmd, (unsigned)getuid());
    return pw ? pw->pw_name : NULL;
}

const char *loom_slurm_user(const json_t *job)
{
    const char *u = json_string_value(json_object_get(json_object_get(job, "owner"), "user"));
    return u ? u : "";
}

bool loom_slurm_task(const json_t *job, int64_t *array_id, int64_t *task)
{
    const json_t *o = json_object_get(job, "options");
    const json_t *a = json_object_get(o, "array_job_id"), *t = json_object_get(o, "array_task_id");
    if (!json_is_integer(a) || !json_is_integer(t))
        return false;
    *array_id = json_integer_value(a);
    *task = json_integer_value(t);
    return true;
}

const char *loom_slurm_job_id(const json_t *job, char *out)
{
    int64_t a, t;
    if (loom_slurm_task(job, &a, &t))
        snprintf(out, 48, "%lld_%lld", (long long)a, (long long)t);
    else
        snprintf(out, 48, "%lld", (long long)json_integer_value(json_object_get(job, "id")));
    return out;
}

double loom_slurm_epoch(const json_t *t)
{
    int64_t ns;
    if (loom_time_parse_rfc3339(json_string_value(t), &ns, NULL) != LOOM_OK)
        return -1;
    /* whole seconds plus the fraction, as two exact parts: no rounding of
     * the sum beyond the one that adds them */
    return (double)(ns / LOOM_NS_PER_S) + (double)(ns % LOOM_NS_PER_S) / 1e9;
}

const char *loom_slurm_time(double s, const char *unknown, char *out)
{
    if (s < 0) {
        snprintf(out, 32, "%s", unknown ? unknown : "N/A");
        return out;
    }
    time_t t = (time_t)s;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    return out;
}

int64_t loom_slurm_elapsed(const json_t *job, double now)
{
    double start = loom_slurm_epoch(json_object_get(job, "start_time"));
    double end = loom_slurm_epoch(json_object_get(job, "end_time"));
    if (start < 0)
        return 0;
    double e = (end >= 0 ? end : now) - start;
    return e > 0 ? (int64_t)e : 0;
}

void loom_slurm_split(const char *text, json_t *into)
{
    for (const char *s = text; *s;) {
        const char *e = strchr(s, ',');
        if (!e)
            e = s + strlen(s);
        if (e > s)
            json_array_append_new(into, json_stringn(s, (size_t)(e - s)));
        s = *e ? e + 1 : e;
    }
}

int loom_slurm_parse_users(const char *cmd, const char *text, bool strict, json_t *names)
{
    json_t *words = json_array();
    loom_slurm_split(text, words);
    size_t i;
    json_t *w;
    int rc = LOOM_EXIT_OK;
    json_array_foreach(words, i, w)
    {
        const char *u = json_string_value(w);
        struct passwd *pw = getpwnam(u);
        int64_t uid;
        if (!pw && loom_parse_i64(u, 0, UINT32_MAX, &uid, "uid", NULL) == LOOM_OK)
            pw = getpwuid((uid_t)uid);
        if (!pw) {
            /* each command's own words, as Slurm 22.05's */
            const char *what = strcmp(cmd, "scancel") == 0 ? "Invalid user name"
                               : strcmp(cmd, "sacct") == 0 ? "Invalid user id"
                                                           : "Invalid user";
            fprintf(stderr, "loom %s: error: %s: %s\n", cmd, what, u);
            if (!strict)
                continue;
            rc = LOOM_EXIT_FAILURE;
            break;
        }
        json_array_append_new(names, json_string(pw->pw_name));
    }
    json_decref(words);
    return rc;
}

bool loom_slurm_has(const json_t *strings, const char *s)
{
    size_t i;
    const json_t *v;
    json_array_foreach(strings, i, v) if (strcmp(json_string_value(v), s) == 0) return true;
    return false;
}

int loom_slurm_parse_ids(const char *cmd, const char *text, json_t *ids)
{
    json_t *words = json_array();
    loom_slurm_split(text, words);
    size_t i;
    json_t *w;
    loom_err_t err;
    int rc = json_array_size(words) ? LOOM_EXIT_OK : LOOM_EXIT_USAGE;
    if (rc)
        fprintf(stderr, "loom %s: no job id in '%s'\n", cmd, text);
    json_array_foreach(words, i, w)
    {
        const char *s = json_string_value(w), *us = strchr(s, '_');
        char head[32];
        snprintf(head, sizeof head, "%.*s", us ? (int)(us - s) : 31, s);
        int64_t id, task = -1;
        if (loom_parse_i64(head, 1, INT64_MAX, &id, "job id", &err) ||
            (us && loom_parse_i64(us + 1, 0, INT64_MAX, &task, "array task", &err))) {
            fprintf(stderr, "loom %s: '%s': %s (expected ID or ARRAYID_TASK)\n", cmd, s, err.msg);
            rc = LOOM_EXIT_USAGE;
            break;
        }
        json_array_append_new(ids, json_pack("[I, I]", (json_int_t)id, (json_int_t)task));
    }
    json_decref(words);
    return rc;
}

bool loom_slurm_id_match(const json_t *ids, const json_t *job)
{
    int64_t jid = json_integer_value(json_object_get(job, "id")), a = -1, t = -1;
    bool task = loom_slurm_task(job, &a, &t);
    size_t i;
    const json_t *p;
    json_array_foreach(ids, i, p)
    {
        int64_t id = json_integer_value(json_array_get(p, 0));
        int64_t want = json_integer_value(json_array_get(p, 1));
        if (want < 0 && (id == jid || (task && id == a)))
            return true;
        if (want >= 0 && task && id == a && want == t)
            return true;
    }
    return false;
}

int loom_slurm_parse_states(const char *cmd, const char *text, json_t *states)
{
    json_t *words = json_array();
    loom_slurm_split(text, words);
    size_t i;
    json_t *w;
    int rc = LOOM_EXIT_OK;
    json_array_foreach(words, i, w)
    {
        const char *st = loom_slurmfmt_state_parse(json_string_value(w));
        if (!st) {
            fprintf(stderr,
                    "loom %s: invalid job state specified: '%s' (expected PENDING, RUNNING, "
                    "SUSPENDED, COMPLETED, CANCELLED, FAILED, TIMEOUT, their codes PD R S CD CA "
                    "F TO, or all)\n",
                    cmd, json_string_value(w));
            rc = LOOM_EXIT_USAGE;
            break;
        }
        if (!loom_slurm_has(states, st))
            json_array_append_new(states, json_string(st));
    }
    json_decref(words);
    return rc;
}

int loom_slurm_bad_option(const char *cmd, int c, const char *word)
{
    return loom_cli_bad_option(cmd, c, word);
}
