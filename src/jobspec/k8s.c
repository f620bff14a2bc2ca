/* Kubernetes batch/v1 Job manifests as job specs. What loom honours: the
 * Job's metadata.name, activeDeadlineSeconds (time limit), backoffLimit
 * (retries), parallelism/completions (an array), and of the first
 * container its resources (cpu, memory, nvidia.com/gpu), env and
 * workingDir; its command and args are run by the executor from the stored
 * manifest (src/exec/yaml_job.c). What needs a container runtime or a
 * Kubernetes cluster (the image, volumes, node selectors, ...) is named in
 * a warning. A resource's limit is taken when given, else its request: loom
 * reserves and enforces one amount per resource, so it takes the most the
 * container may use. A manifest nested deeper than LOOM_YAML_MAX_DEPTH is
 * refused before libyaml builds it (core/yaml_depth.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/yaml_depth.h"
#include "jobspec/jobspec_int.h"

typedef struct walk {
    yaml_document_t *doc;
    const char *file;
    loom_jobspec_t *spec;
    loom_err_t *err;
} walk_t;

static yaml_node_t *get(walk_t *w, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && strcmp((char *)k->data.scalar.value, key) == 0)
            return yaml_document_get_node(w->doc, p->value);
    }
    return NULL;
}

static size_t line_of(const yaml_node_t *n)
{
    return n ? n->start_mark.line + 1 : 0;
}

static int fail(walk_t *w, const yaml_node_t *n, const char *path, const char *expected)
{
    return loom_err_set(w->err, LOOM_EINVAL, "%s:%zu: %s: expected %s", w->file, line_of(n), path,
                        expected);
}

static const char *scalar(yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* An optional integer field in [min, max]; *out untouched when absent. */
static int get_int(walk_t *w, yaml_node_t *map, const char *key, const char *path, int64_t min,
                   int64_t max, int64_t *out)
{
    yaml_node_t *n = get(w, map, key);
    if (!n)
        return LOOM_OK;
    char expected[96];
    snprintf(expected, sizeof expected, "an integer from %lld to %lld", (long long)min,
             (long long)max);
    const char *s = scalar(n);
    if (!s || loom_parse_i64(s, min, max, out, path, NULL))
        return fail(w, n, path, expected);
    return LOOM_OK;
}

/* Names every key of map not in known. */
static void warn_unknown(walk_t *w, yaml_node_t *map, const char *path, const char *const *known,
                         const char *why)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        const char *k = scalar(yaml_document_get_node(w->doc, p->key));
        bool ok = false;
        for (size_t i = 0; k && known[i] && !ok; i++)
            ok = strcmp(known[i], k) == 0;
        if (k && !ok)
            loom_jobspec_warn(w->spec, "%s:%zu: %s.%s: %s; ignored", w->file,
                              line_of(yaml_document_get_node(w->doc, p->value)), path, k, why);
    }
}

/* One resource amount: the limit, else the request. */
static yaml_node_t *amount(walk_t *w, yaml_node_t *res, const char *name, const char **from)
{
    yaml_node_t *n = get(w, get(w, res, "limits"), name);
    *from = "limits";
    if (!n) {
        n = get(w, get(w, res, "requests"), name);
        *from = "requests";
    }
    return n;
}

static int quantity(walk_t *w, yaml_node_t *res, const char *name, bool milli, uint64_t *out,
                    bool *found)
{
    const char *from;
    yaml_node_t *n = amount(w, res, name, &from);
    *found = n != NULL;
    if (!n)
        return LOOM_OK;
    char path[128];
    snprintf(path, sizeof path, "containers[0].resources.%s.%s", from, name);
    const char *s = scalar(n);
    if (!s || loom_jobspec_parse_quantity(s, milli, out, NULL))
        return fail(w, n, path, "a quantity such as 500m, 2, 1.5Gi or 129e6");
    /* A request above its limit is invalid in Kubernetes too. */
    uint64_t req;
    const char *rs = scalar(get(w, get(w, res, "requests"), name));
    if (strcmp(from, "limits") == 0 && rs &&
        loom_jobspec_parse_quantity(rs, milli, &req, NULL) == LOOM_OK && req > *out)
        return fail(w, n, path, "a limit at least as large as the request");
    return LOOM_OK;
}

static int container_resources(walk_t *w, yaml_node_t *c)
{
    yaml_node_t *res = get(w, c, "resources");
    if (!res)
        return LOOM_OK;
    static const char *const known[] = {"cpu", "memory", "nvidia.com/gpu", NULL};
    warn_unknown(w, get(w, res, "limits"), "containers[0].resources.limits", known,
                 "loom schedules cpu, memory and nvidia.com/gpu");
    warn_unknown(w, get(w, res, "requests"), "containers[0].resources.requests", known,
                 "loom schedules cpu, memory and nvidia.com/gpu");
    uint64_t v;
    bool found;
    if (quantity(w, res, "cpu", true, &v, &found))
        return LOOM_EINVAL;
    if (found) {
        uint64_t cpus = (v + 999) / 1000;
        if (cpus == 0)
            cpus = 1;
        if (v % 1000)
            loom_jobspec_warn(w->spec, "%s: cpu %llum: loom gives whole CPUs; rounded up to %llu",
                              w->file, (unsigned long long)v, (unsigned long long)cpus);
        if (cpus > LOOM_JOBSPEC_CPUS_MAX)
            return fail(w, res, "containers[0].resources: cpu", "at most 4096 CPUs");
        w->spec->cpus = (int64_t)cpus;
    }
    if (quantity(w, res, "memory", false, &v, &found))
        return LOOM_EINVAL;
    if (found && v > 0) {
        w->spec->mem_bytes = v;
        w->spec->mem_set = true;
    }
    const char *from;
    yaml_node_t *g = amount(w, res, "nvidia.com/gpu", &from);
    if (g) {
        char path[64];
        snprintf(path, sizeof path, "containers[0].resources.%s.nvidia.com/gpu", from);
        const char *s = scalar(g);
        if (!s || loom_parse_i64(s, 0, LOOM_JOBSPEC_GPUS_MAX, &w->spec->gpus, path, NULL))
            return fail(w, g, path, "a whole number of GPUs from 0 to 1024");
    }
    return LOOM_OK;
}

static int container_env(walk_t *w, yaml_node_t *list)
{
    if (!list)
        return LOOM_OK;
    if (list->type != YAML_SEQUENCE_NODE)
        return fail(w, list, "containers[0].env", "a list of {name, value}");
    for (yaml_node_item_t *i = list->data.sequence.items.start; i < list->data.sequence.items.top;
         i++) {
        yaml_node_t *item = yaml_document_get_node(w->doc, *i);
        const char *name = scalar(get(w, item, "name"));
        if (!name)
            return fail(w, item, "containers[0].env[]", "a name");
        if (get(w, item, "valueFrom")) {
            loom_jobspec_warn(w->spec, "%s:%zu: env %s: valueFrom needs Kubernetes; not set",
                              w->file, line_of(item), name);
            continue;
        }
        const char *value = scalar(get(w, item, "value"));
        loom_err_t e;
        if (loom_jobspec__env_add(w->spec, name, strlen(name), value ? value : "", &e))
            return loom_err_set(w->err, LOOM_EINVAL, "%s:%zu: containers[0].env: %s", w->file,
                                line_of(item), e.msg);
    }
    return LOOM_OK;
}

static int container(walk_t *w, yaml_node_t *pod)
{
    static const char *const known_pod[] = {"containers", "restartPolicy", NULL};
    warn_unknown(w, pod, "spec.template.spec", known_pod,
                 "needs Kubernetes (loom runs the first container's command on a node)");
    const char *restart = scalar(get(w, pod, "restartPolicy"));
    if (restart && strcmp(restart, "Never") && strcmp(restart, "OnFailure"))
        return fail(w, get(w, pod, "restartPolicy"), "spec.template.spec.restartPolicy",
                    "Never or OnFailure (a Job's pods may not restart Always)");
    yaml_node_t *cs = get(w, pod, "containers");
    if (!cs || cs->type != YAML_SEQUENCE_NODE ||
        cs->data.sequence.items.top == cs->data.sequence.items.start)
        return fail(w, cs ? cs : pod, "spec.template.spec.containers", "a non-empty list");
    if (cs->data.sequence.items.top - cs->data.sequence.items.start > 1)
        loom_jobspec_warn(w->spec,
                          "%s:%zu: spec.template.spec.containers: loom runs the first "
                          "container only; the others are ignored",
                          w->file, line_of(cs));
    yaml_node_t *c = yaml_document_get_node(w->doc, *cs->data.sequence.items.start);
    static const char *const known_c[] = {"name",       "command",   "args", "env",
                                          "workingDir", "resources", NULL};
    const char *image = scalar(get(w, c, "image"));
    if (image)
        loom_jobspec_warn(w->spec,
                          "%s:%zu: containers[0].image %s: loom runs the command on the "
                          "node itself, without the image",
                          w->file, line_of(get(w, c, "image")), image);
    static const char *const with_image[] = {"name",       "command",   "args",  "env",
                                             "workingDir", "resources", "image", NULL};
    warn_unknown(w, c, "containers[0]", image ? with_image : known_c, "needs a container runtime");
    const char *wd = scalar(get(w, c, "workingDir"));
    if (wd && loom_jobspec_set(w->spec, LOOM_JOBSPEC_LOOM, "--chdir", wd, w->file, w->err))
        return LOOM_EINVAL;
    if (container_resources(w, c) || container_env(w, get(w, c, "env")))
        return LOOM_EINVAL;
    return LOOM_OK;
}

/* completionMode: Indexed gives each task JOB_COMPLETION_INDEX, its index
 * (set here to 0, a single completion's; an array's task gets its own, as
 * src/exec/jobio.c replaces it). */
static int completion_mode(walk_t *w, yaml_node_t *spec)
{
    yaml_node_t *n = get(w, spec, "completionMode");
    const char *mode = scalar(n);
    if (!n || (mode && strcmp(mode, "NonIndexed") == 0))
        return LOOM_OK;
    if (!mode || strcmp(mode, "Indexed") != 0)
        return fail(w, n, "spec.completionMode", "Indexed or NonIndexed");
    return loom_jobspec__env_add(w->spec, "JOB_COMPLETION_INDEX", 20, "0", w->err);
}

/* metadata.labels become the job's labels; one loom cannot hold (a key
 * longer than 63 characters, e.g. with a long prefix) is named in a
 * warning. */
static void labels(walk_t *w, yaml_node_t *meta)
{
    yaml_node_t *map = get(w, meta, "labels");
    if (!map || map->type != YAML_MAPPING_NODE)
        return;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        const char *k = scalar(yaml_document_get_node(w->doc, p->key));
        const char *v = scalar(yaml_document_get_node(w->doc, p->value));
        char kv[LOOM_JOBSPEC_VALUE_MAX + 1];
        loom_err_t e;
        if (!k || !v || snprintf(kv, sizeof kv, "%s=%s", k, v) >= (int)sizeof kv ||
            loom_jobspec_set(w->spec, LOOM_JOBSPEC_LOOM, "--label", kv, w->file, &e))
            loom_jobspec_warn(w->spec, "%s: metadata.labels %.64s: not a loom label; ignored",
                              w->file, k ? k : "?");
    }
}

/* activeDeadlineSeconds, backoffLimit, parallelism, completions. */
static int job_fields(walk_t *w, yaml_node_t *spec)
{
    int64_t deadline = -1, backoff = -1, parallelism = -1, completions = -1;
    if (get_int(w, spec, "activeDeadlineSeconds", "spec.activeDeadlineSeconds", 1,
                366LL * 24 * 3600, &deadline) ||
        get_int(w, spec, "backoffLimit", "spec.backoffLimit", 0, 100, &backoff) ||
        get_int(w, spec, "parallelism", "spec.parallelism", 0, LOOM_JOBSPEC_ARRAY_TASKS_MAX,
                &parallelism) ||
        get_int(w, spec, "completions", "spec.completions", 0, LOOM_JOBSPEC_ARRAY_TASKS_MAX,
                &completions))
        return LOOM_EINVAL;
    if (deadline > 0)
        w->spec->time_limit_s = deadline;
    /* Kubernetes retries 6 times by default; loom retries nothing, and a
     * warning about it only when the file asks for retries. */
    if (backoff >= 0)
        w->spec->retries = backoff;
    if (completion_mode(w, spec))
        return LOOM_EINVAL;
    if (completions < 0 && parallelism > 1) {
        completions = parallelism;
        loom_jobspec_warn(w->spec,
                          "%s: spec.parallelism without completions (a work queue): "
                          "loom makes %lld tasks that each run to completion",
                          w->file, (long long)parallelism);
    }
    if (completions > 1) {
        char range[64];
        int64_t par = parallelism > 0 ? parallelism : 1;
        if (par >= completions)
            snprintf(range, sizeof range, "0-%lld", (long long)(completions - 1));
        else
            snprintf(range, sizeof range, "0-%lld%%%lld", (long long)(completions - 1),
                     (long long)par);
        if (loom_jobspec_set(w->spec, LOOM_JOBSPEC_LOOM, "--array", range, w->file, w->err))
            return LOOM_EINVAL;
    }
    static const char *const known[] = {"template",
                                        "activeDeadlineSeconds",
                                        "backoffLimit",
                                        "parallelism",
                                        "completions",
                                        "completionMode",
                                        "ttlSecondsAfterFinished",
                                        NULL};
    warn_unknown(w, spec, "spec", known, "not supported by loom");
    return LOOM_OK;
}

static int walk(walk_t *w, yaml_node_t *root)
{
    if (!root || root->type != YAML_MAPPING_NODE)
        return fail(w, root, "manifest", "a mapping (a batch/v1 Job)");
    const char *api = scalar(get(w, root, "apiVersion")), *kind = scalar(get(w, root, "kind"));
    if (!api || strcmp(api, "batch/v1") || !kind || strcmp(kind, "Job"))
        return fail(w, root, "apiVersion/kind", "batch/v1 and Job");
    yaml_node_t *meta = get(w, root, "metadata");
    const char *name = scalar(get(w, meta, "name"));
    if (!name)
        name = scalar(get(w, meta, "generateName"));
    if (name && loom_jobspec_set(w->spec, LOOM_JOBSPEC_LOOM, "--job-name", name, w->file, w->err))
        return LOOM_EINVAL;
    if (!name)
        loom_jobspec_warn(w->spec, "%s: metadata.name missing: the job is named after the file",
                          w->file);
    labels(w, meta);
    const char *ns = scalar(get(w, meta, "namespace"));
    if (ns)
        loom_jobspec_warn(w->spec, "%s: metadata.namespace %s: loom has no namespaces; ignored",
                          w->file, ns);
    yaml_node_t *spec = get(w, root, "spec");
    if (!spec || spec->type != YAML_MAPPING_NODE)
        return fail(w, spec ? spec : root, "spec", "a mapping");
    if (job_fields(w, spec))
        return LOOM_EINVAL;
    yaml_node_t *pod = get(w, get(w, spec, "template"), "spec");
    if (!pod || pod->type != YAML_MAPPING_NODE)
        return fail(w, spec, "spec.template.spec", "a mapping");
    return container(w, pod);
}

int loom_jobspec_parse_k8s(loom_jobspec_t *spec, const char *text, size_t len, const char *file,
                           loom_err_t *err)
{
    size_t line = 0, column = 0;
    const char *problem = NULL;
    int depth = loom_text_yaml_depth(text, len, LOOM_YAML_MAX_DEPTH, &line, &column, &problem);
    if (depth == 1)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s:%zu:%zu: nests deeper than %d levels (mappings and sequences), "
                            "the most loom reads",
                            file, line, column, LOOM_YAML_MAX_DEPTH);
    if (depth < 0)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    /* a syntax error (2) is reported by the load below, as before */
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        int rc = loom_err_set(err, LOOM_EINVAL, "%s:%zu:%zu: %s", file,
                              parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                              parser.problem ? parser.problem : "invalid YAML");
        yaml_parser_delete(&parser);
        return rc;
    }
    walk_t w = {&doc, file, spec, err};
    int rc = walk(&w, yaml_document_get_root_node(&doc));
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc;
}
