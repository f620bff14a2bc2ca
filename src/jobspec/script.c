/* Directives of batch scripts: "#SBATCH" lines in sbatch's dialect and
 * "#LOOM" lines in loom submit's. As sbatch, a script's directives are the
 * lines before its first command; the words after the prefix are split as
 * the shell would split them (single and double quotes, backslash), and a
 * word that starts with '#' ends the line (a comment). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobspec/jobspec_int.h"

#define WORDS_MAX 64

typedef struct words {
    char *w[WORDS_MAX];
    size_t n;
    char buf[LOOM_JOBSPEC_VALUE_MAX + 64];
} words_t;

/* Splits line (len bytes, no newline) into words. */
static int split(const char *line, size_t len, words_t *ws, const char *where, loom_err_t *err)
{
    size_t o = 0, i = 0;
    ws->n = 0;
    while (i < len) {
        while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
            i++;
        if (i == len || line[i] == '#')
            break;
        if (ws->n == WORDS_MAX)
            return loom_err_set(err, LOOM_EINVAL, "%s: more than %d words in a directive", where,
                                WORDS_MAX);
        ws->w[ws->n++] = ws->buf + o;
        char quote = 0;
        for (; i < len && (quote || (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')); i++) {
            char c = line[i];
            if (o + 2 >= sizeof ws->buf)
                return loom_err_set(err, LOOM_EINVAL, "%s: directive longer than %zu bytes", where,
                                    sizeof ws->buf - 2);
            if (quote == c) {
                quote = 0;
            } else if (!quote && (c == '\'' || c == '"')) {
                quote = c;
            } else if (c == '\\' && quote != '\'' && i + 1 < len) {
                ws->buf[o++] = line[++i];
            } else {
                ws->buf[o++] = c;
            }
        }
        if (quote)
            return loom_err_set(err, LOOM_EINVAL, "%s: unterminated %c quote", where, quote);
        ws->buf[o++] = 0;
    }
    return LOOM_OK;
}

/* One unsupported sbatch option: a warning, or an error when strict. Its
 * value, if it was given as the next word, is skipped (*i advanced). */
static int unsupported(loom_jobspec_t *s, const words_t *ws, size_t *i, const char *opt,
                       size_t optlen, const char *where, unsigned flags, loom_err_t *err)
{
    if (flags & LOOM_JOBSPEC_STRICT)
        return loom_err_set(err, LOOM_EINVAL, "%s: #SBATCH %.*s: not supported by loom (--strict)",
                            where, (int)optlen, opt);
    loom_jobspec_warn(s, "%s: #SBATCH %.*s: not supported by loom; ignored", where, (int)optlen,
                      opt);
    if (!memchr(opt, '=', strlen(opt)) && *i + 1 < ws->n && ws->w[*i + 1][0] != '-')
        (*i)++;
    return LOOM_OK;
}

/* Applies the words of one directive line. */
static int apply_words(loom_jobspec_t *s, loom_jobspec_dialect_t d, const words_t *ws,
                       const char *where, unsigned flags, loom_err_t *err)
{
    const char *prefix = d == LOOM_JOBSPEC_LOOM ? "#LOOM" : "#SBATCH";
    for (size_t i = 0; i < ws->n; i++) {
        const char *w = ws->w[i];
        if (w[0] != '-' || w[1] == 0) {
            loom_jobspec_warn(s, "%s: %s '%s': not an option (options start with '-'); ignored",
                              where, prefix, w);
            continue;
        }
        const char *eq = w[1] == '-' ? strchr(w, '=') : NULL;
        size_t optlen = eq ? (size_t)(eq - w) : w[1] == '-' ? strlen(w) : 2;
        const loom_jobspec_opt_t *o = loom_jobspec__find(d, w, optlen);
        if (!o) {
            if (d == LOOM_JOBSPEC_LOOM)
                return loom_err_set(err, LOOM_EINVAL,
                                    "%s: #LOOM %.*s: not an option of loom "
                                    "submit",
                                    where, (int)optlen, w);
            if (unsupported(s, ws, &i, w, optlen, where, flags, err))
                return LOOM_EINVAL;
            continue;
        }
        char opt[80];
        snprintf(opt, sizeof opt, "%.*s", (int)(optlen < 70 ? optlen : 70), w);
        const char *value = NULL;
        if (eq)
            value = eq + 1;
        else if (w[1] != '-' && w[2])
            value = w + 2; /* -c4 */
        else if (o->arg == 1) {
            if (i + 1 == ws->n)
                return loom_err_set(err, LOOM_EINVAL, "%s: %s %s: expected a value", where, prefix,
                                    opt);
            value = ws->w[++i];
        }
        int rc = loom_jobspec_set(s, d, opt, value, where, err);
        if (rc)
            return rc == LOOM_ENOTFOUND ? LOOM_EINVAL : rc;
    }
    return LOOM_OK;
}

/* The dialect of a directive line, or -1; *rest is after the prefix. */
static int directive(const char *line, size_t len, size_t *rest)
{
    static const struct {
        const char *p;
        int d;
    } kinds[] = {{"#SBATCH", LOOM_JOBSPEC_SBATCH}, {"#LOOM", LOOM_JOBSPEC_LOOM}};
    for (size_t k = 0; k < 2; k++) {
        size_t n = strlen(kinds[k].p);
        if (len >= n && memcmp(line, kinds[k].p, n) == 0 &&
            (len == n || line[n] == ' ' || line[n] == '\t' || line[n] == '\r')) {
            *rest = n;
            return kinds[k].d;
        }
    }
    return -1;
}

static bool blank_or_comment(const char *line, size_t len)
{
    size_t i = 0;
    while (i < len && isspace((unsigned char)line[i]))
        i++;
    return i == len || line[i] == '#';
}

/* --mem and --mem-per-cpu from one file are an error, as in sbatch; from
 * two sources (file, command line) the later wins. */
static int check_exclusive(const char *file, bool mem, bool mem_per_cpu, loom_err_t *err)
{
    if (mem && mem_per_cpu)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s: --mem and --mem-per-cpu are mutually exclusive (as in sbatch)",
                            file);
    return LOOM_OK;
}

int loom_jobspec_parse_script(loom_jobspec_t *s, const char *text, size_t len, const char *file,
                              unsigned flags, loom_err_t *err)
{
    words_t *ws = malloc(sizeof *ws);
    if (!ws)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    bool in_header = true, mem = false, mem_per_cpu = false;
    size_t lineno = 0, directives = 0;
    int rc = LOOM_OK;
    for (size_t at = 0; at < len && rc == LOOM_OK;) {
        const char *line = text + at;
        const char *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) : len - at;
        at += n + 1;
        lineno++;
        char where[300];
        snprintf(where, sizeof where, "%s:%zu", file, lineno);
        size_t rest;
        int d = directive(line, n, &rest);
        if (d < 0) {
            if (!blank_or_comment(line, n))
                in_header = false;
            continue;
        }
        if (!in_header) {
            loom_jobspec_warn(s,
                              "%s: %.*s after the script's first command: ignored (as sbatch "
                              "does)",
                              where, (int)(rest), line);
            continue;
        }
        if (++directives > LOOM_JOBSPEC_DIRECTIVES_MAX) {
            rc = loom_err_set(err, LOOM_EINVAL, "%s: more than %d directives", where,
                              LOOM_JOBSPEC_DIRECTIVES_MAX);
            break;
        }
        if ((rc = split(line + rest, n - rest, ws, where, err)))
            break;
        if (d == LOOM_JOBSPEC_SBATCH)
            for (size_t i = 0; i < ws->n; i++) {
                mem = mem || strncmp(ws->w[i], "--mem=", 6) == 0 || strcmp(ws->w[i], "--mem") == 0;
                mem_per_cpu = mem_per_cpu || strncmp(ws->w[i], "--mem-per-cpu", 13) == 0;
            }
        rc = apply_words(s, (loom_jobspec_dialect_t)d, ws, where, flags, err);
    }
    free(ws);
    if (rc == LOOM_OK)
        rc = check_exclusive(file, mem, mem_per_cpu, err);
    return rc;
}
