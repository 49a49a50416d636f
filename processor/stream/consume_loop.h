/* consume_loop.h — handling the input, message by message (consume_loop.c).
 * Internal to processor/stream/. */
#ifndef DP_STREAM_CONSUME_LOOP_H
#define DP_STREAM_CONSUME_LOOP_H

#include <sys/types.h>

#include "stream/processor_internal.h"

/* The poll batch and the loop's encoder: allocate (DP_OK or DP_ENOMEM;
 * ps_consume_free either way), free. */
int     ps_consume_init(proc *p);
void    ps_consume_free(proc *p);
/* Fill p->batch: 0 if nothing came within the poll interval, else the
 * number of messages (errors included); ps_consume_release them after. */
ssize_t ps_consume_batch(proc *p);
void    ps_consume_release(proc *p, ssize_t n);
/* Handle p->batch[0..n) in log order. */
int     ps_handle_batch(proc *p, size_t n);
/* Append CLOSE_STEP markers for streams whose idle timeout passed. */
void    ps_idle_markers(proc *p);

#endif
