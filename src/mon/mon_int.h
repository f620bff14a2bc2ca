/* Private to src/mon: the pure parsers (byte buffer in, struct out, no I/O,
 * fuzzed by tests/fuzz/fuzz_mon_*.c), the growth helper, and the collector
 * state shared by host.c, proc.c and gpu_nvml.c. */
#ifndef LOOM_MON_INT_H
#define LOOM_MON_INT_H

#include "loom/mon.h"

/* Grows *arr (elements of size elem) so that it holds at least need; new
 * elements are zeroed. */
int loom_mon__grow(void **arr, size_t *cap, size_t need, size_t elem, loom_err_t *err);

void loom_mon__src_ok(loom_mon_source_t *s);
void loom_mon__src_set(loom_mon_source_t *s, int status, const char *fmt, ...) LOOM_PRINTF(3, 4);

/* ---- parsers: each reads buf[0..len) (not NUL-terminated), names the
 * file as `name` in errors ("NAME: line N: expected ..."). */

/* /proc/stat: cpu lines, ctxt, intr (first number), processes, procs_*,
 * btime. ticks_per_second is sysconf(_SC_CLK_TCK). */
int loom_mon__parse_stat(const char *buf, size_t len, const char *name, double ticks_per_second,
                         loom_mon_cpu_t *cpu, loom_err_t *err);
int loom_mon__parse_loadavg(const char *buf, size_t len, const char *name, loom_mon_cpu_t *cpu,
                            loom_err_t *err);
/* "some avg10=.. avg60=.. avg300=.. total=<us>" and "full ..." lines. */
int loom_mon__parse_psi(const char *buf, size_t len, const char *name, loom_mon_psi_t *psi,
                        loom_err_t *err);
int loom_mon__parse_meminfo(const char *buf, size_t len, const char *name, loom_mon_memory_t *mem,
                            loom_err_t *err);
int loom_mon__parse_diskstats(const char *buf, size_t len, const char *name,
                              loom_mon_disks_t *disks, loom_err_t *err);
int loom_mon__parse_netdev(const char *buf, size_t len, const char *name, loom_mon_net_t *net,
                           loom_err_t *err);

/* /proc/filesystems: the types not marked "nodev", as "\0"-separated names
 * in out (appended), count in *n. */
int loom_mon__parse_filesystems(const char *buf, size_t len, const char *name, loom_buf_t *out,
                                size_t *n, loom_err_t *err);
/* /proc/self/mounts: entries whose fstype is in the \0-separated list
 * `types` (n_types names) and not tmpfs, with octal escapes decoded. A
 * device seen twice (bind mounts) is kept once, first mount wins. Fills
 * device, mountpoint, fstype, readonly; statfs is the caller's. */
int loom_mon__parse_mounts(const char *buf, size_t len, const char *name, const char *types,
                           size_t n_types, loom_mon_fss_t *fss, loom_err_t *err);

/* /proc/PID/stat. */
typedef struct loom_mon_pidstat {
    char comm[64];
    char state;
    int64_t ppid;
    uint64_t utime_ticks, stime_ticks;
    uint64_t cutime_ticks, cstime_ticks; /* of the children it has waited for */
    uint64_t num_threads;
    uint64_t starttime_ticks;
    uint64_t vsize_bytes;
    uint64_t rss_pages;
} loom_mon_pidstat_t;
int loom_mon__parse_pidstat(const char *buf, size_t len, const char *name, loom_mon_pidstat_t *out,
                            loom_err_t *err);

/* The pid allocated last in the reader's pid namespace: the fifth field of
 * /proc/loadavg ("0.42 0.35 0.30 2/145 31994"). */
int loom_mon__parse_last_pid(const char *buf, size_t len, const char *name, int64_t *pid,
                             loom_err_t *err);

/* /proc/PID/task/TID/children: pids separated by blanks ("812 813 "),
 * appended to *pids (grown as needed; *n in use, *cap allocated). */
int loom_mon__parse_pid_list(const char *buf, size_t len, const char *name, pid_t **pids, size_t *n,
                             size_t *cap, loom_err_t *err);

/* "key value" (or "key: value") lines: for each keys[i] found, vals[i] is
 * set and bit i of *found. Keys are exact words; values unsigned decimal
 * (an optional " kB" suffix multiplies by 1024 when kb is true). */
int loom_mon__parse_keyed(const char *buf, size_t len, const char *name, const char *const *keys,
                          size_t n_keys, uint64_t *vals, uint64_t *found, loom_err_t *err);
/* cgroup io.stat: "MAJ:MIN rbytes=N wbytes=N rios=N wios=N dbytes=N dios=N",
 * summed over devices. */
int loom_mon__parse_iostat(const char *buf, size_t len, const char *name, loom_mon_cgroup_t *cg,
                           loom_err_t *err);
/* A file holding one integer (sysfs): optional sign, digits, optional
 * newline. "max" is accepted when max_ok, giving UINT64_MAX. */
int loom_mon__parse_int_file(const char *buf, size_t len, const char *name, bool max_ok,
                             int64_t *out, loom_err_t *err);

/* ---- GPU (gpu_nvml.c). */
typedef struct loom_mon_nvml loom_mon_nvml_t;
/* Loads and initialises on first call; records failure in gpus->source. */
int loom_mon__gpu_read(loom_mon_nvml_t **nv, const char *lib, loom_mon_gpus_t *gpus,
                       loom_err_t *err);
void loom_mon__gpu_close(loom_mon_nvml_t *nv);
void loom_mon__gpus_free(loom_mon_gpus_t *g);
int loom_mon__gpus_copy(loom_mon_gpus_t *dst, const loom_mon_gpus_t *src, loom_err_t *err);

/* Root paths of a collector (for proc.c). */
const char *loom_mon__proc_root(const loom_mon_t *m);
const char *loom_mon__sys_root(const loom_mon_t *m);
double loom_mon__ticks_per_second(const loom_mon_t *m);
/* The cgroup v2 mount point ("" if none), found in ROOT/self/mounts once and
 * looked up again only if that directory disappears. */
const char *loom_mon__cgroup2_mount(loom_mon_t *m);
/* pread the whole file at fd into buf (grown as needed). */
int loom_mon__pread_all(int fd, loom_buf_t *buf, const char *name, loom_err_t *err);
/* open+read+close a small file. ENOENT gives LOOM_ENOTFOUND. */
int loom_mon__read_small(const char *path, loom_buf_t *buf, loom_err_t *err);

#endif
