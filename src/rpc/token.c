/* Bearer tokens: 256 bits from getrandom(2), written as 64 lower-case hex
 * characters and a newline to STATE_DIR/token with mode 0600.
 *
 * Creation never replaces an existing token, even when two daemons start
 * at once: the token is first written completely (loom_write_file_atomic
 * to a private staging name), then link(2)ed to the final name, which fails
 * with EEXIST if someone else got there first; then theirs is loaded. A
 * reader thus sees either no file or a complete one. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loom/rpc.h"

static bool is_lower_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

int loom_rpc_token_load(const char *path, char out[LOOM_RPC_TOKEN_HEX + 1], loom_err_t *err)
{
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = loom_buf_read_file(&b, path, err);
    if (rc != LOOM_OK)
        return rc;
    size_t len = b.len;
    if (len == LOOM_RPC_TOKEN_HEX + 1 && b.data[len - 1] == '\n')
        len--;
    if (len != LOOM_RPC_TOKEN_HEX) {
        size_t found = b.len;
        loom_buf_free(&b);
        return loom_err_set(err, LOOM_EINVAL,
                            "token file '%s': expected %d hex characters and an optional "
                            "newline, found %zu bytes",
                            path, LOOM_RPC_TOKEN_HEX, found);
    }
    for (size_t i = 0; i < len; i++) {
        if (!is_lower_hex(b.data[i])) {
            loom_buf_free(&b);
            return loom_err_set(err, LOOM_EINVAL,
                                "token file '%s': byte %zu: expected a lower-case hex digit", path,
                                i + 1);
        }
    }
    memcpy(out, b.data, LOOM_RPC_TOKEN_HEX);
    out[LOOM_RPC_TOKEN_HEX] = '\0';
    loom_buf_free(&b);
    return LOOM_OK;
}

static int load_private(const char *path, char out[LOOM_RPC_TOKEN_HEX + 1], loom_err_t *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return loom_err_errno(err, LOOM_EIO, errno, "token file '%s'", path);
    if (!S_ISREG(st.st_mode))
        return loom_err_set(err, LOOM_EINVAL,
                            "token file '%s': not a regular file (a link or a device?); "
                            "expected the file loomd wrote",
                            path);
    if (st.st_uid != geteuid())
        return loom_err_set(err, LOOM_EINVAL,
                            "token file '%s': owned by uid %u, not by this user (uid %u); "
                            "another user could know or change it: remove it and let loomd "
                            "write a new one",
                            path, (unsigned)st.st_uid, (unsigned)geteuid());
    if (st.st_mode & 077)
        return loom_err_set(err, LOOM_EINVAL,
                            "token file '%s': mode %04o lets others read it; expected 0600 "
                            "(chmod 600 '%s')",
                            path, (unsigned)(st.st_mode & 07777), path);
    return loom_rpc_token_load(path, out, err);
}

static int fsync_dir(const char *dir, loom_err_t *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return loom_err_errno(err, LOOM_EIO, errno, "cannot open directory '%s'", dir);
    int rc = fsync(fd) == 0 ? LOOM_OK : loom_err_errno(err, LOOM_EIO, errno, "fsync '%s'", dir);
    close(fd);
    return rc;
}

int loom_rpc_token_ensure(const char *state_dir, char out[LOOM_RPC_TOKEN_HEX + 1], loom_err_t *err)
{
    char path[PATH_MAX], staging[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/token", state_dir) >= (int)sizeof path)
        return loom_err_set(err, LOOM_EINVAL, "state directory path too long: '%s'", state_dir);
    if (access(path, F_OK) == 0)
        return load_private(path, out, err);

    char hex[LOOM_RPC_TOKEN_HEX + 2];
    int rc = loom_secret_hex(hex, LOOM_RPC_TOKEN_HEX / 2, err);
    if (rc != LOOM_OK)
        return rc;
    hex[LOOM_RPC_TOKEN_HEX] = '\n';
    hex[LOOM_RPC_TOKEN_HEX + 1] = '\0';

    /* One staging file per process and thread: two threads must never
     * share one, or one could link the other's token. */
    if (snprintf(staging, sizeof staging, "%s.new.%ld.%ld", path, (long)getpid(), (long)gettid()) >=
        (int)sizeof staging)
        return loom_err_set(err, LOOM_EINVAL, "state directory path too long: '%s'", state_dir);
    rc = loom_write_file_atomic(staging, hex, LOOM_RPC_TOKEN_HEX + 1, 0600, err);
    if (rc != LOOM_OK)
        return loom_err_prefix(err, "creating token '%s'", path);
    if (link(staging, path) != 0) {
        int e = errno;
        unlink(staging);
        if (e == EEXIST) /* another process created it first: use theirs */
            return load_private(path, out, err);
        return loom_err_errno(err, LOOM_EIO, e, "cannot create token file '%s'", path);
    }
    unlink(staging);
    rc = fsync_dir(state_dir, err);
    if (rc != LOOM_OK)
        return rc;
    memcpy(out, hex, LOOM_RPC_TOKEN_HEX);
    out[LOOM_RPC_TOKEN_HEX] = '\0';
    explicit_bzero(hex, sizeof hex);
    return LOOM_OK;
}

int loom_rpc_token_resolve(const char *state_dir, char out[LOOM_RPC_TOKEN_HEX + 1], loom_err_t *err)
{
    const char *env = getenv("LOOM_TOKEN");
    if (env && env[0]) {
        size_t len = strlen(env);
        if (len != LOOM_RPC_TOKEN_HEX)
            return loom_err_set(err, LOOM_EINVAL,
                                "LOOM_TOKEN: expected %d hex characters, found %zu characters",
                                LOOM_RPC_TOKEN_HEX, len);
        for (size_t i = 0; i < len; i++)
            if (!is_lower_hex(env[i]))
                return loom_err_set(err, LOOM_EINVAL,
                                    "LOOM_TOKEN: character %zu: expected a lower-case hex digit",
                                    i + 1);
        memcpy(out, env, len + 1);
        return LOOM_OK;
    }
    if (!state_dir)
        return loom_err_set(err, LOOM_ENOTFOUND, "no token: LOOM_TOKEN is not set");
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/token", state_dir) >= (int)sizeof path)
        return loom_err_set(err, LOOM_EINVAL, "state directory path too long: '%s'", state_dir);
    if (access(path, F_OK) != 0)
        return loom_err_set(err, LOOM_ENOTFOUND,
                            "no token: LOOM_TOKEN is not set and '%s' does not exist", path);
    return loom_rpc_token_load(path, out, err);
}

bool loom_rpc_token_equal(const char *expected, const char *given)
{
    /* Walk the whole expected string whatever `given` holds; stop reading
     * given at its NUL (keep comparing against 0 afterwards). */
    size_t n = strlen(expected);
    unsigned char diff = 0;
    size_t j = 0;
    bool ended = false;
    for (size_t i = 0; i < n; i++) {
        unsigned char g = ended ? 0 : (unsigned char)given[j];
        if (g == 0)
            ended = true;
        else
            j++;
        diff |= (unsigned char)expected[i] ^ g;
    }
    if (!ended && given[j] != '\0')
        diff |= 1; /* given is longer */
    if (n == 0)
        diff |= 1; /* an empty expected token never matches */
    return diff == 0;
}
