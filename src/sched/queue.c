/* sched/queue.c — queue order: which pending job is considered first.
 *
 * fifo      submission time.
 * sjf       shortest job first by the job's estimate, else its time limit;
 *           jobs with neither go last, in submission order.
 * priority  larger priority first, then submission time.
 * tiresias  discretized two-dimensional least-attained-service (Gu et al.,
 *           NSDI'19): attained service = GPUs x seconds run so far; K queues
 *           split by thresholds; lower queues first, FIFO within a queue; a
 *           job starved long enough is promoted to the highest queue. The
 *           order is half of it: the runtime (runtime/tiresias.c) preempts
 *           running jobs of lower queues for waiting jobs of higher ones.
 *           "tiresias:thresholds=T1/T2/...,knob=X" sets K - 1 thresholds and
 *           the starvation knob.
 *
 * fairshare Slurm's classic fair-share factor F = 2^(-U/S) of the job's user:
 *           U its decayed usage over all users' (GPU-seconds, halved every
 *           half-life), S its share over all users' shares. The runtime
 *           keeps the usage and sets each job's factor; larger first.
 *           by=account: the account's factor among accounts first, then
 *           the user's factor among the account's users (Fair Tree's rule:
 *           every user of a better-placed account goes first).
 * tiresias+fairshare  Tiresias' queue first, then fair share within it
 *           (instead of FIFO).
 * drf       dominant-resource fairness (Ghodsi et al., NSDI'11): the owner's
 *           dominant share of the cluster (largest of its running CPU,
 *           memory and GPU over the capacity, over its weight), smaller
 *           first; the runtime keeps it and raises it as it starts jobs.
 *
 * Ties always fall back to submission time, then id, so the order is total
 * and deterministic. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "loom/sched.h"

/* Fair share's options after "fairshare": "" or ":" and a comma-separated
 * list of a half-life ("1h" or "half-life=1h") and "by=user|account". */
static int parse_fairshare(const char *name, const char *opts, loom_sched_queue_cfg_t *out,
                           loom_err_t *err)
{
    int64_t ns = 7 * 24 * 3600 * LOOM_NS_PER_S;
    out->share_by = LOOM_SCHED_SHARE_BY_USER;
    if (*opts == ':' && opts[1])
        opts++;
    else if (*opts)
        goto bad;
    while (*opts) {
        size_t len = strcspn(opts, ",");
        char item[64];
        if (len == 0 || len >= sizeof item || (opts[len] == ',' && !opts[len + 1]))
            goto bad;
        memcpy(item, opts, len);
        item[len] = '\0';
        opts += len + (opts[len] == ',');
        if (strcmp(item, "by=user") == 0)
            out->share_by = LOOM_SCHED_SHARE_BY_USER;
        else if (strcmp(item, "by=account") == 0)
            out->share_by = LOOM_SCHED_SHARE_BY_ACCOUNT;
        else {
            const char *d = strncmp(item, "half-life=", 10) == 0 ? item + 10 : item;
            if (loom_parse_duration(d, &ns, NULL) != LOOM_OK || ns <= 0)
                goto bad;
        }
    }
    out->fairshare_half_life_s = (double)ns / 1e9;
    return LOOM_OK;
bad:
    return loom_err_set(err, LOOM_EINVAL,
                        "queue policy '%s': expected fairshare[:OPTS] with OPTS a comma-separated "
                        "list of a positive half-life (e.g. 1h or half-life=1h) and by=user or "
                        "by=account (e.g. fairshare:1h,by=account)",
                        name);
}

/* Tiresias' thresholds "T1/T2/...": GPU-seconds, ascending, > 0, at most
 * LOOM_SCHED_TIRESIAS_MAXK - 1 of them. */
static bool parse_thresholds(const char *text, loom_sched_queue_cfg_t *out)
{
    int n = 0;
    while (*text) {
        if (n == LOOM_SCHED_TIRESIAS_MAXK - 1)
            return false;
        char *end;
        double t = strtod(text, &end);
        if (end == text || !(t > 0 && t <= 1e15) || (n && t <= out->thresholds[n - 1]) ||
            (*end && *end != '/') || (*end == '/' && !end[1]))
            return false;
        out->thresholds[n++] = t;
        text = *end ? end + 1 : end;
    }
    out->k = n + 1;
    return n > 0;
}

/* Tiresias' options after "tiresias": "" or ":" and a comma-separated list
 * of "thresholds=T1/T2/..." (K - 1 of them) and "knob=X" (PROMOTEKNOB, 0:
 * no promotion). */
static int parse_tiresias(const char *name, const char *opts, loom_sched_queue_cfg_t *out,
                          loom_err_t *err)
{
    if (*opts == ':' && opts[1])
        opts++;
    else if (*opts)
        goto bad;
    while (*opts) {
        size_t len = strcspn(opts, ",");
        char item[160], *end;
        if (len == 0 || len >= sizeof item || (opts[len] == ',' && !opts[len + 1]))
            goto bad;
        memcpy(item, opts, len);
        item[len] = '\0';
        opts += len + (opts[len] == ',');
        if (strncmp(item, "thresholds=", 11) == 0) {
            if (!parse_thresholds(item + 11, out))
                goto bad;
        } else if (strncmp(item, "knob=", 5) == 0) {
            double x = strtod(item + 5, &end);
            if (end == item + 5 || *end || !(x >= 0 && x <= 1e6))
                goto bad;
            out->starve_factor = x;
        } else
            goto bad;
    }
    return LOOM_OK;
bad:
    return loom_err_set(err, LOOM_EINVAL,
                        "queue policy '%s': expected tiresias[:OPTS] with OPTS a comma-separated "
                        "list of thresholds=T1/T2/... (1 to %d ascending GPU-seconds > 0) and "
                        "knob=X (the starvation knob, 0 to 1e6; 0: off), e.g. "
                        "tiresias:thresholds=3200/25600,knob=2",
                        name, LOOM_SCHED_TIRESIAS_MAXK - 1);
}

int loom_sched_queue_cfg_parse(const char *name, loom_sched_queue_cfg_t *out, loom_err_t *err)
{
    memset(out, 0, sizeof *out);
    out->k = 1;
    if (strcmp(name, "fifo") == 0)
        out->kind = LOOM_SCHED_QUEUE_FIFO;
    else if (strcmp(name, "sjf") == 0)
        out->kind = LOOM_SCHED_QUEUE_SJF;
    else if (strcmp(name, "priority") == 0)
        out->kind = LOOM_SCHED_QUEUE_PRIORITY;
    else if (strncmp(name, "tiresias", 8) == 0 && (name[8] == '\0' || name[8] == ':')) {
        out->kind = LOOM_SCHED_QUEUE_TIRESIAS;
        out->k = 2;
        out->thresholds[0] = 3200.0;
        out->starve_factor = 2.0;
        return parse_tiresias(name, name + 8, out, err);
    } else if (strcmp(name, "drf") == 0)
        out->kind = LOOM_SCHED_QUEUE_DRF;
    else if (strncmp(name, "fairshare", 9) == 0 && (name[9] == '\0' || name[9] == ':')) {
        out->kind = LOOM_SCHED_QUEUE_FAIRSHARE;
        return parse_fairshare(name, name + 9, out, err);
    } else if (strncmp(name, "tiresias+fairshare", 18) == 0 &&
               (name[18] == '\0' || name[18] == ':')) {
        int rc = loom_sched_queue_cfg_parse("tiresias", out, err); /* its defaults */
        out->kind = LOOM_SCHED_QUEUE_TIRESIAS_FAIRSHARE;
        return rc ? rc : parse_fairshare(name, name + 18, out, err);
    } else
        return loom_err_set(
            err, LOOM_EINVAL,
            "queue policy '%s': expected fifo, sjf, priority, tiresias[:OPTS], drf, "
            "fairshare[:OPTS] or tiresias+fairshare[:OPTS]",
            name);
    return LOOM_OK;
}

int loom_sched_tiresias_level(const loom_sched_queue_cfg_t *cfg, const loom_sched_qjob_t *j,
                              double now_s)
{
    int k = cfg->k < 1 ? 1 : cfg->k > LOOM_SCHED_TIRESIAS_MAXK ? LOOM_SCHED_TIRESIAS_MAXK : cfg->k;
    double waited = now_s - j->wait_since_s;
    if (cfg->starve_limit_s > 0 && waited >= cfg->starve_limit_s)
        return 0;
    if (cfg->starve_factor > 0 && j->last_run_s > 0 && waited >= cfg->starve_min_s &&
        waited >= cfg->starve_factor * j->last_run_s)
        return 0;
    int level = 0;
    while (level < k - 1 && j->attained_gpu_s >= cfg->thresholds[level])
        level++;
    return level;
}

static _Thread_local const loom_sched_queue_cfg_t *sort_cfg;

static double sjf_key(const loom_sched_qjob_t *j)
{
    if (j->estimate_s > 0)
        return j->estimate_s;
    if (j->time_limit_s > 0)
        return j->time_limit_s;
    return INFINITY;
}

static int cmp_tail(const loom_sched_qjob_t *a, const loom_sched_qjob_t *b)
{
    if (a->submit_s != b->submit_s)
        return a->submit_s < b->submit_s ? -1 : 1;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return 0;
}

int loom_sched_queue_cmp(const loom_sched_queue_cfg_t *cfg, const loom_sched_qjob_t *a,
                         const loom_sched_qjob_t *b)
{
    switch (cfg->kind) {
    case LOOM_SCHED_QUEUE_FIFO: break;
    case LOOM_SCHED_QUEUE_SJF: {
        double ka = sjf_key(a), kb = sjf_key(b);
        if (ka != kb)
            return ka < kb ? -1 : 1;
        break;
    }
    case LOOM_SCHED_QUEUE_PRIORITY:
        if (a->priority != b->priority)
            return a->priority > b->priority ? -1 : 1;
        break;
    case LOOM_SCHED_QUEUE_TIRESIAS:
        if (a->level != b->level)
            return a->level < b->level ? -1 : 1;
        break;
    case LOOM_SCHED_QUEUE_TIRESIAS_FAIRSHARE:
        if (a->level != b->level)
            return a->level < b->level ? -1 : 1;
        /* fall through: fair share within a level */
    case LOOM_SCHED_QUEUE_FAIRSHARE:
        if (a->fairshare != b->fairshare)
            return a->fairshare > b->fairshare ? -1 : 1;
        if (a->fairshare_sub != b->fairshare_sub)
            return a->fairshare_sub > b->fairshare_sub ? -1 : 1;
        break;
    case LOOM_SCHED_QUEUE_DRF:
        if (a->dominant != b->dominant)
            return a->dominant < b->dominant ? -1 : 1;
        break;
    }
    return cmp_tail(a, b);
}

static int cmp_jobs(const void *x, const void *y)
{
    return loom_sched_queue_cmp(sort_cfg, *(loom_sched_qjob_t *const *)x,
                                *(loom_sched_qjob_t *const *)y);
}

void loom_sched_queue_order(const loom_sched_queue_cfg_t *cfg, loom_sched_qjob_t **jobs, size_t n,
                            double now_s)
{
    for (size_t i = 0; i < n; i++)
        jobs[i]->level = cfg->kind == LOOM_SCHED_QUEUE_TIRESIAS ||
                                 cfg->kind == LOOM_SCHED_QUEUE_TIRESIAS_FAIRSHARE
                             ? loom_sched_tiresias_level(cfg, jobs[i], now_s)
                             : 0;
    if (n < 2)
        return;
    sort_cfg = cfg;
    qsort(jobs, n, sizeof *jobs, cmp_jobs);
    sort_cfg = NULL;
}
