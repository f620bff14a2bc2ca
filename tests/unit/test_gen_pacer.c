/* The pacer on a virtual clock: determinism of a whole run for a seed
 * (times, choices, rendered parameters, submit ids), chi-square of the
 * choices, duration and count stops, the three backlog policies against a
 * sink that holds its first call until the window is full, a broken sink,
 * per-job failures, and the stream and directory sinks. Nothing here
 * depends on how fast the machine is. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loom/gen.h"
#include "test_util.h"

/* Seed 2026, poisson at 500/s: due times (ns) and rendered lines of jobs
 * 0-2, and the submit_id of job 7. */
#define PINNED_2026                                                                                \
    "0 large index 0 lr 168399\n754759 small index 1 lr 481866\n3540416 large index 2 lr 578683\n"
#define PINNED_ID_7 "gfb68e114a3ff7533-7"

/* ------------------------------------------------------------ a source */

static const double weights4[] = {1, 2, 3, 4};
static const char *const names4[] = {"tiny", "small", "medium", "large"};

/* Renders "NAME index I lr P" with P drawn from the job's own stream; job
 * "bad" entries (choice 0 when fail_tiny) fail to render. */
static int fail_tiny;

static int test_make(void *ctx, loom_gen_job_t *job, loom_rng_t *rng, loom_err_t *err)
{
    if (fail_tiny && job->choice == 0)
        return loom_err_set(err, LOOM_EINVAL, "template: missing variable 'lr'");
    uint64_t p = loom_rng_below(rng, 1000000);
    loom_buf_appendf(&job->text, "%s index %llu lr %llu\n", names4[job->choice],
                     (unsigned long long)job->index, (unsigned long long)p);
    job->spec = json_pack("{s:s, s:{s:i}}", "name", names4[job->choice], "resources", "gpus",
                          (int)job->choice);
    return LOOM_OK;
}

static loom_gen_source_t source4 = {
    .n = 4, .weights = weights4, .names = names4, .make = test_make};

/* ----------------------------------------------- a sink that remembers */

typedef struct capture {
    pthread_mutex_t mu;
    char **texts;
    char **ids;
    size_t n;
    int fail_from; /* send() breaks from this call on (0: never) */
    int calls;
} capture_t;

static int capture_send(void *ctx, loom_gen_job_t **jobs, size_t n, loom_err_t *err)
{
    capture_t *c = ctx;
    pthread_mutex_lock(&c->mu);
    int call = ++c->calls;
    pthread_mutex_unlock(&c->mu);
    if (c->fail_from && call >= c->fail_from)
        return loom_err_set(err, LOOM_EIO, "connection refused");
    for (size_t i = 0; i < n; i++) {
        assert_true(jobs[i]->index < c->n);
        c->texts[jobs[i]->index] = strdup(jobs[i]->text.data);
        c->ids[jobs[i]->index] = strdup(jobs[i]->submit_id);
        jobs[i]->rc = LOOM_OK;
    }
    return LOOM_OK;
}

static void capture_init(capture_t *c, size_t n, loom_gen_sink_t *sink)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    c->texts = calloc(n, sizeof *c->texts);
    c->ids = calloc(n, sizeof *c->ids);
    c->n = n;
    *sink = (loom_gen_sink_t){.name = "capture", .send = capture_send, .ctx = c};
}

static void capture_free(capture_t *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->texts[i]);
        free(c->ids[i]);
    }
    free(c->texts);
    free(c->ids);
    pthread_mutex_destroy(&c->mu);
}

static loom_gen_config_t vconfig(loom_gen_vclock_t *vc, loom_gen_clock_t *clock,
                                 loom_gen_process_t p, double rate, uint64_t count, uint64_t seed)
{
    vc->now_ns = 1000000000; /* any origin: times are relative to the start */
    *clock = loom_gen_clock_virtual(vc);
    return (loom_gen_config_t){.arrivals = {.process = p, .rate = rate, .cv = 2.0},
                               .seed = seed,
                               .count = count,
                               .clock = clock,
                               .keep_records = count > 0,
                               .window = 64,
                               .workers = 3,
                               .batch = 5};
}

/* ---------------------------------------------------------------- tests */

static void one_run(uint64_t seed, loom_gen_process_t p, capture_t *c, loom_gen_report_t *r)
{
    loom_gen_vclock_t vc;
    loom_gen_clock_t clock;
    loom_gen_config_t cfg = vconfig(&vc, &clock, p, 500, 2000, seed);
    loom_gen_sink_t sink;
    capture_init(c, 2000, &sink);
    loom_err_t err;
    assert_int_equal(loom_gen_run(&cfg, &source4, &sink, r, &err), LOOM_OK);
}

static void deterministic_for_a_seed(void **state)
{
    loom_gen_process_t procs[] = {LOOM_GEN_POISSON, LOOM_GEN_GAMMA, LOOM_GEN_CONSTANT};
    for (int k = 0; k < 3; k++) {
        capture_t a, b, c;
        loom_gen_report_t ra, rb, rc;
        one_run(11, procs[k], &a, &ra);
        one_run(11, procs[k], &b, &rb);
        one_run(12, procs[k], &c, &rc);
        assert_int_equal(ra.sent, 2000);
        assert_int_equal(ra.ok, 2000);
        size_t differ = 0;
        for (size_t i = 0; i < 2000; i++) {
            assert_true(ra.records[i].due_ns == rb.records[i].due_ns);
            assert_true(ra.records[i].send_ns == rb.records[i].send_ns);
            assert_true(ra.records[i].choice == rb.records[i].choice);
            assert_string_equal(a.texts[i], b.texts[i]);
            assert_string_equal(a.ids[i], b.ids[i]);
            assert_true(ra.records[i].state == LOOM_GEN_JOB_OK);
            differ += strcmp(a.texts[i], c.texts[i]) != 0;
            /* the virtual clock: every job is sent exactly when due */
            assert_true(ra.records[i].send_ns == ra.records[i].due_ns);
        }
        assert_true(differ > 1900); /* another seed, another run */
        assert_true(strcmp(a.ids[0], c.ids[0]) != 0);
        assert_true(ra.lateness.max == 0);
        if (procs[k] == LOOM_GEN_CONSTANT)
            assert_true(fabs(ra.rate_error_pct) < 1e-6);
        else
            assert_true(fabs(ra.rate_achieved - ra.rate_schedule) < 1e-6 * ra.rate_schedule);
        capture_free(&a);
        capture_free(&b);
        capture_free(&c);
        loom_gen_report_free(&ra);
        loom_gen_report_free(&rb);
        loom_gen_report_free(&rc);
    }
}

static void pinned_first_jobs(void **state)
{
    /* The same seed must give these on every machine. If the RNG, the
     * stream layout or the process changes, this test says so. */
    capture_t a;
    loom_gen_report_t r;
    one_run(2026, LOOM_GEN_POISSON, &a, &r);
    char got[512] = "";
    for (int i = 0; i < 3; i++) {
        char line[160];
        snprintf(line, sizeof line, "%lld %s", (long long)r.records[i].due_ns, a.texts[i]);
        strcat(got, line);
    }
    assert_string_equal(got, PINNED_2026);
    assert_string_equal(a.ids[7], PINNED_ID_7);
    capture_free(&a);
    loom_gen_report_free(&r);
}

static double exp_cdf(double x, void *ctx)
{
    double rate = *(double *)ctx;
    return x <= 0 ? 0 : 1.0 - exp(-rate * x);
}

/* The send times of a whole run on the virtual clock: poisson gaps pass a
 * KS test against the exponential CDF (and fail one at 1.1x the rate), and
 * gamma gaps have the coefficient of variation asked for. */
static void send_gaps_on_virtual_clock(void **state)
{
    enum { N = 8000 };
    loom_gen_vclock_t vc;
    loom_gen_clock_t clock;
    loom_gen_process_t procs[] = {LOOM_GEN_POISSON, LOOM_GEN_GAMMA};
    for (int k = 0; k < 2; k++) {
        loom_gen_config_t cfg = vconfig(&vc, &clock, procs[k], 0.5, N, 31);
        cfg.arrivals.cv = 2.0;
        loom_gen_sink_t sink;
        loom_gen_sink_dry_run(&sink, NULL);
        loom_gen_report_t r;
        loom_err_t err;
        assert_int_equal(loom_gen_run(&cfg, &source4, &sink, &r, &err), LOOM_OK);
        double *gaps = malloc((N - 1) * sizeof *gaps), sum = 0, sq = 0;
        for (int i = 1; i < N; i++) {
            gaps[i - 1] = (double)(r.records[i].send_ns - r.records[i - 1].send_ns) / 1e9;
            sum += gaps[i - 1];
        }
        double mean = sum / (N - 1);
        for (int i = 0; i < N - 1; i++)
            sq += (gaps[i] - mean) * (gaps[i] - mean);
        double cv = sqrt(sq / (N - 2)) / mean;
        if (procs[k] == LOOM_GEN_POISSON) {
            double rate = 0.5, wrong = 0.55, d, p;
            loom_gen_ks(gaps, N - 1, exp_cdf, &rate, &d, &p);
            assert_true(p > 0.001);
            loom_gen_ks(gaps, N - 1, exp_cdf, &wrong, &d, &p);
            assert_true(p < 1e-4);
            assert_true(fabs(cv - 1.0) < 0.05);
        } else {
            assert_true(fabs(cv / 2.0 - 1.0) < 0.1);
        }
        free(gaps);
        sink.destroy(sink.ctx);
        loom_gen_report_free(&r);
    }
}

static void chi_square_of_choices(void **state)
{
    capture_t a;
    loom_gen_report_t r;
    one_run(5, LOOM_GEN_CONSTANT, &a, &r);
    uint64_t total = 0;
    for (int i = 0; i < 4; i++)
        total += r.per_choice[i];
    assert_int_equal(total, 2000);
    assert_true(r.chi2_dof == 3);
    assert_true(r.chi2_p > 0.001);
    /* Negative control: the same counts against uniform weights. */
    double uniform[] = {1, 1, 1, 1}, x2, dof, p;
    loom_gen_chi2(r.per_choice, uniform, 4, &x2, &dof, &p, NULL);
    assert_true(p < 1e-6);
    json_t *j = loom_gen_report_json(&r, &source4, NULL);
    assert_non_null(j);
    assert_true(json_integer_value(json_object_get(j, "count")) == 2000);
    assert_non_null(json_object_get(json_object_get(j, "lateness_us"), "p99"));
    assert_true(json_is_real(json_object_get(json_object_get(j, "chi_square"), "p_value")));
    assert_true(
        json_integer_value(json_object_get(json_object_get(json_object_get(j, "jobs"), "large"),
                                           "chosen")) == (json_int_t)r.per_choice[3]);
    json_decref(j);
    capture_free(&a);
    loom_gen_report_free(&r);
}

static void duration_stop(void **state)
{
    loom_gen_vclock_t vc;
    loom_gen_clock_t clock;
    loom_gen_config_t cfg = vconfig(&vc, &clock, LOOM_GEN_CONSTANT, 10, 0, 1);
    cfg.duration_ns = LOOM_NS_PER_S;
    loom_gen_sink_t sink;
    loom_gen_sink_dry_run(&sink, NULL);
    loom_gen_report_t r;
    loom_err_t err;
    assert_int_equal(loom_gen_run(&cfg, &source4, &sink, &r, &err), LOOM_OK);
    assert_int_equal(r.sent, 10); /* due at 0, 0.1, ..., 0.9 s */
    assert_true(fabs(r.rate_achieved - 10.0) < 1e-9);
    sink.destroy(sink.ctx);
    loom_gen_report_free(&r);
    /* Neither a count nor a duration: refused. */
    cfg.duration_ns = 0;
    assert_int_equal(loom_gen_run(&cfg, &source4, &sink, &r, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "count or a duration"));
    loom_gen_report_free(&r);
}

/* A sink whose calls block until the pacer reports a full window. */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open;
    int hooks;
} gate_t;

static int gate_send(void *ctx, loom_gen_job_t **jobs, size_t n, loom_err_t *err)
{
    gate_t *g = ctx;
    pthread_mutex_lock(&g->mu);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    for (size_t i = 0; i < n; i++)
        jobs[i]->rc = LOOM_OK;
    return LOOM_OK;
}

static void gate_hook(void *ctx, uint64_t index)
{
    gate_t *g = ctx;
    pthread_mutex_lock(&g->mu);
    g->open = true;
    g->hooks++;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static int backlog_run(loom_gen_backlog_t policy, loom_gen_report_t *r, loom_err_t *err)
{
    static gate_t g;
    memset(&g, 0, sizeof g);
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.cv, NULL);
    loom_gen_vclock_t vc;
    loom_gen_clock_t clock;
    loom_gen_config_t cfg = vconfig(&vc, &clock, LOOM_GEN_CONSTANT, 1000, 50, 3);
    cfg.window = 4;
    cfg.workers = 1;
    cfg.batch = 1;
    cfg.on_backlog = policy;
    cfg.backlog_hook = gate_hook;
    cfg.backlog_ctx = &g;
    loom_gen_sink_t sink = {.name = "gate", .send = gate_send, .ctx = &g};
    int rc = loom_gen_run(&cfg, &source4, &sink, r, err);
    assert_true(g.hooks >= 1);
    return rc;
}

static void backlog_drop(void **state)
{
    loom_gen_report_t r;
    loom_err_t err;
    assert_int_equal(backlog_run(LOOM_GEN_BACKLOG_DROP, &r, &err), LOOM_OK);
    /* Jobs 0-3 fill the window while the sink holds job 0: job 4 drops. */
    assert_true(r.records[4].state == LOOM_GEN_JOB_DROPPED);
    assert_true(r.dropped >= 1);
    assert_true(r.sent + r.dropped == 50);
    assert_true(r.ok == r.sent);
    assert_true(r.scheduled == 50);
    size_t dropped = 0;
    for (int i = 0; i < 50; i++) {
        assert_true(r.records[i].state == LOOM_GEN_JOB_OK ||
                    r.records[i].state == LOOM_GEN_JOB_DROPPED);
        dropped += r.records[i].state == LOOM_GEN_JOB_DROPPED;
    }
    assert_int_equal(dropped, r.dropped);
    json_t *j = loom_gen_report_json(&r, &source4, NULL);
    assert_true(json_integer_value(json_object_get(json_object_get(j, "backlog"), "dropped")) ==
                (json_int_t)r.dropped);
    json_decref(j);
    loom_gen_report_free(&r);
}

static void backlog_fail(void **state)
{
    loom_gen_report_t r;
    loom_err_t err;
    assert_int_equal(backlog_run(LOOM_GEN_BACKLOG_FAIL, &r, &err), LOOM_ELIMIT);
    assert_non_null(strstr(err.msg, "window of 4 jobs full at job 4"));
    assert_true(r.backlog_failed);
    assert_int_equal(r.sent, 4);
    assert_int_equal(r.ok, 4); /* the jobs in flight were finished */
    assert_true(r.records[4].state == LOOM_GEN_JOB_UNSENT);
    loom_gen_report_free(&r);
}

static void backlog_wait(void **state)
{
    loom_gen_report_t r;
    loom_err_t err;
    assert_int_equal(backlog_run(LOOM_GEN_BACKLOG_WAIT, &r, &err), LOOM_OK);
    assert_int_equal(r.sent, 50);
    assert_int_equal(r.ok, 50);
    assert_int_equal(r.dropped, 0);
    assert_true(r.backlog_waits >= 1);
    assert_true(r.records[4].waited);
    loom_gen_report_free(&r);
}

static void broken_sink_stops(void **state)
{
    loom_gen_vclock_t vc;
    loom_gen_clock_t clock;
    loom_gen_config_t cfg = vconfig(&vc, &clock, LOOM_GEN_CONSTANT, 100, 200, 1);
    cfg.workers = 1;
    cfg.batch = 1;
    capture_t c;
    loom_gen_sink_t sink;
    capture_init(&c, 200, &sink);
    c.fail_from = 3;
    loom_gen_report_t r;
    loom_err_t err;
    assert_int_equal(loom_gen_run(&cfg, &source4, &sink, &r, &err), LOOM_EIO);
    assert_non_null(strstr(err.msg, "sink capture: connection refused"));
    assert_int_equal(r.ok, 2);
    assert_true(r.sent < 200);
    assert_true(r.failed == r.sent - 2); /* every released job has an outcome */
    capture_free(&c);
    loom_gen_report_free(&r);
}

static void per_job_failures_counted(void **state)
{
    loom_gen_vclock_t vc;
    loom_gen_clock_t clock;
    loom_gen_config_t cfg = vconfig(&vc, &clock, LOOM_GEN_POISSON, 100, 300, 9);
    capture_t c;
    loom_gen_sink_t sink;
    capture_init(&c, 300, &sink);
    fail_tiny = 1;
    loom_gen_report_t r;
    loom_err_t err;
    int rc = loom_gen_run(&cfg, &source4, &sink, &r, &err);
    fail_tiny = 0;
    assert_int_equal(rc, LOOM_OK);
    assert_int_equal(r.failed, r.per_choice[0]);
    assert_int_equal(r.ok, 300 - r.per_choice[0]);
    assert_int_equal(r.per_choice_ok[0], 0);
    assert_non_null(strstr(r.first_error, "missing variable 'lr'"));
    capture_free(&c);
    loom_gen_report_free(&r);
}

static void stream_sink_in_order(void **state)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    loom_gen_vclock_t vc;
    loom_gen_clock_t clock;
    loom_gen_config_t cfg = vconfig(&vc, &clock, LOOM_GEN_POISSON, 1000, 100, 4);
    loom_gen_sink_t sink;
    loom_gen_sink_stream(&sink, f, NULL);
    loom_gen_report_t r;
    loom_err_t err;
    assert_int_equal(loom_gen_run(&cfg, &source4, &sink, &r, &err), LOOM_OK);
    fclose(f);
    const char *p = buf;
    for (int i = 0; i < 100; i++) {
        char want[64];
        snprintf(want, sizeof want, "# loom-gen job %d submit_id=", i);
        p = strstr(p, want);
        assert_non_null(p);
        p++;
    }
    free(buf);
    loom_gen_report_free(&r);
}

static char sink_dir[64];

/* Fixture: a fresh temporary directory for the directory sink, removed after. */
static int setup_sink_dir(void **state)
{
    (void)state;
    snprintf(sink_dir, sizeof sink_dir, "/tmp/loom-gen-test-XXXXXX");
    return mkdtemp(sink_dir) ? 0 : -1;
}

static int teardown_sink_dir(void **state)
{
    (void)state;
    return loom_test_rmtree(sink_dir);
}

static void dir_sink_manifest(void **state)
{
    char out[256];
    snprintf(out, sizeof out, "%s/run", sink_dir);
    loom_gen_vclock_t vc;
    loom_gen_clock_t clock;
    loom_gen_config_t cfg = vconfig(&vc, &clock, LOOM_GEN_CONSTANT, 100, 40, 8);
    loom_gen_sink_t sink;
    loom_err_t err;
    assert_int_equal(loom_gen_sink_dir(&sink, out, "sh", &err), LOOM_OK);
    loom_gen_report_t r;
    assert_int_equal(loom_gen_run(&cfg, &source4, &sink, &r, &err), LOOM_OK);
    sink.destroy(sink.ctx);
    loom_gen_report_free(&r);

    char path[512];
    snprintf(path, sizeof path, "%s/manifest.jsonl", out);
    FILE *m = fopen(path, "r");
    assert_non_null(m);
    char line[1024];
    int seen[40] = {0}, lines = 0;
    while (fgets(line, sizeof line, m)) {
        json_t *j = json_loads(line, 0, NULL);
        assert_non_null(j);
        json_int_t idx = json_integer_value(json_object_get(j, "index"));
        assert_true(idx >= 0 && idx < 40);
        seen[idx]++;
        lines++;
        assert_non_null(json_object_get(j, "due_s"));
        assert_non_null(json_object_get(j, "send_s"));
        assert_true(json_is_string(json_object_get(j, "job")));
        assert_true(json_is_object(json_object_get(j, "resources")));
        const char *file = json_string_value(json_object_get(j, "file"));
        char script[512];
        snprintf(script, sizeof script, "%s/%s", out, file);
        struct stat st;
        assert_int_equal(stat(script, &st), 0);
        assert_true(st.st_size > 0);
        char id[64];
        loom_gen_submit_id(8, NULL, 0, (uint64_t)idx, id);
        assert_string_equal(json_string_value(json_object_get(j, "submit_id")), id);
        json_decref(j);
    }
    fclose(m);
    assert_int_equal(lines, 40);
    for (int i = 0; i < 40; i++)
        assert_int_equal(seen[i], 1);
    /* A second run into the same directory is refused. */
    assert_int_equal(loom_gen_sink_dir(&sink, out, "sh", &err), LOOM_EEXIST);
    assert_non_null(strstr(err.msg, "manifest.jsonl"));
}

static volatile int stop_flag;
static int progress_calls;

static void stop_on_progress(void *ctx, const loom_gen_report_t *snap)
{
    progress_calls++;
    assert_true(snap->sent <= 11);
    stop_flag = 1;
}

static void stop_request(void **state)
{
    loom_gen_vclock_t vc;
    loom_gen_clock_t clock;
    loom_gen_config_t cfg = vconfig(&vc, &clock, LOOM_GEN_CONSTANT, 10, 100, 1);
    cfg.progress = stop_on_progress;
    cfg.progress_ns = LOOM_NS_PER_S;
    cfg.stop = &stop_flag;
    stop_flag = 0;
    loom_gen_sink_t sink;
    loom_gen_sink_dry_run(&sink, NULL);
    loom_gen_report_t r;
    loom_err_t err;
    assert_int_equal(loom_gen_run(&cfg, &source4, &sink, &r, &err), LOOM_OK);
    /* Progress runs when the clock reaches 1 s, before job 11 (due 1.1 s)
     * is released: jobs 0-10 went out, nothing after. */
    assert_true(r.stopped);
    assert_int_equal(progress_calls, 1);
    assert_int_equal(r.sent, 11);
    assert_int_equal(r.scheduled, 11);
    assert_int_equal(r.ok, 11);
    assert_true(r.records[10].state == LOOM_GEN_JOB_OK);
    assert_true(r.records[11].state == LOOM_GEN_JOB_UNSENT);
    assert_true(fabs(r.rate_schedule - 10.0) < 1e-9);
    sink.destroy(sink.ctx);
    loom_gen_report_free(&r);
}

static void submit_ids(void **state)
{
    char a[64], b[64], c[64], d[64], e[64], f[64];
    loom_gen_submit_id(1, NULL, 0, 5, a);
    loom_gen_submit_id(1, "", 0, 5, b);
    loom_gen_submit_id(1, "run2", 0, 5, c);
    loom_gen_submit_id(2, NULL, 0, 5, d);
    loom_gen_submit_id(1, NULL, 77, 5, e); /* another run's nonce: another id */
    loom_gen_submit_id(1, NULL, 77, 5, f);
    assert_string_equal(a, b);
    assert_string_equal(e, f);
    assert_true(strcmp(a, c) != 0 && strcmp(a, d) != 0 && strcmp(a, e) != 0);
    assert_true(strlen(a) == 19 && a[0] == 'g' && strcmp(a + 17, "-5") == 0);
}

/* A clock that oversleeps: every 7th sleep ends 350 us after its
 * deadline (the virtual clock otherwise). So job i is late when its own
 * sleep overslept, or when the pacer was still catching up. */
typedef struct lazy_clock {
    loom_gen_vclock_t vc;
    int sleeps;
} lazy_clock_t;

static int64_t lazy_now(void *ctx)
{
    return __atomic_load_n(&((lazy_clock_t *)ctx)->vc.now_ns, __ATOMIC_ACQUIRE);
}

static void lazy_sleep_until(void *ctx, int64_t deadline)
{
    lazy_clock_t *lc = ctx;
    if (++lc->sleeps % 7 == 0)
        deadline += 350 * LOOM_NS_PER_US;
    if (lazy_now(lc) < deadline)
        __atomic_store_n(&lc->vc.now_ns, deadline, __ATOMIC_RELEASE);
}

static void late_jobs_counted(void **state)
{
    lazy_clock_t lc = {0};
    loom_gen_clock_t clock = {.now = lazy_now, .sleep_until = lazy_sleep_until, .ctx = &lc};
    /* 10,000/s: a 350 us oversleep makes the next few jobs late as well */
    loom_gen_config_t cfg = {.arrivals = {.process = LOOM_GEN_CONSTANT, .rate = 10000},
                             .seed = 4,
                             .count = 700,
                             .clock = &clock,
                             .keep_records = true};
    loom_gen_sink_t sink;
    loom_gen_sink_dry_run(&sink, NULL);
    loom_gen_report_t r;
    loom_err_t err;
    assert_int_equal(loom_gen_run(&cfg, &source4, &sink, &r, &err), LOOM_OK);
    uint64_t late = 0, counted = 0;
    int64_t most = 0;
    for (size_t i = 0; i < r.n_records; i++) {
        int64_t l = r.records[i].send_ns - r.records[i].due_ns;
        if (l > LOOM_GEN_LATE_NS)
            late++;
        if (l > most)
            most = l;
    }
    for (int c = 0; c < LOOM_GEN_LATE_NCAUSES; c++)
        counted += r.late[c];
    /* Every job more than 100 us late is counted once. With an injected
     * clock the pacer cannot tell why a sleep ended late, so all of them
     * are BEHIND. */
    assert_true(late > 0);
    assert_int_equal(counted, late);
    assert_int_equal(r.late[LOOM_GEN_LATE_BEHIND], late);
    assert_int_equal(r.late_max_ns[LOOM_GEN_LATE_BEHIND], most);
    assert_int_equal(r.late[LOOM_GEN_LATE_NONE], 0);
    json_t *j = loom_gen_report_json(&r, &source4, &cfg);
    json_t *b = json_object_get(json_object_get(j, "late"), "behind");
    assert_int_equal(json_integer_value(json_object_get(b, "jobs")), (json_int_t)late);
    assert_true(json_is_null(json_object_get(j, "pacer_cpu")));
    json_decref(j);
    sink.destroy(sink.ctx);
    loom_gen_report_free(&r);
}

/* config.pin: the pacer thread runs on one CPU (the last the caller may
 * use) during the run, the senders keep them all, and the caller gets its
 * own mask back. */
typedef struct pin_seen {
    pthread_mutex_t mu;
    int pacer_cpus; /* CPUs in the pacer's mask, seen from progress() */
    int pacer_cpu;  /* the one */
    int sender_min; /* fewest CPUs in a sender's mask */
} pin_seen_t;

static int mask_count(cpu_set_t *m, int *one)
{
    int n = CPU_COUNT(m);
    for (int c = 0; c < CPU_SETSIZE && one; c++)
        if (CPU_ISSET(c, m))
            *one = c;
    return n;
}

static void pin_progress(void *ctx, const loom_gen_report_t *snap)
{
    pin_seen_t *p = ctx;
    cpu_set_t m;
    assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof m, &m), 0);
    p->pacer_cpus = mask_count(&m, &p->pacer_cpu);
}

static int pin_send(void *ctx, loom_gen_job_t **jobs, size_t n, loom_err_t *err)
{
    pin_seen_t *p = ctx;
    cpu_set_t m;
    assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof m, &m), 0);
    int k = mask_count(&m, NULL);
    pthread_mutex_lock(&p->mu);
    if (p->sender_min == 0 || k < p->sender_min)
        p->sender_min = k;
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < n; i++)
        jobs[i]->rc = LOOM_OK;
    return LOOM_OK;
}

static void pin_pacer(void **state)
{
    cpu_set_t before, after;
    assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof before, &before), 0);
    int last = -1, ncpu = mask_count(&before, &last);
    for (int pin = 0; pin < 2; pin++) {
        pin_seen_t seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
        loom_gen_vclock_t vc;
        loom_gen_clock_t clock;
        loom_gen_config_t cfg = vconfig(&vc, &clock, LOOM_GEN_CONSTANT, 100, 300, 5);
        cfg.pin = pin;
        cfg.progress = pin_progress;
        cfg.progress_ctx = &seen;
        cfg.progress_ns = LOOM_NS_PER_S;
        loom_gen_sink_t sink = {.name = "pin", .send = pin_send, .ctx = &seen};
        loom_gen_report_t r;
        loom_err_t err;
        assert_int_equal(loom_gen_run(&cfg, &source4, &sink, &r, &err), LOOM_OK);
        assert_int_equal(r.ok, 300);
        if (pin && ncpu >= 2) {
            assert_int_equal(r.pacer_cpu, last);
            assert_int_equal(seen.pacer_cpus, 1);
            assert_int_equal(seen.pacer_cpu, last);
        } else {
            assert_int_equal(r.pacer_cpu, -1);
            assert_int_equal(seen.pacer_cpus, ncpu);
        }
        assert_int_equal(seen.sender_min, ncpu);
        assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof after, &after), 0);
        assert_true(CPU_EQUAL(&before, &after));
        loom_gen_report_free(&r);
    }
    if (ncpu < 2)
        print_message("only one CPU here: pinning checked as refused\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(deterministic_for_a_seed),
        cmocka_unit_test(pinned_first_jobs),
        cmocka_unit_test(send_gaps_on_virtual_clock),
        cmocka_unit_test(chi_square_of_choices),
        cmocka_unit_test(duration_stop),
        cmocka_unit_test(backlog_drop),
        cmocka_unit_test(backlog_fail),
        cmocka_unit_test(backlog_wait),
        cmocka_unit_test(broken_sink_stops),
        cmocka_unit_test(per_job_failures_counted),
        cmocka_unit_test(stream_sink_in_order),
        cmocka_unit_test_setup_teardown(dir_sink_manifest, setup_sink_dir, teardown_sink_dir),
        cmocka_unit_test(stop_request),
        cmocka_unit_test(submit_ids),
        cmocka_unit_test(late_jobs_counted),
        cmocka_unit_test(pin_pacer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
