/* The cluster's allocation and queue over time (docs/store.md, "Cluster
 * series"): loomd appends one point a minute. The table stays bounded by
 * the window: each append merges the minute points of every hour that
 * ended more than LOOM_CLUSTER_FINE_NS ago into one point (span-weighted
 * means) and deletes the points older than the window, so 30 days keep
 * about 1,440 minute points and 696 hourly ones. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "store/store_int.h"

/* The value columns, in the table's order. */
#define NCOLS 11

static double *col(loom_cluster_point_t *p, size_t c)
{
    double *const v[NCOLS] = {&p->gpus_total,
                              &p->gpus_allocated,
                              &p->gpus_whole,
                              &p->gpus_shared,
                              &p->gpus_busy,
                              &p->cpus_total,
                              &p->cpus_allocated,
                              &p->memory_total_bytes,
                              &p->memory_allocated_bytes,
                              &p->pending,
                              &p->running};
    return v[c];
}

#define SELECT_SQL                                                                                 \
    "SELECT time_ns, span_ns, gpus_total, gpus_allocated, gpus_whole, gpus_shared, gpus_busy,"     \
    " cpus_total, cpus_allocated, memory_total_bytes, memory_allocated_bytes, pending, running"    \
    " FROM cluster_usage"
#define INSERT_SQL                                                                                 \
    "INSERT OR REPLACE INTO cluster_usage (time_ns, span_ns, gpus_total, gpus_allocated,"          \
    " gpus_whole, gpus_shared, gpus_busy, cpus_total, cpus_allocated, memory_total_bytes,"         \
    " memory_allocated_bytes, pending, running) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,"       \
    " ?10, ?11, ?12, ?13)"

static int insert(sqlite3 *db, loom_cluster_point_t *p)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, INSERT_SQL, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_int64(st, 1, p->time_ns);
    sqlite3_bind_int64(st, 2, p->span_ns);
    for (size_t c = 0; c < NCOLS; c++) {
        double v = *col(p, c);
        if (isfinite(v))
            sqlite3_bind_double(st, (int)c + 3, v);
        else
            sqlite3_bind_null(st, (int)c + 3);
    }
    rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
    sqlite3_finalize(st);
    return rc;
}

typedef struct rows {
    loom_cluster_point_t *p;
    size_t n, cap;
} rows_t;

/* The rows `where` selects (binding ?1 to a and ?2 to b), oldest first. */
static int select_rows(sqlite3 *db, const char *where, int64_t a, int64_t b, rows_t *r)
{
    char sql[512];
    snprintf(sql, sizeof sql, "%s WHERE %s ORDER BY time_ns", SELECT_SQL, where);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (loom_vec_reserve((void **)&r->p, &r->cap, r->n + 1, sizeof *r->p, 64)) {
            rc = SQLITE_NOMEM;
            break;
        }
        loom_cluster_point_t *p = &r->p[r->n++];
        p->time_ns = sqlite3_column_int64(st, 0);
        p->span_ns = sqlite3_column_int64(st, 1);
        for (size_t c = 0; c < NCOLS; c++)
            *col(p, c) = sqlite3_column_type(st, (int)c + 2) == SQLITE_NULL
                             ? NAN
                             : sqlite3_column_double(st, (int)c + 2);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Merges rows [i, j) (one hour's) into one: span-weighted means. */
static loom_cluster_point_t merge(const loom_cluster_point_t *p, size_t i, size_t j)
{
    loom_cluster_point_t m = {.time_ns = p[j - 1].time_ns};
    for (size_t c = 0; c < NCOLS; c++) {
        double sum = 0, w = 0;
        for (size_t k = i; k < j; k++) {
            double v = *col((loom_cluster_point_t *)&p[k], c);
            if (isfinite(v)) {
                sum += v * (double)p[k].span_ns;
                w += (double)p[k].span_ns;
            }
        }
        *col(&m, c) = w > 0 ? sum / w : NAN;
    }
    for (size_t k = i; k < j; k++)
        m.span_ns += p[k].span_ns;
    return m;
}

static int exec2(sqlite3 *db, const char *sql, int64_t a, int64_t b)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
    sqlite3_finalize(st);
    return rc;
}

/* Merges the fine points of every hour that ended before cutoff. */
static int coarsen(sqlite3 *db, int64_t cutoff)
{
    const int64_t h = LOOM_CLUSTER_COARSE_NS;
    int64_t end = cutoff / h * h; /* hours ending by then */
    rows_t r = {0};
    int rc = select_rows(db, "time_ns < ?1 AND span_ns < ?2", end, h, &r);
    for (size_t i = 0; rc == SQLITE_OK && i < r.n;) {
        size_t j = i + 1;
        while (j < r.n && (r.p[j].time_ns - 1) / h == (r.p[i].time_ns - 1) / h)
            j++;
        if (j - i > 1) {
            int64_t from = (r.p[i].time_ns - 1) / h * h;
            loom_cluster_point_t m = merge(r.p, i, j);
            rc = exec2(db, "DELETE FROM cluster_usage WHERE time_ns > ?1 AND time_ns <= ?2", from,
                       from + h);
            if (rc == SQLITE_OK)
                rc = insert(db, &m);
        }
        i = j;
    }
    free(r.p);
    return rc;
}

typedef struct append_ctx {
    loom_cluster_point_t p;
    int64_t window_ns;
} append_ctx_t;

static int append_fn(sqlite3 *db, void *ctx, loom_err_t *err)
{
    (void)err;
    append_ctx_t *a = ctx;
    int rc = insert(db, &a->p);
    if (rc == SQLITE_OK)
        rc = coarsen(db, a->p.time_ns - LOOM_CLUSTER_FINE_NS);
    if (rc == SQLITE_OK)
        rc = exec2(db, "DELETE FROM cluster_usage WHERE time_ns < ?1 AND ?2 = ?2",
                   a->p.time_ns - a->window_ns, 0);
    return rc;
}

int loom_store_cluster_append(loom_store_t *s, const loom_cluster_point_t *p, int64_t window_ns,
                              loom_err_t *err)
{
    if (p->time_ns <= 0 || p->span_ns < 0 || window_ns < 0)
        return loom_err_set(err, LOOM_EINVAL,
                            "cluster usage point: expected a time > 0, span >= 0, window >= 0");
    append_ctx_t a = {.p = *p, .window_ns = window_ns ? window_ns : 30 * 86400 * LOOM_NS_PER_S};
    return loom_store__write(s, append_fn, &a, err);
}

typedef struct series_ctx {
    int64_t since_ns;
    rows_t rows;
} series_ctx_t;

static int series_fn(sqlite3 *db, void *ctx, loom_err_t *err)
{
    series_ctx_t *c = ctx;
    int rc = select_rows(db, "time_ns > ?1 AND ?2 = ?2", c->since_ns, 0, &c->rows);
    return rc == SQLITE_OK
               ? LOOM_OK
               : loom_err_set(err, LOOM_EIO, "reading the cluster's usage: %s", sqlite3_errmsg(db));
}

int loom_store_cluster_series(loom_store_t *s, int64_t since_ns, loom_cluster_point_t **out,
                              size_t *n, loom_err_t *err)
{
    series_ctx_t c = {.since_ns = since_ns};
    int rc = loom_store__read(s, series_fn, &c, err);
    if (rc) {
        free(c.rows.p);
        c.rows = (rows_t){0};
    }
    *out = c.rows.p;
    *n = c.rows.n;
    return rc;
}
