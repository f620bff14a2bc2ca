/* Fuzz the parsers of system-wide /proc files (src/mon/parse.c) with
 * mutated copies of this machine's real files. The first byte picks the
 * parser; the rest is the file content. Checks: no crash, no UB, no leak,
 * and on success the results are within their fields (names terminated,
 * counts consistent). */
#include <stdlib.h>
#include <string.h>

#include "mon/mon_int.h"

static void names_ok(const char *s, size_t cap)
{
    if (strnlen(s, cap) >= cap)
        abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1)
        return 0;
    int which = data[0] % 9;
    const char *buf = (const char *)data + 1;
    size_t len = size - 1;
    loom_err_t e;
    switch (which) {
    case 0: {
        loom_mon_cpu_t c;
        memset(&c, 0, sizeof c);
        if (loom_mon__parse_stat(buf, len, "stat", 100, &c, &e) == LOOM_OK)
            for (size_t i = 0; i < c.n_cores; i++)
                if (c.cores[i].id < 0)
                    abort();
        free(c.cores);
        break;
    }
    case 1: {
        loom_mon_memory_t m;
        if (loom_mon__parse_meminfo(buf, len, "meminfo", &m, &e) == LOOM_OK &&
            (m.used_bytes > m.total_bytes || m.swap_used_bytes > m.swap_total_bytes))
            abort();
        break;
    }
    case 2: {
        loom_mon_cpu_t c;
        memset(&c, 0, sizeof c);
        loom_mon__parse_loadavg(buf, len, "loadavg", &c, &e);
        break;
    }
    case 3: {
        loom_mon_psi_t p;
        memset(&p, 0, sizeof p);
        if (loom_mon__parse_psi(buf, len, "psi", &p, &e) == LOOM_OK && p.some.avg10 < 0)
            abort();
        break;
    }
    case 4: {
        loom_mon_disks_t d;
        memset(&d, 0, sizeof d);
        if (loom_mon__parse_diskstats(buf, len, "diskstats", &d, &e) == LOOM_OK)
            for (size_t i = 0; i < d.n; i++)
                names_ok(d.disks[i].name, sizeof d.disks[i].name);
        free(d.disks);
        break;
    }
    case 5: {
        loom_mon_net_t n;
        memset(&n, 0, sizeof n);
        if (loom_mon__parse_netdev(buf, len, "net/dev", &n, &e) == LOOM_OK)
            for (size_t i = 0; i < n.n; i++)
                names_ok(n.ifs[i].name, sizeof n.ifs[i].name);
        free(n.ifs);
        break;
    }
    case 6: {
        loom_buf_t t = LOOM_BUF_INIT;
        size_t nt;
        if (loom_mon__parse_filesystems(buf, len, "filesystems", &t, &nt, &e) == LOOM_OK) {
            const char *p = t.data;
            for (size_t i = 0; i < nt; i++)
                p += strlen(p) + 1;
            if (nt && p != t.data + t.len)
                abort();
        }
        loom_buf_free(&t);
        break;
    }
    case 7: {
        static const char types[] = "ext4\0xfs\0btrfs\0vfat";
        loom_mon_fss_t f;
        memset(&f, 0, sizeof f);
        if (loom_mon__parse_mounts(buf, len, "mounts", types, 4, &f, &e) == LOOM_OK)
            for (size_t i = 0; i < f.n; i++) {
                names_ok(f.fs[i].device, sizeof f.fs[i].device);
                names_ok(f.fs[i].mountpoint, sizeof f.fs[i].mountpoint);
            }
        free(f.fs);
        break;
    }
    case 8: {
        int64_t pid = -1;
        if (loom_mon__parse_last_pid(buf, len, "loadavg", &pid, &e) == LOOM_OK &&
            (pid < 0 || pid > INT32_MAX))
            abort();
        break;
    }
    }
    return 0;
}
