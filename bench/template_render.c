/* bench_template_render: what one generated job costs in the catalog and
 * template parts, single-threaded: compiling a template, rendering the
 * shipped Slurm and Kubernetes templates, sampling a job from the demo
 * catalog, and sample + render together (the generator's per-job work
 * before submission). Each figure is thread CPU time per operation, the
 * median of 5 runs of ~0.4 s of CPU.
 *
 *   bench_template_render [--out DIR]    (run from the source tree)
 * writes DIR/template_render.md (default /tmp/loom-bench; make bench: docs/bench). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "loom/catalog.h"
#include "loom/template.h"
#include "notes.h"

typedef struct state {
    loom_template_t *slurm, *k8s;
    loom_catalog_t *cat;
    json_t *ctx;
    loom_rng_t rng;
    loom_buf_t out;
    const char *slurm_src;
    size_t slurm_len;
} state_t;

typedef void (*op_fn)(state_t *);

static void die(const char *what, const loom_err_t *err)
{
    fprintf(stderr, "bench_template_render: %s: %s\n", what, err->msg);
    exit(1);
}

static void op_compile(state_t *s)
{
    loom_template_t *t;
    loom_err_t err;
    if (loom_template_compile(s->slurm_src, s->slurm_len, "slurm", &t, &err))
        die("compile", &err);
    loom_template_free(t);
}

static void render(state_t *s, loom_template_t *t, loom_template_escape_t esc, const json_t *ctx)
{
    loom_template_options_t o = {.escape = esc, .strict = true};
    loom_err_t err;
    loom_buf_reset(&s->out);
    if (loom_template_render(t, ctx, &o, &s->out, &err))
        die("render", &err);
}

static void op_render_slurm(state_t *s)
{
    render(s, s->slurm, LOOM_TEMPLATE_ESCAPE_SHELL, s->ctx);
}
static void op_render_k8s(state_t *s)
{
    render(s, s->k8s, LOOM_TEMPLATE_ESCAPE_YAML, s->ctx);
}

static void op_sample(state_t *s)
{
    json_t *ctx;
    loom_err_t err;
    if (loom_catalog_sample(s->cat, loom_catalog_pick(s->cat, &s->rng), &s->rng, &ctx, &err))
        die("sample", &err);
    json_decref(ctx);
}

static void op_sample_render(state_t *s)
{
    json_t *ctx;
    loom_err_t err;
    if (loom_catalog_sample(s->cat, loom_catalog_pick(s->cat, &s->rng), &s->rng, &ctx, &err))
        die("sample", &err);
    render(s, s->slurm, LOOM_TEMPLATE_ESCAPE_SHELL, ctx);
    json_decref(ctx);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* CPU time of this thread: the machine may be shared, and wall time would
 * count other processes' turns on the CPU. */
static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * LOOM_NS_PER_S + ts.tv_nsec;
}

/* CPU ns per op, median of 5 runs. */
static double measure(state_t *s, op_fn op)
{
    double runs[5];
    for (int r = 0; r < 5; r++) {
        long n = 0;
        int64_t t0 = cpu_ns(), t;
        do {
            for (int k = 0; k < 256; k++)
                op(s);
            n += 256;
            t = cpu_ns();
        } while (t - t0 < 400 * LOOM_NS_PER_MS);
        runs[r] = (double)(t - t0) / (double)n;
    }
    qsort(runs, 5, sizeof runs[0], cmp);
    return runs[2];
}

int main(int argc, char **argv)
{
    const char *outdir = BENCH_OUT_DEFAULT;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            outdir = argv[++i];
    bench_out_dir(outdir);
    state_t s = {0};
    loom_err_t err;
    loom_buf_t src = LOOM_BUF_INIT;
    if (loom_buf_read_file(&src, "workloads/templates/slurm.sh.mustache", &err))
        die("read", &err);
    s.slurm_src = src.data;
    s.slurm_len = src.len;
    if (loom_template_load_file("workloads/templates/slurm.sh.mustache", &s.slurm, &err) ||
        loom_template_load_file("workloads/templates/k8s-job.yaml.mustache", &s.k8s, &err))
        die("load template", &err);
    if (loom_catalog_load_file("workloads/catalogs/demo.json", &s.cat, NULL, &err))
        die("load catalog", &err);
    loom_rng_init(&s.rng, 1, 0);
    if (loom_catalog_sample(s.cat, 1, &s.rng, &s.ctx, &err)) /* resnet-sim: GPUs, env, time */
        die("sample", &err);
    struct {
        const char *name;
        op_fn fn;
    } ops[] = {
        {"compile slurm.sh.mustache", op_compile},
        {"render slurm.sh (shell escaping)", op_render_slurm},
        {"render k8s-job.yaml (yaml escaping)", op_render_k8s},
        {"catalog pick + sample (demo.json)", op_sample},
        {"pick + sample + render slurm.sh", op_sample_render},
    };
    size_t nops = sizeof ops / sizeof ops[0];
    double ns[8];
    for (size_t i = 0; i < nops; i++) {
        ns[i] = measure(&s, ops[i].fn);
        printf("%-40s %10.0f cpu-ns/op %12.0f ops/s\n", ops[i].name, ns[i], 1e9 / ns[i]);
    }
    char path[4096], date[32];
    snprintf(path, sizeof path, "%s/template_render.md", outdir);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    struct utsname u;
    uname(&u);
    loom_time_format_rfc3339(loom_time_real_ns(), date);
    double load[3] = {0, 0, 0};
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
            load[0] = load[1] = load[2] = 0;
        fclose(la);
    }
    char cpu[256] = "unknown";
    FILE *ci = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (ci && fgets(line, sizeof line, ci))
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            snprintf(cpu, sizeof cpu, "%s", c ? c + 2 : line);
            cpu[strcspn(cpu, "\n")] = 0;
            break;
        }
    if (ci)
        fclose(ci);
    fprintf(
        f,
        "# Template and catalog costs per generated job\n\n"
        "Command: `build/bench_template_render --out %s` (from the source tree; `make bench`)  \n"
        "Machine: %s, %s %s %s  \n"
        "Date: %s (load average %.2f %.2f %.2f on %ld CPUs)  \n"
        "Build: the `build/` tree (RelWithDebInfo, -O2), one thread.\n\n"
        "Each figure is the thread's CPU time per operation (so other processes on a\n"
        "shared machine do not inflate it), the median of 5 runs of about 0.4 s of CPU.\n\n"
        "| operation | CPU ns/op | ops/s |\n|---|---:|---:|\n",
        outdir, cpu, u.sysname, u.release, u.machine, date, load[0], load[1], load[2],
        sysconf(_SC_NPROCESSORS_ONLN));
    for (size_t i = 0; i < nops; i++)
        fprintf(f, "| %s | %.0f | %.0f |\n", ops[i].name, ns[i], 1e9 / ns[i]);
    fprintf(f,
            "\nThe last row is the generator's per-job work before submission: at that cost one\n"
            "thread, given a CPU to itself, sustains the rate in the ops/s column.\n");
    fclose(f);
    json_decref(s.ctx);
    loom_buf_free(&s.out);
    loom_buf_free(&src);
    loom_template_free(s.slurm);
    loom_template_free(s.k8s);
    loom_catalog_free(s.cat);
    return 0;
}
