/* The zoo's matching and weight transformation (src/zoo/sig.c, align.c,
 * weights.c, transform.c): identical graphs score 1; known edits (a layer
 * inserted, a layer widened) score what the formula says; a skip
 * connection aligns the layers around it; two exports listing the branches
 * of one architecture in different orders align branch to branch (along
 * the graphs' edges, issue 33); the coarse and shape-key bounds never fall
 * below the exact score on any family of bench/zoo_families.h; signatures and weights files
 * round-trip and reject damage; a widened and a deepened MLP compute the parent's function. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "test_util.h"

#include "loom/zoo.h"
#include "zoo_graphs.h"
/* after zoo_graphs.h: est_pb.h once */
#include "../../bench/zoo_families.h"

static void sig_of(const int64_t *w, int n, int residual, loom_est_model_t **m, loom_zoo_sig_t *s)
{
    pbw_t pb = zoo_mlp(w, n, residual);
    *m = zoo_parse(&pb);
    free(pb.d);
    loom_err_t err = {0};
    if (loom_zoo_sig_from_model(*m, s, &err))
        fail_msg("%s", err.msg);
}

static double sim_of(const int64_t *a, int na, int ra, const int64_t *b, int nb, int rb)
{
    loom_est_model_t *ma, *mb;
    loom_zoo_sig_t sa, sb;
    sig_of(a, na, ra, &ma, &sa);
    sig_of(b, nb, rb, &mb, &sb);
    double s = loom_zoo_similarity(&sa, &sb);
    loom_zoo_alignment_t al;
    loom_err_t err = {0};
    assert_int_equal(loom_zoo_align(&sa, &sb, &al, &err), LOOM_OK);
    assert_true(fabs(al.similarity - s) < 1e-6); /* both DPs agree */
    assert_true(loom_zoo_bound(&sa, &sb) >= s - 1e-9);
    loom_zoo_alignment_free(&al);
    loom_zoo_sig_free(&sa);
    loom_zoo_sig_free(&sb);
    loom_est_model_free(ma);
    loom_est_model_free(mb);
    return s;
}

static void test_identical(void **state)
{
    (void)state;
    int64_t w[] = {16, 32, 32, 10};
    assert_true(sim_of(w, 4, 0, w, 4, 0) == 1.0);
    assert_true(sim_of(w, 4, 1, w, 4, 1) == 1.0);
}

static void test_inserted_layer(void **state)
{
    (void)state;
    /* Gemm Relu Gemm against Gemm Relu Gemm Relu Gemm, shared layers equal:
     * 3 matches of 1, sim = 2 x 3 / (3 + 5). */
    int64_t a[] = {4, 8, 3}, b[] = {4, 8, 8, 3};
    assert_true(fabs(sim_of(a, 3, 0, b, 4, 0) - 0.75) < 1e-6);
}

static void test_widened(void **state)
{
    (void)state;
    /* hidden 8 against 16: Gemm1 w 1/2, out 1/2 -> 0.25 + 0.75 x 0.5;
     * Relu out 1/2 -> same; Gemm2 w 1/2, out 1 -> 0.25 + 0.75 x 0.75. */
    int64_t a[] = {4, 8, 3}, b[] = {4, 16, 3};
    double s = 0.625 + 0.625 + 0.8125;
    assert_true(fabs(sim_of(a, 3, 0, b, 3, 0) - 2 * s / 6) < 1e-6);
    /* different tasks' shapes score lower still, never below 0 */
    int64_t c[] = {64, 256, 100};
    double s2 = sim_of(a, 3, 0, c, 3, 0);
    assert_true(s2 > 0 && s2 < 2 * s / 6);
}

static void test_branch(void **state)
{
    (void)state;
    /* A skip connection (Add after relu1) against the plain chain: the Add
     * is an insertion, everything else matches exactly: 2 x 3 / (4 + 3). */
    int64_t w[] = {8, 8, 3};
    assert_true(fabs(sim_of(w, 3, 1, w, 3, 0) - 6.0 / 7) < 1e-6);
    loom_est_model_t *ma, *mb;
    loom_zoo_sig_t sa, sb;
    sig_of(w, 3, 1, &ma, &sa);
    sig_of(w, 3, 0, &mb, &sb);
    assert_int_equal(sa.n, 4);
    assert_int_equal(sa.layers[2].nin, 2); /* the merge */
    loom_zoo_alignment_t al;
    loom_err_t err = {0};
    assert_int_equal(loom_zoo_align(&sa, &sb, &al, &err), LOOM_OK);
    assert_int_equal(al.npairs, 3);
    /* the last Gemm (child layer 3) is matched to the parent's (layer 2) */
    assert_int_equal(al.pairs[2].child, 3);
    assert_int_equal(al.pairs[2].parent, 2);
    /* an Add merging two branches against one adding a bias: fan-in differs */
    loom_zoo_layer_t x = sa.layers[2], y = x;
    y.nin = 1;
    assert_true(loom_zoo_layer_score(&x, &y) < 1 && loom_zoo_layer_score(&x, &x) == 1);
    loom_zoo_alignment_free(&al);
    loom_zoo_sig_free(&sa);
    loom_zoo_sig_free(&sb);
    loom_est_model_free(ma);
    loom_est_model_free(mb);
}

static void test_sig_roundtrip(void **state)
{
    (void)state;
    int64_t w[] = {16, 32, 32, 10};
    loom_est_model_t *m;
    loom_zoo_sig_t s, d;
    sig_of(w, 4, 2, &m, &s);
    loom_buf_t b;
    loom_buf_init(&b);
    assert_int_equal(loom_zoo_sig_encode(&s, &b), LOOM_OK);
    loom_err_t err = {0};
    assert_int_equal(loom_zoo_sig_decode(b.data, b.len, "sig", &d, &err), LOOM_OK);
    assert_int_equal(d.n, s.n);
    assert_true(loom_zoo_similarity(&s, &d) == 1.0);
    assert_memory_equal(d.hist, s.hist, sizeof s.hist);
    /* the edges survive (the residual Add reads two layers) */
    assert_memory_equal(d.pstart, s.pstart, (s.n + 1) * sizeof *s.pstart);
    assert_memory_equal(d.pred, s.pred, s.pstart[s.n] * sizeof *s.pred);
    loom_zoo_sig_free(&d);
    /* a signature from before edges (LZS1: no predecessors) still decodes,
     * aligned as a chain, and encodes back as it was */
    loom_buf_t v1 = LOOM_BUF_INIT;
    loom_buf_append(&v1, "LZS1", 4);
    loom_buf_append(&v1, b.data + 4, 4 + s.n * 40);
    for (size_t i = 0; i < s.n; i++)
        v1.data[8 + i * 40 + 5] = 0;
    assert_int_equal(loom_zoo_sig_decode(v1.data, v1.len, "old", &d, &err), LOOM_OK);
    assert_null(d.pstart);
    assert_true(loom_zoo_similarity(&d, &d) == 1.0);
    loom_buf_t again = LOOM_BUF_INIT;
    assert_int_equal(loom_zoo_sig_encode(&d, &again), LOOM_OK);
    assert_int_equal(again.len, v1.len);
    assert_memory_equal(again.data, v1.data, v1.len);
    loom_buf_free(&again);
    loom_buf_free(&v1);
    loom_zoo_sig_free(&d);
    /* a predecessor that is not an earlier layer */
    size_t last = b.len - 2;
    uint8_t lo = (uint8_t)b.data[last], hi = (uint8_t)b.data[last + 1];
    b.data[last] = (char)0xff;
    b.data[last + 1] = 0x07;
    assert_int_equal(loom_zoo_sig_decode(b.data, b.len, "sig", &d, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "predecessor"));
    b.data[last] = (char)lo;
    b.data[last + 1] = (char)hi;
    /* truncated, wrong magic, absurd count */
    assert_int_equal(loom_zoo_sig_decode(b.data, b.len - 1, "sig", &d, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "sig"));
    b.data[0] = 'X';
    assert_int_equal(loom_zoo_sig_decode(b.data, b.len, "sig", &d, &err), LOOM_EINVAL);
    b.data[0] = 'L';
    b.data[7] = 0x7f;
    assert_int_equal(loom_zoo_sig_decode(b.data, b.len, "sig", &d, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "layers"));
    loom_buf_free(&b);
    loom_zoo_sig_free(&s);
    loom_est_model_free(m);
}

/* Stem conv, two parallel 3x3 convs (64 and 56 channels) on its output,
 * their Concat, a 1x1 head: one architecture, its branches listed in
 * either order (exporters list them as the module's forward visits
 * them). */
static loom_est_model_t *two_branches(bool b_first)
{
    pbw_t g = {0};
    static const struct {
        const char *name, *in, *out;
        int64_t w[4];
    } conv[4] = {{"stem", "x", "s", {16, 16, 3, 3}},
                 {"a", "s", "ya", {64, 16, 3, 3}},
                 {"b", "s", "yb", {56, 16, 3, 3}},
                 {"head", "c", "y", {10, 120, 1, 1}}};
    static const int order[2][4] = {{0, 1, 2, 3}, {0, 2, 1, 3}};
    for (int k = 0; k < 4; k++) {
        int i = order[b_first][k];
        if (i == 3) {
            pbw_t n;
            onnx_node_begin(&n, "Concat", "cat", "ya,yb", "c");
            attr_int(&n, "axis", 1);
            onnx_node_end(&g, &n);
        }
        char w[32], ins[64];
        snprintf(w, sizeof w, "%s.weight", conv[i].name);
        snprintf(ins, sizeof ins, "%s,%s", conv[i].in, w);
        pbw_t n;
        onnx_node_begin(&n, "Conv", conv[i].name, ins, conv[i].out);
        int64_t k2 = conv[i].w[2], ks[2] = {k2, k2}, pads[4] = {k2 / 2, k2 / 2, k2 / 2, k2 / 2};
        attr_ints(&n, "kernel_shape", 2, ks);
        attr_ints(&n, "pads", 4, pads);
        onnx_node_end(&g, &n);
        onnx_init(&g, w, 1, 4, conv[i].w, NULL, 0);
    }
    int64_t xd[4] = {1, 16, 8, 8};
    onnx_value_info(&g, 11, "x", 1, 4, xd);
    pbw_t pb = onnx_model(&g);
    loom_est_model_t *m = zoo_parse(&pb);
    free(pb.d);
    return m;
}

static void test_branch_order(void **state)
{
    (void)state;
    loom_est_model_t *mc = two_branches(true), *mp = two_branches(false);
    loom_zoo_sig_t sc, sp;
    loom_err_t err = {0};
    assert_int_equal(loom_zoo_sig_from_model(mc, &sc, &err), LOOM_OK);
    assert_int_equal(loom_zoo_sig_from_model(mp, &sp, &err), LOOM_OK);
    assert_int_equal(sc.n, 5);
    /* the premise: the two topological orders differ */
    assert_string_equal(mc->n[sc.layers[1].node].name, "b");
    assert_string_equal(mp->n[sp.layers[1].node].name, "a");
    /* the edges: both branches read the stem, the Concat reads both */
    assert_int_equal(sc.pstart[2] - sc.pstart[1], 1);
    assert_int_equal(sc.pred[sc.pstart[1]], 0);
    assert_int_equal(sc.pstart[4] - sc.pstart[3], 2);
    loom_zoo_alignment_t al;
    assert_int_equal(loom_zoo_align(&sc, &sp, &al, &err), LOOM_OK);
    /* Aligned along the graphs, every layer meets its own: a with a, b
     * with b (order-preserving alignment of the two orders crossed them,
     * b's 56 channels onto a's 64, for 0.906 each: 1.81 > 1 for keeping
     * one branch). */
    assert_int_equal(al.npairs, 5);
    for (size_t i = 0; i < al.npairs; i++) {
        const char *c = mc->n[sc.layers[al.pairs[i].child].node].name;
        const char *p = mp->n[sp.layers[al.pairs[i].parent].node].name;
        assert_string_equal(c, p);
        assert_true(al.pairs[i].score == 1.0);
    }
    assert_true(al.similarity == 1.0);
    assert_true(loom_zoo_similarity(&sc, &sp) == 1.0);
    loom_zoo_alignment_free(&al);
    loom_zoo_sig_free(&sc);
    loom_zoo_sig_free(&sp);
    loom_est_model_free(mc);
    loom_est_model_free(mp);
}

/* Two models of each family of bench/zoo_families.h: each aligns with
 * itself fully (similarity 1: every branch found), and both bounds are at
 * least the exact similarity of every pair. */
static void test_families_bounds(void **state)
{
    (void)state;
    enum { PER = 2, N = FAM_N * PER };
    loom_zoo_sig_t s[N];
    loom_zoo_keys_t k[N];
    loom_rng_t rng;
    loom_rng_init(&rng, 7, 0);
    loom_err_t err = {0};
    for (int i = 0; i < N; i++) {
        pbw_t pb = fam_model(&rng, i / PER, NULL);
        if (loom_zoo_sig_parse(pb.d, pb.n, fam_names[i / PER], &s[i], &err))
            fail_msg("%s", err.msg);
        free(pb.d);
        assert_int_equal(loom_zoo_keys_of(&s[i], &k[i]), LOOM_OK);
        loom_buf_t b = LOOM_BUF_INIT;
        loom_zoo_keys_t d;
        assert_int_equal(loom_zoo_keys_encode(&k[i], &b), LOOM_OK);
        assert_int_equal(loom_zoo_keys_decode(b.data, b.len, s[i].n, &d), LOOM_OK);
        assert_int_equal(d.n, k[i].n);
        for (size_t x = 0; x < d.n; x++) { /* member by member: the struct has a padding byte */
            const loom_zoo_key_t *a = &d.k[x], *e = &k[i].k[x];
            assert_true(a->op == e->op && a->nin == e->nin && a->wrank == e->wrank &&
                        a->orank == e->orank && a->wb == e->wb && a->ob == e->ob &&
                        a->count == e->count);
        }
        loom_zoo_keys_free(&d);
        assert_int_equal(loom_zoo_keys_decode(b.data, b.len - 1, s[i].n, &d), LOOM_EINVAL);
        assert_int_equal(loom_zoo_keys_decode(b.data, b.len, s[i].n + 1, &d), LOOM_EINVAL);
        loom_buf_free(&b);
    }
    int tighter = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double sim = loom_zoo_similarity(&s[i], &s[j]);
            double kb = loom_zoo_keys_bound(&k[i], &k[j]), hb = loom_zoo_bound(&s[i], &s[j]);
            if (i == j && sim != 1.0)
                fail_msg("%s aligns with itself at %.6f", fam_names[i / PER], sim);
            if (kb < sim - 1e-6 || hb < sim - 1e-9)
                fail_msg("%s against %s: similarity %.6f above a bound (%.6f, %.6f)",
                         fam_names[i / PER], fam_names[j / PER], sim, kb, hb);
            tighter += kb < hb - 0.01;
        }
    assert_true(tighter > N); /* the keys tell widths apart where operators cannot */
    for (int i = 0; i < N; i++) {
        loom_zoo_sig_free(&s[i]);
        loom_zoo_keys_free(&k[i]);
    }
}

/* Parent weights for an MLP: deterministic pseudo-random values. */
static void fill_weights(loom_est_model_t *m, loom_zoo_weights_t *w, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    w->meta = json_object();
    loom_rng_t rng;
    loom_rng_init(&rng, seed, 1);
    w->t = calloc(m->nt, sizeof *w->t);
    for (size_t i = 0; i < m->nt; i++) {
        if (!m->t[i].is_init)
            continue;
        loom_zoo_tensor_t *t = &w->t[w->n++];
        t->name = strdup(m->t[i].name);
        t->rank = m->t[i].rank;
        t->numel = 1;
        for (int k = 0; k < t->rank; k++)
            t->numel *= (size_t)(t->dims[k] = m->t[i].dims[k]);
        t->data = malloc(t->numel * sizeof *t->data);
        for (size_t e = 0; e < t->numel; e++)
            t->data[e] = (float)(loom_rng_uniform(&rng) - 0.5);
    }
}

/* y = MLP(x) with the weights in w (missing tensors: zero). */
static void forward(const int64_t *widths, int n, const loom_zoo_weights_t *w, const double *x,
                    double *y)
{
    double h[64], o[64];
    memcpy(h, x, (size_t)widths[0] * sizeof *h);
    for (int k = 1; k < n; k++) {
        char wn[32], bn[32];
        snprintf(wn, sizeof wn, "fc%d.weight", k);
        snprintf(bn, sizeof bn, "fc%d.bias", k);
        const loom_zoo_tensor_t *W = loom_zoo_weights_find(w, wn),
                                *B = loom_zoo_weights_find(w, bn);
        assert_non_null(W);
        for (int j = 0; j < widths[k]; j++) {
            o[j] = B ? B->data[j] : 0;
            for (int i = 0; i < widths[k - 1]; i++)
                o[j] += W->data[j * widths[k - 1] + i] * h[i];
            if (k < n - 1 && o[j] < 0)
                o[j] = 0;
        }
        memcpy(h, o, (size_t)widths[k] * sizeof *h);
    }
    memcpy(y, h, (size_t)widths[n - 1] * sizeof *y);
}

static void transform(const int64_t *pw, int pn, const int64_t *cw, int cn, double noise,
                      loom_zoo_weights_t *parent, loom_zoo_weights_t *child,
                      loom_zoo_transform_stats_t *st)
{
    loom_est_model_t *mp, *mc;
    loom_zoo_sig_t sp, sc;
    sig_of(pw, pn, 0, &mp, &sp);
    sig_of(cw, cn, 0, &mc, &sc);
    fill_weights(mp, parent, 7);
    loom_zoo_alignment_t al;
    loom_err_t err = {0};
    assert_int_equal(loom_zoo_align(&sc, &sp, &al, &err), LOOM_OK);
    loom_zoo_transform_opts_t o = {.noise = noise, .seed = 3};
    if (loom_zoo_transform(mc, &sc, mp, &sp, &al, parent, &o, child, st, &err))
        fail_msg("%s", err.msg);
    loom_zoo_alignment_free(&al);
    loom_zoo_sig_free(&sp);
    loom_zoo_sig_free(&sc);
    loom_est_model_free(mp);
    loom_est_model_free(mc);
}

static void same_function(const int64_t *pw, int pn, const loom_zoo_weights_t *p, const int64_t *cw,
                          int cn, const loom_zoo_weights_t *c, double tol)
{
    loom_rng_t rng;
    loom_rng_init(&rng, 11, 2);
    for (int trial = 0; trial < 20; trial++) {
        double x[64], y1[64], y2[64];
        for (int i = 0; i < pw[0]; i++)
            x[i] = 2 * loom_rng_uniform(&rng) - 1;
        forward(pw, pn, p, x, y1);
        forward(cw, cn, c, x, y2);
        for (int j = 0; j < pw[pn - 1]; j++)
            if (fabs(y1[j] - y2[j]) > tol)
                fail_msg("output %d: parent %g, child %g", j, y1[j], y2[j]);
    }
}

static void test_widen_preserves(void **state)
{
    (void)state;
    int64_t pw[] = {4, 8, 6, 3}, cw[] = {4, 13, 11, 3};
    loom_zoo_weights_t p, c;
    loom_zoo_transform_stats_t st;
    transform(pw, 4, cw, 4, 0, &p, &c, &st);
    assert_int_equal(st.layers_mapped, 3);
    assert_int_equal(c.n, 6);
    assert_int_equal(st.tensors_copied, 1); /* fc3.bias */
    assert_int_equal(st.tensors_widened, 5);
    same_function(pw, 4, &p, cw, 4, &c, 1e-5);
    /* with noise the copies differ a little, the function nearly the same */
    loom_zoo_weights_free(&c);
    loom_zoo_weights_free(&p);
    transform(pw, 4, cw, 4, 0.01, &p, &c, &st);
    same_function(pw, 4, &p, cw, 4, &c, 0.05);
    loom_zoo_weights_free(&c);
    loom_zoo_weights_free(&p);
}

static void test_deepen_preserves(void **state)
{
    (void)state;
    /* a hidden layer inserted: set to the identity between two Relus */
    int64_t pw[] = {4, 8, 3}, cw[] = {4, 8, 8, 3};
    loom_zoo_weights_t p, c;
    loom_zoo_transform_stats_t st;
    transform(pw, 3, cw, 4, 0, &p, &c, &st);
    assert_int_equal(st.tensors_deepened, 2);
    /* the child's fc3 is the parent's fc2, fc2 the identity */
    same_function(pw, 3, &p, cw, 4, &c, 1e-5);
    loom_zoo_weights_free(&c);
    loom_zoo_weights_free(&p);
}

static void test_crop(void **state)
{
    (void)state;
    /* narrower: cropped, every child tensor present with the child's shape */
    int64_t pw[] = {4, 16, 3}, cw[] = {4, 5, 3};
    loom_zoo_weights_t p, c;
    loom_zoo_transform_stats_t st;
    transform(pw, 3, cw, 3, 0.01, &p, &c, &st);
    const loom_zoo_tensor_t *w1 = loom_zoo_weights_find(&c, "fc1.weight");
    const loom_zoo_tensor_t *p1 = loom_zoo_weights_find(&p, "fc1.weight");
    assert_non_null(w1);
    assert_int_equal(w1->dims[0], 5);
    assert_int_equal(w1->dims[1], 4);
    assert_true(w1->data[4 * 4 + 3] == p1->data[4 * 4 + 3]); /* first rows kept */
    loom_zoo_weights_free(&c);
    loom_zoo_weights_free(&p);
}

static void test_weights_file(void **state)
{
    (void)state;
    int64_t w[] = {4, 8, 3};
    loom_est_model_t *m;
    loom_zoo_sig_t s;
    sig_of(w, 3, 0, &m, &s);
    loom_zoo_weights_t a, b;
    fill_weights(m, &a, 5);
    json_object_set_new(a.meta, "parent", json_integer(3));
    char path[] = "/tmp/loom-zoo-wXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    loom_err_t err = {0};
    assert_int_equal(loom_zoo_weights_save(&a, path, &err), LOOM_OK);
    assert_int_equal(loom_zoo_weights_load(path, &b, &err), LOOM_OK);
    assert_int_equal(b.n, a.n);
    for (size_t i = 0; i < a.n; i++) {
        const loom_zoo_tensor_t *t = loom_zoo_weights_find(&b, a.t[i].name);
        assert_non_null(t);
        assert_int_equal(t->numel, a.t[i].numel);
        assert_memory_equal(t->data, a.t[i].data, t->numel * 4);
    }
    assert_int_equal(json_integer_value(json_object_get(b.meta, "parent")), 3);
    loom_zoo_weights_free(&b);
    /* damage: every truncation is an error, never a crash */
    loom_buf_t buf;
    loom_buf_init(&buf);
    assert_int_equal(loom_buf_read_file(&buf, path, &err), LOOM_OK);
    for (size_t len = 0; len < buf.len; len += 7)
        assert_int_not_equal(loom_zoo_weights_parse(buf.data, len, "w", &b, &err), LOOM_OK);
    /* a tensor whose data would lie past the end of the file */
    const char *hdr = "{\"tensors\":[{\"name\":\"a\",\"dtype\":\"float32\",\"shape\":[4],"
                      "\"offset\":0}]}";
    char bad[256] = "LOOMWTS1";
    bad[8] = (char)strlen(hdr);
    memcpy(bad + 16, hdr, strlen(hdr));
    assert_int_equal(loom_zoo_weights_parse(bad, 16 + strlen(hdr) + 12, "bad.w", &b, &err),
                     LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "/tensors/0/offset"));
    loom_buf_free(&buf);
    unlink(path);
    loom_zoo_weights_free(&a);
    loom_zoo_sig_free(&s);
    loom_est_model_free(m);
}

/* A warm-started job's expected duration is its time limit over the
 * speed-up its label claims (clamped), so sjf puts it ahead of an otherwise
 * equal cold job submitted earlier. */
/* The labels of a warm start (issue 33): the parent, its similarity, the
 * layers mapped, the weights; no zoo.speedup (it was 1.3 + 6 (s - 0.5)
 * whatever the parent had learnt, and sjf ran warm jobs first by it), and
 * the script exports the weights' path after its #! line. */
static void test_warm_apply_labels(void **state)
{
    (void)state;
    json_t *res = json_pack("{s:I,s:f,s:I,s:I,s:s}", "parent", (json_int_t)3, "similarity", 0.9,
                            "layers_mapped", (json_int_t)2, "layers_child", (json_int_t)4,
                            "weights", "/tmp/w.lw");
    json_t *labels = json_object();
    loom_buf_t script = LOOM_BUF_INIT;
    loom_buf_append_str(&script, "#!/bin/sh\necho hi\n");
    loom_err_t err = {0};
    assert_int_equal(loom_zoo_warm_apply(res, labels, &script, &err), LOOM_OK);
    assert_string_equal(json_string_value(json_object_get(labels, "zoo.parent")), "3");
    assert_string_equal(json_string_value(json_object_get(labels, "zoo.similarity")), "0.9000");
    assert_string_equal(json_string_value(json_object_get(labels, "zoo.layers_mapped")), "2 of 4");
    assert_null(json_object_get(labels, "zoo.speedup"));
    assert_string_equal(script.data, "#!/bin/sh\nexport LOOM_WARM_START='/tmp/w.lw'\necho hi\n");
    loom_buf_free(&script);
    json_decref(labels);
    json_decref(res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identical),        cmocka_unit_test(test_inserted_layer),
        cmocka_unit_test(test_widened),          cmocka_unit_test(test_branch),
        cmocka_unit_test(test_sig_roundtrip),    cmocka_unit_test(test_widen_preserves),
        cmocka_unit_test(test_deepen_preserves), cmocka_unit_test(test_crop),
        cmocka_unit_test(test_weights_file),     cmocka_unit_test(test_warm_apply_labels),
        cmocka_unit_test(test_branch_order),     cmocka_unit_test(test_families_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
