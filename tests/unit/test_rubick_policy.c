/* Rubick's policy: admission at the fewest GPUs that reach the guarantee,
 * growth into free GPUs, shrinking to admit a waiting job, no
 * reconfiguration that would make a job end later than at its guarantee
 * or that its remaining work cannot pay for, the
 * black-box modes, and, over many random situations, the guarantee: no
 * start or reconfiguration below the asked configuration's throughput, and
 * decisions that the cluster can carry out. */
#include <math.h>

#include "test_util.h"

#include "loom/rubick.h"

static const loom_rubick_model_t M = {.name = "m",
                                      .params = 1e9,
                                      .flops_per_sample = 6e12,
                                      .act_bytes = 2e9,
                                      .recompute_keep = 0.2,
                                      .mbs_half = 2,
                                      .mfu = 0.5,
                                      .cpu_s_per_sample = 0.002,
                                      .host_base_mib = 2048};
static const loom_rubick_device_t D = {
    .flops = 1e15, .mem_bytes = 80e9, .link_bw = 100e9, .host_bw = 25e9, .adam_s_per_param = 1e-9};

static void cluster(loom_sched_cluster_t *c, int nodes)
{
    loom_sched_cluster_init(c);
    for (int i = 0; i < nodes; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(
            loom_sched_cluster_add_node(c, name, 96000, 1048576, 8, "g", 81920, NULL, NULL),
            LOOM_OK);
    }
}

/* A spec: batch 64, GPUs 1..8, every plan, 2..32 CPUs, 8..512 GiB; asks
 * for gpus with the given plan, 4 CPUs per GPU and 16 GiB per GPU. */
static void spec(loom_rubick_spec_t *s, int gpus, int accum, bool rc, int zero)
{
    json_t *j = json_pack("{s:i, s:{s:i, s:i}, s:[i,i,i,i], s:[b,b], s:[i,i,i,i], s:[b,b],"
                          " s:{s:i, s:i}, s:{s:s, s:s}, s:{s:i, s:b, s:i}}",
                          "global_batch", 64, "gpus", "min", 1, "max", 8, "accumulation", 1, 2, 4,
                          8, "recompute", 0, 1, "zero", 0, 1, 2, 3, "offload", 0, 1, "cpus", "min",
                          2, "max", 32, "memory", "min", "8GiB", "max", "512GiB", "plan",
                          "accumulation", accum, "recompute", rc, "zero", zero);
    assert_non_null(j);
    loom_err_t err;
    assert_int_equal(loom_rubick_spec_parse(j, "/r", s, &err), LOOM_OK);
    json_decref(j);
    assert_int_equal(loom_rubick_spec_check_asked(s, gpus, 4000 * gpus, 16384 * gpus, "/r", &err),
                     LOOM_OK);
}

static void job(loom_rubick_job_t *j, uint64_t id, const loom_rubick_spec_t *s,
                const loom_rubick_opts_t *o)
{
    memset(j, 0, sizeof *j);
    j->id = id;
    j->spec = s;
    j->model = &M;
    j->fit = (loom_rubick_fit_t){1, 1, 0, 1};
    j->remaining = 1e7;
    loom_err_t err;
    assert_int_equal(loom_rubick_job_prepare(j, o, &err), LOOM_OK);
    assert_true(j->guarantee > 0);
}

/* Applies decisions to c as a caller would: old allocations out, new in. */
static void apply(loom_sched_cluster_t *c, loom_rubick_job_t *jobs, size_t n,
                  const loom_rubick_decision_t *d, size_t nd)
{
    for (size_t k = 0; k < nd; k++)
        for (size_t i = 0; i < n; i++)
            if (jobs[i].id == d[k].id && jobs[i].running)
                assert_int_equal(loom_sched_free(c, &jobs[i].alloc, NULL), LOOM_OK);
    for (size_t k = 0; k < nd; k++)
        for (size_t i = 0; i < n; i++) {
            if (jobs[i].id != d[k].id)
                continue;
            const loom_sched_alloc_t *a = &d[k].alloc;
            assert_int_equal(
                loom_sched_alloc(c, a->node, &a->req, a->gpus, a->ngpus, &jobs[i].alloc, NULL),
                LOOM_OK);
            assert_int_equal(d[k].config.plan.gpus, a->ngpus);
            jobs[i].running = true;
            jobs[i].cur = d[k].config;
        }
}

static const loom_rubick_opts_t OPTS = {LOOM_RUBICK_FULL, &D, 60, 0.05, 0};

static void test_admit_and_grow(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    cluster(&c, 1);
    loom_rubick_spec_t s;
    spec(&s, 2, 4, true, 3); /* a poor plan: recomputation, ZeRO-3, accumulation */
    loom_rubick_job_t j;
    job(&j, 1, &s, &OPTS);
    loom_rubick_decision_t d[1];
    size_t nd;
    loom_err_t err;
    assert_int_equal(loom_rubick_decide(&c, &j, 1, &OPTS, d, &nd, &err), LOOM_OK);
    assert_int_equal(nd, 1);
    assert_true(d[0].start);
    /* alone on the node, it takes all eight GPUs with a better plan */
    assert_int_equal(d[0].config.plan.gpus, 8);
    assert_true(d[0].samples_per_s > 3 * j.guarantee);
    loom_rubick_estimate_t e;
    loom_rubick_predict(&M, &D, NULL, 64, &d[0].config, &e);
    assert_float_equal(e.samples_per_s, d[0].samples_per_s, 1e-9);
    loom_sched_cluster_free(&c);
}

static void test_fixed_mode(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    cluster(&c, 1);
    loom_rubick_opts_t o = OPTS;
    o.mode = LOOM_RUBICK_FIXED;
    loom_rubick_spec_t s;
    spec(&s, 2, 4, true, 3);
    loom_rubick_job_t j;
    job(&j, 1, &s, &o);
    loom_rubick_decision_t d[1];
    size_t nd;
    assert_int_equal(loom_rubick_decide(&c, &j, 1, &o, d, &nd, NULL), LOOM_OK);
    assert_int_equal(nd, 1);
    assert_int_equal(d[0].config.plan.gpus, 2);
    assert_int_equal(d[0].config.plan.accum, 4);
    assert_true(d[0].config.plan.recompute);
    assert_int_equal(d[0].config.plan.zero, 3);
    assert_int_equal(d[0].config.cpu_milli, 8000);
    assert_float_equal(d[0].samples_per_s, j.guarantee, 1e-9);
    loom_sched_cluster_free(&c);
}

/* A running job on 2 GPUs of an otherwise idle node. */
static void running(loom_sched_cluster_t *c, loom_rubick_job_t *j, const loom_rubick_spec_t *s)
{
    job(j, 1, s, &OPTS);
    loom_rubick_decision_t d[1];
    size_t nd;
    loom_rubick_opts_t fixed = OPTS;
    fixed.mode = LOOM_RUBICK_FIXED;
    assert_int_equal(loom_rubick_decide(c, j, 1, &fixed, d, &nd, NULL), LOOM_OK);
    apply(c, j, 1, d, nd);
}

static void test_no_reconfig_late_or_without_gain(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    cluster(&c, 1);
    loom_rubick_spec_t s;
    spec(&s, 2, 4, true, 3);
    loom_rubick_job_t j;
    running(&c, &j, &s);
    loom_rubick_decision_t d[1];
    size_t nd;
    /* behind its guarantee by just enough that even the fastest configuration
     * could not make up for a pause: it would end late, so it stays */
    double best = 0;
    for (int g = 1; g <= 8; g++)
        for (int k = 0; k < LOOM_RUBICK_CPU_STEPS; k++)
            best = fmax(best, j.table[g][k].samples_per_s);
    j.remaining = j.guarantee * 3600;
    j.lead = j.guarantee * (OPTS.reconf_cost_s + j.remaining / best) - j.remaining - 1;
    assert_int_equal(loom_rubick_decide(&c, &j, 1, &OPTS, d, &nd, NULL), LOOM_OK);
    assert_int_equal(nd, 0);
    /* a lead, but so little left that the restart costs more than it saves */
    j.lead = j.guarantee * 1000;
    j.remaining = j.guarantee * 30; /* 30 s left, the pause is 60 s */
    assert_int_equal(loom_rubick_decide(&c, &j, 1, &OPTS, d, &nd, NULL), LOOM_OK);
    assert_int_equal(nd, 0);
    /* a lead and much left: it grows */
    j.remaining = j.guarantee * 3600;
    assert_int_equal(loom_rubick_decide(&c, &j, 1, &OPTS, d, &nd, NULL), LOOM_OK);
    assert_int_equal(nd, 1);
    assert_false(d[0].start);
    assert_true(d[0].config.plan.gpus > 2);
    assert_true(d[0].samples_per_s > j.guarantee);
    loom_sched_cluster_free(&c);
}

static void test_shrink_to_admit(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    cluster(&c, 1);
    loom_rubick_spec_t s1, s2;
    spec(&s1, 2, 4, true, 3);
    spec(&s2, 4, 1, false, 0);
    loom_rubick_job_t jobs[2];
    job(&jobs[0], 1, &s1, &OPTS);
    job(&jobs[1], 2, &s2, &OPTS);
    loom_rubick_decision_t d[2];
    size_t nd;
    /* job 1 alone takes the node */
    assert_int_equal(loom_rubick_decide(&c, jobs, 1, &OPTS, d, &nd, NULL), LOOM_OK);
    apply(&c, jobs, 1, d, nd);
    assert_int_equal(jobs[0].cur.plan.gpus, 8);
    /* job 2 arrives; job 1 has a lead: it gives GPUs back, both at or above their guarantee */
    jobs[0].lead = jobs[0].guarantee * 600;
    assert_int_equal(loom_rubick_decide(&c, jobs, 2, &OPTS, d, &nd, NULL), LOOM_OK);
    assert_int_equal(nd, 2);
    for (size_t k = 0; k < nd; k++) {
        const loom_rubick_job_t *j = &jobs[d[k].id - 1];
        assert_true(d[k].samples_per_s >= j->guarantee);
        assert_true(d[k].start == (d[k].id == 2));
    }
    apply(&c, jobs, 2, d, nd);
    assert_true(jobs[0].cur.plan.gpus < 8);
    assert_int_equal(loom_sched_cluster_check(&c, NULL, 0, NULL), LOOM_OK);
    /* without a lead it would have kept its GPUs and job 2 would wait */
    loom_sched_cluster_free(&c);
}

static void test_guarantee_random(void **state)
{
    (void)state;
    loom_rng_t rng;
    loom_rng_init(&rng, 22, 0);
    enum { N = 12 };
    static const loom_rubick_mode_t modes[] = {LOOM_RUBICK_FIXED, LOOM_RUBICK_ELASTIC,
                                               LOOM_RUBICK_SYNERGY, LOOM_RUBICK_FULL};
    for (int round = 0; round < 40; round++) {
        loom_rubick_opts_t o = OPTS;
        o.mode = modes[round % 4];
        loom_sched_cluster_t c;
        cluster(&c, 2);
        static loom_rubick_spec_t specs[N];
        static loom_rubick_job_t jobs[N];
        for (int i = 0; i < N; i++) {
            do { /* an asked plan that fits the device */
                int g = 1 << loom_rng_below(&rng, 3);
                int a = 1 << loom_rng_below(&rng, 3);
                spec(&specs[i], g, a, loom_rng_below(&rng, 2), (int)loom_rng_below(&rng, 4));
                memset(&jobs[i], 0, sizeof jobs[i]);
                jobs[i] = (loom_rubick_job_t){
                    .id = (uint64_t)i + 1, .spec = &specs[i], .model = &M, .fit = {1, 1, 0, 1}};
            } while (loom_rubick_job_prepare(&jobs[i], &o, NULL) != LOOM_OK);
            jobs[i].remaining = jobs[i].guarantee * (double)(60 + loom_rng_below(&rng, 7200));
        }
        /* jobs arrive in three waves; running ones gain random leads between */
        for (int wave = 1; wave <= 3; wave++) {
            loom_rubick_decision_t d[N];
            size_t nd;
            size_t n = (size_t)(N * wave / 3);
            assert_int_equal(loom_rubick_decide(&c, jobs, n, &o, d, &nd, NULL), LOOM_OK);
            for (size_t k = 0; k < nd; k++) {
                loom_rubick_job_t *j = &jobs[d[k].id - 1];
                assert_true(d[k].samples_per_s >= j->guarantee * (1 - 1e-12));
                loom_rubick_estimate_t e;
                loom_rubick_predict(&M, &D, NULL, 64, &d[k].config, &e);
                assert_true(e.fits);
                assert_float_equal(e.samples_per_s, d[k].samples_per_s, 1e-6);
                if (!d[k].start) {
                    assert_true(j->running);
                    assert_true(o.mode != LOOM_RUBICK_FIXED);
                    /* the pause is made up: it ends no later than at its guarantee */
                    assert_true(o.reconf_cost_s + j->remaining / d[k].samples_per_s <=
                                (j->remaining + j->lead) / j->guarantee * (1 + 1e-9));
                }
            }
            apply(&c, jobs, n, d, nd);
            assert_int_equal(loom_sched_cluster_check(&c, NULL, 0, NULL), LOOM_OK);
            for (size_t i = 0; i < n; i++)
                if (jobs[i].running)
                    jobs[i].lead = jobs[i].guarantee * (double)loom_rng_below(&rng, 200);
        }
        loom_sched_cluster_free(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_admit_and_grow),
        cmocka_unit_test(test_fixed_mode),
        cmocka_unit_test(test_no_reconfig_late_or_without_gain),
        cmocka_unit_test(test_shrink_to_admit),
        cmocka_unit_test(test_guarantee_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
