/* Errors as values. A loom_err_t carries a code and one message; callers
 * add context on the way up with loom_err_prefix, so the final message reads
 * from the outermost operation down to the byte that was wrong. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "loom/core.h"

int loom_err_set(loom_err_t *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

int loom_err_errno(loom_err_t *err, int code, int errno_value, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < sizeof err->msg)
            snprintf(err->msg + n, sizeof err->msg - (size_t)n, ": %s", strerror(errno_value));
    }
    return code;
}

int loom_err_prefix(loom_err_t *err, const char *fmt, ...)
{
    if (!err)
        return LOOM_EINTERNAL;
    char prefix[LOOM_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* Assemble "prefix: old" by hand: the result is cut at the buffer's
     * size on purpose, which snprintf("%s: %s") makes gcc warn about. */
    char old[LOOM_ERR_MSG_MAX];
    memcpy(old, err->msg, sizeof old);
    size_t n = strnlen(prefix, sizeof err->msg - 1);
    memcpy(err->msg, prefix, n);
    const char *parts[2] = {": ", old};
    for (int i = 0; i < 2; i++) {
        size_t len = strnlen(parts[i], sizeof err->msg - 1 - n);
        memcpy(err->msg + n, parts[i], len);
        n += len;
    }
    err->msg[n] = '\0';
    return err->code;
}

void loom_err_clear(loom_err_t *err)
{
    if (err) {
        err->code = LOOM_OK;
        err->msg[0] = '\0';
    }
}

const char *loom_err_name(int code)
{
    switch (code) {
    case LOOM_OK: return "ok";
    case LOOM_EINVAL: return "invalid";
    case LOOM_ENOMEM: return "no-memory";
    case LOOM_EIO: return "io";
    case LOOM_ENOTFOUND: return "not-found";
    case LOOM_EEXIST: return "exists";
    case LOOM_EUNAVAIL: return "unavailable";
    case LOOM_ETIMEDOUT: return "timed-out";
    case LOOM_ESTATE: return "bad-state";
    case LOOM_ELIMIT: return "limit";
    case LOOM_EINTERNAL: return "internal";
    default: return "unknown";
    }
}
