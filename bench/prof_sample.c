/* bench_prof_sample: the cost of one profiler tick.
 *
 * On the same process tree (a shell with 4 sleeping children) it compares
 * - the profiler's tick as it was until it moved onto the monitoring part
 *   (one pread of each member's open /proc/PID/stat, done here the same
 *   way) and its rescan (a walk of /proc opening every /proc/PID/stat);
 * - the profiler's tick now: loom_mon_tree_read (the same preads, and a
 *   clock_gettime of each member's CPU-time clock; every
 *   100 ms one of /proc/loadavg and, when a pid was allocated since, a
 *   look at the members' children), measured on the host as it is and
 *   while another process forks all the time (so that every check looks),
 *   the same checking at every tick, and the tree reader's full walk
 *   (once per --rescan);
 * - the monitoring part's one-shot tree read (loom_mon_proc_read, tree);
 * - the 100 Hz wake-ups themselves, with nothing read.
 * CPU time on the calling thread's clock (what the sampling thread costs
 * the machine; the forking process is not counted), and the share of one
 * core at 100 Hz (1 Hz for walks). Writes OUT/prof_sample.md.
 *
 *   build/bench_prof_sample [--out DIR] [--iterations N] */
#include <dirent.h>
#include <fcntl.h>
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
#include "mon/mon_int.h"
#include "notes.h"

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

/* ---- the profiler's reader before this change, done the same way */

typedef struct old_tree {
    int fd[64];
    int n;
    loom_buf_t buf;
} old_tree_t;

/* Members: root and its children (the sleeps), from the children file. */
static void old_open(old_tree_t *t, pid_t root)
{
    char path[128];
    memset(t, 0, sizeof *t);
    snprintf(path, sizeof path, "/proc/%d/stat", (int)root);
    t->fd[t->n++] = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)root, (int)root);
    if (loom_mon__read_small(path, &t->buf, NULL) != LOOM_OK)
        return;
    char *save = NULL;
    for (char *w = strtok_r(t->buf.data, " \n", &save); w && t->n < 64;
         w = strtok_r(NULL, " \n", &save)) {
        snprintf(path, sizeof path, "/proc/%s/stat", w);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
            t->fd[t->n++] = fd;
    }
}

static int64_t old_tick(old_tree_t *t)
{
    int64_t cpu = 0;
    for (int i = 0; i < t->n; i++) {
        loom_mon_pidstat_t ps;
        if (loom_mon__pread_all(t->fd[i], &t->buf, "stat", NULL) == LOOM_OK &&
            loom_mon__parse_pidstat(t->buf.data, t->buf.len, "stat", &ps, NULL) == LOOM_OK)
            cpu += (int64_t)(ps.utime_ticks + ps.stime_ticks + ps.cutime_ticks + ps.cstime_ticks);
    }
    return cpu;
}

static void old_rescan(loom_buf_t *buf)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        loom_mon_pidstat_t ps;
        if (loom_mon__read_small(path, buf, NULL) == LOOM_OK)
            loom_mon__parse_pidstat(buf->data, buf->len, path, &ps, NULL);
    }
    if (d)
        closedir(d);
}

/* ---- ticks as the profiler takes them: one every 10 ms, each call
 * bracketed by the thread's CPU clock (the bracket's own cost, measured
 * empty, is taken off), so a tick pays the cold caches a real one does.
 * Several readers take turns tick by tick (k readers: a tick every 10/k ms,
 * each reader's every 10 ms), so that they see the same load. */

typedef struct ticker {
    void (*fn)(void *arg);
    void *arg;
    int64_t used;
    double us; /* result: CPU per tick */
} ticker_t;

static void ticked_rr(ticker_t *tk, int k, int n_each)
{
    int64_t empty = 0;
    for (int i = 0; i < 50; i++) {
        int64_t a = cpu_ns();
        empty += cpu_ns() - a;
    }
    for (int j = 0; j < k; j++)
        tk[j].used = 0;
    int64_t next = loom_time_mono_ns();
    for (int i = 0; i < n_each * k; i++) {
        next += 10 * LOOM_NS_PER_MS / k; /* each reader: one tick every 10 ms */
        loom_time_sleep_until_ns(next);
        ticker_t *t = &tk[i % k];
        int64_t a = cpu_ns();
        t->fn(t->arg);
        t->used += cpu_ns() - a;
    }
    for (int j = 0; j < k; j++)
        tk[j].us = ((double)tk[j].used / n_each - (double)empty / 50) / 1e3;
}

static void old_tick_fn(void *arg)
{
    old_tick(arg);
}

static void tree_tick_fn(void *arg)
{
    loom_mon_proc_t p;
    loom_mon_tree_read(arg, &p, NULL);
}

static uint64_t tree_looks(loom_mon_tree_t *t)
{
    loom_mon_tree_stats_t s;
    loom_mon_tree_stats(t, &s);
    return s.looks + s.full_scans;
}

static double back_to_back_us(void (*fn)(void *), void *arg, int n)
{
    int64_t c0 = cpu_ns();
    for (int i = 0; i < n; i++)
        fn(arg);
    return (double)(cpu_ns() - c0) / n / 1e3;
}

int main(int argc, char **argv)
{
    const char *out = BENCH_OUT_DEFAULT;
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
    bench_out_dir(out);
    char load0[128] = "", load1[128] = "";
    loom_buf_t lb = LOOM_BUF_INIT;
    if (loom_mon__read_small("/proc/loadavg", &lb, NULL) == LOOM_OK)
        snprintf(load0, sizeof load0, "%.*s", (int)strcspn(lb.data, "\n"), lb.data);
    pid_t root = fork();
    if (root == 0) {
        setpgid(0, 0);
        execl("/bin/sh", "sh", "-c", "sleep 60 & sleep 60 & sleep 60 & sleep 60 & wait",
              (char *)NULL);
        _exit(127);
    }
    setpgid(root, root);
    usleep(300000); /* let the children start */
    int rescans = iters / 20 > 5 ? iters / 20 : 5;
    int nticks = iters / 10 > 50 ? iters / 10 : 50;

    old_tree_t ot;
    old_open(&ot, root);
    int members = ot.n;
    loom_mon_t *m;
    loom_err_t err;
    if (loom_mon_open(&m, NULL, &err)) {
        fprintf(stderr, "bench_prof_sample: %s\n", err.msg);
        return 1;
    }
    /* As loom prof: a check for new pids every 100 ms; its full walk (every
     * --rescan) is measured on its own, so it is off here. */
    loom_mon_tree_opts_t prof_opts = {.rescan_ns = -1, .discover_ns = 100 * LOOM_NS_PER_MS};
    loom_mon_tree_opts_t every_opts = {.rescan_ns = -1}; /* a check at every reading */
    loom_mon_tree_t *tp, *te;
    if (loom_mon_tree_open(&tp, m, root, &prof_opts, &err) ||
        loom_mon_tree_open(&te, m, root, &every_opts, &err)) {
        fprintf(stderr, "bench_prof_sample: %s\n", err.msg);
        return 1;
    }
    double b2b_old = back_to_back_us(old_tick_fn, &ot, iters);
    double b2b_new = back_to_back_us(tree_tick_fn, tp, iters);

    ticker_t quiet[2] = {{old_tick_fn, &ot, 0, 0}, {tree_tick_fn, tp, 0, 0}};
    uint64_t l0 = tree_looks(tp);
    ticked_rr(quiet, 2, nticks);
    double quiet_looks = (double)(tree_looks(tp) - l0) / nticks;

    /* Another process forking all the time: every check finds new pids. */
    pid_t forker = fork();
    if (forker == 0) {
        execl("/bin/sh", "sh", "-c", "while :; do /bin/true; done", (char *)NULL);
        _exit(127);
    }
    usleep(100000);
    ticker_t busy[3] = {
        {old_tick_fn, &ot, 0, 0}, {tree_tick_fn, tp, 0, 0}, {tree_tick_fn, te, 0, 0}};
    l0 = tree_looks(tp);
    uint64_t le0 = tree_looks(te);
    ticked_rr(busy, 3, nticks);
    double busy_looks = (double)(tree_looks(tp) - l0) / nticks;
    double every_looks = (double)(tree_looks(te) - le0) / nticks;
    kill(forker, SIGKILL);
    waitpid(forker, NULL, 0);
    loom_mon_tree_close(tp);
    loom_mon_tree_close(te);

    int64_t c0 = cpu_ns();
    for (int i = 0; i < rescans; i++)
        old_rescan(&ot.buf);
    double rescan_before = (double)(cpu_ns() - c0) / rescans / 1e3;
    for (int i = 0; i < ot.n; i++)
        close(ot.fd[i]);
    loom_buf_free(&ot.buf);
    loom_mon_tree_opts_t walk_opts = {.rescan_ns = 1}; /* a full walk at every reading */
    loom_mon_tree_t *tw;
    double walk = -1;
    if (loom_mon_tree_open(&tw, m, root, &walk_opts, &err) == LOOM_OK) {
        walk = back_to_back_us(tree_tick_fn, tw, rescans);
        loom_mon_tree_close(tw);
    }
    loom_mon_proc_t p;
    c0 = cpu_ns();
    for (int i = 0; i < rescans; i++)
        loom_mon_proc_read(m, root, true, &p, &err);
    double oneshot = (double)(cpu_ns() - c0) / rescans / 1e3;
    /* What waking up 100 times a second costs by itself: the sampler's
     * schedule with nothing to do (2 s). On a VM the timer interrupt and the
     * wake-up are charged to the thread and can exceed the tick's work. */
    int wakes = 200;
    c0 = cpu_ns();
    int64_t next = loom_time_mono_ns();
    for (int i = 0; i < wakes; i++) {
        next += 10 * LOOM_NS_PER_MS;
        loom_time_sleep_until_ns(next);
    }
    double wake = (double)(cpu_ns() - c0) / wakes / 1e3;
    loom_mon_close(m);
    kill(-root, SIGTERM); /* the shell and its sleeps */
    waitpid(root, NULL, 0);
    if (loom_mon__read_small("/proc/loadavg", &lb, NULL) == LOOM_OK)
        snprintf(load1, sizeof load1, "%.*s", (int)strcspn(lb.data, "\n"), lb.data);
    loom_buf_free(&lb);

    struct utsname u;
    uname(&u);
    char when[32];
    loom_time_format_rfc3339(loom_time_real_ns(), when);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int nproc = count_proc();
    loom_buf_t b = LOOM_BUF_INIT;
    loom_buf_appendf(
        &b,
        "# Profiler tick cost (bench_prof_sample)\n\n"
        "command: `build/bench_prof_sample --iterations %d`  \n"
        "machine: %s %s, %ld online cores, %d processes in /proc  \n"
        "date: %s  \nload average at start `%s`, at end `%s`\n\n"
        "Tree: `sh` with 4 `sleep` children (%d members). CPU time of the sampling thread "
        "(CLOCK_THREAD_CPUTIME_ID), µs per call (mean).\n\n"
        "| tick | before: prof's own reader (pread of each member's open /proc/PID/stat) | "
        "now: loom_mon_tree_read, as loom prof opens it | looks per tick (now) |\n"
        "|---|---:|---:|---:|\n"
        "| back to back (warm caches) | %.1f | %.1f | |\n"
        "| one every 10 ms, taking turns, the host as it is | %.1f (%.3f%% of a core) | %.1f "
        "(%.3f%%) | %.3f |\n"
        "| one every 10 ms, taking turns, while another process forks all the time | %.1f "
        "(%.3f%%) | %.1f (%.3f%%) | %.3f |\n"
        "| the same, checking for new pids at every tick instead of every 100 ms | | %.1f "
        "(%.3f%%) | %.3f |\n\n"
        "| walk of all of /proc | µs CPU | share of one core |\n|---|---:|---:|\n"
        "| before: prof rescan (opens every /proc/PID/stat; each --rescan, 1 s) | %.1f | %.3f%% "
        "at 1 Hz |\n"
        "| now: the tree reader's full walk (each --rescan, 1 s) | %.1f | %.3f%% at 1 Hz |\n"
        "| one-shot tree read (loom_mon_proc_read, tree: a walk and three files per member) | "
        "%.1f | %.3f%% at 100 Hz |\n\n"
        "| schedule alone | µs CPU per tick | share of one core |\n|---|---:|---:|\n"
        "| wake-up alone (absolute 10 ms sleeps, nothing read; %d of them) | %.1f | %.3f%% at "
        "100 Hz |\n\n"
        "Percentages are of one core at 100 Hz. loom prof checks for new pids every 100 ms (a "
        "pread of /proc/loadavg) and, if the kernel allocated any, looks: it reads the "
        "members' children files and opens only children it does not know. The ticks above "
        "leave its full walk (every --rescan) out; it has its own row. The rows without a "
        "forking process still see the forks of whatever else runs on the machine; the "
        "forking process's own CPU is not counted. Ticks one every 10 ms per reader, the "
        "readers taking turns: %d per reader, each bracketed by the thread's CPU clock (the "
        "bracket's own cost taken off).\n",
        iters, u.sysname, u.release, cores, nproc, when, load0, load1, members, b2b_old, b2b_new,
        quiet[0].us, quiet[0].us / 100, quiet[1].us, quiet[1].us / 100, quiet_looks, busy[0].us,
        busy[0].us / 100, busy[1].us, busy[1].us / 100, busy_looks, busy[2].us, busy[2].us / 100,
        every_looks, rescan_before, rescan_before / 1e4, walk, walk / 1e4, oneshot, oneshot / 100,
        wakes, wake, wake / 100, nticks);
    printf("%s", b.data);
    char path[512];
    snprintf(path, sizeof path, "%s/prof_sample.md", out);
    int rc = loom_write_file_atomic(path, b.data, b.len, 0644, &err);
    if (rc)
        fprintf(stderr, "bench_prof_sample: %s\n", err.msg);
    loom_buf_free(&b);
    return rc ? 1 : 0;
}
