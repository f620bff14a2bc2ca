/* loom_strset_t: a set of borrowed strings by open addressing (linear
 * probing, FNV-1a, kept at most half full). For duplicate checks over
 * client input, where comparing every pair is quadratic (issue 30: 65,536
 * tensor names of one prefix took 29 s). */
#include <stdlib.h>
#include <string.h>

#include "loom/core.h"

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The slot holding key, or the empty one where it goes; *compares counts
 * the string comparisons made. */
static const char **find(const char **slot, size_t cap, const char *key, size_t *compares)
{
    size_t i = (size_t)fnv1a(key) & (cap - 1);
    while (slot[i] && (++*compares, strcmp(slot[i], key) != 0))
        i = (i + 1) & (cap - 1);
    return &slot[i];
}

static int grow(loom_strset_t *s)
{
    size_t cap = s->cap ? s->cap * 2 : 64;
    const char **slot = calloc(cap, sizeof *slot);
    if (!slot)
        return LOOM_ENOMEM;
    for (size_t i = 0; i < s->cap; i++)
        if (s->slot[i])
            *find(slot, cap, s->slot[i], &s->compares) = s->slot[i];
    free(s->slot);
    s->slot = slot;
    s->cap = cap;
    return LOOM_OK;
}

int loom_strset_add(loom_strset_t *s, const char *key)
{
    if ((s->n + 1) * 2 > s->cap && grow(s) != LOOM_OK)
        return LOOM_ENOMEM;
    const char **at = find(s->slot, s->cap, key, &s->compares);
    if (*at)
        return 0;
    *at = key;
    s->n++;
    return 1;
}

void loom_strset_free(loom_strset_t *s)
{
    free(s->slot);
    memset(s, 0, sizeof *s);
}
