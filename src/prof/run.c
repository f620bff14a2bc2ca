/* Running a command under the profiler.
 *
 * The command gets two pipes: its stdout, which we copy on to echo_fd and
 * scan for marker lines, and a marker pipe whose write end it inherits as
 * the descriptor named by LOOM_PROF_FD. A third, close-on-exec pipe tells
 * us whether exec succeeded. The sampler thread starts after fork (so the
 * child inherits no threads) and is stopped after the command has exited
 * but before it is reaped, so that the last sample sees its final CPU
 * totals; wait4 then gives the kernel's own account as ground truth. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prof/prof_internal.h"

extern char **environ;

#define LINE_MAX_OUT 4096 /* longer stdout lines are passed on but never markers */

typedef struct stream {
    int fd;
    bool marker_only; /* the LOOM_PROF_FD pipe: every line must be a marker */
    char line[LINE_MAX_OUT + 1];
    size_t len;
    bool overflow;
} stream_t;

typedef struct collect {
    loom_prof_run_t *run;
    size_t steps_cap;
    int echo_fd;
    bool oom;
    prof_sampler_t *sampler; /* NULL when not sampling */
    bool cpu_stat;
    bool sampling_on;             /* --toggle: the state of the current block */
    size_t stat_cap, toggles_cap; /* of run->step_stat, run->toggles */
} collect_t;

static void bad_marker(collect_t *c, const char *msg)
{
    if (c->run->bad_markers++ == 0)
        snprintf(c->run->first_bad, sizeof c->run->first_bad, "%s", msg);
}

static void handle_line(collect_t *c, stream_t *st)
{
    loom_prof_line_kind_t kind;
    loom_prof_step_t step;
    loom_err_t err;
    loom_err_clear(&err);
    if (loom_prof_marker_parse(st->line, st->len, &kind, &step, c->run->meta, &err)) {
        bad_marker(c, err.msg);
        return;
    }
    if (kind == LOOM_PROF_LINE_OTHER) {
        if (st->marker_only)
            bad_marker(c, "a line on LOOM_PROF_FD is not a LOOM_STEP or LOOM_META marker");
        return;
    }
    if (kind != LOOM_PROF_LINE_STEP)
        return;
    loom_prof_run_t *r = c->run;
    size_t need = r->nsteps + 1;
    if (loom_vec_reserve((void **)&r->steps, &c->steps_cap, need, sizeof *r->steps, 256) ||
        (c->cpu_stat &&
         loom_vec_reserve((void **)&r->step_stat, &c->stat_cap, need, sizeof *r->step_stat, 256)) ||
        (r->toggle_steps && loom_vec_reserve((void **)&r->toggles, &c->toggles_cap,
                                             need / r->toggle_steps + 2, sizeof *r->toggles, 2))) {
        c->oom = true;
        return;
    }
    if (c->cpu_stat) {
        r->ncpus = loom_prof_cpustat_read(&r->step_stat[r->nsteps]);
        if (r->ncpus == 0)
            r->step_stat[r->nsteps] = (loom_prof_cpustat_t){loom_time_mono_ns(), -1, -1, -1};
    }
    r->steps[r->nsteps++] = step;
    if (r->toggle_steps && c->sampler && r->nsteps % r->toggle_steps == 0) {
        /* Block b begins: on, off, off, on, on, off, off, on, ... */
        size_t b = r->nsteps / r->toggle_steps;
        bool on = b % 4 == 0 || b % 4 == 3;
        if (on != c->sampling_on)
            prof_sampler_pause(c->sampler, !on);
        c->sampling_on = on;
        r->toggles[r->ntoggles++] = (loom_prof_toggle_t){loom_time_mono_ns(), on};
    }
}

int loom_prof_cpustat_read(loom_prof_cpustat_t *out)
{
    memset(out, 0, sizeof *out);
    out->t_ns = loom_time_mono_ns();
    cpu_set_t set;
    CPU_ZERO(&set);
    bool have_set = sched_getaffinity(0, sizeof set, &set) == 0;
    FILE *f = fopen("/proc/stat", "re");
    if (!f)
        return 0;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "cpu", 3) != 0)
            break;
        if (line[3] < '0' || line[3] > '9')
            continue; /* the "cpu" total line */
        int cpu;
        long long v[10] = {0};
        int got = sscanf(line + 3, "%d %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld", &cpu,
                         &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
        if (got < 9 || cpu < 0 || cpu >= CPU_SETSIZE || (have_set && !CPU_ISSET(cpu, &set)))
            continue;
        /* user nice system idle iowait irq softirq steal [guest guest_nice];
         * guest time is already inside user and nice. */
        int64_t total = 0;
        for (int i = 0; i < 8; i++)
            total += v[i];
        out->total += total;
        out->busy += total - v[3] - v[4];
        out->steal += v[7];
        n++;
    }
    fclose(f);
    out->t_ns = loom_time_mono_ns();
    return n;
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* the reader went away: keep profiling, drop output */
        p += w;
        n -= (size_t)w;
    }
}

/* Reads what is available; returns false at end of file. */
static bool pump(collect_t *c, stream_t *st)
{
    char buf[65536];
    ssize_t r = read(st->fd, buf, sizeof buf);
    if (r < 0)
        return errno == EINTR || errno == EAGAIN;
    if (r == 0) {
        if (st->len > 0 && !st->overflow)
            handle_line(c, st);
        st->len = 0;
        return false;
    }
    if (!st->marker_only && c->echo_fd >= 0)
        write_all(c->echo_fd, buf, (size_t)r);
    for (ssize_t i = 0; i < r; i++) {
        if (buf[i] == '\n') {
            if (!st->overflow)
                handle_line(c, st);
            st->len = 0;
            st->overflow = false;
        } else if (st->len < LINE_MAX_OUT) {
            st->line[st->len++] = buf[i];
        } else {
            st->overflow = true;
            if (st->marker_only && st->len == LINE_MAX_OUT) {
                bad_marker(c, "a line on LOOM_PROF_FD is longer than 4096 bytes");
                st->len++; /* report once per line */
            }
        }
    }
    return true;
}

static int build_env(const loom_prof_opts_t *o, int marker_fd, const char *kernels_path,
                     char ***out)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 4, sizeof *env);
    if (!env)
        return LOOM_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = environ[i];
        if (strncmp(e, LOOM_PROF_FD_ENV "=", strlen(LOOM_PROF_FD_ENV) + 1) == 0 ||
            (o->kernels && (strncmp(e, "CUDA_INJECTION64_PATH=", 22) == 0 ||
                            strncmp(e, "LOOM_CUPTI_OUT=", 15) == 0)))
            continue;
        env[k++] = (char *)e;
    }
    size_t first = k;
    loom_buf_t b = LOOM_BUF_INIT;
    loom_buf_appendf(&b, "%s=%d", LOOM_PROF_FD_ENV, marker_fd);
    env[k++] = loom_buf_detach(&b);
    if (o->kernels) {
        loom_buf_appendf(&b, "CUDA_INJECTION64_PATH=%s", o->cupti_lib);
        env[k++] = loom_buf_detach(&b);
        loom_buf_appendf(&b, "LOOM_CUPTI_OUT=%s", kernels_path);
        env[k++] = loom_buf_detach(&b);
    }
    for (size_t i = first; i < k; i++)
        if (!env[i]) {
            for (size_t j = first; j < k; j++)
                free(env[j]);
            free(env);
            return LOOM_ENOMEM;
        }
    *out = env;
    return LOOM_OK;
}

static void free_env(char **env, const loom_prof_opts_t *o)
{
    if (!env)
        return;
    size_t k = 0;
    while (env[k])
        k++;
    size_t added = o->kernels ? 3 : 1;
    for (size_t i = k - added; i < k; i++)
        free(env[i]);
    free(env);
}

static char **copy_argv(char *const *argv)
{
    size_t n = 0;
    while (argv[n])
        n++;
    char **c = calloc(n + 1, sizeof *c);
    if (!c)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!(c[i] = strdup(argv[i]))) {
            for (size_t j = 0; j < i; j++)
                free(c[j]);
            free(c);
            return NULL;
        }
    return c;
}

void loom_prof_run_free(loom_prof_run_t *r)
{
    if (!r)
        return;
    if (r->argv) {
        for (size_t i = 0; r->argv[i]; i++)
            free(r->argv[i]);
        free(r->argv);
    }
    free(r->samples);
    free(r->steps);
    json_decref(r->meta);
    free(r->kernels_path);
    free(r->gpu_samples);
    json_decref(r->gpu_names);
    free(r->step_stat);
    free(r->toggles);
    free(r);
}

/* The second field of /proc/PID/schedstat: time the task (the main
 * thread) spent runnable on a run queue, waiting for a CPU; -1 unknown. */
static int64_t read_run_delay(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    long long on_cpu, wait;
    int got = fscanf(f, "%lld %lld", &on_cpu, &wait);
    fclose(f);
    return got == 2 && wait >= 0 ? (int64_t)wait : -1;
}

static void close_pair(int p[2])
{
    if (p[0] >= 0)
        close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
    p[0] = p[1] = -1;
}

int loom_prof_run(const loom_prof_opts_t *o, loom_prof_run_t **out, loom_err_t *err)
{
    *out = NULL;
    if (!o->argv || !o->argv[0])
        return loom_err_set(err, LOOM_EINVAL, "prof: no command given");
    if (o->kernels && (!o->cupti_lib || !o->work_dir))
        return loom_err_set(err, LOOM_EINVAL,
                            "prof: kernel tracing needs the CUPTI library "
                            "path and a directory for its records");
    loom_prof_run_t *r = calloc(1, sizeof *r);
    if (!r || !(r->meta = json_object()) || !(r->argv = copy_argv(o->argv))) {
        loom_prof_run_free(r);
        return loom_err_set(err, LOOM_ENOMEM, "prof: out of memory");
    }
    r->interval_ns = o->interval_ns;
    r->kernels = o->kernels;
    r->run_delay_ns = -1;
    r->toggle_steps = o->interval_ns > 0 ? o->toggle_steps : 0;
    r->gpu = o->interval_ns > 0 && o->gpu_interval_ns > 0;
    if (o->kernels) {
        loom_buf_t b = LOOM_BUF_INIT;
        loom_buf_appendf(&b, "%s/kernels.csv", o->work_dir);
        r->kernels_path = loom_buf_detach(&b);
        if (!r->kernels_path) {
            loom_prof_run_free(r);
            return loom_err_set(err, LOOM_ENOMEM, "prof: out of memory");
        }
        unlink(r->kernels_path); /* a stale file must not be read as this run's */
    }
    int outp[2] = {-1, -1}, mark[2] = {-1, -1}, status[2] = {-1, -1};
    char **env = NULL;
    int rc;
    if (pipe2(outp, O_CLOEXEC) || pipe2(mark, O_CLOEXEC) || pipe2(status, O_CLOEXEC)) {
        rc = loom_err_errno(err, LOOM_EIO, errno, "prof: pipe");
        goto fail;
    }
    if ((rc = build_env(o, mark[1], r->kernels_path, &env))) {
        rc = loom_err_set(err, rc, "prof: out of memory");
        goto fail;
    }
    struct rusage self0;
    getrusage(RUSAGE_SELF, &self0);
    r->start_real_ns = loom_time_real_ns();
    r->start_ns = loom_time_mono_ns();
    pid_t pid = fork();
    if (pid < 0) {
        rc = loom_err_errno(err, LOOM_EIO, errno, "prof: fork");
        goto fail;
    }
    if (pid == 0) {
        /* The child: only async-signal-safe calls until exec. Signals the
         * caller ignores (loom ignores SIGPIPE, and SIGINT while a run lasts)
         * would stay ignored across exec: give the command the defaults. */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(SIGPIPE, &dfl, NULL);
        sigaction(SIGINT, &dfl, NULL);
        sigaction(SIGQUIT, &dfl, NULL);
        sigaction(SIGTERM, &dfl, NULL);
        if (dup2(outp[1], STDOUT_FILENO) < 0 || fcntl(mark[1], F_SETFD, 0) < 0)
            _exit(127);
        execvpe(o->argv[0], o->argv, env);
        int e = errno;
        ssize_t w = write(status[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close(outp[1]);
    close(mark[1]);
    close(status[1]);
    outp[1] = mark[1] = status[1] = -1;
    int exec_errno = 0;
    ssize_t got;
    do
        got = read(status[0], &exec_errno, sizeof exec_errno);
    while (got < 0 && errno == EINTR);
    close_pair(status);
    if (got == (ssize_t)sizeof exec_errno) {
        waitpid(pid, NULL, 0);
        rc = loom_err_errno(err, LOOM_ENOTFOUND, exec_errno, "prof: cannot run '%s'", o->argv[0]);
        goto fail;
    }

    prof_sampler_t sampler;
    bool sampling = o->interval_ns > 0;
    if (sampling && (rc = prof_sampler_start(&sampler, pid, o->interval_ns, o->rescan_ns,
                                             o->gpu_interval_ns, err))) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        goto fail;
    }

    collect_t c = {r, 0, o->echo_fd, false, sampling ? &sampler : NULL, o->cpu_stat, true, 0, 0};
    if (r->toggle_steps) {
        if (loom_vec_reserve((void **)&r->toggles, &c.toggles_cap, 1, sizeof *r->toggles, 2))
            c.oom = true;
        else
            r->toggles[r->ntoggles++] = (loom_prof_toggle_t){r->start_ns, true};
    }
    stream_t *streams = calloc(2, sizeof *streams);
    if (!streams) {
        /* Keep going without reading: the pipes close with the child. */
        c.oom = true;
    } else {
        streams[0].fd = outp[0];
        streams[1].fd = mark[0];
        streams[1].marker_only = true;
    }
    bool open_[2] = {streams != NULL, streams != NULL};
    bool exited = false;
    while (!exited && (open_[0] || open_[1])) {
        struct pollfd pf[2];
        nfds_t np = 0;
        int which[2];
        for (int i = 0; i < 2; i++)
            if (open_[i]) {
                pf[np] = (struct pollfd){streams[i].fd, POLLIN, 0};
                which[np++] = i;
            }
        int n = poll(pf, np, 100);
        if (n < 0 && errno != EINTR)
            break;
        for (nfds_t i = 0; n > 0 && i < np; i++)
            if (pf[i].revents)
                open_[which[i]] = pump(&c, &streams[which[i]]);
        /* A descendant may keep the pipes open after the command exits;
         * the run ends with the command. */
        siginfo_t si = {0};
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
            exited = true;
    }
    if (exited && streams) {
        /* Drain what is already in the pipes without blocking. */
        for (int i = 0; i < 2; i++) {
            if (!open_[i])
                continue;
            fcntl(streams[i].fd, F_SETFL, O_NONBLOCK);
            while (pump(&c, &streams[i])) {
                struct pollfd pf = {streams[i].fd, POLLIN, 0};
                if (poll(&pf, 1, 0) <= 0)
                    break;
            }
            if (streams[i].len > 0 && !streams[i].overflow)
                handle_line(&c, &streams[i]);
        }
    }
    free(streams);
    if (!exited) {
        siginfo_t si;
        waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT);
    }
    r->run_delay_ns = read_run_delay(pid);
    if (sampling) {
        prof_sampler_stop(&sampler);
        r->samples = sampler.samples;
        r->nsamples = sampler.n;
        r->missed_ticks = sampler.missed;
        r->sampler_cpu_ns = sampler.self_cpu_ns;
        r->gpu_samples = sampler.gpu;
        r->ngpu_samples = sampler.ngpu;
        r->gpu_names = sampler.gpu_names;
        snprintf(r->gpu_status, sizeof r->gpu_status, "%s", sampler.gpu_status);
        if (r->gpu && !r->gpu_status[0] && r->ngpu_samples == 0)
            snprintf(r->gpu_status, sizeof r->gpu_status, "no GPU reading was taken");
    }
    struct rusage ru;
    int wst = 0;
    while (wait4(pid, &wst, 0, &ru) < 0 && errno == EINTR)
        ;
    r->end_ns = loom_time_mono_ns();
    r->exit_status = wst;
    r->rusage_user_ns = (int64_t)ru.ru_utime.tv_sec * LOOM_NS_PER_S + ru.ru_utime.tv_usec * 1000;
    r->rusage_sys_ns = (int64_t)ru.ru_stime.tv_sec * LOOM_NS_PER_S + ru.ru_stime.tv_usec * 1000;
    r->rusage_maxrss_bytes = (int64_t)ru.ru_maxrss * 1024;
    struct rusage self1;
    getrusage(RUSAGE_SELF, &self1);
#define TV_NS(tv) ((int64_t)(tv).tv_sec * LOOM_NS_PER_S + (tv).tv_usec * 1000)
    r->loom_cpu_ns = TV_NS(self1.ru_utime) + TV_NS(self1.ru_stime) - TV_NS(self0.ru_utime) -
                     TV_NS(self0.ru_stime);
#undef TV_NS
    close_pair(outp);
    close_pair(mark);
    free_env(env, o);
    if (c.oom) {
        loom_prof_run_free(r);
        return loom_err_set(err, LOOM_ENOMEM, "prof: out of memory while collecting");
    }
    *out = r;
    return LOOM_OK;
fail:
    close_pair(outp);
    close_pair(mark);
    close_pair(status);
    free_env(env, o);
    loom_prof_run_free(r);
    return rc;
}
