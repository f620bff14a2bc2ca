/* The mon collector against this machine's /proc and /sys, and against
 * fixture trees (RAPL zones, hwmon sensors, thermal zones, cpufreq) that
 * this VM lacks: values, units, unavailable-with-reason, rates, the
 * sampler, processes, cgroups and both renderings. */
#include <stdio.h>

#include "test_util.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loom/mon.h"

static void must_open(loom_mon_t **m, const loom_mon_opts_t *o)
{
    loom_err_t e;
    int rc = loom_mon_open(m, o, &e);
    if (rc)
        fail_msg("loom_mon_open: %s", e.msg);
}

static void check_src(const loom_mon_source_t *s)
{
    /* Either usable, or unavailable with a reason: never silent. */
    if (s->status != LOOM_OK)
        assert_true(strlen(s->reason) > 10);
    else
        assert_string_equal(s->reason, "");
}

static void test_real_host(void **st)
{
    (void)st;
    loom_mon_t *m;
    must_open(&m, NULL);
    loom_mon_snapshot_t s;
    loom_mon_snapshot_init(&s);
    loom_err_t e;
    assert_int_equal(loom_mon_read(m, LOOM_MON_HOST, &s, &e), LOOM_OK);
    assert_int_equal(s.cpu.source.status, LOOM_OK);
    assert_int_equal((long)s.cpu.n_cores, sysconf(_SC_NPROCESSORS_ONLN));
    double sum = 0;
    for (size_t i = 0; i < s.cpu.n_cores; i++)
        sum += s.cpu.cores[i].seconds[LOOM_MON_CPU_USER];
    /* The total line is the sum of the per-cpu lines (ticks, rounded). */
    assert_true(fabs(sum - s.cpu.seconds[LOOM_MON_CPU_USER]) <= 0.01 * s.cpu.n_cores + 1e-9);
    struct sysinfo si;
    sysinfo(&si);
    assert_int_equal(s.memory.source.status, LOOM_OK);
    assert_int_equal(s.memory.total_bytes, (uint64_t)si.totalram * si.mem_unit);
    assert_true(s.memory.available_bytes <= s.memory.total_bytes);
    assert_int_equal(s.net.source.status, LOOM_OK);
    bool lo = false;
    for (size_t i = 0; i < s.net.n; i++)
        lo |= strcmp(s.net.ifs[i].name, "lo") == 0;
    assert_true(lo);
    bool root = false;
    for (size_t i = 0; i < s.fs.n; i++)
        if (strcmp(s.fs.fs[i].mountpoint, "/") == 0) {
            root = true;
            assert_int_equal(s.fs.fs[i].source.status, LOOM_OK);
            assert_true(s.fs.fs[i].size_bytes >= s.fs.fs[i].free_bytes);
            assert_true(s.fs.fs[i].size_bytes > 0);
        }
    if (loom_test_in_chroot())
        printf("in a chroot: the mount table names the host's mount points, so / need not be "
               "one of them (its check skipped)\n");
    else
        assert_true(root);
    check_src(&s.cpu.freq_source);
    check_src(&s.cpu.load_source);
    check_src(&s.cpu.pressure.source);
    check_src(&s.disk.source);
    check_src(&s.power.source);
    check_src(&s.thermal.hwmon_source);
    check_src(&s.thermal.zone_source);
    /* Reading again into the same snapshot reuses its arrays. */
    assert_int_equal(loom_mon_read(m, LOOM_MON_CPU | LOOM_MON_NET, &s, &e), LOOM_OK);
    assert_int_equal(s.groups, LOOM_MON_CPU | LOOM_MON_NET);
    assert_int_equal(loom_mon_read(m, 0, &s, &e), LOOM_EINVAL);
    assert_int_equal(loom_mon_read(m, 0x100, &s, &e), LOOM_EINVAL);
    loom_mon_snapshot_free(&s);
    loom_mon_close(m);
}

/* ------------------------------------------------------ fixture trees */

static char root[256];

static void put_file(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w"); /* truncates the same inode: open fds see it */
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup_fixture(void **st)
{
    (void)st;
    snprintf(root, sizeof root, "/tmp/loom-mon-fixture-%d", (int)getpid());
    mkdir(root, 0755);
    put_file("proc/stat", "cpu  100 0 50 1000 0 0 0 0 0 0\ncpu0 100 0 50 1000 0 0 0 0 0 0\n");
    put_file("proc/meminfo", "MemTotal: 1000 kB\nMemFree: 500 kB\nMemAvailable: 700 kB\n");
    put_file("proc/filesystems", "nodev\tproc\n");
    put_file("proc/self/mounts", "proc /proc proc rw 0 0\n");
    put_file("sys/class/powercap/intel-rapl:0/name", "package-0\n");
    put_file("sys/class/powercap/intel-rapl:0/energy_uj", "1000000\n");
    put_file("sys/class/powercap/intel-rapl:0/max_energy_range_uj", "262143328850\n");
    put_file("sys/class/powercap/intel-rapl:0:0/name", "core\n");
    put_file("sys/class/powercap/intel-rapl:0:0/energy_uj", "262143000000\n");
    put_file("sys/class/powercap/intel-rapl:0:0/max_energy_range_uj", "262143328850\n");
    put_file("sys/class/hwmon/hwmon0/name", "coretemp\n");
    put_file("sys/class/hwmon/hwmon0/temp1_input", "45000\n");
    put_file("sys/class/hwmon/hwmon0/temp1_label", "Package id 0\n");
    put_file("sys/class/hwmon/hwmon0/temp2_input", "garbage\n");
    put_file("sys/class/thermal/thermal_zone0/type", "x86_pkg_temp\n");
    put_file("sys/class/thermal/thermal_zone0/temp", "-2500\n");
    put_file("sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "2400000\n");
    return 0;
}

static int teardown_fixture(void **st)
{
    (void)st;
    return loom_test_rmtree(root);
}

static void test_fixture(void **st)
{
    (void)st;
    char proc[300], sys[300];
    snprintf(proc, sizeof proc, "%s/proc", root);
    snprintf(sys, sizeof sys, "%s/sys", root);
    loom_mon_opts_t o = {.proc_root = proc, .sys_root = sys, .nvml_lib = "/nonexistent/nvml.so"};
    loom_mon_t *m;
    must_open(&m, &o);
    loom_mon_snapshot_t a, b;
    loom_mon_snapshot_init(&a);
    loom_mon_snapshot_init(&b);
    loom_err_t e;
    assert_int_equal(loom_mon_read(m, LOOM_MON_ALL, &a, &e), LOOM_OK);

    assert_int_equal(a.cpu.source.status, LOOM_OK);
    assert_true(a.cpu.seconds[LOOM_MON_CPU_USER] > 0);
    assert_int_equal(a.cpu.freq_source.status, LOOM_OK);
    assert_true(a.cpu.cores[0].freq_hz == 2.4e9);
    /* Files absent from the fixture: unavailable, with the reason. */
    assert_int_equal(a.cpu.load_source.status, LOOM_EUNAVAIL);
    assert_non_null(strstr(a.cpu.load_source.reason, "loadavg absent"));
    assert_int_equal(a.cpu.pressure.source.status, LOOM_EUNAVAIL);
    assert_non_null(strstr(a.cpu.pressure.source.reason, "CONFIG_PSI"));
    assert_int_equal(a.disk.source.status, LOOM_EUNAVAIL);
    assert_int_equal(a.net.source.status, LOOM_EUNAVAIL);
    assert_int_equal(a.memory.total_bytes, 1000 * 1024);
    assert_int_equal(a.fs.n, 0);
    assert_int_equal(a.gpu.source.status, LOOM_EUNAVAIL);
    assert_non_null(strstr(a.gpu.source.reason, "cannot load /nonexistent/nvml.so"));

    assert_int_equal(a.power.source.status, LOOM_OK);
    assert_int_equal(a.power.n, 2);
    assert_string_equal(a.power.zones[0].id, "intel-rapl:0");
    assert_string_equal(a.power.zones[0].name, "package-0");
    assert_true(a.power.zones[0].energy_joules == 1.0);
    assert_true(a.power.zones[1].max_energy_joules == 262143.32885);

    assert_int_equal(a.thermal.hwmon_source.status, LOOM_OK);
    assert_int_equal(a.thermal.zone_source.status, LOOM_OK);
    assert_int_equal(a.thermal.n, 3);
    assert_string_equal(a.thermal.temps[0].chip, "coretemp");
    assert_string_equal(a.thermal.temps[0].sensor, "Package id 0");
    assert_true(a.thermal.temps[0].celsius == 45.0);
    assert_int_equal(a.thermal.temps[1].source.status, LOOM_EINVAL); /* "garbage" */
    assert_true(isnan(a.thermal.temps[1].celsius));
    assert_string_equal(a.thermal.temps[2].kind, "thermal_zone");
    assert_true(a.thermal.temps[2].celsius == -2.5);

    /* Energy moves on; the core zone wraps past max_energy_range. */
    put_file("sys/class/powercap/intel-rapl:0/energy_uj", "3000000\n");
    put_file("sys/class/powercap/intel-rapl:0:0/energy_uj", "671150\n");
    put_file("proc/stat", "cpu  200 0 50 1100 0 0 0 0 0 0\ncpu0 200 0 50 1100 0 0 0 0 0 0\n");
    usleep(2000);
    assert_int_equal(loom_mon_read(m, LOOM_MON_ALL, &b, &e), LOOM_OK);
    loom_mon_rates_t r;
    loom_mon_rates_init(&r);
    assert_int_equal(loom_mon_rates(&a, &b, &r, &e), LOOM_OK);
    assert_int_equal(r.n_power, 2);
    double dt = r.interval_seconds;
    assert_true(fabs(r.power[0].watts - 2.0 / dt) < 1e-6 * (2.0 / dt));
    double wrapped = (262143.32885 - 262143.0) + 0.67115;
    assert_true(fabs(r.power[1].watts - wrapped / dt) < 1e-6 * (wrapped / dt));
    /* 100 user ticks of 200 ticks in the interval: half busy. */
    assert_true(fabs(r.cpu_busy_fraction - 0.5) < 1e-12);
    assert_true(fabs(r.core_busy_fraction[0] - 0.5) < 1e-12);
    assert_true(fabs(r.cpu_mode_fraction[LOOM_MON_CPU_USER] - 0.5) < 1e-12);

    /* iowait stepping back (NO_HZ estimate corrected) is not a reset. */
    {
        loom_mon_snapshot_t x, y;
        loom_mon_snapshot_init(&x);
        loom_mon_snapshot_init(&y);
        put_file("proc/stat", "cpu  200 0 50 1100 9 0 0 0 0 0\ncpu0 200 0 50 1100 9 0 0 0 0 0\n");
        assert_int_equal(loom_mon_read(m, LOOM_MON_CPU, &x, &e), LOOM_OK);
        put_file("proc/stat", "cpu  300 0 50 1200 8 0 0 0 0 0\ncpu0 300 0 50 1200 8 0 0 0 0 0\n");
        usleep(1000);
        assert_int_equal(loom_mon_read(m, LOOM_MON_CPU, &y, &e), LOOM_OK);
        assert_int_equal(loom_mon_rates(&x, &y, &r, &e), LOOM_OK);
        assert_true(fabs(r.cpu_busy_fraction - 0.5) < 1e-12);
        loom_mon_snapshot_free(&x);
        loom_mon_snapshot_free(&y);
    }

    /* A counter that goes backwards gives NAN, not a huge or negative rate. */
    put_file("proc/stat", "cpu  10 0 50 1100 0 0 0 0 0 0\ncpu0 10 0 50 1100 0 0 0 0 0 0\n");
    loom_mon_snapshot_t c;
    loom_mon_snapshot_init(&c);
    usleep(1000);
    assert_int_equal(loom_mon_read(m, LOOM_MON_CPU, &c, &e), LOOM_OK);
    assert_int_equal(loom_mon_rates(&b, &c, &r, &e), LOOM_OK);
    assert_true(isnan(r.cpu_busy_fraction));
    assert_int_equal(r.groups, LOOM_MON_CPU);

    /* A /proc/stat larger than the first read buffer (a 400-CPU host):
     * read whole, in one generation. */
    {
        loom_buf_t big = LOOM_BUF_INIT;
        loom_buf_append_str(&big, "cpu  400 0 0 400 0 0 0 0 0 0\n");
        for (int i = 0; i < 400; i++)
            loom_buf_appendf(&big, "cpu%d 1 0 0 1 0 0 0 0 0 0\n", i);
        assert_true(big.len > 8192);
        put_file("proc/stat", big.data);
        loom_buf_free(&big);
        assert_int_equal(loom_mon_read(m, LOOM_MON_CPU, &c, &e), LOOM_OK);
        assert_int_equal(c.cpu.source.status, LOOM_OK);
        assert_int_equal(c.cpu.n_cores, 400);
        assert_int_equal(c.cpu.cores[399].id, 399);
        assert_true(isnan(c.cpu.cores[399].freq_hz)); /* no cpufreq file for it */
    }

    /* Malformed /proc/stat: the cpu source reports the parse error. */
    put_file("proc/stat", "cpu  1 2\n");
    assert_int_equal(loom_mon_read(m, LOOM_MON_CPU, &c, &e), LOOM_OK);
    assert_int_equal(c.cpu.source.status, LOOM_EINVAL);
    assert_non_null(strstr(c.cpu.source.reason, "expected at least 4 tick counts"));

    /* Rates of another pair of readings are refused by the renderers. */
    loom_buf_t j = LOOM_BUF_INIT;
    assert_int_equal(loom_mon_to_json(&b, &r, &j, &e), LOOM_EINVAL);
    assert_non_null(strstr(e.msg, "another snapshot"));
    assert_int_equal(loom_mon_to_text(&b, &r, &j, &e), LOOM_EINVAL);
    /* JSON names the reason of each unavailable source. */
    assert_int_equal(loom_mon_rates(&a, &b, &r, &e), LOOM_OK);
    loom_buf_reset(&j);
    assert_int_equal(loom_mon_to_json(&b, &r, &j, &e), LOOM_OK);
    json_t *doc = NULL;
    assert_int_equal(loom_json_parse(j.data, j.len, "json", 0, &doc, &e), LOOM_OK);
    json_t *load = json_object_get(json_object_get(doc, "cpu"), "load");
    assert_false(json_is_true(json_object_get(load, "available")));
    assert_non_null(strstr(json_string_value(json_object_get(load, "reason")), "loadavg"));
    json_t *z0 = json_array_get(json_object_get(json_object_get(doc, "power"), "zones"), 0);
    assert_true(json_real_value(json_object_get(z0, "energy_joules")) == 3.0);
    assert_true(json_is_real(json_object_get(z0, "watts")));
    json_decref(doc);
    loom_buf_free(&j);

    loom_mon_rates_free(&r);
    loom_mon_snapshot_free(&a);
    loom_mon_snapshot_free(&b);
    loom_mon_snapshot_free(&c);
    loom_mon_close(m);
}

static void test_rates_order(void **st)
{
    (void)st;
    loom_mon_t *m;
    must_open(&m, NULL);
    loom_mon_snapshot_t a, b, copy;
    loom_mon_snapshot_init(&a);
    loom_mon_snapshot_init(&b);
    loom_mon_snapshot_init(&copy);
    loom_err_t e;
    assert_int_equal(loom_mon_read(m, LOOM_MON_HOST, &a, &e), LOOM_OK);
    int64_t until = loom_time_mono_ns() + 30 * LOOM_NS_PER_MS;
    volatile uint64_t spin = 0;
    while (loom_time_mono_ns() < until)
        spin++;
    assert_int_equal(loom_mon_read(m, LOOM_MON_HOST, &b, &e), LOOM_OK);
    loom_mon_rates_t r;
    loom_mon_rates_init(&r);
    /* Swapped, or one reading twice: refused with a message saying so. */
    assert_int_equal(loom_mon_rates(&b, &a, &r, &e), LOOM_EINVAL);
    assert_non_null(strstr(e.msg, "not newer than prev"));
    assert_int_equal(loom_mon_rates(&a, &a, &r, &e), LOOM_EINVAL);
    assert_int_equal(loom_mon_rates(&a, &b, &r, &e), LOOM_OK);
    assert_true(r.interval_seconds >= 0.03);
    /* We spun for the whole interval: at least one core's worth is busy. */
    assert_true(r.cpu_busy_fraction >= 0 && r.cpu_busy_fraction <= 1);
    assert_true(r.cpu_busy_fraction >= 0.5 / (double)b.cpu.n_cores - 0.2);
    for (size_t i = 0; i < r.n_nets; i++)
        assert_true(r.nets[i].rx_bytes_per_second >= 0);
    /* A deep copy gives the same rates. */
    assert_int_equal(loom_mon_snapshot_copy(&copy, &b, &e), LOOM_OK);
    loom_mon_rates_t r2;
    loom_mon_rates_init(&r2);
    assert_int_equal(loom_mon_rates(&a, &copy, &r2, &e), LOOM_OK);
    assert_true(r2.cpu_busy_fraction == r.cpu_busy_fraction);
    assert_int_equal(r2.n_disks, r.n_disks);
    loom_mon_rates_free(&r);
    loom_mon_rates_free(&r2);
    loom_mon_snapshot_free(&a);
    loom_mon_snapshot_free(&b);
    loom_mon_snapshot_free(&copy);
    loom_mon_close(m);
}

static void test_sampler(void **st)
{
    (void)st;
    loom_mon_t *m;
    must_open(&m, NULL);
    loom_mon_sampler_t *s;
    loom_err_t e;
    assert_int_equal(loom_mon_sampler_open(&s, m, LOOM_MON_CPU | LOOM_MON_NET, &e), LOOM_OK);
    /* Before next(): no rates, and they say so (NAN, no groups). */
    assert_int_equal(loom_mon_sampler_rates(s)->groups, 0);
    assert_true(isnan(loom_mon_sampler_rates(s)->cpu_busy_fraction));
    int64_t t0 = loom_mon_sampler_snapshot(s)->mono_ns;
    uint64_t ctxt0 = loom_mon_sampler_snapshot(s)->cpu.context_switches;
    usleep(20000); /* at least one context switch, ours */
    assert_int_equal(loom_mon_sampler_next(s, &e), LOOM_OK);
    /* The same open /proc/stat, read again at offset 0, is formatted anew. */
    assert_true(loom_mon_sampler_snapshot(s)->cpu.context_switches > ctxt0);
    const loom_mon_rates_t *r = loom_mon_sampler_rates(s);
    assert_int_equal(r->groups, LOOM_MON_CPU | LOOM_MON_NET);
    assert_true(r->interval_seconds >= 0.02);
    assert_true(loom_mon_sampler_snapshot(s)->mono_ns > t0);
    assert_int_equal(r->n_cores, loom_mon_sampler_snapshot(s)->cpu.n_cores);
    for (int i = 0; i < 5; i++)
        assert_int_equal(loom_mon_sampler_next(s, &e), LOOM_OK); /* back to back: never EINVAL */
    loom_mon_sampler_close(s);
    loom_mon_close(m);
}

/* Each file the collector keeps open is formatted anew by the kernel when
 * it is read again at offset 0 (seq_file): a change made between two
 * readings through the same collector must show. /proc/stat is covered by
 * test_sampler; here /proc/net/dev (a datagram over lo) and /proc/meminfo
 * (32 MiB touched). */
static void test_kept_open_files_regenerate(void **st)
{
    (void)st;
    loom_mon_t *m;
    must_open(&m, NULL);
    loom_mon_snapshot_t a, b;
    loom_mon_snapshot_init(&a);
    loom_mon_snapshot_init(&b);
    loom_err_t e;
    assert_int_equal(loom_mon_read(m, LOOM_MON_NET | LOOM_MON_MEMORY, &a, &e), LOOM_OK);
    const loom_mon_netif_t *lo0 = NULL;
    for (size_t i = 0; i < a.net.n; i++)
        if (strcmp(a.net.ifs[i].name, "lo") == 0)
            lo0 = &a.net.ifs[i];
    assert_non_null(lo0);
    /* A datagram to ourselves over lo. */
    int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(sock >= 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(sock, (struct sockaddr *)&addr, sizeof addr), 0);
    socklen_t al = sizeof addr;
    assert_int_equal(getsockname(sock, (struct sockaddr *)&addr, &al), 0);
    assert_int_equal(sendto(sock, "x", 1, 0, (struct sockaddr *)&addr, sizeof addr), 1);
    char c;
    assert_int_equal(recv(sock, &c, 1, 0), 1);
    close(sock);
    /* 64 MiB of fresh pages taken from the kernel: MemFree moves. (mmap, not
     * malloc: an allocator may hand back pages that were touched before.)
     * This kernel may serve them from per-CPU page lists and show the change
     * in MemFree only when those are refilled or its counters are folded (a
     * fresh open of /proc/meminfo agrees: 149 of 200 tries right after the
     * touch saw the same MemFree), so read again for up to 5 s: a file that
     * is not regenerated never moves. */
    size_t big = 64u << 20;
    char *mem =
        mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    assert_true(mem != MAP_FAILED);
    memset(mem, 1, big);
    for (int tries = 0;; tries++) {
        assert_int_equal(loom_mon_read(m, LOOM_MON_NET | LOOM_MON_MEMORY, &b, &e), LOOM_OK);
        if (b.memory.free_bytes != a.memory.free_bytes || tries == 100)
            break;
        loom_mon_snapshot_free(&b);
        loom_mon_snapshot_init(&b);
        usleep(50000);
    }
    munmap(mem, big);
    const loom_mon_netif_t *lo1 = NULL;
    for (size_t i = 0; i < b.net.n; i++)
        if (strcmp(b.net.ifs[i].name, "lo") == 0)
            lo1 = &b.net.ifs[i];
    assert_non_null(lo1);
    assert_true(lo1->rx_packets > lo0->rx_packets);
    assert_true(lo1->tx_bytes > lo0->tx_bytes);
    assert_true(b.memory.free_bytes != a.memory.free_bytes);
    loom_mon_snapshot_free(&a);
    loom_mon_snapshot_free(&b);
    loom_mon_close(m);
}

/* The mount table is polled at most every 10 ms; a mount that goes away
 * or is replaced in between must still be noticed at the next reading (its
 * statfs no longer matches). A fixture /proc lists one mount of a made-up
 * device-backed type at DIR/mnt; in a private mount namespace (a child
 * process) a tmpfs is mounted there, read, then replaced by a ramfs and the
 * fixture table rewritten: the next reading must show the new table and
 * the ramfs figures, not the tmpfs ones under the old name. Skipped where
 * mount namespaces are not allowed. */
static int mount_child(const char *dir)
{
    char proc[400], mnt[400], tab[1200];
    snprintf(proc, sizeof proc, "%s/proc", dir);
    snprintf(mnt, sizeof mnt, "%s/mnt", dir);
    if (unshare(CLONE_NEWNS) != 0) {
        uid_t uid = getuid();
        gid_t gid = getgid();
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
            return 77;
        char map[64];
        FILE *f = fopen("/proc/self/setgroups", "w");
        if (f)
            fputs("deny", f), fclose(f);
        snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
        f = fopen("/proc/self/uid_map", "w");
        if (!f || fputs(map, f) < 0 || fclose(f) != 0)
            return 77;
        snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
        f = fopen("/proc/self/gid_map", "w");
        if (!f || fputs(map, f) < 0 || fclose(f) != 0)
            return 77;
    }
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("loomtest", mnt, "tmpfs", 0, "size=2m") != 0)
        return 77;
    loom_mon_opts_t o = {.proc_root = proc, .sys_root = proc, .nvml_lib = "/nonexistent"};
    loom_mon_t *m;
    loom_err_t e;
    if (loom_mon_open(&m, &o, &e) != LOOM_OK) {
        fprintf(stderr, "open: %s\n", e.msg);
        return 1;
    }
    loom_mon_snapshot_t s;
    loom_mon_snapshot_init(&s);
    int rc = 0;
    if (loom_mon_read(m, LOOM_MON_FS, &s, &e) != LOOM_OK || s.fs.n != 1 ||
        strcmp(s.fs.fs[0].device, "dev-a") != 0 || s.fs.fs[0].size_bytes != (2u << 20)) {
        fprintf(stderr, "first reading: n=%zu size=%llu\n", s.fs.n,
                s.fs.n ? (unsigned long long)s.fs.fs[0].size_bytes : 0ull);
        rc = 2;
    }
    if (rc == 0 && (umount(mnt) != 0 || mount("loomtest", mnt, "ramfs", 0, NULL) != 0))
        rc = 77;
    if (rc == 0) {
        snprintf(tab, sizeof tab, "dev-b %s loomtestfs rw 0 0\n", mnt);
        char path[500];
        snprintf(path, sizeof path, "%s/self/mounts", proc);
        FILE *f = fopen(path, "w"); /* same inode: the collector's descriptor sees it */
        if (!f || fputs(tab, f) < 0 || fclose(f) != 0)
            rc = 3;
    }
    if (rc == 0 && (loom_mon_read(m, LOOM_MON_FS, &s, &e) != LOOM_OK || s.fs.n != 1 ||
                    strcmp(s.fs.fs[0].device, "dev-b") != 0 ||
                    s.fs.fs[0].source.status != LOOM_OK || s.fs.fs[0].size_bytes != 0)) {
        fprintf(stderr, "after the replacement: n=%zu device=%s size=%llu\n", s.fs.n,
                s.fs.n ? s.fs.fs[0].device : "",
                s.fs.n ? (unsigned long long)s.fs.fs[0].size_bytes : 0ull);
        rc = 4;
    }
    loom_mon_snapshot_free(&s);
    loom_mon_close(m);
    return rc;
}

static void test_fs_mount_replaced(void **st)
{
    (void)st;
    char dir[256], path[400];
    snprintf(dir, sizeof dir, "/tmp/loom-mon-mnt-%d", (int)getpid());
    snprintf(path, sizeof path, "%s/proc/self", dir);
    const char *subs[] = {"", "/proc", "/proc/self", "/mnt"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        snprintf(path, sizeof path, "%s%s", dir, subs[i]);
        assert_true(mkdir(path, 0700) == 0 || errno == EEXIST); /* as mkdir -p */
    }
    snprintf(path, sizeof path, "%s/proc/filesystems", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("nodev\ttmpfs\n\tloomtestfs\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/proc/self/mounts", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "dev-a %s/mnt loomtestfs rw 0 0\n", dir);
    fclose(f);
    snprintf(path, sizeof path, "%s/proc/stat", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("cpu  1 0 1 1 0 0 0 0 0 0\ncpu0 1 0 1 1 0 0 0 0 0 0\n", f);
    fclose(f);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(mount_child(dir));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(loom_test_rmtree(dir), 0);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77)
        skip();
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_groups(void **st)
{
    (void)st;
    unsigned g;
    loom_err_t e;
    assert_int_equal(loom_mon_parse_groups("cpu,gpu", &g, &e), LOOM_OK);
    assert_int_equal(g, LOOM_MON_CPU | LOOM_MON_GPU);
    assert_int_equal(loom_mon_parse_groups("host", &g, &e), LOOM_OK);
    assert_int_equal(g, LOOM_MON_HOST);
    assert_int_equal(loom_mon_parse_groups("all", &g, &e), LOOM_OK);
    assert_int_equal(g, LOOM_MON_ALL);
    assert_int_equal(loom_mon_parse_groups("cpu,bogus", &g, &e), LOOM_EINVAL);
    assert_non_null(strstr(e.msg, "unknown group \"bogus\""));
    assert_int_equal(loom_mon_parse_groups("", &g, &e), LOOM_EINVAL);
    assert_string_equal(loom_mon_group_name(LOOM_MON_THERMAL), "thermal");
    assert_null(loom_mon_group_name(3));
}

static void test_proc(void **st)
{
    (void)st;
    loom_mon_t *m;
    must_open(&m, NULL);
    loom_mon_proc_t p;
    loom_err_t e;
    int64_t until = loom_time_mono_ns() + 20 * LOOM_NS_PER_MS;
    volatile uint64_t spin = 0;
    while (loom_time_mono_ns() < until)
        spin++;
    assert_int_equal(loom_mon_proc_read(m, getpid(), false, &p, &e), LOOM_OK);
    assert_int_equal(p.n_processes, 1);
    assert_true(p.user_seconds + p.system_seconds > 0);
    assert_true(p.rss_bytes > 1024 * 1024);
    assert_true(p.threads >= 1);
    assert_int_equal(p.io_source.status, LOOM_OK);
    assert_true(p.rchar_bytes > 0);

    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t child = fork();
    if (child == 0) {
        close(fds[1]);
        char c;
        ssize_t n = read(fds[0], &c, 1); /* wait until told */
        _exit(n < 0);
    }
    close(fds[0]);
    assert_int_equal(loom_mon_proc_read(m, getpid(), true, &p, &e), LOOM_OK);
    assert_true(p.n_processes >= 2);
    assert_true(p.tree);
    close(fds[1]);
    waitpid(child, NULL, 0);

    assert_int_equal(loom_mon_proc_read(m, 0x7ffffff0, false, &p, &e), LOOM_ENOTFOUND);
    assert_non_null(strstr(e.msg, "no such process"));
    assert_int_equal(loom_mon_proc_read(m, -1, false, &p, &e), LOOM_EINVAL);
    loom_buf_t b = LOOM_BUF_INIT;
    assert_int_equal(loom_mon_proc_read(m, getpid(), false, &p, &e), LOOM_OK);
    assert_int_equal(loom_mon_proc_to_json(&p, &b, &e), LOOM_OK);
    assert_non_null(strstr(b.data, "\"rss_bytes\":"));
    loom_buf_free(&b);
    loom_mon_close(m);
}

static void test_cgroup(void **st)
{
    (void)st;
    loom_mon_t *m;
    must_open(&m, NULL);
    loom_mon_cgroup_t c;
    loom_err_t e;
    assert_int_equal(loom_mon_cgroup_read(m, "/nonexistent/cgroup", &c, &e), LOOM_ENOTFOUND);
    assert_int_equal(loom_mon_cgroup_read(m, "/tmp", &c, &e), LOOM_EINVAL);
    assert_non_null(strstr(e.msg, "not a cgroup v2 directory"));
    /* The root of the cgroup2 mount (relative ""), if this machine has one. */
    int rc = loom_mon_cgroup_read(m, ".", &c, &e);
    if (rc == LOOM_ENOTFOUND) {
        skip();
    }
    assert_int_equal(rc, LOOM_OK);
    check_src(&c.cpu_source);
    check_src(&c.memory_source);
    check_src(&c.memory_peak_source);
    check_src(&c.io_source);
    check_src(&c.cpu_pressure.source);
    if (c.cpu_source.status == LOOM_OK)
        assert_true(c.cpu_usage_seconds > 0);
    /* Kernel accounting: usage = user + system (to the microsecond). */
    if (c.cpu_source.status == LOOM_OK)
        assert_true(fabs(c.cpu_usage_seconds - c.cpu_user_seconds - c.cpu_system_seconds) < 1e-5);
    loom_buf_t b = LOOM_BUF_INIT;
    assert_int_equal(loom_mon_cgroup_to_json(&c, &b, &e), LOOM_OK);
    json_t *doc;
    assert_int_equal(loom_json_parse(b.data, b.len, "cg", 0, &doc, &e), LOOM_OK);
    json_t *cur = json_object_get(json_object_get(doc, "memory"), "current");
    if (c.memory_source.status != LOOM_OK)
        assert_non_null(json_string_value(json_object_get(cur, "reason")));
    json_decref(doc);
    loom_buf_free(&b);
    loom_mon_close(m);
}

static void lint_prom(const char *text);

/* A cgroup directory as the kernel lays it out for a job with the cpu, io
 * and memory controllers (this VM's cgroup2 has none of them enabled). */
static void test_cgroup_fixture(void **st)
{
    (void)st;
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/loom-mon-cg-%d", (int)getpid());
    mkdir(dir, 0755);
    snprintf(root, sizeof root, "%s", dir);
    put_file("cgroup.controllers", "cpu io memory pids\n");
    put_file("cpu.stat", "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n"
                         "core_sched.force_idle_usec 0\nnr_periods 10\nnr_throttled 3\n"
                         "throttled_usec 150000\nnr_bursts 0\nburst_usec 0\n");
    put_file("memory.current", "1048576\n");
    put_file("memory.peak", "4194304\n");
    put_file("memory.max", "8589934592\n");
    put_file("memory.stat", "anon 700000\nfile 300000\nkernel 48576\nkernel_stack 16384\n"
                            "pagetables 4096\nshmem 4096\nfile_mapped 0\n");
    put_file("memory.events", "low 0\nhigh 0\nmax 7\noom 2\noom_kill 1\noom_group_kill 0\n");
    put_file("io.stat", "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n"
                        "259:0 rbytes=100 wbytes=0 rios=1 wios=0 dbytes=512 dios=1\n");
    put_file("memory.pressure", "some avg10=1.50 avg60=0.50 avg300=0.10 total=123456\n"
                                "full avg10=0.00 avg60=0.00 avg300=0.00 total=789\n");
    put_file("io.pressure", "some avg10=x\n"); /* malformed: reported, not fatal */
    loom_mon_t *m;
    must_open(&m, NULL);
    loom_mon_cgroup_t c;
    loom_err_t e;
    assert_int_equal(loom_mon_cgroup_read(m, dir, &c, &e), LOOM_OK);
    assert_int_equal(c.cpu_source.status, LOOM_OK);
    assert_true(c.cpu_usage_seconds == 2.5);
    assert_true(c.cpu_system_seconds == 0.5);
    assert_int_equal(c.nr_throttled, 3);
    assert_true(c.throttled_seconds == 0.15);
    assert_int_equal(c.memory_current_bytes, 1048576);
    assert_int_equal(c.memory_peak_bytes, 4194304);
    assert_true(c.memory_limited);
    assert_int_equal(c.memory_max_bytes, 8589934592ull);
    assert_int_equal(c.memory_anon_bytes, 700000);
    assert_int_equal(c.memory_kernel_bytes, 48576); /* not kernel_stack */
    assert_int_equal(c.memory_oom_kills, 1);
    assert_int_equal(c.memory_oom_events, 2);
    assert_int_equal(c.memory_max_events, 7);
    assert_int_equal(c.pids_source.status, LOOM_EUNAVAIL);
    assert_non_null(strstr(c.pids_source.reason, "pids.current absent"));
    assert_int_equal(c.io_read_bytes, 4196);
    assert_int_equal(c.io_write_bytes, 8192);
    assert_int_equal(c.io_discard_bytes, 512);
    assert_int_equal(c.memory_pressure.source.status, LOOM_OK);
    assert_true(c.memory_pressure.full.total_seconds == 789e-6);
    assert_int_equal(c.cpu_pressure.source.status, LOOM_EUNAVAIL); /* no cpu.pressure file */
    assert_non_null(strstr(c.cpu_pressure.source.reason, "cpu.pressure absent"));
    assert_int_equal(c.io_pressure.source.status, LOOM_EINVAL);
    /* Per-job Prometheus families: one HELP/TYPE for all jobs. */
    loom_mon_cgroup_t two[2] = {c, c};
    two[1].memory_source.status = LOOM_EUNAVAIL;
    const char *jobs[2] = {"j1", "j\"2"};
    loom_buf_t b = LOOM_BUF_INIT;
    assert_int_equal(loom_mon_cgroups_to_prom(two, jobs, 2, &b, &e), LOOM_OK);
    lint_prom(b.data);
    assert_non_null(strstr(b.data, "\nloom_job_cgroup_memory_bytes{job_id=\"j1\"} 1048576\n"));
    assert_non_null(strstr(b.data, "\nloom_job_cgroup_oom_kills_total{job_id=\"j1\"} 1\n"));
    assert_non_null(
        strstr(b.data, "\nloom_job_cgroup_memory_limit_bytes{job_id=\"j1\"} 8589934592\n"));
    assert_null(strstr(b.data, "loom_job_cgroup_memory_bytes{job_id=\"j\\\"2\"}"));
    assert_non_null(
        strstr(b.data, "loom_job_cgroup_cpu_usage_seconds_total{job_id=\"j\\\"2\"} 2.5\n"));
    assert_non_null(strstr(b.data, "loom_job_cgroup_pressure_stalled_seconds_total{job_id=\"j1\","
                                   "resource=\"memory\"} 0.123456\n"));
    loom_buf_reset(&b);
    loom_mon_proc_t pr[2];
    assert_int_equal(loom_mon_proc_read(m, getpid(), false, &pr[0], &e), LOOM_OK);
    assert_int_equal(loom_mon_proc_read(m, getpid(), true, &pr[1], &e), LOOM_OK);
    assert_int_equal(loom_mon_procs_to_prom(pr, jobs, 2, &b, &e), LOOM_OK);
    lint_prom(b.data);
    assert_non_null(strstr(b.data, "\nloom_job_process_processes{job_id=\"j1\"} 1\n"));
    loom_buf_free(&b);
    put_file("memory.current", "lots\n");
    put_file("memory.max", "max\n");
    put_file("pids.current", "12\n");
    assert_int_equal(loom_mon_cgroup_read(m, dir, &c, &e), LOOM_OK);
    assert_int_equal(c.memory_source.status, LOOM_EINVAL);
    assert_non_null(strstr(c.memory_source.reason, "memory.current: line 1: expected an integer"));
    assert_int_equal(c.memory_max_source.status, LOOM_OK);
    assert_false(c.memory_limited); /* "max": no limit */
    assert_int_equal(c.pids_current, 12);
    loom_mon_close(m);
    assert_int_equal(loom_test_rmtree(dir), 0);
}

/* A small promlint of our own (promtool runs in the integration test):
 * HELP and TYPE before each family's samples, counters end in _total,
 * others do not, no family appears twice. */
static void lint_prom(const char *text)
{
    char fams[256][96];
    int nf = 0;
    char cur[96] = "", type[16] = "";
    const char *line = text;
    while (*line) {
        const char *nl = strchr(line, '\n');
        assert_non_null(nl);
        char l[2048];
        size_t n = (size_t)(nl - line);
        assert_true(n < sizeof l);
        memcpy(l, line, n);
        l[n] = '\0';
        if (strncmp(l, "# HELP ", 7) == 0) {
            sscanf(l + 7, "%95s", cur);
            for (int i = 0; i < nf; i++)
                assert_string_not_equal(fams[i], cur);
            snprintf(fams[nf++], sizeof fams[0], "%s", cur);
            type[0] = '\0';
        } else if (strncmp(l, "# TYPE ", 7) == 0) {
            char name[96];
            sscanf(l + 7, "%95s %15s", name, type);
            assert_string_equal(name, cur);
            size_t nl2 = strlen(name);
            bool total = nl2 > 6 && strcmp(name + nl2 - 6, "_total") == 0;
            assert_true(strcmp(type, "counter") == 0 ? total : !total);
        } else {
            assert_true(type[0] != '\0');
            assert_int_equal(strncmp(l, cur, strlen(cur)), 0);
            char c = l[strlen(cur)];
            assert_true(c == '{' || c == ' ');
        }
        line = nl + 1;
    }
}

static void test_render(void **st)
{
    (void)st;
    loom_mon_t *m;
    must_open(&m, NULL);
    loom_mon_snapshot_t s;
    loom_mon_snapshot_init(&s);
    loom_err_t e;
    assert_int_equal(loom_mon_read(m, LOOM_MON_ALL, &s, &e), LOOM_OK);
    loom_buf_t b = LOOM_BUF_INIT;
    assert_int_equal(loom_mon_to_prom(&s, &b, &e), LOOM_OK);
    lint_prom(b.data);
    char want[128];
    snprintf(want, sizeof want, "\nloom_memory_total_bytes %llu\n",
             (unsigned long long)s.memory.total_bytes);
    assert_non_null(strstr(b.data, want));
    assert_non_null(strstr(b.data, "loom_mon_source_up{source=\"gpu\",reason=\""));
    loom_buf_reset(&b);
    assert_int_equal(loom_mon_read_prom(m, LOOM_MON_MEMORY | LOOM_MON_NET, &b, &e), LOOM_OK);
    lint_prom(b.data);
    assert_non_null(strstr(b.data, "\nloom_network_receive_bytes_total{device=\"lo\"} "));
    assert_null(strstr(b.data, "loom_cpu_seconds_total"));
    loom_buf_reset(&b);
    assert_int_equal(loom_mon_to_json(&s, NULL, &b, &e), LOOM_OK);
    json_t *doc;
    assert_int_equal(loom_json_parse(b.data, b.len, "snap", 0, &doc, &e), LOOM_OK);
    json_t *mem = json_object_get(doc, "memory");
    assert_int_equal(json_integer_value(json_object_get(mem, "total_bytes")),
                     (json_int_t)s.memory.total_bytes);
    const char *groups[] = {"cpu", "memory", "disk", "net", "fs", "power", "thermal", "gpu"};
    for (int i = 0; i < 8; i++) {
        json_t *g = json_object_get(doc, groups[i]);
        assert_non_null(g);
        json_t *avail = json_object_get(g, "available");
        assert_true(json_is_boolean(avail));
        if (json_is_false(avail) && strcmp(groups[i], "thermal") != 0)
            assert_true(strlen(json_string_value(json_object_get(g, "reason"))) > 10);
    }
    json_decref(doc);
    loom_buf_reset(&b);
    assert_int_equal(loom_mon_to_text(&s, NULL, &b, &e), LOOM_OK);
    assert_non_null(strstr(b.data, "memory   total "));
    loom_buf_free(&b);
    loom_mon_snapshot_free(&s);
    loom_mon_close(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_host),
        cmocka_unit_test_setup_teardown(test_fixture, setup_fixture, teardown_fixture),
        cmocka_unit_test(test_rates_order),
        cmocka_unit_test(test_sampler),
        cmocka_unit_test(test_kept_open_files_regenerate),
        cmocka_unit_test(test_fs_mount_replaced),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_proc),
        cmocka_unit_test(test_cgroup),
        cmocka_unit_test(test_cgroup_fixture),
        cmocka_unit_test(test_render),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
