/* The loaded catalog's private layout, shared by model.c (building it from
 * a validated tree) and sample.c (drawing jobs and parameters). */
#ifndef LOOM_CATALOG_MODEL_H
#define LOOM_CATALOG_MODEL_H

#include "loom/catalog.h"

typedef enum cparam_kind { CP_CHOICE, CP_INT, CP_REAL } cparam_kind_t;

typedef struct cparam {
    const char *name;
    cparam_kind_t kind;
    const json_t *values; /* CP_CHOICE */
    double *weights;      /* CP_CHOICE, NULL = uniform */
    size_t n;
    int64_t imin, imax; /* CP_INT */
    double rmin, rmax;  /* CP_REAL */
    bool log;
} cparam_t;

/* An argument or environment value with its ${...} references resolved at
 * load time: literal pieces (in text) and parameter references. */
typedef struct csub_seg {
    size_t off, len; /* literal: text[off..off+len) */
    ptrdiff_t param; /* >= 0: the value of parameter `param` instead */
} csub_seg_t;

typedef struct csub {
    char *text;
    csub_seg_t *segs;
    size_t nsegs;
    bool varies; /* refers to a parameter */
} csub_t;

typedef struct cjob {
    loom_catalog_job_t pub;
    cparam_t *params;
    json_t *merged; /* owns the strings pub points to */
    json_t *args, *env, *labels;
    char *template_path, *model_path;
    json_t *model_spec;          /* the "model" object, paths resolved; NULL for a path string */
    json_t *fixed;               /* context members no draw changes (sample.c) */
    bool args_vary, env_vary;    /* whether ${...} appears in them */
    csub_t *arg_subs, *env_subs; /* per argument; per environment member, in order */
    size_t nargs, nenv;
} cjob_t;

struct loom_catalog {
    char *path;
    char *dir; /* base directory (absolute when loaded from a file) */
    json_t *root;
    cjob_t *jobs;
    size_t n;
    double *weights;
    double *cum; /* cum[i] = weights[0] + ... + weights[i] */
    double wsum;
};

/* Builds the catalog from a validated tree. Takes root and merged (one
 * merged object per job, from validation) in every case. */
int loom__catalog_build(json_t *root, json_t **merged, const char *path, const char *base_dir,
                        loom_catalog_t **out, loom_err_t *err);

/* Builds j->fixed and the compiled substitutions; LOOM_OK or LOOM_ENOMEM. */
int loom__catalog_job_fixed(const loom_catalog_t *c, cjob_t *j);
/* Frees what loom__catalog_job_fixed built. */
void loom__catalog_job_release(cjob_t *j);

/* A scalar as argument text: strings as is, numbers in shortest form. */
int loom__catalog_scalar_text(const json_t *v, loom_buf_t *out);

#endif
