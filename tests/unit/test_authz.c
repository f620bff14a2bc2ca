/* The authorization model (src/daemon/authz.c, docs/security.md): every
 * method loomd adds is walked as the job's owner, another user, an
 * operator and the token holder, each cell's outcome asserted from this
 * test's own table (allowed: the method ran; refused: -32008 before it
 * ran). A method with no row here, or no declaration in authz.c, fails;
 * docs/security.md's table must equal the one printed from authz.c. */
#include <stdio.h>
#include <unistd.h>

#include "daemon/authz.h"
#include "daemon/dash.h"
#include "daemon/identity.h"
#include "daemon/methods.h"
#include "daemon/monitor.h"
#include "daemon/usage.h"
#include "daemon/zoo_methods.h"
#include "test_util.h"

enum { OWNER, OTHER, OPERATOR, TOKEN, NWHO };

typedef struct {
    char dir[64], db[128];
    loom_store_t *store;
    loom_rpc_dispatcher_t *disp;
    loomd_info_t info;
    loomd_methods_t m;
    loomd_identity_t *ident;
    loomd_monitor_t *mon;
    loomd_zoo_t *zoo;
    loomd_dash_t *dash;
    loom_auth_identity_t who[NWHO];
} fixture_t;

/* A call of each method acting on job JOB (its id is put in for "%J"), and
 * who may make it: 'y' the method runs, 'n' refused with -32008. */
typedef struct {
    const char *method;
    const char *params;
    const char cells[NWHO + 1]; /* owner, another user, operator, token holder */
} cell_row_t;

static const cell_row_t rows[] = {
    {"server.info", "{}", "yyyy"},
    {"node.list", "{}", "yyyy"},
    {"job.submit", "{\"name\":\"n\",\"script\":\"true\"}", "yyyy"},
    {"job.list", "{}", "yyyy"},
    {"job.get", "{\"id\":%J}", "ynyy"},
    {"job.cancel", "{\"id\":%J}", "ynyy"},
    {"job.wait", "{\"ids\":[%J],\"timeout\":0}", "ynyy"},
    {"job.logs", "{\"id\":%J}", "ynyy"},
    {"job.hold", "{\"id\":%J}", "ynyy"},
    {"job.release", "{\"id\":%J}", "ynyy"},
    {"job.requeue", "{\"id\":%J}", "ynyy"},
    {"job.update", "{\"id\":%J,\"priority\":5}", "ynyy"},
    {"monitor.snapshot", "{\"job\":%J}", "ynyy"},
    {"usage.report", "{}", "yyyy"},
    {"zoo.add", "{\"model\":\"/nonexistent/m.onnx\"}", "yyyy"},
    {"zoo.get", "{\"id\":999}", "yyyy"},
    {"zoo.list", "{}", "yyyy"},
    {"zoo.remove", "{\"id\":999}", "yyyy"},
    {"zoo.match", "{\"model\":\"/nonexistent/m.onnx\"}", "yyyy"},
    {"zoo.warm", "{\"model\":\"/nonexistent/m.onnx\"}", "yyyy"},
    {"dash.login", "{}", "yyyy"},
};

#define NROWS (sizeof rows / sizeof rows[0])

static void person(loom_auth_identity_t *id, uid_t uid, const char *name, bool op,
                   loom_auth_scheme_t scheme)
{
    memset(id, 0, sizeof *id);
    id->uid = uid;
    id->gid = uid;
    id->groups[0] = uid;
    id->ngroups = 1;
    snprintf(id->user, sizeof id->user, "%s", name);
    snprintf(id->group, sizeof id->group, "%s", name);
    id->is_operator = op;
    id->scheme = scheme;
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/loom-test-authz-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->db, sizeof f->db, "%s/loom.db", f->dir);
    loom_err_t err;
    loomd_identity_config_t icfg = {.multi_user = true};
    if (loom_store_open(f->db, NULL, &f->store, &err) || loomd_identity_new(&icfg, &f->ident, &err))
        fail_msg("%s", err.msg);
    f->info = (loomd_info_t){.state_dir = f->dir, .durability = "normal"};
    f->m = (loomd_methods_t){.store = f->store, .info = &f->info, .ident = f->ident};
    /* every part's methods, as loomd's add_methods adds them */
    if (loom_rpc_dispatcher_new(NULL, &f->disp, &err) || loomd_methods_add(f->disp, &f->m, &err) ||
        loomd_monitor_open(f->store, NULL, &f->mon, &err) ||
        loomd_monitor_add_methods(f->disp, f->mon, &err) ||
        loomd_zoo_open(f->dir, f->store, f->ident, &f->zoo, &err) ||
        loomd_zoo_add_methods(f->disp, f->zoo, &err) ||
        loomd_dash_new(f->disp, f->store, &f->info, f->ident, &f->dash, &err) ||
        loomd_usage_add_methods(f->disp, f->store, &err) ||
        loomd_authz_install(f->disp, &f->m, &err))
        fail_msg("%s", err.msg);
    uid_t base = geteuid() == 0 ? 52000 : geteuid() + 52000;
    person(&f->who[OWNER], base + 1, "ana", false, LOOM_AUTH_PEER);
    person(&f->who[OTHER], base + 2, "bo", false, LOOM_AUTH_MUNGE);
    person(&f->who[OPERATOR], base + 3, "op", true, LOOM_AUTH_PEER);
    person(&f->who[TOKEN], geteuid(), "loomd", true, LOOM_AUTH_TOKEN);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    loomd_dash_stop(f->dash);
    loom_rpc_dispatcher_free(f->disp);
    loomd_dash_free(f->dash);
    loomd_zoo_close(f->zoo);
    loomd_monitor_close(f->mon);
    loom_store_close(f->store);
    loomd_identity_free(f->ident);
    assert_int_equal(loom_test_rmtree(f->dir), 0);
    free(f);
    return 0;
}

static json_t *call_as(fixture_t *f, const loom_auth_identity_t *who, const char *method,
                       const char *params)
{
    loom_rpc_transport_t t = {.unix_socket = true, .identity = who};
    snprintf(t.peer, sizeof t.peer, "unix");
    char body[1024];
    snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\",\"params\":%s}",
             method, params);
    loom_buf_t out = LOOM_BUF_INIT;
    assert_int_equal(loom_rpc_handle(f->disp, body, strlen(body), &t, &out), LOOM_OK);
    json_t *v = json_loads(out.data, 0, NULL);
    loom_buf_free(&out);
    assert_non_null(v);
    return v;
}

static int error_code(json_t *resp)
{
    json_t *e = json_object_get(resp, "error");
    return e ? (int)json_integer_value(json_object_get(e, "code")) : 0;
}

/* params with %J replaced by id */
static void fill(const char *tmpl, int64_t id, char *out, size_t len)
{
    const char *at = strstr(tmpl, "%J");
    if (!at)
        snprintf(out, len, "%s", tmpl);
    else
        snprintf(out, len, "%.*s%lld%s", (int)(at - tmpl), tmpl, (long long)id, at + 2);
}

static const cell_row_t *row_of(const char *method)
{
    for (size_t i = 0; i < NROWS; i++)
        if (strcmp(rows[i].method, method) == 0)
            return &rows[i];
    return NULL;
}

/* Every method loomd adds has a row here and a declaration in authz.c that
 * says the same; every row's cells hold, each on a fresh job of ana's. */
static void test_walk_every_method(void **state)
{
    fixture_t *f = *state;
    size_t n = loom_rpc_dispatcher_method_count(f->disp);
    assert_true(n >= NROWS);
    for (size_t i = 0; i < n; i++) {
        const char *method = loom_rpc_dispatcher_method_name(f->disp, i);
        const cell_row_t *row = row_of(method);
        if (!row)
            fail_msg("method %s has no row in test_authz.c's table: say who may call it", method);
        const loomd_authz_rule_t *rule = loomd_authz_find(method);
        assert_non_null(rule);
        bool owner_only = strcmp(row->cells, "ynyy") == 0;
        assert_int_equal(rule->who == LOOMD_AUTHZ_OWNER, owner_only);
        for (int w = 0; w < NWHO; w++) {
            json_t *r = call_as(f, &f->who[OWNER], "job.submit",
                                "{\"name\":\"j\",\"script\":\"true\",\"options\":"
                                "{\"workdir\":\"/home/ana/private\"}}");
            int64_t id = json_integer_value(json_object_get(json_object_get(r, "result"), "id"));
            json_decref(r);
            assert_true(id > 0);
            char params[512];
            fill(row->params, id, params, sizeof params);
            r = call_as(f, &f->who[w], method, params);
            int code = error_code(r);
            if (row->cells[w] == 'y' && code == -32008)
                fail_msg("%s as %s: refused, expected allowed", method, f->who[w].user);
            if (row->cells[w] == 'n') {
                if (code != -32008)
                    fail_msg("%s as %s: error %d, expected -32008 (refused)", method,
                             f->who[w].user, code);
                char *text = json_dumps(r, 0); /* a refusal shows nothing private */
                assert_null(strstr(text, "/home/ana"));
                free(text);
            }
            json_decref(r);
        }
    }
}

/* monitor.snapshot without a job is the node's, open to anyone. */
static void test_optional_job(void **state)
{
    fixture_t *f = *state;
    json_t *r = call_as(f, &f->who[OTHER], "monitor.snapshot", "{}");
    assert_int_equal(error_code(r), 0);
    json_decref(r);
}

static loom_rpc_status_t m_undeclared(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)params;
    (void)ctx;
    loom_rpc_call_complete(call, json_object());
    return LOOM_RPC_DONE;
}

/* A method added without a declaration: loomd does not start, and a call
 * of it is refused even so. */
static void test_undeclared_method(void **state)
{
    fixture_t *f = *state;
    loom_err_t err;
    assert_int_equal(loom_rpc_dispatcher_add(f->disp, "job.sneak", m_undeclared, NULL, NULL,
                                             LOOM_RPC_NO_PARAMS, &err),
                     LOOM_OK);
    assert_int_equal(loomd_authz_install(f->disp, &f->m, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "method job.sneak declares no authorization"));
    for (int w = 0; w < NWHO; w++) {
        json_t *r = call_as(f, &f->who[w], "job.sneak", "{}");
        assert_int_equal(error_code(r), -32008);
        json_decref(r);
    }
}

/* docs/security.md holds the table authz.c prints, between its markers. */
static void test_doc_table(void **state)
{
    (void)state;
    loom_buf_t t = LOOM_BUF_INIT;
    assert_int_equal(loomd_authz_table(&t), LOOM_OK);
    FILE *fp = fopen("docs/security.md", "r") /* run in the source tree */;
    assert_non_null(fp);
    static char doc[1 << 20];
    size_t n = fread(doc, 1, sizeof doc - 1, fp);
    fclose(fp);
    doc[n] = 0;
    const char *begin = strstr(doc, "<!-- authz-table begin");
    const char *end = strstr(doc, "<!-- authz-table end -->");
    begin = begin ? strchr(begin, '\n') : NULL;
    bool same =
        begin && end && (size_t)(end - begin - 1) == t.len && memcmp(begin + 1, t.data, t.len) == 0;
    loom_buf_free(&t);
    if (!same)
        fail_msg("docs/security.md's table differs from authz.c's: put the output of "
                 "loomd --print-authz-table between its markers");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_walk_every_method, setup, teardown),
        cmocka_unit_test_setup_teardown(test_optional_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_undeclared_method, setup, teardown),
        cmocka_unit_test(test_doc_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
