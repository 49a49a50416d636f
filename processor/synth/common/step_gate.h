/* step_gate.h — the one place that decides what an update does to its
 * stream: use it in the open step, hold it for a later step, ignore it,
 * reject it (and why), or close the step.  `dpstream run` (stream/), the
 * offline `dpstream replay` (app/) and the benchmarks all call this, so the
 * Kafka and the offline paths cannot reach different decisions
 * (docs/design.md §2, §6).  No I/O: the caller owns the log (offsets, markers,
 * transactions, dead letters) and is told what to do.
 *
 * The rule (docs/privacy.md §1: every decision depends only on the update's
 * own fields, its own entity's history and public step boundaries):
 *
 *   CLOSE_STEP, step < open            IGNORED (duplicate marker, harmless)
 *   stream exhausted                   REJECTED EXHAUSTED
 *   CLOSE_STEP, step > open            REJECTED FUTURE_STEP
 *   CLOSE_STEP, step = open            CLOSE
 *   data, step < open                  REJECTED LATE
 *   data, open < step <= open + L      BUFFERED: applied, in arrival order,
 *                                      right after the close that opens
 *                                      its step (L = policy.lookahead)
 *   data, step > open + L              REJECTED FUTURE_STEP
 *   data, step = open                  the synthesizer's ingest decides:
 *                                      USED, or REJECTED with its reason
 *                                      (WRONG_KIND, UNKNOWN_ENTITY, …)
 *   USED and policy.close_on_roster    … and CLOSE when every rostered
 *     and the roster is complete         entity has reported (opt-in: the
 *                                      time of such a close reveals when
 *                                      the last person reported)
 *
 * A rejected update changes no state (synth.h), so a caller may re-offer
 * the updates after a close one by one. */
#ifndef DP_SYNTH_STEP_GATE_H
#define DP_SYNTH_STEP_GATE_H

#include <stddef.h>
#include <stdint.h>

#include "synth/common/synth.h"

/* How far ahead data may run (steps), and whether a complete roster
 * closes the step.  Public configuration (stream_config.h parses it per
 * route).  lookahead is 0 or 1: with 1, everything held when step t
 * closes is for step t + 1 and is applied by that same close, so nothing
 * is held across a snapshot (stream/ relies on this). */
typedef struct dp_gate_policy {
    uint32_t lookahead;
    int      close_on_roster;
} dp_gate_policy;

#define DP_GATE_MAX_LOOKAHEAD 1

typedef enum dp_gate_action {
    DP_GATE_USED = 0,     /* ingested into the open step */
    DP_GATE_BUFFERED,     /* held for a later step; its verdict comes at that close */
    DP_GATE_IGNORED,      /* a CLOSE_STEP for a step already closed */
    DP_GATE_REJECTED,     /* v->reason says why; the update changed nothing */
    DP_GATE_CLOSE,        /* a CLOSE_STEP for the open step: call dp_gate_close */
} dp_gate_action;

typedef struct dp_gate_verdict {
    dp_gate_action   action;
    dp_reject_reason reason;       /* REJECTED only */
    int              close_after;  /* USED, and the policy closes the step now */
    char             text[160];    /* REJECTED: one line for the dead letter */
} dp_gate_verdict;

/* A held update's verdict, reported when its step opens.  origin and raw
 * are what the caller gave dp_gate_offer (log position, original bytes). */
typedef int (*dp_gate_applied_fn)(void *ctx, const dp_update *u, uint64_t origin, const uint8_t *raw,
                                  size_t raw_len, dp_reject_reason reason);

typedef struct dp_gate_held dp_gate_held;

#define DP_GATE_DIGEST_BYTES 32

typedef struct dp_step_gate {
    dp_synth      *synth;        /* borrowed */
    dp_gate_policy policy;
    dp_gate_held  *held;         /* in arrival order */
    size_t         n_held, cap_held;
    /* optional input digest of the open step (dp_gate_track_input) */
    int            digest_on;
    uint8_t        digest_key[32];
    uint64_t       digest_sum[DP_GATE_DIGEST_BYTES / 8];
} dp_step_gate;

/* Hold the next step's data; close on markers (and the public step timer)
 * only: no decision depends on anyone else's data. */
extern const dp_gate_policy dp_gate_policy_default;

void dp_gate_init(dp_step_gate *g, dp_synth *synth, const dp_gate_policy *policy);
/* Frees the held updates (not the synthesizer). */
void dp_gate_free(dp_step_gate *g);
/* Drops the held updates (the caller rewinds the log to before them). */
void dp_gate_drop_held(dp_step_gate *g);

/* Decide u.  origin/raw are kept only if u is held.  DP_OK with *v set, or
 * a negative status on an internal failure (out of memory). */
int dp_gate_offer(dp_step_gate *g, const dp_update *u, uint64_t origin, const uint8_t *raw, size_t raw_len,
                  dp_gate_verdict *v);

/* 1 if u is plain data for the open step of a stream that still runs:
 * such updates may be offered as a run with dp_gate_offer_run. */
int dp_gate_run_eligible(const dp_step_gate *g, const dp_update *u);

/* Offer u[0..n), all run-eligible, exactly as n dp_gate_offer calls would
 * up to the first close: reasons[i] for u[i] (NONE = used).  *taken is the
 * number decided; if *close_due the step must close right after
 * u[*taken - 1] and the rest, u[*taken..n), must be offered again after
 * the close (they changed nothing). */
int dp_gate_offer_run(dp_step_gate *g, const dp_update *u, size_t n, dp_reject_reason *reasons, size_t *taken,
                      int *close_due);

/* Close the open step through sink, then apply the held updates of the
 * step that opens, calling applied() for each.  *close_due is set if the
 * policy closes the new step at once (its roster completed by held
 * updates).  Statuses as dp_synth_close_step, or applied()'s own. */
int dp_gate_close(dp_step_gate *g, const dp_release_sink *sink, dp_gate_applied_fn applied, void *ctx,
                  int *close_due, char *errstr, size_t errstr_size);

/* dp_gate_close for one shard of a sharded stream (docs/kafka.md §10):
 * the same, except that the step closes through dp_synth_close_ingest —
 * its exact statistics into *out, nothing released.  Statuses as
 * dp_synth_close_ingest, or applied()'s own. */
int dp_gate_close_ingest(dp_step_gate *g, dp_stats *out, dp_gate_applied_fn applied, void *ctx, int *close_due,
                         char *errstr, size_t errstr_size);

/* Keep a digest of the updates used in each step: the sum, lane-wise
 * mod 2^64, of a keyed BLAKE2b of each used update's canonical fields —
 * a multiset hash, so the order of a step's updates (which does not
 * change its release) does not change it either.  Keyed (derive the key
 * from the noise key) so a stored digest reveals nothing about the input.
 * Off unless asked for: it costs a hash per update (replay --ledger). */
void dp_gate_track_input(dp_step_gate *g, const uint8_t key[32]);
/* The open step's digest so far (all zero before anything was used). */
void dp_gate_open_digest(const dp_step_gate *g, uint8_t out[DP_GATE_DIGEST_BYTES]);

/* The smallest origin among held updates, or UINT64_MAX if none. */
uint64_t dp_gate_first_held_origin(const dp_step_gate *g);
size_t   dp_gate_held_count(const dp_step_gate *g);

#endif
