/* marginal_forest.c — `marginal`'s method "forest" (issue 39): the table
 * modelled as a FOREST of small 2-way marginals plus the 1-way marginal of
 * every attribute no edge covers, each kept marginal's cells continual
 * counters (the configured `counter` kind, as method independent; the
 * counter code is marginal_counters.c's).  Owns the plan, the epochs, the
 * ledger of a step and the fit; calls marginal_counters.c (counters),
 * marginal_forest_select.c (edges), marginal_forest_rows.c (structure,
 * model marginals, rows, snapshot), core/simplex and the ledger; marginal.c
 * calls it.  The design, stated (docs/privacy.md §5):
 *
 * Epochs.  Epoch e starts at step s_e = 2^e (1, 2, 4, 8, …: public) and
 * keeps M_e = E_e (its edges) + the 1-ways of the attributes no edge of E_e
 * covers; m_e = |M_e|.  Epoch 0 (step 1) keeps no edge: all d 1-ways.  Each
 * epoch makes FRESH counters for M_e (labels "marginal/forest/e<e>/p<a>,<b>"
 * or ".../a<a>", then "/c<cell>": unique per epoch, marginal and cell) that
 * count only the change ∇f of the epoch's steps.
 *
 * Privacy.  A row event lands in one step, hence one epoch, and moves one
 * cell of each kept marginal's change by 1: one entry of one counter per
 * kept marginal (neighbor_entries = 1, max_abs_change = 1).  Each step
 * books exactly its budget in an exact ledger of U = m_e·2^20 + q units:
 * m_e counters of 2^20 units each and q = round(s/(1−s)·m_e·2^20) units for
 * the selection ("marginal/forest/select/exponential"), so the counters get
 * (1−s')·ε/m_e each with s' = q/U (s' = s to 1e-6); a counter's budget is
 * the ledger's value of its 2^20 units, / g (pure) or / g² (zCDP) for the
 * group g = dp_marginal_group.  The q units booked at a step pay for that
 * step's rows in the NEXT epoch's selection (marginal_forest_select.c): the
 * selection at s_{e+1} reads only epoch e's rows, so each row event feeds at
 * most one selection.  An epoch whose rows could not find a strong edge,
 * or whose edges would serve fewer steps before the horizon than paid for
 * them (dp_forest_feeds, marginal_forest_select.c: public inputs only) —
 * the first, the last one or two, every epoch of a small table — books q = 0: its counters
 * get budget/m_e each, no selection reads its rows, the next epoch keeps
 * its edges.  Rows of different steps are disjoint: the
 * stream's guarantee is the largest step's, the budget.
 *
 * Estimate at step t of epoch e, for A in M_e: Â(t) = base_A + C_A(t).
 * base_A at s_e: if A was kept in epoch e − 1, its raw Â(s_e − 1) carries
 * on; otherwise the previous release's model marginal N̂·P(A)
 * (post-processing; marginal_forest_rows.c).  Epoch 0: base 0.
 *
 * Fit (post-processing): N̂ = Σ_A total(Â_A)/|A| / Σ_A 1/|A| (as
 * independent: the inverse-variance mean of the totals); the node marginal
 * of a = the mean of the a-sums of the kept marginals holding a, projected
 * onto {x ≥ 0, Σx = N̂} (core/simplex.h); each edge's table projected to
 * N̂; P(child | parent = v) = that table's row v normalised (a zero row: the
 * child's node marginal).  Roots: each tree's smallest attribute; children
 * in BFS order by attribute index.  The rows: marginal_forest_rows.c. */
#include "synth/marginal/marginal_forest.h"

#include "core/dp_error.h"
#include "core/ledger_io.h"
#include "core/simplex.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNTERS_MECH(c) ((c)->model == DP_PRIVACY_PURE ? NAME "/counters/discrete_laplace" \
                                                        : NAME "/counters/discrete_gaussian")
#define SELECT_MECH NAME "/forest/select/exponential"

static uint32_t epoch_of(uint64_t step)
{
    uint32_t e = 0;
    while (step >>= 1)
        e++;
    return e;
}

/* The selection's units of a step with m kept marginals: round(s/(1−s)·m·2^20) (0 without edges). */
static uint64_t sel_units_of(const dp_marginal_config *c, uint32_t m)
{
    if (c->forest_edges == 0)
        return 0;
    double s = c->forest_select_share;
    return (uint64_t)llround(s / (1 - s) * (double)m * (double)((uint64_t)1 << UNIT_BITS));
}

static int reset_ledger(marginal_release *m, char *errstr, size_t errstr_size)
{
    const dp_forest *f = m->forest;
    uint64_t units = ((uint64_t)f->n_kept << UNIT_BITS) + f->sel_units;
    return dp_ledger_reset_exact(&m->ledger, m->cfg.model, m->cfg.budget, units, errstr, errstr_size);
}

/* The epoch's counter configuration: the ledger's value of 2^20 units, / g or / g². */
static void epoch_counters(marginal_release *m, uint32_t e)
{
    const dp_marginal_config *c = &m->cfg;
    dp_forest *f = m->forest;
    double g = m->group, v = dp_ledger_units_value(&m->ledger, (uint64_t)1 << UNIT_BITS);
    uint64_t s_e = (uint64_t)1 << e, left = c->horizon - s_e + 1;
    dp_privacy b = c->model == DP_PRIVACY_PURE ? (dp_privacy){DP_PRIVACY_PURE, v / g}
                                               : (dp_privacy){DP_PRIVACY_ZCDP, v / (g * g)};
    f->ccfg = (dp_counter_config){.kind = c->counter_kind, .horizon = s_e < left ? s_e : left,
                                  .block = c->counter_block, .buffers = c->counter_buffers, .budget = b,
                                  .neighbor_entries = 1, .max_abs_change = 1};
}

static void free_epoch(dp_forest *f)
{
    if (f->cnt)
        for (uint64_t k = 0; k < f->kept_cells; k++)
            dp_counter_destroy(f->cnt[k]);
    free(f->cnt);
    free(f->c_last);
    free(f->base);
    free(f->est);
    free(f->tab);
    f->cnt = NULL;
    f->c_last = NULL;
    f->base = f->est = f->tab = NULL;
}

void dp_marginal_forest_free(marginal_release *m)
{
    dp_forest *f = m->forest;
    if (!f)
        return;
    free_epoch(f);
    free(f->dacc);
    free(f->cand);
    free(f->node);
    free(f->cond);
    free(f->dv);
    free(f);
    m->forest = NULL;
}

/* M_e from the edges: edges by workload index, then the uncovered attributes' 1-ways by index. */
static void build_kept(marginal_release *m, const uint32_t *edge_w, uint32_t n_edges)
{
    const dp_marginal_config *c = &m->cfg;
    dp_forest *f = m->forest;
    uint8_t covered[DP_MARGINAL_MAX_ATTRS] = {0};
    uint32_t sorted[DP_MARGINAL_MAX_ATTRS];
    for (uint32_t i = 0; i < n_edges; i++)
        sorted[i] = edge_w[i];
    for (uint32_t i = 1; i < n_edges; i++)
        for (uint32_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
            uint32_t t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    f->n_edges = n_edges;
    for (uint32_t i = 0; i < n_edges; i++)
        f->edge_w[i] = edge_w[i];
    f->n_kept = 0;
    f->kept_cells = 0;
    for (uint32_t i = 0; i < n_edges; i++) {
        const dp_marginal_workload *w = &c->workloads[sorted[i]];
        f->kept[f->n_kept++] = (forest_kept){w->attrs[0], w->attrs[1], sorted[i], w->cells, f->kept_cells};
        f->kept_cells += w->cells;
        covered[w->attrs[0]] = covered[w->attrs[1]] = 1;
    }
    for (uint32_t a = 0; a < c->n_attrs; a++)
        if (!covered[a]) {
            f->kept[f->n_kept++] = (forest_kept){a, FOREST_NONE, FOREST_NONE, c->sizes[a], f->kept_cells};
            f->kept_cells += c->sizes[a];
        }
}

/* The kept marginals' arrays and fresh counters of epoch e (the ledger already reset for it). */
static int make_counters(marginal_release *m, uint32_t e, char *errstr, size_t errstr_size)
{
    dp_forest *f = m->forest;
    uint64_t n = f->kept_cells;
    f->cnt = calloc(n, sizeof *f->cnt);
    f->c_last = calloc(n, sizeof *f->c_last);
    f->est = calloc(n, sizeof *f->est);
    f->tab = calloc(n, sizeof *f->tab);
    if (!f->cnt || !f->c_last || !f->est || !f->tab)
        return dp_err(errstr, errstr_size, DP_ENOMEM, NAME ": out of memory");
    epoch_counters(m, e);
    int rc = DP_OK;
    for (uint32_t i = 0; i < f->n_kept && rc == DP_OK; i++) {
        const forest_kept *A = &f->kept[i];
        char prefix[48];
        if (A->b == FOREST_NONE)
            snprintf(prefix, sizeof prefix, NAME "/forest/e%u/a%u", e, A->a);
        else
            snprintf(prefix, sizeof prefix, NAME "/forest/e%u/p%u,%u", e, A->a, A->b);
        rc = dp_marginal_cells_create(m, &f->ccfg, f->cnt + A->off, A->cells, prefix, errstr, errstr_size);
    }
    return rc;
}

int dp_marginal_forest_plan(marginal_release *m, char *errstr, size_t errstr_size)
{
    const dp_marginal_config *c = &m->cfg;
    dp_forest *f = m->forest = calloc(1, sizeof *m->forest);
    if (!f)
        return dp_err(errstr, errstr_size, DP_ENOMEM, NAME ": out of memory");
    m->one_off[0] = 0;
    for (uint32_t a = 0; a < c->n_attrs; a++)
        m->one_off[a + 1] = m->one_off[a] + c->sizes[a];
    f->dacc = calloc(c->total_cells, sizeof *f->dacc);
    f->cand = calloc(c->n_workloads, 1);
    f->node = calloc(m->one_off[c->n_attrs], sizeof *f->node);
    f->dv = malloc((m->wmax > m->one_off[c->n_attrs] ? m->wmax : m->one_off[c->n_attrs]) * sizeof *f->dv);
    if (!f->dacc || !f->cand || !f->node || !f->dv)
        return dp_err(errstr, errstr_size, DP_ENOMEM, NAME ": out of memory");
    for (size_t i = 0; i < c->n_workloads; i++)
        f->cand[i] = c->workloads[i].k == 2 && c->workloads[i].cells <= c->forest_pair_cells;
    for (uint32_t a = 0; a < c->n_attrs; a++)
        f->parent[a] = -1, f->order[a] = a;
    /* epoch 0's plan (d 1-ways): the figures the manifests and the plan state */
    build_kept(m, NULL, 0);
    f->sel_units = sel_units_of(c, f->n_kept);
    int rc = reset_ledger(m, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    epoch_counters(m, 0);
    dp_counter *probe = NULL;
    dp_noise_source ns = {m->key, m->stream_id, m->stream_id_len, NAME "/probe"};
    char why[256] = "";
    if ((rc = dp_counter_create(&probe, &f->ccfg, &ns, why, sizeof why)) != DP_OK)
        return dp_err(errstr, errstr_size, rc, NAME ": counter: %s", why);
    m->first_sd = m->noise_sd = sqrt(dp_counter_variance(probe, 1));
    dp_counter_destroy(probe);
    /* the plan's measurement_sd_max: the longest epoch's counter at its horizon, at m = d (the least budget) */
    m->ccfg = f->ccfg;
    for (uint64_t s_e = 1; s_e <= c->horizon; s_e <<= 1) {
        uint64_t len = c->horizon - s_e + 1 < s_e ? c->horizon - s_e + 1 : s_e;
        m->ccfg.horizon = len > m->ccfg.horizon ? len : m->ccfg.horizon;
    }
    m->noise_param = c->model == DP_PRIVACY_PURE ? 1.0 / f->ccfg.budget.value : 1.0 / (2 * f->ccfg.budget.value);
    if (c->forest_edges > 0) {
        uint64_t units = ((uint64_t)f->n_kept << UNIT_BITS) + f->sel_units;
        rc = dp_exp_mech_prepare(&m->em, dp_forest_pick_epsilon(c, f->sel_units, units), FOREST_DELTA_U(m->group),
                                 errstr, errstr_size);
        if (rc != DP_OK)
            return rc;
    }
    double g = m->group, cb = f->ccfg.budget.value, sel = dp_ledger_units_value(&m->ledger, f->sel_units);
    double planned = c->model == DP_PRIVACY_PURE ? g * f->n_kept * cb + sel : g * g * f->n_kept * cb + sel;
    return dp_ledger_check_plan(&m->ledger, (dp_privacy){c->model, planned}, errstr, errstr_size);
}

void dp_marginal_forest_describe(const marginal_release *m, dp_synth_plan *out)
{
    const dp_marginal_config *c = &m->cfg;
    if (c->method != DP_MARGINAL_FOREST)
        return;
    dp_plan_kv(out->spend, &out->n_spend, "forest_edges", (double)c->forest_edges);
    dp_plan_kv(out->spend, &out->n_spend, "forest_pair_cells", (double)c->forest_pair_cells);
    dp_plan_kv(out->spend, &out->n_spend, "forest_select_share", c->forest_select_share);
    if (c->forest_edges)
        dp_plan_kv(out->noise, &out->n_noise, "selection_epsilon", m->em.epsilon);
}

/* N̂ and the node marginals (one_off layout) from kept values vals (kept_cells). */
static void fit_nodes(const marginal_release *m, const double *vals, double *N, double *node)
{
    const dp_marginal_config *c = &m->cfg;
    const dp_forest *f = m->forest;
    double num = 0, den = 0;
    uint32_t holders[DP_MARGINAL_MAX_ATTRS] = {0};
    memset(node, 0, m->one_off[c->n_attrs] * sizeof *node);
    for (uint32_t i = 0; i < f->n_kept; i++) {
        const forest_kept *A = &f->kept[i];
        const double *v = vals + A->off;
        double t = 0;
        for (uint64_t k = 0; k < A->cells; k++)
            t += v[k];
        num += t / (double)A->cells;
        den += 1.0 / (double)A->cells;
        double *na = node + m->one_off[A->a];
        holders[A->a]++;
        if (A->b == FOREST_NONE) {
            for (uint64_t k = 0; k < A->cells; k++)
                na[k] += v[k];
            continue;
        }
        uint32_t sb = c->sizes[A->b];
        double *nb = node + m->one_off[A->b];
        holders[A->b]++;
        for (uint64_t k = 0; k < A->cells; k++) {
            na[k / sb] += v[k];
            nb[k % sb] += v[k];
        }
    }
    *N = den > 0 ? num / den : 0;
    for (uint32_t a = 0; a < c->n_attrs; a++) {
        double *na = node + m->one_off[a];
        for (uint64_t k = 0; k < c->sizes[a] && holders[a] > 1; k++)
            na[k] /= holders[a];
        dp_project_simplex(na, c->sizes[a], *N);
    }
}

int dp_forest_fit_model(marginal_release *m)
{
    const dp_marginal_config *c = &m->cfg;
    dp_forest *f = m->forest;
    fit_nodes(m, f->est, &f->N, f->node);
    for (uint32_t i = 0; i < f->n_kept; i++) {
        const forest_kept *A = &f->kept[i];
        if (A->b == FOREST_NONE)
            continue;
        memcpy(f->tab + A->off, f->est + A->off, A->cells * sizeof *f->tab);
        int rc = dp_project_simplex(f->tab + A->off, A->cells, f->N);
        if (rc != DP_OK)
            return rc;
    }
    /* P(child | parent = v): the edge table's row v (or column v), normalised; a zero row: the node marginal */
    for (uint32_t a = 0; a < c->n_attrs; a++) {
        if (f->parent[a] < 0)
            continue;
        const forest_kept *A = &f->kept[f->parent_k[a]];
        uint32_t p = (uint32_t)f->parent[a], sp = c->sizes[p], sa = c->sizes[a], sb = c->sizes[A->b];
        double *cd = f->cond + f->cond_off[a];
        for (uint32_t v = 0; v < sp; v++) {
            double row = 0;
            for (uint32_t x = 0; x < sa; x++) {
                uint64_t cell = p == A->a ? (uint64_t)v * sb + x : (uint64_t)x * sb + v;
                row += cd[(uint64_t)v * sa + x] = f->tab[A->off + cell];
            }
            for (uint32_t x = 0; x < sa; x++)
                cd[(uint64_t)v * sa + x] = row > 0 ? cd[(uint64_t)v * sa + x] / row
                                                   : (f->N > 0 ? f->node[m->one_off[a] + x] / f->N : 0);
        }
    }
    return DP_OK;
}

/* Epoch e starts at this step: E_e (from epoch e − 1), the bases, fresh counters, the D accumulators emptied. */
static int new_epoch(marginal_release *m, uint64_t step, uint32_t e, char *errstr, size_t errstr_size)
{
    const dp_marginal_config *c = &m->cfg;
    dp_forest *f = m->forest;
    uint32_t edges[DP_MARGINAL_MAX_ATTRS], n_edges = 0;
    int rc = DP_OK;
    if (f->started && f->sel_units > 0) {   /* epoch e − 1 booked the share: its rows feed this selection */
        if ((rc = dp_forest_select(m, step, edges, &n_edges, errstr, errstr_size)) != DP_OK)
            return rc;
    } else if (f->started) {   /* no selection: the edges stay */
        n_edges = f->n_edges;
        memcpy(edges, f->edge_w, n_edges * sizeof *edges);
    }
    forest_kept old[DP_MARGINAL_MAX_ATTRS];
    uint32_t n_old = f->started ? f->n_kept : 0;
    memcpy(old, f->kept, n_old * sizeof *old);
    double *old_est = f->est;
    f->est = NULL;
    build_kept(m, edges, n_edges);
    double *base = calloc(f->kept_cells, sizeof *base);
    if (!base) {
        free(old_est);
        return dp_err(errstr, errstr_size, DP_ENOMEM, NAME ": out of memory");
    }
    /* the bases, while the previous model (structure, conditionals) still stands */
    for (uint32_t i = 0; i < f->n_kept && e > 0 && rc == DP_OK; i++) {
        const forest_kept *A = &f->kept[i];
        uint32_t j = 0;
        while (j < n_old && !(old[j].a == A->a && old[j].b == A->b))
            j++;
        if (j < n_old)
            memcpy(base + A->off, old_est + old[j].off, A->cells * sizeof *base);
        else
            rc = dp_forest_model_marginal(m, A, base + A->off);
    }
    free(old_est);
    uint64_t cells = f->kept_cells;
    f->kept_cells = 0;
    for (uint32_t i = 0; i < n_old; i++)
        f->kept_cells += old[i].cells;
    free_epoch(f);
    f->kept_cells = cells;
    f->base = base;
    if (rc != DP_OK)
        return dp_err(errstr, errstr_size, rc, NAME ": the previous model's marginals");
    f->sel_units = sel_units_of(c, f->n_kept);
    f->sel_units = dp_forest_feeds(m, e, f->sel_units) ? f->sel_units : 0;   /* N̂ still step s_e − 1's */
    if ((rc = reset_ledger(m, errstr, errstr_size)) != DP_OK || (rc = make_counters(m, e, errstr, errstr_size)))
        return rc;
    memset(f->dacc, 0, c->total_cells * sizeof *f->dacc);
    f->epoch = e;
    f->started = 1;
    dp_forest_structure(m);
    return f->cond ? DP_OK : dp_err(errstr, errstr_size, DP_ENOMEM, NAME ": out of memory");
}

int dp_marginal_forest_step(marginal_release *m, uint64_t step, char *errstr, size_t errstr_size)
{
    const dp_marginal_config *c = &m->cfg;
    dp_forest *f = m->forest;
    uint32_t e = epoch_of(step);
    int rc = !f->started || step == (uint64_t)1 << e ? new_epoch(m, step, e, errstr, errstr_size)
                                                     : reset_ledger(m, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    for (uint32_t i = 0; i < f->n_kept && rc == DP_OK; i++) {
        const forest_kept *A = &f->kept[i];
        if ((rc = dp_ledger_spend_units(&m->ledger, step, COUNTERS_MECH(c), (uint64_t)1 << UNIT_BITS, errstr,
                                        errstr_size)) != DP_OK)
            break;
        const int64_t *dv = m->d + (A->w == FOREST_NONE ? 0 : c->workloads[A->w].offset);
        if (A->w == FOREST_NONE) {
            dp_marginal_one_way_delta(m, A->a, f->dv);
            dv = f->dv;
        }
        rc = dp_marginal_cells_add(f->cnt + A->off, f->c_last + A->off, dv, A->cells, NULL, errstr, errstr_size);
    }
    if (rc == DP_OK && f->sel_units)
        rc = dp_ledger_spend_units(&m->ledger, step, SELECT_MECH, f->sel_units, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    /* D⁺: epoch e's exact change of every candidate pair, each step's positive part; read once, by the
     * selection at s_{e+1} (marginal_forest_select.c) */
    for (size_t i = 0; i < c->n_workloads && c->forest_edges > 0; i++)
        for (uint64_t k = 0, o = c->workloads[i].offset; f->cand[i] && k < c->workloads[i].cells; k++)
            f->dacc[o + k] += m->d[o + k] > 0 ? m->d[o + k] : 0;
    for (uint64_t k = 0; k < f->kept_cells; k++)
        f->est[k] = f->base[k] + (double)f->c_last[k];
    if ((rc = dp_forest_fit_model(m)) != DP_OK)
        return dp_err(errstr, errstr_size, rc, NAME ": fitting the forest");
    m->last_total = f->N;
    /* the manifests' selected_sd.0 / the budget event's selected_sd_max: a kept cell's noise sd now */
    memset(m->sel, 0, c->selections * sizeof *m->sel);
    memset(m->sel_sd, 0, c->selections * sizeof *m->sel_sd);
    m->sel_sd[0] = sqrt(dp_counter_variance(f->cnt[0], dp_counter_steps(f->cnt[0])));
    return DP_OK;
}

/* The snapshot (after independent's part, marginal_snapshot.c): whether an
 * epoch has started; its index and edges (pick order); every kept cell's
 * counter; the bases (doubles by bit pattern); the candidates' D
 * accumulators.  The model is refitted from them on load (the fit is a
 * pure function of Â = base + C), so a restore mid-epoch releases the bytes
 * of the uninterrupted run. */
int dp_marginal_forest_save(const marginal_release *m, dp_buf *b)
{
    const dp_marginal_config *c = &m->cfg;
    const dp_forest *f = m->forest;
    dp_buf_put_u8(b, (uint8_t)f->started);
    if (!f->started)
        return dp_buf_status(b);
    dp_buf_put_u32(b, f->epoch);
    dp_buf_put_u32(b, f->n_edges);
    for (uint32_t i = 0; i < f->n_edges; i++)
        dp_buf_put_u32(b, f->edge_w[i]);
    int rc = DP_OK;
    for (uint64_t k = 0; k < f->kept_cells && rc == DP_OK; k++)
        rc = dp_marginal_put_counter(b, f->c_last[k], f->cnt[k]);
    for (uint64_t k = 0; k < f->kept_cells; k++)
        dp_buf_put_f64(b, f->base[k]);
    for (size_t i = 0; i < c->n_workloads; i++)
        for (uint64_t k = 0; f->cand[i] && k < c->workloads[i].cells; k++)
            dp_buf_put_i64(b, f->dacc[c->workloads[i].offset + k]);
    return rc != DP_OK ? rc : dp_buf_status(b);
}

int dp_marginal_forest_load(marginal_release *m, dp_reader *r)
{
    const dp_marginal_config *c = &m->cfg;
    dp_forest *f = m->forest;
    int started = dp_reader_u8(r);
    if (dp_reader_status(r) != DP_OK || started > 1 || started != (m->done > 0))
        return DP_ECORRUPT;
    if (!started)
        return DP_OK;
    uint32_t e = dp_reader_u32(r), ne = dp_reader_u32(r), edges[DP_MARGINAL_MAX_ATTRS];
    if (dp_reader_status(r) != DP_OK || e != epoch_of(m->done) || ne > c->forest_edges || ne >= c->n_attrs)
        return DP_ECORRUPT;
    uint32_t uf[DP_MARGINAL_MAX_ATTRS];
    for (uint32_t a = 0; a < c->n_attrs; a++)
        uf[a] = a;
    for (uint32_t i = 0; i < ne; i++) {   /* candidates forming a forest */
        edges[i] = dp_reader_u32(r);
        if (dp_reader_status(r) != DP_OK || edges[i] >= c->n_workloads || !f->cand[edges[i]])
            return DP_ECORRUPT;
        uint32_t x = c->workloads[edges[i]].attrs[0], y = c->workloads[edges[i]].attrs[1];
        while (uf[x] != x)
            x = uf[x];
        while (uf[y] != y)
            y = uf[y];
        if (x == y)
            return DP_ECORRUPT;
        uf[x] = y;
    }
    free_epoch(f);
    build_kept(m, edges, ne);
    f->sel_units = sel_units_of(c, f->n_kept);
    if (m->ledger.units_total == (uint64_t)f->n_kept << UNIT_BITS)
        f->sel_units = 0;   /* the epoch books no selection share (dp_forest_feeds) */
    else if (m->ledger.units_total != ((uint64_t)f->n_kept << UNIT_BITS) + f->sel_units)
        return DP_ECORRUPT;   /* the restored step's ledger is the epoch's */
    char why[128];
    int rc = make_counters(m, e, why, sizeof why);
    if (rc != DP_OK || !(f->base = malloc(f->kept_cells * sizeof *f->base)))
        return rc == DP_OK ? DP_ENOMEM : rc;
    uint64_t steps = m->done - ((uint64_t)1 << e) + 1;
    for (uint64_t k = 0; k < f->kept_cells && rc == DP_OK; k++)
        rc = dp_marginal_get_counter(m, r, &f->cnt[k], &f->c_last[k], steps);
    for (uint64_t k = 0; k < f->kept_cells && rc == DP_OK; k++)
        if (!(fabs(f->base[k] = dp_reader_f64(r)) <= 0x1.0p53))   /* finite, and no sum of it overflows */
            rc = DP_ECORRUPT;
    for (size_t i = 0; i < c->n_workloads && rc == DP_OK; i++)
        for (uint64_t k = 0; f->cand[i] && k < c->workloads[i].cells; k++)
            if ((f->dacc[c->workloads[i].offset + k] = dp_reader_i64(r)) < 0 ||
                f->dacc[c->workloads[i].offset + k] > ((int64_t)1 << 53))   /* D⁺ >= 0; no step's sum overflows */
                rc = DP_ECORRUPT;
    if (rc != DP_OK || (rc = dp_reader_status(r)) != DP_OK)
        return rc;
    f->epoch = e;
    f->started = 1;
    dp_forest_structure(m);
    if (!f->cond)
        return DP_ENOMEM;
    for (uint64_t k = 0; k < f->kept_cells; k++)
        f->est[k] = f->base[k] + (double)f->c_last[k];
    return dp_forest_fit_model(m);
}
