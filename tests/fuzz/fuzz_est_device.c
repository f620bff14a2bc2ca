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
    return 0;
}
