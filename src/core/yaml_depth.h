/* The nesting depth of a YAML text, bounded before any document is built
 * (yaml_depth.c): shared by the CLI's Kubernetes Job reader (jobspec) and
 * the executor's YAML jobs (exec). */
#ifndef LOOM_CORE_YAML_DEPTH_H
#define LOOM_CORE_YAML_DEPTH_H

#include <stddef.h>

/* The most nesting (mappings and sequences, block or flow) loom reads,
 * as JSON's limit. */
#define LOOM_YAML_MAX_DEPTH 64

/* Walks the events of text until its end, a syntax error, or a mapping or
 * sequence nested deeper than max. Returns 0 (within the limit), 1 (too
 * deep: *line and *column, from 1, say where), 2 (a syntax error: *line,
 * *column and *problem say where and what) or -1 (out of memory). Linear in
 * the text's length for a text within the limit, and stops at the first
 * level past it. */
int loom_text_yaml_depth(const char *text, size_t len, size_t max, size_t *line, size_t *column,
                         const char **problem);

#endif
