/* copy_pipeline.c — bench_throughput's copy pass (copy_pipeline.h): the
 * plan read back from the dpstream pass's outputs, and the bare
 * consume→produce pipeline that replays it transaction by transaction.
 * No dpstream code runs in the pipeline's thread but the client
 * configuration (kafka_util: the same properties as the processor's
 * clients, docs/kafka.md §2). */
#define _GNU_SOURCE   /* pthread_setname_np, pthread_tryjoin_np */
#include "copy_pipeline.h"

#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"
#include "stream/kafka_util.h"
#include "stream/state_layout.h"

/* --- the plan ---------------------------------------------------------------------- */

typedef struct topic_msgs {
    copy_msg *m;
    size_t    n, cap;
    int64_t   prev;      /* offset of the last message kept; -1 before the first */
    uint32_t  txn;
    int       eof;
} topic_msgs;

static int type_index(copy_plan *pl, const char *type, uint8_t *out)
{
    for (size_t i = 0; i < pl->n_types; i++)
        if (strcmp(pl->types[i], type) == 0) {
            *out = (uint8_t)i;
            return DP_OK;
        }
    if (pl->n_types == sizeof pl->types / sizeof pl->types[0])
        return DP_ERANGE;
    snprintf(pl->types[pl->n_types], sizeof pl->types[0], "%s", type);
    *out = (uint8_t)pl->n_types++;
    return DP_OK;
}

/* One output message into its topic's list, in its transaction. */
static int plan_keep(copy_plan *pl, topic_msgs *tm, int topic, const rd_kafka_message_t *m)
{
    char type[40];
    dp_kafka_message_type(m, type, sizeof type);
    if (topic == COPY_STATE && strcmp(type, DP_STATE_LAYOUT_TYPE) == 0)
        return DP_OK;   /* written once, outside any transaction */
    if (tm->prev >= 0 && m->offset != tm->prev + 1)
        tm->txn++;      /* the offset in between is a commit marker */
    tm->prev = m->offset;
    if (tm->n == tm->cap) {
        size_t cap = tm->cap ? 2 * tm->cap : 1024;
        copy_msg *a = realloc(tm->m, cap * sizeof *a);
        if (!a)
            return DP_ENOMEM;
        tm->m = a;
        tm->cap = cap;
    }
    copy_msg *c = &tm->m[tm->n++];
    memset(c, 0, sizeof *c);
    c->topic = (uint8_t)topic;
    c->txn = tm->txn;
    if (type_index(pl, type, &c->type) != DP_OK)
        return DP_ERANGE;
    c->key_at = pl->bytes.len;
    c->key_len = m->key_len;
    dp_buf_put_bytes(&pl->bytes, m->key, m->key_len);
    c->val_at = pl->bytes.len;
    c->val_len = m->payload ? (int64_t)m->len : -1;
    if (m->payload)
        dp_buf_put_bytes(&pl->bytes, m->payload, m->len);
    pl->msgs_per[topic]++;
    pl->bytes_per[topic] += m->key_len + m->len;
    return dp_buf_status(&pl->bytes);
}

/* The three topics' lists, transaction by transaction, into the plan. */
static int plan_assemble(copy_plan *pl, topic_msgs tm[COPY_TOPICS], uint64_t steps)
{
    size_t total = 0, at[COPY_TOPICS] = {0};
    for (int k = 0; k < COPY_TOPICS; k++)
        total += tm[k].n;
    pl->msgs = malloc((total ? total : 1) * sizeof *pl->msgs);
    pl->txn_start = malloc((steps + 1) * sizeof *pl->txn_start);
    if (!pl->msgs || !pl->txn_start)
        return DP_ENOMEM;
    pl->cap = total;
    for (uint64_t t = 0; t < steps; t++) {
        pl->txn_start[t] = pl->n;
        for (int k = 0; k < COPY_TOPICS; k++)
            while (at[k] < tm[k].n && tm[k].m[at[k]].txn == t)
                pl->msgs[pl->n++] = tm[k].m[at[k]++];
    }
    pl->txn_start[steps] = pl->n;
    pl->n_txn = (size_t)steps;
    return DP_OK;
}

int copy_plan_read(copy_plan *pl, const dp_stream_config *cfg, uint64_t steps, int64_t deadline_us, char *errstr,
                   size_t errn)
{
    memset(pl, 0, sizeof *pl);
    dp_buf_init(&pl->bytes);
    const char *const kv[][2] = {{"group.id", "bench-plan"},
                                 {"enable.auto.commit", "false"},
                                 {"isolation.level", "read_committed"},
                                 {"enable.partition.eof", "true"}};
    rd_kafka_conf_t *conf = dp_kafka_conf(cfg, NULL, kv, 4, errstr, errn);
    if (!conf)
        return DP_EINVAL;
    char err[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk)
        return dp_err(errstr, errn, DP_EIO, "plan reader: %s", err);
    rd_kafka_poll_set_consumer(rk);
    const char *names[COPY_TOPICS] = {cfg->topic_synthetic, cfg->topic_budget, cfg->topic_state};
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(COPY_TOPICS);
    for (int k = 0; k < COPY_TOPICS; k++)
        rd_kafka_topic_partition_list_add(l, names[k], 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    int rc = rd_kafka_assign(rk, l) ? dp_err(errstr, errn, DP_EIO, "plan reader: assign failed") : DP_OK;
    rd_kafka_topic_partition_list_destroy(l);
    topic_msgs tm[COPY_TOPICS];
    memset(tm, 0, sizeof tm);
    for (int k = 0; k < COPY_TOPICS; k++)
        tm[k].prev = -1;
    while (rc == DP_OK && !(tm[0].eof && tm[1].eof && tm[2].eof)) {
        if (now_us() > deadline_us) {
            rc = dp_err(errstr, errn, DP_EIO, "plan reader: outputs not read in time");
            break;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
        if (!m)
            continue;
        int k = 0;
        while (k < COPY_TOPICS && strcmp(rd_kafka_topic_name(m->rkt), names[k]) != 0)
            k++;
        if (k == COPY_TOPICS)
            ;
        else if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
            tm[k].eof = 1;
        else if (m->err)
            rc = dp_err(errstr, errn, DP_EIO, "plan reader: %s", rd_kafka_message_errstr(m));
        else
            rc = plan_keep(pl, &tm[k], k, m);
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    for (int k = 0; k < COPY_TOPICS && rc == DP_OK; k++)
        if (tm[k].n == 0 || (uint64_t)tm[k].txn + 1 != steps)
            rc = dp_err(errstr, errn, DP_ESTATE, "plan reader: %s holds %zu messages in %" PRIu32 " transactions, "
                        "expected %" PRIu64, names[k], tm[k].n, tm[k].n ? tm[k].txn + 1 : 0, steps);
    if (rc == DP_OK)
        rc = plan_assemble(pl, tm, steps);
    for (int k = 0; k < COPY_TOPICS; k++)
        free(tm[k].m);
    return rc;
}

void copy_plan_free(copy_plan *pl)
{
    free(pl->msgs);
    free(pl->txn_start);
    dp_buf_free(&pl->bytes);
    memset(pl, 0, sizeof *pl);
}

/* --- the pipeline ------------------------------------------------------------------ */

typedef struct copy_run {
    copy_pass                       *c;
    rd_kafka_t                      *consumer, *producer;
    rd_kafka_queue_t                *queue;
    pthread_t                        committer;
    int                              committing;
    rd_kafka_error_t                *result;
} copy_run;

/* With a delivery callback set, the flush inside commit_transaction wakes
 * on each report, as the processor's producer does (processor.c). */
static void copy_delivered(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)m;
    (void)opaque;
}

static int copy_setup(copy_run *r, char *errstr, size_t errn)
{
    copy_pass *c = r->c;
    char err[512];
    const char *const prod_kv[][2] = {{"transactional.id", c->txid}, {"enable.idempotence", "true"}, {"acks", "all"}};
    rd_kafka_conf_t *conf = dp_kafka_conf(c->out, NULL, prod_kv, 3, errstr, errn);
    if (!conf)
        return DP_EINVAL;
    rd_kafka_conf_set_dr_msg_cb(conf, copy_delivered);
    if (!(r->producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err)))
        return dp_err(errstr, errn, DP_EIO, "copy producer: %s", err);
    rd_kafka_error_t *e = rd_kafka_init_transactions(r->producer, 60000);
    if (e) {
        int rc = dp_err(errstr, errn, DP_EIO, "copy init_transactions: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        return rc;
    }
    if (!(r->consumer = bench_consumer_new(c->in, c->group, "copy consumer", errstr, errn)))
        return DP_EIO;
    r->queue = rd_kafka_queue_get_consumer(r->consumer);
    return bench_subscribe(r->consumer, c->in->topic_updates, errstr, errn);
}

static void *commit_main(void *arg)
{
    copy_run *r = arg;
    r->result = rd_kafka_commit_transaction(r->producer, 60000);
    return NULL;
}

/* The commit running on the committer thread: wait for it (`block`) or
 * reap it if done; its failure is the pass's. */
static int commit_reap(copy_run *r, int block, char *errstr, size_t errn)
{
    if (!r->committing || (block ? pthread_join(r->committer, NULL) : pthread_tryjoin_np(r->committer, NULL)) != 0)
        return DP_OK;
    r->committing = 0;
    if (!r->result)
        return DP_OK;
    int rc = dp_err(errstr, errn, DP_EIO, "copy commit_transaction: %s", rd_kafka_error_string(r->result));
    rd_kafka_error_destroy(r->result);
    r->result = NULL;
    return rc;
}

static int produce_one(copy_run *r, const char *topic, int32_t partition, const char *type, const void *key,
                       size_t key_len, const void *val, size_t val_len, char *errstr, size_t errn)
{
    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            r->producer, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
            RD_KAFKA_V_HEADER("dpstream.type", type, -1), RD_KAFKA_V_KEY((void *)key, key_len),
            RD_KAFKA_V_VALUE((void *)val, val_len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (!e)
            return DP_OK;
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
            return dp_err(errstr, errn, DP_EIO, "copy produce to %s: %s", topic, rd_kafka_err2str(e));
        rd_kafka_poll(r->producer, 50);
    }
}

/* Step t's marker (at `m`) was consumed: one transaction with the plan's
 * messages of step t and the offset after the marker, committed on the
 * committer thread. */
static int copy_close(copy_run *r, const rd_kafka_message_t *m, size_t txn, char *errstr, size_t errn)
{
    copy_pass *c = r->c;
    const copy_plan *pl = c->plan;
    int rc = commit_reap(r, 1, errstr, errn);
    if (rc != DP_OK)
        return rc;
    rd_kafka_error_t *e = rd_kafka_begin_transaction(r->producer);
    if (e) {
        rc = dp_err(errstr, errn, DP_EIO, "copy begin_transaction: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        return rc;
    }
    const char *topics[COPY_TOPICS] = {c->out->topic_synthetic, c->out->topic_budget, c->out->topic_state};
    for (size_t i = pl->txn_start[txn]; i < pl->txn_start[txn + 1] && rc == DP_OK; i++) {
        const copy_msg *x = &pl->msgs[i];
        rc = produce_one(r, topics[x->topic], x->topic == COPY_STATE ? 0 : RD_KAFKA_PARTITION_UA,
                         pl->types[x->type], pl->bytes.data + x->key_at, x->key_len,
                         x->val_len < 0 ? NULL : pl->bytes.data + x->val_at, x->val_len < 0 ? 0 : (size_t)x->val_len,
                         errstr, errn);
        c->produced += rc == DP_OK;
    }
    if (rc != DP_OK)
        return rc;
    rd_kafka_topic_partition_list_t *offs = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(offs, c->in->topic_updates, m->partition)->offset = m->offset + 1;
    rd_kafka_consumer_group_metadata_t *md = rd_kafka_consumer_group_metadata(r->consumer);
    e = rd_kafka_send_offsets_to_transaction(r->producer, offs, md, 60000);
    rd_kafka_consumer_group_metadata_destroy(md);
    rd_kafka_topic_partition_list_destroy(offs);
    if (e) {
        rc = dp_err(errstr, errn, DP_EIO, "copy send_offsets_to_transaction: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        return rc;
    }
    if (pthread_create(&r->committer, NULL, commit_main, r) != 0)
        return dp_err(errstr, errn, DP_EIO, "copy: cannot start the committer thread");
    r->committing = 1;
    c->txns++;
    return DP_OK;
}

/* The processor's loop without the processing: one consumer_poll, then
 * what is already queued (up to RAW_BATCH messages); a transaction at
 * every step's last message. */
static int copy_loop(copy_run *r, char *errstr, size_t errn)
{
    copy_pass *c = r->c;
    rd_kafka_message_t *batch[RAW_BATCH];
    int rc = DP_OK;
    while (rc == DP_OK && c->consumed < c->expect && !c->t.stop) {
        ssize_t n = 0;
        if ((batch[0] = rd_kafka_consumer_poll(r->consumer, 100)) != NULL) {
            ssize_t more = rd_kafka_consume_batch_queue(r->queue, 0, batch + 1, RAW_BATCH - 1);
            n = more < 0 ? 1 : 1 + more;
        }
        rc = commit_reap(r, 0, errstr, errn);
        for (ssize_t i = 0; i < n; i++) {
            rd_kafka_message_t *m = batch[i];
            if (rc == DP_OK && !m->err && ++c->consumed % c->per_step == 0)
                rc = copy_close(r, m, (size_t)(c->consumed / c->per_step - 1), errstr, errn);
            rd_kafka_message_destroy(m);
        }
    }
    int rc2 = commit_reap(r, 1, errstr, errn);
    return rc != DP_OK ? rc : rc2;
}

static void *copy_main(void *arg)
{
    copy_pass *c = arg;
    pthread_setname_np(pthread_self(), "dp-copy");
    copy_run r = {.c = c};
    c->t.rc = copy_setup(&r, c->t.err, sizeof c->t.err);
    if (c->t.rc == DP_OK)
        c->t.rc = copy_loop(&r, c->t.err, sizeof c->t.err);
    if (r.committing)
        commit_reap(&r, 1, NULL, 0);
    /* like the processor, run until told to stop: the budget watcher must
     * see the last commit before the thread counts as finished */
    while (c->t.rc == DP_OK && !c->t.stop)
        sleep_ms(10);
    if (r.queue)
        rd_kafka_queue_destroy(r.queue);
    if (r.consumer) {
        rd_kafka_consumer_close(r.consumer);
        rd_kafka_destroy(r.consumer);
    }
    if (r.producer)
        rd_kafka_destroy(r.producer);
    __atomic_store_n(&c->t.finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

int copy_start(copy_pass *c, const dp_stream_config *in, const dp_stream_config *out, const copy_plan *plan,
               const char *group, uint64_t per_step, uint64_t expect, char *errstr, size_t errn)
{
    memset(c, 0, sizeof *c);
    c->in = in;
    c->out = out;
    c->plan = plan;
    c->per_step = per_step;
    c->expect = expect;
    snprintf(c->group, sizeof c->group, "%s", group);
    snprintf(c->txid, sizeof c->txid, "%s.copy", group);
    if (plan->n_txn * per_step != expect)
        return dp_err(errstr, errn, DP_EINVAL, "copy: %zu planned transactions for %" PRIu64 " messages",
                      plan->n_txn, expect);
    if (pthread_create(&c->t.thread, NULL, copy_main, c) != 0)
        return dp_err(errstr, errn, DP_EIO, "cannot start the copy thread");
    c->t.started = 1;
    return DP_OK;
}
