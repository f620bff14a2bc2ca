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

/* One parameter's draw, before it becomes JSON or text. */
typedef struct drawn {
    size_t index; /* CP_CHOICE */
    int64_t i;    /* CP_INT */
    double r;     /* CP_REAL */
} drawn_t;

static void draw(const cparam_t *p, loom_rng_t *rng, drawn_t *d)
{
    switch (p->kind) {
    case CP_CHOICE:
        d->index = p->weights ? loom_rng_weighted(rng, p->weights, p->n)
                              : (size_t)loom_rng_below(rng, p->n);
        break;
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
        d->i = v;
        break;
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
        d->r = v;
        break;
    }
    }
}

static json_t *drawn_json(const cparam_t *p, const drawn_t *d)
{
    switch (p->kind) {
    case CP_CHOICE: return json_deep_copy(json_array_get(p->values, d->index));
    case CP_INT: return json_integer(d->i);
    case CP_REAL: return json_real(d->r);
    }
    return NULL;
}

/* ------------------------------------------------------ substitutions */

static ptrdiff_t param_index(const cjob_t *j, const char *name)
{
    for (size_t k = 0; k < j->pub.param_count; k++)
        if (strcmp(j->params[k].name, name) == 0)
            return (ptrdiff_t)k;
    return -1;
}

static int csub_literal(csub_t *cs, loom_buf_t *text, size_t *cap, const char *s, size_t n)
{
    if (n == 0)
        return LOOM_OK;
    size_t off = text->len;
    if (loom_buf_append(text, s, n))
        return LOOM_ENOMEM;
    csub_seg_t *last = cs->nsegs ? &cs->segs[cs->nsegs - 1] : NULL;
    if (last && last->param < 0 && last->off + last->len == off) {
        last->len += n;
        return LOOM_OK;
    }
    if (loom_vec_reserve((void **)&cs->segs, cap, cs->nsegs + 1, sizeof *cs->segs, 4))
        return LOOM_ENOMEM;
    cs->segs[cs->nsegs++] = (csub_seg_t){.off = off, .len = n, .param = -1};
    return LOOM_OK;
}

static int csub_param(csub_t *cs, size_t *cap, ptrdiff_t k)
{
    if (loom_vec_reserve((void **)&cs->segs, cap, cs->nsegs + 1, sizeof *cs->segs, 4))
        return LOOM_ENOMEM;
    cs->segs[cs->nsegs++] = (csub_seg_t){.param = k};
    cs->varies = true;
    return LOOM_OK;
}

/* s with ${name} resolved: a parameter of the job, else ${catalog_dir} (the
 * catalog's directory), else left as written; $$ is a literal $. */
static int csub_compile(csub_t *cs, const char *s, const cjob_t *j, const char *dir)
{
    loom_buf_t text = LOOM_BUF_INIT;
    size_t cap = 0;
    int rc = loom_buf_reserve(&text, 0);
    memset(cs, 0, sizeof *cs);
    for (const char *c = s; *c && rc == LOOM_OK; c++) {
        if (c[0] == '$' && c[1] == '$') {
            rc = csub_literal(cs, &text, &cap, "$", 1);
            c++;
        } else if (c[0] == '$' && c[1] == '{' && strchr(c + 2, '}')) {
            const char *end = strchr(c + 2, '}');
            char name[128];
            size_t n = (size_t)(end - c - 2);
            snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1),
                     c + 2);
            ptrdiff_t k = param_index(j, name);
            if (k >= 0)
                rc = csub_param(cs, &cap, k);
            else if (strcmp(name, "catalog_dir") == 0)
                rc = csub_literal(cs, &text, &cap, dir, strlen(dir));
            else
                rc = csub_literal(cs, &text, &cap, c, n + 3);
            c = end;
        } else {
            rc = csub_literal(cs, &text, &cap, c, 1);
        }
    }
    cs->text = loom_buf_detach(&text);
    if (rc == LOOM_OK && !cs->text)
        rc = LOOM_ENOMEM;
    return rc;
}

static void csub_free(csub_t *cs)
{
    free(cs->text);
    free(cs->segs);
}

/* The substituted string, parameters from vals (NULL: cs does not vary). */
static json_t *csub_json(const csub_t *cs, json_t *const *vals)
{
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = LOOM_OK;
    for (size_t i = 0; i < cs->nsegs && rc == LOOM_OK; i++) {
        const csub_seg_t *g = &cs->segs[i];
        if (g->param < 0)
            rc = loom_buf_append(&b, cs->text + g->off, g->len);
        else
            rc = vals ? loom__catalog_scalar_text(vals[g->param], &b) : LOOM_EINTERNAL;
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
    // cppcheck-suppress uninitvar ; s < n, and out[0..n) is written above
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

/* arguments + command from one value per argument (references taken
 * over; the same value goes into both arrays). */
static int set_args(json_t *o, const cjob_t *j, json_t **vals)
{
    json_t *args = json_array(), *command = json_array();
    int bad = !args || !command || json_array_append_new(command, json_string(j->pub.executable));
    for (size_t i = 0; i < j->nargs; i++) {
        json_t *s = vals[i];
        vals[i] = NULL;
        bad = bad || !s || json_array_append(args, s) || json_array_append(command, s);
        json_decref(s);
    }
    bad = bad || set(o, "arguments", json_incref(args)) || set(o, "command", json_incref(command));
    json_decref(args);
    json_decref(command);
    return bad;
}

/* environment + env from one value per environment member, in the
 * catalog's order (references taken over). */
static int set_env(json_t *o, const cjob_t *j, json_t **vals)
{
    json_t *env = json_object();
    int bad = !env;
    size_t i = 0;
    const char *ek;
    json_t *ev;
    json_object_foreach(j->env, ek, ev)
    {
        json_t *v = vals[i];
        vals[i++] = NULL;
        if (!bad)
            bad = set(env, ek, v);
        else
            json_decref(v);
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

static int compile_subs(const loom_catalog_t *c, cjob_t *j)
{
    j->nargs = json_array_size(j->args);
    j->nenv = json_object_size(j->env);
    j->arg_subs = calloc(j->nargs + 1, sizeof *j->arg_subs);
    j->env_subs = calloc(j->nenv + 1, sizeof *j->env_subs);
    if (!j->arg_subs || !j->env_subs)
        return LOOM_ENOMEM;
    for (size_t i = 0; i < j->nargs; i++)
        if (csub_compile(&j->arg_subs[i], json_string_value(json_array_get(j->args, i)), j, c->dir))
            return LOOM_ENOMEM;
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach(j->env, k, v)
    {
        if (csub_compile(&j->env_subs[i++], json_string_value(v), j, c->dir))
            return LOOM_ENOMEM;
    }
    return LOOM_OK;
}

void loom__catalog_job_release(cjob_t *j)
{
    for (size_t i = 0; j->arg_subs && i < j->nargs; i++)
        csub_free(&j->arg_subs[i]);
    for (size_t i = 0; j->env_subs && i < j->nenv; i++)
        csub_free(&j->env_subs[i]);
    free(j->arg_subs);
    free(j->env_subs);
    json_decref(j->fixed);
    j->arg_subs = j->env_subs = NULL;
    j->fixed = NULL;
}

/* Fixed (non-varying) substituted values for every argument or
 * environment member: vals[i] from subs[i]. */
static int fixed_values(const csub_t *subs, size_t n, json_t **vals)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        bad |= !(vals[i] = csub_json(&subs[i], NULL));
    return bad;
}

static void drop_values(json_t **vals, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_decref(vals[i]);
        vals[i] = NULL;
    }
}

/* The members of a job's context that no draw changes, built once at load
 * time and shared (by reference) by every context of the job. */
int loom__catalog_job_fixed(const loom_catalog_t *c, cjob_t *j)
{
    const loom_catalog_job_t *p = &j->pub;
    json_t *o = json_object();
    int bad = !o;
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
    bad = bad || compile_subs(c, j);
    json_t **vals = calloc(j->nargs + j->nenv + 1, sizeof *vals);
    bad = bad || !vals;
    if (!bad && !j->args_vary)
        bad = fixed_values(j->arg_subs, j->nargs, vals) || set_args(o, j, vals);
    if (vals)
        drop_values(vals, j->nargs);
    if (!bad && !j->env_vary)
        bad = fixed_values(j->env_subs, j->nenv, vals) || set_env(o, j, vals);
    if (vals)
        drop_values(vals, j->nenv);
    free(vals);
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
    size_t np = j->pub.param_count;
    json_t **vals = calloc(np + j->nargs + j->nenv + 1, sizeof *vals);
    json_t *o = json_copy(j->fixed), *params = json_object();
    int bad = !vals || !o || !params;
    for (size_t k = 0; !bad && k < np; k++) {
        drawn_t d;
        draw(&j->params[k], rng, &d);
        vals[k] = drawn_json(&j->params[k], &d);
        bad = !vals[k] || json_object_set(params, j->params[k].name, vals[k]);
    }
    json_t **av = vals ? vals + np : NULL, **ev = vals ? vals + np + j->nargs : NULL;
    for (size_t a = 0; !bad && j->args_vary && a < j->nargs; a++)
        bad = !(av[a] = csub_json(&j->arg_subs[a], vals));
    bad = bad || (j->args_vary && set_args(o, j, av));
    for (size_t e = 0; !bad && j->env_vary && e < j->nenv; e++)
        bad = !(ev[e] = csub_json(&j->env_subs[e], vals));
    bad = bad || (j->env_vary && set_env(o, j, ev));
    if (!bad && j->model_spec)
        bad = set(o, "model_spec", model_spec(j->model_spec, params));
    bad = bad || set(o, "params", json_incref(params));
    json_decref(params);
    if (vals)
        drop_values(vals, np + j->nargs + j->nenv);
    free(vals);
    if (bad) {
        json_decref(o);
        return loom_err_set(err, LOOM_ENOMEM, "sampling job '%s': out of memory", j->pub.name);
    }
    *ctx = o;
    return LOOM_OK;
}

/* --------------------------------------------------------------- shapes */

typedef struct text {
    char *s;
    size_t len;
} text_t;

/* The texts of one choice parameter's values: as a template prints the
 * value, and as it reads inside a substituted argument. */
typedef struct choice_texts {
    text_t *tpl, *sub;
    bool *none; /* false and null print nothing at all */
} choice_texts_t;

struct loom_catalog_shape {
    const cjob_t *j;
    json_t *ctx;
    loom_catalog_hole_t *holes;
    size_t nholes;
    const csub_t **subs;   /* hole np + i holds subs[i] */
    choice_texts_t *texts; /* per parameter (CP_CHOICE only) */
};

static int text_set(text_t *t, const char *s, size_t len)
{
    if (!(t->s = malloc(len + 1)))
        return LOOM_ENOMEM;
    memcpy(t->s, s, len);
    t->s[len] = '\0';
    t->len = len;
    return LOOM_OK;
}

/* A scalar as a template prints it (template.h). */
static int template_text(const json_t *v, text_t *t)
{
    char num[64];
    size_t n = 0;
    if (json_is_string(v))
        return text_set(t, json_string_value(v), json_string_length(v));
    if (json_is_integer(v))
        n = (size_t)snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        n = loom_format_real(json_real_value(v), num, sizeof num);
    else if (json_is_true(v))
        n = (size_t)snprintf(num, sizeof num, "true");
    return text_set(t, num, n);
}

/* A template's truthiness of a scalar. */
static bool scalar_truthy(const json_t *v)
{
    if (json_is_string(v))
        return json_string_length(v) > 0;
    return !json_is_false(v) && !json_is_null(v);
}

static int choice_texts(const cparam_t *p, choice_texts_t *ct, int *truthy, bool *sub_nonempty)
{
    if (!(ct->tpl = calloc(p->n, sizeof *ct->tpl)) || !(ct->sub = calloc(p->n, sizeof *ct->sub)) ||
        !(ct->none = calloc(p->n, sizeof *ct->none)))
        return LOOM_ENOMEM;
    size_t ntrue = 0;
    *sub_nonempty = true;
    for (size_t i = 0; i < p->n; i++) {
        const json_t *v = json_array_get(p->values, i);
        if (json_is_array(v) || json_is_object(v))
            return LOOM_EUNAVAIL;
        loom_buf_t b = LOOM_BUF_INIT;
        int rc = template_text(v, &ct->tpl[i]);
        if (rc == LOOM_OK)
            rc = loom__catalog_scalar_text(v, &b)
                     ? LOOM_ENOMEM
                     : text_set(&ct->sub[i], b.data ? b.data : "", b.len);
        loom_buf_free(&b);
        if (rc)
            return rc;
        ntrue += scalar_truthy(v);
        ct->none[i] = json_is_false(v) || json_is_null(v);
        *sub_nonempty = *sub_nonempty && ct->sub[i].len > 0;
    }
    *truthy = ntrue == p->n ? 1 : ntrue == 0 ? 0 : -1;
    return LOOM_OK;
}

/* A substituted value is truthy when it cannot come out empty. */
static int sub_truthy(const csub_t *cs, const bool *param_nonempty)
{
    for (size_t i = 0; i < cs->nsegs; i++)
        if (cs->segs[i].param < 0 ? cs->segs[i].len > 0 : param_nonempty[cs->segs[i].param])
            return 1;
    return -1;
}

void loom_catalog_shape_free(loom_catalog_shape_t *s)
{
    if (!s)
        return;
    for (size_t k = 0; s->texts && k < s->j->pub.param_count; k++) {
        const cparam_t *p = &s->j->params[k];
        for (size_t i = 0; p->kind == CP_CHOICE && i < p->n; i++) {
            if (s->texts[k].tpl)
                free(s->texts[k].tpl[i].s);
            if (s->texts[k].sub)
                free(s->texts[k].sub[i].s);
        }
        free(s->texts[k].tpl);
        free(s->texts[k].sub);
        free(s->texts[k].none);
    }
    free(s->texts);
    free(s->holes);
    free(s->subs);
    json_decref(s->ctx);
    free(s);
}

/* A new stand-in: a fresh string, told apart from every other by address. */
static json_t *stand_in(loom_catalog_shape_t *s, int truthy)
{
    json_t *v = json_string("");
    if (v)
        s->holes[s->nholes++] = (loom_catalog_hole_t){.leaf = v, .truthy = truthy};
    return v;
}

/* vals[0..n) for n substitutions: a stand-in for each that varies (recorded
 * in s->subs from *nsubs on), the fixed value of the others. */
static int sub_values(loom_catalog_shape_t *s, const csub_t *subs, size_t n, const bool *nonempty,
                      json_t **vals, size_t *nsubs)
{
    for (size_t i = 0; i < n; i++) {
        const csub_t *cs = &subs[i];
        if (cs->varies) {
            s->subs[(*nsubs)++] = cs;
            vals[i] = stand_in(s, sub_truthy(cs, nonempty));
        } else {
            vals[i] = csub_json(cs, NULL);
        }
        if (!vals[i])
            return LOOM_ENOMEM;
    }
    return LOOM_OK;
}

static int shape_build(loom_catalog_shape_t *s)
{
    const cjob_t *j = s->j;
    size_t np = j->pub.param_count, nmax = np + j->nargs + j->nenv;
    bool *nonempty = calloc(np + 1, sizeof *nonempty);
    json_t **vals = calloc(j->nargs + j->nenv + 1, sizeof *vals);
    json_t *params = json_object();
    s->holes = calloc(nmax + 1, sizeof *s->holes);
    s->subs = calloc(nmax + 1, sizeof *s->subs);
    s->texts = calloc(np + 1, sizeof *s->texts);
    s->ctx = json_copy(j->fixed);
    int rc = !nonempty || !vals || !params || !s->holes || !s->subs || !s->texts || !s->ctx
                 ? LOOM_ENOMEM
                 : LOOM_OK;
    for (size_t k = 0; rc == LOOM_OK && k < np; k++) {
        const cparam_t *p = &j->params[k];
        int truthy = 1;
        nonempty[k] = true;
        if (p->kind == CP_CHOICE)
            rc = choice_texts(p, &s->texts[k], &truthy, &nonempty[k]);
        json_t *v = rc ? NULL : stand_in(s, truthy);
        if (rc == LOOM_OK && (!v || json_object_set_new(params, p->name, v)))
            rc = LOOM_ENOMEM;
    }
    size_t nsubs = 0;
    if (rc == LOOM_OK && j->args_vary)
        rc = sub_values(s, j->arg_subs, j->nargs, nonempty, vals, &nsubs);
    if (rc == LOOM_OK && j->args_vary && set_args(s->ctx, j, vals))
        rc = LOOM_ENOMEM;
    drop_values(vals, j->nargs);
    if (rc == LOOM_OK && j->env_vary)
        rc = sub_values(s, j->env_subs, j->nenv, nonempty, vals, &nsubs);
    if (rc == LOOM_OK && j->env_vary && set_env(s->ctx, j, vals))
        rc = LOOM_ENOMEM;
    if (vals)
        drop_values(vals, j->nenv);
    if (rc == LOOM_OK && set(s->ctx, "params", json_incref(params)))
        rc = LOOM_ENOMEM;
    json_decref(params);
    free(vals);
    free(nonempty);
    return rc;
}

int loom_catalog_shape_new(const loom_catalog_t *c, size_t i, loom_catalog_shape_t **out,
                           loom_err_t *err)
{
    *out = NULL;
    if (!c || i >= c->n)
        return loom_err_set(err, LOOM_EINVAL, "catalog job index %zu: expected < %zu", i,
                            c ? c->n : 0);
    if (c->jobs[i].model_spec) /* its model reference is drawn as typed JSON, not text */
        return loom_err_set(err, LOOM_EUNAVAIL,
                            "job '%s': names a model object, which goes with each job as JSON; "
                            "sample it whole instead",
                            c->jobs[i].pub.name);
    loom_catalog_shape_t *s = calloc(1, sizeof *s);
    if (!s)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    s->j = &c->jobs[i];
    int rc = shape_build(s);
    if (rc != LOOM_OK) {
        loom_catalog_shape_free(s);
        if (rc == LOOM_EUNAVAIL)
            return loom_err_set(err, rc,
                                "job '%s': a parameter chooses among arrays or objects, which "
                                "a template may look inside; sample it whole instead",
                                c->jobs[i].pub.name);
        return loom_err_set(err, rc, "job '%s': out of memory", c->jobs[i].pub.name);
    }
    *out = s;
    return LOOM_OK;
}

const json_t *loom_catalog_shape_context(const loom_catalog_shape_t *s)
{
    return s->ctx;
}

size_t loom_catalog_shape_holes(const loom_catalog_shape_t *s, const loom_catalog_hole_t **holes)
{
    *holes = s->holes;
    return s->nholes;
}

/* Writes into buf while it lasts; counts everything. */
typedef struct writer {
    char *buf;
    size_t cap, len;
} writer_t;

static void put(writer_t *w, const char *s, size_t n)
{
    if (w->len + n <= w->cap)
        memcpy(w->buf + w->len, s, n);
    w->len += n;
}

/* Decimal digits of v; returns the length (at most 20). */
static size_t i64_text(int64_t v, char out[24])
{
    char tmp[24];
    size_t n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    size_t len = 0;
    if (v < 0)
        out[len++] = '-';
    while (n)
        out[len++] = tmp[--n];
    return len;
}

size_t loom_catalog_shape_draw(const loom_catalog_shape_t *s, loom_rng_t *rng, char *buf,
                               size_t cap, loom_catalog_span_t *spans)
{
    const cjob_t *j = s->j;
    size_t np = j->pub.param_count;
    writer_t w = {.buf = buf, .cap = cap};
    drawn_t d[np + 1];
    for (size_t k = 0; k < np; k++) /* every draw first, in document order */
        draw(&j->params[k], rng, &d[k]);
    for (size_t k = 0; k < np; k++) {
        const cparam_t *p = &j->params[k];
        char num[32];
        spans[k].off = w.len;
        spans[k].none = p->kind == CP_CHOICE && s->texts[k].none[d[k].index];
        switch (p->kind) {
        case CP_CHOICE:
            put(&w, s->texts[k].tpl[d[k].index].s, s->texts[k].tpl[d[k].index].len);
            break;
        case CP_INT: put(&w, num, i64_text(d[k].i, num)); break;
        case CP_REAL: put(&w, num, loom_format_real(d[k].r, num, sizeof num)); break;
        }
        spans[k].len = w.len - spans[k].off;
    }
    for (size_t h = np; h < s->nholes; h++) {
        const csub_t *cs = s->subs[h - np];
        spans[h].off = w.len;
        spans[h].none = false;
        for (size_t i = 0; i < cs->nsegs; i++) {
            const csub_seg_t *g = &cs->segs[i];
            if (g->param < 0) {
                put(&w, cs->text + g->off, g->len);
            } else if (j->params[g->param].kind == CP_CHOICE) {
                const text_t *t = &s->texts[g->param].sub[d[g->param].index];
                put(&w, t->s, t->len);
            } else {
                /* ints and reals read the same in both places */
                const loom_catalog_span_t *ps = &spans[g->param];
                if (ps->off + ps->len <= cap)
                    put(&w, buf + ps->off, ps->len);
                else
                    w.len += ps->len;
            }
        }
        spans[h].len = w.len - spans[h].off;
    }
    return w.len;
}
