/* metrics.h — what `dpstream run` tells its operators (README "Operating
 * dpstream"): Prometheus metrics, health, and the per-stream figures the
 * live page draws.
 *
 * Threads.  Everything that records is called from the processor's thread
 * (the consume loop, its rebalance and statistics callbacks).  The loop
 * publishes an immutable view (dp_metrics_view: the rendered Prometheus
 * text, the streams JSON and each stream's history JSON) at most every
 * publish_ms; the HTTP server's threads take the current view under a
 * short mutex and never touch the loop's state, so a slow scrape never
 * slows the loop.  Health (heartbeat, restoring, fatal) is read live from
 * atomics, because a restore runs inside a rebalance callback and the loop
 * publishes nothing while it lasts.
 *
 * Transactions.  A release, its budget event and the dead letters of a
 * transaction are staged and counted only when the transaction commits
 * (dropped when it aborts: the rewind re-releases the same bytes later), so
 * the figures equal what read-committed consumers of the output topics see.
 *
 * Two classes of figures (docs/privacy.md §1: every published byte is
 * charged or public):
 *   public    functions of the configuration, the step boundaries and what
 *             the stream released — per stream: status, steps released,
 *             the last release's record count and manifest figures, the
 *             budget spent/total and its (ε, δ) equivalent; the process's
 *             start time and the build.  Always served.
 *   input     exact counts about the private input: updates consumed and
 *             accepted, dead letters by reason, consumer lag, close and
 *             commit latencies (they grow with the step's data),
 *             transactions, restores, librdkafka's traffic.  The same facts
 *             the dead-letter topic and the broker's offsets hold, so they
 *             are served only with input_metrics (`--http-input-metrics`),
 *             for operators who may read the input topic. */
#ifndef DP_STREAM_METRICS_H
#define DP_STREAM_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "synth/common/synth.h"

typedef struct dp_metrics dp_metrics;

typedef struct dp_metrics_options {
    int      input_metrics;    /* serve the input class too */
    int64_t  publish_ms;       /* view period (default 1000) */
    int64_t  stall_ms;         /* /healthz fails when the loop has not turned for this long (default 60000) */
    uint32_t history_steps;    /* steps kept per stream for the page (default 500) */
    const char *version;       /* dpstream_build_info's label */
} dp_metrics_options;

int  dp_metrics_create(dp_metrics **out, const dp_metrics_options *o);
void dp_metrics_destroy(dp_metrics *m);
int  dp_metrics_input_enabled(const dp_metrics *m);

/* --- the processor's thread ----------------------------------------------------- */

/* One turn of the loop: the heartbeat, and a new view when one is due. */
void dp_metrics_tick(dp_metrics *m, int64_t now_ms);
void dp_metrics_consumed(dp_metrics *m, int32_t partition, uint64_t n);
void dp_metrics_accepted(dp_metrics *m, uint64_t n);
void dp_metrics_lag(dp_metrics *m, int32_t partition, int64_t lag);   /* -1: unknown */
void dp_metrics_partitions(dp_metrics *m, int assigned);              /* how many are assigned now */

/* Staged in the open transaction (see the header). */
void dp_metrics_stage_dead_letter(dp_metrics *m, dp_reject_reason reason);
void dp_metrics_stage_release(dp_metrics *m, const dp_release_manifest *man, double close_seconds);
void dp_metrics_stage_budget(dp_metrics *m, const dp_budget_event *e);
/* The close that staged the last release took this long (known only after
 * its snapshot is written, so set afterwards). */
void dp_metrics_stage_close_time(dp_metrics *m, double close_seconds);
void dp_metrics_txn_committed(dp_metrics *m, double commit_seconds);
void dp_metrics_txn_aborted(dp_metrics *m);

/* A stream restored from its snapshot: its public figures as the ledger
 * says (the last release's record count and history are not in a
 * snapshot; they appear with the next release). */
void dp_metrics_restored_stream(dp_metrics *m, const char *id, size_t len, const char *synthesizer,
                                const dp_ledger *l, uint64_t released_steps, int exhausted, double delta);
void dp_metrics_restore_begin(dp_metrics *m, int64_t now_ms);
void dp_metrics_restore_end(dp_metrics *m, int64_t now_ms);
void dp_metrics_rewind(dp_metrics *m);
/* The processor stops with an error: /readyz answers 503 with it. */
void dp_metrics_fatal(dp_metrics *m, const char *msg);
/* librdkafka's statistics JSON (statistics.interval.ms). */
void dp_metrics_kafka_stats(dp_metrics *m, const char *json, size_t len);

/* Sharded streams' step progress (docs/kafka.md §10) — public: step
 * boundaries, and which shard's statistics of a step have arrived is one
 * (a shard publishes for every step it closes, on markers or the public
 * step timer, never on data).  Taken afresh for each view: when
 * dp_metrics_due says a view is due, the processor calls progress_begin,
 * then one call per shard it ingests and per sharded stream it releases
 * (release_progress returns the stream's `arrived` array of `shards`
 * bytes for the caller to fill — arrived[i]: shard i's statistics of
 * next_step are in — or NULL without memory), then tick. */
int  dp_metrics_due(const dp_metrics *m, int64_t now_ms);
void dp_metrics_progress_begin(dp_metrics *m);
void dp_metrics_shard_progress(dp_metrics *m, const char *id, size_t len, int32_t shard, uint64_t open_step);
uint8_t *dp_metrics_release_progress(dp_metrics *m, const char *id, size_t len, uint64_t next_step,
                                     uint32_t shards);

/* --- the HTTP server's threads ------------------------------------------------------ */

typedef struct dp_metrics_view dp_metrics_view;

/* The current view (never NULL after create); give it back with release. */
dp_metrics_view *dp_metrics_acquire(dp_metrics *m);
void dp_metrics_release(dp_metrics *m, dp_metrics_view *v);
const char *dp_metrics_view_prometheus(const dp_metrics_view *v, size_t *len);
const char *dp_metrics_view_streams(const dp_metrics_view *v, size_t *len);
/* NULL if the view has no such stream. */
const char *dp_metrics_view_history(const dp_metrics_view *v, const char *id, size_t id_len, size_t *len);

/* 1 if the loop turned within stall_ms (a running restore counts as
 * turning); else 0 and why. */
int dp_metrics_alive(dp_metrics *m, int64_t now_ms, char *why, size_t n);
/* 1 once partitions are assigned and restored and no fatal error
 * happened; else 0 and why ("restoring 2 partition(s)", …). */
int dp_metrics_ready(dp_metrics *m, char *why, size_t n);

/* Prometheus label value escaping (\\, \", \n), exposed for tests. */
void dp_metrics_escape_label(const char *s, size_t len, char *out, size_t out_size);

#endif
