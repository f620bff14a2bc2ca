/* A model of glibc's malloc (main arena, large chunks) that counts fresh
 * pages: the pages a process faults in because the allocator handed out
 * memory the kernel had not mapped yet. On a CPU, PyTorch allocates every
 * tensor with posix_memalign and frees it when the last reference goes,
 * so a training step's fresh pages decide much of its system time (each
 * costs a fault and the zeroing of 4 KiB; on a virtual machine much more).
 *
 * The policy follows glibc's malloc/malloc.c (2.36) and mallopt(3):
 *
 *   chunk      request + 8 bytes of header, rounded up to 16, at least 32
 *   malloc     the smallest free chunk that fits (split when >= 32 bytes
 *              remain); else a request >= the mmap threshold gets its own
 *              mapping (all fresh); else the top of the heap is used, and
 *              grown with brk by what is missing plus M_TOP_PAD (128 KiB)
 *   free       a mapping is unmapped, and if it was larger than the mmap
 *              threshold and at most 32 MiB (DEFAULT_MMAP_THRESHOLD_MAX) the
 *              threshold rises to its size and the trim threshold to twice
 *              that; a heap chunk merges with free neighbours and the top;
 *              if the merged chunk is >= 64 KiB (FASTBIN_CONSOLIDATION_
 *              THRESHOLD) and the top is >= the trim threshold, the heap
 *              shrinks to top pad (systrim), and those pages are fresh again
 *   fresh      a chunk is written when allocated (a tensor is filled by its
 *              operator); heap pages past the highest page touched since
 *              the last trim are fresh
 *
 *   tunables   GLIBC_TUNABLES (mallopt's M_MMAP_THRESHOLD, M_TRIM_THRESHOLD,
 *              M_TOP_PAD, M_MMAP_MAX) replace those defaults; setting any of
 *              them turns the dynamic threshold off (mp_.no_dyn_threshold);
 *              mmap_max 0 never maps (every block from the heap), a trim
 *              threshold above any heap never trims: the heap keeps its
 *              high-water mark, as PyTorch's CUDA caching allocator does
 *
 *   tcache     a freed chunk of up to 1040 bytes goes to its size's cache
 *              (7 at most) and stays in use for the heap; malloc of that
 *              size takes the last one back
 *
 * Not modelled: fast bins (small chunks are coalesced at once here), other
 * threads' arenas, the Python interpreter's own allocations (a small block
 * left at the top of the heap stops a trim in a real process), alignment
 * padding.
 */
#include <stdlib.h>
#include <string.h>

#include "estimate/est.h"

#define PAGE         4096u
#define MINSIZE      32u
#define MMAP_MAX     (32u << 20)
#define CONSOLIDATE  (64u << 10)
#define TCACHE_MAX   1040u /* largest chunk tcache holds (request 1032) */
#define TCACHE_COUNT 7u
#define NTC          (TCACHE_MAX / 16 + 1)

typedef struct chunk {
    uint64_t addr, size;
    bool free;
} chunk_t;

typedef struct hentry {
    uint64_t addr, size; /* size: chunk size; 0 = unused handle */
    bool mapped;
} hentry_t;

typedef struct tcache {
    uint64_t addr[TCACHE_COUNT];
    unsigned n;
} tcache_t;

struct loom_est_heap {
    chunk_t *c; /* heap chunks below the top, by address */
    size_t n, cap;
    hentry_t *h; /* handles */
    size_t nh, caph;
    uint64_t top, end, touched; /* top chunk start, heap end (brk), touched up to */
    uint64_t mmap_thr, trim_thr, top_pad, mmap_max, nmapped;
    bool no_dyn; /* a tunable was set: thresholds stay as set */
    uint64_t fresh, mapped_live;
    tcache_t tc[NTC]; /* per 16-byte size class: freed small chunks kept in use */
    bool oom;
};

static uint64_t page_up(uint64_t x)
{
    return (x + PAGE - 1) / PAGE * PAGE;
}

void loom_est_malloc_cfg_default(loom_est_malloc_cfg_t *cfg)
{
    *cfg = (loom_est_malloc_cfg_t){.mmap_threshold = 128u << 10,
                                   .trim_threshold = 128u << 10,
                                   .top_pad = 128u << 10,
                                   .mmap_max = 65536,
                                   .fixed = false};
}

static const char *const tunable_names[] = {"glibc.malloc.mmap_threshold",
                                            "glibc.malloc.trim_threshold", "glibc.malloc.top_pad",
                                            "glibc.malloc.mmap_max"};

int loom_est_malloc_cfg_parse(const char *tunables, const char *where, loom_est_malloc_cfg_t *out,
                              loom_err_t *err)
{
    loom_est_malloc_cfg_default(out);
    const char *p = tunables;
    while (*p) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t nlen = eq ? (size_t)(eq - p) : len;
        int which = -1;
        for (int i = 0; i < 4; i++)
            if (strlen(tunable_names[i]) == nlen && memcmp(p, tunable_names[i], nlen) == 0)
                which = i;
        if (which < 0 || !eq)
            return loom_err_set(err, LOOM_EINVAL,
                                "%s: '%.*s': expected NAME=VALUE with NAME one of "
                                "glibc.malloc.mmap_threshold, glibc.malloc.trim_threshold, "
                                "glibc.malloc.top_pad, glibc.malloc.mmap_max",
                                where, (int)(len > 80 ? 80 : len), p);
        /* the value: decimal or 0x hex, as glibc's tunables read it */
        const char *v = eq + 1, *ve = p + len;
        int base = 10;
        if (ve - v > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
            base = 16;
            v += 2;
        }
        uint64_t x = 0;
        bool ok = v < ve;
        for (const char *q = v; ok && q < ve; q++) {
            int dig = *q >= '0' && *q <= '9'                 ? *q - '0'
                      : base == 16 && *q >= 'a' && *q <= 'f' ? *q - 'a' + 10
                      : base == 16 && *q >= 'A' && *q <= 'F' ? *q - 'A' + 10
                                                             : -1;
            if (dig < 0 || x > (UINT64_MAX - (uint64_t)dig) / (uint64_t)base)
                ok = false;
            else
                x = x * (uint64_t)base + (uint64_t)dig;
        }
        if (!ok)
            return loom_err_set(err, LOOM_EINVAL,
                                "%s: %s: value '%.*s' is not a decimal or 0x hex number of 64 bits",
                                where, tunable_names[which],
                                (int)(ve - eq - 1 > 40 ? 40 : ve - eq - 1), eq + 1);
        /* glibc ignores an mmap threshold above HEAP_MAX_SIZE / 2 */
        if (which == 0 && x > MMAP_MAX)
            return loom_err_set(err, LOOM_EINVAL,
                                "%s: glibc.malloc.mmap_threshold %llu is above glibc's maximum "
                                "33554432 (32 MiB; glibc would ignore it)",
                                where, (unsigned long long)x);
        if (which == 0)
            out->mmap_threshold = x;
        else if (which == 1)
            out->trim_threshold = x;
        else if (which == 2)
            out->top_pad = x;
        else
            out->mmap_max = x;
        out->fixed = true;
        p += len;
        if (*p == ':')
            p++;
    }
    return LOOM_OK;
}

loom_est_heap_t *loom_est_heap_new_cfg(const loom_est_malloc_cfg_t *cfg)
{
    loom_est_malloc_cfg_t def;
    if (!cfg || !cfg->fixed) { /* nothing set (or a zeroed struct): the defaults */
        loom_est_malloc_cfg_default(&def);
        cfg = &def;
    }
    loom_est_heap_t *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->mmap_thr = cfg->mmap_threshold;
    h->trim_thr = cfg->trim_threshold;
    /* the model's addresses are 64-bit: keep a pad that cannot overflow them */
    h->top_pad = cfg->top_pad > (1ull << 48) ? 1ull << 48 : cfg->top_pad;
    h->mmap_max = cfg->mmap_max;
    h->no_dyn = cfg->fixed;
    h->nh = 1; /* handle 0 means none */
    return h;
}

loom_est_heap_t *loom_est_heap_new(void)
{
    return loom_est_heap_new_cfg(NULL);
}

void loom_est_heap_free_all(loom_est_heap_t *h)
{
    if (!h)
        return;
    free(h->c);
    free(h->h);
    free(h);
}

uint64_t loom_est_heap_fresh_bytes(const loom_est_heap_t *h)
{
    return h->fresh;
}

uint64_t loom_est_heap_mmap_threshold(const loom_est_heap_t *h)
{
    return h->mmap_thr;
}

uint64_t loom_est_heap_size(const loom_est_heap_t *h)
{
    return h->end;
}

static size_t find(const loom_est_heap_t *h, uint64_t addr)
{
    size_t lo = 0, hi = h->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (h->c[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool insert(loom_est_heap_t *h, size_t at, chunk_t ch)
{
    if (loom_vec_reserve((void **)&h->c, &h->cap, h->n + 1, sizeof *h->c, 64))
        return false;
    memmove(&h->c[at + 1], &h->c[at], (h->n - at) * sizeof *h->c);
    h->c[at] = ch;
    h->n++;
    return true;
}

static void erase(loom_est_heap_t *h, size_t at)
{
    memmove(&h->c[at], &h->c[at + 1], (h->n - at - 1) * sizeof *h->c);
    h->n--;
}

static uint64_t new_handle(loom_est_heap_t *h, uint64_t addr, uint64_t size, bool mapped)
{
    if (loom_vec_reserve((void **)&h->h, &h->caph, h->nh + 1, sizeof *h->h, 256)) {
        h->oom = true;
        return 0;
    }
    h->h[h->nh] = (hentry_t){addr, size, mapped};
    return h->nh++;
}

static void touch(loom_est_heap_t *h, uint64_t a, uint64_t b)
{
    if (b <= h->touched)
        return;
    uint64_t from = a > h->touched ? a : h->touched;
    /* whole pages: the first write to a page faults it in */
    uint64_t p0 = from / PAGE * PAGE, p1 = page_up(b);
    uint64_t t0 = page_up(h->touched);
    if (p0 < t0)
        p0 = t0;
    if (p1 > p0)
        h->fresh += p1 - p0;
    h->touched = b;
}

uint64_t loom_est_heap_malloc(loom_est_heap_t *h, uint64_t bytes)
{
    uint64_t nb = (bytes + 8 + 15) / 16 * 16;
    if (nb < MINSIZE)
        nb = MINSIZE;
    if (nb <= TCACHE_MAX && h->tc[nb / 16].n) /* tcache: a chunk freed earlier, as is */
        return new_handle(h, h->tc[nb / 16].addr[--h->tc[nb / 16].n], nb, false);
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < h->n; i++)
        if (h->c[i].free && h->c[i].size >= nb &&
            (best == SIZE_MAX || h->c[i].size < h->c[best].size))
            best = i;
    if (best != SIZE_MAX) {
        chunk_t *ch = &h->c[best];
        uint64_t addr = ch->addr, rest = ch->size - nb;
        if (rest >= MINSIZE) {
            ch->size = nb;
            ch->free = false;
            if (!insert(h, best + 1, (chunk_t){addr + nb, rest, true})) {
                h->oom = true;
                return 0;
            }
        } else {
            ch->free = false;
            nb = ch->size;
        }
        return new_handle(h, addr, nb, false);
    }
    if (nb >= h->mmap_thr && h->nmapped < h->mmap_max) {
        uint64_t sz = page_up(nb + 8);
        h->fresh += sz;
        h->mapped_live += sz;
        h->nmapped++;
        return new_handle(h, 0, sz, true);
    }
    if (h->end - h->top < nb + MINSIZE)
        h->end += page_up(nb + MINSIZE + h->top_pad - (h->end - h->top));
    uint64_t addr = h->top;
    if (!insert(h, h->n, (chunk_t){addr, nb, false})) {
        h->oom = true;
        return 0;
    }
    h->top += nb;
    touch(h, addr, addr + nb);
    return new_handle(h, addr, nb, false);
}

static void maybe_trim(loom_est_heap_t *h, uint64_t merged)
{
    if (merged < CONSOLIDATE || h->end - h->top < h->trim_thr)
        return;
    uint64_t top_size = h->end - h->top;
    if (top_size <= h->top_pad + MINSIZE + 1)
        return;
    uint64_t extra = (top_size - h->top_pad - MINSIZE - 1) / PAGE * PAGE;
    if (!extra)
        return;
    h->end -= extra;
    if (h->touched > h->end)
        h->touched = h->end;
}

void loom_est_heap_release(loom_est_heap_t *h, uint64_t handle)
{
    if (!handle || handle >= h->nh || h->h[handle].size == 0) {
        if (handle && handle < h->nh)
            h->h[handle].size = 0;
        return;
    }
    hentry_t e = h->h[handle];
    h->h[handle].size = 0;
    if (!e.mapped && e.size <= TCACHE_MAX && h->tc[e.size / 16].n < TCACHE_COUNT) {
        tcache_t *t = &h->tc[e.size / 16];
        t->addr[t->n++] = e.addr; /* stays in use for the heap */
        return;
    }
    if (e.mapped) {
        h->mapped_live -= e.size;
        h->nmapped--;
        if (!h->no_dyn && e.size > h->mmap_thr && e.size <= MMAP_MAX) {
            h->mmap_thr = e.size;
            h->trim_thr = 2 * e.size;
        }
        return;
    }
    size_t i = find(h, e.addr);
    if (i >= h->n || h->c[i].addr != e.addr)
        return; /* not ours: ignore (cannot happen with valid handles) */
    h->c[i].free = true;
    if (i + 1 < h->n && h->c[i + 1].free) {
        h->c[i].size += h->c[i + 1].size;
        erase(h, i + 1);
    }
    if (i > 0 && h->c[i - 1].free) {
        h->c[i - 1].size += h->c[i].size;
        erase(h, i);
        i--;
    }
    uint64_t merged = h->c[i].size;
    if (i == h->n - 1 && h->c[i].addr + h->c[i].size == h->top) {
        h->top = h->c[i].addr;
        erase(h, i);
        merged = h->end - h->top;
    }
    maybe_trim(h, merged);
}

bool loom_est_heap_failed(const loom_est_heap_t *h)
{
    return h->oom;
}
