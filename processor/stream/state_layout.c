/* state_layout.c — see state_layout.h.
 *
 * Owns: nothing (the check creates and destroys its one reader).  Calls:
 * librdkafka (metadata, watermarks, a plain produce of the marker). */
#include "stream/state_layout.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/dp_error.h"
#include "stream/kafka_util.h"

#define LAYOUT_TIMEOUT_MS 30000

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int dp_state_key_is_layout(const void *key, size_t key_len)
{
    size_t n = sizeof DP_STATE_LAYOUT_KEY_PREFIX - 1;
    return key && key_len >= n && memcmp(key, DP_STATE_LAYOUT_KEY_PREFIX, n) == 0;
}

int dp_kafka_topic_partitions(rd_kafka_t *rk, const char *topic, int timeout_ms, int32_t *out, char *errstr,
                              size_t errstr_size)
{
    int64_t deadline = mono_ms() + timeout_ms;
    for (;;) {
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
        int left = (int)(deadline - mono_ms());
        rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, left > 100 ? left : 100);
        rd_kafka_topic_destroy(t);
        rd_kafka_resp_err_t why = e ? e : md->topic_cnt != 1 ? RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC : md->topics[0].err;
        int32_t n = !why ? md->topics[0].partition_cnt : 0;
        if (md)
            rd_kafka_metadata_destroy(md);
        if (!why && n > 0) {
            *out = n;
            return DP_OK;
        }
        /* right after a creation (or while a leader moves) the topic is
         * briefly unknown or without partitions: ask again */
        if (mono_ms() >= deadline) {
            if (why == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || why == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC)
                return dp_err(errstr, errstr_size, DP_ENOTFOUND, "topic %s does not exist", topic);
            return dp_err(errstr, errstr_size, DP_EIO, "metadata of topic %s: %s", topic,
                          why ? rd_kafka_err2str(why) : "no partitions");
        }
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 100 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

void dp_state_layout_count_message(const dp_stream_config *cfg, int32_t updates, int32_t state, char *out, size_t n)
{
    snprintf(out, n,
             "the updates topic %s has %" PRId32 " partitions, but the state topic %s has %" PRId32 ": the state of "
             "updates partition i lives in state partition i, so both need the same count; stopping before consuming "
             "anything.  If the updates topic grew: Kafka cannot take partitions away and every stream is pinned to "
             "the partition its id hashes to among the old count — run the new partitioning as a new deployment "
             "(another topics.prefix, with new stream ids or a new noise key).  If the state topic was made by "
             "hand or by an older dpstream: `dpstream migrate-state` copies it into a new topic with %" PRId32
             " partitions (README \"Operations\")",
             cfg->topic_updates, updates, cfg->topic_state, state, updates);
}

int dp_state_layout_mark(rd_kafka_t *producer, const char *state_topic, const char *writer, char *errstr,
                         size_t errstr_size)
{
    char key[300];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int kl = snprintf(key, sizeof key, "%s%.200s/%lld.%09ld", DP_STATE_LAYOUT_KEY_PREFIX, writer,
                      (long long)now.tv_sec, (long)now.tv_nsec);
    rd_kafka_resp_err_t e = rd_kafka_producev(
        producer, RD_KAFKA_V_TOPIC(state_topic), RD_KAFKA_V_PARTITION(0),
        RD_KAFKA_V_HEADER("dpstream.type", DP_STATE_LAYOUT_TYPE, -1), RD_KAFKA_V_KEY(key, (size_t)kl),
        RD_KAFKA_V_VALUE((void *)DP_STATE_LAYOUT_VALUE, sizeof DP_STATE_LAYOUT_VALUE - 1),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    if (!e)
        e = rd_kafka_flush(producer, LAYOUT_TIMEOUT_MS);
    if (e)
        return dp_err(errstr, errstr_size, DP_EIO, "cannot write the layout marker into %s: %s", state_topic,
                      rd_kafka_err2str(e));
    return DP_OK;
}

/* The key of the record at `offset` of partition 0 (read_uncommitted: any
 * record), into key[0..n) NUL-terminated and cut; DP_EIO if none came. */
static int first_key(const dp_stream_config *cfg, const char *bootstrap, int64_t offset, char *key, size_t n,
                     char *errstr, size_t errstr_size)
{
    char err[512];
    const char *const kv[][2] = {{"group.id", "dpstream-state-layout"},
                                 {"isolation.level", "read_uncommitted"},
                                 {"enable.auto.commit", "false"},
                                 {"fetch.wait.max.ms", "50"}};
    rd_kafka_conf_t *conf = dp_kafka_conf(cfg, bootstrap, kv, 4, errstr, errstr_size);
    if (!conf)
        return DP_EINVAL;
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk)
        return dp_err(errstr, errstr_size, DP_EIO, "layout reader: %s", err);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, cfg->topic_state, 0)->offset = offset;
    rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    int rc = dp_err(errstr, errstr_size, DP_EIO, "timed out reading the first record of %s[0]", cfg->topic_state);
    int64_t deadline = mono_ms() + LAYOUT_TIMEOUT_MS;
    while (mono_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m)
            continue;
        int got = !m->err;
        if (got) {
            size_t kl = m->key_len < n - 1 ? m->key_len : n - 1;
            if (m->key)
                memcpy(key, m->key, kl);
            key[m->key ? kl : 0] = '\0';
            rc = DP_OK;
        }
        rd_kafka_message_destroy(m);
        if (got)
            break;
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return rc;
}

/* The low and high watermarks of partitions 0..n-1 of `topic` (lo[i],
 * hi[i]), in one ListOffsets round per kind (librdkafka asks each leader
 * once) instead of one per partition — a first start used to spend ~20 ms
 * per partition here; retried while a leader is not known yet (right after
 * the topic's creation) until the deadline. */
static int all_watermarks(rd_kafka_t *rk, const char *topic, int32_t n, int64_t *lo, int64_t *hi, char *errstr,
                          size_t errstr_size)
{
    int64_t deadline = mono_ms() + LAYOUT_TIMEOUT_MS;
    int64_t *out[2] = {lo, hi};
    const int64_t when[2] = {RD_KAFKA_OFFSET_BEGINNING, RD_KAFKA_OFFSET_END};
    for (int w = 0; w < 2; w++) {
        for (;;) {
            rd_kafka_topic_partition_list_t *q = rd_kafka_topic_partition_list_new(n);
            for (int32_t i = 0; i < n; i++)
                rd_kafka_topic_partition_list_add(q, topic, i)->offset = when[w];
            rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(rk, q, LAYOUT_TIMEOUT_MS);
            for (int i = 0; !e && i < q->cnt; i++) {
                e = q->elems[i].err;
                out[w][q->elems[i].partition] = q->elems[i].offset;
            }
            rd_kafka_topic_partition_list_destroy(q);
            if (!e)
                break;
            if (mono_ms() >= deadline)
                return dp_err(errstr, errstr_size, DP_EIO, "watermarks of %s: %s", topic, rd_kafka_err2str(e));
            struct timespec ts = {.tv_sec = 0, .tv_nsec = 100 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    return DP_OK;
}

static int refuse_legacy(const dp_stream_config *cfg, const char *why, char *errstr, size_t errstr_size)
{
    return dp_err(errstr, errstr_size, DP_EKEY,
                  "the state topic %s %s: it was written by a dpstream that placed state records by key hash, "
                  "while this one keeps the state of updates partition i in state partition i and would not find "
                  "it (its streams would start afresh and release their steps again with the same noise); "
                  "stopping.  Stop every instance, copy the state with `dpstream migrate-state --config CONFIG "
                  "--to NEW_TOPIC` and set \"topics\": {\"state\": NEW_TOPIC} (README \"Operations\")",
                  cfg->topic_state, why);
}

int dp_state_layout_check(const dp_stream_config *cfg, const char *bootstrap, rd_kafka_t *rk, rd_kafka_t *producer,
                          const char *writer, char *errstr, size_t errstr_size)
{
    int32_t nu = 0, ns = 0;
    int rc = dp_kafka_topic_partitions(rk, cfg->topic_updates, LAYOUT_TIMEOUT_MS, &nu, errstr, errstr_size);
    if (rc == DP_OK)
        rc = dp_kafka_topic_partitions(rk, cfg->topic_state, LAYOUT_TIMEOUT_MS, &ns, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    if (nu != ns) {
        char msg[1200];
        dp_state_layout_count_message(cfg, nu, ns, msg, sizeof msg);
        return dp_err(errstr, errstr_size, DP_EKEY, "%s", msg);
    }
    int64_t *lo = calloc((size_t)ns, sizeof *lo), *hi = calloc((size_t)ns, sizeof *hi);
    if (!lo || !hi)
        rc = dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    else
        rc = all_watermarks(rk, cfg->topic_state, ns, lo, hi, errstr, errstr_size);
    int used = 0;   /* partitions other than 0 that hold records */
    for (int32_t i = 1; rc == DP_OK && i < ns; i++)
        used += hi[i] > lo[i];
    if (rc == DP_OK && hi[0] > lo[0]) {
        char key[300];
        if ((rc = first_key(cfg, bootstrap, lo[0], key, sizeof key, errstr, errstr_size)) == DP_OK &&
            !dp_state_key_is_layout(key, strlen(key)))
            rc = refuse_legacy(cfg, "does not start with a layout marker", errstr, errstr_size);
    } else if (rc == DP_OK && used) {
        rc = refuse_legacy(cfg, "holds records but none in partition 0 (where a layout marker comes first)", errstr,
                           errstr_size);
    } else if (rc == DP_OK) {
        /* every partition empty: a new topic */
        rc = dp_state_layout_mark(producer, cfg->topic_state, writer, errstr, errstr_size);
    }
    free(lo);
    free(hi);
    return rc;
}
