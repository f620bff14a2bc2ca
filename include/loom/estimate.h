/* loom estimate: predict a deep-learning job's parameters, FLOPs, peak
 * memory and step time from its model graph (ONNX), before it runs.
 *
 *   loom_est_model_load()   ONNX file -> graph (own protobuf reader)
 *   loom_est_run()          graph + batch + training setup + device
 *                           -> shapes, FLOPs, memory timeline, roofline time
 *   loom_est_alloc_*()      the PyTorch CUDA caching-allocator model
 *   loom_est_device_load()  device description (JSON)
 *
 * docs/estimate.md documents every rule (FLOPs per operator, what is kept
 * for the backward pass, the allocator model and its sources).
 */
#ifndef LOOM_ESTIMATE_H
#define LOOM_ESTIMATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loom/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ model */

typedef struct loom_est_model loom_est_model_t;

/* Parses an ONNX ModelProto. Errors name the source, the field path
 * ("ModelProto.graph.node[3].attribute[0].t.dims") and the byte offset.
 * The graph is checked: every node input is defined, no tensor has two
 * producers, no cycles. Weight data is not copied (only small constants). */
int loom_est_model_parse(const void *data, size_t len, const char *name, loom_est_model_t **out,
                         loom_err_t *err);
/* The largest ONNX file read (protobuf's own limit for one message). */
#define LOOM_EST_MODEL_MAX ((size_t)2 << 30)
/* Reads the file (a private copy, never a mapping; a regular file of at most
 * LOOM_EST_MODEL_MAX bytes) and parses it. */
int loom_est_model_load(const char *path, loom_est_model_t **out, loom_err_t *err);
void loom_est_model_free(loom_est_model_t *m);
size_t loom_est_model_node_count(const loom_est_model_t *m);
int64_t loom_est_model_opset(const loom_est_model_t *m); /* default domain */

/* ------------------------------------------------------------------ graph
 * A parsed model's tensors and nodes, for the parts that read a model's
 * structure besides the estimator (the zoo's signature, matcher and warm
 * start). The estimator fills them; other parts only read them. */

#define LOOM_EST_MAX_RANK 8

/* ONNX TensorProto.DataType */
enum {
    LOOM_EST_T_UNDEF = 0,
    LOOM_EST_T_FLOAT = 1,
    LOOM_EST_T_UINT8 = 2,
    LOOM_EST_T_INT8 = 3,
    LOOM_EST_T_UINT16 = 4,
    LOOM_EST_T_INT16 = 5,
    LOOM_EST_T_INT32 = 6,
    LOOM_EST_T_INT64 = 7,
    LOOM_EST_T_STRING = 8,
    LOOM_EST_T_BOOL = 9,
    LOOM_EST_T_FLOAT16 = 10,
    LOOM_EST_T_DOUBLE = 11,
    LOOM_EST_T_UINT32 = 12,
    LOOM_EST_T_UINT64 = 13,
    LOOM_EST_T_COMPLEX64 = 14,
    LOOM_EST_T_COMPLEX128 = 15,
    LOOM_EST_T_BFLOAT16 = 16
};

typedef struct loom_est_tensor {
    char *name;
    int dtype;                       /* LOOM_EST_T_*, 0 unknown */
    int rank;                        /* -1 unknown */
    int64_t dims[LOOM_EST_MAX_RANK]; /* -1: symbolic / unknown */
    int producer;                    /* node index, -1 none */
    bool is_init, is_input, is_output;
    /* Values of small constants (initializers, Constant nodes, folded
     * shape arithmetic); ints for integer/bool types, reals for floats. */
    bool has_val;
    size_t nval;
    int64_t *ival;
    double *fval;
    /* An initializer's raw_data: its place in the bytes the model was
     * parsed from (raw_len 0: none, or stored elsewhere), so that a reader
     * that keeps those bytes (the zoo's warm start) can take its values. */
    size_t raw_off, raw_len;
    /* Declared shape of a graph input (before the batch override). */
    int decl_rank;
    int64_t decl_dims[LOOM_EST_MAX_RANK];
    /* Set by shape inference / costing. */
    bool inferred;
    bool requires_grad;
    int view_of; /* tensor whose storage this aliases, -1 */
} loom_est_tensor_t;

typedef struct loom_est_attr {
    char *name;
    int type; /* AttributeProto.AttributeType */
    int64_t i;
    double f;
    char *s;
    int64_t *ints;
    size_t nints;
    double *floats;
    size_t nfloats;
    loom_est_tensor_t *t; /* TENSOR attribute (Constant value) */
    bool has_i, has_f;
} loom_est_attr_t;

typedef struct loom_est_node {
    char *name, *op, *domain;
    int *in; /* tensor indices; -1 = omitted optional input */
    size_t nin;
    int *out;
    size_t nout;
    loom_est_attr_t *attrs;
    size_t nattrs;
    uint64_t offset; /* byte offset of the NodeProto in the file */
    bool folded;     /* every output is a known constant */
} loom_est_node_t;

struct loom_est_model {
    char *source;
    int64_t ir_version, opset;
    loom_est_tensor_t *t;
    size_t nt, capt;
    loom_est_node_t *n;
    size_t nn, capn;
    int *order;       /* topological order of nodes */
    loom_map_t names; /* tensor name -> its index (LOOM_MAP_STR) */
    int *graph_outputs;
    size_t nouts;
};

const loom_est_attr_t *loom_est_attr(const loom_est_node_t *n, const char *name);
int64_t loom_est_numel(const loom_est_tensor_t *t); /* -1 if unknown */
/* Infers every tensor's shape in topological order, folding constant shape
 * arithmetic. Errors name the node and operator. */
int loom_est_infer_shapes(loom_est_model_t *m, int64_t batch, loom_err_t *err);

/* ------------------------------------------------------------------ device */

typedef enum loom_est_alloc_kind {
    LOOM_EST_ALLOC_MALLOC = 0,      /* host heap: bytes as requested (CPU runs) */
    LOOM_EST_ALLOC_CUDA_CACHING = 1 /* PyTorch's CUDA caching allocator */
} loom_est_alloc_kind_t;

/* A curve of (x, y) points with increasing x, interpolated in log(x) and
 * clamped at the ends; n == 0: absent. */
typedef struct loom_est_curve {
    int n;
    double x[16], y[16];
} loom_est_curve_t;

/* The calibrated cost of one operator class in one direction:
 *   t = overhead_s + steps * step_s [+ strided_s]
 *       + flops / (peak * d^p / (d^p + half_dim^p)) + elems * elem_s(elems)
 * (docs/estimate.md, "Step time", defines flops, d, elems and steps per class). */
typedef struct loom_est_cost_fn {
    bool set;
    double overhead_s, step_s, strided_s;
    double peak, half_dim, power; /* peak 0: no FLOP term */
    loom_est_curve_t elem_s;
} loom_est_cost_fn_t;

/* Operator classes of the calibrated model. */
typedef enum loom_est_class {
    LOOM_EST_CL_CONV,      /* Conv, ConvTranspose with more than one input channel per group */
    LOOM_EST_CL_CONV1X1,   /* 1x1 stride-1 Conv at batch < 16: PyTorch's CPU GEMM path */
    LOOM_EST_CL_DWCONV,    /* depthwise Conv (one input channel per group), kernel up to 4 */
    LOOM_EST_CL_MATMUL,    /* Gemm, Linear, MatMul with a 2-D right operand */
    LOOM_EST_CL_BMM,       /* batched MatMul */
    LOOM_EST_CL_BN,        /* BatchNormalization */
    LOOM_EST_CL_LN,        /* LayerNormalization, fused LayerNorm */
    LOOM_EST_CL_SOFTMAX,   /* Softmax, LogSoftmax */
    LOOM_EST_CL_LOSS,      /* the training step's cross-entropy */
    LOOM_EST_CL_UNARY,     /* Relu, Clip, LeakyRelu, Neg, Abs, Not (and Dropout, below) */
    LOOM_EST_CL_BINARY,    /* Add, Sub, Mul, Div, Max, Min, Where, comparisons */
    LOOM_EST_CL_GELU,      /* Gelu, fused erf-GELU */
    LOOM_EST_CL_ACT,       /* Erf, Tanh, Sigmoid, Exp, Log, Sqrt, Pow, ... */
    LOOM_EST_CL_POOL,      /* MaxPool, AveragePool */
    LOOM_EST_CL_REDUCE,    /* GlobalAveragePool, GlobalMaxPool, Reduce* */
    LOOM_EST_CL_COPY,      /* Concat, Gather, Cast, Expand, copying Reshape/Transpose/Slice */
    LOOM_EST_CL_VIEW,      /* views: Reshape, Transpose, Slice, ... that do not copy */
    LOOM_EST_CL_EMBEDDING, /* Gather from a parameter */
    LOOM_EST_CL_LSTM,      /* LSTM (and GRU, below): the recurrence; the projection is MATMUL */
    LOOM_EST_CL_DROPOUT,   /* Dropout in training where the device has this class (a CPU:
                              Bernoulli noise drawn per element); else it is UNARY */
    LOOM_EST_CL_GRU,       /* GRU's recurrence where the device has this class; else LSTM */
    LOOM_EST_CL_DWCONV5,   /* depthwise Conv with a 5 or 6 kernel (else DWCONV) */
    LOOM_EST_CL_DWCONV7,   /* depthwise Conv with a kernel of 7 or more (else DWCONV5, DWCONV) */
    LOOM_EST_CL_N
} loom_est_class_t;

const char *loom_est_class_name(loom_est_class_t c);

/* The calibrated cost of an optimizer step: per parameter tensor
 * tensor_s + elements * elem_s(elements). */
typedef struct loom_est_opt_cost {
    bool set;
    double tensor_s;
    loom_est_curve_t elem_s;
} loom_est_opt_cost_t;

/* The glibc malloc settings a CPU runtime runs with (GLIBC_TUNABLES, the
 * device's "malloc_tunables"); the heap model follows them. */
typedef struct loom_est_malloc_cfg {
    uint64_t mmap_threshold; /* requests >= this get their own mapping (128 KiB) */
    uint64_t trim_threshold; /* top chunk >= this is given back on free (128 KiB) */
    uint64_t top_pad;        /* extra bytes per brk growth, kept on trim (128 KiB) */
    uint64_t mmap_max;       /* live mappings at most; 0: never map (65536) */
    bool fixed;              /* a tunable set: glibc's dynamic mmap threshold is off */
} loom_est_malloc_cfg_t;

/* glibc 2.36's defaults. */
void loom_est_malloc_cfg_default(loom_est_malloc_cfg_t *cfg);
/* Parses a GLIBC_TUNABLES string ("glibc.malloc.mmap_max=0:glibc.malloc.
 * trim_threshold=0x..."; names glibc.malloc.{mmap_threshold, trim_threshold,
 * top_pad, mmap_max}, values decimal or 0x hex) over the defaults. The
 * message names `where`, the tunable and what was expected. */
int loom_est_malloc_cfg_parse(const char *tunables, const char *where, loom_est_malloc_cfg_t *out,
                              loom_err_t *err);

/* The host a CPU device file was calibrated on (its "host" object; see
 * src/estimate/host.c): step times hold on that host and may be far off on
 * another. */
typedef struct loom_est_host {
    bool set;            /* the device file records one */
    char cpu_model[128]; /* /proc/cpuinfo's model name */
    char isa[256];       /* vector extensions, space-separated, in a fixed order */
    char blas[64];       /* libblas.so.3's provider: openblas-pthread, reference, ... */
    int threads;         /* the threads the calibration ran with */
} loom_est_host_t;

/* This host: cpuinfo and blas_lib NULL read /proc/cpuinfo and Debian's
 * libblas.so.3 (tests pass their own files). Never fails: what cannot be
 * read is "unknown". */
void loom_est_host_probe(const char *cpuinfo, const char *blas_lib, loom_est_host_t *out);
/* A device file's /host (absent: out->set false). */
int loom_est_host_from_json(const json_t *obj, const char *name, loom_est_host_t *out,
                            loom_err_t *err);
json_t *loom_est_host_to_json(const loom_est_host_t *h);
/* True when the step times of a device calibrated on dev may not hold here;
 * why says what differs (CPU model, instruction sets, BLAS). */
bool loom_est_host_differs(const loom_est_host_t *dev, const loom_est_host_t *here, char *why,
                           size_t len);

typedef struct loom_est_device {
    char name[64];
    char description[160];
    double flops_fp32;   /* dense matmul FLOP/s at fp32 (TF32 off) */
    double flops_half;   /* dense matmul FLOP/s at fp16/bf16 */
    double flops_vector; /* elementwise FLOP/s */
    double flops_conv;   /* convolution FLOP/s at fp32 (default flops_fp32) */
    /* Optional matrix-product rate by size: ncurve points (smallest of M, N,
     * K; FLOP/s at fp32), interpolated in log(size); replaces flops_fp32
     * for MatMul, Gemm and Linear (scaled by flops_half / flops_fp32 at
     * half precision). */
    int ncurve;
    double curve_dim[8], curve_flops[8];
    double mem_bandwidth;   /* bytes/s */
    double op_overhead_s;   /* per operator launch/dispatch cost */
    uint64_t memory_bytes;  /* capacity (0 = unknown) */
    uint64_t context_bytes; /* CUDA context + library handles */
    loom_est_alloc_kind_t allocator;
    /* The calibrated model (optional; without op_classes the roofline
     * above is used). cls[c][0] forward, cls[c][1] backward; a class left
     * out falls back to the roofline. */
    bool has_classes;
    bool calibrated; /* false: values from data sheets, not measured */
    loom_est_cost_fn_t cls[LOOM_EST_CL_N][2];
    loom_est_opt_cost_t opt[3]; /* by loom_est_optimizer_t */
    double step_overhead_s;     /* fixed cost of a training step */
    /* operator work terms (a class's FLOP and element terms, not its fixed
     * ones), loss and optimizer time inside a training step over the same
     * operators in isolation (1 = none; calibrated on whole steps of models
     * outside the zoo) */
    double in_step_factor;
    double page_fault_s; /* per fresh 4 KiB page (malloc devices) */
    /* "malloc_tunables": the GLIBC_TUNABLES the runtime is measured and run
     * with ("" = glibc's defaults) and what it sets */
    char malloc_tunables[256];
    loom_est_malloc_cfg_t malloc_cfg;
    loom_est_host_t host; /* where it was calibrated (CPU devices) */
} loom_est_device_t;

/* name_or_path: a file path (contains '/' or ends in .json) or a name looked
 * up as DIR/NAME.json in dir; dir NULL: $LOOM_DEVICE_DIR, else loom's shipped
 * devices (loom_data_path("devices")). */
int loom_est_device_load(const char *name_or_path, const char *dir, loom_est_device_t *out,
                         loom_err_t *err);
/* A device file's bytes as a client named it (at most LOOM_EST_DEVICE_MAX):
 * errors name the file and never quote it. */
#define LOOM_EST_DEVICE_MAX ((size_t)1 << 20)
int loom_est_device_parse(const void *data, size_t len, const char *name, loom_est_device_t *out,
                          loom_err_t *err);
int loom_est_device_from_json(const json_t *obj, const char *name, loom_est_device_t *out,
                              loom_err_t *err);

/* --------------------------------------------------------------- allocator */

/* PyTorch CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, 1.13):
 * requests round up to 512 B; <= 1 MiB come from a small pool of 2 MiB
 * segments; larger ones from a large pool: 20 MiB segments for requests
 * < 10 MiB, else the request rounded up to 2 MiB. Blocks are best-fit,
 * split, cached on free and merged with free neighbours; segments are never
 * returned (no empty_cache). LOOM_EST_ALLOC_MALLOC counts bytes as asked. */
typedef struct loom_est_alloc loom_est_alloc_t;

loom_est_alloc_t *loom_est_alloc_new(loom_est_alloc_kind_t kind);
void loom_est_alloc_free_all(loom_est_alloc_t *a);
/* Returns a handle (> 0) or 0 when out of memory (of this process). */
uint64_t loom_est_alloc_malloc(loom_est_alloc_t *a, uint64_t bytes);
void loom_est_alloc_release(loom_est_alloc_t *a, uint64_t handle);
uint64_t loom_est_alloc_allocated(const loom_est_alloc_t *a); /* rounded, live */
uint64_t loom_est_alloc_reserved(const loom_est_alloc_t *a);  /* segments */
uint64_t loom_est_alloc_peak_reserved(const loom_est_alloc_t *a);
uint64_t loom_est_alloc_peak_allocated(const loom_est_alloc_t *a);
uint64_t loom_est_alloc_round(uint64_t bytes);        /* 512-byte rounding */
uint64_t loom_est_alloc_segment_size(uint64_t bytes); /* segment for a cache miss */

/* --------------------------------------------------------------- heap model */

/* glibc's malloc (main arena) as far as fresh pages go: best-fit free
 * chunks, mmap above the dynamic mmap threshold, brk growth with top pad,
 * trimming of the top (src/estimate/heap.c has the rules and sources).
 * A CPU training step's page faults come from what it allocates fresh. */
typedef struct loom_est_heap loom_est_heap_t;

loom_est_heap_t *loom_est_heap_new(void); /* glibc's defaults */
/* cfg NULL or without `fixed`: glibc's defaults */
loom_est_heap_t *loom_est_heap_new_cfg(const loom_est_malloc_cfg_t *cfg);
void loom_est_heap_free_all(loom_est_heap_t *h);
/* Returns a handle (> 0), 0 when the model itself runs out of memory. */
uint64_t loom_est_heap_malloc(loom_est_heap_t *h, uint64_t bytes);
void loom_est_heap_release(loom_est_heap_t *h, uint64_t handle);
uint64_t loom_est_heap_fresh_bytes(const loom_est_heap_t *h); /* pages faulted so far, bytes */
uint64_t loom_est_heap_mmap_threshold(const loom_est_heap_t *h);
uint64_t loom_est_heap_size(const loom_est_heap_t *h); /* brk heap, bytes */
bool loom_est_heap_failed(const loom_est_heap_t *h);

/* Evaluates a calibrated cost function (exposed for tests and tools). */
double loom_est_cost_eval(const loom_est_cost_fn_t *f, double flops, double d, double elems,
                          double steps, bool strided);
double loom_est_curve_eval(const loom_est_curve_t *c, double x);

/* ---------------------------------------------------------------- estimate */

typedef enum loom_est_precision {
    LOOM_EST_FP32 = 0,
    LOOM_EST_FP16 = 1,
    LOOM_EST_BF16 = 2,
    LOOM_EST_MIXED = 3 /* torch.autocast fp16 with fp32 master weights */
} loom_est_precision_t;

typedef enum loom_est_optimizer {
    LOOM_EST_SGD = 0,
    LOOM_EST_MOMENTUM = 1,
    LOOM_EST_ADAM = 2
} loom_est_optimizer_t;

typedef struct loom_est_options {
    int64_t batch; /* > 0: overrides dim 0 of every graph input */
    bool train;
    loom_est_optimizer_t optimizer;
    loom_est_precision_t precision;
    const loom_est_device_t *device; /* NULL: no time estimate */
} loom_est_options_t;

typedef struct loom_est_op {
    const char *name; /* node name (owned by the model) */
    const char *op_type;
    double fwd_flops, bwd_flops;
    double bytes;         /* bytes read + written, forward */
    double min_dim;       /* smallest of M, N, K of a matrix product, else 0 */
    double time_s;        /* forward + backward time */
    int cls;              /* loom_est_class_t of the calibrated model, -1 none */
    uint64_t fresh_bytes; /* fresh pages its allocations fault in, bytes */
    uint64_t out_bytes;   /* outputs allocated (0 for views) */
} loom_est_op_t;

/* Memory categories at the moment of the peak (bytes). */
typedef struct loom_est_memory {
    uint64_t weights, gradients, optimizer_state, activations, temporaries;
    uint64_t allocator_slack; /* reserved - live at the peak */
    uint64_t context;
    uint64_t peak_live;     /* sum of live tensors at the peak */
    uint64_t peak_reserved; /* what the allocator holds at the peak */
    uint64_t total;         /* peak_reserved + context */
} loom_est_memory_t;

typedef struct loom_est_result {
    int64_t batch;
    uint64_t params;  /* trainable elements */
    uint64_t buffers; /* non-trainable initializer elements */
    double fwd_flops, bwd_flops, opt_flops;
    /* Bytes read and written to memory (the traffic the step time charges):
     * forward, backward, optimizer update. Device-independent. */
    double fwd_bytes, bwd_bytes, opt_bytes;
    loom_est_memory_t mem;
    double fwd_time_s, bwd_time_s, opt_time_s, step_time_s;
    double fixed_time_s;  /* the step's fixed cost (calibrated devices, training) */
    double fault_time_s;  /* of the above, fresh pages (malloc devices) */
    uint64_t fresh_bytes; /* fresh pages per step, bytes (malloc devices) */
    size_t nops;
    loom_est_op_t *ops; /* compute nodes in topological order */
} loom_est_result_t;

/* Infers shapes (kept in m for loom_est_tensor_shape), then costs. */
int loom_est_run(loom_est_model_t *m, const loom_est_options_t *opt, loom_est_result_t *out,
                 loom_err_t *err);
void loom_est_result_free(loom_est_result_t *r);
/* The result as JSON (caller decrefs). */
json_t *loom_est_result_json(const loom_est_result_t *r, const loom_est_options_t *opt);

/* Shape of a tensor after loom_est_run's inference, for tests and tools.
 * Returns the rank, or -1 if the tensor is unknown. dims must hold 8. */
int loom_est_tensor_shape(const loom_est_model_t *m, const char *tensor, int64_t dims[8]);

int loom_est_parse_precision(const char *s, loom_est_precision_t *out, loom_err_t *err);
int loom_est_parse_optimizer(const char *s, loom_est_optimizer_t *out, loom_err_t *err);
const char *loom_est_precision_name(loom_est_precision_t p);
const char *loom_est_optimizer_name(loom_est_optimizer_t o);

/* ------------------------------------------ GPU memory requests (request.c)
 *
 * What loomd does with a job that names a model: estimate it, add a safety
 * margin, and ask the scheduler for that much GPU memory. Estimates are
 * cached per (model file, its identity and times, batch, training setup,
 * device file), since the same model is submitted many times. */

/* request = total x (1 + fraction) + extra_bytes, rounded up to whole MiB
 * (docs/estimate.md, "Scheduler integration", says why 10% + 256 MiB). */
typedef struct loom_est_margin {
    double fraction;      /* 0 .. 10 */
    uint64_t extra_bytes; /* a fixed allowance */
} loom_est_margin_t;

#define LOOM_EST_MARGIN_FRACTION 0.10
#define LOOM_EST_MARGIN_EXTRA    ((uint64_t)256 << 20)

/* "10%+256MiB", "15%", "512MiB", "0"; the error names the text. */
int loom_est_margin_parse(const char *text, loom_est_margin_t *out, loom_err_t *err);
/* The request for an estimated total: total x (1 + fraction) + extra, rounded
 * up to whole MiB (saturates at the largest whole MiB in 64 bits). */
uint64_t loom_est_margin_apply(const loom_est_margin_t *m, uint64_t total_bytes);

/* A job's model reference, as job.submit's "model" object gives it. */
typedef struct loom_est_ref {
    const char *path;               /* absolute path of the ONNX file */
    int64_t batch;                  /* 1 .. 2^24, per GPU */
    bool train;                     /* default false (inference), as loom estimate */
    loom_est_optimizer_t optimizer; /* default adam */
    loom_est_precision_t precision; /* default fp32 */
    const char *device; /* a device name or an absolute path to a device file; NULL: default */
} loom_est_ref_t;

/* Reads {"path", "batch", "train", "optimizer", "precision", "device"}.
 * Messages name the member as "model.batch: ..."; strings point into obj. */
int loom_est_ref_from_json(const json_t *obj, loom_est_ref_t *out, loom_err_t *err);
/* The reference with every default filled in (device: the one used). */
json_t *loom_est_ref_json(const loom_est_ref_t *ref, const char *device);

typedef struct loom_est_sizer loom_est_sizer_t;

typedef struct loom_est_sizer_opts {
    loom_est_margin_t margin;
    const char *device;     /* default device (name or path); NULL: "h200" */
    const char *device_dir; /* where device names are looked up; NULL: $LOOM_DEVICE_DIR,
                               else loom_data_path("devices") */
    size_t cache_entries;   /* 0: 256 */
} loom_est_sizer_opts_t;

int loom_est_sizer_new(const loom_est_sizer_opts_t *opts, loom_est_sizer_t **out, loom_err_t *err);
void loom_est_sizer_free(loom_est_sizer_t *s);
/* Estimates ref (or finds it in the cache) and returns the record a job
 * keeps, a new object (caller decrefs):
 *   {"model": {path, batch, train, optimizer, precision, device},
 *    "params": N, "step_time_s": s,
 *    "memory": {weights, gradients, optimizer_state, activations, temporaries,
 *               allocator_slack, context, peak_live, peak_reserved, total},
 *    "margin": {"fraction": f, "extra_bytes": B}, "request_bytes": B}
 * and *request_bytes. Errors: LOOM_EINVAL (bad reference, malformed model
 * or device file, an operator the estimator cannot cost), LOOM_ENOTFOUND /
 * LOOM_EIO (file not readable); the message names the file. Thread-safe. */
int loom_est_sizer_size(loom_est_sizer_t *s, const loom_est_ref_t *ref, json_t **record,
                        uint64_t *request_bytes, loom_err_t *err);
/* The same for files already opened (loomd opens them with the client's
 * rights: auth's loom_auth_file_open): model is ref->path's file, device
 * ref->device's when it is a path (else NULL: a name in the device
 * directory). Each is read into memory (never mapped) only on a cache miss;
 * the cache key is the opened file's identity. quiet: a parse error names
 * the file only, never quoting it (a client's file). */
typedef struct loom_est_files {
    loom_file_t *model;
    loom_file_t *device;
    bool quiet;
} loom_est_files_t;
int loom_est_sizer_size_files(loom_est_sizer_t *s, const loom_est_ref_t *ref,
                              const loom_est_files_t *files, json_t **record, uint64_t *request,
                              loom_err_t *err);
/* Cache hits and misses since creation. */
void loom_est_sizer_stats(loom_est_sizer_t *s, uint64_t *hits, uint64_t *misses);

#ifdef __cplusplus
}
#endif
#endif
