/* job.wait and job.logs: long-poll methods, so that `loom wait` and
 * `loom logs -f` are pushed by loomd rather than polled by the client.
 * A call returns as soon as there is something to say (the jobs ended, the
 * log grew, the job ended), or when its timeout runs out; the client then
 * simply calls again. While a call waits, loomd looks at the job in its
 * store and at the size of the log file every FOLLOW_TICK_MS on the
 * request's own thread (libmicrohttpd serves each connection on its own
 * thread, so a waiting call holds only its connection). The contract is
 * docs/protocol.md.
 *
 * Each waiting call holds a thread and polls the store, so one user holds
 * at most LOOMD_WAITS_PER_USER waiting calls at once (loomd_waits_t);
 * operators are not counted, so they are always served. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/follow.h"
#include "daemon/identity.h"
#include "loom/exec.h"

#define FOLLOW_TICK_MS     50
#define FOLLOW_TIMEOUT_MAX 30 /* seconds a call may wait */
#define WAIT_IDS_MAX       100
#define LOGS_BYTES_MAX     (1 << 20)
#define LOGS_BYTES_DEFAULT (64 * 1024)

/* An optional integer member in [min, max]. */
static int get_bounded(const json_t *params, const char *name, int64_t min, int64_t max,
                       int64_t *out, loom_err_t *err)
{
    const json_t *v = json_object_get(params, name);
    if (!v || json_is_null(v))
        return LOOM_OK;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return loom_err_set(err, LOOM_EINVAL, "%s: expected an integer from %lld to %lld", name,
                            (long long)min, (long long)max);
    *out = json_integer_value(v);
    return LOOM_OK;
}

static void sleep_tick(void)
{
    usleep(FOLLOW_TICK_MS * 1000);
}

/* When a call asking to wait timeout_s seconds must be answered. */
static int64_t deadline_of(const loomd_methods_t *m, int64_t timeout_s)
{
    int64_t ms = timeout_s * 1000;
    if (m->follow_max_ms < 0 || (m->follow_max_ms > 0 && m->follow_max_ms < ms))
        ms = m->follow_max_ms < 0 ? 0 : m->follow_max_ms;
    return loom_time_mono_ns() + ms * 1000000;
}

/* ------------------------------------------------- waiting calls per user */

struct loomd_waits {
    pthread_mutex_t mu;
    unsigned limit;
    size_t n, cap;
    struct {
        int64_t uid;
        unsigned count;
    } * users;
};

int loomd_waits_new(unsigned limit, loomd_waits_t **out, loom_err_t *err)
{
    loomd_waits_t *w = calloc(1, sizeof *w);
    if (!w)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    pthread_mutex_init(&w->mu, NULL);
    w->limit = limit;
    *out = w;
    return LOOM_OK;
}

void loomd_waits_free(loomd_waits_t *w)
{
    if (!w)
        return;
    pthread_mutex_destroy(&w->mu);
    free(w->users);
    free(w);
}

/* The slot of uid, added with count 0 (NULL: out of memory). w->mu held. */
static unsigned *waits_slot(loomd_waits_t *w, int64_t uid)
{
    for (size_t i = 0; i < w->n; i++)
        if (w->users[i].uid == uid)
            return &w->users[i].count;
    for (size_t i = 0; i < w->n; i++) /* reuse a slot at 0 */
        if (w->users[i].count == 0) {
            w->users[i].uid = uid;
            return &w->users[i].count;
        }
    if (loom_vec_reserve((void **)&w->users, &w->cap, w->n + 1, sizeof *w->users, 16))
        return NULL;
    w->users[w->n].uid = uid;
    w->users[w->n].count = 0;
    return &w->users[w->n++].count;
}

/* Takes a waiting slot for the caller of call (true), or fails the call
 * with -32015 naming the limit (false). *held says whether to give it back
 * with waits_put. A call that will not wait (timeout 0) takes none. */
static bool waits_take(loomd_methods_t *m, loom_rpc_call_t *call, int64_t timeout, bool *held,
                       int64_t *uid)
{
    *held = false;
    loom_auth_identity_t local;
    const loom_auth_identity_t *who = loomd_caller(m->ident, call, &local);
    if (!m->waits || timeout <= 0 || who->is_operator)
        return true;
    *uid = who->uid;
    pthread_mutex_lock(&m->waits->mu);
    unsigned *count = waits_slot(m->waits, who->uid);
    bool ok = count && *count < m->waits->limit;
    if (ok)
        ++*count;
    pthread_mutex_unlock(&m->waits->mu);
    if (!ok) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "too many waiting calls: user '%.40s' has %u job.wait/job.logs calls waiting, "
                 "the most one user may have (%u); retry when one returns, or use timeout 0",
                 who->user, m->waits->limit, m->waits->limit);
        loom_rpc_call_fail(call, LOOM_RPC_USER_LIMIT, msg,
                           json_pack("{s:s, s:i}", "limit", "waiting calls per user", "allowed",
                                     (int)m->waits->limit));
        return false;
    }
    *held = true;
    return true;
}

static void waits_put(loomd_methods_t *m, int64_t uid)
{
    pthread_mutex_lock(&m->waits->mu);
    unsigned *count = waits_slot(m->waits, uid);
    if (count && *count > 0)
        --*count;
    pthread_mutex_unlock(&m->waits->mu);
}

/* ------------------------------------------------------------ job.wait */

static json_t *wait_entry(const loom_job_t *j)
{
    json_t *run = j->run_json ? json_loads(j->run_json, 0, NULL) : NULL;
    json_t *code = json_object_get(json_object_get(run, "outcome"), "exit_code");
    json_t *e = json_pack("{s:I, s:s, s:o, s:O}", "id", (json_int_t)j->id, "state",
                          loom_job_state_name(j->state), "reason",
                          j->reason ? json_string(j->reason) : json_null(), "exit_code",
                          json_is_integer(code) ? code : json_null());
    json_decref(run);
    return e;
}

/* The jobs' entries; *ended whether all have ended (any: whether one
 * has). LOOM_ENOTFOUND names the missing job. */
static int wait_check(loomd_methods_t *m, const int64_t *ids, size_t n, bool any, json_t **out,
                      bool *ended, loom_err_t *err)
{
    *out = json_array();
    *ended = !any;
    for (size_t i = 0; i < n; i++) {
        loom_job_t j;
        int rc = loom_store_get(m->store, ids[i], &j, err);
        if (rc) {
            json_decref(*out);
            *out = NULL;
            return rc;
        }
        bool done = loom_job_state_terminal(j.state);
        *ended = any ? *ended || done : *ended && done;
        json_array_append_new(*out, wait_entry(&j));
        loom_job_free(&j);
    }
    return LOOM_OK;
}

static int wait_params(const json_t *params, int64_t *ids, size_t *n, int64_t *timeout, bool *any,
                       loom_err_t *err)
{
    const json_t *a = json_object_get(params, "any");
    if (a && !json_is_null(a) && !json_is_boolean(a))
        return loom_err_set(err, LOOM_EINVAL, "any: expected true or false, found %s",
                            loom_json_type_name(a));
    *any = json_is_true(a);
    const json_t *arr = json_object_get(params, "ids");
    if (!json_is_array(arr) || json_array_size(arr) == 0 || json_array_size(arr) > WAIT_IDS_MAX)
        return loom_err_set(err, LOOM_EINVAL, "ids: expected an array of 1 to %d job ids",
                            WAIT_IDS_MAX);
    *n = 0;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 1)
            return loom_err_set(err, LOOM_EINVAL, "ids[%zu]: expected a positive integer job id",
                                i);
        ids[(*n)++] = json_integer_value(v);
    }
    *timeout = 20;
    return get_bounded(params, "timeout", 0, FOLLOW_TIMEOUT_MAX, timeout, err);
}

static void job_wait(loomd_methods_t *m, loom_rpc_call_t *call, const int64_t *ids, size_t n,
                     int64_t timeout, bool any)
{
    loom_err_t err;
    int64_t deadline = deadline_of(m, timeout);
    json_t *jobs;
    bool ended;
    for (;;) {
        int rc = wait_check(m, ids, n, any, &jobs, &ended, &err);
        if (rc) {
            loom_rpc_call_fail(call,
                               rc == LOOM_ENOTFOUND ? LOOMD_ERR_JOB_NOT_FOUND : LOOMD_ERR_STORE,
                               err.msg, NULL);
            return;
        }
        if (ended || loom_time_mono_ns() >= deadline || loom_rpc_call_abandoned(call))
            break; /* abandoned: the client left, or loomd stops */
        json_decref(jobs);
        sleep_tick();
    }
    loom_rpc_call_complete(call, json_pack("{s:b, s:o}", "ended", ended, "jobs", jobs));
}

static loom_rpc_status_t m_job_wait(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_methods_t *m = ctx;
    int64_t ids[WAIT_IDS_MAX], timeout, uid = 0;
    size_t n;
    bool any, held;
    loom_err_t err;
    if (wait_params(params, ids, &n, &timeout, &any, &err)) {
        loom_rpc_call_fail_params(call, &err);
        return LOOM_RPC_DONE;
    }
    if (!waits_take(m, call, timeout, &held, &uid))
        return LOOM_RPC_DONE;
    job_wait(m, call, ids, n, timeout, any);
    if (held)
        waits_put(m, uid);
    return LOOM_RPC_DONE;
}

/* ------------------------------------------------------------ job.logs */

/* The length of text's longest prefix of whole UTF-8 sequences (a
 * sequence cut at the end is left for the next read). */
static size_t whole_utf8(const char *text, size_t len)
{
    size_t i = len, back = 0;
    while (i > 0 && back < 4 && ((unsigned char)text[i - 1] & 0xC0) == 0x80) {
        i--;
        back++;
    }
    if (i == 0)
        return len;
    unsigned char lead = (unsigned char)text[i - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (lead < 0xC2 || lead > 0xF4 || need <= back + 1)
        return len; /* complete, or not UTF-8 at all: sent as it is (U+FFFD) */
    return i - 1 > 0 ? i - 1 : len;
}

/* Bytes that are not UTF-8 become U+FFFD, so the text is a JSON string. */
static json_t *text_value(const char *data, size_t len)
{
    if (loom_utf8_valid(data, len))
        return json_stringn(data, len);
    loom_buf_t b = LOOM_BUF_INIT;
    for (size_t i = 0; i < len; i++) {
        size_t k = 1;
        while (k <= 4 && i + k <= len && !loom_utf8_valid(data + i, k))
            k++;
        if (k <= 4 && i + k <= len) {
            loom_buf_append(&b, data + i, k);
            i += k - 1;
        } else {
            loom_buf_append_str(&b, "\xEF\xBF\xBD");
        }
    }
    json_t *v = json_stringn(b.data ? b.data : "", b.len);
    loom_buf_free(&b);
    return v;
}

typedef struct logs_req {
    int64_t id, offset, max_bytes, timeout;
    bool want_stderr;
    bool present; /* set by logs_read: the file could be opened */
} logs_req_t;

static int logs_params(const json_t *params, logs_req_t *q, loom_err_t *err)
{
    const json_t *id = json_object_get(params, "id");
    if (!json_is_integer(id) || json_integer_value(id) < 1)
        return loom_err_set(err, LOOM_EINVAL, "id: expected a positive integer job id");
    q->id = json_integer_value(id);
    const char *stream = json_string_value(json_object_get(params, "stream"));
    if (json_object_get(params, "stream") &&
        (!stream || (strcmp(stream, "stdout") && strcmp(stream, "stderr"))))
        return loom_err_set(err, LOOM_EINVAL, "stream: expected \"stdout\" or \"stderr\"");
    q->want_stderr = stream && strcmp(stream, "stderr") == 0;
    q->offset = 0;
    q->max_bytes = LOGS_BYTES_DEFAULT;
    q->timeout = 0;
    if (get_bounded(params, "offset", 0, INT64_MAX, &q->offset, err) ||
        get_bounded(params, "max_bytes", 1, LOGS_BYTES_MAX, &q->max_bytes, err) ||
        get_bounded(params, "timeout", 0, FOLLOW_TIMEOUT_MAX, &q->timeout, err))
        return LOOM_EINVAL;
    return LOOM_OK;
}

/* Opens a job's log. Multi-user: loomd reads only a regular file that
 * belongs to the job's owner (no symbolic link, nor a path through one to
 * someone else's file), so job.logs gives nobody more than the owner could
 * read. -1 with errno when refused (EACCES, ELOOP) or not there yet. */
static int open_log(const loomd_methods_t *m, const loom_job_t *j, const char *path)
{
    bool multi = loomd_identity_multi_user(m->ident);
    int fd = open(path, O_RDONLY | O_CLOEXEC | (multi ? O_NOFOLLOW | O_NONBLOCK : 0));
    if (fd < 0 || !multi || j->uid < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != (uid_t)j->uid) {
        close(fd);
        errno = EACCES;
        return -1;
    }
    return fd;
}

/* Reads what the log has past the offset. *path is "" before the job ran.
 * Multi-user: only for the job's owner or an operator (else *denied, with
 * the job in *j), and the output file as open_log allows it (else
 * LOOM_EINVAL naming it). */
static int logs_read(loomd_methods_t *m, loom_rpc_call_t *call, logs_req_t *q, loom_job_t *j,
                     bool *denied, loom_buf_t *data, char *path, size_t pathlen, loom_err_t *err)
{
    int rc = loom_store_get(m->store, q->id, j, err);
    if (rc)
        return rc;
    loom_auth_identity_t local;
    *denied = loomd_identity_multi_user(m->ident) &&
              !loomd_identity_may_act(m->ident, loomd_caller(m->ident, call, &local), j);
    if (*denied)
        return LOOM_OK;
    json_t *run = j->run_json ? json_loads(j->run_json, 0, NULL) : NULL;
    const char *p = json_string_value(json_object_get(run, q->want_stderr ? "stderr" : "stdout"));
    snprintf(path, pathlen, "%s", p ? p : "");
    json_decref(run);
    loom_buf_reset(data);
    q->present = false;
    if (!path[0])
        return LOOM_OK;
    int fd = open_log(m, j, path);
    q->present = fd >= 0;
    if (fd < 0 && (errno == EACCES || errno == ELOOP) && loomd_identity_multi_user(m->ident)) {
        loom_job_free(j);
        return loom_err_set(err, LOOM_EINVAL,
                            "job.logs: '%s' is not a regular file of the job's owner; refused",
                            path);
    }
    if (fd < 0)
        return LOOM_OK; /* not written yet */
    loom_buf_reserve(data, (size_t)q->max_bytes + 1);
    ssize_t n = data->data ? pread(fd, data->data, (size_t)q->max_bytes, q->offset) : -1;
    close(fd);
    if (n > 0) {
        data->len = whole_utf8(data->data, (size_t)n);
        data->data[data->len] = 0;
    }
    return LOOM_OK;
}

static void job_logs(loomd_methods_t *m, loom_rpc_call_t *call, const logs_req_t *qp)
{
    logs_req_t q = *qp;
    loom_err_t err;
    int64_t deadline = deadline_of(m, q.timeout);
    loom_buf_t data = LOOM_BUF_INIT;
    char path[LOOM_EXEC_PATH_MAX];
    loom_job_t j;
    for (;;) {
        bool denied = false;
        int rc = logs_read(m, call, &q, &j, &denied, &data, path, sizeof path, &err);
        if (rc == LOOM_OK && denied) { /* another user's job */
            loomd_identity_deny(call, j.id, j.user);
            loom_job_free(&j);
        }
        if (rc || denied) {
            loom_buf_free(&data);
            if (rc)
                loom_rpc_call_fail(call,
                                   rc == LOOM_ENOTFOUND ? LOOMD_ERR_JOB_NOT_FOUND
                                   : rc == LOOM_EINVAL  ? LOOMD_ERR_PERMISSION
                                                        : LOOMD_ERR_STORE,
                                   err.msg, NULL);
            return;
        }
        bool ended = loom_job_state_terminal(j.state);
        if (data.len > 0 || ended || loom_time_mono_ns() >= deadline ||
            loom_rpc_call_abandoned(call))
            break;
        loom_job_free(&j);
        sleep_tick();
    }
    bool ended = loom_job_state_terminal(j.state);
    json_t *res = json_pack("{s:o, s:I, s:b, s:s, s:s, s:b, s:s}", "data",
                            text_value(data.data ? data.data : "", data.len), "next_offset",
                            (json_int_t)(q.offset + (int64_t)data.len), "eof",
                            ended && data.len == 0, "state", loom_job_state_name(j.state), "path",
                            path, "exists", q.present, "reason", j.reason ? j.reason : "");
    loom_job_free(&j);
    loom_buf_free(&data);
    loom_rpc_call_complete(call, res);
}

static loom_rpc_status_t m_job_logs(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_methods_t *m = ctx;
    logs_req_t q;
    loom_err_t err;
    int64_t uid = 0;
    bool held;
    if (logs_params(params, &q, &err)) {
        loom_rpc_call_fail_params(call, &err);
        return LOOM_RPC_DONE;
    }
    if (!waits_take(m, call, q.timeout, &held, &uid))
        return LOOM_RPC_DONE;
    job_logs(m, call, &q);
    if (held)
        waits_put(m, uid);
    return LOOM_RPC_DONE;
}

int loomd_follow_add(loom_rpc_dispatcher_t *d, loomd_methods_t *m, loom_err_t *err)
{
    static const char *const wait_params_names[] = {"ids", "timeout", "any", NULL};
    static const char *const logs_params_names[] = {"id",        "stream",  "offset",
                                                    "max_bytes", "timeout", NULL};
    int rc = loom_rpc_dispatcher_add(d, "job.wait", m_job_wait, m, wait_params_names,
                                     LOOM_RPC_STRICT_PARAMS, err);
    if (rc == LOOM_OK)
        rc = loom_rpc_dispatcher_add(d, "job.logs", m_job_logs, m, logs_params_names,
                                     LOOM_RPC_STRICT_PARAMS, err);
    return rc;
}
