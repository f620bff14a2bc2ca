/* Fuzz the client side of the codec: loom_rpc_response_parse on whatever
 * JSON a server might send (a single response or a batch's array). A parse
 * either fails cleanly or yields exactly one of result and error. */
#include <stdlib.h>

#include "loom/rpc.h"

static void one(const json_t *r)
{
    json_t *result = NULL, *data = NULL;
    int code = -1;
    char msg[64];
    const json_t *id = NULL;
    loom_err_t err;
    int rc = loom_rpc_response_parse(r, &result, &code, msg, sizeof msg, &data, &id, &err);
    if (rc == LOOM_OK) {
        if ((result != NULL) == (code != 0))
            abort(); /* exactly one of result and error */
        if (!id)
            abort();
        if (code == 0 && data)
            abort();
    } else if (result || data) {
        abort(); /* nothing handed out on failure */
    }
    json_decref(result);
    json_decref(data);
}

int LLVMFuzzerTestOneInput(const unsigned char *bytes, size_t size)
{
    json_t *v = NULL;
    if (loom_json_parse((const char *)bytes, size, "fuzz", 32, &v, NULL) != LOOM_OK)
        return 0;
    if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) one(e);
    } else {
        one(v);
    }
    json_decref(v);
    return 0;
}
