/* A SQLite VFS shim that turns a commit's WAL writes into one write(2).
 *
 * SQLite appends a transaction to the WAL as frames, and writes each frame
 * with two calls: its 24-byte header, then its page. A commit that touches
 * seven pages thus costs fourteen pwrite(2) calls; on a virtual machine
 * where a system call costs microseconds that is most of a small commit's
 * price. This shim passes every call to the default VFS except writes to
 * WAL files, which it gathers while they are contiguous and hands over as
 * one pwrite when:
 *   - the page of a commit frame (a frame header whose "database size after
 *     commit" field is not zero) has been gathered: the commit is complete;
 *   - any other call reaches the WAL file (read, sync, size, truncate,
 *     file control, lock, close) or a write is not contiguous;
 *   - the buffer would exceed WALBUF_MAX bytes.
 *
 * Why this is safe. SQLite writes all of a commit's frames before it
 * updates the wal-index (shared memory) that lets readers and checkpoints
 * see them, and the commit frame is the last one written; the flush after
 * its page therefore puts every frame in the file before any other
 * connection can look for it. Frames of a transaction that spills its cache
 * before committing stay gathered, but nobody but the writer may read
 * uncommitted frames, and its reads go through xRead, which flushes first.
 * A crash loses only gathered frames of a commit that never completed,
 * which SQLite recovery would discard anyway. With synchronous=FULL, xSync
 * flushes before it syncs. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"

#define WALBUF_VFS_NAME "loom-walbuf"
/* The unix VFS writes at most 128 KiB - 1 bytes per call (it masks the
 * length with 0x1ffff), so a gathered write must stay below that. */
#define WALBUF_MAX   (96 * 1024)
#define FRAME_HEADER 24

typedef struct {
    sqlite3_file base;  /* pMethods: ours */
    sqlite3_file *real; /* the default VFS's file, allocated right after us */
    bool wal;
    unsigned char *buf; /* WALBUF_MAX bytes, allocated on the first write */
    size_t len;
    sqlite3_int64 at;    /* file offset of buf[0] */
    bool commit_pending; /* the last gathered write was a commit frame's header */
} wb_file_t;

static sqlite3_vfs wb_vfs;
static sqlite3_vfs *real_vfs;

static int wb_flush(wb_file_t *f)
{
    if (f->len == 0)
        return SQLITE_OK;
    int rc = f->real->pMethods->xWrite(f->real, f->buf, (int)f->len, f->at);
    f->len = 0;
    f->commit_pending = false;
    return rc;
}

/* Flushes a WAL file's gathered writes; a no-op for other files. */
#define WB_FLUSH_OR_RETURN(f)                                                                      \
    do {                                                                                           \
        if ((f)->len) {                                                                            \
            int frc_ = wb_flush(f);                                                                \
            if (frc_ != SQLITE_OK)                                                                 \
                return frc_;                                                                       \
        }                                                                                          \
    } while (0)

static int wb_close(sqlite3_file *p)
{
    wb_file_t *f = (wb_file_t *)p;
    int rc = wb_flush(f);
    int rc2 = f->real->pMethods->xClose(f->real);
    free(f->buf);
    f->buf = NULL;
    return rc != SQLITE_OK ? rc : rc2;
}

static int wb_read(sqlite3_file *p, void *out, int n, sqlite3_int64 off)
{
    wb_file_t *f = (wb_file_t *)p;
    WB_FLUSH_OR_RETURN(f);
    return f->real->pMethods->xRead(f->real, out, n, off);
}

static bool is_commit_header(const void *data, int n)
{
    const unsigned char *h = data;
    return n == FRAME_HEADER && (h[4] | h[5] | h[6] | h[7]) != 0;
}

static int wb_write(sqlite3_file *p, const void *data, int n, sqlite3_int64 off)
{
    wb_file_t *f = (wb_file_t *)p;
    if (!f->wal)
        return f->real->pMethods->xWrite(f->real, data, n, off);
    if (f->len && off != f->at + (sqlite3_int64)f->len)
        WB_FLUSH_OR_RETURN(f);
    if ((size_t)n > WALBUF_MAX) /* larger than we would ever gather */
        return f->real->pMethods->xWrite(f->real, data, n, off);
    if (f->len + (size_t)n > WALBUF_MAX)
        WB_FLUSH_OR_RETURN(f);
    if (!f->buf && !(f->buf = malloc(WALBUF_MAX))) /* no memory to gather: write through */
        return f->real->pMethods->xWrite(f->real, data, n, off);
    if (f->len == 0)
        f->at = off;
    memcpy(f->buf + f->len, data, (size_t)n);
    f->len += (size_t)n;
    if (is_commit_header(data, n)) {
        f->commit_pending = true;
        return SQLITE_OK;
    }
    if (f->commit_pending) /* the commit frame's page: the commit is whole */
        return wb_flush(f);
    return SQLITE_OK;
}

static int wb_truncate(sqlite3_file *p, sqlite3_int64 size)
{
    wb_file_t *f = (wb_file_t *)p;
    WB_FLUSH_OR_RETURN(f);
    return f->real->pMethods->xTruncate(f->real, size);
}

static int wb_sync(sqlite3_file *p, int flags)
{
    wb_file_t *f = (wb_file_t *)p;
    WB_FLUSH_OR_RETURN(f);
    return f->real->pMethods->xSync(f->real, flags);
}

static int wb_file_size(sqlite3_file *p, sqlite3_int64 *size)
{
    wb_file_t *f = (wb_file_t *)p;
    WB_FLUSH_OR_RETURN(f);
    return f->real->pMethods->xFileSize(f->real, size);
}

static int wb_lock(sqlite3_file *p, int level)
{
    wb_file_t *f = (wb_file_t *)p;
    WB_FLUSH_OR_RETURN(f);
    return f->real->pMethods->xLock(f->real, level);
}

static int wb_unlock(sqlite3_file *p, int level)
{
    wb_file_t *f = (wb_file_t *)p;
    WB_FLUSH_OR_RETURN(f);
    return f->real->pMethods->xUnlock(f->real, level);
}

static int wb_check_reserved(sqlite3_file *p, int *out)
{
    wb_file_t *f = (wb_file_t *)p;
    return f->real->pMethods->xCheckReservedLock(f->real, out);
}

static int wb_file_control(sqlite3_file *p, int op, void *arg)
{
    wb_file_t *f = (wb_file_t *)p;
    WB_FLUSH_OR_RETURN(f);
    if (op == SQLITE_FCNTL_VFSNAME) { /* report the stack, as shims should */
        int rc = f->real->pMethods->xFileControl(f->real, op, arg);
        if (rc == SQLITE_OK && *(char **)arg) {
            char *both = sqlite3_mprintf("%s/%z", WALBUF_VFS_NAME, *(char **)arg);
            *(char **)arg = both;
        } else if (rc == SQLITE_NOTFOUND) {
            *(char **)arg = sqlite3_mprintf("%s", WALBUF_VFS_NAME);
            rc = SQLITE_OK;
        }
        return rc;
    }
    return f->real->pMethods->xFileControl(f->real, op, arg);
}

static int wb_sector_size(sqlite3_file *p)
{
    wb_file_t *f = (wb_file_t *)p;
    return f->real->pMethods->xSectorSize(f->real);
}

static int wb_device_characteristics(sqlite3_file *p)
{
    wb_file_t *f = (wb_file_t *)p;
    return f->real->pMethods->xDeviceCharacteristics(f->real);
}

/* Shared memory and memory mapping belong to the main database file, which
 * never gathers: straight through. */
static int wb_shm_map(sqlite3_file *p, int region, int size, int extend, void volatile **out)
{
    wb_file_t *f = (wb_file_t *)p;
    return f->real->pMethods->xShmMap(f->real, region, size, extend, out);
}

static int wb_shm_lock(sqlite3_file *p, int offset, int n, int flags)
{
    wb_file_t *f = (wb_file_t *)p;
    return f->real->pMethods->xShmLock(f->real, offset, n, flags);
}

static void wb_shm_barrier(sqlite3_file *p)
{
    wb_file_t *f = (wb_file_t *)p;
    f->real->pMethods->xShmBarrier(f->real);
}

static int wb_shm_unmap(sqlite3_file *p, int delete_flag)
{
    wb_file_t *f = (wb_file_t *)p;
    return f->real->pMethods->xShmUnmap(f->real, delete_flag);
}

static int wb_fetch(sqlite3_file *p, sqlite3_int64 off, int n, void **out)
{
    wb_file_t *f = (wb_file_t *)p;
    WB_FLUSH_OR_RETURN(f);
    return f->real->pMethods->xFetch(f->real, off, n, out);
}

static int wb_unfetch(sqlite3_file *p, sqlite3_int64 off, void *page)
{
    wb_file_t *f = (wb_file_t *)p;
    return f->real->pMethods->xUnfetch(f->real, off, page);
}

static const sqlite3_io_methods wb_io = {
    .iVersion = 3,
    .xClose = wb_close,
    .xRead = wb_read,
    .xWrite = wb_write,
    .xTruncate = wb_truncate,
    .xSync = wb_sync,
    .xFileSize = wb_file_size,
    .xLock = wb_lock,
    .xUnlock = wb_unlock,
    .xCheckReservedLock = wb_check_reserved,
    .xFileControl = wb_file_control,
    .xSectorSize = wb_sector_size,
    .xDeviceCharacteristics = wb_device_characteristics,
    .xShmMap = wb_shm_map,
    .xShmLock = wb_shm_lock,
    .xShmBarrier = wb_shm_barrier,
    .xShmUnmap = wb_shm_unmap,
    .xFetch = wb_fetch,
    .xUnfetch = wb_unfetch,
};

static int wb_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *p, int flags,
                   int *out_flags)
{
    (void)vfs;
    wb_file_t *f = (wb_file_t *)p;
    memset(f, 0, sizeof *f);
    f->real = (sqlite3_file *)(f + 1);
    int rc = real_vfs->xOpen(real_vfs, name, f->real, flags, out_flags);
    if (rc != SQLITE_OK || !f->real->pMethods) {
        f->base.pMethods = NULL; /* SQLite must not call xClose on us */
        return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
    }
    /* The unix VFS implements every version-3 method; a real VFS with
     * fewer would need its own table. */
    if (f->real->pMethods->iVersion < 3) {
        f->real->pMethods->xClose(f->real);
        f->base.pMethods = NULL;
        return SQLITE_CANTOPEN;
    }
    f->wal = (flags & SQLITE_OPEN_WAL) != 0;
    f->base.pMethods = &wb_io;
    return SQLITE_OK;
}

/* Everything but xOpen is the default VFS's own. */
static int wb_delete(sqlite3_vfs *v, const char *name, int sync_dir)
{
    (void)v;
    return real_vfs->xDelete(real_vfs, name, sync_dir);
}
static int wb_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{
    (void)v;
    return real_vfs->xAccess(real_vfs, name, flags, out);
}
static int wb_full_pathname(sqlite3_vfs *v, const char *name, int n, char *out)
{
    (void)v;
    return real_vfs->xFullPathname(real_vfs, name, n, out);
}
static void *wb_dlopen(sqlite3_vfs *v, const char *name)
{
    (void)v;
    return real_vfs->xDlOpen(real_vfs, name);
}
static void wb_dlerror(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    real_vfs->xDlError(real_vfs, n, out);
}
static void (*wb_dlsym(sqlite3_vfs *v, void *h, const char *sym))(void)
{
    (void)v;
    return real_vfs->xDlSym(real_vfs, h, sym);
}
static void wb_dlclose(sqlite3_vfs *v, void *h)
{
    (void)v;
    real_vfs->xDlClose(real_vfs, h);
}
static int wb_randomness(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return real_vfs->xRandomness(real_vfs, n, out);
}
static int wb_sleep(sqlite3_vfs *v, int us)
{
    (void)v;
    return real_vfs->xSleep(real_vfs, us);
}
static int wb_current_time(sqlite3_vfs *v, double *out)
{
    (void)v;
    return real_vfs->xCurrentTime(real_vfs, out);
}
static int wb_last_error(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return real_vfs->xGetLastError(real_vfs, n, out);
}
static int wb_current_time64(sqlite3_vfs *v, sqlite3_int64 *out)
{
    (void)v;
    return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

static pthread_once_t wb_once = PTHREAD_ONCE_INIT;
static int wb_register_rc = SQLITE_ERROR;

static void wb_register(void)
{
    real_vfs = sqlite3_vfs_find(NULL);
    if (!real_vfs || real_vfs->iVersion < 2)
        return;
    wb_vfs = (sqlite3_vfs){
        .iVersion = 2,
        .szOsFile = (int)sizeof(wb_file_t) + real_vfs->szOsFile,
        .mxPathname = real_vfs->mxPathname,
        .zName = WALBUF_VFS_NAME,
        .xOpen = wb_open,
        .xDelete = wb_delete,
        .xAccess = wb_access,
        .xFullPathname = wb_full_pathname,
        .xDlOpen = wb_dlopen,
        .xDlError = wb_dlerror,
        .xDlSym = wb_dlsym,
        .xDlClose = wb_dlclose,
        .xRandomness = wb_randomness,
        .xSleep = wb_sleep,
        .xCurrentTime = wb_current_time,
        .xGetLastError = wb_last_error,
        .xCurrentTimeInt64 = wb_current_time64,
    };
    wb_register_rc = sqlite3_vfs_register(&wb_vfs, 0);
}

const char *loom_store_walbuf_vfs(void)
{
    pthread_once(&wb_once, wb_register);
    return wb_register_rc == SQLITE_OK ? WALBUF_VFS_NAME : NULL;
}
