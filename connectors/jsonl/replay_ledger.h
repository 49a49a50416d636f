/* replay_ledger.h — `dpstream replay --ledger FILE`: a record, across runs,
 * of every step released per stream id, under which key (its fingerprint)
 * and from which input (a keyed digest of the step's used updates,
 * synth/common/step_gate.h).  Releasing a stream's step twice under one key over
 * different input would reveal the difference exactly (the noise is the
 * same); releasing it again under another key over the same input spends
 * its budget a second time.  The ledger refuses both.
 *
 * File: a first line {"ledger_salt":"…"} (32 random bytes, made when the
 * file is created), then JSON lines
 * {"stream":…,"step":N,"key_fingerprint":"…","input_digest":"…"},
 * appended one per release; read whole at start (a line that does not
 * parse is an error: the ledger is the operator's record, not input).
 * The digests are keyed with the salt, not the noise key, so the same
 * input under two keys has one digest; they are hashes of personal data:
 * keep the ledger with the input's access controls. */
#ifndef DP_CONNECTORS_REPLAY_LEDGER_H
#define DP_CONNECTORS_REPLAY_LEDGER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/bytes_map.h"
#include "synth/common/step_gate.h"

typedef struct dp_replay_ledger {
    dp_bytes_map seen;     /* stream ‖ 0 ‖ step (8 bytes LE) -> list of (key, input) records */
    FILE        *append;
    char        *path;
    uint8_t      salt[32];  /* the digests' key (dp_gate_track_input) */
} dp_replay_ledger;

/* Open (creating if missing) and read the ledger.  DP_OK, or DP_EIO /
 * DP_EINVAL with a message naming the file and line. */
int  dp_replay_ledger_open(dp_replay_ledger *l, const char *path, char *err, size_t errsz);
void dp_replay_ledger_close(dp_replay_ledger *l);

/* Before releasing (stream, step) with this key fingerprint and input
 * digest: DP_OK, or DP_EKEY with the reason when the ledger forbids it. */
int  dp_replay_ledger_check(const dp_replay_ledger *l, const char *stream, size_t stream_len, uint64_t step,
                            const char *key_fp, const uint8_t digest[DP_GATE_DIGEST_BYTES], char *err,
                            size_t errsz);
/* After releasing it: append the line (and remember it). */
int  dp_replay_ledger_record(dp_replay_ledger *l, const char *stream, size_t stream_len, uint64_t step,
                             const char *key_fp, const uint8_t digest[DP_GATE_DIGEST_BYTES], char *err,
                             size_t errsz);

#endif
