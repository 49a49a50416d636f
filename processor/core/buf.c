#include "core/buf.h"
#include "core/dp_error.h"

#include <stdlib.h>
#include <string.h>

void dp_buf_init(dp_buf *b)
{
    memset(b, 0, sizeof *b);
}

void dp_buf_free(dp_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

void dp_buf_clear(dp_buf *b)
{
    b->len = 0;
    b->failed = 0;
}

static int buf_reserve(dp_buf *b, size_t extra)
{
    if (b->failed)
        return 0;
    if (extra > SIZE_MAX - b->len) {
        b->failed = DP_ENOMEM;
        return 0;
    }
    size_t need = b->len + extra;
    if (need <= b->cap)
        return 1;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    uint8_t *p = realloc(b->data, cap);
    if (!p) {
        b->failed = DP_ENOMEM;
        return 0;
    }
    b->data = p;
    b->cap = cap;
    return 1;
}

uint8_t *dp_buf_tail(dp_buf *b, size_t n)
{
    return buf_reserve(b, n) ? b->data + b->len : NULL;
}

void dp_buf_put_bytes(dp_buf *b, const void *p, size_t n)
{
    if (n == 0 || !buf_reserve(b, n))
        return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void put_le(dp_buf *b, uint64_t v, int width)
{
    uint8_t tmp[8];
    for (int i = 0; i < width; i++)
        tmp[i] = (uint8_t)(v >> (8 * i));
    dp_buf_put_bytes(b, tmp, (size_t)width);
}

void dp_buf_put_varint(dp_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    dp_buf_put_bytes(b, tmp, n);
}

void dp_buf_put_u8(dp_buf *b, uint8_t v)   { put_le(b, v, 1); }
void dp_buf_put_u32(dp_buf *b, uint32_t v) { put_le(b, v, 4); }
void dp_buf_put_u64(dp_buf *b, uint64_t v) { put_le(b, v, 8); }
void dp_buf_put_i64(dp_buf *b, int64_t v)  { put_le(b, (uint64_t)v, 8); }

void dp_buf_put_f64(dp_buf *b, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_le(b, bits, 8);
}

void dp_buf_put_blob(dp_buf *b, const void *p, size_t n)
{
    dp_buf_put_u64(b, (uint64_t)n);
    dp_buf_put_bytes(b, p, n);
}

int dp_buf_status(const dp_buf *b)
{
    return b->failed ? b->failed : DP_OK;
}

void dp_reader_init(dp_reader *r, const void *p, size_t len)
{
    r->p = p;
    r->len = len;
    r->off = 0;
    r->failed = 0;
}

int dp_reader_bytes(dp_reader *r, void *out, size_t n)
{
    if (r->failed || n > r->len - r->off) {
        r->failed = DP_ECORRUPT;
        if (out && n)
            memset(out, 0, n);
        return DP_ECORRUPT;
    }
    if (n)
        memcpy(out, r->p + r->off, n);
    r->off += n;
    return DP_OK;
}

static uint64_t get_le(dp_reader *r, int width)
{
    uint8_t tmp[8];
    uint64_t v = 0;
    if (dp_reader_bytes(r, tmp, (size_t)width) != DP_OK)
        return 0;
    for (int i = 0; i < width; i++)
        v |= (uint64_t)tmp[i] << (8 * i);
    return v;
}

uint8_t  dp_reader_u8(dp_reader *r)  { return (uint8_t)get_le(r, 1); }
uint32_t dp_reader_u32(dp_reader *r) { return (uint32_t)get_le(r, 4); }
uint64_t dp_reader_u64(dp_reader *r) { return get_le(r, 8); }
int64_t  dp_reader_i64(dp_reader *r) { return (int64_t)get_le(r, 8); }

double dp_reader_f64(dp_reader *r)
{
    uint64_t bits = get_le(r, 8);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

uint64_t dp_reader_varint(dp_reader *r)
{
    uint64_t v = 0;
    for (int shift = 0; !r->failed; shift += 7) {
        if (r->off >= r->len || shift > 63) {
            r->failed = DP_ECORRUPT;
            break;
        }
        uint8_t byte = r->p[r->off++];
        uint64_t part = byte & 0x7fu;
        if ((shift == 63 && part > 1) || (shift > 0 && byte == 0)) {
            r->failed = DP_ECORRUPT;   /* past 64 bits, or not the shortest form */
            break;
        }
        v |= part << shift;
        if (!(byte & 0x80))
            return v;
    }
    return 0;
}

const uint8_t *dp_reader_blob(dp_reader *r, size_t *n)
{
    uint64_t len = dp_reader_u64(r);
    if (r->failed || len > r->len - r->off) {
        r->failed = DP_ECORRUPT;
        *n = 0;
        return NULL;
    }
    const uint8_t *p = r->p + r->off;
    r->off += (size_t)len;
    *n = (size_t)len;
    return p;
}

int dp_reader_status(const dp_reader *r)
{
    return r->failed ? r->failed : DP_OK;
}

int dp_reader_finish(const dp_reader *r)
{
    if (r->failed || r->off != r->len)
        return DP_ECORRUPT;
    return DP_OK;
}
