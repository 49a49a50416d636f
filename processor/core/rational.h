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
 * A real value v is released as the integer round(v · 2^frac_bits); the
 * grid (2^-frac_bits) is stated in every release's metadata. */
int64_t dp_fixed_from_double(double v, unsigned frac_bits);
double  dp_fixed_to_double(int64_t q, unsigned frac_bits);

#endif
