/* Shape keys: a bound of the alignment score finer than the operator
 * histogram, from each layer's operator, fan-in, ranks and the weight's
 * and output's element counts on a log scale (include/loom/zoo.h,
 * loom_zoo_keys_bound, says why it is never below the exact score). The
 * repository keeps each entry's keys (12 bytes a key), so its coarse pass
 * reads no signature. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/zoo.h"

static int16_t count_bucket(int rank, const int32_t *dims)
{
    double l = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] <= 0 || dims[i] == INT32_MAX)
            return INT16_MIN;
        l += log2((double)dims[i]);
    }
    double b = floor(LOOM_ZOO_KEY_Q * l);
    return b > INT16_MAX ? INT16_MAX : (int16_t)b;
}

static int key_cmp(const void *x, const void *y)
{
    const loom_zoo_key_t *a = x, *b = y;
    if (a->op != b->op)
        return a->op < b->op ? -1 : 1;
    if (a->nin != b->nin)
        return a->nin < b->nin ? -1 : 1;
    if (a->wrank != b->wrank)
        return a->wrank < b->wrank ? -1 : 1;
    if (a->orank != b->orank)
        return a->orank < b->orank ? -1 : 1;
    if (a->wb != b->wb)
        return a->wb < b->wb ? -1 : 1;
    return (a->ob > b->ob) - (a->ob < b->ob);
}

int loom_zoo_keys_of(const loom_zoo_sig_t *s, loom_zoo_keys_t *out)
{
    memset(out, 0, sizeof *out);
    out->k = calloc(s->n ? s->n : 1, sizeof *out->k);
    if (!out->k)
        return LOOM_ENOMEM;
    for (size_t i = 0; i < s->n; i++) {
        const loom_zoo_layer_t *l = &s->layers[i];
        out->k[i] = (loom_zoo_key_t){.op = l->op,
                                     .nin = l->nin,
                                     .wrank = l->wrank,
                                     .orank = l->orank,
                                     .wb = count_bucket(l->wrank, l->wdims),
                                     .ob = count_bucket(l->orank, l->odims),
                                     .count = 1};
    }
    qsort(out->k, s->n, sizeof *out->k, key_cmp);
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (n && !key_cmp(&out->k[n - 1], &out->k[i]) && out->k[n - 1].count < UINT16_MAX)
            out->k[n - 1].count++;
        else
            out->k[n++] = out->k[i];
    }
    out->n = n;
    out->layers = s->n;
    return LOOM_OK;
}

void loom_zoo_keys_free(loom_zoo_keys_t *k)
{
    if (!k)
        return;
    free(k->k);
    memset(k, 0, sizeof *k);
}

/* The most dims_agree can give two shapes of these ranks and buckets. */
static double agree_bound(int ra, int16_t ba, int rb, int16_t bb)
{
    if (ra != rb)
        return ra == 0 || rb == 0 ? 0.5 : 0.25;
    if (ra == 0 || ba == INT16_MIN || bb == INT16_MIN)
        return 1;
    int d = ba > bb ? ba - bb : bb - ba;
    return d <= 1 ? 1 : exp2(-(double)(d - 1) / LOOM_ZOO_KEY_Q);
}

static double key_pair_bound(const loom_zoo_key_t *a, const loom_zoo_key_t *b)
{
    double o = agree_bound(a->orank, a->ob, b->orank, b->ob);
    double s =
        a->wrank || b->wrank ? 0.5 * agree_bound(a->wrank, a->wb, b->wrank, b->wb) + 0.5 * o : o;
    if (a->nin != b->nin)
        s *= 0.75;
    return 0.25 + 0.75 * s;
}

typedef struct best_of {
    double v;
    unsigned count;
} best_of_t;

static int best_desc(const void *x, const void *y)
{
    const best_of_t *a = x, *b = y;
    return (a->v < b->v) - (a->v > b->v);
}

/* The largest `limit` of the row keys' best scores against the column
 * keys, summed (rows [r0, r1), columns [c0, c1) of one operator). */
static double side_bound(const loom_zoo_key_t *r, size_t nr, const loom_zoo_key_t *c, size_t nc,
                         unsigned limit, best_of_t *tmp)
{
    for (size_t i = 0; i < nr; i++) {
        double m = 0;
        for (size_t j = 0; j < nc && m < 1; j++) {
            double v = key_pair_bound(&r[i], &c[j]);
            m = v > m ? v : m;
        }
        tmp[i] = (best_of_t){m, r[i].count};
    }
    qsort(tmp, nr, sizeof *tmp, best_desc);
    double sum = 0;
    for (size_t i = 0; i < nr && limit; i++) {
        unsigned k = tmp[i].count < limit ? tmp[i].count : limit;
        sum += k * tmp[i].v;
        limit -= k;
    }
    return sum;
}

double loom_zoo_keys_bound(const loom_zoo_keys_t *a, const loom_zoo_keys_t *b)
{
    if (a->layers + b->layers == 0)
        return 0;
    best_of_t *tmp = malloc((a->n > b->n ? a->n : b->n) * sizeof *tmp + 1);
    if (!tmp)
        return 1; /* no bound: every candidate is aligned */
    double S = 0;
    size_t i = 0, j = 0;
    while (i < a->n && j < b->n) {
        if (a->k[i].op != b->k[j].op) {
            if (a->k[i].op < b->k[j].op)
                i++;
            else
                j++;
            continue;
        }
        size_t i1 = i, j1 = j;
        unsigned ca = 0, cb = 0;
        while (i1 < a->n && a->k[i1].op == a->k[i].op)
            ca += a->k[i1++].count;
        while (j1 < b->n && b->k[j1].op == b->k[j].op)
            cb += b->k[j1++].count;
        unsigned lim = ca < cb ? ca : cb;
        double x = side_bound(a->k + i, i1 - i, b->k + j, j1 - j, lim, tmp);
        double y = side_bound(b->k + j, j1 - j, a->k + i, i1 - i, lim, tmp);
        S += x < y ? x : y;
        i = i1;
        j = j1;
    }
    free(tmp);
    double s = 2.0 * S / (double)(a->layers + b->layers);
    return s > 1 ? 1 : s;
}

#define KEY_REC 12

int loom_zoo_keys_encode(const loom_zoo_keys_t *k, loom_buf_t *out)
{
    for (size_t i = 0; i < k->n; i++) {
        const loom_zoo_key_t *x = &k->k[i];
        uint16_t wb = (uint16_t)x->wb, ob = (uint16_t)x->ob;
        uint8_t r[KEY_REC] = {(uint8_t)x->op,
                              (uint8_t)(x->op >> 8),
                              x->nin,
                              x->wrank,
                              x->orank,
                              0,
                              (uint8_t)wb,
                              (uint8_t)(wb >> 8),
                              (uint8_t)ob,
                              (uint8_t)(ob >> 8),
                              (uint8_t)x->count,
                              (uint8_t)(x->count >> 8)};
        if (loom_buf_append(out, r, sizeof r))
            return LOOM_ENOMEM;
    }
    return LOOM_OK;
}

int loom_zoo_keys_decode(const void *data, size_t len, size_t layers, loom_zoo_keys_t *out)
{
    memset(out, 0, sizeof *out);
    if (len % KEY_REC)
        return LOOM_EINVAL;
    size_t n = len / KEY_REC, total = 0;
    out->k = calloc(n ? n : 1, sizeof *out->k);
    if (!out->k)
        return LOOM_ENOMEM;
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i++, p += KEY_REC) {
        loom_zoo_key_t *x = &out->k[i];
        x->op = (uint16_t)(p[0] | p[1] << 8);
        x->nin = p[2];
        x->wrank = p[3];
        x->orank = p[4];
        x->wb = (int16_t)(uint16_t)(p[6] | p[7] << 8);
        x->ob = (int16_t)(uint16_t)(p[8] | p[9] << 8);
        x->count = (uint16_t)(p[10] | p[11] << 8);
        total += x->count;
        if (i && out->k[i - 1].op > x->op) {
            loom_zoo_keys_free(out);
            return LOOM_EINVAL;
        }
    }
    if (total != layers) {
        loom_zoo_keys_free(out);
        return LOOM_EINVAL;
    }
    out->n = n;
    out->layers = layers;
    return LOOM_OK;
}
