/* bench_estimate_calibrate: measures this machine for the estimator's
 * roofline and writes a device description (docs/estimate.md, "Devices").
 *
 *   build/bench_estimate_calibrate [--out DIR] [--device-out FILE]
 *                                  [--name NAME] [--op-overhead SECONDS] [--threads N]
 *                                  [--torch-gemm FLOPS] [--torch-conv FLOPS]
 *
 * - GEMM FLOP/s: cblas_sgemm of the BLAS PyTorch links (libblas.so.3,
 *   loaded with dlopen, so loom does not link it), square n = 1024 and
 *   2048, best of repeated runs of >= 0.5 s each. Without a BLAS, a
 *   cache-blocked C loop (much slower; the description says so).
 * - memory bandwidth: STREAM triad a = b + s*c over 3 x 64 MiB float
 *   arrays, --threads threads (default: one per online CPU; the BLAS
 *   follows OPENBLAS_NUM_THREADS; one thread runs in the main thread, so
 *   that process CPU time is its time alone), best of 5, counting 3 x 4
 *   bytes per element as STREAM does.
 * - bench/estimate_calibrate.py then adds the per-operator-class model
 *   (op_classes, optimizer, page_fault_s, step_overhead_s).
 * - op_overhead_s: not measurable from C (it is PyTorch's per-operator
 *   dispatch cost); bench/estimate.sh measures it in Python and passes it.
 *
 * Writes FILE (default workloads/devices/cpu-local.json) and appends the
 * figures with date and machine to DIR/estimate_calibrate.md.
 */
#include <dlfcn.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "loom/core.h"
#include "notes.h"

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *,
                         int, float, float *, int);
enum { ROW_MAJOR = 101, NO_TRANS = 111 };

/* One thread: process CPU time, so that other jobs on a shared machine do
 * not slow the measurement down (bench/estimate_measure.py times steps the
 * same way). Several threads: wall time. */
static bool cpu_clock;

static double now_s(void)
{
    if (cpu_clock) {
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    }
    return (double)loom_time_mono_ns() / 1e9;
}

static void naive_sgemm(int n, const float *a, const float *b, float *c)
{
    const int bs = 64;
    memset(c, 0, sizeof(float) * (size_t)n * (size_t)n);
    for (int ii = 0; ii < n; ii += bs)
        for (int kk = 0; kk < n; kk += bs)
            for (int i = ii; i < ii + bs && i < n; i++)
                for (int k = kk; k < kk + bs && k < n; k++) {
                    float av = a[(size_t)i * n + k];
                    for (int j = 0; j < n; j++)
                        c[(size_t)i * n + j] += av * b[(size_t)k * n + j];
                }
}

static double gemm_rate(sgemm_fn f, int n)
{
    size_t nn = (size_t)n * (size_t)n;
    float *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b), *c = malloc(nn * sizeof *c);
    if (!a || !b || !c) {
        free(a), free(b), free(c);
        return 0;
    }
    for (size_t i = 0; i < nn; i++) {
        a[i] = (float)(i % 7) * 0.1f;
        b[i] = (float)(i % 5) * 0.2f;
    }
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        int iters = 0;
        double t0 = now_s(), t;
        do {
            if (f)
                f(ROW_MAJOR, NO_TRANS, NO_TRANS, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
            else
                naive_sgemm(n, a, b, c);
            iters++;
            t = now_s() - t0;
        } while (t < 0.5);
        double rate = 2.0 * n * (double)n * n * iters / t;
        if (rate > best)
            best = rate;
    }
    free(a), free(b), free(c);
    return best;
}

typedef struct triad {
    float *a, *b, *c;
    size_t lo, hi;
    pthread_barrier_t *bar;
} triad_t;

static void *triad_run(void *arg)
{
    triad_t *t = arg;
    pthread_barrier_wait(t->bar);
    for (size_t i = t->lo; i < t->hi; i++)
        t->a[i] = t->b[i] + 3.0f * t->c[i];
    pthread_barrier_wait(t->bar);
    return NULL;
}

static double stream_triad(int threads)
{
    size_t n = (size_t)16 << 20; /* 16 Mi floats = 64 MiB per array */
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    if (!a || !b || !c) {
        free(a), free(b), free(c);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        a[i] = 0;
        b[i] = 1;
        c[i] = 2;
    }
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        if (threads == 1) { /* in this thread: process CPU time is then its own */
            double t0 = now_s();
            for (size_t i = 0; i < n; i++)
                a[i] = b[i] + 3.0f * c[i];
            double t = now_s() - t0;
            __asm__ volatile("" ::"r"(a) : "memory");
            double bw = 3.0 * sizeof(float) * (double)n / t;
            if (bw > best)
                best = bw;
            continue;
        }
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, (unsigned)threads + 1);
        pthread_t tid[64];
        triad_t arg[64];
        for (int k = 0; k < threads; k++) {
            arg[k] = (triad_t){
                a,   b, c, n * (size_t)k / (size_t)threads, n * (size_t)(k + 1) / (size_t)threads,
                &bar};
            pthread_create(&tid[k], NULL, triad_run, &arg[k]);
        }
        pthread_barrier_wait(&bar); /* the main thread sleeps: process CPU time is the worker's */
        double t0 = now_s();
        pthread_barrier_wait(&bar);
        double t = now_s() - t0;
        for (int k = 0; k < threads; k++)
            pthread_join(tid[k], NULL);
        pthread_barrier_destroy(&bar);
        double bw = 3.0 * sizeof(float) * (double)n / t;
        if (bw > best)
            best = bw;
    }
    volatile float sink = a[n / 2];
    (void)sink;
    free(a), free(b), free(c);
    return best;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'},
        {"device-out", required_argument, NULL, 'd'},
        {"name", required_argument, NULL, 'n'},
        {"op-overhead", required_argument, NULL, 'v'},
        {"threads", required_argument, NULL, 't'},
        {"torch-gemm", required_argument, NULL, 'g'},
        {"torch-conv", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out = BENCH_OUT_DEFAULT, *dev_out = "workloads/devices/cpu-local.json",
               *name = "cpu-local";
    double overhead = 1e-5, torch_gemm = 0, torch_conv = 0;
    int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'd': dev_out = optarg; break;
        case 'n': name = optarg; break;
        case 'v': overhead = atof(optarg); break;
        case 't': threads = atoi(optarg); break;
        case 'g': torch_gemm = atof(optarg); break;
        case 'c': torch_conv = atof(optarg); break;
        case 'h':
            printf("usage: bench_estimate_calibrate [--out DIR] [--device-out FILE] [--name NAME] "
                   "[--op-overhead SECONDS] [--threads N] [--torch-gemm FLOPS] [--torch-conv "
                   "FLOPS]\n");
            return 0;
        default: return 2;
        }
    }
    bench_out_dir(out);
    void *blas = dlopen("libblas.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!blas)
        blas = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    sgemm_fn f = blas ? (sgemm_fn)dlsym(blas, "cblas_sgemm") : NULL;
    if (threads < 1 || threads > 64)
        threads = 1;
    cpu_clock = threads == 1;
    double g1 = gemm_rate(f, 1024), g2 = f ? gemm_rate(f, 2048) : 0;
    double gemm = g1 > g2 ? g1 : g2;
    double bw = stream_triad(threads);
    struct utsname u;
    uname(&u);
    char host[128] = "";
    FILE *cpu = fopen("/proc/cpuinfo", "r");
    char line[512], model[256] = "unknown CPU";
    while (cpu && fgets(line, sizeof line, cpu))
        if (strncmp(line, "model name", 10) == 0) {
            char *p = strchr(line, ':');
            if (p) {
                snprintf(model, sizeof model, "%s", p + 2);
                model[strcspn(model, "\n")] = '\0';
            }
            break;
        }
    if (cpu)
        fclose(cpu);
    gethostname(host, sizeof host - 1);
    char date[32];
    loom_time_format_rfc3339(loom_time_real_ns(), date);
    /* PyTorch's achieved rates (measured in Python by bench/estimate.sh on a
     * Linear and a 3x3 convolution outside the zoo), when given, are what the
     * roofline uses; the BLAS peak is kept in the description and the table. */
    double mm = torch_gemm > 0 ? torch_gemm : gemm, conv = torch_conv > 0 ? torch_conv : mm;
    json_t *j =
        json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:s}", "name", name,
                  "description", model, "flops_fp32", mm, "flops_half", mm, "flops_vector", mm,
                  "flops_conv", conv, "mem_bandwidth", bw, "op_overhead_s", overhead,
                  "memory_bytes", (json_int_t)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE),
                  "context_bytes", (json_int_t)0, "allocator", "malloc");
    char desc[400];
    snprintf(desc, sizeof desc,
             "%s, %d thread(s); measured %s by bench_estimate_calibrate (%s %.1f GFLOP/s%s)", model,
             threads, date, f ? "cblas_sgemm of libblas.so.3" : "C loop, no BLAS found", gemm / 1e9,
             torch_gemm > 0 ? "; matmul and conv rates achieved by PyTorch" : "");
    json_object_set_new(j, "description", json_string(desc));
    loom_err_t err;
    loom_buf_t b = LOOM_BUF_INIT;
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
    int rc = text ? loom_write_file_atomic(dev_out, text, strlen(text), 0644, &err) : LOOM_ENOMEM;
    if (rc)
        fprintf(stderr, "bench_estimate_calibrate: %s\n", err.msg);
    printf("GEMM %.2f GFLOP/s (n=1024 %.2f, n=2048 %.2f), triad %.2f GB/s, %d threads -> %s\n",
           gemm / 1e9, g1 / 1e9, g2 / 1e9, bw / 1e9, threads, dev_out);
    char path[4096];
    snprintf(path, sizeof path, "%s/estimate_calibrate.md", out);
    FILE *md = fopen(path, "a");
    if (md) {
        fprintf(md, "| %s | %s (%s) | %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f |\n", date,
                host, u.machine, model, threads, g1 / 1e9, g2 / 1e9, torch_gemm / 1e9,
                torch_conv / 1e9, bw / 1e9, overhead * 1e6);
        fclose(md);
    }
    free(text);
    loom_buf_free(&b);
    json_decref(j);
    if (blas)
        dlclose(blas);
    return rc ? 1 : 0;
}
