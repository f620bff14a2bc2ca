/* Identities for loomd: peer credentials on the Unix socket, the operator
 * token, and the decision "may this caller act on that job". MUNGE's side
 * (decoding and encoding credentials) lives in munge.c, behind the two
 * private functions of auth_int.h, so that this file reads without it.
 *
 * The user database is read with the reentrant calls (getpwuid_r,
 * getgrgid_r, getgrouplist), since loomd authenticates on many threads. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth/auth_int.h"
#include "loom/auth.h"

#define TOKEN_HEX 64

struct loom_auth {
    bool has_operators;
    gid_t operators;
    bool has_token;
    char token[TOKEN_HEX + 1];
    bool munge;
    char *munge_socket;
    uid_t self; /* loomd's own user: an operator */
};

const char *loom_auth_scheme_name(loom_auth_scheme_t scheme)
{
    static const char *const names[] = {"local", "peer", "munge", "token"};
    return (unsigned)scheme < 4 ? names[scheme] : "unknown";
}

int loom_auth_group_id(const char *name, gid_t *out, loom_err_t *err)
{
    if (!name || !*name)
        return loom_err_set(err, LOOM_EINVAL, "group: expected a name or a gid, found nothing");
    char *end;
    errno = 0;
    unsigned long v = strtoul(name, &end, 10);
    if (*end == '\0' && errno == 0 && v < (unsigned long)(gid_t)-1) {
        *out = (gid_t)v;
        return LOOM_OK;
    }
    struct group gr, *res = NULL;
    char buf[16384];
    int e = getgrnam_r(name, &gr, buf, sizeof buf, &res);
    if (e != 0)
        return loom_err_errno(err, LOOM_EIO, e, "group '%.64s': cannot read the group database",
                              name);
    if (!res)
        return loom_err_set(err, LOOM_ENOTFOUND, "group '%.64s': no such group", name);
    *out = gr.gr_gid;
    return LOOM_OK;
}

int loom_auth_new(const loom_auth_config_t *cfg, loom_auth_t **out, loom_err_t *err)
{
    loom_auth_t *a = calloc(1, sizeof *a);
    if (!a)
        return loom_err_set(err, LOOM_ENOMEM, "auth: out of memory");
    a->self = geteuid();
    if (cfg->operators_group) {
        int rc = loom_auth_group_id(cfg->operators_group, &a->operators, err);
        if (rc != LOOM_OK) {
            free(a);
            return loom_err_prefix(err, "--operators");
        }
        a->has_operators = true;
    }
    if (cfg->token) {
        if (strlen(cfg->token) != TOKEN_HEX) {
            free(a);
            return loom_err_set(err, LOOM_EINVAL, "auth: token: expected %d hex characters",
                                TOKEN_HEX);
        }
        memcpy(a->token, cfg->token, TOKEN_HEX + 1);
        a->has_token = true;
    }
    a->munge = cfg->munge;
    if (cfg->munge_socket && !(a->munge_socket = strdup(cfg->munge_socket))) {
        free(a);
        return loom_err_set(err, LOOM_ENOMEM, "auth: out of memory");
    }
    *out = a;
    return LOOM_OK;
}

void loom_auth_free(loom_auth_t *a)
{
    if (!a)
        return;
    explicit_bzero(a->token, sizeof a->token);
    free(a->munge_socket);
    free(a);
}

bool loom_auth_in_group(const loom_auth_identity_t *id, gid_t gid)
{
    if (id->gid == gid)
        return true;
    for (size_t i = 0; i < id->ngroups; i++)
        if (id->groups[i] == gid)
            return true;
    return false;
}

static void group_name(gid_t gid, char *out, size_t len)
{
    struct group gr, *res = NULL;
    char buf[16384];
    out[0] = '\0';
    if (getgrgid_r(gid, &gr, buf, sizeof buf, &res) == 0 && res)
        snprintf(out, len, "%s", gr.gr_name);
}

int loom_auth_user(const loom_auth_t *a, uid_t uid, gid_t gid, loom_auth_scheme_t scheme,
                   loom_auth_identity_t *id, loom_err_t *err)
{
    memset(id, 0, sizeof *id);
    id->uid = uid;
    id->gid = gid;
    id->scheme = scheme;
    id->groups[0] = gid;
    id->ngroups = 1;
    struct passwd pw, *res = NULL;
    char buf[16384];
    int e = getpwuid_r(uid, &pw, buf, sizeof buf, &res);
    if (e != 0)
        return loom_err_errno(err, LOOM_EIO, e, "uid %u: cannot read the user database",
                              (unsigned)uid);
    if (res) {
        snprintf(id->user, sizeof id->user, "%s", pw.pw_name);
        int n = LOOM_AUTH_MAX_GROUPS;
        /* More groups than we keep: the first LOOM_AUTH_MAX_GROUPS, as the
         * database lists them (getgrouplist says how many there were). */
        if (getgrouplist(pw.pw_name, gid, id->groups, &n) < 0)
            n = LOOM_AUTH_MAX_GROUPS;
        id->ngroups = (size_t)n;
    }
    group_name(gid, id->group, sizeof id->group);
    uid_t self = a ? a->self : geteuid();
    id->is_operator =
        uid == 0 || uid == self || (a && a->has_operators && loom_auth_in_group(id, a->operators));
    return LOOM_OK;
}

int loom_auth_peer(const loom_auth_t *a, int fd, loom_auth_identity_t *id, loom_err_t *err)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        return loom_err_errno(err, LOOM_EIO, errno, "peer credentials of socket %d", fd);
    return loom_auth_user(a, cred.uid, cred.gid, LOOM_AUTH_PEER, id, err);
}

/* Constant time in the token's length, whatever `given` is. */
static bool token_equal(const char *expected, const char *given, size_t given_len)
{
    unsigned char diff = given_len != TOKEN_HEX;
    for (size_t i = 0; i < TOKEN_HEX; i++)
        diff |= (unsigned char)expected[i] ^ (unsigned char)(i < given_len ? given[i] : 0);
    return diff == 0;
}

static int bearer(const loom_auth_t *a, const char *tok, loom_auth_identity_t *id,
                  int64_t *expires_ns, loom_err_t *err)
{
    size_t n = strcspn(tok, " \t");
    if (!a->has_token || !token_equal(a->token, tok, n))
        return loom_err_set(err, LOOM_EINVAL, "wrong bearer token");
    int rc = loom_auth_user(a, a->self, getegid(), LOOM_AUTH_TOKEN, id, err);
    id->is_operator = true;
    if (expires_ns)
        *expires_ns = INT64_MAX;
    return rc;
}

int loom_auth_header(const loom_auth_t *a, const char *value, loom_auth_identity_t *id,
                     int64_t *expires_ns, loom_err_t *err)
{
    if (!value)
        return loom_err_set(err, LOOM_EINVAL,
                            "no credential: send 'Authorization: Munge CRED' "
                            "(from munge -s " LOOM_AUTH_MUNGE_AUDIENCE
                            ") or the operator's bearer token");
    while (*value == ' ')
        value++;
    if (strlen(value) > LOOM_AUTH_HEADER_MAX)
        return loom_err_set(err, LOOM_EINVAL, "Authorization header longer than %d bytes",
                            LOOM_AUTH_HEADER_MAX);
    if (strncasecmp(value, "Bearer ", 7) == 0)
        return bearer(a, value + 7 + strspn(value + 7, " "), id, expires_ns, err);
    if (strncasecmp(value, "Munge ", 6) == 0) {
        if (!a->munge)
            return loom_err_set(err, LOOM_EINVAL,
                                "MUNGE credentials are not accepted here "
                                "(loomd runs without --multi-user)");
        uid_t uid;
        gid_t gid;
        int64_t exp = 0;
        int rc = loom_auth__munge_decode(a->munge_socket, value + 6 + strspn(value + 6, " "), &uid,
                                         &gid, &exp, err);
        if (rc != LOOM_OK)
            return rc;
        if ((rc = loom_auth_user(a, uid, gid, LOOM_AUTH_MUNGE, id, err)) != LOOM_OK)
            return rc;
        if (expires_ns)
            *expires_ns = exp;
        return LOOM_OK;
    }
    return loom_err_set(err, LOOM_EINVAL,
                        "unknown Authorization scheme '%.16s': expected Munge or Bearer", value);
}

bool loom_auth_may_act(const loom_auth_identity_t *id, uid_t owner_uid)
{
    return id->is_operator || id->uid == owner_uid;
}

int loom_auth_munge_encode(const char *socket, char **cred, loom_err_t *err)
{
    return loom_auth__munge_encode(socket, cred, err);
}

/* The child of loom_auth_open_as: only system calls (the parent may have
 * threads). Sends the descriptor, or the errno, and exits. */
static void open_child(const loom_auth_identity_t *id, const char *path, int flags, int sock)
{
    int e = 0, fd = -1;
    if (setgroups(id->ngroups, id->groups) != 0 || setresgid(id->gid, id->gid, id->gid) != 0 ||
        setresuid(id->uid, id->uid, id->uid) != 0)
        e = errno ? errno : EPERM;
    else if ((fd = open(path, flags | O_CLOEXEC | O_NOCTTY, 0600)) < 0)
        e = errno;
    char cbuf[CMSG_SPACE(sizeof(int))];
    memset(cbuf, 0, sizeof cbuf);
    struct iovec iov = {&e, sizeof e};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        msg.msg_control = cbuf;
        msg.msg_controllen = sizeof cbuf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    _exit(sendmsg(sock, &msg, 0) == (ssize_t)sizeof e ? 0 : 1);
}

static int receive_fd(int sock, int *fd, int *e)
{
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {e, sizeof *e};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
    ssize_t n;
    do
        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof *e)
        return -1;
    *fd = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
            memcpy(fd, CMSG_DATA(c), sizeof *fd);
    return 0;
}

/* Runs open_child; *e: the errno the child met (0: *fd is open). -1 when
 * the child itself failed (its message set in err). */
static int open_as_raw(const loom_auth_identity_t *id, const char *path, int flags, int *fd, int *e,
                       loom_err_t *err)
{
    int sv[2];
    *fd = -1;
    *e = 0;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return loom_err_errno(err, LOOM_EIO, errno, "'%.200s': socketpair", path);
    pid_t pid = fork();
    if (pid < 0) {
        int fe = errno;
        close(sv[0]);
        close(sv[1]);
        return loom_err_errno(err, LOOM_EIO, fe, "'%.200s': fork", path);
    }
    if (pid == 0) {
        close(sv[0]);
        open_child(id, path, flags, sv[1]);
    }
    close(sv[1]);
    int got = -1;
    int rc = receive_fd(sv[0], &got, e);
    close(sv[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (rc != 0) {
        if (got >= 0)
            close(got);
        return loom_err_set(err, LOOM_EIO, "'%.200s': the opening child failed", path);
    }
    if (got < 0 && !*e)
        *e = EIO;
    *fd = got;
    return LOOM_OK;
}

int loom_auth_open_as(const loom_auth_identity_t *id, const char *path, int flags, int *fd,
                      loom_err_t *err)
{
    int e, got;
    int rc = open_as_raw(id, path, flags, &got, &e, err);
    if (rc)
        return rc;
    if (got < 0)
        return loom_err_errno(err, e == ENOENT ? LOOM_ENOTFOUND : LOOM_EIO, e,
                              "'%.200s' (opened as user %s, uid %u)", path, id->user,
                              (unsigned)id->uid);
    *fd = got;
    return LOOM_OK;
}

int loom_auth_file_open(const loom_auth_identity_t *id, const char *path, unsigned flags,
                        size_t max, loom_file_t *f, loom_err_t *err)
{
    *f = (loom_file_t)LOOM_FILE_INIT;
    if (!id || id->uid == geteuid())
        return loom_file_open(f, path, flags, max, err);
    int oflags = O_RDONLY | O_NONBLOCK | O_NOCTTY | (flags & LOOM_FILE_NOFOLLOW ? O_NOFOLLOW : 0);
    int e, fd;
    int rc = open_as_raw(id, path, oflags, &fd, &e, err);
    if (rc)
        return rc;
    if (fd < 0 && (e == ENOENT || e == EACCES || e == ENOTDIR || e == EPERM))
        return loom_err_set(err, LOOM_ENOTFOUND, "'%s': no such file, or not readable by user %s",
                            path, id->user);
    if (fd < 0 && e == ELOOP)
        return loom_err_set(err, LOOM_EINVAL, "'%s': a symbolic link; expected a file", path);
    if (fd < 0)
        return loom_err_errno(err, LOOM_EIO, e, "'%s': cannot open as user %s", path, id->user);
    return loom_file_adopt(f, fd, path, max, err);
}

int loom_auth_file_create(const loom_auth_identity_t *id, const char *path, int *fd,
                          loom_err_t *err)
{
    *fd = -1;
    if (!path || path[0] != '/')
        return loom_err_set(err, LOOM_EINVAL, "'%.200s': expected an absolute path",
                            path ? path : "");
    const int oflags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC;
    int e = 0, got = -1;
    if (!id || id->uid == geteuid()) {
        got = open(path, oflags, 0600);
        e = got < 0 ? errno : 0;
    } else {
        int rc = open_as_raw(id, path, oflags, &got, &e, err);
        if (rc)
            return rc;
    }
    const char *who = id ? id->user : "loomd's user";
    if (got < 0 && e == EEXIST)
        return loom_err_set(err, LOOM_EINVAL, "'%.200s': exists; expected a new file", path);
    if (got < 0 && e == ELOOP)
        return loom_err_set(err, LOOM_EINVAL, "'%.200s': a symbolic link; expected a new file",
                            path);
    if (got < 0 && (e == EACCES || e == EPERM || e == ENOENT || e == ENOTDIR || e == EROFS))
        return loom_err_errno(err, LOOM_EINVAL, e, "'%.200s': cannot be created by user %s", path,
                              who);
    if (got < 0)
        return loom_err_errno(err, LOOM_EIO, e, "'%.200s': cannot create as user %s", path, who);
    *fd = got;
    return LOOM_OK;
}
