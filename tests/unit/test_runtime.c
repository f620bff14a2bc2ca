/* The runtime's step against expectations worked out by hand: queue order
 * and greedy backfill, every pending job considered, pending reasons, down
 * nodes, refused starts, rejects, time-slicing, packing introspection,
 * reconfiguration, the incremental queue order against a full sort, the
 * changes of pending reasons and running quotas, backfill with
 * reservations (EASY and conservative). */
#include <math.h>

#include "test_util.h"

#include "loom/runtime.h"
#include "runtime_fixture.h"

#define MAX_LOG 8192

typedef struct log {
    loom_runtime_action_t a[MAX_LOG];
    char reason[MAX_LOG][128]; /* a->reason is valid only during the call: kept here */
    size_t n;
    uint64_t refuse; /* refuse actions about this id */
} log_t;

static int record(void *ctx, const loom_runtime_action_t *a)
{
    log_t *l = ctx;
    if (l->refuse && a->id == l->refuse)
        return LOOM_EUNAVAIL;
    if (l->n < MAX_LOG) {
        snprintf(l->reason[l->n], sizeof l->reason[l->n], "%s", a->reason);
        l->a[l->n] = *a;
        l->a[l->n].reason = l->reason[l->n];
        l->n++;
    }
    return LOOM_OK;
}

static void cluster(loom_sched_cluster_t *c, int nodes, int gpus)
{
    loom_sched_cluster_init(c);
    for (int i = 0; i < nodes; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(loom_sched_cluster_add_node(c, name, 64000, 65536, gpus, gpus ? "g" : NULL,
                                                     0, NULL, NULL),
                         LOOM_OK);
    }
}

static loom_runtime_t *runtime(int nodes, int gpus, const char *queue, const char *place,
                               double timeslice, bool pack)
{
    loom_sched_cluster_t c;
    cluster(&c, nodes, gpus);
    loom_runtime_config_t cfg = {.queue = queue,
                                 .placement = place,
                                 .placer = {.ties = LOOM_SCHED_TIES_FIRST},
                                 .timeslice_s = timeslice,
                                 .pack_check = pack};
    loom_runtime_t *rt;
    loom_err_t err;
    if (loom_runtime_new(&c, &cfg, &rt, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    loom_sched_cluster_free(&c);
    return rt;
}

static void submit(loom_runtime_t *rt, uint64_t id, int gpus, int32_t milli, double t, int prio)
{
    loom_runtime_job_t j = {.id = id,
                            .req = {.cpu_milli = 1000,
                                    .mem_mib = 1024,
                                    .num_gpus = gpus,
                                    .gpu_milli = gpus ? milli : 0},
                            .submit_s = t,
                            .priority = prio};
    loom_err_t err;
    if (loom_runtime_submit(rt, &j, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
}

/* fifo with greedy backfill: a big job that does not fit does not hold back
 * a small one; the first that waits is Resources, the rest Priority. */
static void test_backfill_reasons(void **state)
{
    loom_runtime_t *rt = runtime(1, 4, "fifo", "firstfit", 0, false);
    static log_t l;
    memset(&l, 0, sizeof l);
    submit(rt, 1, 3, 1000, 1, 0);
    submit(rt, 2, 2, 1000, 2, 0); /* does not fit after 1 */
    submit(rt, 3, 1, 1000, 3, 0); /* backfills */
    submit(rt, 4, 2, 1000, 4, 0); /* does not fit either */
    assert_int_equal(loom_runtime_step(rt, 10, record, &l), 2);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.a[0].kind, LOOM_RUNTIME_START);
    assert_int_equal(l.a[0].id, 1);
    assert_int_equal(l.a[1].id, 3);
    assert_int_equal(l.a[1].alloc.gpus[0], 3);
    assert_int_equal(info(rt, 2).reason, LOOM_RUNTIME_REASON_RESOURCES);
    assert_int_equal(info(rt, 4).reason, LOOM_RUNTIME_REASON_PRIORITY);
    assert_string_equal(loom_runtime_reason_name(info(rt, 4).reason), "Priority");
    assert_int_equal(loom_runtime_npending(rt), 2);
    assert_int_equal(loom_runtime_nrunning(rt), 2);
    /* nothing freed: nothing starts, and no placement is asked again */
    l.n = 0;
    assert_int_equal(loom_runtime_step(rt, 11, record, &l), 0);
    /* 1 ends: 2 starts (first in order), 4 still waits */
    assert_int_equal(loom_runtime_remove(rt, 1, 12), LOOM_OK);
    assert_int_equal(loom_runtime_step(rt, 12, record, &l), 1);
    assert_int_equal(l.a[0].id, 2);
    assert_int_equal(info(rt, 4).reason, LOOM_RUNTIME_REASON_RESOURCES);
    assert_int_equal(loom_runtime_remove(rt, 99, 12), LOOM_ENOTFOUND);
    check(rt);
    loom_runtime_free(rt);
}

/* Every pending job is considered: the one with the highest priority is the
 * last of 5,000 submitted, and it is the one that starts. */
static void test_whole_queue(void **state)
{
    loom_runtime_t *rt = runtime(1, 1, "priority", "firstfit", 0, false);
    static log_t l;
    memset(&l, 0, sizeof l);
    for (uint64_t id = 1; id <= 5000; id++)
        submit(rt, id, 1, 1000, (double)id, id == 5000 ? 10 : 0);
    assert_int_equal(loom_runtime_step(rt, 6000, record, &l), 1);
    assert_int_equal(l.a[0].id, 5000);
    assert_int_equal(loom_runtime_npending(rt), 4999);
    uint64_t ids[3];
    assert_int_equal(loom_runtime_pending_ids(rt, ids, 3), 4999);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[2], 3);
    loom_runtime_free(rt);
}

/* The incremental order (arrivals merged in step after step) equals a full
 * sort of everything, for every queue policy. */
static void test_incremental_order(void **state)
{
    static const char *queues[] = {"fifo", "sjf", "priority", "tiresias"};
    for (size_t q = 0; q < 4; q++) {
        loom_runtime_t *rt = runtime(1, 1, queues[q], "firstfit", 0, false);
        /* fill the GPU so that nothing else starts */
        loom_runtime_job_t big = {.id = 100000, .req = {1000, 1024, 1, 1000, 0, 0}};
        loom_sched_alloc_t at = {.node = 0, .ngpus = 1, .gpus = {0}};
        assert_int_equal(loom_runtime_adopt(rt, &big, &at, false, 0, NULL), LOOM_OK);
        loom_sched_qjob_t qs[600], *ref[600];
        uint64_t seed = 12345;
        size_t n = 0;
        for (int round = 0; round < 6; round++) {
            for (int k = 0; k < 100; k++, n++) {
                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                loom_runtime_job_t j = {.id = n + 1,
                                        .req = {1000, 1024, 1, 1000, 0, 0},
                                        .submit_s = (double)((seed >> 33) % 50),
                                        .priority = (int)((seed >> 20) % 5),
                                        .estimate_s = (double)((seed >> 40) % 7)};
                assert_int_equal(loom_runtime_submit(rt, &j, NULL), LOOM_OK);
                qs[n] = (loom_sched_qjob_t){.id = j.id,
                                            .submit_s = j.submit_s,
                                            .priority = j.priority,
                                            .estimate_s = j.estimate_s,
                                            .wait_since_s = j.submit_s};
                ref[n] = &qs[n];
            }
            loom_runtime_step(rt, 100 + round, NULL, NULL);
        }
        loom_sched_queue_cfg_t cfg;
        assert_int_equal(loom_sched_queue_cfg_parse(queues[q], &cfg, NULL), LOOM_OK);
        loom_sched_queue_order(&cfg, ref, n, 105);
        uint64_t ids[600];
        assert_int_equal(loom_runtime_pending_ids(rt, ids, 600), n);
        for (size_t i = 0; i < n; i++)
            if (ids[i] != ref[i]->id)
                fail_msg("%s: position %zu: %llu, expected %llu", queues[q], i,
                         (unsigned long long)ids[i], (unsigned long long)ref[i]->id);
        loom_runtime_free(rt);
    }
}

/* Down nodes take no placement; a node that comes back does. */
static void test_down_nodes(void **state)
{
    loom_runtime_t *rt = runtime(2, 1, "fifo", "firstfit", 0, false);
    static log_t l;
    memset(&l, 0, sizeof l);
    loom_runtime_set_down(rt, 0, true);
    submit(rt, 1, 1, 1000, 0, 0);
    submit(rt, 2, 1, 1000, 0, 0);
    assert_int_equal(loom_runtime_step(rt, 1, record, &l), 1);
    assert_int_equal(l.a[0].alloc.node, 1);
    assert_true(loom_runtime_is_down(rt, 0));
    /* the hidden node's resources are back after the step */
    assert_int_equal(loom_runtime_cluster(rt)->nodes[0].gpu_free[0], 1000);
    assert_int_equal(loom_runtime_step(rt, 2, record, &l), 0);
    loom_runtime_set_down(rt, 0, false);
    assert_int_equal(loom_runtime_step(rt, 3, record, &l), 1);
    assert_int_equal(l.a[1].id, 2);
    assert_int_equal(l.a[1].alloc.node, 0);
    check(rt);
    loom_runtime_free(rt);
}

/* A refused start drops the job and gives its place back; a job no node
 * can hold is rejected with a reason. */
static void test_refused_and_rejected(void **state)
{
    loom_runtime_t *rt = runtime(1, 1, "fifo", "firstfit", 0, false);
    static log_t l;
    memset(&l, 0, sizeof l);
    l.refuse = 1;
    submit(rt, 1, 1, 1000, 0, 0);
    submit(rt, 2, 1, 1000, 1, 0);
    submit(rt, 3, 4, 1000, 2, 0); /* 4 GPUs on a 1-GPU cluster */
    assert_int_equal(loom_runtime_step(rt, 5, record, &l), 2);
    /* rejects go first (at arrival), then the queue */
    assert_int_equal(l.a[0].kind, LOOM_RUNTIME_REJECT);
    assert_int_equal(l.a[0].id, 3);
    assert_non_null(strstr(l.a[0].reason, "unschedulable"));
    assert_int_equal(l.a[1].kind, LOOM_RUNTIME_START);
    assert_int_equal(l.a[1].id, 2);
    assert_int_equal(loom_runtime_get(rt, 1, &(loom_runtime_info_t){0}), LOOM_ENOTFOUND);
    assert_int_equal(loom_runtime_npending(rt), 0);
    check(rt);
    loom_runtime_free(rt);
}

/* Time-slicing: two whole-GPU jobs on one GPU take turns of a quantum. */
static void test_timeslice(void **state)
{
    loom_runtime_t *rt = runtime(1, 1, "fifo", "firstfit", 1.0, false);
    static log_t l;
    memset(&l, 0, sizeof l);
    submit(rt, 1, 1, 1000, 0, 0);
    assert_int_equal(loom_runtime_step(rt, 0, record, &l), 1);
    submit(rt, 2, 1, 1000, 0.5, 0);
    assert_int_equal(loom_runtime_step(rt, 0.5, record, &l), 0); /* 1 has not had its quantum */
    assert_true(loom_runtime_next_wakeup(rt) == 1.0);
    assert_int_equal(loom_runtime_step(rt, 1.0, record, &l), 2);
    assert_int_equal(l.a[1].kind, LOOM_RUNTIME_SUSPEND);
    assert_int_equal(l.a[1].id, 1);
    assert_int_equal(l.a[2].kind, LOOM_RUNTIME_START);
    assert_int_equal(l.a[2].id, 2);
    assert_int_equal(info(rt, 1).state, LOOM_RUNTIME_SUSPENDED);
    assert_true(info(rt, 1).attained_gpu_s == 1.0);
    assert_true(loom_runtime_next_wakeup(rt) == 2.0);
    /* 1 has waited a quantum and 2 has had one: they swap */
    assert_int_equal(loom_runtime_step(rt, 2.0, record, &l), 2);
    assert_int_equal(l.a[3].kind, LOOM_RUNTIME_SUSPEND);
    assert_int_equal(l.a[3].id, 2);
    assert_int_equal(l.a[4].kind, LOOM_RUNTIME_RESUME);
    assert_int_equal(l.a[4].id, 1);
    check(rt);
    /* 1 ends: 2 resumes at once */
    assert_int_equal(loom_runtime_remove(rt, 1, 2.5), LOOM_OK);
    assert_int_equal(loom_runtime_step(rt, 2.5, record, &l), 1);
    assert_int_equal(l.a[5].kind, LOOM_RUNTIME_RESUME);
    assert_int_equal(l.a[5].id, 2);
    assert_true(isinf(loom_runtime_next_wakeup(rt)));
    check(rt);
    loom_runtime_free(rt);
}

static void steps(loom_runtime_t *rt, uint64_t id, double from, int n, double each)
{
    for (int i = 0; i < n; i++)
        loom_runtime_observe_step(rt, id, from + i * each, each);
}

/* Packing introspection: a tenant that never ran alone is probed (the
 * other steps aside), then packing is judged from the step times. */
static void test_packing(void **state)
{
    for (int hurt = 0; hurt < 2; hurt++) {
        loom_runtime_t *rt = runtime(1, 1, "fifo", "packing", 0, true);
        static log_t l;
        memset(&l, 0, sizeof l);
        submit(rt, 1, 1, 500, 0, 0);
        loom_runtime_step(rt, 0, record, &l);
        steps(rt, 1, 0.1, 6, 0.1); /* solo steps of 1 (the first is skipped) */
        submit(rt, 2, 1, 500, 1, 0);
        loom_runtime_step(rt, 1, record, &l); /* 2 packed with 1 */
        assert_int_equal(l.n, 2);
        assert_int_equal(l.a[1].alloc.gpus[0], 0);
        loom_runtime_step(rt, 1.05, record, &l); /* tenancy 2 seen */
        double packed = hurt ? 0.5 : 0.15;
        steps(rt, 1, 1.1, 6, packed);
        steps(rt, 2, 1.1, 6, packed);
        loom_runtime_step(rt, 5, record, &l); /* 2 never ran alone: 1 steps aside */
        assert_int_equal(l.a[2].kind, LOOM_RUNTIME_SUSPEND);
        assert_int_equal(l.a[2].id, 1);
        assert_non_null(strstr(l.a[2].reason, "packing probe"));
        loom_runtime_step(rt, 5.05, record, &l); /* 2 alone now */
        steps(rt, 2, 5.1, 6, 0.1);
        loom_runtime_step(rt, 6, record, &l); /* 2 has its solo steps: 1 resumes */
        assert_int_equal(l.a[3].kind, LOOM_RUNTIME_RESUME);
        assert_int_equal(l.a[3].id, 1);
        loom_runtime_step(rt, 6.05, record, &l);
        steps(rt, 1, 6.1, 6, packed);
        steps(rt, 2, 6.1, 6, packed);
        size_t before = l.n;
        loom_runtime_step(rt, 8, record, &l);
        if (!hurt) { /* 0.1 / 0.15 x 2 = 1.33: kept, noted on both */
            assert_int_equal(l.n, before + 2);
            assert_int_equal(l.a[before].kind, LOOM_RUNTIME_NOTE);
            assert_non_null(strstr(info(rt, 1).note, "packing kept: normalized throughput 1.33"));
        } else { /* 0.1 / 0.5 x 2 = 0.4: the newest (1, resumed last) is suspended */
            assert_int_equal(l.n, before + 1);
            assert_int_equal(l.a[before].kind, LOOM_RUNTIME_SUSPEND);
            assert_int_equal(l.a[before].id, 1);
            assert_non_null(strstr(info(rt, 1).note, "packing undone"));
            /* resumed only when its GPU is free */
            loom_runtime_step(rt, 9, record, &l);
            assert_int_equal(info(rt, 1).state, LOOM_RUNTIME_SUSPENDED);
            loom_runtime_remove(rt, 2, 10);
            loom_runtime_step(rt, 10, record, &l);
            assert_int_equal(info(rt, 1).state, LOOM_RUNTIME_RUNNING);
        }
        check(rt);
        loom_runtime_free(rt);
    }
}

/* Reconfiguration: a running job grows when there is room; a refusal keeps
 * the old allocation. */
static void test_reconfigure(void **state)
{
    loom_runtime_t *rt = runtime(1, 4, "fifo", "firstfit", 0, false);
    static log_t l;
    memset(&l, 0, sizeof l);
    submit(rt, 1, 1, 1000, 0, 0);
    loom_runtime_step(rt, 0, record, &l);
    loom_sched_req_t bigger = {1000, 1024, 2, 1000, 0, 0};
    assert_int_equal(loom_runtime_reconfigure(rt, 1, &bigger, NULL), LOOM_OK);
    assert_int_equal(loom_runtime_reconfigure(rt, 7, &bigger, NULL), LOOM_ENOTFOUND);
    loom_runtime_step(rt, 1, record, &l);
    assert_int_equal(l.a[1].kind, LOOM_RUNTIME_RECONFIGURE);
    assert_int_equal(l.a[1].alloc.ngpus, 2);
    assert_int_equal(l.a[1].old_alloc.ngpus, 1);
    assert_int_equal(loom_runtime_cluster(rt)->gpu_milli_used, 2000);
    loom_sched_req_t four = {1000, 1024, 4, 1000, 0, 0};
    l.refuse = 1;
    assert_int_equal(loom_runtime_reconfigure(rt, 1, &four, NULL), LOOM_OK);
    loom_runtime_step(rt, 2, record, &l);
    assert_int_equal(loom_runtime_cluster(rt)->gpu_milli_used, 2000);
    assert_int_equal(info(rt, 1).alloc.ngpus, 2);
    loom_runtime_set_share(rt, 7, 2.5);
    assert_true(loom_runtime_share(rt, 7) == 2.5);
    assert_true(loom_runtime_share(rt, 8) == 1.0);
    check(rt);
    loom_runtime_free(rt);
}

/* Tiresias: a job that ran 4,000 GPU-seconds and was requeued sits in the
 * second queue behind a fresh job; after waiting twice its last run it is
 * promoted (the order is rebuilt then). */
static void test_tiresias_requeue(void **state)
{
    loom_runtime_t *rt = runtime(1, 1, "tiresias", "firstfit", 0, false);
    static log_t l;
    memset(&l, 0, sizeof l);
    submit(rt, 1, 1, 1000, 0, 0);
    assert_int_equal(loom_runtime_step(rt, 0, record, &l), 1);
    assert_int_equal(loom_runtime_requeue(rt, 1, 4000), LOOM_OK);
    assert_int_equal(loom_runtime_requeue(rt, 1, 4000), LOOM_ESTATE);
    assert_true(info(rt, 1).attained_gpu_s == 4000);
    submit(rt, 2, 1, 1000, 4000, 0);
    assert_int_equal(loom_runtime_step(rt, 4001, record, &l), 1);
    assert_int_equal(l.a[1].id, 2); /* level 0 before level 1, though submitted later */
    submit(rt, 3, 1, 1000, 4002, 0);
    loom_runtime_step(rt, 4003, record, &l);
    uint64_t ids[2];
    assert_int_equal(loom_runtime_pending_ids(rt, ids, 2), 2);
    assert_int_equal(ids[0], 3);
    assert_int_equal(ids[1], 1);
    /* Waited 2 x its last run: 1 is promoted to queue 0, and 2 has
     * attained 8000 GPU-seconds (queue 1): 1 preempts it. */
    loom_runtime_step(rt, 4000 + 2 * 4000 + 1, record, &l);
    assert_int_equal(loom_runtime_pending_ids(rt, ids, 2), 1);
    assert_int_equal(ids[0], 3);
    assert_int_equal(info(rt, 1).state, LOOM_RUNTIME_RUNNING);
    assert_int_equal(info(rt, 2).state, LOOM_RUNTIME_SUSPENDED);
    assert_int_equal(info(rt, 3).reason, LOOM_RUNTIME_REASON_RESOURCES);
    check(rt);
    loom_runtime_free(rt);
}

static bool logged(const log_t *l, size_t from, loom_runtime_action_kind_t kind, uint64_t id)
{
    for (size_t k = from; k < l->n; k++)
        if (l->a[k].kind == kind && l->a[k].id == id)
            return true;
    return false;
}

/* Tiresias as published (Gu et al., NSDI'19), one GPU, one threshold at
 * 100 GPU-seconds, PROMOTEKNOB 2: a new job (queue 0) preempts one that has
 * attained 150 (queue 1); once it has attained 100 itself both are in
 * queue 1 and it keeps running (FIFO within a queue does not preempt);
 * the suspended one, starved for 2 x its last run (300 s), is promoted
 * and preempts it back; when it ends, the other resumes. */
static void test_tiresias_preempt(void **state)
{
    (void)state;
    loom_runtime_t *rt = runtime(1, 1, "tiresias:thresholds=100,knob=2", "firstfit", 0, false);
    static log_t l;
    memset(&l, 0, sizeof l);
    submit(rt, 1, 1, 1000, 0, 0);
    assert_int_equal(loom_runtime_step(rt, 0, record, &l), 1);
    assert_true(loom_runtime_next_wakeup(rt) == INFINITY); /* nobody waits */
    submit(rt, 2, 1, 1000, 150, 0);
    size_t from = l.n;
    assert_int_equal(loom_runtime_step(rt, 150, record, &l), 2);
    assert_true(logged(&l, from, LOOM_RUNTIME_SUSPEND, 1));
    assert_true(logged(&l, from, LOOM_RUNTIME_START, 2));
    assert_non_null(strstr(l.reason[from], "preempted by job 2"));
    assert_int_equal(info(rt, 1).state, LOOM_RUNTIME_SUSPENDED);
    assert_true(info(rt, 1).attained_gpu_s == 150);
    /* 2 reaches the threshold at 250: a decision point */
    double w = loom_runtime_next_wakeup(rt);
    assert_true(w > 250 && w < 250.01);
    from = l.n;
    assert_int_equal(loom_runtime_step(rt, w, record, &l), 0); /* both in queue 1: no preemption */
    /* 1 waited since 150 after a run of 150: promoted at 150 + 2 x 150 */
    assert_true(loom_runtime_next_wakeup(rt) == 450);
    assert_int_equal(loom_runtime_step(rt, 449, record, &l), 0);
    assert_int_equal(loom_runtime_step(rt, 450, record, &l), 2);
    assert_true(logged(&l, from, LOOM_RUNTIME_SUSPEND, 2));
    assert_true(logged(&l, from, LOOM_RUNTIME_RESUME, 1));
    assert_int_equal(info(rt, 1).state, LOOM_RUNTIME_RUNNING);
    assert_int_equal(info(rt, 2).state, LOOM_RUNTIME_SUSPENDED);
    /* promoted: its service counts afresh, so 2 (starved 2 x 300 since
     * 450, at 1050) does not take the GPU back before 1 attains 100 more */
    from = l.n;
    assert_int_equal(loom_runtime_step(rt, 540, record, &l), 0);
    assert_int_equal(loom_runtime_remove(rt, 1, 600), LOOM_OK);
    assert_int_equal(loom_runtime_step(rt, 600, record, &l), 1);
    assert_true(logged(&l, from, LOOM_RUNTIME_RESUME, 2));
    assert_true(info(rt, 2).attained_gpu_s == 300);
    check(rt);
    loom_runtime_free(rt);
}

/* Held, not-yet-begun and dependency-waiting jobs stay pending with their
 * reason and hold nothing back; a held job no node can hold is rejected
 * only once released. */
static void test_blocked(void **state)
{
    (void)state;
    loom_runtime_t *rt = runtime(1, 4, "fifo", "firstfit", 0, false);
    static log_t l;
    memset(&l, 0, sizeof l);
    loom_err_t err;
    loom_runtime_job_t held = {.id = 1, .req = {.cpu_milli = 1000, .mem_mib = 1}, .hold = true};
    loom_runtime_job_t later = {.id = 2, .req = {.cpu_milli = 1000, .mem_mib = 1}, .begin_s = 20};
    loom_runtime_job_t dep = {.id = 3, .req = {.cpu_milli = 1000, .mem_mib = 1}, .dep_wait = true};
    loom_runtime_job_t huge = {
        .id = 4,
        .req = {.cpu_milli = 1000, .mem_mib = 1, .num_gpus = 8, .gpu_milli = 1000},
        .hold = true};
    assert_int_equal(loom_runtime_submit(rt, &held, &err), LOOM_OK);
    assert_int_equal(loom_runtime_submit(rt, &later, &err), LOOM_OK);
    assert_int_equal(loom_runtime_submit(rt, &dep, &err), LOOM_OK);
    assert_int_equal(loom_runtime_submit(rt, &huge, &err), LOOM_OK);
    assert_int_equal(info(rt, 1).reason, LOOM_RUNTIME_REASON_HELD);
    submit(rt, 5, 4, 1000, 1, 0); /* behind them all in fifo order: starts */
    assert_int_equal(loom_runtime_step(rt, 10, record, &l), 1);
    assert_int_equal(l.a[0].id, 5);
    assert_string_equal(loom_runtime_reason_name(info(rt, 1).reason), "JobHeld");
    assert_string_equal(loom_runtime_reason_name(info(rt, 2).reason), "BeginTime");
    assert_string_equal(loom_runtime_reason_name(info(rt, 3).reason), "Dependency");
    assert_int_equal(loom_runtime_hold(rt, 1, false), LOOM_OK);
    assert_int_equal(loom_runtime_set_dep_wait(rt, 3, false), LOOM_OK);
    assert_int_equal(loom_runtime_hold(rt, 5, false), LOOM_ESTATE);
    assert_int_equal(loom_runtime_hold(rt, 99, false), LOOM_ENOTFOUND);
    l.n = 0;
    assert_int_equal(loom_runtime_step(rt, 11, record, &l), 2);
    assert_int_equal(l.a[0].id, 1);
    assert_int_equal(l.a[1].id, 3);
    assert_int_equal(info(rt, 2).reason, LOOM_RUNTIME_REASON_BEGIN_TIME);
    l.n = 0;
    assert_int_equal(loom_runtime_step(rt, 20, record, &l), 1); /* its time came */
    assert_int_equal(l.a[0].id, 2);
    assert_int_equal(info(rt, 4).reason, LOOM_RUNTIME_REASON_HELD);
    assert_int_equal(loom_runtime_hold(rt, 4, false), LOOM_OK);
    l.n = 0;
    assert_int_equal(loom_runtime_step(rt, 21, record, &l), 1);
    assert_int_equal(l.a[0].kind, LOOM_RUNTIME_REJECT);
    assert_int_equal(l.a[0].id, 4);
    check(rt);
    loom_runtime_free(rt);
}

/* Jobs that ended, as a caller records them: 1 and 100 well, 101
 * otherwise (the runtime asks only about jobs it does not hold). */
static loom_runtime_dep_job_t ended(void *ctx, uint64_t id)
{
    (void)ctx;
    return id == 100 || id == 1 ? LOOM_RUNTIME_DEP_OK
           : id == 101          ? LOOM_RUNTIME_DEP_NOTOK
                                : LOOM_RUNTIME_DEP_UNKNOWN;
}

static loom_runtime_job_t dep_job(uint64_t id, const char *text, const char *name)
{
    return (loom_runtime_job_t){.id = id,
                                .submit_s = (double)id,
                                .req = {.cpu_milli = 1000, .mem_mib = 1},
                                .dependency = text,
                                .name_key = loom_runtime_name_key(name)};
}

/* The runtime keeps and judges dependencies itself: afterok on a job it
 * holds waits until that job leaves well (the caller's record says so),
 * "after" once it began, afternotok of a job that ended well is never met
 * (CANCEL, DependencyNeverSatisfied), singleton waits for the earlier job
 * of the same name and user. */
static void test_runtime_dependencies(void **state)
{
    (void)state;
    loom_runtime_t *rt = runtime(1, 4, "fifo", "firstfit", 0, false);
    static log_t l;
    memset(&l, 0, sizeof l);
    loom_err_t err;
    loom_runtime_set_outcomes(rt, ended, NULL);
    loom_runtime_job_t jobs[] = {
        dep_job(1, NULL, "a"),
        dep_job(2, "afterok:1", "b"),
        dep_job(3, "after:1", "c"),
        dep_job(4, "afternotok:100", "d"),
        dep_job(5, "afterok:100?afterok:101", "e"),
        dep_job(6, "singleton", "a"),
        dep_job(7, "afterok:999", "f"),
    };
    for (size_t i = 0; i < sizeof jobs / sizeof jobs[0]; i++)
        assert_int_equal(loom_runtime_submit(rt, &jobs[i], &err), LOOM_OK);
    assert_int_equal(loom_runtime_dep_waiting(rt), 6);
    loom_runtime_step(rt, 10, record, &l);
    /* 1 and 5 (any of: 100 ended well) start; 4 and 7 can never */
    size_t started = 0, cancelled = 0;
    for (size_t k = 0; k < l.n; k++) {
        if (l.a[k].kind == LOOM_RUNTIME_START)
            assert_true(l.a[k].id == 1 || l.a[k].id == 5), started++;
        if (l.a[k].kind == LOOM_RUNTIME_CANCEL) {
            assert_true(l.a[k].id == 4 || l.a[k].id == 7);
            assert_string_equal(l.a[k].reason, "DependencyNeverSatisfied");
            cancelled++;
        }
    }
    assert_int_equal(cancelled, 2);
    assert_int_equal(started, 2);
    assert_int_equal(loom_runtime_get(rt, 4, &(loom_runtime_info_t){0}), LOOM_ENOTFOUND);
    l.n = 0;
    loom_runtime_step(rt, 11, record, &l); /* 1 began: "after:1" is met */
    assert_true(info(rt, 3).state == LOOM_RUNTIME_RUNNING);
    assert_string_equal(loom_runtime_reason_name(info(rt, 2).reason), "Dependency");
    assert_string_equal(loom_runtime_reason_name(info(rt, 6).reason), "Dependency");
    assert_int_equal(loom_runtime_remove(rt, 1, 12), LOOM_OK); /* it leaves, well */
    l.n = 0;
    loom_runtime_step(rt, 13, record, &l);
    assert_true(info(rt, 2).state == LOOM_RUNTIME_RUNNING);
    assert_int_equal(loom_runtime_dep_waiting(rt), 0);
    assert_true(info(rt, 6).state == LOOM_RUNTIME_RUNNING); /* the other "a" has left */
    check(rt);
    loom_runtime_free(rt);
}

/* Jobs 1..5: 1 pending, 2 running, 3 completed, 4 failed; 5 unknown. */
static loom_runtime_dep_job_t dep_states(void *ctx, uint64_t id)
{
    (void)ctx;
    static const loom_runtime_dep_job_t s[] = {LOOM_RUNTIME_DEP_UNKNOWN, LOOM_RUNTIME_DEP_PENDING,
                                               LOOM_RUNTIME_DEP_RUNNING, LOOM_RUNTIME_DEP_OK,
                                               LOOM_RUNTIME_DEP_NOTOK};
    return id < 5 ? s[id] : LOOM_RUNTIME_DEP_UNKNOWN;
}

static bool busy_singleton(void *ctx)
{
    return *(bool *)ctx;
}

static int dep(const char *text, bool busy)
{
    loom_runtime_dep_t v;
    loom_err_t err;
    if (loom_runtime_dep_eval(text, dep_states, busy_singleton, &busy, &v, &err) != LOOM_OK)
        return -1;
    return (int)v;
}

static void test_dependencies(void **state)
{
    (void)state;
    enum {
        MET = LOOM_RUNTIME_DEP_MET,
        WAIT = LOOM_RUNTIME_DEP_WAIT,
        NEVER = LOOM_RUNTIME_DEP_NEVER
    };
    assert_int_equal(dep("after:1", false), WAIT);
    assert_int_equal(dep("after:2", false), MET);
    assert_int_equal(dep("afterany:2", false), WAIT);
    assert_int_equal(dep("afterany:3:4", false), MET);
    assert_int_equal(dep("afterok:3", false), MET);
    assert_int_equal(dep("afterok:4", false), NEVER);
    assert_int_equal(dep("afterok:3:2", false), WAIT);
    assert_int_equal(dep("afterok:4:2", false), NEVER);
    assert_int_equal(dep("afternotok:4", false), MET);
    assert_int_equal(dep("afternotok:3", false), NEVER);
    assert_int_equal(dep("afterok:5", false), NEVER); /* no such job */
    assert_int_equal(dep("afterok:3,afternotok:4", false), MET);
    assert_int_equal(dep("afterok:4?afternotok:4", false), MET);
    assert_int_equal(dep("afterok:4?afterany:2", false), WAIT);
    assert_int_equal(dep("afterok:4?afternotok:3", false), NEVER);
    assert_int_equal(dep("singleton", true), WAIT);
    assert_int_equal(dep("singleton,afterok:3", false), MET);
    assert_int_equal(dep("afterok:3+5", false), MET);
    assert_int_equal(dep("afterok:3_2", false), MET);
    assert_int_equal(dep("afterok", false), -1);
    assert_int_equal(dep("afterok:", false), -1);
    assert_int_equal(dep("afterok:0", false), -1);
    assert_int_equal(dep("before:3", false), -1);
    assert_int_equal(dep("afterok:3,afterok:3?afterok:3", false), -1);
    assert_int_equal(dep("afterok:3;", false), -1);
}

/* The reasons that changed in a step, and only those: nothing after a
 * step that changed nothing, a caller's recorded reason counts as said, a
 * requeued job is said again. */
static void test_reason_changes(void **state)
{
    (void)state;
    loom_runtime_t *rt = runtime(1, 4, "fifo", "firstfit", 0, false);
    static log_t l;
    memset(&l, 0, sizeof l);
    const loom_runtime_reason_change_t *ch;
    submit(rt, 1, 3, 1000, 1, 0);
    submit(rt, 2, 2, 1000, 2, 0);
    submit(rt, 3, 1, 1000, 3, 0);
    submit(rt, 4, 2, 1000, 4, 0);
    assert_int_equal(loom_runtime_reason_changes(rt, &ch), 0);
    assert_int_equal(loom_runtime_step(rt, 10, record, &l), 2);
    assert_int_equal(loom_runtime_reason_changes(rt, &ch), 2);
    assert_int_equal(ch[0].id, 2);
    assert_int_equal(ch[0].reason, LOOM_RUNTIME_REASON_RESOURCES);
    assert_int_equal(ch[1].id, 4);
    assert_int_equal(ch[1].reason, LOOM_RUNTIME_REASON_PRIORITY);
    loom_runtime_step(rt, 11, record, &l);
    assert_int_equal(loom_runtime_reason_changes(rt, &ch), 0);
    /* recorded as Priority already: not said again */
    loom_err_t err;
    loom_runtime_job_t five = {
        .id = 5,
        .req = {.cpu_milli = 1000, .mem_mib = 1, .num_gpus = 2, .gpu_milli = 1000},
        .submit_s = 5,
        .recorded = LOOM_RUNTIME_REASON_PRIORITY};
    assert_int_equal(loom_runtime_submit(rt, &five, &err), LOOM_OK);
    loom_runtime_step(rt, 12, record, &l);
    assert_int_equal(loom_runtime_reason_changes(rt, &ch), 0);
    /* 1 ends: 2 starts, 4 becomes the first that waits */
    assert_int_equal(loom_runtime_remove(rt, 1, 13), LOOM_OK);
    assert_int_equal(loom_runtime_hold(rt, 5, true), LOOM_OK);
    l.n = 0;
    assert_int_equal(loom_runtime_step(rt, 13, record, &l), 1);
    assert_int_equal(l.a[0].id, 2);
    assert_int_equal(loom_runtime_reason_changes(rt, &ch), 2);
    assert_int_equal(ch[0].id, 4);
    assert_int_equal(ch[0].reason, LOOM_RUNTIME_REASON_RESOURCES);
    assert_int_equal(ch[1].id, 5);
    assert_int_equal(ch[1].reason, LOOM_RUNTIME_REASON_HELD);
    /* 3 goes back to the queue: said again, though its reason was never Priority */
    assert_int_equal(loom_runtime_requeue(rt, 3, 14), LOOM_OK);
    assert_int_equal(loom_runtime_remove(rt, 2, 14), LOOM_OK);
    l.n = 0;
    loom_runtime_step(rt, 14, record, &l);
    assert_int_equal(l.n, 2); /* 4 (2 GPUs) and 3 (1 GPU) start */
    assert_int_equal(loom_runtime_reason_changes(rt, &ch), 0);
    assert_int_equal(loom_runtime_remove(rt, 4, 15), LOOM_OK);
    assert_int_equal(loom_runtime_requeue(rt, 3, 15), LOOM_OK);
    assert_int_equal(loom_runtime_hold(rt, 3, true), LOOM_OK);
    loom_runtime_step(rt, 15, record, &l);
    assert_int_equal(loom_runtime_reason_changes(rt, &ch), 1);
    assert_int_equal(ch[0].id, 3);
    assert_int_equal(ch[0].reason, LOOM_RUNTIME_REASON_HELD);
    check(rt);
    loom_runtime_free(rt);
}

static void submit_as(loom_runtime_t *rt, uint64_t id, int gpus, int32_t milli, uint32_t user,
                      uint32_t account)
{
    loom_runtime_job_t j = {.id = id,
                            .req = {.cpu_milli = 1000,
                                    .mem_mib = 1024,
                                    .num_gpus = gpus,
                                    .gpu_milli = gpus ? milli : 0},
                            .submit_s = (double)id,
                            .user = user,
                            .account = account};
    loom_err_t err;
    if (loom_runtime_submit(rt, &j, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
}

static loom_runtime_usage_t usage(loom_runtime_t *rt, loom_runtime_quota_kind_t kind, uint32_t who)
{
    loom_runtime_usage_t u;
    loom_runtime_quota_usage(rt, kind, who, &u);
    return u;
}

/* Running quotas: a job whose start would pass its user's GPUs or its
 * account's jobs waits with QuotaLimit and holds back nobody behind it; it
 * starts once its owner's running job ends. Shares count as milli-GPU,
 * defaults apply to whoever has no limits of its own. */
static void test_quota(void **state)
{
    (void)state;
    loom_runtime_t *rt = runtime(2, 4, "fifo", "firstfit", 0, false);
    static log_t l;
    memset(&l, 0, sizeof l);
    loom_runtime_limits_t two_gpus = {.gpu_milli = 2000, .jobs = -1}, one_job = {-1, 1};
    assert_int_equal(loom_runtime_set_quota(rt, LOOM_RUNTIME_QUOTA_USER, 7, &two_gpus), LOOM_OK);
    assert_int_equal(loom_runtime_set_quota(rt, LOOM_RUNTIME_QUOTA_ACCOUNT, 3, &one_job), LOOM_OK);
    submit_as(rt, 1, 2, 1000, 7, 1);
    submit_as(rt, 2, 1, 1000, 7, 1); /* would make 3 GPUs for user 7 */
    submit_as(rt, 3, 1, 1000, 8, 1); /* behind it, another user: starts */
    submit_as(rt, 4, 0, 0, 9, 3);
    submit_as(rt, 5, 0, 0, 10, 3); /* account 3 runs one job already */
    assert_int_equal(loom_runtime_step(rt, 10, record, &l), 3);
    assert_int_equal(l.a[0].id, 1);
    assert_int_equal(l.a[1].id, 3);
    assert_int_equal(l.a[2].id, 4);
    assert_int_equal(info(rt, 2).reason, LOOM_RUNTIME_REASON_QUOTA);
    assert_string_equal(loom_runtime_reason_name(info(rt, 2).reason), "QuotaLimit");
    assert_int_equal(info(rt, 5).reason, LOOM_RUNTIME_REASON_QUOTA);
    loom_runtime_quota_hold_t h;
    assert_int_equal(loom_runtime_quota_hold(rt, 2, &h), LOOM_OK);
    assert_int_equal(h.kind, LOOM_RUNTIME_QUOTA_USER);
    assert_int_equal(h.who, 7);
    assert_true(h.gpus);
    assert_int_equal(h.used, 2000);
    assert_int_equal(h.asks, 1000);
    assert_int_equal(h.allowed, 2000);
    assert_int_equal(loom_runtime_quota_hold(rt, 5, &h), LOOM_OK);
    assert_int_equal(h.kind, LOOM_RUNTIME_QUOTA_ACCOUNT);
    assert_false(h.gpus);
    assert_int_equal(h.used, 1);
    assert_int_equal(h.asks, 1);
    assert_int_equal(h.allowed, 1);
    assert_int_equal(loom_runtime_quota_hold(rt, 1, &h), LOOM_ESTATE); /* running */
    assert_int_equal(loom_runtime_quota_hold(rt, 99, &h), LOOM_ENOTFOUND);
    const loom_runtime_reason_change_t *ch;
    assert_int_equal(loom_runtime_reason_changes(rt, &ch), 2);
    assert_int_equal(ch[0].reason, LOOM_RUNTIME_REASON_QUOTA);
    assert_int_equal(usage(rt, LOOM_RUNTIME_QUOTA_USER, 7).gpu_milli, 2000);
    assert_int_equal(usage(rt, LOOM_RUNTIME_QUOTA_USER, 7).jobs, 1);
    assert_int_equal(usage(rt, LOOM_RUNTIME_QUOTA_USER, 7).limits.gpu_milli, 2000);
    assert_int_equal(usage(rt, LOOM_RUNTIME_QUOTA_ACCOUNT, 3).jobs, 1);
    assert_int_equal(usage(rt, LOOM_RUNTIME_QUOTA_ACCOUNT, 1).jobs, 2);
    /* a share fits beside 1 (2 GPUs + 0.5 > 2: no), after 1 ends both do */
    submit_as(rt, 6, 1, 500, 7, 1);
    l.n = 0;
    assert_int_equal(loom_runtime_step(rt, 11, record, &l), 0);
    assert_int_equal(loom_runtime_remove(rt, 1, 12), LOOM_OK);
    assert_int_equal(loom_runtime_remove(rt, 4, 12), LOOM_OK);
    assert_int_equal(loom_runtime_step(rt, 12, record, &l), 3);
    assert_int_equal(l.a[0].id, 2);
    assert_int_equal(l.a[1].id, 5);
    assert_int_equal(l.a[2].id, 6);
    assert_int_equal(usage(rt, LOOM_RUNTIME_QUOTA_USER, 7).gpu_milli, 1500);
    /* requeue gives the quota back; a job without GPUs passes a GPU limit */
    assert_int_equal(loom_runtime_requeue(rt, 2, 13), LOOM_OK);
    assert_int_equal(usage(rt, LOOM_RUNTIME_QUOTA_USER, 7).gpu_milli, 500);
    submit_as(rt, 7, 2, 1000, 7, 1); /* 500 + 2000 > 2000 */
    submit_as(rt, 8, 0, 0, 7, 1);
    l.n = 0;
    assert_int_equal(loom_runtime_step(rt, 13, record, &l), 2);
    assert_int_equal(l.a[0].id, 2);
    assert_int_equal(l.a[1].id, 8);
    assert_int_equal(info(rt, 7).reason, LOOM_RUNTIME_REASON_QUOTA);
    /* the default for every user: 11 runs one job at a time; 7 keeps its own */
    assert_int_equal(loom_runtime_set_quota(rt, LOOM_RUNTIME_QUOTA_EVERY_USER, 0, &one_job),
                     LOOM_OK);
    submit_as(rt, 9, 0, 0, 11, 1);
    submit_as(rt, 10, 0, 0, 11, 1);
    l.n = 0;
    assert_int_equal(loom_runtime_step(rt, 14, record, &l), 1);
    assert_int_equal(l.a[0].id, 9);
    assert_int_equal(info(rt, 10).reason, LOOM_RUNTIME_REASON_QUOTA);
    assert_int_equal(usage(rt, LOOM_RUNTIME_QUOTA_USER, 12).limits.jobs, 1);
    /* 7 loses its own limits: the default (one job) holds 7 now */
    assert_int_equal(loom_runtime_set_quota(rt, LOOM_RUNTIME_QUOTA_USER, 7, NULL), LOOM_OK);
    assert_int_equal(usage(rt, LOOM_RUNTIME_QUOTA_USER, 7).limits.jobs, 1);
    assert_int_equal(usage(rt, LOOM_RUNTIME_QUOTA_USER, 7).limits.gpu_milli, -1);
    assert_int_equal(usage(rt, LOOM_RUNTIME_QUOTA_USER, 7).jobs, 3);
    check(rt);
    loom_runtime_free(rt);
}

/* The must-show case of backfill with reservations: one node of 4 GPUs
 * kept busy by an endless stream of one-GPU jobs (one arrives every 25 s,
 * each runs its whole 100 s time limit; the first four start at 0, 25, 50
 * and 75). A whole-node job W arrives at 80. Greedy backfill gives each
 * GPU that comes free to the next one-GPU job, so W never starts. EASY and
 * conservative reserve the node for W at 175 (when the four running jobs'
 * limits are up), hold back the one-GPU jobs that would still run then
 * (reason Reservation), let a 20 s job that ends before 175 start at 130,
 * and start W at 175, as its expected start said. */
#define STREAM_END 1000
#define W_ID       10000
#define SHORT_ID   10001

typedef struct stream {
    double start[SHORT_ID + 1], run[SHORT_ID + 1];
    double w_expected; /* W's expected start as reported at 80 */
    loom_runtime_reason_t held_reason, w_reason;
} stream_t;

static void stream_submit(loom_runtime_t *rt, uint64_t id, int gpus, double t, double limit)
{
    loom_runtime_job_t j = {
        .id = id,
        .req = {.cpu_milli = 1000, .mem_mib = 1024, .num_gpus = gpus, .gpu_milli = 1000},
        .submit_s = t,
        .time_limit_s = limit};
    loom_err_t err;
    if (loom_runtime_submit(rt, &j, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
}

static void stream_run(loom_runtime_backfill_t bf, stream_t *s)
{
    loom_sched_cluster_t c;
    cluster(&c, 1, 4);
    loom_runtime_config_t cfg = {.placer = {.ties = LOOM_SCHED_TIES_FIRST}, .backfill = bf};
    loom_runtime_t *rt;
    loom_err_t err;
    if (loom_runtime_new(&c, &cfg, &rt, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    loom_sched_cluster_free(&c);
    static log_t l;
    memset(s, 0, sizeof *s);
    uint64_t next = 1;
    for (int t = 0; t <= STREAM_END; t += 5) {
        for (uint64_t id = 1; id <= SHORT_ID; id++)
            if (s->run[id] > 0 && s->start[id] >= 0 && s->start[id] + s->run[id] <= t &&
                loom_runtime_remove(rt, id, t) == LOOM_OK)
                s->run[id] = -1;
        if (t % 25 == 0) {
            s->start[next] = -1;
            s->run[next] = 100;
            stream_submit(rt, next++, 1, t, 100);
        }
        if (t == 80) {
            s->start[W_ID] = -1;
            s->run[W_ID] = 100;
            stream_submit(rt, W_ID, 4, t, 100);
        }
        if (t == 130) {
            s->start[SHORT_ID] = -1;
            s->run[SHORT_ID] = 20;
            stream_submit(rt, SHORT_ID, 1, t, 20);
        }
        l.n = 0;
        loom_runtime_step(rt, t, record, &l);
        for (size_t k = 0; k < l.n; k++)
            if (l.a[k].kind == LOOM_RUNTIME_START)
                s->start[l.a[k].id] = t;
        if (t == 80) {
            loom_runtime_info_t w = info(rt, W_ID);
            s->w_expected = w.has_start ? w.expected_start_s : -1;
        }
        if (t == 100) {
            s->w_reason = info(rt, W_ID).reason;
            s->held_reason = info(rt, 5).state == LOOM_RUNTIME_PENDING ? info(rt, 5).reason : 0;
        }
        check(rt);
    }
    loom_runtime_free(rt);
}

static void test_backfill_reservation(void **state)
{
    (void)state;
    static stream_t s;
    stream_run(LOOM_RUNTIME_BACKFILL_GREEDY, &s);
    assert_true(s.start[W_ID] < 0); /* starved for the whole stream */
    assert_true(s.w_expected < 0);  /* and no expected start */
    const loom_runtime_backfill_t bf[] = {LOOM_RUNTIME_BACKFILL_EASY,
                                          LOOM_RUNTIME_BACKFILL_CONSERVATIVE};
    for (size_t k = 0; k < 2; k++) {
        stream_run(bf[k], &s);
        assert_true(s.w_expected == 175);
        assert_true(s.start[W_ID] == 175);
        assert_true(s.start[SHORT_ID] == 130); /* ends by 175: backfilled */
        assert_true(s.start[5] >= 275);        /* arrived at 100: after W */
        assert_int_equal(s.w_reason, LOOM_RUNTIME_REASON_RESOURCES);
        assert_int_equal(s.held_reason, LOOM_RUNTIME_REASON_RESERVATION);
        assert_string_equal(loom_runtime_reason_name(s.held_reason), "Reservation");
    }
}

/* The backfill option's names, and a bad one named in the error. */
static void test_backfill_parse(void **state)
{
    (void)state;
    loom_runtime_backfill_t b;
    loom_err_t err;
    assert_int_equal(loom_runtime_backfill_parse("easy", &b, &err), LOOM_OK);
    assert_int_equal(b, LOOM_RUNTIME_BACKFILL_EASY);
    assert_int_equal(loom_runtime_backfill_parse("conservative", &b, &err), LOOM_OK);
    assert_string_equal(loom_runtime_backfill_name(b), "conservative");
    assert_int_equal(loom_runtime_backfill_parse("greedy", &b, &err), LOOM_OK);
    assert_int_equal(loom_runtime_backfill_parse("eazy", &b, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "'eazy'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backfill_reasons),
        cmocka_unit_test(test_whole_queue),
        cmocka_unit_test(test_incremental_order),
        cmocka_unit_test(test_down_nodes),
        cmocka_unit_test(test_refused_and_rejected),
        cmocka_unit_test(test_timeslice),
        cmocka_unit_test(test_packing),
        cmocka_unit_test(test_reconfigure),
        cmocka_unit_test(test_tiresias_requeue),
        cmocka_unit_test(test_tiresias_preempt),
        cmocka_unit_test(test_blocked),
        cmocka_unit_test(test_dependencies),
        cmocka_unit_test(test_runtime_dependencies),
        cmocka_unit_test(test_reason_changes),
        cmocka_unit_test(test_quota),
        cmocka_unit_test(test_backfill_reservation),
        cmocka_unit_test(test_backfill_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
