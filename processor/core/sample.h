/* sample.h — exact discrete samplers on the integers (docs/privacy.md §1;
 * Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential
 * Privacy", NeurIPS 2020, Algorithms 1–3).
 *
 * All arithmetic is on integers (128-bit where 64-bit products overflow);
 * randomness comes only from a dp_drbg.  No floating point touches a
 * sampled value, which rules out the Mironov 2012 attack on float Laplace.
 *
 * Privacy: DLap(Δ/ε) is ε-DP for integer ℓ1 sensitivity Δ;
 *          DGauss(σ²) is Δ²/(2σ²)-zCDP for ℓ2 sensitivity Δ.
 *
 * Supported ranges (anything outside returns DP_ERANGE, never UB):
 *   Bernoulli(n/d):        0 <= n <= d, 1 <= d <= 2^64-1.
 *   BernoulliExp(n/d):     0 <= n, 1 <= d <= 2^62, n/d <= 2^20.
 *   DLap(t/s):             1 <= t, s <= 2^62 and 2^-20 <= t/s <= 2^40.
 *   DGauss(n/d):           1 <= d <= 2^30, σ² = n/d in [2^-10, 2^40], and
 *                          2·n·d·(floor(σ)+1)² <= 2^106 (with d = 1 this
 *                          allows every σ² up to 2^40; with d = 2^20, the
 *                          grid of dp_rational_from_double_up, σ² up to
 *                          about 2^32).  Bounds are checked in exact integer
 *                          arithmetic by the prepare functions.
 *
 * Exactness: Bernoulli and BernoulliExp are exact.  DLap and DGauss are
 * exact samplers of the named distribution conditioned on |Y| <= ymax
 * (DLap: ymax = 2^62 so the value fits int64; DGauss: the largest |Y| for
 * which CKS Alg. 3's acceptance test fits 128-bit arithmetic, >= 2^10·σ).
 * The excluded mass is below e^(-2^19) for every supported parameter (see
 * sample.c), i.e. it adds δ < e^(-2^19) to the stated guarantees; the
 * ChaCha20 DRBG's own distinguishing advantage (~2^-128) dominates it. */
#ifndef DP_SAMPLE_H
#define DP_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/drbg.h"
#include "core/rational.h"

/* Bernoulli(n/d): 1 with probability n/d. */
int dp_sample_bernoulli(dp_drbg *g, uint64_t n, uint64_t d, int *out);
/* Bernoulli(exp(-n/d)). */
int dp_sample_bernoulli_exp(dp_drbg *g, uint64_t n, uint64_t d, int *out);

/* Prepared samplers: validate once, draw many times. */
typedef struct dp_dlap {
    uint64_t t, s;       /* scale t/s, reduced */
} dp_dlap;

typedef struct dp_dgauss {
    uint64_t n, d;       /* σ² = n/d, reduced */
    uint64_t t;          /* floor(sqrt(σ²)) + 1: the Laplace scale of the proposal */
    dp_dlap  proposal;
    /* Derived once in prepare (all exact integers): */
    uint64_t td;         /* t·d  (< 2^51) */
    uint64_t ymax;       /* largest |Y| whose acceptance test fits 128 bits */
    unsigned __int128 den; /* 2·n·d·t²  (<= 2^106), acceptance denominator */
} dp_dgauss;

int dp_dlap_prepare(dp_dlap *p, dp_rational scale, char *errstr, size_t errstr_size);
int dp_dgauss_prepare(dp_dgauss *p, dp_rational sigma2, char *errstr, size_t errstr_size);

/* Draw one value. Cannot fail once prepared. */
int64_t dp_dlap_sample(const dp_dlap *p, dp_drbg *g);
int64_t dp_dgauss_sample(const dp_dgauss *p, dp_drbg *g);

/* Exact (to double precision) moments and PMFs, for accounting, analytic
 * counter variances and goodness-of-fit tests. */
double dp_dlap_variance(dp_rational scale);      /* 2e^{-1/b}/(1-e^{-1/b})² */
double dp_dgauss_variance(dp_rational sigma2);   /* Σ x² e^{-x²/2σ²} / Σ e^{-x²/2σ²} (≤ σ²) */
double dp_dlap_pmf(dp_rational scale, int64_t x);
double dp_dgauss_pmf(dp_rational sigma2, int64_t x);

#endif
