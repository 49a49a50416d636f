/* load_kafka.h — the Kafka output of `dpstream load`: Avro Updates produced
 * to the updates topic keyed by stream id (a sharded route's by stream id
 * ‖ 0x00 ‖ entity id, its CLOSE_STEP markers to every partition:
 * stream/shard_key.h, docs/kafka.md §10), with the same encoding
 * (codec/codec.h, plain Avro, "dpstream.type: Update" header, as
 * `dpstream produce` writes and `dpstream run` reads) and client settings (stream/kafka_util.h: the config's
 * "kafka" properties, $DPSTREAM_BOOTSTRAP_SERVERS) as `dpstream run`, so
 * whatever the loader writes the processor reads.
 *
 * Open fails fast (DP_EIO, "cannot reach …") when no broker answers within
 * the connect timeout, and creates the topic if it is missing, as every
 * command does (kafka_util.h: the config's topics.partitions and
 * replication_factor; without a config the defaults, 4 partitions and the
 * broker's replication factor), never relying on broker auto-creation.
 *
 * Delivery: one idempotent producer (enable.idempotence, acks=all), so
 * retries neither duplicate nor reorder a partition's updates — the order
 * of rows in the input file is the order the processor sees per stream.
 * Any delivery failure is fatal (reported by dp_load_kafka_send or
 * dp_load_kafka_flush): a loader that silently lost a row would bias the
 * release it belongs to. */
#ifndef DP_APP_LOAD_KAFKA_H
#define DP_APP_LOAD_KAFKA_H

#include <stddef.h>
#include <stdint.h>

#include "synth/common/synth.h"

typedef struct dp_load_kafka_options {
    const char *config_path;   /* dpstream config (topics, kafka properties); may be NULL */
    const char *topic;         /* overrides the config's updates topic; required without a config */
    const char *bootstrap;     /* overrides everything else when non-NULL */
    int         connect_timeout_ms;   /* give up when no broker answers this long (0: the default) */
    int         quiet;         /* no "waiting for N acknowledgements" lines while flushing */
    int         partitions;    /* a topic created here gets these (0: the config's, default 4) */
    const char *label;         /* the command named in those lines (NULL: "load") */
} dp_load_kafka_options;

typedef struct dp_load_kafka dp_load_kafka;

int  dp_load_kafka_open(dp_load_kafka **out, const dp_load_kafka_options *o, char *errstr, size_t errstr_size);
/* Queue one update (waits while the local queue is full).  DP_OK, or DP_EIO
 * with a message once any delivery has failed. */
int  dp_load_kafka_send(dp_load_kafka *k, const dp_update *u, char *errstr, size_t errstr_size);
/* Queue bytes as they are, with no key (`--raw-invalid`: malformed input
 * put on the topic for dead-letter tests).  DP_OK or DP_EIO. */
int  dp_load_kafka_send_raw(dp_load_kafka *k, const void *bytes, size_t len, char *errstr, size_t errstr_size);
/* Wait until every queued update is acknowledged.  DP_OK or DP_EIO. */
int  dp_load_kafka_flush(dp_load_kafka *k, char *errstr, size_t errstr_size);
void dp_load_kafka_close(dp_load_kafka *k);
/* The topic the updates go to (--topic, or the config's updates topic). */
const char *dp_load_kafka_topic(const dp_load_kafka *k);

#endif
