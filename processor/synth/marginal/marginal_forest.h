/* marginal_forest.h — the state of `marginal`'s method "forest", private to
 * marginal_forest.c (plan, epochs, counters, the fit), marginal_forest_select.c
 * (the private edge selection) and marginal_forest_rows.c (the model's
 * marginals, the rows, the snapshot).  Owns nothing itself: the structure
 * below is owned by marginal_forest.c; the design is stated there and in
 * docs/privacy.md §5. */
#ifndef DP_MARGINAL_FOREST_H
#define DP_MARGINAL_FOREST_H

#include "synth/marginal/marginal_release.h"

#define FOREST_NONE UINT32_MAX
/* The selection score's fixed-point grid: 2^8 units a row.  One row event
 * moves a score by at most 4 rows (marginal_forest_select.c derives it), so
 * by 4·2^8 + 1 grid units after the floor; g of them by 4·g·2^8 + 1 <= 2^21
 * (g <= 2000: max_rows_per_user <= 1000, × 2 under replace), exp_mech.h's range. */
#define FOREST_GRID_BITS 8
#define FOREST_DELTA_U(g) (((uint64_t)(g) << (FOREST_GRID_BITS + 2)) + 1)
/* The largest dependence any pair can have, δ* = sup Σ|p_xy − p_x·p_y| <= Σp_xy + Σp_x·p_y = 2 (a score
 * per row): dp_forest_feeds, marginal_forest_select.c; docs/privacy.md §5. */
#define FOREST_MAX_DEP 2.0
/* The cap on a candidate edge's cells: its mean cell at the end of the edge's epoch must hold at least
 * FOREST_MIN_SNR counter sds (a cell resolved at one sd): dp_forest_cell_cap, marginal_forest_select.c,
 * derives it; docs/privacy.md §5. */
#define FOREST_MIN_SNR 1.0

/* One kept marginal of the epoch: an edge (a < b, workload w) or the 1-way
 * marginal of a (b = w = FOREST_NONE); its cells at off in the epoch arrays. */
typedef struct forest_kept {
    uint32_t a, b, w;
    uint64_t cells, off;
} forest_kept;

typedef struct dp_forest {
    uint32_t     epoch;            /* the epoch of the last step (meaningful once a step is done) */
    int          started;          /* an epoch's counters exist */
    uint32_t     n_edges;
    uint32_t     edge_w[DP_MARGINAL_MAX_ATTRS];   /* E_e: workload indices, in pick order */
    uint32_t     n_kept;           /* m_e */
    forest_kept  kept[DP_MARGINAL_MAX_ATTRS];
    uint64_t     kept_cells;
    dp_counter_config ccfg;        /* the epoch's counters */
    uint64_t     sel_units;        /* per step: the selection's ledger units (0: k = 0, or the epoch's rows
                                      feed no selection: dp_forest_feeds) */
    dp_counter **cnt;              /* kept_cells: the epoch's counters */
    int64_t     *c_last;           /* their noisy prefix sums C_A(t) (the epoch's change) */
    double      *base;             /* base_A */
    double      *est;              /* Â(t) = base_A + C_A(t) */
    int64_t     *dacc;             /* D⁺: candidates' positive parts of each step's change, summed over the epoch */
    uint8_t     *cand;             /* per workload: a candidate edge (2-way, <= forest_pair_cells) */
    uint32_t     n_cand;           /* the last selection's candidates (m->cand[0..n_cand)), after the cap */
    /* the model of the last release (post-processing of est) */
    double       N;                /* N̂ */
    double      *node;             /* one_off layout: node marginals, total N̂ */
    double      *tab;              /* kept_cells: each edge's table projected to total N̂ (1-ways unused) */
    int32_t      parent[DP_MARGINAL_MAX_ATTRS];   /* -1: a root */
    uint32_t     parent_k[DP_MARGINAL_MAX_ATTRS]; /* the kept index of the edge to the parent */
    uint32_t     order[DP_MARGINAL_MAX_ATTRS];    /* roots by index, each tree in BFS order */
    double      *cond;             /* one_off-indexed blocks: P(child | parent = v), sizes[parent] rows */
    uint64_t     cond_off[DP_MARGINAL_MAX_ATTRS];
    int64_t     *dv;               /* scratch: one marginal's change (wmax cells) */
} dp_forest;

/* marginal_forest.c: the fit of Â (est) into N̂, node marginals, edge tables and conditionals. */
int dp_forest_fit_model(marginal_release *m);

/* marginal_forest_select.c: E_e from epoch e − 1's D⁺ accumulators, by k
 * exponential mechanisms (Kruskal), at step s_e. */
int dp_forest_select(marginal_release *m, uint64_t step, uint32_t *edge_w, uint32_t *n_edges, char *errstr,
                     size_t errstr_size);
/* Whether epoch e's rows (steps [s_e, 2·s_e)) will feed a selection at 2·s_e, decided at s_e from public
 * quantities only (the configuration, the step, m_e and N̂ of step s_e − 1: post-processing). */
int dp_forest_feeds(const marginal_release *m, uint32_t e, uint64_t sel_units);
/* The largest pair (cells) that may be a candidate of the selection at step s (its edges kept in [s, 2s)):
 * min(forest_pair_cells, floor(N_end/(FOREST_MIN_SNR·σ))), N_end = n_hat/done·min(2s − 1, T) the rows at
 * that epoch's end at the rate of the noisy total n_hat released after `done` steps, σ the sd of one cell of
 * that epoch's counters (at budget (1 − s')·budget/d).  Public: the configuration, the step and a noisy
 * total only — no table enters. */
int dp_forest_cell_cap(const marginal_release *m, double n_hat, uint64_t done, uint64_t s, uint64_t *cap,
                       char *errstr, size_t errstr_size);
/* ε of one pick, from the selection's per-step share of a ledger of `units` units (pure or zCDP). */
double dp_forest_pick_epsilon(const dp_marginal_config *c, uint64_t sel_units, uint64_t units);

/* marginal_forest_rows.c: the tree structure of the kept edges (parents,
 * BFS order); the model's marginal on a kept marginal A (its cells, × N̂). */
void dp_forest_structure(marginal_release *m);
int  dp_forest_model_marginal(const marginal_release *m, const forest_kept *A, double *out);

#endif
