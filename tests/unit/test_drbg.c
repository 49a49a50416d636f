/* test_drbg.c — the keyed DRBG (processor/core/drbg.{h,c}): conformance to
 * the documented construction, determinism, domain separation, and
 * unbiasedness of uniform(m) / uniform128(m), with tolerances from the
 * chi-square and normal distributions at fixed keys. */
#include "dptest.h"

#include <sys/stat.h>

#include "core/dp_error.h"
#include "core/drbg.h"

#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef unsigned __int128 u128;

/* Every statistical check below uses false-alarm probability ALPHA. */
#define ALPHA 1e-4

static void put_le64(uint8_t *o, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        o[i] = (uint8_t)(v >> (8 * i));
}

/* The construction of drbg.h, rebuilt independently from libsodium
 * primitives. */
static void reference_chacha_key(const dp_key *k, const char *stream, size_t slen, uint64_t step,
                                 const char *label, uint8_t out[32])
{
    crypto_generichash_state st;
    uint8_t le[8];
    crypto_generichash_init(&st, k->bytes, 32, 32);
    crypto_generichash_update(&st, (const uint8_t *)"dpstream.drbg.v1", 16);
    put_le64(le, slen);
    crypto_generichash_update(&st, le, 8);
    crypto_generichash_update(&st, (const uint8_t *)stream, slen);
    put_le64(le, step);
    crypto_generichash_update(&st, le, 8);
    put_le64(le, strlen(label));
    crypto_generichash_update(&st, le, 8);
    crypto_generichash_update(&st, (const uint8_t *)label, strlen(label));
    crypto_generichash_final(&st, out, 32);
}

static void test_matches_reference_construction(void)
{
    dp_key key;
    dptest_key(&key, 0);
    uint8_t ck[32], want[3000], got[3000];
    reference_chacha_key(&key, "orders", 6, 42, "noise.count", ck);
    uint8_t nonce[12] = {0};
    crypto_stream_chacha20_ietf(want, sizeof want, nonce, ck);

    dp_drbg g;
    dp_drbg_init(&g, &key, "orders", 6, 42, "noise.count");
    dp_drbg_bytes(&g, got, 1);                 /* odd split across refills */
    dp_drbg_bytes(&g, got + 1, 1500);
    dp_drbg_bytes(&g, got + 1501, sizeof got - 1501);
    CU_ASSERT(memcmp(want, got, sizeof got) == 0);

    /* Word draws decode the same keystream little-endian, 8 / 4 bytes each. */
    dp_drbg_init(&g, &key, "orders", 6, 42, "noise.count");
    uint64_t w0 = dp_drbg_u64(&g);
    uint32_t w1 = dp_drbg_u32(&g);
    uint64_t w2 = dp_drbg_u64(&g);
    uint64_t e0 = 0, e2 = 0;
    uint32_t e1 = 0;
    for (int i = 7; i >= 0; i--) {
        e0 = e0 << 8 | want[i];
        e2 = e2 << 8 | want[12 + i];
    }
    for (int i = 3; i >= 0; i--)
        e1 = e1 << 8 | want[8 + i];
    CU_ASSERT(w0 == e0 && w1 == e1 && w2 == e2);
    dp_drbg_wipe(&g);
}

/* The 64-bit block index carries into the nonce at 2^32 blocks instead of
 * wrapping the 32-bit IETF counter: the keystream after the boundary must
 * not repeat the start of the stream. */
static void test_block_counter_carry(void)
{
    dp_key key;
    dptest_key(&key, 1);
    dp_drbg g;
    dp_drbg_init(&g, &key, "s", 1, 0, "carry");
    uint8_t start[DP_DRBG_BUFBYTES], before[DP_DRBG_BUFBYTES], after[DP_DRBG_BUFBYTES];
    dp_drbg_bytes(&g, start, sizeof start);

    dp_drbg_init(&g, &key, "s", 1, 0, "carry");
    g.next_block = ((uint64_t)1 << 32) - DP_DRBG_BUFBYTES / 64;
    dp_drbg_bytes(&g, before, sizeof before);
    dp_drbg_bytes(&g, after, sizeof after);
    CU_ASSERT(g.next_block == ((uint64_t)1 << 32) + DP_DRBG_BUFBYTES / 64);
    CU_ASSERT(memcmp(after, start, sizeof start) != 0);
    CU_ASSERT(memcmp(after, before, sizeof before) != 0);

    /* Reference for the last blocks before the carry: IETF counter
     * 2^32-16, nonce 0. */
    uint8_t ck[32], ref[DP_DRBG_BUFBYTES], zeros[DP_DRBG_BUFBYTES] = {0}, nonce[12] = {0};
    reference_chacha_key(&key, "s", 1, 0, "carry", ck);
    crypto_stream_chacha20_ietf_xor_ic(ref, zeros, sizeof ref, nonce, (uint32_t)0 - 16u, ck);
    CU_ASSERT(memcmp(ref, before, sizeof ref) == 0);
    /* And after it: counter 0 with the block index's high word in nonce[4..11]. */
    put_le64(nonce + 4, 1);
    crypto_stream_chacha20_ietf_xor_ic(ref, zeros, sizeof ref, nonce, 0, ck);
    CU_ASSERT(memcmp(ref, after, sizeof ref) == 0);
}

/* Call number i of a fixed, mixed sequence of draw kinds. */
static uint64_t draw_one(dp_drbg *g, int i)
{
    switch (i % 6) {
    case 0:  return dp_drbg_u64(g);
    case 1:  return dp_drbg_u32(g);
    case 2:  return (uint64_t)dp_drbg_bit(g);
    case 3:  return dp_drbg_uniform(g, 1000003);
    case 4:  return dp_drbg_uniform(g, ((uint64_t)1 << 63) + 1);
    default: return (uint64_t)dp_drbg_uniform128(g, ((u128)1 << 64) + 3);
    }
}

static void draw_mixed(dp_drbg *g, uint64_t *out, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = draw_one(g, i);
}

#define NMIX 3000

static void mixed_for(uint8_t key_variant, const char *stream, size_t slen, uint64_t step,
                      const char *label, uint64_t *out)
{
    dp_key key;
    dptest_key(&key, key_variant);
    dp_drbg g;
    dp_drbg_init(&g, &key, stream, slen, step, label);
    draw_mixed(&g, out, NMIX);
    dp_drbg_wipe(&g);
}

static int count_equal(const uint64_t *a, const uint64_t *b, int n)
{
    int eq = 0;
    for (int i = 0; i < n; i++)
        eq += a[i] == b[i];
    return eq;
}

static void test_determinism(void)
{
    static uint64_t a[NMIX], b[NMIX];
    mixed_for(0, "s1", 2, 7, "lab", a);
    mixed_for(0, "s1", 2, 7, "lab", b);
    CU_ASSERT(memcmp(a, b, sizeof a) == 0);

    /* Restart: a generator re-derived mid-way (as after a process restart
     * that replays the same step) reproduces the same sequence. */
    dp_key key;
    dptest_key(&key, 0);
    dp_drbg g;
    dp_drbg_init(&g, &key, "s1", 2, 7, "lab");
    draw_mixed(&g, b, NMIX / 2);
    dp_drbg_init(&g, &key, "s1", 2, 7, "lab");
    draw_mixed(&g, b, NMIX);
    CU_ASSERT(memcmp(a, b, sizeof a) == 0);
}

/* Each input field separates streams.  Two independent streams agree on a
 * draw only by chance: fair bits ~1/2, the rest ~0, so far below NMIX/4. */
static void test_separation(void)
{
    static uint64_t base[NMIX], other[NMIX];
    mixed_for(0, "s1", 2, 7, "lab", base);
    struct { uint8_t kv; const char *s; size_t sl; uint64_t step; const char *label; } v[] = {
        {1, "s1", 2, 7, "lab"},          /* key */
        {0, "s2", 2, 7, "lab"},          /* stream */
        {0, "s1\0", 3, 7, "lab"},        /* stream length (embedded NUL) */
        {0, "s1", 2, 8, "lab"},          /* step */
        {0, "s1", 2, 7, "lab2"},         /* label */
        {0, "s1", 2, 7, "la"},
        {0, "s1l", 3, 7, "ab"},          /* shifting bytes between fields */
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        mixed_for(v[i].kv, v[i].s, v[i].sl, v[i].step, v[i].label, other);
        int eq = count_equal(base, other, NMIX);
        /* bits: NMIX/6 draws agree w.p. 1/2; everything else w.p. < 1e-6. */
        double mean = NMIX / 6 * 0.5, sd = sqrt(NMIX / 6 * 0.25);
        CU_ASSERT(eq < mean + dptest_normal_isf(ALPHA) * sd + 5);
    }
}

/* Drawing extra values under one label leaves every other label's draws
 * unchanged: each purpose has its own keystream. */
static void test_label_non_interference(void)
{
    dp_key key;
    dptest_key(&key, 3);
    static uint64_t quiet[NMIX], busy[NMIX];
    dp_drbg a, b;
    dp_drbg_init(&b, &key, "s", 1, 1, "noise.b");
    draw_mixed(&b, quiet, NMIX);

    /* Same calls on label b, interleaved with many more draws on label a
     * (same key, stream and step). */
    dp_drbg_init(&a, &key, "s", 1, 1, "noise.a");
    dp_drbg_init(&b, &key, "s", 1, 1, "noise.b");
    uint64_t sink = 0;
    for (int i = 0; i < NMIX; i++) {
        for (int j = 0; j < 1 + i % 5; j++)
            sink += draw_one(&a, i + j);
        busy[i] = draw_one(&b, i);
    }
    CU_ASSERT(memcmp(quiet, busy, sizeof quiet) == 0);
    CU_ASSERT(sink != 0);
}

/* --- statistics ------------------------------------------------------------ */

static double chi2_stat(const uint64_t *obs, const double *expected, int cells)
{
    double s = 0;
    for (int i = 0; i < cells; i++) {
        double d = (double)obs[i] - expected[i];
        s += d * d / expected[i];
    }
    return s;
}

/* |k - n·p| within the two-sided normal bound of Binomial(n, p). */
static int binom_ok(uint64_t k, uint64_t n, double p)
{
    double z = dptest_normal_isf(ALPHA / 2);
    double mean = (double)n * p, sd = sqrt((double)n * p * (1 - p));
    return fabs((double)k - mean) <= z * sd;
}

static dp_drbg fresh(const char *label)
{
    dp_key key;
    dptest_key(&key, 0);
    dp_drbg g;
    dp_drbg_init(&g, &key, "uniform-tests", 13, 0, label);
    return g;
}

#define NU 1000000

static void test_uniform_small(void)
{
    dp_drbg g = fresh("u3");
    CU_ASSERT(dp_drbg_uniform(&g, 1) == 0);
    CU_ASSERT(dp_drbg_uniform(&g, 0) == 0);
    uint64_t obs[3] = {0};
    for (int i = 0; i < NU; i++) {
        uint64_t x = dp_drbg_uniform(&g, 3);
        CU_ASSERT_FATAL(x < 3);
        obs[x]++;
    }
    double e[3] = {NU / 3.0, NU / 3.0, NU / 3.0};
    CU_ASSERT(chi2_stat(obs, e, 3) < dptest_chi2_isf(ALPHA, 2));

    /* 7 and 2^32 exercise the 32-bit path's rejection and its edge. */
    uint64_t o7[7] = {0}, o16[16] = {0};
    double e7[7], e16[16];
    for (int i = 0; i < NU; i++) {
        o7[dp_drbg_uniform(&g, 7)]++;
        o16[dp_drbg_uniform(&g, (uint64_t)1 << 32) >> 28]++;
    }
    for (int i = 0; i < 7; i++) e7[i] = NU / 7.0;
    for (int i = 0; i < 16; i++) e16[i] = NU / 16.0;
    CU_ASSERT(chi2_stat(o7, e7, 7) < dptest_chi2_isf(ALPHA, 6));
    CU_ASSERT(chi2_stat(o16, e16, 16) < dptest_chi2_isf(ALPHA, 15));

    uint64_t ones = 0;
    for (int i = 0; i < NU; i++)
        ones += (uint64_t)dp_drbg_bit(&g);
    CU_ASSERT(binom_ok(ones, NU, 0.5));
}

/* Modulo bias, and a check with teeth.
 *
 * For m = 2^63 + 1 a naive x % m on a 64-bit word is biased on only two
 * of m outcomes: 2^64 = m + (2^63 - 1), so residues below 2^63 - 1 have two
 * preimages and the residues 2^63 - 1 and 2^63 have one.  The total
 * variation is about 2^-63, which no feasible sample can detect — a test
 * claiming to catch x % (2^63+1) would be fake.  Modulo bias is large when
 * 2^64 mod m is a large fraction of m; m = 3·2^62 is the clean worst case:
 * x % m maps [0, 2^62) twice, so P[r < 2^62] = 1/2 instead of 1/3.  The
 * same binomial check below accepts uniform(m) and rejects a naive
 * x % m driven by the same DRBG (power ≈ 1: the gap 1/6 is ~350 sd at
 * 10^6 draws). */
static uint64_t naive_mod(dp_drbg *g, uint64_t m)
{
    return dp_drbg_u64(g) % m;
}

static int low_third_ok(uint64_t (*draw)(dp_drbg *, uint64_t), dp_drbg *g)
{
    const uint64_t m = 3 * ((uint64_t)1 << 62);
    uint64_t low = 0;
    for (int i = 0; i < NU; i++) {
        uint64_t x = draw(g, m);
        if (x >= m)
            return 0;
        low += x < ((uint64_t)1 << 62);
    }
    return binom_ok(low, NU, 1.0 / 3.0);
}

static void test_uniform_modulo_bias_teeth(void)
{
    dp_drbg g = fresh("bias");
    CU_ASSERT(low_third_ok(dp_drbg_uniform, &g));
    g = fresh("bias");
    CU_ASSERT(!low_third_ok(naive_mod, &g));   /* the check can fail */
}

/* m = 2^63 + 1: outputs in range, the 16 top-bit bins uniform, and the
 * rejection rate of Lemire's method is right — t = 2^64 mod m = 2^63 - 1,
 * so each attempt is rejected w.p. t/2^64 ≈ 1/2 and a draw costs ≈ 2
 * words.  Omitting the rejection (multiply-shift only) would cost exactly
 * one word per draw and fails the words check. */
static void test_uniform_2p63_plus_1(void)
{
    const uint64_t m = ((uint64_t)1 << 63) + 1;
    dp_drbg g = fresh("u2^63+1");
    uint64_t obs[16] = {0};
    uint64_t before = g.next_block * 64 - (DP_DRBG_BUFBYTES - g.pos);
    for (int i = 0; i < NU; i++) {
        uint64_t x = dp_drbg_uniform(&g, m);
        CU_ASSERT_FATAL(x < m);
        obs[x == ((uint64_t)1 << 63) ? 15 : x >> 59]++;
    }
    uint64_t words = (g.next_block * 64 - (DP_DRBG_BUFBYTES - g.pos) - before) / 8;
    double e[16];
    for (int i = 0; i < 16; i++)
        e[i] = (double)NU * (double)((uint64_t)1 << 59) / (double)m;
    e[15] += (double)NU / (double)m;
    CU_ASSERT(chi2_stat(obs, e, 16) < dptest_chi2_isf(ALPHA, 15));
    /* attempts per draw ~ Geometric(p = 1 - (2^63-1)/2^64): mean 1/p,
     * variance (1-p)/p²; the sum over NU draws is ~normal. */
    double p = 1.0 - ((double)((uint64_t)1 << 63) - 1.0) / 0x1p64;
    double mean = NU / p, sd = sqrt(NU * (1 - p) / (p * p));
    CU_ASSERT(fabs((double)words - mean) <= dptest_normal_isf(ALPHA / 2) * sd);
}

/* uniform128: m = 2^64 (one full word), m = 2^64 + 3 (mask 2^65 - 1,
 * acceptance ≈ 1/2), and m = 3·2^64 where the high part matters: P[r >>
 * 64 = k] = 1/3 for k = 0, 1, 2.  A naive (x & (2^66-1)) % m folds
 * [3·2^64, 4·2^64) onto [0, 2^64), giving P[k = 0] = 1/2: rejected. */
static void test_uniform128(void)
{
    dp_drbg g = fresh("u128");
    uint64_t hi16[16] = {0}, lo16[16] = {0};
    double e16[16];
    for (int i = 0; i < 16; i++) e16[i] = NU / 16.0;
    for (int i = 0; i < NU; i++) {
        u128 x = dp_drbg_uniform128(&g, (u128)1 << 64);
        CU_ASSERT_FATAL((x >> 64) == 0);
        hi16[(uint64_t)x >> 60]++;
        lo16[(uint64_t)x & 15]++;
    }
    CU_ASSERT(chi2_stat(hi16, e16, 16) < dptest_chi2_isf(ALPHA, 15));
    CU_ASSERT(chi2_stat(lo16, e16, 16) < dptest_chi2_isf(ALPHA, 15));

    const u128 m3 = ((u128)1 << 64) + 3;
    memset(hi16, 0, sizeof hi16);
    for (int i = 0; i < NU; i++) {
        u128 x = dp_drbg_uniform128(&g, m3);
        CU_ASSERT_FATAL(x < m3);
        hi16[(x >> 64) ? 15 : (uint64_t)x >> 60]++;
    }
    CU_ASSERT(chi2_stat(hi16, e16, 16) < dptest_chi2_isf(ALPHA, 15));

    const u128 m = (u128)3 << 64;
    uint64_t obs[3] = {0}, naive[3] = {0};
    double e3[3] = {NU / 3.0, NU / 3.0, NU / 3.0};
    for (int i = 0; i < NU; i++) {
        u128 x = dp_drbg_uniform128(&g, m);
        CU_ASSERT_FATAL(x < m);
        obs[(int)(x >> 64)]++;
        u128 w = ((u128)dp_drbg_u64(&g) << 64 | dp_drbg_u64(&g)) & (((u128)1 << 66) - 1);
        naive[(int)((w % m) >> 64)]++;
    }
    CU_ASSERT(chi2_stat(obs, e3, 3) < dptest_chi2_isf(ALPHA, 2));
    CU_ASSERT(chi2_stat(naive, e3, 3) > dptest_chi2_isf(ALPHA, 2));   /* teeth */
    CU_ASSERT(dp_drbg_uniform128(&g, 0) == 0);
    CU_ASSERT(dp_drbg_uniform128(&g, 1) == 0);
}

/* --- keys ------------------------------------------------------------------ */

static void test_keys(void)
{
    char err[256];
    dp_key k, k2;
    const char *hex = "000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F";
    CU_ASSERT(dp_key_from_hex(&k, hex, err, sizeof err) == DP_OK);
    dptest_key(&k2, 0);
    CU_ASSERT(memcmp(k.bytes, k2.bytes, 32) == 0);
    CU_ASSERT(dp_key_from_hex(&k, "00", err, sizeof err) == DP_EINVAL);
    char bad[65];
    memcpy(bad, hex, 65);
    bad[10] = 'g';
    CU_ASSERT(dp_key_from_hex(&k, bad, err, sizeof err) == DP_EINVAL);

    char dir[] = "/tmp/dp_test_drbg_XXXXXX";
    CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/key", dir);
    dp_key_generate(&k);
    CU_ASSERT(dp_key_write_new_file(&k, path, err, sizeof err) == DP_OK);
    CU_ASSERT(dp_key_write_new_file(&k, path, err, sizeof err) == DP_EIO);   /* no overwrite */
    CU_ASSERT(dp_key_load_file(&k2, path, err, sizeof err) == DP_OK);
    CU_ASSERT(memcmp(k.bytes, k2.bytes, 32) == 0);
    unlink(path);

    /* hex key file with newline; over-long and short files rejected */
    FILE *f = fopen(path, "w");
    fprintf(f, "%s\n", hex);
    fclose(f);
    chmod(path, 0644);
    CU_ASSERT(dp_key_load_file(&k2, path, err, sizeof err) == DP_EINVAL);   /* others may read it */
    CU_ASSERT(strstr(err, "chmod 600") != NULL);
    chmod(path, 0600);
    CU_ASSERT(dp_key_load_file(&k2, path, err, sizeof err) == DP_OK);
    dptest_key(&k, 0);
    CU_ASSERT(memcmp(k.bytes, k2.bytes, 32) == 0);
    f = fopen(path, "w");
    fprintf(f, "%s\n\n\nXXXXXXXX", hex);
    fclose(f);
    CU_ASSERT(dp_key_load_file(&k2, path, err, sizeof err) == DP_EINVAL);
    CU_ASSERT(strstr(err, "too long") != NULL);
    f = fopen(path, "w");
    fprintf(f, "abc");
    fclose(f);
    CU_ASSERT(dp_key_load_file(&k2, path, err, sizeof err) == DP_EINVAL);
    CU_ASSERT(strstr(err, "32 raw bytes") != NULL);
    unlink(path);
    CU_ASSERT(dp_key_load_file(&k2, path, err, sizeof err) == DP_EIO);
    rmdir(dir);
}

static const dptest_case CASES[] = {
    {"keystream = ChaCha20(BLAKE2b(key; len-prefixed fields))", test_matches_reference_construction},
    {"64-bit block index carries into the nonce", test_block_counter_carry},
    {"same key/stream/step/label -> same sequence; restart equal", test_determinism},
    {"key/stream/step/label each separate streams", test_separation},
    {"draws under one label never shift another label", test_label_non_interference},
    {"uniform(3), uniform(7), uniform(2^32), bit: chi-square", test_uniform_small},
    {"modulo bias check rejects naive x % m (m = 3*2^62)", test_uniform_modulo_bias_teeth},
    {"uniform(2^63+1): range, bins, rejection rate", test_uniform_2p63_plus_1},
    {"uniform128: 2^64, 2^64+3, 3*2^64 (+ naive rejected)", test_uniform128},
    {"keys: hex, files, no overwrite", test_keys},
    {NULL, NULL},
};

int main(void)
{
    return dptest_run("drbg", CASES);
}
