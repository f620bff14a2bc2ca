/* Device descriptions for the roofline: a JSON object per device, shipped
 * under workloads/devices/ (h200.json from NVIDIA's public data sheet;
 * cpu-*.json written by bench/estimate_calibrate.c from measurements).
 *
 *   {"name": "h200", "description": "...",
 *    "flops_fp32": 6.7e13, "flops_half": 9.89e14, "flops_vector": 6.7e13,
 *    "flops_conv": 6.7e13 (optional, default flops_fp32),
 *    "mem_bandwidth": 4.8e12, "op_overhead_s": 5e-6,
 *    "memory_bytes": 150323855360, "context_bytes": 536870912,
 *    "allocator": "cuda-caching" | "malloc",
 *    -- the calibrated model (bench/estimate_calibrate.py), all optional:
 *    "calibrated": true, "page_fault_s": 1.3e-5, "step_overhead_s": 1.4e-5,
 *    "in_step_factor": 1.15 (operator costs inside a training step over their
 *                            microbenchmarks; default 1, in [0.25, 4]),
 *    "op_classes": {"conv": {"fwd": FN, "bwd": FN}, ...},
 *    "optimizer": {"adam": {"tensor_s": 2e-5, "elem_s": CURVE}, ...},
 *    -- malloc devices: the glibc settings the runtime runs with (optional):
 *    "malloc_tunables": "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=...",
 *    -- CPU devices: the host calibrated on (src/estimate/host.c; optional):
 *    "host": {"cpu_model": "...", "isa": "avx avx2 ...", "blas": "openblas-pthread",
 *             "threads": 1}}
 *
 *   FN    = {"overhead_s": S, "step_s": S, "strided_s": S,
 *            "rate": {"peak": FLOP/s, "half_dim": D, "power": P},
 *            "elem_s": CURVE}                  (every member optional)
 *   CURVE = [[x, y], ...]  1 to 16 points, x > 0 increasing, y >= 0
 */
#include <string.h>

#include "estimate/est.h"

/* A device's memory and context in bytes: 1 EB, under UINT64_MAX (get_pos
 * allows 1e20, which a cast to uint64_t cannot hold). */
#define DEVICE_MAX_BYTES 1e18

static int get_pos(const json_t *o, const char *key, const char *name, bool required, double *out,
                   loom_err_t *err)
{
    double v = -1;
    int rc = loom_json_get_number(o, key, required, "", &v, err);
    if (rc)
        return loom_err_prefix(err, "device %s: ", name);
    if (!json_object_get(o, key))
        return LOOM_OK;
    if (!(v >= 0) || v > 1e20)
        return loom_err_set(err, LOOM_EINVAL, "device %s: /%s must be a number in [0, 1e20]", name,
                            key);
    *out = v;
    return LOOM_OK;
}

static const char *class_names[LOOM_EST_CL_N] = {
    "conv", "conv1x1",   "dwconv", "matmul",  "bmm", "bn",      "ln",     "softmax",
    "loss", "unary",     "binary", "gelu",    "act", "pool",    "reduce", "copy",
    "view", "embedding", "lstm",   "dropout", "gru", "dwconv5", "dwconv7"};

const char *loom_est_class_name(loom_est_class_t c)
{
    return (unsigned)c < LOOM_EST_CL_N ? class_names[c] : "unknown";
}

/* A number in [0, 1e20] at obj/key (path names the place for the message). */
static int num_at(const json_t *obj, const char *key, const char *name, const char *path,
                  double *out, loom_err_t *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return LOOM_OK;
    if (!json_is_number(v) || !(json_number_value(v) >= 0) || json_number_value(v) > 1e20)
        return loom_err_set(err, LOOM_EINVAL, "device %s: %s/%s must be a number in [0, 1e20]",
                            name, path, key);
    *out = json_number_value(v);
    return LOOM_OK;
}

static int parse_curve(const json_t *v, const char *name, const char *path, loom_est_curve_t *c,
                       loom_err_t *err)
{
    size_t n = json_is_array(v) ? json_array_size(v) : 0;
    if (n < 1 || n > 16)
        return loom_err_set(err, LOOM_EINVAL,
                            "device %s: %s must be an array of 1 to 16 [x, y] pairs, x increasing",
                            name, path);
    for (size_t i = 0; i < n; i++) {
        const json_t *p = json_array_get(v, i);
        bool pair = json_is_array(p) && json_array_size(p) == 2 &&
                    json_is_number(json_array_get(p, 0)) && json_is_number(json_array_get(p, 1));
        double x = pair ? json_number_value(json_array_get(p, 0)) : -1;
        double y = pair ? json_number_value(json_array_get(p, 1)) : -1;
        if (!(x > 0) || x > 1e20 || !(y >= 0) || y > 1e20 || (i && x <= c->x[i - 1]))
            return loom_err_set(err, LOOM_EINVAL,
                                "device %s: %s/%zu must be [x > 0, y >= 0] with x increasing", name,
                                path, i);
        c->x[i] = x;
        c->y[i] = y;
    }
    c->n = (int)n;
    return LOOM_OK;
}

static int check_keys(const json_t *o, const char *const *keys, const char *name, const char *path,
                      const char *expected, loom_err_t *err)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        bool ok = false;
        for (const char *const *p = keys; *p; p++)
            ok |= strcmp(*p, k) == 0;
        if (!ok)
            return loom_err_set(err, LOOM_EINVAL,
                                "device %s: %s: unknown member '%s' (expected %s)", name, path, k,
                                expected);
    }
    return LOOM_OK;
}

static int parse_fn(const json_t *o, const char *name, const char *path, loom_est_cost_fn_t *f,
                    loom_err_t *err)
{
    static const char *const keys[] = {"overhead_s", "step_s", "strided_s", "rate", "elem_s", NULL};
    static const char *const rkeys[] = {"peak", "half_dim", "power", NULL};
    if (!json_is_object(o))
        return loom_err_set(err, LOOM_EINVAL, "device %s: %s must be an object, found %s", name,
                            path, loom_json_type_name(o));
    int rc;
    if ((rc =
             check_keys(o, keys, name, path, "overhead_s, step_s, strided_s, rate, elem_s", err)) ||
        (rc = num_at(o, "overhead_s", name, path, &f->overhead_s, err)) ||
        (rc = num_at(o, "step_s", name, path, &f->step_s, err)) ||
        (rc = num_at(o, "strided_s", name, path, &f->strided_s, err)))
        return rc;
    const json_t *r = json_object_get(o, "rate");
    if (r) {
        char rp[160];
        snprintf(rp, sizeof rp, "%s/rate", path);
        if (!json_is_object(r))
            return loom_err_set(err, LOOM_EINVAL, "device %s: %s must be an object", name, rp);
        f->power = 1;
        if ((rc = check_keys(r, rkeys, name, rp, "peak, half_dim, power", err)) ||
            (rc = num_at(r, "peak", name, rp, &f->peak, err)) ||
            (rc = num_at(r, "half_dim", name, rp, &f->half_dim, err)) ||
            (rc = num_at(r, "power", name, rp, &f->power, err)))
            return rc;
        if (!(f->peak > 0) || f->power > 8)
            return loom_err_set(err, LOOM_EINVAL,
                                "device %s: %s needs peak > 0 and power in [0, 8]", name, rp);
    }
    const json_t *e = json_object_get(o, "elem_s");
    if (e) {
        char ep[160];
        snprintf(ep, sizeof ep, "%s/elem_s", path);
        if ((rc = parse_curve(e, name, ep, &f->elem_s, err)))
            return rc;
    }
    f->set = true;
    return LOOM_OK;
}

static int parse_classes(const json_t *o, const char *name, loom_est_device_t *d, loom_err_t *err)
{
    if (!json_is_object(o))
        return loom_err_set(err, LOOM_EINVAL, "device %s: /op_classes must be an object, found %s",
                            name, loom_json_type_name(o));
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        int c = 0;
        while (c < LOOM_EST_CL_N && strcmp(class_names[c], k) != 0)
            c++;
        if (c == LOOM_EST_CL_N)
            return loom_err_set(err, LOOM_EINVAL,
                                "device %s: /op_classes/%s: unknown operator class (expected "
                                "conv, conv1x1, dwconv, matmul, bmm, bn, ln, softmax, loss, unary, "
                                "binary, gelu, act, pool, reduce, copy, view, embedding or lstm)",
                                name, k);
        static const char *const dirs[] = {"fwd", "bwd", NULL};
        char path[128];
        snprintf(path, sizeof path, "/op_classes/%s", k);
        if (!json_is_object(v))
            return loom_err_set(err, LOOM_EINVAL, "device %s: %s must be an object", name, path);
        int rc = check_keys(v, dirs, name, path, "fwd, bwd", err);
        for (int dir = 0; !rc && dir < 2; dir++) {
            const json_t *f = json_object_get(v, dirs[dir]);
            char fp[160];
            snprintf(fp, sizeof fp, "%s/%s", path, dirs[dir]);
            if (f)
                rc = parse_fn(f, name, fp, &d->cls[c][dir], err);
        }
        if (rc)
            return rc;
    }
    d->has_classes = true;
    return LOOM_OK;
}

static int parse_optimizer(const json_t *o, const char *name, loom_est_device_t *d, loom_err_t *err)
{
    static const char *const opts[] = {"sgd", "momentum", "adam", NULL};
    static const char *const keys[] = {"tensor_s", "elem_s", NULL};
    if (!json_is_object(o))
        return loom_err_set(err, LOOM_EINVAL, "device %s: /optimizer must be an object, found %s",
                            name, loom_json_type_name(o));
    int rc = check_keys(o, opts, name, "/optimizer", "sgd, momentum, adam", err);
    for (int i = 0; !rc && i < 3; i++) {
        const json_t *v = json_object_get(o, opts[i]);
        if (!v)
            continue;
        char path[64];
        snprintf(path, sizeof path, "/optimizer/%s", opts[i]);
        if (!json_is_object(v))
            return loom_err_set(err, LOOM_EINVAL, "device %s: %s must be an object", name, path);
        if ((rc = check_keys(v, keys, name, path, "tensor_s, elem_s", err)) ||
            (rc = num_at(v, "tensor_s", name, path, &d->opt[i].tensor_s, err)))
            return rc;
        const json_t *e = json_object_get(v, "elem_s");
        char ep[80];
        snprintf(ep, sizeof ep, "%s/elem_s", path);
        if (e && (rc = parse_curve(e, name, ep, &d->opt[i].elem_s, err)))
            return rc;
        d->opt[i].set = true;
    }
    return rc;
}

static int parse_calibrated(const json_t *obj, const char *name, loom_est_device_t *out,
                            loom_err_t *err)
{
    int rc;
    if ((rc = num_at(obj, "page_fault_s", name, "", &out->page_fault_s, err)) ||
        (rc = num_at(obj, "step_overhead_s", name, "", &out->step_overhead_s, err)))
        return rc;
    out->in_step_factor = 1;
    if ((rc = num_at(obj, "in_step_factor", name, "", &out->in_step_factor, err)))
        return rc;
    if (out->in_step_factor < 0.25 || out->in_step_factor > 4)
        return loom_err_set(err, LOOM_EINVAL, "device %s: /in_step_factor must be in [0.25, 4]",
                            name);
    const json_t *cal = json_object_get(obj, "calibrated");
    if (cal && !json_is_boolean(cal))
        return loom_err_set(err, LOOM_EINVAL, "device %s: /calibrated must be true or false", name);
    out->calibrated = cal && json_is_true(cal);
    const json_t *cls = json_object_get(obj, "op_classes");
    if (cls && (rc = parse_classes(cls, name, out, err)))
        return rc;
    const json_t *o = json_object_get(obj, "optimizer");
    if (o && (rc = parse_optimizer(o, name, out, err)))
        return rc;
    return LOOM_OK;
}

int loom_est_device_from_json(const json_t *obj, const char *name, loom_est_device_t *out,
                              loom_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(obj))
        return loom_err_set(err, LOOM_EINVAL, "device %s: expected a JSON object, found %s", name,
                            loom_json_type_name(obj));
    const char *s = NULL;
    if (loom_json_get_string(obj, "name", true, "", &s, err))
        return loom_err_prefix(err, "device %s: ", name);
    snprintf(out->name, sizeof out->name, "%s", s);
    s = "";
    if (loom_json_get_string(obj, "description", false, "", &s, err))
        return loom_err_prefix(err, "device %s: ", name);
    snprintf(out->description, sizeof out->description, "%s", s);
    double mem = 0, ctx = 0;
    int rc;
    if ((rc = get_pos(obj, "flops_fp32", name, true, &out->flops_fp32, err)) ||
        (rc = get_pos(obj, "mem_bandwidth", name, true, &out->mem_bandwidth, err)))
        return rc;
    out->flops_half = out->flops_fp32;
    out->flops_vector = out->flops_fp32;
    out->flops_conv = out->flops_fp32;
    if ((rc = get_pos(obj, "flops_half", name, false, &out->flops_half, err)) ||
        (rc = get_pos(obj, "flops_vector", name, false, &out->flops_vector, err)) ||
        (rc = get_pos(obj, "flops_conv", name, false, &out->flops_conv, err)) ||
        (rc = get_pos(obj, "op_overhead_s", name, false, &out->op_overhead_s, err)) ||
        (rc = get_pos(obj, "memory_bytes", name, false, &mem, err)) ||
        (rc = get_pos(obj, "context_bytes", name, false, &ctx, err)))
        return rc;
    if (mem > DEVICE_MAX_BYTES || ctx > DEVICE_MAX_BYTES) /* both become uint64_t below */
        return loom_err_set(err, LOOM_EINVAL, "device %s: /%s must be at most %g bytes", name,
                            mem > DEVICE_MAX_BYTES ? "memory_bytes" : "context_bytes",
                            DEVICE_MAX_BYTES);
    if (out->flops_fp32 <= 0 || out->flops_half <= 0 || out->flops_vector <= 0 ||
        out->flops_conv <= 0 || out->mem_bandwidth <= 0)
        return loom_err_set(err, LOOM_EINVAL,
                            "device %s: FLOP rates and mem_bandwidth must be positive", name);
    const json_t *curve = json_object_get(obj, "matmul_curve");
    if (curve) {
        if (!json_is_array(curve) || json_array_size(curve) < 1 || json_array_size(curve) > 8)
            return loom_err_set(
                err, LOOM_EINVAL,
                "device %s: /matmul_curve must be an array of 1 to 8 [size, FLOP/s] "
                "pairs in increasing size",
                name);
        for (size_t i = 0; i < json_array_size(curve); i++) {
            const json_t *p = json_array_get(curve, i);
            double d = p && json_is_array(p) && json_array_size(p) == 2
                           ? json_number_value(json_array_get(p, 0))
                           : -1;
            double f = p && json_is_array(p) && json_array_size(p) == 2
                           ? json_number_value(json_array_get(p, 1))
                           : -1;
            if (!(d >= 1) || !(f > 0) || f > 1e20 || (i && d <= out->curve_dim[i - 1]))
                return loom_err_set(err, LOOM_EINVAL,
                                    "device %s: /matmul_curve/%zu must be [size >= 1, FLOP/s > 0] "
                                    "with sizes increasing",
                                    name, i);
            out->curve_dim[i] = d;
            out->curve_flops[i] = f;
        }
        out->ncurve = (int)json_array_size(curve);
    }
    if ((rc = parse_calibrated(obj, name, out, err)))
        return rc;
    if ((rc = loom_est_host_from_json(obj, name, &out->host, err)))
        return rc;
    out->memory_bytes = (uint64_t)mem;
    out->context_bytes = (uint64_t)ctx;
    s = "";
    if (loom_json_get_string(obj, "malloc_tunables", false, "", &s, err))
        return loom_err_prefix(err, "device %s: ", name);
    if (strlen(s) >= sizeof out->malloc_tunables)
        return loom_err_set(
            err, LOOM_EINVAL,
            "device %s: /malloc_tunables is %zu characters long, at most %zu expected", name,
            strlen(s), sizeof out->malloc_tunables - 1);
    snprintf(out->malloc_tunables, sizeof out->malloc_tunables, "%s", s);
    char where[200];
    snprintf(where, sizeof where, "device %.120s: /malloc_tunables", name);
    if ((rc = loom_est_malloc_cfg_parse(out->malloc_tunables, where, &out->malloc_cfg, err)))
        return rc;
    s = "cuda-caching";
    if (loom_json_get_string(obj, "allocator", false, "", &s, err))
        return loom_err_prefix(err, "device %s: ", name);
    if (strcmp(s, "cuda-caching") == 0)
        out->allocator = LOOM_EST_ALLOC_CUDA_CACHING;
    else if (strcmp(s, "malloc") == 0)
        out->allocator = LOOM_EST_ALLOC_MALLOC;
    else
        return loom_err_set(
            err, LOOM_EINVAL,
            "device %s: /allocator is '%s', expected \"cuda-caching\" or \"malloc\"", name, s);
    return LOOM_OK;
}

int loom_est_device_load(const char *name_or_path, const char *dir, loom_est_device_t *out,
                         loom_err_t *err)
{
    char path[4096];
    size_t n = strlen(name_or_path);
    if (strchr(name_or_path, '/') || (n > 5 && strcmp(name_or_path + n - 5, ".json") == 0)) {
        snprintf(path, sizeof path, "%s", name_or_path);
    } else {
        for (const char *p = name_or_path; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
                return loom_err_set(err, LOOM_EINVAL,
                                    "device name '%s' may hold only a-z, 0-9, '-' and '_'",
                                    name_or_path);
        char data[4096];
        if (!dir)
            dir = getenv("LOOM_DEVICE_DIR");
        if (!dir || !*dir) {
            int rc = loom_data_path("devices", data, sizeof data, err);
            if (rc)
                return rc;
            dir = data;
        }
        snprintf(path, sizeof path, "%s/%s.json", dir, name_or_path);
    }
    if (strcmp(path, name_or_path) != 0) { /* loomd's own device directory */
        json_t *j = NULL;
        int rc = loom_json_load_file(path, &j, err);
        if (rc)
            return rc;
        rc = loom_est_device_from_json(j, path, out, err);
        json_decref(j);
        return rc;
    }
    /* A path may come from a client (loomd's model.device): a regular file
     * of at most LOOM_EST_DEVICE_MAX, and no error quotes its content. */
    loom_file_t f;
    int rc = loom_file_open(&f, path, 0, LOOM_EST_DEVICE_MAX, err);
    if (rc)
        return rc;
    loom_buf_t b = LOOM_BUF_INIT;
    rc = loom_file_read(&f, &b, err);
    loom_file_close(&f);
    if (!rc)
        rc = loom_est_device_parse(b.data, b.len, path, out, err);
    loom_buf_free(&b);
    return rc;
}

int loom_est_device_parse(const void *data, size_t len, const char *name, loom_est_device_t *out,
                          loom_err_t *err)
{
    json_t *j = NULL;
    int rc = loom_json_parse(data, len, name, 0, &j, err);
    if (!rc)
        rc = loom_est_device_from_json(j, name, out, err);
    json_decref(j);
    if (rc && rc != LOOM_ENOMEM) /* the parsers' messages may quote the bytes */
        rc = loom_err_set(err, LOOM_EINVAL,
                          "device file '%s': not a device description as docs/estimate.md gives "
                          "it (errors about a file named by path do not quote its content)",
                          name);
    return rc;
}
