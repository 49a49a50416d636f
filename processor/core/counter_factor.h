/* counter_factor.h — helpers shared by the matrix-factorization counters
 * sqrt(T) and blt(T, d) (private to core/; counter_factor.c).
 *
 * Both kinds release A x + noise for the prefix-sum matrix A through a
 * factorization A = L·R, and both keep privacy *exact* on the integer
 * lattice in the same way (the argument is spelled out in
 * counter_sqrt.c):
 *
 *   1. an integer-valued map f(x) ≈ M·R x (M = 2^m) with a proven ℓ2 (or
 *      ℓ1) sensitivity bound, computed from the integer inputs only;
 *   2. w = f(x) + z with z iid exact N_Z(σ²) (or DLap(b)) on Z^T, calibrated
 *      to that bound: w is ρ-zCDP (ε-DP) by CKS 2020 Thm 4 (the Laplace
 *      mechanism), because f(x) - f(x') is an integer vector;
 *   3. every release is a deterministic function of w (plus independent
 *      rounding coins): post-processing, so it costs nothing further.
 *
 * The output is w decoded by (1/M)·A·R^{-1} in fixed point and rounded to
 * an integer by *unbiased randomized rounding* (floor + Bernoulli(frac),
 * an exact integer Bernoulli).  Its error is N_t + β_t + e_t with N_t the
 * exactly linear noise term, |β_t| <= a deterministic bound (fixed-point
 * decoding and, for blt, the rounding inside f), and E[e_t | N, β] = 0,
 * E[e_t²] <= 1/4; hence the reported variance bound
 *   E[err_t²] <= (sqrt(Var N_t) + β_t)² + 1/4        (fac_mse_bound). */
#ifndef DP_COUNTER_FACTOR_H
#define DP_COUNTER_FACTOR_H

#include "core/counter_impl.h"

typedef __int128 dp_i128;

/* Largest |x_t| the factorization counters accept (DP_EINVAL beyond):
 * keeps every 128-bit intermediate far from overflow at T <= 2^24. */
#define DP_FACTOR_MAX_INPUT ((int64_t)1 << 24)
#define DP_FACTOR_MAX_HORIZON ((uint64_t)1 << 24)

typedef struct dp_fac_noise {
    dp_privacy_model model;
    dp_dlap     dlap;
    dp_dgauss   dgauss;
    dp_rational param;     /* DLap scale b or DGauss σ², in lattice units */
    double      var;       /* exact variance of one draw */
} dp_fac_noise;

/* Lattice scale exponent m (M = 2^m) putting the noise parameter of a
 * mechanism whose unit-scale parameter is `unit` (σ² for zCDP, b for pure)
 * near the top of the exact samplers' range: σ_z² = M²·unit <= 2^38,
 * b = M·unit <= 2^38; clamped to [lo, hi]. */
unsigned dp_fac_scale_bits(dp_privacy_model model, double unit, unsigned lo, unsigned hi);

/* Calibrate integer-lattice noise for the whole budget: pure ε:
 * DLap(l1/ε); zCDP ρ: N_Z(l2sq/(2ρ)), where l1 / l2sq are the ℓ1 / squared
 * ℓ2 sensitivities of f in lattice units *including* entries and Δ.  The
 * parameter is rounded up (more noise) with a relative margin of 2^-40
 * that dominates the double-precision error of the computation. */
int dp_fac_noise_calibrate(const dp_counter *c, double l1, double l2sq, dp_fac_noise *n,
                           char *errstr, size_t errstr_size);

int64_t dp_fac_noise_draw(const dp_counter *c, const dp_fac_noise *n, uint64_t step);

/* floor(v / 2^shift) + Bernoulli(frac), frac = (v mod 2^shift)/2^shift,
 * with the coin drawn for purpose "round" at `step` (exact integer
 * Bernoulli): unbiased, E[(out - v/2^shift)² | v] <= 1/4.  shift <= 62.
 * DP_ERANGE if the result does not fit int64. */
int dp_fac_round(const dp_counter *c, uint64_t step, dp_i128 v, unsigned shift, int64_t *out);

/* (sqrt(var) + beta)² + 1/4 — see the header comment. */
double dp_fac_mse_bound(double var, double beta);

/* Floor division of a signed 128-bit value by 2^shift. */
static inline dp_i128 dp_fac_floor_shift(dp_i128 v, unsigned shift)
{
    dp_i128 q = v / ((dp_i128)1 << shift);
    if (q * ((dp_i128)1 << shift) != v && v < 0)
        q -= 1;
    return q;
}

/* sqrt(T) internals for its tests (counter_sqrt.c): c_k = C(2k,k)/4^k for
 * k < n, and the lattice exponent g (r̂_k = round(2^g c_k)) of a counter. */
void     dp_sqrt_coeffs(double *c, uint64_t n);
unsigned dp_sqrt_lattice_bits(const dp_counter *c);

void    dp_fac_put_i128(dp_buf *b, dp_i128 v);
dp_i128 dp_fac_get_i128(dp_reader *r);

#endif
