/* loomd's methods. Each handler checks its parameters (a -32602 whose
 * message names the parameter), then either answers at once (reads) or
 * queues a write in the store and returns LOOM_RPC_PENDING; the store's
 * committer completes the call once the write is committed. Error codes are
 * listed in docs/protocol.md. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/follow.h"
#include "daemon/identity.h"
#include "daemon/jobusage.h"
#include "daemon/quota.h"
#include "daemon/methods.h"
#include "daemon/queue.h"
#include "daemon/runner.h"
#include "loom/exec.h"
#include "loom/jobspec.h"
#include "loom/rubick.h"

#define LIST_LIMIT_MAX     1000
#define LIST_LIMIT_DEFAULT 100
/* job.list: the result object around the jobs; below this budget, no work */
#define LIST_OVERHEAD   64
#define LIST_BUDGET_MIN 1024
/* Work bounded by the budget before it is done: no job's JSON is shorter
 * than LIST_JOB_MIN bytes, so no more jobs than budget / LIST_JOB_MIN are
 * read; they are serialised LIST_CHUNK at a time, stopping at the first
 * that does not fit. */
#define LIST_JOB_MIN 128
#define LIST_CHUNK   32

static void fail_param(loom_rpc_call_t *call, loom_err_t *err)
{
    loom_rpc_call_fail_params(call, err);
}

static void fail_store(loom_rpc_call_t *call, int code, const loom_err_t *err, bool queued,
                       int64_t id)
{
    int rpc;
    switch (code) {
    case LOOM_EINVAL: loom_rpc_call_fail_params(call, err); return;
    case LOOM_ENOTFOUND: rpc = LOOMD_ERR_JOB_NOT_FOUND; break;
    /* Before queueing, ESTATE means the store is closing; from the
     * committer it means the job is in a state that forbids the change. */
    case LOOM_ESTATE: rpc = queued ? LOOMD_ERR_INVALID_STATE : LOOMD_ERR_SHUTTING_DOWN; break;
    case LOOM_ELIMIT: rpc = LOOMD_ERR_BUSY; break;
    default: rpc = LOOMD_ERR_STORE; break;
    }
    json_t *data = id > 0 ? json_pack("{s:I}", "id", (json_int_t)id) : NULL;
    loom_rpc_call_fail(call, rpc, err ? err->msg : "store error", data);
}

int loomd_param_job_id(const json_t *params, const char *name, int64_t *out, loom_err_t *err)
{
    const json_t *v = params ? json_object_get(params, name) : NULL;
    if (!v)
        return loom_err_set(err, LOOM_EINVAL, "%s: required (a positive integer job id)", name);
    if (!json_is_integer(v))
        return loom_err_set(err, LOOM_EINVAL, "%s: expected a positive integer job id, found %s",
                            name, loom_json_type_name(v));
    if (json_integer_value(v) < 1)
        return loom_err_set(err, LOOM_EINVAL, "%s: expected a positive integer job id, found %lld",
                            name, (long long)json_integer_value(v));
    *out = json_integer_value(v);
    return LOOM_OK;
}

/* params' "id"; when it is missing or not a job id, fails the call with
 * invalid params and returns false. */
static bool call_id(loom_rpc_call_t *call, const json_t *params, int64_t *id)
{
    loom_err_t err;
    if (loomd_param_job_id(params, "id", id, &err) == LOOM_OK)
        return true;
    fail_param(call, &err);
    return false;
}

/* Requests of at most this many calls commit on their own thread. */
#define DEFER_MAX_BATCH 8

/* Flags of a write queued by a call. DEFER: the request's thread waits for
 * its response (loom_rpc_handle), so once the whole request is dispatched
 * it commits what it queued itself (commit_queued, the dispatcher's
 * on_wait hook, added with the methods), which spares waking the committer
 * thread. MORE: in a batch, more calls follow this one at once. */
static unsigned store_flags(const loom_rpc_call_t *call)
{
    /* A large batch goes to the committer thread, whose completer answers
     * one batch while the next commits: that pipeline beats one thread
     * doing it all (bench_rpc_submit's batches of 100). */
    bool defer = loom_rpc_call_waited_on(call) && loom_rpc_call_batch_size(call) <= DEFER_MAX_BATCH;
    return (defer ? LOOM_STORE_DEFER : 0) |
           (loom_rpc_call_index(call) + 1 < loom_rpc_call_batch_size(call) ? LOOM_STORE_MORE : 0);
}

static void commit_queued(void *request_ctx, void *ctx)
{
    (void)request_ctx;
    loomd_methods_t *m = ctx;
    loom_store_help(m->store);
}

/* ------------------------------------------------------------ job.submit */

/* A YAML job must be a manifest the executor can run (docs/exec.md): refuse
 * it now, naming the field, rather than when it is started. */
static int check_yaml_job(const char *script, loom_err_t *err)
{
    json_t *argv = json_array(), *env = json_array();
    char workdir[4096];
    int rc =
        loom_exec_yaml_command(script, strlen(script), argv, env, workdir, sizeof workdir, err);
    json_decref(argv);
    json_decref(env);
    if (rc)
        loom_err_prefix(err, "script (format yaml)");
    return rc == LOOM_OK ? LOOM_OK : LOOM_EINVAL;
}

static void submit_done(void *ctx, int rc, const loom_job_t *job, bool created,
                        const loom_err_t *err)
{
    loom_rpc_call_t *call = ctx;
    if (rc != LOOM_OK) {
        fail_store(call, rc, err, true, 0);
        return;
    }
    /* Lean on purpose: this is the hot path (docs/protocol.md). The job is
     * stored: an allocation that fails here is tried once more, and if
     * that fails too the error says the job was stored. */
    json_t *res = NULL;
    for (int i = 0; i < 2 && !res; i++)
        res = json_pack("{s:I, s:b, s:s}", "id", (json_int_t)job->id, "created", created, "state",
                        loom_job_state_name(job->state));
    if (!res) {
        loom_rpc_call_failf(call, LOOM_RPC_INTERNAL_ERROR, NULL,
                            "job %lld was stored, but loomd ran out of memory answering: "
                            "job.submit again with the same submit_id returns it",
                            (long long)job->id);
        return;
    }
    loom_rpc_call_complete(call, res);
}

/* A submission that names a model: estimate it (docs/protocol.md, job.submit
 * "model") and, unless the submission gave gpu_memory, request the
 * estimate plus the margin. LOOM_EINVAL: a bad reference (-32602);
 * LOOM_ENOTFOUND: the estimator failed (-32006, *path set). */
static int size_from_model(loomd_methods_t *m, const loom_auth_identity_t *who,
                           loom_job_spec_t *spec, char **estimate, const char **path,
                           loom_err_t *err)
{
    loom_est_ref_t ref;
    if (loom_est_ref_from_json(spec->model, &ref, err))
        return LOOM_EINVAL;
    if (spec->gpus == 0 && spec->gpu_share_milli == 0)
        return loom_err_set(err, LOOM_EINVAL,
                            "model: the job asks for no GPU; give resources.gpus or "
                            "resources.gpu_share (the estimate sizes the memory of each GPU)");
    *path = ref.path;
    if (!m->sizer)
        return loom_err_set(err, LOOM_ENOTFOUND, "this loomd does not estimate models");
    json_t *rec = NULL;
    uint64_t request;
    loomd_ref_files_t files; /* the files it names, opened as the caller */
    if (loomd_identity_ref_open(who, &ref, &files, err))
        return LOOM_ENOTFOUND;
    int rc = loom_est_sizer_size_files(m->sizer, &ref, &files.est, &rec, &request, err);
    loomd_identity_ref_close(&files);
    if (rc)
        return LOOM_ENOTFOUND;
    bool applied = spec->gpu_memory_bytes == 0;
    json_object_set_new(rec, "applied", json_boolean(applied));
    if (applied)
        spec->gpu_memory_bytes = request;
    *estimate = json_dumps(rec, JSON_COMPACT);
    json_decref(rec);
    if (!*estimate)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    spec->estimate_json = *estimate;
    return LOOM_OK;
}

/* The model could not be estimated, so nothing is stored; but a resend of
 * a submission that was stored (its model since moved or changed) still
 * gets its job back, as idempotency promises. */
static void fail_estimate(loomd_methods_t *m, loom_rpc_call_t *call, const loom_job_spec_t *spec,
                          const char *path, const loom_err_t *err)
{
    loom_job_t job;
    loom_err_t e2;
    if (spec->submit_id && loom_store_get_by_submit_id(m->store, spec->has_owner ? spec->uid : -1,
                                                       spec->submit_id, &job, &e2) == 0) {
        submit_done(call, LOOM_OK, &job, false, NULL);
        loom_job_free(&job);
        return;
    }
    char msg[LOOM_ERR_MSG_MAX + 64];
    snprintf(msg, sizeof msg, "cannot estimate the model: %s", err->msg);
    loom_rpc_call_fail(call, LOOMD_ERR_ESTIMATE, msg,
                       json_pack("{s:s, s:s}", "model", path ? path : "", "detail", err->msg));
}

/* A request no node could ever hold is refused now (-32007), unless the
 * submission holds it (options.hold). true: the call was answered. */
static bool refuse_infeasible(loomd_methods_t *m, loom_rpc_call_t *call,
                              const loom_job_spec_t *spec)
{
    if (!m->runner)
        return false;
    json_t *opts = spec->options_json ? json_loads(spec->options_json, 0, NULL) : NULL;
    bool hold = json_is_true(json_object_get(opts, "hold"));
    json_decref(opts);
    if (hold)
        return false;
    loom_sched_infeasible_t why;
    loom_err_t err;
    if (loomd_runner_feasible(m->runner, spec, &why, &err) == LOOM_OK)
        return false;
    char msg[LOOM_ERR_MSG_MAX + 16];
    json_t *data;
    if (why.lack == LOOM_SCHED_LACK_GPU_TYPE) {
        snprintf(msg, sizeof msg, "resources.gpu_type: no node has GPUs of type '%.64s'",
                 spec->gpu_type ? spec->gpu_type : "");
        data =
            json_pack("{s:s, s:s?}", "resource", "resources.gpu_type", "requested", spec->gpu_type);
    } else if (why.node < 0) { /* all of it together, no node at all, a malformed request */
        snprintf(msg, sizeof msg, "resources: %s", err.msg);
        data = json_pack("{s:s}", "resource", "resources");
    } else {
        snprintf(msg, sizeof msg, "resources.%s", err.msg);
        /* requested/largest in the message's unit (CPUs, not milli-CPU) */
        int64_t unit =
            why.lack == LOOM_SCHED_LACK_CPUS && !(why.requested % 1000) && !(why.largest % 1000)
                ? 1000
                : 1;
        data = json_pack("{s:s+, s:I, s:I, s:s}", "resource", "resources.",
                         loom_sched_lack_name(why.lack), "requested",
                         (json_int_t)(why.requested / unit), "largest",
                         (json_int_t)(why.largest / unit), "node", why.node_name);
    }
    loom_rpc_call_fail(call, LOOMD_ERR_INFEASIBLE, msg, data);
    return true;
}

/* job.submit's "reconfig" (docs/protocol.md): checked against the job's
 * resources and stored with the job (*text, owned by the caller), where
 * loomd's runner reads it under the rubick policy. */
static int check_reconfig(const json_t *params, loom_job_spec_t *spec, char **text, loom_err_t *err)
{
    const json_t *r = json_object_get(params, "reconfig");
    if (!r || json_is_null(r))
        return LOOM_OK;
    loom_rubick_spec_t rs;
    int rc = loom_rubick_spec_parse(r, "reconfig", &rs, err);
    if (rc == LOOM_OK)
        rc = loom_rubick_spec_check_asked(&rs, (int)spec->gpus, spec->cpus * 1000,
                                          (int64_t)((spec->memory_bytes + (1u << 20) - 1) >> 20),
                                          "reconfig", err);
    if (rc == LOOM_OK && !(*text = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS)))
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
    spec->reconfig_json = *text;
    return rc;
}

/* The pending jobs a submission creates: an array's tasks (as
 * options.array says; a malformed one is refused later, counted as 1). */
static int64_t jobs_created(const loom_job_spec_t *spec)
{
    json_t *o = spec->options_json ? json_loads(spec->options_json, 0, NULL) : NULL;
    const char *text = json_string_value(json_object_get(o, "array"));
    loom_jobspec_array_t a;
    int64_t n =
        text && loom_jobspec_array_parse(text, &a, NULL) == LOOM_OK && a.count > 1 ? a.count : 1;
    json_decref(o);
    return n;
}

/* A submission beyond a quota is refused (-32009) before anything is
 * stored; true: the call was answered. */
static bool quota_refused(loomd_methods_t *m, loom_rpc_call_t *call,
                          const loom_auth_identity_t *who, const loom_job_spec_t *spec)
{
    json_t *data = NULL;
    loom_err_t err;
    int rc = loomd_quota_check(m->quotas, m->store, who, spec->account, spec->time_limit_s,
                               jobs_created(spec), &data, &err);
    if (rc == LOOM_OK)
        return false;
    loom_rpc_call_fail(call, rc == LOOM_ELIMIT ? LOOMD_ERR_QUOTA : LOOMD_ERR_STORE, err.msg, data);
    return true;
}

static loom_rpc_status_t m_job_submit(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_methods_t *m = ctx;
    loom_job_spec_t spec;
    char *labels = NULL, *estimate = NULL, *reconfig = NULL;
    const char *model_path = NULL;
    loom_err_t err;
    json_t *empty = NULL;
    if (!params)
        params = empty = json_object();
    loom_auth_identity_t local;
    const loom_auth_identity_t *who = loomd_caller(m->ident, call, &local);
    int rc = loom_job_spec_from_json(params, &spec, &labels, &err);
    if (rc == LOOM_OK)
        rc = check_reconfig(params, &spec, &reconfig, &err);
    if (rc == LOOM_OK) /* options.account (loom submit -A): charged to it */
        rc = loomd_identity_own(
            m->ident, who,
            json_string_value(json_object_get(json_object_get(params, "options"), "account")),
            &spec, &err);
    if (rc == LOOM_OK && spec.format == LOOM_JOB_FORMAT_YAML)
        rc = check_yaml_job(spec.script, &err);
    if (rc == LOOM_OK)
        rc = loomd_queue_check_options(spec.options_json, &err);
    if (rc == LOOM_OK && spec.model)
        rc = size_from_model(m, who, &spec, &estimate, &model_path, &err);
    if (rc == LOOM_ENOTFOUND || (rc == LOOM_OK && quota_refused(m, call, who, &spec)) ||
        (rc == LOOM_OK && refuse_infeasible(m, call, &spec))) {
        if (rc == LOOM_ENOTFOUND)
            fail_estimate(m, call, &spec, model_path, &err);
        free(labels);
        free(estimate);
        free(reconfig);
        json_decref(empty);
        return LOOM_RPC_DONE;
    }
    if (rc == LOOM_OK && loomd_queue_submit_array(m, call, &spec)) {
        free(labels);
        free(estimate);
        free(reconfig);
        json_decref(empty);
        return LOOM_RPC_DONE;
    }
    if (rc == LOOM_OK)
        rc = loom_store_submit_async(m->store, &spec, store_flags(call), submit_done, call, &err);
    free(labels);
    free(estimate);
    free(reconfig);
    json_decref(empty);
    if (rc == LOOM_OK)
        return LOOM_RPC_PENDING; /* completed by the thread that commits it */
    if (rc == LOOM_EINVAL)
        fail_param(call, &err);
    else
        fail_store(call, rc, &err, false, 0);
    return LOOM_RPC_DONE;
}

/* ------------------------------------------------------------ job.cancel */

/* Reads job id into *job (loom_job_free it); if there is no such job,
 * fails the call and returns false. Whether the caller may act on it was
 * decided before the handler ran (authz.c). */
static bool read_job_for(loomd_methods_t *m, loom_rpc_call_t *call, int64_t id, loom_job_t *job)
{
    loom_err_t err;
    int rc = loom_store_get(m->store, id, job, &err);
    if (rc) {
        fail_store(call, rc, &err, true, id);
        return false;
    }
    return true;
}

typedef struct cancel_ctx {
    loom_rpc_call_t *call;
    int64_t id;
} cancel_ctx_t;

static void cancel_done(void *ctx, int rc, const loom_job_t *job, bool created,
                        const loom_err_t *err)
{
    cancel_ctx_t *c = ctx;
    loom_rpc_call_t *call = c->call;
    int64_t id = c->id;
    free(c);
    if (rc != LOOM_OK) {
        fail_store(call, rc, err, true, id);
        return;
    }
    json_t *j = loom_job_to_json(job, false);
    json_t *res = j ? json_pack("{s:o}", "job", j) : NULL;
    if (!res) {
        loom_rpc_call_fail(call, LOOM_RPC_INTERNAL_ERROR, "out of memory", NULL);
        return;
    }
    loom_rpc_call_complete(call, res);
}

static loom_rpc_status_t m_job_cancel(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_methods_t *m = ctx;
    loom_err_t err;
    int64_t id;
    if (!call_id(call, params, &id))
        return LOOM_RPC_DONE;
    const char *reason = NULL;
    if (loom_json_get_string(params, "reason", false, "", &reason, &err)) {
        loom_err_set(&err, LOOM_EINVAL, "reason: expected a string, found %s",
                     loom_json_type_name(json_object_get(params, "reason")));
        fail_param(call, &err);
        return LOOM_RPC_DONE;
    }
    cancel_ctx_t *c = malloc(sizeof *c);
    if (!c) {
        loom_rpc_call_fail(call, LOOM_RPC_INTERNAL_ERROR, "out of memory", NULL);
        return LOOM_RPC_DONE;
    }
    c->call = call;
    c->id = id;
    int rc = loom_store_cancel_async(m->store, id, reason, store_flags(call), cancel_done, c, &err);
    if (rc == LOOM_OK)
        return LOOM_RPC_PENDING;
    free(c);
    fail_store(call, rc, &err, false, id);
    return LOOM_RPC_DONE;
}

/* --------------------------------------------------------------- job.get */

static loom_rpc_status_t m_job_get(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_methods_t *m = ctx;
    loom_err_t err;
    int64_t id;
    if (!call_id(call, params, &id))
        return LOOM_RPC_DONE;
    loom_job_t job;
    if (!read_job_for(m, call, id, &job))
        return LOOM_RPC_DONE;
    loom_job_event_t *ev = NULL;
    size_t nev = 0;
    int rc = loom_store_events(m->store, id, &ev, &nev, &err);
    json_t *j = rc ? NULL : loom_job_to_json(&job, true);
    if (j)
        loomd_usage_summary_add(m->store, &job, j);
    loom_job_free(&job);
    if (rc) {
        fail_store(call, rc, &err, true, id);
        return LOOM_RPC_DONE;
    }
    json_t *events = json_array();
    for (size_t i = 0; i < nev; i++)
        json_array_append_new(events, loom_job_event_to_json(&ev[i]));
    loom_store_events_free(ev, nev);
    if (!j || !events) {
        json_decref(j);
        json_decref(events);
        loom_rpc_call_fail(call, LOOM_RPC_INTERNAL_ERROR, "out of memory", NULL);
        return LOOM_RPC_DONE;
    }
    json_object_set_new(j, "events", events);
    loomd_runner_reasons(m->runner, j);
    loom_rpc_call_complete(call, json_pack("{s:o}", "job", j));
    return LOOM_RPC_DONE;
}

/* -------------------------------------------------------------- job.list */

static int parse_states(const json_t *v, unsigned *mask, loom_err_t *err)
{
    *mask = 0;
    if (!v || json_is_null(v))
        return LOOM_OK;
    if (json_is_string(v)) {
        loom_job_state_t st;
        if (loom_job_state_parse(json_string_value(v), &st, err))
            return loom_err_prefix(err, "state");
        *mask = 1u << st;
        return LOOM_OK;
    }
    if (!json_is_array(v) || json_array_size(v) == 0)
        return loom_err_set(err, LOOM_EINVAL,
                            "state: expected a state name or a non-empty array of them, found %s",
                            json_is_array(v) ? "an empty array" : loom_json_type_name(v));
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        loom_job_state_t st;
        if (!json_is_string(e))
            return loom_err_set(err, LOOM_EINVAL, "state[%zu]: expected a state name, found %s", i,
                                loom_json_type_name(e));
        if (loom_job_state_parse(json_string_value(e), &st, err))
            return loom_err_prefix(err, "state[%zu]", i);
        *mask |= 1u << st;
    }
    return LOOM_OK;
}

static int parse_cursor(const json_t *v, int64_t *after, loom_err_t *err)
{
    *after = 0;
    if (!v || json_is_null(v))
        return LOOM_OK;
    if (!json_is_string(v))
        return loom_err_set(err, LOOM_EINVAL,
                            "cursor: expected a string from next_cursor, found %s",
                            loom_json_type_name(v));
    if (loom_parse_i64(json_string_value(v), 1, INT64_MAX, after, "cursor", NULL))
        return loom_err_set(err, LOOM_EINVAL,
                            "cursor: '%.40s' is not a cursor returned by job.list (next_cursor)",
                            json_string_value(v));
    return LOOM_OK;
}

static void fail_list_budget(loom_rpc_call_t *call, size_t first_job)
{
    size_t left = loom_rpc_call_budget(call);
    loom_rpc_call_failf(call, LOOM_RPC_RESPONSE_TOO_LARGE,
                        json_pack("{s:I}", "budget_left", (json_int_t)left),
                        "response too large: %zu bytes of this request's response budget are "
                        "left%s; narrow the query (fewer calls per batch, a smaller limit) and "
                        "page with next_cursor",
                        left, first_job ? ", less than one job needs" : "");
}

/* Keeps of obj's member name only the members listed (public ones); the
 * member goes when none of them is there. */
static void keep_only(json_t *obj, const char *name, const char *const *keep)
{
    const json_t *v = json_object_get(obj, name);
    json_t *kept = json_is_object(v) ? json_object() : NULL;
    for (size_t i = 0; kept && keep[i]; i++)
        if (json_object_get(v, keep[i]))
            json_object_set(kept, keep[i], json_object_get(v, keep[i]));
    if (kept && json_object_size(kept))
        json_object_set_new(obj, name, kept);
    else {
        json_decref(kept);
        json_object_del(obj, name);
    }
}

/* Another's job as squeue shows it (docs/security.md): where it runs (the
 * node, its GPUs) and which array it is a task of stay; its environment,
 * paths, handle, outcome and estimate go. */
static void public_view(json_t *j)
{
    static const char *const run[] = {"node", "gpus", "gpu_share", NULL};
    static const char *const options[] = {"array_job_id", "array_task_id", NULL};
    keep_only(j, "run", run);
    keep_only(j, "options", options);
    json_object_del(j, "estimate");
}

/* Jobs [from, to) of the list as JSON, with their reasons (NULL: out of
 * memory). */
static json_t *list_chunk(loomd_methods_t *m, const loom_auth_identity_t *who,
                          const loom_job_list_t *list, size_t from, size_t to)
{
    json_t *all = json_array();
    for (size_t i = from; all && i < to; i++) {
        json_t *j = loom_job_to_json(&list->jobs[i], false);
        if (j && !loomd_identity_may_act(m->ident, who, &list->jobs[i]))
            public_view(j);
        if (json_array_append_new(all, j) != 0) {
            json_decref(all);
            all = NULL;
        }
    }
    if (all)
        loomd_runner_reasons(m->runner, all); /* one lock of the runner per chunk */
    return all;
}

/* The page's jobs as JSON, as many as fit the call's response budget: a
 * page cut short ends at the last job that fit and *next_after points past
 * it. NULL (the call failed) when not even the first job fits. */
static json_t *list_page(loomd_methods_t *m, loom_rpc_call_t *call, const loom_job_list_t *list,
                         int64_t *next_after)
{
    size_t budget = loom_rpc_call_budget(call), used = LIST_OVERHEAD;
    json_t *jobs = json_array();
    loom_auth_identity_t local;
    const loom_auth_identity_t *who = loomd_caller(m->ident, call, &local);
    bool full = false;
    for (size_t from = 0; jobs && !full && from < list->n; from += LIST_CHUNK) {
        size_t to = from + LIST_CHUNK < list->n ? from + LIST_CHUNK : list->n;
        json_t *all = list_chunk(m, who, list, from, to);
        for (size_t i = from; all && jobs && i < to; i++) {
            json_t *j = json_array_get(all, i - from);
            size_t size = json_dumpb(j, NULL, 0, JSON_COMPACT) + 1;
            if (used + size > budget) {
                if (i == 0) {
                    json_decref(all);
                    json_decref(jobs);
                    fail_list_budget(call, 1);
                    return NULL;
                }
                *next_after = list->jobs[i - 1].id;
                full = true;
                break;
            }
            used += size;
            if (json_array_append(jobs, j) != 0) {
                json_decref(jobs);
                jobs = NULL;
            }
        }
        if (!all) {
            json_decref(jobs);
            jobs = NULL;
        }
        json_decref(all);
    }
    if (!jobs)
        loom_rpc_call_fail(call, LOOM_RPC_INTERNAL_ERROR, "out of memory", NULL);
    return jobs;
}

static loom_rpc_status_t m_job_list(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_methods_t *m = ctx;
    loom_err_t err;
    loom_store_filter_t f = {0};
    int64_t limit = LIST_LIMIT_DEFAULT;
    const json_t *lim = params ? json_object_get(params, "limit") : NULL;
    if (lim && !json_is_null(lim)) {
        if (!json_is_integer(lim) || json_integer_value(lim) < 1 ||
            json_integer_value(lim) > LIST_LIMIT_MAX) {
            loom_err_set(&err, LOOM_EINVAL, "limit: expected an integer from 1 to %d, found %s",
                         LIST_LIMIT_MAX, loom_json_type_name(lim));
            if (json_is_integer(lim))
                loom_err_set(&err, LOOM_EINVAL,
                             "limit: expected an integer from 1 to %d, found %lld", LIST_LIMIT_MAX,
                             (long long)json_integer_value(lim));
            fail_param(call, &err);
            return LOOM_RPC_DONE;
        }
        limit = json_integer_value(lim);
    }
    const json_t *newest = params ? json_object_get(params, "newest_first") : NULL;
    if (newest && !json_is_null(newest) && !json_is_boolean(newest))
        loom_err_set(&err, LOOM_EINVAL, "newest_first: expected true or false, found %s",
                     loom_json_type_name(newest));
    if ((newest && !json_is_null(newest) && !json_is_boolean(newest)) ||
        parse_states(params ? json_object_get(params, "state") : NULL, &f.state_mask, &err) ||
        parse_cursor(params ? json_object_get(params, "cursor") : NULL, &f.after_id, &err)) {
        fail_param(call, &err);
        return LOOM_RPC_DONE;
    }
    f.newest_first = json_is_true(newest);
    f.limit = (size_t)limit;
    size_t budget = loom_rpc_call_budget(call);
    if (budget < LIST_BUDGET_MIN) { /* spent by earlier calls: no work */
        fail_list_budget(call, 0);
        return LOOM_RPC_DONE;
    }
    if (f.limit > budget / LIST_JOB_MIN) /* no more than could fit */
        f.limit = budget / LIST_JOB_MIN;
    loom_job_list_t list;
    if (loom_store_list(m->store, &f, &list, &err)) {
        fail_store(call, err.code, &err, true, 0);
        return LOOM_RPC_DONE;
    }
    int64_t next_after = list.next_after_id;
    json_t *jobs = list_page(m, call, &list, &next_after);
    loom_job_list_free(&list);
    if (!jobs)
        return LOOM_RPC_DONE; /* failed */
    json_t *next = json_null();
    if (next_after) {
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)next_after);
        next = json_string(buf);
    }
    json_t *res = json_pack("{s:o, s:o}", "jobs", jobs, "next_cursor", next);
    if (!res) {
        loom_rpc_call_fail(call, LOOM_RPC_INTERNAL_ERROR, "out of memory", NULL);
        return LOOM_RPC_DONE;
    }
    loom_rpc_call_complete(call, res);
    return LOOM_RPC_DONE;
}

const char *loomd_health(void *ctx)
{
    loomd_methods_t *m = ctx;
    loom_store_stats_t st;
    loom_err_t err;
    if (loom_store_stats(m->store, &st, &err) != LOOM_OK || st.write_failing)
        return "the store cannot write (its last transaction failed; see the log)";
    return NULL;
}

/* ----------------------------------------------------------- server.info */

static loom_rpc_status_t m_server_info(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_methods_t *m = ctx;
    loom_store_stats_t st;
    loom_err_t err;
    loom_store_stats(m->store, &st, &err);
    json_t *jobs = json_object();
    for (int i = 0; i < LOOM_JOB_NSTATES; i++)
        json_object_set_new(jobs, loom_job_state_name(i),
                            json_integer((json_int_t)st.jobs_by_state[i]));
    /* Every method of the dispatcher (the zoo's, the dashboard's, ... too),
     * read from it so that the list cannot drift from what is served. */
    json_t *methods = json_array();
    for (size_t i = 0; i < loom_rpc_dispatcher_method_count(m->disp); i++)
        json_array_append_new(methods, json_string(loom_rpc_dispatcher_method_name(m->disp, i)));
    char started[32];
    loom_time_format_rfc3339(m->info->started_real_ns, started);
    double uptime = (double)(loom_time_mono_ns() - m->info->started_mono_ns) / 1e9;
    json_t *res = json_pack(
        "{s:s, s:s, s:i, s:I, s:s, s:f, s:s, s:s, s:i, s:o, s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I}, "
        "s:o}",
        "name", "loomd", "version", LOOM_VERSION, "api_version", 1, "pid", (json_int_t)getpid(),
        "started_at", started, "uptime_s", uptime, "state_dir", m->info->state_dir, "durability",
        m->info->durability, "schema_version", loom_store_schema_version(m->store), "tcp",
        m->info->tcp_url ? json_string(m->info->tcp_url) : json_null(), "socket",
        m->info->socket ? json_string(m->info->socket) : json_null(), "jobs", jobs, "store",
        "queued", (json_int_t)st.queued, "commits", (json_int_t)st.commits, "helped_commits",
        (json_int_t)st.helped_commits, "writes", (json_int_t)st.writes, "max_group",
        (json_int_t)st.max_group, "methods", methods);
    if (res)
        json_object_set_new(res, "auth", loomd_identity_info(m->ident, call));
    if (res)
        json_object_set_new(res, "scheduler",
                            m->runner ? loomd_runner_stats(m->runner) : json_null());
    if (res && m->sizer) {
        uint64_t hits, misses;
        loom_est_sizer_stats(m->sizer, &hits, &misses);
        json_object_set_new(
            res, "estimator",
            json_pack("{s:s, s:s, s:I, s:I}", "device",
                      m->info->estimate_device ? m->info->estimate_device : "", "margin",
                      m->info->estimate_margin ? m->info->estimate_margin : "", "cache_hits",
                      (json_int_t)hits, "cache_misses", (json_int_t)misses));
    } else if (res) {
        json_object_set_new(res, "estimator", json_null());
    }
    if (!res) {
        loom_rpc_call_fail(call, LOOM_RPC_INTERNAL_ERROR, "out of memory", NULL);
        return LOOM_RPC_DONE;
    }
    loom_rpc_call_complete(call, res);
    return LOOM_RPC_DONE;
}

/* ------------------------------------------------------------- node.list */

static loom_rpc_status_t m_node_list(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_methods_t *m = ctx;
    json_t *nodes = m->runner ? loomd_runner_nodes(m->runner) : json_array();
    loom_rpc_call_complete(call, json_pack("{s:o}", "nodes", nodes));
    return LOOM_RPC_DONE;
}

/* --------------------------------------------------------------- metrics */

/* How long the oldest pending job (lowest id) has waited: what alerts on a
 * starving queue need (dist/prometheus/loom-rules.yml). */
static int metric_pending_age(loomd_methods_t *m, loom_buf_t *out)
{
    loom_store_filter_t f = {.state_mask = 1u << LOOM_JOB_PENDING, .limit = 1};
    loom_job_list_t list;
    loom_err_t err;
    if (loom_store_list(m->store, &f, &list, &err))
        return err.code;
    double age = list.n ? (double)(loom_time_real_ns() - list.jobs[0].submit_time_ns) / 1e9 : 0;
    loom_job_list_free(&list);
    return loom_buf_appendf(out,
                            "# HELP loom_job_pending_oldest_seconds How long the oldest pending "
                            "job has waited since submission (0: none pending).\n"
                            "# TYPE loom_job_pending_oldest_seconds gauge\n"
                            "loom_job_pending_oldest_seconds %.3f\n",
                            age > 0 ? age : 0);
}

int loomd_methods_metrics(loom_buf_t *out, void *ctx)
{
    loomd_methods_t *m = ctx;
    loom_store_stats_t st;
    loom_err_t err;
    if (loom_store_stats(m->store, &st, &err))
        return err.code;
    int rc = loom_buf_append_str(out, "# HELP loom_jobs Jobs in the store by state.\n"
                                      "# TYPE loom_jobs gauge\n");
    for (int i = 0; i < LOOM_JOB_NSTATES && rc == LOOM_OK; i++)
        rc = loom_buf_appendf(out, "loom_jobs{state=\"%s\"} %llu\n", loom_job_state_name(i),
                              (unsigned long long)st.jobs_by_state[i]);
    if (rc == LOOM_OK)
        rc = loom_buf_appendf(
            out,
            "# HELP loom_store_queue_depth Writes waiting for the store's committer.\n"
            "# TYPE loom_store_queue_depth gauge\n"
            "loom_store_queue_depth %llu\n"
            "# HELP loom_store_commits_total Transactions committed (group commits).\n"
            "# TYPE loom_store_commits_total counter\n"
            "loom_store_commits_total %llu\n"
            "# HELP loom_store_helped_commits_total Of those, transactions committed by the "
            "thread of the request that queued the writes rather than the committer thread.\n"
            "# TYPE loom_store_helped_commits_total counter\n"
            "loom_store_helped_commits_total %llu\n"
            "# HELP loom_store_commit_failures_total Transactions that failed and were rolled "
            "back.\n"
            "# TYPE loom_store_commit_failures_total counter\n"
            "loom_store_commit_failures_total %llu\n"
            "# HELP loom_store_writes_total Writes (submissions, cancels) completed.\n"
            "# TYPE loom_store_writes_total counter\n"
            "loom_store_writes_total %llu\n"
            "# HELP loom_store_group_size_max Most writes committed in one transaction.\n"
            "# TYPE loom_store_group_size_max gauge\n"
            "loom_store_group_size_max %llu\n"
            "# HELP loom_store_wal_restarts_total Times the write-ahead log started over from "
            "its beginning after a checkpoint.\n"
            "# TYPE loom_store_wal_restarts_total counter\n"
            "loom_store_wal_restarts_total %llu\n"
            "# HELP loom_store_wal_frames_max The longest the write-ahead log has been since "
            "start, in frames (a frame is one page plus 24 bytes).\n"
            "# TYPE loom_store_wal_frames_max gauge\n"
            "loom_store_wal_frames_max %llu\n",
            (unsigned long long)st.queued, (unsigned long long)st.commits,
            (unsigned long long)st.helped_commits, (unsigned long long)st.commit_failures,
            (unsigned long long)st.writes, (unsigned long long)st.max_group,
            (unsigned long long)st.wal_restarts, (unsigned long long)st.wal_frames_max);
    if (rc == LOOM_OK)
        rc = metric_pending_age(m, out);
    if (rc == LOOM_OK && m->runner)
        loomd_runner_metrics(m->runner, out);
    return rc;
}

/* ------------------------------------------------------------- wiring */

int loomd_methods_add(loom_rpc_dispatcher_t *d, loomd_methods_t *m, loom_err_t *err)
{
    static const char *const submit_params[] = {"name",       "script",   "format",   "resources",
                                                "time_limit", "priority", "labels",   "submit_id",
                                                "model",      "options",  "reconfig", NULL};
    static const char *const id_params[] = {"id", NULL};
    static const char *const cancel_params[] = {"id", "reason", NULL};
    static const char *const list_params[] = {"state", "limit", "cursor", "newest_first", NULL};
    int rc;
    m->disp = d;
    if ((rc = loom_rpc_dispatcher_add(d, "server.info", m_server_info, m, NULL, LOOM_RPC_NO_PARAMS,
                                      err)) ||
        (rc = loom_rpc_dispatcher_add(d, "job.submit", m_job_submit, m, submit_params,
                                      LOOM_RPC_STRICT_PARAMS, err)) ||
        (rc = loom_rpc_dispatcher_add(d, "job.get", m_job_get, m, id_params, LOOM_RPC_STRICT_PARAMS,
                                      err)) ||
        (rc = loom_rpc_dispatcher_add(d, "job.list", m_job_list, m, list_params,
                                      LOOM_RPC_STRICT_PARAMS, err)) ||
        (rc = loom_rpc_dispatcher_add(d, "job.cancel", m_job_cancel, m, cancel_params,
                                      LOOM_RPC_STRICT_PARAMS, err)) ||
        (rc = loom_rpc_dispatcher_add(d, "node.list", m_node_list, m, NULL, LOOM_RPC_NO_PARAMS,
                                      err)) ||
        (rc = loomd_follow_add(d, m, err)) || (rc = loomd_queue_add(d, m, err)))
        return rc;
    loom_rpc_dispatcher_on_wait(d, commit_queued, m);
    return LOOM_OK;
}
