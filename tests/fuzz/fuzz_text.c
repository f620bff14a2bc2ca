/* Fuzz the terminal text rule (loom_text_unsafe_at, issue 18 finding 14):
 * no crash or UB; the offset is within the text; text it accepts is valid
 * UTF-8 whose every byte is printable or part of a multi-byte sequence,
 * and none of its code points is a C1 or bidirectional control. */
#include <stdlib.h>
#include <string.h>

#include "loom/core.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    const char *s = (const char *)data;
    size_t at = loom_text_unsafe_at(s, size);
    if (at > size)
        abort();
    if (at < size)
        return 0;
    if (!loom_utf8_valid(s, size))
        abort();
    for (size_t i = 0; i < size; i++) {
        if (data[i] < 0x20 || data[i] == 0x7f)
            abort();
        if (data[i] == 0xc2 && i + 1 < size && data[i + 1] >= 0x80 && data[i + 1] <= 0x9f)
            abort(); /* U+0080..U+009F */
        if (data[i] == 0xe2 && i + 2 < size && data[i + 1] == 0x80 && data[i + 2] >= 0xa8 &&
            data[i + 2] <= 0xae)
            abort(); /* U+2028..U+202E */
    }
    return 0;
}
