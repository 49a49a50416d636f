/* test_codec_update_decode.c — the direct Update decoder
 * (dp_codec_decode_update[_into], codec_update_decode.c) against avro-c's
 * generic one (dpc_decode_update_generic), which it replaced:
 *   - random valid updates of every kind and payload, both framings;
 *   - every truncation and a trailing byte of a sample of them;
 *   - random byte flips, insertions and deletions;
 *   - random byte strings (with a plausible prefix, so they get past the
 *     first fields);
 *   - hand-made edges: overlong varints, 5/6-byte ints, 10/11-byte longs,
 *     INT64_MIN/MAX, negative lengths, negative array block counts with
 *     right and wrong byte sizes, empty strings, NUL and invalid UTF-8,
 *     non-finite coordinates, CLOSE_STEP with payload, enum/union indices
 *     out of range.
 * Each must get the same verdict (accepted / refused, and the same status)
 * and, when accepted, field-by-field the same dp_update (doubles by bit
 * pattern).  Also: 1000 updates decoded into 1000 stores stay intact
 * together (the store contract the processor relies on).
 * Teeth (each tried in codec_update_decode.c, then reverted; each made
 * this test fail): accepting a 6-byte int varint (edge "row with a 6-byte
 * int" and random edits), not checking a negative block count's byte size
 * (edges "row block -2 with byte size 3", "point block -1 with byte size
 * 7"), not refusing trailing bytes (edge "trailing byte", truncation
 * check), accepting enum index 4 (edge "kind 4 out of range", random
 * bytes), accepting non-finite coordinates (edges "point [NaN]",
 * "point [-inf]", random edits), reading doubles big-endian (random valid
 * updates: field-by-field comparison). */
#include "dptest.h"

#include "codec/codec.h"
#include "codec/codec_internal.h"
#include "core/dp_error.h"
#include "core/drbg.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static dp_codec *new_codec(dp_codec_framing framing)
{
    dp_codec_options o = {.framing = framing};
    for (int t = 0; t < DP_CODEC_TYPE_COUNT; t++)
        o.schema_id[t] = 0x00a1b2c3u + (uint32_t)t;
    dp_codec *c = NULL;
    char err[256] = "";
    CU_ASSERT_FATAL(dp_codec_create(&c, &o, err, sizeof err) == DP_OK);
    return c;
}

static int bytes_eq(const void *a, size_t an, const void *b, size_t bn)
{
    return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

static int same_update(const dp_update *a, const dp_update *b)
{
    if (!bytes_eq(a->stream_id, a->stream_id_len, b->stream_id, b->stream_id_len) || a->step != b->step ||
        a->kind != b->kind || (a->entity_id == NULL) != (b->entity_id == NULL) ||
        a->has_event_time != b->has_event_time || (a->has_event_time && a->event_time_ms != b->event_time_ms) ||
        a->payload.kind != b->payload.kind)
        return 0;
    if (a->entity_id && !bytes_eq(a->entity_id, a->entity_id_len, b->entity_id, b->entity_id_len))
        return 0;
    switch (a->payload.kind) {
    case DP_PAYLOAD_CATEGORY: return a->payload.category == b->payload.category;
    case DP_PAYLOAD_ROW:
        return bytes_eq(a->payload.row, a->payload.row_len * sizeof(int32_t), b->payload.row,
                        b->payload.row_len * sizeof(int32_t));
    case DP_PAYLOAD_POINT:
        return bytes_eq(a->payload.point, a->payload.point_len * sizeof(double), b->payload.point,
                        b->payload.point_len * sizeof(double));
    default: return 1;
    }
}

/* Both decoders on one input: 1 if they agree.  *accepted: the verdict. */
static int decoders_agree(dp_codec *c, const uint8_t *data, size_t len, int *accepted)
{
    dp_update g, f;
    char ge[256], fe[256];
    int grc = dpc_decode_update_generic(c, data, len, &g, ge, sizeof ge);
    int frc = dp_codec_decode_update(c, data, len, &f, fe, sizeof fe);
    *accepted = frc == DP_OK;
    int ok = grc == frc && (frc != DP_OK || same_update(&g, &f));
    if (!ok) {
        fprintf(stderr, "disagree on %zu bytes: generic %d (%s) vs direct %d (%s):", len, grc, grc ? ge : "ok", frc,
                frc ? fe : "ok");
        for (size_t i = 0; i < len && i < 48; i++)
            fprintf(stderr, " %02x", data[i]);
        fprintf(stderr, "\n");
    }
    if (frc != DP_OK && fe[0] == '\0')
        ok = 0;   /* a refusal must say why */
    return ok;
}

/* --- random valid updates ------------------------------------------------------- */

typedef struct upd_buf {
    int32_t ints[64];
    double  dbls[64];
    char    entity[24];
} upd_buf;

static int64_t pick_long(dp_drbg *g)
{
    static const int64_t edge[] = {0, 1, -1, 63, 64, -65, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
    if (dp_drbg_uniform(g, 4) == 0)
        return edge[dp_drbg_uniform(g, sizeof edge / sizeof edge[0])];
    int64_t v = (int64_t)(dp_drbg_u64(g) >> dp_drbg_uniform(g, 64));
    return dp_drbg_bit(g) ? v : -v;
}

static void random_update(dp_drbg *g, upd_buf *b, dp_update *u)
{
    static const char *const streams[] = {"win/a", "s", "p\xc3\xa4nel-\xe2\x82\xac", "tp-0"};
    memset(u, 0, sizeof *u);
    const char *s = streams[dp_drbg_uniform(g, 4)];
    u->stream_id = s;
    u->stream_id_len = strlen(s);
    u->step = 1 + ((uint64_t)pick_long(g) & (uint64_t)(INT64_MAX - 1));
    u->kind = (dp_update_kind)dp_drbg_uniform(g, 4);
    if (dp_drbg_bit(g)) {
        u->has_event_time = 1;
        u->event_time_ms = pick_long(g);
    }
    if (u->kind == DP_UPDATE_CLOSE_STEP)
        return;
    if (dp_drbg_uniform(g, 4) != 0) {
        snprintf(b->entity, sizeof b->entity, "u%llu", (unsigned long long)dp_drbg_uniform(g, 1000000));
        u->entity_id = b->entity;
        u->entity_id_len = strlen(b->entity);
    }
    size_t n = dp_drbg_uniform(g, 3) == 0 ? 0 : (size_t)dp_drbg_uniform(g, 65);
    switch (dp_drbg_uniform(g, 4)) {
    case 0: break;
    case 1: u->payload = (dp_payload){.kind = DP_PAYLOAD_CATEGORY, .category = pick_long(g)}; break;
    case 2:
        for (size_t i = 0; i < n; i++)
            b->ints[i] = (int32_t)(uint32_t)pick_long(g);
        u->payload = (dp_payload){.kind = DP_PAYLOAD_ROW, .row = b->ints, .row_len = n};
        break;
    default:
        for (size_t i = 0; i < n; i++) {
            uint64_t bits = dp_drbg_u64(g);
            memcpy(&b->dbls[i], &bits, sizeof(double));
            if (!isfinite(b->dbls[i]))
                b->dbls[i] = -0.0;
        }
        u->payload = (dp_payload){.kind = DP_PAYLOAD_POINT, .point = b->dbls, .point_len = n};
        break;
    }
}

static size_t encode(dp_codec *c, const dp_update *u, uint8_t *out, size_t cap)
{
    size_t len = 0;
    char err[256];
    int rc = dp_codec_encode_update(c, u, out, cap, &len, err, sizeof err);
    if (rc != DP_OK)
        fprintf(stderr, "encode: %s\n", err);
    CU_ASSERT_FATAL(rc == DP_OK);
    return len;
}

static void test_random_valid_and_mutated(void)
{
    dp_key key;
    dptest_key(&key, 41);
    for (int f = 0; f < 2; f++) {
        dp_codec *c = new_codec(f ? DP_CODEC_FRAMING_CONFLUENT : DP_CODEC_FRAMING_PLAIN);
        dp_drbg g;
        dp_drbg_init(&g, &key, "update-decode", 13, (uint64_t)f, "random updates");
        int bad = 0, accepted_valid = 0, mutated = 0, mutated_accepted = 0, acc;
        static uint8_t msg[4096], mut[4200];
        for (int k = 0; k < 20000; k++) {
            upd_buf b;
            dp_update u;
            random_update(&g, &b, &u);
            size_t len = encode(c, &u, msg, sizeof msg);
            dp_update d;
            char err[256];
            /* valid: accepted, equal to what was encoded */
            if (dp_codec_decode_update(c, msg, len, &d, err, sizeof err) != DP_OK || !same_update(&u, &d))
                bad++;
            else
                accepted_valid++;
            bad += !decoders_agree(c, msg, len, &acc);
            if (k % 20 == 0) {   /* every truncation and one extra byte */
                for (size_t cut = 0; cut < len; cut++) {
                    bad += !decoders_agree(c, msg, cut, &acc);
                    bad += acc;   /* a strict prefix is never a whole Update */
                }
                memcpy(mut, msg, len);
                mut[len] = (uint8_t)dp_drbg_u64(&g);
                bad += !decoders_agree(c, mut, len + 1, &acc);
                bad += acc;
            }
            /* 1-3 random edits: flip, insert or delete a byte */
            memcpy(mut, msg, len);
            size_t ml = len;
            for (int e = 1 + (int)dp_drbg_uniform(&g, 3); e > 0 && ml > 0; e--) {
                size_t at = (size_t)dp_drbg_uniform(&g, ml);
                uint8_t byte = (uint8_t)dp_drbg_u64(&g);
                switch (dp_drbg_uniform(&g, 3)) {
                case 0: mut[at] ^= byte ? byte : 1; break;
                case 1: memmove(mut + at + 1, mut + at, ml - at); mut[at] = byte; ml++; break;
                default: memmove(mut + at, mut + at + 1, ml - at - 1); ml--; break;
                }
            }
            bad += !decoders_agree(c, mut, ml, &acc);
            mutated++;
            mutated_accepted += acc;
        }
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT_EQUAL(accepted_valid, 20000);
        /* both verdicts occur among mutations, so agreement means something */
        CU_ASSERT(mutated_accepted > mutated / 50 && mutated_accepted < mutated);
        dp_codec_destroy(c);
    }
}

static void test_random_bytes(void)
{
    dp_key key;
    dptest_key(&key, 42);
    dp_codec *c = new_codec(DP_CODEC_FRAMING_PLAIN);
    dp_drbg g;
    dp_drbg_init(&g, &key, "update-decode", 13, 7, "random bytes");
    static uint8_t buf[256];
    int bad = 0, acc, accepted = 0;
    for (int k = 0; k < 200000; k++) {
        size_t len = (size_t)dp_drbg_uniform(&g, sizeof buf + 1);
        for (size_t i = 0; i < len; i++)
            buf[i] = (uint8_t)dp_drbg_u64(&g);
        if (dp_drbg_bit(&g)) {   /* plausible: stream "ab", then small bytes (union / enum / varint sized) */
            static const uint8_t small[] = {0, 1, 2, 3, 4, 6, 8, 0x61, 0x80};
            len = 3 + (size_t)dp_drbg_uniform(&g, 12);
            buf[0] = 4;
            buf[1] = 'a';
            buf[2] = 'b';
            for (size_t i = 3; i < len; i++)
                buf[i] = small[dp_drbg_uniform(&g, sizeof small)];
        }
        bad += !decoders_agree(c, buf, len, &acc);
        accepted += acc;
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(accepted > 0);
    dp_codec_destroy(c);
}

/* --- hand-made edges ----------------------------------------------------------- */

typedef struct edge {
    const char *what;
    uint8_t     bytes[40];
    size_t      len;
    int         accept;   /* the expected verdict */
} edge;

/* prefix: stream "ab" (04 61 62), then the given fields */
static const edge EDGES[] = {
    {"minimal REPORT", {4, 'a', 'b', 2, 0, 0, 0, 0}, 8, 1},
    {"step 0", {4, 'a', 'b', 0, 0, 0, 0, 0}, 8, 0},
    {"negative step", {4, 'a', 'b', 1, 0, 0, 0, 0}, 8, 0},
    {"step INT64_MAX (10-byte varint)", {4, 'a', 'b', 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0, 0}, 17, 1},
    {"11-byte long", {4, 'a', 'b', 0x82, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0, 0, 0, 0}, 18, 0},
    {"10-byte long with bits past 64", {4, 'a', 'b', 0x82, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02, 0, 0, 0, 0}, 17, 0},
    {"overlong step 1 (2 bytes)", {4, 'a', 'b', 0x82, 0x00, 0, 0, 0, 0}, 9, 1},
    {"kind 3 = CLOSE_STEP", {4, 'a', 'b', 2, 6, 0, 0, 0}, 8, 1},
    {"kind 4 out of range", {4, 'a', 'b', 2, 8, 0, 0, 0}, 8, 0},
    {"kind -1", {4, 'a', 'b', 2, 1, 0, 0, 0}, 8, 0},
    {"entity branch 2", {4, 'a', 'b', 2, 0, 4, 0, 0}, 8, 0},
    {"entity \"u\"", {4, 'a', 'b', 2, 0, 2, 2, 'u', 0, 0}, 10, 1},
    {"entity empty", {4, 'a', 'b', 2, 0, 2, 0, 0, 0}, 9, 0},
    {"entity with NUL", {4, 'a', 'b', 2, 0, 2, 4, 'u', 0, 0, 0}, 11, 0},
    {"entity invalid UTF-8", {4, 'a', 'b', 2, 0, 2, 4, 0xc3, 0x28, 0, 0}, 11, 0},
    {"entity negative length", {4, 'a', 'b', 2, 0, 2, 1, 0, 0}, 9, 0},
    {"stream empty", {0, 2, 0, 0, 0, 0}, 6, 0},
    {"stream length past the end", {40, 'a', 'b', 2, 0, 0, 0, 0}, 8, 0},
    {"Category payload", {4, 'a', 'b', 2, 0, 0, 2, 0x81, 0x01, 0}, 10, 1},
    {"payload branch 4", {4, 'a', 'b', 2, 0, 0, 8, 0, 0}, 9, 0},
    {"row [1,-1]", {4, 'a', 'b', 2, 0, 0, 4, 4, 2, 1, 0, 0}, 12, 1},
    {"row with a 5-byte int", {4, 'a', 'b', 2, 0, 0, 4, 2, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0, 0}, 15, 1},
    {"row with a 5-byte int past 32 bits", {4, 'a', 'b', 2, 0, 0, 4, 2, 0xfe, 0xff, 0xff, 0xff, 0x1f, 0, 0}, 15, 0},
    {"row with a 6-byte int", {4, 'a', 'b', 2, 0, 0, 4, 2, 0x82, 0x80, 0x80, 0x80, 0x80, 0x00, 0, 0}, 16, 0},
    {"row block -2 with byte size 2", {4, 'a', 'b', 2, 0, 0, 4, 3, 4, 2, 4, 0, 0}, 13, 1},
    {"row block -2 with byte size 3", {4, 'a', 'b', 2, 0, 0, 4, 3, 6, 2, 4, 0, 0}, 13, 0},
    {"row block -2 with negative byte size", {4, 'a', 'b', 2, 0, 0, 4, 3, 1, 2, 4, 0, 0}, 13, 0},
    {"row of two blocks", {4, 'a', 'b', 2, 0, 0, 4, 2, 2, 2, 4, 0, 0}, 13, 1},
    {"row count past the end", {4, 'a', 'b', 2, 0, 0, 4, 0x7e, 2, 0}, 10, 0},
    {"row count INT64_MIN", {4, 'a', 'b', 2, 0, 0, 4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0}, 18, 0},
    {"point [1.0]", {4, 'a', 'b', 2, 0, 0, 6, 2, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0}, 18, 1},
    {"point [NaN]", {4, 'a', 'b', 2, 0, 0, 6, 2, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f, 0, 0}, 18, 0},
    {"point [-inf]", {4, 'a', 'b', 2, 0, 0, 6, 2, 0, 0, 0, 0, 0, 0, 0xf0, 0xff, 0, 0}, 18, 0},
    {"point truncated double", {4, 'a', 'b', 2, 0, 0, 6, 2, 0, 0, 0, 0, 0, 0, 0xf0}, 15, 0},
    {"CLOSE_STEP with entity", {4, 'a', 'b', 2, 6, 2, 2, 'u', 0, 0}, 10, 0},
    {"CLOSE_STEP with Category", {4, 'a', 'b', 2, 6, 0, 2, 2, 0}, 9, 0},
    {"event_time INT64_MIN", {4, 'a', 'b', 2, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 18, 1},
    {"event_time branch 2", {4, 'a', 'b', 2, 0, 0, 0, 4, 0}, 9, 0},
    {"trailing byte", {4, 'a', 'b', 2, 0, 0, 0, 0, 0}, 9, 0},
    {"empty message", {0}, 0, 0},
    {"stream length INT64_MAX", {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 'a', 'b', 2, 0, 0, 0, 0}, 17, 0},
    {"entity length 2^62", {4, 'a', 'b', 2, 0, 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 'u', 0, 0}, 19, 0},
    {"row count 2^40", {4, 'a', 'b', 2, 0, 0, 4, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 2, 0, 0}, 16, 0},
    {"row block -1 with byte size INT64_MAX", {4, 'a', 'b', 2, 0, 0, 4, 1, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 2, 0, 0}, 21, 0},
    {"point block -1 with byte size 8", {4, 'a', 'b', 2, 0, 0, 6, 1, 16, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0}, 19, 1},
    {"point block -1 with byte size 7", {4, 'a', 'b', 2, 0, 0, 6, 1, 14, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0}, 19, 0},
    {"overlong kind and union indices (2 bytes each)", {4, 'a', 'b', 2, 0x80, 0x00, 0x82, 0x00, 2, 'u', 0x80, 0x00, 0x80, 0x00}, 14, 1},
    {"empty row", {4, 'a', 'b', 2, 0, 0, 4, 0, 0}, 9, 1},
    {"empty point", {4, 'a', 'b', 2, 0, 0, 6, 0, 0}, 9, 1},
    {"point [-0.0]", {4, 'a', 'b', 2, 0, 0, 6, 2, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0}, 18, 1},
    {"stream with a 2-byte UTF-8 char", {6, 'a', 0xc3, 0xa4, 2, 0, 0, 0, 0}, 9, 1},
    {"stream with a surrogate (ED A0 80)", {8, 'a', 0xed, 0xa0, 0x80, 2, 0, 0, 0, 0}, 10, 0},
    {"stream with an overlong NUL (C0 80)", {6, 'a', 0xc0, 0x80, 2, 0, 0, 0, 0}, 9, 0},
    {"stream with a NUL", {4, 'a', 0, 2, 0, 0, 0, 0}, 8, 0},
};

static void test_edges(void)
{
    dp_codec *c = new_codec(DP_CODEC_FRAMING_PLAIN);
    for (size_t i = 0; i < sizeof EDGES / sizeof EDGES[0]; i++) {
        int acc = -1;
        int agree = decoders_agree(c, EDGES[i].bytes, EDGES[i].len, &acc);
        if (!agree || acc != EDGES[i].accept)
            fprintf(stderr, "edge \"%s\": agree %d, accepted %d, expected %d\n", EDGES[i].what, agree, acc,
                    EDGES[i].accept);
        CU_ASSERT(agree);
        CU_ASSERT_EQUAL(acc, EDGES[i].accept);
    }
    dp_codec_destroy(c);
}

/* Confluent framing: magic 0 and the codec's Update schema id, big-endian,
 * exactly as dpc_unframe checks it for the generic path. */
static void test_confluent_framing(void)
{
    dp_codec *c = new_codec(DP_CODEC_FRAMING_CONFLUENT);
    const uint32_t id = 0x00a1b2c3u + DP_CODEC_UPDATE;
    static const uint8_t body[] = {4, 'a', 'b', 2, 0, 0, 0, 0};
    struct {
        const char *what;
        uint8_t     hdr[5];
        size_t      hdr_len, body_len;
        int         accept;
    } cases[] = {
        {"right header", {0, id >> 24, (id >> 16) & 0xff, (id >> 8) & 0xff, id & 0xff}, 5, sizeof body, 1},
        {"magic 1", {1, id >> 24, (id >> 16) & 0xff, (id >> 8) & 0xff, id & 0xff}, 5, sizeof body, 0},
        {"id + 1", {0, id >> 24, (id >> 16) & 0xff, (id >> 8) & 0xff, (id & 0xff) + 1}, 5, sizeof body, 0},
        {"id little-endian", {0, id & 0xff, (id >> 8) & 0xff, (id >> 16) & 0xff, id >> 24}, 5, sizeof body, 0},
        {"Snapshot's id", {0, 0, 0xa1, 0xb2, 0xc3 + DP_CODEC_SNAPSHOT}, 5, sizeof body, 0},
        {"header only", {0, id >> 24, (id >> 16) & 0xff, (id >> 8) & 0xff, id & 0xff}, 5, 0, 0},
        {"4-byte header", {0, id >> 24, (id >> 16) & 0xff, (id >> 8) & 0xff}, 4, 0, 0},
        {"no header (plain message)", {0}, 0, sizeof body, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t msg[64];
        memcpy(msg, cases[i].hdr, cases[i].hdr_len);
        memcpy(msg + cases[i].hdr_len, body, cases[i].body_len);
        int acc = -1;
        int agree = decoders_agree(c, msg, cases[i].hdr_len + cases[i].body_len, &acc);
        if (!agree || acc != cases[i].accept)
            fprintf(stderr, "confluent \"%s\": agree %d, accepted %d, expected %d\n", cases[i].what, agree, acc,
                    cases[i].accept);
        CU_ASSERT(agree);
        CU_ASSERT_EQUAL(acc, cases[i].accept);
    }
    dp_codec_destroy(c);
}

/* --- the store contract ---------------------------------------------------------- */

static void test_many_updates_held_at_once(void)
{
    enum { N = 1000 };
    dp_key key;
    dptest_key(&key, 43);
    dp_codec *c = new_codec(DP_CODEC_FRAMING_CONFLUENT);
    dp_drbg g;
    dp_drbg_init(&g, &key, "update-decode", 13, 9, "held");
    static upd_buf src[N];
    static dp_update orig[N], dec[N];
    static dp_update_store store[N];
    static uint8_t msgs[N][1024];
    size_t lens[N];
    for (int i = 0; i < N; i++) {
        random_update(&g, &src[i], &orig[i]);
        lens[i] = encode(c, &orig[i], msgs[i], sizeof msgs[i]);
    }
    int bad = 0;
    char err[256];
    for (int i = 0; i < N; i++)
        bad += dp_codec_decode_update_into(c, msgs[i], lens[i], &dec[i], &store[i], err, sizeof err) != DP_OK;
    dp_update scratch;   /* decodes through the codec's own store do not disturb them */
    for (int i = 0; i < N; i++)
        bad += dp_codec_decode_update(c, msgs[N - 1 - i], lens[N - 1 - i], &scratch, err, sizeof err) != DP_OK;
    for (int i = 0; i < N; i++)
        bad += !same_update(&orig[i], &dec[i]);
    CU_ASSERT_EQUAL(bad, 0);
    for (int i = 0; i < N; i++)
        dp_update_store_free(&store[i]);
    dp_codec_destroy(c);
}

static const dptest_case CASES[] = {
    {"direct = generic on 20 000 random updates, truncations and edits, both framings", test_random_valid_and_mutated},
    {"direct = generic on 200 000 random byte strings", test_random_bytes},
    {"hand-made edge cases: expected verdict, both decoders", test_edges},
    {"Confluent framing: magic byte and schema id", test_confluent_framing},
    {"1000 decoded updates held at once through their own stores", test_many_updates_held_at_once},
    {NULL, NULL},
};

int main(void) { return dptest_run("codec_update_decode", CASES); }
