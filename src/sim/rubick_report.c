/* sim/rubick_report.c — the Rubick experiment's table, JCT lists and
 * figures (gnuplot: JCT CDF per policy, makespan and average JCT bars). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "loom/sim.h"
#include "sim/sim_int.h"

int loom_sim_rubick_table(loom_buf_t *out, const char *const *pol, const loom_sim_rresult_t *res,
                          size_t n)
{
    int rc = loom_buf_append_str(
        out, "| policy | jobs done | avg JCT (h) | p99 JCT (h) | makespan (h) | GPU util (%) | "
             "reconfigurations / job | below guarantee | GPU-hours |\n"
             "|---|---|---|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < n && !rc; k++)
        rc = loom_buf_appendf(out,
                              "| %s | %zu/%zu | %.2f | %.2f | %.2f | %.1f | %.2f | %zu | %.0f |\n",
                              pol[k], res[k].completed, res[k].jobs, res[k].mean_jct_s / 3600,
                              res[k].p99_jct_s / 3600, res[k].makespan_s / 3600, res[k].util_pct,
                              res[k].reconfigs_per_job, res[k].below_guarantee, res[k].gpu_hours);
    return rc;
}

static int put_file(const char *dir, const char *name, const loom_buf_t *b, loom_err_t *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return loom_write_file_atomic(path, b->data ? b->data : "", b->len, 0644, err);
}

static int figures(const char *dir, const char *const *pol, const loom_sim_rresult_t *res, size_t n,
                   loom_buf_t *gp, loom_err_t *err)
{
    loom_buf_t bars = LOOM_BUF_INIT;
    loom_buf_append_str(&bars, "# policy avg_jct_h makespan_h\n");
    for (size_t k = 0; k < n; k++)
        loom_buf_appendf(&bars, "%s %.4f %.4f\n", pol[k], res[k].mean_jct_s / 3600,
                         res[k].makespan_s / 3600);
    int rc = put_file(dir, "summary.dat", &bars, err);
    loom_buf_free(&bars);
    for (int term = 0; term < 2 && !rc; term++) {
        const char *t = term ? "pngcairo" : "svg", *ext = term ? "png" : "svg";
        loom_buf_appendf(gp,
                         "set terminal %s size 800,500\nset output '%s/jct_cdf.%s'\n"
                         "set datafile separator ','\nset logscale x\nset grid\n"
                         "set xlabel 'job completion time (h)'\nset ylabel 'CDF'\n"
                         "set key right bottom\nplot ",
                         t, dir, ext);
        for (size_t k = 0; k < n; k++)
            loom_buf_appendf(gp,
                             "%s'%s/jct.csv' using ($2/3600):(strcol(1) eq '%s' ? $3 : NaN) "
                             "with lines lw 2 title '%s'",
                             k ? ", " : "", dir, pol[k], pol[k]);
        loom_buf_appendf(gp,
                         "\nunset logscale x\nset datafile separator whitespace\n"
                         "set output '%s/makespan.%s'\nset style data histograms\n"
                         "set style fill solid 0.8\nset boxwidth 0.8\nset xlabel ''\n"
                         "set ylabel 'hours'\nset key left top\nset yrange [0:*]\n"
                         "plot '%s/summary.dat' using 2:xtic(1) title 'average JCT', "
                         "'' using 3 title 'makespan'\nunset style\nset yrange [*:*]\n",
                         dir, ext, dir);
    }
    if (!rc)
        rc = put_file(dir, "figures.gp", gp, err);
    if (!rc) {
        char path[4096];
        snprintf(path, sizeof path, "%s/figures.gp", dir);
        rc = loom_sim__gnuplot(path, err);
    }
    return rc;
}

int loom_sim_rubick_report(const char *dir, const char *const *pol, const loom_sim_rresult_t *res,
                           size_t n, loom_err_t *err)
{
    if (mkdir(dir, 0755) && errno != EEXIST)
        return loom_err_errno(err, LOOM_EIO, errno, "%s", dir);
    loom_buf_t b = LOOM_BUF_INIT, gp = LOOM_BUF_INIT;
    int rc = loom_sim_rubick_table(&b, pol, res, n)
                 ? loom_err_set(err, LOOM_ENOMEM, "out of memory")
                 : put_file(dir, "table.md", &b, err);
    loom_buf_reset(&b);
    if (!rc) {
        loom_buf_append_str(&b, "policy,jct_s,cdf\n");
        for (size_t k = 0; k < n; k++)
            for (size_t i = 0; i < res[k].completed; i++)
                loom_buf_appendf(&b, "%s,%.3f,%.6f\n", pol[k], res[k].jcts[i],
                                 (double)(i + 1) / (double)res[k].completed);
        rc = put_file(dir, "jct.csv", &b, err);
    }
    if (!rc)
        rc = figures(dir, pol, res, n, &gp, err);
    loom_buf_free(&b);
    loom_buf_free(&gp);
    return rc;
}
