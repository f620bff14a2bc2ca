/* Parsers for the /proc and /sys files mon reads.
 *
 * Each is a pure function over a byte buffer (not NUL-terminated): no I/O,
 * no stdio, no locale, so that it is fast (a full host reading parses a few
 * KiB) and can be fuzzed with mutated copies of real files. Unknown lines
 * and extra columns are ignored (the kernel adds fields over time); missing
 * required fields and malformed numbers are errors naming the file and line.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "mon/mon_int.h"

typedef struct cur {
    const char *p, *end;
    size_t line;
} cur_t;

static void skip_blank(cur_t *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

static bool at_eol(const cur_t *c)
{
    return c->p >= c->end || *c->p == '\n';
}

static void next_line(cur_t *c)
{
    const char *nl = c->p < c->end ? memchr(c->p, '\n', (size_t)(c->end - c->p)) : NULL;
    c->p = nl ? nl + 1 : c->end;
    c->line++;
}

/* Unsigned decimal after optional blanks. The hot loop of every parser
 * here: 19 digits cannot overflow 64 bits, so the overflow test is made
 * only from the 20th digit on. */
static bool get_u64(cur_t *c, uint64_t *v)
{
    skip_blank(c);
    const char *p = c->p, *end = c->end;
    if (p >= end || (unsigned)(*p - '0') > 9)
        return false;
    const char *safe = (size_t)(end - p) > 19 ? p + 19 : end;
    uint64_t x = 0;
    unsigned d;
    while (p < safe && (d = (unsigned)(*p - '0')) <= 9) {
        x = x * 10 + d;
        p++;
    }
    while (p < end && (d = (unsigned)(*p - '0')) <= 9) {
        if (x > (UINT64_MAX - d) / 10)
            return false;
        x = x * 10 + d;
        p++;
    }
    c->p = p;
    *v = x;
    return true;
}

static bool get_i64(cur_t *c, int64_t *v)
{
    skip_blank(c);
    bool neg = false;
    if (c->p < c->end && (*c->p == '-' || *c->p == '+')) {
        neg = *c->p == '-';
        c->p++;
    }
    uint64_t u;
    if (!get_u64(c, &u) || u > (uint64_t)INT64_MAX)
        return false;
    *v = neg ? -(int64_t)u : (int64_t)u;
    return true;
}

/* Non-negative decimal with optional fraction ("13.89"), as PSI and
 * loadavg print. */
static bool get_dec(cur_t *c, double *v)
{
    uint64_t ip;
    if (!get_u64(c, &ip))
        return false;
    double x = (double)ip;
    if (c->p < c->end && *c->p == '.') {
        c->p++;
        double scale = 0.1;
        bool any = false;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            x += (*c->p - '0') * scale;
            scale *= 0.1;
            c->p++;
            any = true;
        }
        if (!any)
            return false;
    }
    *v = x;
    return true;
}

/* A word: non-blank bytes up to blank/newline. */
static size_t get_word(cur_t *c, const char **w)
{
    skip_blank(c);
    *w = c->p;
    while (c->p < c->end && *c->p != ' ' && *c->p != '\t' && *c->p != '\n')
        c->p++;
    return (size_t)(c->p - *w);
}

static bool word_is(const char *w, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    return n == l && memcmp(w, lit, l) == 0;
}

static bool starts(const cur_t *c, const char *lit, size_t l)
{
    return (size_t)(c->end - c->p) >= l && memcmp(c->p, lit, l) == 0;
}

static int bad(loom_err_t *err, const char *name, size_t line, const char *what)
{
    return loom_err_set(err, LOOM_EINVAL, "%s: line %zu: expected %s", name, line, what);
}

/* Copies a word into a fixed field; false if it does not fit (no silent
 * truncation) or is empty. */
static bool copy_name(char *dst, size_t cap, const char *w, size_t n)
{
    if (n == 0 || n >= cap || memchr(w, '\0', n))
        return false;
    memcpy(dst, w, n);
    dst[n] = '\0';
    return true;
}

/* ------------------------------------------------------------ /proc/stat */

int loom_mon__parse_stat(const char *buf, size_t len, const char *name, double ticks_per_second,
                         loom_mon_cpu_t *cpu, loom_err_t *err)
{
    cur_t c = {buf, buf + len, 1};
    bool have_total = false;
    cpu->n_cores = 0;
    cpu->context_switches = cpu->interrupts = cpu->forks = 0;
    cpu->procs_running = cpu->procs_blocked = 0;
    cpu->boot_time_unix_s = 0;
    while (c.p < c.end) {
        if (starts(&c, "cpu", 3)) {
            const char *w;
            size_t n = get_word(&c, &w);
            double *dst;
            if (n == 3) {
                dst = cpu->seconds;
                have_total = true;
            } else {
                cur_t idc = {w + 3, w + n, c.line};
                uint64_t id;
                if (!get_u64(&idc, &id) || idc.p != w + n || id > INT32_MAX)
                    return bad(err, name, c.line, "\"cpu\" or \"cpuN\"");
                if (loom_mon__grow((void **)&cpu->cores, &cpu->cap_cores_, cpu->n_cores + 1,
                                   sizeof *cpu->cores, err))
                    return err ? err->code : LOOM_ENOMEM;
                loom_mon_cpu_core_t *core = &cpu->cores[cpu->n_cores++];
                core->id = (int)id;
                core->freq_hz = NAN;
                dst = core->seconds;
            }
            int k = 0;
            for (; k < LOOM_MON_CPU_NMODES && !at_eol(&c); k++) {
                uint64_t t;
                if (!get_u64(&c, &t))
                    return bad(err, name, c.line, "a tick count");
                dst[k] = (double)t / ticks_per_second; /* exact-rounded */
            }
            if (k < 4) /* user nice system idle exist since Linux 2.4 */
                return bad(err, name, c.line, "at least 4 tick counts");
            for (; k < LOOM_MON_CPU_NMODES; k++)
                dst[k] = 0;
        } else {
            const char *w;
            size_t n = get_word(&c, &w);
            uint64_t *u = NULL;
            if (word_is(w, n, "ctxt"))
                u = &cpu->context_switches;
            else if (word_is(w, n, "intr"))
                u = &cpu->interrupts;
            else if (word_is(w, n, "processes"))
                u = &cpu->forks;
            else if (word_is(w, n, "procs_running"))
                u = &cpu->procs_running;
            else if (word_is(w, n, "procs_blocked"))
                u = &cpu->procs_blocked;
            if (u) {
                if (!get_u64(&c, u))
                    return bad(err, name, c.line, "a number");
            } else if (word_is(w, n, "btime")) {
                if (!get_i64(&c, &cpu->boot_time_unix_s))
                    return bad(err, name, c.line, "a number");
            }
        }
        next_line(&c);
    }
    if (!have_total)
        return loom_err_set(err, LOOM_EINVAL, "%s: no \"cpu\" line", name);
    return LOOM_OK;
}

int loom_mon__parse_loadavg(const char *buf, size_t len, const char *name, loom_mon_cpu_t *cpu,
                            loom_err_t *err)
{
    cur_t c = {buf, buf + len, 1};
    if (!get_dec(&c, &cpu->load1) || !get_dec(&c, &cpu->load5) || !get_dec(&c, &cpu->load15))
        return bad(err, name, 1, "three load averages");
    if (!get_u64(&c, &cpu->tasks_runnable) || c.p >= c.end || *c.p != '/')
        return bad(err, name, 1, "RUNNABLE/TOTAL");
    c.p++;
    if (!get_u64(&c, &cpu->tasks_total))
        return bad(err, name, 1, "RUNNABLE/TOTAL");
    return LOOM_OK;
}

int loom_mon__parse_last_pid(const char *buf, size_t len, const char *name, int64_t *pid,
                             loom_err_t *err)
{
    /* Skip the three averages and RUNNABLE/TOTAL; the kernel has printed
     * the last pid there since Linux 2.6 (never absent, never signed). */
    cur_t c = {buf, buf + len, 1};
    const char *w;
    for (int k = 0; k < 4; k++)
        if (get_word(&c, &w) == 0)
            return bad(err, name, 1, "five fields (load1 load5 load15 R/T LASTPID)");
    uint64_t v;
    if (!get_u64(&c, &v) || v > INT32_MAX || !at_eol(&c))
        return bad(err, name, 1, "the last pid allocated (fifth field)");
    *pid = (int64_t)v;
    return LOOM_OK;
}

int loom_mon__parse_pid_list(const char *buf, size_t len, const char *name, pid_t **pids, size_t *n,
                             size_t *cap, loom_err_t *err)
{
    cur_t c = {buf, buf + len, 1};
    for (;;) {
        while (c.p < c.end && (*c.p == ' ' || *c.p == '\t' || *c.p == '\n'))
            c.p++;
        if (c.p >= c.end)
            return LOOM_OK;
        uint64_t v;
        if (!get_u64(&c, &v) || v == 0 || v > INT32_MAX ||
            (c.p < c.end && *c.p != ' ' && *c.p != '\t' && *c.p != '\n'))
            return bad(err, name, 1, "process ids separated by blanks");
        if (loom_mon__grow((void **)pids, cap, *n + 1, sizeof **pids, err))
            return LOOM_ENOMEM;
        (*pids)[(*n)++] = (pid_t)v;
    }
}

/* -------------------------------------------------------------------- PSI */

int loom_mon__parse_psi(const char *buf, size_t len, const char *name, loom_mon_psi_t *psi,
                        loom_err_t *err)
{
    cur_t c = {buf, buf + len, 1};
    bool some = false;
    psi->has_full = false;
    while (c.p < c.end) {
        const char *w;
        size_t n = get_word(&c, &w);
        loom_mon_psi_line_t *l = NULL;
        if (word_is(w, n, "some")) {
            l = &psi->some;
            some = true;
        } else if (word_is(w, n, "full")) {
            l = &psi->full;
            psi->has_full = true;
        }
        if (l) {
            static const char *keys[] = {"avg10=", "avg60=", "avg300=", "total="};
            double *dst[] = {&l->avg10, &l->avg60, &l->avg300, NULL};
            for (int k = 0; k < 4; k++) {
                skip_blank(&c);
                size_t kl = strlen(keys[k]);
                if (!starts(&c, keys[k], kl))
                    return bad(err, name, c.line, keys[k]);
                c.p += kl;
                if (dst[k]) {
                    if (!get_dec(&c, dst[k]))
                        return bad(err, name, c.line, "a percentage");
                } else {
                    uint64_t us;
                    if (!get_u64(&c, &us))
                        return bad(err, name, c.line, "total microseconds");
                    l->total_seconds = (double)us / 1e6;
                }
            }
        }
        next_line(&c);
    }
    if (!some)
        return loom_err_set(err, LOOM_EINVAL, "%s: no \"some\" line", name);
    return LOOM_OK;
}

/* ---------------------------------------------------------------- meminfo */

int loom_mon__parse_meminfo(const char *buf, size_t len, const char *name, loom_mon_memory_t *mem,
                            loom_err_t *err)
{
    enum { TOTAL, FREE, AVAIL, BUFFERS, CACHED, SRECL, SHMEM, DIRTY, STOTAL, SFREE, NK };
    static const char *const keys[NK] = {
        "MemTotal:",     "MemFree:", "MemAvailable:", "Buffers:",   "Cached:",
        "SReclaimable:", "Shmem:",   "Dirty:",        "SwapTotal:", "SwapFree:"};
    uint64_t v[NK] = {0}, found = 0;
    int rc = loom_mon__parse_keyed(buf, len, name, keys, NK, v, &found, err);
    if (rc)
        return rc;
    const unsigned need = (1u << TOTAL) | (1u << FREE);
    if ((found & need) != need)
        return loom_err_set(err, LOOM_EINVAL, "%s: expected MemTotal and MemFree", name);
    for (int i = 0; i < NK; i++)
        if (v[i] > UINT64_MAX / 1024)
            return loom_err_set(err, LOOM_EINVAL, "%s: %s value too large", name, keys[i]);
    mem->total_bytes = v[TOTAL] * 1024;
    mem->free_bytes = v[FREE] * 1024;
    /* MemAvailable exists since Linux 3.14; older kernels: free+buffers+cached. */
    mem->available_bytes =
        (found & (1u << AVAIL)) ? v[AVAIL] * 1024 : (v[FREE] + v[BUFFERS] + v[CACHED]) * 1024;
    mem->buffers_bytes = v[BUFFERS] * 1024;
    mem->cached_bytes = (v[CACHED] + v[SRECL]) * 1024;
    mem->shared_bytes = v[SHMEM] * 1024;
    mem->dirty_bytes = v[DIRTY] * 1024;
    uint64_t notused = mem->free_bytes + mem->buffers_bytes + mem->cached_bytes;
    if (mem->total_bytes > notused) /* as free(1); never below 0 */
        mem->used_bytes = mem->total_bytes - notused;
    else
        mem->used_bytes =
            mem->total_bytes > mem->free_bytes ? mem->total_bytes - mem->free_bytes : 0;
    mem->swap_total_bytes = v[STOTAL] * 1024;
    mem->swap_free_bytes = v[SFREE] * 1024;
    mem->swap_used_bytes = v[STOTAL] >= v[SFREE] ? (v[STOTAL] - v[SFREE]) * 1024 : 0;
    return LOOM_OK;
}

int loom_mon__parse_keyed(const char *buf, size_t len, const char *name, const char *const *keys,
                          size_t n_keys, uint64_t *vals, uint64_t *found, loom_err_t *err)
{
    cur_t c = {buf, buf + len, 1};
    size_t klen[64];
    if (n_keys > 64)
        n_keys = 64;
    for (size_t i = 0; i < n_keys; i++)
        klen[i] = strlen(keys[i]);
    const uint64_t all = n_keys == 64 ? ~0ull : (1ull << n_keys) - 1;
    *found = 0;
    /* Stops once every key is found: meminfo's later 30-odd lines are
     * skipped (and a key given twice keeps its first value). */
    while (c.p < c.end && *found != all) {
        const char *w;
        size_t n = get_word(&c, &w);
        for (size_t i = 0; i < n_keys && n; i++) {
            if (n != klen[i] || w[0] != keys[i][0] || memcmp(w, keys[i], n) != 0)
                continue;
            if (!get_u64(&c, &vals[i]))
                return loom_err_set(err, LOOM_EINVAL, "%s: line %zu: expected a number after %s",
                                    name, c.line, keys[i]);
            *found |= 1ull << i;
            break;
        }
        next_line(&c);
    }
    return LOOM_OK;
}

/* -------------------------------------------------------------- diskstats */

int loom_mon__parse_diskstats(const char *buf, size_t len, const char *name,
                              loom_mon_disks_t *disks, loom_err_t *err)
{
    cur_t c = {buf, buf + len, 1};
    disks->n = 0;
    while (c.p < c.end) {
        skip_blank(&c);
        if (at_eol(&c)) {
            next_line(&c);
            continue;
        }
        uint64_t maj, min, f[17] = {0};
        const char *w;
        if (!get_u64(&c, &maj) || !get_u64(&c, &min) || maj > UINT32_MAX || min > UINT32_MAX)
            return bad(err, name, c.line, "MAJOR MINOR NAME");
        size_t n = get_word(&c, &w);
        int k = 0;
        for (; k < 17 && !at_eol(&c); k++)
            if (!get_u64(&c, &f[k]))
                return bad(err, name, c.line, "a counter");
        if (k < 11) /* the 11 fields of Linux 2.6 */
            return bad(err, name, c.line, "at least 11 counters");
        if (loom_mon__grow((void **)&disks->disks, &disks->cap_, disks->n + 1, sizeof *disks->disks,
                           err))
            return err ? err->code : LOOM_ENOMEM;
        loom_mon_disk_t *d = &disks->disks[disks->n];
        memset(d, 0, sizeof *d);
        if (!copy_name(d->name, sizeof d->name, w, n))
            return bad(err, name, c.line, "a device name of 1..63 bytes");
        for (int i = 0; i < 17; i++) /* sectors are 512 B in diskstats, always */
            if ((i == 2 || i == 6 || i == 13) && f[i] > UINT64_MAX / 512)
                return bad(err, name, c.line, "a sector count below 2^55");
        d->major = (unsigned)maj;
        d->minor = (unsigned)min;
        d->reads = f[0];
        d->reads_merged = f[1];
        d->read_bytes = f[2] * 512;
        d->read_seconds = (double)f[3] / 1e3;
        d->writes = f[4];
        d->writes_merged = f[5];
        d->written_bytes = f[6] * 512;
        d->write_seconds = (double)f[7] / 1e3;
        d->io_in_progress = f[8];
        d->io_seconds = (double)f[9] / 1e3;
        d->io_weighted_seconds = (double)f[10] / 1e3;
        d->discards = f[11];
        d->discards_merged = f[12];
        d->discarded_bytes = f[13] * 512;
        d->discard_seconds = (double)f[14] / 1e3;
        d->flushes = f[15];
        d->flush_seconds = (double)f[16] / 1e3;
        disks->n++;
        next_line(&c);
    }
    return LOOM_OK;
}

/* ---------------------------------------------------------------- net/dev */

int loom_mon__parse_netdev(const char *buf, size_t len, const char *name, loom_mon_net_t *net,
                           loom_err_t *err)
{
    cur_t c = {buf, buf + len, 1};
    net->n = 0;
    /* Two header lines, then "  NAME: 16 numbers". */
    for (int i = 0; i < 2; i++) {
        if (c.p >= c.end)
            return bad(err, name, c.line, "the two header lines");
        next_line(&c);
    }
    while (c.p < c.end) {
        skip_blank(&c);
        if (at_eol(&c)) {
            next_line(&c);
            continue;
        }
        const char *w = c.p;
        while (c.p < c.end && *c.p != ':' && *c.p != '\n')
            c.p++;
        if (c.p >= c.end || *c.p != ':')
            return bad(err, name, c.line, "\"NAME:\"");
        size_t n = (size_t)(c.p - w);
        c.p++;
        uint64_t f[16];
        for (int k = 0; k < 16; k++)
            if (!get_u64(&c, &f[k]))
                return bad(err, name, c.line, "16 counters");
        if (loom_mon__grow((void **)&net->ifs, &net->cap_, net->n + 1, sizeof *net->ifs, err))
            return err ? err->code : LOOM_ENOMEM;
        loom_mon_netif_t *x = &net->ifs[net->n];
        if (!copy_name(x->name, sizeof x->name, w, n))
            return bad(err, name, c.line, "an interface name of 1..63 bytes");
        x->rx_bytes = f[0];
        x->rx_packets = f[1];
        x->rx_errors = f[2];
        x->rx_dropped = f[3];
        x->rx_fifo = f[4];
        x->rx_frame = f[5];
        x->rx_compressed = f[6];
        x->rx_multicast = f[7];
        x->tx_bytes = f[8];
        x->tx_packets = f[9];
        x->tx_errors = f[10];
        x->tx_dropped = f[11];
        x->tx_fifo = f[12];
        x->tx_collisions = f[13];
        x->tx_carrier = f[14];
        x->tx_compressed = f[15];
        net->n++;
        next_line(&c);
    }
    return LOOM_OK;
}

/* ------------------------------------------------------- mounts, fs types */

int loom_mon__parse_filesystems(const char *buf, size_t len, const char *name, loom_buf_t *out,
                                size_t *n, loom_err_t *err)
{
    cur_t c = {buf, buf + len, 1};
    *n = 0;
    while (c.p < c.end) {
        const char *w;
        size_t wn = get_word(&c, &w);
        if (wn == 0) {
            next_line(&c);
            continue;
        }
        if (word_is(w, wn, "nodev")) { /* "nodev\tproc": not device-backed */
            next_line(&c);
            continue;
        }
        if (!at_eol(&c)) {
            skip_blank(&c);
            if (!at_eol(&c))
                return bad(err, name, c.line, "[nodev] TYPE");
        }
        if (memchr(w, '\0', wn))
            return bad(err, name, c.line, "a type name without NUL bytes");
        if (loom_buf_append(out, w, wn) || loom_buf_append_char(out, '\0'))
            return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", name);
        (*n)++;
        next_line(&c);
    }
    return LOOM_OK;
}

/* Decodes the \ooo escapes of /proc/self/mounts into dst (cap bytes). */
static bool unescape(char *dst, size_t cap, const char *w, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = w[i];
        if (ch == '\\' && i + 3 < n && w[i + 1] >= '0' && w[i + 1] <= '3' && w[i + 2] >= '0' &&
            w[i + 2] <= '7' && w[i + 3] >= '0' && w[i + 3] <= '7') {
            ch = (char)((w[i + 1] - '0') * 64 + (w[i + 2] - '0') * 8 + (w[i + 3] - '0'));
            i += 3;
        }
        if (o + 1 >= cap || ch == '\0')
            return false;
        dst[o++] = ch;
    }
    if (o == 0)
        return false;
    dst[o] = '\0';
    return true;
}

static bool in_list(const char *list, size_t n, const char *w, size_t wn)
{
    const char *p = list;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(p);
        if (l == wn && memcmp(p, w, wn) == 0)
            return true;
        p += l + 1;
    }
    return false;
}

int loom_mon__parse_mounts(const char *buf, size_t len, const char *name, const char *types,
                           size_t n_types, loom_mon_fss_t *fss, loom_err_t *err)
{
    cur_t c = {buf, buf + len, 1};
    fss->n = 0;
    fss->skipped_long = 0;
    while (c.p < c.end) {
        const char *dev, *mnt, *type, *opts;
        size_t dn = get_word(&c, &dev);
        if (dn == 0 && at_eol(&c)) {
            next_line(&c);
            continue;
        }
        size_t mn = get_word(&c, &mnt);
        size_t tn = get_word(&c, &type);
        size_t on = get_word(&c, &opts);
        if (dn == 0 || mn == 0 || tn == 0 || on == 0)
            return bad(err, name, c.line, "DEVICE MOUNTPOINT TYPE OPTIONS");
        if (!in_list(types, n_types, type, tn) || word_is(type, tn, "tmpfs")) {
            next_line(&c);
            continue;
        }
        if (loom_mon__grow((void **)&fss->fs, &fss->cap_, fss->n + 1, sizeof *fss->fs, err))
            return err ? err->code : LOOM_ENOMEM;
        loom_mon_fs_t *f = &fss->fs[fss->n];
        memset(f, 0, sizeof *f);
        if (!unescape(f->device, sizeof f->device, dev, dn) ||
            !unescape(f->mountpoint, sizeof f->mountpoint, mnt, mn) ||
            !copy_name(f->fstype, sizeof f->fstype, type, tn)) {
            fss->skipped_long++;
            next_line(&c);
            continue;
        }
        f->readonly = (on >= 2 && memcmp(opts, "ro", 2) == 0 && (on == 2 || opts[2] == ','));
        bool dup = false;
        for (size_t i = 0; i < fss->n; i++)
            if (strcmp(fss->fs[i].device, f->device) == 0)
                dup = true;
        if (!dup)
            fss->n++;
        next_line(&c);
    }
    return LOOM_OK;
}

/* ------------------------------------------------------------ /proc/PID */

int loom_mon__parse_pidstat(const char *buf, size_t len, const char *name, loom_mon_pidstat_t *out,
                            loom_err_t *err)
{
    /* "PID (COMM) S PPID ..." where COMM may hold spaces and ')': the last
     * ')' ends it. */
    const char *open = memchr(buf, '(', len);
    const char *close = NULL;
    for (size_t i = len; i > 0; i--)
        if (buf[i - 1] == ')') {
            close = buf + i - 1;
            break;
        }
    if (!open || !close || close < open)
        return bad(err, name, 1, "PID (COMM) ...");
    size_t cn = (size_t)(close - open - 1);
    if (cn >= sizeof out->comm)
        cn = sizeof out->comm - 1; /* the kernel limits comm to 15 bytes */
    memcpy(out->comm, open + 1, cn);
    out->comm[cn] = '\0';
    cur_t c = {close + 1, buf + len, 1};
    const char *w;
    if (get_word(&c, &w) != 1)
        return bad(err, name, 1, "a one-letter state");
    out->state = w[0];
    /* Fields 4.. (1-based as in proc(5)); we need 4 ppid, 14 utime, 15
     * stime, 16 cutime, 17 cstime, 20 num_threads, 22 starttime, 23 vsize, 24 rss. */
    uint64_t f[25] = {0};
    for (int k = 4; k <= 24; k++) {
        if (k == 4) {
            if (!get_i64(&c, &out->ppid))
                return bad(err, name, 1, "ppid (field 4)");
            continue;
        }
        int64_t v; /* some fields (priority, nice) are signed */
        if (!get_i64(&c, &v))
            return loom_err_set(err, LOOM_EINVAL, "%s: line 1: expected field %d", name, k);
        f[k] = (uint64_t)v;
    }
    out->utime_ticks = f[14];
    out->stime_ticks = f[15];
    out->cutime_ticks = f[16];
    out->cstime_ticks = f[17];
    out->num_threads = f[20];
    out->starttime_ticks = f[22];
    out->vsize_bytes = f[23];
    out->rss_pages = f[24];
    return LOOM_OK;
}

int loom_mon__parse_iostat(const char *buf, size_t len, const char *name, loom_mon_cgroup_t *cg,
                           loom_err_t *err)
{
    cur_t c = {buf, buf + len, 1};
    cg->io_read_bytes = cg->io_write_bytes = cg->io_reads = cg->io_writes = 0;
    cg->io_discard_bytes = cg->io_discards = 0;
    while (c.p < c.end) {
        const char *w;
        size_t n = get_word(&c, &w);
        if (n == 0) {
            next_line(&c);
            continue;
        }
        if (!memchr(w, ':', n))
            return bad(err, name, c.line, "MAJ:MIN key=value ...");
        while (!at_eol(&c)) {
            const char *kv;
            size_t kn = get_word(&c, &kv);
            if (kn == 0)
                break;
            const char *eq = memchr(kv, '=', kn);
            if (!eq)
                return bad(err, name, c.line, "key=value");
            cur_t vc = {eq + 1, kv + kn, c.line};
            uint64_t v;
            if (!get_u64(&vc, &v) || vc.p != kv + kn)
                continue; /* non-numeric values (future keys) are skipped */
            size_t keyn = (size_t)(eq - kv);
            uint64_t *dst = NULL;
            if (word_is(kv, keyn, "rbytes"))
                dst = &cg->io_read_bytes;
            else if (word_is(kv, keyn, "wbytes"))
                dst = &cg->io_write_bytes;
            else if (word_is(kv, keyn, "rios"))
                dst = &cg->io_reads;
            else if (word_is(kv, keyn, "wios"))
                dst = &cg->io_writes;
            else if (word_is(kv, keyn, "dbytes"))
                dst = &cg->io_discard_bytes;
            else if (word_is(kv, keyn, "dios"))
                dst = &cg->io_discards;
            if (dst)
                *dst += v;
        }
        next_line(&c);
    }
    return LOOM_OK;
}

int loom_mon__parse_int_file(const char *buf, size_t len, const char *name, bool max_ok,
                             int64_t *out, loom_err_t *err)
{
    cur_t c = {buf, buf + len, 1};
    if (max_ok && len >= 3 && memcmp(buf, "max", 3) == 0 && (len == 3 || buf[3] == '\n')) {
        *out = INT64_MAX;
        return LOOM_OK;
    }
    if (!get_i64(&c, out))
        return bad(err, name, 1, max_ok ? "an integer or \"max\"" : "an integer");
    if (c.p < c.end && *c.p == '\n')
        c.p++;
    if (c.p != c.end)
        return bad(err, name, 1, "one integer and nothing after it");
    return LOOM_OK;
}
