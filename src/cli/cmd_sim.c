/* loom sim — replay traces through the scheduling policies (libloom sim).
 * Parses options, loads the inputs, runs, prints; nothing else. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "loom/runtime.h"
#include "loom/sim.h"

/* --users N (1..64), --accounts M (1..64) or --user-skew S (0..10); 0 when
 * good, else says why. */
static int parse_users(int opt, const char *arg, int64_t *users, int64_t *accounts, double *skew)
{
    char *end;
    if (opt == 'u' && loom_parse_i64(arg, 1, LOOM_SIM_MAX_USERS, users, "--users", NULL) == 0)
        return 0;
    if (opt == 'A' && loom_parse_i64(arg, 1, LOOM_SIM_MAX_USERS, accounts, "--accounts", NULL) == 0)
        return 0;
    if (opt == 'A') {
        fprintf(stderr, "loom sim: --accounts '%s': expected 1 to 64 accounts\n", arg);
        return -1;
    }
    if (opt == 'k') {
        *skew = strtod(arg, &end);
        if (end != arg && !*end && *skew >= 0 && *skew <= 10)
            return 0;
    }
    fprintf(stderr, "loom sim: %s '%s': expected %s\n", opt == 'u' ? "--users" : "--user-skew", arg,
            opt == 'u' ? "1 to 64 users" : "a Zipf exponent from 0 to 10");
    return -1;
}

static void sim_usage(FILE *f)
{
    fprintf(f,
            "usage: loom sim --nodes FILE --pods FILE[,FILE...] --policy NAME[,NAME...]\n"
            "                [--seeds 42-51] [--inflate 1.3] [--mode packing|dynamic]\n"
            "                [--queue fifo|sjf|priority|tiresias[:OPTS]|drf|fairshare[:OPTS]|\n"
            "                 tiresias+fairshare[:OPTS]] [--compress X]\n"
            "                [--timeslice S] [--users N [--user-skew S] [--accounts M]]\n"
            "                [--quota RULE]...\n"
            "                [--backfill greedy|easy|conservative] [--default-limit S]\n"
            "                [--preempt-cost S] [--out DIR]\n"
            "                [--json] [--plot]\n"
            "                [--jobs N] [--ties order|first|random] [--exact-scores] [--check]\n"
            "                [--workload FILE]\n\n"
            "Replays a trace (Alibaba GPU trace 2023 CSV, or loom JSONL) through placement\n"
            "policies: %s.\n\n"
            "  --nodes FILE     node list CSV (sn,cpu_milli,memory_mib,gpu,model), plain or\n"
            "                   gzip-compressed, or a shipped trace: openb (1,213 GPU nodes)\n"
            "  --pods FILES     pod list CSV or JSONL manifest; several, comma-separated;\n"
            "                   shipped ones by name: openb-default, openb-cpu050, ...\n"
            "  --policy NAMES   placement policies, comma-separated\n"
            "  --seeds A-B|A,B  seeds (default 42)\n"
            "  --inflate X      packing: stop when GPU request reaches X x capacity (1.3)\n"
            "  --mode M         packing (FGD paper's experiment) or dynamic (queue, departures)\n"
            "  --queue NAME     dynamic mode's queue order (fifo); fair share's OPTS: a\n"
            "                   half-life and by=user|account (fairshare:1h,by=account);\n"
            "                   tiresias (preemptive): thresholds=T1/T2/... GPU-seconds and\n"
            "                   knob=X (tiresias:thresholds=3200,knob=2, the defaults)\n"
            "  --compress X     dynamic mode: arrivals X times denser (durations unchanged)\n"
            "  --timeslice S    dynamic mode: Gandiva's time-slicing with a quantum of S\n"
            "                   seconds (as loomd --timeslice; default off)\n"
            "  --backfill B     dynamic mode: greedy (default: any job that fits starts),\n"
            "                   easy (the first waiting job gets a reservation from the\n"
            "                   running jobs' time limits) or conservative (every waiting\n"
            "                   job gets one); as loomd --backfill\n"
            "  --default-limit S  the time limit of a task without one (3600)\n"
            "  --preempt-cost S dynamic mode: seconds a suspended job loses when it resumes\n"
            "                   (Tiresias' preemptions, time-slicing; default 0)\n"
            "  --users N        dynamic mode: the tasks get owners 1..N (Zipf, seeded; see\n"
            "                   --user-skew); reports each user's mean JCT and Jain's index\n"
            "  --user-skew S    the Zipf exponent of --users (default 1; 0: uniform);\n"
            "                   reports each user's part of the GPU time, in all and\n"
            "                   while every user has a job waiting\n"
            "  --accounts M     user k charges account 1 + (k - 1) %% M (fair share by\n"
            "                   account; default: one account)\n"
            "  --quota RULE     dynamic mode: a quota, as loomd's --quota, users and\n"
            "                   accounts by number: user:3=running=1, account:2=gpus=4,\n"
            "                   *=running=2 (repeatable; the least that applies holds);\n"
            "                   pending=N and time=D refuse a job at its arrival\n"
            "  --out DIR        per-run CSVs (per arrival, or utilization timeline)\n"
            "  --json           an object keyed by policy (by trace, then policy, for several)\n"
            "  --plot           allocation and fragmentation figures (SVG, PNG) into --out\n"
            "  --jobs N         threads (default 2)\n"
            "  --ties M         equal best scores go to the first node in a seeded order fixed\n"
            "                   for the run (order, default: as the published simulator),\n"
            "                   the lowest-numbered node (first), or a random one (random)\n"
            "  --exact-scores   compare real-valued scores, not the published integer ones\n"
            "  --check          verify bookkeeping after every event (slow)\n"
            "  --workload FILE  FGD's target workload: the common shapes of this job list\n"
            "                   (CSV or JSONL) instead of those of each --pods file\n\n"
            "A --policy naming rubick, elastic or synergy runs the reconfigurable-jobs\n"
            "experiment instead: loom sim --policy rubick --help.\n",
            loom_sched_place_names());
}

int loom_cli_parse_seeds(const char *s, uint64_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    char *dup = strdup(s), *save = NULL;
    if (!dup)
        return -1;
    for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(tok + 1, '-');
        char *end;
        unsigned long long a = strtoull(tok, &end, 10), b = a;
        if (dash) {
            if (end != dash)
                goto bad;
            b = strtoull(dash + 1, &end, 10);
        }
        if (*end || b < a || b - a > 100000)
            goto bad;
        if (loom_vec_reserve((void **)out, &cap, *n + (size_t)(b - a) + 1, sizeof **out, 16))
            goto bad;
        for (unsigned long long v = a; v <= b; v++)
            (*out)[(*n)++] = v;
    }
    free(dup);
    return *n ? 0 : -1;
bad:
    free(dup);
    free(*out);
    *out = NULL;
    return -1;
}

static size_t split(char *s, char **parts, size_t max)
{
    size_t n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(s, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save))
        parts[n++] = tok;
    return n;
}

/* A --policy naming a reconfigurable-job policy (rubick and its parts,
 * elastic, synergy) or a baseline given the best plan (NAME+plan) selects
 * the Rubick experiment. */
static bool wants_rubick(int argc, char **argv)
{
    static const char *const names[] = {"rubick", "elastic", "synergy", "+plan"};
    for (int i = 1; i < argc; i++) {
        const char *v = strncmp(argv[i], "--policy=", 9) == 0              ? argv[i] + 9
                        : strcmp(argv[i], "--policy") == 0 && i + 1 < argc ? argv[i + 1]
                                                                           : NULL;
        for (size_t k = 0; v && k < sizeof names / sizeof *names; k++)
            if (strstr(v, names[k]))
                return true;
    }
    return false;
}

static const struct option sim_opts[] = {
    {"nodes", required_argument, NULL, 'n'},
    {"pods", required_argument, NULL, 'p'},
    {"policy", required_argument, NULL, 'P'},
    {"seeds", required_argument, NULL, 's'},
    {"inflate", required_argument, NULL, 'i'},
    {"mode", required_argument, NULL, 'm'},
    {"queue", required_argument, NULL, 'q'},
    {"out", required_argument, NULL, 'o'},
    {"json", no_argument, NULL, 'j'},
    {"plot", no_argument, NULL, 'g'},
    {"jobs", required_argument, NULL, 'J'},
    {"exact-scores", no_argument, NULL, 'x'},
    {"check", no_argument, NULL, 'c'},
    {"workload", required_argument, NULL, 'W'},
    {"help", no_argument, NULL, 'h'},
    {"ties", required_argument, NULL, 't'},
    {"compress", required_argument, NULL, 'C'},
    {"timeslice", required_argument, NULL, 'T'},
    {"users", required_argument, NULL, 'u'},
    {"user-skew", required_argument, NULL, 'k'},
    {"accounts", required_argument, NULL, 'A'},
    {"backfill", required_argument, NULL, 'B'},
    {"default-limit", required_argument, NULL, 'L'},
    {"preempt-cost", required_argument, NULL, 'R'},
    {"quota", required_argument, NULL, 'Q'},
    {NULL, 0, NULL, 0},
};

#define SIM_QUOTA_MAX 64 /* --quota rules */

/* Everything loom sim's options say. */
typedef struct sim_args {
    const char *nodes, *pods, *policy, *seeds_s, *mode, *queue, *out, *workload;
    double inflate, compress, timeslice, skew, default_limit, preempt_cost;
    loom_runtime_backfill_t backfill;
    int64_t users, accounts;
    bool json, plot, exact, check;
    loom_sched_ties_t ties;
    int jobs;
    loom_runtime_quota_rule_t quotas[SIM_QUOTA_MAX];
    size_t nquotas;
} sim_args_t;

#define SIM_GO_ON (-1) /* an option read: go on (else an exit code) */

/* One option: SIM_GO_ON, or the exit code to return. */
static int sim_opt(sim_args_t *a, int c)
{
    switch (c) {
    case 'n': a->nodes = optarg; break;
    case 'p': a->pods = optarg; break;
    case 'P': a->policy = optarg; break;
    case 's': a->seeds_s = optarg; break;
    case 'i': {
        char *end;
        a->inflate = strtod(optarg, &end);
        if (*end || !(a->inflate > 0 && a->inflate <= 100)) {
            fprintf(stderr, "loom sim: --inflate '%s': expected a number in (0, 100]\n", optarg);
            return LOOM_EXIT_USAGE;
        }
        break;
    }
    case 'C': {
        char *end;
        a->compress = strtod(optarg, &end);
        if (*end || !(a->compress > 0 && a->compress <= 1e9)) {
            fprintf(stderr, "loom sim: --compress '%s': expected a number > 0\n", optarg);
            return LOOM_EXIT_USAGE;
        }
        break;
    }
    case 'T': {
        char *end;
        a->timeslice = strtod(optarg, &end);
        if (*end || !(a->timeslice > 0 && a->timeslice <= 1e9)) {
            fprintf(stderr, "loom sim: --timeslice '%s': expected seconds > 0\n", optarg);
            return LOOM_EXIT_USAGE;
        }
        break;
    }
    case 'B': {
        loom_err_t err;
        if (loom_runtime_backfill_parse(optarg, &a->backfill, &err) != LOOM_OK) {
            fprintf(stderr, "loom sim: --%s\n", err.msg);
            return LOOM_EXIT_USAGE;
        }
        break;
    }
    case 'L': {
        char *end;
        a->default_limit = strtod(optarg, &end);
        if (*end || !(a->default_limit > 0 && a->default_limit <= 1e9)) {
            fprintf(stderr, "loom sim: --default-limit '%s': expected seconds > 0\n", optarg);
            return LOOM_EXIT_USAGE;
        }
        break;
    }
    case 'R': {
        char *end;
        a->preempt_cost = strtod(optarg, &end);
        if (*end || !(a->preempt_cost >= 0 && a->preempt_cost <= 1e9)) {
            fprintf(stderr, "loom sim: --preempt-cost '%s': expected seconds >= 0\n", optarg);
            return LOOM_EXIT_USAGE;
        }
        break;
    }
    case 'Q': {
        loom_err_t err;
        if (a->nquotas == SIM_QUOTA_MAX) {
            fprintf(stderr, "loom sim: --quota: at most %d\n", SIM_QUOTA_MAX);
            return LOOM_EXIT_USAGE;
        }
        if (loom_runtime_quota_parse(optarg, &a->quotas[a->nquotas], &err) != LOOM_OK) {
            fprintf(stderr, "loom sim: %s\n", err.msg);
            return LOOM_EXIT_USAGE;
        }
        a->nquotas++;
        break;
    }
    case 'u':
    case 'k':
    case 'A':
        if (parse_users(c, optarg, &a->users, &a->accounts, &a->skew))
            return LOOM_EXIT_USAGE;
        break;
    case 'm': a->mode = optarg; break;
    case 'q': a->queue = optarg; break;
    case 'o': a->out = optarg; break;
    case 'j': a->json = true; break;
    case 'g': a->plot = true; break;
    case 'J': a->jobs = atoi(optarg); break;
    case 'x': a->exact = true; break;
    case 'c': a->check = true; break;
    case 'W': a->workload = optarg; break;
    case 't':
        if (strcmp(optarg, "order") == 0)
            a->ties = LOOM_SCHED_TIES_ORDER;
        else if (strcmp(optarg, "first") == 0)
            a->ties = LOOM_SCHED_TIES_FIRST;
        else if (strcmp(optarg, "random") == 0)
            a->ties = LOOM_SCHED_TIES_RANDOM;
        else {
            fprintf(stderr, "loom sim: --ties '%s': expected order, first or random\n", optarg);
            return LOOM_EXIT_USAGE;
        }
        break;
    case 'h': sim_usage(stdout); return LOOM_EXIT_OK;
    default: sim_usage(stderr); return LOOM_EXIT_USAGE;
    }
    return SIM_GO_ON;
}

/* Reads and checks the options: SIM_GO_ON, or the exit code to return. */
static int sim_parse(sim_args_t *a, int argc, char **argv)
{
    int c, rc;
    while ((c = getopt_long(argc, argv, ":h", sim_opts, NULL)) != -1)
        if (c == '?' || c == ':')
            return loom_cli_bad_option("sim", c, argv[optind - 1]);
        else if ((rc = sim_opt(a, c)) != SIM_GO_ON)
            return rc;
    bool dynamic = strcmp(a->mode, "dynamic") == 0;
    if (!a->nodes || !a->pods || !a->policy || (!dynamic && strcmp(a->mode, "packing") != 0) ||
        a->jobs < 1 || a->jobs > 256 || optind < argc || (a->plot && (!a->out || dynamic))) {
        fprintf(stderr, "loom sim: %s\n",
                a->plot && dynamic   ? "--plot is for packing mode"
                : a->plot && !a->out ? "--plot needs --out DIR"
                                     : "need --nodes, --pods and --policy (see --help)");
        return LOOM_EXIT_USAGE;
    }
    return SIM_GO_ON;
}

/* FGD's target workload from another job list (--workload). */
static int sim_learn_workload(const char *path, const loom_sched_cluster_t *cl,
                              loom_sim_trace_t *wtrace, loom_sched_workload_t *given,
                              loom_err_t *err)
{
    loom_sched_req_t *reqs = NULL;
    int rc = loom_sim_tasks_load(path, cl, wtrace, err);
    if (!rc && !(reqs = malloc(wtrace->n * sizeof *reqs)))
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < wtrace->n; i++)
        reqs[i] = wtrace->tasks[i].req;
    if (!rc)
        rc = loom_sched_workload_learn(reqs, wtrace->n, 0.95, given, err);
    free(reqs);
    return rc;
}

/* Prints the report and writes --out's CSVs and plots. */
static int sim_output(const sim_args_t *a, loom_sim_run_t *runs, size_t nruns, bool dynamic,
                      bool several_traces, double secs, loom_err_t *err)
{
    loom_buf_t b = LOOM_BUF_INIT;
    if (a->json)
        loom_sim_report_json(&b, runs, nruns, dynamic);
    else
        loom_sim_report_table(&b, runs, nruns, dynamic);
    fputs(b.data ? b.data : "", stdout);
    loom_buf_free(&b);
    if (!a->json)
        printf("%zu runs in %.1f s on %d threads\n", nruns, secs, a->jobs);
    if (a->out && loom_sim_write_csvs(a->out, runs, nruns, dynamic, several_traces, err))
        return err->code;
    if (a->plot && loom_sim_plot(a->out, runs, nruns, err))
        return err->code;
    return LOOM_OK;
}

int loom_cmd_sim(int argc, char **argv)
{
    if (wants_rubick(argc, argv))
        return loom_cmd_sim_rubick(argc, argv);
    sim_args_t a = {.seeds_s = "42",
                    .skew = 1.0,
                    .mode = "packing",
                    .queue = "fifo",
                    .inflate = 1.3,
                    .compress = 1.0,
                    .ties = LOOM_SCHED_TIES_ORDER,
                    .jobs = 2};
    int ret = sim_parse(&a, argc, argv);
    if (ret != SIM_GO_ON)
        return ret;
    bool dynamic = strcmp(a.mode, "dynamic") == 0;
    const char *queue = a.queue, *seeds_s = a.seeds_s, *policy = a.policy, *pods = a.pods;
    loom_sched_queue_cfg_t qc;
    loom_err_t err;
    if (loom_sched_queue_cfg_parse(queue, &qc, &err)) {
        fprintf(stderr, "loom sim: %s\n", err.msg);
        return LOOM_EXIT_USAGE;
    }
    uint64_t *seeds;
    size_t nseeds;
    if (loom_cli_parse_seeds(seeds_s, &seeds, &nseeds)) {
        fprintf(stderr, "loom sim: --seeds '%s': expected N, A-B or a comma-separated list\n",
                seeds_s);
        return LOOM_EXIT_USAGE;
    }
    char *pol_s = strdup(policy), *pod_s = strdup(pods);
    char *pol[64], *podf[256];
    size_t npol = pol_s ? split(pol_s, pol, 64) : 0, npod = pod_s ? split(pod_s, podf, 256) : 0;
    ret = LOOM_EXIT_USAGE;
    loom_sched_cluster_t cl;
    loom_sched_cluster_init(&cl);
    loom_sim_trace_t *traces = calloc(npod ? npod : 1, sizeof *traces);
    loom_sim_run_t *runs = NULL;
    size_t nruns = 0;
    loom_sim_trace_t wtrace = {0};
    loom_sched_workload_t given = {0};
    for (size_t i = 0; i < npol; i++) {
        if (!loom_sched_place_known(pol[i])) {
            fprintf(stderr, "loom sim: --policy '%s': expected one of: %s\n", pol[i],
                    loom_sched_place_names());
            goto done;
        }
    }
    if (!npol || !npod || !traces)
        goto done;
    ret = LOOM_EXIT_INPUT;
    if (loom_sim_nodes_load(a.nodes, &cl, &err)) {
        fprintf(stderr, "loom sim: %s\n", err.msg);
        goto done;
    }
    for (size_t i = 0; i < npod; i++) {
        if (loom_sim_tasks_load(podf[i], &cl, &traces[i], &err)) {
            fprintf(stderr, "loom sim: %s\n", err.msg);
            goto done;
        }
    }
    if (a.workload && sim_learn_workload(a.workload, &cl, &wtrace, &given, &err)) {
        fprintf(stderr, "loom sim: --workload: %s\n", err.msg);
        goto done;
    }
    ret = LOOM_EXIT_FAILURE;
    runs = calloc(npod * npol * nseeds, sizeof *runs);
    if (!runs)
        goto done;
    for (size_t t = 0; t < npod; t++)
        for (size_t p = 0; p < npol; p++)
            for (size_t s = 0; s < nseeds; s++) {
                loom_sim_run_t *r = &runs[nruns++];
                r->trace = &traces[t];
                r->trace_name = podf[t];
                r->policy = pol[p];
                r->seed = seeds[s];
                r->workload = a.workload ? &given : NULL;
            }
    loom_sim_opts_t o = {0};
    o.queue = queue;
    o.inflate = a.inflate;
    o.compress = a.compress;
    o.timeslice_s = a.timeslice;
    o.backfill = (int)a.backfill;
    o.preempt_cost_s = a.preempt_cost;
    o.default_limit_s = a.default_limit;
    o.users = (uint32_t)a.users;
    o.user_skew = a.skew;
    o.accounts = (uint32_t)a.accounts;
    o.quotas = a.quotas;
    o.nquotas = a.nquotas;
    o.exact_scores = a.exact;
    o.ties = a.ties;
    o.debug_check = a.check;
    o.keep_points = a.out != NULL;
    int64_t t0 = loom_time_mono_ns();
    if (loom_sim_run_all(&cl, runs, nruns, a.jobs, dynamic, &o, &err)) {
        fprintf(stderr, "loom sim: %s\n", err.msg);
        goto done;
    }
    double secs = (double)(loom_time_mono_ns() - t0) / 1e9;
    if (sim_output(&a, runs, nruns, dynamic, npod > 1, secs, &err)) {
        fprintf(stderr, "loom sim: %s\n", err.msg);
        goto done;
    }
    ret = LOOM_EXIT_OK;
done:
    for (size_t i = 0; i < nruns; i++) {
        loom_sim_packing_result_free(&runs[i].packing);
        loom_sim_dynamic_result_free(&runs[i].dynamic);
    }
    free(runs);
    if (traces)
        for (size_t i = 0; i < npod; i++)
            loom_sim_trace_free(&traces[i]);
    free(traces);
    loom_sim_trace_free(&wtrace);
    loom_sched_workload_free(&given);
    loom_sched_cluster_free(&cl);
    free(pol_s);
    free(pod_s);
    free(seeds);
    return ret;
}
