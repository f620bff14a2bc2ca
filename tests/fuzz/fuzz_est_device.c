/* Fuzz the device description parser (src/estimate/device.c): any bytes
 * that are JSON must give a device or a clean error naming the place; a
 * device must then cost a small built-in graph without crashing, with its
 * calibrated classes, optimizer curves and heap model. */
#include <stdlib.h>

#include "loom/estimate.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    json_error_t je;
    json_t *j = json_loadb((const char *)data, size, 0, &je);
    if (!j)
        return 0;
    loom_est_device_t d;
    loom_err_t err = {0};
    if (loom_est_device_from_json(j, "fuzz.json", &d, &err) != LOOM_OK) {
        if (err.msg[0] == '\0')
            abort(); /* an error must say why */
        json_decref(j);
        return 0;
    }
    json_decref(j);
    for (int c = 0; c < LOOM_EST_CL_N; c++)
        for (int dir = 0; dir < 2; dir++) {
            double t = loom_est_cost_eval(&d.cls[c][dir], 1e6, 7, 1e5, 3, true);
            if (!(t >= 0))
                abort(); /* every parameter is >= 0: so is every time */
        }
    /* the heap model under the device's malloc_tunables: a few blocks
     * across the thresholds, freed and taken again */
    loom_est_heap_t *h = loom_est_heap_new_cfg(&d.malloc_cfg);
    if (!h)
        return 0;
    uint64_t sizes[] = {24, 2000, 200000, 40u << 20, 1u << 20};
    uint64_t hd[5];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 5; i++)
            hd[i] = loom_est_heap_malloc(h, sizes[i]);
        for (int i = 0; i < 5; i++)
            loom_est_heap_release(h, hd[i]);
    }
    loom_est_heap_free_all(h);
    return 0;
}
