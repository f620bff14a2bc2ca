/* Submission quotas (docs/security.md#quotas): per user, per account, or
 * for every user, the most pending jobs and the longest time limit a
 * submission may have. A submission beyond one is refused, naming it. */
#ifndef LOOMD_QUOTA_H
#define LOOMD_QUOTA_H

#include "loom/auth.h"
#include "loom/rpc.h"
#include "loom/store.h"

#define LOOMD_QUOTA_MAX 64

typedef struct loomd_quota {
    char kind;       /* 'u' user, 'a' account, '*' every user */
    char name[64];   /* user or account name */
    int64_t pending; /* -1: no limit */
    int64_t time_s;  /* longest time limit, seconds; -1: no limit */
    char text[160];  /* as given */
} loomd_quota_t;

typedef struct loomd_quotas {
    loomd_quota_t q[LOOMD_QUOTA_MAX];
    size_t n;
} loomd_quotas_t;

/* Parses "user:NAME=LIMITS", "account:NAME=LIMITS" or "*=LIMITS" with
 * LIMITS "pending=N,time=D" (either or both); appends to qs. */
int loomd_quota_parse(const char *spec, loomd_quotas_t *qs, loom_err_t *err);

/* Checks a submission of `who` charged to `account` with `time_limit_s`
 * (0: none) against every quota that applies. LOOM_OK, or LOOM_ELIMIT with
 * the message naming the quota, and *data (new) {quota, limit, used}. */
int loomd_quota_check(const loomd_quotas_t *qs, loom_store_t *store,
                      const loom_auth_identity_t *who, const char *account, int64_t time_limit_s,
                      json_t **data, loom_err_t *err);

#endif
