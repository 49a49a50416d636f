/* mock_harness.h — the real Kafka processor (stream/processor.h) on
 * librdkafka's in-process mock cluster (rdkafka_mock.h): used by the
 * embedded `dpstream demo` and by the fault-injection tests
 * (tests/fault/).  No broker, no files: everything lives in this process.
 *
 * What the harness owns:
 *   - a mock cluster (one broker by default) reached through a throw-away
 *     producer handle, with the five dpstream topics created up front
 *     (the mock has no Admin API, so the processor runs with
 *     skip_create_topics);
 *   - a dp_stream_config pointing at it;
 *   - the processor, running dp_processor_run in a thread until stopped;
 *   - an idempotent input producer (updates keyed by stream id, like
 *     `dpstream produce`);
 *   - an output reader assigned to the synthetic, budget and dead-letter
 *     topics from their beginning (no consumer group), which reassembles
 *     releases with export_assemble.h ("latest copy wins", each release
 *     handed out once) and passes budget events on as they come.
 *
 * The mock's limits (docs/kafka.md §6) matter to what a caller may
 * conclude: read_committed readers also see aborted transactions, so a
 * release is only trustworthy after export_assemble's count + checksum
 * check, and a budget event may appear more than once (the caller keeps
 * the last copy per (stream, step)); each partition keeps only the newest
 * ~5 MiB, so inputs must be streamed step by step, not preloaded. */
#ifndef DP_APP_MOCK_HARNESS_H
#define DP_APP_MOCK_HARNESS_H

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stddef.h>
#include <stdint.h>

#include "connectors/export/export_assemble.h"
#include "core/drbg.h"
#include "stream/metrics.h"
#include "stream/stream_config.h"
#include "synth/common/synth.h"

typedef struct dp_mock_harness dp_mock_harness;

/* Start the mock cluster, create the topics, build the configuration and
 * the input producer and output reader.  The processor is not running yet. */
int  dp_mock_start(dp_mock_harness **out, const char *topic_prefix, json_t *streams, int brokers,
                   int partitions, char *errstr, size_t errstr_size);
void dp_mock_destroy(dp_mock_harness *h);   /* stops the processor first if needed */

rd_kafka_mock_cluster_t *dp_mock_cluster(dp_mock_harness *h);
const dp_stream_config  *dp_mock_config(const dp_mock_harness *h);

/* Run dp_processor_run in a thread with `key` (copied), instance id
 * `instance`, `chunk_records` records per message, no idle close. */
int  dp_mock_processor_start(dp_mock_harness *h, const dp_key *key, const char *instance,
                             uint32_t chunk_records, char *errstr, size_t errstr_size);
/* The metrics the next dp_mock_processor_start passes to the processor
 * (the caller keeps them; NULL: none), e.g. to count its aborted
 * transactions and rewinds. */
void dp_mock_set_metrics(dp_mock_harness *h, dp_metrics *m);
/* 1 while the processor thread has not returned. */
int  dp_mock_processor_running(dp_mock_harness *h);
/* Ask it to stop, join it; its status (DP_OK after a clean shutdown), its
 * message in errstr.  DP_OK if it was not running. */
int  dp_mock_processor_stop(dp_mock_harness *h, char *errstr, size_t errstr_size);

/* Encode one update and queue it on the updates topic, key = stream id. */
int  dp_mock_produce(dp_mock_harness *h, const dp_update *u, char *errstr, size_t errstr_size);
/* Wait until every queued update is acknowledged. */
int  dp_mock_flush(dp_mock_harness *h, int timeout_ms, char *errstr, size_t errstr_size);

typedef struct dp_mock_outputs {
    dp_export_sink sink;                               /* complete releases */
    int (*budget)(void *ctx, const dp_budget_event *e);   /* every budget event seen */
    void *ctx;                                            /* of budget and manifest_seen */
    /* Optional: every manifest copy seen (including, on the mock, those of
     * aborted transactions), before it is fed to the assembler. */
    int (*manifest_seen)(void *ctx, const dp_release_manifest *m, const uint8_t *checksum);
} dp_mock_outputs;

/* Read whatever the output topics hold now (waiting at most timeout_ms
 * for the first message), feeding releases and budget events to `out`.
 * Counts dead letters and undecodable messages (see the getters). */
int  dp_mock_poll_outputs(dp_mock_harness *h, int timeout_ms, const dp_mock_outputs *out,
                          char *errstr, size_t errstr_size);
uint64_t dp_mock_dead_letters(const dp_mock_harness *h);
uint64_t dp_mock_undecodable(const dp_mock_harness *h);
const dp_export_asm *dp_mock_assembler(const dp_mock_harness *h);

#endif
