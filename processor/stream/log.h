/* log.h — leveled logging to stderr for the Kafka processor.
 *
 * Logs go to stderr only, one line each: "dpstream <level>: <message>".
 * Never pass key material or raw private state to these functions: the
 * noise key and decrypted snapshots must never be logged (DESIGN.md §3). */
#ifndef DP_STREAM_LOG_H
#define DP_STREAM_LOG_H

typedef enum dp_log_level {
    DP_LOG_ERROR = 0,
    DP_LOG_WARN  = 1,
    DP_LOG_INFO  = 2,
    DP_LOG_DEBUG = 3,
} dp_log_level;

/* Messages above this level are dropped (default DP_LOG_INFO). */
void dp_log_set_level(dp_log_level level);
dp_log_level dp_log_get_level(void);
/* "error" | "warn" | "info" | "debug" -> 0, or -1 if unknown. */
int  dp_log_level_parse(const char *s, dp_log_level *out);

void dp_log(dp_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
