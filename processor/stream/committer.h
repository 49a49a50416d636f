/* committer.h — the processor's transactions and its one produce call
 * (committer.c).  Internal to processor/stream/. */
#ifndef DP_STREAM_COMMITTER_H
#define DP_STREAM_COMMITTER_H

#include "stream/processor_internal.h"

/* Produce one message (copied) with its "dpstream.type" header; waits
 * while librdkafka's queue is full.  DP_OK or DP_EIO (logged). */
int  ps_produce(proc *p, rd_kafka_t *rk, const char *topic, int32_t partition, const char *type,
                const void *key, size_t key_len, const void *val, size_t val_len);
/* Open a transaction unless one is open (waits for a running commit). */
int  ps_txn_begin(proc *p);
/* Abort the open transaction; sets need_rewind. */
void ps_txn_abort(proc *p);
/* Progress records and offsets of every dirty partition, then commit:
 * on the committer thread unless `wait`. */
int  ps_txn_commit(proc *p, int wait);
/* Wait for a commit running on the committer thread, and take its outcome. */
int  ps_commit_wait(proc *p);
/* The same if that commit has already finished, without waiting: the loop
 * harvests outcomes as they come (the metrics count a transaction when it
 * commits, not when the next one needs the producer). */
int  ps_commit_poll(proc *p);

#endif
