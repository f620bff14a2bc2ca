/* Private pieces of the catalog part: the positioned JSON parser and the
 * issue list helpers shared by validation and loading. */
#ifndef LOOM_CATALOG_INT_H
#define LOOM_CATALOG_INT_H

#include "loom/catalog.h"

/* Positions are kept per JSON pointer, encoded as (line << 32) | column. */
#define LOOM__POS(line, col) (((json_int_t)(line) << 32) | (json_int_t)(col))
#define LOOM__POS_LINE(p)    ((int)((p) >> 32))
#define LOOM__POS_COL(p)     ((int)((p)&0xffffffff))

typedef struct loom__jsonpos {
    json_t *values; /* pointer -> position of the value's first byte */
    json_t *keys;   /* pointer -> position of the member's key */
} loom__jsonpos_t;

/* Parses JSON text, recording positions. Syntax errors and duplicate keys
 * are appended to issues (file is the name used in them). Returns LOOM_OK
 * with *out set, or LOOM_EINVAL (syntax error: *out NULL) or LOOM_ENOMEM.
 * Duplicate keys are reported but parsing goes on (the first value wins). */
int loom__jsonpos_parse(const char *text, size_t len, const char *file, json_t **out,
                        loom__jsonpos_t *pos, loom_catalog_issues_t *issues);

/* Appends an issue; text is built from the parts. Returns LOOM_OK or
 * LOOM_ENOMEM. */
int loom__catalog_issue_add(loom_catalog_issues_t *issues, const char *file, int line, int col,
                            const char *pointer, const char *fmt, ...) LOOM_PRINTF(6, 7);

/* Rubick's "reconfig" object (docs/scheduling.md, "Reconfigurable jobs")
 * declared as data, so that the catalog checks an entry's reconfig without
 * calling into rubick (a part above it). What a table cannot say (the model
 * name is one of rubick's models, offload needs a ZeRO stage) loomd checks
 * at job.submit; tests/unit/test_catalog_reconfig.c keeps this table in
 * step with rubick's parser. */
typedef enum loom__reconfig_kind {
    LOOM__RC_INT,         /* an integer lo..hi */
    LOOM__RC_INT_RANGE,   /* {"min", "max"}: integers lo..hi, min <= max */
    LOOM__RC_INT_SET,     /* a non-empty array of integers lo..hi */
    LOOM__RC_BOOL_SET,    /* a non-empty array of true/false */
    LOOM__RC_MILLI_RANGE, /* {"min", "max"}: numbers lo/1000..hi/1000, min <= max */
    LOOM__RC_SIZE_RANGE,  /* {"min", "max"}: sizes of lo..hi bytes, min <= max in MiB */
    LOOM__RC_BOOL,        /* true or false */
    LOOM__RC_NAME,        /* a string of lo..hi bytes */
    LOOM__RC_OBJECT,      /* an object of the fields in `members` */
    LOOM__RC_OBJECTS,     /* an array of lo..hi objects (their members checked by rubick at
                             job.submit) */
} loom__reconfig_kind_t;

typedef struct loom__reconfig_field {
    const char *name;
    loom__reconfig_kind_t kind;
    bool required;
    int64_t lo, hi;
    const struct loom__reconfig_field *members; /* LOOM__RC_OBJECT */
    size_t nmembers;
} loom__reconfig_field_t;

/* The reconfig object's fields, *n of them. */
const loom__reconfig_field_t *loom__catalog_reconfig_fields(size_t *n);

#endif
