/* counter_hybrid.c — hybrid: the unbounded Hybrid Mechanism of Chan, Shi,
 * Song 2011 (§4: Logarithmic Mechanism + Binary Mechanism per range).
 *
 * Log layer (half the budget): at every t = 2^k the sum of the interval
 * I_k = (2^{k-1}, 2^k] (I_0 = {1}) is released once with noise and added
 * to β, so β_{2^k} = Σ_{s<=2^k} x_s + k+1 noises.
 * Range layer (other half): for t in the open range (2^k, 2^{k+1}) a fresh
 * binary-mechanism tree with horizon 2^k - 1 (L_k = k levels) counts the
 * entries 2^k+1 … t at local step u = t - 2^k, and
 *   out_t = β_{2^k} + tree_k(u);      out_{2^k} = β_{2^k}.
 *
 * Privacy.  Log layer: the intervals I_k partition the time line, so each
 * entry enters exactly one log sum (ℓ1 = ℓ2² = 1): DLap(entries·Δ/(ε/2))
 * resp. N_Z(entries·Δ²/(2·ρ/2)) per log sum spends ε/2 (ρ/2) over the
 * whole unbounded stream.  Range layer: the open ranges are disjoint and
 * chosen by t alone, so an entry enters one tree only; tree k has ℓ1 = ℓ2²
 * = k and is calibrated DLap(k·entries·Δ/(ε/2)) resp. N_Z(k·entries·Δ²/
 * (2·ρ/2)), i.e. ε/2 (ρ/2) — parallel composition over ranges.  The entry
 * 2^{k+1} that closes a range enters only the log layer.  Total ε (ρ).
 * dp_counter_sensitivity reports the normalised structure (2, 2): scaling
 * tree-k p-sums by 1/k (ℓ1) or 1/√k (ℓ2²) makes every noised quantity's
 * noise the same DLap(2·entries·Δ/ε) / N_Z(entries·Δ²/ρ) and the whole
 * vector a single mechanism with ℓ1 = ℓ2² = 1 + 1 = 2.
 *
 * Error at t, k = floor(log2 t), exact:
 *   (k+1)·Var(log noise) + popcount(t - 2^k)·Var(tree-k noise)
 * — O(log³ t) variance (k terms of variance ∝ k²), unbounded.
 * Memory O(log t) (the open range's tree and its prepared sampler);
 * time O(log t) per step (one draw). */
#include "core/counter_family.h"
#include "core/dp_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct hybrid_state {
    dp_cnoise  log_noise;
    dp_cnoise  tree_noise;     /* the open range's calibration (k = tree.levels) */
    int64_t    beta;           /* Σ noisy log sums so far */
    int64_t    log_acc;        /* exact sum since the last power of two */
    dp_bintree tree;           /* the open range's tree */
} hybrid_state;

static int is_pow2(uint64_t t) { return t && !(t & (t - 1)); }

/* Range k (k >= 1): tree with ℓ1 = ℓ2² = k at half the budget. */
static int hybrid_range_noise(const dp_counter *c, unsigned k, dp_cnoise *n)
{
    return dp_cnoise_calibrate(c, (double)k, (double)k, 0.5, n, NULL, 0);
}

static int hybrid_init(dp_counter *c, char *errstr, size_t errstr_size)
{
    hybrid_state *s = calloc(1, sizeof *s);
    if (!s)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    int rc = dp_cnoise_calibrate(c, 1.0, 1.0, 0.5, &s->log_noise, errstr, errstr_size);
    if (rc == DP_OK)
        rc = dp_cnoise_calibrate(c, 1.0, 1.0, 0.5, &s->tree_noise, errstr, errstr_size);
    if (rc != DP_OK) {
        free(s);
        return rc;
    }
    c->impl = s;
    return DP_OK;
}

static int hybrid_add(dp_counter *c, int64_t x, int64_t *out)
{
    hybrid_state *s = c->impl;
    uint64_t t = c->t + 1;
    unsigned k = dp_floor_log2(t);
    int64_t acc;
    if (dp_cadd(s->log_acc, x, &acc) != DP_OK)
        return DP_ERANGE;
    if (is_pow2(t)) {
        /* Prepare the next range's sampler first so a failure (noise out of
         * the samplers' range, only at astronomically large k) leaves the
         * state unchanged and fails closed. */
        dp_cnoise next = s->tree_noise;
        if (k >= 1 && hybrid_range_noise(c, k, &next) != DP_OK)
            return DP_ERANGE;
        char purpose[32];
        snprintf(purpose, sizeof purpose, "log/%u", k);
        dp_counter_trace_noised(c, t, purpose, acc);
        int64_t noisy, beta;
        if (dp_cadd(acc, dp_cnoise_draw(c, &s->log_noise, t, purpose), &noisy) != DP_OK ||
            dp_cadd(s->beta, noisy, &beta) != DP_OK)
            return DP_ERANGE;
        s->beta = beta;
        s->log_acc = 0;
        s->tree_noise = next;
        dp_bintree_reset(&s->tree, k);   /* tree for (2^k, 2^{k+1}): horizon 2^k - 1 */
        *out = beta;
        return DP_OK;
    }
    char prefix[32];
    snprintf(prefix, sizeof prefix, "tree/%u/", k);
    dp_bintree tree = s->tree;        /* commit only if every step succeeds */
    int64_t tr, total;
    int rc = dp_bintree_add(c, &tree, &s->tree_noise, prefix, t, t - (1ull << k), x, &tr);
    if (rc != DP_OK)
        return rc;
    if (dp_cadd(s->beta, tr, &total) != DP_OK)
        return DP_ERANGE;
    s->tree = tree;
    s->log_acc = acc;
    *out = total;
    return DP_OK;
}

static double hybrid_variance(const dp_counter *c, uint64_t t)
{
    const hybrid_state *s = c->impl;
    unsigned k = dp_floor_log2(t);
    double v = (double)(k + 1) * s->log_noise.var;
    if (!is_pow2(t)) {
        dp_cnoise n;
        if (hybrid_range_noise(c, k, &n) != DP_OK)
            return NAN;
        v += (double)__builtin_popcountll(t - (1ull << k)) * n.var;
    }
    return v;
}

static int hybrid_sensitivity(const dp_counter *c, double *l1, double *l2sq)
{
    *l1 = 2.0;
    *l2sq = 2.0;
    return DP_OK;
}

static int hybrid_save(const dp_counter *c, dp_buf *b)
{
    const hybrid_state *s = c->impl;
    dp_buf_put_i64(b, s->beta);
    dp_buf_put_i64(b, s->log_acc);
    dp_bintree_save(&s->tree, b);
    return dp_buf_status(b);
}

static int hybrid_load(dp_counter *c, dp_reader *r)
{
    hybrid_state *s = c->impl;
    s->beta = dp_reader_i64(r);
    s->log_acc = dp_reader_i64(r);
    /* The open range's tree has k = floor(log2 t) levels (none before t = 1). */
    unsigned k = c->t ? dp_floor_log2(c->t) : 0;
    if (k >= 1 && hybrid_range_noise(c, k, &s->tree_noise) != DP_OK)
        return DP_ECORRUPT;
    dp_bintree_reset(&s->tree, k);
    return dp_bintree_load(&s->tree, r);
}

static void hybrid_fini(dp_counter *c)
{
    free(c->impl);
}

const dp_counter_ops dp_counter_ops_hybrid = {
    .kind = DP_COUNTER_HYBRID,
    .bounded = 0,
    .supports_pure = 1,
    .supports_zcdp = 1,
    .exact_variance = 1,
    .init = hybrid_init,
    .add = hybrid_add,
    .variance = hybrid_variance,
    .sensitivity = hybrid_sensitivity,
    .save = hybrid_save,
    .load = hybrid_load,
    .fini = hybrid_fini,
};
