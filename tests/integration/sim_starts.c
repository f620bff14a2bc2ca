/* sim_starts: the starts of a dynamic simulation, one line each, for the
 * live/simulated agreement test (test_runtime_agree.py).
 *
 *   sim_starts NODES.csv TRACE.jsonl QUEUE PLACEMENT COMPRESS
 *
 * Runs loom_sim_dynamic (the runtime's step in virtual time) with ties
 * broken as loomd breaks them (lowest node first), arrival times and run
 * times divided by COMPRESS, and prints "NAME START_S NODE GPU,GPU,..." in
 * the order the jobs started. */
#include <stdio.h>
#include <stdlib.h>

#include "loom/sim.h"

typedef struct starts {
    const loom_sched_cluster_t *c;
    const loom_sim_trace_t *t;
} starts_t;

static void on_start(void *ctx, size_t task, double t_s, const loom_sched_alloc_t *a)
{
    const starts_t *s = ctx;
    printf("%s %.3f %s ", s->t->tasks[task].name, t_s, s->c->nodes[a->node].name);
    for (int g = 0; g < a->ngpus; g++)
        printf("%s%d", g ? "," : "", a->gpus[g]);
    printf("\n");
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: sim_starts NODES.csv TRACE.jsonl QUEUE PLACEMENT COMPRESS\n");
        return 2;
    }
    double compress = atof(argv[5]);
    if (compress <= 0) {
        fprintf(stderr, "sim_starts: COMPRESS '%s': expected a number > 0\n", argv[5]);
        return 2;
    }
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    loom_sim_trace_t t = {0};
    loom_err_t err;
    if (loom_sim_nodes_load(argv[1], &c, &err) || loom_sim_tasks_load(argv[2], &c, &t, &err)) {
        fprintf(stderr, "sim_starts: %s\n", err.msg);
        return 1;
    }
    for (size_t i = 0; i < t.n; i++)
        if (t.tasks[i].duration_s > 0)
            t.tasks[i].duration_s /= compress;
    starts_t s = {&c, &t};
    loom_sim_opts_t o = {.policy = argv[4],
                         .queue = argv[3],
                         .compress = compress,
                         .ties = LOOM_SCHED_TIES_FIRST,
                         .debug_check = true,
                         .on_start = on_start,
                         .on_start_ctx = &s};
    loom_sim_dynamic_result_t res;
    int rc = loom_sim_dynamic(&c, &t, &o, &res, &err);
    if (rc)
        fprintf(stderr, "sim_starts: %s\n", err.msg);
    loom_sim_dynamic_result_free(&res);
    loom_sim_trace_free(&t);
    loom_sched_cluster_free(&c);
    return rc ? 1 : 0;
}
