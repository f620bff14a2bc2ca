/* Fuzz the #SBATCH / #LOOM directive reader and the params it builds. */
#include "loom/jobspec.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    loom_jobspec_t s;
    loom_jobspec_init(&s);
    if (loom_jobspec_parse_script(&s, (const char *)data, size, "fuzz.sh", 0, NULL) == LOOM_OK) {
        json_t *p = json_object();
        loom_jobspec_to_params(&s, p, NULL);
        json_decref(p);
    }
    loom_jobspec_free(&s);
    return 0;
}
