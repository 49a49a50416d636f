/* longitudinal_math.h — the post-processing steps of seed 000's two
 * synthesizers, separated so they can be tested on their own:
 *
 *   dp_window_project      Alg. 1's consistency projection with exact-sum
 *                          randomized rounding (categorical extension,
 *                          docs/privacy.md §3) and the clamp of infeasible
 *                          targets;
 *   dp_choose_uniform      partial Fisher–Yates (uniform r-subset);
 *   dp_cumulative_monotonize  Alg. 2's monotonization (Lemma 4.2).
 *
 * All randomness comes from the caller's keyed generators. */
#ifndef DP_LONGITUDINAL_MATH_H
#define DP_LONGITUDINAL_MATH_H

#include <stdint.h>

#include "core/drbg.h"

/* Choose r of the n entries of items uniformly at random: afterwards
 * items[0..r) hold a uniform r-subset in uniform order (one draw per
 * chosen slot except the last when r = n). */
void dp_choose_uniform(dp_drbg *g, uint32_t *items, uint64_t n, uint64_t r);

/* Targets for the c extensions v of one suffix z:
 *   D = total - Σ_v chat[v] = c·q + r (0 <= r < c),
 *   t[v] = chat[v] + q, plus 1 for r of the c categories chosen uniformly
 *   (g_round), so Σ_v t[v] = total exactly and E[t[v]] = chat[v] + D/c
 *   (the paper's Δ_z, eqs. (1)-(4); c = 2 gives the ±½ coin).
 * If a target is negative (total >= 0 required), it is clamped: negatives
 * go to 0 and the excess is taken from the largest targets down to a
 * common water level, the remainder from entries at that level chosen
 * uniformly (g_clamp); Σ t = total still holds.  scratch: c entries.
 * Returns 1 if clamped, 0 otherwise. */
int dp_window_project(const int64_t *chat, uint32_t c, int64_t total, dp_drbg *g_round,
                      dp_drbg *g_clamp, int64_t *t, uint32_t *scratch);

/* Lemma 4.2: for b = 1..t
 *   Ŝ_b^t = min(max(S̃_b^t, Ŝ_b^{t-1}), Ŝ_{b-1}^{t-1})
 * with prev[b] = Ŝ_b^{t-1} (prev[t] = 0), noisy[b] = S̃_b^t, out[0] = prev[0]
 * (= n).  prev, noisy and out have t + 1 entries (index 0 used for n). */
void dp_cumulative_monotonize(const int64_t *prev, const int64_t *noisy, uint64_t t, int64_t *out);

#endif
