/* Fuzz the parser of the CUPTI tracer's record file (kernels.csv): no
 * crash, no UB, no leak; counts are consistent; the busy time set against
 * NVML's samples is a share of the span between 0 and 100%. */
#include <stdlib.h>

#include "prof/prof_internal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    json_t *k = prof_kernels_parse((const char *)data, size);
    if (!k || json_integer_value(json_object_get(k, "records")) < 0 ||
        !json_is_object(json_object_get(k, "by_class")))
        abort();
    json_decref(k);
    static const loom_prof_gpu_sample_t g[4] = {
        {.t_ns = 0, .util_gpu_pct = 10},
        {.t_ns = 1000, .util_gpu_pct = 20},
        {.t_ns = 1000000, .util_gpu_pct = -1},
        {.t_ns = 5000000000, .util_gpu_pct = 90},
    };
    json_t *b = prof_gpu_busy((const char *)data, size, true, g, 4);
    if (!b)
        abort();
    if (json_is_true(json_object_get(b, "compared"))) {
        double pct = json_real_value(json_object_get(b, "cupti_busy_pct"));
        if (!(pct >= 0 && pct <= 100))
            abort();
    } else if (!json_is_string(json_object_get(b, "why"))) {
        abort();
    }
    json_decref(b);
    return 0;
}
