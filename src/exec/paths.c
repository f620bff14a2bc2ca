/* Where an executor keeps its jobs: JOBS_DIR/<id>/ with the job's files
 * below. Shared by the local and the Slurm executor. */
#include <stdio.h>
#include <string.h>

#include "exec/exec_private.h"

int loom_exec__check_jobs_dir(const char *dir, loom_err_t *err)
{
    size_t len = strlen(dir);
    if (len > LOOM_EXEC_JOBS_DIR_MAX)
        return loom_err_set(err, LOOM_EINVAL,
                            "jobs directory '%.60s...' is %zu bytes long (at most %d bytes)", dir,
                            len, LOOM_EXEC_JOBS_DIR_MAX);
    return LOOM_OK;
}

void loom_exec__job_paths(const char *jobs_dir, loom_exec_handle_t *h)
{
    if (!h->dir[0])
        snprintf(h->dir, sizeof h->dir, "%s/%lld", jobs_dir, (long long)h->job_id);
    if (!h->stdout_path[0]) {
        snprintf(h->stdout_path, sizeof h->stdout_path, "%s/stdout", h->dir);
        snprintf(h->stderr_path, sizeof h->stderr_path, "%s/stderr", h->dir);
    }
}
