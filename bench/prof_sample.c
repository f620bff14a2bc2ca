/* bench_prof_sample: the cost of one profiler tick.
 *
 * Compares, on the same process tree (a shell with 4 sleeping children),
 * the profiler's tick (src/prof/proctree.c: one pread of an open
 * /proc/PID/stat per member) with the monitoring part's process-tree read
 * (loom_mon_proc_read with tree=true: a walk of /proc and stat, status and
 * io per member), and the profiler's /proc walk for new members (done once
 * per --rescan). CPU time on the calling thread's clock, so the figure is
 * the sampler's cost to the machine, and the share of one core it takes at
 * 100 Hz; and the cost of the 100 Hz wake-ups themselves, with nothing read. Writes
 * OUT/prof_sample.md (--out DIR, default docs/bench).
 *
 *   build/bench_prof_sample [--out DIR] [--iterations N] */
#include <dirent.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loom/mon.h"
#include "prof/prof_internal.h"

static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * LOOM_NS_PER_S + ts.tv_nsec;
}

static int count_proc(void)
{
    DIR *d = opendir("/proc");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] >= '1' && e->d_name[0] <= '9';
    if (d)
        closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    const char *out = "docs/bench";
    int iters = 2000;
    static const struct option opts[] = {{"out", required_argument, NULL, 'o'},
                                         {"iterations", required_argument, NULL, 'n'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'o')
            out = optarg;
        else if (c == 'n')
            iters = atoi(optarg);
        else
            return 2;
    }
    if (iters < 10)
        iters = 10;
    pid_t root = fork();
    if (root == 0) {
        setpgid(0, 0);
        execl("/bin/sh", "sh", "-c", "sleep 60 & sleep 60 & sleep 60 & sleep 60 & wait",
              (char *)NULL);
        _exit(127);
    }
    setpgid(root, root);
    usleep(300000); /* let the children start */
    loom_err_t err;
    prof_tree_t t;
    if (prof_tree_init(&t, root, &err)) {
        fprintf(stderr, "bench_prof_sample: %s\n", err.msg);
        return 1;
    }
    prof_tree_rescan(&t);
    loom_prof_sample_t s;
    int64_t c0 = cpu_ns();
    for (int i = 0; i < iters; i++)
        prof_tree_sample(&t, &s);
    double tick = (double)(cpu_ns() - c0) / iters;
    int members = s.nprocs;
    int rescans = iters / 20 > 5 ? iters / 20 : 5;
    c0 = cpu_ns();
    for (int i = 0; i < rescans; i++)
        prof_tree_rescan(&t);
    double rescan = (double)(cpu_ns() - c0) / rescans;
    prof_tree_free(&t);

    loom_mon_t *m;
    double mon = -1;
    if (loom_mon_open(&m, NULL, &err) == LOOM_OK) {
        loom_mon_proc_t p;
        c0 = cpu_ns();
        for (int i = 0; i < rescans; i++)
            loom_mon_proc_read(m, root, true, &p, &err);
        mon = (double)(cpu_ns() - c0) / rescans;
        loom_mon_close(m);
    }
    /* What waking up 100 times a second costs by itself: the sampler's
     * schedule with nothing to do (2 s). On a VM the timer interrupt and the
     * wake-up are charged to the thread and can exceed the tick's work. */
    int wakes = 200;
    c0 = cpu_ns();
    int64_t next = loom_time_mono_ns();
    for (int i = 0; i < wakes; i++) {
        next += 10 * LOOM_NS_PER_MS;
        struct timespec ts = {next / LOOM_NS_PER_S, next % LOOM_NS_PER_S};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
            ;
    }
    double wake = (double)(cpu_ns() - c0) / wakes;
    kill(-root, SIGTERM); /* the shell and its sleeps */
    waitpid(root, NULL, 0);

    struct utsname u;
    uname(&u);
    char when[32];
    loom_time_format_rfc3339(loom_time_real_ns(), when);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int nproc = count_proc();
    char load[64] = "?";
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (fgets(load, sizeof load, lf))
            load[strcspn(load, "\n")] = '\0';
        fclose(lf);
    }
    loom_buf_t b = LOOM_BUF_INIT;
    loom_buf_appendf(
        &b,
        "# Profiler tick cost (bench_prof_sample)\n\n"
        "command: `build/bench_prof_sample --iterations %d`  \n"
        "machine: %s %s, %ld online cores (shared with other work), %d "
        "processes in /proc, load average %s  \ndate: %s\n\n"
        "Tree: `sh` with 4 `sleep` children (%d members). CPU time of the "
        "sampling thread (CLOCK_THREAD_CPUTIME_ID), mean per call.\n\n"
        "| operation | µs CPU per call | share of one core |\n"
        "|---|---|---|\n"
        "| prof tick (pread of open /proc/PID/stat per member) | %.1f | %.3f%% at 100 Hz |\n"
        "| prof rescan (walk of /proc; once per --rescan, 1 s) | %.1f | %.3f%% at 1 Hz |\n"
        "| mon tree read (loom_mon_proc_read, tree) | %.1f | %.3f%% at 100 Hz |\n"
        "| wake-up alone (absolute 10 ms sleeps, nothing read; %d of them) | %.1f | %.3f%% at "
        "100 Hz |\n",
        iters, u.sysname, u.release, cores, nproc, load, when, members, tick / 1e3,
        tick * 100 / 1e9 * 100, rescan / 1e3, rescan / 1e9 * 100, mon / 1e3, mon * 100 / 1e9 * 100,
        wakes, wake / 1e3, wake * 100 / 1e9 * 100);
    printf("%s", b.data);
    char path[512];
    snprintf(path, sizeof path, "%s/prof_sample.md", out);
    int rc = loom_write_file_atomic(path, b.data, b.len, 0644, &err);
    if (rc)
        fprintf(stderr, "bench_prof_sample: %s\n", err.msg);
    loom_buf_free(&b);
    return rc ? 1 : 0;
}
