/* avro_write.c — see avro_write.h. */
#include "codec/avro_write.h"

#include <string.h>

void dpc_avro_put_long(dp_buf *b, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);   /* zigzag */
    uint8_t tmp[10];
    size_t n = 0;
    while (z >= 0x80) {
        tmp[n++] = (uint8_t)(z | 0x80);
        z >>= 7;
    }
    tmp[n++] = (uint8_t)z;
    dp_buf_put_bytes(b, tmp, n);
}

void dpc_avro_put_double(dp_buf *b, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint8_t tmp[8];
    for (int i = 0; i < 8; i++)
        tmp[i] = (uint8_t)(bits >> (8 * i));
    dp_buf_put_bytes(b, tmp, sizeof tmp);
}

void dpc_avro_put_bytes(dp_buf *b, const void *p, size_t n)
{
    dpc_avro_put_long(b, (int64_t)n);
    dp_buf_put_bytes(b, p, n);
}
