/* Secrets (tokens, session ids, one-time codes) from the kernel's random
 * source, as lowercase hex. Not the seeded RNG (rng.c): that one must
 * repeat; these must not. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "loom/core.h"

int loom_secret_hex(char *out, size_t nbytes, loom_err_t *err)
{
    unsigned char raw[LOOM_SECRET_MAX_BYTES];
    if (nbytes == 0 || nbytes > sizeof raw)
        return loom_err_set(err, LOOM_EINVAL, "secret: expected 1 to %d bytes, found %zu",
                            LOOM_SECRET_MAX_BYTES, nbytes);
    size_t got = 0;
    while (got < nbytes) {
        ssize_t n = getrandom(raw + got, nbytes - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return loom_err_errno(err, LOOM_EIO, errno, "getrandom");
        got += (size_t)n;
    }
    for (size_t i = 0; i < nbytes; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    explicit_bzero(raw, sizeof raw);
    return LOOM_OK;
}
