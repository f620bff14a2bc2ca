/* loom squeue: loom's jobs as Slurm 22.05's squeue prints them (job.list),
 * with its options (-u, --me, -j, -t, -n, -p, -o/--format, --start, -l,
 * -r, -h) and its format letters, so that scripts that parse squeue keep
 * working. Sorted as squeue sorts: pending before running, higher
 * priority first, then by id; an array's pending tasks on one row
 * (12_[3-9%2]) unless -r. docs/slurm.md. */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/slurm.h"
#include "loom/slurmfmt.h"

#define LETTERS       "iAFKjutTMlLDCRrNPbSVQaYm"
#define DEFAULT_FMT   "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
#define LONG_FMT      "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
#define START_FMT     "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
#define MAX_LIST_TEXT 4096

static void usage(FILE *f)
{
    fprintf(f,
            "usage: loom squeue [-u USER[,...]] [--me] [-j ID[,...]] [-t STATE[,...]]\n"
            "                   [-n NAME[,...]] [-p PARTITION] [-o FORMAT] [--start] [-l]\n"
            "                   [-r] [-h]\n\n"
            "loom's jobs as Slurm's squeue prints them (docs/slurm.md): same columns, same\n"
            "format letters, so scripts that parse squeue keep working.\n\n"
            "  -u, --user LIST     only these users' jobs\n"
            "  --me                only your jobs\n"
            "  -j, --jobs LIST     only these jobs: ID, an array's ID (all its tasks), ID_TASK;\n"
            "                      in every state unless -t says\n"
            "  -t, --states LIST   PENDING (PD), RUNNING (R), SUSPENDED (S), COMPLETED (CD),\n"
            "                      CANCELLED (CA), FAILED (F), TIMEOUT (TO), or all (default:\n"
            "                      PD,R,S)\n"
            "  -n, --name LIST     only jobs of these names\n"
            "  -p, --partition P   only jobs of partition P (loom has one: " LOOM_CLI_PARTITION
            ")\n"
            "  -o, --format F      columns as squeue's: %%[.][WIDTH]X, '.' right-justifies;\n"
            "                      X: i id, A own id, F array id, K array task, j name, u user,\n"
            "                      t state code, T state, M time used, l time limit, L time\n"
            "                      left, D nodes, C CPUs, R nodes or (reason), r reason, N\n"
            "                      nodes, P partition, b GPUs (gres), S start, V submitted,\n"
            "                      Q priority, a account, Y expected node, m memory.\n"
            "                      Default '%s'\n"
            "                      (or $SQUEUE_FORMAT)\n"
            "  --start             pending jobs with their expected start and node:\n"
            "                      '%s'\n"
            "  -l, --long          '%s'\n"
            "  -r, --array         one row per array task\n"
            "  -h, --noheader      no header line\n"
            "  --help              this help\n\n"
            "exit codes: 0 ok, 2 usage, 3 cannot connect.\n",
            DEFAULT_FMT, START_FMT, LONG_FMT);
}

typedef struct squeue_args {
    json_t *users, *ids, *states, *names;
    const char *format, *partition;
    bool start, noheader, per_task, states_given, users_given;
    double now;
} squeue_args_t;

/* ----------------------------------------------------------------- cells */

static const char *title(char letter)
{
    switch (letter) {
    case 'i':
    case 'A': return "JOBID";
    case 'F': return "ARRAY_JOB_ID";
    case 'K': return "ARRAY_TASK_ID";
    case 'j': return "NAME";
    case 'u': return "USER";
    case 't': return "ST";
    case 'T': return "STATE";
    case 'M': return "TIME";
    case 'l': return "TIME_LIMIT";
    case 'L': return "TIME_LEFT";
    case 'D': return "NODES";
    case 'C': return "CPUS";
    case 'R': return "NODELIST(REASON)";
    case 'r': return "REASON";
    case 'N': return "NODELIST";
    case 'P': return "PARTITION";
    case 'b': return "TRES_PER_NODE";
    case 'S': return "START_TIME";
    case 'V': return "SUBMIT_TIME";
    case 'Q': return "PRIORITY";
    case 'a': return "ACCOUNT";
    case 'Y': return "SCHEDNODES";
    default: return "MIN_MEMORY";
    }
}

static const char *str_of(const json_t *j, const char *key)
{
    const char *s = json_string_value(json_object_get(j, key));
    return s ? s : "";
}

static const char *reason(const json_t *j)
{
    const json_t *q = json_object_get(j, "quota");
    return loom_slurmfmt_reason(json_string_value(json_object_get(j, "reason")),
                                json_string_value(json_object_get(q, "on")),
                                json_string_value(json_object_get(q, "limit")));
}

static bool pending(const json_t *j)
{
    return strcmp(str_of(j, "state"), "PENDING") == 0;
}

static bool started(const json_t *j)
{
    return json_is_string(json_object_get(j, "start_time"));
}

/* A time limit as Slurm keeps it: whole minutes, rounded up. */
static int64_t limit_s(const json_t *j)
{
    json_int_t tl = json_integer_value(json_object_get(j, "time_limit"));
    return tl > 0 ? (tl + 59) / 60 * 60 : 0;
}

static const char *node_of(const json_t *j)
{
    return json_string_value(json_object_get(json_object_get(j, "run"), "node"));
}

static void times_cell(char letter, const json_t *j, const squeue_args_t *a, char *out)
{
    char t[32];
    int64_t lim = limit_s(j), used = loom_slurm_elapsed(j, a->now);
    if (letter == 'M')
        snprintf(out, 64, "%s", loom_slurmfmt_duration(used, t));
    else if (letter == 'l')
        snprintf(out, 64, "%s", lim ? loom_slurmfmt_duration(lim, t) : "UNLIMITED");
    else if (letter == 'L')
        snprintf(out, 64, "%s",
                 lim ? loom_slurmfmt_duration(lim > used ? lim - used : 0, t) : "UNLIMITED");
    else if (letter == 'V')
        loom_slurm_time(loom_slurm_epoch(json_object_get(j, "submit_time")), NULL, out);
    else { /* S: the start, else the expected start of backfill */
        double s = loom_slurm_epoch(json_object_get(j, "start_time"));
        if (s < 0)
            s = loom_slurm_epoch(json_object_get(json_object_get(j, "expected_start"), "time"));
        loom_slurm_time(s, NULL, out);
    }
}

/* One cell; id is the row's id text (an array's pending tasks grouped). */
static void cell(char letter, const json_t *j, const char *id, const squeue_args_t *a, char *out,
                 size_t len)
{
    const json_t *r = json_object_get(j, "resources");
    int64_t aid, task;
    bool is_task = loom_slurm_task(j, &aid, &task);
    const char *node = node_of(j);
    switch (letter) {
    case 'i': snprintf(out, len, "%s", id); break;
    case 'A':
        snprintf(out, len, "%lld", (long long)json_integer_value(json_object_get(j, "id")));
        break;
    case 'F':
        snprintf(out, len, "%lld",
                 (long long)(is_task ? aid : json_integer_value(json_object_get(j, "id"))));
        break;
    case 'K':
        if (is_task)
            snprintf(out, len, "%lld", (long long)task);
        else
            snprintf(out, len, "N/A");
        break;
    case 'j': snprintf(out, len, "%s", str_of(j, "name")); break;
    case 'u': snprintf(out, len, "%s", loom_slurm_user(j)); break;
    case 't':
    case 'T': {
        const char *st = loom_slurmfmt_state(str_of(j, "state"), letter == 't');
        snprintf(out, len, "%s", st ? st : str_of(j, "state"));
        break;
    }
    case 'M':
    case 'l':
    case 'L':
    case 'V':
    case 'S': times_cell(letter, j, a, out); break;
    case 'D': snprintf(out, len, "1"); break;
    case 'C':
        snprintf(out, len, "%lld", (long long)json_integer_value(json_object_get(r, "cpus")));
        break;
    case 'R':
        if (pending(j) || !node)
            snprintf(out, len, "(%s)", reason(j));
        else
            snprintf(out, len, "%s", node);
        break;
    case 'r': snprintf(out, len, "%s", pending(j) ? reason(j) : "None"); break;
    case 'N': snprintf(out, len, "%s", pending(j) || !node ? "" : node); break;
    case 'P': snprintf(out, len, "%s", LOOM_CLI_PARTITION); break;
    case 'b': {
        json_int_t g = json_integer_value(json_object_get(r, "gpus"));
        const char *type = json_string_value(json_object_get(r, "gpu_type"));
        if (g > 0)
            snprintf(out, len, "gres:gpu:%s%s%lld", type ? type : "", type ? ":" : "",
                     (long long)g);
        else
            snprintf(out, len, "N/A");
        break;
    }
    case 'Q':
        snprintf(out, len, "%lld", (long long)json_integer_value(json_object_get(j, "priority")));
        break;
    case 'a': {
        const char *acct =
            json_string_value(json_object_get(json_object_get(j, "owner"), "account"));
        snprintf(out, len, "%s", acct ? acct : "(null)");
        break;
    }
    case 'Y': {
        const char *n =
            json_string_value(json_object_get(json_object_get(j, "expected_start"), "node"));
        snprintf(out, len, "%s", n ? n : "(null)");
        break;
    }
    default: {
        json_int_t mem = json_integer_value(json_object_get(r, "memory"));
        if (mem > 0)
            snprintf(out, len, "%lldM", (long long)((mem + (1 << 20) - 1) >> 20));
        else
            snprintf(out, len, "0");
    }
    }
}

/* ----------------------------------------------------------------- rows */

static int state_rank(const json_t *j)
{
    static const char *order[] = {"PENDING",   "RUNNING", "SUSPENDED", "COMPLETED",
                                  "CANCELLED", "FAILED",  "TIMEOUT"};
    for (int i = 0; i < 7; i++)
        if (strcmp(str_of(j, "state"), order[i]) == 0)
            return i;
    return 7;
}

/* A held job sorts last among the pending, as Slurm's (whose priority is
 * 0 while held). */
static json_int_t sort_priority(const json_t *j)
{
    const char *r = json_string_value(json_object_get(j, "reason"));
    if (pending(j) && r && strcmp(r, "JobHeld") == 0)
        return INT64_MIN;
    return json_integer_value(json_object_get(j, "priority"));
}

static int by_state_priority(const void *x, const void *y)
{
    const json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;
    int ra = state_rank(a), rb = state_rank(b);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    json_int_t pa = sort_priority(a), pb = sort_priority(b);
    if (pa != pb)
        return pa > pb ? -1 : 1;
    json_int_t ia = json_integer_value(json_object_get(a, "id"));
    json_int_t ib = json_integer_value(json_object_get(b, "id"));
    return ia < ib ? -1 : ia > ib;
}

static double expected(const json_t *j)
{
    double s = loom_slurm_epoch(json_object_get(json_object_get(j, "expected_start"), "time"));
    return s < 0 ? 0 : s;
}

static int by_start(const void *x, const void *y)
{
    const json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;
    double sa = expected(a), sb = expected(b);
    if (sa != sb)
        return sa < sb ? -1 : 1;
    json_int_t ia = json_integer_value(json_object_get(a, "id"));
    json_int_t ib = json_integer_value(json_object_get(b, "id"));
    return ia < ib ? -1 : ia > ib;
}

static bool keep(const squeue_args_t *a, const json_t *j)
{
    if (a->users_given && !loom_slurm_has(a->users, loom_slurm_user(j)))
        return false;
    if (json_array_size(a->names) && !loom_slurm_has(a->names, str_of(j, "name")))
        return false;
    if (json_array_size(a->ids) && !loom_slurm_id_match(a->ids, j))
        return false;
    if (a->partition && !strstr(a->partition, LOOM_CLI_PARTITION))
        return false;
    if (a->start && !pending(j))
        return false;
    bool all = loom_slurm_has(a->states, "ALL") || (json_array_size(a->ids) && !a->states_given);
    if (!all && json_array_size(a->states))
        return loom_slurm_has(a->states, str_of(j, "state"));
    if (!all)
        return pending(j) || strcmp(str_of(j, "state"), "RUNNING") == 0 ||
               strcmp(str_of(j, "state"), "SUSPENDED") == 0;
    return true;
}

/* The throttle of an array ("%2" of options.array "0-5%2"), or "". */
static const char *throttle(const json_t *j)
{
    const char *spec = json_string_value(json_object_get(json_object_get(j, "options"), "array"));
    const char *p = spec ? strchr(spec, '%') : NULL;
    return p ? p : "";
}

/* A pending job held by a user or an operator (Slurm splits a task held
 * on its own off its array's record). */
static bool held(const json_t *j)
{
    return strncmp(reason(j), "JobHeld", 7) == 0;
}

/* How many rows from i on are tasks of one array that never started, in
 * one state, held or not, shown as one row "12_[3-5,9%2]" with the first
 * task's reason (as squeue shows an array's pending tasks, one record
 * with one reason, whatever each task would wait for; or all of them
 * cancelled before they started); the id text in out. */
static size_t group(json_t *const *rows, size_t n, size_t i, bool per_task, char *out, size_t len)
{
    const json_t *j = rows[i];
    int64_t aid, t, a2, t2;
    loom_slurm_job_id(j, out);
    if (per_task || started(j) || !loom_slurm_task(j, &aid, &t))
        return 1;
    size_t k = i + 1;
    while (k < n && !started(rows[k]) && loom_slurm_task(rows[k], &a2, &t2) && a2 == aid &&
           strcmp(str_of(rows[k], "state"), str_of(j, "state")) == 0 && held(rows[k]) == held(j))
        k++;
    size_t at = (size_t)snprintf(out, len, "%lld_[", (long long)aid);
    for (size_t s = i; s < k && at < len;) {
        loom_slurm_task(rows[s], &a2, &t);
        size_t e = s;
        while (e + 1 < k && loom_slurm_task(rows[e + 1], &a2, &t2) &&
               t2 == t + (int64_t)(e + 1 - s))
            e++;
        at += (size_t)snprintf(out + at, len - at, "%s%lld", s > i ? "," : "", (long long)t);
        if (e > s && at < len) {
            loom_slurm_task(rows[e], &a2, &t2);
            at += (size_t)snprintf(out + at, len - at, "-%lld", (long long)t2);
        }
        s = e + 1;
    }
    if (at < len)
        snprintf(out + at, len - at, "%s]", throttle(j));
    return k - i;
}

static void print_rows(const squeue_args_t *a, const loom_slurmfmt_t *f, json_t *jobs)
{
    size_t n = 0, i;
    json_t *j, **rows = calloc(json_array_size(jobs) + 1, sizeof *rows);
    json_array_foreach(jobs, i, j) if (keep(a, j)) rows[n++] = j;
    qsort(rows, n, sizeof *rows, a->start ? by_start : by_state_priority);
    loom_buf_t line = LOOM_BUF_INIT;
    if (!a->noheader) {
        loom_buf_append_str(&line, f->prefix);
        for (size_t c = 0; c < f->n; c++) {
            loom_slurmfmt_cell(&line, title(f->fields[c].letter), f->fields[c].width,
                               f->fields[c].right);
            loom_buf_append_str(&line, f->fields[c].suffix);
        }
        printf("%s\n", line.data);
    }
    for (size_t r = 0; r < n;) {
        char id[4096], text[4160];
        size_t rows_used = group(rows, n, r, a->per_task, id, sizeof id);
        loom_buf_reset(&line);
        loom_buf_append_str(&line, f->prefix);
        for (size_t c = 0; c < f->n; c++) {
            cell(f->fields[c].letter, rows[r], id, a, text, sizeof text);
            loom_slurmfmt_cell(&line, text, f->fields[c].width, f->fields[c].right);
            loom_buf_append_str(&line, f->fields[c].suffix);
        }
        printf("%s\n", line.data);
        r += rows_used;
    }
    loom_buf_free(&line);
    free(rows);
}

/* ------------------------------------------------------------- options */

static int list_opt(const char *cmd, const char *text, json_t *into)
{
    if (strlen(text) > MAX_LIST_TEXT) {
        fprintf(stderr, "loom %s: a list of %zu bytes, more than the %d allowed\n", cmd,
                strlen(text), MAX_LIST_TEXT);
        return LOOM_EXIT_USAGE;
    }
    loom_slurm_split(text, into);
    return LOOM_EXIT_OK;
}

/* -1: --help was printed. */
static int parse_args(int argc, char **argv, squeue_args_t *a)
{
    static const struct option opts[] = {
        {"user", required_argument, NULL, 'u'},
        {"me", no_argument, NULL, 'M'},
        {"jobs", required_argument, NULL, 'j'},
        {"states", required_argument, NULL, 't'},
        {"state", required_argument, NULL, 't'},
        {"name", required_argument, NULL, 'n'},
        {"partition", required_argument, NULL, 'p'},
        {"format", required_argument, NULL, 'o'},
        {"start", no_argument, NULL, 'S'},
        {"long", no_argument, NULL, 'l'},
        {"array", no_argument, NULL, 'r'},
        {"noheader", no_argument, NULL, 'h'},
        {"all", no_argument, NULL, 'a'},
        {"help", no_argument, NULL, 'H'},
        {NULL, 0, NULL, 0},
    };
    int c, rc = LOOM_EXIT_OK;
    opterr = 0;
    while (rc == LOOM_EXIT_OK &&
           (c = getopt_long(argc, argv, ":u:j:t:n:p:o:lrha", opts, NULL)) != -1) {
        switch (c) {
        case 'u':
            a->users_given = true; /* an unknown user matches no job */
            rc = loom_slurm_parse_users("squeue", optarg, false, a->users);
            break;
        case 'M': {
            const char *me = loom_slurm_me("squeue");
            if (!me)
                return LOOM_EXIT_FAILURE;
            json_array_append_new(a->users, json_string(me));
            a->users_given = true;
            break;
        }
        case 'j': rc = loom_slurm_parse_ids("squeue", optarg, a->ids); break;
        case 't':
            a->states_given = true;
            rc = loom_slurm_parse_states("squeue", optarg, a->states);
            break;
        case 'n': rc = list_opt("squeue", optarg, a->names); break;
        case 'p': a->partition = optarg; break;
        case 'o': a->format = optarg; break;
        case 'S': a->start = true; break;
        case 'l': a->format = LONG_FMT; break;
        case 'r': a->per_task = true; break;
        case 'h': a->noheader = true; break;
        case 'a': break; /* every partition: loom has one */
        case 'H': usage(stdout); return -1;
        default: return loom_slurm_bad_option("squeue", c, argv[optind - 1]);
        }
    }
    if (rc == LOOM_EXIT_OK && optind < argc) {
        fprintf(stderr, "loom squeue: unexpected argument '%s'; try 'loom squeue --help'\n",
                argv[optind]);
        rc = LOOM_EXIT_USAGE;
    }
    return rc;
}

int loom_cmd_squeue(int argc, char **argv)
{
    squeue_args_t a = {.users = json_array(),
                       .ids = json_array(),
                       .states = json_array(),
                       .names = json_array(),
                       .now = (double)loom_time_real_ns() / 1e9};
    loom_slurmfmt_t f = {0};
    json_t *jobs = NULL;
    int rc = parse_args(argc, argv, &a);
    if (rc == LOOM_EXIT_OK) {
        const char *env = getenv("SQUEUE_FORMAT");
        const char *fmt = a.format      ? a.format
                          : a.start     ? START_FMT
                          : env && *env ? env
                                        : DEFAULT_FMT;
        loom_err_t err;
        if (loom_slurmfmt_parse(fmt, LETTERS, &f, &err)) {
            fprintf(stderr, "loom squeue: %s\n", err.msg);
            rc = LOOM_EXIT_USAGE;
        }
    }
    /* what to ask job.list for: the states asked, else the active ones,
     * else (-t all, or -j without -t) every job */
    json_t *want = json_array();
    bool all = loom_slurm_has(a.states, "ALL") || (json_array_size(a.ids) && !a.states_given);
    size_t i;
    json_t *st;
    json_array_foreach(a.states, i, st) if (strcmp(json_string_value(st), "SUSPENDED") != 0)
        json_array_append(want, st);
    if (!a.states_given) {
        json_array_append_new(want, json_string("PENDING"));
        json_array_append_new(want, json_string("RUNNING"));
    }
    if (rc == LOOM_EXIT_OK && (all || json_array_size(want)))
        rc = loom_slurm_jobs("squeue", all ? NULL : want, &jobs);
    else if (rc == LOOM_EXIT_OK)
        jobs = json_array(); /* only SUSPENDED: loom suspends none it lists so */
    json_decref(want);
    if (rc == LOOM_EXIT_OK) {
        jobs = loom_cli_safe_tree(jobs); /* names and reasons escaped (docs/security.md) */
        print_rows(&a, &f, jobs);
    }
    loom_slurmfmt_free(&f);
    json_decref(jobs);
    json_decref(a.users);
    json_decref(a.ids);
    json_decref(a.states);
    json_decref(a.names);
    return rc < 0 ? LOOM_EXIT_OK : rc;
}
