/* Per-process and per-cgroup accounting: what a job used.
 *
 * A process (or the tree under it) is read from /proc/PID/{stat,status,io};
 * the tree is found by one scan of /proc building parent links, then a walk
 * from the root pid. Processes that exit while we scan are skipped, as the
 * race is inherent. A cgroup v2 directory is read from its cpu.stat,
 * memory.current, memory.peak, io.stat and *.pressure files; each missing
 * file (controller not enabled, old kernel) is unavailable with the reason.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mon/mon_int.h"

typedef struct pidlink {
    pid_t pid, ppid;
} pidlink_t;

/* Adds one process's figures to out; LOOM_ENOTFOUND if it vanished. */
static int add_pid(loom_mon_t *m, pid_t pid, loom_mon_proc_t *out, loom_buf_t *b, bool first,
                   loom_err_t *err)
{
    const char *root = loom_mon__proc_root(m);
    char path[512];
    snprintf(path, sizeof path, "%s/%d/stat", root, (int)pid);
    int rc = loom_mon__read_small(path, b, err);
    if (rc)
        return rc;
    loom_mon_pidstat_t ps;
    rc = loom_mon__parse_pidstat(b->data, b->len, path, &ps, err);
    if (rc)
        return rc;
    double hz = loom_mon__ticks_per_second(m);
    long page = sysconf(_SC_PAGESIZE);
    out->n_processes++;
    if (first)
        snprintf(out->comm, sizeof out->comm, "%s", ps.comm);
    out->user_seconds += (double)ps.utime_ticks / hz;
    out->system_seconds += (double)ps.stime_ticks / hz;
    out->rss_bytes += ps.rss_pages * (uint64_t)page;
    out->vm_bytes += ps.vsize_bytes;
    out->threads += ps.num_threads;

    snprintf(path, sizeof path, "%s/%d/status", root, (int)pid);
    if (loom_mon__read_small(path, b, NULL) == LOOM_OK) {
        static const char *const keys[] = {"voluntary_ctxt_switches:",
                                           "nonvoluntary_ctxt_switches:"};
        uint64_t v[2] = {0}, found;
        if (loom_mon__parse_keyed(b->data, b->len, path, keys, 2, v, &found, NULL) == LOOM_OK) {
            out->voluntary_ctxt_switches += v[0];
            out->nonvoluntary_ctxt_switches += v[1];
        }
    }
    snprintf(path, sizeof path, "%s/%d/io", root, (int)pid);
    loom_err_t e;
    if (loom_mon__read_small(path, b, &e) == LOOM_OK) {
        static const char *const keys[] = {"rchar:", "wchar:", "read_bytes:", "write_bytes:"};
        uint64_t v[4] = {0}, found;
        if (loom_mon__parse_keyed(b->data, b->len, path, keys, 4, v, &found, &e) == LOOM_OK) {
            out->rchar_bytes += v[0];
            out->wchar_bytes += v[1];
            out->read_bytes += v[2];
            out->write_bytes += v[3];
        }
    } else if (out->io_source.status == LOOM_OK && e.code != LOOM_ENOTFOUND) {
        /* /proc/PID/io needs PTRACE_MODE_READ: other users' processes fail. */
        loom_mon__src_set(&out->io_source, LOOM_EUNAVAIL, "%s", e.msg);
    }
    return LOOM_OK;
}

static int scan_links(const char *root, pidlink_t **out, size_t *n, loom_buf_t *b)
{
    DIR *d = opendir(root);
    if (!d)
        return LOOM_EIO;
    size_t cap = 0;
    *n = 0;
    *out = NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s/stat", root, e->d_name);
        loom_mon_pidstat_t ps;
        if (loom_mon__read_small(path, b, NULL) != LOOM_OK ||
            loom_mon__parse_pidstat(b->data, b->len, path, &ps, NULL) != LOOM_OK)
            continue;
        if (loom_mon__grow((void **)out, &cap, *n + 1, sizeof **out, NULL)) {
            closedir(d);
            return LOOM_ENOMEM;
        }
        (*out)[*n].pid = (pid_t)atoi(e->d_name);
        (*out)[*n].ppid = (pid_t)ps.ppid;
        (*n)++;
    }
    closedir(d);
    return LOOM_OK;
}

int loom_mon_proc_read(loom_mon_t *m, pid_t pid, bool tree, loom_mon_proc_t *out, loom_err_t *err)
{
    if (!m || !out)
        return loom_err_set(err, LOOM_EINVAL, "loom_mon_proc_read: NULL argument");
    if (pid <= 0)
        return loom_err_set(err, LOOM_EINVAL, "pid %d: expected a positive process id", (int)pid);
    memset(out, 0, sizeof *out);
    out->pid = pid;
    out->tree = tree;
    loom_mon__src_ok(&out->io_source);
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = add_pid(m, pid, out, &b, true, err);
    if (rc) {
        loom_buf_free(&b);
        if (rc == LOOM_ENOTFOUND)
            return loom_err_set(err, LOOM_ENOTFOUND, "pid %d: no such process", (int)pid);
        return rc;
    }
    if (tree) {
        pidlink_t *links;
        size_t n;
        rc = scan_links(loom_mon__proc_root(m), &links, &n, &b);
        if (rc) {
            loom_buf_free(&b);
            return loom_err_set(err, rc, "%s: cannot list processes", loom_mon__proc_root(m));
        }
        /* Breadth-first from pid over the parent links. */
        pid_t *queue = malloc((n + 1) * sizeof *queue);
        size_t head = 0, tail = 0;
        if (!queue) {
            free(links);
            loom_buf_free(&b);
            return loom_err_set(err, LOOM_ENOMEM, "out of memory");
        }
        queue[tail++] = pid;
        while (head < tail) {
            pid_t p = queue[head++];
            for (size_t i = 0; i < n; i++) {
                if (links[i].ppid != p || links[i].pid == pid)
                    continue;
                if (tail <= n)
                    queue[tail++] = links[i].pid;
                add_pid(m, links[i].pid, out, &b, false, NULL); /* may have exited */
            }
        }
        free(queue);
        free(links);
    }
    loom_buf_free(&b);
    return LOOM_OK;
}

/* ---------------------------------------------------------------- cgroup */

/* Reads DIR/file into b; sets src with the reason if absent. */
static bool cg_file(const char *dir, const char *file, loom_buf_t *b, loom_mon_source_t *src,
                    const char *why)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    loom_err_t e;
    int rc = loom_mon__read_small(path, b, &e);
    if (rc == LOOM_ENOTFOUND) {
        loom_mon__src_set(src, LOOM_EUNAVAIL, "%s absent (%s)", path, why);
        return false;
    }
    if (rc) {
        loom_mon__src_set(src, rc, "%s", e.msg);
        return false;
    }
    loom_mon__src_ok(src);
    return true;
}

static void cg_psi(const char *dir, const char *file, loom_buf_t *b, loom_mon_psi_t *psi)
{
    if (!cg_file(dir, file, b, &psi->source, "kernel without PSI, or the root cgroup"))
        return;
    loom_err_t e;
    if (loom_mon__parse_psi(b->data, b->len, file, psi, &e))
        loom_mon__src_set(&psi->source, e.code, "%s", e.msg);
}

int loom_mon_cgroup_read(loom_mon_t *m, const char *path, loom_mon_cgroup_t *out, loom_err_t *err)
{
    if (!m || !path || !out)
        return loom_err_set(err, LOOM_EINVAL, "loom_mon_cgroup_read: NULL argument");
    memset(out, 0, sizeof *out);
    if (path[0] == '/' && strlen(path) < sizeof out->path) {
        snprintf(out->path, sizeof out->path, "%s", path);
    } else {
        const char *mnt = loom_mon__cgroup2_mount(m);
        if (!mnt[0])
            return loom_err_set(err, LOOM_ENOTFOUND,
                                "cgroup %s: relative path but no cgroup2 filesystem is mounted",
                                path);
        int n = snprintf(out->path, sizeof out->path, "%s/%s", mnt, path);
        if (n < 0 || (size_t)n >= sizeof out->path)
            return loom_err_set(err, LOOM_EINVAL, "cgroup %s: path too long", path);
    }
    struct stat st;
    if (stat(out->path, &st) != 0 || !S_ISDIR(st.st_mode))
        return loom_err_set(err, LOOM_ENOTFOUND, "cgroup %s: no such directory", out->path);
    char probe[600];
    snprintf(probe, sizeof probe, "%s/cgroup.controllers", out->path);
    if (access(probe, F_OK) != 0)
        return loom_err_set(err, LOOM_EINVAL,
                            "cgroup %s: not a cgroup v2 directory (no cgroup.controllers)",
                            out->path);

    loom_buf_t b = LOOM_BUF_INIT;
    loom_err_t e;
    if (cg_file(out->path, "cpu.stat", &b, &out->cpu_source, "cpu accounting off")) {
        static const char *const keys[] = {"usage_usec", "user_usec",    "system_usec",
                                           "nr_periods", "nr_throttled", "throttled_usec"};
        uint64_t v[6] = {0}, found;
        if (loom_mon__parse_keyed(b.data, b.len, "cpu.stat", keys, 6, v, &found, &e))
            loom_mon__src_set(&out->cpu_source, e.code, "%s", e.msg);
        else if (!(found & 1))
            loom_mon__src_set(&out->cpu_source, LOOM_EINVAL, "%s/cpu.stat: no usage_usec",
                              out->path);
        out->cpu_usage_seconds = (double)v[0] / 1e6;
        out->cpu_user_seconds = (double)v[1] / 1e6;
        out->cpu_system_seconds = (double)v[2] / 1e6;
        out->nr_periods = v[3];
        out->nr_throttled = v[4];
        out->throttled_seconds = (double)v[5] / 1e6;
    }
    int64_t x;
    if (cg_file(out->path, "memory.current", &b, &out->memory_source,
                "memory controller not enabled for this cgroup, or the root cgroup")) {
        if (loom_mon__parse_int_file(b.data, b.len, "memory.current", false, &x, &e))
            loom_mon__src_set(&out->memory_source, LOOM_EINVAL, "%s", e.msg);
        else if (x < 0)
            loom_mon__src_set(&out->memory_source, LOOM_EINVAL,
                              "memory.current: negative value %lld", (long long)x);
        else
            out->memory_current_bytes = (uint64_t)x;
    }
    if (cg_file(out->path, "memory.peak", &b, &out->memory_peak_source,
                "kernel older than 5.19, or memory controller off")) {
        if (loom_mon__parse_int_file(b.data, b.len, "memory.peak", false, &x, &e))
            loom_mon__src_set(&out->memory_peak_source, LOOM_EINVAL, "%s", e.msg);
        else if (x < 0)
            loom_mon__src_set(&out->memory_peak_source, LOOM_EINVAL,
                              "memory.peak: negative value %lld", (long long)x);
        else
            out->memory_peak_bytes = (uint64_t)x;
    }
    if (cg_file(out->path, "memory.max", &b, &out->memory_max_source,
                "memory controller not enabled for this cgroup, or the root cgroup")) {
        if (loom_mon__parse_int_file(b.data, b.len, "memory.max", true, &x, &e))
            loom_mon__src_set(&out->memory_max_source, LOOM_EINVAL, "%s", e.msg);
        else if (x < 0)
            loom_mon__src_set(&out->memory_max_source, LOOM_EINVAL, "memory.max: negative value");
        else if ((out->memory_limited = x != INT64_MAX))
            out->memory_max_bytes = (uint64_t)x;
    }
    if (cg_file(out->path, "memory.stat", &b, &out->memory_stat_source,
                "memory controller not enabled for this cgroup")) {
        static const char *const keys[] = {"anon", "file", "kernel", "shmem"};
        uint64_t v[4] = {0}, found;
        if (loom_mon__parse_keyed(b.data, b.len, "memory.stat", keys, 4, v, &found, &e))
            loom_mon__src_set(&out->memory_stat_source, e.code, "%s", e.msg);
        out->memory_anon_bytes = v[0];
        out->memory_file_bytes = v[1];
        out->memory_kernel_bytes = v[2]; /* "kernel" exists since Linux 5.18 */
        out->memory_shmem_bytes = v[3];
    }
    if (cg_file(out->path, "memory.events", &b, &out->memory_events_source,
                "memory controller not enabled for this cgroup")) {
        static const char *const keys[] = {"oom", "oom_kill", "max"};
        uint64_t v[3] = {0}, found;
        if (loom_mon__parse_keyed(b.data, b.len, "memory.events", keys, 3, v, &found, &e))
            loom_mon__src_set(&out->memory_events_source, e.code, "%s", e.msg);
        out->memory_oom_events = v[0];
        out->memory_oom_kills = v[1];
        out->memory_max_events = v[2];
    }
    if (cg_file(out->path, "pids.current", &b, &out->pids_source,
                "pids controller not enabled for this cgroup")) {
        if (loom_mon__parse_int_file(b.data, b.len, "pids.current", false, &x, &e))
            loom_mon__src_set(&out->pids_source, LOOM_EINVAL, "%s", e.msg);
        else if (x < 0)
            loom_mon__src_set(&out->pids_source, LOOM_EINVAL, "pids.current: negative value");
        else
            out->pids_current = (uint64_t)x;
    }
    if (cg_file(out->path, "io.stat", &b, &out->io_source,
                "io controller not enabled for this cgroup")) {
        if (loom_mon__parse_iostat(b.data, b.len, "io.stat", out, &e))
            loom_mon__src_set(&out->io_source, e.code, "%s", e.msg);
    }
    cg_psi(out->path, "cpu.pressure", &b, &out->cpu_pressure);
    cg_psi(out->path, "memory.pressure", &b, &out->memory_pressure);
    cg_psi(out->path, "io.pressure", &b, &out->io_pressure);
    loom_buf_free(&b);
    return LOOM_OK;
}
