/* state_record.c — see state_record.h. */
#include "stream/state_record.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"
#include "stream/seal.h"

#define MAGIC_SNAPSHOT 0x31535044u   /* "DPS1" little-endian */
#define MAGIC_PROGRESS 0x31505044u   /* "DPP1" */

int dp_state_encode_snapshot(const dp_state_record *r, const dp_key *state_key, dp_buf *out)
{
    size_t start = out->len;
    dp_buf_put_u32(out, MAGIC_SNAPSHOT);
    dp_buf_put_blob(out, r->stream_id, r->stream_id_len);
    dp_buf_put_blob(out, r->updates_topic, r->updates_topic_len);
    dp_buf_put_u32(out, (uint32_t)r->partition);
    dp_buf_put_i64(out, r->skip_below);
    dp_buf_put_u64(out, r->open_step);
    dp_buf_put_u8(out, state_key ? 1 : 0);
    size_t header_end = out->len;
    dp_buf body;
    dp_buf_init(&body);
    dp_buf_put_blob(&body, r->synthesizer, r->synthesizer_len);
    dp_buf_put_blob(&body, r->state, r->state_len);
    int rc = dp_buf_status(&body);
    if (rc == DP_OK && (rc = dp_buf_status(out)) == DP_OK) {
        if (!state_key) {
            dp_buf_put_blob(out, body.data, body.len);
        } else {
            dp_buf sealed;
            dp_buf_init(&sealed);
            /* the header (copied: `out` may move while growing) is the AD */
            uint8_t *ad = malloc(header_end - start);
            if (!ad) {
                rc = DP_ENOMEM;
            } else {
                memcpy(ad, out->data + start, header_end - start);
                rc = dp_seal(state_key, r->stream_id, r->stream_id_len, r->open_step, ad,
                             header_end - start, body.data, body.len, &sealed);
                free(ad);
            }
            if (rc == DP_OK)
                dp_buf_put_blob(out, sealed.data, sealed.len);
            dp_buf_free(&sealed);
        }
    }
    if (body.data)
        sodium_memzero(body.data, body.len);
    dp_buf_free(&body);
    return rc != DP_OK ? rc : dp_buf_status(out);
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

int dp_state_decode(const uint8_t *data, size_t len, const dp_key *state_key,
                    dp_state_record *out, dp_buf *scratch, char *errstr, size_t errstr_size)
{
    memset(out, 0, sizeof *out);
    dp_reader rd;
    dp_reader_init(&rd, data, len);
    uint32_t magic = dp_reader_u32(&rd);
    if (dp_reader_status(&rd) != DP_OK)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "state record shorter than its magic");
    if (magic == MAGIC_PROGRESS) {
        out->kind = DP_STATE_PROGRESS;
        out->updates_topic = (const char *)dp_reader_blob(&rd, &out->updates_topic_len);
        out->partition = (int32_t)dp_reader_u32(&rd);
        out->position = dp_reader_i64(&rd);
        out->resume = dp_reader_i64(&rd);
        if (dp_reader_finish(&rd) != DP_OK || !out->updates_topic)
            return dp_err(errstr, errstr_size, DP_ECORRUPT, "truncated or over-long progress record");
        return DP_OK;
    }
    if (magic != MAGIC_SNAPSHOT)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "unknown state record magic 0x%08x", magic);
    out->kind = DP_STATE_SNAPSHOT;
    out->stream_id = (const char *)dp_reader_blob(&rd, &out->stream_id_len);
    out->updates_topic = (const char *)dp_reader_blob(&rd, &out->updates_topic_len);
    out->partition = (int32_t)dp_reader_u32(&rd);
    out->skip_below = dp_reader_i64(&rd);
    out->open_step = dp_reader_u64(&rd);
    out->sealed = dp_reader_u8(&rd);
    size_t header_len = rd.off;
    size_t body_len = 0;
    const uint8_t *body = dp_reader_blob(&rd, &body_len);
    if (dp_reader_finish(&rd) != DP_OK || !body || !out->stream_id || !out->updates_topic || out->sealed > 1)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "truncated or over-long snapshot record");
    if (out->sealed) {
        if (!state_key)
            return dp_err(errstr, errstr_size, DP_EINVAL,
                          "snapshot is encrypted but no state key is configured");
        scratch->len = 0;
        int rc = dp_unseal(state_key, data, header_len, body, body_len, scratch, errstr, errstr_size);
        if (rc != DP_OK)
            return rc;
        body = scratch->data;
        body_len = scratch->len;
    } else if (state_key) {
        /* Refuse plaintext state when encryption is configured: accepting it
         * would let whoever can write the state topic inject state. */
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "snapshot is not encrypted but a state key is configured");
    }
    dp_reader br;
    dp_reader_init(&br, body, body_len);
    out->synthesizer = (const char *)dp_reader_blob(&br, &out->synthesizer_len);
    out->state = dp_reader_blob(&br, &out->state_len);
    if (dp_reader_finish(&br) != DP_OK || !out->synthesizer || !out->state)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "malformed snapshot body");
    return DP_OK;
}
