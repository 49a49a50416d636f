/* throughput.c — bench_throughput: the Kafka processor (`dpstream run`,
 * stream/processor.h) on a real broker (scripts/kafka-local.sh), in one run:
 *
 *   1. fill  — an updates topic with n individuals × T steps of Avro
 *      Updates (one stream "tp-0", window synthesizer k = 3, c = 2), a
 *      CLOSE_STEP marker after each step, produced by a fast idempotent
 *      producer (acks=all, large linger/batches, no compression by default) with the codec, as
 *      load_kafka.c encodes them;
 *   2. rates — (a) raw consume of that topic with exactly the processor's
 *      consumer settings (same config, same fixed properties, same
 *      consume loop) and no processing, then (a') the same
 *      with Avro decoding of every message; (b) dp_processor_run end to end
 *      in a thread (fresh group and transactional id): decode, route,
 *      ingest, close steps, produce releases, commit.  Completion is the
 *      moment the last step's budget event is visible to a read_committed
 *      reader.  Two windows are reported:
 *        total  — from subscribe / processor start (group join, setup,
 *                 roster building at step 1 included) to the end;
 *        steady — steps 2..T: for (a) from consuming step 1's marker to
 *                 the last message, for (b) from step 1's budget event to
 *                 step T's; both cover the same (T-1)(n+1) messages;
 *   3. latency — with a fresh processor on fresh topics, S streams of
 *      n_lat individuals (default 25 000) over L steps, one step of one
 *      stream at a time: produce the step's updates, wait until the
 *      processor has had time to ingest them (--settle-ms), then time from
 *      just before the CLOSE_STEP marker is produced to the moment its
 *      budget event (the last message of the step's transaction) is
 *      dequeued by a read_committed reader.  At steps >= 2 the last
 *      individual does not report (it is imputed by carry-forward): a
 *      complete roster would close the step on its last update, before
 *      the marker, and the marker would measure nothing.
 *
 * Also printed: the process's CPU seconds in each window and the processor
 * thread's own CPU time (pthread CPU clock), so a run on a loaded machine
 * still shows the cost per update and how busy the processor was.
 * --kafka NAME=VALUE adds a librdkafka property to the config's "kafka"
 * object, i.e. to every client alike (e.g. queued.min.messages: librdkafka
 * < 2.2 backs off 1 s whenever a partition's prefetch queue is full, which
 * throttles any consumer slower than the fetcher; see bench/RESULTS.md).
 *
 * Every topic created here has a unique "bench-tp-<pid>-<ns>" prefix and is
 * deleted at the end (with the consumer groups), also after a failure,
 * unless --keep-topics.  The broker is never started or stopped here.
 *
 * Not a test: numbers depend on the machine and its load.  No output of
 * dpstream depends on the clock; only this driver reads it. */
#define _GNU_SOURCE   /* pthread_setname_np */
#include <inttypes.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "connectors/panel/panel_gen.h"
#include "state_disk.h"
#include "codec/codec.h"
#include "core/buf.h"
#include "core/dp_error.h"
#include "stream/kafka_util.h"
#include "stream/log.h"
#include "stream/processor.h"
#include "stream/stream_config.h"

#define ADMIN_TIMEOUT_MS 30000
#define RAW_BATCH        1024   /* as the processor (processor.c BATCH_MAX) */

typedef struct bench_opts {
    uint64_t    n, steps;                  /* throughput phase */
    uint64_t    lat_n, lat_streams, lat_steps;
    int64_t     settle_ms;                 /* 0: derived from the measured end-to-end rate */
    const char *bootstrap;
    const char *compression;
    uint32_t    chunk_records;
    int64_t     timeout_s;
    int         no_throughput, no_latency, no_decode_pass, keep_topics, verbose, debug_log;
    const char *kafka_kv[16][2];           /* --kafka NAME=VALUE: added to the config's "kafka" object */
    size_t      n_kafka_kv;
    char       *kafka_buf[16];
} bench_opts;

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* CPU seconds of a clock (the whole process, or one thread) */
static double cpu_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Busy CPU seconds of the whole machine so far (/proc/stat: user, nice,
 * system, irq, softirq, steal; not idle or iowait), so a window shows how
 * much of the machine's CPUs everything — this process and the broker
 * sharing the machine — used; -1 where /proc/stat is unreadable. */
static double machine_busy_s(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    unsigned long long v[8] = {0};
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                     &v[6], &v[7]);
    fclose(f);
    if (got != 8)
        return -1;
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* --- topics and groups ------------------------------------------------------------ */

typedef struct created {
    char  *names[16];
    size_t n;
    char  *groups[8];
    size_t n_groups;
} created;

static int admin_wait(rd_kafka_queue_t *q, rd_kafka_event_type_t want, rd_kafka_event_t **out, char *errstr,
                      size_t errn)
{
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, ADMIN_TIMEOUT_MS + 5000);
    if (!ev)
        return dp_err(errstr, errn, DP_EIO, "admin request timed out");
    if (rd_kafka_event_error(ev)) {
        int rc = dp_err(errstr, errn, DP_EIO, "admin request: %s", rd_kafka_event_error_string(ev));
        rd_kafka_event_destroy(ev);
        return rc;
    }
    if (rd_kafka_event_type(ev) != want) {
        rd_kafka_event_destroy(ev);
        return dp_err(errstr, errn, DP_EIO, "admin request: unexpected event");
    }
    *out = ev;
    return DP_OK;
}

/* Create the five topics of `cfg` (one partition each, broker defaults
 * otherwise; the state topic compacted) before the processor starts, so
 * its own create_topics leaves them as they are and the updates topic has
 * exactly one partition. */
static int create_topics(rd_kafka_t *rk, const dp_stream_config *cfg, created *cr, char *errstr, size_t errn)
{
    const char *names[5] = {cfg->topic_updates, cfg->topic_synthetic, cfg->topic_budget, cfg->topic_dead_letter,
                            cfg->topic_state};
    rd_kafka_NewTopic_t *nt[5];
    char err[256];
    for (int i = 0; i < 5; i++) {
        nt[i] = rd_kafka_NewTopic_new(names[i], 1, 1, err, sizeof err);
        if (!nt[i])
            return dp_err(errstr, errn, DP_EINVAL, "topic %s: %s", names[i], err);
        if (i == 4)
            rd_kafka_NewTopic_set_config(nt[i], "cleanup.policy", "compact");
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *ao = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_operation_timeout(ao, ADMIN_TIMEOUT_MS, err, sizeof err);
    rd_kafka_CreateTopics(rk, nt, 5, ao, q);
    rd_kafka_AdminOptions_destroy(ao);
    rd_kafka_NewTopic_destroy_array(nt, 5);
    rd_kafka_event_t *ev = NULL;
    int rc = admin_wait(q, RD_KAFKA_EVENT_CREATETOPICS_RESULT, &ev, errstr, errn);
    if (rc == DP_OK) {
        size_t cnt = 0;
        const rd_kafka_topic_result_t **res =
            rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &cnt);
        for (size_t i = 0; i < cnt; i++) {
            rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
            if (e == RD_KAFKA_RESP_ERR_NO_ERROR && cr->n < 16)
                cr->names[cr->n++] = strdup(rd_kafka_topic_result_name(res[i]));
            else if (e != RD_KAFKA_RESP_ERR_NO_ERROR && rc == DP_OK)
                rc = dp_err(errstr, errn, DP_EIO, "create topic %s: %s", rd_kafka_topic_result_name(res[i]),
                            rd_kafka_topic_result_error_string(res[i]));
        }
        rd_kafka_event_destroy(ev);
    }
    rd_kafka_queue_destroy(q);
    /* CreateTopics returns before every partition has a leader that
     * answers; the processor's restore treats "Not leader for partition"
     * on the state topic as fatal, so wait until each topic's metadata
     * shows a leader and its offsets can be listed */
    for (int i = 0; i < 5 && rc == DP_OK; i++) {
        int64_t until = now_us() + (int64_t)ADMIN_TIMEOUT_MS * 1000;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, names[i], NULL);
        int ready = 0;
        while (rkt && !ready && now_us() < until) {
            const struct rd_kafka_metadata *md = NULL;
            if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
                ready = md->topic_cnt == 1 && !md->topics[0].err && md->topics[0].partition_cnt == 1 &&
                        !md->topics[0].partitions[0].err && md->topics[0].partitions[0].leader >= 0;
                rd_kafka_metadata_destroy(md);
            }
            int64_t lo = 0, hi = 0;
            if (ready && rd_kafka_query_watermark_offsets(rk, names[i], 0, &lo, &hi, 5000))
                ready = 0;
            if (!ready)
                sleep_ms(50);
        }
        if (rkt)
            rd_kafka_topic_destroy(rkt);
        if (!ready)
            rc = dp_err(errstr, errn, DP_EIO, "topic %s has no leader after %d ms", names[i], ADMIN_TIMEOUT_MS);
    }
    return rc;
}

/* Delete what this run created.  Failures are reported, not fatal: the
 * measurements are already printed. */
static void delete_created(rd_kafka_t *rk, created *cr)
{
    char err[256];
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    if (cr->n_groups) {
        rd_kafka_DeleteGroup_t *dg[8];
        for (size_t i = 0; i < cr->n_groups; i++)
            dg[i] = rd_kafka_DeleteGroup_new(cr->groups[i]);
        rd_kafka_AdminOptions_t *ao = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DELETEGROUPS);
        rd_kafka_AdminOptions_set_request_timeout(ao, ADMIN_TIMEOUT_MS, err, sizeof err);
        rd_kafka_DeleteGroups(rk, dg, cr->n_groups, ao, q);
        rd_kafka_AdminOptions_destroy(ao);
        rd_kafka_DeleteGroup_destroy_array(dg, cr->n_groups);
        rd_kafka_event_t *ev = NULL;
        if (admin_wait(q, RD_KAFKA_EVENT_DELETEGROUPS_RESULT, &ev, err, sizeof err) == DP_OK) {
            size_t cnt = 0;
            const rd_kafka_group_result_t **res =
                rd_kafka_DeleteGroups_result_groups(rd_kafka_event_DeleteGroups_result(ev), &cnt);
            for (size_t i = 0; i < cnt; i++) {
                const rd_kafka_error_t *e = rd_kafka_group_result_error(res[i]);
                if (e && rd_kafka_error_code(e) != RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND)
                    fprintf(stderr, "note: delete group %s: %s\n", rd_kafka_group_result_name(res[i]),
                            rd_kafka_error_string(e));
            }
            rd_kafka_event_destroy(ev);
        } else {
            fprintf(stderr, "note: delete groups: %s\n", err);
        }
    }
    if (cr->n) {
        rd_kafka_DeleteTopic_t *dt[16];
        for (size_t i = 0; i < cr->n; i++)
            dt[i] = rd_kafka_DeleteTopic_new(cr->names[i]);
        rd_kafka_AdminOptions_t *ao = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DELETETOPICS);
        rd_kafka_AdminOptions_set_operation_timeout(ao, ADMIN_TIMEOUT_MS, err, sizeof err);
        rd_kafka_DeleteTopics(rk, dt, cr->n, ao, q);
        rd_kafka_AdminOptions_destroy(ao);
        rd_kafka_DeleteTopic_destroy_array(dt, cr->n);
        rd_kafka_event_t *ev = NULL;
        if (admin_wait(q, RD_KAFKA_EVENT_DELETETOPICS_RESULT, &ev, err, sizeof err) == DP_OK) {
            size_t cnt = 0, ok = 0;
            const rd_kafka_topic_result_t **res =
                rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), &cnt);
            for (size_t i = 0; i < cnt; i++) {
                if (rd_kafka_topic_result_error(res[i]))
                    fprintf(stderr, "note: delete topic %s: %s\n", rd_kafka_topic_result_name(res[i]),
                            rd_kafka_topic_result_error_string(res[i]));
                else
                    ok++;
            }
            printf("cleanup: deleted %zu of %zu topics, %zu consumer group(s)\n", ok, cr->n, cr->n_groups);
            rd_kafka_event_destroy(ev);
        } else {
            fprintf(stderr, "note: delete topics: %s\n", err);
        }
    }
    rd_kafka_queue_destroy(q);
    for (size_t i = 0; i < cr->n; i++)
        free(cr->names[i]);
    for (size_t i = 0; i < cr->n_groups; i++)
        free(cr->groups[i]);
    cr->n = cr->n_groups = 0;
}

static void add_group(created *cr, const char *g)
{
    if (cr->n_groups < 8)
        cr->groups[cr->n_groups++] = strdup(g);
}

/* --- configuration ------------------------------------------------------------------ */

static dp_stream_config *make_config(const bench_opts *o, const char *prefix, const char *route_prefix,
                                     uint64_t horizon, char *errstr, size_t errn)
{
    /* seed 000's window synthesizer at the accuracy benchmark's settings */
    json_t *win = json_pack("{s:I, s:i, s:i, s:f, s:s}", "horizon", (json_int_t)horizon, "k", 3, "categories", 2,
                            "rho", 0.005, "neighbors", "replace");
    json_t *root = win ? json_pack("{s:{s:s}, s:{s:s}, s:[{s:s, s:s, s:o}]}", "topics", "prefix", prefix,
                                   "kafka", "bootstrap.servers", o->bootstrap,
                                   "streams", "prefix", route_prefix, "synthesizer", "window", "config", win)
                       : NULL;
    /* every client (processor, raw consumer, producers) gets the extra
     * properties, so the raw consumer keeps the processor's settings */
    json_t *kafka = root ? json_object_get(root, "kafka") : NULL;
    for (size_t i = 0; kafka && i < o->n_kafka_kv; i++)
        json_object_set_new(kafka, o->kafka_kv[i][0], json_string(o->kafka_kv[i][1]));
    if (!root) {
        dp_err(errstr, errn, DP_ENOMEM, "out of memory");
        return NULL;
    }
    dp_stream_config *cfg = NULL;
    if (dp_stream_config_from_json(&cfg, root, errstr, errn) != DP_OK)
        cfg = NULL;
    json_decref(root);
    return cfg;
}

/* --- input producer ------------------------------------------------------------------ */

typedef struct producer {
    rd_kafka_t *rk;
    dp_codec   *codec;
    dp_buf      enc;
    const char *topic;
    volatile int failed;
    char        failure[256];
    uint64_t    sent;
} producer;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    producer *p = opaque;
    if (m->err && !p->failed) {
        snprintf(p->failure, sizeof p->failure, "delivery failed: %s", rd_kafka_err2str(m->err));
        p->failed = 1;
    }
}

static int producer_open(producer *p, const dp_stream_config *cfg, int fast, const char *compression,
                         char *errstr, size_t errn)
{
    memset(p, 0, sizeof *p);
    dp_buf_init(&p->enc);
    p->topic = cfg->topic_updates;
    /* fast: batches of up to 1 MB / 100k messages, 50 ms linger, a deep
     * local queue; the latency markers go through a linger-0 producer */
    const char *const fast_kv[][2] = {{"enable.idempotence", "true"},
                                      {"acks", "all"},
                                      {"linger.ms", "50"},
                                      {"batch.size", "1000000"},
                                      {"batch.num.messages", "100000"},
                                      {"queue.buffering.max.messages", "2000000"},
                                      {"queue.buffering.max.kbytes", "1048576"},
                                      {"compression.type", compression}};
    const char *const slow_kv[][2] = {{"enable.idempotence", "true"}, {"acks", "all"}, {"linger.ms", "0"}};
    rd_kafka_conf_t *conf = fast ? dp_kafka_conf(cfg, NULL, fast_kv, 8, errstr, errn)
                                 : dp_kafka_conf(cfg, NULL, slow_kv, 3, errstr, errn);
    if (!conf)
        return DP_EINVAL;
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_opaque(conf, p);
    char err[512];
    if (!(p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err)))
        return dp_err(errstr, errn, DP_EIO, "producer: %s", err);
    dp_codec_options copts;
    dp_stream_config_codec_options(cfg, &copts);
    return dp_codec_create(&p->codec, &copts, errstr, errn);
}

static void producer_close(producer *p)
{
    if (p->rk) {
        rd_kafka_flush(p->rk, 10000);
        rd_kafka_destroy(p->rk);
    }
    dp_codec_destroy(p->codec);
    dp_buf_free(&p->enc);
    memset(p, 0, sizeof *p);
}

static int producer_send(producer *p, const dp_update *u, char *errstr, size_t errn)
{
    if (p->failed)
        return dp_err(errstr, errn, DP_EIO, "%s", p->failure);
    p->enc.len = 0;
    int rc = dp_codec_encode_update_buf(p->codec, u, &p->enc, errstr, errn);
    if (rc != DP_OK)
        return rc;
    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            p->rk, RD_KAFKA_V_TOPIC(p->topic),
            RD_KAFKA_V_HEADER("dpstream.type", dp_codec_type_name(DP_CODEC_UPDATE), -1),
            RD_KAFKA_V_KEY((void *)u->stream_id, u->stream_id_len), RD_KAFKA_V_VALUE(p->enc.data, p->enc.len),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (!e)
            break;
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
            return dp_err(errstr, errn, DP_EIO, "produce: %s", rd_kafka_err2str(e));
        rd_kafka_poll(p->rk, 5);
    }
    if ((++p->sent & 1023) == 0)
        rd_kafka_poll(p->rk, 0);
    return DP_OK;
}

static int producer_flush(producer *p, char *errstr, size_t errn)
{
    rd_kafka_resp_err_t e;
    while ((e = rd_kafka_flush(p->rk, 10000)) == RD_KAFKA_RESP_ERR__TIMED_OUT && !p->failed)
        ;
    if (p->failed)
        return dp_err(errstr, errn, DP_EIO, "%s", p->failure);
    if (e)
        return dp_err(errstr, errn, DP_EIO, "flush: %s", rd_kafka_err2str(e));
    return DP_OK;
}

/* One step of one stream: individuals 1..n_report report their panel
 * category (entity "u<i>"), then optionally the step's CLOSE_STEP marker. */
static int send_step(producer *p, const char *stream, const dp_panel_gen *g, uint64_t step, uint64_t n_report,
                     char *errstr, size_t errn)
{
    char entity[32];
    dp_update u = {.stream_id = stream, .stream_id_len = strlen(stream), .step = step, .kind = DP_UPDATE_REPORT,
                   .entity_id = entity, .payload = {.kind = DP_PAYLOAD_CATEGORY}};
    for (uint64_t i = 0; i < n_report; i++) {
        u.entity_id_len = (size_t)snprintf(entity, sizeof entity, "u%" PRIu64, i + 1);
        u.payload.category = g->value[i];
        int rc = producer_send(p, &u, errstr, errn);
        if (rc != DP_OK)
            return rc;
    }
    return DP_OK;
}

static int send_marker(producer *p, const char *stream, uint64_t step, char *errstr, size_t errn)
{
    dp_update mk = {.stream_id = stream, .stream_id_len = strlen(stream), .step = step,
                    .kind = DP_UPDATE_CLOSE_STEP};
    return producer_send(p, &mk, errstr, errn);
}

static int panel_init(dp_panel_gen *g, uint64_t n, uint64_t steps, char *errstr, size_t errn)
{
    dp_panel_params pp;
    memset(&pp, 0, sizeof pp);
    pp.n = n;
    pp.steps = steps;
    pp.categories = 2;
    pp.stay[0] = 0.95;
    pp.stay[1] = 0.7;
    for (size_t i = 0; i < sizeof pp.seed.bytes; i++)
        pp.seed.bytes[i] = (uint8_t)(0x42 + i);
    return dp_panel_gen_init(g, &pp, errstr, errn);
}

/* --- the processor in a thread --------------------------------------------------------- */

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

static void *proc_main(void *arg)
{
    proc_thread *t = arg;
    pthread_setname_np(pthread_self(), "dp-processor");   /* so perf can tell it apart */
    t->rc = dp_processor_run(&t->o, t->err, sizeof t->err);
    __atomic_store_n(&t->finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

static int proc_start(proc_thread *t, const dp_stream_config *cfg, uint32_t chunk_records, char *errstr, size_t errn)
{
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < sizeof t->key.bytes; i++)
        t->key.bytes[i] = (uint8_t)(0xA5 ^ i);   /* a fixed benchmark key: no secret here */
    t->o = (dp_processor_options){.config = cfg,
                                  .noise_key = &t->key,
                                  .instance_id = "bench",
                                  .chunk_records = chunk_records,
                                  .dlq_commit_ms = 1000,
                                  .stop = &t->stop};
    if (pthread_create(&t->thread, NULL, proc_main, t) != 0)
        return dp_err(errstr, errn, DP_EIO, "cannot start the processor thread");
    t->started = 1;
    return DP_OK;
}

static int proc_running(proc_thread *t) { return t->started && !__atomic_load_n(&t->finished, __ATOMIC_ACQUIRE); }

static int proc_stop(proc_thread *t, char *errstr, size_t errn)
{
    if (!t->started)
        return DP_OK;
    t->stop = 1;
    pthread_join(t->thread, NULL);
    t->started = 0;
    if (t->rc != DP_OK)
        return dp_err(errstr, errn, t->rc, "processor: %s", t->err[0] ? t->err : dp_status_str(t->rc));
    return DP_OK;
}

/* --- the budget watcher: read_committed, no group ------------------------------------ */

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

static int watcher_open(watcher *w, const dp_stream_config *cfg, const char *group, uint64_t horizon,
                        const char *const *ids, size_t n_ids, const char *fetch_wait_ms, char *errstr, size_t errn)
{
    memset(w, 0, sizeof *w);
    w->horizon = horizon;
    /* fetch_wait_ms: the broker may hold a read_committed fetch until its
     * wait expires when only the LSO moved; a short wait bounds that
     * polling error (it does not change what is measured) but costs the
     * broker one fetch request per wait, so the throughput phase, where a
     * few ms do not matter, uses a longer one */
    const char *const kv[][2] = {{"group.id", group},
                                 {"enable.auto.commit", "false"},
                                 {"isolation.level", "read_committed"},
                                 {"fetch.wait.max.ms", fetch_wait_ms}};
    rd_kafka_conf_t *conf = dp_kafka_conf(cfg, NULL, kv, 4, errstr, errn);
    if (!conf)
        return DP_EINVAL;
    char err[512];
    if (!(w->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err)))
        return dp_err(errstr, errn, DP_EIO, "budget reader: %s", err);
    rd_kafka_poll_set_consumer(w->rk);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, cfg->topic_budget, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_resp_err_t e = rd_kafka_assign(w->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (e)
        return dp_err(errstr, errn, DP_EIO, "budget reader assign: %s", rd_kafka_err2str(e));
    dp_codec_options copts;
    dp_stream_config_codec_options(cfg, &copts);
    int rc = dp_codec_create(&w->codec, &copts, errstr, errn);
    if (rc != DP_OK)
        return rc;
    if (!(w->s = calloc(n_ids, sizeof *w->s)))
        return DP_ENOMEM;
    w->n_s = n_ids;
    for (size_t i = 0; i < n_ids; i++) {
        snprintf(w->s[i].id, sizeof w->s[i].id, "%s", ids[i]);
        if (!(w->s[i].seen_us = calloc(horizon + 1, sizeof(int64_t))))
            return DP_ENOMEM;
    }
    return DP_OK;
}

static void watcher_close(watcher *w)
{
    if (w->rk) {
        rd_kafka_consumer_close(w->rk);
        rd_kafka_destroy(w->rk);
    }
    dp_codec_destroy(w->codec);
    for (size_t i = 0; i < w->n_s; i++)
        free(w->s[i].seen_us);
    free(w->s);
    memset(w, 0, sizeof *w);
}

/* Poll once (at most timeout_ms), recording every budget event. */
static void watcher_poll(watcher *w, int timeout_ms)
{
    int wait = timeout_ms;
    for (;;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(w->rk, wait);
        if (!m)
            return;
        int64_t t = now_us();
        wait = 0;
        if (!m->err) {
            dp_budget_event e;
            char err[256];
            if (dp_codec_decode_budget(w->codec, m->payload, m->len, &e, err, sizeof err) != DP_OK) {
                w->undecodable++;
            } else {
                w->events++;
                for (size_t i = 0; i < w->n_s; i++) {
                    watch_stream *s = &w->s[i];
                    if (e.stream_id_len == strlen(s->id) && memcmp(e.stream_id, s->id, e.stream_id_len) == 0 &&
                        e.step >= 1 && e.step <= w->horizon) {
                        if (!s->seen_us[e.step])
                            s->seen_us[e.step] = t;
                        if (e.step > s->max_step)
                            s->max_step = e.step;
                    }
                }
            }
        }
        rd_kafka_message_destroy(m);
    }
}

/* Wait until stream `si` has released `step`; DP_OK with the time, or an
 * error if the processor stopped or the deadline passed. */
static int watcher_wait(watcher *w, size_t si, uint64_t step, proc_thread *pt, int64_t deadline_us,
                        int poll_ms, int64_t *when_us, char *errstr, size_t errn)
{
    while (!w->s[si].seen_us[step]) {
        if (!proc_running(pt)) {
            char perr[1500];
            int rc = proc_stop(pt, perr, sizeof perr);
            return dp_err(errstr, errn, rc != DP_OK ? rc : DP_ESTATE, "processor stopped before %s step %" PRIu64
                          " was released: %s", w->s[si].id, step, rc != DP_OK ? perr : "clean exit");
        }
        if (now_us() > deadline_us)
            return dp_err(errstr, errn, DP_EIO, "%s step %" PRIu64 " not released in time", w->s[si].id, step);
        watcher_poll(w, poll_ms);
    }
    *when_us = w->s[si].seen_us[step];
    return DP_OK;
}

static int64_t high_watermark(rd_kafka_t *rk, const char *topic)
{
    int64_t lo = 0, hi = -1;
    if (rd_kafka_query_watermark_offsets(rk, topic, 0, &lo, &hi, 10000))
        return -1;
    return hi;
}

/* --- phase 2a: raw consume --------------------------------------------------------- */

typedef struct raw_result {
    double total_s, steady_s;
    double total_cpu, steady_cpu;   /* process CPU seconds in the same windows */
    double steady_machine;          /* machine busy CPU seconds in the steady window */
    uint64_t msgs, bytes, decode_errors;
} raw_result;

/* The processor's consumer, minus the processing: same config, the same
 * defaults and fixed properties (processor.c setup()), subscribe, and the
 * same loop: one rd_kafka_consumer_poll, then rd_kafka_consume_batch_queue
 * without waiting for what is already queued (up to 1024 messages).
 * `decode`: also decode every message (dp_codec_decode_update). */
static int raw_consume(const dp_stream_config *cfg, const char *group, uint64_t expect, uint64_t step1_msgs,
                       int decode, int64_t deadline_us, raw_result *r, char *errstr, size_t errn)
{
    memset(r, 0, sizeof *r);
    const char *const cons_kv[][2] = {{"group.id", group},
                                      {"enable.auto.commit", "false"},
                                      {"enable.auto.offset.store", "false"},
                                      {"isolation.level", "read_committed"},
                                      {"auto.offset.reset", "earliest"}};
    rd_kafka_conf_t *conf = dp_kafka_conf_with_defaults(cfg, NULL, dp_processor_consumer_defaults,
                                                        dp_processor_consumer_defaults_n, cons_kv, 5, errstr, errn);
    if (!conf)
        return DP_EINVAL;
    char err[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk)
        return dp_err(errstr, errn, DP_EIO, "raw consumer: %s", err);
    dp_codec *codec = NULL;
    dp_codec_options copts;
    dp_stream_config_codec_options(cfg, &copts);
    int rc = decode ? dp_codec_create(&codec, &copts, errstr, errn) : DP_OK;
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, cfg->topic_updates, RD_KAFKA_PARTITION_UA);
    int64_t t0 = now_us(), t_step1 = 0;
    double c0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID), c_step1 = 0, m_step1 = 0;
    if (rc == DP_OK && rd_kafka_subscribe(rk, sub))
        rc = dp_err(errstr, errn, DP_EIO, "raw consumer: subscribe failed");
    rd_kafka_topic_partition_list_destroy(sub);
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
    rd_kafka_message_t *batch[RAW_BATCH];
    while (rc == DP_OK && r->msgs < expect) {
        ssize_t n = 0;
        if ((batch[0] = rd_kafka_consumer_poll(rk, 100)) != NULL) {
            ssize_t more = rd_kafka_consume_batch_queue(q, 0, batch + 1, RAW_BATCH - 1);
            n = more < 0 ? 1 : 1 + more;
        }
        if (n <= 0) {
            if (now_us() > deadline_us)
                rc = dp_err(errstr, errn, DP_EIO, "raw consume: only %" PRIu64 " of %" PRIu64 " messages in time",
                            r->msgs, expect);
            continue;
        }
        for (ssize_t i = 0; i < n; i++) {
            rd_kafka_message_t *m = batch[i];
            if (!m->err) {
                r->msgs++;
                r->bytes += m->len;
                if (decode) {
                    dp_update u;
                    if (dp_codec_decode_update(codec, m->payload, m->len, &u, err, sizeof err) != DP_OK)
                        r->decode_errors++;
                }
                if (r->msgs == step1_msgs) {
                    t_step1 = now_us();
                    c_step1 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
                    m_step1 = machine_busy_s();
                }
            } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                fprintf(stderr, "raw consumer: %s\n", rd_kafka_message_errstr(m));
            }
            rd_kafka_message_destroy(m);
        }
    }
    rd_kafka_queue_destroy(q);
    int64_t t1 = now_us();
    double c1 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
    r->steady_machine = machine_busy_s() - m_step1;
    r->total_cpu = c1 - c0;
    r->steady_cpu = c1 - c_step1;
    r->total_s = (double)(t1 - t0) / 1e6;
    r->steady_s = (double)(t1 - t_step1) / 1e6;
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    dp_codec_destroy(codec);
    return rc;
}

/* --- phases ----------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* nearest-rank percentile */
static double pct_ms(const int64_t *sorted_us, size_t n, double p)
{
    size_t r = (size_t)((p / 100.0) * (double)n + 0.999999999);
    if (r < 1)
        r = 1;
    if (r > n)
        r = n;
    return (double)sorted_us[r - 1] / 1000.0;
}

static int run_throughput(const bench_opts *o, const char *prefix, rd_kafka_t *admin, created *cr, double *e2e_rate,
                          char *errstr, size_t errn)
{
    char topic_prefix[128], group[200];
    snprintf(topic_prefix, sizeof topic_prefix, "%s-tp", prefix);
    dp_stream_config *cfg = make_config(o, topic_prefix, "tp-", o->steps, errstr, errn);
    if (!cfg)
        return DP_EINVAL;
    producer p = {0};
    watcher w = {0};
    proc_thread pt = {0};
    dp_panel_gen g;
    memset(&g, 0, sizeof g);
    const char *stream = "tp-0";
    const uint64_t per_step = o->n + 1, total = per_step * o->steps;
    int64_t deadline = now_us() + o->timeout_s * 1000000;
    int rc = create_topics(admin, cfg, cr, errstr, errn);
    if (rc == DP_OK)
        rc = panel_init(&g, o->n, o->steps, errstr, errn);
    if (rc == DP_OK)
        rc = producer_open(&p, cfg, 1, o->compression, errstr, errn);

    /* 1. fill */
    int64_t f0 = now_us();
    for (uint64_t t = 1; t <= o->steps && rc == DP_OK; t++) {
        if ((rc = dp_panel_gen_next(&g)) != DP_OK)
            break;
        rc = send_step(&p, stream, &g, t, o->n, errstr, errn);
        if (rc == DP_OK)
            rc = send_marker(&p, stream, t, errstr, errn);
    }
    if (rc == DP_OK)
        rc = producer_flush(&p, errstr, errn);
    if (rc != DP_OK)
        goto out;
    double fill_s = (double)(now_us() - f0) / 1e6;
    int64_t hw = high_watermark(p.rk, cfg->topic_updates);
    printf("fill: %" PRIu64 " messages (%" PRIu64 " individuals x %" PRIu64 " steps + %" PRIu64
           " markers) in %.2f s = %.0f msg/s (idempotent, acks=all, linger 50 ms, %s); topic high watermark %"
           PRId64 "\n",
           total, o->n, o->steps, o->steps, fill_s, (double)total / fill_s, o->compression, hw);
    fflush(stdout);
    /* idempotent producer and one partition: the offsets are exactly 0..total-1 */
    if (hw != (int64_t)total) {
        rc = dp_err(errstr, errn, DP_ESTATE, "updates topic holds %" PRId64 " messages, expected %" PRIu64, hw,
                    total);
        goto out;
    }

    /* 2a. raw consume */
    raw_result raw, rawd;
    snprintf(group, sizeof group, "%s.raw", topic_prefix);
    add_group(cr, group);
    if ((rc = raw_consume(cfg, group, total, per_step, 0, deadline, &raw, errstr, errn)) != DP_OK)
        goto out;
    printf("raw consume (no decode): %" PRIu64 " msgs, %.1f MB payload; total %.2f s = %.0f msg/s; "
           "steady (steps 2..T) %.2f s = %.0f msg/s; process CPU %.2f s total, %.2f s steady = %.0f msg per CPU-s; "
           "machine busy %.2f of %ld CPUs (steady)\n",
           raw.msgs, (double)raw.bytes / 1e6, raw.total_s, (double)raw.msgs / raw.total_s, raw.steady_s,
           (double)(total - per_step) / raw.steady_s, raw.total_cpu, raw.steady_cpu,
           (double)(total - per_step) / raw.steady_cpu, raw.steady_machine / raw.steady_s, sysconf(_SC_NPROCESSORS_ONLN));
    fflush(stdout);
    if (!o->no_decode_pass) {
        snprintf(group, sizeof group, "%s.rawdecode", topic_prefix);
        add_group(cr, group);
        if ((rc = raw_consume(cfg, group, total, per_step, 1, deadline, &rawd, errstr, errn)) != DP_OK)
            goto out;
        printf("raw consume + Avro decode: total %.2f s = %.0f msg/s; steady %.2f s = %.0f msg/s; "
               "%.0f msg per CPU-s (steady); %" PRIu64 " decode errors\n",
               rawd.total_s, (double)rawd.msgs / rawd.total_s, rawd.steady_s,
               (double)(total - per_step) / rawd.steady_s, (double)(total - per_step) / rawd.steady_cpu,
               rawd.decode_errors);
        fflush(stdout);
        if (rawd.decode_errors) {
            rc = dp_err(errstr, errn, DP_ESTATE, "raw decode pass: %" PRIu64 " undecodable updates",
                        rawd.decode_errors);
            goto out;
        }
    }

    /* 2b. end to end */
    snprintf(group, sizeof group, "%s.processor", topic_prefix);   /* the processor's default group id */
    add_group(cr, group);
    const char *ids[1] = {stream};
    if ((rc = watcher_open(&w, cfg, "bench-watch", o->steps, ids, 1, "50", errstr, errn)) != DP_OK)
        goto out;
    int64_t e0 = now_us(), e_step1 = 0, e_end = 0;
    double pc0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID), pc1 = 0, pc2 = 0, tc1 = 0, tc2 = 0, mc1 = 0, mc2 = 0;
    clockid_t tclock;
    if ((rc = proc_start(&pt, cfg, o->chunk_records, errstr, errn)) != DP_OK)
        goto out;
    if (pthread_getcpuclockid(pt.thread, &tclock) != 0) {
        rc = dp_err(errstr, errn, DP_EIO, "no CPU clock for the processor thread");
        goto out;
    }
    if ((rc = watcher_wait(&w, 0, 1, &pt, deadline, 10, &e_step1, errstr, errn)) != DP_OK)
        goto out;
    pc1 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
    tc1 = cpu_s(tclock);
    mc1 = machine_busy_s();
    int64_t disk1 = bench_topic_disk_bytes(bench_broker_data_dir(), cfg->topic_state);
    printf("end to end: step 1 released %.2f s after the processor started\n", (double)(e_step1 - e0) / 1e6);
    fflush(stdout);
    if ((rc = watcher_wait(&w, 0, o->steps, &pt, deadline, 10, &e_end, errstr, errn)) != DP_OK)
        goto out;
    pc2 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
    tc2 = cpu_s(tclock);   /* before the join: the clock dies with the thread */
    mc2 = machine_busy_s();
    int64_t disk2 = bench_topic_disk_bytes(bench_broker_data_dir(), cfg->topic_state);
    double tot_s = (double)(e_end - e0) / 1e6, steady_s = (double)(e_end - e_step1) / 1e6;
    if ((rc = proc_stop(&pt, errstr, errn)) != DP_OK)
        goto out;
    int64_t dlq = high_watermark(w.rk, cfg->topic_dead_letter);
    int64_t synth = high_watermark(w.rk, cfg->topic_synthetic);
    int64_t state = high_watermark(w.rk, cfg->topic_state);
    watcher_poll(&w, 200);
    uint64_t released = 0;
    for (uint64_t t = 1; t <= o->steps; t++) {
        released += w.s[0].seen_us[t] != 0;
        if (o->verbose && w.s[0].seen_us[t])
            printf("  step %" PRIu64 " released at +%.3f s\n", t, (double)(w.s[0].seen_us[t] - e0) / 1e6);
    }
    printf("end to end (dpstream run): total %.2f s = %.0f msg/s; steady (steps 2..T) %.2f s = %.0f msg/s; "
           "%" PRIu64 "/%" PRIu64 " steps released; output offsets: synthetic %" PRId64 ", state %" PRId64
           ", dead letters %" PRId64 "\n",
           tot_s, (double)total / tot_s, steady_s, (double)(total - per_step) / steady_s, released, o->steps, synth,
           state, dlq);
    uint64_t steady_msgs = total - per_step;
    printf("end to end CPU: process %.2f s total, %.2f s steady = %.0f msg per CPU-s; processor thread %.2f s "
           "steady = %.2f us/msg (%.0f%% of the steady wall time); machine busy %.2f of %ld CPUs (steady)\n",
           pc2 - pc0, pc2 - pc1, (double)steady_msgs / (pc2 - pc1), tc2 - tc1,
           1e6 * (tc2 - tc1) / (double)steady_msgs, 100.0 * (tc2 - tc1) / steady_s, (mc2 - mc1) / steady_s,
           sysconf(_SC_NPROCESSORS_ONLN));
    double ra = (double)steady_msgs / raw.steady_s, rb = (double)steady_msgs / steady_s;
    double rca = (double)steady_msgs / raw.steady_cpu, rcb = (double)steady_msgs / (pc2 - pc1);
    printf("RESULT throughput n=%" PRIu64 " T=%" PRIu64 " updates=%" PRIu64 ": raw %.0f msg/s, end-to-end %.0f "
           "msg/s, ratio b/a %.3f (steady wall); total-window ratio %.3f; per CPU-second: raw %.0f, end-to-end "
           "%.0f, ratio %.3f; machine CPU-s per message, end-to-end / raw %.2f\n",
           o->n, o->steps, o->n * o->steps, ra, rb, rb / ra,
           ((double)total / tot_s) / ((double)raw.msgs / raw.total_s), rca, rcb, rcb / rca,
           (mc2 - mc1) / raw.steady_machine);
    /* The state topic's log segments on the broker's disk: after step 1
     * (its full snapshot; what of step 2 was already appended, uncommitted,
     * counts there, so the steady figure may be low by up to a step's
     * bytes / (T-1)) and after step T. */
    if (disk1 >= 0 && disk2 >= 0 && o->steps > 1)
        printf("RESULT state topic on disk: %.2f MB after step 1, %.2f MB after step %" PRIu64 ": %.3f MB per steady "
               "step (steps 2..T), %.3f MB per step over all\n",
               (double)disk1 / 1e6, (double)disk2 / 1e6, o->steps, (double)(disk2 - disk1) / 1e6 / (double)(o->steps - 1),
               (double)disk2 / 1e6 / (double)o->steps);
    else
        printf("state topic on disk: unknown (no partition of %s under %s)\n", cfg->topic_state,
               bench_broker_data_dir());
    fflush(stdout);
    *e2e_rate = rb;
    if (released != o->steps || dlq != 0) {
        rc = dp_err(errstr, errn, DP_ESTATE, "unexpected outputs: %" PRIu64 " steps released, %" PRId64
                    " dead letters", released, dlq);
        goto out;
    }
out:
    if (pt.started) {
        char e2[256];
        proc_stop(&pt, e2, sizeof e2);
    }
    watcher_close(&w);
    producer_close(&p);
    dp_panel_gen_free(&g);
    dp_stream_config_free(cfg);
    return rc;
}

static int run_latency(const bench_opts *o, const char *prefix, rd_kafka_t *admin, created *cr, double e2e_rate,
                       char *errstr, size_t errn)
{
    char topic_prefix[128], group[200];
    snprintf(topic_prefix, sizeof topic_prefix, "%s-lat", prefix);
    dp_stream_config *cfg = make_config(o, topic_prefix, "lat-", o->lat_steps, errstr, errn);
    if (!cfg)
        return DP_EINVAL;
    producer p = {0}, mp = {0};
    watcher w = {0};
    proc_thread pt = {0};
    dp_panel_gen g;
    memset(&g, 0, sizeof g);
    size_t ns = (size_t)o->lat_streams, nsamp = 0;
    char (*names)[32] = calloc(ns + 1, sizeof *names);   /* + the warm-up stream */
    const char **ids = calloc(ns + 1, sizeof *ids);
    int64_t *lat = calloc(ns * o->lat_steps, sizeof *lat);
    int64_t *lat_first = calloc(ns, sizeof *lat_first);
    int64_t *lat_rel = calloc(ns * o->lat_steps, sizeof *lat_rel);   /* steps >= k = 3: records released */
    int64_t *lat_early = calloc(2 * ns, sizeof *lat_early);          /* steps 1-2 */
    size_t nrel = 0, nearly = 0;
    int64_t deadline = now_us() + o->timeout_s * 1000000;
    int rc = names && ids && lat && lat_first && lat_rel && lat_early ? DP_OK : DP_ENOMEM;
    for (size_t i = 0; rc == DP_OK && i < ns; i++) {
        snprintf(names[i], sizeof names[i], "lat-%02zu", i);
        ids[i] = names[i];
    }
    if (rc == DP_OK) {
        snprintf(names[ns], sizeof names[ns], "lat-warmup");
        ids[ns] = names[ns];
    }
    /* time for the processor to ingest one step before its marker: 4x the
     * measured end-to-end rate, at least 300 ms */
    int64_t settle = o->settle_ms;
    if (settle <= 0) {
        settle = e2e_rate > 0 ? (int64_t)(4000.0 * (double)o->lat_n / e2e_rate) : 1000;
        if (settle < 300)
            settle = 300;
    }
    if (rc == DP_OK)
        rc = create_topics(admin, cfg, cr, errstr, errn);
    if (rc == DP_OK)
        rc = panel_init(&g, o->lat_n, o->lat_steps, errstr, errn);
    if (rc == DP_OK)
        rc = producer_open(&p, cfg, 1, o->compression, errstr, errn);
    if (rc == DP_OK)
        rc = producer_open(&mp, cfg, 0, o->compression, errstr, errn);
    snprintf(group, sizeof group, "%s.processor", topic_prefix);
    add_group(cr, group);
    if (rc == DP_OK)
        rc = watcher_open(&w, cfg, "bench-watch", o->lat_steps, ids, ns + 1, "5", errstr, errn);
    if (rc == DP_OK)
        rc = proc_start(&pt, cfg, o->chunk_records, errstr, errn);
    /* warm-up: one small stream released once, so no sample includes the
     * processor's or the producers' startup (group join, init_transactions,
     * state read, metadata, producer ids) */
    if (rc == DP_OK) {
        dp_panel_gen wg;
        memset(&wg, 0, sizeof wg);
        int64_t tw = 0;
        rc = panel_init(&wg, 100, o->lat_steps, errstr, errn);
        if (rc == DP_OK)
            rc = dp_panel_gen_next(&wg);
        if (rc == DP_OK)
            rc = send_step(&p, ids[ns], &wg, 1, 100, errstr, errn);
        if (rc == DP_OK)
            rc = producer_flush(&p, errstr, errn);
        /* through the marker producer: its first message waits for the
         * topic's metadata and the idempotent producer id */
        if (rc == DP_OK)
            rc = send_marker(&mp, ids[ns], 1, errstr, errn);
        if (rc == DP_OK)
            rc = producer_flush(&mp, errstr, errn);
        if (rc == DP_OK)
            rc = watcher_wait(&w, ns, 1, &pt, deadline, 1, &tw, errstr, errn);
        dp_panel_gen_free(&wg);
    }
    /* every stream's data is the same panel (the stream id is not mixed into
     * panel_gen's randomness); streams differ in noise */
    for (uint64_t t = 1; t <= o->lat_steps && rc == DP_OK; t++) {
        if ((rc = dp_panel_gen_next(&g)) != DP_OK)
            break;
        for (size_t s = 0; s < ns && rc == DP_OK; s++) {
            uint64_t n_report = t == 1 ? o->lat_n : o->lat_n - 1;
            if ((rc = send_step(&p, ids[s], &g, t, n_report, errstr, errn)) != DP_OK ||
                (rc = producer_flush(&p, errstr, errn)) != DP_OK)
                break;
            sleep_ms(t == 1 ? 2 * settle : settle);   /* step 1 also builds the roster */
            watcher_poll(&w, 0);
            int64_t t0 = now_us(), t1 = 0;
            if ((rc = send_marker(&mp, ids[s], t, errstr, errn)) != DP_OK)
                break;
            rd_kafka_poll(mp.rk, 0);
            if ((rc = watcher_wait(&w, s, t, &pt, deadline, 1, &t1, errstr, errn)) != DP_OK)
                break;
            lat[nsamp++] = t1 - t0;
            if (o->verbose)
                printf("  sample %s step %" PRIu64 ": %.1f ms\n", ids[s], t, (double)(t1 - t0) / 1000.0);
            if (t == 1)
                lat_first[s] = t1 - t0;
            if (t >= 3)
                lat_rel[nrel++] = t1 - t0;
            else
                lat_early[nearly++] = t1 - t0;
        }
    }
    if (rc == DP_OK)
        rc = producer_flush(&mp, errstr, errn);
    if (rc == DP_OK)
        rc = proc_stop(&pt, errstr, errn);
    if (rc == DP_OK) {
        int64_t dlq = high_watermark(w.rk, cfg->topic_dead_letter);
        qsort(lat, nsamp, sizeof *lat, cmp_i64);
        double sum = 0;
        for (size_t i = 0; i < nsamp; i++)
            sum += (double)lat[i];
        qsort(lat_first, ns, sizeof *lat_first, cmp_i64);
        qsort(lat_rel, nrel, sizeof *lat_rel, cmp_i64);
        qsort(lat_early, nearly, sizeof *lat_early, cmp_i64);
        printf("latency (CLOSE_STEP produced -> budget event visible read_committed), n=%" PRIu64 ", %zu streams x %"
               PRIu64 " steps, settle %" PRId64 " ms: %zu samples, min %.1f ms, p50 %.1f ms, p90 %.1f ms, p99 %.1f "
               "ms, max %.1f ms, mean %.1f ms; step-1 closes (roster build) p50 %.1f ms max %.1f ms; dead letters %"
               PRId64 "\n",
               o->lat_n, ns, o->lat_steps, settle, nsamp, (double)lat[0] / 1000.0, pct_ms(lat, nsamp, 50),
               pct_ms(lat, nsamp, 90), pct_ms(lat, nsamp, 99), (double)lat[nsamp - 1] / 1000.0, sum / (double)nsamp / 1000.0,
               pct_ms(lat_first, ns, 50), (double)lat_first[ns - 1] / 1000.0, dlq);
        if (nrel)
            printf("  steps >= 3 (the window releases n synthetic records): %zu samples, p50 %.1f ms, p99 %.1f ms; "
                   "steps 1-2 (no records yet): %zu samples, p50 %.1f ms\n",
                   nrel, pct_ms(lat_rel, nrel, 50), pct_ms(lat_rel, nrel, 99), nearly,
                   nearly ? pct_ms(lat_early, nearly, 50) : 0.0);
        printf("RESULT latency n=%" PRIu64 " samples=%zu: p50 %.1f ms, p99 %.1f ms\n", o->lat_n, nsamp,
               pct_ms(lat, nsamp, 50), pct_ms(lat, nsamp, 99));
        fflush(stdout);
        if (dlq != 0)
            rc = dp_err(errstr, errn, DP_ESTATE, "latency phase: %" PRId64 " dead letters", dlq);
    }
    if (pt.started) {
        char e2[256];
        proc_stop(&pt, e2, sizeof e2);
    }
    watcher_close(&w);
    producer_close(&p);
    producer_close(&mp);
    dp_panel_gen_free(&g);
    dp_stream_config_free(cfg);
    free(names);
    free(ids);
    free(lat);
    free(lat_first);
    free(lat_rel);
    free(lat_early);
    return rc;
}

/* --- main ------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_throughput [--individuals N (1000000)] [--steps T (10)]\n"
            "         [--latency-individuals N (25000)] [--latency-streams S (10)] [--latency-steps L (12)]\n"
            "         [--settle-ms MS (auto)] [--chunk-records R (1000)] [--compression none|lz4|… (none)]\n"
            "         [--bootstrap HOST:PORT ($DPSTREAM_BOOTSTRAP_SERVERS or 127.0.0.1:39092)]\n"
            "         [--timeout-s S (1800)] [--no-throughput] [--no-latency] [--no-decode-pass] [--keep-topics]\n"
            "         [--kafka NAME=VALUE (librdkafka property for every client; repeatable)]\n"
            "         [--verbose (print every latency sample)] [--debug-log (processor debug log)]\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (!s[0] || *end || v == 0)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    bench_opts o = {.n = 1000000, .steps = 10, .lat_n = 25000, .lat_streams = 10, .lat_steps = 12,
                    .compression = "none", .chunk_records = 1000, .timeout_s = 1800};
    o.bootstrap = dp_kafka_bootstrap_env() ? dp_kafka_bootstrap_env() : "127.0.0.1:39092";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t x = 0;
        int bad = 0;
        if (!strcmp(a, "--no-throughput")) { o.no_throughput = 1; continue; }
        if (!strcmp(a, "--no-latency")) { o.no_latency = 1; continue; }
        if (!strcmp(a, "--no-decode-pass")) { o.no_decode_pass = 1; continue; }
        if (!strcmp(a, "--keep-topics")) { o.keep_topics = 1; continue; }
        if (!strcmp(a, "--verbose")) { o.verbose = 1; continue; }
        if (!strcmp(a, "--debug-log")) { o.debug_log = 1; continue; }
        if (!v) { usage(); return 2; }
        i++;
        if (!strcmp(a, "--individuals")) bad = parse_u64(v, &o.n);
        else if (!strcmp(a, "--steps")) bad = parse_u64(v, &o.steps);
        else if (!strcmp(a, "--latency-individuals")) bad = parse_u64(v, &o.lat_n) || o.lat_n < 2;
        else if (!strcmp(a, "--latency-streams")) bad = parse_u64(v, &o.lat_streams) || o.lat_streams > 100;
        else if (!strcmp(a, "--latency-steps")) bad = parse_u64(v, &o.lat_steps);
        else if (!strcmp(a, "--settle-ms")) { bad = parse_u64(v, &x); o.settle_ms = (int64_t)x; }
        else if (!strcmp(a, "--chunk-records")) { bad = parse_u64(v, &x) || x > 1000000; o.chunk_records = (uint32_t)x; }
        else if (!strcmp(a, "--timeout-s")) { bad = parse_u64(v, &x); o.timeout_s = (int64_t)x; }
        else if (!strcmp(a, "--compression")) o.compression = v;
        else if (!strcmp(a, "--bootstrap")) o.bootstrap = v;
        else if (!strcmp(a, "--kafka") && o.n_kafka_kv < 16 && strchr(v, '=') && v[0] != '=') {
            char *kv = strdup(v);
            if (!kv) return 1;
            o.kafka_buf[o.n_kafka_kv] = kv;
            *strchr(kv, '=') = '\0';
            o.kafka_kv[o.n_kafka_kv][0] = kv;
            o.kafka_kv[o.n_kafka_kv][1] = kv + strlen(kv) + 1;
            o.n_kafka_kv++;
        }
        else bad = 1;
        if (bad) { usage(); return 2; }
    }
    dp_log_set_level(o.debug_log ? DP_LOG_DEBUG : DP_LOG_WARN);

    /* unique per run: pid + monotonic ns (names only; nothing else depends on it) */
    char prefix[96];
    snprintf(prefix, sizeof prefix, "bench-tp-%ld-%" PRId64, (long)getpid(), now_us());
    char err[2048];
    created cr;
    memset(&cr, 0, sizeof cr);
    dp_stream_config *acfg = make_config(&o, prefix, "x", 12, err, sizeof err);
    if (!acfg) {
        fprintf(stderr, "bench_throughput: %s\n", err);
        return 1;
    }
    /* no auto-creation: this handle knows the topics, and a metadata
     * refresh after DeleteTopics must not bring them back */
    const char *const admin_kv[][2] = {{"allow.auto.create.topics", "false"}};
    rd_kafka_conf_t *aconf = dp_kafka_conf(acfg, NULL, admin_kv, 1, err, sizeof err);
    rd_kafka_t *admin = aconf ? rd_kafka_new(RD_KAFKA_PRODUCER, aconf, err, sizeof err) : NULL;
    if (!admin) {
        fprintf(stderr, "bench_throughput: admin client: %s\n", err);
        dp_stream_config_free(acfg);
        return 1;
    }
    printf("bench_throughput: broker %s, topic prefix %s, librdkafka %s, extra kafka properties:", o.bootstrap, prefix,
           rd_kafka_version_str());
    for (size_t i = 0; i < o.n_kafka_kv; i++)
        printf(" %s=%s", o.kafka_kv[i][0], o.kafka_kv[i][1]);
    printf("%s\n", o.n_kafka_kv ? "" : " none");
    fflush(stdout);
    int rc = DP_OK;
    double e2e = 0;
    if (!o.no_throughput)
        rc = run_throughput(&o, prefix, admin, &cr, &e2e, err, sizeof err);
    if (rc == DP_OK && !o.no_latency)
        rc = run_latency(&o, prefix, admin, &cr, e2e, err, sizeof err);
    if (rc != DP_OK)
        fprintf(stderr, "bench_throughput: %s\n", err);
    if (!o.keep_topics)
        delete_created(admin, &cr);
    else
        printf("kept topics with prefix %s\n", prefix);
    rd_kafka_destroy(admin);
    dp_stream_config_free(acfg);
    for (size_t i = 0; i < o.n_kafka_kv; i++)
        free(o.kafka_buf[i]);
    return rc == DP_OK ? 0 : 1;
}
