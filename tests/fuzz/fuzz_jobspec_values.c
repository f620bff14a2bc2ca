/* Fuzz the value forms of job files: Slurm times and sizes, Kubernetes
 * quantities, arrays, dependencies and output patterns. */
#include <string.h>

#include "loom/jobspec.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char text[512];
    if (size >= sizeof text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    int64_t s;
    uint64_t b;
    loom_jobspec_array_t a;
    loom_jobspec_parse_time(text, &s, NULL);
    loom_jobspec_parse_slurm_mem(text, &b, NULL);
    loom_jobspec_parse_quantity(text, true, &b, NULL);
    if (loom_jobspec_array_parse(text, &a, NULL) == LOOM_OK)
        loom_jobspec_array_has(text, 3);
    loom_jobspec_dependency_check(text, NULL);
    loom_jobspec_ids_t ids = {.job_id = 7, .name = "n", .user = "u", .array_task = -1};
    char out[256];
    loom_jobspec_expand(text, &ids, "node", out, sizeof out, NULL);
    return 0;
}
