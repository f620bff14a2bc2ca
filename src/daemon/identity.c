/* loomd's side of identities: the RPC server's identity hook on top of the
 * auth part, and the small decisions the methods make with it (who owns a
 * new job, who may act on one). docs/security.md has the model. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/identity.h"
#include "daemon/methods.h"

struct loomd_identity {
    loomd_identity_config_t cfg;
    loom_auth_t *auth;
};

int loomd_identity_new(const loomd_identity_config_t *cfg, loomd_identity_t **out, loom_err_t *err)
{
    loomd_identity_t *id = calloc(1, sizeof *id);
    if (!id)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    id->cfg = *cfg;
    loom_auth_config_t acfg = {.operators_group = cfg->operators,
                               .token = cfg->token,
                               .munge = cfg->multi_user,
                               .munge_socket = cfg->munge_socket};
    int rc = loom_auth_new(&acfg, &id->auth, err);
    if (rc != LOOM_OK) {
        free(id);
        return rc;
    }
    id->cfg.token = NULL; /* kept by auth only */
    *out = id;
    return LOOM_OK;
}

void loomd_identity_free(loomd_identity_t *ident)
{
    if (!ident)
        return;
    loom_auth_free(ident->auth);
    free(ident);
}

bool loomd_identity_multi_user(const loomd_identity_t *ident)
{
    return ident && ident->cfg.multi_user;
}

static int authenticate(const loom_rpc_auth_input_t *in, void **identity, int64_t *valid_until_ns,
                        loom_err_t *err, void *ctx)
{
    loomd_identity_t *ident = ctx;
    loom_auth_identity_t *id = malloc(sizeof *id);
    if (!id)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    int64_t expires = 0;
    int rc = in->unix_socket ? loom_auth_peer(ident->auth, in->fd, id, err)
                             : loom_auth_header(ident->auth, in->authorization, id, &expires, err);
    if (rc != LOOM_OK) {
        loom_log_info("auth.refused", "peer=%s error=\"%s\"", in->peer, err->msg);
        free(id);
        return rc;
    }
    /* A socket's peer is the same process for the connection's life; a
     * credential serves its connection until it expires. */
    if (in->unix_socket || expires == INT64_MAX) {
        *valid_until_ns = INT64_MAX;
    } else {
        int64_t left = expires - loom_time_real_ns();
        *valid_until_ns = left > 0 ? loom_time_mono_ns() + left : 0;
    }
    *identity = id;
    return LOOM_OK;
}

/* The server's fair-share key: the uid; operators (root, the token holder,
 * --operators) are never limited. */
static bool principal(const void *identity, int64_t *user, char *name, size_t namelen)
{
    const loom_auth_identity_t *id = identity;
    *user = (int64_t)id->uid;
    if (id->user[0])
        snprintf(name, namelen, "%s", id->user);
    else
        snprintf(name, namelen, "uid %lld", (long long)id->uid);
    return id->is_operator;
}

void loomd_identity_install(loomd_identity_t *ident, loom_rpc_server_config_t *cfg)
{
    if (!ident || !ident->cfg.multi_user)
        return;
    cfg->identity.authenticate = authenticate;
    cfg->identity.identity_free = free;
    cfg->identity.ctx = ident;
    cfg->identity.challenge = "Munge realm=\"loom\", Bearer realm=\"loom\"";
    cfg->identity.principal = principal;
}

const loom_auth_identity_t *loomd_caller(const loomd_identity_t *ident, const loom_rpc_call_t *call,
                                         loom_auth_identity_t *local)
{
    const loom_rpc_transport_t *t = call ? loom_rpc_call_request_ctx(call) : NULL;
    if (t && t->identity)
        return t->identity;
    loom_auth_user(ident ? ident->auth : NULL, geteuid(), getegid(), LOOM_AUTH_LOCAL, local, NULL);
    local->is_operator = true;
    return local;
}

static int account_allowed(const loom_auth_identity_t *who, const char *account, loom_err_t *err)
{
    if (who->is_operator)
        return LOOM_OK;
    gid_t g;
    if (loom_auth_group_id(account, &g, NULL) == LOOM_OK && loom_auth_in_group(who, g))
        return LOOM_OK;
    return loom_err_set(err, LOOM_EINVAL,
                        "account: '%.64s' is not a group of user '%s'; expected one of its "
                        "groups (default: its primary group '%s')",
                        account, who->user, who->group);
}

int loomd_identity_own(const loomd_identity_t *ident, const loom_auth_identity_t *who,
                       const char *account, loom_job_spec_t *spec, loom_err_t *err)
{
    if (loomd_identity_multi_user(ident) && who->uid == 0 && !ident->cfg.allow_root_jobs)
        return loom_err_set(err, LOOM_EINVAL,
                            "jobs of root are refused in multi-user mode (loomd "
                            "--allow-root-jobs allows them); submit as an unprivileged user");
    if (account && account_allowed(who, account, err) != LOOM_OK)
        return LOOM_EINVAL;
    spec->has_owner = true;
    spec->uid = who->uid;
    spec->gid = who->gid;
    spec->user = who->user[0] ? who->user : NULL;
    spec->group = who->group[0] ? who->group : NULL;
    spec->account = account ? account : spec->group;
    return LOOM_OK;
}

bool loomd_identity_may_act(const loomd_identity_t *ident, const loom_auth_identity_t *who,
                            const loom_job_t *job)
{
    if (job->uid < 0) /* from before owners, or single-user: loomd's user's */
        return who->is_operator || !loomd_identity_multi_user(ident) || who->uid == geteuid();
    return loom_auth_may_act(who, (uid_t)job->uid);
}

void loomd_identity_deny(loom_rpc_call_t *call, int64_t id, const char *owner)
{
    json_t *data = json_pack("{s:I, s:s}", "id", (json_int_t)id, "owner", owner ? owner : "");
    loom_rpc_call_failf(call, LOOMD_ERR_PERMISSION, data,
                        "permission denied: job %lld belongs to another user (%s)", (long long)id,
                        owner && *owner ? owner : "unknown");
}

json_t *loomd_identity_info(const loomd_identity_t *ident, const loom_rpc_call_t *call)
{
    loom_auth_identity_t local;
    const loom_auth_identity_t *who = loomd_caller(ident, call, &local);
    json_t *groups = json_array();
    for (size_t i = 0; i < who->ngroups; i++)
        json_array_append_new(groups, json_integer(who->groups[i]));
    bool multi = loomd_identity_multi_user(ident);
    return json_pack("{s:s, s:[s,s*], s:{s:I, s:I, s:s, s:s, s:o, s:b, s:s}}", "mode",
                     multi ? "multi-user" : "single-user", "schemes", multi ? "munge" : "bearer",
                     multi ? "bearer" : NULL, "caller", "uid", (json_int_t)who->uid, "gid",
                     (json_int_t)who->gid, "user", who->user, "group", who->group, "groups", groups,
                     "operator", who->is_operator, "scheme", loom_auth_scheme_name(who->scheme));
}

int loomd_identity_check_args(const loomd_identity_config_t *cfg, const char *socket,
                              loom_err_t *err)
{
    if (!cfg->multi_user) {
        const char *opt = cfg->operators         ? "--operators"
                          : cfg->allow_root_jobs ? "--allow-root-jobs"
                          : cfg->munge_socket    ? "--munge-socket"
                                                 : NULL;
        if (opt)
            return loom_err_set(err, LOOM_EINVAL, "%s needs --multi-user", opt);
        return LOOM_OK;
    }
    if (!socket)
        return loom_err_set(err, LOOM_EINVAL,
                            "--multi-user needs --socket PATH in a directory every user can "
                            "traverse (e.g. /run/loom/loomd.sock), or --socket none: the "
                            "default socket lies in the state directory, closed to others");
    return LOOM_OK;
}

int loomd_identity_prepare(const loomd_identity_config_t *cfg, const char *state_dir,
                           loom_err_t *err)
{
    if (!cfg->multi_user)
        return LOOM_OK;
    if (geteuid() != 0)
        return loom_err_set(err, LOOM_EINVAL,
                            "--multi-user: loomd must run as root to run jobs as their owners "
                            "(it runs as uid %u)",
                            (unsigned)geteuid());
    struct stat st;
    if (chmod(state_dir, 0700) != 0 || stat(state_dir, &st) != 0)
        return loom_err_errno(err, LOOM_EIO, errno, "state directory '%s'", state_dir);
    if (st.st_uid != geteuid())
        return loom_err_set(err, LOOM_EINVAL,
                            "state directory '%s' belongs to uid %u, not to loomd's user (%u)",
                            state_dir, (unsigned)st.st_uid, (unsigned)geteuid());
    return LOOM_OK;
}

int loomd_identity_open_socket(const loomd_identity_t *ident, const char *path, loom_err_t *err)
{
    if (!loomd_identity_multi_user(ident) || !path)
        return LOOM_OK;
    if (chmod(path, 0666) != 0)
        return loom_err_errno(err, LOOM_EIO, errno, "socket '%s': cannot open it to all users",
                              path);
    return LOOM_OK;
}

int loomd_identity_ref_open(const loom_auth_identity_t *who, const loom_est_ref_t *ref,
                            loomd_ref_files_t *f, loom_err_t *err)
{
    f->model = (loom_file_t)LOOM_FILE_INIT;
    f->device = (loom_file_t)LOOM_FILE_INIT;
    f->est = (loom_est_files_t){.model = &f->model, .quiet = true};
    if (!ref->path || ref->path[0] != '/')
        return loom_err_set(err, LOOM_EINVAL, "model.path: expected an absolute path");
    int rc = loom_auth_file_open(who, ref->path, 0, LOOM_EST_MODEL_MAX, &f->model, err);
    if (rc == LOOM_OK && ref->device && strchr(ref->device, '/')) {
        rc = loom_auth_file_open(who, ref->device, 0, LOOM_EST_DEVICE_MAX, &f->device, err);
        f->est.device = &f->device;
    }
    if (rc != LOOM_OK)
        loomd_identity_ref_close(f);
    return rc;
}

void loomd_identity_ref_close(loomd_ref_files_t *f)
{
    loom_file_close(&f->model);
    loom_file_close(&f->device);
}
