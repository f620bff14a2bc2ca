/* The job spec itself: its life cycle, its warnings, and how it becomes
 * job.submit's parameters (docs/protocol.md). The arithmetic of sbatch's
 * per-task and per-CPU requests is done here, once every source has been
 * applied, so "-n 4" in the file and "-c 2" on the command line make the
 * 8 CPUs sbatch would give. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobspec/jobspec_int.h"

void loom_jobspec_init(loom_jobspec_t *s)
{
    memset(s, 0, sizeof *s);
    s->cpus = s->cpus_per_task = s->ntasks = s->cpus_per_gpu = -1;
    s->gpus = s->gpus_per_task = -1;
    s->time_limit_s = -1;
    s->priority = INT64_MIN;
    s->nice = INT64_MIN;
    s->retries = -1;
    s->env = json_array();
    s->export_names = json_array();
    s->labels = json_object();
    s->warnings = json_array();
}

void loom_jobspec_free(loom_jobspec_t *s)
{
    if (!s)
        return;
    char **strings[] = {&s->name,  &s->gpu_type,    &s->workdir, &s->output,
                        &s->error, &s->export_mode, &s->array,   &s->dependency,
                        &s->begin, &s->account,     &s->comment};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
        free(*strings[i]);
    json_decref(s->env);
    json_decref(s->export_names);
    json_decref(s->labels);
    json_decref(s->warnings);
    memset(s, 0, sizeof *s);
}

void loom_jobspec_warn(loom_jobspec_t *s, const char *fmt, ...)
{
    size_t n = json_array_size(s->warnings);
    if (n > LOOM_JOBSPEC_WARNINGS_MAX)
        return;
    char msg[LOOM_ERR_MSG_MAX];
    if (n == LOOM_JOBSPEC_WARNINGS_MAX) {
        snprintf(msg, sizeof msg, "more than %d warnings; the rest are not shown",
                 LOOM_JOBSPEC_WARNINGS_MAX);
    } else {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
    }
    json_array_append_new(s->warnings, json_string(msg));
}

int loom_jobspec__env_add(loom_jobspec_t *s, const char *name, size_t name_len, const char *value,
                          loom_err_t *err)
{
    if (name_len == 0 || name_len > 128)
        return loom_err_set(err, LOOM_EINVAL, "a variable name of 1 to 128 characters expected");
    for (size_t i = 0; i < name_len; i++) {
        char c = name[i];
        if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (i > 0 && c >= '0' && c <= '9')))
            return loom_err_set(err, LOOM_EINVAL,
                                "variable '%.*s': expected letters, digits and '_', not starting "
                                "with a digit",
                                (int)(name_len > 64 ? 64 : name_len), name);
    }
    if (strlen(value) > LOOM_JOBSPEC_VALUE_MAX)
        return loom_err_set(err, LOOM_EINVAL, "variable '%.*s': value longer than %d bytes",
                            (int)name_len, name, LOOM_JOBSPEC_VALUE_MAX);
    size_t i;
    json_t *e;
    json_array_foreach(s->env, i, e)
    {
        const char *t = json_string_value(e);
        if (strncmp(t, name, name_len) == 0 && t[name_len] == '=') {
            json_array_remove(s->env, i);
            break;
        }
    }
    if (json_array_size(s->env) >= LOOM_JOBSPEC_ENV_MAX)
        return loom_err_set(err, LOOM_EINVAL, "more than %d environment variables",
                            LOOM_JOBSPEC_ENV_MAX);
    loom_buf_t b = LOOM_BUF_INIT;
    loom_buf_appendf(&b, "%.*s=%s", (int)name_len, name, value);
    json_array_append_new(s->env, json_string(b.data ? b.data : ""));
    loom_buf_free(&b);
    return LOOM_OK;
}

static json_t *object_member(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_object(v)) {
        v = json_object();
        json_object_set_new(obj, key, v);
    }
    return v;
}

/* CPUs, memory and GPUs into job.submit's resources. */
static int resources(loom_jobspec_t *s, json_t *res, loom_err_t *err)
{
    int64_t tasks = s->ntasks > 0 ? s->ntasks : 1;
    int64_t gpus = s->gpus >= 0 ? s->gpus : s->gpus_per_task >= 0 ? s->gpus_per_task * tasks : -1;
    if (gpus > LOOM_JOBSPEC_GPUS_MAX)
        return loom_err_set(err, LOOM_EINVAL, "%lld GPUs: more than %d", (long long)gpus,
                            LOOM_JOBSPEC_GPUS_MAX);
    int64_t cpus = -1;
    if (s->cpus > 0)
        cpus = s->cpus;
    else if (s->cpus_per_task > 0 || s->ntasks > 0)
        cpus = (s->cpus_per_task > 0 ? s->cpus_per_task : 1) * tasks;
    if (s->cpus_per_gpu > 0 && gpus > 0 && s->cpus <= 0 && s->cpus_per_task <= 0)
        cpus = s->cpus_per_gpu * gpus;
    if (cpus > LOOM_JOBSPEC_CPUS_MAX)
        return loom_err_set(err, LOOM_EINVAL, "%lld CPUs (tasks x CPUs per task): more than %d",
                            (long long)cpus, LOOM_JOBSPEC_CPUS_MAX);
    if (cpus > 0)
        json_object_set_new(res, "cpus", json_integer(cpus));
    if (gpus >= 0)
        json_object_set_new(res, "gpus", json_integer(gpus));
    if (s->mem_set && s->mem_bytes > 0)
        json_object_set_new(res, "memory", json_integer((json_int_t)s->mem_bytes));
    if (s->mem_per_cpu_bytes > 0) {
        json_int_t c = json_integer_value(json_object_get(res, "cpus"));
        uint64_t n = (uint64_t)(c > 0 ? c : 1);
        if (s->mem_per_cpu_bytes > (uint64_t)INT64_MAX / n)
            return loom_err_set(err, LOOM_EINVAL, "--mem-per-cpu times %llu CPUs: too large",
                                (unsigned long long)n);
        json_object_set_new(res, "memory", json_integer((json_int_t)(s->mem_per_cpu_bytes * n)));
    }
    if (s->gpu_type)
        json_object_set_new(res, "gpu_type", json_string(s->gpu_type));
    if (s->gpu_share_milli > 0) {
        json_object_set_new(res, "gpu_share", json_integer(s->gpu_share_milli));
        json_object_del(res, "gpus");
    }
    if (s->gpu_memory_bytes > 0)
        json_object_set_new(res, "gpu_memory", json_integer((json_int_t)s->gpu_memory_bytes));
    return LOOM_OK;
}

static void set_string(json_t *obj, const char *key, const char *v)
{
    if (v)
        json_object_set_new(obj, key, json_string(v));
}

/* The options that are stored and shown but that the scheduler does not act
 * on yet, named so that no one takes them for honoured. */
static void warn_carried(loom_jobspec_t *s)
{
    const struct {
        bool set;
        const char *what;
    } carried[] = {
        {s->nice != INT64_MIN, "--nice (the priority is unchanged)"},
        {s->retries > 0, "retries (a failed job is not run again)"},
    };
    for (size_t i = 0; i < sizeof carried / sizeof carried[0]; i++)
        if (carried[i].set)
            loom_jobspec_warn(s, "%s: stored with the job but not acted on yet", carried[i].what);
}

int loom_jobspec_to_params(loom_jobspec_t *s, json_t *params, loom_err_t *err)
{
    if (resources(s, object_member(params, "resources"), err))
        return LOOM_EINVAL;
    set_string(params, "name", s->name);
    if (s->time_limit_s >= 0)
        json_object_set_new(params, "time_limit", json_integer(s->time_limit_s));
    if (s->priority != INT64_MIN)
        json_object_set_new(params, "priority", json_integer(s->priority));
    if (json_object_size(s->labels))
        json_object_update(object_member(params, "labels"), s->labels);
    json_t *o = object_member(params, "options");
    set_string(o, "workdir", s->workdir);
    set_string(o, "output", s->output);
    set_string(o, "error", s->error);
    if (json_array_size(s->env))
        json_object_set(o, "env", s->env);
    set_string(o, "export", s->export_mode);
    set_string(o, "array", s->array);
    set_string(o, "dependency", s->dependency);
    set_string(o, "begin", s->begin);
    set_string(o, "account", s->account);
    set_string(o, "comment", s->comment);
    if (s->hold)
        json_object_set_new(o, "hold", json_true());
    if (s->nice != INT64_MIN)
        json_object_set_new(o, "nice", json_integer(s->nice));
    if (s->retries >= 0)
        json_object_set_new(o, "retries", json_integer(s->retries));
    if (s->ntasks > 0)
        json_object_set_new(o, "ntasks", json_integer(s->ntasks));
    if (s->cpus_per_task > 0)
        json_object_set_new(o, "cpus_per_task", json_integer(s->cpus_per_task));
    if (json_object_size(o) == 0)
        json_object_del(params, "options");
    warn_carried(s);
    return LOOM_OK;
}

/* ---------------------------------------------------------------- export */

/* envp's value of the name, NULL if it is not set. */
static const char *env_value(char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

static bool env_has(const json_t *env, const char *name, size_t n)
{
    size_t i;
    json_t *e;
    json_array_foreach(env, i, e)
    {
        const char *t = json_string_value(e);
        if (strncmp(t, name, n) == 0 && t[n] == '=')
            return true;
    }
    return false;
}

typedef struct export_state {
    json_t *out;     /* what is passed, before the pairs given */
    size_t bytes;    /* of out */
    loom_buf_t left; /* names left out */
    size_t n_left;
} export_state_t;

static void export_one(loom_jobspec_t *s, export_state_t *x, const char *name, size_t n,
                       const char *value)
{
    if (n == 0 || n > 128 || env_has(s->env, name, n) || env_has(x->out, name, n) ||
        (n == 8 && strncmp(name, "LOOM_URL", 8) == 0) ||
        (n == 10 && strncmp(name, "LOOM_TOKEN", 10) == 0))
        return;
    for (size_t i = 0; i < n; i++)
        if (!(name[i] == '_' || (name[i] >= 'A' && name[i] <= 'Z') ||
              (name[i] >= 'a' && name[i] <= 'z') || (i > 0 && name[i] >= '0' && name[i] <= '9')))
            return; /* not a shell name (BASH_FUNC_f%%): no shell would pass it either */
    size_t vlen = strlen(value);
    if (vlen > LOOM_JOBSPEC_VALUE_MAX || x->bytes + n + vlen + 2 > LOOM_JOBSPEC_EXPORT_BYTES ||
        json_array_size(x->out) + json_array_size(s->env) >= LOOM_JOBSPEC_ENV_MAX) {
        if (x->n_left++ < 8)
            loom_buf_appendf(&x->left, "%s%.*s", x->n_left > 1 ? ", " : "", (int)n, name);
        return;
    }
    loom_buf_t b = LOOM_BUF_INIT;
    loom_buf_appendf(&b, "%.*s=%s", (int)n, name, value);
    json_array_append_new(x->out, json_string(b.data));
    x->bytes += b.len + 1;
    loom_buf_free(&b);
}

void loom_jobspec_export_env(loom_jobspec_t *s, char *const *envp)
{
    const char *mode = s->export_mode;
    bool all = !s->export_given || (mode && strcmp(mode, "ALL") == 0);
    export_state_t x = {.out = json_array(), .left = LOOM_BUF_INIT};
    size_t i;
    json_t *name;
    json_array_foreach(s->export_names, i, name)
    {
        const char *v = env_value(envp, json_string_value(name));
        if (!v)
            loom_jobspec_warn(s, "--export=%s: not set in the environment; not passed",
                              json_string_value(name));
        else
            export_one(s, &x, json_string_value(name), json_string_length(name), v);
    }
    for (char *const *e = envp; all && e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (eq)
            export_one(s, &x, *e, (size_t)(eq - *e), eq + 1);
    }
    if (x.n_left)
        loom_jobspec_warn(s,
                          "--export: %zu variable%s of the environment not passed (%s%s): at "
                          "most %d variables, %d bytes a value and %d bytes in all",
                          x.n_left, x.n_left == 1 ? "" : "s", x.left.data,
                          x.n_left > 8 ? ", ..." : "", LOOM_JOBSPEC_ENV_MAX, LOOM_JOBSPEC_VALUE_MAX,
                          LOOM_JOBSPEC_EXPORT_BYTES);
    /* the pairs given come last, so they stay whatever the environment has */
    json_array_extend(x.out, s->env);
    json_decref(s->env);
    s->env = x.out;
    loom_buf_free(&x.left);
}
