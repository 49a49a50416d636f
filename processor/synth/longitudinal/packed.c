/* packed.c — see packed.h. */
#include "synth/longitudinal/packed.h"

#include "core/dp_error.h"

#include <stdlib.h>
#include <string.h>

void dp_packed_init(dp_packed *p, unsigned width)
{
    memset(p, 0, sizeof *p);
    p->width = width;
    p->mask = dp_packed_mask_(width);
}

void dp_packed_free(dp_packed *p)
{
    free(p->words);
    p->words = NULL;
    p->n = p->cap = 0;
}

static size_t words_for(size_t n, unsigned width)
{
    /* +1 so a field's spill into the next word never reads past the end. */
    return (size_t)(((uint64_t)n * width + 63) / 64) + 1;
}

int dp_packed_resize(dp_packed *p, size_t n)
{
    if (n > p->cap) {
        size_t cap = p->cap ? p->cap : 64;
        while (cap < n)
            cap = cap > SIZE_MAX / 4 ? n : cap * 2;
        if ((uint64_t)cap * p->width / 64 > SIZE_MAX / sizeof(uint64_t) - 2)
            return DP_ENOMEM;
        size_t oldw = p->words ? words_for(p->cap, p->width) : 0;
        size_t neww = words_for(cap, p->width);
        uint64_t *w = realloc(p->words, neww * sizeof *w);
        if (!w)
            return DP_ENOMEM;
        memset(w + oldw, 0, (neww - oldw) * sizeof *w);
        p->words = w;
        p->cap = cap;
    }
    /* Zero the fields beyond the new end so a later grow starts at 0. */
    for (size_t i = n; i < p->n; i++)
        dp_packed_set(p, i, 0);
    p->n = n;
    return DP_OK;
}

size_t dp_packed_bytes(const dp_packed *p)
{
    return p->words ? words_for(p->cap, p->width) * sizeof(uint64_t) : 0;
}

void dp_packed_save(const dp_packed *p, dp_buf *b)
{
    dp_buf_put_u32(b, p->width);
    dp_buf_put_u64(b, p->n);
    size_t nw = p->n ? words_for(p->n, p->width) - 1 : 0;
    for (size_t i = 0; i < nw; i++)
        dp_buf_put_u64(b, p->words[i]);
}

int dp_packed_load(dp_packed *p, dp_reader *r)
{
    uint32_t width = dp_reader_u32(r);
    uint64_t n = dp_reader_u64(r);
    if (dp_reader_status(r) != DP_OK || width != p->width)
        return DP_ECORRUPT;
    size_t nw = n ? words_for((size_t)n, p->width) - 1 : 0;
    if (n > SIZE_MAX / 64 || nw > (r->len - r->off) / 8)
        return DP_ECORRUPT;
    int rc = dp_packed_resize(p, 0);
    if (rc == DP_OK)
        rc = dp_packed_resize(p, (size_t)n);
    if (rc != DP_OK)
        return rc;
    for (size_t i = 0; i < nw; i++)
        p->words[i] = dp_reader_u64(r);
    /* Bits past the last field must be zero (canonical form). */
    uint64_t used = n * p->width;
    if (nw > 0 && (used & 63) && (p->words[nw - 1] >> (used & 63)) != 0)
        return DP_ECORRUPT;
    return dp_reader_status(r) == DP_OK ? DP_OK : DP_ECORRUPT;
}
