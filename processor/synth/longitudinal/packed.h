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
    uint64_t  mask;     /* dp_packed_mask_(width), precomputed for the accessors */
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

/* The accessors are on the per-update path of the longitudinal
 * synthesizers, so they are branch-free: a field that does not spill into
 * the next word reads (and rewrites unchanged) that word anyway.  It always
 * exists: the allocation keeps one word past the last field (packed.c).
 * (x >> 1) >> (63 − off) is x >> (64 − off) for off >= 1 and 0 for off = 0,
 * without the undefined shift by 64. */
static inline uint64_t dp_packed_get(const dp_packed *p, size_t i)
{
    uint64_t bit = (uint64_t)i * p->width;
    size_t word = (size_t)(bit >> 6);
    unsigned off = (unsigned)(bit & 63);
    uint64_t v = p->words[word] >> off | (p->words[word + 1] << 1) << (63 - off);
    return v & p->mask;
}

static inline void dp_packed_set(dp_packed *p, size_t i, uint64_t v)
{
    uint64_t m = p->mask;
    v &= m;
    uint64_t bit = (uint64_t)i * p->width;
    size_t word = (size_t)(bit >> 6);
    unsigned off = (unsigned)(bit & 63);
    p->words[word] = (p->words[word] & ~(m << off)) | (v << off);
    uint64_t mh = (m >> 1) >> (63 - off), vh = (v >> 1) >> (63 - off);   /* spilled bits */
    p->words[word + 1] = (p->words[word + 1] & ~mh) | vh;
}

/* Width-1 fields (flags; p->width must be 1): a bit in one word. */
static inline uint64_t dp_packed_get_bit(const dp_packed *p, size_t i)
{
    return (p->words[i >> 6] >> (i & 63)) & 1;
}

static inline void dp_packed_set_bit(dp_packed *p, size_t i, uint64_t v)
{
    uint64_t m = (uint64_t)1 << (i & 63);
    p->words[i >> 6] = (p->words[i >> 6] & ~m) | ((v & 1) ? m : 0);
}

/* n, width, then the used words (little endian). */
void dp_packed_save(const dp_packed *p, dp_buf *b);
/* Refuses a width different from p->width (DP_ECORRUPT). */
int  dp_packed_load(dp_packed *p, dp_reader *r);

#endif
