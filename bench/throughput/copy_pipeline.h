/* copy_pipeline.h — bench_throughput's third pass (issue 41 §1): the fair
 * ceiling for `dpstream run`.  A bare librdkafka consume→produce pipeline
 * with no dpstream code: it consumes the same updates topic with the
 * processor's consumer settings (read_committed) and, at each step's last
 * message (the CLOSE_STEP marker), produces in one transaction exactly the
 * messages dpstream's transaction for that step held — its release chunks
 * and manifest, its budget event, its snapshot records and progress record,
 * byte for byte as dpstream encoded them (read back from the dpstream
 * pass's output topics: the plan) — sends the consumed offsets to the
 * transaction and commits it on a second thread while consuming goes on,
 * as the processor's committer does (docs/kafka.md §2).  What any
 * exactly-once C processor must pay with this client library.
 *
 * Owns: the plan (its messages, grouped by transaction) and the pass's
 * clients.  Calls: librdkafka, kafka_util (client configuration, the type
 * header), bench_kafka (the thread record the budget watcher polls). */
#ifndef BENCH_COPY_PIPELINE_H
#define BENCH_COPY_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "bench_kafka.h"
#include "core/buf.h"
#include "stream/stream_config.h"

enum { COPY_SYNTHETIC = 0, COPY_BUDGET = 1, COPY_STATE = 2, COPY_TOPICS = 3 };

typedef struct copy_msg {
    uint8_t  topic;     /* COPY_SYNTHETIC, COPY_BUDGET or COPY_STATE */
    uint8_t  type;      /* index into copy_plan.types (the "dpstream.type" header) */
    uint32_t txn;       /* 0-based transaction (= step - 1) */
    size_t   key_at, key_len;
    size_t   val_at;
    int64_t  val_len;   /* -1: a tombstone (no value) */
} copy_msg;

typedef struct copy_plan {
    copy_msg *msgs;          /* transaction by transaction; within one, synthetic, budget, state */
    size_t    n, cap;
    size_t   *txn_start;     /* [t] = first message of transaction t; [n_txn] = n */
    size_t    n_txn;
    dp_buf    bytes;         /* every key and value */
    char      types[8][40];
    size_t    n_types;
    uint64_t  msgs_per[COPY_TOPICS], bytes_per[COPY_TOPICS];   /* keys + values, per output topic */
} copy_plan;

/* Read the committed outputs of `cfg`'s processor (synthetic, budget and
 * state topics, one partition each) into a plan of `steps` transactions:
 * a transaction ends where a partition's offsets skip one (its commit
 * marker); the state topic's layout marker (not transactional) is left
 * out.  Fails unless every topic splits into exactly `steps` transactions. */
int copy_plan_read(copy_plan *pl, const dp_stream_config *cfg, uint64_t steps, int64_t deadline_us, char *errstr,
                   size_t errn);
void copy_plan_free(copy_plan *pl);

typedef struct copy_pass {
    proc_thread             t;        /* first: proc_running / proc_stop / watcher_wait take &t */
    const dp_stream_config *in;       /* its updates topic and client properties */
    const dp_stream_config *out;      /* its synthetic, budget and state topics */
    const copy_plan        *plan;
    char                    group[200], txid[240];
    uint64_t                per_step; /* messages per step; the last is the marker */
    uint64_t                expect;   /* messages in all */
    uint64_t                consumed, txns, produced;
} copy_pass;

/* Start the pipeline in a thread (named "dp-copy"); proc_stop(&c->t, ...)
 * stops it and reports its error. */
int copy_start(copy_pass *c, const dp_stream_config *in, const dp_stream_config *out, const copy_plan *plan,
               const char *group, uint64_t per_step, uint64_t expect, char *errstr, size_t errn);

#endif
