/* loom estimate MODEL.onnx --batch N [--train --optimizer O] [--precision P]
 *                [--device NAME|FILE] [--top K] [--json]
 * A thin wrapper: libloom's estimator does the work (docs/estimate.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
            "  --json          the whole estimate as JSON on stdout\n");
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
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
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
        default: usage(stderr); return LOOM_EXIT_USAGE;
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
    if (loom_est_device_load(device, NULL, &dev, &err)) {
        fprintf(stderr, "loom estimate: %s\n", err.msg);
        return err.code == LOOM_ENOTFOUND || err.code == LOOM_EIO ? LOOM_EXIT_NOTFOUND
                                                                  : LOOM_EXIT_INPUT;
    }
    o.device = &dev;
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
