/* Gandiva's mechanisms in loomd's runner (Xiao et al., OSDI'18), as far as a
 * job's processes allow without a framework's help:
 *
 * - Time-slicing (--timeslice Q). When a job cannot be placed, jobs that
 *   have run for at least one quantum since they last (re)started are
 *   suspended (SIGSTOP of their process group, through the shepherd) until
 *   the waiting job fits; their resources go back to the model. Suspended
 *   jobs come first when resources free up: each is resumed on the very GPUs
 *   it holds, and once it has waited a quantum, jobs there that have had
 *   their quantum are suspended in turn. A stopped process keeps its memory
 *   (GPU memory too), so this time-slices compute, not memory: see
 *   docs/running.md.
 *
 * - Packing with introspection (--pack-check). Jobs that share a GPU report
 *   their steps (LOOM_STEP markers on stdout, docs/profiling.md). For each
 *   job the runner keeps its mean step time alone on its GPU and with the
 *   current co-tenants. Once every tenant has a few steps of both, the
 *   packing's normalized throughput is sum(solo step / packed step): above
 *   1 the GPU does more work packed than time-sliced, and packing stays;
 *   below, the newest tenant is suspended and resumed only when its GPU has
 *   no other job. A tenant that never ran alone is probed first: the others
 *   are suspended until it has run a few steps alone, then resumed, and the
 *   packed steps are measured afresh.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/runner_int.h"
#include "loom/prof.h"

#define MIN_STEPS 4          /* steps of each kind before a packing decision */
#define KEEP_THRESHOLD 1.0   /* normalized throughput below which packing is undone */

/* Jobs (not suspended, allocation held) on any GPU that a holds. */
static int tenants(const loomd_runner_t *r, const active_t *a)
{
    int n = 0;
    for (size_t k = 0; k < r->nactive; k++) {
        const active_t *b = &r->active[k];
        if (!b->held || b->alloc.node != a->alloc.node)
            continue;
        bool shares = false;
        for (int i = 0; i < a->alloc.ngpus && !shares; i++)
            for (int j = 0; j < b->alloc.ngpus; j++)
                shares |= a->alloc.gpus[i] == b->alloc.gpus[j];
        n += shares;
    }
    return n;
}

static void record(loomd_runner_t *r, active_t *a, const char *reason)
{
    json_t *run = loomd__run_json(r, a);
    loomd__store_run(r, a->id, LOOM_JOB_RUNNING, -1, reason, run, NULL);
    json_decref(run);
}

int loomd__gandiva_suspend(loomd_runner_t *r, active_t *a, const char *why)
{
    loom_err_t err;
    if (loom_exec_local_suspend(r->local, &a->h, &err) != LOOM_OK)
        return err.code;
    loomd__account(r);
    loom_sched_free(&r->cluster, &a->alloc, NULL);
    a->held = false;
    a->suspended = true;
    a->suspended_ns = loom_time_mono_ns();
    loom_log_info("job suspended", "job=%lld why=\"%s\"", (long long)a->id, why);
    record(r, a, why);
    return LOOM_OK;
}

static bool resume(loomd_runner_t *r, active_t *a)
{
    loom_err_t err;
    loom_sched_alloc_t again;
    loomd__account(r);
    if (loom_sched_alloc(&r->cluster, a->alloc.node, &a->alloc.req, a->alloc.gpus,
                         a->alloc.ngpus, &again, NULL) != LOOM_OK)
        return false;
    if (loom_exec_local_resume(r->local, &a->h, &err) != LOOM_OK) {
        loom_sched_free(&r->cluster, &again, NULL); /* it ended meanwhile: poll records it */
        return false;
    }
    a->alloc = again;
    a->held = true;
    a->suspended = false;
    a->resumed_ns = a->tenancy_since = loom_time_mono_ns();
    a->decided = false;
    loom_log_info("job resumed", "job=%lld", (long long)a->id);
    record(r, a, "resumed");
    return true;
}

/* Would `a` fit on its own GPUs if the jobs in `victims` let go? */
static bool fits_without(loomd_runner_t *r, const active_t *a, active_t **victims, size_t n)
{
    loom_sched_cluster_t c;
    if (loom_sched_cluster_copy(&c, &r->cluster, NULL) != LOOM_OK)
        return false;
    for (size_t i = 0; i < n; i++)
        loom_sched_free(&c, &victims[i]->alloc, NULL);
    loom_sched_alloc_t tmp;
    bool ok = loom_sched_alloc(&c, a->alloc.node, &a->alloc.req, a->alloc.gpus, a->alloc.ngpus,
                               &tmp, NULL) == LOOM_OK;
    loom_sched_cluster_free(&c);
    return ok;
}

static bool had_quantum(const loomd_runner_t *r, const active_t *a, int64_t now)
{
    return r->timeslice_ns > 0 && a->held && !a->suspended && now - a->resumed_ns >= r->timeslice_ns;
}

void loomd__gandiva_resume(loomd_runner_t *r)
{
    int64_t now = loom_time_mono_ns();
    for (size_t i = 0; i < r->nactive; i++) {
        active_t *a = &r->active[i];
        if (!a->suspended)
            continue;
        if (a->probe_for) {
            /* Resume once the probed job has its solo steps, or is gone. */
            const active_t *p = NULL;
            for (size_t k = 0; k < r->nactive; k++)
                if (r->active[k].id == a->probe_for)
                    p = &r->active[k];
            if (p && p->solo_n < MIN_STEPS && p->held)
                continue;
            if (resume(r, a))
                a->probe_for = 0;
            continue;
        }
        if (a->no_pack) {
            /* Packing hurt it: only alone on its GPUs. */
            const loom_sched_node_t *n = &r->cluster.nodes[a->alloc.node];
            bool alone = true;
            for (int g = 0; g < a->alloc.ngpus; g++)
                alone &= n->gpu_free[a->alloc.gpus[g]] == LOOM_SCHED_MILLI;
            if (alone)
                resume(r, a);
            continue;
        }
        if (resume(r, a) || r->timeslice_ns <= 0 || now - a->suspended_ns < r->timeslice_ns)
            continue;
        /* It has waited a quantum: the jobs on its GPUs that have had theirs
         * make way. */
        active_t *victims[64];
        size_t nv = 0;
        for (size_t k = 0; k < r->nactive && nv < 64; k++) {
            active_t *b = &r->active[k];
            if (b == a || !had_quantum(r, b, now) || b->alloc.node != a->alloc.node)
                continue;
            bool overlaps = a->alloc.ngpus == 0; /* a CPU job: anyone on the node */
            for (int ga = 0; ga < a->alloc.ngpus && !overlaps; ga++)
                for (int gb = 0; gb < b->alloc.ngpus; gb++)
                    overlaps |= a->alloc.gpus[ga] == b->alloc.gpus[gb];
            if (overlaps)
                victims[nv++] = b;
        }
        if (nv && fits_without(r, a, victims, nv)) {
            for (size_t k = 0; k < nv; k++)
                loomd__gandiva_suspend(r, victims[k], "suspended for time-slicing");
            resume(r, a);
        }
    }
}

bool loomd__gandiva_make_room(loomd_runner_t *r, const loom_sched_req_t *req)
{
    int64_t now = loom_time_mono_ns();
    /* Longest-running first, until the request fits somewhere. */
    active_t *cand[256];
    size_t nc = 0;
    for (size_t k = 0; k < r->nactive && nc < 256; k++)
        if (had_quantum(r, &r->active[k], now))
            cand[nc++] = &r->active[k];
    for (size_t i = 1; i < nc; i++)
        for (size_t j = i; j > 0 && cand[j]->resumed_ns < cand[j - 1]->resumed_ns; j--) {
            active_t *t = cand[j];
            cand[j] = cand[j - 1];
            cand[j - 1] = t;
        }
    loom_sched_cluster_t c;
    if (!nc || loom_sched_cluster_copy(&c, &r->cluster, NULL) != LOOM_OK)
        return false;
    size_t used = 0;
    bool fits = false;
    while (used < nc && !fits) {
        loom_sched_free(&c, &cand[used++]->alloc, NULL);
        for (size_t n = 0; n < c.nnodes && !fits; n++)
            fits = loom_sched_fits(&c.nodes[n], req);
    }
    loom_sched_cluster_free(&c);
    if (!fits)
        return false;
    for (size_t i = 0; i < used; i++)
        loomd__gandiva_suspend(r, cand[i], "suspended for time-slicing");
    return true;
}

/* Reads new step markers from the job's stdout and adds them to its solo or
 * packed statistics, by its tenancy now. */
static void read_steps(loomd_runner_t *r, active_t *a, int ten)
{
    if (ten != a->tenancy) {
        a->tenancy = ten;
        a->tenancy_since = loom_time_mono_ns();
        a->packed_n = 0;
        a->packed_step_s = 0;
        a->decided = false;
        a->skip = 1; /* the first step after a change may straddle it */
    }
    int fd = open(a->h.stdout_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[8192];
    ssize_t n;
    while ((n = pread(fd, buf, sizeof buf, a->out_off)) > 0) {
        a->out_off += n;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '\n') {
                if (a->partial_len < sizeof a->partial)
                    a->partial[a->partial_len++] = buf[i];
                continue;
            }
            loom_prof_line_kind_t kind;
            loom_prof_step_t st;
            bool step = a->partial_len < sizeof a->partial &&
                        loom_prof_marker_parse(a->partial, a->partial_len, &kind, &st, NULL,
                                               NULL) == LOOM_OK &&
                        kind == LOOM_PROF_LINE_STEP && st.start_ns >= a->tenancy_since;
            if (step && a->skip > 0) {
                a->skip--;
            } else if (step) {
                double d = (st.end_ns - st.start_ns) / 1e9;
                if (ten <= 1) {
                    a->solo_step_s = (a->solo_step_s * a->solo_n + d) / (a->solo_n + 1);
                    a->solo_n++;
                } else {
                    a->packed_step_s = (a->packed_step_s * a->packed_n + d) / (a->packed_n + 1);
                    a->packed_n++;
                }
            }
            a->partial_len = 0;
        }
    }
    close(fd);
}

void loomd__gandiva_introspect(loomd_runner_t *r)
{
    for (size_t i = 0; i < r->nactive; i++)
        if (r->active[i].held && r->active[i].alloc.req.gpu_milli < LOOM_SCHED_MILLI &&
            r->active[i].alloc.ngpus == 1)
            read_steps(r, &r->active[i], tenants(r, &r->active[i]));
    /* One decision per shared GPU and tenancy. */
    for (size_t i = 0; i < r->nactive; i++) {
        active_t *a = &r->active[i];
        if (!a->held || a->tenancy < 2 || a->decided || a->alloc.req.gpu_milli >= LOOM_SCHED_MILLI)
            continue;
        active_t *group[LOOM_SCHED_MILLI];
        size_t ng = 0;
        bool ready = true;
        for (size_t k = 0; k < r->nactive; k++) {
            active_t *b = &r->active[k];
            if (!b->held || b->alloc.node != a->alloc.node || b->alloc.ngpus != 1 ||
                b->alloc.gpus[0] != a->alloc.gpus[0])
                continue;
            group[ng++] = b;
            ready &= b->solo_n >= MIN_STEPS && b->packed_n >= MIN_STEPS;
        }
        if (ng < 2)
            continue;
        if (!ready) {
            /* Everyone has packed steps but someone has never run alone:
             * probe it, the others stepping aside for a few of its steps. */
            active_t *probe = NULL;
            bool packed_enough = true;
            for (size_t k = 0; k < ng; k++) {
                packed_enough &= group[k]->packed_n >= MIN_STEPS;
                if (group[k]->solo_n < MIN_STEPS && !probe)
                    probe = group[k];
            }
            if (!probe || !packed_enough)
                continue;
            for (size_t k = 0; k < ng; k++) {
                if (group[k] == probe)
                    continue;
                char why[96];
                snprintf(why, sizeof why, "suspended while job %lld runs alone (packing probe)",
                         (long long)probe->id);
                if (loomd__gandiva_suspend(r, group[k], why) == LOOM_OK)
                    group[k]->probe_for = probe->id;
            }
            continue;
        }
        double norm = 0;
        active_t *newest = group[0];
        for (size_t k = 0; k < ng; k++) {
            norm += group[k]->solo_step_s / group[k]->packed_step_s;
            if (group[k]->resumed_ns > newest->resumed_ns)
                newest = group[k];
        }
        char what[160];
        if (norm >= KEEP_THRESHOLD) {
            snprintf(what, sizeof what, "packing kept: normalized throughput %.2f on GPU %d", norm,
                     a->alloc.gpus[0]);
            for (size_t k = 0; k < ng; k++) {
                group[k]->decided = true;
                snprintf(group[k]->gandiva, sizeof group[k]->gandiva, "%s", what);
                record(r, group[k], NULL);
            }
            loom_log_info("packing kept", "gpu=%d jobs=%zu normalized_throughput=%.2f",
                          a->alloc.gpus[0], ng, norm);
        } else {
            snprintf(what, sizeof what,
                     "packing undone: normalized throughput %.2f on GPU %d; suspended until the "
                     "GPU is free",
                     norm, a->alloc.gpus[0]);
            for (size_t k = 0; k < ng; k++)
                group[k]->decided = true;
            snprintf(newest->gandiva, sizeof newest->gandiva, "%s", what);
            newest->no_pack = true;
            loom_log_info("packing undone", "gpu=%d jobs=%zu normalized_throughput=%.2f job=%lld",
                          a->alloc.gpus[0], ng, norm, (long long)newest->id);
            loomd__gandiva_suspend(r, newest, what);
        }
    }
}
