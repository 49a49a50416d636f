/* state_record.h — the records of the compacted state topic.
 *
 * Two kinds of record, told apart by a 4-byte magic:
 *
 *   stream snapshot   key = the stream id
 *     "DPS1" ‖ blob(stream id) ‖ blob(updates topic) ‖ u32 partition
 *     ‖ i64 skip_below ‖ u64 open_step ‖ u8 sealed ‖ blob(body)
 *     body = blob(synthesizer name) ‖ blob(synthesizer snapshot),
 *     sealed (seal.h) when a state key is configured, with everything
 *     before the body as associated data — the header is public routing
 *     metadata (offsets, partition), the body is raw private state.
 *
 *   partition progress   key = DP_STATE_PROGRESS_KEY_PREFIX topic "/" partition
 *     "DPP1" ‖ blob(updates topic) ‖ u32 partition ‖ i64 position ‖ i64 resume
 *
 * skip_below: the input offset just after the message that closed the
 * step; every update of this stream at a lower offset is reflected in the
 * snapshot and must be skipped on replay.  position: the offset just after
 * the last input message whose effects (releases, dead letters) were
 * committed with this record — rejections below it were already published.
 * resume: the committed consumer offset of the same transaction (see
 * processor.c for why it may lag `position`).
 *
 * Integers little-endian (core/buf.h).  The noise key is never part of a
 * record; the synthesizer snapshot never contains it either (synth.h). */
#ifndef DP_STREAM_STATE_RECORD_H
#define DP_STREAM_STATE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/drbg.h"

#define DP_STATE_PROGRESS_KEY_PREFIX "__dpstream.progress/"

typedef enum dp_state_kind { DP_STATE_SNAPSHOT = 1, DP_STATE_PROGRESS = 2 } dp_state_kind;

/* Decoded record; pointers borrow from the encoded bytes or, for the
 * opened body, from the caller's scratch buffer. */
typedef struct dp_state_record {
    dp_state_kind  kind;
    const char    *updates_topic;
    size_t         updates_topic_len;
    int32_t        partition;
    /* snapshot */
    const char    *stream_id;
    size_t         stream_id_len;
    int64_t        skip_below;
    uint64_t       open_step;
    int            sealed;
    const char    *synthesizer;
    size_t         synthesizer_len;
    const uint8_t *state;
    size_t         state_len;
    /* progress */
    int64_t        position;
    int64_t        resume;
} dp_state_record;

/* Encode a snapshot record (kind/stream/topic/partition/skip_below/
 * open_step/synthesizer/state of `r`); sealed iff state_key != NULL. */
int dp_state_encode_snapshot(const dp_state_record *r, const dp_key *state_key, dp_buf *out);
int dp_state_encode_progress(const dp_state_record *r, dp_buf *out);

/* Decode either kind.  A sealed snapshot needs state_key (else DP_EINVAL);
 * its body is opened into *scratch (reset first).  DP_ECORRUPT on any
 * malformed or unauthentic record. */
int dp_state_decode(const uint8_t *data, size_t len, const dp_key *state_key,
                    dp_state_record *out, dp_buf *scratch, char *errstr, size_t errstr_size);

#endif
