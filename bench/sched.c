/* bench/sched — placement latency per decision, for each policy, with
 * 10,000 pending jobs on 1,000 nodes of 8 GPUs; and the cost of ordering
 * the 10,000-job queue.
 *
 * Jobs are drawn from the Alibaba 2023 default pod list when it is found
 * (shipped in workloads/traces), else from a fixed synthetic mix. The
 * cluster starts half full; every decision is applied, and when the
 * cluster passes 90% GPU allocation (or a job fits nowhere) random running
 * jobs are freed, so FGD's caches see a realistic stream of changed nodes.
 * Only loom_sched_place is timed.
 *
 *   build/bench_sched [--out DIR] [--jobs N] [--nodes N]
 * writes DIR/sched.md (default /tmp/loom-bench; make bench: docs/bench). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "loom/sim.h"
#include "notes.h"
#include "sched_setup.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The jobs when the pod list is missing: 64 tasks cycling through these. */
static const loom_sched_req_t mix[] = {
    {3152, 0, 1, 810, 0, 0},   {11300, 0, 1, 1000, 0, 0}, {11908, 0, 1, 470, 0, 0},
    {12500, 0, 0, 0, 0, 0},    {4000, 0, 1, 320, 0, 0},   {18708, 0, 1, 1000, 0, 0},
    {24000, 0, 2, 1000, 0, 0}, {48000, 0, 4, 1000, 0, 0}, {88000, 0, 8, 1000, 0, 0},
};

int main(int argc, char **argv)
{
    const char *out = BENCH_OUT_DEFAULT;
    int njobs = 10000, nnodes = 1000;
    if (!bench_sched_opts(argc, argv, &out, &njobs, &nnodes, NULL))
        return 2;
    bench_out_dir(out);
    loom_sched_cluster_t cl;
    bench_sched_cluster(&cl, nnodes);
    /* the job stream */
    loom_sim_trace_t trace = {0};
    const char *source = bench_sched_trace(&cl, &trace, mix, sizeof mix / sizeof mix[0], 64);
    loom_rng_t rng;
    loom_rng_init(&rng, 42, 3);
    loom_sched_req_t *pending = malloc((size_t)njobs * sizeof *pending);
    for (int i = 0; i < njobs; i++)
        pending[i] = trace.tasks[loom_rng_below(&rng, trace.n)].req;
    loom_sched_req_t *reqs = malloc(trace.n * sizeof *reqs);
    for (size_t i = 0; i < trace.n; i++)
        reqs[i] = trace.tasks[i].req;
    loom_sched_workload_t wl;
    loom_sched_workload_learn(reqs, trace.n, 0.95, &wl, NULL);
    free(reqs);

    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    struct utsname un;
    uname(&un);
    char cpu[256];
    bench_cpu_model(cpu, sizeof cpu);
    loom_buf_t md = LOOM_BUF_INIT;
    loom_buf_appendf(&md,
                     "# bench/sched — placement latency per decision\n\n"
                     "Command: `build/bench_sched --out docs/bench` (also `make bench`)  \n"
                     "Date: %s  \nMachine: %s, %ld CPUs, %s %s  \n"
                     "Note: on a shared machine other programs' work raises these figures: "
                     "read them as upper bounds.\n\n"
                     "Setup: %d nodes of 8 GPUs (96 CPUs each), %d pending jobs drawn from %s; "
                     "the cluster starts half full and every decision is applied (random jobs "
                     "are freed above 90%% GPU allocation). Only `loom_sched_place` is timed; "
                     "scores as the published simulator computes them, ties in a seeded order.\n\n"
                     "| policy | mean µs/decision | p50 µs | p99 µs | max µs | placed |\n"
                     "|---|---:|---:|---:|---:|---:|\n",
                     date, cpu, sysconf(_SC_NPROCESSORS_ONLN), un.sysname, un.release, nnodes,
                     njobs, source);
    printf("%-12s %10s %8s %8s %8s\n", "policy", "mean us", "p50", "p99", "max");
    const char *policies[] = {"firstfit", "random",     "bestfit", "dotprod",
                              "packing",  "clustering", "fgd",     "fgd-cpu"};
    int64_t *lat = malloc((size_t)njobs * sizeof *lat);
    loom_sched_alloc_t *live = malloc(((size_t)njobs + (size_t)nnodes * 64) * sizeof *live);
    for (size_t k = 0; k < sizeof policies / sizeof policies[0]; k++) {
        loom_sched_cluster_reset(&cl);
        loom_sched_placer_opts_t po = {42, &wl, false, LOOM_SCHED_TIES_ORDER};
        loom_sched_placer_t *p;
        loom_err_t err;
        if (loom_sched_placer_new(policies[k], &cl, &po, &p, &err)) {
            fprintf(stderr, "bench_sched: %s\n", err.msg);
            return 1;
        }
        size_t nlive = 0;
        loom_rng_t r2;
        loom_rng_init(&r2, 7, k);
        /* half full, with the same policy */
        while (cl.gpu_milli_used * 2 < cl.gpu_milli_total) {
            loom_sched_req_t q = trace.tasks[loom_rng_below(&r2, trace.n)].req;
            loom_sched_alloc_t a;
            if (loom_sched_place(p, &cl, &q, &a) == LOOM_OK &&
                loom_sched_alloc(&cl, a.node, &q, a.gpus, a.ngpus, &a, NULL) == LOOM_OK)
                live[nlive++] = a;
        }
        int placed = 0;
        for (int i = 0; i < njobs; i++) {
            loom_sched_alloc_t a;
            int64_t t0 = loom_time_mono_ns();
            int rc = loom_sched_place(p, &cl, &pending[i], &a);
            lat[i] = loom_time_mono_ns() - t0;
            if (rc == LOOM_OK &&
                loom_sched_alloc(&cl, a.node, &pending[i], a.gpus, a.ngpus, &a, NULL) == LOOM_OK) {
                live[nlive++] = a;
                placed++;
            }
            while (nlive > 0 &&
                   (rc != LOOM_OK || cl.gpu_milli_used * 10 > cl.gpu_milli_total * 9)) {
                size_t v = (size_t)loom_rng_below(&r2, nlive);
                loom_sched_free(&cl, &live[v], NULL);
                live[v] = live[--nlive];
                rc = LOOM_OK;
            }
        }
        loom_sched_placer_free(p);
        int64_t sum = 0;
        for (int i = 0; i < njobs; i++)
            sum += lat[i];
        qsort(lat, (size_t)njobs, sizeof *lat, cmp_i64);
        double mean = (double)sum / njobs / 1e3, p50 = (double)lat[njobs / 2] / 1e3,
               p99 = (double)lat[(size_t)(0.99 * (njobs - 1))] / 1e3,
               mx = (double)lat[njobs - 1] / 1e3;
        printf("%-12s %10.1f %8.1f %8.1f %8.1f\n", policies[k], mean, p50, p99, mx);
        loom_buf_appendf(&md, "| %s | %.1f | %.1f | %.1f | %.1f | %d |\n", policies[k], mean, p50,
                         p99, mx, placed);
    }
    /* ordering the pending queue */
    loom_sched_qjob_t *q = calloc((size_t)njobs, sizeof *q);
    loom_sched_qjob_t **qp = calloc((size_t)njobs, sizeof *qp);
    loom_buf_appendf(&md,
                     "\nOrdering the %d-job queue (`loom_sched_queue_order`):\n\n"
                     "| queue policy | ms per ordering |\n|---|---:|\n",
                     njobs);
    const char *queues[] = {"fifo", "sjf", "priority", "tiresias"};
    for (int k = 0; k < 4; k++) {
        loom_sched_queue_cfg_t cfg;
        loom_sched_queue_cfg_parse(queues[k], &cfg, NULL);
        int64_t total = 0;
        const int reps = 20;
        for (int rep = 0; rep < reps; rep++) {
            for (int i = 0; i < njobs; i++) {
                q[i] = (loom_sched_qjob_t){.id = (uint64_t)i,
                                           .submit_s = loom_rng_uniform(&rng) * 1e5,
                                           .priority = (int)loom_rng_below(&rng, 10),
                                           .estimate_s = loom_rng_uniform(&rng) * 1e4,
                                           .attained_gpu_s = loom_rng_uniform(&rng) * 1e4,
                                           .wait_since_s = loom_rng_uniform(&rng) * 1e5,
                                           .last_run_s = loom_rng_uniform(&rng) * 1e3};
                qp[i] = &q[i];
            }
            int64_t t0 = loom_time_mono_ns();
            loom_sched_queue_order(&cfg, qp, (size_t)njobs, 2e5);
            total += loom_time_mono_ns() - t0;
        }
        double ms = (double)total / reps / 1e6;
        printf("queue %-8s %8.2f ms\n", queues[k], ms);
        loom_buf_appendf(&md, "| %s | %.2f |\n", queues[k], ms);
    }
    char mdpath[4096];
    snprintf(mdpath, sizeof mdpath, "%s/sched.md", out);
    loom_err_t err;
    int rc = loom_write_file_atomic(mdpath, md.data, md.len, 0644, &err);
    if (rc)
        fprintf(stderr, "bench_sched: %s\n", err.msg);
    else
        printf("wrote %s\n", mdpath);
    loom_buf_free(&md);
    free(q);
    free(qp);
    free(lat);
    free(live);
    free(pending);
    loom_sched_workload_free(&wl);
    loom_sim_trace_free(&trace);
    loom_sched_cluster_free(&cl);
    return rc ? 1 : 0;
}
