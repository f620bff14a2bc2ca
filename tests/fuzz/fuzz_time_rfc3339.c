/* Fuzz loom_time_parse_rfc3339 and loom_time_parse_datetime: no crash, no
 * UB; an error always says where (a byte offset) or that the time is out of
 * range; what parses strictly parses the same under every extra form; and
 * what parses formats back (loom_time_format_rfc3339) to the same instant,
 * truncated (towards zero) to the microsecond. */
#include <stdlib.h>
#include <string.h>

#include "loom/core.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size > 256)
        return 0;
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    int64_t ns = 0, again;
    loom_err_t err;
    if (loom_time_parse_rfc3339(s, &ns, &err) == LOOM_OK) {
        static const unsigned forms[] = {
            LOOM_TIME_DATE_ONLY | LOOM_TIME_ZONELESS_UTC, LOOM_TIME_NO_SECONDS,
            LOOM_TIME_DATE_ONLY | LOOM_TIME_NO_SECONDS | LOOM_TIME_ZONELESS_LOCAL};
        for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
            if (loom_time_parse_datetime(s, forms[i], &again, NULL) != LOOM_OK || again != ns)
                abort();
        char out[32];
        loom_time_format_rfc3339(ns, out);
        int64_t us = ns / 1000 * 1000; /* the formatter truncates towards zero */
        if (loom_time_parse_rfc3339(out, &again, NULL) != LOOM_OK || again != us)
            abort();
    } else if (err.code != LOOM_EINVAL || err.msg[0] != '\'' ||
               (!strstr(err.msg, "': byte ") && !strstr(err.msg, "': out of range"))) {
        abort();
    }
    if (loom_time_parse_datetime(
            s, LOOM_TIME_DATE_ONLY | LOOM_TIME_NO_SECONDS | LOOM_TIME_ZONELESS_UTC, &ns, &err) !=
            LOOM_OK &&
        err.msg[0] != '\'')
        abort();
    free(s);
    return 0;
}
