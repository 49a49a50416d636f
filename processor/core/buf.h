/* buf.h — growable byte buffer and bounds-checked reader for the exact,
 * versioned binary snapshots of counters, ledgers and synthesizers.
 *
 * Integers are little-endian fixed width; doubles are written as their
 * IEEE-754 bit pattern so a restore reproduces them exactly.  Writers latch
 * an out-of-memory error and readers latch a truncation error, so a
 * sequence of puts/gets is checked once at the end. */
#ifndef DP_BUF_H
#define DP_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct dp_buf {
    uint8_t *data;
    size_t   len;
    size_t   cap;
    int      failed;     /* DP_ENOMEM once an allocation failed */
} dp_buf;

void dp_buf_init(dp_buf *b);
void dp_buf_free(dp_buf *b);
/* Empty it for reuse: length 0 and the error cleared, the memory kept (a
 * buffer refilled every step then writes into pages it already has). */
void dp_buf_clear(dp_buf *b);
void dp_buf_put_bytes(dp_buf *b, const void *p, size_t n);
/* Room for n more bytes at the end: a pointer to write them at (then add
 * what was written to b->len), or NULL with b->failed set. */
uint8_t *dp_buf_tail(dp_buf *b, size_t n);
void dp_buf_put_u8(dp_buf *b, uint8_t v);
void dp_buf_put_u32(dp_buf *b, uint32_t v);
void dp_buf_put_u64(dp_buf *b, uint64_t v);
void dp_buf_put_i64(dp_buf *b, int64_t v);
void dp_buf_put_f64(dp_buf *b, double v);
/* unsigned LEB128: 7 bits a byte, low group first (1 byte below 128) */
void dp_buf_put_varint(dp_buf *b, uint64_t v);
/* length-prefixed (u64) byte string */
void dp_buf_put_blob(dp_buf *b, const void *p, size_t n);
/* DP_OK or DP_ENOMEM */
int  dp_buf_status(const dp_buf *b);

typedef struct dp_reader {
    const uint8_t *p;
    size_t         len;
    size_t         off;
    int            failed;  /* DP_ECORRUPT once a read ran past the end */
} dp_reader;

void     dp_reader_init(dp_reader *r, const void *p, size_t len);
int      dp_reader_bytes(dp_reader *r, void *out, size_t n);
uint8_t  dp_reader_u8(dp_reader *r);
uint32_t dp_reader_u32(dp_reader *r);
uint64_t dp_reader_u64(dp_reader *r);
int64_t  dp_reader_i64(dp_reader *r);
double   dp_reader_f64(dp_reader *r);
/* dp_buf_put_varint's encoding; over-long (a final zero group) or more
 * than 64 bits is corrupt. */
uint64_t dp_reader_varint(dp_reader *r);
/* Borrow a length-prefixed blob in place (no copy); NULL on failure. */
const uint8_t *dp_reader_blob(dp_reader *r, size_t *n);
/* DP_OK, or DP_ECORRUPT if any read failed */
int      dp_reader_status(const dp_reader *r);
/* DP_OK only if no read failed and every byte was consumed */
int      dp_reader_finish(const dp_reader *r);

#endif
