/* The process tree of a profiled command, read from /proc.
 *
 * Every tracked process keeps /proc/<pid>/stat open and is read with one
 * pread per sample: no path lookup, no allocation, one system call. A read
 * that fails means the process has gone (the descriptor stays bound to the
 * old process even if its pid is reused), and its last CPU time is moved to
 * the retired sums so that the tree's cumulative CPU never goes back.
 * New members are found by a walk of /proc every rescan period.
 *
 * This is the minimal reader prof needs until libloom's monitoring part
 * (branch mon) is merged; then prof samples through it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prof/prof_internal.h"

int prof_parse_stat(const char *text, size_t len, prof_stat_t *st)
{
    /* "pid (comm) S ppid ...": comm may hold spaces and ')', so fields are
     * counted from the last ')'. */
    const char *rp = NULL;
    for (size_t i = len; i > 0; i--)
        if (text[i - 1] == ')') {
            rp = text + i - 1;
            break;
        }
    if (!rp)
        return LOOM_EINVAL;
    const char *p = rp + 1, *end = text + len;
    /* Field 3 is the state; we need 4 (ppid), 14-17 (CPU), 20 and 24. */
    int64_t v[25] = {0};
    for (int field = 3; field <= 24; field++) {
        while (p < end && *p == ' ')
            p++;
        if (p >= end)
            return LOOM_EINVAL;
        if (field == 3) {
            p++;
            continue;
        }
        bool neg = false;
        if (*p == '-') {
            neg = true;
            p++;
        }
        int64_t x = 0;
        if (p >= end || *p < '0' || *p > '9')
            return LOOM_EINVAL;
        while (p < end && *p >= '0' && *p <= '9') {
            if (x < INT64_MAX / 10)
                x = x * 10 + (*p - '0');
            p++;
        }
        v[field] = neg ? -x : x;
    }
    st->ppid = (pid_t)v[4];
    st->utime = v[14];
    st->stime = v[15];
    st->cutime = v[16];
    st->cstime = v[17];
    st->threads = v[20];
    st->rss_pages = v[24];
    return LOOM_OK;
}

static int read_stat_fd(int fd, char *buf, size_t cap, size_t *len)
{
    ssize_t r = pread(fd, buf, cap - 1, 0);
    if (r <= 0)
        return LOOM_EIO;
    buf[r] = '\0';
    *len = (size_t)r;
    return LOOM_OK;
}

static bool tracked(const prof_tree_t *t, pid_t pid)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->procs[i].pid == pid && t->procs[i].alive)
            return true;
    return false;
}

bool prof_tree_has(const prof_tree_t *t, pid_t pid)
{
    return tracked(t, pid);
}

static void track(prof_tree_t *t, pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return; /* gone already */
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        prof_proc_t *p = realloc(t->procs, cap * sizeof *p);
        if (!p) {
            close(fd);
            return;
        }
        t->procs = p;
        t->cap = cap;
    }
    t->procs[t->n++] = (prof_proc_t){pid, fd, 0, 0, 0, 0, true};
}

int prof_tree_init(prof_tree_t *t, pid_t root, loom_err_t *err)
{
    memset(t, 0, sizeof *t);
    t->root = root;
    long tck = sysconf(_SC_CLK_TCK);
    long page = sysconf(_SC_PAGESIZE);
    if (tck <= 0 || page <= 0)
        return loom_err_set(err, LOOM_EIO, "sysconf(_SC_CLK_TCK or _SC_PAGESIZE) failed");
    t->ns_per_tick = LOOM_NS_PER_S / tck;
    t->page_size = page;
    track(t, root);
    return LOOM_OK;
}

typedef struct pid_pair {
    pid_t pid, ppid;
} pid_pair_t;

void prof_tree_rescan(prof_tree_t *t)
{
    DIR *d = opendir("/proc");
    if (!d)
        return;
    pid_pair_t *all = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    char buf[1024];
    while ((e = readdir(d))) {
        char *endp;
        long pid = strtol(e->d_name, &endp, 10);
        if (*endp || pid <= 0)
            continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        size_t len;
        prof_stat_t st;
        if (read_stat_fd(fd, buf, sizeof buf, &len) == LOOM_OK &&
            prof_parse_stat(buf, len, &st) == LOOM_OK) {
            pid_t ppid = st.ppid;
            if (n == cap) {
                cap = cap ? 2 * cap : 256;
                pid_pair_t *p = realloc(all, cap * sizeof *p);
                if (!p) {
                    close(fd);
                    break;
                }
                all = p;
            }
            all[n++] = (pid_pair_t){(pid_t)pid, ppid};
        }
        close(fd);
    }
    closedir(d);
    /* Closure over ppid links: a process is a member if its parent is a
     * member or the root. Repeat until nothing changes (depth passes). */
    bool *in = calloc(n ? n : 1, sizeof *in);
    if (!in) {
        free(all);
        return;
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < n; i++) {
            if (in[i])
                continue;
            bool parent_in = all[i].ppid == t->root || all[i].pid == t->root;
            for (size_t j = 0; !parent_in && j < n; j++)
                parent_in = in[j] && all[j].pid == all[i].ppid;
            if (parent_in) {
                in[i] = true;
                changed = true;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        if (in[i] && !tracked(t, all[i].pid))
            track(t, all[i].pid);
    free(in);
    free(all);
}

/* The tree's cumulative CPU is the sum, over live members (zombies
 * included), of their own CPU time and of the CPU time of the children they
 * have reaped (cutime + cstime, which the kernel folds into the parent at
 * wait). A member that vanishes with a tracked parent was reaped by it and
 * is already counted there; one whose parent is not tracked (an orphan
 * reaped by init) keeps its last reading in the retired sums. Reaping
 * between two reads of one sample can make the sum dip or jump for a moment,
 * so totals are kept monotonic. */
void prof_tree_sample(prof_tree_t *t, loom_prof_sample_t *s)
{
    char buf[1024];
    int64_t user = 0, sys = 0, rss = 0, threads = 0, procs = 0;
    for (size_t i = 0; i < t->n; i++) {
        prof_proc_t *p = &t->procs[i];
        size_t len;
        prof_stat_t st;
        p->alive = read_stat_fd(p->fd, buf, sizeof buf, &len) == LOOM_OK &&
                   prof_parse_stat(buf, len, &st) == LOOM_OK;
        if (!p->alive)
            continue;
        p->ppid = st.ppid;
        p->user_ns = (st.utime + st.cutime) * t->ns_per_tick;
        p->sys_ns = (st.stime + st.cstime) * t->ns_per_tick;
        p->reaped_ns = (st.cutime + st.cstime) * t->ns_per_tick;
        user += p->user_ns;
        sys += p->sys_ns;
        rss += st.rss_pages * t->page_size;
        threads += st.threads;
        procs++;
    }
    size_t keep = 0;
    for (size_t i = 0; i < t->n; i++) {
        prof_proc_t *p = &t->procs[i];
        if (p->alive) {
            t->procs[keep++] = *p;
            continue;
        }
        bool reaper_tracked = false;
        for (size_t j = 0; j < t->n && !reaper_tracked; j++)
            reaper_tracked = t->procs[j].alive && t->procs[j].pid == p->ppid;
        if (!reaper_tracked) {
            t->retired_user_ns += p->user_ns;
            t->retired_sys_ns += p->sys_ns;
        }
        close(p->fd);
    }
    t->n = keep;
    user += t->retired_user_ns;
    sys += t->retired_sys_ns;
    if (user < t->last_user_ns)
        user = t->last_user_ns;
    if (sys < t->last_sys_ns)
        sys = t->last_sys_ns;
    t->last_user_ns = user;
    t->last_sys_ns = sys;
    s->t_ns = loom_time_mono_ns();
    s->user_ns = user;
    s->sys_ns = sys;
    s->rss_bytes = rss;
    s->nprocs = (int32_t)procs;
    s->nthreads = (int32_t)threads;
}

void prof_tree_free(prof_tree_t *t)
{
    for (size_t i = 0; i < t->n; i++)
        close(t->procs[i].fd);
    free(t->procs);
    memset(t, 0, sizeof *t);
}
