/* The incremental process-tree reader (loom_mon_tree_*): the processes
 * under one root, read many times a second at a cost that grows with the
 * tree, not with the host.
 *
 * Why it is shaped so. A walk of /proc that opens every /proc/PID/stat
 * costs about a millisecond on a host with a hundred processes (more with
 * more), so loom_mon_proc_read(tree) cannot run at a profiler's 100 Hz.
 * Here every member keeps its stat file open (a pread at offset 0 makes
 * the kernel format it anew; the descriptor stays bound to the process, so
 * a failed read means it has been reaped, even if its pid is reused). New
 * members can only be processes created since the last look, and the
 * kernel tells which pid it allocated last (the fifth field of
 * /proc/loadavg, in the reader's pid namespace): a reading whose last pid
 * has not moved since the last look does not look. A look reads the
 * members' /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN): a child is
 * listed under the thread that forked it, so a single-threaded member costs
 * one pread of its kept-open children file and a multi-threaded one a
 * listing of its tasks; only the children not yet tracked are opened. Its
 * cost grows with the tree, not with the host: a look that listed /proc
 * and opened every new pid cost hundreds of microseconds whenever anything
 * on the host forked (docs/bench/prof_sample.md). Without children files a
 * look lists /proc and opens only the pids allocated since the last look
 * (pids are allocated cyclically: they lie in (last looked-at, now]). A
 * fork still under way may not be listed yet, so the pids of the previous
 * reading count as new once more; a full walk every rescan_ns catches what
 * the looks could miss.
 *
 * Cumulative CPU follows the kernel's own bookkeeping: a member's CPU is
 * its utime+stime plus cutime+cstime, the CPU of the children it waited
 * for. When a member is reaped by another member, its CPU moves into that
 * member's cutime; when nobody tracked reaps it (an orphan), its last
 * reading is kept in the retired sums. Reaping between two reads of one
 * reading can make the sum jump or dip for a moment, so totals are kept
 * monotonic.
 *
 * Resolution. /proc/PID/stat counts CPU in clock ticks (10 ms at USER_HZ
 * 100), each field truncated: a process that runs 15 ms and sleeps 15 ms
 * reads 0, 10 or 20 ms per 10 ms tick. The kernel keeps the scheduler's
 * runtime in nanoseconds (utime and stime are a scaled split of it) and
 * hands it out through the process's CPU-time clock (clock_getcpuclockid;
 * one clock_gettime of about 0.5 us; zombies included). It is exact for
 * threads that are not running; for one running on another CPU the
 * kernel does not bring the figure up to date (thread_group_cputime skips
 * that on purpose), so it stands at that CPU's last scheduler tick or
 * context switch: up to 1/CONFIG_HZ behind (4 ms at HZ 250). So a live
 * member's own CPU is read from its clock, and only the split between user
 * and system time and the reaped children's CPU (cutime, cstime) come from
 * the ticks. The clock is read right after the member's stat, whose
 * kept-open descriptor says the pid still names the member; it is used
 * only when the tree reads the real /proc (a fixture root's pids name no
 * real processes).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mon/mon_int.h"

typedef struct member {
    pid_t pid, ppid;
    int fd_stat, fd_status, fd_io; /* -1 when not open */
    int fd_children;               /* task/PID/children (the main thread's), -1 if none */
    uint64_t threads;              /* at the last reading */
    double user_s, sys_s;          /* own + reaped children in clock ticks, at the last reading */
    double cpu_s;                  /* own (clock, ns) + reaped children (ticks), likewise */
    clockid_t clock;               /* its CPU-time clock, if have_clock */
    bool have_clock;
    bool alive;
} member_t;

/* A process found by a look, not yet known to be a member. */
typedef struct cand {
    pid_t pid, ppid;
    uint64_t threads;
    int fd;
} cand_t;

struct loom_mon_tree {
    loom_mon_t *m;
    pid_t root;
    loom_mon_tree_opts_t opts;
    double hz;
    uint64_t page;
    char comm[64];
    member_t *mem;
    size_t n, cap;
    cand_t *cand;
    size_t n_cand, cap_cand;
    pid_t *kids; /* children read by a look */
    size_t n_kids, cap_kids;
    bool use_children; /* task/TID/children exist (CONFIG_PROC_CHILDREN) */
    bool use_clock;    /* the real /proc: members' CPU-time clocks can be read */
    double retired_user_s, retired_sys_s, retired_cpu_s;
    double last_user_s, last_sys_s, last_cpu_s;
    int fd_loadavg; /* -1: unknown last pid, every look is a full walk */
    DIR *proc_dir;  /* kept open, rewound for each walk */
    int64_t lo;     /* pids cyclically <= lo have been looked at */
    int64_t seen;   /* last pid at the previous reading */
    bool have_lo;
    int64_t last_check_ns, last_full_ns;
    bool have_check;
    loom_buf_t buf;
    loom_mon_tree_stats_t st;
};

/* ------------------------------------------------------------- members */

static member_t *find(loom_mon_tree_t *t, pid_t pid)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->mem[i].pid == pid)
            return &t->mem[i];
    return NULL;
}

bool loom_mon_tree_has(const loom_mon_tree_t *t, pid_t pid)
{
    for (size_t i = 0; t && i < t->n; i++)
        if (t->mem[i].pid == pid && t->mem[i].alive)
            return true;
    return false;
}

static int open_pid_file(loom_mon_tree_t *t, pid_t pid, const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%d/%s", loom_mon__proc_root(t->m), (int)pid, file);
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* Adds pid with its already open stat descriptor (owned by the tree from
 * now on). */
static int add_member(loom_mon_tree_t *t, pid_t pid, pid_t ppid, uint64_t threads, int fd_stat,
                      loom_err_t *err)
{
    if (loom_mon__grow((void **)&t->mem, &t->cap, t->n + 1, sizeof *t->mem, err)) {
        close(fd_stat);
        return LOOM_ENOMEM;
    }
    member_t *p = &t->mem[t->n++];
    *p = (member_t){.pid = pid,
                    .ppid = ppid,
                    .fd_stat = fd_stat,
                    .fd_status = -1,
                    .fd_io = -1,
                    .fd_children = -1,
                    .threads = threads,
                    .alive = true};
    p->have_clock = t->use_clock && clock_getcpuclockid(pid, &p->clock) == 0;
    if (t->use_children) {
        char rel[64];
        snprintf(rel, sizeof rel, "task/%d/children", (int)pid);
        p->fd_children = open_pid_file(t, pid, rel);
    }
    if (t->opts.details) {
        p->fd_status = open_pid_file(t, pid, "status");
        p->fd_io = open_pid_file(t, pid, "io"); /* fails without ptrace access */
    }
    t->st.members++;
    return LOOM_OK;
}

static void close_member(member_t *p)
{
    if (p->fd_stat >= 0)
        close(p->fd_stat);
    if (p->fd_status >= 0)
        close(p->fd_status);
    if (p->fd_io >= 0)
        close(p->fd_io);
    if (p->fd_children >= 0)
        close(p->fd_children);
    p->fd_stat = p->fd_status = p->fd_io = p->fd_children = -1;
}

/* ------------------------------------------------------------- looking */

/* pid in the cyclic interval (lo, hi]. */
static bool in_range(int64_t pid, int64_t lo, int64_t hi)
{
    if (lo == hi)
        return false;
    if (lo < hi)
        return pid > lo && pid <= hi;
    return pid > lo || pid <= hi; /* the allocator wrapped around */
}

static int read_last_pid(loom_mon_tree_t *t, int64_t *pid)
{
    if (t->fd_loadavg < 0)
        return LOOM_EUNAVAIL;
    char text[128];
    ssize_t k = pread(t->fd_loadavg, text, sizeof text, 0);
    if (k <= 0)
        return LOOM_EIO;
    return loom_mon__parse_last_pid(text, (size_t)k, "loadavg", pid, NULL);
}

/* Lists /proc and probes the pids in (lo, hi] (every pid when full) that
 * are not members yet: opens their stat and keeps those whose parent is a
 * member, repeating over the probed ones until none is added (a child and
 * its own child can be new together). */
static int look(loom_mon_tree_t *t, bool full, int64_t lo, int64_t hi, loom_err_t *err)
{
    if (!t->proc_dir) {
        t->proc_dir = opendir(loom_mon__proc_root(t->m));
        if (!t->proc_dir)
            return loom_err_errno(err, LOOM_EIO, errno, "%s: cannot list processes",
                                  loom_mon__proc_root(t->m));
    } else {
        rewinddir(t->proc_dir);
    }
    if (full)
        t->st.full_scans++;
    else
        t->st.looks++;
    t->n_cand = 0;
    struct dirent *e;
    while ((e = readdir(t->proc_dir))) {
        const char *s = e->d_name;
        int64_t pid = 0;
        for (; *s >= '0' && *s <= '9' && pid <= INT32_MAX; s++)
            pid = pid * 10 + (*s - '0');
        if (*s || pid <= 0 || pid > INT32_MAX || (!full && !in_range(pid, lo, hi)) ||
            find(t, (pid_t)pid))
            continue;
        int fd = open_pid_file(t, (pid_t)pid, "stat");
        if (fd < 0)
            continue; /* gone already */
        t->st.probes++;
        loom_mon_pidstat_t ps;
        int rc = loom_mon__pread_all(fd, &t->buf, "stat", NULL);
        if (rc == LOOM_OK)
            rc = loom_mon__parse_pidstat(t->buf.data, t->buf.len, "stat", &ps, NULL);
        if (rc != LOOM_OK) {
            close(fd);
            continue;
        }
        if (loom_mon__grow((void **)&t->cand, &t->cap_cand, t->n_cand + 1, sizeof *t->cand, err)) {
            close(fd);
            break;
        }
        t->cand[t->n_cand++] = (cand_t){(pid_t)pid, (pid_t)ps.ppid, ps.num_threads, fd};
    }
    int rc = LOOM_OK;
    for (bool added = true; added && rc == LOOM_OK;) {
        added = false;
        for (size_t i = 0; i < t->n_cand && rc == LOOM_OK; i++) {
            cand_t *c = &t->cand[i];
            member_t *parent = c->fd >= 0 ? find(t, c->ppid) : NULL;
            if (!parent || !parent->alive)
                continue;
            rc = add_member(t, c->pid, c->ppid, c->threads, c->fd, err);
            c->fd = -1;
            added = true;
        }
    }
    for (size_t i = 0; i < t->n_cand; i++)
        if (t->cand[i].fd >= 0)
            close(t->cand[i].fd);
    t->n_cand = 0;
    return rc;
}

enum { OPEN_LOOKBACK = 32 };

/* Reads one children file into t->kids (appended). */
static void read_kids(loom_mon_tree_t *t, int fd)
{
    if (loom_mon__pread_all(fd, &t->buf, "children", NULL) == LOOM_OK)
        loom_mon__parse_pid_list(t->buf.data, t->buf.len, "children", &t->kids, &t->n_kids,
                                 &t->cap_kids, NULL);
}

/* The children of every thread of member pid: a child is listed under the
 * thread that forked it. */
static void read_task_kids(loom_mon_tree_t *t, pid_t pid)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%d/task", loom_mon__proc_root(t->m), (int)pid);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char rel[300];
        snprintf(rel, sizeof rel, "task/%s/children", e->d_name);
        int fd = open_pid_file(t, pid, rel);
        if (fd >= 0) {
            read_kids(t, fd);
            close(fd);
        }
    }
    if (d)
        closedir(d);
}

/* A look through the members' children files: each member in turn (those
 * added by this look too, so a child and its own child are found
 * together). A single-threaded member costs one pread of its kept-open
 * children file; a multi-threaded one a listing of its tasks. */
static int look_children(loom_mon_tree_t *t, loom_err_t *err)
{
    t->st.looks++;
    for (size_t i = 0; i < t->n; i++) {
        if (!t->mem[i].alive)
            continue;
        t->n_kids = 0;
        if (t->mem[i].threads <= 1 && t->mem[i].fd_children >= 0)
            read_kids(t, t->mem[i].fd_children);
        else
            read_task_kids(t, t->mem[i].pid);
        pid_t parent = t->mem[i].pid; /* t->mem may move as members are added */
        for (size_t k = 0; k < t->n_kids; k++) {
            if (find(t, t->kids[k]))
                continue;
            int fd = open_pid_file(t, t->kids[k], "stat");
            if (fd < 0)
                continue; /* gone already */
            t->st.probes++;
            loom_mon_pidstat_t ps;
            if (loom_mon__pread_all(fd, &t->buf, "stat", NULL) != LOOM_OK ||
                loom_mon__parse_pidstat(t->buf.data, t->buf.len, "stat", &ps, NULL) != LOOM_OK) {
                close(fd);
                continue;
            }
            int rc = add_member(t, t->kids[k], parent, ps.num_threads, fd, err);
            if (rc)
                return rc;
        }
    }
    return LOOM_OK;
}

/* Decides whether this reading looks for new members, and how. */
static int maybe_look(loom_mon_tree_t *t, int64_t now, loom_err_t *err)
{
    bool full_due = t->opts.rescan_ns >= 0 && now - t->last_full_ns >= t->opts.rescan_ns;
    /* Between checks a reading reads the members and nothing else. */
    if (!full_due && t->have_check && now - t->last_check_ns < t->opts.discover_ns)
        return LOOM_OK;
    t->last_check_ns = now;
    t->have_check = true;
    int64_t cur = 0;
    bool known = read_last_pid(t, &cur) == LOOM_OK;
    int rc;
    if (!known || !t->have_lo || full_due) {
        rc = look(t, true, 0, 0, err);
        t->last_full_ns = now;
    } else if (cur != t->lo) {
        rc = t->use_children ? look_children(t, err) : look(t, false, t->lo, cur, err);
    } else {
        t->seen = cur;
        return LOOM_OK;
    }
    /* Pids up to the one seen at the previous check were allocated at
     * least one check ago, so their forks have finished and this look
     * found them; the newer ones count as new once more next time. */
    if (known) {
        /* The first walk has no previous check: the last OPEN_LOOKBACK
         * pids (forks that may have been under way) count as new again. */
        t->lo = t->have_lo ? t->seen : (cur > OPEN_LOOKBACK ? cur - OPEN_LOOKBACK : 0);
        t->have_lo = true;
        t->seen = cur;
    }
    return rc;
}

/* ------------------------------------------------------------- reading */

static void read_details(loom_mon_tree_t *t, member_t *p, loom_mon_proc_t *out)
{
    if (p->fd_status >= 0 && loom_mon__pread_all(p->fd_status, &t->buf, "status", NULL) == 0) {
        static const char *const keys[] = {"voluntary_ctxt_switches:",
                                           "nonvoluntary_ctxt_switches:"};
        uint64_t v[2] = {0}, found;
        if (loom_mon__parse_keyed(t->buf.data, t->buf.len, "status", keys, 2, v, &found, NULL) ==
            LOOM_OK) {
            out->voluntary_ctxt_switches += v[0];
            out->nonvoluntary_ctxt_switches += v[1];
        }
    }
    loom_err_t e;
    if (p->fd_io < 0) {
        if (out->io_source.status == LOOM_OK)
            loom_mon__src_set(&out->io_source, LOOM_EUNAVAIL,
                              "%s/%d/io: cannot be opened (needs ptrace access to the process)",
                              loom_mon__proc_root(t->m), (int)p->pid);
    } else if (loom_mon__pread_all(p->fd_io, &t->buf, "io", &e) == LOOM_OK) {
        static const char *const keys[] = {"rchar:", "wchar:", "read_bytes:", "write_bytes:"};
        uint64_t v[4] = {0}, found;
        if (loom_mon__parse_keyed(t->buf.data, t->buf.len, "io", keys, 4, v, &found, NULL) ==
            LOOM_OK) {
            out->rchar_bytes += v[0];
            out->wchar_bytes += v[1];
            out->read_bytes += v[2];
            out->write_bytes += v[3];
        }
    }
}

/* One pread of a member's stat; false once it has been reaped. */
static bool read_member(loom_mon_tree_t *t, member_t *p, loom_mon_proc_t *out)
{
    loom_mon_pidstat_t ps;
    if (loom_mon__pread_all(p->fd_stat, &t->buf, "stat", NULL) != LOOM_OK ||
        loom_mon__parse_pidstat(t->buf.data, t->buf.len, "stat", &ps, NULL) != LOOM_OK)
        return false;
    p->ppid = (pid_t)ps.ppid;
    p->threads = ps.num_threads;
    p->user_s = (double)(ps.utime_ticks + ps.cutime_ticks) / t->hz;
    p->sys_s = (double)(ps.stime_ticks + ps.cstime_ticks) / t->hz;
    double own = (double)(ps.utime_ticks + ps.stime_ticks) / t->hz;
    struct timespec ts;
    if (p->have_clock && clock_gettime(p->clock, &ts) == 0)
        own = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    p->cpu_s = own + (double)(ps.cutime_ticks + ps.cstime_ticks) / t->hz;
    if (p->pid == t->root) { /* every reading: a plain copy, not a printf */
        size_t n = strnlen(ps.comm, sizeof ps.comm);
        if (n >= sizeof t->comm)
            n = sizeof t->comm - 1;
        memcpy(t->comm, ps.comm, n);
        t->comm[n] = '\0';
    }
    out->n_processes++;
    out->rss_bytes += ps.rss_pages * t->page;
    out->vm_bytes += ps.vsize_bytes;
    out->threads += ps.num_threads;
    if (t->opts.details)
        read_details(t, p, out);
    return true;
}

/* The new totals from this reading's sums: CPU never goes back, and its
 * increase is split between user and system time in the proportion of the
 * tick counts, each part kept monotonic too (user + system == CPU). */
static void split_cpu(loom_mon_tree_t *t, double cpu, double user_ticks, double sys_ticks)
{
    if (cpu <= t->last_cpu_s)
        return;
    double frac = user_ticks + sys_ticks > 0 ? user_ticks / (user_ticks + sys_ticks) : 1.0;
    double user = cpu * frac, room = cpu - t->last_cpu_s;
    if (user < t->last_user_s)
        user = t->last_user_s;
    if (user > t->last_user_s + room)
        user = t->last_user_s + room;
    t->last_cpu_s = cpu;
    t->last_user_s = user;
    t->last_sys_s = cpu - user;
}

int loom_mon_tree_read(loom_mon_tree_t *t, loom_mon_proc_t *out, loom_err_t *err)
{
    if (!t || !out)
        return loom_err_set(err, LOOM_EINVAL, "loom_mon_tree_read: NULL argument");
    int rc = maybe_look(t, loom_time_mono_ns(), err);
    if (rc)
        return rc;
    memset(out, 0, sizeof *out);
    out->pid = t->root;
    out->tree = true;
    if (t->opts.details)
        loom_mon__src_ok(&out->io_source);
    else
        loom_mon__src_set(&out->io_source, LOOM_EUNAVAIL,
                          "not read (tree reader opened without details)");
    double user = 0, sys = 0, cpu = 0;
    for (size_t i = 0; i < t->n; i++) {
        member_t *p = &t->mem[i];
        p->alive = read_member(t, p, out);
        if (p->alive) {
            user += p->user_s;
            sys += p->sys_s;
            cpu += p->cpu_s;
        }
    }
    /* Members that have been reaped: by a live member (their CPU is in its
     * cutime now), or by someone else (keep their last reading). */
    size_t keep = 0;
    for (size_t i = 0; i < t->n; i++) {
        member_t *p = &t->mem[i];
        if (!p->alive) {
            member_t *reaper = find(t, p->ppid);
            if (!reaper || !reaper->alive) {
                t->retired_user_s += p->user_s;
                t->retired_sys_s += p->sys_s;
                t->retired_cpu_s += p->cpu_s;
            }
            close_member(p);
            continue;
        }
        t->mem[keep++] = *p;
    }
    t->n = keep;
    user += t->retired_user_s;
    sys += t->retired_sys_s;
    cpu += t->retired_cpu_s;
    split_cpu(t, cpu, user, sys);
    out->user_seconds = t->last_user_s;
    out->system_seconds = t->last_sys_s;
    memcpy(out->comm, t->comm, sizeof out->comm);
    t->st.readings++;
    return LOOM_OK;
}

int loom_mon_tree_rescan(loom_mon_tree_t *t, loom_err_t *err)
{
    if (!t)
        return loom_err_set(err, LOOM_EINVAL, "loom_mon_tree_rescan: NULL tree");
    t->last_full_ns = loom_time_mono_ns() - t->opts.rescan_ns; /* due now */
    if (t->opts.rescan_ns < 0)
        return look(t, true, 0, 0, err);
    return maybe_look(t, loom_time_mono_ns(), err);
}

/* ------------------------------------------------------------ open/close */

int loom_mon_tree_open(loom_mon_tree_t **out, loom_mon_t *m, pid_t root,
                       const loom_mon_tree_opts_t *opts, loom_err_t *err)
{
    *out = NULL;
    if (!m)
        return loom_err_set(err, LOOM_EINVAL, "loom_mon_tree_open: NULL collector");
    if (root <= 0)
        return loom_err_set(err, LOOM_EINVAL, "pid %d: expected a positive process id", (int)root);
    loom_mon_tree_t *t = calloc(1, sizeof *t);
    if (!t)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    t->m = m;
    t->root = root;
    if (opts)
        t->opts = *opts;
    if (t->opts.rescan_ns == 0)
        t->opts.rescan_ns = 10 * LOOM_NS_PER_S;
    if (t->opts.discover_ns < 0)
        t->opts.discover_ns = 0;
    t->hz = loom_mon__ticks_per_second(m);
    t->use_clock = strcmp(loom_mon__proc_root(m), "/proc") == 0;
    long page = sysconf(_SC_PAGESIZE);
    t->page = page > 0 ? (uint64_t)page : 4096;
    loom_buf_init(&t->buf);
    int fd = open_pid_file(t, root, "stat");
    if (fd < 0) {
        int e = errno;
        free(t);
        if (e == ENOENT)
            return loom_err_set(err, LOOM_ENOTFOUND, "pid %d: no such process", (int)root);
        return loom_err_errno(err, LOOM_EIO, e, "%s/%d/stat", loom_mon__proc_root(m), (int)root);
    }
    char rel[64];
    snprintf(rel, sizeof rel, "task/%d/children", (int)root);
    int fd_children = open_pid_file(t, root, rel);
    t->use_children = fd_children >= 0; /* else: looks list /proc */
    if (fd_children >= 0)
        close(fd_children);
    int rc = add_member(t, root, 0, 0, fd, err);
    if (rc) {
        free(t);
        return rc;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/loadavg", loom_mon__proc_root(m));
    t->fd_loadavg = open(path, O_RDONLY | O_CLOEXEC);
    /* Look once now (a full walk), so that the first reading has the tree
     * as it is at open. */
    rc = maybe_look(t, loom_time_mono_ns(), err);
    if (rc) {
        loom_mon_tree_close(t);
        return rc;
    }
    *out = t;
    return LOOM_OK;
}

void loom_mon_tree_stats(const loom_mon_tree_t *t, loom_mon_tree_stats_t *out)
{
    *out = t->st;
}

void loom_mon_tree_close(loom_mon_tree_t *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        close_member(&t->mem[i]);
    free(t->mem);
    free(t->cand);
    free(t->kids);
    if (t->fd_loadavg >= 0)
        close(t->fd_loadavg);
    if (t->proc_dir)
        closedir(t->proc_dir);
    loom_buf_free(&t->buf);
    free(t);
}
