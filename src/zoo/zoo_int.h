/* Private helpers of the zoo part. */
#ifndef LOOM_ZOO_INT_H
#define LOOM_ZOO_INT_H

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

#endif
