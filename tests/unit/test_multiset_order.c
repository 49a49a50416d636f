/* test_multiset_order.c — the multiset's snapshot (multiset.h, `marginal`
 * and `spatial`'s state) with its key order kept between snapshots: at
 * every save, the bytes are those of a multiset fed the same updates from
 * nothing and saved once (which sorts every key afresh), with keys
 * arriving, counts going to zero and back, entity-keyed and anonymous
 * rows; and after a restore the next saves are still those bytes. */
#include "dptest.h"
#include "synth_testkit.h"

#include "core/dp_error.h"
#include "synth/common/multiset.h"

#include <stdio.h>
#include <string.h>

#define STEPS 6
#define PER_STEP 400

/* Update i of step t: an INSERT of one of a few hundred values, by one of
 * a few entities or none, and a DELETE now and then (some NOT_PRESENT). */
static void apply(dp_multiset *m, int t, int i)
{
    uint32_t h = tk_mix32((uint32_t)(t * 100003 + i));
    char id[16];
    snprintf(id, sizeof id, "e%u", h % 37);
    dp_update u;
    memset(&u, 0, sizeof u);
    u.step = (uint64_t)t;
    u.kind = h % 5 == 0 ? DP_UPDATE_DELETE : DP_UPDATE_INSERT;
    if (h % 3 || u.kind == DP_UPDATE_DELETE) {
        u.entity_id = id;
        u.entity_id_len = strlen(id);
    }
    /* most values recur across steps; one in 7 is new at its step */
    uint8_t value[4] = {(uint8_t)(h >> 8 & 7), (uint8_t)(h >> 11 & 3), (uint8_t)(h >> 13 & 1),
                        (uint8_t)(h % 7 == 0 ? t : 0)};
    dp_reject_reason why;
    CU_ASSERT_EQUAL(dp_multiset_apply(m, &u, value, &why), DP_OK);
}

static int any_value(const uint8_t *value, const void *ctx)
{
    (void)value;
    (void)ctx;
    return 1;
}

static int same(const dp_buf *a, const dp_buf *b) { return a->len == b->len && !memcmp(a->data, b->data, a->len); }

static void test_kept_order_is_fresh_sort(void)
{
    dp_multiset live, back;
    CU_ASSERT_EQUAL_FATAL(dp_multiset_init(&live, 4, 0, 1), DP_OK);
    int restored = 0;
    for (int t = 1; t <= STEPS; t++) {
        for (int i = 0; i < PER_STEP; i++)
            apply(restored ? &back : &live, t, i);
        dp_buf a, b;
        dp_buf_init(&a);
        dp_buf_init(&b);
        CU_ASSERT_EQUAL_FATAL(dp_multiset_save(restored ? &back : &live, &a), DP_OK);
        dp_multiset fresh;
        CU_ASSERT_EQUAL_FATAL(dp_multiset_init(&fresh, 4, 0, 1), DP_OK);
        for (int j = 1; j <= t; j++) {
            for (int i = 0; i < PER_STEP; i++)
                apply(&fresh, j, i);
            if (j < t)
                dp_multiset_next_step(&fresh);
        }
        CU_ASSERT_EQUAL_FATAL(dp_multiset_save(&fresh, &b), DP_OK);
        if (!same(&a, &b))
            printf("\n    step %d: kept order %zu bytes, fresh %zu", t, a.len, b.len);
        CU_ASSERT(same(&a, &b));
        dp_multiset_free(&fresh);
        if (t == 3) {   /* a restore half way: its first save sorts what it loaded */
            CU_ASSERT_EQUAL_FATAL(dp_multiset_init(&back, 4, 0, 1), DP_OK);
            dp_reader r;
            dp_reader_init(&r, a.data, a.len);
            CU_ASSERT_EQUAL_FATAL(dp_multiset_load(&back, &r, any_value, NULL), DP_OK);
            restored = 1;
        }
        dp_multiset_next_step(restored ? &back : &live);
        dp_buf_free(&a);
        dp_buf_free(&b);
    }
    dp_multiset_free(&live);
    dp_multiset_free(&back);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"a multiset's snapshot with its key order kept between saves is byte for byte a fresh sort's, before and "
         "after a restore", test_kept_order_is_fresh_sort},
        {NULL, NULL},
    };
    return dptest_run("multiset order", cases);
}
