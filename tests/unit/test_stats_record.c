/* test_stats_record.c — the statistics record of a sharded stream and its
 * merger (stream/stats_record.h; docs/kafka.md §10):
 *   * a record round-trips its shard's statistics, MAC'd or sealed;
 *   * the decoder refuses, naming shard and step, a record altered in its
 *     header or statistics or written under another key (MAC and seal), a
 *     shard count other than the topic's, an unknown shard, a sealed
 *     record without a state key and the other way round;
 *   * the merger says complete only once every shard 0..N-1 is in, refuses
 *     a repeated (step, shard), another stream, a released step, and takes
 *     steps in order;
 *   * the merge of 4 shards' records, the entities split by the real
 *     sharded key and partitioner, is byte for byte the unsharded
 *     statistics, for window and cumulative, in any arrival order. */
#define _GNU_SOURCE   /* memmem */
#include <stdio.h>
#include <string.h>

#include "core/dp_error.h"
#include "dptest.h"
#include "stream/kafka_util.h"
#include "stream/shard_key.h"
#include "stream/stats_record.h"
#include "synth_testkit.h"

enum { SHARDS = 4 };

static void sample_stats(dp_stats *s, uint64_t step, int64_t salt)
{
    dp_stats_clear(s, step);
    for (int64_t k = 1; k <= 20; k++)
        CU_ASSERT_EQUAL(dp_stats_add(s, (uint64_t)(k * 7 + salt), k + salt), DP_OK);
    s->scalars[0] = 100 + salt;
    CU_ASSERT_EQUAL(dp_stats_finish(s), DP_OK);
}

static dp_stats_record header(uint64_t step, uint32_t shard)
{
    dp_stats_record r = {.updates_topic = "t.updates", .updates_topic_len = 9, .stream_id = "panel",
                         .stream_id_len = 5, .step = step, .shard = shard, .shard_count = SHARDS};
    return r;
}

static int same_stats(const dp_stats *a, const dp_stats *b)
{
    dp_buf x, y;
    dp_buf_init(&x);
    dp_buf_init(&y);
    int same = dp_stats_save(a, &x) == DP_OK && dp_stats_save(b, &y) == DP_OK && x.len == y.len &&
               memcmp(x.data, y.data, x.len) == 0;
    dp_buf_free(&x);
    dp_buf_free(&y);
    return same;
}

static void test_round_trip(void)
{
    dp_key noise, state;
    dptest_key(&noise, 1);
    dptest_key(&state, 2);
    dp_stats s, back;
    dp_stats_init(&s, 5);
    dp_stats_init(&back, 0);
    sample_stats(&s, 5, 3);
    for (int sealed = 0; sealed <= 1; sealed++) {
        dp_buf b;
        dp_buf_init(&b);
        dp_stats_record r = header(5, 2), d;
        char err[512];
        CU_ASSERT_EQUAL_FATAL(dp_stats_record_encode(&r, &s, sealed ? &state : NULL, &noise, &b, err, sizeof err),
                              DP_OK);
        CU_ASSERT_EQUAL_FATAL(dp_stats_record_decode(b.data, b.len, SHARDS, sealed ? &state : NULL, &noise, &d, &back,
                                                     err, sizeof err), DP_OK);
        CU_ASSERT(d.step == 5 && d.shard == 2 && d.shard_count == SHARDS);
        CU_ASSERT(d.stream_id_len == 5 && memcmp(d.stream_id, "panel", 5) == 0);
        CU_ASSERT(d.updates_topic_len == 9 && memcmp(d.updates_topic, "t.updates", 9) == 0);
        CU_ASSERT(same_stats(&s, &back));
        /* sealed: the exact counts are not in the bytes */
        if (sealed) {
            dp_buf plain;
            dp_buf_init(&plain);
            CU_ASSERT_EQUAL(dp_stats_save(&s, &plain), DP_OK);
            CU_ASSERT(!memmem(b.data, b.len, plain.data + 12, 64));
            dp_buf_free(&plain);
        }
        dp_buf_free(&b);
    }
    dp_stats_free(&s);
    dp_stats_free(&back);
}

/* Decode `rec` and expect a refusal whose text holds every needle. */
static void refused(const dp_buf *rec, uint32_t shards, const dp_key *state, const dp_key *noise, const char *what,
                    const char *n1, const char *n2)
{
    dp_stats back;
    dp_stats_init(&back, 0);
    dp_stats_record d;
    char err[512] = "";
    int rc = dp_stats_record_decode(rec->data, rec->len, shards, state, noise, &d, &back, err, sizeof err);
    int ok = rc == DP_ECORRUPT && strstr(err, n1) && (!n2 || strstr(err, n2));
    CU_ASSERT(ok);
    if (!ok)
        fprintf(stderr, "\n  %s: rc %d, \"%s\"", what, rc, err);
    dp_stats_free(&back);
}

/* Offsets of the header's fields in a record of header(…): "DPS1",
 * blob(9 bytes), blob(5 bytes), then step, shard, count, sealed. */
enum { OFF_STEP = 4 + 8 + 9 + 8 + 5, OFF_SHARD = OFF_STEP + 8, OFF_COUNT = OFF_SHARD + 4, OFF_SEALED = OFF_COUNT + 4 };

static void test_decoder_refusals(void)
{
    dp_key noise, other, state, other_state;
    dptest_key(&noise, 1);
    dptest_key(&other, 9);
    dptest_key(&state, 2);
    dptest_key(&other_state, 8);
    dp_stats s;
    dp_stats_init(&s, 5);
    sample_stats(&s, 5, 1);
    char err[512];
    for (int sealed = 0; sealed <= 1; sealed++) {
        const dp_key *sk = sealed ? &state : NULL;
        dp_buf good, bad;
        dp_buf_init(&good);
        dp_buf_init(&bad);
        dp_stats_record r = header(5, 2);
        CU_ASSERT_EQUAL_FATAL(dp_stats_record_encode(&r, &s, sk, &noise, &good, err, sizeof err), DP_OK);
        CU_ASSERT_EQUAL_FATAL(good.data[OFF_STEP], 5);
        CU_ASSERT_EQUAL_FATAL(good.data[OFF_SHARD], 2);
        CU_ASSERT_EQUAL_FATAL(good.data[OFF_COUNT], SHARDS);
        CU_ASSERT_EQUAL_FATAL(good.data[OFF_SEALED], sealed);
#define MUTATE(off, val) (dp_buf_clear(&bad), dp_buf_put_bytes(&bad, good.data, good.len), bad.data[(off)] = (val))
        /* the statistics altered (the last byte: MAC or tag) */
        MUTATE(good.len - 1, (uint8_t)(good.data[good.len - 1] ^ 1));
        refused(&bad, SHARDS, sk, &noise, "altered body", "step 5 from shard 2", "fails authentication");
        /* the header altered: another step, another (valid) shard */
        MUTATE(OFF_STEP, 6);
        refused(&bad, SHARDS, sk, &noise, "altered step", "step 6 from shard 2", "fails authentication");
        MUTATE(OFF_SHARD, 1);
        refused(&bad, SHARDS, sk, &noise, "altered shard", "step 5 from shard 1", "fails authentication");
        /* another key */
        refused(&good, SHARDS, sealed ? &other_state : NULL, &other, "other key", "step 5 from shard 2",
                "fails authentication");
        /* an unknown shard: 4 of 4 */
        MUTATE(OFF_SHARD, SHARDS);
        refused(&bad, SHARDS, sk, &noise, "unknown shard", "step 5 from shard 4", "an unknown shard");
        /* a shard count other than the topic's partition count */
        refused(&good, SHARDS - 1, sk, &noise, "shard count", "step 5 from shard 2",
                "written for 4 shards, but the updates topic has 3 partitions");
        /* sealed, but no state key here; and the other way round */
        refused(&good, SHARDS, sealed ? NULL : &state, &noise, "sealing", "step 5 from shard 2",
                sealed ? "sealed, but this instance has no state key" : "not sealed, but this instance has a state key");
        /* not a record at all, and a truncated one */
        MUTATE(0, 'X');
        refused(&bad, SHARDS, sk, &noise, "magic", "not a statistics record", NULL);
        dp_buf_clear(&bad);
        dp_buf_put_bytes(&bad, good.data, good.len - 1);
        refused(&bad, SHARDS, sk, &noise, "truncated", "malformed", NULL);
#undef MUTATE
        dp_buf_free(&good);
        dp_buf_free(&bad);
    }
    /* the encoder refuses what the decoder would */
    dp_stats_record r = header(5, SHARDS);
    dp_buf b;
    dp_buf_init(&b);
    CU_ASSERT_EQUAL(dp_stats_record_encode(&r, &s, NULL, &noise, &b, err, sizeof err), DP_EINVAL);
    r = header(6, 0);
    CU_ASSERT_EQUAL(dp_stats_record_encode(&r, &s, NULL, &noise, &b, err, sizeof err), DP_EINVAL);
    dp_buf_free(&b);
    dp_stats_free(&s);
}

static void test_merger(void)
{
    dp_stats_merger m;
    CU_ASSERT_EQUAL_FATAL(dp_stats_merger_init(&m, "panel", 5, SHARDS, 0), DP_OK);
    dp_stats s[SHARDS], out, want;
    dp_stats_init(&out, 0);
    dp_stats_init(&want, 1);
    char err[512];
    /* step 1 from shards 2, 0, 3 — and shard 1's step 2 before its step 1 */
    static const uint32_t order[] = {2, 0, 3};
    for (uint32_t i = 0; i < SHARDS; i++) {
        dp_stats_init(&s[i], 1);
        sample_stats(&s[i], 1, (int64_t)i);
        CU_ASSERT_EQUAL(dp_stats_merge(&want, &s[i]), DP_OK);
    }
    for (size_t i = 0; i < 3; i++) {
        dp_stats_record r = header(1, order[i]);
        CU_ASSERT_EQUAL(dp_stats_merger_add(&m, &r, &s[order[i]], err, sizeof err), DP_OK);
        CU_ASSERT(!dp_stats_merger_complete(&m, 1));
    }
    CU_ASSERT_EQUAL(dp_stats_merger_take(&m, 1, &out), DP_ESTATE);
    dp_stats s2;
    dp_stats_init(&s2, 2);
    sample_stats(&s2, 2, 9);
    dp_stats_record r2 = header(2, 1);
    CU_ASSERT_EQUAL(dp_stats_merger_add(&m, &r2, &s2, err, sizeof err), DP_OK);
    CU_ASSERT(!dp_stats_merger_complete(&m, 2));
    /* a repeated (step, shard) */
    dp_stats_record r = header(1, 2);
    CU_ASSERT_EQUAL(dp_stats_merger_add(&m, &r, &s[2], err, sizeof err), DP_ECORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "step 1 from shard 2 of 4: repeats a step"));
    CU_ASSERT_EQUAL(dp_stats_merger_add(&m, &r2, &s2, err, sizeof err), DP_ECORRUPT);
    /* another stream; another shard count; an unknown shard */
    r = header(1, 1);
    r.stream_id = "other";
    CU_ASSERT_EQUAL(dp_stats_merger_add(&m, &r, &s[1], err, sizeof err), DP_ECORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "another stream"));
    r = header(1, 1);
    r.shard_count = 5;
    CU_ASSERT_EQUAL(dp_stats_merger_add(&m, &r, &s[1], err, sizeof err), DP_ECORRUPT);
    r = header(1, SHARDS);
    CU_ASSERT_EQUAL(dp_stats_merger_add(&m, &r, &s[1], err, sizeof err), DP_ECORRUPT);
    CU_ASSERT(!dp_stats_merger_complete(&m, 1));
    /* the last shard completes step 1; the merge is the sum */
    r = header(1, 1);
    CU_ASSERT_EQUAL(dp_stats_merger_add(&m, &r, &s[1], err, sizeof err), DP_OK);
    CU_ASSERT(dp_stats_merger_complete(&m, 1));
    CU_ASSERT_EQUAL(dp_stats_merger_take(&m, 2, &out), DP_ESTATE);   /* not complete, and not next */
    CU_ASSERT_EQUAL_FATAL(dp_stats_merger_take(&m, 1, &out), DP_OK);
    CU_ASSERT(same_stats(&out, &want));
    CU_ASSERT(!dp_stats_merger_complete(&m, 1));
    /* a released step's statistics are refused */
    CU_ASSERT_EQUAL(dp_stats_merger_add(&m, &r, &s[1], err, sizeof err), DP_ECORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "step 1 from shard 1 of 4: repeats a step already released"));
    /* a merger restored after step 7 refuses step 7 */
    dp_stats_merger m7;
    CU_ASSERT_EQUAL_FATAL(dp_stats_merger_init(&m7, "panel", 5, SHARDS, 7), DP_OK);
    r = header(7, 0);
    dp_stats_clear(&s2, 7);
    CU_ASSERT_EQUAL(dp_stats_merger_add(&m7, &r, &s2, err, sizeof err), DP_ECORRUPT);
    dp_stats_merger_free(&m7);
    dp_stats_merger_free(&m);
    for (uint32_t i = 0; i < SHARDS; i++)
        dp_stats_free(&s[i]);
    dp_stats_free(&s2);
    dp_stats_free(&out);
    dp_stats_free(&want);
}

static int value_of(int i, int t) { return (i * 13 + t * t * (i % 7)) % 2; }
static int skipped(int i, int t) { return t > 1 && (i * 17 + t * 5) % 11 == 0; }

/* The shard of an entity: the partition of its sharded key. */
static uint32_t shard_of(const dp_update *u, dp_buf *key)
{
    dp_update k = *u;
    k.stream_id = "panel";
    k.stream_id_len = 5;
    CU_ASSERT_EQUAL_FATAL(dp_update_key(&k, 1, key), DP_OK);
    return (uint32_t)dp_kafka_key_partition("consistent_random", key->data, key->len, SHARDS);
}

static void merged_equals_unsharded(const char *name, const char *cfg_text)
{
    const dp_synth_ops *ops = dp_synth_ops_find(name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ops);
    json_error_t je;
    json_t *cfg = json_loads(cfg_text, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    dp_key noise, state;
    dptest_key(&noise, 1);
    dptest_key(&state, 2);
    char err[512], id[24];
    dp_ingest_half *whole, *in[SHARDS];
    CU_ASSERT_EQUAL_FATAL(ops->ingest_create(&whole, cfg, err, sizeof err), DP_OK);
    for (int k = 0; k < SHARDS; k++)
        CU_ASSERT_EQUAL_FATAL(ops->ingest_create(&in[k], cfg, err, sizeof err), DP_OK);
    dp_stats_merger m;
    CU_ASSERT_EQUAL_FATAL(dp_stats_merger_init(&m, "panel", 5, SHARDS, 0), DP_OK);
    dp_stats ref, part, back, merged;
    dp_stats_init(&ref, 1);
    dp_stats_init(&part, 1);
    dp_stats_init(&back, 1);
    dp_stats_init(&merged, 1);
    dp_buf key, rec;
    dp_buf_init(&key);
    dp_buf_init(&rec);
    int used[SHARDS] = {0}, same = 0;
    dp_reject_reason why;
    enum { N = 600, T = 6 };
    for (int t = 1; t <= T; t++) {
        for (int i = 0; i < N; i++) {
            if (skipped(i, t))
                continue;
            snprintf(id, sizeof id, "ent/%d", i);
            dp_update u = tk_update((uint64_t)t, id, strlen(id), value_of(i, t));
            CU_ASSERT_EQUAL(ops->ingest_update(whole, &u, &why), DP_OK);
            uint32_t k = shard_of(&u, &key);
            CU_ASSERT_EQUAL(ops->ingest_update(in[k], &u, &why), DP_OK);
            used[k]++;
        }
        dp_stats_clear(&ref, (uint64_t)t);
        CU_ASSERT_EQUAL_FATAL(ops->ingest_close(whole, (uint64_t)t, &ref), DP_OK);
        /* each shard's record, through the codec, arriving in a step-dependent order */
        for (int j = 0; j < SHARDS; j++) {
            uint32_t k = (uint32_t)((j * 3 + t) % SHARDS);
            dp_stats_clear(&part, (uint64_t)t);
            CU_ASSERT_EQUAL_FATAL(ops->ingest_close(in[k], (uint64_t)t, &part), DP_OK);
            dp_stats_record r = header((uint64_t)t, k), d;
            const dp_key *sk = (t + k) % 2 ? &state : NULL;
            dp_buf_clear(&rec);
            CU_ASSERT_EQUAL_FATAL(dp_stats_record_encode(&r, &part, sk, &noise, &rec, err, sizeof err), DP_OK);
            CU_ASSERT_EQUAL_FATAL(dp_stats_record_decode(rec.data, rec.len, SHARDS, sk, &noise, &d, &back, err,
                                                         sizeof err), DP_OK);
            CU_ASSERT(!dp_stats_merger_complete(&m, (uint64_t)t));
            CU_ASSERT_EQUAL_FATAL(dp_stats_merger_add(&m, &d, &back, err, sizeof err), DP_OK);
        }
        CU_ASSERT(dp_stats_merger_complete(&m, (uint64_t)t));
        CU_ASSERT_EQUAL_FATAL(dp_stats_merger_take(&m, (uint64_t)t, &merged), DP_OK);
        same += same_stats(&ref, &merged);
    }
    CU_ASSERT_EQUAL(same, T);
    for (int k = 0; k < SHARDS; k++) {
        CU_ASSERT(used[k] > 0);   /* every shard really holds entities */
        ops->ingest_destroy(in[k]);
    }
    ops->ingest_destroy(whole);
    dp_stats_merger_free(&m);
    dp_stats_free(&ref);
    dp_stats_free(&part);
    dp_stats_free(&back);
    dp_stats_free(&merged);
    dp_buf_free(&key);
    dp_buf_free(&rec);
    json_decref(cfg);
}

static void test_merge_window(void) { merged_equals_unsharded("window", "{\"horizon\":10,\"k\":3,\"rho\":1}"); }
static void test_merge_cumulative(void) { merged_equals_unsharded("cumulative", "{\"horizon\":10,\"rho\":1}"); }

static const dptest_case CASES[] = {
    {"a record round-trips its shard's statistics, MAC'd or sealed", test_round_trip},
    {"the decoder refuses altered, foreign-key, wrong-count, unknown-shard, mis-sealed records, naming shard and step",
     test_decoder_refusals},
    {"the merger: complete only with every shard; repeats, other streams, released steps refused; steps in order",
     test_merger},
    {"window: 4 shards' records merged = the unsharded statistics, byte for byte", test_merge_window},
    {"cumulative: 4 shards' records merged = the unsharded statistics, byte for byte", test_merge_cumulative},
    {NULL, NULL},
};

int main(void) { return dptest_run("stats record", CASES); }
