/* YAML jobs without containers: from a Kubernetes batch/v1 Job manifest,
 * the first container's command + args, env (name/value pairs) and
 * workingDir. That is the documented subset (docs/exec.md); anything that
 * needs a container runtime (an image's entrypoint, volumes, valueFrom) is
 * refused with a message that names the field.
 *
 * Hostile input. A first pass over the events stops at
 * LOOM_YAML_MAX_DEPTH levels (as JSON's 64) before anything is built
 * (core/yaml_depth.c says why); below that depth parsing is linear. Values that the shell
 * environment cannot carry (a NUL, a name with '=') are refused, not cut. */
#include <string.h>
#include <yaml.h>

#include "core/yaml_depth.h"
#include "loom/exec.h"

/* The manifest's nesting, bounded before anything is built. */
static int check_depth(const char *manifest, size_t len, loom_err_t *err)
{
    size_t line = 0, column = 0;
    const char *problem = NULL;
    switch (loom_text_yaml_depth(manifest, len, LOOM_YAML_MAX_DEPTH, &line, &column, &problem)) {
    case 0: return LOOM_OK;
    case 1:
        return loom_err_set(err, LOOM_EINVAL,
                            "manifest line %zu column %zu: nests deeper than %d levels", line,
                            column, LOOM_YAML_MAX_DEPTH);
    case 2:
        return loom_err_set(err, LOOM_EINVAL, "manifest line %zu column %zu: %s", line, column,
                            problem);
    default: return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
}

static yaml_node_t *map_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && strcmp((char *)k->data.scalar.value, key) == 0)
            return yaml_document_get_node(doc, p->value);
    }
    return NULL;
}

static const char *scalar(yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A scalar that holds a NUL cannot reach argv or the environment whole. */
static bool has_nul(yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE &&
           strlen((const char *)n->data.scalar.value) != n->data.scalar.length;
}

/* An environment name: non-empty, printable ASCII, no '=' (Kubernetes'
 * rule); LOOM_ names are loom's own (docs/exec.md). */
static const char *env_name_problem(const char *name)
{
    if (!name[0])
        return "is empty";
    for (const char *p = name; *p; p++)
        if (*p == '=' || *p < 0x21 || *p > 0x7e)
            return "may hold only printable ASCII characters other than '='";
    if (strncmp(name, "LOOM_", 5) == 0)
        return "is reserved: loom sets LOOM_ variables itself";
    return NULL;
}

static int append_strings(yaml_document_t *doc, yaml_node_t *seq, const char *where, json_t *out,
                          loom_err_t *err)
{
    if (!seq)
        return LOOM_OK;
    if (seq->type != YAML_SEQUENCE_NODE)
        return loom_err_set(err, LOOM_EINVAL, "manifest line %zu: %s: expected a list of strings",
                            seq->start_mark.line + 1, where);
    for (yaml_node_item_t *i = seq->data.sequence.items.start; i < seq->data.sequence.items.top;
         i++) {
        yaml_node_t *n = yaml_document_get_node(doc, *i);
        const char *s = scalar(n);
        if (!s)
            return loom_err_set(err, LOOM_EINVAL, "manifest line %zu: %s: expected a string item",
                                n ? n->start_mark.line + 1 : 0, where);
        if (has_nul(n))
            return loom_err_set(err, LOOM_EINVAL,
                                "manifest line %zu: %s: an item holds a NUL character, which a "
                                "command line cannot carry",
                                n->start_mark.line + 1, where);
        json_array_append_new(out, json_string(s));
    }
    return LOOM_OK;
}

static int container_env(yaml_document_t *doc, yaml_node_t *list, json_t *env, loom_err_t *err)
{
    if (!list)
        return LOOM_OK;
    if (list->type != YAML_SEQUENCE_NODE)
        return loom_err_set(err, LOOM_EINVAL, "manifest line %zu: env: expected a list",
                            list->start_mark.line + 1);
    for (yaml_node_item_t *i = list->data.sequence.items.start; i < list->data.sequence.items.top;
         i++) {
        yaml_node_t *item = yaml_document_get_node(doc, *i);
        const char *name = scalar(map_get(doc, item, "name"));
        const char *value = scalar(map_get(doc, item, "value"));
        size_t line = item ? item->start_mark.line + 1 : 0;
        if (!name)
            return loom_err_set(err, LOOM_EINVAL, "manifest line %zu: env item: expected a name",
                                line);
        const char *problem = env_name_problem(name);
        if (problem || has_nul(map_get(doc, item, "name")))
            return loom_err_set(err, LOOM_EINVAL, "manifest line %zu: env name '%.64s': %s", line,
                                name, problem ? problem : "holds a NUL character");
        if (has_nul(map_get(doc, item, "value")))
            return loom_err_set(err, LOOM_EINVAL,
                                "manifest line %zu: env '%s': the value holds a NUL character, "
                                "which the environment cannot carry",
                                line, name);
        if (map_get(doc, item, "valueFrom"))
            return loom_err_set(err, LOOM_EINVAL,
                                "manifest line %zu: env '%s': valueFrom is not supported "
                                "without Kubernetes; give a value",
                                line, name);
        loom_buf_t b = LOOM_BUF_INIT;
        loom_buf_appendf(&b, "%s=%s", name, value ? value : "");
        json_array_append_new(env, json_string(b.data));
        loom_buf_free(&b);
    }
    return LOOM_OK;
}

int loom_exec_yaml_command(const char *manifest, size_t len, json_t *argv, json_t *env,
                           char *workdir, size_t workdir_len, loom_err_t *err)
{
    int depth_rc = check_depth(manifest, len, err);
    if (depth_rc != LOOM_OK)
        return depth_rc;
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)manifest, len);
    if (!yaml_parser_load(&parser, &doc)) {
        int rc = loom_err_set(err, LOOM_EINVAL, "manifest line %zu column %zu: %s",
                              parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                              parser.problem ? parser.problem : "invalid YAML");
        yaml_parser_delete(&parser);
        return rc;
    }
    int rc = LOOM_OK;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    const char *kind = scalar(map_get(&doc, root, "kind"));
    const char *api = scalar(map_get(&doc, root, "apiVersion"));
    if (!root || root->type != YAML_MAPPING_NODE) {
        rc = loom_err_set(err, LOOM_EINVAL, "manifest: expected a mapping (a batch/v1 Job)");
        goto out;
    }
    if (!kind || strcmp(kind, "Job") != 0 || !api || strcmp(api, "batch/v1") != 0) {
        rc = loom_err_set(err, LOOM_EINVAL,
                          "manifest: expected apiVersion batch/v1 and kind Job, found %s %s",
                          api ? api : "(no apiVersion)", kind ? kind : "(no kind)");
        goto out;
    }
    yaml_node_t *pod =
        map_get(&doc, map_get(&doc, map_get(&doc, root, "spec"), "template"), "spec");
    yaml_node_t *containers = map_get(&doc, pod, "containers");
    if (!containers || containers->type != YAML_SEQUENCE_NODE ||
        containers->data.sequence.items.top == containers->data.sequence.items.start) {
        rc = loom_err_set(err, LOOM_EINVAL,
                          "manifest: spec.template.spec.containers: expected a non-empty list");
        goto out;
    }
    yaml_node_t *c = yaml_document_get_node(&doc, *containers->data.sequence.items.start);
    yaml_node_t *command = map_get(&doc, c, "command");
    if (!command) {
        rc = loom_err_set(err, LOOM_EINVAL,
                          "manifest: containers[0].command is required: without containers "
                          "there is no image entrypoint to run");
        goto out;
    }
    size_t before = json_array_size(argv);
    if ((rc = append_strings(&doc, command, "containers[0].command", argv, err)) != LOOM_OK ||
        (rc = append_strings(&doc, map_get(&doc, c, "args"), "containers[0].args", argv, err)) !=
            LOOM_OK ||
        (rc = container_env(&doc, map_get(&doc, c, "env"), env, err)) != LOOM_OK)
        goto out;
    if (json_array_size(argv) == before) {
        rc = loom_err_set(err, LOOM_EINVAL, "manifest: containers[0].command is empty");
        goto out;
    }
    const char *wd = scalar(map_get(&doc, c, "workingDir"));
    if (wd) {
        if (wd[0] != '/' || has_nul(map_get(&doc, c, "workingDir"))) {
            rc = loom_err_set(err, LOOM_EINVAL,
                              "manifest: containers[0].workingDir '%.200s': expected an absolute "
                              "path (without an image there is no directory to resolve it from)",
                              wd);
            goto out;
        }
        if (strlen(wd) >= workdir_len) {
            rc = loom_err_set(err, LOOM_EINVAL, "manifest: containers[0].workingDir too long");
            goto out;
        }
        strcpy(workdir, wd);
    }
out:
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc;
}
