/* bench_kafka.h — bench_throughput's Kafka harness: topics and groups it
 * creates (and deletes), the input producer, the processor in a thread,
 * the read_committed budget watcher, and the raw-consume pass that uses
 * the processor's own consumer settings.  throughput.c runs the phases
 * with these parts.  Clock helpers are here too: only this driver reads
 * the clock. */
#ifndef BENCH_KAFKA_H
#define BENCH_KAFKA_H

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

#include "connectors/panel/panel_gen.h"
#include "codec/codec.h"
#include "core/buf.h"
#include "stream/processor.h"
#include "stream/stream_config.h"

#define ADMIN_TIMEOUT_MS 30000
#define RAW_BATCH        1024   /* as the processor (processor.c BATCH_MAX) */

typedef struct created {
    char  *names[16];
    size_t n;
    char  *groups[8];
    size_t n_groups;
} created;

typedef struct producer {
    rd_kafka_t *rk;
    dp_codec   *codec;
    dp_buf      enc;
    const char *topic;
    volatile int failed;
    char        failure[256];
    uint64_t    sent;
} producer;

typedef struct proc_thread {
    pthread_t             thread;
    int                   started;
    volatile sig_atomic_t stop;
    volatile int          finished;
    dp_key                key;
    dp_processor_options  o;
    int                   rc;
    char                  err[1400];
} proc_thread;

typedef struct watch_stream {
    char     id[32];
    uint64_t max_step;
    int64_t *seen_us;   /* [step] = when its budget event was first dequeued */
} watch_stream;

typedef struct watcher {
    rd_kafka_t   *rk;
    dp_codec     *codec;
    watch_stream *s;
    size_t        n_s;
    uint64_t      horizon;
    uint64_t      events, undecodable;
} watcher;

typedef struct raw_result {
    double total_s, steady_s;
    double total_cpu, steady_cpu;   /* process CPU seconds in the same windows */
    double steady_machine;          /* machine busy CPU seconds in the steady window */
    uint64_t msgs, bytes, decode_errors;
} raw_result;

/* Clocks: monotonic µs, a CPU clock's seconds, the machine's busy CPU seconds (/proc/stat; -1 if unreadable). */
int64_t now_us(void);
double cpu_s(clockid_t c);
double machine_busy_s(void);
void sleep_ms(int64_t ms);

/* Topics (unique prefix) and consumer groups, all deleted by delete_created. */
int create_topics(rd_kafka_t *rk, const dp_stream_config *cfg, created *cr, char *errstr, size_t errn);
void delete_created(rd_kafka_t *rk, created *cr);
void add_group(created *cr, const char *g);

/* The input producer (fast: large batches, acks=all, idempotent) and the panel's steps. */
int producer_open(producer *p, const dp_stream_config *cfg, int fast, const char *compression,
                  char *errstr, size_t errn);
void producer_close(producer *p);
int producer_send(producer *p, const dp_update *u, char *errstr, size_t errn);
int producer_flush(producer *p, char *errstr, size_t errn);
int send_step(producer *p, const char *stream, const dp_panel_gen *g, uint64_t step, uint64_t n_report,
              char *errstr, size_t errn);
int send_marker(producer *p, const char *stream, uint64_t step, char *errstr, size_t errn);
int panel_init(dp_panel_gen *g, uint64_t n, uint64_t steps, char *errstr, size_t errn);

/* dp_processor_run in a thread. */
int proc_start(proc_thread *t, const dp_stream_config *cfg, uint32_t chunk_records, char *errstr, size_t errn);
int proc_running(proc_thread *t);
int proc_stop(proc_thread *t, char *errstr, size_t errn);

/* A read_committed reader of the budget topic, no group: when each step's budget event is visible. */
int watcher_open(watcher *w, const dp_stream_config *cfg, const char *group, uint64_t horizon,
                 const char *const *ids, size_t n_ids, const char *fetch_wait_ms, char *errstr, size_t errn);
void watcher_close(watcher *w);
void watcher_poll(watcher *w, int timeout_ms);
int watcher_wait(watcher *w, size_t si, uint64_t step, proc_thread *pt, int64_t deadline_us,
                 int poll_ms, int64_t *when_us, char *errstr, size_t errn);
int64_t high_watermark(rd_kafka_t *rk, const char *topic);

/* A consumer with the processor's settings (NULL + errstr on failure); subscribe it to one topic. */
rd_kafka_t *bench_consumer_new(const dp_stream_config *cfg, const char *group, const char *who, char *errstr,
                               size_t errn);
int bench_subscribe(rd_kafka_t *rk, const char *topic, char *errstr, size_t errn);

/* The processor's consumer minus the processing (optionally + Avro decoding of every message). */
int raw_consume(const dp_stream_config *cfg, const char *group, uint64_t expect, uint64_t step1_msgs,
                int decode, int64_t deadline_us, raw_result *r, char *errstr, size_t errn);

#endif
