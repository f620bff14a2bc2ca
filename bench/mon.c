/* bench_mon: the cost of loom's monitoring collectors, next to psutil and a
 * node_exporter scrape measured in the same run, and the CPU a 1 kHz
 * sampler uses.
 *
 *   build/bench_mon [--out DIR] [--quick]
 *
 * Each call is timed on its own (CLOCK_MONOTONIC), and the median and 99th
 * percentile reported. The sampler runs at 1 kHz with absolute deadlines,
 * its configurations interleaved in 0.2 s slices (25 rounds, 5 s each), and
 * its CPU time is the sampling thread's own (CLOCK_THREAD_CPUTIME_ID). The
 * cost of generating each /proc file is measured warm and after a sleep. Figures go to stdout and
 * to DIR/mon.md (default /tmp/loom-bench; make bench: docs/bench). Baselines: bench/mon_baseline.py
 * run with /usr/bin/python3 (psutil, node_exporter). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "loom/mon.h"
#include "notes.h"

typedef struct stat_ {
    double min_us, median_us, p99_us;
    int n;
} stat_t;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static stat_t summarize(int64_t *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_i64);
    stat_t s = {t[0] / 1e3, t[n / 2] / 1e3, t[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] / 1e3,
                n};
    return s;
}

static stat_t time_read(loom_mon_t *m, unsigned groups, int n)
{
    loom_mon_snapshot_t s;
    loom_mon_snapshot_init(&s);
    int64_t *t = malloc((size_t)n * sizeof *t);
    loom_mon_read(m, groups, &s, NULL); /* warm: arrays sized, pages touched */
    for (int i = 0; i < n; i++) {
        int64_t t0 = loom_time_mono_ns();
        loom_mon_read(m, groups, &s, NULL);
        t[i] = loom_time_mono_ns() - t0;
    }
    stat_t r = summarize(t, n);
    free(t);
    loom_mon_snapshot_free(&s);
    return r;
}

static stat_t time_proc(loom_mon_t *m, int n, bool cgroup)
{
    int64_t *t = malloc((size_t)n * sizeof *t);
    loom_mon_proc_t p;
    loom_mon_cgroup_t c;
    for (int i = 0; i < n; i++) {
        int64_t t0 = loom_time_mono_ns();
        if (cgroup)
            loom_mon_cgroup_read(m, ".", &c, NULL);
        else
            loom_mon_proc_read(m, getpid(), false, &p, NULL);
        t[i] = loom_time_mono_ns() - t0;
    }
    stat_t r = summarize(t, n);
    free(t);
    return r;
}

static stat_t time_render(loom_mon_t *m, int n, bool prom)
{
    loom_mon_snapshot_t s;
    loom_mon_snapshot_init(&s);
    loom_mon_read(m, LOOM_MON_HOST, &s, NULL);
    loom_buf_t b = LOOM_BUF_INIT;
    int64_t *t = malloc((size_t)n * sizeof *t);
    for (int i = 0; i < n; i++) {
        loom_buf_reset(&b);
        int64_t t0 = loom_time_mono_ns();
        if (prom)
            loom_mon_to_prom(&s, &b, NULL);
        else
            loom_mon_to_json(&s, NULL, &b, NULL);
        t[i] = loom_time_mono_ns() - t0;
    }
    stat_t r = summarize(t, n);
    free(t);
    loom_buf_free(&b);
    loom_mon_snapshot_free(&s);
    return r;
}

/* ---- 1 kHz sampler: CPU of the sampling thread over wall time.
 *
 * Honest accounting: CLOCK_THREAD_CPUTIME_ID of the one thread that sleeps
 * and reads (user + system, nothing of other threads), over the wall time
 * of the run. The machine is shared, so the configurations are not run one
 * after the other but interleaved in short slices (round r runs every
 * configuration for SLICE s), and each reading configuration is compared
 * with the wake-ups-alone baseline of the same round. */

enum { WAKE_NANOSLEEP, WAKE_TIMERFD };

typedef struct samp_cfg {
    const char *name;
    unsigned groups; /* 0: wake-ups alone, or raw_files */
    int wake;
    const char *const *raw_files; /* pread these (kept open) instead of loom */
    int hz;                       /* readings per second */
    int base;                     /* index of the wake-ups-alone row at the same rate */
} samp_cfg_t;

typedef struct slice {
    double pct, user_pct, sys_pct;
    long reads, late;
} slice_t;

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * LOOM_NS_PER_S + ts.tv_nsec;
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* One slice of `secs` at `hz` with absolute deadlines. clock_nanosleep
 * (TIMER_ABSTIME) arms a one-shot timer per period; a periodic timerfd is
 * re-armed by the kernel in the timer interrupt and read() blocks. */
static slice_t sampler_slice(loom_mon_t *m, const samp_cfg_t *c, int hz, double secs)
{
    slice_t r = {0};
    loom_mon_sampler_t *s = NULL;
    if (c->groups && loom_mon_sampler_open(&s, m, c->groups, NULL))
        return (slice_t){-1, -1, -1, 0, 0};
    int64_t period = LOOM_NS_PER_S / hz;
    int64_t start = loom_time_mono_ns(), next = start;
    int64_t end = start + (int64_t)(secs * 1e9);
    int tfd = -1;
    if (c->wake == WAKE_TIMERFD) {
        tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
        struct itimerspec it = {
            {0, period}, {(start + period) / LOOM_NS_PER_S, (start + period) % LOOM_NS_PER_S}};
        if (tfd < 0 || timerfd_settime(tfd, TFD_TIMER_ABSTIME, &it, NULL) != 0) {
            loom_mon_sampler_close(s);
            return (slice_t){-1, -1, -1, 0, 0};
        }
    }
    int raw[8], n_raw = 0;
    static char rbuf[16384];
    for (size_t i = 0; c->raw_files && c->raw_files[i] && n_raw < 8; i++)
        if ((raw[n_raw] = open(c->raw_files[i], O_RDONLY | O_CLOEXEC)) >= 0)
            n_raw++;
    struct rusage ru0, ru1;
    getrusage(RUSAGE_THREAD, &ru0);
    int64_t c0 = thread_cpu_ns();
    while ((next += period) < end) {
        if (tfd >= 0) {
            uint64_t expired = 0;
            if (read(tfd, &expired, sizeof expired) == (ssize_t)sizeof expired && expired > 1) {
                r.late += (long)expired - 1;
                next += (int64_t)(expired - 1) * period; /* skipped, never bunched */
            }
        } else {
            loom_time_sleep_until_ns(next);
            if (loom_time_mono_ns() > next + period)
                r.late++;
        }
        if (s)
            loom_mon_sampler_next(s, NULL);
        for (int i = 0; i < n_raw; i++)
            if (pread(raw[i], rbuf, sizeof rbuf, 0) < 0)
                break;
        r.reads++;
    }
    int64_t used = thread_cpu_ns() - c0;
    getrusage(RUSAGE_THREAD, &ru1);
    double wall = (double)(loom_time_mono_ns() - start) / 1e9;
    if (tfd >= 0)
        close(tfd);
    for (int i = 0; i < n_raw; i++)
        close(raw[i]);
    loom_mon_sampler_close(s);
    r.pct = 100.0 * (double)used / 1e9 / wall;
    r.user_pct = 100.0 * (tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime)) / wall;
    r.sys_pct = 100.0 * (tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime)) / wall;
    return r;
}

static double median(double *v, int n)
{
    loom_stats_sort(v, (size_t)n);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct samp_result {
    double median_pct, mean_pct, p25, p75, median_extra, user_pct, sys_pct;
    long reads, late;
} samp_result_t;

/* ---- cost of generating each kernel file: one pread at offset 0 of a
 * file kept open, in a tight loop (warm caches) and right after a 1 ms
 * sleep (what a 1 kHz sampler sees). getppid() is the bare system call. */

typedef struct file_cost {
    const char *path;
    double warm_us, cold_us;
    size_t bytes;
} file_cost_t;

enum { COST_GETPPID, COST_PREAD, COST_STATFS, COST_POLL };

static ssize_t cost_op(int kind, int fd, char *buf, size_t cap)
{
    switch (kind) {
    case COST_PREAD: return pread(fd, buf, cap, 0);
    case COST_STATFS: {
        struct statfs st;
        return statfs("/", &st);
    }
    case COST_POLL: {
        struct pollfd p = {.fd = fd, .events = POLLPRI};
        return poll(&p, 1, 0);
    }
    default: return (ssize_t)getppid();
    }
}

static file_cost_t file_cost(const char *path, int n)
{
    file_cost_t fc = {path, NAN, NAN, 0};
    int kind = path[0] == '/'                    ? COST_PREAD
               : strncmp(path, "statfs", 6) == 0 ? COST_STATFS
               : strncmp(path, "poll(", 5) == 0  ? COST_POLL
                                                 : COST_GETPPID;
    const char *file = kind == COST_POLL ? "/proc/self/mounts" : path;
    int fd = kind == COST_PREAD || kind == COST_POLL ? open(file, O_RDONLY | O_CLOEXEC) : -1;
    if ((kind == COST_PREAD || kind == COST_POLL) && fd < 0)
        return fc;
    static char buf[65536];
    int64_t *t = malloc((size_t)n * sizeof *t);
    for (int pass = 0; pass < 2; pass++) {
        int64_t next = loom_time_mono_ns();
        for (int i = 0; i < n; i++) {
            if (pass == 1) {
                next += LOOM_NS_PER_S / 1000;
                loom_time_sleep_until_ns(next);
            }
            int64_t t0 = loom_time_mono_ns();
            ssize_t k = cost_op(kind, fd, buf, sizeof buf);
            t[i] = loom_time_mono_ns() - t0;
            if (kind == COST_PREAD && k > 0)
                fc.bytes = (size_t)k;
        }
        stat_t st = summarize(t, n);
        *(pass ? &fc.cold_us : &fc.warm_us) = st.median_us;
    }
    free(t);
    if (fd >= 0)
        close(fd);
    return fc;
}

static json_t *baseline(int n)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 bench/mon_baseline.py %d", n);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    loom_buf_t b = LOOM_BUF_INIT;
    char chunk[4096];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, p)) > 0)
        loom_buf_append(&b, chunk, k);
    int rc = pclose(p);
    json_t *j = NULL;
    if (rc == 0 && b.data)
        loom_json_parse(b.data, b.len, "mon_baseline.py", 0, &j, NULL);
    loom_buf_free(&b);
    return j;
}

static void base_cell(char *out, size_t n, json_t *base, const char *sect, const char *key)
{
    json_t *o = json_object_get(json_object_get(base, sect), key);
    if (key == NULL)
        o = json_object_get(base, sect);
    json_t *med = json_object_get(o, "median_us");
    if (json_is_number(med))
        snprintf(out, n, "%.1f", json_number_value(med));
    else
        snprintf(out, n, "n/a");
}

static void loadavg(char *out, size_t n)
{
    FILE *f = fopen("/proc/loadavg", "r");
    out[0] = '\0';
    if (f && fgets(out, (int)n, f))
        out[strcspn(out, "\n")] = '\0';
    if (f)
        fclose(f);
}

int main(int argc, char **argv)
{
    char load0[128], load1[128];
    loadavg(load0, sizeof load0);
    const char *outdir = BENCH_OUT_DEFAULT;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            outdir = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0)
            quick = true;
        else {
            fprintf(stderr, "usage: bench_mon [--out DIR] [--quick]\n");
            return 2;
        }
    }
    bench_out_dir(outdir);
    int n = quick ? 2000 : 20000;
    loom_mon_t *m;
    loom_err_t e;
    if (loom_mon_open(&m, NULL, &e)) {
        fprintf(stderr, "bench_mon: %s\n", e.msg);
        return 1;
    }
    static const struct {
        const char *name;
        unsigned groups;
    } rows[] = {
        {"cpu", LOOM_MON_CPU},         {"memory", LOOM_MON_MEMORY}, {"disk", LOOM_MON_DISK},
        {"net", LOOM_MON_NET},         {"fs", LOOM_MON_FS},         {"power", LOOM_MON_POWER},
        {"thermal", LOOM_MON_THERMAL}, {"host", LOOM_MON_HOST},
    };
    enum { NROWS = sizeof rows / sizeof rows[0] };
    stat_t st[NROWS];
    for (int i = 0; i < NROWS; i++) {
        st[i] = time_read(m, rows[i].groups, n);
        printf("loom %-8s min %7.2f us  median %8.2f us  p99 %8.2f us  (n=%d)\n", rows[i].name,
               st[i].min_us, st[i].median_us, st[i].p99_us, n);
    }
    stat_t proc = time_proc(m, n / 4, false), cg = time_proc(m, n / 4, true);
    stat_t json = time_render(m, n / 10, false), prom = time_render(m, n / 10, true);
    printf("loom process median %.2f us, cgroup median %.2f us, JSON render %.2f us, "
           "Prometheus render %.2f us\n",
           proc.median_us, cg.median_us, json.median_us, prom.median_us);
    static const char *const cpu_files[] = {"/proc/stat", "/proc/loadavg", "/proc/pressure/cpu",
                                            NULL};
    static const samp_cfg_t samp[] = {
        {"none: wake-ups alone (clock_nanosleep, TIMER_ABSTIME) = baseline", 0, WAKE_NANOSLEEP,
         NULL, 1000, 0},
        {"none: wake-ups alone (periodic timerfd)", 0, WAKE_TIMERFD, NULL, 1000, 0},
        {"cpu", LOOM_MON_CPU, WAKE_NANOSLEEP, NULL, 1000, 0},
        {"(cpu's 3 files, pread only, no parse)", 0, WAKE_NANOSLEEP, cpu_files, 1000, 0},
        {"memory", LOOM_MON_MEMORY, WAKE_NANOSLEEP, NULL, 1000, 0},
        {"disk", LOOM_MON_DISK, WAKE_NANOSLEEP, NULL, 1000, 0},
        {"net", LOOM_MON_NET, WAKE_NANOSLEEP, NULL, 1000, 0},
        {"fs", LOOM_MON_FS, WAKE_NANOSLEEP, NULL, 1000, 0},
        {"cpu,memory", LOOM_MON_CPU | LOOM_MON_MEMORY, WAKE_NANOSLEEP, NULL, 1000, 0},
        /* what resolves 1 ms (byte and packet counters): the set a 1 kHz
         * sampler is for; cpu counts 10 ms ticks */
        {"disk,net", LOOM_MON_DISK | LOOM_MON_NET, WAKE_NANOSLEEP, NULL, 1000, 0},
        {"host (all but gpu)", LOOM_MON_HOST, WAKE_NANOSLEEP, NULL, 1000, 0},
        /* lower rates: what fits in 2% */
        {"none: wake-ups alone, 500 Hz", 0, WAKE_NANOSLEEP, NULL, 500, 11},
        {"cpu, 500 Hz", LOOM_MON_CPU, WAKE_NANOSLEEP, NULL, 500, 11},
        {"cpu,memory, 500 Hz", LOOM_MON_CPU | LOOM_MON_MEMORY, WAKE_NANOSLEEP, NULL, 500, 11},
        {"none: wake-ups alone, 250 Hz", 0, WAKE_NANOSLEEP, NULL, 250, 14},
        {"host (all but gpu), 250 Hz", LOOM_MON_HOST, WAKE_NANOSLEEP, NULL, 250, 14},
    };
    enum { NSAMP = sizeof samp / sizeof samp[0], MAXR = 64 };
    const double slice_s = 0.2;
    int rounds = quick ? 5 : 25;
    static slice_t sl[NSAMP][MAXR];
    for (int k = 0; k < rounds; k++)
        for (int i = 0; i < NSAMP; i++)
            sl[i][k] = sampler_slice(m, &samp[i], samp[i].hz, slice_s);
    samp_result_t sr[NSAMP];
    for (int i = 0; i < NSAMP; i++) {
        double v[MAXR], d[MAXR], u = 0, sy = 0;
        samp_result_t *o = &sr[i];
        memset(o, 0, sizeof *o);
        for (int k = 0; k < rounds; k++) {
            v[k] = sl[i][k].pct;
            d[k] = sl[i][k].pct - sl[samp[i].base][k].pct;
            o->mean_pct += v[k] / rounds;
            u += sl[i][k].user_pct / rounds;
            sy += sl[i][k].sys_pct / rounds;
            o->reads += sl[i][k].reads;
            o->late += sl[i][k].late;
        }
        o->user_pct = u, o->sys_pct = sy;
        o->median_pct = median(v, rounds);
        o->p25 = v[rounds / 4];
        o->p75 = v[(rounds * 3) / 4];
        o->median_extra = median(d, rounds);
        printf("sampler %-68s median %.2f%% of a core (+%.2f over baseline), %ld readings, "
               "%ld late\n",
               samp[i].name, o->median_pct, o->median_extra, o->reads, o->late);
    }
    static const char *const cost_files[] = {
        "getppid()",
        "/proc/stat",
        "/proc/loadavg",
        "/proc/pressure/cpu",
        "/proc/meminfo",
        "/proc/pressure/memory",
        "/proc/diskstats",
        "/proc/pressure/io",
        "/proc/net/dev",
        "statfs(\"/\")",
        "poll(/proc/self/mounts)",
    };
    enum { NCOST = sizeof cost_files / sizeof cost_files[0] };
    file_cost_t fc[NCOST];
    for (int i = 0; i < NCOST; i++) {
        fc[i] = file_cost(cost_files[i], quick ? 300 : 1000);
        printf("pread %-22s warm %6.2f us, after 1 ms sleep %6.2f us (%zu bytes)\n", fc[i].path,
               fc[i].warm_us, fc[i].cold_us, fc[i].bytes);
    }
    loom_mon_close(m);

    printf("running baselines (psutil, node_exporter)...\n");
    json_t *base = baseline(quick ? 200 : 2000);
    if (!base)
        fprintf(stderr, "bench_mon: baseline script failed (psutil/node_exporter missing?)\n");

    loadavg(load1, sizeof load1);
    char path[512];
    snprintf(path, sizeof path, "%s/mon.md", outdir);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        json_decref(base);
        return 1;
    }
    struct utsname u;
    uname(&u);
    char model[256] = "unknown";
    FILE *ci = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (ci && fgets(line, sizeof line, ci))
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            snprintf(model, sizeof model, "%s", c ? c + 2 : line);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    if (ci)
        fclose(ci);
    char date[32];
    loom_time_format_rfc3339(loom_time_real_ns(), date);
    fprintf(f, "# bench/mon: cost of loom's monitoring collectors\n\n");
    char cmdline[512] = "";
    for (int i = 0; i < argc; i++)
        snprintf(cmdline + strlen(cmdline), sizeof cmdline - strlen(cmdline), "%s%s", i ? " " : "",
                 argv[i]);
    fprintf(f,
            "- command: `%s` (`make bench` runs `build/bench_mon --out docs/bench`; on a "
            "shared machine run it under `flock /work/notes/bench.lock`)\n",
            cmdline);
    fprintf(f,
            "- date: %s\n- machine: %s, %ld CPUs online, Linux %s (a VM; no RAPL, hwmon, "
            "thermal zones, cpufreq or GPU here)\n",
            date, model, sysconf(_SC_NPROCESSORS_ONLN), u.release);
    fprintf(f,
            "- note: /proc/loadavg at start: `%s`, at end: `%s` (this benchmark alone keeps "
            "one CPU busy: a load near 1 means nothing else ran). On a shared machine other "
            "programs' work raises the medians and tails (p99); the minimum shows the cost "
            "without interference.\n",
            load0, load1);
    fprintf(f,
            "- psutil %s under /usr/bin/python3 and node_exporter (Debian) measured in the "
            "same run by bench/mon_baseline.py.\n\n",
            base ? json_string_value(json_object_get(base, "psutil_version")) : "n/a");
    fprintf(f, "## Cost per call (microseconds)\n\n");
    fprintf(f, "| collector | loom min | loom median | loom p99 | psutil median (same work) |\n");
    fprintf(f, "|---|---:|---:|---:|---:|\n");
    for (int i = 0; i < NROWS; i++) {
        char b[32];
        base_cell(b, sizeof b, base, "psutil", rows[i].name);
        fprintf(f, "| %s%s | %.2f | %.2f | %.2f | %s |\n", rows[i].name,
                strcmp(rows[i].name, "host") == 0 ? " (full host snapshot)" : "", st[i].min_us,
                st[i].median_us, st[i].p99_us, b);
    }
    char pb[32], nb[32];
    base_cell(pb, sizeof pb, base, "psutil", "process");
    base_cell(nb, sizeof nb, base, "node_exporter", NULL);
    fprintf(f, "| process (one pid) | %.2f | %.2f | %.2f | %s |\n", proc.min_us, proc.median_us,
            proc.p99_us, pb);
    fprintf(f, "| cgroup (cgroup2 root) | %.2f | %.2f | %.2f | n/a |\n", cg.min_us, cg.median_us,
            cg.p99_us);
    fprintf(f, "| render host snapshot as JSON | %.2f | %.2f | %.2f | |\n", json.min_us,
            json.median_us, json.p99_us);
    fprintf(f, "| render host snapshot as Prometheus text | %.2f | %.2f | %.2f | |\n", prom.min_us,
            prom.median_us, prom.p99_us);
    fprintf(f,
            "| node_exporter scrape (HTTP GET /metrics, defaults minus systemd) | | | | %s |\n\n",
            nb);
    fprintf(f, "psutil rows do the same work as the loom row: cpu = cpu_times(percpu) + "
               "getloadavg; memory = virtual_memory + swap_memory; disk/net = *_io_counters(per "
               "device); fs = disk_partitions + disk_usage each; host = all of these plus "
               "cpu_freq and sensors_temperatures.\n\n");
    fprintf(f, "## 1 kHz sampler\n\n");
    fprintf(f,
            "CPU time of the sampling thread (CLOCK_THREAD_CPUTIME_ID: user + system of that "
            "one thread, nothing else) over wall time, at 1000 readings/s (the last rows: 500 and "
            "250) with absolute deadlines; each reading is loom_mon_sampler_next (a reading plus "
            "rates). The "
            "configurations run interleaved: %d rounds, each running every configuration for "
            "%.1f s, so that load from other work falls on all of them alike; `+ baseline` is "
            "the median over rounds of (this configuration - the clock_nanosleep baseline at the "
            "same rate, of the same round). user/system: getrusage(RUSAGE_THREAD), tick-sampled, "
            "so only the "
            "split is meaningful.\n\n",
            rounds, slice_s);
    fprintf(f, "| groups | %% of one core (median) | p25 - p75 | + baseline | user / system | "
               "readings | late (> 1 period) |\n|---|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < NSAMP; i++)
        fprintf(f, "| %s | %.2f | %.2f - %.2f | %+.2f | %.2f / %.2f | %ld | %ld |\n", samp[i].name,
                sr[i].median_pct, sr[i].p25, sr[i].p75, sr[i].median_extra, sr[i].user_pct,
                sr[i].sys_pct, sr[i].reads, sr[i].late);
    fprintf(f, "\nWhat the kernel costs per file: one pread at offset 0 of the file kept open, "
               "median microseconds, in a tight loop (warm) and right after a 1 ms sleep (what "
               "a 1 kHz sampler sees); getppid() is a bare system call for scale; statfs and "
               "poll are what the fs group adds (statfs per filesystem, poll of the mount table "
               "at most every 10 ms).\n\n");
    fprintf(f, "| file | bytes | warm | after 1 ms sleep |\n|---|---:|---:|---:|\n");
    for (int i = 0; i < NCOST; i++)
        fprintf(f, "| %s | %zu | %.2f | %.2f |\n", fc[i].path, fc[i].bytes, fc[i].warm_us,
                fc[i].cold_us);
    fprintf(f, "\nTargets (issue 4): full host snapshot <= 30 us median; 1 kHz sampler <= 2%% of "
               "one core.\n\n");
    fprintf(f, "- full host snapshot: median %.2f us: target %s.\n", st[NROWS - 1].median_us,
            st[NROWS - 1].median_us <= 30 ? "met" : "NOT met");
    fprintf(f,
            "- the 1 kHz wake-ups alone take %.2f%% of a core (median; periodic timerfd: "
            "%.2f%%).\n",
            sr[0].median_pct, sr[1].median_pct);
    for (int i = 2; i < NSAMP; i++) {
        if (samp[i].raw_files || !samp[i].groups)
            continue;
        if (samp[i].hz == 1000)
            fprintf(f,
                    "- 1 kHz sampler, %s: %.2f%% of a core (median): target %s; the readings "
                    "add %.2f%% to the wake-ups.\n",
                    samp[i].name, sr[i].median_pct, sr[i].median_pct <= 2.0 ? "met" : "NOT met",
                    sr[i].median_extra);
        else
            fprintf(f,
                    "- (not the target's rate) sampler, %s: %.2f%% of a core (median), %s 2%%; "
                    "the readings add %.2f%% to the wake-ups at that rate.\n",
                    samp[i].name, sr[i].median_pct, sr[i].median_pct <= 2.0 ? "within" : "over",
                    sr[i].median_extra);
    }
    fprintf(f,
            "\nWhy: see docs/monitoring.md, \"Cost of a sampler\". Load average at start "
            "`%s`, at end `%s`: when other programs keep the CPUs busy every system call "
            "and wake-up costs more (cold caches and TLB), which raises all rows, the "
            "baseline too.\n",
            load0, load1);
    fclose(f);
    json_decref(base);
    printf("wrote %s\n", path);
    return 0;
}
