/* loom sim --mode dynamic --policy rubick,... — the Rubick experiment
 * (docs/scheduling.md, "Rubick"): builds the workload from a pod list and
 * the zoo, runs each policy on a cluster of H200 nodes, prints the table
 * and writes JCTs, the table and figures under --out. Options only; the
 * work is libloom's (sim/rubick.c, sim/rubick_workload.c). */
#include <errno.h>
#include <getopt.h>
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
            "                [--count 300] [--load 1.0] [--seed 42] [--plans random|tuned]\n"
            "                [--nodes-count 8] [--node-cpus 96] [--node-memory 1TiB]\n"
            "                [--device NAME] [--reconf-cost 60] [--min-gain 0.05]\n"
            "                [--period 300] [--timeslice 600] [--min-duration 120]\n"
            "                [--max-duration 86400] [--out DIR]\n\n"
            "Reconfigurable jobs (Rubick): jobs from the pod list's arrivals and run times\n"
            "with zoo models and plans, on nodes of 8 GPUs described by --device.\n\n"
            "  --pods FILE|NAME   Alibaba 2023 pod list CSV, or a shipped one (openb-default)\n"
            "  --policy NAMES     rubick, elastic (Pollux/Sia-like), synergy (Synergy-like),\n"
            "                     fixed, fifo, tiresias, gandiva (loomd's runtime)\n"
            "  --count N          jobs: the first N in creation order (300)\n"
            "  --load X           arrivals compressed to offered GPU time / capacity = X (1.0)\n"
            "  --seed N           model, GPU count and plan draws (42)\n"
            "  --plans M          asked plans uniform among those that fit (random) or the\n"
            "                     best for the asked GPUs (tuned)\n"
            "  --nodes-count N    nodes of 8 GPUs (8: 64 GPUs)\n"
            "  --node-cpus N      CPUs per node (96)\n"
            "  --node-memory SIZE host memory per node (1TiB)\n"
            "  --device NAME|FILE GPU description: a device loom ships (default h200) or a file\n"
            "  --reconf-cost S    checkpoint + restart + warm-up of a reconfiguration (60)\n"
            "  --min-gain X       a reconfiguration saves at least X of the time left (0.05)\n"
            "  --period S         re-decide every S seconds besides events (300)\n"
            "  --timeslice S      gandiva's quantum (600)\n"
            "  --min-duration S, --max-duration S  run times clipped (120, 86400)\n"
            "  --out DIR          table.md, jct.csv and figures (gnuplot)\n");
}

typedef struct args {
    const char *pods, *policy, *device, *out;
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
            a->wl.seed = (uint64_t)v;
            break;
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
    a->wl = (loom_sim_rwl_opts_t){.count = 300,
                                  .load = 1.0,
                                  .seed = 42,
                                  .min_s = 120,
                                  .max_s = 86400,
                                  .node_cpu_milli = 96000,
                                  .node_mem_mib = 1048576};
    a->ro = (loom_rubick_opts_t){.reconf_cost_s = 60, .min_gain = 0.05};
    a->nodes = 8;
    a->period = 300;
    a->timeslice = 600;
}

static int setup(args_t *a, loom_rubick_device_t *dev, loom_sched_cluster_t *c,
                 loom_sim_rworkload_t *w, loom_err_t *err)
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
    loom_sim_trace_t pods = {0};
    if ((rc = loom_sim_tasks_load(a->pods, c, &pods, err)) == LOOM_OK)
        rc = loom_sim_rubick_workload(&pods, &a->wl, w, err);
    loom_sim_trace_free(&pods);
    return rc;
}

int loom_cmd_sim_rubick(int argc, char **argv)
{
    args_t a;
    defaults(&a);
    int p = parse(argc, argv, &a);
    if (p)
        return p > 0 ? LOOM_EXIT_OK : LOOM_EXIT_USAGE;
    char *pol_s = strdup(a.policy), *pol[16], *save = NULL;
    size_t np = 0;
    for (char *t = pol_s ? strtok_r(pol_s, ",", &save) : NULL; t && np < 16;
         t = strtok_r(NULL, ",", &save))
        pol[np++] = t;
    loom_rubick_device_t dev;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    loom_sim_rworkload_t w = {0};
    loom_sim_rresult_t res[16] = {{0}};
    loom_err_t err;
    int ret = LOOM_EXIT_INPUT, rc = setup(&a, &dev, &c, &w, &err);
    for (size_t k = 0; k < np && !rc; k++) {
        rc = loom_sim_rubick_run(&c, &w, pol[k], &a.ro, a.period, a.timeslice, &res[k], &err);
        if (rc)
            loom_err_prefix(&err, "%s", pol[k]);
    }
    if (!rc) {
        loom_buf_t b = LOOM_BUF_INIT;
        loom_buf_appendf(&b,
                         "%zu jobs, %d GPUs, load %.2f (arrivals / %.1f), plans %s, seed %llu\n\n",
                         w.n, 8 * a.nodes, a.wl.load, w.compress, a.wl.tuned ? "tuned" : "random",
                         (unsigned long long)a.wl.seed);
        loom_sim_rubick_table(&b, (const char *const *)pol, res, np);
        fputs(b.data ? b.data : "", stdout);
        loom_buf_free(&b);
        ret = LOOM_EXIT_OK;
        if (a.out && (rc = loom_sim_rubick_report(a.out, (const char *const *)pol, res, np, &err)))
            ret = LOOM_EXIT_FAILURE;
    }
    if (rc)
        fprintf(stderr, "loom sim: %s\n", err.msg);
    for (size_t k = 0; k < np; k++)
        loom_sim_rresult_free(&res[k]);
    loom_sim_rubick_workload_free(&w);
    loom_sched_cluster_free(&c);
    free(pol_s);
    return ret;
}
