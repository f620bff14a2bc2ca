/* The host collector: CPU, memory, disks, network, filesystems, RAPL energy
 * and temperatures, read from /proc and /sys when loom_mon_read is called.
 *
 * Why it is shaped so: a reading must be cheap enough for a 1 kHz sampler,
 * so loom_mon_open discovers the sources once and keeps their files open;
 * each reading is then one pread per file (seq_file regenerates the content
 * at offset 0) and a hand-written parse (parse.c). Sources that are absent
 * are recorded with the reason at open time and reported in every snapshot.
 * The mount table is kept parsed: poll() is asked at most every 10 ms
 * whether it changed, and a mount whose statfs no longer matches the
 * filesystem first seen there makes the reading parse it again at once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "mon/mon_int.h"

typedef struct rapl {
    char id[64], name[64];
    int fd;
    double max_j;
    loom_mon_source_t src;
} rapl_t;

/* What statfs said of a mount the first time it was read after the table
 * was parsed: a later statfs of the same mountpoint that reports another
 * filesystem (type or id) means the mount went away or was replaced. */
typedef struct mount_key {
    bool known;
    long type;
    fsid_t fsid;
} mount_key_t;

/* How often read_fs asks poll() whether the mount table changed. Between
 * two checks a mount that disappears or is replaced is still seen at once
 * (its statfs no longer matches mount_key_t); a new mount is seen at the
 * next check. */
#define MOUNT_CHECK_NS (10 * LOOM_NS_PER_MS)

/* statfs(2) f_flags: ST_VALID (Linux >= 2.6.36) says the mount flags are
 * filled in; glibc's <sys/statvfs.h> does not name it. */
#ifndef ST_VALID
#define ST_VALID 0x0020
#endif

typedef struct tsensor {
    char kind[16], chip[64], sensor[64];
    int fd;
} tsensor_t;

struct loom_mon {
    char proc_root[256], sys_root[256], nvml_lib[256];
    double hz; /* USER_HZ */
    int fd_stat, fd_loadavg, fd_meminfo, fd_diskstats, fd_netdev, fd_mounts;
    int fd_psi[3]; /* cpu memory io */
    loom_mon_source_t psi_src[3];
    loom_mon_source_t load_src, mem_src, disk_src, net_src, mounts_src;
    int *fd_freq; /* by cpu id, -1 if none */
    size_t n_freq;
    loom_mon_source_t freq_src;
    loom_buf_t buf;
    loom_buf_t fstypes;
    size_t n_fstypes;
    loom_mon_fss_t mounts;   /* parsed table; statfs'd into each snapshot */
    mount_key_t *mount_keys; /* per mounts.fs[i] */
    size_t cap_mount_keys;
    bool mounts_stale;
    int64_t mounts_checked_ns; /* last poll() of fd_mounts, 0: never */
    rapl_t *rapl;
    size_t n_rapl, cap_rapl;
    loom_mon_source_t power_src;
    tsensor_t *temps;
    size_t n_temps, cap_temps;
    loom_mon_source_t hwmon_src, zone_src;
    loom_mon_nvml_t *nvml;
    char cg2_mount[512];
};

/* ------------------------------------------------------------- helpers */

int loom_mon__grow(void **arr, size_t *cap, size_t need, size_t elem, loom_err_t *err)
{
    if (need <= *cap)
        return LOOM_OK;
    size_t old = *cap;
    if (loom_vec_reserve(arr, cap, need, elem, 8))
        return loom_err_set(err, LOOM_ENOMEM, "out of memory growing an array to %zu", need);
    memset((char *)*arr + old * elem, 0, (*cap - old) * elem);
    return LOOM_OK;
}

void loom_mon__src_ok(loom_mon_source_t *s)
{
    s->status = LOOM_OK;
    s->reason[0] = '\0';
}

void loom_mon__src_set(loom_mon_source_t *s, int status, const char *fmt, ...)
{
    s->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->reason, sizeof s->reason, fmt, ap);
    va_end(ap);
}

static void src_from_err(loom_mon_source_t *s, const loom_err_t *e)
{
    s->status = e->code ? e->code : LOOM_EIO;
    snprintf(s->reason, sizeof s->reason, "%s", e->msg);
}

int loom_mon__pread_all(int fd, loom_buf_t *b, const char *name, loom_err_t *err)
{
    /* seq_file and sysfs fill the caller's buffer until the end of the
     * content, so a read shorter than the space offered is the end: one
     * pread per file. When the buffer is full we grow it and read again
     * from offset 0, rather than continuing at an offset: the kernel would
     * regenerate the file for the second read, and numbers that changed in
     * between would be torn across the two. The buffer is kept, so this
     * happens once per file size. */
    b->len = 0;
    if (b->cap < 8192 && loom_buf_reserve(b, 8192))
        return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", name);
    for (;;) {
        size_t room = b->cap - 1;
        ssize_t n = pread(fd, b->data, room, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return loom_err_errno(err, LOOM_EIO, errno, "%s: read", name);
        }
        if ((size_t)n < room) {
            b->len = (size_t)n;
            break;
        }
        if (b->cap >= (64u << 20)) /* no /proc file is this big */
            return loom_err_set(err, LOOM_ELIMIT, "%s: larger than 64 MiB", name);
        b->len = 0;
        if (loom_buf_reserve(b, b->cap * 2))
            return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", name);
    }
    b->data[b->len] = '\0';
    return LOOM_OK;
}

int loom_mon__read_small(const char *path, loom_buf_t *b, loom_err_t *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return loom_err_errno(err, errno == ENOENT ? LOOM_ENOTFOUND : LOOM_EIO, errno, "%s", path);
    int rc = loom_mon__pread_all(fd, b, path, err);
    close(fd);
    return rc;
}

static int open_at(const char *root, const char *rel, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", root, rel);
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* Opens ROOT/REL into *fd; on failure marks src unavailable with reason. */
static void open_src(const char *root, const char *rel, int *fd, loom_mon_source_t *src,
                     const char *why_absent)
{
    char path[512];
    *fd = open_at(root, rel, path, sizeof path);
    if (*fd >= 0) {
        loom_mon__src_ok(src);
        return;
    }
    if (errno == ENOENT)
        loom_mon__src_set(src, LOOM_EUNAVAIL, "%s absent (%s)", path, why_absent);
    else
        loom_mon__src_set(src, LOOM_EIO, "%s: %s", path, strerror(errno));
}

static void rtrim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
        s[--n] = '\0';
}

/* Reads a small text file into dst (trimmed); false if absent. */
static bool read_text(const char *path, char *dst, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, dst, cap - 1);
    close(fd);
    if (n < 0)
        return false;
    dst[n] = '\0';
    rtrim(dst);
    return true;
}

static int name_cmp(const void *a, const void *b)
{
    return strverscmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted entries of dir starting with prefix (malloc'd array of malloc'd
 * names); -1 with errno if the directory cannot be opened. */
static int list_dir(const char *dir, const char *prefix, char ***out)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char **v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    size_t pl = strlen(prefix);
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, pl) != 0 || e->d_name[0] == '.')
            continue;
        if (loom_vec_reserve((void **)&v, &cap, n + 1, sizeof *v, 16))
            break;
        v[n] = strdup(e->d_name);
        if (v[n])
            n++;
    }
    closedir(d);
    if (n)
        qsort(v, n, sizeof *v, name_cmp);
    *out = v;
    return (int)n;
}

static void free_list(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* ---------------------------------------------------------- discovery */

static void discover_freq(loom_mon_t *m, const loom_mon_cpu_t *cpu)
{
    int max_id = -1;
    for (size_t i = 0; i < cpu->n_cores; i++)
        if (cpu->cores[i].id > max_id)
            max_id = cpu->cores[i].id;
    m->n_freq = (size_t)(max_id + 1);
    m->fd_freq = m->n_freq ? malloc(m->n_freq * sizeof *m->fd_freq) : NULL;
    size_t opened = 0;
    int first_errno = ENOENT;
    for (size_t i = 0; i < m->n_freq && m->fd_freq; i++) {
        char rel[128], path[512];
        snprintf(rel, sizeof rel, "devices/system/cpu/cpu%zu/cpufreq/scaling_cur_freq", i);
        m->fd_freq[i] = open_at(m->sys_root, rel, path, sizeof path);
        if (m->fd_freq[i] >= 0)
            opened++;
        else if (opened == 0)
            first_errno = errno;
    }
    if (opened)
        loom_mon__src_ok(&m->freq_src);
    else if (first_errno == ENOENT)
        loom_mon__src_set(&m->freq_src, LOOM_EUNAVAIL,
                          "%s/devices/system/cpu/cpu0/cpufreq absent (no cpufreq driver; "
                          "common in VMs)",
                          m->sys_root);
    else
        loom_mon__src_set(&m->freq_src, LOOM_EIO, "cpufreq: %s", strerror(first_errno));
}

static void discover_rapl(loom_mon_t *m)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/class/powercap", m->sys_root);
    char **names;
    int n = list_dir(dir, "intel-rapl:", &names);
    if (n < 0) {
        loom_mon__src_set(&m->power_src, LOOM_EUNAVAIL,
                          "%s absent (no powercap driver: no RAPL energy counters here)", dir);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (loom_mon__grow((void **)&m->rapl, &m->cap_rapl, m->n_rapl + 1, sizeof *m->rapl, NULL))
            break;
        rapl_t *z = &m->rapl[m->n_rapl];
        char path[1024], text[64];
        snprintf(z->id, sizeof z->id, "%s", names[i]);
        snprintf(path, sizeof path, "%s/%s/name", dir, names[i]);
        if (!read_text(path, z->name, sizeof z->name))
            snprintf(z->name, sizeof z->name, "%s", names[i]);
        snprintf(path, sizeof path, "%s/%s/max_energy_range_uj", dir, names[i]);
        int64_t max_uj = 0;
        if (read_text(path, text, sizeof text))
            loom_mon__parse_int_file(text, strlen(text), path, false, &max_uj, NULL);
        z->max_j = (double)max_uj / 1e6;
        snprintf(path, sizeof path, "%s/%s/energy_uj", dir, names[i]);
        z->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (z->fd >= 0)
            loom_mon__src_ok(&z->src);
        else /* since 2020 energy_uj is root-only (CVE-2020-8694) */
            loom_mon__src_set(&z->src, errno == ENOENT ? LOOM_EUNAVAIL : LOOM_EIO, "%s: %s", path,
                              strerror(errno));
        m->n_rapl++;
    }
    free_list(names, n);
    if (m->n_rapl)
        loom_mon__src_ok(&m->power_src);
    else
        loom_mon__src_set(&m->power_src, LOOM_EUNAVAIL, "%s has no intel-rapl zones", dir);
}

static void add_temp(loom_mon_t *m, const char *kind, const char *chip, const char *sensor,
                     const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    if (loom_mon__grow((void **)&m->temps, &m->cap_temps, m->n_temps + 1, sizeof *m->temps, NULL)) {
        close(fd);
        return;
    }
    tsensor_t *t = &m->temps[m->n_temps++];
    snprintf(t->kind, sizeof t->kind, "%s", kind);
    snprintf(t->chip, sizeof t->chip, "%s", chip);
    snprintf(t->sensor, sizeof t->sensor, "%s", sensor);
    t->fd = fd;
}

static void discover_thermal(loom_mon_t *m)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/class/hwmon", m->sys_root);
    char **chips;
    int n = list_dir(dir, "hwmon", &chips);
    size_t before = m->n_temps;
    for (int i = 0; i < n; i++) {
        char cdir[768], path[1024], chip[64];
        snprintf(cdir, sizeof cdir, "%s/%s", dir, chips[i]);
        snprintf(path, sizeof path, "%s/name", cdir);
        if (!read_text(path, chip, sizeof chip))
            snprintf(chip, sizeof chip, "%s", chips[i]);
        char **files;
        int nf = list_dir(cdir, "temp", &files);
        for (int j = 0; j < nf; j++) {
            size_t l = strlen(files[j]);
            if (l < 7 || strcmp(files[j] + l - 6, "_input") != 0)
                continue;
            char base[64], label[64];
            snprintf(base, sizeof base, "%.*s", (int)(l - 6), files[j]);
            snprintf(path, sizeof path, "%s/%s_label", cdir, base);
            if (!read_text(path, label, sizeof label))
                snprintf(label, sizeof label, "%s", base);
            snprintf(path, sizeof path, "%s/%s", cdir, files[j]);
            add_temp(m, "hwmon", chip, label, path);
        }
        if (nf > 0)
            free_list(files, nf);
    }
    if (n < 0)
        loom_mon__src_set(&m->hwmon_src, LOOM_EUNAVAIL, "%s absent (no hwmon sensors here)", dir);
    else if (m->n_temps == before)
        loom_mon__src_set(&m->hwmon_src, LOOM_EUNAVAIL, "%s has no temp*_input sensors", dir);
    else
        loom_mon__src_ok(&m->hwmon_src);
    if (n > 0)
        free_list(chips, n);

    snprintf(dir, sizeof dir, "%s/class/thermal", m->sys_root);
    char **zones;
    n = list_dir(dir, "thermal_zone", &zones);
    before = m->n_temps;
    for (int i = 0; i < n; i++) {
        char path[1024], type[64];
        snprintf(path, sizeof path, "%s/%s/type", dir, zones[i]);
        if (!read_text(path, type, sizeof type))
            snprintf(type, sizeof type, "unknown");
        snprintf(path, sizeof path, "%s/%s/temp", dir, zones[i]);
        add_temp(m, "thermal_zone", type, zones[i], path);
    }
    if (n < 0)
        loom_mon__src_set(&m->zone_src, LOOM_EUNAVAIL, "%s absent (no thermal driver)", dir);
    else if (m->n_temps == before)
        loom_mon__src_set(&m->zone_src, LOOM_EUNAVAIL,
                          "%s has no thermal_zone* (no ACPI/platform thermal zones here)", dir);
    else
        loom_mon__src_ok(&m->zone_src);
    if (n > 0)
        free_list(zones, n);
}

static int load_mounts(loom_mon_t *m, loom_err_t *err)
{
    int rc = loom_mon__pread_all(m->fd_mounts, &m->buf, "/proc/self/mounts", err);
    if (rc == LOOM_OK)
        rc = loom_mon__parse_mounts(m->buf.data, m->buf.len, "/proc/self/mounts", m->fstypes.data,
                                    m->n_fstypes, &m->mounts, err);
    if (rc == LOOM_OK)
        rc = loom_mon__grow((void **)&m->mount_keys, &m->cap_mount_keys, m->mounts.n,
                            sizeof *m->mount_keys, err);
    if (rc == LOOM_OK && m->mounts.n)
        memset(m->mount_keys, 0, m->mounts.n * sizeof *m->mount_keys);
    m->mounts_stale = rc != LOOM_OK;
    return rc;
}

static void discover_fs(loom_mon_t *m)
{
    char path[512];
    snprintf(path, sizeof path, "%s/filesystems", m->proc_root);
    loom_err_t e;
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = loom_mon__read_small(path, &b, &e);
    if (rc == LOOM_OK)
        rc = loom_mon__parse_filesystems(b.data, b.len, path, &m->fstypes, &m->n_fstypes, &e);
    loom_buf_free(&b);
    if (rc) {
        src_from_err(&m->mounts_src, &e);
        return;
    }
    open_src(m->proc_root, "self/mounts", &m->fd_mounts, &m->mounts_src, "no mount table");
    if (m->fd_mounts >= 0 && load_mounts(m, &e))
        src_from_err(&m->mounts_src, &e);
}

/* ------------------------------------------------------------ open/close */

int loom_mon_open(loom_mon_t **out, const loom_mon_opts_t *opts, loom_err_t *err)
{
    *out = NULL;
    loom_mon_t *m = calloc(1, sizeof *m);
    if (!m)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    const char *pr = opts && opts->proc_root ? opts->proc_root : "/proc";
    const char *sr = opts && opts->sys_root ? opts->sys_root : "/sys";
    const char *nl = opts && opts->nvml_lib ? opts->nvml_lib : getenv("LOOM_NVML_LIB");
    if (!nl || !*nl)
        nl = "libnvidia-ml.so.1";
    if (strlen(pr) >= sizeof m->proc_root || strlen(sr) >= sizeof m->sys_root ||
        strlen(nl) >= sizeof m->nvml_lib) {
        free(m);
        return loom_err_set(err, LOOM_EINVAL,
                            "mon: proc_root, sys_root or nvml_lib longer "
                            "than 255 bytes");
    }
    strcpy(m->proc_root, pr);
    strcpy(m->sys_root, sr);
    strcpy(m->nvml_lib, nl);
    long hz = sysconf(_SC_CLK_TCK);
    m->hz = (double)(hz > 0 ? hz : 100);
    m->fd_mounts = -1;
    loom_buf_init(&m->buf);
    loom_buf_init(&m->fstypes);

    char path[512];
    m->fd_stat = open_at(pr, "stat", path, sizeof path);
    if (m->fd_stat < 0) {
        int e = errno;
        free(m);
        return loom_err_errno(err, LOOM_EIO, e, "mon: %s", path);
    }
    open_src(pr, "loadavg", &m->fd_loadavg, &m->load_src, "no load averages");
    open_src(pr, "meminfo", &m->fd_meminfo, &m->mem_src, "no memory statistics");
    open_src(pr, "diskstats", &m->fd_diskstats, &m->disk_src, "no block devices");
    open_src(pr, "net/dev", &m->fd_netdev, &m->net_src, "no network statistics");
    static const char *psi[3] = {"pressure/cpu", "pressure/memory", "pressure/io"};
    for (int i = 0; i < 3; i++)
        open_src(pr, psi[i], &m->fd_psi[i], &m->psi_src[i],
                 "kernel without CONFIG_PSI, or booted with psi=0");

    /* One reading of /proc/stat tells which cpu ids exist (for cpufreq). */
    loom_mon_cpu_t cpu;
    memset(&cpu, 0, sizeof cpu);
    loom_err_t e;
    if (loom_mon__pread_all(m->fd_stat, &m->buf, path, &e) == LOOM_OK &&
        loom_mon__parse_stat(m->buf.data, m->buf.len, path, m->hz, &cpu, &e) == LOOM_OK)
        discover_freq(m, &cpu);
    else
        loom_mon__src_set(&m->freq_src, LOOM_EIO, "cpufreq not probed: %s", e.msg);
    free(cpu.cores);
    discover_fs(m);
    discover_rapl(m);
    discover_thermal(m);
    *out = m;
    return LOOM_OK;
}

void loom_mon_close(loom_mon_t *m)
{
    if (!m)
        return;
    int fds[] = {m->fd_stat,   m->fd_loadavg, m->fd_meminfo, m->fd_diskstats, m->fd_netdev,
                 m->fd_mounts, m->fd_psi[0],  m->fd_psi[1],  m->fd_psi[2]};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    for (size_t i = 0; i < m->n_freq && m->fd_freq; i++)
        if (m->fd_freq[i] >= 0)
            close(m->fd_freq[i]);
    free(m->fd_freq);
    for (size_t i = 0; i < m->n_rapl; i++)
        if (m->rapl[i].fd >= 0)
            close(m->rapl[i].fd);
    free(m->rapl);
    for (size_t i = 0; i < m->n_temps; i++)
        close(m->temps[i].fd);
    free(m->temps);
    free(m->mounts.fs);
    free(m->mount_keys);
    loom_buf_free(&m->buf);
    loom_buf_free(&m->fstypes);
    loom_mon__gpu_close(m->nvml);
    free(m);
}

const char *loom_mon__proc_root(const loom_mon_t *m)
{
    return m->proc_root;
}
const char *loom_mon__sys_root(const loom_mon_t *m)
{
    return m->sys_root;
}
double loom_mon__ticks_per_second(const loom_mon_t *m)
{
    return m->hz;
}

const char *loom_mon__cgroup2_mount(loom_mon_t *m)
{
    struct stat st;
    if (m->cg2_mount[0] && stat(m->cg2_mount, &st) == 0)
        return m->cg2_mount;
    m->cg2_mount[0] = '\0';
    char path[512];
    snprintf(path, sizeof path, "%s/self/mounts", m->proc_root);
    loom_buf_t b = LOOM_BUF_INIT;
    if (loom_mon__read_small(path, &b, NULL) == LOOM_OK) {
        /* "DEVICE MOUNTPOINT TYPE ...": the first of type cgroup2. */
        char *save = NULL;
        for (char *line = strtok_r(b.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            char *f[3], *s2 = NULL;
            int k = 0;
            for (char *tok = strtok_r(line, " ", &s2); tok && k < 3; tok = strtok_r(NULL, " ", &s2))
                f[k++] = tok;
            if (k == 3 && strcmp(f[2], "cgroup2") == 0 && strlen(f[1]) < sizeof m->cg2_mount) {
                strcpy(m->cg2_mount, f[1]);
                break;
            }
        }
    }
    loom_buf_free(&b);
    return m->cg2_mount;
}

/* ------------------------------------------------------------- reading */

/* Reads fd (if its source is ok) and runs parse; failures go to *dst. */
#define READ_PARSE(m, fd, srcok, dst, name, PARSE)                                                 \
    do {                                                                                           \
        loom_err_t e_;                                                                             \
        if ((srcok)->status != LOOM_OK) {                                                          \
            *(dst) = *(srcok);                                                                     \
        } else if (loom_mon__pread_all((fd), &(m)->buf, (name), &e_) != LOOM_OK ||                 \
                   (PARSE) != LOOM_OK) {                                                           \
            src_from_err((dst), &e_);                                                              \
        } else {                                                                                   \
            loom_mon__src_ok(dst);                                                                 \
        }                                                                                          \
    } while (0)

static void read_psi(loom_mon_t *m, int i, loom_mon_psi_t *psi, const char *name)
{
    READ_PARSE(m, m->fd_psi[i], &m->psi_src[i], &psi->source, name,
               loom_mon__parse_psi(m->buf.data, m->buf.len, name, psi, &e_));
}

static int read_freq(loom_mon_t *m, loom_mon_cpu_t *cpu)
{
    cpu->freq_source = m->freq_src;
    if (m->freq_src.status != LOOM_OK)
        return LOOM_OK;
    char text[32];
    for (size_t i = 0; i < cpu->n_cores; i++) {
        loom_mon_cpu_core_t *c = &cpu->cores[i];
        c->freq_hz = NAN;
        if (c->id < 0 || (size_t)c->id >= m->n_freq || m->fd_freq[c->id] < 0)
            continue;
        ssize_t n = pread(m->fd_freq[c->id], text, sizeof text - 1, 0);
        int64_t khz;
        if (n > 0 && loom_mon__parse_int_file(text, (size_t)n, "scaling_cur_freq", false, &khz,
                                              NULL) == LOOM_OK)
            c->freq_hz = (double)khz * 1e3;
    }
    return LOOM_OK;
}

static void read_cpu(loom_mon_t *m, loom_mon_cpu_t *cpu)
{
    loom_err_t e;
    if (loom_mon__pread_all(m->fd_stat, &m->buf, "/proc/stat", &e) != LOOM_OK ||
        loom_mon__parse_stat(m->buf.data, m->buf.len, "/proc/stat", m->hz, cpu, &e) != LOOM_OK)
        src_from_err(&cpu->source, &e);
    else
        loom_mon__src_ok(&cpu->source);
    READ_PARSE(m, m->fd_loadavg, &m->load_src, &cpu->load_source, "/proc/loadavg",
               loom_mon__parse_loadavg(m->buf.data, m->buf.len, "/proc/loadavg", cpu, &e_));
    read_freq(m, cpu);
    read_psi(m, 0, &cpu->pressure, "/proc/pressure/cpu");
}

/* statfs of one mount into f; false if the mount is no longer the one
 * the table listed (it must be parsed again). */
static bool statfs_mount(loom_mon_fs_t *f, mount_key_t *key)
{
    struct statfs st;
    if (statfs(f->mountpoint, &st) != 0) {
        int e = errno;
        loom_mon__src_set(&f->source, LOOM_EIO, "statfs %s: %s", f->mountpoint, strerror(e));
        /* The mountpoint itself is gone: so is the mount. */
        return !(key->known && e == ENOENT);
    }
    if (!key->known) {
        key->known = true;
        key->type = (long)st.f_type;
        key->fsid = st.f_fsid;
    } else if (key->type != (long)st.f_type ||
               memcmp(&key->fsid, &st.f_fsid, sizeof key->fsid) != 0) {
        return false; /* unmounted (statfs now sees the parent) or replaced */
    }
    loom_mon__src_ok(&f->source);
    uint64_t bs = st.f_frsize ? (uint64_t)st.f_frsize : (uint64_t)st.f_bsize;
    f->size_bytes = (uint64_t)st.f_blocks * bs;
    f->free_bytes = (uint64_t)st.f_bfree * bs;
    f->avail_bytes = (uint64_t)st.f_bavail * bs;
    f->files = st.f_files;
    f->files_free = st.f_ffree;
    if (st.f_flags & ST_VALID) /* a remount ro/rw shows here at once */
        f->readonly = (st.f_flags & ST_RDONLY) != 0;
    return true;
}

static void read_fs(loom_mon_t *m, loom_mon_fss_t *fss, int64_t now_ns, loom_err_t *err)
{
    if (m->fd_mounts < 0 || m->mounts_src.status != LOOM_OK) {
        fss->source = m->mounts_src;
        fss->n = 0;
        return;
    }
    /* The mount table is polled at most every MOUNT_CHECK_NS (one system
     * call saved per reading of a fast sampler); a mount that went away is
     * caught sooner by statfs_mount. At most one re-parse per reading. */
    bool reload = m->mounts_stale;
    if (!reload && (m->mounts_checked_ns == 0 || now_ns - m->mounts_checked_ns >= MOUNT_CHECK_NS ||
                    now_ns < m->mounts_checked_ns)) {
        m->mounts_checked_ns = now_ns;
        struct pollfd p = {.fd = m->fd_mounts, .events = POLLPRI};
        reload = poll(&p, 1, 0) > 0 && (p.revents & (POLLPRI | POLLERR));
    }
    for (int pass = 0; pass < 2; pass++) {
        if (reload) {
            loom_err_t e;
            m->mounts_checked_ns = now_ns;
            if (load_mounts(m, &e)) {
                src_from_err(&fss->source, &e);
                fss->n = 0;
                return;
            }
        }
        if (loom_mon__grow((void **)&fss->fs, &fss->cap_, m->mounts.n, sizeof *fss->fs, err)) {
            src_from_err(&fss->source, err);
            fss->n = 0;
            return;
        }
        loom_mon__src_ok(&fss->source);
        fss->n = m->mounts.n;
        fss->skipped_long = m->mounts.skipped_long;
        reload = false;
        for (size_t i = 0; i < fss->n && !reload; i++) {
            fss->fs[i] = m->mounts.fs[i];
            if (!statfs_mount(&fss->fs[i], &m->mount_keys[i]))
                reload = pass == 0;
        }
        if (!reload)
            break;
    }
}

static void read_power(loom_mon_t *m, loom_mon_power_t *pw, loom_err_t *err)
{
    pw->source = m->power_src;
    pw->n = 0;
    if (loom_mon__grow((void **)&pw->zones, &pw->cap_, m->n_rapl, sizeof *pw->zones, err))
        return;
    char text[32];
    for (size_t i = 0; i < m->n_rapl; i++) {
        rapl_t *z = &m->rapl[i];
        loom_mon_rapl_zone_t *o = &pw->zones[pw->n++];
        memcpy(o->id, z->id, sizeof o->id);
        memcpy(o->name, z->name, sizeof o->name);
        o->max_energy_joules = z->max_j;
        o->energy_joules = NAN;
        o->source = z->src;
        if (z->fd < 0)
            continue;
        ssize_t n = pread(z->fd, text, sizeof text - 1, 0);
        int64_t uj;
        loom_err_t e;
        if (n < 0)
            loom_mon__src_set(&o->source, LOOM_EIO, "%s energy_uj: %s", z->id, strerror(errno));
        else if (loom_mon__parse_int_file(text, (size_t)n, "energy_uj", false, &uj, &e))
            src_from_err(&o->source, &e);
        else
            o->energy_joules = (double)uj / 1e6;
    }
}

static void read_thermal(loom_mon_t *m, loom_mon_thermal_t *th, loom_err_t *err)
{
    th->hwmon_source = m->hwmon_src;
    th->zone_source = m->zone_src;
    th->n = 0;
    if (loom_mon__grow((void **)&th->temps, &th->cap_, m->n_temps, sizeof *th->temps, err))
        return;
    char text[32];
    for (size_t i = 0; i < m->n_temps; i++) {
        tsensor_t *t = &m->temps[i];
        loom_mon_temp_t *o = &th->temps[th->n++];
        memcpy(o->kind, t->kind, sizeof o->kind);
        memcpy(o->chip, t->chip, sizeof o->chip);
        memcpy(o->sensor, t->sensor, sizeof o->sensor);
        o->celsius = NAN;
        ssize_t n = pread(t->fd, text, sizeof text - 1, 0);
        int64_t milli;
        loom_err_t e;
        if (n < 0) /* e.g. ENODATA / EAGAIN from a sensor that is asleep */
            loom_mon__src_set(&o->source, LOOM_EIO, "%s %s: %s", t->chip, t->sensor,
                              strerror(errno));
        else if (loom_mon__parse_int_file(text, (size_t)n, t->sensor, false, &milli, &e))
            src_from_err(&o->source, &e);
        else {
            loom_mon__src_ok(&o->source);
            o->celsius = (double)milli / 1e3;
        }
    }
}

int loom_mon_read(loom_mon_t *m, unsigned groups, loom_mon_snapshot_t *s, loom_err_t *err)
{
    if (!m || !s)
        return loom_err_set(err, LOOM_EINVAL, "loom_mon_read: NULL collector or snapshot");
    if (groups == 0 || (groups & ~(unsigned)LOOM_MON_ALL))
        return loom_err_set(err, LOOM_EINVAL,
                            "loom_mon_read: groups 0x%x: expected a non-empty "
                            "set of LOOM_MON_* bits",
                            groups);
    s->groups = groups;
    s->mono_ns = loom_time_mono_ns();
    s->real_ns = loom_time_real_ns();
    loom_err_t e;
    if (groups & LOOM_MON_CPU)
        read_cpu(m, &s->cpu);
    if (groups & LOOM_MON_MEMORY) {
        READ_PARSE(
            m, m->fd_meminfo, &m->mem_src, &s->memory.source, "/proc/meminfo",
            loom_mon__parse_meminfo(m->buf.data, m->buf.len, "/proc/meminfo", &s->memory, &e_));
        read_psi(m, 1, &s->memory.pressure, "/proc/pressure/memory");
    }
    if (groups & LOOM_MON_DISK) {
        READ_PARSE(
            m, m->fd_diskstats, &m->disk_src, &s->disk.source, "/proc/diskstats",
            loom_mon__parse_diskstats(m->buf.data, m->buf.len, "/proc/diskstats", &s->disk, &e_));
        if (s->disk.source.status != LOOM_OK)
            s->disk.n = 0;
        read_psi(m, 2, &s->disk.pressure, "/proc/pressure/io");
    }
    if (groups & LOOM_MON_NET) {
        READ_PARSE(m, m->fd_netdev, &m->net_src, &s->net.source, "/proc/net/dev",
                   loom_mon__parse_netdev(m->buf.data, m->buf.len, "/proc/net/dev", &s->net, &e_));
        if (s->net.source.status != LOOM_OK)
            s->net.n = 0;
    }
    if (groups & LOOM_MON_FS)
        read_fs(m, &s->fs, s->mono_ns, &e);
    if (groups & LOOM_MON_POWER)
        read_power(m, &s->power, &e);
    if (groups & LOOM_MON_THERMAL)
        read_thermal(m, &s->thermal, &e);
    if (groups & LOOM_MON_GPU)
        loom_mon__gpu_read(&m->nvml, m->nvml_lib, &s->gpu, &e);
    return LOOM_OK;
}

/* ------------------------------------------------------------ snapshots */

void loom_mon_snapshot_init(loom_mon_snapshot_t *s)
{
    memset(s, 0, sizeof *s);
}

void loom_mon_snapshot_free(loom_mon_snapshot_t *s)
{
    if (!s)
        return;
    free(s->cpu.cores);
    free(s->disk.disks);
    free(s->net.ifs);
    free(s->fs.fs);
    free(s->power.zones);
    free(s->thermal.temps);
    loom_mon__gpus_free(&s->gpu);
    memset(s, 0, sizeof *s);
}

#define COPY_ARR(dst, src, arr, n, cap)                                                            \
    do {                                                                                           \
        if (loom_mon__grow((void **)&(dst)->arr, &(dst)->cap, (src)->n, sizeof *(dst)->arr, err))  \
            return LOOM_ENOMEM;                                                                    \
        if ((src)->n)                                                                              \
            memcpy((dst)->arr, (src)->arr, (src)->n * sizeof *(dst)->arr);                         \
    } while (0)

int loom_mon_snapshot_copy(loom_mon_snapshot_t *dst, const loom_mon_snapshot_t *src,
                           loom_err_t *err)
{
    loom_mon_snapshot_t keep = *dst; /* arrays to reuse */
    *dst = *src;
    dst->cpu.cores = keep.cpu.cores, dst->cpu.cap_cores_ = keep.cpu.cap_cores_;
    dst->disk.disks = keep.disk.disks, dst->disk.cap_ = keep.disk.cap_;
    dst->net.ifs = keep.net.ifs, dst->net.cap_ = keep.net.cap_;
    dst->fs.fs = keep.fs.fs, dst->fs.cap_ = keep.fs.cap_;
    dst->power.zones = keep.power.zones, dst->power.cap_ = keep.power.cap_;
    dst->thermal.temps = keep.thermal.temps, dst->thermal.cap_ = keep.thermal.cap_;
    dst->gpu = keep.gpu;
    COPY_ARR(&dst->cpu, &src->cpu, cores, n_cores, cap_cores_);
    COPY_ARR(&dst->disk, &src->disk, disks, n, cap_);
    COPY_ARR(&dst->net, &src->net, ifs, n, cap_);
    COPY_ARR(&dst->fs, &src->fs, fs, n, cap_);
    COPY_ARR(&dst->power, &src->power, zones, n, cap_);
    COPY_ARR(&dst->thermal, &src->thermal, temps, n, cap_);
    return loom_mon__gpus_copy(&dst->gpu, &src->gpu, err);
}
