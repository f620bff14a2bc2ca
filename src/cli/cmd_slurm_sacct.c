/* loom sacct: loom's jobs, finished and active, as Slurm 22.05's sacct
 * prints them (job.list): its fields (--format), widths ("JobName%20"),
 * parsable forms (-p, -P), and its filters (-j, -u, -a, -S, -E, -s,
 * --name). loom's jobs have no steps: one row per job (as sacct -X). By
 * default the caller's own jobs (root: everyone's) since midnight, or the
 * jobs -j names whenever they ran. docs/slurm.md. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/slurm.h"
#include "loom/slurmfmt.h"

/* sacct's fields and default widths (negative: left-justified), in
 * sacct's order, which decides what a prefix ("st": Start) picks. */
enum {
    F_ACCOUNT,
    F_ALLOCCPUS,
    F_ALLOCNODES,
    F_ALLOCTRES,
    F_CLUSTER,
    F_CPUTIME,
    F_DERIVED,
    F_ELAPSED,
    F_ELAPSEDRAW,
    F_ELIGIBLE,
    F_END,
    F_EXITCODE,
    F_GID,
    F_GROUP,
    F_JOBID,
    F_JOBIDRAW,
    F_JOBNAME,
    F_NCPUS,
    F_NNODES,
    F_NODELIST,
    F_PARTITION,
    F_PRIORITY,
    F_QOS,
    F_REASON,
    F_REQCPUS,
    F_REQMEM,
    F_REQTRES,
    F_START,
    F_STATE,
    F_SUBMIT,
    F_TIMELIMIT,
    F_TIMELIMITRAW,
    F_UID,
    F_USER,
    F_WORKDIR,
    NFIELDS
};
static const char *const names[NFIELDS] = {
    "Account",   "AllocCPUS",       "AllocNodes", "AllocTRES",  "Cluster",
    "CPUTime",   "DerivedExitCode", "Elapsed",    "ElapsedRaw", "Eligible",
    "End",       "ExitCode",        "GID",        "Group",      "JobID",
    "JobIDRaw",  "JobName",         "NCPUS",      "NNodes",     "NodeList",
    "Partition", "Priority",        "QOS",        "Reason",     "ReqCPUS",
    "ReqMem",    "ReqTRES",         "Start",      "State",      "Submit",
    "Timelimit", "TimelimitRaw",    "UID",        "User",       "WorkDir",
};
static const int lens[NFIELDS] = {
    10, 10, 10, 10, 10, 10, 15, 10, 10, 19, 19, 8,  6,  9,  -12, -12, 10,  10,
    8,  15, 10, 10, 10, 22, 8,  10, 10, 19, 10, 19, 10, 10, 6,   9,   -20,
};
#define DEFAULT_FIELDS "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"
#define BRIEF_FIELDS   "JobID,State,ExitCode"

static void usage(FILE *f)
{
    fprintf(f, "usage: loom sacct [-j ID[,...]] [-u USER[,...] | -a] [-S TIME] [-E TIME]\n"
               "                  [-s STATE[,...]] [--name NAME[,...]] [-o FIELDS] [-P | -p]\n"
               "                  [-n] [-b] [-X] [-e]\n\n"
               "loom's jobs as Slurm's sacct prints them (docs/slurm.md): one row per job\n"
               "(loom's jobs have no steps). Default: your jobs (root: everyone's) since\n"
               "midnight; with -j the jobs named, whenever they ran.\n\n"
               "  -j, --jobs LIST      these jobs: ID, an array's ID (all its tasks), ID_TASK\n"
               "  -u, --user LIST      these users' jobs\n"
               "  -a, --allusers       every user's jobs\n"
               "  -S, --starttime T    jobs that ended at or after T, or are not done (default\n"
               "                       midnight; T: YYYY-MM-DD[THH:MM[:SS]], HH:MM[:SS], now,\n"
               "                       now-N[minutes|hours|days], today, midnight)\n"
               "  -E, --endtime T      jobs submitted at or before T (default now)\n"
               "  -s, --state LIST     only jobs in these states (PD R CD F CA TO or names)\n"
               "  --name LIST          only jobs of these names\n"
               "  -o, --format LIST    fields, NAME[%%WIDTH],... (negative WIDTH left-justifies)\n"
               "                       default " DEFAULT_FIELDS "\n"
               "  -b, --brief          " BRIEF_FIELDS "\n"
               "  -P, --parsable2      fields separated by '|'\n"
               "  -p, --parsable       each field followed by '|'\n"
               "  --delimiter C        instead of '|' (with -p or -P)\n"
               "  -n, --noheader       no header\n"
               "  -X, --allocations    accepted (loom's jobs have no steps)\n"
               "  -e, --helpformat     the fields\n"
               "  -h, --help           this help\n\n"
               "exit codes: 0 ok, 2 usage, 3 cannot connect.\n");
}

typedef struct sacct_args {
    json_t *users, *ids, *states, *jobnames;
    const char *format, *delimiter;
    double start, end; /* -1: none */
    bool all_users, noheader;
    loom_slurmfmt_mode_t mode;
    double now;
} sacct_args_t;

/* ----------------------------------------------------------------- times */

/* -S/-E as sacct reads them (the forms people use), local time unless an
 * RFC 3339 zone is given. */
static int parse_time(const char *text, double now, double *out)
{
    struct tm tm;
    time_t t = (time_t)now;
    localtime_r(&t, &tm);
    if (!strcmp(text, "now")) {
        *out = now;
        return LOOM_OK;
    }
    if (!strcmp(text, "today") || !strcmp(text, "midnight")) {
        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
        *out = (double)mktime(&tm);
        return LOOM_OK;
    }
    if (!strncmp(text, "now-", 4) || !strncmp(text, "now+", 4)) {
        char *end;
        long long n = strtoll(text + 4, &end, 10);
        long long unit = !*end || !strcmp(end, "s") || !strncmp(end, "sec", 3) ? 1
                         : !strncmp(end, "min", 3) || !strcmp(end, "m")        ? 60
                         : !strncmp(end, "hour", 4) || !strcmp(end, "h")       ? 3600
                         : !strncmp(end, "day", 3) || !strcmp(end, "d")        ? 86400
                         : !strncmp(end, "week", 4) || !strcmp(end, "w")       ? 604800
                                                                               : 0;
        if (n < 0 || n > 100000000 || !unit || end == text + 4)
            return LOOM_EINVAL;
        *out = now + (text[3] == '-' ? -1.0 : 1.0) * (double)(n * unit);
        return LOOM_OK;
    }
    /* A date, with a time of day or not, and RFC 3339 times with a zone. */
    int64_t ns;
    if (loom_time_parse_datetime(
            text, LOOM_TIME_DATE_ONLY | LOOM_TIME_NO_SECONDS | LOOM_TIME_ZONELESS_LOCAL, &ns,
            NULL) == LOOM_OK) {
        *out = (double)(ns / LOOM_NS_PER_S) + (double)(ns % LOOM_NS_PER_S) / 1e9;
        return LOOM_OK;
    }
    /* A time of day alone: today's. */
    static const char *const forms[] = {"%H:%M:%S", "%H:%M"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        struct tm v = tm;
        v.tm_sec = 0;
        const char *rest = strptime(text, forms[i], &v);
        if (rest && !*rest) {
            v.tm_isdst = -1;
            *out = (double)mktime(&v);
            return LOOM_OK;
        }
    }
    return LOOM_EINVAL;
}

/* ----------------------------------------------------------------- cells */

static const char *str_of(const json_t *j, const char *key)
{
    const char *s = json_string_value(json_object_get(j, key));
    return s ? s : "";
}

static bool started(const json_t *j)
{
    return json_is_string(json_object_get(j, "start_time"));
}

/* Memory as Slurm's TRES strings write it: 100M, 16G. */
static void mem_text(json_int_t bytes, char *out, size_t len)
{
    long long mib = (long long)((bytes + (1 << 20) - 1) >> 20);
    if (mib && mib % 1024 == 0)
        snprintf(out, len, "%lldG", mib / 1024);
    else
        snprintf(out, len, "%lldM", mib);
}

static void tres(const json_t *j, char *out, size_t len)
{
    const json_t *r = json_object_get(j, "resources");
    long long cpus = (long long)json_integer_value(json_object_get(r, "cpus"));
    json_int_t gpus = json_integer_value(json_object_get(r, "gpus"));
    json_int_t mem = json_integer_value(json_object_get(r, "memory"));
    size_t at = (size_t)snprintf(out, len, "billing=%lld,cpu=%lld", cpus, cpus);
    if (gpus > 0 && at < len)
        at += (size_t)snprintf(out + at, len - at, ",gres/gpu=%lld", (long long)gpus);
    if (mem > 0 && at < len) {
        char m[32];
        mem_text(mem, m, sizeof m);
        at += (size_t)snprintf(out + at, len - at, ",mem=%s", m);
    }
    if (at < len)
        snprintf(out + at, len - at, ",node=1");
}

/* sacct's EXIT:SIGNAL. loom's exit_code is -1 for a job killed by a
 * signal or that never ran (cancelled while pending); sacct says 0 there
 * ("0:15", "0:0"), which wrappers that split the field expect. */
static void exit_code(const json_t *j, char *out, size_t len)
{
    const json_t *o = json_object_get(json_object_get(j, "run"), "outcome");
    json_int_t code = json_integer_value(json_object_get(o, "exit_code"));
    snprintf(out, len, "%lld:%lld", (long long)(code > 0 ? code : 0),
             (long long)json_integer_value(json_object_get(o, "signal")));
}

static void limit_cell(const json_t *j, bool raw, char *out, size_t len)
{
    json_int_t tl = json_integer_value(json_object_get(j, "time_limit"));
    char t[32];
    if (tl <= 0)
        snprintf(out, len, "UNLIMITED");
    else if (raw)
        snprintf(out, len, "%lld", (long long)((tl + 59) / 60));
    else
        snprintf(out, len, "%s", loom_slurmfmt_elapsed((tl + 59) / 60 * 60, t));
}

/* One value; NULL for an empty one. */
static const char *cell(int field, const json_t *j, double now, char *out, size_t len)
{
    const json_t *owner = json_object_get(j, "owner"), *r = json_object_get(j, "resources");
    long long cpus = (long long)json_integer_value(json_object_get(r, "cpus"));
    int64_t el = loom_slurm_elapsed(j, now);
    char t[48];
    switch (field) {
    case F_ACCOUNT: snprintf(out, len, "%s", str_of(owner, "account")); break;
    case F_ALLOCCPUS:
    case F_NCPUS: snprintf(out, len, "%lld", started(j) ? cpus : 0); break;
    case F_REQCPUS: snprintf(out, len, "%lld", cpus); break;
    case F_ALLOCNODES: snprintf(out, len, "%d", started(j) ? 1 : 0); break;
    case F_NNODES: snprintf(out, len, "1"); break;
    case F_ALLOCTRES:
        if (!started(j))
            return NULL;
        tres(j, out, len);
        break;
    case F_REQTRES: tres(j, out, len); break;
    case F_CLUSTER: snprintf(out, len, "loom"); break;
    case F_CPUTIME: snprintf(out, len, "%s", loom_slurmfmt_elapsed(el * cpus, t)); break;
    case F_DERIVED:
    case F_EXITCODE: exit_code(j, out, len); break;
    case F_ELAPSED: snprintf(out, len, "%s", loom_slurmfmt_elapsed(el, t)); break;
    case F_ELAPSEDRAW: snprintf(out, len, "%lld", (long long)el); break;
    case F_ELIGIBLE:
    case F_SUBMIT:
        loom_slurm_time(loom_slurm_epoch(json_object_get(j, "submit_time")), NULL, out);
        break;
    case F_START:
        loom_slurm_time(loom_slurm_epoch(json_object_get(j, "start_time")), "Unknown", out);
        break;
    case F_END:
        loom_slurm_time(loom_slurm_epoch(json_object_get(j, "end_time")), "Unknown", out);
        break;
    case F_GID:
    case F_UID: {
        const json_t *id = json_object_get(owner, field == F_UID ? "uid" : "gid");
        if (!json_is_integer(id))
            return NULL;
        snprintf(out, len, "%lld", (long long)json_integer_value(id));
        break;
    }
    case F_GROUP: snprintf(out, len, "%s", str_of(owner, "group")); break;
    case F_USER: snprintf(out, len, "%s", loom_slurm_user(j)); break;
    case F_JOBID:
        loom_slurm_job_id(j, t);
        snprintf(out, len, "%s", t);
        break;
    case F_JOBIDRAW:
        snprintf(out, len, "%lld", (long long)json_integer_value(json_object_get(j, "id")));
        break;
    case F_JOBNAME: snprintf(out, len, "%s", str_of(j, "name")); break;
    case F_NODELIST: {
        const char *n = json_string_value(json_object_get(json_object_get(j, "run"), "node"));
        snprintf(out, len, "%s", n ? n : "None assigned");
        break;
    }
    case F_PARTITION: snprintf(out, len, "%s", LOOM_CLI_PARTITION); break;
    case F_PRIORITY:
        snprintf(out, len, "%lld", (long long)json_integer_value(json_object_get(j, "priority")));
        break;
    case F_QOS: snprintf(out, len, "normal"); break;
    case F_REASON:
        snprintf(
            out, len, "%s",
            strcmp(str_of(j, "state"), "PENDING") == 0
                ? loom_slurmfmt_reason(json_string_value(json_object_get(j, "reason")), NULL, NULL)
                : "None");
        break;
    case F_REQMEM: {
        json_int_t mem = json_integer_value(json_object_get(r, "memory"));
        if (mem > 0)
            mem_text(mem, out, len);
        else
            snprintf(out, len, "0");
        break;
    }
    case F_STATE: {
        const char *st = loom_slurmfmt_state(str_of(j, "state"), false);
        snprintf(out, len, "%s", st ? st : str_of(j, "state"));
        break;
    }
    case F_TIMELIMIT:
    case F_TIMELIMITRAW: limit_cell(j, field == F_TIMELIMITRAW, out, len); break;
    default: snprintf(out, len, "%s", str_of(json_object_get(j, "options"), "workdir"));
    }
    return out;
}

/* ----------------------------------------------------------------- rows */

static bool keep(const sacct_args_t *a, const json_t *j)
{
    if (json_array_size(a->ids) && !loom_slurm_id_match(a->ids, j))
        return false;
    if (json_array_size(a->users) && !loom_slurm_has(a->users, loom_slurm_user(j)))
        return false;
    if (json_array_size(a->jobnames) && !loom_slurm_has(a->jobnames, str_of(j, "name")))
        return false;
    if (json_array_size(a->states) && !loom_slurm_has(a->states, "ALL") &&
        !loom_slurm_has(a->states, str_of(j, "state")))
        return false;
    double end = loom_slurm_epoch(json_object_get(j, "end_time"));
    if (a->start >= 0 && end >= 0 && end < a->start)
        return false;
    return a->end < 0 || loom_slurm_epoch(json_object_get(j, "submit_time")) <= a->end;
}

/* With --delimiter: the separator replaced in what print_fields wrote. */
static void put_line(const sacct_args_t *a, loom_buf_t *line)
{
    if (a->delimiter && a->mode != LOOM_SLURMFMT_COLUMNS) {
        for (size_t i = 0; i < line->len; i++)
            if (line->data[i] == '|')
                fputs(a->delimiter, stdout);
            else
                putchar(line->data[i]);
        putchar('\n');
    } else {
        printf("%s\n", line->data ? line->data : "");
    }
}

static void print_rows(const sacct_args_t *a, const loom_slurmfmt_cols_t *cols, json_t *jobs)
{
    loom_buf_t line = LOOM_BUF_INIT;
    if (!a->noheader) {
        loom_slurmfmt_sacct_header(&line, cols, names, a->mode);
        if (line.len && line.data[line.len - 1] == '\n')
            line.data[--line.len] = 0;
        if (a->delimiter)
            put_line(a, &line);
        else
            printf("%s\n", line.data);
    }
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j)
    {
        if (!keep(a, j))
            continue;
        loom_buf_reset(&line);
        for (size_t c = 0; c < cols->n; c++) {
            char text[4096];
            const char *v = cell((int)cols->cols[c].field, j, a->now, text, sizeof text);
            loom_slurmfmt_sacct_cell(&line, v, cols->cols[c].len, a->mode, c + 1 == cols->n);
        }
        put_line(a, &line);
    }
    loom_buf_free(&line);
}

/* ------------------------------------------------------------- options */

static int time_opt(const char *opt, const char *text, double now, double *out)
{
    if (parse_time(text, now, out) == LOOM_OK)
        return LOOM_EXIT_OK;
    fprintf(stderr,
            "loom sacct: %s '%.64s': expected YYYY-MM-DD[THH:MM[:SS]], HH:MM[:SS], now, "
            "now-N[minutes|hours|days|weeks], today or midnight\n",
            opt, text);
    return LOOM_EXIT_USAGE;
}

static void helpformat(void)
{
    for (size_t i = 0; i < NFIELDS; i++)
        printf("%-20s%s", names[i], i % 4 == 3 || i + 1 == NFIELDS ? "\n" : "");
}

/* -1: help printed. */
static int parse_args(int argc, char **argv, sacct_args_t *a)
{
    static const struct option opts[] = {
        {"jobs", required_argument, NULL, 'j'},    {"user", required_argument, NULL, 'u'},
        {"allusers", no_argument, NULL, 'a'},      {"starttime", required_argument, NULL, 'S'},
        {"endtime", required_argument, NULL, 'E'}, {"state", required_argument, NULL, 's'},
        {"name", required_argument, NULL, 'N'},    {"format", required_argument, NULL, 'o'},
        {"fields", required_argument, NULL, 'o'},  {"parsable2", no_argument, NULL, 'P'},
        {"parsable", no_argument, NULL, 'p'},      {"noheader", no_argument, NULL, 'n'},
        {"brief", no_argument, NULL, 'b'},         {"allocations", no_argument, NULL, 'X'},
        {"helpformat", no_argument, NULL, 'e'},    {"delimiter", required_argument, NULL, 'D'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    int c, rc = LOOM_EXIT_OK;
    opterr = 0;
    while (rc == LOOM_EXIT_OK &&
           (c = getopt_long(argc, argv, ":j:u:aS:E:s:o:PpnbXeh", opts, NULL)) != -1) {
        switch (c) {
        case 'j': rc = loom_slurm_parse_ids("sacct", optarg, a->ids); break;
        case 'u': rc = loom_slurm_parse_users("sacct", optarg, true, a->users); break;
        case 'a': a->all_users = true; break;
        case 'S': rc = time_opt("--starttime", optarg, a->now, &a->start); break;
        case 'E': rc = time_opt("--endtime", optarg, a->now, &a->end); break;
        case 's': rc = loom_slurm_parse_states("sacct", optarg, a->states); break;
        case 'N': loom_slurm_split(optarg, a->jobnames); break;
        case 'o': a->format = optarg; break;
        case 'b': a->format = BRIEF_FIELDS; break;
        case 'P': a->mode = LOOM_SLURMFMT_PARSABLE2; break;
        case 'p': a->mode = LOOM_SLURMFMT_PARSABLE; break;
        case 'n': a->noheader = true; break;
        case 'X': break; /* no steps to leave out */
        case 'D': a->delimiter = optarg; break;
        case 'e': helpformat(); return -1;
        case 'h': usage(stdout); return -1;
        default: return loom_slurm_bad_option("sacct", c, argv[optind - 1]);
        }
    }
    if (rc == LOOM_EXIT_OK && optind < argc) {
        fprintf(stderr, "loom sacct: unexpected argument '%s'; try 'loom sacct --help'\n",
                argv[optind]);
        rc = LOOM_EXIT_USAGE;
    }
    return rc;
}

int loom_cmd_sacct(int argc, char **argv)
{
    sacct_args_t a = {.users = json_array(),
                      .ids = json_array(),
                      .states = json_array(),
                      .jobnames = json_array(),
                      .start = -1,
                      .end = -1,
                      .now = (double)loom_time_real_ns() / 1e9};
    loom_slurmfmt_cols_t cols;
    json_t *jobs = NULL;
    loom_err_t err;
    int rc = parse_args(argc, argv, &a);
    if (rc == LOOM_EXIT_OK && loom_slurmfmt_fields(a.format ? a.format : DEFAULT_FIELDS, names,
                                                   lens, NFIELDS, &cols, &err)) {
        fprintf(stderr, "loom sacct: %s\n", err.msg);
        rc = LOOM_EXIT_USAGE;
    }
    /* sacct's defaults: the caller's jobs (root: all) since midnight,
     * unless jobs are named */
    if (rc == LOOM_EXIT_OK && !json_array_size(a.ids) && a.start < 0)
        parse_time("midnight", a.now, &a.start);
    if (rc == LOOM_EXIT_OK && !json_array_size(a.ids) && !json_array_size(a.users) &&
        !a.all_users && getuid() != 0) {
        const char *me = loom_slurm_me("sacct");
        if (me)
            json_array_append_new(a.users, json_string(me));
        else
            rc = LOOM_EXIT_FAILURE;
    }
    if (rc == LOOM_EXIT_OK)
        rc = loom_slurm_jobs("sacct", NULL, &jobs);
    if (rc == LOOM_EXIT_OK) {
        jobs = loom_cli_safe_tree(jobs);
        print_rows(&a, &cols, jobs);
    }
    json_decref(jobs);
    json_decref(a.users);
    json_decref(a.ids);
    json_decref(a.states);
    json_decref(a.jobnames);
    return rc < 0 ? LOOM_EXIT_OK : rc;
}
