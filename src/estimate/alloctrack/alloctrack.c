/* libloom_alloctrack.so: a preloadable library that counts live heap bytes.
 *
 *   LD_PRELOAD=build/libloom_alloctrack.so LOOM_ALLOCTRACK_OUT=/tmp/peak cmd
 *
 * It wraps malloc, calloc, realloc, free, posix_memalign, aligned_alloc,
 * memalign, valloc and pvalloc, calling glibc's __libc_* entry points (no
 * dlsym, so no bootstrap recursion), and counts each block by
 * malloc_usable_size — the bytes the block really holds. The peak of live
 * bytes is kept with atomic operations (the process may be multithreaded).
 * At exit it writes "peak_bytes N\nlive_bytes N\nallocs N\n" to the file
 * named by LOOM_ALLOCTRACK_OUT (if set).
 *
 * A process may also read and reset the counters through exported
 * functions (Python: ctypes.CDLL(None).loom_alloctrack_peak()), which is
 * how bench/estimate_measure.py isolates one training step.
 *
 * Built without sanitizers (it replaces the allocator they wrap). glibc only.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

static int64_t live_bytes, peak_bytes;
static uint64_t n_allocs;

#define EXPORT __attribute__((visibility("default")))

static void count_add(void *p)
{
    if (!p)
        return;
    int64_t sz = (int64_t)malloc_usable_size(p);
    int64_t now = __atomic_add_fetch(&live_bytes, sz, __ATOMIC_RELAXED);
    __atomic_add_fetch(&n_allocs, 1, __ATOMIC_RELAXED);
    int64_t peak = __atomic_load_n(&peak_bytes, __ATOMIC_RELAXED);
    while (now > peak && !__atomic_compare_exchange_n(&peak_bytes, &peak, now, true,
                                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

static void count_sub(void *p)
{
    if (p)
        __atomic_sub_fetch(&live_bytes, (int64_t)malloc_usable_size(p), __ATOMIC_RELAXED);
}

EXPORT void *malloc(size_t n)
{
    void *p = __libc_malloc(n);
    count_add(p);
    return p;
}

EXPORT void *calloc(size_t a, size_t b)
{
    void *p = __libc_calloc(a, b);
    count_add(p);
    return p;
}

EXPORT void *realloc(void *old, size_t n)
{
    size_t before = old ? malloc_usable_size(old) : 0;
    void *p = __libc_realloc(old, n);
    if (!p && n)
        return NULL; /* old block untouched */
    __atomic_sub_fetch(&live_bytes, (int64_t)before, __ATOMIC_RELAXED);
    if (p)
        count_add(p);
    return p;
}

EXPORT void free(void *p)
{
    count_sub(p);
    __libc_free(p);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    void *p = __libc_memalign(align, n);
    if (!p)
        return ENOMEM;
    count_add(p);
    *out = p;
    return 0;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
    void *p = __libc_memalign(align, n);
    count_add(p);
    return p;
}

EXPORT void *memalign(size_t align, size_t n)
{
    void *p = __libc_memalign(align, n);
    count_add(p);
    return p;
}

EXPORT void *valloc(size_t n)
{
    void *p = __libc_valloc(n);
    count_add(p);
    return p;
}

EXPORT void *pvalloc(size_t n)
{
    void *p = __libc_pvalloc(n);
    count_add(p);
    return p;
}

EXPORT int64_t loom_alloctrack_live(void)
{
    return __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
}
EXPORT int64_t loom_alloctrack_peak(void)
{
    return __atomic_load_n(&peak_bytes, __ATOMIC_RELAXED);
}
EXPORT uint64_t loom_alloctrack_allocs(void)
{
    return __atomic_load_n(&n_allocs, __ATOMIC_RELAXED);
}
/* Peak := live now, so the next peak is of what follows. */
EXPORT void loom_alloctrack_reset_peak(void)
{
    __atomic_store_n(&peak_bytes, __atomic_load_n(&live_bytes, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
}

/* Decimal without stdio (no allocation at exit). */
static size_t put_u64(char *buf, uint64_t v)
{
    char tmp[24];
    size_t n = 0, k = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        buf[k++] = tmp[--n];
    return k;
}

static size_t put_line(char *buf, const char *key, int64_t v)
{
    size_t k = strlen(key);
    memcpy(buf, key, k);
    buf[k++] = ' ';
    if (v < 0) {
        buf[k++] = '-';
        v = -v;
    }
    k += put_u64(buf + k, (uint64_t)v);
    buf[k++] = '\n';
    return k;
}

__attribute__((destructor)) static void write_report(void)
{
    const char *path = getenv("LOOM_ALLOCTRACK_OUT");
    if (!path || !*path)
        return;
    char buf[256];
    size_t n = put_line(buf, "peak_bytes", loom_alloctrack_peak());
    n += put_line(buf + n, "live_bytes", loom_alloctrack_live());
    n += put_line(buf + n, "allocs", (int64_t)loom_alloctrack_allocs());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    ssize_t w = write(fd, buf, n);
    (void)w;
    close(fd);
}
