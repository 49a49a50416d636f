/* marginal_independent.c — `marginal`'s method "independent": the baseline
 * the estimator must beat (issue 39 item 3).  Owns the plan, the step and
 * the rows of that method: each attribute's 1-way marginal kept by
 * continual counters (core/counter.h, the configured `counter` kind, the
 * same row unit and budget as the other methods), released as the product
 * of the noisy 1-way marginals.  Calls core/counter, core/simplex,
 * core/round and the ledger; marginal_method.c calls it (docs/privacy.md §5).
 *
 * Privacy.  A row event (one row inserted or deleted at step τ) changes
 * ∇f_τ by 1 in one domain cell, so it changes attribute a's 1-way marginal
 * of ∇f_τ by 1 in exactly one cell: one entry of one of a's per-cell
 * counters, by 1 (neighbor_entries = 1, max_abs_change = 1) — the other
 * cells' counters of a do not see it (they compose in parallel).  A
 * counter's budget covers its whole stream, in which the event is one
 * entry, so the event costs ε_a per attribute and d·ε_a over the d
 * attributes (basic composition; under zCDP, d·ρ_a — the same as the ℓ2
 * sensitivity √d of the d changed entries together).  With g the group
 * (max_rows_per_user × 2 under replace neighbours, dp_marginal_group):
 *     pure:  ε_a = ε/(d·g)          zCDP:  ρ_a = ρ/(d·g²)
 * — an even split: every attribute enters d − 1 of the all-2-way workloads,
 * so none is favoured by the workloads the benchmark scores, and the split
 * is public (it depends on d only).  As for Alg. 3, rows of different
 * steps are disjoint and each step's counters see only that step's rows:
 * the ledger is per step and every step spends the budget (d measurements
 * of budget/d).
 *
 * Counters: marginal_counters.c (shared with method forest).
 *
 * Release (post-processing of the d charged counter outputs C_a(t)):
 *   N̂   = Σ_a (Σ_c C_a(t)_c)/k_a  /  Σ_a 1/k_a      (k_a = a's categories: the
 *         inverse-variance mean of the d noisy totals; each total's variance
 *         is k_a times a cell's, and the cell variances are equal)
 *   p_a = the projection of C_a(t) onto {x ≥ 0, Σx = N̂} (core/simplex.h), / N̂
 *   rows: n = round(N̂); column a holds exactly round_sys(n·p_a) (core/round.h)
 *         values, the columns joined by independent uniform shuffles (the
 *         DRBG's "rows" label) — so the released table's 1-way marginals are
 *         the rounded noisy ones and its expected k-way table, over the
 *         shuffles, is n_i·n_j/n: the product of its 1-way marginals.  Rows
 *         come out in attribute 0's order. */
#include "synth/marginal/marginal_release.h"

#include "core/dp_error.h"
#include "core/ledger_io.h"
#include "core/round.h"
#include "core/simplex.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INDEP_MAX_ROWS ((uint64_t)1 << 28)

int dp_marginal_indep_plan(marginal_release *m, char *errstr, size_t errstr_size)
{
    const dp_marginal_config *c = &m->cfg;
    double d = c->n_attrs, g = m->group;
    dp_privacy b = c->model == DP_PRIVACY_PURE ? (dp_privacy){DP_PRIVACY_PURE, c->budget / (d * g)}
                                               : (dp_privacy){DP_PRIVACY_ZCDP, c->budget / (d * g * g)};
    m->ccfg = (dp_counter_config){.kind = c->counter_kind, .horizon = c->horizon, .block = c->counter_block,
                                  .buffers = c->counter_buffers, .budget = b,
                                  .neighbor_entries = 1, .max_abs_change = 1};
    m->noise_param = c->model == DP_PRIVACY_PURE ? 1.0 / b.value : 1.0 / (2 * b.value);
    m->one_off[0] = 0;
    for (uint32_t a = 0; a < c->n_attrs; a++)
        m->one_off[a + 1] = m->one_off[a] + c->sizes[a];
    uint64_t cells = m->one_off[c->n_attrs];
    m->one_cnt = calloc(cells, sizeof *m->one_cnt);
    m->one_last = calloc(cells, sizeof *m->one_last);
    m->one_p = calloc(cells, sizeof *m->one_p);
    m->one_d = calloc(cells, sizeof *m->one_d);
    if (!m->one_cnt || !m->one_last || !m->one_p || !m->one_d)
        return dp_err(errstr, errstr_size, DP_ENOMEM, NAME ": out of memory");
    for (uint32_t a = 0; a < c->n_attrs; a++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, NAME "/a%u", a);
        int rc = dp_marginal_cells_create(m, &m->ccfg, m->one_cnt + m->one_off[a], c->sizes[a], prefix, errstr,
                                          errstr_size);
        if (rc != DP_OK)
            return rc;
    }
    m->first_sd = m->noise_sd = sqrt(dp_counter_variance(m->one_cnt[0], 1));
    int rc = dp_ledger_reset_exact(&m->ledger, c->model, c->budget, (uint64_t)c->n_attrs << UNIT_BITS, errstr,
                                   errstr_size);
    if (rc != DP_OK)
        return rc;
    double planned = c->model == DP_PRIVACY_PURE ? g * d * b.value : g * g * d * b.value;
    return dp_ledger_check_plan(&m->ledger, (dp_privacy){c->model, planned}, errstr, errstr_size);
}

void dp_marginal_indep_free(marginal_release *m)
{
    if (m->one_cnt)
        for (uint64_t k = 0; k < m->one_off[m->cfg.n_attrs]; k++)
            dp_counter_destroy(m->one_cnt[k]);
    free(m->one_cnt);
    free(m->one_last);
    free(m->one_p);
    free(m->one_d);
}

int dp_marginal_indep_step(marginal_release *m, uint64_t step, char *errstr, size_t errstr_size)
{
    const dp_marginal_config *c = &m->cfg;
    const char *mech = c->model == DP_PRIVACY_PURE ? NAME "/counters/discrete_laplace"
                                                   : NAME "/counters/discrete_gaussian";
    double num = 0, den = 0;
    int rc = DP_OK;
    for (uint32_t a = 0; a < c->n_attrs && rc == DP_OK; a++) {
        if ((rc = dp_ledger_spend_units(&m->ledger, step, mech, (uint64_t)1 << UNIT_BITS, errstr, errstr_size)))
            break;
        int64_t *dv = m->one_d + m->one_off[a];
        dp_marginal_one_way_delta(m, a, dv);
        double t = 0;
        rc = dp_marginal_cells_add(m->one_cnt + m->one_off[a], m->one_last + m->one_off[a], dv, c->sizes[a], &t,
                                   errstr, errstr_size);
        num += t / c->sizes[a];
        den += 1.0 / c->sizes[a];
    }
    if (rc != DP_OK)
        return rc;
    m->last_total = num / den;
    for (uint32_t a = 0; a < c->n_attrs; a++) {
        double *p = m->one_p + m->one_off[a];
        for (uint64_t k = 0; k < c->sizes[a]; k++)
            p[k] = (double)m->one_last[m->one_off[a] + k];
        if ((rc = dp_project_simplex(p, c->sizes[a], m->last_total)) != DP_OK)
            return dp_err(errstr, errstr_size, rc, NAME ": projecting a 1-way marginal");
    }
    /* the manifests' selected_sd.0 / the budget event's selected_sd_max: a 1-way cell's noise sd now */
    memset(m->sel, 0, c->selections * sizeof *m->sel);
    memset(m->sel_sd, 0, c->selections * sizeof *m->sel_sd);
    m->sel_sd[0] = sqrt(dp_counter_variance(m->one_cnt[0], dp_counter_steps(m->one_cnt[0])));
    return DP_OK;
}

int dp_marginal_indep_rows(const marginal_release *m, uint64_t n, dp_drbg *g, dp_mrow_fn emit, void *ctx)
{
    const dp_marginal_config *c = &m->cfg;
    const uint32_t p = c->n_attrs;
    if (n == 0)
        return DP_OK;
    if (n > INDEP_MAX_ROWS)
        return DP_ERANGE;
    int32_t *rows = malloc(n * p * sizeof *rows);
    uint64_t *counts = malloc(m->one_off[p] * sizeof *counts);
    int rc = DP_OK;
    if (!rows || !counts)
        rc = DP_ENOMEM;
    for (uint32_t a = 0; a < p && rc == DP_OK; a++) {
        dp_round_systematic(m->one_p + m->one_off[a], c->sizes[a], n, g, counts);
        uint64_t r = 0;
        for (uint64_t v = 0; v < c->sizes[a]; v++)
            for (uint64_t q = 0; q < counts[v]; q++, r++)
                rows[r * p + a] = (int32_t)v;
        for (uint64_t i = n; a > 0 && i > 1; i--) {   /* Fisher–Yates over the column */
            uint64_t j = dp_drbg_uniform(g, i);
            int32_t t = rows[(i - 1) * p + a];
            rows[(i - 1) * p + a] = rows[j * p + a];
            rows[j * p + a] = t;
        }
    }
    for (uint64_t i = 0; i < n && rc == DP_OK; i++)
        rc = emit(ctx, rows + i * p);
    free(rows);
    free(counts);
    return rc;
}
