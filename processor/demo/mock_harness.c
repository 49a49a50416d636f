/* mock_harness.c — the processor on librdkafka's mock cluster (see
 * mock_harness.h). */
#include "demo/mock_harness.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "core/dp_error.h"
#include "stream/kafka_util.h"
#include "stream/log.h"
#include "stream/processor.h"

struct dp_mock_harness {
    rd_kafka_t              *mock_rk;     /* owns the mock cluster */
    rd_kafka_mock_cluster_t *mcluster;
    char                    *bootstraps;
    dp_stream_config        *cfg;
    rd_kafka_t              *producer;    /* input */
    rd_kafka_t              *reader;      /* outputs */
    dp_codec                *codec;       /* this thread's: encode input, decode outputs */
    dp_buf                   enc;
    dp_export_asm           *as;
    uint64_t                 dead_letters, undecodable;
    /* the processor thread */
    pthread_t                thread;
    int                      started;
    volatile sig_atomic_t    stop;
    volatile int             finished;
    dp_key                   key;
    char                     instance[64];
    dp_processor_options     popts;
    dp_metrics              *metrics;     /* the caller's, or NULL */
    int                      prc;
    char                     perr[1400];
};

/* librdkafka's own log lines (mock broker and clients of this harness):
 * debug level, so the demo's output stays clean unless asked. */
static void quiet_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    dp_log(level <= 3 ? DP_LOG_WARN : DP_LOG_DEBUG, "librdkafka %s: %s", fac, buf);
}

static rd_kafka_conf_t *client_conf(const dp_mock_harness *h, const char *const kv[][2], size_t n, char *errstr,
                                    size_t errn)
{
    return dp_kafka_conf(h->cfg, NULL, kv, n, errstr, errn);
}

int dp_mock_start(dp_mock_harness **out, const char *topic_prefix, json_t *streams, int brokers, int partitions,
                  char *errstr, size_t errn)
{
    *out = NULL;
    if (brokers < 1 || partitions < 1 || !topic_prefix || !json_is_array(streams))
        return dp_err(errstr, errn, DP_EINVAL, "mock harness: bad arguments");
    dp_mock_harness *h = calloc(1, sizeof *h);
    if (!h)
        return DP_ENOMEM;
    dp_buf_init(&h->enc);
    char err[512];
    int rc = DP_OK;
    json_t *root = NULL;

    rd_kafka_conf_t *mc = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(mc, quiet_log_cb);
    if (!(h->mock_rk = rd_kafka_new(RD_KAFKA_PRODUCER, mc, err, sizeof err))) {
        rc = dp_err(errstr, errn, DP_EIO, "mock cluster handle: %s", err);
        goto fail;
    }
    if (!(h->mcluster = rd_kafka_mock_cluster_new(h->mock_rk, brokers))) {
        rc = dp_err(errstr, errn, DP_EIO, "cannot start librdkafka's mock cluster");
        goto fail;
    }
    if (!(h->bootstraps = strdup(rd_kafka_mock_cluster_bootstraps(h->mcluster)))) {
        rc = DP_ENOMEM;
        goto fail;
    }
    /* session.timeout.ms 6000: a consumer rejoining an emptied mock group
     * waits about this long (docs/kafka.md §6).  fetch.wait.max.ms 10: an empty
     * fetch otherwise parks the processor's consumer for the default 500 ms
     * each time it catches up, which made every demo month take ~0.6 s
     * instead of ~0.15 s.  (Producers ignore it; librdkafka's "consumer
     * property" warning is logged at debug level.) */
    root = json_pack("{s:{s:s}, s:{s:s, s:s, s:s, s:s}, s:O}", "topics", "prefix", topic_prefix, "kafka",
                     "fetch.wait.max.ms", "10", "bootstrap.servers", h->bootstraps, "session.timeout.ms", "6000",
                     "group.id", "dpstream-mock.processor", "streams", streams);
    if (!root) {
        rc = DP_ENOMEM;
        goto fail;
    }
    if ((rc = dp_stream_config_from_json(&h->cfg, root, errstr, errn)) != DP_OK)
        goto fail;
    const char *topics[] = {h->cfg->topic_updates, h->cfg->topic_synthetic, h->cfg->topic_budget,
                            h->cfg->topic_dead_letter, h->cfg->topic_state};
    for (size_t i = 0; i < 5; i++) {
        /* the state topic has the updates topic's partitions, as `run` creates it (state_layout.h) */
        rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(h->mcluster, topics[i], partitions, 1);
        if (e) {
            rc = dp_err(errstr, errn, DP_EIO, "mock topic %s: %s", topics[i], rd_kafka_err2str(e));
            goto fail;
        }
    }

    const char *const prod_kv[][2] = {{"enable.idempotence", "true"}, {"acks", "all"}, {"linger.ms", "5"}};
    rd_kafka_conf_t *conf = client_conf(h, prod_kv, 3, errstr, errn);
    if (!conf) {
        rc = DP_EINVAL;
        goto fail;
    }
    if (!(h->producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err))) {
        rc = dp_err(errstr, errn, DP_EIO, "input producer: %s", err);
        goto fail;
    }
    const char *const rd_kv[][2] = {{"group.id", "dpstream-mock.reader"},
                                    {"enable.auto.commit", "false"},
                                    {"isolation.level", "read_committed"},
                                    {"auto.offset.reset", "earliest"}};
    if (!(conf = client_conf(h, rd_kv, 4, errstr, errn))) {
        rc = DP_EINVAL;
        goto fail;
    }
    if (!(h->reader = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err))) {
        rc = dp_err(errstr, errn, DP_EIO, "output reader: %s", err);
        goto fail;
    }
    rd_kafka_poll_set_consumer(h->reader);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(3 * partitions);
    for (int i = 0; i < partitions; i++) {
        rd_kafka_topic_partition_list_add(l, h->cfg->topic_synthetic, i)->offset = RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_topic_partition_list_add(l, h->cfg->topic_budget, i)->offset = RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_topic_partition_list_add(l, h->cfg->topic_dead_letter, i)->offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_resp_err_t ae = rd_kafka_assign(h->reader, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (ae) {
        rc = dp_err(errstr, errn, DP_EIO, "output reader assign: %s", rd_kafka_err2str(ae));
        goto fail;
    }
    dp_codec_options copts;
    dp_stream_config_codec_options(h->cfg, &copts);
    if ((rc = dp_codec_create(&h->codec, &copts, errstr, errn)) != DP_OK)
        goto fail;
    if ((rc = dp_export_asm_create(&h->as)) != DP_OK)
        goto fail;
    json_decref(root);
    *out = h;
    return DP_OK;
fail:
    json_decref(root);
    dp_mock_destroy(h);
    return rc;
}

rd_kafka_mock_cluster_t *dp_mock_cluster(dp_mock_harness *h) { return h->mcluster; }
const dp_stream_config *dp_mock_config(const dp_mock_harness *h) { return h->cfg; }
uint64_t dp_mock_dead_letters(const dp_mock_harness *h) { return h->dead_letters; }
uint64_t dp_mock_undecodable(const dp_mock_harness *h) { return h->undecodable; }
const dp_export_asm *dp_mock_assembler(const dp_mock_harness *h) { return h->as; }

static void *processor_thread(void *arg)
{
    dp_mock_harness *h = arg;
    h->perr[0] = '\0';
    h->prc = dp_processor_run(&h->popts, h->perr, sizeof h->perr);
    __atomic_store_n(&h->finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

int dp_mock_processor_start(dp_mock_harness *h, const dp_key *key, const char *instance, uint32_t chunk_records,
                            char *errstr, size_t errn)
{
    if (h->started)
        return dp_err(errstr, errn, DP_ESTATE, "mock harness: processor already running");
    h->key = *key;
    snprintf(h->instance, sizeof h->instance, "%s", instance);
    h->stop = 0;
    h->finished = 0;
    h->popts = (dp_processor_options){.config = h->cfg,
                                      .noise_key = &h->key,
                                      .state_key = NULL,
                                      .instance_id = h->instance,
                                      .bootstrap_override = NULL,
                                      .chunk_records = chunk_records,
                                      .idle_timeout_ms = 0,
                                      .progress_interval_ms = 0,
                                      .dlq_commit_ms = 1000,
                                      .debug_commit_delay_ms = 0,
                                      .stop = &h->stop,
                                      .metrics = h->metrics,
                                      .skip_create_topics = 1};
    if (pthread_create(&h->thread, NULL, processor_thread, h) != 0)
        return dp_err(errstr, errn, DP_EIO, "cannot start the processor thread");
    h->started = 1;
    return DP_OK;
}

void dp_mock_set_metrics(dp_mock_harness *h, dp_metrics *m) { h->metrics = m; }

int dp_mock_processor_running(dp_mock_harness *h)
{
    return h->started && !__atomic_load_n(&h->finished, __ATOMIC_ACQUIRE);
}

int dp_mock_processor_stop(dp_mock_harness *h, char *errstr, size_t errn)
{
    if (!h->started)
        return DP_OK;
    h->stop = 1;
    pthread_join(h->thread, NULL);
    h->started = 0;
    dp_key_wipe(&h->key);
    if (h->prc != DP_OK)
        return dp_err(errstr, errn, h->prc, "processor: %s", h->perr[0] ? h->perr : dp_status_str(h->prc));
    return DP_OK;
}

int dp_mock_produce(dp_mock_harness *h, const dp_update *u, char *errstr, size_t errn)
{
    h->enc.len = 0;
    int rc = dp_codec_encode_update_buf(h->codec, u, &h->enc, errstr, errn);
    if (rc != DP_OK)
        return rc;
    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            h->producer, RD_KAFKA_V_TOPIC(h->cfg->topic_updates),
            RD_KAFKA_V_HEADER("dpstream.type", dp_codec_type_name(DP_CODEC_UPDATE), -1),
            RD_KAFKA_V_KEY((void *)u->stream_id, u->stream_id_len), RD_KAFKA_V_VALUE(h->enc.data, h->enc.len),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
            return DP_OK;
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
            return dp_err(errstr, errn, DP_EIO, "produce to %s: %s", h->cfg->topic_updates, rd_kafka_err2str(e));
        rd_kafka_poll(h->producer, 10);
    }
}

int dp_mock_flush(dp_mock_harness *h, int timeout_ms, char *errstr, size_t errn)
{
    rd_kafka_resp_err_t e = rd_kafka_flush(h->producer, timeout_ms);
    if (e)
        return dp_err(errstr, errn, DP_EIO, "flushing the updates: %s", rd_kafka_err2str(e));
    return DP_OK;
}

static int on_message(dp_mock_harness *h, const rd_kafka_message_t *m, const dp_mock_outputs *o)
{
    const char *topic = rd_kafka_topic_name(m->rkt);
    char type[64], err[256];
    if (strcmp(topic, h->cfg->topic_dead_letter) == 0) {
        h->dead_letters++;
        return DP_OK;
    }
    if (strcmp(topic, h->cfg->topic_budget) == 0) {
        dp_budget_event e;
        if (dp_codec_decode_budget(h->codec, m->payload, m->len, &e, err, sizeof err) != DP_OK) {
            h->undecodable++;
            return DP_OK;
        }
        return o->budget ? o->budget(o->ctx, &e) : DP_OK;
    }
    dp_kafka_message_type(m, type, sizeof type);
    if (strcmp(type, dp_codec_type_name(DP_CODEC_SYNTHETIC_RECORD)) == 0) {
        dp_codec_chunk c;
        if (dp_codec_decode_chunk(h->codec, m->payload, m->len, &c, err, sizeof err) != DP_OK) {
            h->undecodable++;
            return DP_OK;
        }
        return dp_export_asm_chunk(h->as, c.stream_id, c.stream_id_len, c.step, c.chunk_index, c.records,
                                   c.n_records, &o->sink);
    }
    if (strcmp(type, dp_codec_type_name(DP_CODEC_RELEASE_MANIFEST)) == 0) {
        dp_codec_manifest cm;
        if (dp_codec_decode_manifest(h->codec, m->payload, m->len, &cm, err, sizeof err) != DP_OK) {
            h->undecodable++;
            return DP_OK;
        }
        if (o->manifest_seen) {
            int rc = o->manifest_seen(o->ctx, &cm.m, cm.checksum);
            if (rc != DP_OK)
                return rc;
        }
        dp_export_manifest em;
        memset(&em, 0, sizeof em);
        em.m = cm.m;
        em.chunk_count = cm.chunk_count;
        em.has_checksum = 1;
        memcpy(em.checksum, cm.checksum, sizeof em.checksum);
        return dp_export_asm_manifest(h->as, &em, &o->sink);
    }
    h->undecodable++;
    return DP_OK;
}

int dp_mock_poll_outputs(dp_mock_harness *h, int timeout_ms, const dp_mock_outputs *o, char *errstr, size_t errn)
{
    int wait = timeout_ms;
    for (;;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(h->reader, wait);
        if (!m)
            return DP_OK;
        wait = 0;   /* drain what is there, then return */
        int rc = DP_OK;
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR)
            rc = on_message(h, m, o);
        else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            dp_log(DP_LOG_DEBUG, "output reader: %s", rd_kafka_message_errstr(m));
        rd_kafka_message_destroy(m);
        if (rc != DP_OK)
            return dp_err(errstr, errn, rc, "handling an output message: %s", dp_status_str(rc));
    }
}

void dp_mock_destroy(dp_mock_harness *h)
{
    if (!h)
        return;
    char err[64];
    dp_mock_processor_stop(h, err, sizeof err);
    if (h->reader) {
        rd_kafka_consumer_close(h->reader);
        rd_kafka_destroy(h->reader);
    }
    if (h->producer) {
        rd_kafka_flush(h->producer, 5000);
        rd_kafka_destroy(h->producer);
    }
    dp_export_asm_destroy(h->as);
    dp_codec_destroy(h->codec);
    dp_buf_free(&h->enc);
    dp_stream_config_free(h->cfg);
    free(h->bootstraps);
    if (h->mcluster)
        rd_kafka_mock_cluster_destroy(h->mcluster);
    if (h->mock_rk)
        rd_kafka_destroy(h->mock_rk);
    dp_key_wipe(&h->key);
    free(h);
}
