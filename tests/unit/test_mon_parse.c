/* The /proc and /sys parsers of src/mon/parse.c over fixed buffers: values,
 * units, and the errors for malformed input. */
#include <stdio.h>

#include "test_util.h"

#include <math.h>

#include "mon/mon_int.h"

#define P(s) s, strlen(s)

static void test_stat(void **st)
{
    (void)st;
    const char *txt = "cpu  100 2 30 4000 5 0 6 7 0 0\n"
                      "cpu0 50 1 15 2000 3 0 3 4 0 0\n"
                      "cpu1 50 1 15 2000 2 0 3 3 0 0\n"
                      "intr 254547 0 0 1\n"
                      "ctxt 521786\n"
                      "btime 1796199926\n"
                      "processes 9617\n"
                      "procs_running 3\n"
                      "procs_blocked 1\n"
                      "softirq 1 2 3\n";
    loom_mon_cpu_t c;
    memset(&c, 0, sizeof c);
    loom_err_t e;
    assert_int_equal(loom_mon__parse_stat(P(txt), "stat", 100, &c, &e), LOOM_OK);
    assert_true(c.seconds[LOOM_MON_CPU_USER] == 1.0);
    assert_true(c.seconds[LOOM_MON_CPU_IDLE] == 40.0);
    assert_true(c.seconds[LOOM_MON_CPU_STEAL] == 0.07);
    assert_int_equal(c.n_cores, 2);
    assert_int_equal(c.cores[1].id, 1);
    assert_true(c.cores[1].seconds[LOOM_MON_CPU_IOWAIT] == 0.02);
    assert_true(isnan(c.cores[0].freq_hz));
    assert_int_equal(c.interrupts, 254547);
    assert_int_equal(c.context_switches, 521786);
    assert_int_equal(c.boot_time_unix_s, 1796199926);
    assert_int_equal(c.forks, 9617);
    assert_int_equal(c.procs_running, 3);
    assert_int_equal(c.procs_blocked, 1);

    /* Old kernels print fewer columns: the rest are 0, not garbage. */
    const char *old = "cpu 1 2 3 4\ncpu0 1 2 3 4\n";
    assert_int_equal(loom_mon__parse_stat(P(old), "stat", 100, &c, &e), LOOM_OK);
    assert_true(c.seconds[LOOM_MON_CPU_STEAL] == 0);
    assert_int_equal(c.n_cores, 1);

    assert_int_equal(loom_mon__parse_stat(P("cpu 1 2 x\n"), "/proc/stat", 100, &c, &e),
                     LOOM_EINVAL);
    assert_string_equal(e.msg, "/proc/stat: line 1: expected a tick count");
    assert_int_equal(loom_mon__parse_stat(P("cpu 1 2\n"), "s", 100, &c, &e), LOOM_EINVAL);
    assert_int_equal(loom_mon__parse_stat(P("cpuX 1 2 3 4\n"), "s", 100, &c, &e), LOOM_EINVAL);
    assert_int_equal(loom_mon__parse_stat(P("ctxt 5\n"), "s", 100, &c, &e), LOOM_EINVAL);
    assert_string_equal(e.msg, "s: no \"cpu\" line");
    assert_int_equal(loom_mon__parse_stat(P("cpu 99999999999999999999 1 1 1\n"), "s", 100, &c, &e),
                     LOOM_EINVAL);
    free(c.cores);
}

static void test_loadavg_psi(void **st)
{
    (void)st;
    loom_mon_cpu_t c;
    memset(&c, 0, sizeof c);
    loom_err_t e;
    assert_int_equal(loom_mon__parse_loadavg(P("0.64 0.35 0.16 4/112 9617\n"), "la", &c, &e), 0);
    assert_true(fabs(c.load1 - 0.64) < 1e-12 && fabs(c.load15 - 0.16) < 1e-12);
    assert_int_equal(c.tasks_runnable, 4);
    assert_int_equal(c.tasks_total, 112);
    assert_int_equal(loom_mon__parse_loadavg(P("0.64 0.35\n"), "la", &c, &e), LOOM_EINVAL);
    assert_int_equal(loom_mon__parse_loadavg(P("0.64 0.35 0.1 4 1\n"), "la", &c, &e), LOOM_EINVAL);
    int64_t last = 0;
    assert_int_equal(loom_mon__parse_last_pid(P("0.64 0.35 0.16 4/112 9617\n"), "la", &last, &e),
                     0);
    assert_int_equal(last, 9617);
    assert_int_equal(loom_mon__parse_last_pid(P("0.64 0.35 0.16 4/112\n"), "la", &last, &e),
                     LOOM_EINVAL);
    assert_non_null(strstr(e.msg, "la: line 1: expected the last pid allocated"));
    assert_int_equal(
        loom_mon__parse_last_pid(P("0.6 0.3 0.1 4/112 99999999999\n"), "la", &last, &e),
        LOOM_EINVAL);

    loom_mon_psi_t p;
    memset(&p, 0, sizeof p);
    const char *psi = "some avg10=13.89 avg60=4.29 avg300=1.46 total=8171524\n"
                      "full avg10=0.00 avg60=0.00 avg300=0.00 total=12\n";
    assert_int_equal(loom_mon__parse_psi(P(psi), "psi", &p, &e), 0);
    assert_true(fabs(p.some.avg10 - 13.89) < 1e-9);
    assert_true(fabs(p.some.total_seconds - 8.171524) < 1e-12);
    assert_true(p.has_full);
    assert_true(fabs(p.full.total_seconds - 12e-6) < 1e-15);
    assert_int_equal(loom_mon__parse_psi(P("some avg10=1 avg60=2\n"), "psi", &p, &e), LOOM_EINVAL);
    assert_string_equal(e.msg, "psi: line 1: expected avg300=");
    assert_int_equal(
        loom_mon__parse_psi(P("full avg10=1 avg60=2 avg300=3 total=4\n"), "psi", &p, &e),
        LOOM_EINVAL);
}

static void test_meminfo(void **st)
{
    (void)st;
    const char *txt = "MemTotal:       24683584 kB\n"
                      "MemFree:        22554480 kB\n"
                      "MemAvailable:   23430176 kB\n"
                      "Buffers:            9756 kB\n"
                      "Cached:          1036156 kB\n"
                      "SwapCached:            0 kB\n"
                      "Shmem:              9356 kB\n"
                      "SReclaimable:      98640 kB\n"
                      "Dirty:             18860 kB\n"
                      "SwapTotal:         1024 kB\n"
                      "SwapFree:           512 kB\n";
    loom_mon_memory_t m;
    loom_err_t e;
    assert_int_equal(loom_mon__parse_meminfo(P(txt), "mi", &m, &e), 0);
    assert_int_equal(m.total_bytes, 24683584ull * 1024);
    assert_int_equal(m.available_bytes, 23430176ull * 1024);
    assert_int_equal(m.cached_bytes, (1036156ull + 98640) * 1024);
    assert_int_equal(m.used_bytes, (24683584ull - 22554480 - 9756 - 1036156 - 98640) * 1024);
    assert_int_equal(m.swap_used_bytes, 512 * 1024);
    assert_int_equal(m.dirty_bytes, 18860ull * 1024);
    /* SwapCached must not be taken for Cached (exact key match). */
    assert_int_equal(loom_mon__parse_meminfo(P("MemFree: 1 kB\n"), "mi", &m, &e), LOOM_EINVAL);
    assert_string_equal(e.msg, "mi: expected MemTotal and MemFree");
    assert_int_equal(loom_mon__parse_meminfo(P("MemTotal: x kB\nMemFree: 1 kB\n"), "mi", &m, &e),
                     LOOM_EINVAL);
}

static void test_diskstats(void **st)
{
    (void)st;
    const char *txt =
        "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
        " 254       0 vda 55299 8431 4317218 17309 25077 14256 2395472 7065 0 11708 26155 5835 "
        "55 177704 695 4366 1085\n"
        "   8       0 sda 10 0 8 1 2 0 16 3 0 4 5\n";
    loom_mon_disks_t d;
    memset(&d, 0, sizeof d);
    loom_err_t e;
    assert_int_equal(loom_mon__parse_diskstats(P(txt), "ds", &d, &e), 0);
    assert_int_equal(d.n, 3);
    assert_string_equal(d.disks[1].name, "vda");
    assert_int_equal(d.disks[1].major, 254);
    assert_int_equal(d.disks[1].read_bytes, 4317218ull * 512);
    assert_int_equal(d.disks[1].written_bytes, 2395472ull * 512);
    assert_true(d.disks[1].io_seconds == 11.708);
    assert_int_equal(d.disks[1].discarded_bytes, 177704ull * 512);
    assert_int_equal(d.disks[1].flushes, 4366);
    assert_int_equal(d.disks[2].discards, 0); /* 2.6-era 11 fields */
    assert_int_equal(loom_mon__parse_diskstats(P("8 0 sda 1 2 3\n"), "ds", &d, &e), LOOM_EINVAL);
    assert_string_equal(e.msg, "ds: line 1: expected at least 11 counters");
    free(d.disks);
}

static void test_netdev(void **st)
{
    (void)st;
    const char *txt =
        "Inter-|   Receive                                                |  Transmit\n"
        " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets "
        "errs drop fifo colls carrier compressed\n"
        "    lo:    3267      29    0    0    0     0          0         0     3267      29    0 "
        "   0    0     0       0          0\n"
        "  eth0: 68598232    1866    1    2    0     0          0         7    82134    1105    "
        "3    4    0     5       6          0\n";
    loom_mon_net_t n;
    memset(&n, 0, sizeof n);
    loom_err_t e;
    assert_int_equal(loom_mon__parse_netdev(P(txt), "nd", &n, &e), 0);
    assert_int_equal(n.n, 2);
    assert_string_equal(n.ifs[1].name, "eth0");
    assert_int_equal(n.ifs[1].rx_bytes, 68598232);
    assert_int_equal(n.ifs[1].rx_errors, 1);
    assert_int_equal(n.ifs[1].rx_dropped, 2);
    assert_int_equal(n.ifs[1].rx_multicast, 7);
    assert_int_equal(n.ifs[1].tx_bytes, 82134);
    assert_int_equal(n.ifs[1].tx_collisions, 5);
    assert_int_equal(n.ifs[1].tx_carrier, 6);
    assert_int_equal(loom_mon__parse_netdev(P("h\nh\neth0 1 2\n"), "nd", &n, &e), LOOM_EINVAL);
    assert_int_equal(loom_mon__parse_netdev(P("h\nh\neth0: 1 2\n"), "nd", &n, &e), LOOM_EINVAL);
    assert_string_equal(e.msg, "nd: line 3: expected 16 counters");
    free(n.ifs);
}

static void test_mounts(void **st)
{
    (void)st;
    loom_buf_t types = LOOM_BUF_INIT;
    size_t nt;
    loom_err_t e;
    assert_int_equal(loom_mon__parse_filesystems(P("nodev\tsysfs\nnodev\ttmpfs\n\text4\n\txfs\n"),
                                                 "fs", &types, &nt, &e),
                     0);
    assert_int_equal(nt, 2);
    const char *mounts = "proc /proc proc rw 0 0\n"
                         "/dev/vda / ext4 rw,relatime 0 0\n"
                         "/dev/vdb /mnt/with\\040space xfs ro,relatime 0 0\n"
                         "/dev/vda /bind ext4 rw 0 0\n"
                         "tmpfs /tmp tmpfs rw 0 0\n";
    loom_mon_fss_t f;
    memset(&f, 0, sizeof f);
    assert_int_equal(loom_mon__parse_mounts(P(mounts), "m", types.data, nt, &f, &e), 0);
    assert_int_equal(f.n, 2); /* the bind mount of /dev/vda is counted once */
    assert_string_equal(f.fs[0].mountpoint, "/");
    assert_false(f.fs[0].readonly);
    assert_string_equal(f.fs[1].mountpoint, "/mnt/with space");
    assert_true(f.fs[1].readonly);
    assert_int_equal(loom_mon__parse_mounts(P("/dev/vda /\n"), "m", types.data, nt, &f, &e),
                     LOOM_EINVAL);
    free(f.fs);
    loom_buf_free(&types);
}

/* The number scanner under every parser: exact to 2^64 - 1, an error one
 * above, however many leading zeros, and at the very end of the buffer
 * (no newline; the buffers are not NUL-terminated). */
static void test_u64_limits(void **st)
{
    (void)st;
    static const char *const keys[] = {"a", "b"};
    uint64_t v[2], found;
    loom_err_t e;
    assert_int_equal(loom_mon__parse_keyed(P("a 18446744073709551615\nb 9999999999999999999"), "k",
                                           keys, 2, v, &found, &e),
                     LOOM_OK);
    assert_int_equal(found, 3);
    assert_true(v[0] == UINT64_MAX);
    assert_true(v[1] == 9999999999999999999ull);
    assert_int_equal(loom_mon__parse_keyed(P("a 000000000000000000000000018446744073709551615\n"),
                                           "k", keys, 2, v, &found, &e),
                     LOOM_OK);
    assert_true(v[0] == UINT64_MAX);
    assert_int_equal(
        loom_mon__parse_keyed(P("a 18446744073709551616\n"), "k", keys, 2, v, &found, &e),
        LOOM_EINVAL);
    assert_string_equal(e.msg, "k: line 1: expected a number after a");
    assert_int_equal(
        loom_mon__parse_keyed(P("a 99999999999999999999\n"), "k", keys, 2, v, &found, &e),
        LOOM_EINVAL);
    /* A number cut by the end of the buffer is read up to there. */
    const char *cut = "a 12345678901234567890";
    assert_int_equal(loom_mon__parse_keyed(cut, 12, "k", keys, 2, v, &found, &e), LOOM_OK);
    assert_true(v[0] == 1234567890ull);
}

static void test_pidstat_keyed_iostat(void **st)
{
    (void)st;
    const char *txt = "1234 (my (odd) proc) S 1 1234 1234 0 -1 4194304 100 0 0 0 250 75 0 0 20 "
                      "0 7 0 12345 104857600 2560 18446744073709551615 1 1 0 0 0 0 0\n";
    const char *reaped = "9 (a) b) c) S 1 9 9 0 -1 0 0 0 0 0 3 4 500 60 20 0 1 0 1 1 1\n";
    loom_mon_pidstat_t ps;
    loom_err_t e;
    assert_int_equal(loom_mon__parse_pidstat(P(txt), "stat", &ps, &e), 0);
    assert_string_equal(ps.comm, "my (odd) proc");
    assert_int_equal(ps.state, 'S');
    assert_int_equal(ps.ppid, 1);
    assert_int_equal(ps.utime_ticks, 250);
    assert_int_equal(ps.stime_ticks, 75);
    assert_int_equal(ps.num_threads, 7);
    assert_int_equal(ps.vsize_bytes, 104857600);
    assert_int_equal(ps.rss_pages, 2560);
    assert_int_equal(loom_mon__parse_pidstat(P(reaped), "stat", &ps, &e), 0);
    assert_string_equal(ps.comm, "a) b) c"); /* the last ')' ends it */
    assert_int_equal(ps.cutime_ticks, 500);  /* CPU of children waited for */
    assert_int_equal(ps.cstime_ticks, 60);

    pid_t *pids = NULL;
    size_t n = 0, cap = 0;
    assert_int_equal(loom_mon__parse_pid_list(P("812 813 \n"), "children", &pids, &n, &cap, &e), 0);
    assert_int_equal(n, 2);
    assert_int_equal(pids[1], 813);
    assert_int_equal(loom_mon__parse_pid_list(P(""), "children", &pids, &n, &cap, &e), 0);
    assert_int_equal(n, 2); /* appended, nothing to append */
    assert_int_equal(loom_mon__parse_pid_list(P("812 x13"), "children", &pids, &n, &cap, &e),
                     LOOM_EINVAL);
    assert_non_null(strstr(e.msg, "children: line 1: expected process ids"));
    assert_int_equal(loom_mon__parse_pid_list(P("0"), "children", &pids, &n, &cap, &e),
                     LOOM_EINVAL);
    free(pids);
    assert_int_equal(loom_mon__parse_pidstat(P("1234 (x) S 1 2\n"), "stat", &ps, &e), LOOM_EINVAL);
    assert_int_equal(loom_mon__parse_pidstat(P("1234 x S\n"), "stat", &ps, &e), LOOM_EINVAL);

    static const char *const keys[] = {"usage_usec", "nr_throttled"};
    uint64_t v[2] = {0}, found;
    assert_int_equal(loom_mon__parse_keyed(P("usage_usec 99\nuser_usec 5\nnr_throttled 2\n"),
                                           "cpu.stat", keys, 2, v, &found, &e),
                     0);
    assert_int_equal(found, 3);
    assert_int_equal(v[0], 99);
    assert_int_equal(v[1], 2);
    assert_int_equal(loom_mon__parse_keyed(P("usage_usec x\n"), "cpu.stat", keys, 2, v, &found, &e),
                     LOOM_EINVAL);
    assert_string_equal(e.msg, "cpu.stat: line 1: expected a number after usage_usec");

    loom_mon_cgroup_t cg;
    memset(&cg, 0, sizeof cg);
    assert_int_equal(loom_mon__parse_iostat(P("8:0 rbytes=100 wbytes=200 rios=1 wios=2 dbytes=0 "
                                              "dios=0\n254:0 rbytes=1 wbytes=2 rios=3 wios=4 "
                                              "dbytes=5 dios=6 cost.usage=77\n"),
                                            "io.stat", &cg, &e),
                     0);
    assert_int_equal(cg.io_read_bytes, 101);
    assert_int_equal(cg.io_write_bytes, 202);
    assert_int_equal(cg.io_writes, 6);
    assert_int_equal(cg.io_discards, 6);
    assert_int_equal(loom_mon__parse_iostat(P("rbytes=1\n"), "io.stat", &cg, &e), LOOM_EINVAL);

    int64_t x;
    assert_int_equal(loom_mon__parse_int_file(P("42000\n"), "f", false, &x, &e), 0);
    assert_int_equal(x, 42000);
    assert_int_equal(loom_mon__parse_int_file(P("-5"), "f", false, &x, &e), 0);
    assert_int_equal(x, -5);
    assert_int_equal(loom_mon__parse_int_file(P("max\n"), "f", true, &x, &e), 0);
    assert_int_equal(x, INT64_MAX);
    assert_int_equal(loom_mon__parse_int_file(P("max\n"), "f", false, &x, &e), LOOM_EINVAL);
    assert_int_equal(loom_mon__parse_int_file(P("12 13\n"), "f", false, &x, &e), LOOM_EINVAL);
    assert_int_equal(loom_mon__parse_int_file(P(""), "f", false, &x, &e), LOOM_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stat),
        cmocka_unit_test(test_loadavg_psi),
        cmocka_unit_test(test_meminfo),
        cmocka_unit_test(test_diskstats),
        cmocka_unit_test(test_netdev),
        cmocka_unit_test(test_mounts),
        cmocka_unit_test(test_pidstat_keyed_iostat),
        cmocka_unit_test(test_u64_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
