/* loom mon: hardware metrics read at the moment they are asked for.
 *
 * Host (CPU, memory, disks, filesystems, network, RAPL energy, temperatures)
 * from /proc and /sys; processes and cgroup v2 groups; NVIDIA GPUs through
 * NVML loaded with dlopen at run time (no build-time dependency).
 *
 * Shape of the API:
 * - loom_mon_open() makes a collector: it discovers sources once (RAPL
 *   zones, hwmon sensors, ...) and keeps the /proc and /sys files open, so a
 *   reading is a pread per file and a hand-written parse.
 * - loom_mon_read() fills a snapshot (loom_mon_snapshot_t) with the groups
 *   asked for. Counters are cumulative, in base units (bytes, seconds,
 *   joules, hertz, degrees Celsius).
 * - Rates and utilizations need two readings. loom_mon_rates() computes them
 *   from two snapshots (it checks the order); the sampler
 *   (loom_mon_sampler_t) holds the previous reading for you, so that each
 *   loom_mon_sampler_next() gives rates over the interval since the last.
 * - Processes: loom_mon_proc_read() reads one process or tree once; the
 *   tree reader (loom_mon_tree_t) reads one tree many times a second, its
 *   files kept open and new members looked for only when pids were
 *   allocated.
 * - A source that is absent (no RAPL, no hwmon, no GPU driver) is marked
 *   unavailable with the reason (loom_mon_source_t); its numbers are not
 *   zeros to be trusted.
 * - loom_mon_to_json() and loom_mon_to_prom() render a snapshot for the CLI,
 *   the RPC method and GET /metrics; loom_mon_json_*() return JSON text for
 *   the Python binding.
 *
 * See docs/monitoring.md for every field, its unit and its source.
 */
#ifndef LOOM_MON_H
#define LOOM_MON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "loom/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ groups */

enum {
    LOOM_MON_CPU = 1u << 0,     /* /proc/stat, /proc/loadavg, cpufreq, PSI cpu */
    LOOM_MON_MEMORY = 1u << 1,  /* /proc/meminfo, PSI memory */
    LOOM_MON_DISK = 1u << 2,    /* /proc/diskstats, PSI io */
    LOOM_MON_NET = 1u << 3,     /* /proc/net/dev */
    LOOM_MON_FS = 1u << 4,      /* /proc/self/mounts + statfs */
    LOOM_MON_POWER = 1u << 5,   /* /sys/class/powercap (RAPL) */
    LOOM_MON_THERMAL = 1u << 6, /* /sys/class/hwmon, /sys/class/thermal */
    LOOM_MON_GPU = 1u << 7,     /* NVML */
    LOOM_MON_HOST = 0x7fu,      /* every group but gpu */
    LOOM_MON_ALL = 0xffu
};

/* "cpu,memory,gpu", "host", "all". Unknown names are an error naming them. */
int loom_mon_parse_groups(const char *csv, unsigned *groups, loom_err_t *err);
/* Name of one group bit ("cpu"), or NULL. */
const char *loom_mon_group_name(unsigned group);

/* ----------------------------------------------------------------- sources */

/* Whether a source could be read, and if not, why. status is LOOM_OK,
 * LOOM_EUNAVAIL (absent on this machine), or LOOM_EIO / LOOM_EINVAL (present
 * but the read or the parse failed). reason is "" when status is LOOM_OK. */
typedef struct loom_mon_source {
    int status;
    char reason[200];
} loom_mon_source_t;

/* Pressure stall information (/proc/pressure/X or a cgroup's X.pressure).
 * avg* are percentages of wall time; total_seconds is cumulative stall. */
typedef struct loom_mon_psi_line {
    double avg10, avg60, avg300;
    double total_seconds;
} loom_mon_psi_line_t;

typedef struct loom_mon_psi {
    loom_mon_source_t source;
    loom_mon_psi_line_t some;
    loom_mon_psi_line_t full; /* valid if has_full (cpu "full" is 0 on hosts) */
    bool has_full;
} loom_mon_psi_t;

/* --------------------------------------------------------------------- cpu */

enum {
    LOOM_MON_CPU_USER,
    LOOM_MON_CPU_NICE,
    LOOM_MON_CPU_SYSTEM,
    LOOM_MON_CPU_IDLE,
    LOOM_MON_CPU_IOWAIT,
    LOOM_MON_CPU_IRQ,
    LOOM_MON_CPU_SOFTIRQ,
    LOOM_MON_CPU_STEAL,
    LOOM_MON_CPU_GUEST,      /* already included in user (kernel accounting) */
    LOOM_MON_CPU_GUEST_NICE, /* already included in nice */
    LOOM_MON_CPU_NMODES
};
/* "user", "nice", ... as /proc/stat and node_exporter name them. */
const char *loom_mon_cpu_mode_name(int mode);

typedef struct loom_mon_cpu_core {
    int id;                              /* N of "cpuN" */
    double seconds[LOOM_MON_CPU_NMODES]; /* cumulative, per mode */
    double freq_hz;                      /* current, if freq_source ok */
} loom_mon_cpu_core_t;

typedef struct loom_mon_cpu {
    loom_mon_source_t source;            /* /proc/stat */
    double seconds[LOOM_MON_CPU_NMODES]; /* all cores together */
    loom_mon_cpu_core_t *cores;
    size_t n_cores, cap_cores_;
    uint64_t context_switches, interrupts, forks;
    uint64_t procs_running, procs_blocked;
    int64_t boot_time_unix_s;
    loom_mon_source_t freq_source; /* cpufreq scaling_cur_freq */
    loom_mon_source_t load_source; /* /proc/loadavg */
    double load1, load5, load15;
    uint64_t tasks_runnable, tasks_total;
    loom_mon_psi_t pressure; /* /proc/pressure/cpu */
} loom_mon_cpu_t;

/* ------------------------------------------------------------------ memory */

typedef struct loom_mon_memory {
    loom_mon_source_t source; /* /proc/meminfo */
    uint64_t total_bytes, free_bytes, available_bytes;
    uint64_t used_bytes; /* total - free - buffers - cached (as free(1)), >= 0 */
    uint64_t buffers_bytes;
    uint64_t cached_bytes; /* Cached + SReclaimable (as free(1)) */
    uint64_t shared_bytes, dirty_bytes;
    uint64_t swap_total_bytes, swap_free_bytes, swap_used_bytes;
    loom_mon_psi_t pressure; /* /proc/pressure/memory */
} loom_mon_memory_t;

/* -------------------------------------------------------------------- disk */

/* One line of /proc/diskstats, in bytes (sectors are 512 bytes there,
 * whatever the device's block size) and seconds. */
typedef struct loom_mon_disk {
    char name[64];
    unsigned major, minor;
    uint64_t reads, reads_merged, read_bytes;
    uint64_t writes, writes_merged, written_bytes;
    uint64_t discards, discards_merged, discarded_bytes;
    uint64_t flushes;
    uint64_t io_in_progress;
    double read_seconds, write_seconds, discard_seconds, flush_seconds;
    double io_seconds;          /* time the device was busy */
    double io_weighted_seconds; /* time x queue depth */
} loom_mon_disk_t;

typedef struct loom_mon_disks {
    loom_mon_source_t source; /* /proc/diskstats */
    loom_mon_disk_t *disks;
    size_t n, cap_;
    loom_mon_psi_t pressure; /* /proc/pressure/io */
} loom_mon_disks_t;

/* --------------------------------------------------------------------- net */

typedef struct loom_mon_netif {
    char name[64];
    uint64_t rx_bytes, rx_packets, rx_errors, rx_dropped, rx_fifo, rx_frame, rx_compressed,
        rx_multicast;
    uint64_t tx_bytes, tx_packets, tx_errors, tx_dropped, tx_fifo, tx_collisions, tx_carrier,
        tx_compressed;
} loom_mon_netif_t;

typedef struct loom_mon_net {
    loom_mon_source_t source; /* /proc/net/dev */
    loom_mon_netif_t *ifs;
    size_t n, cap_;
} loom_mon_net_t;

/* --------------------------------------------------------------------- fs */

/* A mounted filesystem of a type backed by a device (not "nodev" in
 * /proc/filesystems, plus tmpfs is left out as not real storage). */
typedef struct loom_mon_fs {
    char device[128];
    char mountpoint[256];
    char fstype[32];
    bool readonly;
    loom_mon_source_t source;                     /* statfs of this mount */
    uint64_t size_bytes, free_bytes, avail_bytes; /* avail: for non-root users */
    uint64_t files, files_free;
} loom_mon_fs_t;

typedef struct loom_mon_fss {
    loom_mon_source_t source; /* /proc/self/mounts */
    loom_mon_fs_t *fs;
    size_t n, cap_;
    size_t skipped_long; /* mounts left out because a name exceeded the fields */
} loom_mon_fss_t;

/* ------------------------------------------------------------------- power */

typedef struct loom_mon_rapl_zone {
    char id[64];              /* "intel-rapl:0:1" */
    char name[64];            /* "package-0", "dram", "core" */
    double energy_joules;     /* cumulative, wraps at max_energy_joules */
    double max_energy_joules; /* wrap point (max_energy_range_uj) */
    loom_mon_source_t source;
} loom_mon_rapl_zone_t;

typedef struct loom_mon_power {
    loom_mon_source_t source; /* /sys/class/powercap */
    loom_mon_rapl_zone_t *zones;
    size_t n, cap_;
} loom_mon_power_t;

/* ----------------------------------------------------------------- thermal */

typedef struct loom_mon_temp {
    char kind[16];   /* "hwmon" or "thermal_zone" */
    char chip[64];   /* hwmon name ("coretemp") or zone type ("x86_pkg_temp") */
    char sensor[64]; /* "temp1" / label ("Package id 0"), or "thermal_zone0" */
    double celsius;
    loom_mon_source_t source;
} loom_mon_temp_t;

typedef struct loom_mon_thermal {
    loom_mon_source_t hwmon_source; /* /sys/class/hwmon */
    loom_mon_source_t zone_source;  /* /sys/class/thermal/thermal_zone* */
    loom_mon_temp_t *temps;
    size_t n, cap_;
} loom_mon_thermal_t;

/* --------------------------------------------------------------------- gpu */

/* Per-device NVML queries; status of each is kept in field_status[]. */
enum {
    LOOM_MON_GPU_F_UTIL,         /* nvmlDeviceGetUtilizationRates */
    LOOM_MON_GPU_F_MEMORY,       /* nvmlDeviceGetMemoryInfo */
    LOOM_MON_GPU_F_POWER,        /* nvmlDeviceGetPowerUsage */
    LOOM_MON_GPU_F_ENERGY,       /* nvmlDeviceGetTotalEnergyConsumption */
    LOOM_MON_GPU_F_TEMP,         /* nvmlDeviceGetTemperature (GPU sensor) */
    LOOM_MON_GPU_F_SM_CLOCK,     /* nvmlDeviceGetClockInfo(NVML_CLOCK_SM) */
    LOOM_MON_GPU_F_MEM_CLOCK,    /* nvmlDeviceGetClockInfo(NVML_CLOCK_MEM) */
    LOOM_MON_GPU_F_CLOCKS_EVENT, /* nvmlDeviceGetCurrentClocksEventReasons */
    LOOM_MON_GPU_F_PCIE,         /* nvmlDeviceGetPcieThroughput (TX and RX) */
    LOOM_MON_GPU_F_ECC,          /* nvmlDeviceGetTotalEccErrors (volatile) */
    LOOM_MON_GPU_F_MIG,          /* nvmlDeviceGetMigMode + MIG devices */
    LOOM_MON_GPU_F_PROCESSES,    /* nvmlDeviceGet{Compute,Graphics}RunningProcesses */
    LOOM_MON_GPU_F_PROC_UTIL,    /* nvmlDeviceGetProcessUtilization */
    LOOM_MON_GPU_NFIELDS
};
/* "utilization", "memory", ... (the JSON names). */
const char *loom_mon_gpu_field_name(int field);
/* "NVML_ERROR_NOT_SUPPORTED" for an NVML return code; "NVML_ERROR_<n>"
 * for one this build does not know. */
const char *loom_mon_nvml_error_name(int nvml_code);

typedef struct loom_mon_gpu_process {
    uint32_t pid;
    bool compute, graphics;
    bool memory_known; /* false: NVML_VALUE_NOT_AVAILABLE */
    uint64_t used_memory_bytes;
    bool util_valid; /* a utilization sample newer than the last read */
    unsigned sm_util_pct, mem_util_pct, enc_util_pct, dec_util_pct;
    uint64_t util_timestamp_us; /* CPU timestamp of that sample */
} loom_mon_gpu_process_t;

typedef struct loom_mon_gpu_mig {
    unsigned index;
    char uuid[96];
    char name[96];
    int memory_status; /* NVML code of nvmlDeviceGetMemoryInfo on the MIG device */
    uint64_t memory_total_bytes, memory_used_bytes;
    int util_status; /* NVML code of nvmlDeviceGetUtilizationRates (NOT_SUPPORTED on MIG) */
    unsigned util_gpu_pct, util_memory_pct;
} loom_mon_gpu_mig_t;

typedef struct loom_mon_gpu {
    unsigned index;
    char name[96];
    char uuid[96];
    int status; /* NVML code of the handle, name and UUID; GPU_IS_LOST etc. */
    int field_status[LOOM_MON_GPU_NFIELDS]; /* NVML return code per field, 0 ok */
    unsigned util_gpu_pct, util_memory_pct;
    uint64_t memory_total_bytes, memory_used_bytes, memory_free_bytes;
    double power_watts;
    double energy_joules; /* since the driver loaded */
    double temperature_celsius;
    double sm_clock_hz, memory_clock_hz;
    uint64_t clocks_event_reasons; /* NVML bit mask (nvmlClocksEventReason*) */
    double pcie_tx_bytes_per_second, pcie_rx_bytes_per_second; /* NVML's own 20 ms window */
    uint64_t ecc_corrected, ecc_uncorrected;                   /* volatile (since boot) totals */
    unsigned mig_current, mig_pending;
    loom_mon_gpu_mig_t *migs;
    size_t n_migs, cap_migs_;
    loom_mon_gpu_process_t *procs;
    size_t n_procs, cap_procs_;
} loom_mon_gpu_t;

typedef struct loom_mon_gpus {
    loom_mon_source_t source; /* libnvidia-ml loaded and initialised */
    char library[256];        /* path or soname that was loaded */
    char driver_version[96];
    char nvml_version[96];
    loom_mon_gpu_t *gpus;
    size_t n, cap_;
} loom_mon_gpus_t;

/* ---------------------------------------------------------------- snapshot */

/* One reading. Initialise with loom_mon_snapshot_init, reuse across reads
 * (arrays are kept), release with loom_mon_snapshot_free. Only the groups in
 * `groups` are meaningful. */
typedef struct loom_mon_snapshot {
    unsigned groups;
    int64_t mono_ns; /* CLOCK_MONOTONIC at the start of the reading */
    int64_t real_ns; /* wall clock, ns since the epoch */
    loom_mon_cpu_t cpu;
    loom_mon_memory_t memory;
    loom_mon_disks_t disk;
    loom_mon_net_t net;
    loom_mon_fss_t fs;
    loom_mon_power_t power;
    loom_mon_thermal_t thermal;
    loom_mon_gpus_t gpu;
} loom_mon_snapshot_t;

void loom_mon_snapshot_init(loom_mon_snapshot_t *s);
void loom_mon_snapshot_free(loom_mon_snapshot_t *s);
/* Deep copy (dst must be initialised; its arrays are reused). */
int loom_mon_snapshot_copy(loom_mon_snapshot_t *dst, const loom_mon_snapshot_t *src,
                           loom_err_t *err);

/* --------------------------------------------------------------- collector */

typedef struct loom_mon loom_mon_t;

typedef struct loom_mon_opts {
    const char *proc_root; /* default "/proc" (tests point it at a fixture) */
    const char *sys_root;  /* default "/sys" */
    /* NVML library to dlopen: default $LOOM_NVML_LIB, else
     * "libnvidia-ml.so.1" (found through the loader's search path). */
    const char *nvml_lib;
} loom_mon_opts_t;

/* opts may be NULL. Fails only if /proc/stat cannot be opened; every other
 * absent source is reported in the snapshots. */
int loom_mon_open(loom_mon_t **out, const loom_mon_opts_t *opts, loom_err_t *err);
void loom_mon_close(loom_mon_t *m);

/* Reads the groups asked for into snap. Returns LOOM_OK even when some
 * sources are unavailable (see each loom_mon_source_t); an error return
 * means an invalid argument or out of memory. */
int loom_mon_read(loom_mon_t *m, unsigned groups, loom_mon_snapshot_t *snap, loom_err_t *err);

/* ------------------------------------------------------------------- rates */

typedef struct loom_mon_disk_rate {
    char name[64];
    double read_bytes_per_second, write_bytes_per_second;
    double reads_per_second, writes_per_second;
    double busy_fraction; /* io_seconds delta / interval, 0..1 */
} loom_mon_disk_rate_t;

typedef struct loom_mon_net_rate {
    char name[64];
    double rx_bytes_per_second, tx_bytes_per_second;
    double rx_packets_per_second, tx_packets_per_second;
} loom_mon_net_rate_t;

typedef struct loom_mon_power_rate {
    char id[64];
    char name[64];
    double watts; /* energy delta (wrap handled) / interval */
} loom_mon_power_rate_t;

typedef struct loom_mon_gpu_rate {
    unsigned index;
    char uuid[96];
    double watts; /* from the energy counter; NAN if it was not read twice */
} loom_mon_gpu_rate_t;

/* Rates over the interval between two snapshots. A value is NAN when it
 * cannot be computed: the item is new in cur, its counter went backwards
 * (a reset), or its source was unavailable in either reading. */
typedef struct loom_mon_rates {
    unsigned groups; /* groups present in both snapshots */
    double interval_seconds;
    int64_t cur_mono_ns;      /* mono_ns of the later snapshot (renderers check it) */
    double cpu_busy_fraction; /* all cores: 1 - (idle+iowait)/total */
    double cpu_mode_fraction[LOOM_MON_CPU_NMODES];
    double *core_busy_fraction; /* per cores[i] of cur */
    size_t n_cores, cap_cores_;
    loom_mon_disk_rate_t *disks;
    size_t n_disks, cap_disks_;
    loom_mon_net_rate_t *nets;
    size_t n_nets, cap_nets_;
    loom_mon_power_rate_t *power;
    size_t n_power, cap_power_;
    loom_mon_gpu_rate_t *gpus;
    size_t n_gpus, cap_gpus_;
} loom_mon_rates_t;

void loom_mon_rates_init(loom_mon_rates_t *r);
void loom_mon_rates_free(loom_mon_rates_t *r);
/* prev must be strictly older than cur (LOOM_EINVAL otherwise: the usual
 * mistake of swapping the arguments or passing one snapshot twice). */
int loom_mon_rates(const loom_mon_snapshot_t *prev, const loom_mon_snapshot_t *cur,
                   loom_mon_rates_t *out, loom_err_t *err);

/* The sampler: holds the previous reading so that callers cannot mix them
 * up. open() takes the first reading; each next() takes a new one and
 * computes rates over the interval since the previous. */
typedef struct loom_mon_sampler loom_mon_sampler_t;

/* m is borrowed (must outlive the sampler). */
int loom_mon_sampler_open(loom_mon_sampler_t **out, loom_mon_t *m, unsigned groups,
                          loom_err_t *err);
int loom_mon_sampler_next(loom_mon_sampler_t *s, loom_err_t *err);
/* The latest reading and the rates from the one before. Valid until the
 * next call to next() or close(). */
const loom_mon_snapshot_t *loom_mon_sampler_snapshot(const loom_mon_sampler_t *s);
const loom_mon_rates_t *loom_mon_sampler_rates(const loom_mon_sampler_t *s);
void loom_mon_sampler_close(loom_mon_sampler_t *s);

/* ------------------------------------------------------- processes, cgroups */

typedef struct loom_mon_proc {
    pid_t pid;
    bool tree;     /* pid and all its descendants */
    char comm[64]; /* name of pid */
    uint32_t n_processes;
    double user_seconds, system_seconds;
    uint64_t rss_bytes, vm_bytes;
    uint64_t threads;
    uint64_t voluntary_ctxt_switches, nonvoluntary_ctxt_switches;
    loom_mon_source_t io_source;       /* /proc/PID/io (needs ptrace access) */
    uint64_t read_bytes, write_bytes;  /* storage I/O */
    uint64_t rchar_bytes, wchar_bytes; /* all read()/write() */
} loom_mon_proc_t;

/* LOOM_ENOTFOUND if pid does not exist. In a tree, processes that exit
 * during the scan are skipped. */
int loom_mon_proc_read(loom_mon_t *m, pid_t pid, bool tree, loom_mon_proc_t *out, loom_err_t *err);

/* The incremental process-tree reader: a tree read many times a second (a
 * profiler's tick, a job's usage). loom_mon_proc_read(tree) walks all of
 * /proc on every call; the tree reader instead
 * - keeps /proc/PID/stat (and with details status and io) of every member
 *   open: a reading is one pread per file and member, no allocation;
 * - looks for new members only when a pid has been allocated since it last
 *   looked (the last field of /proc/loadavg, one pread per check; checks
 *   at most every discover_ns), and then reads the members' children files
 *   (/proc/PID/task/TID/children; one pread per single-threaded member) and
 *   opens only the children it does not know: a cost that grows with the
 *   tree, not with the host. Without children files (a kernel without
 *   CONFIG_PROC_CHILDREN) a look lists /proc and opens only the pids
 *   allocated since the last look;
 * - walks all of /proc every rescan_ns, as a safety net.
 * Membership: the root, and every process whose parent is a member when it
 * is found. A member stays one until it is reaped (a re-parented orphan
 * keeps being counted). */
typedef struct loom_mon_tree loom_mon_tree_t;

typedef struct loom_mon_tree_opts {
    int64_t rescan_ns;   /* full walk of /proc at least this often; 0: 10 s; < 0: never */
    int64_t discover_ns; /* check for new pids (a pread of /proc/loadavg, then a look if there
                            are any) at most once per this period; 0: at every reading */
    bool details;        /* also read status (context switches) and io of each member */
} loom_mon_tree_opts_t;

typedef struct loom_mon_tree_stats {
    uint64_t readings;
    uint64_t looks;      /* walks of /proc limited to new pids */
    uint64_t full_scans; /* walks that probed every pid (the first, and each rescan) */
    uint64_t probes;     /* /proc/PID/stat files opened to test for membership */
    uint64_t members;    /* processes ever tracked, the root included */
} loom_mon_tree_stats_t;

/* opts may be NULL. The tree borrows m (for its /proc root). LOOM_ENOTFOUND
 * if root does not exist, LOOM_EINVAL for root <= 0. */
int loom_mon_tree_open(loom_mon_tree_t **out, loom_mon_t *m, pid_t root,
                       const loom_mon_tree_opts_t *opts, loom_err_t *err);
/* Reads every member; fills out as loom_mon_proc_read(m, root, true) does,
 * except that user_seconds and system_seconds are the tree's cumulative CPU:
 * the members' own and that of the children they have reaped (cutime,
 * cstime), plus the last reading of members that ended without a member to
 * reap them; it never goes back. On the real /proc a live member's own CPU
 * is read from its CPU-time clock (clock_getcpuclockid): nanoseconds, exact
 * for threads not running, up to one scheduler tick (1/CONFIG_HZ) behind
 * for a thread running on another CPU; not from the 10 ms clock ticks of
 * /proc/PID/stat, which only split it into user and system time (both
 * monotonic, their sum the total) and count the reaped children. n_processes counts the members
 * read now (zombies too; 0 once all have been reaped). Without details the context switches are 0
 * and io_source is LOOM_EUNAVAIL. */
int loom_mon_tree_read(loom_mon_tree_t *t, loom_mon_proc_t *out, loom_err_t *err);
/* A full walk of /proc now (before a last reading that must not miss a
 * process born since the last look). */
int loom_mon_tree_rescan(loom_mon_tree_t *t, loom_err_t *err);
/* Whether pid was a live member at the last reading. */
bool loom_mon_tree_has(const loom_mon_tree_t *t, pid_t pid);
void loom_mon_tree_stats(const loom_mon_tree_t *t, loom_mon_tree_stats_t *out);
void loom_mon_tree_close(loom_mon_tree_t *t);

typedef struct loom_mon_cgroup {
    char path[512];               /* the cgroup directory read */
    loom_mon_source_t cpu_source; /* cpu.stat */
    double cpu_usage_seconds, cpu_user_seconds, cpu_system_seconds;
    uint64_t nr_periods, nr_throttled;
    double throttled_seconds;
    loom_mon_source_t memory_source; /* memory.current */
    uint64_t memory_current_bytes;
    loom_mon_source_t memory_peak_source; /* memory.peak (kernel >= 5.19) */
    uint64_t memory_peak_bytes;
    loom_mon_source_t memory_max_source; /* memory.max; "max" = no limit */
    bool memory_limited;
    uint64_t memory_max_bytes;
    loom_mon_source_t memory_stat_source; /* memory.stat */
    uint64_t memory_anon_bytes, memory_file_bytes, memory_kernel_bytes, memory_shmem_bytes;
    loom_mon_source_t memory_events_source; /* memory.events */
    uint64_t memory_oom_events, memory_oom_kills, memory_max_events;
    loom_mon_source_t pids_source; /* pids.current */
    uint64_t pids_current;
    loom_mon_source_t io_source; /* io.stat, summed over devices */
    uint64_t io_read_bytes, io_write_bytes, io_reads, io_writes, io_discard_bytes, io_discards;
    loom_mon_psi_t cpu_pressure, memory_pressure, io_pressure;
} loom_mon_cgroup_t;

/* path: absolute, or relative to the cgroup v2 mount point. LOOM_ENOTFOUND
 * if the directory does not exist. */
int loom_mon_cgroup_read(loom_mon_t *m, const char *path, loom_mon_cgroup_t *out, loom_err_t *err);

/* ------------------------------------------------------------------ render */

/* JSON object, grouped by cpu, memory, disk, net, fs, power, thermal, gpu,
 * with base units in field names; rates (may be NULL) add "*_per_second" and
 * fraction fields. Appends to out. Rates computed for another snapshot
 * (cur_mono_ns differs) are refused with LOOM_EINVAL. */
int loom_mon_to_json(const loom_mon_snapshot_t *s, const loom_mon_rates_t *rates, loom_buf_t *out,
                     loom_err_t *err);
int loom_mon_proc_to_json(const loom_mon_proc_t *p, loom_buf_t *out, loom_err_t *err);
int loom_mon_cgroup_to_json(const loom_mon_cgroup_t *c, loom_buf_t *out, loom_err_t *err);

/* A readable table, one line per group and item (loom mon's default). */
int loom_mon_to_text(const loom_mon_snapshot_t *s, const loom_mon_rates_t *rates, loom_buf_t *out,
                     loom_err_t *err);
int loom_mon_proc_to_text(const loom_mon_proc_t *p, loom_buf_t *out, loom_err_t *err);
int loom_mon_cgroup_to_text(const loom_mon_cgroup_t *c, loom_buf_t *out, loom_err_t *err);

/* Prometheus text exposition format 0.0.4: families "loom_<group>_...",
 * base units, counters ending in _total, HELP and TYPE for each. Appends. */
int loom_mon_to_prom(const loom_mon_snapshot_t *s, loom_buf_t *out, loom_err_t *err);
/* GET /metrics in one call: reads groups with m and appends their
 * Prometheus text to out. Not thread-safe per m (hold a lock). */
int loom_mon_read_prom(loom_mon_t *m, unsigned groups, loom_buf_t *out, loom_err_t *err);
/* Per-job accounting for /metrics: n cgroups (or processes), each labelled
 * job_id="jobs[i]" (not "job": Prometheus sets that label on scrape), as families loom_job_cgroup_*
 * (loom_job_process_*), one HELP/TYPE per family across all jobs. Unavailable files are left out.
 */
int loom_mon_cgroups_to_prom(const loom_mon_cgroup_t *cgs, const char *const *jobs, size_t n,
                             loom_buf_t *out, loom_err_t *err);
int loom_mon_procs_to_prom(const loom_mon_proc_t *procs, const char *const *jobs, size_t n,
                           loom_buf_t *out, loom_err_t *err);

/* ---------------------------------------------------- JSON-text entry points */

/* For bindings (python/loom/monitor.py): each returns LOOM_OK and sets *json
 * to a malloc'd NUL-terminated string (free with loom_mon_free), or returns
 * an error and writes its message to errbuf (errlen bytes, may be 0). */
int loom_mon_json_snapshot(loom_mon_t *m, const char *groups, char **json, char *errbuf,
                           size_t errlen);
int loom_mon_json_proc(loom_mon_t *m, int pid, int tree, char **json, char *errbuf, size_t errlen);
int loom_mon_json_cgroup(loom_mon_t *m, const char *path, char **json, char *errbuf, size_t errlen);
/* Sampler: snapshot and rates of the interval since the previous call. */
int loom_mon_json_sampler_next(loom_mon_sampler_t *s, char **json, char *errbuf, size_t errlen);
/* open/close for bindings: m from loom_mon_open(NULL opts), groups as text. */
int loom_mon_json_open(loom_mon_t **m, char *errbuf, size_t errlen);
int loom_mon_json_sampler_open(loom_mon_t *m, const char *groups, loom_mon_sampler_t **s,
                               char *errbuf, size_t errlen);
void loom_mon_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
