/* loom jobs: list jobs (job.list), following cursors. By default the active
 * ones (PENDING and RUNNING), as squeue shows them; with --all every state,
 * the newest --limit of them (so new jobs never vanish from the view).
 * Columns as squeue's (ID NAME USER STATE ELAPSED TIME_LIMIT NODE/GPUS
 * REASON), or chosen with --format; --watch redraws the table in place. */
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/slurm.h"

#define WATCH_DEFAULT_S 2

static void usage(FILE *f)
{
    fprintf(f, "usage: loom jobs [--all | --state S[,S...]] [--name TEXT] [--user U]\n"
               "                 [--since T] [--limit N] [--format COLS] [--watch[=S]] [--json]\n"
               "                 [--start]\n\n"
               "Lists the active jobs (PENDING and RUNNING), oldest first.\n\n"
               "  --all         jobs in every state; the newest 100 unless --limit says otherwise\n"
               "  --state S     only jobs in these states: PENDING, RUNNING, COMPLETED, FAILED,\n"
               "                CANCELLED, TIMEOUT (comma-separated, any case)\n"
               "  --name TEXT   only jobs whose name contains TEXT\n"
               "  -u, --user U  only jobs of user U (jobs that carry a user)\n"
               "  --me          only your jobs (--user of the user running this)\n"
               "  --since T     only jobs submitted since T: a duration ago (1h30m) or a time\n"
               "                (2026-12-03T10:00:00Z, +01:00 for an offset; without a zone,\n"
               "                2026-12-03 or 2026-12-03T10:00:00, UTC)\n"
               "  --limit N     the first N jobs, with a cursor for more (0 = all)\n"
               "  --format COLS columns, comma-separated, from: id name user state elapsed\n"
               "                time_limit nodes reason cpus gpus mem priority submitted\n"
               "                start_time sched_node\n"
               "  --watch[=S]   redraw every S seconds (default 2) until interrupted\n"
               "  --start       pending jobs with their expected start and node (as squeue\n"
               "                --start: known for jobs with a backfill reservation, loomd\n"
               "                --backfill easy|conservative; N/A otherwise)\n"
               "  --json        print {\"jobs\": [...], \"next_cursor\": ...} as JSON\n"
               "  -h, --help    this help\n");
}

/* ---------------------------------------------------------------- times */

/* Slurm's form of a duration: M:SS, H:MM:SS, D-HH:MM:SS. */
static const char *slurm_duration(int64_t s, char *out)
{
    if (s < 0)
        return strcpy(out, "-");
    int64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
    if (d)
        snprintf(out, 32, "%lld-%02lld:%02lld:%02lld", (long long)d, (long long)h, (long long)m,
                 (long long)sec);
    else if (h)
        snprintf(out, 32, "%lld:%02lld:%02lld", (long long)h, (long long)m, (long long)sec);
    else
        snprintf(out, 32, "%lld:%02lld", (long long)m, (long long)sec);
    return out;
}

static int64_t elapsed_s(const json_t *j, double now)
{
    double start = loom_slurm_epoch(json_object_get(j, "start_time"));
    double end = loom_slurm_epoch(json_object_get(j, "end_time"));
    if (start < 0)
        return -1;
    return (int64_t)((end >= 0 ? end : now) - start);
}

/* --since: a duration ago, or a date or time (RFC 3339; a date alone or a
 * time without a zone is UTC). */
static int parse_since(const char *text, double *since, loom_err_t *err)
{
    int64_t ns;
    if (loom_parse_duration(text, &ns, NULL) == LOOM_OK && ns >= 0) {
        *since = (double)loom_time_real_ns() / 1e9 - (double)ns / 1e9;
        return LOOM_OK;
    }
    const unsigned forms = LOOM_TIME_DATE_ONLY | LOOM_TIME_ZONELESS_UTC;
    if (strlen(text) >= 5 && text[4] == '-') { /* a date: the time parser says what is wrong */
        if (loom_time_parse_datetime(text, forms, &ns, err))
            return loom_err_prefix(err, "expected a UTC time (2026-12-03 or 2026-12-03T10:00:00)");
        *since = (double)(ns / LOOM_NS_PER_S) + (double)(ns % LOOM_NS_PER_S) / 1e9;
        return LOOM_OK;
    }
    return loom_err_set(err, LOOM_EINVAL,
                        "'%.40s': expected a duration (1h30m) or a UTC time "
                        "(2026-12-03 or 2026-12-03T10:00:00)",
                        text);
}

/* -------------------------------------------------------------- columns */

typedef struct column {
    const char *key, *title;
    int width; /* negative: left-aligned */
} column_t;

static const column_t columns[] = {
    {"id", "ID", -8},
    {"name", "NAME", -20},
    {"user", "USER", -9},
    {"state", "STATE", -10},
    {"elapsed", "ELAPSED", 11},
    {"time_limit", "TIME_LIMIT", 11},
    {"nodes", "NODE/GPUS", -14},
    {"reason", "REASON", 0},
    {"cpus", "CPUS", 5},
    {"gpus", "GPUS", 5},
    {"mem", "MEM", 8},
    {"priority", "PRIO", 6},
    {"submitted", "SUBMITTED", -19},
    {"start_time", "START_TIME", -19},
    {"sched_node", "SCHEDNODES", -10},
};
#define NCOLUMNS     (sizeof columns / sizeof columns[0])
#define SHOWN_MAX    16
#define DEFAULT_COLS "id,name,user,state,elapsed,time_limit,nodes,reason"
#define START_COLS   "id,name,user,state,start_time,sched_node,reason"

static int parse_format(const char *text, const column_t **shown, size_t *n)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    *n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        size_t i;
        for (i = 0; i < NCOLUMNS && strcasecmp(columns[i].key, t); i++)
            ;
        if (i == NCOLUMNS || *n == SHOWN_MAX) {
            fprintf(stderr,
                    "loom jobs: --format: '%s': expected columns from id, name, user, "
                    "state, elapsed, time_limit, nodes, reason, cpus, gpus, mem, "
                    "priority, submitted, start_time, sched_node (at most %d)\n",
                    t, SHOWN_MAX);
            return LOOM_EXIT_USAGE;
        }
        shown[(*n)++] = &columns[i];
    }
    return *n ? LOOM_EXIT_OK : LOOM_EXIT_USAGE;
}

/* "n1:0,1" (GPU indices), "n1:0@250m" (a share), "n1", or "-". */
static const char *node_gpus(const json_t *j, char *out, size_t len)
{
    const json_t *run = json_object_get(j, "run");
    const char *node = json_string_value(json_object_get(run, "node"));
    if (!node)
        return strcpy(out, "-");
    size_t at = (size_t)snprintf(out, len, "%s", node);
    const json_t *g = json_object_get(run, "gpus");
    json_int_t share = json_integer_value(json_object_get(run, "gpu_share"));
    for (size_t i = 0; i < json_array_size(g) && at < len; i++)
        at += (size_t)snprintf(out + at, len - at, "%c%lld", i ? ',' : ':',
                               (long long)json_integer_value(json_array_get(g, i)));
    if (share > 0 && share < 1000 && at < len)
        snprintf(out + at, len - at, "@%lldm", (long long)share);
    return out;
}

/* The job's owner (multi-user loomd: "owner": {"user", ...}), or NULL. */
static const char *job_user(const json_t *j)
{
    return json_string_value(json_object_get(json_object_get(j, "owner"), "user"));
}

/* A pending job's expected start (START_TIME) or node (SCHEDNODES), as
 * loomd's backfill planned them; N/A and - when it has none. */
static void expected_start(const json_t *j, const char *key, char *out, size_t len)
{
    const json_t *e = json_object_get(j, "expected_start");
    if (!strcmp(key, "sched_node")) {
        const char *node = json_string_value(json_object_get(e, "node"));
        snprintf(out, len, "%s", node ? node : "-");
    } else if (json_is_string(json_object_get(e, "time")))
        loom_cli_fmt_time(json_object_get(e, "time"), out);
    else
        snprintf(out, len, "N/A");
}

static const char *cell(const column_t *c, const json_t *j, double now, char *out, size_t len)
{
    const json_t *r = json_object_get(j, "resources");
    const char *k = c->key;
    if (!strcmp(k, "id"))
        snprintf(out, len, "%lld", (long long)json_integer_value(json_object_get(j, "id")));
    else if (!strcmp(k, "name") || !strcmp(k, "user") || !strcmp(k, "state") ||
             !strcmp(k, "reason")) {
        const char *s = !strcmp(k, "user") ? job_user(j) : json_string_value(json_object_get(j, k));
        snprintf(out, len, "%s", s ? s : "-");
    } else if (!strcmp(k, "elapsed"))
        slurm_duration(elapsed_s(j, now), out);
    else if (!strcmp(k, "time_limit")) {
        json_int_t tl = json_integer_value(json_object_get(j, "time_limit"));
        tl ? slurm_duration(tl, out) : strcpy(out, "UNLIMITED");
    } else if (!strcmp(k, "nodes"))
        node_gpus(j, out, len);
    else if (!strcmp(k, "cpus"))
        snprintf(out, len, "%lld", (long long)json_integer_value(json_object_get(r, "cpus")));
    else if (!strcmp(k, "gpus"))
        loom_cli_fmt_gpus(r, out);
    else if (!strcmp(k, "mem"))
        loom_cli_fmt_size(json_integer_value(json_object_get(r, "memory")), out);
    else if (!strcmp(k, "priority"))
        snprintf(out, len, "%lld", (long long)json_integer_value(json_object_get(j, "priority")));
    else if (!strcmp(k, "start_time") || !strcmp(k, "sched_node"))
        expected_start(j, k, out, len);
    else
        loom_cli_fmt_time(json_object_get(j, "submit_time"), out);
    return out;
}

/* The last column is not padded (no trailing blanks). */
static void print_cell(int width, const char *text, bool last)
{
    if (last)
        printf("%s\n", text);
    else
        printf("%*s ", width, text);
}

/* A column's width: its own, widened to the longest cell, except NAME,
 * which is cut to its column as squeue cuts it (NODE/GPUS and the rest
 * are never cut: a GPU list hidden by the column would say nothing). */
/* An array's task (options.array_job_id): its array id and task id. */
static bool array_task(const json_t *j, int64_t *aid, int64_t *task)
{
    const json_t *o = json_object_get(j, "options");
    const json_t *a = json_object_get(o, "array_job_id"), *t = json_object_get(o, "array_task_id");
    if (!json_is_integer(a) || !json_is_integer(t))
        return false;
    *aid = json_integer_value(a);
    *task = json_integer_value(t);
    return true;
}

static bool same_str(const json_t *a, const json_t *b, const char *key)
{
    const char *x = json_string_value(json_object_get(a, key));
    const char *y = json_string_value(json_object_get(b, key));
    return x && y ? strcmp(x, y) == 0 : x == y;
}

/* How many jobs from i on are pending tasks of one array with one reason
 * (shown as one row, as squeue: 12_[3-99]); the id text in out. */
static size_t array_run(const json_t *jobs, size_t i, char *out, size_t len)
{
    const json_t *j = json_array_get(jobs, i);
    int64_t aid, t, a2, t2;
    if (!array_task(j, &aid, &t))
        return 1;
    const char *state = json_string_value(json_object_get(j, "state"));
    if (!state || strcmp(state, "PENDING") != 0) {
        snprintf(out, len, "%lld_%lld", (long long)aid, (long long)t);
        return 1;
    }
    size_t at = (size_t)snprintf(out, len, "%lld_[%lld", (long long)aid, (long long)t);
    size_t n = 1;
    int64_t run_start = t, prev = t;
    for (;; n++) {
        const json_t *k = json_array_get(jobs, i + n);
        bool more = k && array_task(k, &a2, &t2) && a2 == aid && same_str(k, j, "state") &&
                    same_str(k, j, "reason");
        if (more && t2 == prev + 1) {
            prev = t2;
            continue;
        }
        if (prev != run_start && at < len)
            at += (size_t)snprintf(out + at, len - at, "-%lld", (long long)prev);
        if (!more)
            break;
        if (at < len)
            at += (size_t)snprintf(out + at, len - at, ",%lld", (long long)t2);
        run_start = prev = t2;
    }
    if (at < len)
        snprintf(out + at, len - at, "]");
    return n;
}

static int column_width(const column_t *c, const json_t *jobs, double now)
{
    int w = c->width < 0 ? -c->width : c->width;
    size_t i;
    json_t *j;
    if (strcmp(c->key, "name") != 0)
        json_array_foreach(jobs, i, j)
        {
            char buf[256];
            cell(c, j, now, buf, sizeof buf);
            if ((int)strlen(buf) > w)
                w = (int)strlen(buf);
        }
    /* an array's tasks shown as one row: "51_[0-19]" */
    for (size_t k = 0; strcmp(c->key, "id") == 0 && k < json_array_size(jobs);) {
        char id[256] = "";
        k += array_run(jobs, k, id, sizeof id);
        if ((int)strlen(id) > w)
            w = (int)strlen(id);
    }
    return c->width < 0 ? -w : w;
}

static void print_table(const json_t *jobs, const column_t *const *shown, size_t n)
{
    double now = (double)loom_time_real_ns() / 1e9;
    int width[SHOWN_MAX];
    for (size_t c = 0; c < n; c++) {
        width[c] = column_width(shown[c], jobs, now);
        print_cell(width[c], shown[c]->title, c + 1 == n);
    }
    for (size_t i = 0; i < json_array_size(jobs);) {
        const json_t *j = json_array_get(jobs, i);
        char id[256] = "";
        size_t rows = array_run(jobs, i, id, sizeof id);
        for (size_t c = 0; c < n; c++) {
            char buf[256];
            bool is_id = !strcmp(shown[c]->key, "id");
            if (is_id && id[0])
                snprintf(buf, sizeof buf, "%s", id);
            else
                cell(shown[c], j, now, buf, sizeof buf);
            int w = width[c] < 0 ? -width[c] : width[c];
            if (!is_id && c + 1 < n && w > 0 && (int)strlen(buf) > w)
                buf[w] = 0; /* a long name is cut to its column, as squeue */
            print_cell(width[c], buf, c + 1 == n);
        }
        i += rows;
    }
}

/* ------------------------------------------------------------ fetching */

typedef struct query {
    json_t *states;
    int64_t limit;
    bool all_states, limit_given, as_json, start;
    const char *name, *user;
    double since; /* -1: none */
    const column_t *shown[SHOWN_MAX];
    size_t nshown;
    int watch_s; /* 0: once */
} query_t;

/* Every page of job.list up to q->limit; *cursor is the next one. */
static int fetch(const query_t *q, json_t *all, json_t **cursor)
{
    loom_cli_conn_t conn;
    int rc = loom_cli_connect("jobs", &conn);
    if (rc)
        return rc;
    *cursor = json_null();
    int64_t left = q->limit;
    for (;;) {
        int64_t page = q->limit == 0 || left > 1000 ? 1000 : left;
        json_t *params = json_pack("{s:I, s:O}", "limit", (json_int_t)page, "cursor", *cursor);
        if (json_array_size(q->states))
            json_object_set(params, "state", q->states);
        json_t *result = NULL;
        rc = loom_cli_call("jobs", &conn, "job.list", params, LOOM_RPC_CALL_RETRY, &result);
        json_decref(params);
        if (rc)
            break;
        json_array_extend(all, json_object_get(result, "jobs"));
        json_decref(*cursor);
        *cursor = json_incref(json_object_get(result, "next_cursor"));
        json_decref(result);
        left = q->limit - (int64_t)json_array_size(all);
        if (json_is_null(*cursor) || (q->limit && left <= 0))
            break;
    }
    loom_cli_disconnect(&conn);
    return rc;
}

static bool keep(const query_t *q, const json_t *j)
{
    const char *name = json_string_value(json_object_get(j, "name"));
    const char *user = job_user(j);
    if (q->name && (!name || !strstr(name, q->name)))
        return false;
    if (q->user && (!user || strcmp(user, q->user)))
        return false;
    return q->since < 0 || loom_slurm_epoch(json_object_get(j, "submit_time")) >= q->since;
}

/* Filters, then keeps the newest `newest` (0: all); returns how many were
 * dropped for that. */
static size_t filter(const query_t *q, json_t *jobs, size_t newest)
{
    for (size_t i = json_array_size(jobs); i-- > 0;)
        if (!keep(q, json_array_get(jobs, i)))
            json_array_remove(jobs, i);
    size_t n = json_array_size(jobs), drop = newest && n > newest ? n - newest : 0;
    for (size_t i = 0; i < drop; i++)
        json_array_remove(jobs, 0);
    return drop;
}

/* With --since, --name or --user, --limit counts the jobs that pass them:
 * every page is read, filtered, then cut to the first --limit. */
static bool filtered(const query_t *q)
{
    return q->since >= 0 || q->name || q->user;
}

static int show_once(const query_t *q)
{
    json_t *all = json_array(), *cursor = NULL;
    query_t whole = *q;
    if (filtered(q) && q->limit_given)
        whole.limit = 0;
    int rc = fetch(&whole, all, &cursor);
    size_t hidden = filter(q, all, q->all_states && !q->limit_given ? 100 : 0);
    bool more = false; /* filtered jobs past --limit */
    while (filtered(q) && q->limit && json_array_size(all) > (size_t)q->limit) {
        json_array_remove(all, json_array_size(all) - 1);
        more = true;
    }
    if (rc == LOOM_EXIT_OK && q->as_json) {
        json_t *out = json_pack("{s:O, s:O}", "jobs", all, "next_cursor", cursor);
        loom_cli_print_json(out);
        json_decref(out);
    } else if (rc == LOOM_EXIT_OK) {
        all = loom_cli_safe_tree(all); /* names, reasons, ... escaped (docs/security.md) */
        print_table(all, q->shown, q->nshown);
        if (!json_is_null(cursor) || more)
            printf("(more jobs; raise --limit, or --limit 0 for all)\n");
        if (hidden)
            printf("(%zu older jobs not shown; --limit 0 for all)\n", hidden);
    }
    json_decref(cursor);
    json_decref(all);
    return rc;
}

/* ------------------------------------------------------------- options */

static int parse_states(const char *text, json_t *states)
{
    char buf[256];
    loom_err_t err;
    snprintf(buf, sizeof buf, "%s", text);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        loom_job_state_t st;
        if (loom_job_state_parse(t, &st, &err)) {
            fprintf(stderr, "loom jobs: --state: %s\n", err.msg);
            return LOOM_EXIT_USAGE;
        }
        json_array_append_new(states, json_string(loom_job_state_name(st)));
    }
    return LOOM_EXIT_OK;
}

/* --me: squeue's, the jobs of the user running this. */
static int me(query_t *q)
{
    struct passwd *pw = getpwuid(getuid());
    if (!pw) {
        fprintf(stderr, "loom jobs: --me: uid %u has no user name\n", (unsigned)getuid());
        return LOOM_EXIT_FAILURE;
    }
    q->user = pw->pw_name;
    return LOOM_EXIT_OK;
}

/* -1: --help was printed. */
static int parse_args(int argc, char **argv, query_t *q)
{
    static const struct option opts[] = {
        {"state", required_argument, NULL, 's'},
        {"limit", required_argument, NULL, 'l'},
        {"all", no_argument, NULL, 'a'},
        {"name", required_argument, NULL, 'n'},
        {"user", required_argument, NULL, 'u'},
        {"me", no_argument, NULL, 'm'},
        {"since", required_argument, NULL, 'S'},
        {"format", required_argument, NULL, 'f'},
        {"watch", optional_argument, NULL, 'w'},
        {"json", no_argument, NULL, 'j'},
        {"start", no_argument, NULL, 'X'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, rc = parse_format(DEFAULT_COLS, q->shown, &q->nshown);
    loom_err_t err;
    int64_t v;
    while (rc == LOOM_EXIT_OK && (c = getopt_long(argc, argv, ":hu:", opts, NULL)) != -1) {
        switch (c) {
        case 's': rc = parse_states(optarg, q->states); break;
        case 'l':
            q->limit_given = true;
            if (loom_parse_i64(optarg, 0, INT64_MAX, &q->limit, "limit", &err))
                rc = LOOM_EXIT_USAGE;
            break;
        case 'a': q->all_states = true; break;
        case 'n': q->name = optarg; break;
        case 'u': q->user = optarg; break;
        case 'm': rc = me(q); break;
        case 'S':
            if (parse_since(optarg, &q->since, &err))
                rc = LOOM_EXIT_USAGE;
            break;
        case 'f': rc = parse_format(optarg, q->shown, &q->nshown); break;
        case 'w':
            q->watch_s = WATCH_DEFAULT_S;
            if (optarg && loom_parse_i64(optarg, 1, 3600, &v, "watch seconds", &err))
                rc = LOOM_EXIT_USAGE;
            else if (optarg)
                q->watch_s = (int)v;
            break;
        case 'j': q->as_json = true; break;
        case 'X':
            q->start = true;
            rc = parse_format(START_COLS, q->shown, &q->nshown);
            break;
        case 'h': usage(stdout); return -1;
        default: return loom_cli_bad_option("jobs", c, argv[optind - 1]);
        }
        if (rc && (c == 'l' || c == 'S' || c == 'w'))
            fprintf(stderr, "loom jobs: --%s: %s\n",
                    c == 'l'   ? "limit"
                    : c == 'S' ? "since"
                               : "watch",
                    err.msg);
    }
    if (rc == LOOM_EXIT_OK && optind != argc) {
        fprintf(stderr, "loom jobs: unexpected argument '%s'\n", argv[optind]);
        rc = LOOM_EXIT_USAGE;
    }
    if (rc == LOOM_EXIT_OK && q->watch_s && q->as_json) {
        fprintf(stderr, "loom jobs: --watch redraws a table; it does not go with --json\n");
        rc = LOOM_EXIT_USAGE;
    }
    return rc;
}

int loom_cmd_jobs(int argc, char **argv)
{
    query_t q = {.states = json_array(), .since = -1};
    int rc = parse_args(argc, argv, &q);
    if (rc == LOOM_EXIT_OK && q.start && (q.all_states || json_array_size(q.states) != 0)) {
        fprintf(stderr, "loom jobs: --start lists pending jobs; it does not go with --all or "
                        "--state\n");
        rc = LOOM_EXIT_USAGE;
    }
    if (rc == LOOM_EXIT_OK && q.start)
        json_array_append_new(q.states, json_string("PENDING"));
    if (rc == LOOM_EXIT_OK && !q.all_states && json_array_size(q.states) == 0) {
        json_array_append_new(q.states, json_string("PENDING"));
        json_array_append_new(q.states, json_string("RUNNING"));
    }
    bool tty = isatty(STDOUT_FILENO);
    while (rc == LOOM_EXIT_OK) {
        if (q.watch_s && tty)
            fputs("\033[H\033[2J", stdout); /* redraw in place */
        rc = show_once(&q);
        if (!q.watch_s || rc)
            break;
        fflush(stdout);
        sleep((unsigned)q.watch_s);
    }
    json_decref(q.states);
    return rc < 0 ? LOOM_EXIT_OK : rc;
}
