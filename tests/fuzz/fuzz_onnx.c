/* Fuzz the ONNX reader and everything behind it: any bytes must give a
 * model or a clean error (no crash, leak or UB); a model must then either
 * estimate or fail cleanly, at inference and in training. */
#include <stdint.h>
#include <stdlib.h>

#include "loom/estimate.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    loom_est_model_t *m = NULL;
    loom_err_t err;
    if (loom_est_model_parse(data, size, "fuzz.onnx", &m, &err) != LOOM_OK) {
        if (m || err.msg[0] == '\0')
            abort(); /* an error must leave no model and say why */
        return 0;
    }
    static const loom_est_device_t dev = {.name = "fuzz",
                                          .flops_fp32 = 1e12,
                                          .flops_half = 1e12,
                                          .flops_vector = 1e12,
                                          .mem_bandwidth = 1e12,
                                          .allocator = LOOM_EST_ALLOC_CUDA_CACHING};
    loom_est_options_t o = {.batch = 2, .device = &dev};
    loom_est_result_t r;
    if (loom_est_run(m, &o, &r, &err) == LOOM_OK) {
        if (r.mem.total < r.mem.peak_live)
            abort();
        json_t *j = loom_est_result_json(&r, &o);
        json_decref(j);
        loom_est_result_free(&r);
        o.train = true;
        o.optimizer = LOOM_EST_ADAM;
        o.precision = LOOM_EST_MIXED;
        if (loom_est_run(m, &o, &r, &err) == LOOM_OK)
            loom_est_result_free(&r);
    }
    loom_est_model_free(m);
    return 0;
}
