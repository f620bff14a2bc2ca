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
        /* a CPU device: the calibrated classes and the glibc heap model */
        static loom_est_device_t cpu = {.name = "fuzz-cpu",
                                        .flops_fp32 = 1e11,
                                        .flops_half = 1e11,
                                        .flops_vector = 1e11,
                                        .mem_bandwidth = 1e10,
                                        .allocator = LOOM_EST_ALLOC_MALLOC,
                                        .has_classes = true,
                                        .page_fault_s = 1e-5,
                                        .step_overhead_s = 1e-5};
        for (int c = 0; c < LOOM_EST_CL_N; c++)
            for (int dir = 0; dir < 2; dir++)
                cpu.cls[c][dir] =
                    (loom_est_cost_fn_t){.set = true,
                                         .overhead_s = 1e-6,
                                         .peak = 1e11,
                                         .half_dim = 8,
                                         .power = 1,
                                         .elem_s = {.n = 2, .x = {1, 1e6}, .y = {1e-9, 2e-9}}};
        cpu.opt[LOOM_EST_ADAM] = (loom_est_opt_cost_t){.set = true, .tensor_s = 2e-5};
        o.device = &cpu;
        o.precision = LOOM_EST_FP32;
        if (loom_est_run(m, &o, &r, &err) == LOOM_OK) {
            if (!(r.step_time_s >= 0) || r.fault_time_s > r.step_time_s)
                abort();
            loom_est_result_free(&r);
        }
    }
    loom_est_model_free(m);
    return 0;
}
