/* packed.h — a growable array of fixed-width unsigned fields (1..64 bits
 * each) packed back to back in 64-bit words.  Per-individual state of the
 * longitudinal synthesizers (seed 000) lives here so memory is the
 * information content: k·ceil(log2 c) bits of history per individual plus
 * a few bookkeeping bits, not a struct per individual. */
#ifndef DP_PACKED_H
#define DP_PACKED_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

typedef struct dp_packed {
    uint64_t *words;
    size_t    n;        /* fields in use */
    size_t    cap;      /* fields allocated */
    unsigned  width;    /* bits per field, 1..64 */
} dp_packed;

void dp_packed_init(dp_packed *p, unsigned width);
void dp_packed_free(dp_packed *p);
/* Grow or shrink to n fields; new fields are 0.  DP_OK or DP_ENOMEM. */
int  dp_packed_resize(dp_packed *p, size_t n);
/* Bytes allocated (for memory statements). */
size_t dp_packed_bytes(const dp_packed *p);

static inline uint64_t dp_packed_mask_(unsigned w)
{
    return w >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << w) - 1);
}

static inline uint64_t dp_packed_get(const dp_packed *p, size_t i)
{
    unsigned w = p->width;
    uint64_t bit = (uint64_t)i * w;
    size_t word = (size_t)(bit >> 6);
    unsigned off = (unsigned)(bit & 63);
    uint64_t v = p->words[word] >> off;
    if (off + w > 64)
        v |= p->words[word + 1] << (64 - off);
    return v & dp_packed_mask_(w);
}

static inline void dp_packed_set(dp_packed *p, size_t i, uint64_t v)
{
    unsigned w = p->width;
    uint64_t m = dp_packed_mask_(w);
    v &= m;
    uint64_t bit = (uint64_t)i * w;
    size_t word = (size_t)(bit >> 6);
    unsigned off = (unsigned)(bit & 63);
    p->words[word] = (p->words[word] & ~(m << off)) | (v << off);
    if (off + w > 64) {
        unsigned hi = off + w - 64;   /* bits spilling into the next word */
        uint64_t mh = dp_packed_mask_(hi);
        p->words[word + 1] = (p->words[word + 1] & ~mh) | (v >> (64 - off));
    }
}

/* n, width, then the used words (little endian). */
void dp_packed_save(const dp_packed *p, dp_buf *b);
/* Refuses a width different from p->width (DP_ECORRUPT). */
int  dp_packed_load(dp_packed *p, dp_reader *r);

#endif
