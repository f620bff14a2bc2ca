/* Fuzz the parsers of per-process, cgroup and sysfs files (src/mon/
 * parse.c): /proc/PID/stat, "key value" files (status, io, cpu.stat),
 * cgroup io.stat, one-integer sysfs files and children pid lists. First byte picks the parser. */
#include <stdlib.h>
#include <string.h>

#include "mon/mon_int.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1)
        return 0;
    int which = data[0] % 5;
    const char *buf = (const char *)data + 1;
    size_t len = size - 1;
    loom_err_t e;
    switch (which) {
    case 0: {
        loom_mon_pidstat_t ps;
        if (loom_mon__parse_pidstat(buf, len, "stat", &ps, &e) == LOOM_OK &&
            strnlen(ps.comm, sizeof ps.comm) >= sizeof ps.comm)
            abort();
        break;
    }
    case 1: {
        static const char *const keys[] = {"voluntary_ctxt_switches:", "rchar:", "usage_usec",
                                           "nr_throttled"};
        uint64_t v[4] = {0}, found;
        if (loom_mon__parse_keyed(buf, len, "keyed", keys, 4, v, &found, &e) == LOOM_OK &&
            (found & ~15ull))
            abort();
        break;
    }
    case 2: {
        loom_mon_cgroup_t cg;
        memset(&cg, 0, sizeof cg);
        loom_mon__parse_iostat(buf, len, "io.stat", &cg, &e);
        break;
    }
    case 3: {
        int64_t x;
        loom_mon__parse_int_file(buf, len, "int", (len & 1) != 0, &x, &e);
        break;
    }
    case 4: {
        pid_t *pids = NULL;
        size_t n = 0, cap = 0;
        if (loom_mon__parse_pid_list(buf, len, "children", &pids, &n, &cap, &e) == LOOM_OK)
            for (size_t i = 0; i < n; i++)
                if (pids[i] <= 0)
                    abort();
        free(pids);
        break;
    }
    }
    return 0;
}
