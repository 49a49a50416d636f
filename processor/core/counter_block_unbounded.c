/* counter_block_unbounded.c — the unbounded block counter of Kumar et al.
 * (seed 001, §8, Algorithm 4), implemented line by line.
 *
 * Time is cut into stages of length 4, 9, 16, … (B² for B = 2, 3, 4, …);
 * stage B runs a two-level block counter (CSS 2011) with block size B:
 *   δ = t − t_atPartition; α_trueInBlock += f(t)                  (11–12)
 *   if B | δ:  α_lastBlock += α_trueInBlock + noise;                (13–14)
 *              α_trueInBlock = α_synthInBlock = 0; g(t) = α_lastBlock
 *              if δ = B²: t_atPartition = t; B += 1                (17–19)
 *   else:      α_synthInBlock += f(t) + noise;                      (21)
 *              g(t) = α_lastBlock + α_synthInBlock                  (22)
 * α_lastBlock carries across stages, so g(t) always estimates the full
 * prefix sum.  Every stage ends on a block boundary (B | B²).
 *
 * Privacy (Theorem 8.1): the stage/block schedule depends only on t, and
 * each entry enters exactly one noisy block sum and at most one noisy
 * per-entry value (none when it ends a block), so the vector of noised
 * quantities has ℓ1 = ℓ2² = 2 per unit change over the whole unbounded
 * stream.  Hence the paper's Lap(2/ε) for both (here DLap(2·entries·Δ/ε),
 * exact integers) is ε-DP, and N_Z(2·entries·Δ²/(2ρ)) is ρ-zCDP; outputs
 * are post-processing.
 *
 * Error at t: (#completed blocks + #entries in the open block)·Var(noise),
 * exact; it grows like t^{1/3} (≈ (3t)^{1/3} stages, √-size blocks).
 * Memory O(1); time O(1) per step (one draw). */
#include "core/counter_family.h"
#include "core/dp_error.h"

#include <stdlib.h>

typedef struct bunb_state {
    dp_cnoise noise;
    uint64_t  B;               /* current block size */
    uint64_t  stage_start;     /* t_atPartition */
    int64_t   last_block;      /* α_lastBlock */
    int64_t   true_in_block;   /* α_trueInBlock */
    int64_t   synth_in_block;  /* α_synthInBlock */
} bunb_state;

static int bunb_init(dp_counter *c, char *errstr, size_t errstr_size)
{
    bunb_state *s = calloc(1, sizeof *s);
    if (!s)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    int rc = dp_cnoise_calibrate(c, 2.0, 2.0, 1.0, &s->noise, errstr, errstr_size);
    if (rc != DP_OK) {
        free(s);
        return rc;
    }
    s->B = 2;
    c->impl = s;
    return DP_OK;
}

static int bunb_add(dp_counter *c, int64_t x, int64_t *out)
{
    bunb_state *s = c->impl;
    uint64_t t = c->t + 1;
    uint64_t delta = t - s->stage_start;
    int64_t in_block;
    if (dp_cadd(s->true_in_block, x, &in_block) != DP_OK)
        return DP_ERANGE;
    if (delta % s->B == 0) {
        dp_counter_trace_noised(c, t, "block_unbounded/sum", in_block);
        int64_t noisy, last;
        if (dp_cadd(in_block, dp_cnoise_draw(c, &s->noise, t, "block_unbounded/sum"), &noisy) != DP_OK ||
            dp_cadd(s->last_block, noisy, &last) != DP_OK)
            return DP_ERANGE;
        s->last_block = last;
        s->true_in_block = 0;
        s->synth_in_block = 0;
        if (delta == s->B * s->B) {
            s->stage_start = t;
            s->B++;
        }
        *out = last;
        return DP_OK;
    }
    dp_counter_trace_noised(c, t, "block_unbounded/item", x);
    int64_t noisy, synth, total;
    if (dp_cadd(x, dp_cnoise_draw(c, &s->noise, t, "block_unbounded/item"), &noisy) != DP_OK ||
        dp_cadd(s->synth_in_block, noisy, &synth) != DP_OK ||
        dp_cadd(s->last_block, synth, &total) != DP_OK)
        return DP_ERANGE;
    s->true_in_block = in_block;
    s->synth_in_block = synth;
    *out = total;
    return DP_OK;
}

/* Stage (B, start) containing step t (t >= 1), and the number of blocks
 * completed in earlier stages. */
static void bunb_locate(uint64_t t, uint64_t *B, uint64_t *start, uint64_t *blocks_before)
{
    uint64_t b = 2, st = 0, blocks = 0;
    while (t - st > b * b) {
        blocks += b;
        st += b * b;
        b++;
    }
    *B = b;
    *start = st;
    *blocks_before = blocks;
}

static double bunb_variance(const dp_counter *c, uint64_t t)
{
    const bunb_state *s = c->impl;
    uint64_t B, start, blocks;
    bunb_locate(t, &B, &start, &blocks);
    uint64_t delta = t - start;
    return (double)(blocks + delta / B + delta % B) * s->noise.var;
}

static int bunb_sensitivity(const dp_counter *c, double *l1, double *l2sq)
{
    *l1 = 2.0;
    *l2sq = 2.0;
    return DP_OK;
}

static int bunb_save(const dp_counter *c, dp_buf *b)
{
    const bunb_state *s = c->impl;
    dp_buf_put_u64(b, s->B);
    dp_buf_put_u64(b, s->stage_start);
    dp_buf_put_i64(b, s->last_block);
    dp_buf_put_i64(b, s->true_in_block);
    dp_buf_put_i64(b, s->synth_in_block);
    return dp_buf_status(b);
}

static int bunb_load(dp_counter *c, dp_reader *r)
{
    bunb_state *s = c->impl;
    s->B = dp_reader_u64(r);
    s->stage_start = dp_reader_u64(r);
    s->last_block = dp_reader_i64(r);
    s->true_in_block = dp_reader_i64(r);
    s->synth_in_block = dp_reader_i64(r);
    if (dp_reader_status(r) != DP_OK)
        return DP_ECORRUPT;
    /* The schedule is a function of t alone: the stored stage must be the
     * one the next step t+1 falls in. */
    uint64_t B, start, blocks;
    bunb_locate(c->t + 1, &B, &start, &blocks);
    if (B != s->B || start != s->stage_start)
        return DP_ECORRUPT;
    return DP_OK;
}

static void bunb_fini(dp_counter *c)
{
    free(c->impl);
}

const dp_counter_ops dp_counter_ops_block_unbounded = {
    .kind = DP_COUNTER_BLOCK_UNBOUNDED,
    .bounded = 0,
    .supports_pure = 1,
    .supports_zcdp = 1,
    .exact_variance = 1,
    .init = bunb_init,
    .add = bunb_add,
    .variance = bunb_variance,
    .sensitivity = bunb_sensitivity,
    .save = bunb_save,
    .load = bunb_load,
    .fini = bunb_fini,
};
