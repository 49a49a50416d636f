/* kafka_util.h — librdkafka plumbing shared by the processor and the
 * helper commands (produce, export): client configuration from the
 * dpstream config, topic creation. */
#ifndef DP_STREAM_KAFKA_UTIL_H
#define DP_STREAM_KAFKA_UTIL_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>

#include "stream/stream_config.h"

/* A librdkafka conf with every property of the config's "kafka" object
 * (passed through unchanged, so SASL/SSL settings work), bootstrap.servers
 * replaced by `bootstrap_override` when non-NULL, then the `n` fixed
 * overrides kv[i] = {name, value}, and dpstream's log callback.  NULL
 * with a message on an unknown or invalid property.  cfg may be NULL (a
 * client without a dpstream config, e.g. `load --topic`): then only the
 * bootstrap override and kv are set. */
rd_kafka_conf_t *dp_kafka_conf(const dp_stream_config *cfg, const char *bootstrap_override,
                               const char *const kv[][2], size_t n, char *errstr, size_t errstr_size);
/* The same, with defaults[i] set first, so the config's "kafka" object can
 * override them (the fixed kv still win over both). */
rd_kafka_conf_t *dp_kafka_conf_with_defaults(const dp_stream_config *cfg, const char *bootstrap_override,
                                             const char *const defaults[][2], size_t n_defaults,
                                             const char *const kv[][2], size_t n, char *errstr, size_t errstr_size);

/* The partition `partitioner` (dp_stream_partitioner_known) assigns to a
 * non-empty key among `partition_cnt` partitions — the same function
 * librdkafka's producers apply, so the processor can check that every
 * update of a stream sits in its stream id's one partition. */
int32_t dp_kafka_key_partition(const char *partitioner, const void *key, size_t key_len, int32_t partition_cnt);

/* The number of partitions of `topic` from a metadata request (waiting
 * up to timeout_ms), or 0 if the topic or the answer is missing. */
int32_t dp_kafka_topic_partition_count(rd_kafka_t *rk, const char *topic, int timeout_ms);

/* The "dpstream.type" header of a message (a codec type name, or
 * "Progress"), NUL-terminated in out[0..n), or "" if absent or too long. */
void dp_kafka_message_type(const rd_kafka_message_t *m, char *out, size_t n);

/* $DPSTREAM_BOOTSTRAP_SERVERS if set and non-empty, else NULL. */
const char *dp_kafka_bootstrap_env(void);

typedef struct dp_topic_spec {
    const char *name;
    int         partitions;     /* -1: broker default */
    int         compact;        /* cleanup.policy=compact */
    int         replication;    /* -1: broker default (default.replication.factor) */
} dp_topic_spec;

/* The spec of a topic dpstream creates: the config's "topics.partitions"
 * and "topics.replication_factor" (stream_config.h), compacted or not. */
dp_topic_spec dp_kafka_topic_spec(const dp_stream_config *cfg, const char *name, int compact);

/* One topic-creation policy for every command: create the topics that do
 * not exist yet, with their spec, and leave existing ones as they are
 * (the metadata is asked first, so a principal without CREATE rights on
 * topics that exist is never refused).  Never relies on the broker's
 * auto.create.topics.enable, which would make 1-partition topics (or, off,
 * let producers stall until their message timeout).  DP_OK, or DP_EIO with
 * a message naming the topic. */
int dp_kafka_create_topics(rd_kafka_t *rk, const dp_topic_spec *specs, size_t n, int timeout_ms,
                           char *errstr, size_t errstr_size);

/* How long a command waits for the first answer of a broker before it
 * gives up (--connect-timeout-ms). */
#define DP_KAFKA_DEFAULT_CONNECT_TIMEOUT_MS 10000

/* Ask the cluster for its brokers within timeout_ms (>= 1), so that a
 * command whose bootstrap servers are down, misspelt or refuse its
 * credentials fails in seconds, saying so, instead of at the first 30 s
 * admin timeout or librdkafka's 300 s delivery timeout.  DP_OK, or DP_EIO
 * with "cannot reach BOOTSTRAP (why; …)" — why is the last connection error
 * librdkafka reported (connection refused, name not resolved, SASL or SSL
 * failure), else the metadata request's own error.  Until a check of the
 * process has succeeded, librdkafka's error logs are debug-level (the
 * check's message carries the last of them): a command that cannot reach
 * its brokers prints one clear line, not one per reconnection attempt. */
int dp_kafka_check_reachable(rd_kafka_t *rk, int timeout_ms, char *errstr, size_t errstr_size);

/* rd_kafka_flush until every queued message is acknowledged or failed (at
 * most message.timeout.ms each), writing "dpstream <who>: waiting for N
 * acknowledgements from BOOTSTRAP" to stderr every few seconds while
 * messages are outstanding (unless quiet), so a stalled broker is visible
 * rather than a silent hang.  Stops early once *failed (set by the
 * caller's delivery callback) is non-zero.  DP_OK when the queue is empty
 * and nothing failed, else DP_EIO. */
int dp_kafka_flush_progress(rd_kafka_t *rk, const char *who, const volatile int *failed, int quiet);

/* bootstrap.servers of a client, for messages ("(unset)" if none). */
void dp_kafka_bootstrap_of(rd_kafka_t *rk, char *out, size_t n);

#endif
