/* privtree.h — PrivTree's split decision (Zhang, Xiao, Xie 2016, Alg. 1 and
 * Thm 4.2; seed 002 Alg. 2) with exact discrete Laplace noise, for
 * `spatial` and for the offline PrivTree baselines of bench/accuracy_spatial.
 *
 * Fanout β = 2.  For a node v at depth d with count c(v):
 *   b = max(c(v) − d·δ, θ − δ);  split iff d < h_max and b + Lap(λ) > θ
 * with λ = (2β−1)/((β−1)·ε) = 3/ε and δ = λ·ln β.  This costs ε for one
 * record added or removed, provided c(child) <= c(parent) everywhere (the
 * proof's monotonicity; see spatial.c for the variant that keeps it).
 *
 * Exactness: c is scaled by S = 2^16 and floored (a record moves it by
 * exactly S), δ is rounded up to the grid (a larger δ only lowers the
 * bias), and the noise is DLap(λ·S) with the scale rounded up.  The proof
 * uses only that shifting the argument by x changes the probability of
 * crossing the threshold by at most e^{x/λ}, and exactly e^{x/λ} in the
 * upper tail; the discrete Laplace on the grid has both (its survival
 * function is geometric above 0). */
#ifndef DP_SYNTH_PRIVTREE_H
#define DP_SYNTH_PRIVTREE_H

#include <stddef.h>
#include <stdint.h>

#include "core/drbg.h"
#include "core/rational.h"
#include "core/sample.h"

#define DP_PRIVTREE_GRID_BITS 16

typedef struct dp_privtree {
    double      epsilon;      /* ε of the tree */
    double      lambda;       /* the noise scale, in counts */
    dp_rational scale;        /* λ·S, rounded up */
    dp_dlap     noise;
    int64_t     delta_grid;   /* ⌈δ·S⌉ */
    int64_t     theta_grid;   /* round(θ·S) */
    uint32_t    max_depth;
} dp_privtree;

int dp_privtree_prepare(dp_privtree *p, double epsilon, double theta, uint32_t max_depth, char *errstr,
                        size_t errstr_size);

/* Does the node at `depth` with count base + delta split?  base may be
 * real (|base| is clamped at 10^12), delta is an integer count.  Draws one
 * noise value from g when depth < max_depth, none otherwise. */
int dp_privtree_split(const dp_privtree *p, double base, int64_t delta, uint32_t depth, dp_drbg *g);

static inline double dp_privtree_delta(const dp_privtree *p)
{
    return (double)p->delta_grid / (double)(1 << DP_PRIVTREE_GRID_BITS);
}

static inline double dp_privtree_theta(const dp_privtree *p)
{
    return (double)p->theta_grid / (double)(1 << DP_PRIVTREE_GRID_BITS);
}

#endif
