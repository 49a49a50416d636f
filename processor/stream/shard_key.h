/* shard_key.h — the Kafka key of an update, and the one KEY_MISMATCH rule
 * of the consume loop (docs/kafka.md §1, §10).
 *
 * Unsharded route: key = the stream id; every update of the stream sits
 * in the one partition the configured partitioner gives that key.
 *
 * Sharded route ("sharded": true, stream_config.h): key = stream id ‖ 0x00
 * ‖ entity id (the entity part empty for an update without an entity and
 * for a CLOSE_STEP marker).  Stream and entity ids are well-formed UTF-8
 * without a NUL byte (core/utf8.h: dp_id_text_valid, enforced by the codec,
 * load and replay), so the first 0x00 ends the stream id and the encoding
 * is unambiguous; and since an unsharded key is a stream id, which holds
 * no 0x00, no sharded key can equal an unsharded one.  The partitioner
 * hashes the whole key, so one stream's entities spread over every
 * partition while each entity stays in one.  A data update must sit in
 * its key's partition; a CLOSE_STEP marker of a sharded stream is written
 * to every partition (each partition is a shard, and each shard's step
 * closes on its own marker), so it may sit in any.
 *
 * Owns: nothing.  Calls: kafka_util (the partitioner), buf. */
#ifndef DP_STREAM_SHARD_KEY_H
#define DP_STREAM_SHARD_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "synth/common/synth.h"

#define DP_SHARD_KEY_SEP 0x00u

/* The key of u under a route that is sharded or not, into *out (cleared
 * first).  DP_OK or DP_ENOMEM. */
int dp_update_key(const dp_update *u, int sharded, dp_buf *out);

/* A sharded key split: *stream / *entity borrow from key (*entity_len 0:
 * no entity).  DP_OK, or DP_EINVAL if the key has no 0x00 or an empty
 * stream id. */
int dp_shard_key_decode(const void *key, size_t key_len, const char **stream, size_t *stream_len,
                        const char **entity, size_t *entity_len);

/* 0 if message (key, partition) may carry update u under a route that is
 * sharded or not, among partition_count partitions of the updates topic
 * (<= 0: unknown, the partition is not checked), with `partitioner`
 * (dp_stream_partitioner_known); else 1 and why in msg[0..n) — the text
 * of the KEY_MISMATCH dead letter. */
int dp_update_key_mismatch(const char *partitioner, const dp_update *u, int sharded, const void *key, size_t key_len,
                           int32_t partition, int32_t partition_count, char *msg, size_t n);

#endif
