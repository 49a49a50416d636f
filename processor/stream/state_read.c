/* state_read.c — see state_read.h. */
#include "stream/state_read.h"

#include <sodium.h>

#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/dp_error.h"
#include "stream/kafka_util.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void free_value(dp_state_piece *v)
{
    if (!v)
        return;
    if (v->data) {
        sodium_memzero((void *)v->data, v->len);
        free((void *)v->data);
    }
    free(v);
}

static int drop_all(void *v, void *ctx) { (void)v; (void)ctx; return 0; }
static void drop_value(void *v, void *ctx) { (void)ctx; free_value(v); }

void dp_state_read_clear(dp_bytes_map *m) { dp_bytes_map_filter(m, drop_all, drop_value, NULL); }

void dp_state_read_free(dp_bytes_map *m)
{
    dp_state_read_clear(m);
    dp_bytes_map_free(m);
}

void dp_state_read_forget(dp_bytes_map *m, const void *key, size_t key_len)
{
    dp_bytes_map_slot *s = dp_bytes_map_find(m, key, key_len);
    if (s) {
        free_value(s->value);
        s->value = NULL;
    }
}

const dp_state_piece *dp_state_read_lookup(void *map, const void *key, size_t key_len)
{
    dp_bytes_map_slot *s = dp_bytes_map_find(map, key, key_len);
    return s ? s->value : NULL;
}

int dp_state_read_keep_newest(dp_bytes_map *out, const rd_kafka_message_t *m)
{
    dp_bytes_map_slot *s = dp_bytes_map_upsert(out, m->key, m->key_len);
    if (!s)
        return DP_ENOMEM;
    free_value(s->value);
    s->value = NULL;
    if (!m->payload)
        return DP_OK;
    dp_state_piece *v = malloc(sizeof *v);
    uint8_t *bytes = v ? malloc(m->len ? m->len : 1) : NULL;
    if (!bytes) {
        free(v);
        return DP_ENOMEM;
    }
    memcpy(bytes, m->payload, m->len);
    *v = (dp_state_piece){.data = bytes, .len = m->len};
    s->value = v;
    return DP_OK;
}

/* dp_state_read_topic into `out`, or (split) dp_state_read_topic_split. */
static int read_topic(const dp_stream_config *cfg, const char *bootstrap, dp_state_read_keep_fn keep, void *ctx,
                      int timeout_ms, dp_bytes_map *out, dp_bytes_map **split, int32_t *n_split, char *errstr,
                      size_t errstr_size)
{
    char err[512];
    const char *const kv[][2] = {{"group.id", "dpstream-state-inspector"},
                                 {"isolation.level", "read_committed"},
                                 {"enable.auto.commit", "false"},
                                 {"enable.partition.eof", "true"},
                                 {"auto.offset.reset", "earliest"},
                                 {"allow.auto.create.topics", "false"}};
    rd_kafka_conf_t *conf = dp_kafka_conf(cfg, bootstrap, kv, sizeof kv / sizeof kv[0], errstr, errstr_size);
    if (!conf)
        return DP_EINVAL;
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk)
        return dp_err(errstr, errstr_size, DP_EINVAL, "state reader: %s", err);
    int64_t deadline = now_ms() + timeout_ms;
    int rc = DP_OK;
    const struct rd_kafka_metadata *md = NULL;
    /* A topic being created (or a broker failing over) briefly has no
     * leaders: retry until the deadline, then say what was missing. */
    for (;;) {
        rd_kafka_topic_t *t = rd_kafka_topic_new(rk, cfg->topic_state, NULL);
        int left = (int)(deadline - now_ms());
        rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, left > 0 ? left : 1);
        rd_kafka_topic_destroy(t);
        if (!e && md->topic_cnt == 1 && !md->topics[0].err && md->topics[0].partition_cnt > 0)
            break;
        rd_kafka_resp_err_t why = e ? e : md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
        if (md)
            rd_kafka_metadata_destroy(md);
        md = NULL;
        if (now_ms() >= deadline) {
            rc = dp_err(errstr, errstr_size, DP_EIO, "state topic %s: %s", cfg->topic_state,
                        why == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART
                            ? "no such topic (has a processor with this configuration committed anything?)"
                            : rd_kafka_err2str(why));
            goto out;
        }
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 200 * 1000000L};
        nanosleep(&ts, NULL);
    }
    int np = md->topics[0].partition_cnt;
    int *done = calloc((size_t)np, sizeof *done);
    if (split && done) {
        if (!(*split = calloc((size_t)np, sizeof **split)))
            rc = DP_ENOMEM;
        for (int i = 0; rc == DP_OK && i < np; i++)
            dp_bytes_map_init(&(*split)[i]);
        *n_split = rc == DP_OK ? np : 0;
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(np);
    if (!done || rc != DP_OK) {
        rc = DP_ENOMEM;
    } else {
        for (int i = 0; i < np; i++)
            rd_kafka_topic_partition_list_add(l, cfg->topic_state, md->topics[0].partitions[i].id)->offset =
                RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_resp_err_t ae = rd_kafka_assign(rk, l);
        if (ae)
            rc = dp_err(errstr, errstr_size, DP_EIO, "state topic %s: assign: %s", cfg->topic_state,
                        rd_kafka_err2str(ae));
    }
    rd_kafka_topic_partition_list_destroy(l);
    int n_done = 0;
    while (rc == DP_OK && n_done < np) {
        if (now_ms() >= deadline) {
            rc = dp_err(errstr, errstr_size, DP_EIO, "timed out reading state topic %s (%d of %d partitions read)",
                        cfg->topic_state, n_done, np);
            break;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            for (int i = 0; i < np; i++)
                if (md->topics[0].partitions[i].id == m->partition && !done[i]) {
                    done[i] = 1;
                    n_done++;
                }
        } else if (m->err) {
            /* librdkafka retries transient fetch errors itself; the deadline bounds them */
            if (m->err == RD_KAFKA_RESP_ERR__FATAL || m->err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
                rc = dp_err(errstr, errstr_size, DP_EIO, "reading state topic %s: %s", cfg->topic_state,
                            rd_kafka_message_errstr(m));
        } else if (m->key && (!keep || keep(ctx, m->key, m->key_len))) {
            /* split: partition i's records in map i (the partition ids of a topic are 0..np-1) */
            rc = !split ? dp_state_read_keep_newest(out, m)
                 : m->partition >= 0 && m->partition < np ? dp_state_read_keep_newest(&(*split)[m->partition], m)
                                                          : DP_OK;
        }
        rd_kafka_message_destroy(m);
    }
    free(done);
out:
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return rc;
}

int dp_state_read_topic(const dp_stream_config *cfg, const char *bootstrap, dp_state_read_keep_fn keep, void *ctx,
                        int timeout_ms, dp_bytes_map *out, char *errstr, size_t errstr_size)
{
    return read_topic(cfg, bootstrap, keep, ctx, timeout_ms, out, NULL, NULL, errstr, errstr_size);
}

int dp_state_read_topic_split(const dp_stream_config *cfg, const char *bootstrap, dp_state_read_keep_fn keep,
                              void *ctx, int timeout_ms, dp_bytes_map **out, int32_t *n, char *errstr,
                              size_t errstr_size)
{
    *out = NULL;
    *n = 0;
    return read_topic(cfg, bootstrap, keep, ctx, timeout_ms, NULL, out, n, errstr, errstr_size);
}
