/* route_table.h — which stream an update belongs to, and whether a new
 * stream may be created for it: the one routing rule of the Kafka consume
 * loop (consume_loop.c) and of the offline replay (connectors/replay), so
 * the two cannot drift (docs/design.md §2: a replay of the log releases
 * what the processor released).
 *
 * The stream table is the caller's (a dp_bytes_map from stream id to the
 * caller's stream struct); route_of tells this module a stream's route and
 * input partition, for the per-partition max_streams count. */
#ifndef DP_STREAM_ROUTE_TABLE_H
#define DP_STREAM_ROUTE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/bytes_map.h"
#include "stream/stream_config.h"
#include "synth/common/step_gate.h"
#include "synth/common/synth.h"

typedef enum dp_route_verdict {
    DP_ROUTE_KNOWN,      /* the stream exists: *stream */
    DP_ROUTE_NEW,        /* no stream yet; create it under *route (dp_route_open) */
    DP_ROUTE_UNKNOWN,    /* no route matches the id: reject, UNKNOWN_STREAM */
    DP_ROUTE_MISPLACED,  /* the caller's placement check refused it: reject, KEY_MISMATCH */
    DP_ROUTE_FULL,       /* its route has max_streams streams in the partition: reject, STREAM_LIMIT */
} dp_route_verdict;

typedef struct dp_route_table {
    const dp_stream_config *cfg;
    const dp_bytes_map     *streams;   /* stream id -> the caller's stream */
    /* The route a stream of `streams` was created under, and its input partition. */
    const dp_stream_route *(*route_of)(const void *stream, int32_t *partition);
    /* For a stream not yet in the table whose route matched, before the
     * max_streams count: nonzero refuses it (DP_ROUTE_MISPLACED).  NULL: none. */
    int  (*misplaced)(void *ctx);
    void  *ctx;
    /* The update's key in `streams` when it is not the stream id (a shard
     * of a sharded stream under the ingest role: docs/kafka.md §10); NULL:
     * the id. */
    const void *table_key;
    size_t      table_key_len;
} dp_route_table;

/* Route the update of stream id[0..len) read from input `partition` (the
 * replay reads one log: partition 0).  Sets *stream for DP_ROUTE_KNOWN and
 * *route for DP_ROUTE_NEW and DP_ROUTE_FULL. */
dp_route_verdict dp_route_update(const dp_route_table *t, const char *id, size_t len, int32_t partition,
                                 void **stream, const dp_stream_route **route);

/* A new stream's synthesizer and step gate under `route`, its noise keyed
 * by `key` and the stream id.  DP_OK, or the synthesizer's status with the
 * reason in err (*synth stays NULL, the gate untouched). */
int dp_route_open(const dp_stream_route *route, const dp_key *key, const char *id, size_t len, dp_synth **synth,
                  dp_step_gate *gate, char *err, size_t errsz);

#endif
