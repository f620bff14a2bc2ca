/* The MUNGE side of auth (munge.c), private to the part. */
#ifndef LOOM_AUTH_INT_H
#define LOOM_AUTH_INT_H

#include <stdint.h>
#include <sys/types.h>

#include "loom/core.h"

/* Decodes a credential with munged: uid, gid and the wall-clock time (ns)
 * after which it is no longer valid. Refusals are LOOM_EINVAL naming
 * munged's reason (invalid, expired, rewound, replayed, ...); munged
 * unreachable is LOOM_EUNAVAIL. */
int loom_auth__munge_decode(const char *socket, const char *cred, uid_t *uid, gid_t *gid,
                            int64_t *expires_ns, loom_err_t *err);

/* A new credential for this process, its payload LOOM_AUTH_MUNGE_AUDIENCE;
 * *cred is malloc'd. */
int loom_auth__munge_encode(const char *socket, char **cred, loom_err_t *err);

#endif
