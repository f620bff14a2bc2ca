/* core/map.c — loom_map_t: a hash map from 64-bit integers or byte strings
 * to 64-bit values. Open addressing with linear probing over a power-of-two
 * array of slots; a removed entry leaves a tombstone so that the probes
 * running past it still find what lies beyond. Entries and tombstones
 * together stay at most half the slots, so a probe always meets an empty
 * slot. A rehash (to grow, or to sweep tombstones away) leaves the table at
 * most a quarter full, so that a steady mix of puts and removals rehashes
 * once per many calls, never at every one.
 *
 * Out of memory changes nothing: a string key is copied before the table
 * grows, and the copy is freed again if growing fails; the new slot array
 * is filled before the old one is let go. */
#include <stdlib.h>
#include <string.h>

#include "loom/core.h"

#define MAP_MIN_CAP 16
#define H_EMPTY     0
#define H_TOMB      1

static uint64_t fix(uint64_t h) /* 0 and 1 mark empty and removed slots */
{
    return h < 2 ? h + 2 : h;
}

static uint64_t fmix64(uint64_t x) /* MurmurHash3's finalizer */
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

static uint64_t hash_u64(uint64_t key)
{
    return fix(fmix64(key));
}

static uint64_t hash_bytes(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint64_t h = UINT64_C(1469598103934665603); /* FNV-1a, then mixed */
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * UINT64_C(1099511628211);
    return fix(fmix64(h ^ len));
}

typedef struct key {
    uint64_t hash;
    uint64_t u;
    const void *str;
    size_t len;
} mkey_t;

static bool same(const loom_map_t *m, const loom_map_slot_t *s, const mkey_t *k)
{
    if (s->hash != k->hash)
        return false;
    if (m->kind == LOOM_MAP_U64)
        return s->key.u == k->u;
    return s->len == k->len && (k->len == 0 || memcmp(s->key.str, k->str, k->len) == 0);
}

/* The slot holding k (*found), or the one where it would go: the first
 * tombstone on its probe, else the empty slot that ends it. m->cap > 0. */
static size_t probe(const loom_map_t *m, const mkey_t *k, bool *found)
{
    size_t mask = m->cap - 1, at = SIZE_MAX;
    for (size_t i = (size_t)k->hash & mask;; i = (i + 1) & mask) {
        const loom_map_slot_t *s = &m->slot[i];
        if (s->hash == H_EMPTY) {
            *found = false;
            return at != SIZE_MAX ? at : i;
        }
        if (s->hash == H_TOMB) {
            if (at == SIZE_MAX)
                at = i;
        } else if (same(m, s, k)) {
            *found = true;
            return i;
        }
    }
}

/* Moves the entries into a new array of cap slots (no tombstones). */
static int rehash(loom_map_t *m, size_t cap)
{
    if (cap > SIZE_MAX / sizeof(loom_map_slot_t))
        return LOOM_ENOMEM;
    loom_map_slot_t *slot = calloc(cap, sizeof *slot);
    if (!slot)
        return LOOM_ENOMEM;
    for (size_t k = 0; k < m->cap; k++) {
        const loom_map_slot_t *s = &m->slot[k];
        if (s->hash < 2)
            continue;
        size_t i = (size_t)s->hash & (cap - 1);
        while (slot[i].hash != H_EMPTY)
            i = (i + 1) & (cap - 1);
        slot[i] = *s;
    }
    free(m->slot);
    m->slot = slot;
    m->cap = cap;
    m->used = m->n;
    return LOOM_OK;
}

/* Rehashes so that `want` entries fit at most a quarter full (never
 * smaller than today). */
static int grow_for(loom_map_t *m, size_t want)
{
    size_t cap = m->cap > MAP_MIN_CAP ? m->cap : MAP_MIN_CAP;
    if (want > SIZE_MAX / 4)
        return LOOM_ENOMEM;
    while (cap < want * 4) {
        if (cap > SIZE_MAX / 2)
            return LOOM_ENOMEM;
        cap *= 2;
    }
    return rehash(m, cap);
}

void loom_map_init(loom_map_t *m, loom_map_kind_t kind)
{
    *m = (loom_map_t)LOOM_MAP_INIT(kind);
}

void loom_map_free(loom_map_t *m)
{
    for (size_t i = 0; m->kind == LOOM_MAP_STR && i < m->cap; i++)
        if (m->slot[i].hash >= 2)
            free(m->slot[i].key.str);
    free(m->slot);
    loom_map_init(m, m->kind);
}

int loom_map_reserve(loom_map_t *m, size_t n)
{
    if (n <= m->n)
        return LOOM_OK;
    size_t more = n - m->n;
    if (m->used <= SIZE_MAX / 2 - more && (m->used + more) * 2 <= m->cap)
        return LOOM_OK;
    if (n > SIZE_MAX / 2)
        return LOOM_ENOMEM;
    size_t cap = m->cap > MAP_MIN_CAP ? m->cap : MAP_MIN_CAP;
    while (cap < n * 2) {
        if (cap > SIZE_MAX / 2)
            return LOOM_ENOMEM;
        cap *= 2;
    }
    return rehash(m, cap);
}

static int put(loom_map_t *m, const mkey_t *k, uint64_t val)
{
    bool found = false;
    size_t i;
    if (m->cap) {
        i = probe(m, k, &found);
        if (found) {
            m->slot[i].val = val;
            return 0;
        }
    }
    char *copy = NULL;
    if (m->kind == LOOM_MAP_STR) {
        if (!(copy = malloc(k->len + 1)))
            return LOOM_ENOMEM;
        if (k->len)
            memcpy(copy, k->str, k->len);
        copy[k->len] = '\0';
    }
    if ((m->used + 1) * 2 > m->cap && grow_for(m, m->n + 1) != LOOM_OK) {
        free(copy);
        return LOOM_ENOMEM;
    }
    i = probe(m, k, &found);
    loom_map_slot_t *s = &m->slot[i];
    if (s->hash == H_EMPTY)
        m->used++;
    *s = (loom_map_slot_t){.hash = k->hash, .val = val, .len = k->len};
    if (copy)
        s->key.str = copy;
    else
        s->key.u = k->u;
    m->n++;
    return 1;
}

static const loom_map_slot_t *get(const loom_map_t *m, const mkey_t *k)
{
    if (!m->n)
        return NULL;
    bool found;
    size_t i = probe(m, k, &found);
    return found ? &m->slot[i] : NULL;
}

static bool del(loom_map_t *m, const mkey_t *k)
{
    if (!m->n)
        return false;
    bool found;
    size_t i = probe(m, k, &found);
    if (!found)
        return false;
    if (m->kind == LOOM_MAP_STR)
        free(m->slot[i].key.str);
    m->slot[i] = (loom_map_slot_t){.hash = H_TOMB};
    m->n--;
    return true;
}

static mkey_t ukey(uint64_t key)
{
    return (mkey_t){.hash = hash_u64(key), .u = key};
}

static mkey_t bkey(const void *key, size_t len)
{
    return (mkey_t){.hash = hash_bytes(key, len), .str = key, .len = len};
}

int loom_map_put_u64(loom_map_t *m, uint64_t key, uint64_t val)
{
    if (m->kind != LOOM_MAP_U64)
        return LOOM_EINVAL;
    mkey_t k = ukey(key);
    return put(m, &k, val);
}

int loom_map_put_bytes(loom_map_t *m, const void *key, size_t len, uint64_t val)
{
    if (m->kind != LOOM_MAP_STR || (!key && len))
        return LOOM_EINVAL;
    if (len == SIZE_MAX) /* no room for the copy's NUL: refused before a byte is read */
        return LOOM_ENOMEM;
    mkey_t k = bkey(key, len);
    return put(m, &k, val);
}

int loom_map_put_str(loom_map_t *m, const char *key, uint64_t val)
{
    return key ? loom_map_put_bytes(m, key, strlen(key), val) : LOOM_EINVAL;
}

bool loom_map_get_u64(const loom_map_t *m, uint64_t key, uint64_t *val)
{
    if (m->kind != LOOM_MAP_U64)
        return false;
    mkey_t k = ukey(key);
    const loom_map_slot_t *s = get(m, &k);
    if (s && val)
        *val = s->val;
    return s != NULL;
}

bool loom_map_get_bytes(const loom_map_t *m, const void *key, size_t len, uint64_t *val)
{
    if (m->kind != LOOM_MAP_STR || (!key && len))
        return false;
    mkey_t k = bkey(key, len);
    const loom_map_slot_t *s = get(m, &k);
    if (s && val)
        *val = s->val;
    return s != NULL;
}

bool loom_map_get_str(const loom_map_t *m, const char *key, uint64_t *val)
{
    return key && loom_map_get_bytes(m, key, strlen(key), val);
}

bool loom_map_del_u64(loom_map_t *m, uint64_t key)
{
    if (m->kind != LOOM_MAP_U64)
        return false;
    mkey_t k = ukey(key);
    return del(m, &k);
}

bool loom_map_del_bytes(loom_map_t *m, const void *key, size_t len)
{
    if (m->kind != LOOM_MAP_STR || (!key && len))
        return false;
    mkey_t k = bkey(key, len);
    return del(m, &k);
}

bool loom_map_del_str(loom_map_t *m, const char *key)
{
    return key && loom_map_del_bytes(m, key, strlen(key));
}

bool loom_map_next(const loom_map_t *m, size_t *it, loom_map_entry_t *e)
{
    for (size_t i = *it; i < m->cap; i++) {
        const loom_map_slot_t *s = &m->slot[i];
        if (s->hash < 2)
            continue;
        bool str = m->kind == LOOM_MAP_STR;
        *e = (loom_map_entry_t){.key = str ? 0 : s->key.u,
                                .str = str ? s->key.str : NULL,
                                .len = s->len,
                                .val = s->val};
        *it = i + 1;
        return true;
    }
    *it = m->cap;
    return false;
}
