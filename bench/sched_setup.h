/* bench/sched_setup.h: the cluster, job stream and machine line that
 * bench/sched and bench/sched_step share: nodes of 8 GPUs (96 CPUs,
 * 768 GiB), jobs from the Alibaba 2023 default pod list loom ships
 * (workloads/traces) or, when it is missing, from each benchmark's synthetic
 * mix. */
#ifndef LOOM_BENCH_SCHED_SETUP_H
#define LOOM_BENCH_SCHED_SETUP_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loom/sim.h"

/* Reads --out DIR, --jobs N, --nodes N and, when reps is not NULL,
 * --reps N over the defaults the caller set. False on an unknown option or
 * a count below 1. */
static inline bool bench_sched_opts(int argc, char **argv, const char **out, int *njobs,
                                    int *nnodes, int *reps)
{
    struct option opts[] = {{"out", required_argument, NULL, 'o'},
                            {"jobs", required_argument, NULL, 'j'},
                            {"nodes", required_argument, NULL, 'n'},
                            {"reps", required_argument, NULL, 'r'},
                            {NULL, 0, NULL, 0}};
    if (!reps)
        opts[3] = opts[4];
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'o')
            *out = optarg;
        else if (c == 'j')
            *njobs = atoi(optarg);
        else if (c == 'n')
            *nnodes = atoi(optarg);
        else if (c == 'r')
            *reps = atoi(optarg);
        else
            return false;
    }
    return *njobs >= 1 && *nnodes >= 1 && (!reps || *reps >= 1);
}

/* nnodes nodes named node-0000 ... of the G2 model. */
static inline void bench_sched_cluster(loom_sched_cluster_t *cl, int nnodes)
{
    loom_sched_cluster_init(cl);
    for (int i = 0; i < nnodes; i++) {
        char name[32];
        snprintf(name, sizeof name, "node-%04d", i);
        loom_sched_cluster_add_node(cl, name, 96000, 786432, 8, "G2", 0, NULL, NULL);
    }
}

/* Loads the pod list into *trace (zeroed by the caller) for cluster cl; when
 * it cannot, trace gets n tasks cycling through mix[0..nmix). Returns what
 * the jobs were drawn from, for the report. */
static inline const char *bench_sched_trace(const loom_sched_cluster_t *cl, loom_sim_trace_t *trace,
                                            const loom_sched_req_t *mix, size_t nmix, size_t n)
{
    if (loom_sim_tasks_load("openb-default", cl, trace, NULL) == LOOM_OK)
        return "the Alibaba 2023 default pod list";
    loom_sim_trace_free(trace);
    trace->tasks = calloc(n, sizeof *trace->tasks);
    if (!trace->tasks) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
    trace->n = trace->cap = n;
    for (size_t i = 0; i < n; i++)
        trace->tasks[i].req = mix[i % nmix];
    return "a synthetic mix (trace not found)";
}

/* The CPU's model name from /proc/cpuinfo, or "unknown". */
static inline void bench_cpu_model(char *cpu, size_t len)
{
    snprintf(cpu, len, "unknown");
    FILE *ci = fopen("/proc/cpuinfo", "r");
    if (!ci)
        return;
    char line[512];
    while (fgets(line, sizeof line, ci)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            snprintf(cpu, len, "%s", colon + 2);
            cpu[strcspn(cpu, "\n")] = '\0';
            break;
        }
    }
    fclose(ci);
}

#endif
