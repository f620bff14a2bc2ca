/* sbatch's job dependencies judged for the runtime's callers (loomd's
 * runner, and any simulator that tracks job outcomes): a dependency list
 * is met, still waited for, or can never be met. */
#include <stdlib.h>
#include <string.h>

#include "loom/runtime.h"

#define DEP_TEXT_MAX 4096

typedef struct dep_ctx {
    loom_runtime_dep_job_t (*job)(void *ctx, uint64_t id);
    bool (*singleton)(void *ctx);
    void *ctx;
} dep_ctx_t;

/* One named job under one dependency type. */
static loom_runtime_dep_t judge(const char *type, size_t len, loom_runtime_dep_job_t s)
{
    if (s == LOOM_RUNTIME_DEP_UNKNOWN)
        return LOOM_RUNTIME_DEP_NEVER;
    bool ended = s == LOOM_RUNTIME_DEP_OK || s == LOOM_RUNTIME_DEP_NOTOK;
    if (len == 5) /* after: it has begun */
        return s == LOOM_RUNTIME_DEP_PENDING ? LOOM_RUNTIME_DEP_WAIT : LOOM_RUNTIME_DEP_MET;
    if (!ended)
        return LOOM_RUNTIME_DEP_WAIT;
    if ((len == 7 && !strncmp(type, "afterok", 7)) || (len == 9 && !strncmp(type, "aftercorr", 9)))
        return s == LOOM_RUNTIME_DEP_OK ? LOOM_RUNTIME_DEP_MET : LOOM_RUNTIME_DEP_NEVER;
    if (len == 10 && !strncmp(type, "afternotok", 10))
        return s == LOOM_RUNTIME_DEP_NOTOK ? LOOM_RUNTIME_DEP_MET : LOOM_RUNTIME_DEP_NEVER;
    return LOOM_RUNTIME_DEP_MET; /* afterany, afterburstbuffer */
}

/* Of several that must all hold: NEVER wins, then WAIT. */
static loom_runtime_dep_t all_of(loom_runtime_dep_t a, loom_runtime_dep_t b)
{
    return a > b ? a : b;
}

static bool known_type(const char *p, size_t len)
{
    static const char *const types[] = {"after",      "afterany",  "afterok",
                                        "afternotok", "aftercorr", "afterburstbuffer"};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        if (strlen(types[t]) == len && !strncmp(p, types[t], len))
            return true;
    return false;
}

/* One part ("afterok:12:13+5", "singleton") from *pp to its end. */
static int part(const char **pp, const dep_ctx_t *d, loom_runtime_dep_t *out)
{
    const char *p = *pp;
    *out = LOOM_RUNTIME_DEP_MET;
    if (!strncmp(p, "singleton", 9) && (!p[9] || p[9] == ',' || p[9] == '?')) {
        *pp = p + 9;
        if (d->singleton && d->singleton(d->ctx))
            *out = LOOM_RUNTIME_DEP_WAIT;
        return LOOM_OK;
    }
    size_t len = strcspn(p, ":,?");
    if (!known_type(p, len) || p[len] != ':')
        return LOOM_EINVAL;
    const char *type = p;
    p += len;
    while (*p == ':') {
        p++;
        char *end;
        unsigned long long id = strtoull(p, &end, 10);
        if (end == p || id == 0 || *p == '-' || *p == '+')
            return LOOM_EINVAL;
        p = end;
        if (*p == '_') { /* an array task: judged by its array job */
            p++;
            if (*p == '*')
                p++;
            else
                while (*p >= '0' && *p <= '9')
                    p++;
        }
        if (*p == '+') { /* a delay in minutes: not applied */
            p++;
            while (*p >= '0' && *p <= '9')
                p++;
        }
        *out = all_of(*out, judge(type, len, d->job(d->ctx, (uint64_t)id)));
    }
    *pp = p;
    return LOOM_OK;
}

int loom_runtime_dep_eval(const char *text, loom_runtime_dep_job_t (*job)(void *ctx, uint64_t id),
                          bool (*singleton)(void *ctx), void *ctx, loom_runtime_dep_t *out,
                          loom_err_t *err)
{
    if (!text || !job || strlen(text) > DEP_TEXT_MAX)
        return loom_err_set(err, LOOM_EINVAL, "dependency: expected text of at most %d bytes",
                            DEP_TEXT_MAX);
    const dep_ctx_t d = {job, singleton, ctx};
    const char *p = text;
    char sep = 0;
    bool any_wait = false, any_met = false, any_never = false;
    for (;;) {
        loom_runtime_dep_t r;
        if (part(&p, &d, &r) != LOOM_OK || (*p && *p != ',' && *p != '?') ||
            (sep && *p && *p != sep))
            return loom_err_set(err, LOOM_EINVAL,
                                "dependency '%.60s': expected TYPE:ID[:ID...] parts (after, "
                                "afterany, afterok, afternotok) or singleton, joined by ',' "
                                "(all of) or '?' (any of)",
                                text);
        any_wait |= r == LOOM_RUNTIME_DEP_WAIT;
        any_met |= r == LOOM_RUNTIME_DEP_MET;
        any_never |= r == LOOM_RUNTIME_DEP_NEVER;
        if (!*p)
            break;
        sep = *p++;
    }
    if (sep == '?') /* any of */
        *out = any_met    ? LOOM_RUNTIME_DEP_MET
               : any_wait ? LOOM_RUNTIME_DEP_WAIT
                          : LOOM_RUNTIME_DEP_NEVER;
    else
        *out = any_never  ? LOOM_RUNTIME_DEP_NEVER
               : any_wait ? LOOM_RUNTIME_DEP_WAIT
                          : LOOM_RUNTIME_DEP_MET;
    return LOOM_OK;
}
