/* state_cas.h — incremental snapshots: a stream's state stored as
 * content-addressed chunks on the compacted state topic (snapshot format 2).
 *
 * Why: at n = 10^6 a window stream's state is ~9 MB, of which the roster
 * (~8 MB) never changes after step 1.  Rewriting all of it every step sent
 * ~19 MB per step through the broker.  Format 2 writes only the chunks
 * whose content changed.
 *
 * Chunking is content-defined (a gear rolling hash over the serialized
 * state cuts where the hash's top bits are zero, between a minimum and the
 * maximum chunk size).  Fixed offsets would not do: the state is one flat
 * buffer in which a length or counter that grows in front of the roster
 * shifts every later byte.  With content-defined cuts a change disturbs
 * only the chunks that hold it (and at most the neighbour on each side);
 * the cuts after it resynchronise within a chunk, so the unchanged roster
 * keeps the same chunks.  Cut points are a pure function of the state
 * bytes (the gear table is fixed and public), so the records written are
 * a pure function of the state too.
 *
 * Digest: BLAKE2b-256 keyed with a subkey of the state key (or, without
 * one, of the noise key) over the stream id and the chunk's plaintext.
 * Keyed, so that whoever reads the topic cannot confirm a guess of a
 * chunk's content from its digest.  What the topic does reveal (README,
 * "State topic"): which chunks of a stream's state stayed equal from one
 * snapshot to the next, and each chunk's size — the sizes of whole
 * snapshots were already visible.
 *
 * Records (all in the step's transaction, before the stream's chunk 0):
 *
 *   content chunk, key = stream id ‖ 0xFF ‖ digest (32 bytes):
 *     "DPC1" ‖ blob(updates topic) ‖ u32 partition ‖ u8 sealed ‖ payload
 *     payload = the chunk's plaintext (authenticated by its keyed digest,
 *     which the authenticated manifest lists), or when a state key is set,
 *     dp_seal(plaintext) with associated data "dpstream.state.chunk.ad.v1"
 *     ‖ blob(stream id) ‖ digest — each chunk sealed on its own.
 *     Written only if its digest is not already in the stream's last
 *     committed manifest (that record is then still the newest under its
 *     key: nothing tombstoned it).
 *
 *   manifest = the state of a format-2 Snapshot (state_record.h, keyed and
 *     split exactly like a format-1 snapshot, sealed or MACed as one):
 *     "DPM1" ‖ u64 state length ‖ u32 n ‖ n × (digest ‖ u32 chunk length),
 *     the chunks in state order.
 *
 *   tombstones: for each digest of the previous manifest that the new one
 *     does not list, so compaction keeps exactly the chunks the newest
 *     manifest names.  An aborted transaction takes its chunks, manifest
 *     and tombstones with it; the stream is then restored from the last
 *     committed manifest, whose chunks were never tombstoned by a
 *     committed transaction. */
#ifndef DP_STREAM_STATE_CAS_H
#define DP_STREAM_STATE_CAS_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/drbg.h"
#include "stream/state_record.h"

#define DP_CAS_DIGEST_BYTES 32
/* The "dpstream.type" header of content-chunk records and their tombstones. */
#define DP_STATE_CHUNK_TYPE "SnapshotChunk"

/* Where a stream's chunks belong (their public routing fields). */
typedef struct dp_cas_stream {
    const char *stream_id;
    size_t      stream_id_len;
    const char *updates_topic;
    size_t      updates_topic_len;
    int32_t     partition;
} dp_cas_stream;

/* Content-defined cut points of data[0..len) for chunks of at most
 * max_bytes (>= 1): *ends (malloc'd, caller frees) receives the end offset
 * of each chunk, *n their number (0 for an empty state).  A pure function
 * of the bytes and max_bytes. */
int dp_cas_split(const uint8_t *data, size_t len, size_t max_bytes, size_t **ends, size_t *n);

/* Key of a content chunk: stream id ‖ 0xFF ‖ digest, into *out (cleared). */
int dp_cas_chunk_key(const char *stream_id, size_t stream_id_len, const uint8_t digest[DP_CAS_DIGEST_BYTES],
                     dp_buf *out);
/* 1 if key is a content-chunk key (as opposed to a manifest piece's). */
int dp_cas_key_is_content(const void *key, size_t key_len);
/* 1 if the value is a content-chunk record ("DPC1"). */
int dp_cas_is_chunk_record(const uint8_t *data, size_t len);
/* The routing fields of a content-chunk record (topic borrows from data). */
int dp_cas_chunk_owner(const uint8_t *data, size_t len, const char **topic, size_t *topic_len, int32_t *partition);

/* A record to write: val == NULL is a tombstone. */
typedef int (*dp_cas_emit_fn)(void *ctx, const uint8_t *key, size_t key_len, const uint8_t *val, size_t val_len);

/* Cut the state, emit every chunk whose digest is not in `known` (sorted,
 * unique digests of the stream's last committed manifest; n_known of
 * them), and build the manifest into *manifest (cleared).  *digests
 * (cleared) receives the new manifest's digests, sorted and unique — the
 * `known` of the next call.  *n_written and *written get the number of
 * chunk records emitted and their bytes (keys and values). */
int dp_cas_write(const dp_cas_stream *st, const uint8_t *state, size_t state_len, size_t max_bytes,
                 const dp_key *state_key, const dp_key *mac_key, const uint8_t *known, size_t n_known,
                 dp_buf *manifest, dp_buf *digests, dp_cas_emit_fn emit, void *ctx, size_t *n_written, size_t *written,
                 char *errstr, size_t errstr_size);

/* Emit a tombstone for every digest of old (sorted, unique) not in new. */
int dp_cas_tombstones(const char *stream_id, size_t stream_id_len, const uint8_t *old_d, size_t n_old,
                      const uint8_t *new_d, size_t n_new, dp_cas_emit_fn emit, void *ctx);

/* Rebuild a state from its manifest: for each listed digest, the newest
 * value under its key (lookup), verified (keyed digest, and the seal when
 * state_key) and appended to *state (cleared first).  *digests (if not
 * NULL, cleared) receives the sorted unique digests.  DP_ECORRUPT with a
 * message naming the stream, the step and the chunk if a chunk is missing
 * or does not verify: never a partial or wrong state. */
int dp_cas_assemble(const char *stream_id, size_t stream_id_len, uint64_t step, const uint8_t *manifest,
                    size_t manifest_len, dp_state_lookup_fn lookup, void *ctx, const dp_key *state_key,
                    const dp_key *mac_key, dp_buf *state, dp_buf *digests, char *errstr, size_t errstr_size);

#endif
