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

#endif
