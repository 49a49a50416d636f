/* avro_write.h — Avro binary encoding written directly into a dp_buf
 * (Avro 1.11 specification, "Binary Encoding"), for the hot messages whose
 * schema is fixed (a release's SyntheticRecord chunks).  The output is
 * byte-identical to avro-c's writer for the same datum; test_codec_release
 * checks that against the generic encoder.  Errors (allocation) latch in
 * the dp_buf (dp_buf_status). */
#ifndef DP_AVRO_WRITE_H
#define DP_AVRO_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

/* int and long: zigzag, then base-128 varint, low group first. */
void dpc_avro_put_long(dp_buf *b, int64_t v);
/* double: IEEE 754 binary64, little-endian. */
void dpc_avro_put_double(dp_buf *b, double v);
/* string / bytes: long length, then the bytes. */
void dpc_avro_put_bytes(dp_buf *b, const void *p, size_t n);

#endif
