/* The local executor: jobs run on this machine under a shepherd each (see
 * shepherd.c and include/loom/exec.h for why). This file prepares a job's
 * directory (script, spec.json), spawns the shepherd with posix_spawn (safe
 * in the multithreaded loomd), and turns the shepherd's status file into an
 * outcome. It also finds a cgroup v2 for per-job accounting and says which
 * limits it can and cannot enforce on this machine. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/exec_private.h"
#include "loom/exec.h"

extern char **environ;

struct loom_exec_local {
    char jobs_dir[LOOM_EXEC_PATH_MAX];
    char shepherd[PATH_MAX];
    int64_t grace_ns;
    uint64_t output_max;                  /* stdout + stderr bytes per job; 0: none */
    char cgroup_base[LOOM_EXEC_PATH_MAX]; /* "" when not used */
    bool cg_memory, cg_cpu;               /* limits the cgroup can enforce */
    char cgroup_note[256];
};

const char *loom_exec_end_name(loom_exec_end_t end)
{
    static const char *names[] = {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED"};
    return (unsigned)end < 4 ? names[end] : "UNKNOWN";
}

int loom_exec_proc_start_time(pid_t pid, uint64_t *start, loom_err_t *err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = loom_buf_read_file(&b, path, err);
    if (rc != LOOM_OK)
        return rc;
    /* The command name (field 2) may hold spaces and parentheses: fields
     * are counted from the last ')'. Field 3 is the state, 22 the start. */
    const char *p = strrchr(b.data, ')');
    int field = 2;
    rc = loom_err_set(err, LOOM_EINVAL, "%s: malformed", path);
    while (p && *p) {
        if (*p == ' ') {
            field++;
            if (field == 3 && p[1] == 'Z') {
                rc = loom_err_set(err, LOOM_ENOTFOUND, "process %d is a zombie", (int)pid);
                break;
            }
            if (field == 22) {
                *start = strtoull(p + 1, NULL, 10);
                rc = LOOM_OK;
                break;
            }
        }
        p++;
    }
    loom_buf_free(&b);
    return rc;
}

int loom_exec__cgroup2_mount(char *out, size_t outlen)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return -1;
    char line[4096];
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        /* ... mount-point options - fstype source superoptions */
        char *sep = strstr(line, " - ");
        if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
            continue;
        char *fields[5] = {0};
        char *save = NULL, *tok = strtok_r(line, " ", &save);
        for (int i = 0; tok && i < 5; i++, tok = strtok_r(NULL, " ", &save))
            fields[i] = tok;
        if (fields[4] && strlen(fields[4]) < outlen) {
            strcpy(out, fields[4]);
            found = 0;
            break;
        }
    }
    fclose(f);
    return found;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* A cgroup v2 directory for this executor's jobs, named after jobs_dir so a
 * restarted loomd finds the same one and two loomds never share one. */
static void setup_cgroup(loom_exec_local_t *x)
{
    char mnt[LOOM_EXEC_PATH_MAX];
    if (loom_exec__cgroup2_mount(mnt, sizeof mnt) != 0) {
        snprintf(x->cgroup_note, sizeof x->cgroup_note,
                 "no cgroup v2 mounted: no per-job limits or cgroup accounting");
        return;
    }
    char base[LOOM_EXEC_PATH_MAX];
    if (snprintf(base, sizeof base, "%s/loom-%016llx", mnt,
                 (unsigned long long)fnv1a(x->jobs_dir)) >= (int)sizeof base) {
        snprintf(x->cgroup_note, sizeof x->cgroup_note,
                 "the cgroup v2 mount path is too long: no per-job limits or cgroup accounting");
        return;
    }
    if (mkdir(base, 0755) != 0 && errno != EEXIST) {
        snprintf(x->cgroup_note, sizeof x->cgroup_note,
                 "cannot create a cgroup under %s (%s): no per-job limits or cgroup accounting",
                 mnt, strerror(errno));
        return;
    }
    strcpy(x->cgroup_base, base);
    /* Limits need the memory and cpu controllers delegated to our subtree. */
    char path[LOOM_EXEC_PATH_MAX + 32];
    loom_buf_t b = LOOM_BUF_INIT;
    snprintf(path, sizeof path, "%s/cgroup.controllers", base);
    if (loom_buf_read_file(&b, path, NULL) == LOOM_OK) {
        x->cg_memory = strstr(b.data, "memory") != NULL;
        x->cg_cpu = strstr(b.data, "cpu") != NULL;
    }
    loom_buf_free(&b);
    if (x->cg_memory || x->cg_cpu) {
        snprintf(path, sizeof path, "%s/cgroup.subtree_control", base);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (x->cg_memory && write(fd, "+memory", 7) != 7)
                x->cg_memory = false;
            if (x->cg_cpu && write(fd, "+cpu", 4) != 4)
                x->cg_cpu = false;
            close(fd);
        } else {
            x->cg_memory = x->cg_cpu = false;
        }
    }
    snprintf(x->cgroup_note, sizeof x->cgroup_note, "cgroup v2 at %s: accounting and kill%s%s%s",
             base, x->cg_memory ? ", memory limit" : "", x->cg_cpu ? ", cpu limit" : "",
             x->cg_memory && x->cg_cpu ? ""
             : x->cg_memory || x->cg_cpu
                 ? " (other controller not available)"
                 : "; memory and cpu limits NOT enforced (controllers not available to cgroup v2 "
                   "here)");
}

int loom_exec_local_new(const loom_exec_config_t *cfg, loom_exec_local_t **out, loom_err_t *err)
{
    int rc = loom_exec__check_jobs_dir(cfg->jobs_dir, err);
    if (rc)
        return rc;
    loom_exec_local_t *x = calloc(1, sizeof *x);
    if (!x)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    snprintf(x->jobs_dir, sizeof x->jobs_dir, "%s", cfg->jobs_dir);
    if (mkdir(x->jobs_dir, 0700) != 0 && errno != EEXIST) {
        int e = errno;
        free(x);
        return loom_err_errno(err, LOOM_EIO, e, "cannot create jobs directory '%s'", cfg->jobs_dir);
    }
    const char *sh = cfg->shepherd_path ? cfg->shepherd_path : getenv("LOOM_SHEPHERD");
    if (sh) {
        snprintf(x->shepherd, sizeof x->shepherd, "%s", sh);
    } else {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) {
            int e = errno;
            free(x);
            return loom_err_errno(err, LOOM_ENOTFOUND, e,
                                  "cannot find loom-shepherd: /proc/self/exe is unreadable "
                                  "(set LOOM_SHEPHERD to its path)");
        }
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        *slash = '\0';
        snprintf(x->shepherd, sizeof x->shepherd, "%.*s/loom-shepherd", PATH_MAX - 16, self);
    }
    if (access(x->shepherd, X_OK) != 0) {
        int e = errno;
        free(x);
        return loom_err_errno(err, LOOM_ENOTFOUND, e, "shepherd '%s' is not executable",
                              sh ? sh : "loom-shepherd (next to this program)");
    }
    x->grace_ns = cfg->grace_ns > 0 ? cfg->grace_ns : 10 * LOOM_NS_PER_S;
    x->output_max = cfg->output_max;
    if (cfg->use_cgroup)
        setup_cgroup(x);
    else
        snprintf(x->cgroup_note, sizeof x->cgroup_note, "cgroups disabled by configuration");
    *out = x;
    return LOOM_OK;
}

void loom_exec_local_free(loom_exec_local_t *x)
{
    /* The executor's cgroup goes when no job cgroup is left in it (jobs
     * still running under their shepherds keep it for the next loomd). */
    if (x && x->cgroup_base[0] && rmdir(x->cgroup_base) != 0 && errno != ENOENT && errno != EBUSY &&
        errno != ENOTEMPTY)
        loom_log_warn("exec.cgroup_remove_failed", "cgroup=\"%s\" error=\"%s\"", x->cgroup_base,
                      strerror(errno));
    free(x);
}

bool loom_exec_local_cgroup(const loom_exec_local_t *x, const char **note)
{
    if (note)
        *note = x->cgroup_note;
    return x->cgroup_base[0] != '\0';
}

int loom_exec_job_env(const loom_exec_job_t *job, json_t *out)
{
    char v[64 + LOOM_EXEC_MAX_GPUS * 4];
    snprintf(v, sizeof v, "LOOM_JOB_ID=%lld", (long long)job->id);
    json_array_append_new(out, json_string(v));
    loom_buf_t b = LOOM_BUF_INIT;
    loom_buf_appendf(&b, "LOOM_JOB_NAME=%s", job->name ? job->name : "");
    json_array_append_new(out, json_string(b.data));
    loom_buf_reset(&b);
    loom_buf_append_str(&b, "CUDA_VISIBLE_DEVICES=");
    for (size_t i = 0; i < job->n_gpus; i++)
        loom_buf_appendf(&b, "%s%d", i ? "," : "", job->gpus[i]);
    json_array_append_new(out, json_string(b.data));
    loom_buf_free(&b);
    snprintf(v, sizeof v, "LOOM_GPU_SHARE_MILLI=%lld", (long long)job->gpu_share_milli);
    json_array_append_new(out, json_string(v));
    long threads = job->cpus_milli > 0 ? (long)((job->cpus_milli + 999) / 1000) : 1;
    static const char *vars[] = {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"};
    for (int i = 0; i < 3; i++) {
        snprintf(v, sizeof v, "%s=%ld", vars[i], threads);
        json_array_append_new(out, json_string(v));
    }
    return LOOM_OK;
}

/* The shepherd's environment: not loomd's (which holds LOOM_TOKEN and
 * whatever loomd's caller set; a job can read its parent's environment in
 * /proc), only PATH and the locale and time zone, and the sanitizers'
 * options in test builds. The job's own environment is in spec.json. */
static void free_env(char **env)
{
    for (char **e = env; e && *e; e++)
        free(*e);
    free(env);
}

static char **shepherd_env(void)
{
    static const char *const keep[] = {
        "PATH=",          "LANG=",         "LC_ALL=",       "TZ=", "ASAN_OPTIONS=",
        "UBSAN_OPTIONS=", "LSAN_OPTIONS=", "TSAN_OPTIONS=", NULL};
    size_t n = 0;
    for (char **e = environ; *e; e++)
        n++;
    char **env = calloc(n + 1, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (char **e = environ; *e; e++)
        for (const char *const *p = keep; *p; p++)
            if (strncmp(*e, *p, strlen(*p)) == 0) {
                if (!(env[k++] = strdup(*e))) {
                    free_env(env);
                    return NULL;
                }
                break;
            }
    return env;
}

/* Puts NAME=VALUE into env: a variable of that name already there is
 * replaced (replace) or kept (!replace), so each name is there once (bash
 * takes the last of two, getenv the first: a job must see one value). */
static void env_put(json_t *env, const char *kv, bool replace)
{
    const char *eq = strchr(kv, '=');
    size_t n = eq ? (size_t)(eq - kv) + 1 : strlen(kv);
    size_t i;
    json_t *e;
    json_array_foreach(env, i, e)
    {
        if (strncmp(json_string_value(e), kv, n) == 0) {
            if (replace)
                json_array_set_new(env, i, json_string(kv));
            return;
        }
    }
    json_array_append_new(env, json_string(kv));
}

static bool is_thread_var(const char *kv)
{
    return !strncmp(kv, "OMP_NUM_THREADS=", 16) || !strncmp(kv, "MKL_NUM_THREADS=", 16) ||
           !strncmp(kv, "OPENBLAS_NUM_THREADS=", 21);
}

/* The job's environment, each name once: the job's own variables (its
 * options' env: what --export passed), then loom's and Slurm's job
 * variables over them (LOOM_JOB_ID, SLURM_JOB_ID, CUDA_VISIBLE_DEVICES:
 * an exported shell's stale ones must not win), thread counts unless the
 * job set them, then a few basics from loomd (PATH, HOME, ...) unless the
 * job brought its own. Nothing else of loomd's environment leaks into
 * jobs. */
static json_t *build_env(const loom_exec_job_t *job, json_t *yaml_env)
{
    json_t *env = json_array(), *ours = json_array();
    if (job->env)
        for (const char *const *e = job->env; *e; e++)
            env_put(env, *e, true);
    size_t i;
    json_t *e;
    /* jobio.c's: the options' env first, then the array's and Slurm's
     * variables, which replace stale ones of the same name. */
    json_array_foreach(yaml_env, i, e) env_put(env, json_string_value(e), true);
    loom_exec_job_env(job, ours);
    json_array_foreach(ours, i, e)
        env_put(env, json_string_value(e), !is_thread_var(json_string_value(e)));
    json_decref(ours);
    /* A job run as its owner gets the owner's HOME, USER and LOGNAME, not
     * loomd's; a uid without an entry gets none of them. */
    struct passwd pwbuf, *pw = NULL;
    char pwtext[4096];
    if (job->run_as_owner && getpwuid_r(job->uid, &pwbuf, pwtext, sizeof pwtext, &pw) != 0)
        pw = NULL;
    static const char *keep[] = {"PATH", "HOME", "LANG", "USER", "LOGNAME", "TMPDIR", "TZ"};
    for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++) {
        const char *v = getenv(keep[k]);
        if (job->run_as_owner && k == 1)
            v = pw ? pw->pw_dir : NULL;
        else if (job->run_as_owner && (k == 3 || k == 4))
            v = pw ? pw->pw_name : NULL;
        if (!v && strcmp(keep[k], "PATH") == 0)
            v = "/usr/local/bin:/usr/bin:/bin";
        if (v) {
            loom_buf_t b = LOOM_BUF_INIT;
            loom_buf_appendf(&b, "%s=%s", keep[k], v);
            env_put(env, b.data, false);
            loom_buf_free(&b);
        }
    }
    return env;
}

static int write_in_dir(const char *dir, const char *name, const char *data, size_t len, int mode,
                        loom_err_t *err)
{
    char path[LOOM_EXEC_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return loom_write_file_atomic(path, data, len, mode, err);
}

/* The script of a job run as its owner: the owner's file, read-only, so
 * that bash, as the owner, may open it through /dev/fd/3 (the shepherd
 * opens it before dropping; the job directory stays closed to the owner). */
static int owner_script(const loom_exec_job_t *job, const char *path, json_t *owner,
                        loom_err_t *err)
{
    if (chown(path, job->uid, job->gid) != 0 || chmod(path, 0500) != 0)
        return loom_err_errno(err, LOOM_EIO, errno, "job %lld: cannot give '%s' to uid %u",
                              (long long)job->id, path, (unsigned)job->uid);
    json_object_set_new(owner, "script", json_string(path));
    return LOOM_OK;
}

static int cgroup_for_job(loom_exec_local_t *x, const loom_exec_job_t *job, loom_exec_handle_t *h)
{
    h->cgroup[0] = '\0';
    snprintf(h->cgroup_note, sizeof h->cgroup_note, "%s", x->cgroup_note);
    if (!x->cgroup_base[0])
        return 0;
    char cg[LOOM_EXEC_PATH_MAX];
    snprintf(cg, sizeof cg, "%.400s/job-%lld", x->cgroup_base, (long long)job->id);
    if (mkdir(cg, 0755) != 0 && errno != EEXIST) {
        snprintf(h->cgroup_note, sizeof h->cgroup_note, "cannot create cgroup %.200s: %s", cg,
                 strerror(errno));
        return 0;
    }
    char path[LOOM_EXEC_PATH_MAX + 32], val[64];
    if (x->cg_memory && job->memory_bytes) {
        snprintf(path, sizeof path, "%s/memory.max", cg);
        snprintf(val, sizeof val, "%llu", (unsigned long long)job->memory_bytes);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (write(fd, val, strlen(val)) < 0) {
            }
            close(fd);
        }
    }
    if (x->cg_cpu && job->cpus_milli > 0) {
        snprintf(path, sizeof path, "%s/cpu.max", cg);
        snprintf(val, sizeof val, "%lld 100000", (long long)job->cpus_milli * 100);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (write(fd, val, strlen(val)) < 0) {
            }
            close(fd);
        }
    }
    strcpy(h->cgroup, cg);
    return 0;
}

int loom_exec_local_start(loom_exec_local_t *x, const loom_exec_job_t *job, loom_exec_handle_t *h,
                          loom_err_t *err)
{
    memset(h, 0, sizeof *h);
    h->job_id = job->id;
    loom_exec__job_paths(x->jobs_dir, h);
    if (mkdir(h->dir, 0700) != 0 && errno != EEXIST)
        return loom_err_errno(err, LOOM_EIO, errno, "job %lld: cannot create '%s'",
                              (long long)job->id, h->dir);
    /* A directory reused after a failed start must not carry an old outcome. */
    char old[LOOM_EXEC_PATH_MAX + 32];
    snprintf(old, sizeof old, "%s/status.json", h->dir);
    unlink(old);

    json_t *argv = json_array(), *yaml_env = json_array(), *owner = json_object();
    char cwd[LOOM_EXEC_PATH_MAX];
    snprintf(cwd, sizeof cwd, "%s", h->dir);
    /* The working directory first, so that a manifest's workingDir wins. */
    int rc = loom_exec__job_io(job, h, cwd, sizeof cwd, yaml_env, err);
    if (rc != LOOM_OK)
        goto out;
    loom_exec__slurm_env(job, yaml_env);
    const char *script = job->script ? job->script : "";
    if (job->format == LOOM_EXEC_YAML) {
        rc = loom_exec_yaml_command(script, strlen(script), argv, yaml_env, cwd, sizeof cwd, err);
        if (rc != LOOM_OK) {
            loom_err_prefix(err, "job %lld", (long long)job->id);
            goto out;
        }
    } else {
        rc = write_in_dir(h->dir, "script.sh", script, strlen(script), 0700, err);
        if (rc != LOOM_OK)
            goto out;
        char path[LOOM_EXEC_PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/script.sh", h->dir);
        json_array_append_new(argv, json_string("/bin/bash"));
        json_array_append_new(argv, json_string(job->run_as_owner ? "/dev/fd/3" : path));
        if (job->run_as_owner && (rc = owner_script(job, path, owner, err)) != LOOM_OK)
            goto out;
    }
    if (job->run_as_owner)
        json_object_set_new(owner, "uid", json_integer(job->uid));
    if (job->run_as_owner)
        json_object_set_new(owner, "gid", json_integer(job->gid));
    cgroup_for_job(x, job, h);
    json_t *spec = json_pack("{s:O, s:o, s:s, s:s, s:s, s:s, s:I, s:I, s:I}", "argv", argv, "env",
                             build_env(job, yaml_env), "cwd", cwd, "stdout", h->stdout_path,
                             "stderr", h->stderr_path, "cgroup", h->cgroup, "time_limit_ns",
                             (json_int_t)job->time_limit_ns, "grace_ns", (json_int_t)x->grace_ns,
                             "output_max", (json_int_t)x->output_max);
    if (spec && job->run_as_owner)
        json_object_set(spec, "owner", owner);
    loom_buf_t b = LOOM_BUF_INIT;
    loom_json_dump(&b, spec);
    json_decref(spec);
    rc = write_in_dir(h->dir, "spec.json", b.data, b.len, 0600, err);
    loom_buf_free(&b);
    if (rc != LOOM_OK)
        goto out;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    char log[LOOM_EXEC_PATH_MAX + 32];
    snprintf(log, sizeof log, "%s/shepherd.log", h->dir);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    char *args[] = {x->shepherd, h->dir, NULL};
    char **clean = shepherd_env();
    pid_t pid;
    int e = clean ? posix_spawn(&pid, x->shepherd, &fa, &attr, args, clean) : ENOMEM;
    free_env(clean);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (e != 0) {
        rc = loom_err_errno(err, LOOM_EIO, e, "job %lld: cannot start shepherd '%s'",
                            (long long)job->id, x->shepherd);
        goto out;
    }
    h->shepherd_pid = pid;
    loom_exec_proc_start_time(pid, &h->shepherd_start, NULL);
    rc = LOOM_OK;
out:
    json_decref(argv);
    json_decref(yaml_env);
    json_decref(owner);
    return rc;
}

static int read_status(const loom_exec_handle_t *h, loom_exec_outcome_t *out, loom_err_t *err)
{
    char path[LOOM_EXEC_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/status.json", h->dir);
    json_t *st;
    int rc = loom_json_load_file(path, &st, err);
    if (rc != LOOM_OK)
        return rc;
    memset(out, 0, sizeof *out);
    json_t *code = json_object_get(st, "exit_code"), *sig = json_object_get(st, "signal");
    out->exit_code = json_is_integer(code) ? (int)json_integer_value(code) : -1;
    out->signal = json_is_integer(sig) ? (int)json_integer_value(sig) : 0;
    out->start_ns = json_integer_value(json_object_get(st, "start_ns"));
    out->end_ns = json_integer_value(json_object_get(st, "end_ns"));
    out->cpu_user_us = json_integer_value(json_object_get(st, "cpu_user_us"));
    out->cpu_sys_us = json_integer_value(json_object_get(st, "cpu_sys_us"));
    out->max_rss_kb = json_integer_value(json_object_get(st, "max_rss_kb"));
    int64_t limit = json_integer_value(json_object_get(st, "time_limit_ns"));
    char d[32];
    if (json_is_true(json_object_get(st, "cancelled"))) {
        out->end = LOOM_EXEC_CANCELLED;
        snprintf(out->reason, sizeof out->reason, "cancelled");
    } else if (json_is_true(json_object_get(st, "output_limited"))) {
        out->end = LOOM_EXEC_FAILED;
        char size[32];
        loom_format_size((uint64_t)json_integer_value(json_object_get(st, "output_max")), size,
                         sizeof size);
        snprintf(out->reason, sizeof out->reason,
                 "output limit %s reached (stdout and stderr together)", size);
    } else if (json_is_true(json_object_get(st, "timed_out"))) {
        out->end = LOOM_EXEC_TIMEOUT;
        snprintf(out->reason, sizeof out->reason, "time limit %s reached",
                 loom_format_duration(limit, d, sizeof d));
    } else if (out->exit_code == 0) {
        out->end = LOOM_EXEC_COMPLETED;
        snprintf(out->reason, sizeof out->reason, "exit code 0");
    } else if (out->exit_code > 0 && json_is_string(json_object_get(st, "start_error"))) {
        /* The job never ran: the shepherd's child says why (shepherd.c). */
        out->end = LOOM_EXEC_FAILED;
        snprintf(out->reason, sizeof out->reason, "exit code %d: %s", out->exit_code,
                 json_string_value(json_object_get(st, "start_error")));
    } else if (out->exit_code > 0) {
        out->end = LOOM_EXEC_FAILED;
        snprintf(out->reason, sizeof out->reason, "exit code %d%s", out->exit_code,
                 out->exit_code == 127   ? " (command not found)"
                 : out->exit_code == 126 ? " (cannot run the command; see its stderr)"
                                         : "");
    } else {
        out->end = LOOM_EXEC_FAILED;
        snprintf(out->reason, sizeof out->reason, "killed by signal %d (%s)", out->signal,
                 strsignal(out->signal));
    }
    json_decref(st);
    return LOOM_OK;
}

/* Is the shepherd of h still the process we started? */
static bool shepherd_alive(const loom_exec_handle_t *h)
{
    uint64_t start;
    if (h->shepherd_pid <= 0 || loom_exec_proc_start_time(h->shepherd_pid, &start, NULL) != LOOM_OK)
        return false;
    return h->shepherd_start == 0 || start == h->shepherd_start;
}

/* The job's cgroup, where this executor makes them (cgroup_for_job), or
 * false without cgroups. */
static bool job_cgroup(const loom_exec_local_t *x, const loom_exec_handle_t *h, char *out,
                       size_t outlen)
{
    if (h->cgroup[0])
        return snprintf(out, outlen, "%s", h->cgroup) < (int)outlen;
    if (!x->cgroup_base[0])
        return false;
    return snprintf(out, outlen, "%.400s/job-%lld", x->cgroup_base, (long long)h->job_id) <
           (int)outlen;
}

/* A job whose shepherd died without an outcome (kill -9) may still have
 * processes: in its process group, and (setsid ones too) in its cgroup.
 * Kills them all. True once none is left, and the cgroup is removed;
 * until then the job counts as running, so its resources stay allocated. */
static bool lost_job_gone(const loom_exec_local_t *x, const loom_exec_handle_t *h)
{
    char path[LOOM_EXEC_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/shepherd.json", h->dir);
    json_t *pf;
    if (loom_json_load_file(path, &pf, NULL) == LOOM_OK) {
        pid_t job = (pid_t)json_integer_value(json_object_get(pf, "job_pid"));
        if (job > 1)
            kill(-job, SIGKILL); /* the job's process group */
        json_decref(pf);
    }
    char cg[LOOM_EXEC_PATH_MAX];
    if (!job_cgroup(x, h, cg, sizeof cg))
        return true;
    struct stat st;
    if (stat(cg, &st) != 0)
        return true; /* no cgroup (any more) */
    snprintf(path, sizeof path, "%s/cgroup.kill", cg);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    bool killed = fd >= 0 && write(fd, "1", 1) == 1;
    if (fd >= 0)
        close(fd);
    loom_buf_t procs = LOOM_BUF_INIT;
    snprintf(path, sizeof path, "%s/cgroup.procs", cg);
    bool empty = loom_buf_read_file(&procs, path, NULL) == LOOM_OK && procs.len == 0;
    for (char *p = procs.data; !killed && p && *p;) { /* no cgroup.kill (before Linux 5.14) */
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        if (pid > 1)
            kill((pid_t)pid, SIGKILL);
        p = end;
    }
    loom_buf_free(&procs);
    if (empty && rmdir(cg) != 0 && errno != ENOENT)
        loom_log_warn("exec.cgroup_remove_failed", "cgroup=\"%s\" error=\"%s\"", cg,
                      strerror(errno));
    return empty;
}

int loom_exec_local_poll(loom_exec_local_t *x, loom_exec_handle_t *h, loom_exec_outcome_t *out,
                         loom_err_t *err)
{
    int wstatus;
    pid_t r = waitpid(h->shepherd_pid, &wstatus, WNOHANG);
    if (r == 0)
        return 0; /* our child, still running */
    if (r < 0 && errno == ECHILD && shepherd_alive(h))
        return 0; /* adopted after a restart, still running */
    loom_err_t e2;
    int rc = read_status(h, out, &e2);
    if (rc == LOOM_OK)
        return 1;
    if (!lost_job_gone(x, h))
        return 0; /* its processes are being killed: still holds its resources */
    memset(out, 0, sizeof *out);
    out->end = LOOM_EXEC_FAILED;
    out->exit_code = -1;
    if (r == h->shepherd_pid)
        snprintf(out->reason, sizeof out->reason,
                 "lost: the shepherd ended (status %d) without recording an outcome (see %.300s/"
                 "shepherd.log); what was left of the job was killed",
                 wstatus, h->dir);
    else
        snprintf(out->reason, sizeof out->reason,
                 "lost: the job's shepherd is gone and left no outcome; what was left of the "
                 "job was killed");
    (void)err;
    return 1;
}

int loom_exec_local_cancel(loom_exec_local_t *x, loom_exec_handle_t *h, loom_err_t *err)
{
    (void)x;
    if (!shepherd_alive(h))
        return LOOM_OK; /* already ended; poll reports how */
    if (kill(h->shepherd_pid, SIGTERM) != 0 && errno != ESRCH)
        return loom_err_errno(err, LOOM_EIO, errno, "job %lld: cannot signal shepherd %d",
                              (long long)h->job_id, (int)h->shepherd_pid);
    return LOOM_OK;
}

/* Finds a running "loom-shepherd DIR" by its command line: for a job whose
 * shepherd was spawned but whose PID was recorded nowhere yet (loomd died
 * in between, before the shepherd wrote shepherd.json). */
static pid_t find_shepherd(const char *dir)
{
    DIR *proc = opendir("/proc");
    if (!proc)
        return 0;
    pid_t found = 0;
    struct dirent *e;
    while (!found && (e = readdir(proc)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%.20s/cmdline", e->d_name);
        loom_buf_t b = LOOM_BUF_INIT;
        if (loom_buf_read_file(&b, path, NULL) == LOOM_OK && b.len > 0) {
            const char *argv0 = b.data, *slash = strrchr(argv0, '/');
            size_t n0 = strlen(argv0);
            const char *argv1 = n0 + 1 < b.len ? argv0 + n0 + 1 : "";
            if (strcmp(slash ? slash + 1 : argv0, "loom-shepherd") == 0 && strcmp(argv1, dir) == 0)
                found = (pid_t)atoi(e->d_name);
        }
        loom_buf_free(&b);
    }
    closedir(proc);
    return found;
}

static int signal_shepherd(const loom_exec_handle_t *h, int sig, const char *what, loom_err_t *err)
{
    if (!shepherd_alive(h))
        return loom_err_set(err, LOOM_ESTATE, "job %lld: cannot %s, it has ended",
                            (long long)h->job_id, what);
    if (kill(h->shepherd_pid, sig) != 0)
        return loom_err_errno(err, LOOM_EIO, errno, "job %lld: cannot %s", (long long)h->job_id,
                              what);
    return LOOM_OK;
}

int loom_exec_local_suspend(loom_exec_local_t *x, loom_exec_handle_t *h, loom_err_t *err)
{
    (void)x;
    return signal_shepherd(h, SIGUSR1, "suspend", err);
}

int loom_exec_local_resume(loom_exec_local_t *x, loom_exec_handle_t *h, loom_err_t *err)
{
    (void)x;
    return signal_shepherd(h, SIGUSR2, "resume", err);
}

int loom_exec_local_adopt(loom_exec_local_t *x, loom_exec_handle_t *h, loom_err_t *err)
{
    loom_exec__job_paths(x->jobs_dir, h);
    if (h->shepherd_pid <= 0) {
        /* loomd died between spawning and recording: the shepherd wrote
         * its own PID file. */
        char path[LOOM_EXEC_PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/shepherd.json", h->dir);
        json_t *pf;
        if (loom_json_load_file(path, &pf, NULL) == LOOM_OK) {
            h->shepherd_pid = (pid_t)json_integer_value(json_object_get(pf, "shepherd_pid"));
            h->shepherd_start = (uint64_t)json_integer_value(json_object_get(pf, "shepherd_start"));
            json_decref(pf);
        } else if ((h->shepherd_pid = find_shepherd(h->dir)) > 0) {
            loom_exec_proc_start_time(h->shepherd_pid, &h->shepherd_start, NULL);
        }
    }
    if (shepherd_alive(h))
        return LOOM_OK;
    char path[LOOM_EXEC_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/status.json", h->dir);
    if (access(path, R_OK) == 0)
        return LOOM_OK;
    snprintf(path, sizeof path, "%s/shepherd.json", h->dir);
    if (h->shepherd_pid <= 0 && access(path, F_OK) != 0)
        return loom_err_set(err, LOOM_ESTATE,
                            "job %lld never started: loomd stopped before its shepherd ran",
                            (long long)h->job_id);
    return loom_err_set(err, LOOM_ENOTFOUND,
                        "job %lld: shepherd %d is gone and left no status in %s",
                        (long long)h->job_id, (int)h->shepherd_pid, h->dir);
}

static int ops_start(void *self, const loom_exec_job_t *job, loom_exec_handle_t *h, loom_err_t *err)
{
    return loom_exec_local_start(self, job, h, err);
}
static int ops_poll(void *self, loom_exec_handle_t *h, loom_exec_outcome_t *out, loom_err_t *err)
{
    return loom_exec_local_poll(self, h, out, err);
}
static int ops_cancel(void *self, loom_exec_handle_t *h, loom_err_t *err)
{
    return loom_exec_local_cancel(self, h, err);
}
static int ops_adopt(void *self, loom_exec_handle_t *h, loom_err_t *err)
{
    return loom_exec_local_adopt(self, h, err);
}

const loom_exec_ops_t loom_exec_local_ops = {"local", ops_start, ops_poll, ops_cancel, ops_adopt};
