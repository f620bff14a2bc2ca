/* Allocation-failure injection, as SQLite tests it (issue 18, "Also"): the
 * Nth JSON allocation fails, for every N until a run needs no more, through
 * an RPC round trip (a batch through the dispatcher), a job submission
 * through loomd's methods into a real store, and catalog loading. Each run
 * must end cleanly: a result, or an error (LOOM_ENOMEM, a JSON-RPC -32603 or
 * -32700, a catalog error), never a crash; ASan's leak check at exit finds
 * no leak.
 *
 * Two hooks share one counter: jansson's allocator (json_set_alloc_funcs),
 * for every JSON value, parse and dump; and loom's own malloc, calloc and
 * realloc calls, which tests.cmake links to the __wrap_ functions below
 * (-Wl,--wrap: only calls from objects linked into this program, i.e.
 * libloom and this file; SQLite's and libc's own stay untouched). */
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "daemon/gandiva.c"
#include "daemon/methods.c"
#include "daemon/runner.c"
#include "loom/catalog.h"
#include "loom/template.h"
#include "test_util.h"

static _Atomic long alloc_count, fail_at; /* the store's threads allocate too */
static _Atomic bool wrap_on;              /* count loom's own allocations too */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rpc_under_failures),
        cmocka_unit_test_setup_teardown(submit_under_failures, setup_dir, teardown_dir),
        cmocka_unit_test(catalog_under_failures),
        cmocka_unit_test(render_under_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
