/* avro_write.h — Avro binary encoding written directly (Avro 1.11
 * specification, "Binary Encoding"), for the hot messages whose schema is
 * fixed (a release's SyntheticRecord chunks) and for the release checksum,
 * whose canonical bytes are those same encodings.  The output is
 * byte-identical to avro-c's writer for the same datum
 * (test_codec_chunk_encode checks it against the generic encoder). */
#ifndef DP_AVRO_WRITE_H
#define DP_AVRO_WRITE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/buf.h"

/* Most bytes an encoded int / long takes. */
#define DPC_AVRO_MAX_LONG 10

/* int and long: zigzag, then base-128 varint, low group first.  Writes at
 * most DPC_AVRO_MAX_LONG bytes at p; returns how many. */
static inline size_t dpc_avro_write_long(uint8_t *p, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    size_t n = 0;
    while (z >= 0x80) {
        p[n++] = (uint8_t)(z | 0x80);
        z >>= 7;
    }
    p[n++] = (uint8_t)z;
    return n;
}

/* double: IEEE 754 binary64, little-endian; 8 bytes. */
static inline size_t dpc_avro_write_double(uint8_t *p, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(bits >> (8 * i));
    return 8;
}

/* The same, appended to a dp_buf (errors latch in it: dp_buf_status). */
void dpc_avro_put_long(dp_buf *b, int64_t v);
/* string / bytes: long length, then the bytes. */
void dpc_avro_put_bytes(dp_buf *b, const void *p, size_t n);

#endif
