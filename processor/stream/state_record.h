/* state_record.h — the records of the compacted state topic.
 *
 * Two kinds of record:
 *
 *   stream snapshot (key = the stream id): the codec's Snapshot
 *     (schemas/Snapshot.avsc) — stream, last closed step, input topic /
 *     partition / offset, synthesizer name and its exact binary state.
 *     When a state key is configured the state is sealed (seal.h) with the
 *     public fields as associated data, so a snapshot cannot be replayed
 *     under another stream, step or offset.  One chunk (chunk_count 1).
 *
 *   partition progress (key = DP_STATE_PROGRESS_KEY_PREFIX topic "/" partition):
 *     "DPP1" ‖ blob(updates topic) ‖ u32 partition ‖ i64 position ‖ i64 resume
 *     (core/buf.h encoding; the magic can never start an Avro Snapshot,
 *     whose first byte is the zig-zag schema_version 1 = 0x02, or a
 *     Confluent frame, 0x00).  Internal to the processor.
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

#define DP_STATE_PROGRESS_KEY_PREFIX "__dpstream.progress/"

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
    /* progress */
    int64_t        position;
    int64_t        resume;
} dp_state_record;

/* Encode a snapshot record; the state is sealed iff state_key != NULL. */
int dp_state_encode_snapshot(dp_codec *codec, const dp_state_record *r, const dp_key *state_key,
                             dp_buf *out, char *errstr, size_t errstr_size);
int dp_state_encode_progress(const dp_state_record *r, dp_buf *out);

/* Decode either kind.  A sealed snapshot needs state_key (else DP_EINVAL);
 * its state is opened into *scratch.  A plaintext snapshot is refused when
 * a state key is configured (whoever can write the state topic must not
 * be able to inject state).  DP_ECORRUPT on a malformed or unauthentic
 * record. */
int dp_state_decode(dp_codec *codec, const uint8_t *data, size_t len, const dp_key *state_key,
                    dp_state_record *out, dp_buf *scratch, char *errstr, size_t errstr_size);

#endif
