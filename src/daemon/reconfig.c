/* loomd's side of live reconfiguration (Rubick, docs/scheduling.md "Live
 * reconfiguration"): the runtime decides, this carries it out.
 *
 * RECONFIGURE: the job is asked to checkpoint (SIGTERM through the
 * executor; the training script checkpoints after its current step and
 * exits 0; loomd's --grace later it is killed). The runtime's model holds
 * the new allocation from then on. When the process has ended with exit
 * code 0 it is started again, same job id, with the new plan and
 * resources in its environment (LOOM_PLAN, LOOM_WORLD_SIZE, WORLD_SIZE,
 * LOOM_RANKS, LOOM_CPUS, CUDA_VISIBLE_DEVICES), and an event RUNNING ->
 * RUNNING records it. A job that did not checkpoint (killed, failed) ends
 * as FAILED saying so; a restart that fails puts the job back in the queue
 * (PENDING) with the reason. A job cancelled meanwhile ends CANCELLED. */
#include <stdio.h>
#include <string.h>

#include "daemon/runner_int.h"

bool loomd__reconfig_of(const loom_job_t *j, loom_rubick_spec_t *s)
{
    if (!j->reconfig_json)
        return false;
    json_t *o = json_loads(j->reconfig_json, 0, NULL);
    loom_err_t err;
    bool ok = o && loom_rubick_spec_parse(o, "reconfig", s, &err) == LOOM_OK &&
              loom_rubick_spec_check_asked(s, (int)j->gpus, j->cpus * 1000,
                                           (int64_t)((j->memory_bytes + (1u << 20) - 1) >> 20),
                                           "reconfig", &err) == LOOM_OK;
    json_decref(o);
    return ok && s->reconfigurable;
}

/* ------------------------------------------------------ the plan's record */

void loomd__plan_json(const active_t *a, json_t *run)
{
    if (!a->has_plan)
        return;
    const loom_rubick_config_t *c = &a->plan;
    json_object_set_new(run, "plan",
                        json_pack("{s:i, s:i, s:b, s:i, s:b, s:I, s:I}", "workers", c->plan.gpus,
                                  "accumulation", c->plan.accum, "recompute", c->plan.recompute,
                                  "zero", c->plan.zero, "offload", c->plan.offload, "cpu_milli",
                                  (json_int_t)c->cpu_milli, "memory_mib", (json_int_t)c->mem_mib));
    json_object_set_new(run, "reconfigurations", json_integer(a->reconfigs));
    json_object_set_new(run, "reconfiguring", json_boolean(a->reconfiguring));
}

void loomd__plan_read(active_t *a, const json_t *run)
{
    const json_t *p = json_object_get(run, "plan");
    if (!json_is_object(p))
        return;
    a->has_plan = true;
    a->plan = (loom_rubick_config_t){
        .plan = {.gpus = (int)json_integer_value(json_object_get(p, "workers")),
                 .accum = (int)json_integer_value(json_object_get(p, "accumulation")),
                 .recompute = json_is_true(json_object_get(p, "recompute")),
                 .zero = (int)json_integer_value(json_object_get(p, "zero")),
                 .offload = json_is_true(json_object_get(p, "offload"))},
        .cpu_milli = json_integer_value(json_object_get(p, "cpu_milli")),
        .mem_mib = json_integer_value(json_object_get(p, "memory_mib"))};
    a->reconfigs = (int)json_integer_value(json_object_get(run, "reconfigurations"));
    a->reconfiguring = json_is_true(json_object_get(run, "reconfiguring"));
}

void loomd__plan_req(const json_t *run, loom_sched_req_t *req)
{
    const json_t *p = json_object_get(run, "plan");
    if (!json_is_object(p))
        return;
    req->num_gpus = (int)json_integer_value(json_object_get(p, "workers"));
    req->gpu_milli = LOOM_SCHED_MILLI;
    req->cpu_milli = json_integer_value(json_object_get(p, "cpu_milli"));
    req->mem_mib = json_integer_value(json_object_get(p, "memory_mib"));
}

void loomd__plan_env(const active_t *a, loomd_plan_env_t *env)
{
    memset(env, 0, sizeof *env);
    if (!a->has_plan)
        return;
    const loom_rubick_config_t *c = &a->plan;
    int n = 0, w = c->plan.gpus;
    snprintf(env->text[n++], sizeof env->text[0],
             "LOOM_PLAN={\"workers\": %d, \"accumulation\": %d, \"recompute\": %s, \"zero\": %d, "
             "\"offload\": %s}",
             w, c->plan.accum, c->plan.recompute ? "true" : "false", c->plan.zero,
             c->plan.offload ? "true" : "false");
    snprintf(env->text[n++], sizeof env->text[0], "LOOM_WORLD_SIZE=%d", w);
    snprintf(env->text[n++], sizeof env->text[0], "WORLD_SIZE=%d", w);
    /* one process per node launches every rank (loom places a job on one node) */
    char *ranks = env->text[n++];
    size_t len = (size_t)snprintf(ranks, sizeof env->text[0], "LOOM_RANKS=");
    for (int k = 0; k < w && len + 8 < sizeof env->text[0]; k++)
        len += (size_t)snprintf(ranks + len, sizeof env->text[0] - len, "%s%d", k ? "," : "", k);
    snprintf(env->text[n++], sizeof env->text[0], "LOOM_CPUS=%lld",
             (long long)((c->cpu_milli + 999) / 1000));
    snprintf(env->text[n++], sizeof env->text[0], "LOOM_RECONFIGURATIONS=%d", a->reconfigs);
    for (int k = 0; k < n; k++)
        env->vars[k] = env->text[k];
}

/* -------------------------------------------------------- reconfiguring */

int loomd__reconf_apply(loomd_runner_t *r, const loom_runtime_action_t *act)
{
    active_t *a = loomd__find_active(r, (int64_t)act->id);
    if (!a || !act->config || !r->local || a->suspended || a->cancel_sent || a->requeue ||
        a->reconfiguring)
        return LOOM_ESTATE; /* Slurm jobs, and jobs on their way out, keep what they have */
    loom_err_t err;
    if (r->ops->cancel(r->exec, &a->h, &err) != LOOM_OK) {
        loom_log_warn("runner.reconfigure_failed", "job=%lld error=\"%s\"", (long long)a->id,
                      err.msg);
        return err.code;
    }
    a->reconfiguring = true;
    a->alloc = act->alloc;
    a->plan = *act->config;
    a->has_plan = true;
    snprintf(a->reconf_why, sizeof a->reconf_why, "%s", act->reason);
    json_t *run = loomd__run_json(r, a);
    loomd__store_run(r, a->id, LOOM_JOB_RUNNING, -1, NULL, run, NULL);
    json_decref(run);
    loom_log_info("job checkpointing", "job=%lld reason=\"%s\"", (long long)a->id, act->reason);
    return LOOM_OK;
}

/* The job ended while checkpointing: restart it with its new plan. False:
 * it did not checkpoint, or was cancelled meanwhile (the caller records
 * its end as usual). */
bool loomd__reconf_ended(loomd_runner_t *r, size_t i, loom_exec_outcome_t *o)
{
    active_t *a = &r->active[i];
    loom_err_t err;
    loom_job_t j;
    if (loom_store_get(r->store, a->id, &j, &err) != LOOM_OK)
        return false;
    a->reconfiguring = false;
    /* the old process is gone: what the reconfiguration gave up is free now
     * (LOOM_ESTATE when it gave up nothing: a pure grow) */
    (void)loom_runtime_reconfigured(r->rt, (uint64_t)a->id, (double)loom_time_mono_ns() / 1e9);
    if (j.state != LOOM_JOB_RUNNING || o->exit_code != 0 || o->signal != 0) {
        if (j.state == LOOM_JOB_RUNNING) { /* cancelled meanwhile: recorded as such */
            o->end = LOOM_EXEC_FAILED;
            if (o->signal)
                snprintf(o->reason, sizeof o->reason,
                         "did not checkpoint for its reconfiguration: killed by signal %d (%s) "
                         "after the grace period",
                         o->signal, strsignal(o->signal));
            else
                snprintf(o->reason, sizeof o->reason,
                         "did not checkpoint for its reconfiguration: exit code %d", o->exit_code);
        }
        loom_job_free(&j);
        return false;
    }
    a->attempt++;
    a->reconfigs++;
    memset(&a->h, 0, sizeof a->h);
    int rc = loomd__launch(r, a, &j, &err);
    loom_job_free(&j);
    if (rc != LOOM_OK) {
        char why[LOOMD_NOTE_MAX + 128];
        snprintf(why, sizeof why, "requeued: its restart after a reconfiguration failed: %.120s",
                 err.msg);
        loom_log_warn("job requeued", "job=%lld reason=\"%s\"", (long long)a->id, why);
        loomd__store_run(r, a->id, LOOM_JOB_RUNNING, LOOM_JOB_PENDING, why, NULL, NULL);
        loomd__release(r, i, true);
        return true;
    }
    char why[LOOMD_NOTE_MAX + 64];
    snprintf(why, sizeof why, "%s; restarted from its checkpoint", a->reconf_why);
    json_t *run = loomd__run_json(r, a);
    loomd__store_run(r, a->id, LOOM_JOB_RUNNING, LOOM_JOB_RUNNING, why, run, NULL);
    json_decref(run);
    loom_log_info("job reconfigured", "job=%lld workers=%d pid=%d", (long long)a->id,
                  a->plan.plan.gpus, (int)a->h.shepherd_pid);
    return true;
}
