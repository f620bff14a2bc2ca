/* loom template: Mustache templates with an escaper per output kind.
 *
 * The engine follows the Mustache specification (v1.3/1.4): the required
 * modules (interpolation, sections, inverted sections, comments, partials,
 * set delimiters) and the optional inheritance ({{<parent}} / {{$block}})
 * and dynamic-names ({{>*name}}) modules. Lambdas are not supported: the data
 * model is plain JSON (jansson json_t), which has no functions.
 *
 * A template is compiled once (loom_template_compile) and then rendered any
 * number of times, from any number of threads at once (a compiled template
 * is immutable; a partials set caches compiled partials behind a mutex).
 *
 * Escaping is chosen per render, to fit the output being produced:
 *   html   the spec's: & < > " are replaced by entities (&amp; &lt; &gt;
 *          &quot;); used by the conformance tests.
 *   shell  POSIX shell: the whole value is wrapped in single quotes and every
 *          ' becomes '\'' ; the result is one inert shell word whatever the
 *          value holds ($(...), `...`, ;, newlines, ...). An empty value gives ''.
 *   yaml   a YAML double-quoted scalar: "..." with \\ \" \n \t \r \0 \e etc.,
 *          every other control or non-printable character as \xXX / \uXXXX /
 *          \UXXXXXXXX, invalid UTF-8 bytes as \xXX. A YAML parser reads back
 *          exactly the original string.
 *   none   the value as is.
 * {{{name}}} and {{&name}} bypass the escaper in every mode.
 *
 * Values render as: strings as is; integers in decimal; reals in the
 * shortest form that reads back exactly ("1.21", "1e+21"); true as "true";
 * false and null as "" (null); objects and arrays as their compact JSON.
 *
 * Missing names: in spec mode (strict = false) a name that resolves to
 * nothing renders as empty, as the spec requires. In strict mode an
 * interpolation {{x}} whose name does not resolve is an error that names the
 * variable and the template's NAME:LINE:COLUMN (sections and inverted
 * sections keep the spec's meaning of "missing = false" in both modes, so
 * that {{#gpu_type}}...{{/gpu_type}} stays usable for optional fields). A
 * missing partial is always empty in spec mode and an error in strict mode.
 *
 * Syntax errors (unclosed tag, unclosed or mismatched section, bad
 * delimiter change, empty tag name) are reported at compile time as
 * "NAME:LINE:COLUMN: message (expected ...)".
 */
#ifndef LOOM_TEMPLATE_H
#define LOOM_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "loom/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- escapers */

typedef enum loom_template_escape {
    LOOM_TEMPLATE_ESCAPE_HTML = 0,
    LOOM_TEMPLATE_ESCAPE_SHELL = 1,
    LOOM_TEMPLATE_ESCAPE_YAML = 2,
    LOOM_TEMPLATE_ESCAPE_NONE = 3
} loom_template_escape_t;

/* "html" | "shell" | "yaml" | "none" -> *out. Errors name the input and list
 * the accepted names. */
int loom_template_escape_parse(const char *name, loom_template_escape_t *out, loom_err_t *err);
/* The name parsed above ("html", ...). */
const char *loom_template_escape_name(loom_template_escape_t esc);
/* The escaper a template file's name calls for: *.sh.mustache (and
 * *.bash.mustache) shell, *.yaml.mustache / *.yml.mustache yaml,
 * *.html.mustache and anything else html (the spec's default). Used by
 * `loom render` and the generator when no escaper is given. */
loom_template_escape_t loom_template_escape_for_path(const char *path);
/* Appends s[0..len) to out, escaped for esc (see the top of this file).
 * Returns LOOM_OK or LOOM_ENOMEM. */
int loom_template_escape_append(loom_buf_t *out, loom_template_escape_t esc, const char *s,
                                size_t len);

/* ---------------------------------------------------------------- partials */

/* Where {{>name}} (and {{<name}}) find their templates: an in-memory map of
 * name -> source text, and/or a directory where partial NAME is the file
 * DIR/NAME.mustache. The map is searched first. Names containing "/" or
 * starting with "." are never looked up in the directory (no escaping it).
 * Compiled partials are cached in the set (thread-safe). */
typedef struct loom_template_partials loom_template_partials_t;

int loom_template_partials_new(loom_template_partials_t **out, loom_err_t *err);
void loom_template_partials_free(loom_template_partials_t *p);
/* Sets (or replaces) the directory; NULL clears it. The directory need not
 * exist yet; a partial that is not found there renders as empty (spec
 * mode) or is an error (strict mode). */
int loom_template_partials_set_dir(loom_template_partials_t *p, const char *dir, loom_err_t *err);
/* Adds name -> text to the map (copies both; replaces an earlier entry). */
int loom_template_partials_add(loom_template_partials_t *p, const char *name, const char *text,
                               size_t len, loom_err_t *err);
/* Adds every member of obj (an object of name -> string), as in the spec's
 * "partials" field. */
int loom_template_partials_add_json(loom_template_partials_t *p, const json_t *obj,
                                    loom_err_t *err);

/* ---------------------------------------------------------------- templates */

typedef struct loom_template loom_template_t;

/* Render options. Zero-initialised options mean: html escaping, spec mode,
 * no partials, depth limit 64. */
typedef struct loom_template_options {
    loom_template_escape_t escape;
    bool strict;
    const loom_template_partials_t *partials; /* may be NULL */
    /* Limit on nested partials / parents (guards against infinite
     * recursion such as a partial including itself unconditionally).
     * 0 means LOOM_TEMPLATE_DEFAULT_MAX_DEPTH. Exceeding it is an error
     * (LOOM_ELIMIT) in both modes, naming the partial and its place. */
    size_t max_depth;
} loom_template_options_t;

#define LOOM_TEMPLATE_DEFAULT_MAX_DEPTH 64

/* Compiles text[0..len). name is used in messages (a file name, or
 * "<string>"). On error *out is untouched and err says NAME:LINE:COL. */
int loom_template_compile(const char *text, size_t len, const char *name, loom_template_t **out,
                          loom_err_t *err);
/* Reads and compiles a file; name in messages is the path. */
int loom_template_load_file(const char *path, loom_template_t **out, loom_err_t *err);
void loom_template_free(loom_template_t *t);
/* The name given at compile time. */
const char *loom_template_name(const loom_template_t *t);

/* Renders t with data (any JSON value; the root of the context stack) and
 * appends the result to out. opts may be NULL (defaults above). On error the
 * bytes appended so far are removed again (out->len is restored), and err
 * names the template NAME:LINE:COLUMN and what was missing or wrong. */
int loom_template_render(const loom_template_t *t, const json_t *data,
                         const loom_template_options_t *opts, loom_buf_t *out, loom_err_t *err);

/* Compile + render in one call, for one-off use. */
int loom_template_render_string(const char *text, size_t len, const char *name, const json_t *data,
                                const loom_template_options_t *opts, loom_buf_t *out,
                                loom_err_t *err);

/* ------------------------------------------------------------------- plans */

/* A plan is a template rendered once, ahead of time, against data whose
 * shape is fixed but some of whose scalar leaves (the holes) change from one
 * render to the next. The output is kept as literal text with the places of
 * the holes marked, so each later render is copies and escapes only: no
 * JSON to build, no names to look up (loom gen renders one catalog job
 * 100,000 times a second this way). A plan is built by the ordinary
 * renderer, so what it produces is byte for byte what loom_template_render
 * gives for the same data with every hole holding its value, provided each
 * value's text is what the renderer would print for it (strings as they
 * are, integers in decimal, reals by loom_format_real, true as "true",
 * false and null as nothing: a NULL text) and its truthiness is the one
 * declared.
 *
 * A template that depends on a hole's value in any other way cannot be
 * planned, and loom_template_plan_new returns LOOM_EUNAVAIL naming the tag:
 * a section or inverted section on a hole whose truthiness is not known, a
 * dynamic partial name taken from a hole, a container holding a hole
 * rendered as JSON, a hole inside a block that is reindented. Callers then
 * render the ordinary way. Other errors (a strict-mode missing variable, a
 * missing partial) are the ones loom_template_render would report. */
typedef struct loom_template_hole {
    const json_t *leaf; /* a scalar inside data, told apart by its address */
    int truthy;         /* 1: every value is truthy, 0: none is, -1: it depends */
} loom_template_hole_t;

/* A hole's text for one render (not escaped yet). s NULL: the value is
 * false or null, which prints nothing at all, not even an escaper's quotes
 * (an empty string prints as '' under shell escaping). */
typedef struct loom_template_text {
    const char *s;
    size_t len;
} loom_template_text_t;

typedef struct loom_template_plan loom_template_plan_t;

int loom_template_plan_new(const loom_template_t *t, const json_t *data,
                           const loom_template_hole_t *holes, size_t nholes,
                           const loom_template_options_t *opts, loom_template_plan_t **out,
                           loom_err_t *err);
/* Appends the output with values[k] in hole k's places (escaped as the
 * plan's options say). values needs one entry per hole; the holes the
 * template never prints (see loom_template_plan_uses) may be left {NULL, 0}.
 * LOOM_OK or LOOM_ENOMEM (then out->len is restored). */
int loom_template_plan_render(const loom_template_plan_t *p, const loom_template_text_t *values,
                              loom_buf_t *out);
/* Whether the output holds hole k at all. */
bool loom_template_plan_uses(const loom_template_plan_t *p, size_t k);
/* Bytes of literal text in the output (a size hint). */
size_t loom_template_plan_literal_len(const loom_template_plan_t *p);
void loom_template_plan_free(loom_template_plan_t *p);

#ifdef __cplusplus
}
#endif
#endif
