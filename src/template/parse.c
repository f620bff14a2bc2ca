/* Mustache compiler: template text -> tree of nodes (template_int.h).
 *
 * Three passes, each simple on its own:
 *   1. tokenize: split the text into text tokens (each holding at most one
 *      line ending, so lines can be told apart) and tags, following
 *      {{=<% %>=}} delimiter changes as they come;
 *   2. standalone: a line that holds only whitespace and tags that produce
 *      no output of their own (sections, comments, partials, parents,
 *      blocks, delimiter changes) is "standalone" and its whitespace and line
 *      ending vanish; the whitespace before a partial or parent becomes its
 *      indentation, and blocks learn how to reindent their content;
 *   3. build: nest sections/parents/blocks by their closing tags.
 * Every error names NAME:LINE:COLUMN and what was expected. */
#include <stdlib.h>
#include <string.h>

#include "template/template_int.h"

#define MAX_NESTING 256
#define MAX_DELIM   32

typedef struct tok {
    char type;       /* 'T' text; tags: 'v' var, '&' raw, '#', '^', '/', '!', '>', '<', '$', '=' */
    size_t off, len; /* text: its span; tag: its name (trimmed) */
    size_t tag_off;  /* tag: offset of the opening delimiter */
    bool dynamic;
    bool removed;     /* text dropped by the standalone rule */
    size_t keep_from; /* text: bytes before this offset (relative) are dropped */
    char *indent;     /* set by the standalone pass ('>', '<', '$') */
} tok_t;

typedef struct parser {
    const char *src;
    size_t len;
    const char *name;
    loom_err_t *err;
    tok_t *toks;
    size_t n, cap;
    size_t *line_starts;
    size_t nlines;
} parser_t;

static void pos_of(const parser_t *p, size_t off, int *line, int *col)
{
    size_t lo = 0, hi = p->nlines; /* last line start <= off */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (p->line_starts[mid] <= off)
            lo = mid;
        else
            hi = mid;
    }
    *line = (int)lo + 1;
    *col = (int)(off - p->line_starts[lo]) + 1;
}

static int perr(parser_t *p, size_t off, const char *what)
{
    int line, col;
    pos_of(p, off, &line, &col);
    return loom_err_set(p->err, LOOM_EINVAL, "%s:%d:%d: %s", p->name, line, col, what);
}

static int push_tok(parser_t *p, tok_t t)
{
    if (loom_vec_reserve((void **)&p->toks, &p->cap, p->n + 1, sizeof *p->toks, 64))
        return loom_err_set(p->err, LOOM_ENOMEM, "out of memory");
    p->toks[p->n++] = t;
    return LOOM_OK;
}

static int push_text(parser_t *p, size_t off, size_t end)
{
    while (off < end) {
        const char *nl = memchr(p->src + off, '\n', end - off);
        size_t stop = nl ? (size_t)(nl - p->src) + 1 : end;
        tok_t t = {.type = 'T', .off = off, .len = stop - off};
        int rc = push_tok(p, t);
        if (rc)
            return rc;
        off = stop;
    }
    return LOOM_OK;
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static const char *find(const char *hay, size_t haylen, const char *needle, size_t nlen)
{
    if (nlen == 0 || nlen > haylen)
        return NULL;
    return memmem(hay, haylen, needle, nlen);
}

/* Parses "{{=<% %>=}}" content: two delimiters separated by whitespace. */
static int set_delims(parser_t *p, size_t at, size_t off, size_t len, char *otag, size_t *olen,
                      char *ctag, size_t *clen)
{
    const char *s = p->src + off, *e = s + len;
    while (s < e && is_ws(*s))
        s++;
    while (e > s && is_ws(e[-1]))
        e--;
    const char *a = s;
    while (s < e && !is_ws(*s))
        s++;
    size_t al = (size_t)(s - a);
    while (s < e && is_ws(*s))
        s++;
    const char *b = s;
    while (s < e && !is_ws(*s))
        s++;
    size_t bl = (size_t)(s - b);
    if (al == 0 || bl == 0 || s != e || al >= MAX_DELIM || bl >= MAX_DELIM || memchr(a, '=', al) ||
        memchr(b, '=', bl))
        return perr(p, at,
                    "bad delimiter change: expected two delimiters without '=' or whitespace, "
                    "separated by whitespace, as in {{=<% %>=}}");
    memcpy(otag, a, al);
    otag[al] = 0;
    *olen = al;
    memcpy(ctag, b, bl);
    ctag[bl] = 0;
    *clen = bl;
    return LOOM_OK;
}

static int tokenize(parser_t *p)
{
    char otag[MAX_DELIM] = "{{", ctag[MAX_DELIM] = "}}";
    size_t olen = 2, clen = 2, pos = 0;
    int rc;
    while (pos < p->len) {
        const char *o = find(p->src + pos, p->len - pos, otag, olen);
        if (!o)
            return push_text(p, pos, p->len);
        size_t at = (size_t)(o - p->src);
        if ((rc = push_text(p, pos, at)))
            return rc;
        size_t c = at + olen;
        tok_t t = {.tag_off = at};
        char closing[MAX_DELIM + 1];
        size_t closing_len;
        if (c < p->len && (p->src[c] == '{' || p->src[c] == '=')) {
            char sig = p->src[c];
            closing[0] = sig == '{' ? '}' : '=';
            memcpy(closing + 1, ctag, clen);
            closing_len = clen + 1;
            t.type = sig == '{' ? '&' : '=';
            c++;
        } else {
            memcpy(closing, ctag, clen);
            closing_len = clen;
            t.type = 'v';
            if (c < p->len && strchr("&#^/!><$", p->src[c]) && p->src[c]) {
                t.type = p->src[c];
                c++;
            }
        }
        const char *e = find(p->src + c, p->len - c, closing, closing_len);
        if (!e) {
            char msg[128];
            snprintf(msg, sizeof msg, "unclosed tag: expected '%.*s'", (int)closing_len, closing);
            return perr(p, at, msg);
        }
        size_t end = (size_t)(e - p->src);
        pos = end + closing_len;
        if (t.type == '=') {
            if ((rc = set_delims(p, at, c, end - c, otag, &olen, ctag, &clen)))
                return rc;
            if ((rc = push_tok(p, t)))
                return rc;
            continue;
        }
        if (t.type == '!') {
            if ((rc = push_tok(p, t)))
                return rc;
            continue;
        }
        /* Name: trimmed; for partials and parents an optional '*' first. */
        size_t s = c;
        while (s < end && is_ws(p->src[s]))
            s++;
        if ((t.type == '>' || t.type == '<') && s < end && p->src[s] == '*') {
            t.dynamic = true;
            s++;
            while (s < end && is_ws(p->src[s]))
                s++;
        }
        size_t f = end;
        while (f > s && is_ws(p->src[f - 1]))
            f--;
        if (f == s)
            return perr(p, at, "empty tag: expected a name");
        for (size_t i = s; i < f; i++)
            if (is_ws(p->src[i]))
                return perr(p, at, "tag name contains whitespace: expected one name");
        t.off = s;
        t.len = f - s;
        if ((rc = push_tok(p, t)))
            return rc;
    }
    return LOOM_OK;
}

static bool standalone_kind(char type)
{
    return type != 'T' && type != 'v' && type != '&';
}

static bool ws_only(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' &&
            !(s[i] == '\r' && i + 1 < len && s[i + 1] == '\n'))
            return false;
    return true;
}

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

/* Pass 2. A line is tokens [a, b] where only toks[b] may end in '\n'. */
static int standalone(parser_t *p)
{
    size_t a = 0;
    while (a < p->n) {
        size_t b = a;
        while (b < p->n &&
               !(p->toks[b].type == 'T' && p->src[p->toks[b].off + p->toks[b].len - 1] == '\n'))
            b++;
        if (b == p->n)
            b = p->n - 1;
        size_t ntags = 0, first_tag = b + 1;
        bool ok = true;
        for (size_t i = a; i <= b && ok; i++) {
            tok_t *t = &p->toks[i];
            if (t->type == 'T')
                ok = ws_only(p->src + t->off, t->len);
            else if (!standalone_kind(t->type))
                ok = false;
            else if (ntags++ == 0)
                first_tag = i;
        }
        if (ok && ntags > 0) {
            /* Leading whitespace: the text tokens before the first tag (at
             * most one, since text tokens break only at line ends). */
            size_t ind_len = 0, ind_off = 0;
            if (first_tag > a) {
                ind_off = p->toks[a].off;
                ind_len = p->toks[a].len;
            }
            /* Where the next line starts in the source. */
            tok_t *last = &p->toks[b];
            size_t line_end = last->type == 'T' ? last->off + last->len : p->len;
            if (last->type != 'T')
                line_end = p->len; /* a tag ends the text: no next line */
            bool same_line_block =
                ntags == 2 && p->toks[first_tag].type == '$' && first_tag + 1 <= b &&
                p->toks[first_tag + 1].type == '/' &&
                p->toks[first_tag + 1].len == p->toks[first_tag].len &&
                memcmp(p->src + p->toks[first_tag + 1].off, p->src + p->toks[first_tag].off,
                       p->toks[first_tag].len) == 0;
            for (size_t i = a; i <= b; i++) {
                tok_t *t = &p->toks[i];
                if (t->type == 'T') {
                    bool has_nl = p->src[t->off + t->len - 1] == '\n';
                    if (same_line_block && has_nl) {
                        size_t nl = t->len - 1;
                        if (nl > 0 && p->src[t->off + nl - 1] == '\r')
                            nl--;
                        t->keep_from = nl;
                    } else {
                        t->removed = true;
                    }
                } else if (t->type == '>' || t->type == '<') {
                    if (!(t->indent = dupn(p->src + ind_off, ind_len)))
                        return loom_err_set(p->err, LOOM_ENOMEM, "out of memory");
                } else if (t->type == '$') {
                    if (same_line_block) {
                        t->indent = dupn(p->src + ind_off, ind_len);
                    } else {
                        size_t e = line_end;
                        while (e < p->len && (p->src[e] == ' ' || p->src[e] == '\t'))
                            e++;
                        t->indent = dupn(p->src + line_end, e - line_end);
                    }
                    if (!t->indent)
                        return loom_err_set(p->err, LOOM_ENOMEM, "out of memory");
                }
            }
        }
        a = b + 1;
    }
    return LOOM_OK;
}

/* ------------------------------------------------------------- pass 3 */

static void node_free(tnode_t *n)
{
    free(n->text);
    for (size_t i = 0; i < n->nparts; i++)
        free(n->parts[i]);
    free(n->parts);
    free(n->indent);
    loom__template_nodes_free(&n->kids);
}

void loom__template_nodes_free(tnode_list_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        node_free(&l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

static tnode_t *add_node(tnode_list_t *l)
{
    if (loom_vec_reserve((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v, 8))
        return NULL;
    tnode_t *n = &l->v[l->n++];
    memset(n, 0, sizeof *n);
    return n;
}

static int split_name(tnode_t *n)
{
    if (n->len == 1 && n->text[0] == '.')
        return LOOM_OK;
    size_t count = 1;
    for (size_t i = 0; i < n->len; i++)
        count += n->text[i] == '.';
    if (!(n->parts = calloc(count, sizeof *n->parts)))
        return LOOM_ENOMEM;
    const char *s = n->text;
    for (size_t k = 0; k < count; k++) {
        const char *dot = strchr(s, '.');
        size_t l = dot ? (size_t)(dot - s) : strlen(s);
        if (!(n->parts[k] = dupn(s, l)))
            return LOOM_ENOMEM;
        n->nparts++;
        s += l + 1;
    }
    return LOOM_OK;
}

static int build(parser_t *p, size_t *i, tnode_list_t *out, const tok_t *open, int depth)
{
    if (depth > MAX_NESTING)
        return perr(p, open->tag_off, "sections nested too deeply (limit 256)");
    while (*i < p->n) {
        tok_t *t = &p->toks[(*i)++];
        if (t->type == '!' || t->type == '=' || (t->type == 'T' && t->removed))
            continue;
        if (t->type == '/') {
            if (!open) {
                char msg[160];
                snprintf(msg, sizeof msg, "closing tag {{/%.*s}} without an open section",
                         (int)(t->len > 64 ? 64 : t->len), p->src + t->off);
                return perr(p, t->tag_off, msg);
            }
            if (t->len != open->len || memcmp(p->src + t->off, p->src + open->off, t->len) != 0) {
                int line, col;
                pos_of(p, open->tag_off, &line, &col);
                char msg[256];
                snprintf(msg, sizeof msg,
                         "mismatched closing tag: expected {{/%.*s}} (opened at %d:%d), found "
                         "{{/%.*s}}",
                         (int)(open->len > 64 ? 64 : open->len), p->src + open->off, line, col,
                         (int)(t->len > 64 ? 64 : t->len), p->src + t->off);
                return perr(p, t->tag_off, msg);
            }
            return LOOM_OK;
        }
        tnode_t *n = add_node(out);
        if (!n)
            return loom_err_set(p->err, LOOM_ENOMEM, "out of memory");
        n->tname = p->name;
        if (t->type == 'T') {
            n->kind = TN_TEXT;
            n->len = t->len - t->keep_from;
            if (!(n->text = dupn(p->src + t->off + t->keep_from, n->len)))
                return loom_err_set(p->err, LOOM_ENOMEM, "out of memory");
            continue;
        }
        pos_of(p, t->tag_off, &n->line, &n->col);
        n->len = t->len;
        if (!(n->text = dupn(p->src + t->off, t->len)) || split_name(n))
            return loom_err_set(p->err, LOOM_ENOMEM, "out of memory");
        n->dynamic = t->dynamic;
        n->indent = t->indent;
        t->indent = NULL;
        switch (t->type) {
        case 'v': n->kind = TN_VAR; break;
        case '&':
            n->kind = TN_VAR;
            n->raw = true;
            break;
        case '>': n->kind = TN_PARTIAL; break;
        case '#': n->kind = TN_SECTION; break;
        case '^': n->kind = TN_INVERTED; break;
        case '<': n->kind = TN_PARENT; break;
        case '$': n->kind = TN_BLOCK; break;
        default: return loom_err_set(p->err, LOOM_EINTERNAL, "unexpected token");
        }
        if (n->kind >= TN_SECTION && n->kind != TN_PARTIAL) {
            size_t idx = (size_t)(n - out->v);
            tnode_list_t kids = {0};
            int rc = build(p, i, &kids, t, depth + 1);
            out->v[idx].kids = kids; /* out->v may not move: kids is separate */
            if (rc)
                return rc;
        }
    }
    if (open) {
        char msg[160];
        snprintf(msg, sizeof msg, "unclosed section: expected {{/%.*s}} before the end",
                 (int)(open->len > 64 ? 64 : open->len), p->src + open->off);
        return perr(p, open->tag_off, msg);
    }
    return LOOM_OK;
}

int loom_template_compile(const char *text, size_t len, const char *name, loom_template_t **out,
                          loom_err_t *err)
{
    if (!name)
        name = "<string>";
    parser_t p = {.src = text, .len = len, .err = err};
    loom_template_t *t = calloc(1, sizeof *t);
    if (!t || !(t->name = strdup(name))) {
        free(t);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    p.name = t->name;
    int rc = LOOM_OK;
    size_t nl = 1;
    for (size_t i = 0; i < len; i++)
        nl += text[i] == '\n';
    if (!(p.line_starts = malloc(nl * sizeof *p.line_starts))) {
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
        goto done;
    }
    p.line_starts[p.nlines++] = 0;
    for (size_t i = 0; i < len; i++)
        if (text[i] == '\n')
            p.line_starts[p.nlines++] = i + 1;
    if ((rc = tokenize(&p)) || (rc = standalone(&p)))
        goto done;
    size_t i = 0;
    rc = build(&p, &i, &t->nodes, NULL, 0);
done:
    for (size_t k = 0; k < p.n; k++)
        free(p.toks[k].indent);
    free(p.toks);
    free(p.line_starts);
    if (rc) {
        loom_template_free(t);
        return rc;
    }
    *out = t;
    return LOOM_OK;
}

int loom_template_load_file(const char *path, loom_template_t **out, loom_err_t *err)
{
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = loom_buf_read_file(&b, path, err);
    if (rc == LOOM_OK)
        rc = loom_template_compile(b.data ? b.data : "", b.len, path, out, err);
    loom_buf_free(&b);
    return rc;
}

void loom_template_free(loom_template_t *t)
{
    if (!t)
        return;
    loom__template_nodes_free(&t->nodes);
    free(t->name);
    free(t);
}

const char *loom_template_name(const loom_template_t *t)
{
    return t->name;
}
