/* counter_family.h — helpers shared by the tree-family counter kinds
 * (block, block_unbounded, tree, hybrid, honaker); private to core/.
 *
 * dp_cnoise: one calibrated integer noise distribution (DLap for pure ε,
 * DGauss for ρ-zCDP) together with the exact variance of its rational
 * parameter, drawn through dp_counter_drbg so every draw is a function of
 * (key, stream, label/purpose, step) only.
 *
 * dp_bintree: the binary mechanism's state (seed 000 Alg. 3 / CSS 2011
 * Binary Mechanism), used by tree(T) and by each range of hybrid. */
#ifndef DP_COUNTER_FAMILY_H
#define DP_COUNTER_FAMILY_H

#include "core/counter_impl.h"

typedef struct dp_cnoise {
    dp_privacy_model model;
    dp_dlap     dlap;
    dp_dgauss   dgauss;
    dp_rational param;          /* DLap scale b, or DGauss σ² */
    double      var;            /* exact variance of one draw */
} dp_cnoise;

/* Calibrate for noised quantities whose vector has ℓ1 sensitivity `l1`
 * (pure) or squared ℓ2 sensitivity `l2sq` (zCDP) per unit change, spending
 * `fraction` of the counter's budget (dp_counter_calibrate_dlap/dgauss). */
int dp_cnoise_calibrate(const dp_counter *c, double l1, double l2sq, double fraction,
                        dp_cnoise *n, char *errstr, size_t errstr_size);

/* One draw for `purpose` keyed at `step`. */
int64_t dp_cnoise_draw(const dp_counter *c, const dp_cnoise *n, uint64_t step, const char *purpose);

/* Checked int64 addition: DP_ERANGE instead of signed overflow. */
int dp_cadd(int64_t a, int64_t b, int64_t *out);

/* floor(log2 x) for x >= 1. */
unsigned dp_floor_log2(uint64_t x);

#define DP_BINTREE_MAX_LEVELS 64

/* Binary mechanism over local steps u = 1..2^levels - 1.  Level i holds
 * the p-sum α_i of the dyadic interval of length 2^i that ended at the
 * last local step divisible by 2^i, and its noisy version α̂_i. */
typedef struct dp_bintree {
    unsigned levels;
    int64_t  alpha[DP_BINTREE_MAX_LEVELS];
    int64_t  noisy[DP_BINTREE_MAX_LEVELS];
} dp_bintree;

void dp_bintree_reset(dp_bintree *b, unsigned levels);

/* Add x at local step u (the previous call was u-1): the node at level
 * i = ctz(u) completes, absorbs the lower levels and x, and gets one noise
 * draw labelled "<prefix>node/<i>/<u >> i>" keyed at global step `step`.
 * *out = Σ_{bit i of u set} α̂_i.  DP_ERANGE (state unchanged) on int64
 * overflow. */
int dp_bintree_add(const dp_counter *c, dp_bintree *b, const dp_cnoise *n,
                   const char *prefix, uint64_t step, uint64_t u, int64_t x, int64_t *out);

void dp_bintree_save(const dp_bintree *b, dp_buf *buf);
int  dp_bintree_load(dp_bintree *b, dp_reader *r);

#endif
