/* The part of NVIDIA's NVML C API that loom uses, declared from NVIDIA's
 * public "NVML API Reference Guide" (types, values and signatures), so that
 * loom builds without the CUDA toolkit and loads libnvidia-ml.so.1 with
 * dlopen at run time. The test double (tests/nvml/nvml_double.c) exports
 * the same symbols with these signatures.
 *
 * Only what loom calls is here. Struct layouts must match the driver's
 * exactly: they are passed by pointer across the library boundary. */
#ifndef LOOM_NVML_API_H
#define LOOM_NVML_API_H

typedef int nvmlReturn_t; /* an enum in nvml.h: int-sized */

#define NVML_SUCCESS                         0
#define NVML_ERROR_UNINITIALIZED             1
#define NVML_ERROR_INVALID_ARGUMENT          2
#define NVML_ERROR_NOT_SUPPORTED             3
#define NVML_ERROR_NO_PERMISSION             4
#define NVML_ERROR_ALREADY_INITIALIZED       5
#define NVML_ERROR_NOT_FOUND                 6
#define NVML_ERROR_INSUFFICIENT_SIZE         7
#define NVML_ERROR_INSUFFICIENT_POWER        8
#define NVML_ERROR_DRIVER_NOT_LOADED         9
#define NVML_ERROR_TIMEOUT                   10
#define NVML_ERROR_IRQ_ISSUE                 11
#define NVML_ERROR_LIBRARY_NOT_FOUND         12
#define NVML_ERROR_FUNCTION_NOT_FOUND        13
#define NVML_ERROR_CORRUPTED_INFOROM         14
#define NVML_ERROR_GPU_IS_LOST               15
#define NVML_ERROR_RESET_REQUIRED            16
#define NVML_ERROR_OPERATING_SYSTEM          17
#define NVML_ERROR_LIB_RM_VERSION_MISMATCH   18
#define NVML_ERROR_IN_USE                    19
#define NVML_ERROR_MEMORY                    20
#define NVML_ERROR_NO_DATA                   21
#define NVML_ERROR_VGPU_ECC_NOT_SUPPORTED    22
#define NVML_ERROR_INSUFFICIENT_RESOURCES    23
#define NVML_ERROR_FREQ_NOT_SUPPORTED        24
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH 25
#define NVML_ERROR_DEPRECATED                26
#define NVML_ERROR_NOT_READY                 27
#define NVML_ERROR_GPU_NOT_FOUND             28
#define NVML_ERROR_INVALID_STATE             29
#define NVML_ERROR_UNKNOWN                   999

#define NVML_TEMPERATURE_GPU               0
#define NVML_CLOCK_GRAPHICS                0
#define NVML_CLOCK_SM                      1
#define NVML_CLOCK_MEM                     2
#define NVML_PCIE_UTIL_TX_BYTES            0
#define NVML_PCIE_UTIL_RX_BYTES            1
#define NVML_MEMORY_ERROR_TYPE_CORRECTED   0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC                  0
#define NVML_DEVICE_MIG_ENABLE             1

#define NVML_DEVICE_NAME_V2_BUFFER_SIZE        96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE        96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE   80
#define NVML_VALUE_NOT_AVAILABLE_ULL           (~0ULL)

typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct nvmlUtilization_st {
    unsigned int gpu;    /* percent of time a kernel was running */
    unsigned int memory; /* percent of time device memory was read or written */
} nvmlUtilization_t;

typedef struct nvmlMemory_st {
    unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;

/* nvmlProcessInfo_v2_t / nvmlProcessInfo_t of the _v2 and _v3 process
 * queries. */
typedef struct nvmlProcessInfo_st {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* bytes, or NVML_VALUE_NOT_AVAILABLE */
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

/* nvmlProcessInfo_v1_t of the unversioned (oldest) process queries. */
typedef struct nvmlProcessInfo_v1_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct nvmlProcessUtilizationSample_st {
    unsigned int pid;
    unsigned long long timeStamp; /* CPU timestamp, microseconds */
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

/* Function types, named after the NVML function. */
typedef nvmlReturn_t (*nvmlInit_v2_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char *(*nvmlErrorString_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlSystemGetDriverVersion_fn)(char *, unsigned int);
typedef nvmlReturn_t (*nvmlSystemGetNVMLVersion_fn)(char *, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2_fn)(unsigned int *);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetUUID_fn)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRates_fn)(nvmlDevice_t, nvmlUtilization_t *);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t, nvmlMemory_t *);
typedef nvmlReturn_t (*nvmlDeviceGetPowerUsage_fn)(nvmlDevice_t, unsigned int *);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEnergyConsumption_fn)(nvmlDevice_t, unsigned long long *);
typedef nvmlReturn_t (*nvmlDeviceGetTemperature_fn)(nvmlDevice_t, int, unsigned int *);
typedef nvmlReturn_t (*nvmlDeviceGetClockInfo_fn)(nvmlDevice_t, int, unsigned int *);
typedef nvmlReturn_t (*nvmlDeviceGetCurrentClocksEventReasons_fn)(nvmlDevice_t,
                                                                  unsigned long long *);
typedef nvmlReturn_t (*nvmlDeviceGetPcieThroughput_fn)(nvmlDevice_t, int, unsigned int *);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEccErrors_fn)(nvmlDevice_t, int, int,
                                                       unsigned long long *);
typedef nvmlReturn_t (*nvmlDeviceGetMigMode_fn)(nvmlDevice_t, unsigned int *, unsigned int *);
typedef nvmlReturn_t (*nvmlDeviceGetMaxMigDeviceCount_fn)(nvmlDevice_t, unsigned int *);
typedef nvmlReturn_t (*nvmlDeviceGetMigDeviceHandleByIndex_fn)(nvmlDevice_t, unsigned int,
                                                               nvmlDevice_t *);
typedef nvmlReturn_t (*nvmlDeviceGetRunningProcesses_fn)(nvmlDevice_t, unsigned int *,
                                                         nvmlProcessInfo_t *);
typedef nvmlReturn_t (*nvmlDeviceGetRunningProcesses_v1_fn)(nvmlDevice_t, unsigned int *,
                                                            nvmlProcessInfo_v1_t *);
typedef nvmlReturn_t (*nvmlDeviceGetProcessUtilization_fn)(nvmlDevice_t,
                                                           nvmlProcessUtilizationSample_t *,
                                                           unsigned int *, unsigned long long);

#endif
