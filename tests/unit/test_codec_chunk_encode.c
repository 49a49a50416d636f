/* test_codec_chunk_encode.c — the direct SyntheticRecord encoder
 * (dp_codec_encode_chunk_buf, avro_write.h) against avro-c's generic one
 * (dp_codec_encode_chunk): for random chunks of every payload kind —
 * empty and long rows and points, extreme longs and ints, signed zero,
 * subnormal and huge doubles, 0..300 records, multi-byte UTF-8 stream ids —
 * both framings write the same bytes, those bytes decode back to the chunk,
 * and every chunk one refuses the other refuses too, leaving the output
 * buffer as it was.  A zigzag or block-layout slip changes bytes and fails
 * the first check (tried: writing the array block count as a negative
 * count with a byte size, as the spec also allows, is caught). */
#include "dptest.h"

#include "codec/codec.h"
#include "core/dp_error.h"
#include "core/drbg.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAX_RECORDS 300
#define MAX_ITEMS   40

static dp_codec *new_codec(dp_codec_framing framing)
{
    dp_codec_options o = {.framing = framing};
    for (int t = 0; t < DP_CODEC_TYPE_COUNT; t++)
        o.schema_id[t] = 0x01020304u + (uint32_t)t;
    dp_codec *c = NULL;
    char err[256] = "";
    CU_ASSERT_FATAL(dp_codec_create(&c, &o, err, sizeof err) == DP_OK);
    return c;
}

static int64_t pick_long(dp_drbg *g)
{
    static const int64_t edge[] = {0, 1, -1, 63, 64, -64, -65, 8191, 8192, INT32_MAX, INT32_MIN,
                                   INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1};
    if (dp_drbg_uniform(g, 3) == 0)
        return edge[dp_drbg_uniform(g, sizeof edge / sizeof edge[0])];
    int64_t v = (int64_t)(dp_drbg_u64(g) >> dp_drbg_uniform(g, 64));
    return dp_drbg_bit(g) ? v : -v;
}

static double pick_double(dp_drbg *g)
{
    static const double edge[] = {0.0, -0.0, 1.0, -1.5, 5e-324, -2.2250738585072014e-308, 1.7976931348623157e308};
    if (dp_drbg_uniform(g, 3) == 0)
        return edge[dp_drbg_uniform(g, sizeof edge / sizeof edge[0])];
    uint64_t bits = dp_drbg_u64(g);
    double d;
    memcpy(&d, &bits, sizeof d);
    return isfinite(d) ? d : 0.25;
}

typedef struct chunk_store {
    dp_synth_record recs[MAX_RECORDS];
    int32_t         ints[MAX_RECORDS][MAX_ITEMS];
    double          dbls[MAX_RECORDS][MAX_ITEMS];
} chunk_store;

static void random_chunk(dp_drbg *g, chunk_store *st, dp_codec_chunk *ch)
{
    static const char *const ids[] = {"s", "win/a", "stream-\xc3\xa9t\xc3\xa9", "\xe2\x82\xac\xf0\x9f\x98\x80/x"};
    const char *id = ids[dp_drbg_uniform(g, 4)];
    size_t n = dp_drbg_uniform(g, 4) == 0 ? 0 : (size_t)dp_drbg_uniform(g, MAX_RECORDS + 1);
    for (size_t i = 0; i < n; i++) {
        dp_synth_record *r = &st->recs[i];
        memset(r, 0, sizeof *r);
        r->synthetic_id = (uint64_t)pick_long(g) & (uint64_t)INT64_MAX;
        size_t items = dp_drbg_uniform(g, 3) == 0 ? 0 : (size_t)dp_drbg_uniform(g, MAX_ITEMS + 1);
        switch (dp_drbg_uniform(g, 3)) {
        case 0:
            r->value.kind = DP_PAYLOAD_CATEGORY;
            r->value.category = pick_long(g);
            break;
        case 1:
            for (size_t j = 0; j < items; j++)
                st->ints[i][j] = (int32_t)(uint32_t)pick_long(g);
            r->value = (dp_payload){.kind = DP_PAYLOAD_ROW, .row = st->ints[i], .row_len = items};
            break;
        default:
            for (size_t j = 0; j < items; j++)
                st->dbls[i][j] = pick_double(g);
            r->value = (dp_payload){.kind = DP_PAYLOAD_POINT, .point = st->dbls[i], .point_len = items};
            break;
        }
    }
    *ch = (dp_codec_chunk){.stream_id = id,
                           .stream_id_len = strlen(id),
                           .step = 1 + ((uint64_t)pick_long(g) & (uint64_t)(INT64_MAX - 1)),
                           .chunk_index = (uint32_t)dp_drbg_uniform(g, (uint64_t)INT32_MAX + 1),
                           .records = st->recs,
                           .n_records = n};
}

/* Encode with both encoders; 1 if they agree (bytes, or both refuse). */
static int encoders_agree(dp_codec *c, const dp_codec_chunk *ch, int *refused)
{
    static uint8_t generic[MAX_RECORDS * (MAX_ITEMS * 10 + 30) + 1024];
    size_t glen = 0;
    char e1[256], e2[256];
    int g_rc = dp_codec_encode_chunk(c, ch, generic, sizeof generic, &glen, e1, sizeof e1);
    dp_buf b;
    dp_buf_init(&b);
    dp_buf_put_bytes(&b, "pre", 3);   /* appends after what is there */
    int d_rc = dp_codec_encode_chunk_buf(c, ch, &b, e2, sizeof e2);
    int ok = (g_rc == DP_OK) == (d_rc == DP_OK);
    if (ok && d_rc == DP_OK)
        ok = b.len == 3 + glen && memcmp(b.data, "pre", 3) == 0 && memcmp(b.data + 3, generic, glen) == 0;
    if (ok && d_rc != DP_OK)
        ok = b.len == 3;   /* nothing half-written */
    if (!ok)
        fprintf(stderr, "generic %d (%s) vs direct %d (%s), %zu vs %zu bytes\n", g_rc, g_rc ? e1 : "", d_rc,
                d_rc ? e2 : "", glen, b.len - 3);
    if (ok && d_rc == DP_OK) {
        dp_codec_chunk back;
        char e3[256];
        ok = dp_codec_decode_chunk(c, b.data + 3, b.len - 3, &back, e3, sizeof e3) == DP_OK &&
             back.n_records == ch->n_records && back.step == ch->step && back.chunk_index == ch->chunk_index &&
             back.stream_id_len == ch->stream_id_len &&
             memcmp(back.stream_id, ch->stream_id, ch->stream_id_len) == 0;
        for (size_t i = 0; ok && i < ch->n_records; i++)
            ok = back.records[i].synthetic_id == ch->records[i].synthetic_id &&
                 back.records[i].value.kind == ch->records[i].value.kind;
    }
    *refused = d_rc != DP_OK;
    dp_buf_free(&b);
    return ok;
}

static void test_random_chunks_byte_identical(void)
{
    static chunk_store st;
    dp_key key;
    dptest_key(&key, 31);
    for (int f = 0; f < 2; f++) {
        dp_codec *c = new_codec(f ? DP_CODEC_FRAMING_CONFLUENT : DP_CODEC_FRAMING_PLAIN);
        dp_drbg g;
        dp_drbg_init(&g, &key, "chunk-encode", 12, (uint64_t)f, "random chunks");
        int bad = 0, refused = 0, r = 0;
        for (int k = 0; k < 400; k++) {
            dp_codec_chunk ch;
            random_chunk(&g, &st, &ch);
            bad += !encoders_agree(c, &ch, &r);
            refused += r;
        }
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT_EQUAL(refused, 0);
        dp_codec_destroy(c);
    }
}

static void test_refusals_agree(void)
{
    static chunk_store st;
    dp_key key;
    dptest_key(&key, 32);
    dp_codec *c = new_codec(DP_CODEC_FRAMING_CONFLUENT);
    dp_drbg g;
    dp_drbg_init(&g, &key, "chunk-encode", 12, 9, "refusals");
    int r = 0;
    for (int k = 0; k < 8; k++) {
        dp_codec_chunk ch;
        do
            random_chunk(&g, &st, &ch);
        while (ch.n_records < 3);
        dp_synth_record *victim = &st.recs[ch.n_records / 2];
        double nan_coord[2] = {1.0, NAN};
        switch (k) {
        case 0: ch.step = 0; break;
        case 1: ch.step = (uint64_t)INT64_MAX + 1; break;
        case 2: ch.chunk_index = (uint32_t)INT32_MAX + 1; break;
        case 3: ch.stream_id_len = 0; break;
        case 4: ch.stream_id = "a\0b"; ch.stream_id_len = 3; break;
        case 5: ch.stream_id = "\xc3("; ch.stream_id_len = 2; break;
        case 6: victim->synthetic_id = (uint64_t)INT64_MAX + 1; break;
        default:
            victim->value = (dp_payload){.kind = DP_PAYLOAD_POINT, .point = nan_coord, .point_len = 2};
            break;
        }
        CU_ASSERT(encoders_agree(c, &ch, &r));
        CU_ASSERT_EQUAL(r, 1);
    }
    /* a record without a value */
    dp_codec_chunk ch;
    do
        random_chunk(&g, &st, &ch);
    while (ch.n_records < 1);
    st.recs[0].value = (dp_payload){.kind = DP_PAYLOAD_NONE};
    CU_ASSERT(encoders_agree(c, &ch, &r));
    CU_ASSERT_EQUAL(r, 1);
    dp_codec_destroy(c);
}

/* The hashed encoder feeds the checksum exactly what dp_codec_checksum_add
 * of each record does, chunk after chunk. */
static void test_hashed_encoding_checksum(void)
{
    static chunk_store st;
    dp_key key;
    dptest_key(&key, 33);
    dp_codec *c = new_codec(DP_CODEC_FRAMING_PLAIN);
    dp_drbg g;
    dp_drbg_init(&g, &key, "chunk-encode", 12, 11, "checksum");
    for (int release = 0; release < 20; release++) {
        dp_codec_checksum per_record, hashed;
        dp_codec_checksum_init(&per_record);
        dp_codec_checksum_init(&hashed);
        for (int chunk = 0; chunk < 5; chunk++) {
            dp_codec_chunk ch;
            random_chunk(&g, &st, &ch);
            for (size_t i = 0; i < ch.n_records; i++)
                CU_ASSERT(dp_codec_checksum_add(&per_record, &ch.records[i]) == DP_OK);
            dp_buf b;
            dp_buf_init(&b);
            char err[256];
            CU_ASSERT(dp_codec_encode_chunk_hashed(c, &ch, &b, &hashed, err, sizeof err) == DP_OK);
            dp_buf_free(&b);
        }
        uint8_t a[DP_CODEC_CHECKSUM_BYTES], h[DP_CODEC_CHECKSUM_BYTES];
        dp_codec_checksum_final(&per_record, a);
        dp_codec_checksum_final(&hashed, h);
        CU_ASSERT(memcmp(a, h, sizeof a) == 0);
    }
    dp_codec_destroy(c);
}

static const dptest_case CASES[] = {
    {"direct chunk encoder writes avro-c's bytes (random chunks, both framings)", test_random_chunks_byte_identical},
    {"direct chunk encoder refuses what avro-c's refuses, writing nothing", test_refusals_agree},
    {"hashed encoding adds the same checksum bytes as per-record adds", test_hashed_encoding_checksum},
    {NULL, NULL},
};

int main(void) { return dptest_run("codec_chunk_encode", CASES); }
