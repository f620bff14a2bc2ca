/* Who may do what, at the level of loomd's methods (multi-user mode,
 * docs/security.md), without root: calls carry identities the way the RPC
 * server's hook hands them over (loom_rpc_transport_t.identity). Owners come
 * from the caller, never from the request; another user's job cannot be
 * cancelled or read (-32008 naming the owner) but is listed without its
 * options and run; an operator may do everything; root's jobs are refused;
 * an account must be one of the caller's groups. */
#include <stdio.h>
#include <unistd.h>

#include "daemon/authz.h"
#include "daemon/identity.h"
#include "daemon/methods.h"
#include "daemon/quota.h"
#include "test_util.h"

typedef struct {
    char dir[64], db[128];
    loom_store_t *store;
    loom_rpc_dispatcher_t *disp;
    loomd_info_t info;
    loomd_methods_t m;
    loomd_identity_t *ident;
    loom_auth_identity_t ana, bo, op, root;
} fixture_t;

static void person(loom_auth_identity_t *id, uid_t uid, gid_t gid, const char *name, bool op)
{
    memset(id, 0, sizeof *id);
    id->uid = uid;
    id->gid = gid;
    id->groups[0] = gid;
    id->ngroups = 1;
    snprintf(id->user, sizeof id->user, "%s", name);
    snprintf(id->group, sizeof id->group, "%s", name);
    id->is_operator = op;
    id->scheme = LOOM_AUTH_PEER;
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/loom-test-owner-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->db, sizeof f->db, "%s/loom.db", f->dir);
    loom_err_t err;
    if (loom_store_open(f->db, NULL, &f->store, &err))
        fail_msg("%s", err.msg);
    loomd_identity_config_t icfg = {.multi_user = true};
    assert_int_equal(loomd_identity_new(&icfg, &f->ident, &err), LOOM_OK);
    f->info = (loomd_info_t){.state_dir = f->dir, .durability = "normal"};
    f->m = (loomd_methods_t){.store = f->store, .info = &f->info, .ident = f->ident};
    assert_int_equal(loom_rpc_dispatcher_new(NULL, &f->disp, &err), LOOM_OK);
    assert_int_equal(loomd_methods_add(f->disp, &f->m, &err), LOOM_OK);
    assert_int_equal(loomd_authz_install(f->disp, &f->m, &err), LOOM_OK); /* as loomd */
    /* uids that are neither root nor this process's */
    uid_t base = geteuid() == 0 ? 51000 : geteuid() + 51000;
    person(&f->ana, base + 1, base + 1, "ana", false);
    person(&f->bo, base + 2, base + 2, "bo", false);
    person(&f->op, base + 3, base + 3, "op", true);
    person(&f->root, 0, 0, "root", true);
    f->ana.groups[f->ana.ngroups++] = base + 10; /* a second group, "vision" */
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    loom_store_close(f->store);
    loom_rpc_dispatcher_free(f->disp);
    loomd_identity_free(f->ident);
    assert_int_equal(loom_test_rmtree(f->dir), 0);
    free(f);
    return 0;
}

/* One call as `who`; returns the response object. */
static json_t *call_as(fixture_t *f, const loom_auth_identity_t *who, const char *method,
                       const char *params)
{
    loom_rpc_transport_t t = {.unix_socket = true, .identity = who};
    snprintf(t.peer, sizeof t.peer, "unix");
    char body[2048];
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

static int64_t submit_as(fixture_t *f, const loom_auth_identity_t *who, const char *extra)
{
    char p[512];
    snprintf(p, sizeof p, "{\"name\":\"j\",\"script\":\"true\"%s}", extra ? extra : "");
    json_t *r = call_as(f, who, "job.submit", p);
    if (error_code(r))
        fail_msg("submit: %s",
                 json_string_value(json_object_get(json_object_get(r, "error"), "message")));
    int64_t id = json_integer_value(json_object_get(json_object_get(r, "result"), "id"));
    json_decref(r);
    return id;
}

static void test_owner_from_the_caller(void **state)
{
    fixture_t *f = *state;
    int64_t id = submit_as(f, &f->ana, NULL);
    json_t *r = call_as(f, &f->ana, "job.get", "{\"id\":1}");
    json_t *owner = json_object_get(json_object_get(json_object_get(r, "result"), "job"), "owner");
    assert_int_equal(json_integer_value(json_object_get(owner, "uid")), f->ana.uid);
    assert_string_equal(json_string_value(json_object_get(owner, "user")), "ana");
    assert_string_equal(json_string_value(json_object_get(owner, "account")), "ana");
    assert_int_equal(id, 1);
    json_decref(r);
    /* an owner in the request is refused: it is not a parameter */
    r = call_as(f, &f->bo, "job.submit", "{\"name\":\"j\",\"script\":\"x\",\"owner\":{}}");
    assert_int_equal(error_code(r), -32602);
    json_decref(r);
}

static void test_others_cannot_act(void **state)
{
    fixture_t *f = *state;
    submit_as(f, &f->ana, ",\"options\":{\"env\":[\"SECRET=1\"],\"workdir\":\"/home/ana\"}");
    const char *methods[] = {"job.get", "job.cancel"};
    for (int i = 0; i < 2; i++) {
        json_t *r = call_as(f, &f->bo, methods[i], "{\"id\":1}");
        assert_int_equal(error_code(r), -32008);
        json_t *e = json_object_get(r, "error");
        assert_string_equal(json_string_value(json_object_get(e, "message")),
                            "permission denied: job 1 belongs to another user (ana)");
        assert_string_equal(json_string_value(json_object_get(json_object_get(e, "data"), "owner")),
                            "ana");
        json_decref(r);
    }
    /* still pending: the refused cancel changed nothing */
    json_t *r = call_as(f, &f->ana, "job.get", "{\"id\":1}");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(r, "result"), "job"), "state")),
                        "PENDING");
    json_decref(r);
    /* listed, without options and run, for bo; whole for ana and the operator */
    const loom_auth_identity_t *who[] = {&f->bo, &f->ana, &f->op};
    for (int i = 0; i < 3; i++) {
        r = call_as(f, who[i], "job.list", "{}");
        json_t *j = json_array_get(json_object_get(json_object_get(r, "result"), "jobs"), 0);
        assert_non_null(json_object_get(j, "owner"));
        assert_int_equal(json_object_get(j, "options") != NULL, i > 0);
        assert_int_equal(json_object_get(j, "run") != NULL, i > 0);
        json_decref(r);
    }
    /* an operator may cancel it */
    r = call_as(f, &f->op, "job.cancel", "{\"id\":1}");
    assert_int_equal(error_code(r), 0);
    json_decref(r);
    /* an unknown job is still "not found", not "denied" */
    r = call_as(f, &f->bo, "job.cancel", "{\"id\":99}");
    assert_int_equal(error_code(r), -32001);
    json_decref(r);
}

/* Issue 31: another's running job shows its node and GPUs, and an array's
 * tasks their array, as squeue shows them; its paths, handle, environment
 * and estimate stay the owner's. */
static void test_others_see_where_it_runs(void **state)
{
    fixture_t *f = *state;
    int64_t id = submit_as(f, &f->ana, ",\"options\":{\"env\":[\"SECRET=1\"],\"array\":\"0-1\"}");
    loom_err_t err;
    const char *run = "{\"node\":\"n1\",\"gpus\":[0,1],\"gpu_share\":1000,\"executor\":\"local\","
                      "\"dir\":\"/secret/jobs/1\",\"stdout\":\"/home/ana/out\",\"shepherd_pid\":7}";
    assert_int_equal(loom_store_transition(f->store, id, LOOM_JOB_PENDING, LOOM_JOB_RUNNING, NULL,
                                           run, NULL, &err),
                     LOOM_OK);
    json_t *r = call_as(f, &f->bo, "job.list", "{}");
    json_t *jobs = json_object_get(json_object_get(r, "result"), "jobs");
    assert_int_equal(json_array_size(jobs), 2);
    json_t *j = json_array_get(jobs, 0), *o = json_object_get(j, "options");
    char *text = json_dumps(json_object_get(j, "run"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_non_null(text);
    assert_string_equal(text, "{\"gpu_share\":1000,\"gpus\":[0,1],\"node\":\"n1\"}");
    free(text);
    assert_int_equal(json_object_size(o), 2);
    assert_int_equal(json_integer_value(json_object_get(o, "array_job_id")), id);
    assert_int_equal(json_integer_value(json_object_get(o, "array_task_id")), 0);
    assert_null(json_object_get(j, "estimate"));
    /* the pending task: its array, no run */
    j = json_array_get(jobs, 1);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "options"), "array_task_id")), 1);
    assert_null(json_object_get(j, "run"));
    text = json_dumps(r, JSON_COMPACT);
    assert_non_null(text);
    assert_null(strstr(text, "SECRET"));
    assert_null(strstr(text, "/secret"));
    free(text);
    json_decref(r);
    /* the owner sees it whole */
    r = call_as(f, &f->ana, "job.list", "{}");
    j = json_array_get(json_object_get(json_object_get(r, "result"), "jobs"), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "run"), "dir")),
                        "/secret/jobs/1");
    json_decref(r);
}

static void test_root_and_accounts(void **state)
{
    fixture_t *f = *state;
    json_t *r = call_as(f, &f->root, "job.submit", "{\"name\":\"j\",\"script\":\"x\"}");
    assert_int_equal(error_code(r), -32602);
    assert_non_null(
        strstr(json_string_value(json_object_get(json_object_get(r, "error"), "message")),
               "jobs of root are refused"));
    json_decref(r);
    char extra[128];
    /* a group of ana's, given by gid (the test's groups have no names) */
    snprintf(extra, sizeof extra, ",\"options\":{\"account\":\"%u\"}", (unsigned)f->ana.groups[1]);
    int64_t id = submit_as(f, &f->ana, extra);
    assert_true(id > 0);
    r = call_as(f, &f->bo, "job.submit",
                "{\"name\":\"j\",\"script\":\"x\",\"options\":"
                "{\"account\":\"no-such-group-here\"}}");
    assert_int_equal(error_code(r), -32602);
    assert_non_null(
        strstr(json_string_value(json_object_get(json_object_get(r, "error"), "message")),
               "is not a group of user 'bo'"));
    json_decref(r);
    r = call_as(f, &f->bo, "server.info", "{}");
    json_t *auth = json_object_get(json_object_get(r, "result"), "auth");
    assert_string_equal(json_string_value(json_object_get(auth, "mode")), "multi-user");
    assert_string_equal(json_string_value(json_object_get(json_object_get(auth, "caller"), "user")),
                        "bo");
    json_decref(r);
}

static void test_quotas(void **state)
{
    fixture_t *f = *state;
    loom_err_t err;
    static loomd_quotas_t qs;
    memset(&qs, 0, sizeof qs);
    assert_int_equal(loomd_quota_parse("user:bo=pending=1", &qs, &err), LOOM_OK);
    assert_int_equal(loomd_quota_parse("account:ana=time=1h", &qs, &err), LOOM_OK);
    const char *bad[] = {"bo=pending=1", "user:bo=", "user:bo=pending=x", "*=speed=3", "user:bo"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(loomd_quota_parse(bad[i], &qs, &err), LOOM_EINVAL);
        assert_non_null(strstr(err.msg, "--quota"));
    }
    assert_int_equal(qs.n, 2);
    f->m.quotas = &qs;
    submit_as(f, &f->bo, NULL);
    json_t *r = call_as(f, &f->bo, "job.submit", "{\"name\":\"j\",\"script\":\"x\"}");
    assert_int_equal(error_code(r), -32009);
    json_t *e = json_object_get(r, "error");
    assert_non_null(strstr(json_string_value(json_object_get(e, "message")),
                           "quota user:bo=pending=1: pending jobs 2, the most allowed is 1"));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "data"), "allowed")), 1);
    json_decref(r);
    /* ana (account ana) needs a time limit of at most 1 h; bo's quota is not hers */
    r = call_as(f, &f->ana, "job.submit", "{\"name\":\"j\",\"script\":\"x\"}");
    assert_int_equal(error_code(r), -32009);
    assert_non_null(
        strstr(json_string_value(json_object_get(json_object_get(r, "error"), "message")),
               "no time limit given"));
    json_decref(r);
    submit_as(f, &f->ana, ",\"time_limit\":3600");
    submit_as(f, &f->ana, ",\"time_limit\":600");
    /* the refused submissions stored nothing */
    r = call_as(f, &f->op, "job.list", "{}");
    assert_int_equal(json_array_size(json_object_get(json_object_get(r, "result"), "jobs")), 3);
    json_decref(r);
}

static const char *error_message(json_t *resp)
{
    return json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
}

static json_t *job_of(json_t *resp)
{
    return json_object_get(json_object_get(resp, "result"), "job");
}

/* Finding 2: job.update, job.hold, job.release and job.requeue refuse
 * another user's job (-32008) and change nothing; the owner and an operator
 * may; a refused call shows none of the job's options. */
static void test_queue_methods_owner_only(void **state)
{
    fixture_t *f = *state;
    int64_t id = submit_as(f, &f->ana, ",\"options\":{\"workdir\":\"/home/ana/private\"}");
    char p[128];
    snprintf(p, sizeof p, "{\"id\":%lld}", (long long)id);
    char upd[160];
    snprintf(upd, sizeof upd, "{\"id\":%lld,\"name\":\"x\",\"priority\":-1000,\"time_limit\":1}",
             (long long)id);
    const char *methods[] = {"job.update", "job.hold", "job.release", "job.requeue"};
    for (int i = 0; i < 4; i++) {
        json_t *r = call_as(f, &f->bo, methods[i], i == 0 ? upd : p);
        assert_int_equal(error_code(r), -32008);
        char *text = json_dumps(r, 0);
        assert_null(strstr(text, "/home/ana")); /* leaked by nothing */
        free(text);
        json_decref(r);
    }
    json_t *r = call_as(f, &f->ana, "job.get", p);
    json_t *j = job_of(r);
    assert_string_equal(json_string_value(json_object_get(j, "name")), "j");
    assert_int_equal(json_integer_value(json_object_get(j, "priority")), 0);
    assert_null(json_object_get(json_object_get(j, "options"), "hold"));
    json_decref(r);
    /* the owner and an operator may */
    r = call_as(f, &f->ana, "job.hold", p);
    assert_int_equal(error_code(r), 0);
    json_decref(r);
    r = call_as(f, &f->op, "job.release", p);
    assert_int_equal(error_code(r), 0);
    json_decref(r);
}

/* Finding 2: a rename passes job.submit's name checks, so "%x" in an
 * output pattern cannot leave its directory nor carry terminal controls. */
static void test_update_name_checked(void **state)
{
    fixture_t *f = *state;
    int64_t id = submit_as(f, &f->ana, NULL);
    const char *bad[] = {"../private/x",      "a/b",        "..", "x\\u001b]0;pwned\\u0007",
                         "evil\\u202etxt.sh", "bell\\u0007"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char p[160];
        snprintf(p, sizeof p, "{\"id\":%lld,\"name\":\"%s\"}", (long long)id, bad[i]);
        json_t *r = call_as(f, &f->ana, "job.update", p);
        assert_int_equal(error_code(r), -32602);
        assert_non_null(strstr(error_message(r), "name: "));
        json_decref(r);
        /* and job.submit says the same */
        snprintf(p, sizeof p, "{\"name\":\"%s\",\"script\":\"true\"}", bad[i]);
        r = call_as(f, &f->ana, "job.submit", p);
        assert_int_equal(error_code(r), -32602);
        json_decref(r);
    }
    char p[96];
    snprintf(p, sizeof p, "{\"id\":%lld,\"name\":\"train-2.v1\"}", (long long)id);
    json_t *r = call_as(f, &f->ana, "job.update", p);
    assert_int_equal(error_code(r), 0);
    assert_string_equal(json_string_value(json_object_get(job_of(r), "name")), "train-2.v1");
    json_decref(r);
}

/* Finding 2: requeue never runs a COMPLETED job again, whoever asks. */
static void test_requeue_completed_refused(void **state)
{
    fixture_t *f = *state;
    int64_t id = submit_as(f, &f->ana, NULL);
    loom_err_t err;
    assert_int_equal(loom_store_transition(f->store, id, LOOM_JOB_PENDING, LOOM_JOB_RUNNING, NULL,
                                           NULL, NULL, &err),
                     LOOM_OK);
    assert_int_equal(loom_store_transition(f->store, id, LOOM_JOB_RUNNING, LOOM_JOB_COMPLETED, NULL,
                                           NULL, NULL, &err),
                     LOOM_OK);
    char p[64];
    snprintf(p, sizeof p, "{\"id\":%lld}", (long long)id);
    const loom_auth_identity_t *who[] = {&f->ana, &f->op};
    for (int i = 0; i < 2; i++) {
        json_t *r = call_as(f, who[i], "job.requeue", p);
        assert_int_equal(error_code(r), -32002);
        assert_non_null(strstr(error_message(r), "COMPLETED"));
        json_decref(r);
    }
    json_t *r = call_as(f, &f->ana, "job.get", p);
    assert_string_equal(json_string_value(json_object_get(job_of(r), "state")), "COMPLETED");
    json_decref(r);
}

/* Finding 7: an array counts as its tasks against pending=N, and
 * job.update's time limit passes the same quota as job.submit's. */
static void test_quotas_count_what_is_created(void **state)
{
    fixture_t *f = *state;
    loom_err_t err;
    static loomd_quotas_t qs;
    memset(&qs, 0, sizeof qs);
    assert_int_equal(loomd_quota_parse("user:bo=pending=5", &qs, &err), LOOM_OK);
    assert_int_equal(loomd_quota_parse("account:ana=time=1h", &qs, &err), LOOM_OK);
    f->m.quotas = &qs;
    json_t *r = call_as(f, &f->bo, "job.submit",
                        "{\"name\":\"a\",\"script\":\"x\",\"options\":{\"array\":\"0-99999\"}}");
    assert_int_equal(error_code(r), -32009);
    assert_non_null(strstr(error_message(r), "pending jobs 100000, the most allowed is 5"));
    json_decref(r);
    r = call_as(f, &f->bo, "job.submit",
                "{\"name\":\"a\",\"script\":\"x\",\"options\":{\"array\":\"0-3\"}}");
    assert_int_equal(error_code(r), 0);
    json_decref(r);
    r = call_as(f, &f->bo, "job.submit",
                "{\"name\":\"a\",\"script\":\"x\",\"options\":{\"array\":\"0-1\"}}");
    assert_int_equal(error_code(r), -32009);
    json_decref(r);
    int64_t n;
    assert_int_equal(loom_store_count_pending(f->store, f->bo.uid, NULL, &n, &err), LOOM_OK);
    assert_int_equal(n, 4);
    /* ana's held job: a year's time limit is refused as at submit, 30 min is not */
    int64_t id = submit_as(f, &f->ana, ",\"time_limit\":600,\"options\":{\"hold\":true}");
    char p[96];
    snprintf(p, sizeof p, "{\"id\":%lld,\"time_limit\":31622400}", (long long)id);
    r = call_as(f, &f->ana, "job.update", p);
    assert_int_equal(error_code(r), -32009);
    assert_non_null(strstr(error_message(r), "time limit too long"));
    json_decref(r);
    snprintf(p, sizeof p, "{\"id\":%lld,\"time_limit\":1800}", (long long)id);
    r = call_as(f, &f->ana, "job.update", p);
    assert_int_equal(error_code(r), 0);
    assert_int_equal(json_integer_value(json_object_get(job_of(r), "time_limit")), 1800);
    json_decref(r);
}

/* Finding 8: submit_id is keyed by owner: ana's replay of bo's id makes
 * her own job and reveals nothing of his; his replay still finds his. */
static void test_submit_id_per_user(void **state)
{
    fixture_t *f = *state;
    const char *p = "{\"name\":\"j\",\"script\":\"x\",\"submit_id\":\"bo-1\"}";
    json_t *r = call_as(f, &f->bo, "job.submit", p);
    int64_t bos = json_integer_value(json_object_get(json_object_get(r, "result"), "id"));
    json_decref(r);
    r = call_as(f, &f->ana, "job.submit", p);
    json_t *res = json_object_get(r, "result");
    int64_t anas = json_integer_value(json_object_get(res, "id"));
    assert_true(json_is_true(json_object_get(res, "created")));
    assert_true(anas != bos);
    json_decref(r);
    char g[64];
    snprintf(g, sizeof g, "{\"id\":%lld}", (long long)anas);
    r = call_as(f, &f->ana, "job.get", g);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(job_of(r), "owner"), "user")), "ana");
    json_decref(r);
    r = call_as(f, &f->bo, "job.submit", p);
    res = json_object_get(r, "result");
    assert_int_equal(json_integer_value(json_object_get(res, "id")), bos);
    assert_true(json_is_false(json_object_get(res, "created")));
    json_decref(r);
    r = call_as(f, &f->ana, "job.submit", p);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "result"), "id")), anas);
    json_decref(r);
}

static void test_options(void **state)
{
    (void)state;
    loom_err_t err;
    loomd_identity_config_t c = {.operators = "wheel"};
    assert_int_equal(loomd_identity_check_args(&c, NULL, &err), LOOM_EINVAL);
    assert_string_equal(err.msg, "--operators needs --multi-user");
    c = (loomd_identity_config_t){.multi_user = true};
    assert_int_equal(loomd_identity_check_args(&c, NULL, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "--multi-user needs --socket PATH"));
    /* Both executors run jobs as their owners: slurm is no longer refused. */
    assert_int_equal(loomd_identity_check_args(&c, "/run/loom.sock", &err), LOOM_OK);
    c = (loomd_identity_config_t){0};
    assert_int_equal(loomd_identity_check_args(&c, NULL, &err), LOOM_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options),
        cmocka_unit_test_setup_teardown(test_quotas, setup, teardown),
        cmocka_unit_test_setup_teardown(test_owner_from_the_caller, setup, teardown),
        cmocka_unit_test_setup_teardown(test_others_cannot_act, setup, teardown),
        cmocka_unit_test_setup_teardown(test_others_see_where_it_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_root_and_accounts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_methods_owner_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_name_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_requeue_completed_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quotas_count_what_is_created, setup, teardown),
        cmocka_unit_test_setup_teardown(test_submit_id_per_user, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
