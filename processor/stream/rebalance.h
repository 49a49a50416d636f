/* rebalance.h — assignment, revocation, rewind (rebalance.c).  Internal to
 * processor/stream/. */
#ifndef DP_STREAM_REBALANCE_H
#define DP_STREAM_REBALANCE_H

#include "stream/processor_internal.h"

/* librdkafka's rebalance callback (opaque = the proc). */
void ps_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts, void *opaque);
/* After an aborted transaction: forget everything in memory and restore
 * the assigned partitions exactly as a restarted instance would. */
int  ps_rewind_assigned(proc *p);
/* After a rebalance inside a consume call: seek every assigned partition
 * back to where handling stopped. */
int  ps_reseek_assigned(proc *p);

#endif
