/* loomd's identities (docs/security.md): the auth part wired to the RPC
 * server's identity hook, and what the methods ask of it (who calls, may
 * they act on a job). Single-user mode (the default) installs no hook: every
 * caller is loomd's own user, an operator, as before users existed. */
#ifndef LOOMD_IDENTITY_H
#define LOOMD_IDENTITY_H

#include <stdbool.h>

#include "loom/auth.h"
#include "loom/estimate.h"
#include "loom/rpc.h"
#include "loom/store.h"

typedef struct loomd_identity_config {
    bool multi_user;          /* --multi-user */
    const char *operators;    /* --operators GROUP, or NULL */
    bool allow_root_jobs;     /* --allow-root-jobs */
    const char *munge_socket; /* --munge-socket PATH, or NULL (libmunge's default) */
    const char *token;        /* the operator token */
} loomd_identity_config_t;

typedef struct loomd_identity loomd_identity_t;

/* Option checks: --operators, --allow-root-jobs and --munge-socket need
 * --multi-user, which needs --socket PATH (or 'none': the default socket
 * lies in the state directory, which nobody else may enter). Both
 * executors run jobs as their owners (docs/security.md). */
int loomd_identity_check_args(const loomd_identity_config_t *cfg, const char *socket,
                              loom_err_t *err);

/* Multi-user: loomd must run as root (to run jobs as their owners), and the
 * state directory is made 0700 and must belong to loomd's user. */
int loomd_identity_prepare(const loomd_identity_config_t *cfg, const char *state_dir,
                           loom_err_t *err);

/* Multi-user: the Unix socket at path (may be NULL) becomes connectable by
 * everyone (0666): the kernel tells loomd who connects. */
int loomd_identity_open_socket(const loomd_identity_t *ident, const char *path, loom_err_t *err);

int loomd_identity_new(const loomd_identity_config_t *cfg, loomd_identity_t **out, loom_err_t *err);
void loomd_identity_free(loomd_identity_t *ident);

/* Multi-user mode: sets the server's identity hook (MUNGE or the token on
 * TCP, SO_PEERCRED on the Unix socket). Single-user: leaves cfg alone. */
void loomd_identity_install(loomd_identity_t *ident, loom_rpc_server_config_t *cfg);

bool loomd_identity_multi_user(const loomd_identity_t *ident);

/* The caller of a call: what the hook made of it, else (single-user, or a
 * call from inside loomd) loomd's own user as an operator, built in *local.
 * ident may be NULL (single-user). */
const loom_auth_identity_t *loomd_caller(const loomd_identity_t *ident, const loom_rpc_call_t *call,
                                         loom_auth_identity_t *local);

/* Fills spec's owner from the caller: uid, gid, names, and the account
 * (NULL: the primary group; else a group the caller is in, or any for an
 * operator). Refuses (LOOM_EINVAL naming it) an account the caller may not
 * charge, and root's jobs in multi-user mode without --allow-root-jobs. */
int loomd_identity_own(const loomd_identity_t *ident, const loom_auth_identity_t *who,
                       const char *account, loom_job_spec_t *spec, loom_err_t *err);

/* Whether who may act on job (its owner, an operator, or a job without an
 * owner in single-user mode). */
bool loomd_identity_may_act(const loomd_identity_t *ident, const loom_auth_identity_t *who,
                            const loom_job_t *job);

/* The files a model reference names (the model, a device file given as a
 * path), opened with the caller's rights (loom_auth_file_open: a regular
 * file, within the estimator's limits, never blocking) for
 * loom_est_sizer_size_files; errors name the paths as given. Close with
 * loomd_identity_ref_close. */
typedef struct loomd_ref_files {
    loom_file_t model, device;
    loom_est_files_t est;
} loomd_ref_files_t;
int loomd_identity_ref_open(const loom_auth_identity_t *who, const loom_est_ref_t *ref,
                            loomd_ref_files_t *f, loom_err_t *err);
void loomd_identity_ref_close(loomd_ref_files_t *f);

/* server.info's "auth" member: the mode, the schemes accepted on TCP, and
 * the caller as loomd sees it (docs/protocol.md). */
json_t *loomd_identity_info(const loomd_identity_t *ident, const loom_rpc_call_t *call);

/* The "permission denied" error (LOOMD_ERR_PERMISSION) for job id owned by
 * owner (a name; NULL: unknown), on call. */
void loomd_identity_deny(loom_rpc_call_t *call, int64_t id, const char *owner);

#endif
