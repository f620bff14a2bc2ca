/* The estimate as JSON, and the small name <-> enum helpers the CLI and
 * the scheduler share. */
#include <string.h>

#include "estimate/est.h"

static const char *prec_names[] = {"fp32", "fp16", "bf16", "mixed"};
static const char *opt_names[] = {"sgd", "momentum", "adam"};

const char *loom_est_precision_name(loom_est_precision_t p)
{
    return (unsigned)p < 4 ? prec_names[p] : "unknown";
}

const char *loom_est_optimizer_name(loom_est_optimizer_t o)
{
    return (unsigned)o < 3 ? opt_names[o] : "unknown";
}

int loom_est_parse_precision(const char *s, loom_est_precision_t *out, loom_err_t *err)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, prec_names[i]) == 0) {
            *out = (loom_est_precision_t)i;
            return LOOM_OK;
        }
    return loom_err_set(err, LOOM_EINVAL, "precision '%s': expected fp32, fp16, bf16 or mixed", s);
}

int loom_est_parse_optimizer(const char *s, loom_est_optimizer_t *out, loom_err_t *err)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(s, opt_names[i]) == 0) {
            *out = (loom_est_optimizer_t)i;
            return LOOM_OK;
        }
    return loom_err_set(err, LOOM_EINVAL, "optimizer '%s': expected sgd, momentum or adam", s);
}

json_t *loom_est_result_json(const loom_est_result_t *r, const loom_est_options_t *opt)
{
    const loom_est_memory_t *m = &r->mem;
    json_t *ops = json_array();
    for (size_t i = 0; i < r->nops; i++) {
        const loom_est_op_t *o = &r->ops[i];
        json_array_append_new(
            ops, json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:I, s:I, s:f}", "name", o->name, "op",
                           o->op_type, "class",
                           o->cls >= 0 ? loom_est_class_name((loom_est_class_t)o->cls) : "roofline",
                           "fwd_flops", o->fwd_flops, "bwd_flops", o->bwd_flops, "bytes", o->bytes,
                           "out_bytes", (json_int_t)o->out_bytes, "fresh_bytes",
                           (json_int_t)o->fresh_bytes, "time_s", o->time_s));
    }
    json_t *mem = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "weights", (json_int_t)m->weights,
        "gradients", (json_int_t)m->gradients, "optimizer_state", (json_int_t)m->optimizer_state,
        "activations", (json_int_t)m->activations, "temporaries", (json_int_t)m->temporaries,
        "allocator_slack", (json_int_t)m->allocator_slack, "context", (json_int_t)m->context,
        "peak_live", (json_int_t)m->peak_live, "peak_reserved", (json_int_t)m->peak_reserved,
        "total", (json_int_t)m->total);
    json_t *o = json_pack(
        "{s:I, s:b, s:s, s:s, s:s?, s:I, s:I, s:f, s:f, s:f, s:o}", "batch", (json_int_t)r->batch,
        "train", opt->train, "optimizer", loom_est_optimizer_name(opt->optimizer), "precision",
        loom_est_precision_name(opt->precision), "device", opt->device ? opt->device->name : NULL,
        "params", (json_int_t)r->params, "buffers", (json_int_t)r->buffers, "fwd_flops",
        r->fwd_flops, "bwd_flops", r->bwd_flops, "opt_flops", r->opt_flops, "memory", mem);
    json_object_set_new(o, "bytes",
                        json_pack("{s:f, s:f, s:f, s:f}", "forward", r->fwd_bytes, "backward",
                                  r->bwd_bytes, "optimizer", r->opt_bytes, "step",
                                  r->fwd_bytes + r->bwd_bytes + r->opt_bytes));
    if (opt->device)
        json_object_set_new(o, "time_s",
                            json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "forward", r->fwd_time_s,
                                      "backward", r->bwd_time_s, "optimizer", r->opt_time_s,
                                      "fixed", r->fixed_time_s, "page_faults", r->fault_time_s,
                                      "step", r->step_time_s));
    if (opt->device)
        json_object_set_new(o, "fresh_bytes", json_integer((json_int_t)r->fresh_bytes));
    if (opt->device && opt->device->malloc_tunables[0])
        json_object_set_new(o, "malloc_tunables", json_string(opt->device->malloc_tunables));
    json_object_set_new(o, "ops", ops);
    return o;
}
