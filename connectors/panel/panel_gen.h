/* panel_gen.h — a deterministic longitudinal panel: n individuals observed
 * at T steps, each holding one of c categories, evolving as independent
 * Markov chains.  Used by `dpstream gen-panel`, the offline demo and the
 * longitudinal accuracy benchmark; it is test data, not part of any
 * privacy mechanism.
 *
 * Model (documented so a panel can be re-derived from its parameters):
 *   - stay_j ∈ [0, 1]: probability that an individual in category j at
 *     step t is still in j at step t+1; otherwise it moves to one of the
 *     other c-1 categories chosen uniformly.
 *   - Step 1: each individual's category is drawn from `initial` if given,
 *     else from the chain's stationary distribution π_j ∝ 1/(1 - stay_j)
 *     (balance: π_j(1-stay_j) is the same flow out of every category, and
 *     the uniform choice of destination returns it evenly), else — when
 *     some stay_j = 1, where no unique stationary law exists — uniformly.
 *   - Every probability p is applied as "u < floor(p·2^53)" with u the top
 *     53 bits of a DRBG word, so the panel is a pure function of
 *     (seed, parameters), identical on every IEEE-754 machine.
 *   - Randomness: for step t, one generator dp_drbg_init(seed, "", 0, t,
 *     "panel_gen/markov/v1"), consumed individual by individual in index
 *     order (one word for the stay/move decision or the initial draw, plus
 *     a uniform(c-1) draw when moving).  The stream name is deliberately
 *     not mixed in: renaming a stream does not change its data.
 *
 * Memory: one byte per individual (c <= 256). */
#ifndef DP_APP_PANEL_GEN_H
#define DP_APP_PANEL_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "core/drbg.h"

#define DP_PANEL_MAX_CATEGORIES 256

typedef struct dp_panel_params {
    uint64_t n;                                   /* individuals, >= 1 */
    uint64_t steps;                               /* T, >= 1 */
    uint32_t categories;                          /* c, 2..256 */
    double   stay[DP_PANEL_MAX_CATEGORIES];       /* per category, in [0, 1] */
    int      has_initial;
    double   initial[DP_PANEL_MAX_CATEGORIES];    /* if has_initial: sums to 1 (within 1e-9) */
    dp_key   seed;
} dp_panel_params;

typedef struct dp_panel_gen {
    dp_panel_params p;
    uint64_t  step;                               /* last generated step (0 before the first) */
    uint8_t  *value;                              /* value[i] = category of individual i at `step` */
    uint64_t  stay_thr[DP_PANEL_MAX_CATEGORIES];  /* floor(stay_j · 2^53) */
    uint64_t  init_cdf[DP_PANEL_MAX_CATEGORIES];  /* cumulative initial law in 2^-53 units */
} dp_panel_gen;

/* Validate parameters and allocate.  DP_OK, DP_EINVAL (message) or DP_ENOMEM. */
int  dp_panel_gen_init(dp_panel_gen *g, const dp_panel_params *p, char *errstr, size_t errstr_size);
void dp_panel_gen_free(dp_panel_gen *g);

/* Generate the next step (1, 2, …, steps) into g->value.  DP_EHORIZON after
 * the last step. */
int  dp_panel_gen_next(dp_panel_gen *g);

/* The initial law actually used (initial / stationary / uniform), into
 * out[0..c). */
void dp_panel_gen_initial_law(const dp_panel_params *p, double *out);

#endif
