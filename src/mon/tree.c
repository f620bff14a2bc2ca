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
 * /proc/loadavg, in the reader's pid namespace). Pids are allocated
 * cyclically, so the new ones lie in (last looked-at, now]: a look lists
 * the /proc directory, which shows processes and not threads, and opens
 * only those. A pid allocated by a fork still under way may not be listed
 * yet, so a look covers the pids of the previous reading again; a full
 * walk every rescan_ns catches what wrap-around could hide.
 *
 * /proc/PID/task/TID/children would give the children directly, but a
 * child is listed under the thread that forked it, so a complete look
 * reads one file per thread of every member: DL processes have dozens of
 * threads each, which costs more than one listing of /proc.
 *
 * Cumulative CPU follows the kernel's own bookkeeping: a member's CPU is
 * its utime+stime plus cutime+cstime, the CPU of the children it waited
 * for. When a member is reaped by another member, its CPU moves into that
 * member's cutime; when nobody tracked reaps it (an orphan), its last
 * reading is kept in the retired sums. Reaping between two reads of one
 * reading can make the sum jump or dip for a moment, so totals are kept
 * monotonic.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mon/mon_int.h"

typedef struct member {
    pid_t pid, ppid;
    int fd_stat, fd_status, fd_io; /* -1 when not open */
    double user_s, sys_s;          /* own + reaped children, at the last reading */
    bool alive;
} member_t;

/* A process found by a look, not yet known to be a member. */
typedef struct cand {
    pid_t pid, ppid;
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
    double retired_user_s, retired_sys_s;
    double last_user_s, last_sys_s;
    int fd_loadavg; /* -1: unknown last pid, every look is a full walk */
    DIR *proc_dir;  /* kept open, rewound for each walk */
    int64_t lo;     /* pids cyclically <= lo have been looked at */
    int64_t seen;   /* last pid at the previous reading */
    bool have_lo;
    int64_t last_look_ns, last_full_ns;
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
static int add_member(loom_mon_tree_t *t, pid_t pid, pid_t ppid, int fd_stat, loom_err_t *err)
{
    if (loom_mon__grow((void **)&t->mem, &t->cap, t->n + 1, sizeof *t->mem, err)) {
        close(fd_stat);
        return LOOM_ENOMEM;
    }
    member_t *p = &t->mem[t->n++];
    *p = (member_t){pid, ppid, fd_stat, -1, -1, 0, 0, true};
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
    p->fd_stat = p->fd_status = p->fd_io = -1;
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
        t->cand[t->n_cand++] = (cand_t){(pid_t)pid, (pid_t)ps.ppid, fd};
    }
    int rc = LOOM_OK;
    for (bool added = true; added && rc == LOOM_OK;) {
        added = false;
        for (size_t i = 0; i < t->n_cand && rc == LOOM_OK; i++) {
            cand_t *c = &t->cand[i];
            member_t *parent = c->fd >= 0 ? find(t, c->ppid) : NULL;
            if (!parent || !parent->alive)
                continue;
            rc = add_member(t, c->pid, c->ppid, c->fd, err);
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

/* Decides whether this reading looks for new members, and how. */
static int maybe_look(loom_mon_tree_t *t, int64_t now, loom_err_t *err)
{
    int64_t cur = 0;
    bool known = read_last_pid(t, &cur) == LOOM_OK;
    bool full_due = t->opts.rescan_ns >= 0 && now - t->last_full_ns >= t->opts.rescan_ns;
    int rc = LOOM_OK;
    if (!known || !t->have_lo || full_due) {
        if (!known && !full_due && now - t->last_look_ns < t->opts.discover_ns)
            return LOOM_OK;
        rc = look(t, true, 0, 0, err);
        t->last_full_ns = t->last_look_ns = now;
    } else if (cur != t->lo && now - t->last_look_ns >= t->opts.discover_ns) {
        rc = look(t, false, t->lo, cur, err);
        t->last_look_ns = now;
    } else {
        t->seen = cur;
        return LOOM_OK;
    }
    /* Pids up to the one seen at the previous reading were allocated at
     * least one reading ago, so their forks have finished and this look
     * found them; the newer ones are looked at again next time. */
    if (known) {
        /* The first walk has no previous reading: the last OPEN_LOOKBACK
         * pids (forks that may have been under way) are looked at again. */
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
    p->user_s = (double)(ps.utime_ticks + ps.cutime_ticks) / t->hz;
    p->sys_s = (double)(ps.stime_ticks + ps.cstime_ticks) / t->hz;
    if (p->pid == t->root)
        snprintf(t->comm, sizeof t->comm, "%s", ps.comm);
    out->n_processes++;
    out->rss_bytes += ps.rss_pages * t->page;
    out->vm_bytes += ps.vsize_bytes;
    out->threads += ps.num_threads;
    if (t->opts.details)
        read_details(t, p, out);
    return true;
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
    double user = 0, sys = 0;
    for (size_t i = 0; i < t->n; i++) {
        member_t *p = &t->mem[i];
        p->alive = read_member(t, p, out);
        if (p->alive) {
            user += p->user_s;
            sys += p->sys_s;
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
            }
            close_member(p);
            continue;
        }
        t->mem[keep++] = *p;
    }
    t->n = keep;
    user += t->retired_user_s;
    sys += t->retired_sys_s;
    t->last_user_s = user > t->last_user_s ? user : t->last_user_s;
    t->last_sys_s = sys > t->last_sys_s ? sys : t->last_sys_s;
    out->user_seconds = t->last_user_s;
    out->system_seconds = t->last_sys_s;
    memcpy(out->comm, t->comm, sizeof out->comm);
    t->st.readings++;
    return LOOM_OK;
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
    int rc = add_member(t, root, 0, fd, err);
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
    if (t->fd_loadavg >= 0)
        close(t->fd_loadavg);
    if (t->proc_dir)
        closedir(t->proc_dir);
    loom_buf_free(&t->buf);
    free(t);
}
