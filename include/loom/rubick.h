/* loom rubick: reconfigurable jobs (Rubick, Zhang et al., MLSys 2025).
 *
 * A training job may declare what a scheduler may change about it: its
 * global batch stays fixed, but the number of GPUs (its data-parallel
 * degree), the execution plan (gradient accumulation, activation
 * recomputation, ZeRO stage and optimizer offload) and its CPUs and host
 * memory may move within declared ranges. A job that declares nothing is a
 * black box and runs as asked.
 *
 * Three pieces, all plain functions of their inputs:
 * - the spec: the job's "reconfig" object (job.submit, catalog entries),
 *   parsed with errors that name the field and what was expected;
 * - the performance model: a job's step time and memory per (plan,
 *   resources) from per-model numbers (parameters, FLOPs and activation
 *   bytes per sample: data the caller passes in, e.g. from loom's
 *   estimator) and a device description (peak FLOP/s, GPU memory, link and
 *   host bandwidths), with three coefficients fitted to a few measured
 *   steps;
 * - the policy: GPUs, CPUs, memory and a plan for every job, re-decided on
 *   events; a running job is reconfigured only when the time it gains pays
 *   for the checkpoint-restart, never runs below its guarantee (the
 *   throughput of the configuration it asked for) and never ends later than
 *   it would have at it.
 *
 * Depends on core and sched. docs/scheduling.md, "Rubick". */
#ifndef LOOM_RUBICK_H
#define LOOM_RUBICK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loom/core.h"
#include "loom/sched.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_RUBICK_ACCUM_MAX 64        /* gradient accumulation steps */
#define LOOM_RUBICK_BATCH_MAX (1 << 24) /* global batch, samples */
#define LOOM_RUBICK_GPUS_MAX  LOOM_SCHED_MAX_GPUS

/* An execution plan: data parallel over `gpus` GPUs of one node. */
typedef struct loom_rubick_plan {
    int gpus;       /* data-parallel degree, one GPU each */
    int accum;      /* gradient accumulation steps, >= 1 */
    bool recompute; /* activation recomputation */
    int zero;       /* ZeRO stage 0..3 */
    bool offload;   /* optimizer states and step on the host (ZeRO-Offload) */
} loom_rubick_plan_t;

/* A plan with its host resources. */
typedef struct loom_rubick_config {
    loom_rubick_plan_t plan;
    int64_t cpu_milli;
    int64_t mem_mib;
} loom_rubick_config_t;

/* One measured step of a job under a configuration: its time, and the
 * time its input loading took on the configuration's CPUs (0: not
 * measured), which a training loop sees as the wait for its next batch
 * plus the step when loading is the longer. */
typedef struct loom_rubick_sample {
    loom_rubick_config_t config;
    double step_s;
    double data_s;
} loom_rubick_sample_t;

#define LOOM_RUBICK_MEASURED_MAX 8 /* measured steps a spec carries */

/* What may change. Sets of allowed values are bit masks: accum bit k-1
 * allows k steps; recompute and offload bit 0 allows false, bit 1 true;
 * zero bit s allows stage s. */
typedef struct loom_rubick_spec {
    bool reconfigurable; /* false: a black box (nothing declared) */
    int64_t global_batch;
    int gpus_min, gpus_max;
    uint64_t accum_mask;
    uint8_t recompute_mask, zero_mask, offload_mask;
    int64_t cpu_min, cpu_max;     /* milli-CPU */
    int64_t mem_min, mem_max;     /* MiB */
    loom_rubick_plan_t asked;     /* the plan as submitted (gpus: from resources) */
    int64_t asked_cpu, asked_mem; /* milli-CPU, MiB as submitted (check_asked) */
    char model[32];               /* the model it trains (loom_rubick_model_find); "": not named */
    /* its first measured steps ("measured"): the policy fits the model's
     * coefficients to them (loom_rubick_fit); none: {1, 1, 0, 1} */
    loom_rubick_sample_t measured[LOOM_RUBICK_MEASURED_MAX];
    size_t nmeasured;
} loom_rubick_spec_t;

/* Parses a "reconfig" object (docs/scheduling.md, "Reconfigurable jobs"):
 * {"global_batch", "gpus", "accumulation", "recompute", "zero", "offload",
 * "cpus", "memory", "plan", "model"}. `where` is its JSON pointer, for messages
 * ("WHERE/FIELD: found ..., expected ..."). NULL obj: a black box. */
int loom_rubick_spec_parse(const json_t *obj, const char *where, loom_rubick_spec_t *out,
                           loom_err_t *err);
/* Checks the resources the job asked for against its ranges and fills
 * spec->asked.gpus: gpus, cpus in milli-CPU, memory in MiB (0: not given). */
int loom_rubick_spec_check_asked(loom_rubick_spec_t *spec, int gpus, int64_t cpu_milli,
                                 int64_t mem_mib, const char *where, loom_err_t *err);
/* Is plan p allowed by spec (ranges, masks, the batch splits evenly)? */
bool loom_rubick_plan_allowed(const loom_rubick_spec_t *spec, const loom_rubick_plan_t *p);

/* ------------------------------------------------- performance model */

/* Per-model numbers, per sample of the global batch. */
typedef struct loom_rubick_model {
    const char *name;
    double params;           /* parameter count */
    double flops_per_sample; /* forward + backward */
    double act_bytes;        /* activations kept for the backward pass */
    double recompute_keep;   /* share of act_bytes kept under recomputation */
    double mbs_half;         /* micro-batch at which the GPU reaches half its efficiency */
    double mfu;              /* best fraction of peak FLOP/s the model reaches */
    double cpu_s_per_sample; /* host core-seconds to load and prepare one sample */
    double host_base_mib;    /* host memory of one worker */
} loom_rubick_model_t;

/* The zoo's models (resnet18, resnet50, vgg16, mobilenet_v2, vit, bert,
 * gpt2, lstm, dlrm): *n of them. */
const loom_rubick_model_t *loom_rubick_models(size_t *n);
/* One of them by name; NULL if there is none of that name. */
const loom_rubick_model_t *loom_rubick_model_find(const char *name);

/* A device, read from workloads/devices/NAME.json. */
typedef struct loom_rubick_device {
    double flops;            /* peak FLOP/s of one GPU (flops_half) */
    double mem_bytes;        /* memory of one GPU */
    double link_bw;          /* bytes/s per GPU between GPUs of a node (link_bandwidth) */
    double host_bw;          /* bytes/s per GPU between GPU and host (host_bandwidth) */
    double adam_s_per_param; /* host optimizer step, seconds per parameter per core */
} loom_rubick_device_t;

/* Reads flops_half (or flops_fp32), memory_bytes, link_bandwidth and
 * host_bandwidth from a device description: a file (a path, or a name
 * ending .json), or a bare name for a device loom ships ("h200"). */
int loom_rubick_device_load(const char *name_or_path, loom_rubick_device_t *out, loom_err_t *err);
/* The same from text; errors start with name. */
int loom_rubick_device_parse(const char *text, size_t len, const char *name,
                             loom_rubick_device_t *out, loom_err_t *err);

/* Coefficients fitted to measured steps: step = max(comp * compute + comm
 * * communication + fixed_s * accumulation steps (a cost per micro-batch),
 * data * input loading). Unfitted: {1, 1, 0, 1}; a data of 0 is taken as 1
 * (fits written before it existed). */
typedef struct loom_rubick_fit {
    double comp, comm, fixed_s;
    double data; /* factor on the model's input-loading time (cpu_s_per_sample) */
} loom_rubick_fit_t;

typedef struct loom_rubick_estimate {
    bool fits;                                /* GPU and host memory suffice, plan well formed */
    double step_s;                            /* one step of the global batch */
    double samples_per_s;                     /* 0 when it does not fit */
    double compute_s, comm_s, host_s, data_s; /* the terms */
    double gpu_mem_bytes;                     /* per GPU */
    double host_mem_mib;                      /* the whole job */
} loom_rubick_estimate_t;

void loom_rubick_predict(const loom_rubick_model_t *m, const loom_rubick_device_t *d,
                         const loom_rubick_fit_t *fit, int64_t global_batch,
                         const loom_rubick_config_t *c, loom_rubick_estimate_t *out);

/* Least squares of the measured step times on the model's terms (the fit's
 * three GPU coefficients, kept non-negative). Needs at least one sample;
 * with fewer than three, or samples that do not tell the terms apart, the
 * coefficients that cannot be told stay at {1, 1, 0} scaled to the data.
 * Where samples measured their input loading (data_s > 0): data is the
 * mean of measured over modelled loading, and a step that loading bound
 * (step within 2% of it) says nothing of the GPU terms and is left out of
 * their fit. */
int loom_rubick_fit(const loom_rubick_model_t *m, const loom_rubick_device_t *d,
                    int64_t global_batch, const loom_rubick_sample_t *s, size_t n,
                    loom_rubick_fit_t *out, loom_err_t *err);

/* ------------------------------------------------------------- policy */

typedef enum loom_rubick_mode {
    LOOM_RUBICK_FIXED = 0, /* black box: the asked configuration (FIFO with backfill) */
    LOOM_RUBICK_ELASTIC,   /* Pollux/Sia-like: GPUs scale, the plan stays, CPUs per GPU stay */
    LOOM_RUBICK_SYNERGY,   /* Synergy-like: the asked GPUs and plan, CPUs and memory move */
    LOOM_RUBICK_FULL       /* Rubick: plan, GPUs, CPUs and memory together */
} loom_rubick_mode_t;

#define LOOM_RUBICK_CPU_STEPS 8

/* The best configuration of a job for g GPUs and CPU step k (a grid from
 * its CPU minimum to maximum), under the policy's mode. */
typedef struct loom_rubick_choice {
    loom_rubick_config_t config;
    double samples_per_s; /* 0: none fits */
} loom_rubick_choice_t;

/* A job as the policy sees it. */
typedef struct loom_rubick_job {
    uint64_t id;
    const loom_rubick_spec_t *spec;
    const loom_rubick_model_t *model;
    loom_rubick_fit_t fit;
    double submit_s;
    double remaining; /* samples left */
    double guarantee; /* samples/s of the asked configuration */
    bool running;
    loom_rubick_config_t cur; /* running */
    loom_sched_alloc_t alloc; /* running */
    double lead;              /* samples done beyond guarantee x time since start */
    /* filled by loom_rubick_job_prepare */
    loom_rubick_choice_t table[LOOM_RUBICK_GPUS_MAX + 1][LOOM_RUBICK_CPU_STEPS];
} loom_rubick_job_t;

/* Rubick's parts, each of which may be switched on alone (the
 * decomposition of its gains, docs/scheduling.md "Rubick"). */
#define LOOM_RUBICK_PART_PLAN   1u /* the plan is chosen at admission */
#define LOOM_RUBICK_PART_CPU    2u /* CPUs and host memory are chosen at admission */
#define LOOM_RUBICK_PART_RECONF 4u /* GPUs chosen at admission, running jobs changed */
#define LOOM_RUBICK_PART_ALL    7u

typedef struct loom_rubick_opts {
    loom_rubick_mode_t mode;
    const loom_rubick_device_t *device;
    double reconf_cost_s; /* checkpoint + restart + warm-up of one reconfiguration */
    double min_gain;      /* a reconfiguration must save at least this share of the time left */
    /* LOOM_RUBICK_FULL only: the parts it uses, LOOM_RUBICK_PART_*; 0 is
     * all. Without RECONF a job starts on its asked GPUs and is never
     * changed; without PLAN it runs its asked plan; without CPU its asked
     * CPUs and memory per GPU (more memory only for a plan that needs it). */
    unsigned parts;
} loom_rubick_opts_t;

typedef struct loom_rubick_decision {
    uint64_t id;
    bool start; /* else: reconfigure a running job */
    loom_rubick_config_t config;
    loom_sched_alloc_t alloc;
    double samples_per_s;
} loom_rubick_decision_t;

/* Fills j->table and j->guarantee (the asked configuration's throughput)
 * from j->spec, j->model and j->fit. A black-box spec is run as asked
 * whatever the mode. LOOM_EINVAL when the asked configuration does not fit
 * the device (the job can never run). */
int loom_rubick_job_prepare(loom_rubick_job_t *j, const loom_rubick_opts_t *o, loom_err_t *err);

/* Decides over jobs[0..n) (running and pending; pending in arrival order)
 * on cluster c, which holds the running jobs' allocations. Writes at most
 * n decisions (starts and reconfigurations) into out, *nout of them; c is
 * left as it was. Guarantees: a start or reconfiguration never yields less
 * than the job's guarantee, and a running job is reconfigured only when it
 * still ends no later than at its guarantee from its start (pause
 * included) and, to grow, the time it saves exceeds the pause.
 * The caller applies the decisions together: first it frees every
 * reconfigured job's old allocation, then it takes the new ones. */
int loom_rubick_decide(const loom_sched_cluster_t *c, loom_rubick_job_t *jobs, size_t n,
                       const loom_rubick_opts_t *o, loom_rubick_decision_t *out, size_t *nout,
                       loom_err_t *err);

#ifdef __cplusplus
}
#endif
#endif
