/* state_record.h — the records of the compacted state topic.
 *
 * Two kinds of record:
 *
 *   stream snapshot (key = the stream id): the codec's Snapshot
 *     (schemas/Snapshot.avsc) — stream, last closed step, input topic /
 *     partition / offset, synthesizer name and its exact binary state.
 *     When a state key is configured the state is sealed (seal.h) with the
 *     public fields as associated data, so a snapshot cannot be replayed
 *     under another stream, step or offset.  A state whose (sealed) bytes
 *     exceed the chunk size is split into chunk_count Snapshot messages,
 *     written in the same transaction: each repeats every public field
 *     (step, offsets, chunk_count, nonce) and carries one consecutive
 *     piece of the state bytes — of the ciphertext when sealed, so one
 *     authentication tag covers the whole reassembled state.
 *
 *     Keys (dp_state_snapshot_key): chunk 0 under the stream id itself,
 *     chunk i > 0 under  stream id ‖ 0xFF ‖ u32 big-endian i.  Stream ids are
 *     valid UTF-8 (codec.h), in which the byte 0xFF never occurs, so a
 *     chunk key can never equal another stream's key (nor a progress key,
 *     which is ASCII) and the id is everything before the first 0xFF.
 *     Compaction keeps the newest value per key, so after a snapshot with
 *     fewer chunks than the one before, keys of higher indices still hold
 *     chunks of the older snapshot: a restore takes chunk 0 (always
 *     rewritten) as the authority and accepts only chunks that agree with
 *     it on step, skip offset, chunk count and every other public field
 *     (dp_state_decode_chunks); anything else is stale and ignored, and a
 *     missing index makes the snapshot unrestorable (DP_ECORRUPT) rather
 *     than silently short.
 *
 *     Format 2 (incremental snapshots, state_cas.h): the same record,
 *     keys and splitting, but its state is a manifest naming content-
 *     addressed chunk records stored under their own keys; a restore
 *     (dp_state_decode_newest) assembles the state from them.  Format-1
 *     snapshots, written before, still restore.
 *
 *   partition progress (key = DP_STATE_PROGRESS_KEY_PREFIX topic "/" partition):
 *     "DPP2" ‖ blob(updates topic) ‖ u32 partition ‖ i64 position ‖ i64 resume
 *     ‖ u32 partition count
 *     (core/buf.h encoding; the magic can never start an Avro Snapshot,
 *     whose first byte is the zig-zag schema_version 1 = 0x02, or a
 *     Confluent frame, 0x00).  Internal to the processor.  The partition
 *     count is the updates topic's when the state was committed (streams
 *     are pinned to partitions by key hash modulo that count); "DPP1"
 *     records, written before it was kept, decode with count 0 (unknown).
 *
 * input_offset / skip_below: the input offset just after the message that
 * closed the step; every update of this stream at a lower offset is
 * reflected in the snapshot and must be skipped on replay.  position: the
 * offset just after the last input message whose effects (releases, dead
 * letters) were committed with this record — rejections below it were
 * already published.  resume: the committed consumer offset of the same
 * transaction (processor.c explains why it may lag `position`).
 *
 * The noise key is never part of a record; the synthesizer state never
 * contains it either (synth.h). */
#ifndef DP_STREAM_STATE_RECORD_H
#define DP_STREAM_STATE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "codec/codec.h"
#include "core/buf.h"
#include "core/drbg.h"

/* State-topic keys of the processor's own records live under this prefix;
 * no stream id may start with it (stream_config.h routes none there), so a
 * stream's snapshot key can never equal a progress key. */
#define DP_STATE_RESERVED_KEY_PREFIX "__dpstream."
#define DP_STATE_PROGRESS_KEY_PREFIX DP_STATE_RESERVED_KEY_PREFIX "progress/"
/* The byte that separates a stream id from a chunk index in a key. */
#define DP_STATE_CHUNK_KEY_SEP 0xFFu

typedef enum dp_state_kind { DP_STATE_SNAPSHOT = 1, DP_STATE_PROGRESS = 2 } dp_state_kind;

/* Decoded record; pointers borrow from the codec, the encoded bytes or,
 * for an opened state, the caller's scratch buffer. */
typedef struct dp_state_record {
    dp_state_kind  kind;
    const char    *updates_topic;      /* NUL-terminated */
    size_t         updates_topic_len;
    int32_t        partition;
    /* snapshot */
    const char    *stream_id;
    size_t         stream_id_len;
    int64_t        skip_below;
    uint64_t       open_step;          /* last closed step + 1 */
    const char    *synthesizer;        /* NUL-terminated */
    const uint8_t *state;
    size_t         state_len;
    uint32_t       format;             /* snapshot layout: 1, or 2 = incremental (state_cas.h); encode: 0 = 1 */
    uint32_t       chunk_count;        /* decode: messages under the stream's index keys (chunk 0 and i > 0) */
    /* progress */
    int64_t        position;
    int64_t        resume;
    int32_t        partition_count;    /* the updates topic's partitions when committed; 0 = unknown */
} dp_state_record;

/* Encode a snapshot record; the state is sealed iff state_key != NULL.
 * Otherwise it is authenticated: a keyed BLAKE2b-256 MAC over every
 * public field and the state follows the state bytes (DP_STATE_MAC_BYTES),
 * under a subkey of mac_key (the noise key: every instance that may
 * restore the stream has it; whoever can only write the state topic does
 * not).  A decode refuses a plaintext snapshot whose MAC does not verify,
 * naming the stream and step — so state can be neither altered nor
 * injected, sealed or not. */
#define DP_STATE_MAC_BYTES 32
int dp_state_encode_snapshot(dp_codec *codec, const dp_state_record *r, const dp_key *state_key,
                             const dp_key *mac_key, dp_buf *out, char *errstr, size_t errstr_size);
/* Split form: the state (sealed first iff state_key) is cut into pieces of
 * at most chunk_bytes bytes (>= 1; one chunk if it fits, also for an empty
 * state) and each encoded chunk handed to emit in index order.  *out is
 * reused for every chunk (cleared before each).  emit's non-DP_OK status
 * stops the loop and is returned. */
typedef int (*dp_state_chunk_fn)(void *ctx, uint32_t chunk_index, uint32_t chunk_count,
                                 const dp_buf *encoded);
int dp_state_encode_snapshot_chunks(dp_codec *codec, const dp_state_record *r, const dp_key *state_key,
                                    const dp_key *mac_key, size_t chunk_bytes, dp_buf *out, dp_state_chunk_fn emit, void *ctx,
                                    char *errstr, size_t errstr_size);

/* Kafka key of chunk `chunk_index` of stream_id's snapshot (see above),
 * written into *out (cleared first). */
int dp_state_snapshot_key(const char *stream_id, size_t stream_id_len, uint32_t chunk_index, dp_buf *out);
/* 1 if key is a chunk key of index > 0 (those are read through chunk 0). */
int dp_state_key_is_chunk(const void *key, size_t key_len);

/* What a restore needs to know about a snapshot message before assembling:
 * DP_ECORRUPT if it is not a decodable Snapshot. */
typedef struct dp_state_chunk_info {
    uint32_t chunk_index;
    uint32_t chunk_count;
    uint64_t last_closed_step;
    int64_t  input_offset;
} dp_state_chunk_info;
int dp_state_chunk_peek(dp_codec *codec, const uint8_t *data, size_t len, dp_state_chunk_info *out);

/* Which updates-topic partition a state record (a snapshot chunk, a
 * content chunk or a progress record) belongs to, read from its public fields without opening
 * any sealed state: *topic borrows from data or from the codec (valid until
 * its next decode).  DP_ECORRUPT if it is neither kind. */
int dp_state_owner(dp_codec *codec, const uint8_t *data, size_t len, const char **topic, size_t *topic_len,
                   int32_t *partition);

int dp_state_encode_progress(const dp_state_record *r, dp_buf *out);

/* Decode either kind.  A sealed snapshot needs state_key (else DP_EINVAL);
 * its state is opened into *scratch.  A plaintext snapshot is refused when
 * a state key is configured (whoever can write the state topic must not
 * be able to inject state).  DP_ECORRUPT on a malformed or unauthentic
 * record. */
int dp_state_decode(dp_codec *codec, const uint8_t *data, size_t len, const dp_key *state_key,
                    const dp_key *mac_key, dp_state_record *out, dp_buf *scratch, char *errstr, size_t errstr_size);

/* Assemble one stream's snapshot from the chunk messages found under its
 * keys, in any order.  The authority is the index-0 chunk (the one with
 * the greatest step if several are given); for each index 1..count-1 the
 * first piece that agrees with it on every public field is used, pieces
 * that do not (older snapshots, indices >= count, other streams) are
 * ignored.  DP_ECORRUPT if chunk 0 or any index is missing, or a piece is
 * not a Snapshot.  A single piece of count 1 is exactly dp_state_decode. */
typedef struct dp_state_piece {
    const uint8_t *data;
    size_t         len;
} dp_state_piece;
int dp_state_decode_chunks(dp_codec *codec, const dp_state_piece *pieces, size_t n_pieces,
                           const dp_key *state_key, const dp_key *mac_key, dp_state_record *out, dp_buf *scratch,
                           char *errstr, size_t errstr_size);

/* The newest value a reader of the compacted state topic holds under `key`
 * (NULL if none or a tombstone): the caller's newest-per-key table. */
typedef const dp_state_piece *(*dp_state_lookup_fn)(void *ctx, const void *key, size_t key_len);

/* Decode the record whose newest value under `key` is `first`, as a restore
 * does: a snapshot of several chunks is assembled from the newest values
 * under its chunk keys (at most n_keys of them exist, which bounds what a
 * corrupt chunk count can make it allocate), and a format-2 snapshot's
 * state from the content chunks its manifest names (a missing one is
 * DP_ECORRUPT naming it); anything else is dp_state_decode.  digests (may
 * be NULL) receives a format-2 snapshot's sorted unique chunk digests
 * (cleared otherwise).  Keys, errors as for dp_state_decode_chunks. */
int dp_state_decode_newest(dp_codec *codec, const char *key, size_t key_len, const dp_state_piece *first,
                           dp_state_lookup_fn lookup, void *ctx, size_t n_keys, const dp_key *state_key,
                           const dp_key *mac_key, dp_state_record *out, dp_buf *scratch, dp_buf *digests,
                           char *errstr, size_t errstr_size);

#endif
