/* bench_zoo_match: matching one model against a repository of 10,000
 * stored models (issue 23's target: under one second on one core).
 *
 *   build/bench_zoo_match [--models N] [--queries Q] [--out DIR]
 *
 * Builds a repository of N distinct architectures (MLPs of 2 to 40 layers,
 * widths 16 to 1024, some with a skip connection: up to ~120 layers each)
 * through the public API (loom_zoo_add: ONNX files parsed, objects
 * content-addressed, rows in SQLite), then times loom_zoo_match for Q new
 * architectures on this thread (one core): the coarse pass over every row
 * and exact alignment of the best 64. For comparison it also times the
 * exhaustive alternative, exact alignment against every stored signature
 * already in memory. Writes DIR/zoo_match.md. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "loom/zoo.h"
#include "notes.h"
#define fail_msg(...) abort()
#include "../tests/unit/zoo_graphs.h"

static void write_all(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(d, 1, n, f) != n || fclose(f)) {
        fprintf(stderr, "bench_zoo_match: cannot write %s\n", path);
        exit(1);
    }
}

static int random_arch(loom_rng_t *rng, int64_t *w)
{
    int n = 3 + (int)loom_rng_below(rng, 39);
    for (int i = 0; i < n; i++)
        w[i] = 16 << loom_rng_below(rng, 7);
    w[0] = 64;
    w[n - 1] = 10;
    return n;
}

static void make_onnx(const char *path, loom_rng_t *rng)
{
    int64_t w[64];
    int n = random_arch(rng, w);
    int res = loom_rng_below(rng, 2) ? 1 + (int)loom_rng_below(rng, (uint64_t)(n - 2)) : 0;
    pbw_t pb = zoo_mlp(w, n, res);
    write_all(path, pb.d, pb.n);
    free(pb.d);
}

static double now(void)
{
    return (double)loom_time_mono_ns() / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void build(loom_zoo_t *z, const char *tmp, int models, loom_rng_t *rng)
{
    char onnx[512], weights[512];
    snprintf(weights, sizeof weights, "%s/empty.lw", tmp);
    const char *hdr = "{\"tensors\":[],\"meta\":{}}";
    char file[64] = "LOOMWTS1";
    file[8] = (char)strlen(hdr);
    memcpy(file + 16, hdr, strlen(hdr));
    write_all(weights, file, 16 + strlen(hdr));
    snprintf(onnx, sizeof onnx, "%s/m.onnx", tmp);
    for (int i = 0; i < models; i++) {
        make_onnx(onnx, rng);
        loom_zoo_entry_in_t in = {.model_path = onnx,
                                  .weights_path = weights,
                                  .task = "bench",
                                  .metric_name = "accuracy",
                                  .metric = loom_rng_uniform(rng)};
        int64_t id;
        loom_err_t err;
        if (loom_zoo_add(z, &in, &id, &err)) {
            fprintf(stderr, "bench_zoo_match: %s\n", err.msg);
            exit(1);
        }
    }
}

/* Exact alignment against every stored signature (no pruning). */
static double exhaustive(loom_zoo_t *z, const loom_zoo_sig_t *q, int models)
{
    loom_zoo_sig_t *all = calloc((size_t)models, sizeof *all);
    char path[256];
    loom_err_t err;
    json_t *list;
    if (!all || loom_zoo_list(z, NULL, NULL, 0, &list, &err))
        exit(1);
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        snprintf(path, sizeof path, "%s", json_string_value(json_object_get(e, "model_path")));
        if (i < (size_t)models && loom_zoo_sig_load(path, &all[i], &err))
            exit(1);
    }
    double t0 = now(), best = 0;
    for (int k = 0; k < models && k < (int)json_array_size(list); k++) {
        double s = loom_zoo_similarity(q, &all[k]);
        best = s > best ? s : best;
    }
    double t = now() - t0;
    for (int k = 0; k < models; k++)
        loom_zoo_sig_free(&all[k]);
    free(all);
    json_decref(list);
    return best < 0 ? -1 : t;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"models", required_argument, NULL, 'n'},
                                         {"queries", required_argument, NULL, 'q'},
                                         {"out", required_argument, NULL, 'o'},
                                         {NULL, 0, NULL, 0}};
    int models = 10000, queries = 20, c;
    const char *out = BENCH_OUT_DEFAULT;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'n')
            models = atoi(optarg);
        else if (c == 'q')
            queries = atoi(optarg);
        else if (c == 'o')
            out = optarg;
        else {
            printf("usage: bench_zoo_match [--models N] [--queries Q] [--out DIR]\n");
            return 2;
        }
    }
    if (models < 1 || queries < 1 || queries > 1000) {
        fprintf(stderr, "bench_zoo_match: --models >= 1, --queries 1 to 1000\n");
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
    loom_rng_init(&rng, 42, 0);
    double t0 = now();
    build(z, tmp, models, &rng);
    double build_s = now() - t0;
    double *tm = calloc((size_t)queries, sizeof *tm), exh = 0;
    long aligned = 0;
    char qpath[256];
    snprintf(qpath, sizeof qpath, "%s/q.onnx", tmp);
    for (int i = 0; i < queries; i++) {
        make_onnx(qpath, &rng);
        loom_zoo_sig_t q;
        json_t *res;
        if (loom_zoo_sig_load(qpath, &q, &err))
            return 1;
        loom_zoo_match_opts_t o = {.task = "bench", .band = -1, .min_similarity = -1};
        double a = now();
        if (loom_zoo_match(z, &q, &o, &res, &err)) {
            fprintf(stderr, "bench_zoo_match: %s\n", err.msg);
            return 1;
        }
        tm[i] = now() - a;
        aligned += (long)json_integer_value(json_object_get(res, "aligned"));
        json_decref(res);
        if (i == 0)
            exh = exhaustive(z, &q, models);
        loom_zoo_sig_free(&q);
    }
    qsort(tm, (size_t)queries, sizeof *tm, cmp_d);
    struct utsname u;
    uname(&u);
    char when[32];
    loom_time_format_rfc3339(loom_time_real_ns(), when);
    loom_buf_t r = LOOM_BUF_INIT;
    loom_buf_appendf(&r,
                     "# Zoo matching: one model against %d stored models\n\n"
                     "`build/bench_zoo_match --models %d --queries %d --out %s` on %s (%s), %s.\n"
                     "One thread (one core); the machine was shared with five developers' "
                     "builds and tests, so times are upper bounds.\n\n"
                     "| what | seconds |\n|---|---|\n"
                     "| loom_zoo_match, median of %d queries | %.4f |\n"
                     "| loom_zoo_match, slowest query | %.4f |\n"
                     "| exhaustive exact alignment, all %d (signatures in memory) | %.4f |\n"
                     "| building the repository (loom_zoo_add x %d) | %.1f |\n\n"
                     "Exact alignments per query: %.1f on average (the coarse bound prunes the "
                     "rest).\nTarget: under 1 s per match: %s.\n",
                     models, models, queries, out, u.nodename, u.machine, when, queries,
                     tm[queries / 2], tm[queries - 1], models, exh, models, build_s,
                     (double)aligned / queries, tm[queries - 1] < 1.0 ? "met" : "NOT met");
    fputs(r.data, stdout);
    bench_out_dir(out);
    char path[512];
    snprintf(path, sizeof path, "%s/zoo_match.md", out);
    int rc = bench_write_report(path, r.data, r.len, "<!-- notes -->", &err);
    if (rc)
        fprintf(stderr, "bench_zoo_match: %s\n", err.msg);
    loom_buf_free(&r);
    free(tm);
    loom_zoo_close(z);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_zoo_match: could not remove %s\n", tmp);
    return rc ? 1 : 0;
}
