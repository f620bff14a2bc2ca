/* Text that reaches a terminal: one rule for every field a client sets and
 * a person later reads (loom jobs, loom show, logs). A terminal acts on
 * control characters: C0 and DEL (newlines forge lines, ESC starts escape
 * sequences), C1 (U+009B is a one-character CSI on many terminals, U+0085
 * a newline) and Unicode's bidirectional controls (U+202E reverses what
 * follows, "Trojan Source"). All are refused rather than escaped, so what
 * is stored is what is shown. */
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
