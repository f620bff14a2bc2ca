/* runtime/runtime.c — the scheduling state and its step.
 *
 * The state is kept so that a step costs little more than a walk of the
 * queue, however long it is:
 * - the pending jobs stay in queue order between steps; arrivals are
 *   sorted on their own and merged in (fifo, sjf, priority). Tiresias'
 *   levels move with time (attained service, starvation), so its order is
 *   rebuilt when a level changed or jobs arrived;
 * - a job shape (a request) that fitted nowhere stays unplaceable until
 *   resources grow (a free, or a node coming back): the step remembers such
 *   shapes by that epoch and passes their jobs by without asking the
 *   placement policy again.
 * The step itself is loomd's former runner step: hide down nodes, order,
 * place every job that fits (greedy backfill), let time-slicing make room
 * for a job that does not. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_int.h"

/* ------------------------------------------------------------- helpers */

rjob_t *rt__find(const loom_runtime_t *rt, uint64_t id)
{
    uint64_t v;
    return loom_map_get_u64(&rt->jobs, id, &v) ? loom_map_to_ptr(v) : NULL;
}

static void job_free(rjob_t *j)
{
    if (j) {
        free(j->dep);
        free(j->rb);
        free(j->reject);
        free(j);
    }
}

static int shape_intern(loom_runtime_t *rt, const loom_sched_req_t *r, uint32_t *out);

/* ------------------------------------------------------------ lifecycle */

int loom_runtime_new(const loom_sched_cluster_t *c, const loom_runtime_config_t *cfg,
                     loom_runtime_t **out, loom_err_t *err)
{
    loom_runtime_t *rt = calloc(1, sizeof *rt);
    if (!rt)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    loom_map_init(&rt->jobs, LOOM_MAP_U64);
    loom_map_init(&rt->shape_idx, LOOM_MAP_STR);
    loom_map_init(&rt->quota_idx, LOOM_MAP_U64);
    if (cfg->queue && strlen(cfg->queue) >= sizeof rt->queue_name) {
        free(rt);
        return loom_err_set(err, LOOM_EINVAL, "queue policy '%.40s...': longer than %zu bytes",
                            cfg->queue, sizeof rt->queue_name - 1);
    }
    snprintf(rt->queue_name, sizeof rt->queue_name, "%s", cfg->queue ? cfg->queue : "fifo");
    snprintf(rt->place_name, sizeof rt->place_name, "%s",
             cfg->placement ? cfg->placement : "firstfit");
    rt->timeslice_s = cfg->timeslice_s > 0 ? cfg->timeslice_s : 0;
    rt->pack_check = cfg->pack_check;
    rt->backfill = cfg->backfill;
    rt->default_limit_s =
        cfg->default_limit_s > 0 ? cfg->default_limit_s : LOOM_RUNTIME_DEFAULT_LIMIT_S;
    int rc = loom_sched_queue_cfg_parse(rt->queue_name, &rt->queue, err);
    if (rc != LOOM_OK) {
        free(rt);
        return rc;
    }
    rt->tiresias = rt->queue.kind == LOOM_SCHED_QUEUE_TIRESIAS ||
                   rt->queue.kind == LOOM_SCHED_QUEUE_TIRESIAS_FAIRSHARE;
    if ((rc = loom_sched_cluster_copy(&rt->cluster, c, err)) != LOOM_OK) {
        free(rt);
        return rc;
    }
    rt->down = calloc(c->nnodes + 1, sizeof *rt->down);
    if (!rt->down) {
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
        goto fail;
    }
    if ((rc = loom_sched_placer_new(rt->place_name, &rt->cluster, &cfg->placer, &rt->placer,
                                    err)) != LOOM_OK)
        goto fail;
    rt->now = -INFINITY;
    rt->usage_t = -INFINITY;
    rt->quota_every[0] = rt->quota_every[1] = (loom_runtime_limits_t){-1, -1};
    for (size_t k = 0; k < c->nnodes; k++)
        rt->mem_mib += (double)c->nodes[k].mem_mib;
    if ((rc = rt__rubick_config(rt, cfg->rubick, err)) != LOOM_OK)
        goto fail;
    *out = rt;
    return LOOM_OK;
fail:
    loom_runtime_free(rt);
    return rc;
}

void loom_runtime_free(loom_runtime_t *rt)
{
    if (!rt)
        return;
    for (size_t k = 0; k < rt->npend; k++) /* dead ones too: no longer in the map */
        job_free(rt->pend[k].j);
    for (size_t k = 0; k < rt->nfresh; k++)
        job_free(rt->fresh[k]->user);
    for (size_t k = 0; k < rt->nact; k++)
        job_free(rt->act[k]);
    free(rt->pend);
    free(rt->fresh);
    free(rt->act);
    loom_map_free(&rt->jobs);
    free(rt->shapes);
    loom_map_free(&rt->shape_idx);
    free(rt->shares);
    free(rt->groups);
    rt__quota_free(rt);
    rt__deps_free(rt);
    free(rt->changes);
    free(rt->resv);
    free(rt->ends);
    free(rt->down);
    loom_sched_placer_free(rt->placer);
    loom_sched_cluster_free(&rt->cluster);
    free(rt);
}

const loom_sched_cluster_t *loom_runtime_cluster(const loom_runtime_t *rt)
{
    return &rt->cluster;
}
const char *loom_runtime_queue_name(const loom_runtime_t *rt)
{
    return rt->queue_name;
}
const char *loom_runtime_placement_name(const loom_runtime_t *rt)
{
    return rt->place_name;
}

const char *loom_runtime_reason_name(loom_runtime_reason_t r)
{
    switch (r) {
    case LOOM_RUNTIME_REASON_RESOURCES: return "Resources";
    case LOOM_RUNTIME_REASON_PRIORITY: return "Priority";
    case LOOM_RUNTIME_REASON_HELD: return "JobHeld";
    case LOOM_RUNTIME_REASON_BEGIN_TIME: return "BeginTime";
    case LOOM_RUNTIME_REASON_DEPENDENCY: return "Dependency";
    case LOOM_RUNTIME_REASON_ARRAY_LIMIT: return "JobArrayTaskLimit";
    case LOOM_RUNTIME_REASON_QUOTA: return "QuotaLimit";
    case LOOM_RUNTIME_REASON_RESERVATION: return "Reservation";
    default: return "None";
    }
}

/* ------------------------------------------------------------ the jobs */

static void running_track(loom_runtime_t *rt, rjob_t *j, int delta);

static rjob_t *job_new(loom_runtime_t *rt, const loom_runtime_job_t *job, loom_err_t *err)
{
    if (job->id == 0) {
        loom_err_set(err, LOOM_EINVAL, "job id 0: expected an id > 0");
        return NULL;
    }
    if (rt__find(rt, job->id)) {
        loom_err_set(err, LOOM_EEXIST, "job %llu: already known to the runtime",
                     (unsigned long long)job->id);
        return NULL;
    }
    rjob_t *j = calloc(1, sizeof *j);
    if (j) {
        j->job = *job;
        j->job.dependency = NULL; /* the caller's pointer is not kept (rt__deps_add copies) */
    }
    if (!j || rt__quota_attach(rt, j) != LOOM_OK ||
        loom_map_put_u64(&rt->jobs, job->id, loom_map_ptr(j)) < 0) {
        free(j);
        loom_err_set(err, LOOM_ENOMEM, "out of memory");
        return NULL;
    }
    j->q = (loom_sched_qjob_t){.id = job->id,
                               .submit_s = job->submit_s,
                               .priority = job->priority,
                               .estimate_s = job->estimate_s,
                               .time_limit_s = job->time_limit_s,
                               .wait_since_s = job->submit_s,
                               .user = j};
    rt__rubick_new(rt, j, job);
    return j;
}

int loom_runtime_submit(loom_runtime_t *rt, const loom_runtime_job_t *job, loom_err_t *err)
{
    if (loom_vec_reserve((void **)&rt->fresh, &rt->cap_fresh, rt->nfresh + 1, sizeof *rt->fresh,
                         RT_ARRAY_MIN_CAP))
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    rjob_t *j = job_new(rt, job, err);
    if (!j)
        return err ? err->code : LOOM_EINVAL;
    /* the same test as job.submit's refusal (loomd's methods) */
    loom_err_t why = {0};
    bool never = loom_sched_feasible(&rt->cluster, &job->req, NULL, &why) != LOOM_OK;
    /* without its reason it would wait for ever: refused whole instead */
    if ((never && !(j->reject = strdup(why.msg))) ||
        shape_intern(rt, &job->req, &j->shape) != LOOM_OK ||
        rt__deps_add(rt, j, job->dependency) != LOOM_OK) {
        loom_map_del_u64(&rt->jobs, job->id);
        job_free(j);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    j->state = LOOM_RUNTIME_PENDING;
    j->fresh = true;
    rt->fresh[rt->nfresh++] = &j->q;
    return LOOM_OK;
}

static int act_add(loom_runtime_t *rt, rjob_t *j)
{
    if (loom_vec_reserve((void **)&rt->act, &rt->cap_act, rt->nact + 1, sizeof *rt->act,
                         RT_ARRAY_MIN_CAP))
        return LOOM_ENOMEM;
    j->slot = rt->nact;
    rt->act[rt->nact++] = j;
    return LOOM_OK;
}

void rt__act_remove(loom_runtime_t *rt, rjob_t *j)
{
    assert(j->slot < rt->nact && rt->act[j->slot] == j);
    rt->act[j->slot] = rt->act[--rt->nact];
    rt->act[j->slot]->slot = j->slot;
}

void rt__account(rjob_t *j, double now)
{
    if (j->held && now > j->resumed_s) {
        j->attained_gpu_s += (now - j->resumed_s) *
                             (double)loom_sched_req_gpu_total(&j->alloc.req) / LOOM_SCHED_MILLI;
        j->ran_s += now - j->resumed_s;
    }
}

int loom_runtime_adopt(loom_runtime_t *rt, const loom_runtime_job_t *job,
                       const loom_sched_alloc_t *alloc, bool suspended, double now_s,
                       loom_err_t *err)
{
    if (alloc->node < 0 || (size_t)alloc->node >= rt->cluster.nnodes)
        return loom_err_set(err, LOOM_EINVAL, "job %llu: node %d: no such node",
                            (unsigned long long)job->id, alloc->node);
    if (loom_vec_reserve((void **)&rt->act, &rt->cap_act, rt->nact + 1, sizeof *rt->act,
                         RT_ARRAY_MIN_CAP))
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    loom_sched_alloc_t held = *alloc;
    held.req = job->req;
    if (!suspended && loom_sched_alloc(&rt->cluster, alloc->node, &job->req, alloc->gpus,
                                       alloc->ngpus, &held, err) != LOOM_OK)
        return err ? err->code : LOOM_ESTATE;
    rjob_t *j = job_new(rt, job, err);
    if (!j) {
        if (!suspended)
            loom_sched_free(&rt->cluster, &held, NULL);
        return err ? err->code : LOOM_EINVAL;
    }
    j->alloc = held;
    j->held = !suspended;
    j->state = suspended ? LOOM_RUNTIME_SUSPENDED : LOOM_RUNTIME_RUNNING;
    j->resumed_s = j->suspended_s = j->tenancy_since = now_s;
    running_track(rt, j, 1);
    act_add(rt, j); /* cannot fail: grown above */
    rt__rubick_adopted(rt, j);
    return LOOM_OK;
}

int loom_runtime_remove(loom_runtime_t *rt, uint64_t id, double now_s)
{
    rjob_t *j = rt__find(rt, id);
    if (!j)
        return LOOM_ENOTFOUND;
    loom_map_del_u64(&rt->jobs, id);
    rt->deps.events++; /* its dependents may be judged now */
    rt__deps_forget(rt, j);
    if (j->state == LOOM_RUNTIME_PENDING) {
        j->dead = true; /* the queue arrays drop it at the next step */
        rt->ndead += !j->fresh;
        rt->nran -= !j->fresh && j->q.last_run_s > 0;
        return LOOM_OK;
    }
    rt__account(j, now_s);
    if (j->held)
        loom_sched_free(&rt->cluster, &j->alloc, NULL);
    rt__rubick_release(rt, j);
    rt__act_remove(rt, j);
    running_track(rt, j, -1);
    job_free(j);
    return LOOM_OK;
}

/* How many of a capped group's jobs run (and, delta != 0, change it). */
static int group_count(loom_runtime_t *rt, uint64_t id, int delta)
{
    for (size_t i = 0; i < rt->ngroups; i++)
        if (rt->groups[i].id == id) {
            rt->groups[i].running += delta;
            int n = rt->groups[i].running;
            if (n <= 0) /* forgotten when none runs */
                rt->groups[i] = rt->groups[--rt->ngroups];
            return n;
        }
    if (delta > 0 && !loom_vec_reserve((void **)&rt->groups, &rt->cap_groups, rt->ngroups + 1,
                                       sizeof *rt->groups, RT_ARRAY_MIN_CAP))
        rt->groups[rt->ngroups++] = (struct group){id, delta};
    return delta > 0 ? delta : 0;
}

/* A capped group's job starts (+1) or stops holding its place (-1). */
static void group_track(loom_runtime_t *rt, const rjob_t *j, int delta)
{
    if (j->job.group && j->job.group_max > 0)
        group_count(rt, j->job.group, delta);
}

/* A job starts (+1) or stops holding its place (-1): its capped group and
 * its running quotas count it. */
static void running_track(loom_runtime_t *rt, rjob_t *j, int delta)
{
    group_track(rt, j, delta);
    rt__quota_track(rt, j, delta);
}

/* Why a pending job may not start whatever the resources (NONE: it may). */
static loom_runtime_reason_t blocked(const loom_runtime_t *rt, const rjob_t *j)
{
    if (j->job.group && j->job.group_max > 0 && !j->job.hold && !j->job.dep_wait &&
        group_count((loom_runtime_t *)rt, j->job.group, 0) >= j->job.group_max)
        return LOOM_RUNTIME_REASON_ARRAY_LIMIT;
    if (j->job.hold)
        return LOOM_RUNTIME_REASON_HELD;
    if (j->job.dep_wait)
        return LOOM_RUNTIME_REASON_DEPENDENCY;
    if (j->job.begin_s > rt->now)
        return LOOM_RUNTIME_REASON_BEGIN_TIME;
    if (rt->quota_on && rt__quota_blocks(rt, j))
        return LOOM_RUNTIME_REASON_QUOTA;
    return LOOM_RUNTIME_REASON_NONE;
}

static rjob_t *pending_job(loom_runtime_t *rt, uint64_t id, int *rc)
{
    rjob_t *j = rt__find(rt, id);
    *rc = !j ? LOOM_ENOTFOUND : j->state != LOOM_RUNTIME_PENDING ? LOOM_ESTATE : LOOM_OK;
    return *rc ? NULL : j;
}

int loom_runtime_hold(loom_runtime_t *rt, uint64_t id, bool hold)
{
    int rc;
    rjob_t *j = pending_job(rt, id, &rc);
    if (j)
        j->job.hold = hold;
    return rc;
}

int loom_runtime_set_dep_wait(loom_runtime_t *rt, uint64_t id, bool waiting)
{
    int rc;
    rjob_t *j = pending_job(rt, id, &rc);
    if (j && !waiting)
        rt__deps_forget(rt, j); /* met, as its caller says */
    if (j)
        j->job.dep_wait = waiting;
    return rc;
}

int loom_runtime_requeue(loom_runtime_t *rt, uint64_t id, double now_s)
{
    rjob_t *j = rt__find(rt, id);
    if (!j || j->state == LOOM_RUNTIME_PENDING)
        return j ? LOOM_ESTATE : LOOM_ENOTFOUND;
    if (loom_vec_reserve((void **)&rt->fresh, &rt->cap_fresh, rt->nfresh + 1, sizeof *rt->fresh,
                         RT_ARRAY_MIN_CAP) ||
        shape_intern(rt, &j->job.req, &j->shape) != LOOM_OK)
        return LOOM_ENOMEM;
    rt__account(j, now_s);
    if (j->held)
        loom_sched_free(&rt->cluster, &j->alloc, NULL);
    rt__rubick_release(rt, j);
    rt__act_remove(rt, j);
    running_track(rt, j, -1);
    j->held = false;
    j->job.recorded = LOOM_RUNTIME_REASON_NONE; /* its record now says why it was requeued */
    j->state = LOOM_RUNTIME_PENDING;
    j->q.wait_since_s = now_s;
    j->q.attained_gpu_s = j->attained_gpu_s - j->promo_base;
    j->q.last_run_s = now_s > j->resumed_s ? now_s - j->resumed_s : 1e-9;
    j->ran_s = 0; /* started afresh: its time limit counts from its next start */
    j->fresh = true;
    rt->fresh[rt->nfresh++] = &j->q;
    return LOOM_OK;
}

void loom_runtime_set_down(loom_runtime_t *rt, size_t node, bool down)
{
    if (node >= rt->cluster.nnodes || rt->down[node] == down)
        return;
    rt->down[node] = down;
    rt->ndown += down ? 1 : (size_t)-1;
    if (!down)
        rt->up_events++;
}

bool loom_runtime_is_down(const loom_runtime_t *rt, size_t node)
{
    return node < rt->cluster.nnodes && rt->down[node];
}

int loom_runtime_reconfigure(loom_runtime_t *rt, uint64_t id, const loom_sched_req_t *req,
                             loom_err_t *err)
{
    rjob_t *j = rt__find(rt, id);
    if (!j)
        return loom_err_set(err, LOOM_ENOTFOUND, "job %llu: not known to the runtime",
                            (unsigned long long)id);
    if (j->state != LOOM_RUNTIME_RUNNING)
        return loom_err_set(err, LOOM_ESTATE, "job %llu: only a running job can be reconfigured",
                            (unsigned long long)id);
    int rc = loom_sched_req_validate(req, err);
    if (rc != LOOM_OK)
        return rc;
    j->reconf = true;
    j->reconf_req = *req;
    return LOOM_OK;
}

/* ------------------------------------------------------------- actions */

int rt__emit(loom_runtime_t *rt, loom_runtime_action_kind_t kind, rjob_t *j,
             const loom_sched_alloc_t *alloc, const loom_sched_alloc_t *old, const char *reason)
{
    loom_runtime_action_t a = {.kind = kind, .id = j->job.id, .reason = reason ? reason : ""};
    if (alloc)
        a.alloc = *alloc;
    if (old)
        a.old_alloc = *old;
    int rc = rt->apply ? rt->apply(rt->ctx, &a) : LOOM_OK;
    if (rc == LOOM_OK)
        rt->applied++;
    if (rc == LOOM_OK && kind == LOOM_RUNTIME_START)
        rt->deps.events++; /* "after" is met once a job has begun */
    return rc;
}

/* --------------------------------------------------------- queue order */

static int cmp_q(const loom_runtime_t *rt, const loom_sched_qjob_t *a, const loom_sched_qjob_t *b)
{
    return loom_sched_queue_cmp(&rt->queue, a, b);
}

/* A job no node can ever hold leaves with REJECT (a held one when it is
 * released). */
static void reject(loom_runtime_t *rt, rjob_t *j)
{
    char why[LOOM_ERR_MSG_MAX + 32];
    snprintf(why, sizeof why, "unschedulable: %s", j->reject);
    rt__emit(rt, LOOM_RUNTIME_REJECT, j, NULL, NULL, why);
    rt__deps_forget(rt, j);
    loom_map_del_u64(&rt->jobs, j->job.id);
    job_free(j);
}

/* Arrivals: rejects go at once, dead ones are dropped, the rest are sorted
 * (in place, at the front of rt->fresh); returns how many. */
static size_t take_fresh(loom_runtime_t *rt)
{
    size_t nf = 0;
    for (size_t k = 0; k < rt->nfresh; k++) {
        rjob_t *j = rt->fresh[k]->user;
        j->fresh = false;
        if (j->dead) {
            job_free(j);
            continue;
        }
        if (j->reject && blocked(rt, j) == LOOM_RUNTIME_REASON_NONE) {
            reject(rt, j);
            continue;
        }
        rt->nran += j->q.last_run_s > 0;
        rt->fresh[nf++] = rt->fresh[k];
    }
    rt->nfresh = 0;
    loom_sched_queue_order(&rt->queue, rt->fresh, nf, rt->now);
    return nf;
}

/* Tiresias' levels move with attained service and waiting; only jobs that
 * ran before can change level (a job that never ran stays in the top
 * queue) unless a starvation limit applies to everyone. */
static bool levels_moved(loom_runtime_t *rt)
{
    if (rt->queue.kind != LOOM_SCHED_QUEUE_TIRESIAS ||
        (rt->nran == 0 && rt->queue.starve_limit_s <= 0))
        return false;
    bool moved = false;
    for (size_t k = 0; k < rt->npend && !moved; k++) {
        const loom_sched_qjob_t *q = &rt->pend[k].j->q;
        moved =
            !rt->pend[k].j->dead && loom_sched_tiresias_level(&rt->queue, q, rt->now) != q->level;
    }
    return moved;
}

/* Everything sorted afresh (Tiresias' levels moved). */
static int sort_all(loom_runtime_t *rt, size_t nf)
{
    size_t n = rt->npend + nf;
    loom_sched_qjob_t **all = malloc((n + 1) * sizeof *all);
    if (!all)
        return LOOM_ENOMEM;
    size_t m = 0;
    for (size_t k = 0; k < rt->npend; k++) {
        if (rt->pend[k].j->dead)
            job_free(rt->pend[k].j);
        else
            all[m++] = &rt->pend[k].j->q;
    }
    rt->ndead = 0;
    if (nf) /* rt->fresh may be NULL before the first arrival */
        memcpy(all + m, rt->fresh, nf * sizeof *all);
    m += nf;
    loom_sched_queue_order(&rt->queue, all, m, rt->now);
    for (size_t k = 0; k < m; k++) {
        rjob_t *j = all[k]->user;
        rt->pend[k] = (struct pent){j, j->shape};
    }
    rt->npend = m;
    free(all);
    return LOOM_OK;
}

/* Merges the sorted arrivals into the order: each finds its place by
 * binary search, and the runs of pend between them move as blocks. */
static void merge_fresh(loom_runtime_t *rt, size_t nf)
{
    size_t end = rt->npend; /* pend[0..end) not yet moved */
    for (size_t k = nf; k > 0; k--) {
        const loom_sched_qjob_t *f = rt->fresh[k - 1];
        size_t lo = 0, hi = end;
        while (lo < hi) { /* first position whose job comes after f */
            size_t mid = lo + (hi - lo) / 2;
            if (cmp_q(rt, &rt->pend[mid].j->q, f) > 0)
                hi = mid;
            else
                lo = mid + 1;
        }
        memmove(rt->pend + lo + k, rt->pend + lo, (end - lo) * sizeof *rt->pend);
        rjob_t *j = f->user;
        rt->pend[lo + k - 1] = (struct pent){j, j->shape};
        end = lo;
    }
    rt->npend += nf;
}

static int order_queue(loom_runtime_t *rt)
{
    if (loom_vec_reserve((void **)&rt->pend, &rt->cap_pend, rt->npend + rt->nfresh,
                         sizeof *rt->pend, RT_ARRAY_MIN_CAP))
        return LOOM_ENOMEM;
    size_t nf = take_fresh(rt);
    if (loom_sched_queue_fairshare(&rt->queue) || rt->queue.kind == LOOM_SCHED_QUEUE_DRF) {
        rt__share_update(rt, nf); /* factors and shares move with time: all afresh */
        return sort_all(rt, nf);
    }
    if (levels_moved(rt))
        return sort_all(rt, nf);
    merge_fresh(rt, nf);
    return LOOM_OK;
}

/* ------------------------------------------------ shapes that fit nowhere */

/* Resources only grow by a free or a node coming back: a shape that fitted
 * nowhere in this epoch fits nowhere until the next. */
static uint64_t epoch(const loom_runtime_t *rt)
{
    return rt->cluster.frees + rt->up_events + 1;
}

/* A request as the shape map's key: its fields, each widened to 64 bits
 * (no padding, so equal requests give equal bytes). */
static void req_key(const loom_sched_req_t *r, uint64_t key[6])
{
    key[0] = (uint64_t)r->cpu_milli;
    key[1] = (uint64_t)r->mem_mib;
    key[2] = (uint64_t)(int64_t)r->num_gpus;
    key[3] = (uint64_t)(int64_t)r->gpu_milli;
    key[4] = (uint64_t)r->gpu_mem_mib;
    key[5] = r->gpu_types;
}

static int shape_intern(loom_runtime_t *rt, const loom_sched_req_t *r, uint32_t *out)
{
    uint64_t key[6], v;
    req_key(r, key);
    if (loom_map_get_bytes(&rt->shape_idx, key, sizeof key, &v)) {
        *out = (uint32_t)v;
        return LOOM_OK;
    }
    if (rt->nshapes >= UINT32_MAX - 1 ||
        loom_vec_reserve((void **)&rt->shapes, &rt->cap_shapes, rt->nshapes + 1, sizeof *rt->shapes,
                         RT_ARRAY_MIN_CAP) ||
        loom_map_put_bytes(&rt->shape_idx, key, sizeof key, rt->nshapes) < 0)
        return LOOM_ENOMEM;
    rt->shapes[rt->nshapes] = (struct shape){.req = *r};
    *out = (uint32_t)rt->nshapes++;
    return LOOM_OK;
}

/* ------------------------------------------------------------ the step */

struct hidden {
    int64_t cpu, mem;
    int32_t gpu[LOOM_SCHED_MAX_GPUS];
    int64_t gmem[LOOM_SCHED_MAX_GPUS];
};

/* One node shows nothing free to the placement policy (a policy may cache
 * per node: its version changes); h keeps what it had. */
static void hide_node(loom_runtime_t *rt, size_t k, hidden_t *h)
{
    loom_sched_node_t *n = &rt->cluster.nodes[k];
    h->cpu = n->cpu_free;
    h->mem = n->mem_free;
    memcpy(h->gpu, n->gpu_free, sizeof n->gpu_free);
    memcpy(h->gmem, n->gpu_mem_free, sizeof n->gpu_mem_free);
    n->cpu_free = n->mem_free = 0;
    memset(n->gpu_free, 0, sizeof n->gpu_free);
    memset(n->gpu_mem_free, 0, sizeof n->gpu_mem_free);
    n->version++;
}

static void unhide_node(loom_runtime_t *rt, size_t k, const hidden_t *h)
{
    loom_sched_node_t *n = &rt->cluster.nodes[k];
    n->cpu_free = h->cpu;
    n->mem_free = h->mem;
    memcpy(n->gpu_free, h->gpu, sizeof n->gpu_free);
    memcpy(n->gpu_mem_free, h->gmem, sizeof n->gpu_mem_free);
    n->version++;
}

/* Nodes that are down show nothing free to the placement policy while it
 * places. */
hidden_t *rt__hide_down(loom_runtime_t *rt)
{
    if (!rt->ndown)
        return NULL;
    hidden_t *h = calloc(rt->cluster.nnodes, sizeof *h);
    for (size_t k = 0; h && k < rt->cluster.nnodes; k++)
        if (rt->down[k])
            hide_node(rt, k, &h[k]);
    return h;
}

void rt__unhide_down(loom_runtime_t *rt, hidden_t *h)
{
    for (size_t k = 0; h && k < rt->cluster.nnodes; k++)
        if (rt->down[k])
            unhide_node(rt, k, &h[k]);
    free(h);
}

loom_runtime_reason_t rt__blocked(const loom_runtime_t *rt, const rjob_t *j)
{
    return blocked(rt, j);
}

/* The bookkeeping of a start the caller carried out (j->alloc held). */
void rt__started(loom_runtime_t *rt, rjob_t *j)
{
    j->held = true;
    j->state = LOOM_RUNTIME_RUNNING;
    running_track(rt, j, 1);
    j->resumed_s = j->tenancy_since = rt->now;
    j->tenancy = 0;
    act_add(rt, j); /* cannot fail: the caller grew rt->act */
}

/* A placement for j that delays no reservation of this step: the
 * placement policy's choice, else its choice with the nodes where that
 * would delay one hidden from it (false: none). */
static bool clear_of_reservations(loom_runtime_t *rt, rjob_t *j, loom_sched_alloc_t *place)
{
    double end = rt->now + rt__limit(rt, j);
    hidden_t *h = NULL;
    int *hid = NULL;
    size_t nhid = 0;
    bool ok = !rt__resv_conflict(rt, place, end);
    while (!ok && nhid < rt->nresv) {
        if (!h && (!(h = calloc(rt->nresv, sizeof *h)) || !(hid = calloc(rt->nresv, sizeof *hid))))
            break; /* out of memory: it waits */
        hide_node(rt, (size_t)place->node, &h[nhid]);
        hid[nhid++] = place->node;
        if (loom_sched_place(rt->placer, &rt->cluster, &j->job.req, place) != LOOM_OK ||
            rt->down[place->node])
            break;
        ok = !rt__resv_conflict(rt, place, end);
    }
    while (nhid > 0) {
        nhid--;
        unhide_node(rt, (size_t)hid[nhid], &h[nhid]);
    }
    free(h);
    free(hid);
    return ok;
}

/* Places j and starts it: RT_STARTED, RT_GONE (its start was refused and
 * it was dropped) or RT_STAYS (no room). */
int rt__try_start(loom_runtime_t *rt, rjob_t *j)
{
    const loom_sched_req_t *req = &j->job.req;
    struct shape *sh = &rt->shapes[j->shape];
    bool failed = sh->fail_epoch == epoch(rt);
    loom_sched_alloc_t place;
    /* A shape that fits nowhere may still get room from time-slicing. */
    bool ok = !failed && loom_sched_place(rt->placer, &rt->cluster, req, &place) == LOOM_OK;
    if (!ok && rt->timeslice_s > 0 && sh->room_fail_step != rt->steps) {
        /* Within a step the jobs that could make way only get fewer, so a
         * shape time-slicing could not make room for is not tried again. */
        ok = rt__make_room(rt, req) &&
             loom_sched_place(rt->placer, &rt->cluster, req, &place) == LOOM_OK;
        if (!ok)
            sh->room_fail_step = rt->steps;
    }
    if (!ok || rt->down[place.node]) {
        sh->fail_epoch = epoch(rt);
        return RT_STAYS;
    }
    if (rt->nresv && !clear_of_reservations(rt, j, &place))
        return RT_HELD_BACK;
    if (loom_vec_reserve((void **)&rt->act, &rt->cap_act, rt->nact + 1, sizeof *rt->act,
                         RT_ARRAY_MIN_CAP)) {
        rt->nomem++;
        return RT_STAYS;
    }
    if (loom_sched_alloc(&rt->cluster, place.node, req, place.gpus, place.ngpus, &j->alloc, NULL) !=
        LOOM_OK)
        return RT_STAYS;
    rt->nran -= j->q.last_run_s > 0;
    char why[LOOM_SCHED_NAME_MAX + 64];
    snprintf(why, sizeof why, "placed on %s by %s", rt->cluster.nodes[place.node].name,
             rt->place_name);
    if (rt__emit(rt, LOOM_RUNTIME_START, j, &j->alloc, NULL, why) != LOOM_OK) {
        loom_sched_free(&rt->cluster, &j->alloc, NULL);
        loom_map_del_u64(&rt->jobs, j->job.id);
        job_free(j);
        return RT_GONE;
    }
    rt__started(rt, j);
    return RT_STARTED;
}

/* A job that stays pending, and why: a change from what was last said
 * of it is reported (loom_runtime_reason_changes). */
static void say_reason(loom_runtime_t *rt, rjob_t *j, loom_runtime_reason_t why)
{
    if (j->job.recorded == why)
        return;
    if (loom_vec_reserve((void **)&rt->changes, &rt->cap_changes, rt->nchanges + 1,
                         sizeof *rt->changes, RT_ARRAY_MIN_CAP) != LOOM_OK) {
        rt->nomem++;
        return; /* out of memory: said again at the next step */
    }
    j->job.recorded = why;
    rt->changes[rt->nchanges++] = (loom_runtime_reason_change_t){j->job.id, why};
}

/* One pending job in the pass: dropped when dead, rejected when no node
 * can ever hold it, else started if the placement policy finds room; one
 * that stays says why. A
 * job whose shape fitted nowhere in this epoch is passed by on the array
 * alone (without time-slicing, which may make room). */
int rt__consider(loom_runtime_t *rt, struct pent e, uint64_t ep, bool cheap_skip)
{
    if (rt->ndead && e.j->dead) {
        job_free(e.j);
        return RT_GONE;
    }
    /* Rubick's fields only when it is on: a field the step does not read
     * otherwise is a cache miss per pending job (bench/sched_step). */
    if ((rt->rb_on || rt->tiresias) && e.j->state != LOOM_RUNTIME_PENDING)
        return RT_GONE; /* started by Rubick's or Tiresias' pass: leaves the queue */
    loom_runtime_reason_t why = blocked(rt, e.j);
    if (why == LOOM_RUNTIME_REASON_NONE && rt->rb_on && e.j->rb && !e.j->reject)
        why = LOOM_RUNTIME_REASON_RESOURCES; /* Rubick's pass places its own jobs */
    if (why != LOOM_RUNTIME_REASON_NONE) {
        say_reason(rt, e.j, why);
        return RT_STAYS; /* held (or Rubick's): stays, holds nothing back */
    }
    if (e.j->reject) {
        rt->nran -= e.j->q.last_run_s > 0;
        reject(rt, e.j);
        return RT_GONE;
    }
    bool skip = cheap_skip && rt->shapes[e.shape].fail_epoch == ep;
    int what = skip ? RT_STAYS : rt__try_start(rt, e.j);
    if (what != RT_GONE) /* (freed when gone) */
        e.j->held_back = what == RT_HELD_BACK;
    if (what == RT_HELD_BACK) {
        if (rt->backfill == LOOM_RUNTIME_BACKFILL_CONSERVATIVE)
            rt__reserve(rt, e.j);
        say_reason(rt, e.j, LOOM_RUNTIME_REASON_RESERVATION);
        return RT_STAYS;
    }
    if (what == RT_STAYS) {
        if (!rt->first_blocked)
            rt->first_blocked = e.j->job.id;
        if (rt->backfill == LOOM_RUNTIME_BACKFILL_CONSERVATIVE ||
            (rt->backfill == LOOM_RUNTIME_BACKFILL_EASY && rt->first_blocked == e.j->job.id))
            rt__reserve(rt, e.j);
        say_reason(rt, e.j,
                   rt->first_blocked == e.j->job.id ? LOOM_RUNTIME_REASON_RESOURCES
                                                    : LOOM_RUNTIME_REASON_PRIORITY);
    }
    return what;
}

/* The pending pass: every job in order (drf: in its progressive filling);
 * those that stay are compacted. */
static void pending_pass(loom_runtime_t *rt)
{
    hidden_t *h = rt__hide_down(rt);
    if (rt->ndown && !h)
        return; /* out of memory: place nothing rather than onto down nodes */
    const uint64_t ep = epoch(rt);
    const bool cheap_skip = rt->timeslice_s <= 0;
    rt->first_blocked = 0;
    rt->nresv = 0;
    if (rt->queue.kind == LOOM_SCHED_QUEUE_DRF)
        rt__drf_pass(rt, ep, cheap_skip);
    else {
        size_t keep = 0;
        for (size_t k = 0; k < rt->npend; k++) {
            struct pent e = rt->pend[k];
            if (rt__consider(rt, e, ep, cheap_skip) == RT_STAYS)
                rt->pend[keep++] = e;
        }
        rt->npend = keep;
    }
    rt->ndead = 0;
    rt__unhide_down(rt, h);
}

/* A running job asked to change its request: free the old, place the new;
 * the old comes back when the new does not fit or is refused. */
static void reconf_pass(loom_runtime_t *rt)
{
    for (size_t k = 0; k < rt->nact; k++) {
        rjob_t *j = rt->act[k];
        if (!j->reconf || !j->held)
            continue;
        loom_sched_alloc_t old = j->alloc, neu;
        loom_sched_free(&rt->cluster, &old, NULL);
        loom_sched_alloc_t place;
        bool ok = loom_sched_place(rt->placer, &rt->cluster, &j->reconf_req, &place) == LOOM_OK &&
                  !rt->down[place.node] &&
                  loom_sched_alloc(&rt->cluster, place.node, &j->reconf_req, place.gpus,
                                   place.ngpus, &neu, NULL) == LOOM_OK;
        int rc = ok ? rt__emit(rt, LOOM_RUNTIME_RECONFIGURE, j, &neu, &old, "reconfigured")
                    : LOOM_ENOTFOUND;
        if (rc == LOOM_OK) {
            rt__account(j, rt->now);
            j->alloc = neu;
            rt__quota_track(rt, j, -1); /* counted again by its new request */
            j->job.req = j->reconf_req;
            rt__quota_track(rt, j, 1);
            j->resumed_s = rt->now;
            j->reconf = false;
            continue;
        }
        if (ok)
            loom_sched_free(&rt->cluster, &neu, NULL);
        loom_sched_alloc(&rt->cluster, old.node, &old.req, old.gpus, old.ngpus, &j->alloc, NULL);
        if (ok) /* refused by the caller: do not ask again */
            j->reconf = false;
    }
}

size_t loom_runtime_step(loom_runtime_t *rt, double now_s, loom_runtime_apply_fn apply, void *ctx)
{
    rt->now = now_s;
    rt->steps++;
    rt->apply = apply;
    rt->ctx = ctx;
    rt->applied = 0;
    rt->nchanges = 0;
    if (rt->pack_check)
        rt__pack_pass(rt);
    if (!rt->tiresias)
        rt__resume_pass(rt);
    reconf_pass(rt);
    rt__deps_pass(rt);
    if (order_queue(rt) == LOOM_OK) {
        if (rt->tiresias)
            rt__tiresias_pass(rt); /* resumes, preemptions and starts in Tiresias' order */
        rt__rubick_pass(rt);
        pending_pass(rt);
        rt__rubick_step_done(rt);
    } else {
        rt->nomem++;
    }
    rt->apply = NULL;
    rt->ctx = NULL;
    return rt->applied;
}

double loom_runtime_next_wakeup(const loom_runtime_t *rt)
{
    double t = rt__rubick_wakeup(rt);
    if (rt->tiresias) {
        double w = rt__tiresias_wakeup(rt);
        t = w < t ? w : t;
    }
    if (rt->timeslice_s <= 0)
        return t;
    /* Running jobs' quanta matter only while someone waits. */
    bool waiting = rt->npend + rt->nfresh > 0;
    for (size_t k = 0; k < rt->nact && !waiting; k++)
        waiting = !rt->act[k]->held;
    for (size_t k = 0; waiting && k < rt->nact; k++) {
        const rjob_t *j = rt->act[k];
        double when = (j->held ? j->resumed_s : j->suspended_s) + rt->timeslice_s;
        if (when > rt->now && when < t)
            t = when;
    }
    return t;
}

/* ------------------------------------------------------------- reading */

size_t loom_runtime_reason_changes(const loom_runtime_t *rt,
                                   const loom_runtime_reason_change_t **out)
{
    *out = rt->changes;
    return rt->nchanges;
}

int loom_runtime_get(const loom_runtime_t *rt, uint64_t id, loom_runtime_info_t *out)
{
    const rjob_t *j = rt__find(rt, id);
    if (!j)
        return LOOM_ENOTFOUND;
    loom_runtime_reason_t reason = LOOM_RUNTIME_REASON_NONE;
    if (j->state == LOOM_RUNTIME_PENDING && blocked(rt, j) != LOOM_RUNTIME_REASON_NONE)
        reason = blocked(rt, j);
    else if (j->state == LOOM_RUNTIME_PENDING && !j->fresh)
        reason = j->held_back                     ? LOOM_RUNTIME_REASON_RESERVATION
                 : j->job.id == rt->first_blocked ? LOOM_RUNTIME_REASON_RESOURCES
                                                  : LOOM_RUNTIME_REASON_PRIORITY;
    *out = (loom_runtime_info_t){.state = j->state,
                                 .reason = reason,
                                 .alloc = j->alloc,
                                 .attained_gpu_s = j->attained_gpu_s,
                                 .note = j->note};
    if (j->rb) {
        out->rubick = true;
        out->config = j->rb->job.cur;
        out->reconfigurations = j->rb->reconfigs;
        out->samples_done = j->rb->done;
        out->guarantee = j->rb->job.guarantee;
        out->draining = j->rb->draining;
    }
    if (j->state == LOOM_RUNTIME_PENDING)
        memset(&out->alloc, 0, sizeof out->alloc);
    if (j->state == LOOM_RUNTIME_PENDING && !j->fresh && j->resv_step == rt->steps &&
        j->resv_step) {
        out->has_start = true;
        out->expected_start_s = j->resv_start_s;
        out->expected_node = j->resv_node;
    }
    return LOOM_OK;
}

uint64_t loom_runtime_nomem(const loom_runtime_t *rt)
{
    return rt->nomem;
}

size_t loom_runtime_npending(const loom_runtime_t *rt)
{
    return loom_map_count(&rt->jobs) - rt->nact;
}

size_t loom_runtime_nrunning(const loom_runtime_t *rt)
{
    return rt->nact;
}

size_t loom_runtime_pending_ids(const loom_runtime_t *rt, uint64_t *ids, size_t max)
{
    size_t n = 0;
    for (size_t k = 0; k < rt->npend + rt->nfresh; k++) {
        const rjob_t *j = k < rt->npend ? rt->pend[k].j : rt->fresh[k - rt->npend]->user;
        if (j->dead)
            continue;
        if (n < max)
            ids[n] = j->job.id;
        n++;
    }
    return n;
}

size_t loom_runtime_jobs_on(const loom_runtime_t *rt, size_t node, uint64_t *ids, size_t max)
{
    size_t n = 0;
    for (size_t k = 0; k < rt->nact; k++)
        if (rt->act[k]->alloc.node == (int)node) {
            if (n < max)
                ids[n] = rt->act[k]->job.id;
            n++;
        }
    return n;
}

int loom_runtime_check(const loom_runtime_t *rt, loom_err_t *err)
{
    loom_sched_alloc_t *live = calloc(2 * rt->nact + 1, sizeof *live);
    if (!live)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    size_t n = 0;
    for (size_t k = 0; k < rt->nact; k++)
        if (rt->act[k]->held)
            live[n++] = rt->act[k]->alloc;
    n += rt__rubick_drains(rt, live + n);
    int rc = loom_sched_cluster_check(&rt->cluster, live, n, err);
    free(live);
    return rc;
}
