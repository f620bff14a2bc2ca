/* Fuzz the reading of `loom estimate --json` output for the roofline
 * (loom_prof_roof_from_estimate): no crash, no UB, no leak; accepted counts
 * are positive and finite, and every rejection says why. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/prof.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    json_t *j;
    loom_err_t err;
    if (loom_json_parse((const char *)data, size, "fuzz", 0, &j, &err) != LOOM_OK)
        return 0;
    loom_prof_roof_input_t in;
    memset(&in, 0, sizeof in);
    err.msg[0] = '\0';
    if (loom_prof_roof_from_estimate(&in, j, "est.json", &err) == LOOM_OK) {
        if (!(in.flops_per_step > 0) || !(in.bytes_per_step > 0) || !isfinite(in.flops_per_step) ||
            !isfinite(in.bytes_per_step) || in.batch < 0)
            abort();
    } else if (err.msg[0] == '\0') {
        abort();
    }
    json_decref(j);
    return 0;
}
