/* Text that reaches a terminal: one rule for every field a client sets and
 * a person later reads (loom jobs, loom show, logs). A terminal acts on
 * control characters: C0 and DEL (newlines forge lines, ESC starts escape
 * sequences), C1 (U+009B is a one-character CSI on many terminals, U+0085
 * a newline) and Unicode's bidirectional controls (U+202E reverses what
 * follows, "Trojan Source"). All are refused rather than escaped, so what
 * is stored is what is shown; what reaches a terminal anyway (text stored
 * before the rule, fields outside it) is shown escaped by the CLI
 * (loom_text_escape) and by JSON output (\uXXXX). */
#include "loom/core.h"

/* Decodes the UTF-8 sequence at s[i] (already known valid). */
static unsigned decode(const unsigned char *s, size_t i, size_t *n)
{
    unsigned c = s[i];
    if (c < 0x80) {
        *n = 1;
        return c;
    }
    if (c < 0xe0) {
        *n = 2;
        return ((c & 0x1f) << 6) | (s[i + 1] & 0x3f);
    }
    if (c < 0xf0) {
        *n = 3;
        return ((c & 0x0f) << 12) | ((s[i + 1] & 0x3f) << 6) | (s[i + 2] & 0x3f);
    }
    *n = 4;
    return ((c & 0x07) << 18) | ((s[i + 1] & 0x3f) << 12) | ((s[i + 2] & 0x3f) << 6) |
           (s[i + 3] & 0x3f);
}

static bool unsafe(unsigned cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c || cp == 0x200e ||
           cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* Bytes of the sequence a lead byte starts (0: not a lead byte). */
static size_t seq_len(unsigned char c)
{
    return c < 0x80                ? 1
           : c >= 0xc2 && c < 0xe0 ? 2
           : c >= 0xe0 && c < 0xf0 ? 3
           : c >= 0xf0 && c < 0xf5 ? 4
                                   : 0;
}

size_t loom_text_unsafe_at(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0, n; i < len; i += n) {
        n = seq_len(u[i]);
        if (n == 0 || n > len - i || !loom_utf8_valid(s + i, n))
            return i;
        if (unsafe(decode(u, i, &n)))
            return i;
    }
    return len;
}

size_t loom_text_unsafe_char(const char *s, size_t len, unsigned *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    if (len == 0)
        return 0;
    size_t n = seq_len(u[0]);
    if (n == 0 || n > len || !loom_utf8_valid(s, n)) {
        *cp = u[0];
        return 1; /* a byte that starts no character: shown as itself, escaped */
    }
    unsigned c = decode(u, 0, &n);
    if (!unsafe(c) || c == '\t')
        return 0;
    *cp = c;
    return n;
}

int loom_text_escape(loom_buf_t *out, const char *s, size_t len)
{
    int rc = LOOM_OK;
    for (size_t i = 0; i < len && rc == LOOM_OK;) {
        unsigned cp;
        size_t n = loom_text_unsafe_char(s + i, len - i, &cp);
        if (n == 0) { /* a safe character: copied whole */
            size_t k = seq_len((unsigned char)s[i]);
            rc = loom_buf_append(out, s + i, k);
            i += k;
            continue;
        }
        /* one byte: a C0 control, DEL or a stray byte; else a character */
        rc = loom_buf_appendf(out, n == 1 ? "\\x%02x" : "\\u%04x", cp);
        i += n;
    }
    return rc;
}
