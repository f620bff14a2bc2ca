/* Client files: the one way loom reads a file a client named.
 *
 * A client controls the path and the file, so: open without blocking (a
 * FIFO with no writer would hold the request, and a character device like
 * /dev/zero never ends), keep only a regular file, check its size against
 * the use's limit before reading, and copy it into memory loom owns. No
 * mapping: the file's owner may truncate it at any time, and a read through
 * a mapping past the new end is SIGBUS for the whole daemon (issue 30).
 * Errors name the path as given and never quote the file's bytes; a missing
 * and an unreadable file read the same, so an error is no existence oracle.
 * auth's loom_auth_file_open does the open with a client's rights and hands
 * the descriptor to loom_file_adopt. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loom/core.h"

static void identity(loom_file_t *f, const struct stat *st)
{
    f->dev = (uint64_t)st->st_dev;
    f->ino = (uint64_t)st->st_ino;
    f->size = (uint64_t)st->st_size;
    f->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    f->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

int loom_file_adopt(loom_file_t *f, int fd, const char *name, size_t max, loom_err_t *err)
{
    *f = (loom_file_t)LOOM_FILE_INIT;
    struct stat st;
    int rc = LOOM_OK;
    if (fstat(fd, &st) != 0)
        rc = loom_err_errno(err, LOOM_EIO, errno, "'%s': cannot stat", name);
    else if (!S_ISREG(st.st_mode))
        rc = loom_err_set(err, LOOM_EINVAL,
                          "'%s': not a regular file (a FIFO, device, socket or directory); "
                          "expected a file",
                          name);
    else if ((uint64_t)st.st_size > max)
        rc = loom_err_set(err, LOOM_ELIMIT, "'%s': %llu bytes, more than the limit of %zu", name,
                          (unsigned long long)st.st_size, max);
    if (rc != LOOM_OK) {
        close(fd);
        return rc;
    }
    f->fd = fd;
    f->name = name;
    f->max = max;
    identity(f, &st);
    return LOOM_OK;
}

int loom_file_open(loom_file_t *f, const char *path, unsigned flags, size_t max, loom_err_t *err)
{
    *f = (loom_file_t)LOOM_FILE_INIT;
    int oflags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    if (flags & LOOM_FILE_NOFOLLOW)
        oflags |= O_NOFOLLOW;
    int fd = open(path, oflags);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT || e == EACCES || e == ENOTDIR || e == EPERM)
            return loom_err_set(err, LOOM_ENOTFOUND, "'%s': no such file, or not readable", path);
        if (e == ELOOP)
            return loom_err_set(err, LOOM_EINVAL, "'%s': a symbolic link; expected a file", path);
        return loom_err_errno(err, LOOM_EIO, e, "'%s': cannot open", path);
    }
    return loom_file_adopt(f, fd, path, max, err);
}

int loom_file_read(loom_file_t *f, loom_buf_t *b, loom_err_t *err)
{
    loom_buf_reset(b);
    /* One byte past the limit tells a file that grew from one at it. */
    size_t want = f->size < f->max ? (size_t)f->size + 1 : f->max + 1;
    if (loom_buf_reserve(b, want) != LOOM_OK)
        return loom_err_set(err, LOOM_ENOMEM, "'%s': out of memory for %zu bytes", f->name, want);
    for (;;) {
        if (b->len > f->max)
            return loom_err_set(err, LOOM_ELIMIT, "'%s': grew past the limit of %zu bytes", f->name,
                                f->max);
        if (b->cap - b->len < 2 && loom_buf_reserve(b, 65536) != LOOM_OK)
            return loom_err_set(err, LOOM_ENOMEM, "'%s': out of memory", f->name);
        size_t room = b->cap - b->len - 1;
        if (room > f->max + 1 - b->len)
            room = f->max + 1 - b->len;
        ssize_t n = pread(f->fd, b->data + b->len, room, (off_t)b->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return loom_err_errno(err, LOOM_EIO, errno, "'%s': cannot read", f->name);
        if (n == 0)
            break;
        b->len += (size_t)n;
    }
    b->data[b->len] = '\0';
    return LOOM_OK;
}

ssize_t loom_file_read_at(loom_file_t *f, void *buf, size_t len, uint64_t offset)
{
    struct stat st;
    if (fstat(f->fd, &st) == 0)
        f->size = (uint64_t)st.st_size;
    ssize_t n;
    do
        n = pread(f->fd, buf, len, (off_t)offset);
    while (n < 0 && errno == EINTR);
    return n;
}

bool loom_file_unchanged(const loom_file_t *f)
{
    struct stat st;
    if (f->fd < 0 || fstat(f->fd, &st) != 0)
        return false;
    loom_file_t now = *f;
    identity(&now, &st);
    return now.dev == f->dev && now.ino == f->ino && now.size == f->size &&
           now.mtime_ns == f->mtime_ns && now.ctime_ns == f->ctime_ns;
}

void loom_file_close(loom_file_t *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}
