/* Quotas (docs/security.md#quotas): per user, per account, or for every
 * user. Submission quotas, the most pending jobs and the longest time limit
 * a submission may have: a submission beyond one is refused, naming it.
 * Running quotas, the most GPUs and jobs running at once: given to the
 * runtime, which keeps a job that would pass one PENDING (QuotaLimit). */
#ifndef LOOMD_QUOTA_H
#define LOOMD_QUOTA_H

#include "loom/auth.h"
#include "loom/rpc.h"
#include "loom/runtime.h"
#include "loom/store.h"

#define LOOMD_QUOTA_MAX 64

typedef loom_runtime_quota_rule_t loomd_quota_t;

typedef struct loomd_quotas {
    loomd_quota_t q[LOOMD_QUOTA_MAX];
    size_t n;
} loomd_quotas_t;

/* Parses "user:NAME=LIMITS", "account:NAME=LIMITS" or "*=LIMITS" with
 * LIMITS "pending=N,time=D,gpus=G,running=N" (any of them; G in GPUs with
 * up to three decimals, 1.5 = 1500 milli-GPU); appends to qs. */
int loomd_quota_parse(const char *spec, loomd_quotas_t *qs, loom_err_t *err);

/* Checks a submission of `who` charged to `account` with `time_limit_s`
 * (0: none) that creates `count` pending jobs (an array: its tasks; 0: a
 * change of a job that exists, job.update, checked for its time limit
 * only) against every quota that applies. LOOM_OK, or LOOM_ELIMIT with the
 * message naming the quota, and *data (new) {quota, limit, used}. */
int loomd_quota_check(const loomd_quotas_t *qs, loom_store_t *store,
                      const loom_auth_identity_t *who, const char *account, int64_t time_limit_s,
                      int64_t count, json_t **data, loom_err_t *err);

/* Account names to the runtime's account numbers (loom_runtime_job_t's
 * account), one number per name, for running quotas and fair share by
 * account alike. Names are the submitters' groups (identity.c), so their
 * count is bounded by the user database. Not thread-safe: the runner's lock. */
typedef struct loomd_accounts loomd_accounts_t;
int loomd_accounts_new(loomd_accounts_t **out, loom_err_t *err);
/* The number of an account name, given it on first sight (1, 2, ...);
 * 0 for NULL or "" (no account) or a NULL table. LOOM_ENOMEM (or LOOM_ELIMIT past 2^32-2
 * names) leaves *out 0 and the table as it was: the caller must not use a
 * job without its account, which no account quota would hold. */
int loomd_account_id(loomd_accounts_t *a, const char *name, uint32_t *out);
void loomd_accounts_free(loomd_accounts_t *a);

/* Running quotas into the runtime: every quota that applies holds (the
 * least of them). Users are named by login (or uid) and found in the user
 * database now; an unknown one is logged and skipped. Accounts are
 * numbered through `accounts`, as the runner numbers its jobs' accounts. */
int loomd_quota_apply(const loomd_quotas_t *qs, loomd_accounts_t *accounts, loom_runtime_t *rt,
                      loom_err_t *err);

#endif
