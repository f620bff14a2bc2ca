/* MUNGE credentials (https://dun.github.io/munge/), through libmunge: the
 * client encodes a credential for its own uid and gid, loomd decodes it.
 * munged seals credentials with the key every host of the cluster shares,
 * gives each a time to live (300 s by default) and refuses one it has
 * decoded before, so a credential seen on the network cannot be used again.
 * The payload names the credential's audience (LOOM_AUTH_MUNGE_AUDIENCE):
 * munged seals it with the rest, so a credential made for another service
 * (or with `munge -n`) cannot be used at loomd, as Slurm binds its own.
 *
 * A munge context is not thread-safe: each call makes its own (cheap: no
 * connection is opened until the call). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <munge.h>

#include "auth/auth_int.h"
#include "loom/auth.h"

static int context(const char *socket, munge_ctx_t *out, loom_err_t *err)
{
    munge_ctx_t ctx = munge_ctx_create();
    if (!ctx)
        return loom_err_set(err, LOOM_ENOMEM, "munge: out of memory");
    if (socket && munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket) != EMUNGE_SUCCESS) {
        loom_err_set(err, LOOM_EINVAL, "munge socket '%.200s': %s", socket,
                     munge_ctx_strerror(ctx));
        munge_ctx_destroy(ctx);
        return LOOM_EINVAL;
    }
    *out = ctx;
    return LOOM_OK;
}

/* Socket and service errors are munged's trouble (EUNAVAIL); credential
 * errors are the client's (EINVAL). */
static int refusal(munge_err_t e, munge_ctx_t ctx, loom_err_t *err)
{
    const char *why = munge_ctx_strerror(ctx);
    if (!why)
        why = munge_strerror(e);
    switch (e) {
    case EMUNGE_SOCKET:
    case EMUNGE_TIMEOUT:
    case EMUNGE_NO_MEMORY:
        return loom_err_set(err, LOOM_EUNAVAIL, "munge: cannot decode the credential: %s", why);
    case EMUNGE_CRED_EXPIRED: return loom_err_set(err, LOOM_EINVAL, "MUNGE credential expired");
    case EMUNGE_CRED_REPLAYED:
        return loom_err_set(err, LOOM_EINVAL, "MUNGE credential replayed (each is good once)");
    case EMUNGE_CRED_REWOUND:
        return loom_err_set(err, LOOM_EINVAL, "MUNGE credential from the future (clock skew)");
    default: return loom_err_set(err, LOOM_EINVAL, "MUNGE credential refused: %s", why);
    }
}

int loom_auth__munge_decode(const char *socket, const char *cred, uid_t *uid, gid_t *gid,
                            int64_t *expires_ns, loom_err_t *err)
{
    munge_ctx_t ctx;
    int rc = context(socket, &ctx, err);
    if (rc != LOOM_OK)
        return rc;
    void *payload = NULL;
    int len = 0;
    munge_err_t e = munge_decode(cred, ctx, &payload, &len, uid, gid);
    bool ours = e == EMUNGE_SUCCESS && payload && (size_t)len == strlen(LOOM_AUTH_MUNGE_AUDIENCE) &&
                memcmp(payload, LOOM_AUTH_MUNGE_AUDIENCE, (size_t)len) == 0;
    free(payload);
    if (e != EMUNGE_SUCCESS) {
        rc = refusal(e, ctx, err);
        munge_ctx_destroy(ctx);
        return rc;
    }
    if (!ours) { /* the payload is the client's: its length is said, never its bytes */
        munge_ctx_destroy(ctx);
        return loom_err_set(err, LOOM_EINVAL,
                            "MUNGE credential not made for loomd: its payload (%d bytes) must be "
                            "'%s' (make it with: munge -s %s)",
                            len, LOOM_AUTH_MUNGE_AUDIENCE, LOOM_AUTH_MUNGE_AUDIENCE);
    }
    time_t encoded = 0;
    int ttl = 0;
    munge_ctx_get(ctx, MUNGE_OPT_ENCODE_TIME, &encoded);
    munge_ctx_get(ctx, MUNGE_OPT_TTL, &ttl);
    *expires_ns = ((int64_t)encoded + ttl) * LOOM_NS_PER_S;
    munge_ctx_destroy(ctx);
    return LOOM_OK;
}

int loom_auth__munge_encode(const char *socket, char **cred, loom_err_t *err)
{
    munge_ctx_t ctx;
    int rc = context(socket, &ctx, err);
    if (rc != LOOM_OK)
        return rc;
    munge_err_t e =
        munge_encode(cred, ctx, LOOM_AUTH_MUNGE_AUDIENCE, (int)strlen(LOOM_AUTH_MUNGE_AUDIENCE));
    if (e != EMUNGE_SUCCESS) {
        rc = loom_err_set(err, e == EMUNGE_SOCKET ? LOOM_EUNAVAIL : LOOM_EIO,
                          "munge: cannot make a credential: %s (is munged running?)",
                          munge_ctx_strerror(ctx) ? munge_ctx_strerror(ctx) : munge_strerror(e));
        *cred = NULL;
    }
    munge_ctx_destroy(ctx);
    return rc;
}
