/* Fuzz the Rubick device description reader: no crash, no UB, no leak; a
 * refused text's message starts with its name; an accepted one has every
 * figure positive and finite, so the model never divides by zero. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/rubick.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    loom_rubick_device_t d;
    loom_err_t err;
    if (loom_rubick_device_parse((const char *)data, size, "dev.json", &d, &err) != LOOM_OK) {
        if (strncmp(err.msg, "dev.json", 8) != 0)
            abort();
        return 0;
    }
    double v[] = {d.flops, d.mem_bytes, d.link_bw, d.host_bw, d.adam_s_per_param};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        if (!(v[i] > 0) || !isfinite(v[i]))
            abort();
    return 0;
}
