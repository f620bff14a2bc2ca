/* Fuzz the /proc/<pid>/stat parser of the profiler's sampler: no crash, no
 * UB, whatever the command name (which may hold spaces and parentheses). */
#include <stdlib.h>

#include "prof/prof_internal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    prof_stat_t st;
    if (prof_parse_stat((const char *)data, size, &st) == LOOM_OK && st.threads < -INT64_MAX)
        abort();
    return 0;
}
