/* Alignment of two layer signatures, after ModelKeeper's architecture
 * matching: layers in topological order, aligned by a weighted edit
 * distance computed by dynamic programming.
 *
 * A match of layers a and b scores 0 when their operators differ (it is
 * then cheaper to delete one and insert the other) and 0.25 + 0.75 x the
 * agreement of their shapes otherwise; agreement multiplies, per kept dim of
 * the weight and of the output, min/max of the two sizes, and a layer whose
 * fan-in differs (a branch merge against a chain layer) keeps 3/4 of it.
 * Insertions and deletions cost 1. With S the best sum of match scores over
 * order-preserving matchings,
 *
 *     similarity = 2 S / (n_a + n_b)  =  1 - distance / (n_a + n_b)
 *
 * where distance counts each unmatched layer 1 and each match 1 - score
 * twice: 1 for identical graphs, 0 for graphs without a common operator.
 * Branches: the topological order the exporter writes keeps a branch's
 * layers together, so a skip connection shows as an extra layer (deleted)
 * and a merge whose fan-in is scored; parallel branches align branch by
 * branch.
 *
 * The coarse filter: matches pair equal operators only and score at most
 * 1, so S <= sum over operators of min(count_a, count_b); with operators
 * merged into 64 buckets the sum only grows, so the bound stays valid. */
#include <math.h>
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

/* Two rows of the DP: S[i][j] = best score of a[0..i) against b[0..j). */
double loom_zoo_similarity(const loom_zoo_sig_t *a, const loom_zoo_sig_t *b)
{
    if (a->n == 0 || b->n == 0)
        return 0;
    float *prev = calloc(b->n + 1, sizeof *prev), *cur = calloc(b->n + 1, sizeof *cur);
    if (!prev || !cur) {
        free(prev);
        free(cur);
        return -1;
    }
    for (size_t i = 1; i <= a->n; i++) {
        cur[0] = 0;
        for (size_t j = 1; j <= b->n; j++) {
            float best = prev[j] > cur[j - 1] ? prev[j] : cur[j - 1];
            double m = loom_zoo_layer_score(&a->layers[i - 1], &b->layers[j - 1]);
            if (m > 0 && prev[j - 1] + (float)m > best)
                best = prev[j - 1] + (float)m;
            cur[j] = best;
        }
        float *t = prev;
        prev = cur;
        cur = t;
    }
    double s = 2.0 * prev[b->n] / (double)(a->n + b->n);
    free(prev);
    free(cur);
    return s > 1 ? 1 : s;
}

enum { FROM_DIAG = 0, FROM_UP = 1, FROM_LEFT = 2 };

int loom_zoo_align(const loom_zoo_sig_t *child, const loom_zoo_sig_t *parent,
                   loom_zoo_alignment_t *out, loom_err_t *err)
{
    memset(out, 0, sizeof *out);
    size_t n = child->n, m = parent->n;
    if (n == 0 || m == 0 || n > LOOM_ZOO_MAX_LAYERS || m > LOOM_ZOO_MAX_LAYERS)
        return loom_err_set(err, LOOM_EINVAL, "align: %zu and %zu layers; expected 1 to %d each", n,
                            m, LOOM_ZOO_MAX_LAYERS);
    size_t w = m + 1;
    float *S = calloc((n + 1) * w, sizeof *S);
    uint8_t *from = calloc((n + 1) * w, 1);
    if (!S || !from) {
        free(S);
        free(from);
        return loom_err_set(err, LOOM_ENOMEM, "align: out of memory (%zu x %zu layers)", n, m);
    }
    for (size_t i = 1; i <= n; i++)
        from[i * w] = FROM_UP;
    for (size_t j = 1; j <= m; j++)
        from[j] = FROM_LEFT;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            float best = S[(i - 1) * w + j];
            uint8_t f = FROM_UP;
            if (S[i * w + j - 1] > best) {
                best = S[i * w + j - 1];
                f = FROM_LEFT;
            }
            double sc = loom_zoo_layer_score(&child->layers[i - 1], &parent->layers[j - 1]);
            /* >=: on a tie, match (the graphs' ends align; an inserted
             * block is left in the middle, where deepening can bridge it) */
            if (sc > 0 && S[(i - 1) * w + j - 1] + (float)sc >= best) {
                best = S[(i - 1) * w + j - 1] + (float)sc;
                f = FROM_DIAG;
            }
            S[i * w + j] = best;
            from[i * w + j] = f;
        }
    }
    size_t cap = n < m ? n : m, k = cap;
    out->pairs = calloc(cap, sizeof *out->pairs);
    if (!out->pairs) {
        free(S);
        free(from);
        return loom_err_set(err, LOOM_ENOMEM, "align: out of memory");
    }
    size_t i = n, j = m;
    while (i > 0 && j > 0) {
        uint8_t f = from[i * w + j];
        if (f == FROM_DIAG) {
            k--;
            out->pairs[k].child = (int32_t)(i - 1);
            out->pairs[k].parent = (int32_t)(j - 1);
            out->pairs[k].score =
                loom_zoo_layer_score(&child->layers[i - 1], &parent->layers[j - 1]);
            i--;
            j--;
        } else if (f == FROM_UP) {
            i--;
        } else {
            j--;
        }
    }
    out->npairs = cap - k;
    memmove(out->pairs, out->pairs + k, out->npairs * sizeof *out->pairs);
    double s = 2.0 * S[n * w + m] / (double)(n + m);
    out->similarity = s > 1 ? 1 : s;
    free(S);
    free(from);
    return LOOM_OK;
}

void loom_zoo_alignment_free(loom_zoo_alignment_t *a)
{
    if (!a)
        return;
    free(a->pairs);
    memset(a, 0, sizeof *a);
}
