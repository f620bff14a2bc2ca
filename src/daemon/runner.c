/* loomd's runner: store -> runtime (queue and placement policies, Gandiva)
 * -> executor.
 *
 * One thread drives the scheduling runtime (libloom's runtime part, the same
 * step `loom sim --mode dynamic` takes in virtual time). Each step it (1)
 * polls the jobs it runs, records how each ended and gives their resources
 * back, and passes on cancels the store has recorded for running jobs; (2)
 * hands the runtime the jobs submitted since the last step; (3) runs the
 * runtime's step and carries out its actions: a start marks the job RUNNING
 * and starts its process, a suspend or resume stops or continues it, a
 * reject marks a job no node can hold FAILED.
 *
 * The store is the truth: a job is marked RUNNING (with its node and GPUs)
 * before its process starts, and the executor's handle is recorded right
 * after, so a restarted loomd rebuilds the model from the RUNNING jobs and
 * adopts their processes (the shepherd's own PID file covers a crash in
 * between). Resources are given back only when the process has really
 * ended, so the model never lends a GPU that a dying job still holds.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/quota.h"
#include "daemon/runner_int.h"
#include "loom/exec.h"
#include "loom/mon.h"
#include "loom/runtime.h"
#include "loom/sched.h"
#include "loom/zoo.h"

/* Jobs read from the store per page (the largest page the store gives). */
#define LOOMD_LIST_PAGE 10000
/* How often the runtime's queue is checked against the store's (jobs
 * cancelled while pending). */
#define LOOMD_RESYNC_NS (5 * LOOM_NS_PER_S)

/* ------------------------------------------------------------ node specs */

json_t *loomd_default_node(int gpus, const char *gpu_type, uint64_t gpu_memory)
{
    char host[256] = "local";
    gethostname(host, sizeof host - 1);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    uint64_t mem = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
    return json_pack("{s:s, s:I, s:I, s:i, s:s, s:I}", "name", host, "cpus",
                     (json_int_t)(cpus > 0 ? cpus : 1), "memory_bytes", (json_int_t)mem, "gpus",
                     gpus, "gpu_type", gpu_type ? gpu_type : "virtual", "gpu_memory_bytes",
                     (json_int_t)gpu_memory);
}

int loomd_detect_gpus(int *ngpus, char *type, size_t typelen, uint64_t *memory_bytes,
                      loom_err_t *err)
{
    loom_mon_t *mon = NULL;
    loom_mon_snapshot_t snap;
    loom_mon_snapshot_init(&snap);
    int rc = loom_mon_open(&mon, NULL, err);
    if (rc == LOOM_OK)
        rc = loom_mon_read(mon, LOOM_MON_GPU, &snap, err);
    if (rc == LOOM_OK && (snap.gpu.source.status != LOOM_OK || snap.gpu.n == 0))
        rc = loom_err_set(err, LOOM_EUNAVAIL, "NVML: %s",
                          snap.gpu.source.status == LOOM_OK ? "no GPU" : snap.gpu.source.reason);
    if (rc == LOOM_OK) {
        int n = 0;
        uint64_t mem = UINT64_MAX;
        for (size_t i = 0; i < snap.gpu.n && n < LOOM_SCHED_MAX_GPUS; i++, n++) {
            const loom_mon_gpu_t *g = &snap.gpu.gpus[i];
            uint64_t m = g->field_status[LOOM_MON_GPU_F_MEMORY] == 0 ? g->memory_total_bytes : 0;
            mem = m < mem ? m : mem;
        }
        /* "NVIDIA H200" -> "h200", "NVIDIA A100-SXM4-80GB" -> "a100-sxm4-80gb" */
        const char *name = snap.gpu.gpus[0].name;
        if (strncmp(name, "NVIDIA ", 7) == 0)
            name += 7;
        size_t k = 0;
        for (const char *c = name; *c && k + 1 < typelen && k + 1 < LOOM_SCHED_NAME_MAX; c++) {
            char ch = *c;
            if (ch >= 'A' && ch <= 'Z')
                ch = (char)(ch - 'A' + 'a');
            else if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                       ch == '_' || ch == '-'))
                ch = '-';
            type[k++] = ch;
        }
        type[k] = '\0';
        if (k == 0)
            snprintf(type, typelen, "gpu");
        *ngpus = n;
        *memory_bytes = mem == UINT64_MAX ? 0 : mem;
    }
    loom_mon_snapshot_free(&snap);
    loom_mon_close(mon);
    return rc;
}

int loomd_parse_node(const char *spec, json_t **out, loom_err_t *err)
{
    json_t *n = loomd_default_node(0, NULL, 0);
    char *copy = strdup(spec), *save = NULL;
    int rc = LOOM_OK;
    for (char *kv = strtok_r(copy, ",", &save); kv && rc == LOOM_OK;
         kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            rc = loom_err_set(err, LOOM_EINVAL, "--node '%s': expected KEY=VALUE, found '%s'", spec,
                              kv);
            break;
        }
        *eq = '\0';
        const char *v = eq + 1;
        int64_t i;
        uint64_t bytes;
        if (strcmp(kv, "name") == 0 || strcmp(kv, "gpu_type") == 0) {
            if (!*v || strlen(v) >= LOOM_SCHED_NAME_MAX)
                rc = loom_err_set(err, LOOM_EINVAL, "--node '%s': %s: expected 1..%d characters",
                                  spec, kv, LOOM_SCHED_NAME_MAX - 1);
            else
                json_object_set_new(n, kv, json_string(v));
        } else if (strcmp(kv, "cpus") == 0 || strcmp(kv, "gpus") == 0) {
            if ((rc = loom_parse_i64(v, 0, strcmp(kv, "gpus") == 0 ? LOOM_SCHED_MAX_GPUS : 100000,
                                     &i, kv, err)) == LOOM_OK)
                json_object_set_new(n, kv, json_integer(i));
        } else if (strcmp(kv, "memory") == 0 || strcmp(kv, "gpu_memory") == 0) {
            if ((rc = loom_parse_size(v, &bytes, err)) == LOOM_OK) {
                char key[32];
                snprintf(key, sizeof key, "%s_bytes", kv);
                json_object_set_new(n, key, json_integer((json_int_t)bytes));
            }
        } else {
            rc = loom_err_set(err, LOOM_EINVAL,
                              "--node '%s': unknown key '%s' (expected name, cpus, memory, gpus, "
                              "gpu_type, gpu_memory)",
                              spec, kv);
        }
    }
    free(copy);
    if (rc != LOOM_OK) {
        json_decref(n);
        return rc;
    }
    *out = n;
    return LOOM_OK;
}

static int build_cluster(loom_sched_cluster_t *c, const json_t *nodes, loom_err_t *err)
{
    loom_sched_cluster_init(c);
    size_t i;
    json_t *n;
    if (!json_is_array(nodes) || json_array_size(nodes) == 0)
        return loom_err_set(err, LOOM_EINVAL, "nodes: expected a non-empty list");
    json_array_foreach(nodes, i, n)
    {
        const char *name = json_string_value(json_object_get(n, "name"));
        const char *type = json_string_value(json_object_get(n, "gpu_type"));
        int64_t cpus = json_integer_value(json_object_get(n, "cpus"));
        int64_t mem = json_integer_value(json_object_get(n, "memory_bytes"));
        int64_t gpus = json_integer_value(json_object_get(n, "gpus"));
        int64_t gmem = json_integer_value(json_object_get(n, "gpu_memory_bytes"));
        if (!name || cpus <= 0)
            return loom_err_set(err, LOOM_EINVAL, "nodes/%zu: expected a name and cpus > 0", i);
        int rc = loom_sched_cluster_add_node(c, name, cpus * 1000, mem >> 20, (int)gpus,
                                             gpus ? type : NULL, gmem >> 20, NULL, err);
        if (rc != LOOM_OK)
            return loom_err_prefix(err, "nodes/%zu", i);
    }
    return LOOM_OK;
}

static const loom_sched_cluster_t *model(const loomd_runner_t *r)
{
    return loom_runtime_cluster(r->rt);
}

/* The runtime's clock: monotonic seconds. */
static double rt_now(void)
{
    return (double)loom_time_mono_ns() / 1e9;
}

/* ---------------------------------------------------------- job -> request */

/* A stored job's or a submission's resources (the same members) as a
 * request: MiB rounded up, a GPU share whole under Slurm. */
#define REQ_OF(r, j, q)                                                                            \
    req_of(r, (j)->cpus, (j)->memory_bytes, (j)->gpus, (j)->gpu_share_milli,                       \
           (j)->gpu_memory_bytes, (j)->gpu_type, q)

static void req_of(const loomd_runner_t *r, int64_t cpus, uint64_t mem, int64_t gpus, int64_t share,
                   uint64_t gpu_mem, const char *type, loom_sched_req_t *q)
{
    memset(q, 0, sizeof *q);
    q->cpu_milli = cpus * 1000;
    q->mem_mib = (int64_t)((mem + (1u << 20) - 1) >> 20);
    if (share > 0 && gpus <= 1) {
        /* Slurm has no fractional GPU: a share holds a whole one there. */
        q->num_gpus = 1;
        q->gpu_milli = r->slurm ? LOOM_SCHED_MILLI : (int32_t)share;
    } else if (gpus > 0) {
        q->num_gpus = gpus > INT32_MAX ? INT32_MAX : (int)gpus;
        q->gpu_milli = LOOM_SCHED_MILLI;
    }
    if (q->num_gpus)
        q->gpu_mem_mib = (int64_t)((gpu_mem + (1u << 20) - 1) >> 20);
    q->gpu_types = type ? loom_sched_cluster_type_mask(model(r), type) : 0;
}

static void job_req(const loomd_runner_t *r, const loom_job_t *j, loom_sched_req_t *q)
{
    REQ_OF(r, j, q);
}

/* A stored reason's name back to the runtime's (NONE: not one of them). */
static loom_runtime_reason_t reason_known(const char *text)
{
    for (int k = LOOM_RUNTIME_REASON_RESOURCES; text && k <= LOOM_RUNTIME_REASON_LAST; k++)
        if (strcmp(text, loom_runtime_reason_name((loom_runtime_reason_t)k)) == 0)
            return (loom_runtime_reason_t)k;
    return LOOM_RUNTIME_REASON_NONE;
}

/* A stored job as the runtime sees it (times on its clock). LOOM_ENOMEM
 * when its account could not be numbered: not to be handed over so. */
static int job_rt(loomd_runner_t *r, const loom_job_t *j, loom_runtime_job_t *out)
{
    uint32_t account;
    int rc = loomd_account_id(r->accounts, j->account, &account);
    *out =
        (loom_runtime_job_t){.id = (uint64_t)j->id,
                             .submit_s = (double)(j->submit_time_ns - r->real_minus_mono_ns) / 1e9,
                             .priority = (int)j->priority,
                             .time_limit_s = (double)j->time_limit_s,
                             /* fair share and quotas: by owner (docs/security.md) */
                             .user = j->uid >= 0 ? (uint32_t)j->uid : 0,
                             .account = account,
                             .name_key = loom_runtime_name_key(j->name), /* singleton */
                             .recorded = reason_known(j->reason)};
    /* no shortening for a warm start: the similarity-derived zoo.speedup
     * label had no basis (issue 33; docs/zoo.md, "Warm starts and the
     * queue") */
    job_req(r, j, &out->req);
    /* the runtime copies the spec: one scratch serves every call */
    if (loomd__reconfig_of(j, &r->rb_spec))
        out->reconfig = &r->rb_spec;
    return rc;
}

/* ------------------------------------------------------------- bookkeeping */

void loomd__account(loomd_runner_t *r)
{
    int64_t now = loom_time_mono_ns();
    r->gpu_busy_milli_s +=
        (double)model(r)->gpu_milli_used * (double)(now - r->last_account_ns) / 1e9;
    r->last_account_ns = now;
}

static active_t *add_active(loomd_runner_t *r)
{
    if (loom_vec_reserve((void **)&r->active, &r->cap, r->nactive + 1, sizeof *r->active, 64))
        return NULL;
    active_t *a = &r->active[r->nactive++];
    memset(a, 0, sizeof *a);
    return a;
}

active_t *loomd__find_active(loomd_runner_t *r, int64_t id)
{
    for (size_t i = 0; i < r->nactive; i++)
        if (r->active[i].id == id)
            return &r->active[i];
    return NULL;
}

json_t *loomd__run_json(const loomd_runner_t *r, const active_t *a)
{
    json_t *gpus = json_array();
    for (int g = 0; g < a->alloc.ngpus; g++)
        json_array_append_new(gpus, json_integer(a->alloc.gpus[g]));
    json_t *o = json_pack("{s:s, s:o, s:I, s:s, s:b}", "node", model(r)->nodes[a->alloc.node].name,
                          "gpus", gpus, "gpu_share", (json_int_t)a->alloc.req.gpu_milli, "executor",
                          r->ops->name, "suspended", a->suspended);
    if (a->gandiva[0])
        json_object_set_new(o, "gandiva", json_string(a->gandiva));
    loomd__plan_json(a, o);
    json_object_set_new(o, "attempt", json_integer(a->attempt > 0 ? a->attempt : 1));
    if (a->requeue)
        json_object_set_new(o, "giving_up", json_true());
    if (a->h.ext_id[0]) {
        json_object_set_new(o, "slurm_job_id", json_string(a->h.ext_id));
        json_object_set_new(o, "slurm_state", json_string(a->h.ext_state));
        json_object_set_new(o, "slurm_reason", json_string(a->h.ext_reason));
        json_object_set_new(o, "stdout", json_string(a->h.stdout_path));
        json_object_set_new(o, "stderr", json_string(a->h.stderr_path));
    }
    if (a->h.shepherd_pid > 0) {
        json_object_set_new(o, "shepherd_pid", json_integer(a->h.shepherd_pid));
        json_object_set_new(o, "shepherd_start", json_integer((json_int_t)a->h.shepherd_start));
        json_object_set_new(o, "dir", json_string(a->h.dir));
        json_object_set_new(o, "stdout", json_string(a->h.stdout_path));
        json_object_set_new(o, "stderr", json_string(a->h.stderr_path));
        json_object_set_new(o, "cgroup", json_string(a->h.cgroup));
        json_object_set_new(o, "limits", json_string(a->h.cgroup_note));
    }
    return o;
}

int loomd__store_run(loomd_runner_t *r, int64_t id, int expect, int to, const char *reason,
                     json_t *run, loom_err_t *err)
{
    char *text = run ? json_dumps(run, JSON_COMPACT) : NULL;
    int rc = loom_store_transition(r->store, id, expect, to, reason, text, NULL, err);
    free(text);
    return rc;
}

/* The job leaves loomd's hands (ended, lost) or goes back to the queue
 * (requeue): its resources go back to the model. */
void loomd__release(loomd_runner_t *r, size_t i, bool back_to_queue)
{
    loomd__account(r);
    uint64_t id = (uint64_t)r->active[i].id;
    if (back_to_queue)
        loom_runtime_requeue(r->rt, id, rt_now());
    else
        loom_runtime_remove(r->rt, id, rt_now());
    r->active[i] = r->active[--r->nactive];
}

/* -------------------------------------------------------------- one step */

static int end_state(loom_exec_end_t e)
{
    switch (e) {
    case LOOM_EXEC_COMPLETED: return LOOM_JOB_COMPLETED;
    case LOOM_EXEC_TIMEOUT: return LOOM_JOB_TIMEOUT;
    case LOOM_EXEC_CANCELLED: return LOOM_JOB_CANCELLED;
    default: return LOOM_JOB_FAILED;
    }
}

static void finish(loomd_runner_t *r, size_t i, const loom_exec_outcome_t *o)
{
    active_t *a = &r->active[i];
    json_t *run = loomd__run_json(r, a);
    json_t *out = json_pack("{s:s, s:s, s:I, s:f, s:f, s:I}", "end", loom_exec_end_name(o->end),
                            "reason", o->reason, "exit_code", (json_int_t)o->exit_code,
                            "cpu_user_s", o->cpu_user_us / 1e6, "cpu_sys_s", o->cpu_sys_us / 1e6,
                            "max_rss_bytes", (json_int_t)o->max_rss_kb * 1024);
    if (o->signal)
        json_object_set_new(out, "signal", json_integer(o->signal));
    if (o->end_ns) { /* when the process really ended (a cancel's event comes earlier) */
        char t[32];
        loom_time_format_rfc3339(o->end_ns, t);
        json_object_set_new(out, "ended_at", json_string(t));
    }
    json_object_set_new(run, "outcome", out);
    /* An ended job is not suspended, even when its process exited just as
     * time-slicing stopped its group (the stop then found nothing to stop). */
    json_object_set_new(run, "suspended", json_false());
    loom_err_t err;
    int rc = loomd__store_run(r, a->id, LOOM_JOB_RUNNING, end_state(o->end), o->reason, run, &err);
    if (rc == LOOM_ESTATE) /* cancelled through the store meanwhile: keep its state */
        rc = loomd__store_run(r, a->id, -1, -1, NULL, run, &err);
    if (rc != LOOM_OK)
        loom_log_error("runner.record_failed", "job=%lld error=\"%s\"", (long long)a->id, err.msg);
    loom_log_info("job ended", "job=%lld end=%s reason=\"%s\"", (long long)a->id,
                  loom_exec_end_name(o->end), o->reason);
    json_decref(run);
    r->ended++;
    loomd__release(r, i, false);
}

/* Gives a job that never ran back to the queue. */
static void requeue(loomd_runner_t *r, size_t i, const char *why)
{
    loom_log_info("job requeued", "job=%lld reason=\"%s\"", (long long)r->active[i].id, why);
    loomd__store_run(r, r->active[i].id, LOOM_JOB_RUNNING, LOOM_JOB_PENDING, why, NULL, NULL);
    loomd__release(r, i, true);
}

/* Slurm: re-reads the partition's nodes. A node that is down, drained or
 * gone takes no new placement; its running jobs are left to Slurm (which
 * ends them with NODE_FAIL), and the jobs Slurm has not started there yet
 * are cancelled in Slurm and queued again in loom. A node that returns
 * takes placements again. */
static void refresh_nodes(loomd_runner_t *r)
{
    if (!r->slurm || loom_time_mono_ns() < r->next_refresh_ns)
        return;
    r->next_refresh_ns = loom_time_mono_ns() + r->refresh_ns;
    json_t *nodes = NULL;
    loom_err_t err;
    if (loom_exec_slurm_nodes(r->slurm, &nodes, &err) != LOOM_OK) {
        loom_log_warn("runner.nodes_unreadable", "error=\"%s\"", err.msg);
        return;
    }
    for (size_t k = 0; k < model(r)->nnodes; k++) {
        bool down = true;
        const char *state = "gone";
        size_t i;
        json_t *n;
        json_array_foreach(nodes, i, n)
        {
            if (strcmp(json_string_value(json_object_get(n, "name")), model(r)->nodes[k].name) ==
                0) {
                down = !json_is_true(json_object_get(n, "available"));
                state = json_string_value(json_object_get(n, "state"));
            }
        }
        loom_log_debug("runner.node_state", "node=%s state=%s", model(r)->nodes[k].name, state);
        if (down != loom_runtime_is_down(r->rt, k))
            loom_log_info(down ? "node unavailable" : "node available", "node=%s state=%s",
                          model(r)->nodes[k].name, state);
        loom_runtime_set_down(r->rt, k, down);
        if (!down)
            continue;
        for (size_t a = 0; a < r->nactive; a++) {
            active_t *x = &r->active[a];
            if (x->alloc.node == (int)k && !x->requeue && !x->cancel_sent &&
                strcmp(x->h.ext_state, "PENDING") == 0) {
                /* Recorded before the cancel: a loomd restarted after it
                 * knows the Slurm job's end is a give-up, not the job's. */
                x->requeue = true;
                json_t *run = loomd__run_json(r, x);
                loomd__store_run(r, x->id, LOOM_JOB_RUNNING, -1, NULL, run, NULL);
                json_decref(run);
                r->ops->cancel(r->exec, &x->h, NULL);
            }
        }
    }
    json_decref(nodes);
}

static void poll_running(loomd_runner_t *r)
{
    if (r->slurm && r->nactive > 0) /* one squeue for all, not one scontrol per job */
        loom_exec_slurm_sync(r->slurm, NULL);
    for (size_t i = 0; i < r->nactive;) {
        active_t *a = &r->active[i];
        loom_err_t err;
        if (!a->cancel_sent) {
            loom_job_t j;
            if (loom_store_get(r->store, a->id, &j, &err) == LOOM_OK) {
                /* A cancel that failed (scancel timing out on a loaded
                 * controller) is tried again next step, not forgotten. */
                if (j.state == LOOM_JOB_CANCELLED) {
                    if (r->ops->cancel(r->exec, &a->h, &err) == LOOM_OK)
                        a->cancel_sent = true;
                    else
                        loom_log_warn("runner.cancel_failed", "job=%lld error=\"%s\"",
                                      (long long)a->id, err.msg);
                }
                loom_job_free(&j);
            }
        }
        loom_exec_outcome_t o;
        char seen[sizeof a->h.ext_state + sizeof a->h.ext_reason];
        snprintf(seen, sizeof seen, "%s|%s", a->h.ext_state, a->h.ext_reason);
        int rc = r->ops->poll(r->exec, &a->h, &o, &err);
        if (rc == 1 && a->requeue) {
            requeue(r, i, "requeued: its node went down before Slurm started it");
            continue;
        }
        if (rc == 1 && a->reconfiguring && loomd__reconf_ended(r, i, &o))
            continue; /* restarted, or back in the queue */
        if (rc == 1) {
            finish(r, i, &o); /* a[i] now holds another job: do not advance */
            continue;
        }
        char now[sizeof seen];
        snprintf(now, sizeof now, "%s|%s", a->h.ext_state, a->h.ext_reason);
        if (strcmp(seen, now) != 0) { /* Slurm's state or reason changed: keep it on the job */
            json_t *run = loomd__run_json(r, a);
            loomd__store_run(r, a->id, LOOM_JOB_RUNNING, -1, NULL, run, NULL);
            json_decref(run);
        }
        i++;
    }
}

/* The placement attempt a job starts now: 1, or one more than the run
 * record of an earlier placement it was requeued from says. */
static int next_attempt(const loom_job_t *j)
{
    if (!j->run_json)
        return 1;
    json_t *run = json_loads(j->run_json, 0, NULL);
    json_int_t prev = json_integer_value(json_object_get(run, "attempt"));
    json_decref(run);
    return (prev > 0 ? (int)prev : 1) + 1;
}

/* The idempotency tag of one placement (Slurm's --comment): loom:<id>
 * for the first, loom:<id>.<attempt> after, so that a restarted loomd
 * never adopts a Slurm job it gave up for a later placement's. */
static void job_tag(int64_t id, int attempt, char *out, size_t len)
{
    if (attempt > 1)
        snprintf(out, len, "loom:%lld.%d", (long long)id, attempt);
    else
        snprintf(out, len, "loom:%lld", (long long)id);
}

/* Starts a's process for job j on a->alloc (a reconfigurable job: with its
 * plan in the environment, loomd__plan_env). */
int loomd__launch(loomd_runner_t *r, active_t *a, const loom_job_t *j, loom_err_t *err)
{
    const loom_sched_alloc_t *place = &a->alloc;
    int gpus[LOOM_SCHED_MAX_GPUS];
    size_t ngpus = 0;
    if (place->req.gpu_milli >= LOOM_SCHED_MILLI)
        for (int g = 0; g < place->ngpus; g++)
            gpus[ngpus++] = place->gpus[g];
    else if (place->ngpus == 1) /* a share: the job sees its one GPU */
        gpus[ngpus++] = place->gpus[0];
    char tag[48];
    job_tag(j->id, a->attempt, tag, sizeof tag);
    loomd_plan_env_t env;
    loomd__plan_env(a, &env);
    int64_t limit = j->time_limit_s * LOOM_NS_PER_S;
    if (limit > 0 && a->reconfigs > 0 && j->start_time_ns > 0) { /* restarted: what is left */
        int64_t left = limit - (loom_time_real_ns() - j->start_time_ns);
        limit = left > LOOM_NS_PER_S ? left : LOOM_NS_PER_S;
    }
    loom_exec_job_t ej = {
        .id = j->id,
        .name = j->name,
        .format = j->format == LOOM_JOB_FORMAT_YAML ? LOOM_EXEC_YAML : LOOM_EXEC_BATCH,
        .script = j->script,
        .env = a->has_plan ? env.vars : NULL,
        .cpus_milli = a->has_plan ? place->req.cpu_milli : j->cpus * 1000,
        .memory_bytes = a->has_plan ? (uint64_t)place->req.mem_mib << 20 : j->memory_bytes,
        .gpus = gpus,
        .n_gpus = ngpus,
        .gpu_share_milli = place->req.gpu_milli < LOOM_SCHED_MILLI ? place->req.gpu_milli : 0,
        .time_limit_ns = limit,
        .node = model(r)->nodes[place->node].name,
        .tag = tag,
        .options_json = j->options_json,
        .run_as_owner = j->uid >= 0 && (uid_t)j->uid != geteuid(),
        .uid = (uid_t)j->uid,
        .gid = (gid_t)j->gid};
    return r->ops->start(r->exec, &ej, &a->h, err);
}

/* START: the runtime placed the job; mark it RUNNING and start its process.
 * Anything but LOOM_OK and the runtime forgets the job and its place. */
static int start_job(loomd_runner_t *r, const loom_runtime_action_t *act)
{
    loom_err_t err;
    loom_job_t j;
    if (loom_store_get(r->store, (int64_t)act->id, &j, &err) != LOOM_OK)
        return err.code;
    if (j.state != LOOM_JOB_PENDING) { /* cancelled meanwhile */
        loom_job_free(&j);
        return LOOM_ESTATE;
    }
    active_t *a = add_active(r);
    if (!a) {
        loom_job_free(&j);
        return LOOM_ENOMEM;
    }
    const loom_sched_alloc_t *place = &act->alloc;
    const char *node = model(r)->nodes[place->node].name;
    a->id = j.id;
    a->alloc = *place;
    a->attempt = next_attempt(&j);
    if (act->config) {
        a->has_plan = true;
        a->plan = *act->config;
    }
    json_t *run = loomd__run_json(r, a);
    int rc = loomd__store_run(r, j.id, LOOM_JOB_PENDING, LOOM_JOB_RUNNING, act->reason, run, &err);
    json_decref(run);
    if (rc != LOOM_OK) { /* cancelled meanwhile, or the store failed: not started */
        r->nactive--;
        loom_job_free(&j);
        return rc;
    }
    rc = loomd__launch(r, a, &j, &err);
    loom_job_free(&j);
    if (rc != LOOM_OK) {
        loom_log_warn("job failed to start", "job=%lld error=\"%s\"", (long long)a->id, err.msg);
        loomd__store_run(r, a->id, LOOM_JOB_RUNNING, LOOM_JOB_FAILED, err.msg, NULL, NULL);
        r->failed_to_start++;
        r->nactive--;
        return rc;
    }
    run = loomd__run_json(r, a);
    if (loomd__store_run(r, a->id, LOOM_JOB_RUNNING, -1, NULL, run, &err) != LOOM_OK)
        loom_log_warn("runner.handle_not_recorded", "job=%lld error=\"%s\"", (long long)a->id,
                      err.msg);
    json_decref(run);
    r->started++;
    loom_log_info("job started", "job=%lld node=%s pid=%d slurm_id=%s", (long long)a->id, node,
                  (int)a->h.shepherd_pid, a->h.ext_id);
    return LOOM_OK;
}

/* Carries out one action of the runtime's step. */
static int apply(void *ctx, const loom_runtime_action_t *act)
{
    loomd_runner_t *r = ctx;
    switch (act->kind) {
    case LOOM_RUNTIME_START: return start_job(r, act);
    case LOOM_RUNTIME_REJECT:
        loomd__store_run(r, (int64_t)act->id, LOOM_JOB_PENDING, LOOM_JOB_FAILED, act->reason, NULL,
                         NULL);
        return LOOM_OK;
    case LOOM_RUNTIME_CANCEL: { /* refused (the store failed): judged again later */
        loom_err_t err;
        int rc = loomd__store_run(r, (int64_t)act->id, LOOM_JOB_PENDING, LOOM_JOB_CANCELLED,
                                  act->reason, NULL, &err);
        if (rc != LOOM_OK)
            loom_log_error("runner.dependency_end_failed", "job=%lld error=\"%s\"",
                           (long long)act->id, err.msg);
        return rc;
    }
    case LOOM_RUNTIME_RECONFIGURE: return loomd__reconf_apply(r, act);
    default: return loomd__gandiva_apply(r, act);
    }
}

/* Hands the runtime the jobs submitted since the last step (every one of
 * them: the queue the step orders is every pending job). Ids only grow, so
 * the new ones are those above the highest read so far. */
static void read_pending(loomd_runner_t *r)
{
    loom_store_filter_t f = {
        .state_mask = 1u << LOOM_JOB_PENDING, .after_id = r->seen_id, .limit = LOOMD_LIST_PAGE};
    for (;;) {
        loom_job_list_t list;
        loom_err_t err;
        if (loom_store_list(r->store, &f, &list, &err) != LOOM_OK) {
            loom_log_error("runner.list_failed", "error=\"%s\"", err.msg);
            return;
        }
        bool again = false; /* out of memory: this job and the rest at the next step */
        for (size_t i = 0; i < list.n && !again; i++) {
            loom_runtime_job_t rj;
            int rc = job_rt(r, &list.jobs[i], &rj);
            if (rc == LOOM_OK)
                rc = loomd__job_blocks(r, &list.jobs[i], &rj);
            if (rc == LOOM_OK && loom_runtime_submit(r->rt, &rj, &err) != LOOM_OK)
                rc = err.code == LOOM_EEXIST ? LOOM_OK : err.code;
            if (rc == LOOM_ENOMEM) {
                loom_log_error("runner.queue_failed",
                               "job=%lld error=\"out of memory\" "
                               "note=\"tried again at the next step\"",
                               (long long)list.jobs[i].id);
                again = true;
                break;
            }
            if (rc != LOOM_OK)
                loom_log_error("runner.queue_failed", "job=%lld error=\"%s\"",
                               (long long)list.jobs[i].id, err.msg);
            r->seen_id = list.jobs[i].id > r->seen_id ? list.jobs[i].id : r->seen_id;
        }
        f.after_id = list.next_after_id;
        loom_job_list_free(&list);
        if (!f.after_id || again)
            break;
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Jobs cancelled while pending leave the store's queue without the
 * runtime knowing (it would drop them when it tried to start them): when
 * the counts differ, the runtime forgets those the store no longer has
 * pending. */
static void resync_pending(loomd_runner_t *r)
{
    int64_t now = loom_time_mono_ns();
    loom_store_stats_t st;
    if (now < r->next_resync_ns || loom_store_stats(r->store, &st, NULL) != LOOM_OK)
        return;
    r->next_resync_ns = now + LOOMD_RESYNC_NS;
    size_t n = loom_runtime_pending_ids(r->rt, NULL, 0);
    if (st.jobs_by_state[LOOM_JOB_PENDING] >= n)
        return;
    uint64_t *ids = malloc((n + 1) * sizeof *ids);
    int64_t *keep = NULL;
    size_t nkeep = 0, cap = 0;
    loom_store_filter_t f = {.state_mask = 1u << LOOM_JOB_PENDING, .limit = LOOMD_LIST_PAGE};
    while (ids) {
        loom_job_list_t list;
        if (loom_store_list(r->store, &f, &list, NULL) != LOOM_OK)
            break;
        if (loom_vec_reserve((void **)&keep, &cap, nkeep + list.n, sizeof *keep, 64)) {
            loom_job_list_free(&list);
            break;
        }
        for (size_t i = 0; i < list.n; i++)
            keep[nkeep++] = list.jobs[i].id; /* ascending: the store lists by id */
        f.after_id = list.next_after_id;
        loom_job_list_free(&list);
        if (!f.after_id) {
            loom_runtime_pending_ids(r->rt, ids, n);
            for (size_t i = 0; i < n; i++) {
                int64_t id = (int64_t)ids[i];
                if (!keep || !bsearch(&id, keep, nkeep, sizeof *keep, cmp_i64))
                    loom_runtime_remove(r->rt, ids[i], rt_now());
            }
            break;
        }
    }
    free(ids);
    free(keep);
}

/* Writes the pending reasons the step changed (only those: a queue of
 * 100,000 that waits as it did costs no write). */
static void store_reasons(loomd_runner_t *r)
{
    const loom_runtime_reason_change_t *ch;
    size_t n = loom_runtime_reason_changes(r->rt, &ch);
    if (n == 0)
        return;
    int64_t *ids = malloc(n * sizeof *ids);
    const char **why = malloc(n * sizeof *why);
    loom_err_t err = {0};
    for (size_t i = 0; ids && why && i < n; i++) {
        ids[i] = (int64_t)ch[i].id;
        why[i] = loom_runtime_reason_name(ch[i].reason);
    }
    int rc = ids && why ? loom_store_set_reasons(r->store, ids, why, n, &err)
                        : loom_err_set(&err, LOOM_ENOMEM, "out of memory");
    if (rc != LOOM_OK)
        loom_log_warn("runner.reasons_not_stored", "jobs=%zu error=\"%s\"", n, err.msg);
    free(ids);
    free(why);
}

/* ------------------------------------------------------------ the thread */

#define MIN_GAP_NS (10 * LOOM_NS_PER_MS)

static void step(loomd_runner_t *r)
{
    loomd__account(r);
    refresh_nodes(r);
    poll_running(r);
    read_pending(r);
    resync_pending(r);
    if (r->pack_check)
        loomd__gandiva_introspect(r);
    loomd__account(r);
    loom_runtime_step(r->rt, rt_now(), apply, r);
    store_reasons(r);
}

static void *runner_main(void *arg)
{
    loomd_runner_t *r = arg;
    pthread_mutex_lock(&r->wmu);
    while (!r->stop) {
        r->wake = false;
        pthread_mutex_unlock(&r->wmu);
        pthread_mutex_lock(&r->mu);
        step(r);
        r->steps++;
        pthread_mutex_unlock(&r->mu);
        pthread_mutex_lock(&r->wmu);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t now = (int64_t)ts.tv_sec * LOOM_NS_PER_S + ts.tv_nsec;
        int64_t t = now + r->tick_ns;
        ts.tv_sec = t / LOOM_NS_PER_S;
        ts.tv_nsec = t % LOOM_NS_PER_S;
        while (!r->stop && !r->wake && pthread_cond_timedwait(&r->cv, &r->wmu, &ts) != ETIMEDOUT) {
        }
        /* Under a burst of submissions every commit wakes the runner: at
         * most one step per MIN_GAP, so a step's reading of the queue is
         * shared by all the jobs that arrived meanwhile. */
        int64_t gap = now + MIN_GAP_NS - loom_time_mono_ns();
        if (!r->stop && gap > 0) {
            pthread_mutex_unlock(&r->wmu);
            loom_time_sleep_until_ns(loom_time_mono_ns() + gap);
            pthread_mutex_lock(&r->wmu);
        }
    }
    pthread_mutex_unlock(&r->wmu);
    return NULL;
}

/* Puts one job the store shows RUNNING (or CANCELLED while it ran) back
 * into the model and adopts its process. */
static void recover_one(loomd_runner_t *r, loom_job_t *j)
{
    loom_err_t err;
    json_t *run = j->run_json ? json_loads(j->run_json, 0, NULL) : NULL;
    const char *node = json_string_value(json_object_get(run, "node"));
    int idx = -1;
    for (size_t k = 0; node && k < model(r)->nnodes; k++)
        if (strcmp(model(r)->nodes[k].name, node) == 0)
            idx = (int)k;
    loom_runtime_job_t rj;
    if (job_rt(r, j, &rj) != LOOM_OK) /* it runs: adopted, though its account's quota misses it */
        loom_log_warn("runner.recover_account", "job=%lld error=\"out of memory\"",
                      (long long)j->id);
    loomd__plan_req(run, &rj.req); /* a reconfigured job holds its plan's resources */
    loom_sched_alloc_t place = {.node = idx < 0 ? 0 : idx, .req = rj.req};
    json_t *g;
    size_t gi;
    json_array_foreach(json_object_get(run, "gpus"), gi, g)
    {
        if (place.ngpus < LOOM_SCHED_MAX_GPUS)
            place.gpus[place.ngpus++] = (uint8_t)json_integer_value(g);
    }
    active_t *a = add_active(r);
    if (!a) {
        json_decref(run);
        return;
    }
    a->id = j->id;
    a->alloc = place;
    a->h.job_id = j->id;
    a->h.shepherd_pid = (pid_t)json_integer_value(json_object_get(run, "shepherd_pid"));
    a->h.shepherd_start = (uint64_t)json_integer_value(json_object_get(run, "shepherd_start"));
    const char *sid = json_string_value(json_object_get(run, "slurm_job_id"));
    if (sid)
        snprintf(a->h.ext_id, sizeof a->h.ext_id, "%s", sid);
    json_int_t attempt = json_integer_value(json_object_get(run, "attempt"));
    a->attempt = attempt > 0 ? (int)attempt : 1;
    job_tag(j->id, a->attempt, a->h.tag, sizeof a->h.tag);
    a->requeue = json_is_true(json_object_get(run, "giving_up"));
    loomd__plan_read(a, run);
    if (json_is_true(json_object_get(run, "suspended"))) {
        /* It stays stopped; its place is taken back when it resumes. */
        a->suspended = true;
        if (idx < 0 || r->ops->adopt(r->exec, &a->h, &err) != LOOM_OK ||
            loom_runtime_adopt(r->rt, &rj, &place, true, rt_now(), &err) != LOOM_OK) {
            loomd__store_run(r, j->id, LOOM_JOB_RUNNING, LOOM_JOB_FAILED,
                             "lost while suspended across a restart", NULL, NULL);
            r->nactive--;
        }
    } else if (idx < 0 || loom_runtime_adopt(r->rt, &rj, &place, false, rt_now(), &err)) {
        /* Its node is no longer configured, or the model cannot hold it:
         * stop it rather than over-commit. */
        r->ops->adopt(r->exec, &a->h, NULL);
        r->ops->cancel(r->exec, &a->h, NULL);
        loomd__store_run(r, j->id, LOOM_JOB_RUNNING, LOOM_JOB_FAILED,
                         "lost its placement across a restart (node no longer configured)", NULL,
                         NULL);
        r->nactive--;
    } else {
        int arc = r->ops->adopt(r->exec, &a->h, &err);
        if (r->slurm && arc == LOOM_ENOTFOUND)
            arc = LOOM_ESTATE; /* no Slurm job carries its tag: never submitted */
        if (arc == LOOM_ESTATE) {
            /* Marked RUNNING, but loomd died before starting it: nothing
             * ran, so it waits again in the queue (the first step reads
             * it with the other pending jobs). */
            loom_log_info("job requeued", "job=%lld reason=\"%s\"", (long long)j->id, err.msg);
            loomd__store_run(r, j->id, LOOM_JOB_RUNNING, LOOM_JOB_PENDING,
                             "requeued: loomd stopped before the job started", NULL, NULL);
            loomd__release(r, r->nactive - 1, false);
        } else if (arc != LOOM_OK)
            loom_log_warn("job lost while loomd was down", "job=%lld error=\"%s\"",
                          (long long)j->id, err.msg);
        else {
            loom_log_info("job adopted", "job=%lld pid=%d slurm_id=%s", (long long)j->id,
                          (int)a->h.shepherd_pid, a->h.ext_id);
            /* Given up before the crash: the cancel may not have reached
             * Slurm (scancel of an ended job is harmless). */
            if (a->requeue)
                r->ops->cancel(r->exec, &a->h, NULL);
        }
    }
    json_decref(run);
}

static bool cancelled_unfinished(const loom_job_t *j)
{
    json_t *run = j->run_json ? json_loads(j->run_json, 0, NULL) : NULL;
    bool started = json_integer_value(json_object_get(run, "shepherd_pid")) > 0 ||
                   json_is_string(json_object_get(run, "slurm_job_id"));
    bool ended = json_object_get(run, "outcome") != NULL;
    json_decref(run);
    return started && !ended;
}

/* Rebuilds the model from the jobs whose processes may run, and adopts
 * them: every RUNNING job, and CANCELLED ones whose end was not recorded
 * (the next step sees them cancelled and stops them). */
static void recover(loomd_runner_t *r)
{
    static const int states[] = {LOOM_JOB_RUNNING, LOOM_JOB_CANCELLED};
    for (size_t s = 0; s < 2; s++) {
        loom_store_filter_t f = {.state_mask = 1u << states[s], .limit = LOOMD_LIST_PAGE};
        for (;;) {
            loom_job_list_t list;
            loom_err_t err;
            if (loom_store_list(r->store, &f, &list, &err) != LOOM_OK) {
                loom_log_error("runner.recover_failed", "error=\"%s\"", err.msg);
                return;
            }
            for (size_t i = 0; i < list.n; i++)
                if (states[s] == LOOM_JOB_RUNNING || cancelled_unfinished(&list.jobs[i]))
                    recover_one(r, &list.jobs[i]);
            f.after_id = list.next_after_id;
            loom_job_list_free(&list);
            if (!f.after_id)
                break;
        }
    }
}

static void wake_hook(void *ctx)
{
    loomd_runner_wake(ctx);
}

/* The executor, and the nodes its cluster model is made of (*nodes: the
 * configured ones, or Slurm's partition, owned in *owned). */
static int open_executor(loomd_runner_t *r, const loomd_runner_config_t *cfg, const json_t **nodes,
                         json_t **owned, loom_err_t *err)
{
    int rc;
    *nodes = cfg->nodes;
    *owned = NULL;
    if (cfg->executor && strcmp(cfg->executor, "slurm") == 0) {
        if (cfg->timeslice_ns > 0 || cfg->pack_check)
            return loom_err_set(err, LOOM_EINVAL,
                                "--timeslice and --pack-check need the local executor (Slurm "
                                "jobs cannot be stopped and resumed by loomd)");
        /* The cluster model mirrors the partition's nodes. */
        loom_exec_slurm_config_t scfg = {.jobs_dir = cfg->jobs_dir,
                                         .partition = cfg->slurm_partition};
        if ((rc = loom_exec_slurm_new(&scfg, &r->slurm, err)) != LOOM_OK)
            return rc;
        r->ops = &loom_exec_slurm_ops;
        r->exec = r->slurm;
        if ((rc = loom_exec_slurm_nodes(r->slurm, owned, err)) != LOOM_OK)
            return loom_err_prefix(err, "slurm: cannot read the partition's nodes");
        size_t i;
        json_t *n;
        json_array_foreach(*owned, i, n)
        {
            json_object_set_new(n, "gpu_type", json_string("gpu"));
        }
        if (json_array_size(*owned) == 0)
            return loom_err_set(err, LOOM_EUNAVAIL, "slurm: partition '%s' has no nodes",
                                cfg->slurm_partition ? cfg->slurm_partition : "(default)");
        *nodes = *owned;
        r->refresh_ns = cfg->node_refresh_ns > 0 ? cfg->node_refresh_ns : 5 * LOOM_NS_PER_S;
        return LOOM_OK;
    }
    if (cfg->executor && strcmp(cfg->executor, "local") != 0)
        return loom_err_set(err, LOOM_EINVAL, "executor '%s': expected local or slurm",
                            cfg->executor);
    loom_exec_config_t ecfg = {.jobs_dir = cfg->jobs_dir,
                               .grace_ns = cfg->grace_ns,
                               .use_cgroup = true,
                               .output_max = cfg->output_max};
    if ((rc = loom_exec_local_new(&ecfg, &r->local, err)) != LOOM_OK)
        return rc;
    r->ops = &loom_exec_local_ops;
    r->exec = r->local;
    return LOOM_OK;
}

/* Rubick's settings: the device's description, found as
 * loom_est_device_load finds one. */
static int rubick_config(const loomd_runner_config_t *cfg, loom_runtime_rubick_t *rb,
                         loom_err_t *err)
{
    if (cfg->executor && strcmp(cfg->executor, "slurm") == 0)
        return loom_err_set(err, LOOM_EINVAL,
                            "--rubick needs the local executor (loomd restarts the jobs it "
                            "reconfigures itself)");
    const char *d = cfg->rubick_device;
    char path[4200], data[4096];
    size_t n = strlen(d);
    const char *dir = cfg->rubick_device_dir ? cfg->rubick_device_dir : getenv("LOOM_DEVICE_DIR");
    if (strchr(d, '/') || (n > 5 && strcmp(d + n - 5, ".json") == 0))
        snprintf(path, sizeof path, "%s", d);
    else if (dir && *dir)
        snprintf(path, sizeof path, "%s/%s.json", dir, d);
    else if (loom_data_path("devices", data, sizeof data, err) == LOOM_OK)
        snprintf(path, sizeof path, "%s/%s.json", data, d);
    else
        return loom_err_prefix(err, "--rubick %s", d);
    *rb = (loom_runtime_rubick_t){.reconf_cost_s = (double)cfg->rubick_cost_ns / 1e9,
                                  .min_gain = -1,
                                  /* the old process runs on what it gives up until it has
                                     checkpointed: loomd__reconf_ended gives it back */
                                  .hold_until_reconfigured = true};
    if (loom_rubick_device_load(path, &rb->device, err) != LOOM_OK)
        return loom_err_prefix(err, "--rubick %s", d);
    return LOOM_OK;
}

/* The runtime over the nodes, with the configured policies. */
static int open_runtime(loomd_runner_t *r, const loomd_runner_config_t *cfg, const json_t *nodes,
                        const json_t *slurm_nodes, loom_err_t *err)
{
    loom_sched_cluster_t c;
    int rc = build_cluster(&c, nodes, err);
    /* FGD's target workload until jobs teach it better: each GPU class
     * equally likely (whole GPUs of 1, 2, 4, 8 and a half share). */
    loom_sched_shape_t shapes[] = {{1000, 1, 1000, 0, 1},
                                   {1000, 2, 1000, 0, 1},
                                   {1000, 4, 1000, 0, 1},
                                   {1000, 8, 1000, 0, 1},
                                   {1000, 1, 500, 0, 1}};
    loom_sched_workload_t w = {0};
    if (rc == LOOM_OK)
        rc = loom_sched_workload_set(&w, shapes, sizeof shapes / sizeof shapes[0], err);
    loom_runtime_config_t rcfg = {
        .queue = cfg->queue_policy,
        .placement = cfg->placement,
        .placer = {.seed = cfg->seed, .ties = LOOM_SCHED_TIES_FIRST, .workload = &w},
        .timeslice_s = (double)cfg->timeslice_ns / 1e9,
        .pack_check = cfg->pack_check,
        .backfill = cfg->backfill,
        .default_limit_s = (double)cfg->default_limit_ns / 1e9};
    loom_runtime_rubick_t rb;
    if (rc == LOOM_OK && cfg->rubick_device && (rc = rubick_config(cfg, &rb, err)) == LOOM_OK)
        rcfg.rubick = &rb;
    if (rc == LOOM_OK)
        rc = loom_runtime_new(&c, &rcfg, &r->rt, err);
    loom_sched_workload_free(&w);
    loom_sched_cluster_free(&c);
    if (rc == LOOM_OK) {
        loom_runtime_set_outcomes(r->rt, loomd__dep_outcome, r); /* dependencies: the store */
        rc = loomd_quota_apply(cfg->quotas, r->accounts, r->rt, err);
    }
    for (size_t k = 0; rc == LOOM_OK && slurm_nodes && k < model(r)->nnodes; k++)
        loom_runtime_set_down(
            r->rt, k, !json_is_true(json_object_get(json_array_get(slurm_nodes, k), "available")));
    return rc;
}

int loomd_runner_start(loom_store_t *store, const loomd_runner_config_t *cfg, loomd_runner_t **out,
                       loom_err_t *err)
{
    loomd_runner_t *r = calloc(1, sizeof *r);
    if (!r)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    r->store = store;
    r->tick_ns = cfg->tick_ns > 0 ? cfg->tick_ns : 100 * LOOM_NS_PER_MS;
    r->pack_check = cfg->pack_check;
    r->real_minus_mono_ns = loom_time_real_ns() - loom_time_mono_ns();
    const json_t *nodes;
    json_t *slurm_nodes = NULL;
    int rc = loomd_accounts_new(&r->accounts, err);
    if (rc == LOOM_OK)
        rc = open_executor(r, cfg, &nodes, &slurm_nodes, err);
    if (rc == LOOM_OK)
        rc = open_runtime(r, cfg, nodes, slurm_nodes, err);
    json_decref(slurm_nodes);
    if (rc != LOOM_OK)
        goto fail;
    const char *note = "limits enforced by Slurm";
    if (r->local)
        loom_exec_local_cgroup(r->local, &note);
    loom_log_info(
        "runner ready", "executor=%s queue=%s placement=%s nodes=%zu gpus=%lld cgroup=\"%s\"",
        r->ops->name, loom_runtime_queue_name(r->rt), loom_runtime_placement_name(r->rt),
        model(r)->nnodes, (long long)(model(r)->gpu_milli_total / 1000), note ? note : "");
    r->since_ns = r->last_account_ns = loom_time_mono_ns();
    recover(r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_mutex_init(&r->wmu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    loom_store_set_commit_hook(store, wake_hook, r);
    if ((rc = pthread_create(&r->thread, NULL, runner_main, r)) != 0) {
        loom_store_set_commit_hook(store, NULL, NULL);
        rc = loom_err_errno(err, LOOM_EIO, rc, "cannot start the runner thread");
        goto fail_thread;
    }
    *out = r;
    return LOOM_OK;
fail_thread:
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->wmu);
    pthread_cond_destroy(&r->cv);
fail:
    loom_runtime_free(r->rt);
    loomd_accounts_free(r->accounts);
    loom_exec_local_free(r->local);
    loom_exec_slurm_free(r->slurm);
    free(r->active);
    free(r);
    return rc;
}

void loomd_runner_wake(loomd_runner_t *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->wmu);
    r->wake = true;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->wmu);
}

void loomd_runner_stop(loomd_runner_t *r)
{
    if (!r)
        return;
    loom_store_set_commit_hook(r->store, NULL, NULL);
    pthread_mutex_lock(&r->wmu);
    r->stop = true;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->wmu);
    pthread_join(r->thread, NULL);
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->wmu);
    pthread_cond_destroy(&r->cv);
    loom_exec_local_free(r->local);
    loom_exec_slurm_free(r->slurm);
    loom_runtime_free(r->rt);
    loomd_accounts_free(r->accounts);
    free(r->dep_text);
    free(r->active);
    free(r);
}

int loomd_runner_feasible(loomd_runner_t *r, const loom_job_spec_t *spec,
                          loom_sched_infeasible_t *why, loom_err_t *err)
{
    pthread_mutex_lock(&r->mu);
    loom_sched_req_t q;
    REQ_OF(r, spec, &q);
    int rc = loom_sched_feasible(model(r), &q, why, err);
    pthread_mutex_unlock(&r->mu);
    return rc;
}

json_t *loomd_runner_nodes(loomd_runner_t *r)
{
    json_t *arr = json_array();
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < model(r)->nnodes; i++) {
        const loom_sched_node_t *n = &model(r)->nodes[i];
        json_t *gpus = json_array();
        for (int g = 0; g < n->ngpus; g++)
            json_array_append_new(gpus, json_pack("{s:i, s:i, s:I}", "index", g, "free_milli",
                                                  (int)n->gpu_free[g], "memory_free_bytes",
                                                  (json_int_t)n->gpu_mem_free[g] << 20));
        json_t *jobs = json_array();
        for (size_t k = 0; k < r->nactive; k++)
            if (r->active[k].alloc.node == (int)i)
                json_array_append_new(jobs, json_integer(r->active[k].id));
        json_array_append_new(arr, json_pack("{s:s, s:I, s:I, s:I, s:I, s:i, s:s?, s:o, s:o}",
                                             "name", n->name, "cpu_milli", (json_int_t)n->cpu_milli,
                                             "cpu_free_milli", (json_int_t)n->cpu_free,
                                             "memory_bytes", (json_int_t)n->mem_mib << 20,
                                             "memory_free_bytes", (json_int_t)n->mem_free << 20,
                                             "gpu_count", n->ngpus, "gpu_type",
                                             n->gpu_type >= 0 ? model(r)->types[n->gpu_type] : NULL,
                                             "gpus", gpus, "jobs", jobs));
        json_object_set_new(json_array_get(arr, i), "available",
                            json_boolean(!loom_runtime_is_down(r->rt, i)));
        json_object_set_new(json_array_get(arr, i), "gpu_memory_bytes",
                            json_integer((json_int_t)n->gpu_mem_mib << 20));
    }
    pthread_mutex_unlock(&r->mu);
    return arr;
}

json_t *loomd_runner_stats(loomd_runner_t *r)
{
    pthread_mutex_lock(&r->mu);
    loomd__account(r);
    double span = (loom_time_mono_ns() - r->since_ns) / 1e9;
    double cap = (double)model(r)->gpu_milli_total;
    json_t *o = json_pack(
        "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:I}", "queue_policy",
        loom_runtime_queue_name(r->rt), "placement", loom_runtime_placement_name(r->rt), "running",
        (json_int_t)r->nactive, "started", (json_int_t)r->started, "ended", (json_int_t)r->ended,
        "failed_to_start", (json_int_t)r->failed_to_start, "gpu_milli_total",
        (json_int_t)model(r)->gpu_milli_total, "gpu_milli_used",
        (json_int_t)model(r)->gpu_milli_used, "gpu_busy_milli_seconds", r->gpu_busy_milli_s,
        "gpu_occupancy", cap > 0 && span > 0 ? r->gpu_busy_milli_s / (cap * span) : 0.0, "steps",
        (json_int_t)r->steps);
    pthread_mutex_unlock(&r->mu);
    return o;
}

void loomd_runner_metrics(loomd_runner_t *r, loom_buf_t *out)
{
    pthread_mutex_lock(&r->mu);
    loomd__account(r);
    loom_buf_appendf(out,
                     "# HELP loom_gpus_allocated GPUs allocated to running jobs (fractional for "
                     "shares).\n# TYPE loom_gpus_allocated gauge\nloom_gpus_allocated %.3f\n"
                     "# HELP loom_gpus GPUs in the cluster model.\n# TYPE loom_gpus gauge\n"
                     "loom_gpus %.3f\n"
                     "# HELP loom_gpu_busy_seconds_total GPU-seconds allocated to jobs.\n"
                     "# TYPE loom_gpu_busy_seconds_total counter\n"
                     "loom_gpu_busy_seconds_total %.3f\n"
                     "# HELP loom_jobs_started_total Jobs started by this loomd.\n"
                     "# TYPE loom_jobs_started_total counter\nloom_jobs_started_total %" PRIu64 "\n"
                     "# HELP loom_jobs_ended_total Jobs whose end this loomd recorded.\n"
                     "# TYPE loom_jobs_ended_total counter\nloom_jobs_ended_total %" PRIu64 "\n",
                     model(r)->gpu_milli_used / 1000.0, model(r)->gpu_milli_total / 1000.0,
                     r->gpu_busy_milli_s / 1000.0, r->started, r->ended);
    pthread_mutex_unlock(&r->mu);
}

size_t loomd_runner_running(loomd_runner_t *r, int64_t *ids, pid_t *pids, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->nactive && n < max; i++) {
        if (r->active[i].suspended || r->active[i].h.shepherd_pid <= 0)
            continue;
        ids[n] = r->active[i].id;
        pids[n] = r->active[i].h.shepherd_pid;
        n++;
    }
    pthread_mutex_unlock(&r->mu);
    return n;
}

void loomd_runner_alloc(loomd_runner_t *r, loomd_alloc_t *o)
{
    memset(o, 0, sizeof *o);
    pthread_mutex_lock(&r->mu);
    const loom_sched_cluster_t *c = model(r);
    o->gpus_total = (double)c->gpu_milli_total / 1000;
    o->gpus_allocated = (double)c->gpu_milli_used / 1000;
    o->cpus_total = (double)c->cpu_milli_total / 1000;
    o->cpus_allocated = (double)c->cpu_milli_used / 1000;
    for (size_t i = 0; i < c->nnodes; i++) {
        o->memory_total_bytes += (double)c->nodes[i].mem_mib * 1048576.0;
        o->memory_allocated_bytes +=
            (double)(c->nodes[i].mem_mib - c->nodes[i].mem_free) * 1048576.0;
    }
    for (size_t i = 0; i < r->nactive; i++) {
        const loom_sched_alloc_t *a = &r->active[i].alloc;
        if (a->req.gpu_milli >= 1000)
            o->gpus_whole += a->ngpus;
        else
            o->gpus_shared += a->ngpus * a->req.gpu_milli / 1000.0;
    }
    o->running = (double)r->nactive;
    pthread_mutex_unlock(&r->mu);
}

size_t loomd_runner_sampled(loomd_runner_t *r, loomd_running_t *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->nactive && n < max; i++) {
        const active_t *a = &r->active[i];
        if (a->suspended || a->h.shepherd_pid <= 0)
            continue;
        loomd_running_t *o = &out[n++];
        o->id = a->id;
        o->pid = a->h.shepherd_pid;
        snprintf(o->cgroup, sizeof o->cgroup, "%s", a->h.cgroup);
        o->ngpus = a->alloc.ngpus;
        for (int g = 0; g < a->alloc.ngpus; g++)
            o->gpus[g] = a->alloc.gpus[g];
        o->gpu_milli = a->alloc.req.gpu_milli;
    }
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* ---------------------------------------------------- pending reasons */

#define LOOMD_REASON_WAIT_NS (250 * LOOM_NS_PER_MS)

/* A job held by a running quota says which ("quota": whose, which limit,
 * what runs, what it asks, what is allowed; docs/protocol.md). */
static void quota_of(loomd_runner_t *r, uint64_t id, json_t *j)
{
    loom_runtime_quota_hold_t h;
    if (loom_runtime_quota_hold(r->rt, id, &h) != LOOM_OK)
        return;
    json_object_set_new(j, "quota",
                        json_pack("{s:s, s:s, s:I, s:I, s:I}", "on",
                                  h.kind == LOOM_RUNTIME_QUOTA_USER ? "user" : "account", "limit",
                                  h.gpus ? "gpus" : "running", "used", (json_int_t)h.used, "asks",
                                  (json_int_t)h.asks, "allowed", (json_int_t)h.allowed));
}

/* A job with a backfill reservation says when and where it is expected to
 * start ("expected_start": {"time", "node"}; squeue --start). */
static void expected_start_of(loomd_runner_t *r, const loom_runtime_info_t *info, json_t *j)
{
    const loom_sched_cluster_t *c = model(r);
    if (!info->has_start || info->expected_node < 0 || (size_t)info->expected_node >= c->nnodes)
        return;
    char when[32];
    loom_time_format_rfc3339((int64_t)(info->expected_start_s * 1e9) + r->real_minus_mono_ns, when);
    json_object_set_new(
        j, "expected_start",
        json_pack("{s:s, s:s}", "time", when, "node", c->nodes[info->expected_node].name));
}

/* One job object: a PENDING one gets the runtime's reason (squeue's
 * names); one the runtime has not read yet keeps its stored reason (a
 * requeue's) or gets None. */
static void reason_of(loomd_runner_t *r, json_t *j)
{
    const char *state = json_string_value(json_object_get(j, "state"));
    if (!state || strcmp(state, "PENDING") != 0)
        return;
    json_int_t id = json_integer_value(json_object_get(j, "id"));
    loom_runtime_info_t info;
    if (id > 0 && loom_runtime_get(r->rt, (uint64_t)id, &info) == LOOM_OK &&
        info.state == LOOM_RUNTIME_PENDING) {
        json_object_set_new(j, "reason", json_string(loom_runtime_reason_name(info.reason)));
        quota_of(r, (uint64_t)id, j);
        expected_start_of(r, &info, j);
    } else if (!json_is_string(json_object_get(j, "reason")))
        json_object_set_new(j, "reason", json_string("None"));
}

void loomd_runner_reasons(loomd_runner_t *r, json_t *jobs)
{
    if (!r || !jobs)
        return;
    /* A step holds the lock while it starts jobs (store writes): a reader
     * waits for it at most LOOMD_REASON_WAIT_NS, then answers with the
     * stored reasons rather than stall. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    int64_t t = (int64_t)until.tv_sec * LOOM_NS_PER_S + until.tv_nsec + LOOMD_REASON_WAIT_NS;
    until.tv_sec = t / LOOM_NS_PER_S;
    until.tv_nsec = t % LOOM_NS_PER_S;
    if (pthread_mutex_timedlock(&r->mu, &until) != 0)
        return;
    if (json_is_array(jobs)) {
        size_t i;
        json_t *j;
        json_array_foreach(jobs, i, j) reason_of(r, j);
    } else
        reason_of(r, jobs);
    pthread_mutex_unlock(&r->mu);
}

/* ------------------------------------------- hold, release, requeue, update */

/* Hands a stored pending job the runtime does not have (requeued from an
 * end) or has with old fields (updated) to the runtime afresh. */
static int resubmit(loomd_runner_t *r, int64_t id, loom_err_t *err)
{
    loom_job_t j;
    int rc = loom_store_get(r->store, id, &j, err);
    if (rc)
        return rc;
    if (j.state == LOOM_JOB_PENDING) {
        loom_runtime_job_t rj;
        rc = job_rt(r, &j, &rj);
        if (rc == LOOM_OK)
            rc = loomd__job_blocks(r, &j, &rj);
        if (rc == LOOM_OK) {
            loom_runtime_remove(r->rt, (uint64_t)id, rt_now()); /* pending: forgotten */
            rc = loom_runtime_submit(r->rt, &rj, err);
        } else {
            loom_err_set(err, rc, "job %lld: out of memory", (long long)id);
        }
    }
    loom_job_free(&j);
    return rc;
}

int loomd_runner_changed(loomd_runner_t *r, int64_t id, loom_err_t *err)
{
    pthread_mutex_lock(&r->mu);
    int rc = LOOM_OK;
    active_t *a = loomd__find_active(r, id);
    if (a) /* requeued after a cancel whose process has not ended yet */
        a->requeue = true;
    else if (id <= r->seen_id) /* newer ones are read by the next step as they are */
        rc = resubmit(r, id, err);
    pthread_mutex_unlock(&r->mu);
    loomd_runner_wake(r);
    return rc;
}

int loomd_runner_requeue(loomd_runner_t *r, int64_t id, loom_err_t *err)
{
    pthread_mutex_lock(&r->mu);
    active_t *a = loomd__find_active(r, id);
    int rc = LOOM_OK;
    if (!a)
        rc = loom_err_set(err, LOOM_ESTATE, "job %lld is not running here", (long long)id);
    else if (!a->requeue) {
        rc = r->ops->cancel(r->exec, &a->h, err);
        if (rc == LOOM_OK)
            a->requeue = a->cancel_sent = true; /* its end puts it back in the queue */
    }
    pthread_mutex_unlock(&r->mu);
    loomd_runner_wake(r);
    return rc;
}
