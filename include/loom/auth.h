/* loom auth: who is calling, and what they may do.
 *
 * Three ways to name a caller (docs/security.md):
 *
 *  - Peer credentials on the Unix socket: the kernel says which uid and gid
 *    the connecting process runs as (SO_PEERCRED); the supplementary groups
 *    come from the user database (getgrouplist), as login would set them.
 *  - MUNGE over TCP: the client sends `Authorization: Munge CRED`, a
 *    credential that the machine's munged made for the client's uid and gid;
 *    decoding it asks munged, which checks its seal and time to live and
 *    refuses a credential it has seen before (replay). Its payload names
 *    its audience, LOOM_AUTH_MUNGE_AUDIENCE: a credential made for anything
 *    else (`munge -n`, another service) is refused.
 *  - The operator token (`Authorization: Bearer TOKEN`, the 64 hex digits of
 *    STATE_DIR/token): whoever holds it acts as loomd's own user, an
 *    operator.
 *
 * Operators are root, loomd's own user and the members of one group named at
 * start (--operators GROUP). An operator may act on every job; anyone else
 * only on their own (loom_auth_may_act).
 *
 * This part knows nothing of HTTP: loomd wires it to the RPC server's
 * identity hook. Thread-safe once created.
 */
#ifndef LOOM_AUTH_H
#define LOOM_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "loom/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_AUTH_MAX_GROUPS 64 /* supplementary groups kept per identity */
#define LOOM_AUTH_NAME_MAX   64 /* user and group names, with the NUL */
/* The longest Authorization header value taken ("Munge " + credential). */
#define LOOM_AUTH_HEADER_MAX 4096

typedef enum loom_auth_scheme {
    LOOM_AUTH_LOCAL = 0, /* in-process, or single-user mode: loomd's own user */
    LOOM_AUTH_PEER,      /* Unix socket, SO_PEERCRED */
    LOOM_AUTH_MUNGE,     /* TCP, a MUNGE credential */
    LOOM_AUTH_TOKEN      /* TCP, the operator token */
} loom_auth_scheme_t;

/* "local", "peer", "munge", "token". */
const char *loom_auth_scheme_name(loom_auth_scheme_t scheme);

typedef struct loom_auth_identity {
    uid_t uid;
    gid_t gid;                          /* the primary group */
    gid_t groups[LOOM_AUTH_MAX_GROUPS]; /* supplementary groups, the primary included */
    size_t ngroups;
    char user[LOOM_AUTH_NAME_MAX];  /* "" when the uid has no name */
    char group[LOOM_AUTH_NAME_MAX]; /* the primary group's name, "" if none */
    bool is_operator;
    loom_auth_scheme_t scheme;
} loom_auth_identity_t;

typedef struct loom_auth_config {
    /* Members of this group are operators (root and loomd's user always
     * are). NULL: nobody else. A name that is not a group is an error. */
    const char *operators_group;
    /* The operator token (64 hex characters), or NULL: Bearer is refused. */
    const char *token;
    /* Accept MUNGE credentials (TCP). */
    bool munge;
    /* munged's socket; NULL: libmunge's default (/run/munge/munge.socket.2). */
    const char *munge_socket;
} loom_auth_config_t;

typedef struct loom_auth loom_auth_t;

int loom_auth_new(const loom_auth_config_t *cfg, loom_auth_t **out, loom_err_t *err);
void loom_auth_free(loom_auth_t *a);

/* The identity of uid with primary group gid: names and supplementary groups
 * from the user database, the operator flag from the configuration (a NULL
 * `a`: root and the calling process's own user only). A uid with no entry in
 * the user database keeps only its gid as group and an empty name. */
int loom_auth_user(const loom_auth_t *a, uid_t uid, gid_t gid, loom_auth_scheme_t scheme,
                   loom_auth_identity_t *id, loom_err_t *err);

/* The caller at the other end of a connected Unix socket (SO_PEERCRED). */
int loom_auth_peer(const loom_auth_t *a, int fd, loom_auth_identity_t *id, loom_err_t *err);

/* An HTTP Authorization header value: "Bearer TOKEN" or "Munge CRED".
 * *expires_ns (may be NULL) receives when the identity stops being valid
 * (wall clock: the credential's encode time plus its time to live; INT64_MAX
 * for the token). LOOM_EPERM-like refusals are LOOM_EINVAL with a message
 * that says why (no credential, unknown scheme, wrong token, a credential
 * munged refused: invalid, expired, replayed, ...); LOOM_EUNAVAIL when
 * munged cannot be reached. Never says more about a token than "wrong". */
int loom_auth_header(const loom_auth_t *a, const char *value, loom_auth_identity_t *id,
                     int64_t *expires_ns, loom_err_t *err);

/* Whether id may act on (cancel, change, read the script, environment and
 * output paths of) a job owned by owner_uid: the owner or an operator. */
bool loom_auth_may_act(const loom_auth_identity_t *id, uid_t owner_uid);

/* Whether gid is among id's groups (primary included). */
bool loom_auth_in_group(const loom_auth_identity_t *id, gid_t gid);

/* The gid of a group name, or of a decimal gid; LOOM_ENOTFOUND naming it. */
int loom_auth_group_id(const char *name, gid_t *out, loom_err_t *err);

/* Opens path with flags (O_RDONLY, ...; O_CLOEXEC is added) with id's
 * rights, not the caller's: a short-lived child process takes id's groups,
 * gid and uid, opens the file and passes the descriptor back over a socket
 * pair (SCM_RIGHTS). So a path a client names is opened as that client, and
 * what the caller then reads through the descriptor (or /proc/self/fd/N)
 * is what the client could read. Errors name the path and the errno the
 * client met (LOOM_ENOTFOUND for ENOENT, LOOM_EIO otherwise). */
int loom_auth_open_as(const loom_auth_identity_t *id, const char *path, int flags, int *fd,
                      loom_err_t *err);

/* Opens a file a client named, with the client's rights (id; NULL or
 * loomd's own user: the process's), for loom_file_read and friends
 * (core.h): O_NONBLOCK, a regular file only, at most max bytes, checked
 * before any byte is read. A missing and an unreadable file give the same
 * LOOM_ENOTFOUND naming the path as given; LOOM_EINVAL for a FIFO, device,
 * directory (or, with LOOM_FILE_NOFOLLOW, a symbolic link); LOOM_ELIMIT
 * over max. f->name points to path. */
int loom_auth_file_open(const loom_auth_identity_t *id, const char *path, unsigned flags,
                        size_t max, loom_file_t *f, loom_err_t *err);

/* Creates a new file a client named, with the client's rights (id; NULL or
 * loomd's own user: the process's), for writing: O_WRONLY|O_CREAT|O_EXCL|
 * O_NOFOLLOW|O_CLOEXEC, mode 0600 (less the umask of the opener), owned by
 * id's uid, in *fd. LOOM_EINVAL naming the path for a relative path, an
 * existing file or link, and a directory the client cannot write or that
 * does not exist (with the errno the client met); LOOM_EIO otherwise. */
int loom_auth_file_create(const loom_auth_identity_t *id, const char *path, int *fd,
                          loom_err_t *err);

/* The payload of a MUNGE credential made for loomd (`munge -s loomd`):
 * loomd refuses one whose payload is anything else, so a credential a user
 * made for another service cannot be replayed to loomd by that service. */
#define LOOM_AUTH_MUNGE_AUDIENCE "loomd"

/* Client side: a new MUNGE credential for the calling process, its payload
 * LOOM_AUTH_MUNGE_AUDIENCE, in *cred (malloc'd; free it). socket NULL:
 * libmunge's default. */
int loom_auth_munge_encode(const char *socket, char **cred, loom_err_t *err);

#ifdef __cplusplus
}
#endif
#endif
