/* The RPC server's identity hook (multi-user loomd): every request is
 * authenticated by it on both listeners; a refusal is HTTP 401 with the
 * hook's message and the challenge, and no method runs; the identity
 * reaches the method through the transport; a connection reuses an
 * identity while the hook said it is valid for the same Authorization
 * value, and asks again otherwise; /healthz on TCP stays open. */
#include "test_util.h"

#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loom/rpc.h"

static atomic_int hook_calls, method_calls;

typedef struct ident {
    char name[32];
} ident_t;

/* "Test NAME" (valid for the connection), "Once NAME" (this request only);
 * the Unix socket: the peer's uid. */
static int hook(const loom_rpc_auth_input_t *in, void **identity, int64_t *valid_until_ns,
                loom_err_t *err, void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&hook_calls, 1);
    ident_t *id = calloc(1, sizeof *id);
    if (in->unix_socket) {
        struct ucred cred;
        socklen_t len = sizeof cred;
        assert_int_equal(getsockopt(in->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len), 0);
        snprintf(id->name, sizeof id->name, "uid %u", (unsigned)cred.uid);
        *valid_until_ns = INT64_MAX;
    } else if (in->authorization && strncmp(in->authorization, "Test ", 5) == 0) {
        snprintf(id->name, sizeof id->name, "%s", in->authorization + 5);
        *valid_until_ns = INT64_MAX;
    } else if (in->authorization && strncmp(in->authorization, "Once ", 5) == 0) {
        snprintf(id->name, sizeof id->name, "%s", in->authorization + 5);
        *valid_until_ns = 0;
    } else {
        free(id);
        return loom_err_set(err, LOOM_EINVAL, "bad test credential");
    }
    *identity = id;
    return LOOM_OK;
}

static loom_rpc_status_t whoami(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)params;
    (void)ctx;
    atomic_fetch_add(&method_calls, 1);
    const loom_rpc_transport_t *t = loom_rpc_call_request_ctx(call);
    const ident_t *id = t ? t->identity : NULL;
    loom_rpc_call_complete(call, json_string(id ? id->name : "(none)"));
    return LOOM_RPC_DONE;
}

typedef struct fixture {
    loom_rpc_dispatcher_t *d;
    loom_rpc_server_t *s;
    char sock[64], url[64];
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    loom_err_t err;
    assert_int_equal(loom_rpc_dispatcher_new(NULL, &f->d, &err), LOOM_OK);
    assert_int_equal(loom_rpc_dispatcher_add(f->d, "whoami", whoami, NULL, NULL, 0, &err), LOOM_OK);
    snprintf(f->sock, sizeof f->sock, "/tmp/loom-ident-%d.sock", (int)getpid());
    loom_rpc_server_config_t cfg;
    loom_rpc_server_config_init(&cfg);
    cfg.listen = "127.0.0.1:0";
    cfg.socket_path = f->sock;
    cfg.identity.authenticate = hook;
    cfg.identity.identity_free = free;
    cfg.identity.challenge = "Test realm=\"t\"";
    assert_int_equal(loom_rpc_server_start(&cfg, f->d, &f->s, &err), LOOM_OK);
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%u", loom_rpc_server_port(f->s));
    atomic_store(&hook_calls, 0);
    atomic_store(&method_calls, 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    loom_rpc_server_stop(f->s);
    loom_rpc_dispatcher_free(f->d);
    free(f);
    return 0;
}

static loom_rpc_client_t *client(const char *url, const char *auth)
{
    loom_rpc_client_config_t cfg;
    loom_rpc_client_config_init(&cfg);
    cfg.url = url;
    cfg.retries = 0;
    loom_rpc_client_t *c = NULL;
    loom_err_t err;
    assert_int_equal(loom_rpc_client_new(&cfg, &c, &err), LOOM_OK);
    if (auth)
        assert_int_equal(loom_rpc_client_set_authorization(c, auth, &err), LOOM_OK);
    return c;
}

static void expect_name(loom_rpc_client_t *c, const char *name)
{
    json_t *res = NULL;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    int rc = loom_rpc_client_call(c, "whoami", NULL, 0, &res, &e);
    if (rc != LOOM_OK)
        fail_msg("whoami: %s", e.err.msg);
    assert_string_equal(json_string_value(res), name);
    json_decref(res);
}

static void test_identity_reaches_the_method(void **state)
{
    fixture_t *f = *state;
    loom_rpc_client_t *c = client(f->url, "Test alice");
    expect_name(c, "alice");
    expect_name(c, "alice");
    assert_int_equal(atomic_load(&hook_calls), 1); /* cached for the connection */
    loom_err_t err;
    assert_int_equal(loom_rpc_client_set_authorization(c, "Test bob", &err), LOOM_OK);
    expect_name(c, "bob"); /* another value: asked again */
    assert_int_equal(atomic_load(&hook_calls), 2);
    assert_int_equal(loom_rpc_client_set_authorization(c, "Once carol", &err), LOOM_OK);
    expect_name(c, "carol");
    expect_name(c, "carol");
    assert_int_equal(atomic_load(&hook_calls), 4); /* valid for its request only */
    loom_rpc_client_free(c);
}

static void test_refusal_is_401_without_effect(void **state)
{
    fixture_t *f = *state;
    const char *auths[] = {"Nope", NULL};
    for (int i = 0; i < 2; i++) {
        loom_rpc_client_t *c = client(f->url, auths[i]);
        json_t *res = NULL;
        loom_rpc_client_error_t e;
        loom_rpc_client_error_init(&e);
        assert_int_not_equal(loom_rpc_client_call(c, "whoami", NULL, 0, &res, &e), LOOM_OK);
        assert_int_equal(e.kind, LOOM_RPC_FAIL_HTTP);
        assert_int_equal(e.http_status, 401);
        assert_non_null(strstr(e.err.msg, "bad test credential"));
        loom_rpc_client_error_clear(&e);
        long status = 0;
        loom_buf_t body = LOOM_BUF_INIT;
        const char *req = "{\"jsonrpc\":\"2.0\",\"method\":\"whoami\",\"id\":1}";
        assert_int_equal(loom_rpc_client_post_raw(c, req, strlen(req), &status, &body, NULL),
                         LOOM_OK);
        assert_int_equal(status, 401);
        loom_buf_free(&body);
        loom_rpc_client_free(c);
    }
    assert_int_equal(atomic_load(&method_calls), 0);
}

static void test_unix_socket_peer(void **state)
{
    fixture_t *f = *state;
    char url[80], want[32];
    snprintf(url, sizeof url, "unix:%s", f->sock);
    snprintf(want, sizeof want, "uid %u", (unsigned)geteuid());
    loom_rpc_client_t *c = client(url, NULL);
    expect_name(c, want);
    expect_name(c, want);
    assert_int_equal(atomic_load(&hook_calls), 1);
    loom_rpc_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_identity_reaches_the_method, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusal_is_401_without_effect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unix_socket_peer, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
