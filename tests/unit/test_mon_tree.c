/* The incremental process-tree reader (src/mon/tree.c): real process trees
 * (discovery of a new child without a full walk, CPU of a reaped child
 * moving into its parent, members retired when reaped by an outsider,
 * totals that never go back, details), and fixture /proc trees whose
 * last-pid field, stat and children files the test controls, to check
 * exactly which pids a look opens (without children files: the new ones,
 * those of the previous reading again, across a wrap-around; with them:
 * only the members' new children, those of any thread) and when a full
 * walk happens. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#include "loom/mon.h"

/* ------------------------------------------------------ a real tree */

static int cmd_pipe[2], ack_pipe[2], hold_pipe[2];

static void burn_cpu(double seconds)
{
    struct timespec ts;
    do
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    while ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 < seconds);
}

static void hold(void)
{
    char c;
    while (read(hold_pipe[0], &c, 1) < 0 && errno == EINTR) {
    }
    _exit(0);
}

/* The root: forks a holder child, then obeys one-letter commands:
 * b: fork a child that burns 0.205 s of CPU and then holds; k: kill and reap
 * that child. Each command is acknowledged with its child's pid. */
static void root_main(void)
{
    pid_t c1 = fork();
    if (c1 == 0)
        hold();
    pid_t c2 = 0;
    int ack = (int)c1;
    if (write(ack_pipe[1], &ack, sizeof ack) != sizeof ack)
        _exit(1);
    char c;
    while (read(cmd_pipe[0], &c, 1) == 1) {
        if (c == 'b') {
            int p[2];
            if (pipe(p) != 0)
                _exit(1);
            c2 = fork();
            if (c2 == 0) {
                burn_cpu(0.205);
                close(p[0]);
                if (write(p[1], "x", 1) != 1)
                    _exit(1);
                hold();
            }
            close(p[1]);
            if (read(p[0], &c, 1) != 1)
                _exit(1);
            close(p[0]);
            ack = (int)c2;
        } else if (c == 'k') {
            kill(c2, SIGKILL);
            waitpid(c2, NULL, 0);
            ack = (int)c2;
        }
        if (write(ack_pipe[1], &ack, sizeof ack) != sizeof ack)
            _exit(1);
    }
    _exit(0);
}

static pid_t command(char c)
{
    int pid = 0;
    assert_int_equal(write(cmd_pipe[1], &c, 1), 1);
    assert_int_equal(read(ack_pipe[0], &pid, sizeof pid), (ssize_t)sizeof pid);
    return (pid_t)pid;
}

static void test_real_tree(void **st)
{
    (void)st;
    assert_int_equal(pipe(cmd_pipe), 0);
    assert_int_equal(pipe(ack_pipe), 0);
    assert_int_equal(pipe(hold_pipe), 0);
    pid_t root = fork();
    if (root == 0) {
        setpgid(0, 0);
        close(cmd_pipe[1]);
        close(ack_pipe[0]);
        close(hold_pipe[1]);
        root_main();
    }
    setpgid(root, root);
    close(cmd_pipe[0]);
    close(ack_pipe[1]);
    close(hold_pipe[0]);
    int c1 = 0;
    assert_int_equal(read(ack_pipe[0], &c1, sizeof c1), (ssize_t)sizeof c1);

    loom_mon_t *m;
    loom_err_t e;
    assert_int_equal(loom_mon_open(&m, NULL, &e), LOOM_OK);
    loom_mon_tree_t *t;
    assert_int_equal(loom_mon_tree_open(&t, m, root, NULL, &e), LOOM_OK);
    loom_mon_proc_t p;
    assert_int_equal(loom_mon_tree_read(t, &p, &e), LOOM_OK);
    assert_int_equal(p.n_processes, 2);
    assert_int_equal(p.pid, root);
    assert_true(p.tree);
    assert_true(loom_mon_tree_has(t, root));
    assert_true(loom_mon_tree_has(t, (pid_t)c1));
    assert_false(loom_mon_tree_has(t, getpid()));
    assert_int_equal(p.io_source.status, LOOM_EUNAVAIL); /* no details asked */
    assert_true(p.rss_bytes > 0 && p.threads == 2);

    /* A child born after open is found by a look at the new pids, not by
     * another walk of everything. */
    pid_t c2 = command('b');
    assert_int_equal(loom_mon_tree_read(t, &p, &e), LOOM_OK);
    assert_int_equal(p.n_processes, 3);
    assert_true(loom_mon_tree_has(t, c2));
    loom_mon_tree_stats_t s;
    loom_mon_tree_stats(t, &s);
    assert_int_equal(s.full_scans, 1);
    assert_true(s.looks >= 1);
    assert_int_equal(s.members, 3);
    double burnt = p.user_seconds + p.system_seconds;
    /* The child's 0.205 s in full: its clock, not the 10 ms ticks of its
     * stat, which read 0.20 s (each field is truncated). */
    assert_true(burnt >= 0.205);
    assert_true(p.user_seconds >= 0 && p.system_seconds >= 0);

    /* Reaped by a member: its CPU moves into the parent's cutime, the
     * total does not drop. */
    command('k');
    assert_int_equal(loom_mon_tree_read(t, &p, &e), LOOM_OK);
    assert_int_equal(p.n_processes, 2);
    assert_false(loom_mon_tree_has(t, c2));
    assert_true(p.user_seconds + p.system_seconds >= burnt);
    assert_true(p.user_seconds + p.system_seconds < burnt + 1.0);

    /* Details: context switches and io of every member. */
    loom_mon_tree_opts_t o = {.details = true};
    loom_mon_tree_t *td;
    assert_int_equal(loom_mon_tree_open(&td, m, root, &o, &e), LOOM_OK);
    assert_int_equal(loom_mon_tree_read(td, &p, &e), LOOM_OK);
    assert_int_equal(p.io_source.status, LOOM_OK);
    assert_true(p.voluntary_ctxt_switches > 0);
    assert_true(p.rchar_bytes > 0); /* the root read its commands */
    loom_mon_tree_close(td);

    /* Reaped by an outsider (this test, and init for the holder): the
     * members are retired, their CPU kept. */
    assert_int_equal(loom_mon_tree_read(t, &p, &e), LOOM_OK);
    double before = p.user_seconds + p.system_seconds;
    close(cmd_pipe[1]);
    close(hold_pipe[1]);
    waitpid(root, NULL, 0);
    for (int i = 0; i < 200 && p.n_processes > 0; i++) { /* init reaps the holder */
        usleep(10000);
        assert_int_equal(loom_mon_tree_read(t, &p, &e), LOOM_OK);
    }
    assert_int_equal(p.n_processes, 0);
    assert_false(loom_mon_tree_has(t, root));
    assert_true(p.user_seconds + p.system_seconds >= before);
    close(ack_pipe[0]);
    loom_mon_tree_close(t);

    assert_int_equal(loom_mon_tree_open(&t, m, 0x7ffffff0, NULL, &e), LOOM_ENOTFOUND);
    assert_non_null(strstr(e.msg, "no such process"));
    assert_int_equal(loom_mon_tree_open(&t, m, 0, NULL, &e), LOOM_EINVAL);
    loom_mon_close(m);
}

/* ------------------------------------------------------ fixture /proc */

static char fx[256];

static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", fx, rel);
    for (char *q = path + strlen(fx) + 1; *q; q++)
        if (*q == '/') {
            *q = '\0';
            mkdir(path, 0755);
            *q = '/';
        }
    FILE *f = fopen(path, "w"); /* truncates the same inode: open fds see it */
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void put_pid_threads(int pid, int ppid, int threads)
{
    char rel[64], text[256];
    snprintf(rel, sizeof rel, "proc/%d/stat", pid);
    /* utime 10, stime 5, cutime 2, cstime 1 ticks; 100 pages */
    snprintf(text, sizeof text,
             "%d (p%d) S %d %d %d 0 -1 0 0 0 0 0 10 5 2 1 20 0 %d 0 1000 4096000 100 0\n", pid, pid,
             ppid, pid, pid, threads);
    put(rel, text);
}

static void put_pid(int pid, int ppid)
{
    put_pid_threads(pid, ppid, 1);
}

static void unlink_pid(int pid)
{
    char path[512];
    snprintf(path, sizeof path, "%s/proc/%d/stat", fx, pid);
    unlink(path);
    snprintf(path, sizeof path, "%s/proc/%d", fx, pid);
    rmdir(path);
}

static void put_last_pid(int pid)
{
    char text[64];
    snprintf(text, sizeof text, "0.10 0.20 0.30 1/80 %d\n", pid);
    put("proc/loadavg", text);
}

static int setup_fx(void **st)
{
    (void)st;
    snprintf(fx, sizeof fx, "/tmp/loom-mon-tree-%d", (int)getpid());
    mkdir(fx, 0755);
    put("proc/stat", "cpu  100 0 50 1000 0 0 0 0 0 0\ncpu0 100 0 50 1000 0 0 0 0 0 0\n");
    put_pid(100, 1);
    put_pid(101, 100);
    put_pid(102, 1);
    put_last_pid(102);
    return 0;
}

static int teardown_fx(void **st)
{
    (void)st;
    return loom_test_rmtree(fx);
}

static loom_mon_tree_stats_t read_stats(loom_mon_tree_t *t, uint32_t want_procs)
{
    loom_mon_proc_t p;
    loom_err_t e;
    assert_int_equal(loom_mon_tree_read(t, &p, &e), LOOM_OK);
    assert_int_equal(p.n_processes, want_procs);
    loom_mon_tree_stats_t s;
    loom_mon_tree_stats(t, &s);
    return s;
}

static void test_fixture_looks(void **st)
{
    (void)st;
    char proc[300];
    snprintf(proc, sizeof proc, "%s/proc", fx);
    loom_mon_opts_t mo = {.proc_root = proc, .sys_root = fx, .nvml_lib = "/nonexistent"};
    loom_mon_t *m;
    loom_err_t e;
    assert_int_equal(loom_mon_open(&m, &mo, &e), LOOM_OK);
    loom_mon_tree_t *t;
    assert_int_equal(loom_mon_tree_open(&t, m, 100, NULL, &e), LOOM_OK);
    loom_mon_tree_stats_t s;
    loom_mon_tree_stats(t, &s);
    assert_int_equal(s.full_scans, 1);
    assert_int_equal(s.probes, 2); /* 101 and 102: every pid but the root */

    /* The first reading looks at the last pids again (forks under way at
     * open), then nothing new: no look. */
    s = read_stats(t, 2);
    assert_int_equal(s.probes, 3); /* 102 again */
    s = read_stats(t, 2);
    assert_int_equal(s.probes, 3);
    assert_int_equal(s.looks, 1);

    /* New pids 104..106: only they are opened; a child and its own child
     * are found together. */
    put_pid(104, 1);
    put_pid(105, 101);
    put_pid(106, 105);
    put_last_pid(106);
    s = read_stats(t, 4);
    assert_int_equal(s.probes, 6);
    /* A pid of the previous reading that was not listed then (a fork under
     * way) is found by the next look, which covers those pids again. */
    put_pid(103, 100);
    s = read_stats(t, 5);
    assert_int_equal(s.probes, 8); /* 103, and 104 again */
    s = read_stats(t, 5);
    assert_int_equal(s.probes, 8); /* settled: no look */

    /* The allocator wrapped around: (106, 40]. */
    put_pid(40, 100);
    put_last_pid(40);
    s = read_stats(t, 6);
    assert_int_equal(s.probes, 9);
    assert_int_equal(s.full_scans, 1);
    assert_int_equal(s.members, 6);

    loom_mon_proc_t p;
    assert_int_equal(loom_mon_tree_read(t, &p, &e), LOOM_OK);
    assert_string_equal(p.comm, "p100");
    double hz = (double)sysconf(_SC_CLK_TCK);
    assert_true(fabs(p.user_seconds - 6 * 12 / hz) < 1e-9); /* utime + cutime */
    assert_true(fabs(p.system_seconds - 6 * 6 / hz) < 1e-9);
    assert_int_equal(p.threads, 6);
    assert_int_equal(p.rss_bytes, 6 * 100 * (uint64_t)sysconf(_SC_PAGESIZE));

    /* A full walk on demand finds what no look covers (a pid outside every
     * range, as after a wrap-around of more than pid_max). */
    put_pid(20, 100);
    s = read_stats(t, 6); /* not in (40, 40]: no look */
    assert_int_equal(loom_mon_tree_rescan(t, &e), LOOM_OK);
    s = read_stats(t, 7);
    assert_int_equal(s.full_scans, 2);
    assert_true(loom_mon_tree_has(t, 20));
    loom_mon_tree_close(t);
    unlink_pid(20);

    /* rescan_ns: a full walk as often as asked. */
    loom_mon_tree_opts_t o = {.rescan_ns = 1};
    assert_int_equal(loom_mon_tree_open(&t, m, 100, &o, &e), LOOM_OK);
    read_stats(t, 6);
    s = read_stats(t, 6);
    assert_int_equal(s.full_scans, 3);
    loom_mon_tree_close(t);

    /* No last pid to go by (loadavg unreadable): every look is a walk of
     * everything, at most once per discover_ns. */
    put("proc/loadavg", "garbage\n");
    o = (loom_mon_tree_opts_t){.discover_ns = 3600 * LOOM_NS_PER_S};
    assert_int_equal(loom_mon_tree_open(&t, m, 100, &o, &e), LOOM_OK);
    s = read_stats(t, 6);
    assert_int_equal(s.full_scans, 1);
    o.discover_ns = 0;
    loom_mon_tree_close(t);
    assert_int_equal(loom_mon_tree_open(&t, m, 100, &o, &e), LOOM_OK);
    read_stats(t, 6);
    s = read_stats(t, 6);
    assert_int_equal(s.full_scans, 3);
    loom_mon_tree_close(t);
    loom_mon_close(m);
}

/* With children files (the kernel's CONFIG_PROC_CHILDREN): a look reads
 * the members' children, whatever else was born on the host. */
static int setup_fx2(void **st)
{
    (void)st;
    snprintf(fx, sizeof fx, "/tmp/loom-mon-tree2-%d", (int)getpid());
    mkdir(fx, 0755);
    put("proc/stat", "cpu  100 0 50 1000 0 0 0 0 0 0\ncpu0 100 0 50 1000 0 0 0 0 0 0\n");
    put_pid(200, 1);
    put("proc/200/task/200/children", "201 ");
    put_pid_threads(201, 200, 2); /* threads 201 and 203 */
    put("proc/201/task/201/children", "");
    put("proc/201/task/203/children", "204 ");
    put_pid(204, 201);
    put_pid(205, 1);
    put_last_pid(205);
    return 0;
}

static void test_fixture_children(void **st)
{
    (void)st;
    char proc[300];
    snprintf(proc, sizeof proc, "%s/proc", fx);
    loom_mon_opts_t mo = {.proc_root = proc, .sys_root = fx, .nvml_lib = "/nonexistent"};
    loom_mon_t *m;
    loom_err_t e;
    assert_int_equal(loom_mon_open(&m, &mo, &e), LOOM_OK);
    loom_mon_tree_t *t;
    assert_int_equal(loom_mon_tree_open(&t, m, 200, NULL, &e), LOOM_OK);
    loom_mon_tree_stats_t s = read_stats(t, 3); /* 200, 201, 204 (by the walk at open) */
    assert_int_equal(s.full_scans, 1);
    uint64_t probes = s.probes;

    /* New pids on the host (206 unrelated, 207 a child of the root): only
     * the root's child is opened. */
    put_pid(206, 1);
    put_pid(207, 200);
    put("proc/200/task/200/children", "201 207 ");
    put_last_pid(207);
    s = read_stats(t, 4);
    assert_int_equal(s.probes, probes + 1);
    assert_true(loom_mon_tree_has(t, 207));
    assert_false(loom_mon_tree_has(t, 206));

    /* A child forked by a second thread of 201 is listed under that
     * thread; its own child is found in the same look. */
    put_pid(208, 201);
    put_pid(209, 208);
    put("proc/201/task/203/children", "204 208 ");
    put("proc/208/task/208/children", "209 ");
    put_last_pid(209);
    s = read_stats(t, 6);
    assert_int_equal(s.probes, probes + 3);
    assert_true(loom_mon_tree_has(t, 209));
    assert_int_equal(s.full_scans, 1);
    loom_mon_tree_close(t);
    loom_mon_close(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_tree),
        cmocka_unit_test_setup_teardown(test_fixture_looks, setup_fx, teardown_fx),
        cmocka_unit_test_setup_teardown(test_fixture_children, setup_fx2, teardown_fx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
