/* rational.h — exact non-negative rationals for noise parameters, and the
 * fixed-point grid on which real-valued statistics are released.
 *
 * Noise parameters (Laplace scale t/s, Gaussian variance n/d) are rationals
 * so that the samplers can run in exact integer arithmetic (CKS 2020). */
#ifndef DP_RATIONAL_H
#define DP_RATIONAL_H

#include <stddef.h>
#include <stdint.h>

typedef struct dp_rational {
    uint64_t num;
    uint64_t den;   /* > 0 */
} dp_rational;

/* Parse "a/b", an integer "a", or a decimal "12.375" / "1e-3" into a reduced
 * rational.  Decimals are converted exactly (1.1 = 11/10, not the nearest
 * double).  Rejects negatives, zero denominators and values whose reduced
 * form does not fit in 64-bit numerator/denominator.  Returns 0 or DP_EINVAL
 * / DP_ERANGE with a message. */
int dp_rational_parse(const char *text, dp_rational *out, char *errstr, size_t errstr_size);

/* Reduce by the gcd. den must be > 0. */
dp_rational dp_rational_reduce(dp_rational r);

/* Nearest rational with denominator dividing 2^20 (used to turn a
 * real-valued noise parameter derived at run time, e.g. (T-k+1)/(2ρ), into
 * an exact rational).  Rounds *up* (towards more noise) so privacy never
 * degrades through rounding.  Returns DP_ERANGE if x is not finite,
 * negative, or too large. */
int dp_rational_from_double_up(double x, dp_rational *out);

double dp_rational_to_double(dp_rational r);

/* --- fixed-point grid ----------------------------------------------------
 * A real statistic v is released on the grid 2^-k (k = frac_bits, stated
 * in every release's metadata): encode q = floor(v·2^k + 1/2), add integer
 * noise to q with an exact sampler, publish q + Z (and/or (q + Z)·2^-k).
 *
 * Sensitivity on the grid: rounding half up is translation-equivariant,
 * and for any reals a >= b, floor(a + 1/2) - floor(b + 1/2) is an integer
 * < (a - b) + 1, hence <= ceil(a - b).  So a statistic with real
 * sensitivity Δ has integer sensitivity ceil(Δ·2^k) on the grid; calibrate
 * DLap / DGauss to that (dp_fixed_sensitivity).  Rounding is a
 * post-processing-free, data-independent map, so no other privacy cost. */

/* q = floor(v·2^k + 1/2) exactly.  DP_ERANGE if v is not finite, k > 62 or
 * |v·2^k| >= 2^62 (keeps q + noise far from int64 overflow). */
int dp_fixed_encode(double v, unsigned frac_bits, int64_t *out);
/* ceil(Δ·2^k), the grid sensitivity of a statistic with real sensitivity
 * Δ >= 0 (see above).  DP_ERANGE if Δ is negative/not finite, k > 62 or
 * the result would be >= 2^62. */
int dp_fixed_sensitivity(double delta, unsigned frac_bits, uint64_t *out);
/* Unchecked convenience form of dp_fixed_encode: saturates to ±2^62 when
 * out of range and returns 0 for NaN or k > 62.  Prefer dp_fixed_encode. */
int64_t dp_fixed_from_double(double v, unsigned frac_bits);
/* q·2^-k (exact whenever |q| < 2^53). */
double  dp_fixed_to_double(int64_t q, unsigned frac_bits);

#endif
