/* Seeded randomness. xoshiro256** (Blackman and Vigna) for the stream,
 * splitmix64 to expand (seed, stream) into its 256-bit state. Only integer
 * arithmetic decides the state, so a seed reproduces on every machine; the
 * distributions use libm's log/sqrt/cos, which are deterministic for a
 * given libm. */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "loom/core.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void loom_rng_init(loom_rng_t *rng, uint64_t seed, uint64_t stream)
{
    /* Mix the stream number through splitmix first so that nearby streams
     * start from unrelated states. */
    uint64_t x = stream;
    uint64_t key = seed ^ splitmix64(&x);
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&key);
    if (!(rng->s[0] | rng->s[1] | rng->s[2] | rng->s[3]))
        rng->s[0] = 1; /* the all-zero state is the one fixed point */
}

uint64_t loom_rng_u64(loom_rng_t *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double loom_rng_uniform(loom_rng_t *rng)
{
    return (double)(loom_rng_u64(rng) >> 11) * 0x1.0p-53;
}

uint64_t loom_rng_below(loom_rng_t *rng, uint64_t n)
{
    assert(n > 0);
    /* Lemire's multiply-and-reject: unbiased, one division only when a
     * rejection is possible. */
    uint64_t x = loom_rng_u64(rng);
    __uint128_t m = (__uint128_t)x * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
        uint64_t threshold = -n % n;
        while (low < threshold) {
            x = loom_rng_u64(rng);
            m = (__uint128_t)x * n;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

double loom_rng_exponential(loom_rng_t *rng, double rate)
{
    /* 1 - U lies in (0, 1], so the log is finite. */
    return -log(1.0 - loom_rng_uniform(rng)) / rate;
}

double loom_rng_normal(loom_rng_t *rng)
{
    /* Box-Muller; one of the pair is discarded to keep the state simple. */
    double u1 = 1.0 - loom_rng_uniform(rng);
    double u2 = loom_rng_uniform(rng);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double loom_rng_gamma(loom_rng_t *rng, double shape, double scale)
{
    assert(shape > 0 && scale > 0);
    if (shape < 1.0) {
        /* Boost: Gamma(a) = Gamma(a + 1) * U^(1/a). */
        double u = 1.0 - loom_rng_uniform(rng);
        return loom_rng_gamma(rng, shape + 1.0, scale) * pow(u, 1.0 / shape);
    }
    /* Marsaglia and Tsang (2000). */
    double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, v;
        do {
            x = loom_rng_normal(rng);
            v = 1.0 + c * x;
        } while (v <= 0);
        v = v * v * v;
        double u = 1.0 - loom_rng_uniform(rng);
        if (u < 1.0 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
            return d * v * scale;
    }
}

size_t loom_rng_weighted(loom_rng_t *rng, const double *weights, size_t n)
{
    assert(n > 0);
    double total = 0;
    for (size_t i = 0; i < n; i++)
        total += weights[i];
    double x = loom_rng_uniform(rng) * total;
    for (size_t i = 0; i < n; i++) {
        if (x < weights[i])
            return i;
        x -= weights[i];
    }
    /* Rounding left x at the very top: return the last positive weight. */
    for (size_t i = n; i-- > 0;)
        if (weights[i] > 0)
            return i;
    return n - 1;
}

void loom_rng_shuffle(loom_rng_t *rng, void *base, size_t n, size_t size)
{
    unsigned char *a = base, tmp[256];
    assert(size <= sizeof tmp);
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)loom_rng_below(rng, i);
        if (j != i - 1) {
            memcpy(tmp, a + j * size, size);
            memcpy(a + j * size, a + (i - 1) * size, size);
            memcpy(a + (i - 1) * size, tmp, size);
        }
    }
}
