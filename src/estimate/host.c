/* The host a CPU device file describes: what makes a calibration hold on one
 * machine and not on another (issue 36). A device file's step times are
 * measured on one CPU model, with one instruction set, through one BLAS
 * library and one thread; read on another host they can be 40-50% off. The
 * calibration records the host ("host" in the device file); loom estimate
 * compares it with the host it runs on and warns when they differ.
 *
 *   "host": {"cpu_model": "AMD EPYC", "isa": "avx avx2 avx512f fma",
 *            "blas": "openblas-pthread", "threads": 1}
 *
 * isa: the vector extensions among LOOM_EST_ISA_FLAGS that /proc/cpuinfo's
 * flags hold, in that list's order. blas: the directory name of the library
 * libblas.so.3 resolves to (Debian's alternatives: "openblas-pthread",
 * "openblas-openmp", "blis-pthread", "atlas"; the reference BLAS is "blas",
 * written "reference"). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/est.h"

/* The extensions that change a kernel's speed: what BLAS and PyTorch's CPU
 * kernels dispatch on. */
static const char *const isa_flags[] = {
    "sse4_2",   "avx",      "avx2",        "fma",         "avx512f",
    "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "amx_tile",
    "amx_bf16", "amx_int8", "asimd",       "sve",         "sve2",
};

static void host_isa(const char *flags, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof isa_flags / sizeof isa_flags[0]; i++) {
        size_t fl = strlen(isa_flags[i]);
        const char *p = flags;
        bool found = false;
        while ((p = strstr(p, isa_flags[i])) != NULL) {
            bool start = p == flags || p[-1] == ' ' || p[-1] == '\t';
            bool end = p[fl] == '\0' || p[fl] == ' ' || p[fl] == '\n' || p[fl] == '\t';
            if (start && end) {
                found = true;
                break;
            }
            p += fl;
        }
        if (found && n + fl + 2 < len) {
            n += (size_t)snprintf(out + n, len - n, "%s%s", n ? " " : "", isa_flags[i]);
        }
    }
}

/* The value after "key<spaces>:" on a /proc/cpuinfo line, trimmed. */
static bool cpuinfo_value(const char *line, const char *key, char *out, size_t len)
{
    size_t kl = strlen(key);
    if (strncmp(line, key, kl) != 0)
        return false;
    const char *p = line + kl;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p != ':')
        return false;
    p++;
    while (*p == ' ')
        p++;
    snprintf(out, len, "%s", p);
    size_t n = strlen(out);
    while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
        out[--n] = '\0';
    return true;
}

void loom_est_host_probe(const char *cpuinfo, const char *blas_lib, loom_est_host_t *out)
{
    memset(out, 0, sizeof *out);
    out->set = true;
    out->threads = 1;
    snprintf(out->cpu_model, sizeof out->cpu_model, "unknown");
    snprintf(out->blas, sizeof out->blas, "unknown");
    FILE *f = fopen(cpuinfo ? cpuinfo : "/proc/cpuinfo", "re");
    if (f) {
        char line[8192], v[8192];
        bool model = false, flags = false;
        while ((!model || !flags) && fgets(line, sizeof line, f)) {
            if (!model && (cpuinfo_value(line, "model name", v, sizeof v) ||
                           cpuinfo_value(line, "Model", v, sizeof v))) {
                snprintf(out->cpu_model, sizeof out->cpu_model, "%s", v);
                model = true;
            } else if (!flags && (cpuinfo_value(line, "flags", v, sizeof v) ||
                                  cpuinfo_value(line, "Features", v, sizeof v))) {
                host_isa(v, out->isa, sizeof out->isa);
                flags = true;
            }
        }
        fclose(f);
    }
    static const char *const libs[] = {"/usr/lib/x86_64-linux-gnu/libblas.so.3",
                                       "/usr/lib/aarch64-linux-gnu/libblas.so.3",
                                       "/usr/lib/libblas.so.3"};
    char real[PATH_MAX];
    for (size_t i = 0; i < (blas_lib ? 1 : sizeof libs / sizeof libs[0]); i++) {
        if (!realpath(blas_lib ? blas_lib : libs[i], real))
            continue;
        char *slash = strrchr(real, '/');
        if (!slash)
            continue;
        *slash = '\0';
        const char *dir = strrchr(real, '/');
        dir = dir ? dir + 1 : real;
        snprintf(out->blas, sizeof out->blas, "%s", strcmp(dir, "blas") == 0 ? "reference" : dir);
        break;
    }
}

int loom_est_host_from_json(const json_t *obj, const char *name, loom_est_host_t *out,
                            loom_err_t *err)
{
    memset(out, 0, sizeof *out);
    const json_t *h = json_object_get(obj, "host");
    if (!h)
        return LOOM_OK;
    if (!json_is_object(h))
        return loom_err_set(err, LOOM_EINVAL,
                            "device %s: /host must be an object {cpu_model, isa, blas, threads}",
                            name);
    struct {
        const char *key;
        char *dst;
        size_t len;
    } s[] = {{"cpu_model", out->cpu_model, sizeof out->cpu_model},
             {"isa", out->isa, sizeof out->isa},
             {"blas", out->blas, sizeof out->blas}};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        const char *v = "";
        if (loom_json_get_string(h, s[i].key, i == 0, "", &v, err))
            return loom_err_prefix(err, "device %s: /host: ", name);
        if (strlen(v) >= s[i].len)
            return loom_err_set(err, LOOM_EINVAL,
                                "device %s: /host/%s is %zu characters long, at most %zu expected",
                                name, s[i].key, strlen(v), s[i].len - 1);
        snprintf(s[i].dst, s[i].len, "%s", v);
    }
    int64_t threads = 1;
    if (loom_json_get_int(h, "threads", false, "", 1, 4096, &threads, err))
        return loom_err_prefix(err, "device %s: /host: ", name);
    out->threads = (int)threads;
    out->set = true;
    return LOOM_OK;
}

json_t *loom_est_host_to_json(const loom_est_host_t *h)
{
    return json_pack("{s:s, s:s, s:s, s:i}", "cpu_model", h->cpu_model, "isa", h->isa, "blas",
                     h->blas, "threads", h->threads);
}

bool loom_est_host_differs(const loom_est_host_t *dev, const loom_est_host_t *here, char *why,
                           size_t len)
{
    why[0] = '\0';
    size_t n = 0;
    if (strcmp(dev->cpu_model, here->cpu_model) != 0)
        n += (size_t)snprintf(why + n, len - n, "CPU '%s', this host '%s'", dev->cpu_model,
                              here->cpu_model);
    if (n < len && strcmp(dev->isa, here->isa) != 0)
        n += (size_t)snprintf(why + n, len - n, "%sinstruction sets '%s', this host '%s'",
                              n ? "; " : "", dev->isa, here->isa);
    if (n < len && dev->blas[0] && strcmp(dev->blas, here->blas) != 0)
        snprintf(why + n, len - n, "%sBLAS %s, this host %s", n ? "; " : "", dev->blas, here->blas);
    return why[0] != '\0';
}
