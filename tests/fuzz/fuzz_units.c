/* Fuzz the size, duration, rate and integer parsers: no crash, no UB, and
 * a size formatted exactly (no decimal point) must read back the same. Also
 * loomd's estimate margin ("10%+256MiB", estimate.h), which is built on the
 * size parser: a margin never makes a request smaller than the estimate. */
#include <stdlib.h>
#include <string.h>

#include "loom/core.h"
#include "loom/estimate.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    uint64_t bytes;
    int64_t ns, i;
    double r;
    if (loom_parse_size(s, &bytes, NULL) == LOOM_OK) {
        char out[64];
        uint64_t again;
        loom_format_size(bytes, out, sizeof out);
        if (!strchr(out, '.')) { /* an exact form must read back exactly */
            if (loom_parse_size(out, &again, NULL) != LOOM_OK || again != bytes)
                abort();
        }
    }
    loom_parse_duration(s, &ns, NULL);
    loom_parse_rate(s, &r, NULL);
    loom_parse_i64(s, INT64_MIN, INT64_MAX, &i, "x", NULL);
    loom_utf8_valid(s, size);
    loom_est_margin_t m;
    if (loom_est_margin_parse(s, &m, NULL) == LOOM_OK) {
        uint64_t totals[] = {0, 1, 1u << 20, (uint64_t)3 << 30, UINT64_MAX / 4};
        for (size_t k = 0; k < sizeof totals / sizeof totals[0]; k++) {
            uint64_t req = loom_est_margin_apply(&m, totals[k]);
            if (req % (1u << 20) ||
                (req < totals[k] && req != UINT64_MAX / (1u << 20) * (1u << 20)))
                abort();
        }
    }
    free(s);
    return 0;
}
