/* Fuzz the step-marker parser: no crash, no UB, no leak; a parsed step
 * formatted again must parse back to the same values, and a META line must
 * leave only string members in the object. */
#include <stdlib.h>
#include <string.h>

#include "loom/prof.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    json_t *meta = json_object();
    loom_prof_line_kind_t kind;
    loom_prof_step_t st;
    loom_err_t err;
    if (loom_prof_marker_parse((const char *)data, size, &kind, &st, meta, &err) == LOOM_OK) {
        if (kind == LOOM_PROF_LINE_STEP) {
            char out[LOOM_PROF_MARKER_MAX + 2];
            size_t n = loom_prof_marker_format(&st, out, sizeof out);
            loom_prof_line_kind_t k2;
            loom_prof_step_t again;
            if (n == 0 || out[n - 1] != '\n' ||
                loom_prof_marker_parse(out, n - 1, &k2, &again, NULL, &err) != LOOM_OK ||
                k2 != LOOM_PROF_LINE_STEP || memcmp(&st, &again, sizeof st) != 0 ||
                st.end_ns < st.start_ns)
                abort();
        }
        const char *k;
        json_t *v;
        json_object_foreach(meta, k, v) if (!json_is_string(v)) abort();
    } else if (err.msg[0] == '\0') {
        abort(); /* every rejection says why */
    }
    json_decref(meta);
    return 0;
}
