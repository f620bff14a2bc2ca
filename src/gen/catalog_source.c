/* The generator's source for a real catalog: a job is chosen by the
 * catalog's weights (by the pacer), its parameters are sampled by the
 * catalog from the job's own RNG stream, and the sampled context is
 * rendered through a Mustache template. Each distinct template is compiled
 * once; rendering runs on the sender threads (catalog and templates are
 * immutable, so that is safe).
 *
 * The fast way, used whenever it applies: at start-up each catalog job's
 * context is built once with stand-ins for what a draw changes (a catalog
 * shape, plus submit_id, index and due_s), and its template is rendered
 * once against it into a plan: literal text with the places of those
 * values marked. A job is then its draws turned into text, copied into the
 * plan's places with the template's escaping, and job.submit's parameters
 * put together from members built once per catalog job: no JSON context,
 * no name lookups, no per-job parsing, and a few allocations (the spec)
 * instead of hundreds. The output is byte for byte the ordinary render's
 * (tests/unit/test_gen_catalog_source.c compares the two); a job whose
 * template cannot be planned (see template.h) is rendered the ordinary way.
 *
 * Which template: the caller's override, else the job's own "template",
 * else the shipped template of the kind (slurm, k8s, local) from the
 * templates directory. A template whose file name contains ".yaml" or
 * ".yml" renders with YAML escaping and makes a "yaml" job; any other with
 * POSIX shell escaping and makes a "batch" job. Rendering is strict: a
 * missing variable is an error for that job.
 */
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "loom/catalog.h"
#include "loom/gen.h"
#include "loom/template.h"

static const char *const kind_names[] = {"slurm", "k8s", "local"};
static const char *const kind_files[] = {"slurm.sh.mustache", "k8s-job.yaml.mustache",
                                         "local.sh.mustache"};

int loom_gen_kind_parse(const char *name, loom_gen_kind_t *out, loom_err_t *err)
{
    for (int i = 0; i < 3; i++) {
        if (name && strcmp(name, kind_names[i]) == 0) {
            *out = (loom_gen_kind_t)i;
            return LOOM_OK;
        }
    }
    return loom_err_set(err, LOOM_EINVAL, "template kind '%s': expected slurm, k8s or local",
                        name ? name : "");
}

const char *loom_gen_kind_name(loom_gen_kind_t k)
{
    return (unsigned)k < 3 ? kind_names[k] : "?";
}

int loom_gen_kind_template(loom_gen_kind_t kind, const char *templates_dir, char *out,
                           size_t outlen, loom_err_t *err)
{
    if ((unsigned)kind > 2)
        return loom_err_set(err, LOOM_EINVAL, "template kind %d: unknown", (int)kind);
    const char *dir = templates_dir;
    if (!dir || !*dir)
        dir = getenv("LOOM_TEMPLATE_DIR");
    char data[4096];
    if (!dir || !*dir) {
        int rc = loom_data_path("templates", data, sizeof data, err);
        if (rc)
            return rc;
        dir = data;
    }
    if ((size_t)snprintf(out, outlen, "%s/%s", dir, kind_files[kind]) >= outlen)
        return loom_err_set(err, LOOM_EINVAL, "templates directory path too long: '%s'", dir);
    return LOOM_OK;
}

typedef struct tpl_entry {
    char *path;
    loom_template_t *tpl;
    loom_template_partials_t *partials;
    bool yaml;
} tpl_entry_t;

/* The generator's own holes, after the catalog's. */
enum { GH_SUBMIT_ID, GH_INDEX, GH_DUE_S, GH_COUNT };
#define MAX_PLAN_HOLES 512 /* more: render the ordinary way (spans live on the stack) */

/* What is built once per catalog job. */
typedef struct job_plan {
    /* job.submit's parameters that are the same for every job */
    json_t *name, *format, *resources, *time_limit, *labels;
    json_t *reconfig; /* the entry's "reconfig" (docs/scheduling.md), or NULL */
    json_t *options;  /* job.submit's options: {"array": ...} from the entry's "array", or NULL */
    json_t *warm;     /* zoo.warm's params for a "warm_start" entry (docs/zoo.md), or NULL */
    /* the fast way (NULL plan: render the ordinary way) */
    loom_catalog_shape_t *shape;
    json_t *ctx; /* the shape's context plus the generator's members */
    loom_template_plan_t *plan;
    size_t ncat; /* the catalog's holes; the generator's follow */
    /* a pipeline's later stages (the entry's "then"), as job indices */
    size_t *then;
    size_t nthen;
} job_plan_t;

struct loom_gen_catalog_source {
    loom_gen_source_t src;
    const loom_catalog_t *cat;
    uint64_t seed;
    double *weights;
    const char **names;
    tpl_entry_t *tpls; /* distinct templates */
    size_t ntpls;
    size_t *job_tpl;   /* job index -> tpls index */
    job_plan_t *plans; /* per job */
    bool no_plans;     /* loom_gen_catalog_options_t.no_plans */
};

static bool is_yaml_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strstr(base, ".yaml") || strstr(base, ".yml");
}

static int add_template(loom_gen_catalog_source_t *s, const char *path, size_t *index,
                        loom_err_t *err)
{
    for (size_t i = 0; i < s->ntpls; i++) {
        if (strcmp(s->tpls[i].path, path) == 0) {
            *index = i;
            return LOOM_OK;
        }
    }
    tpl_entry_t *e = &s->tpls[s->ntpls];
    memset(e, 0, sizeof *e);
    if (!(e->path = strdup(path)))
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    int rc = loom_template_load_file(path, &e->tpl, err);
    if (rc != LOOM_OK) {
        free(e->path);
        return rc;
    }
    if ((rc = loom_template_partials_new(&e->partials, err)) != LOOM_OK) {
        loom_template_free(e->tpl);
        free(e->path);
        return rc;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    loom_template_partials_set_dir(e->partials, dirname(dir), NULL);
    e->yaml = is_yaml_name(path);
    *index = s->ntpls++;
    return LOOM_OK;
}

static loom_template_options_t render_options(const tpl_entry_t *t)
{
    return (loom_template_options_t){.escape = t->yaml ? LOOM_TEMPLATE_ESCAPE_YAML
                                                       : LOOM_TEMPLATE_ESCAPE_SHELL,
                                     .strict = true,
                                     .partials = t->partials};
}

/* The members of job.submit's parameters (docs/protocol.md) that no draw
 * changes: built once, shared by every job's spec (jansson's reference
 * counts are atomic). */
static int spec_parts(const loom_catalog_job_t *j, bool yaml, job_plan_t *jp)
{
    const loom_catalog_resources_t *r = &j->resources;
    /* loomd takes either whole GPUs or a share of one GPU, not both. */
    bool share = r->gpu_share > 0 && r->gpu_share < 1000;
    jp->resources = json_pack("{s:I, s:I, s:I}", "cpus", (json_int_t)r->cpus, "memory",
                              (json_int_t)r->memory_bytes, share ? "gpu_share" : "gpus",
                              share ? (json_int_t)r->gpu_share : (json_int_t)r->gpus);
    if (!jp->resources)
        return LOOM_ENOMEM;
    if (r->gpu_memory_bytes && json_object_set_new(jp->resources, "gpu_memory",
                                                   json_integer((json_int_t)r->gpu_memory_bytes)))
        return LOOM_ENOMEM;
    if (r->gpu_type && json_object_set_new(jp->resources, "gpu_type", json_string(r->gpu_type)))
        return LOOM_ENOMEM;
    jp->name = json_string(j->name);
    jp->format = json_string(yaml ? "yaml" : "batch");
    if (!jp->name || !jp->format)
        return LOOM_ENOMEM;
    if (j->time_limit_ns > 0 &&
        !(jp->time_limit =
              json_integer((json_int_t)((j->time_limit_ns + LOOM_NS_PER_S - 1) / LOOM_NS_PER_S))))
        return LOOM_ENOMEM;
    if (j->labels && json_object_size(j->labels) > 0)
        jp->labels = json_incref((json_t *)j->labels);
    const json_t *rc = j->merged ? json_object_get(j->merged, "reconfig") : NULL;
    if (rc)
        jp->reconfig = json_incref((json_t *)rc);
    const json_t *arr = j->merged ? json_object_get(j->merged, "array") : NULL;
    if (arr && !(jp->options = json_pack("{s:O}", "array", arr)))
        return LOOM_ENOMEM;
    const json_t *ws = j->merged ? json_object_get(j->merged, "warm_start") : NULL;
    if (ws && !json_is_false(ws) && j->model_path) {
        const json_t *task = json_object_get(ws, "task");
        jp->warm = json_pack("{s:s}", "model", j->model_path);
        if (!jp->warm || (task && json_object_set_nocheck(jp->warm, "task", (json_t *)task)))
            return LOOM_ENOMEM;
    }
    return LOOM_OK;
}

/* The job as job.submit takes it: name, script, format, resources,
 * submit_id, time_limit, labels, reconfig, warm_start (zoo.warm's params:
 * the submit sink turns it into a warm start) and model: the sampled "model_spec" of the
 * render context (NULL: none), which lets loomd fill the GPU memory request
 * from the model's estimate. */
static int make_spec(const job_plan_t *jp, loom_gen_job_t *job, const char *jname,
                     const json_t *model, loom_err_t *err)
{
    const char *text = job->text.data ? job->text.data : "";
    if (!loom_utf8_valid(text, job->text.len))
        return loom_err_set(err, LOOM_EINVAL,
                            "job %llu (%s): the rendered script is not valid UTF-8 (the template "
                            "or a value holds other bytes), which job.submit cannot carry",
                            (unsigned long long)job->index, jname);
    json_t *spec = json_object();
    int bad =
        !spec || json_object_set_nocheck(spec, "name", jp->name) ||
        json_object_set_new_nocheck(spec, "script", json_stringn_nocheck(text, job->text.len)) ||
        json_object_set_nocheck(spec, "format", jp->format) ||
        json_object_set_nocheck(spec, "resources", jp->resources) ||
        json_object_set_new_nocheck(spec, "submit_id", json_string_nocheck(job->submit_id)) ||
        (jp->time_limit && json_object_set_nocheck(spec, "time_limit", jp->time_limit)) ||
        (jp->labels && json_object_set_nocheck(spec, "labels", jp->labels)) ||
        (jp->reconfig && json_object_set_nocheck(spec, "reconfig", jp->reconfig)) ||
        (jp->options && json_object_set_nocheck(spec, "options", jp->options)) ||
        (jp->warm && json_object_set_nocheck(spec, "warm_start", jp->warm)) ||
        (model && json_object_set_new_nocheck(spec, "model", json_deep_copy(model)));
    if (bad) {
        json_decref(spec);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    job->spec = spec;
    return LOOM_OK;
}

/* The ordinary way: the whole context as JSON, rendered by the tree walker. */
static int make_rendered(loom_gen_catalog_source_t *s, const tpl_entry_t *t, loom_gen_job_t *job,
                         loom_rng_t *rng, json_t **model, loom_err_t *err)
{
    json_t *data = NULL;
    int rc = loom_catalog_sample(s->cat, job->choice, rng, &data, err);
    if (rc != LOOM_OK)
        return rc;
    json_object_set_new(data, "submit_id", json_string(job->submit_id));
    json_object_set_new(data, "index", json_integer((json_int_t)job->index));
    json_object_set_new(data, "seed", json_integer((json_int_t)s->seed));
    json_object_set_new(data, "due_s", json_real((double)job->due_ns / 1e9));
    loom_template_options_t opts = render_options(t);
    rc = loom_template_render(t->tpl, data, &opts, &job->text, err);
    if (rc == LOOM_OK)
        *model = json_incref(json_object_get(data, "model_spec"));
    json_decref(data);
    return rc;
}

/* The fast way: the draws as text into the plan's places. */
static int make_planned(const job_plan_t *jp, loom_gen_job_t *job, loom_rng_t *rng, loom_err_t *err)
{
    size_t nh = jp->ncat + GH_COUNT;
    char stack[2048], *buf = stack;
    loom_catalog_span_t spans[jp->ncat + 1];
    loom_template_text_t vals[nh];
    loom_rng_t before = *rng;
    size_t need = loom_catalog_shape_draw(jp->shape, rng, buf, sizeof stack, spans);
    if (need > sizeof stack) { /* long values: draw again into a buffer that fits */
        if (!(buf = malloc(need)))
            return loom_err_set(err, LOOM_ENOMEM, "out of memory");
        *rng = before;
        loom_catalog_shape_draw(jp->shape, rng, buf, need, spans);
    }
    for (size_t k = 0; k < jp->ncat; k++)
        vals[k] = (loom_template_text_t){spans[k].none ? NULL : buf + spans[k].off, spans[k].len};
    char index[24], due[32];
    vals[jp->ncat + GH_SUBMIT_ID] = (loom_template_text_t){job->submit_id, strlen(job->submit_id)};
    vals[jp->ncat + GH_INDEX] = (loom_template_text_t){NULL, 0};
    vals[jp->ncat + GH_DUE_S] = (loom_template_text_t){NULL, 0};
    if (loom_template_plan_uses(jp->plan, jp->ncat + GH_INDEX))
        vals[jp->ncat + GH_INDEX] = (loom_template_text_t){
            index, (size_t)snprintf(index, sizeof index, "%llu", (unsigned long long)job->index)};
    if (loom_template_plan_uses(jp->plan, jp->ncat + GH_DUE_S))
        vals[jp->ncat + GH_DUE_S] = (loom_template_text_t){
            due, loom_format_real((double)job->due_ns / 1e9, due, sizeof due)};
    int rc = loom_template_plan_render(jp->plan, vals, &job->text);
    if (buf != stack)
        free(buf);
    return rc ? loom_err_set(err, rc, "out of memory") : LOOM_OK;
}

static int make_one(loom_gen_catalog_source_t *s, loom_gen_job_t *job, loom_rng_t *rng,
                    loom_err_t *err)
{
    const loom_catalog_job_t *j = loom_catalog_job(s->cat, job->choice);
    const tpl_entry_t *t = &s->tpls[s->job_tpl[job->choice]];
    const job_plan_t *jp = &s->plans[job->choice];
    json_t *model = NULL; /* planned jobs name no model object (loom_catalog_shape_new) */
    int rc =
        jp->plan ? make_planned(jp, job, rng, err) : make_rendered(s, t, job, rng, &model, err);
    if (rc != LOOM_OK)
        return loom_err_prefix(err, "job %llu (%s)", (unsigned long long)job->index, j->name);
    rc = make_spec(jp, job, j->name, model, err);
    json_decref(model);
    return rc;
}

/* A pipeline's later stages: each made as a job of its own (submit_id
 * ID.1, ID.2, ...; draws from the same rng, after the first stage's), their
 * job.submit parameters in order under the spec's "then", which the loomd
 * sink submits one after the other with afterok dependencies. */
static int make_stages(loom_gen_catalog_source_t *s, const job_plan_t *jp, loom_gen_job_t *job,
                       loom_rng_t *rng, loom_err_t *err)
{
    json_t *arr = json_array();
    if (!arr || json_object_set_new_nocheck(job->spec, "then", arr))
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    for (size_t k = 0; k < jp->nthen; k++) {
        loom_gen_job_t st = {.index = job->index, .due_ns = job->due_ns, .choice = jp->then[k]};
        st.name = s->names[st.choice];
        int n = snprintf(st.submit_id, sizeof st.submit_id, "%s.%zu", job->submit_id, k + 1);
        if (n < 0 || (size_t)n >= sizeof st.submit_id)
            return loom_err_set(err, LOOM_EINVAL, "job %llu: the stage's submit_id is too long",
                                (unsigned long long)job->index);
        int rc = make_one(s, &st, rng, err);
        loom_buf_free(&st.text);
        if (rc == LOOM_OK && json_array_append_new(arr, st.spec))
            rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
        if (rc != LOOM_OK)
            return rc;
    }
    return LOOM_OK;
}

static int catalog_make(void *ctx, loom_gen_job_t *job, loom_rng_t *rng, loom_err_t *err)
{
    loom_gen_catalog_source_t *s = ctx;
    int rc = make_one(s, job, rng, err);
    const job_plan_t *jp = &s->plans[job->choice];
    if (rc == LOOM_OK && jp->nthen)
        rc = make_stages(s, jp, job, rng, err);
    return rc;
}

/* The entry's "then" as job indices; a job that is a stage is not drawn on
 * its own (weight 0): the pipeline is one arrival. */
static int resolve_stages(loom_gen_catalog_source_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const loom_catalog_job_t *j = loom_catalog_job(s->cat, i);
        const json_t *then = j->merged ? json_object_get(j->merged, "then") : NULL;
        size_t m = json_array_size(then);
        if (m == 0)
            continue;
        job_plan_t *jp = &s->plans[i];
        if (!(jp->then = calloc(m, sizeof *jp->then)))
            return LOOM_ENOMEM;
        for (size_t k = 0; k < m; k++) {
            const char *name = json_string_value(json_array_get(then, k));
            for (size_t t = 0; name && t < n; t++) {
                if (strcmp(s->names[t], name) == 0) {
                    jp->then[jp->nthen++] = t;
                    s->weights[t] = 0;
                    break;
                }
            }
        }
    }
    return LOOM_OK;
}

/* Builds the fast way for job i; leaves jp->plan NULL when it does not
 * apply (a choice among arrays or objects, a template that looks at a
 * changing value, a template that fails on this job: the ordinary render
 * then reports that for every job, as before). */
static void plan_job(loom_gen_catalog_source_t *s, size_t i, const tpl_entry_t *t, job_plan_t *jp)
{
    loom_err_t err;
    if (loom_catalog_shape_new(s->cat, i, &jp->shape, &err) != LOOM_OK)
        return;
    const loom_catalog_hole_t *ch;
    jp->ncat = loom_catalog_shape_holes(jp->shape, &ch);
    if (jp->ncat + GH_COUNT > MAX_PLAN_HOLES ||
        !(jp->ctx = json_copy((json_t *)loom_catalog_shape_context(jp->shape))))
        return;
    loom_template_hole_t holes[MAX_PLAN_HOLES];
    for (size_t k = 0; k < jp->ncat; k++)
        holes[k] = (loom_template_hole_t){.leaf = ch[k].leaf, .truthy = ch[k].truthy};
    /* Stand-ins for the generator's members: submit_id is never empty,
     * numbers are always truthy. */
    json_t *gen[GH_COUNT] = {json_string(""), json_string(""), json_string("")};
    const char *keys[GH_COUNT] = {"submit_id", "index", "due_s"};
    bool ok = json_object_set_new(jp->ctx, "seed", json_integer((json_int_t)s->seed)) == 0;
    for (int g = 0; g < GH_COUNT; g++) {
        holes[jp->ncat + g] = (loom_template_hole_t){.leaf = gen[g], .truthy = 1};
        ok = gen[g] && json_object_set_new(jp->ctx, keys[g], gen[g]) == 0 && ok;
    }
    loom_template_options_t opts = render_options(t);
    if (ok && loom_template_plan_new(t->tpl, jp->ctx, holes, jp->ncat + GH_COUNT, &opts, &jp->plan,
                                     &err) != LOOM_OK)
        jp->plan = NULL;
}

static void job_plan_free(job_plan_t *jp)
{
    loom_template_plan_free(jp->plan);
    json_decref(jp->ctx);
    loom_catalog_shape_free(jp->shape);
    json_decref(jp->name);
    json_decref(jp->format);
    json_decref(jp->resources);
    json_decref(jp->time_limit);
    json_decref(jp->labels);
    json_decref(jp->warm);
    json_decref(jp->reconfig);
    json_decref(jp->options);
    free(jp->then);
}

void loom_gen_catalog_source_free(loom_gen_catalog_source_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; s->plans && i < s->src.n; i++)
        job_plan_free(&s->plans[i]);
    free(s->plans);
    for (size_t i = 0; i < s->ntpls; i++) {
        loom_template_free(s->tpls[i].tpl);
        loom_template_partials_free(s->tpls[i].partials);
        free(s->tpls[i].path);
    }
    free(s->tpls);
    free(s->job_tpl);
    free(s->weights);
    free(s->names);
    free(s);
}

int loom_gen_catalog_source_new(const loom_catalog_t *cat, const loom_gen_catalog_options_t *o,
                                loom_gen_catalog_source_t **out, loom_err_t *err)
{
    *out = NULL;
    size_t n = loom_catalog_job_count(cat);
    if (n == 0)
        return loom_err_set(err, LOOM_EINVAL, "%s: the catalog has no jobs",
                            loom_catalog_path(cat));
    loom_gen_catalog_source_t *s = calloc(1, sizeof *s);
    if (!s)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    s->cat = cat;
    s->seed = o ? o->seed : 0;
    s->weights = calloc(n, sizeof *s->weights);
    s->names = calloc(n, sizeof *s->names);
    s->tpls = calloc(n + 1, sizeof *s->tpls);
    s->job_tpl = calloc(n, sizeof *s->job_tpl);
    s->plans = calloc(n, sizeof *s->plans);
    s->src.n = n; /* for _free */
    s->no_plans = o && o->no_plans;
    if (!s->weights || !s->names || !s->tpls || !s->job_tpl || !s->plans) {
        loom_gen_catalog_source_free(s);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    char shipped[PATH_MAX];
    int rc = loom_gen_kind_template(o ? o->kind : LOOM_GEN_KIND_SLURM, o ? o->templates_dir : NULL,
                                    shipped, sizeof shipped, err);
    for (size_t i = 0; i < n && rc == LOOM_OK; i++) {
        const loom_catalog_job_t *j = loom_catalog_job(cat, i);
        s->weights[i] = loom_catalog_probability(cat, i);
        s->names[i] = j->name;
        const char *path = o && o->template_path ? o->template_path
                           : j->template_path    ? j->template_path
                                                 : shipped;
        rc = add_template(s, path, &s->job_tpl[i], err);
        if (rc != LOOM_OK) {
            loom_err_prefix(err, "job '%s'", j->name);
            break;
        }
        const tpl_entry_t *t = &s->tpls[s->job_tpl[i]];
        if (spec_parts(j, t->yaml, &s->plans[i]) != LOOM_OK)
            rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
        else if (!s->no_plans)
            plan_job(s, i, t, &s->plans[i]);
    }
    if (rc == LOOM_OK && resolve_stages(s, n) != LOOM_OK)
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
    if (rc != LOOM_OK) {
        loom_gen_catalog_source_free(s);
        return rc;
    }
    s->src = (loom_gen_source_t){
        .n = n, .weights = s->weights, .names = s->names, .make = catalog_make, .ctx = s};
    *out = s;
    return LOOM_OK;
}

const loom_gen_source_t *loom_gen_catalog_source_get(const loom_gen_catalog_source_t *s)
{
    return &s->src;
}

bool loom_gen_catalog_source_planned(const loom_gen_catalog_source_t *s, size_t i)
{
    return i < s->src.n && s->plans[i].plan != NULL;
}
