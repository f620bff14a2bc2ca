/* loom zoo: a repository of trained models and warm starts from it, after
 * ModelKeeper (Lai, Dai, Madhyastha, Chowdhury, NSDI 2023).
 *
 *   loom_zoo_sig_*()        ONNX graph -> layer signature (operator, fan-in,
 *                           weight and output shapes, in topological order,
 *                           each layer's predecessors)
 *   loom_zoo_similarity()   weighted edit distance of two signatures by
 *                           dynamic programming along the graphs' edges ->
 *                           a score in [0, 1]
 *   loom_zoo_align()        the same, with the matched layer pairs
 *   loom_zoo_bound(), loom_zoo_keys_bound()
 *                           upper bounds of the similarity, for pruning
 *   loom_zoo_open() ...     the repository: files content-addressed under a
 *                           directory, metadata in SQLite (zoo.db)
 *   loom_zoo_match()        the bounds prune the repository, exact
 *                           alignment ranks the rest, parent rule (no cap)
 *   loom_zoo_weights_*()    the weights file format (docs/zoo.md)
 *   loom_zoo_transform()    parent weights -> child weights along an
 *                           alignment (copy, Net2Net widen/deepen, crop/pad)
 *
 * docs/zoo.md documents the score, the parent rule and the file format.
 */
#ifndef LOOM_ZOO_H
#define LOOM_ZOO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loom/core.h"
#include "loom/estimate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ signatures */

#define LOOM_ZOO_MAX_LAYERS 2048 /* layers a graph may have (DP is n x m) */
#define LOOM_ZOO_HIST       64   /* operator buckets of the coarse feature */
#define LOOM_ZOO_DIMS       4    /* dims kept per shape (the rest folded in) */

typedef struct loom_zoo_layer {
    uint16_t op;   /* operator id (loom_zoo_op_id) */
    uint8_t nin;   /* inputs produced by other layers */
    uint8_t wrank; /* rank of the layer's first weight, 0: none */
    uint8_t orank; /* rank of its first output, 0: unknown */
    int32_t wdims[LOOM_ZOO_DIMS];
    int32_t odims[LOOM_ZOO_DIMS];
    int32_t node; /* node index in the ONNX graph, -1 when decoded */
} loom_zoo_layer_t;

typedef struct loom_zoo_sig {
    size_t n;
    loom_zoo_layer_t *layers;
    uint16_t hist[LOOM_ZOO_HIST]; /* layers per operator bucket (id % 64) */
    /* The graph's edges between layers: layer i's predecessors (the layers
     * whose outputs it reads, through plumbing the signature leaves out)
     * are pred[pstart[i] .. pstart[i+1]), each < i, distinct. A layer with
     * none reads only the graph's inputs. NULL pstart: a signature without
     * edges (the LZS1 form); each layer then reads the one before it. */
    uint32_t *pstart;
    uint16_t *pred;
} loom_zoo_sig_t;

/* A stable id for an ONNX operator type: known operators have small ids,
 * others a hash of the name (>= 256). */
uint16_t loom_zoo_op_id(const char *op);

/* The signature of a parsed graph; shapes are inferred at batch 1 when the
 * estimator can (else left unknown). Errors: more than LOOM_ZOO_MAX_LAYERS
 * layers, no layer at all. */
int loom_zoo_sig_from_model(loom_est_model_t *m, loom_zoo_sig_t *out, loom_err_t *err);
int loom_zoo_sig_load(const char *onnx_path, loom_zoo_sig_t *out, loom_err_t *err);
/* The same from an ONNX file's bytes; errors name `name`. */
int loom_zoo_sig_parse(const void *data, size_t len, const char *name, loom_zoo_sig_t *out,
                       loom_err_t *err);
void loom_zoo_sig_free(loom_zoo_sig_t *s);

/* Compact binary form kept in the repository (docs/zoo.md). decode checks
 * every length and count; the message names `name` and the byte offset. */
int loom_zoo_sig_encode(const loom_zoo_sig_t *s, loom_buf_t *out);
int loom_zoo_sig_decode(const void *data, size_t len, const char *name, loom_zoo_sig_t *out,
                        loom_err_t *err);

/* ------------------------------------------------------------- alignment */

/* Score of matching two layers: 0 for different operators, else
 * 0.25 + 0.75 x shape agreement (1 for identical layers). */
double loom_zoo_layer_score(const loom_zoo_layer_t *a, const loom_zoo_layer_t *b);

/* similarity = 2 x (sum of matched layer scores) / (n_a + n_b), each layer
 * matched at most once (weighted edit distance with unit insertions and
 * deletions), the matching found along the graphs' edges: the best pair of
 * paths, then branches between already matched layers (src/zoo/align.c,
 * docs/zoo.md); 1 for identical signatures (up to 32 parallel branches),
 * 0 for nothing in common; -1 out of memory. */
double loom_zoo_similarity(const loom_zoo_sig_t *a, const loom_zoo_sig_t *b);
/* An upper bound of loom_zoo_similarity from the operator histograms alone
 * (the coarse filter). */
double loom_zoo_bound(const loom_zoo_sig_t *a, const loom_zoo_sig_t *b);

/* A tighter upper bound of loom_zoo_similarity from the layers' shape
 * classes ("keys"): per layer its operator, fan-in, ranks and the weight's
 * and output's element counts on a log scale (LOOM_ZOO_KEY_Q steps per
 * doubling). Two layers whose counts lie d >= 2 steps apart agree at most
 * 2^-((d-1)/Q) in that shape (the agreement multiplies min/max per dim, so
 * it is at most the ratio of the products), so a match of them scores at
 * most what the formula gives for that agreement. Within an operator a
 * matching pairs at most min(count_a, count_b) layers, each child layer
 * once, so its score is at most the sum of the largest of the child keys'
 * best possible scores (and the same from the parent's side). Never below
 * loom_zoo_similarity (tests/unit/test_zoo.c checks it on every family
 * of bench/zoo_families.h). */
#define LOOM_ZOO_KEY_Q 8
typedef struct loom_zoo_key {
    uint16_t op;
    uint8_t nin, wrank, orank;
    int16_t wb, ob; /* floor(Q log2 count); INT16_MIN: a dim unknown */
    uint16_t count; /* layers with this key */
} loom_zoo_key_t;

typedef struct loom_zoo_keys {
    size_t n, layers;
    loom_zoo_key_t *k; /* sorted by op */
} loom_zoo_keys_t;

int loom_zoo_keys_of(const loom_zoo_sig_t *s, loom_zoo_keys_t *out);
double loom_zoo_keys_bound(const loom_zoo_keys_t *a, const loom_zoo_keys_t *b);
void loom_zoo_keys_free(loom_zoo_keys_t *k);
/* The stored form (12 bytes a key); decode checks the length and order. */
int loom_zoo_keys_encode(const loom_zoo_keys_t *k, loom_buf_t *out);
int loom_zoo_keys_decode(const void *data, size_t len, size_t layers, loom_zoo_keys_t *out);

typedef struct loom_zoo_pair {
    int32_t child, parent; /* layer indices */
    double score;
} loom_zoo_pair_t;

typedef struct loom_zoo_alignment {
    double similarity;
    size_t npairs;
    loom_zoo_pair_t *pairs; /* by child layer; parents need not increase (branches) */
} loom_zoo_alignment_t;

int loom_zoo_align(const loom_zoo_sig_t *child, const loom_zoo_sig_t *parent,
                   loom_zoo_alignment_t *out, loom_err_t *err);
void loom_zoo_alignment_free(loom_zoo_alignment_t *a);

/* ------------------------------------------------------------ repository */

typedef struct loom_zoo loom_zoo_t;

/* Opens (creating) the repository in dir: dir/zoo.db and dir/objects/. */
int loom_zoo_open(const char *dir, loom_zoo_t **out, loom_err_t *err);
void loom_zoo_close(loom_zoo_t *z);
const char *loom_zoo_dir(const loom_zoo_t *z);

#define LOOM_ZOO_MAX_TEXT 256 /* task, name, metric name: bytes at most */
/* Files a client names (read into memory whole, checked before reading). */
#define LOOM_ZOO_MODEL_MAX   ((size_t)2 << 30) /* an ONNX model (protobuf's limit) */
#define LOOM_ZOO_WEIGHTS_MAX ((size_t)2 << 30) /* a weights file */
#define LOOM_ZOO_METRICS_MAX ((size_t)1 << 20) /* a job's metrics.json */
#define LOOM_ZOO_METRIC_ABS  1e12              /* |metric| at most */

/* Who looks at the repository: entries are visible to their owner, to
 * everyone when shared, and all of them to an operator (all). */
typedef struct loom_zoo_viewer {
    int64_t uid;
    bool all;
} loom_zoo_viewer_t;

typedef struct loom_zoo_entry_in {
    const char *model_path;   /* ONNX file */
    const char *weights_path; /* weights file (loom_zoo_weights format) */
    const char *task;         /* e.g. "digits": matches only within a task */
    /* The data it was trained on, e.g. "digits[0-9]" (NULL: not recorded):
     * a child of other data does not start from it (loom_zoo_match_opts_t
     * data). */
    const char *data;
    const char *name;        /* NULL: the model file's base name */
    const char *metric_name; /* e.g. "accuracy", "loss" */
    double metric;
    int64_t job_id;    /* the job that trained it, 0 none */
    int64_t owner_uid; /* who added it (its owner) */
    const char *owner; /* the owner's name, NULL none */
    bool shared;       /* a warm-start candidate for every user, not only its owner */
} loom_zoo_entry_in_t;

/* True when larger values of the metric are better (names containing
 * "loss", "error", "perplexity" or "wer" are lower-better). */
bool loom_zoo_metric_higher_better(const char *metric_name);
/* A metric as docs/zoo.md allows it: finite, |value| <= LOOM_ZOO_METRIC_ABS,
 * lower-better metrics >= 0, fractions (accuracy, precision, recall, f1,
 * auc, iou, map, top1, top5) in [0, 1]. The error names the metric. */
int loom_zoo_metric_check(const char *metric_name, double value, loom_err_t *err);

/* Copies both files into the object store (named by SHA-256), reads the
 * model's signature and records the entry. The weights file is checked.
 * Reads the files with the process's own rights (the CLI); loomd reads a
 * client's files itself and uses the steps below. */
int loom_zoo_add(loom_zoo_t *z, const loom_zoo_entry_in_t *in, int64_t *id, loom_err_t *err);

/* loom_zoo_add in steps, so that loomd holds its repository lock only for
 * the database: prepare checks the entry and parses the files' bytes (the
 * weights: every value finite), store writes the objects (no lock needed),
 * commit records the row (under the caller's lock; drops the objects when
 * it fails), abort drops what store wrote when store failed (under the
 * lock). model and weights must outlive p. quiet: a file that does not
 * parse is named only, its bytes never quoted (a client's file). */
typedef struct loom_zoo_prepared {
    loom_zoo_entry_in_t in;
    const char *name;
    const void *model, *weights;
    size_t mlen, wlen;
    loom_zoo_sig_t sig;
    int64_t params;
    char msha[65], wsha[65];
    bool stored_m, stored_w;
} loom_zoo_prepared_t;
int loom_zoo_prepare(const loom_zoo_entry_in_t *in, const void *model, size_t mlen,
                     const void *weights, size_t wlen, bool quiet, loom_zoo_prepared_t *p,
                     loom_err_t *err);
int loom_zoo_store(loom_zoo_t *z, loom_zoo_prepared_t *p, loom_err_t *err);
int loom_zoo_commit(loom_zoo_t *z, loom_zoo_prepared_t *p, int64_t *id, loom_err_t *err);
void loom_zoo_abort(loom_zoo_t *z, loom_zoo_prepared_t *p);
void loom_zoo_prepared_free(loom_zoo_prepared_t *p);

/* The entry registered for job_id, or 0 in *id when none. */
int loom_zoo_find_job(loom_zoo_t *z, int64_t job_id, int64_t *id, loom_err_t *err);
/* Entry as JSON (docs/zoo.md); LOOM_ENOTFOUND when absent or not visible
 * to v (NULL: every entry). */
int loom_zoo_get(loom_zoo_t *z, int64_t id, const loom_zoo_viewer_t *v, json_t **out,
                 loom_err_t *err);
/* Entries v may see (NULL: every entry; task NULL: all tasks), by id, at
 * most limit (0: all). */
int loom_zoo_list(loom_zoo_t *z, const char *task, const loom_zoo_viewer_t *v, size_t limit,
                  json_t **out, loom_err_t *err);
/* Removes the entry and the objects no other entry uses. */
int loom_zoo_remove(loom_zoo_t *z, int64_t id, loom_err_t *err);
/* Path of an object by its SHA-256 hex name. */
int loom_zoo_object_path(const loom_zoo_t *z, const char *sha, char *out, size_t outlen,
                         loom_err_t *err);

typedef struct loom_zoo_match_opts {
    const char *task;      /* NULL: every task */
    size_t candidates;     /* exact alignments at most (0: no limit; the bounds stop it) */
    size_t top;            /* ranked results returned (0: 5) */
    double band;           /* parent rule's similarity band (< 0: 0.05) */
    double min_similarity; /* below it no parent is chosen (< 0: 0.5) */
    int64_t exclude_id;    /* an entry to leave out, 0 none */
    /* The child's data (NULL: not given). Entries that recorded other data
     * are left out: a warm start from them is predicted not to help (the
     * child then starts cold); "other_data" in the result counts them.
     * Entries without recorded data stay candidates. */
    const char *data;
    /* Candidates: NULL every entry (the CLI's own repository); else those
     * of viewer->uid and the shared ones (viewer->all is ignored: an
     * operator's warm starts come from its own and shared entries too). */
    const loom_zoo_viewer_t *viewer;
} loom_zoo_match_opts_t;

/* Ranks the repository against child:
 *   {"candidates": [{"id", "name", "task", "similarity", "metric_name",
 *                    "metric"}...], "parent": id or null, "rule": "...",
 *    "scanned": N, "aligned": K, "other_data": D}
 * The parent: among candidates whose similarity is within `band` of the
 * best (and at least min_similarity), the best metric; ties by
 * similarity (docs/zoo.md, "Parent choice"). */
int loom_zoo_match(loom_zoo_t *z, const loom_zoo_sig_t *child, const loom_zoo_match_opts_t *opts,
                   json_t **out, loom_err_t *err);

/* -------------------------------------------------------- weights files */

#define LOOM_ZOO_MAX_TENSORS 65536
#define LOOM_ZOO_MAX_HEADER  ((size_t)16 << 20)

typedef struct loom_zoo_tensor {
    char *name;
    int rank;
    int64_t dims[8];
    size_t numel;
    float *data; /* owned */
} loom_zoo_tensor_t;

typedef struct loom_zoo_weights {
    size_t n;
    loom_zoo_tensor_t *t;
    json_t *meta; /* object, may be empty */
    size_t cap;   /* t holds at least this many (0: at least n); for loom_vec_reserve */
} loom_zoo_weights_t;

/* "LOOMWTS1", u64 LE header length, JSON header, float32 LE data
 * (docs/zoo.md, "Weights files"). Errors name the source and the field. */
int loom_zoo_weights_parse(const void *data, size_t len, const char *name, loom_zoo_weights_t *out,
                           loom_err_t *err);
int loom_zoo_weights_load(const char *path, loom_zoo_weights_t *out, loom_err_t *err);
/* Written atomically (temporary file + rename). */
int loom_zoo_weights_save(const loom_zoo_weights_t *w, const char *path, loom_err_t *err);
/* Written through fd (a new file opened for writing, e.g. with a client's
 * rights: loomd's zoo.warm "out"), then fsync'd; name names it in errors. */
int loom_zoo_weights_write_fd(const loom_zoo_weights_t *w, int fd, const char *name,
                              loom_err_t *err);
void loom_zoo_weights_free(loom_zoo_weights_t *w);
const loom_zoo_tensor_t *loom_zoo_weights_find(const loom_zoo_weights_t *w, const char *name);

/* ---------------------------------------------------------- transformation */

typedef struct loom_zoo_transform_opts {
    double noise; /* sd of the noise on new units, relative to the tensor's sd (< 0: 0.01) */
    uint64_t seed;
    bool no_deepen; /* leave unmatched layers alone (default: identity where it preserves) */
} loom_zoo_transform_opts_t;

typedef struct loom_zoo_transform_stats {
    size_t layers_mapped;    /* matched layers with a weight */
    size_t tensors_copied;   /* same shape */
    size_t tensors_widened;  /* reshaped: widened, cropped or padded */
    size_t tensors_deepened; /* unmatched layers set to the identity */
    size_t tensors_child;    /* initializers of the child */
} loom_zoo_transform_stats_t;

/* Child weights from the parent's along the alignment (child's graph m_c,
 * parent's m_p, signatures from them): for each matched pair, each
 * initializer input position both have, the parent tensor mapped onto the
 * child's shape. Tensors the child keeps fresh are left out of *out. */
int loom_zoo_transform(loom_est_model_t *m_c, const loom_zoo_sig_t *s_c, loom_est_model_t *m_p,
                       const loom_zoo_sig_t *s_p, const loom_zoo_alignment_t *al,
                       const loom_zoo_weights_t *parent, const loom_zoo_transform_opts_t *opts,
                       loom_zoo_weights_t *out, loom_zoo_transform_stats_t *stats, loom_err_t *err);

/* The whole warm start: match child_onnx against the repository, choose
 * the parent, transform its weights and write them to out_path with the
 * parent, similarity and mapping in the header's "meta". *report (may be
 * NULL) gets {"parent", "similarity", "layers_mapped", ..., "match_s",
 * "transform_s"}. LOOM_ENOTFOUND when no parent qualifies. */
int loom_zoo_warm(loom_zoo_t *z, const char *child_onnx, const loom_zoo_match_opts_t *mopts,
                  const loom_zoo_transform_opts_t *topts, const char *out_path, json_t **report,
                  loom_err_t *err);
/* The same for a child already parsed (loomd reads a client's ONNX file
 * itself, outside its repository lock); child_name names it in messages.
 * out_fd >= 0: the weights are written through out_fd (a new file; loomd's
 * zoo.warm "out", created with the client's rights) and out_path only
 * names it; out_fd < 0: written to out_path atomically. */
int loom_zoo_warm_model(loom_zoo_t *z, loom_est_model_t *child, const char *child_name,
                        const loom_zoo_match_opts_t *mopts, const loom_zoo_transform_opts_t *topts,
                        const char *out_path, int out_fd, json_t **report, loom_err_t *err);

/* Applies a zoo.warm result res ({"parent", "similarity", "layers_mapped",
 * "layers_child", "weights"}) to a batch submission: sets the labels
 * zoo.parent, zoo.similarity, zoo.layers_mapped and zoo.weights in labels
 * (an object; no expected speed-up: similarity does not predict one,
 * docs/zoo.md) and puts `export LOOM_WARM_START='PATH'` into
 * *script after its #! line (before anything runs). What `loom submit
 * --warm-start` and `loom gen --submit` (catalog "warm_start") both do.
 * LOOM_EINVAL when res has no usable weights path (one with a ' or over
 * 256 bytes is refused: it goes into a shell line). */
int loom_zoo_warm_apply(const json_t *res, json_t *labels, loom_buf_t *script, loom_err_t *err);

#ifdef __cplusplus
}
#endif
#endif
