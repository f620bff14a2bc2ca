/* job.hold, job.release, job.requeue and job.update (scontrol's hold,
 * release, requeue and update for pending jobs). Each writes the store
 * first (so a change outlives loomd), then tells the runner, whose runtime
 * takes the job again as the store has it. The contract is docs/protocol.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/identity.h"
#include "daemon/queue.h"
#include "daemon/quota.h"
#include "daemon/runner.h"
#include "loom/jobspec.h"
#include "loom/store.h"

static loom_rpc_status_t fail(loom_rpc_call_t *call, int rc, const loom_err_t *err, int64_t id)
{
    if (rc == LOOM_EINVAL) {
        loom_rpc_call_fail_params(call, err);
        return LOOM_RPC_DONE;
    }
    int code = rc == LOOM_ENOTFOUND  ? LOOMD_ERR_JOB_NOT_FOUND
               : rc == LOOM_ESTATE   ? LOOMD_ERR_INVALID_STATE
               : rc == LOOM_EUNAVAIL ? LOOMD_ERR_INVALID_STATE
                                     : LOOMD_ERR_STORE;
    loom_rpc_call_fail(call, code, err->msg,
                       id > 0 ? json_pack("{s:I}", "id", (json_int_t)id) : NULL);
    return LOOM_RPC_DONE;
}

/* params' job id and that job as the store has it (loom_job_free it); when
 * either is missing, fails the call and returns false. */
static bool read_job(loom_rpc_call_t *call, loomd_methods_t *m, const json_t *params, int64_t *id,
                     loom_job_t *job)
{
    loom_err_t err;
    *id = 0;
    int rc = loomd_param_job_id(params, "id", id, &err);
    if (rc == LOOM_OK)
        rc = loom_store_get(m->store, *id, job, &err);
    if (rc)
        fail(call, rc, &err, *id);
    return rc == LOOM_OK;
}

/* The stored update done: tell the runner, answer with the job. */
static loom_rpc_status_t updated(loomd_methods_t *m, loom_rpc_call_t *call, loom_job_t *job)
{
    loom_err_t err;
    if (m->runner)
        loomd_runner_changed(m->runner, job->id, &err);
    json_t *j = loom_job_to_json(job, false);
    loom_job_free(job);
    loomd_runner_reasons(m->runner, j);
    loom_rpc_call_complete(call, json_pack("{s:o}", "job", j ? j : json_null()));
    return LOOM_RPC_DONE;
}

/* job.hold / job.release: options.hold set or removed. A change is an
 * event in the job's history ("held by ana", "released by ana"), as its
 * submission and start are; holding a held job or releasing a free one is
 * not. */
static loom_rpc_status_t set_hold(loom_rpc_call_t *call, json_t *params, loomd_methods_t *m,
                                  bool hold)
{
    int64_t id;
    loom_job_t job;
    if (!read_job(call, m, params, &id, &job))
        return LOOM_RPC_DONE;
    loom_err_t err;
    json_t *o = job.options_json ? json_loads(job.options_json, 0, NULL) : json_object();
    loom_job_free(&job);
    if (!o)
        o = json_object();
    bool was = json_is_true(json_object_get(o, "hold"));
    if (hold)
        json_object_set_new(o, "hold", json_true());
    else
        json_object_del(o, "hold");
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    loom_auth_identity_t local;
    const loom_auth_identity_t *who = loomd_caller(m->ident, call, &local);
    char event[LOOM_AUTH_NAME_MAX + 32];
    if (who->user[0])
        snprintf(event, sizeof event, "%s by %s", hold ? "held" : "released", who->user);
    else
        snprintf(event, sizeof event, "%s by uid %u", hold ? "held" : "released",
                 (unsigned)who->uid);
    loom_job_update_t u = {
        .time_limit_s = -1, .options_json = text, .event = was != hold ? event : NULL};
    int rc = text ? loom_store_update(m->store, id, &u, &job, &err)
                  : loom_err_set(&err, LOOM_ENOMEM, "out of memory");
    free(text);
    if (rc)
        return fail(call, rc, &err, id);
    return updated(m, call, &job);
}

static loom_rpc_status_t m_job_hold(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    return set_hold(call, params, ctx, true);
}

static loom_rpc_status_t m_job_release(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    return set_hold(call, params, ctx, false);
}

/* job.requeue: a running job is stopped and queued again; one that ended
 * without completing is queued again (a new attempt); a COMPLETED one is
 * refused. */
static loom_rpc_status_t m_job_requeue(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_methods_t *m = ctx;
    int64_t id;
    loom_job_t job;
    if (!read_job(call, m, params, &id, &job))
        return LOOM_RPC_DONE;
    loom_err_t err;
    loom_job_state_t st = job.state;
    loom_job_free(&job);
    int rc;
    if (st == LOOM_JOB_COMPLETED) /* its work is done: never run twice by a requeue */
        rc = loom_err_set(&err, LOOM_ESTATE,
                          "job %lld is COMPLETED: a completed job is not run again; submit it "
                          "again (requeue takes running, FAILED, CANCELLED and TIMEOUT jobs)",
                          (long long)id);
    else if (!m->runner)
        rc = loom_err_set(&err, LOOM_EUNAVAIL, "job %lld: loomd runs no executor (--executor none)",
                          (long long)id);
    else if (st == LOOM_JOB_PENDING)
        rc = loom_err_set(&err, LOOM_ESTATE, "job %lld is PENDING already", (long long)id);
    else if (st == LOOM_JOB_RUNNING)
        rc = loomd_runner_requeue(m->runner, id, &err);
    else if ((rc = loom_store_transition(m->store, id, (int)st, LOOM_JOB_PENDING,
                                         "requeued by request", NULL, NULL, &err)) == LOOM_OK)
        rc = loomd_runner_changed(m->runner, id, &err);
    if (rc)
        return fail(call, rc, &err, id);
    rc = loom_store_get(m->store, id, &job, &err);
    if (rc)
        return fail(call, rc, &err, id);
    json_t *j = loom_job_to_json(&job, false);
    loom_job_free(&job);
    loomd_runner_reasons(m->runner, j);
    loom_rpc_call_complete(call, json_pack("{s:o}", "job", j ? j : json_null()));
    return LOOM_RPC_DONE;
}

/* An optional integer member in [min, max] (present: *set). */
static int get_int(const json_t *params, const char *name, int64_t min, int64_t max, bool *set,
                   int64_t *out, loom_err_t *err)
{
    const json_t *v = json_object_get(params, name);
    if (!v)
        return LOOM_OK;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return loom_err_set(err, LOOM_EINVAL, "%s: expected an integer from %lld to %lld", name,
                            (long long)min, (long long)max);
    *set = true;
    *out = json_integer_value(v);
    return LOOM_OK;
}

/* A new time limit checked as job.submit checks one: against the quotas
 * of the job's owner and account. true: refused, the call answered. */
static bool update_quota_refused(loomd_methods_t *m, loom_rpc_call_t *call, int64_t id,
                                 int64_t time_limit_s)
{
    loom_job_t job;
    loom_err_t err;
    int rc = loom_store_get(m->store, id, &job, &err);
    if (rc) {
        fail(call, rc, &err, id);
        return true;
    }
    loom_auth_identity_t owner = {.uid = job.uid >= 0 ? (uid_t)job.uid : (uid_t)-1,
                                  .gid = job.gid >= 0 ? (gid_t)job.gid : (gid_t)-1};
    snprintf(owner.user, sizeof owner.user, "%s", job.user ? job.user : "");
    json_t *data = NULL;
    rc = loomd_quota_check(m->quotas, m->store, &owner, job.account, time_limit_s, 0, &data, &err);
    loom_job_free(&job);
    if (rc == LOOM_OK)
        return false;
    loom_rpc_call_fail(call, rc == LOOM_ELIMIT ? LOOMD_ERR_QUOTA : LOOMD_ERR_STORE, err.msg, data);
    return true;
}

/* job.update: name, time_limit, priority of a pending job. */
static loom_rpc_status_t m_job_update(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_methods_t *m = ctx;
    loom_err_t err;
    int64_t id = 0, tl = -1, prio = 0;
    bool tl_set = false, prio_set = false;
    const json_t *name = params ? json_object_get(params, "name") : NULL;
    int rc = loomd_param_job_id(params, "id", &id, &err);
    if (rc == LOOM_OK)
        rc = get_int(params, "time_limit", 0, LOOM_STORE_TIME_LIMIT_MAX, &tl_set, &tl, &err);
    if (rc == LOOM_OK)
        rc = get_int(params, "priority", LOOM_STORE_PRIORITY_MIN, LOOM_STORE_PRIORITY_MAX,
                     &prio_set, &prio, &err);
    if (rc == LOOM_OK && name && !json_is_string(name))
        rc = loom_err_set(&err, LOOM_EINVAL, "name: expected a string, found %s",
                          loom_json_type_name(name));
    if (rc == LOOM_OK && name) /* as at job.submit (the store checks it again) */
        rc = loom_job_name_check(json_string_value(name), &err);
    if (rc == LOOM_OK && !name && !tl_set && !prio_set)
        rc = loom_err_set(&err, LOOM_EINVAL,
                          "params: expected at least one of name, time_limit, priority");
    if (rc)
        return fail(call, rc, &err, id);
    if (tl_set && update_quota_refused(m, call, id, tl))
        return LOOM_RPC_DONE;
    loom_job_update_t u = {.name = name ? (char *)json_string_value(name) : NULL,
                           .time_limit_s = tl_set ? tl : -1,
                           .set_priority = prio_set,
                           .priority = prio};
    loom_job_t job;
    rc = loom_store_update(m->store, id, &u, &job, &err);
    if (rc)
        return fail(call, rc, &err, id);
    return updated(m, call, &job);
}

int loomd_queue_add(loom_rpc_dispatcher_t *d, loomd_methods_t *m, loom_err_t *err)
{
    static const char *const id_params[] = {"id", NULL};
    static const char *const update_params[] = {"id", "name", "time_limit", "priority", NULL};
    int rc;
    if ((rc = loom_rpc_dispatcher_add(d, "job.hold", m_job_hold, m, id_params,
                                      LOOM_RPC_STRICT_PARAMS, err)) ||
        (rc = loom_rpc_dispatcher_add(d, "job.release", m_job_release, m, id_params,
                                      LOOM_RPC_STRICT_PARAMS, err)) ||
        (rc = loom_rpc_dispatcher_add(d, "job.requeue", m_job_requeue, m, id_params,
                                      LOOM_RPC_STRICT_PARAMS, err)))
        return rc;
    return loom_rpc_dispatcher_add(d, "job.update", m_job_update, m, update_params,
                                   LOOM_RPC_STRICT_PARAMS, err);
}

int loomd_queue_check_options(const char *options_json, loom_err_t *err)
{
    json_t *o = options_json ? json_loads(options_json, 0, NULL) : NULL;
    const char *begin = json_string_value(json_object_get(o, "begin"));
    const char *dep = json_string_value(json_object_get(o, "dependency"));
    int64_t at;
    int rc = LOOM_OK;
    if (begin)
        rc = loom_jobspec_parse_begin(begin, loom_time_real_ns(), &at, err);
    if (rc == LOOM_OK && dep && loom_jobspec_dependency_check(dep, err) != LOOM_OK) {
        char msg[LOOM_ERR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        rc = loom_err_set(err, LOOM_EINVAL, "options.dependency: %s", msg);
    }
    json_decref(o);
    return rc;
}

/* ------------------------------------------------------------- arrays */

/* The task indices of an array text already checked by
 * loom_jobspec_array_parse ("0-15:4,20,30-31%2"): ascending as written. */
static size_t expand_array(const char *text, int64_t *out, size_t max)
{
    size_t n = 0;
    const char *p = text;
    while (*p && *p != '%') {
        char *end;
        long long a = strtoll(p, &end, 10), b = a, step = 1;
        p = end;
        if (*p == '-') {
            b = strtoll(p + 1, &end, 10);
            p = end;
            if (*p == ':') {
                step = strtoll(p + 1, &end, 10);
                p = end;
            }
        }
        for (long long i = a; i <= b && n < max && step > 0; i += step)
            out[n++] = i;
        if (*p == ',')
            p++;
    }
    return n;
}

bool loomd_queue_submit_array(loomd_methods_t *m, loom_rpc_call_t *call,
                              const loom_job_spec_t *spec)
{
    json_t *o = spec->options_json ? json_loads(spec->options_json, 0, NULL) : NULL;
    const char *text = json_string_value(json_object_get(o, "array"));
    if (!text) {
        json_decref(o);
        return false;
    }
    loom_err_t err;
    loom_jobspec_array_t a;
    int64_t *tasks = NULL;
    size_t n = 0;
    int rc = loom_jobspec_array_parse(text, &a, &err);
    if (rc == LOOM_OK && (a.count < 1 || a.count > LOOM_STORE_ARRAY_MAX))
        rc = loom_err_set(&err, LOOM_EINVAL, "options.array: expected 1 to %d tasks",
                          LOOM_STORE_ARRAY_MAX);
    if (rc == LOOM_OK && !(tasks = malloc((size_t)a.count * sizeof *tasks)))
        rc = loom_err_set(&err, LOOM_ENOMEM, "out of memory");
    if (rc == LOOM_OK)
        n = expand_array(text, tasks, (size_t)a.count);
    json_decref(o);
    loom_job_t job;
    bool created = false;
    if (rc == LOOM_OK)
        rc = loom_store_submit_array(m->store, spec, tasks, n, &job, &created, &err);
    free(tasks);
    if (rc) {
        if (rc == LOOM_EINVAL)
            loom_rpc_call_fail_params(call, &err);
        else
            fail(call, rc, &err, 0);
        return true;
    }
    loom_rpc_call_complete(call, json_pack("{s:I, s:b, s:s, s:{s:I, s:I}}", "id",
                                           (json_int_t)job.id, "created", created, "state",
                                           loom_job_state_name(job.state), "array", "job_id",
                                           (json_int_t)job.id, "tasks", (json_int_t)n));
    loom_job_free(&job);
    if (m->runner)
        loomd_runner_wake(m->runner);
    return true;
}
