/* Fuzz the size, duration, rate and integer parsers: no crash, no UB, and
 * a size formatted exactly (no decimal point) must read back the same. */
#include <stdlib.h>
#include <string.h>

#include "loom/core.h"

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
    free(s);
    return 0;
}
