/* state_read.h — the committed contents of a state topic, newest value per
 * key, for tools that read it (`dpstream inspect-snapshot`).  The
 * processor's own restore (restore.c) reads differently: it waits for
 * transactions still open and keeps only its partitions' records.
 *
 * Read with isolation.level=read_committed from the beginning of every
 * partition to its end as of the read (the last stable offset: a
 * transaction still open is not waited for — the result is what is
 * committed).  Tombstones delete.  Values hold raw state records, private
 * data: keep them in memory only, and never print them unasked. */
#ifndef DP_STREAM_STATE_READ_H
#define DP_STREAM_STATE_READ_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>

#include "core/bytes_map.h"
#include "stream/state_record.h"
#include "stream/stream_config.h"

/* Which keys to keep (1) — e.g. one stream's; NULL keeps all. */
typedef int (*dp_state_read_keep_fn)(void *ctx, const void *key, size_t key_len);

/* Fill *out (initialised by the caller) with key -> dp_state_piece (owned
 * bytes) for the config's state topic.  bootstrap: overrides the config's
 * bootstrap.servers when non-NULL.  timeout_ms bounds the whole read.
 * DP_OK; DP_EIO (unreachable, no such topic, timed out: message in
 * errstr); DP_EINVAL (Kafka configuration); DP_ENOMEM. */
int dp_state_read_topic(const dp_stream_config *cfg, const char *bootstrap, dp_state_read_keep_fn keep, void *ctx,
                        int timeout_ms, dp_bytes_map *out, char *errstr, size_t errstr_size);

/* The same, each partition's records in a map of their own: *out an array
 * of *n maps (partition i in map i; free each with dp_state_read_free,
 * then the array).  For a state topic where one key lives in several
 * partitions: a sharded stream's shards, each in its own (docs/kafka.md
 * §10). */
int dp_state_read_topic_split(const dp_stream_config *cfg, const char *bootstrap, dp_state_read_keep_fn keep,
                              void *ctx, int timeout_ms, dp_bytes_map **out, int32_t *n, char *errstr,
                              size_t errstr_size);

/* The value under key in a map filled by dp_state_read_topic, or NULL
 * (a dp_state_lookup_fn: ctx is the map). */
const dp_state_piece *dp_state_read_lookup(void *map, const void *key, size_t key_len);

/* Free the values (their bytes wiped: they are private state) and the map. */
void dp_state_read_free(dp_bytes_map *m);
/* The same, keeping the (empty) map. */
void dp_state_read_clear(dp_bytes_map *m);

/* The step both readers take per message (the processor's restore reads
 * differently but keeps its records the same way): the message's value
 * (copied) becomes the newest under its key, a NULL payload (tombstone)
 * deletes.  DP_OK or DP_ENOMEM. */
int dp_state_read_keep_newest(dp_bytes_map *out, const rd_kafka_message_t *m);
/* Forget the value under key (superseded by a record that is not kept). */
void dp_state_read_forget(dp_bytes_map *m, const void *key, size_t key_len);

#endif
