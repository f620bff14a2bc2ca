/* Private helpers of the zoo part. */
#ifndef LOOM_ZOO_INT_H
#define LOOM_ZOO_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct zoo_sha256 {
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
    size_t nbuf;
} zoo_sha256_t;

void zoo_sha256_init(zoo_sha256_t *c);
void zoo_sha256_update(zoo_sha256_t *c, const void *data, size_t len);
/* Lower-case hex digest, NUL-terminated. */
void zoo_sha256_hex(zoo_sha256_t *c, char out[65]);

/* The initializer (a parameter) behind tensor ti of an ONNX graph, or -1:
 * ti itself, or through the Identity nodes PyTorch's exporter inserts for
 * deduplicated parameters, or through a 2-D Transpose (how it exports a
 * Linear applied to 3-D input: MatMul(x, Transpose(W))). *name_ti is the
 * tensor that carries the parameter's name (the module's state_dict key):
 * the Transpose's input, else ti; *transposed tells whether a Transpose
 * was passed. */
struct loom_est_model;
int zoo_weight_of(const struct loom_est_model *m, int ti, int *name_ti, bool *transposed);

#endif
