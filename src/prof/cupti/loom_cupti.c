/* libloom_cupti.so: the CUPTI activity tracer that `loom prof --kernels`
 * injects into a CUDA program.
 *
 * The CUDA driver loads the library named by CUDA_INJECTION64_PATH when the
 * program initialises CUDA and calls its InitializeInjection(). We register
 * activity buffers and enable kernel, memcpy and memset records; CUPTI fills
 * the buffers asynchronously and hands them back, and we append one CSV line
 * per record to $LOOM_CUPTI_OUT:
 *
 *     kind,start_ns,end_ns,bytes,device,stream,name
 *
 * (kind: kernel, memcpy_htod, memcpy_dtoh, memcpy_dtod, memcpy_other,
 * memset; name is the kernel's, last because C++ names hold commas). At
 * exit the remaining buffers are flushed and $LOOM_CUPTI_OUT.status gets one
 * line: "ok records=N dropped=M clock=monotonic" (timestamps on
 * CLOCK_MONOTONIC, loom's clock, through cuptiActivityRegisterTimestampCallback;
 * clock=cupti where that call is missing), or "error: ..." naming the CUPTI
 * call and its error. Any failure leaves the program running untraced: a profiler
 * must never break what it watches. Buffers are 8 MiB, so tracing costs
 * one memcpy-free pass over each record and one write() per buffer. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>

#define BUF_SIZE  (8u << 20)
#define BUF_ALIGN 8

static FILE *out;
static char *status_path;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long records, dropped;
static int failed;
static const char *clock_name = "cupti"; /* the records' time base */

static uint64_t CUPTIAPI mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void write_status(const char *line)
{
    if (!status_path)
        return;
    FILE *f = fopen(status_path, "w");
    if (!f)
        return;
    fputs(line, f);
    fputc('\n', f);
    fclose(f);
}

/* Reports a failed CUPTI call on stderr and in the status file. */
static int fail(const char *call, CUptiResult r)
{
    const char *s = NULL;
    if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
        s = "unknown error";
    fprintf(stderr, "loom_cupti: %s failed: %s (%d); kernels are not traced%s\n", call, s, (int)r,
            r == CUPTI_ERROR_UNKNOWN || r == CUPTI_ERROR_NOT_INITIALIZED
                ? " (is a GPU driver loaded?)"
                : "");
    char msg[600];
    snprintf(msg, sizeof msg, "error: %s failed: %s (%d)%s", call, s, (int)r,
             r == CUPTI_ERROR_UNKNOWN ? "; is a GPU driver loaded?" : "");
    write_status(msg);
    failed = 1;
    return 0;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    void *p = NULL;
    if (posix_memalign(&p, BUF_ALIGN, BUF_SIZE))
        p = NULL;
    *buffer = p;
    *size = p ? BUF_SIZE : 0;
    *max_records = 0; /* as many as fit */
}

static const char *memcpy_kind(uint8_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy_htod";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy_dtoh";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy_dtod";
    default: return "memcpy_other";
    }
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    CUpti_Activity *rec = NULL;
    pthread_mutex_lock(&lock);
    while (out && valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
            fprintf(out, "kernel,%llu,%llu,0,%u,%u,%s\n", (unsigned long long)k->start,
                    (unsigned long long)k->end, k->deviceId, k->streamId, k->name ? k->name : "?");
            records++;
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
            fprintf(out, "%s,%llu,%llu,%llu,%u,%u,\n", memcpy_kind(m->copyKind),
                    (unsigned long long)m->start, (unsigned long long)m->end,
                    (unsigned long long)m->bytes, m->deviceId, m->streamId);
            records++;
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
            const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
            fprintf(out, "memset,%llu,%llu,%llu,%u,%u,\n", (unsigned long long)m->start,
                    (unsigned long long)m->end, (unsigned long long)m->bytes, m->deviceId,
                    m->streamId);
            records++;
            break;
        }
        default: break;
        }
    }
    size_t n = 0;
    if (cuptiActivityGetNumDroppedRecords(NULL, 0, &n) == CUPTI_SUCCESS)
        dropped += n;
    pthread_mutex_unlock(&lock);
    free(buffer);
}

static void at_exit(void)
{
    if (!failed)
        cuptiActivityFlushAll(1);
    pthread_mutex_lock(&lock);
    if (out) {
        fclose(out);
        out = NULL;
    }
    if (!failed) {
        char line[160];
        snprintf(line, sizeof line, "ok records=%llu dropped=%llu clock=%s", records, dropped,
                 clock_name);
        write_status(line);
    }
    pthread_mutex_unlock(&lock);
    free(status_path);
    status_path = NULL;
}

/* Called by the CUDA driver. Returns 1 when tracing is on, 0 when not (the
 * program goes on either way). */
int InitializeInjection(void);
int InitializeInjection(void)
{
    static int done;
    if (done++)
        return !failed;
    const char *path = getenv("LOOM_CUPTI_OUT");
    if (!path || !*path) {
        fprintf(stderr, "loom_cupti: LOOM_CUPTI_OUT is not set; kernels are not traced\n");
        failed = 1;
        return 0;
    }
    size_t len = strlen(path);
    status_path = malloc(len + 8);
    if (!status_path) {
        failed = 1;
        return 0;
    }
    memcpy(status_path, path, len);
    memcpy(status_path + len, ".status", 8);
    out = fopen(path, "w");
    if (!out) {
        fprintf(stderr, "loom_cupti: cannot open LOOM_CUPTI_OUT '%s'; kernels are not traced\n",
                path);
        char line[600];
        snprintf(line, sizeof line, "error: cannot open %.500s", path);
        write_status(line);
        failed = 1;
        return 0;
    }
    setvbuf(out, NULL, _IOFBF, 1 << 20);
    fprintf(out, "kind,start_ns,end_ns,bytes,device,stream,name\n");
    atexit(at_exit);
    /* Timestamps on loom's clock (CLOCK_MONOTONIC, as its samples), so that
     * kernel time can be set against NVML's samples; CUPTI's default is
     * CLOCK_REALTIME, which steps with the wall clock. Must come before any
     * kind is enabled; without it (an older CUPTI) the records keep
     * CUPTI's clock and say so (clock=cupti). */
    if (cuptiActivityRegisterTimestampCallback(mono_ns) == CUPTI_SUCCESS)
        clock_name = "monotonic";
    CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS)
        return fail("cuptiActivityRegisterCallbacks", r);
    static const struct {
        CUpti_ActivityKind kind;
        const char *name;
    } kinds[] = {
        {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
         "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)"},
        {CUPTI_ACTIVITY_KIND_MEMCPY, "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY)"},
        {CUPTI_ACTIVITY_KIND_MEMSET, "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET)"},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if ((r = cuptiActivityEnable(kinds[i].kind)) != CUPTI_SUCCESS)
            return fail(kinds[i].name, r);
    write_status("tracing"); /* replaced at exit */
    return 1;
}
