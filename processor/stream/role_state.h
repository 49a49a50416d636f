/* role_state.h — each kind of stream's state and a shard's statistics
 * record under the ingest and release roles (docs/kafka.md §10).
 *
 * Owns: nothing (role_state.c says what it lays out).  Calls: nothing. */
#ifndef DP_STREAM_ROLE_STATE_H
#define DP_STREAM_ROLE_STATE_H

#include "stream/processor_internal.h"

/* s's state as its snapshot carries it, appended to out. */
int ps_stream_state_save(proc *p, const ps_stream *s, dp_buf *out);
/* Restore s->synth (and a release stream's merger) from that state; s's
 * id, route and kind are set.  DP_OK, or the refusal in err. */
int ps_stream_state_load(proc *p, ps_stream *s, const uint8_t *data, size_t len, char *err, size_t n);
/* A new release stream's merger (nothing released yet). */
int ps_stream_release_init(proc *p, ps_stream *s);
/* Shard s's statistics of its closed step st->step, as a statistics record
 * (shard = its partition, shard count = the updates topic's partitions),
 * produced to <prefix>.stats in the open transaction, keyed by stream id. */
int ps_shard_stats_publish(proc *p, const ps_stream *s, const dp_stats *st, char *err, size_t n);

#endif
