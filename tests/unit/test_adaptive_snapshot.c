/* test_adaptive_snapshot.c — `adaptive`'s entity table in snapshots
 * (adaptive_ingest.c, format "ADI3"; docs/design.md §10): the encoding
 * kept between steps and patched where entities changed is byte for byte
 * the one a fresh stream fed the same updates writes, at every step, with
 * held next-step reports in the snapshot, new entities arriving, INSERTs
 * and DELETEs; an unchanged entity's bytes do not change across steps; a
 * snapshot in the previous format ("ADI2", which stored each entity's
 * last report step) restores to the same stream: the same releases and
 * snapshots after, a held report still refuses a duplicate. */
#include "dptest.h"
#include "synth_testkit.h"

#include "synth/adaptive/adaptive.h"

#define USERS 300
#define STEPS 7

static const char *const CFG[2] = {
    "{\"categories\": 5, \"epsilon\": 1, \"horizon\": 12, \"n_min\": 10}",   /* standing_values */
    "{\"categories\": 5, \"epsilon\": 1, \"horizon\": 12, \"n_min\": 10, \"privacy\": \"w_event\", \"w\": 3}", /* step_reports */
};

/* Update i of step t (i < USERS + 20): users arrive over the steps, most
 * keep their value, some change it, some delete and insert again; all
 * have arrived by step 2, so later snapshots patch the kept encoding. */
static void feed(dp_synth *s, int standing, uint64_t t, int from, int to)
{
    char id[24];
    for (int i = from; i < to; i++) {
        int u = i % USERS, active = u < 100 + 100 * (int)t;
        uint32_t h = tk_mix32((uint32_t)u * 131u + (uint32_t)t);
        if (!active || h % 7 == 0)
            continue;   /* not arrived yet, or silent this step */
        snprintf(id, sizeof id, "user-%d", u);
        dp_update up = tk_update(t, id, strlen(id), (u + (h % 5 == 0 ? (int)t : 0)) % 5);
        if (standing && h % 11 == 1)
            up.kind = DP_UPDATE_DELETE;
        else if (standing && h % 11 == 2)
            up.kind = DP_UPDATE_INSERT;
        dp_reject_reason why;
        CU_ASSERT_EQUAL(dp_synth_ingest(s, &up, &why), DP_OK);   /* rejections (duplicates, ...) are fine */
    }
}

/* A stream fed steps 1..t and the held head (the first 60 updates) of
 * step t + 1, closing each step: the state a snapshot after close t sees. */
static void feed_to(dp_synth *s, int standing, uint64_t t, tk_sink *k)
{
    dp_release_sink rs = tk_sink_of(k);
    char err[256];
    for (uint64_t j = 1; j <= t; j++) {
        feed(s, standing, j, j == 1 ? 0 : 60, USERS + 20);
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &rs, err, sizeof err), DP_OK);
        feed(s, standing, j + 1, 0, 60);
    }
}

static dp_synth *make(const json_t *j, dp_key *key)
{
    dptest_key(key, 3);
    dp_synth_env env = {key, "ad/s", 4};
    dp_synth *s = NULL;
    char err[256];
    int rc = dp_synth_create(&s, "adaptive", j, &env, err, sizeof err);
    if (rc != DP_OK)
        printf("\n    create: %s", err);
    CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
    return s;
}

static int same(const dp_buf *a, const dp_buf *b) { return a->len == b->len && !memcmp(a->data, b->data, a->len); }

static void test_kept_encoding_is_fresh_encoding(void)
{
    for (int c = 0; c < 2; c++) {
        json_t *j = tk_cfg_text("%s", CFG[c]);
        dp_key key;
        dp_synth *live = make(j, &key);
        tk_sink k;
        tk_sink_init(&k);
        dp_release_sink rs = tk_sink_of(&k);
        char err[256];
        for (uint64_t t = 1; t <= STEPS; t++) {
            /* the live stream: step t's tail, its close, step t+1's head, a snapshot */
            feed(live, !c, t, t == 1 ? 0 : 60, USERS + 20);
            CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(live, &rs, err, sizeof err), DP_OK);
            feed(live, !c, t + 1, 0, 60);
            dp_buf a, b;
            dp_buf_init(&a);
            dp_buf_init(&b);
            CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(live, &a), DP_OK);
            /* a fresh stream fed the same, whose one snapshot encodes everything */
            dp_synth *fresh = make(j, &key);
            tk_sink k2;
            tk_sink_init(&k2);
            feed_to(fresh, !c, t, &k2);
            CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(fresh, &b), DP_OK);
            if (!same(&a, &b))
                printf("\n    config %d step %llu: kept %zu bytes, fresh %zu", c, (unsigned long long)t, a.len, b.len);
            CU_ASSERT(same(&a, &b));
            CU_ASSERT(same(&k.out, &k2.out));
            tk_sink_free(&k2);
            dp_synth_destroy(fresh);
            dp_buf_free(&a);
            dp_buf_free(&b);
        }
        tk_sink_free(&k);
        dp_synth_destroy(live);
        json_decref(j);
    }
}

/* The entity table's bytes (after the header's open step) of a stream
 * whose users report the same value at every step: the same at every step
 * (the previous format changed every entry: it stored the report's step). */
static void test_unchanged_entities_same_bytes(void)
{
    json_t *j = tk_cfg_text("%s", CFG[0]);
    dp_key key;
    dp_synth *s = make(j, &key);
    tk_sink k;
    tk_sink_init(&k);
    dp_release_sink rs = tk_sink_of(&k);
    char err[256], id[24];
    dp_buf prev;
    dp_buf_init(&prev);
    for (uint64_t t = 1; t <= 5; t++) {
        for (int u = 0; u < 50; u++) {
            dp_reject_reason why;
            snprintf(id, sizeof id, "u%d", u);
            CU_ASSERT_EQUAL(tk_report(s, t, id, u % 5, &why), DP_OK);
            CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
        }
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &rs, err, sizeof err), DP_OK);
        dp_buf a;
        dp_buf_init(&a);
        CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(s, &a), DP_OK);
        dp_synth_snapshot_head h;
        CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot_header(a.data, a.len, &h), DP_OK);
        size_t at = h.state_offset + 4 + 4 + 1 + 8, len = 8 + 50 * (1 + 3 + 4);   /* n, then 50 entries */
        CU_ASSERT_FATAL(at + len <= a.len);
        if (t > 1)
            CU_ASSERT(prev.len == len && !memcmp(prev.data, a.data + at, len));
        dp_buf_clear(&prev);
        dp_buf_put_bytes(&prev, a.data + at, len);
        dp_buf_free(&a);
    }
    dp_buf_free(&prev);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(j);
}

/* The same stream's snapshot with its entity table rewritten in the
 * previous format: u64-length blobs and u64 step << 20 | GONE | value,
 * where an entity not reported in the open step gets an earlier step. */
static void to_adi2(const dp_buf *in, dp_buf *out)
{
    dp_synth_snapshot_head h;
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot_header(in->data, in->len, &h), DP_OK);
    dp_reader r;
    dp_reader_init(&r, in->data + h.state_offset, in->len - h.state_offset);
    CU_ASSERT_EQUAL_FATAL(dp_reader_u32(&r), 0x33494441u);   /* "ADI3" */
    uint32_t cats = dp_reader_u32(&r);
    uint8_t standing = dp_reader_u8(&r);
    uint64_t open = dp_reader_u64(&r), n = dp_reader_u64(&r);
    dp_buf_put_bytes(out, in->data, h.state_offset);
    dp_buf_put_u32(out, 0x32494441u);   /* "ADI2" */
    dp_buf_put_u32(out, cats);
    dp_buf_put_u8(out, standing);
    dp_buf_put_u64(out, open);
    dp_buf_put_u64(out, n);
    for (uint64_t i = 0; i < n; i++) {
        size_t len = (size_t)dp_reader_varint(&r);
        uint8_t key[64];
        CU_ASSERT_FATAL(len < sizeof key);
        CU_ASSERT_EQUAL_FATAL(dp_reader_bytes(&r, key, len), DP_OK);
        uint32_t c = dp_reader_u32(&r);
        uint64_t step = c >> 20 & 1 ? open : open - 1 - i % (open - 1);
        dp_buf_put_blob(out, key, len);
        dp_buf_put_u64(out, step << 20 | (c & 0xfffffu));
    }
    CU_ASSERT_EQUAL_FATAL(dp_reader_status(&r), DP_OK);
    dp_buf_put_bytes(out, in->data + h.state_offset + r.off, r.len - r.off);   /* the release half */
}

static void test_previous_format_restores(void)
{
    json_t *j = tk_cfg_text("%s", CFG[0]);
    dp_key key;
    dp_synth *live = make(j, &key);
    tk_sink k, k2;
    tk_sink_init(&k);
    feed_to(live, 1, 4, &k);   /* held: step 5's head is in */
    dp_buf snap, old;
    dp_buf_init(&snap);
    dp_buf_init(&old);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(live, &snap), DP_OK);
    to_adi2(&snap, &old);
    dp_synth_env env = {&key, "ad/s", 4};
    dp_synth *back = NULL;
    char err[256];
    int rc = dp_synth_restore(&back, "adaptive", j, &env, old.data, old.len, err, sizeof err);
    if (rc != DP_OK)
        printf("\n    restore: %s", err);
    CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
    dp_buf again;
    dp_buf_init(&again);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(back, &again), DP_OK);
    CU_ASSERT(same(&again, &snap));   /* written in the new format, the same state */
    /* user-2 reported in the held head of step 5: a second report is a
     * duplicate, in the live stream and after a restore from either format */
    dp_synth *back3 = NULL;
    CU_ASSERT_EQUAL_FATAL(dp_synth_restore(&back3, "adaptive", j, &env, snap.data, snap.len, err, sizeof err), DP_OK);
    dp_reject_reason w1, w2, w3;
    CU_ASSERT_EQUAL(tk_report(live, 5, "user-2", 0, &w1), DP_OK);
    CU_ASSERT_EQUAL(tk_report(back, 5, "user-2", 0, &w2), DP_OK);
    CU_ASSERT_EQUAL(tk_report(back3, 5, "user-2", 0, &w3), DP_OK);
    CU_ASSERT_EQUAL(w1, DP_REJECT_DUPLICATE_REPORT);
    CU_ASSERT_EQUAL(w2, DP_REJECT_DUPLICATE_REPORT);
    CU_ASSERT_EQUAL(w3, DP_REJECT_DUPLICATE_REPORT);
    dp_synth_destroy(back3);
    /* and both go on alike */
    tk_sink_init(&k2);
    dp_release_sink r1 = tk_sink_of(&k), r2 = tk_sink_of(&k2);
    size_t k_at = k.out.len;
    for (uint64_t t = 5; t <= 7; t++) {
        feed(live, 1, t, 60, USERS + 20);
        feed(back, 1, t, 60, USERS + 20);
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(live, &r1, err, sizeof err), DP_OK);
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(back, &r2, err, sizeof err), DP_OK);
    }
    CU_ASSERT(k.out.len - k_at == k2.out.len && !memcmp(k.out.data + k_at, k2.out.data, k2.out.len));
    dp_buf_clear(&snap);
    dp_buf_clear(&again);
    CU_ASSERT_EQUAL(dp_synth_snapshot(live, &snap), DP_OK);
    CU_ASSERT_EQUAL(dp_synth_snapshot(back, &again), DP_OK);
    CU_ASSERT(same(&snap, &again));
    dp_buf_free(&snap);
    dp_buf_free(&old);
    dp_buf_free(&again);
    tk_sink_free(&k);
    tk_sink_free(&k2);
    dp_synth_destroy(live);
    dp_synth_destroy(back);
    json_decref(j);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"the entity table kept between snapshots is byte for byte a fresh stream's (held reports, arrivals, "
         "INSERT/DELETE; both snapshot modes)", test_kept_encoding_is_fresh_encoding},
        {"an entity whose value does not change writes the same bytes at every step",
         test_unchanged_entities_same_bytes},
        {"a snapshot in the previous format (ADI2) restores to the same stream: same snapshot, duplicates "
         "refused, same releases after", test_previous_format_restores},
        {NULL, NULL},
    };
    return dptest_run("adaptive snapshot", cases);
}
