/* Turns a validated catalog tree into loom_catalog_t: merged jobs with
 * typed resources, resolved paths, parameters ready to sample, and the
 * weights used to pick jobs. Validation (catalog.c) has already checked
 * every value, so failures here are only out-of-memory. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog_int.h"
#include "catalog/catalog_model.h"

int loom__catalog_scalar_text(const json_t *v, loom_buf_t *out)
{
    char num[64];
    if (json_is_string(v))
        return loom_buf_append(out, json_string_value(v), json_string_length(v));
    if (json_is_integer(v))
        return loom_buf_appendf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    if (json_is_real(v)) {
        loom_format_real(json_real_value(v), num, sizeof num);
        return loom_buf_append_str(out, num);
    }
    if (json_is_true(v))
        return loom_buf_append_str(out, "true");
    if (json_is_false(v))
        return loom_buf_append_str(out, "false");
    return loom_json_dump(out, v);
}

static json_t *as_text(const json_t *v)
{
    loom_buf_t b = LOOM_BUF_INIT;
    if (loom__catalog_scalar_text(v, &b)) {
        loom_buf_free(&b);
        return NULL;
    }
    json_t *s = json_stringn(b.data ? b.data : "", b.len);
    loom_buf_free(&b);
    return s;
}

/* Copies of an array / object with every scalar turned into a string. */
static json_t *text_array(const json_t *a)
{
    json_t *out = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e)
    {
        if (!out || json_array_append_new(out, as_text(e))) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

static json_t *text_object(const json_t *o)
{
    json_t *out = json_object();
    const char *k;
    json_t *e;
    json_object_foreach((json_t *)o, k, e)
    {
        if (!out || json_object_set_new(out, k, as_text(e))) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* NULL: out of memory (not "", a path that is not the one given). */
static char *resolve(const char *base, const char *path)
{
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = path[0] == '/' || !base || !*base || strcmp(base, ".") == 0
                 ? loom_buf_append_str(&b, path)
                 : loom_buf_appendf(&b, "%s/%s", base, path);
    if (rc != LOOM_OK) {
        loom_buf_free(&b);
        return NULL;
    }
    return loom_buf_detach(&b);
}

static uint64_t size_of(const json_t *v, uint64_t dflt)
{
    uint64_t b = dflt;
    loom_err_t e;
    if (json_is_integer(v))
        b = (uint64_t)json_integer_value(v);
    else if (json_is_string(v))
        loom_parse_size(json_string_value(v), &b, &e);
    return b;
}

static int build_params(cjob_t *j, const json_t *params)
{
    size_t n = json_object_size(params);
    j->pub.param_count = n;
    if (n == 0)
        return LOOM_OK;
    if (!(j->params = calloc(n, sizeof *j->params)))
        return LOOM_ENOMEM;
    size_t i = 0;
    const char *k;
    json_t *p;
    json_object_foreach((json_t *)params, k, p)
    {
        cparam_t *c = &j->params[i++];
        c->name = k; /* key strings live in the merged object */
        const char *t = json_string_value(json_object_get(p, "type"));
        c->log = json_is_true(json_object_get(p, "log"));
        if (strcmp(t, "choice") == 0) {
            c->kind = CP_CHOICE;
            c->values = json_object_get(p, "values");
            c->n = json_array_size(c->values);
            const json_t *w = json_object_get(p, "weights");
            if (w) {
                if (!(c->weights = calloc(c->n, sizeof *c->weights)))
                    return LOOM_ENOMEM;
                for (size_t k2 = 0; k2 < c->n; k2++)
                    c->weights[k2] = json_number_value(json_array_get(w, k2));
            }
        } else if (strcmp(t, "int") == 0) {
            c->kind = CP_INT;
            c->imin = json_integer_value(json_object_get(p, "min"));
            c->imax = json_integer_value(json_object_get(p, "max"));
        } else {
            c->kind = CP_REAL;
            c->rmin = json_number_value(json_object_get(p, "min"));
            c->rmax = json_number_value(json_object_get(p, "max"));
        }
    }
    return LOOM_OK;
}

static int build_job(cjob_t *j, json_t *m, const char *base)
{
    loom_catalog_job_t *p = &j->pub;
    loom_err_t e;
    j->merged = m;
    p->merged = m;
    p->name = json_string_value(json_object_get(m, "name"));
    p->description = json_string_value(json_object_get(m, "description"));
    p->executable = json_string_value(json_object_get(m, "executable"));
    p->image = json_string_value(json_object_get(m, "image"));
    const json_t *a = json_object_get(m, "arguments");
    json_t *empty_a = json_array(), *empty_o = json_object();
    j->args = text_array(a ? a : empty_a);
    const json_t *env = json_object_get(m, "environment");
    j->env = text_object(env ? env : empty_o);
    const json_t *lab = json_object_get(m, "labels");
    j->labels = text_object(lab ? lab : empty_o);
    json_decref(empty_a);
    json_decref(empty_o);
    if (!j->args || !j->env || !j->labels)
        return LOOM_ENOMEM;
    p->arguments = j->args;
    p->environment = j->env;
    p->labels = j->labels;
    const json_t *r = json_object_get(m, "resources");
    p->resources.cpus = json_is_integer(json_object_get(r, "cpus"))
                            ? json_integer_value(json_object_get(r, "cpus"))
                            : 1;
    p->resources.memory_bytes = size_of(json_object_get(r, "memory"), (uint64_t)1 << 30);
    p->resources.gpus = json_integer_value(json_object_get(r, "gpus"));
    p->resources.gpu_share = json_is_integer(json_object_get(r, "gpu_share"))
                                 ? json_integer_value(json_object_get(r, "gpu_share"))
                                 : 1000;
    p->resources.gpu_memory_bytes = size_of(json_object_get(r, "gpu_memory"), 0);
    p->resources.gpu_type = json_string_value(json_object_get(r, "gpu_type"));
    const json_t *tl = json_object_get(m, "time_limit");
    if (json_is_integer(tl))
        p->time_limit_ns = json_integer_value(tl) * LOOM_NS_PER_S;
    else if (json_is_string(tl))
        loom_parse_duration(json_string_value(tl), &p->time_limit_ns, &e);
    const json_t *w = json_object_get(m, "weight");
    p->weight = w ? json_number_value(w) : 1.0;
    const char *tp = json_string_value(json_object_get(m, "template"));
    const json_t *model = json_object_get(m, "model");
    const char *mp =
        json_string_value(json_is_object(model) ? json_object_get(model, "path") : model);
    if ((tp && !(j->template_path = resolve(base, tp))) ||
        (mp && !(j->model_path = resolve(base, mp))))
        return LOOM_ENOMEM;
    if (json_is_object(model)) { /* what loomd estimates: paths as loomd must see them */
        const char *dev = json_string_value(json_object_get(model, "device"));
        size_t dn = dev ? strlen(dev) : 0;
        char *dpath = dev && (strchr(dev, '/') || (dn > 5 && strcmp(dev + dn - 5, ".json") == 0))
                          ? resolve(base, dev)
                          : NULL;
        j->model_spec = json_deep_copy(model);
        int bad = !j->model_spec ||
                  json_object_set_new(j->model_spec, "path", json_string(j->model_path)) ||
                  (dpath && json_object_set_new(j->model_spec, "device", json_string(dpath)));
        free(dpath);
        if (bad)
            return LOOM_ENOMEM;
    }
    p->template_path = j->template_path;
    p->model_path = j->model_path;
    const json_t *params = json_object_get(m, "parameters");
    return build_params(j, params);
}

int loom__catalog_build(json_t *root, json_t **merged, const char *path, const char *base_dir,
                        loom_catalog_t **out, loom_err_t *err)
{
    size_t n = json_array_size(json_object_get(root, "jobs"));
    loom_catalog_t *c = calloc(1, sizeof *c);
    int rc = LOOM_OK;
    if (!c || !(c->path = strdup(path)) || !(c->dir = strdup(base_dir ? base_dir : ".")) ||
        !(c->jobs = calloc(n, sizeof *c->jobs)) || !(c->weights = calloc(n, sizeof *c->weights)) ||
        !(c->cum = calloc(n, sizeof *c->cum))) {
        rc = LOOM_ENOMEM;
    }
    if (c)
        c->root = root;
    else
        json_decref(root);
    for (size_t i = 0; i < n; i++) {
        if (rc == LOOM_OK) {
            c->n = i + 1;
            rc = build_job(&c->jobs[i], merged[i], base_dir);
            if (rc == LOOM_OK)
                rc = loom__catalog_job_fixed(c, &c->jobs[i]);
            c->weights[i] = c->jobs[i].pub.weight;
            c->wsum += c->weights[i];
            c->cum[i] = c->wsum;
        } else {
            json_decref(merged[i]);
        }
    }
    free(merged);
    if (rc) {
        loom_catalog_free(c);
        return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", path);
    }
    *out = c;
    return LOOM_OK;
}

void loom_catalog_free(loom_catalog_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        cjob_t *j = &c->jobs[i];
        for (size_t k = 0; j->params && k < j->pub.param_count; k++)
            free(j->params[k].weights);
        free(j->params);
        json_decref(j->merged);
        json_decref(j->args);
        json_decref(j->env);
        json_decref(j->labels);
        loom__catalog_job_release(j);
        free(j->template_path);
        free(j->model_path);
        json_decref(j->model_spec);
    }
    free(c->jobs);
    free(c->weights);
    free(c->cum);
    free(c->path);
    free(c->dir);
    json_decref(c->root);
    free(c);
}

size_t loom_catalog_job_count(const loom_catalog_t *c)
{
    return c ? c->n : 0;
}

const loom_catalog_job_t *loom_catalog_job(const loom_catalog_t *c, size_t i)
{
    return c && i < c->n ? &c->jobs[i].pub : NULL;
}

ptrdiff_t loom_catalog_find(const loom_catalog_t *c, const char *name)
{
    for (size_t i = 0; c && i < c->n; i++)
        if (strcmp(c->jobs[i].pub.name, name) == 0)
            return (ptrdiff_t)i;
    return -1;
}

const char *loom_catalog_path(const loom_catalog_t *c)
{
    return c->path;
}

double loom_catalog_probability(const loom_catalog_t *c, size_t i)
{
    return i < c->n && c->wsum > 0 ? c->weights[i] / c->wsum : 0.0;
}
