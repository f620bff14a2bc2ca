/* Fuzz the "reconfig" object parser: no crash, no UB, no leak; a refused
 * object's message names the place; an accepted one always allows its own
 * asked plan once its resources check out. */
#include <stdlib.h>
#include <string.h>

#include "loom/rubick.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    json_t *j;
    if (loom_json_parse((const char *)data, size, "f", 16, &j, NULL) != LOOM_OK)
        return 0;
    loom_rubick_spec_t s;
    loom_err_t err;
    if (loom_rubick_spec_parse(j, "/r", &s, &err) != LOOM_OK) {
        if (strncmp(err.msg, "/r", 2) != 0)
            abort();
    } else if (s.reconfigurable && loom_rubick_spec_check_asked(&s, s.gpus_min ? s.gpus_min : 1,
                                                                1000, 0, "/r", &err) == LOOM_OK) {
        if (!loom_rubick_plan_allowed(&s, &s.asked))
            abort();
    }
    json_decref(j);
    return 0;
}
