/* consume_loop.c — what the processor does with each input message, in
 * log order (the decisions of processor.h's table): decode, route, skip
 * what a restored snapshot already holds, dead-letter rejections, ingest
 * (runs of one stream's plain updates as one batch), close steps, and
 * append CLOSE_STEP markers after an idle timeout.  Under the ingest role
 * an update keyed as a shard's goes to its partition's shard of a sharded
 * stream, whose close publishes the shard's statistics instead of a
 * release (docs/kafka.md §10).
 *
 * Owns: new streams until they are in the table, each stream's gate,
 * skip_below, pending and step timer, each partition's position and
 * handled time, the poll batch (allocated, filled, decoded, released here)
 * and the run being collected, its encoder (dead letters, markers), the
 * idle-marker bookkeeping, and the progress counters n_msgs, n_steps,
 * n_dlq, n_markers.  Calls: route_table (an update's stream, the rule
 * replay shares), shard_key (the KEY_MISMATCH rule), synth (ingest,
 * close, a shard's ingest close), role_state (a shard's statistics
 * record), snapshot_publish (the release and the snapshot), committer
 * (transactions, produce, a partition consumed), processor_state (the
 * tables). */
#include "stream/consume_loop.h"

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
#include "stream/kafka_util.h"
#include "stream/role_state.h"
#include "stream/route_table.h"
#include "stream/shard_key.h"
#include "stream/snapshot_publish.h"

/* --- dead letters ---------------------------------------------------------------- */

/* A rejection to the dead-letter topic.  `always`: publish even below
 * dlq_below — for held updates judged at a close, whose dead letter is
 * part of that close's transaction and so was never published if the
 * close is being re-executed (see processor.h). */
static int dead_letter_at(proc *p, int32_t partition, int64_t offset, const void *key, size_t key_len,
                          const void *raw, size_t raw_len, dp_reject_reason reason, const char *text, int always)
{
    ps_partition *pp = &p->parts[partition];
    if (!always && offset < pp->dlq_below)
        return DP_OK;   /* already published before a restart (see processor.h) */
    int rc = ps_txn_begin(p);
    if (rc != DP_OK)
        return rc;
    dp_codec_dead_letter d = {.topic = p->cfg->topic_updates,
                              .partition = partition,
                              .offset = offset,
                              .key = key,
                              .key_len = key_len,
                              .reason = reason,
                              .text = text,
                              .raw = raw,
                              .raw_len = raw_len};
    p->loop_enc.len = 0;
    char err[256];
    if ((rc = dp_codec_encode_dead_letter_buf(p->codec, &d, &p->loop_enc, err, sizeof err)) != DP_OK) {
        dp_log(DP_LOG_ERROR, "cannot encode a dead letter: %s", err);
        return rc;
    }
    rc = ps_produce(p, p->producer, p->cfg->topic_dead_letter, RD_KAFKA_PARTITION_UA,
                    dp_codec_type_name(DP_CODEC_DEAD_LETTER), key, key_len, p->loop_enc.data, p->loop_enc.len);
    if (rc == DP_OK) {
        p->n_dlq++;
        if (p->o->metrics)
            dp_metrics_stage_dead_letter(p->o->metrics, reason);
    }
    dp_log_partition_event(DP_LOG_DEBUG, "dead_letter", partition, "dead letter %s at %s[%" PRId32 "]@%" PRId64 ": %s",
                           dp_reject_reason_name(reason), p->cfg->topic_updates, partition, offset, text);
    return rc;
}

static int dead_letter(proc *p, const rd_kafka_message_t *m, dp_reject_reason reason, const char *text)
{
    return dead_letter_at(p, m->partition, m->offset, m->key, m->key_len, m->payload, m->len, reason, text, 0);
}

/* --- closing a step --------------------------------------------------------------- */

/* A held update judged by the close that opened its step (step_gate.h). */
static int held_applied(void *ctx, const dp_update *u, uint64_t origin, const uint8_t *raw, size_t raw_len,
                        dp_reject_reason reason)
{
    proc *p = ctx;
    if (reason == DP_REJECT_NONE)
        return DP_OK;
    return dead_letter_at(p, p->closing->partition, (int64_t)origin, u->stream_id, u->stream_id_len, raw, raw_len,
                          reason, dp_reject_reason_text(reason), 1);
}

/* A shard's close (ingest role, docs/kafka.md §10): its ingest half alone,
 * its exact statistics of the step to <prefix>.stats in the close's
 * transaction — every shard, every step, empty or not. */
static int close_shard(proc *p, ps_stream *s, int *again, char *err, size_t n)
{
    dp_stats st;
    dp_stats_init(&st, 0);
    int rc = dp_gate_close_ingest(&s->gate, &st, held_applied, p, again, err, n);
    if (rc == DP_OK)
        rc = ps_shard_stats_publish(p, s, &st, err, n);
    dp_stats_free(&st);
    return rc;
}

/* Close s's open step (and the next ones while the gate asks for it: held
 * updates can complete a roster); the message at `offset` triggered it. */
static int close_step(proc *p, ps_stream *s, int64_t offset)
{
    int again = 1;
    while (again) {
        int64_t t0 = ps_now_ms();
        int rc = ps_txn_begin(p);
        if (rc != DP_OK)
            return rc;
        dp_release_sink sink = ps_release_begin(p, s);
        char err[512];
        err[0] = '\0';
        rc = s->kind == PS_STREAM_SHARD ? close_shard(p, s, &again, err, sizeof err)
                                        : dp_gate_close(&s->gate, &sink, held_applied, p, &again, err, sizeof err);
        if (rc != DP_OK) {
            dp_log_event(DP_LOG_ERROR, "step_close_failed", s->id, s->id_len, p->closing_step,
                         "closing step %" PRIu64 " of stream '%s' failed: %s", p->closing_step, s->id,
                         err[0] ? err : dp_status_str(rc));
            ps_release_end(p);
            ps_txn_abort(p);
            return rc;
        }
        /* Everything held was for the step that just opened (lookahead <= 1)
         * and is now in the state the snapshot records. */
        s->skip_below = offset + 1;
        s->pending = NO_OFFSET;
        s->marker_step = 0;
        s->step_opened_ms = ps_now_ms();
        if ((rc = ps_write_snapshot(p, s)) != DP_OK) {
            ps_release_end(p);
            ps_txn_abort(p);
            return rc;
        }
        ps_release_end(p);
        if (p->o->metrics)
            dp_metrics_stage_close_time(p->o->metrics, (double)(ps_now_ms() - t0) / 1000.0);
        if ((rc = ps_txn_commit(p, 0)) != DP_OK)
            return rc;
        p->n_steps++;
        if (s->kind == PS_STREAM_SHARD)
            dp_log_event(DP_LOG_INFO, "shard_step_closed", s->id, s->id_len, p->closing_step,
                         "closed step %" PRIu64 " of stream '%s' shard %" PRId32 ": statistics published",
                         p->closing_step, s->id, s->partition);
        else
            dp_log_event(DP_LOG_INFO, "step_released", s->id, s->id_len, p->closing_step,
                         "released step %" PRIu64 " of stream '%s'", p->closing_step, s->id);
    }
    return DP_OK;
}

/* --- input messages ------------------------------------------------------------- */

/* Mark m's partition as consumed up to m.  Called only when m is about to
 * be acted on: a commit inside an earlier message's close must not cover
 * a message that was fetched but not yet handled. */
static void consumed(proc *p, const rd_kafka_message_t *m)
{
    ps_partition *pp = &p->parts[m->partition];
    pp->position = m->offset + 1;
    ps_txn_consumed(p, pp);
    if (p->o->metrics)
        dp_metrics_consumed(p->o->metrics, m->partition, 1);
}

static int accepted(proc *p, ps_stream *s, int64_t offset)
{
    if (s->pending == NO_OFFSET)
        s->pending = offset;
    if (p->o->metrics)
        dp_metrics_accepted(p->o->metrics, 1);
    return DP_OK;
}

/* Everything the header comment lists for one decoded message (its
 * partition is assigned and already marked consumed). */
/* One stream, one partition, one owner (README: input contract): the key
 * must be the stream id, and the partition the one the configured
 * partitioner gives that key — else two instances could each build a
 * state for the stream and each spend its budget.  The check needs only
 * the message's own key, partition and stream field (shard_key.h: the one
 * rule; `run` serves no sharded route yet, stream_config.h). */
static int key_mismatch(proc *p, const rd_kafka_message_t *m, const dp_update *u, int sharded, char *msg, size_t n)
{
    /* the key first: the partition count costs a metadata request the first time */
    return dp_update_key_mismatch(p->cfg->partitioner, u, sharded, m->key, m->key_len, m->partition, 0, msg, n) ||
           dp_update_key_mismatch(p->cfg->partitioner, u, sharded, m->key, m->key_len, m->partition,
                                  ps_input_partition_count(p), msg, n);
}

/* The placement check of a new stream (route_table.h), in context. */
typedef struct placement {
    proc                     *p;
    const rd_kafka_message_t *m;
    const dp_update          *u;
    char                     *msg;
    size_t                    msg_size;
    int                       sharded;   /* the key is a shard's (ingest role, docs/kafka.md §10) */
} placement;

static int placement_refused(void *ctx)
{
    placement *pl = ctx;
    return key_mismatch(pl->p, pl->m, pl->u, pl->sharded, pl->msg, pl->msg_size);
}

/* An update keyed as a shard's (stream id ‖ 0x00 ‖ entity: shard_key.h):
 * under the ingest role, of a sharded route, in the partition its key
 * gives (a marker: any), it goes to the shard of its partition, whose
 * table key is put in tk[0..*tk_len) — DP_OK.  Else the dead letter that
 * says why (DP_ENOTFOUND when one was written). */
static int shard_key_route(proc *p, const rd_kafka_message_t *m, const dp_update *u, char *tk, size_t *tk_len,
                           char *msg, size_t n)
{
    const dp_stream_route *r = dp_stream_config_route(p->cfg, u->stream_id, u->stream_id_len);
    int rc;
    if (!r)
        rc = dead_letter(p, m, DP_REJECT_UNKNOWN_STREAM, dp_reject_reason_text(DP_REJECT_UNKNOWN_STREAM));
    else if (!r->sharded || p->o->role != DP_PROCESSOR_ROLE_INGEST || key_mismatch(p, m, u, 1, msg, n))
        rc = dead_letter(p, m, DP_REJECT_KEY_MISMATCH,
                         key_mismatch(p, m, u, r->sharded && p->o->role == DP_PROCESSOR_ROLE_INGEST, msg, n) ? msg
                                                                                                            : "");
    else if (!(*tk_len = ps_shard_table_key(u->stream_id, u->stream_id_len, m->partition, tk, *tk_len)))
        rc = dead_letter(p, m, DP_REJECT_KEY_MISMATCH, "stream id too long");
    else
        return DP_OK;
    return rc == DP_OK ? DP_ENOTFOUND : rc;
}

static const dp_stream_route *stream_route_of(const void *stream, int32_t *partition)
{
    const ps_stream *s = stream;
    *partition = s->partition;
    return s->route;
}

/* A new stream for m's update under `route`, in the table; DP_OK or a fatal status. */
static int open_stream(proc *p, const rd_kafka_message_t *m, const dp_update *u, const dp_stream_route *route,
                       ps_stream **out)
{
    ps_stream *s = ps_stream_new(p, u->stream_id, u->stream_id_len, route, m->partition);
    if (!s)
        return DP_ENOMEM;
    char err[512];
    int rc = dp_route_open(route, p->o->noise_key, s->id, s->id_len, &s->synth, &s->gate, err, sizeof err);
    if (rc != DP_OK) {
        ps_stream_free(s);
        ps_set_fatal(p, "cannot create a synthesizer: %s", err[0] ? err : dp_status_str(rc));
        return rc;
    }
    s->step_opened_ms = p->now;
    if (ps_stream_put(p, s) != DP_OK)
        return DP_ENOMEM;
    *out = s;
    return DP_OK;
}

static int handle_update(proc *p, const rd_kafka_message_t *m, const dp_update *u)
{
    char msg[384], tk[DP_SHARD_TABLE_KEY_MAX];
    size_t tk_len = sizeof tk;
    int rc, sharded = m->key && memchr(m->key, DP_SHARD_KEY_SEP, m->key_len) != NULL;
    if (sharded && (rc = shard_key_route(p, m, u, tk, &tk_len, msg, sizeof msg)) != DP_OK)
        return rc == DP_ENOTFOUND ? DP_OK : rc;
    if (!sharded && (!m->key || m->key_len != u->stream_id_len || memcmp(m->key, u->stream_id, m->key_len) != 0))
        return dead_letter(p, m, DP_REJECT_KEY_MISMATCH, key_mismatch(p, m, u, 0, msg, sizeof msg) ? msg : "");
    placement pl = {.p = p, .m = m, .u = u, .msg = msg, .msg_size = sizeof msg, .sharded = sharded};
    dp_route_table t = {.cfg = p->cfg, .streams = &p->streams, .route_of = stream_route_of,
                        .misplaced = placement_refused, .ctx = &pl, .table_key = sharded ? tk : NULL,
                        .table_key_len = tk_len};
    void *found = NULL;
    const dp_stream_route *route = NULL;
    ps_stream *s = NULL;
    switch (dp_route_update(&t, u->stream_id, u->stream_id_len, m->partition, &found, &route)) {
    case DP_ROUTE_KNOWN:
        s = found;
        break;
    case DP_ROUTE_UNKNOWN:
        return dead_letter(p, m, DP_REJECT_UNKNOWN_STREAM, dp_reject_reason_text(DP_REJECT_UNKNOWN_STREAM));
    case DP_ROUTE_MISPLACED:
        return dead_letter(p, m, DP_REJECT_KEY_MISMATCH, msg);
    case DP_ROUTE_FULL:
        snprintf(msg, sizeof msg, "stream '%.*s' would be stream %" PRIu32 "+1 of its route in partition %" PRId32
                 " (max_streams %" PRIu32 ")", (int)(u->stream_id_len < 100 ? u->stream_id_len : 100), u->stream_id,
                 route->max_streams, m->partition, route->max_streams);
        return dead_letter(p, m, DP_REJECT_STREAM_LIMIT, msg);
    case DP_ROUTE_NEW:
        if (route->sharded != sharded)   /* a sharded route's update keyed by its stream id alone */
            return dead_letter(p, m, DP_REJECT_KEY_MISMATCH, key_mismatch(p, m, u, 1, msg, sizeof msg) ? msg : "");
        if ((rc = open_stream(p, m, u, route, &s)) != DP_OK)
            return rc;
        break;
    }
    if (s->partition != m->partition) {
        /* checked against the partitioner when the stream was created */
        snprintf(msg, sizeof msg, "stream '%.*s' lives in partition %" PRId32 " but this message is in %" PRId32,
                 (int)(s->id_len < 100 ? s->id_len : 100), s->id, s->partition, m->partition);
        return dead_letter(p, m, DP_REJECT_KEY_MISMATCH, msg);
    }
    if (m->offset < s->skip_below)
        return DP_OK;   /* reflected in the restored snapshot */
    dp_gate_verdict v;
    if ((rc = dp_gate_offer(&s->gate, u, (uint64_t)m->offset, m->payload, m->len, &v)) != DP_OK)
        return rc;
    switch (v.action) {
    case DP_GATE_IGNORED:
        return DP_OK;   /* duplicate marker: harmless */
    case DP_GATE_REJECTED:
        return dead_letter(p, m, v.reason, v.text);
    case DP_GATE_CLOSE:
        return close_step(p, s, m->offset);
    case DP_GATE_BUFFERED:
        return accepted(p, s, m->offset);
    case DP_GATE_USED:
        accepted(p, s, m->offset);
        return v.close_after ? close_step(p, s, m->offset) : DP_OK;
    }
    return DP_ESTATE;
}

/* --- runs: consecutive plain updates of one stream, ingested as a batch ----------
 *
 * A poll batch is mostly REPORTs of one stream for its open step.  Such a
 * message passes every check of handle_update without side effects up to
 * the gate, and those checks read only state that nothing but a close
 * changes (the open step, exhaustion, skip_below).  So consecutive ones are
 * collected into a run and offered with dp_gate_offer_run, which decides
 * them exactly as that many dp_gate_offer calls would, up to a close the
 * run itself triggers (a completed roster, when the route asks for that):
 * the run is cut there, the step closes, and the updates after the cut are
 * handled again one by one against the new open step (they changed
 * nothing: a rejected update changes no state, synth.h).  Anything else —
 * another stream, a marker, a message that fails a check — ends the run
 * first, so side effects keep log order. */

/* a[0..n) == b[0..n) for the short ids compared per message: inline, as a
 * library memcmp call cost more than the comparison (bench/RESULTS.md). */
static inline int same_bytes(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i])
            return 0;
    return 1;
}

/* The stream m would be ingested into by the plain path, or NULL. */
static ps_stream *run_candidate(proc *p, const rd_kafka_message_t *m, const dp_update *u)
{
    if (u->kind == DP_UPDATE_CLOSE_STEP)
        return NULL;
    ps_stream *s = p->run_s;
    if (!s || s->id_len != u->stream_id_len || !same_bytes(s->id, u->stream_id, s->id_len)) {
        dp_bytes_map_slot *slot = dp_bytes_map_find(&p->streams, u->stream_id, u->stream_id_len);
        s = slot ? slot->value : NULL;
    }
    if (!s || s->partition != m->partition || m->offset < s->skip_below || !dp_gate_run_eligible(&s->gate, u) ||
        !m->key || m->key_len != s->id_len || !same_bytes(m->key, s->id, s->id_len))
        return NULL;
    return s;
}

static int run_flush(proc *p)
{
    size_t n = p->run_n;
    ps_stream *s = p->run_s;
    p->run_n = 0;
    p->run_s = NULL;
    if (n == 0)
        return DP_OK;
    rd_kafka_message_t **m = p->batch + p->run_first;
    const dp_update *u = p->batch_upd + p->run_first;
    dp_reject_reason *reason = p->batch_reason + p->run_first;
    size_t cut;
    int complete;
    int rc = dp_gate_offer_run(&s->gate, u, n, reason, &cut, &complete);
    if (rc != DP_OK)
        return rc;
    for (size_t i = 0; i < cut && rc == DP_OK; i++) {
        consumed(p, m[i]);
        rc = reason[i] != DP_REJECT_NONE ? dead_letter(p, m[i], reason[i], dp_reject_reason_text(reason[i]))
                                         : accepted(p, s, m[i]->offset);
    }
    if (rc == DP_OK && complete)
        rc = close_step(p, s, m[cut - 1]->offset);
    for (size_t i = cut; i < n && rc == DP_OK; i++) {
        consumed(p, m[i]);
        rc = handle_update(p, m[i], &u[i]);
    }
    return rc;
}

/* A framed Update whose writer schema id the codec has not met: fetch the
 * schema from the registry and hand it to the codec, which decides once
 * whether Updates of that id can be read (codec.h).  A registry that does
 * not answer (after the client's retries) stops the processor: what a
 * message means must not depend on whether the registry was up when it
 * was read, so nothing is dead-lettered for it; the uncommitted input is
 * read again after a restart. */
static int learn_writer(proc *p, const rd_kafka_message_t *m)
{
    uint32_t id;
    if (!p->o->registry || dp_codec_framed_id(m->payload, m->len, &id) != DP_OK ||
        dp_codec_update_writer_known(p->codec, id))
        return DP_OK;
    char err[640], why[640];
    char *json = NULL;
    int rc = dp_registry_schema(p->o->registry, id, &json, err, sizeof err);
    if (rc == DP_ENOMEM)
        return rc;
    if (rc != DP_OK && rc != DP_ENOTFOUND && rc != DP_ESCHEMA) {
        ps_set_fatal(p, "schema registry: %s", err);
        return DP_EIO;
    }
    /* not found / not Avro: the codec records the id as unreadable */
    rc = dp_codec_add_update_writer(p->codec, id, json, why, sizeof why);
    free(json);
    if (rc == DP_ENOMEM)
        return rc;
    if (rc == DP_OK)
        dp_log(DP_LOG_INFO, "schema registry: Updates with writer schema id %u are read through Avro schema resolution", id);
    else
        dp_log(DP_LOG_WARN, "schema registry: Updates with writer schema id %u go to the dead-letter topic: %s", id,
               why);
    return DP_OK;
}

/* --- the poll batch ----------------------------------------------------------------- */

int ps_consume_init(proc *p)
{
    dp_buf_init(&p->loop_enc);
    p->batch = calloc(BATCH_MAX, sizeof *p->batch);
    p->batch_upd = calloc(BATCH_MAX, sizeof *p->batch_upd);
    p->batch_store = calloc(BATCH_MAX, sizeof *p->batch_store);
    p->batch_reason = calloc(BATCH_MAX, sizeof *p->batch_reason);
    return p->batch && p->batch_upd && p->batch_store && p->batch_reason ? DP_OK : DP_ENOMEM;
}

void ps_consume_free(proc *p)
{
    for (size_t i = 0; p->batch_store && i < BATCH_MAX; i++)
        dp_update_store_free(&p->batch_store[i]);
    free(p->batch);
    free(p->batch_upd);
    free(p->batch_store);
    free(p->batch_reason);
    p->batch = NULL;
    p->batch_upd = NULL;
    p->batch_store = NULL;
    p->batch_reason = NULL;
    dp_buf_free(&p->loop_enc);
}

/* Wait up to POLL_MS for one message, then take whatever else is already
 * queued, up to BATCH_MAX.  (rd_kafka_consume_batch_queue with a timeout
 * waits until the batch is *full* or the timeout passes, which would hold
 * a lone CLOSE_STEP marker back by the whole timeout.) */
ssize_t ps_consume_batch(proc *p)
{
    rd_kafka_message_t *m = rd_kafka_consumer_poll(p->consumer, POLL_MS);
    if (!m)
        return 0;
    p->batch[0] = m;
    ssize_t more = rd_kafka_consume_batch_queue(p->queue, 0, p->batch + 1, BATCH_MAX - 1);
    return more < 0 ? 1 : 1 + more;
}

void ps_consume_release(proc *p, ssize_t n)
{
    for (ssize_t i = 0; i < n; i++)
        rd_kafka_message_destroy(p->batch[i]);
}

/* The first message of a partition handled after a rebalance says how long
 * its partition paused across it (bench/throughput/rebalance_pause.sh):
 * from the last one handled before — for a partition this instance kept,
 * the cost of the rebalance to it. */
static void note_handled(proc *p, ps_partition *pp, int32_t part)
{
    if (pp->handled_gen != p->generation && pp->handled_ms > 0)
        dp_log_partition_event(DP_LOG_INFO, "partition_pause", part, "partition %s[%" PRId32 "]: first message "
                               "after a rebalance handled %" PRId64 " ms after the one before it",
                               p->cfg->topic_updates, part, p->now - pp->handled_ms);
    pp->handled_gen = p->generation;
    pp->handled_ms = p->now;
}

/* Handle p->batch[0..n) in log order. */
int ps_handle_batch(proc *p, size_t n)
{
    int rc = DP_OK;
    char msg[384];
    for (size_t i = 0; i < n && rc == DP_OK && !p->fatal; i++) {
        rd_kafka_message_t *m = p->batch[i];
        /* The fetcher thread wrote these messages; the first touch of each
         * would otherwise stall on memory (perf: most of the decode time). */
        if (i + 2 * PREFETCH_AHEAD < n)
            __builtin_prefetch(p->batch[i + 2 * PREFETCH_AHEAD]);
        if (i + PREFETCH_AHEAD < n)
            __builtin_prefetch(p->batch[i + PREFETCH_AHEAD]->payload);
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                dp_log(m->err == RD_KAFKA_RESP_ERR__FATAL ? DP_LOG_ERROR : DP_LOG_WARN, "consumer: %s",
                       rd_kafka_message_errstr(m));
                if (m->err == RD_KAFKA_RESP_ERR__FATAL)
                    ps_set_fatal(p, "fatal consumer error: %s", rd_kafka_message_errstr(m));
            }
            continue;
        }
        ps_partition *pp = ps_part_get(p, m->partition);
        if (!pp) {
            rc = DP_ENOMEM;
            break;
        }
        if (!pp->assigned)
            continue;   /* stale message of a revoked partition */
        note_handled(p, pp, m->partition);
        p->n_msgs++;
        dp_update *u = &p->batch_upd[i];
        if ((rc = learn_writer(p, m)) != DP_OK)
            break;
        int dr = dp_codec_decode_update_into(p->codec, m->payload, m->len, u, &p->batch_store[i], msg,
                                             sizeof msg);
        if (dr == DP_ENOMEM) {
            rc = dr;
            break;
        }
        ps_stream *s = dr == DP_OK ? run_candidate(p, m, u) : NULL;
        if (s) {
            if (s != p->run_s || p->run_first + p->run_n != i) {
                if ((rc = run_flush(p)) != DP_OK)
                    break;
                p->run_s = s;
                p->run_first = i;
            }
            p->run_n++;
            continue;
        }
        if ((rc = run_flush(p)) != DP_OK)
            break;
        consumed(p, m);
        rc = dr == DP_OK       ? handle_update(p, m, u)
             : dr == DP_ESCHEMA ? dead_letter(p, m, DP_REJECT_INCOMPATIBLE_SCHEMA, msg)
                                : dead_letter(p, m, DP_REJECT_MALFORMED, msg);
    }
    if (rc == DP_OK && !p->fatal)
        rc = run_flush(p);
    p->run_n = 0;
    p->run_s = NULL;
    return rc;
}

/* --- the step timer: append CLOSE_STEP markers ------------------------------------------
 *
 * With --idle-timeout-ms T, a stream's open step closes at the latest T
 * after it opened (when the previous step closed, the stream was first
 * seen, or this instance restored it), whether or not anyone reported in
 * it.  The timer starts from public events only, never from a report, so
 * no one's data or timing moves a boundary that decides whether another
 * person's update is LATE (docs/privacy.md §1).  The marker is appended to
 * the stream's input partition and the step closes when it is read back,
 * so a replay of the log sees the same boundary (docs/design.md §2). */

void ps_idle_markers(proc *p)
{
    if (p->o->idle_timeout_ms <= 0)
        return;
    int64_t now = ps_now_ms();
    for (size_t i = 0; i < p->streams.cap; i++) {
        ps_stream *s = dp_bytes_map_at(&p->streams, i);
        if (!s || dp_synth_exhausted(s->synth) || !p->parts[s->partition].assigned)
            continue;   /* (a kept partition's stream waits for its partition to come back) */
        uint64_t open = dp_synth_open_step(s->synth);
        if (now - s->step_opened_ms < p->o->idle_timeout_ms)
            continue;
        if (s->marker_step == open && now - s->marker_ms < p->o->idle_timeout_ms)
            continue;   /* appended recently; wait for it to come back */
        dp_update mk = {.stream_id = s->id, .stream_id_len = s->id_len, .step = open,
                        .kind = DP_UPDATE_CLOSE_STEP};
        p->loop_enc.len = 0;
        char err[256];
        /* a shard's marker is keyed as a shard's (shard_key.h): its partition's step closes */
        if (dp_codec_encode_update_buf(p->codec, &mk, &p->loop_enc, err, sizeof err) != DP_OK ||
            ps_produce(p, p->marker_producer, p->cfg->topic_updates, s->partition, dp_codec_type_name(DP_CODEC_UPDATE),
                    s->tkey, s->kind == PS_STREAM_SHARD ? s->id_len + 1 : s->id_len, p->loop_enc.data,
                    p->loop_enc.len) != DP_OK) {
            dp_log_event(DP_LOG_WARN, "idle_marker", s->id, s->id_len, open,
                         "could not append a CLOSE_STEP marker for stream '%s'; will retry", s->id);
            continue;
        }
        s->marker_step = open;
        s->marker_ms = now;
        p->n_markers++;
        dp_log_event(DP_LOG_INFO, "idle_marker", s->id, s->id_len, open,
                     "stream '%s': step open for %" PRId64 " ms: appended CLOSE_STEP for step %" PRIu64, s->id,
                     now - s->step_opened_ms, open);
    }
    rd_kafka_poll(p->marker_producer, 0);
}
