/* snapshot_publish.h — a close's release sink and the stream's snapshot
 * (snapshot_publish.c).  Internal to processor/stream/. */
#ifndef DP_STREAM_SNAPSHOT_PUBLISH_H
#define DP_STREAM_SNAPSHOT_PUBLISH_H

#include "stream/processor_internal.h"

/* The sink for closing s's open step (records in chunks, manifest, budget
 * event, all produced into the open transaction); ps_release_end after. */
dp_release_sink ps_release_begin(proc *p, ps_stream *s);
void            ps_release_end(proc *p);
/* At teardown: the chunk, the encoder and the state buffer. */
void            ps_release_free(proc *p);
/* s's snapshot (state + skip_below + open step) to the state topic. */
int             ps_write_snapshot(proc *p, ps_stream *s);

#endif
