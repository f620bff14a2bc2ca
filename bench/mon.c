/* bench_mon: the cost of loom's monitoring collectors, next to psutil and a
 * node_exporter scrape measured in the same run, and the CPU a 1 kHz
 * sampler uses.
 *
 *   build/bench_mon [--out DIR] [--quick]
 *
 * Each call is timed on its own (CLOCK_MONOTONIC), and the median and 99th
 * percentile reported. The sampler runs at 1 kHz with absolute deadlines
 * for ~5 s and its CPU time comes from getrusage. Figures go to stdout and
 * to DIR/mon.md (default docs/bench). Baselines: bench/mon_baseline.py
 * run with /usr/bin/python3 (psutil, node_exporter). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "loom/mon.h"

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

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Runs a sampler at hz for secs; returns % of one core and fills the
 * number of readings and missed deadlines. */
static double sampler_cpu(loom_mon_t *m, unsigned groups, int hz, double secs, long *reads,
                          long *late)
{
    loom_mon_sampler_t *s = NULL;
    if (groups && loom_mon_sampler_open(&s, m, groups, NULL))
        return -1; /* groups 0: the wake-ups alone, as a baseline */
    int64_t period = LOOM_NS_PER_S / hz;
    int64_t start = loom_time_mono_ns(), next = start;
    int64_t end = start + (int64_t)(secs * 1e9);
    double c0 = cpu_seconds();
    *reads = *late = 0;
    while ((next += period) < end) {
        loom_time_sleep_until_ns(next);
        if (loom_time_mono_ns() > next + period)
            (*late)++;
        if (s)
            loom_mon_sampler_next(s, NULL);
        (*reads)++;
    }
    double used = cpu_seconds() - c0;
    double wall = (loom_time_mono_ns() - start) / 1e9;
    loom_mon_sampler_close(s);
    return 100.0 * used / wall;
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
    const char *outdir = "docs/bench";
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
    static const struct {
        const char *name;
        unsigned groups;
    } samp[] = {
        {"none (1 kHz wake-ups alone, baseline)", 0},
        {"cpu", LOOM_MON_CPU},
        {"cpu,memory", LOOM_MON_CPU | LOOM_MON_MEMORY},
        {"host (all but gpu)", LOOM_MON_HOST},
    };
    enum { NSAMP = sizeof samp / sizeof samp[0] };
    double pct[NSAMP];
    long reads[NSAMP], late[NSAMP];
    for (int i = 0; i < NSAMP; i++) {
        pct[i] = sampler_cpu(m, samp[i].groups, 1000, quick ? 1.0 : 5.0, &reads[i], &late[i]);
        printf("1 kHz sampler %-40s %.2f%% of a core (%ld readings, %ld late)\n", samp[i].name,
               pct[i], reads[i], late[i]);
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
    fprintf(f, "- command: `make bench` (runs `build/bench_mon --out docs/bench`%s)\n",
            quick ? " --quick" : "");
    fprintf(f,
            "- date: %s\n- machine: %s, %ld CPUs online, Linux %s (a VM; no RAPL, hwmon, "
            "thermal zones, cpufreq or GPU here)\n",
            date, model, sysconf(_SC_NPROCESSORS_ONLN), u.release);
    fprintf(f,
            "- note: the CPUs were shared with other engineers building and testing during "
            "this run (/proc/loadavg at start: `%s`, at end: `%s`), so the minimum shows the "
            "cost without interference, medians include it, and tails (p99) are noisy.\n",
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
            "CPU time of the process (getrusage, user+system) over wall time, %s s at "
            "1000 readings/s with absolute deadlines (loom_mon_sampler_next: a reading plus "
            "rates):\n\n",
            quick ? "1" : "5");
    fprintf(f,
            "| groups | %% of one core | readings | late (> 1 period) |\n|---|---:|---:|---:|\n");
    for (int i = 0; i < NSAMP; i++)
        fprintf(f, "| %s | %.2f | %ld | %ld |\n", samp[i].name, pct[i], reads[i], late[i]);
    fprintf(f, "\n");
    fprintf(f, "Targets (issue 4): full host snapshot <= 30 us median; 1 kHz sampler <= 2%% of "
               "one core.\n\n");
    fprintf(f, "- full host snapshot: median %.2f us: target %s.\n", st[NROWS - 1].median_us,
            st[NROWS - 1].median_us <= 30 ? "met" : "NOT met");
    for (int i = 1; i < NSAMP; i++)
        fprintf(f,
                "- 1 kHz sampler, %s: %.2f%% of a core: target %s (of which %.2f%% is the "
                "wake-ups alone, measured above).\n",
                samp[i].name, pct[i], pct[i] <= 2.0 ? "met" : "NOT met", pct[0]);
    fprintf(f, "\nA reading in the sampler costs more than in the tight loop of the first table: "
               "after each 1 ms sleep the kernel's /proc code and loom's data are cold in the "
               "caches, more so while other processes share the two CPUs.\n");
    fclose(f);
    json_decref(base);
    printf("wrote %s\n", path);
    return 0;
}
