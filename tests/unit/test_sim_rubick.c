/* The Rubick experiment on a small workload from a pod list: every job
 * completes under every policy, none falls behind its guarantee, the
 * black-box policy's JCTs are never shorter than the jobs' own run times,
 * runs are deterministic for a seed, and the report writes its table, JCT
 * list and figures; bad inputs are named. */
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#include "loom/sim.h"

typedef struct fx {
    loom_rubick_device_t dev;
    loom_sched_cluster_t c;
    loom_sim_trace_t pods;
} fx_t;

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    loom_err_t err;
    assert_int_equal(loom_rubick_device_load("workloads/devices/h200.json", &f->dev, &err),
                     LOOM_OK);
    loom_sched_cluster_init(&f->c);
    for (int i = 0; i < 2; i++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(
            loom_sched_cluster_add_node(&f->c, name, 96000, 1048576, 8, "gpu", 143360, NULL, &err),
            LOOM_OK);
    }
    /* 40 pods: arrivals every 100-ish s, run times from 200 s to 2 h */
    loom_buf_t csv = LOOM_BUF_INIT;
    loom_buf_append_str(&csv, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,"
                              "deletion_time\n");
    for (int i = 0; i < 40; i++)
        loom_buf_appendf(&csv, "p%d,%d,%d,%d,1000,%d,%d\n", i, 8000 * (1 + i % 2), 32768,
                         1 + (i % 5 == 0), 100 + 97 * i, 100 + 97 * i + 200 + (i * 733) % 7000);
    assert_int_equal(loom_sim_pods_parse_csv(csv.data, csv.len, "p.csv", &f->c, &f->pods, &err),
                     LOOM_OK);
    loom_buf_free(&csv);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    loom_sim_trace_free(&f->pods);
    loom_sched_cluster_free(&f->c);
    free(f);
    return 0;
}

static void workload(fx_t *f, bool tuned, loom_sim_rworkload_t *w)
{
    loom_sim_rwl_opts_t o = {.count = 40,
                             .load = 1.5,
                             .seed = 7,
                             .tuned = tuned,
                             .min_s = 120,
                             .max_s = 86400,
                             .cluster_gpus = 16,
                             .node_cpu_milli = 96000,
                             .node_mem_mib = 1048576,
                             .device = &f->dev};
    loom_err_t err;
    assert_int_equal(loom_sim_rubick_workload(&f->pods, &o, w, &err), LOOM_OK);
    assert_int_equal(w->n, 40);
}

static void test_policies(void **state)
{
    fx_t *f = *state;
    loom_sim_rworkload_t w;
    workload(f, false, &w);
    static const char *const pol[] = {"rubick", "elastic",  "synergy", "fixed",
                                      "fifo",   "tiresias", "gandiva"};
    loom_sim_rresult_t res[7];
    loom_rubick_opts_t o = {.device = &f->dev, .reconf_cost_s = 60, .min_gain = 0.05};
    loom_err_t err;
    for (int k = 0; k < 7; k++) {
        assert_int_equal(loom_sim_rubick_run(&f->c, &w, pol[k], &o, 300, 600, &res[k], &err),
                         LOOM_OK);
        assert_int_equal(res[k].completed, 40);
        assert_int_equal(res[k].below_guarantee, 0);
        assert_true(res[k].util_pct > 0 && res[k].util_pct <= 100.0001);
    }
    /* black boxes run at their guarantee: no JCT below the shortest run time */
    double shortest = INFINITY;
    for (size_t i = 0; i < w.n; i++)
        shortest = fmin(shortest, w.jobs[i].duration_s);
    assert_true(res[3].jcts[0] >= shortest * (1 - 1e-9));
    assert_true(res[4].jcts[0] >= shortest * (1 - 1e-9));
    assert_float_equal(res[3].reconfigs_per_job, 0, 0);
    /* deterministic */
    loom_sim_rresult_t again;
    assert_int_equal(loom_sim_rubick_run(&f->c, &w, "rubick", &o, 300, 600, &again, &err), LOOM_OK);
    assert_float_equal(again.mean_jct_s, res[0].mean_jct_s, 0);
    loom_sim_rresult_free(&again);
    /* the report */
    char dir[] = "/tmp/loom-rubick-XXXXXX";
    assert_non_null(mkdtemp(dir));
    if (loom_sim_rubick_report(dir, pol, res, 7, &err) != LOOM_OK)
        assert_int_equal(err.code, LOOM_EUNAVAIL); /* no gnuplot: tables and CSV still */
    char path[256];
    snprintf(path, sizeof path, "%s/jct.csv", dir);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    int lines = 0, ch;
    while ((ch = fgetc(fp)) != EOF)
        lines += ch == '\n';
    fclose(fp);
    assert_int_equal(lines, 1 + 7 * 40);
    static const char *const files[] = {"table.md",    "jct.csv",     "summary.dat",
                                        "figures.gp",  "jct_cdf.svg", "makespan.svg",
                                        "jct_cdf.png", "makespan.png"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    for (int k = 0; k < 7; k++)
        loom_sim_rresult_free(&res[k]);
    loom_sim_rubick_workload_free(&w);
}

static void test_errors(void **state)
{
    fx_t *f = *state;
    loom_sim_rworkload_t w;
    loom_sim_rwl_opts_t o = {.count = 41,
                             .load = 1,
                             .seed = 1,
                             .min_s = 1,
                             .max_s = 10,
                             .cluster_gpus = 16,
                             .node_cpu_milli = 96000,
                             .node_mem_mib = 1048576,
                             .device = &f->dev};
    loom_err_t err;
    assert_int_equal(loom_sim_rubick_workload(&f->pods, &o, &w, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "expected at least 41"));
    workload(f, true, &w);
    loom_rubick_opts_t ro = {.device = &f->dev, .reconf_cost_s = 60};
    loom_sim_rresult_t r;
    assert_int_equal(loom_sim_rubick_run(&f->c, &w, "pollux", &ro, 300, 600, &r, &err),
                     LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "policy 'pollux'"));
    loom_sim_rubick_workload_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policies),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
