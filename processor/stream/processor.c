/* processor.c — the Kafka processing loop (DESIGN.md §1-§3, §8).
 *
 * Per input message (partition p, offset o), exactly the decisions of
 * `dpstream replay` (processor/app/cmd_replay.c), so the Kafka path and
 * the offline path release the same bytes for the same input and key:
 *   undecodable            -> dead letter MALFORMED
 *   no route               -> dead letter UNKNOWN_STREAM
 *   CLOSE_STEP, step < open -> duplicate marker, ignored
 *   exhausted stream       -> dead letter EXHAUSTED
 *   CLOSE_STEP, step > open -> dead letter FUTURE_STEP
 *   CLOSE_STEP, step = open -> close the step
 *   data, step != open     -> dead letter LATE / FUTURE_STEP
 *   data                   -> ingest; a synthesizer rejection -> dead letter;
 *                             accepted and roster complete -> close the step
 *
 * --- One transaction per closed step ------------------------------------
 * A close produces, inside one Kafka transaction: the record chunks and the
 * manifest (synthetic topic, key = stream id), the budget event (budget
 * topic), the stream's snapshot (state topic, key = stream id; chunks
 * after the first under derived keys), a progress
 * record for every partition consumed since the last commit (state topic),
 * any dead letters of those partitions, and the consumer offsets
 * (send_offsets_to_transaction with the group metadata).  Dead letters
 * that arrive while no step closes are committed the same way on a short
 * timer.  Read-committed consumers therefore see a whole step or nothing.
 *
 * --- Several streams share a partition: what offset may be committed ------
 * Streams of one partition close at different offsets.  Stream S's
 * snapshot records skip_below(S) = the offset just after the message that
 * closed its last step; its in-memory state is that snapshot plus the
 * updates it accepted since, the first of which is at pending(S) (none if
 * it accepted nothing since).  After a crash everything in memory is lost,
 * so the committed offset of partition p must let every stream re-read its
 * un-snapshotted updates:
 *
 *     committed(p) = min(position(p), min over streams S of p with pending of pending(S))
 *
 * and on (re)assignment each stream of p is restored from its latest
 * snapshot, p is sought to that committed offset (stored in the progress
 * record of the same transaction — identical to the group's committed
 * offset, but read from the state topic together with the snapshots, so
 * the two can never disagree), and every update of S below skip_below(S)
 * is skipped because the snapshot already reflects it.  Rejected inputs
 * change no state; a rejection is re-derived on replay from the same state
 * and re-published only if its offset is at or above the partition's
 * committed `position` (its dead letter was not yet committed), so the
 * dead-letter topic, too, holds each rejection exactly once.
 *
 * Replaying from committed(p) re-executes exactly the ingests that were
 * lost, in log order, from exactly the snapshotted states, so every later
 * close — and, because noise is drawn from the keyed DRBG by (stream,
 * step, label), every released byte — is what an uninterrupted run emits.
 *
 * --- Step boundaries are log entries (DESIGN.md §2) ----------------------
 * The idle timeout does not close a step: it appends a CLOSE_STEP marker
 * for the stream's open step to the stream's input partition (same key),
 * and the step closes when that marker is consumed, like any marker.
 * Wall-clock time only decides *when* a marker is appended; what a step
 * contains is decided by the marker's position in the log.  Duplicate
 * markers (two timers, a retry, a marker after a roster close) are
 * ignored.
 *
 * --- Failures -------------------------------------------------------------
 * Any error inside a transaction aborts it and rewinds: the assigned
 * partitions are restored from the state topic and sought back, exactly as
 * after a crash.  A fenced producer (a newer instance with the same
 * transactional.id) is fatal.  Revocation first commits (or, failing that,
 * aborts) the open transaction and then drops the revoked partitions'
 * streams.  A restore reads the state topic up to the high watermark seen
 * when it starts, so it waits for every transaction then open — a crashed
 * instance's until its successor (same transactional.id) fences it or the
 * broker's transaction timeout aborts it — and never restores state older
 * than what is already committed (see read_state_topic).
 *
 * --- Snapshots in chunks; wire format -------------------------------------
 * A snapshot's state is split into Snapshot messages of at most
 * --snapshot-chunk-bytes state bytes, all in the close's transaction, under
 * keys that cannot collide with other streams' (state_record.h); a restore
 * assembles only a complete set that agrees with the stream's chunk 0.
 * Every message is framed as the config's "wire" section says (plain Avro
 * or Confluent Schema Registry framing, stream_config.h).
 *
 * --- Throughput -----------------------------------------------------------
 * Messages are taken in poll batches (consume_batch), decoded without
 * avro-c (codec_update_decode.c), and consecutive plain updates of one
 * stream are ingested as a run with dp_synth_ingest_batch (run_flush: the
 * decisions are exactly the per-message ones above).  A step's commit
 * (flush + EndTxn) runs on a committer thread while consumption goes on
 * (txn_commit); anything that would produce waits for it first.
 *
 * A restore holds in memory the newest state records of the partitions it
 * restores (all their streams' snapshots at once), not the other
 * instances'; streaming the restore stream by stream is not implemented. */
#include "stream/processor.h"

#include <errno.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/codec.h"
#include "core/dp_error.h"
#include "stream/bytes_map.h"
#include "stream/kafka_util.h"
#include "stream/log.h"
#include "stream/state_record.h"
#include "synth/synth.h"

#define KAFKA_TIMEOUT_MS   30000
#define POLL_MS            100
#define BATCH_MAX          1024   /* messages per consume call */
#define PREFETCH_AHEAD     4
#define NO_OFFSET          (-1)

const char *const dp_processor_consumer_defaults[][2] = {{"queued.min.messages", "1000000"},
                                                         {"queued.max.messages.kbytes", "524288"}};
const size_t dp_processor_consumer_defaults_n =
    sizeof dp_processor_consumer_defaults / sizeof dp_processor_consumer_defaults[0];

/* --- state ------------------------------------------------------------------ */

typedef struct ps_stream {
    char                  *id;          /* owned, NUL-terminated */
    size_t                 id_len;
    const dp_stream_route *route;
    dp_synth              *synth;
    int32_t                partition;
    int64_t                skip_below;     /* updates at lower offsets are in the snapshot */
    int64_t                pending;        /* first accepted un-snapshotted update, or NO_OFFSET */
    int64_t                last_accept_ms; /* monotonic; idle timer only */
    uint64_t               marker_step;    /* open step a marker was appended for (0: none) */
    int64_t                marker_ms;
} ps_stream;

typedef struct ps_partition {
    int     assigned;
    int64_t position;      /* offset after the last consumed message, or NO_OFFSET */
    int64_t resume;        /* where the last restore started it (an offset or a logical one) */
    int64_t dlq_below;     /* rejections below this offset are already published */
    int     dirty;         /* consumed since the last commit */
} ps_partition;

/* A record copied out of the sink callback (its payload is borrowed). */
typedef struct ps_chunk {
    dp_synth_record *recs;
    size_t           n, cap;
    size_t          *row_at;   /* per record: index of its row in `rows` */
    size_t          *pt_at;    /* per record: index of its point in `pts` */
    size_t           at_cap;
    int32_t         *rows;     /* all row payloads of the chunk, back to back */
    size_t           rows_n, rows_cap;
    double          *pts;
    size_t           pts_n, pts_cap;
} ps_chunk;

typedef struct proc {
    const dp_processor_options *o;
    const dp_stream_config     *cfg;
    char                        group_id[256];
    size_t                      max_message_bytes;   /* producer message.max.bytes */
    rd_kafka_t                 *consumer;
    rd_kafka_t                 *producer;     /* transactional */
    rd_kafka_t                 *marker_producer;
    dp_bytes_map                streams;      /* id -> ps_stream* */
    ps_partition               *parts;
    int32_t                     n_parts;
    int                         txn_open;
    int64_t                     txn_begin_ms;
    /* a commit_transaction running on its own thread (see txn_commit) */
    int                         committing;
    pthread_t                   committer;
    rd_kafka_error_t           *commit_result;
    int64_t                     commit_handoff_ms, commit_open_ms, commit_flush_ms, commit_done_ms;
    int                         need_rewind;
    int                         rewinds_in_row;  /* rewinds since the last successful commit */
    int                         fatal;
    char                        fatal_msg[1200];
    dp_codec                   *codec;
    rd_kafka_queue_t           *queue;        /* the consumer's queue */
    uint64_t                    generation;   /* bumped by every rebalance callback */
    /* the poll batch: messages, their decoded updates (borrowing from the
     * messages and from batch_store) and, for runs, their ingest verdicts */
    rd_kafka_message_t        **batch;
    dp_update                  *batch_upd;
    dp_update_store            *batch_store;
    dp_reject_reason           *batch_reason;
    int64_t                     now;          /* monotonic ms, read once per batch */
    /* the run being collected (see run_flush) */
    ps_stream                  *run_s;
    size_t                      run_first, run_n;
    dp_codec_checksum           cksum;    /* of the release being closed */
    ps_chunk                    chunk;
    dp_buf                      enc;
    /* the close in progress */
    ps_stream                  *closing;
    uint64_t                    closing_step;
    uint32_t                    chunk_index;
    int                         sink_error;
    /* counters for the progress log */
    uint64_t                    n_msgs, n_steps, n_dlq, n_markers;
    uint64_t                    last_msgs;
    int64_t                     last_progress_ms;
} proc;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_fatal(proc *p, const char *fmt, const char *detail)
{
    if (!p->fatal) {
        p->fatal = 1;
        snprintf(p->fatal_msg, sizeof p->fatal_msg, fmt, detail);
    }
}

/* --- partitions and streams ---------------------------------------------------- */

static ps_partition *part_get(proc *p, int32_t id)
{
    if (id < 0)
        return NULL;
    if (id >= p->n_parts) {
        int32_t n = id + 1;
        ps_partition *np = realloc(p->parts, (size_t)n * sizeof *np);
        if (!np)
            return NULL;
        for (int32_t i = p->n_parts; i < n; i++)
            np[i] = (ps_partition){.assigned = 0, .position = NO_OFFSET, .resume = RD_KAFKA_OFFSET_BEGINNING};
        p->parts = np;
        p->n_parts = n;
    }
    return &p->parts[id];
}

static void stream_free(ps_stream *s)
{
    if (!s)
        return;
    dp_synth_destroy(s->synth);
    free(s->id);
    free(s);
}

static void drop_stream_cb(void *value, void *ctx) { (void)ctx; stream_free(value); }

static int keep_assigned_cb(void *value, void *ctx)
{
    proc *p = ctx;
    ps_stream *s = value;
    return s->partition >= 0 && s->partition < p->n_parts && p->parts[s->partition].assigned;
}

/* Drop the streams of partitions no longer assigned. */
static int drop_unassigned_streams(proc *p)
{
    return dp_bytes_map_filter(&p->streams, keep_assigned_cb, drop_stream_cb, p);
}

static ps_stream *stream_new(proc *p, const char *id, size_t len, const dp_stream_route *route,
                             int32_t partition)
{
    ps_stream *s = calloc(1, sizeof *s);
    if (!s || !(s->id = malloc(len + 1))) {
        free(s);
        return NULL;
    }
    memcpy(s->id, id, len);
    s->id[len] = '\0';
    s->id_len = len;
    s->route = route;
    s->partition = partition;
    s->skip_below = 0;
    s->pending = NO_OFFSET;
    (void)p;
    return s;
}

/* committed(p) of the header comment. */
static int64_t partition_commit_offset(proc *p, int32_t part)
{
    int64_t c = p->parts[part].position;
    for (size_t i = 0; i < p->streams.cap; i++) {
        ps_stream *s = dp_bytes_map_at(&p->streams, i);
        if (s && s->partition == part && s->pending != NO_OFFSET && s->pending < c)
            c = s->pending;
    }
    return c;
}

/* --- producing ----------------------------------------------------------------- */

/* Every message carries a "dpstream.type" header naming its schema
 * (codec.h type names, or "Progress"), because the synthetic topic holds
 * two schemas and the state topic a private record besides Snapshots. */
static int produce(proc *p, rd_kafka_t *rk, const char *topic, int32_t partition, const char *type,
                   const void *key, size_t key_len, const void *val, size_t val_len)
{
    for (;;) {
        rd_kafka_resp_err_t err = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
            RD_KAFKA_V_HEADER("dpstream.type", type, -1),
            RD_KAFKA_V_KEY((void *)key, key_len), RD_KAFKA_V_VALUE((void *)val, val_len),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
            return DP_OK;
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            rd_kafka_poll(rk, 50);
            continue;
        }
        dp_log(DP_LOG_ERROR, "produce to %s failed: %s", topic, rd_kafka_err2str(err));
        (void)p;
        return DP_EIO;
    }
}

/* Handle a transactional API error: abortable -> abort and rewind later;
 * fatal (e.g. fenced) -> stop the processor. */
static int txn_error(proc *p, const char *what, rd_kafka_error_t *e)
{
    if (!e)
        return DP_OK;
    dp_log(DP_LOG_ERROR, "%s failed: %s", what, rd_kafka_error_string(e));
    if (rd_kafka_error_is_fatal(e)) {
        set_fatal(p, "fatal transactional error (another instance with this transactional.id?): %s",
                  rd_kafka_error_string(e));
    } else {
        p->need_rewind = 1;
    }
    rd_kafka_error_destroy(e);
    return DP_EIO;
}

static void txn_abort(proc *p);

/* The outcome of the last commit_transaction (p->commit_result): on
 * failure the transaction is aborted and the state rewound (need_rewind),
 * which also undoes everything ingested while it ran. */
static int commit_outcome(proc *p)
{
    rd_kafka_error_t *e = p->commit_result;
    p->commit_result = NULL;
    if (txn_error(p, "commit_transaction", e) != DP_OK) {
        p->txn_open = 1;   /* still open at the broker */
        txn_abort(p);
        return DP_EIO;
    }
    dp_log(DP_LOG_DEBUG,
           "transaction committed: %" PRId64 " ms open, done %" PRId64 " ms after hand-off (flush %" PRId64
           " ms), awaited %" PRId64 " ms later",
           p->commit_open_ms, p->commit_done_ms - p->commit_handoff_ms, p->commit_flush_ms,
           now_ms() - p->commit_done_ms);
    p->rewinds_in_row = 0;
    return DP_OK;
}

/* Wait for the commit running on the committer thread, if any. */
static int commit_wait(proc *p)
{
    if (!p->committing)
        return DP_OK;
    pthread_join(p->committer, NULL);
    p->committing = 0;
    return commit_outcome(p);
}

static int txn_begin(proc *p)
{
    if (p->txn_open)
        return DP_OK;
    int rc = commit_wait(p);
    if (rc != DP_OK)
        return rc;
    if (txn_error(p, "begin_transaction", rd_kafka_begin_transaction(p->producer)) != DP_OK)
        return DP_EIO;
    p->txn_open = 1;
    p->txn_begin_ms = now_ms();
    return DP_OK;
}

static void txn_abort(proc *p)
{
    if (!p->txn_open)
        return;
    rd_kafka_error_t *e = rd_kafka_abort_transaction(p->producer, KAFKA_TIMEOUT_MS);
    if (e) {
        dp_log(DP_LOG_ERROR, "abort_transaction failed: %s", rd_kafka_error_string(e));
        if (rd_kafka_error_is_fatal(e))
            set_fatal(p, "fatal error aborting a transaction: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    }
    p->txn_open = 0;
    p->need_rewind = 1;
}

static void *committer_main(void *arg)
{
    proc *p = arg;
    /* A separate flush only where it is wanted: the debug log splits the
     * commit's time with it, and the test hook holds a transaction open
     * with its outputs written.  commit_transaction flushes (again) and
     * reports any delivery failure, so the result is not needed here. */
    int64_t t0 = now_ms();
    p->commit_flush_ms = -1;
    if (p->o->debug_commit_delay_ms > 0 || dp_log_get_level() >= DP_LOG_DEBUG) {
        (void)rd_kafka_flush(p->producer, KAFKA_TIMEOUT_MS);
        p->commit_flush_ms = now_ms() - t0;
    }
    if (p->o->debug_commit_delay_ms > 0) {
        struct timespec ts = {.tv_sec = p->o->debug_commit_delay_ms / 1000,
                              .tv_nsec = (long)(p->o->debug_commit_delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    p->commit_result = rd_kafka_commit_transaction(p->producer, KAFKA_TIMEOUT_MS);
    p->commit_done_ms = now_ms();
    return NULL;
}

/* Progress records + offsets for every dirty partition, then commit.
 *
 * With `wait` 0 the commit itself (the flush of everything produced and
 * EndTxn: ~100 ms for a 10^6-record release) runs on a committer thread
 * while this one goes on consuming and ingesting; ingesting produces
 * nothing, and whatever would (a dead letter, the next close, a
 * rebalance, shutdown) first waits for it (commit_wait).  Nothing
 * ingested meanwhile is in that transaction, and if it fails the rewind
 * discards it all, so the outputs are those of a synchronous commit. */
static int txn_commit(proc *p, int wait)
{
    if (!p->txn_open)
        return DP_OK;
    rd_kafka_topic_partition_list_t *offs = rd_kafka_topic_partition_list_new(4);
    int rc = DP_OK;
    int64_t t0 = now_ms();
    for (int32_t i = 0; i < p->n_parts && rc == DP_OK; i++) {
        ps_partition *pp = &p->parts[i];
        if (!pp->assigned || !pp->dirty || pp->position == NO_OFFSET)
            continue;
        int64_t c = partition_commit_offset(p, i);
        dp_state_record r = {.kind = DP_STATE_PROGRESS,
                             .updates_topic = p->cfg->topic_updates,
                             .updates_topic_len = strlen(p->cfg->topic_updates),
                             .partition = i,
                             .position = pp->position,
                             .resume = c};
        char key[512];
        int kl = snprintf(key, sizeof key, "%s%s/%" PRId32, DP_STATE_PROGRESS_KEY_PREFIX,
                          p->cfg->topic_updates, i);
        p->enc.len = 0;
        if ((rc = dp_state_encode_progress(&r, &p->enc)) == DP_OK)
            rc = produce(p, p->producer, p->cfg->topic_state, RD_KAFKA_PARTITION_UA, "Progress", key, (size_t)kl,
                         p->enc.data, p->enc.len);
        rd_kafka_topic_partition_list_add(offs, p->cfg->topic_updates, i)->offset = c;
    }
    if (rc == DP_OK && offs->cnt > 0) {
        rd_kafka_consumer_group_metadata_t *md = rd_kafka_consumer_group_metadata(p->consumer);
        rc = txn_error(p, "send_offsets_to_transaction",
                       rd_kafka_send_offsets_to_transaction(p->producer, offs, md, KAFKA_TIMEOUT_MS));
        rd_kafka_consumer_group_metadata_destroy(md);
    }
    rd_kafka_topic_partition_list_destroy(offs);
    if (rc != DP_OK) {
        txn_abort(p);
        return rc;
    }
    /* Dirty = consumed since these progress records; from here on. */
    for (int32_t i = 0; i < p->n_parts; i++)
        p->parts[i].dirty = 0;
    p->txn_open = 0;
    p->commit_handoff_ms = t0;
    p->commit_open_ms = t0 - p->txn_begin_ms;
    if (!wait && pthread_create(&p->committer, NULL, committer_main, p) == 0) {
        p->committing = 1;
        return DP_OK;
    }
    committer_main(p);   /* on this thread */
    return commit_outcome(p);
}

/* --- dead letters ---------------------------------------------------------------- */

static int dead_letter(proc *p, const rd_kafka_message_t *m, dp_reject_reason reason, const char *text)
{
    ps_partition *pp = &p->parts[m->partition];
    if (m->offset < pp->dlq_below)
        return DP_OK;   /* already published before a restart (see the header) */
    int rc = txn_begin(p);
    if (rc != DP_OK)
        return rc;
    dp_codec_dead_letter d = {.topic = rd_kafka_topic_name(m->rkt),
                        .partition = m->partition,
                        .offset = m->offset,
                        .key = m->key,
                        .key_len = m->key_len,
                        .reason = reason,
                        .text = text,
                        .raw = m->payload,
                        .raw_len = m->len};
    p->enc.len = 0;
    char err[256];
    if ((rc = dp_codec_encode_dead_letter_buf(p->codec, &d, &p->enc, err, sizeof err)) != DP_OK) {
        dp_log(DP_LOG_ERROR, "cannot encode a dead letter: %s", err);
        return rc;
    }
    rc = produce(p, p->producer, p->cfg->topic_dead_letter, RD_KAFKA_PARTITION_UA,
                 dp_codec_type_name(DP_CODEC_DEAD_LETTER), m->key, m->key_len, p->enc.data, p->enc.len);
    if (rc == DP_OK)
        p->n_dlq++;
    dp_log(DP_LOG_DEBUG, "dead letter %s at %s[%" PRId32 "]@%" PRId64 ": %s",
           dp_reject_reason_name(reason), rd_kafka_topic_name(m->rkt), m->partition, m->offset, text);
    return rc;
}

/* --- closing a step ------------------------------------------------------------ */

static int chunk_flush(proc *p)
{
    ps_chunk *c = &p->chunk;
    if (c->n == 0)
        return DP_OK;
    p->enc.len = 0;
    dp_codec_chunk wc = {.stream_id = p->closing->id, .stream_id_len = p->closing->id_len,
                         .step = p->closing_step, .chunk_index = p->chunk_index, .records = c->recs,
                         .n_records = c->n};
    char err[256];
    int rc = dp_codec_encode_chunk_hashed(p->codec, &wc, &p->enc, &p->cksum, err, sizeof err);
    if (rc != DP_OK)
        dp_log(DP_LOG_ERROR, "cannot encode a release chunk: %s", err);
    else
        rc = produce(p, p->producer, p->cfg->topic_synthetic, RD_KAFKA_PARTITION_UA,
                     dp_codec_type_name(DP_CODEC_SYNTHETIC_RECORD), p->closing->id, p->closing->id_len,
                     p->enc.data, p->enc.len);
    p->chunk_index++;
    c->n = c->rows_n = c->pts_n = 0;
    return rc;
}

static int grow_to(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return DP_OK;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *a = realloc(*arr, n * elem);
    if (!a)
        return DP_ENOMEM;
    *arr = a;
    *cap = n;
    return DP_OK;
}

/* Payloads are borrowed only for the callback, so they are copied; the
 * arrays may move while growing, so records keep indices and get their
 * pointers when the chunk is encoded. */
static void chunk_fix_pointers(ps_chunk *c)
{
    for (size_t i = 0; i < c->n; i++) {
        if (c->recs[i].value.row_len)
            c->recs[i].value.row = c->rows + c->row_at[i];
        if (c->recs[i].value.point_len)
            c->recs[i].value.point = c->pts + c->pt_at[i];
    }
}

static int sink_record(void *ctx, const dp_synth_record *r)
{
    proc *p = ctx;
    ps_chunk *c = &p->chunk;
    size_t at_cap = c->at_cap;
    if (grow_to((void **)&c->recs, &c->cap, c->n + 1, sizeof *c->recs) != DP_OK ||
        grow_to((void **)&c->row_at, &at_cap, c->n + 1, sizeof *c->row_at) != DP_OK ||
        grow_to((void **)&c->pt_at, &c->at_cap, c->n + 1, sizeof *c->pt_at) != DP_OK ||
        grow_to((void **)&c->rows, &c->rows_cap, c->rows_n + r->value.row_len, sizeof *c->rows) != DP_OK ||
        grow_to((void **)&c->pts, &c->pts_cap, c->pts_n + r->value.point_len, sizeof *c->pts) != DP_OK)
        return DP_ENOMEM;
    size_t i = c->n++;
    c->recs[i] = *r;
    c->recs[i].value.row = NULL;
    c->recs[i].value.point = NULL;
    c->row_at[i] = c->rows_n;
    c->pt_at[i] = c->pts_n;
    if (r->value.row_len) {
        memcpy(c->rows + c->rows_n, r->value.row, r->value.row_len * sizeof *c->rows);
        c->rows_n += r->value.row_len;
    }
    if (r->value.point_len) {
        memcpy(c->pts + c->pts_n, r->value.point, r->value.point_len * sizeof *c->pts);
        c->pts_n += r->value.point_len;
    }
    if (c->n >= p->o->chunk_records) {
        chunk_fix_pointers(c);
        return chunk_flush(p);
    }
    return DP_OK;
}

static int sink_manifest(void *ctx, const dp_release_manifest *m)
{
    proc *p = ctx;
    chunk_fix_pointers(&p->chunk);
    int rc = chunk_flush(p);
    if (rc != DP_OK)
        return rc;
    dp_codec_manifest cm = {.m = *m, .chunk_count = p->chunk_index};
    dp_codec_checksum_final(&p->cksum, cm.checksum);
    p->enc.len = 0;
    char err[256];
    if ((rc = dp_codec_encode_manifest_buf(p->codec, &cm, &p->enc, err, sizeof err)) != DP_OK) {
        dp_log(DP_LOG_ERROR, "cannot encode a release manifest: %s", err);
        return rc;
    }
    return produce(p, p->producer, p->cfg->topic_synthetic, RD_KAFKA_PARTITION_UA,
                   dp_codec_type_name(DP_CODEC_RELEASE_MANIFEST), p->closing->id, p->closing->id_len,
                   p->enc.data, p->enc.len);
}

static int sink_budget(void *ctx, const dp_budget_event *e)
{
    proc *p = ctx;
    p->enc.len = 0;
    char err[256];
    int rc = dp_codec_encode_budget_buf(p->codec, e, &p->enc, err, sizeof err);
    if (rc != DP_OK) {
        dp_log(DP_LOG_ERROR, "cannot encode a budget event: %s", err);
        return rc;
    }
    if (e->status == DP_BUDGET_EXHAUSTED)
        dp_log(DP_LOG_INFO, "stream '%s' exhausted its budget at step %" PRIu64 " (spent %.6g of %.6g)",
               p->closing->id, e->step, e->spent_total, e->budget_total);
    return produce(p, p->producer, p->cfg->topic_budget, RD_KAFKA_PARTITION_UA,
                   dp_codec_type_name(DP_CODEC_BUDGET_EVENT), p->closing->id, p->closing->id_len, p->enc.data,
                   p->enc.len);
}

typedef struct snapshot_emit {
    proc      *p;
    ps_stream *s;
    dp_buf     key;
} snapshot_emit;

/* One chunk of a snapshot to the state topic (state_record.h: keys). */
static int emit_snapshot_chunk(void *ctx, uint32_t index, uint32_t count, const dp_buf *enc)
{
    snapshot_emit *e = ctx;
    proc *p = e->p;
    if (enc->len > p->max_message_bytes) {
        /* Only a tiny message.max.bytes or a huge stream id gets here
         * (the chunk size is far below the default limit): stop loudly
         * rather than abort and retry the same transaction forever. */
        char msg[256];
        snprintf(msg, sizeof msg, "a snapshot chunk of stream '%s' is %zu bytes, over message.max.bytes (%zu); "
                 "use a smaller --snapshot-chunk-bytes", e->s->id, enc->len, p->max_message_bytes);
        set_fatal(p, "%s", msg);
        return DP_ERANGE;
    }
    int rc = dp_state_snapshot_key(e->s->id, e->s->id_len, index, &e->key);
    if (rc != DP_OK)
        return rc;
    if (count > 1)
        dp_log(DP_LOG_DEBUG, "snapshot of stream '%s': chunk %" PRIu32 " of %" PRIu32 " (%zu bytes)", e->s->id,
               index, count, enc->len);
    return produce(p, p->producer, p->cfg->topic_state, RD_KAFKA_PARTITION_UA, dp_codec_type_name(DP_CODEC_SNAPSHOT),
                   e->key.data, e->key.len, enc->data, enc->len);
}

static int write_snapshot(proc *p, ps_stream *s)
{
    dp_buf st;
    dp_buf_init(&st);
    int rc = dp_synth_snapshot(s->synth, &st);
    if (rc == DP_OK) {
        dp_state_record r = {.kind = DP_STATE_SNAPSHOT,
                             .updates_topic = p->cfg->topic_updates,
                             .updates_topic_len = strlen(p->cfg->topic_updates),
                             .partition = s->partition,
                             .stream_id = s->id,
                             .stream_id_len = s->id_len,
                             .skip_below = s->skip_below,
                             .open_step = dp_synth_open_step(s->synth),
                             .synthesizer = s->route->synthesizer,
                             .state = st.data,
                             .state_len = st.len};
        char err[256];
        err[0] = '\0';
        snapshot_emit e = {.p = p, .s = s};
        dp_buf_init(&e.key);
        size_t cb = p->o->snapshot_chunk_bytes ? p->o->snapshot_chunk_bytes : DP_PROCESSOR_DEFAULT_SNAPSHOT_CHUNK_BYTES;
        rc = dp_state_encode_snapshot_chunks(p->codec, &r, p->o->state_key, cb, &p->enc, emit_snapshot_chunk, &e,
                                             err, sizeof err);
        if (rc != DP_OK && err[0])
            dp_log(DP_LOG_ERROR, "cannot encode the snapshot of stream '%s': %s", s->id, err);
        dp_buf_free(&e.key);
    }
    if (st.data)
        sodium_memzero(st.data, st.cap);
    dp_buf_free(&st);
    return rc;
}

/* Close s's open step; the message at `offset` triggered it. */
static int close_step(proc *p, ps_stream *s, int64_t offset)
{
    int rc = txn_begin(p);
    if (rc != DP_OK)
        return rc;
    dp_release_sink sink = {.ctx = p, .record = sink_record, .manifest = sink_manifest, .budget = sink_budget};
    p->closing = s;
    p->closing_step = dp_synth_open_step(s->synth);
    p->chunk_index = 0;
    p->chunk.n = p->chunk.rows_n = p->chunk.pts_n = 0;
    dp_codec_checksum_init(&p->cksum);
    char err[512];
    err[0] = '\0';
    rc = dp_synth_close_step(s->synth, &sink, err, sizeof err);
    if (rc != DP_OK) {
        dp_log(DP_LOG_ERROR, "closing step %" PRIu64 " of stream '%s' failed: %s", p->closing_step, s->id,
               err[0] ? err : dp_status_str(rc));
        p->closing = NULL;
        txn_abort(p);
        return rc;
    }
    s->skip_below = offset + 1;
    s->pending = NO_OFFSET;
    s->marker_step = 0;
    if ((rc = write_snapshot(p, s)) != DP_OK) {
        p->closing = NULL;
        txn_abort(p);
        return rc;
    }
    p->closing = NULL;
    if ((rc = txn_commit(p, 0)) != DP_OK)
        return rc;
    p->n_steps++;
    dp_log(DP_LOG_DEBUG, "released step %" PRIu64 " of stream '%s'", p->closing_step, s->id);
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
    pp->dirty = 1;
}

static int accepted(proc *p, ps_stream *s, int64_t offset)
{
    if (s->pending == NO_OFFSET)
        s->pending = offset;
    s->last_accept_ms = p->now;
    return DP_OK;
}

/* Everything the header comment lists for one decoded message (its
 * partition is assigned and already marked consumed). */
static int handle_update(proc *p, const rd_kafka_message_t *m, const dp_update *u)
{
    char msg[384];
    int rc;
    dp_bytes_map_slot *slot = dp_bytes_map_find(&p->streams, u->stream_id, u->stream_id_len);
    ps_stream *s = slot ? slot->value : NULL;
    if (!s) {
        const dp_stream_route *route = dp_stream_config_route(p->cfg, u->stream_id, u->stream_id_len);
        if (!route)
            return dead_letter(p, m, DP_REJECT_UNKNOWN_STREAM, dp_reject_reason_text(DP_REJECT_UNKNOWN_STREAM));
        if (!(s = stream_new(p, u->stream_id, u->stream_id_len, route, m->partition)))
            return DP_ENOMEM;
        dp_synth_env env = {.key = p->o->noise_key, .stream_id = s->id, .stream_id_len = s->id_len};
        char err[512];
        err[0] = '\0';
        rc = dp_synth_create(&s->synth, route->synthesizer, route->config, &env, err, sizeof err);
        if (rc != DP_OK) {
            stream_free(s);
            set_fatal(p, "cannot create a synthesizer: %s", err[0] ? err : dp_status_str(rc));
            return rc;
        }
        if (!(slot = dp_bytes_map_upsert(&p->streams, s->id, s->id_len))) {
            stream_free(s);
            return DP_ENOMEM;
        }
        slot->value = s;
    }
    if (s->partition != m->partition) {
        /* A stream's updates must all live in one partition (key = stream
         * id); one that does not is refused rather than split across owners. */
        snprintf(msg, sizeof msg, "stream's updates arrive in partition %" PRId32 " but this one is in %" PRId32,
                 s->partition, m->partition);
        return dead_letter(p, m, DP_REJECT_MALFORMED, msg);
    }
    if (m->offset < s->skip_below)
        return DP_OK;   /* reflected in the restored snapshot */

    uint64_t open = dp_synth_open_step(s->synth);
    if (u->kind == DP_UPDATE_CLOSE_STEP) {
        if (u->step < open)
            return DP_OK;   /* duplicate marker: harmless */
        if (dp_synth_exhausted(s->synth))
            return dead_letter(p, m, DP_REJECT_EXHAUSTED, dp_reject_reason_text(DP_REJECT_EXHAUSTED));
        if (u->step > open) {
            snprintf(msg, sizeof msg, "CLOSE_STEP for step %" PRIu64 " but step %" PRIu64 " is open", u->step, open);
            return dead_letter(p, m, DP_REJECT_FUTURE_STEP, msg);
        }
        return close_step(p, s, m->offset);
    }
    if (dp_synth_exhausted(s->synth))
        return dead_letter(p, m, DP_REJECT_EXHAUSTED, dp_reject_reason_text(DP_REJECT_EXHAUSTED));
    if (u->step != open) {
        dp_reject_reason r = u->step < open ? DP_REJECT_LATE : DP_REJECT_FUTURE_STEP;
        snprintf(msg, sizeof msg, "%s (update for step %" PRIu64 ", open step %" PRIu64 ")", dp_reject_reason_text(r),
                 u->step, open);
        return dead_letter(p, m, r, msg);
    }
    dp_reject_reason reason = DP_REJECT_NONE;
    rc = dp_synth_ingest(s->synth, u, &reason);
    if (rc != DP_OK)
        return rc;
    if (reason != DP_REJECT_NONE)
        return dead_letter(p, m, reason, dp_reject_reason_text(reason));
    accepted(p, s, m->offset);
    if (dp_synth_roster_complete(s->synth))
        return close_step(p, s, m->offset);
    return DP_OK;
}

/* --- runs: consecutive plain updates of one stream, ingested as a batch ----------
 *
 * A poll batch is mostly REPORTs of one stream for its open step.  Such a
 * message passes every check of handle_update without side effects up to
 * dp_synth_ingest, and those checks read only state that nothing but a
 * close changes (the open step, exhaustion, skip_below).  So consecutive
 * ones are collected into a run and handed to dp_synth_ingest_batch, which
 * applies them exactly as that many dp_synth_ingest calls would.  The one
 * close that can happen inside a run is a roster completion: it happens at
 * the run's last accepted update j (once every rostered entity has
 * reported, every later update of that step is rejected, and a rejected
 * update changes no synthesizer state — synth.h).  The run is then cut at
 * j: the step closes there, and the updates after j are handled again one
 * by one against the new open step, exactly as sequential handling would
 * have seen them.  Anything else — another stream, a marker, a message
 * that fails a check — ends the run first, so side effects keep log order. */

/* The stream m would be ingested into by the plain path, or NULL. */
static ps_stream *run_candidate(proc *p, const rd_kafka_message_t *m, const dp_update *u)
{
    if (u->kind == DP_UPDATE_CLOSE_STEP)
        return NULL;
    ps_stream *s = p->run_s;
    if (!s || s->id_len != u->stream_id_len || memcmp(s->id, u->stream_id, s->id_len) != 0) {
        dp_bytes_map_slot *slot = dp_bytes_map_find(&p->streams, u->stream_id, u->stream_id_len);
        s = slot ? slot->value : NULL;
    }
    if (!s || s->partition != m->partition || m->offset < s->skip_below || dp_synth_exhausted(s->synth) ||
        u->step != dp_synth_open_step(s->synth))
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
    int rc = dp_synth_ingest_batch(s->synth, u, n, reason);
    if (rc != DP_OK)
        return rc;
    size_t cut = n;   /* the run ends after index cut - 1 */
    int complete = dp_synth_roster_complete(s->synth);
    if (complete) {
        while (cut > 0 && reason[cut - 1] != DP_REJECT_NONE)
            cut--;
        if (cut == 0)   /* cannot happen: the roster was incomplete before the run */
            return DP_ESTATE;
    }
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

/* Handle p->batch[0..n) in log order. */
static int handle_batch(proc *p, size_t n)
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
                    set_fatal(p, "fatal consumer error: %s", rd_kafka_message_errstr(m));
            }
            continue;
        }
        ps_partition *pp = part_get(p, m->partition);
        if (!pp) {
            rc = DP_ENOMEM;
            break;
        }
        if (!pp->assigned)
            continue;   /* stale message of a revoked partition */
        p->n_msgs++;
        dp_update *u = &p->batch_upd[i];
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
        rc = dr == DP_OK ? handle_update(p, m, u) : dead_letter(p, m, DP_REJECT_MALFORMED, msg);
    }
    if (rc == DP_OK && !p->fatal)
        rc = run_flush(p);
    p->run_n = 0;
    p->run_s = NULL;
    return rc;
}

/* --- idle timeout: append CLOSE_STEP markers ---------------------------------------- */

static void idle_markers(proc *p)
{
    if (p->o->idle_timeout_ms <= 0)
        return;
    int64_t now = now_ms();
    for (size_t i = 0; i < p->streams.cap; i++) {
        ps_stream *s = dp_bytes_map_at(&p->streams, i);
        if (!s || s->pending == NO_OFFSET || dp_synth_exhausted(s->synth))
            continue;
        uint64_t open = dp_synth_open_step(s->synth);
        if (now - s->last_accept_ms < p->o->idle_timeout_ms)
            continue;
        if (s->marker_step == open && now - s->marker_ms < p->o->idle_timeout_ms)
            continue;   /* appended recently; wait for it to come back */
        dp_update mk = {.stream_id = s->id, .stream_id_len = s->id_len, .step = open,
                        .kind = DP_UPDATE_CLOSE_STEP};
        p->enc.len = 0;
        char err[256];
        if (dp_codec_encode_update_buf(p->codec, &mk, &p->enc, err, sizeof err) != DP_OK ||
            produce(p, p->marker_producer, p->cfg->topic_updates, s->partition, dp_codec_type_name(DP_CODEC_UPDATE),
                    s->id, s->id_len, p->enc.data, p->enc.len) != DP_OK) {
            dp_log(DP_LOG_WARN, "could not append a CLOSE_STEP marker for stream '%s'; will retry", s->id);
            continue;
        }
        s->marker_step = open;
        s->marker_ms = now;
        p->n_markers++;
        dp_log(DP_LOG_INFO, "stream '%s' idle for %" PRId64 " ms: appended CLOSE_STEP for step %" PRIu64,
               s->id, now - s->last_accept_ms, open);
    }
    rd_kafka_poll(p->marker_producer, 0);
}

/* --- restore ---------------------------------------------------------------------- */

typedef struct restore_val {
    uint8_t *data;
    size_t   len;
} restore_val;

static void free_restore_val(void *v, void *ctx) { (void)ctx; if (v) { free(((restore_val *)v)->data); free(v); } }
static int keep_none(void *v, void *ctx) { (void)v; (void)ctx; return 0; }

/* One retry of a transient restore error: wait a little unless the
 * deadline passed or a stop was requested. */
static int restore_wait(proc *p, int64_t deadline, const char *what, rd_kafka_resp_err_t why)
{
    if (*p->o->stop)
        return DP_ECANCELED;
    if (now_ms() >= deadline) {
        dp_log(DP_LOG_ERROR, "cannot read %s state topic %s: %s", what, p->cfg->topic_state, rd_kafka_err2str(why));
        return DP_EIO;
    }
    dp_log(DP_LOG_DEBUG, "restore: %s %s: %s; retrying", what, p->cfg->topic_state, rd_kafka_err2str(why));
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 100 * 1000000L};
    nanosleep(&ts, NULL);
    return DP_OK;
}

/* 1 if the record belongs to a partition of `l` (the updates topic's
 * partitions being restored).  Records that cannot be read are kept, so
 * that restore_partitions refuses them as before. */
static int state_record_wanted(proc *p, const rd_kafka_message_t *m, const rd_kafka_topic_partition_list_t *l)
{
    const char *topic;
    size_t topic_len;
    int32_t part;
    if (dp_state_owner(p->codec, m->payload, m->len, &topic, &topic_len, &part) != DP_OK)
        return 1;
    if (topic_len != strlen(p->cfg->topic_updates) || memcmp(topic, p->cfg->topic_updates, topic_len) != 0)
        return 0;
    for (int i = 0; i < l->cnt; i++)
        if (l->elems[i].partition == part)
            return 1;
    return 0;
}

/* Read the state topic to its end (read_committed: up to the last stable
 * offset, so a predecessor's open transaction is waited for, never read)
 * and keep the newest value per key of the records that belong to the
 * partitions in `l` (the other instances' streams are not held in memory;
 * a newer record of another partition under a key still forgets the older
 * one, so "newest per key" holds). */
static int read_state_topic(proc *p, dp_bytes_map *latest, const rd_kafka_topic_partition_list_t *l_assigned)
{
    char err[512];
    const char *const fixed[][2] = {{"group.id", "dpstream-state-reader"},
                                    {"isolation.level", "read_committed"},
                                    {"enable.auto.commit", "false"},
                                    {"enable.partition.eof", "true"},
                                    {"auto.offset.reset", "earliest"}};
    rd_kafka_conf_t *conf = dp_kafka_conf(p->cfg, p->o->bootstrap_override, fixed, 5, err, sizeof err);
    if (!conf) {
        set_fatal(p, "state reader: %s", err);
        return DP_EINVAL;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) {
        set_fatal(p, "state reader: %s", err);
        return DP_EIO;
    }
    int rc = DP_OK;
    const struct rd_kafka_metadata *md = NULL;
    /* Right after the topic is created (or while a broker fails over) its
     * metadata and leaders are briefly missing: retry those errors until the
     * usual timeout rather than give up the assignment. */
    int64_t deadline = now_ms() + KAFKA_TIMEOUT_MS;
    for (;;) {
        rd_kafka_topic_t *t = rd_kafka_topic_new(rk, p->cfg->topic_state, NULL);
        rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, KAFKA_TIMEOUT_MS);
        rd_kafka_topic_destroy(t);
        if (!e && md->topic_cnt == 1 && !md->topics[0].err && md->topics[0].partition_cnt > 0)
            break;
        rd_kafka_resp_err_t why = e ? e : md->topics[0].err;
        if (md)
            rd_kafka_metadata_destroy(md);
        md = NULL;
        if ((rc = restore_wait(p, deadline, "metadata of", why)) != DP_OK)
            goto out;
    }
    int np = md->topics[0].partition_cnt;
    /* "The end" is the high watermark *now*, not the first EOF: under
     * read_committed an EOF comes at the last stable offset, and a failed
     * instance's still-open transaction holds that back while committed
     * snapshots of other instances sit behind it.  Stopping there would
     * restore stale state and release steps twice.  So wait until every
     * transaction open at this moment is resolved (committed, or aborted
     * when the broker's transaction timeout expires or its successor
     * fences it): each partition is done at an EOF at or past the high
     * watermark read here. */
    int64_t *hw = calloc((size_t)np, sizeof *hw);
    int *done = calloc((size_t)np, sizeof *done);
    int n_done = 0;
    if (!hw || !done) {
        free(hw);
        free(done);
        rc = DP_ENOMEM;
        goto out;
    }
    /* The high watermark must come from a read_uncommitted client: for a
     * read_committed one, ListOffsets answers the last stable offset. */
    const char *const hw_kv[][2] = {{"group.id", "dpstream-state-watermarks"},
                                    {"isolation.level", "read_uncommitted"},
                                    {"enable.auto.commit", "false"}};
    rd_kafka_conf_t *hw_conf = dp_kafka_conf(p->cfg, p->o->bootstrap_override, hw_kv, 3, err, sizeof err);
    rd_kafka_t *hw_rk = hw_conf ? rd_kafka_new(RD_KAFKA_CONSUMER, hw_conf, err, sizeof err) : NULL;
    if (!hw_rk) {
        dp_log(DP_LOG_ERROR, "state topic watermarks: %s", err);
        free(hw);
        free(done);
        rc = DP_EIO;
        goto out;
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(np);
    for (int i = 0; i < np && rc == DP_OK; i++) {
        int32_t pid = md->topics[0].partitions[i].id;
        if (pid < 0 || pid >= np) {
            dp_log(DP_LOG_ERROR, "state topic %s: unexpected partition id %" PRId32, p->cfg->topic_state, pid);
            rc = DP_EIO;
            break;
        }
        for (;;) {
            int64_t lo = 0;
            rd_kafka_resp_err_t we =
                rd_kafka_query_watermark_offsets(hw_rk, p->cfg->topic_state, pid, &lo, &hw[pid], KAFKA_TIMEOUT_MS);
            if (!we || (rc = restore_wait(p, deadline, "watermarks of", we)) != DP_OK)
                break;
        }
        rd_kafka_topic_partition_list_add(l, p->cfg->topic_state, pid)->offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_destroy(hw_rk);
    if (rc == DP_OK)
        rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    for (int i = 0; i < np; i++)
        dp_log(DP_LOG_DEBUG, "restore: reading %s[%d] up to offset %" PRId64, p->cfg->topic_state, i, hw[i]);
    uint64_t n = 0;
    int64_t started = now_ms(), last_note = started;
    while (rc == DP_OK && n_done < np) {
        if (*p->o->stop) {
            rc = DP_ECANCELED;
            break;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        int64_t now = now_ms();
        if (now - last_note >= 10000) {
            dp_log(DP_LOG_INFO, "restore: waiting for a transaction still open on %s (a failed instance's; "
                                "it ends at the broker's transaction timeout)", p->cfg->topic_state);
            last_note = now;
        }
        if (!m) {
            if (now - started > 20 * KAFKA_TIMEOUT_MS) {
                dp_log(DP_LOG_ERROR, "timed out reading the state topic %s", p->cfg->topic_state);
                rc = DP_EIO;
            }
            continue;
        }
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            if (m->partition >= 0 && m->partition < np && !done[m->partition] && m->offset >= hw[m->partition]) {
                done[m->partition] = 1;
                n_done++;
            }
        } else if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
            dp_log(DP_LOG_ERROR, "reading state topic: %s", rd_kafka_message_errstr(m));
            rc = DP_EIO;
        } else if (m->err) {
            /* librdkafka reports and recovers from transient fetch errors
             * itself; the overall timeout above bounds a persistent one. */
            dp_log(DP_LOG_WARN, "reading state topic: %s", rd_kafka_message_errstr(m));
        } else if (m->key && m->payload && !state_record_wanted(p, m, l_assigned)) {
            dp_bytes_map_slot *s = dp_bytes_map_find(latest, m->key, m->key_len);
            if (s) {   /* superseded by a record we do not restore */
                free_restore_val(s->value, NULL);
                s->value = NULL;
            }
            n++;
        } else if (m->key) {
            dp_bytes_map_slot *s = dp_bytes_map_upsert(latest, m->key, m->key_len);
            if (!s) {
                rc = DP_ENOMEM;
            } else {
                free_restore_val(s->value, NULL);
                s->value = NULL;
                if (m->payload) {   /* NULL payload = tombstone */
                    restore_val *v = malloc(sizeof *v);
                    if (!v || !(v->data = malloc(m->len ? m->len : 1))) {
                        free(v);
                        rc = DP_ENOMEM;
                    } else {
                        memcpy(v->data, m->payload, m->len);
                        v->len = m->len;
                        s->value = v;
                    }
                }
                n++;
            }
        }
        rd_kafka_message_destroy(m);
    }
    free(hw);
    free(done);
    dp_log(DP_LOG_DEBUG, "read %" PRIu64 " state records (%zu keys)", n, latest->count);
out:
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return rc;
}

/* Decode the state record under `key`; a snapshot of several chunks is
 * assembled from the values under its chunk keys (state_record.h; stale
 * chunks of an older snapshot under those keys are ignored there). */
static int restore_decode(proc *p, const dp_bytes_map *latest, const char *key, size_t key_len,
                          const restore_val *v, dp_state_record *r, dp_buf *scratch, char *err, size_t errn)
{
    dp_state_chunk_info info;
    if (dp_state_chunk_peek(p->codec, v->data, v->len, &info) != DP_OK || info.chunk_count <= 1)
        return dp_state_decode(p->codec, v->data, v->len, p->o->state_key, r, scratch, err, errn);
    /* at most one piece per key present: a corrupt count cannot make this huge */
    size_t cap = info.chunk_count < latest->count ? info.chunk_count : latest->count;
    dp_state_piece *pieces = malloc((cap ? cap : 1) * sizeof *pieces);
    dp_buf ck;
    dp_buf_init(&ck);
    if (!pieces) {
        snprintf(err, errn, "out of memory");
        return DP_ENOMEM;
    }
    size_t n = 0;
    pieces[n++] = (dp_state_piece){.data = v->data, .len = v->len};
    int rc = DP_OK;
    for (uint32_t i = 1; i < info.chunk_count && rc == DP_OK; i++) {
        if ((rc = dp_state_snapshot_key(key, key_len, i, &ck)) != DP_OK)
            break;
        dp_bytes_map_slot *s = dp_bytes_map_find(latest, ck.data, ck.len);
        const restore_val *cv = s ? s->value : NULL;
        if (cv && n < cap)
            pieces[n++] = (dp_state_piece){.data = cv->data, .len = cv->len};
    }
    if (rc == DP_OK)
        rc = dp_state_decode_chunks(p->codec, pieces, n, p->o->state_key, r, scratch, err, errn);
    else
        snprintf(err, errn, "out of memory");
    dp_buf_free(&ck);
    free(pieces);
    return rc;
}

/* Restore the streams of the partitions in `l` (marked assigned) and set
 * each element's offset to where consumption must resume. */
static int restore_partitions(proc *p, rd_kafka_topic_partition_list_t *l)
{
    for (int i = 0; i < l->cnt; i++) {
        ps_partition *pp = part_get(p, l->elems[i].partition);
        if (!pp)
            return DP_ENOMEM;
        *pp = (ps_partition){.assigned = 1, .position = NO_OFFSET, .resume = RD_KAFKA_OFFSET_BEGINNING};
        l->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    dp_bytes_map latest;
    dp_bytes_map_init(&latest);
    int rc = read_state_topic(p, &latest, l);
    dp_buf scratch;
    dp_buf_init(&scratch);
    size_t topic_len = strlen(p->cfg->topic_updates);
    int64_t *resume = calloc((size_t)l->cnt, sizeof *resume);
    if (!resume)
        rc = DP_ENOMEM;
    for (int i = 0; i < l->cnt && resume; i++)
        resume[i] = NO_OFFSET;
    uint64_t restored = 0;
    for (size_t k = 0; rc == DP_OK && k < latest.cap; k++) {
        restore_val *v = latest.slots[k].key ? latest.slots[k].value : NULL;
        if (!v || dp_state_key_is_chunk(latest.slots[k].key, latest.slots[k].key_len))
            continue;   /* chunks i > 0 are gathered through their chunk 0 */
        dp_state_record r;
        char err[512];
        rc = restore_decode(p, &latest, latest.slots[k].key, latest.slots[k].key_len, v, &r, &scratch, err,
                            sizeof err);
        if (rc != DP_OK) {
            set_fatal(p, "state topic holds a record that cannot be restored: %s", err);
            break;
        }
        if (r.updates_topic_len != topic_len || memcmp(r.updates_topic, p->cfg->topic_updates, topic_len) != 0)
            continue;
        int idx = -1;
        for (int i = 0; i < l->cnt; i++)
            if (l->elems[i].partition == r.partition)
                idx = i;
        if (idx < 0)
            continue;
        if (r.kind == DP_STATE_PROGRESS) {
            p->parts[r.partition].dlq_below = r.position;
            if (resume[idx] == NO_OFFSET || r.resume < resume[idx])
                resume[idx] = r.resume;
            continue;
        }
        const dp_stream_route *route = dp_stream_config_route(p->cfg, r.stream_id, r.stream_id_len);
        if (!route || strcmp(route->synthesizer, r.synthesizer) != 0) {
            set_fatal(p, "stream '%s' has a snapshot but the configuration no longer routes it to the same "
                         "synthesizer; refusing to start it afresh (that would spend its budget twice)",
                      r.stream_id);
            rc = DP_EINVAL;
            break;
        }
        ps_stream *s = stream_new(p, r.stream_id, r.stream_id_len, route, r.partition);
        if (!s) {
            rc = DP_ENOMEM;
            break;
        }
        dp_synth_env env = {.key = p->o->noise_key, .stream_id = s->id, .stream_id_len = s->id_len};
        err[0] = '\0';
        rc = dp_synth_restore(&s->synth, route->synthesizer, route->config, &env, r.state, r.state_len, err,
                              sizeof err);
        if (rc != DP_OK) {
            set_fatal(p, "cannot restore a stream's synthesizer: %s", err[0] ? err : dp_status_str(rc));
            stream_free(s);
            break;
        }
        s->skip_below = r.skip_below;
        dp_bytes_map_slot *slot = dp_bytes_map_upsert(&p->streams, s->id, s->id_len);
        if (!slot) {
            stream_free(s);
            rc = DP_ENOMEM;
            break;
        }
        stream_free(slot->value);
        slot->value = s;
        restored++;
    }
    if (rc == DP_OK) {
        for (int i = 0; i < l->cnt; i++) {
            /* Without a progress record nothing of this partition was ever
             * committed: start at the beginning (restored streams still skip
             * what their snapshots cover). */
            l->elems[i].offset = resume[i] == NO_OFFSET ? RD_KAFKA_OFFSET_BEGINNING : resume[i];
            p->parts[l->elems[i].partition].resume = l->elems[i].offset;
            if (resume[i] == NO_OFFSET)
                dp_log(DP_LOG_INFO, "partition %s[%" PRId32 "]: nothing committed yet, starting at the beginning",
                       p->cfg->topic_updates, l->elems[i].partition);
            else
                dp_log(DP_LOG_INFO, "partition %s[%" PRId32 "]: resuming at offset %" PRId64,
                       p->cfg->topic_updates, l->elems[i].partition, resume[i]);
        }
        dp_log(DP_LOG_INFO, "restored %" PRIu64 " stream(s) from %s", restored, p->cfg->topic_state);
    }
    free(resume);
    if (scratch.data)
        sodium_memzero(scratch.data, scratch.cap);
    dp_buf_free(&scratch);
    dp_bytes_map_filter(&latest, keep_none, free_restore_val, NULL);
    dp_bytes_map_free(&latest);
    return rc;
}

/* --- assignment, revocation, rewind ---------------------------------------------- */

/* Seek every partition of l to its offset; DP_EIO (logged) if any fails. */
static int seek_to(proc *p, rd_kafka_topic_partition_list_t *l)
{
    if (l->cnt == 0)
        return DP_OK;
    rd_kafka_error_t *e = rd_kafka_seek_partitions(p->consumer, l, KAFKA_TIMEOUT_MS);
    if (e) {
        dp_log(DP_LOG_ERROR, "seek failed: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        return DP_EIO;
    }
    for (int i = 0; i < l->cnt; i++)
        if (l->elems[i].err) {
            dp_log(DP_LOG_ERROR, "seek of partition %" PRId32 " failed: %s", l->elems[i].partition,
                   rd_kafka_err2str(l->elems[i].err));
            return DP_EIO;
        }
    return DP_OK;
}

/* After an aborted transaction: forget everything in memory and restore
 * the assigned partitions exactly as a restarted instance would. */
#define MAX_REWINDS_IN_ROW 5

static int rewind_assigned(proc *p)
{
    commit_wait(p);   /* its outcome no longer matters: everything is restored */
    p->need_rewind = 0;
    /* A failure that repeats after restoring (e.g. a message the broker
     * will never accept) would loop forever: give up instead. */
    if (++p->rewinds_in_row > MAX_REWINDS_IN_ROW) {
        set_fatal(p, "%s", "transactions keep failing after restoring from the state topic; stopping");
        return DP_EIO;
    }
    for (int32_t i = 0; i < p->n_parts; i++)
        p->parts[i].assigned = 0;
    int rc = drop_unassigned_streams(p);   /* all of them */
    if (rc != DP_OK)
        return rc;
    rd_kafka_topic_partition_list_t *l = NULL;
    rd_kafka_topic_partition_list_t *cur = NULL;
    if (rd_kafka_assignment(p->consumer, &cur) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return DP_EIO;
    l = rd_kafka_topic_partition_list_copy(cur);
    rd_kafka_topic_partition_list_destroy(cur);
    dp_log(DP_LOG_WARN, "transaction aborted: rewinding %d partition(s) to their last committed state", l->cnt);
    rc = restore_partitions(p, l);
    if (rc == DP_OK && (rc = seek_to(p, l)) != DP_OK)
        set_fatal(p, "%s", "seek after rewind failed");
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

/* A rebalance callback ran inside the consume call that fetched the
 * current batch: which of its messages came before the callback and which
 * after cannot be told, so none is handled and every assigned partition is
 * sought back to where handling stopped (or, if nothing was handled since
 * its restore, to where the restore put it). */
static int reseek_assigned(proc *p)
{
    rd_kafka_topic_partition_list_t *l = NULL;
    if (rd_kafka_assignment(p->consumer, &l) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return DP_EIO;
    int rc = DP_OK;
    for (int i = 0; i < l->cnt && rc == DP_OK; i++) {
        ps_partition *pp = part_get(p, l->elems[i].partition);
        if (!pp)
            rc = DP_ENOMEM;
        else
            l->elems[i].offset = pp->position != NO_OFFSET ? pp->position : pp->resume;
    }
    if (rc == DP_OK)
        rc = seek_to(p, l);
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
                         void *opaque)
{
    proc *p = opaque;
    p->generation++;
    commit_wait(p);   /* a restore reads the state topic this commit writes */
    int cooperative = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        if (p->fatal) {
            /* Do not consume what we could not restore. */
            return;
        }
        int rc = restore_partitions(p, parts);
        if (rc == DP_ECANCELED) {
            dp_log(DP_LOG_INFO, "%s", "shutdown requested while restoring; partitions left unassigned");
            return;
        }
        if (rc != DP_OK) {
            set_fatal(p, "restoring assigned partitions failed: %s", dp_status_str(rc));
            return;
        }
        rd_kafka_error_t *e = NULL;
        if (cooperative)
            e = rd_kafka_incremental_assign(rk, parts);
        else {
            rd_kafka_resp_err_t ae = rd_kafka_assign(rk, parts);
            if (ae)
                set_fatal(p, "assign failed: %s", rd_kafka_err2str(ae));
        }
        if (e) {
            set_fatal(p, "incremental assign failed: %s", rd_kafka_error_string(e));
            rd_kafka_error_destroy(e);
        }
        dp_log(DP_LOG_INFO, "assigned %d partition(s) of %s", parts->cnt, p->cfg->topic_updates);
        return;
    }
    /* Revocation (or lost partitions): finish what is open, then forget
     * the revoked streams; their next owner restores them. */
    commit_wait(p);
    if (p->txn_open) {
        if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS)
            txn_commit(p, 1);
        else
            txn_abort(p);
    }
    for (int i = 0; i < parts->cnt; i++) {
        ps_partition *pp = part_get(p, parts->elems[i].partition);
        if (pp)
            pp->assigned = 0;
    }
    drop_unassigned_streams(p);
    if (cooperative) {
        rd_kafka_error_t *e = rd_kafka_incremental_unassign(rk, parts);
        if (e)
            rd_kafka_error_destroy(e);
    } else {
        rd_kafka_assign(rk, NULL);
    }
    dp_log(DP_LOG_INFO, "revoked %d partition(s) of %s", parts->cnt, p->cfg->topic_updates);
}

/* --- setup ------------------------------------------------------------------------ */

static const char *config_value(const dp_stream_config *c, const char *name)
{
    for (size_t i = 0; i < c->n_kafka; i++)
        if (strcmp(c->kafka[i].name, name) == 0)
            return c->kafka[i].value;
    return NULL;
}

int dp_processor_transactional_id(const char *group_id, const char *instance_id, char *out, size_t out_size)
{
    int n = snprintf(out, out_size, "%s.%s", group_id, instance_id);
    return n > 0 && (size_t)n < out_size ? DP_OK : DP_ERANGE;
}

/* Create the output topics if missing (broker default partitions and
 * replication; the state topic compacted). */
static int create_topics(proc *p, char *errstr, size_t errn)
{
    dp_topic_spec specs[] = {{p->cfg->topic_synthetic, -1, 0},
                             {p->cfg->topic_budget, -1, 0},
                             {p->cfg->topic_dead_letter, -1, 0},
                             {p->cfg->topic_state, -1, 1}};
    return dp_kafka_create_topics(p->producer, specs, 4, KAFKA_TIMEOUT_MS, errstr, errn);
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
    const char *mmb = config_value(p->cfg, "message.max.bytes");
    p->max_message_bytes = mmb ? (size_t)strtoull(mmb, NULL, 10) : 1000000;
    if (p->max_message_bytes < 1000)
        p->max_message_bytes = 1000000;
    p->max_message_bytes -= 512;   /* headroom for the key, headers and record overhead */
    char txid[512];
    if (dp_processor_transactional_id(p->group_id, p->o->instance_id, txid, sizeof txid) != DP_OK)
        return dp_err(errstr, errn, DP_ERANGE, "group id and instance id too long");

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

    int rc = p->o->skip_create_topics ? DP_OK : create_topics(p, errstr, errn);
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
    rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
    rd_kafka_conf_set_opaque(conf, p);
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
    dp_log(DP_LOG_INFO, "consuming %s as group '%s', transactional.id '%s'", p->cfg->topic_updates, p->group_id,
           txid);
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
    dp_log(DP_LOG_INFO,
           "progress: %.1f records/s, %" PRIu64 " records, %" PRIu64 " steps released, %" PRIu64
           " dead letters, %" PRIu64 " idle markers, %zu streams, lag %" PRId64,
           secs > 0 ? (double)(p->n_msgs - p->last_msgs) / secs : 0.0, p->n_msgs, p->n_steps, p->n_dlq,
           p->n_markers, p->streams.count, lag);
    p->last_msgs = p->n_msgs;
    p->last_progress_ms = now;
}

static void teardown(proc *p)
{
    if (p->committing) {   /* only after a fatal error: just let it finish */
        pthread_join(p->committer, NULL);
        p->committing = 0;
        if (p->commit_result)
            rd_kafka_error_destroy(p->commit_result);
    }
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
    for (int32_t i = 0; i < p->n_parts; i++)
        p->parts[i].assigned = 0;
    drop_unassigned_streams(p);
    dp_bytes_map_free(&p->streams);
    free(p->parts);
    free(p->chunk.recs);
    free(p->chunk.row_at);
    free(p->chunk.pt_at);
    free(p->chunk.rows);
    free(p->chunk.pts);
    dp_buf_free(&p->enc);
    dp_codec_destroy(p->codec);
    for (size_t i = 0; p->batch_store && i < BATCH_MAX; i++)
        dp_update_store_free(&p->batch_store[i]);
    free(p->batch);
    free(p->batch_upd);
    free(p->batch_store);
    free(p->batch_reason);
}

/* Wait up to POLL_MS for one message, then take whatever else is already
 * queued, up to BATCH_MAX.  (rd_kafka_consume_batch_queue with a timeout
 * waits until the batch is *full* or the timeout passes, which would hold
 * a lone CLOSE_STEP marker back by the whole timeout.) */
static ssize_t consume_batch(proc *p)
{
    rd_kafka_message_t *m = rd_kafka_consumer_poll(p->consumer, POLL_MS);
    if (!m)
        return 0;
    p->batch[0] = m;
    ssize_t more = rd_kafka_consume_batch_queue(p->queue, 0, p->batch + 1, BATCH_MAX - 1);
    return more < 0 ? 1 : 1 + more;
}

int dp_processor_run(const dp_processor_options *o, char *errstr, size_t errstr_size)
{
    if (!o || !o->config || !o->noise_key || !o->instance_id || !o->stop || o->chunk_records == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "processor: missing option");
    proc p;
    memset(&p, 0, sizeof p);
    p.o = o;
    p.cfg = o->config;
    dp_bytes_map_init(&p.streams);
    dp_buf_init(&p.enc);
    dp_codec_options copts;
    dp_stream_config_codec_options(p.cfg, &copts);
    int rc = dp_codec_create(&p.codec, &copts, errstr, errstr_size);
    if (rc == DP_OK) {
        p.batch = calloc(BATCH_MAX, sizeof *p.batch);
        p.batch_upd = calloc(BATCH_MAX, sizeof *p.batch_upd);
        p.batch_store = calloc(BATCH_MAX, sizeof *p.batch_store);
        p.batch_reason = calloc(BATCH_MAX, sizeof *p.batch_reason);
        if (!p.batch || !p.batch_upd || !p.batch_store || !p.batch_reason)
            rc = dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    }
    if (rc == DP_OK)
        rc = setup(&p, errstr, errstr_size);
    p.last_progress_ms = now_ms();
    int64_t last_idle_check = 0;
    while (rc == DP_OK && !*o->stop && !p.fatal) {
        uint64_t generation = p.generation;
        ssize_t n = consume_batch(&p);
        p.now = now_ms();
        if (n < 0) {
            rc = dp_err(errstr, errstr_size, DP_EIO, "consume: %s", rd_kafka_err2str(rd_kafka_last_error()));
            break;
        }
        int hr = DP_OK;
        if (p.generation != generation && n > 0)
            hr = p.fatal ? DP_OK : reseek_assigned(&p);
        else
            hr = handle_batch(&p, (size_t)n);
        for (ssize_t i = 0; i < n; i++)
            rd_kafka_message_destroy(p.batch[i]);
        if (hr == DP_ENOMEM) {
            rc = dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
        } else if (hr != DP_OK && !p.fatal) {
            /* transaction trouble: state rolled back below */
            p.need_rewind = 1;
            if (p.txn_open)
                txn_abort(&p);
        }
        if (p.need_rewind && !p.fatal && rewind_assigned(&p) != DP_OK && !p.fatal && !*o->stop)
            set_fatal(&p, "%s", "could not restore state after an aborted transaction");
        int64_t now = p.now;
        if (p.txn_open && now - p.txn_begin_ms >= o->dlq_commit_ms)
            txn_commit(&p, 0);   /* dead letters with no step close to ride on */
        if (now - last_idle_check >= 200) {
            idle_markers(&p);
            last_idle_check = now;
        }
        if (o->progress_interval_ms > 0 && now - p.last_progress_ms >= o->progress_interval_ms)
            log_progress(&p, now);
    }
    if (rc == DP_OK && p.fatal)
        rc = dp_err(errstr, errstr_size, DP_ESTATE, "%s", p.fatal_msg);
    if (commit_wait(&p) != DP_OK && !p.fatal)
        dp_log(DP_LOG_WARN, "%s", "shutdown: the last step's transaction failed and was aborted");
    if (p.txn_open && !p.fatal) {
        if (txn_commit(&p, 1) != DP_OK)
            dp_log(DP_LOG_WARN, "shutdown: open transaction aborted");
    } else if (p.txn_open) {
        txn_abort(&p);
    }
    if (p.consumer)
        log_progress(&p, now_ms());
    teardown(&p);
    return rc;
}
