/* svt.h — the sparse-vector decision of `adaptive`'s DSFT and DSAT, in two
 * forms (docs/privacy.md §7):
 *
 *   corrected (the default; Lyu, Su, Li 2017 Alg. 1, c positives):
 *     ρ ~ Lap(Δ/ε_a) once; positive iff q_i + Lap(2cΔ/ε_b) >= T_i + ρ, with
 *     ε_a + ε_b = ε₁, ε_a : ε_b = 1 : (2c)^{2/3}, and T_i a PUBLIC path
 *     (DSAT moves and clips T_i itself, never the noisy threshold): ε₁-DP.
 *   paper (the published rule, NOT differentially private; comparison only):
 *     T̃ = T + Lap(2Δ/ε₁) once; positive iff q_i + Lap(4CΔ/ε₁) >= T̃_i, and
 *     DSAT moves and clips the NOISY threshold T̃_i to [0, 2] — once the
 *     clip binds the threshold noise is gone, and every later decision is a
 *     fresh comparison whose privacy loss adds up over the steps.
 *
 * Everything is on a fixed-point grid (the caller's q, T and Δ are grid
 * integers); the noise is discrete Laplace with scales rounded up.  The
 * caller counts positives and stops at c. */
#ifndef DP_SYNTH_SVT_H
#define DP_SYNTH_SVT_H

#include <stddef.h>
#include <stdint.h>

#include "core/drbg.h"
#include "core/rational.h"
#include "core/sample.h"

typedef struct dp_svt {
    int         paper;
    int64_t     delta;           /* Δ in grid units */
    int64_t     clip_hi;         /* the threshold's upper clip (2 in grid units) */
    double      eps_a, eps_b;    /* corrected: the split of ε₁ */
    dp_rational rho_scale, query_scale;
    dp_dlap     rho_noise, query_noise;
    /* state */
    int64_t     rho;             /* corrected: the threshold noise */
    int64_t     noisy_threshold; /* paper: T̃_i */
} dp_svt;

/* eps1: the decisions' budget; c: positives allowed (>= 1); C: the paper's
 * release count (its noise scale). */
int  dp_svt_prepare(dp_svt *s, double eps1, uint64_t c, uint64_t C, int64_t delta, int64_t clip_hi, int paper,
                    char *errstr, size_t errstr_size);
/* Draw the threshold noise (once, before the first decision); T0 the
 * starting threshold (grid). */
void dp_svt_start(dp_svt *s, int64_t T0, dp_drbg *g);
/* DSAT's move of the threshold by u (grid, >= 0) up or down: the paper
 * moves and clips its noisy threshold; the corrected form keeps none (the
 * caller moves its public T_i). */
void dp_svt_move(dp_svt *s, int64_t u, int up);
/* One decision on query q against the public threshold T (grid; ignored
 * by the paper form, which uses its own noisy threshold). */
int  dp_svt_decide(const dp_svt *s, int64_t q, int64_t T, dp_drbg *g);

#endif
