/* From a run to numbers: step-time distribution, warm-up, throughput, CPU
 * utilisation against the kernel's own account, memory peak, time split.
 * Definitions are in docs/profiling.md; this file is their one
 * implementation, used by the report, the run record and --ab. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prof/prof_internal.h"

size_t loom_prof_warmup(const double *t, size_t n)
{
    if (n < 4)
        return 0;
    size_t h = n / 2, m = n - h;
    double *r = malloc(m * sizeof *r);
    if (!r)
        return 0;
    memcpy(r, t + h, m * sizeof *r);
    loom_stats_sort(r, m);
    double med = loom_stats_quantile(r, m, 0.5);
    for (size_t i = 0; i < m; i++)
        r[i] = fabs(t[h + i] - med);
    loom_stats_sort(r, m);
    double mad = 1.4826 * loom_stats_quantile(r, m, 0.5);
    free(r);
    double band = 3 * mad > 0.05 * med ? 3 * mad : 0.05 * med;
    double upper = med + band;
    for (size_t k = 0; k < n; k++)
        if (t[k] <= upper)
            return k;
    return 0; /* unreachable: half of the reference is <= its median */
}

static void dist(const double *t, size_t n, loom_prof_dist_t *d)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    if (n == 0)
        return;
    double *s = malloc(n * sizeof *s);
    if (!s)
        return;
    memcpy(s, t, n * sizeof *s);
    loom_stats_sort(s, n);
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++)
        sum += s[i];
    d->mean = sum / (double)n;
    for (size_t i = 0; i < n; i++)
        sq += (s[i] - d->mean) * (s[i] - d->mean);
    d->stdev = n > 1 ? sqrt(sq / (double)(n - 1)) : 0;
    d->min = s[0];
    d->max = s[n - 1];
    d->p5 = loom_stats_quantile(s, n, 0.05);
    d->p50 = loom_stats_quantile(s, n, 0.50);
    d->p95 = loom_stats_quantile(s, n, 0.95);
    d->p99 = loom_stats_quantile(s, n, 0.99);
    free(s);
}

double loom_prof_cpu_at(const loom_prof_run_t *r, int64_t t)
{
    size_t n = r->nsamples;
    if (n == 0 || t < r->start_ns || t > r->samples[n - 1].t_ns)
        return -1;
    if (t < r->samples[0].t_ns) {
        /* Before the first sample: the tree's CPU time was 0 at fork. */
        const loom_prof_sample_t *b = &r->samples[0];
        return (double)(b->user_ns + b->sys_ns) * (double)(t - r->start_ns) /
               (double)(b->t_ns - r->start_ns);
    }
    size_t lo = 0, hi = n - 1; /* samples[lo].t <= t <= samples[hi].t */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->samples[mid].t_ns <= t)
            lo = mid;
        else
            hi = mid;
    }
    const loom_prof_sample_t *a = &r->samples[lo], *b = &r->samples[hi];
    double ca = (double)(a->user_ns + a->sys_ns), cb = (double)(b->user_ns + b->sys_ns);
    if (b->t_ns == a->t_ns)
        return cb;
    return ca + (cb - ca) * (double)(t - a->t_ns) / (double)(b->t_ns - a->t_ns);
}

void loom_prof_summarize(const loom_prof_run_t *r, loom_prof_summary_t *s)
{
    memset(s, 0, sizeof *s);
    s->wall_s = (double)(r->end_ns - r->start_ns) / 1e9;
    s->startup_s = s->items_per_s = s->cpu_cores_steady = -1;
    s->data_frac = s->copy_frac = s->compute_frac = -1;
    s->nsteps = r->nsteps;
    double *t = r->nsteps ? malloc(r->nsteps * sizeof *t) : NULL;
    if (t) {
        for (size_t i = 0; i < r->nsteps; i++)
            t[i] = (double)(r->steps[i].end_ns - r->steps[i].start_ns) / 1e9;
        s->startup_s = (double)(r->steps[0].start_ns - r->start_ns) / 1e9;
        size_t w = loom_prof_warmup(t, r->nsteps);
        s->warmup_steps = w;
        for (size_t i = 0; i < w; i++)
            s->warmup_s += t[i];
        size_t m = r->nsteps - w;
        dist(t + w, m, &s->steady);
        /* Steady step CPU times, when every steady step carries cpu_ns. */
        size_t nc = 0;
        for (size_t i = w; i < r->nsteps && r->steps[i].cpu_ns >= 0; i++)
            nc++;
        if (nc == m && m > 0) {
            double *c = malloc(m * sizeof *c);
            if (c) {
                for (size_t i = 0; i < m; i++)
                    c[i] = (double)r->steps[w + i].cpu_ns / 1e9;
                dist(c, m, &s->steady_cpu);
                free(c);
            }
        }
        double sum = 0, data = 0, copy = 0;
        int64_t items = 0;
        bool have_items = true, have_data = true, have_copy = true;
        for (size_t i = w; i < r->nsteps; i++) {
            const loom_prof_step_t *st = &r->steps[i];
            sum += t[i];
            have_items &= st->items >= 0;
            have_data &= st->data_ns >= 0;
            have_copy &= st->copy_ns >= 0;
            items += st->items > 0 ? st->items : 0;
            data += st->data_ns > 0 ? (double)st->data_ns / 1e9 : 0;
            copy += st->copy_ns > 0 ? (double)st->copy_ns / 1e9 : 0;
        }
        if (sum > 0) {
            s->steps_per_s = (double)m / sum;
            if (have_items)
                s->items_per_s = (double)items / sum;
            if (have_data || have_copy) {
                s->data_frac = have_data ? data / sum : -1;
                s->copy_frac = have_copy ? copy / sum : -1;
                s->compute_frac = 1 - (have_data ? data / sum : 0) - (have_copy ? copy / sum : 0);
            }
            double c0 = loom_prof_cpu_at(r, r->steps[w].start_ns);
            double c1 = loom_prof_cpu_at(r, r->steps[r->nsteps - 1].end_ns);
            int64_t span = r->steps[r->nsteps - 1].end_ns - r->steps[w].start_ns;
            if (c0 >= 0 && c1 >= 0 && span > 0)
                s->cpu_cores_steady = (c1 - c0) / (double)span;
        }
        free(t);
    }
    s->kernel_cpu_s = (double)(r->rusage_user_ns + r->rusage_sys_ns) / 1e9;
    s->profiler_cpu_share =
        s->kernel_cpu_s > 0 ? (double)r->loom_cpu_ns / 1e9 / s->kernel_cpu_s : -1;
    if (s->wall_s > 0) {
        s->sampler_cores = (double)r->sampler_cpu_ns / 1e9 / s->wall_s;
        s->profiler_cores = (double)r->loom_cpu_ns / 1e9 / s->wall_s;
    }
    if (r->nsamples > 0) {
        const loom_prof_sample_t *last = &r->samples[r->nsamples - 1];
        s->sampled_cpu_s = (double)(last->user_ns + last->sys_ns) / 1e9;
        s->user_frac = s->sampled_cpu_s > 0 ? (double)last->user_ns / 1e9 / s->sampled_cpu_s : 0;
        s->cpu_cores_run = s->wall_s > 0 ? s->sampled_cpu_s / s->wall_s : 0;
        if (s->kernel_cpu_s > 0)
            s->cpu_error = (s->sampled_cpu_s - s->kernel_cpu_s) / s->kernel_cpu_s;
        for (size_t i = 0; i < r->nsamples; i++)
            if ((double)r->samples[i].rss_bytes > s->rss_peak_bytes)
                s->rss_peak_bytes = (double)r->samples[i].rss_bytes;
        if (r->nsamples > 1)
            s->interval_achieved_s =
                (double)(last->t_ns - r->samples[0].t_ns) / 1e9 / (double)(r->nsamples - 1);
    }
}
