/* loom sim --mode dynamic --policy rubick,... — the Rubick experiment
 * (docs/scheduling.md, "Rubick"): builds the workload from a pod list and
 * the zoo, runs each policy on a cluster of H200 nodes, prints the table
 * and writes JCTs, the table and figures under --out. Options only; the
 * work is libloom's (sim/rubick.c, sim/rubick_workload.c). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "loom/sim.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: loom sim --mode dynamic --pods FILE --policy rubick[,NAME...]\n"
            "                [--count 300] [--load 1.0] [--seeds 42] [--plans random|tuned]\n"
            "                [--nodes-count 8] [--node-cpus 96] [--node-memory 1TiB]\n"
            "                [--device NAME] [--reconf-cost 60] [--min-gain 0.05]\n"
            "                [--period 300] [--timeslice 600] [--min-duration 120]\n"
            "                [--max-duration 86400] [--truth drawn|model] [--fit on|off]\n"
            "                [--assumed-eff 1] [--assumed-cpu 1] [--out DIR] [--json]\n\n"
            "Reconfigurable jobs (Rubick): jobs from the pod list's arrivals and run times\n"
            "with zoo models and plans, on nodes of 8 GPUs described by --device.\n\n"
            "  --pods FILE|NAME   Alibaba 2023 pod list CSV, or a shipped one (openb-default)\n"
            "  --policy NAMES     rubick, elastic (Pollux/Sia-like), synergy (Synergy-like),\n"
            "                     fixed, fifo, tiresias, gandiva (loomd's runtime); NAME+plan:\n"
            "                     the same given the best plan at admission (fifo+plan)\n"
            "  --count N          jobs: the first N in creation order (300)\n"
            "  --load X           arrivals compressed to offered GPU time / capacity = X (1.0)\n"
            "  --seeds A-B|A,B    model, GPU count and plan draws (42); several: every policy\n"
            "                     on each seed's workload, and a table of means with 95%%\n"
            "                     intervals over the seeds (--seed N: one seed)\n"
            "  --plans M          asked plans uniform among those that fit (random) or the\n"
            "                     best for the asked GPUs (tuned)\n"
            "  --nodes-count N    nodes of 8 GPUs (8: 64 GPUs)\n"
            "  --node-cpus N      CPUs per node (96)\n"
            "  --node-memory SIZE host memory per node (1TiB)\n"
            "  --device NAME|FILE GPU description: a device loom ships (default h200) or a file\n"
            "  --reconf-cost S    checkpoint + restart + warm-up of a reconfiguration, and\n"
            "                     what a job suspended by tiresias or gandiva pays to resume (60)\n"
            "  --min-gain X       a reconfiguration saves at least X of the time left (0.05)\n"
            "  --period S         re-decide every S seconds besides events (300)\n"
            "  --timeslice S      gandiva's quantum (600)\n"
            "  --min-duration S, --max-duration S  run times clipped (120, 86400)\n"
            "  --truth M          what jobs really run on: drawn per job around the model\n"
            "                     (efficiency, communication 0.67-1.5x, input loading 0.5-2x,\n"
            "                     0-5 ms a micro-batch; default), or the model itself\n"
            "  --fit on|off       policies fit the model to each job's first measured steps\n"
            "                     (on), or predict with the model's constants as they are\n"
            "  --assumed-eff X    the model's GPU efficiencies are X times the truth's (1)\n"
            "  --assumed-cpu X    the model's input-loading CPU time is X times the truth's (1)\n"
            "  --out DIR          table.md, jct.csv and figures (gnuplot) of the first seed\n"
            "  --json             every run and the means with 95%% intervals, as JSON\n");
}

typedef struct args {
    const char *pods, *policy, *device, *out, *seeds;
    bool json;
    loom_sim_rwl_opts_t wl;
    loom_rubick_opts_t ro;
    int nodes;
    double period, timeslice;
} args_t;

static int num(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*s == '\0' || *end || errno || !(v >= lo && v <= hi)) {
        fprintf(stderr, "loom sim: --%s '%s': expected a number in [%g, %g]\n", opt, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse(int argc, char **argv, args_t *a)
{
    static const struct option opts[] = {
        {"pods", required_argument, NULL, 'p'},
        {"policy", required_argument, NULL, 'P'},
        {"mode", required_argument, NULL, 'm'},
        {"count", required_argument, NULL, 'n'},
        {"load", required_argument, NULL, 'l'},
        {"seed", required_argument, NULL, 's'},
        {"seeds", required_argument, NULL, 'S'},
        {"json", no_argument, NULL, 'j'},
        {"truth", required_argument, NULL, 'u'},
        {"fit", required_argument, NULL, 'f'},
        {"assumed-eff", required_argument, NULL, 'E'},
        {"assumed-cpu", required_argument, NULL, 'C'},
        {"plans", required_argument, NULL, 'a'},
        {"nodes-count", required_argument, NULL, 'N'},
        {"node-cpus", required_argument, NULL, 'c'},
        {"node-memory", required_argument, NULL, 'M'},
        {"device", required_argument, NULL, 'd'},
        {"reconf-cost", required_argument, NULL, 'r'},
        {"min-gain", required_argument, NULL, 'g'},
        {"period", required_argument, NULL, 'T'},
        {"timeslice", required_argument, NULL, 't'},
        {"min-duration", required_argument, NULL, 'i'},
        {"max-duration", required_argument, NULL, 'x'},
        {"out", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    double v;
    int c, bad = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1 && !bad) {
        switch (c) {
        case 'p': a->pods = optarg; break;
        case 'P': a->policy = optarg; break;
        case 'm':
            if (strcmp(optarg, "dynamic") != 0) {
                fprintf(stderr, "loom sim: --policy rubick runs in --mode dynamic only\n");
                bad = 1;
            }
            break;
        case 'n':
            bad = num("count", optarg, 1, 100000, &v);
            a->wl.count = (size_t)v;
            break;
        case 'l': bad = num("load", optarg, 0.01, 100, &a->wl.load); break;
        case 's':
            bad = num("seed", optarg, 0, 1e15, &v);
            a->seeds = optarg;
            break;
        case 'S': a->seeds = optarg; break;
        case 'j': a->json = true; break;
        case 'u':
            a->wl.truth_drawn = strcmp(optarg, "drawn") == 0;
            if (!a->wl.truth_drawn && strcmp(optarg, "model") != 0) {
                fprintf(stderr, "loom sim: --truth '%s': expected drawn or model\n", optarg);
                bad = 1;
            }
            break;
        case 'f':
            a->wl.fit = strcmp(optarg, "on") == 0;
            if (!a->wl.fit && strcmp(optarg, "off") != 0) {
                fprintf(stderr, "loom sim: --fit '%s': expected on or off\n", optarg);
                bad = 1;
            }
            break;
        case 'E': bad = num("assumed-eff", optarg, 0.01, 100, &a->wl.assumed_eff); break;
        case 'C': bad = num("assumed-cpu", optarg, 0.01, 100, &a->wl.assumed_cpu); break;
        case 'a':
            a->wl.tuned = strcmp(optarg, "tuned") == 0;
            if (!a->wl.tuned && strcmp(optarg, "random") != 0) {
                fprintf(stderr, "loom sim: --plans '%s': expected random or tuned\n", optarg);
                bad = 1;
            }
            break;
        case 'N':
            bad = num("nodes-count", optarg, 1, 4096, &v);
            a->nodes = (int)v;
            break;
        case 'c':
            bad = num("node-cpus", optarg, 1, 4096, &v);
            a->wl.node_cpu_milli = (int64_t)(v * 1000);
            break;
        case 'M': {
            uint64_t b;
            loom_err_t e;
            if (loom_parse_size(optarg, &b, &e) || b < (1u << 30)) {
                fprintf(stderr, "loom sim: --node-memory '%s': expected a size of 1GiB or more\n",
                        optarg);
                bad = 1;
            }
            a->wl.node_mem_mib = (int64_t)(b >> 20);
            break;
        }
        case 'd': a->device = optarg; break;
        case 'r': bad = num("reconf-cost", optarg, 0.001, 1e6, &a->ro.reconf_cost_s); break;
        case 'g': bad = num("min-gain", optarg, 0, 0.99, &a->ro.min_gain); break;
        case 'T': bad = num("period", optarg, 1, 1e7, &a->period); break;
        case 't': bad = num("timeslice", optarg, 1, 1e7, &a->timeslice); break;
        case 'i': bad = num("min-duration", optarg, 1, 1e9, &a->wl.min_s); break;
        case 'x': bad = num("max-duration", optarg, 1, 1e9, &a->wl.max_s); break;
        case 'o': a->out = optarg; break;
        case 'h': usage(stdout); return 1;
        default: loom_cli_bad_option("sim", c, argv[optind - 1]); return -1;
        }
    }
    if (bad)
        return -1;
    if (!a->pods || !a->policy || optind < argc) {
        fprintf(stderr, "loom sim: need --pods and --policy (see --policy rubick --help)\n");
        return -1;
    }
    return 0;
}

static void defaults(args_t *a)
{
    memset(a, 0, sizeof *a);
    a->device = "h200";
    a->seeds = "42";
    a->wl = (loom_sim_rwl_opts_t){.count = 300,
                                  .load = 1.0,
                                  .seed = 42,
                                  .min_s = 120,
                                  .max_s = 86400,
                                  .node_cpu_milli = 96000,
                                  .node_mem_mib = 1048576,
                                  .truth_drawn = true,
                                  .assumed_eff = 1,
                                  .assumed_cpu = 1,
                                  .fit = true};
    a->ro = (loom_rubick_opts_t){.reconf_cost_s = 60, .min_gain = 0.05};
    a->nodes = 8;
    a->period = 300;
    a->timeslice = 600;
}

static int setup(args_t *a, loom_rubick_device_t *dev, loom_sched_cluster_t *c,
                 loom_sim_trace_t *pods, loom_err_t *err)
{
    int rc = loom_rubick_device_load(a->device, dev, err);
    if (rc)
        return rc;
    a->wl.device = a->ro.device = dev;
    for (int i = 0; i < a->nodes && !rc; i++) {
        char name[32];
        snprintf(name, sizeof name, "node%d", i);
        rc = loom_sched_cluster_add_node(c, name, a->wl.node_cpu_milli, a->wl.node_mem_mib, 8,
                                         "gpu", (int64_t)(dev->mem_bytes / 1048576), NULL, err);
    }
    if (rc)
        return rc;
    a->wl.cluster_gpus = 8 * a->nodes;
    return loom_sim_tasks_load(a->pods, c, pods, err);
}

#define MAX_POLICIES 24

/* One seed's runs: res[k] for pol[k]; its header and table to b. */
static int one_seed(args_t *a, const loom_sched_cluster_t *c, const loom_sim_trace_t *pods,
                    char **pol, size_t np, loom_sim_rresult_t *res, loom_buf_t *b, loom_err_t *err)
{
    loom_sim_rworkload_t w = {0};
    int rc = loom_sim_rubick_workload(pods, &a->wl, &w, err);
    for (size_t k = 0; k < np && !rc; k++) {
        rc = loom_sim_rubick_run(c, &w, pol[k], &a->ro, a->period, a->timeslice, &res[k], err);
        if (rc)
            loom_err_prefix(err, "%s", pol[k]);
    }
    if (!rc) {
        loom_buf_appendf(b,
                         "%zu jobs, %d GPUs, load %.2f (arrivals / %.1f), plans %s, seed %llu, "
                         "truth %s (assumed efficiency x%g, input loading x%g), fit %s\n\n",
                         w.n, 8 * a->nodes, a->wl.load, w.compress,
                         a->wl.tuned ? "tuned" : "random", (unsigned long long)a->wl.seed,
                         a->wl.truth_drawn ? "drawn" : "model", a->wl.assumed_eff,
                         a->wl.assumed_cpu, a->wl.fit ? "on" : "off");
        loom_buf_appendf(
            b,
            "At admission, the best plan would make the asked GPUs %.2fx faster "
            "(mean), with CPUs too %.2fx; %zu jobs wait on input loading as asked.\n\n",
            w.plan_speedup, w.cpu_speedup, w.input_bound);
        loom_sim_rubick_table(b, (const char *const *)pol, res, np);
    }
    loom_sim_rubick_workload_free(&w);
    return rc;
}

/* The figures a run reports, in hours where they are times. */
enum { F_JCT, F_P99, F_MAKESPAN, F_UTIL, F_RECONF, F_BELOW, F_GPUH, F_RJCT, F_RMK, NF };
static const char *const fnames[NF] = {"avg_jct_h", "p99_jct_h",         "makespan_h",
                                       "util_pct",  "reconfigs_per_job", "below_guarantee",
                                       "gpu_hours", "jct_over_first",    "makespan_over_first"};

static double figure(const loom_sim_rresult_t *r, const loom_sim_rresult_t *first, int f)
{
    switch (f) {
    case F_JCT: return r->mean_jct_s / 3600;
    case F_P99: return r->p99_jct_s / 3600;
    case F_MAKESPAN: return r->makespan_s / 3600;
    case F_UTIL: return r->util_pct;
    case F_RECONF: return r->reconfigs_per_job;
    case F_BELOW: return (double)r->below_guarantee;
    case F_GPUH: return r->gpu_hours;
    case F_RJCT: return r->mean_jct_s > 0 ? r->mean_jct_s / first->mean_jct_s : 0;
    default: return r->makespan_s > 0 ? r->makespan_s / first->makespan_s : 0;
    }
}

/* Means and 95% intervals over the seeds (res[s * np + k]), as a table or
 * JSON. */
static void summary(loom_buf_t *b, char **pol, size_t np, const uint64_t *seeds, size_t ns,
                    const loom_sim_rresult_t *res, bool json)
{
    double *x = calloc(ns, sizeof *x);
    if (!x)
        return;
    json_t *root = json ? json_object() : NULL, *jp = json ? json_object() : NULL;
    if (!json)
        loom_buf_appendf(
            b,
            "Means over %zu seeds with 95%% intervals (t); ratios are each policy's over %s's, "
            "seed by seed:\n\n| policy | avg JCT (h) | p99 JCT (h) | makespan (h) | GPU-hours | "
            "reconfigurations / job | below guarantee (sum) | avg JCT / %s's | makespan / %s's "
            "|\n|---|---|---|---|---|---|---|---|---|\n",
            ns, pol[0], pol[0], pol[0]);
    for (size_t k = 0; k < np; k++) {
        double m[NF], h[NF];
        for (int f = 0; f < NF; f++) {
            for (size_t s = 0; s < ns; s++)
                x[s] = figure(&res[s * np + k], &res[s * np], f);
            loom_stats_mean_ci95(x, ns, &m[f], &h[f]);
        }
        if (!json) {
            loom_buf_appendf(
                b,
                "| %s | %.2f ± %.2f | %.2f ± %.2f | %.2f ± %.2f | %.0f ± %.0f | %.2f | "
                "%.0f | %.2f ± %.2f | %.2f ± %.2f |\n",
                pol[k], m[F_JCT], h[F_JCT], m[F_P99], h[F_P99], m[F_MAKESPAN], h[F_MAKESPAN],
                m[F_GPUH], h[F_GPUH], m[F_RECONF], m[F_BELOW] * (double)ns, m[F_RJCT], h[F_RJCT],
                m[F_RMK], h[F_RMK]);
            continue;
        }
        json_t *o = json_object(), *runs = json_array();
        for (int f = 0; f < NF; f++) { /* one seed: no interval (null) */
            json_t *mh = json_object();
            json_object_set_new(mh, "mean", json_real(m[f]));
            json_object_set_new(mh, "ci95", isfinite(h[f]) ? json_real(h[f]) : json_null());
            json_object_set_new(o, fnames[f], mh);
        }
        for (size_t s = 0; s < ns; s++) {
            const loom_sim_rresult_t *r = &res[s * np + k];
            json_t *one = json_pack("{s:I,s:I,s:I}", "seed", (json_int_t)seeds[s], "jobs",
                                    (json_int_t)r->jobs, "completed", (json_int_t)r->completed);
            for (int f = 0; f < F_RJCT; f++)
                json_object_set_new(one, fnames[f], json_real(figure(r, &res[s * np], f)));
            json_array_append_new(runs, one);
        }
        json_object_set_new(o, "runs", runs);
        json_object_set_new(jp, pol[k], o);
    }
    if (json) {
        json_t *js = json_array();
        for (size_t s = 0; s < ns; s++)
            json_array_append_new(js, json_integer((json_int_t)seeds[s]));
        json_object_set_new(root, "seeds", js);
        json_object_set_new(root, "policies", jp);
        char *t = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (t)
            loom_buf_appendf(b, "%s\n", t);
        free(t);
        json_decref(root);
    }
    free(x);
}

int loom_cmd_sim_rubick(int argc, char **argv)
{
    args_t a;
    defaults(&a);
    int p = parse(argc, argv, &a);
    if (p)
        return p > 0 ? LOOM_EXIT_OK : LOOM_EXIT_USAGE;
    uint64_t *seeds = NULL;
    size_t ns = 0;
    if (loom_cli_parse_seeds(a.seeds, &seeds, &ns)) {
        fprintf(stderr, "loom sim: --seeds '%s': expected N, A-B or a comma-separated list\n",
                a.seeds);
        return LOOM_EXIT_USAGE;
    }
    char *pol_s = strdup(a.policy), *pol[MAX_POLICIES], *save = NULL;
    size_t np = 0;
    for (char *t = pol_s ? strtok_r(pol_s, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
        if (np == MAX_POLICIES) {
            fprintf(stderr, "loom sim: --policy: more than %d policies\n", MAX_POLICIES);
            free(pol_s);
            free(seeds);
            return LOOM_EXIT_USAGE;
        }
        pol[np++] = t;
    }
    loom_rubick_device_t dev;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    loom_sim_trace_t pods = {0};
    loom_sim_rresult_t *res = calloc(ns * (np ? np : 1), sizeof *res);
    loom_err_t err;
    loom_buf_t b = LOOM_BUF_INIT;
    int ret = LOOM_EXIT_INPUT, rc = res ? setup(&a, &dev, &c, &pods, &err)
                                        : loom_err_set(&err, LOOM_ENOMEM, "out of memory");
    for (size_t s = 0; s < ns && !rc; s++) {
        a.wl.seed = seeds[s];
        loom_buf_t one = LOOM_BUF_INIT;
        rc = one_seed(&a, &c, &pods, pol, np, &res[s * np], &one, &err);
        if (!a.json && one.data)
            loom_buf_appendf(&b, "%s%s", s ? "\n" : "", one.data);
        loom_buf_free(&one);
    }
    if (!rc) {
        if (ns > 1 || a.json) {
            if (!a.json)
                loom_buf_append_str(&b, "\n");
            summary(&b, pol, np, seeds, ns, res, a.json);
        }
        fputs(b.data ? b.data : "", stdout);
        ret = LOOM_EXIT_OK;
        /* the first seed's report */
        if (a.out && (rc = loom_sim_rubick_report(a.out, (const char *const *)pol, res, np, &err)))
            ret = LOOM_EXIT_FAILURE;
    }
    if (rc)
        fprintf(stderr, "loom sim: %s\n", err.msg);
    for (size_t k = 0; res && k < ns * np; k++)
        loom_sim_rresult_free(&res[k]);
    free(res);
    loom_buf_free(&b);
    loom_sim_trace_free(&pods);
    loom_sched_cluster_free(&c);
    free(pol_s);
    free(seeds);
    return ret;
}
