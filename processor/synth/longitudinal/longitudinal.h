/* longitudinal.h — the ingest state shared by the `window` and
 * `cumulative` synthesizers (seed 000): every individual reports one
 * category per step.
 *
 *   roster     the individuals that report at step 1, indexed 0..n-1 in
 *              the order of their first report (the input log order, so
 *              deterministic).  An id → index hash table serves lookups
 *              only; nothing observable iterates it.
 *   state      per individual, packed: the last `hist_len` values as a
 *              base-c number (most recent = least significant digit) and
 *              `aux_bits` of synthesizer-owned bookkeeping above it
 *              (cumulative: the weight so far).
 *   reported   one bit per individual for the open step.
 *
 * A report is shifted into the history as soon as it is accepted; at
 * close, every individual that did not report gets the public,
 * data-independent imputation (carry_forward: repeat its last value;
 * fixed: a configured value) so that each closes the step with exactly one
 * value.  Memory per individual: ceil(log2 c^hist_len) + aux_bits + 1 bits
 * of state, its id bytes, an 8-byte id offset and 32-64 bytes of hash
 * table (16-byte slots holding ids of up to 11 bytes inline, load factor
 * in (1/4, 1/2]). */
#ifndef DP_LONGITUDINAL_H
#define DP_LONGITUDINAL_H

#include <stddef.h>
#include <stdint.h>

#include "synth/longitudinal/packed.h"
#include "synth/common/synth.h"

typedef enum dp_impute_policy {
    DP_IMPUTE_CARRY_FORWARD = 0,
    DP_IMPUTE_FIXED = 1,
} dp_impute_policy;

/* One entry of the id → index table: the id itself when it is short (one
 * random access per lookup), its hash otherwise (longitudinal_ingest.c). */
typedef struct dp_lingest_slot {
    uint64_t key;
    uint32_t tag;
    uint32_t idx1;            /* index + 1; 0 = empty */
} dp_lingest_slot;

typedef struct dp_lingest {
    /* configuration */
    uint64_t horizon;         /* T: steps 1..T accepted */
    uint32_t categories;      /* c */
    uint32_t hist_len;        /* values kept per individual */
    uint64_t hist_mod;        /* c^hist_len */
    uint32_t hist_top;        /* c^(hist_len-1): weight of the oldest digit */
    unsigned hist_bits;       /* bits to hold 0..hist_mod-1 */
    uint64_t hist_mask;       /* 2^hist_bits - 1 */
    unsigned aux_bits;
    dp_impute_policy impute;
    uint32_t impute_value;
    /* state */
    uint64_t open_step;       /* 1-based */
    size_t   n;               /* roster size */
    size_t   n_reported;      /* in the open step */
    dp_packed state;          /* hist | aux << hist_bits */
    dp_packed reported;       /* width 1 */
    uint8_t  *id_bytes;       /* ids back to back, in index order */
    size_t    id_len, id_cap;
    uint64_t *id_off;         /* n + 1 offsets into id_bytes */
    size_t    off_cap;
    struct dp_lingest_slot *table;   /* open addressing (longitudinal_ingest.c) */
    size_t    table_cap;      /* power of two */
} dp_lingest;

/* Validates ranges (c >= 2, hist_len >= 1, c^hist_len <= 2^32,
 * hist_bits + aux_bits <= 64, impute value < c). */
int  dp_lingest_init(dp_lingest *li, uint64_t horizon, uint32_t categories, uint32_t hist_len,
                     unsigned aux_bits, dp_impute_policy impute, uint32_t impute_value,
                     char *errstr, size_t errstr_size);
void dp_lingest_free(dp_lingest *li);

/* Validate and apply one update (see synth.h for the reasons).  DP_OK with
 * *reason set, or DP_ENOMEM. */
int  dp_lingest_offer(dp_lingest *li, const dp_update *u, dp_reject_reason *reason);
/* Offer u[0..n) in order: exactly n calls of dp_lingest_offer (same
 * reasons, same state), with the roster lookups of later updates
 * prefetched while earlier ones are applied.  On a negative status the
 * update that failed and those after it are not applied and their reasons
 * are unspecified; the ones before it are applied. */
int  dp_lingest_offer_batch(dp_lingest *li, const dp_update *u, size_t n, dp_reject_reason *reasons);

/* Impute every individual that has not reported in the open step and clear
 * the reported bits; returns how many were imputed.  The caller then reads
 * the histories for its statistics and calls dp_lingest_advance. */
uint64_t dp_lingest_impute_missing(dp_lingest *li);
void dp_lingest_advance(dp_lingest *li);

int  dp_lingest_roster_complete(const dp_lingest *li);

static inline uint64_t dp_lingest_hist(const dp_lingest *li, size_t i)
{
    return dp_packed_get(&li->state, i) & li->hist_mask;
}
static inline uint64_t dp_lingest_aux(const dp_lingest *li, size_t i)
{
    return li->aux_bits ? dp_packed_get(&li->state, i) >> li->hist_bits : 0;
}
static inline void dp_lingest_set_aux(dp_lingest *li, size_t i, uint64_t aux)
{
    dp_packed_set(&li->state, i, dp_lingest_hist(li, i) | (aux << li->hist_bits));
}

/* Bytes allocated for per-individual state (for the memory statement). */
size_t dp_lingest_bytes(const dp_lingest *li);

int  dp_lingest_save(const dp_lingest *li, dp_buf *b);
/* li must be initialised with the same configuration. */
int  dp_lingest_load(dp_lingest *li, dp_reader *r);

/* Start closing `step` (ingest_close of a synthesizer built on this
 * state): DP_ESTATE unless it is the open step within the horizon; then
 * every missing report is imputed and `out` is cleared for the step with
 * scalars[0] = roster size and scalars[1] = imputed reports.  The caller
 * adds its statistics from the histories, calls dp_lingest_advance and
 * finishes `out`. */
int  dp_lingest_close_begin(dp_lingest *li, uint64_t step, dp_stats *out);

/* Ingest-half operations (synth.h) for a synthesizer whose ingest state
 * struct begins with its dp_lingest (window, cumulative): they forward to
 * the functions above. */
int  dp_lingest_half_update(dp_ingest_half *in, const dp_update *u, dp_reject_reason *reason);
int  dp_lingest_half_update_batch(dp_ingest_half *in, const dp_update *u, size_t n, dp_reject_reason *reasons);
int  dp_lingest_half_roster_complete(const dp_ingest_half *in);
uint64_t dp_lingest_half_open_step(const dp_ingest_half *in);
int  dp_lingest_half_save(const dp_ingest_half *in, dp_buf *b);
int  dp_lingest_half_load(dp_ingest_half *in, dp_reader *r);

/* Bits needed to hold 0..m-1 (m >= 1). */
unsigned dp_bits_for(uint64_t m);

#endif
