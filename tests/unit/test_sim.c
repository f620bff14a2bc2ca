/* sim: trace parsing (good input and clear errors), and the simulator's
 * bookkeeping on small hand-built traces with outcomes worked out by hand,
 * run with the debug check after every event. */
#include <math.h>
#include <stdio.h>

#include "test_util.h"

#include "loom/runtime.h"
#include "loom/sim.h"

#define S(x) x, strlen(x)

static const char *nodes_csv = "sn,cpu_milli,memory_mib,gpu,model\n"
                               "n0,8000,65536,2,V100\r\n"
                               "\"n,1\",4000,32768,1,T4\n";

static void test_nodes_csv(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    loom_err_t err;
    assert_int_equal(loom_sim_nodes_parse_csv(S(nodes_csv), "nodes.csv", &c, &err), 0);
    assert_int_equal(c.nnodes, 2);
    assert_string_equal(c.nodes[1].name, "n,1");
    assert_int_equal(c.gpu_milli_total, 3000);
    /* errors name the file, line and column; nothing is added */
    const char *bad[] = {
        "sn,cpu_milli,memory_mib,gpu\nx,12a,1,1\n",          /* bad integer */
        "sn,cpu_milli,gpu,model\nx,1,1,T4\n",                /* missing column */
        "sn,cpu_milli,memory_mib,gpu,model\nx,1,1,1\n",      /* too few fields */
        "sn,cpu_milli,memory_mib,gpu,model\n\"x,1,1,1,T4\n", /* open quote */
        "sn,cpu_milli,memory_mib,gpu,model\nx,1,1,99,T4\n",  /* 99 GPUs */
        "",
        "sn,cpu_milli,memory_mib,gpu,model\n",
    };
    const char *want[] = {"nodes.csv:2:3: cpu_milli '12a': expected an integer",
                          "header lacks column 'memory_mib'",
                          "nodes.csv:2: 4 fields, expected 5",
                          "nodes.csv:2:1: unterminated quoted field",
                          "gpu '99': out of range",
                          "empty file",
                          "no nodes"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(loom_sim_nodes_parse_csv(S(bad[i]), "nodes.csv", &c, &err), LOOM_EINVAL);
        if (!strstr(err.msg, want[i]))
            fail_msg("case %zu: got '%s', want '%s'", i, err.msg, want[i]);
        assert_int_equal(c.nnodes, 2);
    }
    loom_sched_cluster_free(&c);
}

static void test_pods_csv(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    assert_int_equal(loom_sim_nodes_parse_csv(S(nodes_csv), "nodes.csv", &c, NULL), 0);
    loom_sim_trace_t t = {0};
    loom_err_t err;
    const char *full = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                       "creation_time,deletion_time,scheduled_time\n"
                       "p0,1000,100,1,500,T4|V100,LS,Running,10,110,20\n"
                       "p1,2000,100,0,0,,BE,Pending,30,40,\n"
                       "p2,2000,100,2,1000,A100,LS,Running,5,100,5\n";
    assert_int_equal(loom_sim_pods_parse_csv(S(full), "pods.csv", &c, &t, &err), 0);
    assert_int_equal(t.n, 3);
    assert_int_equal(t.tasks[0].req.gpu_milli, 500);
    assert_int_equal(t.tasks[0].req.gpu_types, 3);        /* V100 = bit 0, T4 = bit 1 */
    assert_true(fabs(t.tasks[0].duration_s - 90) < 1e-9); /* deletion - scheduled */
    assert_true(fabs(t.tasks[1].duration_s - 10) < 1e-9); /* no schedule: from creation */
    assert_true(t.tasks[2].req.gpu_types & LOOM_SCHED_TYPE_UNKNOWN);
    /* the multigpu variant: five columns only */
    const char *five = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np3,1,1,8,1000\n";
    assert_int_equal(loom_sim_pods_parse_csv(S(five), "m.csv", &c, &t, &err), 0);
    assert_int_equal(t.n, 4);
    assert_true(t.tasks[3].duration_s < 0);
    const char *bad[] = {
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,2,500\n",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\np,1,1,1,500,-3\n",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,1001\n",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,5\"0\n",
    };
    const char *want[] = {"m.csv:2: pod 'p': a share of a GPU", "creation_time '-3'",
                          "gpu_milli '1001': out of range", "m.csv:2:10: unexpected '\"' inside"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(loom_sim_pods_parse_csv(S(bad[i]), "m.csv", &c, &t, &err), LOOM_EINVAL);
        if (!strstr(err.msg, want[i]))
            fail_msg("case %zu: got '%s', want '%s'", i, err.msg, want[i]);
        assert_int_equal(t.n, 4);
    }
    loom_sim_trace_free(&t);
    loom_sched_cluster_free(&c);
}

static void test_jsonl(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    assert_int_equal(loom_sim_nodes_parse_csv(S(nodes_csv), "nodes.csv", &c, NULL), 0);
    loom_sim_trace_t t = {0};
    loom_err_t err;
    const char *good =
        "{\"id\": \"a\", \"due\": \"1m\", \"duration\": \"1h\", \"resources\": {\"cpus\": 4, "
        "\"mem\": \"16GiB\", \"gpus\": 2, \"gpu_types\": [\"V100\"]}}\n"
        "\n"
        "{\"due_s\": 5, \"gpus\": 0.25, \"gpu_mem\": \"4GiB\", \"priority\": 3, \"estimate_s\": "
        "60}\n";
    assert_int_equal(loom_sim_jsonl_parse(S(good), "m.jsonl", &c, &t, &err), 0);
    assert_int_equal(t.n, 2);
    assert_string_equal(t.tasks[0].name, "a");
    assert_true(fabs(t.tasks[0].create_s - 60) < 1e-9);
    assert_true(fabs(t.tasks[0].duration_s - 3600) < 1e-9);
    assert_int_equal(t.tasks[0].req.cpu_milli, 4000);
    assert_int_equal(t.tasks[0].req.mem_mib, 16384);
    assert_int_equal(t.tasks[0].req.num_gpus, 2);
    assert_int_equal(t.tasks[0].req.gpu_types, 1);
    assert_int_equal(t.tasks[1].req.num_gpus, 1);
    assert_int_equal(t.tasks[1].req.gpu_milli, 250);
    assert_int_equal(t.tasks[1].req.gpu_mem_mib, 4096);
    assert_int_equal(t.tasks[1].priority, 3);
    assert_string_equal(t.tasks[1].name, "line3");
    const char *bad[] = {"{\"gpus\": 1}\n",
                         "{\"due\": 1}\n{\"due\": 2, \"gpus\": \"x\"}\n",
                         "{\"due\": 1}\n{\"due\": 2,\n",
                         "[1]\n",
                         "{\"due\": \"soon\"}\n",
                         "{\"due\": 1, \"gpus\": 1.5}\n"};
    const char *want[] = {"m.jsonl:1: missing 'due'", "m.jsonl:2/gpus: expected a number",
                          "m.jsonl:2:10: ",           "m.jsonl:1: expected an object",
                          "m.jsonl:1/due:",           "whole number"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(loom_sim_jsonl_parse(S(bad[i]), "m.jsonl", &c, &t, &err), LOOM_EINVAL);
        if (!strstr(err.msg, want[i]))
            fail_msg("case %zu: got '%s', want '%s'", i, err.msg, want[i]);
        assert_int_equal(t.n, 2);
    }
    loom_sim_trace_free(&t);
    loom_sched_cluster_free(&c);
}

/* One node (8 CPUs, 2 GPUs); every task is (2 CPUs, 600 milli-GPU). With
 * inflate 1.2 the draws stop when 2400 milli-GPU have arrived: four tasks.
 * The first two take GPU 0 and GPU 1 (600 each), the next two find 400 left
 * on each GPU and fail. Arrived 30, 60, 90, 120%; allocated 30, 60, 60, 60%.
 * At 100% (the fourth arrival): 0.8 GPUs idle, all of them fragments for the
 * only task shape (no GPU has 600 free). */
static void test_packing_small(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    assert_int_equal(loom_sched_cluster_add_node(&c, "n", 8000, 0, 2, "G", 0, NULL, NULL), 0);
    loom_sim_trace_t t = {0};
    const char *pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,2000,0,1,600\n";
    assert_int_equal(loom_sim_pods_parse_csv(S(pods), "p.csv", &c, &t, NULL), 0);
    const char *policies[] = {"random",  "dotprod", "clustering", "packing",
                              "bestfit", "fgd",     "fgd-cpu",    "firstfit"};
    for (size_t k = 0; k < sizeof policies / sizeof policies[0]; k++) {
        loom_sim_opts_t o = {0};
        o.policy = policies[k];
        o.seed = 42;
        o.inflate = 1.2;
        o.debug_check = true;
        o.keep_points = true;
        loom_sim_packing_result_t r;
        loom_err_t err;
        if (loom_sim_packing(&c, &t, &o, &r, &err))
            fail_msg("%s: %s", policies[k], err.msg);
        assert_int_equal(r.arrivals, 4);
        assert_int_equal(r.failed, 2);
        assert_int_equal(r.npoints, 4);
        float arrived[] = {30, 60, 90, 120}, alloc[] = {30, 60, 60, 60};
        for (int i = 0; i < 4; i++) {
            assert_true(fabsf(r.points[i].arrived_pct - arrived[i]) < 1e-3);
            assert_true(fabsf(r.points[i].alloc_pct - alloc[i]) < 1e-3);
        }
        assert_int_equal(r.points[2].failed, 1);
        assert_true(fabs(r.alloc_at_100 - 60) < 1e-9);
        assert_true(fabs(r.unalloc_at_100 - 0.8) < 1e-9);
        assert_true(fabs(r.frag_at_100 - 0.8) < 1e-9);
        assert_true(fabs(r.frag_pct_at_100 - 100) < 1e-9);
        assert_true(fabs(r.failed_gpus - 1.2) < 1e-9);
        loom_sim_packing_result_free(&r);
    }
    /* a trace without GPU demand cannot drive packing */
    loom_sim_trace_t cpu = {0};
    const char *cpus = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,2000,0,0,0\n";
    assert_int_equal(loom_sim_pods_parse_csv(S(cpus), "c.csv", &c, &cpu, NULL), 0);
    loom_sim_opts_t o = {.policy = "fgd", .seed = 1};
    loom_sim_packing_result_t r;
    loom_err_t err;
    assert_int_equal(loom_sim_packing(&c, &cpu, &o, &r, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "requests no GPU"));
    loom_sim_trace_free(&cpu);
    loom_sim_trace_free(&t);
    loom_sched_cluster_free(&c);
}

/* One node with one GPU. A (t=0, 10 s, 1 GPU), B (t=1, 5 s, 1 GPU, estimate
 * 5), C (t=2, 1 s, half a GPU, estimate 1), D (t=3, 2 GPUs: fits nowhere).
 * fifo: A 0-10, B 10-15, C 15-16. JCT 10, 14, 14; waits 0, 9, 13; makespan
 * 16; GPU use 100% for 15 s and 50% for 1 s: 15.5/16 = 96.875%.
 * sjf: at t=10 C (estimate 1) goes first: C 10-11, B 11-16. JCT 10, 15, 9;
 * waits 0, 10, 8. */
static void test_dynamic_small(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    assert_int_equal(loom_sched_cluster_add_node(&c, "n", 8000, 0, 1, "G", 0, NULL, NULL), 0);
    const char *jobs = "{\"id\":\"A\",\"due\":0,\"duration\":10,\"gpus\":1,\"cpus\":1}\n"
                       "{\"id\":\"B\",\"due\":1,\"duration\":5,\"gpus\":1,\"estimate_s\":5}\n"
                       "{\"id\":\"C\",\"due\":2,\"duration\":1,\"gpus\":0.5,\"estimate_s\":1}\n"
                       "{\"id\":\"D\",\"due\":3,\"duration\":1,\"gpus\":2}\n";
    loom_sim_trace_t t = {0};
    loom_err_t err;
    assert_int_equal(loom_sim_jsonl_parse(S(jobs), "j.jsonl", &c, &t, &err), 0);
    loom_sim_opts_t o = {0};
    o.policy = "bestfit";
    o.debug_check = true;
    o.keep_points = true;
    o.queue = "fifo";
    loom_sim_dynamic_result_t r;
    if (loom_sim_dynamic(&c, &t, &o, &r, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(r.jobs, 4);
    assert_int_equal(r.completed, 3);
    assert_int_equal(r.unfit, 1);
    assert_int_equal(r.never_started, 0);
    assert_true(fabs(r.mean_jct_s - 38.0 / 3) < 1e-9);
    assert_true(fabs(r.mean_wait_s - 22.0 / 3) < 1e-9);
    assert_true(fabs(r.makespan_s - 16) < 1e-9);
    assert_true(fabs(r.mean_util_pct - 96.875) < 1e-9);
    assert_true(r.ntimeline > 0);
    loom_sim_dynamic_result_free(&r);
    o.queue = "sjf";
    if (loom_sim_dynamic(&c, &t, &o, &r, &err))
        fail_msg("%s", err.msg);
    assert_true(fabs(r.mean_jct_s - 34.0 / 3) < 1e-9);
    assert_true(fabs(r.mean_wait_s - 18.0 / 3) < 1e-9);
    assert_true(fabs(r.makespan_s - 16) < 1e-9);
    loom_sim_dynamic_result_free(&r);
    loom_sim_trace_free(&t);
    loom_sched_cluster_free(&c);
}

/* loom sim replays dependencies, holds, begin times and quotas through the
 * runtime (docs/scheduling.md, loom JSONL): one node of 4 GPUs, 1-GPU
 * jobs. Without them FIFO starts a b c d e f at once (4 GPUs: a b f c at
 * 0, d at 2 ...). With them: b shares account 1 with a (running=1) and c
 * waits for a (afterok), so both start only when a ends at 10; e is held
 * until 4, f may not begin before 7; g (afternotok:1) is cancelled when a
 * ends well. Start order: a d e f b c. */
typedef struct starts {
    size_t task[16];
    double at[16];
    size_t n;
} starts_t;

static void on_start_log(void *ctx, size_t task, double t_s, const loom_sched_alloc_t *alloc)
{
    (void)alloc;
    starts_t *s = ctx;
    if (s->n < 16) {
        s->task[s->n] = task;
        s->at[s->n++] = t_s;
    }
}

static void test_dynamic_deps_holds_quotas(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    assert_int_equal(loom_sched_cluster_add_node(&c, "n", 64000, 0, 4, "G", 0, NULL, NULL), 0);
    const char *jobs =
        "{\"id\":\"a\",\"due\":0,\"duration\":10,\"gpus\":1,\"user\":1,\"account\":1}\n"
        "{\"id\":\"b\",\"due\":0,\"duration\":10,\"gpus\":1,\"user\":2,\"account\":1}\n"
        "{\"id\":\"c\",\"due\":1,\"duration\":5,\"gpus\":1,\"dependency\":\"afterok:1\"}\n"
        "{\"id\":\"d\",\"due\":2,\"duration\":5,\"gpus\":1,\"user\":3}\n"
        "{\"id\":\"e\",\"due\":3,\"duration\":1,\"gpus\":1,\"hold\":true,\"release\":4}\n"
        "{\"id\":\"f\",\"due\":0,\"duration\":1,\"gpus\":1,\"begin\":7}\n"
        "{\"id\":\"g\",\"due\":0,\"duration\":1,\"gpus\":1,\"dependency\":\"afternotok:1\"}\n";
    loom_sim_trace_t t = {0};
    loom_err_t err;
    assert_int_equal(loom_sim_jsonl_parse(S(jobs), "j.jsonl", &c, &t, &err), 0);
    loom_runtime_quota_rule_t q;
    assert_int_equal(loom_runtime_quota_parse("account:1=running=1", &q, &err), LOOM_OK);
    starts_t st = {0};
    loom_sim_opts_t o = {.policy = "firstfit", .queue = "fifo", .debug_check = true};
    o.on_start = on_start_log;
    o.on_start_ctx = &st;
    o.quotas = &q;
    o.nquotas = 1;
    loom_sim_dynamic_result_t r;
    if (loom_sim_dynamic(&c, &t, &o, &r, &err))
        fail_msg("%s", err.msg);
    static const size_t order[] = {0, 3, 4, 5, 1, 2};
    static const double at[] = {0, 2, 4, 7, 10, 10};
    assert_int_equal(st.n, 6);
    for (size_t k = 0; k < 6; k++)
        if (st.task[k] != order[k] || st.at[k] != at[k])
            fail_msg("start %zu: task %zu at %g, expected task %zu at %g", k, st.task[k], st.at[k],
                     order[k], at[k]);
    assert_int_equal(r.completed, 6);
    assert_int_equal(r.cancelled, 1);
    loom_sim_dynamic_result_free(&r);
    /* the same trace, no quota: b runs at once */
    st.n = 0;
    o.nquotas = 0;
    if (loom_sim_dynamic(&c, &t, &o, &r, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(st.task[1], 1);
    assert_true(st.at[1] == 0);
    loom_sim_dynamic_result_free(&r);
    /* bad fields are refused, naming them */
    static const char *const bad[] = {
        "{\"due\":0,\"gpus\":1,\"dependency\":\"afterok:x\"}",
        "{\"due\":0,\"gpus\":1,\"user\":0}",
        "{\"due\":0,\"gpus\":1,\"release\":4}",
        "{\"due\":0,\"gpus\":1,\"hold\":1}",
    };
    static const char *const said[] = {"1/dependency", "1/user", "1/release", "1/hold"};
    for (size_t i = 0; i < 4; i++) {
        loom_sim_trace_t b = {0};
        assert_int_equal(loom_sim_jsonl_parse(S(bad[i]), "b.jsonl", &c, &b, &err), LOOM_EINVAL);
        if (!strstr(err.msg, said[i]))
            fail_msg("%s: %s", bad[i], err.msg);
        loom_sim_trace_free(&b);
    }
    loom_sim_trace_free(&t);
    loom_sched_cluster_free(&c);
}

/* Submission quotas in the simulator, as loomd's job.submit judges them:
 * one 1-GPU node; user 3 may have 1 job pending: x runs at 0, y waits,
 * z (at 2) is refused, w (at 11, y started at 10) is taken; user 4 must
 * give a time limit of at most a minute: u (none) and v (2 min) are
 * refused, s (30 s) runs. Without the rules nothing is refused. */
static void test_dynamic_submission_quotas(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    assert_int_equal(loom_sched_cluster_add_node(&c, "n", 64000, 0, 1, "G", 0, NULL, NULL), 0);
    const char *jobs =
        "{\"id\":\"x\",\"due\":0,\"duration\":10,\"gpus\":1,\"user\":3}\n"
        "{\"id\":\"y\",\"due\":1,\"duration\":10,\"gpus\":1,\"user\":3}\n"
        "{\"id\":\"z\",\"due\":2,\"duration\":10,\"gpus\":1,\"user\":3}\n"
        "{\"id\":\"w\",\"due\":11,\"duration\":1,\"gpus\":1,\"user\":3}\n"
        "{\"id\":\"u\",\"due\":3,\"duration\":1,\"gpus\":1,\"user\":4}\n"
        "{\"id\":\"v\",\"due\":3,\"duration\":1,\"gpus\":1,\"user\":4,\"time_limit\":120}\n"
        "{\"id\":\"s\",\"due\":3,\"duration\":1,\"gpus\":1,\"user\":4,\"time_limit\":30}\n";
    loom_sim_trace_t t = {0};
    loom_err_t err;
    assert_int_equal(loom_sim_jsonl_parse(S(jobs), "q.jsonl", &c, &t, &err), 0);
    loom_runtime_quota_rule_t q[2];
    assert_int_equal(loom_runtime_quota_parse("user:3=pending=1", &q[0], &err), LOOM_OK);
    assert_int_equal(loom_runtime_quota_parse("user:4=time=1m", &q[1], &err), LOOM_OK);
    loom_sim_opts_t o = {.policy = "firstfit", .queue = "fifo", .debug_check = true};
    o.quotas = q;
    o.nquotas = 2;
    loom_sim_dynamic_result_t r;
    if (loom_sim_dynamic(&c, &t, &o, &r, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(r.refused, 3);
    assert_int_equal(r.completed, 4);
    loom_sim_dynamic_result_free(&r);
    o.nquotas = 0;
    if (loom_sim_dynamic(&c, &t, &o, &r, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(r.refused, 0);
    assert_int_equal(r.completed, 7);
    loom_sim_dynamic_result_free(&r);
    loom_sim_trace_free(&t);
    loom_sched_cluster_free(&c);
}

/* The must-show case of backfill with reservations in the simulator (as
 * test_backfill_reservation in test_runtime.c): one node of 4 GPUs, an
 * endless stream of one-GPU jobs (one every 25 s from 0 to 2000, each runs
 * its 100 s limit) and a whole-node job W at 80. Greedy backfill starts W
 * only when the stream has dried up (after 2000); EASY and conservative
 * start it at 175, when the four jobs running at 80 reach their limits. */
static void on_start_w(void *ctx, size_t task, double t_s, const loom_sched_alloc_t *alloc)
{
    (void)alloc;
    if (task == 0)
        *(double *)ctx = t_s;
}

static void test_dynamic_backfill_reservation(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    assert_int_equal(loom_sched_cluster_add_node(&c, "n", 64000, 0, 4, "G", 0, NULL, NULL), 0);
    static char jobs[64 * 128];
    size_t len = (size_t)snprintf(jobs, sizeof jobs,
                                  "{\"id\":\"W\",\"due\":80,\"duration\":100,\"gpus\":4,"
                                  "\"time_limit\":100}\n");
    for (int t = 0; t <= 2000; t += 25)
        len += (size_t)snprintf(jobs + len, sizeof jobs - len,
                                "{\"id\":\"s%d\",\"due\":%d,\"duration\":100,\"gpus\":1,"
                                "\"time_limit\":100}\n",
                                t, t);
    assert_true(len < sizeof jobs);
    loom_sim_trace_t t = {0};
    loom_err_t err;
    assert_int_equal(loom_sim_jsonl_parse(jobs, len, "stream.jsonl", &c, &t, &err), 0);
    const int bf[] = {LOOM_RUNTIME_BACKFILL_GREEDY, LOOM_RUNTIME_BACKFILL_EASY,
                      LOOM_RUNTIME_BACKFILL_CONSERVATIVE};
    for (size_t k = 0; k < 3; k++) {
        double w_start = -1;
        loom_sim_opts_t o = {.policy = "firstfit", .queue = "fifo", .debug_check = true};
        o.backfill = bf[k];
        o.on_start = on_start_w;
        o.on_start_ctx = &w_start;
        loom_sim_dynamic_result_t r;
        if (loom_sim_dynamic(&c, &t, &o, &r, &err))
            fail_msg("%s", err.msg);
        assert_int_equal(r.completed, t.n);
        if (k == 0)
            assert_true(w_start > 2000); /* starved while the stream lasted */
        else
            assert_true(w_start == 175);
        loom_sim_dynamic_result_free(&r);
    }
    loom_sim_trace_free(&t);
    loom_sched_cluster_free(&c);
}

static void on_start_s(void *ctx, size_t task, double t_s, const loom_sched_alloc_t *alloc)
{
    (void)alloc;
    if (task == 1)
        *(double *)ctx = t_s;
}

/* Tiresias against FIFO in the dynamic simulation (one GPU, a threshold at
 * 100 GPU-seconds, a preemption costing 10 s): a short job S arriving at
 * 200 behind a long one L (1000 s) waits until L ends under fifo (starts at
 * 1000); under tiresias L has attained 200 (queue 1) and S (queue 0)
 * preempts it at once, ends at 250, and L resumes and ends 10 s late. */
static void test_dynamic_tiresias_preempts(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    assert_int_equal(loom_sched_cluster_add_node(&c, "n", 64000, 0, 1, "G", 0, NULL, NULL), 0);
    static const char jobs[] = "{\"id\":\"L\",\"due\":0,\"duration\":1000,\"gpus\":1}\n"
                               "{\"id\":\"S\",\"due\":200,\"duration\":50,\"gpus\":1}\n";
    loom_sim_trace_t t = {0};
    loom_err_t err;
    assert_int_equal(loom_sim_jsonl_parse(jobs, sizeof jobs - 1, "ls.jsonl", &c, &t, &err), 0);
    const char *queues[] = {"fifo", "tiresias:thresholds=100"};
    const double s_start[] = {1000, 200}, jct[] = {(1000 + 850) / 2.0, (1060 + 50) / 2.0};
    for (size_t k = 0; k < 2; k++) {
        double start = -1;
        loom_sim_opts_t o = {.policy = "firstfit",
                             .queue = queues[k],
                             .debug_check = true,
                             .preempt_cost_s = 10,
                             .on_start = on_start_s,
                             .on_start_ctx = &start};
        loom_sim_dynamic_result_t r;
        if (loom_sim_dynamic(&c, &t, &o, &r, &err))
            fail_msg("%s", err.msg);
        assert_int_equal(r.completed, 2);
        assert_true(start == s_start[k]);
        assert_true(fabs(r.mean_jct_s - jct[k]) < 1e-6);
        loom_sim_dynamic_result_free(&r);
    }
    loom_sim_trace_free(&t);
    loom_sched_cluster_free(&c);
}

/* The real trace, a slice of it, with the debug check after every arrival
 * (no over-commit, conservation, incremental fragmentation = recount). */
static void test_packing_real_trace_checked(void **state)
{
    (void)state;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    loom_err_t err;
    if (loom_sim_nodes_load("openb", &c, &err))
        fail_msg("%s", err.msg);
    loom_sim_trace_t t = {0};
    if (loom_sim_tasks_load("openb-gpuspec33", &c, &t, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(t.n, 8152);
    /* keep 120 nodes so that the checked run stays short */
    for (size_t i = 120; i < c.nnodes; i++) {
        c.gpu_milli_total -= (int64_t)c.nodes[i].ngpus * LOOM_SCHED_MILLI;
        c.cpu_milli_total -= c.nodes[i].cpu_milli;
    }
    c.nnodes = 120;
    const char *policies[] = {"fgd", "fgd-cpu", "clustering"};
    for (size_t k = 0; k < 3; k++) {
        loom_sim_opts_t o = {0};
        o.policy = policies[k];
        o.seed = 7;
        o.debug_check = true;
        loom_sim_packing_result_t r;
        if (loom_sim_packing(&c, &t, &o, &r, &err))
            fail_msg("%s: %s", policies[k], err.msg);
        assert_true(r.alloc_at_100 > 50 && r.alloc_at_100 <= 100);
        assert_true(r.failed > 0);
        loom_sim_packing_result_free(&r);
    }
    loom_sim_trace_free(&t);
    loom_sched_cluster_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nodes_csv),
        cmocka_unit_test(test_pods_csv),
        cmocka_unit_test(test_jsonl),
        cmocka_unit_test(test_packing_small),
        cmocka_unit_test(test_dynamic_small),
        cmocka_unit_test(test_dynamic_backfill_reservation),
        cmocka_unit_test(test_dynamic_deps_holds_quotas),
        cmocka_unit_test(test_dynamic_submission_quotas),
        cmocka_unit_test(test_dynamic_tiresias_preempts),
        cmocka_unit_test(test_packing_real_trace_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
