/* The shepherd: one small process per job between loomd and the job.
 *
 * loomd spawns `loom-shepherd DIR`. The shepherd reads DIR/spec.json, leaves
 * loomd's session, starts the job in a process group of its own (inside a
 * cgroup v2 when one is given), and then only waits: for the job to end, for
 * the time limit, or for SIGTERM from loomd (a cancel). On a limit or cancel
 * it sends TERM to the job's group and KILL after the grace period. SIGUSR1
 * suspends the job's group (SIGSTOP) and SIGUSR2 resumes it (SIGCONT), for
 * time-slicing; time spent suspended does not count against the time
 * limit. When the
 * job has ended it kills what is left of the group (and the cgroup), and
 * writes DIR/status.json atomically. Because all of this lives outside loomd,
 * a kill -9 of loomd changes nothing for the job: limits hold, the outcome is
 * recorded, and the restarted loomd reads it.
 *
 * Everything between fork and exec in the child is async-signal-safe: the
 * argv and env arrays are built before the fork. (The shepherd has a single
 * thread, so the strerror of a failure message there is safe too.)
 *
 * Owners (multi-user loomd, docs/security.md): when spec.json names an
 * owner, the child becomes that user before it touches anything the job
 * names: supplementary groups (the owner's, from the user database, looked
 * up before the fork as initgroups would), then gid, then uid, all three of
 * real, effective and saved; an empty capability bounding set and
 * PR_SET_NO_NEW_PRIVS, so no set-uid program or file capability can give
 * any of it back. Only then does it change to the working directory and
 * open the output files, with the owner's rights: loomd is never made to
 * write where the owner may not. A batch script lives in the job directory,
 * which the owner cannot enter: the child opens it before dropping and
 * bash reads it through /dev/fd/3 (the file belongs to the owner, so the
 * reopen is allowed).
 *
 * Inheritance: the shepherd closes every descriptor above 2 at start and
 * the child again after its redirections, so a job gets stdin, stdout and
 * stderr and nothing of loomd's (or loomd's parent's); loomd starts the
 * shepherd with a clean environment (local.c), so /proc/PPID/environ of a
 * job shows none of loomd's variables.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec/exec_private.h"
#include "loom/exec.h"

typedef struct spec {
    char **argv;
    char **envp;
    const char *cwd;
    const char *out_path;
    const char *err_path;
    const char *cgroup;
    int64_t time_limit_ns;
    int64_t grace_ns;
    int64_t output_max;  /* bytes of stdout + stderr; 0: no limit */
    bool output_limited; /* the job was stopped for passing it */
    bool drop;           /* become the owner below */
    uid_t uid;
    gid_t gid;
    gid_t groups[256];
    int ngroups;
    const char *script_fd3; /* opened as fd 3 before dropping, or NULL */
    int report_fd;          /* the child's start errors to the shepherd (close-on-exec) */
    char start_error[512];  /* what the child reported there, "" if it ran */
} spec_t;

static char **string_array(const json_t *arr)
{
    size_t n = json_array_size(arr);
    char **v = calloc(n + 1, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = (char *)json_string_value(json_array_get(arr, i));
    return v;
}

/* The owner to become, and its groups as initgroups(3) would set them:
 * looked up here, before the fork, since the user database is not
 * async-signal-safe. */
static int load_owner(const json_t *o, spec_t *s, const char *path, loom_err_t *err)
{
    if (!o || json_is_null(o))
        return LOOM_OK;
    json_t *uid = json_object_get(o, "uid"), *gid = json_object_get(o, "gid");
    if (!json_is_integer(uid) || !json_is_integer(gid) || json_integer_value(uid) < 0 ||
        json_integer_value(gid) < 0)
        return loom_err_set(err, LOOM_EINVAL, "%s: owner: expected uid and gid", path);
    s->drop = true;
    s->uid = (uid_t)json_integer_value(uid);
    s->gid = (gid_t)json_integer_value(gid);
    s->ngroups = (int)(sizeof s->groups / sizeof s->groups[0]);
    if (loom_exec__owner_groups(s->uid, s->gid, s->groups, &s->ngroups, err) != LOOM_OK)
        return loom_err_prefix(err, "%s", path);
    s->script_fd3 = json_string_value(json_object_get(o, "script"));
    return LOOM_OK;
}

static int load_spec(const char *dir, json_t **root, spec_t *s, loom_err_t *err)
{
    char path[LOOM_EXEC_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/spec.json", dir);
    int rc = loom_json_load_file(path, root, err);
    if (rc != LOOM_OK)
        return rc;
    json_t *r = *root;
    json_t *argv = json_object_get(r, "argv"), *env = json_object_get(r, "env");
    if (!json_is_array(argv) || json_array_size(argv) == 0 || !json_is_array(env))
        return loom_err_set(err, LOOM_EINVAL, "%s: argv and env must be arrays", path);
    s->argv = string_array(argv);
    s->envp = string_array(env);
    if (!s->argv || !s->envp)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    s->cwd = json_string_value(json_object_get(r, "cwd"));
    s->out_path = json_string_value(json_object_get(r, "stdout"));
    s->err_path = json_string_value(json_object_get(r, "stderr"));
    s->cgroup = json_string_value(json_object_get(r, "cgroup"));
    s->time_limit_ns = json_integer_value(json_object_get(r, "time_limit_ns"));
    s->grace_ns = json_integer_value(json_object_get(r, "grace_ns"));
    s->output_max = json_integer_value(json_object_get(r, "output_max"));
    if (!s->cwd || !s->out_path || !s->err_path)
        return loom_err_set(err, LOOM_EINVAL, "%s: cwd, stdout and stderr are required", path);
    return load_owner(json_object_get(r, "owner"), s, path, err);
}

/* Writes a small string to a file, best effort (cgroup control files). */
static int write_str(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, s, strlen(s));
    close(fd);
    return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* Closes every descriptor from `first` up. */
static void close_from(int first)
{
    if (first < 0)
        return;
    if (close_range((unsigned)first, ~0U, 0) == 0)
        return;
    long max = sysconf(_SC_OPEN_MAX);
    for (long fd = first; fd < (max > 0 ? max : 1024); fd++)
        close((int)fd);
}

/* Closes every descriptor from `first` up but `keep`. */
static void close_from_but(int first, int keep)
{
    if (keep < first) {
        close_from(first);
        return;
    }
    for (int fd = first; fd < keep; fd++)
        close(fd);
    close_from(keep + 1);
}

/* "loom-shepherd: WHAT 'ARG': strerror(e)\n" to stderr (the job's), and
 * "WHAT 'ARG': strerror(e)" to the shepherd, which puts it in status.json
 * (start_error) so that the owner reads why the job never ran even when
 * stderr is the very file that could not be opened. */
static void child_error(const spec_t *s, const char *what, const char *arg, int e)
{
    const char *parts[] = {"loom-shepherd: ", what, " '", arg, "': ", strerror(e), "\n"};
    size_t n = sizeof parts / sizeof parts[0];
    for (size_t i = 0; i < n; i++)
        if (write(2, parts[i], strlen(parts[i])) < 0)
            break;
    for (size_t i = 1; s->report_fd >= 0 && i < n - 1; i++)
        if (write(s->report_fd, parts[i], strlen(parts[i])) < 0)
            return;
}

/* Becomes the owner for good (see the top of the file). Async-signal-safe:
 * only system calls. Any failure ends the child: a job never runs with
 * more rights than its owner's. */
static void become_owner(const spec_t *s)
{
    if (s->script_fd3) {
        int fd = open(s->script_fd3, O_RDONLY);
        if (fd < 0 || (fd != 3 && (dup2(fd, 3) < 0 || close(fd) != 0))) {
            child_error(s, "cannot open the job's script", s->script_fd3, errno);
            _exit(126);
        }
    }
    const char *what = "";
    int e = loom_exec__become(s->uid, s->gid, s->groups, s->ngroups, &what);
    if (e != 0) {
        child_error(s, "cannot become the job's owner", what, e);
        _exit(126);
    }
}

/* The child: new process group, cgroup, owner, redirections, exec.
 * Async-signal-safe. */
static void run_child(const spec_t *s, const sigset_t *old_mask)
{
    setpgid(0, 0);
    if (s->cgroup && *s->cgroup) {
        char procs[LOOM_EXEC_PATH_MAX + 32];
        size_t n = strlen(s->cgroup);
        if (n + sizeof "/cgroup.procs" <= sizeof procs) {
            memcpy(procs, s->cgroup, n);
            memcpy(procs + n, "/cgroup.procs", sizeof "/cgroup.procs");
            write_str(procs, "0");
        }
    }
    if (s->drop)
        become_owner(s);
    /* The first file that cannot be opened is the job's reason, said once
     * (an error output that is the output is not reported again). */
    int in = open("/dev/null", O_RDONLY);
    if (in < 0) {
        child_error(s, "cannot open", "/dev/null", errno);
        _exit(126);
    }
    int out = open(s->out_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out < 0) {
        child_error(s, "cannot open output", s->out_path, errno);
        _exit(126);
    }
    int errfd = strcmp(s->out_path, s->err_path) == 0
                    ? out
                    : open(s->err_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (errfd < 0) {
        child_error(s, "cannot open error output", s->err_path, errno);
        _exit(126);
    }
    dup2(in, 0);
    dup2(out, 1);
    dup2(errfd, 2);
    close_from_but(s->script_fd3 ? 4 : 3, s->report_fd);
    if (chdir(s->cwd) != 0) {
        child_error(s, "cannot change to the working directory", s->cwd, errno);
        _exit(126);
    }
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, old_mask, NULL);
    execvpe(s->argv[0], s->argv, s->envp);
    /* as shells do: 127 when the command is not found, 126 otherwise (not
     * executable, arguments too long, ...), with the reason on stderr */
    int e = errno;
    child_error(s, "cannot execute the job's command", s->argv[0], e);
    _exit(e == ENOENT ? 127 : 126);
}

/* A close-on-exec pipe for the child's start errors; its write end above
 * the descriptors the child sets up (0-3), so its redirections leave it
 * alone. Returns the write end, -1 if there is none (the job still runs;
 * its start errors are then only on its stderr). */
static int open_report(int p[2])
{
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    int w = fcntl(p[1], F_DUPFD_CLOEXEC, 10);
    close(p[1]);
    p[1] = w;
    if (w < 0) {
        close(p[0]);
        p[0] = -1;
    }
    return w;
}

/* Reads what the child reported until it execs (the pipe closes) or
 * exits. Signals are blocked meanwhile, so a cancel waits for this. */
static void read_report(int rfd, int wfd, char *out, size_t outlen)
{
    out[0] = 0;
    if (rfd < 0)
        return;
    close(wfd);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < outlen &&
           ((r = read(rfd, out + n, outlen - 1 - n)) > 0 || (r < 0 && errno == EINTR)))
        n += r > 0 ? (size_t)r : 0;
    out[n] = 0;
    close(rfd);
}

static void kill_group(pid_t pgid, const char *cgroup, int sig)
{
    killpg(pgid, sig);
    if (sig == SIGKILL && cgroup && *cgroup) {
        char path[LOOM_EXEC_PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/cgroup.kill", cgroup);
        write_str(path, "1");
    }
}

static int64_t cgroup_cpu_usage_us(const char *cgroup)
{
    char path[LOOM_EXEC_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/cpu.stat", cgroup);
    loom_buf_t b = LOOM_BUF_INIT;
    int64_t v = -1;
    if (loom_buf_read_file(&b, path, NULL) == LOOM_OK) {
        const char *p = strstr(b.data, "usage_usec ");
        if (p)
            v = strtoll(p + strlen("usage_usec "), NULL, 10);
    }
    loom_buf_free(&b);
    return v;
}

/* Removes the job's cgroup once it is empty (up to ~1 s after a kill). */
static void cgroup_remove(const char *cgroup)
{
    for (int i = 0; i < 100; i++) {
        if (rmdir(cgroup) == 0 || errno == ENOENT)
            return;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static int write_status(const char *dir, const spec_t *s, int status, const struct rusage *ru,
                        int64_t start_ns, bool timed_out, bool cancelled, int64_t cg_cpu_us,
                        int64_t suspended_ns)
{
    json_t *st = json_object();
    json_object_set_new(st, "exit_code",
                        WIFEXITED(status) ? json_integer(WEXITSTATUS(status)) : json_null());
    json_object_set_new(st, "signal",
                        WIFSIGNALED(status) ? json_integer(WTERMSIG(status)) : json_null());
    json_object_set_new(st, "timed_out", json_boolean(timed_out));
    json_object_set_new(st, "output_limited", json_boolean(s->output_limited));
    json_object_set_new(st, "output_max", json_integer(s->output_max));
    json_object_set_new(st, "cancelled", json_boolean(cancelled));
    json_object_set_new(st, "time_limit_ns", json_integer(s->time_limit_ns));
    json_object_set_new(st, "start_ns", json_integer(start_ns));
    json_object_set_new(st, "end_ns", json_integer(loom_time_real_ns()));
    json_object_set_new(
        st, "cpu_user_us",
        json_integer((json_int_t)ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec));
    json_object_set_new(
        st, "cpu_sys_us",
        json_integer((json_int_t)ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec));
    json_object_set_new(st, "max_rss_kb", json_integer(ru->ru_maxrss));
    json_object_set_new(st, "suspended_ns", json_integer(suspended_ns));
    if (s->start_error[0])
        json_object_set_new(st, "start_error", json_string(s->start_error));
    if (cg_cpu_us >= 0)
        json_object_set_new(st, "cgroup_cpu_usage_us", json_integer(cg_cpu_us));
    loom_buf_t b = LOOM_BUF_INIT;
    loom_json_dump(&b, st);
    json_decref(st);
    char path[LOOM_EXEC_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/status.json", dir);
    loom_err_t err;
    int rc = loom_write_file_atomic(path, b.data, b.len, 0644, &err);
    loom_buf_free(&b);
    if (rc != LOOM_OK)
        fprintf(stderr, "loom-shepherd: %s\n", err.msg);
    return rc;
}

static int write_pid_file(const char *dir, pid_t shepherd, pid_t job)
{
    uint64_t start = 0;
    loom_exec_proc_start_time(shepherd, &start, NULL);
    char text[128], path[LOOM_EXEC_PATH_MAX + 32];
    int n =
        snprintf(text, sizeof text, "{\"shepherd_pid\":%d,\"shepherd_start\":%llu,\"job_pid\":%d}",
                 (int)shepherd, (unsigned long long)start, (int)job);
    snprintf(path, sizeof path, "%s/shepherd.json", dir);
    return loom_write_file_atomic(path, text, (size_t)n, 0644, NULL);
}

/* Bytes the job has written to its stdout and stderr files. */
static int64_t output_size(const spec_t *s)
{
    struct stat a, b;
    int64_t n = stat(s->out_path, &a) == 0 ? (int64_t)a.st_size : 0;
    if (strcmp(s->out_path, s->err_path) != 0 && stat(s->err_path, &b) == 0)
        n += (int64_t)b.st_size;
    return n;
}

/* The output limit (checked once a second): past it, the job is stopped as
 * for its time limit (TERM, KILL after the grace). Returns when to look
 * again (0: no more). */
static int64_t check_output(pid_t pid, spec_t *s, int64_t now, int64_t *kill_at, bool stopping,
                            bool suspended)
{
    if (s->output_max <= 0 || s->output_limited)
        return 0;
    if (!stopping && output_size(s) > s->output_max) {
        s->output_limited = true;
        kill_group(pid, s->cgroup, SIGTERM);
        if (suspended)
            kill_group(pid, s->cgroup, SIGCONT);
        *kill_at = now + s->grace_ns;
        return 0;
    }
    return now + LOOM_NS_PER_S;
}

/* envp's value of NAME= ("" if absent). */
static const char *env_of(char **envp, const char *prefix)
{
    size_t n = strlen(prefix);
    for (char **e = envp; e && *e; e++)
        if (strncmp(*e, prefix, n) == 0)
            return *e + n;
    return "";
}

/* Slurm's line at the end of a cancelled job's error output, "*** JOB 5 ON
 * n1 CANCELLED AT 2026-12-05T09:40:00 ***" (and "... DUE TO TIME LIMIT"),
 * so the output says why it stops there. Appended by a child that first
 * becomes the job's owner (as the job's own files are opened), never
 * following a symbolic link; best effort. */
static void announce_end(const spec_t *s, const char *why)
{
    char when[32], line[256];
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", localtime_r(&now, &tm));
    const char *node = env_of(s->envp, "SLURMD_NODENAME=");
    int n = snprintf(line, sizeof line,
                     "loom-shepherd: error: *** JOB %s ON %s CANCELLED AT %s%s ***\n",
                     env_of(s->envp, "LOOM_JOB_ID="), *node ? node : "localhost", when, why);
    pid_t p = fork();
    if (p == 0) {
        const char *what = "";
        if (s->drop && loom_exec__become(s->uid, s->gid, s->groups, s->ngroups, &what) != 0)
            _exit(1);
        int fd = open(s->err_path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        _exit(fd >= 0 && n > 0 && write(fd, line, (size_t)n) == n ? 0 : 1);
    }
    if (p > 0)
        waitpid(p, NULL, 0);
}

/* Waits for the job, enforcing the time limit and cancel requests. */
static int supervise(pid_t pid, spec_t *s, const sigset_t *set, int *status, struct rusage *ru,
                     bool *timed_out, bool *cancelled, int64_t *suspended_ns)
{
    int64_t t0 = loom_time_mono_ns();
    int64_t limit_at = s->time_limit_ns > 0 ? t0 + s->time_limit_ns : 0;
    int64_t kill_at = 0, suspended_at = 0, check_at = s->output_max > 0 ? t0 : 0;
    for (;;) {
        int64_t now = loom_time_mono_ns();
        if (check_at && now >= check_at)
            check_at =
                check_output(pid, s, now, &kill_at, *timed_out || *cancelled, suspended_at != 0);
        if (limit_at && now >= limit_at && !*timed_out && !*cancelled && !suspended_at) {
            *timed_out = true;
            announce_end(s, " DUE TO TIME LIMIT");
            kill_group(pid, s->cgroup, SIGTERM);
            kill_at = now + s->grace_ns;
        }
        if (kill_at && now >= kill_at) {
            kill_group(pid, s->cgroup, SIGKILL);
            kill_at = 0;
        }
        pid_t r = wait4(pid, status, WNOHANG | WUNTRACED, ru);
        if (r == pid && WIFSTOPPED(*status))
            continue; /* our own SIGSTOP: not an end */
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
        int64_t next = 0;
        if (limit_at && !*timed_out && !*cancelled && !suspended_at)
            next = limit_at;
        if (kill_at && (!next || kill_at < next))
            next = kill_at;
        if (check_at && (!next || check_at < next))
            next = check_at;
        siginfo_t info;
        int sig;
        if (next) {
            int64_t wait = next - loom_time_mono_ns();
            if (wait < 0)
                wait = 0;
            struct timespec ts = {wait / LOOM_NS_PER_S, wait % LOOM_NS_PER_S};
            sig = sigtimedwait(set, &info, &ts);
        } else {
            sig = sigwaitinfo(set, &info);
        }
        if ((sig == SIGTERM || sig == SIGINT || sig == SIGHUP) && !*cancelled && !*timed_out &&
            !s->output_limited) {
            *cancelled = true;
            announce_end(s, "");
            kill_group(pid, s->cgroup, SIGTERM);
            if (suspended_at) /* a stopped job cannot act on TERM */
                kill_group(pid, s->cgroup, SIGCONT);
            kill_at = loom_time_mono_ns() + s->grace_ns;
        } else if (sig == SIGUSR1 && !suspended_at && !*cancelled && !*timed_out) {
            kill_group(pid, s->cgroup, SIGSTOP);
            suspended_at = loom_time_mono_ns();
        } else if (sig == SIGUSR2 && suspended_at) {
            kill_group(pid, s->cgroup, SIGCONT);
            int64_t paused = loom_time_mono_ns() - suspended_at;
            *suspended_ns += paused;
            if (limit_at)
                limit_at += paused; /* suspended time does not count */
            suspended_at = 0;
        }
    }
}

/* The outcome must reach status.json: loomd calls a job without one lost.
 * On a full disk (a job's output filled it) writing fails; the shepherd
 * keeps trying, once a second for up to an hour, and meanwhile the job
 * counts as running, so its resources stay allocated until it is recorded
 * (issue 18, finding 6). */
static int write_status_retrying(const char *dir, const spec_t *s, int status,
                                 const struct rusage *ru, int64_t start_ns, bool timed_out,
                                 bool cancelled, int64_t cg_cpu, int64_t suspended_ns)
{
    int rc = LOOM_OK;
    for (int tries = 0; tries < 3600; tries++) {
        rc = write_status(dir, s, status, ru, start_ns, timed_out, cancelled, cg_cpu, suspended_ns);
        if (rc == LOOM_OK)
            return rc;
        if (tries == 0 || tries % 60 == 0)
            fprintf(stderr, "loom-shepherd: cannot write %s/status.json (%s); retrying\n", dir,
                    strerror(errno));
        sleep(1);
    }
    return rc;
}

int loom_exec_shepherd_main(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: loom-shepherd JOB_DIR\n\nRuns the job described by "
                        "JOB_DIR/spec.json for loomd (see docs/exec.md).\n");
        return 2;
    }
    close_from(3); /* nothing of loomd's reaches the job */
    const char *dir = argv[1];
    json_t *root = NULL;
    spec_t s = {0};
    loom_err_t err;
    if (load_spec(dir, &root, &s, &err) != LOOM_OK) {
        fprintf(stderr, "loom-shepherd: %s\n", err.msg);
        return 1;
    }
    setsid();
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigprocmask(SIG_BLOCK, &set, &old);
    signal(SIGPIPE, SIG_IGN);

    int64_t start_ns = loom_time_real_ns();
    int report[2] = {-1, -1};
    s.report_fd = open_report(report);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "loom-shepherd: fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0)
        run_child(&s, &old);
    setpgid(pid, pid); /* also here, so killpg works before the child runs */
    write_pid_file(dir, getpid(), pid);
    read_report(report[0], s.report_fd, s.start_error, sizeof s.start_error);

    int status = 0;
    struct rusage ru = {0};
    bool timed_out = false, cancelled = false;
    int64_t suspended_ns = 0;
    if (supervise(pid, &s, &set, &status, &ru, &timed_out, &cancelled, &suspended_ns) != 0)
        fprintf(stderr, "loom-shepherd: wait: %s\n", strerror(errno));
    /* Whatever the job left behind in its group or cgroup goes with it. */
    kill_group(pid, s.cgroup, SIGKILL);
    int64_t cg_cpu = -1;
    if (s.cgroup && *s.cgroup) {
        cg_cpu = cgroup_cpu_usage_us(s.cgroup);
        cgroup_remove(s.cgroup);
    }
    int rc = write_status_retrying(dir, &s, status, &ru, start_ns, timed_out, cancelled, cg_cpu,
                                   suspended_ns);
    free(s.argv);
    free(s.envp);
    json_decref(root);
    return rc == LOOM_OK ? 0 : 1;
}
