/* Where a job runs and writes: its working directory and output files
 * from its stored options (job.submit "options", docs/protocol.md), as
 * sbatch does it: output to loom-%j.out in the working directory unless
 * --output says otherwise, error merged into output unless --error is
 * given, relative paths taken from the working directory, %-patterns
 * expanded (docs/jobfiles.md). A job without a working directory in its
 * options keeps the old layout: it runs in its job directory and writes
 * its stdout and stderr files there; but one run as its owner (who cannot
 * write there) runs in the owner's home directory. Kept apart from local.c so that the
 * executor's process handling and this file's naming change separately. */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/exec_private.h"
#include "loom/jobspec.h"

static int out_path(const char *pattern, const loom_jobspec_ids_t *ids, const char *node,
                    const char *workdir, char *out, size_t outlen, const char *what,
                    loom_err_t *err)
{
    char expanded[LOOM_EXEC_PATH_MAX];
    if (loom_jobspec_expand(pattern, ids, node, expanded, sizeof expanded, err))
        return loom_err_prefix(err, "job %lld: %s", (long long)ids->job_id, what);
    size_t wl = strlen(workdir);
    const char *sep = wl > 0 && workdir[wl - 1] == '/' ? "" : "/"; /* "/" + x: "/x" */
    int n = expanded[0] == '/' ? snprintf(out, outlen, "%s", expanded)
                               : snprintf(out, outlen, "%s%s%s", workdir, sep, expanded);
    if (n < 0 || (size_t)n >= outlen)
        return loom_err_set(err, LOOM_ELIMIT, "job %lld: %s '%.80s': longer than %zu bytes",
                            (long long)ids->job_id, what, expanded, outlen - 1);
    return LOOM_OK;
}

/* An array's task (options array_job_id, array_task_id, array): loom's
 * and Slurm's array variables in its environment. */
static void array_env(const json_t *o, json_t *env)
{
    const json_t *aj = json_object_get(o, "array_job_id"),
                 *at = json_object_get(o, "array_task_id");
    const char *text = json_string_value(json_object_get(o, "array"));
    loom_jobspec_array_t a;
    if (!json_is_integer(aj) || !json_is_integer(at) || !text ||
        loom_jobspec_array_parse(text, &a, NULL) != LOOM_OK)
        return;
    const struct {
        const char *name;
        long long v;
    } vars[] = {{"LOOM_ARRAY_JOB_ID", json_integer_value(aj)},
                {"LOOM_ARRAY_TASK_ID", json_integer_value(at)},
                {"SLURM_ARRAY_JOB_ID", json_integer_value(aj)},
                {"SLURM_ARRAY_TASK_ID", json_integer_value(at)},
                {"SLURM_ARRAY_TASK_COUNT", a.count},
                {"SLURM_ARRAY_TASK_MIN", a.first},
                {"SLURM_ARRAY_TASK_MAX", a.last}};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        char buf[64];
        snprintf(buf, sizeof buf, "%s=%lld", vars[i].name, vars[i].v);
        json_array_append_new(env, json_string(buf));
    }
    /* A Kubernetes Indexed Job's task (k8s.c put JOB_COMPLETION_INDEX=0
     * in its env): its own index. */
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(o, "env"), i, e)
    {
        if (strncmp(json_string_value(e), "JOB_COMPLETION_INDEX=", 21) == 0) {
            char buf[64];
            snprintf(buf, sizeof buf, "JOB_COMPLETION_INDEX=%lld",
                     (long long)json_integer_value(at));
            json_array_append_new(env, json_string(buf));
            break;
        }
    }
}

static void env_add(json_t *env, const char *name, const char *value)
{
    loom_buf_t b = LOOM_BUF_INIT;
    loom_buf_appendf(&b, "%s=%s", name, value);
    json_array_append_new(env, json_string(b.data));
    loom_buf_free(&b);
}

/* The variables Slurm sets in a batch job that scripts written for Slurm
 * read (sbatch(1), OUTPUT ENVIRONMENT VARIABLES), from the job and its
 * options (o may be NULL). One node: loom runs a job on one. */
static void slurm_env(const json_t *o, const loom_exec_job_t *job, json_t *env)
{
    char v[64];
    json_int_t ntasks = json_integer_value(json_object_get(o, "ntasks"));
    json_int_t per_task = json_integer_value(json_object_get(o, "cpus_per_task"));
    long long cpus = job->cpus_milli > 0 ? (job->cpus_milli + 999) / 1000 : 1;
    if (ntasks < 1)
        ntasks = 1;
    if (per_task < 1)
        per_task = cpus / ntasks > 0 ? cpus / ntasks : 1;
    snprintf(v, sizeof v, "%lld", (long long)job->id);
    env_add(env, "SLURM_JOB_ID", v);
    env_add(env, "SLURM_JOBID", v);
    env_add(env, "SLURM_JOB_NAME", job->name ? job->name : "");
    snprintf(v, sizeof v, "%lld", (long long)ntasks);
    env_add(env, "SLURM_NTASKS", v);
    env_add(env, "SLURM_NPROCS", v);
    snprintf(v, sizeof v, "%lld", (long long)per_task);
    env_add(env, "SLURM_CPUS_PER_TASK", v);
    snprintf(v, sizeof v, "%lld", cpus);
    env_add(env, "SLURM_CPUS_ON_NODE", v);
    env_add(env, "SLURM_JOB_NUM_NODES", "1");
    env_add(env, "SLURM_NNODES", "1");
    if (job->node && *job->node) {
        env_add(env, "SLURM_JOB_NODELIST", job->node);
        env_add(env, "SLURMD_NODENAME", job->node);
    }
    if (job->n_gpus > 0) {
        snprintf(v, sizeof v, "%zu", job->n_gpus);
        env_add(env, "SLURM_GPUS", v);
    }
    const char *wd = json_string_value(json_object_get(o, "workdir"));
    if (wd)
        env_add(env, "SLURM_SUBMIT_DIR", wd);
}

void loom_exec__slurm_env(const loom_exec_job_t *job, json_t *env)
{
    json_t *o = job->options_json ? json_loads(job->options_json, 0, NULL) : NULL;
    slurm_env(json_is_object(o) ? o : NULL, job, env);
    json_decref(o);
}

int loom_exec__job_io(const loom_exec_job_t *job, loom_exec_handle_t *h, char *cwd, size_t cwdlen,
                      json_t *env, loom_err_t *err)
{
    if (!job->options_json && !job->run_as_owner)
        return LOOM_OK;
    json_t *o = job->options_json ? json_loads(job->options_json, 0, NULL) : json_object();
    if (!json_is_object(o)) {
        json_decref(o);
        return loom_err_set(err, LOOM_EINVAL, "job %lld: options: not a JSON object",
                            (long long)job->id);
    }
    int rc = LOOM_OK;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(o, "env"), i, e) json_array_append(env, e);
    array_env(o, env);
    struct passwd pwbuf, *pw = NULL;
    char pwtext[1024];
    if (getpwuid_r(job->run_as_owner ? job->uid : geteuid(), &pwbuf, pwtext, sizeof pwtext, &pw) !=
        0)
        pw = NULL;
    const char *workdir = json_string_value(json_object_get(o, "workdir"));
    /* A job run as its owner cannot write in its job directory (root's):
     * without a working directory it runs in the owner's home, writing
     * loom-%j.out there (the Slurm executor refuses it before). */
    if (!workdir && job->run_as_owner) {
        if (!pw || !pw->pw_dir || pw->pw_dir[0] != '/') {
            rc = loom_err_set(err, LOOM_EINVAL,
                              "job %lld: no working directory given and uid %lld has no home "
                              "directory; submit with a working directory (options.workdir)",
                              (long long)job->id, (long long)job->uid);
            goto out;
        }
        workdir = pw->pw_dir;
    }
    if (!workdir)
        goto out;
    struct stat st;
    if (workdir[0] != '/') {
        rc = loom_err_set(err, LOOM_EINVAL, "job %lld: working directory '%.200s' is not absolute",
                          (long long)job->id, workdir);
        goto out;
    }
    /* A job run as its owner is not looked at with loomd's rights: the
     * shepherd's chdir, as the owner, says whether the owner may go there. */
    if (!job->run_as_owner && (stat(workdir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        rc = loom_err_errno(err, LOOM_EIO, errno ? errno : ENOTDIR,
                            "job %lld: working directory '%.200s'", (long long)job->id, workdir);
        goto out;
    }
    if ((size_t)snprintf(cwd, cwdlen, "%s", workdir) >= cwdlen) {
        rc = loom_err_set(err, LOOM_ELIMIT, "job %lld: working directory longer than %zu bytes",
                          (long long)job->id, cwdlen - 1);
        goto out;
    }
    loom_jobspec_ids_t ids = {
        .job_id = job->id,
        .name = job->name,
        .user = pw ? pw->pw_name : "",
        .array_job_id = json_integer_value(json_object_get(o, "array_job_id")),
        .array_task = json_is_integer(json_object_get(o, "array_task_id"))
                          ? json_integer_value(json_object_get(o, "array_task_id"))
                          : -1};
    const char *output = json_string_value(json_object_get(o, "output"));
    const char *error = json_string_value(json_object_get(o, "error"));
    /* As Slurm's slurm-%j.out, and slurm-%A_%a.out for an array's task. */
    const char *fallback = json_object_get(o, "array") ? "loom-%A_%a.out" : "loom-%j.out";
    if ((rc = out_path(output ? output : fallback, &ids, job->node, workdir, h->stdout_path,
                       sizeof h->stdout_path, "output", err)))
        goto out;
    if (!error)
        memcpy(h->stderr_path, h->stdout_path, sizeof h->stderr_path);
    else
        rc = out_path(error, &ids, job->node, workdir, h->stderr_path, sizeof h->stderr_path,
                      "error", err);
out:
    json_decref(o);
    return rc;
}
