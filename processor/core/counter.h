/* counter.h — private continual counters behind one interface
 * (docs/privacy.md §2).
 *
 * A counter receives one integer x_t per step t = 1, 2, … (negative values
 * are deletions) and after each step releases a noisy prefix sum
 * Σ_{s≤t} x_s.  Its privacy guarantee covers the whole stream: the budget
 * given at creation is the counter's *total* cost over its horizon (or
 * over an unbounded stream for the unbounded kinds), for neighbouring
 * streams that differ in `neighbor_entries` entries by at most
 * `max_abs_change` each.
 *
 * Noise is a deterministic function of (secret key, stream id, counter
 * label, step): every draw comes from dp_drbg_init(key, stream, step,
 * "<label>/<purpose>"), so a counter restored from a snapshot continues
 * with byte-identical outputs and nothing about the noise is stored.
 *
 * Kinds, with their noise structure (details in each counter_<kind>.c):
 *   simple                 every x_t noised once (CSS 2011 "Simple II")
 *   block(T, B)            two-level block counter, B default ceil(sqrt T)
 *   block_unbounded        seed 001 Alg. 4 (stages of growing block size)
 *   tree(T)                binary mechanism, seed 000 Alg. 3
 *   hybrid                 unbounded: log layer + tree per range (CSS 2011)
 *   honaker(T)             tree with Honaker 2015 variance-reduced estimates
 *   sqrt(T)                square-root matrix factorization (FHU 2023)
 *   blt(T, d)              buffered linear Toeplitz (Dvijotham et al. 2024)
 *   sparse(T)              DNRR 2015 sparse counting (seed 004 Alg. 2)
 *   sparse_inhomogeneous   seed 004 Alg. 3
 */
#ifndef DP_COUNTER_H
#define DP_COUNTER_H

#include <stddef.h>
#include <stdint.h>

#include "core/accountant.h"
#include "core/buf.h"
#include "core/drbg.h"

typedef enum dp_counter_kind {
    DP_COUNTER_SIMPLE = 0,
    DP_COUNTER_BLOCK,
    DP_COUNTER_BLOCK_UNBOUNDED,
    DP_COUNTER_TREE,
    DP_COUNTER_HYBRID,
    DP_COUNTER_HONAKER,
    DP_COUNTER_SQRT,
    DP_COUNTER_BLT,
    DP_COUNTER_SPARSE,
    DP_COUNTER_SPARSE_INHOMOGENEOUS,
    DP_COUNTER_KIND_COUNT
} dp_counter_kind;

const char *dp_counter_kind_name(dp_counter_kind kind);
/* DP_OK or DP_EINVAL for an unknown name. */
int dp_counter_kind_parse(const char *name, dp_counter_kind *kind);

typedef struct dp_counter_config {
    dp_counter_kind kind;
    uint64_t   horizon;          /* T; required by bounded kinds, 0 for unbounded ones */
    uint64_t   block;            /* block(B): 0 = ceil(sqrt(T)) */
    uint32_t   buffers;          /* blt(d): 0 = kind default */
    dp_privacy budget;           /* total cost the counter may consume */
    uint32_t   neighbor_entries; /* entries one neighbour changes: 1 (default when 0)
                                    or 2 (replacement: one -Δ and one +Δ entry) */
    uint64_t   max_abs_change;   /* Δ per changed entry; 0 means 1 */
} dp_counter_config;

/* Where a counter's noise comes from.  The key is borrowed and must
 * outlive the counter; stream id and label are copied. */
typedef struct dp_noise_source {
    const dp_key *key;
    const char   *stream_id;
    size_t        stream_id_len;
    const char   *label;         /* purpose-label prefix, unique per counter in a stream */
} dp_noise_source;

typedef struct dp_counter dp_counter;

/* Validate the configuration (unknown kind, missing horizon, a model the
 * kind cannot provide, non-positive budget, …) and build the counter.
 * Returns DP_OK or an error with a message in errstr. */
int dp_counter_create(dp_counter **out, const dp_counter_config *cfg,
                      const dp_noise_source *noise, char *errstr, size_t errstr_size);
void dp_counter_destroy(dp_counter *c);

/* Before creating counters of cfg's kind for many horizons 1..max_horizon
 * (a `cumulative` stream does): let the kind do its per-horizon setup for
 * all of them at once — blt fits every horizon's parameters, several
 * searches side by side, about half the time of one at a time.  Optional and
 * pure: the counters created afterwards are the same bit for bit. */
int dp_counter_prepare_horizons(const dp_counter_config *cfg, uint64_t max_horizon);

/* Feed x_t for the next step and get the noisy prefix sum after it.
 * DP_EHORIZON (state unchanged) once a bounded counter has seen T steps. */
int dp_counter_add(dp_counter *c, int64_t x, int64_t *noisy_prefix);

/* Steps consumed so far. */
uint64_t dp_counter_steps(const dp_counter *c);
const dp_counter_config *dp_counter_config_of(const dp_counter *c);

/* Analytic variance of (output_t - true prefix sum_t) at step t >= 1.
 * Exact for the linear kinds (including the discretisation of the
 * noise); for sparse kinds a stated upper bound (see
 * dp_counter_variance_is_exact). */
double dp_counter_variance(const dp_counter *c, uint64_t t);
int    dp_counter_variance_is_exact(const dp_counter *c);

/* Variance of the noise in the increment output_b − output_a (0 <= a < b;
 * output_0 = 0 exactly, so a = 0 gives dp_counter_variance(c, b)) — the
 * error of a count over the steps (a, b] read off two releases.  Exact
 * where the kind's noise has independent increments (simple: (b − a)·Var
 * of one draw); for the other kinds the Cauchy–Schwarz bound
 * (sd_a + sd_b)², since their two outputs share noise in kind-specific
 * ways.  NAN outside the horizon. */
double dp_counter_variance_between(const dp_counter *c, uint64_t a, uint64_t b);
int    dp_counter_variance_between_is_exact(const dp_counter *c);


/* Sensitivity of the vector of noised quantities to one entry changing by
 * Δ = 1, maximised over entries within the horizon: ℓ1 (pure ε
 * calibration) and ℓ2² (zCDP calibration).  For the tree this is
 * L = floor(log2 T)+1 in both; for sqrt, ℓ2² = Σ_{k<T} c_k².  Used by the
 * privacy-cost tests. */
int dp_counter_sensitivity(const dp_counter *c, double *l1, double *l2sq);

/* Exact snapshot (config, label, stream id, step, internal state; never the
 * key).  Restoring it and continuing gives byte-identical outputs. */
int dp_counter_snapshot(const dp_counter *c, dp_buf *out);
int dp_counter_restore(dp_counter **out, const uint8_t *data, size_t len,
                       const dp_key *key, char *errstr, size_t errstr_size);
/* The same, refusing (DP_ECORRUPT, before any work) a snapshot whose
 * configuration differs from *expect in any field (NULL: no check). */
int dp_counter_restore_expect(dp_counter **out, const uint8_t *data, size_t len, const dp_key *key,
                              const dp_counter_config *expect, char *errstr, size_t errstr_size);

#endif
