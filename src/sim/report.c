/* sim/report.c — what loom sim prints and writes: the summary table, the
 * JSON object, per-run CSVs and the gnuplot figures. Runs are grouped by
 * (trace, policy) in the order first seen; figures are means over seeds. */
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loom/sim.h"
#include "sim/sim_int.h"

/* Lines in one figure (there are 8 placement policies). */
#define PLOT_MAX_POLICIES 64

extern char **environ;

typedef struct group {
    const char *trace, *policy;
    size_t n;
    double alloc, alloc_sq, alloc_min, alloc_max, failed, frag, frag_pct, unalloc, final, secs;
    double jct, wait, p99, makespan, util, completed, unfit, never, cancelled, refused;
    uint32_t users;
    double jain, user_jct[LOOM_SIM_MAX_USERS];
    double p99_jct, backlog_s;
    double user_gpu[LOOM_SIM_MAX_USERS], user_backlog[LOOM_SIM_MAX_USERS]; /* parts of the whole */
} group_t;

/* x[u] / sum of x over the users (0 when the sum is 0). */
static double part(const double *x, uint32_t users, uint32_t u)
{
    double sum = 0;
    for (uint32_t k = 0; k < users; k++)
        sum += x[k];
    return sum > 0 ? x[u] / sum : 0;
}

static const char *base_name(const char *path)
{
    if (!path)
        return "trace";
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static bool same(const char *a, const char *b)
{
    return (a == b) || (a && b && strcmp(a, b) == 0);
}

static size_t build_groups(const loom_sim_run_t *runs, size_t n, group_t *g, bool *multi)
{
    size_t ng = 0;
    *multi = false;
    for (size_t i = 0; i < n; i++) {
        const loom_sim_run_t *r = &runs[i];
        if (!same(r->trace_name, runs[0].trace_name))
            *multi = true;
        size_t k;
        for (k = 0; k < ng; k++)
            if (same(g[k].trace, r->trace_name) && same(g[k].policy, r->policy))
                break;
        if (k == ng) {
            memset(&g[ng], 0, sizeof g[ng]);
            g[ng].trace = r->trace_name;
            g[ng].policy = r->policy;
            g[ng].alloc_min = INFINITY;
            g[ng].alloc_max = -INFINITY;
            ng++;
        }
        group_t *x = &g[k];
        const loom_sim_packing_result_t *p = &r->packing;
        const loom_sim_dynamic_result_t *d = &r->dynamic;
        x->n++;
        x->alloc += p->alloc_at_100;
        x->alloc_sq += p->alloc_at_100 * p->alloc_at_100;
        x->alloc_min = fmin(x->alloc_min, p->alloc_at_100);
        x->alloc_max = fmax(x->alloc_max, p->alloc_at_100);
        x->failed += (double)p->failed;
        x->frag += p->frag_at_100;
        x->frag_pct += p->frag_pct_at_100;
        x->unalloc += p->unalloc_at_100;
        x->final += p->final_alloc;
        x->secs += p->seconds + d->seconds;
        x->jct += d->mean_jct_s;
        x->wait += d->mean_wait_s;
        x->p99 += d->p99_wait_s;
        x->makespan += d->makespan_s;
        x->util += d->mean_util_pct;
        x->completed += (double)d->completed;
        x->unfit += (double)d->unfit;
        x->never += (double)d->never_started;
        x->cancelled += (double)d->cancelled;
        x->refused += (double)d->refused;
        x->users = d->users;
        x->jain += d->jain_jct;
        x->p99_jct += d->p99_jct_s;
        x->backlog_s += d->backlog_s;
        for (uint32_t u = 0; u < d->users && u < LOOM_SIM_MAX_USERS; u++) {
            x->user_jct[u] += d->user_mean_jct_s[u];
            x->user_gpu[u] += part(d->user_gpu_s, d->users, u);
            x->user_backlog[u] += part(d->user_backlog_gpu_s, d->users, u);
        }
    }
    return ng;
}

static double sd(const group_t *g)
{
    if (g->n < 2)
        return 0;
    double m = g->alloc / (double)g->n;
    double v = (g->alloc_sq - (double)g->n * m * m) / (double)(g->n - 1);
    return v > 0 ? sqrt(v) : 0;
}

int loom_sim_report_table(loom_buf_t *out, const loom_sim_run_t *runs, size_t n, bool dynamic)
{
    group_t *g = calloc(n ? n : 1, sizeof *g);
    if (!g)
        return LOOM_ENOMEM;
    bool multi;
    size_t ng = build_groups(runs, n, g, &multi);
    int rc = 0;
    if (!dynamic) {
        rc |= loom_buf_appendf(out, "%s%-12s %5s %13s %6s %11s %10s %9s %9s %8s\n",
                               multi ? "trace                      " : "", "policy", "seeds",
                               "alloc@100 %", "sd", "unalloc GPU", "frag GPU", "frag %", "failed",
                               "final %");
        for (size_t k = 0; k < ng; k++) {
            double m = (double)g[k].n;
            if (multi)
                rc |= loom_buf_appendf(out, "%-27s", base_name(g[k].trace));
            rc |=
                loom_buf_appendf(out, "%-12s %5zu %13.2f %6.2f %11.1f %10.1f %9.1f %9.1f %8.2f\n",
                                 g[k].policy, g[k].n, g[k].alloc / m, sd(&g[k]), g[k].unalloc / m,
                                 g[k].frag / m, g[k].frag_pct / m, g[k].failed / m, g[k].final / m);
        }
    } else {
        rc |= loom_buf_appendf(out, "%s%-12s %5s %10s %12s %12s %12s %12s %8s %6s %6s\n",
                               multi ? "trace                      " : "", "policy", "seeds",
                               "completed", "mean JCT s", "mean wait s", "p99 wait s", "makespan s",
                               "util %", "unfit", "stuck");
        for (size_t k = 0; k < ng; k++) {
            double m = (double)g[k].n;
            if (multi)
                rc |= loom_buf_appendf(out, "%-27s", base_name(g[k].trace));
            rc |= loom_buf_appendf(
                out, "%-12s %5zu %10.0f %12.0f %12.0f %12.0f %12.0f %8.2f %6.0f %6.0f\n",
                g[k].policy, g[k].n, g[k].completed / m, g[k].jct / m, g[k].wait / m, g[k].p99 / m,
                g[k].makespan / m, g[k].util / m, g[k].unfit / m, g[k].never / m);
            if (g[k].refused > 0)
                rc |= loom_buf_appendf(out, "%*s  refused at arrival by a submission quota: %.0f\n",
                                       multi ? 27 : 0, "", g[k].refused / m);
            if (g[k].users) {
                rc |= loom_buf_appendf(out,
                                       "%*s  users %u, Jain's index of mean JCT %.3f; "
                                       "mean JCT s by user:",
                                       multi ? 27 : 0, "", g[k].users, g[k].jain / m);
                for (uint32_t u = 0; u < g[k].users; u++)
                    rc |= loom_buf_appendf(out, " %.0f", g[k].user_jct[u] / m);
                rc |= loom_buf_appendf(out, "\n%*s  GPU time by user:", multi ? 27 : 0, "");
                for (uint32_t u = 0; u < g[k].users; u++)
                    rc |= loom_buf_appendf(out, " %.3f", g[k].user_gpu[u] / m);
                rc |= loom_buf_appendf(out, "; while all wait (%.0f s):", g[k].backlog_s / m);
                for (uint32_t u = 0; u < g[k].users; u++)
                    rc |= loom_buf_appendf(out, " %.3f", g[k].user_backlog[u] / m);
                rc |= loom_buf_append_str(out, "\n");
            }
        }
    }
    free(g);
    return rc ? LOOM_ENOMEM : LOOM_OK;
}

int loom_sim_report_json(loom_buf_t *out, const loom_sim_run_t *runs, size_t n, bool dynamic)
{
    group_t *g = calloc(n ? n : 1, sizeof *g);
    json_t *root = json_object();
    int rc = LOOM_ENOMEM;
    if (!g || !root)
        goto out;
    bool multi;
    size_t ng = build_groups(runs, n, g, &multi);
    for (size_t k = 0; k < ng; k++) {
        double m = (double)g[k].n;
        json_t *o;
        if (!dynamic) {
            o = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:i,s:f}", "alloc_at_100",
                          g[k].alloc / m, "alloc_at_100_sd", sd(&g[k]), "alloc_at_100_min",
                          g[k].alloc_min, "alloc_at_100_max", g[k].alloc_max, "unalloc_gpus_at_100",
                          g[k].unalloc / m, "frag_gpus_at_100", g[k].frag / m, "frag_pct_at_100",
                          g[k].frag_pct / m, "failed_tasks", g[k].failed / m, "final_alloc",
                          g[k].final / m, "seeds", (json_int_t)g[k].n, "seconds", g[k].secs);
        } else {
            o = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:i,s:f}", "completed",
                          g[k].completed / m, "mean_jct_s", g[k].jct / m, "mean_wait_s",
                          g[k].wait / m, "p99_wait_s", g[k].p99 / m, "makespan_s",
                          g[k].makespan / m, "mean_util_pct", g[k].util / m, "unfit",
                          g[k].unfit / m, "never_started", g[k].never / m, "seeds",
                          (json_int_t)g[k].n, "seconds", g[k].secs);
            if (o) {
                json_object_set_new(o, "p99_jct_s", json_real(g[k].p99_jct / m));
                json_object_set_new(o, "cancelled", json_real(g[k].cancelled / m));
                json_object_set_new(o, "refused", json_real(g[k].refused / m));
            }
            if (o && g[k].users) {
                json_t *uj = json_array(), *ug = json_array(), *ub = json_array();
                for (uint32_t u = 0; u < g[k].users; u++) {
                    json_array_append_new(uj, json_real(g[k].user_jct[u] / m));
                    json_array_append_new(ug, json_real(g[k].user_gpu[u] / m));
                    json_array_append_new(ub, json_real(g[k].user_backlog[u] / m));
                }
                json_object_set_new(o, "users", json_integer(g[k].users));
                json_object_set_new(o, "jain_jct", json_real(g[k].jain / m));
                json_object_set_new(o, "user_mean_jct_s", uj);
                json_object_set_new(o, "user_gpu_part", ug);
                json_object_set_new(o, "user_contended_gpu_part", ub);
                json_object_set_new(o, "contended_s", json_real(g[k].backlog_s / m));
            }
        }
        if (!o)
            goto out;
        json_t *parent = root;
        if (multi) {
            const char *tn = base_name(g[k].trace);
            parent = json_object_get(root, tn);
            if (!parent) {
                parent = json_object();
                if (!parent || json_object_set_new(root, tn, parent)) {
                    json_decref(o);
                    goto out;
                }
            }
        }
        if (json_object_set_new(parent, g[k].policy, o))
            goto out;
    }
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    if (!s)
        goto out;
    rc = loom_buf_append_str(out, s) || loom_buf_append_char(out, '\n') ? LOOM_ENOMEM : LOOM_OK;
    free(s);
out:
    json_decref(root);
    free(g);
    return rc;
}

static int mkdir_p(const char *dir, loom_err_t *err)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) && errno != EEXIST)
                return loom_err_errno(err, LOOM_EIO, errno, "mkdir %s", tmp);
            *p = '/';
        }
    }
    if (mkdir(tmp, 0755) && errno != EEXIST)
        return loom_err_errno(err, LOOM_EIO, errno, "mkdir %s", tmp);
    return LOOM_OK;
}

int loom_sim_write_csvs(const char *dir, const loom_sim_run_t *runs, size_t n, bool dynamic,
                        bool multi_trace, loom_err_t *err)
{
    int rc = mkdir_p(dir, err);
    if (rc)
        return rc;
    loom_buf_t b = LOOM_BUF_INIT;
    for (size_t i = 0; i < n && !rc; i++) {
        const loom_sim_run_t *r = &runs[i];
        loom_buf_reset(&b);
        if (!dynamic) {
            rc = loom_buf_append_str(&b, "arrival,arrived_pct,alloc_pct,frag_gpus,failed\n");
            for (size_t k = 0; k < r->packing.npoints && !rc; k++) {
                const loom_sim_point_t *p = &r->packing.points[k];
                rc = loom_buf_appendf(&b, "%zu,%.4f,%.4f,%.3f,%d\n", k + 1, p->arrived_pct,
                                      p->alloc_pct, p->frag_gpus, p->failed);
            }
        } else {
            rc = loom_buf_append_str(&b, "time_s,gpu_alloc_pct,pending,running\n");
            for (size_t k = 0; k < r->dynamic.ntimeline && !rc; k++) {
                const loom_sim_util_point_t *p = &r->dynamic.timeline[k];
                rc = loom_buf_appendf(&b, "%.3f,%.4f,%u,%u\n", p->t_s, p->gpu_pct, p->pending,
                                      p->running);
            }
        }
        if (rc) {
            rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
            break;
        }
        char path[4096], tname[256];
        snprintf(tname, sizeof tname, "%s", base_name(r->trace_name));
        char *dot = strrchr(tname, '.');
        if (dot)
            *dot = '\0';
        if (multi_trace)
            snprintf(path, sizeof path, "%s/%s-%s-seed%llu.csv", dir, tname, r->policy,
                     (unsigned long long)r->seed);
        else
            snprintf(path, sizeof path, "%s/%s-seed%llu.csv", dir, r->policy,
                     (unsigned long long)r->seed);
        rc = loom_write_file_atomic(path, b.data ? b.data : "", b.len, 0644, err);
    }
    loom_buf_free(&b);
    return rc;
}

/* Mean over a policy's runs of a per-arrival value on a 1% grid of the
 * arrived workload (step function: the last record at or below x). */
#define GRID 131
static void grid_mean(const loom_sim_run_t *runs, size_t n, const char *policy, int what,
                      double *out)
{
    size_t cnt[GRID] = {0};
    for (int x = 0; x < GRID; x++)
        out[x] = 0;
    for (size_t i = 0; i < n; i++) {
        if (!same(runs[i].policy, policy) || !same(runs[i].trace_name, runs[0].trace_name))
            continue;
        const loom_sim_packing_result_t *p = &runs[i].packing;
        size_t k = 0;
        double last = 0;
        for (int x = 0; x < GRID; x++) {
            while (k < p->npoints && p->points[k].arrived_pct <= (float)x) {
                last = what == 0 ? p->points[k].alloc_pct : p->points[k].frag_gpus;
                k++;
            }
            if (k == 0)
                continue; /* before this run's first record */
            if (k == p->npoints && p->points[p->npoints - 1].arrived_pct < x)
                continue; /* beyond this run */
            out[x] += last;
            cnt[x]++;
        }
    }
    for (int x = 0; x < GRID; x++)
        out[x] = cnt[x] ? out[x] / (double)cnt[x] : NAN;
}

int loom_sim__gnuplot(const char *script, loom_err_t *err)
{
    pid_t pid;
    char *argv[] = {"gnuplot", (char *)script, NULL};
    int rc = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
    if (rc)
        return loom_err_errno(err, LOOM_EUNAVAIL, rc,
                              "cannot run gnuplot (install Debian's gnuplot-nox)");
    int st;
    if (waitpid(pid, &st, 0) < 0)
        return loom_err_errno(err, LOOM_EIO, errno, "waitpid gnuplot");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return loom_err_set(err, LOOM_EIO, "gnuplot %s failed (status %d)", script, st);
    return LOOM_OK;
}

int loom_sim_plot(const char *dir, const loom_sim_run_t *runs, size_t n, loom_err_t *err)
{
    int rc = mkdir_p(dir, err);
    if (rc)
        return rc;
    const char *pol[PLOT_MAX_POLICIES];
    size_t np = 0;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t k = 0; k < np; k++)
            seen |= same(pol[k], runs[i].policy);
        if (seen || !same(runs[i].trace_name, runs[0].trace_name))
            continue;
        if (np == PLOT_MAX_POLICIES)
            return loom_err_set(err, LOOM_ELIMIT, "plot: more than %d policies in one figure",
                                PLOT_MAX_POLICIES);
        pol[np++] = runs[i].policy;
    }
    static const char *what_name[2] = {"alloc", "frag"};
    static const char *ylabel[2] = {"GPU allocation ratio (%)", "fragmented GPUs"};
    loom_buf_t data = LOOM_BUF_INIT, gp = LOOM_BUF_INIT;
    double *col = malloc(np * GRID * sizeof *col);
    if (!col)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    for (int w = 0; w < 2 && !rc; w++) {
        loom_buf_reset(&data);
        loom_buf_reset(&gp);
        for (size_t k = 0; k < np; k++)
            grid_mean(runs, n, pol[k], w, col + k * GRID);
        loom_buf_append_str(&data, "# arrived_pct");
        for (size_t k = 0; k < np; k++)
            loom_buf_appendf(&data, " %s", pol[k]);
        loom_buf_append_char(&data, '\n');
        for (int x = 0; x < GRID; x++) {
            loom_buf_appendf(&data, "%d", x);
            for (size_t k = 0; k < np; k++) {
                double v = col[k * GRID + x];
                if (isnan(v))
                    loom_buf_append_str(&data, " NaN");
                else
                    loom_buf_appendf(&data, " %.4f", v);
            }
            loom_buf_append_char(&data, '\n');
        }
        char dpath[4096], spath[4096];
        snprintf(dpath, sizeof dpath, "%s/%s.dat", dir, what_name[w]);
        snprintf(spath, sizeof spath, "%s/%s.gp", dir, what_name[w]);
        if ((rc = loom_write_file_atomic(dpath, data.data, data.len, 0644, err)))
            break;
        for (int term = 0; term < 2; term++) {
            loom_buf_appendf(&gp,
                             "set terminal %s size 800,500\nset output '%s/%s.%s'\n"
                             "set xlabel 'arrived workload (%% of GPU capacity)'\nset ylabel '%s'\n"
                             "set key %s top\nset grid\nset datafile missing 'NaN'\n"
                             "set xrange [0:130]\n",
                             term ? "pngcairo" : "svg", dir, what_name[w], term ? "png" : "svg",
                             ylabel[w], w == 0 ? "left" : "right");
            if (w == 0)
                loom_buf_append_str(&gp, "set yrange [0:100]\n");
            loom_buf_append_str(&gp, "plot ");
            for (size_t k = 0; k < np; k++)
                loom_buf_appendf(&gp, "%s'%s' using 1:%zu with lines lw 2 title '%s'",
                                 k ? ", " : "", dpath, k + 2, pol[k]);
            loom_buf_append_str(&gp, "\n");
        }
        if ((rc = loom_write_file_atomic(spath, gp.data, gp.len, 0644, err)))
            break;
        rc = loom_sim__gnuplot(spath, err);
    }
    free(col);
    loom_buf_free(&data);
    loom_buf_free(&gp);
    return rc;
}
