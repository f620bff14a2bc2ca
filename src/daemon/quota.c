/* Quotas: parsed from loomd --quota (or the configuration's quota lines).
 * Submission quotas are checked by job.submit before anything is stored;
 * running quotas are handed to the runtime (loomd_quota_apply), whose step
 * keeps a job that would pass one PENDING with reason QuotaLimit. */
#include <errno.h>
#include <math.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/quota.h"

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

static int parse_limits(const char *text, loomd_quota_t *q, loom_err_t *err)
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

int loomd_quota_parse(const char *spec, loomd_quotas_t *qs, loom_err_t *err)
{
    if (qs->n == LOOMD_QUOTA_MAX)
        return loom_err_set(err, LOOM_ELIMIT, "--quota: at most %d", LOOMD_QUOTA_MAX);
    loomd_quota_t *q = &qs->q[qs->n];
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
                      int64_t count, json_t **data, loom_err_t *err)
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
        if (q->pending < 0 || count < 1)
            continue;
        int64_t n;
        int rc = q->kind == 'a' ? loom_store_count_pending(store, -1, account, &n, err)
                                : loom_store_count_pending(store, who->uid, NULL, &n, err);
        if (rc != LOOM_OK)
            return rc;
        if (n + count > q->pending)
            return refuse(q, "pending jobs", q->pending, n + count, data, err);
    }
    return LOOM_OK;
}

/* ------------------------------------------------------- running quotas */

static int64_t least(int64_t a, int64_t b)
{
    return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

static void tighten(loom_runtime_limits_t *l, const loomd_quota_t *q)
{
    l->gpu_milli = least(l->gpu_milli, q->gpu_milli);
    l->jobs = least(l->jobs, q->running);
}

static bool is_running(const loomd_quota_t *q)
{
    return q->gpu_milli >= 0 || q->running >= 0;
}

/* ------------------------------------------------------------- accounts */

struct loomd_accounts {
    char **slot;   /* open addressing, linear probing; NULL: empty */
    uint32_t *id;  /* the number of slot[i]'s name */
    size_t cap, n; /* cap a power of two, kept at most half full */
};

int loomd_accounts_new(loomd_accounts_t **out, loom_err_t *err)
{
    loomd_accounts_t *a = calloc(1, sizeof *a);
    if (a) {
        a->cap = 64;
        a->slot = calloc(a->cap, sizeof *a->slot);
        a->id = calloc(a->cap, sizeof *a->id);
    }
    if (!a || !a->slot || !a->id) {
        loomd_accounts_free(a);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory for the account table");
    }
    *out = a;
    return LOOM_OK;
}

static size_t name_hash(const char *s) /* FNV-1a */
{
    size_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
}

static size_t probe(char *const *slot, size_t cap, const char *name)
{
    size_t i = name_hash(name) & (cap - 1);
    while (slot[i] && strcmp(slot[i], name) != 0)
        i = (i + 1) & (cap - 1);
    return i;
}

static bool accounts_grow(loomd_accounts_t *a)
{
    size_t cap = a->cap * 2;
    char **slot = calloc(cap, sizeof *slot);
    uint32_t *id = calloc(cap, sizeof *id);
    if (!slot || !id) {
        free(slot);
        free(id);
        return false;
    }
    for (size_t i = 0; i < a->cap; i++)
        if (a->slot[i]) {
            size_t k = probe(slot, cap, a->slot[i]);
            slot[k] = a->slot[i];
            id[k] = a->id[i];
        }
    free(a->slot);
    free(a->id);
    a->slot = slot;
    a->id = id;
    a->cap = cap;
    return true;
}

int loomd_account_id(loomd_accounts_t *a, const char *name, uint32_t *out)
{
    *out = 0;
    if (!a || !name || !*name)
        return LOOM_OK;
    size_t i = probe(a->slot, a->cap, name);
    if (a->slot[i]) {
        *out = a->id[i];
        return LOOM_OK;
    }
    if (a->n >= UINT32_MAX - 1)
        return LOOM_ELIMIT;
    if ((a->n + 1) * 2 > a->cap && !accounts_grow(a))
        return LOOM_ENOMEM;
    i = probe(a->slot, a->cap, name);
    if (!(a->slot[i] = strdup(name)))
        return LOOM_ENOMEM;
    *out = a->id[i] = (uint32_t)++a->n;
    return LOOM_OK;
}

void loomd_accounts_free(loomd_accounts_t *a)
{
    if (!a)
        return;
    for (size_t i = 0; a->slot && i < a->cap; i++)
        free(a->slot[i]);
    free(a->slot);
    free(a->id);
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

int loomd_quota_apply(const loomd_quotas_t *qs, loomd_accounts_t *accounts, loom_runtime_t *rt,
                      loom_err_t *err)
{
    loom_runtime_limits_t every = {-1, -1};
    for (size_t i = 0; qs && i < qs->n; i++)
        if (qs->q[i].kind == '*')
            tighten(&every, &qs->q[i]);
    int rc = loom_runtime_set_quota(rt, LOOM_RUNTIME_QUOTA_EVERY_USER, 0, &every);
    for (size_t i = 0; qs && rc == LOOM_OK && i < qs->n; i++) {
        const loomd_quota_t *q = &qs->q[i];
        loom_runtime_limits_t l = {-1, -1};
        uint32_t who = 0;
        if (!is_running(q) || q->kind == '*')
            continue;
        if (q->kind == 'a') {
            if ((rc = loomd_account_id(accounts, q->name, &who)) != LOOM_OK)
                break;
        } else if (!user_uid(q->name, &who)) {
            loom_log_warn("quota.unknown_user", "quota=\"%s\" note=\"no such user: not applied\"",
                          q->text);
            continue;
        } else {
            l = every; /* a user's own limits replace the default: keep both */
        }
        for (size_t k = 0; k < qs->n; k++) { /* every quota naming the same one */
            uint32_t other = 0;
            if (qs->q[k].kind == q->kind && is_running(&qs->q[k]) &&
                (q->kind == 'a' ? strcmp(qs->q[k].name, q->name) == 0
                                : user_uid(qs->q[k].name, &other) && other == who))
                tighten(&l, &qs->q[k]);
        }
        rc = loom_runtime_set_quota(
            rt, q->kind == 'a' ? LOOM_RUNTIME_QUOTA_ACCOUNT : LOOM_RUNTIME_QUOTA_USER, who, &l);
    }
    return rc == LOOM_OK ? LOOM_OK : loom_err_set(err, rc, "running quotas: out of memory");
}
