/* loomd's zoo.* methods: zoo.add, zoo.get, zoo.list, zoo.remove,
 * zoo.match and zoo.warm over libloom's model repository (STATE/zoo), and
 * the registration of jobs that declare a model output (labels zoo.output,
 * zoo.task): a thread looks every second at jobs that have ended and adds
 * each COMPLETED one's model, weights and metric (docs/zoo.md). The
 * repository's SQLite connection is shared by the RPC threads behind one
 * mutex; every call is short (a match against 10,000 entries takes about
 * 0.1 s, docs/bench/zoo_match.md). Files a client names are opened with
 * the client's rights and copied into memory (loom_auth_file_open: regular
 * files within the limits of include/loom/zoo.h) before the mutex is taken,
 * so a FIFO or a slow file holds nobody else up. Entries belong to their
 * submitter (docs/zoo.md, "Owners"). Warm-start weights go to the
 * client's "out", a new file created with the client's rights
 * (loom_auth_file_create), or, without one, for loomd's own user and
 * operators, under STATE/zoo/warm/ (a multi-user loomd refuses other
 * callers: they could not read that file). */
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <unistd.h>

#include "daemon/methods.h"
#include "daemon/zoo_methods.h"
#include "loom/auth.h"
#include "loom/store.h"
#include "loom/zoo.h"

#define WATCH_PERIOD_NS 1000000000LL
#define WATCH_TRIED_MAX 4096 /* ended jobs past the cursor remembered */

struct loomd_zoo {
    loom_zoo_t *repo;
    const loomd_identity_t *ident;
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
    size_t ntried, cap_tried;
};

static void *watch_main(void *arg);

/* One path of the repository: absent, or loomd's own (a directory where
 * dir), no symbolic link in multi-user mode, writable by nobody else (group
 * and other write bits of loomd's own file are removed, and logged). */
static int check_own(const char *path, bool dir, bool multi, loom_err_t *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? LOOM_OK : loom_err_errno(err, LOOM_EIO, errno, "'%s'", path);
    if (S_ISLNK(st.st_mode) && multi)
        return loom_err_set(err, LOOM_EINVAL,
                            "'%s' is a symbolic link: in multi-user mode loomd (root) refuses one "
                            "in its zoo, where it could lead root's writes anywhere; move it away",
                            path);
    if (S_ISLNK(st.st_mode) && stat(path, &st) != 0)
        return loom_err_errno(err, LOOM_EIO, errno, "'%s'", path);
    if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
        return loom_err_set(err, LOOM_EINVAL, "'%s': expected a %s", path,
                            dir ? "directory" : "regular file");
    if (st.st_uid != geteuid())
        return loom_err_set(err, LOOM_EINVAL,
                            "'%s' belongs to uid %u, not to loomd's user (%u): another user "
                            "could change the zoo; move it away or chown it",
                            path, (unsigned)st.st_uid, (unsigned)geteuid());
    if ((st.st_mode & 022) && chmod(path, st.st_mode & 07755) == 0)
        loom_log_warn("zoo.mode_repaired", "path=\"%s\" mode=%04o now=%04o", path,
                      (unsigned)(st.st_mode & 07777), (unsigned)(st.st_mode & 07755));
    return LOOM_OK;
}

static int check_repo(const char *dir, bool multi, loom_err_t *err)
{
    static const char *const files[] = {"zoo.db", "zoo.db-wal", "zoo.db-shm", "objects", "warm"};
    int rc = check_own(dir, true, multi, err);
    for (size_t i = 0; !rc && i < sizeof files / sizeof *files; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        rc = check_own(path, i >= 3, multi, err);
    }
    return rc;
}

int loomd_zoo_open(const char *state_dir, loom_store_t *store, const loomd_identity_t *ident,
                   loomd_zoo_t **out, loom_err_t *err)
{
    char path[4096];
    *out = NULL;
    if (snprintf(path, sizeof path, "%s/zoo", state_dir) >= (int)sizeof path)
        return loom_err_set(err, LOOM_EINVAL, "state dir: path too long");
    int rc = check_repo(path, ident && loomd_identity_multi_user(ident), err);
    if (rc)
        return rc;
    loomd_zoo_t *z = calloc(1, sizeof *z);
    if (!z)
        return loom_err_set(err, LOOM_ENOMEM, "zoo: out of memory");
    rc = loom_zoo_open(path, &z->repo, err);
    if (rc) {
        free(z);
        return rc;
    }
    z->ident = ident;
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

/* path read with who's rights (NULL: loomd's) into b: a private copy of a
 * regular file of at most max bytes (loom_auth_file_open). */
static int read_client(const loom_auth_identity_t *who, const char *path, size_t max, loom_buf_t *b,
                       loom_err_t *err)
{
    loom_file_t f;
    int rc = loom_auth_file_open(who, path, 0, max, &f, err);
    if (!rc)
        rc = loom_file_read(&f, b, err);
    loom_file_close(&f);
    return rc;
}

/* Adds in: the files read as who and parsed outside the mutex; only the
 * row (and objects a concurrent remove dropped) under it. */
static int add_entry(loomd_zoo_t *z, const loom_auth_identity_t *who, const loom_zoo_entry_in_t *in,
                     int64_t job_id_unique, int64_t *id, loom_err_t *err)
{
    loom_buf_t m = LOOM_BUF_INIT, w = LOOM_BUF_INIT;
    loom_zoo_prepared_t p;
    int64_t have = 0;
    int rc = read_client(who, in->weights_path, LOOM_ZOO_WEIGHTS_MAX, &w, err);
    if (!rc)
        rc = read_client(who, in->model_path, LOOM_ZOO_MODEL_MAX, &m, err);
    if (!rc)
        rc = loom_zoo_prepare(in, m.data, m.len, w.data, w.len, true, &p, err);
    if (!rc) {
        rc = loom_zoo_store(z->repo, &p, err);
        pthread_mutex_lock(&z->mu);
        if (!rc && job_id_unique)
            rc = loom_zoo_find_job(z->repo, job_id_unique, &have, err);
        if (rc || have)
            loom_zoo_abort(z->repo, &p);
        else
            rc = loom_zoo_commit(z->repo, &p, id, err);
        pthread_mutex_unlock(&z->mu);
        loom_zoo_prepared_free(&p);
    }
    loom_buf_free(&m);
    loom_buf_free(&w);
    return rc;
}

/* The owner of a job, to read its files as: NULL (loomd's own rights) for a
 * job without one or of loomd's own user. */
static const loom_auth_identity_t *job_owner(const loom_job_t *job, loom_auth_identity_t *id)
{
    loom_err_t err;
    if (job->uid < 0 || (uid_t)job->uid == geteuid() ||
        loom_auth_user(NULL, (uid_t)job->uid, (gid_t)job->gid, LOOM_AUTH_LOCAL, id, &err))
        return NULL;
    id->is_operator = false;
    return id;
}

/* Registers a COMPLETED job that declares zoo.output (a directory holding
 * model.onnx, weights.lw, metrics.json) and zoo.task; zoo.metric names the
 * metric in metrics.json (default "accuracy"), zoo.shared "true" shares it.
 * The files are read as the job's owner, who owns the entry. Problems are
 * logged: the job has ended, there is nobody to answer. */
static void register_job(loomd_zoo_t *z, const loom_job_t *job)
{
    json_t *labels = json_loads(job->labels_json, 0, NULL), *metrics = NULL;
    const char *dir = json_string_value(json_object_get(labels, "zoo.output"));
    const char *task = json_string_value(json_object_get(labels, "zoo.task"));
    const char *mname = json_string_value(json_object_get(labels, "zoo.metric"));
    const char *shared = json_string_value(json_object_get(labels, "zoo.shared"));
    const char *data = json_string_value(json_object_get(labels, "zoo.data"));
    if (!dir || !task) {
        json_decref(labels);
        return;
    }
    char model[4096], weights[4096], mpath[4096];
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    snprintf(weights, sizeof weights, "%s/weights.lw", dir);
    snprintf(mpath, sizeof mpath, "%s/metrics.json", dir);
    loom_auth_identity_t idbuf;
    const loom_auth_identity_t *who = job_owner(job, &idbuf);
    loom_err_t err;
    loom_buf_t mb = LOOM_BUF_INIT;
    int64_t id = 0;
    int rc = dir[0] == '/' ? read_client(who, mpath, LOOM_ZOO_METRICS_MAX, &mb, &err)
                           : loom_err_set(&err, LOOM_EINVAL, "zoo.output '%s': not absolute", dir);
    if (!rc && loom_json_parse(mb.data, mb.len, mpath, 0, &metrics, &err))
        rc = loom_err_set(&err, LOOM_EINVAL, "%s: not valid JSON", mpath);
    loom_buf_free(&mb);
    const json_t *v = metrics ? json_object_get(metrics, mname ? mname : "accuracy") : NULL;
    if (!rc && !json_is_number(v))
        rc = loom_err_set(&err, LOOM_EINVAL, "%s: expected a number at \"%s\"", mpath,
                          mname ? mname : "accuracy");
    if (!rc) {
        loom_zoo_entry_in_t in = {.model_path = model,
                                  .weights_path = weights,
                                  .task = task,
                                  .data = data,
                                  .name = job->name,
                                  .metric_name = mname ? mname : "accuracy",
                                  .metric = json_number_value(v),
                                  .job_id = job->id,
                                  .owner_uid = job->uid >= 0 ? job->uid : (int64_t)geteuid(),
                                  .owner = job->user,
                                  .shared = shared && !strcmp(shared, "true")};
        rc = add_entry(z, who, &in, job->id, &id, &err);
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
                if (!prefix && z->ntried < WATCH_TRIED_MAX &&
                    loom_vec_reserve((void **)&z->tried, &z->cap_tried, z->ntried + 1,
                                     sizeof *z->tried, 16) == LOOM_OK)
                    z->tried[z->ntried++] = j->id;
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

/* An absolute path parameter (read with the caller's rights). */
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

/* The caller, and what it may see: its own entries and shared ones; an
 * operator every entry. */
static const loom_auth_identity_t *caller(const loomd_zoo_t *z, const loom_rpc_call_t *call,
                                          loom_auth_identity_t *local, loom_zoo_viewer_t *v)
{
    const loom_auth_identity_t *who = loomd_caller(z->ident, call, local);
    *v = (loom_zoo_viewer_t){.uid = who->uid, .all = who->is_operator};
    return who;
}

static loom_rpc_status_t m_add(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_zoo_t *z = ctx;
    loom_zoo_entry_in_t in = {0};
    loom_auth_identity_t local;
    loom_zoo_viewer_t v;
    const loom_auth_identity_t *who = caller(z, call, &local, &v);
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
        rc = loom_json_get_string(params, "data", false, "params", &in.data, &err);
    if (!rc)
        rc = read_metric(params, &in, &err);
    if (!rc)
        rc = get_opt_int(params, "job_id", 1, INT64_MAX, &in.job_id, &err);
    if (!rc)
        rc = loom_json_get_bool(params, "shared", false, "params", &in.shared, &err);
    in.owner_uid = who->uid;
    in.owner = who->user[0] ? who->user : NULL;
    if (!rc)
        rc = add_entry(z, who, &in, 0, &id, &err);
    if (rc)
        fail(call, rc, &err);
    else
        loom_rpc_call_complete(call, json_pack("{s:I}", "id", (json_int_t)id));
    return LOOM_RPC_DONE;
}

/* zoo.remove: the owner's, or an operator's; another's private entry is
 * "no such entry" (its existence is not told). Under z->mu. */
static int remove_entry(loomd_zoo_t *z, int64_t id, const loom_auth_identity_t *who,
                        const loom_zoo_viewer_t *v, bool *denied, loom_err_t *err)
{
    json_t *row = NULL;
    int rc = loom_zoo_get(z->repo, id, v, &row, err);
    if (rc)
        return rc;
    const json_t *owner = json_object_get(row, "owner_uid");
    if (!who->is_operator && !(json_is_integer(owner) && json_integer_value(owner) == who->uid)) {
        const char *name = json_string_value(json_object_get(row, "owner"));
        *denied = true;
        rc = loom_err_set(err, LOOM_EINVAL,
                          "permission denied: zoo entry %lld belongs to %s; only its owner or "
                          "an operator may remove it",
                          (long long)id, name ? name : "no user (added before entries had owners)");
    } else {
        rc = loom_zoo_remove(z->repo, id, err);
    }
    json_decref(row);
    return rc;
}

static loom_rpc_status_t m_get_remove(loom_rpc_call_t *call, json_t *params, bool remove,
                                      loomd_zoo_t *z)
{
    loom_err_t err;
    loom_auth_identity_t local;
    loom_zoo_viewer_t v;
    const loom_auth_identity_t *who = caller(z, call, &local, &v);
    int64_t id = 0;
    json_t *e = NULL;
    bool denied = false;
    int rc = get_opt_int(params, "id", 1, INT64_MAX, &id, &err);
    if (!rc && !id)
        rc = loom_err_set(&err, LOOM_EINVAL, "params.id: required");
    if (!rc) {
        pthread_mutex_lock(&z->mu);
        rc = remove ? remove_entry(z, id, who, &v, &denied, &err)
                    : loom_zoo_get(z->repo, id, &v, &e, &err);
        pthread_mutex_unlock(&z->mu);
    }
    if (denied)
        loom_rpc_call_fail(call, LOOMD_ERR_PERMISSION, err.msg, NULL);
    else if (rc)
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
    loom_auth_identity_t local;
    loom_zoo_viewer_t v;
    caller(z, call, &local, &v);
    const char *task = NULL;
    int64_t limit = 1000;
    json_t *arr = NULL;
    int rc = params ? loom_json_get_string(params, "task", false, "params", &task, &err) : 0;
    if (!rc && params)
        rc = get_opt_int(params, "limit", 1, 10000, &limit, &err);
    if (!rc) {
        pthread_mutex_lock(&z->mu);
        rc = loom_zoo_list(z->repo, task, &v, (size_t)limit, &arr, &err);
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
        rc = loom_json_get_string(params, "data", false, "params", &o->data, err);
    if (!rc && o->data && strlen(o->data) > LOOM_ZOO_MAX_TEXT)
        rc = loom_err_set(err, LOOM_EINVAL, "params.data: expected at most %d bytes",
                          LOOM_ZOO_MAX_TEXT);
    if (!rc)
        rc = get_opt_int(params, "top", 1, 100, &top, err);
    o->top = (size_t)top;
    return rc;
}

/* The child model a client names, read as the client and parsed, outside
 * the mutex; a parse error names the path only (never the file's bytes). */
static int client_model(const loom_auth_identity_t *who, const char *path, loom_est_model_t **m,
                        loom_err_t *err)
{
    loom_buf_t b = LOOM_BUF_INIT;
    *m = NULL;
    int rc = read_client(who, path, LOOM_ZOO_MODEL_MAX, &b, err);
    if (!rc && (rc = loom_est_model_parse(b.data, b.len, path, m, err)) && rc != LOOM_ENOMEM)
        rc = loom_err_set(err, LOOM_EINVAL,
                          "'%s': not an ONNX model that can be read (errors about a client's "
                          "file do not quote it; the CLI's `zoo match` on it gives the detail)",
                          path);
    loom_buf_free(&b);
    return rc;
}

static loom_rpc_status_t m_match(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_zoo_t *z = ctx;
    loom_err_t err;
    loom_auth_identity_t local;
    loom_zoo_viewer_t v;
    const loom_auth_identity_t *who = caller(z, call, &local, &v);
    const char *model;
    loom_zoo_match_opts_t o;
    loom_zoo_sig_t sig = {0};
    loom_est_model_t *m = NULL;
    json_t *res = NULL;
    int rc = get_path(params, "model", &model, &err);
    if (!rc)
        rc = match_opts(params, &o, &err);
    o.viewer = &v;
    if (!rc)
        rc = client_model(who, model, &m, &err);
    if (!rc)
        rc = loom_zoo_sig_from_model(m, &sig, &err);
    loom_est_model_free(m);
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

/* zoo.warm's "out": optional; absolute, at most WARM_OUT_MAX bytes (the
 * path goes into the job's script as LOOM_WARM_START, loom_zoo_warm_apply). */
#define WARM_OUT_MAX 256

static int warm_out(const loomd_zoo_t *z, const loom_auth_identity_t *who, const json_t *params,
                    const char **out, loom_err_t *err)
{
    *out = NULL;
    int rc = loom_json_get_string(params, "out", false, "params", out, err);
    if (rc)
        return rc;
    if (!*out) {
        if (z->ident && loomd_identity_multi_user(z->ident) && !who->is_operator)
            return loom_err_set(err, LOOM_EINVAL,
                                "params.out: required on a multi-user loomd (a new file for "
                                "the weights, created as user %s; without it they would go "
                                "under loomd's state directory, which %s cannot read)",
                                who->user, who->user);
        return LOOM_OK;
    }
    if ((*out)[0] != '/' || strlen(*out) > WARM_OUT_MAX)
        return loom_err_set(err, LOOM_EINVAL,
                            "params.out: expected an absolute path of at most %d bytes",
                            WARM_OUT_MAX);
    return LOOM_OK;
}

static loom_rpc_status_t m_warm(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_zoo_t *z = ctx;
    loom_err_t err;
    loom_auth_identity_t local;
    loom_zoo_viewer_t v;
    const loom_auth_identity_t *who = caller(z, call, &local, &v);
    const char *model, *given = NULL;
    loom_zoo_match_opts_t o;
    loom_est_model_t *m = NULL;
    int64_t seed = 0;
    int fd = -1;
    char dir[4096], out[4200];
    json_t *rep = NULL;
    int rc = get_path(params, "model", &model, &err);
    if (!rc)
        rc = match_opts(params, &o, &err);
    o.viewer = &v;
    if (!rc)
        rc = get_opt_int(params, "seed", 0, INT64_MAX, &seed, &err);
    if (!rc)
        rc = warm_out(z, who, params, &given, &err);
    if (!rc)
        rc = client_model(who, model, &m, &err);
    /* Created before the lock: opening as the client forks a child. */
    if (!rc && given)
        rc = loom_auth_file_create(who, given, &fd, &err);
    if (!rc) {
        pthread_mutex_lock(&z->mu);
        if (given) {
            snprintf(out, sizeof out, "%s", given);
        } else {
            snprintf(dir, sizeof dir, "%s/warm", loom_zoo_dir(z->repo));
            snprintf(out, sizeof out, "%s/%lld-%lu.lw", dir, (long long)loom_time_real_ns(),
                     ++z->warm_seq);
            if (mkdir(dir, 0755) && errno != EEXIST)
                rc = loom_err_errno(&err, LOOM_EIO, errno, "%s: cannot create", dir);
        }
        loom_zoo_transform_opts_t to = {.noise = -1, .seed = (uint64_t)seed};
        if (!rc)
            rc = loom_zoo_warm_model(z->repo, m, model, &o, &to, out, fd, &rep, &err);
        pthread_mutex_unlock(&z->mu);
    }
    if (fd >= 0)
        close(fd);
    loom_est_model_free(m);
    if (rc)
        fail(call, rc, &err);
    else
        loom_rpc_call_complete(call, rep);
    return LOOM_RPC_DONE;
}

int loomd_zoo_add_methods(loom_rpc_dispatcher_t *d, loomd_zoo_t *z, loom_err_t *err)
{
    static const char *const add_p[] = {"model",  "weights", "task", "metric", "name",
                                        "job_id", "shared",  "data", NULL};
    static const char *const id_p[] = {"id", NULL};
    static const char *const list_p[] = {"task", "limit", NULL};
    static const char *const match_p[] = {"model", "task", "top", "data", NULL};
    static const char *const warm_p[] = {"model", "task", "top", "seed", "out", "data", NULL};
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
