/* consume_loop.h — handling the input, message by message (consume_loop.c).
 * Internal to processor/stream/. */
#ifndef DP_STREAM_CONSUME_LOOP_H
#define DP_STREAM_CONSUME_LOOP_H

#include "stream/processor_internal.h"

/* Handle p->batch[0..n) in log order. */
int  ps_handle_batch(proc *p, size_t n);
/* Append CLOSE_STEP markers for streams whose idle timeout passed. */
void ps_idle_markers(proc *p);

#endif
