/* simplex.h — the Euclidean projection of a vector onto the scaled simplex
 * {x : x ≥ 0, Σx = total}: the non-negative vector with a given total that
 * is closest to a noisy measurement in L2.
 *
 * `marginal`'s fits need non-negative targets.  Clipping a noisy histogram
 * at zero (max(y, 0)) adds E[noise⁺] to every empty cell — and because
 * seed 001's measurements are anchored on the previous synthetic data
 * (m(t, W) = C_W(t) + r(t, W), §6.2), that bias would be added again at
 * every selection and compound over the stream.  The projection subtracts
 * one common amount δ from every cell and zeroes those below it, keeping
 * the measured total: "Norm-Sub" in Wang, Lopuhaä-Zwakenberg et al.,
 * "Locally differentially private frequency estimation with consistency"
 * (NDSS 2020); the algorithm is Duchi, Shalev-Shwartz, Singer, Chandra,
 * "Efficient projections onto the ℓ1-ball" (ICML 2008), Fig. 1.
 * Post-processing of charged outputs: no privacy cost. */
#ifndef DP_CORE_SIMPLEX_H
#define DP_CORE_SIMPLEX_H

#include <stdint.h>

/* v (n values) ← its projection onto {x ≥ 0, Σx = total}.  With total ≤ 0
 * (or not finite) the only non-negative vector of that total is 0: v ← 0.
 * Non-finite entries count as -inf (they end at 0).  The result depends on
 * the values only, not on their order or on ties.  DP_OK, DP_EINVAL for
 * n > 0 with v NULL, or DP_ENOMEM (one scratch copy of v is sorted). */
int dp_project_simplex(double *v, uint64_t n, double total);

#endif
