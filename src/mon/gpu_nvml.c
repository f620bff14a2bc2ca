/* NVIDIA GPUs through NVML, loaded with dlopen at the first GPU reading.
 *
 * Why dlopen: loom must build and run on machines without the driver; the
 * GPU group is then "unavailable" with dlerror's reason. Every per-device
 * query keeps its own NVML return code (field_status), because support
 * varies by board (no ECC on consumer parts, no utilization on MIG
 * instances, no power on some). A device that returns GPU_IS_LOST is
 * reported so and the rest of its queries are skipped.
 *
 * Per-process utilization: nvmlDeviceGetProcessUtilization returns samples
 * newer than the timestamp passed in. We keep the newest timestamp seen per
 * device (by UUID) and pass it back, so each reading holds only samples
 * taken since the previous one, none twice.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "mon/mon_int.h"
#include "mon/nvml_api.h"

typedef struct last_seen {
    char uuid[96];
    unsigned long long ts;
} last_seen_t;

struct loom_mon_nvml {
    void *lib;
    bool inited;
    loom_mon_source_t load_src; /* why loading or init failed, sticky */
    char library[256];
    nvmlShutdown_fn Shutdown;
    nvmlSystemGetDriverVersion_fn SystemGetDriverVersion;
    nvmlSystemGetNVMLVersion_fn SystemGetNVMLVersion;
    nvmlDeviceGetCount_v2_fn DeviceGetCount;
    nvmlDeviceGetHandleByIndex_v2_fn DeviceGetHandleByIndex;
    nvmlDeviceGetName_fn DeviceGetName;
    nvmlDeviceGetUUID_fn DeviceGetUUID;
    nvmlDeviceGetUtilizationRates_fn DeviceGetUtilizationRates;
    nvmlDeviceGetMemoryInfo_fn DeviceGetMemoryInfo;
    nvmlDeviceGetPowerUsage_fn DeviceGetPowerUsage;
    nvmlDeviceGetTotalEnergyConsumption_fn DeviceGetTotalEnergyConsumption;
    nvmlDeviceGetTemperature_fn DeviceGetTemperature;
    nvmlDeviceGetClockInfo_fn DeviceGetClockInfo;
    nvmlDeviceGetCurrentClocksEventReasons_fn DeviceGetClocksEventReasons;
    nvmlDeviceGetPcieThroughput_fn DeviceGetPcieThroughput;
    nvmlDeviceGetTotalEccErrors_fn DeviceGetTotalEccErrors;
    nvmlDeviceGetMigMode_fn DeviceGetMigMode;
    nvmlDeviceGetMaxMigDeviceCount_fn DeviceGetMaxMigDeviceCount;
    nvmlDeviceGetMigDeviceHandleByIndex_fn DeviceGetMigDeviceHandleByIndex;
    nvmlDeviceGetRunningProcesses_fn DeviceGetComputeProcs, DeviceGetGraphicsProcs;
    nvmlDeviceGetRunningProcesses_v1_fn DeviceGetComputeProcsV1, DeviceGetGraphicsProcsV1;
    nvmlDeviceGetProcessUtilization_fn DeviceGetProcessUtilization;
    last_seen_t *seen;
    size_t n_seen, cap_seen;
    nvmlProcessInfo_t *pbuf;
    size_t cap_pbuf;
    nvmlProcessUtilizationSample_t *sbuf;
    size_t cap_sbuf;
};

static const char *const nvml_names[] = {
    [0] = "NVML_SUCCESS",
    [1] = "NVML_ERROR_UNINITIALIZED",
    [2] = "NVML_ERROR_INVALID_ARGUMENT",
    [3] = "NVML_ERROR_NOT_SUPPORTED",
    [4] = "NVML_ERROR_NO_PERMISSION",
    [5] = "NVML_ERROR_ALREADY_INITIALIZED",
    [6] = "NVML_ERROR_NOT_FOUND",
    [7] = "NVML_ERROR_INSUFFICIENT_SIZE",
    [8] = "NVML_ERROR_INSUFFICIENT_POWER",
    [9] = "NVML_ERROR_DRIVER_NOT_LOADED",
    [10] = "NVML_ERROR_TIMEOUT",
    [11] = "NVML_ERROR_IRQ_ISSUE",
    [12] = "NVML_ERROR_LIBRARY_NOT_FOUND",
    [13] = "NVML_ERROR_FUNCTION_NOT_FOUND",
    [14] = "NVML_ERROR_CORRUPTED_INFOROM",
    [15] = "NVML_ERROR_GPU_IS_LOST",
    [16] = "NVML_ERROR_RESET_REQUIRED",
    [17] = "NVML_ERROR_OPERATING_SYSTEM",
    [18] = "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
    [19] = "NVML_ERROR_IN_USE",
    [20] = "NVML_ERROR_MEMORY",
    [21] = "NVML_ERROR_NO_DATA",
    [22] = "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED",
    [23] = "NVML_ERROR_INSUFFICIENT_RESOURCES",
    [24] = "NVML_ERROR_FREQ_NOT_SUPPORTED",
    [25] = "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
    [26] = "NVML_ERROR_DEPRECATED",
    [27] = "NVML_ERROR_NOT_READY",
    [28] = "NVML_ERROR_GPU_NOT_FOUND",
    [29] = "NVML_ERROR_INVALID_STATE",
};

const char *loom_mon_nvml_error_name(int code)
{
    static __thread char other[32];
    if (code >= 0 && (size_t)code < sizeof nvml_names / sizeof nvml_names[0])
        return nvml_names[code];
    if (code == NVML_ERROR_UNKNOWN)
        return "NVML_ERROR_UNKNOWN";
    snprintf(other, sizeof other, "NVML_ERROR_%d", code);
    return other;
}

static const char *const field_names[LOOM_MON_GPU_NFIELDS] = {
    "utilization",
    "memory",
    "power",
    "energy",
    "temperature",
    "sm_clock",
    "memory_clock",
    "clocks_event_reasons",
    "pcie",
    "ecc",
    "mig",
    "processes",
    "process_utilization",
};

const char *loom_mon_gpu_field_name(int f)
{
    return f >= 0 && f < LOOM_MON_GPU_NFIELDS ? field_names[f] : NULL;
}

/* ------------------------------------------------------------- loading */

static void *sym(loom_mon_nvml_t *nv, const char *name)
{
    return dlsym(nv->lib, name);
}

static bool load(loom_mon_nvml_t *nv, const char *lib)
{
    snprintf(nv->library, sizeof nv->library, "%s", lib);
    nv->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!nv->lib) {
        const char *e = dlerror();
        loom_mon__src_set(&nv->load_src, LOOM_EUNAVAIL,
                          "cannot load %s (no NVIDIA driver here?): %s", lib, e ? e : "?");
        return false;
    }
    nvmlInit_v2_fn init = (nvmlInit_v2_fn)sym(nv, "nvmlInit_v2");
    nvmlErrorString_fn errstr = (nvmlErrorString_fn)sym(nv, "nvmlErrorString");
    nv->Shutdown = (nvmlShutdown_fn)sym(nv, "nvmlShutdown");
    nv->DeviceGetCount = (nvmlDeviceGetCount_v2_fn)sym(nv, "nvmlDeviceGetCount_v2");
    nv->DeviceGetHandleByIndex =
        (nvmlDeviceGetHandleByIndex_v2_fn)sym(nv, "nvmlDeviceGetHandleByIndex_v2");
    if (!init || !nv->Shutdown || !nv->DeviceGetCount || !nv->DeviceGetHandleByIndex) {
        loom_mon__src_set(&nv->load_src, LOOM_EUNAVAIL,
                          "%s lacks nvmlInit_v2/nvmlShutdown/nvmlDeviceGetCount_v2/"
                          "nvmlDeviceGetHandleByIndex_v2 (not NVML, or too old)",
                          lib);
        return false;
    }
    nv->SystemGetDriverVersion =
        (nvmlSystemGetDriverVersion_fn)sym(nv, "nvmlSystemGetDriverVersion");
    nv->SystemGetNVMLVersion = (nvmlSystemGetNVMLVersion_fn)sym(nv, "nvmlSystemGetNVMLVersion");
    nv->DeviceGetName = (nvmlDeviceGetName_fn)sym(nv, "nvmlDeviceGetName");
    nv->DeviceGetUUID = (nvmlDeviceGetUUID_fn)sym(nv, "nvmlDeviceGetUUID");
    nv->DeviceGetUtilizationRates =
        (nvmlDeviceGetUtilizationRates_fn)sym(nv, "nvmlDeviceGetUtilizationRates");
    nv->DeviceGetMemoryInfo = (nvmlDeviceGetMemoryInfo_fn)sym(nv, "nvmlDeviceGetMemoryInfo");
    nv->DeviceGetPowerUsage = (nvmlDeviceGetPowerUsage_fn)sym(nv, "nvmlDeviceGetPowerUsage");
    nv->DeviceGetTotalEnergyConsumption =
        (nvmlDeviceGetTotalEnergyConsumption_fn)sym(nv, "nvmlDeviceGetTotalEnergyConsumption");
    nv->DeviceGetTemperature = (nvmlDeviceGetTemperature_fn)sym(nv, "nvmlDeviceGetTemperature");
    nv->DeviceGetClockInfo = (nvmlDeviceGetClockInfo_fn)sym(nv, "nvmlDeviceGetClockInfo");
    /* Renamed from "Throttle" to "Event" in r535; same signature and bits. */
    nv->DeviceGetClocksEventReasons = (nvmlDeviceGetCurrentClocksEventReasons_fn)sym(
        nv, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!nv->DeviceGetClocksEventReasons)
        nv->DeviceGetClocksEventReasons = (nvmlDeviceGetCurrentClocksEventReasons_fn)sym(
            nv, "nvmlDeviceGetCurrentClocksThrottleReasons");
    nv->DeviceGetPcieThroughput =
        (nvmlDeviceGetPcieThroughput_fn)sym(nv, "nvmlDeviceGetPcieThroughput");
    nv->DeviceGetTotalEccErrors =
        (nvmlDeviceGetTotalEccErrors_fn)sym(nv, "nvmlDeviceGetTotalEccErrors");
    nv->DeviceGetMigMode = (nvmlDeviceGetMigMode_fn)sym(nv, "nvmlDeviceGetMigMode");
    nv->DeviceGetMaxMigDeviceCount =
        (nvmlDeviceGetMaxMigDeviceCount_fn)sym(nv, "nvmlDeviceGetMaxMigDeviceCount");
    nv->DeviceGetMigDeviceHandleByIndex =
        (nvmlDeviceGetMigDeviceHandleByIndex_fn)sym(nv, "nvmlDeviceGetMigDeviceHandleByIndex");
    nv->DeviceGetComputeProcs =
        (nvmlDeviceGetRunningProcesses_fn)sym(nv, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (!nv->DeviceGetComputeProcs)
        nv->DeviceGetComputeProcs =
            (nvmlDeviceGetRunningProcesses_fn)sym(nv, "nvmlDeviceGetComputeRunningProcesses_v2");
    if (!nv->DeviceGetComputeProcs)
        nv->DeviceGetComputeProcsV1 =
            (nvmlDeviceGetRunningProcesses_v1_fn)sym(nv, "nvmlDeviceGetComputeRunningProcesses");
    nv->DeviceGetGraphicsProcs =
        (nvmlDeviceGetRunningProcesses_fn)sym(nv, "nvmlDeviceGetGraphicsRunningProcesses_v3");
    if (!nv->DeviceGetGraphicsProcs)
        nv->DeviceGetGraphicsProcs =
            (nvmlDeviceGetRunningProcesses_fn)sym(nv, "nvmlDeviceGetGraphicsRunningProcesses_v2");
    if (!nv->DeviceGetGraphicsProcs)
        nv->DeviceGetGraphicsProcsV1 =
            (nvmlDeviceGetRunningProcesses_v1_fn)sym(nv, "nvmlDeviceGetGraphicsRunningProcesses");
    nv->DeviceGetProcessUtilization =
        (nvmlDeviceGetProcessUtilization_fn)sym(nv, "nvmlDeviceGetProcessUtilization");

    nvmlReturn_t r = init();
    if (r != NVML_SUCCESS) {
        loom_mon__src_set(&nv->load_src, LOOM_EUNAVAIL, "nvmlInit_v2 in %s: %s (%s)", lib,
                          loom_mon_nvml_error_name(r), errstr ? errstr(r) : "");
        return false;
    }
    nv->inited = true;
    loom_mon__src_ok(&nv->load_src);
    return true;
}

void loom_mon__gpu_close(loom_mon_nvml_t *nv)
{
    if (!nv)
        return;
    if (nv->inited)
        nv->Shutdown();
    if (nv->lib)
        dlclose(nv->lib);
    free(nv->seen);
    free(nv->pbuf);
    free(nv->sbuf);
    free(nv);
}

/* ------------------------------------------------------------- reading */

#define CALL(g, field, fn, ...)                                                                    \
    ((g)->field_status[field] = (fn) ? (fn)(__VA_ARGS__) : NVML_ERROR_FUNCTION_NOT_FOUND)

static bool lost(int r)
{
    return r == NVML_ERROR_GPU_IS_LOST;
}

/* Runs one running-processes query into nv->pbuf, growing it on
 * INSUFFICIENT_SIZE (processes may start between the calls). */
static int query_procs(loom_mon_nvml_t *nv, nvmlDevice_t dev, bool compute, unsigned *count)
{
    nvmlDeviceGetRunningProcesses_fn f =
        compute ? nv->DeviceGetComputeProcs : nv->DeviceGetGraphicsProcs;
    nvmlDeviceGetRunningProcesses_v1_fn f1 =
        compute ? nv->DeviceGetComputeProcsV1 : nv->DeviceGetGraphicsProcsV1;
    if (!f && !f1)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    for (int attempt = 0; attempt < 4; attempt++) {
        unsigned n = (unsigned)nv->cap_pbuf;
        int r;
        if (f) {
            r = f(dev, &n, n ? nv->pbuf : NULL);
        } else {
            nvmlProcessInfo_v1_t *v1 = n ? calloc(n, sizeof *v1) : NULL;
            r = f1(dev, &n, v1);
            if (r == NVML_SUCCESS)
                for (unsigned i = 0; i < n; i++) {
                    nv->pbuf[i].pid = v1[i].pid;
                    nv->pbuf[i].usedGpuMemory = v1[i].usedGpuMemory;
                }
            free(v1);
        }
        if (r == NVML_SUCCESS) {
            *count = n;
            return r;
        }
        if (r != NVML_ERROR_INSUFFICIENT_SIZE)
            return r;
        size_t need = (size_t)n + 8;
        if (loom_mon__grow((void **)&nv->pbuf, &nv->cap_pbuf, need, sizeof *nv->pbuf, NULL))
            return NVML_ERROR_MEMORY;
    }
    return NVML_ERROR_INSUFFICIENT_SIZE;
}

static loom_mon_gpu_process_t *proc_slot(loom_mon_gpu_t *g, uint32_t pid)
{
    for (size_t i = 0; i < g->n_procs; i++)
        if (g->procs[i].pid == pid)
            return &g->procs[i];
    if (loom_mon__grow((void **)&g->procs, &g->cap_procs_, g->n_procs + 1, sizeof *g->procs, NULL))
        return NULL;
    loom_mon_gpu_process_t *p = &g->procs[g->n_procs++];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    return p;
}

static void read_procs(loom_mon_nvml_t *nv, nvmlDevice_t dev, loom_mon_gpu_t *g)
{
    g->n_procs = 0;
    int first_err = NVML_SUCCESS;
    bool any_ok = false;
    for (int kind = 0; kind < 2; kind++) {
        unsigned n = 0;
        int r = query_procs(nv, dev, kind == 0, &n);
        if (r != NVML_SUCCESS) {
            if (first_err == NVML_SUCCESS)
                first_err = r;
            if (lost(r))
                break;
            continue;
        }
        any_ok = true;
        for (unsigned i = 0; i < n; i++) {
            loom_mon_gpu_process_t *p = proc_slot(g, nv->pbuf[i].pid);
            if (!p)
                break;
            if (kind == 0)
                p->compute = true;
            else
                p->graphics = true;
            if (nv->pbuf[i].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE_ULL) {
                p->memory_known = true;
                p->used_memory_bytes = nv->pbuf[i].usedGpuMemory;
            }
        }
    }
    g->field_status[LOOM_MON_GPU_F_PROCESSES] = any_ok ? NVML_SUCCESS : first_err;
}

static unsigned long long *seen_slot(loom_mon_nvml_t *nv, const char *uuid)
{
    for (size_t i = 0; i < nv->n_seen; i++)
        if (strcmp(nv->seen[i].uuid, uuid) == 0)
            return &nv->seen[i].ts;
    if (loom_mon__grow((void **)&nv->seen, &nv->cap_seen, nv->n_seen + 1, sizeof *nv->seen, NULL))
        return NULL;
    last_seen_t *s = &nv->seen[nv->n_seen++];
    snprintf(s->uuid, sizeof s->uuid, "%s", uuid);
    s->ts = 0;
    return &s->ts;
}

static void read_proc_util(loom_mon_nvml_t *nv, nvmlDevice_t dev, loom_mon_gpu_t *g)
{
    int *st = &g->field_status[LOOM_MON_GPU_F_PROC_UTIL];
    if (!nv->DeviceGetProcessUtilization) {
        *st = NVML_ERROR_FUNCTION_NOT_FOUND;
        return;
    }
    unsigned long long *last = seen_slot(nv, g->uuid);
    if (!last) {
        *st = NVML_ERROR_MEMORY;
        return;
    }
    unsigned n = 0;
    int r = NVML_SUCCESS;
    /* First ask for the count (NULL array), then fetch; retry if more
     * samples arrived in between. */
    for (int attempt = 0; attempt < 4; attempt++) {
        n = (unsigned)nv->cap_sbuf;
        r = nv->DeviceGetProcessUtilization(dev, n ? nv->sbuf : NULL, &n, *last);
        if (r != NVML_ERROR_INSUFFICIENT_SIZE || (n == 0 && attempt > 0))
            break;
        if (loom_mon__grow((void **)&nv->sbuf, &nv->cap_sbuf, (size_t)n + 8, sizeof *nv->sbuf,
                           NULL)) {
            r = NVML_ERROR_MEMORY;
            break;
        }
    }
    if (r == NVML_ERROR_NOT_FOUND) { /* no sample newer than *last: valid, empty */
        *st = NVML_SUCCESS;
        return;
    }
    *st = r;
    if (r != NVML_SUCCESS)
        return;
    unsigned long long newest = *last;
    for (unsigned i = 0; i < n; i++) {
        const nvmlProcessUtilizationSample_t *s = &nv->sbuf[i];
        if (s->timeStamp <= *last) /* defensive: never count a sample twice */
            continue;
        if (s->timeStamp > newest)
            newest = s->timeStamp;
        loom_mon_gpu_process_t *p = proc_slot(g, s->pid);
        if (!p)
            break;
        if (p->util_valid && p->util_timestamp_us >= s->timeStamp)
            continue; /* keep the newest sample of a pid */
        p->util_valid = true;
        p->util_timestamp_us = s->timeStamp;
        p->sm_util_pct = s->smUtil;
        p->mem_util_pct = s->memUtil;
        p->enc_util_pct = s->encUtil;
        p->dec_util_pct = s->decUtil;
    }
    *last = newest;
}

static void read_mig(loom_mon_nvml_t *nv, nvmlDevice_t dev, loom_mon_gpu_t *g)
{
    g->n_migs = 0;
    int r =
        CALL(g, LOOM_MON_GPU_F_MIG, nv->DeviceGetMigMode, dev, &g->mig_current, &g->mig_pending);
    if (r != NVML_SUCCESS || g->mig_current != NVML_DEVICE_MIG_ENABLE)
        return;
    unsigned max = 0;
    if (!nv->DeviceGetMaxMigDeviceCount || !nv->DeviceGetMigDeviceHandleByIndex) {
        g->field_status[LOOM_MON_GPU_F_MIG] = NVML_ERROR_FUNCTION_NOT_FOUND;
        return;
    }
    r = nv->DeviceGetMaxMigDeviceCount(dev, &max);
    if (r != NVML_SUCCESS) {
        g->field_status[LOOM_MON_GPU_F_MIG] = r;
        return;
    }
    for (unsigned i = 0; i < max; i++) {
        nvmlDevice_t mig;
        r = nv->DeviceGetMigDeviceHandleByIndex(dev, i, &mig);
        if (r == NVML_ERROR_NOT_FOUND || r == NVML_ERROR_INVALID_ARGUMENT)
            continue; /* no MIG device in this slot */
        if (r != NVML_SUCCESS) {
            g->field_status[LOOM_MON_GPU_F_MIG] = r;
            return;
        }
        if (loom_mon__grow((void **)&g->migs, &g->cap_migs_, g->n_migs + 1, sizeof *g->migs, NULL))
            return;
        loom_mon_gpu_mig_t *m = &g->migs[g->n_migs++];
        memset(m, 0, sizeof *m);
        m->index = i;
        if (nv->DeviceGetUUID)
            nv->DeviceGetUUID(mig, m->uuid, sizeof m->uuid);
        if (nv->DeviceGetName)
            nv->DeviceGetName(mig, m->name, sizeof m->name);
        nvmlMemory_t mem;
        m->memory_status = nv->DeviceGetMemoryInfo ? nv->DeviceGetMemoryInfo(mig, &mem)
                                                   : NVML_ERROR_FUNCTION_NOT_FOUND;
        if (m->memory_status == NVML_SUCCESS) {
            m->memory_total_bytes = mem.total;
            m->memory_used_bytes = mem.used;
        }
        nvmlUtilization_t u;
        m->util_status = nv->DeviceGetUtilizationRates ? nv->DeviceGetUtilizationRates(mig, &u)
                                                       : NVML_ERROR_FUNCTION_NOT_FOUND;
        if (m->util_status == NVML_SUCCESS) {
            m->util_gpu_pct = u.gpu;
            m->util_memory_pct = u.memory;
        }
    }
}

static void read_device(loom_mon_nvml_t *nv, unsigned idx, loom_mon_gpu_t *g)
{
    loom_mon_gpu_mig_t *migs = g->migs;
    size_t cap_migs = g->cap_migs_;
    loom_mon_gpu_process_t *procs = g->procs;
    size_t cap_procs = g->cap_procs_;
    memset(g, 0, sizeof *g);
    g->migs = migs, g->cap_migs_ = cap_migs;
    g->procs = procs, g->cap_procs_ = cap_procs;
    g->index = idx;
    for (int f = 0; f < LOOM_MON_GPU_NFIELDS; f++)
        g->field_status[f] = NVML_ERROR_UNKNOWN; /* not reached */

    nvmlDevice_t dev;
    g->status = nv->DeviceGetHandleByIndex(idx, &dev);
    if (g->status == NVML_SUCCESS && nv->DeviceGetName)
        g->status = nv->DeviceGetName(dev, g->name, sizeof g->name);
    if (g->status == NVML_SUCCESS && nv->DeviceGetUUID)
        g->status = nv->DeviceGetUUID(dev, g->uuid, sizeof g->uuid);
    if (g->status != NVML_SUCCESS)
        return;

    nvmlUtilization_t u;
    int r = CALL(g, LOOM_MON_GPU_F_UTIL, nv->DeviceGetUtilizationRates, dev, &u);
    if (r == NVML_SUCCESS)
        g->util_gpu_pct = u.gpu, g->util_memory_pct = u.memory;
    if (lost(r))
        goto lost;
    nvmlMemory_t mem;
    if ((r = CALL(g, LOOM_MON_GPU_F_MEMORY, nv->DeviceGetMemoryInfo, dev, &mem)) == NVML_SUCCESS)
        g->memory_total_bytes = mem.total, g->memory_used_bytes = mem.used,
        g->memory_free_bytes = mem.free;
    if (lost(r))
        goto lost;
    unsigned v;
    if ((r = CALL(g, LOOM_MON_GPU_F_POWER, nv->DeviceGetPowerUsage, dev, &v)) == NVML_SUCCESS)
        g->power_watts = v / 1e3; /* milliwatts */
    if (lost(r))
        goto lost;
    unsigned long long ull;
    if ((r = CALL(g, LOOM_MON_GPU_F_ENERGY, nv->DeviceGetTotalEnergyConsumption, dev, &ull)) ==
        NVML_SUCCESS)
        g->energy_joules = (double)ull / 1e3; /* millijoules */
    if (lost(r))
        goto lost;
    if ((r = CALL(g, LOOM_MON_GPU_F_TEMP, nv->DeviceGetTemperature, dev, NVML_TEMPERATURE_GPU,
                  &v)) == NVML_SUCCESS)
        g->temperature_celsius = v;
    if (lost(r))
        goto lost;
    if ((r = CALL(g, LOOM_MON_GPU_F_SM_CLOCK, nv->DeviceGetClockInfo, dev, NVML_CLOCK_SM, &v)) ==
        NVML_SUCCESS)
        g->sm_clock_hz = v * 1e6; /* MHz */
    if (lost(r))
        goto lost;
    if ((r = CALL(g, LOOM_MON_GPU_F_MEM_CLOCK, nv->DeviceGetClockInfo, dev, NVML_CLOCK_MEM, &v)) ==
        NVML_SUCCESS)
        g->memory_clock_hz = v * 1e6;
    if (lost(r))
        goto lost;
    if ((r = CALL(g, LOOM_MON_GPU_F_CLOCKS_EVENT, nv->DeviceGetClocksEventReasons, dev, &ull)) ==
        NVML_SUCCESS)
        g->clocks_event_reasons = ull;
    if (lost(r))
        goto lost;
    unsigned tx = 0, rx = 0;
    r = CALL(g, LOOM_MON_GPU_F_PCIE, nv->DeviceGetPcieThroughput, dev, NVML_PCIE_UTIL_TX_BYTES,
             &tx);
    if (r == NVML_SUCCESS)
        r = CALL(g, LOOM_MON_GPU_F_PCIE, nv->DeviceGetPcieThroughput, dev, NVML_PCIE_UTIL_RX_BYTES,
                 &rx);
    if (r == NVML_SUCCESS) /* KB/s, 1 KB = 1024 B in NVML */
        g->pcie_tx_bytes_per_second = tx * 1024.0, g->pcie_rx_bytes_per_second = rx * 1024.0;
    if (lost(r))
        goto lost;
    unsigned long long corr = 0, unc = 0;
    r = CALL(g, LOOM_MON_GPU_F_ECC, nv->DeviceGetTotalEccErrors, dev,
             NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &corr);
    if (r == NVML_SUCCESS)
        r = CALL(g, LOOM_MON_GPU_F_ECC, nv->DeviceGetTotalEccErrors, dev,
                 NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &unc);
    if (r == NVML_SUCCESS)
        g->ecc_corrected = corr, g->ecc_uncorrected = unc;
    if (lost(r))
        goto lost;
    read_mig(nv, dev, g);
    if (lost(g->field_status[LOOM_MON_GPU_F_MIG]))
        goto lost;
    read_procs(nv, dev, g);
    if (lost(g->field_status[LOOM_MON_GPU_F_PROCESSES]))
        goto lost;
    read_proc_util(nv, dev, g);
    if (lost(g->field_status[LOOM_MON_GPU_F_PROC_UTIL]))
        goto lost;
    return;
lost:
    g->status = NVML_ERROR_GPU_IS_LOST;
    for (int f = 0; f < LOOM_MON_GPU_NFIELDS; f++)
        if (g->field_status[f] == NVML_ERROR_UNKNOWN || g->field_status[f] == NVML_SUCCESS)
            g->field_status[f] = NVML_ERROR_GPU_IS_LOST;
}

int loom_mon__gpu_read(loom_mon_nvml_t **pnv, const char *lib, loom_mon_gpus_t *gpus,
                       loom_err_t *err)
{
    gpus->n = 0;
    gpus->driver_version[0] = gpus->nvml_version[0] = '\0';
    if (!*pnv) {
        *pnv = calloc(1, sizeof **pnv);
        if (!*pnv)
            return loom_err_set(err, LOOM_ENOMEM, "out of memory");
        load(*pnv, lib);
    }
    loom_mon_nvml_t *nv = *pnv;
    snprintf(gpus->library, sizeof gpus->library, "%s", nv->library);
    if (!nv->inited) {
        gpus->source = nv->load_src;
        return LOOM_OK;
    }
    if (nv->SystemGetDriverVersion)
        nv->SystemGetDriverVersion(gpus->driver_version, sizeof gpus->driver_version);
    if (nv->SystemGetNVMLVersion)
        nv->SystemGetNVMLVersion(gpus->nvml_version, sizeof gpus->nvml_version);
    unsigned count = 0;
    int r = nv->DeviceGetCount(&count);
    if (r != NVML_SUCCESS) {
        loom_mon__src_set(&gpus->source, LOOM_EIO, "nvmlDeviceGetCount_v2: %s",
                          loom_mon_nvml_error_name(r));
        return LOOM_OK;
    }
    if (count == 0) {
        loom_mon__src_set(&gpus->source, LOOM_EUNAVAIL, "NVML reports no GPU");
        return LOOM_OK;
    }
    loom_mon__src_ok(&gpus->source);
    if (loom_mon__grow((void **)&gpus->gpus, &gpus->cap_, count, sizeof *gpus->gpus, err))
        return LOOM_ENOMEM;
    for (unsigned i = 0; i < count; i++)
        read_device(nv, i, &gpus->gpus[i]);
    gpus->n = count;
    return LOOM_OK;
}

void loom_mon__gpus_free(loom_mon_gpus_t *g)
{
    for (size_t i = 0; i < g->cap_; i++) {
        free(g->gpus[i].migs);
        free(g->gpus[i].procs);
    }
    free(g->gpus);
    memset(g, 0, sizeof *g);
}

int loom_mon__gpus_copy(loom_mon_gpus_t *dst, const loom_mon_gpus_t *src, loom_err_t *err)
{
    /* dst holds its own arrays (reused); copy the scalars around them. */
    loom_mon_gpu_t *keep = dst->gpus;
    size_t keep_cap = dst->cap_;
    *dst = *src;
    dst->gpus = keep;
    dst->cap_ = keep_cap;
    if (loom_mon__grow((void **)&dst->gpus, &dst->cap_, src->n, sizeof *dst->gpus, err))
        return LOOM_ENOMEM;
    for (size_t i = 0; i < src->n; i++) {
        loom_mon_gpu_t *d = &dst->gpus[i];
        const loom_mon_gpu_t *s = &src->gpus[i];
        loom_mon_gpu_mig_t *migs = d->migs;
        size_t cm = d->cap_migs_;
        loom_mon_gpu_process_t *procs = d->procs;
        size_t cp = d->cap_procs_;
        *d = *s;
        d->migs = migs, d->cap_migs_ = cm, d->procs = procs, d->cap_procs_ = cp;
        if (loom_mon__grow((void **)&d->migs, &d->cap_migs_, s->n_migs, sizeof *d->migs, err) ||
            loom_mon__grow((void **)&d->procs, &d->cap_procs_, s->n_procs, sizeof *d->procs, err))
            return LOOM_ENOMEM;
        if (s->n_migs)
            memcpy(d->migs, s->migs, s->n_migs * sizeof *d->migs);
        if (s->n_procs)
            memcpy(d->procs, s->procs, s->n_procs * sizeof *d->procs);
    }
    return LOOM_OK;
}
