/* Allocation-failure injection, as SQLite tests it (issue 18, "Also"): the
 * Nth JSON allocation fails, for every N until a run needs no more, through
 * an RPC round trip (a batch through the dispatcher), a job submission
 * through loomd's methods into a real store, and catalog loading. Each run
 * must end cleanly: a result, or an error (LOOM_ENOMEM, a JSON-RPC -32603 or
 * -32700, a catalog error), never a crash; ASan's leak check at exit finds
 * no leak.
 *
 * The hook is jansson's allocator (json_set_alloc_funcs): every JSON value,
 * parse and dump of these paths goes through it. loom's own buffers and
 * SQLite's allocations are not failed here (loom calls malloc directly). */
#include <stdio.h>
#include <unistd.h>

#include "daemon/gandiva.c"
#include "daemon/methods.c"
#include "daemon/runner.c"
#include "loom/catalog.h"
#include "test_util.h"

static long alloc_count, fail_at;

static void *failing_malloc(size_t n)
{
    if (++alloc_count == fail_at)
        return NULL;
    return malloc(n);
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
        body(ctx);
        if (alloc_count < n)
            break;
    }
    arm(0);
    json_set_alloc_funcs(malloc, free);
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

static void submit_under_failures(void **state)
{
    (void)state;
    char dir[] = "/tmp/loom-allocfail-XXXXXX", db[64];
    assert_non_null(mkdtemp(dir));
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
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rpc_under_failures),
        cmocka_unit_test(submit_under_failures),
        cmocka_unit_test(catalog_under_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
