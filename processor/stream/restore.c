/* restore.c — rebuild the streams of newly assigned partitions from the
 * compacted state topic: read it (read_committed) to the high watermark
 * seen at the start, so a predecessor's open transaction is waited for and
 * never read; keep the newest record per key of the partitions being
 * restored; assemble chunked snapshots; restore each stream's synthesizer
 * and its skip_below; and say where each partition resumes (its progress
 * record's offset).
 *
 * Owns: nothing after it returns but what it creates — the restored
 * streams, and each assigned partition's resume and dlq_below.  Calls:
 * state_record (decode, chunk keys), synth (restore), librdkafka (a
 * separate reader and a watermark client). */
#include "stream/restore.h"

#include <sodium.h>
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
#include "stream/kafka_util.h"
#include "stream/state_record.h"

/* The newest value under a key: a dp_state_piece whose bytes it owns. */
typedef dp_state_piece restore_val;

static void free_restore_val(void *v, void *ctx) { (void)ctx; if (v) { free((void *)((restore_val *)v)->data); free(v); } }
static int keep_none(void *v, void *ctx) { (void)v; (void)ctx; return 0; }

/* One retry of a transient restore error: wait a little unless the
 * deadline passed or a stop was requested. */
static int restore_wait(proc *p, int64_t deadline, const char *what, rd_kafka_resp_err_t why)
{
    if (*p->o->stop)
        return DP_ECANCELED;
    if (ps_now_ms() >= deadline) {
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
 * that ps_restore_partitions refuses them as before. */
static int state_record_wanted(proc *p, const rd_kafka_message_t *m, const rd_kafka_topic_partition_list_t *l)
{
    const char *topic;
    size_t topic_len;
    int32_t part;
    if (dp_state_owner(p->codec, m->payload, m->len, &topic, &topic_len, &part) != DP_OK)
        return 1;
    if (topic_len != strlen(p->cfg->topic_updates) || memcmp(topic, p->cfg->topic_updates, topic_len) != 0) {
        /* A stream this configuration routes, with state built from another
         * updates topic (topics.updates or the prefix changed): starting it
         * afresh would release its steps again with the same noise over
         * whatever the new topic holds.  Refuse, as for a changed route. */
        size_t reserved = sizeof DP_STATE_RESERVED_KEY_PREFIX - 1;
        const char *key = m->key;
        if (key && !dp_state_key_is_chunk(key, m->key_len) &&
            !(m->key_len >= reserved && memcmp(key, DP_STATE_RESERVED_KEY_PREFIX, reserved) == 0) &&
            dp_stream_config_route(p->cfg, key, m->key_len)) {
            char msg[768];
            snprintf(msg, sizeof msg, "stream '%.*s' has state in %s built from updates topic '%.*s', but this "
                     "configuration reads '%s'; refusing to start it afresh (its steps would be released again with "
                     "the same noise): restore the topic name, or give the new input new stream ids or a new key",
                     (int)(m->key_len < 200 ? m->key_len : 200), key, p->cfg->topic_state,
                     (int)(topic_len < 200 ? topic_len : 200), topic, p->cfg->topic_updates);
            ps_set_fatal(p, "%s", msg);
            p->fatal_refused = 1;
        }
        return 0;
    }
    for (int i = 0; i < l->cnt; i++)
        if (l->elems[i].partition == part)
            return 1;
    /* Every partition's progress record (a few dozen bytes each): each says
     * how many partitions the updates topic had when it was committed, and
     * the check in restore_partitions compares them all with today's. */
    size_t pre = sizeof DP_STATE_PROGRESS_KEY_PREFIX - 1;
    return m->key && m->key_len >= pre && memcmp(m->key, DP_STATE_PROGRESS_KEY_PREFIX, pre) == 0;
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
        ps_set_fatal(p, "state reader: %s", err);
        return DP_EINVAL;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) {
        ps_set_fatal(p, "state reader: %s", err);
        return DP_EIO;
    }
    int rc = DP_OK;
    const struct rd_kafka_metadata *md = NULL;
    /* Right after the topic is created (or while a broker fails over) its
     * metadata and leaders are briefly missing: retry those errors until the
     * usual timeout rather than give up the assignment. */
    int64_t deadline = ps_now_ms() + KAFKA_TIMEOUT_MS;
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
    /* The updates topic's partition count now, for the check against the
     * counts the state was committed under (restore_partitions); this
     * reader, not the group's consumer, asks: we are inside its rebalance
     * callback. */
    p->updates_partitions = 0;
    for (;;) {
        const struct rd_kafka_metadata *umd = NULL;
        rd_kafka_topic_t *ut = rd_kafka_topic_new(rk, p->cfg->topic_updates, NULL);
        rd_kafka_resp_err_t ue = rd_kafka_metadata(rk, 0, ut, &umd, KAFKA_TIMEOUT_MS);
        rd_kafka_topic_destroy(ut);
        rd_kafka_resp_err_t why = ue ? ue : umd->topic_cnt != 1 ? RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC : umd->topics[0].err;
        if (!why)
            p->updates_partitions = umd->topics[0].partition_cnt;
        if (umd)
            rd_kafka_metadata_destroy(umd);
        if (!why && p->updates_partitions > 0)
            break;
        if ((rc = restore_wait(p, deadline, "metadata of the updates topic for", why ? why
                                                                                    : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC)) != DP_OK)
            goto out;
    }
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
    int64_t started = ps_now_ms(), last_note = started;
    while (rc == DP_OK && n_done < np) {
        if (*p->o->stop) {
            rc = DP_ECANCELED;
            break;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        int64_t now = ps_now_ms();
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
                    uint8_t *bytes = v ? malloc(m->len ? m->len : 1) : NULL;
                    if (!bytes) {
                        free(v);
                        rc = DP_ENOMEM;
                    } else {
                        memcpy(bytes, m->payload, m->len);
                        *v = (restore_val){.data = bytes, .len = m->len};
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

/* dp_state_decode_newest's view of the newest-per-key table. */
static const dp_state_piece *latest_value(void *ctx, const void *key, size_t key_len)
{
    dp_bytes_map_slot *s = dp_bytes_map_find(ctx, key, key_len);
    return s ? s->value : NULL;
}

/* Decode the state record under `key`; a snapshot of several chunks is
 * assembled from the values under its chunk keys (state_record.h; stale
 * chunks of an older snapshot under those keys are ignored there). */
static int restore_decode(proc *p, dp_bytes_map *latest, const char *key, size_t key_len, const restore_val *v,
                          dp_state_record *r, dp_buf *scratch, dp_buf *digests, char *err, size_t errn)
{
    return dp_state_decode_newest(p->codec, key, key_len, v, latest_value, latest, latest->count, p->o->state_key,
                                  p->o->noise_key, r, scratch, digests, err, errn);
}

/* Restore the streams of the partitions in `l` (marked assigned) and set
 * each element's offset to where consumption must resume. */
static int restore_partitions(proc *p, rd_kafka_topic_partition_list_t *l)
{
    for (int i = 0; i < l->cnt; i++) {
        ps_partition *pp = ps_part_get(p, l->elems[i].partition);
        if (!pp)
            return DP_ENOMEM;
        *pp = (ps_partition){.assigned = 1, .position = NO_OFFSET, .resume = RD_KAFKA_OFFSET_BEGINNING};
        l->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    dp_log_event(DP_LOG_INFO, "restore_start", NULL, 0, 0, "restoring %d partition(s) of %s from %s", l->cnt,
                 p->cfg->topic_updates, p->cfg->topic_state);
    dp_bytes_map latest;
    dp_bytes_map_init(&latest);
    int rc = DP_OK;
    dp_buf scratch, digests;
    dp_buf_init(&scratch);
    dp_buf_init(&digests);
    size_t topic_len = strlen(p->cfg->topic_updates);
    int64_t *resume = calloc((size_t)l->cnt, sizeof *resume);
    if (!resume)
        rc = DP_ENOMEM;
    for (int i = 0; i < l->cnt && resume; i++)
        resume[i] = NO_OFFSET;
    uint64_t restored = 0;
    /* One partition at a time: its records are read, its streams restored
     * and the records dropped before the next partition's are read, so a
     * restore holds one partition's raw state beside what it has restored
     * (bench/RESULTS.md: peak RSS), at the cost of reading the state topic
     * once per partition. */
    for (int pi = 0; rc == DP_OK && pi < l->cnt; pi++) {
        rd_kafka_topic_partition_list_t *one = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(one, l->elems[pi].topic, l->elems[pi].partition);
        rc = read_state_topic(p, &latest, one);
        rd_kafka_topic_partition_list_destroy(one);
        if (rc == DP_OK && p->fatal)
            rc = DP_EINVAL;   /* a refused record (read_state_topic says which) */
        for (size_t k = 0; rc == DP_OK && k < latest.cap; k++) {
            restore_val *v = latest.slots[k].key ? latest.slots[k].value : NULL;
            if (!v || dp_state_key_is_chunk(latest.slots[k].key, latest.slots[k].key_len))
                continue;   /* chunks i > 0 are gathered through their chunk 0 */
            dp_state_record r;
            char err[512];
            rc = restore_decode(p, &latest, latest.slots[k].key, latest.slots[k].key_len, v, &r, &scratch, &digests,
                                err, sizeof err);
            if (rc != DP_OK) {
                ps_set_fatal(p, "state topic holds a record that cannot be restored: %s", err);
                p->fatal_refused = 1;   /* unauthentic or damaged state is never used */
                break;
            }
            if (r.updates_topic_len != topic_len || memcmp(r.updates_topic, p->cfg->topic_updates, topic_len) != 0)
                continue;
            if (r.kind == DP_STATE_PROGRESS && r.partition_count > 0 && r.partition_count != p->updates_partitions) {
                /* Streams are pinned to partitions by key: partition = hash(stream
                 * id) mod count.  Under another count a stream's updates land in
                 * another partition, owned by an instance whose state does not
                 * know the stream: it would start it afresh and release its steps
                 * a second time with the same noise key, while the old state sat
                 * unused in the old partition.  Stop before consuming anything. */
                char msg[1100];
                snprintf(msg, sizeof msg,
                         "the updates topic %s has %" PRId32 " partitions, but its state in %s was committed when it had "
                         "%" PRId32 ": every stream is pinned to the partition its id hashes to among %" PRId32 ", so "
                         "its updates would now land in partitions whose state does not know it, and its steps could "
                         "be released twice; stopping before consuming anything.  Kafka cannot take partitions away: "
                         "keep this deployment's state as it is and run the new partitioning as a new deployment — "
                         "another topics.prefix (new updates, output and state topics) with new stream ids or a new "
                         "noise key, as the same ids under the same key would reuse their noise; to leave room to "
                         "scale out, give the updates topic enough partitions from the start (topics.partitions)",
                         p->cfg->topic_updates, p->updates_partitions, p->cfg->topic_state, r.partition_count,
                         r.partition_count);
                ps_set_fatal(p, "%s", msg);
                p->fatal_refused = 1;
                rc = DP_EINVAL;
                break;
            }
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
                ps_set_fatal(p, "stream '%s' has a snapshot but the configuration no longer routes it to the same "
                             "synthesizer; refusing to start it afresh (that would spend its budget twice)",
                          r.stream_id);
                p->fatal_refused = 1;
                rc = DP_EINVAL;
                break;
            }
            ps_stream *s = ps_stream_new(p, r.stream_id, r.stream_id_len, route, r.partition);
            if (!s) {
                rc = DP_ENOMEM;
                break;
            }
            dp_synth_env env = {.key = p->o->noise_key, .stream_id = s->id, .stream_id_len = s->id_len};
            err[0] = '\0';
            rc = dp_synth_restore(&s->synth, route->synthesizer, route->config, &env, r.state, r.state_len, err,
                                  sizeof err);
            if (rc != DP_OK) {
                ps_set_fatal(p, "cannot restore a stream's synthesizer: %s", err[0] ? err : dp_status_str(rc));
                p->fatal_refused = 1;
                ps_stream_free(s);
                break;
            }
            dp_gate_init(&s->gate, s->synth, &route->gate);
            s->step_opened_ms = ps_now_ms();   /* the step timer restarts with the instance */
            s->skip_below = r.skip_below;
            /* what its snapshot left on the topic: the next one builds on it */
            dp_buf tmp = s->cas_digests;
            s->cas_digests = digests;
            digests = tmp;
            s->index_chunks = r.chunk_count;
            dp_bytes_map_slot *slot = dp_bytes_map_upsert(&p->streams, s->id, s->id_len);
            if (!slot) {
                ps_stream_free(s);
                rc = DP_ENOMEM;
                break;
            }
            ps_stream_free(slot->value);
            slot->value = s;
            restored++;
            if (p->o->metrics)
                dp_metrics_restored_stream(p->o->metrics, s->id, s->id_len, route->synthesizer, dp_synth_ledger(s->synth),
                                           dp_synth_open_step(s->synth) - 1, dp_synth_exhausted(s->synth), p->cfg->delta);
            dp_log_event(DP_LOG_DEBUG, "stream_restored", s->id, s->id_len, dp_synth_open_step(s->synth),
                         "stream '%s' (%s) restored in partition %" PRId32 ": step %" PRIu64 " open, input below offset %"
                         PRId64 " already in its snapshot", s->id, route->synthesizer, s->partition,
                         dp_synth_open_step(s->synth), s->skip_below);
        }
        dp_bytes_map_filter(&latest, keep_none, free_restore_val, NULL);
    }
    if (rc == DP_OK) {
        for (int i = 0; i < l->cnt; i++) {
            /* Without a progress record nothing of this partition was ever
             * committed: start at the beginning (restored streams still skip
             * what their snapshots cover). */
            l->elems[i].offset = resume[i] == NO_OFFSET ? RD_KAFKA_OFFSET_BEGINNING : resume[i];
            p->parts[l->elems[i].partition].resume = l->elems[i].offset;
            if (resume[i] == NO_OFFSET)
                dp_log_partition_event(DP_LOG_INFO, "partition_resume", l->elems[i].partition,
                                       "partition %s[%" PRId32 "]: nothing committed yet, starting at the beginning",
                                       p->cfg->topic_updates, l->elems[i].partition);
            else
                dp_log_partition_event(DP_LOG_INFO, "partition_resume", l->elems[i].partition,
                                       "partition %s[%" PRId32 "]: resuming at offset %" PRId64,
                                       p->cfg->topic_updates, l->elems[i].partition, resume[i]);
        }
        dp_log_event(DP_LOG_INFO, "restore_done", NULL, 0, 0, "restored %" PRIu64 " stream(s) from %s", restored,
                     p->cfg->topic_state);
    }
    free(resume);
    if (scratch.data)
        sodium_memzero(scratch.data, scratch.cap);
    dp_buf_free(&scratch);
    dp_buf_free(&digests);
    dp_bytes_map_filter(&latest, keep_none, free_restore_val, NULL);
    dp_bytes_map_free(&latest);
    return rc;
}

/* The restore, timed for the metrics (which answer /readyz with 503 while
 * it runs). */
int ps_restore_partitions(proc *p, rd_kafka_topic_partition_list_t *l)
{
    dp_metrics *m = p->o->metrics;
    if (m)
        dp_metrics_restore_begin(m, ps_now_ms());
    if (p->o->debug_restore_delay_ms > 0) {
        struct timespec ts = {.tv_sec = p->o->debug_restore_delay_ms / 1000,
                              .tv_nsec = (long)(p->o->debug_restore_delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    int rc = restore_partitions(p, l);
    if (m)
        dp_metrics_restore_end(m, ps_now_ms());
    return rc;
}
