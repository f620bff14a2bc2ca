/* loom submit FILE: send a batch script or YAML job description to loomd
 * (job.submit). Every submission carries a submit_id (given, or a random one
 * made here), so a retry after a lost connection can never make a second
 * job. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "loom/estimate.h"
#include "loom/store.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: loom submit FILE [options]\n\n"
               "Submits FILE ('-' for stdin) as a job and prints its id.\n\n"
               "  --name NAME         job name (default: the file's base name)\n"
               "  --format F          batch or yaml (default: yaml for *.yaml/*.yml, else batch)\n"
               "  --cpus N            CPUs (default 1)\n"
               "  --mem SIZE          memory, e.g. 16GiB\n"
               "  --gpus N            whole GPUs\n"
               "  --gpu-share X       a share of one GPU: 0.25, or milli-GPU as 250m\n"
               "  --gpu-mem SIZE      GPU memory, e.g. 10GiB\n"
               "  --gpu-type T        GPU model, e.g. A100\n"
               "  --time DURATION     time limit, e.g. 1h30m or 01:30:00\n"
               "  --priority N        priority (higher first; default 0)\n"
               "  --label K=V         a label (repeatable)\n"
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
               "exit codes: 0 submitted, 1 refused or failed (also: the model cannot be\n"
               "estimated), 2 usage, 3 cannot connect, 5 FILE unreadable or not UTF-8.\n");
}

static int usage_error(const char *opt, const loom_err_t *err)
{
    fprintf(stderr, "loom submit: %s: %s\n", opt, err->msg);
    return LOOM_EXIT_USAGE;
}

/* "0.25" (a fraction of one GPU) or "250m" (milli-GPU). */
static int parse_share(const char *text, int64_t *milli, loom_err_t *err)
{
    size_t n = strlen(text);
    if (n > 1 && text[n - 1] == 'm') {
        char buf[32];
        snprintf(buf, sizeof buf, "%.*s", (int)(n - 1), text);
        return loom_parse_i64(buf, 1, 1000, milli, "milli-GPU", err);
    }
    char *end;
    double x = strtod(text, &end);
    if (end == text || *end || !(x > 0 && x <= 1))
        return loom_err_set(
            err, LOOM_EINVAL,
            "'%s': expected a fraction in (0, 1] such as 0.25, or milli-GPU as 250m", text);
    *milli = (int64_t)(x * 1000 + 0.5);
    if (*milli < 1)
        return loom_err_set(err, LOOM_EINVAL, "'%s': smaller than one milli-GPU", text);
    return LOOM_OK;
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

int loom_cmd_submit(int argc, char **argv)
{
    static const struct option opts[] = {
        {"name", required_argument, NULL, 'n'},
        {"format", required_argument, NULL, 'f'},
        {"cpus", required_argument, NULL, 'c'},
        {"mem", required_argument, NULL, 'm'},
        {"gpus", required_argument, NULL, 'g'},
        {"gpu-share", required_argument, NULL, 's'},
        {"gpu-mem", required_argument, NULL, 'M'},
        {"gpu-type", required_argument, NULL, 't'},
        {"time", required_argument, NULL, 'T'},
        {"priority", required_argument, NULL, 'p'},
        {"label", required_argument, NULL, 'l'},
        {"submit-id", required_argument, NULL, 'i'},
        {"model", required_argument, NULL, 'o'},
        {"batch", required_argument, NULL, 'b'},
        {"train", no_argument, NULL, 'r'},
        {"optimizer", required_argument, NULL, 'O'},
        {"precision", required_argument, NULL, 'P'},
        {"device", required_argument, NULL, 'd'},
        {"warm-start", no_argument, NULL, 'W'},
        {"warm-task", required_argument, NULL, 'K'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    json_t *params = json_object(), *res = json_object(), *labels = json_object();
    json_t *setup = json_object(); /* --train, --optimizer, ... of --model */
    const char *name = NULL, *format = NULL, *submit_id = NULL, *model = NULL;
    const char *warm_task = NULL; /* --warm-start [--warm-task]: cmd_zoo.c */
    bool warm = false;
    int64_t batch = 0;
    bool as_json = false;
    int rc = LOOM_EXIT_OK, c;
    loom_err_t err;
    while (rc == LOOM_EXIT_OK && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int64_t v;
        uint64_t size;
        switch (c) {
        case 'n': name = optarg; break;
        case 'f':
            if (strcmp(optarg, "batch") && strcmp(optarg, "yaml")) {
                fprintf(stderr, "loom submit: --format: expected batch or yaml, found '%s'\n",
                        optarg);
                rc = LOOM_EXIT_USAGE;
            }
            format = optarg;
            break;
        case 'c':
            if (loom_parse_i64(optarg, 1, LOOM_STORE_CPUS_MAX, &v, "CPUs", &err))
                rc = usage_error("--cpus", &err);
            else
                json_object_set_new(res, "cpus", json_integer(v));
            break;
        case 'g':
            if (loom_parse_i64(optarg, 0, LOOM_STORE_GPUS_MAX, &v, "GPUs", &err))
                rc = usage_error("--gpus", &err);
            else
                json_object_set_new(res, "gpus", json_integer(v));
            break;
        case 's':
            if (parse_share(optarg, &v, &err))
                rc = usage_error("--gpu-share", &err);
            else
                json_object_set_new(res, "gpu_share", json_integer(v));
            break;
        case 'm':
        case 'M':
            if (loom_parse_size(optarg, &size, &err) || size > (uint64_t)INT64_MAX)
                rc = usage_error(c == 'm' ? "--mem" : "--gpu-mem", &err);
            else
                json_object_set_new(res, c == 'm' ? "memory" : "gpu_memory",
                                    json_integer((json_int_t)size));
            break;
        case 't': json_object_set_new(res, "gpu_type", json_string(optarg)); break;
        case 'T': {
            int64_t ns;
            if (loom_parse_duration(optarg, &ns, &err))
                rc = usage_error("--time", &err);
            else
                json_object_set_new(
                    params, "time_limit",
                    json_integer(ns / LOOM_NS_PER_S + (ns % LOOM_NS_PER_S ? 1 : 0)));
            break;
        }
        case 'p':
            if (loom_parse_i64(optarg, LOOM_STORE_PRIORITY_MIN, LOOM_STORE_PRIORITY_MAX, &v,
                               "priority", &err))
                rc = usage_error("--priority", &err);
            else
                json_object_set_new(params, "priority", json_integer(v));
            break;
        case 'l': {
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg) {
                fprintf(stderr, "loom submit: --label: expected KEY=VALUE, found '%s'\n", optarg);
                rc = LOOM_EXIT_USAGE;
                break;
            }
            char key[128];
            snprintf(key, sizeof key, "%.*s", (int)(eq - optarg), optarg);
            json_object_set_new(labels, key, json_string(eq + 1));
            break;
        }
        case 'i': submit_id = optarg; break;
        case 'o': model = optarg; break;
        case 'W': warm = true; break;
        case 'K': warm_task = optarg; break;
        case 'b':
            if (loom_parse_i64(optarg, 1, 1 << 24, &batch, "batch", &err))
                rc = usage_error("--batch", &err);
            break;
        case 'r': json_object_set_new(setup, "train", json_true()); break;
        case 'O':
        case 'P': {
            loom_est_optimizer_t o;
            loom_est_precision_t p;
            if (c == 'O' ? loom_est_parse_optimizer(optarg, &o, &err)
                         : loom_est_parse_precision(optarg, &p, &err))
                rc = usage_error(c == 'O' ? "--optimizer" : "--precision", &err);
            else
                json_object_set_new(setup, c == 'O' ? "optimizer" : "precision",
                                    json_string(optarg));
            break;
        }
        case 'd': json_object_set_new(setup, "device", json_string(optarg)); break;
        case 'j': as_json = true; break;
        case 'h':
            usage(stdout);
            rc = -1;
            break;
        default:
            usage(stderr);
            rc = LOOM_EXIT_USAGE;
            break;
        }
    }
    if (rc == -1) {
        rc = LOOM_EXIT_OK;
        goto out;
    }
    if (rc)
        goto out;
    if (optind != argc - 1) {
        fprintf(stderr, "loom submit: expected exactly one FILE (see loom submit --help)\n");
        rc = LOOM_EXIT_USAGE;
        goto out;
    }
    if (!model && (batch || json_object_size(setup))) {
        fprintf(stderr, "loom submit: --batch, --train, --optimizer, --precision and --device "
                        "describe --model FILE, which is missing\n");
        rc = LOOM_EXIT_USAGE;
        goto out;
    }
    if (model) {
        json_t *ref = NULL;
        if ((rc = model_ref(model, batch, setup, &ref)))
            goto out;
        json_object_set_new(params, "model", ref);
    }
    const char *file = argv[optind];
    loom_buf_t script = LOOM_BUF_INIT;
    if (strcmp(file, "-") == 0) {
        char chunk[65536];
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
            loom_buf_append(&script, chunk, n);
        if (!script.data)
            loom_buf_append_str(&script, "");
    } else if (loom_buf_read_file(&script, file, &err)) {
        fprintf(stderr, "loom submit: %s\n", err.msg);
        rc = LOOM_EXIT_INPUT;
        goto out;
    }
    if (!loom_utf8_valid(script.data, script.len) || strlen(script.data) != script.len) {
        fprintf(stderr, "loom submit: %s: not UTF-8 text (a job script must be text)\n", file);
        loom_buf_free(&script);
        rc = LOOM_EXIT_INPUT;
        goto out;
    }
    if (!format)
        format = ends_with(file, ".yaml") || ends_with(file, ".yml") ? "yaml" : "batch";
    char sid[40];
    if (!submit_id) {
        random_submit_id(sid);
        submit_id = sid;
    }
    json_object_set_new(params, "name",
                        json_string(name                     ? name
                                    : strcmp(file, "-") == 0 ? "stdin"
                                                             : base_name(file)));
    json_object_set_new(params, "format", json_string(format));
    if (warm && (rc = loom_cli_zoo_warm_start(params, labels, warm_task, &script))) {
        loom_buf_free(&script);
        goto out;
    }
    json_object_set_new(params, "script", json_stringn(script.data, script.len));
    loom_buf_free(&script);
    json_object_set(params, "resources", res);
    if (json_object_size(labels))
        json_object_set(params, "labels", labels);
    json_object_set_new(params, "submit_id", json_string(submit_id));

    loom_cli_conn_t conn;
    if ((rc = loom_cli_connect("submit", &conn)))
        goto out;
    json_t *result = NULL;
    rc = loom_cli_call("submit", &conn, "job.submit", params, LOOM_RPC_CALL_RETRY, &result);
    loom_cli_disconnect(&conn);
    if (rc)
        goto out;
    json_int_t id = json_integer_value(json_object_get(result, "id"));
    if (as_json)
        loom_cli_print_json(result);
    else if (json_is_true(json_object_get(result, "created")))
        printf("Submitted job %lld\n", (long long)id);
    else
        printf("Job %lld already exists for submit_id '%s' (%s); not submitted again\n",
               (long long)id, submit_id, json_string_value(json_object_get(result, "state")));
    json_decref(result);
out:
    json_decref(params);
    json_decref(res);
    json_decref(labels);
    json_decref(setup);
    return rc;
}
