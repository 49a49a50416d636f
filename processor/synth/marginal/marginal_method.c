/* marginal_method.c — `marginal`'s methods select_measure_fit (Kumar,
 * Strohmer, Vershynin = seed 001, Alg. 3) and mwem (the paper's
 * StreamingMWEM baseline, Alg. 2), and the dispatch on the configured
 * method (docs/privacy.md §5).  Owns: the plan of a stream (budget split,
 * noise, the per-step ledger), the mechanism it names, one step's
 * selections, measurements and fits, and which model a step's rows are
 * drawn from.  Calls core/exp_mech, core/simplex, core/sample, the
 * ledger, the models (marginal_mw.c, marginal_pgm.c, marginal_mixture.c),
 * marginal_counters.c, marginal_estimate.c, and for methods independent
 * and forest their files (marginal_independent.c, marginal_forest*.c);
 * marginal.c calls it.
 *
 * One step t (Alg. 3), with ∇f_t the step's differential histogram (the
 * ingest half's statistics are W(∇f_t) for every workload W):
 *   base_W = W(g_{t-1}) + W(∇f_t)                      (§6.4: f_t ≈ g_{t-1} + ∇f_t)
 *   h_{t,0} = g_{t-1}
 *   for l = 1..K:
 *     u(W) = (1/|W|)·‖base_W − W(h_{t,l-1})‖₁ − bias_W   over unselected W   (§7.2)
 *     j ~ exponential mechanism(u, ε_sel)                                     (exact: core/exp_mech.h)
 *     C_j += W_j(∇f_t)  (one continual counter per cell of W_j, budget ε_c)   (Alg. 3 line 15)
 *     m(t, j) = C_j(t) + r(t-1, j)                                            (§6.2)
 *     m(t, j) ← its projection onto {x ≥ 0, Σx = Σm(t, j)}                    (core/simplex.h)
 *     h_{t,l} = fit({(W_i, m(t, i))}_{i selected at t}, h_{t,l-1})
 *   g_t = mean_l h_{t,l}   (aggregate "mean", Alg. 3 line 19; mw only)  or  h_{t,K}  ("last")
 *   r(t, W) = W(g_t) − C_W(t) for unselected W; r(t, j) = r(t-1, j) for selected j.
 *
 * bias_W (§7.2's "bias correction"; its formula was lost in extraction):
 * the expected |error| per cell that measuring W now would add,
 * sqrt(2/π)·sd_W (as AIM, McKenna et al. 2022, subtracts the expected
 * noise), sd_W the analytic standard deviation of the counter increment
 * C_W(next) − C_W(anchor) that m(t, W) adds to W(g_τ) — the anchor being
 * the counter's step when r(t, W) was last set.  Not the whole prefix's:
 * with the simple counter that grows as the square root of W's selection
 * count, and a bias built on it stopped re-selecting the small,
 * often-needed workloads as the stream went on (full Adult, ordered by
 * age, ε = 1: their error grew from step 50 to the end; bench/RESULTS.md).
 * It depends only on public configuration and on how often W was selected
 * (a private output): post-processing.
 *
 * Sensitivity of the utility (derived for the configured workloads): one
 * row inserted or deleted at step t changes ∇f_t in one domain cell by 1,
 * so W(∇f_t) changes in one of W's cells by 1 and ‖base_W − W(h)‖₁ by at
 * most 1; g_{t-1} and h are earlier private outputs (fixed under the
 * neighbouring stream by adaptive composition).  Hence
 *     Δu = max_W 1/|W| = 1/min_W |W|          (1/4 for 2-way workloads on binary attributes, §7.2).
 * On the fixed-point grid of scale S = 2^16·min|W| each cell's term is
 * floor(|base_c − q_c|·S/|W|), which moves by at most 2^16 + 1 when its
 * argument moves by 1 (+ ~1e-7 of floating-point rounding of the sum
 * W(g)_c + ∇_c), and only one cell moves: ΔU = 2^16 + 2 grid units.
 *
 * Privacy (Thm 6.1, with group privacy): a row event at step τ touches
 * only step τ's K selections (ε_sel each) and the K counters selected at τ
 * (ε_c each: a counter's budget covers its whole stream, in which the
 * event is one entry); selections and measurements at other steps see it
 * only through earlier private outputs.  With g = max_rows_per_user ×
 * (2 under replace neighbours):
 *     pure:  ε_sel = ε_c = ε/(2Kg)        → K·ε_sel + K·ε_c = ε/g per event, ε per entity
 *     zCDP:  ε_sel = 2·sqrt(ρ/K)/g (EM is ε²/8-zCDP, Cesar–Rogers), ρ_c = ρ/(2Kg²)
 * Rows of different steps are disjoint, so the stream's guarantee is the
 * largest step's (parallel composition over steps), not the sum: the
 * ledger is per step, every step spends exactly the budget, and the
 * budget event says so (spent_step = spent_total = the budget).
 *
 * Baseline, method "mwem" (Alg. 2): each step an independent MWEM on ∇f_t
 * (selection on ‖W(∇f_t) − W(h)‖₁/|W|, fresh Laplace/Gaussian noise per
 * measurement at ε_c, MW fit) and g_t = g_{t-1} + mean_l h_{t,l}.  Two
 * corrections: the paper's h_{t,0} = |∇f_t|·uniform and the MW total
 * |∇f_t| use the exact batch size, which is private — here h_{t,0} is
 * empty and the total is the mean of the measured totals; a batch whose
 * noisy total is negative (deletions) is fitted with signs flipped.
 *
 * Measurements reach the fits projected onto the non-negative vectors of
 * their own measured total (both methods; post-processing).  The fits need
 * non-negative targets, and clipping at 0 would add E[noise⁺] to every
 * empty cell at every selection; since m(t, j) is anchored on the previous
 * synthetic data through r, that bias compounds over the stream (on Adult,
 * randomized-bs200, ε = 0.5: Proposed AvgWE 0.0123 clipped, 0.0097
 * projected; bench/RESULTS.md). */
#include "synth/marginal/marginal_release.h"

#include "core/dp_error.h"
#include "core/ledger_io.h"
#include "core/rational.h"
#include "core/simplex.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per step: 2K mechanisms (K selections, K measurements), or independent's d counters' measurements (forest: its own). */
int dp_marginal_step_ledger(marginal_release *m, char *errstr, size_t errstr_size)
{
    if (m->cfg.method == DP_MARGINAL_FOREST)   /* the epoch decides m_e: dp_marginal_forest_step resets it */
        return DP_OK;
    uint64_t units = m->cfg.method == DP_MARGINAL_INDEPENDENT ? (uint64_t)m->cfg.n_attrs << UNIT_BITS
                                                              : (uint64_t)m->cfg.selections << (UNIT_BITS + 1);
    return dp_ledger_reset_exact(&m->ledger, m->cfg.model, m->cfg.budget, units, errstr, errstr_size);
}

/* The mechanism a budget event and the plan name. */
const char *dp_marginal_mechanism(const dp_marginal_config *c)
{
    if (c->method == DP_MARGINAL_INDEPENDENT || (c->method == DP_MARGINAL_FOREST && !c->forest_edges))
        return c->model == DP_PRIVACY_PURE ? NAME "/counters/discrete_laplace" : NAME "/counters/discrete_gaussian";
    if (c->method == DP_MARGINAL_FOREST)
        return c->model == DP_PRIVACY_PURE ? NAME "/counters+exponential/discrete_laplace"
                                           : NAME "/counters+exponential/discrete_gaussian";
    return c->model == DP_PRIVACY_PURE ? NAME "/exponential+discrete_laplace" : NAME "/exponential+discrete_gaussian";
}

int dp_marginal_plan(marginal_release *m, char *errstr, size_t errstr_size)
{
    const dp_marginal_config *c = &m->cfg;
    m->group = dp_marginal_group(c);
    if (c->method == DP_MARGINAL_INDEPENDENT)
        return dp_marginal_indep_plan(m, errstr, errstr_size);
    if (c->method == DP_MARGINAL_FOREST)
        return dp_marginal_forest_plan(m, errstr, errstr_size);
    double K = c->selections, g = m->group;
    dp_privacy counter_budget;
    if (c->model == DP_PRIVACY_PURE) {
        m->eps_sel = c->budget / (2 * K * g);
        counter_budget = (dp_privacy){DP_PRIVACY_PURE, c->budget / (2 * K * g)};
    } else {
        m->eps_sel = 2 * sqrt(c->budget / K) / g;
        counter_budget = (dp_privacy){DP_PRIVACY_ZCDP, c->budget / (2 * K * g * g)};
    }
    int rc = dp_exp_mech_prepare(&m->em, m->eps_sel, DP_MARGINAL_UTILITY_DELTA, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    m->ccfg = (dp_counter_config){.kind = c->counter_kind, .horizon = c->horizon, .block = c->counter_block,
                                  .buffers = c->counter_buffers, .budget = counter_budget,
                                  .neighbor_entries = 1, .max_abs_change = 1};
    /* One probe counter validates kind × budget × horizon now, not at step 1. */
    dp_counter *probe = NULL;
    dp_noise_source ns = {m->key, m->stream_id, m->stream_id_len, NAME "/probe"};
    char why[256] = "";
    if ((rc = dp_counter_create(&probe, &m->ccfg, &ns, why, sizeof why)) != DP_OK)
        return dp_err(errstr, errstr_size, rc, NAME ": counter: %s", why);
    m->first_sd = sqrt(dp_counter_variance(probe, 1));
    dp_counter_destroy(probe);
    /* mwem's measurement: one step of a simple counter, drawn directly. */
    dp_rational q;
    if (c->model == DP_PRIVACY_PURE) {
        m->noise_param = 1.0 / counter_budget.value;   /* DLap(Δ/ε_c), Δ = 1 */
        if (dp_rational_from_double_up(m->noise_param, &q) != DP_OK ||
            (rc = dp_dlap_prepare(&m->dlap, q, why, sizeof why)) != DP_OK)
            return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": noise scale %g out of range: %s", m->noise_param, why);
        m->noise_sd = sqrt(dp_dlap_variance(q));
    } else {
        m->noise_param = 1.0 / (2 * counter_budget.value);   /* σ² = Δ²/(2ρ_c) */
        if (dp_rational_from_double_up(m->noise_param, &q) != DP_OK ||
            (rc = dp_dgauss_prepare(&m->dgauss, q, why, sizeof why)) != DP_OK)
            return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": noise variance %g out of range: %s", m->noise_param, why);
        m->noise_sd = sqrt(dp_dgauss_variance(q));
    }
    m->noise_param = dp_rational_to_double(q);
    /* The plan per step: K selections and K measurements, each 2^UNIT_BITS
     * units of a budget of 2K·2^UNIT_BITS: exactly the budget. */
    if ((rc = dp_marginal_step_ledger(m, errstr, errstr_size)) != DP_OK)
        return rc;
    double planned = c->model == DP_PRIVACY_PURE ? g * K * (m->eps_sel + counter_budget.value)
                                                 : g * g * K * (m->eps_sel * m->eps_sel / 8 + counter_budget.value);
    return dp_ledger_check_plan(&m->ledger, (dp_privacy){c->model, planned}, errstr, errstr_size);
}


/* Per-cell standard deviation of the noise in workload i's measurement if
 * it is selected now: m(t, W) = W(g_τ) + C_W(next) − C_W(anchor) (§6.2), so
 * the noise is the counter increment's since the anchor, not the whole
 * prefix's — for the simple counter one draw when W was not selected at
 * t − 1, however often it was selected before. */
static double counter_sd_next(const marginal_release *m, size_t i)
{
    const wl_state *w = &m->wl[i];
    /* never selected: no counters yet, the first step's noise (anchor 0) */
    return w->cnt ? sqrt(dp_counter_variance_between(w->cnt[0], w->anchor, w->selected + 1)) : m->first_sd;
}

/* Grid utility of workload i: Σ_c floor(|base_c − q_c|·S/|W|) − round(bias·S),
 * S = 2^16·min|W| (the header derives ΔU = 2^16 + 2). */
int64_t dp_marginal_grid_utility(const dp_marginal_config *c, size_t i, const double *base, const double *q,
                                 double bias)
{
    const dp_marginal_workload *w = &c->workloads[i];
    double per_cell = ldexp((double)c->min_cells / (double)w->cells, DP_MARGINAL_GRID_BITS);   /* <= 2^16 */
    int64_t cap = (int64_t)(((uint64_t)1 << 60) / w->cells), sum = 0;
    for (uint64_t k = 0; k < w->cells; k++) {
        double t = floor(fabs(base[k] - q[k]) * per_cell);
        sum += t >= (double)cap ? cap : (int64_t)t;
    }
    double b = bias * ldexp((double)c->min_cells, DP_MARGINAL_GRID_BITS);
    b = b > 0x1.0p59 ? 0x1.0p59 : b > 0 ? b : 0;
    return sum - (int64_t)llround(b);
}

/* Was workload i selected at an earlier iteration (< l) of this step? */
static int taken_now(const marginal_release *m, size_t l, size_t i)
{
    for (size_t j = 0; j < l; j++)
        if (m->sel[j] == i)
            return 1;
    return 0;
}

static void step_drbg(const marginal_release *m, dp_drbg *g, uint64_t step, const char *what, size_t l)
{
    char label[48];
    snprintf(label, sizeof label, NAME "/%s/%zu", what, l);
    dp_drbg_init(g, m->key, m->stream_id, m->stream_id_len, step, label);
}

/* Alg. 3's base for workload i, W(g_{t-1}) + W(∇f_t), computed the first
 * time a selection of the step needs it: only candidates are scored, and
 * with fit pgm a workload outside the model's cliques costs a pair query
 * through the junction tree (all of them were most of a step). */
static int smf_base(marginal_release *m, size_t i)
{
    if (m->base_ok[i])
        return DP_OK;
    const dp_marginal_workload *w = &m->cfg.workloads[i];
    int rc = m->mops->marginal(m->g, w, m->base + w->offset);
    if (rc != DP_OK)
        return rc;
    for (uint64_t k = 0; k < w->cells; k++)
        m->base[w->offset + k] += (double)m->d[w->offset + k];
    m->base_ok[i] = 1;
    return DP_OK;
}

/* Select one unselected workload (exponential mechanism) against h; charges first.
 * The candidates are the unselected workloads whose measurement the fit can
 * use: a pgm model whose junction tree is full leaves a new clique out of
 * the fit (marginal_pgm.c), and a selection of it would spend a step's
 * 1/(2K) of the budget twice on nothing.  Which workloads the model admits
 * depends only on the earlier selections (private outputs) and the public
 * max_model_cells — post-processing; Δu is unchanged.  Only if none is
 * admitted are all unselected workloads candidates (as before). */
static int select_workload(marginal_release *m, uint64_t step, size_t l, const double *base_or_d, int smf,
                           size_t *chosen, char *errstr, size_t errstr_size)
{
    const dp_marginal_config *c = &m->cfg;
    size_t n = 0;
    int filter = 0;
    for (size_t i = 0; i < c->n_workloads && m->mops->admits && !filter; i++)
        filter = m->mops->admits(m->h, &c->workloads[i]) && !taken_now(m, l, i);
    for (size_t i = 0; i < c->n_workloads; i++) {
        if (taken_now(m, l, i) || (filter && !m->mops->admits(m->h, &c->workloads[i])))
            continue;
        const dp_marginal_workload *w = &c->workloads[i];
        int rc = smf ? smf_base(m, i) : DP_OK;
        if (rc == DP_OK)
            rc = m->mops->marginal(m->h, w, m->q);
        if (rc != DP_OK)
            return dp_err(errstr, errstr_size, rc, NAME ": computing W(h)");
        double bias = smf ? sqrt(2.0 / M_PI) * counter_sd_next(m, i) : 0;
        m->cand[n] = (uint32_t)i;
        m->util[n++] = dp_marginal_grid_utility(c, i, base_or_d + w->offset, m->q, bias);
    }
    int rc = dp_ledger_spend_units(&m->ledger, step, NAME "/exponential", (uint64_t)1 << UNIT_BITS, errstr,
                                   errstr_size);
    if (rc != DP_OK)
        return rc;
    dp_drbg g;
    step_drbg(m, &g, step, "select", l);
    size_t k = 0;
    rc = dp_exp_mech_select(&m->em, &g, m->util, n, &k);
    dp_drbg_wipe(&g);
    if (rc != DP_OK)
        return dp_err(errstr, errstr_size, rc, NAME ": exponential mechanism: utility out of range");
    *chosen = m->cand[k];
    return DP_OK;
}

static const char *measure_mech(const marginal_release *m)
{
    return m->cfg.model == DP_PRIVACY_PURE ? NAME "/discrete_laplace" : NAME "/discrete_gaussian";
}

/* Alg. 3: the selected workload's counters take W_j(∇f_t); m = C_j(t) + r(t-1, j). */
static int measure_counters(marginal_release *m, uint64_t step, size_t j, double *out, char *errstr,
                            size_t errstr_size)
{
    const dp_marginal_workload *w = &m->cfg.workloads[j];
    wl_state *s = &m->wl[j];
    if (s->r_pending) {   /* before the counters move: r = W(g_{t-1}) − C_W(t-1) */
        int rc = dp_marginal_r_from_g(m, j, s->r);
        if (rc != DP_OK)
            return dp_err(errstr, errstr_size, rc, NAME ": computing W(g) for r(t, W) of workload %zu", j);
        s->r_pending = 0;
    }
    int rc = dp_marginal_ensure_counters(m, j, errstr, errstr_size);
    if (rc == DP_OK)
        rc = dp_ledger_spend_units(&m->ledger, step, measure_mech(m), (uint64_t)1 << UNIT_BITS, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    for (uint64_t c = 0; c < w->cells; c++) {
        if ((rc = dp_counter_add(s->cnt[c], m->d[w->offset + c], &s->c_last[c])) != DP_OK)
            return dp_err(errstr, errstr_size, rc, NAME ": counter of workload %zu cell %llu: %s", j,
                          (unsigned long long)c, dp_status_str(rc));
        out[c] = (double)s->c_last[c] + s->r[c];
    }
    s->selected++;
    return DP_OK;
}

/* Alg. 2: a fresh noisy measurement of W_j(∇f_t). */
static int measure_fresh(marginal_release *m, uint64_t step, size_t l, size_t j, double *out, char *errstr,
                         size_t errstr_size)
{
    const dp_marginal_workload *w = &m->cfg.workloads[j];
    int rc = dp_ledger_spend_units(&m->ledger, step, measure_mech(m), (uint64_t)1 << UNIT_BITS, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    dp_drbg g;
    step_drbg(m, &g, step, "measure", l);
    for (uint64_t c = 0; c < w->cells; c++)
        out[c] = (double)(m->d[w->offset + c] + (m->cfg.model == DP_PRIVACY_PURE ? dp_dlap_sample(&m->dlap, &g)
                                                                                : dp_dgauss_sample(&m->dgauss, &g)));
    dp_drbg_wipe(&g);
    return DP_OK;
}

/* The running aggregate of the step's fits h_{t,1..l} into m->avg (g_t once
 * l = K): their mean (Alg. 3 line 19), or h_{t,K} — copied once, at l = K
 * (a pgm model's copy holds its whole junction tree). */
static int aggregate(marginal_release *m, uint32_t l)
{
    if (m->cfg.aggregate == DP_MARGINAL_AGG_LAST)
        return l == m->cfg.selections ? m->mops->copy(m->avg, m->h) : DP_OK;
    return m->mops->average(m->avg, m->h, l);
}

static double sum_of(const double *v, uint64_t n)
{
    double s = 0;
    for (uint64_t i = 0; i < n; i++)
        s += v[i];
    return s;
}

static int step_smf(marginal_release *m, uint64_t step, char *errstr, size_t errstr_size)
{
    const dp_marginal_config *c = &m->cfg;
    int rc;
    memset(m->base_ok, 0, c->n_workloads);
    m->mops->copy(m->h, m->g);
    double totals = 0;
    for (size_t l = 0; l < c->selections; l++) {
        size_t j;
        if ((rc = select_workload(m, step, l, m->base, 1, &j, errstr, errstr_size)) != DP_OK)
            return rc;
        m->sel[l] = (uint32_t)j;
        m->sel_sd[l] = counter_sd_next(m, j);
        double *vals = m->mvals + l * m->wmax;
        if ((rc = measure_counters(m, step, j, vals, errstr, errstr_size)) != DP_OK)
            return rc;
        m->ms[l] = (dp_mmeasure){&c->workloads[j], vals, 1.0 / (m->sel_sd[l] > 0 ? m->sel_sd[l] : 1), 0};
        double measured = sum_of(vals, c->workloads[j].cells);
        totals += measured;
        if ((rc = dp_project_simplex(vals, c->workloads[j].cells, measured)) != DP_OK)
            return dp_err(errstr, errstr_size, rc, NAME ": projecting a measurement");
        dp_marginal_est_record(m, j, step, vals, m->sel_sd[l]);
        m->last_total = totals / (double)(l + 1);
        if ((rc = m->mops->fit(m->h, m->ms, l + 1, m->last_total, c->fit_iterations)) != DP_OK ||
            (rc = aggregate(m, (uint32_t)(l + 1))) != DP_OK)
            return dp_err(errstr, errstr_size, rc, NAME ": fit");
    }
    m->mops->copy(m->g, m->avg);
    if ((rc = dp_marginal_est_refit(m, step)) != DP_OK)
        return dp_err(errstr, errstr_size, rc, NAME ": refitting to every measurement");
    /* r(t, W) = W(g_t) − C_W(t) for the workloads not selected now — only
     * marked: W is read again only if it is selected, and g_t stays the
     * model until then or until the next unselected step moves the mark to
     * g_{t+1}; computing all of them here was a full sweep of pair queries
     * every step (a third of a pgm step on full Adult), for a few used.
     * The values are the same bits either way (dp_marginal_r_from_g). */
    for (size_t i = 0; i < c->n_workloads; i++) {
        int taken = 0;
        for (size_t l = 0; l < c->selections; l++)
            taken |= m->sel[l] == i;
        if (taken)
            continue;
        m->wl[i].r_pending = 1;
        m->wl[i].anchor = m->wl[i].selected;
    }
    m->last_total = m->mops->total(m->g);
    return DP_OK;
}

static int step_mwem(marginal_release *m, uint64_t step, char *errstr, size_t errstr_size)
{
    const dp_marginal_config *c = &m->cfg;
    for (uint64_t k = 0; k < c->total_cells; k++)
        m->base[k] = (double)m->d[k];
    m->mops->copy(m->h, m->fresh);   /* h_{t,0}: empty (see the header) */
    double totals = 0, sign = 1;
    int rc;
    for (size_t l = 0; l < c->selections; l++) {
        size_t j;
        if ((rc = select_workload(m, step, l, m->base, 0, &j, errstr, errstr_size)) != DP_OK)
            return rc;
        m->sel[l] = (uint32_t)j;
        m->sel_sd[l] = m->noise_sd;
        double *vals = m->mvals + l * m->wmax;
        if ((rc = measure_fresh(m, step, l, j, vals, errstr, errstr_size)) != DP_OK)
            return rc;
        double t = sum_of(vals, c->workloads[j].cells);
        if (l == 0)
            sign = t < 0 ? -1 : 1;
        if (sign < 0)
            for (uint64_t k = 0; k < c->workloads[j].cells; k++)
                vals[k] = -vals[k];
        totals += sign * t;
        if ((rc = dp_project_simplex(vals, c->workloads[j].cells, sign * t)) != DP_OK)
            return dp_err(errstr, errstr_size, rc, NAME ": projecting a measurement");
        m->ms[l] = (dp_mmeasure){&c->workloads[j], vals, 1.0 / m->noise_sd, 0};
        if ((rc = m->mops->fit(m->h, m->ms, l + 1, totals / (double)(l + 1), c->fit_iterations)) != DP_OK ||
            (rc = aggregate(m, (uint32_t)(l + 1))) != DP_OK)
            return dp_err(errstr, errstr_size, rc, NAME ": fit");
    }
    if (c->fit == DP_MARGINAL_FIT_PGM) {   /* g_t = g_{t-1} + h_{t,K}, as a mixture (only positive steps) */
        if (sign > 0 && (rc = dp_marginal_mixture_add(m, m->avg)) != DP_OK)
            return dp_err(errstr, errstr_size, rc, NAME ": keeping step %llu's model", (unsigned long long)step);
        m->last_total = dp_marginal_mixture_total(m);
        return DP_OK;
    }
    /* g_t = g_{t-1} + mean_l h_{t,l} (or h_{t,K}): the aggregate's counts, added with its sign. */
    uint64_t cells = (uint64_t)c->domain_cells;
    /* the mw model's distribution × total, cell by cell */
    double *counts = malloc(cells * sizeof *counts);
    if (!counts)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    rc = dp_mmodel_mw_counts(m->avg, counts);
    if (rc == DP_OK) {
        double s = 0;
        for (uint64_t x = 0; x < cells; x++) {
            m->G[x] += sign * counts[x];
            s += m->G[x] > 0 ? m->G[x] : 0;
        }
        m->last_total = s;
    }
    free(counts);
    return rc;
}
/* The dispatch on the method: one step's selections and measurements (or the method's own step). */
int dp_marginal_method_step(marginal_release *m, uint64_t step, char *errstr, size_t errstr_size)
{
    dp_marginal_method k = m->cfg.method;
    return k == DP_MARGINAL_SMF      ? step_smf(m, step, errstr, errstr_size)
           : k == DP_MARGINAL_MWEM   ? step_mwem(m, step, errstr, errstr_size)
           : k == DP_MARGINAL_FOREST ? dp_marginal_forest_step(m, step, errstr, errstr_size)
                                     : dp_marginal_indep_step(m, step, errstr, errstr_size);
}

/* The step's n rows from the method's model, drawn from the keyed DRBG labelled NAME "/rows/0". */
int dp_marginal_method_rows(const marginal_release *m, uint64_t step, uint64_t n, dp_mrow_fn emit, void *ctx)
{
    const dp_marginal_config *c = &m->cfg;
    dp_drbg g;
    step_drbg(m, &g, step, "rows", 0);
    int rc = c->method == DP_MARGINAL_SMF ? m->mops->rows(m->est_g ? m->est_g : m->g, n, &g, emit, ctx)
             : c->method == DP_MARGINAL_INDEPENDENT ? dp_marginal_indep_rows(m, n, &g, emit, ctx)
             : c->method == DP_MARGINAL_FOREST ? dp_marginal_forest_rows(m, n, &g, emit, ctx)
             : m->G                       ? dp_marginal_rows_from_counts(c, m->G, n, &g, emit, ctx)
                                          : dp_marginal_mixture_rows(m, n, &g, emit, ctx);
    dp_drbg_wipe(&g);
    return rc;
}
