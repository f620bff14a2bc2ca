/* rubick/spec.c — a job's "reconfig" object: what a scheduler may change.
 *
 * Every field is checked as it is read and the first problem is returned
 * with its JSON pointer and what was expected, so a submission or catalog
 * entry is either taken whole or refused whole. The plan the job asked for
 * is always allowed, so ranges and sets only ever widen what it runs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "loom/rubick.h"

static const char *const spec_keys[] = {"global_batch", "gpus",    "accumulation", "recompute",
                                        "zero",         "offload", "cpus",         "memory",
                                        "plan",         "model",   "measured"};
static const char *const plan_keys[] = {"accumulation", "recompute", "zero", "offload"};
#define N(a) (sizeof(a) / sizeof((a)[0]))

static int unknown_key(const json_t *obj, const char *where, const char *const *keys, size_t n,
                       loom_err_t *err)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        size_t i = 0;
        while (i < n && strcmp(k, keys[i]) != 0)
            i++;
        if (i == n) {
            char list[256] = "";
            for (size_t j = 0; j < n; j++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "",
                         keys[j]);
            return loom_err_set(err, LOOM_EINVAL, "%s/%s: unknown member, expected one of %s",
                                where, k, list);
        }
    }
    return LOOM_OK;
}

/* {"min": a, "max": b} of integers in [lo, hi]. */
static int int_range(const json_t *obj, const char *key, const char *where, int64_t lo, int64_t hi,
                     int64_t *min, int64_t *max, loom_err_t *err)
{
    const json_t *r = json_object_get(obj, key);
    if (!r)
        return LOOM_OK;
    if (!json_is_object(r))
        return loom_err_set(err, LOOM_EINVAL,
                            "%s/%s: found %s, expected an object {\"min\": N, \"max\": N}", where,
                            key, loom_json_type_name(r));
    char w[256];
    snprintf(w, sizeof w, "%s/%s", where, key);
    static const char *const keys[] = {"min", "max"};
    int rc = unknown_key(r, w, keys, 2, err);
    if (rc || (rc = loom_json_get_int(r, "min", true, w, lo, hi, min, err)) ||
        (rc = loom_json_get_int(r, "max", true, w, lo, hi, max, err)))
        return rc;
    if (*min > *max)
        return loom_err_set(err, LOOM_EINVAL, "%s: min %lld is above max %lld, expected min <= max",
                            w, (long long)*min, (long long)*max);
    return LOOM_OK;
}

/* A size: "16GiB" or an integer of bytes, in MiB (rounded up). */
static int size_mib(const json_t *v, const char *where, int64_t *out, loom_err_t *err)
{
    uint64_t bytes;
    if (json_is_integer(v) && json_integer_value(v) > 0) {
        bytes = (uint64_t)json_integer_value(v);
    } else if (json_is_string(v)) {
        loom_err_t e;
        if (loom_parse_size(json_string_value(v), &bytes, &e))
            return loom_err_set(err, LOOM_EINVAL, "%s: %s, expected a size such as \"16GiB\"",
                                where, e.msg);
    } else {
        return loom_err_set(err, LOOM_EINVAL, "%s: found %s, expected a size such as \"16GiB\"",
                            where, loom_json_type_name(v));
    }
    if (bytes == 0 || bytes > ((uint64_t)1 << 50))
        return loom_err_set(err, LOOM_EINVAL, "%s: expected a size from 1 byte to 1PiB", where);
    *out = (int64_t)((bytes + (1u << 20) - 1) >> 20);
    return LOOM_OK;
}

static int cpu_memory(const json_t *obj, const char *where, loom_rubick_spec_t *s, loom_err_t *err)
{
    const json_t *c = json_object_get(obj, "cpus");
    char w[256];
    if (c) {
        snprintf(w, sizeof w, "%s/cpus", where);
        double lo, hi;
        static const char *const keys[] = {"min", "max"};
        int rc;
        if (!json_is_object(c))
            return loom_err_set(err, LOOM_EINVAL,
                                "%s: found %s, expected an object {\"min\": N, \"max\": N} of CPUs",
                                w, loom_json_type_name(c));
        if ((rc = unknown_key(c, w, keys, 2, err)) ||
            (rc = loom_json_get_number(c, "min", true, w, &lo, err)) ||
            (rc = loom_json_get_number(c, "max", true, w, &hi, err)))
            return rc;
        if (!(lo >= 0.001 && hi <= 4096 && lo <= hi))
            return loom_err_set(err, LOOM_EINVAL,
                                "%s: found min %g max %g, expected 0.001 <= min <= max <= 4096", w,
                                lo, hi);
        s->cpu_min = (int64_t)llround(lo * 1000);
        s->cpu_max = (int64_t)llround(hi * 1000);
    }
    const json_t *m = json_object_get(obj, "memory");
    if (!m)
        return LOOM_OK;
    snprintf(w, sizeof w, "%s/memory", where);
    if (!json_is_object(m) || !json_object_get(m, "min") || !json_object_get(m, "max") ||
        json_object_size(m) != 2)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s: expected an object {\"min\": SIZE, \"max\": SIZE} such as "
                            "{\"min\": \"16GiB\", \"max\": \"64GiB\"}",
                            w);
    char wm[280];
    snprintf(wm, sizeof wm, "%s/min", w);
    int rc = size_mib(json_object_get(m, "min"), wm, &s->mem_min, err);
    snprintf(wm, sizeof wm, "%s/max", w);
    if (rc || (rc = size_mib(json_object_get(m, "max"), wm, &s->mem_max, err)))
        return rc;
    if (s->mem_min > s->mem_max)
        return loom_err_set(err, LOOM_EINVAL, "%s: min is above max, expected min <= max", w);
    return LOOM_OK;
}

/* An array of allowed values: integers in [lo, hi] (bools when lo < 0). */
static int value_set(const json_t *obj, const char *key, const char *where, int lo, int hi,
                     uint64_t *mask, loom_err_t *err)
{
    const json_t *a = json_object_get(obj, key);
    if (!a)
        return LOOM_OK;
    bool boolean = lo < 0;
    if (!json_is_array(a) || json_array_size(a) == 0)
        return loom_err_set(err, LOOM_EINVAL, "%s/%s: found %s, expected a non-empty array of %s",
                            where, key,
                            json_is_array(a) ? "an empty array" : loom_json_type_name(a),
                            boolean ? "true/false" : "integers");
    *mask = 0;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
    {
        if (boolean && json_is_boolean(v)) {
            *mask |= json_is_true(v) ? 2u : 1u;
            continue;
        }
        if (!boolean && json_is_integer(v) && json_integer_value(v) >= lo &&
            json_integer_value(v) <= hi) {
            int k = (int)json_integer_value(v);
            *mask |= UINT64_C(1) << (key[0] == 'a' ? k - 1 : k);
            continue;
        }
        if (boolean)
            return loom_err_set(err, LOOM_EINVAL, "%s/%s/%zu: found %s, expected true or false",
                                where, key, i, loom_json_type_name(v));
        return loom_err_set(err, LOOM_EINVAL, "%s/%s/%zu: found %s, expected an integer %d..%d",
                            where, key, i, loom_json_type_name(v), lo, hi);
    }
    return LOOM_OK;
}

static int parse_plan(const json_t *obj, const char *where, loom_rubick_plan_t *p, loom_err_t *err)
{
    const json_t *pl = json_object_get(obj, "plan");
    if (!pl)
        return LOOM_OK;
    char w[256];
    snprintf(w, sizeof w, "%s/plan", where);
    if (!json_is_object(pl))
        return loom_err_set(err, LOOM_EINVAL,
                            "%s: found %s, expected an object {\"accumulation\", \"recompute\", "
                            "\"zero\", \"offload\"}",
                            w, loom_json_type_name(pl));
    int64_t accum = p->accum, zero = p->zero;
    int rc;
    if ((rc = unknown_key(pl, w, plan_keys, N(plan_keys), err)) ||
        (rc = loom_json_get_int(pl, "accumulation", false, w, 1, LOOM_RUBICK_ACCUM_MAX, &accum,
                                err)) ||
        (rc = loom_json_get_int(pl, "zero", false, w, 0, 3, &zero, err)) ||
        (rc = loom_json_get_bool(pl, "recompute", false, w, &p->recompute, err)) ||
        (rc = loom_json_get_bool(pl, "offload", false, w, &p->offload, err)))
        return rc;
    p->accum = (int)accum;
    p->zero = (int)zero;
    return LOOM_OK;
}

/* "model": a name of the zoo's models (the performance model's numbers). */
static int model_name(const json_t *obj, const char *where, loom_rubick_spec_t *out,
                      loom_err_t *err)
{
    const json_t *m = json_object_get(obj, "model");
    if (!m)
        return LOOM_OK;
    const char *name = json_string_value(m);
    if (!name || !loom_rubick_model_find(name)) {
        size_t n;
        const loom_rubick_model_t *all = loom_rubick_models(&n);
        char list[256] = "";
        for (size_t i = 0; i < n; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                     all[i].name);
        return loom_err_set(err, LOOM_EINVAL, "%s/model: found %s%.40s%s, expected one of %s",
                            where, name ? "'" : loom_json_type_name(m), name ? name : "",
                            name ? "'" : "", list);
    }
    snprintf(out->model, sizeof out->model, "%s", name);
    return LOOM_OK;
}

/* "measured": the job's first measured steps, [{"gpus", "plan", "cpus",
 * "step_s", "data_s"}], at most LOOM_RUBICK_MEASURED_MAX. */
static int measured(const json_t *obj, const char *where, loom_rubick_spec_t *out, loom_err_t *err)
{
    static const char *const keys[] = {"gpus", "plan", "cpus", "step_s", "data_s"};
    const json_t *arr = json_object_get(obj, "measured");
    if (!arr)
        return LOOM_OK;
    if (!json_is_array(arr) || json_array_size(arr) > LOOM_RUBICK_MEASURED_MAX)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s/measured: found %s%s, expected an array of at most %d steps", where,
                            loom_json_type_name(arr), json_is_array(arr) ? " too long" : "",
                            LOOM_RUBICK_MEASURED_MAX);
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const json_t *m = json_array_get(arr, i);
        char w[256];
        snprintf(w, sizeof w, "%s/measured/%zu", where, i);
        if (!json_is_object(m))
            return loom_err_set(err, LOOM_EINVAL,
                                "%s: found %s, expected an object {\"gpus\", \"plan\", "
                                "\"cpus\", \"step_s\", \"data_s\"}",
                                w, loom_json_type_name(m));
        loom_rubick_sample_t *x = &out->measured[i];
        x->config.plan = (loom_rubick_plan_t){.gpus = 1, .accum = 1};
        int64_t g = 1;
        double cpus = 0;
        x->data_s = 0;
        int rc;
        if ((rc = unknown_key(m, w, keys, N(keys), err)) ||
            (rc = loom_json_get_int(m, "gpus", true, w, 1, LOOM_RUBICK_GPUS_MAX, &g, err)) ||
            (rc = parse_plan(m, w, &x->config.plan, err)) ||
            (rc = loom_json_get_number(m, "cpus", true, w, &cpus, err)) ||
            (rc = loom_json_get_number(m, "step_s", true, w, &x->step_s, err)) ||
            (rc = loom_json_get_number(m, "data_s", false, w, &x->data_s, err)))
            return rc;
        if (!(cpus > 0 && cpus <= 1e6) || !(x->step_s > 0 && x->step_s < 1e6) ||
            !(x->data_s >= 0 && x->data_s < 1e6))
            return loom_err_set(err, LOOM_EINVAL,
                                "%s: cpus %g, step_s %g, data_s %g: expected 0 < cpus <= 1e6, "
                                "0 < step_s < 1e6 and 0 <= data_s < 1e6 (seconds)",
                                w, cpus, x->step_s, x->data_s);
        x->config.plan.gpus = (int)g;
        x->config.cpu_milli = (int64_t)(cpus * 1000);
        out->nmeasured = i + 1;
    }
    return LOOM_OK;
}

int loom_rubick_spec_parse(const json_t *obj, const char *where, loom_rubick_spec_t *out,
                           loom_err_t *err)
{
    memset(out, 0, sizeof *out);
    out->asked = (loom_rubick_plan_t){.gpus = 0, .accum = 1};
    if (!obj)
        return LOOM_OK;
    if (!json_is_object(obj))
        return loom_err_set(err, LOOM_EINVAL,
                            "%s: found %s, expected an object {\"global_batch\", \"gpus\", ...}",
                            where, loom_json_type_name(obj));
    int64_t gmin = 0, gmax = 0;
    uint64_t accum = 0, recompute = 0, zero = 0, offload = 0;
    int rc;
    if ((rc = unknown_key(obj, where, spec_keys, N(spec_keys), err)) ||
        (rc = loom_json_get_int(obj, "global_batch", true, where, 1, LOOM_RUBICK_BATCH_MAX,
                                &out->global_batch, err)) ||
        (rc = int_range(obj, "gpus", where, 1, LOOM_RUBICK_GPUS_MAX, &gmin, &gmax, err)) ||
        (rc = value_set(obj, "accumulation", where, 1, LOOM_RUBICK_ACCUM_MAX, &accum, err)) ||
        (rc = value_set(obj, "recompute", where, -1, 1, &recompute, err)) ||
        (rc = value_set(obj, "zero", where, 0, 3, &zero, err)) ||
        (rc = value_set(obj, "offload", where, -1, 1, &offload, err)) ||
        (rc = cpu_memory(obj, where, out, err)) || (rc = parse_plan(obj, where, &out->asked, err)))
        return rc;
    if ((rc = model_name(obj, where, out, err)) || (rc = measured(obj, where, out, err)))
        return rc;
    const loom_rubick_plan_t *a = &out->asked;
    out->reconfigurable = true;
    out->gpus_min = (int)gmin;
    out->gpus_max = (int)gmax;
    /* the asked plan is always allowed */
    out->accum_mask = accum | UINT64_C(1) << (a->accum - 1);
    out->recompute_mask = (uint8_t)(recompute | (a->recompute ? 2u : 1u));
    out->zero_mask = (uint8_t)(zero | 1u << a->zero);
    out->offload_mask = (uint8_t)(offload | (a->offload ? 2u : 1u));
    if (a->offload && a->zero == 0)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s/plan/offload: true with zero 0, expected offload only with a ZeRO "
                            "stage of 1 or more (ZeRO-Offload)",
                            where);
    return LOOM_OK;
}

int loom_rubick_spec_check_asked(loom_rubick_spec_t *s, int gpus, int64_t cpu_milli,
                                 int64_t mem_mib, const char *where, loom_err_t *err)
{
    if (!s->reconfigurable)
        return LOOM_OK;
    if (gpus < 1 || gpus > LOOM_RUBICK_GPUS_MAX)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s: the job asks for %d GPUs, expected 1..%d whole GPUs for a "
                            "reconfigurable job",
                            where, gpus, LOOM_RUBICK_GPUS_MAX);
    s->asked.gpus = gpus;
    s->asked_cpu = cpu_milli;
    s->asked_mem = mem_mib;
    if (!s->gpus_min)
        s->gpus_min = s->gpus_max = gpus;
    if (gpus < s->gpus_min || gpus > s->gpus_max)
        return loom_err_set(err, LOOM_EINVAL, "%s/gpus: the job asks for %d GPUs, outside %d..%d",
                            where, gpus, s->gpus_min, s->gpus_max);
    if (!s->cpu_min)
        s->cpu_min = s->cpu_max = cpu_milli;
    if (cpu_milli && (cpu_milli < s->cpu_min || cpu_milli > s->cpu_max))
        return loom_err_set(err, LOOM_EINVAL, "%s/cpus: the job asks for %g CPUs, outside %g..%g",
                            where, (double)cpu_milli / 1000, (double)s->cpu_min / 1000,
                            (double)s->cpu_max / 1000);
    if (!s->mem_min)
        s->mem_min = s->mem_max = mem_mib;
    if (mem_mib && (mem_mib < s->mem_min || mem_mib > s->mem_max))
        return loom_err_set(err, LOOM_EINVAL,
                            "%s/memory: the job asks for %lld MiB, outside %lld..%lld MiB", where,
                            (long long)mem_mib, (long long)s->mem_min, (long long)s->mem_max);
    if (s->global_batch % ((int64_t)gpus * s->asked.accum) != 0)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s/global_batch: %lld does not split into %d GPUs x %d accumulation "
                            "steps, expected a multiple of %d",
                            where, (long long)s->global_batch, gpus, s->asked.accum,
                            gpus * s->asked.accum);
    return LOOM_OK;
}

bool loom_rubick_plan_allowed(const loom_rubick_spec_t *s, const loom_rubick_plan_t *p)
{
    if (p->gpus < s->gpus_min || p->gpus > s->gpus_max || p->accum < 1 ||
        p->accum > LOOM_RUBICK_ACCUM_MAX || p->zero < 0 || p->zero > 3)
        return false;
    if (!(s->accum_mask >> (p->accum - 1) & 1) || !(s->recompute_mask >> p->recompute & 1) ||
        !(s->zero_mask >> p->zero & 1) || !(s->offload_mask >> p->offload & 1))
        return false;
    if (p->offload && p->zero == 0)
        return false;
    return s->global_batch % ((int64_t)p->gpus * p->accum) == 0;
}
