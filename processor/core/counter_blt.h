/* counter_blt.h — internals of the blt(T, d) counter exposed for its unit
 * tests and the counters benchmark (private to core/; counter_blt.c and
 * counter_blt_fit.c). */
#ifndef DP_COUNTER_BLT_H
#define DP_COUNTER_BLT_H

#include "core/counter_impl.h"

#define DP_BLT_DEFAULT_BUFFERS 6u
#define DP_BLT_MAX_BUFFERS 16u

/* The BLT generating function r(X) = 1 + Σ_i ω_i X/(1 - θ_i X), i.e.
 * r_0 = 1, r_k = Σ_i ω_i θ_i^{k-1}.  Fit (θ, ω), θ_i ∈ (0,1), ω_i > 0, to
 * the horizon-T square-root factorization (see counter_blt.c).  Returns
 * DP_OK or DP_ENOMEM / DP_EINVAL. */
int dp_blt_fit(uint64_t T, unsigned d, double *theta, double *omega);

/* The quadrature the fit searches over: d nodes θ_i equally spaced in
 * v = log(1-θ) from vmax (θ_min) down to vmin (θ_max), ω_i = lam × the
 * arcsine law's mass of node i's cell × θ_i. */
void dp_blt_quadrature(unsigned d, double vmin, double vmax, double lam, double *theta, double *omega);

/* Fit every horizon 1..max_horizon with d buffers into the process's memo
 * (counter_blt_fit.c), several searches at a time; later dp_blt_fit calls
 * of those horizons find them.  The same doubles as one dp_blt_fit per
 * horizon.  DP_OK, DP_ENOMEM or DP_EINVAL. */
int dp_blt_fit_horizons(uint64_t max_horizon, unsigned d);

/* For R = Toeplitz(r) (T x T) and L = A R^{-1}: *sens2 = max column
 * Σ r_k² (= Σ_{k<T} r_k², by the O(T·d) recursion), *maxvar = max_t
 * Σ_{j<t} l_j² (= Σ_{j<T} l_j²), *meanvar = mean over t of Σ_{j<t} l_j².
 * The max-over-t error variance of the factorization mechanism at unit ℓ2
 * sensitivity cost is sens2·maxvar (the fit's objective). */
int dp_blt_objective(uint64_t T, unsigned d, const double *theta, const double *omega,
                     double *sens2, double *maxvar, double *meanvar);

/* The quantised parameters a blt counter actually uses (θ̂_i = Θ_i/2^32,
 * ω̂_i = Ω_i/2^32), its lattice scale M = 2^m and rounding bound e_f. */
int dp_blt_params(const dp_counter *c, unsigned *d, double *theta, double *omega,
                  unsigned *m, double *e_f);

/* Run the counter's own fixed-point decoder on w = z alone (x = 0, so the
 * encoder contributes nothing) and return the unrounded decoded values
 * Y_t / 2^(m+G) for t = 1..n: the noise recursion under test. */
int dp_blt_decode_only(const dp_counter *c, const int64_t *z, uint64_t n, double *out);

#endif
