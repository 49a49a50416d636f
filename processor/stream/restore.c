/* restore.c — rebuild the streams of newly assigned partitions from the
 * compacted state topic: for each assigned partition, its own state
 * partition (state_layout.h; read by restore_read.c, read_committed, a
 * predecessor's open transaction waited for and never read); assemble
 * chunked snapshots; restore each stream's synthesizer and its
 * skip_below; and say where each partition resumes (its progress record's
 * offset).
 *
 * Owns: nothing after it returns but what it creates — the restored
 * streams (put in the table by processor_state) — and each assigned
 * partition's resume and dlq_below.  Calls: processor_state (assign the
 * partitions or take kept ones back, put the streams, a refusal),
 * restore_read (the records),
 * state_record (decode, chunk keys), role_state (restore a stream of any
 * kind: docs/kafka.md §10). */
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
#include "stream/restore_read.h"
#include "stream/role_state.h"
#include "stream/state_record.h"

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

/* Streams are pinned to partitions by key: partition = hash(stream id)
 * mod count.  Under another count a stream's updates land in another
 * partition, owned by an instance whose state does not know the stream: it
 * would start it afresh and release its steps a second time with the same
 * noise key, while the old state sat unused in the old partition.  Stop
 * before consuming anything. */
static int refuse_progress_count(proc *p, const dp_state_record *r)
{
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
             p->cfg->topic_updates, p->updates_partitions, p->cfg->topic_state, r->partition_count,
             r->partition_count);
    ps_set_refused(p, "%s", msg);
    return DP_EINVAL;
}

/* One decoded snapshot: its stream, restored and added to p->streams
 * (*digests, the snapshot's content chunks, is swapped into it). */
static int restore_stream(proc *p, const dp_state_record *r, dp_buf *digests)
{
    const dp_stream_route *route = dp_stream_config_route(p->cfg, r->stream_id, r->stream_id_len);
    if (!route || strcmp(route->synthesizer, r->synthesizer) != 0) {
        ps_set_refused(p, "stream '%s' has a snapshot but the configuration no longer routes it to the same "
                       "synthesizer; refusing to start it afresh (that would spend its budget twice)", r->stream_id);
        return DP_EINVAL;
    }
    ps_stream *s = ps_stream_new(p, r->stream_id, r->stream_id_len, route, r->partition);
    if (!s)
        return DP_ENOMEM;
    char err[512];
    int rc = ps_stream_state_load(p, s, r->state, r->state_len, err, sizeof err);
    if (rc != DP_OK) {
        ps_set_refused(p, "cannot restore a stream's synthesizer: %s", err[0] ? err : dp_status_str(rc));
        ps_stream_free(s);
        return rc;
    }
    dp_gate_init(&s->gate, s->synth, &route->gate);
    s->step_opened_ms = ps_now_ms();   /* the step timer restarts with the instance */
    s->skip_below = r->skip_below;
    /* what its snapshot left on the topic: the next one builds on it */
    dp_buf tmp = s->cas_digests;
    s->cas_digests = *digests;
    *digests = tmp;
    s->index_chunks = r->chunk_count;
    if (ps_stream_put(p, s) != DP_OK)
        return DP_ENOMEM;
    if (p->o->metrics)
        dp_metrics_restored_stream(p->o->metrics, s->id, s->id_len, route->synthesizer, dp_synth_ledger(s->synth),
                                   dp_synth_open_step(s->synth) - 1, dp_synth_exhausted(s->synth), p->cfg->delta);
    dp_log_event(DP_LOG_DEBUG, "stream_restored", s->id, s->id_len, dp_synth_open_step(s->synth),
                 "stream '%s' (%s) restored in partition %" PRId32 ": step %" PRIu64 " open, input below offset %"
                 PRId64 " already in its snapshot", s->id, route->synthesizer, s->partition,
                 dp_synth_open_step(s->synth), s->skip_below);
    return DP_OK;
}

/* What a restore carries from one partition to the next. */
typedef struct restore_run {
    dp_bytes_map latest;     /* the partition being restored: newest value per key */
    dp_buf       scratch;    /* an opened state */
    dp_buf       digests;    /* a format-2 snapshot's chunk digests */
    int64_t     *resume;     /* per element of the list: its progress record's offset, or NO_OFFSET */
    uint64_t     restored;   /* streams */
} restore_run;

/* Every record of one partition's state, read into run->latest: progress
 * records say where element idx (updates partition `part`) resumes,
 * snapshots restore their streams. */
static int restore_records(proc *p, restore_run *run, int idx, int32_t part)
{
    size_t topic_len = strlen(p->cfg->topic_updates);
    dp_bytes_map *latest = &run->latest;
    for (size_t k = 0; k < latest->cap; k++) {
        restore_val *v = latest->slots[k].key ? latest->slots[k].value : NULL;
        if (!v || dp_state_key_is_chunk(latest->slots[k].key, latest->slots[k].key_len))
            continue;   /* chunks i > 0 are gathered through their chunk 0 */
        dp_state_record r;
        char err[512];
        int rc = restore_decode(p, latest, latest->slots[k].key, latest->slots[k].key_len, v, &r, &run->scratch,
                                &run->digests, err, sizeof err);
        if (rc != DP_OK) {
            /* unauthentic or damaged state is never used */
            ps_set_refused(p, "state topic holds a record that cannot be restored: %s", err);
            return rc;
        }
        if (r.updates_topic_len != topic_len || memcmp(r.updates_topic, p->cfg->topic_updates, topic_len) != 0 ||
            r.partition != part)
            continue;   /* (restore_read refuses another partition's records; a record that cannot say is refused above) */
        if (r.kind == DP_STATE_PROGRESS && r.partition_count > 0 && r.partition_count != p->updates_partitions)
            return refuse_progress_count(p, &r);
        if (r.kind == DP_STATE_PROGRESS) {
            p->parts[r.partition].dlq_below = r.position;
            if (run->resume[idx] == NO_OFFSET || r.resume < run->resume[idx])
                run->resume[idx] = r.resume;
        } else if ((rc = restore_stream(p, &r, &run->digests)) != DP_OK) {
            return rc;
        } else {
            run->restored++;
        }
    }
    return DP_OK;
}

/* What marks an element kept in memory (keep_or_restore) in run->resume. */
#define KEPT INT64_MIN

/* A partition an eager rebalance revoked right after a commit and gives
 * back (ps_partition.kept): its streams are still in memory as that commit
 * left them, unless another instance wrote its state partition since
 * (docs/kafka.md §2).  What lies past kept_end, the high watermark seen
 * after that commit, is read (read_committed): nothing but transaction
 * markers (that commit's own, written after EndTxn returned) means nobody
 * did, and the partition resumes where its handling stopped with nothing
 * restored.  Otherwise its streams are dropped and it is restored like any
 * other (*restore = 1). */
static int keep_or_restore(proc *p, restore_reader *reader, restore_run *run, rd_kafka_topic_partition_list_t *l,
                           int idx, int64_t hi, int *restore)
{
    int32_t part = l->elems[idx].partition;
    const ps_partition *pp = &p->parts[part];
    uint64_t n = hi < pp->kept_end;   /* fewer than then: not the topic it was (fail closed) */
    int rc = n ? DP_OK : restore_read_partition(p, reader, part, pp->kept_end, hi, &run->latest, &n);
    restore_latest_clear(&run->latest);
    if (rc == DP_OK && p->fatal)
        rc = DP_EINVAL;
    *restore = n > 0;
    if (rc != DP_OK || n > 0) {
        ps_part_assign(p, part);   /* no longer kept ... */
        ps_part_unassign(p, part);
        int drc = ps_drop_unassigned_streams(p);   /* ... its streams gone */
        ps_part_assign(p, part);
        if (rc == DP_OK && n > 0)
            dp_log_partition_event(DP_LOG_INFO, "partition_changed", part, "partition %s[%" PRId32 "]: %" PRIu64
                                   " state record(s) written since its revocation (another instance held it): "
                                   "restoring it", p->cfg->topic_updates, part, n);
        return rc != DP_OK ? rc : drc;
    }
    ps_part_take_back(p, part);
    l->elems[idx].offset = pp->position != NO_OFFSET ? pp->position : pp->resume;
    run->resume[idx] = KEPT;
    dp_log_partition_event(DP_LOG_INFO, "partition_kept", part, "partition %s[%" PRId32 "]: kept in memory across "
                           "the rebalance (its state unchanged since its revocation), resuming at offset %" PRId64,
                           p->cfg->topic_updates, part, l->elems[idx].offset);
    return DP_OK;
}

/* Each element's offset: where its progress record says, or (nothing of
 * it ever committed) the beginning — restored streams still skip what
 * their snapshots cover.  Kept elements have theirs already. */
static void set_resume(proc *p, rd_kafka_topic_partition_list_t *l, const int64_t *resume)
{
    for (int i = 0; i < l->cnt; i++) {
        if (resume[i] == KEPT)
            continue;
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
}

/* Restore the streams of the partitions in `l` (marked assigned) and set
 * each element's offset to where consumption must resume; those kept in
 * memory since their revocation are only checked (keep_or_restore). */
static int restore_partitions(proc *p, rd_kafka_topic_partition_list_t *l)
{
    int n_kept = 0;
    for (int i = 0; i < l->cnt; i++) {
        ps_partition *pp = ps_part_get(p, l->elems[i].partition);
        if (!pp)
            return DP_ENOMEM;
        if (pp->kept)
            n_kept++;
        else
            ps_part_assign(p, l->elems[i].partition);
        l->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    dp_log_event(DP_LOG_INFO, "restore_start", NULL, 0, 0, "restoring %d partition(s) of %s from %s (%d more "
                 "kept in memory since their revocation, unless their state changed)", l->cnt - n_kept,
                 p->cfg->topic_updates, p->cfg->topic_state, n_kept);
    restore_run run = {.restored = 0};
    dp_bytes_map_init(&run.latest);
    dp_buf_init(&run.scratch);
    dp_buf_init(&run.digests);
    int rc = DP_OK;
    run.resume = calloc((size_t)l->cnt + 1, sizeof *run.resume);
    int64_t *lo = calloc((size_t)l->cnt + 1, sizeof *lo), *hi = calloc((size_t)l->cnt + 1, sizeof *hi);
    if (!run.resume || !lo || !hi)
        rc = DP_ENOMEM;
    for (int i = 0; i < l->cnt && run.resume; i++)
        run.resume[i] = NO_OFFSET;
    uint64_t n_read = 0;
    int n_read_parts = 0;
    restore_reader reader = {.rk = NULL};
    if (rc == DP_OK)
        rc = restore_reader_open(p, &reader);
    if (rc == DP_OK)
        rc = restore_read_watermarks(p, &reader, l, lo, hi);
    if (rc == DP_OK && p->o->debug_restore_delay_ms > 0) {
        /* the testing aid: a restore under way (readers connected, nothing
         * read yet) for long enough to be seen (/readyz) or killed */
        struct timespec ts = {.tv_sec = p->o->debug_restore_delay_ms / 1000,
                              .tv_nsec = (long)(p->o->debug_restore_delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    /* One partition at a time: its own state partition is read, its
     * streams restored and the records dropped before the next one's are
     * read, so a restore holds one partition's raw state beside what it has
     * restored (bench/RESULTS.md: peak RSS), and reads each byte of the
     * restored partitions' state once (an empty one not at all). */
    for (int pi = 0; rc == DP_OK && pi < l->cnt; pi++) {
        int restore = 1;
        if (p->parts[l->elems[pi].partition].kept &&
            ((rc = keep_or_restore(p, &reader, &run, l, pi, hi[pi], &restore)) != DP_OK || !restore))
            continue;
        uint64_t before = n_read;
        rc = restore_read_partition(p, &reader, l->elems[pi].partition, lo[pi], hi[pi], &run.latest, &n_read);
        n_read_parts += n_read > before;
        if (rc == DP_OK && p->fatal)
            rc = DP_EINVAL;   /* a refused record (restore_read says which) */
        if (rc == DP_OK)
            rc = restore_records(p, &run, pi, l->elems[pi].partition);
        restore_latest_clear(&run.latest);
    }
    restore_reader_close(&reader);
    if (rc == DP_OK) {
        set_resume(p, l, run.resume);
        n_kept = 0;
        for (int i = 0; i < l->cnt; i++)
            n_kept += run.resume[i] == KEPT;
        dp_log_event(DP_LOG_INFO, "restore_done", NULL, 0, 0, "restored %" PRIu64 " stream(s) from %s (%" PRIu64
                     " records read from %d of %d state partitions restored, the others empty; %d partition(s) "
                     "kept in memory)", run.restored, p->cfg->topic_state, n_read, n_read_parts, l->cnt - n_kept,
                     n_kept);
    }
    free(run.resume);
    free(lo);
    free(hi);
    if (run.scratch.data)
        sodium_memzero(run.scratch.data, run.scratch.cap);
    dp_buf_free(&run.scratch);
    dp_buf_free(&run.digests);
    restore_latest_clear(&run.latest);
    dp_bytes_map_free(&run.latest);
    return rc;
}

/* The restore, timed for the metrics (which answer /readyz with 503 while
 * it runs). */
int ps_restore_partitions(proc *p, rd_kafka_topic_partition_list_t *l)
{
    dp_metrics *m = p->o->metrics;
    if (m)
        dp_metrics_restore_begin(m, ps_now_ms());
    int rc = restore_partitions(p, l);
    if (m)
        dp_metrics_restore_end(m, ps_now_ms());
    return rc;
}
