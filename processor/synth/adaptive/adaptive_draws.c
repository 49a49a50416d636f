/* adaptive_draws.c — what both release paths of `adaptive` (adaptive.c,
 * user-level; adaptive_window.c, w-event) draw and decide with: the
 * discrete Laplace plans, the keyed per-step draw streams (one purpose
 * label each: "release", "svt", "rho", "dissimilarity"), the noisy
 * histogram, the SVT's distance and DSAT's public threshold path.
 *
 * Owns: nothing.  Calls: svt, the samplers, the DRBG. */
#include "synth/adaptive/adaptive_internal.h"

#include "core/dp_error.h"
#include "core/rational.h"

#include <math.h>

#define NAME ADAPTIVE_NAME
#define GRID ADAPTIVE_GRID

int adaptive_prepare_dlap(dp_dlap *d, double scale, const char *what, char *errstr, size_t errstr_size)
{
    dp_rational q;
    char why[256] = "";
    if (!(scale > 0) || dp_rational_from_double_up(scale, &q) != DP_OK || dp_dlap_prepare(d, q, why, sizeof why))
        return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": %s noise scale %g out of range%s%s", what, scale,
                      why[0] ? ": " : "", why);
    return DP_OK;
}

void adaptive_step_drbg(const adaptive_release *m, dp_drbg *g, uint64_t step, const char *label)
{
    dp_drbg_init(g, m->key, m->stream_id, m->stream_id_len, step, label);
}

/* H̃ = H + DLap(scale) per bin, from the step's "release" stream. */
void adaptive_release_histogram(adaptive_release *m, uint64_t step, const dp_dlap *noise)
{
    dp_drbg g;
    adaptive_step_drbg(m, &g, step, NAME "/release");
    for (uint32_t b = 0; b < m->cfg.categories; b++)
        m->noisy[b] = m->hist[b] + dp_dlap_sample(noise, &g);
    dp_drbg_wipe(&g);
    m->released = 1;
    m->releases++;
    m->last_release = step;
}

/* --- the sparse vector's query and DSAT's threshold path ------------------------ */

/* floor(2^20 · ‖H/max(n, n_min) − H̃/ñ‖₁), ñ the released rows' total (uniform if none). */
static int64_t distance_grid(const adaptive_release *m)
{
    const dp_adaptive_config *c = &m->cfg;
    double n = 0, nt = 0;
    for (uint32_t b = 0; b < c->categories; b++) {
        n += (double)m->hist[b];
        nt += m->noisy[b] > 0 ? (double)m->noisy[b] : 0;
    }
    double norm = n > (double)c->n_min ? n : (double)c->n_min, d = 0;
    for (uint32_t b = 0; b < c->categories; b++) {
        double q = nt > 0 ? (m->noisy[b] > 0 ? (double)m->noisy[b] / nt : 0) : 1.0 / c->categories;
        d += fabs((double)m->hist[b] / norm - q);
    }
    return (int64_t)floor(d * GRID);
}

/* DSAT's threshold update (Alg. 2 lines 6–8, proportional term only): the
 * public T_i (corrected) or, in the paper variant, the noisy threshold. */
void adaptive_dsat_threshold(adaptive_release *m, double rate)
{
    const dp_adaptive_config *c = &m->cfg;
    double e = fabs(fabs(rate) - c->delta_sp) / c->delta_sp, u = c->theta_p * e;
    m->T = rate <= 0 ? fmax(0, m->T - u) : fmin(2, m->T + u);
    dp_svt_move(&m->svt, (int64_t)floor(u * GRID), rate > 0);
}

/* One sparse-vector decision on this step's distance (its own draw stream). */
int adaptive_svt_positive(adaptive_release *m, uint64_t i)
{
    dp_drbg g;
    adaptive_step_drbg(m, &g, i, NAME "/svt");
    int positive = dp_svt_decide(&m->svt, distance_grid(m), (int64_t)floor(m->T * GRID), &g);
    dp_drbg_wipe(&g);
    return positive;
}

/* A new sparse vector (AboveThreshold) run: its threshold noise ρ, from step i's "rho" stream. */
void adaptive_svt_start(adaptive_release *m, uint64_t i)
{
    dp_drbg g;
    adaptive_step_drbg(m, &g, i, NAME "/rho");
    dp_svt_start(&m->svt, (int64_t)floor(m->T * GRID), &g);
    dp_drbg_wipe(&g);
}

