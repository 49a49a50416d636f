/* role_state.c — what each kind of stream keeps and publishes under the
 * two roles (docs/kafka.md §10): the state its snapshots carry and the
 * restore of it, and a shard's statistics record.
 *
 *   whole stream (role all; an unsharded route under the ingest role):
 *       the combined snapshot (dp_synth_snapshot), as always;
 *   shard (ingest role): its ingest-role snapshot ("SYI1"), placed by the
 *       state topic's partition — the shard's own, co-partitioned with the
 *       updates topic (state_layout.h) — so shards never collide;
 *   release stream (release role): blob(release-role snapshot "SYR1") ‖
 *       blob(merger state "DPM1") in `<prefix>.release-state`, co-partitioned
 *       with `<prefix>.stats`.
 *
 * Owns: that layout and the statistics record's placement on the stats
 * topic (key: the stream id, so every shard of a stream lands in one stats
 * partition and one release instance sees them all).  Calls: synth
 * (snapshots, restores), stats_record (encode, merger save/load), committer
 * (produce), processor_state (the updates topic's partition count). */
#include "stream/role_state.h"

#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "core/dp_error.h"
#include "stream/committer.h"

int ps_stream_state_save(proc *p, const ps_stream *s, dp_buf *out)
{
    (void)p;
    if (s->kind == PS_STREAM_WHOLE)
        return dp_synth_snapshot(s->synth, out);
    if (s->kind == PS_STREAM_SHARD)
        return dp_synth_snapshot_role(s->synth, DP_SYNTH_ROLE_INGEST, out);
    dp_buf half;
    dp_buf_init(&half);
    int rc = dp_synth_snapshot_role(s->synth, DP_SYNTH_ROLE_RELEASE, &half);
    if (rc == DP_OK) {
        dp_buf_put_blob(out, half.data, half.len);
        half.len = 0;
        rc = dp_stats_merger_save(&s->merger, &half);
    }
    if (rc == DP_OK) {
        dp_buf_put_blob(out, half.data, half.len);
        rc = dp_buf_status(out);
    }
    dp_buf_free(&half);
    return rc;
}

/* A release stream's state: its release half, then its merger checked
 * against that half's last released step. */
static int load_release(proc *p, ps_stream *s, const dp_synth_env *env, const uint8_t *data, size_t len,
                        char *err, size_t n)
{
    dp_reader r;
    dp_reader_init(&r, data, len);
    size_t half_len = 0, merger_len = 0;
    const uint8_t *half = dp_reader_blob(&r, &half_len), *merger = dp_reader_blob(&r, &merger_len);
    if (!half || !merger || dp_reader_finish(&r) != DP_OK)
        return dp_err(err, n, DP_ECORRUPT, "stream '%s': its release state is truncated or malformed", s->id);
    int rc = dp_synth_restore_role(&s->synth, DP_SYNTH_ROLE_RELEASE, s->route->synthesizer, s->route->config, env,
                                   half, half_len, err, n);
    if (rc == DP_OK)
        rc = dp_stats_merger_load(&s->merger, s->id, s->id_len, (uint32_t)p->shard_count,
                                  dp_synth_release_next_step(s->synth) - 1, merger, merger_len, err, n);
    return rc;
}

int ps_stream_state_load(proc *p, ps_stream *s, const uint8_t *data, size_t len, char *err, size_t n)
{
    dp_synth_env env = {.key = p->o->noise_key, .stream_id = s->id, .stream_id_len = s->id_len};
    err[0] = '\0';
    if (s->kind == PS_STREAM_WHOLE)
        return dp_synth_restore(&s->synth, s->route->synthesizer, s->route->config, &env, data, len, err, n);
    if (s->kind == PS_STREAM_SHARD)
        return dp_synth_restore_role(&s->synth, DP_SYNTH_ROLE_INGEST, s->route->synthesizer, s->route->config,
                                     &env, data, len, err, n);
    return load_release(p, s, &env, data, len, err, n);
}

int ps_stream_release_init(proc *p, ps_stream *s)
{
    return dp_stats_merger_init(&s->merger, s->id, s->id_len, (uint32_t)p->shard_count, 0);
}

int ps_shard_stats_publish(proc *p, const ps_stream *s, const dp_stats *st, char *err, size_t n)
{
    int32_t count = ps_input_partition_count(p);
    if (count <= 0 || s->partition >= count)
        return dp_err(err, n, DP_EIO, "stream '%s': the partition count of %s is unknown; its shard %" PRId32
                      " cannot say how many shards there are", s->id, p->cfg->topic_updates, s->partition);
    dp_stats_record r = {.updates_topic = p->cfg->topic_updates,
                         .updates_topic_len = strlen(p->cfg->topic_updates),
                         .stream_id = s->id,
                         .stream_id_len = s->id_len,
                         .step = st->step,
                         .shard = (uint32_t)s->partition,
                         .shard_count = (uint32_t)count};
    dp_buf enc;
    dp_buf_init(&enc);
    int rc = dp_stats_record_encode(&r, st, p->o->state_key, p->o->noise_key, &enc, err, n);
    if (rc == DP_OK)
        rc = ps_produce(p, p->producer, p->topic_stats, RD_KAFKA_PARTITION_UA, "Stats", s->id, s->id_len,
                        enc.data, enc.len);
    if (enc.data)
        sodium_memzero(enc.data, enc.cap);   /* exact statistics (sealed or not): leave no copy */
    dp_buf_free(&enc);
    return rc;
}
