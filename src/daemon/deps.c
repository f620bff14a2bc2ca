/* loomd's side of holds, begin times and dependencies: store glue. It
 * reads them from a job's stored options when the runner hands the job to
 * the runtime (which keeps and judges them, src/runtime/deps.c), and tells
 * the runtime where a job it does not hold stands, from the store. */
#include <stdlib.h>
#include <string.h>

#include "daemon/runner_int.h"
#include "loom/jobspec.h"
#include "loom/runtime.h"

int loomd__job_blocks(loomd_runner_t *r, const loom_job_t *j, loom_runtime_job_t *rj)
{
    json_t *o = j->options_json ? json_loads(j->options_json, 0, NULL) : NULL;
    if (!o)
        return j->options_json ? LOOM_ENOMEM : LOOM_OK; /* stored options always parse */
    rj->hold = json_is_true(json_object_get(o, "hold"));
    const char *begin = json_string_value(json_object_get(o, "begin"));
    int64_t at;
    if (begin && loom_jobspec_parse_begin(begin, j->submit_time_ns, &at, NULL) == LOOM_OK &&
        at > loom_time_real_ns())
        rj->begin_s = (double)(at - r->real_minus_mono_ns) / 1e9;
    const char *array = json_string_value(json_object_get(o, "array"));
    loom_jobspec_array_t a;
    json_int_t aid = json_integer_value(json_object_get(o, "array_job_id"));
    if (array && aid > 0 && loom_jobspec_array_parse(array, &a, NULL) == LOOM_OK) {
        rj->group = (uint64_t)aid;
        rj->group_max = a.max_running > INT32_MAX ? INT32_MAX : (int)a.max_running;
    }
    const char *dep = json_string_value(json_object_get(o, "dependency"));
    int rc = LOOM_OK;
    if (dep && *dep) {
        char *copy = strdup(dep);
        if (copy) {
            free(r->dep_text);
            r->dep_text = copy;
            rj->dependency = copy;
        } else {
            rc = LOOM_ENOMEM;
        }
    }
    json_decref(o);
    return rc;
}

loom_runtime_dep_job_t loomd__dep_outcome(void *ctx, uint64_t id)
{
    loomd_runner_t *r = ctx;
    loom_job_t j;
    if (id > INT64_MAX || loom_store_get(r->store, (int64_t)id, &j, NULL) != LOOM_OK)
        return LOOM_RUNTIME_DEP_UNKNOWN;
    loom_runtime_dep_job_t s = j.state == LOOM_JOB_PENDING     ? LOOM_RUNTIME_DEP_PENDING
                               : j.state == LOOM_JOB_RUNNING   ? LOOM_RUNTIME_DEP_RUNNING
                               : j.state == LOOM_JOB_COMPLETED ? LOOM_RUNTIME_DEP_OK
                                                               : LOOM_RUNTIME_DEP_NOTOK;
    loom_job_free(&j);
    return s;
}
