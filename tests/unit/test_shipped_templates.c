/* The templates shipped in workloads/templates, rendered from contexts that
 * the demo catalog samples (and from hostile ones): Slurm and local scripts
 * must pass `bash -n` and carry the right #SBATCH lines; the Kubernetes Job
 * must parse with libyaml and have the expected structure; values with shell
 * or YAML syntax in them must come out as exactly those values. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml.h>

#include "test_util.h"

#include "loom/catalog.h"
#include "loom/template.h"

#define TDIR "workloads/templates/"

static loom_template_t *load(const char *name)
{
    loom_template_t *t;
    loom_err_t err;
    if (loom_template_load_file(name, &t, &err))
        fail_msg("%s", err.msg);
    return t;
}

static char *render(const loom_template_t *t, const json_t *ctx, loom_template_escape_t esc)
{
    loom_template_options_t o = {.escape = esc, .strict = true};
    loom_buf_t out = LOOM_BUF_INIT;
    loom_err_t err;
    if (loom_template_render(t, ctx, &o, &out, &err))
        fail_msg("%s", err.msg);
    return loom_buf_detach(&out);
}

/* bash [-n] -c script; stdout into out (may be NULL). Returns exit status. */
static int bash(const char *script, bool syntax_only, loom_buf_t *out)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        if (syntax_only)
            execlp("bash", "bash", "-n", "-c", script, (char *)NULL);
        else
            execlp("bash", "bash", "-c", script, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0)
        if (out)
            loom_buf_append(out, buf, (size_t)n);
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ------------------------------------------------------------- yaml -> json */

static json_t *node_json(yaml_document_t *d, yaml_node_t *n, int depth)
{
    assert_true(depth < 64);
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return json_stringn((const char *)n->data.scalar.value, n->data.scalar.length);
    case YAML_SEQUENCE_NODE: {
        json_t *a = json_array();
        for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top;
             i++)
            json_array_append_new(a, node_json(d, yaml_document_get_node(d, *i), depth + 1));
        return a;
    }
    case YAML_MAPPING_NODE: {
        json_t *o = json_object();
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
             p++) {
            yaml_node_t *k = yaml_document_get_node(d, p->key);
            assert_int_equal(k->type, YAML_SCALAR_NODE);
            char *key = strndup((const char *)k->data.scalar.value, k->data.scalar.length);
            assert_null(json_object_get(o, key)); /* no duplicate keys */
            json_object_set_new(o, key,
                                node_json(d, yaml_document_get_node(d, p->value), depth + 1));
            free(key);
        }
        return o;
    }
    default: fail_msg("unexpected YAML node");
    }
    return NULL;
}

static json_t *parse_yaml(const char *text)
{
    yaml_parser_t p;
    yaml_document_t d;
    assert_true(yaml_parser_initialize(&p));
    yaml_parser_set_input_string(&p, (const unsigned char *)text, strlen(text));
    if (!yaml_parser_load(&p, &d))
        fail_msg("libyaml: %s at line %zu column %zu\n%s", p.problem, p.problem_mark.line + 1,
                 p.problem_mark.column + 1, text);
    yaml_node_t *root = yaml_document_get_root_node(&d);
    assert_non_null(root);
    json_t *j = node_json(&d, root, 0);
    yaml_document_delete(&d);
    yaml_parser_delete(&p);
    return j;
}

static const char *str_at(const json_t *j, const char *path)
{
    /* path like "spec.template.spec.containers.0.image" */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const json_t *v = j;
    for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, "."))
        v = json_is_array(v) ? json_array_get(v, (size_t)atoi(tok)) : json_object_get(v, tok);
    return json_string_value(v);
}

static void check_k8s(const json_t *ctx, const char *yaml_text)
{
    json_t *y = parse_yaml(yaml_text);
    assert_string_equal(str_at(y, "apiVersion"), "batch/v1");
    assert_string_equal(str_at(y, "kind"), "Job");
    assert_string_equal(str_at(y, "metadata.name"),
                        json_string_value(json_object_get(ctx, "dns_name")));
    assert_string_equal(str_at(y, "spec.template.spec.restartPolicy"), "Never");
    json_t *c0 = json_array_get(
        json_object_get(
            json_object_get(json_object_get(json_object_get(y, "spec"), "template"), "spec"),
            "containers"),
        0);
    assert_non_null(c0);
    assert_string_equal(str_at(c0, "command.0"),
                        json_string_value(json_object_get(ctx, "executable")));
    /* args: exactly the arguments, in order, byte for byte. */
    json_t *args = json_object_get(c0, "args");
    json_t *want = json_object_get(ctx, "arguments");
    if (json_array_size(want) == 0)
        assert_true(json_array_size(args) == 0);
    else
        assert_true(json_equal(args, want));
    /* env: every variable with its exact value. */
    json_t *env = json_object_get(c0, "env");
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(ctx, "env"), i, e)
    {
        json_t *got = json_array_get(env, i); /* loom sets LOOM_JOB_NAME itself */
        assert_true(json_equal(got, e));
    }
    json_t *r = json_object_get(ctx, "resources");
    char num[64];
    snprintf(num, sizeof num, "%lld", (long long)json_integer_value(json_object_get(r, "cpus")));
    assert_string_equal(str_at(c0, "resources.requests.cpu"), num);
    assert_string_equal(str_at(c0, "resources.limits.cpu"), num);
    snprintf(num, sizeof num, "%lldMi",
             (long long)json_integer_value(json_object_get(r, "memory_mib")));
    assert_string_equal(str_at(c0, "resources.limits.memory"), num);
    json_t *limits = json_object_get(json_object_get(c0, "resources"), "limits");
    json_int_t gpus = json_integer_value(json_object_get(r, "gpus"));
    if (gpus > 0) {
        snprintf(num, sizeof num, "%lld", (long long)gpus);
        assert_string_equal(json_string_value(json_object_get(limits, "nvidia.com/gpu")), num);
    } else {
        assert_null(json_object_get(limits, "nvidia.com/gpu"));
    }
    json_t *tl = json_object_get(ctx, "time_limit");
    if (tl) {
        snprintf(num, sizeof num, "%lld",
                 (long long)json_integer_value(json_object_get(tl, "seconds")));
        assert_string_equal(str_at(y, "spec.activeDeadlineSeconds"), num);
    }
    json_decref(y);
}

static bool has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p += n)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == 0))
            return true;
    return false;
}

static void check_slurm(const json_t *ctx, const char *script)
{
    assert_int_equal(bash(script, true, NULL), 0);
    assert_true(strncmp(script, "#!/bin/bash\n", 12) == 0);
    char line[256];
    json_t *r = json_object_get(ctx, "resources");
    snprintf(line, sizeof line, "#SBATCH --job-name=%s",
             json_string_value(json_object_get(ctx, "name")));
    assert_true(has_line(script, line));
    snprintf(line, sizeof line, "#SBATCH --cpus-per-task=%lld",
             (long long)json_integer_value(json_object_get(r, "cpus")));
    assert_true(has_line(script, line));
    snprintf(line, sizeof line, "#SBATCH --mem=%lldM",
             (long long)json_integer_value(json_object_get(r, "memory_mib")));
    assert_true(has_line(script, line));
    json_int_t gpus = json_integer_value(json_object_get(r, "gpus"));
    const char *type = json_string_value(json_object_get(r, "gpu_type"));
    if (gpus > 0) {
        if (type)
            snprintf(line, sizeof line, "#SBATCH --gres=gpu:%s:%lld", type, (long long)gpus);
        else
            snprintf(line, sizeof line, "#SBATCH --gres=gpu:%lld", (long long)gpus);
        assert_true(has_line(script, line));
    } else {
        assert_null(strstr(script, "--gres"));
    }
    json_t *tl = json_object_get(ctx, "time_limit");
    if (tl) {
        snprintf(line, sizeof line, "#SBATCH --time=%s",
                 json_string_value(json_object_get(tl, "slurm")));
        assert_true(has_line(script, line));
    }
    /* All #SBATCH lines come before the first command (sbatch stops there). */
    const char *last = NULL;
    for (const char *p = script; (p = strstr(p, "\n#SBATCH")); p++)
        last = p;
    assert_non_null(last);
    assert_true(last < strstr(script, "\nset -euo pipefail"));
}

/* Every job of the demo catalog, many samples, all three templates. */
static void test_demo_catalog_renders(void **s)
{
    (void)s;
    loom_catalog_t *c;
    loom_err_t err;
    if (loom_catalog_load_file("workloads/catalogs/demo.json", &c, NULL, &err))
        fail_msg("%s", err.msg);
    loom_template_t *slurm = load(TDIR "slurm.sh.mustache"),
                    *local = load(TDIR "local.sh.mustache"),
                    *k8s = load(TDIR "k8s-job.yaml.mustache");
    loom_rng_t rng;
    loom_rng_init(&rng, 2026, 0);
    for (int i = 0; i < 60; i++) {
        size_t k = (size_t)i % loom_catalog_job_count(c);
        json_t *ctx;
        assert_int_equal(loom_catalog_sample(c, k, &rng, &ctx, &err), LOOM_OK);
        if (i % 2)
            json_object_set_new(ctx, "submit_id", json_string("seed-1-42"));
        char *sh = render(slurm, ctx, LOOM_TEMPLATE_ESCAPE_SHELL);
        check_slurm(ctx, sh);
        char *lo = render(local, ctx, LOOM_TEMPLATE_ESCAPE_SHELL);
        assert_int_equal(bash(lo, true, NULL), 0);
        char *y = render(k8s, ctx, LOOM_TEMPLATE_ESCAPE_YAML);
        check_k8s(ctx, y);
        free(sh);
        free(lo);
        free(y);
        json_decref(ctx);
    }
    loom_template_free(slurm);
    loom_template_free(local);
    loom_template_free(k8s);
    loom_catalog_free(c);
}

static const char *const hostile[] = {"$(touch /tmp/loom-pwned)",
                                      "\"; kill -9 $$; \"",
                                      "'; exit 3; '",
                                      "`id`",
                                      "a\nb: c\n- d",
                                      "{x: [1]}",
                                      "&a *a !!str",
                                      "# c",
                                      "\\",
                                      "",
                                      "--flag=it's",
                                      "\t\x01\x7f"};

/* A context with hostile arguments and environment values: the rendered
 * local script run by bash prints them back verbatim; the manifest carries
 * them verbatim. */
static void test_hostile_values(void **s)
{
    (void)s;
    size_t n = sizeof hostile / sizeof hostile[0];
    json_t *args = json_array(), *env = json_array();
    json_array_append_new(args, json_string("%s|"));
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(args, json_string(hostile[i]));
        char name[16];
        snprintf(name, sizeof name, "V%zu", i);
        json_array_append_new(env, json_pack("{s:s,s:s}", "name", name, "value", hostile[i]));
    }
    json_t *ctx = json_pack("{s:s,s:s,s:s,s:o,s:o,s:{s:i,s:i,s:i,s:b}}", "name", "evil", "dns_name",
                            "evil", "executable", "printf", "arguments", args, "env", env,
                            "resources", "cpus", 1, "memory_mib", 64, "gpus", 0, "has_gpus", 0);
    loom_template_t *local = load(TDIR "local.sh.mustache"),
                    *k8s = load(TDIR "k8s-job.yaml.mustache");
    char *lo = render(local, ctx, LOOM_TEMPLATE_ESCAPE_SHELL);
    loom_buf_t out = LOOM_BUF_INIT;
    assert_int_equal(bash(lo, false, &out), 0);
    loom_buf_t want = LOOM_BUF_INIT;
    for (size_t i = 0; i < n; i++)
        loom_buf_appendf(&want, "%s|", hostile[i]);
    assert_int_equal(out.len, want.len);
    assert_memory_equal(out.data, want.data, want.len);
    assert_int_not_equal(access("/tmp/loom-pwned", F_OK), 0);
    /* The environment reached the process verbatim too. */
    loom_buf_t envout = LOOM_BUF_INIT;
    char *lo2;
    json_t *args_copy = json_deep_copy(args);
    json_object_set_new(ctx, "executable", json_string("sh"));
    json_object_set_new(ctx, "arguments",
                        json_pack("[s,s]", "-c", "printf '%s|' \"$V0\" \"$V1\" \"$V4\""));
    lo2 = render(local, ctx, LOOM_TEMPLATE_ESCAPE_SHELL);
    assert_int_equal(bash(lo2, false, &envout), 0);
    char ew[256];
    snprintf(ew, sizeof ew, "%s|%s|%s|", hostile[0], hostile[1], hostile[4]);
    assert_string_equal(envout.data, ew);
    json_object_set_new(ctx, "arguments", args_copy);
    char *y = render(k8s, ctx, LOOM_TEMPLATE_ESCAPE_YAML);
    check_k8s(ctx, y);
    free(lo);
    free(lo2);
    free(y);
    loom_buf_free(&out);
    loom_buf_free(&want);
    loom_buf_free(&envout);
    loom_template_free(local);
    loom_template_free(k8s);
    json_decref(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demo_catalog_renders),
        cmocka_unit_test(test_hostile_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
