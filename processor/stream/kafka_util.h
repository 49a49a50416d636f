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
 * with a message on an unknown or invalid property. */
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

/* The "dpstream.type" header of a message (a codec type name, or
 * "Progress"), NUL-terminated in out[0..n), or "" if absent or too long. */
void dp_kafka_message_type(const rd_kafka_message_t *m, char *out, size_t n);

/* $DPSTREAM_BOOTSTRAP_SERVERS if set and non-empty, else NULL. */
const char *dp_kafka_bootstrap_env(void);

typedef struct dp_topic_spec {
    const char *name;
    int         partitions;     /* -1: broker default */
    int         compact;        /* cleanup.policy=compact */
} dp_topic_spec;

/* Create the topics that do not exist yet (existing ones are left as
 * they are).  DP_OK, or DP_EIO with a message. */
int dp_kafka_create_topics(rd_kafka_t *rk, const dp_topic_spec *specs, size_t n, int timeout_ms,
                           char *errstr, size_t errstr_size);

#endif
