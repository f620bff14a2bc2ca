/* Who may call what (authz.h): the declarations, the guard the dispatcher
 * runs before every handler, and the table docs/security.md shows. */
#include <string.h>

#include "daemon/authz.h"
#include "daemon/identity.h"

/* The most job ids one call names (job.wait's ids: 100); more are refused
 * before any is read. */
#define AUTHZ_IDS_MAX 100

#define ZOO_WHAT "the zoo, by its own entry rules (docs/security.md#the-zoo)"

static const loomd_authz_rule_t rules[] = {
    {"server.info", LOOMD_AUTHZ_ANYONE, NULL, false, "loomd; the caller as loomd sees it"},
    {"node.list", LOOMD_AUTHZ_ANYONE, NULL, false, "the nodes"},
    {"job.submit", LOOMD_AUTHZ_ANYONE, NULL, false,
     "a new job, owned by the caller (never by the request)"},
    {"job.list", LOOMD_AUTHZ_ANYONE, NULL, false,
     "every job; another's without estimate, options and run but its array, node and GPUs"},
    {"job.get", LOOMD_AUTHZ_OWNER, "id", false, "the job, with its options and events"},
    {"job.usage", LOOMD_AUTHZ_OWNER, "id", false, "the job's usage series"},
    {"job.cancel", LOOMD_AUTHZ_OWNER, "id", false, "the job"},
    {"job.wait", LOOMD_AUTHZ_OWNER, "ids", false, "every job of ids"},
    {"job.logs", LOOMD_AUTHZ_OWNER, "id", false, "the job's output"},
    {"job.hold", LOOMD_AUTHZ_OWNER, "id", false, "the pending job"},
    {"job.release", LOOMD_AUTHZ_OWNER, "id", false, "the held job"},
    {"job.requeue", LOOMD_AUTHZ_OWNER, "id", false,
     "the running or ended job; a COMPLETED one is refused"},
    {"job.update", LOOMD_AUTHZ_OWNER, "id", false,
     "the pending job, with job.submit's name and quota checks"},
    {"monitor.snapshot", LOOMD_AUTHZ_OWNER, "job", true,
     "the node; with job, that job's processes"},
    {"cluster.usage", LOOMD_AUTHZ_ANYONE, NULL, false,
     "the cluster's allocation and queue over time"},
    {"usage.report", LOOMD_AUTHZ_ANYONE, NULL, false, "usage per user and account (as sreport)"},
    {"zoo.add", LOOMD_AUTHZ_ANYONE, NULL, false, ZOO_WHAT},
    {"zoo.get", LOOMD_AUTHZ_ANYONE, NULL, false, ZOO_WHAT},
    {"zoo.list", LOOMD_AUTHZ_ANYONE, NULL, false, ZOO_WHAT},
    {"zoo.remove", LOOMD_AUTHZ_ANYONE, NULL, false, ZOO_WHAT},
    {"zoo.match", LOOMD_AUTHZ_ANYONE, NULL, false, ZOO_WHAT},
    {"zoo.warm", LOOMD_AUTHZ_ANYONE, NULL, false, ZOO_WHAT},
    {"dash.login", LOOMD_AUTHZ_ANYONE, NULL, false, "a login code for the caller's own session"},
    /* the dashboard's routes: a session acts as the user who logged in */
    {"GET /api/session", LOOMD_AUTHZ_ANYONE, NULL, false, "the session's user"},
    {"POST /api/rpc", LOOMD_AUTHZ_ANYONE, NULL, false,
     "the methods above, as the session's user, by their rows"},
    {"GET /api/log", LOOMD_AUTHZ_OWNER, "id", false, "the job's output"},
    {"GET /events", LOOMD_AUTHZ_ANYONE, NULL, false, "job changes, as job.list shows them"},
};

#define NRULES (sizeof rules / sizeof rules[0])

size_t loomd_authz_count(void)
{
    return NRULES;
}

const loomd_authz_rule_t *loomd_authz_at(size_t i)
{
    return i < NRULES ? &rules[i] : NULL;
}

const loomd_authz_rule_t *loomd_authz_find(const char *name)
{
    for (size_t i = 0; i < NRULES; i++)
        if (strcmp(rules[i].name, name) == 0)
            return &rules[i];
    return NULL;
}

bool loomd_authz_allows(const loomd_identity_t *ident, const loomd_authz_rule_t *rule,
                        const loom_auth_identity_t *who, const loom_job_t *job)
{
    if (!loomd_identity_multi_user(ident) || who->is_operator)
        return true; /* single-user: every caller is loomd's own user */
    switch (rule->who) {
    case LOOMD_AUTHZ_ANYONE: return true;
    case LOOMD_AUTHZ_OWNER: return !job || loomd_identity_may_act(ident, who, job);
    case LOOMD_AUTHZ_OPERATOR: return false;
    }
    return false;
}

/* One job id of the call: allowed, else the call is answered (not found,
 * or permission denied naming the owner) and false. */
static bool guard_job(loomd_methods_t *m, loom_rpc_call_t *call, const loomd_authz_rule_t *rule,
                      const loom_auth_identity_t *who, int64_t id)
{
    loom_job_t job;
    loom_err_t err;
    int rc = loom_store_get(m->store, id, &job, &err);
    if (rc != LOOM_OK) {
        loom_rpc_call_fail(call, rc == LOOM_ENOTFOUND ? LOOMD_ERR_JOB_NOT_FOUND : LOOMD_ERR_STORE,
                           err.msg, json_pack("{s:I}", "id", (json_int_t)id));
        return false;
    }
    bool ok = loomd_authz_allows(m->ident, rule, who, &job);
    if (!ok)
        loomd_identity_deny(call, id, job.user);
    loom_job_free(&job);
    return ok;
}

/* The dispatcher's guard: the declaration of method, enforced. A job
 * parameter of the wrong shape is left to the handler, which refuses it
 * (-32602) without acting on any job. */
static bool guard(loom_rpc_call_t *call, const char *method, json_t *params, void *ctx)
{
    loomd_methods_t *m = ctx;
    const loomd_authz_rule_t *rule = loomd_authz_find(method);
    if (!rule) {
        loom_rpc_call_failf(call, LOOMD_ERR_PERMISSION, NULL,
                            "permission denied: method %s declares no authorization", method);
        return false;
    }
    loom_auth_identity_t local;
    const loom_auth_identity_t *who = loomd_caller(m->ident, call, &local);
    if (loomd_authz_allows(m->ident, rule, who, NULL) && rule->who != LOOMD_AUTHZ_OWNER)
        return true;
    if (rule->who == LOOMD_AUTHZ_OPERATOR) {
        loom_rpc_call_failf(call, LOOMD_ERR_PERMISSION, NULL,
                            "permission denied: %s is for operators only", method);
        return false;
    }
    if (!loomd_identity_multi_user(m->ident) || who->is_operator)
        return true;
    json_t *v = params ? json_object_get(params, rule->job_param) : NULL;
    if (json_is_integer(v) && json_integer_value(v) > 0)
        return guard_job(m, call, rule, who, json_integer_value(v));
    if (json_is_array(v) && json_array_size(v) > AUTHZ_IDS_MAX) {
        loom_rpc_call_invalid_param(call, rule->job_param, "an array of at most 100 job ids", v);
        return false;
    }
    for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++) {
        json_t *e = json_array_get(v, i);
        if (json_is_integer(e) && json_integer_value(e) > 0 &&
            !guard_job(m, call, rule, who, json_integer_value(e)))
            return false;
    }
    return true;
}

int loomd_authz_install(loom_rpc_dispatcher_t *d, loomd_methods_t *m, loom_err_t *err)
{
    for (size_t i = 0; i < loom_rpc_dispatcher_method_count(d); i++) {
        const char *name = loom_rpc_dispatcher_method_name(d, i);
        if (!loomd_authz_find(name))
            return loom_err_set(err, LOOM_EINVAL,
                                "method %s declares no authorization: add its row to "
                                "src/daemon/authz.c (who may call it on what)",
                                name);
    }
    loom_rpc_dispatcher_set_guard(d, guard, m);
    return LOOM_OK;
}

static const char *cell(const loomd_authz_rule_t *r, int column)
{
    /* columns: owner, another user, operator, token holder */
    if (column != 1 || r->who == LOOMD_AUTHZ_ANYONE)
        return r->who == LOOMD_AUTHZ_OPERATOR && column < 2 ? "no (-32008)" : "yes";
    if (r->who == LOOMD_AUTHZ_OWNER && r->job_optional)
        return "without the job only";
    return "no (-32008)";
}

int loomd_authz_table(loom_buf_t *out)
{
    int rc = loom_buf_append_str(out, "| method or route | on what | owner | another user | "
                                      "operator | token holder |\n|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < NRULES && rc == LOOM_OK; i++) {
        const loomd_authz_rule_t *r = &rules[i];
        rc = loom_buf_appendf(out, "| `%s` | %s%s%s%s | %s | %s | %s | %s |\n", r->name, r->what,
                              r->job_param ? " (`" : "", r->job_param ? r->job_param : "",
                              r->job_param ? "`)" : "", cell(r, 0), cell(r, 1), cell(r, 2),
                              cell(r, 3));
    }
    return rc;
}
