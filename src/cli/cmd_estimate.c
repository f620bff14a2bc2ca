/* loom estimate MODEL.onnx --batch N [--train --optimizer O] [--precision P]
 *                [--device NAME|FILE] [--top K] [--json]
 * loom estimate calibrate --out DEVICE.json [--from NAME|FILE] [--name N] [--full]
 * A thin wrapper: libloom's estimator does the work (docs/estimate.md); the
 * calibration runs bench/estimate_calibrate.py (PyTorch microbenchmarks). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "loom/estimate.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: loom estimate MODEL.onnx --batch N [--train] [--optimizer sgd|momentum|adam]\n"
            "                     [--precision fp32|fp16|bf16|mixed] [--device NAME|FILE]\n"
            "                     [--top K] [--json]\n\n"
            "Predicts parameters, FLOPs, peak memory and step time of a model before it runs.\n"
            "  --batch N       batch size (dimension 0 of every graph input)\n"
            "  --train         a training step (default: inference)\n"
            "  --optimizer O   optimizer state for --train (default adam)\n"
            "  --precision P   default fp32; mixed = autocast fp16 with fp32 master weights\n"
            "  --device D      a device name under $LOOM_DEVICE_DIR (default\n"
            "                  loom's share/loom/devices) or a JSON file; default h200\n"
            "  --top K         operators listed (default 10)\n"
            "  --json          the whole estimate as JSON on stdout\n"
            "A CPU device file calibrated on another host (or recording none) is warned about.\n"
            "loom estimate calibrate --out DEVICE.json: a device file for this host\n"
            "(loom estimate calibrate --help); loom estimate host: this host as one records it.\n");
}

static void usage_calibrate(FILE *f)
{
    fprintf(f,
            "usage: loom estimate calibrate --out DEVICE.json [--from NAME|FILE] [--name NAME]\n"
            "                               [--full]\n\n"
            "Builds a device description of this host's CPU (one thread) for loom estimate\n"
            "and loomd --estimate-device: PyTorch microbenchmarks of every operator class,\n"
            "the optimizers, the fixed step cost and the page fault cost (a few minutes;\n"
            "--full: more shapes, longer). Needs /usr/bin/python3 with torch.\n"
            "  --out FILE    the device file to write (whole or not at all)\n"
            "  --from D      template for what is not measured here: roofline figures,\n"
            "                context_bytes, in_step_factor, malloc_tunables (default cpu-local)\n"
            "  --name NAME   the device's name (default: FILE's stem)\n"
            "  --full        every microbenchmark shape (bench/estimate.sh's calibration)\n"
            "Environment: LOOM_DEVICE_DIR (where --from names are looked up),\n"
            "LOOM_CALIBRATE_SCRIPT (the script; default bench/estimate_calibrate.py next to\n"
            "this loom's build directory, else share/loom/calibrate/ where make install\n"
            "put it, LOOM_DATA_DIR/calibrate/ when that is set), LOOM_PYTHON.\n");
}

/* Where device names are looked up: $LOOM_DEVICE_DIR, else loom's shipped
 * data (loom_data_path: never the working directory); NULL when neither
 * exists (loom_est_device_load then says why). */
static const char *device_dir(void)
{
    static char data[4096];
    const char *dir = getenv("LOOM_DEVICE_DIR");
    if (dir && *dir)
        return dir;
    loom_err_t err;
    return loom_data_path("devices", data, sizeof data, &err) == LOOM_OK ? data : NULL;
}

/* The file a device name or path stands for (as loom_est_device_load reads it). */
static void device_file(const char *name_or_path, char *buf, size_t len)
{
    size_t n = strlen(name_or_path);
    if (strchr(name_or_path, '/') || (n > 5 && strcmp(name_or_path + n - 5, ".json") == 0))
        snprintf(buf, len, "%s", name_or_path);
    else if (device_dir())
        snprintf(buf, len, "%s/%s.json", device_dir(), name_or_path);
    else
        snprintf(buf, len, "%s.json", name_or_path);
}

/* bench/estimate_calibrate.py: $LOOM_CALIBRATE_SCRIPT, else next to the
 * build directory this loom runs from (BUILD/../bench), else the copy make
 * install ships in loom's data (share/loom/calibrate, loom_data_path);
 * never from the working directory. */
static int calibrate_script(char *buf, size_t len)
{
    const char *env = getenv("LOOM_CALIBRATE_SCRIPT");
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return access(buf, R_OK) == 0 ? 0 : -1;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(buf, len, "%s/../bench/estimate_calibrate.py", exe);
            if (access(buf, R_OK) == 0)
                return 0;
        }
    }
    char data[4096];
    loom_err_t err;
    if (loom_data_path("calibrate", data, sizeof data, &err) != LOOM_OK) {
        snprintf(buf, len, "estimate_calibrate.py (%s)", err.msg);
        return -1;
    }
    char found[PATH_MAX];
    snprintf(found, sizeof found, "%s/estimate_calibrate.py", data);
    snprintf(buf, len, "%s", realpath(found, data) ? data : found); /* bin/../share: share */
    return access(buf, R_OK) == 0 ? 0 : -1;
}

/* This host as a device file's "host" object, compact JSON; NULL on ENOMEM. */
static char *host_json(void)
{
    loom_est_host_t h;
    loom_est_host_probe(NULL, NULL, &h);
    json_t *j = loom_est_host_to_json(&h);
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(j);
    return s;
}

static int run_calibration(const char *script, const char *out, const char *from, const char *name,
                           bool full)
{
    const char *py = getenv("LOOM_PYTHON");
    const char *argv[14];
    char *host = host_json();
    if (!host) {
        fprintf(stderr, "loom estimate calibrate: out of memory\n");
        return LOOM_EXIT_FAILURE;
    }
    int k = 0;
    argv[k++] = py && *py ? py : "/usr/bin/python3";
    argv[k++] = script;
    argv[k++] = out;
    argv[k++] = "--from";
    argv[k++] = from;
    if (name) {
        argv[k++] = "--name";
        argv[k++] = name;
    }
    if (!full)
        argv[k++] = "--quick";
    argv[k++] = "--host";
    argv[k++] = host;
    argv[k] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "loom estimate calibrate: fork: %s\n", strerror(errno));
        free(host);
        return LOOM_EXIT_FAILURE;
    }
    if (pid == 0) { /* one thread everywhere: the estimates model a single-threaded step */
        setenv("OPENBLAS_NUM_THREADS", "1", 1);
        setenv("OMP_NUM_THREADS", "1", 1);
        setenv("MKL_NUM_THREADS", "1", 1);
        execv(argv[0], (char *const *)argv);
        fprintf(stderr, "loom estimate calibrate: %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    free(host);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "loom estimate calibrate: %s %s failed (%s %d); %s not written\n", argv[0],
                script, WIFEXITED(st) ? "exit" : "signal",
                WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), out);
        return LOOM_EXIT_FAILURE;
    }
    return LOOM_EXIT_OK;
}

/* loom estimate calibrate: run the microbenchmarks, then check the file
 * they wrote loads as a device (what loomd --estimate-device FILE will do). */
static int cmd_calibrate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'},  {"from", required_argument, NULL, 'f'},
        {"name", required_argument, NULL, 'n'}, {"full", no_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
    };
    const char *out = NULL, *from = "cpu-local", *name = NULL;
    bool full = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'f': from = optarg; break;
        case 'n': name = optarg; break;
        case 'F': full = true; break;
        case 'h': usage_calibrate(stdout); return LOOM_EXIT_OK;
        default: return loom_cli_bad_option("estimate calibrate", c, argv[optind - 1]);
        }
    }
    if (!out || optind != argc) {
        fprintf(stderr, "loom estimate calibrate: %s\n",
                !out ? "--out DEVICE.json is required" : "unexpected argument");
        usage_calibrate(stderr);
        return LOOM_EXIT_USAGE;
    }
    loom_err_t err = {0};
    loom_est_device_t dev;
    char tmpl[4096], script[4096];
    device_file(from, tmpl, sizeof tmpl);
    if (loom_est_device_load(from, device_dir(), &dev, &err)) { /* a template that loads */
        fprintf(stderr, "loom estimate calibrate: --from: %s\n", err.msg);
        return err.code == LOOM_ENOTFOUND || err.code == LOOM_EIO ? LOOM_EXIT_NOTFOUND
                                                                  : LOOM_EXIT_INPUT;
    }
    if (calibrate_script(script, sizeof script)) {
        fprintf(stderr,
                "loom estimate calibrate: %s: not found (set LOOM_CALIBRATE_SCRIPT to "
                "bench/estimate_calibrate.py of loom's source tree, or install loom)\n",
                script);
        return LOOM_EXIT_NOTFOUND;
    }
    int rc = run_calibration(script, out, tmpl, name, full);
    if (rc)
        return rc;
    char outp[4096];
    snprintf(outp, sizeof outp, "%s%s", strchr(out, '/') ? "" : "./", out); /* a path, not a name */
    if (loom_est_device_load(outp, NULL, &dev, &err)) {
        fprintf(stderr, "loom estimate calibrate: the calibration wrote a bad file: %s\n", err.msg);
        return LOOM_EXIT_FAILURE;
    }
    printf("wrote %s (device '%s'): use loom estimate --device %s, loomd --estimate-device %s\n",
           out, dev.name, out, out);
    return LOOM_EXIT_OK;
}

/* A CPU device's step times hold on the host it was calibrated on: say so
 * when this is another one (issue 36: 43-49% off on another CPU). */
static void warn_other_host(const char *device, const loom_est_device_t *dev)
{
    if (dev->allocator != LOOM_EST_ALLOC_MALLOC)
        return; /* GPU devices: the data sheet's card, not this host */
    loom_est_host_t here;
    loom_est_host_probe(NULL, NULL, &here);
    char why[600];
    if (!dev->host.set)
        snprintf(why, sizeof why, "it records no host (written before loom recorded them)");
    else if (!loom_est_host_differs(&dev->host, &here, why, sizeof why))
        return;
    fprintf(stderr,
            "loom estimate: warning: device '%s' was not calibrated on this host: %s; its step "
            "times may be far off here (40-50%% on another CPU in one test). Calibrate this host "
            "(up to 20 minutes): loom estimate calibrate --full --out this-host.json, then "
            "--device this-host.json\n",
            device, why);
}

/* loom estimate host: this host as a device file records it. */
static int cmd_host(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: loom estimate host\n\nPrints this host as a CPU device file records it "
               "(\"host\": CPU model, vector\ninstruction sets, BLAS library, threads); loom "
               "estimate warns when a device's\nrecorded host differs from this one.\n");
        return LOOM_EXIT_OK;
    }
    if (argc > 1) {
        fprintf(stderr,
                "loom estimate host: unexpected argument '%s' (loom estimate host --help)\n",
                argv[1]);
        return LOOM_EXIT_USAGE;
    }
    char *s = host_json();
    if (!s) {
        fprintf(stderr, "loom estimate host: out of memory\n");
        return LOOM_EXIT_FAILURE;
    }
    printf("%s\n", s);
    free(s);
    return LOOM_EXIT_OK;
}

static const char *human(double v, char *buf, size_t len, const char *unit)
{
    const char *pre[] = {"", "K", "M", "G", "T", "P", "E"};
    int i = 0;
    while (v >= 1000 && i < 6) {
        v /= 1000;
        i++;
    }
    snprintf(buf, len, "%.2f %s%s", v, pre[i], unit);
    return buf;
}

static void print_table(const loom_est_result_t *r, const loom_est_options_t *o, const char *path,
                        int top)
{
    char a[32], b[32];
    printf("model      %s\n", path);
    printf("setup      batch %lld, %s, %s%s%s, device %s\n", (long long)r->batch,
           o->train ? "training" : "inference", loom_est_precision_name(o->precision),
           o->train ? ", optimizer " : "", o->train ? loom_est_optimizer_name(o->optimizer) : "",
           o->device ? o->device->name : "-");
    if (o->device && o->device->malloc_tunables[0])
        printf("runtime    GLIBC_TUNABLES=%s (the device's malloc_tunables: run with it)\n",
               o->device->malloc_tunables);
    printf("params     %llu (+%llu buffer elements)\n", (unsigned long long)r->params,
           (unsigned long long)r->buffers);
    printf("FLOPs      forward %s, backward %s\n\n", human(r->fwd_flops, a, sizeof a, "FLOP"),
           human(r->bwd_flops, b, sizeof b, "FLOP"));
    const loom_est_memory_t *m = &r->mem;
    struct {
        const char *name;
        uint64_t v;
    } rows[] = {{"weights", m->weights},
                {"gradients", m->gradients},
                {"optimizer state", m->optimizer_state},
                {"activations", m->activations},
                {"temporaries", m->temporaries},
                {"allocator slack", m->allocator_slack},
                {"CUDA context", m->context},
                {"total", m->total}};
    printf("%-18s %14s %8s\n", "memory at peak", "bytes", "");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char s[32];
        printf("%-18s %14llu %10s\n", rows[i].name, (unsigned long long)rows[i].v,
               loom_format_size(rows[i].v, s, sizeof s));
    }
    if (o->device) {
        printf("\nstep time  %.3f ms (forward %.3f, backward %.3f, optimizer %.3f, fixed %.3f)\n",
               r->step_time_s * 1e3, r->fwd_time_s * 1e3, r->bwd_time_s * 1e3, r->opt_time_s * 1e3,
               r->fixed_time_s * 1e3);
        if (r->fresh_bytes)
            printf("           of which page faults %.3f ms (%llu fresh pages of the heap model)\n",
                   r->fault_time_s * 1e3, (unsigned long long)(r->fresh_bytes / 4096));
    }
    /* top operators by time (or FLOPs without a device) */
    size_t n = r->nops, *idx = malloc((n ? n : 1) * sizeof *idx);
    if (!idx)
        return;
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    for (size_t i = 1; i < n; i++) { /* insertion sort: n is a few thousand at most */
        size_t v = idx[i], j = i;
        double kv = o->device ? r->ops[v].time_s : r->ops[v].fwd_flops;
        while (j > 0 &&
               (o->device ? r->ops[idx[j - 1]].time_s : r->ops[idx[j - 1]].fwd_flops) < kv) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
    printf("\n%-40s %-18s %12s %12s %10s\n", "top operators", "op", "fwd FLOP", "bwd FLOP",
           "time ms");
    for (size_t i = 0; i < n && (int)i < top; i++) {
        const loom_est_op_t *op = &r->ops[idx[i]];
        printf("%-40.40s %-18.18s %12.3g %12.3g %10.3f\n", op->name, op->op_type, op->fwd_flops,
               op->bwd_flops, op->time_s * 1e3);
    }
    free(idx);
}

int loom_cmd_estimate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"batch", required_argument, NULL, 'b'},
        {"train", no_argument, NULL, 't'},
        {"optimizer", required_argument, NULL, 'o'},
        {"precision", required_argument, NULL, 'p'},
        {"device", required_argument, NULL, 'd'},
        {"top", required_argument, NULL, 'k'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    loom_est_options_t o = {.batch = 0, .optimizer = LOOM_EST_ADAM, .precision = LOOM_EST_FP32};
    const char *device = "h200";
    bool json = false;
    int64_t top = 10;
    loom_err_t err = {0};
    int c;
    if (argc > 1 && strcmp(argv[1], "calibrate") == 0)
        return cmd_calibrate(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "host") == 0)
        return cmd_host(argc - 1, argv + 1);
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        int rc = LOOM_OK;
        switch (c) {
        case 'b': rc = loom_parse_i64(optarg, 1, 1 << 24, &o.batch, "--batch", &err); break;
        case 't': o.train = true; break;
        case 'o': rc = loom_est_parse_optimizer(optarg, &o.optimizer, &err); break;
        case 'p': rc = loom_est_parse_precision(optarg, &o.precision, &err); break;
        case 'd': device = optarg; break;
        case 'k': rc = loom_parse_i64(optarg, 0, 100000, &top, "--top", &err); break;
        case 'j': json = true; break;
        case 'h': usage(stdout); return LOOM_EXIT_OK;
        default: return loom_cli_bad_option("estimate", c, argv[optind - 1]);
        }
        if (rc) {
            fprintf(stderr, "loom estimate: %s\n", err.msg);
            return LOOM_EXIT_USAGE;
        }
    }
    if (optind != argc - 1 || o.batch <= 0) {
        fprintf(stderr, "loom estimate: %s\n",
                optind != argc - 1 ? "expected one MODEL.onnx" : "--batch N is required");
        usage(stderr);
        return LOOM_EXIT_USAGE;
    }
    const char *path = argv[optind];
    loom_est_device_t dev;
    if (loom_est_device_load(device, device_dir(), &dev, &err)) {
        fprintf(stderr, "loom estimate: %s\n", err.msg);
        return err.code == LOOM_ENOTFOUND || err.code == LOOM_EIO ? LOOM_EXIT_NOTFOUND
                                                                  : LOOM_EXIT_INPUT;
    }
    o.device = &dev;
    warn_other_host(device, &dev);
    loom_est_model_t *m = NULL;
    if (loom_est_model_load(path, &m, &err)) {
        fprintf(stderr, "loom estimate: %s\n", err.msg);
        return err.code == LOOM_ENOTFOUND ? LOOM_EXIT_NOTFOUND
               : err.code == LOOM_EINVAL  ? LOOM_EXIT_INPUT
                                          : LOOM_EXIT_FAILURE;
    }
    loom_est_result_t r;
    int rc = loom_est_run(m, &o, &r, &err);
    if (rc) {
        fprintf(stderr, "loom estimate: %s\n", err.msg);
        loom_est_model_free(m);
        return rc == LOOM_EINVAL ? LOOM_EXIT_INPUT : LOOM_EXIT_FAILURE;
    }
    if (json) {
        json_t *j = loom_est_result_json(&r, &o);
        json_object_set_new(j, "model", json_string(path));
        loom_cli_print_json(j); /* reals in their shortest form */
        json_decref(j);
    } else {
        print_table(&r, &o, path, (int)top);
    }
    loom_est_result_free(&r);
    loom_est_model_free(m);
    return LOOM_EXIT_OK;
}
