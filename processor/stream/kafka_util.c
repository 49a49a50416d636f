/* kafka_util.c — see kafka_util.h. */
#include "stream/kafka_util.h"

#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"
#include "stream/log.h"

static void log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    /* syslog levels; librdkafka's notices (5, 6) are chatty: debug */
    dp_log_level l = level <= 3 ? DP_LOG_ERROR : level == 4 ? DP_LOG_WARN : DP_LOG_DEBUG;
    /* The config's "kafka" object goes to every client (consumer, producers,
     * state reader), so "consumer property ignored by this producer" is
     * expected, not a problem worth a warning. */
    if (strcmp(fac, "CONFWARN") == 0)
        l = DP_LOG_DEBUG;
    dp_log_event(l, "librdkafka", NULL, 0, 0, "librdkafka %s: %s", fac, buf);
}

int32_t dp_kafka_key_partition(const char *partitioner, const void *key, size_t key_len, int32_t partition_cnt)
{
    /* The _random variants differ from their plain ones only for empty
     * keys (spread at random), which a stream id never is. */
    if (strncmp(partitioner, "murmur2", 7) == 0)
        return rd_kafka_msg_partitioner_murmur2(NULL, key, key_len, partition_cnt, NULL, NULL);
    if (strncmp(partitioner, "fnv1a", 5) == 0)
        return rd_kafka_msg_partitioner_fnv1a(NULL, key, key_len, partition_cnt, NULL, NULL);
    return rd_kafka_msg_partitioner_consistent(NULL, key, key_len, partition_cnt, NULL, NULL);
}

const char *dp_kafka_bootstrap_env(void)
{
    const char *bs = getenv("DPSTREAM_BOOTSTRAP_SERVERS");
    return bs && *bs ? bs : NULL;
}

rd_kafka_conf_t *dp_kafka_conf_with_defaults(const dp_stream_config *cfg, const char *bootstrap_override,
                                             const char *const defaults[][2], size_t n_defaults,
                                             const char *const kv[][2], size_t n, char *errstr, size_t errstr_size)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char err[512];
    for (size_t i = 0; i < n_defaults; i++)
        if (rd_kafka_conf_set(conf, defaults[i][0], defaults[i][1], err, sizeof err) != RD_KAFKA_CONF_OK)
            goto fail;
    for (size_t i = 0; i < cfg->n_kafka; i++)
        if (rd_kafka_conf_set(conf, cfg->kafka[i].name, cfg->kafka[i].value, err, sizeof err) != RD_KAFKA_CONF_OK)
            goto fail;
    if (bootstrap_override &&
        rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap_override, err, sizeof err) != RD_KAFKA_CONF_OK)
        goto fail;
    for (size_t i = 0; i < n; i++)
        if (rd_kafka_conf_set(conf, kv[i][0], kv[i][1], err, sizeof err) != RD_KAFKA_CONF_OK)
            goto fail;
    rd_kafka_conf_set_log_cb(conf, log_cb);
    return conf;
fail:
    rd_kafka_conf_destroy(conf);
    dp_err(errstr, errstr_size, DP_EINVAL, "kafka configuration: %s", err);
    return NULL;
}

rd_kafka_conf_t *dp_kafka_conf(const dp_stream_config *cfg, const char *bootstrap_override,
                               const char *const kv[][2], size_t n, char *errstr, size_t errstr_size)
{
    return dp_kafka_conf_with_defaults(cfg, bootstrap_override, NULL, 0, kv, n, errstr, errstr_size);
}

int dp_kafka_create_topics(rd_kafka_t *rk, const dp_topic_spec *specs, size_t n, int timeout_ms,
                           char *errstr, size_t errstr_size)
{
    if (n == 0)
        return DP_OK;
    rd_kafka_NewTopic_t **nt = calloc(n, sizeof *nt);
    if (!nt)
        return DP_ENOMEM;
    char err[512];
    int rc = DP_OK;
    for (size_t i = 0; i < n && rc == DP_OK; i++) {
        if (!(nt[i] = rd_kafka_NewTopic_new(specs[i].name, specs[i].partitions, -1, err, sizeof err)))
            rc = dp_err(errstr, errstr_size, DP_EINVAL, "topic %s: %s", specs[i].name, err);
        else if (specs[i].compact)
            rd_kafka_NewTopic_set_config(nt[i], "cleanup.policy", "compact");
    }
    rd_kafka_queue_t *q = NULL;
    rd_kafka_AdminOptions_t *opt = NULL;
    rd_kafka_event_t *ev = NULL;
    if (rc != DP_OK)
        goto out;
    q = rd_kafka_queue_new(rk);
    opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_operation_timeout(opt, timeout_ms, NULL, 0);
    rd_kafka_AdminOptions_set_request_timeout(opt, timeout_ms, NULL, 0);
    rd_kafka_CreateTopics(rk, nt, n, opt, q);
    ev = rd_kafka_queue_poll(q, timeout_ms + 5000);
    if (!ev) {
        rc = dp_err(errstr, errstr_size, DP_EIO, "creating topics timed out");
    } else if (rd_kafka_event_error(ev)) {
        rc = dp_err(errstr, errstr_size, DP_EIO, "creating topics: %s", rd_kafka_event_error_string(ev));
    } else {
        size_t cnt = 0;
        const rd_kafka_topic_result_t **res =
            rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &cnt);
        for (size_t i = 0; i < cnt && rc == DP_OK; i++) {
            rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
            if (e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
                continue;
            if (e) {
                const char *es = rd_kafka_topic_result_error_string(res[i]);
                rc = dp_err(errstr, errstr_size, DP_EIO, "creating topic %s: %s",
                            rd_kafka_topic_result_name(res[i]), es ? es : rd_kafka_err2str(e));
            } else {
                dp_log_event(DP_LOG_INFO, "topic_created", NULL, 0, 0, "created topic %s",
                             rd_kafka_topic_result_name(res[i]));
            }
        }
    }
out:
    if (ev)
        rd_kafka_event_destroy(ev);
    if (opt)
        rd_kafka_AdminOptions_destroy(opt);
    if (q)
        rd_kafka_queue_destroy(q);
    for (size_t i = 0; i < n; i++)
        if (nt[i])
            rd_kafka_NewTopic_destroy(nt[i]);
    free(nt);
    return rc;
}

void dp_kafka_message_type(const rd_kafka_message_t *m, char *out, size_t n)
{
    rd_kafka_headers_t *h = NULL;
    const void *v = NULL;
    size_t len = 0;
    out[0] = '\0';
    if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        rd_kafka_header_get_last(h, "dpstream.type", &v, &len) == RD_KAFKA_RESP_ERR_NO_ERROR && v && len < n) {
        memcpy(out, v, len);
        out[len] = '\0';
    }
}
