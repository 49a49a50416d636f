/* bench_kafka.c — the Kafka harness of bench_throughput (bench_kafka.h). */
#define _GNU_SOURCE   /* pthread_setname_np */
#include "bench_kafka.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dp_error.h"
#include "stream/kafka_util.h"
#include "stream/log.h"

int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* CPU seconds of a clock (the whole process, or one thread) */
double cpu_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Busy CPU seconds of the whole machine so far (/proc/stat: user, nice,
 * system, irq, softirq, steal; not idle or iowait), so a window shows how
 * much of the machine's CPUs everything — this process and the broker
 * sharing the machine — used; -1 where /proc/stat is unreadable. */
double machine_busy_s(void)
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

void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* --- topics and groups ------------------------------------------------------------ */


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
int create_topics(rd_kafka_t *rk, const dp_stream_config *cfg, created *cr, char *errstr, size_t errn)
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
void delete_created(rd_kafka_t *rk, created *cr)
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

void add_group(created *cr, const char *g)
{
    if (cr->n_groups < 8)
        cr->groups[cr->n_groups++] = strdup(g);
}

/* --- input producer ------------------------------------------------------------------ */


static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    producer *p = opaque;
    if (m->err && !p->failed) {
        snprintf(p->failure, sizeof p->failure, "delivery failed: %s", rd_kafka_err2str(m->err));
        p->failed = 1;
    }
}

int producer_open(producer *p, const dp_stream_config *cfg, int fast, const char *compression,
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

void producer_close(producer *p)
{
    if (p->rk) {
        rd_kafka_flush(p->rk, 10000);
        rd_kafka_destroy(p->rk);
    }
    dp_codec_destroy(p->codec);
    dp_buf_free(&p->enc);
    memset(p, 0, sizeof *p);
}

int producer_send(producer *p, const dp_update *u, char *errstr, size_t errn)
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

int producer_flush(producer *p, char *errstr, size_t errn)
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
int send_step(producer *p, const char *stream, const dp_panel_gen *g, uint64_t step, uint64_t n_report,
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

int send_marker(producer *p, const char *stream, uint64_t step, char *errstr, size_t errn)
{
    dp_update mk = {.stream_id = stream, .stream_id_len = strlen(stream), .step = step,
                    .kind = DP_UPDATE_CLOSE_STEP};
    return producer_send(p, &mk, errstr, errn);
}

int panel_init(dp_panel_gen *g, uint64_t n, uint64_t steps, char *errstr, size_t errn)
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


static void *proc_main(void *arg)
{
    proc_thread *t = arg;
    pthread_setname_np(pthread_self(), "dp-processor");   /* so perf can tell it apart */
    t->rc = dp_processor_run(&t->o, t->err, sizeof t->err);
    __atomic_store_n(&t->finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

int proc_start(proc_thread *t, const dp_stream_config *cfg, uint32_t chunk_records, char *errstr, size_t errn)
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

int proc_running(proc_thread *t) { return t->started && !__atomic_load_n(&t->finished, __ATOMIC_ACQUIRE); }

int proc_stop(proc_thread *t, char *errstr, size_t errn)
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



int watcher_open(watcher *w, const dp_stream_config *cfg, const char *group, uint64_t horizon,
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

void watcher_close(watcher *w)
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
void watcher_poll(watcher *w, int timeout_ms)
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
int watcher_wait(watcher *w, size_t si, uint64_t step, proc_thread *pt, int64_t deadline_us,
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

int64_t high_watermark(rd_kafka_t *rk, const char *topic)
{
    int64_t lo = 0, hi = -1;
    if (rd_kafka_query_watermark_offsets(rk, topic, 0, &lo, &hi, 10000))
        return -1;
    return hi;
}

/* --- phase 2a: raw consume --------------------------------------------------------- */


/* The processor's consumer (processor.c setup()): the same config, the
 * same defaults and fixed properties, polled through the consumer queue;
 * NULL with a message if it cannot be made. */
rd_kafka_t *bench_consumer_new(const dp_stream_config *cfg, const char *group, const char *who, char *errstr,
                               size_t errn)
{
    const char *const cons_kv[][2] = {{"group.id", group},
                                      {"enable.auto.commit", "false"},
                                      {"enable.auto.offset.store", "false"},
                                      {"isolation.level", "read_committed"},
                                      {"auto.offset.reset", "earliest"}};
    rd_kafka_conf_t *conf = dp_kafka_conf_with_defaults(cfg, NULL, dp_processor_consumer_defaults,
                                                        dp_processor_consumer_defaults_n, cons_kv, 5, errstr, errn);
    if (!conf)
        return NULL;
    char err[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) {
        dp_err(errstr, errn, DP_EIO, "%s: %s", who, err);
        return NULL;
    }
    rd_kafka_poll_set_consumer(rk);
    return rk;
}

int bench_subscribe(rd_kafka_t *rk, const char *topic, char *errstr, size_t errn)
{
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = rd_kafka_subscribe(rk, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    return e ? dp_err(errstr, errn, DP_EIO, "subscribe to %s: %s", topic, rd_kafka_err2str(e)) : DP_OK;
}

/* The processor's consumer, minus the processing: bench_consumer_new,
 * subscribe, and the processor's loop: one rd_kafka_consumer_poll, then
 * rd_kafka_consume_batch_queue without waiting for what is already queued
 * (up to 1024 messages).  `decode`: also decode every message
 * (dp_codec_decode_update). */
int raw_consume(const dp_stream_config *cfg, const char *group, uint64_t expect, uint64_t step1_msgs,
                int decode, int64_t deadline_us, raw_result *r, char *errstr, size_t errn)
{
    memset(r, 0, sizeof *r);
    rd_kafka_t *rk = bench_consumer_new(cfg, group, "raw consumer", errstr, errn);
    if (!rk)
        return DP_EIO;
    dp_codec *codec = NULL;
    dp_codec_options copts;
    dp_stream_config_codec_options(cfg, &copts);
    int rc = decode ? dp_codec_create(&codec, &copts, errstr, errn) : DP_OK;
    int64_t t0 = now_us(), t_step1 = 0;
    double c0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID), c_step1 = 0, m_step1 = 0;
    if (rc == DP_OK)
        rc = bench_subscribe(rk, cfg->topic_updates, errstr, errn);
    char err[512];
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
