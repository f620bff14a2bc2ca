/* bench_mon_ab: two builds of libloom's mon side by side, in one process.
 *
 *   build/bench_mon_ab BEFORE/libloom.so AFTER/libloom.so
 *
 * Sequential runs of two benchmark binaries on a shared machine compare the
 * load of two moments as much as the code; here both libraries are loaded
 * at once, each in its own link-map namespace (dlmopen), and read in
 * alternating blocks, so that whatever else runs falls on both alike.
 * Prints a Markdown table: per group, min and median wall time per
 * loom_mon_read (20 blocks of 1000 calls each), then per sampler set the
 * median CPU of a 1 kHz sampler thread (15 rounds of 0.2 s each, like
 * bench_mon). Used for docs/bench/mon_ab.md. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loom/mon.h"

typedef int (*open_f)(loom_mon_t **, const loom_mon_opts_t *, loom_err_t *);
typedef void (*close_f)(loom_mon_t *);
typedef int (*read_f)(loom_mon_t *, unsigned, loom_mon_snapshot_t *, loom_err_t *);
typedef void (*sfree_f)(loom_mon_snapshot_t *);
typedef int (*sopen_f)(loom_mon_sampler_t **, loom_mon_t *, unsigned, loom_err_t *);
typedef int (*snext_f)(loom_mon_sampler_t *, loom_err_t *);
typedef void (*sclose_f)(loom_mon_sampler_t *);

typedef struct lib {
    open_f open;
    close_f close;
    read_f read;
    sfree_f snap_free;
    sopen_f sopen;
    snext_f snext;
    sclose_f sclose;
    loom_mon_t *m;
} lib_t;

static int64_t ns(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int load(lib_t *l, const char *path)
{
    void *h = dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "bench_mon_ab: %s\n", dlerror());
        return -1;
    }
    l->open = (open_f)dlsym(h, "loom_mon_open");
    l->close = (close_f)dlsym(h, "loom_mon_close");
    l->read = (read_f)dlsym(h, "loom_mon_read");
    l->snap_free = (sfree_f)dlsym(h, "loom_mon_snapshot_free");
    l->sopen = (sopen_f)dlsym(h, "loom_mon_sampler_open");
    l->snext = (snext_f)dlsym(h, "loom_mon_sampler_next");
    l->sclose = (sclose_f)dlsym(h, "loom_mon_sampler_close");
    if (!l->open || !l->close || !l->read || !l->snap_free || !l->sopen || !l->snext ||
        !l->sclose) {
        fprintf(stderr, "bench_mon_ab: %s: not a libloom with mon\n", path);
        return -1;
    }
    loom_err_t e;
    if (l->open(&l->m, NULL, &e)) {
        fprintf(stderr, "bench_mon_ab: %s: %s\n", path, e.msg);
        return -1;
    }
    return 0;
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
    if (argc != 3) {
        fprintf(stderr, "usage: bench_mon_ab BEFORE/libloom.so AFTER/libloom.so\n");
        return 2;
    }
    lib_t lib[2];
    if (load(&lib[0], argv[1]) || load(&lib[1], argv[2]))
        return 1;
    char l0[128], l1[128];
    loadavg(l0, sizeof l0);
    printf("before: `%s`, after: `%s`, /proc/loadavg at start: `%s`\n\n", argv[1], argv[2], l0);
    enum { B = 1000, R = 20, SR = 15 };
    static const char *const names[] = {"cpu", "memory", "disk", "net", "fs", "host"};
    static const unsigned groups[] = {LOOM_MON_CPU, LOOM_MON_MEMORY, LOOM_MON_DISK,
                                      LOOM_MON_NET, LOOM_MON_FS,     LOOM_MON_HOST};
    static int64_t t[2][B * R];
    printf("| loom_mon_read of | before min | after min | before median | after median | after / "
           "before |\n|---|---:|---:|---:|---:|---:|\n");
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        loom_mon_snapshot_t s[2];
        memset(s, 0, sizeof s);
        for (int v = 0; v < 2; v++)
            lib[v].read(lib[v].m, groups[g], &s[v], NULL); /* arrays sized */
        for (int r = 0; r < R; r++)
            for (int k = 0; k < 2; k++) {
                int v = (r & 1) ? 1 - k : k; /* ABBA: neither always goes first */
                for (int i = 0; i < B; i++) {
                    int64_t a = ns(CLOCK_MONOTONIC);
                    lib[v].read(lib[v].m, groups[g], &s[v], NULL);
                    t[v][r * B + i] = ns(CLOCK_MONOTONIC) - a;
                }
            }
        double med[2], mn[2];
        for (int v = 0; v < 2; v++) {
            qsort(t[v], B * R, sizeof t[v][0], cmp_i64);
            med[v] = (double)t[v][B * R / 2] / 1e3;
            mn[v] = (double)t[v][0] / 1e3;
            lib[v].snap_free(&s[v]);
        }
        printf("| %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", names[g], mn[0], mn[1], med[0],
               med[1], med[1] / med[0]);
    }
    static const char *const snames[] = {"cpu", "memory", "disk,net", "fs", "host"};
    static const unsigned sgroups[] = {LOOM_MON_CPU, LOOM_MON_MEMORY, LOOM_MON_DISK | LOOM_MON_NET,
                                       LOOM_MON_FS, LOOM_MON_HOST};
    printf("\n| 1 kHz sampler of | before: %% of one core (median) | after | after / before "
           "|\n|---|---:|---:|---:|\n");
    for (size_t g = 0; g < sizeof sgroups / sizeof sgroups[0]; g++) {
        double pct[2][SR];
        for (int r = 0; r < SR; r++)
            for (int k = 0; k < 2; k++) {
                int v = (r & 1) ? 1 - k : k;
                loom_mon_sampler_t *sp;
                if (lib[v].sopen(&sp, lib[v].m, sgroups[g], NULL))
                    return 1;
                int64_t start = ns(CLOCK_MONOTONIC), next = start, end = start + 200000000;
                int64_t c0 = ns(CLOCK_THREAD_CPUTIME_ID);
                while ((next += 1000000) < end) {
                    struct timespec ts = {next / 1000000000, next % 1000000000};
                    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
                    lib[v].snext(sp, NULL);
                }
                pct[v][r] = 100.0 * (double)(ns(CLOCK_THREAD_CPUTIME_ID) - c0) /
                            (double)(ns(CLOCK_MONOTONIC) - start);
                lib[v].sclose(sp);
            }
        for (int v = 0; v < 2; v++)
            loom_stats_sort(pct[v], SR);
        printf("| %s | %.2f | %.2f | %.2f |\n", snames[g], pct[0][SR / 2], pct[1][SR / 2],
               pct[1][SR / 2] / pct[0][SR / 2]);
    }
    loadavg(l1, sizeof l1);
    printf("\n/proc/loadavg at end: `%s`\n", l1);
    lib[0].close(lib[0].m);
    lib[1].close(lib[1].m);
    return 0;
}
