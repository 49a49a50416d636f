/* state_record.c — see state_record.h. */
#include "stream/state_record.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"
#include "stream/seal.h"

#define MAGIC_PROGRESS 0x31505044u   /* "DPP1" little-endian */

/* The associated data of a sealed state: every public field of the
 * snapshot, length-prefixed (injective). */
static int snapshot_ad(const dp_codec_snapshot *s, dp_buf *ad)
{
    dp_buf_put_bytes(ad, "dpstream.snapshot.ad.v1", 23);
    dp_buf_put_u32(ad, s->schema_version);
    dp_buf_put_blob(ad, s->stream_id, s->stream_id_len);
    dp_buf_put_u64(ad, s->last_closed_step);
    dp_buf_put_blob(ad, s->input_topic, strlen(s->input_topic));
    dp_buf_put_u32(ad, (uint32_t)s->input_partition);
    dp_buf_put_i64(ad, s->input_offset);
    dp_buf_put_blob(ad, s->synthesizer, strlen(s->synthesizer));
    return dp_buf_status(ad);
}

int dp_state_encode_snapshot(dp_codec *codec, const dp_state_record *r, const dp_key *state_key,
                             dp_buf *out, char *errstr, size_t errstr_size)
{
    dp_codec_snapshot s = {.schema_version = DP_CODEC_SNAPSHOT_VERSION,
                           .stream_id = r->stream_id,
                           .stream_id_len = r->stream_id_len,
                           .last_closed_step = r->open_step - 1,
                           .input_topic = r->updates_topic,
                           .input_partition = r->partition,
                           .input_offset = r->skip_below,
                           .synthesizer = r->synthesizer,
                           .state = r->state,
                           .state_len = r->state_len,
                           .ledger = NULL,          /* the ledger is inside the synthesizer state */
                           .ledger_len = 0,
                           .chunk_index = 0,
                           .chunk_count = 1,
                           .encrypted = state_key != NULL};
    dp_buf ad, sealed;
    dp_buf_init(&ad);
    dp_buf_init(&sealed);
    int rc = DP_OK;
    if (state_key) {
        if ((rc = snapshot_ad(&s, &ad)) == DP_OK)
            rc = dp_seal(state_key, r->stream_id, r->stream_id_len, r->open_step - 1, ad.data, ad.len, r->state,
                         r->state_len, &sealed);
        if (rc == DP_OK) {
            memcpy(s.nonce, sealed.data, DP_SEAL_NONCE_BYTES);
            s.state = sealed.data + DP_SEAL_NONCE_BYTES;
            s.state_len = sealed.len - DP_SEAL_NONCE_BYTES;
        }
    }
    if (rc == DP_OK)
        rc = dp_codec_encode_snapshot_buf(codec, &s, out, errstr, errstr_size);
    dp_buf_free(&ad);
    dp_buf_free(&sealed);
    return rc;
}

int dp_state_encode_progress(const dp_state_record *r, dp_buf *out)
{
    dp_buf_put_u32(out, MAGIC_PROGRESS);
    dp_buf_put_blob(out, r->updates_topic, r->updates_topic_len);
    dp_buf_put_u32(out, (uint32_t)r->partition);
    dp_buf_put_i64(out, r->position);
    dp_buf_put_i64(out, r->resume);
    return dp_buf_status(out);
}

static int decode_progress(const uint8_t *data, size_t len, dp_state_record *out, dp_buf *scratch,
                           char *errstr, size_t errstr_size)
{
    dp_reader rd;
    dp_reader_init(&rd, data, len);
    (void)dp_reader_u32(&rd);
    out->kind = DP_STATE_PROGRESS;
    const uint8_t *topic = dp_reader_blob(&rd, &out->updates_topic_len);
    out->partition = (int32_t)dp_reader_u32(&rd);
    out->position = dp_reader_i64(&rd);
    out->resume = dp_reader_i64(&rd);
    if (dp_reader_finish(&rd) != DP_OK || !topic)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "truncated or over-long progress record");
    /* NUL-terminated copy */
    scratch->len = 0;
    dp_buf_put_bytes(scratch, topic, out->updates_topic_len);
    dp_buf_put_u8(scratch, 0);
    if (dp_buf_status(scratch) != DP_OK)
        return DP_ENOMEM;
    out->updates_topic = (const char *)scratch->data;
    return DP_OK;
}

int dp_state_decode(dp_codec *codec, const uint8_t *data, size_t len, const dp_key *state_key,
                    dp_state_record *out, dp_buf *scratch, char *errstr, size_t errstr_size)
{
    memset(out, 0, sizeof *out);
    if (len >= 4 && data[0] == 'D' && data[1] == 'P' && data[2] == 'P' && data[3] == '1')
        return decode_progress(data, len, out, scratch, errstr, errstr_size);
    dp_codec_snapshot s;
    int rc = dp_codec_decode_snapshot(codec, data, len, &s, errstr, errstr_size);
    if (rc != DP_OK)
        return rc == DP_ENOMEM ? rc : DP_ECORRUPT;
    if (s.chunk_count != 1)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "chunked snapshots are not supported yet");
    out->kind = DP_STATE_SNAPSHOT;
    out->stream_id = s.stream_id;
    out->stream_id_len = s.stream_id_len;
    out->updates_topic = s.input_topic;
    out->updates_topic_len = strlen(s.input_topic);
    out->partition = s.input_partition;
    out->skip_below = s.input_offset;
    out->open_step = s.last_closed_step + 1;
    out->synthesizer = s.synthesizer;
    out->state = s.state;
    out->state_len = s.state_len;
    if (s.encrypted) {
        if (!state_key)
            return dp_err(errstr, errstr_size, DP_EINVAL, "snapshot is encrypted but no state key is configured");
        dp_buf ad, sealed;
        dp_buf_init(&ad);
        dp_buf_init(&sealed);
        rc = snapshot_ad(&s, &ad);
        dp_buf_put_bytes(&sealed, s.nonce, DP_SEAL_NONCE_BYTES);
        dp_buf_put_bytes(&sealed, s.state, s.state_len);
        if (rc == DP_OK && (rc = dp_buf_status(&sealed)) == DP_OK) {
            scratch->len = 0;
            rc = dp_unseal(state_key, ad.data, ad.len, sealed.data, sealed.len, scratch, errstr, errstr_size);
        }
        dp_buf_free(&ad);
        dp_buf_free(&sealed);
        if (rc != DP_OK)
            return rc;
        out->state = scratch->data;
        out->state_len = scratch->len;
    } else if (state_key) {
        return dp_err(errstr, errstr_size, DP_EINVAL, "snapshot is not encrypted but a state key is configured");
    }
    return DP_OK;
}
