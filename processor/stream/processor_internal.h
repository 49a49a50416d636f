/* processor_internal.h — the state the parts of the Kafka processor share
 * (processor.c, consume_loop.c, committer.c, snapshot_publish.c,
 * restore.c, rebalance.c), with the part that owns (writes) each field,
 * and the few helpers processor_state.c gives them all.  Not for use outside
 * processor/stream/. */
#ifndef DP_STREAM_PROCESSOR_INTERNAL_H
#define DP_STREAM_PROCESSOR_INTERNAL_H

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/codec.h"
#include "core/buf.h"
#include "core/bytes_map.h"
#include "stream/processor.h"
#include "stream/stream_config.h"
#include "synth/common/step_gate.h"
#include "synth/common/synth.h"

#define KAFKA_TIMEOUT_MS   30000
#define POLL_MS            100
#define BATCH_MAX          1024   /* messages per consume call */
#define PREFETCH_AHEAD     4
#define NO_OFFSET          (-1)

/* One stream: created by consume_loop (first update) or restore. */
typedef struct ps_stream {
    char                  *id;             /* owned, NUL-terminated */
    size_t                 id_len;
    const dp_stream_route *route;
    dp_synth              *synth;
    dp_step_gate           gate;           /* consume_loop: what each update does (synth/common/step_gate.h) */
    int32_t                partition;
    int64_t                skip_below;     /* consume_loop, restore: updates at lower offsets are in the snapshot */
    int64_t                pending;        /* consume_loop: first accepted un-snapshotted update, or NO_OFFSET */
    int64_t                step_opened_ms; /* consume_loop, restore: monotonic time the open step opened
                                              (a public clock: the step timer, never data) */
    uint64_t               marker_step;    /* consume_loop: open step a marker was appended for (0: none) */
    int64_t                marker_ms;      /* consume_loop */
    /* snapshot_publish (set), restore (set): what the last committed
     * snapshot left on the state topic — its content chunks' digests
     * (sorted, unique; state_cas.h) and how many index keys it used — so
     * the next one writes only new chunks and tombstones the rest.  An
     * aborted transaction rewinds by restoring, which resets both. */
    dp_buf                 cas_digests;
    uint32_t               index_chunks;
} ps_stream;

/* One partition of the updates topic. */
typedef struct ps_partition {
    int     assigned;      /* restore (set), rebalance (cleared) */
    int64_t position;      /* consume_loop: offset after the last consumed message, or NO_OFFSET */
    int64_t resume;        /* restore: where the last restore started it (an offset or a logical one) */
    int64_t dlq_below;     /* restore: rejections below this offset are already published */
    int     dirty;         /* consume_loop (set), committer (cleared): consumed since the last commit */
    /* rebalance (set), restore (cleared): revoked by an eager rebalance
     * right after a commit, its streams kept in memory in case the same
     * rebalance gives it back; kept_end: its state partition's high
     * watermark after that commit (docs/kafka.md §2) */
    int     kept;
    int64_t kept_end;
    int64_t handled_ms;    /* consume_loop: when its last message was handled (monotonic ms; 0: none) */
    uint64_t handled_gen;  /* consume_loop: the rebalance generation that message was handled in */
} ps_partition;

/* A record copied out of the sink callback (its payload is borrowed). */
typedef struct ps_chunk {
    dp_synth_record *recs;
    size_t           n, cap;
    size_t          *row_at;   /* per record: index of its row in `rows` */
    size_t          *pt_at;    /* per record: index of its point in `pts` */
    size_t           at_cap;
    int32_t         *rows;     /* all row payloads of the chunk, back to back */
    size_t           rows_n, rows_cap;
    double          *pts;
    size_t           pts_n, pts_cap;
} ps_chunk;

typedef struct proc {
    /* processor.c: set up once, read by all */
    const dp_processor_options *o;
    const dp_stream_config     *cfg;
    char                        group_id[256];
    char                        instance_id[128];    /* the option's, or the host name */
    size_t                      max_message_bytes;   /* producer message.max.bytes */
    rd_kafka_t                 *consumer;
    rd_kafka_t                 *producer;     /* transactional */
    rd_kafka_t                 *marker_producer;
    dp_codec                   *codec;
    rd_kafka_queue_t           *queue;        /* the consumer's queue */
    /* consume_loop and restore add streams; rebalance and processor.c drop them */
    dp_bytes_map                streams;      /* id -> ps_stream* */
    ps_partition               *parts;        /* grown by ps_part_get */
    int32_t                     n_parts;
    int32_t                     n_input_partitions;  /* processor_state (cached), rebalance resets: 0 = unknown */
    int32_t                     updates_partitions;  /* restore: the updates topic's partition count its
                                                        last restore checked the state against (committer
                                                        records it in progress records; 0 = unknown) */
    /* committer */
    int                         txn_open;
    int64_t                     txn_begin_ms;
    int                         committing;   /* a commit_transaction runs on its own thread */
    pthread_t                   committer;
    rd_kafka_error_t           *commit_result;
    int64_t                     commit_handoff_ms, commit_open_ms, commit_flush_ms, commit_done_ms;
    int                         need_rewind;     /* committer, consume loop; rebalance clears it */
    int                         rewinds_in_row;  /* rebalance counts, committer resets on success */
    /* any part (ps_set_fatal): stop the processor */
    int                         fatal;
    int                         fatal_refused;   /* restore: the fatal error is a privacy refusal */
    char                        fatal_msg[1200];
    /* rebalance */
    uint64_t                    generation;   /* bumped by every rebalance callback */
    /* consume_loop: the poll batch — messages, their decoded updates
     * (borrowing from the messages and from batch_store) and, for runs,
     * their ingest verdicts */
    rd_kafka_message_t        **batch;
    dp_update                  *batch_upd;
    dp_update_store            *batch_store;
    dp_reject_reason           *batch_reason;
    int64_t                     now;          /* processor.c: monotonic ms, read once per batch */
    ps_stream                  *run_s;        /* consume_loop: the run being collected */
    size_t                      run_first, run_n;
    /* snapshot_publish: the release being written */
    dp_codec_checksum           cksum;
    ps_chunk                    chunk;
    ps_stream                  *closing;
    uint64_t                    closing_step;
    uint32_t                    chunk_index;
    dp_buf                      enc;          /* scratch for every encoder (one thread) */
    /* snapshot_publish: the serialized state of the stream being
     * snapshotted, kept across closes (a fresh buffer per close faulted in
     * ~2× the state in new pages every step — 24 MB at 10^6 individuals);
     * the bytes a close wrote are wiped when it is done with them, so the
     * buffer holds no state between closes */
    dp_buf                      snap_state;
    /* consume_loop (and processor.c's progress log) */
    uint64_t                    n_msgs, n_steps, n_dlq, n_markers;
    uint64_t                    last_msgs;
    int64_t                     last_progress_ms;
} proc;

/* processor_state.c */
int64_t       ps_now_ms(void);   /* monotonic */
void          ps_set_fatal(proc *p, const char *fmt, const char *detail);
ps_partition *ps_part_get(proc *p, int32_t id);   /* grows the table; NULL if out of memory */
ps_stream    *ps_stream_new(proc *p, const char *id, size_t len, const dp_stream_route *route, int32_t partition);
void          ps_stream_free(ps_stream *s);
int           ps_drop_unassigned_streams(proc *p);   /* keeps those of kept partitions */
/* Forget the kept partitions (ps_partition.kept) and drop their streams. */
int           ps_forget_kept(proc *p);
/* The updates topic's partition count (metadata, cached until the next
 * rebalance), or 0 if the broker did not say. */
int32_t       ps_input_partition_count(proc *p);

#endif
