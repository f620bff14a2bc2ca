/* Submission quotas: parsed from loomd --quota, checked by job.submit before
 * anything is stored. Running quotas (GPUs, jobs) are not here: they would
 * hold jobs in the runtime's queue (reason QuotaLimit), which is not done. */
#include <stdlib.h>
#include <string.h>

#include "daemon/quota.h"

static int parse_limits(const char *text, loomd_quota_t *q, loom_err_t *err)
{
    char buf[160];
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            return loom_err_set(err, LOOM_EINVAL, "'%s': expected pending=N or time=D", kv);
        *eq = '\0';
        if (strcmp(kv, "pending") == 0) {
            if (loom_parse_i64(eq + 1, 0, 1000000000, &q->pending, "pending", err))
                return LOOM_EINVAL;
        } else if (strcmp(kv, "time") == 0) {
            int64_t ns;
            if (loom_parse_duration(eq + 1, &ns, err))
                return LOOM_EINVAL;
            q->time_s = ns / LOOM_NS_PER_S;
        } else {
            return loom_err_set(err, LOOM_EINVAL, "'%s': unknown limit (expected pending, time)",
                                kv);
        }
    }
    return q->pending < 0 && q->time_s < 0
               ? loom_err_set(err, LOOM_EINVAL, "expected pending=N and/or time=D")
               : LOOM_OK;
}

int loomd_quota_parse(const char *spec, loomd_quotas_t *qs, loom_err_t *err)
{
    if (qs->n == LOOMD_QUOTA_MAX)
        return loom_err_set(err, LOOM_ELIMIT, "--quota: at most %d", LOOMD_QUOTA_MAX);
    loomd_quota_t *q = &qs->q[qs->n];
    memset(q, 0, sizeof *q);
    q->pending = q->time_s = -1;
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
        rc = parse_limits(eq + 1, q, err);
    if (rc != LOOM_OK)
        return loom_err_prefix(err, "--quota '%.100s'", spec);
    qs->n++;
    return LOOM_OK;
}

static bool applies(const loomd_quota_t *q, const loom_auth_identity_t *who, const char *account)
{
    return q->kind == '*' || (q->kind == 'u' && strcmp(q->name, who->user) == 0) ||
           (q->kind == 'a' && account && strcmp(q->name, account) == 0);
}

static int refuse(const loomd_quota_t *q, const char *what, int64_t limit, int64_t used,
                  json_t **data, loom_err_t *err)
{
    *data = json_pack("{s:s, s:s, s:I, s:I}", "quota", q->text, "limit", what, "used",
                      (json_int_t)used, "allowed", (json_int_t)limit);
    return loom_err_set(err, LOOM_ELIMIT, "quota %s: %s %lld, the most allowed is %lld", q->text,
                        what, (long long)used, (long long)limit);
}

int loomd_quota_check(const loomd_quotas_t *qs, loom_store_t *store,
                      const loom_auth_identity_t *who, const char *account, int64_t time_limit_s,
                      json_t **data, loom_err_t *err)
{
    *data = NULL;
    for (size_t i = 0; qs && i < qs->n; i++) {
        const loomd_quota_t *q = &qs->q[i];
        if (!applies(q, who, account))
            continue;
        if (q->time_s >= 0 && (time_limit_s == 0 || time_limit_s > q->time_s)) {
            refuse(q, "time limit (s)", q->time_s, time_limit_s, data, err);
            return loom_err_set(err, LOOM_ELIMIT,
                                "quota %s: %s; the longest time limit allowed is %lld s (give "
                                "time_limit, sbatch's --time)",
                                q->text,
                                time_limit_s ? "time limit too long" : "no time limit given",
                                (long long)q->time_s);
        }
        if (q->pending < 0)
            continue;
        int64_t n;
        int rc = q->kind == 'a' ? loom_store_count_pending(store, -1, account, &n, err)
                                : loom_store_count_pending(store, who->uid, NULL, &n, err);
        if (rc != LOOM_OK)
            return rc;
        if (n + 1 > q->pending)
            return refuse(q, "pending jobs", q->pending, n + 1, data, err);
    }
    return LOOM_OK;
}
