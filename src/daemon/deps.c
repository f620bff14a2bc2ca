/* loomd's side of holds, begin times and dependencies: reads them from a
 * job's options when the runner hands it to the runtime, and judges the
 * dependency lists of waiting jobs against the store (the runtime keeps
 * them pending with reason Dependency until then). */
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>

#include "daemon/deps.h"
#include "daemon/runner_int.h"
#include "loom/jobspec.h"
#include "loom/runtime.h"

#define DEPS_RECHECK_NS (1 * LOOM_NS_PER_S) /* even when no job ended (a cancel) */
#define SINGLETON_SCAN  10000               /* active jobs read for singleton */

/* ------------------------------------------------------------ --begin */

static bool read_num(const char **p, long long *out, int digits)
{
    char *end;
    long long v = strtoll(*p, &end, 10);
    if (end == *p || *p[0] == '-' || *p[0] == '+' || (digits && end - *p != digits))
        return false;
    *p = end;
    *out = v;
    return true;
}

/* now+N[seconds|minutes|hours|days|weeks] */
static int begin_relative(const char *p, int64_t submit_ns, int64_t *out)
{
    long long n = 0;
    if (*p == '+' && (p++, !read_num(&p, &n, 0)))
        return LOOM_EINVAL;
    static const struct {
        const char *unit;
        long long s;
    } units[] = {{"", 1},         {"s", 1},        {"second", 1},    {"seconds", 1},
                 {"m", 60},       {"minute", 60},  {"minutes", 60},  {"h", 3600},
                 {"hour", 3600},  {"hours", 3600}, {"d", 86400},     {"day", 86400},
                 {"days", 86400}, {"w", 604800},   {"week", 604800}, {"weeks", 604800}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(p, units[i].unit)) {
            if (n > 10LL * 366 * 86400 / units[i].s)
                return LOOM_EINVAL;
            *out = submit_ns + (int64_t)(n * units[i].s) * LOOM_NS_PER_S;
            return LOOM_OK;
        }
    return LOOM_EINVAL;
}

/* [YYYY-MM-DD[T]][HH:MM[:SS]] in local time; a time of day alone is today's,
 * or tomorrow's once it has passed (as sbatch). */
static int begin_absolute(const char *p, int64_t submit_ns, int64_t *out)
{
    time_t now = (time_t)(submit_ns / LOOM_NS_PER_S);
    struct tm tm;
    localtime_r(&now, &tm);
    tm.tm_sec = 0;
    long long y, mo, d, h = 0, mi = 0, s = 0;
    bool date = strchr(p, '-') != NULL, tod = strchr(p, ':') != NULL;
    if (date) {
        if (!read_num(&p, &y, 4) || *p++ != '-' || !read_num(&p, &mo, 2) || *p++ != '-' ||
            !read_num(&p, &d, 2) || y < 1970 || y > 2200 || mo < 1 || mo > 12 || d < 1 || d > 31)
            return LOOM_EINVAL;
        tm.tm_year = (int)y - 1900;
        tm.tm_mon = (int)mo - 1;
        tm.tm_mday = (int)d;
        tm.tm_hour = tm.tm_min = 0;
        if (*p == 'T')
            p++;
    }
    if (tod) {
        if (!read_num(&p, &h, 2) || *p++ != ':' || !read_num(&p, &mi, 2) || h > 23 || mi > 59)
            return LOOM_EINVAL;
        if (*p == ':' && (p++, !read_num(&p, &s, 2) || s > 59))
            return LOOM_EINVAL;
        tm.tm_hour = (int)h;
        tm.tm_min = (int)mi;
        tm.tm_sec = (int)s;
    }
    if (*p || (!date && !tod))
        return LOOM_EINVAL;
    tm.tm_isdst = -1;
    time_t t = mktime(&tm);
    if (t == (time_t)-1 || t < 0 || t > INT64_MAX / LOOM_NS_PER_S - 86400)
        return LOOM_EINVAL;
    if (!date && t < now)
        t += 86400;
    *out = (int64_t)t * LOOM_NS_PER_S;
    return LOOM_OK;
}

int loomd_parse_begin(const char *text, int64_t submit_ns, int64_t *out_ns, loom_err_t *err)
{
    int rc = !strncmp(text, "now", 3) ? begin_relative(text + 3, submit_ns, out_ns)
                                      : begin_absolute(text, submit_ns, out_ns);
    if (rc)
        return loom_err_set(err, LOOM_EINVAL,
                            "options.begin: expected now[+N[seconds|minutes|hours|days|weeks]], "
                            "YYYY-MM-DD[THH:MM[:SS]] or HH:MM[:SS], found '%.64s'",
                            text);
    return LOOM_OK;
}

/* ------------------------------------------------- job options -> runtime */

static int deps_add(loomd_runner_t *r, int64_t id, const char *text, const char *name, int64_t uid)
{
    if (r->ndeps == r->cap_deps) {
        size_t nc = r->cap_deps ? r->cap_deps * 2 : 16;
        loomd_dep_t *nd = realloc(r->deps, nc * sizeof *nd);
        if (!nd)
            return LOOM_ENOMEM;
        r->deps = nd;
        r->cap_deps = nc;
    }
    loomd_dep_t *d = &r->deps[r->ndeps];
    d->id = id;
    d->uid = uid;
    d->text = strdup(text);
    d->name = strdup(name ? name : "");
    if (!d->text || !d->name) {
        free(d->text);
        free(d->name);
        return LOOM_ENOMEM;
    }
    r->ndeps++;
    r->deps_dirty = true;
    return LOOM_OK;
}

int loomd__job_blocks(loomd_runner_t *r, const loom_job_t *j, loom_runtime_job_t *rj)
{
    json_t *o = j->options_json ? json_loads(j->options_json, 0, NULL) : NULL;
    if (!o)
        return j->options_json ? LOOM_ENOMEM : LOOM_OK; /* stored options always parse */
    rj->hold = json_is_true(json_object_get(o, "hold"));
    const char *begin = json_string_value(json_object_get(o, "begin"));
    int64_t at;
    if (begin && loomd_parse_begin(begin, j->submit_time_ns, &at, NULL) == LOOM_OK &&
        at > loom_time_real_ns())
        rj->begin_s = (double)(at - r->real_minus_mono_ns) / 1e9;
    const char *array = json_string_value(json_object_get(o, "array"));
    loom_jobspec_array_t a;
    json_int_t aid = json_integer_value(json_object_get(o, "array_job_id"));
    if (array && aid > 0 && loom_jobspec_array_parse(array, &a, NULL) == LOOM_OK) {
        rj->group = (uint64_t)aid;
        rj->group_max = a.max_running > INT32_MAX ? INT32_MAX : (int)a.max_running;
    }
    const char *dep = json_string_value(json_object_get(o, "dependency"));
    int rc = LOOM_OK;
    if (dep && *dep) {
        rj->dep_wait = true;
        rc = deps_add(r, j->id, dep, j->name, j->uid);
    }
    json_decref(o);
    return rc;
}

/* --------------------------------------------------------- judging them */

typedef struct judge_ctx {
    loomd_runner_t *r;
    const loomd_dep_t *d;
} judge_ctx_t;

static loom_runtime_dep_job_t dep_job(void *ctx, uint64_t id)
{
    judge_ctx_t *c = ctx;
    loom_job_t j;
    if (id > INT64_MAX || loom_store_get(c->r->store, (int64_t)id, &j, NULL) != LOOM_OK)
        return LOOM_RUNTIME_DEP_UNKNOWN;
    loom_runtime_dep_job_t s = j.state == LOOM_JOB_PENDING     ? LOOM_RUNTIME_DEP_PENDING
                               : j.state == LOOM_JOB_RUNNING   ? LOOM_RUNTIME_DEP_RUNNING
                               : j.state == LOOM_JOB_COMPLETED ? LOOM_RUNTIME_DEP_OK
                                                               : LOOM_RUNTIME_DEP_NOTOK;
    loom_job_free(&j);
    return s;
}

/* Whether an earlier job of the same name and the same owner (as Slurm's
 * singleton: user and name) is still pending or running. */
static bool dep_singleton(void *ctx)
{
    judge_ctx_t *c = ctx;
    loom_store_filter_t f = {.state_mask = (1u << LOOM_JOB_PENDING) | (1u << LOOM_JOB_RUNNING),
                             .limit = SINGLETON_SCAN};
    loom_job_list_t list;
    if (loom_store_list(c->r->store, &f, &list, NULL) != LOOM_OK)
        return true; /* cannot tell: wait */
    bool busy = false;
    for (size_t i = 0; i < list.n && list.jobs[i].id < c->d->id && !busy; i++)
        busy = !strcmp(list.jobs[i].name, c->d->name) && list.jobs[i].uid == c->d->uid;
    loom_job_list_free(&list);
    return busy;
}

static void dep_free(loomd_dep_t *d)
{
    free(d->text);
    free(d->name);
}

/* One waiting job: true when it leaves the list. */
static bool judge_one(loomd_runner_t *r, loomd_dep_t *d, double now)
{
    loom_runtime_info_t info;
    if (loom_runtime_get(r->rt, (uint64_t)d->id, &info) != LOOM_OK ||
        info.state != LOOM_RUNTIME_PENDING)
        return true; /* cancelled, or gone */
    judge_ctx_t c = {r, d};
    loom_runtime_dep_t v;
    loom_err_t err;
    if (loom_runtime_dep_eval(d->text, dep_job, dep_singleton, &c, &v, &err) != LOOM_OK)
        v = LOOM_RUNTIME_DEP_NEVER;
    if (v == LOOM_RUNTIME_DEP_WAIT)
        return false;
    if (v == LOOM_RUNTIME_DEP_MET) {
        loom_runtime_set_dep_wait(r->rt, (uint64_t)d->id, false);
        return true;
    }
    if (loomd__store_run(r, d->id, LOOM_JOB_PENDING, LOOM_JOB_CANCELLED, "DependencyNeverSatisfied",
                         NULL, &err) == LOOM_OK)
        loom_runtime_remove(r->rt, (uint64_t)d->id, now);
    else
        loom_log_error("runner.dependency_end_failed", "job=%lld error=\"%s\"", (long long)d->id,
                       err.msg);
    return true;
}

void loomd__deps_pass(loomd_runner_t *r, double now)
{
    int64_t t = loom_time_mono_ns();
    uint64_t ended = r->ended + r->failed_to_start;
    if (!r->ndeps || (!r->deps_dirty && ended == r->deps_ended && t < r->deps_next_ns))
        return;
    r->deps_dirty = false;
    r->deps_ended = ended;
    r->deps_next_ns = t + DEPS_RECHECK_NS;
    size_t keep = 0;
    for (size_t i = 0; i < r->ndeps; i++) {
        if (judge_one(r, &r->deps[i], now))
            dep_free(&r->deps[i]);
        else
            r->deps[keep++] = r->deps[i];
    }
    if (keep < r->ndeps)
        r->deps_dirty = true; /* a job it released may end others' waits once it runs */
    r->ndeps = keep;
}

void loomd__deps_free(loomd_runner_t *r)
{
    for (size_t i = 0; i < r->ndeps; i++)
        dep_free(&r->deps[i]);
    free(r->deps);
    r->deps = NULL;
    r->ndeps = r->cap_deps = 0;
}
