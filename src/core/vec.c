/* core/vec.c — the one growable-array step: make room for `need` elements
 * of `elem` bytes, doubling the capacity, with every multiplication checked
 * for overflow. Callers keep their own pointer, count and capacity. */
#include <stdint.h>
#include <stdlib.h>

#include "loom/core.h"

int loom_vec_reserve(void **p, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return LOOM_OK;
    if (elem == 0)
        return LOOM_EINVAL;
    size_t ncap = *cap ? *cap : (first ? first : 1);
    while (ncap < need)
        ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
    if (ncap > SIZE_MAX / elem)
        return LOOM_ENOMEM;
    void *np = realloc(*p, ncap * elem);
    if (!np)
        return LOOM_ENOMEM;
    *p = np;
    *cap = ncap;
    return LOOM_OK;
}
