/* processor.h — the Kafka processor behind `dpstream run` (DESIGN.md §1-§3).
 *
 * Consumes the updates topic in a consumer group (key = stream id), routes
 * each stream to its synthesizer (stream_config.h), and for every closed
 * step commits one Kafka transaction holding the release (record chunks +
 * manifest), the budget event, the stream's snapshot, the partition's
 * progress record and the consumer offsets.  See processor.c for the
 * restore/commit protocol that makes a crash-and-replay exact. */
#ifndef DP_STREAM_PROCESSOR_H
#define DP_STREAM_PROCESSOR_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "core/drbg.h"
#include "stream/stream_config.h"

typedef struct dp_processor_options {
    const dp_stream_config *config;
    const dp_key *noise_key;              /* secret noise key (never logged, never snapshotted) */
    const dp_key *state_key;              /* NULL: snapshots unencrypted */
    const char   *instance_id;            /* stable across restarts: transactional.id suffix */
    const char   *bootstrap_override;     /* NULL or replaces bootstrap.servers */
    uint32_t      chunk_records;          /* synthetic records per Kafka message (>= 1) */
    int64_t       idle_timeout_ms;        /* 0: no idle close; else append CLOSE_STEP after this much silence */
    int64_t       progress_interval_ms;   /* info log period (0: never) */
    int64_t       dlq_commit_ms;          /* commit pending dead letters at least this often */
    int64_t       debug_commit_delay_ms;  /* testing aid: pause inside every transaction before
                                             committing, so a kill -9 lands mid-transaction */
    volatile sig_atomic_t *stop;          /* set by a signal handler: shut down cleanly */
    size_t        snapshot_chunk_bytes;   /* state bytes per Snapshot message (0: the default) */
    int           skip_create_topics;     /* the output topics exist already: do not call
                                             rd_kafka_CreateTopics (librdkafka's mock cluster
                                             has no Admin API; the embedded demo creates them) */
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

/* The transactional.id used for (group id, instance id): "<group>.<instance>". */
int dp_processor_transactional_id(const char *group_id, const char *instance_id,
                                  char *out, size_t out_size);

#endif
