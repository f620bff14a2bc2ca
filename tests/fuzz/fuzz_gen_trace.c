/* Fuzz the trace CSV reader. The first byte picks the column name and the
 * missing-value policy; the rest is the file. Checks: no crash or UB, and
 * on success the times are sorted, finite and counted consistently. */
#include <math.h>
#include <stdlib.h>

#include "loom/gen.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1)
        return 0;
    static const char *const columns[] = {"t", "creation_time", "a", "b"};
    const char *col = columns[data[0] & 3];
    loom_gen_missing_t missing = (data[0] & 4) ? LOOM_GEN_MISSING_SKIP : LOOM_GEN_MISSING_ERROR;
    loom_gen_trace_t t;
    loom_err_t err;
    if (loom_gen_trace_parse(&t, (const char *)data + 1, size - 1, "fuzz.csv", col, missing,
                             &err) == LOOM_OK) {
        if (t.n == 0 || t.unsorted >= t.n)
            abort();
        for (size_t i = 0; i < t.n; i++) {
            if (!isfinite(t.times[i]) || (i > 0 && t.times[i] < t.times[i - 1]))
                abort();
        }
        loom_gen_trace_free(&t);
    } else if (t.times != NULL || err.msg[0] == '\0') {
        abort();
    }
    return 0;
}
