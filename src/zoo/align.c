/* Alignment of two layer signatures, after ModelKeeper's architecture
 * matching: a weighted edit distance computed by dynamic programming along
 * the graphs' edges (each layer's predecessors), not along one topological
 * order.
 *
 * A match of layers a and b scores 0 when their operators differ (it is
 * then cheaper to delete one and insert the other) and 0.25 + 0.75 x the
 * agreement of their shapes otherwise; agreement multiplies, per kept dim of
 * the weight and of the output, min/max of the two sizes, and a layer whose
 * fan-in differs (a branch merge against a chain layer) keeps 3/4 of it.
 * With S the sum of the matched layers' scores (each layer matched at most
 * once),
 *
 *     similarity = 2 S / (n_a + n_b)  =  1 - distance / (n_a + n_b)
 *
 * where distance counts each unmatched layer 1 and each match 1 - score
 * twice: 1 for identical graphs, 0 for graphs without a common operator.
 *
 * The matching, along the DAGs: H[i][j] is the best score of a path of the
 * child ending at layer i aligned with a path of the parent ending at j;
 * a step comes from a predecessor pair: match i with j (from H[p][q], p a
 * predecessor of i, q of j), leave i unmatched (from H[p][j]) or leave j
 * unmatched (from H[i][q]). The best path pair is the first pass. A branch
 * off that path (a projection shortcut, an Inception branch, attention's
 * key and value) is matched by the next passes: the layers matched so far
 * are fixed, a later path may only cross them in step (child layer and its
 * partner together), so a branch is aligned with the branch between the
 * same split and merge of the other graph. Passes continue while they add
 * matches (at most MAX_PASSES). Two exports of one architecture that list
 * its branches in different orders align layer for layer (similarity 1);
 * order-preserving alignment of the topological orders cannot.
 *
 * The coarse filter: matches pair equal operators only, each layer once,
 * and score at most 1, so S <= sum over operators of min(count_a, count_b);
 * with operators merged into 64 buckets the sum only grows, so the bound
 * stays valid (tests/unit/test_zoo.c checks it on every pair it aligns). */
#include <stdlib.h>
#include <string.h>

#include "loom/zoo.h"

static double dims_agree(int ra, const int32_t *a, int rb, const int32_t *b)
{
    if (ra != rb)
        return ra == 0 || rb == 0 ? 0.5 : 0.25;
    double s = 1;
    for (int i = 0; i < ra; i++) {
        if (a[i] == b[i])
            continue;
        if (a[i] <= 0 || b[i] <= 0) {
            s *= 0.5; /* one unknown */
            continue;
        }
        double lo = a[i] < b[i] ? a[i] : b[i], hi = a[i] < b[i] ? b[i] : a[i];
        s *= lo / hi;
    }
    return s;
}

double loom_zoo_layer_score(const loom_zoo_layer_t *a, const loom_zoo_layer_t *b)
{
    if (a->op != b->op)
        return 0;
    double w = dims_agree(a->wrank, a->wdims, b->wrank, b->wdims);
    double o = dims_agree(a->orank, a->odims, b->orank, b->odims);
    double s = a->wrank || b->wrank ? 0.5 * w + 0.5 * o : o;
    if (a->nin != b->nin)
        s *= 0.75;
    return 0.25 + 0.75 * s;
}

double loom_zoo_bound(const loom_zoo_sig_t *a, const loom_zoo_sig_t *b)
{
    if (a->n + b->n == 0)
        return 0;
    unsigned common = 0;
    for (int i = 0; i < LOOM_ZOO_HIST; i++)
        common += a->hist[i] < b->hist[i] ? a->hist[i] : b->hist[i];
    double s = 2.0 * common / (double)(a->n + b->n);
    return s > 1 ? 1 : s;
}

#define MAX_PASSES 32
#define NEG        (-1e300)
/* What a pass charges for each layer its path leaves unmatched: nothing
 * next to a match's score (at most 4096 of them cost 4e-4), but among
 * paths with equal matches it prefers the one through the fewest layers,
 * e.g. a transformer deepened by a block: the path bridges the new block
 * through its residual edges (two Adds unmatched), where a path through
 * the block's layers could match half of the old block and half of the
 * new one at the same score, which no identity initialisation bridges
 * (integration.zoo_torch). The similarity counts the matches' scores only. */
#define SKIP_COST 1e-7

enum { FROM_NONE = 0, FROM_MATCH = 1, FROM_SKIP_C = 2, FROM_SKIP_P = 3, FROM_ANCHOR = 4 };

typedef struct dag_dp {
    size_t n, m, w;
    double *H;        /* (n+1) x (m+1) */
    float *sc;        /* match scores, < 0 not computed */
    uint32_t *from;   /* kind << 28 | p << 14 | q */
    int32_t *pa, *pb; /* partner DP index, -1 none; [0] = 0 (the inputs) */
    /* predecessors as DP indices (0: the graph's input): of DP index i,
     * ap[as[i] .. as[i+1]) (none for 0) */
    uint32_t *as, *bs;
    uint16_t *ap, *bp;
} dag_dp_t;

/* DP-index predecessor lists of s into *st, *pr. */
static int dp_preds(const loom_zoo_sig_t *s, uint32_t **st, uint16_t **pr)
{
    size_t n = s->n, total = s->pstart ? s->pstart[n] : 0;
    *st = malloc((n + 2) * sizeof **st);
    *pr = malloc((total + n + 1) * sizeof **pr);
    if (!*st || !*pr)
        return LOOM_ENOMEM;
    size_t k = 0;
    (*st)[0] = 0;
    for (size_t i = 1; i <= n; i++) {
        (*st)[i] = (uint32_t)k;
        if (!s->pstart) {
            (*pr)[k++] = (uint16_t)(i - 1);
            continue;
        }
        size_t a = s->pstart[i - 1], b = s->pstart[i];
        if (a == b)
            (*pr)[k++] = 0;
        for (size_t x = a; x < b; x++)
            (*pr)[k++] = (uint16_t)(s->pred[x] + 1);
    }
    (*st)[n + 1] = (uint32_t)k;
    return LOOM_OK;
}

static float score_at(dag_dp_t *d, const loom_zoo_sig_t *a, const loom_zoo_sig_t *b, size_t i,
                      size_t j)
{
    float *s = &d->sc[i * d->w + j];
    if (*s < 0)
        *s = (float)loom_zoo_layer_score(&a->layers[i - 1], &b->layers[j - 1]);
    return *s;
}

#define PACK(kind, p, q) ((uint32_t)(kind) << 28 | (uint32_t)(p) << 14 | (uint32_t)(q))

/* One pass: fills H and from; returns the best cell's value and index. */
static double dag_pass(dag_dp_t *d, const loom_zoo_sig_t *a, const loom_zoo_sig_t *b, size_t *bi,
                       size_t *bj)
{
    size_t w = d->w;
    double best = 0, *H = d->H;
    *bi = *bj = 0;
    for (size_t j = 0; j <= d->m; j++) { /* row 0: the child's input */
        double h = j ? NEG : 0;
        uint32_t f = FROM_NONE;
        if (j && d->pb[j] < 0)
            for (uint32_t y = d->bs[j]; y < d->bs[j + 1]; y++)
                if (H[d->bp[y]] - SKIP_COST > h) {
                    h = H[d->bp[y]] - SKIP_COST;
                    f = PACK(FROM_SKIP_P, 0, d->bp[y]);
                }
        H[j] = h;
        d->from[j] = f;
    }
    for (size_t i = 1; i <= d->n; i++) {
        const uint16_t *pa = d->ap + d->as[i];
        size_t na = d->as[i + 1] - d->as[i];
        bool used_i = d->pa[i] >= 0;
        uint16_t op = a->layers[i - 1].op;
        double *Hi = H + i * w;
        uint32_t *Fi = d->from + i * w;
        for (size_t j = 0; j <= d->m; j++) {
            const uint16_t *pb = d->bp + d->bs[j];
            size_t nb = d->bs[j + 1] - d->bs[j];
            bool used_j = d->pb[j] >= 0;
            double h = NEG;
            uint32_t f = FROM_NONE;
            if (used_i && used_j) {
                if (d->pa[i] == (int32_t)j) /* an anchor: crossed in step */
                    for (size_t x = 0; x < na; x++)
                        for (size_t y = 0; y < nb; y++) {
                            double v = H[pa[x] * w + pb[y]];
                            if (v > h) {
                                h = v;
                                f = PACK(FROM_ANCHOR, pa[x], pb[y]);
                            }
                        }
            } else {
                if (!used_i)
                    for (size_t x = 0; x < na; x++) {
                        double v = H[pa[x] * w + j] - SKIP_COST;
                        if (v > h) {
                            h = v;
                            f = PACK(FROM_SKIP_C, pa[x], j);
                        }
                    }
                if (!used_j)
                    for (size_t y = 0; y < nb; y++) {
                        double v = Hi[pb[y]] - SKIP_COST;
                        if (v > h) {
                            h = v;
                            f = PACK(FROM_SKIP_P, i, pb[y]);
                        }
                    }
                if (!used_i && !used_j && j && op == b->layers[j - 1].op) {
                    double m = score_at(d, a, b, i, j);
                    for (size_t x = 0; m > 0 && x < na; x++)
                        for (size_t y = 0; y < nb; y++) {
                            double v = H[pa[x] * w + pb[y]];
                            /* >=: on a tie, match */
                            if (v > NEG && v + m >= h) {
                                h = v + m;
                                f = PACK(FROM_MATCH, pa[x], pb[y]);
                            }
                        }
                }
            }
            Hi[j] = h;
            Fi[j] = f;
            if (h > best) {
                best = h;
                *bi = i;
                *bj = j;
            }
        }
    }
    return best;
}

/* What another pass could add at most: unmatched layers of equal operator
 * buckets, each pair scoring at most 1. */
static unsigned unmatched_common(const dag_dp_t *d, const loom_zoo_sig_t *a,
                                 const loom_zoo_sig_t *b)
{
    uint16_t ha[LOOM_ZOO_HIST] = {0}, hb[LOOM_ZOO_HIST] = {0};
    for (size_t i = 1; i <= d->n; i++)
        ha[a->layers[i - 1].op % LOOM_ZOO_HIST] += d->pa[i] < 0;
    for (size_t j = 1; j <= d->m; j++)
        hb[b->layers[j - 1].op % LOOM_ZOO_HIST] += d->pb[j] < 0;
    unsigned c = 0;
    for (int k = 0; k < LOOM_ZOO_HIST; k++)
        c += ha[k] < hb[k] ? ha[k] : hb[k];
    return c;
}

/* Follows the best pass back from (i, j), fixing its matches; appends them
 * to pairs (may be NULL) and returns their score. */
static double dag_trace(dag_dp_t *d, size_t i, size_t j, loom_zoo_pair_t *pairs, size_t *np)
{
    double sum = 0;
    while (i || j) {
        uint32_t f = d->from[i * d->w + j];
        uint32_t kind = f >> 28;
        size_t p = f >> 14 & 0x3fff, q = f & 0x3fff;
        if (kind == FROM_NONE)
            break;
        if (kind == FROM_MATCH) {
            float s = d->sc[i * d->w + j];
            d->pa[i] = (int32_t)j;
            d->pb[j] = (int32_t)i;
            sum += s;
            if (pairs)
                pairs[*np] = (loom_zoo_pair_t){(int32_t)(i - 1), (int32_t)(j - 1), s};
            ++*np;
        }
        i = p;
        j = q;
    }
    return sum;
}

static void dag_free(dag_dp_t *d)
{
    free(d->H);
    free(d->sc);
    free(d->from);
    free(d->pa);
    free(d->pb);
    free(d->as);
    free(d->bs);
    free(d->ap);
    free(d->bp);
}

static int by_child(const void *x, const void *y)
{
    const loom_zoo_pair_t *a = x, *b = y;
    return (a->child > b->child) - (a->child < b->child);
}

/* The whole alignment: *sum of the matched scores; pairs (may be NULL, else
 * room for min(n, m)) and *np the matches. */
static int dag_align(const loom_zoo_sig_t *a, const loom_zoo_sig_t *b, loom_zoo_pair_t *pairs,
                     size_t *np, double *sum)
{
    dag_dp_t d = {.n = a->n, .m = b->n, .w = b->n + 1};
    size_t cells = (a->n + 1) * d.w;
    d.H = malloc(cells * sizeof *d.H);
    d.sc = malloc(cells * sizeof *d.sc);
    d.from = malloc(cells * sizeof *d.from);
    d.pa = malloc((a->n + 1) * sizeof *d.pa);
    d.pb = malloc((b->n + 1) * sizeof *d.pb);
    *np = 0;
    *sum = 0;
    int rc = !d.H || !d.sc || !d.from || !d.pa || !d.pb ? LOOM_ENOMEM : LOOM_OK;
    if (!rc)
        rc = dp_preds(a, &d.as, &d.ap);
    if (!rc)
        rc = dp_preds(b, &d.bs, &d.bp);
    if (rc) {
        dag_free(&d);
        return rc;
    }
    for (size_t k = 0; k < cells; k++)
        d.sc[k] = -1;
    memset(d.pa, 0xff, (a->n + 1) * sizeof *d.pa);
    memset(d.pb, 0xff, (b->n + 1) * sizeof *d.pb);
    d.pa[0] = d.pb[0] = 0;
    for (int pass = 0; pass < MAX_PASSES && (pass == 0 || unmatched_common(&d, a, b)); pass++) {
        size_t bi, bj;
        double best = dag_pass(&d, a, b, &bi, &bj);
        if (best <= 1e-3)
            break;
        *sum += dag_trace(&d, bi, bj, pairs, np);
    }
    dag_free(&d);
    if (pairs)
        qsort(pairs, *np, sizeof *pairs, by_child);
    return LOOM_OK;
}

double loom_zoo_similarity(const loom_zoo_sig_t *a, const loom_zoo_sig_t *b)
{
    if (a->n == 0 || b->n == 0)
        return 0;
    if (a->n > LOOM_ZOO_MAX_LAYERS || b->n > LOOM_ZOO_MAX_LAYERS)
        return -1;
    size_t np;
    double sum;
    if (dag_align(a, b, NULL, &np, &sum))
        return -1;
    double s = 2.0 * sum / (double)(a->n + b->n);
    return s > 1 ? 1 : s;
}

int loom_zoo_align(const loom_zoo_sig_t *child, const loom_zoo_sig_t *parent,
                   loom_zoo_alignment_t *out, loom_err_t *err)
{
    memset(out, 0, sizeof *out);
    size_t n = child->n, m = parent->n;
    if (n == 0 || m == 0 || n > LOOM_ZOO_MAX_LAYERS || m > LOOM_ZOO_MAX_LAYERS)
        return loom_err_set(err, LOOM_EINVAL, "align: %zu and %zu layers; expected 1 to %d each", n,
                            m, LOOM_ZOO_MAX_LAYERS);
    out->pairs = calloc(n < m ? n : m, sizeof *out->pairs);
    double sum;
    if (!out->pairs || dag_align(child, parent, out->pairs, &out->npairs, &sum)) {
        loom_zoo_alignment_free(out);
        return loom_err_set(err, LOOM_ENOMEM, "align: out of memory (%zu x %zu layers)", n, m);
    }
    double s = 2.0 * sum / (double)(n + m);
    out->similarity = s > 1 ? 1 : s;
    return LOOM_OK;
}

void loom_zoo_alignment_free(loom_zoo_alignment_t *a)
{
    if (!a)
        return;
    free(a->pairs);
    memset(a, 0, sizeof *a);
}
