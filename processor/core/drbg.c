/* drbg.c — see drbg.h for the construction and why it is shaped this way. */
#include "core/drbg.h"
#include "core/dp_error.h"

#include <sodium.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char DRBG_DOMAIN[] = "dpstream.drbg.v1";

static void put_le64(uint8_t out[8], uint64_t v)
{
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(v >> (8 * i));
}

static void hash_field(crypto_generichash_state *st, const void *p, size_t n)
{
    uint8_t len[8];
    put_le64(len, (uint64_t)n);
    crypto_generichash_update(st, len, sizeof len);
    if (n)
        crypto_generichash_update(st, p, n);
}

void dp_drbg_init(dp_drbg *g, const dp_key *secret,
                  const char *stream_id, size_t stream_id_len,
                  uint64_t step, const char *label)
{
    crypto_generichash_state st;
    uint8_t step_le[8];

    /* libsodium's init is idempotent and thread-safe; the DRBG must work
     * even if the caller never initialised the library. */
    if (sodium_init() < 0)
        abort();
    crypto_generichash_init(&st, secret->bytes, DP_KEY_BYTES, sizeof g->chacha_key);
    crypto_generichash_update(&st, (const uint8_t *)DRBG_DOMAIN, sizeof DRBG_DOMAIN - 1);
    hash_field(&st, stream_id, stream_id_len);
    put_le64(step_le, step);
    crypto_generichash_update(&st, step_le, sizeof step_le);
    hash_field(&st, label, label ? strlen(label) : 0);
    crypto_generichash_final(&st, g->chacha_key, sizeof g->chacha_key);
    sodium_memzero(&st, sizeof st);

    g->next_block = 0;
    g->pos = DP_DRBG_BUFBYTES;  /* empty: refill on first use */
    g->nbits = 0;
    g->bits = 0;
}

void dp_drbg_wipe(dp_drbg *g)
{
    sodium_memzero(g, sizeof *g);
}

void dp_drbg_refill(dp_drbg *g)
{
    uint8_t nonce[crypto_stream_chacha20_ietf_NONCEBYTES] = {0};
    /* IETF ChaCha20 has a 32-bit block counter; the upper 32 bits of our
     * 64-bit block index go into the last 8 nonce bytes so the stream never
     * repeats.  next_block advances in steps of 16 from 0, so one refill
     * (blocks lo .. lo+15) never straddles a 2^32 boundary of the low
     * counter, where libsodium would otherwise carry into nonce word 0. */
    uint32_t lo = (uint32_t)g->next_block;
    put_le64(nonce + 4, g->next_block >> 32);
    memset(g->buf, 0, DP_DRBG_BUFBYTES);
    crypto_stream_chacha20_ietf_xor_ic(g->buf, g->buf, DP_DRBG_BUFBYTES, nonce, lo, g->chacha_key);
    g->next_block += DP_DRBG_BUFBYTES / 64;
    g->pos = 0;
}

void dp_drbg_bytes(dp_drbg *g, void *out, size_t n)
{
    uint8_t *o = out;
    while (n > 0) {
        if (g->pos == DP_DRBG_BUFBYTES)
            dp_drbg_refill(g);
        size_t take = DP_DRBG_BUFBYTES - g->pos;
        if (take > n)
            take = n;
        memcpy(o, g->buf + g->pos, take);
        o += take;
        n -= take;
        g->pos += (uint32_t)take;
    }
}

/* Lemire 2019, rejection branch: with W-bit words, the products whose low
 * word is below t = 2^W mod m are exactly the surplus that would make
 * some high words more likely; rejecting them leaves every value in
 * [0, m) with floor(2^W/m) preimages. */
uint32_t dp_drbg_uniform32_slow_(dp_drbg *g, uint64_t m, uint64_t prod)
{
    uint32_t threshold = (uint32_t)((((uint64_t)1 << 32) - m) % m);
    while ((uint32_t)prod < threshold)
        prod = (uint64_t)dp_drbg_u32(g) * m;
    return (uint32_t)(prod >> 32);
}

uint64_t dp_drbg_uniform_slow_(dp_drbg *g, uint64_t m, unsigned __int128 prod)
{
    uint64_t threshold = (0 - m) % m;
    while ((uint64_t)prod < threshold)
        prod = (unsigned __int128)dp_drbg_u64(g) * m;
    return (uint64_t)(prod >> 64);
}

unsigned __int128 dp_drbg_uniform128(dp_drbg *g, unsigned __int128 m)
{
    if (m == 0)
        return 0;
    if ((m >> 64) == 0)
        return dp_drbg_uniform(g, (uint64_t)m);
    /* Smallest all-ones mask covering m-1, then reject values >= m: every
     * accepted value has exactly one preimage, so the result is uniform. */
    unsigned __int128 mask = m - 1;
    mask |= mask >> 1;  mask |= mask >> 2;  mask |= mask >> 4;
    mask |= mask >> 8;  mask |= mask >> 16; mask |= mask >> 32; mask |= mask >> 64;
    if ((mask >> 64) == 0)      /* m == 2^64: one word is already uniform */
        return dp_drbg_u64(g);
    for (;;) {
        unsigned __int128 hi = dp_drbg_u64(g), lo = dp_drbg_u64(g);
        unsigned __int128 x = ((hi << 64) | lo) & mask;
        if (x < m)
            return x;
    }
}

/* --- keys ---------------------------------------------------------------- */

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* An all-zero key is a placeholder, never a secret: refuse it. */
static int key_usable(dp_key *key, const char *what, char *errstr, size_t errstr_size)
{
    uint8_t any = 0;
    for (size_t i = 0; i < DP_KEY_BYTES; i++)
        any |= key->bytes[i];
    if (any)
        return DP_OK;
    sodium_memzero(key, sizeof *key);
    return dp_err(errstr, errstr_size, DP_EINVAL, "%s is all zero bytes: not a secret (dpstream keygen makes one)",
                  what);
}

static int all_hex(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (hexval(p[i]) < 0)
            return 0;
    return 1;
}

int dp_key_from_hex(dp_key *key, const char *hex, char *errstr, size_t errstr_size)
{
    size_t n = strlen(hex);
    if (n != 2 * DP_KEY_BYTES)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "key must be %d hex digits, got %zu characters", 2 * DP_KEY_BYTES, n);
    for (size_t i = 0; i < DP_KEY_BYTES; i++) {
        int hi = hexval((unsigned char)hex[2 * i]), lo = hexval((unsigned char)hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return dp_err(errstr, errstr_size, DP_EINVAL,
                          "key contains a non-hex character at position %zu", 2 * i + (hi < 0 ? 0 : 1));
        key->bytes[i] = (uint8_t)(hi << 4 | lo);
    }
    return key_usable(key, "key", errstr, errstr_size);
}

int dp_key_load_file(dp_key *key, const char *path, char *errstr, size_t errstr_size)
{
    uint8_t buf[2 * DP_KEY_BYTES + 3 + 1];   /* +1 detects an over-long file */
    FILE *f = fopen(path, "rb");
    if (!f)
        return dp_err(errstr, errstr_size, DP_EIO, "cannot open key file %s: %s", path, strerror(errno));
    /* As ssh does with private keys: a key others can read is not secret. */
    struct stat st;
    const char *allow = getenv("DPSTREAM_ALLOW_OPEN_KEY_FILES");
    if (fstat(fileno(f), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) && !(allow && strcmp(allow, "1") == 0)) {
        fclose(f);
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "key file %s is accessible by group or others (mode %04o): chmod 600 it "
                      "(or set DPSTREAM_ALLOW_OPEN_KEY_FILES=1 to accept that)", path, (unsigned)(st.st_mode & 07777));
    }
    size_t n = fread(buf, 1, sizeof buf, f);
    int rerr = ferror(f);
    fclose(f);
    if (rerr)
        return dp_err(errstr, errstr_size, DP_EIO, "cannot read key file %s", path);
    int rc;
    if (n == sizeof buf) {
        rc = dp_err(errstr, errstr_size, DP_EINVAL,
                    "key file %s is too long: it must hold 32 raw bytes or 64 hex digits", path);
    } else if (n == DP_KEY_BYTES && all_hex(buf, n)) {
        /* 32 hex digits are a 16-byte key written as text, not 32 raw bytes
         * (a random 32-byte key is all hex digits with probability 2^-113). */
        rc = dp_err(errstr, errstr_size, DP_EINVAL,
                    "key file %s holds 32 hex digits (a 16-byte key as text); a key is 32 raw bytes, "
                    "64 hex digits or 44 base64 characters", path);
    } else if (n == DP_KEY_BYTES) {
        memcpy(key->bytes, buf, DP_KEY_BYTES);
        rc = key_usable(key, "the key file's key", errstr, errstr_size);
    } else {
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
            n--;
        size_t got = 0;
        if (n == 44 && sodium_base642bin(key->bytes, DP_KEY_BYTES, (const char *)buf, n, NULL, &got, NULL,
                                         sodium_base64_VARIANT_ORIGINAL) == 0 && got == DP_KEY_BYTES) {
            rc = key_usable(key, "the key file's key", errstr, errstr_size);   /* base64 text */
        } else if (n != 2 * DP_KEY_BYTES) {
            rc = dp_err(errstr, errstr_size, DP_EINVAL,
                        "key file %s must hold 32 raw bytes, 64 hex digits or 44 base64 characters", path);
        } else {
            char hex[2 * DP_KEY_BYTES + 1];
            memcpy(hex, buf, 2 * DP_KEY_BYTES);
            hex[2 * DP_KEY_BYTES] = '\0';
            rc = dp_key_from_hex(key, hex, errstr, errstr_size);
            sodium_memzero(hex, sizeof hex);
        }
    }
    sodium_memzero(buf, sizeof buf);
    return rc;
}

void dp_key_generate(dp_key *key)
{
    if (sodium_init() < 0)
        abort();
    randombytes_buf(key->bytes, DP_KEY_BYTES);
}

int dp_key_write_new_file(const dp_key *key, const char *path, char *errstr, size_t errstr_size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return dp_err(errstr, errstr_size, DP_EIO, "cannot create key file %s: %s", path, strerror(errno));
    ssize_t w = write(fd, key->bytes, DP_KEY_BYTES);
    int werr = errno;
    if (fsync(fd) != 0 && w == DP_KEY_BYTES) {
        werr = errno;
        w = -1;
    }
    close(fd);
    if (w != DP_KEY_BYTES) {
        unlink(path);
        return dp_err(errstr, errstr_size, DP_EIO, "cannot write key file %s: %s", path, strerror(werr));
    }
    return DP_OK;
}

void dp_key_wipe(dp_key *key)
{
    sodium_memzero(key, sizeof *key);
}

void dp_key_fingerprint(const dp_key *key, char out[DP_KEY_FINGERPRINT_HEX])
{
    static const char label[] = "dpstream key fingerprint v1";
    uint8_t h[16];
    crypto_generichash(h, sizeof h, (const uint8_t *)label, sizeof label - 1, key->bytes, sizeof key->bytes);
    sodium_bin2hex(out, DP_KEY_FINGERPRINT_HEX, h, sizeof h);
}
