/* multiset.h — the exact current multiset of inserted/deleted values that
 * the ingest halves of `marginal` (categorical rows) and `spatial` (points)
 * keep, with the open step's change and the per-user event counts.
 *
 *   items   (entity, value) -> copies present now.  A DELETE must name
 *           its entity (else ENTITY_REQUIRED: matched by value it would
 *           depend on whether anybody else holds the value) and is used
 *           only if its (entity, value) is present (else NOT_PRESENT), so
 *           the decision depends on that entity's own history alone
 *           (docs/privacy.md §1).  An INSERT may be anonymous; such a row
 *           can never be deleted.
 *   delta   value -> its net change in the open step (+1 INSERT, -1 DELETE)
 *   added   value -> INSERTs in the open step (only when track_added: the
 *           insert-only differential data ∇f⁺ of spatial's safe variant)
 *   users   entity -> events used (user-level streams, max_events_per_user
 *           = s: the s+1-th event is USER_LIMIT; an event without an
 *           entity is USER_LIMIT too)
 *
 * A value is an opaque byte string of fixed length.  Hash maps are iterated
 * only to build sorted statistics or sorted snapshots: nothing a release
 * publishes depends on their order. */
#ifndef DP_SYNTH_MULTISET_H
#define DP_SYNTH_MULTISET_H

#include "core/buf.h"
#include "core/bytes_map.h"
#include "core/vec.h"
#include "synth/common/synth.h"

#define DP_MULTISET_MAX_ENTITY 1024

/* A key of items: the map's own copy, which never moves (the map grows
 * by moving slots, not keys) and is never dropped (a count may return to
 * zero; the key stays). */
typedef struct dp_multiset_key {
    const char *key;
    size_t      len;
} dp_multiset_key;

typedef struct dp_multiset {
    size_t       value_len;
    uint32_t     max_events_per_user;   /* 0: event-level */
    int          track_added;
    dp_bytes_map items;
    dp_bytes_map delta;
    dp_bytes_map added;
    dp_bytes_map users;
    uint8_t     *key;                   /* scratch: entity length, entity, value */
    /* items' key order, kept between snapshots so that a snapshot sorts
     * only the keys inserted since the last one (docs/design.md §10):
     * order (all keys, in key order, when order_valid) and fresh (since) */
    dp_multiset_key *order, *fresh;   /* fresh: fresh_v.p */
    dp_vec           fresh_v;
    size_t           n_order, n_fresh;
    int              order_valid;
} dp_multiset;

int  dp_multiset_init(dp_multiset *m, size_t value_len, uint32_t max_events_per_user, int track_added);
void dp_multiset_free(dp_multiset *m);

/* USER_LIMIT or NONE for u's entity (changes nothing). */
dp_reject_reason dp_multiset_check_user(const dp_multiset *m, const dp_update *u);

/* Apply u (an INSERT or DELETE already checked for step, kind and domain)
 * with its value bytes.  *reason = ENTITY_REQUIRED (a DELETE without an
 * entity), NOT_PRESENT, USER_LIMIT or MALFORMED (entity too long) if not
 * used; a rejected or failed update changes nothing.  DP_ENOMEM on out of
 * memory. */
int  dp_multiset_apply(dp_multiset *m, const dp_update *u, const uint8_t *value, dp_reject_reason *reason);

typedef enum dp_multiset_change { DP_MULTISET_NET = 0, DP_MULTISET_ADDED = 1 } dp_multiset_change;

/* fn(ctx, value, count) for every value whose open-step net change (or
 * insert count) is non-zero, in hash order; stops at a non-zero return. */
int  dp_multiset_each(const dp_multiset *m, dp_multiset_change which,
                      int (*fn)(void *ctx, const uint8_t *value, int64_t count), void *ctx);

/* Forget the open step's changes (after its statistics were taken). */
void dp_multiset_next_step(dp_multiset *m);

/* Snapshots: every map in key order.  value_ok(value, ctx) checks a
 * restored value's domain. */
int  dp_multiset_save(const dp_multiset *m, dp_buf *b);
int  dp_multiset_load(dp_multiset *m, dp_reader *r, int (*value_ok)(const uint8_t *value, const void *ctx),
                      const void *ctx);

#endif
