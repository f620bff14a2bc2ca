/* Fuzz the parser of the CUPTI tracer's record file (kernels.csv): no
 * crash, no UB, no leak; counts are consistent. */
#include <stdlib.h>

#include "prof/prof_internal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    json_t *k = prof_kernels_parse((const char *)data, size);
    if (!k || json_integer_value(json_object_get(k, "records")) < 0 ||
        !json_is_object(json_object_get(k, "by_class")))
        abort();
    json_decref(k);
    return 0;
}
