/* state_cas.c — see state_cas.h. */
#include "stream/state_cas.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"
#include "stream/seal.h"

#define MAGIC_CHUNK    0x31435044u   /* "DPC1" little-endian */
#define MAGIC_MANIFEST 0x314d5044u   /* "DPM1" */
#define ENTRY_BYTES    (DP_CAS_DIGEST_BYTES + 4)

/* --- content-defined cuts -------------------------------------------------------- */

/* The gear table: 256 fixed pseudo-random words (splitmix64 from a public
 * seed), so cut points never depend on a key, a run or a machine. */
static void gear_table(uint64_t g[256])
{
    uint64_t x = 0x6470737461746531u;   /* "dpstate1" */
    for (int i = 0; i < 256; i++) {
        uint64_t z = (x += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        g[i] = z ^ (z >> 31);
    }
}

/* Chunks of at least max/32 bytes, cut where the top `bits` bits of the
 * gear hash are zero, which happens every ~max/8 bytes: an average near a
 * fifth of the maximum keeps the rewrite around a change small, while the
 * manifest (36 bytes a chunk) stays a small fraction of the state. */
int dp_cas_split(const uint8_t *data, size_t len, size_t max_bytes, size_t **ends, size_t *n)
{
    *ends = NULL;
    *n = 0;
    if (max_bytes == 0)
        return DP_EINVAL;
    size_t min = max_bytes / 32, target = max_bytes / 8;
    unsigned bits = 0;
    while (bits < 40 && ((size_t)2 << bits) <= target)
        bits++;
    uint64_t g[256];
    gear_table(g);
    size_t cap = len / (min ? min : 1) + 2, cnt = 0;
    size_t *e = malloc(cap * sizeof *e);
    if (!e)
        return DP_ENOMEM;
    size_t start = 0;
    while (start < len) {
        size_t left = len - start, lim = left < max_bytes ? left : max_bytes, i = min < lim ? min : lim;
        uint64_t h = 0;
        for (; i < lim; i++) {
            h = (h << 1) + g[data[start + i]];
            if (bits && (h >> (64 - bits)) == 0) {
                i++;
                break;
            }
        }
        if (cnt == cap) {   /* cannot happen with cap's bound; kept against arithmetic slips */
            free(e);
            return DP_ERANGE;
        }
        e[cnt++] = start + i;
        start += i;
    }
    *ends = e;
    *n = cnt;
    return DP_OK;
}

/* --- digests, keys, records -------------------------------------------------------- */

static void put_le64(uint8_t b[8], uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

static void chunk_digest(const dp_key *k, const char *stream_id, size_t stream_id_len, const uint8_t *data,
                         size_t len, uint8_t out[DP_CAS_DIGEST_BYTES])
{
    static const char label[] = "dpstream.state.chunk-digest.v1";
    uint8_t sub[32], le[8];
    crypto_generichash(sub, sizeof sub, (const uint8_t *)label, sizeof label - 1, k->bytes, sizeof k->bytes);
    crypto_generichash_state h;
    crypto_generichash_init(&h, sub, sizeof sub, DP_CAS_DIGEST_BYTES);
    put_le64(le, stream_id_len);
    crypto_generichash_update(&h, le, sizeof le);
    crypto_generichash_update(&h, (const uint8_t *)stream_id, stream_id_len);
    crypto_generichash_update(&h, data, len);
    crypto_generichash_final(&h, out, DP_CAS_DIGEST_BYTES);
    sodium_memzero(sub, sizeof sub);
}

static int chunk_ad(const char *stream_id, size_t stream_id_len, const uint8_t *digest, dp_buf *ad)
{
    ad->len = 0;
    dp_buf_put_bytes(ad, "dpstream.state.chunk.ad.v1", 26);
    dp_buf_put_blob(ad, stream_id, stream_id_len);
    dp_buf_put_bytes(ad, digest, DP_CAS_DIGEST_BYTES);
    return dp_buf_status(ad);
}

int dp_cas_chunk_key(const char *stream_id, size_t stream_id_len, const uint8_t digest[DP_CAS_DIGEST_BYTES],
                     dp_buf *out)
{
    out->len = 0;
    dp_buf_put_bytes(out, stream_id, stream_id_len);
    dp_buf_put_u8(out, DP_STATE_CHUNK_KEY_SEP);
    dp_buf_put_bytes(out, digest, DP_CAS_DIGEST_BYTES);
    return dp_buf_status(out);
}

int dp_cas_key_is_content(const void *key, size_t key_len)
{
    const uint8_t *sep = key ? memchr(key, DP_STATE_CHUNK_KEY_SEP, key_len) : NULL;
    return sep && (size_t)((const uint8_t *)key + key_len - sep) == 1 + DP_CAS_DIGEST_BYTES;
}

int dp_cas_is_chunk_record(const uint8_t *data, size_t len)
{
    return len >= 4 && data[0] == 'D' && data[1] == 'P' && data[2] == 'C' && data[3] == '1';
}

/* The header of a chunk record; payload, payload_len: what follows it. */
static int chunk_header(const uint8_t *data, size_t len, const char **topic, size_t *topic_len, int32_t *partition,
                        int *sealed, const uint8_t **payload, size_t *payload_len)
{
    if (!dp_cas_is_chunk_record(data, len))
        return DP_ECORRUPT;
    dp_reader rd;
    dp_reader_init(&rd, data, len);
    (void)dp_reader_u32(&rd);
    const uint8_t *t = dp_reader_blob(&rd, topic_len);
    *partition = (int32_t)dp_reader_u32(&rd);
    uint8_t s = dp_reader_u8(&rd);
    if (dp_reader_status(&rd) != DP_OK || !t || s > 1 || *partition < 0)
        return DP_ECORRUPT;
    *topic = (const char *)t;
    *sealed = s;
    *payload = data + rd.off;
    *payload_len = len - rd.off;
    return DP_OK;
}

int dp_cas_chunk_owner(const uint8_t *data, size_t len, const char **topic, size_t *topic_len, int32_t *partition)
{
    int sealed;
    const uint8_t *pl;
    size_t pl_len;
    return chunk_header(data, len, topic, topic_len, partition, &sealed, &pl, &pl_len);
}

/* --- writing ---------------------------------------------------------------------- */

static int digest_cmp(const void *a, const void *b) { return memcmp(a, b, DP_CAS_DIGEST_BYTES); }

static int digest_in(const uint8_t *set, size_t n, const uint8_t *d)
{
    return n && bsearch(d, set, n, DP_CAS_DIGEST_BYTES, digest_cmp) != NULL;
}

/* Sort and deduplicate a list of digests in place; returns the new count. */
static size_t sort_unique(uint8_t *d, size_t n)
{
    if (n == 0)
        return 0;
    qsort(d, n, DP_CAS_DIGEST_BYTES, digest_cmp);
    size_t m = 1;
    for (size_t i = 1; i < n; i++)
        if (memcmp(d + i * DP_CAS_DIGEST_BYTES, d + (m - 1) * DP_CAS_DIGEST_BYTES, DP_CAS_DIGEST_BYTES) != 0)
            memmove(d + m++ * DP_CAS_DIGEST_BYTES, d + i * DP_CAS_DIGEST_BYTES, DP_CAS_DIGEST_BYTES);
    return m;
}

static int encode_chunk(const dp_cas_stream *st, const dp_key *state_key, const uint8_t *digest,
                        const uint8_t *data, size_t len, dp_buf *ad, dp_buf *out)
{
    out->len = 0;
    dp_buf_put_u32(out, MAGIC_CHUNK);
    dp_buf_put_blob(out, st->updates_topic, st->updates_topic_len);
    dp_buf_put_u32(out, (uint32_t)st->partition);
    dp_buf_put_u8(out, state_key ? 1 : 0);
    if (!state_key) {
        dp_buf_put_bytes(out, data, len);
        return dp_buf_status(out);
    }
    int rc = chunk_ad(st->stream_id, st->stream_id_len, digest, ad);
    if (rc != DP_OK)
        return rc;
    /* step 0: a chunk outlives the step that wrote it; the nonce is still
     * a PRF of the plaintext and its associated data (seal.h) */
    return dp_seal(state_key, st->stream_id, st->stream_id_len, 0, ad->data, ad->len, data, len, out);
}

int dp_cas_write(const dp_cas_stream *st, const uint8_t *state, size_t state_len, size_t max_bytes,
                 const dp_key *state_key, const dp_key *mac_key, const uint8_t *known, size_t n_known,
                 dp_buf *manifest, dp_buf *digests, dp_cas_emit_fn emit, void *ctx, size_t *n_written, size_t *written,
                 char *errstr, size_t errstr_size)
{
    const dp_key *dk = state_key ? state_key : mac_key;
    *written = *n_written = 0;
    manifest->len = 0;
    digests->len = 0;
    if (!dk)
        return dp_err(errstr, errstr_size, DP_EINVAL, "snapshot: no key to authenticate its chunks with");
    size_t *ends = NULL, n = 0;
    int rc = dp_cas_split(state, state_len, max_bytes, &ends, &n);
    if (rc != DP_OK)
        return dp_err(errstr, errstr_size, rc, "cannot cut a state of %zu bytes into chunks", state_len);
    if (n > UINT32_MAX) {
        free(ends);
        return dp_err(errstr, errstr_size, DP_ERANGE, "state of %zu bytes needs too many chunks", state_len);
    }
    dp_buf key, rec, ad;
    dp_buf_init(&key);
    dp_buf_init(&rec);
    dp_buf_init(&ad);
    dp_buf_put_u32(manifest, MAGIC_MANIFEST);
    dp_buf_put_u64(manifest, state_len);
    dp_buf_put_u32(manifest, (uint32_t)n);
    /* pass 1: every chunk's digest, in state order, into the manifest */
    uint8_t *order = malloc((n ? n : 1) * DP_CAS_DIGEST_BYTES);
    if (!order)
        rc = DP_ENOMEM;
    size_t start = 0;
    for (size_t i = 0; rc == DP_OK && i < n; i++) {
        uint8_t *d = order + i * DP_CAS_DIGEST_BYTES;
        chunk_digest(dk, st->stream_id, st->stream_id_len, state + start, ends[i] - start, d);
        dp_buf_put_bytes(manifest, d, DP_CAS_DIGEST_BYTES);
        dp_buf_put_u32(manifest, (uint32_t)(ends[i] - start));
        start = ends[i];
    }
    if (rc == DP_OK && (rc = dp_buf_status(manifest)) == DP_OK) {
        dp_buf_put_bytes(digests, order, n * DP_CAS_DIGEST_BYTES);
        rc = dp_buf_status(digests);
    }
    size_t n_uniq = rc == DP_OK ? sort_unique(digests->data, n) : 0;
    digests->len = n_uniq * DP_CAS_DIGEST_BYTES;
    uint8_t *sent = rc == DP_OK ? calloc(n_uniq ? n_uniq : 1, 1) : NULL;
    if (rc == DP_OK && !sent)
        rc = DP_ENOMEM;
    /* pass 2: write each chunk not in the committed manifest, once (a
     * state may repeat a chunk, e.g. a run of zeros) */
    start = 0;
    for (size_t i = 0; rc == DP_OK && i < n; i++) {
        const uint8_t *c = state + start, *d = order + i * DP_CAS_DIGEST_BYTES;
        size_t clen = ends[i] - start;
        start = ends[i];
        const uint8_t *u = bsearch(d, digests->data, n_uniq, DP_CAS_DIGEST_BYTES, digest_cmp);
        size_t ui = (size_t)(u - digests->data) / DP_CAS_DIGEST_BYTES;
        if (sent[ui] || digest_in(known, n_known, d))
            continue;
        sent[ui] = 1;
        if ((rc = encode_chunk(st, state_key, d, c, clen, &ad, &rec)) != DP_OK ||
            (rc = dp_cas_chunk_key(st->stream_id, st->stream_id_len, d, &key)) != DP_OK)
            break;
        rc = emit(ctx, key.data, key.len, rec.data, rec.len);
        *written += key.len + rec.len;
        ++*n_written;
    }
    free(order);
    free(sent);
    if (rc == DP_ENOMEM)
        dp_err(errstr, errstr_size, rc, "out of memory writing snapshot chunks");
    free(ends);
    if (rec.data)
        sodium_memzero(rec.data, rec.cap);
    dp_buf_free(&key);
    dp_buf_free(&rec);
    dp_buf_free(&ad);
    return rc;
}

int dp_cas_tombstones(const char *stream_id, size_t stream_id_len, const uint8_t *old_d, size_t n_old,
                      const uint8_t *new_d, size_t n_new, dp_cas_emit_fn emit, void *ctx)
{
    dp_buf key;
    dp_buf_init(&key);
    int rc = DP_OK;
    for (size_t i = 0; rc == DP_OK && i < n_old; i++) {
        const uint8_t *d = old_d + i * DP_CAS_DIGEST_BYTES;
        if (digest_in(new_d, n_new, d))
            continue;
        if ((rc = dp_cas_chunk_key(stream_id, stream_id_len, d, &key)) == DP_OK)
            rc = emit(ctx, key.data, key.len, NULL, 0);
    }
    dp_buf_free(&key);
    return rc;
}

/* --- restoring -------------------------------------------------------------------- */

static void hex8(const uint8_t *d, char out[17])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 8; i++) {
        out[2 * i] = hx[d[i] >> 4];
        out[2 * i + 1] = hx[d[i] & 15];
    }
    out[16] = '\0';
}

int dp_cas_assemble(const char *stream_id, size_t stream_id_len, uint64_t step, const uint8_t *manifest,
                    size_t manifest_len, dp_state_lookup_fn lookup, void *ctx, const dp_key *state_key,
                    const dp_key *mac_key, dp_buf *state, dp_buf *digests, char *errstr, size_t errstr_size)
{
    int id_n = (int)(stream_id_len < 200 ? stream_id_len : 200);
    unsigned long long stp = (unsigned long long)step;
    const dp_key *dk = state_key ? state_key : mac_key;
    dp_reader rd;
    dp_reader_init(&rd, manifest, manifest_len);
    uint32_t magic = dp_reader_u32(&rd);
    uint64_t total = dp_reader_u64(&rd);
    uint32_t n = dp_reader_u32(&rd);
    /* The manifest is authenticated, so a bad one is a writer's bug, but
     * its sizes are still checked before anything is allocated by them. */
    if (dp_reader_status(&rd) != DP_OK || magic != MAGIC_MANIFEST ||
        (manifest_len - rd.off) / ENTRY_BYTES != n || (manifest_len - rd.off) % ENTRY_BYTES != 0 || !dk)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "snapshot of stream '%.*s' at step %llu: malformed chunk "
                      "manifest", id_n, stream_id, stp);
    state->len = 0;
    if (digests)
        digests->len = 0;
    dp_buf key, ad;
    dp_buf_init(&key);
    dp_buf_init(&ad);
    int rc = DP_OK;
    uint64_t sum = 0;
    for (uint32_t i = 0; rc == DP_OK && i < n; i++) {
        const uint8_t *d = manifest + rd.off + (size_t)i * ENTRY_BYTES;
        const uint8_t *lb = d + DP_CAS_DIGEST_BYTES;
        uint32_t clen = (uint32_t)lb[0] | (uint32_t)lb[1] << 8 | (uint32_t)lb[2] << 16 | (uint32_t)lb[3] << 24;
        char hx[17];
        hex8(d, hx);
        sum += clen;
        if (sum > total) {
            rc = dp_err(errstr, errstr_size, DP_ECORRUPT, "snapshot of stream '%.*s' at step %llu: chunk "
                        "manifest longer than its state", id_n, stream_id, stp);
            break;
        }
        if ((rc = dp_cas_chunk_key(stream_id, stream_id_len, d, &key)) != DP_OK)
            break;
        const dp_state_piece *v = lookup(ctx, key.data, key.len);
        if (!v) {
            rc = dp_err(errstr, errstr_size, DP_ECORRUPT, "snapshot of stream '%.*s' at step %llu: chunk %u of %u "
                        "(digest %s...) is missing from the state topic; refusing to restore a partial state",
                        id_n, stream_id, stp, i + 1, n, hx);
            break;
        }
        const char *topic;
        size_t topic_len, pl_len, at = state->len;
        int32_t part;
        int sealed;
        const uint8_t *pl;
        if (chunk_header(v->data, v->len, &topic, &topic_len, &part, &sealed, &pl, &pl_len) != DP_OK ||
            sealed != (state_key != NULL)) {
            rc = dp_err(errstr, errstr_size, DP_ECORRUPT, "snapshot of stream '%.*s' at step %llu: chunk %u of %u "
                        "(digest %s...) is not a %s chunk record", id_n, stream_id, stp, i + 1, n, hx,
                        state_key ? "sealed" : "plaintext");
            break;
        }
        if (sealed) {
            if ((rc = chunk_ad(stream_id, stream_id_len, d, &ad)) == DP_OK)
                rc = dp_unseal(state_key, ad.data, ad.len, pl, pl_len, state, NULL, 0);
        } else {
            dp_buf_put_bytes(state, pl, pl_len);
            rc = dp_buf_status(state);
        }
        uint8_t got[DP_CAS_DIGEST_BYTES];
        if (rc == DP_OK) {
            /* an empty chunk (never written, but a forged one) may leave state->data NULL */
            const uint8_t *cp = state->len > at ? state->data + at : (const uint8_t *)"";
            chunk_digest(dk, stream_id, stream_id_len, cp, state->len - at, got);
            if (state->len - at != clen || sodium_memcmp(got, d, sizeof got) != 0)
                rc = DP_ECORRUPT;
        }
        if (rc == DP_ECORRUPT)
            dp_err(errstr, errstr_size, rc, "snapshot of stream '%.*s' at step %llu: chunk %u of %u (digest %s...) "
                   "fails authentication (altered, or written under another key); refusing it", id_n, stream_id,
                   stp, i + 1, n, hx);
        if (rc == DP_OK && digests) {
            dp_buf_put_bytes(digests, d, DP_CAS_DIGEST_BYTES);
            rc = dp_buf_status(digests);
        }
    }
    if (rc == DP_OK && sum != total)
        rc = dp_err(errstr, errstr_size, DP_ECORRUPT, "snapshot of stream '%.*s' at step %llu: chunks add up to "
                    "%llu bytes, the manifest says %llu", id_n, stream_id, stp, (unsigned long long)sum,
                    (unsigned long long)total);
    if (rc == DP_OK && digests)
        digests->len = sort_unique(digests->data, digests->len / DP_CAS_DIGEST_BYTES) * DP_CAS_DIGEST_BYTES;
    if (rc == DP_ENOMEM)
        dp_err(errstr, errstr_size, rc, "out of memory assembling a snapshot");
    if (rc != DP_OK && state->data) {
        sodium_memzero(state->data, state->cap);
        state->len = 0;
    }
    dp_buf_free(&key);
    dp_buf_free(&ad);
    return rc;
}
