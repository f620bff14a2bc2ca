/* rubick/perfmodel.c — a training job's step time and memory per (plan,
 * resources), and its fit to measured steps.
 *
 * The model is Rubick's in shape (compute, communication and host terms,
 * each from the plan) with loom's numbers:
 * - compute: the global batch's FLOPs split over the GPUs, at the model's
 *   best efficiency scaled by the micro-batch (mbs / (mbs + mbs_half): small
 *   micro-batches leave the GPU idle); recomputation runs the forward pass
 *   twice (x 4/3 of forward + backward);
 * - communication: a ring all-reduce of the fp16 gradients once per step,
 *   2 (n-1)/n x 2P bytes over the link; ZeRO-3 also all-gathers the
 *   parameters in every micro-batch's forward and backward (2 x 2 (n-1)/n x
 *   2P x accumulation steps), so it costs most with accumulation;
 * - host: ZeRO-Offload moves gradients out and parameters back over the
 *   host link and runs Adam on the job's CPUs; input loading needs
 *   cpu_s_per_sample core-seconds a sample and overlaps the GPU (the step is
 *   the longer of the two);
 * - memory per GPU: mixed-precision Adam's 2 + 2 + 12 bytes a parameter
 *   (weights, gradients, optimizer states), sharded over the GPUs by ZeRO
 *   stage 3, 2 and 1 respectively, optimizer states on the host with
 *   offload; activations per micro-batch, a share of them with
 *   recomputation.
 * Three coefficients (compute, communication, and a fixed cost per
 * micro-batch: framework and launch overhead, which makes accumulation cost
 * more than its FLOPs) are then fitted to a few measured steps by
 * non-negative least squares, as Rubick fits its model from a handful of
 * profiling runs. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/rubick.h"

#define GPU_MEM_USABLE 0.9 /* the rest: CUDA context, allocator slack */

static int device_from_json(const json_t *j, const char *name, loom_rubick_device_t *out,
                            loom_err_t *err)
{
    memset(out, 0, sizeof *out);
    out->adam_s_per_param = 2e-9; /* ~ 0.5 G params/s on one core, vectorised Adam */
    double flops = 0;
    int rc = LOOM_OK;
    if (!json_is_object(j))
        rc = loom_err_set(err, LOOM_EINVAL, "found %s, expected an object", loom_json_type_name(j));
    if (rc == LOOM_OK &&
        (rc = loom_json_get_number(j, "flops_half", false, "", &flops, err)) == LOOM_OK &&
        flops <= 0)
        rc = loom_json_get_number(j, "flops_fp32", true, "", &flops, err);
    out->flops = flops;
    if (rc == LOOM_OK)
        rc = loom_json_get_number(j, "memory_bytes", true, "", &out->mem_bytes, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_number(j, "link_bandwidth", true, "", &out->link_bw, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_number(j, "host_bandwidth", true, "", &out->host_bw, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_number(j, "adam_s_per_param", false, "", &out->adam_s_per_param, err);
    if (rc)
        return loom_err_prefix(err, "%s", name);
    if (!(out->flops > 0 && out->mem_bytes > 0 && out->link_bw > 0 && out->host_bw > 0 &&
          out->adam_s_per_param > 0) ||
        !(isfinite(out->flops) && isfinite(out->mem_bytes) && isfinite(out->link_bw) &&
          isfinite(out->host_bw) && isfinite(out->adam_s_per_param)))
        return loom_err_set(err, LOOM_EINVAL,
                            "%s: expected positive flops_half or flops_fp32, memory_bytes, "
                            "link_bandwidth and host_bandwidth",
                            name);
    return LOOM_OK;
}

int loom_rubick_device_parse(const char *text, size_t len, const char *name,
                             loom_rubick_device_t *out, loom_err_t *err)
{
    json_t *j;
    int rc = loom_json_parse(text, len, name, 0, &j, err);
    if (rc)
        return rc;
    rc = device_from_json(j, name, out, err);
    json_decref(j);
    return rc;
}

int loom_rubick_device_load(const char *name_or_path, loom_rubick_device_t *out, loom_err_t *err)
{
    /* A bare name ("h200") is a device loom ships (loom_data_path), so the
     * simulator works from any directory; anything else is a path. */
    char path[4096];
    size_t n = strlen(name_or_path);
    if (strchr(name_or_path, '/') || (n > 5 && strcmp(name_or_path + n - 5, ".json") == 0)) {
        if (n >= sizeof path)
            return loom_err_set(err, LOOM_EINVAL, "device path too long: '%s'", name_or_path);
        memcpy(path, name_or_path, n + 1);
    } else {
        char dir[4096];
        int rc = loom_data_path("devices", dir, sizeof dir, err);
        if (rc)
            return rc;
        if ((size_t)snprintf(path, sizeof path, "%s/%s.json", dir, name_or_path) >= sizeof path)
            return loom_err_set(err, LOOM_EINVAL, "device name too long: '%s'", name_or_path);
    }
    json_t *j;
    int rc = loom_json_load_file(path, &j, err);
    if (rc)
        return rc;
    rc = device_from_json(j, path, out, err);
    json_decref(j);
    return rc;
}

/* Bytes each GPU holds: model states and activations. */
static double gpu_bytes(const loom_rubick_model_t *m, const loom_rubick_plan_t *p, double mbs)
{
    double n = p->gpus, P = m->params;
    double w = 2 * P / (p->zero >= 3 ? n : 1);
    double g = 2 * P / (p->zero >= 2 ? n : 1);
    double o = p->offload ? 0 : 12 * P / (p->zero >= 1 ? n : 1);
    double act = mbs * m->act_bytes * (p->recompute ? m->recompute_keep : 1);
    return w + g + o + act;
}

void loom_rubick_predict(const loom_rubick_model_t *m, const loom_rubick_device_t *d,
                         const loom_rubick_fit_t *fit, int64_t batch, const loom_rubick_config_t *c,
                         loom_rubick_estimate_t *out)
{
    memset(out, 0, sizeof *out);
    const loom_rubick_plan_t *p = &c->plan;
    if (p->gpus < 1 || p->accum < 1 || batch < 1 || batch % ((int64_t)p->gpus * p->accum) != 0 ||
        (p->offload && p->zero == 0) || c->cpu_milli <= 0)
        return;
    double n = p->gpus, P = m->params, B = (double)batch;
    double mbs = B / (n * p->accum);
    double eff = m->mfu * mbs / (mbs + m->mbs_half);
    out->compute_s = B / n * m->flops_per_sample * (p->recompute ? 4.0 / 3 : 1) / (d->flops * eff);
    if (p->gpus > 1) {
        double ring = 2 * (n - 1) / n * 2 * P / d->link_bw;
        out->comm_s = ring + (p->zero == 3 ? 2 * ring * p->accum : 0);
    }
    double cores = (double)c->cpu_milli / 1000;
    if (p->offload)
        out->host_s = 4 * P / n / d->host_bw + P / n * d->adam_s_per_param / (cores / n);
    out->data_s = B * m->cpu_s_per_sample / cores * (fit && fit->data > 0 ? fit->data : 1);
    out->gpu_mem_bytes = gpu_bytes(m, p, mbs);
    out->host_mem_mib = n * m->host_base_mib + (p->offload ? 16 * P / 1048576.0 : 0);
    const loom_rubick_fit_t unit = {1, 1, 0, 1};
    if (!fit)
        fit = &unit;
    double gpu = fit->comp * out->compute_s + fit->comm * (out->comm_s + out->host_s) +
                 fit->fixed_s * p->accum;
    out->step_s = fmax(gpu, out->data_s);
    out->fits = out->gpu_mem_bytes <= GPU_MEM_USABLE * d->mem_bytes &&
                (c->mem_mib <= 0 || out->host_mem_mib <= (double)c->mem_mib) && out->step_s > 0;
    out->samples_per_s = out->fits ? B / out->step_s : 0;
}

/* Least squares over the free coefficients (mask bit 0 comp, 1 comm, 2
 * fixed), the others held at {1, 1, 0}. Returns the sum of squared
 * residuals, or -1 when the free ones cannot be told apart or come out
 * negative. */
static double solve(const double (*x)[3], const double *t, size_t n, unsigned mask, double *coef)
{
    const double hold[3] = {1, 1, 0};
    int idx[3], k = 0;
    for (int i = 0; i < 3; i++)
        if (mask >> i & 1)
            idx[k++] = i;
    double a[3][4] = {{0}};
    for (size_t s = 0; s < n; s++) {
        double r = t[s];
        for (int i = 0; i < 3; i++)
            if (!(mask >> i & 1))
                r -= hold[i] * x[s][i];
        for (int i = 0; i < k; i++) {
            for (int j = 0; j < k; j++)
                // cppcheck-suppress uninitvar ; i, j < k, and idx[0..k) is set above
                a[i][j] += x[s][idx[i]] * x[s][idx[j]];
            a[i][k] += x[s][idx[i]] * r;
        }
    }
    for (int col = 0; col < k; col++) { /* Gauss-Jordan with partial pivoting */
        int piv = col;
        for (int r = col + 1; r < k; r++)
            if (fabs(a[r][col]) > fabs(a[piv][col]))
                piv = r;
        if (fabs(a[piv][col]) < 1e-12 * (1 + fabs(a[col][col])) || a[piv][col] == 0)
            return -1;
        for (int j = 0; j <= k; j++) {
            double tmp = a[col][j];
            a[col][j] = a[piv][j];
            a[piv][j] = tmp;
        }
        for (int r = 0; r < k; r++) {
            if (r == col)
                continue;
            double f = a[r][col] / a[col][col];
            for (int j = col; j <= k; j++)
                a[r][j] -= f * a[col][j];
        }
    }
    for (int i = 0; i < 3; i++)
        coef[i] = hold[i];
    for (int i = 0; i < k; i++) {
        coef[idx[i]] = a[i][k] / a[i][i];
        if (coef[idx[i]] < 0)
            return -1;
    }
    double ssr = 0;
    for (size_t s = 0; s < n; s++) {
        double e = t[s] - (coef[0] * x[s][0] + coef[1] * x[s][1] + coef[2] * x[s][2]);
        ssr += e * e;
    }
    return ssr;
}

int loom_rubick_fit(const loom_rubick_model_t *m, const loom_rubick_device_t *d, int64_t batch,
                    const loom_rubick_sample_t *s, size_t n, loom_rubick_fit_t *out,
                    loom_err_t *err)
{
    enum { MAX_SAMPLES = 4096 };
    if (n == 0 || n > MAX_SAMPLES)
        return loom_err_set(err, LOOM_EINVAL, "fit: %zu samples, expected 1..%d", n, MAX_SAMPLES);
    double(*x)[3] = calloc(n, sizeof *x);
    double *t = calloc(n, sizeof *t);
    if (!x || !t) {
        free(x);
        free(t);
        return loom_err_set(err, LOOM_ENOMEM, "fit: out of memory");
    }
    int rc = LOOM_OK;
    size_t k = 0, nd = 0; /* k: samples for the GPU terms */
    double data = 0;
    for (size_t i = 0; i < n && rc == LOOM_OK; i++) {
        loom_rubick_estimate_t e;
        loom_rubick_predict(m, d, NULL, batch, &s[i].config, &e);
        if (e.step_s <= 0 || !(s[i].step_s > 0) || !isfinite(s[i].step_s) || !(s[i].data_s >= 0) ||
            !isfinite(s[i].data_s))
            rc = loom_err_set(err, LOOM_EINVAL,
                              "fit: sample %zu: expected a well-formed plan, a positive step "
                              "time and a loading time >= 0",
                              i);
        if (s[i].data_s > 0 && e.data_s > 0) {
            data += s[i].data_s / e.data_s;
            nd++;
        }
        if (s[i].data_s > 0 && s[i].step_s <= s[i].data_s * 1.02)
            continue; /* bound by input loading: the GPU terms are hidden */
        x[k][0] = e.compute_s;
        x[k][1] = e.comm_s + e.host_s;
        x[k][2] = s[i].config.plan.accum; /* the fixed cost is per micro-batch */
        t[k++] = s[i].step_s;
    }
    data = nd ? data / (double)nd : 1;
    if (rc == LOOM_OK && k == 0) { /* every step waited on loading */
        *out = (loom_rubick_fit_t){1, 1, 0, data};
        free(x);
        free(t);
        return LOOM_OK;
    }
    n = k;
    double best = DBL_MAX, coef[3];
    /* every subset of free coefficients, the full one first */
    static const unsigned masks[] = {7, 3, 5, 6, 1, 2, 4};
    for (size_t i = 0; rc == LOOM_OK && i < sizeof masks / sizeof *masks; i++) {
        double c[3];
        double ssr = solve((const double(*)[3])x, t, n, masks[i], c);
        if (ssr >= 0 && ssr < best * (1 - 1e-9)) {
            best = ssr;
            memcpy(coef, c, sizeof coef);
        }
    }
    if (rc == LOOM_OK && best == DBL_MAX)
        rc = loom_err_set(err, LOOM_EINVAL, "fit: the samples fit no non-negative coefficients");
    if (rc == LOOM_OK)
        *out = (loom_rubick_fit_t){coef[0], coef[1], coef[2], data};
    free(x);
    free(t);
    return rc;
}
