/* The loomd sink against the real RPC stack (libmicrohttpd server, libcurl
 * client) with an in-process job.submit that keeps the first job per
 * submit_id, as loomd does: every generated job arrives exactly once, also
 * when the server is stopped and started again on the same port in the
 * middle of the run; an unreachable server breaks the sink after its retry
 * time; a JSON-RPC error fails that job alone. The pacer runs on a virtual
 * clock; nothing here asserts how long anything took. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "loom/gen.h"
#include "loom/rpc.h"
#include "test_util.h"

enum { N = 600 };

typedef struct store {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int first_id[N]; /* job id given to index i, 0: none */
    int calls[N];    /* job.submit calls seen per index */
    int next_id;
    int handled;
} store_t;

static store_t store;

static loom_rpc_status_t job_submit(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    const char *sid = json_string_value(json_object_get(params, "submit_id"));
    const char *dash = sid ? strrchr(sid, '-') : NULL;
    long idx = dash ? strtol(dash + 1, NULL, 10) : -1;
    if (idx < 0 || idx >= N) {
        loom_rpc_call_invalid_param(call, "submit_id", "gHASH-INDEX",
                                    json_object_get(params, "submit_id"));
        return LOOM_RPC_DONE;
    }
    if (strcmp(json_string_value(json_object_get(params, "name")), "reject") == 0) {
        loom_rpc_call_fail(call, -32010, "job rejected: no such partition", NULL);
        return LOOM_RPC_DONE;
    }
    pthread_mutex_lock(&store.mu);
    store.calls[idx]++;
    if (!store.first_id[idx])
        store.first_id[idx] = ++store.next_id;
    int id = store.first_id[idx];
    store.handled++;
    pthread_cond_broadcast(&store.cv);
    pthread_mutex_unlock(&store.mu);
    loom_rpc_call_complete(call, json_pack("{s:i, s:s}", "id", id, "state", "PENDING"));
    return LOOM_RPC_DONE;
}

static const double weights[] = {3, 1};
static const char *const names[] = {"train", "reject"};
static int reject_some;

static int make(void *ctx, loom_gen_job_t *job, loom_rng_t *rng, loom_err_t *err)
{
    loom_buf_appendf(&job->text, "#!/bin/sh\necho %llu\n", (unsigned long long)job->index);
    const char *name = reject_some ? names[job->choice] : "train";
    job->spec = json_pack("{s:s, s:s, s:s, s:s}", "name", name, "script", job->text.data, "format",
                          "batch", "submit_id", job->submit_id);
    return LOOM_OK;
}

static loom_gen_source_t source = {.n = 2, .weights = weights, .names = names, .make = make};

static loom_rpc_server_t *start_server(loom_rpc_dispatcher_t *d, const char *listen)
{
    loom_rpc_server_config_t cfg;
    loom_rpc_server_config_init(&cfg);
    cfg.listen = listen;
    cfg.allow_no_auth = true;
    cfg.drain_timeout_s = 5;
    loom_rpc_server_t *s = NULL;
    loom_err_t err;
    for (int tries = 0; tries < 50; tries++) { /* the old socket may linger briefly */
        if (loom_rpc_server_start(&cfg, d, &s, &err) == LOOM_OK)
            return s;
        usleep(100000);
    }
    fail_msg("cannot start the server on %s: %s", listen, err.msg);
    return NULL;
}

typedef struct run_args {
    loom_gen_config_t *cfg;
    loom_gen_sink_t *sink;
    loom_gen_report_t *report;
    loom_err_t err;
    int rc;
} run_args_t;

static void *run_thread(void *arg)
{
    run_args_t *a = arg;
    a->rc = loom_gen_run(a->cfg, &source, a->sink, a->report, &a->err);
    return NULL;
}

static void setup_store(void)
{
    memset(&store, 0, sizeof store);
    pthread_mutex_init(&store.mu, NULL);
    pthread_cond_init(&store.cv, NULL);
}

static void exactly_once_across_a_restart(void **state)
{
    setup_store();
    loom_rpc_dispatcher_t *d;
    loom_err_t err;
    assert_int_equal(loom_rpc_dispatcher_new(NULL, &d, &err), LOOM_OK);
    assert_int_equal(loom_rpc_dispatcher_add(d, "job.submit", job_submit, NULL, NULL, 0, &err),
                     LOOM_OK);
    loom_rpc_server_t *srv = start_server(d, "127.0.0.1:0");
    char listen[64], url[96];
    snprintf(listen, sizeof listen, "127.0.0.1:%u", loom_rpc_server_port(srv));
    snprintf(url, sizeof url, "http://%s", listen);

    loom_gen_sink_t sink;
    assert_int_equal(loom_gen_sink_submit(&sink, url, NULL, 60 * LOOM_NS_PER_S, NULL, &err),
                     LOOM_OK);
    loom_gen_vclock_t vc = {0};
    loom_gen_clock_t clock = loom_gen_clock_virtual(&vc);
    loom_gen_config_t cfg = {.arrivals = {.process = LOOM_GEN_POISSON, .rate = 1000},
                             .seed = 77,
                             .count = N,
                             .clock = &clock,
                             .window = 32,
                             .workers = 3,
                             .batch = 8,
                             .keep_records = true,
                             .on_backlog = LOOM_GEN_BACKLOG_WAIT};
    loom_gen_report_t *report = malloc(sizeof *report);
    run_args_t args = {.cfg = &cfg, .sink = &sink, .report = report};
    pthread_t th;
    pthread_create(&th, NULL, run_thread, &args);

    /* Restart the server once a third of the jobs are in. */
    pthread_mutex_lock(&store.mu);
    while (store.handled < N / 3)
        pthread_cond_wait(&store.cv, &store.mu);
    pthread_mutex_unlock(&store.mu);
    loom_rpc_server_stop(srv);
    /* Down longer than the rpc client's own retries (100+200+400 ms), so the
     * sink's retry loop has to carry the batches over. */
    usleep(1200000);
    srv = start_server(d, listen);

    pthread_join(th, NULL);
    assert_int_equal(args.rc, LOOM_OK);
    assert_int_equal(report->sent, N);
    assert_int_equal(report->ok, N);
    for (int i = 0; i < N; i++) {
        assert_true(store.first_id[i] != 0); /* arrived */
        assert_true(report->records[i].state == LOOM_GEN_JOB_OK);
    }
    assert_int_equal(store.next_id, N); /* no index got two jobs */
    loom_gen_report_free(report);
    free(report);
    sink.destroy(sink.ctx);
    loom_rpc_server_stop(srv);
    loom_rpc_dispatcher_free(d);
}

static void rpc_error_fails_one_job(void **state)
{
    setup_store();
    loom_rpc_dispatcher_t *d;
    loom_err_t err;
    loom_rpc_dispatcher_new(NULL, &d, &err);
    loom_rpc_dispatcher_add(d, "job.submit", job_submit, NULL, NULL, 0, &err);
    loom_rpc_server_t *srv = start_server(d, "127.0.0.1:0");
    char url[96];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", loom_rpc_server_port(srv));
    loom_gen_sink_t sink;
    assert_int_equal(loom_gen_sink_submit(&sink, url, NULL, 0, NULL, &err), LOOM_OK);
    loom_gen_vclock_t vc = {0};
    loom_gen_clock_t clock = loom_gen_clock_virtual(&vc);
    loom_gen_config_t cfg = {.arrivals = {.process = LOOM_GEN_CONSTANT, .rate = 100},
                             .seed = 5,
                             .count = 100,
                             .clock = &clock};
    loom_gen_report_t *report = malloc(sizeof *report);
    reject_some = 1;
    int rc = loom_gen_run(&cfg, &source, &sink, report, &err);
    reject_some = 0;
    assert_int_equal(rc, LOOM_OK);
    assert_true(report->failed == report->per_choice[1] && report->failed > 0);
    assert_true(report->ok == report->per_choice[0]);
    assert_non_null(strstr(report->first_error, "no such partition"));
    loom_gen_report_free(report);
    free(report);
    sink.destroy(sink.ctx);
    loom_rpc_server_stop(srv);
    loom_rpc_dispatcher_free(d);
}

static void unreachable_breaks_the_sink(void **state)
{
    /* A port nobody listens on: bind one, learn it, close it. */
    setup_store();
    loom_rpc_dispatcher_t *d;
    loom_err_t err;
    loom_rpc_dispatcher_new(NULL, &d, &err);
    loom_rpc_server_t *srv = start_server(d, "127.0.0.1:0");
    char url[96];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", loom_rpc_server_port(srv));
    loom_rpc_server_stop(srv);
    loom_gen_sink_t sink;
    assert_int_equal(loom_gen_sink_submit(&sink, url, NULL, 500 * LOOM_NS_PER_MS, NULL, &err),
                     LOOM_OK);
    loom_gen_vclock_t vc = {0};
    loom_gen_clock_t clock = loom_gen_clock_virtual(&vc);
    loom_gen_config_t cfg = {.arrivals = {.process = LOOM_GEN_CONSTANT, .rate = 100},
                             .count = 50,
                             .clock = &clock,
                             .workers = 1};
    loom_gen_report_t *report = malloc(sizeof *report);
    int rc = loom_gen_run(&cfg, &source, &sink, report, &err);
    assert_int_equal(rc, LOOM_EUNAVAIL);
    assert_non_null(strstr(err.msg, "sink submit: job.submit to http://127.0.0.1:"));
    assert_int_equal(report->ok, 0);
    assert_true(report->failed == report->sent);
    loom_gen_report_free(report);
    free(report);
    sink.destroy(sink.ctx);
    loom_rpc_dispatcher_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exactly_once_across_a_restart),
        cmocka_unit_test(rpc_error_fails_one_job),
        cmocka_unit_test(unreachable_breaks_the_sink),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
