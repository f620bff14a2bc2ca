/* The roofline of a profiled run (docs/profiling.md, "Roofline").
 *
 * The profiler measures time; how much work a step is comes from elsewhere:
 * loom's estimator (`loom estimate MODEL.onnx --json`: FLOPs and bytes of
 * one step under its traffic model) or the workload itself (LOOM_META
 * flops_per_step= bytes_per_step=). The device's peaks are handed in by the
 * caller (the CLI reads them from a device description, workloads/devices/,
 * with the estimator's loader), so prof does not depend on estimate. Counts made for
 * another batch, mode or precision than the run's LOOM_META says are not
 * used: the report says why instead of placing the run wrongly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prof/prof_internal.h"

int loom_prof_roof_from_estimate(loom_prof_roof_input_t *in, const json_t *est, const char *what,
                                 loom_err_t *err)
{
    double f[3] = {0, 0, 0}, bytes = 0;
    static const char *fk[3] = {"fwd_flops", "bwd_flops", "opt_flops"};
    const json_t *b;
    int64_t batch = 0;
    bool train = false;
    const char *prec = "";
    if (!json_is_object(est))
        return loom_err_set(err, LOOM_EINVAL,
                            "%s: expected the JSON object of loom estimate --json", what);
    for (int i = 0; i < 3; i++)
        if (loom_json_get_number(est, fk[i], true, "", &f[i], err))
            return loom_err_prefix(err, "%s", what);
    b = json_object_get(est, "bytes");
    if (!json_is_object(b))
        return loom_err_set(err, LOOM_EINVAL,
                            "%s/bytes: missing (expected the object {forward, backward, "
                            "optimizer, step} of a loom estimate that counts memory traffic)",
                            what);
    if (loom_json_get_number(b, "step", true, "/bytes", &bytes, err) ||
        loom_json_get_int(est, "batch", true, "", 0, INT64_MAX, &batch, err) ||
        loom_json_get_bool(est, "train", true, "", &train, err) ||
        loom_json_get_string(est, "precision", true, "", &prec, err))
        return loom_err_prefix(err, "%s", what);
    double flops = f[0] + f[1] + f[2];
    if (!(flops > 0) || !(bytes > 0) || !isfinite(flops) || !isfinite(bytes))
        return loom_err_set(err, LOOM_EINVAL,
                            "%s: expected positive FLOP and byte totals, found %g FLOPs and %g "
                            "bytes",
                            what, flops, bytes);
    in->flops_per_step = flops;
    in->bytes_per_step = bytes;
    in->batch = batch;
    snprintf(in->mode, sizeof in->mode, "%s", train ? "train" : "infer");
    snprintf(in->precision, sizeof in->precision, "%s", prec);
    snprintf(in->counts_source, sizeof in->counts_source, "loom estimate (%s)", what);
    return LOOM_OK;
}

int loom_prof_roof_load_estimate(loom_prof_roof_input_t *in, const char *path, loom_err_t *err)
{
    json_t *j;
    int rc = loom_json_load_file(path, &j, err);
    if (rc)
        return rc;
    rc = loom_prof_roof_from_estimate(in, j, path, err);
    json_decref(j);
    return rc;
}

void loom_prof_roof_set_device(loom_prof_roof_input_t *in, const loom_prof_peaks_t *p)
{
    in->peak_fp32 = p->flops_fp32;
    in->peak_half = p->flops_half > 0 ? p->flops_half : p->flops_fp32;
    in->peak_bw = p->mem_bandwidth;
    snprintf(in->device, sizeof in->device, "%s", p->name ? p->name : "");
    snprintf(in->device_desc, sizeof in->device_desc, "%s", p->description ? p->description : "");
}

/* A positive number from the run's LOOM_META, or 0 (absent); -1 malformed. */
static double meta_number(const loom_prof_run_t *r, const char *key)
{
    const char *v = json_string_value(json_object_get(r->meta, key));
    if (!v)
        return 0;
    char *end;
    double x = strtod(v, &end);
    return *end == '\0' && end != v && x > 0 && isfinite(x) ? x : -1;
}

/* False (with why) if the counts were made for another setup than the
 * run's LOOM_META states. */
static bool same_setup(const loom_prof_run_t *r, const loom_prof_roof_input_t *in, char *why,
                       size_t whylen)
{
    const char *batch = json_string_value(json_object_get(r->meta, "batch"));
    const char *mode = json_string_value(json_object_get(r->meta, "mode"));
    const char *prec = json_string_value(json_object_get(r->meta, "precision"));
    char want[32];
    snprintf(want, sizeof want, "%lld", (long long)in->batch);
    if (in->batch > 0 && batch && strcmp(batch, want) != 0) {
        snprintf(why, whylen, "the counts are for batch %s, the run's LOOM_META says batch=%s",
                 want, batch);
        return false;
    }
    if (in->mode[0] && mode && strcmp(mode, in->mode) != 0) {
        snprintf(why, whylen, "the counts are for mode %s, the run's LOOM_META says mode=%s",
                 in->mode, mode);
        return false;
    }
    if (in->precision[0] && prec && strcmp(prec, in->precision) != 0) {
        snprintf(why, whylen,
                 "the counts are for precision %s, the run's LOOM_META says precision=%s",
                 in->precision, prec);
        return false;
    }
    return true;
}

static bool half_precision(const char *p)
{
    return p && (strcmp(p, "bf16") == 0 || strcmp(p, "fp16") == 0 || strcmp(p, "mixed") == 0);
}

void loom_prof_roofline(const loom_prof_run_t *r, const loom_prof_summary_t *s,
                        loom_prof_roofline_t *o)
{
    memset(o, 0, sizeof *o);
    o->achieved_flops_cpu = -1;
    const loom_prof_roof_input_t *in = &r->roof;
    double flops = in->flops_per_step, bytes = in->bytes_per_step;
    if (flops <= 0 || bytes <= 0) {
        flops = meta_number(r, "flops_per_step");
        bytes = meta_number(r, "bytes_per_step");
        if (flops < 0 || bytes < 0) {
            snprintf(o->why, sizeof o->why,
                     "LOOM_META flops_per_step and bytes_per_step must be positive numbers");
            flops = bytes = 0;
        } else if (flops == 0 || bytes == 0) {
            snprintf(o->why, sizeof o->why,
                     "FLOP and byte counts unknown (give --estimate FILE, or LOOM_META "
                     "flops_per_step= bytes_per_step=)");
            flops = bytes = 0;
        }
    } else if (!same_setup(r, in, o->why, sizeof o->why)) {
        flops = bytes = 0;
    }
    if (flops > 0 && bytes > 0 && !(s->steady.n > 0 && s->steady.mean > 0)) {
        snprintf(o->why, sizeof o->why, "no steady steps to time");
        flops = bytes = 0;
    }
    o->have_device = in->peak_fp32 > 0 && in->peak_bw > 0;
    if (o->have_device) {
        const char *prec = json_string_value(json_object_get(r->meta, "precision"));
        if (!prec && in->precision[0])
            prec = in->precision;
        o->peak_flops = half_precision(prec) ? in->peak_half : in->peak_fp32;
        o->peak_bw = in->peak_bw;
        o->ridge = o->peak_flops / o->peak_bw;
    }
    if (flops <= 0)
        return;
    o->have_counts = true;
    o->flops_per_step = flops;
    o->bytes_per_step = bytes;
    o->intensity = flops / bytes;
    o->achieved_flops = flops / s->steady.mean;
    o->achieved_bw = bytes / s->steady.mean;
    if (s->steady_cpu.n > 0 && s->steady_cpu.mean > 0)
        o->achieved_flops_cpu = flops / s->steady_cpu.mean;
    if (o->have_device) {
        double mem_roof = o->intensity * o->peak_bw;
        o->attainable = mem_roof < o->peak_flops ? mem_roof : o->peak_flops;
        o->fraction = o->achieved_flops / o->attainable;
        o->memory_bound = o->intensity < o->ridge;
    }
}
