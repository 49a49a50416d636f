/* processor.h — the Kafka processor behind `dpstream run` (docs/design.md §1-§3,
 * §8).  Consumes the updates topic in a consumer group (key = stream id),
 * routes each stream to its synthesizer (stream_config.h), and for every
 * closed step commits one Kafka transaction holding the release (record
 * chunks + manifest), the budget event, the stream's snapshot, the
 * partition's progress record and the consumer offsets.  The parts:
 * consume_loop.c, committer.c, snapshot_publish.c, restore.c,
 * rebalance.c, driven by processor.c (processor_internal.h).
 *
 * Per input message (partition p, offset o):
 *   undecodable            -> dead letter MALFORMED
 *   no route               -> dead letter UNKNOWN_STREAM
 *   offset < skip_below    -> skipped: the restored snapshot holds it
 *   anything else          -> the step gate decides (synth/common/step_gate.h: use,
 *                             hold for the next step, ignore a duplicate
 *                             marker, reject with a reason, close the step),
 *                             the same module `dpstream replay` calls, so the
 *                             Kafka path and the offline path release the same
 *                             bytes for the same input and key
 *
 * --- One transaction per closed step ------------------------------------
 * A close produces, inside one Kafka transaction: the record chunks and the
 * manifest (synthetic topic, key = stream id), the budget event (budget
 * topic), the stream's snapshot (state topic, key = stream id; chunks
 * after the first under derived keys), a progress
 * record for every partition consumed since the last commit (state topic),
 * any dead letters of those partitions, and the consumer offsets
 * (send_offsets_to_transaction with the group metadata).  Dead letters
 * that arrive while no step closes are committed the same way on a short
 * timer.  Read-committed consumers therefore see a whole step or nothing.
 *
 * --- Several streams share a partition: what offset may be committed ------
 * Streams of one partition close at different offsets.  Stream S's
 * snapshot records skip_below(S) = the offset just after the message that
 * closed its last step; its in-memory state is that snapshot plus the
 * updates it accepted since, the first of which is at pending(S) (none if
 * it accepted nothing since).  After a crash everything in memory is lost,
 * so the committed offset of partition p must let every stream re-read its
 * un-snapshotted updates:
 *
 *     committed(p) = min(position(p), min over streams S of p with pending of pending(S))
 *
 * and on (re)assignment each stream of p is restored from its latest
 * snapshot, p is sought to that committed offset (stored in the progress
 * record of the same transaction — identical to the group's committed
 * offset, but read from the state topic together with the snapshots, so
 * the two can never disagree), and every update of S below skip_below(S)
 * is skipped because the snapshot already reflects it.  Rejected inputs
 * change no state; a rejection is re-derived on replay from the same state
 * and re-published only if its offset is at or above the partition's
 * committed `position` (its dead letter was not yet committed), so the
 * dead-letter topic, too, holds each rejection exactly once.
 *
 * Replaying from committed(p) re-executes exactly the ingests that were
 * lost, in log order, from exactly the snapshotted states, so every later
 * close — and, because noise is drawn from the keyed DRBG by (stream,
 * step, label), every released byte — is what an uninterrupted run emits.
 *
 * --- Step boundaries are log entries (docs/design.md §2) ----------------------
 * The idle timeout does not close a step: it appends a CLOSE_STEP marker
 * for the stream's open step to the stream's input partition (same key),
 * and the step closes when that marker is consumed, like any marker.
 * Wall-clock time only decides *when* a marker is appended; what a step
 * contains is decided by the marker's position in the log.  Duplicate
 * markers (two timers, a retry, a marker after a roster close) are
 * ignored.
 *
 * --- Failures -------------------------------------------------------------
 * Any error inside a transaction aborts it and rewinds: the assigned
 * partitions are restored from the state topic and sought back, exactly as
 * after a crash.  A fenced producer (a newer instance with the same
 * transactional.id) is fatal.  Revocation first commits (or, failing that,
 * aborts) the open transaction and then drops the revoked partitions'
 * streams.  A restore reads the state topic up to the high watermark seen
 * when it starts, so it waits for every transaction then open — a crashed
 * instance's until its successor (same transactional.id) fences it or the
 * broker's transaction timeout aborts it — and never restores state older
 * than what is already committed (see read_state_topic).
 *
 * --- Snapshots in chunks; wire format -------------------------------------
 * A snapshot's state is split into Snapshot messages of at most
 * --snapshot-chunk-bytes state bytes, all in the close's transaction, under
 * keys that cannot collide with other streams' (state_record.h); a restore
 * assembles only a complete set that agrees with the stream's chunk 0.
 * Every message is framed as the config's "wire" section says (plain Avro
 * or Confluent Schema Registry framing, stream_config.h).
 *
 * --- Throughput -----------------------------------------------------------
 * Messages are taken in poll batches (consume_batch), decoded without
 * avro-c (codec_update_decode.c), and consecutive plain updates of one
 * stream are ingested as a run with dp_synth_ingest_batch (run_flush: the
 * decisions are exactly the per-message ones above).  A step's commit
 * (flush + EndTxn) runs on a committer thread while consumption goes on
 * (txn_commit); anything that would produce waits for it first.
 *
 * A restore holds in memory the newest state records of the partitions it
 * restores (all their streams' snapshots at once), not the other
 * instances'; streaming the restore stream by stream is not implemented. */
#ifndef DP_STREAM_PROCESSOR_H
#define DP_STREAM_PROCESSOR_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "core/drbg.h"
#include "stream/metrics.h"
#include "stream/stream_config.h"

/* Which half of the work an instance does (docs/kafka.md §10).  ALL:
 * today's single process, which refuses sharded routes.  INGEST: unsharded
 * routes exactly as ALL; each sharded stream per (stream, partition) — a
 * shard — whose closed steps' exact statistics go to `<prefix>.stats` in
 * the transaction of its input offsets.  RELEASE: consumes `<prefix>.stats`
 * (group `<group>.release`), merges each sharded stream's steps once every
 * shard's statistics are in, and releases them; it reads no updates, so
 * unsharded routes are not its work. */
typedef enum dp_processor_role {
    DP_PROCESSOR_ROLE_ALL = 0,
    DP_PROCESSOR_ROLE_INGEST,
    DP_PROCESSOR_ROLE_RELEASE,
} dp_processor_role;

typedef struct dp_processor_options {
    const dp_stream_config *config;
    const dp_key *noise_key;              /* secret noise key (never logged, never snapshotted) */
    const dp_key *state_key;              /* NULL: snapshots unencrypted */
    const char   *instance_id;            /* stable across restarts: transactional.id suffix;
                                             NULL or "": the host name (dp_processor_default_instance_id) */
    const char   *bootstrap_override;     /* NULL or replaces bootstrap.servers */
    uint32_t      chunk_records;          /* synthetic records per Kafka message (>= 1) */
    int64_t       idle_timeout_ms;        /* 0: no idle close; else append CLOSE_STEP after this much silence */
    int64_t       progress_interval_ms;   /* info log period (0: never) */
    int64_t       dlq_commit_ms;          /* commit pending dead letters at least this often */
    int64_t       debug_commit_delay_ms;  /* testing aid: pause inside every transaction before
                                             committing (its outputs flushed; event txn_held), so
                                             a kill -9 lands mid-transaction */
    volatile sig_atomic_t *stop;          /* set by a signal handler: shut down cleanly */
    size_t        snapshot_chunk_bytes;   /* max bytes of a content chunk and of a manifest piece
                                             (state_cas.h; 0: the default) */
    dp_metrics   *metrics;                /* NULL: none (`--http` off); see metrics.h */
    int64_t       debug_restore_delay_ms; /* testing aid: pause inside every restore (after
                                             restore_start, its readers connected, before it
                                             reads), so a test sees /readyz answer 503 or
                                             kills it mid-restore */
    int64_t       connect_timeout_ms;     /* give up when no broker answers this long (0: the
                                             default, DP_KAFKA_DEFAULT_CONNECT_TIMEOUT_MS) */
    dp_registry  *registry;               /* NULL: none; else the config's schema registry, after
                                             dp_registry_setup (registry_subjects.h): input Updates
                                             framed with another schema id are read through their
                                             writer schema, fetched from it once per id */
    int           skip_create_topics;     /* the output topics exist already: do not call
                                             rd_kafka_CreateTopics (librdkafka's mock cluster
                                             has no Admin API; the embedded demo creates them) */
    dp_processor_role role;               /* ALL (0) unless `run --role` says otherwise */
} dp_processor_options;

/* A snapshot's state is split into Snapshot messages of at most this many
 * state bytes (state_record.h).  The default leaves room under the
 * broker's default message.max.bytes (~1 MiB) for the message's other
 * fields and for the record batch overhead; the maximum keeps 256 KiB of
 * that room; the minimum only guards against absurd chunk counts. */
#define DP_PROCESSOR_DEFAULT_SNAPSHOT_CHUNK_BYTES (512 * 1024)
#define DP_PROCESSOR_MIN_SNAPSHOT_CHUNK_BYTES     64
#define DP_PROCESSOR_MAX_SNAPSHOT_CHUNK_BYTES     (768 * 1024)

/* Runs until *stop.  DP_OK after a clean shutdown (open transaction
 * committed or aborted, group left); otherwise a negative status with the
 * reason in errstr (fenced by a newer instance, fatal Kafka error, state
 * that does not restore). */
/* Consumer properties the processor sets unless the config's "kafka"
 * object sets them.  librdkafka 2.0.2 stops fetching a partition once its
 * local queue holds queued.min.messages (default 100 000) or
 * queued.max.messages.kbytes, and looks again only about once a second
 * (fetch.queue.backoff.ms, which shortens that, arrives in 2.2): a
 * consumer that handles more than ~10^5 messages a second then starves.
 * A queue of ~1 s of input avoids that, for up to ~512 MB of memory.
 * bench/throughput measures both settings. */
extern const char *const dp_processor_consumer_defaults[][2];
extern const size_t dp_processor_consumer_defaults_n;

int dp_processor_run(const dp_processor_options *o, char *errstr, size_t errstr_size);

/* The instance id of an instance started without one: the host name,
 * [A-Za-z0-9._-] kept and anything else mapped to '_', at most 64
 * characters — stable across restarts of one host (or container, or pod)
 * and distinct between hosts, so instances on different hosts never share
 * a transactional.id.  DP_OK, or DP_EIO if the host has no name. */
int dp_processor_default_instance_id(char *out, size_t out_size);

/* The transactional.id used for (group id, instance id): "<group>.<instance>". */
int dp_processor_transactional_id(const char *group_id, const char *instance_id,
                                  char *out, size_t out_size);

#endif
