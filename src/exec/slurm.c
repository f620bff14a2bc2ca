/* The Slurm executor: loom decides, Slurm runs.
 *
 * It drives Slurm through its command-line tools (sbatch, squeue, scontrol,
 * scancel, sinfo, sacct) rather than libslurm: their text output with -o/-P
 * formats is a stable interface across Slurm versions, while libslurm's ABI
 * changes with every release and must match the cluster's exactly (see
 * docs/slurm.md). Each call runs the tool with posix_spawn and reads its
 * output; a refusal carries Slurm's own message.
 *
 * Every submission carries a tag (loom's job id) in Slurm's --comment, so
 * after a crash loomd finds a job it submitted but never recorded, instead
 * of submitting it twice.
 *
 * A job of another user than loomd's (multi-user loomd, docs/security.md)
 * is submitted as that user, as Slurm's own users submit: a forked child
 * takes the owner's groups, gid and uid (owner.c, as the local shepherd
 * does) and only then runs sbatch, so MUNGE names the owner and Slurm runs
 * the job as the owner, in the owner's working directory, writing output
 * files the owner may write. The script reaches sbatch on its standard
 * input (the job directory is closed to the owner), and sbatch gets a clean
 * environment: the job's variables, loom's, the owner's HOME, USER and
 * LOGNAME, and of loomd's only PATH, LANG, TMPDIR, TZ and SLURM_CONF.
 * Following and cancelling (squeue, scontrol, sacct, scancel) stay with
 * loomd's user, root, whom Slurm lets see and cancel every job; loomd has
 * checked that the caller may act on the job before. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/exec_private.h"
#include "loom/exec.h"

extern char **environ;

struct loom_exec_slurm {
    char jobs_dir[LOOM_EXEC_PATH_MAX];
    char partition[64];
    char bin_dir[LOOM_EXEC_PATH_MAX];
    json_t *snap; /* Slurm job id -> [state, reason] from the last sync, or NULL */
};

int loom_exec_slurm_new(const loom_exec_slurm_config_t *cfg, loom_exec_slurm_t **out,
                        loom_err_t *err)
{
    int rc = loom_exec__check_jobs_dir(cfg->jobs_dir, err);
    if (rc)
        return rc;
    loom_exec_slurm_t *x = calloc(1, sizeof *x);
    if (!x)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    snprintf(x->jobs_dir, sizeof x->jobs_dir, "%s", cfg->jobs_dir);
    snprintf(x->partition, sizeof x->partition, "%s", cfg->partition ? cfg->partition : "");
    snprintf(x->bin_dir, sizeof x->bin_dir, "%s", cfg->bin_dir ? cfg->bin_dir : "");
    if (mkdir(x->jobs_dir, 0755) != 0 && errno != EEXIST) {
        int e = errno;
        free(x);
        return loom_err_errno(err, LOOM_EIO, e, "cannot create jobs directory '%s'", cfg->jobs_dir);
    }
    *out = x;
    return LOOM_OK;
}

void loom_exec_slurm_free(loom_exec_slurm_t *x)
{
    if (!x)
        return;
    json_decref(x->snap);
    free(x);
}

/* A tool run as a job's owner rather than loomd's user, with the batch
 * script as its standard input. */
typedef struct tool_owner {
    uid_t uid;
    gid_t gid;
    gid_t groups[256];
    int ngroups;
    int stdin_fd;
} tool_owner_t;

/* The tool's path: bin_dir/NAME, or NAME found in PATH as execvp would (a
 * forked child of the threaded loomd must not search itself). */
static int tool_path(const loom_exec_slurm_t *x, const char *name, char *out, size_t outlen,
                     loom_err_t *err)
{
    if (x->bin_dir[0] || strchr(name, '/')) {
        snprintf(out, outlen, "%s%s%s", x->bin_dir, x->bin_dir[0] ? "/" : "", name);
        return LOOM_OK;
    }
    const char *path = getenv("PATH");
    for (const char *p = path && *path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        if (n > 0 && (size_t)snprintf(out, outlen, "%.*s/%s", (int)n, p, name) < outlen &&
            access(out, X_OK) == 0)
            return LOOM_OK;
        p += n + (p[n] == ':');
    }
    return loom_err_set(err, LOOM_EUNAVAIL, "cannot run '%s': not in PATH (is Slurm installed?)",
                        name);
}

/* The forked child that becomes the owner and runs the tool in cwd.
 * System calls only. A failure before exec goes to the parent through
 * `report` as two ints: the step (0 redirect, 1 become the owner, 2 change
 * directory, 3 exec) and the errno. */
static void owner_child(const char *path, char *const argv[], char *const envp[],
                        const tool_owner_t *as, const char *cwd, int out, int errfd, int report)
{
    int msg[2] = {0, 0};
    const char *what = "";
    if (report < 3 || dup2(as->stdin_fd, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0) {
        msg[1] = report < 3 ? EBADF : errno;
    } else {
        /* Nothing of loomd's stays open in sbatch; report closes on exec. */
        if (report > 3)
            close_range(3, (unsigned)report - 1, 0);
        close_range((unsigned)report + 1, ~0U, 0);
        msg[0] = 1;
        msg[1] = loom_exec__become(as->uid, as->gid, as->groups, as->ngroups, &what);
        if (msg[1] == 0) {
            msg[0] = 2;
            msg[1] = cwd && chdir(cwd) != 0 ? errno : 0;
        }
        if (msg[1] == 0) {
            execve(path, argv, envp);
            msg[0] = 3;
            msg[1] = errno;
        }
    }
    if (write(report, msg, sizeof msg) < 0)
        _exit(127);
    _exit(127);
}

/* Starts the tool in cwd (NULL: loomd's): posix_spawn as loomd's user, or
 * a fork that becomes as->uid first. out and errfd become its stdout and
 * stderr. */
static int spawn_tool(const char *path, char *const argv[], char *const envp[],
                      const tool_owner_t *as, const char *cwd, int out, int errfd, pid_t *pid,
                      loom_err_t *err)
{
    if (!as) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, out, 1);
        posix_spawn_file_actions_adddup2(&fa, errfd, 2);
        if (cwd)
            posix_spawn_file_actions_addchdir_np(&fa, cwd);
        int e = posix_spawnp(pid, path, &fa, NULL, argv, envp ? envp : environ);
        posix_spawn_file_actions_destroy(&fa);
        return e ? loom_err_errno(err, LOOM_EUNAVAIL, e, "cannot run '%s' (is Slurm installed?)",
                                  path)
                 : LOOM_OK;
    }
    int rp[2];
    if (pipe2(rp, O_CLOEXEC) != 0)
        return loom_err_errno(err, LOOM_EIO, errno, "pipe");
    *pid = fork();
    if (*pid == 0)
        owner_child(path, argv, envp, as, cwd, out, errfd, rp[1]);
    int e = errno;
    close(rp[1]);
    if (*pid < 0) {
        close(rp[0]);
        return loom_err_errno(err, LOOM_EIO, e, "fork");
    }
    int msg[2];
    ssize_t n;
    while ((n = read(rp[0], msg, sizeof msg)) < 0 && errno == EINTR) {
    }
    close(rp[0]);
    if (n != (ssize_t)sizeof msg)
        return LOOM_OK; /* closed on exec: the tool runs */
    while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR) {
    }
    static const char *step[] = {"cannot redirect its descriptors", "cannot become the owner",
                                 "cannot change to the working directory", "cannot execute"};
    return loom_err_errno(err, msg[0] == 3 ? LOOM_EUNAVAIL : LOOM_EIO, msg[1],
                          "running '%s' as uid %u in '%s': %s", path, (unsigned)as->uid,
                          cwd ? cwd : ".", step[msg[0] >= 0 && msg[0] <= 3 ? msg[0] : 0]);
}

/* Runs a Slurm tool (as loomd's user, or as a job's owner: `as`; in cwd,
 * NULL: loomd's), collecting stdout and stderr. Returns the exit status
 * (>= 0) or a negative error if it could not run. */
static int run_tool_as(loom_exec_slurm_t *x, char *const argv[], char *const envp[],
                       const tool_owner_t *as, const char *cwd, loom_buf_t *out, loom_buf_t *errb,
                       loom_err_t *err)
{
    char path[LOOM_EXEC_PATH_MAX + 32];
    int rc = LOOM_OK;
    if (as) /* searched here: the forked child may not */
        rc = tool_path(x, argv[0], path, sizeof path, err);
    else /* posix_spawnp searches PATH */
        snprintf(path, sizeof path, "%s%s%s", x->bin_dir, x->bin_dir[0] ? "/" : "", argv[0]);
    if (rc != LOOM_OK)
        return rc;
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) != 0)
        return loom_err_errno(err, LOOM_EIO, errno, "pipe");
    if (pipe2(pe, O_CLOEXEC) != 0) {
        close(po[0]);
        close(po[1]);
        return loom_err_errno(err, LOOM_EIO, errno, "pipe");
    }
    pid_t pid;
    rc = spawn_tool(path, argv, envp, as, cwd, po[1], pe[1], &pid, err);
    close(po[1]);
    close(pe[1]);
    if (rc != LOOM_OK) {
        close(po[0]);
        close(pe[0]);
        return rc;
    }
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    loom_buf_t *bufs[2] = {out, errb};
    int open_fds = 2;
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char chunk[4096];
            ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
            if (n > 0) {
                loom_buf_append(bufs[i], chunk, (size_t)n);
            } else if (n == 0 || errno != EINTR) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!out->data)
        loom_buf_append(out, "", 0);
    if (!errb->data)
        loom_buf_append(errb, "", 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int run_tool(loom_exec_slurm_t *x, char *const argv[], loom_buf_t *out, loom_buf_t *errb,
                    loom_err_t *err)
{
    return run_tool_as(x, argv, NULL, NULL, NULL, out, errb, err);
}

static void chomp(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\r'))
        s[--n] = '\0';
}

/* Whether env (an array of "NAME=VALUE") sets the name of kv ("NAME" or
 * "NAME=..."). */
static bool env_has(const json_t *env, const char *kv)
{
    size_t nl = strcspn(kv, "="), i;
    json_t *v;
    json_array_foreach(env, i, v)
    {
        const char *s = json_string_value(v);
        if (strncmp(s, kv, nl) == 0 && s[nl] == '=')
            return true;
    }
    return false;
}

/* NAME=VALUE, unless env sets NAME already (the job's own values win). */
static void env_add(json_t *env, const char *name, const char *value)
{
    if (!value || env_has(env, name))
        return;
    loom_buf_t b = LOOM_BUF_INIT;
    loom_buf_appendf(&b, "%s=%s", name, value);
    json_array_append_new(env, json_string(b.data));
    loom_buf_free(&b);
}

/* sbatch's environment, which Slurm passes on to the job (its default,
 * --export=ALL: an explicit --export list costs Slurm about 0.7 s more per
 * job here, docs/bench/slurm.md). loom's variables and the job's own come
 * first; then, for loomd's own jobs, the rest of loomd's environment; for a
 * job run as its owner, the owner's HOME, USER and LOGNAME and of loomd's
 * only what sbatch needs (see the top of the file). */
static json_t *sbatch_env(const loom_exec_job_t *job, json_t *opt_env)
{
    json_t *env = json_array();
    char v[64];
    snprintf(v, sizeof v, "%lld", (long long)job->id);
    env_add(env, "LOOM_JOB_ID", v);
    snprintf(v, sizeof v, "%lld", (long long)job->gpu_share_milli);
    env_add(env, "LOOM_GPU_SHARE_MILLI", v);
    for (const char *const *e = job->env; e && *e; e++)
        json_array_append_new(env, json_string(*e));
    json_array_extend(env, opt_env);
    if (!job->run_as_owner) {
        for (char **e = environ; *e; e++)
            if (!env_has(env, *e))
                json_array_append_new(env, json_string(*e));
        return env;
    }
    struct passwd pwbuf, *pw = NULL;
    char pwtext[4096];
    if (getpwuid_r(job->uid, &pwbuf, pwtext, sizeof pwtext, &pw) != 0)
        pw = NULL;
    static const char *keep[] = {"PATH", "LANG", "TMPDIR", "TZ", "SLURM_CONF"};
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        env_add(env, keep[i], getenv(keep[i]));
    env_add(env, "PATH", "/usr/local/bin:/usr/bin:/bin");
    env_add(env, "HOME", pw ? pw->pw_dir : NULL);
    env_add(env, "USER", pw ? pw->pw_name : NULL);
    env_add(env, "LOGNAME", pw ? pw->pw_name : NULL);
    return env;
}

/* Runs sbatch in the job's working directory, as a user runs it in the
 * submit directory (Slurm's SLURM_SUBMIT_DIR), as the job's owner when it
 * is run as its owner (the script then on its standard input), and keeps
 * the Slurm job id in h. */
static int submit(loom_exec_slurm_t *x, const loom_exec_job_t *job, char *const argv[],
                  const json_t *env, const char *spath, const char *cwd, loom_exec_handle_t *h,
                  loom_err_t *err)
{
    size_t ne = json_array_size(env);
    char **envp = calloc(ne + 1, sizeof *envp);
    if (!envp)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    for (size_t i = 0; i < ne; i++)
        envp[i] = (char *)json_string_value(json_array_get(env, i));
    tool_owner_t as = {.uid = job->uid, .gid = job->gid, .stdin_fd = -1};
    as.ngroups = (int)(sizeof as.groups / sizeof as.groups[0]);
    int status = LOOM_OK;
    if (job->run_as_owner) { /* the script is opened here, as loomd's user */
        status = loom_exec__owner_groups(job->uid, job->gid, as.groups, &as.ngroups, err);
        if (status == LOOM_OK && (as.stdin_fd = open(spath, O_RDONLY | O_CLOEXEC)) < 0)
            status = loom_err_errno(err, LOOM_EIO, errno, "cannot open '%s'", spath);
    }
    loom_buf_t out = LOOM_BUF_INIT, errb = LOOM_BUF_INIT;
    if (status == LOOM_OK)
        status = run_tool_as(x, argv, envp, job->run_as_owner ? &as : NULL, cwd, &out, &errb, err);
    if (as.stdin_fd >= 0)
        close(as.stdin_fd);
    free(envp);
    int rc;
    if (status < 0) {
        rc = loom_err_prefix(err, "job %lld", (long long)job->id);
    } else if (status != 0) {
        chomp(errb.data);
        rc = loom_err_set(err, LOOM_EINVAL, "job %lld: Slurm refused it: %s", (long long)job->id,
                          errb.data[0] ? errb.data : "sbatch failed without a message");
    } else {
        chomp(out.data);
        char *semi = strchr(out.data, ';'); /* "id;cluster" on federations */
        if (semi)
            *semi = '\0';
        snprintf(h->ext_id, sizeof h->ext_id, "%s", out.data);
        snprintf(h->ext_state, sizeof h->ext_state, "PENDING");
        rc = LOOM_OK;
    }
    loom_buf_free(&out);
    loom_buf_free(&errb);
    return rc;
}

int loom_exec_slurm_start(loom_exec_slurm_t *x, const loom_exec_job_t *job, loom_exec_handle_t *h,
                          loom_err_t *err)
{
    memset(h, 0, sizeof *h);
    h->job_id = job->id;
    snprintf(h->tag, sizeof h->tag, "%s", job->tag ? job->tag : "");
    loom_exec__job_paths(x->jobs_dir, h);
    if (mkdir(h->dir, 0755) != 0 && errno != EEXIST)
        return loom_err_errno(err, LOOM_EIO, errno, "job %lld: cannot create '%s'",
                              (long long)job->id, h->dir);
    snprintf(h->cgroup_note, sizeof h->cgroup_note, "limits enforced by Slurm");

    /* The batch script: a YAML job becomes a script that execs the first
     * container's command, like the local executor runs it. */
    loom_buf_t script = LOOM_BUF_INIT;
    int rc = LOOM_OK;
    if (job->format == LOOM_EXEC_YAML) {
        json_t *argv = json_array(), *env = json_array();
        char wd[LOOM_EXEC_PATH_MAX] = "";
        rc =
            loom_exec_yaml_command(job->script, strlen(job->script), argv, env, wd, sizeof wd, err);
        if (rc == LOOM_OK) {
            loom_buf_append_str(&script, "#!/bin/bash\n");
            size_t i;
            json_t *v;
            json_array_foreach(env, i, v)
            {
                const char *kv = json_string_value(v), *eq = strchr(kv, '=');
                loom_buf_appendf(&script, "export %.*s='", (int)(eq - kv), kv);
                for (const char *p = eq + 1; *p; p++)
                    *p == '\'' ? loom_buf_append_str(&script, "'\\''")
                               : loom_buf_append_char(&script, *p);
                loom_buf_append_str(&script, "'\n");
            }
            if (wd[0])
                loom_buf_appendf(&script, "cd '%s' || exit 1\n", wd);
            loom_buf_append_str(&script, "exec");
            json_array_foreach(argv, i, v)
            {
                loom_buf_append_str(&script, " '");
                for (const char *p = json_string_value(v); *p; p++)
                    *p == '\'' ? loom_buf_append_str(&script, "'\\''")
                               : loom_buf_append_char(&script, *p);
                loom_buf_append_char(&script, '\'');
            }
            loom_buf_append_char(&script, '\n');
        }
        json_decref(argv);
        json_decref(env);
        if (rc != LOOM_OK) {
            loom_buf_free(&script);
            return loom_err_prefix(err, "job %lld", (long long)job->id);
        }
    } else {
        if (!job->script || strncmp(job->script, "#!", 2) != 0)
            loom_buf_append_str(&script, "#!/bin/bash\n");
        loom_buf_append_str(&script, job->script ? job->script : "");
    }
    char spath[LOOM_EXEC_PATH_MAX + 32];
    snprintf(spath, sizeof spath, "%s/script.sh", h->dir);
    rc = loom_write_file_atomic(spath, script.data, script.len, 0755, err);
    loom_buf_free(&script);
    if (rc != LOOM_OK)
        return rc;

    /* The job's working directory and output files from its options, as
     * the local executor takes them (jobio.c; a shared file system). */
    char cwd[LOOM_EXEC_PATH_MAX];
    snprintf(cwd, sizeof cwd, "%s", h->dir);
    json_t *opt_env = json_array(); /* options.env, "NAME=VALUE" */
    json_t *opts = job->options_json ? json_loads(job->options_json, 0, NULL) : NULL;
    bool has_wd = json_is_string(json_object_get(opts, "workdir"));
    json_decref(opts);
    rc = loom_exec__job_io(job, h, cwd, sizeof cwd, opt_env, err);
    if (rc == LOOM_OK && job->run_as_owner && !has_wd)
        rc = loom_err_set(err, LOOM_EINVAL,
                          "job %lld: a job run as its owner needs a working directory "
                          "(options.workdir; loom submit sends the directory it is run in): "
                          "the job directory is closed to its owner",
                          (long long)job->id);
    if (rc != LOOM_OK) {
        json_decref(opt_env);
        return rc;
    }

    /* sbatch options. The job's environment variables go through --export. */
    char opt[16][LOOM_EXEC_PATH_MAX + 32];
    char *argv[40];
    int n = 0, k = 0;
    bool cut = false; /* an option did not fit: refused, never sent cut short */
    argv[n++] = "sbatch";
    argv[n++] = "--parsable";
    argv[n++] = "--no-requeue"; /* pinned by loom: Slurm must not move or rerun it */
#define OPT(...)                                                                                   \
    (cut |= snprintf(opt[k], sizeof opt[k], __VA_ARGS__) >= (int)sizeof opt[k],                    \
     argv[n++] = opt[k++])
    OPT("--job-name=%s", job->name && *job->name ? job->name : "loom");
    OPT("--comment=%s", job->tag ? job->tag : "");
    OPT("--output=%s", h->stdout_path);
    OPT("--error=%s", h->stderr_path);
    OPT("--chdir=%s", cwd);
    if (x->partition[0])
        OPT("--partition=%s", x->partition);
    if (job->node && *job->node)
        OPT("--nodelist=%s", job->node);
    if (job->n_gpus)
        OPT("--gres=gpu:%zu", job->n_gpus);
    else if (job->gpu_share_milli > 0)
        OPT("--gres=gpu:1"); /* Slurm has no fractional GPU; loom packs shares itself */
    OPT("--cpus-per-task=%lld",
        job->cpus_milli > 0 ? (long long)((job->cpus_milli + 999) / 1000) : 1LL);
    if (job->memory_bytes)
        OPT("--mem=%lluM", (unsigned long long)((job->memory_bytes + (1 << 20) - 1) >> 20));
    if (job->time_limit_ns > 0)
        OPT("--time=%lld",
            (long long)((job->time_limit_ns + 60 * LOOM_NS_PER_S - 1) / (60 * LOOM_NS_PER_S)));
#undef OPT
    if (cut) {
        json_decref(opt_env);
        return loom_err_set(err, LOOM_EINVAL,
                            "job %lld: an sbatch option (job name, path or partition) is longer "
                            "than %zu bytes",
                            (long long)job->id, sizeof opt[0] - 1);
    }
    json_t *env = sbatch_env(job, opt_env);
    json_decref(opt_env);
    if (!job->run_as_owner)
        argv[n++] = spath; /* as the owner: the script comes on stdin */
    argv[n] = NULL;
    rc = env ? submit(x, job, argv, env, spath, cwd, h, err)
             : loom_err_set(err, LOOM_ENOMEM, "out of memory");
    json_decref(env);
    return rc;
}

int loom_exec_slurm_map_state(const char *state, const char *exit_code, const char *reason,
                              loom_exec_outcome_t *out)
{
    static const char *running[] = {"PENDING",   "CONFIGURING",  "RUNNING",     "COMPLETING",
                                    "SUSPENDED", "REQUEUED",     "RESIZING",    "SIGNALING",
                                    "STAGE_OUT", "REQUEUE_HOLD", "REQUEUE_FED", "STOPPED"};
    for (size_t i = 0; i < sizeof running / sizeof running[0]; i++)
        if (strcmp(state, running[i]) == 0)
            return 0;
    memset(out, 0, sizeof *out);
    int code = -1, sig = 0;
    if (exit_code && sscanf(exit_code, "%d:%d", &code, &sig) < 1)
        code = -1;
    out->exit_code = sig ? -1 : code;
    out->signal = sig;
    if (strcmp(state, "COMPLETED") == 0) {
        out->end = LOOM_EXEC_COMPLETED;
        snprintf(out->reason, sizeof out->reason, "exit code 0 (Slurm: COMPLETED)");
    } else if (strcmp(state, "TIMEOUT") == 0 || strcmp(state, "DEADLINE") == 0) {
        out->end = LOOM_EXEC_TIMEOUT;
        snprintf(out->reason, sizeof out->reason, "time limit reached (Slurm: %s)", state);
    } else if (strncmp(state, "CANCELLED", 9) == 0) {
        out->end = LOOM_EXEC_CANCELLED;
        snprintf(out->reason, sizeof out->reason, "cancelled (Slurm: CANCELLED)");
    } else if (strcmp(state, "FAILED") == 0) {
        out->end = LOOM_EXEC_FAILED;
        if (sig)
            snprintf(out->reason, sizeof out->reason, "killed by signal %d (Slurm: FAILED)", sig);
        else
            snprintf(out->reason, sizeof out->reason, "exit code %d (Slurm: FAILED)", code);
    } else {
        /* NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, PREEMPTED, REVOKED, ... */
        out->end = LOOM_EXEC_FAILED;
        snprintf(out->reason, sizeof out->reason, "Slurm: %s%s%s", state,
                 reason && *reason && strcmp(reason, "None") != 0 ? ", " : "",
                 reason && strcmp(reason, "None") != 0 ? reason : "");
    }
    return 1;
}

/* Value of "Key=" in scontrol's one-line output, copied to out. */
static bool scontrol_field(const char *text, const char *key, char *out, size_t outlen)
{
    size_t kl = strlen(key);
    for (const char *p = text; (p = strstr(p, key)) != NULL; p += kl) {
        if ((p == text || p[-1] == ' ' || p[-1] == '\n') && p[kl] == '=') {
            const char *v = p + kl + 1;
            size_t n = strcspn(v, " \n");
            snprintf(out, outlen, "%.*s", (int)n, v);
            return true;
        }
    }
    return false;
}

int loom_exec_slurm_sync(loom_exec_slurm_t *x, loom_err_t *err)
{
    json_decref(x->snap);
    x->snap = NULL;
    char *argv[] = {"squeue", "-h", "-a", "-t", "all", "-o", "%i|%T|%r", NULL};
    loom_buf_t o = LOOM_BUF_INIT, e = LOOM_BUF_INIT;
    int status = run_tool(x, argv, &o, &e, err);
    int rc = LOOM_OK;
    if (status < 0) {
        rc = status;
    } else if (status != 0) {
        chomp(e.data);
        rc = loom_err_set(err, LOOM_EUNAVAIL, "squeue failed: %s", e.data);
    } else {
        x->snap = json_object();
        char *save = NULL;
        for (char *line = strtok_r(o.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            char *b1 = strchr(line, '|'), *b2 = b1 ? strchr(b1 + 1, '|') : NULL;
            if (!b2)
                continue;
            *b1 = *b2 = '\0';
            json_object_set_new(x->snap, line, json_pack("[s, s]", b1 + 1, b2 + 1));
        }
    }
    loom_buf_free(&o);
    loom_buf_free(&e);
    return rc;
}

int loom_exec_slurm_poll(loom_exec_slurm_t *x, loom_exec_handle_t *h, loom_exec_outcome_t *out,
                         loom_err_t *err)
{
    if (!h->ext_id[0])
        return loom_err_set(err, LOOM_ESTATE, "job %lld has no Slurm job id", (long long)h->job_id);
    json_t *seen = x->snap ? json_object_get(x->snap, h->ext_id) : NULL;
    if (seen) {
        const char *st = json_string_value(json_array_get(seen, 0));
        const char *why = json_string_value(json_array_get(seen, 1));
        loom_exec_outcome_t tmp;
        if (loom_exec_slurm_map_state(st, NULL, why, &tmp) == 0) {
            snprintf(h->ext_state, sizeof h->ext_state, "%s", st);
            snprintf(h->ext_reason, sizeof h->ext_reason, "%s", why);
            return 0;
        }
    }
    char *argv[] = {"scontrol", "--oneliner", "show", "job", h->ext_id, NULL};
    loom_buf_t o = LOOM_BUF_INIT, e = LOOM_BUF_INIT;
    int status = run_tool(x, argv, &o, &e, err);
    int rc;
    char state[32] = "", code[32] = "", reason[128] = "";
    if (status == 0 && scontrol_field(o.data, "JobState", state, sizeof state)) {
        scontrol_field(o.data, "ExitCode", code, sizeof code);
        scontrol_field(o.data, "Reason", reason, sizeof reason);
    } else if (status >= 0) {
        /* Purged from slurmctld's memory (MinJobAge): ask accounting. */
        char *acct[] = {"sacct", "-n", "-P", "-X", "-j", h->ext_id, "-o", "State,ExitCode", NULL};
        loom_buf_reset(&o);
        loom_buf_reset(&e);
        if (run_tool(x, acct, &o, &e, NULL) == 0 && o.len > 0) {
            char *bar = strchr(o.data, '|');
            if (bar) {
                *bar = '\0';
                chomp(bar + 1);
                snprintf(code, sizeof code, "%s", bar + 1);
                snprintf(state, sizeof state, "%.*s", (int)strcspn(o.data, " "), o.data);
            }
        }
    }
    if (status < 0) {
        rc = status;
    } else if (!state[0]) {
        memset(out, 0, sizeof *out);
        out->end = LOOM_EXEC_FAILED;
        out->exit_code = -1;
        snprintf(out->reason, sizeof out->reason,
                 "lost: Slurm no longer knows job %s and has no accounting record", h->ext_id);
        rc = 1;
    } else {
        snprintf(h->ext_state, sizeof h->ext_state, "%s", state);
        snprintf(h->ext_reason, sizeof h->ext_reason, "%s", reason);
        rc = loom_exec_slurm_map_state(state, code, reason, out);
    }
    loom_buf_free(&o);
    loom_buf_free(&e);
    return rc;
}

int loom_exec_slurm_cancel(loom_exec_slurm_t *x, loom_exec_handle_t *h, loom_err_t *err)
{
    if (!h->ext_id[0])
        return LOOM_OK;
    char *argv[] = {"scancel", h->ext_id, NULL};
    loom_buf_t o = LOOM_BUF_INIT, e = LOOM_BUF_INIT;
    int status = run_tool(x, argv, &o, &e, err);
    int rc = LOOM_OK;
    if (status < 0)
        rc = status;
    else if (status != 0 && !strstr(e.data, "already completing") &&
             !strstr(e.data, "Job/step already"))
        rc = loom_err_set(err, LOOM_EIO, "scancel %s: %s", h->ext_id, e.data);
    loom_buf_free(&o);
    loom_buf_free(&e);
    return rc;
}

int loom_exec_slurm_adopt(loom_exec_slurm_t *x, loom_exec_handle_t *h, const char *tag,
                          loom_err_t *err)
{
    loom_exec__job_paths(x->jobs_dir, h);
    if (h->ext_id[0])
        return LOOM_OK;
    if (!tag || !*tag)
        return loom_err_set(err, LOOM_ENOTFOUND, "job %lld: no Slurm id and no tag",
                            (long long)h->job_id);
    /* squeue lists pending and running jobs with their comment (%k). */
    char *argv[] = {"squeue", "-h", "-a", "-t", "all", "-o", "%i|%k", NULL};
    loom_buf_t o = LOOM_BUF_INIT, e = LOOM_BUF_INIT;
    int status = run_tool(x, argv, &o, &e, err);
    int rc = LOOM_ENOTFOUND;
    if (status < 0) {
        rc = status;
    } else if (status == 0) {
        char *save = NULL;
        for (char *line = strtok_r(o.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            char *bar = strchr(line, '|');
            if (bar && strcmp(bar + 1, tag) == 0) {
                *bar = '\0';
                snprintf(h->ext_id, sizeof h->ext_id, "%s", line);
                rc = LOOM_OK;
                break;
            }
        }
    }
    if (rc == LOOM_ENOTFOUND)
        loom_err_set(err, LOOM_ENOTFOUND, "job %lld: no Slurm job carries comment '%s'",
                     (long long)h->job_id, tag);
    loom_buf_free(&o);
    loom_buf_free(&e);
    return rc;
}

static bool node_listed(const json_t *arr, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0)
            return true;
    }
    return false;
}

/* GPUs in a gres string: "gpu:4", "gpu:a100:4", "gpu:4(S:0-1)",
 * "gpu:a100:2(S:0),gpu:v100:2". Sums every gpu entry. */
static long gres_gpu_count(const char *gres)
{
    long total = 0;
    for (const char *p = gres; (p = strstr(p, "gpu:")) != NULL;) {
        p += 4;
        size_t n = strcspn(p, "(,");
        const char *last = p;
        for (size_t i = 0; i < n; i++)
            if (p[i] == ':')
                last = p + i + 1;
        total += strtol(last, NULL, 10);
        p += n;
    }
    return total;
}

int loom_exec_slurm_nodes(loom_exec_slurm_t *x, json_t **nodes, loom_err_t *err)
{
    char part[80];
    char *argv[12];
    int n = 0;
    argv[n++] = "sinfo";
    argv[n++] = "-h";
    argv[n++] = "-N";
    if (x->partition[0]) {
        snprintf(part, sizeof part, "--partition=%s", x->partition);
        argv[n++] = part;
    }
    argv[n++] = "-o";
    argv[n++] = "%N|%c|%m|%G|%T";
    argv[n] = NULL;
    loom_buf_t o = LOOM_BUF_INIT, e = LOOM_BUF_INIT;
    int status = run_tool(x, argv, &o, &e, err);
    int rc = LOOM_OK;
    if (status != 0) {
        rc = status < 0 ? status : loom_err_set(err, LOOM_EUNAVAIL, "sinfo failed: %s", e.data);
        goto out;
    }
    json_t *arr = json_array();
    char *save = NULL;
    for (char *line = strtok_r(o.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *f[5];
        char *s2 = NULL;
        int nf = 0;
        for (char *t = strtok_r(line, "|", &s2); t && nf < 5; t = strtok_r(NULL, "|", &s2))
            f[nf++] = t;
        if (nf != 5)
            continue;
        if (node_listed(arr, f[0])) /* listed once per partition it is in */
            continue;
        long gpus = gres_gpu_count(f[3]);
        char *plus = strpbrk(f[4], "*~#!%$@^-+");
        if (plus)
            *plus = '\0'; /* state flags: not responding, powered down, ... */
        bool available = strcmp(f[4], "idle") == 0 || strcmp(f[4], "mixed") == 0 ||
                         strcmp(f[4], "allocated") == 0 || strcmp(f[4], "completing") == 0;
        json_array_append_new(
            arr, json_pack("{s:s, s:I, s:I, s:I, s:s, s:b}", "name", f[0], "cpus",
                           (json_int_t)atol(f[1]), "memory_bytes", (json_int_t)atoll(f[2]) << 20,
                           "gpus", (json_int_t)gpus, "state", f[4], "available", available));
    }
    *nodes = arr;
out:
    loom_buf_free(&o);
    loom_buf_free(&e);
    return rc;
}

static int s_start(void *self, const loom_exec_job_t *job, loom_exec_handle_t *h, loom_err_t *err)
{
    return loom_exec_slurm_start(self, job, h, err);
}
static int s_poll(void *self, loom_exec_handle_t *h, loom_exec_outcome_t *out, loom_err_t *err)
{
    return loom_exec_slurm_poll(self, h, out, err);
}
static int s_cancel(void *self, loom_exec_handle_t *h, loom_err_t *err)
{
    return loom_exec_slurm_cancel(self, h, err);
}
static int s_adopt(void *self, loom_exec_handle_t *h, loom_err_t *err)
{
    char tag[64];
    if (h->tag[0])
        snprintf(tag, sizeof tag, "%s", h->tag);
    else
        snprintf(tag, sizeof tag, "loom:%lld", (long long)h->job_id);
    return loom_exec_slurm_adopt(self, h, tag, err);
}

const loom_exec_ops_t loom_exec_slurm_ops = {"slurm", s_start, s_poll, s_cancel, s_adopt};
