/* A job's states and their names (loom/core.h). */
#include <strings.h>

#include "loom/core.h"

static const char *const state_names[LOOM_JOB_NSTATES] = {
    "PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
};

const char *loom_job_state_name(loom_job_state_t state)
{
    if ((int)state < 0 || (int)state >= LOOM_JOB_NSTATES)
        return NULL;
    return state_names[state];
}

int loom_job_state_parse(const char *text, loom_job_state_t *out, loom_err_t *err)
{
    for (int i = 0; text && i < LOOM_JOB_NSTATES; i++) {
        if (strcasecmp(text, state_names[i]) == 0) {
            *out = (loom_job_state_t)i;
            return LOOM_OK;
        }
    }
    return loom_err_set(err, LOOM_EINVAL,
                        "unknown job state '%s' (expected PENDING, RUNNING, COMPLETED, FAILED, "
                        "CANCELLED or TIMEOUT)",
                        text ? text : "");
}

bool loom_job_state_terminal(loom_job_state_t state)
{
    return state == LOOM_JOB_COMPLETED || state == LOOM_JOB_FAILED || state == LOOM_JOB_CANCELLED ||
           state == LOOM_JOB_TIMEOUT;
}
