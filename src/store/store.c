/* The store: SQLite in WAL mode with a group-committing writer.
 *
 * Two connections. The writer belongs to the committer thread: callers queue
 * writes (submissions, cancels) and the committer takes everything queued,
 * runs it in ONE transaction and only then completes each waiter, so a
 * submission is acknowledged after its commit and a burst of N concurrent
 * submissions costs one commit (one fsync with durability "full"), not N.
 * A write whose own check fails (job not found, already terminal) does not
 * spoil its group; a database error rolls the whole group back and fails
 * every write in it, so nothing is half-written.
 *
 * The reader connection serves get/list/events under a mutex; in WAL mode it
 * sees the last committed state and never blocks the writer.
 *
 * Completions (the callbacks that answer the writers) of a large group run
 * on a completer thread, so that answering group N overlaps committing
 * group N+1; a small group is answered by the committer itself, which is
 * cheaper than waking another thread.
 *
 * A thread that would only wait for its writes can commit them itself
 * instead (LOOM_STORE_DEFER, then loom_store_help): whoever holds the writer
 * connection — the committer or one helper — drains the queue before it
 * lets go, so no deferred write is left behind; this spares the committer's
 * wake-up for each request (docs/store.md).
 *
 * Checkpoints (copying the WAL back into the database file, which fsyncs)
 * run on a third connection in a checkpointer thread, woken by the writer's
 * WAL hook once enough new frames accumulate, so a commit rarely
 * waits for a checkpoint's fsyncs. PASSIVE checkpoints never block writers; a
 * RESTART one, past a WAL length, briefly does (to bound the WAL).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/db.h"
#include "store/store_int.h"

enum {
    OP_SUBMIT,
    OP_CANCEL,
    OP_EXEC,
    OP_TRANSITION,
    OP_UPDATE,
    OP_SUBMIT_ARRAY,
    OP_REASONS,
    OP_FN
};

typedef struct op {
    struct op *next;
    int kind;
    loom_job_t job; /* submit: the spec's fields (owned); result job after commit */
    int64_t id;     /* cancel, transition */
    char *reason;   /* cancel, transition */
    int expect, to; /* transition: required current state (-1 any), new state (-1 same) */
    char *run;      /* transition: new run JSON, NULL keeps it */
    loom_store_done_fn done;
    void *ctx;
    bool more;  /* LOOM_STORE_MORE: its producer queues more at once */
    bool defer; /* LOOM_STORE_DEFER: its producer calls loom_store_help */
    int rc;
    bool created;
    loom_err_t err;
    int delta_from, delta_to; /* state counts to adjust after commit, -1 none */
    loom_job_update_t upd;    /* update: name and options owned (NULL keep) */
    const int64_t *tasks;     /* submit array: task indices (borrowed), how many */
    size_t ntasks;
    size_t delta_n;     /* jobs counted by delta_to (0: one) */
    const int64_t *ids; /* reasons: the jobs (borrowed), their reasons, how many */
    const char *const *reasons;
    size_t nids;
    loom_store__write_fn fn; /* fn: runs on the writer connection (series.c) */
    void *fn_ctx;
} op_t;

struct loom_store {
    sqlite3 *wdb, *rdb;
    loom_store_options_t opts;
    int schema_version;
    char *reserve_path;       /* opts.reserve_path's copy */
    bool reserve_held;        /* the reserve file exists (committer only) */
    int64_t reserve_tried_ns; /* when it was last made or tried */

    pthread_mutex_t mu; /* queue, closing, stats */
    pthread_cond_t cv;
    op_t *head, *tail;
    size_t queued;
    bool closing;
    bool idle;           /* the committer waits for an empty queue to fill */
    bool writing;        /* a thread (the committer or a helper) owns the writer connection */
    size_t deferred;     /* queued writes with LOOM_STORE_DEFER */
    size_t delay_target; /* during a commit delay: wake the committer at this many queued */
    pthread_t committer;
    loom_store_stats_t stats;

    pthread_mutex_t rmu;  /* reader connection */
    uint64_t jobs_listed; /* rows loom_store_list read (under rmu), for stats */

    pthread_t completer; /* runs the completions of committed groups */
    pthread_mutex_t dmu;
    pthread_cond_t dcv;
    op_t *dhead, *dtail;
    bool dbusy; /* the completer is running completions */
    bool dstop;

    sqlite3 *cdb; /* checkpointer connection */
    pthread_t checkpointer;
    pthread_mutex_t cmu;
    pthread_cond_t ccv;
    bool ckpt_wanted, ckpt_stop;
    int ckpt_done;           /* WAL frames the last checkpoint copied */
    int wal_last;            /* the WAL's length after the last commit, frames */
    uint64_t wal_restarts;   /* commits that found the WAL restarted */
    uint64_t wal_frames_max; /* the longest the WAL has been, frames */

    void (*commit_hook)(void *ctx); /* after each committed group */
    void *commit_hook_ctx;

    /* Writer statements (committer thread only). */
    sqlite3_stmt *ins_job, *ins_event, *sel_submit_w, *sel_id_w, *upd_cancel, *upd_trans;
    sqlite3_stmt *begin_w, *commit_w; /* prepared once: sqlite3_exec compiles each time */
};

#define JOB_COLUMNS                                                                                \
    "id, submit_id, name, script, format, cpus, memory_bytes, gpus, gpu_share_milli, "             \
    "gpu_memory_bytes, gpu_type, time_limit_s, priority, labels, state, reason, "                  \
    "submit_time_ns, start_time_ns, end_time_ns, update_time_ns, run, estimate, options, "         \
    "uid, gid, user, grp, account, reconfig"

static char *col_text(sqlite3_stmt *st, int i, bool *fail)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    if (!t)
        return NULL;
    char *d = strdup((const char *)t);
    if (!d)
        *fail = true;
    return d;
}

static int row_to_job(sqlite3_stmt *st, loom_job_t *j)
{
    bool fail = false;
    memset(j, 0, sizeof *j);
    j->id = sqlite3_column_int64(st, 0);
    j->submit_id = col_text(st, 1, &fail);
    j->name = col_text(st, 2, &fail);
    j->script = col_text(st, 3, &fail);
    const char *fmt = (const char *)sqlite3_column_text(st, 4);
    j->format = fmt && strcmp(fmt, "yaml") == 0 ? LOOM_JOB_FORMAT_YAML : LOOM_JOB_FORMAT_BATCH;
    j->cpus = sqlite3_column_int64(st, 5);
    j->memory_bytes = (uint64_t)sqlite3_column_int64(st, 6);
    j->gpus = sqlite3_column_int64(st, 7);
    j->gpu_share_milli = sqlite3_column_int64(st, 8);
    j->gpu_memory_bytes = (uint64_t)sqlite3_column_int64(st, 9);
    j->gpu_type = col_text(st, 10, &fail);
    j->time_limit_s = sqlite3_column_int64(st, 11);
    j->priority = sqlite3_column_int64(st, 12);
    j->labels_json = col_text(st, 13, &fail);
    loom_job_state_t state = LOOM_JOB_PENDING;
    loom_job_state_parse((const char *)sqlite3_column_text(st, 14), &state, NULL);
    j->state = state;
    j->reason = col_text(st, 15, &fail);
    j->submit_time_ns = sqlite3_column_int64(st, 16);
    j->start_time_ns = sqlite3_column_int64(st, 17);
    j->end_time_ns = sqlite3_column_int64(st, 18);
    j->update_time_ns = sqlite3_column_int64(st, 19);
    j->run_json = col_text(st, 20, &fail);
    j->estimate_json = col_text(st, 21, &fail);
    j->options_json = col_text(st, 22, &fail);
    j->uid = sqlite3_column_type(st, 23) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 23);
    j->gid = sqlite3_column_type(st, 24) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 24);
    j->user = col_text(st, 25, &fail);
    j->group = col_text(st, 26, &fail);
    j->account = col_text(st, 27, &fail);
    j->reconfig_json = col_text(st, 28, &fail);
    if (!j->name || !j->script || !j->labels_json)
        fail = true;
    if (fail) {
        loom_job_free(j);
        return LOOM_ENOMEM;
    }
    return LOOM_OK;
}

static int prep(sqlite3 *db, const char *sql, sqlite3_stmt **st, loom_err_t *err)
{
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
        return loom_err_set(err, LOOM_EIO, "preparing '%.60s': %s", sql, sqlite3_errmsg(db));
    return LOOM_OK;
}

static int exec_sql(sqlite3 *db, const char *sql, loom_err_t *err)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        loom_err_set(err, LOOM_EIO, "%s: %s", sql, msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return LOOM_EIO;
    }
    return LOOM_OK;
}

/* The database file made 0600 before SQLite opens it: SQLite creates it
 * with 0644 (less the umask) and gives its -wal and -shm the database's
 * mode, so all three would be readable by every local user. */
static int create_private(const char *path, loom_err_t *err)
{
    if (path[0] == ':' || strncmp(path, "file:", 5) == 0)
        return LOOM_OK; /* in memory, or a URI: not a plain path */
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return loom_err_errno(err, LOOM_EIO, errno, "%s: cannot open database", path);
    close(fd);
    return LOOM_OK;
}

static int open_conn(const char *path, loom_durability_t d, sqlite3 **out, loom_err_t *err)
{
    sqlite3 *db = NULL;
    if (create_private(path, err) != LOOM_OK)
        return LOOM_EIO;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    /* The WAL-gathering shim (walbuf.c) unless LOOM_STORE_WALBUF=0 asks
     * for SQLite's default VFS (to compare the two). */
    const char *wb = getenv("LOOM_STORE_WALBUF");
    const char *vfs = wb && strcmp(wb, "0") == 0 ? NULL : loom_store_walbuf_vfs();
    if (sqlite3_open_v2(path, &db, flags, vfs) != SQLITE_OK) {
        loom_err_set(err, LOOM_EIO, "%s: cannot open database: %s", path,
                     db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return LOOM_EIO;
    }
    sqlite3_busy_timeout(db, 10000);
    sqlite3_extended_result_codes(db, 1);
    if (exec_sql(db, "PRAGMA journal_mode = WAL", err) ||
        exec_sql(db,
                 d == LOOM_DURABILITY_FULL ? "PRAGMA synchronous = FULL"
                                           : "PRAGMA synchronous = NORMAL",
                 err) ||
        exec_sql(db, "PRAGMA foreign_keys = ON", err)) {
        loom_err_prefix(err, "%s", path);
        sqlite3_close(db);
        return LOOM_EIO;
    }
    *out = db;
    return LOOM_OK;
}

/* --------------------------------------------------------- checkpointer */

/* Runs on the committer after each commit (writer connection's WAL hook).
 * `pages` is the WAL's length in frames. A checkpoint is wanted once the WAL
 * holds checkpoint_frames frames that no checkpoint has copied yet: while
 * writes go on, a PASSIVE checkpoint rarely lets the WAL restart, and
 * asking again after every commit past the threshold would run a
 * checkpoint (two fsyncs) every few commits for a handful of new frames.
 * The checkpointer records how far it got in ckpt_done; a WAL shorter than
 * that has restarted from its beginning. */
static int wal_hook(void *ctx, sqlite3 *db, const char *name, int pages)
{
    loom_store_t *s = ctx;
    pthread_mutex_lock(&s->cmu);
    if (pages < s->wal_last)
        s->wal_restarts++;
    s->wal_last = pages;
    if ((uint64_t)pages > s->wal_frames_max)
        s->wal_frames_max = (uint64_t)pages;
    if (pages < s->ckpt_done)
        s->ckpt_done = 0;
    bool want = pages - s->ckpt_done >= s->opts.checkpoint_frames && !s->ckpt_wanted;
    if (want)
        s->ckpt_wanted = true;
    pthread_mutex_unlock(&s->cmu);
    if (want)
        pthread_cond_signal(&s->ccv);
    return SQLITE_OK;
}

static void *checkpointer_main(void *arg)
{
    loom_store_t *s = arg;
    pthread_setname_np(pthread_self(), "loom-checkpoint");
    pthread_mutex_lock(&s->cmu);
    for (;;) {
        while (!s->ckpt_wanted && !s->ckpt_stop)
            pthread_cond_wait(&s->ccv, &s->cmu);
        if (s->ckpt_stop)
            break;
        s->ckpt_wanted = false;
        pthread_mutex_unlock(&s->cmu);
        int log = 0, done = 0;
        int rc = sqlite3_wal_checkpoint_v2(s->cdb, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
        if (rc != SQLITE_OK && rc != SQLITE_BUSY)
            loom_log_warn("store.checkpoint_failed", "error=\"%s\"", sqlite3_errmsg(s->cdb));
        if (rc == SQLITE_OK && log >= s->opts.wal_restart_frames) {
            /* Under steady writes a PASSIVE checkpoint never catches up
             * with the WAL's end, so the WAL would never restart and grow
             * without bound. Past wal_restart_frames frames, copy the rest
             * and make the next writer restart the WAL from its beginning:
             * writers wait (busy handler) for the few frames written since
             * the passive pass, no longer. */
            rc = sqlite3_wal_checkpoint_v2(s->cdb, NULL, SQLITE_CHECKPOINT_RESTART, &log, &done);
            if (rc != SQLITE_OK && rc != SQLITE_BUSY)
                loom_log_warn("store.checkpoint_failed", "mode=restart error=\"%s\"",
                              sqlite3_errmsg(s->cdb));
        }
        pthread_mutex_lock(&s->cmu);
        if (rc == SQLITE_OK && done > 0)
            s->ckpt_done = done;
    }
    pthread_mutex_unlock(&s->cmu);
    return NULL;
}

/* ------------------------------------------------------------ committer */

static int bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
    return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

static int add_event(loom_store_t *s, int64_t job_id, int64_t t, int from, int to,
                     const char *reason)
{
    sqlite3_stmt *st = s->ins_event;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, job_id);
    sqlite3_bind_int64(st, 2, t);
    bind_text_or_null(st, 3, from >= 0 ? loom_job_state_name(from) : NULL);
    sqlite3_bind_text(st, 4, loom_job_state_name(to), -1, SQLITE_STATIC);
    bind_text_or_null(st, 5, reason);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Returns an SQLite error code only for database failures (the group is
 * then rolled back); the op's own outcome goes into o->rc. */
static int run_submit(loom_store_t *s, op_t *o, int64_t now)
{
    loom_job_t *j = &o->job;
    int rc;
    sqlite3_stmt *st = s->ins_job;
    sqlite3_reset(st);
    bind_text_or_null(st, 1, j->submit_id);
    sqlite3_bind_text(st, 2, j->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, j->script, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, loom_job_format_name(j->format), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, j->cpus);
    sqlite3_bind_int64(st, 6, (int64_t)j->memory_bytes);
    sqlite3_bind_int64(st, 7, j->gpus);
    sqlite3_bind_int64(st, 8, j->gpu_share_milli);
    sqlite3_bind_int64(st, 9, (int64_t)j->gpu_memory_bytes);
    bind_text_or_null(st, 10, j->gpu_type);
    sqlite3_bind_int64(st, 11, j->time_limit_s);
    sqlite3_bind_int64(st, 12, j->priority);
    sqlite3_bind_text(st, 13, j->labels_json, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 14, now);
    bind_text_or_null(st, 15, j->estimate_json);
    bind_text_or_null(st, 16, j->options_json);
    if (j->uid >= 0) {
        sqlite3_bind_int64(st, 17, j->uid);
        sqlite3_bind_int64(st, 18, j->gid);
    } else {
        sqlite3_bind_null(st, 17);
        sqlite3_bind_null(st, 18);
    }
    bind_text_or_null(st, 19, j->user);
    bind_text_or_null(st, 20, j->group);
    bind_text_or_null(st, 21, j->account);
    bind_text_or_null(st, 22, j->reconfig_json);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return rc;
    if (sqlite3_changes(s->wdb) == 0) {
        /* ON CONFLICT DO NOTHING: the key (owner, submit_id) exists
         * (committed, or earlier in this transaction); answer with that
         * job, which is the same owner's. */
        sqlite3_stmt *q = s->sel_submit_w;
        sqlite3_reset(q);
        sqlite3_bind_text(q, 1, j->submit_id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 2, j->uid >= 0 ? j->uid : -1);
        rc = sqlite3_step(q);
        if (rc != SQLITE_ROW) {
            sqlite3_reset(q);
            return rc == SQLITE_DONE ? SQLITE_CORRUPT : rc;
        }
        loom_job_t found;
        int r = row_to_job(q, &found);
        sqlite3_reset(q);
        if (r) {
            o->rc = loom_err_set(&o->err, r, "out of memory reading job");
            return SQLITE_OK;
        }
        loom_job_free(j);
        *j = found;
        o->rc = LOOM_OK;
        o->created = false;
        return SQLITE_OK;
    }
    j->id = sqlite3_last_insert_rowid(s->wdb);
    j->state = LOOM_JOB_PENDING;
    j->submit_time_ns = j->update_time_ns = now;
    if ((rc = add_event(s, j->id, now, -1, LOOM_JOB_PENDING, NULL)) != SQLITE_OK)
        return rc;
    o->rc = LOOM_OK;
    o->created = true;
    o->delta_to = LOOM_JOB_PENDING;
    return SQLITE_OK;
}

/* Reads job o->id on the writer connection for an op that changes it.
 * Returns an SQLite error for database failures; otherwise SQLITE_OK with
 * *found false when the op's own outcome is already set (no such job, out
 * of memory). */
static int read_job_w(loom_store_t *s, op_t *o, loom_job_t *cur, bool *found)
{
    *found = false;
    sqlite3_stmt *q = s->sel_id_w;
    sqlite3_reset(q);
    sqlite3_bind_int64(q, 1, o->id);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        sqlite3_reset(q);
        o->rc = loom_err_set(&o->err, LOOM_ENOTFOUND, "job %lld not found", (long long)o->id);
        return SQLITE_OK;
    }
    if (rc != SQLITE_ROW) {
        sqlite3_reset(q);
        return rc;
    }
    int r = row_to_job(q, cur);
    sqlite3_reset(q);
    if (r) {
        o->rc = loom_err_set(&o->err, r, "out of memory reading job %lld", (long long)o->id);
        return SQLITE_OK;
    }
    *found = true;
    return SQLITE_OK;
}

static int run_cancel(loom_store_t *s, op_t *o, int64_t now)
{
    loom_job_t cur;
    bool found;
    int rc = read_job_w(s, o, &cur, &found);
    if (rc != SQLITE_OK || !found)
        return rc;
    if (loom_job_state_terminal(cur.state)) {
        o->rc = loom_err_set(&o->err, LOOM_ESTATE, "job %lld is already %s and cannot be cancelled",
                             (long long)o->id, loom_job_state_name(cur.state));
        loom_job_free(&cur);
        return SQLITE_OK;
    }
    const char *reason = o->reason ? o->reason : "cancelled by request";
    sqlite3_stmt *st = s->upd_cancel;
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, reason, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now);
    sqlite3_bind_int64(st, 3, o->id);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        loom_job_free(&cur);
        return rc;
    }
    if ((rc = add_event(s, o->id, now, cur.state, LOOM_JOB_CANCELLED, reason)) != SQLITE_OK) {
        loom_job_free(&cur);
        return rc;
    }
    o->delta_from = cur.state;
    o->delta_to = LOOM_JOB_CANCELLED;
    cur.state = LOOM_JOB_CANCELLED;
    free(cur.reason);
    cur.reason = strdup(reason);
    cur.end_time_ns = cur.update_time_ns = now;
    loom_job_free(&o->job);
    o->job = cur;
    o->rc = LOOM_OK;
    return SQLITE_OK;
}

/* Test hook (store_int.h): SQL on the writer connection, in a group. */
static int run_exec(loom_store_t *s, op_t *o)
{
    char *msg = NULL;
    if (sqlite3_exec(s->wdb, o->reason, NULL, NULL, &msg) != SQLITE_OK)
        o->rc = loom_err_set(&o->err, LOOM_EIO, "%s: %s", o->reason, msg ? msg : "failed");
    else
        o->rc = LOOM_OK;
    sqlite3_free(msg);
    return SQLITE_OK;
}

/* Another part of the store's write (loom_store__write): its own failure
 * is its op's, a database error the group's. */
static int run_fn(loom_store_t *s, op_t *o)
{
    int rc = o->fn(s->wdb, o->fn_ctx, &o->err);
    o->rc = rc == SQLITE_OK ? LOOM_OK : LOOM_EIO;
    if (rc != SQLITE_OK && !o->err.msg[0])
        loom_err_set(&o->err, LOOM_EIO, "%s", sqlite3_errmsg(s->wdb));
    return rc == SQLITE_OK || rc == SQLITE_CONSTRAINT ? SQLITE_OK : rc;
}

/* A state change by the scheduler or executor (PENDING -> RUNNING, RUNNING
 * -> COMPLETED, ...), or only new run information when o->to < 0. Refused
 * with LOOM_ESTATE when the job is not in the expected state (say, it was
 * cancelled meanwhile): the caller then knows and reconciles. */
static int run_transition(loom_store_t *s, op_t *o, int64_t now)
{
    loom_job_t cur;
    bool found;
    int rc = read_job_w(s, o, &cur, &found);
    if (rc != SQLITE_OK || !found)
        return rc;
    if (o->expect >= 0 && (int)cur.state != o->expect) {
        o->rc = loom_err_set(&o->err, LOOM_ESTATE, "job %lld is %s, not %s", (long long)o->id,
                             loom_job_state_name(cur.state), loom_job_state_name(o->expect));
        loom_job_free(&o->job);
        o->job = cur;
        return SQLITE_OK;
    }
    int to = o->to >= 0 ? o->to : (int)cur.state;
    bool changes = to != (int)cur.state;
    /* the same state named with a reason: an event all the same (a running
     * job reconfigured) */
    bool note = !changes && o->to >= 0 && o->reason;
    int64_t start = cur.start_time_ns, end = cur.end_time_ns;
    if (changes && to == LOOM_JOB_RUNNING)
        start = now;
    if (changes && loom_job_state_terminal(to))
        end = now;
    if (changes && to == LOOM_JOB_PENDING) /* requeued */
        start = end = 0;
    const char *reason = changes ? o->reason : (o->reason ? o->reason : cur.reason);
    const char *run = o->run ? o->run : cur.run_json;
    sqlite3_stmt *st = s->upd_trans;
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, loom_job_state_name(to), -1, SQLITE_STATIC);
    bind_text_or_null(st, 2, reason);
    sqlite3_bind_int64(st, 3, start);
    sqlite3_bind_int64(st, 4, end);
    sqlite3_bind_int64(st, 5, now);
    bind_text_or_null(st, 6, run);
    sqlite3_bind_int64(st, 7, o->id);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        loom_job_free(&cur);
        return rc;
    }
    if ((changes || note) && (rc = add_event(s, o->id, now, cur.state, to, reason)) != SQLITE_OK) {
        loom_job_free(&cur);
        return rc;
    }
    if (changes) {
        o->delta_from = cur.state;
        o->delta_to = to;
    }
    char *nreason = reason ? strdup(reason) : NULL, *nrun = run ? strdup(run) : NULL;
    bool fail = (reason && !nreason) || (run && !nrun);
    free(cur.reason);
    free(cur.run_json);
    cur.reason = nreason;
    cur.run_json = nrun;
    cur.state = to;
    cur.start_time_ns = start;
    cur.end_time_ns = end;
    cur.update_time_ns = now;
    loom_job_free(&o->job);
    o->job = cur;
    o->rc = fail ? loom_err_set(&o->err, LOOM_ENOMEM, "out of memory") : LOOM_OK;
    return SQLITE_OK;
}

/* Changes a pending job's name, time limit, priority or options (job.update,
 * job.hold, job.release); LOOM_ESTATE when it is no longer pending. */
static int run_update(loom_store_t *s, op_t *o, int64_t now)
{
    loom_job_t cur;
    bool found;
    int rc = read_job_w(s, o, &cur, &found);
    if (rc != SQLITE_OK || !found)
        return rc;
    if (cur.state != LOOM_JOB_PENDING) {
        o->rc = loom_err_set(&o->err, LOOM_ESTATE, "job %lld is %s: only a pending job changes",
                             (long long)o->id, loom_job_state_name(cur.state));
        loom_job_free(&cur);
        return SQLITE_OK;
    }
    const loom_job_update_t *u = &o->upd;
    if (u->name) {
        free(cur.name);
        cur.name = u->name;
        o->upd.name = NULL;
    }
    if (u->options_json) {
        free(cur.options_json);
        cur.options_json = u->options_json;
        o->upd.options_json = NULL;
    }
    if (u->time_limit_s >= 0)
        cur.time_limit_s = u->time_limit_s;
    if (u->set_priority)
        cur.priority = u->priority;
    cur.update_time_ns = now;
    sqlite3_stmt *st;
    rc = sqlite3_prepare_v2(s->wdb,
                            "UPDATE jobs SET name = ?1, time_limit_s = ?2, priority = ?3, "
                            "options = ?4, update_time_ns = ?5 WHERE id = ?6",
                            -1, &st, NULL);
    if (rc != SQLITE_OK) {
        loom_job_free(&cur);
        return rc;
    }
    sqlite3_bind_text(st, 1, cur.name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, cur.time_limit_s);
    sqlite3_bind_int64(st, 3, cur.priority);
    bind_text_or_null(st, 4, cur.options_json);
    sqlite3_bind_int64(st, 5, now);
    sqlite3_bind_int64(st, 6, o->id);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    rc = rc != SQLITE_DONE ? rc
         : u->event        ? add_event(s, o->id, now, LOOM_JOB_PENDING, LOOM_JOB_PENDING, u->event)
                           : SQLITE_OK;
    if (rc != SQLITE_OK) {
        loom_job_free(&cur);
        return rc;
    }
    loom_job_free(&o->job);
    o->job = cur;
    o->rc = LOOM_OK;
    return SQLITE_OK;
}

/* Pending reasons (the scheduler's, loom_store_set_reasons): each job's
 * reason column, while it is still PENDING; no event, no update time. */
static int run_reasons(loom_store_t *s, op_t *o)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(
        s->wdb, "UPDATE jobs SET reason = ?1 WHERE id = ?2 AND state = 'PENDING'", -1, &st, NULL);
    for (size_t i = 0; rc == SQLITE_OK && i < o->nids; i++) {
        bind_text_or_null(st, 1, o->reasons[i]);
        sqlite3_bind_int64(st, 2, o->ids[i]);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(s->wdb);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    o->rc = LOOM_OK;
    return rc;
}

/* A job array: one job per task index, in this one transaction; the first
 * task's id is the array's id. Each task's options get array_job_id and
 * array_task_id; only the first keeps the submit_id (a repeat of it answers
 * with the first task, creating nothing). o->job ends as the first task. */
static int run_submit_array(loom_store_t *s, op_t *o, int64_t now)
{
    json_t *base = o->job.options_json ? json_loads(o->job.options_json, 0, NULL) : NULL;
    char *first_options = o->job.options_json, *submit_id = o->job.submit_id;
    loom_job_t first = {0};
    int rc = SQLITE_OK;
    int64_t array_id = 0;
    for (size_t k = 0; k < o->ntasks && rc == SQLITE_OK; k++) {
        json_object_set_new(base, "array_task_id", json_integer(o->tasks[k]));
        if (k > 0)
            json_object_set_new(base, "array_job_id", json_integer(array_id));
        char *text = json_dumps(base, JSON_COMPACT);
        if (!text) {
            o->rc = loom_err_set(&o->err, LOOM_ENOMEM, "out of memory");
            rc = SQLITE_NOMEM;
            break;
        }
        o->job.options_json = text;
        o->job.submit_id = k == 0 ? submit_id : NULL;
        rc = run_submit(s, o, now);
        if (k == 0 && rc == SQLITE_OK && o->rc == LOOM_OK && !o->created) {
            /* the submit_id exists: o->job is now that job, and run_submit
             * freed the template (text, submit_id) with it */
            free(first_options);
            json_decref(base);
            return SQLITE_OK;
        }
        o->job.options_json = NULL;
        free(text);
        if (rc != SQLITE_OK || o->rc != LOOM_OK || (k == 0 && !o->created))
            break;
        if (k == 0) {
            array_id = o->job.id;
            first = o->job; /* its strings are the template's: copied below */
        }
    }
    json_decref(base);
    o->job.options_json = first_options;
    o->job.submit_id = submit_id;
    if (rc != SQLITE_OK || o->rc != LOOM_OK || !o->created)
        return rc;
    /* the first task's options as stored */
    sqlite3_stmt *st;
    rc = sqlite3_prepare_v2(s->wdb,
                            "UPDATE jobs SET options = json_set(options, '$.array_job_id', ?1) "
                            "WHERE id = ?1",
                            -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_int64(st, 1, array_id);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return rc;
    o->job.id = first.id;
    o->delta_to = LOOM_JOB_PENDING;
    o->delta_n = o->ntasks;
    return SQLITE_OK;
}

static void free_op(op_t *o)
{
    free(o->upd.name);
    free(o->upd.options_json);
    free(o->upd.event);
    loom_job_free(&o->job);
    free(o->reason);
    free(o->run);
    free(o);
}

/* Groups of at most this many writes are completed on the committer. */
#define INLINE_COMPLETIONS 8

/* Calls each op's completion and frees it. */
static void complete_ops(op_t *o)
{
    while (o) {
        op_t *next = o->next;
        if (o->rc == LOOM_OK)
            o->done(o->ctx, LOOM_OK, &o->job, o->created, NULL);
        else
            o->done(o->ctx, o->rc, NULL, false, &o->err);
        free_op(o);
        o = next;
    }
}

/* Runs a prepared statement that returns no rows: SQLITE_OK or the error. */
static int step_once(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Runs one group in one transaction and completes every op in it; a
 * helper (loom_store_help) completes any group itself while the completer
 * is idle: mostly they are its own request's writes, which it would only
 * wait for. */
/* The disk reserve (docs/store.md, Full disk): a file of reserve_bytes
 * next to the database, deleted when a transaction fails for want of
 * space, so that loom's own records (a job's end, a cancel) still fit
 * while a job's output fills the disk; made again once writes succeed. */
static void reserve_make(loom_store_t *s)
{
    if (!s->opts.reserve_path || !s->opts.reserve_bytes)
        return;
    s->reserve_tried_ns = loom_time_mono_ns();
    int fd = open(s->opts.reserve_path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    int e = fd < 0 ? errno : posix_fallocate(fd, 0, (off_t)s->opts.reserve_bytes);
    if (fd >= 0)
        close(fd);
    if (e != 0) {
        unlink(s->opts.reserve_path); /* a partial reserve would mislead */
        loom_log_warn("store.reserve_unavailable", "path=\"%s\" bytes=%zu error=\"%s\"",
                      s->opts.reserve_path, s->opts.reserve_bytes, strerror(e));
        return;
    }
    s->reserve_held = true;
}

static bool reserve_release(loom_store_t *s)
{
    if (!s->reserve_held)
        return false;
    s->reserve_held = false;
    bool ok = unlink(s->opts.reserve_path) == 0;
    loom_log_error("store.reserve_released",
                   "path=\"%s\" bytes=%zu note=\"the disk is full; free space: the reserve is "
                   "made again once it fits\"",
                   s->opts.reserve_path, s->opts.reserve_bytes);
    return ok;
}

static bool out_of_space(loom_store_t *s, int rc)
{
    return (rc & 0xff) == SQLITE_FULL || sqlite3_system_errno(s->wdb) == ENOSPC;
}

/* One try at the group's transaction: SQLITE_OK, or the error (rolled
 * back). */
static int run_group(loom_store_t *s, op_t *group, int64_t now)
{
    int rc = step_once(s->begin_w);
    for (op_t *o = group; o && rc == SQLITE_OK; o = o->next) {
        o->delta_from = o->delta_to = -1;
        if (o->kind == OP_SUBMIT)
            rc = run_submit(s, o, now);
        else if (o->kind == OP_CANCEL)
            rc = run_cancel(s, o, now);
        else if (o->kind == OP_TRANSITION)
            rc = run_transition(s, o, now);
        else if (o->kind == OP_UPDATE)
            rc = run_update(s, o, now);
        else if (o->kind == OP_SUBMIT_ARRAY)
            rc = run_submit_array(s, o, now);
        else if (o->kind == OP_REASONS)
            rc = run_reasons(s, o);
        else if (o->kind == OP_FN)
            rc = run_fn(s, o);
        else
            rc = run_exec(s, o);
    }
    if (rc == SQLITE_OK)
        rc = step_once(s->commit_w);
    if (rc != SQLITE_OK && !sqlite3_get_autocommit(s->wdb))
        sqlite3_exec(s->wdb, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Runs one group in one transaction and completes every op in it; a
 * helper (loom_store_help) completes any group itself while the completer
 * is idle: mostly they are its own request's writes, which it would only
 * wait for. Out of space, the reserve is released and the group tried
 * once more. */
static void commit_group(loom_store_t *s, op_t *group, size_t n, bool helper)
{
    int64_t now = loom_time_real_ns();
    int rc = run_group(s, group, now);
    if (rc != SQLITE_OK && out_of_space(s, rc) && reserve_release(s))
        rc = run_group(s, group, now);
    bool ok = rc == SQLITE_OK;
    if (ok && !s->reserve_held && s->opts.reserve_bytes &&
        loom_time_mono_ns() - s->reserve_tried_ns > 10 * LOOM_NS_PER_S)
        reserve_make(s);
    if (!ok) {
        loom_err_t dberr;
        loom_err_set(&dberr, LOOM_EIO,
                     "database write failed, nothing of this group was stored: %s",
                     sqlite3_errmsg(s->wdb));
        loom_log_error("store.commit_failed", "error=\"%s\" writes=%zu", sqlite3_errmsg(s->wdb), n);
        for (op_t *o = group; o; o = o->next) {
            o->rc = LOOM_EIO;
            o->err = dberr;
        }
    }
    pthread_mutex_lock(&s->mu);
    if (ok) {
        s->stats.commits++;
        if (helper)
            s->stats.helped_commits++;
        for (op_t *o = group; o; o = o->next) {
            if (o->rc == LOOM_OK && o->delta_from >= 0)
                s->stats.jobs_by_state[o->delta_from]--;
            if (o->rc == LOOM_OK && o->delta_to >= 0)
                s->stats.jobs_by_state[o->delta_to] += o->delta_n ? o->delta_n : 1;
        }
    } else {
        s->stats.commit_failures++;
    }
    s->stats.write_failing = !ok;
    s->stats.writes += n;
    s->stats.last_group = n;
    if (n > s->stats.max_group)
        s->stats.max_group = n;
    void (*hook)(void *) = s->commit_hook;
    void *hook_ctx = s->commit_hook_ctx;
    pthread_mutex_unlock(&s->mu);
    if (ok && hook)
        hook(hook_ctx);
    /* A small group while the completer is idle is completed right here:
     * waking the completer would cost more (a futex wake, a context switch
     * and its wait) than answering a few writes. Otherwise hand the
     * completions to the completer thread and go on committing: building
     * and sending many answers overlaps the next transaction. Either way
     * only one thread at a time runs completions, in commit order. */
    pthread_mutex_lock(&s->dmu);
    if ((helper || n <= INLINE_COMPLETIONS) && !s->dhead && !s->dbusy) {
        pthread_mutex_unlock(&s->dmu);
        complete_ops(group);
        return;
    }
    if (s->dtail)
        s->dtail->next = group;
    else
        s->dhead = group;
    op_t *last = group;
    while (last->next)
        last = last->next;
    s->dtail = last;
    pthread_mutex_unlock(&s->dmu);
    pthread_cond_signal(&s->dcv); /* after unlocking: see enqueue */
}

static void *completer_main(void *arg)
{
    loom_store_t *s = arg;
    pthread_setname_np(pthread_self(), "loom-completer");
    pthread_mutex_lock(&s->dmu);
    for (;;) {
        while (!s->dhead && !s->dstop)
            pthread_cond_wait(&s->dcv, &s->dmu);
        if (!s->dhead) /* stopping and drained */
            break;
        op_t *o = s->dhead;
        s->dhead = s->dtail = NULL;
        s->dbusy = true;
        pthread_mutex_unlock(&s->dmu);
        complete_ops(o);
        pthread_mutex_lock(&s->dmu);
        s->dbusy = false;
    }
    pthread_mutex_unlock(&s->dmu);
    return NULL;
}

static void stop_completer(loom_store_t *s)
{
    pthread_mutex_lock(&s->dmu);
    s->dstop = true;
    pthread_cond_signal(&s->dcv);
    pthread_mutex_unlock(&s->dmu);
    pthread_join(s->completer, NULL);
}

/* Unlinks the first group (at most max_group writes) from the queue; s->mu
 * held and the queue not empty. */
static op_t *take_group(loom_store_t *s, size_t *n_out)
{
    op_t *group = s->head, *last = group;
    size_t n = 1;
    while (last->next && n < s->opts.max_group) {
        last = last->next;
        n++;
    }
    s->head = last->next;
    if (!s->head)
        s->tail = NULL;
    last->next = NULL;
    for (op_t *o = group; o; o = o->next)
        s->deferred -= o->defer;
    s->queued -= n;
    s->stats.queued = s->queued;
    *n_out = n;
    return group;
}

static void *committer_main(void *arg)
{
    loom_store_t *s = arg;
    pthread_setname_np(pthread_self(), "loom-committer");
    size_t max_group = s->opts.max_group;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        s->idle = true;
        /* Wait for writes while no helper holds the writer connection (a
         * helper drains the queue before it lets go); when closing, wait
         * only for the helper. */
        while (s->writing || (!s->head && !s->closing))
            pthread_cond_wait(&s->cv, &s->mu);
        s->idle = false;
        if (!s->head) { /* closing and drained */
            pthread_mutex_unlock(&s->mu);
            return NULL;
        }
        s->writing = true;
        /* The newest write says more follow at once (a batch being
         * dispatched): give them a moment to join this transaction. */
        if (s->tail->more && !s->closing) {
            struct timespec deadline;
            clock_gettime(CLOCK_REALTIME, &deadline);
            deadline.tv_nsec += LOOM_STORE_LINGER_US * 1000L;
            if (deadline.tv_nsec >= 1000000000L) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000L;
            }
            while (s->tail->more && !s->closing && s->queued < max_group &&
                   pthread_cond_timedwait(&s->cv, &s->mu, &deadline) == 0) {
            }
        } else if (s->stats.last_group > 1 && s->queued < s->stats.last_group && !s->closing) {
            /* The last transaction had concurrent writers: wait a moment
             * (at most LOOM_STORE_COMMIT_DELAY_US) for as many to join this
             * one, so that they share its WAL write instead of each paying
             * for their own. */
            struct timespec deadline;
            clock_gettime(CLOCK_REALTIME, &deadline);
            deadline.tv_nsec += LOOM_STORE_COMMIT_DELAY_US * 1000L;
            if (deadline.tv_nsec >= 1000000000L) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000L;
            }
            s->delay_target = s->stats.last_group;
            while (!s->closing && s->queued < s->stats.last_group &&
                   pthread_cond_timedwait(&s->cv, &s->mu, &deadline) == 0) {
            }
            s->delay_target = 0;
        }
        size_t n;
        op_t *group = take_group(s, &n);
        pthread_mutex_unlock(&s->mu);
        commit_group(s, group, n, false);
        pthread_mutex_lock(&s->mu);
        s->writing = false;
        pthread_mutex_unlock(&s->mu);
    }
}

/* A helper commits at most this many groups before handing the rest to the
 * committer thread, so that its own caller's answer is not held up for long
 * under a steady stream of writes. */
#define HELP_GROUPS 8

void loom_store_help(loom_store_t *s)
{
    if (s->opts.no_help)
        return;
    pthread_mutex_lock(&s->mu);
    if (s->writing || !s->deferred) {
        /* Someone else commits, and takes these before stopping (they check
         * the queue under this mutex), or there is nothing deferred to do:
         * writes without the flag woke the committer, which takes them (a
         * batch sent to it is answered by its completer while it commits
         * the next one). */
        pthread_mutex_unlock(&s->mu);
        return;
    }
    s->writing = true;
    for (int i = 0; s->head && i < HELP_GROUPS; i++) {
        size_t n;
        op_t *group = take_group(s, &n);
        pthread_mutex_unlock(&s->mu);
        commit_group(s, group, n, true);
        pthread_mutex_lock(&s->mu);
    }
    s->writing = false;
    /* Writes left over, or the committer waiting for the writer connection
     * to be free (a write that woke it, or closing): let it go on. */
    bool wake = s->head || s->closing;
    pthread_mutex_unlock(&s->mu);
    if (wake)
        pthread_cond_signal(&s->cv);
}

static int enqueue(loom_store_t *s, op_t *o, loom_err_t *err)
{
    pthread_mutex_lock(&s->mu);
    if (s->closing) {
        pthread_mutex_unlock(&s->mu);
        return loom_err_set(err, LOOM_ESTATE, "the store is closing; no new writes accepted");
    }
    if (s->queued >= s->opts.max_queue) {
        pthread_mutex_unlock(&s->mu);
        return loom_err_set(err, LOOM_ELIMIT, "the store's write queue is full (%zu writes); retry",
                            s->opts.max_queue);
    }
    o->next = NULL;
    if (s->tail)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
    s->queued++;
    s->deferred += o->defer;
    s->stats.queued = s->queued;
    /* Wake the committer when it waits for work, or when it lingers for
     * the end of a batch and this is it — not for every write of a batch —
     * or, during a commit delay, once as many writes as it waits for are
     * queued (not for each of them).
     * Signalled after unlocking, so that it does not wake only to block on
     * the mutex still held here. */
    bool wake = s->delay_target
                    ? s->queued >= s->delay_target
                    : !o->defer && (s->idle || s->queued >= s->opts.max_group || !o->more);
    pthread_mutex_unlock(&s->mu);
    if (wake)
        pthread_cond_signal(&s->cv);
    return LOOM_OK;
}

/* Hands a built op to the committer with its completion; frees it when
 * the queue does not take it. */
static int post(loom_store_t *s, op_t *o, loom_store_done_fn done, void *ctx, loom_err_t *err)
{
    o->done = done;
    o->ctx = ctx;
    int rc = enqueue(s, o, err);
    if (rc)
        free_op(o);
    return rc;
}

static int new_submit(loom_store_t *s, const loom_job_spec_t *spec, unsigned flags, op_t **out,
                      loom_err_t *err)
{
    int rc = loom_job_spec_validate(spec, err);
    if (rc)
        return rc;
    op_t *o = calloc(1, sizeof *o);
    if (!o || loom_store_job_from_spec(&o->job, spec)) {
        free(o);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory queueing a submission");
    }
    o->kind = OP_SUBMIT;
    o->more = flags & LOOM_STORE_MORE;
    o->defer = (flags & LOOM_STORE_DEFER) && !s->opts.no_help;
    *out = o;
    return LOOM_OK;
}

static int new_cancel(loom_store_t *s, int64_t id, const char *reason, unsigned flags, op_t **out,
                      loom_err_t *err)
{
    if (id <= 0)
        return loom_err_set(err, LOOM_EINVAL, "id: expected a positive job id, found %lld",
                            (long long)id);
    if (reason) {
        size_t len = strlen(reason);
        if (len > 1024 || !loom_utf8_valid(reason, len))
            return loom_err_set(err, LOOM_EINVAL,
                                "reason: expected UTF-8 text of at most 1024 bytes");
        int rc = loom_store_check_text("reason", reason, err);
        if (rc != LOOM_OK)
            return rc;
    }
    op_t *o = calloc(1, sizeof *o);
    if (!o)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory queueing a cancel");
    o->kind = OP_CANCEL;
    o->more = flags & LOOM_STORE_MORE;
    o->defer = (flags & LOOM_STORE_DEFER) && !s->opts.no_help;
    o->id = id;
    if (reason && !(o->reason = strdup(reason))) {
        free(o);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory queueing a cancel");
    }
    *out = o;
    return LOOM_OK;
}

int loom_store_submit_async(loom_store_t *s, const loom_job_spec_t *spec, unsigned flags,
                            loom_store_done_fn done, void *ctx, loom_err_t *err)
{
    op_t *o;
    int rc = new_submit(s, spec, flags, &o, err);
    return rc ? rc : post(s, o, done, ctx, err);
}

int loom_store_cancel_async(loom_store_t *s, int64_t id, const char *reason, unsigned flags,
                            loom_store_done_fn done, void *ctx, loom_err_t *err)
{
    op_t *o;
    int rc = new_cancel(s, id, reason, flags, &o, err);
    return rc ? rc : post(s, o, done, ctx, err);
}

/* Synchronous forms: a waiter posted by the completer. A semaphore, not a
 * mutex and condition variable, so the poster holds no lock the woken
 * thread would block on; sem_post is safe when the waiter destroys the
 * semaphore as soon as sem_wait returns. */
typedef struct waiter {
    sem_t posted;
    int rc;
    bool created;
    loom_job_t *job_out;
    loom_err_t err;
} waiter_t;

static void waiter_done(void *ctx, int rc, const loom_job_t *job, bool created,
                        const loom_err_t *err)
{
    waiter_t *w = ctx;
    w->rc = rc;
    w->created = created;
    if (rc == LOOM_OK && w->job_out && loom_job_copy(w->job_out, job))
        w->rc = loom_err_set(&w->err, LOOM_ENOMEM, "out of memory copying the job");
    if (rc != LOOM_OK && err)
        w->err = *err;
    sem_post(&w->posted); /* last touch of w */
}

/* Queues a built op (taking it: it is freed on every path) and waits for
 * its completion. A deferred write is committed by this thread when no one
 * else is writing (loom_store_help). job_out and created_out may be NULL;
 * created_out is set once the op was queued. */
static int run_sync(loom_store_t *s, op_t *o, loom_job_t *job_out, bool *created_out,
                    loom_err_t *err)
{
    waiter_t w;
    memset(&w, 0, sizeof w);
    sem_init(&w.posted, 0, 0);
    w.job_out = job_out;
    bool help = o->defer; /* o may be freed once queued */
    int rc = post(s, o, waiter_done, &w, err);
    if (rc) {
        sem_destroy(&w.posted);
        return rc;
    }
    if (help)
        loom_store_help(s);
    while (sem_wait(&w.posted) != 0) /* EINTR only */
        ;
    sem_destroy(&w.posted);
    if (w.rc != LOOM_OK && err)
        *err = w.err;
    if (created_out)
        *created_out = w.created;
    return w.rc;
}

int loom_store_submit(loom_store_t *s, const loom_job_spec_t *spec, loom_job_t *job_out,
                      bool *created_out, loom_err_t *err)
{
    op_t *o;
    int rc = new_submit(s, spec, LOOM_STORE_DEFER, &o, err);
    return rc ? rc : run_sync(s, o, job_out, created_out, err);
}

int loom_store_cancel(loom_store_t *s, int64_t id, const char *reason, loom_job_t *job_out,
                      loom_err_t *err)
{
    op_t *o;
    int rc = new_cancel(s, id, reason, LOOM_STORE_DEFER, &o, err);
    return rc ? rc : run_sync(s, o, job_out, NULL, err);
}

int loom_store_exec_for_test(loom_store_t *s, const char *sql, loom_err_t *err)
{
    op_t *o = calloc(1, sizeof *o);
    if (!o || !(o->reason = strdup(sql))) {
        free(o);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    o->kind = OP_EXEC;
    return run_sync(s, o, NULL, NULL, err);
}

int loom_store_transition(loom_store_t *s, int64_t id, int expect, int to, const char *reason,
                          const char *run_json, loom_job_t *job_out, loom_err_t *err)
{
    if (id <= 0 || expect >= LOOM_JOB_NSTATES || to >= LOOM_JOB_NSTATES)
        return loom_err_set(err, LOOM_EINVAL, "transition of job %lld: bad arguments",
                            (long long)id);
    op_t *o = calloc(1, sizeof *o);
    if (!o)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory queueing a state change");
    o->kind = OP_TRANSITION;
    o->id = id;
    o->expect = expect;
    o->to = to;
    if ((reason && !(o->reason = strdup(reason))) || (run_json && !(o->run = strdup(run_json)))) {
        free_op(o);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory queueing a state change");
    }
    return run_sync(s, o, job_out, NULL, err);
}

int loom_store_submit_array(loom_store_t *s, const loom_job_spec_t *spec, const int64_t *tasks,
                            size_t ntasks, loom_job_t *job_out, bool *created_out, loom_err_t *err)
{
    int rc = loom_job_spec_validate(spec, err);
    if (rc)
        return rc;
    if (ntasks < 1 || ntasks > LOOM_STORE_ARRAY_MAX)
        return loom_err_set(err, LOOM_EINVAL, "array: expected 1 to %d tasks, found %zu",
                            LOOM_STORE_ARRAY_MAX, ntasks);
    op_t *o = calloc(1, sizeof *o);
    if (!o || loom_store_job_from_spec(&o->job, spec)) {
        free(o);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory queueing a submission");
    }
    o->kind = OP_SUBMIT_ARRAY;
    o->tasks = tasks;
    o->ntasks = ntasks;
    return run_sync(s, o, job_out, created_out, err);
}

int loom_store_update(loom_store_t *s, int64_t id, const loom_job_update_t *u, loom_job_t *job_out,
                      loom_err_t *err)
{
    if (id <= 0)
        return loom_err_set(err, LOOM_EINVAL, "update of job %lld: bad id", (long long)id);
    int rc = u->name ? loom_job_name_check(u->name, err) : LOOM_OK;
    if (rc != LOOM_OK)
        return rc;
    op_t *o = calloc(1, sizeof *o);
    if (!o)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory queueing an update");
    o->kind = OP_UPDATE;
    o->id = id;
    o->upd = *u;
    o->upd.name = o->upd.options_json = o->upd.event = NULL;
    if ((u->name && !(o->upd.name = strdup(u->name))) ||
        (u->options_json && !(o->upd.options_json = strdup(u->options_json))) ||
        (u->event && !(o->upd.event = strdup(u->event)))) {
        free_op(o);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory queueing an update");
    }
    return run_sync(s, o, job_out, NULL, err);
}

int loom_store_set_reasons(loom_store_t *s, const int64_t *ids, const char *const *reasons,
                           size_t n, loom_err_t *err)
{
    if (n == 0)
        return LOOM_OK;
    op_t *o = calloc(1, sizeof *o);
    if (!o)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory queueing pending reasons");
    o->kind = OP_REASONS;
    o->ids = ids;
    o->reasons = reasons;
    o->nids = n;
    return run_sync(s, o, NULL, NULL, err);
}

int loom_store__write(loom_store_t *s, loom_store__write_fn fn, void *ctx, loom_err_t *err)
{
    op_t *o = calloc(1, sizeof *o);
    if (!o)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory queueing a write");
    o->kind = OP_FN;
    o->fn = fn;
    o->fn_ctx = ctx;
    return run_sync(s, o, NULL, NULL, err);
}

int loom_store__read(loom_store_t *s, loom_store__read_fn fn, void *ctx, loom_err_t *err)
{
    pthread_mutex_lock(&s->rmu);
    int rc = fn(s->rdb, ctx, err);
    pthread_mutex_unlock(&s->rmu);
    return rc;
}

void loom_store_set_commit_hook(loom_store_t *s, void (*fn)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&s->mu);
    s->commit_hook = fn;
    s->commit_hook_ctx = ctx;
    pthread_mutex_unlock(&s->mu);
}

/* ----------------------------------------------------------------- reads */

/* One job by id, or by text (?1) and owner uid (?2, -1: none). */
static int get_keyed(loom_store_t *s, const char *sql, int64_t id, const char *text, int64_t uid,
                     loom_job_t *out, loom_err_t *err)
{
    pthread_mutex_lock(&s->rmu);
    sqlite3_stmt *st;
    int rc = LOOM_OK;
    if (sqlite3_prepare_v2(s->rdb, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = loom_err_set(err, LOOM_EIO, "reading job: %s", sqlite3_errmsg(s->rdb));
        goto out;
    }
    if (text) {
        sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, uid);
    } else
        sqlite3_bind_int64(st, 1, id);
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW)
        rc = row_to_job(st, out);
    else if (r == SQLITE_DONE)
        rc = text ? loom_err_set(err, LOOM_ENOTFOUND, "no job with submit_id '%.128s'", text)
                  : loom_err_set(err, LOOM_ENOTFOUND, "job %lld not found", (long long)id);
    else
        rc = loom_err_set(err, LOOM_EIO, "reading job: %s", sqlite3_errmsg(s->rdb));
    sqlite3_finalize(st);
out:
    pthread_mutex_unlock(&s->rmu);
    return rc;
}

static int get_one(loom_store_t *s, const char *sql, int64_t id, const char *text, loom_job_t *out,
                   loom_err_t *err)
{
    return get_keyed(s, sql, id, text, -1, out, err);
}

int loom_store_get(loom_store_t *s, int64_t id, loom_job_t *out, loom_err_t *err)
{
    return get_one(s, "SELECT " JOB_COLUMNS " FROM jobs WHERE id = ?1", id, NULL, out, err);
}

int loom_store_get_by_submit_id(loom_store_t *s, int64_t uid, const char *submit_id,
                                loom_job_t *out, loom_err_t *err)
{
    return get_keyed(
        s, "SELECT " JOB_COLUMNS " FROM jobs WHERE ifnull(uid, -1) = ?2 AND submit_id = ?1", 0,
        submit_id, uid >= 0 ? uid : -1, out, err);
}

int loom_store_events(loom_store_t *s, int64_t id, loom_job_event_t **out, size_t *n,
                      loom_err_t *err)
{
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&s->rmu);
    sqlite3_stmt *st;
    int rc = LOOM_OK;
    if (sqlite3_prepare_v2(s->rdb,
                           "SELECT time_ns, from_state, to_state, reason FROM job_events "
                           "WHERE job_id = ?1 ORDER BY seq",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = loom_err_set(err, LOOM_EIO, "reading events: %s", sqlite3_errmsg(s->rdb));
        goto out;
    }
    sqlite3_bind_int64(st, 1, id);
    size_t cap = 0;
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (loom_vec_reserve((void **)out, &cap, *n + 1, sizeof **out, 4)) {
            rc = loom_err_set(err, LOOM_ENOMEM, "out of memory reading events");
            break;
        }
        loom_job_event_t *e = &(*out)[*n];
        memset(e, 0, sizeof *e);
        e->time_ns = sqlite3_column_int64(st, 0);
        loom_job_state_t from = LOOM_JOB_PENDING, to = LOOM_JOB_PENDING;
        const char *f = (const char *)sqlite3_column_text(st, 1);
        e->has_from = f != NULL;
        if (f)
            loom_job_state_parse(f, &from, NULL);
        loom_job_state_parse((const char *)sqlite3_column_text(st, 2), &to, NULL);
        e->from = from;
        e->to = to;
        const char *reason = (const char *)sqlite3_column_text(st, 3);
        e->reason = reason ? strdup(reason) : NULL;
        (*n)++;
    }
    if (rc == LOOM_OK && r != SQLITE_DONE)
        rc = loom_err_set(err, LOOM_EIO, "reading events: %s", sqlite3_errmsg(s->rdb));
    sqlite3_finalize(st);
    if (rc) {
        loom_store_events_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
out:
    pthread_mutex_unlock(&s->rmu);
    return rc;
}

int loom_store_list(loom_store_t *s, const loom_store_filter_t *f, loom_job_list_t *out,
                    loom_err_t *err)
{
    memset(out, 0, sizeof *out);
    size_t limit = f->limit ? f->limit : 100;
    if (limit > 10000)
        return loom_err_set(err, LOOM_EINVAL, "limit: expected 1 to 10000, found %zu", limit);
    if (f->after_id < 0)
        return loom_err_set(err, LOOM_EINVAL, "cursor: expected a non-negative job id");
    unsigned all = (1u << LOOM_JOB_NSTATES) - 1;
    if (f->state_mask & ~all)
        return loom_err_set(err, LOOM_EINVAL, "state: unknown state bit in mask 0x%x",
                            f->state_mask);
    loom_buf_t sql = LOOM_BUF_INIT;
    loom_buf_append_str(&sql, "SELECT " JOB_COLUMNS " FROM jobs WHERE ");
    loom_buf_append_str(&sql, f->newest_first ? "id < ?1" : "id > ?1");
    if (f->state_mask && f->state_mask != all) {
        loom_buf_append_str(&sql, " AND state IN (");
        const char *sep = "";
        for (int i = 0; i < LOOM_JOB_NSTATES; i++) {
            if (f->state_mask & (1u << i)) {
                loom_buf_appendf(&sql, "%s'%s'", sep, loom_job_state_name(i));
                sep = ",";
            }
        }
        loom_buf_append_char(&sql, ')');
    }
    /* One row more than asked tells whether another page exists. */
    loom_buf_append_str(&sql,
                        f->newest_first ? " ORDER BY id DESC LIMIT ?2" : " ORDER BY id LIMIT ?2");
    if (!sql.data)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");

    int rc = LOOM_OK;
    pthread_mutex_lock(&s->rmu);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->rdb, sql.data, -1, &st, NULL) != SQLITE_OK) {
        rc = loom_err_set(err, LOOM_EIO, "listing jobs: %s", sqlite3_errmsg(s->rdb));
        goto out;
    }
    sqlite3_bind_int64(st, 1, f->newest_first && !f->after_id ? INT64_MAX : f->after_id);
    sqlite3_bind_int64(st, 2, (int64_t)limit + 1);
    out->jobs = calloc(limit, sizeof *out->jobs);
    if (!out->jobs) {
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory listing jobs");
        sqlite3_finalize(st);
        goto out;
    }
    int r;
    bool more = false;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->n == limit) {
            more = true;
            break;
        }
        if ((rc = row_to_job(st, &out->jobs[out->n]))) {
            loom_err_set(err, rc, "out of memory listing jobs");
            break;
        }
        out->n++;
    }
    if (rc == LOOM_OK && r != SQLITE_ROW && r != SQLITE_DONE)
        rc = loom_err_set(err, LOOM_EIO, "listing jobs: %s", sqlite3_errmsg(s->rdb));
    sqlite3_finalize(st);
    if (rc == LOOM_OK && more)
        out->next_after_id = out->jobs[out->n - 1].id;
    s->jobs_listed += out->n;
out:
    pthread_mutex_unlock(&s->rmu);
    loom_buf_free(&sql);
    if (rc)
        loom_job_list_free(out);
    return rc;
}

bool loom_store_committer_idle_for_test(loom_store_t *s)
{
    pthread_mutex_lock(&s->mu);
    bool idle = s->idle && !s->writing && !s->head;
    pthread_mutex_unlock(&s->mu);
    return idle;
}

int loom_store_stats(loom_store_t *s, loom_store_stats_t *out, loom_err_t *err)
{
    pthread_mutex_lock(&s->mu);
    *out = s->stats;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&s->cmu);
    out->wal_restarts = s->wal_restarts;
    out->wal_frames_max = s->wal_frames_max;
    pthread_mutex_unlock(&s->cmu);
    pthread_mutex_lock(&s->rmu);
    out->jobs_listed = s->jobs_listed;
    pthread_mutex_unlock(&s->rmu);
    return LOOM_OK;
}

int loom_store_max_id(loom_store_t *s, int64_t *out, loom_err_t *err)
{
    pthread_mutex_lock(&s->rmu);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(s->rdb, "SELECT coalesce(max(id), 0) FROM jobs", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        }
        sqlite3_finalize(st);
    }
    int ret = rc == SQLITE_OK ? LOOM_OK
                              : loom_err_set(err, LOOM_EIO, "reading the highest job id: %s",
                                             sqlite3_errstr(rc));
    pthread_mutex_unlock(&s->rmu);
    return ret;
}

int loom_store_schema_version(loom_store_t *s)
{
    return s->schema_version;
}

/* ------------------------------------------------------------ open/close */

static int count_states(loom_store_t *s, loom_err_t *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->rdb, "SELECT state, count(*) FROM jobs GROUP BY state", -1, &st,
                           NULL) != SQLITE_OK)
        return loom_err_set(err, LOOM_EIO, "counting jobs: %s", sqlite3_errmsg(s->rdb));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        loom_job_state_t state;
        if (loom_job_state_parse((const char *)sqlite3_column_text(st, 0), &state, NULL) == 0)
            s->stats.jobs_by_state[state] = (uint64_t)sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) /* a damaged table must not read as "0 jobs" */
        return loom_err_set(err, LOOM_EIO, "counting jobs: %s", sqlite3_errstr(rc));
    return LOOM_OK;
}

static void stop_checkpointer(loom_store_t *s)
{
    pthread_mutex_lock(&s->cmu);
    s->ckpt_stop = true;
    pthread_cond_signal(&s->ccv);
    pthread_mutex_unlock(&s->cmu);
    pthread_join(s->checkpointer, NULL);
}

static void finalize_all(loom_store_t *s)
{
    sqlite3_finalize(s->ins_job);
    sqlite3_finalize(s->ins_event);
    sqlite3_finalize(s->sel_submit_w);
    sqlite3_finalize(s->sel_id_w);
    sqlite3_finalize(s->upd_cancel);
    sqlite3_finalize(s->upd_trans);
    sqlite3_finalize(s->begin_w);
    sqlite3_finalize(s->commit_w);
}

int loom_store_open(const char *path, const loom_store_options_t *opts, loom_store_t **out,
                    loom_err_t *err)
{
    *out = NULL;
    loom_store_t *s = calloc(1, sizeof *s);
    if (!s)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory opening the store");
    if (opts)
        s->opts = *opts;
    if (s->opts.reserve_path && !(s->reserve_path = strdup(s->opts.reserve_path))) {
        free(s);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory opening the store");
    }
    s->opts.reserve_path = s->reserve_path;
    const char *help = getenv("LOOM_STORE_HELP");
    if (help && strcmp(help, "0") == 0)
        s->opts.no_help = true;
    if (!s->opts.max_queue)
        s->opts.max_queue = 65536;
    if (!s->opts.max_group)
        s->opts.max_group = 8192;
    if (s->opts.checkpoint_frames <= 0)
        s->opts.checkpoint_frames = 4000;
    if (s->opts.wal_restart_frames <= 0)
        s->opts.wal_restart_frames = 16000;
    int rc;
    if ((rc = open_conn(path, s->opts.durability, &s->wdb, err)))
        goto fail_alloc;
    if (!s->opts.skip_check &&
        (rc = loom_db_quick_check(s->wdb, path, "docs/store.md, Damage", err)))
        goto fail_wdb;
    reserve_make(s);
    if ((rc = loom_store_migrate(s->wdb, 0, err))) {
        loom_err_prefix(err, "%s", path);
        goto fail_wdb;
    }
    s->schema_version = loom_store_schema_latest();
    if ((rc = open_conn(path, s->opts.durability, &s->rdb, err)))
        goto fail_wdb;
    if ((rc = prep(s->wdb,
                   "INSERT INTO jobs (submit_id, name, script, format, cpus, memory_bytes, gpus, "
                   "gpu_share_milli, gpu_memory_bytes, gpu_type, time_limit_s, priority, labels, "
                   "state, submit_time_ns, update_time_ns, estimate, options, uid, gid, user, grp, "
                   "account, reconfig) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,"
                   "'PENDING',?14,?14,?15,?16,?17,?18,?19,?20,?21,?22) "
                   "ON CONFLICT DO NOTHING",
                   &s->ins_job, err)) ||
        (rc = prep(s->wdb,
                   "INSERT INTO job_events (job_id, seq, time_ns, from_state, to_state, reason) "
                   "VALUES (?1, COALESCE((SELECT max(seq) + 1 FROM job_events WHERE job_id = ?1), "
                   "0), ?2, ?3, ?4, ?5)",
                   &s->ins_event, err)) ||
        (rc = prep(s->wdb,
                   "SELECT " JOB_COLUMNS " FROM jobs WHERE ifnull(uid, -1) = ?2 AND submit_id = ?1",
                   &s->sel_submit_w, err)) ||
        (rc = prep(s->wdb, "SELECT " JOB_COLUMNS " FROM jobs WHERE id = ?1", &s->sel_id_w, err)) ||
        (rc = prep(s->wdb,
                   "UPDATE jobs SET state = 'CANCELLED', reason = ?1, end_time_ns = ?2, "
                   "update_time_ns = ?2 WHERE id = ?3",
                   &s->upd_cancel, err)) ||
        (rc = prep(s->wdb,
                   "UPDATE jobs SET state = ?1, reason = ?2, start_time_ns = ?3, end_time_ns = ?4, "
                   "update_time_ns = ?5, run = ?6 WHERE id = ?7",
                   &s->upd_trans, err)) ||
        (rc = prep(s->wdb, "BEGIN IMMEDIATE", &s->begin_w, err)) ||
        (rc = prep(s->wdb, "COMMIT", &s->commit_w, err)))
        goto fail_stmts;
    if ((rc = count_states(s, err)))
        goto fail_stmts;
    if ((rc = open_conn(path, s->opts.durability, &s->cdb, err)))
        goto fail_stmts;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->rmu, NULL);
    pthread_mutex_init(&s->cmu, NULL);
    pthread_mutex_init(&s->dmu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_cond_init(&s->ccv, NULL);
    pthread_cond_init(&s->dcv, NULL);
    sqlite3_wal_hook(s->wdb, wal_hook, s);
    if (pthread_create(&s->checkpointer, NULL, checkpointer_main, s) != 0) {
        rc = loom_err_set(err, LOOM_EIO, "cannot start the store's checkpointer thread");
        goto fail_sync;
    }
    if (pthread_create(&s->completer, NULL, completer_main, s) != 0) {
        rc = loom_err_set(err, LOOM_EIO, "cannot start the store's completer thread");
        stop_checkpointer(s);
        goto fail_sync;
    }
    if (pthread_create(&s->committer, NULL, committer_main, s) != 0) {
        rc = loom_err_set(err, LOOM_EIO, "cannot start the store's committer thread");
        stop_completer(s);
        stop_checkpointer(s);
        goto fail_sync;
    }
    *out = s;
    return LOOM_OK;

fail_sync:
    pthread_cond_destroy(&s->dcv);
    pthread_mutex_destroy(&s->dmu);
    pthread_cond_destroy(&s->ccv);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->cmu);
    pthread_mutex_destroy(&s->rmu);
    pthread_mutex_destroy(&s->mu);
    sqlite3_close(s->cdb);
fail_stmts:
    finalize_all(s);
    sqlite3_close(s->rdb);
fail_wdb:
    sqlite3_close(s->wdb);
fail_alloc:
    free(s->reserve_path);
    free(s);
    return rc;
}

void loom_store_close(loom_store_t *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->closing = true;
    pthread_cond_broadcast(&s->cv); /* also ends a linger */
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->committer, NULL);
    stop_completer(s); /* after the committer: it completes what was committed */
    stop_checkpointer(s);
    finalize_all(s);
    /* The last connection to close checkpoints the WAL into the main file. */
    sqlite3_close(s->cdb);
    sqlite3_close(s->rdb);
    sqlite3_close(s->wdb);
    pthread_cond_destroy(&s->dcv);
    pthread_mutex_destroy(&s->dmu);
    pthread_cond_destroy(&s->ccv);
    pthread_mutex_destroy(&s->cmu);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->rmu);
    pthread_mutex_destroy(&s->mu);
    free(s->reserve_path);
    free(s);
}

/* ------------------------------------------------------------- usage */

/* Per job: seconds of [start, end or now) inside [since, now). */
#define USAGE_SQL                                                                                  \
    "SELECT COALESCE(user, ''), COALESCE(account, ''), count(*), "                                 \
    "sum((gpus * 1000 + gpu_share_milli) / 1000.0 * d), sum(cpus * d), "                           \
    "sum(memory_bytes / 1073741824.0 * d), sum(d) FROM ("                                          \
    "  SELECT user, account, gpus, gpu_share_milli, cpus, memory_bytes,"                           \
    "    (min(CASE WHEN end_time_ns > 0 THEN end_time_ns ELSE ?1 END, ?1)"                         \
    "     - max(start_time_ns, ?2)) / 1e9 AS d"                                                    \
    "  FROM jobs WHERE start_time_ns > 0"                                                          \
    "    AND (?3 IS NULL OR user = ?3) AND (?4 IS NULL OR account = ?4))"                          \
    " WHERE d > 0 GROUP BY 1, 2 ORDER BY 1, 2"

void loom_store_usage_free(loom_store_usage_row_t *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++) {
        free(rows[i].user);
        free(rows[i].account);
    }
    free(rows);
}

int loom_store_usage(loom_store_t *s, const loom_store_usage_query_t *q,
                     loom_store_usage_row_t **rows, size_t *n, loom_err_t *err)
{
    *rows = NULL;
    *n = 0;
    int rc = LOOM_OK;
    size_t cap = 0;
    pthread_mutex_lock(&s->rmu);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->rdb, USAGE_SQL, -1, &st, NULL) != SQLITE_OK) {
        rc = loom_err_set(err, LOOM_EIO, "usage: %s", sqlite3_errmsg(s->rdb));
        goto out;
    }
    sqlite3_bind_int64(st, 1, q->now_ns);
    sqlite3_bind_int64(st, 2, q->since_ns);
    bind_text_or_null(st, 3, q->user);
    bind_text_or_null(st, 4, q->account);
    int r = SQLITE_DONE;
    while (rc == LOOM_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        if (loom_vec_reserve((void **)rows, &cap, *n + 1, sizeof **rows, 16)) {
            rc = loom_err_set(err, LOOM_ENOMEM, "usage: out of memory");
            break;
        }
        loom_store_usage_row_t *u = &(*rows)[*n];
        bool fail = false;
        u->user = col_text(st, 0, &fail);
        u->account = col_text(st, 1, &fail);
        u->jobs = sqlite3_column_int64(st, 2);
        u->gpu_seconds = sqlite3_column_double(st, 3);
        u->cpu_seconds = sqlite3_column_double(st, 4);
        u->memory_gib_seconds = sqlite3_column_double(st, 5);
        u->wall_seconds = sqlite3_column_double(st, 6);
        (*n)++;
        if (fail || !u->user || !u->account)
            rc = loom_err_set(err, LOOM_ENOMEM, "usage: out of memory");
    }
    if (rc == LOOM_OK && r != SQLITE_DONE)
        rc = loom_err_set(err, LOOM_EIO, "usage: %s", sqlite3_errmsg(s->rdb));
    sqlite3_finalize(st);
out:
    pthread_mutex_unlock(&s->rmu);
    if (rc != LOOM_OK) {
        loom_store_usage_free(*rows, *n);
        *rows = NULL;
        *n = 0;
    }
    return rc;
}

int loom_store_count_pending(loom_store_t *s, int64_t uid, const char *account, int64_t *n,
                             loom_err_t *err)
{
    *n = 0;
    int rc = LOOM_OK;
    pthread_mutex_lock(&s->rmu);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->rdb,
                           "SELECT count(*) FROM jobs WHERE state = 'PENDING' AND "
                           "(?1 < 0 OR uid = ?1) AND (?2 IS NULL OR account = ?2)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = loom_err_set(err, LOOM_EIO, "counting pending jobs: %s", sqlite3_errmsg(s->rdb));
    } else {
        sqlite3_bind_int64(st, 1, uid);
        bind_text_or_null(st, 2, account);
        if (sqlite3_step(st) == SQLITE_ROW)
            *n = sqlite3_column_int64(st, 0);
        else
            rc = loom_err_set(err, LOOM_EIO, "counting pending jobs: %s", sqlite3_errmsg(s->rdb));
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->rmu);
    return rc;
}
