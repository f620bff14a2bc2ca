/* Fuzz core's CSV reader. The first byte picks the options and the field
 * limit; the rest is the text. Checks: no crash or UB, every record has
 * fields whose lengths and columns are consistent, errors have a message,
 * and the reader ends (each record consumes input). */
#include <stdlib.h>
#include <string.h>

#include "loom/core.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned flags = data[0] & (LOOM_CSV_ALLOW_NUL | LOOM_CSV_CR_EOL);
    size_t max = (data[0] >> 2) & 7;
    loom_csv_t c;
    loom_err_t err;
    err.msg[0] = '\0';
    loom_csv_init(&c, (const char *)data + 1, size - 1, "fuzz.csv", flags, max);
    int rc;
    size_t records = 0;
    while ((rc = loom_csv_next(&c, &err)) == 1) {
        if (++records > size || c.nf == 0 || (max && c.nf > max))
            abort();
        for (size_t i = 0; i < c.nf; i++) {
            const char *f = loom_csv_field(&c, i);
            size_t len = loom_csv_field_len(&c, i);
            if (f[len] != '\0' || loom_csv_field_col(&c, i) == 0 || len > size)
                abort();
            if (!(flags & LOOM_CSV_ALLOW_NUL) && strlen(f) != len)
                abort();
        }
    }
    if (rc < 0 && err.msg[0] == '\0')
        abort();
    loom_csv_free(&c);
    return 0;
}
