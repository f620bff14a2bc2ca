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
#define TOP_PAD      (128u << 10)
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
    uint64_t mmap_thr, trim_thr;
    uint64_t fresh, mapped_live;
    tcache_t tc[NTC]; /* per 16-byte size class: freed small chunks kept in use */
    bool oom;
};

static uint64_t page_up(uint64_t x)
{
    return (x + PAGE - 1) / PAGE * PAGE;
}

loom_est_heap_t *loom_est_heap_new(void)
{
    loom_est_heap_t *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->mmap_thr = 128u << 10;
    h->trim_thr = 128u << 10;
    h->nh = 1; /* handle 0 means none */
    return h;
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
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        chunk_t *nc = realloc(h->c, cap * sizeof *nc);
        if (!nc)
            return false;
        h->c = nc;
        h->cap = cap;
    }
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
    if (h->nh >= h->caph) {
        size_t cap = h->caph ? 2 * h->caph : 256;
        while (cap <= h->nh)
            cap *= 2;
        hentry_t *nh = realloc(h->h, cap * sizeof *nh);
        if (!nh) {
            h->oom = true;
            return 0;
        }
        h->h = nh;
        h->caph = cap;
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
    if (nb >= h->mmap_thr) {
        uint64_t sz = page_up(nb + 8);
        h->fresh += sz;
        h->mapped_live += sz;
        return new_handle(h, 0, sz, true);
    }
    if (h->end - h->top < nb + MINSIZE)
        h->end += page_up(nb + MINSIZE + TOP_PAD - (h->end - h->top));
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
    if (top_size <= TOP_PAD + MINSIZE + 1)
        return;
    uint64_t extra = (top_size - TOP_PAD - MINSIZE - 1) / PAGE * PAGE;
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
        if (e.size > h->mmap_thr && e.size <= MMAP_MAX) {
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
