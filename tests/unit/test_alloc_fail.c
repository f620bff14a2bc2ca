/* Allocation-failure injection, as SQLite tests it (issue 18, "Also"): the
 * Nth JSON allocation fails, for every N until a run needs no more, through
 * an RPC round trip (a batch through the dispatcher), a job submission
 * through loomd's methods into a real store, catalog loading, and the
 * scheduling runtime (jobs handed to it, its step, with a job no node can
 * hold, a dependency and an account quota). Each run must end cleanly: a
 * result, or an error (LOOM_ENOMEM, a JSON-RPC -32603 or -32700, a catalog
 * error), never a crash; ASan's leak check at exit finds no leak. The
 * runtime's runs assert more: a refused call changed nothing, and once
 * memory is back the jobs end as they would have (no job left pending for
 * ever, no quota passed).
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

#include "daemon/methods.h"
#include "daemon/quota.h"
#include "daemon/runner_int.h"
#include "loom/catalog.h"
#include "loom/runtime.h"
#include "loom/template.h"
#include "test_util.h"

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
 * completes without reaching N. Returns how many runs there were. */
static long sweep(void (*body)(void *), void *ctx)
{
    json_set_alloc_funcs(failing_malloc, free);
    long n = 1;
    for (;; n++) {
        arm(n);
        wrap_on = true;
        body(ctx);
        wrap_on = false;
        if (alloc_count < n)
            break;
    }
    arm(0);
    json_set_alloc_funcs(__real_malloc, free);
    return n;
}

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

static void rpc_round_trip(void *ctx)
{
    loom_rpc_dispatcher_t *d = ctx;
    const char *body = "[{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":{\"a\":[1,2,\"x\"]},"
                       "\"id\":1},{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[3],\"id\":"
                       "\"two\"},{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":3}]";
    loom_buf_t out = LOOM_BUF_INIT;
    int rc = loom_rpc_handle(d, body, strlen(body), NULL, &out);
    assert_true(rc == LOOM_OK || rc == LOOM_ENOMEM);
    if (rc == LOOM_OK && out.len) /* a batch response, or one error object */
        assert_true(out.data[0] == '[' || out.data[0] == '{');
    loom_buf_free(&out);
}

static void rpc_under_failures(void **state)
{
    (void)state;
    loom_rpc_dispatcher_t *d;
    loom_err_t err;
    assert_int_equal(loom_rpc_dispatcher_new(NULL, &d, &err), LOOM_OK);
    assert_int_equal(loom_rpc_dispatcher_add(d, "echo", h_echo, NULL, NULL, 0, &err), LOOM_OK);
    long runs = sweep(rpc_round_trip, d);
    print_message("rpc round trip: %ld runs\n", runs);
    assert_true(runs > 10);
    loom_rpc_dispatcher_free(d);
}

typedef struct submit_ctx {
    loom_rpc_dispatcher_t *d;
    loom_store_t *store;
} submit_ctx_t;

static void submit_once(void *p)
{
    submit_ctx_t *c = p;
    const char *body = "{\"jsonrpc\":\"2.0\",\"method\":\"job.submit\",\"params\":{\"name\":\"a\","
                       "\"script\":\"echo hi\",\"resources\":{\"cpus\":2,\"memory\":\"1GiB\"},"
                       "\"labels\":{\"team\":\"x\"}},\"id\":7}";
    loom_buf_t out = LOOM_BUF_INIT;
    int rc = loom_rpc_handle(c->d, body, strlen(body), NULL, &out);
    assert_true(rc == LOOM_OK || rc == LOOM_ENOMEM);
    loom_buf_free(&out);
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

static void catalog_once(void *p)
{
    (void)p;
    loom_catalog_t *cat = NULL;
    loom_catalog_issues_t is = LOOM_CATALOG_ISSUES_INIT;
    loom_err_t err;
    int rc = loom_catalog_load_file("workloads/catalogs/demo.json", &cat, &is, &err);
    assert_true(rc == LOOM_OK || rc != LOOM_EINTERNAL);
    loom_catalog_free(cat);
    loom_catalog_issues_free(&is);
}

static void catalog_under_failures(void **state)
{
    (void)state;
    long runs = sweep(catalog_once, NULL);
    print_message("catalog loading: %ld runs\n", runs);
    assert_true(runs > 10);
}

static void render_once(void *p)
{
    (void)p;
    json_t *data = json_pack("{s:s,s:[{s:s},{s:s}],s:i}", "name", "bert <large>", "items", "k",
                             "a'b", "k", "c\"d", "gpus", 4);
    if (!data)
        return;
    const char *t = "#!/bin/bash\n# {{name}}\n{{#items}}echo {{k}}\n{{/items}}"
                    "{{^none}}n={{gpus}}{{/none}}\n";
    loom_template_options_t o = {.escape = LOOM_TEMPLATE_ESCAPE_SHELL};
    loom_buf_t out = LOOM_BUF_INIT;
    loom_err_t err;
    int rc = loom_template_render_string(t, strlen(t), "t.sh.mustache", data, &o, &out, &err);
    assert_true(rc == LOOM_OK || rc == LOOM_ENOMEM);
    loom_buf_free(&out);
    json_decref(data);
}

static void render_under_failures(void **state)
{
    (void)state;
    long runs = sweep(render_once, NULL);
    print_message("template rendering: %ld runs\n", runs);
    assert_true(runs > 5);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
