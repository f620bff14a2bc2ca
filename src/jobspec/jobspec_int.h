/* Private to src/jobspec: the option table shared by the script reader and
 * loom_jobspec_set, and small helpers. */
#ifndef LOOM_JOBSPEC_INT_H
#define LOOM_JOBSPEC_INT_H

#include <stddef.h>

#include "loom/jobspec.h"

#define LOOM_JOBSPEC_CPUS_MAX 4096 /* as the store's resources.cpus */
#define LOOM_JOBSPEC_GPUS_MAX 1024
#define LOOM_JOBSPEC_PATH_MAX 1024

enum {
    O_NAME,
    O_CPUS,
    O_CPT,
    O_NTASKS,
    O_NODES,
    O_CPUS_PER_GPU,
    O_MEM,
    O_MEM_PER_CPU,
    O_GRES,
    O_GPUS,
    O_GPUS_PER_TASK,
    O_GPU_TYPE,
    O_GPU_SHARE,
    O_GPU_MEM,
    O_TIME,
    O_OUTPUT,
    O_ERROR,
    O_CHDIR,
    O_EXPORT,
    O_ARRAY,
    O_DEPENDENCY,
    O_NICE,
    O_ACCOUNT,
    O_COMMENT,
    O_BEGIN,
    O_HOLD,
    O_PRIORITY,
    O_LABEL,
    O_RETRIES
};

typedef struct loom_jobspec_opt {
    char short_name; /* 0: none */
    const char *long_name;
    int id;
    unsigned dialects;
    int arg; /* none, required, optional (only as --opt=value) */
} loom_jobspec_opt_t;

/* option is "-c", "--cpus-per-task" (len bytes of it). */
const loom_jobspec_opt_t *loom_jobspec__find(loom_jobspec_dialect_t dialect, const char *option,
                                             size_t len);
/* Adds NAME=VALUE to spec->env (replacing NAME); checks the name. */
int loom_jobspec__env_add(loom_jobspec_t *spec, const char *name, size_t name_len,
                          const char *value, loom_err_t *err);

#endif
