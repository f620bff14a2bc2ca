/* sim/run.c — many independent runs (policy x seed x trace) on a few
 * threads. Runs share the read-only cluster and traces; each run copies the
 * cluster, so threads never touch common mutable state. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "loom/sim.h"

typedef struct pool {
    const loom_sched_cluster_t *c;
    loom_sim_run_t *runs;
    size_t n;
    bool dynamic;
    const loom_sim_opts_t *o;
    atomic_size_t next;
} pool_t;

static void *worker(void *arg)
{
    pool_t *p = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n)
            break;
        loom_sim_run_t *r = &p->runs[i];
        loom_sim_opts_t o = *p->o;
        o.policy = r->policy;
        o.seed = r->seed;
        o.workload = r->workload;
        loom_err_clear(&r->err);
        if (p->dynamic)
            r->rc = loom_sim_dynamic(p->c, r->trace, &o, &r->dynamic, &r->err);
        else
            r->rc = loom_sim_packing(p->c, r->trace, &o, &r->packing, &r->err);
    }
    return NULL;
}

int loom_sim_run_all(const loom_sched_cluster_t *c, loom_sim_run_t *runs, size_t n, int threads,
                     bool dynamic, const loom_sim_opts_t *o, loom_err_t *err)
{
    pool_t p = {c, runs, n, dynamic, o, 0};
    if (threads < 1)
        threads = 1;
    if ((size_t)threads > n)
        threads = n ? (int)n : 1;
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    if (!tids)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    int started = 0;
    for (int i = 1; i < threads; i++) {
        if (pthread_create(&tids[i], NULL, worker, &p) != 0)
            break;
        started++;
    }
    worker(&p); /* this thread works too */
    for (int i = 1; i <= started; i++)
        pthread_join(tids[i], NULL);
    free(tids);
    for (size_t i = 0; i < n; i++) {
        if (runs[i].rc) {
            loom_err_set(err, runs[i].rc, "%s seed %llu on %s: %s", runs[i].policy,
                         (unsigned long long)runs[i].seed,
                         runs[i].trace_name ? runs[i].trace_name : "trace", runs[i].err.msg);
            return runs[i].rc;
        }
    }
    return LOOM_OK;
}
