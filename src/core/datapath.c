/* Where loom finds the data it ships (device descriptions, job templates,
 * catalogs, job scripts): never the current directory, so that `loom
 * estimate` works wherever it is run. In order:
 *
 *   1. $LOOM_DATA_DIR/SUB when LOOM_DATA_DIR is set (authoritative: a
 *      missing SUB there is an error, not a reason to look elsewhere);
 *   2. for the running program (/proc/self/exe) and for the library that
 *      holds this code (libloom.so, found with dladdr; the Python binding
 *      runs inside python3): when it sits in the build tree it was built in,
 *      the source tree's workloads/SUB; else DIR/<relative path from the
 *      install's bindir or libdir to its datadir>/SUB, if that exists;
 *   3. the datadir compiled in at configure time (CMAKE_INSTALL_PREFIX).
 *
 * The build and install locations come from CMake as definitions on this
 * file only (LOOM_DATA_SOURCE_DIR, LOOM_DATA_BUILD_DIR, LOOM_DATA_INSTALL_DIR,
 * LOOM_DATA_BIN_REL, LOOM_DATA_LIB_REL). */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loom/core.h"

#ifndef LOOM_DATA_SOURCE_DIR
#define LOOM_DATA_SOURCE_DIR ""
#endif
#ifndef LOOM_DATA_BUILD_DIR
#define LOOM_DATA_BUILD_DIR ""
#endif
#ifndef LOOM_DATA_INSTALL_DIR
#define LOOM_DATA_INSTALL_DIR "/usr/local/share/loom"
#endif
#ifndef LOOM_DATA_BIN_REL
#define LOOM_DATA_BIN_REL "../share/loom"
#endif
#ifndef LOOM_DATA_LIB_REL
#define LOOM_DATA_LIB_REL "../share/loom"
#endif

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The resolved directory holding file, or false. */
static bool dir_of(const char *file, char *out, size_t outlen)
{
    char real[PATH_MAX];
    if (!file || !realpath(file, real))
        return false;
    char *slash = strrchr(real, '/');
    if (!slash)
        return false;
    slash[slash == real ? 1 : 0] = '\0';
    return (size_t)snprintf(out, outlen, "%s", real) < outlen;
}

/* True if dir is root or below it (both resolved; root may be ""). */
static bool within(const char *dir, const char *root)
{
    char real[PATH_MAX];
    if (!*root || !realpath(root, real))
        return false;
    size_t n = strlen(real);
    return strncmp(dir, real, n) == 0 && (dir[n] == '\0' || dir[n] == '/');
}

/* Fills out with the data directory for a program or library living in
 * dir; true if that directory exists. */
static bool from_location(const char *dir, const char *rel, const char *sub, char *out,
                          size_t outlen)
{
    int n;
    if (within(dir, LOOM_DATA_BUILD_DIR))
        n = snprintf(out, outlen, "%s/workloads/%s", LOOM_DATA_SOURCE_DIR, sub);
    else
        n = snprintf(out, outlen, "%s/%s/%s", dir, rel, sub);
    return n > 0 && (size_t)n < outlen && is_dir(out);
}

static bool sub_valid(const char *sub)
{
    if (!sub || !*sub || strstr(sub, ".."))
        return false;
    for (const char *p = sub; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' ||
              *p == '/'))
            return false;
    return true;
}

int loom_data_path(const char *sub, char *out, size_t outlen, loom_err_t *err)
{
    if (!sub_valid(sub))
        return loom_err_set(err, LOOM_EINVAL,
                            "data directory '%s': expected a name of a-z, 0-9, '-', '_' and '/'",
                            sub ? sub : "(null)");
    const char *env = getenv("LOOM_DATA_DIR");
    if (env && *env) {
        if ((size_t)snprintf(out, outlen, "%s/%s", env, sub) >= outlen)
            return loom_err_set(err, LOOM_EINVAL, "LOOM_DATA_DIR too long: '%s'", env);
        if (!is_dir(out))
            return loom_err_set(err, LOOM_ENOTFOUND, "no directory '%s' (from LOOM_DATA_DIR=%s)",
                                out, env);
        return LOOM_OK;
    }
    char dir[PATH_MAX];
    if (dir_of("/proc/self/exe", dir, sizeof dir) &&
        from_location(dir, LOOM_DATA_BIN_REL, sub, out, outlen))
        return LOOM_OK;
    Dl_info info;
    if (dladdr((void *)loom_data_path, &info) && info.dli_fname &&
        dir_of(info.dli_fname, dir, sizeof dir) &&
        from_location(dir, LOOM_DATA_LIB_REL, sub, out, outlen))
        return LOOM_OK;
    int n = snprintf(out, outlen, "%s/%s", LOOM_DATA_INSTALL_DIR, sub);
    if (n > 0 && (size_t)n < outlen && is_dir(out))
        return LOOM_OK;
    return loom_err_set(err, LOOM_ENOTFOUND,
                        "cannot find loom's data directory '%s': not beside the program (%s/%s), "
                        "not in %s; set LOOM_DATA_DIR to the folder holding devices/, "
                        "templates/ and catalogs/",
                        sub, LOOM_DATA_BIN_REL, sub, LOOM_DATA_INSTALL_DIR);
}

/* ------------------------------------------------------------ traces */

#define TRACE_SUB "traces/alibaba-gpu-2023"

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool trace_name_valid(const char *s)
{
    if (!*s || strlen(s) > 64)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
            return false;
    return true;
}

/* The file name (without .csv.gz) a trace name stands for. */
static void trace_file_name(const char *name, char *out, size_t outlen)
{
    if (strcmp(name, "openb") == 0)
        snprintf(out, outlen, "openb_node_list_gpu_node");
    else if (strcmp(name, "openb-all") == 0)
        snprintf(out, outlen, "openb_node_list_all_node");
    else if (strncmp(name, "openb-", 6) == 0)
        snprintf(out, outlen, "openb_pod_list_%s", name + 6);
    else
        snprintf(out, outlen, "%s", name);
}

int loom_data_trace(const char *arg, char *out, size_t outlen, loom_err_t *err)
{
    if (!arg || !*arg)
        return loom_err_set(err, LOOM_EINVAL, "trace: expected a file or a trace name");
    if (strchr(arg, '/') || is_file(arg) || !trace_name_valid(arg)) {
        if ((size_t)snprintf(out, outlen, "%s", arg) >= outlen)
            return loom_err_set(err, LOOM_EINVAL, "trace path too long: '%s'", arg);
        return LOOM_OK;
    }
    char dir[PATH_MAX], file[128];
    int rc = loom_data_path(TRACE_SUB, dir, sizeof dir, err);
    if (rc != LOOM_OK)
        return rc;
    trace_file_name(arg, file, sizeof file);
    static const char *const ext[] = {".csv.gz", ".csv"};
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
        int n = snprintf(out, outlen, "%s/%s%s", dir, file, ext[i]);
        if (n > 0 && (size_t)n < outlen && is_file(out))
            return LOOM_OK;
    }
    return loom_err_set(err, LOOM_ENOTFOUND,
                        "trace '%s': no such file, and not a trace loom ships (openb, openb-all, "
                        "openb-default, openb-cpu050, openb-gpushare40, openb-multigpu20, ...: "
                        "see %s/README.md)",
                        arg, dir);
}

int loom_default_state_dir(char *out, size_t outlen, loom_err_t *err)
{
    const char *dir = getenv("LOOM_STATE_DIR");
    int n;
    if (dir && *dir)
        n = snprintf(out, outlen, "%s", dir);
    else {
        const char *home = getenv("HOME");
        if (!home || !*home)
            return loom_err_set(err, LOOM_EINVAL,
                                "cannot find the state directory: neither LOOM_STATE_DIR nor HOME "
                                "is set");
        n = snprintf(out, outlen, "%s/.local/state/loom", home);
    }
    if (n < 0 || (size_t)n >= outlen)
        return loom_err_set(err, LOOM_EINVAL, "state directory path too long");
    return LOOM_OK;
}
