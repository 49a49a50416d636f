/* release_loop.h — the release role's consume loop (docs/kafka.md §10).
 *
 * Owns: nothing (release_loop.c says what it does).  Calls: nothing. */
#ifndef DP_STREAM_RELEASE_LOOP_H
#define DP_STREAM_RELEASE_LOOP_H

#include "stream/processor_internal.h"

/* Handle p->batch[0..n), statistics records of <prefix>.stats, in log order. */
int ps_release_handle_batch(proc *p, size_t n);

#endif
