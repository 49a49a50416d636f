/* state_record.c — see state_record.h. */
#include "stream/state_record.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"
#include "stream/seal.h"
#include "stream/state_cas.h"

#define MAGIC_PROGRESS_V1 0x31505044u   /* "DPP1" little-endian */
#define MAGIC_PROGRESS    0x32505044u   /* "DPP2": with the updates topic's partition count */

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

/* Every public field of a chunk, chunk_count and the nonce included:
 * chunks of one snapshot agree on these bytes exactly, chunks of another
 * snapshot (other step, offset, size or nonce) do not. */
static int chunk_public_fields(const dp_codec_snapshot *s, dp_buf *out)
{
    out->len = 0;
    int rc = snapshot_ad(s, out);
    if (rc != DP_OK)
        return rc;
    dp_buf_put_u32(out, s->chunk_count);
    dp_buf_put_u8(out, s->encrypted ? 1 : 0);
    if (s->encrypted)
        dp_buf_put_bytes(out, s->nonce, DP_CODEC_NONCE_BYTES);
    return dp_buf_status(out);
}

/* clear: reset *out before each chunk (the split form) or append to it
 * (the single-message form, which keeps its historical contract). */
/* MAC of a plaintext state (state_record.h): seal.h's keyed MAC under
 * the state label, over the public fields (the AD) and the state. */
static void state_mac(const dp_key *mac_key, const uint8_t *ad, size_t ad_len, const uint8_t *state, size_t len,
                      uint8_t out[DP_STATE_MAC_BYTES])
{
    _Static_assert(DP_STATE_MAC_BYTES == DP_MAC_BYTES, "one MAC size");
    dp_mac(mac_key, "dpstream.state.mac.v1", ad, ad_len, state, len, out);
}

static int encode_chunks(dp_codec *codec, const dp_state_record *r, const dp_key *state_key,
                         const dp_key *mac_key, size_t chunk_bytes,
                         dp_buf *out, int clear, dp_state_chunk_fn emit, void *ctx, char *errstr,
                         size_t errstr_size)
{
    if (chunk_bytes == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "snapshot chunk size must be at least 1 byte");
    dp_codec_snapshot s = {.schema_version = r->format ? r->format : DP_CODEC_SNAPSHOT_VERSION,
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
    if (!state_key) {
        /* Plaintext: state ‖ MAC, split like a ciphertext, so one MAC
         * authenticates the reassembly. */
        if (!mac_key)
            rc = dp_err(errstr, errstr_size, DP_EINVAL, "snapshot: no key to authenticate it with");
        else if ((rc = snapshot_ad(&s, &ad)) == DP_OK) {
            uint8_t mac[DP_STATE_MAC_BYTES];
            state_mac(mac_key, ad.data, ad.len, r->state, r->state_len, mac);
            dp_buf_put_bytes(&sealed, r->state, r->state_len);
            dp_buf_put_bytes(&sealed, mac, sizeof mac);
            if ((rc = dp_buf_status(&sealed)) == DP_OK) {
                s.state = sealed.data;
                s.state_len = sealed.len;
            }
        }
    } else {
        /* The whole state is sealed once and the ciphertext split
         * (Snapshot.avsc), so one tag authenticates the reassembly. */
        if ((rc = snapshot_ad(&s, &ad)) == DP_OK)
            rc = dp_seal(state_key, r->stream_id, r->stream_id_len, r->open_step - 1, ad.data, ad.len, r->state,
                         r->state_len, &sealed);
        if (rc == DP_OK) {
            memcpy(s.nonce, sealed.data, DP_SEAL_NONCE_BYTES);
            s.state = sealed.data + DP_SEAL_NONCE_BYTES;
            s.state_len = sealed.len - DP_SEAL_NONCE_BYTES;
        }
    }
    const uint8_t *all = s.state;
    size_t total = s.state_len;
    size_t count = total <= chunk_bytes ? 1 : total / chunk_bytes + (total % chunk_bytes != 0);
    if (rc == DP_OK && count > (size_t)INT32_MAX)
        rc = dp_err(errstr, errstr_size, DP_ERANGE, "snapshot of %zu bytes needs too many chunks", total);
    for (size_t i = 0; rc == DP_OK && i < count; i++) {
        s.chunk_index = (uint32_t)i;
        s.chunk_count = (uint32_t)count;
        if (count > 1) {
            size_t at = i * chunk_bytes;
            s.state = all + at;
            s.state_len = total - at < chunk_bytes ? total - at : chunk_bytes;
        }
        if (clear)
            out->len = 0;
        rc = dp_codec_encode_snapshot_buf(codec, &s, out, errstr, errstr_size);
        if (rc == DP_OK && emit)
            rc = emit(ctx, (uint32_t)i, (uint32_t)count, out);
    }
    dp_buf_free(&ad);
    dp_buf_free(&sealed);
    return rc;
}

int dp_state_encode_snapshot(dp_codec *codec, const dp_state_record *r, const dp_key *state_key,
                             const dp_key *mac_key, dp_buf *out, char *errstr, size_t errstr_size)
{
    return encode_chunks(codec, r, state_key, mac_key, SIZE_MAX, out, 0, NULL, NULL, errstr, errstr_size);
}

int dp_state_encode_snapshot_chunks(dp_codec *codec, const dp_state_record *r, const dp_key *state_key,
                                    const dp_key *mac_key, size_t chunk_bytes, dp_buf *out, dp_state_chunk_fn emit,
                                    void *ctx, char *errstr, size_t errstr_size)
{
    return encode_chunks(codec, r, state_key, mac_key, chunk_bytes, out, 1, emit, ctx, errstr, errstr_size);
}

int dp_state_snapshot_key(const char *stream_id, size_t stream_id_len, uint32_t chunk_index, dp_buf *out)
{
    out->len = 0;
    dp_buf_put_bytes(out, stream_id, stream_id_len);
    if (chunk_index > 0) {
        uint8_t be[4] = {(uint8_t)(chunk_index >> 24), (uint8_t)(chunk_index >> 16), (uint8_t)(chunk_index >> 8),
                         (uint8_t)chunk_index};
        dp_buf_put_u8(out, DP_STATE_CHUNK_KEY_SEP);
        dp_buf_put_bytes(out, be, sizeof be);
    }
    return dp_buf_status(out);
}

int dp_state_key_is_chunk(const void *key, size_t key_len)
{
    return key && key_len > 0 && memchr(key, DP_STATE_CHUNK_KEY_SEP, key_len) != NULL;
}

int dp_state_chunk_peek(dp_codec *codec, const uint8_t *data, size_t len, dp_state_chunk_info *out)
{
    dp_codec_snapshot s;
    int rc = dp_codec_decode_snapshot(codec, data, len, &s, NULL, 0);
    if (rc != DP_OK)
        return rc == DP_ENOMEM ? rc : DP_ECORRUPT;
    out->chunk_index = s.chunk_index;
    out->chunk_count = s.chunk_count;
    out->last_closed_step = s.last_closed_step;
    out->input_offset = s.input_offset;
    return DP_OK;
}

static int is_progress(const uint8_t *data, size_t len)
{
    return len >= 4 && data[0] == 'D' && data[1] == 'P' && data[2] == 'P' && (data[3] == '1' || data[3] == '2');
}

int dp_state_owner(dp_codec *codec, const uint8_t *data, size_t len, const char **topic, size_t *topic_len,
                   int32_t *partition)
{
    if (dp_cas_is_chunk_record(data, len))
        return dp_cas_chunk_owner(data, len, topic, topic_len, partition);
    if (is_progress(data, len)) {
        dp_reader rd;
        dp_reader_init(&rd, data, len);
        (void)dp_reader_u32(&rd);
        const uint8_t *t = dp_reader_blob(&rd, topic_len);
        *partition = (int32_t)dp_reader_u32(&rd);
        if (dp_reader_status(&rd) != DP_OK || !t)
            return DP_ECORRUPT;
        *topic = (const char *)t;
        return DP_OK;
    }
    dp_codec_snapshot s;
    int rc = dp_codec_decode_snapshot(codec, data, len, &s, NULL, 0);
    if (rc != DP_OK)
        return rc == DP_ENOMEM ? rc : DP_ECORRUPT;
    *topic = s.input_topic;
    *topic_len = strlen(s.input_topic);
    *partition = s.input_partition;
    return DP_OK;
}

int dp_state_encode_progress(const dp_state_record *r, dp_buf *out)
{
    dp_buf_put_u32(out, MAGIC_PROGRESS);
    dp_buf_put_blob(out, r->updates_topic, r->updates_topic_len);
    dp_buf_put_u32(out, (uint32_t)r->partition);
    dp_buf_put_i64(out, r->position);
    dp_buf_put_i64(out, r->resume);
    dp_buf_put_u32(out, (uint32_t)(r->partition_count > 0 ? r->partition_count : 0));
    return dp_buf_status(out);
}

static int decode_progress(const uint8_t *data, size_t len, dp_state_record *out, dp_buf *scratch,
                           char *errstr, size_t errstr_size)
{
    dp_reader rd;
    dp_reader_init(&rd, data, len);
    uint32_t magic = dp_reader_u32(&rd);
    out->kind = DP_STATE_PROGRESS;
    const uint8_t *topic = dp_reader_blob(&rd, &out->updates_topic_len);
    out->partition = (int32_t)dp_reader_u32(&rd);
    out->position = dp_reader_i64(&rd);
    out->resume = dp_reader_i64(&rd);
    /* "DPP1", written before the count was recorded: unknown (0) */
    uint32_t count = magic == MAGIC_PROGRESS ? dp_reader_u32(&rd) : 0;
    out->partition_count = count <= INT32_MAX ? (int32_t)count : -1;
    if (dp_reader_finish(&rd) != DP_OK || !topic || out->partition_count < 0)
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
                    const dp_key *mac_key, dp_state_record *out, dp_buf *scratch, char *errstr, size_t errstr_size)
{
    memset(out, 0, sizeof *out);
    if (is_progress(data, len))
        return decode_progress(data, len, out, scratch, errstr, errstr_size);
    dp_state_piece one = {.data = data, .len = len};
    return dp_state_decode_chunks(codec, &one, 1, state_key, mac_key, out, scratch, errstr, errstr_size);
}

static int decode_piece(dp_codec *codec, const dp_state_piece *p, dp_codec_snapshot *s, char *errstr,
                        size_t errstr_size)
{
    int rc = dp_codec_decode_snapshot(codec, p->data, p->len, s, errstr, errstr_size);
    return rc == DP_OK || rc == DP_ENOMEM ? rc : DP_ECORRUPT;
}

int dp_state_decode_chunks(dp_codec *codec, const dp_state_piece *pieces, size_t n_pieces,
                           const dp_key *state_key, const dp_key *mac_key, dp_state_record *out, dp_buf *scratch,
                           char *errstr, size_t errstr_size)
{
    memset(out, 0, sizeof *out);
    dp_codec_snapshot s;
    /* 1. the authority: the newest index-0 chunk */
    size_t ref = SIZE_MAX;
    uint64_t ref_step = 0;
    int64_t ref_off = 0;
    for (size_t i = 0; i < n_pieces; i++) {
        int rc = decode_piece(codec, &pieces[i], &s, errstr, errstr_size);
        if (rc != DP_OK)
            return rc;
        if (s.chunk_index == 0 &&
            (ref == SIZE_MAX || s.last_closed_step > ref_step ||
             (s.last_closed_step == ref_step && s.input_offset > ref_off))) {
            ref = i;
            ref_step = s.last_closed_step;
            ref_off = s.input_offset;
        }
    }
    if (ref == SIZE_MAX)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "snapshot has no chunk 0");
    dp_buf pub_ref, pub, whole;
    dp_buf_init(&pub_ref);
    dp_buf_init(&pub);
    dp_buf_init(&whole);
    size_t *chosen = NULL;
    int rc = decode_piece(codec, &pieces[ref], &s, errstr, errstr_size);
    if (rc == DP_OK)
        rc = chunk_public_fields(&s, &pub_ref);
    uint32_t count = s.chunk_count;
    if (rc == DP_OK && count > n_pieces)
        rc = dp_err(errstr, errstr_size, DP_ECORRUPT, "incomplete snapshot: %u chunks, %zu found", count,
                    n_pieces);
    if (rc == DP_OK && !(chosen = malloc(count * sizeof *chosen)))
        rc = DP_ENOMEM;
    /* 2. per index, the first piece that agrees with chunk 0 */
    for (uint32_t k = 0; rc == DP_OK && k < count; k++)
        chosen[k] = k == 0 ? ref : SIZE_MAX;
    for (size_t i = 0; rc == DP_OK && i < n_pieces; i++) {
        if (i == ref || (rc = decode_piece(codec, &pieces[i], &s, errstr, errstr_size)) != DP_OK)
            continue;
        if (s.chunk_index == 0 || s.chunk_index >= count || chosen[s.chunk_index] != SIZE_MAX)
            continue;
        if ((rc = chunk_public_fields(&s, &pub)) != DP_OK)
            break;
        if (pub.len == pub_ref.len && memcmp(pub.data, pub_ref.data, pub.len) == 0)
            chosen[s.chunk_index] = i;   /* else stale: an older snapshot's chunk */
    }
    /* 3. concatenate the pieces in index order */
    for (uint32_t k = 0; rc == DP_OK && k < count; k++) {
        if (chosen[k] == SIZE_MAX) {
            rc = dp_err(errstr, errstr_size, DP_ECORRUPT, "incomplete snapshot: chunk %u of %u missing", k, count);
            break;
        }
        if ((rc = decode_piece(codec, &pieces[chosen[k]], &s, errstr, errstr_size)) == DP_OK) {
            dp_buf_put_bytes(&whole, s.state, s.state_len);
            rc = dp_buf_status(&whole);
        }
    }
    free(chosen);
    dp_buf_free(&pub_ref);
    dp_buf_free(&pub);
    /* 4. the authority last: `out` borrows its strings from this decode */
    if (rc == DP_OK)
        rc = decode_piece(codec, &pieces[ref], &s, errstr, errstr_size);
    if (rc == DP_OK) {
        out->kind = DP_STATE_SNAPSHOT;
        out->stream_id = s.stream_id;
        out->stream_id_len = s.stream_id_len;
        out->updates_topic = s.input_topic;
        out->updates_topic_len = strlen(s.input_topic);
        out->partition = s.input_partition;
        out->skip_below = s.input_offset;
        out->open_step = s.last_closed_step + 1;
        out->synthesizer = s.synthesizer;
        out->format = s.schema_version;
        out->chunk_count = count;
        if (s.encrypted && !state_key)
            rc = dp_err(errstr, errstr_size, DP_EINVAL, "snapshot is encrypted but no state key is configured");
        else if (!s.encrypted && state_key)
            rc = dp_err(errstr, errstr_size, DP_EINVAL, "snapshot is not encrypted but a state key is configured");
    }
    if (rc == DP_OK && s.encrypted) {
        dp_buf ad, sealed;
        dp_buf_init(&ad);
        dp_buf_init(&sealed);
        rc = snapshot_ad(&s, &ad);
        dp_buf_put_bytes(&sealed, s.nonce, DP_SEAL_NONCE_BYTES);
        dp_buf_put_bytes(&sealed, whole.data, whole.len);
        if (rc == DP_OK && (rc = dp_buf_status(&sealed)) == DP_OK) {
            scratch->len = 0;
            rc = dp_unseal(state_key, ad.data, ad.len, sealed.data, sealed.len, scratch, errstr, errstr_size);
        }
        dp_buf_free(&ad);
        dp_buf_free(&sealed);
    } else if (rc == DP_OK) {
        dp_buf ad;
        dp_buf_init(&ad);
        uint8_t mac[DP_STATE_MAC_BYTES];
        if (!mac_key || whole.len < DP_STATE_MAC_BYTES)
            rc = DP_ECORRUPT;
        else if ((rc = snapshot_ad(&s, &ad)) == DP_OK) {
            size_t n = whole.len - DP_STATE_MAC_BYTES;
            state_mac(mac_key, ad.data, ad.len, whole.data, n, mac);
            if (sodium_memcmp(mac, whole.data + n, DP_STATE_MAC_BYTES) != 0)
                rc = DP_ECORRUPT;
            else {
                scratch->len = 0;
                dp_buf_put_bytes(scratch, whole.data, n);
                rc = dp_buf_status(scratch);
            }
        }
        dp_buf_free(&ad);
        if (rc == DP_ECORRUPT)
            dp_err(errstr, errstr_size, DP_ECORRUPT,
                   "snapshot of stream '%.*s' at step %llu fails authentication (altered, or written under "
                   "another noise key); refusing it", (int)(s.stream_id_len < 200 ? s.stream_id_len : 200),
                   s.stream_id, (unsigned long long)s.last_closed_step);
    }
    if (rc == DP_OK) {
        out->state = scratch->data;
        out->state_len = scratch->len;
    }
    if (whole.data)
        sodium_memzero(whole.data, whole.cap);
    dp_buf_free(&whole);
    return rc;
}

/* A format-2 record's state is its manifest: replace it with the state
 * the manifest's chunks make up. */
static int resolve_manifest(const dp_state_lookup_fn lookup, void *ctx, const dp_key *state_key,
                            const dp_key *mac_key, dp_state_record *out, dp_buf *scratch, dp_buf *digests,
                            char *errstr, size_t errstr_size)
{
    dp_buf manifest;
    dp_buf_init(&manifest);
    dp_buf_put_bytes(&manifest, out->state, out->state_len);
    int rc = dp_buf_status(&manifest);
    if (rc == DP_OK)
        rc = dp_cas_assemble(out->stream_id, out->stream_id_len, out->open_step - 1, manifest.data, manifest.len,
                             lookup, ctx, state_key, mac_key, scratch, digests, errstr, errstr_size);
    else
        dp_err(errstr, errstr_size, rc, "out of memory");
    dp_buf_free(&manifest);
    out->state = rc == DP_OK ? scratch->data : NULL;
    out->state_len = rc == DP_OK ? scratch->len : 0;
    return rc;
}

int dp_state_decode_newest(dp_codec *codec, const char *key, size_t key_len, const dp_state_piece *first,
                           dp_state_lookup_fn lookup, void *ctx, size_t n_keys, const dp_key *state_key,
                           const dp_key *mac_key, dp_state_record *out, dp_buf *scratch, dp_buf *digests,
                           char *errstr, size_t errstr_size)
{
    if (digests)
        digests->len = 0;
    dp_state_chunk_info info;
    if (dp_state_chunk_peek(codec, first->data, first->len, &info) != DP_OK || info.chunk_count <= 1) {
        int rc = dp_state_decode(codec, first->data, first->len, state_key, mac_key, out, scratch, errstr,
                                 errstr_size);
        if (rc == DP_OK && out->kind == DP_STATE_SNAPSHOT && out->format == DP_CODEC_SNAPSHOT_VERSION_CAS)
            rc = resolve_manifest(lookup, ctx, state_key, mac_key, out, scratch, digests, errstr, errstr_size);
        return rc;
    }
    /* at most one piece per key present: a corrupt count cannot make this huge */
    size_t cap = info.chunk_count < n_keys ? info.chunk_count : n_keys;
    dp_state_piece *pieces = malloc((cap ? cap : 1) * sizeof *pieces);
    if (!pieces)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    dp_buf ck;
    dp_buf_init(&ck);
    size_t n = 0;
    pieces[n++] = *first;
    int rc = DP_OK;
    for (uint32_t i = 1; i < info.chunk_count && rc == DP_OK; i++) {
        if ((rc = dp_state_snapshot_key(key, key_len, i, &ck)) != DP_OK)
            break;
        const dp_state_piece *cv = lookup(ctx, ck.data, ck.len);
        if (cv && n < cap)
            pieces[n++] = *cv;
    }
    if (rc == DP_OK)
        rc = dp_state_decode_chunks(codec, pieces, n, state_key, mac_key, out, scratch, errstr, errstr_size);
    else
        dp_err(errstr, errstr_size, rc, "out of memory");
    if (rc == DP_OK && out->format == DP_CODEC_SNAPSHOT_VERSION_CAS)
        rc = resolve_manifest(lookup, ctx, state_key, mac_key, out, scratch, digests, errstr, errstr_size);
    dp_buf_free(&ck);
    free(pieces);
    return rc;
}
