/* loomd's configuration file, read into command-line arguments; see
 * config.h. The format, one setting a line:
 *
 *     # comment
 *     listen = 127.0.0.1:7750
 *     node = name=a,cpus=8,memory=32GiB,gpus=2
 *     pack-check = true
 *
 * A value runs to the end of the line, trimmed; double quotes around it
 * are removed (to keep leading or trailing blanks). No escapes. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/config.h"

/* loomd's long options that take a value, and its flags.
 * A new option of loomd's joins this list to be settable in the file. */
static const char *const value_keys[] = {
    "listen",     "socket",          "state-dir",          "durability",      "log-level",
    "executor",   "slurm-partition", "queue-policy",       "placement",       "node",
    "gpus",       "gpu-type",        "gpu-memory",         "grace",           "seed",
    "timeslice",  "backfill",        "default-time-limit", "estimate-margin", "estimate-device",
    "device-dir", "store-reserve",   "job-output-max",     "operators",       "munge-socket",
    "quota",      "rubick",          "rubick-cost",        "usage-window",    NULL,
};
static const char *const flag_keys[] = {"pack-check", "move-orphaned-jobs", "multi-user",
                                        "allow-root-jobs", NULL};

static bool in_list(const char *const *list, const char *key)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(list[i], key) == 0)
            return true;
    return false;
}

bool loomd_config_key_known(const char *key, bool *is_flag)
{
    bool flag = in_list(flag_keys, key);
    if (is_flag)
        *is_flag = flag;
    return flag || in_list(value_keys, key);
}

static const char *trim(char *s, char **end)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        e--;
    *e = '\0';
    *end = e;
    return s;
}

static int parse_bool(const char *v, bool *out)
{
    if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "1"))
        *out = true;
    else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "0"))
        *out = false;
    else
        return -1;
    return 0;
}

/* One non-blank, non-comment line into c. */
static int parse_line(char *line, int lineno, const char *path, loomd_conf_t *c, loom_err_t *err)
{
    char *eq = strchr(line, '=');
    if (!eq)
        return loom_err_set(err, LOOM_EINVAL, "%s:%d: expected 'key = value'", path, lineno);
    *eq = '\0';
    char *end;
    const char *key = trim(line, &end);
    char *value = (char *)trim(eq + 1, &end);
    bool flag = in_list(flag_keys, key);
    if (!flag && !in_list(value_keys, key))
        return loom_err_set(err, LOOM_EINVAL,
                            "%s:%d: unknown key '%.40s' (expected one of loomd's long options, "
                            "as in loomd --help, without the dashes)",
                            path, lineno, key);
    if (*value == '"') {
        if (end - value < 2 || end[-1] != '"')
            return loom_err_set(err, LOOM_EINVAL, "%s:%d: %s: unterminated quote", path, lineno,
                                key);
        end[-1] = '\0';
        value++;
    }
    if (!*value || strlen(value) > LOOMD_CONFIG_MAX_VALUE)
        return loom_err_set(err, LOOM_EINVAL, "%s:%d: %s: expected a value of 1 to %d bytes", path,
                            lineno, key, LOOMD_CONFIG_MAX_VALUE);
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->entries[i].key, key) == 0 && strcmp(key, "node") != 0)
            return loom_err_set(err, LOOM_EINVAL, "%s:%d: %s given twice (first at line %d)", path,
                                lineno, key, c->entries[i].line);
    bool on = true;
    if (flag && parse_bool(value, &on))
        return loom_err_set(err, LOOM_EINVAL, "%s:%d: %s: '%.40s' is not true or false", path,
                            lineno, key, value);
    if (c->n == LOOMD_CONFIG_MAX_ENTRIES)
        return loom_err_set(err, LOOM_ELIMIT, "%s:%d: more than %d settings", path, lineno,
                            LOOMD_CONFIG_MAX_ENTRIES);
    loomd_conf_entry_t *e = &c->entries[c->n];
    snprintf(e->key, sizeof e->key, "%s", key);
    e->line = lineno;
    e->value = NULL;
    if (on && !(e->value = strdup(flag ? "" : value)))
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    c->n++;
    return LOOM_OK;
}

int loomd_config_parse(const char *text, size_t len, const char *path, loomd_conf_t *out,
                       loom_err_t *err)
{
    out->entries = NULL;
    out->n = 0;
    if (len > LOOMD_CONFIG_MAX_BYTES)
        return loom_err_set(err, LOOM_ELIMIT, "%s: %zu bytes, at most %d expected", path, len,
                            LOOMD_CONFIG_MAX_BYTES);
    if (memchr(text, '\0', len))
        return loom_err_set(err, LOOM_EINVAL, "%s: a NUL byte; expected a text file", path);
    if (!loom_utf8_valid(text, len))
        return loom_err_set(err, LOOM_EINVAL, "%s: not UTF-8 text", path);
    out->entries = calloc(LOOMD_CONFIG_MAX_ENTRIES, sizeof *out->entries);
    char *copy = malloc(len + 1);
    if (!out->entries || !copy) {
        free(copy);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    int rc = LOOM_OK, lineno = 0;
    for (char *line = copy, *next; rc == LOOM_OK && line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        char *end;
        const char *t = trim(line, &end);
        if (*t && *t != '#')
            rc = parse_line((char *)t, lineno, path, out, err);
    }
    free(copy);
    if (rc)
        loomd_config_free(out);
    return rc;
}

void loomd_config_free(loomd_conf_t *c)
{
    for (size_t i = 0; c->entries && i < c->n; i++)
        free(c->entries[i].value);
    free(c->entries);
    c->entries = NULL;
    c->n = 0;
}

static int read_file(const char *path, loomd_conf_t *c, loom_err_t *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return loom_err_errno(err, errno == ENOENT ? LOOM_ENOTFOUND : LOOM_EIO, errno,
                              "configuration file '%s'", path);
    char *buf = malloc(LOOMD_CONFIG_MAX_BYTES + 1);
    size_t len = 0;
    ssize_t r = 1;
    while (buf && len <= LOOMD_CONFIG_MAX_BYTES &&
           (r = read(fd, buf + len, LOOMD_CONFIG_MAX_BYTES + 1 - len)) > 0)
        len += (size_t)r;
    int saved = errno;
    close(fd);
    int rc = !buf    ? loom_err_set(err, LOOM_ENOMEM, "out of memory")
             : r < 0 ? loom_err_errno(err, LOOM_EIO, saved, "configuration file '%s'", path)
                     : loomd_config_parse(buf, len, path, c, err);
    free(buf);
    return rc;
}

/* The file named by --config FILE / --config=FILE (removed from argv, the
 * rest kept in *rest), else $LOOMD_CONFIG, else the default. NULL: none. */
static const char *config_path(int argc, char **argv, char **rest, int *nrest, bool *explicit)
{
    const char *path = NULL;
    *nrest = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            path = argv[++i];
        else if (strncmp(argv[i], "--config=", 9) == 0)
            path = argv[i] + 9;
        else
            rest[(*nrest)++] = argv[i];
        if (strcmp(argv[i], "--") == 0) { /* operands follow: not ours */
            while (++i < argc)
                rest[(*nrest)++] = argv[i];
        }
    }
    *explicit = path || (getenv("LOOMD_CONFIG") && *getenv("LOOMD_CONFIG"));
    if (!path && *explicit)
        path = getenv("LOOMD_CONFIG");
    if (!path)
        path = access(LOOMD_CONFIG_DEFAULT, F_OK) == 0 ? LOOMD_CONFIG_DEFAULT : NULL;
    return path && strcmp(path, "none") != 0 ? path : NULL;
}

/* True if the command line sets key itself (--key or --key=...). */
static bool on_command_line(char **rest, int nrest, const char *key)
{
    size_t n = strlen(key);
    for (int i = 0; i < nrest && strcmp(rest[i], "--") != 0; i++)
        if (strncmp(rest[i], "--", 2) == 0 && strncmp(rest[i] + 2, key, n) == 0 &&
            (rest[i][2 + n] == '\0' || rest[i][2 + n] == '='))
            return true;
    return false;
}

static char **merged; /* loomd_config_args' result: argv[0], owned strings, NULL */
static int merged_owned;

int loomd_config_args(int argc, char **argv, int *out_argc, char ***out_argv, loom_err_t *err)
{
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    int nrest;
    bool explicit;
    const char *path = config_path(argc, argv, rest, &nrest, &explicit);
    loomd_conf_t c = {NULL, 0};
    int rc = argc > 1 && strcmp(argv[argc - 1], "--config") == 0
                 ? loom_err_set(err, LOOM_EINVAL, "--config: expected a FILE (or none)")
             : path ? read_file(path, &c, err)
                    : LOOM_OK;
    if (rc == LOOM_OK && !(merged = calloc(c.n + (size_t)nrest + 2, sizeof *merged)))
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
    int n = 0;
    if (rc == LOOM_OK) {
        merged[n++] = argv[0];
        merged_owned = 0;
        for (size_t i = 0; rc == LOOM_OK && i < c.n; i++) {
            if (!c.entries[i].value || on_command_line(rest, nrest, c.entries[i].key))
                continue;
            char *a = NULL;
            if (asprintf(&a, "--%s%s%s", c.entries[i].key, *c.entries[i].value ? "=" : "",
                         c.entries[i].value) < 0)
                rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
            else
                merged[n++] = a, merged_owned++;
        }
        for (int i = 0; i < nrest; i++)
            merged[n++] = rest[i];
    }
    loomd_config_free(&c);
    free(rest);
    if (rc) {
        loomd_config_release();
        return rc;
    }
    *out_argc = n;
    *out_argv = merged;
    return LOOM_OK;
}

void loomd_config_release(void)
{
    for (int i = 1; merged && i <= merged_owned; i++)
        free(merged[i]);
    free(merged);
    merged = NULL;
    merged_owned = 0;
}
