/* committer.c — the processor's Kafka transactions: begin, commit (on a
 * committer thread while consumption goes on), abort, and the one produce
 * call every output goes through.
 *
 * Owns: its ps_committer (proc.committer; no other file touches it) —
 * whether a transaction is open and since when, the commit running on the
 * committer thread and its outcome and timings, whether the state must be
 * rewound (set on an abortable error or an abort) and how many rewinds came
 * in a row (reset by a successful commit), the progress records' encoder —
 * and each partition's dirty flag (set by ps_txn_consumed, cleared by a
 * commit).  A partition's progress record goes to the state topic's
 * partition of the same number (state_layout.h).  Calls: librdkafka's
 * transactional API, state_record.h (progress records), processor_state
 * (ps_set_fatal).  Everything that produces (a dead letter, a close, a
 * rebalance, shutdown) first waits for a running commit (ps_commit_wait). */
#define _GNU_SOURCE   /* pthread_tryjoin_np */
#include "stream/committer.h"

#include <pthread.h>
#include <time.h>

#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "core/dp_error.h"
#include "stream/log.h"
#include "stream/processor_internal.h"
#include "stream/state_record.h"

struct ps_committer {
    int               txn_open;
    int64_t           txn_begin_ms;
    int               committing;       /* a commit_transaction runs on `thread` */
    pthread_t         thread;
    rd_kafka_error_t *result;           /* its outcome */
    int64_t           handoff_ms, open_ms, flush_ms, done_ms;
    int               need_rewind;
    int               rewinds_in_row;
    dp_buf            enc;              /* progress records */
};

int ps_committer_create(proc *p)
{
    ps_committer *c = calloc(1, sizeof *c);
    if (!c)
        return DP_ENOMEM;
    dp_buf_init(&c->enc);
    p->committer = c;
    return DP_OK;
}

void ps_committer_abandon(proc *p)
{
    ps_committer *c = p->committer;
    if (c && c->committing) {
        pthread_join(c->thread, NULL);
        c->committing = 0;
        if (c->result)
            rd_kafka_error_destroy(c->result);
        c->result = NULL;
    }
}

void ps_committer_free(proc *p)
{
    ps_committer *c = p->committer;
    if (!c)
        return;
    dp_buf_free(&c->enc);
    free(c);
    p->committer = NULL;
}

int ps_txn_is_open(const proc *p) { return p->committer && p->committer->txn_open; }

int ps_txn_open_for(const proc *p, int64_t now, int64_t ms)
{
    return ps_txn_is_open(p) && now - p->committer->txn_begin_ms >= ms;
}

void ps_txn_fail(proc *p)
{
    ps_committer *c = p->committer;
    c->need_rewind = 1;
    if (c->txn_open)
        ps_txn_abort(p);
}

int ps_txn_need_rewind(const proc *p) { return p->committer && p->committer->need_rewind; }

int ps_txn_rewinding(proc *p)
{
    ps_committer *c = p->committer;
    c->need_rewind = 0;
    return ++c->rewinds_in_row;
}

void ps_txn_consumed(proc *p, ps_partition *pp)
{
    (void)p;
    pp->dirty = 1;
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
int ps_produce(proc *p, rd_kafka_t *rk, const char *topic, int32_t partition, const char *type,
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
    ps_committer *c = p->committer;
    if (!e)
        return DP_OK;
    dp_log_event(DP_LOG_ERROR, "txn_error", NULL, 0, 0, "%s failed: %s", what, rd_kafka_error_string(e));
    rd_kafka_resp_err_t code = rd_kafka_error_code(e);
    if (rd_kafka_error_is_fatal(e) && (code == RD_KAFKA_RESP_ERR__FENCED || code == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
                                       code == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH)) {
        char msg[700];
        snprintf(msg, sizeof msg, "fenced: another instance started with instance id '%s' (the same "
                 "transactional.id) and took over; two live instances must not share an id — give each its own "
                 "--instance-id (default: the host name) and keep the group the same: %s", p->instance_id,
                 rd_kafka_error_string(e));
        ps_set_fatal(p, "%s", msg);
    } else if (rd_kafka_error_is_fatal(e)) {
        ps_set_fatal(p, "fatal transactional error (another instance with this transactional.id?): %s",
                  rd_kafka_error_string(e));
    } else {
        c->need_rewind = 1;
    }
    rd_kafka_error_destroy(e);
    return DP_EIO;
}


/* The outcome of the last commit_transaction (its result): on
 * failure the transaction is aborted and the state rewound (need_rewind),
 * which also undoes everything ingested while it ran. */
static int commit_outcome(proc *p)
{
    ps_committer *c = p->committer;
    rd_kafka_error_t *e = c->result;
    c->result = NULL;
    if (txn_error(p, "commit_transaction", e) != DP_OK) {
        c->txn_open = 1;   /* still open at the broker */
        ps_txn_abort(p);
        return DP_EIO;
    }
    dp_log_event(DP_LOG_DEBUG, "txn_commit", NULL, 0, 0,
           "transaction committed: %" PRId64 " ms open, done %" PRId64 " ms after hand-off (flush %" PRId64
           " ms), awaited %" PRId64 " ms later",
           c->open_ms, c->done_ms - c->handoff_ms, c->flush_ms,
           ps_now_ms() - c->done_ms);
    c->rewinds_in_row = 0;
    if (p->o->metrics)
        dp_metrics_txn_committed(p->o->metrics, (double)(c->done_ms - c->handoff_ms) / 1000.0);
    return DP_OK;
}

/* Wait for the commit running on the committer thread, if any. */
int ps_commit_wait(proc *p)
{
    ps_committer *c = p->committer;
    if (!c || !c->committing)
        return DP_OK;
    pthread_join(c->thread, NULL);
    c->committing = 0;
    return commit_outcome(p);
}

int ps_commit_poll(proc *p)
{
    ps_committer *c = p->committer;
    if (!c || !c->committing || pthread_tryjoin_np(c->thread, NULL) != 0)
        return DP_OK;
    c->committing = 0;
    return commit_outcome(p);
}

int ps_txn_begin(proc *p)
{
    ps_committer *c = p->committer;
    if (c->txn_open)
        return DP_OK;
    int rc = ps_commit_wait(p);
    if (rc != DP_OK)
        return rc;
    if (txn_error(p, "begin_transaction", rd_kafka_begin_transaction(p->producer)) != DP_OK)
        return DP_EIO;
    c->txn_open = 1;
    c->txn_begin_ms = ps_now_ms();
    return DP_OK;
}

void ps_txn_abort(proc *p)
{
    ps_committer *c = p->committer;
    if (!c || !c->txn_open)
        return;
    rd_kafka_error_t *e = rd_kafka_abort_transaction(p->producer, KAFKA_TIMEOUT_MS);
    if (e) {
        dp_log_event(DP_LOG_ERROR, "txn_abort", NULL, 0, 0, "abort_transaction failed: %s",
                     rd_kafka_error_string(e));
        if (rd_kafka_error_is_fatal(e))
            ps_set_fatal(p, "fatal error aborting a transaction: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    } else {
        dp_log_event(DP_LOG_WARN, "txn_abort", NULL, 0, 0, "transaction aborted (its outputs are discarded; the "
                     "state is rewound to the last committed snapshot)");
    }
    c->txn_open = 0;
    c->need_rewind = 1;
    if (p->o->metrics)
        dp_metrics_txn_aborted(p->o->metrics);
}

static void *committer_main(void *arg)
{
    proc *p = arg;
    ps_committer *c = p->committer;
    /* A separate flush only where it is wanted: the debug log splits the
     * commit's time with it, and the test hook holds a transaction open
     * with its outputs written.  commit_transaction flushes (again) and
     * reports any delivery failure, so the result is not needed here. */
    int64_t t0 = ps_now_ms();
    c->flush_ms = -1;
    if (p->o->debug_commit_delay_ms > 0 || dp_log_get_level() >= DP_LOG_DEBUG) {
        (void)rd_kafka_flush(p->producer, KAFKA_TIMEOUT_MS);
        c->flush_ms = ps_now_ms() - t0;
    }
    if (p->o->debug_commit_delay_ms > 0) {
        /* what crash tests look for: a kill after this line and before the
         * commit's lands inside a transaction open at the broker */
        dp_log_event(DP_LOG_INFO, "txn_held", NULL, 0, 0, "transaction open at the broker with its outputs "
                     "written; holding it %" PRId64 " ms before committing (--debug-commit-delay-ms)",
                     p->o->debug_commit_delay_ms);
        struct timespec ts = {.tv_sec = p->o->debug_commit_delay_ms / 1000,
                              .tv_nsec = (long)(p->o->debug_commit_delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    c->result = rd_kafka_commit_transaction(p->producer, KAFKA_TIMEOUT_MS);
    c->done_ms = ps_now_ms();
    if (p->o->debug_commit_delay_ms > 0)   /* the end of what txn_held began, for the crash tests */
        dp_log_event(DP_LOG_INFO, "txn_held_end", NULL, 0, 0, "held transaction %s",
                     c->result ? "failed to commit" : "committed");
    return NULL;
}

/* Progress records + offsets for every dirty partition, then commit.
 *
 * With `wait` 0 the commit itself (the flush of everything produced and
 * EndTxn: ~100 ms for a 10^6-record release) runs on a committer thread
 * while this one goes on consuming and ingesting; ingesting produces
 * nothing, and whatever would (a dead letter, the next close, a
 * rebalance, shutdown) first waits for it (ps_commit_wait).  Nothing
 * ingested meanwhile is in that transaction, and if it fails the rewind
 * discards it all, so the outputs are those of a synchronous commit. */
int ps_txn_commit(proc *p, int wait)
{
    ps_committer *c = p->committer;
    if (!c || !c->txn_open)
        return DP_OK;
    rd_kafka_topic_partition_list_t *offs = rd_kafka_topic_partition_list_new(4);
    int rc = DP_OK;
    int64_t t0 = ps_now_ms();
    for (int32_t i = 0; i < p->n_parts && rc == DP_OK; i++) {
        ps_partition *pp = &p->parts[i];
        if (!pp->assigned || !pp->dirty || pp->position == NO_OFFSET)
            continue;
        int64_t resume = partition_commit_offset(p, i);
        dp_state_record r = {.kind = DP_STATE_PROGRESS,
                             .updates_topic = p->cfg->topic_updates,
                             .updates_topic_len = strlen(p->cfg->topic_updates),
                             .partition = i,
                             .position = pp->position,
                             .resume = resume,
                             .partition_count = p->updates_partitions};
        char key[512];
        int kl = snprintf(key, sizeof key, "%s%s/%" PRId32, DP_STATE_PROGRESS_KEY_PREFIX,
                          p->cfg->topic_updates, i);
        c->enc.len = 0;
        if ((rc = dp_state_encode_progress(&r, &c->enc)) == DP_OK)
            rc = ps_produce(p, p->producer, p->cfg->topic_state, i, "Progress", key, (size_t)kl,
                         c->enc.data, c->enc.len);
        rd_kafka_topic_partition_list_add(offs, p->cfg->topic_updates, i)->offset = resume;
    }
    if (rc == DP_OK && offs->cnt > 0) {
        rd_kafka_consumer_group_metadata_t *md = rd_kafka_consumer_group_metadata(p->consumer);
        rc = txn_error(p, "send_offsets_to_transaction",
                       rd_kafka_send_offsets_to_transaction(p->producer, offs, md, KAFKA_TIMEOUT_MS));
        rd_kafka_consumer_group_metadata_destroy(md);
    }
    rd_kafka_topic_partition_list_destroy(offs);
    if (rc != DP_OK) {
        ps_txn_abort(p);
        return rc;
    }
    /* Dirty = consumed since these progress records; from here on. */
    for (int32_t i = 0; i < p->n_parts; i++)
        p->parts[i].dirty = 0;
    c->txn_open = 0;
    c->handoff_ms = t0;
    c->open_ms = t0 - c->txn_begin_ms;
    if (!wait && pthread_create(&c->thread, NULL, committer_main, p) == 0) {
        c->committing = 1;
        return DP_OK;
    }
    committer_main(p);   /* on this thread */
    return commit_outcome(p);
}
