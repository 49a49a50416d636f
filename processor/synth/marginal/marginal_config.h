/* marginal_config.h — the validated JSON configuration of `marginal`
 * (seed 001, docs/privacy.md §5) and the workload geometry both halves use.
 *
 * Keys (unknown keys refused; every error names its JSON path):
 *   attributes          [{"name": s, "categories": [label, …]}, …]  (required, 1..64)
 *   workloads           "all_2way" (default) | "all_3way" | [["a", "b"], …] (1..3 names each)
 *   horizon             T, the number of steps (required, 1..2^20)
 *   epsilon | rho       the budget: pure ε-DP (discrete Laplace) or ρ-zCDP (discrete Gaussian)
 *   selections_per_step K (default 4 or the number of workloads if fewer; at most that number)
 *   counter             a counter kind name or {"kind", "block", "buffers"} (default "simple")
 *   method              "forest" (the default since 2026-11-28) | "select_measure_fit" (the paper's
 *                       Alg. 3; the default before, so a configuration without "method" that sets
 *                       one of its keys is refused, marginal_config.c) | "mwem" (StreamingMWEM, Alg. 2) |
 *                       "independent" (each attribute's 1-way marginal by continual counters,
 *                       released as their product; marginal_independent.c) |
 *                       "forest" (a forest of small 2-way marginals, chosen privately on a public
 *                       schedule of epochs, plus the 1-way marginals no edge covers, each cell a
 *                       continual counter; marginal_forest*.c)
 *   forest_edges        method forest: edges picked per epoch, k (default 8; 0 = independent's model)
 *   forest_pair_cells   method forest: the largest 2-way workload (in cells) that may be an edge (default 100)
 *   forest_select_share method forest: the share s of each step's budget booked for the edge selection
 *                       (default 0.1, in (0, 1); unused when forest_edges = 0)
 *   fit                 "mw" | "pgm" | "auto" (default: mw when the domain has <= 2^22 cells)
 *   fit_iterations      passes of the fit per selection (default 10)
 *   aggregate           g_t from the step's fits h_{t,1..K}: "mean" (Alg. 3 line 19; the mw
 *                       default) | "last" (h_{t,K}; the only choice, and default, of pgm)
 *   max_rows_per_user   absent: event-level (one row inserted or deleted at one step);
 *                       s >= 1: user-level for entities with at most s row events
 *   neighbors           "add_remove" (default: one event more or less) | "replace"
 *                       (one event's row changed)
 *   delta               δ for the zCDP → (ε, δ) figures (default 1e-6)
 *   max_model_cells     the pgm fit's junction-tree size limit in cells (default 2^20)
 *   max_release_rows    a release with more rows is cut to this many and flagged
 *                       `clamped` (default 10^8)
 *   estimate            "selected" (default: each step's fits use the step's K measurements, Alg. 3) |
 *                       "all_measurements" (the release is g_t refitted to every workload's latest
 *                       measurement, weighted by inverse variance and age; marginal_estimate.c;
 *                       select_measure_fit only)
 *   drift_rows_per_step a public bound B on row events a step, for the age discount (default: the
 *                       noisy total over the step count, N̂_t/t; estimate "all_measurements" only) */
#ifndef DP_MARGINAL_CONFIG_H
#define DP_MARGINAL_CONFIG_H

#include <jansson.h>
#include <stdint.h>

#include "core/accountant.h"
#include "core/counter.h"

#define DP_MARGINAL_MAX_ATTRS 64
#define DP_MARGINAL_MAX_WAY 3
#define DP_MARGINAL_MAX_CATEGORIES (1u << 20)
#define DP_MARGINAL_MAX_HORIZON (1u << 20)
#define DP_MARGINAL_MW_MAX_CELLS ((uint64_t)1 << 22)
#define DP_MARGINAL_MAX_WORKLOAD_CELLS ((uint64_t)1 << 24)
#define DP_MARGINAL_DEFAULT_SELECTIONS 4u   /* K when the config omits it (see marginal_config.c) */

typedef enum dp_marginal_method {
    DP_MARGINAL_SMF = 0,
    DP_MARGINAL_MWEM = 1,
    DP_MARGINAL_INDEPENDENT = 2,
    DP_MARGINAL_FOREST = 3
} dp_marginal_method;
#define DP_MARGINAL_FOREST_MAX_EDGES 63u   /* a forest on at most 64 attributes has at most 63 edges */
typedef enum dp_marginal_fit { DP_MARGINAL_FIT_MW = 0, DP_MARGINAL_FIT_PGM = 1 } dp_marginal_fit;
typedef enum dp_marginal_estimate { DP_MARGINAL_EST_SELECTED = 0, DP_MARGINAL_EST_ALL = 1 } dp_marginal_estimate;
typedef enum dp_marginal_aggregate { DP_MARGINAL_AGG_MEAN = 0, DP_MARGINAL_AGG_LAST = 1 } dp_marginal_aggregate;

/* One workload: the marginal on k attributes (ascending), its cells in
 * row-major order with the first attribute most significant, and where its
 * cells start in the stream's concatenation of all workloads' cells. */
typedef struct dp_marginal_workload {
    uint32_t k;
    uint32_t attrs[DP_MARGINAL_MAX_WAY];
    uint64_t cells;
    uint64_t offset;
} dp_marginal_workload;

typedef struct dp_marginal_config {
    uint32_t              n_attrs;
    uint32_t              sizes[DP_MARGINAL_MAX_ATTRS];
    char                 *names[DP_MARGINAL_MAX_ATTRS];
    size_t                n_workloads;
    dp_marginal_workload *workloads;
    uint64_t              total_cells;    /* Σ cells over workloads */
    uint64_t              min_cells;      /* min cells of a workload: Δu = 1/min_cells */
    double                domain_cells;   /* Π sizes (may exceed 2^64: a double) */
    uint64_t              horizon;
    dp_privacy_model      model;
    double                budget;         /* ε or ρ over the stream, per row (or user) */
    uint32_t              selections;     /* K */
    dp_counter_kind       counter_kind;
    uint64_t              counter_block;
    uint32_t              counter_buffers;
    dp_marginal_method    method;
    int                   method_named;   /* the configuration names its method (else the default, forest) */
    dp_marginal_fit       fit;
    int                   fit_auto;
    uint32_t              fit_iterations;
    dp_marginal_aggregate aggregate;
    uint32_t              max_rows_per_user;   /* 0: event-level */
    int                   replace;
    double                delta;
    uint64_t              max_model_cells;
    uint64_t              max_release_rows;
    dp_marginal_estimate  estimate;
    double                drift_rows_per_step;   /* 0: N̂_t / t */
    uint32_t              forest_edges;          /* method forest: k */
    uint64_t              forest_pair_cells;
    double                forest_select_share;   /* s (0 when forest_edges = 0) */
    /* methods independent and forest: per attribute, the first workload holding it (its 1-way source) */
    uint32_t              one_way_source[DP_MARGINAL_MAX_ATTRS];
} dp_marginal_config;

int  dp_marginal_config_parse(dp_marginal_config *c, const json_t *cfg, char *errstr, size_t errstr_size);
/* "select_measure_fit", "mwem", "independent" or "forest" (the configuration's spelling). */
const char *dp_marginal_method_name(dp_marginal_method m);
void dp_marginal_config_free(dp_marginal_config *c);

/* Group size the budget is divided by: max_rows_per_user (1 if event-level),
 * times 2 under replace neighbours (a changed row = one delete + one insert). */
uint32_t dp_marginal_group(const dp_marginal_config *c);

/* 1 if workload w holds attribute a. */
static inline int dp_marginal_workload_has(const dp_marginal_workload *w, uint32_t a)
{
    for (uint32_t j = 0; j < w->k; j++)
        if (w->attrs[j] == a)
            return 1;
    return 0;
}

/* Cell of row (one index per attribute) in workload w. */
static inline uint64_t dp_marginal_cell(const dp_marginal_config *c, const dp_marginal_workload *w,
                                        const int32_t *row)
{
    uint64_t cell = 0;
    for (uint32_t j = 0; j < w->k; j++)
        cell = cell * c->sizes[w->attrs[j]] + (uint64_t)row[w->attrs[j]];
    return cell;
}

#endif
