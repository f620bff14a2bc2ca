/* Fuzz loom_json_parse (depth pre-scan + jansson with loom's flags). */
#include "loom/core.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    json_t *v = NULL;
    if (loom_json_parse((const char *)data, size, "fuzz", 32, &v, NULL) == LOOM_OK) {
        loom_buf_t b = LOOM_BUF_INIT;
        loom_json_dump(&b, v);
        loom_buf_free(&b);
        json_decref(v);
    }
    return 0;
}
