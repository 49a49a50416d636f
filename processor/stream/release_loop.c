/* release_loop.c — the release role's consume loop (docs/kafka.md §10):
 * what a release instance does with each statistics record of
 * `<prefix>.stats`, in log order.
 *
 * Each record is decoded and authenticated (dp_stats_record_decode: MAC
 * or seal, the shard count against the updates topic's partition count)
 * and added to its stream's merger; each step every shard's statistics
 * are in is released from the merged statistics (dp_synth_release_stats)
 * in one transaction with the budget event, the stream's state (release
 * half + the merger's pending steps: role_state.c) and the stats offsets.
 * A record that completes no step commits nothing of its own: it rides
 * with the stream's next release — until then its offset holds the
 * committed offset back (the stream's `pending`, as an accepted update
 * does), so a restart reads it again, and the next release's state holds
 * it.  A record that fails the check, of an unknown or unsharded stream,
 * from an unknown shard or repeating a step stops the instance naming
 * shard and step (a privacy refusal: exit 5) — never a partial release.
 *
 * Owns: the release streams' creation, skip_below and pending, and their
 * partitions' position.  Calls: stats_record (decode, merger), synth
 * (release), route_table (a new stream's synthesizer), role_state (a new
 * merger), snapshot_publish (the release and the state), committer
 * (transactions), processor_state (the tables, the refusal). */
#include "stream/release_loop.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/dp_error.h"
#include "stream/committer.h"
#include "stream/log.h"
#include "stream/role_state.h"
#include "stream/route_table.h"
#include "stream/snapshot_publish.h"

/* Release s's step `step` (complete in its merger); the record at `offset` completed it. */
static int release_step(proc *p, ps_stream *s, uint64_t step, int64_t offset)
{
    int rc = ps_txn_begin(p);
    if (rc != DP_OK)
        return rc;
    dp_release_sink sink = ps_release_begin(p, s);
    p->closing_step = step;
    char err[512];
    err[0] = '\0';
    rc = dp_stats_merger_take(&s->merger, step, &p->merged);
    if (rc == DP_OK)
        rc = dp_synth_release_stats(s->synth, &p->merged, &sink, err, sizeof err);
    if (rc == DP_OK) {
        s->skip_below = offset + 1;   /* every record up to here is in the merger's state or released */
        s->pending = NO_OFFSET;
        rc = ps_write_snapshot(p, s);
    }
    ps_release_end(p);
    if (rc != DP_OK) {
        dp_log_event(DP_LOG_ERROR, "step_release_failed", s->id, s->id_len, step, "releasing step %" PRIu64
                     " of sharded stream '%s' failed: %s", step, s->id, err[0] ? err : dp_status_str(rc));
        if (rc == DP_ESTATE || rc == DP_EHORIZON)
            ps_set_refused(p, "a sharded stream's release was refused: %s", err[0] ? err : dp_status_str(rc));
        ps_txn_abort(p);
        return rc;
    }
    if ((rc = ps_txn_commit(p, 0)) != DP_OK)
        return rc;
    p->n_steps++;
    dp_log_event(DP_LOG_INFO, "step_released", s->id, s->id_len, step,
                 "released step %" PRIu64 " of sharded stream '%s' from %" PRIu32 " shards", step, s->id,
                 s->merger.shards);
    return DP_OK;
}

/* The release stream of a record of stream id[0..len) read from stats
 * partition `part`: the table's, or a new one; NULL after a refusal. */
static ps_stream *stream_of(proc *p, const char *id, size_t len, int32_t part)
{
    dp_bytes_map_slot *slot = dp_bytes_map_find(&p->streams, id, len);
    if (slot && slot->value)
        return slot->value;
    const dp_stream_route *route = dp_stream_config_route(p->cfg, id, len);
    char err[512];
    if (!route || !route->sharded) {
        snprintf(err, sizeof err, "'%.*s' (stats partition %" PRId32 ")", (int)(len < 200 ? len : 200), id, part);
        ps_set_refused(p, "a statistics record names stream %s, which no sharded route of this configuration "
                       "serves; refusing it (docs/kafka.md §10)", err);
        return NULL;
    }
    ps_stream *s = ps_stream_new(p, id, len, route, part);
    if (!s || ps_stream_release_init(p, s) != DP_OK) {
        ps_stream_free(s);
        ps_set_fatal(p, "%s", "out of memory");
        return NULL;
    }
    int rc = dp_route_open(route, p->o->noise_key, s->id, s->id_len, &s->synth, &s->gate, err, sizeof err);
    if (rc != DP_OK || ps_stream_put(p, s) != DP_OK) {
        if (rc != DP_OK)
            ps_stream_free(s);
        ps_set_fatal(p, "cannot create a synthesizer: %s", rc != DP_OK && err[0] ? err : dp_status_str(rc));
        return NULL;
    }
    return s;
}

/* One statistics record m (its partition assigned and marked consumed). */
static int handle_stats(proc *p, const rd_kafka_message_t *m)
{
    dp_stats st;
    dp_stats_init(&st, 0);
    dp_stats_record r;
    char err[512], where[96];
    snprintf(where, sizeof where, "%s[%" PRId32 "] offset %" PRId64, p->cfg->topic_updates, m->partition, m->offset);
    int rc = dp_stats_record_decode(m->payload, m->len, (uint32_t)p->shard_count, p->o->state_key, p->o->noise_key,
                                    &r, &st, err, sizeof err);
    if (rc == DP_OK && (!m->key || m->key_len != r.stream_id_len || memcmp(m->key, r.stream_id, m->key_len) != 0))
        rc = dp_err(err, sizeof err, DP_ECORRUPT, "stream '%.*s' step %" PRIu64 " shard %" PRIu32 ": the record's "
                    "key is not its stream id", (int)(r.stream_id_len < 200 ? r.stream_id_len : 200), r.stream_id,
                    r.step, r.shard);
    ps_stream *s = NULL;
    if (rc == DP_OK && (s = stream_of(p, r.stream_id, r.stream_id_len, m->partition)) && s->partition != m->partition)
        rc = dp_err(err, sizeof err, DP_ECORRUPT, "stream '%s' step %" PRIu64 " shard %" PRIu32 ": its records "
                    "are in stats partition %" PRId32 ", this one in %" PRId32, s->id, r.step, r.shard, s->partition,
                    m->partition);
    if (rc == DP_OK && s && m->offset >= s->skip_below)
        rc = dp_stats_merger_add(&s->merger, &r, &st, err, sizeof err);
    dp_stats_free(&st);
    if (rc == DP_ENOMEM || (rc == DP_OK && (!s || m->offset < s->skip_below)))
        return rc;   /* out of memory, refused in stream_of, or in the restored state already */
    if (rc != DP_OK) {
        char msg[700];
        snprintf(msg, sizeof msg, "%s: %s", where, err);   /* err names the shard and the step */
        ps_set_refused(p, "statistics record refused (%s); stopping: never a release from altered or partial "
                       "statistics", msg);
        return rc;
    }
    int released = 0;
    uint64_t next;
    while (rc == DP_OK && !p->fatal && dp_stats_merger_complete(&s->merger, next = dp_synth_release_next_step(s->synth))) {
        rc = release_step(p, s, next, m->offset);
        released = 1;
    }
    if (rc == DP_OK && !released && s->pending == NO_OFFSET)
        s->pending = m->offset;   /* rides with the stream's next release (header comment) */
    return rc;
}

int ps_release_handle_batch(proc *p, size_t n)
{
    int rc = DP_OK;
    for (size_t i = 0; i < n && rc == DP_OK && !p->fatal; i++) {
        rd_kafka_message_t *m = p->batch[i];
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                dp_log(DP_LOG_WARN, "consumer: %s", rd_kafka_message_errstr(m));
                if (m->err == RD_KAFKA_RESP_ERR__FATAL)
                    ps_set_fatal(p, "fatal consumer error: %s", rd_kafka_message_errstr(m));
            }
            continue;
        }
        ps_partition *pp = ps_part_get(p, m->partition);
        if (!pp)
            return DP_ENOMEM;
        if (!pp->assigned)
            continue;   /* stale message of a revoked partition */
        p->n_msgs++;
        pp->position = m->offset + 1;
        ps_txn_consumed(p, pp);
        rc = handle_stats(p, m);
    }
    return rc;
}
