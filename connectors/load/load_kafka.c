/* load_kafka.c — idempotent producer of Avro Updates (see load_kafka.h).
 *
 * Owns: the producer, the codec, the config it was opened with, the key
 * and encoding buffers.  Calls: codec (encode), shard_key (the key of an
 * update of a sharded route), kafka_util (client, topic, partitions),
 * stream_config (routes), registry (the Update id). */
#include "connectors/load/load_kafka.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/dp_error.h"
#include "stream/registry_subjects.h"
#include "stream/kafka_util.h"
#include "stream/shard_key.h"
#include "stream/stream_config.h"
#include "codec/codec.h"

struct dp_load_kafka {
    rd_kafka_t       *rk;
    int               quiet;
    const char       *label;
    dp_stream_config *cfg;
    dp_codec         *codec;
    char             *topic;
    dp_buf            enc;
    dp_buf            key;
    int32_t           partitions;        /* the topic's, for a sharded route's markers */
    int               failed;            /* set by the delivery callback */
    char              failure[256];
};

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    dp_load_kafka *k = opaque;
    if (m->err && !k->failed) {
        k->failed = 1;
        snprintf(k->failure, sizeof k->failure, "delivery to %s failed: %s", rd_kafka_topic_name(m->rkt),
                 rd_kafka_err2str(m->err));
    }
}


void dp_load_kafka_close(dp_load_kafka *k)
{
    if (!k)
        return;
    if (k->rk)
        rd_kafka_destroy(k->rk);
    dp_stream_config_free(k->cfg);
    dp_codec_destroy(k->codec);
    free(k->topic);
    dp_buf_free(&k->enc);
    dp_buf_free(&k->key);
    free(k);
}

const char *dp_load_kafka_topic(const dp_load_kafka *k) { return k->topic; }

int dp_load_kafka_open(dp_load_kafka **out, const dp_load_kafka_options *o, char *errstr, size_t errstr_size)
{
    *out = NULL;
    dp_load_kafka *k = calloc(1, sizeof *k);
    if (!k)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    dp_buf_init(&k->enc);
    dp_buf_init(&k->key);
    char err[512];
    int rc;
    if (o->config_path && ((rc = dp_stream_config_load_file(&k->cfg, o->config_path, err, sizeof err)) != DP_OK ||
                           (rc = dp_stream_config_require_ids(k->cfg, DP_STREAM_IDS_OF(DP_CODEC_UPDATE), "load", err,
                                                              sizeof err)) != DP_OK)) {
        dp_load_kafka_close(k);
        return dp_err(errstr, errstr_size, rc, "%s", err);
    }
    /* the Update id from the config's schema registry, if it has one */
    dp_registry *reg = NULL;
    if (k->cfg && (rc = dp_registry_setup(k->cfg, DP_REGISTRY_REGISTER, &reg, err, sizeof err)) != DP_OK) {
        dp_load_kafka_close(k);
        return dp_err(errstr, errstr_size, rc, "%s", err);
    }
    dp_registry_free(reg);
    const char *topic = o->topic ? o->topic : k->cfg ? k->cfg->topic_updates : NULL;
    if (!topic) {
        dp_load_kafka_close(k);
        return dp_err(errstr, errstr_size, DP_EINVAL, "no topic: give --topic or --config");
    }
    const char *bootstrap = o->bootstrap ? o->bootstrap : dp_kafka_bootstrap_env();
    if (!k->cfg && !bootstrap) {
        dp_load_kafka_close(k);
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "no brokers: give --config (its \"kafka\" properties), --bootstrap-servers or "
                      "$DPSTREAM_BOOTSTRAP_SERVERS");
    }
    /* the config's wire format, as `dpstream run` decodes its input; plain
     * Avro when loading by --topic without a config */
    dp_codec_options copts;
    memset(&copts, 0, sizeof copts);
    copts.framing = DP_CODEC_FRAMING_PLAIN;
    if (k->cfg)
        dp_stream_config_codec_options(k->cfg, &copts);
    if ((rc = dp_codec_create(&k->codec, &copts, err, sizeof err)) != DP_OK) {
        dp_load_kafka_close(k);
        return dp_err(errstr, errstr_size, rc, "codec: %s", err);
    }
    if (!(k->topic = strdup(topic))) {
        dp_load_kafka_close(k);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    }
    /* no auto-creation: the topic is created below with the configured
     * partitions, or the load fails rather than make a 1-partition topic */
    const char *const kv[][2] = {{"enable.idempotence", "true"}, {"acks", "all"}, {"linger.ms", "5"},
                                 {"allow.auto.create.topics", "false"}};
    const size_t nkv = sizeof kv / sizeof kv[0];
    /* without a config: only the brokers and the fixed settings (and
     * dpstream's log callback either way) */
    rd_kafka_conf_t *conf = dp_kafka_conf(k->cfg, bootstrap, kv, nkv, err, sizeof err);
    if (!conf) {
        dp_load_kafka_close(k);
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s", err);
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_opaque(conf, k);
    if (!(k->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err))) {
        dp_load_kafka_close(k);
        return dp_err(errstr, errstr_size, DP_EIO, "cannot create the producer: %s", err);
    }
    k->quiet = o->quiet;
    k->label = o->label ? o->label : "load";
    /* Before the first row: a broker that is not there is said so in
     * seconds, not after every row has waited out message.timeout.ms. */
    if ((rc = dp_kafka_check_reachable(k->rk, o->connect_timeout_ms > 0 ? o->connect_timeout_ms
                                                                       : DP_KAFKA_DEFAULT_CONNECT_TIMEOUT_MS,
                                       err, sizeof err)) != DP_OK) {
        dp_load_kafka_close(k);
        return dp_err(errstr, errstr_size, rc, "%s", err);
    }
    dp_topic_spec spec = {.name = k->topic, .partitions = DP_STREAM_DEFAULT_TOPIC_PARTITIONS, .replication = -1};
    if (k->cfg)
        spec = dp_kafka_topic_spec(k->cfg, k->topic, 0);
    if (o->partitions)
        spec.partitions = o->partitions;
    if ((rc = dp_kafka_create_topics(k->rk, &spec, 1, 30000, err, sizeof err)) != DP_OK) {
        dp_load_kafka_close(k);
        return dp_err(errstr, errstr_size, rc, "%s", err);
    }
    /* a sharded route's CLOSE_STEP goes to every partition (shard_key.h);
     * a topic just created may take a moment to show in the metadata */
    int sharded = 0;
    for (size_t i = 0; k->cfg && i < k->cfg->n_routes; i++)
        sharded |= k->cfg->routes[i].sharded;
    for (int tries = 0; sharded && k->partitions <= 0 && tries < 100; tries++)
        if ((k->partitions = dp_kafka_topic_partition_count(k->rk, k->topic, 5000)) <= 0)
            rd_kafka_poll(k->rk, 100);
    if (sharded && k->partitions <= 0) {
        dp_load_kafka_close(k);
        return dp_err(errstr, errstr_size, DP_EIO, "cannot read the partition count of %s", k->topic);
    }
    *out = k;
    return DP_OK;
}

/* Queue one message (waiting while the local queue is full). */
static int send_bytes(dp_load_kafka *k, const void *key, size_t key_len, int32_t partition, const void *val,
                      size_t len, char *errstr, size_t errstr_size)
{
    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            k->rk, RD_KAFKA_V_TOPIC(k->topic), RD_KAFKA_V_PARTITION(partition),
            RD_KAFKA_V_HEADER("dpstream.type", "Update", -1),
            RD_KAFKA_V_KEY((void *)key, key_len), RD_KAFKA_V_VALUE((void *)val, len),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (!e)
            break;
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
            return dp_err(errstr, errstr_size, DP_EIO, "produce to %s: %s", k->topic, rd_kafka_err2str(e));
        rd_kafka_poll(k->rk, 50);
        if (k->failed)
            return dp_err(errstr, errstr_size, DP_EIO, "%s", k->failure);
    }
    rd_kafka_poll(k->rk, 0);
    return DP_OK;
}

int dp_load_kafka_send(dp_load_kafka *k, const dp_update *u, char *errstr, size_t errstr_size)
{
    if (k->failed)
        return dp_err(errstr, errstr_size, DP_EIO, "%s", k->failure);
    k->enc.len = 0;
    char err[256];
    int rc = dp_codec_encode_update_buf(k->codec, u, &k->enc, err, sizeof err);
    if (rc != DP_OK)
        return dp_err(errstr, errstr_size, rc, "cannot encode an update of stream '%.*s' as Avro: %s",
                      (int)(u->stream_id_len < 80 ? u->stream_id_len : 80), u->stream_id, err);
    /* Unsharded: key = stream id, every update of a stream in one
     * partition.  Sharded: key = stream id ‖ 0x00 ‖ entity id, spread by
     * the partitioner, and a marker on every partition (shard_key.h). */
    const dp_stream_route *r = k->cfg ? dp_stream_config_route(k->cfg, u->stream_id, u->stream_id_len) : NULL;
    int sharded = r && r->sharded;
    if (dp_update_key(u, sharded, &k->key) != DP_OK)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    if (!sharded || u->kind != DP_UPDATE_CLOSE_STEP)
        return send_bytes(k, k->key.data, k->key.len, RD_KAFKA_PARTITION_UA, k->enc.data, k->enc.len, errstr,
                          errstr_size);
    for (int32_t p = 0; p < k->partitions; p++)
        if ((rc = send_bytes(k, k->key.data, k->key.len, p, k->enc.data, k->enc.len, errstr, errstr_size)) != DP_OK)
            return rc;
    return DP_OK;
}

int dp_load_kafka_send_raw(dp_load_kafka *k, const void *bytes, size_t len, char *errstr, size_t errstr_size)
{
    if (k->failed)
        return dp_err(errstr, errstr_size, DP_EIO, "%s", k->failure);
    return send_bytes(k, NULL, 0, RD_KAFKA_PARTITION_UA, bytes, len, errstr, errstr_size);
}

int dp_load_kafka_flush(dp_load_kafka *k, char *errstr, size_t errstr_size)
{
    /* bounded by librdkafka's message.timeout.ms: every message is then
     * either delivered or reported failed; the wait is shown meanwhile */
    int rc = dp_kafka_flush_progress(k->rk, k->label, &k->failed, k->quiet);
    if (k->failed)
        return dp_err(errstr, errstr_size, DP_EIO, "%s", k->failure);
    if (rc != DP_OK)
        return dp_err(errstr, errstr_size, DP_EIO, "flush: not every update was acknowledged");
    return DP_OK;
}
