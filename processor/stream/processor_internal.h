/* processor_internal.h — the state the parts of the Kafka processor share
 * (processor.c, consume_loop.c, committer.c, snapshot_publish.c,
 * restore.c, restore_read.c, rebalance.c, processor_state.c), with the one
 * file that writes each field, and the helpers processor_state.c gives them
 * all.  Not for use outside processor/stream/. */
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
#include "stream/stats_record.h"
#include "stream/stream_config.h"
#include "synth/common/step_gate.h"
#include "synth/common/synth.h"

#define KAFKA_TIMEOUT_MS   30000
#define POLL_MS            100
#define BATCH_MAX          1024   /* messages per consume call */
#define PREFETCH_AHEAD     4
#define NO_OFFSET          (-1)
#define DP_SHARD_TABLE_KEY_MAX 1024   /* a shard's table key: stream id ‖ 0x00 ‖ partition */

/* Who writes what.  Every field below has exactly one writing file,
 * named beside it; the others only read it.  Two moments are not counted as
 * writes of a field: a stream's creation (ps_stream_new, then the creator —
 * consume_loop's open_stream for a new stream, restore's restore_stream for
 * a restored one — fills in what it starts with) and a partition's
 * (re)initialization when it is assigned (ps_part_assign; processor_state).
 * The committer's own state is not here at all: committer.c keeps it in
 * its ps_committer, which nothing else touches (committer.h). */

/* What a ps_stream is (docs/kafka.md §10): a whole stream (role all, or an
 * unsharded route under the ingest role), one shard of a sharded stream
 * (ingest role: its ingest half, keyed in the table by stream id ‖ 0x00 ‖
 * partition), or a sharded stream's release half and merger (release role). */
typedef enum ps_stream_kind { PS_STREAM_WHOLE = 0, PS_STREAM_SHARD, PS_STREAM_RELEASE } ps_stream_kind;

/* One stream: created by consume_loop (first update) or restore. */
typedef struct ps_stream {
    char                  *id;             /* at creation: owned, NUL-terminated */
    size_t                 id_len;
    const dp_stream_route *route;
    dp_synth              *synth;          /* at creation (then changed through the gate: consume_loop) */
    dp_step_gate           gate;           /* consume_loop: what each update does (synth/common/step_gate.h) */
    int32_t                partition;      /* at creation */
    int64_t                skip_below;     /* consume_loop: updates at lower offsets are in the snapshot */
    int64_t                pending;        /* consume_loop: first accepted un-snapshotted update, or NO_OFFSET */
    int64_t                step_opened_ms; /* consume_loop: monotonic time the open step opened
                                              (a public clock: the step timer, never data) */
    uint64_t               marker_step;    /* consume_loop: open step a marker was appended for (0: none) */
    int64_t                marker_ms;      /* consume_loop */
    /* snapshot_publish: what the last committed snapshot left on the state
     * topic — its content chunks' digests (sorted, unique; state_cas.h) and
     * how many index keys it used — so the next one writes only new chunks
     * and tombstones the rest.  A restored stream starts from its snapshot's;
     * an aborted transaction rewinds by restoring, which resets both. */
    dp_buf                 cas_digests;
    uint32_t               index_chunks;
    ps_stream_kind         kind;           /* at creation */
    char                  *tkey;           /* at creation: its key in proc.streams (ps_stream_table_key) */
    size_t                 tkey_len;
    dp_stats_merger        merger;         /* release_loop (PS_STREAM_RELEASE only): the pending steps */
} ps_stream;

/* One partition of the updates topic (an element of proc.parts). */
typedef struct ps_partition {
    int     assigned;      /* processor_state: ps_part_assign (set), ps_part_unassign (cleared) */
    int64_t position;      /* consume_loop: offset after the last consumed message, or NO_OFFSET */
    int64_t resume;        /* restore: where the last restore started it (an offset or a logical one) */
    int64_t dlq_below;     /* restore: rejections below this offset are already published */
    int     dirty;         /* committer (ps_txn_consumed sets, a commit clears): consumed since the last commit */
    /* processor_state (ps_part_keep sets, ps_part_take_back, ps_forget_kept
     * and ps_part_assign clear): revoked by an eager rebalance right after
     * a commit, its streams kept in memory in case the same rebalance gives
     * it back; kept_end: its state partition's high watermark after that
     * commit (docs/kafka.md §2) */
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

/* committer.c's own state (defined there; committer.h). */
typedef struct ps_committer ps_committer;

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
    dp_codec                   *codec;        /* (consume_loop teaches it writer schemas: codec.h) */
    rd_kafka_queue_t           *queue;        /* the consumer's queue */
    /* processor.c: the loop's clock and its progress log */
    int64_t                     now;          /* monotonic ms, read once per batch */
    uint64_t                    last_msgs;    /* the progress log's last look at n_msgs */
    int64_t                     last_progress_ms;
    /* processor_state: the tables (ps_stream_put adds a stream — consume_loop's
     * new ones, restore's restored ones —, ps_drop_unassigned_streams drops
     * those of partitions no longer assigned; ps_part_get grows the partition
     * table) */
    dp_bytes_map                streams;      /* id -> ps_stream* */
    ps_partition               *parts;
    int32_t                     n_parts;
    int32_t                     n_input_partitions;  /* processor_state: cached; 0 = unknown (rebalance
                                                        asks to forget it: ps_input_partitions_forget) */
    /* processor_state (ps_set_fatal, ps_set_refused): stop the processor */
    int                         fatal;
    int                         fatal_refused;   /* the fatal error is a privacy refusal */
    char                        fatal_msg[1200];
    /* restore_read: the updates topic's partition count its last restore
     * checked the state against (committer records it in progress records;
     * 0 = unknown) */
    int32_t                     updates_partitions;
    /* committer: everything about transactions (committer.h) */
    ps_committer               *committer;
    /* rebalance */
    uint64_t                    generation;   /* bumped by every rebalance callback */
    /* consume_loop: the poll batch — messages, their decoded updates
     * (borrowing from the messages and from batch_store) and, for runs,
     * their ingest verdicts */
    rd_kafka_message_t        **batch;
    dp_update                  *batch_upd;
    dp_update_store            *batch_store;
    dp_reject_reason           *batch_reason;
    ps_stream                  *run_s;        /* consume_loop: the run being collected */
    size_t                      run_first, run_n;
    dp_buf                      loop_enc;     /* consume_loop: dead letters and markers */
    uint64_t                    n_msgs, n_steps, n_dlq, n_markers;   /* consume_loop: progress counters */
    /* snapshot_publish: the release being written */
    dp_codec_checksum           cksum;
    ps_chunk                    chunk;
    ps_stream                  *closing;
    uint64_t                    closing_step;
    uint32_t                    chunk_index;
    dp_buf                      enc;          /* scratch for its encoders */
    /* snapshot_publish: the serialized state of the stream being
     * snapshotted, kept across closes (a fresh buffer per close faulted in
     * ~2× the state in new pages every step — 24 MB at 10^6 individuals);
     * the bytes a close wrote are wiped when it is done with them, so the
     * buffer holds no state between closes */
    dp_buf                      snap_state;
    /* processor.c: the roles (docs/kafka.md §10) */
    char                        topic_stats[256];    /* <prefix>.stats */
    char                        topic_release_state[256];   /* <prefix>.release-state */
    dp_stream_config            role_cfg;            /* release role: cfg with the stats topic as its input and
                                                        <prefix>.release-state as its state topic */
    int32_t                     shard_count;         /* release role: the updates topic's partition count */
    dp_stats                    merged;              /* release_loop: scratch for a step's merged statistics */
} proc;

/* processor_state.c */
int64_t       ps_now_ms(void);   /* monotonic */
void          ps_state_init(proc *p);   /* empty tables */
void          ps_state_free(proc *p);   /* every stream, both tables */
/* Stop the processor with this message (the first one stays); _refused:
 * the error is a privacy refusal (exit status DP_EKEY). */
void          ps_set_fatal(proc *p, const char *fmt, const char *detail);
void          ps_set_refused(proc *p, const char *fmt, const char *detail);
ps_partition *ps_part_get(proc *p, int32_t id);   /* grows the table; NULL if out of memory */
/* Partition id newly assigned: its entry reset (assigned, nothing consumed,
 * resuming at the beginning until a restore says otherwise); NULL if out of
 * memory. */
ps_partition *ps_part_assign(proc *p, int32_t id);
/* Partition id (every partition if id < 0) no longer assigned. */
void          ps_part_unassign(proc *p, int32_t id);
ps_stream    *ps_stream_new(proc *p, const char *id, size_t len, const dp_stream_route *route, int32_t partition);
/* The kind a stream of `route` has in this instance's role. */
ps_stream_kind ps_stream_kind_of(const proc *p, const dp_stream_route *route);
/* A shard's key in the stream table (a whole or release stream's is its
 * id): id ‖ 0x00 ‖ partition (4 bytes, big-endian) into out[0..id_len+5),
 * its length returned; 0 if it does not fit. */
size_t        ps_shard_table_key(const char *id, size_t id_len, int32_t partition, char *out, size_t out_size);
void          ps_stream_free(ps_stream *s);
/* Put s in the stream table, replacing (and freeing) any stream of its id;
 * DP_OK, or DP_ENOMEM with s freed. */
int           ps_stream_put(proc *p, ps_stream *s);
int           ps_drop_unassigned_streams(proc *p);   /* keeps those of kept partitions */
/* Partition id (if assigned) revoked with its streams kept in memory; end:
 * its state partition's high watermark after the revocation's commit. */
void          ps_part_keep(proc *p, int32_t id, int64_t end);
/* Kept partition id assigned again, its streams as they were. */
void          ps_part_take_back(proc *p, int32_t id);
/* Forget the kept partitions (ps_partition.kept) and drop their streams. */
int           ps_forget_kept(proc *p);
/* The updates topic's partition count (metadata, cached until the next
 * rebalance forgets it), or 0 if the broker did not say. */
int32_t       ps_input_partition_count(proc *p);
void          ps_input_partitions_forget(proc *p);

#endif
