/* loom zoo add|list|show|rm|match|warm: the model repository of warm starts
 * (docs/zoo.md). The repository is files and SQLite under the state
 * directory (STATE/zoo), so these commands work on it directly through
 * libloom, with or without a running loomd (loomd serves the same through
 * zoo.* RPC methods for remote clients). */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "loom/zoo.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: loom zoo add MODEL.onnx --weights FILE --metric NAME=VALUE --task TASK\n"
            "                    [--name NAME] [--job ID] [--data DATA]\n"
            "       loom zoo list [--task TASK] [--json]\n"
            "       loom zoo show ID [--json]\n"
            "       loom zoo rm ID\n"
            "       loom zoo match MODEL.onnx [--task TASK] [--data DATA] [--top N] [--json]\n"
            "       loom zoo warm MODEL.onnx --out FILE [--task TASK] [--data DATA] [--noise SD]\n"
            "                     [--seed N] [--no-deepen] [--json]\n\n"
            "The repository of trained models that new jobs warm-start from (ModelKeeper).\n"
            "  add    store an ONNX model and its weights file (docs/zoo.md, \"Weights files\")\n"
            "         with its metric (accuracy: higher is better; names with loss, error,\n"
            "         perplexity or wer: lower) and task; prints the new entry's ID\n"
            "  match  rank stored models of the task by architecture similarity (0..1) and\n"
            "         name the parent a warm start would use\n"
            "  warm   match, then map the parent's weights onto MODEL and write them to FILE\n"
            "--data names the data a model trained on (add) or will train on (match, warm):\n"
            "entries that recorded other data are not parents (predicted not to help).\n"
            "Options: --state-dir DIR (default $LOOM_STATE_DIR, else ~/.local/state/loom);\n"
            "the repository is DIR/zoo.\n"
            "exit codes: 0 ok, 1 failure, 2 usage, 4 no such entry / no parent, 5 bad input\n");
}

typedef struct zargs {
    const char *weights, *metric, *task, *name, *out, *state_dir, *data;
    int64_t job, top, seed;
    double noise;
    bool json, no_deepen;
} zargs_t;

static int exit_of(int rc)
{
    return rc == LOOM_ENOTFOUND ? LOOM_EXIT_NOTFOUND
           : rc == LOOM_EINVAL  ? LOOM_EXIT_INPUT
                                : LOOM_EXIT_FAILURE;
}

static int parse(int argc, char **argv, zargs_t *a)
{
    static const struct option opts[] = {{"weights", required_argument, NULL, 'w'},
                                         {"metric", required_argument, NULL, 'm'},
                                         {"task", required_argument, NULL, 't'},
                                         {"data", required_argument, NULL, 'T'},
                                         {"name", required_argument, NULL, 'n'},
                                         {"job", required_argument, NULL, 'J'},
                                         {"top", required_argument, NULL, 'k'},
                                         {"out", required_argument, NULL, 'o'},
                                         {"noise", required_argument, NULL, 'N'},
                                         {"seed", required_argument, NULL, 's'},
                                         {"no-deepen", no_argument, NULL, 'D'},
                                         {"state-dir", required_argument, NULL, 'd'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    *a = (zargs_t){.noise = -1};
    loom_err_t err;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case 'w': a->weights = optarg; break;
        case 'm': a->metric = optarg; break;
        case 't': a->task = optarg; break;
        case 'T': a->data = optarg; break;
        case 'n': a->name = optarg; break;
        case 'o': a->out = optarg; break;
        case 'd': a->state_dir = optarg; break;
        case 'j': a->json = true; break;
        case 'D': a->no_deepen = true; break;
        case 'J': rc = loom_parse_i64(optarg, 1, INT64_MAX, &a->job, "--job", &err); break;
        case 'k': rc = loom_parse_i64(optarg, 1, 1000, &a->top, "--top", &err); break;
        case 's': rc = loom_parse_i64(optarg, 0, INT64_MAX, &a->seed, "--seed", &err); break;
        case 'N': {
            char *end;
            a->noise = strtod(optarg, &end);
            if (*end || !(a->noise >= 0 && a->noise <= 1))
                rc = loom_err_set(&err, LOOM_EINVAL, "--noise '%s': expected 0 to 1", optarg);
            break;
        }
        case 'h': usage(stdout); return -1;
        default: return loom_cli_bad_option("zoo", c, argv[optind - 1]);
        }
        if (rc) {
            fprintf(stderr, "loom zoo: %s\n", err.msg);
            return LOOM_EXIT_USAGE;
        }
    }
    return 0;
}

static int open_repo(const zargs_t *a, loom_zoo_t **z)
{
    char dir[4096], path[4200];
    loom_err_t err;
    if (a->state_dir)
        snprintf(dir, sizeof dir, "%s", a->state_dir);
    else if (loom_default_state_dir(dir, sizeof dir, &err)) {
        fprintf(stderr, "loom zoo: %s\n", err.msg);
        return LOOM_EXIT_FAILURE;
    }
    snprintf(path, sizeof path, "%s/zoo", dir);
    if (loom_zoo_open(path, z, &err)) {
        fprintf(stderr, "loom zoo: %s\n", err.msg);
        return LOOM_EXIT_FAILURE;
    }
    return 0;
}

static int do_add(loom_zoo_t *z, const char *model, const zargs_t *a)
{
    char mname[LOOM_ZOO_MAX_TEXT + 1];
    const char *eq = a->metric ? strchr(a->metric, '=') : NULL;
    if (!a->weights || !a->task || !eq || eq == a->metric ||
        (size_t)(eq - a->metric) > LOOM_ZOO_MAX_TEXT) {
        fprintf(stderr, "loom zoo add: expected --weights FILE, --task TASK and --metric "
                        "NAME=VALUE (see loom zoo --help)\n");
        return LOOM_EXIT_USAGE;
    }
    snprintf(mname, sizeof mname, "%.*s", (int)(eq - a->metric), a->metric);
    char *end;
    double v = strtod(eq + 1, &end);
    if (*end || !isfinite(v) || end == eq + 1) {
        fprintf(stderr, "loom zoo add: --metric '%s': expected NAME=NUMBER\n", a->metric);
        return LOOM_EXIT_USAGE;
    }
    loom_zoo_entry_in_t in = {.model_path = model,
                              .weights_path = a->weights,
                              .task = a->task,
                              .data = a->data,
                              .name = a->name,
                              .metric_name = mname,
                              .metric = v,
                              .job_id = a->job,
                              .owner_uid = (int64_t)getuid()};
    int64_t id;
    loom_err_t err;
    int rc = loom_zoo_add(z, &in, &id, &err);
    if (rc) {
        fprintf(stderr, "loom zoo add: %s\n", err.msg);
        return exit_of(rc);
    }
    if (a->json)
        printf("{\"id\": %lld}\n", (long long)id);
    else
        printf("%lld\n", (long long)id);
    return LOOM_EXIT_OK;
}

static void print_row(const json_t *e)
{
    const json_t *m = json_object_get(e, "metric");
    printf("%-5lld %-24s %-12s %-10s %8.4f %6lld %9lld\n",
           (long long)json_integer_value(json_object_get(e, "id")),
           json_string_value(json_object_get(e, "name")),
           json_string_value(json_object_get(e, "task")),
           json_string_value(json_object_get(m, "name")),
           json_real_value(json_object_get(m, "value")),
           (long long)json_integer_value(json_object_get(e, "layers")),
           (long long)json_integer_value(json_object_get(e, "params")));
}

static int do_list(loom_zoo_t *z, const zargs_t *a)
{
    json_t *arr;
    loom_err_t err;
    int rc = loom_zoo_list(z, a->task, NULL, 0, &arr, &err);
    if (rc) {
        fprintf(stderr, "loom zoo list: %s\n", err.msg);
        return exit_of(rc);
    }
    if (a->json) {
        loom_cli_print_json(arr);
    } else {
        arr = loom_cli_safe_tree(arr); /* names, tasks, metrics escaped (docs/security.md) */
        printf("%-5s %-24s %-12s %-10s %8s %6s %9s\n", "ID", "NAME", "TASK", "METRIC", "VALUE",
               "LAYERS", "PARAMS");
        size_t i;
        json_t *e;
        json_array_foreach(arr, i, e) print_row(e);
    }
    json_decref(arr);
    return LOOM_EXIT_OK;
}

static int parse_id(const char *cmd, const char *text, int64_t *id)
{
    loom_err_t err;
    if (!text || loom_parse_i64(text, 1, INT64_MAX, id, "entry ID", &err)) {
        fprintf(stderr, "loom zoo %s: expected an entry ID%s%s\n", cmd, text ? ": " : "",
                text ? err.msg : "");
        return LOOM_EXIT_USAGE;
    }
    return 0;
}

static int do_show_rm(loom_zoo_t *z, const char *cmd, const char *arg, const zargs_t *a)
{
    int64_t id;
    int rc = parse_id(cmd, arg, &id);
    if (rc)
        return rc;
    loom_err_t err;
    json_t *e = NULL;
    rc = !strcmp(cmd, "rm") ? loom_zoo_remove(z, id, &err) : loom_zoo_get(z, id, NULL, &e, &err);
    if (rc) {
        fprintf(stderr, "loom zoo %s: %s\n", cmd, err.msg);
        return exit_of(rc);
    }
    if (e && a->json) {
        loom_cli_print_json(e);
    } else if (e) {
        e = loom_cli_safe_tree(e);
        const char *k;
        json_t *v;
        json_object_foreach(e, k, v)
        {
            char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            printf("%-14s %s\n", k, s ? s : "?");
            free(s);
        }
    } else {
        printf("removed %lld\n", (long long)id);
    }
    json_decref(e);
    return LOOM_EXIT_OK;
}

static int do_match(loom_zoo_t *z, const char *model, const zargs_t *a)
{
    loom_zoo_sig_t sig;
    loom_err_t err;
    int rc = loom_zoo_sig_load(model, &sig, &err);
    json_t *res = NULL;
    loom_zoo_match_opts_t o = {
        .task = a->task, .data = a->data, .top = (size_t)a->top, .band = -1, .min_similarity = -1};
    if (!rc)
        rc = loom_zoo_match(z, &sig, &o, &res, &err);
    loom_zoo_sig_free(&sig);
    if (rc) {
        fprintf(stderr, "loom zoo match: %s\n", err.msg);
        return exit_of(rc);
    }
    if (a->json) {
        loom_cli_print_json(res);
    } else {
        res = loom_cli_safe_tree(res);
        size_t i;
        json_t *e;
        printf("%-5s %-24s %-12s %10s %8s\n", "ID", "NAME", "TASK", "SIMILARITY", "METRIC");
        json_array_foreach(json_object_get(res, "candidates"), i, e)
        {
            printf("%-5lld %-24s %-12s %10.4f %8.4f\n",
                   (long long)json_integer_value(json_object_get(e, "id")),
                   json_string_value(json_object_get(e, "name")),
                   json_string_value(json_object_get(e, "task")),
                   json_real_value(json_object_get(e, "similarity")),
                   json_real_value(json_object_get(json_object_get(e, "metric"), "value")));
        }
        const json_t *p = json_object_get(res, "parent");
        if (json_is_integer(p))
            printf("parent: %lld\n", (long long)json_integer_value(p));
        else
            printf("parent: none (nothing similar enough)\n");
    }
    json_decref(res);
    return LOOM_EXIT_OK;
}

/* A warm start's "warnings" (few layers mapped, and why), one line each
 * on stderr. */
static void print_warnings(const char *who, const json_t *rep)
{
    size_t i;
    const json_t *w;
    json_array_foreach(json_object_get(rep, "warnings"), i, w)
    {
        loom_buf_t safe = LOOM_BUF_INIT;
        const char *s = json_string_value(w);
        fprintf(stderr, "%s: warning: %s\n", who, s ? loom_cli_safe(s, &safe) : "");
        loom_buf_free(&safe);
    }
}

static int do_warm(loom_zoo_t *z, const char *model, const zargs_t *a)
{
    if (!a->out) {
        fprintf(stderr, "loom zoo warm: expected --out FILE (see loom zoo --help)\n");
        return LOOM_EXIT_USAGE;
    }
    loom_zoo_match_opts_t mo = {.task = a->task, .data = a->data, .band = -1, .min_similarity = -1};
    loom_zoo_transform_opts_t to = {
        .noise = a->noise, .seed = (uint64_t)a->seed, .no_deepen = a->no_deepen};
    json_t *rep;
    loom_err_t err;
    int rc = loom_zoo_warm(z, model, &mo, &to, a->out, &rep, &err);
    if (rc) {
        fprintf(stderr, "loom zoo warm: %s\n", err.msg);
        return exit_of(rc);
    }
    print_warnings("loom zoo warm", rep);
    if (a->json) {
        loom_cli_print_json(rep);
    } else {
        rep = loom_cli_safe_tree(rep);
        printf("parent %lld (%s), similarity %.4f, %lld of %lld layers mapped, %lld tensors "
               "copied, %lld widened, %lld deepened; match %.3f s, transform %.3f s -> %s\n",
               (long long)json_integer_value(json_object_get(rep, "parent")),
               json_string_value(json_object_get(rep, "parent_name")),
               json_real_value(json_object_get(rep, "similarity")),
               (long long)json_integer_value(json_object_get(rep, "layers_mapped")),
               (long long)json_integer_value(json_object_get(rep, "layers_child")),
               (long long)json_integer_value(json_object_get(rep, "tensors_copied")),
               (long long)json_integer_value(json_object_get(rep, "tensors_widened")),
               (long long)json_integer_value(json_object_get(rep, "tensors_deepened")),
               json_real_value(json_object_get(rep, "match_s")),
               json_real_value(json_object_get(rep, "transform_s")), a->out);
    }
    json_decref(rep);
    return LOOM_EXIT_OK;
}

int loom_cmd_zoo(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? LOOM_EXIT_USAGE : LOOM_EXIT_OK;
    }
    const char *sub = argv[1];
    static const char *const subs[] = {"add", "list", "show", "rm", "match", "warm"};
    bool known = false;
    for (size_t i = 0; i < sizeof subs / sizeof *subs; i++)
        known |= !strcmp(sub, subs[i]);
    if (!known) {
        fprintf(stderr, "loom zoo: unknown subcommand '%s' (see loom zoo --help)\n", sub);
        return LOOM_EXIT_USAGE;
    }
    zargs_t a;
    int rc = parse(argc - 1, argv + 1, &a);
    if (rc)
        return rc < 0 ? LOOM_EXIT_OK : rc;
    const char *arg = optind < argc - 1 ? argv[1 + optind] : NULL;
    bool needs_arg = strcmp(sub, "list") != 0;
    if (needs_arg && !arg) {
        fprintf(stderr, "loom zoo %s: expected %s (see loom zoo --help)\n", sub,
                !strcmp(sub, "show") || !strcmp(sub, "rm") ? "an entry ID" : "MODEL.onnx");
        return LOOM_EXIT_USAGE;
    }
    loom_zoo_t *z;
    if ((rc = open_repo(&a, &z)))
        return rc;
    if (!strcmp(sub, "add"))
        rc = do_add(z, arg, &a);
    else if (!strcmp(sub, "list"))
        rc = do_list(z, &a);
    else if (!strcmp(sub, "show") || !strcmp(sub, "rm"))
        rc = do_show_rm(z, sub, arg, &a);
    else if (!strcmp(sub, "match"))
        rc = do_match(z, arg, &a);
    else
        rc = do_warm(z, arg, &a);
    loom_zoo_close(z);
    return rc;
}

/* loom submit --model M.onnx --warm-start [--warm-task TASK]: asks loomd
 * for a warm start of the submission's model (zoo.warm), records the
 * parent, its similarity and the layers mapped as the job's labels
 * (zoo.parent, zoo.similarity, zoo.layers_mapped, zoo.weights:
 * `loom show` prints them) and exports LOOM_WARM_START=PATH at the top of the batch
 * script, after its #! line. The weights go to a new file in the current
 * (submit) directory, .loom-warm-SUBMIT_ID.lw, which loomd creates as the
 * caller (zoo.warm "out"), so the job, running as its owner, can read it. */
int loom_cli_zoo_warm_start(json_t *params, json_t *labels, const char *task, const char *submit_id,
                            loom_buf_t *script)
{
    const char *model =
        json_string_value(json_object_get(json_object_get(params, "model"), "path"));
    if (!model) {
        fprintf(stderr, "loom submit: --warm-start needs --model FILE\n");
        return LOOM_EXIT_USAGE;
    }
    const char *fmt = json_string_value(json_object_get(params, "format"));
    if (fmt && strcmp(fmt, "batch")) {
        fprintf(stderr, "loom submit: --warm-start works with batch scripts, not --format %s\n",
                fmt);
        return LOOM_EXIT_USAGE;
    }
    char cwd[4096], out[4200];
    if (!getcwd(cwd, sizeof cwd)) {
        fprintf(stderr, "loom submit: --warm-start: cannot get the current directory: %s\n",
                strerror(errno));
        return LOOM_EXIT_FAILURE;
    }
    /* The submit_id (its first 40 bytes, [A-Za-z0-9._-] kept) for whoever
     * looks, then random bytes: a retried submit_id gets a new file. */
    char id[41], rnd[9];
    size_t k = 0;
    for (const char *c = submit_id ? submit_id : ""; *c && k < 40; c++)
        id[k++] = (isalnum((unsigned char)*c) || strchr("._-", *c)) ? *c : '_';
    id[k] = '\0';
    unsigned char r[4] = {0};
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        uint64_t t = (uint64_t)loom_time_real_ns();
        memcpy(r, &t, sizeof r);
    }
    snprintf(rnd, sizeof rnd, "%02x%02x%02x%02x", r[0], r[1], r[2], r[3]);
    snprintf(out, sizeof out, "%s/.loom-warm-%s-%s.lw", strcmp(cwd, "/") ? cwd : "", id, rnd);
    json_t *p = json_pack("{s:s,s:s}", "model", model, "out", out), *res = NULL;
    if (task)
        json_object_set_new(p, "task", json_string(task));
    loom_cli_conn_t conn;
    int rc = loom_cli_connect("submit", &conn);
    if (!rc) {
        rc = loom_cli_call("submit", &conn, "zoo.warm", p, 0, &res);
        loom_cli_disconnect(&conn);
    }
    json_decref(p);
    struct stat st;
    if (rc && lstat(out, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0 &&
        st.st_uid == geteuid())
        unlink(out); /* created for this call, nothing written (the warm start failed) */
    if (rc)
        return rc;
    loom_err_t err;
    if (loom_zoo_warm_apply(res, labels, script, &err) != LOOM_OK) {
        fprintf(stderr, "loom submit: %s\n", err.msg);
        json_decref(res);
        return LOOM_EXIT_FAILURE;
    }
    fprintf(stderr, "loom submit: warm start from zoo entry %s (similarity %s, %s layers)\n",
            json_string_value(json_object_get(labels, "zoo.parent")),
            json_string_value(json_object_get(labels, "zoo.similarity")),
            json_string_value(json_object_get(labels, "zoo.layers_mapped")));
    print_warnings("loom submit", res);
    json_decref(res);
    return LOOM_EXIT_OK;
}
