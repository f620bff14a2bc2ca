/* Fuzz the /proc/thread-self/schedstat line reader. Checks: no crash or
 * UB, and any value it returns is the second of the line's numbers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/gen.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char buf[256];
    if (size >= sizeof buf)
        size = sizeof buf - 1;
    memcpy(buf, data, size);
    buf[size] = '\0';
    int64_t v = loom_gen_schedstat_run_delay(buf);
    if (v < -1)
        abort();
    if (v >= 0) {
        unsigned long long a, b;
        if (sscanf(buf, "%llu %llu", &a, &b) != 2 || (int64_t)b != v)
            abort();
    }
    return 0;
}
