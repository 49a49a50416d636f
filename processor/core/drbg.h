/* drbg.h — keyed deterministic random bit generator (docs/privacy.md §1).
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

/* The generator state.  Consumers take bytes from `buf` in order; the
 * narrow draws below each take a fixed number of bytes (u64: 8, u32: 4,
 * bit: one byte-stream u64 refills a 64-bit cache every 64 bits), so the
 * sequence of values is a pure function of the key material and the
 * sequence of calls, and identical on every platform (values are decoded
 * little-endian explicitly). */
typedef struct dp_drbg {
    uint8_t  chacha_key[32];
    uint64_t next_block;        /* 64-bit block index of the next refill */
    uint32_t pos;               /* bytes of buf already consumed */
    uint32_t nbits;             /* unconsumed bits left in `bits` */
    uint64_t bits;              /* cache serving dp_drbg_bit */
    uint8_t  buf[DP_DRBG_BUFBYTES];
} dp_drbg;

/* Derive the generator for one (stream, step, label).  stream_id may hold
 * any bytes (its length is explicit); label is a NUL-terminated string
 * (NULL is encoded like ""). */
void dp_drbg_init(dp_drbg *g, const dp_key *secret,
                  const char *stream_id, size_t stream_id_len,
                  uint64_t step, const char *label);

/* Wipe the derived key material. */
void dp_drbg_wipe(dp_drbg *g);

/* Internal: refill buf with the next 16 keystream blocks and reset pos.
 * Exposed only so the inline draws below can call it. */
void dp_drbg_refill(dp_drbg *g);

static inline uint64_t dp_drbg_load_le64_(const uint8_t *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

static inline uint32_t dp_drbg_load_le32_(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* 64 uniform bits.  If fewer than 8 bytes are left in buf the remainder is
 * skipped (likewise for u32): deterministic, and still uniform. */
static inline uint64_t dp_drbg_u64(dp_drbg *g)
{
    if (g->pos > DP_DRBG_BUFBYTES - 8)
        dp_drbg_refill(g);
    uint64_t v = dp_drbg_load_le64_(g->buf + g->pos);
    g->pos += 8;
    return v;
}

/* 32 uniform bits. */
static inline uint32_t dp_drbg_u32(dp_drbg *g)
{
    if (g->pos > DP_DRBG_BUFBYTES - 4)
        dp_drbg_refill(g);
    uint32_t v = dp_drbg_load_le32_(g->buf + g->pos);
    g->pos += 4;
    return v;
}

/* One uniform bit, served from a 64-bit cache so a fair coin costs one
 * bit of keystream rather than a whole word. */
static inline int dp_drbg_bit(dp_drbg *g)
{
    if (g->nbits == 0) {
        g->bits = dp_drbg_u64(g);
        g->nbits = 64;
    }
    int b = (int)(g->bits & 1);
    g->bits >>= 1;
    g->nbits--;
    return b;
}

void     dp_drbg_bytes(dp_drbg *g, void *out, size_t n);

/* Internal: the rejection branch of dp_drbg_uniform (rarely taken). */
uint64_t dp_drbg_uniform_slow_(dp_drbg *g, uint64_t m, unsigned __int128 prod);
uint32_t dp_drbg_uniform32_slow_(dp_drbg *g, uint64_t m, uint64_t prod);

/* Uniform on {0, …, m-1} for 1 <= m <= 2^32, without modulo bias
 * (Lemire 2019 multiply-shift with rejection on one 32-bit word). */
static inline uint32_t dp_drbg_uniform32(dp_drbg *g, uint64_t m)
{
    uint64_t prod = (uint64_t)dp_drbg_u32(g) * m;
    if ((uint32_t)prod < m)   /* (uint32_t)prod < m is necessary for rejection */
        return dp_drbg_uniform32_slow_(g, m, prod);
    return (uint32_t)(prod >> 32);
}

/* Uniform on {0, …, m-1} without modulo bias, for 1 <= m <= 2^64-1
 * (Lemire 2019: the high word of x·m is uniform on [0,m) once products
 * whose low word falls below 2^W mod m are rejected).  m <= 2^32 uses one
 * 32-bit word per attempt, larger m one 64-bit word.  m == 0 is a caller
 * error and returns 0 without consuming randomness. */
static inline uint64_t dp_drbg_uniform(dp_drbg *g, uint64_t m)
{
    if (m <= ((uint64_t)1 << 32)) {
        if (m == 0)
            return 0;
        return dp_drbg_uniform32(g, m);
    }
    unsigned __int128 prod = (unsigned __int128)dp_drbg_u64(g) * m;
    if ((uint64_t)prod < m)
        return dp_drbg_uniform_slow_(g, m, prod);
    return (uint64_t)(prod >> 64);
}

/* Uniform on {0, …, m-1} for 1 <= m <= 2^128-1 (m < 2^64 as above;
 * otherwise mask-and-reject on the smallest power of two >= m, expected
 * fewer than 2 attempts).  Covers m = 2^64, which the 64-bit call cannot
 * name.  m == 0 returns 0. */
unsigned __int128 dp_drbg_uniform128(dp_drbg *g, unsigned __int128 m);

/* --- secret keys --------------------------------------------------------- */

/* Parse exactly 64 hex digits. Returns 0 or DP_EINVAL. */
int  dp_key_from_hex(dp_key *key, const char *hex, char *errstr, size_t errstr_size);
/* Read a key file: exactly 32 raw bytes, 64 hex digits or 44 base64
 * characters (text optionally followed by a newline).  Refused: a file
 * group or others can access (unless DPSTREAM_ALLOW_OPEN_KEY_FILES=1, as
 * ssh refuses open private keys), 32 hex digits (a 16-byte key written as
 * text, which would silently be used as 32 raw bytes), and an all-zero key
 * (dp_key_from_hex refuses that too).  Returns 0, DP_EIO or DP_EINVAL. */
int  dp_key_load_file(dp_key *key, const char *path, char *errstr, size_t errstr_size);
/* A fingerprint of the key that reveals nothing about it: BLAKE2b keyed
 * with the key over a fixed label (domain-separated from every noise
 * draw), 16 bytes as 32 lowercase hex digits + NUL.  Published in budget
 * events and kept in snapshots, so a restart with another key is caught. */
#define DP_KEY_FINGERPRINT_HEX 33
void dp_key_fingerprint(const dp_key *key, char out[DP_KEY_FINGERPRINT_HEX]);
/* Fresh key from the OS CSPRNG (libsodium randombytes). */
void dp_key_generate(dp_key *key);
/* Write a fresh key as 32 raw bytes to a new file created with mode 0600;
 * refuses to overwrite an existing file. */
int  dp_key_write_new_file(const dp_key *key, const char *path, char *errstr, size_t errstr_size);
void dp_key_wipe(dp_key *key);

#endif
