/* sim/rubick_workload.c — the Rubick experiment's workload: arrivals and
 * run times from the Alibaba GPU trace 2023 pod lists, models and plans
 * from loom's zoo.
 *
 * The models' numbers are libloom rubick's table (src/rubick/models.c):
 * the zoo's models at the published full sizes they are named after,
 * stated in docs/scheduling.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/sim.h"

/* global batch per model */
static const int64_t batches[] = {256, 256, 256, 512, 512, 256, 128, 512, 8192};
#define NMODELS (sizeof batches / sizeof *batches)

/* The zoo's models (libloom rubick's table, in the order of batches). */
const loom_rubick_model_t *loom_sim_rubick_models(size_t *n)
{
    size_t nm;
    const loom_rubick_model_t *m = loom_rubick_models(&nm);
    *n = nm < NMODELS ? nm : NMODELS;
    return m;
}

void loom_sim_rubick_workload_free(loom_sim_rworkload_t *w)
{
    if (!w)
        return;
    free(w->jobs);
    w->jobs = NULL;
    w->n = 0;
}

/* The spec every job gets: 1..8 GPUs, every plan, CPUs and memory from
 * one up to the node's. */
static void base_spec(loom_rubick_spec_t *s, int64_t batch, const loom_sim_rwl_opts_t *o)
{
    memset(s, 0, sizeof *s);
    s->reconfigurable = true;
    s->global_batch = batch;
    s->gpus_min = 1;
    s->gpus_max = 8;
    s->accum_mask = 1 | 2 | 8 | 128 | (1u << 15); /* 1, 2, 4, 8, 16 */
    s->recompute_mask = 3;
    s->zero_mask = 15;
    s->offload_mask = 3;
    s->cpu_min = 1000;
    s->cpu_max = o->node_cpu_milli;
    s->mem_min = 1024;
    s->mem_max = o->node_mem_mib;
}

/* The asked plan for g GPUs: uniform among those that fit, or the best.
 * False if none fits. */
static bool draw_plan(loom_rubick_spec_t *s, const loom_rubick_model_t *m, int g, int64_t cpu,
                      const loom_sim_rwl_opts_t *o, loom_rng_t *rng)
{
    loom_rubick_plan_t fit[128];
    double thr[128];
    size_t nf = 0, best = 0;
    for (int ai = 0; ai < 5; ai++)
        for (int v = 0; v < 16; v++) {
            loom_rubick_plan_t p = {g, 1 << ai, v & 1, (v >> 1) & 3, (v >> 3) & 1};
            if (!loom_rubick_plan_allowed(s, &p))
                continue;
            loom_rubick_config_t c = {p, cpu, 0};
            loom_rubick_estimate_t e;
            loom_rubick_predict(m, o->device, NULL, s->global_batch, &c, &e);
            if (!e.fits || nf == 128)
                continue;
            fit[nf] = p;
            thr[nf] = e.samples_per_s;
            if (thr[nf] > thr[best])
                best = nf;
            nf++;
        }
    if (!nf)
        return false;
    s->asked = fit[o->tuned ? best : loom_rng_below(rng, nf)];
    return true;
}

/* The best plan the model predicts for spec s at g GPUs and cpu milli-CPU
 * with up to mem_max MiB of host memory: *best and its samples/s (0: none
 * fits). */
static double best_plan(const loom_rubick_spec_t *s, const loom_rubick_model_t *m,
                        const loom_rubick_fit_t *fit, const loom_rubick_device_t *d, int g,
                        int64_t cpu, int64_t mem_max, loom_rubick_plan_t *best)
{
    double thr = 0;
    for (int ai = 0; ai < 7; ai++)
        for (int v = 0; v < 16; v++) {
            loom_rubick_plan_t p = {g, 1 << ai, v & 1, (v >> 1) & 3, (v >> 3) & 1};
            if (!loom_rubick_plan_allowed(s, &p))
                continue;
            loom_rubick_config_t c = {p, cpu, mem_max};
            loom_rubick_estimate_t e;
            loom_rubick_predict(m, d, fit, s->global_batch, &c, &e);
            if (e.fits && e.samples_per_s > thr * (1 + 1e-9)) {
                thr = e.samples_per_s;
                *best = p;
            }
        }
    return thr;
}

double loom_sim_rubick_true_rate(const loom_sim_rjob_t *j, const loom_rubick_device_t *d,
                                 const loom_rubick_config_t *c)
{
    loom_rubick_estimate_t e;
    loom_rubick_predict(&j->truth, d, &j->truth_fit, j->spec.global_batch, c, &e);
    return e.samples_per_s;
}

/* Samples/s of job j's asked configuration on its truth. */
static double asked_rate(const loom_sim_rjob_t *j, const loom_rubick_device_t *d)
{
    loom_rubick_config_t c = {j->spec.asked, j->spec.asked_cpu, j->spec.asked_mem};
    return loom_sim_rubick_true_rate(j, d, &c);
}

/* The workload's plan_speedup, cpu_speedup and input_bound, on the truth. */
static void choice_stats(loom_sim_rworkload_t *w, const loom_rubick_device_t *d)
{
    double sp = 0, sc = 0;
    for (size_t i = 0; i < w->n; i++) {
        const loom_sim_rjob_t *j = &w->jobs[i];
        loom_rubick_config_t c = {j->spec.asked, j->spec.asked_cpu, j->spec.asked_mem};
        loom_rubick_estimate_t e;
        loom_rubick_predict(&j->truth, d, &j->truth_fit, j->spec.global_batch, &c, &e);
        double a = e.samples_per_s;
        w->input_bound += a > 0 && e.data_s >= e.step_s;
        loom_rubick_plan_t p;
        double bp = best_plan(&j->spec, &j->truth, &j->truth_fit, d, j->spec.asked.gpus,
                              j->spec.asked_cpu, j->spec.mem_max, &p);
        double bc = best_plan(&j->spec, &j->truth, &j->truth_fit, d, j->spec.asked.gpus,
                              j->spec.cpu_max, j->spec.mem_max, &p);
        sp += a > 0 ? fmax(bp, a) / a : 1;
        sc += a > 0 ? fmax(fmax(bc, bp), a) / a : 1;
    }
    w->plan_speedup = w->n ? sp / (double)w->n : 1;
    w->cpu_speedup = w->n ? sc / (double)w->n : 1;
}

int loom_sim_rubick_plan_aware(const loom_sim_rworkload_t *w, const loom_rubick_device_t *d,
                               loom_sim_rworkload_t *out, loom_err_t *err)
{
    *out = *w;
    out->jobs = calloc(w->n ? w->n : 1, sizeof *out->jobs);
    if (!out->jobs)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    memcpy(out->jobs, w->jobs, w->n * sizeof *w->jobs);
    size_t nm;
    const loom_rubick_model_t *models = loom_rubick_models(&nm);
    for (size_t i = 0; i < w->n; i++) {
        loom_sim_rjob_t *j = &out->jobs[i];
        const loom_rubick_model_t *m = &models[j->model];
        /* the plan the scheduler believes best: its model, fitted to the
         * job's measured steps where it has them (as rubick's) */
        loom_rubick_fit_t fit = {1, 1, 0, 1};
        if (j->spec.nmeasured && loom_rubick_fit(m, d, j->spec.global_batch, j->spec.measured,
                                                 j->spec.nmeasured, &fit, NULL) != LOOM_OK)
            fit = (loom_rubick_fit_t){1, 1, 0, 1};
        loom_rubick_config_t c = {j->spec.asked, j->spec.asked_cpu, 0};
        loom_rubick_estimate_t e;
        loom_rubick_predict(m, d, &fit, j->spec.global_batch, &c, &e);
        loom_rubick_plan_t p = j->spec.asked;
        double b = best_plan(&j->spec, m, &fit, d, j->spec.asked.gpus, j->spec.asked_cpu,
                             j->spec.mem_max, &p);
        if (!(b > e.samples_per_s))
            continue; /* the asked plan is already the best it knows */
        double a = asked_rate(j, d);
        c.plan = p;
        loom_rubick_predict(m, d, &fit, j->spec.global_batch, &c, &e);
        int64_t mem = (int64_t)ceil(e.host_mem_mib);
        loom_sim_rjob_t k = *j;
        k.spec.asked = p;
        k.spec.asked_mem = mem > j->spec.asked_mem ? mem : j->spec.asked_mem;
        double t = asked_rate(&k, d);
        if (!(a > 0 && t > 0))
            continue;
        k.duration_s = j->duration_s * a / t; /* the same samples at the chosen plan, truly */
        *j = k;
    }
    return LOOM_OK;
}

/* Job j's truth (o's truth_drawn, assumed_eff, assumed_cpu). */
static void draw_truth(loom_sim_rjob_t *j, const loom_rubick_model_t *m,
                       const loom_sim_rwl_opts_t *o, loom_rng_t *rng)
{
    double f_eff = 1, f_cpu = 1, f_comm = 1, fixed = 0;
    /* drawn whatever truth_drawn says, so that the rng stays in step */
    double u1 = loom_rng_uniform(rng), u2 = loom_rng_uniform(rng), u3 = loom_rng_uniform(rng),
           u4 = loom_rng_uniform(rng);
    if (o->truth_drawn) {
        f_eff = exp(log(1.5) * (2 * u1 - 1));
        f_cpu = exp(log(2.0) * (2 * u2 - 1));
        f_comm = exp(log(1.5) * (2 * u3 - 1));
        fixed = 0.005 * u4;
    }
    j->truth = *m;
    j->truth.mfu = m->mfu * f_eff / (o->assumed_eff > 0 ? o->assumed_eff : 1);
    j->truth.cpu_s_per_sample =
        m->cpu_s_per_sample * f_cpu / (o->assumed_cpu > 0 ? o->assumed_cpu : 1);
    j->truth_fit = (loom_rubick_fit_t){1, f_comm, fixed, 1};
}

/* Job j's first measured steps on its truth: its asked configuration, the
 * asked plan on one GPU and on twice its GPUs, with twice the accumulation
 * and with the node's CPUs, and the plan the model believes best there;
 * those its spec allows and that fit, each with 2% noise. */
static void measure(loom_sim_rjob_t *j, const loom_rubick_model_t *m, const loom_sim_rwl_opts_t *o,
                    loom_rng_t *rng)
{
    const loom_rubick_spec_t *s = &j->spec;
    int g = s->asked.gpus;
    int64_t per = s->asked_cpu / g;
    loom_rubick_config_t c[6];
    for (int k = 0; k < 6; k++)
        c[k] = (loom_rubick_config_t){s->asked, s->asked_cpu, 0};
    c[1].plan.gpus = 1;
    c[1].cpu_milli = per;
    c[2].plan.gpus = 2 * g;
    c[2].cpu_milli = per * 2 * g > s->cpu_max ? s->cpu_max : per * 2 * g;
    c[3].plan.accum = 2 * s->asked.accum;
    c[4].cpu_milli = s->cpu_max;
    c[5].cpu_milli = s->cpu_max;
    best_plan(s, m, NULL, o->device, g, s->cpu_max, s->mem_max, &c[5].plan);
    j->spec.nmeasured = 0;
    for (int k = 0; k < 6; k++) {
        double n1 = loom_rng_normal(rng), n2 = loom_rng_normal(rng);
        if ((k > 0 && !loom_rubick_plan_allowed(s, &c[k].plan)) ||
            j->spec.nmeasured == LOOM_RUBICK_MEASURED_MAX)
            continue;
        loom_rubick_estimate_t e;
        loom_rubick_predict(&j->truth, o->device, &j->truth_fit, s->global_batch, &c[k], &e);
        if (!e.fits)
            continue;
        loom_rubick_sample_t *x = &j->spec.measured[j->spec.nmeasured++];
        x->config = c[k];
        x->data_s = e.data_s * fmax(0.5, 1 + 0.02 * n2);
        x->step_s =
            fmax(x->data_s, (e.step_s > e.data_s ? e.step_s : e.data_s) * fmax(0.5, 1 + 0.02 * n1));
    }
}

static int cmp_create(const void *x, const void *y)
{
    const loom_sim_task_t *a = *(const loom_sim_task_t *const *)x;
    const loom_sim_task_t *b = *(const loom_sim_task_t *const *)y;
    return a->create_s < b->create_s ? -1 : a->create_s > b->create_s;
}

/* One job from pod t. */
static void make_job(loom_sim_rjob_t *j, const loom_sim_task_t *t, const loom_sim_rwl_opts_t *o,
                     loom_rng_t *rng)
{
    static const int sizes[] = {1, 2, 4, 8};
    static const double size_w[] = {0.4, 0.2, 0.25, 0.15};
    size_t nm;
    const loom_rubick_model_t *models = loom_rubick_models(&nm);
    for (;;) {
        j->model = (size_t)loom_rng_below(rng, NMODELS);
        int g = t->req.num_gpus > 1 && t->req.num_gpus <= 8
                    ? t->req.num_gpus
                    : sizes[loom_rng_weighted(rng, size_w, 4)];
        base_spec(&j->spec, batches[j->model], o);
        /* the pod's CPUs per GPU, at least one, at most the node's share */
        int64_t per = t->req.cpu_milli / (t->req.num_gpus ? t->req.num_gpus : 1);
        int64_t cap = o->node_cpu_milli / 8;
        per = per < 1000 ? 1000 : per > cap ? cap : per;
        int64_t cpu = per * g;
        if (!draw_plan(&j->spec, &models[j->model], g, cpu, o, rng))
            continue;
        loom_rubick_config_t c = {j->spec.asked, cpu, 0};
        loom_rubick_estimate_t e;
        loom_rubick_predict(&models[j->model], o->device, NULL, j->spec.global_batch, &c, &e);
        int64_t mem = (int64_t)ceil(e.host_mem_mib);
        int64_t pod_mem = t->req.mem_mib / (t->req.num_gpus ? t->req.num_gpus : 1) * g;
        mem = pod_mem > mem ? pod_mem : mem;
        mem = mem > o->node_mem_mib ? o->node_mem_mib : mem;
        j->spec.asked_cpu = cpu;
        j->spec.asked_mem = mem;
        /* the runtime finds the model by name, as loomd does */
        snprintf(j->spec.model, sizeof j->spec.model, "%s", models[j->model].name);
        return;
    }
}

int loom_sim_rubick_workload(const loom_sim_trace_t *pods, const loom_sim_rwl_opts_t *o,
                             loom_sim_rworkload_t *out, loom_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (o->count == 0 || !(o->load > 0) || !(o->min_s > 0) || o->max_s < o->min_s || !o->device)
        return loom_err_set(err, LOOM_EINVAL,
                            "rubick workload: expected count > 0, load > 0, 0 < min <= max");
    const loom_sim_task_t **sel = calloc(pods->n ? pods->n : 1, sizeof *sel);
    if (!sel)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    size_t ns = 0;
    for (size_t i = 0; i < pods->n; i++) {
        const loom_sim_task_t *t = &pods->tasks[i];
        if (t->req.num_gpus >= 1 && t->req.gpu_milli == LOOM_SCHED_MILLI && t->create_s > 0 &&
            t->duration_s > 0)
            sel[ns++] = t;
    }
    qsort(sel, ns, sizeof *sel, cmp_create);
    if (ns < o->count) {
        free(sel);
        return loom_err_set(err, LOOM_EINVAL,
                            "rubick workload: the pod list has %zu whole-GPU tasks with creation "
                            "and run times, expected at least %zu",
                            ns, o->count);
    }
    out->jobs = calloc(o->count, sizeof *out->jobs);
    if (!out->jobs) {
        free(sel);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    out->n = o->count;
    loom_rng_t rng, trng, mrng; /* draws, truths, measurement noise */
    loom_rng_init(&rng, o->seed, 22);
    loom_rng_init(&trng, o->seed, 23);
    loom_rng_init(&mrng, o->seed, 24);
    size_t nm;
    const loom_rubick_model_t *models = loom_rubick_models(&nm);
    double gpu_s = 0, t0 = sel[0]->create_s;
    for (size_t i = 0; i < o->count; i++) {
        loom_sim_rjob_t *j = &out->jobs[i];
        make_job(j, sel[i], o, &rng);
        draw_truth(j, &models[j->model], o, &trng);
        if (o->fit)
            measure(j, &models[j->model], o, &mrng);
        j->duration_s = fmin(o->max_s, fmax(o->min_s, sel[i]->duration_s));
        j->submit_s = sel[i]->create_s - t0;
        gpu_s += j->duration_s * j->spec.asked.gpus;
    }
    free(sel);
    /* arrivals compressed so that offered GPU time / (GPUs x span) = load */
    double span = out->jobs[o->count - 1].submit_s;
    out->compress =
        span > 0 ? span * o->load * (o->cluster_gpus > 0 ? o->cluster_gpus : 1) / gpu_s : 1;
    for (size_t i = 0; i < o->count; i++)
        out->jobs[i].submit_s /= out->compress;
    choice_stats(out, o->device);
    return LOOM_OK;
}
