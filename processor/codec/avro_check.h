/* avro_check.h — a bounds-checked walk over an Avro binary datum, run
 * before avro-c reads untrusted bytes.
 *
 * avro-c 1.11.1 trusts length prefixes: a string or bytes length is
 * allocated before the bytes are read (a hostile 8-byte prefix asks for
 * terabytes), and a malformed datum can leave it half-way through a read.
 * This walker follows the schema and checks every length, block count,
 * union branch and enum index against the schema and the bytes actually
 * present, so avro-c only ever parses data it can read completely.  It is
 * stricter than the Avro specification only where the specification
 * leaves room for garbage: varints must end within 5 bytes (int) or 10
 * bytes (long) and encode a value of that width, booleans must be 0 or 1,
 * a negative array/map block count must be followed by the exact byte size
 * of its block.  Work is linear in len (every item consumes >= 1 byte, or
 * the block is refused). */
#ifndef DP_CODEC_AVRO_CHECK_H
#define DP_CODEC_AVRO_CHECK_H

#include <avro.h>
#include <stddef.h>
#include <stdint.h>

/* DP_OK if data[0, len) is exactly one datum of `schema`; otherwise
 * DP_EINVAL with the byte offset and the problem in errstr. */
int dp_avro_check(avro_schema_t schema, const void *data, size_t len,
                  char *errstr, size_t errstr_size);

/* One zigzag varint at data[*off]: at most max_bytes bytes (5 for an Avro
 * int, 10 for a long) and a value that fits `bits` bits (32 / 64), the
 * rule above.  NULL and *off advanced, or what is wrong (*off at the byte
 * that broke it). */
const char *dp_avro_read_varint(const uint8_t *data, size_t len, size_t *off, int max_bytes, int bits,
                                int64_t *out);

#endif
