/* loom catalog: a JSON catalog of deep-learning jobs, validated with exact
 * positions, and sampled (job by weight, parameters per job) with a seeded
 * RNG into a JSON context that templates render.
 *
 * The format is described in docs/catalog.md and by the JSON Schema
 * workloads/catalog.schema.json. In short:
 *
 *   {
 *     "version": 1,
 *     "defaults": { ...any job member but "name"... },
 *     "jobs": [
 *       { "name": "resnet-train",
 *         "executable": "python3",
 *         "arguments": ["train.py", "--lr", "${lr}", "--batch", "${batch}"],
 *         "environment": {"OMP_NUM_THREADS": "${threads}"},
 *         "resources": {"cpus": 4, "memory": "16GiB", "gpus": 1,
 *                       "gpu_share": 1000, "gpu_memory": "20GiB", "gpu_type": "a100"},
 *         "time_limit": "1h30m",
 *         "weight": 3,
 *         "parameters": {
 *           "lr":      {"type": "real", "min": 1e-4, "max": 1e-1, "log": true},
 *           "batch":   {"type": "int", "min": 16, "max": 256, "log": true},
 *           "threads": {"type": "choice", "values": [1, 2, 4], "weights": [1, 1, 2]}
 *         },
 *         "template": "../templates/slurm.sh.mustache",
 *         "labels": {"team": "vision"},
 *         "model": "models/resnet50.onnx",
 *         "image": "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime",
 *         "description": "free text" }
 *     ]
 *   }
 *
 * "${name}" in arguments and environment values is replaced by the sampled
 * parameter (or "$$" by a literal "$"); "${catalog_dir}" (unless a parameter
 * has that name) is the absolute directory of the catalog file. Paths (template, model) are
 * relative to the directory of the catalog file. "defaults" is merged into every job: objects
 * (resources, environment, labels, parameters) member by member, the job's own value winning;
 * anything else is taken from defaults only when the job lacks it.
 *
 * Loading validates everything in one pass and reports EVERY problem (an
 * issue list), each with FILE:LINE:COLUMN, the JSON pointer, what was found
 * and what was expected; unknown keys carry a "did you mean" hint. An
 * invalid catalog yields no loom_catalog_t at all.
 *
 * A loaded catalog is immutable: sampling from several threads at once is
 * safe as long as each thread uses its own loom_rng_t.
 */
#ifndef LOOM_CATALOG_H
#define LOOM_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "loom/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ diagnostics */

/* One validation problem. line and column are 1-based (column counts bytes);
 * for a syntax error pointer is the pointer of the innermost value being
 * parsed. message reads "found X, expected Y" (plus a hint where there is
 * one); text is the whole line "FILE:LINE:COL: POINTER: MESSAGE". */
typedef struct loom_catalog_issue {
    char *file;
    int line;
    int column;
    char *pointer; /* "" is the root */
    char *message;
    char *text;
} loom_catalog_issue_t;

typedef struct loom_catalog_issues {
    loom_catalog_issue_t *items;
    size_t count;
    size_t cap;
} loom_catalog_issues_t;

#define LOOM_CATALOG_ISSUES_INIT                                                                   \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

void loom_catalog_issues_free(loom_catalog_issues_t *issues);

/* ------------------------------------------------------------------ model */

typedef struct loom_catalog_resources {
    int64_t cpus;              /* >= 1; default 1 */
    uint64_t memory_bytes;     /* default 1GiB */
    int64_t gpus;              /* >= 0; default 0 */
    int64_t gpu_share;         /* milli-GPU per GPU, 1..1000; default 1000
                                  (a value < 1000 needs gpus == 1) */
    uint64_t gpu_memory_bytes; /* 0 = not given */
    const char *gpu_type;      /* NULL = any */
} loom_catalog_resources_t;

/* A job after defaults are merged. Strings and JSON values belong to the
 * catalog and live as long as it. */
typedef struct loom_catalog_job {
    const char *name;
    const char *description; /* may be NULL */
    const char *executable;
    const json_t *arguments;   /* array of strings, before ${param} substitution */
    const json_t *environment; /* object name -> string, before substitution */
    const json_t *labels;      /* object name -> string */
    loom_catalog_resources_t resources;
    int64_t time_limit_ns;     /* 0 = none */
    double weight;             /* > 0; default 1 */
    const char *template_path; /* resolved against the catalog's directory; may be NULL */
    const char *model_path;    /* resolved likewise (the "path" of a model object); may be NULL */
    size_t param_count;        /* parameters, in document order */
    const json_t *merged;      /* the merged job object as written (for inspection) */
    const char *image;         /* container image for Kubernetes; may be NULL */
} loom_catalog_job_t;

typedef struct loom_catalog loom_catalog_t;

/* ------------------------------------------------------------------- load */

/* Loads and validates the catalog file at path. On success *out is set and
 * issues (may be NULL) is left empty. If the catalog is invalid, returns
 * LOOM_EINVAL, *out stays NULL, every problem is appended to issues, and err
 * holds a summary: the first issue plus "(and N more)". An unreadable file
 * is LOOM_EIO with no issues. Template and model files must exist. */
int loom_catalog_load_file(const char *path, loom_catalog_t **out, loom_catalog_issues_t *issues,
                           loom_err_t *err);
/* The same from memory: name is the file name used in messages, base_dir
 * the directory relative paths are resolved against (NULL: the current
 * directory). */
int loom_catalog_load_string(const char *text, size_t len, const char *name, const char *base_dir,
                             loom_catalog_t **out, loom_catalog_issues_t *issues, loom_err_t *err);
void loom_catalog_free(loom_catalog_t *c);

size_t loom_catalog_job_count(const loom_catalog_t *c);
/* i < job_count; NULL otherwise. */
const loom_catalog_job_t *loom_catalog_job(const loom_catalog_t *c, size_t i);
/* Index of the job called name, or -1. */
ptrdiff_t loom_catalog_find(const loom_catalog_t *c, const char *name);
/* The path the catalog was loaded from (or its name). */
const char *loom_catalog_path(const loom_catalog_t *c);

/* --------------------------------------------------------------- sampling */

/* Picks a job index with probability weight / sum(weights). Draws exactly
 * one loom_rng_uniform from rng (then a binary search over the cumulative
 * weights: O(log n)). */
size_t loom_catalog_pick(const loom_catalog_t *c, loom_rng_t *rng);
/* Probability of job i under loom_catalog_pick (for chi-square checks). */
double loom_catalog_probability(const loom_catalog_t *c, size_t i);

/* Samples the parameters of job i (in document order, one draw each) and
 * builds the render context, a new JSON object (caller json_decref's it):
 *
 *   name          "resnet-train"   (always matches [A-Za-z0-9][A-Za-z0-9._-]*, so
 *                 templates may use it raw, e.g. in #SBATCH lines)
 *   dns_name      "resnet-train"   the name as a DNS-1123 label (lower case,
 *                 [a-z0-9-], at most 63 characters) for Kubernetes
 *   description   string (only if given)
 *   executable    "python3"
 *   arguments     ["train.py", "--lr", "0.0123", ...]   substituted strings
 *   command       [executable, arguments...]            (k8s "command" style)
 *   environment   {"OMP_NUM_THREADS": "4"}              substituted
 *   env           [{"name": "OMP_NUM_THREADS", "value": "4"}, ...] sorted by name
 *                 (names always match [A-Za-z_][A-Za-z0-9_]*)
 *   params        {"lr": 0.0123, "batch": 64, "threads": 4}  typed as sampled
 *                 (choice values keep their JSON type)
 *   resources     {"cpus": 4, "memory": "16GiB", "memory_bytes": N,
 *                  "memory_mib": 16384 (rounded up), "gpus": 1,
 *                  "gpu_share": 1000, "gpu_fraction": 1.0,
 *                  "gpu_memory": "20GiB", "gpu_memory_mib": 20480 (both only if given),
 *                  "gpu_type": "a100" (only if given; matches [A-Za-z0-9._-]+),
 *                  "has_gpus": true when gpus > 0}
 *   time_limit    {"seconds": 5400, "minutes": 90 (rounded up),
 *                  "slurm": "01:30:00" (or "D-HH:MM:SS"), "text": "1h30m"}
 *                 (only if a time limit is given)
 *   labels        {"team": "vision"}
 *   label_list    [{"name": "team", "value": "vision"}, ...] sorted by name
 *   weight        3.0
 *   template      "/abs/or/relative/path/slurm.sh.mustache" (only if given)
 *   model         path (only if given; also when "model" is an object)
 *   model_spec    only for a "model" object: {"path" (resolved), "batch",
 *                 "train", "optimizer", "precision", "device"} as written, with
 *                 "${param}" members replaced by the sampled values (typed) —
 *                 what loom gen sends as job.submit's "model"
 *   image         container image (only if given)
 *
 * The generator adds its own members (index, submit_id, seed, ...) on top.
 * The same rng state gives the same context on every machine.
 * Members that no draw changes (resources, labels, ...) are built once at
 * load time and shared by reference between contexts: add or replace
 * top-level members freely, but do not modify nested values in place. */
int loom_catalog_sample(const loom_catalog_t *c, size_t i, loom_rng_t *rng, json_t **ctx,
                        loom_err_t *err);

/* ----------------------------------------------- sampling without a context */

/* For callers that sample one job very many times (loom gen): the job's
 * context built once, with a stand-in at every leaf that a draw changes
 * (each parameter in params, and each argument or environment value that
 * refers to one), and a draw that produces only the texts of those leaves,
 * without any JSON. These holes are what template plans take
 * (loom_template_plan_new in template.h).
 *
 * The shape's context is loom_catalog_sample's with the holes' stand-ins;
 * loom_catalog_shape_draw makes the same draws from rng as
 * loom_catalog_sample does, and hole k's text is what a template prints for
 * that leaf of the sampled context (a parameter as its JSON value renders:
 * strings as they are, numbers as printed by loom_format_real or in
 * decimal, true as "true", false as nothing (span.none); a substituted
 * value as its string). A job with a choice among arrays or objects has no shape
 * (LOOM_EUNAVAIL): a template could look inside such values. */
typedef struct loom_catalog_hole {
    const json_t *leaf; /* the stand-in inside the shape's context */
    int truthy;         /* 1: every value is truthy, 0: none is, -1: it depends */
} loom_catalog_hole_t;

/* Where one hole's text lies in the caller's buffer. none: the value is
 * false, which a template prints as nothing at all (len is 0). */
typedef struct loom_catalog_span {
    size_t off, len;
    bool none;
} loom_catalog_span_t;

typedef struct loom_catalog_shape loom_catalog_shape_t;

int loom_catalog_shape_new(const loom_catalog_t *c, size_t i, loom_catalog_shape_t **out,
                           loom_err_t *err);
void loom_catalog_shape_free(loom_catalog_shape_t *s);
/* The context with stand-ins (owned by the shape; copy it to add members). */
const json_t *loom_catalog_shape_context(const loom_catalog_shape_t *s);
/* The holes: parameters first (in document order), then the arguments
 * and environment values that vary. */
size_t loom_catalog_shape_holes(const loom_catalog_shape_t *s, const loom_catalog_hole_t **holes);
/* Draws the job's parameters from rng and writes every hole's text into
 * buf[0..cap), hole k at spans[k] (one span per hole). Returns the bytes
 * needed: when that is more than cap, buf and spans are incomplete and rng
 * has moved on; draw again from a copy of rng's earlier state with a
 * buffer that large. Allocates nothing. */
size_t loom_catalog_shape_draw(const loom_catalog_shape_t *s, loom_rng_t *rng, char *buf,
                               size_t cap, loom_catalog_span_t *spans);

#ifdef __cplusplus
}
#endif
#endif
