/* Escapers: one per kind of output a template produces. Each turns an
 * arbitrary value into text that the consumer (browser, POSIX shell, YAML
 * parser) reads back as exactly that value and never as syntax. */
#include <string.h>

#include "loom/template.h"

static const char *const names[] = {"html", "shell", "yaml", "none"};

int loom_template_escape_parse(const char *name, loom_template_escape_t *out, loom_err_t *err)
{
    for (int i = 0; i < 4; i++)
        if (name && strcmp(name, names[i]) == 0) {
            *out = (loom_template_escape_t)i;
            return LOOM_OK;
        }
    return loom_err_set(err, LOOM_EINVAL, "escape '%s': expected html, shell, yaml or none",
                        name ? name : "(null)");
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

loom_template_escape_t loom_template_escape_for_path(const char *path)
{
    if (ends_with(path, ".sh.mustache") || ends_with(path, ".bash.mustache"))
        return LOOM_TEMPLATE_ESCAPE_SHELL;
    if (ends_with(path, ".yaml.mustache") || ends_with(path, ".yml.mustache"))
        return LOOM_TEMPLATE_ESCAPE_YAML;
    return LOOM_TEMPLATE_ESCAPE_HTML;
}

const char *loom_template_escape_name(loom_template_escape_t esc)
{
    return (unsigned)esc < 4 ? names[esc] : "unknown";
}

static int html(loom_buf_t *out, const char *s, size_t len)
{
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        const char *rep = NULL;
        switch (s[i]) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        default: continue;
        }
        if (loom_buf_append(out, s + run, i - run) || loom_buf_append_str(out, rep))
            return LOOM_ENOMEM;
        run = i + 1;
    }
    return loom_buf_append(out, s + run, len - run);
}

/* POSIX: inside single quotes nothing is special, and a single quote cannot
 * appear at all; so close the quote, add an escaped quote, reopen. */
static int shell(loom_buf_t *out, const char *s, size_t len)
{
    if (loom_buf_append_char(out, '\''))
        return LOOM_ENOMEM;
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\'')
            continue;
        if (loom_buf_append(out, s + run, i - run) || loom_buf_append_str(out, "'\\''"))
            return LOOM_ENOMEM;
        run = i + 1;
    }
    if (loom_buf_append(out, s + run, len - run) || loom_buf_append_char(out, '\''))
        return LOOM_ENOMEM;
    return LOOM_OK;
}

/* Decodes one UTF-8 sequence at s (well-formed: no overlongs, surrogates or
 * values past U+10FFFF). Returns its length, or 0 if the byte at s does not
 * start one. */
static size_t utf8_decode(const unsigned char *s, size_t len, unsigned *cp)
{
    unsigned c = s[0];
    size_t n;
    unsigned min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if ((c & 0xE0) == 0xC0) {
        n = 2, min = 0x80, c &= 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3, min = 0x800, c &= 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        n = 4, min = 0x10000, c &= 0x07;
    } else {
        return 0;
    }
    if (n > len)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return n;
}

/* YAML 1.2 printable set, less the BOM (which some parsers strip). */
static bool yaml_printable(unsigned c)
{
    return c == 0x09 || c == 0x0A || c == 0x0D || (c >= 0x20 && c <= 0x7E) || c == 0x85 ||
           (c >= 0xA0 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD && c != 0xFEFF) ||
           (c >= 0x10000 && c <= 0x10FFFF);
}

static int yaml(loom_buf_t *out, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    if (loom_buf_append_char(out, '"'))
        return LOOM_ENOMEM;
    size_t i = 0;
    while (i < len) {
        unsigned cp;
        size_t n = utf8_decode(s + i, len - i, &cp);
        int rc = LOOM_OK;
        if (n == 0) {
            /* Not UTF-8: YAML text cannot carry the byte; use U+FFFD. */
            rc = loom_buf_append_str(out, "\\uFFFD");
            n = 1;
        } else {
            switch (cp) {
            case 0: rc = loom_buf_append_str(out, "\\0"); break;
            case '\a': rc = loom_buf_append_str(out, "\\a"); break;
            case '\b': rc = loom_buf_append_str(out, "\\b"); break;
            case '\t': rc = loom_buf_append_str(out, "\\t"); break;
            case '\n': rc = loom_buf_append_str(out, "\\n"); break;
            case '\v': rc = loom_buf_append_str(out, "\\v"); break;
            case '\f': rc = loom_buf_append_str(out, "\\f"); break;
            case '\r': rc = loom_buf_append_str(out, "\\r"); break;
            case 0x1B: rc = loom_buf_append_str(out, "\\e"); break;
            case '"': rc = loom_buf_append_str(out, "\\\""); break;
            case '\\': rc = loom_buf_append_str(out, "\\\\"); break;
            case 0x85: rc = loom_buf_append_str(out, "\\N"); break;
            case 0xA0: rc = loom_buf_append_str(out, "\\_"); break;
            case 0x2028: rc = loom_buf_append_str(out, "\\L"); break;
            case 0x2029: rc = loom_buf_append_str(out, "\\P"); break;
            default:
                if (cp != 0x85 && yaml_printable(cp))
                    rc = loom_buf_append(out, s + i, n);
                else if (cp <= 0xFF)
                    rc = loom_buf_appendf(out, "\\x%02X", cp);
                else if (cp <= 0xFFFF)
                    rc = loom_buf_appendf(out, "\\u%04X", cp);
                else
                    rc = loom_buf_appendf(out, "\\U%08X", cp);
            }
        }
        if (rc)
            return LOOM_ENOMEM;
        i += n;
    }
    return loom_buf_append_char(out, '"');
}

int loom_template_escape_append(loom_buf_t *out, loom_template_escape_t esc, const char *s,
                                size_t len)
{
    switch (esc) {
    case LOOM_TEMPLATE_ESCAPE_HTML: return html(out, s, len);
    case LOOM_TEMPLATE_ESCAPE_SHELL: return shell(out, s, len);
    case LOOM_TEMPLATE_ESCAPE_YAML: return yaml(out, s, len);
    case LOOM_TEMPLATE_ESCAPE_NONE: break;
    }
    return loom_buf_append(out, s, len);
}
