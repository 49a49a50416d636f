/* codec_update_decode.c — the Update message decoded without avro-c.
 *
 * Every input message is an Update, so its decoder is the processor's
 * hottest code: through avro-c's generic values (dpc_read: avro_check,
 * then avro_value_read into the reused value, then field getters) it cost
 * ~0.6 µs, about a third of the processor thread's time per update
 * (bench/RESULTS.md).  The schema is fixed (schemas/Update.avsc; the
 * writer's schema is the reader's, as the Confluent framing's id or the
 * plain framing's contract promise), so this reads the Avro binary
 * encoding (Avro 1.11 specification, "Binary Encoding") field by field:
 *
 *   stream      string
 *   step        long
 *   kind        enum UpdateKind (4 symbols)
 *   entity      union [null, string]
 *   payload     union [null, Category{long}, CategoricalRow{array<int>},
 *                      Point{array<double>}]
 *   event_time  union [null, long]
 *
 * It accepts exactly what dpc_decode_update_generic (the avro-c path,
 * kept for tests) accepts — the structural rules of avro_check.c (varint
 * widths, lengths within the message, array blocks with a negative count
 * followed by a matching byte size, no trailing bytes) and then the
 * Update rules of codec.h — and yields the same dp_update; strings borrow
 * from the input.  test_codec_update_decode checks the two decoders
 * against each other on valid, mutated and random input. */
#include "codec/codec_internal.h"
#include "codec/avro_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"

typedef struct rd {
    const uint8_t *p;
    size_t         len, off;
    char          *errstr;
    size_t         errstr_size;
} rd;

static int malformed(rd *r, const char *what)
{
    return dp_err(r->errstr, r->errstr_size, DP_EINVAL, "Update: malformed Avro at byte %zu of %zu: %s", r->off,
                  r->len, what);
}

static int get_varint(rd *r, int max_bytes, int bits, int64_t *out)
{
    *out = 0;
    const char *why = dp_avro_read_varint(r->p, r->len, &r->off, max_bytes, bits, out);
    return why ? malformed(r, why) : DP_OK;
}

/* Most varints in an Update (lengths, branch and enum indices, small
 * steps and categories) are one byte: decode those inline. */
static inline int get_small(rd *r, int max_bytes, int bits, int64_t *v)
{
    if (r->off < r->len && !(r->p[r->off] & 0x80)) {
        uint8_t b = r->p[r->off++];
        *v = (int64_t)(b >> 1) ^ -(int64_t)(b & 1);
        return DP_OK;
    }
    return get_varint(r, max_bytes, bits, v);
}

static int get_long(rd *r, int64_t *v) { return get_small(r, 10, 64, v); }

static int get_int(rd *r, int32_t *v)
{
    int64_t w;
    int rc = get_small(r, 5, 32, &w);
    *v = (int32_t)w;   /* in range: 32-bit zigzag */
    return rc;
}

/* A string's bytes, borrowed; then the text rules of every string field. */
static int get_text(rd *r, const char *field, const char **s, size_t *n)
{
    int64_t len;
    int rc = get_long(r, &len);
    if (rc != DP_OK)
        return rc;
    if (len < 0)
        return malformed(r, "negative string/bytes length");
    if ((uint64_t)len > r->len - r->off)
        return malformed(r, "string/bytes length exceeds the message");
    *s = (const char *)r->p + r->off;
    *n = (size_t)len;
    r->off += (size_t)len;
    return DP_OK;
}

static int get_branch(rd *r, int64_t n_branches, int64_t *branch)
{
    int rc = get_long(r, branch);
    if (rc == DP_OK && (*branch < 0 || *branch >= n_branches))
        return malformed(r, "union branch out of range");
    return rc;
}

/* An array<int> (is_double = 0) or array<double> into the store, appended
 * after `*n` items already there.  Items take at least one byte, so a
 * block's count is bounded by the bytes left (avro_check.c). */
static int get_array(rd *r, int is_double, dp_update_store *st, size_t *n)
{
    for (;;) {
        int64_t count, block_size = -1;
        int rc = get_long(r, &count);
        if (rc != DP_OK)
            return rc;
        if (count == 0)
            return DP_OK;
        if (count < 0) {
            if (count == INT64_MIN)
                return malformed(r, "block count out of range");
            count = -count;
            if ((rc = get_long(r, &block_size)) != DP_OK)
                return rc;
            if (block_size < 0 || (uint64_t)block_size > r->len - r->off)
                return malformed(r, "block byte size exceeds the message");
        }
        if ((uint64_t)count > r->len - r->off)
            return malformed(r, "block count exceeds the remaining bytes");
        size_t need = *n + (size_t)count;
        if (dp_update_store_reserve(st, is_double, need) != DP_OK)
            return dp_err(r->errstr, r->errstr_size, DP_ENOMEM, "Update: out of memory");
        size_t start = r->off;
        for (int64_t i = 0; i < count; i++, (*n)++) {
            if (is_double) {
                if (r->len - r->off < 8)
                    return malformed(r, "truncated double");
                uint64_t bits = 0;
                for (int k = 7; k >= 0; k--)
                    bits = bits << 8 | r->p[r->off + (size_t)k];
                memcpy(&st->dbls[*n], &bits, sizeof(double));
                r->off += 8;
            } else if ((rc = get_int(r, &st->ints[*n])) != DP_OK) {
                return rc;
            }
        }
        if (block_size >= 0 && (uint64_t)block_size != r->off - start)
            return malformed(r, "block byte size does not match its items");
    }
}

/* The structure: every field read, nothing interpreted beyond Avro.
 * Every field of *u is assigned here, none left to a memset: zeroing the
 * whole struct up front (rep stos) was half of this decoder's time. */
static int read_update(rd *r, dp_update *u, dp_update_store *st)
{
    int64_t step, kind, branch;
    int rc;
    u->entity_id = NULL;
    u->entity_id_len = 0;
    u->payload.kind = DP_PAYLOAD_NONE;
    u->payload.category = 0;
    u->payload.row = NULL;
    u->payload.row_len = 0;
    u->payload.point = NULL;
    u->payload.point_len = 0;
    u->has_event_time = 0;
    u->event_time_ms = 0;
    if ((rc = get_text(r, "Update.stream", &u->stream_id, &u->stream_id_len)) != DP_OK ||
        (rc = get_long(r, &step)) != DP_OK || (rc = get_long(r, &kind)) != DP_OK)
        return rc;
    if (kind < 0 || kind > DP_UPDATE_CLOSE_STEP)
        return malformed(r, "enum index out of range");
    u->step = (uint64_t)step;   /* range checked after the structure, as the generic path does */
    u->kind = (dp_update_kind)kind;
    if ((rc = get_branch(r, 2, &branch)) != DP_OK)
        return rc;
    if (branch == 1 && (rc = get_text(r, "Update.entity", &u->entity_id, &u->entity_id_len)) != DP_OK)
        return rc;
    if ((rc = get_branch(r, 4, &branch)) != DP_OK)
        return rc;
    size_t n = 0;
    switch (branch) {
    case 1:
        u->payload.kind = DP_PAYLOAD_CATEGORY;
        rc = get_long(r, &u->payload.category);
        break;
    case 2:
        u->payload.kind = DP_PAYLOAD_ROW;
        rc = get_array(r, 0, st, &n);
        u->payload.row_len = n;
        break;
    case 3:
        u->payload.kind = DP_PAYLOAD_POINT;
        rc = get_array(r, 1, st, &n);
        u->payload.point_len = n;
        break;
    default:
        break;
    }
    if (rc != DP_OK)
        return rc;
    if ((rc = get_branch(r, 2, &branch)) != DP_OK)
        return rc;
    if (branch == 1) {
        u->has_event_time = 1;
        if ((rc = get_long(r, &u->event_time_ms)) != DP_OK)
            return rc;
    }
    if (r->off != r->len)
        return malformed(r, "trailing bytes after the datum");
    /* Pointers only now: the store may have moved while arrays grew. */
    if (u->payload.kind == DP_PAYLOAD_ROW)
        u->payload.row = st->ints;
    else if (u->payload.kind == DP_PAYLOAD_POINT)
        u->payload.point = st->dbls;
    return DP_OK;
}

/* The Update rules of codec.h, in the generic path's order. */
static int check_update(const dp_update *u, int64_t step, char *errstr, size_t errstr_size)
{
    if (step < 1)
        return dp_err(errstr, errstr_size, DP_EINVAL, "Update: step %lld is not >= 1", (long long)step);
    int rc = dpc_check_text(u->stream_id, u->stream_id_len, 1, "Update.stream", errstr, errstr_size);
    if (rc == DP_OK && u->entity_id)
        rc = dpc_check_text(u->entity_id, u->entity_id_len, 1, "Update.entity", errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    for (size_t i = 0; u->payload.kind == DP_PAYLOAD_POINT && i < u->payload.point_len; i++)
        if (!isfinite(u->payload.point[i]))
            return dp_err(errstr, errstr_size, DP_EINVAL, "Update.payload: coordinate %zu is not finite", i);
    if (u->kind == DP_UPDATE_CLOSE_STEP && (u->entity_id || u->payload.kind != DP_PAYLOAD_NONE))
        return dp_err(errstr, errstr_size, DP_EINVAL, "Update: CLOSE_STEP carries neither entity nor payload");
    return DP_OK;
}

static int decode_body(const uint8_t *p, size_t len, dp_update *out, dp_update_store *store,
                           char *errstr, size_t errstr_size)
{
    rd r = {.p = p, .len = len, .off = 0, .errstr = errstr, .errstr_size = errstr_size};
    dp_update u;
    int rc = read_update(&r, &u, store);
    if (rc == DP_OK)
        rc = check_update(&u, (int64_t)u.step, errstr, errstr_size);
    if (rc != DP_OK) {
        memset(out, 0, sizeof *out);   /* as the generic path leaves it */
        return rc;
    }
    *out = u;
    return DP_OK;
}

int dp_codec_decode_update_into(dp_codec *c, const void *data, size_t len, dp_update *out,
                                dp_update_store *store, char *errstr, size_t errstr_size)
{
    const uint8_t *p = data;
    uint32_t id;
    /* A foreign writer id: resolved (codec_update_resolve.c); the own id
     * and every other framing take the direct path below. */
    int rc;
    if (c->resolve_update_writers && dp_codec_framed_id(p, len, &id) == DP_OK &&
        id != c->schema_id[DP_CODEC_UPDATE]) {
        size_t n = 0;
        rc = dpc_resolve_update(c, id, p + DP_CODEC_CONFLUENT_HEADER, len - DP_CODEC_CONFLUENT_HEADER, store, &n,
                                errstr, errstr_size);
        p = store->bytes;   /* strings then borrow from the store */
        len = n;
    } else {
        rc = dpc_unframe(c, DP_CODEC_UPDATE, &p, &len, errstr, errstr_size);
    }
    if (rc != DP_OK) {
        memset(out, 0, sizeof *out);
        return rc;
    }
    return decode_body(p, len, out, store, errstr, errstr_size);
}

int dp_codec_decode_update(dp_codec *c, const void *data, size_t len, dp_update *out,
                           char *errstr, size_t errstr_size)
{
    return dp_codec_decode_update_into(c, data, len, out, &c->upd_store, errstr, errstr_size);
}
