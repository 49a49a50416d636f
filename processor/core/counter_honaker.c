/* counter_honaker.c — honaker(T): the binary tree with Honaker's
 * variance-reduced node estimates (J. Honaker, "Efficient use of
 * differentially private binary trees", 2015; the streaming form used by
 * TF Privacy's EfficientTreeAggregator, which can only use completed
 * subtrees).
 *
 * Noised quantities: every dyadic node v of levels 0..L-1 (L = floor(log2
 * T)+1) whose interval ends by T gets y_v = s_v + z_v with iid noise of
 * variance V, drawn at the step the node completes (the plain tree skips
 * the nodes it does not need; Honaker uses them all).
 *
 * Estimates (bottom-up, inverse-variance weighting).  A leaf's estimate is
 * ŷ = y (variance v_0 = V).  A level-h node combines its own y_v (variance
 * V) with its children's estimate ŷ_a + ŷ_b (variance 2·v_{h-1}):
 *   ŷ_v = α_h·y_v + (1-α_h)(ŷ_a + ŷ_b),  α_h = 2v_{h-1}/(V + 2v_{h-1}),
 *   v_h = V·2v_{h-1}/(V + 2v_{h-1}).
 * By induction v_h = V·2^h/(2^{h+1}-1) and α_h = 2^h/(2^{h+1}-1): the
 * weights do not depend on V, and with D_h = 2^{h+1}-1 (so D_{h-1} =
 * 2^h - 1 = (1-α_h)·D_h) the estimate is ŷ_v = N_v / D_h with the exact
 * integer numerator
 *   N_v = 2^h·y_v + N_a + N_b      ( = Σ_{u ⊆ v} 2^{level(u)}·y_u ).
 * So all estimates are kept exactly as integers (128-bit), strictly linear
 * in the noise.  The prefix estimate at t is Σ_{bit h of t} N_{v_h}/D_h
 * over the dyadic decomposition of [1, t], with exact noise variance
 *   Var_noise(t) = V·Σ_{bit h of t} 2^h/(2^{h+1}-1)
 * (each term ≤ V and → V/2, vs V per term for the plain tree: at T = 2^10
 * the maximum is 5.80·V against the tree's 10·V).
 *
 * Output rounding: unbiased randomized rounding.  Each N/D_h is split
 * exactly into a floor part q and a remainder r ∈ [0, D_h); r/D_h is
 * represented as floor(r·2^64/D_h) on the 2^-64 grid and the fractions are
 * summed (carry into the integer part).  With F ∈ [0, 2^64) the remaining
 * fraction, the output is the integer part plus Bernoulli(F/2^64), drawn
 * from the purpose label "honaker/round" at step t (no draw when F = 0).
 * Integer shifts of the estimate leave F, hence the coin, unchanged, so
 * the release stays exactly linear in the data.
 *
 * Reported variance: a rigorous upper bound (exact_variance = 0).  The
 * error is e = W + R with W the linear noise part (Var W = Var_noise(t))
 * and R the rounding residue.  Given W, R has mean −b(W) with
 * 0 <= b < 64·2^-64 (grid truncation) and conditional variance
 * f(1−f) <= 1/4, so
 *   E e² = E W² + E R² + 2·E[W·R] <= Var_noise + (1/4 + 2^-116) + 2^-57·sd_W
 *        <= Var_noise + 1/4 + 2^-56·(sd_W + 1).
 * At t = 1 (only bit 0 set, D_0 = 1) the estimate is an integer and the
 * variance is exactly Var_noise(1).  The bound overstates by at most 1/4.
 * Honaker's reduction itself is in Var_noise: at T = 2^10 its maximum is
 * 0.58 of the plain tree's (tests/unit/test_counter_tree_family.c).
 *
 * Privacy: identical to tree(T) — each entry enters at most L noised node
 * sums (one per level; entry 1 exactly L), ℓ1 = ℓ2² = L, so each node gets
 * DLap(L·entries·Δ/ε) or N_Z(L·entries·Δ²/(2ρ)), spending the whole
 * budget; the estimates and the rounding are post-processing.
 *
 * Memory O(log T) (per level: the open node's raw sum and the last
 * completed node's numerator); time O(log T) per step (ctz(t)+1 draws,
 * 2 on average). */
#include "core/counter_family.h"
#include "core/dp_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef __int128 i128;
typedef unsigned __int128 u128;

typedef struct honaker_state {
    unsigned  levels;
    dp_cnoise noise;
    int64_t   acc[DP_BINTREE_MAX_LEVELS];   /* raw sum of the open node per level */
    i128      num[DP_BINTREE_MAX_LEVELS];   /* N of the last completed node per level */
} honaker_state;

static int honaker_init(dp_counter *c, char *errstr, size_t errstr_size)
{
    honaker_state *s = calloc(1, sizeof *s);
    if (!s)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    s->levels = dp_floor_log2(c->cfg.horizon) + 1;
    int rc = dp_cnoise_calibrate(c, (double)s->levels, (double)s->levels, 1.0, &s->noise,
                                 errstr, errstr_size);
    if (rc != DP_OK) {
        free(s);
        return rc;
    }
    c->impl = s;
    return DP_OK;
}

static uint64_t denom(unsigned h)
{
    return h >= 63 ? UINT64_MAX : (2ull << h) - 1;   /* 2^{h+1} - 1 */
}

/* Σ_{bit h of t} num[h] / D_h as an integer part *whole and a fraction
 * *frac on the 2^-64 grid, see the header comment.  DP_ERANGE if the
 * integer part (plus a possible round-up) does not fit int64. */
static int honaker_prefix(const honaker_state *s, uint64_t t, int64_t *whole_out, uint64_t *frac_out)
{
    i128 whole = 0;
    u128 frac = 0;
    for (unsigned h = 0; h < s->levels; h++) {
        if (!((t >> h) & 1u))
            continue;
        i128 d = (i128)denom(h);
        i128 q = s->num[h] / d, r = s->num[h] % d;
        if (r < 0) {            /* floor division */
            q -= 1;
            r += d;
        }
        if (__builtin_add_overflow(whole, q, &whole))
            return DP_ERANGE;
        frac += ((u128)(uint64_t)r << 64) / (u128)(uint64_t)d;
    }
    i128 v = whole + (i128)(frac >> 64);
    if (v >= INT64_MAX || v < INT64_MIN)
        return DP_ERANGE;
    *whole_out = (int64_t)v;
    *frac_out = (uint64_t)frac;
    return DP_OK;
}

static int honaker_add(dp_counter *c, int64_t x, int64_t *out)
{
    honaker_state *s = c->impl;
    uint64_t t = c->t + 1;
    unsigned top = (unsigned)__builtin_ctzll(t);     /* levels 0..top complete at t */
    if (top >= s->levels)
        return DP_ERANGE;
    int64_t acc[DP_BINTREE_MAX_LEVELS];
    i128 fresh[DP_BINTREE_MAX_LEVELS];
    for (unsigned j = 0; j < s->levels; j++)
        if (dp_cadd(s->acc[j], x, &acc[j]) != DP_OK)
            return DP_ERANGE;
    for (unsigned j = 0; j <= top; j++) {
        char purpose[64];
        snprintf(purpose, sizeof purpose, "honaker/node/%u/%llu", j, (unsigned long long)(t >> j));
        dp_counter_trace_noised(c, t, purpose, acc[j]);
        int64_t y;
        if (dp_cadd(acc[j], dp_cnoise_draw(c, &s->noise, t, purpose), &y) != DP_OK)
            return DP_ERANGE;
        /* N_v = 2^j·y_v + N_left + N_right: the left child is the level
         * j-1 node completed 2^{j-1} steps ago (still in num[j-1]), the
         * right child the one just completed at this step. */
        i128 n = (i128)y * ((i128)1 << j);
        if (j > 0 && (__builtin_add_overflow(n, s->num[j - 1], &n) ||
                      __builtin_add_overflow(n, fresh[j - 1], &n)))
            return DP_ERANGE;
        fresh[j] = n;
    }
    /* Compute the output on a scratch copy so any failure leaves the state
     * unchanged. */
    honaker_state next = *s;
    for (unsigned j = 0; j < s->levels; j++)
        next.acc[j] = j <= top ? 0 : acc[j];
    for (unsigned j = 0; j <= top; j++)
        next.num[j] = fresh[j];
    int64_t o;
    uint64_t frac;
    int rc = honaker_prefix(&next, t, &o, &frac);
    if (rc != DP_OK)
        return rc;
    if (frac != 0) {
        dp_drbg g;
        dp_counter_drbg(c, &g, t, "honaker/round");
        o += dp_drbg_u64(&g) < frac;   /* Bernoulli(frac / 2^64) */
        dp_drbg_wipe(&g);
    }
    *s = next;
    *out = o;
    return DP_OK;
}

/* Var_noise(t) = V·Σ_{bit h of t} 2^h/(2^{h+1}−1) exactly, plus the
 * randomized-rounding bound of the header comment. */
static double honaker_variance(const dp_counter *c, uint64_t t)
{
    const honaker_state *s = c->impl;
    double v = 0.0;
    for (unsigned h = 0; h < s->levels; h++)
        if ((t >> h) & 1u)
            v += s->noise.var / (2.0 - ldexp(1.0, -(int)h));   /* 2^h/(2^{h+1}-1) */
    if ((t & ~(uint64_t)1) == 0)
        return v;   /* only bit 0: the estimate is an integer, no rounding */
    return v + 0.25 + ldexp(sqrt(v) + 1.0, -56);
}

static int honaker_sensitivity(const dp_counter *c, double *l1, double *l2sq)
{
    const honaker_state *s = c->impl;
    *l1 = (double)s->levels;
    *l2sq = (double)s->levels;
    return DP_OK;
}

static int honaker_save(const dp_counter *c, dp_buf *b)
{
    const honaker_state *s = c->impl;
    dp_buf_put_u32(b, s->levels);
    for (unsigned j = 0; j < s->levels; j++) {
        dp_buf_put_i64(b, s->acc[j]);
        dp_buf_put_u64(b, (uint64_t)((u128)s->num[j] >> 64));
        dp_buf_put_u64(b, (uint64_t)(u128)s->num[j]);
    }
    return dp_buf_status(b);
}

static int honaker_load(dp_counter *c, dp_reader *r)
{
    honaker_state *s = c->impl;
    uint32_t levels = dp_reader_u32(r);
    if (dp_reader_status(r) != DP_OK || levels != s->levels)
        return DP_ECORRUPT;
    for (unsigned j = 0; j < s->levels; j++) {
        s->acc[j] = dp_reader_i64(r);
        uint64_t hi = dp_reader_u64(r), lo = dp_reader_u64(r);
        s->num[j] = (i128)(((u128)hi << 64) | lo);
    }
    return dp_reader_status(r);
}

static void honaker_fini(dp_counter *c)
{
    free(c->impl);
}

const dp_counter_ops dp_counter_ops_honaker = {
    .kind = DP_COUNTER_HONAKER,
    .bounded = 1,
    .supports_pure = 1,
    .supports_zcdp = 1,
    .exact_variance = 0,   /* rounding: a rigorous bound, see the header */
    .init = honaker_init,
    .add = honaker_add,
    .variance = honaker_variance,
    .sensitivity = honaker_sensitivity,
    .save = honaker_save,
    .load = honaker_load,
    .fini = honaker_fini,
};
