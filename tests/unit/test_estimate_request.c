/* GPU memory requests from a model (src/estimate/request.c): the margin's
 * syntax and arithmetic, the model reference of job.submit, and the sizer
 * with its cache (hits, a rewritten file, other setups, eviction, threads)
 * on real ONNX files written to a temporary directory. */
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#include "est_pb.h"
#include "loom/estimate.h"

#define MIB ((uint64_t)1 << 20)

static void test_margin_parse(void **s)
{
    (void)s;
    loom_est_margin_t m;
    loom_err_t err;
    assert_int_equal(loom_est_margin_parse("10%+256MiB", &m, &err), LOOM_OK);
    assert_true(m.fraction == 0.10 && m.extra_bytes == 256 * MIB);
    assert_int_equal(loom_est_margin_parse("512MiB+5%", &m, &err), LOOM_OK);
    assert_true(m.fraction == 0.05 && m.extra_bytes == 512 * MIB);
    assert_int_equal(loom_est_margin_parse("15%", &m, &err), LOOM_OK);
    assert_true(m.fraction == 0.15 && m.extra_bytes == 0);
    assert_int_equal(loom_est_margin_parse("1GiB", &m, &err), LOOM_OK);
    assert_true(m.fraction == 0 && m.extra_bytes == 1024 * MIB);
    assert_int_equal(loom_est_margin_parse("0", &m, &err), LOOM_OK);
    assert_true(m.fraction == 0 && m.extra_bytes == 0);
    const char *bad[] = {"",    "10%+",  "+10%", "10%+20%",   "1G+2G",
                         "-5%", "2000%", "x%",   "10%+1G+1G", "%"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (loom_est_margin_parse(bad[i], &m, &err) != LOOM_EINVAL)
            fail_msg("'%s' accepted", bad[i]);
        assert_non_null(strstr(err.msg, "estimate margin"));
        assert_non_null(strstr(err.msg, "10%+256MiB"));
    }
}

static void test_margin_apply(void **s)
{
    (void)s;
    loom_est_margin_t m = {0.10, 256 * MIB};
    /* 1000 MiB + 100 MiB + 256 MiB, already whole MiB */
    assert_int_equal(loom_est_margin_apply(&m, 1000 * MIB), 1356 * MIB);
    /* 10% of 1 byte rounds up to a byte; the sum rounds up to a MiB */
    assert_int_equal(loom_est_margin_apply(&m, 1), 257 * MIB);
    loom_est_margin_t none = {0, 0};
    assert_int_equal(loom_est_margin_apply(&none, 3 * MIB + 1), 4 * MIB);
    assert_int_equal(loom_est_margin_apply(&none, 3 * MIB), 3 * MIB);
    /* a request is never below the estimate, and saturates instead of wrapping */
    for (uint64_t t = 1; t < (UINT64_C(1) << 62); t = t * 3 + 7)
        assert_true(loom_est_margin_apply(&m, t) >= t);
    assert_int_equal(loom_est_margin_apply(&m, UINT64_MAX - 5), UINT64_MAX / MIB * MIB);
}

static int ref_of(const char *json, loom_est_ref_t *r, loom_err_t *err)
{
    static json_t *keep; /* the strings of r point into it */
    json_decref(keep);
    keep = json_loads(json, 0, NULL);
    assert_non_null(keep);
    return loom_est_ref_from_json(keep, r, err);
}

static void expect_ref_error(const char *json, const char *msg)
{
    loom_est_ref_t r;
    loom_err_t err;
    assert_int_equal(ref_of(json, &r, &err), LOOM_EINVAL);
    if (!strstr(err.msg, msg))
        fail_msg("%s: '%s' lacks '%s'", json, err.msg, msg);
}

static void test_ref(void **s)
{
    (void)s;
    loom_est_ref_t r;
    loom_err_t err;
    assert_int_equal(ref_of("{\"path\": \"/m.onnx\", \"batch\": 32}", &r, &err), LOOM_OK);
    assert_string_equal(r.path, "/m.onnx");
    assert_int_equal(r.batch, 32);
    assert_false(r.train); /* the defaults of loom estimate */
    assert_int_equal(r.optimizer, LOOM_EST_ADAM);
    assert_int_equal(r.precision, LOOM_EST_FP32);
    assert_null(r.device);
    assert_int_equal(ref_of("{\"path\": \"/m.onnx\", \"batch\": 1, \"train\": true, \"optimizer\": "
                            "\"sgd\", \"precision\": \"mixed\", \"device\": \"cpu-local\"}",
                            &r, &err),
                     LOOM_OK);
    assert_true(r.train && r.optimizer == LOOM_EST_SGD && r.precision == LOOM_EST_MIXED);
    assert_string_equal(r.device, "cpu-local");
    json_t *j = loom_est_ref_json(&r, "cpu-local");
    char *text = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(text, "{\"batch\":1,\"device\":\"cpu-local\",\"optimizer\":\"sgd\","
                              "\"path\":\"/m.onnx\",\"precision\":\"mixed\",\"train\":true}");
    free(text);
    json_decref(j);
    expect_ref_error("[1]", "model: expected an object");
    expect_ref_error("{\"batch\": 2}", "model.path: required");
    expect_ref_error("{\"path\": \"/m.onnx\"}", "model.batch: required");
    expect_ref_error("{\"path\": \"m.onnx\", \"batch\": 2}",
                     "model.path: expected an absolute path of the ONNX file");
    expect_ref_error("{\"path\": 3, \"batch\": 2}",
                     "model.path: expected a string, found an integer");
    expect_ref_error("{\"path\": \"/m\", \"batch\": 0}",
                     "model.batch: expected an integer from 1 to 16777216, found 0");
    expect_ref_error("{\"path\": \"/m\", \"batch\": \"8\"}",
                     "model.batch: expected an integer from 1 to 16777216, found a string");
    expect_ref_error("{\"path\": \"/m\", \"batch\": 8, \"train\": 1}",
                     "model.train: expected true");
    expect_ref_error("{\"path\": \"/m\", \"batch\": 8, \"optimizer\": \"lamb\"}",
                     "model.optimizer: optimizer 'lamb': expected sgd, momentum or adam");
    expect_ref_error("{\"path\": \"/m\", \"batch\": 8, \"precision\": \"fp8\"}",
                     "model.precision: precision 'fp8'");
    expect_ref_error("{\"path\": \"/m\", \"batch\": 8, \"device\": \"../x\"}",
                     "model.device: expected a device name");
    expect_ref_error("{\"path\": \"/m\", \"batch\": 8, \"bach\": 8}",
                     "model: unknown member 'bach' (expected path, batch, train");
    ref_of("{}", &r, &err); /* releases the kept document */
}

/* ---------------------------------------------------------------- sizer */

static char dir[64];

/* x[N, k] -> MatMul W[k, n] -> y: weights k*n*4 bytes, declared by shape. */
static void write_mlp(const char *name, int64_t k, int64_t n)
{
    pbw_t g = {0};
    int64_t xd[2] = {-1, k}, wd[2] = {k, n}, yd[2] = {-1, n};
    onnx_node(&g, "MatMul", "fc", "x,w", "y");
    onnx_init(&g, "w", 1, 2, wd, NULL, 0);
    onnx_value_info(&g, 11, "x", 1, 2, xd);
    onnx_value_info(&g, 12, "y", 1, 2, yd);
    pbw_t m = onnx_model(&g);
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(m.d, 1, m.n, f), m.n);
    fclose(f);
    free(m.d);
}

static void write_unsupported(const char *name)
{
    pbw_t g = {0};
    int64_t xd[2] = {-1, 4};
    onnx_node(&g, "Loop", "mix", "x,x", "y"); /* control flow: not supported */
    onnx_value_info(&g, 11, "x", 1, 2, xd);
    onnx_value_info(&g, 12, "y", 1, 2, xd);
    pbw_t m = onnx_model(&g);
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    fwrite(m.d, 1, m.n, f);
    fclose(f);
    free(m.d);
}

static int setup(void **s)
{
    (void)s;
    snprintf(dir, sizeof dir, "/tmp/loom-test-estreq-XXXXXX");
    assert_non_null(mkdtemp(dir));
    write_mlp("a.onnx", 1024, 4096);
    write_mlp("b.onnx", 2048, 2048);
    write_mlp("c.onnx", 512, 512);
    write_unsupported("u.onnx");
    return 0;
}

static int teardown(void **s)
{
    (void)s;
    return loom_test_rmtree(dir);
}

static const char *path_of(const char *name)
{
    static char p[4][128];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static loom_est_sizer_t *new_sizer(size_t cache)
{
    loom_est_sizer_opts_t o = {.margin = {0.10, 256 * MIB},
                               .device = "h200",
                               .device_dir = "workloads/devices",
                               .cache_entries = cache};
    loom_est_sizer_t *s;
    loom_err_t err;
    if (loom_est_sizer_new(&o, &s, &err))
        fail_msg("%s", err.msg);
    return s;
}

/* The estimator's own total for a file, run directly. */
static uint64_t direct_total(const char *path, int64_t batch, bool train)
{
    loom_est_device_t dev;
    loom_est_model_t *m;
    loom_err_t err;
    assert_int_equal(loom_est_device_load("h200", "workloads/devices", &dev, &err), LOOM_OK);
    assert_int_equal(loom_est_model_load(path, &m, &err), LOOM_OK);
    loom_est_options_t o = {
        .batch = batch, .train = train, .optimizer = LOOM_EST_ADAM, .device = &dev};
    loom_est_result_t r;
    assert_int_equal(loom_est_run(m, &o, &r, &err), LOOM_OK);
    uint64_t t = r.mem.total;
    loom_est_result_free(&r);
    loom_est_model_free(m);
    return t;
}

static uint64_t size_ok(loom_est_sizer_t *s, const char *name, int64_t batch, bool train,
                        json_t **rec_out)
{
    loom_est_ref_t r = {.path = path_of(name),
                        .batch = batch,
                        .train = train,
                        .optimizer = LOOM_EST_ADAM,
                        .precision = LOOM_EST_FP32};
    json_t *rec;
    uint64_t req;
    loom_err_t err;
    if (loom_est_sizer_size(s, &r, &rec, &req, &err))
        fail_msg("%s", err.msg);
    if (rec_out)
        *rec_out = rec;
    else
        json_decref(rec);
    return req;
}

static void test_sizer_record(void **st)
{
    (void)st;
    loom_est_sizer_t *s = new_sizer(0);
    json_t *rec;
    uint64_t req = size_ok(s, "a.onnx", 16, true, &rec);
    uint64_t total = direct_total(path_of("a.onnx"), 16, true);
    loom_est_margin_t m = {0.10, 256 * MIB};
    assert_int_equal(req, loom_est_margin_apply(&m, total));
    assert_int_equal(json_integer_value(json_object_get(rec, "request_bytes")), req);
    json_t *mem = json_object_get(rec, "memory");
    assert_int_equal(json_integer_value(json_object_get(mem, "total")), total);
    /* the breakdown adds up as the estimator defines it */
    assert_int_equal(json_integer_value(json_object_get(mem, "total")),
                     json_integer_value(json_object_get(mem, "peak_reserved")) +
                         json_integer_value(json_object_get(mem, "context")));
    assert_int_equal(json_integer_value(json_object_get(mem, "weights")), 1024 * 4096 * 4);
    assert_int_equal(json_integer_value(json_object_get(rec, "params")), 1024 * 4096);
    json_t *model = json_object_get(rec, "model");
    assert_string_equal(json_string_value(json_object_get(model, "path")), path_of("a.onnx"));
    assert_string_equal(json_string_value(json_object_get(model, "device")), "h200");
    assert_string_equal(json_string_value(json_object_get(model, "optimizer")), "adam");
    json_t *mg = json_object_get(rec, "margin");
    assert_true(json_real_value(json_object_get(mg, "fraction")) == 0.10);
    assert_int_equal(json_integer_value(json_object_get(mg, "extra_bytes")), 256 * MIB);
    json_decref(rec);
    loom_est_sizer_free(s);
}

static void test_sizer_cache(void **st)
{
    (void)st;
    loom_est_sizer_t *s = new_sizer(0);
    uint64_t hits, misses;
    uint64_t a = size_ok(s, "a.onnx", 8, false, NULL);
    assert_int_equal(size_ok(s, "a.onnx", 8, false, NULL), a);
    loom_est_sizer_stats(s, &hits, &misses);
    assert_true(hits == 1 && misses == 1);
    /* another batch, setup or file is another estimate */
    uint64_t a32 = size_ok(s, "a.onnx", 32, false, NULL);
    uint64_t at = size_ok(s, "a.onnx", 8, true, NULL);
    assert_true(at > a); /* gradients and Adam's state on top of the weights */
    (void)a32;
    size_ok(s, "b.onnx", 8, false, NULL);
    loom_est_sizer_stats(s, &hits, &misses);
    assert_true(hits == 1 && misses == 4);
    /* the file rewritten with another model under the same name: a miss,
     * and the new answer */
    write_mlp("a.onnx", 1024, 8192);
    struct timespec ts[2] = {{0, UTIME_OMIT}, {1, 0}}; /* mtime surely differs */
    assert_int_equal(utimensat(AT_FDCWD, path_of("a.onnx"), ts, 0), 0);
    uint64_t a2 = size_ok(s, "a.onnx", 8, false, NULL);
    assert_int_equal(a2, loom_est_margin_apply(&(loom_est_margin_t){0.10, 256 * MIB},
                                               direct_total(path_of("a.onnx"), 8, false)));
    assert_true(a2 > a);
    loom_est_sizer_stats(s, &hits, &misses);
    assert_true(hits == 1 && misses == 5);
    assert_int_equal(size_ok(s, "a.onnx", 8, false, NULL), a2);
    loom_est_sizer_stats(s, &hits, &misses);
    assert_true(hits == 2 && misses == 5);
    write_mlp("a.onnx", 1024, 4096);
    loom_est_sizer_free(s);
}

static void test_sizer_eviction(void **st)
{
    (void)st;
    loom_est_sizer_t *s = new_sizer(2);
    uint64_t hits, misses;
    size_ok(s, "a.onnx", 4, false, NULL);
    size_ok(s, "b.onnx", 4, false, NULL);
    size_ok(s, "a.onnx", 4, false, NULL); /* hit: a is now the most recent */
    size_ok(s, "c.onnx", 4, false, NULL); /* evicts b, the least recently used */
    size_ok(s, "a.onnx", 4, false, NULL); /* still there */
    loom_est_sizer_stats(s, &hits, &misses);
    assert_true(hits == 2 && misses == 3);
    size_ok(s, "b.onnx", 4, false, NULL); /* was evicted */
    loom_est_sizer_stats(s, &hits, &misses);
    assert_true(hits == 2 && misses == 4);
    loom_est_sizer_free(s);
}

static void expect_size_error(loom_est_sizer_t *s, const loom_est_ref_t *r, int code,
                              const char *needle)
{
    json_t *rec = (json_t *)1;
    uint64_t req = 1;
    loom_err_t err;
    assert_int_equal(loom_est_sizer_size(s, r, &rec, &req, &err), code);
    assert_null(rec);
    assert_int_equal(req, 0);
    if (!strstr(err.msg, needle))
        fail_msg("'%s' lacks '%s'", err.msg, needle);
}

static void test_sizer_errors(void **st)
{
    (void)st;
    loom_est_sizer_t *s = new_sizer(0);
    loom_est_ref_t r = {.path = path_of("none.onnx"), .batch = 2};
    char want[160];
    snprintf(want, sizeof want, "'%s': no such file, or not readable", path_of("none.onnx"));
    expect_size_error(s, &r, LOOM_ENOTFOUND, want);
    r.path = path_of("u.onnx");
    snprintf(want, sizeof want, "%s: node 'mix' (Loop): operator 'Loop' is not supported",
             path_of("u.onnx"));
    expect_size_error(s, &r, LOOM_EINVAL, want);
    r.path = path_of("a.onnx");
    r.device = "no-such-device";
    expect_size_error(s, &r, LOOM_ENOTFOUND, "device 'no-such-device'");
    r.device = NULL;
    r.path = "relative.onnx";
    expect_size_error(s, &r, LOOM_EINVAL, "absolute path");
    uint64_t hits, misses;
    loom_est_sizer_stats(s, &hits, &misses);
    assert_int_equal(hits, 0); /* failures are not cached */
    loom_est_sizer_free(s);
    loom_est_sizer_opts_t o = {.margin = {20, 0}};
    loom_err_t err;
    assert_int_equal(loom_est_sizer_new(&o, &s, &err), LOOM_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err.msg, "outside [0, 10]"));
}

/* Several threads at once (loomd serves each connection on its own
 * thread): every answer equals the single-threaded one. */
typedef struct {
    loom_est_sizer_t *s;
    char paths[3][128]; /* path_of's buffers are not for threads */
    uint64_t want[3];
    int bad;
} par_t;

static void *par_main(void *arg)
{
    par_t *p = arg;
    const char *names[3] = {"a.onnx", "b.onnx", "c.onnx"};
    for (int i = 0; i < 30; i++) {
        loom_est_ref_t r = {.path = p->paths[i % 3], .batch = 4, .optimizer = LOOM_EST_ADAM};
        json_t *rec;
        uint64_t req;
        loom_err_t err;
        if (loom_est_sizer_size(p->s, &r, &rec, &req, &err) || req != p->want[i % 3]) {
            fprintf(stderr, "thread: %s: %s (request %llu, expected %llu)\n", names[i % 3], err.msg,
                    (unsigned long long)req, (unsigned long long)p->want[i % 3]);
            __atomic_add_fetch(&p->bad, 1, __ATOMIC_RELAXED);
        } else
            json_decref(rec);
    }
    return NULL;
}

static void test_sizer_threads(void **st)
{
    (void)st;
    loom_est_sizer_t *ref = new_sizer(0);
    par_t p = {.s = new_sizer(2)}; /* small: evictions race with lookups */
    for (int i = 0; i < 3; i++)
        snprintf(p.paths[i], sizeof p.paths[i], "%s",
                 path_of(i == 0   ? "a.onnx"
                         : i == 1 ? "b.onnx"
                                  : "c.onnx"));
    p.want[0] = size_ok(ref, "a.onnx", 4, false, NULL);
    p.want[1] = size_ok(ref, "b.onnx", 4, false, NULL);
    p.want[2] = size_ok(ref, "c.onnx", 4, false, NULL);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, par_main, &p), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(p.bad, 0);
    uint64_t hits, misses;
    loom_est_sizer_stats(p.s, &hits, &misses);
    assert_int_equal(hits + misses, 120);
    loom_est_sizer_free(p.s);
    loom_est_sizer_free(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_margin_parse), cmocka_unit_test(test_margin_apply),
        cmocka_unit_test(test_ref),          cmocka_unit_test(test_sizer_record),
        cmocka_unit_test(test_sizer_cache),  cmocka_unit_test(test_sizer_eviction),
        cmocka_unit_test(test_sizer_errors), cmocka_unit_test(test_sizer_threads),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
