/* bench/vs_slurm_sim — each job's first start in `loom sim --mode dynamic`,
 * for bench/vs_slurm's per-job figures (the longest wait of the jobs that
 * ask 4 or more GPUs), which loom sim's report does not give.
 *
 *   build/bench_vs_slurm_sim NODES.csv TRACE.jsonl QUEUE BACKFILL PLACEMENT
 *
 * Runs loom_sim_dynamic with the options `loom sim --mode dynamic --queue
 * QUEUE --backfill BACKFILL --policy PLACEMENT --ties first` gives it (seed
 * 42, loom sim's default time limit, no compression) and prints one line per start,
 * "NAME ARRIVAL_S START_S", in the order of the starts (a job Tiresias
 * resumes starts again: the first line of a name is its first start).
 * `make bench` runs every build/bench_* with --out DIR: this helper then
 * does nothing (bench/vs_slurm.sh, run by make bench too, calls it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/runtime.h"
#include "loom/sim.h"

typedef struct starts {
    const loom_sim_trace_t *t;
} starts_t;

static void on_start(void *ctx, size_t task, double t_s, const loom_sched_alloc_t *a)
{
    (void)a;
    const starts_t *s = ctx;
    printf("%s %.3f %.3f\n", s->t->tasks[task].name, s->t->tasks[task].create_s, t_s);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--out") == 0)
        return 0; /* make bench: see above */
    if (argc != 6) {
        fprintf(stderr,
                "usage: bench_vs_slurm_sim NODES.csv TRACE.jsonl QUEUE BACKFILL PLACEMENT\n");
        return 2;
    }
    loom_err_t err;
    loom_runtime_backfill_t bf;
    if (loom_runtime_backfill_parse(argv[4], &bf, &err) != LOOM_OK) {
        fprintf(stderr, "bench_vs_slurm_sim: %s\n", err.msg);
        return 2;
    }
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    loom_sim_trace_t t = {0};
    if (loom_sim_nodes_load(argv[1], &c, &err) || loom_sim_tasks_load(argv[2], &c, &t, &err)) {
        fprintf(stderr, "bench_vs_slurm_sim: %s\n", err.msg);
        loom_sim_trace_free(&t);
        loom_sched_cluster_free(&c);
        return 1;
    }
    starts_t s = {&t};
    loom_sim_opts_t o = {.policy = argv[5],
                         .queue = argv[3],
                         .backfill = (int)bf,
                         .seed = 42, /* loom sim's default seed */
                         .ties = LOOM_SCHED_TIES_FIRST,
                         .on_start = on_start,
                         .on_start_ctx = &s};
    loom_sim_dynamic_result_t res;
    int rc = loom_sim_dynamic(&c, &t, &o, &res, &err);
    if (rc)
        fprintf(stderr, "bench_vs_slurm_sim: %s\n", err.msg);
    else
        loom_sim_dynamic_result_free(&res);
    loom_sim_trace_free(&t);
    loom_sched_cluster_free(&c);
    return rc ? 1 : 0;
}
