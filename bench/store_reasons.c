/* bench/store_reasons — what storing pending reasons costs loomd's runner.
 *
 * After each step the runner writes the reasons that changed
 * (loom_store_set_reasons, one transaction, waited for while the runner
 * holds its lock). In the steady state a step changes a handful (the
 * arrivals, the new first job that waits); the first step after a burst
 * of submissions changes one per arrival, and the first step of a loomd
 * restarted on a queue whose stored reasons are stale changes them all.
 * This times the call for those batch sizes on a store holding --jobs
 * pending jobs (a real SQLite database in a temporary directory, normal
 * durability as loomd's default).
 *
 *   build/bench_store_reasons [--out DIR] [--jobs N] [--reps N]
 * writes DIR/store_reasons.md (default /tmp/loom-bench; make bench: docs/bench). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "loom/store.h"
#include "notes.h"

#define MARKER "## Notes"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* n pending jobs (one array submission per 100,000); their ids in ids. */
static int fill(loom_store_t *s, size_t n, int64_t *ids, loom_err_t *err)
{
    size_t done = 0;
    while (done < n) {
        size_t k = n - done < LOOM_STORE_ARRAY_MAX ? n - done : LOOM_STORE_ARRAY_MAX;
        int64_t *tasks = malloc(k * sizeof *tasks);
        if (!tasks)
            return loom_err_set(err, LOOM_ENOMEM, "out of memory");
        for (size_t i = 0; i < k; i++)
            tasks[i] = (int64_t)i;
        loom_job_spec_t spec;
        loom_job_spec_init(&spec);
        spec.name = "pending";
        spec.script = "#!/bin/bash\ntrue\n";
        spec.gpus = 1;
        spec.options_json = "{}"; /* each task gets its array ids there */
        loom_job_t first;
        int rc = loom_store_submit_array(s, &spec, tasks, k, &first, NULL, err);
        free(tasks);
        if (rc != LOOM_OK)
            return rc;
        for (size_t i = 0; i < k; i++)
            ids[done + i] = first.id + (int64_t)i;
        loom_job_free(&first);
        done += k;
    }
    return LOOM_OK;
}

/* Times one batch of n reasons (alternating names, so each call changes
 * every row it names); returns milliseconds, or -1. */
static double batch(loom_store_t *s, const int64_t *ids, size_t n, int round)
{
    const char **why = malloc(n * sizeof *why);
    if (!why)
        return -1;
    for (size_t i = 0; i < n; i++)
        why[i] = (round + (int)i) % 2 ? "Priority" : "Resources";
    loom_err_t err;
    int64_t t0 = loom_time_mono_ns();
    int rc = loom_store_set_reasons(s, ids, why, n, &err);
    double ms = (double)(loom_time_mono_ns() - t0) / 1e6;
    free(why);
    if (rc != LOOM_OK) {
        fprintf(stderr, "bench_store_reasons: %s\n", err.msg);
        return -1;
    }
    return ms;
}

static double median(double *v, size_t n)
{
    int64_t *ns = malloc(n * sizeof *ns);
    for (size_t i = 0; ns && i < n; i++)
        ns[i] = (int64_t)(v[i] * 1e6);
    qsort(ns, n, sizeof *ns, cmp_i64);
    double m = ns ? (double)ns[n / 2] / 1e6 : -1;
    free(ns);
    return m;
}

int main(int argc, char **argv)
{
    const char *out = BENCH_OUT_DEFAULT;
    size_t jobs = 100000;
    int reps = 9;
    static const struct option opts[] = {{"out", required_argument, NULL, 'o'},
                                         {"jobs", required_argument, NULL, 'j'},
                                         {"reps", required_argument, NULL, 'r'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'o')
            out = optarg;
        else if (c == 'j' && atol(optarg) >= 1000 && atol(optarg) <= 1000000)
            jobs = (size_t)atol(optarg);
        else if (c == 'r' && atoi(optarg) >= 1 && atoi(optarg) <= 1000)
            reps = atoi(optarg);
        else {
            fprintf(stderr, "usage: bench_store_reasons [--out DIR] [--jobs 1000..1000000] "
                            "[--reps 1..1000]\n");
            return 2;
        }
    }
    char dir[] = "/tmp/loom-bench-reasons-XXXXXX", path[64];
    if (!mkdtemp(dir))
        return perror("mkdtemp"), 1;
    snprintf(path, sizeof path, "%s/loom.db", dir);
    loom_store_t *s = NULL;
    loom_err_t err;
    int64_t *ids = malloc(jobs * sizeof *ids);
    if (!ids || loom_store_open(path, NULL, &s, &err) != LOOM_OK || fill(s, jobs, ids, &err)) {
        fprintf(stderr, "bench_store_reasons: %s\n", ids ? err.msg : "out of memory");
        return 1;
    }
    size_t sizes[] = {10, 100, 1000, 10000, jobs};
    size_t nsizes = sizeof sizes / sizeof sizes[0];
    loom_buf_t md = LOOM_BUF_INIT;
    struct utsname u;
    uname(&u);
    char when[32];
    loom_time_format_rfc3339(loom_time_real_ns(), when);
    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    loom_buf_appendf(
        &md,
        "# bench/store_reasons — storing pending reasons, %zu pending jobs\n\n"
        "Command: `build/bench_store_reasons --out docs/bench --jobs %zu --reps %d`  \n"
        "Date: %s  \nMachine: %s, %ld CPUs, %s %s\n\n"
        "One `loom_store_set_reasons` call (one transaction, waited for) per batch: "
        "the rows it names each get a new reason. Median of %d calls, and the "
        "per-job cost.\n\n"
        "| jobs in the batch | median ms | min ms | max ms | us per job |\n"
        "|---:|---:|---:|---:|---:|\n",
        jobs, jobs, reps, when, host, sysconf(_SC_NPROCESSORS_ONLN), u.sysname, u.release, reps);
    for (size_t k = 0; k < nsizes; k++) {
        double *t = calloc((size_t)reps, sizeof *t), lo = 1e18, hi = 0;
        for (int r = 0; t && r < reps; r++) {
            /* a window that moves through the queue */
            size_t off = sizes[k] < jobs ? ((size_t)r * 7919 * sizes[k]) % (jobs - sizes[k]) : 0;
            t[r] = batch(s, ids + off, sizes[k], r);
            if (t[r] < 0)
                return 1;
            lo = t[r] < lo ? t[r] : lo;
            hi = t[r] > hi ? t[r] : hi;
        }
        double m = t ? median(t, (size_t)reps) : -1;
        loom_buf_appendf(&md, "| %zu | %.2f | %.2f | %.2f | %.2f |\n", sizes[k], m, lo, hi,
                         m * 1000.0 / (double)sizes[k]);
        printf("batch %7zu: median %.2f ms (min %.2f, max %.2f)\n", sizes[k], m, lo, hi);
        free(t);
    }
    loom_store_close(s);
    free(ids);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_store_reasons: could not remove %s\n", dir);
    bench_out_dir(out);
    char report[4096];
    snprintf(report, sizeof report, "%s/store_reasons.md", out);
    int rc = bench_write_report(report, md.data, md.len, MARKER, &err);
    loom_buf_free(&md);
    if (rc != LOOM_OK) {
        fprintf(stderr, "bench_store_reasons: %s\n", err.msg);
        return 1;
    }
    printf("wrote %s\n", report);
    return 0;
}
