/* bench/rubick_fit.c — the Rubick performance model against measured CPU
 * steps of the zoo (workloads/models/train_plan.py: gloo workers, gradient
 * accumulation, recomputation).
 *
 * For each model in the JSONL files: the model's coefficients are fitted
 * (loom_rubick_fit) to a few plans (one worker with accumulation 1 and 4,
 * one with recomputation, two workers with accumulation 1), as Rubick
 * profiles a handful of configurations, and the other plans are
 * predicted; then leave-one-out over all plans. A plan's time is its
 * fastest step (step_s_min), the least disturbed by other work on a shared
 * machine. Prints a markdown report.
 *
 * The device is one CPU core per worker: peak FLOP/s from
 * workloads/devices/cpu-local.json's flops_fp32, a nominal 1 GB/s for gloo
 * over loopback (the fitted communication coefficient scales it). The
 * model's FLOPs per sample are nominal too (the compute coefficient scales
 * them); its micro-batch half-efficiency is taken as 1 sample.
 *
 * usage: bench_rubick_fit FILE.jsonl... */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "loom/rubick.h"

#define MAX_RUNS 64

typedef struct meas {
    char model[32];
    double params;
    int64_t batch;
    loom_rubick_sample_t s;
} meas_t;

static int load(const char *path, meas_t *m, size_t *n, loom_err_t *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return loom_err_errno(err, LOOM_EIO, errno, "%s", path);
    char line[4096];
    int rc = LOOM_OK;
    while (rc == LOOM_OK && fgets(line, sizeof line, f) && *n < MAX_RUNS) {
        json_t *j;
        if ((rc = loom_json_parse(line, strlen(line), path, 4, &j, err)))
            break;
        const char *name = "";
        int64_t w = 0, a = 0;
        bool rcmp = false;
        meas_t *x = &m[*n];
        if (!(rc = loom_json_get_string(j, "model", true, "", &name, err)) &&
            !(rc = loom_json_get_number(j, "params", true, "", &x->params, err)) &&
            !(rc = loom_json_get_int(j, "global_batch", true, "", 1, 1 << 20, &x->batch, err)) &&
            !(rc = loom_json_get_int(j, "workers", true, "", 1, 64, &w, err)) &&
            !(rc = loom_json_get_int(j, "accumulation", true, "", 1, 64, &a, err)) &&
            !(rc = loom_json_get_bool(j, "recompute", true, "", &rcmp, err)) &&
            !(rc = loom_json_get_number(j, "step_s_min", true, "", &x->s.step_s, err))) {
            snprintf(x->model, sizeof x->model, "%s", name);
            x->s.config = (loom_rubick_config_t){{(int)w, (int)a, rcmp, 0, false}, 1000 * w, 0};
            x->s.data_s = 0; /* loading not measured */
            (*n)++;
        }
        json_decref(j);
    }
    fclose(f);
    return rc;
}

static bool in_fit_set(const loom_rubick_plan_t *p)
{
    return (p->gpus == 1 && !p->recompute && (p->accum == 1 || p->accum == 4)) ||
           (p->gpus == 1 && p->recompute && p->accum == 1) ||
           (p->gpus == 2 && !p->recompute && p->accum == 1);
}

static double predict(const loom_rubick_model_t *mo, const loom_rubick_device_t *d,
                      const loom_rubick_fit_t *f, const meas_t *x)
{
    loom_rubick_estimate_t e;
    loom_rubick_predict(mo, d, f, x->batch, &x->s.config, &e);
    return e.step_s;
}

static void report(const char *name, const meas_t *m, size_t n, const loom_rubick_device_t *d)
{
    loom_rubick_model_t mo = {.name = name,
                              .params = m[0].params,
                              .flops_per_sample = 1e9,
                              .act_bytes = 1,
                              .recompute_keep = 1,
                              .mbs_half = 1,
                              .mfu = 1};
    loom_rubick_sample_t fit_s[MAX_RUNS], loo[MAX_RUNS];
    size_t nf = 0;
    for (size_t i = 0; i < n; i++)
        if (in_fit_set(&m[i].s.config.plan))
            fit_s[nf++] = m[i].s;
    loom_rubick_fit_t f;
    loom_err_t err;
    if (loom_rubick_fit(&mo, d, m[0].batch, fit_s, nf, &f, &err)) {
        printf("%s: %s\n\n", name, err.msg);
        return;
    }
    printf("### %s (%.1f M parameters, global batch %lld)\n\n", name, m[0].params / 1e6,
           (long long)m[0].batch);
    printf("Fitted on %zu plans: compute x %.3f, communication x %.3f, fixed %.3f s.\n\n", nf,
           f.comp, f.comm, f.fixed_s);
    printf("| workers | accumulation | recompute | measured (s) | predicted (s) | error | "
           "leave-one-out predicted (s) | error |\n|---|---|---|---|---|---|---|---|\n");
    double se = 0, sl = 0;
    size_t ne = 0;
    for (size_t i = 0; i < n; i++) {
        const loom_rubick_plan_t *p = &m[i].s.config.plan;
        double pr = predict(&mo, d, &f, &m[i]), meas = m[i].s.step_s;
        size_t nl = 0;
        for (size_t k = 0; k < n; k++)
            if (k != i)
                loo[nl++] = m[k].s;
        loom_rubick_fit_t fl;
        double pl = loom_rubick_fit(&mo, d, m[0].batch, loo, nl, &fl, &err)
                        ? NAN
                        : predict(&mo, d, &fl, &m[i]);
        bool fitted = in_fit_set(p);
        printf("| %d | %d | %s | %.3f | %.3f | %+.1f%%%s | %.3f | %+.1f%% |\n", p->gpus, p->accum,
               p->recompute ? "yes" : "no", meas, pr, 100 * (pr - meas) / meas,
               fitted ? " (fit)" : "", pl, 100 * (pl - meas) / meas);
        if (!fitted) {
            se += fabs(pr - meas) / meas;
            ne++;
        }
        sl += fabs(pl - meas) / meas;
    }
    printf("\nMean absolute error: %.1f%% over the %zu plans not fitted; leave-one-out %.1f%% over "
           "all %zu.\n\n",
           ne ? 100 * se / (double)ne : 0, ne, 100 * sl / (double)n, n);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_rubick_fit FILE.jsonl...\n");
        return 2;
    }
    static meas_t m[MAX_RUNS];
    size_t n = 0;
    loom_err_t err;
    for (int i = 1; i < argc; i++)
        if (load(argv[i], m, &n, &err)) {
            fprintf(stderr, "bench_rubick_fit: %s\n", err.msg);
            return 1;
        }
    json_t *dev;
    double flops = 0;
    if (loom_json_load_file("workloads/devices/cpu-local.json", &dev, &err) ||
        loom_json_get_number(dev, "flops_fp32", true, "", &flops, &err)) {
        fprintf(stderr, "bench_rubick_fit: %s\n", err.msg);
        return 1;
    }
    json_decref(dev);
    loom_rubick_device_t d = {flops, 25e9, 1e9, 1e9, 1e-9};
    for (size_t i = 0; i < n;) {
        size_t k = i;
        while (k < n && strcmp(m[k].model, m[i].model) == 0)
            k++;
        report(m[i].model, m + i, k - i, &d);
        i = k;
    }
    return 0;
}
