/* bench_zoo_match: matching one model against a repository of 10,000
 * stored models: time per query and top-1 recall against exhaustive search.
 *
 *   build/bench_zoo_match [--models N] [--queries Q] [--seed S] [--out DIR]
 *
 * Builds a repository of N architectures of seven realistic families
 * (bench/zoo_families.h: ResNets, bottleneck ResNets, VGGs, MobileNets,
 * DenseNet-like and Inception-like branched nets, transformer stacks; 20
 * to about 600 layers each) through the public API (loom_zoo_prepare,
 * store, commit: ONNX bytes parsed, objects content-addressed, rows in
 * SQLite), then, for Q new architectures drawn the same way, times
 * loom_zoo_match on this thread (one core) and compares its answer with
 * exhaustive search: the exact similarity against every stored signature
 * (kept in memory from the build). Top-1 recall: the queries whose most
 * similar candidate has the exhaustive best similarity; parent recall: the
 * queries whose chosen parent is the one the parent rule picks over the
 * exhaustive ranking. Writes DIR/zoo_match.md. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "loom/zoo.h"
#include "notes.h"
#include "zoo_families.h"

static double now(void)
{
    return (double)loom_time_mono_ns() / 1e9;
}

/* CPU time of this thread: what one core spends, whatever else the shared
 * machine runs. */
static double cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct stored {
    loom_zoo_sig_t sig;
    int64_t id;
    double metric;
    int family;
} stored_t;

static const char empty_weights[] = "LOOMWTS1\x18\0\0\0\0\0\0\0{\"tensors\":[],\"meta\":{}}";

static void build(loom_zoo_t *z, stored_t *all, int models, loom_rng_t *rng, size_t *layers)
{
    *layers = 0;
    for (int i = 0; i < models; i++) {
        char name[32];
        snprintf(name, sizeof name, "m%d.onnx", i);
        pbw_t pb = fam_model(rng, -1, &all[i].family);
        all[i].metric = loom_rng_uniform(rng);
        loom_zoo_entry_in_t in = {.model_path = name,
                                  .weights_path = "empty.lw",
                                  .task = "bench",
                                  .metric_name = "accuracy",
                                  .metric = all[i].metric};
        loom_zoo_prepared_t p;
        loom_err_t err;
        if (loom_zoo_prepare(&in, pb.d, pb.n, empty_weights, sizeof empty_weights - 1, false, &p,
                             &err) ||
            loom_zoo_store(z, &p, &err) || loom_zoo_commit(z, &p, &all[i].id, &err) ||
            loom_zoo_sig_parse(pb.d, pb.n, name, &all[i].sig, &err)) {
            fprintf(stderr, "bench_zoo_match: %s (%s)\n", err.msg, fam_names[all[i].family]);
            exit(1);
        }
        *layers += all[i].sig.n;
        loom_zoo_prepared_free(&p);
        free(pb.d);
    }
}

typedef struct ranked {
    double sim, metric;
    int64_t id;
} ranked_t;

static int by_sim_desc(const void *a, const void *b)
{
    const ranked_t *x = a, *y = b;
    return x->sim < y->sim ? 1 : x->sim > y->sim ? -1 : (x->id > y->id) - (x->id < y->id);
}

/* Exact similarity against every stored signature: the best, and the
 * parent the rule (best metric within 0.05 of the best, at least 0.5)
 * picks. */
static double exhaustive(const stored_t *all, int models, const loom_zoo_sig_t *q, ranked_t *r,
                         double *best, int64_t *parent)
{
    double t0 = cpu();
    for (int k = 0; k < models; k++)
        r[k] = (ranked_t){loom_zoo_similarity(q, &all[k].sig), all[k].metric, all[k].id};
    double t = cpu() - t0;
    qsort(r, (size_t)models, sizeof *r, by_sim_desc);
    *best = r[0].sim;
    *parent = 0;
    if (r[0].sim >= 0.5) {
        int p = 0;
        for (int k = 1; k < models && r[k].sim >= r[0].sim - 0.05; k++)
            if (r[k].metric > r[p].metric)
                p = k;
        *parent = r[p].id;
    }
    return t;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"models", required_argument, NULL, 'n'},
                                         {"queries", required_argument, NULL, 'q'},
                                         {"seed", required_argument, NULL, 's'},
                                         {"out", required_argument, NULL, 'o'},
                                         {NULL, 0, NULL, 0}};
    int models = 10000, queries = 30, c;
    unsigned long seed = 42;
    const char *out = BENCH_OUT_DEFAULT;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'n')
            models = atoi(optarg);
        else if (c == 'q')
            queries = atoi(optarg);
        else if (c == 's')
            seed = strtoul(optarg, NULL, 10);
        else if (c == 'o')
            out = optarg;
        else {
            printf("usage: bench_zoo_match [--models N] [--queries Q] [--seed S] [--out DIR]\n");
            return 2;
        }
    }
    if (models < 1 || models > 1000000 || queries < 1 || queries > 1000) {
        fprintf(stderr, "bench_zoo_match: --models 1 to 1000000, --queries 1 to 1000\n");
        return 2;
    }
    char tmp[] = "/tmp/loom-bench-zoo-XXXXXX", dir[128];
    if (!mkdtemp(tmp))
        return 1;
    snprintf(dir, sizeof dir, "%s/zoo", tmp);
    loom_zoo_t *z;
    loom_err_t err;
    if (loom_zoo_open(dir, &z, &err)) {
        fprintf(stderr, "bench_zoo_match: %s\n", err.msg);
        return 1;
    }
    loom_rng_t rng;
    loom_rng_init(&rng, seed, 0);
    stored_t *all = calloc((size_t)models, sizeof *all);
    ranked_t *rk = calloc((size_t)models, sizeof *rk);
    double *tm = calloc((size_t)queries, sizeof *tm), *te = calloc((size_t)queries, sizeof *te),
           *tc = calloc((size_t)queries, sizeof *tc);
    if (!all || !rk || !tm || !te || !tc)
        return 1;
    double t0 = now();
    size_t layers;
    build(z, all, models, &rng, &layers);
    double build_s = now() - t0;
    long aligned = 0, max_aligned = 0;
    int top1 = 0, parent_ok = 0, fam_count[FAM_N] = {0};
    for (int i = 0; i < models; i++)
        fam_count[all[i].family]++;
    loom_buf_t misses = LOOM_BUF_INIT;
    for (int i = 0; i < queries; i++) {
        int fam;
        pbw_t pb = fam_model(&rng, -1, &fam);
        loom_zoo_sig_t q;
        json_t *res;
        if (loom_zoo_sig_parse(pb.d, pb.n, "q.onnx", &q, &err))
            return 1;
        free(pb.d);
        loom_zoo_match_opts_t o = {.task = "bench", .band = -1, .min_similarity = -1};
        double a = now(), ac = cpu();
        if (loom_zoo_match(z, &q, &o, &res, &err)) {
            fprintf(stderr, "bench_zoo_match: %s\n", err.msg);
            return 1;
        }
        tm[i] = now() - a;
        tc[i] = cpu() - ac;
        long al = (long)json_integer_value(json_object_get(res, "aligned"));
        aligned += al;
        max_aligned = al > max_aligned ? al : max_aligned;
        double best;
        int64_t parent;
        te[i] = exhaustive(all, models, &q, rk, &best, &parent);
        json_t *c0 = json_array_get(json_object_get(res, "candidates"), 0);
        double got = c0 ? json_real_value(json_object_get(c0, "similarity")) : -1;
        int64_t gotp = json_integer_value(json_object_get(res, "parent"));
        bool hit = fabs(got - best) < 1e-9;
        top1 += hit;
        parent_ok += gotp == parent;
        if (!hit)
            loom_buf_appendf(&misses, "%s%s %.3f vs %.3f", misses.len ? "; " : "", fam_names[fam],
                             got, best);
        json_decref(res);
        loom_zoo_sig_free(&q);
    }
    qsort(tm, (size_t)queries, sizeof *tm, cmp_d);
    qsort(te, (size_t)queries, sizeof *te, cmp_d);
    qsort(tc, (size_t)queries, sizeof *tc, cmp_d);
    struct utsname u;
    uname(&u);
    double load = 0;
    if (getloadavg(&load, 1) != 1)
        load = -1;
    char when[32];
    loom_time_format_rfc3339(loom_time_real_ns(), when);
    loom_buf_t r = LOOM_BUF_INIT;
    loom_buf_appendf(&r,
                     "# Zoo matching: one model against %d stored models\n\n"
                     "`build/bench_zoo_match --models %d --queries %d --seed %lu --out %s` on %s "
                     "(%s, %ld CPUs online), %s.\n"
                     "One thread (one core). The machine was shared with other developers' "
                     "builds and tests (load average %.0f at the end on %ld CPUs), so wall "
                     "times are upper bounds; CPU times are this thread's own.\n\n"
                     "Repository: %d architectures of seven families (bench/zoo_families.h), "
                     "%.0f layers on average;",
                     models, models, queries, seed, out, u.nodename, u.machine,
                     sysconf(_SC_NPROCESSORS_ONLN), when, load, sysconf(_SC_NPROCESSORS_ONLN),
                     models, (double)layers / models);
    for (int f = 0; f < FAM_N; f++)
        loom_buf_appendf(&r, "%s %s %d", f ? "," : "", fam_names[f], fam_count[f]);
    loom_buf_appendf(&r,
                     ". Queries: %d new architectures drawn the same way.\n\n"
                     "| what | value |\n|---|---|\n"
                     "| top-1 recall (most similar candidate = exhaustive best) | %d of %d |\n"
                     "| parent recall (chosen parent = the rule over the exhaustive ranking) | "
                     "%d of %d |\n"
                     "| loom_zoo_match, median s: CPU (wall) | %.4f (%.4f) |\n"
                     "| loom_zoo_match, slowest s: CPU (wall) | %.4f (%.4f) |\n"
                     "| exact alignments per query, mean (max) | %.1f (%ld) |\n"
                     "| exhaustive exact similarity, all %d (in memory), median CPU s | %.4f |\n"
                     "| building the repository (%d adds), s | %.1f |\n\n"
                     "Misses (family: found vs exhaustive best): %s.\n"
                     "Goal: top-1 recall >= 95%% within 1 s: %s.\n",
                     queries, top1, queries, parent_ok, queries, tc[queries / 2], tm[queries / 2],
                     tc[queries - 1], tm[queries - 1], (double)aligned / queries, max_aligned,
                     models, te[queries / 2], models, build_s, misses.len ? misses.data : "none",
                     top1 * 100 >= 95 * queries && tc[queries - 1] < 1.0 ? "met (CPU time)"
                                                                         : "NOT met");
    fputs(r.data, stdout);
    bench_out_dir(out);
    char path[512];
    snprintf(path, sizeof path, "%s/zoo_match.md", out);
    int rc = bench_write_report(path, r.data, r.len, "<!-- notes -->", &err);
    if (rc)
        fprintf(stderr, "bench_zoo_match: %s\n", err.msg);
    loom_buf_free(&r);
    loom_buf_free(&misses);
    for (int i = 0; i < models; i++)
        loom_zoo_sig_free(&all[i].sig);
    free(all);
    free(rk);
    free(tm);
    free(te);
    free(tc);
    loom_zoo_close(z);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_zoo_match: could not remove %s\n", tmp);
    return rc ? 1 : 0;
}
