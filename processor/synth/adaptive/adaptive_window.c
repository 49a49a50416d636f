/* adaptive_window.c — `adaptive` under w-event privacy (Kellaris,
 * Papadopoulos, Xiao, Papadias 2014): DSFT/DSAT as a chain of
 * AboveThreshold instances (seed 003's Alg. 3, corrected as docs/privacy.md
 * §7) and the baselines BD and BA (Kellaris et al. Alg. 2–3), each with an
 * exact integer ledger per window.
 *
 * The unit: neighbouring streams differ in one user's reports within w
 * consecutive steps (add/remove).  With the default `snapshot:
 * "step_reports"` a report is in its own step's snapshot only, so one
 * report changes one H_i by 1 in L1 and any w steps of a user change at
 * most w consecutive snapshots.  With `snapshot: "standing_values"` a
 * report stands in every later snapshot until replaced, and removing a
 * report of a user who already held a value turns it into a replacement
 * (L1 = 2): the noise below is calibrated for s = cfg.sensitivity = 2, and
 * a value standing k steps costs ⌈k/w⌉·ε (the budget events say so).
 *
 * Units: a window's ε is B units; every spend is a whole number of units,
 * so "the spends of any w consecutive steps are at most B" is an integer
 * check (fail closed), and the budget events carry the window's units.
 *
 *  - DSFT/DSAT: each AboveThreshold instance costs A units, each release R =
 *    2^16 units, B = (C+1)·A + C·R with A = k/(1−k)·C/(C+1)·R rounded
 *    (so ε₁ ≈ kε over the C+1 instances that can overlap a window, ε₂ ≈
 *    (1−k)ε over its at most C releases).  A new instance (a fresh ρ)
 *    starts at step 1 and after every positive; a decision is made only
 *    while the last w−1 steps released fewer than C times.  Each instance's
 *    distance has sensitivity Δ = 2/n_min whether the neighbour adds,
 *    removes or replaces a tuple (‖H/max(n, n_min) − H'/max(n', n_min)‖₁ ≤
 *    2/n_min in every case), so only the release noise, DLap(s/ε_R), scales
 *    with s.
 *  - BD/BA: B = w·2^20.  Each step after the first tests S_i = Σ_b |H_i[b] −
 *    H̃[b]| (sensitivity s) with DLap(s/ε_test), ε_test = ⌊f·2^20⌋ units
 *    (f = test_fraction); the window's publication budget is P = B −
 *    w·⌊f·2^20⌋ units.  BD: ε_{i,2} = ⌊(P − Σ_{last w−1} pub)/2⌋; BA: ε_u =
 *    P/w = 2^20 − ⌊f·2^20⌋ units, nullify ε_{l,2}/ε_u − 1 steps after a
 *    publication, then ε_{i,2} = ε_u·min(t_A, w).  Publish H_i +
 *    DLap(s/ε_{i,2}) if S̃_i/U > s/ε_{i,2} (the publication's own noise
 *    level), else republish.  Step 1 publishes without a test.
 *
 * Owns: nothing beyond adaptive_release's w-event fields.  Calls: svt,
 * the samplers, adaptive.c's draw helpers. */
#include "synth/adaptive/adaptive_internal.h"

#include "core/dp_error.h"

#include <math.h>
#include <stdlib.h>

double adaptive_window_value(const adaptive_release *m, uint64_t units)
{
    return m->units_window ? (double)units * m->cfg.epsilon / (double)m->units_window : 0;
}

/* --- DSFT / DSAT -------------------------------------------------------------------- */

int adaptive_plan_svt_window(adaptive_release *m, char *errstr, size_t errstr_size)
{
    const dp_adaptive_config *c = &m->cfg;
    double k = c->decision_fraction, C = (double)c->max_releases;
    m->units_instance = (uint64_t)llround(k / (1 - k) * C / (C + 1) * (double)ADAPTIVE_RELEASE_UNITS);
    if (m->units_instance < 1)
        m->units_instance = 1;
    m->units_window = (c->max_releases + 1) * m->units_instance + c->max_releases * ADAPTIVE_RELEASE_UNITS;
    m->eps_release = adaptive_window_value(m, ADAPTIVE_RELEASE_UNITS);
    m->delta_grid = (int64_t)ceil(2.0 / (double)c->n_min * ADAPTIVE_GRID) + 1;
    m->T = c->threshold;
    int rc = adaptive_prepare_dlap(&m->release_noise, (double)c->sensitivity / m->eps_release, "release", errstr,
                                   errstr_size);
    if (rc == DP_OK)
        rc = dp_svt_prepare(&m->svt, adaptive_window_value(m, m->units_instance), 1, 1, m->delta_grid,
                            (int64_t)(2 * ADAPTIVE_GRID), 0, errstr, errstr_size);
    return rc;
}

/* Steps among the last `last` before step m->done + 1 whose flags have `bit`. */
static uint32_t window_count(const adaptive_release *m, uint32_t last, uint8_t bit)
{
    uint32_t n = 0;
    for (uint32_t k = 1; k <= last && k < m->done + 1 && k <= m->cfg.w; k++)
        n += (m->wflags[(m->done + 1 - k) % m->cfg.w] & bit) != 0;
    return n;
}

/* Units spent in the last `last` steps before step m->done + 1 (`pub`: publications only). */
static uint64_t window_units(const adaptive_release *m, uint32_t last, int pub)
{
    uint64_t s = 0;
    for (uint32_t k = 1; k <= last && k < m->done + 1 && k <= m->cfg.w; k++)
        s += (pub ? m->wpub : m->wunits)[(m->done + 1 - k) % m->cfg.w];
    return s;
}

int adaptive_step_svt_window(adaptive_release *m, uint64_t i, char *errstr, size_t errstr_size)
{
    const dp_adaptive_config *c = &m->cfg;
    uint32_t w = c->w;
    uint8_t flags = 0;
    if (i == 1) {
        adaptive_release_histogram(m, i, &m->release_noise);
        adaptive_svt_start(m, i);
        flags = 1;
    } else if (window_count(m, w - 1, 1) < c->max_releases) {
        int decide = 1;
        if (c->method == DP_ADAPTIVE_DSAT) {
            decide = i > c->burn_in;
            if (decide) {   /* the public path, its rate over the window */
                uint64_t span = i < w ? i : w;
                adaptive_dsat_threshold(m, (double)window_count(m, w - 1, 1) / (double)span -
                                               (double)c->max_releases / w);
            }
        }
        if (decide && adaptive_svt_positive(m, i)) {
            adaptive_release_histogram(m, i, &m->release_noise);
            adaptive_svt_start(m, i);   /* AboveThreshold restarts */
            flags = 3;
        }
    }
    m->wflags[i % w] = flags;
    /* a release's R units, and A for each AboveThreshold instance started (step 1, positives) */
    uint64_t started = flags & 2 || i == 1 ? m->units_instance : 0, pub = flags & 1 ? ADAPTIVE_RELEASE_UNITS : 0;
    m->wunits[i % w] = started + pub;
    m->wpub[i % w] = pub;
    /* fail closed: the window's instances (its positives and the one running
     * at its start) and its releases */
    uint32_t pos = window_count(m, w - 1, 2) + (flags & 2 ? 1 : 0),
             rel = window_count(m, w - 1, 1) + (flags & 1 ? 1 : 0);
    m->units_spent_window = (uint64_t)(pos + 1) * m->units_instance + rel * ADAPTIVE_RELEASE_UNITS;
    if (rel > c->max_releases || m->units_spent_window > m->units_window)
        return dp_err(errstr, errstr_size, DP_EBUDGET, ADAPTIVE_NAME ": the w-window would spend %llu of %llu units",
                      (unsigned long long)m->units_spent_window, (unsigned long long)m->units_window);
    m->units_step = m->wunits[i % w];
    m->units_step_decision = started;
    return DP_OK;
}

/* --- BD / BA ---------------------------------------------------------------------- */

int adaptive_plan_bd_ba(adaptive_release *m, char *errstr, size_t errstr_size)
{
    const dp_adaptive_config *c = &m->cfg;
    m->units_window = (uint64_t)c->w * ADAPTIVE_STEP_UNITS;
    m->units_test = (uint64_t)floor(c->test_fraction * (double)ADAPTIVE_STEP_UNITS);
    if (m->units_test < 1 || m->units_test >= ADAPTIVE_STEP_UNITS)
        return dp_err(errstr, errstr_size, DP_ERANGE, ADAPTIVE_NAME ": test_fraction must leave both the tests and "
                                                                    "the publications at least 2^-20 of the budget");
    m->units_pub = m->units_window - (uint64_t)c->w * m->units_test;
    return adaptive_prepare_dlap(&m->dis_noise, (double)c->sensitivity / adaptive_window_value(m, m->units_test),
                                 "dissimilarity", errstr, errstr_size);
}

/* The publication budget of step i in units (0: nullified or nothing left). */
static uint64_t publication_units(adaptive_release *m, uint64_t i)
{
    const dp_adaptive_config *c = &m->cfg;
    if (c->method == DP_ADAPTIVE_BD) {
        uint64_t used = window_units(m, c->w - 1, 1);
        return used < m->units_pub ? (m->units_pub - used) / 2 : 0;
    }
    /* BA, t_A: the steps since the last nullified one (all of them before any publication) */
    if (i <= m->nullified_until)
        return 0;
    uint64_t absorbed = m->last_release ? i - m->nullified_until : i;
    return (ADAPTIVE_STEP_UNITS - m->units_test) * (absorbed < c->w ? absorbed : c->w);
}

int adaptive_step_bd_ba(adaptive_release *m, uint64_t i, char *errstr, size_t errstr_size)
{
    const dp_adaptive_config *c = &m->cfg;
    uint32_t w = c->w;
    double s = (double)c->sensitivity;
    uint64_t pub = publication_units(m, i), test = 0;
    double eps2 = adaptive_window_value(m, pub);
    int publish = 0;
    if (i == 1) {
        publish = pub > 0;
    } else if (pub > 0) {
        dp_drbg g;
        adaptive_step_drbg(m, &g, i, ADAPTIVE_NAME "/dissimilarity");
        int64_t dis = 0;
        for (uint32_t b = 0; b < c->categories; b++)
            dis += llabs(m->hist[b] - m->noisy[b]);
        double noisy = (double)(dis + dp_dlap_sample(&m->dis_noise, &g));
        dp_drbg_wipe(&g);
        test = m->units_test;
        publish = noisy / c->categories > s / eps2;
    }
    if (publish) {
        dp_dlap noise;
        int rc = adaptive_prepare_dlap(&noise, s / eps2, "publication", errstr, errstr_size);
        if (rc != DP_OK)
            return rc;
        adaptive_release_histogram(m, i, &noise);
        if (c->method == DP_ADAPTIVE_BA)   /* nullify ε_{l,2}/ε_u − 1 steps (pub is a multiple of ε_u) */
            m->nullified_until = i + pub / (ADAPTIVE_STEP_UNITS - m->units_test) - 1;
    } else {
        pub = 0;
    }
    m->wpub[i % w] = pub;
    m->wunits[i % w] = test + pub;
    /* fail closed: the window's publications within P, everything within B */
    m->units_spent_window = window_units(m, w - 1, 0) + test + pub;
    if (window_units(m, w - 1, 1) + pub > m->units_pub || m->units_spent_window > m->units_window)
        return dp_err(errstr, errstr_size, DP_EBUDGET, ADAPTIVE_NAME ": the w-window would spend %llu of %llu units",
                      (unsigned long long)m->units_spent_window, (unsigned long long)m->units_window);
    m->units_step = test + pub;
    m->units_step_decision = test;
    m->last_eps2 = eps2;
    return DP_OK;
}

/* --- the plan ------------------------------------------------------------------------ */

void adaptive_describe_window(const adaptive_release *m, dp_synth_plan *out)
{
    const dp_adaptive_config *c = &m->cfg;
    dp_plan_kv(out->spend, &out->n_spend, "budget_units_window", (double)m->units_window);
    if (c->method >= DP_ADAPTIVE_BD) {
        out->spend_rule = "every step after the first spends test_epsilon_step on a noisy dissimilarity test; a "
                          "publication spends its budget from the window's publication_epsilon_window (bd: half of "
                          "what the last w-1 steps left; ba: what the steps it absorbed saved)";
        dp_plan_kv(out->spend, &out->n_spend, "test_epsilon_step", adaptive_window_value(m, m->units_test));
        dp_plan_kv(out->spend, &out->n_spend, "publication_epsilon_window", adaptive_window_value(m, m->units_pub));
        dp_plan_kv(out->spend, &out->n_spend, "w", (double)c->w);
        dp_plan_kv(out->noise, &out->n_noise, "dissimilarity_scale",
                   (double)c->sensitivity / adaptive_window_value(m, m->units_test));
    } else {
        out->spend_rule = "step 1 releases; then a chain of AboveThreshold instances decides, each starting at step 1 "
                          "or after a release and spending decision_epsilon; each release spends release_epsilon; at "
                          "most max_releases releases in any w steps";
        dp_plan_kv(out->spend, &out->n_spend, "decision_epsilon", adaptive_window_value(m, m->units_instance));
        dp_plan_kv(out->spend, &out->n_spend, "release_epsilon", m->eps_release);
        dp_plan_kv(out->spend, &out->n_spend, "max_releases", (double)c->max_releases);
        dp_plan_kv(out->spend, &out->n_spend, "w", (double)c->w);
    }
}
