/* A test double of libnvidia-ml.so.1 for machines without an NVIDIA GPU.
 *
 * It exports the NVML functions loom calls, with NVML's signatures (from
 * src/mon/nvml_api.h, written after NVIDIA's API reference) and NVML's
 * return-code behaviour: UNINITIALIZED before nvmlInit_v2, INVALID_ARGUMENT
 * on NULL or foreign handles, INSUFFICIENT_SIZE with the needed count for
 * process lists, NOT_FOUND when no utilization sample is newer than the
 * timestamp passed in, NOT_SUPPORTED for utilization of MIG devices, and
 * GPU_IS_LOST for a device after a given number of calls.
 *
 * The values come from a JSON scenario named by $LOOM_NVML_SCENARIO:
 *
 *   {"init": "SUCCESS", "driver_version": "550.54.15", "nvml_version": "12.550.54.15",
 *    "call_log": "/tmp/x.log",
 *    "devices": [{"name": "NVIDIA H200", "uuid": "GPU-...",
 *       "utilization": {"gpu": 37, "memory": 12},
 *       "memory": {"total": 150, "used": 50, "free": 100},
 *       "power_mw": 312000, "energy_mj": 1000000, "energy_mj_per_call": 500,
 *       "temperature_c": 45, "sm_clock_mhz": 1980, "mem_clock_mhz": 2619,
 *       "clocks_event_reasons": 4, "pcie_tx_kbs": 100, "pcie_rx_kbs": 200,
 *       "ecc_corrected": 1, "ecc_uncorrected": 0, "mig_mode": 1,
 *       "mig_devices": [{"uuid": "MIG-...", "name": "...", "memory": {...}}],
 *       "compute_processes": [{"pid": 10, "used_memory": 1024}],
 *       "graphics_processes": [], "process_samples": [{"pid": 10,
 *       "timestamp": 1000, "sm": 50, "mem": 20, "enc": 0, "dec": 0}],
 *       "errors": {"nvmlDeviceGetPowerUsage": "NOT_SUPPORTED"},
 *       "lost_after_calls": 0}]}
 *
 * Every call is appended to call_log (if set) as "FUNCTION DEVICE ARGS"
 * lines, so tests can check what loom passed (e.g. the last-seen
 * timestamp of nvmlDeviceGetProcessUtilization).
 */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mon/nvml_api.h"

#define EXPORT __attribute__((visibility("default")))
#define MAGIC  0x4e564d4cu

struct nvmlDevice_st {
    unsigned magic;
    int dev; /* device index */
    int mig; /* -1 for the GPU itself, else MIG slot */
};

typedef struct mig {
    struct nvmlDevice_st h;
    char uuid[96], name[96];
    nvmlMemory_t mem;
} mig_t;

typedef struct dev {
    struct nvmlDevice_st h;
    json_t *j;
    long calls;
    long lost_after;
    unsigned long long energy_mj;
    mig_t *migs;
    size_t n_migs;
} dev_t_;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int refcount;
static json_t *scenario;
static dev_t_ *devs;
static size_t n_devs;
static FILE *call_log;

static const struct {
    const char *name;
    int code;
} codes[] = {
    {"SUCCESS", NVML_SUCCESS},
    {"UNINITIALIZED", NVML_ERROR_UNINITIALIZED},
    {"INVALID_ARGUMENT", NVML_ERROR_INVALID_ARGUMENT},
    {"NOT_SUPPORTED", NVML_ERROR_NOT_SUPPORTED},
    {"NO_PERMISSION", NVML_ERROR_NO_PERMISSION},
    {"NOT_FOUND", NVML_ERROR_NOT_FOUND},
    {"INSUFFICIENT_SIZE", NVML_ERROR_INSUFFICIENT_SIZE},
    {"DRIVER_NOT_LOADED", NVML_ERROR_DRIVER_NOT_LOADED},
    {"TIMEOUT", NVML_ERROR_TIMEOUT},
    {"GPU_IS_LOST", NVML_ERROR_GPU_IS_LOST},
    {"RESET_REQUIRED", NVML_ERROR_RESET_REQUIRED},
    {"NO_DATA", NVML_ERROR_NO_DATA},
    {"UNKNOWN", NVML_ERROR_UNKNOWN},
};

static int code_of(const char *name)
{
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (strcmp(codes[i].name, name) == 0)
            return codes[i].code;
    return NVML_ERROR_UNKNOWN;
}

static void logf_(const char *fn, int dev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void logf_(const char *fn, int dev, const char *fmt, ...)
{
    if (!call_log)
        return;
    fprintf(call_log, "%s %d", fn, dev);
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputc(' ', call_log);
        vfprintf(call_log, fmt, ap);
        va_end(ap);
    }
    fputc('\n', call_log);
    fflush(call_log);
}

static unsigned long long jull(json_t *o, const char *k, unsigned long long def)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (unsigned long long)json_integer_value(v) : def;
}

static const char *jstr(json_t *o, const char *k, const char *def)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : def;
}

static void read_mem(json_t *o, nvmlMemory_t *m)
{
    json_t *mem = json_object_get(o, "memory");
    m->total = jull(mem, "total", 0);
    m->used = jull(mem, "used", 0);
    m->free = jull(mem, "free", m->total - m->used);
}

static void unload(void)
{
    for (size_t i = 0; i < n_devs; i++)
        free(devs[i].migs);
    free(devs);
    devs = NULL;
    n_devs = 0;
    json_decref(scenario);
    scenario = NULL;
    if (call_log)
        fclose(call_log);
    call_log = NULL;
}

static int load(void)
{
    const char *path = getenv("LOOM_NVML_SCENARIO");
    if (!path) {
        fprintf(stderr, "nvml double: LOOM_NVML_SCENARIO is not set\n");
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    json_error_t e;
    scenario = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
    if (!scenario || !json_is_object(scenario)) {
        fprintf(stderr, "nvml double: %s:%d:%d: %s\n", path, e.line, e.column, e.text);
        json_decref(scenario);
        scenario = NULL;
        return NVML_ERROR_UNKNOWN;
    }
    const char *logp = jstr(scenario, "call_log", NULL);
    if (logp)
        call_log = fopen(logp, "a");
    int init = code_of(jstr(scenario, "init", "SUCCESS"));
    if (init != NVML_SUCCESS) {
        unload();
        return init;
    }
    json_t *arr = json_object_get(scenario, "devices");
    n_devs = json_array_size(arr);
    devs = calloc(n_devs ? n_devs : 1, sizeof *devs);
    for (size_t i = 0; i < n_devs; i++) {
        dev_t_ *d = &devs[i];
        d->h = (struct nvmlDevice_st){MAGIC, (int)i, -1};
        d->j = json_array_get(arr, i);
        d->lost_after = (long)jull(d->j, "lost_after_calls", 0);
        d->energy_mj = jull(d->j, "energy_mj", 0);
        json_t *migs = json_object_get(d->j, "mig_devices");
        d->n_migs = json_array_size(migs);
        d->migs = calloc(d->n_migs ? d->n_migs : 1, sizeof *d->migs);
        for (size_t k = 0; k < d->n_migs; k++) {
            json_t *m = json_array_get(migs, k);
            d->migs[k].h = (struct nvmlDevice_st){MAGIC, (int)i, (int)k};
            snprintf(d->migs[k].uuid, sizeof d->migs[k].uuid, "%s", jstr(m, "uuid", "MIG-?"));
            snprintf(d->migs[k].name, sizeof d->migs[k].name, "%s", jstr(m, "name", "MIG"));
            read_mem(m, &d->migs[k].mem);
        }
    }
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    pthread_mutex_lock(&lock);
    int r = NVML_SUCCESS;
    if (refcount == 0)
        r = load();
    if (r == NVML_SUCCESS)
        refcount++;
    logf_("nvmlInit_v2", -1, "rc=%d", r);
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    pthread_mutex_lock(&lock);
    int r = NVML_SUCCESS;
    if (refcount == 0)
        r = NVML_ERROR_UNINITIALIZED;
    else if (--refcount == 0)
        unload();
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (codes[i].code == r)
            return codes[i].name;
    return "Unknown Error";
}

static nvmlReturn_t copy_str(const char *s, char *buf, unsigned len)
{
    if (!buf)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(s) + 1 > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned len)
{
    if (!refcount)
        return NVML_ERROR_UNINITIALIZED;
    return copy_str(jstr(scenario, "driver_version", "550.54.15"), v, len);
}

EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned len)
{
    if (!refcount)
        return NVML_ERROR_UNINITIALIZED;
    return copy_str(jstr(scenario, "nvml_version", "12.550.54.15"), v, len);
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count)
{
    if (!refcount)
        return NVML_ERROR_UNINITIALIZED;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = (unsigned)n_devs;
    return NVML_SUCCESS;
}

/* Common entry of per-device calls: checks init, handle and loss; applies
 * the scenario's "errors" for fn. Sets *d (and *m for MIG handles). */
static int enter(const char *fn, nvmlDevice_t h, dev_t_ **d, mig_t **m)
{
    if (!refcount)
        return NVML_ERROR_UNINITIALIZED;
    if (!h || h->magic != MAGIC || h->dev < 0 || (size_t)h->dev >= n_devs)
        return NVML_ERROR_INVALID_ARGUMENT;
    *d = &devs[h->dev];
    if (m)
        *m = h->mig >= 0 ? &(*d)->migs[h->mig] : NULL;
    else if (h->mig >= 0)
        return NVML_ERROR_NOT_SUPPORTED; /* not a query MIG devices answer */
    (*d)->calls++;
    if ((*d)->lost_after > 0 && (*d)->calls > (*d)->lost_after)
        return NVML_ERROR_GPU_IS_LOST;
    const char *err = jstr(json_object_get((*d)->j, "errors"), fn, NULL);
    if (err && h->mig < 0)
        return code_of(err);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned idx, nvmlDevice_t *h)
{
    if (!refcount)
        return NVML_ERROR_UNINITIALIZED;
    if (!h || idx >= n_devs)
        return NVML_ERROR_INVALID_ARGUMENT;
    dev_t_ *d = &devs[idx];
    if (d->lost_after > 0 && d->calls >= d->lost_after)
        return NVML_ERROR_GPU_IS_LOST;
    *h = &d->h;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char *name, unsigned len)
{
    dev_t_ *d;
    mig_t *m;
    int r = enter("nvmlDeviceGetName", h, &d, &m);
    if (r)
        return r;
    return copy_str(m ? m->name : jstr(d->j, "name", "NVIDIA Double"), name, len);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char *uuid, unsigned len)
{
    dev_t_ *d;
    mig_t *m;
    int r = enter("nvmlDeviceGetUUID", h, &d, &m);
    if (r)
        return r;
    return copy_str(m ? m->uuid : jstr(d->j, "uuid", "GPU-00000000"), uuid, len);
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t *u)
{
    dev_t_ *d;
    mig_t *m;
    int r = enter("nvmlDeviceGetUtilizationRates", h, &d, &m);
    if (r)
        return r;
    if (!u)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (m) /* as the real driver: no utilization for MIG devices */
        return NVML_ERROR_NOT_SUPPORTED;
    json_t *o = json_object_get(d->j, "utilization");
    u->gpu = (unsigned)jull(o, "gpu", 0);
    u->memory = (unsigned)jull(o, "memory", 0);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t *mem)
{
    dev_t_ *d;
    mig_t *m;
    int r = enter("nvmlDeviceGetMemoryInfo", h, &d, &m);
    if (r)
        return r;
    if (!mem)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (m)
        *mem = m->mem;
    else
        read_mem(d->j, mem);
    return NVML_SUCCESS;
}

#define SIMPLE_U(fname, key, type)                                                                 \
    EXPORT nvmlReturn_t fname(nvmlDevice_t h, type *out)                                           \
    {                                                                                              \
        dev_t_ *d;                                                                                 \
        int r = enter(#fname, h, &d, NULL);                                                        \
        if (r)                                                                                     \
            return r;                                                                              \
        if (!out)                                                                                  \
            return NVML_ERROR_INVALID_ARGUMENT;                                                    \
        *out = (type)jull(d->j, key, 0);                                                           \
        return NVML_SUCCESS;                                                                       \
    }

SIMPLE_U(nvmlDeviceGetPowerUsage, "power_mw", unsigned)
SIMPLE_U(nvmlDeviceGetCurrentClocksEventReasons, "clocks_event_reasons", unsigned long long)

EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t h, unsigned long long *mj)
{
    dev_t_ *d;
    int r = enter("nvmlDeviceGetTotalEnergyConsumption", h, &d, NULL);
    if (r)
        return r;
    if (!mj)
        return NVML_ERROR_INVALID_ARGUMENT;
    d->energy_mj += jull(d->j, "energy_mj_per_call", 0);
    *mj = d->energy_mj;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, int sensor, unsigned *t)
{
    dev_t_ *d;
    int r = enter("nvmlDeviceGetTemperature", h, &d, NULL);
    if (r)
        return r;
    if (!t || sensor != NVML_TEMPERATURE_GPU)
        return NVML_ERROR_INVALID_ARGUMENT;
    *t = (unsigned)jull(d->j, "temperature_c", 0);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned *mhz)
{
    dev_t_ *d;
    int r = enter("nvmlDeviceGetClockInfo", h, &d, NULL);
    if (r)
        return r;
    if (!mhz || type < 0 || type > 3)
        return NVML_ERROR_INVALID_ARGUMENT;
    *mhz = (unsigned)jull(d->j, type == NVML_CLOCK_MEM ? "mem_clock_mhz" : "sm_clock_mhz", 0);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t h, int counter, unsigned *kbs)
{
    dev_t_ *d;
    int r = enter("nvmlDeviceGetPcieThroughput", h, &d, NULL);
    if (r)
        return r;
    if (!kbs || (counter != NVML_PCIE_UTIL_TX_BYTES && counter != NVML_PCIE_UTIL_RX_BYTES))
        return NVML_ERROR_INVALID_ARGUMENT;
    *kbs =
        (unsigned)jull(d->j, counter == NVML_PCIE_UTIL_TX_BYTES ? "pcie_tx_kbs" : "pcie_rx_kbs", 0);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t h, int type, int counter,
                                                unsigned long long *n)
{
    dev_t_ *d;
    int r = enter("nvmlDeviceGetTotalEccErrors", h, &d, NULL);
    if (r)
        return r;
    if (!n || type < 0 || type > 1 || counter < 0 || counter > 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    *n = jull(d->j, type == NVML_MEMORY_ERROR_TYPE_CORRECTED ? "ecc_corrected" : "ecc_uncorrected",
              0);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t h, unsigned *cur, unsigned *pending)
{
    dev_t_ *d;
    int r = enter("nvmlDeviceGetMigMode", h, &d, NULL);
    if (r)
        return r;
    if (!cur || !pending)
        return NVML_ERROR_INVALID_ARGUMENT;
    *cur = *pending = (unsigned)jull(d->j, "mig_mode", 0);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t h, unsigned *count)
{
    dev_t_ *d;
    int r = enter("nvmlDeviceGetMaxMigDeviceCount", h, &d, NULL);
    if (r)
        return r;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = jull(d->j, "mig_mode", 0) ? 7 : 0; /* H100/H200: up to 7 instances */
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t h, unsigned idx,
                                                        nvmlDevice_t *mig)
{
    dev_t_ *d;
    int r = enter("nvmlDeviceGetMigDeviceHandleByIndex", h, &d, NULL);
    if (r)
        return r;
    if (!mig || idx >= 7)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (idx >= d->n_migs)
        return NVML_ERROR_NOT_FOUND;
    *mig = &d->migs[idx].h;
    return NVML_SUCCESS;
}

static nvmlReturn_t procs(const char *fn, const char *key, nvmlDevice_t h, unsigned *count,
                          nvmlProcessInfo_t *infos)
{
    dev_t_ *d;
    int r = enter(fn, h, &d, NULL);
    if (r)
        return r;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    json_t *arr = json_object_get(d->j, key);
    unsigned n = (unsigned)json_array_size(arr);
    logf_(fn, d->h.dev, "count_in=%u", *count);
    if (*count < n || (n > 0 && !infos)) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < n; i++) {
        json_t *p = json_array_get(arr, i);
        infos[i].pid = (unsigned)jull(p, "pid", 0);
        infos[i].usedGpuMemory = jull(p, "used_memory", NVML_VALUE_NOT_AVAILABLE_ULL);
        infos[i].gpuInstanceId = infos[i].computeInstanceId = 0xFFFFFFFFu;
    }
    *count = n;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned *count,
                                                            nvmlProcessInfo_t *infos)
{
    return procs("nvmlDeviceGetComputeRunningProcesses_v3", "compute_processes", h, count, infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t h, unsigned *count,
                                                             nvmlProcessInfo_t *infos)
{
    return procs("nvmlDeviceGetGraphicsRunningProcesses_v3", "graphics_processes", h, count, infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t h,
                                                    nvmlProcessUtilizationSample_t *util,
                                                    unsigned *count, unsigned long long last_seen)
{
    dev_t_ *d;
    int r = enter("nvmlDeviceGetProcessUtilization", h, &d, NULL);
    if (r)
        return r;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    logf_("nvmlDeviceGetProcessUtilization", d->h.dev, "last_seen=%llu count_in=%u", last_seen,
          *count);
    json_t *arr = json_object_get(d->j, "process_samples");
    unsigned n = 0;
    for (size_t i = 0; i < json_array_size(arr); i++)
        if (jull(json_array_get(arr, i), "timestamp", 0) > last_seen)
            n++;
    if (n == 0)
        return NVML_ERROR_NOT_FOUND;
    if (!util || *count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    unsigned k = 0;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *s = json_array_get(arr, i);
        if (jull(s, "timestamp", 0) <= last_seen)
            continue;
        util[k].pid = (unsigned)jull(s, "pid", 0);
        util[k].timeStamp = jull(s, "timestamp", 0);
        util[k].smUtil = (unsigned)jull(s, "sm", 0);
        util[k].memUtil = (unsigned)jull(s, "mem", 0);
        util[k].encUtil = (unsigned)jull(s, "enc", 0);
        util[k].decUtil = (unsigned)jull(s, "dec", 0);
        k++;
    }
    *count = k;
    return NVML_SUCCESS;
}
