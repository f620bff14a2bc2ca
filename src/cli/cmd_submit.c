/* loom submit FILE: send a batch script or YAML job description to loomd
 * (job.submit). The file's own directives (#SBATCH, #LOOM, a Kubernetes
 * Job's fields) are read by libloom's jobspec and the command line is
 * applied over them, as sbatch does; the job runs in the directory loom
 * submit ran in unless the file or -D says otherwise. Every submission
 * carries a submit_id (given, or a random one made here), so a retry after
 * a lost connection can never make a second job. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "loom/estimate.h"
#include "loom/jobspec.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: loom submit FILE [options]\n"
            "       loom submit --wrap COMMAND [options]\n\n"
            "Submits FILE ('-' for stdin) as a job and prints its id. FILE's #SBATCH and\n"
            "#LOOM directives, or a Kubernetes Job's fields, describe the job; options\n"
            "given here override them (docs/jobfiles.md). sbatch's options are taken here\n"
            "too (-J -c -n -t -o -e -D -a -d -A -G -H, --mem-per-cpu, --gres, ...).\n\n"
            "  --name NAME         job name (default: the file's, else its base name)\n"
            "  --format F          batch or yaml (default: yaml for *.yaml/*.yml, else batch)\n"
            "  --cpus N            CPUs in all (default 1; sbatch: -c per task, -n tasks)\n"
            "  --mem SIZE          memory, e.g. 16GiB\n"
            "  --gpus N            whole GPUs ([TYPE:]N)\n"
            "  --gpu-share X       a share of one GPU: 0.25, or milli-GPU as 250m\n"
            "  --gpu-mem SIZE      GPU memory, e.g. 10GiB\n"
            "  --gpu-type T        GPU model, e.g. A100\n"
            "  -t, --time T        time limit as sbatch's: a bare number is minutes; M:S,\n"
            "                      H:M:S, D-H, D-H:M, D-H:M:S, UNLIMITED; or 1h30m, 90s\n"
            "  --priority N        priority (higher first; default 0)\n"
            "  --label K=V         a label (repeatable)\n"
            "  -D, --chdir DIR     working directory (default: the current directory)\n"
            "  -o, --output PAT    output file (default loom-%%j.out in the working directory;\n"
            "                      %%j id, %%x name, %%u user, %%A %%a array, %%%% a %%)\n"
            "  -e, --error PAT     error file (default: merged into the output)\n"
            "  --export LIST       the job's environment, as sbatch: ALL (default: this\n"
            "                      shell's, up to 256 variables / 64 KiB; not LOOM_URL,\n"
            "                      LOOM_TOKEN), NONE, NAME,... (these), NAME=VALUE pairs\n"
            "  -a, --array R       an array of jobs: 0-9, 1,3,5-7, 0-15:4, %%N at most N at once\n"
            "  -d, --dependency D  afterok:ID[:ID...], afterany, afternotok, after, singleton\n"
            "  -b, --begin T       not before T (now+1hour, 2026-12-03T10:00:00, ...)\n"
            "  -H, --hold          pending until loom release\n"
            "  --nice[=N], --retries N  stored with the job; not acted on yet (a warning\n"
            "                      says so)\n"
            "  --wrap COMMAND      the job is COMMAND in a sh script (instead of FILE)\n"
            "  -A, --account A, --comment C  stored with the job\n"
            "  --strict            an unsupported #SBATCH directive is an error, not a warning\n"
            "  --submit-id ID      idempotency key: submitting the same ID again returns the\n"
            "                      first job (default: a random key per invocation)\n"
            "  --model FILE        the job's model (ONNX): without --gpu-mem, loomd requests\n"
            "                      its estimated GPU memory plus a safety margin\n"
            "  --batch N           batch size per GPU of --model (required with it)\n"
            "  --train             estimate a training step (default: inference)\n"
            "  --optimizer O       sgd, momentum or adam (default adam)\n"
            "  --precision P       fp32, fp16, bf16 or mixed (default fp32)\n"
            "  --device D          estimate for device D, a name or a device file\n"
            "                      (default: loomd's --estimate-device)\n"
            "  --warm-start        start from the most similar trained model of loomd's zoo\n"
            "                      (zoo.warm on --model): exports LOOM_WARM_START=PATH in the\n"
            "                      script and records the parent in labels zoo.* (docs/zoo.md)\n"
            "  --warm-task TASK    match only stored models of TASK\n"
            "  --json              print the job.submit result as JSON\n"
            "  -h, --help          this help\n\n"
            "A request no node can ever hold is refused, naming the resource; --hold\n"
            "keeps it (for a cluster that will grow).\n\n"
            "exit codes: 0 submitted, 1 refused or failed (also: the model cannot be\n"
            "estimated), 2 usage, 3 cannot connect, 5 FILE unreadable, not UTF-8, or its\n"
            "directives malformed.\n");
}

static int usage_error(const char *opt, const loom_err_t *err)
{
    fprintf(stderr, "loom submit: %s: %s\n", opt, err->msg);
    return LOOM_EXIT_USAGE;
}

static void random_submit_id(char out[40])
{
    unsigned char r[16];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        int64_t t = loom_time_real_ns();
        memcpy(r, &t, sizeof t);
        memset(r + 8, 0, 8);
    }
    strcpy(out, "cli-");
    for (int i = 0; i < 16; i++)
        sprintf(out + 4 + 2 * i, "%02x", r[i]);
}

/* --model FILE and its setup as job.submit's "model" object; the paths
 * made absolute, since loomd resolves them, not this directory. */
static int model_ref(const char *file, int64_t batch, json_t *setup, json_t **out)
{
    char abs[PATH_MAX];
    if (!realpath(file, abs)) {
        fprintf(stderr, "loom submit: --model %s: cannot resolve the path: %s\n", file,
                strerror(errno));
        return LOOM_EXIT_INPUT;
    }
    if (batch <= 0) {
        fprintf(stderr, "loom submit: --model needs --batch N (the batch size per GPU)\n");
        return LOOM_EXIT_USAGE;
    }
    const char *dev = json_string_value(json_object_get(setup, "device"));
    char dabs[PATH_MAX];
    if (dev && strchr(dev, '/')) {
        if (!realpath(dev, dabs)) {
            fprintf(stderr, "loom submit: --device %s: cannot resolve the path: %s\n", dev,
                    strerror(errno));
            return LOOM_EXIT_INPUT;
        }
        json_object_set_new(setup, "device", json_string(dabs));
    }
    *out = json_deep_copy(setup);
    json_object_set_new(*out, "path", json_string(abs));
    json_object_set_new(*out, "batch", json_integer(batch));
    return LOOM_EXIT_OK;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Options handed to the job spec (loom_jobspec_set, loom's dialect), in
 * the order given, after the file's own directives. */
#define FWD         1000
#define SB_PARSABLE 1001

typedef struct submit_args {
    const char *cmd; /* "submit", or "sbatch" (loom_cli_submit) */
    bool sbatch;     /* options end at the script; none reads stdin */
    const char *format, *submit_id, *model, *file;
    const char *wrap;      /* --wrap COMMAND: the script is "#!/bin/sh\nCOMMAND\n" */
    const char *warm_task; /* --warm-start [--warm-task]: cmd_zoo.c */
    int64_t batch;
    bool as_json, strict, warm;
    bool parsable, wait, quiet; /* sbatch's --parsable, --wait, --quiet */
    char sid[40];               /* the random submit_id made when none was given */
    json_t *setup;              /* --train, --optimizer, ... of --model */
    json_t *cli;                /* [[option, value or null], ...] */
} submit_args_t;

static const struct option opts[] = {
    {"format", required_argument, NULL, 'f'},
    {"submit-id", required_argument, NULL, 'i'},
    {"model", required_argument, NULL, 'm'},
    {"batch", required_argument, NULL, 'B'},
    {"train", no_argument, NULL, 'r'},
    {"optimizer", required_argument, NULL, 'O'},
    {"precision", required_argument, NULL, 'P'},
    {"device", required_argument, NULL, 'V'},
    {"warm-start", no_argument, NULL, 'Y'},
    {"warm-task", required_argument, NULL, 'K'},
    {"json", no_argument, NULL, 'j'},
    {"strict", no_argument, NULL, 's'},
    {"wrap", required_argument, NULL, 'w'},
    {"help", no_argument, NULL, 'h'},
    {"name", required_argument, NULL, FWD},
    {"job-name", required_argument, NULL, FWD},
    {"cpus", required_argument, NULL, FWD},
    {"cpus-per-task", required_argument, NULL, FWD},
    {"ntasks", required_argument, NULL, FWD},
    {"ntasks-per-node", required_argument, NULL, FWD},
    {"nodes", required_argument, NULL, FWD},
    {"cpus-per-gpu", required_argument, NULL, FWD},
    {"mem", required_argument, NULL, FWD},
    {"mem-per-cpu", required_argument, NULL, FWD},
    {"gres", required_argument, NULL, FWD},
    {"gpus", required_argument, NULL, FWD},
    {"gpus-per-node", required_argument, NULL, FWD},
    {"gpus-per-task", required_argument, NULL, FWD},
    {"gpu-share", required_argument, NULL, FWD},
    {"gpu-mem", required_argument, NULL, FWD},
    {"gpu-type", required_argument, NULL, FWD},
    {"time", required_argument, NULL, FWD},
    {"priority", required_argument, NULL, FWD},
    {"label", required_argument, NULL, FWD},
    {"retries", required_argument, NULL, FWD},
    {"output", required_argument, NULL, FWD},
    {"error", required_argument, NULL, FWD},
    {"chdir", required_argument, NULL, FWD},
    {"export", required_argument, NULL, FWD},
    {"array", required_argument, NULL, FWD},
    {"dependency", required_argument, NULL, FWD},
    {"begin", required_argument, NULL, FWD},
    {"hold", no_argument, NULL, FWD},
    {"nice", optional_argument, NULL, FWD},
    {"account", required_argument, NULL, FWD},
    {"comment", required_argument, NULL, FWD},
    /* sbatch's own (loom sbatch only) */
    {"parsable", no_argument, NULL, SB_PARSABLE},
    {"wait", no_argument, NULL, 'W'},
    {"quiet", no_argument, NULL, 'Q'},
    {"partition", required_argument, NULL, 'p'},
    {NULL, 0, NULL, 0},
};

/* sbatch's short options, handed to the job spec as they are. */
#define SHORT_FWD "J:c:n:N:t:o:e:D:a:d:A:b:HG:"

/* Checks one forwarded option now (a usage error is exit 2 before any file
 * is read) and keeps it for after the file. */
static int forward(submit_args_t *a, const char *opt, const char *value)
{
    loom_jobspec_t scratch;
    loom_err_t err;
    loom_jobspec_init(&scratch);
    int rc = loom_jobspec_set(&scratch, LOOM_JOBSPEC_LOOM, opt, value, "command line", &err);
    loom_jobspec_free(&scratch);
    if (rc) {
        fprintf(stderr, "loom %s: %s\n", a->cmd, err.msg);
        return LOOM_EXIT_USAGE;
    }
    json_array_append_new(a->cli,
                          json_pack("[s, o]", opt, value ? json_string(value) : json_null()));
    return LOOM_EXIT_OK;
}

static int model_option(submit_args_t *a, int c, loom_err_t *err)
{
    loom_est_optimizer_t o;
    loom_est_precision_t p;
    switch (c) {
    case 'm': a->model = optarg; return LOOM_EXIT_OK;
    case 'B':
        return loom_parse_i64(optarg, 1, 1 << 24, &a->batch, "batch", err)
                   ? usage_error("--batch", err)
                   : LOOM_EXIT_OK;
    case 'r': json_object_set_new(a->setup, "train", json_true()); return LOOM_EXIT_OK;
    case 'V': json_object_set_new(a->setup, "device", json_string(optarg)); return LOOM_EXIT_OK;
    }
    if (c == 'O' ? loom_est_parse_optimizer(optarg, &o, err)
                 : loom_est_parse_precision(optarg, &p, err))
        return usage_error(c == 'O' ? "--optimizer" : "--precision", err);
    json_object_set_new(a->setup, c == 'O' ? "optimizer" : "precision", json_string(optarg));
    return LOOM_EXIT_OK;
}

/* sbatch's options that are not the job's: how to answer, and the
 * partition (loom has one; another name is ignored with a warning). */
static int sbatch_option(submit_args_t *a, int c, const char *value)
{
    if (c == SB_PARSABLE)
        a->parsable = true;
    else if (c == 'W')
        a->wait = true;
    else if (c == 'Q')
        a->quiet = true;
    else if (strcmp(value, LOOM_CLI_PARTITION) != 0)
        fprintf(stderr,
                "loom sbatch: warning: --partition %s: loom has one partition, '%s'; ignored\n",
                value, LOOM_CLI_PARTITION);
    return LOOM_EXIT_OK;
}

/* -1: --help was printed (loom sbatch: to be printed). */
static int parse_args(int argc, char **argv, submit_args_t *a)
{
    int rc = LOOM_EXIT_OK, c, idx;
    loom_err_t err;
    opterr = 0; /* errors are said here, as "loom submit: ..." */
    /* sbatch: options end at the script ('+'); what follows is the script's */
    const char *optstring = a->sbatch ? "+:hWQp:" SHORT_FWD : ":h" SHORT_FWD;
    while (rc == LOOM_EXIT_OK && (c = getopt_long(argc, argv, optstring, opts, &idx)) != -1) {
        char shortopt[3] = {'-', (char)c, 0};
        switch (c) {
        case FWD: rc = forward(a, opts[idx].name, optarg); break;
        case 'f':
            if (strcmp(optarg, "batch") && strcmp(optarg, "yaml")) {
                fprintf(stderr, "loom submit: --format: expected batch or yaml, found '%s'\n",
                        optarg);
                rc = LOOM_EXIT_USAGE;
            }
            a->format = optarg;
            break;
        case 'i': a->submit_id = optarg; break;
        case 'j': a->as_json = true; break;
        case 's': a->strict = true; break;
        case 'Y': a->warm = true; break;
        case 'K': a->warm_task = optarg; break;
        case 'm':
        case 'B':
        case 'r':
        case 'O':
        case 'P':
        case 'V': rc = model_option(a, c, &err); break;
        case 'w': a->wrap = optarg; break;
        case SB_PARSABLE:
        case 'W':
        case 'Q':
        case 'p':
            if (!a->sbatch)
                return loom_cli_bad_option(a->cmd, '?', argv[optind - 1]);
            rc = sbatch_option(a, c, optarg);
            break;
        case 'h':
            if (!a->sbatch)
                usage(stdout);
            return -1;
        case '?':
        case ':': return loom_cli_bad_option(a->cmd, c, argv[optind - 1]);
        default: rc = forward(a, shortopt, optarg); break;
        }
    }
    if (rc)
        return rc;
    if (a->sbatch && optind + (a->wrap ? 0 : 1) < argc) {
        fprintf(stderr, "loom sbatch: '%s': arguments to the script are not supported\n",
                argv[optind + (a->wrap ? 0 : 1)]);
        return LOOM_EXIT_USAGE;
    }
    if (a->sbatch && !a->wrap && optind == argc) {
        a->file = "-"; /* sbatch reads the script from stdin */
    } else if (optind != argc - (a->wrap ? 0 : 1)) {
        fprintf(stderr, a->wrap ? "loom submit: --wrap takes no FILE; try 'loom submit --help'\n"
                                : "loom submit: expected exactly one FILE; try 'loom submit "
                                  "--help'\n");
        return LOOM_EXIT_USAGE;
    } else {
        a->file = a->wrap ? "wrap" : argv[optind];
    }
    if (!a->model && (a->batch || json_object_size(a->setup))) {
        fprintf(stderr, "loom submit: --batch, --train, --optimizer, --precision and --device "
                        "describe --model FILE, which is missing\n");
        return LOOM_EXIT_USAGE;
    }
    return LOOM_EXIT_OK;
}

static int read_script(const char *cmd, const char *file, const char *wrap, loom_buf_t *script)
{
    loom_err_t err;
    if (wrap) {
        loom_buf_appendf(script, "#!/bin/sh\n%s\n", wrap);
    } else if (strcmp(file, "-") == 0) {
        char chunk[65536];
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
            loom_buf_append(script, chunk, n);
        if (!script->data)
            loom_buf_append_str(script, "");
    } else if (loom_buf_read_file(script, file, &err)) {
        fprintf(stderr, "loom %s: %s\n", cmd, err.msg);
        return LOOM_EXIT_INPUT;
    }
    if (!loom_utf8_valid(script->data, script->len) || strlen(script->data) != script->len) {
        fprintf(stderr, "loom %s: %s: not UTF-8 text (a job script must be text)\n", cmd, file);
        return LOOM_EXIT_INPUT;
    }
    return LOOM_EXIT_OK;
}

/* The working directory made absolute against the current one (as sbatch
 * reads -D), the current one when none was given. */
static int absolute_workdir(loom_jobspec_t *spec)
{
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) {
        fprintf(stderr, "loom submit: cannot read the current directory: %s\n", strerror(errno));
        return LOOM_EXIT_FAILURE;
    }
    if (spec->workdir && spec->workdir[0] == '/')
        return LOOM_EXIT_OK;
    loom_buf_t b = LOOM_BUF_INIT;
    loom_buf_appendf(&b, "%s%s%s", cwd, spec->workdir ? "/" : "",
                     spec->workdir ? spec->workdir : "");
    free(spec->workdir);
    spec->workdir = loom_buf_detach(&b);
    return LOOM_EXIT_OK;
}

/* The file's directives, then the command line, into job.submit params. */
static int job_params(const submit_args_t *a, const loom_buf_t *script, const char *format,
                      json_t *params)
{
    loom_jobspec_t spec;
    loom_err_t err;
    loom_jobspec_init(&spec);
    const char *shown = strcmp(a->file, "-") == 0 ? "stdin" : a->file;
    int rc = strcmp(format, "yaml") == 0
                 ? loom_jobspec_parse_k8s(&spec, script->data, script->len, shown, &err)
                 : loom_jobspec_parse_script(&spec, script->data, script->len, shown,
                                             a->strict ? LOOM_JOBSPEC_STRICT : 0, &err);
    if (rc) {
        fprintf(stderr, "loom %s: %s\n", a->cmd, err.msg);
        loom_jobspec_free(&spec);
        return LOOM_EXIT_INPUT;
    }
    size_t i;
    json_t *pair;
    json_array_foreach(a->cli, i, pair)
        loom_jobspec_set(&spec, LOOM_JOBSPEC_LOOM, json_string_value(json_array_get(pair, 0)),
                         json_string_value(json_array_get(pair, 1)), "command line", NULL);
    /* sbatch's --export (default ALL): the environment loom submit runs in
     * (a Kubernetes Job has its own env and takes nothing from here). */
    if (strcmp(format, "yaml") != 0)
        loom_jobspec_export_env(&spec, environ);
    rc = absolute_workdir(&spec);
    if (rc == LOOM_EXIT_OK && loom_jobspec_to_params(&spec, params, &err)) {
        fprintf(stderr, "loom %s: %s\n", a->cmd, err.msg);
        rc = LOOM_EXIT_USAGE;
    }
    json_t *w;
    json_array_foreach(spec.warnings, i, w)
        fprintf(stderr, "loom %s: warning: %s\n", a->cmd, json_string_value(w));
    loom_jobspec_free(&spec);
    if (!json_object_get(params, "name"))
        json_object_set_new(params, "name",
                            json_string(strcmp(a->file, "-") == 0 ? "stdin" : base_name(a->file)));
    return rc;
}

static void print_result(const submit_args_t *a, json_t *result)
{
    json_int_t id = json_integer_value(json_object_get(result, "id"));
    if (a->as_json)
        loom_cli_print_json(result);
    else if (json_is_true(json_object_get(result, "created")))
        printf("Submitted job %lld\n", (long long)id);
    else
        printf("Job %lld already exists for submit_id '%s' (%s); not submitted again\n",
               (long long)id, a->submit_id, json_string_value(json_object_get(result, "state")));
}

/* What loom submit and loom sbatch share: parse, read, submit. On success
 * *result is job.submit's result. */
static int submit(submit_args_t *a, int argc, char **argv, json_t **result)
{
    json_t *params = json_object();
    loom_buf_t script = LOOM_BUF_INIT;
    int rc = parse_args(argc, argv, a);
    if (rc)
        goto out;
    if (a->model) {
        json_t *ref = NULL;
        if ((rc = model_ref(a->model, a->batch, a->setup, &ref)))
            goto out;
        json_object_set_new(params, "model", ref);
    }
    if ((rc = read_script(a->cmd, a->file, a->wrap, &script)))
        goto out;
    const char *format = a->format                                                   ? a->format
                         : ends_with(a->file, ".yaml") || ends_with(a->file, ".yml") ? "yaml"
                                                                                     : "batch";
    if ((rc = job_params(a, &script, format, params)))
        goto out;
    if (!a->submit_id) {
        random_submit_id(a->sid);
        a->submit_id = a->sid;
    }
    json_object_set_new(params, "format", json_string(format));
    if (a->warm) {
        json_t *labels = json_object_get(params, "labels");
        if (!labels) {
            labels = json_object();
            json_object_set_new(params, "labels", labels);
        }
        if ((rc = loom_cli_zoo_warm_start(params, labels, a->warm_task, a->submit_id, &script)))
            goto out;
    }
    json_object_set_new(params, "script", json_stringn(script.data, script.len));
    json_object_set_new(params, "submit_id", json_string(a->submit_id));
    loom_cli_conn_t conn;
    if ((rc = loom_cli_connect(a->cmd, &conn)))
        goto out;
    rc = loom_cli_call(a->cmd, &conn, "job.submit", params, LOOM_RPC_CALL_RETRY, result);
    loom_cli_disconnect(&conn);
out:
    loom_buf_free(&script);
    json_decref(params);
    return rc;
}

int loom_cmd_submit(int argc, char **argv)
{
    submit_args_t a = {.cmd = "submit", .setup = json_object(), .cli = json_array()};
    json_t *result = NULL;
    int rc = submit(&a, argc, argv, &result);
    if (rc == LOOM_EXIT_OK)
        print_result(&a, result);
    json_decref(result);
    json_decref(a.setup);
    json_decref(a.cli);
    return rc < 0 ? LOOM_EXIT_OK : rc;
}

int loom_cli_sbatch_submit(int argc, char **argv, loom_cli_sbatch_t *out, json_t **result)
{
    submit_args_t a = {
        .cmd = "sbatch", .sbatch = true, .setup = json_object(), .cli = json_array()};
    int rc = submit(&a, argc, argv, result);
    out->parsable = a.parsable;
    out->wait = a.wait;
    out->quiet = a.quiet;
    json_decref(a.setup);
    json_decref(a.cli);
    return rc;
}
