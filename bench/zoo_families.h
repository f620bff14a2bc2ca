/* bench/zoo_families.h: synthetic ONNX graphs of realistic architecture
 * families for the zoo's matching benchmark, built from templates the way
 * torchvision and common transformer code lay them out (PyTorch's export
 * order: a block's main path, then its shortcut, then the merge):
 *
 *   resnet      basic blocks (2 x Conv3x3-BN-Relu) with identity or 1x1
 *               projection shortcuts, 4 stages of 1-4 blocks
 *   bottleneck  1x1-3x3-1x1 blocks (expansion 4), 4 stages of 1-8 blocks
 *   vgg         5 stages of 1-4 Conv3x3-BN-Relu and a MaxPool, 2-3 FC
 *   mobilenet   inverted residuals (1x1 expand, 3x3 depthwise, 1x1
 *               project), 5-7 stages
 *   densenet    dense blocks (BN-Relu-Conv1x1-BN-Relu-Conv3x3, Concat with
 *               the block's input), transitions between them
 *   inception   blocks of 3-4 parallel branches (1x1; 1x1-3x3; 1x1-5x5;
 *               pool-1x1) joined by a Concat
 *   transformer pre-norm encoder blocks (LayerNorm, Q/K/V/O MatMuls,
 *               Softmax attention, 2-layer MLP, residual Adds), depth 2-24
 *
 * Widths, depths and block counts are drawn per model, so a repository of
 * 10,000 holds few duplicates. Weights are declared without values (the
 * signature needs only their shapes). */
#ifndef LOOM_BENCH_ZOO_FAMILIES_H
#define LOOM_BENCH_ZOO_FAMILIES_H

#include <stdio.h>
#include <string.h>

#include "../tests/unit/est_pb.h"
#include "loom/core.h"

typedef struct fam_g {
    pbw_t g;
    int k; /* names made so far */
} fam_g_t;

enum {
    FAM_RESNET,
    FAM_BOTTLENECK,
    FAM_VGG,
    FAM_MOBILENET,
    FAM_DENSENET,
    FAM_INCEPTION,
    FAM_TRANSFORMER,
    FAM_N
};

static const char *const fam_names[FAM_N] = {"resnet",   "bottleneck", "vgg",        "mobilenet",
                                             "densenet", "inception",  "transformer"};

typedef char fam_t[24];

static inline void fam_new(fam_g_t *f, fam_t out, const char *what)
{
    snprintf(out, sizeof(fam_t), "%s%d", what, f->k++);
}

static inline void fam_conv(fam_g_t *f, const char *in, fam_t out, int64_t cin, int64_t cout,
                            int64_t k, int64_t stride, int64_t groups)
{
    fam_t nm;
    char w[40], ins[96];
    fam_new(f, nm, "conv");
    snprintf(w, sizeof w, "%s.weight", nm);
    snprintf(out, sizeof(fam_t), "%s_o", nm);
    snprintf(ins, sizeof ins, "%s,%s", in, w);
    pbw_t n;
    onnx_node_begin(&n, "Conv", nm, ins, out);
    int64_t ks[2] = {k, k}, st[2] = {stride, stride}, pd[4] = {k / 2, k / 2, k / 2, k / 2};
    attr_ints(&n, "kernel_shape", 2, ks);
    attr_ints(&n, "strides", 2, st);
    attr_ints(&n, "pads", 4, pd);
    if (groups > 1)
        attr_int(&n, "group", groups);
    onnx_node_end(&f->g, &n);
    int64_t wd[4] = {cout, cin / groups, k, k};
    onnx_init(&f->g, w, 1, 4, wd, NULL, 0);
}

static inline void fam_bn(fam_g_t *f, const char *in, fam_t out, int64_t c)
{
    fam_t nm;
    char ins[200], p[4][40];
    static const char *const what[4] = {"weight", "bias", "running_mean", "running_var"};
    fam_new(f, nm, "bn");
    for (int i = 0; i < 4; i++) {
        snprintf(p[i], sizeof p[i], "%s.%s", nm, what[i]);
        int64_t d[1] = {c};
        onnx_init(&f->g, p[i], 1, 1, d, NULL, 0);
    }
    snprintf(out, sizeof(fam_t), "%s_o", nm);
    snprintf(ins, sizeof ins, "%s,%s,%s,%s,%s", in, p[0], p[1], p[2], p[3]);
    onnx_node(&f->g, "BatchNormalization", nm, ins, out);
}

static inline void fam_op1(fam_g_t *f, const char *op, const char *in, fam_t out)
{
    fam_t nm;
    fam_new(f, nm, op);
    snprintf(out, sizeof(fam_t), "%s_o", nm);
    onnx_node(&f->g, op, nm, in, out);
}

static inline void fam_op2(fam_g_t *f, const char *op, const char *a, const char *b, fam_t out)
{
    fam_t nm;
    char ins[64];
    fam_new(f, nm, op);
    snprintf(out, sizeof(fam_t), "%s_o", nm);
    snprintf(ins, sizeof ins, "%s,%s", a, b);
    onnx_node(&f->g, op, nm, ins, out);
}

static inline void fam_pool(fam_g_t *f, const char *op, const char *in, fam_t out, int64_t k,
                            int64_t stride)
{
    fam_t nm;
    fam_new(f, nm, op);
    snprintf(out, sizeof(fam_t), "%s_o", nm);
    pbw_t n;
    onnx_node_begin(&n, op, nm, in, out);
    int64_t ks[2] = {k, k}, st[2] = {stride, stride}, pd[4] = {k / 2, k / 2, k / 2, k / 2};
    attr_ints(&n, "kernel_shape", 2, ks);
    attr_ints(&n, "strides", 2, st);
    attr_ints(&n, "pads", 4, pd);
    onnx_node_end(&f->g, &n);
}

/* x (rank 2 or 3) times a [cin, cout] weight: a Linear as exported. */
static inline void fam_linear(fam_g_t *f, const char *in, fam_t out, int64_t cin, int64_t cout)
{
    fam_t nm, mm;
    char w[40], b[40];
    fam_new(f, nm, "fc");
    snprintf(w, sizeof w, "%s.weight", nm);
    snprintf(b, sizeof b, "%s.bias", nm);
    int64_t wd[2] = {cin, cout}, bd[1] = {cout};
    onnx_init(&f->g, w, 1, 2, wd, NULL, 0);
    onnx_init(&f->g, b, 1, 1, bd, NULL, 0);
    fam_op2(f, "MatMul", in, w, mm);
    fam_op2(f, "Add", mm, b, out);
}

static inline void fam_cbr(fam_g_t *f, const char *in, fam_t out, int64_t cin, int64_t cout,
                           int64_t k, int64_t stride, int64_t groups, bool relu)
{
    fam_t a, b;
    fam_conv(f, in, a, cin, cout, k, stride, groups);
    fam_bn(f, a, relu ? b : out, cout);
    if (relu)
        fam_op1(f, "Relu", b, out);
}

static inline int64_t fam_pick(loom_rng_t *r, const int64_t *v, int n)
{
    return v[loom_rng_below(r, (uint64_t)n)];
}

static inline void fam_head(fam_g_t *f, const char *in, fam_t out, int64_t c, int64_t classes)
{
    fam_t a, b;
    fam_op1(f, "GlobalAveragePool", in, a);
    fam_op1(f, "Flatten", a, b);
    fam_linear(f, b, out, c, classes);
}

static inline void fam_resnet(fam_g_t *f, loom_rng_t *r, fam_t x, bool bottleneck)
{
    static const int64_t widths[] = {16, 24, 32, 48, 64, 96};
    int64_t w = fam_pick(r, widths, 6), exp = bottleneck ? 4 : 1, c = w;
    fam_t cur, t, u, v, sc, sum;
    fam_cbr(f, x, t, 3, w, 7, 2, 1, true);
    fam_pool(f, "MaxPool", t, cur, 3, 2);
    for (int s = 0; s < 4; s++) {
        int blocks = 1 + (int)loom_rng_below(r, bottleneck ? 8 : 4);
        int64_t mid = w << s, cout = mid * exp;
        for (int b = 0; b < blocks; b++) {
            int64_t stride = b == 0 && s > 0 ? 2 : 1;
            if (bottleneck) {
                fam_cbr(f, cur, t, c, mid, 1, 1, 1, true);
                fam_cbr(f, t, u, mid, mid, 3, stride, 1, true);
                fam_cbr(f, u, v, mid, cout, 1, 1, 1, false);
            } else {
                fam_cbr(f, cur, t, c, mid, 3, stride, 1, true);
                fam_cbr(f, t, v, mid, cout, 3, 1, 1, false);
            }
            if (stride != 1 || c != cout)
                fam_cbr(f, cur, sc, c, cout, 1, stride, 1, false);
            else
                snprintf(sc, sizeof sc, "%s", cur);
            fam_op2(f, "Add", v, sc, sum);
            fam_op1(f, "Relu", sum, cur);
            c = cout;
        }
    }
    fam_head(f, cur, t, c, 100);
}

static inline void fam_vgg(fam_g_t *f, loom_rng_t *r, fam_t x)
{
    static const int64_t widths[] = {16, 32, 48, 64};
    int64_t w = fam_pick(r, widths, 4), c = 3;
    fam_t cur, t;
    snprintf(cur, sizeof cur, "%s", x);
    for (int s = 0; s < 5; s++) {
        int n = 1 + (int)loom_rng_below(r, 4);
        int64_t cout = w << (s < 3 ? s : 3);
        for (int i = 0; i < n; i++) {
            fam_cbr(f, cur, t, c, cout, 3, 1, 1, true);
            snprintf(cur, sizeof cur, "%s", t);
            c = cout;
        }
        fam_pool(f, "MaxPool", cur, t, 2, 2);
        snprintf(cur, sizeof cur, "%s", t);
    }
    fam_op1(f, "Flatten", cur, t);
    int64_t hidden = 128 << loom_rng_below(r, 4), in = c * 4;
    int fcs = 1 + (int)loom_rng_below(r, 2);
    snprintf(cur, sizeof cur, "%s", t);
    for (int i = 0; i < fcs; i++) {
        fam_t a;
        fam_linear(f, cur, a, in, hidden);
        fam_op1(f, "Relu", a, cur);
        in = hidden;
    }
    fam_linear(f, cur, t, in, 100);
}

static inline void fam_mobilenet(fam_g_t *f, loom_rng_t *r, fam_t x)
{
    static const int64_t widths[] = {8, 16, 24, 32};
    int64_t w = fam_pick(r, widths, 4), c = w;
    fam_t cur, t, u, v, sum;
    fam_cbr(f, x, cur, 3, w, 3, 2, 1, true);
    int stages = 5 + (int)loom_rng_below(r, 3);
    for (int s = 0; s < stages; s++) {
        int n = 1 + (int)loom_rng_below(r, 4);
        int64_t cout = w * (1 + s), expand = 2 + (int64_t)loom_rng_below(r, 5);
        for (int b = 0; b < n; b++) {
            int64_t stride = b == 0 && s % 2 == 1 ? 2 : 1, hid = c * expand;
            fam_cbr(f, cur, t, c, hid, 1, 1, 1, true);
            fam_cbr(f, t, u, hid, hid, 3, stride, hid, true);
            fam_cbr(f, u, v, hid, cout, 1, 1, 1, false);
            if (stride == 1 && c == cout) {
                fam_op2(f, "Add", cur, v, sum);
                snprintf(cur, sizeof cur, "%s", sum);
            } else {
                snprintf(cur, sizeof cur, "%s", v);
            }
            c = cout;
        }
    }
    fam_cbr(f, cur, t, c, c * 4, 1, 1, 1, true);
    fam_head(f, t, u, c * 4, 100);
}

static inline void fam_densenet(fam_g_t *f, loom_rng_t *r, fam_t x)
{
    static const int64_t growth[] = {8, 12, 16, 24, 32};
    int64_t g = fam_pick(r, growth, 5), c = 2 * g;
    fam_t cur, t, u, v, cat;
    fam_cbr(f, x, t, 3, c, 7, 2, 1, true);
    fam_pool(f, "MaxPool", t, cur, 3, 2);
    int blocks = 2 + (int)loom_rng_below(r, 3);
    for (int b = 0; b < blocks; b++) {
        int layers = 2 + (int)loom_rng_below(r, 10);
        for (int l = 0; l < layers; l++) {
            fam_bn(f, cur, t, c);
            fam_op1(f, "Relu", t, u);
            fam_conv(f, u, v, c, 4 * g, 1, 1, 1);
            fam_bn(f, v, t, 4 * g);
            fam_op1(f, "Relu", t, u);
            fam_conv(f, u, v, 4 * g, g, 3, 1, 1);
            fam_op2(f, "Concat", cur, v, cat);
            snprintf(cur, sizeof cur, "%s", cat);
            c += g;
        }
        if (b + 1 < blocks) {
            fam_bn(f, cur, t, c);
            fam_op1(f, "Relu", t, u);
            fam_conv(f, u, v, c, c / 2, 1, 1, 1);
            fam_pool(f, "AveragePool", v, cur, 2, 2);
            c /= 2;
        }
    }
    fam_bn(f, cur, t, c);
    fam_op1(f, "Relu", t, u);
    fam_head(f, u, v, c, 100);
}

/* Concat of n inputs (names in ins, comma-joined). */
static inline void fam_concat(fam_g_t *f, const char *ins, fam_t out)
{
    fam_t nm;
    fam_new(f, nm, "Concat");
    snprintf(out, sizeof(fam_t), "%s_o", nm);
    pbw_t n;
    onnx_node_begin(&n, "Concat", nm, ins, out);
    attr_int(&n, "axis", 1);
    onnx_node_end(&f->g, &n);
}

static inline void fam_inception(fam_g_t *f, loom_rng_t *r, fam_t x)
{
    static const int64_t widths[] = {16, 24, 32, 48};
    int64_t w = fam_pick(r, widths, 4), c = 2 * w;
    fam_t cur, t, u, b[4];
    fam_cbr(f, x, t, 3, c, 7, 2, 1, true);
    fam_pool(f, "MaxPool", t, cur, 3, 2);
    int blocks = 2 + (int)loom_rng_below(r, 8);
    for (int k = 0; k < blocks; k++) {
        int64_t b1 = w * (1 + (int64_t)loom_rng_below(r, 3)), b2 = w * 2, b3 = w / 2;
        bool pool = loom_rng_below(r, 2);
        fam_cbr(f, cur, b[0], c, b1, 1, 1, 1, true);
        fam_cbr(f, cur, t, c, b2 / 2, 1, 1, 1, true);
        fam_cbr(f, t, b[1], b2 / 2, b2, 3, 1, 1, true);
        fam_cbr(f, cur, t, c, b3 / 2, 1, 1, 1, true);
        fam_cbr(f, t, b[2], b3 / 2, b3, 5, 1, 1, true);
        char ins[128];
        int64_t cout = b1 + b2 + b3;
        if (pool) {
            fam_pool(f, "MaxPool", cur, t, 3, 1);
            fam_cbr(f, t, b[3], c, w, 1, 1, 1, true);
            cout += w;
            snprintf(ins, sizeof ins, "%s,%s,%s,%s", b[0], b[1], b[2], b[3]);
        } else {
            snprintf(ins, sizeof ins, "%s,%s,%s", b[0], b[1], b[2]);
        }
        fam_concat(f, ins, u);
        c = cout;
        if (k % 3 == 2) {
            fam_pool(f, "MaxPool", u, cur, 3, 2);
        } else {
            snprintf(cur, sizeof cur, "%s", u);
        }
    }
    fam_head(f, cur, t, c, 100);
}

static inline void fam_layernorm(fam_g_t *f, const char *in, fam_t out, int64_t d)
{
    fam_t nm;
    char s[40], b[40], ins[128];
    fam_new(f, nm, "ln");
    snprintf(s, sizeof s, "%s.weight", nm);
    snprintf(b, sizeof b, "%s.bias", nm);
    int64_t dd[1] = {d};
    onnx_init(&f->g, s, 1, 1, dd, NULL, 0);
    onnx_init(&f->g, b, 1, 1, dd, NULL, 0);
    snprintf(out, sizeof(fam_t), "%s_o", nm);
    snprintf(ins, sizeof ins, "%s,%s,%s", in, s, b);
    pbw_t n;
    onnx_node_begin(&n, "LayerNormalization", nm, ins, out);
    attr_int(&n, "axis", -1);
    onnx_node_end(&f->g, &n);
}

static inline void fam_transformer(fam_g_t *f, loom_rng_t *r, fam_t x, int64_t *tokens)
{
    static const int64_t widths[] = {64, 128, 192, 256, 384, 512, 768};
    int64_t d = fam_pick(r, widths, 7), ff = d * (2 + (int64_t)loom_rng_below(r, 3));
    int depth = 2 + (int)loom_rng_below(r, 23);
    fam_t cur, h, q, k, v, kt, s, p, o, a, sum, m;
    *tokens = 32 << loom_rng_below(r, 3);
    fam_linear(f, x, cur, 64, d); /* token embedding of 64 features */
    for (int l = 0; l < depth; l++) {
        fam_layernorm(f, cur, h, d);
        fam_linear(f, h, q, d, d);
        fam_linear(f, h, k, d, d);
        fam_linear(f, h, v, d, d);
        fam_t nm;
        fam_new(f, nm, "Transpose");
        snprintf(kt, sizeof kt, "%s_o", nm);
        pbw_t n;
        onnx_node_begin(&n, "Transpose", nm, k, kt);
        int64_t perm[3] = {0, 2, 1};
        attr_ints(&n, "perm", 3, perm);
        onnx_node_end(&f->g, &n);
        fam_op2(f, "MatMul", q, kt, s);
        fam_op1(f, "Softmax", s, p);
        fam_op2(f, "MatMul", p, v, o);
        fam_linear(f, o, a, d, d);
        fam_op2(f, "Add", cur, a, sum);
        fam_layernorm(f, sum, h, d);
        fam_linear(f, h, m, d, ff);
        fam_op1(f, "Relu", m, a);
        fam_linear(f, a, m, ff, d);
        fam_op2(f, "Add", sum, m, cur);
    }
    fam_layernorm(f, cur, h, d);
    fam_linear(f, h, cur, d, 100);
}

/* An ONNX model of family fam (FAM_N: drawn too) with parameters drawn
 * from r. *family gets the family drawn. */
static inline pbw_t fam_model(loom_rng_t *r, int fam, int *family)
{
    if (fam < 0 || fam >= FAM_N)
        fam = (int)loom_rng_below(r, FAM_N);
    if (family)
        *family = fam;
    fam_g_t f = {0};
    fam_t x = "x";
    int64_t tokens = 0;
    switch (fam) {
    case FAM_RESNET: fam_resnet(&f, r, x, false); break;
    case FAM_BOTTLENECK: fam_resnet(&f, r, x, true); break;
    case FAM_VGG: fam_vgg(&f, r, x); break;
    case FAM_MOBILENET: fam_mobilenet(&f, r, x); break;
    case FAM_DENSENET: fam_densenet(&f, r, x); break;
    case FAM_INCEPTION: fam_inception(&f, r, x); break;
    default: fam_transformer(&f, r, x, &tokens); break;
    }
    if (tokens) {
        int64_t xd[3] = {-1, tokens, 64};
        onnx_value_info(&f.g, 11, "x", 1, 3, xd);
    } else {
        int64_t xd[4] = {-1, 3, 64, 64};
        onnx_value_info(&f.g, 11, "x", 1, 4, xd);
    }
    return onnx_model(&f.g);
}
#endif
