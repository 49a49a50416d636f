/* state_layout.h — the state topic's layout: co-partitioned with the
 * updates topic, as Kafka Streams does with its changelog topics.
 *
 * The state of every stream the updates topic's partition i routes (its
 * snapshot, content chunks and the partition's progress record) lives in
 * partition i of the state topic, so a restore of partition i reads state
 * partition i and nothing else.  That needs the same partition count on
 * both topics (`run` creates the state topic so; a startup and every
 * restore check it) and a state topic written this way from its first
 * record: state written by a dpstream before this layout sits in the
 * partition its key hashes to, where a restore would not look — its
 * streams would start afresh and release their steps a second time with
 * the same noise.  So the layout is marked: the first record of state
 * partition 0 is a layout marker (key DP_STATE_LAYOUT_KEY_PREFIX ‖ writer
 * ‖ "/" ‖ time: unique, so compaction never removes the first one), written
 * before any state, when the whole topic is empty.  A state topic that is
 * not empty and does not start with one is refused (README "Operations":
 * `dpstream migrate-state` copies it into a co-partitioned topic). */
#ifndef DP_STREAM_STATE_LAYOUT_H
#define DP_STREAM_STATE_LAYOUT_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/state_record.h"
#include "stream/stream_config.h"

#define DP_STATE_LAYOUT_KEY_PREFIX DP_STATE_RESERVED_KEY_PREFIX "layout/"
/* The marker's value: what the layout is, for whoever reads the topic. */
#define DP_STATE_LAYOUT_VALUE "DPL1 state partition i holds the state of updates partition i"
/* The "dpstream.type" header of the marker. */
#define DP_STATE_LAYOUT_TYPE "Layout"

/* 1 if key is a layout marker's. */
int dp_state_key_is_layout(const void *key, size_t key_len);

/* The partition count of `topic` (metadata through rk, retried while it is
 * missing, e.g. right after its creation, until timeout_ms).  DP_OK;
 * DP_ENOTFOUND (no such topic) or DP_EIO, with a message. */
int dp_kafka_topic_partitions(rd_kafka_t *rk, const char *topic, int timeout_ms, int32_t *out, char *errstr,
                              size_t errstr_size);

/* Refusal message when the updates and state topics' partition counts
 * differ (the startup check and the restore's say the same). */
void dp_state_layout_count_message(const dp_stream_config *cfg, int32_t updates, int32_t state, char *out,
                                   size_t n);

/* Write a layout marker into partition 0 of `state_topic` with `producer`
 * (not transactional: read_committed readers see it at once) and wait for
 * it to be acknowledged.  writer: who (an instance id), in its key. */
int dp_state_layout_mark(rd_kafka_t *producer, const char *state_topic, const char *writer, char *errstr,
                         size_t errstr_size);

/* The startup check of cfg's topics (both exist): the same partition
 * count, and a state topic that starts with a layout marker — or is empty,
 * and is then marked with `producer` (writer as above).  rk: any client
 * (metadata, watermarks); bootstrap: as for dp_kafka_conf.  DP_OK; DP_EKEY
 * with the refusal (counts differ, or state of the earlier layout); DP_EIO. */
int dp_state_layout_check(const dp_stream_config *cfg, const char *bootstrap, rd_kafka_t *rk, rd_kafka_t *producer,
                          const char *writer, char *errstr, size_t errstr_size);

#endif
