/* runtime/quota.c — running quotas per user and per account.
 *
 * Slurm's GrpTRES=gres/gpu and MaxJobs limits as the step sees them: every
 * user and every account a job names has an entry that counts what it runs
 * now (jobs, milli-GPU of their requests; suspended jobs count, since they
 * keep their place to come back to) and the limits that apply to it, its
 * own or its kind's default. A pending job whose start would take either of
 * its entries past a limit is blocked (reason QuotaLimit) like a held one:
 * it stays pending and holds back nobody behind it.
 *
 * Each job finds its entries once, when it is made (an entry is kept for
 * as long as the runtime lives: there are as many as users and accounts),
 * so the step's test is two array reads. Nothing here reads a clock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_int.h"

static const loom_runtime_limits_t NO_LIMITS = {-1, -1};

static uint64_t quota_key(loom_runtime_quota_kind_t kind, uint32_t who)
{
    return (uint64_t)(kind == LOOM_RUNTIME_QUOTA_ACCOUNT) << 32 | who;
}

/* The entry of key (index + 1), made if need be; 0 when out of memory. */
static uint32_t entry(loom_runtime_t *rt, uint64_t key)
{
    uint64_t v;
    if (loom_map_get_u64(&rt->quota_idx, key, &v))
        return (uint32_t)v + 1;
    if (rt->nquotas >= UINT32_MAX - 1 ||
        loom_vec_reserve((void **)&rt->quotas, &rt->cap_quotas, rt->nquotas + 1, sizeof *rt->quotas,
                         RT_ARRAY_MIN_CAP) ||
        loom_map_put_u64(&rt->quota_idx, key, rt->nquotas) < 0)
        return 0;
    rt->quotas[rt->nquotas] = (struct quota){.key = key, .limits = NO_LIMITS};
    return (uint32_t)++rt->nquotas;
}

static const struct quota *find(const loom_runtime_t *rt, uint64_t key)
{
    uint64_t v;
    return loom_map_get_u64(&rt->quota_idx, key, &v) ? &rt->quotas[v] : NULL;
}

int rt__quota_attach(loom_runtime_t *rt, rjob_t *j)
{
    j->quser = entry(rt, quota_key(LOOM_RUNTIME_QUOTA_USER, j->job.user));
    j->qacct = entry(rt, quota_key(LOOM_RUNTIME_QUOTA_ACCOUNT, j->job.account));
    return j->quser && j->qacct ? LOOM_OK : LOOM_ENOMEM;
}

void rt__quota_track(loom_runtime_t *rt, rjob_t *j, int delta)
{
    if (delta > 0)
        j->quota_gpu = loom_sched_req_gpu_total(&j->job.req);
    uint32_t e[2] = {j->quser, j->qacct};
    for (int k = 0; k < 2; k++)
        if (e[k]) {
            rt->quotas[e[k] - 1].jobs += delta;
            rt->quotas[e[k] - 1].gpu_milli += delta * j->quota_gpu;
        }
}

static const loom_runtime_limits_t *limits_of(const loom_runtime_t *rt, const struct quota *q,
                                              int kind)
{
    return q->own ? &q->limits : &rt->quota_every[kind];
}

static bool over(const loom_runtime_limits_t *l, const struct quota *q, int64_t gpu)
{
    return (l->jobs >= 0 && q->jobs + 1 > l->jobs) ||
           (l->gpu_milli >= 0 && gpu > 0 && q->gpu_milli + gpu > l->gpu_milli);
}

bool rt__quota_blocks(const loom_runtime_t *rt, const rjob_t *j)
{
    if (!rt->quota_on)
        return false;
    int64_t gpu = loom_sched_req_gpu_total(&j->job.req);
    const struct quota *u = j->quser ? &rt->quotas[j->quser - 1] : NULL;
    const struct quota *a = j->qacct ? &rt->quotas[j->qacct - 1] : NULL;
    return (u && over(limits_of(rt, u, 0), u, gpu)) || (a && over(limits_of(rt, a, 1), a, gpu));
}

/* Fills *out when limits l of entry q (kind) hold a job asking gpu. */
static bool holds(const loom_runtime_limits_t *l, const struct quota *q, int64_t gpu,
                  loom_runtime_quota_kind_t kind, loom_runtime_quota_hold_t *out)
{
    if (!over(l, q, gpu))
        return false;
    bool g = l->gpu_milli >= 0 && gpu > 0 && q->gpu_milli + gpu > l->gpu_milli;
    *out = (loom_runtime_quota_hold_t){.kind = kind,
                                       .who = (uint32_t)q->key,
                                       .gpus = g,
                                       .used = g ? q->gpu_milli : q->jobs,
                                       .asks = g ? gpu : 1,
                                       .allowed = g ? l->gpu_milli : l->jobs};
    return true;
}

int loom_runtime_quota_hold(const loom_runtime_t *rt, uint64_t id, loom_runtime_quota_hold_t *out)
{
    const rjob_t *j = rt__find(rt, id);
    if (!j)
        return LOOM_ENOTFOUND;
    if (j->state != LOOM_RUNTIME_PENDING || !rt->quota_on)
        return LOOM_ESTATE;
    int64_t gpu = loom_sched_req_gpu_total(&j->job.req);
    const struct quota *u = j->quser ? &rt->quotas[j->quser - 1] : NULL;
    const struct quota *a = j->qacct ? &rt->quotas[j->qacct - 1] : NULL;
    if (u && holds(limits_of(rt, u, 0), u, gpu, LOOM_RUNTIME_QUOTA_USER, out))
        return LOOM_OK;
    if (a && holds(limits_of(rt, a, 1), a, gpu, LOOM_RUNTIME_QUOTA_ACCOUNT, out))
        return LOOM_OK;
    return LOOM_ESTATE;
}

void rt__quota_free(loom_runtime_t *rt)
{
    free(rt->quotas);
    loom_map_free(&rt->quota_idx);
}

int loom_runtime_set_quota(loom_runtime_t *rt, loom_runtime_quota_kind_t kind, uint32_t who,
                           const loom_runtime_limits_t *limits)
{
    loom_runtime_limits_t l = limits ? *limits : NO_LIMITS;
    rt->quota_on = rt->quota_on || l.gpu_milli >= 0 || l.jobs >= 0;
    if (kind == LOOM_RUNTIME_QUOTA_EVERY_USER || kind == LOOM_RUNTIME_QUOTA_EVERY_ACCOUNT) {
        rt->quota_every[kind == LOOM_RUNTIME_QUOTA_EVERY_ACCOUNT] = l;
        return LOOM_OK;
    }
    uint32_t e = entry(rt, quota_key(kind, who));
    if (!e)
        return LOOM_ENOMEM;
    rt->quotas[e - 1].limits = l;
    rt->quotas[e - 1].own = limits != NULL;
    return LOOM_OK;
}

void loom_runtime_quota_usage(const loom_runtime_t *rt, loom_runtime_quota_kind_t kind,
                              uint32_t who, loom_runtime_usage_t *out)
{
    int k = kind == LOOM_RUNTIME_QUOTA_ACCOUNT || kind == LOOM_RUNTIME_QUOTA_EVERY_ACCOUNT;
    const struct quota *q = find(rt, quota_key(k ? LOOM_RUNTIME_QUOTA_ACCOUNT : kind, who));
    *out = (loom_runtime_usage_t){.limits = rt->quota_every[k]};
    if (q) {
        out->gpu_milli = q->gpu_milli;
        out->jobs = q->jobs;
        out->limits = *limits_of(rt, q, k);
    }
}

/* ------------------------------------------------------------- rules */

#define QUOTA_GPUS_MAX 1000000 /* GPUs a running quota may name */

/* "1.5" GPUs -> 1500 milli-GPU: a plain decimal, at most three decimals. */
static int parse_gpus(const char *v, int64_t *milli, loom_err_t *err)
{
    int64_t whole = 0, frac = 0;
    int digits = 0, decimals = 0;
    const char *c = v;
    for (; *c >= '0' && *c <= '9' && whole <= QUOTA_GPUS_MAX; c++, digits++)
        whole = whole * 10 + (*c - '0');
    bool point = *c == '.';
    if (point)
        for (c++; *c >= '0' && *c <= '9' && decimals < 4; c++, decimals++)
            frac = frac * 10 + (*c - '0');
    if (!digits || *c || (point && !decimals) || decimals > 3 || whole > QUOTA_GPUS_MAX)
        return loom_err_set(err, LOOM_EINVAL,
                            "gpus '%s': expected GPUs from 0 to %d with at most three decimals "
                            "(1.5 = 1500 milli-GPU)",
                            v, QUOTA_GPUS_MAX);
    for (; decimals < 3; decimals++)
        frac *= 10;
    *milli = whole * 1000 + frac;
    return LOOM_OK;
}

static int parse_limits(const char *text, loom_runtime_quota_rule_t *q, loom_err_t *err)
{
    char buf[160];
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            return loom_err_set(err, LOOM_EINVAL,
                                "'%s': expected pending=N, time=D, gpus=G or running=N", kv);
        *eq = '\0';
        if (strcmp(kv, "pending") == 0) {
            if (loom_parse_i64(eq + 1, 0, 1000000000, &q->pending, "pending", err))
                return LOOM_EINVAL;
        } else if (strcmp(kv, "time") == 0) {
            int64_t ns;
            if (loom_parse_duration(eq + 1, &ns, err))
                return LOOM_EINVAL;
            q->time_s = ns / LOOM_NS_PER_S;
        } else if (strcmp(kv, "gpus") == 0) {
            if (parse_gpus(eq + 1, &q->gpu_milli, err))
                return LOOM_EINVAL;
        } else if (strcmp(kv, "running") == 0) {
            if (loom_parse_i64(eq + 1, 0, 1000000000, &q->running, "running", err))
                return LOOM_EINVAL;
        } else {
            return loom_err_set(err, LOOM_EINVAL,
                                "'%s': unknown limit (expected pending, time, gpus, running)", kv);
        }
    }
    return q->pending < 0 && q->time_s < 0 && q->gpu_milli < 0 && q->running < 0
               ? loom_err_set(err, LOOM_EINVAL,
                              "expected one or more of pending=N, time=D, gpus=G, running=N")
               : LOOM_OK;
}

int loom_runtime_quota_parse(const char *spec, loom_runtime_quota_rule_t *q, loom_err_t *err)
{
    memset(q, 0, sizeof *q);
    q->pending = q->time_s = q->gpu_milli = q->running = -1;
    snprintf(q->text, sizeof q->text, "%s", spec);
    const char *eq = strchr(spec, '=');
    size_t wlen = eq ? (size_t)(eq - spec) : 0;
    int rc = LOOM_OK;
    if (eq && wlen == 1 && spec[0] == '*') {
        q->kind = '*';
    } else if (eq && wlen > 5 && wlen - 5 < sizeof q->name && strncmp(spec, "user:", 5) == 0) {
        q->kind = 'u';
        memcpy(q->name, spec + 5, wlen - 5);
    } else if (eq && wlen > 8 && wlen - 8 < sizeof q->name && strncmp(spec, "account:", 8) == 0) {
        q->kind = 'a';
        memcpy(q->name, spec + 8, wlen - 8);
    } else {
        rc = loom_err_set(err, LOOM_EINVAL, "expected user:NAME=, account:NAME= or *=");
    }
    if (rc == LOOM_OK)
        // cppcheck-suppress nullPointerArithmeticRedundantCheck ; rc is OK only where eq was found
        rc = parse_limits(eq + 1, q, err);
    if (rc != LOOM_OK)
        return loom_err_prefix(err, "--quota '%.100s'", spec);
    return LOOM_OK;
}

static int64_t least(int64_t a, int64_t b)
{
    return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

static void tighten(loom_runtime_limits_t *l, const loom_runtime_quota_rule_t *q)
{
    l->gpu_milli = least(l->gpu_milli, q->gpu_milli);
    l->jobs = least(l->jobs, q->running);
}

static bool is_running(const loom_runtime_quota_rule_t *q)
{
    return q->gpu_milli >= 0 || q->running >= 0;
}

int loom_runtime_quota_apply(loom_runtime_t *rt, const loom_runtime_quota_rule_t *rules, size_t n,
                             loom_runtime_quota_resolve_fn resolve, void *ctx, loom_err_t *err)
{
    loom_runtime_limits_t every = {-1, -1};
    for (size_t i = 0; i < n; i++)
        if (rules[i].kind == '*')
            tighten(&every, &rules[i]);
    int rc = loom_runtime_set_quota(rt, LOOM_RUNTIME_QUOTA_EVERY_USER, 0, &every);
    for (size_t i = 0; rc == LOOM_OK && i < n; i++) {
        const loom_runtime_quota_rule_t *q = &rules[i];
        if (!is_running(q) || q->kind == '*')
            continue;
        loom_runtime_quota_kind_t kind =
            q->kind == 'a' ? LOOM_RUNTIME_QUOTA_ACCOUNT : LOOM_RUNTIME_QUOTA_USER;
        uint32_t who = 0;
        rc = resolve(ctx, kind, q->name, &who);
        if (rc == LOOM_ENOTFOUND) { /* the caller said why */
            rc = LOOM_OK;
            continue;
        }
        if (rc != LOOM_OK)
            break;
        /* a user's own limits replace the default: keep both */
        loom_runtime_limits_t l =
            kind == LOOM_RUNTIME_QUOTA_USER ? every : (loom_runtime_limits_t){-1, -1};
        for (size_t k = 0; k < n; k++) { /* every rule naming the same one */
            uint32_t other = 0;
            if (rules[k].kind == q->kind && is_running(&rules[k]) &&
                (k == i || resolve(ctx, kind, rules[k].name, &other) == LOOM_OK) &&
                (k == i || other == who))
                tighten(&l, &rules[k]);
        }
        rc = loom_runtime_set_quota(rt, kind, who, &l);
    }
    return rc == LOOM_OK ? LOOM_OK
                         : loom_err_set(err, rc, "running quotas: %s",
                                        rc == LOOM_ENOMEM ? "out of memory" : "cannot apply");
}
