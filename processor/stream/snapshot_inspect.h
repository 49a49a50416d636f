/* snapshot_inspect.h — open one stream's snapshot from the state topic's
 * newest records and say what is in it, for `dpstream inspect-snapshot`.
 *
 * Three layers of what a snapshot holds, and who may see them:
 *   public header   stream, synthesizer, input topic/partition/offset,
 *                   last closed step, chunk count, sealed or not — stored
 *                   in the clear in every chunk, read without any key;
 *   public figures  the budget ledger, the open step, exhausted, the
 *                   noise key's fingerprint and the configuration's plan —
 *                   what the stream's budget events publish anyway — read
 *                   from the state once it is authenticated: a sealed
 *                   state opened with the state key (its AEAD tag), a
 *                   plaintext one verified with its MAC under the noise
 *                   key (state_record.h);
 *   private state   the rest of the state bytes (rosters, per-entity
 *                   values, exact counts): returned only when asked for
 *                   (keep_state), never otherwise.
 *
 * Nothing is released and no noise is drawn: without the noise key the
 * synthesizer is opened read-only (dp_synth_open_read_only); with it,
 * exactly as a restore would (a state built under another key is then
 * refused, DP_EKEY). */
#ifndef DP_STREAM_SNAPSHOT_INSPECT_H
#define DP_STREAM_SNAPSHOT_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "codec/codec.h"
#include "core/buf.h"
#include "core/drbg.h"
#include "stream/state_record.h"
#include "stream/stream_config.h"
#include "synth/common/synth.h"

typedef struct dp_snapshot_view {
    /* public header: filled whenever chunk 0 decodes (header_ok) */
    int        header_ok;
    char      *stream_id;          /* NUL-terminated copy */
    char      *synthesizer;
    char      *updates_topic;
    int32_t    partition;
    int64_t    input_offset;       /* the stream's updates below it are in the snapshot */
    uint64_t   last_closed_step;
    uint32_t   chunk_count;
    int        sealed;
    size_t     stored_bytes;       /* as stored in chunk 0 (ciphertext + tag, or state + MAC) */
    /* opening: status DP_OK, or why not (message in error):
     *   DP_ECORRUPT  not a snapshot, incomplete, or fails authentication
     *   DP_EINVAL    the key it needs was not given, or the configuration
     *                does not route the stream to its synthesizer
     *   DP_EKEY      built with another noise key than the one given */
    int        status;
    char       error[768];
    int        needs_key;          /* DP_EINVAL because the key it needs was not given */
    int        authenticated;      /* its seal or MAC verified */
    int        key_checked;        /* the noise key was given and its fingerprint matched */
    char       key_fingerprint[DP_KEY_FINGERPRINT_HEX];
    dp_synth  *synth;              /* opened (read-only without the noise key); NULL if not */
    /* which state it is (docs/kafka.md §10): a combined snapshot (ALL), a
     * shard's ingest-role one (INGEST: no ledger, the release role keeps
     * it) or a release instance's (RELEASE: release half + merger state,
     * merger_bytes of it; its step is the next to release) */
    dp_synth_role kind;
    size_t     merger_bytes;
    dp_synth_plan plan;            /* its configuration's plan (has_plan) */
    int        has_plan;
    dp_buf     state;              /* the opened state bytes, PRIVATE: only with keep_state */
} dp_snapshot_view;

/* Inspect the snapshot whose chunk 0 is the newest value `first` under
 * `key` (lookup finds the other chunks; n_keys bounds them).  state_key
 * opens a sealed snapshot, noise_key verifies a plaintext one (and, given,
 * checks the key the state was built with).  Always fills *out as far as
 * it gets (free it with dp_snapshot_view_free); returns out->status. */
int  dp_snapshot_inspect(dp_codec *codec, const dp_stream_config *cfg, const char *key, size_t key_len,
                         const dp_state_piece *first, dp_state_lookup_fn lookup, void *ctx, size_t n_keys,
                         const dp_key *state_key, const dp_key *noise_key, int keep_state, dp_snapshot_view *out);
void dp_snapshot_view_free(dp_snapshot_view *v);

#endif
