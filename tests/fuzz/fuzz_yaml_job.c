/* Fuzz the batch/v1 Job reader of YAML jobs (libyaml + loom's walk). */
#include "loom/exec.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    json_t *argv = json_array(), *env = json_array();
    char wd[256];
    loom_exec_yaml_command((const char *)data, size, argv, env, wd, sizeof wd, NULL);
    json_decref(argv);
    json_decref(env);
    return 0;
}
