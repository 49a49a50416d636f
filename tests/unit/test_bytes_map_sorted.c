/* test_bytes_map_sorted.c — dp_bytes_map_sorted (core/bytes_map.h) lists
 * the kept slots in dp_bytes_key_cmp's order, the order every snapshot
 * writes map entries in (docs/design.md §2: no output byte may depend on
 * hash order).  Its sort compares the keys' first 16 bytes as zero-padded
 * big-endian words before the keys themselves; the keys here are built to
 * hit every way that can go wrong: a small alphabet with 0x00 and 0xff
 * (padding and real zero bytes, signedness), lengths 1..40 around 8 and 16
 * (short keys that are prefixes of longer ones, ties in both words). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/bytes_map.h"
#include "dptest.h"

static int odd_value(const void *value) { return ((uintptr_t)value & 1u) != 0; }

/* n pseudo-random keys (a fixed LCG: the same keys every run) */
static size_t fill(dp_bytes_map *m, size_t n)
{
    static const uint8_t alpha[4] = {0x00, 0x01, 'a', 0xff};
    uint64_t x = 0x2545F4914F6CDD1Dull;
    uint8_t key[40];
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t len = 1 + (size_t)(x >> 59) % 40;   /* 1..40 */
        for (size_t j = 0; j < len; j++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            key[j] = alpha[x >> 62];
        }
        dp_bytes_map_slot *s = dp_bytes_map_upsert(m, key, len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        s->value = (void *)(uintptr_t)(i + 1);
    }
    return m->count;
}

static void check_order(const dp_bytes_map *m, int (*keep)(const void *), size_t expect)
{
    size_t n = 0;
    const dp_bytes_map_slot **v = dp_bytes_map_sorted(m, keep, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    CU_ASSERT_EQUAL(n, expect);
    size_t bad = 0;
    for (size_t i = 1; i < n; i++)
        bad += dp_bytes_key_cmp(v[i - 1]->key, v[i - 1]->key_len, v[i]->key, v[i]->key_len) >= 0;
    CU_ASSERT_EQUAL(bad, 0);   /* strictly increasing: every key once, in order */
    for (size_t i = 0; i < n; i++)
        CU_ASSERT_FATAL(!keep || keep(v[i]->value));
    free(v);
}

static void test_sorted_is_key_order(void)
{
    dp_bytes_map m;
    dp_bytes_map_init(&m);
    size_t count = fill(&m, 20000);
    CU_ASSERT(count > 10000);   /* most keys distinct, many sharing 8- and 16-byte prefixes */
    check_order(&m, NULL, count);
    size_t odd = 0;
    for (size_t i = 0; i < m.cap; i++)
        odd += m.slots[i].key && odd_value(m.slots[i].value);
    check_order(&m, odd_value, odd);
    dp_bytes_map_free(&m);
}

static void test_prefixes_and_zero_bytes(void)
{
    /* "ab" < "ab\0" < "ab\0\0" < "ab\x01" < "ab\xff" < "ab\xff" + 15 zeros + "\x01" */
    static const struct { const char *k; size_t len; } want[] = {
        {"ab", 2}, {"ab\0", 3}, {"ab\0\0", 4}, {"ab\x01", 3}, {"ab\xff", 3},
        {"ab\xff\0\0\0\0\0\0\0\0\0\0\0\0\0", 16}, {"ab\xff\0\0\0\0\0\0\0\0\0\0\0\0\0\x01", 17}, {"b", 1},
    };
    const size_t n_want = sizeof want / sizeof want[0];
    dp_bytes_map m;
    dp_bytes_map_init(&m);
    for (size_t i = n_want; i-- > 0;)
        CU_ASSERT_PTR_NOT_NULL_FATAL(dp_bytes_map_upsert(&m, want[i].k, want[i].len));
    size_t n = 0;
    const dp_bytes_map_slot **v = dp_bytes_map_sorted(&m, NULL, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    CU_ASSERT_EQUAL_FATAL(n, n_want);
    for (size_t i = 0; i < n; i++)
        CU_ASSERT(v[i]->key_len == want[i].len && memcmp(v[i]->key, want[i].k, want[i].len) == 0);
    free(v);
    dp_bytes_map_free(&m);
}

static const dptest_case CASES[] = {
    {"sorted lists every kept key once, in dp_bytes_key_cmp order (20 000 keys sharing long prefixes)",
     test_sorted_is_key_order},
    {"a key sorts before its extensions, zero bytes and padding included", test_prefixes_and_zero_bytes},
    {NULL, NULL},
};

int main(void) { return dptest_run("bytes_map_sorted", CASES); }
