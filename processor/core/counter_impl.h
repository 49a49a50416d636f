/* counter_impl.h — what a counter kind implements (private to core/).
 *
 * counter.c owns everything common: validation, the step index, noise
 * labels, the snapshot envelope, horizon enforcement.  A kind file
 * (counter_<kind>.c) supplies a dp_counter_ops table and keeps its own
 * state behind c->impl. */
#ifndef DP_COUNTER_IMPL_H
#define DP_COUNTER_IMPL_H

#include "core/counter.h"
#include "core/sample.h"

struct dp_counter {
    const struct dp_counter_ops *ops;
    dp_counter_config cfg;          /* normalised: neighbor_entries, max_abs_change >= 1 */
    const dp_key *key;
    char    *stream_id;
    size_t   stream_id_len;
    char    *label;
    uint64_t t;                     /* steps consumed; the step being added is t+1 */
    void    *impl;
    /* Test instrumentation, NULL in production: see dp_counter_trace_noised. */
    void   (*trace)(void *ctx, uint64_t step, const char *purpose, int64_t value);
    void    *trace_ctx;
};

typedef struct dp_counter_ops {
    dp_counter_kind kind;
    int bounded;                    /* requires cfg.horizon >= 1 */
    int supports_pure;              /* can calibrate to ε (discrete Laplace) */
    int supports_zcdp;              /* can calibrate to ρ (discrete Gaussian) */
    int exact_variance;             /* variance() is exact, not a bound */
    /* Allocate c->impl and calibrate noise from c->cfg. */
    int    (*init)(dp_counter *c, char *errstr, size_t errstr_size);
    /* Consume x for step c->t + 1 (counter.c increments t afterwards). */
    int    (*add)(dp_counter *c, int64_t x, int64_t *noisy_prefix);
    double (*variance)(const dp_counter *c, uint64_t t);
    /* Optional: exact Var(noise of output_b − output_a), 0 < a < b
     * (counter.c falls back to a bound without it). */
    double (*variance_between)(const dp_counter *c, uint64_t a, uint64_t b);
    int    (*sensitivity)(const dp_counter *c, double *l1, double *l2sq);
    /* Kind state only; counter.c writes the envelope.  load runs after init. */
    int    (*save)(const dp_counter *c, dp_buf *b);
    int    (*load)(dp_counter *c, dp_reader *r);
    void   (*fini)(dp_counter *c);
    /* Optional: do the per-horizon work of creating counters of cfg's
     * kind for every horizon 1..max_horizon at once (blt: its fits, run
     * side by side).  Pure: changes no counter's parameters. */
    int    (*prepare_horizons)(const dp_counter_config *cfg, uint64_t max_horizon);
} dp_counter_ops;

/* The generator for one purpose at one step of this counter:
 * dp_drbg_init(key, stream, step, "<label>/<purpose>"). */
void dp_counter_drbg(const dp_counter *c, dp_drbg *g, uint64_t step, const char *purpose);

/* Kinds call this with the exact pre-noise value of every quantity they
 * noise (no-op unless a test installed c->trace).  Feeding a unit impulse
 * e_s and counting the non-zero traced values enumerates, on the real code
 * path, the noised sums that entry s enters (its sensitivity structure). */
void dp_counter_trace_noised(const dp_counter *c, uint64_t step, const char *purpose, int64_t value);
void dp_counter_set_trace(dp_counter *c,
                          void (*trace)(void *ctx, uint64_t step, const char *purpose, int64_t value),
                          void *ctx);

/* Noise calibration shared by the kinds.  For a mechanism in which one
 * changed entry touches noised quantities with ℓ1 norm `l1` and squared
 * ℓ2 norm `l2sq` (per unit change), spending the counter's whole budget:
 *   pure ε: DLap scale  b  = l1 · entries · Δ / ε
 *   zCDP ρ: DGauss σ²      = l2sq · entries · Δ² / (2ρ)
 * where entries = neighbor_entries.  For entries = 2 (replacement) the
 * factor is exact in ℓ1 by the triangle inequality and in ℓ2² because the
 * two changes have opposite signs and every kind's noised quantities are
 * non-negative combinations of the inputs (so the cross term is <= 0).
 * Rounds the rational up (more noise), never down. */
int dp_counter_calibrate_dlap(const dp_counter *c, double l1, double budget_fraction,
                              dp_dlap *out, dp_rational *scale, char *errstr, size_t errstr_size);
int dp_counter_calibrate_dgauss(const dp_counter *c, double l2sq, double budget_fraction,
                                dp_dgauss *out, dp_rational *sigma2, char *errstr, size_t errstr_size);

extern const dp_counter_ops dp_counter_ops_simple;
extern const dp_counter_ops dp_counter_ops_block;
extern const dp_counter_ops dp_counter_ops_block_unbounded;
extern const dp_counter_ops dp_counter_ops_tree;
extern const dp_counter_ops dp_counter_ops_hybrid;
extern const dp_counter_ops dp_counter_ops_honaker;
extern const dp_counter_ops dp_counter_ops_sqrt;
extern const dp_counter_ops dp_counter_ops_blt;
extern const dp_counter_ops dp_counter_ops_sparse;
extern const dp_counter_ops dp_counter_ops_sparse_inhomogeneous;

#endif
