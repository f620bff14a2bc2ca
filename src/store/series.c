/* Usage series: what a running job used over time (docs/store.md, "Usage
 * series"). loomd's sampler appends one point per job and sample, in one
 * transaction per tick; a job's series is one range of the job_usage table
 * (clustered by job and time). The bound: past LOOM_USAGE_POINTS_MAX points
 * the caller asks for a downsampling, which merges neighbours in pairs
 * (span-weighted means, the larger peak), so a series never holds more than
 * that many points and its resolution halves each time it fills. NAN is
 * stored as NULL. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"

int64_t loom_usage_interval_ns(int64_t age_ns)
{
    const int64_t s = LOOM_NS_PER_S;
    return age_ns < 60 * s ? s : age_ns < 3600 * s ? 10 * s : age_ns < 86400 * s ? 60 * s : 300 * s;
}

/* ---------------------------------------------------------------- merge */

/* Span-weighted mean of two values, either of which may be NAN. */
static double wmean(double a, int64_t wa, double b, int64_t wb)
{
    if (isnan(a))
        return b;
    if (isnan(b))
        return a;
    double w = (double)wa + (double)wb;
    return w > 0 ? (a * (double)wa + b * (double)wb) / w : (a + b) / 2;
}

static double peak(double a, double b)
{
    return isnan(a) ? b : isnan(b) ? a : a > b ? a : b;
}

static loom_usage_gpu_t *gpu_of(loom_usage_point_t *p, int index)
{
    for (int g = 0; g < p->ngpus; g++)
        if (p->gpus[g].index == index)
            return &p->gpus[g];
    return NULL;
}

/* Merges b's GPUs into a's (a GPU missing from one side keeps the other's). */
static void merge_gpus(loom_usage_point_t *a, const loom_usage_point_t *b)
{
    for (int g = 0; g < b->ngpus; g++) {
        const loom_usage_gpu_t *y = &b->gpus[g];
        loom_usage_gpu_t *x = gpu_of(a, y->index);
        if (!x) {
            if (a->ngpus < LOOM_USAGE_GPUS_MAX)
                a->gpus[a->ngpus++] = *y;
            continue;
        }
        x->util_pct = wmean(x->util_pct, a->span_ns, y->util_pct, b->span_ns);
        x->util_peak_pct = peak(x->util_peak_pct, y->util_peak_pct);
        x->memory_bytes = wmean(x->memory_bytes, a->span_ns, y->memory_bytes, b->span_ns);
        x->memory_peak_bytes = peak(x->memory_peak_bytes, y->memory_peak_bytes);
        x->power_watts = wmean(x->power_watts, a->span_ns, y->power_watts, b->span_ns);
    }
}

static void merge_into(loom_usage_point_t *a, const loom_usage_point_t *b)
{
    int64_t wa = a->span_ns, wb = b->span_ns;
    merge_gpus(a, b);
    a->cpu_cores = wmean(a->cpu_cores, wa, b->cpu_cores, wb);
    a->memory_bytes = wmean(a->memory_bytes, wa, b->memory_bytes, wb);
    a->memory_peak_bytes = peak(a->memory_peak_bytes, b->memory_peak_bytes);
    a->read_bytes_per_second = wmean(a->read_bytes_per_second, wa, b->read_bytes_per_second, wb);
    a->write_bytes_per_second = wmean(a->write_bytes_per_second, wa, b->write_bytes_per_second, wb);
    a->time_ns = b->time_ns;
    a->span_ns = wa + wb;
}

size_t loom_usage_merge_pairs(loom_usage_point_t *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i += 2) {
        loom_usage_point_t m = p[i];
        if (i + 1 < n)
            merge_into(&m, &p[i + 1]);
        p[k++] = m;
    }
    return k;
}

/* ---------------------------------------------------------- GPU columns */

static void put_num(loom_buf_t *b, double v)
{
    if (isfinite(v))
        loom_buf_appendf(b, "%.15g", v);
    else
        loom_buf_append(b, "null", 4);
}

/* [[index, util, util_peak, memory, memory_peak, power], ...] */
static int gpus_text(const loom_usage_point_t *p, loom_buf_t *b)
{
    loom_buf_reset(b);
    loom_buf_append(b, "[", 1);
    for (int g = 0; g < p->ngpus; g++) {
        const loom_usage_gpu_t *x = &p->gpus[g];
        loom_buf_appendf(b, "%s[%d,", g ? "," : "", x->index);
        const double v[] = {x->util_pct, x->util_peak_pct, x->memory_bytes, x->memory_peak_bytes,
                            x->power_watts};
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
            put_num(b, v[i]);
            loom_buf_append(b, i + 1 < sizeof v / sizeof v[0] ? "," : "]", 1);
        }
    }
    return loom_buf_append(b, "]", 1);
}

static double num_at(const json_t *a, size_t i)
{
    const json_t *v = json_array_get(a, i);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void gpus_parse(const char *text, loom_usage_point_t *p)
{
    json_t *a = text ? json_loads(text, 0, NULL) : NULL;
    const json_t *g;
    size_t i;
    json_array_foreach(a, i, g)
    {
        if (p->ngpus >= LOOM_USAGE_GPUS_MAX)
            break;
        p->gpus[p->ngpus++] = (loom_usage_gpu_t){
            .index = (int)json_integer_value(json_array_get(g, 0)),
            .util_pct = num_at(g, 1),
            .util_peak_pct = num_at(g, 2),
            .memory_bytes = num_at(g, 3),
            .memory_peak_bytes = num_at(g, 4),
            .power_watts = num_at(g, 5),
        };
    }
    json_decref(a);
}

/* --------------------------------------------------------------- writes */

static void bind_num(sqlite3_stmt *st, int col, double v)
{
    if (isfinite(v))
        sqlite3_bind_double(st, col, v);
    else
        sqlite3_bind_null(st, col);
}

static int insert_point(sqlite3_stmt *st, int64_t job, const loom_usage_point_t *p, loom_buf_t *b)
{
    if (gpus_text(p, b))
        return SQLITE_NOMEM;
    sqlite3_bind_int64(st, 1, job);
    sqlite3_bind_int64(st, 2, p->time_ns);
    sqlite3_bind_int64(st, 3, p->span_ns);
    bind_num(st, 4, p->cpu_cores);
    bind_num(st, 5, p->memory_bytes);
    bind_num(st, 6, p->memory_peak_bytes);
    bind_num(st, 7, p->read_bytes_per_second);
    bind_num(st, 8, p->write_bytes_per_second);
    if (p->ngpus)
        sqlite3_bind_text(st, 9, b->data, (int)b->len, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 9);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

typedef struct append_ctx {
    const int64_t *jobs;
    const loom_usage_point_t *points;
    size_t n;
} append_ctx_t;

/* A second point at the same time as an earlier one replaces it. */
#define INSERT_SQL                                                                                 \
    "INSERT OR REPLACE INTO job_usage (job_id, time_ns, span_ns, cpu_cores, memory_bytes,"         \
    " memory_peak_bytes, read_bytes_per_second, write_bytes_per_second, gpus)"                     \
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"

static int append_fn(sqlite3 *db, void *ctx, loom_err_t *err)
{
    (void)err;
    append_ctx_t *a = ctx;
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, INSERT_SQL, -1, &st, NULL);
    loom_buf_t b = LOOM_BUF_INIT;
    for (size_t i = 0; rc == SQLITE_OK && i < a->n; i++)
        rc = insert_point(st, a->jobs[i], &a->points[i], &b);
    sqlite3_finalize(st);
    loom_buf_free(&b);
    return rc;
}

int loom_store_usage_append(loom_store_t *s, const int64_t *jobs, const loom_usage_point_t *points,
                            size_t n, loom_err_t *err)
{
    for (size_t i = 0; i < n; i++)
        if (jobs[i] < 1 || points[i].span_ns < 0 || points[i].ngpus < 0 ||
            points[i].ngpus > LOOM_USAGE_GPUS_MAX)
            return loom_err_set(err, LOOM_EINVAL,
                                "usage point %zu (job %lld): expected a job id >= 1, span >= 0 "
                                "and 0 to %d GPUs",
                                i, (long long)jobs[i], LOOM_USAGE_GPUS_MAX);
    if (n == 0)
        return LOOM_OK;
    append_ctx_t a = {.jobs = jobs, .points = points, .n = n};
    return loom_store__write(s, append_fn, &a, err);
}

/* ---------------------------------------------------------------- reads */

static double col_num(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? NAN : sqlite3_column_double(st, col);
}

static void row_to_point(sqlite3_stmt *st, loom_usage_point_t *p)
{
    memset(p, 0, sizeof *p);
    p->time_ns = sqlite3_column_int64(st, 0);
    p->span_ns = sqlite3_column_int64(st, 1);
    p->cpu_cores = col_num(st, 2);
    p->memory_bytes = col_num(st, 3);
    p->memory_peak_bytes = col_num(st, 4);
    p->read_bytes_per_second = col_num(st, 5);
    p->write_bytes_per_second = col_num(st, 6);
    gpus_parse((const char *)sqlite3_column_text(st, 7), p);
}

typedef struct series_ctx {
    int64_t job;
    loom_usage_point_t *points;
    size_t n, cap;
} series_ctx_t;

#define SELECT_SQL                                                                                 \
    "SELECT time_ns, span_ns, cpu_cores, memory_bytes, memory_peak_bytes,"                         \
    " read_bytes_per_second, write_bytes_per_second, gpus FROM job_usage"                          \
    " WHERE job_id = ?1 ORDER BY time_ns"

/* Reads job's series into c on db (either connection). */
static int read_series(sqlite3 *db, series_ctx_t *c, loom_err_t *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, SELECT_SQL, -1, &st, NULL) != SQLITE_OK)
        return loom_err_set(err, LOOM_EIO, "reading job %lld's usage: %s", (long long)c->job,
                            sqlite3_errmsg(db));
    sqlite3_bind_int64(st, 1, c->job);
    int rc = LOOM_OK, r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (loom_vec_reserve((void **)&c->points, &c->cap, c->n + 1, sizeof *c->points, 64)) {
            rc = loom_err_set(err, LOOM_ENOMEM, "out of memory reading job %lld's usage",
                              (long long)c->job);
            break;
        }
        row_to_point(st, &c->points[c->n++]);
    }
    if (rc == LOOM_OK && r != SQLITE_DONE)
        rc = loom_err_set(err, LOOM_EIO, "reading job %lld's usage: %s", (long long)c->job,
                          sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return rc;
}

static int series_fn(sqlite3 *db, void *ctx, loom_err_t *err)
{
    return read_series(db, ctx, err);
}

int loom_store_usage_series(loom_store_t *s, int64_t job, loom_usage_point_t **out, size_t *n,
                            loom_err_t *err)
{
    series_ctx_t c = {.job = job};
    int rc = loom_store__read(s, series_fn, &c, err);
    if (rc) {
        free(c.points);
        c.points = NULL;
        c.n = 0;
    }
    *out = c.points;
    *n = c.n;
    return rc;
}

/* --------------------------------------------------------- downsampling */

typedef struct down_ctx {
    series_ctx_t series;
    size_t max;
} down_ctx_t;

static int down_fn(sqlite3 *db, void *ctx, loom_err_t *err)
{
    down_ctx_t *d = ctx;
    if (read_series(db, &d->series, err))
        return SQLITE_CONSTRAINT; /* nothing written: the group goes on */
    if (d->series.n <= d->max)
        return SQLITE_OK;
    d->series.n = loom_usage_merge_pairs(d->series.points, d->series.n);
    sqlite3_stmt *del;
    int rc = sqlite3_prepare_v2(db, "DELETE FROM job_usage WHERE job_id = ?1", -1, &del, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(del, 1, d->series.job);
        rc = sqlite3_step(del) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
    }
    sqlite3_finalize(del);
    if (rc != SQLITE_OK)
        return rc;
    append_ctx_t a = {.n = d->series.n, .points = d->series.points};
    int64_t *jobs = malloc((a.n ? a.n : 1) * sizeof *jobs);
    if (!jobs)
        return SQLITE_NOMEM;
    for (size_t i = 0; i < a.n; i++)
        jobs[i] = d->series.job;
    a.jobs = jobs;
    rc = append_fn(db, &a, err);
    free(jobs);
    return rc;
}

int loom_store_usage_downsample(loom_store_t *s, int64_t job, size_t max, size_t *n_out,
                                loom_err_t *err)
{
    down_ctx_t d = {.series = {.job = job}, .max = max ? max : LOOM_USAGE_POINTS_MAX};
    int rc = loom_store__write(s, down_fn, &d, err);
    if (n_out)
        *n_out = d.series.n;
    free(d.series.points);
    return rc;
}
