/* processor.c — `dpstream run`'s processor: set up the clients, run the
 * loop (consume a batch, handle it, rewind after a failed transaction,
 * commit pending dead letters on a timer, idle markers, progress log),
 * shut down cleanly.  processor.h describes the protocol; the parts live
 * in consume_loop.c, committer.c, snapshot_publish.c, restore.c and
 * rebalance.c (processor_internal.h: who owns which field).
 *
 * Owns: the options and configuration, the group and instance ids, the
 * clients (consumer, producer, marker_producer, queue), the codec, the
 * batch clock (now) and the progress log's marks, and the roles' topics
 * and shard count (docs/kafka.md §10).  Calls: consume_loop (the batch),
 * release_loop (the release role's batch), committer (transactions), rebalance (re-seek, rewind),
 * snapshot_publish (its buffers), processor_state (the tables, fatal),
 * state_layout, kafka_util, stats (the merge scratch), metrics (the
 * sharded streams' step progress, public: docs/kafka.md §10). */
#include "stream/processor.h"

#include <time.h>
#include <unistd.h>

#include <ctype.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "core/dp_error.h"
#include "stream/log.h"
#include "stream/processor_internal.h"
#include "stream/committer.h"
#include "stream/consume_loop.h"
#include "stream/kafka_util.h"
#include "stream/rebalance.h"
#include "stream/release_loop.h"
#include "stream/snapshot_publish.h"
#include "stream/state_layout.h"

const char *const dp_processor_consumer_defaults[][2] = {{"queued.min.messages", "1000000"},
                                                         {"queued.max.messages.kbytes", "524288"}};
const size_t dp_processor_consumer_defaults_n =
    sizeof dp_processor_consumer_defaults / sizeof dp_processor_consumer_defaults[0];

/* --- setup ------------------------------------------------------------------------ */

/* librdkafka's statistics, on the consumer's poll (= the loop's) thread. */
static int kafka_stats(rd_kafka_t *rk, char *json, size_t len, void *opaque)
{
    (void)rk;
    proc *p = opaque;
    if (p->o->metrics)
        dp_metrics_kafka_stats(p->o->metrics, json, len);
    return 0;   /* librdkafka frees json */
}

static const char *config_value(const dp_stream_config *c, const char *name)
{
    for (size_t i = 0; i < c->n_kafka; i++)
        if (strcmp(c->kafka[i].name, name) == 0)
            return c->kafka[i].value;
    return NULL;
}

int dp_processor_default_instance_id(char *out, size_t out_size)
{
    char host[256];
    if (out_size < 2 || gethostname(host, sizeof host) != 0)
        return DP_EIO;
    host[sizeof host - 1] = '\0';
    /* Kafka takes any transactional.id, but the id also lands in logs and
     * metrics: keep [A-Za-z0-9._-], map anything else to '_', at most 64. */
    size_t n = 0;
    for (const char *c = host; *c && n + 1 < out_size && n < 64; c++)
        out[n++] = (isalnum((unsigned char)*c) || *c == '.' || *c == '_' || *c == '-') ? *c : '_';
    out[n] = '\0';
    return n ? DP_OK : DP_EIO;
}

int dp_processor_transactional_id(const char *group_id, const char *instance_id, char *out, size_t out_size)
{
    int n = snprintf(out, out_size, "%s.%s", group_id, instance_id);
    return n > 0 && (size_t)n < out_size ? DP_OK : DP_ERANGE;
}

/* Create the topics that are missing — the updates topic too, so that it
 * gets the configured partitions rather than whatever a producer's
 * auto-creation would give it — with "topics.partitions" and
 * "topics.replication_factor"; then the compacted state topic with as many
 * partitions as the updates topic has (it may predate this configuration):
 * state partition i holds updates partition i's state (state_layout.h). */
static int create_topics(proc *p, char *errstr, size_t errn)
{
    const dp_stream_config *c = p->cfg;
    /* the roles' statistics topic: deleted after retention, not compacted (docs/kafka.md §10) */
    dp_topic_spec specs[] = {dp_kafka_topic_spec(c, p->o->config->topic_updates, 0),
                             dp_kafka_topic_spec(c, c->topic_synthetic, 0), dp_kafka_topic_spec(c, c->topic_budget, 0),
                             dp_kafka_topic_spec(c, c->topic_dead_letter, 0), dp_kafka_topic_spec(c, p->topic_stats, 0)};
    size_t n_specs = sizeof specs / sizeof specs[0] - (p->o->role == DP_PROCESSOR_ROLE_ALL);
    int rc = dp_kafka_create_topics(p->producer, specs, n_specs, KAFKA_TIMEOUT_MS, errstr, errn);
    int32_t n = 0;
    if (rc == DP_OK)
        rc = dp_kafka_topic_partitions(p->producer, c->topic_updates, KAFKA_TIMEOUT_MS, &n, errstr, errn);
    if (rc != DP_OK)
        return rc;
    dp_topic_spec state = dp_kafka_topic_spec(c, c->topic_state, 1);
    state.partitions = (int)n;
    return dp_kafka_create_topics(p->producer, &state, 1, KAFKA_TIMEOUT_MS, errstr, errn);
}

/* Delivery reports of the transactional producer.  A failed delivery
 * already makes the transaction abortable (commit fails, we rewind), so
 * nothing is decided here — but with a callback set, librdkafka queues the
 * reports and a flush (inside commit_transaction) wakes on each one; without
 * it, 2.0.2's flush sleeps in 10 ms slices, which was a third of every
 * step's close-to-release latency (bench/RESULTS.md). */
static void delivered(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    if (m->err)
        dp_log(DP_LOG_DEBUG, "delivery to %s failed: %s", rd_kafka_topic_name(m->rkt), rd_kafka_err2str(m->err));
}

static int setup(proc *p, char *errstr, size_t errn)
{
    char err[512];
    const char *gid = config_value(p->cfg, "group.id");
    snprintf(p->group_id, sizeof p->group_id, "%s", gid ? gid : p->cfg->topic_prefix);
    if (!gid)
        snprintf(p->group_id, sizeof p->group_id, "%s.processor", p->cfg->topic_prefix);
    if (p->o->role == DP_PROCESSOR_ROLE_RELEASE) {   /* a group of its own (docs/kafka.md §10) */
        size_t gl = strlen(p->group_id);
        snprintf(p->group_id + gl, sizeof p->group_id - gl, ".release");
    }
    const char *mmb = config_value(p->cfg, "message.max.bytes");
    p->max_message_bytes = mmb ? (size_t)strtoull(mmb, NULL, 10) : 1000000;
    if (p->max_message_bytes < 1000)
        p->max_message_bytes = 1000000;
    p->max_message_bytes -= 512;   /* headroom for the key, headers and record overhead */
    char txid[512];
    /* The instance id names this instance's transactional producer: the
     * same id after a restart fences the crashed predecessor and aborts its
     * open transaction; two live instances with one id fence each other.
     * Without one given, the host name: stable across restarts, distinct
     * between hosts (containers and pods have their own). */
    const char *why = "given";
    if (p->o->instance_id && *p->o->instance_id) {
        snprintf(p->instance_id, sizeof p->instance_id, "%s", p->o->instance_id);
    } else if (dp_processor_default_instance_id(p->instance_id, sizeof p->instance_id) == DP_OK) {
        why = "this host's name; give each instance on one host its own with --instance-id or "
              "$DPSTREAM_INSTANCE_ID";
    } else {
        return dp_err(errstr, errn, DP_EINVAL, "no instance id given and the host name is unknown: give "
                      "--instance-id or $DPSTREAM_INSTANCE_ID (stable per instance, distinct between instances)");
    }
    if (dp_processor_transactional_id(p->group_id, p->instance_id, txid, sizeof txid) != DP_OK)
        return dp_err(errstr, errn, DP_ERANGE, "group id and instance id too long");
    /* The startup summary, before the first broker round trip (so it is
     * there even when the broker is not): what this instance reads and
     * writes and how its state is protected — public configuration only. */
    dp_log_event(DP_LOG_INFO, "startup", NULL, 0, 0,
                 "starting instance '%s' (%s): %zu stream route(s), updates %s, outputs %s, %s, %s, "
                 "state %s (snapshots %s)", p->instance_id, why, p->cfg->n_routes,
                 p->cfg->topic_updates, p->cfg->topic_synthetic, p->cfg->topic_budget, p->cfg->topic_dead_letter,
                 p->cfg->topic_state,
                 p->o->state_key ? "sealed with the state key" : "authenticated, not encrypted: no state key");

    /* transactional producer */
    const char *const prod_kv[][2] = {{"transactional.id", txid}, {"enable.idempotence", "true"}, {"acks", "all"}};
    rd_kafka_conf_t *conf = dp_kafka_conf(p->cfg, p->o->bootstrap_override, prod_kv, 3, errstr, errn);
    if (!conf)
        return DP_EINVAL;
    rd_kafka_conf_set_dr_msg_cb(conf, delivered);
    if (!(p->producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err)))
        return dp_err(errstr, errn, DP_EINVAL, "producer: %s", err);

    /* marker producer: plain idempotent, so appended markers are visible at once */
    const char *const mk_kv[][2] = {{"enable.idempotence", "true"}, {"acks", "all"}, {"linger.ms", "0"}};
    if (!(conf = dp_kafka_conf(p->cfg, p->o->bootstrap_override, mk_kv, 3, errstr, errn)))
        return DP_EINVAL;
    if (!(p->marker_producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err)))
        return dp_err(errstr, errn, DP_EINVAL, "marker producer: %s", err);

    /* Fail in seconds, saying so, when no broker answers — not at the
     * first 30 s admin or transaction timeout. */
    int rc = dp_kafka_check_reachable(p->producer, p->o->connect_timeout_ms > 0 ? (int)p->o->connect_timeout_ms
                                                                              : DP_KAFKA_DEFAULT_CONNECT_TIMEOUT_MS,
                                      errstr, errn);
    if (rc != DP_OK)
        return rc;
    rc = p->o->skip_create_topics ? DP_OK : create_topics(p, errstr, errn);
    /* Before any state is read or written: same partition counts, and a
     * state topic of this layout (or a new one, marked now). */
    if (rc == DP_OK)
        rc = dp_state_layout_check(p->cfg, p->o->bootstrap_override, p->producer, p->marker_producer, p->instance_id,
                                   errstr, errn);
    /* The release role's shard count: the updates topic's partitions, what
     * every statistics record must say (a changed count is refused). */
    if (rc == DP_OK && p->o->role == DP_PROCESSOR_ROLE_RELEASE)
        rc = dp_kafka_topic_partitions(p->producer, p->o->config->topic_updates, KAFKA_TIMEOUT_MS, &p->shard_count,
                                       errstr, errn);
    if (rc != DP_OK)
        return rc;
    /* Fences any zombie with the same transactional.id and aborts its open
     * transaction before we read state. */
    rd_kafka_error_t *e = rd_kafka_init_transactions(p->producer, 2 * KAFKA_TIMEOUT_MS);
    if (e) {
        rc = dp_err(errstr, errn, DP_EIO, "init_transactions (%s): %s", txid, rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        return rc;
    }

    /* consumer */
    const char *const cons_kv[][2] = {{"group.id", p->group_id},
                                      {"enable.auto.commit", "false"},
                                      {"enable.auto.offset.store", "false"},
                                      {"isolation.level", "read_committed"},
                                      {"auto.offset.reset", "earliest"}};
    if (!(conf = dp_kafka_conf_with_defaults(p->cfg, p->o->bootstrap_override, dp_processor_consumer_defaults,
                                             dp_processor_consumer_defaults_n,
                                             cons_kv, 5, errstr, errn)))
        return DP_EINVAL;
    rd_kafka_conf_set_rebalance_cb(conf, ps_rebalance_cb);
    rd_kafka_conf_set_opaque(conf, p);
    if (p->o->metrics && dp_metrics_input_enabled(p->o->metrics)) {
        /* the input-class gauges from librdkafka's statistics, every 5 s
         * unless the config's "kafka" object sets the interval */
        if (!config_value(p->cfg, "statistics.interval.ms") &&
            rd_kafka_conf_set(conf, "statistics.interval.ms", "5000", err, sizeof err) != RD_KAFKA_CONF_OK)
            return dp_err(errstr, errn, DP_EINVAL, "consumer: %s", err);
        rd_kafka_conf_set_stats_cb(conf, kafka_stats);
    }
    if (!(p->consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err)))
        return dp_err(errstr, errn, DP_EINVAL, "consumer: %s", err);
    rd_kafka_poll_set_consumer(p->consumer);
    p->queue = rd_kafka_queue_get_consumer(p->consumer);
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, p->cfg->topic_updates, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t se = rd_kafka_subscribe(p->consumer, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (se)
        return dp_err(errstr, errn, DP_EIO, "subscribe to %s: %s", p->cfg->topic_updates, rd_kafka_err2str(se));
    dp_log_event(DP_LOG_INFO, "subscribed", NULL, 0, 0, "consuming %s as group '%s', transactional.id '%s'",
                 p->cfg->topic_updates, p->group_id, txid);
    return DP_OK;
}
/* --- the loop --------------------------------------------------------------------- */

static void log_progress(proc *p, int64_t now)
{
    /* lag = high watermark - handled position, over the assigned partitions
     * (cached watermarks; no broker round trip) */
    int64_t lag = 0;
    for (int32_t i = 0; i < p->n_parts; i++) {
        int64_t lo = 0, hi = 0;
        if (p->parts[i].assigned && p->parts[i].position != NO_OFFSET &&
            rd_kafka_get_watermark_offsets(p->consumer, p->cfg->topic_updates, i, &lo, &hi) ==
                RD_KAFKA_RESP_ERR_NO_ERROR &&
            hi > p->parts[i].position)
            lag += hi - p->parts[i].position;
    }
    double secs = (double)(now - p->last_progress_ms) / 1000.0;
    dp_log_event(DP_LOG_INFO, "progress", NULL, 0, 0,
           "progress: %.1f records/s, %" PRIu64 " records, %" PRIu64 " steps released, %" PRIu64
           " dead letters, %" PRIu64 " idle markers, %zu streams, lag %" PRId64,
           secs > 0 ? (double)(p->n_msgs - p->last_msgs) / secs : 0.0, p->n_msgs, p->n_steps, p->n_dlq,
           p->n_markers, p->streams.count, lag);
    p->last_msgs = p->n_msgs;
    p->last_progress_ms = now;
}

/* The sharded streams' step progress for the next view (metrics.h): each
 * shard's open step, each released stream's next step and its shards'
 * arrivals — public: step boundaries (docs/kafka.md §10). */
static void metrics_progress(proc *p, dp_metrics *m)
{
    dp_metrics_progress_begin(m);
    for (size_t i = 0; i < p->streams.cap; i++) {
        const ps_stream *s = dp_bytes_map_at(&p->streams, i);
        if (!s || !s->synth)
            continue;
        if (s->kind == PS_STREAM_SHARD) {
            dp_metrics_shard_progress(m, s->id, s->id_len, s->partition, dp_synth_open_step(s->synth));
        } else if (s->kind == PS_STREAM_RELEASE) {
            uint64_t next = dp_synth_release_next_step(s->synth);
            uint8_t *arrived = dp_metrics_release_progress(m, s->id, s->id_len, next, s->merger.shards);
            for (uint32_t k = 0; arrived && k < s->merger.shards; k++)
                arrived[k] = (uint8_t)dp_stats_merger_has(&s->merger, next, k);
        }
    }
}

/* The metrics' view is due: lags (cached watermarks) and the heartbeat. */
static void metrics_tick(proc *p, int64_t now, int64_t *last_lag_ms)
{
    dp_metrics *m = p->o->metrics;
    if (dp_metrics_input_enabled(m) && now - *last_lag_ms >= 500) {
        *last_lag_ms = now;
        for (int32_t i = 0; i < p->n_parts; i++) {
            int64_t lo = 0, hi = 0, lag = -1;
            if (p->parts[i].assigned && p->parts[i].position != NO_OFFSET &&
                rd_kafka_get_watermark_offsets(p->consumer, p->cfg->topic_updates, i, &lo, &hi) ==
                    RD_KAFKA_RESP_ERR_NO_ERROR)
                lag = hi > p->parts[i].position ? hi - p->parts[i].position : 0;
            dp_metrics_lag(m, i, p->parts[i].assigned ? lag : -1);
        }
    }
    if (dp_metrics_due(m, now))
        metrics_progress(p, m);
    dp_metrics_tick(m, now);
}

static void teardown(proc *p)
{
    ps_committer_abandon(p);   /* a commit still running only after a fatal error: just let it finish */
    if (p->queue)
        rd_kafka_queue_destroy(p->queue);
    if (p->consumer) {
        rd_kafka_consumer_close(p->consumer);   /* leaves the group (revoke callback runs) */
        rd_kafka_destroy(p->consumer);
    }
    if (p->producer)
        rd_kafka_destroy(p->producer);
    if (p->marker_producer) {
        rd_kafka_flush(p->marker_producer, 10000);
        rd_kafka_destroy(p->marker_producer);
    }
    ps_state_free(p);
    ps_release_free(p);
    dp_stats_free(&p->merged);
    dp_codec_destroy(p->codec);
    ps_consume_free(p);
    ps_committer_free(p);
}

int dp_processor_run(const dp_processor_options *o, char *errstr, size_t errstr_size)
{
    if (!o || !o->config || !o->noise_key || !o->stop || o->chunk_records == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "processor: missing option");
    proc p;
    memset(&p, 0, sizeof p);
    p.o = o;
    p.cfg = o->config;
    snprintf(p.topic_stats, sizeof p.topic_stats, "%s.stats", o->config->topic_prefix);
    if (o->role == DP_PROCESSOR_ROLE_RELEASE) {
        /* the release role is this processor over the statistics topic, its
         * state in a topic co-partitioned with that one (docs/kafka.md §10) */
        snprintf(p.topic_release_state, sizeof p.topic_release_state, "%s.release-state", o->config->topic_prefix);
        p.role_cfg = *o->config;
        p.role_cfg.topic_updates = p.topic_stats;
        p.role_cfg.topic_state = p.topic_release_state;
        p.cfg = &p.role_cfg;
    }
    ps_state_init(&p);
    dp_codec_options copts;
    dp_stream_config_codec_options(p.cfg, &copts);
    copts.resolve_update_writers = o->registry != NULL;
    int rc = dp_codec_create(&p.codec, &copts, errstr, errstr_size);
    if (rc == DP_OK && (ps_consume_init(&p) != DP_OK || ps_committer_create(&p) != DP_OK))
        rc = dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    if (rc == DP_OK)
        rc = setup(&p, errstr, errstr_size);
    p.last_progress_ms = ps_now_ms();
    int64_t last_idle_check = 0, last_lag_ms = 0;
    while (rc == DP_OK && !*o->stop && !p.fatal) {
        uint64_t generation = p.generation;
        ssize_t n = ps_consume_batch(&p);
        p.now = ps_now_ms();
        if (n < 0) {
            rc = dp_err(errstr, errstr_size, DP_EIO, "consume: %s", rd_kafka_err2str(rd_kafka_last_error()));
            break;
        }
        int hr = DP_OK;
        if (p.generation != generation && n > 0)
            hr = p.fatal ? DP_OK : ps_reseek_assigned(&p);
        else if (o->role == DP_PROCESSOR_ROLE_RELEASE)
            hr = ps_release_handle_batch(&p, (size_t)n);
        else
            hr = ps_handle_batch(&p, (size_t)n);
        ps_consume_release(&p, n);
        if (hr == DP_ENOMEM) {
            rc = dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
        } else if (hr != DP_OK && !p.fatal) {
            /* transaction trouble: state rolled back below */
            ps_txn_fail(&p);
        }
        if (ps_txn_need_rewind(&p) && !p.fatal && ps_rewind_assigned(&p) != DP_OK && !p.fatal && !*o->stop)
            ps_set_fatal(&p, "%s", "could not restore state after an aborted transaction");
        int64_t now = p.now;
        if (ps_txn_open_for(&p, now, o->dlq_commit_ms))
            ps_txn_commit(&p, 0);   /* dead letters with no step close to ride on */
        if (now - last_idle_check >= 200 && o->role != DP_PROCESSOR_ROLE_RELEASE) {
            ps_idle_markers(&p);
            last_idle_check = now;
        }
        if (o->progress_interval_ms > 0 && now - p.last_progress_ms >= o->progress_interval_ms)
            log_progress(&p, now);
        /* A failed commit is aborted and marked for rewinding (committer.h):
         * rewound on the next turn, like a failed close. */
        (void)ps_commit_poll(&p);
        if (o->metrics)
            metrics_tick(&p, now, &last_lag_ms);
    }
    if (rc == DP_OK && p.fatal)
        rc = dp_err(errstr, errstr_size, p.fatal_refused ? DP_EKEY : DP_ESTATE, "%s", p.fatal_msg);
    if (ps_commit_wait(&p) != DP_OK && !p.fatal)
        dp_log_event(DP_LOG_WARN, "shutdown", NULL, 0, 0, "%s",
                     "shutdown: the last step's transaction failed and was aborted");
    if (ps_txn_is_open(&p) && !p.fatal) {
        if (ps_txn_commit(&p, 1) != DP_OK)
            dp_log_event(DP_LOG_WARN, "shutdown", NULL, 0, 0, "shutdown: open transaction aborted");
    } else if (ps_txn_is_open(&p)) {
        ps_txn_abort(&p);
    }
    if (p.consumer)
        log_progress(&p, ps_now_ms());
    teardown(&p);
    return rc;
}
