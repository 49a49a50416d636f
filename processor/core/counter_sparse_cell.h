/* counter_sparse_cell.h — seed 004's inhomogeneous sparse counting (He,
 * Vershynin, Zhu 2024, Alg. 3 over Alg. 2) for very many counters at once,
 * one small struct per counter.  `hypercube` runs one per cell of a
 * partition that has ~ε·t cells at time t, so the dp_counter kinds (one
 * allocation, a 64-level tree and a private DRBG label each) would cost a
 * kilobyte per cell; here a cell is 48 bytes and everything that depends
 * only on (depth j, level r) — the budget ε_{j,r}, the threshold, the noise
 * distributions — lives once in a dp_isc_level shared by the cells.
 *
 * One counter (input x_u per counter step u, an integer with |x| <= 2^40):
 *   levels r = r0, r0+1, … each cover a public run of counter steps of at
 *   most h_r steps; within level r, Alg. 2 at ε_{j,r}/2 (AboveThreshold
 *   segments at ε/4, a binary mechanism over segment counts at ε/4) gives
 *   c_u, the noisy count since the level began; the counter's output is
 *   S̃ + c_u; when the level ends S̃ += (the level's total) + Lap_Z(2/ε_{j,r})
 *   (the remaining ε/2).  Alg. 2 follows counter_sparse.c, with its two
 *   documented departures (test after adding x_u; the query is |N|).
 *
 * Privacy (seed 004 Lemma 3.3): a change of one input by at most 1 at a
 * step of level r touches only level r's test, tree and fold, so the
 * counter is ε_{j,r}-DP for it; earlier and later levels never read it.
 *   test:  threshold and per-step query noise Lap_Z(4/ε') with ε' = ε/4
 *          (docs/privacy.md §2: we do not use the tighter 2/ε'), so 16/ε;
 *   tree:  L = floor(log2 h_r) + 1 levels, each segment count in L p-sums:
 *          Lap_Z(L/(ε/4)) = 4L/ε per node;
 *   fold:  sensitivity 1, Lap_Z(2/ε).
 * Scales are rounded up to a rational (dp_rational_from_double_up), so
 * each part costs at most its share.
 *
 * Randomness (every draw keyed; nothing depends on the order cells are
 * visited beyond the fixed order the caller documents):
 *   query noise   one draw per cell per step from a caller-owned DRBG
 *                 (`hypercube`: one stream per (step, depth), cells in path order)
 *   threshold     keyed by (cell label, level, segment index)
 *   tree node     keyed by (cell label, level, node level, node index)
 *   fold          from a caller-owned DRBG (one stream per (level, depth))
 * so a segment's threshold and a node's noise are re-derived, not stored. */
#ifndef DP_COUNTER_SPARSE_CELL_H
#define DP_COUNTER_SPARSE_CELL_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/drbg.h"
#include "core/rational.h"
#include "core/sample.h"

#define DP_ISC_MAX_INPUT ((int64_t)1 << 40)

/* Calibration of one (depth, level): shared by every cell there. */
typedef struct dp_isc_level {
    double   eps;          /* ε_{j,r} */
    uint64_t h;            /* the level's counter steps, at most */
    int64_t  T0;           /* ceil(9 ln h / (ε/2)), seed 004 Alg. 2's partition threshold */
    unsigned L;            /* binary-mechanism levels */
    dp_dlap  svt, node, fold;
    double   var_svt, var_node, var_fold;
    dp_dlap  dense;        /* Lap_Z(1/ε): the "dense" epoch fold (below) */
    double   var_dense;
} dp_isc_level;

int dp_isc_level_prepare(dp_isc_level *lv, double eps, uint64_t h, char *errstr, size_t errstr_size);

/* Names the cell's keyed draws: the synthesizer's key and stream, and the
 * cell as "<prefix>/<a>/<b>" (e.g. "hypercube/7/45" for depth 7, path 45),
 * formatted only when a keyed draw is made. */
typedef struct dp_isc_keys {
    const dp_key *key;
    const char   *stream_id;
    size_t        stream_id_len;
    const char   *prefix;
    uint64_t      a, b;
} dp_isc_keys;

typedef struct dp_isc_cell {
    int64_t  Stil;      /* noisy total of the completed levels */
    int64_t  closed;    /* true total of the level's closed segments */
    int64_t  open;      /* true count of the open segment */
    int64_t  Ntil;      /* tree output: closed + its node noise */
    int64_t  lambda;    /* the open segment's threshold noise */
    uint32_t nseg;      /* closed segments in the level */
    uint32_t seg_open;  /* a segment is open (lambda valid) */
} dp_isc_cell;

/* The counter's current output S̃ + c_u (checked: |.| < 2^62 by the input bound). */
static inline int64_t dp_isc_output(const dp_isc_cell *c) { return c->Stil + c->Ntil; }

/* One counter step at level `r` with input x; q drawn from `qg`.
 * DP_EINVAL for |x| > 2^40, DP_EHORIZON past the level's h segments,
 * DP_ERANGE on overflow (state unchanged in every error case). */
int dp_isc_step(dp_isc_cell *c, const dp_isc_level *lv, unsigned r, int64_t x, dp_drbg *qg, const dp_isc_keys *k);

/* Level `r` ended: fold its total into S̃ with one draw from fg and start
 * the next level empty. */
int dp_isc_fold(dp_isc_cell *c, const dp_isc_level *lv, dp_drbg *fg);

/* The dense alternative (`hypercube`'s variant "dense", issue 38;
 * docs/privacy.md §8.1): no Alg. 2 inside a level.  The level is cut into
 * public epochs; a cell only accumulates its inputs (dp_isc_add: `open`),
 * and at an epoch's end folds them into S̃ with one draw of Lap_Z(1/ε)
 * (dp_isc_fold_dense), the whole ε = ε_{j,r} on it.  Privacy: a change of one
 * input by at most 1 changes one epoch's total by at most 1 (sensitivity 1),
 * so that fold is ε-DP for it (the Laplace mechanism), and no other draw
 * reads it: the counter is ε_{j,r}-DP, as Lemma 3.3's is.  The output S̃ + 0
 * (Ntil stays 0) lags to the last epoch's end.  DP_ERANGE on overflow. */
int dp_isc_add(dp_isc_cell *c, int64_t x);
int dp_isc_fold_dense(dp_isc_cell *c, const dp_isc_level *lv, dp_drbg *fg);

/* Snapshots: the counts (threshold noise re-derived on load; the level's
 * parameters are the caller's, checked for consistency). */
void dp_isc_save(const dp_isc_cell *c, dp_buf *b);
int  dp_isc_load(dp_isc_cell *c, const dp_isc_level *lv, unsigned r, const dp_isc_keys *k, dp_reader *rd);

#endif
