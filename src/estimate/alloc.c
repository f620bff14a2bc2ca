/* A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp
 * as of PyTorch 1.13; the constants are documented in the PyTorch "CUDA
 * semantics / memory management" notes):
 *
 *   kMinBlockSize  512 B   every request rounds up to a multiple of 512
 *   kSmallSize     1 MiB   requests <= 1 MiB use the small pool
 *   kSmallBuffer   2 MiB   a small-pool cache miss reserves a 2 MiB segment
 *   kMinLargeAlloc 10 MiB  large requests < 10 MiB reserve a 20 MiB segment
 *   kLargeBuffer   20 MiB
 *   kRoundLarge    2 MiB   larger requests reserve their size rounded to 2 MiB
 *
 * A request is served best-fit from the free blocks of its pool (smallest
 * block that fits; ties broken by address); the block is split when the
 * remainder is >= 512 B (small pool) or > 1 MiB (large pool). Freed blocks
 * stay reserved and merge with free neighbours of the same segment. Nothing
 * is returned to the driver (no empty_cache, no OOM retry), so reserved
 * memory only grows: its peak is what the job needs from the GPU.
 *
 * LOOM_EST_ALLOC_MALLOC models a CPU run: bytes are counted as requested
 * (the tracker in src/estimate/alloctrack measures malloc_usable_size,
 * which adds at most a few bytes per block), reserved == allocated.
 */
#include <stdlib.h>
#include <string.h>

#include "estimate/est.h"

#define MIN_BLOCK       512ull
#define SMALL_SIZE      (1ull << 20)
#define SMALL_BUFFER    (2ull << 20)
#define MIN_LARGE_ALLOC (10ull << 20)
#define LARGE_BUFFER    (20ull << 20)
#define ROUND_LARGE     (2ull << 20)

typedef struct block {
    uint64_t seg, off, size;
    bool used, small;
    uint64_t handle;
} block_t;

struct loom_est_alloc {
    loom_est_alloc_kind_t kind;
    block_t *b; /* kept sorted by (seg, off) */
    size_t nb, cap;
    uint64_t nseg, next_handle;
    uint64_t allocated, reserved, peak_allocated, peak_reserved;
};

uint64_t loom_est_alloc_round(uint64_t bytes)
{
    if (bytes < MIN_BLOCK)
        return MIN_BLOCK;
    return (bytes + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
}

uint64_t loom_est_alloc_segment_size(uint64_t bytes)
{
    if (bytes <= SMALL_SIZE)
        return SMALL_BUFFER;
    if (bytes < MIN_LARGE_ALLOC)
        return LARGE_BUFFER;
    return (bytes + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
}

loom_est_alloc_t *loom_est_alloc_new(loom_est_alloc_kind_t kind)
{
    loom_est_alloc_t *a = calloc(1, sizeof *a);
    if (a)
        a->kind = kind;
    return a;
}

void loom_est_alloc_free_all(loom_est_alloc_t *a)
{
    if (!a)
        return;
    free(a->b);
    free(a);
}

static int insert_at(loom_est_alloc_t *a, size_t pos, block_t blk)
{
    if (loom_vec_reserve((void **)&a->b, &a->cap, a->nb + 1, sizeof *a->b, 64))
        return -1;
    memmove(&a->b[pos + 1], &a->b[pos], (a->nb - pos) * sizeof *a->b);
    a->b[pos] = blk;
    a->nb++;
    return 0;
}

static void note_peaks(loom_est_alloc_t *a)
{
    if (a->allocated > a->peak_allocated)
        a->peak_allocated = a->allocated;
    if (a->reserved > a->peak_reserved)
        a->peak_reserved = a->reserved;
}

uint64_t loom_est_alloc_malloc(loom_est_alloc_t *a, uint64_t bytes)
{
    uint64_t handle = ++a->next_handle;
    if (a->kind == LOOM_EST_ALLOC_MALLOC) {
        block_t blk = {.seg = handle, .size = bytes, .used = true, .handle = handle};
        if (insert_at(a, a->nb, blk))
            return 0;
        a->allocated += bytes;
        a->reserved += bytes;
        note_peaks(a);
        return handle;
    }
    uint64_t size = loom_est_alloc_round(bytes);
    bool small = size <= SMALL_SIZE;
    size_t best = (size_t)-1;
    for (size_t i = 0; i < a->nb; i++) {
        block_t *b = &a->b[i];
        if (b->used || b->small != small || b->size < size)
            continue;
        if (best == (size_t)-1 || b->size < a->b[best].size)
            best = i;
    }
    if (best == (size_t)-1) { /* cache miss: a new segment at the end */
        uint64_t seg_size = loom_est_alloc_segment_size(size);
        block_t seg = {.seg = ++a->nseg, .off = 0, .size = seg_size, .small = small};
        if (insert_at(a, a->nb, seg))
            return 0;
        a->reserved += seg_size;
        best = a->nb - 1;
    }
    block_t *b = &a->b[best];
    uint64_t rest = b->size - size;
    bool split = small ? rest >= MIN_BLOCK : rest > SMALL_SIZE;
    if (split) {
        block_t tail = {.seg = b->seg, .off = b->off + size, .size = rest, .small = small};
        b->size = size;
        if (insert_at(a, best + 1, tail))
            return 0;
        b = &a->b[best];
    }
    b->used = true;
    b->handle = handle;
    a->allocated += b->size;
    note_peaks(a);
    return handle;
}

void loom_est_alloc_release(loom_est_alloc_t *a, uint64_t handle)
{
    size_t i;
    for (i = 0; i < a->nb; i++)
        if (a->b[i].used && a->b[i].handle == handle)
            break;
    if (i == a->nb)
        return;
    a->allocated -= a->b[i].size;
    if (a->kind == LOOM_EST_ALLOC_MALLOC) {
        a->reserved -= a->b[i].size;
        memmove(&a->b[i], &a->b[i + 1], (a->nb - i - 1) * sizeof *a->b);
        a->nb--;
        return;
    }
    a->b[i].used = false;
    a->b[i].handle = 0;
    /* merge with the next, then the previous free block of the segment */
    if (i + 1 < a->nb && !a->b[i + 1].used && a->b[i + 1].seg == a->b[i].seg) {
        a->b[i].size += a->b[i + 1].size;
        memmove(&a->b[i + 1], &a->b[i + 2], (a->nb - i - 2) * sizeof *a->b);
        a->nb--;
    }
    if (i > 0 && !a->b[i - 1].used && a->b[i - 1].seg == a->b[i].seg) {
        a->b[i - 1].size += a->b[i].size;
        memmove(&a->b[i], &a->b[i + 1], (a->nb - i - 1) * sizeof *a->b);
        a->nb--;
    }
}

uint64_t loom_est_alloc_allocated(const loom_est_alloc_t *a)
{
    return a->allocated;
}
uint64_t loom_est_alloc_reserved(const loom_est_alloc_t *a)
{
    return a->reserved;
}
uint64_t loom_est_alloc_peak_reserved(const loom_est_alloc_t *a)
{
    return a->peak_reserved;
}
uint64_t loom_est_alloc_peak_allocated(const loom_est_alloc_t *a)
{
    return a->peak_allocated;
}
