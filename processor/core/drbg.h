/* drbg.h — keyed deterministic random bit generator (ALGORITHMS.md §1).
 *
 * Every random decision dpstream makes comes from a dp_drbg that is a pure
 * function of (secret key, stream id, step, purpose label):
 *
 *   chacha_key = BLAKE2b-256(key = secret,
 *                            msg = "dpstream.drbg.v1" ‖ le64(|stream|) ‖ stream
 *                                  ‖ le64(step) ‖ le64(|label|) ‖ label)
 *   output     = ChaCha20 keystream under chacha_key (IETF variant; the
 *                96-bit nonce carries the high bits of the block counter)
 *
 * Length prefixes make the encoding injective, so two different triples
 * never share a keystream; separate labels give computationally
 * independent streams, so adding a draw under one label never shifts the
 * draws under another.  Nothing here reads the clock or the OS RNG (only
 * dp_key_generate does, to create a fresh secret). */
#ifndef DP_DRBG_H
#define DP_DRBG_H

#include <stddef.h>
#include <stdint.h>

#define DP_KEY_BYTES     32
#define DP_DRBG_BUFBYTES 1024   /* 16 ChaCha20 blocks per refill */

typedef struct dp_key {
    uint8_t bytes[DP_KEY_BYTES];
} dp_key;

typedef struct dp_drbg {
    uint8_t  chacha_key[32];
    uint64_t next_block;        /* 64-bit block index of the next refill */
    uint32_t pos;               /* bytes of buf already consumed */
    uint8_t  buf[DP_DRBG_BUFBYTES];
} dp_drbg;

/* Derive the generator for one (stream, step, label).  stream_id may hold
 * any bytes (its length is explicit); label is a NUL-terminated string. */
void dp_drbg_init(dp_drbg *g, const dp_key *secret,
                  const char *stream_id, size_t stream_id_len,
                  uint64_t step, const char *label);

/* Wipe the derived key material. */
void dp_drbg_wipe(dp_drbg *g);

uint64_t dp_drbg_u64(dp_drbg *g);
/* One uniform bit. */
int      dp_drbg_bit(dp_drbg *g);
void     dp_drbg_bytes(dp_drbg *g, void *out, size_t n);

/* Uniform on {0, …, m-1} without modulo bias (Lemire's multiply-shift with
 * rejection).  m must be >= 1; m == 0 is a caller error and returns 0. */
uint64_t dp_drbg_uniform(dp_drbg *g, uint64_t m);

/* Uniform on {0, …, m-1} for 1 <= m <= 2^128-1 (mask-and-reject; expected
 * fewer than 2 draws).  Covers m = 2^64, which the 64-bit call cannot name. */
unsigned __int128 dp_drbg_uniform128(dp_drbg *g, unsigned __int128 m);

/* --- secret keys --------------------------------------------------------- */

/* Parse exactly 64 hex digits. Returns 0 or DP_EINVAL. */
int  dp_key_from_hex(dp_key *key, const char *hex, char *errstr, size_t errstr_size);
/* Read a key file: exactly 32 raw bytes, or 64 hex digits (optionally
 * followed by a newline).  Returns 0, DP_EIO or DP_EINVAL. */
int  dp_key_load_file(dp_key *key, const char *path, char *errstr, size_t errstr_size);
/* Fresh key from the OS CSPRNG (libsodium randombytes). */
void dp_key_generate(dp_key *key);
/* Write a fresh key as 32 raw bytes to a new file created with mode 0600;
 * refuses to overwrite an existing file. */
int  dp_key_write_new_file(const dp_key *key, const char *path, char *errstr, size_t errstr_size);
void dp_key_wipe(dp_key *key);

#endif
