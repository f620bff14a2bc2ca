/* runtime/quota_submit.c — submission quotas: the most pending jobs and
 * the longest time limit a submission may have (loomd's job.submit and
 * job.update ask before anything is stored). The rules and the judgement
 * are here; how many jobs a user or account has pending is the caller's
 * (loomd counts its store, a simulator its own queue). */
#include <string.h>

#include "loom/runtime.h"

static bool applies(const loom_runtime_quota_rule_t *q, const loom_runtime_submission_t *s)
{
    return q->kind == '*' || (q->kind == 'u' && s->user && strcmp(q->name, s->user) == 0) ||
           (q->kind == 'a' && s->account && strcmp(q->name, s->account) == 0);
}

static int refuse(const loom_runtime_quota_rule_t *q, const char *what, int64_t allowed,
                  int64_t used, loom_runtime_quota_refusal_t *why, loom_err_t *err)
{
    *why = (loom_runtime_quota_refusal_t){q, what, used, allowed};
    return loom_err_set(err, LOOM_ELIMIT, "quota %s: %s %lld, the most allowed is %lld", q->text,
                        what, (long long)used, (long long)allowed);
}

static int check_time(const loom_runtime_quota_rule_t *q, const loom_runtime_submission_t *s,
                      loom_runtime_quota_refusal_t *why, loom_err_t *err)
{
    if (q->time_s < 0 || (s->time_limit_s > 0 && s->time_limit_s <= q->time_s))
        return LOOM_OK;
    refuse(q, "time limit (s)", q->time_s, s->time_limit_s, why, err);
    return loom_err_set(err, LOOM_ELIMIT,
                        "quota %s: %s; the longest time limit allowed is %lld s (give "
                        "time_limit, sbatch's --time)",
                        q->text, s->time_limit_s ? "time limit too long" : "no time limit given",
                        (long long)q->time_s);
}

int loom_runtime_quota_check_submission(const loom_runtime_quota_rule_t *rules, size_t n,
                                        const loom_runtime_submission_t *s,
                                        loom_runtime_pending_fn pending, void *ctx,
                                        loom_runtime_quota_refusal_t *why, loom_err_t *err)
{
    *why = (loom_runtime_quota_refusal_t){0};
    for (size_t i = 0; rules && i < n; i++) {
        const loom_runtime_quota_rule_t *q = &rules[i];
        if (!applies(q, s))
            continue;
        int rc = check_time(q, s, why, err);
        if (rc != LOOM_OK)
            return rc;
        if (q->pending < 0 || s->count < 1)
            continue;
        int64_t have = 0;
        if ((rc = pending(ctx, s, q->kind == 'a', &have, err)) != LOOM_OK)
            return rc;
        if (have > INT64_MAX - s->count || have + s->count > q->pending)
            return refuse(q, "pending jobs", q->pending,
                          have > INT64_MAX - s->count ? INT64_MAX : have + s->count, why, err);
    }
    return LOOM_OK;
}
