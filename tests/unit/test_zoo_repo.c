/* The model repository (src/zoo/repo.c, warm.c): entries are added with
 * their files content-addressed (the same file stored once), listed by
 * task, matched (the most similar first; the parent rule prefers the better
 * metric within the band), removed with their objects; bad input is refused
 * with the field named; a warm start writes a weights file that names its
 * parent. Real SQLite and files in a temporary directory. */
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#include "estimate/est.h"
#include "loom/zoo.h"
#include "zoo_graphs.h"

typedef struct fixture {
    char dir[64];
    loom_zoo_t *z;
} fixture_t;

static void write_file(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    fclose(f);
}

/* Writes DIR/NAME.onnx and DIR/NAME.w for an MLP; weights all `value`. */
static void make_model(const char *dir, const char *name, const int64_t *widths, int n, float value)
{
    char path[256];
    pbw_t pb = zoo_mlp(widths, n, 0);
    snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
    write_file(path, pb.d, pb.n);
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
        t->data = malloc(t->numel * sizeof(float));
        for (size_t e = 0; e < t->numel; e++)
            t->data[e] = value;
    }
    snprintf(path, sizeof path, "%s/%s.w", dir, name);
    loom_err_t err;
    assert_int_equal(loom_zoo_weights_save(&w, path, &err), LOOM_OK);
    loom_zoo_weights_free(&w);
    loom_est_model_free(m);
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/loom-zoo-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    char repo[128];
    snprintf(repo, sizeof repo, "%s/state/zoo", f->dir);
    loom_err_t err;
    if (loom_zoo_open(repo, &f->z, &err))
        fail_msg("%s", err.msg);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    loom_zoo_close(f->z);
    assert_int_equal(loom_test_rmtree(f->dir), 0);
    free(f);
    return 0;
}

static int64_t add(fixture_t *f, const char *name, const char *task, const char *metric,
                   double value)
{
    char mp[256], wp[256];
    snprintf(mp, sizeof mp, "%s/%s.onnx", f->dir, name);
    snprintf(wp, sizeof wp, "%s/%s.w", f->dir, name);
    loom_zoo_entry_in_t in = {.model_path = mp,
                              .weights_path = wp,
                              .task = task,
                              .name = name,
                              .metric_name = metric,
                              .metric = value};
    int64_t id = 0;
    loom_err_t err;
    if (loom_zoo_add(f->z, &in, &id, &err))
        fail_msg("%s", err.msg);
    return id;
}

static size_t objects(fixture_t *f)
{
    char path[128];
    snprintf(path, sizeof path, "%s/state/zoo/objects", f->dir);
    DIR *d = opendir(path);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_add_list_remove(void **state)
{
    fixture_t *f = *state;
    int64_t w1[] = {4, 8, 3}, w2[] = {4, 16, 3};
    make_model(f->dir, "a", w1, 3, 0.5f);
    make_model(f->dir, "b", w2, 3, 0.25f);
    int64_t a = add(f, "a", "digits", "accuracy", 0.9);
    int64_t a2 = add(f, "a", "digits", "accuracy", 0.8); /* same files again */
    int64_t b = add(f, "b", "other", "loss", 0.3);
    assert_true(a > 0 && a2 > a && b > a2);
    assert_int_equal(objects(f), 4); /* content-addressed: a's files once */
    json_t *arr;
    loom_err_t err;
    assert_int_equal(loom_zoo_list(f->z, "digits", NULL, 0, &arr, &err), LOOM_OK);
    assert_int_equal(json_array_size(arr), 2);
    json_decref(arr);
    json_t *e;
    assert_int_equal(loom_zoo_get(f->z, b, NULL, &e, &err), LOOM_OK);
    assert_string_equal(json_string_value(json_object_get(e, "task")), "other");
    assert_false(json_is_true(json_object_get(json_object_get(e, "metric"), "higher_better")));
    assert_int_equal(json_integer_value(json_object_get(e, "params")), 4 * 16 + 16 + 16 * 3 + 3);
    struct stat st;
    assert_int_equal(stat(json_string_value(json_object_get(e, "weights_path")), &st), 0);
    json_decref(e);
    assert_int_equal(loom_zoo_remove(f->z, a, &err), LOOM_OK);
    assert_int_equal(objects(f), 4); /* still used by a2 */
    assert_int_equal(loom_zoo_remove(f->z, a2, &err), LOOM_OK);
    assert_int_equal(objects(f), 2);
    assert_int_equal(loom_zoo_remove(f->z, a2, &err), LOOM_ENOTFOUND);
    assert_non_null(strstr(err.msg, "no such entry"));
    assert_int_equal(loom_zoo_get(f->z, 999, NULL, &e, &err), LOOM_ENOTFOUND);
}

static void test_bad_input(void **state)
{
    fixture_t *f = *state;
    int64_t w1[] = {4, 8, 3};
    make_model(f->dir, "a", w1, 3, 0.5f);
    char mp[256], wp[256], bad[256];
    snprintf(mp, sizeof mp, "%s/a.onnx", f->dir);
    snprintf(wp, sizeof wp, "%s/a.w", f->dir);
    snprintf(bad, sizeof bad, "%s/bad.w", f->dir);
    write_file(bad, "LOOMWTS1\xff\xff", 10);
    loom_zoo_entry_in_t in = {
        .model_path = mp, .weights_path = bad, .task = "t", .metric_name = "accuracy", .metric = 1};
    int64_t id;
    loom_err_t err;
    assert_int_equal(loom_zoo_add(f->z, &in, &id, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "bad.w"));
    in.weights_path = wp;
    in.model_path = wp; /* not ONNX */
    assert_int_not_equal(loom_zoo_add(f->z, &in, &id, &err), LOOM_OK);
    in.model_path = mp;
    in.task = "";
    assert_int_equal(loom_zoo_add(f->z, &in, &id, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "task"));
    in.task = "t";
    in.metric = 0.0 / 0.0;
    assert_int_equal(loom_zoo_add(f->z, &in, &id, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "metric"));
    assert_int_equal(objects(f), 0); /* nothing half-written */
}

static void test_match_and_parent(void **state)
{
    fixture_t *f = *state;
    int64_t same[] = {4, 8, 3}, near[] = {4, 9, 3}, far[] = {4, 32, 32, 32, 3};
    make_model(f->dir, "same", same, 3, 0.1f);
    make_model(f->dir, "near", near, 3, 0.2f);
    make_model(f->dir, "far", far, 5, 0.3f);
    make_model(f->dir, "child", same, 3, 0.0f);
    int64_t s = add(f, "same", "digits", "accuracy", 0.70);
    int64_t n = add(f, "near", "digits", "accuracy", 0.95);
    int64_t r = add(f, "far", "digits", "accuracy", 0.99);
    add(f, "same", "speech", "accuracy", 0.99); /* another task: never chosen */
    loom_zoo_sig_t child;
    char path[256];
    snprintf(path, sizeof path, "%s/child.onnx", f->dir);
    loom_err_t err;
    assert_int_equal(loom_zoo_sig_load(path, &child, &err), LOOM_OK);
    json_t *res;
    loom_zoo_match_opts_t o = {.task = "digits", .band = 0.1, .min_similarity = -1};
    assert_int_equal(loom_zoo_match(f->z, &child, &o, &res, &err), LOOM_OK);
    json_t *c = json_object_get(res, "candidates");
    assert_int_equal(json_array_size(c), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(c, 0), "id")), s);
    assert_true(json_real_value(json_object_get(json_array_get(c, 0), "similarity")) == 1.0);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(c, 2), "id")), r);
    /* "near" (0.93) is within 0.1 of the identical one and better trained */
    assert_int_equal(json_integer_value(json_object_get(res, "parent")), n);
    json_decref(res);
    /* the default band (0.05) leaves "near" out: the most similar */
    o.band = -1;
    assert_int_equal(loom_zoo_match(f->z, &child, &o, &res, &err), LOOM_OK);
    assert_int_equal(json_integer_value(json_object_get(res, "parent")), s);
    json_decref(res);
    /* a zero band: the most similar */
    o.band = 0;
    assert_int_equal(loom_zoo_match(f->z, &child, &o, &res, &err), LOOM_OK);
    assert_int_equal(json_integer_value(json_object_get(res, "parent")), s);
    json_decref(res);
    /* nothing similar enough: no parent */
    o.min_similarity = 1.01;
    assert_int_equal(loom_zoo_match(f->z, &child, &o, &res, &err), LOOM_OK);
    assert_true(json_is_null(json_object_get(res, "parent")));
    json_decref(res);
    loom_zoo_sig_free(&child);
}

static void test_warm(void **state)
{
    fixture_t *f = *state;
    int64_t pw[] = {4, 8, 3}, cw[] = {4, 12, 3};
    make_model(f->dir, "parent", pw, 3, 0.5f);
    make_model(f->dir, "child", cw, 3, 0.0f);
    int64_t p = add(f, "parent", "digits", "accuracy", 0.9);
    char child[256], out[256];
    snprintf(child, sizeof child, "%s/child.onnx", f->dir);
    snprintf(out, sizeof out, "%s/warm.w", f->dir);
    loom_zoo_match_opts_t mo = {.task = "digits", .band = -1, .min_similarity = -1};
    loom_zoo_transform_opts_t to = {.noise = 0};
    json_t *rep;
    loom_err_t err;
    if (loom_zoo_warm(f->z, child, &mo, &to, out, &rep, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(json_integer_value(json_object_get(rep, "parent")), p);
    json_decref(rep);
    loom_zoo_weights_t w;
    assert_int_equal(loom_zoo_weights_load(out, &w, &err), LOOM_OK);
    assert_int_equal(json_integer_value(json_object_get(w.meta, "parent")), p);
    assert_int_equal(json_integer_value(json_object_get(w.meta, "layers_mapped")), 2);
    const loom_zoo_tensor_t *t = loom_zoo_weights_find(&w, "fc2.weight");
    assert_non_null(t);
    assert_int_equal(t->dims[1], 12);
    /* columns of units copied once (4 of 8) are halved: 0.5 / 2 */
    assert_true(t->data[0] == 0.25f && t->data[7] == 0.5f);
    loom_zoo_weights_free(&w);
    /* another task: no parent, nothing written */
    unlink(out);
    mo.task = "speech";
    assert_int_equal(loom_zoo_warm(f->z, child, &mo, &to, out, &rep, &err), LOOM_ENOTFOUND);
    assert_int_not_equal(access(out, F_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_add_list_remove, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_match_and_parent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_warm, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
