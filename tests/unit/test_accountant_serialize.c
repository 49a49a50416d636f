/* test_accountant_serialize.c — the ledger's snapshot: byte-identical round
 * trips, and every truncation, byte flip and resealed semantic corruption
 * refused (a restored ledger that under-counts spending would overspend). */
#include "dptest.h"

#include "core/accountant.h"
#include "core/dp_error.h"
#include "core/drbg.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static dp_privacy pure(double e) { return (dp_privacy){DP_PRIVACY_PURE, e}; }
static dp_privacy zcdp(double r) { return (dp_privacy){DP_PRIVACY_ZCDP, r}; }

/* A ledger with awkward contents: many entries, extreme steps, amounts
 * that are not short decimals, labels of every length 1..39. */
static void build_ledger(dp_ledger *l, int exhaust)
{
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_ledger_init(l, DP_PRIVACY_ZCDP, 2.0, err, sizeof err), DP_OK);
    char label[DP_LEDGER_MECH_MAX];
    for (int i = 0; i < 120; i++) {
        int len = 1 + i % (DP_LEDGER_MECH_MAX - 1);
        for (int k = 0; k < len; k++)
            label[k] = (char)('a' + (i + k) % 26);
        label[len] = '\0';
        uint64_t step = i == 7 ? UINT64_MAX : (uint64_t)i * 1000003u;
        dp_privacy cost = i % 3 ? zcdp(1.0 / (3.0 * (i + 7))) : pure(1.0 / (i + 11));
        CU_ASSERT_EQUAL_FATAL(dp_ledger_spend(l, step, label, cost, err, sizeof err), DP_OK);
    }
    if (exhaust)
        CU_ASSERT_EQUAL(dp_ledger_spend(l, 1000, "too much", zcdp(5.0), err, sizeof err), DP_EBUDGET);
}

static void assert_ledgers_equal(const dp_ledger *a, const dp_ledger *b)
{
    CU_ASSERT_EQUAL(a->model, b->model);
    CU_ASSERT_EQUAL(memcmp(&a->budget, &b->budget, sizeof(double)), 0);
    CU_ASSERT_EQUAL(memcmp(&a->spent, &b->spent, sizeof(double)), 0);
    CU_ASSERT_EQUAL(a->exhausted, b->exhausted);
    CU_ASSERT_EQUAL_FATAL(a->n_entries, b->n_entries);
    for (size_t i = 0; i < a->n_entries; i++) {
        CU_ASSERT_EQUAL(a->entries[i].step, b->entries[i].step);
        CU_ASSERT_EQUAL(memcmp(&a->entries[i].amount, &b->entries[i].amount, sizeof(double)), 0);
        CU_ASSERT_STRING_EQUAL(a->entries[i].mechanism, b->entries[i].mechanism);
    }
}

static void round_trip(const dp_ledger *l)
{
    uint8_t *bytes = NULL, *again = NULL;
    size_t len = 0, len2 = 0;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_ledger_serialize(l, &bytes, &len), DP_OK);
    dp_ledger back;
    CU_ASSERT_EQUAL_FATAL(dp_ledger_deserialize(&back, bytes, len, err, sizeof err), DP_OK);
    assert_ledgers_equal(l, &back);
    CU_ASSERT_EQUAL_FATAL(dp_ledger_serialize(&back, &again, &len2), DP_OK);
    CU_ASSERT_EQUAL(len, len2);
    CU_ASSERT(len == len2 && memcmp(bytes, again, len) == 0);
    dp_ledger_free(&back);
    free(bytes);
    free(again);
}

static void test_serialize_round_trip(void)
{
    dp_ledger l;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_ledger_init(&l, DP_PRIVACY_PURE, 3.5, err, sizeof err), DP_OK);
    round_trip(&l);                       /* empty */
    dp_ledger_free(&l);

    build_ledger(&l, 0);
    round_trip(&l);
    dp_ledger_free(&l);

    build_ledger(&l, 1);                  /* exhausted by a refusal */
    CU_ASSERT(l.exhausted);
    round_trip(&l);
    dp_ledger_free(&l);

    /* a restored ledger continues exactly like the original */
    build_ledger(&l, 0);
    uint8_t *bytes;
    size_t len;
    CU_ASSERT_EQUAL_FATAL(dp_ledger_serialize(&l, &bytes, &len), DP_OK);
    dp_ledger back;
    CU_ASSERT_EQUAL_FATAL(dp_ledger_deserialize(&back, bytes, len, err, sizeof err), DP_OK);
    free(bytes);
    int rc_a = DP_OK, rc_b = DP_OK;
    for (int i = 0; rc_a == DP_OK && i < 1000000; i++) {
        rc_a = dp_ledger_spend(&l, 5000 + (uint64_t)i, "more", zcdp(0.0123), err, sizeof err);
        rc_b = dp_ledger_spend(&back, 5000 + (uint64_t)i, "more", zcdp(0.0123), err, sizeof err);
        CU_ASSERT_EQUAL(rc_a, rc_b);
    }
    CU_ASSERT_EQUAL(rc_a, DP_EBUDGET);
    assert_ledgers_equal(&l, &back);
    dp_ledger_free(&l);
    dp_ledger_free(&back);
}

static int ledger_is_empty(const dp_ledger *l)
{
    return l->entries == NULL && l->n_entries == 0 && l->cap_entries == 0;
}

static void test_serialize_truncation(void)
{
    dp_ledger l, back;
    char err[256];
    build_ledger(&l, 0);
    uint8_t *bytes;
    size_t len;
    CU_ASSERT_EQUAL_FATAL(dp_ledger_serialize(&l, &bytes, &len), DP_OK);
    size_t refused = 0;
    for (size_t n = 0; n < len; n++) {
        /* a fresh copy of exactly n bytes so ASan sees any over-read */
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, bytes, n);
        int rc = dp_ledger_deserialize(&back, cut, n, err, sizeof err);
        CU_ASSERT_EQUAL(rc, DP_ECORRUPT);
        CU_ASSERT(ledger_is_empty(&back));
        refused += rc == DP_ECORRUPT;
        if (rc == DP_OK)
            dp_ledger_free(&back);
        free(cut);
    }
    CU_ASSERT_EQUAL(refused, len);
    /* one extra byte is corrupt too */
    uint8_t *longer = malloc(len + 1);
    memcpy(longer, bytes, len);
    longer[len] = 0;
    CU_ASSERT_EQUAL(dp_ledger_deserialize(&back, longer, len + 1, err, sizeof err), DP_ECORRUPT);
    CU_ASSERT_EQUAL(dp_ledger_deserialize(&back, NULL, 0, err, sizeof err), DP_ECORRUPT);
    free(longer);
    free(bytes);
    dp_ledger_free(&l);
}

static void test_serialize_byte_flips(void)
{
    dp_ledger l, back;
    char err[256];
    build_ledger(&l, 1);
    uint8_t *bytes;
    size_t len;
    CU_ASSERT_EQUAL_FATAL(dp_ledger_serialize(&l, &bytes, &len), DP_OK);
    uint8_t *copy = malloc(len);

    /* every single byte, three different corruptions each */
    static const uint8_t masks[] = {0x01, 0x80, 0xff};
    size_t refused = 0, tried = 0;
    for (size_t pos = 0; pos < len; pos++) {
        for (size_t m = 0; m < sizeof masks; m++) {
            memcpy(copy, bytes, len);
            copy[pos] ^= masks[m];
            int rc = dp_ledger_deserialize(&back, copy, len, err, sizeof err);
            tried++;
            refused += rc == DP_ECORRUPT;
            if (rc == DP_OK)
                dp_ledger_free(&back);
        }
    }
    CU_ASSERT_EQUAL(refused, tried);

    /* random multi-byte damage, from the DRBG at a fixed test key */
    dp_key key;
    dptest_key(&key, 42);
    dp_drbg g;
    dp_drbg_init(&g, &key, "test_accountant", 15, 0, "byte flips");
    refused = 0;
    for (int trial = 0; trial < 2000; trial++) {
        memcpy(copy, bytes, len);
        int nflip = 1 + (int)dp_drbg_uniform(&g, 8);
        for (int k = 0; k < nflip; k++)
            copy[dp_drbg_uniform(&g, len)] ^= (uint8_t)(1 + dp_drbg_uniform(&g, 255));
        int rc = dp_ledger_deserialize(&back, copy, len, err, sizeof err);
        if (rc == DP_OK) {
            /* two flips may cancel on the same byte: then it must be the original */
            CU_ASSERT_EQUAL(memcmp(copy, bytes, len), 0);
            dp_ledger_free(&back);
        } else {
            CU_ASSERT_EQUAL(rc, DP_ECORRUPT);
            CU_ASSERT(ledger_is_empty(&back));
            refused++;
        }
    }
    CU_ASSERT(refused >= 1990);
    free(copy);
    free(bytes);
    dp_ledger_free(&l);
}

/* Well-formed but wrong snapshots with a valid checksum: the structural
 * checks must catch them on their own.  The checksum is the documented
 * 64-bit FNV-1a over all preceding bytes, recomputed here independently. */
static uint64_t test_fnv1a64(const uint8_t *p, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static void reseal(uint8_t *p, size_t len)
{
    uint64_t h = test_fnv1a64(p, len - 8);
    for (int i = 0; i < 8; i++)
        p[len - 8 + i] = (uint8_t)(h >> (8 * i));
}

static void put_le(uint8_t *p, uint64_t v, int width)
{
    for (int i = 0; i < width; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_f64(uint8_t *p, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_le(p, bits, 8);
}

/* Header offsets from the layout documented in accountant.c. */
enum { OFF_MAGIC = 0, OFF_VERSION = 4, OFF_MODEL = 8, OFF_BUDGET = 12, OFF_SPENT = 20,
       OFF_EXHAUSTED = 28, OFF_N = 29, OFF_E0 = 37,
       OFF_E0_AMOUNT = OFF_E0 + 8, OFF_E0_LEN = OFF_E0 + 16, OFF_E0_LABEL = OFF_E0 + 17 };

static int deserialize_patched(const uint8_t *orig, size_t len, size_t off, const void *val, size_t n)
{
    uint8_t *p = malloc(len);
    memcpy(p, orig, len);
    memcpy(p + off, val, n);
    reseal(p, len);
    dp_ledger back;
    char err[256];
    int rc = dp_ledger_deserialize(&back, p, len, err, sizeof err);
    if (rc == DP_OK)
        dp_ledger_free(&back);
    free(p);
    return rc;
}

static void test_serialize_semantic_corruption(void)
{
    dp_ledger l;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_ledger_init(&l, DP_PRIVACY_ZCDP, 1.0, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_spend(&l, 3, "gauss", zcdp(0.25), err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_spend(&l, 4, "gauss", zcdp(0.5), err, sizeof err), DP_OK);
    uint8_t *bytes;
    size_t len;
    CU_ASSERT_EQUAL_FATAL(dp_ledger_serialize(&l, &bytes, &len), DP_OK);
    CU_ASSERT_EQUAL_FATAL(len, OFF_E0 + 2 * (17 + 5) + 8);
    CU_ASSERT_EQUAL(bytes[OFF_E0_LEN], 5);

    /* control: resealing an unchanged copy is accepted, so the checks below
     * fail for the reason they name */
    uint8_t same[8];
    memcpy(same, bytes + OFF_SPENT, 8);
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_SPENT, same, 8), DP_OK);

    uint8_t u8;
    uint8_t w[8];
    put_le(w, 0x58585858u, 4);
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_MAGIC, w, 4), DP_ECORRUPT);
    put_le(w, 2, 4);
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_VERSION, w, 4), DP_ECORRUPT);
    put_le(w, 3, 4);
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_MODEL, w, 4), DP_ECORRUPT);
    put_f64(w, NAN);
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_BUDGET, w, 8), DP_ECORRUPT);
    put_f64(w, 0.0);
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_BUDGET, w, 8), DP_ECORRUPT);
    put_f64(w, 0.5);   /* entries sum to 0.75 > budget */
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_BUDGET, w, 8), DP_ECORRUPT);
    put_f64(w, 0.75);  /* budget met but not marked exhausted */
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_BUDGET, w, 8), DP_ECORRUPT);
    put_f64(w, nextafter(0.75, 0));   /* one ulp less than Σ amounts: hands back budget */
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_SPENT, w, 8), DP_ECORRUPT);
    put_f64(w, 0.0);
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_SPENT, w, 8), DP_ECORRUPT);
    u8 = 2;
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_EXHAUSTED, &u8, 1), DP_ECORRUPT);
    u8 = 1;   /* exhausted with budget left is legitimate (a refused spend) */
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_EXHAUSTED, &u8, 1), DP_OK);
    put_le(w, (uint64_t)1 << 62, 8);
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_N, w, 8), DP_ECORRUPT);
    put_le(w, 3, 8);
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_N, w, 8), DP_ECORRUPT);
    put_le(w, 1, 8);
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_N, w, 8), DP_ECORRUPT);
    put_f64(w, -0.25);
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_E0_AMOUNT, w, 8), DP_ECORRUPT);
    put_f64(w, INFINITY);
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_E0_AMOUNT, w, 8), DP_ECORRUPT);
    u8 = 0;
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_E0_LEN, &u8, 1), DP_ECORRUPT);
    u8 = DP_LEDGER_MECH_MAX;
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_E0_LEN, &u8, 1), DP_ECORRUPT);
    u8 = 0;   /* NUL inside a label */
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_E0_LABEL + 2, &u8, 1), DP_ECORRUPT);
    u8 = 'G';  /* a different but valid label is fine: only structure is checked */
    CU_ASSERT_EQUAL(deserialize_patched(bytes, len, OFF_E0_LABEL, &u8, 1), DP_OK);

    free(bytes);
    dp_ledger_free(&l);
}

static const dptest_case CASES[] = {
    {"serialization round trip is byte-identical", test_serialize_round_trip},
    {"serialization: every truncation is corrupt", test_serialize_truncation},
    {"serialization: byte flips are corrupt", test_serialize_byte_flips},
    {"serialization: resealed semantic corruption", test_serialize_semantic_corruption},
    {NULL, NULL},
};

int main(void)
{
    return dptest_run("accountant_serialize", CASES);
}
