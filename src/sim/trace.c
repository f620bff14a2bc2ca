/* sim/trace.c — reading traces: the Alibaba GPU trace 2023 CSVs (node and
 * pod lists) and loom's JSONL job manifests.
 *
 * The CSVs are read by core's RFC 4180 reader (loom_csv_*); columns are
 * found by header name, so the trace's variants with fewer
 * columns read the same. Every error names the file, the line and column,
 * the column's name and what was expected; on error nothing is appended. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loom/jobspec.h"
#include "loom/runtime.h"
#include "loom/sim.h"

#define CSV_MAX_FIELDS  64
#define TRACE_MAX_BYTES ((size_t)1 << 30) /* 1 GiB, compressed or not */

/* Reads the header and finds the columns. */
static int need_cols(loom_csv_t *c, const char *const *names, int *idx, size_t n, bool *required,
                     loom_err_t *err)
{
    int rc = loom_csv_next(c, err);
    if (rc <= 0)
        return rc == 0 ? loom_err_set(err, LOOM_EINVAL, "%s: empty file, expected a header line",
                                      c->name)
                       : rc;
    for (size_t i = 0; i < n; i++) {
        idx[i] = loom_csv_find(c, names[i]);
        if (idx[i] < 0 && required[i])
            return loom_err_set(err, LOOM_EINVAL, "%s:%zu: header lacks column '%s'", c->name,
                                c->rec_line, names[i]);
    }
    return LOOM_OK;
}

/* Reads the next record: 1 with as many fields as the header, 0 at the end,
 * an error code. */
static int next_row(loom_csv_t *c, size_t ncols, loom_err_t *err)
{
    int rc = loom_csv_next(c, err);
    if (rc == 1 && c->nf != ncols)
        return loom_err_set(err, LOOM_EINVAL, "%s:%zu: %zu fields, expected %zu as the header",
                            c->name, c->rec_line, c->nf, ncols);
    return rc;
}

static int field_i64(const loom_csv_t *c, int i, const char *colname, int64_t min, int64_t max,
                     int64_t *out, loom_err_t *err)
{
    if ((size_t)i >= c->nf)
        return loom_err_set(err, LOOM_EINVAL, "%s:%zu: missing field '%s' (record has %zu fields)",
                            c->name, c->rec_line, colname, c->nf);
    loom_err_t e;
    if (loom_parse_i64(loom_csv_field(c, i), min, max, out, colname, &e))
        return loom_err_set(err, LOOM_EINVAL, "%s:%zu:%zu: %s", c->name, c->rec_line,
                            loom_csv_field_col(c, (size_t)i), e.msg);
    return LOOM_OK;
}

/* A time in seconds (number, maybe fractional); empty gives -1. */
static int field_time(const loom_csv_t *c, int i, const char *colname, double *out, loom_err_t *err)
{
    *out = -1;
    if (i < 0 || (size_t)i >= c->nf || loom_csv_field(c, i)[0] == '\0')
        return LOOM_OK;
    const char *s = loom_csv_field(c, i);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || isspace((unsigned char)s[0]) || errno == ERANGE || !isfinite(v) || v < 0)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s:%zu:%zu: %s '%s': expected seconds (a number >= 0)", c->name,
                            c->rec_line, loom_csv_field_col(c, (size_t)i), colname, s);
    *out = v;
    return LOOM_OK;
}

static const char *field_str(const loom_csv_t *c, int i)
{
    if (i < 0 || (size_t)i >= c->nf)
        return "";
    return loom_csv_field(c, i);
}

int loom_sim_nodes_parse_csv(const char *text, size_t len, const char *name,
                             loom_sched_cluster_t *cl, loom_err_t *err)
{
    loom_csv_t c;
    loom_csv_init(&c, text, len, name, 0, CSV_MAX_FIELDS);
    static const char *const cols[] = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};
    bool req[] = {true, true, true, true, false};
    int idx[5];
    size_t before = cl->nnodes;
    int rc = need_cols(&c, cols, idx, 5, req, err);
    if (rc)
        goto out;
    size_t ncols = c.nf;
    while ((rc = next_row(&c, ncols, err)) == 1) {
        int64_t cpu, mem, gpus;
        if ((rc = field_i64(&c, idx[1], "cpu_milli", 0, INT64_C(1) << 40, &cpu, err)) ||
            (rc = field_i64(&c, idx[2], "memory_mib", 0, INT64_C(1) << 40, &mem, err)) ||
            (rc = field_i64(&c, idx[3], "gpu", 0, LOOM_SCHED_MAX_GPUS, &gpus, err)))
            goto out;
        const char *model = field_str(&c, idx[4]);
        loom_err_t e;
        if ((rc = loom_sched_cluster_add_node(cl, field_str(&c, idx[0]), cpu, mem, (int)gpus, model,
                                              0, NULL, &e))) {
            loom_err_set(err, rc, "%s:%zu: %s", name, c.rec_line, e.msg);
            goto out;
        }
    }
    if (rc < 0)
        goto out;
    rc = LOOM_OK;
    if (cl->nnodes == before)
        rc = loom_err_set(err, LOOM_EINVAL, "%s: no nodes (only a header)", name);
out:
    if (rc) { /* nothing half-added */
        for (size_t i = before; i < cl->nnodes; i++) {
            loom_sched_node_t *n = &cl->nodes[i];
            cl->gpu_milli_total -= (int64_t)n->ngpus * LOOM_SCHED_MILLI;
            cl->cpu_milli_total -= n->cpu_milli;
            free(n->labels);
        }
        cl->nnodes = before;
    }
    loom_csv_free(&c);
    return rc;
}

static int trace_push(loom_sim_trace_t *t, const loom_sim_task_t *task)
{
    if (loom_vec_reserve((void **)&t->tasks, &t->cap, t->n + 1, sizeof *t->tasks, 1024))
        return LOOM_ENOMEM;
    t->tasks[t->n++] = *task;
    return LOOM_OK;
}

int loom_sim_pods_parse_csv(const char *text, size_t len, const char *name,
                            const loom_sched_cluster_t *cl, loom_sim_trace_t *t, loom_err_t *err)
{
    loom_csv_t c;
    loom_csv_init(&c, text, len, name, 0, CSV_MAX_FIELDS);
    static const char *const cols[] = {"name",          "cpu_milli",     "memory_mib",
                                       "num_gpu",       "gpu_milli",     "gpu_spec",
                                       "creation_time", "deletion_time", "scheduled_time"};
    bool req[] = {true, true, true, true, true, false, false, false, false};
    int idx[9];
    size_t before = t->n;
    int rc = need_cols(&c, cols, idx, 9, req, err);
    if (rc)
        goto out;
    size_t ncols = c.nf;
    while ((rc = next_row(&c, ncols, err)) == 1) {
        loom_sim_task_t task;
        memset(&task, 0, sizeof task);
        snprintf(task.name, sizeof task.name, "%s", field_str(&c, idx[0]));
        int64_t cpu, mem, ngpu, milli;
        if ((rc = field_i64(&c, idx[1], "cpu_milli", 0, INT64_C(1) << 40, &cpu, err)) ||
            (rc = field_i64(&c, idx[2], "memory_mib", 0, INT64_C(1) << 40, &mem, err)) ||
            (rc = field_i64(&c, idx[3], "num_gpu", 0, LOOM_SCHED_MAX_GPUS, &ngpu, err)) ||
            (rc = field_i64(&c, idx[4], "gpu_milli", 0, LOOM_SCHED_MILLI, &milli, err)))
            goto out;
        task.req = (loom_sched_req_t){
            cpu,       mem,
            (int)ngpu, (int32_t)milli,
            0,         ngpu ? loom_sched_cluster_type_mask(cl, field_str(&c, idx[5])) : 0};
        if (ngpu == 0)
            task.req.gpu_milli = 0;
        loom_err_t e;
        if ((rc = loom_sched_req_validate(&task.req, &e))) {
            loom_err_set(err, rc, "%s:%zu: pod '%s': %s", name, c.rec_line, task.name, e.msg);
            goto out;
        }
        double created, deleted, scheduled;
        if ((rc = field_time(&c, idx[6], "creation_time", &created, err)) ||
            (rc = field_time(&c, idx[7], "deletion_time", &deleted, err)) ||
            (rc = field_time(&c, idx[8], "scheduled_time", &scheduled, err)))
            goto out;
        task.create_s = created < 0 ? 0 : created;
        double start = scheduled >= 0 ? scheduled : task.create_s;
        task.duration_s = deleted >= 0 && deleted >= start ? deleted - start : -1;
        if (trace_push(t, &task)) {
            rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
            goto out;
        }
    }
    if (rc < 0)
        goto out;
    rc = LOOM_OK;
    if (t->n == before)
        rc = loom_err_set(err, LOOM_EINVAL, "%s: no pods (only a header)", name);
out:
    if (rc)
        t->n = before;
    loom_csv_free(&c);
    return rc;
}

/* ------------------------------------------------------------------ JSONL */

static int json_num(json_t *o, const char *key, const char *where, double *out, bool *found,
                    loom_err_t *err)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return LOOM_OK;
    if (!json_is_number(v))
        return loom_err_set(err, LOOM_EINVAL, "%s/%s: expected a number, found %s", where, key,
                            loom_json_type_name(v));
    double d = json_number_value(v);
    if (!isfinite(d) || d < 0)
        return loom_err_set(err, LOOM_EINVAL, "%s/%s: expected a number >= 0", where, key);
    *out = d;
    if (found)
        *found = true;
    return LOOM_OK;
}

/* A duration: number of seconds or a string such as "90s", "1h30m". */
static int json_dur(json_t *o, const char *key, const char *where, double *out, bool *found,
                    loom_err_t *err)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return LOOM_OK;
    if (json_is_string(v)) {
        int64_t ns;
        loom_err_t e;
        if (loom_parse_duration(json_string_value(v), &ns, &e))
            return loom_err_set(err, LOOM_EINVAL, "%s/%s: %s", where, key, e.msg);
        if (ns < 0)
            return loom_err_set(err, LOOM_EINVAL, "%s/%s: expected a duration >= 0", where, key);
        *out = (double)ns / 1e9;
        if (found)
            *found = true;
        return LOOM_OK;
    }
    return json_num(o, key, where, out, found, err);
}

static int json_size_mib(json_t *o, const char *key, const char *where, int64_t *out,
                         loom_err_t *err)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return LOOM_OK;
    if (json_is_string(v)) {
        uint64_t bytes;
        loom_err_t e;
        if (loom_parse_size(json_string_value(v), &bytes, &e))
            return loom_err_set(err, LOOM_EINVAL, "%s/%s: %s", where, key, e.msg);
        *out = (int64_t)((bytes + (1u << 20) - 1) >> 20);
        return LOOM_OK;
    }
    double d = 0;
    int rc = json_num(o, key, where, &d, NULL, err);
    if (rc)
        return rc;
    if (d > 1e15)
        return loom_err_set(err, LOOM_EINVAL, "%s/%s: too large", where, key);
    *out = (int64_t)d;
    return LOOM_OK;
}

/* A JSONL task's owner, dependency, hold and begin time. */
static int jsonl_blocks(json_t *root, const char *where, loom_sim_task_t *task, loom_err_t *err)
{
    static const char *const owners[] = {"user", "account"};
    for (int k = 0; k < 2; k++) {
        json_t *v = json_object_get(root, owners[k]);
        if (v &&
            (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > INT32_MAX))
            return loom_err_set(err, LOOM_EINVAL, "%s/%s: expected an integer from 1 to %d", where,
                                owners[k], INT32_MAX);
        *(k ? &task->account : &task->user) = v ? (uint32_t)json_integer_value(v) : 0;
    }
    json_t *dep = json_object_get(root, "dependency");
    if (dep) {
        loom_err_t e;
        if (!json_is_string(dep) || json_string_length(dep) >= sizeof task->dependency)
            return loom_err_set(err, LOOM_EINVAL,
                                "%s/dependency: expected a string of at most %zu bytes", where,
                                sizeof task->dependency - 1);
        if (loom_jobspec_dependency_check(json_string_value(dep), &e))
            return loom_err_set(err, LOOM_EINVAL, "%s/dependency: %s", where, e.msg);
        snprintf(task->dependency, sizeof task->dependency, "%s", json_string_value(dep));
    }
    json_t *name = json_object_get(root, "name");
    if (name && !json_is_string(name))
        return loom_err_set(err, LOOM_EINVAL, "%s/name: expected a string", where);
    task->name_key = loom_runtime_name_key(name ? json_string_value(name) : task->name);
    json_t *hold = json_object_get(root, "hold");
    if (hold && !json_is_boolean(hold))
        return loom_err_set(err, LOOM_EINVAL, "%s/hold: expected true or false", where);
    task->hold = json_is_true(hold);
    int rc;
    if ((rc = json_dur(root, "release", where, &task->release_s, NULL, err)) ||
        (rc = json_dur(root, "begin", where, &task->begin_s, NULL, err)))
        return rc;
    if (task->release_s > 0 && !task->hold)
        return loom_err_set(err, LOOM_EINVAL, "%s/release: given without \"hold\": true", where);
    return LOOM_OK;
}

static int jsonl_task(json_t *root, const char *where, const loom_sched_cluster_t *cl,
                      loom_sim_task_t *task, loom_err_t *err)
{
    memset(task, 0, sizeof *task);
    task->duration_s = -1;
    if (!json_is_object(root))
        return loom_err_set(err, LOOM_EINVAL, "%s: expected an object, found %s", where,
                            loom_json_type_name(root));
    json_t *id = json_object_get(root, "id");
    if (json_is_string(id))
        snprintf(task->name, sizeof task->name, "%s", json_string_value(id));
    else if (json_is_integer(id))
        snprintf(task->name, sizeof task->name, "%lld", (long long)json_integer_value(id));
    bool due = false;
    int rc;
    if ((rc = json_dur(root, "due_s", where, &task->create_s, &due, err)) ||
        (rc = json_dur(root, "due", where, &task->create_s, &due, err)))
        return rc;
    if (!due)
        return loom_err_set(err, LOOM_EINVAL, "%s: missing 'due' (seconds from the start)", where);
    if ((rc = json_dur(root, "duration_s", where, &task->duration_s, NULL, err)) ||
        (rc = json_dur(root, "duration", where, &task->duration_s, NULL, err)) ||
        (rc = json_dur(root, "estimate_s", where, &task->estimate_s, NULL, err)) ||
        (rc = json_dur(root, "time_limit", where, &task->time_limit_s, NULL, err)))
        return rc;
    if ((rc = jsonl_blocks(root, where, task, err)))
        return rc;
    json_t *prio = json_object_get(root, "priority");
    if (prio) {
        if (!json_is_integer(prio))
            return loom_err_set(err, LOOM_EINVAL, "%s/priority: expected an integer", where);
        task->priority = (int)json_integer_value(prio);
    }
    json_t *res = json_object_get(root, "resources");
    char rwhere[256];
    if (res) {
        if (!json_is_object(res))
            return loom_err_set(err, LOOM_EINVAL, "%s/resources: expected an object", where);
        snprintf(rwhere, sizeof rwhere, "%s/resources", where);
    } else {
        res = root;
        snprintf(rwhere, sizeof rwhere, "%s", where);
    }
    double cpus = -1, cpu_milli = -1, gpus = 0, milli = -1;
    int64_t mem = 0, gmem = 0;
    if ((rc = json_num(res, "cpus", rwhere, &cpus, NULL, err)) ||
        (rc = json_num(res, "cpu_milli", rwhere, &cpu_milli, NULL, err)) ||
        (rc = json_num(res, "gpus", rwhere, &gpus, NULL, err)) ||
        (rc = json_num(res, "num_gpus", rwhere, &gpus, NULL, err)) ||
        (rc = json_num(res, "gpu_milli", rwhere, &milli, NULL, err)) ||
        (rc = json_size_mib(res, "mem", rwhere, &mem, err)) ||
        (rc = json_size_mib(res, "mem_mib", rwhere, &mem, err)) ||
        (rc = json_size_mib(res, "gpu_mem", rwhere, &gmem, err)) ||
        (rc = json_size_mib(res, "gpu_mem_mib", rwhere, &gmem, err)))
        return rc;
    if (cpus > 1e9 || cpu_milli > 1e12 || gpus > LOOM_SCHED_MAX_GPUS || milli > LOOM_SCHED_MILLI)
        return loom_err_set(err, LOOM_EINVAL, "%s: resource request out of range", rwhere);
    task->req.cpu_milli = cpu_milli >= 0 ? (int64_t)cpu_milli
                          : cpus >= 0    ? (int64_t)(cpus * 1000)
                                         : 0;
    task->req.mem_mib = mem;
    task->req.gpu_mem_mib = gmem;
    /* "gpus": 0.5 means half a GPU */
    if (gpus > 0 && gpus < 1 && milli < 0) {
        milli = floor(gpus * LOOM_SCHED_MILLI + 0.5);
        gpus = 1;
    }
    if (gpus != floor(gpus))
        return loom_err_set(err, LOOM_EINVAL, "%s/gpus: expected a whole number or a fraction < 1",
                            rwhere);
    task->req.num_gpus = (int)gpus;
    task->req.gpu_milli = task->req.num_gpus ? (milli >= 0 ? (int32_t)milli : LOOM_SCHED_MILLI) : 0;
    json_t *types = json_object_get(res, "gpu_types");
    if (types && task->req.num_gpus) {
        if (json_is_string(types))
            task->req.gpu_types = loom_sched_cluster_type_mask(cl, json_string_value(types));
        else if (json_is_array(types)) {
            size_t i;
            json_t *v;
            json_array_foreach(types, i, v)
            {
                if (!json_is_string(v))
                    return loom_err_set(err, LOOM_EINVAL, "%s/gpu_types/%zu: expected a string",
                                        rwhere, i);
                task->req.gpu_types |= loom_sched_cluster_type_mask(cl, json_string_value(v));
            }
        } else
            return loom_err_set(err, LOOM_EINVAL,
                                "%s/gpu_types: expected a string or an array of strings", rwhere);
    }
    loom_err_t e;
    if ((rc = loom_sched_req_validate(&task->req, &e)))
        return loom_err_set(err, rc, "%s: %s", rwhere, e.msg);
    return LOOM_OK;
}

int loom_sim_jsonl_parse(const char *text, size_t len, const char *name,
                         const loom_sched_cluster_t *cl, loom_sim_trace_t *t, loom_err_t *err)
{
    size_t before = t->n, line = 0;
    const char *p = text, *end = text + len;
    int rc = LOOM_OK;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        line++;
        const char *q = p;
        while (q < le && isspace((unsigned char)*q))
            q++;
        if (q < le) {
            char where[128];
            snprintf(where, sizeof where, "%s:%zu", name, line);
            json_t *root;
            loom_err_t e;
            if ((rc = loom_json_parse(p, (size_t)(le - p), name, 0, &root, &e))) {
                /* one line is one document: report the file's line */
                size_t namelen = strlen(name);
                const char *rest = e.msg;
                if (strncmp(rest, name, namelen) == 0 && strncmp(rest + namelen, ":1:", 3) == 0)
                    loom_err_set(err, rc, "%s:%zu:%s", name, line, rest + namelen + 3);
                else
                    loom_err_set(err, rc, "%s: %s", where, rest);
                goto out;
            }
            loom_sim_task_t task;
            rc = jsonl_task(root, where, cl, &task, err);
            json_decref(root);
            if (rc)
                goto out;
            if (!task.name[0])
                snprintf(task.name, sizeof task.name, "line%zu", line);
            if (trace_push(t, &task)) {
                rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
                goto out;
            }
        }
        p = nl ? nl + 1 : end;
    }
    if (t->n == before)
        rc = loom_err_set(err, LOOM_EINVAL, "%s: no jobs", name);
out:
    if (rc)
        t->n = before;
    return rc;
}

/* Reads a trace named as the commands take it (loom_data_trace: a file,
 * plain or gzip-compressed, or the name of a shipped trace). */
static int read_trace(const char *arg, char *path, size_t pathlen, loom_buf_t *b, loom_err_t *err)
{
    int rc = loom_data_trace(arg, path, pathlen, err);
    return rc ? rc : loom_buf_read_data(b, path, TRACE_MAX_BYTES, err);
}

int loom_sim_nodes_load(const char *arg, loom_sched_cluster_t *c, loom_err_t *err)
{
    char path[4096];
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = read_trace(arg, path, sizeof path, &b, err);
    if (!rc)
        rc = loom_sim_nodes_parse_csv(b.data ? b.data : "", b.len, path, c, err);
    loom_buf_free(&b);
    return rc;
}

int loom_sim_tasks_load(const char *arg, const loom_sched_cluster_t *c, loom_sim_trace_t *t,
                        loom_err_t *err)
{
    char path[4096];
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = read_trace(arg, path, sizeof path, &b, err);
    if (rc)
        goto out;
    const char *s = b.data ? b.data : "";
    size_t i = 0;
    while (i < b.len && isspace((unsigned char)s[i]))
        i++;
    if (i < b.len && s[i] == '{')
        rc = loom_sim_jsonl_parse(s, b.len, path, c, t, err);
    else
        rc = loom_sim_pods_parse_csv(s, b.len, path, c, t, err);
out:
    loom_buf_free(&b);
    return rc;
}

void loom_sim_trace_free(loom_sim_trace_t *t)
{
    if (!t)
        return;
    free(t->tasks);
    memset(t, 0, sizeof *t);
}

int loom_sim_trace_workload(const loom_sim_trace_t *t, loom_sched_workload_t *out, loom_err_t *err)
{
    loom_sched_req_t *reqs = malloc((t->n ? t->n : 1) * sizeof *reqs);
    if (!reqs)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    for (size_t i = 0; i < t->n; i++)
        reqs[i] = t->tasks[i].req;
    int rc = loom_sched_workload_learn(reqs, t->n, 0.95, out, err);
    free(reqs);
    return rc;
}
