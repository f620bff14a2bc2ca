/* Gandiva's mechanisms in loomd (Xiao et al., OSDI'18), loomd's side: the
 * runtime (src/runtime/gandiva.c) decides when jobs are suspended, resumed,
 * probed or kept packed; this file carries those decisions out on the
 * job's processes and feeds the runtime what it decides from.
 *
 * - Suspend and resume are SIGSTOP and SIGCONT of the job's process group,
 *   through the shepherd (local executor only). A stopped process keeps its
 *   memory (GPU memory too), so this time-slices compute, not memory: see
 *   docs/running.md.
 * - Packing introspection reads the LOOM_STEP markers (docs/profiling.md)
 *   that jobs sharing a GPU print on stdout and hands each step to the
 *   runtime (loom_runtime_observe_step).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/runner_int.h"
#include "loom/prof.h"

#define READ_CHUNK 8192

static void record(loomd_runner_t *r, active_t *a, const char *reason)
{
    json_t *run = loomd__run_json(r, a);
    loomd__store_run(r, a->id, LOOM_JOB_RUNNING, -1, reason, run, NULL);
    json_decref(run);
}

int loomd__gandiva_apply(loomd_runner_t *r, const loom_runtime_action_t *act)
{
    active_t *a = loomd__find_active(r, (int64_t)act->id);
    if (!a)
        return LOOM_ENOTFOUND;
    loom_err_t err;
    loom_runtime_info_t info;
    bool have = loom_runtime_get(r->rt, act->id, &info) == LOOM_OK;
    switch (act->kind) {
    case LOOM_RUNTIME_SUSPEND:
        if (!r->local || loom_exec_local_suspend(r->local, &a->h, &err) != LOOM_OK)
            return r->local ? err.code : LOOM_EUNAVAIL;
        a->suspended = true;
        if (have && info.note[0])
            snprintf(a->gandiva, sizeof a->gandiva, "%s", info.note);
        loom_log_info("job suspended", "job=%lld why=\"%s\"", (long long)a->id, act->reason);
        record(r, a, act->reason);
        return LOOM_OK;
    case LOOM_RUNTIME_RESUME:
        if (!r->local || loom_exec_local_resume(r->local, &a->h, &err) != LOOM_OK)
            return r->local ? err.code : LOOM_EUNAVAIL; /* it ended meanwhile: poll records it */
        a->suspended = false;
        a->alloc = act->alloc;
        loom_log_info("job resumed", "job=%lld", (long long)a->id);
        record(r, a, "resumed");
        return LOOM_OK;
    case LOOM_RUNTIME_NOTE:
        snprintf(a->gandiva, sizeof a->gandiva, "%s", act->reason);
        loom_log_info("gandiva", "job=%lld decision=\"%s\"", (long long)a->id, act->reason);
        record(r, a, NULL);
        return LOOM_OK;
    default: return LOOM_EUNAVAIL;
    }
}

/* Hands the runtime the step markers of one line of the job's stdout. */
static void one_line(loomd_runner_t *r, active_t *a)
{
    loom_prof_line_kind_t kind;
    loom_prof_step_t st;
    if (a->partial_len < sizeof a->partial &&
        loom_prof_marker_parse(a->partial, a->partial_len, &kind, &st, NULL, NULL) == LOOM_OK &&
        kind == LOOM_PROF_LINE_STEP)
        loom_runtime_observe_step(r->rt, (uint64_t)a->id, (double)st.start_ns / 1e9,
                                  (double)(st.end_ns - st.start_ns) / 1e9);
    a->partial_len = 0;
}

/* Reads new step markers from the job's stdout. */
static void read_steps(loomd_runner_t *r, active_t *a)
{
    int fd = open(a->h.stdout_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[READ_CHUNK];
    ssize_t n;
    while ((n = pread(fd, buf, sizeof buf, a->out_off)) > 0) {
        a->out_off += n;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\n')
                one_line(r, a);
            else if (a->partial_len < sizeof a->partial)
                a->partial[a->partial_len++] = buf[i];
        }
    }
    close(fd);
}

void loomd__gandiva_introspect(loomd_runner_t *r)
{
    for (size_t i = 0; i < r->nactive; i++) {
        active_t *a = &r->active[i];
        if (!a->suspended && a->alloc.req.gpu_milli < LOOM_SCHED_MILLI && a->alloc.ngpus == 1)
            read_steps(r, a);
    }
}
