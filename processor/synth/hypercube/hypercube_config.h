/* hypercube_config.h — the validated JSON configuration of `hypercube`
 * (He, Vershynin, Zhu 2024, seed 004; docs/privacy.md §8).
 *
 * Keys (unknown keys refused; every error names its key):
 *   dims                d (default: the box's dimension, else 2)
 *   box                 [[min, max], …] one pair per dimension, mapped onto [0,1]^d
 *                       (default the unit cube)
 *   epsilon             pure ε-DP, event-level, replacement neighbours: one point
 *                       replaced at one time (required)
 *   points_per_step     b: a step holds at most b points, the paper's times
 *                       t+1..t+b (default 1, the paper's setting)
 *   max_depth           D: the partition stops refining at depth D (memory bound,
 *                       2^(D+1) cells; default 20)
 *   output              "full" (default: all t points) | "delta" (changes since the
 *                       last release)
 *   max_release_points  a FULL release with more points is cut and flagged (default 10^7)
 *   variant             "dense" (the default since issue 38, docs/privacy.md §8.1:
 *                       refinement waits until a depth's counts can carry it, each cell
 *                       counts by epochs with the whole level budget on one Laplace draw
 *                       instead of Alg. 2 + fold) | "paper" (seed 004 as written, §8)
 *   epochs_per_level    "dense" only: q, the epochs a level is cut into (default 4)
 *   depth_snr           "dense" only: c, depth j is created once t_r/2^j >= c·(one epoch's
 *                       noise sd at the finest depth) (default 1; 2 for d = 1)
 *   split_threshold     "dense" only: κ, the consistency step subtracts κ·(one epoch's
 *                       noise sd) from the children's counts before clamping (default 2)
 *   delta               accepted and unused (pure ε) */
#ifndef DP_HYPERCUBE_CONFIG_H
#define DP_HYPERCUBE_CONFIG_H

#include <jansson.h>
#include <stdint.h>

#include "synth/common/partition.h"

#define DP_HYPERCUBE_MAX_DEPTH 28          /* 2^29 cells of 48 bytes: the hard ceiling */
#define DP_HYPERCUBE_MAX_POINTS_PER_STEP ((uint64_t)1 << 32)

typedef struct dp_hypercube_config {
    dp_box   box;
    double   epsilon;
    uint64_t points_per_step;
    uint32_t max_depth;
    int      delta_output;
    uint64_t max_release_points;
    int      variant;              /* DP_HYPERCUBE_PAPER | DP_HYPERCUBE_DENSE */
    int      variant_explicit;     /* "variant" was given (else a paper-rule snapshot keeps its rule) */
    uint32_t epochs_per_level;     /* dense: q >= 1 */
    double   depth_snr;            /* dense: c > 0 */
    double   split_threshold;      /* dense: κ >= 0 */
} dp_hypercube_config;

enum { DP_HYPERCUBE_PAPER = 0, DP_HYPERCUBE_DENSE = 1 };

int dp_hypercube_config_parse(dp_hypercube_config *c, const json_t *cfg, char *errstr, size_t errstr_size);

/* The budget schedule (seed 004 eq. 4.1, 5.1; hypercube.c says why r is
 * capped at max_depth for d >= 2):
 *   d >= 2: ε_{j,r} = C₁·ε·α^{j−depth(r)}, α = 2^{(1−1/d)/2}, C₁ = (1 − 1/α)/2
 *           (depth(r) = min(r, D) for the paper's variant: the same formula)
 *   d = 1:  ε_{j,r} = 3ε/(π²(j+1)²)  (alpha = 1, C1 = 3/π² reported) */
void   dp_hypercube_schedule_constants(const dp_hypercube_config *c, double *alpha, double *C1);
double dp_hypercube_eps(const dp_hypercube_config *c, unsigned j, unsigned r);
/* The tree's depth at level r (public: a function of r and the configuration).
 *   paper: min(r, D).
 *   dense: the largest j <= min(r, D) with 2^r/ε / 2^j >= c·√2/ε_{j,·} — the
 *          cells' count under the uniform at the level's start is at least c
 *          standard deviations of one epoch's Laplace noise at that depth
 *          (ε_{j,·} = C₁ε for d >= 2, the finest depth's share in the
 *          renormalised schedule; 3ε/(π²(j+1)²) for d = 1); ε cancels, so
 *          the depth is r − k for a constant k (d >= 2, c = 1: k = 5 at d = 2,
 *          4 at d = 3). */
unsigned dp_hypercube_depth(const dp_hypercube_config *c, unsigned r);

/* What one point of a step at level r costs: twice (the replaced point and
 * its replacement) the sum over the depths that count it. */
double dp_hypercube_eps_point(const dp_hypercube_config *c, unsigned r);

#endif
