/* Fuzz the Authorization header reader of the auth part: schemes, spaces,
 * lengths, the constant-time token comparison. MUNGE is off (as in a
 * single-user loomd), so no credential ever reaches munged; a header that
 * passes must be the right token and make an operator. */
#include <stdlib.h>
#include <string.h>

#include "loom/auth.h"

#define TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static loom_auth_t *a;
    if (!a) {
        loom_auth_config_t cfg = {.token = TOKEN};
        if (loom_auth_new(&cfg, &a, NULL) != LOOM_OK)
            abort();
    }
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    loom_auth_identity_t id;
    int64_t expires = 0;
    loom_err_t err;
    if (loom_auth_header(a, text, &id, &expires, &err) == LOOM_OK) {
        if (!id.is_operator || id.scheme != LOOM_AUTH_TOKEN || !strstr(text, TOKEN))
            abort();
    } else if (err.msg[0] == '\0') {
        abort(); /* a refusal says why */
    }
    free(text);
    return 0;
}
