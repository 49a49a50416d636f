/* test_load_sharded.c — `dpstream produce` (the binary, $DPSTREAM_BIN) into
 * librdkafka's in-process mock cluster (no broker), its 4-partition
 * updates topic then read back partition by partition (docs/kafka.md §10):
 *   * a sharded route's updates are keyed stream id ‖ 0x00 ‖ entity id and
 *     sit in their key's partition (no KEY_MISMATCH), spread over all 4
 *     partitions, every entity in one;
 *   * each of its CLOSE_STEP markers is on every partition, after that
 *     partition's updates of the step;
 *   * an unsharded route is written as before: keyed by the stream id, all
 *     in one partition, one marker per step. */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/codec.h"
#include "core/dp_error.h"
#include "dptest.h"
#include "stream/kafka_util.h"
#include "stream/shard_key.h"

enum { PARTS = 4, ENTITIES = 40, STEPS = 3, PLAIN_ENTITIES = 5 };

#define WINDOW_CFG "{\"horizon\":12,\"k\":2,\"rho\":1}"

/* What was read back of one stream. */
typedef struct seen {
    int updates[PARTS];
    int markers[PARTS][STEPS + 1];
    int entity_part[ENTITIES + 1];   /* 1 + the partition entity i was in, 0 = not seen */
    int late[PARTS];                 /* updates of a step after that partition's marker of it */
    int bad_key, misplaced;
} seen;

static void write_input(const char *path)
{
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    for (int t = 1; t <= STEPS; t++) {
        for (int i = 1; i <= ENTITIES; i++) {
            fprintf(f, "{\"stream\":\"sh/panel\",\"step\":%d,\"kind\":\"REPORT\",\"entity\":\"u%d\",\"value\":%d}\n",
                    t, i, (i + t) % 2);
            if (i <= PLAIN_ENTITIES)
                fprintf(f, "{\"stream\":\"plain\",\"step\":%d,\"kind\":\"REPORT\",\"entity\":\"u%d\",\"value\":1}\n",
                        t, i);
        }
        fprintf(f, "{\"stream\":\"sh/panel\",\"step\":%d,\"kind\":\"CLOSE_STEP\"}\n", t);
        fprintf(f, "{\"stream\":\"plain\",\"step\":%d,\"kind\":\"CLOSE_STEP\"}\n", t);
    }
    fclose(f);
}

static void note(seen *s, const rd_kafka_message_t *m, const dp_update *u, int sharded)
{
    char msg[384];
    dp_buf want;
    dp_buf_init(&want);
    CU_ASSERT_EQUAL_FATAL(dp_update_key(u, sharded, &want), DP_OK);
    s->bad_key += m->key_len != want.len || memcmp(m->key, want.data, want.len) != 0;
    s->misplaced += dp_update_key_mismatch("consistent_random", u, sharded, m->key, m->key_len, m->partition, PARTS,
                                           msg, sizeof msg);
    dp_buf_free(&want);
    int p = m->partition;
    if (u->kind == DP_UPDATE_CLOSE_STEP) {
        s->markers[p][u->step]++;
        return;
    }
    s->updates[p]++;
    s->late[p] += s->markers[p][u->step] > 0;
    int i = atoi(u->entity_id + 1);
    CU_ASSERT_FATAL(i >= 1 && i <= ENTITIES);
    if (s->entity_part[i] && s->entity_part[i] != p + 1)
        s->misplaced++;
    s->entity_part[i] = p + 1;
}

/* Every message of the topic, partition by partition. */
static void read_back(const char *bootstrap, seen *sh, seen *plain)
{
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    CU_ASSERT_EQUAL(rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, err, sizeof err), RD_KAFKA_CONF_OK);
    rd_kafka_conf_set(conf, "group.id", "test-load-sharded", NULL, 0);
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", NULL, 0);
    rd_kafka_conf_set(conf, "log_level", "0", NULL, 0);
    rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(PARTS);
    for (int p = 0; p < PARTS; p++)
        rd_kafka_topic_partition_list_add(l, "sh.updates", p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    CU_ASSERT_EQUAL_FATAL(rd_kafka_assign(c, l), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(l);
    dp_codec_options o = {.framing = DP_CODEC_FRAMING_PLAIN};
    dp_codec *codec = NULL;
    CU_ASSERT_EQUAL_FATAL(dp_codec_create(&codec, &o, err, sizeof err), DP_OK);
    /* done when every partition has reported its end once (counted per
     * partition: an end reported twice for one must not stand in for
     * another's) */
    int eof = 0, at_end[PARTS] = {0};
    for (int polls = 0; eof < PARTS && polls < 600; polls++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            if (m->partition >= 0 && m->partition < PARTS && !at_end[m->partition]++)
                eof++;
        } else if (!m->err) {
            dp_update u;
            CU_ASSERT_EQUAL_FATAL(dp_codec_decode_update(codec, m->payload, m->len, &u, err, sizeof err), DP_OK);
            int is_sh = u.stream_id_len == 8 && memcmp(u.stream_id, "sh/panel", 8) == 0;
            note(is_sh ? sh : plain, m, &u, is_sh);
        }
        rd_kafka_message_destroy(m);
    }
    CU_ASSERT_EQUAL(eof, PARTS);
    dp_codec_destroy(codec);
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
}

static void test_produce_sharded(void)
{
    const char *bin = getenv("DPSTREAM_BIN");
    CU_ASSERT_PTR_NOT_NULL_FATAL(bin);
    char err[256], dir[] = "/tmp/dptest-load-sharded-XXXXXX", path[512], cmd[2048];
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "0", NULL, 0);
    rd_kafka_t *owner = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(owner);
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(owner, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mc);
    const char *bootstrap = rd_kafka_mock_cluster_bootstraps(mc);
    CU_ASSERT_EQUAL_FATAL(rd_kafka_mock_topic_create(mc, "sh.updates", PARTS, 1), RD_KAFKA_RESP_ERR_NO_ERROR);

    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fprintf(f, "{\"topics\":{\"prefix\":\"sh\"},\"kafka\":{\"bootstrap.servers\":\"%s\"},\"streams\":["
               "{\"prefix\":\"sh/\",\"synthesizer\":\"window\",\"sharded\":true,\"config\":" WINDOW_CFG "},"
               "{\"match\":\"plain\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "}]}\n", bootstrap);
    fclose(f);
    snprintf(path, sizeof path, "%s/in.jsonl", dir);
    write_input(path);
    snprintf(cmd, sizeof cmd, "'%s' produce --config '%s/config.json' --input '%s' > '%s/out' 2>&1", bin, dir, path,
             dir);
    int rc = system(cmd);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc != 0) {
        snprintf(cmd, sizeof cmd, "cat '%s/out' >&2", dir);
        (void)system(cmd);
    }
    seen sh, plain;
    memset(&sh, 0, sizeof sh);
    memset(&plain, 0, sizeof plain);
    read_back(bootstrap, &sh, &plain);

    CU_ASSERT_EQUAL(sh.bad_key, 0);
    CU_ASSERT_EQUAL(sh.misplaced, 0);
    CU_ASSERT_EQUAL(plain.bad_key, 0);
    CU_ASSERT_EQUAL(plain.misplaced, 0);
    int total = 0, home = dp_kafka_key_partition("consistent_random", "plain", 5, PARTS), plain_total = 0;
    for (int p = 0; p < PARTS; p++) {
        /* 40 entities over 4 partitions: these ids put 8..13 in each (a
         * partition left empty would have probability 4 (3/4)^40 = 4e-5) */
        CU_ASSERT(sh.updates[p] > 0);
        CU_ASSERT_EQUAL(sh.late[p], 0);
        total += sh.updates[p];
        plain_total += plain.updates[p];
        CU_ASSERT_EQUAL(plain.updates[p], p == home ? PLAIN_ENTITIES * STEPS : 0);
        for (int t = 1; t <= STEPS; t++) {
            CU_ASSERT_EQUAL(sh.markers[p][t], 1);
            CU_ASSERT_EQUAL(plain.markers[p][t], p == home ? 1 : 0);
        }
    }
    CU_ASSERT_EQUAL(total, ENTITIES * STEPS);
    CU_ASSERT_EQUAL(plain_total, PLAIN_ENTITIES * STEPS);
    for (int i = 1; i <= ENTITIES; i++)
        CU_ASSERT(sh.entity_part[i] > 0);

    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(owner);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CU_ASSERT_EQUAL(system(cmd), 0);
}

static const dptest_case CASES[] = {
    {"produce: a sharded stream on every partition by key, each marker on every partition; unsharded as before",
     test_produce_sharded},
    {NULL, NULL},
};

int main(void) { return dptest_run("load sharded", CASES); }
