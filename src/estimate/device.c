/* Device descriptions for the roofline: a JSON object per device, shipped
 * under workloads/devices/ (h200.json from NVIDIA's public data sheet;
 * cpu-*.json written by bench/estimate_calibrate.c from measurements).
 *
 *   {"name": "h200", "description": "...",
 *    "flops_fp32": 6.7e13, "flops_half": 9.89e14, "flops_vector": 6.7e13,
 *    "flops_conv": 6.7e13 (optional, default flops_fp32),
 *    "mem_bandwidth": 4.8e12, "op_overhead_s": 5e-6,
 *    "memory_bytes": 150323855360, "context_bytes": 536870912,
 *    "allocator": "cuda-caching" | "malloc"}
 */
#include <string.h>

#include "estimate/est.h"

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
    out->memory_bytes = (uint64_t)mem;
    out->context_bytes = (uint64_t)ctx;
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
        snprintf(path, sizeof path, "%s/%s.json", dir ? dir : ".", name_or_path);
    }
    json_t *j = NULL;
    int rc = loom_json_load_file(path, &j, err);
    if (rc)
        return rc;
    rc = loom_est_device_from_json(j, path, out, err);
    json_decref(j);
    return rc;
}
