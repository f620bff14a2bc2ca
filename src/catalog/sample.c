/* Sampling: pick a job by weight, draw its parameters, and build the JSON
 * context that templates render (layout documented in catalog.h).
 *
 * Every draw goes through the caller's loom_rng_t in a fixed order (one
 * draw for the job, then one per parameter in document order), so a seed
 * reproduces the same jobs and values on any machine. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog_int.h"
#include "catalog/catalog_model.h"

/* One uniform draw against the cumulative weights (binary search), so a
 * catalog of thousands of jobs costs no more per pick than a small one. */
size_t loom_catalog_pick(const loom_catalog_t *c, loom_rng_t *rng)
{
    double x = loom_rng_uniform(rng) * c->cum[c->n - 1];
    size_t lo = 0, hi = c->n - 1; /* first i with x < cum[i]; all weights > 0 */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x < c->cum[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static json_t *draw(const cparam_t *p, loom_rng_t *rng)
{
    switch (p->kind) {
    case CP_CHOICE: {
        size_t i = p->weights ? loom_rng_weighted(rng, p->weights, p->n)
                              : (size_t)loom_rng_below(rng, p->n);
        return json_deep_copy(json_array_get(p->values, i));
    }
    case CP_INT: {
        int64_t v;
        if (p->log) {
            /* Log-uniform over [min, max + 1), floored: each integer k gets
             * probability log((k+1)/k) / log((max+1)/min). */
            double lo = log((double)p->imin), hi = log((double)p->imax + 1.0);
            v = (int64_t)floor(exp(lo + loom_rng_uniform(rng) * (hi - lo)));
            if (v < p->imin)
                v = p->imin;
            if (v > p->imax)
                v = p->imax;
        } else {
            v = p->imin + (int64_t)loom_rng_below(rng, (uint64_t)(p->imax - p->imin) + 1);
        }
        return json_integer(v);
    }
    case CP_REAL: {
        double u = loom_rng_uniform(rng), v;
        if (p->log)
            v = exp(log(p->rmin) + u * (log(p->rmax) - log(p->rmin)));
        else
            v = p->rmin + u * (p->rmax - p->rmin);
        if (v < p->rmin)
            v = p->rmin;
        if (v > p->rmax)
            v = p->rmax;
        return json_real(v);
    }
    }
    return NULL;
}

/* s with ${name} replaced by the sampled parameter and $$ by $. */
static json_t *substitute(const char *s, const json_t *params, const char *dir)
{
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = LOOM_OK;
    for (const char *c = s; *c && rc == LOOM_OK; c++) {
        if (c[0] == '$' && c[1] == '$') {
            rc = loom_buf_append_char(&b, '$');
            c++;
        } else if (c[0] == '$' && c[1] == '{' && strchr(c + 2, '}')) {
            const char *end = strchr(c + 2, '}');
            char name[128];
            size_t n = (size_t)(end - c - 2);
            snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1),
                     c + 2);
            const json_t *v = json_object_get(params, name);
            if (v)
                rc = loom__catalog_scalar_text(v, &b);
            else if (strcmp(name, "catalog_dir") == 0)
                rc = loom_buf_append_str(&b, dir);
            else
                rc = loom_buf_append(&b, c, n + 3);
            c = end;
        } else {
            rc = loom_buf_append_char(&b, *c);
        }
    }
    json_t *out = rc ? NULL : json_stringn(b.data ? b.data : "", b.len);
    loom_buf_free(&b);
    return out;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* [{"name": k, "value": v}, ...] sorted by k. */
static json_t *pair_list(const json_t *obj)
{
    size_t n = json_object_size(obj), i = 0;
    const char **keys = calloc(n ? n : 1, sizeof *keys);
    json_t *list = json_array();
    if (!keys || !list)
        goto fail;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) keys[i++] = k;
    qsort(keys, n, sizeof *keys, cmp_names);
    for (i = 0; i < n; i++)
        if (json_array_append_new(list, json_pack("{s:s,s:O}", "name", keys[i], "value",
                                                  json_object_get(obj, keys[i]))))
            goto fail;
    free(keys);
    return list;
fail:
    free(keys);
    json_decref(list);
    return NULL;
}

static json_t *dns_label(const char *name)
{
    char out[64];
    size_t n = 0;
    for (const char *c = name; *c && n < 63; c++) {
        char ch = *c;
        if (ch >= 'A' && ch <= 'Z')
            ch = (char)(ch - 'A' + 'a');
        else if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
            ch = '-';
        out[n++] = ch;
    }
    while (n > 0 && out[n - 1] == '-')
        n--;
    size_t s = 0;
    while (s < n && out[s] == '-')
        s++;
    if (s == n)
        return json_string("job");
    return json_stringn(out + s, n - s);
}

static json_t *time_limit(int64_t ns)
{
    int64_t secs = (ns + LOOM_NS_PER_S - 1) / LOOM_NS_PER_S;
    char slurm[48], text[48];
    int64_t d = secs / 86400, h = secs % 86400 / 3600, m = secs % 3600 / 60, s = secs % 60;
    if (d)
        snprintf(slurm, sizeof slurm, "%lld-%02lld:%02lld:%02lld", (long long)d, (long long)h,
                 (long long)m, (long long)s);
    else
        snprintf(slurm, sizeof slurm, "%02lld:%02lld:%02lld", (long long)h, (long long)m,
                 (long long)s);
    loom_format_duration(ns, text, sizeof text);
    return json_pack("{s:I,s:I,s:s,s:s}", "seconds", (json_int_t)secs, "minutes",
                     (json_int_t)((secs + 59) / 60), "slurm", slurm, "text", text);
}

static json_t *resources(const loom_catalog_resources_t *r)
{
    char mem[48];
    loom_format_size(r->memory_bytes, mem, sizeof mem);
    json_t *o =
        json_pack("{s:I,s:s,s:I,s:I,s:I,s:I,s:f,s:b}", "cpus", (json_int_t)r->cpus, "memory", mem,
                  "memory_bytes", (json_int_t)r->memory_bytes, "memory_mib",
                  (json_int_t)((r->memory_bytes + (1u << 20) - 1) >> 20), "gpus",
                  (json_int_t)r->gpus, "gpu_share", (json_int_t)r->gpu_share, "gpu_fraction",
                  r->gpus == 0 ? 0.0 : r->gpu_share / 1000.0, "has_gpus", r->gpus > 0);
    if (o && r->gpu_memory_bytes) {
        loom_format_size(r->gpu_memory_bytes, mem, sizeof mem);
        if (json_object_set_new(o, "gpu_memory", json_string(mem)) ||
            json_object_set_new(
                o, "gpu_memory_mib",
                json_integer((json_int_t)((r->gpu_memory_bytes + (1u << 20) - 1) >> 20)))) {
            json_decref(o);
            return NULL;
        }
    }
    if (o && r->gpu_type && json_object_set_new(o, "gpu_type", json_string(r->gpu_type))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int set(json_t *o, const char *k, json_t *v)
{
    return v ? json_object_set_new(o, k, v) : -1;
}

static bool has_dollar(const json_t *v)
{
    size_t i;
    const char *k;
    json_t *e;
    if (json_is_array(v)) {
        json_array_foreach(v, i, e) if (strchr(json_string_value(e), '$')) return true;
    } else {
        json_object_foreach((json_t *)v, k, e) if (strchr(json_string_value(e), '$')) return true;
    }
    return false;
}

/* arguments + command, or environment + env, from the sampled params. */
static int set_args(json_t *o, const cjob_t *j, const json_t *params, const char *dir)
{
    json_t *args = json_array(), *command = json_array();
    int bad = !args || !command || json_array_append_new(command, json_string(j->pub.executable));
    size_t ai;
    json_t *a;
    json_array_foreach(j->args, ai, a)
    {
        json_t *s = bad ? NULL : substitute(json_string_value(a), params, dir);
        bad = bad || !s || json_array_append(args, s) || json_array_append_new(command, s);
    }
    bad = bad || set(o, "arguments", json_incref(args)) || set(o, "command", json_incref(command));
    json_decref(args);
    json_decref(command);
    return bad;
}

static int set_env(json_t *o, const cjob_t *j, const json_t *params, const char *dir)
{
    json_t *env = json_object();
    int bad = !env;
    const char *ek;
    json_t *ev;
    json_object_foreach(j->env, ek, ev)
    {
        if (!bad)
            bad = set(env, ek, substitute(json_string_value(ev), params, dir));
    }
    bad = bad || set(o, "env", pair_list(env)) || set(o, "environment", json_incref(env));
    json_decref(env);
    return bad;
}

/* The model object with each "${name}" member replaced by the parameter's
 * sampled value, typed (validation made sure every draw fits). */
static json_t *model_spec(const json_t *spec, const json_t *params)
{
    json_t *o = json_copy((json_t *)spec);
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(o, tmp, k, v)
    {
        const char *s = json_string_value(v);
        size_t n = s ? strlen(s) : 0;
        if (n < 4 || s[0] != '$' || s[1] != '{' || s[n - 1] != '}')
            continue;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(n - 3), s + 2);
        const json_t *val = json_object_get(params, name);
        if (val && json_object_set_new(o, k, json_deep_copy(val))) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

/* The members of a job's context that no draw changes, built once at load
 * time and shared (by reference) by every context of the job. */
int loom__catalog_job_fixed(const loom_catalog_t *c, cjob_t *j)
{
    const loom_catalog_job_t *p = &j->pub;
    json_t *o = json_object(), *none = json_object();
    int bad = !o || !none;
    bad = bad || set(o, "name", json_string(p->name)) || set(o, "dns_name", dns_label(p->name)) ||
          set(o, "executable", json_string(p->executable)) ||
          set(o, "resources", resources(&p->resources)) ||
          set(o, "labels", json_deep_copy(j->labels)) ||
          set(o, "label_list", pair_list(j->labels)) || set(o, "weight", json_real(p->weight));
    if (!bad && p->description)
        bad = set(o, "description", json_string(p->description));
    if (!bad && p->time_limit_ns > 0)
        bad = set(o, "time_limit", time_limit(p->time_limit_ns));
    if (!bad && p->template_path)
        bad = set(o, "template", json_string(p->template_path));
    if (!bad && p->model_path)
        bad = set(o, "model", json_string(p->model_path));
    if (!bad && p->image)
        bad = set(o, "image", json_string(p->image));
    j->args_vary = has_dollar(j->args);
    j->env_vary = has_dollar(j->env);
    if (!bad && !j->args_vary)
        bad = set_args(o, j, none, c->dir);
    if (!bad && !j->env_vary)
        bad = set_env(o, j, none, c->dir);
    json_decref(none);
    if (bad) {
        json_decref(o);
        return LOOM_ENOMEM;
    }
    j->fixed = o;
    return LOOM_OK;
}

int loom_catalog_sample(const loom_catalog_t *c, size_t i, loom_rng_t *rng, json_t **ctx,
                        loom_err_t *err)
{
    if (!c || i >= c->n)
        return loom_err_set(err, LOOM_EINVAL, "catalog job index %zu: expected < %zu", i,
                            c ? c->n : 0);
    const cjob_t *j = &c->jobs[i];
    json_t *o = json_copy(j->fixed), *params = json_object();
    int bad = !o || !params;
    for (size_t k = 0; !bad && k < j->pub.param_count; k++)
        bad = set(params, j->params[k].name, draw(&j->params[k], rng));
    if (!bad && j->args_vary)
        bad = set_args(o, j, params, c->dir);
    if (!bad && j->env_vary)
        bad = set_env(o, j, params, c->dir);
    if (!bad && j->model_spec)
        bad = set(o, "model_spec", model_spec(j->model_spec, params));
    bad = bad || set(o, "params", json_incref(params));
    json_decref(params);
    if (bad) {
        json_decref(o);
        return loom_err_set(err, LOOM_ENOMEM, "sampling job '%s': out of memory", j->pub.name);
    }
    *ctx = o;
    return LOOM_OK;
}
