/* The run record (run.json, steps.csv, samples.csv), the report
 * (report.md) and the figures (cpu.svg here; steps.svg and roofline.svg in
 * plot.c) of one profiled run, plus
 * the summary of the CUPTI tracer's records (kernels.csv) by kernel class.
 * Formats are in docs/profiling.md, "Output". */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "prof/prof_internal.h"

/* ------------------------------------------------------------------ kernels */

/* Kernel classes by name; the first pattern that occurs in the name wins. */
static const struct {
    const char *pattern, *cls;
} kernel_classes[] = {
    {"conv", "convolution"},
    {"winograd", "convolution"},
    {"implicit", "convolution"},
    {"gemm", "gemm"},
    {"gemv", "gemm"},
    {"matmul", "gemm"},
    {"xmma", "gemm"},
    {"cutlass", "gemm"},
    {"softmax", "softmax"},
    {"norm", "normalization"},
    {"reduce", "reduction"},
    {"elementwise", "elementwise"},
    {"vectorized", "elementwise"},
    {"pool", "pooling"},
    {"embedding", "embedding"},
    {"index", "indexing"},
    {"copy", "copy-kernel"},
};

static const char *kernel_class(const char *name)
{
    char low[256];
    size_t i = 0;
    for (; i < sizeof low - 1 && name[i]; i++)
        low[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
    low[i] = '\0';
    for (size_t k = 0; k < sizeof kernel_classes / sizeof kernel_classes[0]; k++)
        if (strstr(low, kernel_classes[k].pattern))
            return kernel_classes[k].cls;
    return "other";
}

static void add_to(json_t *by, const char *key, double secs, int64_t bytes)
{
    json_t *o = json_object_get(by, key);
    if (!o) {
        o = json_pack("{s:I,s:f,s:I}", "count", (json_int_t)0, "total_s", 0.0, "bytes",
                      (json_int_t)0);
        if (!o || json_object_set_new(by, key, o))
            return;
    }
    json_object_set_new(o, "count",
                        json_integer(json_integer_value(json_object_get(o, "count")) + 1));
    json_object_set_new(o, "total_s",
                        json_real(json_real_value(json_object_get(o, "total_s")) + secs));
    json_object_set_new(o, "bytes",
                        json_integer(json_integer_value(json_object_get(o, "bytes")) + bytes));
}

/* Reads one unsigned decimal field ending at ',' (consumed); false if it is
 * not one or does not fit. */
static bool csv_u63(const char **p, const char *end, int64_t *out)
{
    const char *q = *p;
    int64_t v = 0;
    if (q >= end || *q < '0' || *q > '9')
        return false;
    while (q < end && *q >= '0' && *q <= '9') {
        if (v > (INT64_MAX - (*q - '0')) / 10)
            return false;
        v = v * 10 + (*q++ - '0');
    }
    if (q >= end || *q != ',')
        return false;
    *p = q + 1;
    *out = v;
    return true;
}

/* One record line: kind,start_ns,end_ns,bytes,device,stream,name. */
static bool kernel_line(const char *p, const char *end, char kind[32], int64_t v[5], char name[256])
{
    size_t k = 0;
    while (p < end && *p != ',') {
        if (k >= 31 || !((*p >= 'a' && *p <= 'z') || *p == '_'))
            return false;
        kind[k++] = *p++;
    }
    if (k == 0 || p >= end)
        return false;
    kind[k] = '\0';
    p++;
    for (int i = 0; i < 5; i++)
        if (!csv_u63(&p, end, &v[i]))
            return false;
    if (v[1] < v[0])
        return false;
    size_t n = (size_t)(end - p) < 255 ? (size_t)(end - p) : 255;
    memcpy(name, p, n);
    name[n] = '\0';
    return true;
}

json_t *prof_kernels_parse(const char *text, size_t len)
{
    json_t *k = json_object(), *by_class = json_object(), *by_kind = json_object();
    size_t records = 0, bad = 0;
    const char *p = text, *end = text + len;
    bool header = true;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (header) {
            header = false; /* the first line names the columns */
        } else if (le > p) {
            char kind[32], name[256];
            int64_t v[5];
            if (!kernel_line(p, le, kind, v, name)) {
                bad++;
            } else {
                records++;
                double secs = (double)(v[1] - v[0]) / 1e9;
                add_to(by_kind, kind, secs, v[2]);
                if (strcmp(kind, "kernel") == 0)
                    add_to(by_class, kernel_class(name), secs, 0);
            }
        }
        p = nl ? nl + 1 : end;
    }
    json_object_set_new(k, "records", json_integer((json_int_t)records));
    json_object_set_new(k, "malformed_lines", json_integer((json_int_t)bad));
    json_object_set_new(k, "by_kind", by_kind);
    json_object_set_new(k, "by_class", by_class);
    return k;
}

/* ------------------------------------------------- GPU busy: CUPTI vs NVML */

typedef struct span {
    int64_t a, b;
} span_t;

static int span_cmp(const void *x, const void *y)
{
    const span_t *p = x, *q = y;
    return (p->a > q->a) - (p->a < q->a);
}

/* The length of the union of the spans (sorted by start) clipped to
 * [lo, hi]: the time at least one kernel ran. */
static int64_t busy_within(const span_t *s, size_t n, int64_t lo, int64_t hi)
{
    int64_t busy = 0, ca = 0, cb = 0;
    bool open = false;
    for (size_t i = 0; i < n; i++) {
        int64_t a = s[i].a > lo ? s[i].a : lo, b = s[i].b < hi ? s[i].b : hi;
        if (b <= a)
            continue;
        if (open && a <= cb) {
            if (b > cb)
                cb = b;
            continue;
        }
        if (open)
            busy += cb - ca;
        ca = a;
        cb = b;
        open = true;
    }
    if (open)
        busy += cb - ca;
    return busy;
}

static json_t *not_compared(const char *why)
{
    return json_pack("{s:b,s:s}", "compared", 0, "why", why);
}

json_t *prof_gpu_busy(const char *text, size_t len, bool monotonic, const loom_prof_gpu_sample_t *g,
                      size_t ng)
{
    if (!monotonic)
        return not_compared("the tracer's timestamps are not on loom's clock (no "
                            "cuptiActivityRegisterTimestampCallback: clock=cupti)");
    /* NVML: the indices with utilisation samples. */
    long nvml_index = -1;
    size_t nu = 0;
    for (size_t i = 0; i < ng; i++) {
        if (g[i].util_gpu_pct < 0)
            continue;
        if (nvml_index >= 0 && (long)g[i].index != nvml_index)
            return not_compared("several GPUs sampled: CUDA's device numbers need not be "
                                "NVML's indices");
        nvml_index = (long)g[i].index;
        nu++;
    }
    if (nu < 3)
        return not_compared("fewer than 3 NVML utilisation samples (run with --gpu, for longer "
                            "than 3 GPU intervals)");
    /* CUPTI: the kernels' spans, all on one device. */
    span_t *sp = NULL;
    size_t n = 0, cap = 0;
    long device = -1;
    bool several = false;
    const char *p = text, *end = text + len;
    bool header = true;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        char kind[32], name[256];
        int64_t v[5];
        if (!header && le > p && kernel_line(p, le, kind, v, name) && strcmp(kind, "kernel") == 0) {
            if (device >= 0 && v[3] != device)
                several = true;
            device = (long)v[3];
            if (loom_vec_reserve((void **)&sp, &cap, n + 1, sizeof *sp, 1024)) {
                free(sp);
                return not_compared("out of memory");
            }
            sp[n++] = (span_t){v[0], v[1]};
        }
        header = false;
        p = nl ? nl + 1 : end;
    }
    if (several || n == 0) {
        free(sp);
        return not_compared(several ? "kernels ran on several devices" : "no kernel records");
    }
    qsort(sp, n, sizeof *sp, span_cmp);
    /* NVML's reading at t covers a window that ends at t (the driver's
     * sample period); the span is from the first reading to the last, and
     * its mean is over the readings after the first. */
    int64_t lo = 0, hi = 0;
    bool first = true;
    double sum = 0;
    size_t k = 0;
    for (size_t i = 0; i < ng; i++) {
        if (g[i].util_gpu_pct < 0)
            continue;
        if (first) {
            lo = hi = g[i].t_ns;
            first = false;
            continue;
        }
        hi = g[i].t_ns;
        sum += g[i].util_gpu_pct;
        k++;
    }
    int64_t busy = hi > lo ? busy_within(sp, n, lo, hi) : 0;
    free(sp);
    if (hi <= lo)
        return not_compared("NVML's samples span no time");
    double cupti = 100.0 * (double)busy / (double)(hi - lo), nvml = sum / (double)k;
    return json_pack("{s:b,s:i,s:i,s:f,s:I,s:f,s:f,s:f}", "compared", 1, "nvml_index",
                     (int)nvml_index, "cuda_device", (int)device, "span_s", (double)(hi - lo) / 1e9,
                     "nvml_samples", (json_int_t)k, "nvml_util_mean_pct", nvml, "cupti_busy_pct",
                     cupti, "difference_pct_points", nvml - cupti);
}

/* Summarises the tracer's records (format above: one header line, then
 * one line per record) and its status file. Never fails: what went wrong
 * is the summary's status. */
static json_t *kernels_summary(const loom_prof_run_t *r)
{
    json_t *k = NULL;
    loom_buf_t st = LOOM_BUF_INIT, data = LOOM_BUF_INIT, path = LOOM_BUF_INIT;
    loom_err_t err;
    if (loom_buf_read_file(&data, r->kernels_path, &err) == LOOM_OK)
        k = prof_kernels_parse(data.data ? data.data : "", data.len);
    else
        k = json_object();
    loom_buf_appendf(&path, "%s.status", r->kernels_path);
    if (loom_buf_read_file(&st, path.data, &err) == LOOM_OK) {
        while (st.len && (st.data[st.len - 1] == '\n'))
            st.data[--st.len] = '\0';
        json_object_set_new(k, "status", json_string(st.data ? st.data : ""));
        bool mono = st.data && strncmp(st.data, "ok ", 3) == 0 &&
                    strstr(st.data, " clock=monotonic") != NULL;
        json_object_set_new(k, "gpu_busy",
                            prof_gpu_busy(data.data ? data.data : "", data.len, mono,
                                          r->gpu_samples, r->ngpu_samples));
    } else {
        json_object_set_new(k, "status",
                            json_string("no status from the CUPTI tracer: the command did not "
                                        "initialise CUDA, or the driver did not load "
                                        "CUDA_INJECTION64_PATH"));
    }
    loom_buf_free(&st);
    loom_buf_free(&data);
    loom_buf_free(&path);
    return k;
}

/* --------------------------------------------------------------------- gpus */

/* Per GPU index over the run: samples, mean utilisation, memory peaks and
 * mean power (means over the samples where NVML gave the value). */
static json_t *gpu_summary(const loom_prof_run_t *r)
{
    json_t *g = json_object(), *devs = json_array();
    json_object_set_new(g, "status", json_string(r->gpu_status[0] ? r->gpu_status : "ok"));
    json_object_set_new(g, "samples", json_integer((json_int_t)r->ngpu_samples));
    size_t ndev = r->gpu_names ? json_array_size(r->gpu_names) : 0;
    for (size_t d = 0; d < ndev; d++) {
        double n = 0, ug = 0, um = 0, nu = 0, pw = 0, np = 0, peak = -1, tree = -1, total = -1;
        for (size_t i = 0; i < r->ngpu_samples; i++) {
            const loom_prof_gpu_sample_t *x = &r->gpu_samples[i];
            if (x->index != d)
                continue;
            n++;
            if (x->util_gpu_pct >= 0) {
                ug += x->util_gpu_pct;
                um += x->util_mem_pct;
                nu++;
            }
            if (x->power_w >= 0) {
                pw += x->power_w;
                np++;
            }
            if (x->mem_used_bytes > peak)
                peak = x->mem_used_bytes;
            if (x->tree_mem_bytes > tree)
                tree = x->tree_mem_bytes;
            if (x->mem_total_bytes > total)
                total = x->mem_total_bytes;
        }
        json_t *o = json_object();
        json_object_set_new(o, "index", json_integer((json_int_t)d));
        json_object_set_new(o, "name", json_copy(json_array_get(r->gpu_names, d)));
        json_object_set_new(o, "samples", json_integer((json_int_t)n));
        json_object_set_new(o, "util_gpu_mean_pct", nu ? json_real(ug / nu) : json_null());
        json_object_set_new(o, "util_memory_mean_pct", nu ? json_real(um / nu) : json_null());
        json_object_set_new(o, "memory_used_peak_bytes",
                            peak >= 0 ? json_integer((json_int_t)peak) : json_null());
        json_object_set_new(o, "memory_total_bytes",
                            total >= 0 ? json_integer((json_int_t)total) : json_null());
        json_object_set_new(o, "tree_memory_peak_bytes",
                            tree >= 0 ? json_integer((json_int_t)tree) : json_null());
        json_object_set_new(o, "power_mean_w", np ? json_real(pw / np) : json_null());
        json_array_append_new(devs, o);
    }
    json_object_set_new(g, "devices", devs);
    return g;
}

static void gpu_csv(const loom_prof_run_t *r, loom_buf_t *b)
{
    loom_buf_append_str(b, "t_ns,t_s,index,status,util_gpu_pct,util_memory_pct,memory_used_bytes,"
                           "memory_total_bytes,power_w,tree_memory_bytes\n");
    for (size_t i = 0; i < r->ngpu_samples; i++) {
        const loom_prof_gpu_sample_t *x = &r->gpu_samples[i];
        loom_buf_appendf(b, "%lld,%.6f,%u,%d,%.0f,%.0f,%.0f,%.0f,%.3f,%.0f\n", (long long)x->t_ns,
                         (double)(x->t_ns - r->start_ns) / 1e9, x->index, x->status,
                         x->util_gpu_pct, x->util_mem_pct, x->mem_used_bytes, x->mem_total_bytes,
                         x->power_w, x->tree_mem_bytes);
    }
}

/* ------------------------------------------------------------------- record */

static json_t *num_or_null(double v)
{
    return v < 0 || isnan(v) ? json_null() : json_real(v);
}

static json_t *dist_json(const loom_prof_dist_t *d)
{
    return json_pack("{s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "n", (json_int_t)d->n, "mean",
                     d->mean, "stdev", d->stdev, "min", d->min, "p5", d->p5, "p50", d->p50, "p95",
                     d->p95, "p99", d->p99, "max", d->max);
}

static double step_cores(const loom_prof_run_t *r, const loom_prof_step_t *st)
{
    double c0 = loom_prof_cpu_at(r, st->start_ns), c1 = loom_prof_cpu_at(r, st->end_ns);
    int64_t d = st->end_ns - st->start_ns;
    return c0 >= 0 && c1 >= 0 && d > 0 ? (c1 - c0) / (double)d : -1;
}

/* The roofline section: counts, their source, the device and the run's
 * place (docs/profiling.md, "Roofline"); null members where unknown. */
static json_t *roofline_json(const loom_prof_run_t *r, const loom_prof_summary_t *s)
{
    loom_prof_roofline_t rf;
    loom_prof_roofline(r, s, &rf);
    json_t *o = json_object();
    json_object_set_new(o, "counts", json_boolean(rf.have_counts));
    json_object_set_new(o, "why", rf.have_counts ? json_null() : json_string(rf.why));
    json_object_set_new(o, "counts_source",
                        rf.have_counts && r->roof.flops_per_step > 0
                            ? json_string(r->roof.counts_source)
                        : rf.have_counts ? json_string("LOOM_META")
                                         : json_null());
    json_object_set_new(o, "device", rf.have_device ? json_string(r->roof.device) : json_null());
    json_object_set_new(o, "device_description",
                        rf.have_device ? json_string(r->roof.device_desc) : json_null());
    json_object_set_new(o, "peak_flops", rf.have_device ? json_real(rf.peak_flops) : json_null());
    json_object_set_new(o, "peak_bytes_per_s",
                        rf.have_device ? json_real(rf.peak_bw) : json_null());
    json_object_set_new(o, "ridge_flop_per_byte",
                        rf.have_device ? json_real(rf.ridge) : json_null());
    bool c = rf.have_counts, cd = rf.have_counts && rf.have_device;
    json_object_set_new(o, "flops_per_step", c ? json_real(rf.flops_per_step) : json_null());
    json_object_set_new(o, "bytes_per_step", c ? json_real(rf.bytes_per_step) : json_null());
    json_object_set_new(o, "intensity_flop_per_byte", c ? json_real(rf.intensity) : json_null());
    json_object_set_new(o, "achieved_flops", c ? json_real(rf.achieved_flops) : json_null());
    json_object_set_new(o, "achieved_bytes_per_s", c ? json_real(rf.achieved_bw) : json_null());
    json_object_set_new(o, "achieved_flops_per_cpu_s",
                        c ? num_or_null(rf.achieved_flops_cpu) : json_null());
    json_object_set_new(o, "attainable_flops", cd ? json_real(rf.attainable) : json_null());
    json_object_set_new(o, "fraction_of_roof", cd ? json_real(rf.fraction) : json_null());
    json_object_set_new(o, "bound",
                        cd ? json_string(rf.memory_bound ? "memory" : "compute") : json_null());
    return o;
}

static json_t *run_json(const loom_prof_run_t *r, const loom_prof_summary_t *s)
{
    json_t *root = json_object();
    json_t *cmd = json_array();
    for (size_t i = 0; r->argv[i]; i++)
        json_array_append_new(cmd, json_string(r->argv[i]));
    char when[32];
    loom_time_format_rfc3339(r->start_real_ns, when);
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "command", cmd);
    json_object_set_new(root, "start", json_string(when));
    json_object_set_new(root, "exit",
                        WIFEXITED(r->exit_status)
                            ? json_pack("{s:i}", "code", WEXITSTATUS(r->exit_status))
                            : json_pack("{s:i}", "signal", WTERMSIG(r->exit_status)));
    json_object_set_new(root, "meta", json_deep_copy(r->meta));
    json_object_set_new(root, "sampler",
                        json_pack("{s:f,s:f,s:I,s:I,s:f,s:f,s:o,s:f,s:f}", "interval_s",
                                  (double)r->interval_ns / 1e9, "interval_achieved_s",
                                  s->interval_achieved_s, "samples", (json_int_t)r->nsamples,
                                  "missed_ticks", (json_int_t)r->missed_ticks, "thread_cpu_s",
                                  (double)r->sampler_cpu_ns / 1e9, "profiler_cpu_s",
                                  (double)r->loom_cpu_ns / 1e9, "profiler_cpu_share",
                                  num_or_null(s->profiler_cpu_share), "thread_cores",
                                  s->sampler_cores, "profiler_cores", s->profiler_cores));
    json_t *sum = json_object();
    json_object_set_new(sum, "wall_s", json_real(s->wall_s));
    json_object_set_new(sum, "startup_s", num_or_null(s->startup_s));
    json_object_set_new(sum, "steps", json_integer((json_int_t)s->nsteps));
    json_object_set_new(sum, "warmup_steps", json_integer((json_int_t)s->warmup_steps));
    json_object_set_new(sum, "warmup_s", json_real(s->warmup_s));
    json_object_set_new(sum, "step_time_s", dist_json(&s->steady));
    json_object_set_new(sum, "step_cpu_s",
                        s->steady_cpu.n ? dist_json(&s->steady_cpu) : json_null());
    json_object_set_new(sum, "steps_per_s", json_real(s->steps_per_s));
    json_object_set_new(sum, "items_per_s", num_or_null(s->items_per_s));
    json_object_set_new(sum, "cpu_cores_run", json_real(s->cpu_cores_run));
    json_object_set_new(sum, "cpu_cores_steady", num_or_null(s->cpu_cores_steady));
    json_object_set_new(sum, "user_fraction", json_real(s->user_frac));
    json_object_set_new(sum, "sampled_cpu_s", json_real(s->sampled_cpu_s));
    json_object_set_new(sum, "rss_peak_bytes", json_integer((json_int_t)s->rss_peak_bytes));
    json_object_set_new(sum, "data_fraction", num_or_null(s->data_frac));
    json_object_set_new(sum, "copy_fraction", num_or_null(s->copy_frac));
    json_object_set_new(sum, "compute_fraction", num_or_null(s->compute_frac));
    json_object_set_new(root, "summary", sum);
    json_object_set_new(
        root, "ground_truth",
        json_pack("{s:f,s:f,s:I,s:f}", "rusage_user_s", (double)r->rusage_user_ns / 1e9,
                  "rusage_sys_s", (double)r->rusage_sys_ns / 1e9, "rusage_maxrss_bytes",
                  (json_int_t)r->rusage_maxrss_bytes, "cpu_relative_error", s->cpu_error));
    json_object_set_new(root, "markers",
                        json_pack("{s:I,s:s}", "malformed", (json_int_t)r->bad_markers,
                                  "first_error", r->first_bad));
    json_t *steps = json_array();
    for (size_t i = 0; i < r->nsteps; i++) {
        const loom_prof_step_t *st = &r->steps[i];
        json_t *o =
            json_pack("{s:I,s:I,s:I,s:f,s:b}", "step", (json_int_t)st->step, "start_ns",
                      (json_int_t)st->start_ns, "end_ns", (json_int_t)st->end_ns, "duration_s",
                      (double)(st->end_ns - st->start_ns) / 1e9, "warmup", i < s->warmup_steps);
        if (st->items >= 0)
            json_object_set_new(o, "items", json_integer(st->items));
        if (st->data_ns >= 0)
            json_object_set_new(o, "data_ns", json_integer(st->data_ns));
        if (st->copy_ns >= 0)
            json_object_set_new(o, "copy_ns", json_integer(st->copy_ns));
        if (st->cpu_ns >= 0)
            json_object_set_new(o, "cpu_ns", json_integer(st->cpu_ns));
        json_object_set_new(o, "cpu_cores", num_or_null(step_cores(r, st)));
        json_array_append_new(steps, o);
    }
    json_object_set_new(root, "steps", steps);
    json_object_set_new(root, "roofline", roofline_json(r, s));
    if (r->kernels)
        json_object_set_new(root, "kernels", kernels_summary(r));
    if (r->gpu)
        json_object_set_new(root, "gpu", gpu_summary(r));
    return root;
}

static int write_buf(const char *dir, const char *name, const loom_buf_t *b, loom_err_t *err)
{
    loom_buf_t path = LOOM_BUF_INIT;
    if (loom_buf_appendf(&path, "%s/%s", dir, name)) {
        loom_buf_free(&path);
        return loom_err_set(err, LOOM_ENOMEM, "prof: out of memory");
    }
    int rc = loom_write_file_atomic(path.data, b->data ? b->data : "", b->len, 0644, err);
    loom_buf_free(&path);
    return rc;
}

static void samples_csv(const loom_prof_run_t *r, loom_buf_t *b)
{
    loom_buf_append_str(b, "t_ns,t_s,user_ns,sys_ns,cpu_cores,rss_bytes,nprocs,nthreads\n");
    for (size_t i = 0; i < r->nsamples; i++) {
        const loom_prof_sample_t *x = &r->samples[i];
        double cores = 0;
        if (i > 0) {
            const loom_prof_sample_t *p = &r->samples[i - 1];
            if (x->t_ns > p->t_ns)
                cores = (double)(x->user_ns + x->sys_ns - p->user_ns - p->sys_ns) /
                        (double)(x->t_ns - p->t_ns);
        }
        loom_buf_appendf(b, "%lld,%.6f,%lld,%lld,%.4f,%lld,%d,%d\n", (long long)x->t_ns,
                         (double)(x->t_ns - r->start_ns) / 1e9, (long long)x->user_ns,
                         (long long)x->sys_ns, cores, (long long)x->rss_bytes, x->nprocs,
                         x->nthreads);
    }
}

static void steps_csv(const loom_prof_run_t *r, const loom_prof_summary_t *s, loom_buf_t *b)
{
    loom_buf_append_str(b, "step,start_ns,end_ns,duration_s,items,data_ns,copy_ns,cpu_ns,"
                           "cpu_cores,warmup\n");
    for (size_t i = 0; i < r->nsteps; i++) {
        const loom_prof_step_t *st = &r->steps[i];
        loom_buf_appendf(b, "%lld,%lld,%lld,%.9f,%lld,%lld,%lld,%lld,%.4f,%d\n",
                         (long long)st->step, (long long)st->start_ns, (long long)st->end_ns,
                         (double)(st->end_ns - st->start_ns) / 1e9, (long long)st->items,
                         (long long)st->data_ns, (long long)st->copy_ns, (long long)st->cpu_ns,
                         step_cores(r, st), i < s->warmup_steps);
    }
}

/* Two panels, CPU cores and resident memory against time since start. */
static void cpu_svg(const loom_prof_run_t *r, loom_buf_t *b)
{
    const double W = 800, H = 200, L = 60;
    double tmax = (double)(r->end_ns - r->start_ns) / 1e9, cmax = 1, mmax = 1;
    for (size_t i = 1; i < r->nsamples; i++) {
        const loom_prof_sample_t *x = &r->samples[i], *p = &r->samples[i - 1];
        double c = x->t_ns > p->t_ns ? (double)(x->user_ns + x->sys_ns - p->user_ns - p->sys_ns) /
                                           (double)(x->t_ns - p->t_ns)
                                     : 0;
        if (c > cmax)
            cmax = c;
        if ((double)x->rss_bytes / 1048576.0 > mmax)
            mmax = (double)x->rss_bytes / 1048576.0;
    }
    if (tmax <= 0)
        tmax = 1;
    loom_buf_appendf(b,
                     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                     "font-family=\"sans-serif\" font-size=\"11\">\n",
                     W + L + 10, 2 * H + 60);
    for (int panel = 0; panel < 2; panel++) {
        double y0 = 20 + panel * (H + 30), top = panel ? mmax : cmax;
        loom_buf_appendf(b,
                         "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" "
                         "fill=\"none\" stroke=\"#888\"/>\n",
                         L, y0, W, H);
        loom_buf_appendf(b, "<text x=\"%.0f\" y=\"%.0f\">%s (max %.2f)</text>\n", L, y0 - 5,
                         panel ? "resident memory, MiB" : "CPU, cores", top);
        /* Step boundaries as faint lines. */
        for (size_t i = 0; panel == 0 && i < r->nsteps && i < 2000; i++) {
            double x = L + W * (double)(r->steps[i].start_ns - r->start_ns) / 1e9 / tmax;
            loom_buf_appendf(b,
                             "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" "
                             "stroke=\"#ddd\"/>\n",
                             x, y0, x, y0 + H);
        }
        loom_buf_append_str(b, "<polyline fill=\"none\" stroke=\"#1f77b4\" points=\"");
        for (size_t i = 1; i < r->nsamples; i++) {
            const loom_prof_sample_t *x = &r->samples[i], *p = &r->samples[i - 1];
            double v;
            if (panel)
                v = (double)x->rss_bytes / 1048576.0;
            else
                v = x->t_ns > p->t_ns ? (double)(x->user_ns + x->sys_ns - p->user_ns - p->sys_ns) /
                                            (double)(x->t_ns - p->t_ns)
                                      : 0;
            double px = L + W * (double)(x->t_ns - r->start_ns) / 1e9 / tmax;
            double py = y0 + H - H * v / top;
            loom_buf_appendf(b, "%.1f,%.1f ", px, py);
        }
        loom_buf_append_str(b, "\"/>\n");
    }
    loom_buf_appendf(b,
                     "<text x=\"%.0f\" y=\"%.0f\">time since start, s (0 to %.2f); grey: "
                     "step starts</text>\n</svg>\n",
                     L, 2 * H + 55, tmax);
}

static void roofline_md(const loom_prof_run_t *r, const loom_prof_summary_t *s, loom_buf_t *b)
{
    loom_prof_roofline_t rf;
    loom_prof_roofline(r, s, &rf);
    loom_buf_append_str(b, "\n## Roofline\n\n");
    if (!rf.have_counts) {
        loom_buf_appendf(b, "Not placed: %s.\n", rf.why);
        return;
    }
    loom_buf_appendf(b,
                     "Counts per step (%s): %.4g GFLOP, %.4g MB moved; arithmetic intensity "
                     "%.3f FLOP/byte.\n\n| | value |\n|---|---|\n"
                     "| achieved, per mean steady step time | %.4g GFLOP/s, %.4g GB/s |\n",
                     r->roof.flops_per_step > 0 ? r->roof.counts_source : "LOOM_META",
                     rf.flops_per_step / 1e9, rf.bytes_per_step / 1e6, rf.intensity,
                     rf.achieved_flops / 1e9, rf.achieved_bw / 1e9);
    if (rf.achieved_flops_cpu > 0)
        loom_buf_appendf(b, "| achieved, per CPU second of the workload | %.4g GFLOP/s |\n",
                         rf.achieved_flops_cpu / 1e9);
    if (!rf.have_device) {
        loom_buf_append_str(b, "\nNo device peaks given (--device NAME|FILE): no roof.\n");
        return;
    }
    loom_buf_append_str(b, "| device | ");
    loom_buf_append_str(b, r->roof.device);
    loom_buf_append_str(b, " (");
    loom_buf_append_str(b, r->roof.device_desc);
    loom_buf_appendf(b,
                     ") |\n| peak compute, bandwidth | %.4g GFLOP/s, %.4g GB/s |\n"
                     "| ridge point | %.3f FLOP/byte |\n"
                     "| roof at this intensity | %.4g GFLOP/s (%s-bound) |\n"
                     "| achieved / roof | %.2f%% |\n",
                     rf.peak_flops / 1e9, rf.peak_bw / 1e9, rf.ridge, rf.attainable / 1e9,
                     rf.memory_bound ? "memory" : "compute", 100 * rf.fraction);
}

/* The report from the run's summary and, with --kernels, the tracer's
 * summary (kernels_summary: it reads and parses the whole record file, so
 * loom_prof_write passes the one it put in run.json). */
static int report_md(const loom_prof_run_t *r, const loom_prof_summary_t *sp, json_t *ks,
                     loom_buf_t *b)
{
    const loom_prof_summary_t s = *sp;
    char when[32], mem[32], hwm[32];
    loom_time_format_rfc3339(r->start_real_ns, when);
    loom_buf_append_str(b, "# loom prof report\n\ncommand:");
    for (size_t i = 0; r->argv[i]; i++)
        loom_buf_appendf(b, " %s", r->argv[i]);
    loom_buf_appendf(b, "\nstarted: %s; wall %.3f s; ", when, s.wall_s);
    if (WIFEXITED(r->exit_status))
        loom_buf_appendf(b, "exit code %d\n", WEXITSTATUS(r->exit_status));
    else
        loom_buf_appendf(b, "killed by signal %d\n", WTERMSIG(r->exit_status));
    const char *k;
    json_t *v;
    bool first = true;
    json_object_foreach(r->meta, k, v)
    {
        loom_buf_appendf(b, "%s%s=%s", first ? "meta: " : " ", k, json_string_value(v));
        first = false;
    }
    if (json_object_size(r->meta))
        loom_buf_append_str(b, "\n");
    loom_buf_append_str(b, "\n## Steps\n\n");
    if (s.nsteps == 0) {
        loom_buf_append_str(b, "No step markers were received (see docs/profiling.md).\n");
    } else {
        const loom_prof_dist_t *d = &s.steady;
        loom_buf_appendf(b,
                         "| steps | warm-up steps | warm-up s | startup s |\n|---|---|---|---|\n"
                         "| %zu | %zu | %.3f | %.3f |\n\n",
                         s.nsteps, s.warmup_steps, s.warmup_s, s.startup_s);
        loom_buf_appendf(b,
                         "Steady step time, ms (n=%zu):\n\n| mean | stdev | min | p5 | p50 | "
                         "p95 | p99 | max |\n|---|---|---|---|---|---|---|---|\n"
                         "| %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n\n",
                         d->n, d->mean * 1e3, d->stdev * 1e3, d->min * 1e3, d->p5 * 1e3,
                         d->p50 * 1e3, d->p95 * 1e3, d->p99 * 1e3, d->max * 1e3);
        if (s.steady_cpu.n) {
            const loom_prof_dist_t *c = &s.steady_cpu;
            loom_buf_appendf(b,
                             "Steady step CPU time of the workload process (markers' cpu_ns), "
                             "ms:\n\n| mean | stdev | min | p50 | p95 | max | CPU / wall |\n"
                             "|---|---|---|---|---|---|---|\n"
                             "| %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n\n",
                             c->mean * 1e3, c->stdev * 1e3, c->min * 1e3, c->p50 * 1e3,
                             c->p95 * 1e3, c->max * 1e3, d->mean > 0 ? c->mean / d->mean : 0);
        }
        loom_buf_appendf(b, "Throughput: %.3f steps/s", s.steps_per_s);
        if (s.items_per_s >= 0)
            loom_buf_appendf(b, ", %.2f items/s", s.items_per_s);
        loom_buf_append_str(b, "\n");
        if (s.compute_frac >= 0) {
            loom_buf_append_str(b, "\nTime split of steady steps:");
            if (s.data_frac >= 0)
                loom_buf_appendf(b, " data %.1f%%", 100 * s.data_frac);
            if (s.copy_frac >= 0)
                loom_buf_appendf(b, ", copies %.1f%%", 100 * s.copy_frac);
            loom_buf_appendf(b, ", compute (the rest) %.1f%%\n", 100 * s.compute_frac);
        }
    }
    if (r->bad_markers)
        loom_buf_appendf(b, "\n%zu malformed marker line(s) ignored; the first: %s\n",
                         r->bad_markers, r->first_bad);
    loom_buf_append_str(b, "\n## CPU and memory\n\n");
    if (r->nsamples == 0) {
        loom_buf_append_str(b, "Not sampled.\n");
    } else {
        loom_format_size((uint64_t)s.rss_peak_bytes, mem, sizeof mem);
        loom_format_size((uint64_t)r->rusage_maxrss_bytes, hwm, sizeof hwm);
        loom_buf_appendf(b,
                         "| | value |\n|---|---|\n"
                         "| samples (every %.1f ms asked, %.2f ms achieved, %zu missed) | %zu |\n"
                         "| CPU, whole run, cores | %.3f |\n",
                         (double)r->interval_ns / 1e6, s.interval_achieved_s * 1e3, r->missed_ticks,
                         r->nsamples, s.cpu_cores_run);
        if (s.cpu_cores_steady >= 0)
            loom_buf_appendf(b, "| CPU, steady steps, cores | %.3f |\n", s.cpu_cores_steady);
        loom_buf_appendf(b,
                         "| user share of CPU time | %.1f%% |\n"
                         "| CPU time sampled / kernel (rusage), s | %.3f / %.3f (%+.2f%%) |\n"
                         "| resident memory peak, sampled (tree) | %s |\n"
                         "| max RSS of one process, kernel | %s |\n"
                         "| profiler's own CPU: sampling thread / whole loom, s | %.4f / %.4f "
                         "(%.3f%% of the command's) |\n"
                         "| profiler's own CPU per second of run: sampling thread / whole loom, "
                         "cores | %.5f / %.5f |\n",
                         100 * s.user_frac, s.sampled_cpu_s, s.kernel_cpu_s, 100 * s.cpu_error, mem,
                         hwm, (double)r->sampler_cpu_ns / 1e9, (double)r->loom_cpu_ns / 1e9,
                         100 * s.profiler_cpu_share, s.sampler_cores, s.profiler_cores);
    }
    roofline_md(r, &s, b);
    if (r->gpu) {
        json_t *gs = gpu_summary(r);
        loom_buf_appendf(b,
                         "\n## GPUs (NVML, through libloom's monitoring part)\n\nstatus: %s; "
                         "%zu readings\n",
                         json_string_value(json_object_get(gs, "status")), r->ngpu_samples);
        json_t *devs = json_object_get(gs, "devices");
        if (json_array_size(devs)) {
            loom_buf_append_str(b, "\n| GPU | name | mean util % | mean memory util % | memory "
                                   "peak | tree's memory peak | mean power W |\n"
                                   "|---|---|---|---|---|---|---|\n");
            size_t i;
            json_t *d;
            json_array_foreach(devs, i, d)
            {
                static const char *keys[] = {"util_gpu_mean_pct", "util_memory_mean_pct",
                                             "memory_used_peak_bytes", "tree_memory_peak_bytes",
                                             "power_mean_w"};
                char cell[5][32];
                for (int c = 0; c < 5; c++) {
                    json_t *val = json_object_get(d, keys[c]);
                    if (!json_is_number(val))
                        snprintf(cell[c], sizeof cell[c], "-");
                    else if (c == 2 || c == 3)
                        loom_format_size((uint64_t)json_number_value(val), cell[c], sizeof cell[c]);
                    else
                        snprintf(cell[c], sizeof cell[c], "%.1f", json_number_value(val));
                }
                loom_buf_appendf(b, "| %zu | %s | %s | %s | %s | %s | %s |\n", i,
                                 json_string_value(json_object_get(d, "name")), cell[0], cell[1],
                                 cell[2], cell[3], cell[4]);
            }
        }
        json_decref(gs);
    }
    if (r->kernels && ks) {
        loom_buf_appendf(b, "\n## GPU kernels (CUPTI)\n\nstatus: %s\n",
                         json_string_value(json_object_get(ks, "status")));
        json_t *gb = json_object_get(ks, "gpu_busy");
        if (gb && json_is_true(json_object_get(gb, "compared")))
            loom_buf_appendf(
                b,
                "\nGPU busy over %.1f s: NVML's utilisation %.1f%% (mean of %lld samples), "
                "CUPTI's kernel time %.1f%% of the span (union of kernel intervals): "
                "NVML - CUPTI = %+.1f points\n",
                json_real_value(json_object_get(gb, "span_s")),
                json_real_value(json_object_get(gb, "nvml_util_mean_pct")),
                (long long)json_integer_value(json_object_get(gb, "nvml_samples")),
                json_real_value(json_object_get(gb, "cupti_busy_pct")),
                json_real_value(json_object_get(gb, "difference_pct_points")));
        else if (gb)
            loom_buf_appendf(b, "\nGPU busy, NVML against CUPTI: not compared (%s)\n",
                             json_string_value(json_object_get(gb, "why")));
        json_t *by = json_object_get(ks, "by_class");
        if (by && json_object_size(by)) {
            loom_buf_append_str(b, "\n| class | count | total ms |\n|---|---|---|\n");
            json_object_foreach(by, k, v)
                loom_buf_appendf(b, "| %s | %lld | %.3f |\n", k,
                                 (long long)json_integer_value(json_object_get(v, "count")),
                                 1e3 * json_real_value(json_object_get(v, "total_s")));
        }
    }
    return b->data ? LOOM_OK : LOOM_ENOMEM;
}

int loom_prof_report_md(const loom_prof_run_t *r, loom_buf_t *b)
{
    loom_prof_summary_t s;
    loom_prof_summarize(r, &s);
    json_t *ks = r->kernels ? kernels_summary(r) : NULL;
    int rc = report_md(r, &s, ks, b);
    json_decref(ks);
    return rc;
}

int loom_prof_write(const loom_prof_run_t *r, const char *dir, loom_err_t *err)
{
    if (mkdir(dir, 0755) && errno != EEXIST)
        return loom_err_errno(err, LOOM_EIO, errno, "prof: cannot create '%s'", dir);
    loom_prof_summary_t s;
    loom_prof_summarize(r, &s);
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = LOOM_OK;
    json_t *j = run_json(r, &s);
    if (!j || json_dumpb(j, NULL, 0, 0) == 0) {
        json_decref(j);
        return loom_err_set(err, LOOM_ENOMEM, "prof: cannot build the run record");
    }
    char *text = json_dumps(j, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    if (!text) {
        json_decref(j);
        return loom_err_set(err, LOOM_ENOMEM, "prof: out of memory");
    }
    loom_buf_append_str(&b, text);
    loom_buf_append_char(&b, '\n');
    free(text);
    if ((rc = write_buf(dir, "run.json", &b, err)))
        goto out;
    loom_buf_reset(&b);
    steps_csv(r, &s, &b);
    if ((rc = write_buf(dir, "steps.csv", &b, err)))
        goto out;
    loom_buf_reset(&b);
    samples_csv(r, &b);
    if ((rc = write_buf(dir, "samples.csv", &b, err)))
        goto out;
    if (r->gpu) {
        loom_buf_reset(&b);
        gpu_csv(r, &b);
        if ((rc = write_buf(dir, "gpu.csv", &b, err)))
            goto out;
    }
    loom_buf_reset(&b);
    cpu_svg(r, &b);
    if ((rc = write_buf(dir, "cpu.svg", &b, err)))
        goto out;
    loom_buf_reset(&b);
    prof_steps_svg(r, &s, &b);
    if ((rc = write_buf(dir, "steps.svg", &b, err)))
        goto out;
    loom_prof_roofline_t rf;
    loom_prof_roofline(r, &s, &rf);
    if (rf.have_counts && rf.have_device) {
        loom_buf_reset(&b);
        prof_roofline_svg(&rf, r->roof.device, &b);
        if ((rc = write_buf(dir, "roofline.svg", &b, err)))
            goto out;
    }
    loom_buf_reset(&b);
    report_md(r, &s, json_object_get(j, "kernels"), &b);
    rc = write_buf(dir, "report.md", &b, err);
out:
    json_decref(j);
    loom_buf_free(&b);
    return rc;
}
