/* The dashboard's log tail (GET /api/log): a window of a job's output,
 * opened as the viewer (loom_auth_file_open: O_NONBLOCK, a regular file
 * only, so a FIFO named as the output never hangs the request) and read
 * into memory with pread (a private copy of the window; no mapping).
 *
 * Opening as a user costs a fork, and a page polls about once a second, so
 * open files are kept in a small table keyed by (opener, job, path) and
 * reused for DASH_LOG_REOPEN_NS: one fork per viewer and job every few
 * seconds, not every poll. Entries are handed out as dup()s, so an evicted
 * entry never closes a descriptor in use. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/dash.h"
#include "loom/auth.h"

#define DASH_LOG_FDS       16
#define DASH_LOG_REOPEN_NS (10 * 1000000000LL)
#define DASH_LOG_PATH      1024

typedef struct dash_logfd {
    loom_file_t f; /* fd -1: free */
    int64_t uid;   /* the opener (-1: loomd itself) */
    int64_t job;
    char path[DASH_LOG_PATH];
    int64_t opened_ns;
} dash_logfd_t;

struct dash_logs {
    pthread_mutex_t mu;
    dash_logfd_t e[DASH_LOG_FDS];
};

int dash_logs_new(dash_logs_t **out, loom_err_t *err)
{
    dash_logs_t *l = calloc(1, sizeof *l);
    if (!l)
        return loom_err_set(err, LOOM_ENOMEM, "dashboard: out of memory");
    for (int i = 0; i < DASH_LOG_FDS; i++)
        l->e[i].f = (loom_file_t)LOOM_FILE_INIT;
    pthread_mutex_init(&l->mu, NULL);
    *out = l;
    return LOOM_OK;
}

void dash_logs_free(dash_logs_t *l)
{
    if (!l)
        return;
    for (int i = 0; i < DASH_LOG_FDS; i++)
        loom_file_close(&l->e[i].f);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

/* A dup of the cached descriptor for the key, or -1. Under l->mu. */
static int cached(dash_logs_t *l, int64_t uid, int64_t job, const char *path, int64_t now)
{
    for (int i = 0; i < DASH_LOG_FDS; i++) {
        dash_logfd_t *e = &l->e[i];
        if (e->f.fd < 0 || e->uid != uid || e->job != job || strcmp(e->path, path) != 0)
            continue;
        if (now - e->opened_ns > DASH_LOG_REOPEN_NS) { /* may have been replaced */
            loom_file_close(&e->f);
            return -1;
        }
        return fcntl(e->f.fd, F_DUPFD_CLOEXEC, 0);
    }
    return -1;
}

/* Keeps a dup of fd for the key, in a free slot or the oldest. */
static void keep(dash_logs_t *l, int64_t uid, int64_t job, const char *path, int fd, int64_t now)
{
    if (strlen(path) >= DASH_LOG_PATH)
        return;
    pthread_mutex_lock(&l->mu);
    dash_logfd_t *slot = &l->e[0];
    for (int i = 0; i < DASH_LOG_FDS; i++) {
        if (l->e[i].f.fd < 0) {
            slot = &l->e[i];
            break;
        }
        if (l->e[i].opened_ns < slot->opened_ns)
            slot = &l->e[i];
    }
    loom_file_close(&slot->f);
    slot->f.fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    slot->uid = uid;
    slot->job = job;
    snprintf(slot->path, sizeof slot->path, "%s", path);
    slot->opened_ns = now;
    pthread_mutex_unlock(&l->mu);
}

/* Opens path as `as` (NULL: loomd); with owner_uid >= 0 (loomd opening for
 * a multi-user session) only a regular file of that owner, no symbolic
 * link. Returns the descriptor or -1 with msg set. */
static int open_output(const loom_auth_identity_t *as, int64_t owner_uid, const char *path,
                       char *msg, size_t len)
{
    loom_file_t f;
    loom_err_t err;
    if (loom_auth_file_open(as, path, LOOM_FILE_NOFOLLOW, SIZE_MAX - 1, &f, &err) != LOOM_OK) {
        snprintf(msg, len, "%s", err.msg);
        return -1;
    }
    struct stat st;
    if (!as && owner_uid >= 0 && (fstat(f.fd, &st) != 0 || st.st_uid != (uid_t)owner_uid)) {
        loom_file_close(&f);
        snprintf(msg, len, "not a regular file of the job's owner; refused");
        return -1;
    }
    return f.fd;
}

json_t *dash_logs_read(dash_logs_t *l, const loom_auth_identity_t *as, int64_t owner_uid,
                       int64_t job, const char *path, long long offset, size_t chunk, size_t tail)
{
    int64_t now = loom_time_mono_ns(), uid = as ? (int64_t)as->uid : -1;
    char msg[300];
    pthread_mutex_lock(&l->mu);
    int fd = cached(l, uid, job, path, now);
    pthread_mutex_unlock(&l->mu);
    if (fd < 0 && (fd = open_output(as, owner_uid, path, msg, sizeof msg)) >= 0)
        keep(l, uid, job, path, fd, now);
    if (fd < 0)
        return json_pack("{s:s,s:s}", "path", path, "error", msg);
    struct stat st;
    long long size = fstat(fd, &st) == 0 ? (long long)st.st_size : 0;
    if (offset < 0 || offset > size) /* the tail; or the file was truncated */
        offset = size > (long long)tail ? size - (long long)tail : 0;
    char *buf = malloc(chunk);
    ssize_t n = buf ? pread(fd, buf, chunk, offset) : -1;
    close(fd);
    if (n < 0)
        n = 0;
    json_t *data = json_stringn(buf ? buf : "", (size_t)n);
    if (!data) { /* not UTF-8 (or cut inside a character): show the bytes as '?' */
        for (ssize_t i = 0; i < n; i++)
            if ((unsigned char)buf[i] >= 0x80)
                buf[i] = '?';
        data = json_stringn(buf, (size_t)n);
    }
    free(buf);
    return json_pack("{s:s,s:I,s:I,s:I,s:o}", "path", path, "offset", offset, "next",
                     offset + (long long)n, "size", size, "data", data ? data : json_string(""));
}
