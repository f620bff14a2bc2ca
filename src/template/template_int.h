/* Private structures of the template part: the compiled tree that parse.c
 * builds and render.c walks, and the partials set shared by both. */
#ifndef LOOM_TEMPLATE_INT_H
#define LOOM_TEMPLATE_INT_H

#include <pthread.h>

#include "loom/template.h"

typedef enum tnode_kind {
    TN_TEXT,     /* literal text */
    TN_VAR,      /* {{x}} (escaped) or {{{x}}} / {{&x}} (raw) */
    TN_SECTION,  /* {{#x}}...{{/x}} */
    TN_INVERTED, /* {{^x}}...{{/x}} */
    TN_PARTIAL,  /* {{>x}} or {{>*x}} */
    TN_PARENT,   /* {{<x}}...{{/x}} (inheritance) */
    TN_BLOCK     /* {{$x}}...{{/x}} (inheritance) */
} tnode_kind_t;

typedef struct tnode tnode_t;

typedef struct tnode_list {
    tnode_t *v;
    size_t n, cap;
} tnode_list_t;

struct tnode {
    tnode_kind_t kind;
    char *text;   /* TN_TEXT: the text; others: the name as written */
    size_t len;   /* length of text */
    char **parts; /* the name split at '.' ("." alone: nparts == 0) */
    size_t nparts;
    bool raw;          /* TN_VAR: no escaping */
    bool dynamic;      /* TN_PARTIAL / TN_PARENT: name is looked up in the data */
    char *indent;      /* PARTIAL/PARENT: standalone indentation (or NULL);
                          BLOCK: reindentation string (or NULL) */
    int line, col;     /* position of the tag */
    const char *tname; /* name of the template this node belongs to */
    tnode_list_t kids; /* SECTION, INVERTED, PARENT, BLOCK */
};

struct loom_template {
    char *name;
    tnode_list_t nodes;
};

typedef struct partial_entry {
    char *name;
    char *indent;
    loom_template_t *t; /* NULL: not found */
} partial_entry_t;

struct loom_template_partials {
    pthread_mutex_t mu;
    char *dir;
    json_t *map; /* name -> string */
    partial_entry_t *cache;
    size_t n, cap;
};

/* Compiled partial `name`, with `indent` prepended to each line of its
 * source (may be NULL). *out is NULL when there is no such partial.
 * Errors: the partial's own syntax errors, out of memory. */
int loom__template_partial_get(const loom_template_partials_t *p, const char *name,
                               const char *indent, const loom_template_t **out, loom_err_t *err);

void loom__template_nodes_free(tnode_list_t *l);

/* A plan being built (plan.c): the renderer writes the literal output into
 * its buffer as usual and, where a hole's value goes, records a step. */
typedef struct tplan_step {
    size_t lit_end; /* the literal text before this hole ends here */
    size_t hole;
    loom_template_escape_t esc;
} tplan_step_t;

typedef struct tplan_rec {
    const loom_template_hole_t *holes;
    size_t nholes;
    tplan_step_t *steps;
    size_t n, cap;
} tplan_rec_t;

/* Records hole `hole`, escaped with esc, after the literal output so far
 * (lit_end bytes). LOOM_OK or LOOM_ENOMEM. */
int loom__template_rec_hole(tplan_rec_t *rec, size_t hole, loom_template_escape_t esc,
                            size_t lit_end);
/* loom_template_render, recording into rec when it is not NULL. */
int loom__template_render_rec(const loom_template_t *t, const json_t *data,
                              const loom_template_options_t *opts, tplan_rec_t *rec,
                              loom_buf_t *out, loom_err_t *err);

#endif
