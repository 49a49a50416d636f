/* seal.h — authenticated encryption of state snapshots (docs/design.md §5).
 *
 * A snapshot holds raw private state (rosters, last values, exact counts),
 * so when a state key is configured it is sealed with libsodium's
 * XChaCha20-Poly1305 (IETF AEAD) before it goes to the state topic.
 *
 * The nonce is *derived*, not random, so that a replay after a crash
 * writes byte-identical state records (docs/design.md §2):
 *
 *   nonce = BLAKE2b-192(key = nonce_key,
 *                       msg = "dpstream.state.nonce.v1" ‖ le64(|stream|) ‖ stream
 *                             ‖ le64(step) ‖ BLAKE2b-256(ad) ‖ BLAKE2b-256(plaintext))
 *
 * Why a deterministic nonce is safe here: AEAD security only breaks when one
 * (key, nonce) pair encrypts two *different* plaintexts.  The nonce is a PRF
 * of the plaintext itself (a synthetic IV, as in SIV mode), so an equal
 * nonce means — except with probability ~2^-192 — an equal plaintext and
 * equal associated data, i.e. the identical message encrypted again, which
 * yields the identical ciphertext and reveals nothing new.  Even a
 * misconfigured redeployment (same key, same stream and step, different
 * config or input) gets a fresh nonce because its plaintext differs.  The
 * only thing deterministic encryption leaks is equality of two snapshots,
 * which replays make public anyway.
 *
 * Two independent subkeys are derived from the state key (BLAKE2b-256 with
 * distinct labels), one for the AEAD, one for the nonce PRF.
 *
 * Sealed layout: nonce (24 bytes) ‖ ciphertext ‖ tag (16 bytes). */
#ifndef DP_STREAM_SEAL_H
#define DP_STREAM_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/drbg.h"

#define DP_SEAL_NONCE_BYTES 24
#define DP_SEAL_TAG_BYTES   16
#define DP_SEAL_OVERHEAD    (DP_SEAL_NONCE_BYTES + DP_SEAL_TAG_BYTES)

/* Append the sealed form of plain[0..plain_len) to out.  `ad` is
 * authenticated but not encrypted (the record header).  DP_OK or
 * DP_ENOMEM. */
int dp_seal(const dp_key *state_key, const char *stream_id, size_t stream_id_len, uint64_t step,
            const uint8_t *ad, size_t ad_len, const uint8_t *plain, size_t plain_len, dp_buf *out);

/* Append the opened plaintext to out.  DP_ECORRUPT (message in errstr) if
 * the record was not sealed under this key and associated data. */
int dp_unseal(const dp_key *state_key, const uint8_t *ad, size_t ad_len,
              const uint8_t *sealed, size_t sealed_len, dp_buf *out,
              char *errstr, size_t errstr_size);

/* Keyed MAC of a record that is authenticated but not encrypted (a
 * plaintext snapshot, a statistics record): BLAKE2b-256 keyed with the
 * subkey BLAKE2b-256(key = mac_key, msg = label), over le64(|ad|) ‖ ad ‖
 * data.  The label separates the kinds of record, so one kind's MAC never
 * verifies as another's. */
#define DP_MAC_BYTES 32
void dp_mac(const dp_key *mac_key, const char *label, const uint8_t *ad, size_t ad_len, const uint8_t *data,
            size_t len, uint8_t out[DP_MAC_BYTES]);

#endif
