/* stats_record.h — the statistics record of a sharded stream
 * (docs/kafka.md §10): one shard's exact statistics of one closed step, as
 * an ingest instance publishes it to `<prefix>.stats` and a release
 * instance reads it, and the merger that collects a step's records from
 * every shard before the step may be released.
 *
 * Layout (core/buf.h encoding; internal, not Avro):
 *
 *   header = "DPS1" ‖ blob(updates topic) ‖ blob(stream id) ‖ u64 step
 *            ‖ u32 shard ‖ u32 shard count ‖ u8 sealed
 *   record = header ‖ blob(body)
 *   body   = sealed: seal.h's nonce ‖ ciphertext ‖ tag of the statistics
 *            (dp_stats_save), under the state key, the header as
 *            associated data;
 *            else:   the statistics ‖ dp_mac(noise key, "dpstream.stats.mac.v1",
 *                    header, statistics).
 *
 * The shard is the updates-topic partition the statistics were computed
 * from, the shard count that topic's partition count.  The header is
 * authenticated either way, so a record cannot be moved to another stream,
 * step, shard or topic; the MAC label and the "DPS1" magic set it apart
 * from a snapshot's MAC and seal.  The statistics are exact counts of
 * personal data: the topic needs the updates topic's access controls and
 * is never exported.
 *
 * Owns: nothing but what the merger holds.  Calls: seal (MAC, seal,
 * unseal), stats (save, load, merge), buf. */
#ifndef DP_STREAM_STATS_RECORD_H
#define DP_STREAM_STATS_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/drbg.h"
#include "synth/common/stats.h"

/* The public fields of a record; strings borrow from the encoded bytes
 * (not NUL-terminated). */
typedef struct dp_stats_record {
    const char *updates_topic;
    size_t      updates_topic_len;
    const char *stream_id;
    size_t      stream_id_len;
    uint64_t    step;
    uint32_t    shard;
    uint32_t    shard_count;
} dp_stats_record;

/* Append the record of shard r->shard's statistics s (finished, s->step ==
 * r->step) to out: sealed iff state_key, else MAC'd under mac_key.  DP_OK,
 * DP_EINVAL (a shard not below the count, a step that disagrees, no key),
 * DP_ENOMEM. */
int dp_stats_record_encode(const dp_stats_record *r, const dp_stats *s, const dp_key *state_key,
                           const dp_key *mac_key, dp_buf *out, char *errstr, size_t errstr_size);

/* Decode and authenticate a record of a stream whose updates topic has
 * `shard_count` partitions: *r borrows from data, *s receives the
 * statistics.  DP_OK, or DP_ECORRUPT with a reason that names the shard
 * and step when they could be read: not a statistics record, a shard
 * count other than shard_count, a shard not below it, sealed without a
 * state key here (or the other way round), a MAC or seal that does not
 * verify, statistics of another step than the header's.  DP_ENOMEM. */
int dp_stats_record_decode(const uint8_t *data, size_t len, uint32_t shard_count, const dp_key *state_key,
                           const dp_key *mac_key, dp_stats_record *r, dp_stats *s, char *errstr,
                           size_t errstr_size);

/* --- the merger: one stream's steps, each complete when every shard's
 * statistics have arrived --------------------------------------------------- */

typedef struct dp_stats_pending dp_stats_pending;

typedef struct dp_stats_merger {
    char             *stream_id;
    size_t            stream_id_len;
    uint32_t          shards;
    uint64_t          released;   /* the last step taken (0: none); a record at or below it repeats a step */
    dp_stats_pending *pending;    /* steps with some shards' statistics, by step */
    size_t            n_pending;
} dp_stats_merger;

/* A merger for `shards` shards of a stream whose steps up to `released`
 * are already released (its restored state).  DP_OK, DP_EINVAL (0
 * shards), DP_ENOMEM. */
int  dp_stats_merger_init(dp_stats_merger *m, const char *stream_id, size_t stream_id_len, uint32_t shards,
                          uint64_t released);
void dp_stats_merger_free(dp_stats_merger *m);
/* Add a decoded record's statistics (copied).  DP_OK, or DP_ECORRUPT
 * naming shard and step: another stream, another shard count, a shard
 * not below it, a step already released, a (step, shard) already
 * added.  DP_ENOMEM. */
int  dp_stats_merger_add(dp_stats_merger *m, const dp_stats_record *r, const dp_stats *s, char *errstr,
                         size_t errstr_size);
/* 1 if every shard 0..shards-1 has added its statistics of `step`. */
int  dp_stats_merger_complete(const dp_stats_merger *m, uint64_t step);
/* 1 if shard `shard`'s statistics of `step` have been added and the step is
 * not yet taken (which shards a step waits for: public, docs/kafka.md §10). */
int  dp_stats_merger_has(const dp_stats_merger *m, uint64_t step, uint32_t shard);
/* The merged statistics of a complete step, summed in shard order into
 * *out (cleared first), and the step released: its shards' records are
 * dropped and later records of it refused.  Steps are released in order:
 * DP_ESTATE for an incomplete step or one after released + 1. */
int  dp_stats_merger_take(dp_stats_merger *m, uint64_t step, dp_stats *out);

/* The pending state (docs/kafka.md §10): the statistics of the steps not
 * yet complete, and the last step taken — what a release instance keeps
 * beside its release-role snapshot (dp_synth_snapshot_role), so one
 * restarted mid-step resumes without re-reading the records it merged:
 *
 *   "DPM1" ‖ blob(stream id) ‖ u32 shards ‖ u64 released ‖ u32 n steps
 *   ‖ n × (u64 step ‖ u32 n shards in ‖ that many × (u32 shard ‖ blob(dp_stats_save)))
 *
 * steps and shards ascending (the bytes do not depend on the order the
 * records arrived).  Exact statistics of personal data: it belongs in the
 * state topic's sealed or MAC'd record, never in published output.
 * dp_stats_merger_load inits *m for (stream, shards) with `released` the
 * restored release half's last released step and refuses (DP_ECORRUPT,
 * nothing held) another kind, a truncated state, another stream, shard
 * count or released step, and a pending step the merger's add refuses. */
int dp_stats_merger_save(const dp_stats_merger *m, dp_buf *out);
int dp_stats_merger_load(dp_stats_merger *m, const char *stream_id, size_t stream_id_len, uint32_t shards,
                         uint64_t released, const uint8_t *data, size_t len, char *errstr, size_t errstr_size);

#endif
