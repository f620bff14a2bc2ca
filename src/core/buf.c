/* loom_buf_t: the one growable string of the code base. Growth doubles;
 * data is always NUL-terminated so it can be handed to C string APIs. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loom/core.h"

void loom_buf_init(loom_buf_t *b)
{
    *b = (loom_buf_t)LOOM_BUF_INIT;
}

void loom_buf_free(loom_buf_t *b)
{
    free(b->data);
    loom_buf_init(b);
}

void loom_buf_reset(loom_buf_t *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

int loom_buf_reserve(loom_buf_t *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1)
        return LOOM_ENOMEM;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return LOOM_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return LOOM_ENOMEM;
    b->data = p;
    b->cap = cap;
    return LOOM_OK;
}

int loom_buf_append(loom_buf_t *b, const void *data, size_t len)
{
    if (loom_buf_reserve(b, len) != LOOM_OK)
        return LOOM_ENOMEM;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return LOOM_OK;
}

int loom_buf_append_str(loom_buf_t *b, const char *s)
{
    return loom_buf_append(b, s, strlen(s));
}

int loom_buf_append_char(loom_buf_t *b, char c)
{
    return loom_buf_append(b, &c, 1);
}

int loom_buf_vappendf(loom_buf_t *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return LOOM_EINVAL;
    if ((size_t)n < sizeof small)
        return loom_buf_append(b, small, (size_t)n);
    if (loom_buf_reserve(b, (size_t)n) != LOOM_OK)
        return LOOM_ENOMEM;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return LOOM_OK;
}

int loom_buf_appendf(loom_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = loom_buf_vappendf(b, fmt, ap);
    va_end(ap);
    return rc;
}

char *loom_buf_detach(loom_buf_t *b)
{
    if (!b->data && loom_buf_reserve(b, 0) != LOOM_OK)
        return NULL;
    b->data[b->len] = '\0';
    char *s = b->data;
    loom_buf_init(b);
    return s;
}

/* Reads fd to its end into b (at most max bytes), then closes it. */
static int read_fd(loom_buf_t *b, int fd, const char *path, size_t max, loom_err_t *err)
{
    for (;;) {
        if (loom_buf_reserve(b, 65536) != LOOM_OK) {
            close(fd);
            return loom_err_set(err, LOOM_ENOMEM, "reading '%s': out of memory", path);
        }
        ssize_t n = read(fd, b->data + b->len, b->cap - b->len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return loom_err_errno(err, LOOM_EIO, e, "cannot read '%s'", path);
        }
        if (n == 0)
            break;
        b->len += (size_t)n;
        if (b->len > max) {
            close(fd);
            return loom_err_set(err, LOOM_ELIMIT, "'%s': more than the limit of %zu bytes", path,
                                max);
        }
    }
    b->data[b->len] = '\0';
    close(fd);
    return LOOM_OK;
}

int loom_buf_read_file(loom_buf_t *b, const char *path, loom_err_t *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return loom_err_errno(err, errno == ENOENT ? LOOM_ENOTFOUND : LOOM_EIO, errno,
                              "cannot open '%s'", path);
    return read_fd(b, fd, path, SIZE_MAX - 1, err);
}

int loom_write_file_atomic(const char *path, const void *data, size_t len, int mode,
                           loom_err_t *err)
{
    /* Unique per process, thread and call, so that concurrent writers of the
     * same path never share a temporary file. */
    static _Atomic unsigned long counter;
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%ld.%lu", path, (long)getpid(), (long)gettid(),
                 counter++) >= (int)sizeof tmp)
        return loom_err_set(err, LOOM_EINVAL, "path too long: '%s'", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return loom_err_errno(err, LOOM_EIO, errno, "cannot create '%s'", tmp);
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            goto fail_write;
        p += n;
        left -= (size_t)n;
    }
    if (fsync(fd) != 0)
        goto fail_write;
    close(fd);
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return loom_err_errno(err, LOOM_EIO, e, "cannot rename '%s' to '%s'", tmp, path);
    }
    return LOOM_OK;

fail_write:;
    int e = errno;
    close(fd);
    unlink(tmp);
    return loom_err_errno(err, LOOM_EIO, e, "cannot write '%s'", tmp);
}
