/* log.h — leveled logging to stderr for the Kafka processor and the
 * commands that talk to Kafka.
 *
 * Logs go to stderr only, one line each, in one of two formats chosen once
 * at startup (dp_log_set_format, `--log-format`):
 *
 *   text (default)  dpstream <level>: <message>
 *   json            one JSON object per line, fields in this order:
 *                     ts         UTC, RFC 3339 with milliseconds ("2026-01-02T03:04:05.678Z")
 *                     level      "error" | "warn" | "info" | "debug"
 *                     event      what happened (below); "log" for plain dp_log calls
 *                     stream     the stream id, when the call site has one
 *                     step       the step (>= 1), when the call site has one
 *                     partition  the updates-topic partition, when the call site has one
 *                     msg        the same sentence the text format prints
 *                   Strings are escaped per RFC 8259; NUL and bytes that are
 *                   not well-formed UTF-8 become U+FFFD, so every line parses.
 *
 * Events (the processor's; README "Operations" lists them with their
 * levels): startup, subscribed, shutdown, fatal, progress, restore_start,
 * restore_done, stream_restored, partition_resume, partition_kept,
 * partition_changed, partition_pause, rebalance_assign,
 * rebalance_revoke, rewind, txn_commit, txn_held, txn_held_end, txn_abort, txn_error,
 * step_released, step_close_failed, budget_exhausted, idle_marker,
 * dead_letter, topic_created, librdkafka, cli_error, log; and
 * inspect-snapshot's snapshot_refused, snapshot_unreadable,
 * private_state_printed.
 *
 * Only public fields may be passed: stream ids, steps, partitions,
 * offsets, counts and spends that budget events publish anyway.  Never key
 * material or raw private state — the noise key, the state key and
 * decrypted snapshots must never be logged (docs/design.md §3).
 *
 * Thread-safe: each line is formatted in a local buffer and written with
 * one call, so lines from librdkafka's threads (its log callback) do not
 * interleave mid-line.  The level and format are set before any thread
 * starts and only read afterwards. */
#ifndef DP_STREAM_LOG_H
#define DP_STREAM_LOG_H

#include <stddef.h>
#include <stdint.h>

typedef enum dp_log_level {
    DP_LOG_ERROR = 0,
    DP_LOG_WARN  = 1,
    DP_LOG_INFO  = 2,
    DP_LOG_DEBUG = 3,
} dp_log_level;

typedef enum dp_log_format {
    DP_LOG_FORMAT_TEXT = 0,
    DP_LOG_FORMAT_JSON = 1,
} dp_log_format;

/* Messages above this level are dropped (default DP_LOG_INFO). */
void dp_log_set_level(dp_log_level level);
dp_log_level dp_log_get_level(void);
/* "error" | "warn" | "info" | "debug" -> 0, or -1 if unknown. */
int  dp_log_level_parse(const char *s, dp_log_level *out);

void dp_log_set_format(dp_log_format format);
dp_log_format dp_log_get_format(void);
/* "text" | "json" -> 0, or -1 if unknown. */
int  dp_log_format_parse(const char *s, dp_log_format *out);

/* A plain line: event "log", no stream, step or partition. */
void dp_log(dp_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A structured line.  stream: NULL (or stream_len 0) for none; it need not
 * be NUL-terminated.  step: 0 for none (steps are 1-based). */
void dp_log_event(dp_log_level level, const char *event, const char *stream, size_t stream_len, uint64_t step,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* A structured line about one partition of the updates topic. */
void dp_log_partition_event(dp_log_level level, const char *event, int32_t partition, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
