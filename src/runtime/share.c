/* runtime/share.c — what fair share and dominant-resource fairness keep.
 *
 * Both queue policies order jobs by their owner's standing, which the
 * runtime keeps in one table of entries: one per user, one per account and
 * one per (account, user) pair ever seen. Entries are never removed, so a
 * job caches its entries' indices.
 *
 * Fair share (Slurm's classic factor, docs/scheduling.md): every entry's
 * usage decays by half each half-life and grows by the GPU-seconds its
 * running jobs held since the last step. A factor is 2^-(U/S), U the
 * entry's part of its siblings' usage and S its part of their shares:
 * - by user: the siblings are all users;
 * - by account: an account among all accounts, then a user among the
 *   users of that account (its usage charged to that account only). Jobs
 *   sort by the account's factor, then the user's (Fair Tree's rule).
 *
 * DRF (Ghodsi et al., NSDI'11): a user's dominant share is the largest of
 * its running jobs' CPU, memory and GPU over the cluster's, over its
 * weight. The pending queue is sorted by it, and the step fills
 * progressively: the user with the smallest dominant share has its next
 * job considered, and a start raises that user's share at once. */
#include <math.h>
#include <stdlib.h>

#include "runtime/runtime_int.h"

static struct share *share_find(const loom_runtime_t *rt, int kind, uint32_t account, uint32_t user)
{
    for (size_t i = 0; i < rt->nshares; i++) {
        struct share *s = &rt->shares[i];
        if (s->kind == kind && s->user == (kind == SHARE_ACCOUNT ? 0 : user) &&
            s->account == (kind == SHARE_USER ? 0 : account))
            return s;
    }
    return NULL;
}

/* The entry (added with weight 1 when new), or NULL when out of memory.
 * The pointer holds until the next entry is added. */
static struct share *share_get(loom_runtime_t *rt, int kind, uint32_t account, uint32_t user)
{
    struct share *s = share_find(rt, kind, account, user);
    if (s)
        return s;
    if (loom_vec_reserve((void **)&rt->shares, &rt->cap_shares, rt->nshares + 1, sizeof *rt->shares,
                         RT_ARRAY_MIN_CAP))
        return NULL;
    s = &rt->shares[rt->nshares++];
    *s = (struct share){.kind = (uint8_t)kind,
                        .user = kind == SHARE_ACCOUNT ? 0 : user,
                        .account = kind == SHARE_USER ? 0 : account,
                        .weight = 1.0};
    return s;
}

/* A job's entry of one kind through its cached index. */
static struct share *job_share(loom_runtime_t *rt, rjob_t *j, int kind)
{
    uint32_t *ix = kind == SHARE_USER      ? &j->ix_user
                   : kind == SHARE_ACCOUNT ? &j->ix_acct
                                           : &j->ix_assoc;
    if (*ix)
        return &rt->shares[*ix - 1];
    struct share *s = share_get(rt, kind, j->job.account, j->job.user);
    if (s)
        *ix = (uint32_t)(s - rt->shares) + 1;
    return s;
}

void loom_runtime_set_share(loom_runtime_t *rt, uint32_t user, double weight)
{
    struct share *s = share_get(rt, SHARE_USER, 0, user);
    if (s)
        s->weight = weight;
}

double loom_runtime_share(const loom_runtime_t *rt, uint32_t user)
{
    const struct share *s = share_find(rt, SHARE_USER, 0, user);
    return s ? s->weight : 1.0;
}

void loom_runtime_set_account_share(loom_runtime_t *rt, uint32_t account, double weight)
{
    struct share *s = share_get(rt, SHARE_ACCOUNT, account, 0);
    if (s)
        s->weight = weight;
}

double loom_runtime_account_share(const loom_runtime_t *rt, uint32_t account)
{
    const struct share *s = share_find(rt, SHARE_ACCOUNT, account, 0);
    return s ? s->weight : 1.0;
}

static double positive(double w)
{
    return w > 0 ? w : 1e-9;
}

/* The i-th pending job of this step (pend, then the nf sorted arrivals). */
static rjob_t *pending_at(const loom_runtime_t *rt, size_t k)
{
    return k < rt->npend ? rt->pend[k].j : rt->fresh[k - rt->npend]->user;
}

/* ----------------------------------------------------------- fair share */

/* Usage decays, then grows by what running jobs held since the last step. */
static void usage_update(loom_runtime_t *rt, bool by_account)
{
    double dt = isfinite(rt->usage_t) && rt->now > rt->usage_t ? rt->now - rt->usage_t : 0;
    double decay = exp2(-dt / rt->queue.fairshare_half_life_s);
    rt->usage_t = rt->now;
    for (size_t i = 0; i < rt->nshares; i++)
        rt->shares[i].usage *= decay;
    for (size_t k = 0; k < rt->nact; k++) {
        rjob_t *j = rt->act[k];
        if (!j->held)
            continue;
        double g = dt * (double)loom_sched_req_gpu_total(&j->alloc.req) / LOOM_SCHED_MILLI;
        for (int kind = SHARE_USER; kind <= (by_account ? SHARE_ASSOC : SHARE_USER); kind++) {
            struct share *s = job_share(rt, j, kind);
            if (s)
                s->usage += g;
        }
    }
}

/* Every entry of one kind gets 2^-(U/S) against all entries of that kind. */
static void factors_flat(loom_runtime_t *rt, int kind)
{
    double usage = 0, weight = 0;
    for (size_t i = 0; i < rt->nshares; i++)
        if (rt->shares[i].kind == kind) {
            usage += rt->shares[i].usage;
            weight += positive(rt->shares[i].weight);
        }
    for (size_t i = 0; i < rt->nshares; i++) {
        struct share *s = &rt->shares[i];
        if (s->kind == kind)
            s->factor = exp2(-(usage > 0 ? s->usage / usage : 0) / (positive(s->weight) / weight));
    }
}

/* By account: a (account, user) pair's factor among its account's users
 * (U: its part of the account's usage, S: the user's weight over the
 * weights of the account's users). */
static void factors_within(loom_runtime_t *rt)
{
    for (size_t i = 0; i < rt->nshares; i++)
        rt->shares[i].sum_w = 0;
    for (size_t i = 0; i < rt->nshares; i++)
        if (rt->shares[i].kind == SHARE_ASSOC) {
            struct share *a = share_find(rt, SHARE_ACCOUNT, rt->shares[i].account, 0);
            if (a)
                a->sum_w += positive(loom_runtime_share(rt, rt->shares[i].user));
        }
    for (size_t i = 0; i < rt->nshares; i++) {
        struct share *s = &rt->shares[i];
        const struct share *a =
            s->kind == SHARE_ASSOC ? share_find(rt, SHARE_ACCOUNT, s->account, 0) : NULL;
        if (!a)
            continue;
        double u = a->usage > 0 ? s->usage / a->usage : 0;
        double w = positive(loom_runtime_share(rt, s->user)) / positive(a->sum_w);
        s->factor = exp2(-u / w);
    }
}

static void fairshare_update(loom_runtime_t *rt, size_t n)
{
    bool by_account = rt->queue.share_by == LOOM_SCHED_SHARE_BY_ACCOUNT;
    usage_update(rt, by_account);
    if (by_account) {
        factors_flat(rt, SHARE_ACCOUNT);
        factors_within(rt);
    } else
        factors_flat(rt, SHARE_USER);
    for (size_t k = 0; k < n; k++) {
        rjob_t *j = pending_at(rt, k);
        const struct share *top = job_share(rt, j, by_account ? SHARE_ACCOUNT : SHARE_USER);
        const struct share *sub = by_account ? job_share(rt, j, SHARE_ASSOC) : NULL;
        j->q.fairshare = top ? top->factor : 1.0;
        j->q.fairshare_sub = sub ? sub->factor : 1.0;
    }
}

/* ------------------------------------------------------------------ drf */

static double dominant(const loom_runtime_t *rt, const struct share *u)
{
    if (!u)
        return 0;
    const loom_sched_cluster_t *c = &rt->cluster;
    double d = 0;
    if (c->cpu_milli_total > 0)
        d = fmax(d, u->cpu / (double)c->cpu_milli_total);
    if (rt->mem_mib > 0)
        d = fmax(d, u->mem / rt->mem_mib);
    if (c->gpu_milli_total > 0)
        d = fmax(d, u->gpu / (double)c->gpu_milli_total);
    return d / positive(u->weight);
}

static void hold(struct share *u, const loom_sched_req_t *r)
{
    if (!u)
        return;
    u->cpu += (double)r->cpu_milli;
    u->mem += (double)r->mem_mib;
    u->gpu += (double)loom_sched_req_gpu_total(r);
}

static void drf_update(loom_runtime_t *rt, size_t n)
{
    for (size_t i = 0; i < rt->nshares; i++)
        rt->shares[i].cpu = rt->shares[i].mem = rt->shares[i].gpu = 0;
    for (size_t k = 0; k < rt->nact; k++)
        if (rt->act[k]->held)
            hold(job_share(rt, rt->act[k], SHARE_USER), &rt->act[k]->alloc.req);
    for (size_t k = 0; k < n; k++) {
        rjob_t *j = pending_at(rt, k);
        j->q.dominant = dominant(rt, job_share(rt, j, SHARE_USER));
    }
}

int rt__share_update(loom_runtime_t *rt, size_t nf)
{
    size_t n = rt->npend + nf;
    for (size_t k = 0; k < n; k++) { /* every owner counts among the siblings */
        rjob_t *j = pending_at(rt, k);
        job_share(rt, j, SHARE_USER);
        if (rt->queue.share_by == LOOM_SCHED_SHARE_BY_ACCOUNT) {
            job_share(rt, j, SHARE_ACCOUNT);
            job_share(rt, j, SHARE_ASSOC);
        }
    }
    if (rt->queue.kind == LOOM_SCHED_QUEUE_DRF)
        drf_update(rt, n);
    else
        fairshare_update(rt, n);
    return LOOM_OK;
}

/* DRF's progressive filling over the sorted queue: each user's jobs in
 * queue order; next, always the user whose dominant share is smallest now
 * (ties: whose next job comes first). Jobs that stay keep their order. */
void rt__drf_pass(loom_runtime_t *rt, uint64_t ep, bool cheap_skip)
{
    size_t n = rt->npend;
    bool *stays = malloc(n + 1);
    size_t *next = malloc((n + 1) * sizeof *next);
    size_t *slot = malloc((rt->nshares + 1) * sizeof *slot);
    struct cursor {
        struct share *u; /* NULL: no entry (out of memory) */
        size_t head, tail;
    } *cur = malloc((n + 1) * sizeof *cur);
    size_t ncur = 0;
    if (!stays || !next || !slot || !cur) { /* out of memory: plain queue order */
        n = 0;
        goto out;
    }
    for (size_t i = 0; i <= rt->nshares; i++)
        slot[i] = SIZE_MAX;
    for (size_t k = 0; k < n; k++) {
        uint32_t ix = rt->pend[k].j->ix_user; /* set by rt__share_update (0: none) */
        stays[k] = true;
        next[k] = n;
        if (slot[ix] == SIZE_MAX) {
            slot[ix] = ncur;
            cur[ncur++] = (struct cursor){ix ? &rt->shares[ix - 1] : NULL, k, k};
        } else {
            next[cur[slot[ix]].tail] = k;
            cur[slot[ix]].tail = k;
        }
    }
    while (ncur) {
        size_t best = 0;
        double db = dominant(rt, cur[0].u);
        for (size_t c = 1; c < ncur; c++) {
            double d = dominant(rt, cur[c].u);
            if (d < db || (d == db && cur[c].head < cur[best].head)) {
                best = c;
                db = d;
            }
        }
        size_t k = cur[best].head;
        loom_sched_req_t req = rt->pend[k].j->job.req;
        int what = rt__consider(rt, rt->pend[k], ep, cheap_skip);
        stays[k] = what == RT_STAYS;
        if (what == RT_STARTED)
            hold(cur[best].u, &req);
        if ((cur[best].head = next[k]) == n)
            cur[best] = cur[--ncur];
    }
out:;
    size_t keep = 0;
    for (size_t k = 0; k < rt->npend; k++) {
        struct pent e = rt->pend[k];
        if (k < n ? stays[k] : rt__consider(rt, e, ep, cheap_skip) == RT_STAYS)
            rt->pend[keep++] = e;
    }
    rt->npend = keep;
    free(stays);
    free(next);
    free(slot);
    free(cur);
}
