/* test_stats.c — dp_stats: canonical form, merge = union, save/load. */
#include "dptest.h"

#include "core/dp_error.h"
#include "synth/common/stats.h"

#include <string.h>

static void test_finish_canonical(void)
{
    dp_stats a, b;
    dp_stats_init(&a, 3);
    dp_stats_init(&b, 3);
    /* Same multiset of additions in two orders, with a cancelling cell. */
    uint64_t keys[] = {9, 2, 7, 2, 40, 9, 5};
    int64_t cnt[] = {1, 3, 4, -3, 2, 6, 0};
    for (int i = 0; i < 7; i++)
        CU_ASSERT_EQUAL(dp_stats_add(&a, keys[i], cnt[i]), DP_OK);
    for (int i = 6; i >= 0; i--)
        CU_ASSERT_EQUAL(dp_stats_add(&b, keys[i], cnt[i]), DP_OK);
    CU_ASSERT_EQUAL(dp_stats_finish(&a), DP_OK);
    CU_ASSERT_EQUAL(dp_stats_finish(&b), DP_OK);
    CU_ASSERT_EQUAL(a.n_cells, 3);   /* 2 cancelled, 5 was zero */
    CU_ASSERT_EQUAL(a.n_cells, b.n_cells);
    CU_ASSERT(memcmp(a.keys, b.keys, a.n_cells * sizeof *a.keys) == 0);
    CU_ASSERT(memcmp(a.counts, b.counts, a.n_cells * sizeof *a.counts) == 0);
    CU_ASSERT_EQUAL(dp_stats_get(&a, 9), 7);
    CU_ASSERT_EQUAL(dp_stats_get(&a, 7), 4);
    CU_ASSERT_EQUAL(dp_stats_get(&a, 40), 2);
    CU_ASSERT_EQUAL(dp_stats_get(&a, 2), 0);
    CU_ASSERT_EQUAL(dp_stats_get(&a, 1000), 0);
    for (size_t i = 1; i < a.n_cells; i++)
        CU_ASSERT(a.keys[i - 1] < a.keys[i]);
    dp_stats_free(&a);
    dp_stats_free(&b);
}

static void test_merge_is_union(void)
{
    dp_key key;
    dptest_key(&key, 1);
    dp_drbg g;
    dp_drbg_init(&g, &key, "t", 1, 0, "test/stats");
    dp_stats whole, part[3], merged;
    dp_stats_init(&whole, 5);
    dp_stats_init(&merged, 5);
    for (int i = 0; i < 3; i++)
        dp_stats_init(&part[i], 5);
    for (int i = 0; i < 5000; i++) {
        uint64_t k = dp_drbg_uniform(&g, 300);
        int64_t c = (int64_t)dp_drbg_uniform(&g, 9) - 4;
        dp_stats_add(&whole, k, c);
        dp_stats_add(&part[dp_drbg_uniform(&g, 3)], k, c);
    }
    whole.scalars[0] = 0;
    for (int i = 0; i < 3; i++) {
        part[i].scalars[0] = 10 * (i + 1);
        whole.scalars[0] += 10 * (i + 1);
        CU_ASSERT_EQUAL(dp_stats_finish(&part[i]), DP_OK);
    }
    CU_ASSERT_EQUAL(dp_stats_finish(&whole), DP_OK);
    for (int i = 2; i >= 0; i--)
        CU_ASSERT_EQUAL(dp_stats_merge(&merged, &part[i]), DP_OK);
    CU_ASSERT_EQUAL(merged.n_cells, whole.n_cells);
    CU_ASSERT(merged.n_cells == whole.n_cells &&
              memcmp(merged.keys, whole.keys, whole.n_cells * sizeof(uint64_t)) == 0 &&
              memcmp(merged.counts, whole.counts, whole.n_cells * sizeof(int64_t)) == 0);
    CU_ASSERT_EQUAL(merged.scalars[0], 60);
    dp_stats other;
    dp_stats_init(&other, 6);
    CU_ASSERT_EQUAL(dp_stats_merge(&merged, &other), DP_EINVAL);   /* steps differ */
    dp_stats_free(&other);

    dp_buf b;
    dp_buf_init(&b);
    CU_ASSERT_EQUAL(dp_stats_save(&whole, &b), DP_OK);
    dp_stats back;
    dp_stats_init(&back, 0);
    dp_reader r;
    dp_reader_init(&r, b.data, b.len);
    CU_ASSERT_EQUAL(dp_stats_load(&back, &r), DP_OK);
    CU_ASSERT_EQUAL(dp_reader_finish(&r), DP_OK);
    CU_ASSERT_EQUAL(back.step, 5);
    CU_ASSERT_EQUAL(back.n_cells, whole.n_cells);
    CU_ASSERT(memcmp(back.counts, whole.counts, whole.n_cells * sizeof(int64_t)) == 0);
    dp_reader_init(&r, b.data, b.len - 3);
    CU_ASSERT_NOT_EQUAL(dp_stats_load(&back, &r), DP_OK);
    dp_buf_free(&b);
    dp_stats_free(&back);
    dp_stats_free(&whole);
    dp_stats_free(&merged);
    for (int i = 0; i < 3; i++)
        dp_stats_free(&part[i]);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"finish: sorted, combined, zero cells dropped, order-free", test_finish_canonical},
        {"merge of shards equals the whole; save/load exact", test_merge_is_union},
        {NULL, NULL},
    };
    return dptest_run("stats", cases);
}
