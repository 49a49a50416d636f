/* counter_block.c — block(T, B): the two-level counter of Chan, Shi, Song
 * 2011 ("Two-Level Counting Mechanism"), B defaulting to ceil(sqrt T).
 *
 * Steps are cut into blocks of B.  When a block ends (t ≡ 0 mod B) its
 * true sum is released once with noise and added to the running total of
 * noisy block sums; inside the current block every entry is released with
 * its own noise (a simple counter restarted at each block).  The output at
 * t is (noisy complete blocks) + (noisy entries of the open block); at a
 * block end the open block is empty, so — as in seed 001 Alg. 4, line 14
 * vs 21 — no per-entry noise is drawn for that step.
 *
 * Privacy: the partition is data-independent and each entry lies in one
 * block sum and (unless it ends its block) one per-entry value, so the
 * vector of noised quantities has ℓ1 = ℓ2² = 2 per unit change; each layer
 * is a Laplace / Gaussian mechanism with sensitivity 1 at half the budget:
 *   pure ε: every noised value DLap(entries·Δ/(ε/2));
 *   ρ-zCDP: every noised value N_Z(entries·Δ²/(2·ρ/2)).
 * Degenerate B = 1: every step ends a block, there is no per-entry layer,
 * and the block layer gets the whole budget (ℓ1 = ℓ2² = 1).  B > T is
 * refused (no block would ever end: use the simple counter).
 *
 * Error at t: (floor(t/B) + (t mod B))·Var(noise), exact; O(t^{1/4})
 * standard deviation at B = sqrt(T) for t near T.
 * Memory O(1); time O(1) per step (one draw). */
#include "core/counter_family.h"
#include "core/dp_error.h"

#include <stdlib.h>

typedef struct block_state {
    uint64_t  B;
    unsigned  layers;          /* 2, or 1 when B == 1 */
    dp_cnoise noise;
    int64_t   noisy_blocks;    /* Σ noisy sums of completed blocks */
    int64_t   true_in_block;   /* exact sum of the open block */
    int64_t   noisy_in_block;  /* Σ (x + noise) over the open block */
} block_state;

static uint64_t ceil_sqrt_u64(uint64_t n)
{
    uint64_t r = 0;
    /* Bit-by-bit integer square root (floor), then round up. */
    for (uint64_t bit = 1ull << 62; bit; bit >>= 2) {
        if (n >= r + bit) {
            n -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
    }
    return n ? r + 1 : r;   /* n now holds the remainder n0 - r² */
}

static int block_init(dp_counter *c, char *errstr, size_t errstr_size)
{
    uint64_t T = c->cfg.horizon;
    uint64_t B = c->cfg.block ? c->cfg.block : ceil_sqrt_u64(T);
    if (B > T)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "counter block: block size B=%llu exceeds the horizon T=%llu",
                      (unsigned long long)B, (unsigned long long)T);
    block_state *s = calloc(1, sizeof *s);
    if (!s)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    s->B = B;
    s->layers = B > 1 ? 2 : 1;
    /* Each layer: sensitivity 1 at budget fraction 1/layers. */
    int rc = dp_cnoise_calibrate(c, 1.0, 1.0, 1.0 / s->layers, &s->noise, errstr, errstr_size);
    if (rc != DP_OK) {
        free(s);
        return rc;
    }
    c->impl = s;
    return DP_OK;
}

static int block_add(dp_counter *c, int64_t x, int64_t *out)
{
    block_state *s = c->impl;
    uint64_t t = c->t + 1;
    int64_t in_block;
    if (dp_cadd(s->true_in_block, x, &in_block) != DP_OK)
        return DP_ERANGE;
    if (t % s->B == 0) {
        dp_counter_trace_noised(c, t, "block/sum", in_block);
        int64_t noisy, total;
        if (dp_cadd(in_block, dp_cnoise_draw(c, &s->noise, t, "block/sum"), &noisy) != DP_OK ||
            dp_cadd(s->noisy_blocks, noisy, &total) != DP_OK)
            return DP_ERANGE;
        s->noisy_blocks = total;
        s->true_in_block = 0;
        s->noisy_in_block = 0;
        *out = total;
        return DP_OK;
    }
    dp_counter_trace_noised(c, t, "block/item", x);
    int64_t noisy, open, total;
    if (dp_cadd(x, dp_cnoise_draw(c, &s->noise, t, "block/item"), &noisy) != DP_OK ||
        dp_cadd(s->noisy_in_block, noisy, &open) != DP_OK ||
        dp_cadd(s->noisy_blocks, open, &total) != DP_OK)
        return DP_ERANGE;
    s->true_in_block = in_block;
    s->noisy_in_block = open;
    *out = total;
    return DP_OK;
}

static double block_variance(const dp_counter *c, uint64_t t)
{
    const block_state *s = c->impl;
    return (double)(t / s->B + t % s->B) * s->noise.var;
}

static int block_sensitivity(const dp_counter *c, double *l1, double *l2sq)
{
    const block_state *s = c->impl;
    *l1 = (double)s->layers;
    *l2sq = (double)s->layers;
    return DP_OK;
}

static int block_save(const dp_counter *c, dp_buf *b)
{
    const block_state *s = c->impl;
    dp_buf_put_i64(b, s->noisy_blocks);
    dp_buf_put_i64(b, s->true_in_block);
    dp_buf_put_i64(b, s->noisy_in_block);
    return dp_buf_status(b);
}

static int block_load(dp_counter *c, dp_reader *r)
{
    block_state *s = c->impl;
    s->noisy_blocks = dp_reader_i64(r);
    s->true_in_block = dp_reader_i64(r);
    s->noisy_in_block = dp_reader_i64(r);
    return dp_reader_status(r);
}

static void block_fini(dp_counter *c)
{
    free(c->impl);
}

const dp_counter_ops dp_counter_ops_block = {
    .kind = DP_COUNTER_BLOCK,
    .bounded = 1,
    .supports_pure = 1,
    .supports_zcdp = 1,
    .exact_variance = 1,
    .init = block_init,
    .add = block_add,
    .variance = block_variance,
    .sensitivity = block_sensitivity,
    .save = block_save,
    .load = block_load,
    .fini = block_fini,
};
