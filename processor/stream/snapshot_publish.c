/* snapshot_publish.c — what a step close writes into its transaction:
 * the release (record chunks of at most --chunk-records records, then the
 * manifest with the chunk count and BLAKE2b checksum) and the budget event,
 * through the synthesizer's release sink, and the stream's snapshot:
 * incremental (state_cas.h), in records of at most --snapshot-chunk-bytes
 * of state (state_record.h: keys; sealed when a state key is set), all in
 * the state topic's partition of the stream's updates partition
 * (state_layout.h: a restore reads only its own partitions).
 *
 * Owns: closing, closing_step, chunk_index, chunk, cksum (the release
 * being written), its encoder scratch enc, snap_state, and each stream's
 * cas_digests and index_chunks.  Calls: the codec, state_record,
 * committer (ps_produce), role_state (the state of a stream of any kind,
 * docs/kafka.md §10). */
#include "stream/snapshot_publish.h"

#include <sodium.h>

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
#include "stream/role_state.h"
#include "stream/state_cas.h"
#include "stream/state_record.h"

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
        rc = ps_produce(p, p->producer, p->cfg->topic_synthetic, RD_KAFKA_PARTITION_UA,
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
    rc = ps_produce(p, p->producer, p->cfg->topic_synthetic, RD_KAFKA_PARTITION_UA,
                    dp_codec_type_name(DP_CODEC_RELEASE_MANIFEST), p->closing->id, p->closing->id_len, p->enc.data,
                    p->enc.len);
    if (rc == DP_OK && p->o->metrics)
        dp_metrics_stage_release(p->o->metrics, m, 0);
    return rc;
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
        dp_log_event(DP_LOG_INFO, "budget_exhausted", p->closing->id, p->closing->id_len, e->step,
                     "stream '%s' exhausted its budget at step %" PRIu64 " (spent %.6g of %.6g)", p->closing->id,
                     e->step, e->spent_total, e->budget_total);
    if (p->o->metrics)
        dp_metrics_stage_budget(p->o->metrics, e);   /* counted only if the transaction commits */
    return ps_produce(p, p->producer, p->cfg->topic_budget, RD_KAFKA_PARTITION_UA,
                   dp_codec_type_name(DP_CODEC_BUDGET_EVENT), p->closing->id, p->closing->id_len, p->enc.data,
                   p->enc.len);
}

typedef struct snapshot_emit {
    proc      *p;
    ps_stream *s;
    dp_buf     key;
    size_t     bytes;   /* keys + values produced (the debug line's count) */
} snapshot_emit;

/* Stop loudly on a message over message.max.bytes rather than abort and
 * retry the same transaction forever (only a tiny message.max.bytes, a
 * huge stream id or a huge manifest gets here). */
static int check_size(snapshot_emit *e, const char *what, size_t len)
{
    if (len <= e->p->max_message_bytes)
        return DP_OK;
    char msg[300];
    snprintf(msg, sizeof msg, "a snapshot %s of stream '%s' is %zu bytes, over message.max.bytes (%zu); "
             "use a smaller --snapshot-chunk-bytes", what, e->s->id, len, e->p->max_message_bytes);
    ps_set_fatal(e->p, "%s", msg);
    return DP_ERANGE;
}

/* One piece of the manifest record (state_record.h: keys). */
static int emit_snapshot_chunk(void *ctx, uint32_t index, uint32_t count, const dp_buf *enc)
{
    snapshot_emit *e = ctx;
    int rc = check_size(e, "manifest piece", enc->len);
    if (rc == DP_OK)
        rc = dp_state_snapshot_key(e->s->id, e->s->id_len, index, &e->key);
    if (rc != DP_OK)
        return rc;
    if (count > 1)
        dp_log(DP_LOG_DEBUG, "snapshot of stream '%s': manifest piece %" PRIu32 " of %" PRIu32 " (%zu bytes)",
               e->s->id, index, count, enc->len);
    e->bytes += e->key.len + enc->len;
    return ps_produce(e->p, e->p->producer, e->p->cfg->topic_state, e->s->partition,
                      dp_codec_type_name(DP_CODEC_SNAPSHOT), e->key.data, e->key.len, enc->data, enc->len);
}

/* A content chunk, or (val == NULL) a tombstone for one (state_cas.h). */
static int emit_content(void *ctx, const uint8_t *key, size_t key_len, const uint8_t *val, size_t val_len)
{
    snapshot_emit *e = ctx;
    int rc = val ? check_size(e, "chunk", val_len) : DP_OK;
    if (rc != DP_OK)
        return rc;
    e->bytes += key_len + val_len;
    return ps_produce(e->p, e->p->producer, e->p->cfg->topic_state, e->s->partition, DP_STATE_CHUNK_TYPE, key,
                      key_len, val, val_len);
}

/* Tombstones for the index keys the previous snapshot used beyond this
 * one's count (its manifest was longer, or it was a format-1 snapshot in
 * more pieces), so compaction drops them. */
static int tombstone_index_keys(snapshot_emit *e, uint32_t from, uint32_t to)
{
    int rc = DP_OK;
    for (uint32_t i = from > 1 ? from : 1; rc == DP_OK && i < to; i++)
        if ((rc = dp_state_snapshot_key(e->s->id, e->s->id_len, i, &e->key)) == DP_OK)
            rc = ps_produce(e->p, e->p->producer, e->p->cfg->topic_state, e->s->partition,
                            dp_codec_type_name(DP_CODEC_SNAPSHOT), e->key.data, e->key.len, NULL, 0);
    return rc;
}

typedef struct manifest_count {
    snapshot_emit *e;
    uint32_t       count;
} manifest_count;

static int emit_manifest_piece(void *ctx, uint32_t index, uint32_t count, const dp_buf *enc)
{
    manifest_count *mc = ctx;
    mc->count = count;
    return emit_snapshot_chunk(mc->e, index, count, enc);
}

/* The stream's snapshot in format 2 (state_cas.h): the chunks that changed
 * since its last committed snapshot, the manifest (chunk 0 and, when it is
 * long, pieces under index keys) and tombstones for what the manifest no
 * longer names — all in the open transaction. */
int ps_write_snapshot(proc *p, ps_stream *s)
{
    dp_buf *st = &p->snap_state, manifest, digests;
    dp_buf_clear(st);
    dp_buf_init(&manifest);
    dp_buf_init(&digests);
    char err[256];
    err[0] = '\0';
    snapshot_emit e = {.p = p, .s = s};
    dp_buf_init(&e.key);
    size_t cb = p->o->snapshot_chunk_bytes ? p->o->snapshot_chunk_bytes : DP_PROCESSOR_DEFAULT_SNAPSHOT_CHUNK_BYTES;
    size_t topic_len = strlen(p->cfg->topic_updates), written = 0, n_written = 0;
    int rc = ps_stream_state_save(p, s, st);
    if (rc == DP_OK) {
        dp_cas_stream cs = {.stream_id = s->id, .stream_id_len = s->id_len, .updates_topic = p->cfg->topic_updates,
                            .updates_topic_len = topic_len, .partition = s->partition};
        rc = dp_cas_write(&cs, st->data, st->len, cb, p->o->state_key, p->o->noise_key, s->cas_digests.data,
                          s->cas_digests.len / DP_CAS_DIGEST_BYTES, &manifest, &digests, emit_content, &e, &n_written, &written,
                          err, sizeof err);
    }
    manifest_count mc = {.e = &e, .count = 0};
    if (rc == DP_OK) {
        dp_state_record r = {.kind = DP_STATE_SNAPSHOT,
                             .updates_topic = p->cfg->topic_updates,
                             .updates_topic_len = topic_len,
                             .partition = s->partition,
                             .stream_id = s->id,
                             .stream_id_len = s->id_len,
                             .skip_below = s->skip_below,
                             .open_step = s->kind == PS_STREAM_RELEASE ? dp_synth_release_next_step(s->synth)
                                                                       : dp_synth_open_step(s->synth),
                             .synthesizer = s->route->synthesizer,
                             .state = manifest.data,
                             .state_len = manifest.len,
                             .format = DP_CODEC_SNAPSHOT_VERSION_CAS};
        rc = dp_state_encode_snapshot_chunks(p->codec, &r, p->o->state_key, p->o->noise_key, cb, &p->enc,
                                             emit_manifest_piece, &mc, err, sizeof err);
    }
    if (rc == DP_OK)
        rc = dp_cas_tombstones(s->id, s->id_len, s->cas_digests.data, s->cas_digests.len / DP_CAS_DIGEST_BYTES,
                               digests.data, digests.len / DP_CAS_DIGEST_BYTES, emit_content, &e);
    if (rc == DP_OK)
        rc = tombstone_index_keys(&e, mc.count, s->index_chunks);
    if (rc != DP_OK && err[0])
        dp_log(DP_LOG_ERROR, "cannot encode the snapshot of stream '%s': %s", s->id, err);
    if (rc == DP_OK) {
        /* what this transaction leaves behind if it commits; if it aborts,
         * the rewind restores the stream and both are read back */
        dp_buf tmp = s->cas_digests;
        s->cas_digests = digests;
        digests = tmp;
        s->index_chunks = mc.count;
        dp_log(DP_LOG_DEBUG, "snapshot of stream '%s': %zu-byte state in %zu chunks, %zu new (%zu bytes), %zu "
               "bytes written in all", s->id, st->len, s->cas_digests.len / DP_CAS_DIGEST_BYTES, n_written, written,
               e.bytes);
    }
    if (st->data)
        sodium_memzero(st->data, st->len);   /* what this close wrote; the rest was wiped by earlier closes */
    dp_buf_clear(st);
    dp_buf_free(&manifest);
    dp_buf_free(&digests);
    dp_buf_free(&e.key);
    return rc;
}

dp_release_sink ps_release_begin(proc *p, ps_stream *s)
{
    p->closing = s;
    p->closing_step = dp_synth_open_step(s->synth);
    p->chunk_index = 0;
    p->chunk.n = p->chunk.rows_n = p->chunk.pts_n = 0;
    dp_codec_checksum_init(&p->cksum);
    dp_release_sink sink = {.ctx = p, .record = sink_record, .manifest = sink_manifest, .budget = sink_budget};
    return sink;
}

void ps_release_end(proc *p) { p->closing = NULL; }

void ps_release_free(proc *p)
{
    free(p->chunk.recs);
    free(p->chunk.row_at);
    free(p->chunk.pt_at);
    free(p->chunk.rows);
    free(p->chunk.pts);
    p->chunk = (ps_chunk){.n = 0};
    dp_buf_free(&p->enc);
    dp_buf_free(&p->snap_state);   /* wiped after each use */
}
