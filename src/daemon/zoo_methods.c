/* loomd's zoo.* methods: zoo.add, zoo.get, zoo.list, zoo.remove,
 * zoo.match and zoo.warm over libloom's model repository (STATE/zoo), and
 * the registration of jobs that declare a model output (labels zoo.output,
 * zoo.task): a thread looks every second at jobs that have ended and adds
 * each COMPLETED one's model, weights and metric (docs/zoo.md). The
 * repository's SQLite connection is shared by the RPC threads behind one
 * mutex; every call is short (a match against 10,000 entries takes about
 * 0.1 s, docs/bench/zoo_match.md). Warm-start weights are written
 * under STATE/zoo/warm/, never to a path the client names. */
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/zoo_methods.h"
#include "loom/store.h"
#include "loom/zoo.h"

#define WATCH_PERIOD_NS 1000000000LL
#define WATCH_TRIED_MAX 4096 /* ended jobs past the cursor remembered */

struct loomd_zoo {
    loom_zoo_t *repo;
    pthread_mutex_t mu;
    unsigned long warm_seq;
    /* the watcher */
    loom_store_t *store;
    pthread_t thread;
    bool running, stop;
    pthread_mutex_t wmu;
    pthread_cond_t wcv;
    int64_t cursor; /* every job <= cursor has ended and been looked at */
    int64_t *tried; /* ended jobs > cursor already looked at */
    size_t ntried;
};

static void *watch_main(void *arg);

int loomd_zoo_open(const char *state_dir, loom_store_t *store, loomd_zoo_t **out, loom_err_t *err)
{
    char path[4096];
    *out = NULL;
    if (snprintf(path, sizeof path, "%s/zoo", state_dir) >= (int)sizeof path)
        return loom_err_set(err, LOOM_EINVAL, "state dir: path too long");
    loomd_zoo_t *z = calloc(1, sizeof *z);
    if (!z)
        return loom_err_set(err, LOOM_ENOMEM, "zoo: out of memory");
    int rc = loom_zoo_open(path, &z->repo, err);
    if (rc) {
        free(z);
        return rc;
    }
    pthread_mutex_init(&z->mu, NULL);
    pthread_mutex_init(&z->wmu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&z->wcv, &ca);
    pthread_condattr_destroy(&ca);
    z->store = store;
    if (store) {
        if (pthread_create(&z->thread, NULL, watch_main, z)) {
            loomd_zoo_close(z);
            return loom_err_set(err, LOOM_EIO, "zoo: cannot start the registration thread");
        }
        z->running = true;
    }
    *out = z;
    return LOOM_OK;
}

void loomd_zoo_close(loomd_zoo_t *z)
{
    if (!z)
        return;
    if (z->running) {
        pthread_mutex_lock(&z->wmu);
        z->stop = true;
        pthread_cond_signal(&z->wcv);
        pthread_mutex_unlock(&z->wmu);
        pthread_join(z->thread, NULL);
    }
    loom_zoo_close(z->repo);
    pthread_mutex_destroy(&z->mu);
    pthread_mutex_destroy(&z->wmu);
    pthread_cond_destroy(&z->wcv);
    free(z->tried);
    free(z);
}

/* ------------------------------------------------ registration of jobs */

/* Registers a COMPLETED job that declares zoo.output (a directory holding
 * model.onnx, weights.lw, metrics.json) and zoo.task; zoo.metric names the
 * metric in metrics.json (default "accuracy"). Problems are logged: the job
 * has ended, there is nobody to answer. */
static void register_job(loomd_zoo_t *z, const loom_job_t *job)
{
    json_t *labels = json_loads(job->labels_json, 0, NULL), *metrics = NULL;
    const char *dir = json_string_value(json_object_get(labels, "zoo.output"));
    const char *task = json_string_value(json_object_get(labels, "zoo.task"));
    const char *mname = json_string_value(json_object_get(labels, "zoo.metric"));
    if (!dir || !task) {
        json_decref(labels);
        return;
    }
    char model[4096], weights[4096], mpath[4096];
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    snprintf(weights, sizeof weights, "%s/weights.lw", dir);
    snprintf(mpath, sizeof mpath, "%s/metrics.json", dir);
    loom_err_t err;
    int64_t id = 0, have = 0;
    int rc = dir[0] == '/' ? loom_json_load_file(mpath, &metrics, &err)
                           : loom_err_set(&err, LOOM_EINVAL, "zoo.output '%s': not absolute", dir);
    const json_t *v = metrics ? json_object_get(metrics, mname ? mname : "accuracy") : NULL;
    if (!rc && !json_is_number(v))
        rc = loom_err_set(&err, LOOM_EINVAL, "%s: expected a number at \"%s\"", mpath,
                          mname ? mname : "accuracy");
    if (!rc) {
        loom_zoo_entry_in_t in = {.model_path = model,
                                  .weights_path = weights,
                                  .task = task,
                                  .name = job->name,
                                  .metric_name = mname ? mname : "accuracy",
                                  .metric = json_number_value(v),
                                  .job_id = job->id};
        pthread_mutex_lock(&z->mu);
        rc = loom_zoo_find_job(z->repo, job->id, &have, &err);
        if (!rc && !have)
            rc = loom_zoo_add(z->repo, &in, &id, &err);
        pthread_mutex_unlock(&z->mu);
    }
    if (rc)
        loom_log_warn("zoo.register_failed", "job=%lld error=\"%s\"", (long long)job->id, err.msg);
    else if (id)
        loom_log_info("zoo.registered", "job=%lld entry=%lld task=%s", (long long)job->id,
                      (long long)id, task);
    json_decref(metrics);
    json_decref(labels);
}

static bool tried(const loomd_zoo_t *z, int64_t id)
{
    for (size_t i = 0; i < z->ntried; i++)
        if (z->tried[i] == id)
            return true;
    return false;
}

/* One pass over the jobs after the cursor: ended jobs are looked at once;
 * the cursor moves over the leading run of ended jobs. */
static void watch_pass(loomd_zoo_t *z)
{
    loom_store_filter_t f = {.after_id = z->cursor, .limit = 1000};
    bool prefix = true;
    for (;;) {
        loom_job_list_t list;
        loom_err_t err;
        if (loom_store_list(z->store, &f, &list, &err))
            return;
        for (size_t i = 0; i < list.n; i++) {
            const loom_job_t *j = &list.jobs[i];
            bool ended = loom_job_state_terminal(j->state);
            if (ended && !tried(z, j->id)) {
                if (j->state == LOOM_JOB_COMPLETED && strstr(j->labels_json, "zoo.output"))
                    register_job(z, j);
                if (!prefix && z->ntried < WATCH_TRIED_MAX) {
                    int64_t *t = realloc(z->tried, (z->ntried + 1) * sizeof *t);
                    if (t)
                        (z->tried = t)[z->ntried++] = j->id;
                }
            }
            prefix = prefix && ended;
            if (prefix)
                z->cursor = j->id;
        }
        f.after_id = list.next_after_id;
        loom_job_list_free(&list);
        if (!f.after_id)
            break;
    }
    size_t k = 0; /* forget what the cursor has passed */
    for (size_t i = 0; i < z->ntried; i++)
        if (z->tried[i] > z->cursor)
            z->tried[k++] = z->tried[i];
    z->ntried = k;
}

static void *watch_main(void *arg)
{
    loomd_zoo_t *z = arg;
    pthread_mutex_lock(&z->wmu);
    while (!z->stop) {
        pthread_mutex_unlock(&z->wmu);
        watch_pass(z);
        pthread_mutex_lock(&z->wmu);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t ns = (int64_t)ts.tv_nsec + WATCH_PERIOD_NS;
        ts.tv_sec += ns / 1000000000LL;
        ts.tv_nsec = ns % 1000000000LL;
        while (!z->stop && pthread_cond_timedwait(&z->wcv, &z->wmu, &ts) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&z->wmu);
    return NULL;
}

static void fail(loom_rpc_call_t *call, int rc, const loom_err_t *err)
{
    if (rc == LOOM_EINVAL)
        loom_rpc_call_fail_params(call, err);
    else if (rc == LOOM_ENOTFOUND)
        loom_rpc_call_fail(call, LOOMD_ERR_ZOO_NOT_FOUND, err->msg, NULL);
    else
        loom_rpc_call_fail(call, LOOMD_ERR_ZOO, err->msg, NULL);
}

/* An absolute path parameter (loomd reads it as itself). */
static int get_path(const json_t *params, const char *key, const char **out, loom_err_t *err)
{
    if (!json_is_object(params))
        return loom_err_set(err, LOOM_EINVAL, "params.%s: required", key);
    int rc = loom_json_get_string(params, key, true, "params", out, err);
    if (!rc && (*out)[0] != '/')
        rc = loom_err_set(err, LOOM_EINVAL, "params.%s: expected an absolute path", key);
    return rc;
}

static int get_opt_int(const json_t *params, const char *key, int64_t lo, int64_t hi, int64_t *out,
                       loom_err_t *err)
{
    const json_t *v = json_object_get(params, key);
    if (!v || json_is_null(v))
        return LOOM_OK;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return loom_err_set(err, LOOM_EINVAL, "params.%s: expected an integer %lld to %lld", key,
                            (long long)lo, (long long)hi);
    *out = json_integer_value(v);
    return LOOM_OK;
}

static int read_metric(const json_t *params, loom_zoo_entry_in_t *in, loom_err_t *err)
{
    const json_t *m = json_object_get(params, "metric");
    const json_t *name = json_object_get(m, "name"), *value = json_object_get(m, "value");
    if (!json_is_object(m) || !json_is_string(name) || !json_is_number(value))
        return loom_err_set(err, LOOM_EINVAL,
                            "params.metric: expected {\"name\": string, \"value\": number}");
    in->metric_name = json_string_value(name);
    in->metric = json_number_value(value);
    return LOOM_OK;
}

static loom_rpc_status_t m_add(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_zoo_t *z = ctx;
    loom_zoo_entry_in_t in = {0};
    loom_err_t err;
    int64_t id = 0;
    int rc = get_path(params, "model", &in.model_path, &err);
    if (!rc)
        rc = get_path(params, "weights", &in.weights_path, &err);
    if (!rc)
        rc = loom_json_get_string(params, "task", true, "params", &in.task, &err);
    if (!rc)
        rc = loom_json_get_string(params, "name", false, "params", &in.name, &err);
    if (!rc)
        rc = read_metric(params, &in, &err);
    if (!rc)
        rc = get_opt_int(params, "job_id", 1, INT64_MAX, &in.job_id, &err);
    if (!rc) {
        pthread_mutex_lock(&z->mu);
        rc = loom_zoo_add(z->repo, &in, &id, &err);
        pthread_mutex_unlock(&z->mu);
    }
    if (rc)
        fail(call, rc, &err);
    else
        loom_rpc_call_complete(call, json_pack("{s:I}", "id", (json_int_t)id));
    return LOOM_RPC_DONE;
}

static loom_rpc_status_t m_get_remove(loom_rpc_call_t *call, json_t *params, bool remove,
                                      loomd_zoo_t *z)
{
    loom_err_t err;
    int64_t id = 0;
    json_t *e = NULL;
    int rc = get_opt_int(params, "id", 1, INT64_MAX, &id, &err);
    if (!rc && !id)
        rc = loom_err_set(&err, LOOM_EINVAL, "params.id: required");
    if (!rc) {
        pthread_mutex_lock(&z->mu);
        rc = remove ? loom_zoo_remove(z->repo, id, &err) : loom_zoo_get(z->repo, id, &e, &err);
        pthread_mutex_unlock(&z->mu);
    }
    if (rc)
        fail(call, rc, &err);
    else
        loom_rpc_call_complete(call, e ? e : json_pack("{s:I}", "id", (json_int_t)id));
    return LOOM_RPC_DONE;
}

static loom_rpc_status_t m_get(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    return m_get_remove(call, params, false, ctx);
}

static loom_rpc_status_t m_remove(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    return m_get_remove(call, params, true, ctx);
}

static loom_rpc_status_t m_list(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_zoo_t *z = ctx;
    loom_err_t err;
    const char *task = NULL;
    int64_t limit = 1000;
    json_t *arr = NULL;
    int rc = params ? loom_json_get_string(params, "task", false, "params", &task, &err) : 0;
    if (!rc && params)
        rc = get_opt_int(params, "limit", 1, 10000, &limit, &err);
    if (!rc) {
        pthread_mutex_lock(&z->mu);
        rc = loom_zoo_list(z->repo, task, (size_t)limit, &arr, &err);
        pthread_mutex_unlock(&z->mu);
    }
    if (rc)
        fail(call, rc, &err);
    else
        loom_rpc_call_complete(call, json_pack("{s:o}", "entries", arr));
    return LOOM_RPC_DONE;
}

static int match_opts(const json_t *params, loom_zoo_match_opts_t *o, loom_err_t *err)
{
    int64_t top = 5;
    *o = (loom_zoo_match_opts_t){.band = -1, .min_similarity = -1};
    int rc = loom_json_get_string(params, "task", false, "params", &o->task, err);
    if (!rc)
        rc = get_opt_int(params, "top", 1, 100, &top, err);
    o->top = (size_t)top;
    return rc;
}

static loom_rpc_status_t m_match(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_zoo_t *z = ctx;
    loom_err_t err;
    const char *model;
    loom_zoo_match_opts_t o;
    loom_zoo_sig_t sig = {0};
    json_t *res = NULL;
    int rc = get_path(params, "model", &model, &err);
    if (!rc)
        rc = match_opts(params, &o, &err);
    if (!rc)
        rc = loom_zoo_sig_load(model, &sig, &err);
    if (!rc) {
        pthread_mutex_lock(&z->mu);
        rc = loom_zoo_match(z->repo, &sig, &o, &res, &err);
        pthread_mutex_unlock(&z->mu);
    }
    loom_zoo_sig_free(&sig);
    if (rc)
        fail(call, rc, &err);
    else
        loom_rpc_call_complete(call, res);
    return LOOM_RPC_DONE;
}

static loom_rpc_status_t m_warm(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_zoo_t *z = ctx;
    loom_err_t err;
    const char *model;
    loom_zoo_match_opts_t o;
    int64_t seed = 0;
    char dir[4096], out[4200];
    json_t *rep = NULL;
    int rc = get_path(params, "model", &model, &err);
    if (!rc)
        rc = match_opts(params, &o, &err);
    if (!rc)
        rc = get_opt_int(params, "seed", 0, INT64_MAX, &seed, &err);
    if (!rc) {
        pthread_mutex_lock(&z->mu);
        snprintf(dir, sizeof dir, "%s/warm", loom_zoo_dir(z->repo));
        snprintf(out, sizeof out, "%s/%lld-%lu.lw", dir, (long long)loom_time_real_ns(),
                 ++z->warm_seq);
        if (mkdir(dir, 0755) && errno != EEXIST)
            rc = loom_err_errno(&err, LOOM_EIO, errno, "%s: cannot create", dir);
        loom_zoo_transform_opts_t to = {.noise = -1, .seed = (uint64_t)seed};
        if (!rc)
            rc = loom_zoo_warm(z->repo, model, &o, &to, out, &rep, &err);
        pthread_mutex_unlock(&z->mu);
    }
    if (rc)
        fail(call, rc, &err);
    else
        loom_rpc_call_complete(call, rep);
    return LOOM_RPC_DONE;
}

int loomd_zoo_add_methods(loom_rpc_dispatcher_t *d, loomd_zoo_t *z, loom_err_t *err)
{
    static const char *const add_p[] = {"model", "weights", "task", "metric",
                                        "name",  "job_id",  NULL};
    static const char *const id_p[] = {"id", NULL};
    static const char *const list_p[] = {"task", "limit", NULL};
    static const char *const match_p[] = {"model", "task", "top", NULL};
    static const char *const warm_p[] = {"model", "task", "top", "seed", NULL};
    const unsigned s = LOOM_RPC_STRICT_PARAMS;
    int rc;
    if ((rc = loom_rpc_dispatcher_add(d, "zoo.add", m_add, z, add_p, s, err)) ||
        (rc = loom_rpc_dispatcher_add(d, "zoo.get", m_get, z, id_p, s, err)) ||
        (rc = loom_rpc_dispatcher_add(d, "zoo.list", m_list, z, list_p, s, err)) ||
        (rc = loom_rpc_dispatcher_add(d, "zoo.remove", m_remove, z, id_p, s, err)) ||
        (rc = loom_rpc_dispatcher_add(d, "zoo.match", m_match, z, match_p, s, err)) ||
        (rc = loom_rpc_dispatcher_add(d, "zoo.warm", m_warm, z, warm_p, s, err)))
        return rc;
    return LOOM_OK;
}
