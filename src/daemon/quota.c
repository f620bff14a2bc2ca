/* Quotas: store glue. Rules are parsed by the runtime
 * (loom_runtime_quota_parse) from loomd --quota or the configuration's
 * quota lines; job.submit asks the runtime's submission check
 * (loom_runtime_quota_check_submission) with the store's pending counts
 * before anything is stored; running quotas are handed to the runtime
 * (loomd_quota_apply), whose step keeps a job that would pass one PENDING
 * with reason QuotaLimit. Account names are numbered here for it. */
#include <errno.h>
#include <math.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/quota.h"

int loomd_quota_parse(const char *spec, loomd_quotas_t *qs, loom_err_t *err)
{
    if (qs->n == LOOMD_QUOTA_MAX)
        return loom_err_set(err, LOOM_ELIMIT, "--quota: at most %d", LOOMD_QUOTA_MAX);
    int rc = loom_runtime_quota_parse(spec, &qs->q[qs->n], err);
    qs->n += rc == LOOM_OK;
    return rc;
}

struct pending_ctx {
    loom_store_t *store;
    uint32_t uid;
};

static int count_pending(void *ctx, const loom_runtime_submission_t *s, bool by_account, int64_t *n,
                         loom_err_t *err)
{
    const struct pending_ctx *p = ctx;
    return by_account ? loom_store_count_pending(p->store, -1, s->account, n, err)
                      : loom_store_count_pending(p->store, p->uid, NULL, n, err);
}

int loomd_quota_check(const loomd_quotas_t *qs, loom_store_t *store,
                      const loom_auth_identity_t *who, const char *account, int64_t time_limit_s,
                      int64_t count, json_t **data, loom_err_t *err)
{
    *data = NULL;
    struct pending_ctx ctx = {store, who->uid};
    loom_runtime_submission_t s = {who->user, account, time_limit_s, count};
    loom_runtime_quota_refusal_t why;
    int rc = loom_runtime_quota_check_submission(qs ? qs->q : NULL, qs ? qs->n : 0, &s,
                                                 count_pending, &ctx, &why, err);
    if (rc == LOOM_ELIMIT && why.rule)
        *data = json_pack("{s:s, s:s, s:I, s:I}", "quota", why.rule->text, "limit", why.what,
                          "used", (json_int_t)why.used, "allowed", (json_int_t)why.allowed);
    return rc;
}

/* ------------------------------------------------------------- accounts */

struct loomd_accounts {
    loom_map_t ids; /* name -> its number (1, 2, ...) */
};

int loomd_accounts_new(loomd_accounts_t **out, loom_err_t *err)
{
    loomd_accounts_t *a = calloc(1, sizeof *a);
    if (!a)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory for the account table");
    loom_map_init(&a->ids, LOOM_MAP_STR);
    *out = a;
    return LOOM_OK;
}

int loomd_account_id(loomd_accounts_t *a, const char *name, uint32_t *out)
{
    *out = 0;
    if (!a || !name || !*name)
        return LOOM_OK;
    uint64_t id;
    if (loom_map_get_str(&a->ids, name, &id)) {
        *out = (uint32_t)id;
        return LOOM_OK;
    }
    size_t n = loom_map_count(&a->ids);
    if (n >= UINT32_MAX - 1)
        return LOOM_ELIMIT;
    if (loom_map_put_str(&a->ids, name, n + 1) < 0)
        return LOOM_ENOMEM;
    *out = (uint32_t)(n + 1);
    return LOOM_OK;
}

void loomd_accounts_free(loomd_accounts_t *a)
{
    if (!a)
        return;
    loom_map_free(&a->ids);
    free(a);
}

/* A user quota's uid: the login in the user database, or digits. */
static bool user_uid(const char *name, uint32_t *uid)
{
    char *end;
    errno = 0;
    unsigned long n = strtoul(name, &end, 10);
    if (*name && !*end && !errno && n < UINT32_MAX) {
        *uid = (uint32_t)n;
        return true;
    }
    struct passwd pw, *res = NULL;
    char buf[4096];
    if (getpwnam_r(name, &pw, buf, sizeof buf, &res) != 0 || !res)
        return false;
    *uid = (uint32_t)res->pw_uid;
    return true;
}

/* A rule's user (by login or uid, in the user database now) or account
 * (numbered as the runner numbers its jobs' accounts). */
static int resolve(void *ctx, loom_runtime_quota_kind_t kind, const char *name, uint32_t *who)
{
    if (kind == LOOM_RUNTIME_QUOTA_ACCOUNT)
        return loomd_account_id(ctx, name, who);
    if (user_uid(name, who))
        return LOOM_OK;
    loom_log_warn("quota.unknown_user", "user=\"%s\" note=\"no such user: not applied\"", name);
    return LOOM_ENOTFOUND;
}

int loomd_quota_apply(const loomd_quotas_t *qs, loomd_accounts_t *accounts, loom_runtime_t *rt,
                      loom_err_t *err)
{
    return loom_runtime_quota_apply(rt, qs ? qs->q : NULL, qs ? qs->n : 0, resolve, accounts, err);
}
