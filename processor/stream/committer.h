/* committer.h — the processor's transactions and its one produce call
 * (committer.c).  Internal to processor/stream/.
 *
 * The committer's state (ps_committer: whether a transaction is open, the
 * commit running on its own thread, whether the state must be rewound) is
 * defined in committer.c and touched by nothing else: the other parts ask
 * and tell it through these functions. */
#ifndef DP_STREAM_COMMITTER_H
#define DP_STREAM_COMMITTER_H

#include "stream/processor_internal.h"

/* Its state, in proc.txn (created before the loop, freed after teardown). */
int  ps_committer_create(proc *p);   /* DP_OK or DP_ENOMEM */
/* Only after a fatal error, at teardown: let a commit still running on the
 * committer thread finish, and drop its outcome. */
void ps_committer_abandon(proc *p);
void ps_committer_free(proc *p);

/* Produce one message (copied) with its "dpstream.type" header; waits
 * while librdkafka's queue is full.  DP_OK or DP_EIO (logged). */
int  ps_produce(proc *p, rd_kafka_t *rk, const char *topic, int32_t partition, const char *type,
                const void *key, size_t key_len, const void *val, size_t val_len);
/* Open a transaction unless one is open (waits for a running commit). */
int  ps_txn_begin(proc *p);
/* Abort the open transaction; marks the state for rewinding. */
void ps_txn_abort(proc *p);
/* Progress records and offsets of every dirty partition, then commit:
 * on the committer thread unless `wait`. */
int  ps_txn_commit(proc *p, int wait);
/* Wait for a commit running on the committer thread, and take its outcome. */
int  ps_commit_wait(proc *p);
/* The same if that commit has already finished, without waiting: the loop
 * harvests outcomes as they come (the metrics count a transaction when it
 * commits, not when the next one needs the producer).  A failed commit is
 * aborted and marks the state for rewinding. */
int  ps_commit_poll(proc *p);

/* 1 if a transaction is open. */
int  ps_txn_is_open(const proc *p);
/* 1 if a transaction has been open for at least `ms` at monotonic time `now`. */
int  ps_txn_open_for(const proc *p, int64_t now, int64_t ms);
/* Handling failed (transaction trouble): abort the open transaction, if
 * any, and mark the state for rewinding. */
void ps_txn_fail(proc *p);
/* 1 if the state must be rewound to the last committed snapshot (an
 * aborted transaction). */
int  ps_txn_need_rewind(const proc *p);
/* A rewind begins: clears the mark and returns how many rewinds in a row
 * this is (a successful commit resets the count). */
int  ps_txn_rewinding(proc *p);
/* The message at partition pp's position was consumed: pp is dirty (its
 * progress goes into the next commit). */
void ps_txn_consumed(proc *p, ps_partition *pp);

#endif
