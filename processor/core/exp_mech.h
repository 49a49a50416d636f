/* exp_mech.h — the exponential mechanism, sampled exactly (docs/privacy.md §1;
 * McSherry & Talwar 2007).
 *
 * Candidates carry integer utilities U_i on a fixed-point grid chosen by
 * the caller; ΔU is the utility's sensitivity in grid units (a caller that
 * rounds real utilities onto the grid adds 1 for the rounding).  The
 * mechanism returns i with probability
 *
 *     P[i] = exp(ε·U_i / (2ΔU)) / Σ_j exp(ε·U_j / (2ΔU)),
 *
 * which is ε-DP, and ε²/8-zCDP (Cesar & Rogers 2021) — the zCDP figure is
 * for this mechanism only; do not apply it to permute-and-flip.
 *
 * How it is sampled, exactly: draw a candidate i uniformly, accept it with
 * probability exp(-ε·(U_max - U_i)/(2ΔU)) by CKS 2020's Bernoulli(exp(-γ))
 * on the rational γ, otherwise start again.  A round accepts i with
 * probability (1/n)·exp(ε(U_i - U_max)/(2ΔU)), proportional to the target
 * weight, and rounds are independent, so the output has exactly the law
 * above.  The expected number of rounds is n / Σ_j exp(-γ_j) <= n (the best
 * candidate has γ = 0).  No floating point touches the decision.
 *
 * One truncation, stated: a candidate with γ > 2^20 (weight < e^{-2^20}
 * relative to the best) is rejected without a draw; the law then differs
 * from the exact one by less than n·e^{-2^20} in total variation, far below
 * the DRBG's own ~2^-128 distinguishing advantage.
 *
 * Ranges (DP_ERANGE otherwise): ε in [2^-20, 2^20], ε kept as a rational
 * with denominator 2^20 rounded DOWN (a smaller ε is more private);
 * 1 <= ΔU <= 2^21; |U_i| <= 2^61. */
#ifndef DP_EXP_MECH_H
#define DP_EXP_MECH_H

#include <stddef.h>
#include <stdint.h>

#include "core/drbg.h"

#define DP_EXP_MECH_MAX_DELTA   ((uint64_t)1 << 21)
#define DP_EXP_MECH_MAX_UTILITY ((int64_t)1 << 61)

typedef struct dp_exp_mech {
    uint64_t eps_num;     /* ε = eps_num / 2^20, rounded down */
    uint64_t delta_u;     /* ΔU in grid units */
    double   epsilon;     /* eps_num / 2^20: the ε actually used (<= the requested one) */
} dp_exp_mech;

int dp_exp_mech_prepare(dp_exp_mech *m, double epsilon, uint64_t delta_u, char *errstr, size_t errstr_size);

/* Choose one of utility[0..n) (n >= 1); DP_ERANGE for a utility out of
 * range (nothing drawn then). */
int dp_exp_mech_select(const dp_exp_mech *m, dp_drbg *g, const int64_t *utility, size_t n, size_t *chosen);

/* exp(ε·(U_i - U_max)/(2ΔU)) / Σ_j …: the exact law, in doubles, for tests. */
int dp_exp_mech_probabilities(const dp_exp_mech *m, const int64_t *utility, size_t n, double *p);

#endif
