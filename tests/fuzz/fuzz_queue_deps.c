/* Fuzz the queue's text forms: sbatch dependency lists as the runtime
 * judges them (loom_runtime_dep_eval) and --begin times as loomd reads them
 * (loom_jobspec_parse_begin). */
#include <string.h>

#include "loom/jobspec.h"
#include "loom/runtime.h"

static loom_runtime_dep_job_t job_state(void *ctx, uint64_t id)
{
    (void)ctx;
    return (loom_runtime_dep_job_t)(id % 5);
}

static bool busy(void *ctx)
{
    (void)ctx;
    return true;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char text[512];
    if (size >= sizeof text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    loom_runtime_dep_t v;
    loom_runtime_dep_eval(text, job_state, busy, NULL, &v, NULL);
    int64_t at;
    loom_jobspec_parse_begin(text, 1764763200LL * 1000000000LL, &at, NULL);
    return 0;
}
