/* Allocation-failure injection, as SQLite tests it (issue 18, "Also";
 * issue 34): the Nth allocation fails, for every N until a run needs no
 * more, through an RPC round trip (a batch through the dispatcher), a job
 * submission through loomd's methods into a real store, catalog loading,
 * template rendering, the scheduling runtime (a job no node can hold, a
 * dependency, an account quota), the ONNX reader, the simulator (a JSONL
 * trace read and replayed) and the model repository (opened, an entry
 * added, listed).
 *
 * Each run's outcome is checked exactly against a run without failures:
 * either that run's very result, or the error an allocation failure must
 * give (LOOM_ENOMEM with a message; JSON-RPC -32603 in place of a reply)
 * with nothing handed out and the state as it was (no job stored for a
 * refused submission, no entry for a refused zoo.add, the runtime not
 * knowing a refused job); and no run leaks (LeakSanitizer's check under
 * ASan after each of the first 64 runs, then every 64th, naming the N).
 * The runtime's runs also check that once memory is back the jobs end as
 * they would have (no job left pending for ever, no quota passed).
 *
 * Two hooks share one counter: jansson's allocator (json_set_alloc_funcs),
 * for every JSON value, parse and dump; and loom's own malloc, calloc and
 * realloc calls (and strdup, strndup: libc's own malloc inside them is
 * out of --wrap's reach), which tests.cmake links to the __wrap_ functions below
 * (-Wl,--wrap: only calls from objects linked into this program, i.e.
 * libloom and this file; SQLite's and libc's own stay untouched). */
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#endif
#endif

#include "daemon/methods.h"
#include "daemon/quota.h"
#include "daemon/runner_int.h"
#include "loom/catalog.h"
#include "loom/runtime.h"
#include "loom/sim.h"
#include "loom/template.h"
#include "loom/zoo.h"
#include "test_util.h"
#include "zoo_graphs.h"

static _Atomic long alloc_count, fail_at; /* the store's threads allocate too */
static _Atomic bool wrap_on;              /* count loom's own allocations too */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);

static bool fail_now(void)
{
    return ++alloc_count == fail_at;
}

void *__wrap_malloc(size_t n)
{
    return wrap_on && fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return wrap_on && fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    return wrap_on && fail_now() ? NULL : __real_realloc(p, n);
}

/* libc's strdup allocates inside libc, where --wrap=malloc does not reach */
char *__wrap_strdup(const char *s)
{
    return wrap_on && fail_now() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
    return wrap_on && fail_now() ? NULL : __real_strndup(s, n);
}

static void *failing_malloc(size_t n)
{
    return fail_now() ? NULL : __real_malloc(n);
}

static void arm(long n)
{
    alloc_count = 0;
    fail_at = n;
}

/* Runs `body` with the Nth allocation failing for N = 1, 2, ... until a run
 * completes without reaching N. Returns how many runs there were. Under
 * ASan, a run that leaks fails the test with its N. */
static long sweep(void (*body)(void *), void *ctx)
{
    json_set_alloc_funcs(failing_malloc, free);
    long n = 1;
    for (;; n++) {
        arm(n);
        wrap_on = true;
        body(ctx);
        wrap_on = false;
        bool last = alloc_count < n;
#ifdef HAVE_LSAN
        /* every run of the first 64, then every 64th (a check scans the
         * heap: catalog loading alone is 2000 runs) and the last */
        if ((n <= 64 || n % 64 == 0 || last) && __lsan_do_recoverable_leak_check())
            fail_msg("a leak with allocation %ld failing, or one of the %ld before it "
                     "(LeakSanitizer's report above)",
                     n, n <= 64 ? 0L : (n % 64 ? n % 64 - 1 : 63L));
#endif
        if (last)
            break;
    }
    arm(0);
    json_set_alloc_funcs(__real_malloc, free);
    return n;
}

/* Allocations go on as normal inside a check, and fail again after it. */
static bool pause_failures(void)
{
    bool on = wrap_on;
    wrap_on = false;
    json_set_alloc_funcs(__real_malloc, free);
    return on;
}

static void resume_failures(bool on)
{
    json_set_alloc_funcs(failing_malloc, free);
    wrap_on = on;
}

/* The outcome of a call whose allocation failed: LOOM_ENOMEM exactly, and
 * the error says so (err NULL: the call takes none). */
static void assert_nomem(int rc, const loom_err_t *err, const char *what)
{
    if (rc != LOOM_ENOMEM)
        fail_msg("%s with allocation %ld failing: returned %d (%s), expected LOOM_ENOMEM", what,
                 (long)fail_at, rc, err ? err->msg : "");
    if (err && (err->code != LOOM_ENOMEM || !err->msg[0]))
        fail_msg("%s with allocation %ld failing: error %d '%s', expected LOOM_ENOMEM with a "
                 "message",
                 what, (long)fail_at, err->code, err->msg);
}

/* What a run without failures gives, to compare each run with. */
static struct {
    char *rpc; /* the batch's reply */
    size_t catalog_jobs;
    char *render;
    size_t onnx_nodes, onnx_tensors;
    size_t sim_tasks, sim_completed;
    double sim_mean_jct_s;
} ref;

static loom_rpc_status_t h_echo(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)ctx;
    json_t *r = params ? json_deep_copy(params) : json_null();
    if (!r)
        loom_rpc_call_fail(call, LOOM_RPC_INTERNAL_ERROR, "out of memory", NULL);
    else
        loom_rpc_call_complete(call, r);
    return LOOM_RPC_DONE;
}

static const char rpc_batch[] =
    "[{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":{\"a\":[1,2,\"x\"]},"
    "\"id\":1},{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[3],\"id\":"
    "\"two\"},{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":3}]";

/* An error reply of `code` to request id (NULL: id null). */
static bool is_error(const json_t *r, int code, const json_t *id)
{
    const json_t *e = json_object_get(r, "error");
    return json_is_object(e) && json_integer_value(json_object_get(e, "code")) == code &&
           (id ? json_equal(json_object_get(r, "id"), (json_t *)id)
               : json_is_null(json_object_get(r, "id")));
}

/* The batch's reply is the reference, or an internal error in place of the
 * whole reply or of some of its replies (their ids kept), or nothing with
 * LOOM_ENOMEM. */
static void rpc_round_trip(void *ctx)
{
    loom_rpc_dispatcher_t *d = ctx;
    loom_buf_t out = LOOM_BUF_INIT;
    int rc = loom_rpc_handle(d, rpc_batch, strlen(rpc_batch), NULL, &out);
    bool on = pause_failures();
    if (rc != LOOM_OK) {
        assert_nomem(rc, NULL, "loom_rpc_handle");
        assert_int_equal(out.len, 0);
    } else if (strcmp(out.data, ref.rpc) != 0) {
        json_t *got = json_loads(out.data, 0, NULL), *want = json_loads(ref.rpc, 0, NULL);
        bool ok = got && json_is_object(got) && is_error(got, LOOM_RPC_INTERNAL_ERROR, NULL);
        if (json_is_array(got) && json_array_size(got) == json_array_size(want)) {
            ok = true;
            for (size_t i = 0; i < json_array_size(got); i++) {
                json_t *g = json_array_get(got, i), *w = json_array_get(want, i);
                /* its id, or null when even the id's copy failed; an
                 * error reply may lose its optional "data" */
                const json_t *id = json_object_get(w, "id");
                int code =
                    (int)json_integer_value(json_object_get(json_object_get(w, "error"), "code"));
                ok = ok && (json_equal(g, w) || is_error(g, LOOM_RPC_INTERNAL_ERROR, id) ||
                            is_error(g, LOOM_RPC_INTERNAL_ERROR, NULL) ||
                            (code && is_error(g, code, id)));
            }
        }
        if (!ok)
            fail_msg("allocation %ld failing: reply %s, expected %s or internal errors in its "
                     "place",
                     (long)fail_at, out.data, ref.rpc);
        json_decref(got);
        json_decref(want);
    }
    loom_buf_free(&out);
    resume_failures(on);
}

static void rpc_under_failures(void **state)
{
    (void)state;
    loom_rpc_dispatcher_t *d;
    loom_err_t err;
    assert_int_equal(loom_rpc_dispatcher_new(NULL, &d, &err), LOOM_OK);
    assert_int_equal(loom_rpc_dispatcher_add(d, "echo", h_echo, NULL, NULL, 0, &err), LOOM_OK);
    loom_buf_t out = LOOM_BUF_INIT;
    assert_int_equal(loom_rpc_handle(d, rpc_batch, strlen(rpc_batch), NULL, &out), LOOM_OK);
    ref.rpc = loom_buf_detach(&out);
    long runs = sweep(rpc_round_trip, d);
    print_message("rpc round trip: %ld runs\n", runs);
    assert_true(runs > 10);
    free(ref.rpc);
    loom_rpc_dispatcher_free(d);
}

typedef struct submit_ctx {
    loom_rpc_dispatcher_t *d;
    loom_store_t *store;
} submit_ctx_t;

/* job.submit of a job named by submit_id sid. */
static int submit_sid(submit_ctx_t *c, long sid, loom_buf_t *out)
{
    char body[512];
    snprintf(body, sizeof body,
             "{\"jsonrpc\":\"2.0\",\"method\":\"job.submit\",\"params\":{\"name\":\"a\","
             "\"script\":\"echo hi\",\"resources\":{\"cpus\":2,\"memory\":\"1GiB\"},"
             "\"labels\":{\"team\":\"x\"},\"submit_id\":\"run-%ld\"},\"id\":7}",
             sid);
    return loom_rpc_handle(c->d, body, strlen(body), NULL, out);
}

/* A job.submit: a reply with the new job's id and one more job in the
 * store; or an error and no job stored: -32603, -32004 (the store could
 * not take it, safe to retry; docs/protocol.md) or LOOM_ENOMEM and no
 * reply. Or, when the reply itself could not be made after the job was
 * stored (-32603, or LOOM_ENOMEM and no reply), the same submission again
 * (its submit_id) answers with that job, created false: what
 * docs/protocol.md tells a client to do. */
static void submit_once(void *p)
{
    submit_ctx_t *c = p;
    int64_t before = 0, after = 0;
    loom_err_t err;
    bool on = pause_failures();
    assert_int_equal(loom_store_max_id(c->store, &before, &err), LOOM_OK);
    resume_failures(on);
    loom_buf_t out = LOOM_BUF_INIT;
    int rc = submit_sid(c, fail_at, &out);
    on = pause_failures();
    assert_int_equal(loom_store_max_id(c->store, &after, &err), LOOM_OK);
    json_t *r = rc == LOOM_OK ? json_loads(out.data, 0, NULL) : NULL;
    json_t *id = json_object_get(json_object_get(r, "result"), "id");
    bool internal = is_error(r, LOOM_RPC_INTERNAL_ERROR, json_object_get(r, "id"));
    if (rc != LOOM_OK)
        assert_nomem(rc, NULL, "job.submit");
    if (id) {
        assert_int_equal(json_integer_value(id), before + 1);
        assert_int_equal(after, before + 1);
    } else if ((rc != LOOM_OK || internal) && after == before + 1) {
        loom_buf_t again = LOOM_BUF_INIT;
        assert_int_equal(submit_sid(c, fail_at, &again), LOOM_OK);
        json_t *a = json_loads(again.data, 0, NULL), *res = json_object_get(a, "result");
        if (json_integer_value(json_object_get(res, "id")) != after ||
            !json_is_false(json_object_get(res, "created")))
            fail_msg("allocation %ld failing: no reply with job %lld stored, then the same "
                     "submission answered %s; expected job %lld, created false",
                     (long)fail_at, (long long)after, again.data, (long long)after);
        json_decref(a);
        loom_buf_free(&again);
    } else if (!(rc != LOOM_OK || internal ||
                 is_error(r, LOOMD_ERR_STORE, json_object_get(r, "id"))) ||
               after != before) {
        fail_msg(
            "allocation %ld failing: rc %d, reply %s with %lld jobs stored before, %lld after; "
            "expected the job's id and one more, or -32603/-32004 and none",
            (long)fail_at, rc, out.data ? out.data : "(none)", (long long)before, (long long)after);
    }
    json_decref(r);
    loom_buf_free(&out);
    resume_failures(on);
}

static char dir[64];

/* Fixture: a fresh temporary state directory, removed after the test. */
static int setup_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/loom-allocfail-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
    (void)state;
    return loom_test_rmtree(dir);
}

static void submit_under_failures(void **state)
{
    (void)state;
    char db[128];
    snprintf(db, sizeof db, "%s/loom.db", dir);
    submit_ctx_t c;
    loom_err_t err;
    assert_int_equal(loom_store_open(db, NULL, &c.store, &err), LOOM_OK);
    loomd_info_t info = {.state_dir = dir, .durability = "normal"};
    loomd_methods_t m = {.store = c.store, .info = &info};
    assert_int_equal(loom_rpc_dispatcher_new(NULL, &c.d, &err), LOOM_OK);
    assert_int_equal(loomd_methods_add(c.d, &m, &err), LOOM_OK);
    long runs = sweep(submit_once, &c);
    print_message("job submission: %ld runs\n", runs);
    assert_true(runs > 10);
    loom_rpc_dispatcher_free(c.d);
    loom_store_close(c.store);
}

/* The catalog with the reference's jobs, or LOOM_ENOMEM and none. */
static void catalog_once(void *p)
{
    (void)p;
    loom_catalog_t *cat = NULL;
    loom_catalog_issues_t is = LOOM_CATALOG_ISSUES_INIT;
    loom_err_t err;
    int rc = loom_catalog_load_file("workloads/catalogs/demo.json", &cat, &is, &err);
    bool on = pause_failures();
    if (rc == LOOM_OK) {
        assert_int_equal(loom_catalog_job_count(cat), ref.catalog_jobs);
        assert_int_equal(is.count, 0);
    } else {
        assert_nomem(rc, &err, "loom_catalog_load_file");
        assert_null(cat);
    }
    loom_catalog_free(cat);
    loom_catalog_issues_free(&is);
    resume_failures(on);
}

static void catalog_under_failures(void **state)
{
    (void)state;
    loom_catalog_t *cat = NULL;
    loom_catalog_issues_t is = LOOM_CATALOG_ISSUES_INIT;
    loom_err_t err;
    assert_int_equal(loom_catalog_load_file("workloads/catalogs/demo.json", &cat, &is, &err),
                     LOOM_OK);
    ref.catalog_jobs = loom_catalog_job_count(cat);
    loom_catalog_free(cat);
    long runs = sweep(catalog_once, NULL);
    print_message("catalog loading: %ld runs\n", runs);
    assert_true(runs > 10);
}

static const char render_template[] = "#!/bin/bash\n# {{name}}\n{{#items}}echo {{k}}\n{{/items}}"
                                      "{{^none}}n={{gpus}}{{/none}}\n";

static int render(loom_buf_t *out, loom_err_t *err)
{
    json_t *data = json_pack("{s:s,s:[{s:s},{s:s}],s:i}", "name", "bert <large>", "items", "k",
                             "a'b", "k", "c\"d", "gpus", 4);
    if (!data)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    loom_template_options_t o = {.escape = LOOM_TEMPLATE_ESCAPE_SHELL};
    int rc = loom_template_render_string(render_template, strlen(render_template), "t.sh.mustache",
                                         data, &o, out, err);
    json_decref(data);
    return rc;
}

/* The reference's text, or LOOM_ENOMEM. */
static void render_once(void *p)
{
    (void)p;
    loom_buf_t out = LOOM_BUF_INIT;
    loom_err_t err;
    int rc = render(&out, &err);
    bool on = pause_failures();
    if (rc == LOOM_OK)
        assert_string_equal(out.data, ref.render);
    else
        assert_nomem(rc, &err, "loom_template_render_string");
    loom_buf_free(&out);
    resume_failures(on);
}

static void render_under_failures(void **state)
{
    (void)state;
    loom_buf_t out = LOOM_BUF_INIT;
    loom_err_t err;
    assert_int_equal(render(&out, &err), LOOM_OK);
    ref.render = loom_buf_detach(&out);
    long runs = sweep(render_once, NULL);
    print_message("template rendering: %ld runs\n", runs);
    assert_true(runs > 5);
    free(ref.render);
}

/* ------------------------------------------------------------ the runtime */

/* One node: 8 CPUs, 16 GiB, 2 GPUs. */
static loom_runtime_t *runtime_new(void)
{
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    loom_runtime_t *rt = NULL;
    if (loom_sched_cluster_add_node(&c, "n0", 8000, 16384, 2, "A100", 0, NULL, NULL) == LOOM_OK)
        loom_runtime_new(&c, &(loom_runtime_config_t){0}, &rt, NULL);
    loom_sched_cluster_free(&c);
    return rt;
}

static loom_runtime_job_t rjob(uint64_t id, int gpus)
{
    return (loom_runtime_job_t){.id = id,
                                .submit_s = (double)id,
                                .req = {.cpu_milli = 1000,
                                        .mem_mib = 1024,
                                        .num_gpus = gpus,
                                        .gpu_milli = gpus ? LOOM_SCHED_MILLI : 0}};
}

typedef struct seen {
    uint64_t started[8], rejected[8];
    size_t nstarted, nrejected;
} seen_t;

static int record(void *ctx, const loom_runtime_action_t *a)
{
    seen_t *s = ctx;
    if (a->kind == LOOM_RUNTIME_START && s->nstarted < 8)
        s->started[s->nstarted++] = a->id;
    if (a->kind == LOOM_RUNTIME_REJECT && s->nrejected < 8)
        s->rejected[s->nrejected++] = a->id;
    return LOOM_OK;
}

static bool in(const uint64_t *ids, size_t n, uint64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

/* Hands job to rt: LOOM_OK, or LOOM_ENOMEM and the runtime has not heard of it. */
static bool submit_or_nomem(loom_runtime_t *rt, const loom_runtime_job_t *job)
{
    loom_err_t err;
    int rc = loom_runtime_submit(rt, job, &err);
    loom_runtime_info_t i;
    if (rc != LOOM_OK) {
        assert_int_equal(rc, LOOM_ENOMEM);
        assert_int_equal(loom_runtime_get(rt, job->id, &i), LOOM_ENOTFOUND);
    }
    return rc == LOOM_OK;
}

static void check_rt(loom_runtime_t *rt)
{
    loom_err_t err;
    if (loom_runtime_check(rt, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
}

/* A job no node can hold (3 GPUs on a 2-GPU node) beside one that fits:
 * the first is refused at submission or rejected by a step, never left
 * pending; the second runs. */
static void runtime_reject_once(void *p)
{
    (void)p;
    loom_runtime_t *rt = runtime_new();
    if (!rt)
        return;
    loom_runtime_job_t wide = rjob(1, 3), one = rjob(2, 1);
    bool has_wide = submit_or_nomem(rt, &wide), has_one = submit_or_nomem(rt, &one);
    seen_t s = {0};
    loom_runtime_step(rt, 10, record, &s);
    wrap_on = false; /* memory is back: a step finishes what the failing one left */
    json_set_alloc_funcs(__real_malloc, free);
    loom_runtime_step(rt, 11, record, &s);
    loom_runtime_info_t i;
    assert_int_equal(loom_runtime_get(rt, 1, &i), LOOM_ENOTFOUND);
    assert_true(in(s.rejected, s.nrejected, 1) == has_wide);
    if (has_one)
        assert_true(in(s.started, s.nstarted, 2));
    check_rt(rt);
    loom_runtime_free(rt);
    json_set_alloc_funcs(failing_malloc, free);
}

static void runtime_reject_under_failures(void **state)
{
    (void)state;
    long runs = sweep(runtime_reject_once, NULL);
    print_message("runtime, a job no node can hold: %ld runs\n", runs);
    assert_true(runs > 3);
}

/* Account quota: account "ml" may run one job at a time. Two jobs of
 * "ml" handed over through loomd's account table: however allocation
 * fails, at most one of them ever runs. */
static void runtime_quota_once(void *p)
{
    (void)p;
    loom_runtime_t *rt = runtime_new();
    loomd_accounts_t *acc = NULL;
    loomd_quotas_t qs = {0};
    if (!rt || loomd_accounts_new(&acc, NULL) != LOOM_OK ||
        loomd_quota_parse("account:ml=running=1", &qs, NULL) != LOOM_OK ||
        loomd_quota_apply(&qs, acc, rt, NULL) != LOOM_OK)
        goto done;
    seen_t s = {0};
    for (uint64_t id = 1; id <= 2; id++) {
        loom_runtime_job_t j = rjob(id, 1);
        if (loomd_account_id(acc, "ml", &j.account) != LOOM_OK)
            continue; /* not handed over without its account */
        assert_int_not_equal(j.account, 0);
        submit_or_nomem(rt, &j);
    }
    loom_runtime_step(rt, 10, record, &s);
    wrap_on = false;
    json_set_alloc_funcs(__real_malloc, free);
    loom_runtime_step(rt, 11, record, &s);
    assert_true(s.nstarted <= 1);
    assert_true(loom_runtime_nrunning(rt) <= 1);
    check_rt(rt);
    json_set_alloc_funcs(failing_malloc, free);
done:
    loomd_accounts_free(acc);
    loom_runtime_free(rt);
}

static void runtime_quota_under_failures(void **state)
{
    (void)state;
    long runs = sweep(runtime_quota_once, NULL);
    print_message("runtime, an account quota: %ld runs\n", runs);
    assert_true(runs > 3);
}

/* Job 1 has ended well, as the caller's record says. */
static loom_runtime_dep_job_t outcome(void *ctx, uint64_t id)
{
    (void)ctx;
    return id == 1 ? LOOM_RUNTIME_DEP_OK : LOOM_RUNTIME_DEP_UNKNOWN;
}

/* Job 2 waits for job 1 (afterok), its options read by loomd's glue and
 * handed to the runtime, which judges it. Either it is handed over, or
 * LOOM_ENOMEM and the runtime has not heard of it; handed over, it starts
 * once job 1 has ended well, however the steps' allocations failed (a job
 * held for a dependency that nobody judges would wait for ever). */
static void runtime_deps_once(void *p)
{
    (void)p;
    loom_runtime_t *rt = runtime_new();
    if (!rt)
        return;
    loom_runtime_set_outcomes(rt, outcome, NULL);
    loomd_runner_t r = {0};
    loom_runtime_job_t first = rjob(1, 1), second = rjob(2, 1);
    loom_job_t job = {.id = 2, .name = "b", .options_json = "{\"dependency\":\"afterok:1\"}"};
    bool has_first = submit_or_nomem(rt, &first), has_second = false;
    int rc = loomd__job_blocks(&r, &job, &second);
    if (rc == LOOM_OK)
        has_second = submit_or_nomem(rt, &second);
    else
        assert_int_equal(rc, LOOM_ENOMEM);
    seen_t s = {0};
    loom_runtime_step(rt, 10, record, &s);
    wrap_on = false;
    json_set_alloc_funcs(__real_malloc, free);
    loom_runtime_step(rt, 11, record, &s);
    if (has_first) { /* job 1 ends */
        assert_true(in(s.started, s.nstarted, 1));
        assert_false(in(s.started, s.nstarted, 2));
        assert_int_equal(loom_runtime_remove(rt, 1, 12), LOOM_OK);
    }
    loom_runtime_step(rt, 13, record, &s);
    assert_true(in(s.started, s.nstarted, 2) == has_second);
    assert_int_equal(loom_runtime_dep_waiting(rt), 0);
    check_rt(rt);
    free(r.dep_text);
    loom_runtime_free(rt);
    json_set_alloc_funcs(failing_malloc, free);
}

static void runtime_deps_under_failures(void **state)
{
    (void)state;
    long runs = sweep(runtime_deps_once, NULL);
    print_message("runtime, a dependency: %ld runs\n", runs);
    assert_true(runs > 3);
}

/* ------------------------------------------------------- the ONNX reader */

#define ONNX_MODEL "tests/fuzz/corpus/onnx/cnn.onnx"

/* The reference's graph (nodes, tensors), or LOOM_ENOMEM and no model. */
static void onnx_once(void *p)
{
    (void)p;
    loom_est_model_t *m = NULL;
    loom_err_t err;
    int rc = loom_est_model_load(ONNX_MODEL, &m, &err);
    bool on = pause_failures();
    if (rc == LOOM_OK) {
        assert_int_equal(m->nn, ref.onnx_nodes);
        assert_int_equal(m->nt, ref.onnx_tensors);
    } else {
        assert_nomem(rc, &err, "loom_est_model_load");
        assert_null(m);
    }
    loom_est_model_free(m);
    resume_failures(on);
}

static void onnx_under_failures(void **state)
{
    (void)state;
    loom_est_model_t *m = NULL;
    loom_err_t err;
    if (loom_est_model_load(ONNX_MODEL, &m, &err))
        fail_msg("%s", err.msg);
    ref.onnx_nodes = m->nn;
    ref.onnx_tensors = m->nt;
    loom_est_model_free(m);
    long runs = sweep(onnx_once, NULL);
    print_message("ONNX reader: %ld runs\n", runs);
    assert_true(runs > 10);
}

/* --------------------------------------------------------- the simulator */

/* test_sim.c's small trace: one 1-GPU node, a job that fits nowhere. */
static const char sim_jobs[] = "{\"id\":\"A\",\"due\":0,\"duration\":10,\"gpus\":1,\"cpus\":1}\n"
                               "{\"id\":\"B\",\"due\":1,\"duration\":5,\"gpus\":1}\n"
                               "{\"id\":\"C\",\"due\":2,\"duration\":1,\"gpus\":0.5}\n"
                               "{\"id\":\"D\",\"due\":3,\"duration\":1,\"gpus\":2}\n";

/* Reads and replays the trace: the trace as the reference's, then the
 * reference's results; or LOOM_ENOMEM with the trace empty (parse) or no
 * results (replay). */
static int sim_run(loom_sim_dynamic_result_t *r, bool *replayed, loom_err_t *err)
{
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    loom_sim_trace_t t = {0};
    *replayed = false;
    int rc = loom_sched_cluster_add_node(&c, "n", 8000, 0, 1, "G", 0, NULL, err);
    if (rc == LOOM_OK) {
        rc = loom_sim_jsonl_parse(sim_jobs, strlen(sim_jobs), "j.jsonl", &c, &t, err);
        bool on = pause_failures();
        if (rc != LOOM_OK)
            assert_int_equal(t.n, 0);
        else
            assert_int_equal(t.n, 4);
        resume_failures(on);
    }
    if (rc == LOOM_OK) {
        loom_sim_opts_t o = {.policy = "bestfit", .queue = "fifo", .debug_check = true};
        *replayed = true;
        rc = loom_sim_dynamic(&c, &t, &o, r, err);
    }
    loom_sim_trace_free(&t);
    loom_sched_cluster_free(&c);
    return rc;
}

static void sim_once(void *p)
{
    (void)p;
    loom_sim_dynamic_result_t r;
    memset(&r, 0, sizeof r);
    loom_err_t err;
    bool replayed;
    int rc = sim_run(&r, &replayed, &err);
    bool on = pause_failures();
    if (rc == LOOM_OK) {
        assert_int_equal(r.jobs, ref.sim_tasks);
        assert_int_equal(r.completed, ref.sim_completed);
        if (r.mean_jct_s != ref.sim_mean_jct_s)
            fail_msg("allocation %ld failing: the replay succeeded with a mean JCT of %g s, "
                     "expected %g s",
                     (long)fail_at, r.mean_jct_s, ref.sim_mean_jct_s);
        loom_sim_dynamic_result_free(&r);
    } else {
        assert_nomem(rc, &err, replayed ? "loom_sim_dynamic" : "reading the trace");
    }
    resume_failures(on);
}

static void sim_under_failures(void **state)
{
    (void)state;
    loom_sim_dynamic_result_t r;
    loom_err_t err;
    bool replayed;
    if (sim_run(&r, &replayed, &err))
        fail_msg("%s", err.msg);
    ref.sim_tasks = r.jobs;
    ref.sim_completed = r.completed;
    ref.sim_mean_jct_s = r.mean_jct_s;
    assert_int_equal(r.completed, 3);
    loom_sim_dynamic_result_free(&r);
    long runs = sweep(sim_once, NULL);
    print_message("simulator: %ld runs\n", runs);
    assert_true(runs > 10);
}

/* ------------------------------------------------------ the model zoo */

static void zoo_write(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    fclose(f);
}

/* DIR/m.onnx and DIR/m.w: an MLP 4-8-3 and its weights. */
static void zoo_model(void)
{
    char path[256];
    int64_t widths[] = {4, 8, 3};
    pbw_t pb = zoo_mlp(widths, 3, 0);
    snprintf(path, sizeof path, "%s/m.onnx", dir);
    zoo_write(path, pb.d, pb.n);
    loom_est_model_t *m = zoo_parse(&pb);
    free(pb.d);
    loom_zoo_weights_t w = {.meta = json_object()};
    w.t = calloc(m->nt, sizeof *w.t);
    for (size_t i = 0; i < m->nt; i++) {
        if (!m->t[i].is_init)
            continue;
        loom_zoo_tensor_t *t = &w.t[w.n++];
        t->name = strdup(m->t[i].name);
        t->rank = m->t[i].rank;
        t->numel = 1;
        for (int k = 0; k < t->rank; k++)
            t->numel *= (size_t)(t->dims[k] = m->t[i].dims[k]);
        t->data = calloc(t->numel, sizeof(float));
    }
    snprintf(path, sizeof path, "%s/m.w", dir);
    loom_err_t err;
    assert_int_equal(loom_zoo_weights_save(&w, path, &err), LOOM_OK);
    loom_zoo_weights_free(&w);
    loom_est_model_free(m);
}

/* How many entries the repository under DIR/zoo lists (opened afresh). */
static size_t zoo_entries(void)
{
    char repo[128];
    snprintf(repo, sizeof repo, "%s/zoo", dir);
    loom_zoo_t *z;
    loom_err_t err;
    json_t *arr = NULL;
    if (loom_zoo_open(repo, &z, &err) || loom_zoo_list(z, NULL, NULL, 0, &arr, &err))
        fail_msg("%s", err.msg);
    size_t n = json_array_size(arr);
    json_decref(arr);
    loom_zoo_close(z);
    return n;
}

/* Opens DIR/zoo, adds DIR/m as an entry, lists: each step either works
 * (the entry then listed) or returns LOOM_ENOMEM, and a refused add leaves
 * the entries as they were. */
static void zoo_once(void *p)
{
    (void)p;
    char repo[128], mp[160], wp[160];
    snprintf(repo, sizeof repo, "%s/zoo", dir);
    snprintf(mp, sizeof mp, "%s/m.onnx", dir);
    snprintf(wp, sizeof wp, "%s/m.w", dir);
    bool on = pause_failures();
    size_t before = zoo_entries();
    resume_failures(on);
    loom_zoo_t *z = NULL;
    loom_err_t err;
    int rc = loom_zoo_open(repo, &z, &err);
    if (rc != LOOM_OK) {
        on = pause_failures();
        assert_nomem(rc, &err, "loom_zoo_open");
        assert_null(z);
        resume_failures(on);
        return;
    }
    loom_zoo_entry_in_t in = {.model_path = mp,
                              .weights_path = wp,
                              .task = "digits",
                              .name = "m",
                              .metric_name = "accuracy",
                              .metric = 0.5};
    int64_t id = 0;
    rc = loom_zoo_add(z, &in, &id, &err);
    json_t *arr = NULL;
    loom_err_t lerr;
    int lrc = rc == LOOM_OK ? loom_zoo_list(z, "digits", NULL, 0, &arr, &lerr) : LOOM_OK;
    on = pause_failures();
    size_t after = zoo_entries();
    if (rc == LOOM_OK) /* back to no entries: each run sees the same repository */
        assert_int_equal(loom_zoo_remove(z, id, &err), LOOM_OK);
    loom_zoo_close(z);
    if (rc == LOOM_OK) {
        assert_true(id > 0);
        assert_int_equal(after, before + 1);
    } else {
        assert_nomem(rc, &err, "loom_zoo_add");
        assert_int_equal(after, before);
    }
    if (lrc == LOOM_OK && arr)
        assert_int_equal(json_array_size(arr), after);
    else if (lrc != LOOM_OK)
        assert_nomem(lrc, &lerr, "loom_zoo_list");
    json_decref(arr);
    resume_failures(on);
}

static void zoo_under_failures(void **state)
{
    (void)state;
    zoo_model();
    long runs = sweep(zoo_once, NULL);
    print_message("model zoo: %ld runs\n", runs);
    assert_true(runs > 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rpc_under_failures),
        cmocka_unit_test_setup_teardown(submit_under_failures, setup_dir, teardown_dir),
        cmocka_unit_test(catalog_under_failures),
        cmocka_unit_test(render_under_failures),
        cmocka_unit_test(runtime_reject_under_failures),
        cmocka_unit_test(runtime_quota_under_failures),
        cmocka_unit_test(runtime_deps_under_failures),
        cmocka_unit_test(onnx_under_failures),
        cmocka_unit_test(sim_under_failures),
        cmocka_unit_test_setup_teardown(zoo_under_failures, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
