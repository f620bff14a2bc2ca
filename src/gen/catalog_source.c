/* The generator's source for a real catalog: a job is chosen by the
 * catalog's weights (by the pacer), its parameters are sampled by the
 * catalog from the job's own RNG stream, and the sampled context is
 * rendered through a Mustache template. Each distinct template is compiled
 * once; rendering runs on the sender threads (catalog and templates are
 * immutable, so that is safe).
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

#ifndef LOOM_GEN_TEMPLATE_DIR
#define LOOM_GEN_TEMPLATE_DIR "workloads/templates"
#endif

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
    if (!dir || !*dir)
        dir = LOOM_GEN_TEMPLATE_DIR;
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

struct loom_gen_catalog_source {
    loom_gen_source_t src;
    const loom_catalog_t *cat;
    uint64_t seed;
    double *weights;
    const char **names;
    tpl_entry_t *tpls; /* distinct templates */
    size_t ntpls;
    size_t *job_tpl; /* job index -> tpls index */
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

/* The job as job.submit takes it (docs/protocol.md). model: the sampled
 * "model_spec" of the render context (NULL: none), which lets loomd fill the
 * GPU memory request from the model's estimate. */
static json_t *make_spec(const loom_catalog_job_t *j, const loom_gen_job_t *job, bool yaml,
                         const json_t *model)
{
    const loom_catalog_resources_t *r = &j->resources;
    /* loomd takes either whole GPUs or a share of one GPU, not both. */
    bool share = r->gpu_share > 0 && r->gpu_share < 1000;
    json_t *res = json_pack("{s:I, s:I, s:I}", "cpus", (json_int_t)r->cpus, "memory",
                            (json_int_t)r->memory_bytes, share ? "gpu_share" : "gpus",
                            share ? (json_int_t)r->gpu_share : (json_int_t)r->gpus);
    if (!res)
        return NULL;
    if (r->gpu_memory_bytes)
        json_object_set_new(res, "gpu_memory", json_integer((json_int_t)r->gpu_memory_bytes));
    if (r->gpu_type)
        json_object_set_new(res, "gpu_type", json_string(r->gpu_type));
    json_t *spec =
        json_pack("{s:s, s:s%, s:s, s:o, s:s}", "name", j->name, "script",
                  job->text.data ? job->text.data : "", job->text.len, "format",
                  yaml ? "yaml" : "batch", "resources", res, "submit_id", job->submit_id);
    if (!spec)
        return NULL;
    if (j->time_limit_ns > 0)
        json_object_set_new(
            spec, "time_limit",
            json_integer((json_int_t)((j->time_limit_ns + LOOM_NS_PER_S - 1) / LOOM_NS_PER_S)));
    if (j->labels && json_object_size(j->labels) > 0)
        json_object_set(spec, "labels", (json_t *)j->labels);
    if (model && json_object_set_new(spec, "model", json_deep_copy(model))) {
        json_decref(spec);
        return NULL;
    }
    return spec;
}

static int catalog_make(void *ctx, loom_gen_job_t *job, loom_rng_t *rng, loom_err_t *err)
{
    loom_gen_catalog_source_t *s = ctx;
    const loom_catalog_job_t *j = loom_catalog_job(s->cat, job->choice);
    json_t *data = NULL;
    int rc = loom_catalog_sample(s->cat, job->choice, rng, &data, err);
    if (rc != LOOM_OK)
        return rc;
    json_object_set_new(data, "submit_id", json_string(job->submit_id));
    json_object_set_new(data, "index", json_integer((json_int_t)job->index));
    json_object_set_new(data, "seed", json_integer((json_int_t)s->seed));
    json_object_set_new(data, "due_s", json_real((double)job->due_ns / 1e9));
    const tpl_entry_t *t = &s->tpls[s->job_tpl[job->choice]];
    loom_template_options_t opts = {.escape = t->yaml ? LOOM_TEMPLATE_ESCAPE_YAML
                                                      : LOOM_TEMPLATE_ESCAPE_SHELL,
                                    .strict = true,
                                    .partials = t->partials};
    rc = loom_template_render(t->tpl, data, &opts, &job->text, err);
    if (rc != LOOM_OK) {
        json_decref(data);
        return loom_err_prefix(err, "job %llu (%s)", (unsigned long long)job->index, j->name);
    }
    job->spec = make_spec(j, job, t->yaml, json_object_get(data, "model_spec"));
    json_decref(data);
    if (!job->spec)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    return LOOM_OK;
}

void loom_gen_catalog_source_free(loom_gen_catalog_source_t *s)
{
    if (!s)
        return;
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
    if (!s->weights || !s->names || !s->tpls || !s->job_tpl) {
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
        if (rc != LOOM_OK)
            loom_err_prefix(err, "job '%s'", j->name);
    }
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
