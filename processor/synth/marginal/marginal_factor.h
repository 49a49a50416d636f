/* marginal_factor.h — dense factors over small attribute sets, and the
 * junction tree built from them: the inference engine of `marginal`'s pgm
 * fit (marginal_pgm.c).  No I/O, no randomness; every loop runs in a fixed
 * order.
 *
 * A factor holds one double per cell of its attributes (ascending indices),
 * row-major with the first attribute most significant — the same layout as
 * a workload's cells (marginal_config.h). */
#ifndef DP_SYNTH_MARGINAL_FACTOR_H
#define DP_SYNTH_MARGINAL_FACTOR_H

#include <stddef.h>
#include <stdint.h>

#define DP_FACTOR_MAX_ATTRS 16

typedef struct dp_factor {
    uint32_t k;
    uint32_t attrs[DP_FACTOR_MAX_ATTRS];
    uint64_t cells;
    double  *v;
} dp_factor;

/* A factor over attrs (ascending, k of them) with the given sizes; values 0. */
int  dp_factor_init(dp_factor *f, const uint32_t *attrs, uint32_t k, const uint32_t *sizes);
void dp_factor_free(dp_factor *f);
/* out (over a subset of f's attributes, initialised) = Σ over the others of f. */
void dp_factor_sum_into(const dp_factor *f, dp_factor *out, const uint32_t *sizes);
/* f.v[x] *= g.v[x restricted to g's attributes] (g's attributes ⊆ f's); divide if `divide`. */
void dp_factor_mul(dp_factor *f, const dp_factor *g, const uint32_t *sizes, int divide);
/* f.v[x] += g.v[x restricted] (log-space products). */
void dp_factor_add(dp_factor *f, const dp_factor *g, const uint32_t *sizes);
/* 1 if every attribute of a is in b. */
int  dp_factor_subset(const uint32_t *a, uint32_t ka, const uint32_t *b, uint32_t kb);

/* --- junction tree ------------------------------------------------------------- */

typedef struct dp_jtree {
    uint32_t   n_cliques;
    dp_factor *belief;    /* per clique: calibrated marginal distribution (sums to 1) */
    dp_factor *logpot;    /* per clique: Σ of the log-potentials assigned to it */
    dp_factor *up;        /* per clique, over its separator: the separator's marginal once calibrated */
    int32_t   *parent;    /* -1 for a root */
    uint32_t  *order;     /* cliques in breadth-first order from the roots */
    uint64_t   cells;     /* Σ cells over cliques */
    /* -1 once calibrated; else the one clique whose belief is current after
     * dp_jtree_scale updates (the others are stale until calibrated again) */
    int32_t    focus;
    /* Conditional tables computed since the last calibration, reused by the
     * pair queries that cross the same cliques (a cache: not state). */
    size_t     n_memo, cap_memo;
    uint64_t (*memo_key)[3];
    dp_factor *memo;
} dp_jtree;

/* The junction tree of the Markov graph whose cliques are groups[0..n)
 * (each attrs[i][0..k[i]), ascending), over n_attrs attributes (those in no
 * group are singleton cliques): greedy min-fill elimination (ties: the
 * smallest attribute), maximal elimination cliques, a maximum-weight
 * spanning forest on separator sizes (Prim from the lowest clique, ties by
 * index).  *cells = Σ cells of its cliques; DP_ERANGE (nothing built) if a
 * clique has more than DP_FACTOR_MAX_ATTRS attributes or *cells > max_cells;
 * jt may be NULL to plan only. */
int  dp_jtree_build(dp_jtree *jt, uint32_t n_attrs, const uint32_t *sizes, uint32_t n_groups,
                    const uint32_t *const *attrs, const uint32_t *k, uint64_t max_cells, uint64_t *cells);
void dp_jtree_free(dp_jtree *jt);
/* The clique holding every attribute of attrs[0..k), or -1. */
int  dp_jtree_find(const dp_jtree *jt, const uint32_t *attrs, uint32_t k);
/* The beliefs were overwritten from outside (a copy of another tree's):
 * drop the conditionals memoised from the old ones. */
void dp_jtree_beliefs_replaced(dp_jtree *jt, int32_t focus);
/* Beliefs from the log-potentials (sum-product, two passes, normalised). */
int  dp_jtree_calibrate(dp_jtree *jt, const uint32_t *sizes);
/* Iterative proportional fitting without recalibrating the whole tree
 * (Jiroušek & Přeučil 1995): dp_jtree_move_focus makes clique q's belief
 * current by passing the pending change from the focus along the tree path
 * to q — at each edge x → y with separator S, belief_y ·= P_x(S) / P_y(S),
 * exact because every change since y was last current lies on x's side of
 * the edge — and dp_jtree_scale multiplies the focus clique's belief by
 * ratio (over a subset of its attributes) and renormalises.  Beliefs off the
 * path are stale afterwards: only the focus clique may be read until
 * dp_jtree_calibrate.  q ≥ n_cliques is DP_ERANGE. */
int  dp_jtree_move_focus(dp_jtree *jt, const uint32_t *sizes, uint32_t q);
int  dp_jtree_scale(dp_jtree *jt, const uint32_t *sizes, uint32_t q, const dp_factor *ratio);
/* The marginal distribution of attrs[0..k) (k <= 2 across cliques; any k
 * inside one clique), into out (cells of the attributes, ascending order). */
int  dp_jtree_marginal(const dp_jtree *jt, const uint32_t *sizes, const uint32_t *attrs, uint32_t k, double *out);
/* For every attribute b with want[b] (b ≠ a, the pair {a, b} in no single
 * clique): emit(ctx, b, P(a, b)) — cells in ascending attribute order — in
 * one traversal of the tree from a's clique, sharing the tables carried
 * along common path prefixes (dp_jtree_marginal asks it for one pair,
 * carrying the attribute with fewer categories — the first on a tie — so
 * the two agree bit for bit).  Attributes < 64.  A non-zero return of emit
 * stops the walk and is returned. */
typedef int (*dp_jtree_pair_fn)(void *ctx, uint32_t b, const double *p_ab);
int  dp_jtree_pairs_of(const dp_jtree *jt, const uint32_t *sizes, uint32_t a, const uint8_t *want,
                       dp_jtree_pair_fn emit, void *ctx);

#endif
