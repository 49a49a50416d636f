/* marginal_forest_select.c — method forest's private edge selection at the
 * start s_e of epoch e ≥ 1 (docs/privacy.md §5).  Owns the score and the
 * Kruskal-style picks; calls core/exp_mech (the exact exponential
 * mechanism), core/counter (a probe for σ_e: the penalty and the cap) and the DRBG;
 * marginal_forest.c calls it.
 *
 * It reads ONLY epoch e − 1's rows (steps [s_{e−1}, s_e)): D⁺_ij, the sum
 * over the epoch's steps of the positive part of each step's exact change
 * ∇f in every cell of every candidate pair (accumulated during the epoch;
 * = the epoch's change on an insert-only stream).  Candidates: the
 * configured 2-way workloads of at most forest_pair_cells cells.  With r, c
 * and N the row sums, column sums and total of D⁺ (a non-negative table):
 *
 *     Score_ij = Σ_cells |D⁺_ij − r·cᵀ/N|       (0 for the second term if N = 0)
 *
 * — how far the epoch's pair is from independence, in rows.  Sensitivity: a
 * row event moves one step's change in one cell by 1, so one cell of D⁺ by
 * at most 1 (δ = ±1 at (x, y)), and r_x, c_y, N by the same δ.  Adding a
 * row: E' − E = [N·r·e_yᵀ + N·e_x·cᵀ + N·e_x·e_yᵀ − r·cᵀ] / (N(N+1)), whose
 * ℓ1 norm is at most (3N² + N)/(N² + N) <= 3 (Σr = Σc = N; removing a row is
 * the same pair read backwards; N = 0 → 1: ‖E'‖ = 1), so the score moves by
 * at most 1 + 3 = 4 rows.
 *
 * Utility (AIM's trade, McKenna et al. 2022): an edge is worth its
 * dependence only if that exceeds the noise its cells add, so
 *
 *     u_ij = Score_ij − |W_ij|·√(2/π)·σ_e / λ,   and u = 0 for "no more edges"
 *
 * with σ_e the sd of a counter of epoch e at its horizon at the budget of
 * m = d kept marginals (an upper bound: m_e <= d) and λ = 4 the ratio of the
 * rows at epoch e's end to epoch e − 1's at a constant rate (Score is read on
 * epoch e − 1's rows, the noise is paid on the cumulative table).  The
 * penalty is public (configuration and step), so u moves by at most 4 rows:
 * on the grid U = floor(u·2^8) by at most 4·2^8 + 1 units, and g events by
 * ΔU = 4·g·2^8 + 1 (FOREST_DELTA_U).  Measured (full Adult, key 0, ε = 0.5 /
 * 1 / 4, bs 50 and 200): the penalty and the stop lowered AvgWE in 6 of 6
 * settings (e.g. randomized bs 50, ε = 0.5: 0.0057 → 0.0047).
 *
 * (The design first scored against p̂, N̂_D from epoch e − 1's noisy
 * counters, sensitivity 1.  Measured, that score is dominated by the
 * counters' noise on pairs of many cells — full Adult, randomized bs 200,
 * ε = 1, key 0: AvgWE 0.0032, against 0.0022 with this self-normalised
 * score at 4× the sensitivity (ordered: 0.0026 / 0.0021; bench/RESULTS.md).)
 *
 * The cap on a candidate's cells (issue 39; dp_forest_cell_cap).  An edge kept in epoch e replaces the
 * independence product on its |W| cells by its own counters' cells.  At the epoch's end the table holds
 * N_end rows, so the pair's mean cell holds N_end/|W| rows (the signal), and each cell carries the noise
 * of an epoch-e counter at its horizon, sd σ_e (the penalty's σ_e: budget (1 − s)·ε/d a counter, the
 * configured counter kind, the epoch's length).  The rows follow the edge's conditionals
 * P(child | parent = v), ratios of its cells; where σ_e exceeds the mean cell the projection onto x >= 0
 * zeroes about half the cells and the conditionals are noise at the scale of the cells: the edge cannot
 * carry the pair's structure, and picking it only adds noise.  So a pair is a candidate only if
 *
 *     N_end/|W| >= c·σ_e,   c = FOREST_MIN_SNR = 1 (the mean cell resolved at one sd),
 *
 * |W| <= min(forest_pair_cells, N_end/σ_e), N_end = N̂/(s_e − 1)·min(2s_e − 1, T): N̂ the fitted total
 * of step s_e − 1 (dp_forest_feeds's public quantity) at its rate, projected to the epoch's last step.
 * In rows of the previous epoch's change (N_D ≈ N_end/λ, λ = 4 as in the penalty) that is κ = σ_e/4 rows
 * a cell — a formula of ε, the counter and the epoch's length, not a constant.  For scale: the utility
 * marks a pair a sure loser on any data (Score <= δ*·N_D) when N_end/|W| < √(2/π)·σ_e/δ* ≈ 0.4·σ_e; at
 * c = 1 a pair at the cap would need a dependence Σ|p_xy − p_x·p_y| of √(2/π) ≈ 0.8 (of at most 2) just to
 * pay for its noise.  dp_forest_feeds counts the candidates under the same cap (the same N̂, for the
 * selection at 2·s_e): none left, no share booked — a cap excluding every pair is forest_edges 0's model.
 *
 * Up to k = forest_edges picks, one at a time, each by dp_exp_mech among
 * the candidates left and the stop (a candidate that would close a cycle is
 * removed: the result is a forest; the stop ends the picks), each at ε_pick = s'·ε/k (pure: k picks compose to
 * the s'·ε booked at every step of epoch e − 1) or √(8·s'·ρ/k) (zCDP: a
 * pick is ε_pick²/8-zCDP, k of them s'·ρ), s' the share epoch e − 1's
 * ledgers booked (marginal_forest.c).  Each pick's randomness is the keyed
 * DRBG at step s_e, label "marginal/forest/select/<pick>".
 *
 * Whether a selection is worth its share (dp_forest_feeds, decided at s_e
 * for the selection at s_{e+1} = 2·s_e that would read epoch e's rows).
 * The exact EM among the n candidates (under the cap above) and the stop picks an edge of
 * utility u over n others of utility <= 0 with probability >= 1/2 iff
 * ε_pick·u/(2ΔU) >= ln n: its resolution is (2ΔU/ε_pick)·ln n rows, ΔU =
 * 4g rows.  No pair scores more than δ*·N_e on N_e rows, δ* = 2
 * (FOREST_MAX_DEP: Σ|p_xy − p_x·p_y| <= Σp_xy + Σp_x·p_y), so epoch e's
 * rows can find any edge at all only if
 *
 *     N̂/(s_e − 1) · s_e · δ* >= (2·4g/ε_pick)·ln n,
 *
 * N̂ the fitted total of step s_e − 1 (post-processing of charged counters)
 * over its s_e − 1 steps, projected to the epoch's s_e steps (net growth:
 * on a stream with deletions it underestimates the change, so it errs
 * towards no selection), ε_pick the pick's ε at the share epoch e would
 * book (its m_e, the configuration).  When not — or when the horizon rule
 * below fails, or e = 0 (no N̂ yet) — epoch e books no selection share (its
 * counters get the whole budget / m_e) and no selection reads its rows: the
 * next epoch keeps the edges.  Every input is public or post-processing, so
 * the decision costs nothing; with no selection ever (a small table), the
 * forest is `independent`'s d 1-way counters at budget/d each.  Measured
 * (bench/RESULTS.md; tuned on Adult only): δ* = 1 (a "strong" edge: two
 * equal balanced binary attributes) lost 6.5 % on the full Adult
 * (randomized bs 200, ε = 2: an edge first kept later starts from the
 * independence model's base); δ* = 2 is within 1 % of booking every epoch
 * there and at or below `independent` on a 4 400-row Adult.
 *
 * The horizon rule (issue 39, 2026-11-28).  The share booked at epoch e's
 * s_e steps is a cost those steps' rows carry in every later release (their
 * counters' sd × 1/(1 − s')); the edges the selection at 2·s_e picks count
 * rows only from step 2·s_e on, at most T − 2·s_e + 1 steps before the
 * horizon T (later selections may keep them longer, but none can exist
 * once 2·s_{e+1} > T).  Steps carry rows at one rate, so the two are in the
 * same unit: epoch e books the share only if its edges would serve at
 * least the steps that paid for them,
 *
 *     T − 2·s_e + 1 >= s_e,   i.e.   3·s_e <= T + 1
 *
 * (which implies 2·s_e <= T, the rule it replaces: no selection after the
 * horizon).  It reads the configuration (T) and the step only: public, it
 * costs nothing, and it binds only on the last selection of a stream, when
 * T < 3·s_e − 1.  Before it, the last selection's edges were kept for as
 * few as 1/2 of the steps that paid (4 500-row Adult at 50 rows a step, T =
 * 90: epoch 32–63 paid, its edges served steps 64–90).  The other ideas of
 * issue 39 were measured first and rejected (bench/RESULTS.md 2026-11-28
 * "the horizon rule"): a sticky stop (no share after a selection that
 * stops at its first pick) loses up to 1.35× on the full Adult — on a
 * growing table a stop does not predict the next epoch, whose scores
 * double while its penalty grows by √2 (simple counters) — and pausing one
 * epoch after such a stop changed the small Adult by under 2 %. */
#include "synth/marginal/marginal_forest.h"

#include "core/dp_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double dp_forest_pick_epsilon(const dp_marginal_config *c, uint64_t sel_units, uint64_t units)
{
    double share = c->budget * (double)sel_units / (double)units, k = c->forest_edges;
    return c->model == DP_PRIVACY_PURE ? share / k : sqrt(8 * share / k);
}

int dp_forest_feeds(const marginal_release *m, uint32_t e, uint64_t sel_units)
{
    const dp_marginal_config *c = &m->cfg;
    const dp_forest *f = m->forest;
    uint64_t s_e = (uint64_t)1 << e, n = 0, cap = 0;
    /* the edges picked at 2·s_e must serve at least the s_e steps that paid for them (the horizon rule) */
    if (c->forest_edges == 0 || sel_units == 0 || e == 0 || 3 * s_e > c->horizon + 1)
        return 0;
    /* the candidates of the selection at 2·s_e: the cap from the same N̂ (a failed probe: none) */
    if (dp_forest_cell_cap(m, f->N, s_e - 1, 2 * s_e, &cap, NULL, 0) != DP_OK)
        return 0;
    for (size_t i = 0; i < c->n_workloads; i++)
        n += f->cand[i] && c->workloads[i].cells <= cap;
    double eps = dp_forest_pick_epsilon(c, sel_units, ((uint64_t)f->n_kept << UNIT_BITS) + sel_units);
    double rows = f->N > 0 ? f->N / (double)(s_e - 1) * (double)s_e : 0;
    return n > 0 && rows * FOREST_MAX_DEP >= 2 * 4 * m->group / eps * log((double)n);
}

static uint32_t find(uint32_t *uf, uint32_t a)
{
    while (uf[a] != a)
        a = uf[a] = uf[uf[a]];
    return a;
}

/* Score_ij of workload i on the grid: floor(Σ_cells |D⁺ − r·cᵀ/N| · 2^8), capped at 2^61 (r, c, N: D⁺'s
 * row sums, column sums and total). */
static int64_t grid_score(const marginal_release *m, size_t i, double pen, double *r, double *col)
{
    const dp_marginal_config *c = &m->cfg;
    const dp_marginal_workload *w = &c->workloads[i];
    const int64_t *D = m->forest->dacc + w->offset;
    uint32_t sa = c->sizes[w->attrs[0]], sb = c->sizes[w->attrs[1]];
    double N = 0, s = 0;
    memset(r, 0, sa * sizeof *r);
    memset(col, 0, sb * sizeof *col);
    for (uint64_t k = 0; k < w->cells; k++) {
        r[k / sb] += (double)D[k];
        col[k % sb] += (double)D[k];
        N += (double)D[k];
    }
    for (uint64_t k = 0; k < w->cells; k++)
        s += fabs((double)D[k] - (N > 0 ? r[k / sb] * col[k % sb] / N : 0));
    s = floor(ldexp(s - pen * (double)w->cells, FOREST_GRID_BITS));
    return s >= 0x1.0p61 ? (int64_t)1 << 61 : s <= -0x1.0p61 ? -((int64_t)1 << 61) : (int64_t)s;
}

/* σ of one cell of a counter of the epoch starting at s (its length s, capped at the steps left), at the
 * budget of m = d kept marginals: an upper bound (m_e <= d).  Public: the configuration and s. */
static int counter_sd(const marginal_release *m, uint64_t s, double *sd, char *errstr, size_t errstr_size)
{
    const dp_marginal_config *c = &m->cfg;
    double g = m->group, v = (1 - c->forest_select_share) * c->budget / c->n_attrs;
    uint64_t left = c->horizon >= s ? c->horizon - s + 1 : 1;
    dp_counter_config cc = {.kind = c->counter_kind, .horizon = s < left ? s : left, .block = c->counter_block,
                            .buffers = c->counter_buffers, .neighbor_entries = 1, .max_abs_change = 1,
                            .budget = c->model == DP_PRIVACY_PURE ? (dp_privacy){DP_PRIVACY_PURE, v / g}
                                                                  : (dp_privacy){DP_PRIVACY_ZCDP, v / (g * g)}};
    dp_counter *probe = NULL;
    dp_noise_source ns = {m->key, m->stream_id, m->stream_id_len, NAME "/probe"};
    int rc = dp_counter_create(&probe, &cc, &ns, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    *sd = sqrt(dp_counter_variance(probe, cc.horizon));
    dp_counter_destroy(probe);
    return DP_OK;
}

int dp_forest_cell_cap(const marginal_release *m, double n_hat, uint64_t done, uint64_t s, uint64_t *cap,
                       char *errstr, size_t errstr_size)
{
    const dp_marginal_config *c = &m->cfg;
    double sd = 0;
    int rc = counter_sd(m, s, &sd, errstr, errstr_size);
    uint64_t end = 2 * s - 1 < c->horizon ? 2 * s - 1 : c->horizon;
    double rows = n_hat > 0 && done > 0 ? n_hat / (double)done * (double)end : 0;
    double cells = sd > 0 ? floor(rows / (FOREST_MIN_SNR * sd)) : (double)c->forest_pair_cells;
    *cap = cells >= (double)c->forest_pair_cells ? c->forest_pair_cells : (uint64_t)cells;
    return rc;
}

int dp_forest_select(marginal_release *m, uint64_t step, uint32_t *edge_w, uint32_t *n_edges, char *errstr,
                     size_t errstr_size)
{
    const dp_marginal_config *c = &m->cfg;
    const dp_forest *f = m->forest;
    *n_edges = 0;
    double *r = malloc(c->forest_pair_cells * sizeof *r), *col = malloc(c->forest_pair_cells * sizeof *col);
    if (!r || !col) {
        free(r);
        free(col);
        return dp_err(errstr, errstr_size, DP_ENOMEM, NAME ": out of memory");
    }
    double pen = 0;
    uint64_t cap = 0;
    int rc = counter_sd(m, step, &pen, errstr, errstr_size);
    pen *= sqrt(2 / M_PI) / 4;   /* the per-cell penalty: E|noise| of a kept cell at epoch e's end, over λ = 4 */
    if (rc == DP_OK)
        rc = dp_forest_cell_cap(m, f->N, step - 1, step, &cap, errstr, errstr_size);   /* N̂ of step s_e − 1 */
    size_t n = 0;
    for (size_t i = 0; i < c->n_workloads && rc == DP_OK; i++)
        if (f->cand[i] && c->workloads[i].cells <= cap) {
            m->cand[n] = (uint32_t)i;
            m->util[n++] = grid_score(m, i, pen, r, col);
        }
    m->forest->n_cand = (uint32_t)n;
    free(r);
    free(col);
    /* the picks' ε: the share epoch e − 1's ledgers booked (its m, its units) */
    uint64_t units = ((uint64_t)f->n_kept << UNIT_BITS) + f->sel_units;
    dp_exp_mech em;
    if (rc == DP_OK)
        rc = dp_exp_mech_prepare(&em, dp_forest_pick_epsilon(c, f->sel_units, units),
                                 FOREST_DELTA_U(m->group), errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    uint32_t uf[DP_MARGINAL_MAX_ATTRS];
    for (uint32_t a = 0; a < c->n_attrs; a++)
        uf[a] = a;
    uint32_t *left = malloc((n + 1) * sizeof *left);
    int64_t *u = malloc((n + 1) * sizeof *u);
    if (rc == DP_OK && (!left || !u))
        rc = dp_err(errstr, errstr_size, DP_ENOMEM, NAME ": out of memory");
    for (uint32_t pick = 0; pick < c->forest_edges && rc == DP_OK; pick++) {
        size_t nl = 0;
        for (size_t j = 0; j < n; j++) {
            const dp_marginal_workload *w = &c->workloads[m->cand[j]];
            if (find(uf, w->attrs[0]) != find(uf, w->attrs[1])) {   /* not picked, closes no cycle */
                left[nl] = m->cand[j];
                u[nl++] = m->util[j];
            }
        }
        if (nl == 0)
            break;
        u[nl++] = 0;   /* "no more edges" */
        dp_drbg g;
        char label[48];
        snprintf(label, sizeof label, NAME "/forest/select/%u", pick);
        dp_drbg_init(&g, m->key, m->stream_id, m->stream_id_len, step, label);
        size_t k = 0;
        rc = dp_exp_mech_select(&em, &g, u, nl, &k);
        dp_drbg_wipe(&g);
        if (rc != DP_OK) {
            rc = dp_err(errstr, errstr_size, rc, NAME ": exponential mechanism: utility out of range");
            break;
        }
        if (k == nl - 1)
            break;
        const dp_marginal_workload *w = &c->workloads[left[k]];
        edge_w[(*n_edges)++] = left[k];
        uf[find(uf, w->attrs[0])] = find(uf, w->attrs[1]);
    }
    free(left);
    free(u);
    return rc;
}
