/* checksum.c — ReleaseManifest.checksum: BLAKE2b-256 over the canonical
 * encoding of every record of a release (the exact definition is the
 * field's doc in schemas/ReleaseManifest.avsc).
 *
 * The canonical encoding is written here by hand rather than taken from
 * avro-c so that it is pinned independently of the library: it equals
 * avro-c's encoding of a SyntheticRow (arrays in one block), which
 * tests/unit/test_codec.c checks against encoded chunks. */
#include "codec/codec.h"
#include "codec/avro_write.h"
#include "codec/codec_internal.h"

#include <math.h>
#include <sodium.h>
#include <stdint.h>
#include <string.h>

#include "core/dp_error.h"

_Static_assert(sizeof(crypto_generichash_state) + 64 <= sizeof(((dp_codec_checksum *)0)->raw),
               "dp_codec_checksum too small for libsodium's state");

static crypto_generichash_state *state_of(dp_codec_checksum *h)
{
    uintptr_t a = (uintptr_t)h->raw;
    a = (a + 63) & ~(uintptr_t)63;
    return (crypto_generichash_state *)a;
}

void dp_codec_checksum_init(dp_codec_checksum *h)
{
    crypto_generichash_init(state_of(h), NULL, 0, DP_CODEC_CHECKSUM_BYTES);
}

/* Bytes are staged in a small buffer so the hash is fed in runs, not one
 * call per array item. */
typedef struct stage {
    crypto_generichash_state *st;
    uint8_t buf[256];
    size_t  n;
} stage;

static void stage_flush(stage *s)
{
    if (s->n)
        crypto_generichash_update(s->st, s->buf, s->n);
    s->n = 0;
}

static void stage_long(stage *s, int64_t v)
{
    if (s->n > sizeof s->buf - 10)
        stage_flush(s);
    s->n += dpc_avro_write_long(s->buf + s->n, v);
}

static void stage_double(stage *s, double d)
{
    if (s->n > sizeof s->buf - 8)
        stage_flush(s);
    s->n += dpc_avro_write_double(s->buf + s->n, d);
}

int dp_codec_checksum_add(dp_codec_checksum *h, const dp_synth_record *r)
{
    const dp_payload *p = &r->value;
    /* Validate everything first: a refused record hashes nothing. */
    if (r->synthetic_id > (uint64_t)INT64_MAX)
        return DP_EINVAL;
    switch (p->kind) {
    case DP_PAYLOAD_CATEGORY:
        break;
    case DP_PAYLOAD_ROW:
        if (p->row_len && !p->row)
            return DP_EINVAL;
        break;
    case DP_PAYLOAD_POINT:
        if (p->point_len && !p->point)
            return DP_EINVAL;
        for (size_t i = 0; i < p->point_len; i++)
            if (!isfinite(p->point[i]))
                return DP_EINVAL;
        break;
    default:
        return DP_EINVAL;
    }
    stage s = {.st = state_of(h), .n = 0};
    stage_long(&s, (int64_t)r->synthetic_id);
    if (p->kind == DP_PAYLOAD_CATEGORY) {
        stage_long(&s, 0);
        stage_long(&s, p->category);
    } else if (p->kind == DP_PAYLOAD_ROW) {
        stage_long(&s, 1);
        if (p->row_len)
            stage_long(&s, (int64_t)p->row_len);
        for (size_t i = 0; i < p->row_len; i++)
            stage_long(&s, p->row[i]);
        stage_long(&s, 0);   /* end of the array's blocks */
    } else {
        stage_long(&s, 2);
        if (p->point_len)
            stage_long(&s, (int64_t)p->point_len);
        for (size_t i = 0; i < p->point_len; i++)
            stage_double(&s, p->point[i]);
        stage_long(&s, 0);
    }
    stage_flush(&s);
    return DP_OK;
}

void dpc_checksum_add_rows(dp_codec_checksum *h, const uint8_t *rows, size_t n)
{
    crypto_generichash_update(state_of(h), rows, n);
}

void dp_codec_checksum_final(dp_codec_checksum *h, uint8_t out[DP_CODEC_CHECKSUM_BYTES])
{
    crypto_generichash_final(state_of(h), out, DP_CODEC_CHECKSUM_BYTES);
}
