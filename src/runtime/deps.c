/* runtime/deps.c — sbatch's job dependencies.
 *
 * A dependency list ("afterok:12:13,afterany:14", "singleton") is met,
 * still waited for, or can never be met (loom_runtime_dep_eval). The
 * runtime keeps the jobs that wait for theirs (a job handed over with a
 * dependency text waits with reason Dependency) and judges them at a step
 * when something that could change the verdict happened: a job started or
 * left the runtime, a waiting one arrived, or a second passed (for what
 * the caller's outcome function may know that the runtime does not). The
 * jobs it holds are pending or running; for the others it asks the caller
 * (loomd: its store; the simulator: how its jobs ended). So loomd and
 * `loom sim` judge dependencies with the same code. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_int.h"

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

/* ------------------------------------------------- the waiting jobs */

#define DEPS_RECHECK_S 1.0

int rt__deps_add(loom_runtime_t *rt, rjob_t *j, const char *text)
{
    if (!text || !*text)
        return LOOM_OK;
    if (loom_vec_reserve((void **)&rt->deps.wait, &rt->deps.cap, rt->deps.n + 1,
                         sizeof *rt->deps.wait, RT_ARRAY_MIN_CAP) ||
        !(j->dep = strdup(text)))
        return LOOM_ENOMEM;
    rt->deps.wait[rt->deps.n++] = j;
    j->job.dep_wait = true;
    rt->deps.dirty = true;
    return LOOM_OK;
}

void rt__deps_forget(loom_runtime_t *rt, rjob_t *j)
{
    if (!j->dep)
        return;
    for (size_t i = 0; i < rt->deps.n; i++)
        if (rt->deps.wait[i] == j) {
            rt->deps.wait[i] = rt->deps.wait[--rt->deps.n];
            break;
        }
    free(j->dep);
    j->dep = NULL;
}

void rt__deps_free(loom_runtime_t *rt)
{
    free(rt->deps.wait);
}

void loom_runtime_set_outcomes(loom_runtime_t *rt, loom_runtime_outcome_fn fn, void *ctx)
{
    rt->deps.outcome = fn;
    rt->deps.ctx = ctx;
    rt->deps.dirty = true;
}

size_t loom_runtime_dep_waiting(const loom_runtime_t *rt)
{
    return rt->deps.n;
}

uint64_t loom_runtime_name_key(const char *name)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (const unsigned char *p = (const unsigned char *)(name ? name : ""); *p; p++)
        h = (h ^ *p) * UINT64_C(1099511628211);
    return h;
}

typedef struct judge_ctx {
    loom_runtime_t *rt;
    const rjob_t *j;
} judge_ctx_t;

static loom_runtime_dep_job_t job_of(void *ctx, uint64_t id)
{
    const judge_ctx_t *c = ctx;
    const rjob_t *o = rt__find(c->rt, id);
    if (o)
        return o->state == LOOM_RUNTIME_PENDING ? LOOM_RUNTIME_DEP_PENDING
                                                : LOOM_RUNTIME_DEP_RUNNING;
    return c->rt->deps.outcome ? c->rt->deps.outcome(c->rt->deps.ctx, id)
                               : LOOM_RUNTIME_DEP_UNKNOWN;
}

static bool same_name_before(const rjob_t *o, const rjob_t *j)
{
    return o != j && !o->dead && o->job.id < j->job.id && o->job.user == j->job.user &&
           o->job.name_key == j->job.name_key;
}

/* Whether an earlier job of the same name and user (as Slurm's singleton)
 * is pending or running in the runtime. */
static bool singleton_of(void *ctx)
{
    const judge_ctx_t *c = ctx;
    const loom_runtime_t *rt = c->rt;
    for (size_t k = 0; k < rt->npend; k++)
        if (same_name_before(rt->pend[k].j, c->j))
            return true;
    for (size_t k = 0; k < rt->nfresh; k++)
        if (same_name_before(rt->fresh[k]->user, c->j))
            return true;
    for (size_t k = 0; k < rt->nact; k++)
        if (same_name_before(rt->act[k], c->j))
            return true;
    return false;
}

/* One waiting job: true when it leaves the list. */
static bool judge_job(loom_runtime_t *rt, rjob_t *j)
{
    judge_ctx_t c = {rt, j};
    loom_runtime_dep_t v;
    if (loom_runtime_dep_eval(j->dep, job_of, singleton_of, &c, &v, NULL) != LOOM_OK)
        v = LOOM_RUNTIME_DEP_NEVER;
    if (v == LOOM_RUNTIME_DEP_WAIT)
        return false;
    if (v == LOOM_RUNTIME_DEP_NEVER &&
        rt__emit(rt, LOOM_RUNTIME_CANCEL, j, NULL, NULL, "DependencyNeverSatisfied") != LOOM_OK)
        return false; /* refused: judged again later */
    free(j->dep);
    j->dep = NULL;
    if (v == LOOM_RUNTIME_DEP_NEVER)
        loom_runtime_remove(rt, j->job.id, rt->now);
    else
        j->job.dep_wait = false;
    return true;
}

void rt__deps_pass(loom_runtime_t *rt)
{
    struct rt_deps *d = &rt->deps;
    if (!d->n || (!d->dirty && d->events == d->seen && rt->now < d->next_s))
        return;
    d->dirty = false;
    d->seen = d->events;
    d->next_s = rt->now + DEPS_RECHECK_S;
    size_t keep = 0, n = d->n;
    for (size_t i = 0; i < n; i++)
        if (!judge_job(rt, d->wait[i]))
            d->wait[keep++] = d->wait[i];
    /* a job it released may end others' waits once it runs */
    d->dirty = keep < n;
    d->n = keep;
}
