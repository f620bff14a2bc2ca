/* The options of job files: one table for sbatch's names and loom
 * submit's, and what each does to a loom_jobspec_t. The two dialects share
 * an option where they mean the same thing; where their value formats
 * differ (--mem: sbatch reads "4096" as MiB, loom as bytes), the dialect
 * picks the parser. A later option overrides an earlier one, and options
 * that are alternatives (--cpus against -c/-n, --mem against --mem-per-cpu,
 * --gpus against --gpus-per-task) clear each other, so the command line
 * overrides the file whichever form either uses. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobspec/jobspec_int.h"

#define D_S 1u /* sbatch */
#define D_L 2u /* loom */

enum { ARG_NONE, ARG_REQUIRED, ARG_OPTIONAL };

static const loom_jobspec_opt_t options[] = {
    {'J', "job-name", O_NAME, D_S | D_L, ARG_REQUIRED},
    {0, "name", O_NAME, D_L, ARG_REQUIRED},
    {0, "cpus", O_CPUS, D_L, ARG_REQUIRED},
    {'c', "cpus-per-task", O_CPT, D_S | D_L, ARG_REQUIRED},
    {'n', "ntasks", O_NTASKS, D_S | D_L, ARG_REQUIRED},
    {0, "ntasks-per-node", O_NTASKS, D_S | D_L, ARG_REQUIRED},
    {'N', "nodes", O_NODES, D_S | D_L, ARG_REQUIRED},
    {0, "cpus-per-gpu", O_CPUS_PER_GPU, D_S | D_L, ARG_REQUIRED},
    {0, "mem", O_MEM, D_S | D_L, ARG_REQUIRED},
    {0, "mem-per-cpu", O_MEM_PER_CPU, D_S | D_L, ARG_REQUIRED},
    {0, "gres", O_GRES, D_S | D_L, ARG_REQUIRED},
    {'G', "gpus", O_GPUS, D_S | D_L, ARG_REQUIRED},
    {0, "gpus-per-node", O_GPUS, D_S | D_L, ARG_REQUIRED},
    {0, "gpus-per-task", O_GPUS_PER_TASK, D_S | D_L, ARG_REQUIRED},
    {0, "gpu-type", O_GPU_TYPE, D_L, ARG_REQUIRED},
    {0, "gpu-share", O_GPU_SHARE, D_L, ARG_REQUIRED},
    {0, "gpu-mem", O_GPU_MEM, D_L, ARG_REQUIRED},
    {'t', "time", O_TIME, D_S | D_L, ARG_REQUIRED},
    {'o', "output", O_OUTPUT, D_S | D_L, ARG_REQUIRED},
    {'e', "error", O_ERROR, D_S | D_L, ARG_REQUIRED},
    {'D', "chdir", O_CHDIR, D_S | D_L, ARG_REQUIRED},
    {0, "workdir", O_CHDIR, D_S | D_L, ARG_REQUIRED},
    {0, "export", O_EXPORT, D_S | D_L, ARG_REQUIRED},
    {'a', "array", O_ARRAY, D_S | D_L, ARG_REQUIRED},
    {'d', "dependency", O_DEPENDENCY, D_S | D_L, ARG_REQUIRED},
    {0, "nice", O_NICE, D_S | D_L, ARG_OPTIONAL},
    {'A', "account", O_ACCOUNT, D_S | D_L, ARG_REQUIRED},
    {0, "comment", O_COMMENT, D_S | D_L, ARG_REQUIRED},
    {'b', "begin", O_BEGIN, D_S | D_L, ARG_REQUIRED},
    {'H', "hold", O_HOLD, D_S | D_L, ARG_NONE},
    {0, "priority", O_PRIORITY, D_S | D_L, ARG_REQUIRED},
    {0, "label", O_LABEL, D_L, ARG_REQUIRED},
    {0, "retries", O_RETRIES, D_L, ARG_REQUIRED},
};

#define NOPTIONS (sizeof options / sizeof options[0])

const loom_jobspec_opt_t *loom_jobspec__find(loom_jobspec_dialect_t dialect, const char *option,
                                             size_t len)
{
    unsigned d = dialect == LOOM_JOBSPEC_LOOM ? D_L : D_S;
    const char *name = option;
    bool is_short = false;
    if (len >= 2 && name[0] == '-' && name[1] == '-') {
        name += 2;
        len -= 2;
    } else if (len == 2 && name[0] == '-') {
        is_short = true;
    }
    for (size_t i = 0; i < NOPTIONS; i++) {
        if (!(options[i].dialects & d))
            continue;
        if (is_short ? options[i].short_name == name[1]
                     : strlen(options[i].long_name) == len &&
                           strncmp(options[i].long_name, name, len) == 0)
            return &options[i];
    }
    return NULL;
}

bool loom_jobspec_option(loom_jobspec_dialect_t dialect, const char *option, bool *takes_value)
{
    const loom_jobspec_opt_t *o = loom_jobspec__find(dialect, option, strlen(option));
    if (o && takes_value)
        *takes_value = o->arg == ARG_REQUIRED;
    return o != NULL;
}

static int replace(char **field, const char *value, size_t max, const char *what, loom_err_t *err)
{
    // cppcheck-suppress ctunullpointer ; only hold (no value) and nice (own default) get NULL
    size_t len = strlen(value);
    if (len == 0 || len > max)
        return loom_err_set(err, LOOM_EINVAL, "expected %s of 1 to %zu bytes", what, max);
    for (const char *p = value; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return loom_err_set(err, LOOM_EINVAL, "%s contains a control character", what);
    char *d = strdup(value);
    if (!d)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    free(*field);
    *field = d;
    return LOOM_OK;
}

/* "[TYPE:]N": a GPU count with an optional type. */
static int gpu_count(loom_jobspec_t *s, const char *value, int64_t *count, loom_err_t *err)
{
    const char *colon = strrchr(value, ':');
    const char *num = colon ? colon + 1 : value;
    if (loom_parse_i64(num, 0, LOOM_JOBSPEC_GPUS_MAX, count, "GPUs", err))
        return LOOM_EINVAL;
    if (colon) {
        char type[80];
        if ((size_t)(colon - value) >= sizeof type || colon == value)
            return loom_err_set(err, LOOM_EINVAL, "'%.60s': expected [TYPE:]N", value);
        snprintf(type, sizeof type, "%.*s", (int)(colon - value), value);
        return replace(&s->gpu_type, type, 64, "a GPU type", err);
    }
    return LOOM_OK;
}

/* --gres=gpu[:TYPE][:N][,other...]: GPUs are honoured, other resources
 * named in a warning. */
static int set_gres(loom_jobspec_t *s, const char *value, const char *where, loom_err_t *err)
{
    char buf[LOOM_JOBSPEC_VALUE_MAX + 1];
    snprintf(buf, sizeof buf, "%s", value);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *paren = strchr(item, '(');
        if (paren) /* socket bindings, gpu:2(S:0-1): not used by loom */
            *paren = 0;
        char *parts[3] = {item, NULL, NULL};
        int n = 1;
        for (char *c = strchr(item, ':'); c && n < 3; c = strchr(c + 1, ':')) {
            *c = 0;
            parts[n++] = c + 1;
        }
        if (strcmp(parts[0], "gpu") != 0) {
            loom_jobspec_warn(s, "%s: --gres=%s: loom schedules GPUs only; ignored", where,
                              parts[0]);
            continue;
        }
        int64_t count = 1;
        const char *type = NULL;
        if (n == 2 && isdigit((unsigned char)parts[1][0]))
            count = -1; /* gpu:N */
        else if (n >= 2)
            type = parts[1];
        const char *num = n == 3 ? parts[2] : count < 0 ? parts[1] : NULL;
        if (num && loom_parse_i64(num, 0, LOOM_JOBSPEC_GPUS_MAX, &count, "GPUs", err))
            return LOOM_EINVAL;
        if (count < 0)
            count = 1;
        if (type && replace(&s->gpu_type, type, 64, "a GPU type", err))
            return LOOM_EINVAL;
        s->gpus = count;
        s->gpus_per_task = -1;
    }
    return LOOM_OK;
}

/* sbatch's --export: ALL, NONE or NIL, NAME=VALUE pairs, bare NAMEs (taken
 * from the submitter's environment by loom_jobspec_export_env). */
static int set_export(loom_jobspec_t *s, const char *value, const char *where, loom_err_t *err)
{
    char buf[LOOM_JOBSPEC_VALUE_MAX + 1];
    snprintf(buf, sizeof buf, "%s", value);
    char *save = NULL;
    json_array_clear(s->env);
    json_array_clear(s->export_names);
    free(s->export_mode);
    s->export_mode = NULL;
    s->export_given = true;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        if (strcmp(item, "ALL") == 0 || strcmp(item, "NONE") == 0 || strcmp(item, "NIL") == 0) {
            if (replace(&s->export_mode, item, 8, "an export mode", err))
                return LOOM_EINVAL;
            continue;
        }
        const char *eq = strchr(item, '=');
        if (!eq) {
            /* checked as a name now; its value is the environment's */
            if (loom_jobspec__env_add(s, item, strlen(item), "", err))
                return LOOM_EINVAL;
            json_array_remove(s->env, json_array_size(s->env) - 1);
            json_array_append_new(s->export_names, json_string(item));
            continue;
        }
        if (loom_jobspec__env_add(s, item, eq - item, eq + 1, err))
            return LOOM_EINVAL;
    }
    return LOOM_OK;
}

/* A time: the same reading for #SBATCH, #LOOM and the command line (a
 * bare number is minutes, as sbatch reads it). */
static int set_time(loom_jobspec_t *s, const char *v, loom_err_t *err)
{
    return loom_jobspec_parse_time(v, &s->time_limit_s, err);
}

static int set_mem(loom_jobspec_t *s, loom_jobspec_dialect_t d, int id, const char *v,
                   const char *where, loom_err_t *err)
{
    uint64_t bytes;
    if (d == LOOM_JOBSPEC_LOOM ? loom_parse_size(v, &bytes, err)
                               : loom_jobspec_parse_slurm_mem(v, &bytes, err))
        return LOOM_EINVAL;
    if (id == O_MEM) {
        s->mem_bytes = bytes;
        s->mem_set = true;
        s->mem_per_cpu_bytes = 0;
        if (bytes == 0)
            loom_jobspec_warn(s,
                              "%s: --mem=0 (all of a node's memory): loom then sets no "
                              "memory request or limit",
                              where);
    } else {
        if (bytes == 0)
            return loom_err_set(err, LOOM_EINVAL, "expected a size > 0");
        s->mem_per_cpu_bytes = bytes;
        s->mem_set = false;
        s->mem_bytes = 0;
    }
    return LOOM_OK;
}

static int set_nodes(loom_jobspec_t *s, const char *v, const char *where, loom_err_t *err)
{
    int64_t lo, hi;
    const char *dash = strchr(v, '-');
    char a[32];
    snprintf(a, sizeof a, "%.*s", dash ? (int)(dash - v) : (int)strlen(v), v);
    if (loom_parse_i64(a, 1, 100000, &lo, "nodes", err) ||
        (dash && loom_parse_i64(dash + 1, lo, 100000, &hi, "nodes", err)))
        return LOOM_EINVAL;
    if (lo > 1)
        loom_jobspec_warn(s, "%s: --nodes=%s: loom runs a job on one node; the job gets one", where,
                          v);
    return LOOM_OK;
}

static int set_label(loom_jobspec_t *s, const char *v, loom_err_t *err)
{
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || eq - v > 63)
        return loom_err_set(err, LOOM_EINVAL, "'%.60s': expected KEY=VALUE", v);
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)(eq - v), v);
    json_object_set_new(s->labels, key, json_string(eq + 1));
    return LOOM_OK;
}

/* The integer options. */
static int set_int(loom_jobspec_t *s, int id, const char *v, loom_err_t *err)
{
    switch (id) {
    case O_CPUS:
        s->cpus_per_task = s->ntasks = -1;
        return loom_parse_i64(v, 1, LOOM_JOBSPEC_CPUS_MAX, &s->cpus, "CPUs", err);
    case O_CPT:
        s->cpus = -1;
        return loom_parse_i64(v, 1, LOOM_JOBSPEC_CPUS_MAX, &s->cpus_per_task, "CPUs per task", err);
    case O_NTASKS:
        s->cpus = -1;
        return loom_parse_i64(v, 1, LOOM_JOBSPEC_CPUS_MAX, &s->ntasks, "tasks", err);
    case O_CPUS_PER_GPU:
        return loom_parse_i64(v, 1, LOOM_JOBSPEC_CPUS_MAX, &s->cpus_per_gpu, "CPUs per GPU", err);
    case O_NICE:
        return loom_parse_i64(v ? v : "100", -2147483645, 2147483645, &s->nice, "nice", err);
    case O_PRIORITY: return loom_parse_i64(v, -1000000, 1000000, &s->priority, "priority", err);
    case O_RETRIES: return loom_parse_i64(v, 0, 100, &s->retries, "retries", err);
    }
    return LOOM_OK;
}

static int set_gpu_share(loom_jobspec_t *s, const char *v, loom_err_t *err)
{
    size_t n = strlen(v);
    if (n > 1 && n < 16 && v[n - 1] == 'm') {
        char buf[16];
        snprintf(buf, sizeof buf, "%.*s", (int)(n - 1), v);
        return loom_parse_i64(buf, 1, 1000, &s->gpu_share_milli, "milli-GPU", err);
    }
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x > 0 && x <= 1))
        return loom_err_set(err, LOOM_EINVAL,
                            "'%.40s': expected a fraction in (0, 1] such as 0.25, or milli-GPU "
                            "as 250m",
                            v);
    s->gpu_share_milli = (int64_t)(x * 1000 + 0.5);
    if (s->gpu_share_milli < 1)
        return loom_err_set(err, LOOM_EINVAL, "'%.40s': smaller than one milli-GPU", v);
    return LOOM_OK;
}

static int set_checked(loom_jobspec_t *s, int id, const char *v, loom_err_t *err)
{
    if (id == O_ARRAY) {
        loom_jobspec_array_t a;
        if (loom_jobspec_array_parse(v, &a, err))
            return LOOM_EINVAL;
        return replace(&s->array, v, 1024, "an array range", err);
    }
    if (loom_jobspec_dependency_check(v, err))
        return LOOM_EINVAL;
    return replace(&s->dependency, v, 1024, "a dependency list", err);
}

static int apply(loom_jobspec_t *s, loom_jobspec_dialect_t d, const loom_jobspec_opt_t *o,
                 const char *v, const char *where, loom_err_t *err)
{
    switch (o->id) {
    case O_NAME: return replace(&s->name, v, 256, "a job name", err);
    case O_NODES: return set_nodes(s, v, where, err);
    case O_MEM:
    case O_MEM_PER_CPU: return set_mem(s, d, o->id, v, where, err);
    case O_GRES: return set_gres(s, v, where, err);
    case O_GPUS: s->gpus_per_task = -1; return gpu_count(s, v, &s->gpus, err);
    case O_GPUS_PER_TASK: s->gpus = -1; return gpu_count(s, v, &s->gpus_per_task, err);
    case O_GPU_TYPE: return replace(&s->gpu_type, v, 64, "a GPU type", err);
    case O_GPU_SHARE: return set_gpu_share(s, v, err);
    case O_GPU_MEM:
        if (loom_parse_size(v, &s->gpu_memory_bytes, err))
            return LOOM_EINVAL;
        return LOOM_OK;
    case O_TIME: return set_time(s, v, err);
    case O_OUTPUT: return replace(&s->output, v, LOOM_JOBSPEC_PATH_MAX, "a path", err);
    case O_ERROR: return replace(&s->error, v, LOOM_JOBSPEC_PATH_MAX, "a path", err);
    case O_CHDIR: return replace(&s->workdir, v, LOOM_JOBSPEC_PATH_MAX, "a directory", err);
    case O_EXPORT: return set_export(s, v, where, err);
    case O_ARRAY:
    case O_DEPENDENCY: return set_checked(s, o->id, v, err);
    case O_ACCOUNT: return replace(&s->account, v, 256, "an account name", err);
    case O_COMMENT: return replace(&s->comment, v, 1024, "a comment", err);
    case O_BEGIN: return replace(&s->begin, v, 64, "a begin time", err);
    case O_HOLD: s->hold = true; return LOOM_OK;
    case O_LABEL: return set_label(s, v, err);
    default: return set_int(s, o->id, v, err);
    }
}

int loom_jobspec_set(loom_jobspec_t *s, loom_jobspec_dialect_t dialect, const char *option,
                     const char *value, const char *where, loom_err_t *err)
{
    const char *shown = option;
    char dashed[80];
    if (option[0] != '-') {
        snprintf(dashed, sizeof dashed, "--%.70s", option);
        shown = dashed;
    }
    const loom_jobspec_opt_t *o = loom_jobspec__find(dialect, shown, strlen(shown));
    if (!o)
        return loom_err_set(err, LOOM_ENOTFOUND, "%s: %.70s: not an option of %s", where, shown,
                            dialect == LOOM_JOBSPEC_LOOM ? "loom submit" : "sbatch");
    if (o->arg == ARG_REQUIRED && !value)
        return loom_err_set(err, LOOM_EINVAL, "%s: %s: expected a value", where, shown);
    if (o->arg == ARG_NONE && value)
        return loom_err_set(err, LOOM_EINVAL, "%s: %s takes no value (found '%.40s')", where, shown,
                            value);
    if (value && strlen(value) > LOOM_JOBSPEC_VALUE_MAX)
        return loom_err_set(err, LOOM_EINVAL, "%s: %s: value longer than %d bytes", where, shown,
                            LOOM_JOBSPEC_VALUE_MAX);
    int rc = apply(s, dialect, o, value, where, err);
    if (rc)
        return loom_err_prefix(err, "%s: %s", where, shown);
    return LOOM_OK;
}
