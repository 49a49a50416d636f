/* test_shard_key.c — the Kafka key of an update and the KEY_MISMATCH rule
 * (stream/shard_key.h; docs/kafka.md §10): unsharded keys are the stream id
 * byte for byte, sharded keys stream id ‖ 0x00 ‖ entity id decode back
 * and never equal an unsharded key, a sharded stream spreads over every
 * partition, and a message is KEY_MISMATCH exactly when its key, payload
 * and partition disagree. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/dp_error.h"
#include "core/utf8.h"
#include "dptest.h"
#include "stream/kafka_util.h"
#include "stream/shard_key.h"

static dp_update report(const char *stream, const char *entity)
{
    dp_update u = {.stream_id = stream, .stream_id_len = strlen(stream), .step = 3, .kind = DP_UPDATE_REPORT,
                   .entity_id = entity, .entity_id_len = entity ? strlen(entity) : 0,
                   .payload = {.kind = DP_PAYLOAD_CATEGORY, .category = 1}};
    return u;
}

static dp_update marker(const char *stream)
{
    dp_update u = {.stream_id = stream, .stream_id_len = strlen(stream), .step = 3, .kind = DP_UPDATE_CLOSE_STEP};
    return u;
}

static void test_encode_decode(void)
{
    dp_buf k;
    dp_buf_init(&k);
    dp_update u = report("panel/ü", "person-7");
    /* unsharded: the stream id, byte for byte as before sharding existed */
    CU_ASSERT_EQUAL_FATAL(dp_update_key(&u, 0, &k), DP_OK);
    CU_ASSERT(k.len == u.stream_id_len && memcmp(k.data, u.stream_id, k.len) == 0);
    /* sharded: stream ‖ 0x00 ‖ entity, and back */
    CU_ASSERT_EQUAL_FATAL(dp_update_key(&u, 1, &k), DP_OK);
    CU_ASSERT(k.len == u.stream_id_len + 1 + u.entity_id_len);
    CU_ASSERT(memcmp(k.data, "panel/\xc3\xbc\0person-7", k.len) == 0);
    const char *s, *e;
    size_t sl, el;
    CU_ASSERT_EQUAL_FATAL(dp_shard_key_decode(k.data, k.len, &s, &sl, &e, &el), DP_OK);
    CU_ASSERT(sl == u.stream_id_len && memcmp(s, u.stream_id, sl) == 0);
    CU_ASSERT(el == u.entity_id_len && memcmp(e, u.entity_id, el) == 0);
    /* no sharded key is a valid id text, so none equals an unsharded key */
    CU_ASSERT(!dp_id_text_valid((const char *)k.data, k.len));
    /* a marker, and an update without an entity: the entity part is empty */
    dp_update m = marker("panel/ü");
    CU_ASSERT_EQUAL_FATAL(dp_update_key(&m, 1, &k), DP_OK);
    CU_ASSERT(k.len == m.stream_id_len + 1 && k.data[k.len - 1] == 0);
    CU_ASSERT_EQUAL_FATAL(dp_shard_key_decode(k.data, k.len, &s, &sl, &e, &el), DP_OK);
    CU_ASSERT(sl == m.stream_id_len && el == 0);
    dp_update n = report("s", NULL);
    CU_ASSERT_EQUAL_FATAL(dp_update_key(&n, 1, &k), DP_OK);
    CU_ASSERT(k.len == 2 && memcmp(k.data, "s\0", 2) == 0);
    /* not sharded keys: no separator, or an empty stream id */
    CU_ASSERT_EQUAL(dp_shard_key_decode("panel", 5, &s, &sl, &e, &el), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_shard_key_decode("\0x", 2, &s, &sl, &e, &el), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_shard_key_decode("", 0, &s, &sl, &e, &el), DP_EINVAL);
    dp_buf_free(&k);
}

/* 1000 entities of one stream over 4 partitions: the partitioner is a
 * hash, so each partition's count is Binomial(1000, 1/4) (mean 250, sd
 * 13.7) for ids it has never seen; 250 ± 6 sd is where any fair hash puts
 * them with probability 1 - 4e-9 per partition.  (An unsharded key puts
 * all 1000 in one partition.) */
static void test_spread(void)
{
    static const char *const parts[] = {"consistent_random", "murmur2_random"};
    dp_buf k;
    dp_buf_init(&k);
    char id[32];
    for (size_t p = 0; p < 2; p++) {
        int count[4] = {0};
        for (int i = 0; i < 1000; i++) {
            snprintf(id, sizeof id, "person-%d", i);
            dp_update u = report("panel", id);
            CU_ASSERT_EQUAL_FATAL(dp_update_key(&u, 1, &k), DP_OK);
            int32_t q = dp_kafka_key_partition(parts[p], k.data, k.len, 4);
            CU_ASSERT_FATAL(q >= 0 && q < 4);
            count[q]++;
        }
        double sd = sqrt(1000 * 0.25 * 0.75);
        for (int q = 0; q < 4; q++) {
            CU_ASSERT(fabs(count[q] - 250.0) <= 6 * sd);
            if (fabs(count[q] - 250.0) > 6 * sd)
                fprintf(stderr, "\n  %s: partition %d holds %d of 1000", parts[p], q, count[q]);
        }
    }
    dp_buf_free(&k);
}

/* mismatch(): the verdict for update u in message (key, partition) of 4. */
static int mismatch(const dp_update *u, int sharded, const void *key, size_t key_len, int32_t partition, char *msg)
{
    msg[0] = '\0';
    return dp_update_key_mismatch("consistent_random", u, sharded, key, key_len, partition, 4, msg, 384);
}

static void test_unsharded_rule(void)
{
    char msg[384];
    dp_update u = report("panel", "person-1");
    int32_t home = dp_kafka_key_partition("consistent_random", "panel", 5, 4);
    CU_ASSERT_EQUAL(mismatch(&u, 0, "panel", 5, home, msg), 0);
    CU_ASSERT_EQUAL(mismatch(&u, 0, "panel", 5, (home + 1) % 4, msg), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "belongs in partition"));
    CU_ASSERT_EQUAL(mismatch(&u, 0, "panels", 6, home, msg), 1);
    CU_ASSERT_STRING_EQUAL(msg, "the message's key is not the stream id");
    CU_ASSERT_EQUAL(mismatch(&u, 0, NULL, 0, home, msg), 1);
    CU_ASSERT_STRING_EQUAL(msg, "the message's key is null; it must be the stream id");
    /* a sharded key on an unsharded route */
    CU_ASSERT_EQUAL(mismatch(&u, 0, "panel\0person-1", 14, home, msg), 1);
    /* unknown partition count: the key alone is checked */
    CU_ASSERT_EQUAL(dp_update_key_mismatch("consistent_random", &u, 0, "panel", 5, (home + 1) % 4, 0, msg, 384), 0);
}

static void test_sharded_rule(void)
{
    char msg[384];
    dp_update u = report("panel", "person-1");
    const char key[] = "panel\0person-1";
    size_t kl = sizeof key - 1;
    int32_t home = dp_kafka_key_partition("consistent_random", key, kl, 4);
    CU_ASSERT_EQUAL(mismatch(&u, 1, key, kl, home, msg), 0);
    /* a data update sits in its key's partition, and only there */
    for (int32_t q = 0; q < 4; q++)
        if (q != home) {
            CU_ASSERT_EQUAL(mismatch(&u, 1, key, kl, q, msg), 1);
            CU_ASSERT_PTR_NOT_NULL(strstr(msg, "entity 'person-1' belongs in partition"));
        }
    /* the key must name the payload's stream and entity */
    CU_ASSERT_EQUAL(mismatch(&u, 1, "other\0person-1", 14, home, msg), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "names stream 'other'"));
    CU_ASSERT_EQUAL(mismatch(&u, 1, "panel\0person-2", 14, home, msg), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "names entity 'person-2'"));
    CU_ASSERT_EQUAL(mismatch(&u, 1, "panel\0", 6, home, msg), 1);
    CU_ASSERT_EQUAL(mismatch(&u, 1, "panel", 5, home, msg), 1);   /* the unsharded form */
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "is not a sharded key"));
    CU_ASSERT_EQUAL(mismatch(&u, 1, NULL, 0, home, msg), 1);
    dp_update n = report("panel", NULL);
    CU_ASSERT_EQUAL(mismatch(&n, 1, key, kl, home, msg), 1);     /* an entity the payload lacks */
    int32_t nhome = dp_kafka_key_partition("consistent_random", "panel\0", 6, 4);
    CU_ASSERT_EQUAL(mismatch(&n, 1, "panel\0", 6, nhome, msg), 0);
    CU_ASSERT_EQUAL(mismatch(&n, 1, "panel\0", 6, (nhome + 1) % 4, msg), 1);
    /* a marker: on every partition, keyed without an entity */
    dp_update m = marker("panel");
    for (int32_t q = 0; q < 4; q++)
        CU_ASSERT_EQUAL(mismatch(&m, 1, "panel\0", 6, q, msg), 0);
    CU_ASSERT_EQUAL(mismatch(&m, 1, key, kl, home, msg), 1);
    CU_ASSERT_EQUAL(mismatch(&m, 1, "other\0", 6, home, msg), 1);
}

static const dptest_case CASES[] = {
    {"keys: unsharded = stream id; sharded = stream 0x00 entity, decodes back, never an unsharded key",
     test_encode_decode},
    {"a sharded stream's entities spread over every partition (binomial, 6 sd)", test_spread},
    {"unsharded KEY_MISMATCH: key = stream id, in the partitioner's partition", test_unsharded_rule},
    {"sharded KEY_MISMATCH: key names payload stream and entity, in its partition; markers anywhere",
     test_sharded_rule},
    {NULL, NULL},
};

int main(void) { return dptest_run("shard_key", CASES); }
