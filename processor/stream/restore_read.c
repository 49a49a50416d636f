/* restore_read.c — the restore's reads of the state topic: one client
 * pair per restore, and per assigned partition one read of its own state
 * partition (state_layout.h), from its low watermark to an EOF at or past
 * the high watermark seen when it starts.  Nothing else of the topic is
 * read, so a restore costs what the restored partitions hold, not what the
 * topic holds, and an empty partition costs its share of the two
 * ListOffsets rounds that give every restored partition's watermarks.
 *
 * Owns: the reader clients of a restore, and updates_partitions (the
 * updates topic's partition count the restore checked the state against).
 * Calls: librdkafka, state_record (which partition a record belongs to),
 * state_layout, processor_state (a refusal). */
#include "stream/restore_read.h"

#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/dp_error.h"
#include "stream/kafka_util.h"
#include "stream/log.h"
#include "stream/state_layout.h"
#include "stream/state_read.h"

void restore_latest_clear(dp_bytes_map *latest) { dp_state_read_clear(latest); }

/* One retry of a transient restore error: wait a little unless the
 * deadline passed or a stop was requested. */
static int restore_wait(proc *p, int64_t deadline, const char *what, rd_kafka_resp_err_t why)
{
    if (*p->o->stop)
        return DP_ECANCELED;
    if (ps_now_ms() >= deadline) {
        dp_log(DP_LOG_ERROR, "cannot read %s state topic %s: %s", what, p->cfg->topic_state, rd_kafka_err2str(why));
        return DP_EIO;
    }
    dp_log(DP_LOG_DEBUG, "restore: %s %s: %s; retrying", what, p->cfg->topic_state, rd_kafka_err2str(why));
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 100 * 1000000L};
    nanosleep(&ts, NULL);
    return DP_OK;
}

/* A topic's partition count, retrying while its metadata is missing
 * (right after its creation, or while a broker fails over). */
static int topic_count(proc *p, restore_reader *r, const char *topic, int32_t *n)
{
    for (;;) {
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *t = rd_kafka_topic_new(r->rk, topic, NULL);
        rd_kafka_resp_err_t e = rd_kafka_metadata(r->rk, 0, t, &md, KAFKA_TIMEOUT_MS);
        rd_kafka_topic_destroy(t);
        rd_kafka_resp_err_t why = e ? e : md->topic_cnt != 1 ? RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC : md->topics[0].err;
        *n = why ? 0 : md->topics[0].partition_cnt;
        if (md)
            rd_kafka_metadata_destroy(md);
        if (!why && *n > 0)
            return DP_OK;
        int rc = restore_wait(p, r->deadline, topic == p->cfg->topic_state ? "metadata of" : "metadata of the "
                              "updates topic for", why ? why : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC);
        if (rc != DP_OK)
            return rc;
    }
}

void restore_reader_close(restore_reader *r)
{
    if (r->rk) {
        rd_kafka_consumer_close(r->rk);
        rd_kafka_destroy(r->rk);
    }
    if (r->hw_rk)
        rd_kafka_destroy(r->hw_rk);
    r->rk = r->hw_rk = NULL;
}

/* The high watermark must come from a read_uncommitted client: for a
 * read_committed one, ListOffsets answers the last stable offset. */
static int open_hw(proc *p, restore_reader *r)
{
    char err[512];
    const char *const hw_kv[][2] = {{"group.id", "dpstream-state-watermarks"},
                                    {"isolation.level", "read_uncommitted"},
                                    {"enable.auto.commit", "false"}};
    rd_kafka_conf_t *hw_conf = dp_kafka_conf(p->cfg, p->o->bootstrap_override, hw_kv, 3, err, sizeof err);
    if (!hw_conf || !(r->hw_rk = rd_kafka_new(RD_KAFKA_CONSUMER, hw_conf, err, sizeof err))) {
        dp_log(DP_LOG_ERROR, "state topic watermarks: %s", err);
        return DP_EIO;
    }
    return DP_OK;
}

int restore_reader_open(proc *p, restore_reader *r)
{
    char err[512];
    *r = (restore_reader){.deadline = ps_now_ms() + KAFKA_TIMEOUT_MS};
    /* fetch.wait.max.ms: the reader reads what is there; a long poll at
     * the end of each partition (the default 500 ms) would be waited out
     * once per restored partition before its EOF. */
    const char *const fixed[][2] = {{"group.id", "dpstream-state-reader"},
                                    {"isolation.level", "read_committed"},
                                    {"enable.auto.commit", "false"},
                                    {"enable.partition.eof", "true"},
                                    {"auto.offset.reset", "earliest"},
                                    {"fetch.wait.max.ms", "10"}};
    rd_kafka_conf_t *conf = dp_kafka_conf(p->cfg, p->o->bootstrap_override, fixed, 6, err, sizeof err);
    if (!conf || !(r->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err))) {
        ps_set_fatal(p, "state reader: %s", err);
        return conf ? DP_EIO : DP_EINVAL;
    }
    if (open_hw(p, r) != DP_OK)
        return DP_EIO;
    /* The counts now (the updates topic may have grown since the start):
     * this reader, not the group's consumer, asks — we are inside its
     * rebalance callback. */
    int32_t ns = 0;
    p->updates_partitions = 0;
    int rc = topic_count(p, r, p->cfg->topic_state, &ns);
    if (rc == DP_OK)
        rc = topic_count(p, r, p->cfg->topic_updates, &p->updates_partitions);
    if (rc == DP_OK && ns != p->updates_partitions) {
        char msg[1200];
        dp_state_layout_count_message(p->cfg, p->updates_partitions, ns, msg, sizeof msg);
        ps_set_refused(p, "%s", msg);
        rc = DP_EINVAL;
    }
    return rc;
}

/* Refuse a record of another updates topic under a key this configuration
 * routes (topics.updates or the prefix changed): starting that stream
 * afresh would release its steps again with the same noise over whatever
 * the new topic holds.  Records of other topics under other keys are
 * skipped (a state topic shared between deployments). */
static void check_foreign(proc *p, const rd_kafka_message_t *m, const char *topic, size_t topic_len)
{
    size_t reserved = sizeof DP_STATE_RESERVED_KEY_PREFIX - 1;
    const char *key = m->key;
    if (dp_state_key_is_chunk(key, m->key_len) ||
        (m->key_len >= reserved && memcmp(key, DP_STATE_RESERVED_KEY_PREFIX, reserved) == 0) ||
        !dp_stream_config_route(p->cfg, key, m->key_len))
        return;
    char msg[768];
    snprintf(msg, sizeof msg, "stream '%.*s' has state in %s built from updates topic '%.*s', but this "
             "configuration reads '%s'; refusing to start it afresh (its steps would be released again with "
             "the same noise): restore the topic name, or give the new input new stream ids or a new key",
             (int)(m->key_len < 200 ? m->key_len : 200), key, p->cfg->topic_state,
             (int)(topic_len < 200 ? topic_len : 200), topic, p->cfg->topic_updates);
    ps_set_refused(p, "%s", msg);
}

/* 1 if the record is to be kept; 0 to skip it (another updates topic's, a
 * layout marker) — or, with p->fatal set, to refuse it.  Records that
 * cannot be read are kept, so that the decode refuses them. */
static int record_wanted(proc *p, const rd_kafka_message_t *m, int32_t part)
{
    if (dp_state_key_is_layout(m->key, m->key_len))
        return 0;
    const char *topic;
    size_t topic_len;
    int32_t owner;
    if (dp_state_owner(p->codec, m->payload, m->len, &topic, &topic_len, &owner) != DP_OK)
        return 1;
    if (topic_len != strlen(p->cfg->topic_updates) || memcmp(topic, p->cfg->topic_updates, topic_len) != 0) {
        check_foreign(p, m, topic, topic_len);
        return 0;
    }
    if (owner == part)
        return 1;
    /* This layout never writes one; a restore would miss the state of
     * `owner` wherever else it sits: fail closed. */
    char msg[600];
    snprintf(msg, sizeof msg, "state partition %s[%" PRId32 "] holds a record of updates partition %" PRId32
             " (key '%.*s', offset %" PRId64 "): state written by another layout or by hand; refusing to restore "
             "from it (README \"Operations\": dpstream migrate-state)", p->cfg->topic_state, part, owner,
             (int)(m->key_len < 100 ? m->key_len : 100), (const char *)m->key, m->offset);
    ps_set_refused(p, "%s", msg);
    return 0;
}

/* One message of the partition being read; *done once its end is seen. */
static int take(proc *p, const rd_kafka_message_t *m, int32_t part, int64_t hi, dp_bytes_map *latest,
                uint64_t *n_read, int *done)
{
    if (m->partition != part)
        return DP_OK;   /* a late event of a partition read before */
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        /* under read_committed an EOF comes at the last stable offset,
         * which a predecessor's open transaction holds back: done only at
         * or past the high watermark */
        *done = m->offset >= hi;
        return DP_OK;
    }
    if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
        dp_log(DP_LOG_ERROR, "reading state topic: %s", rd_kafka_message_errstr(m));
        return DP_EIO;
    }
    if (m->err) {
        /* librdkafka reports and recovers from transient fetch errors
         * itself; the overall timeout bounds a persistent one */
        dp_log(DP_LOG_WARN, "reading state topic: %s", rd_kafka_message_errstr(m));
        return DP_OK;
    }
    if (!m->key)
        return DP_OK;
    (*n_read)++;
    if (m->payload && !record_wanted(p, m, part)) {
        if (p->fatal)
            return DP_EINVAL;
        dp_state_read_forget(latest, m->key, m->key_len);   /* superseded by a record we do not restore */
        return DP_OK;
    }
    return dp_state_read_keep_newest(latest, m);
}

/* One ListOffsets round for every partition of `l` (librdkafka asks each
 * leader once): the offsets at `when` (RD_KAFKA_OFFSET_BEGINNING: low
 * watermarks; RD_KAFKA_OFFSET_END: high ones, the client being
 * read_uncommitted) into out[i]. */
static int offsets_at(proc *p, restore_reader *r, const rd_kafka_topic_partition_list_t *l, int64_t when,
                      int64_t *out)
{
    if (l->cnt == 0)
        return DP_OK;   /* an assignment of nothing (a standby instance, a cooperative round); librdkafka
                           refuses an empty list */
    for (;;) {
        rd_kafka_topic_partition_list_t *q = rd_kafka_topic_partition_list_new(l->cnt > 0 ? l->cnt : 1);
        for (int i = 0; i < l->cnt; i++)
            rd_kafka_topic_partition_list_add(q, p->cfg->topic_state, l->elems[i].partition)->offset = when;
        rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(r->hw_rk, q, KAFKA_TIMEOUT_MS);
        for (int i = 0; !e && i < q->cnt; i++) {
            e = q->elems[i].err;
            out[i] = q->elems[i].offset;
        }
        rd_kafka_topic_partition_list_destroy(q);
        if (!e)
            return DP_OK;
        int rc = restore_wait(p, r->deadline, "watermarks of", e);
        if (rc != DP_OK)
            return rc;
    }
}

int restore_read_watermarks(proc *p, restore_reader *r, const rd_kafka_topic_partition_list_t *l, int64_t *lo,
                            int64_t *hi)
{
    int rc = offsets_at(p, r, l, RD_KAFKA_OFFSET_BEGINNING, lo);
    return rc == DP_OK ? offsets_at(p, r, l, RD_KAFKA_OFFSET_END, hi) : rc;
}

int restore_read_ends(proc *p, const rd_kafka_topic_partition_list_t *l, int64_t *hi)
{
    restore_reader r = {.deadline = ps_now_ms() + KAFKA_TIMEOUT_MS};
    int rc = open_hw(p, &r);
    if (rc == DP_OK)
        rc = offsets_at(p, &r, l, RD_KAFKA_OFFSET_END, hi);
    restore_reader_close(&r);
    return rc;
}

int restore_read_partition(proc *p, restore_reader *r, int32_t part, int64_t lo, int64_t hi, dp_bytes_map *latest,
                           uint64_t *n_read)
{
    int rc = DP_OK;
    if (hi <= lo)
        return DP_OK;   /* empty: nothing to wait for, nothing to read */
    dp_log(DP_LOG_DEBUG, "restore: reading %s[%" PRId32 "] from offset %" PRId64 " up to %" PRId64,
           p->cfg->topic_state, part, lo, hi);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, p->cfg->topic_state, part)->offset = lo;
    rd_kafka_resp_err_t ae = rd_kafka_assign(r->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (ae) {
        dp_log(DP_LOG_ERROR, "state topic %s[%" PRId32 "]: assign: %s", p->cfg->topic_state, part,
               rd_kafka_err2str(ae));
        return DP_EIO;
    }
    int done = 0;
    int64_t started = ps_now_ms(), last_note = started;
    while (rc == DP_OK && !done) {
        if (*p->o->stop) {
            rc = DP_ECANCELED;
            break;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(r->rk, 200);
        int64_t now = ps_now_ms();
        if (now - last_note >= 10000) {
            dp_log(DP_LOG_INFO, "restore: waiting for a transaction still open on %s[%" PRId32 "] (a failed "
                   "instance's; it ends at the broker's transaction timeout)", p->cfg->topic_state, part);
            last_note = now;
        }
        if (!m) {
            if (now - started > 20 * KAFKA_TIMEOUT_MS) {
                dp_log(DP_LOG_ERROR, "timed out reading the state topic %s[%" PRId32 "]", p->cfg->topic_state, part);
                rc = DP_EIO;
            }
            continue;
        }
        rc = take(p, m, part, hi, latest, n_read, &done);
        rd_kafka_message_destroy(m);
    }
    rd_kafka_assign(r->rk, NULL);
    return rc;
}
