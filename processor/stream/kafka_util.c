/* kafka_util.c — see kafka_util.h. */
#include "stream/kafka_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/dp_error.h"
#include "stream/log.h"

/* The last connection failure librdkafka reported (from any client of this
 * process: a command talks to one cluster), for "cannot reach …" messages:
 * "Connection refused" or "Failed to resolve" says more than the timeout
 * that follows it.  Written on librdkafka's threads. */
static pthread_mutex_t last_error_mu = PTHREAD_MUTEX_INITIALIZER;
static char last_fail[512];    /* facility FAIL: one broker connection failed, and why */
static char last_error[512];   /* any other error, e.g. "1/1 brokers are down" */
static int  reached;           /* a dp_kafka_check_reachable has succeeded */

/* Keep the error for a "cannot reach" message; 1 if it is to be logged at
 * debug level only: until a reachability check has succeeded (a client
 * connects from the moment it is created, before the check begins; after a
 * failed one the command only shuts down), each retry's "Connection
 * refused" would print a line of its own, and the check's message says it
 * once, with the outcome. */
static int remember_error(const char *fac, const char *buf)
{
    /* "[thrd:127.0.0.1:1/bootstrap]: 127.0.0.1:1/bootstrap: Connect to … failed:
     * Connection refused (after 0ms in state CONNECT)": the thread tag and
     * the state say nothing to an operator */
    const char *p = buf[0] == '[' ? strstr(buf, "]: ") : NULL;
    const char *text = p ? p + 3 : buf;
    const char *after = strstr(text, " (after ");
    int len = after ? (int)(after - text) : (int)strlen(text);
    pthread_mutex_lock(&last_error_mu);
    snprintf(strcmp(fac, "FAIL") == 0 ? last_fail : last_error, sizeof last_fail, "%.*s", len, text);
    int quiet = !reached;
    pthread_mutex_unlock(&last_error_mu);
    return quiet;
}

static void log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    if (level <= 3 && remember_error(fac, buf)) {
        dp_log(DP_LOG_DEBUG, "librdkafka %s: %s", fac, buf);
        return;
    }
    /* syslog levels; librdkafka's notices (5, 6) are chatty: debug */
    dp_log_level l = level <= 3 ? DP_LOG_ERROR : level == 4 ? DP_LOG_WARN : DP_LOG_DEBUG;
    /* The config's "kafka" object goes to every client (consumer, producers,
     * state reader), so "consumer property ignored by this producer" is
     * expected, not a problem worth a warning. */
    if (strcmp(fac, "CONFWARN") == 0)
        l = DP_LOG_DEBUG;
    dp_log_event(l, "librdkafka", NULL, 0, 0, "librdkafka %s: %s", fac, buf);
}

int32_t dp_kafka_topic_partition_count(rd_kafka_t *rk, const char *topic, int timeout_ms)
{
    int32_t n = 0;
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    if (t && rd_kafka_metadata(rk, 0, t, &md, timeout_ms) == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 &&
        !md->topics[0].err)
        n = md->topics[0].partition_cnt;
    if (md)
        rd_kafka_metadata_destroy(md);
    if (t)
        rd_kafka_topic_destroy(t);
    return n;
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
    for (size_t i = 0; cfg && i < cfg->n_kafka; i++)
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

dp_topic_spec dp_kafka_topic_spec(const dp_stream_config *cfg, const char *name, int compact)
{
    return (dp_topic_spec){.name = name, .partitions = cfg->topic_partitions, .compact = compact,
                           .replication = cfg->topic_replication_factor};
}

/* 1 if the metadata lists `name` (with partitions), storing its count. */
static int topic_listed(const struct rd_kafka_metadata *md, const char *name, int *partitions)
{
    for (int i = 0; i < md->topic_cnt; i++)
        if (strcmp(md->topics[i].topic, name) == 0 && !md->topics[i].err) {
            *partitions = md->topics[i].partition_cnt;
            return 1;
        }
    return 0;
}

int dp_kafka_create_topics(rd_kafka_t *rk, const dp_topic_spec *specs, size_t n, int timeout_ms,
                           char *errstr, size_t errstr_size)
{
    if (n == 0)
        return DP_OK;
    /* Which exist?  A metadata request for all topics: one naming them
     * would auto-create them on a broker that allows it (a producer's
     * metadata requests do), with the broker's partition count. */
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t me = rd_kafka_metadata(rk, 1, NULL, &md, timeout_ms);
    if (me) {
        char bs[256];
        dp_kafka_bootstrap_of(rk, bs, sizeof bs);
        return dp_err(errstr, errstr_size, DP_EIO, "listing the topics of %s: %s", bs, rd_kafka_err2str(me));
    }
    rd_kafka_NewTopic_t **nt = calloc(n, sizeof *nt);
    if (!nt) {
        rd_kafka_metadata_destroy(md);
        return DP_ENOMEM;
    }
    char err[512];
    int rc = DP_OK;
    size_t missing = 0;
    for (size_t i = 0; i < n && rc == DP_OK; i++) {
        int have = 0;
        if (topic_listed(md, specs[i].name, &have)) {
            dp_log(DP_LOG_DEBUG, "topic %s exists (%d partitions)", specs[i].name, have);
            continue;
        }
        rd_kafka_NewTopic_t *t = rd_kafka_NewTopic_new(specs[i].name, specs[i].partitions,
                                                       specs[i].replication ? specs[i].replication : -1, err,
                                                       sizeof err);
        if (!t)
            rc = dp_err(errstr, errstr_size, DP_EINVAL, "topic %s: %s", specs[i].name, err);
        else if (specs[i].compact)
            rd_kafka_NewTopic_set_config(t, "cleanup.policy", "compact");
        nt[missing++] = t;
    }
    rd_kafka_metadata_destroy(md);
    rd_kafka_queue_t *q = NULL;
    rd_kafka_AdminOptions_t *opt = NULL;
    rd_kafka_event_t *ev = NULL;
    if (rc != DP_OK || missing == 0)
        goto out;
    q = rd_kafka_queue_new(rk);
    opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_operation_timeout(opt, timeout_ms, NULL, 0);
    rd_kafka_AdminOptions_set_request_timeout(opt, timeout_ms, NULL, 0);
    rd_kafka_CreateTopics(rk, nt, missing, opt, q);
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
                continue;   /* another command created it meanwhile */
            if (e) {
                const char *es = rd_kafka_topic_result_error_string(res[i]);
                rc = dp_err(errstr, errstr_size, DP_EIO, "creating topic %s: %s", rd_kafka_topic_result_name(res[i]),
                            es ? es : rd_kafka_err2str(e));
            } else {
                const dp_topic_spec *sp = NULL;
                for (size_t j = 0; j < n && !sp; j++)
                    if (strcmp(specs[j].name, rd_kafka_topic_result_name(res[i])) == 0)
                        sp = &specs[j];
                char parts[16] = "default", repl[16] = "default";
                if (sp && sp->partitions > 0)
                    snprintf(parts, sizeof parts, "%d", sp->partitions);
                if (sp && sp->replication > 0)
                    snprintf(repl, sizeof repl, "%d", sp->replication);
                dp_log_event(DP_LOG_INFO, "topic_created", NULL, 0, 0, "created topic %s (partitions %s, replication factor %s%s)",
                       rd_kafka_topic_result_name(res[i]), parts, repl, sp && sp->compact ? ", compacted" : "");
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
    for (size_t i = 0; i < missing; i++)
        if (nt[i])
            rd_kafka_NewTopic_destroy(nt[i]);
    free(nt);
    return rc;
}

void dp_kafka_bootstrap_of(rd_kafka_t *rk, char *out, size_t n)
{
    size_t sz = n;
    if (rd_kafka_conf_get(rd_kafka_conf(rk), "bootstrap.servers", out, &sz) != RD_KAFKA_CONF_OK || !out[0])
        snprintf(out, n, "(bootstrap.servers unset)");
}

int dp_kafka_check_reachable(rd_kafka_t *rk, int timeout_ms, char *errstr, size_t errstr_size)
{
    char bs[512], why[512];
    size_t bsz = sizeof bs;
    if (rd_kafka_conf_get(rd_kafka_conf(rk), "bootstrap.servers", bs, &bsz) != RD_KAFKA_CONF_OK || !bs[0])
        return dp_err(errstr, errstr_size, DP_EIO, "no brokers to reach: set bootstrap.servers in the config's "
                      "\"kafka\" object or $DPSTREAM_BOOTSTRAP_SERVERS");
    /* brokers only: no topic is named, so nothing can be auto-created */
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, NULL, &md, timeout_ms > 0 ? timeout_ms : 1);
    int ok = !e && md && md->broker_cnt > 0;
    if (md)
        rd_kafka_metadata_destroy(md);
    if (ok) {
        pthread_mutex_lock(&last_error_mu);
        reached = 1;   /* from now on librdkafka's errors are news: logged as errors */
        pthread_mutex_unlock(&last_error_mu);
        return DP_OK;
    }
    pthread_mutex_lock(&last_error_mu);
    snprintf(why, sizeof why, "%s", last_fail[0] ? last_fail : last_error[0] ? last_error : rd_kafka_err2str(e));
    pthread_mutex_unlock(&last_error_mu);
    return dp_err(errstr, errstr_size, DP_EIO,
                  "cannot reach %s (%s; no broker answered within %d ms): check bootstrap.servers or "
                  "$DPSTREAM_BOOTSTRAP_SERVERS, that the brokers run, and the \"kafka\" security settings; "
                  "--connect-timeout-ms waits longer", bs, why, timeout_ms);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int dp_kafka_flush_progress(rd_kafka_t *rk, const char *who, const volatile int *failed, int quiet)
{
    int64_t start = mono_ms(), said = start;
    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_flush(rk, 1000);
        if (failed && *failed)
            return DP_EIO;
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
            return DP_OK;
        if (e != RD_KAFKA_RESP_ERR__TIMED_OUT)
            return DP_EIO;
        int64_t now = mono_ms();
        if (!quiet && now - said >= 3000) {
            char bs[256];
            dp_kafka_bootstrap_of(rk, bs, sizeof bs);
            fprintf(stderr, "dpstream %s: waiting for %d acknowledgements from %s (%lld s so far; a message that "
                    "is not acknowledged within message.timeout.ms fails)\n", who, rd_kafka_outq_len(rk), bs,
                    (long long)((now - start) / 1000));
            said = now;
        }
    }
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
