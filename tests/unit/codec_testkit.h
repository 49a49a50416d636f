/* codec_testkit.h — shared by test_codec.c and test_codec_malformed.c: a
 * counting allocator for avro-c (a size header per block, so "no growth"
 * and "no length-bomb allocation" are measured exactly, also under ASan),
 * codec helpers and sample messages of every type. */
#ifndef CODEC_TESTKIT_H
#define CODEC_TESTKIT_H

#include "dptest.h"

#include "codec/codec.h"
#include "core/dp_error.h"
#include "core/drbg.h"

#include <avro.h>
#include <jansson.h>
#include <malloc.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- counting allocator for avro-c ------------------------------------------ */

static size_t g_live;       /* bytes avro-c holds now */
static size_t g_peak;       /* high-water mark since the last reset_peak() */

static inline void *counting_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;   /* avro-c's osize is not always exact; the header is */
    size_t *h = ptr ? (size_t *)ptr - 2 : NULL;
    if (nsize == 0) {
        if (h) {
            g_live -= h[0];
            free(h);
        }
        return NULL;
    }
    size_t old = h ? h[0] : 0;
    size_t *n = realloc(h, nsize + 2 * sizeof(size_t));
    if (!n)
        return NULL;
    n[0] = nsize;
    g_live = g_live - old + nsize;
    if (g_live > g_peak)
        g_peak = g_live;
    return n + 2;
}

static inline void reset_peak(void) { g_peak = g_live; }

/* --- helpers --------------------------------------------------------------------- */

static inline dp_codec *new_codec(dp_codec_framing framing)
{
    dp_codec_options o = {.framing = framing};
    for (int t = 0; t < DP_CODEC_TYPE_COUNT; t++)
        o.schema_id[t] = 100 + (uint32_t)t * 7919u;   /* distinct, > 1 byte */
    dp_codec *c = NULL;
    char err[256] = "";
    int rc = dp_codec_create(&c, &o, err, sizeof err);
    if (rc != DP_OK)
        fprintf(stderr, "codec create: %s\n", err);
    CU_ASSERT_FATAL(rc == DP_OK && c != NULL);
    return c;
}

static const dp_codec_framing FRAMINGS[2] = {DP_CODEC_FRAMING_PLAIN, DP_CODEC_FRAMING_CONFLUENT};

static inline int str_eq(const char *a, size_t alen, const char *b, size_t blen)
{
    if (alen != blen)
        return 0;
    return alen == 0 || memcmp(a, b, alen) == 0;
}

static inline int payload_eq(const dp_payload *a, const dp_payload *b)
{
    if (a->kind != b->kind)
        return 0;
    switch (a->kind) {
    case DP_PAYLOAD_NONE: return 1;
    case DP_PAYLOAD_CATEGORY: return a->category == b->category;
    case DP_PAYLOAD_ROW:
        return a->row_len == b->row_len &&
               (a->row_len == 0 || memcmp(a->row, b->row, a->row_len * sizeof(int32_t)) == 0);
    case DP_PAYLOAD_POINT:
        /* bit patterns: -0.0 and subnormals must survive exactly */
        return a->point_len == b->point_len &&
               (a->point_len == 0 || memcmp(a->point, b->point, a->point_len * sizeof(double)) == 0);
    }
    return 0;
}

static inline int update_eq(const dp_update *a, const dp_update *b)
{
    return str_eq(a->stream_id, a->stream_id_len, b->stream_id, b->stream_id_len) &&
           a->step == b->step && a->kind == b->kind &&
           (a->entity_id == NULL) == (b->entity_id == NULL) &&
           (!a->entity_id || str_eq(a->entity_id, a->entity_id_len, b->entity_id, b->entity_id_len)) &&
           payload_eq(&a->payload, &b->payload) && a->has_event_time == b->has_event_time &&
           (!a->has_event_time || a->event_time_ms == b->event_time_ms);
}

static inline int double_same(double a, double b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

static inline int kv_eq(const dp_kv *a, size_t na, const dp_kv *b, size_t nb)
{
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i].key, b[i].key) != 0 || !double_same(a[i].value, b[i].value))
            return 0;
    return 1;
}

/* Encode with the caller-buffer API (checking the DP_ERANGE protocol and
 * that nothing is written past cap), then with the dp_buf API; both must
 * give the same bytes.  Returns a malloc'd copy. */
typedef int (*encode_fn)(dp_codec *c, const void *msg, void *buf, size_t cap, size_t *len,
                         char *errstr, size_t errstr_size);
typedef int (*encode_buf_fn)(dp_codec *c, const void *msg, dp_buf *out, char *errstr,
                             size_t errstr_size);

static inline uint8_t *encode_both(dp_codec *c, encode_fn enc, encode_buf_fn enc_buf, const void *msg,
                            size_t *len_out)
{
    char err[256] = "";
    size_t need = 0;
    int rc = enc(c, msg, NULL, 0, &need, err, sizeof err);
    CU_ASSERT_EQUAL(rc, DP_ERANGE);
    CU_ASSERT(need > 0);
    uint8_t *buf = malloc(need + 16);
    CU_ASSERT_FATAL(buf != NULL);
    /* Too small by one: refused, and the canary bytes after cap untouched. */
    memset(buf, 0xA5, need + 16);
    size_t len = 0;
    rc = enc(c, msg, buf, need - 1, &len, err, sizeof err);
    CU_ASSERT_EQUAL(rc, DP_ERANGE);
    CU_ASSERT_EQUAL(len, need);
    for (size_t i = need - 1; i < need + 16; i++)
        CU_ASSERT_EQUAL(buf[i], 0xA5);
    rc = enc(c, msg, buf, need + 16, &len, err, sizeof err);
    if (rc != DP_OK)
        fprintf(stderr, "encode: %s\n", err);
    CU_ASSERT_FATAL(rc == DP_OK);
    CU_ASSERT_EQUAL(len, need);
    for (size_t i = need; i < need + 16; i++)
        CU_ASSERT_EQUAL(buf[i], 0xA5);
    /* dp_buf variant appends after existing content. */
    dp_buf b;
    dp_buf_init(&b);
    dp_buf_put_bytes(&b, "xyz", 3);
    rc = enc_buf(c, msg, &b, err, sizeof err);
    CU_ASSERT_FATAL(rc == DP_OK);
    CU_ASSERT_EQUAL(b.len, 3 + need);
    CU_ASSERT(memcmp(b.data, "xyz", 3) == 0);
    CU_ASSERT(memcmp(b.data + 3, buf, need) == 0);
    dp_buf_free(&b);
    *len_out = need;
    return buf;
}

/* Adapters from the typed API to the generic shapes above. */
#define ADAPT(name, type)                                                                          \
    static inline int enc_##name(dp_codec *c, const void *m, void *buf, size_t cap, size_t *len,   \
                                 char *e, size_t n)                                                \
    {                                                                                              \
        return dp_codec_encode_##name(c, (const type *)m, buf, cap, len, e, n);                    \
    }                                                                                              \
    static inline int encb_##name(dp_codec *c, const void *m, dp_buf *out, char *e, size_t n)      \
    {                                                                                              \
        return dp_codec_encode_##name##_buf(c, (const type *)m, out, e, n);                        \
    }
ADAPT(update, dp_update)
ADAPT(chunk, dp_codec_chunk)
ADAPT(manifest, dp_codec_manifest)
ADAPT(budget, dp_budget_event)
ADAPT(dead_letter, dp_codec_dead_letter)
ADAPT(snapshot, dp_codec_snapshot)

/* Decode into a scratch struct of the type's kind; DP_OK or the error. */
static inline int decode_any(dp_codec *c, dp_codec_type t, const void *data, size_t len, char *err,
                      size_t errsz)
{
    dp_update u;
    dp_codec_chunk ch;
    dp_codec_manifest m;
    dp_budget_event e;
    dp_codec_dead_letter d;
    dp_codec_snapshot s;
    switch (t) {
    case DP_CODEC_UPDATE: return dp_codec_decode_update(c, data, len, &u, err, errsz);
    case DP_CODEC_SYNTHETIC_RECORD: return dp_codec_decode_chunk(c, data, len, &ch, err, errsz);
    case DP_CODEC_RELEASE_MANIFEST: return dp_codec_decode_manifest(c, data, len, &m, err, errsz);
    case DP_CODEC_BUDGET_EVENT: return dp_codec_decode_budget(c, data, len, &e, err, errsz);
    case DP_CODEC_DEAD_LETTER: return dp_codec_decode_dead_letter(c, data, len, &d, err, errsz);
    case DP_CODEC_SNAPSHOT: return dp_codec_decode_snapshot(c, data, len, &s, err, errsz);
    default: return DP_EINVAL;
    }
}

/* --- sample messages --------------------------------------------------------------- */

static const int32_t ROW_A[] = {0, 2, 1, INT32_MAX, INT32_MIN, -1};
static const double POINT_A[] = {0.25, -0.0, 4.9406564584124654e-324 /* subnormal */,
                                 1.7976931348623157e308, -123.5};

/* The backing text is longer than the id: the codec must not read past len. */
static const char STREAM_TEXT[] = "s\xc3\xa9nsor-7|not part of the id";
#define STREAM_LEN 9   /* "s", U+00E9 (2 bytes), "nsor-7" */

static inline dp_update sample_update(int variant)
{
    dp_update u;
    memset(&u, 0, sizeof u);
    u.stream_id = STREAM_TEXT;
    u.stream_id_len = STREAM_LEN;
    u.step = 1 + (uint64_t)variant * 1000003u;
    switch (variant % 7) {
    case 0:
        u.kind = DP_UPDATE_CLOSE_STEP;
        break;
    case 1:
        u.kind = DP_UPDATE_REPORT;
        u.entity_id = "user-17";
        u.entity_id_len = 7;
        u.payload.kind = DP_PAYLOAD_CATEGORY;
        u.payload.category = 1;
        u.has_event_time = 1;
        u.event_time_ms = 1700000000123;
        break;
    case 2:
        u.kind = DP_UPDATE_REPORT;
        u.entity_id = "u";
        u.entity_id_len = 1;
        u.payload.kind = DP_PAYLOAD_CATEGORY;
        u.payload.category = variant & 1 ? INT64_MAX : INT64_MIN;
        break;
    case 3:
        u.kind = DP_UPDATE_INSERT;
        u.payload.kind = DP_PAYLOAD_ROW;
        u.payload.row = ROW_A;
        u.payload.row_len = sizeof ROW_A / sizeof ROW_A[0];
        u.has_event_time = 1;
        u.event_time_ms = -5;
        break;
    case 4:
        u.kind = DP_UPDATE_DELETE;
        u.payload.kind = DP_PAYLOAD_ROW;   /* an empty row is representable */
        break;
    case 5:
        u.kind = DP_UPDATE_INSERT;
        u.entity_id = "\xe2\x82\xac-entity";   /* "€-entity" */
        u.entity_id_len = 10;
        u.payload.kind = DP_PAYLOAD_POINT;
        u.payload.point = POINT_A;
        u.payload.point_len = sizeof POINT_A / sizeof POINT_A[0];
        break;
    default:
        u.kind = DP_UPDATE_REPORT;
        u.payload.kind = DP_PAYLOAD_POINT;
        u.payload.point = POINT_A;
        u.payload.point_len = 1 + (size_t)variant % 4;
        u.step = (uint64_t)INT64_MAX;
        break;
    }
    return u;
}

static dp_synth_record RECORDS[64];

static inline void make_records(void)
{
    for (size_t i = 0; i < 64; i++) {
        dp_synth_record *r = &RECORDS[i];
        memset(r, 0, sizeof *r);
        r->synthetic_id = i * 0x9E3779B97F4A7C15ull >> 1;   /* spread over 63 bits */
        switch (i % 3) {
        case 0:
            r->value.kind = DP_PAYLOAD_CATEGORY;
            r->value.category = (int64_t)i - 30;
            break;
        case 1:
            r->value.kind = DP_PAYLOAD_ROW;
            r->value.row = ROW_A;
            r->value.row_len = i % 7;
            break;
        default:
            r->value.kind = DP_PAYLOAD_POINT;
            r->value.point = POINT_A;
            r->value.point_len = i % 6;
            break;
        }
    }
}

static const dp_kv DEBIAS[] = {{"n_pad", 41}, {"sigma2", 2000.5}, {"bins", 8}};
static const dp_kv NOISE[] = {{"sigma2", 123.25}, {"n_pad", 7}};
static const dp_kv ACCURACY[] = {{"beta", 0.05}, {"max_error", 17.125}};

static inline dp_codec_manifest sample_manifest(void)
{
    dp_codec_manifest m;
    memset(&m, 0, sizeof m);
    m.m.stream_id = STREAM_TEXT;
    m.m.stream_id_len = STREAM_LEN;
    m.m.step = 42;
    m.m.synthesizer = "window";
    m.m.mode = DP_RELEASE_DELTA;
    m.m.record_count = 1000000;
    m.m.clamped = 1;
    m.m.debias = DEBIAS;
    m.m.n_debias = 3;
    m.chunk_count = 977;
    for (int i = 0; i < DP_CODEC_CHECKSUM_BYTES; i++)
        m.checksum[i] = (uint8_t)(i * 37 + 1);
    return m;
}

static inline dp_budget_event sample_budget(int pure)
{
    dp_budget_event e;
    memset(&e, 0, sizeof e);
    e.stream_id = STREAM_TEXT;
    e.stream_id_len = STREAM_LEN;
    e.step = 12;
    e.mechanism = "window/discrete_gaussian";
    e.unit = "user-level over horizon T=52";
    if (pure) {
        e.status = DP_BUDGET_EXHAUSTED;
        e.neighbors = "add_remove";
        e.model = DP_PRIVACY_PURE;
        e.spent_step = 0.1;
        e.spent_total = 1.0;
        e.budget_total = 1.0;
        e.delta = NAN;
        e.eps_simple = NAN;
        e.eps_cks = 1.0;
    } else {
        e.status = DP_BUDGET_ACTIVE;
        e.neighbors = "replace";
        e.model = DP_PRIVACY_ZCDP;
        e.spent_step = 0.01;
        e.spent_total = 0.12;
        e.budget_total = 0.5;
        e.delta = 1e-6;
        e.eps_simple = 2.4712;
        e.eps_cks = 2.0138;
        e.noise = NOISE;
        e.n_noise = 2;
        e.accuracy = ACCURACY;
        e.n_accuracy = 2;
    }
    return e;
}

static const uint8_t RAW_BYTES[] = {0x00, 0xff, 0x01, 0x80, 0x00, 'x'};
static const uint8_t STATE_BYTES[] = {1, 2, 3, 0, 0, 255, 9};
static const uint8_t LEDGER_BYTES[] = {0xde, 0xad, 0xbe, 0xef};

static inline dp_codec_dead_letter sample_dead_letter(int variant)
{
    dp_codec_dead_letter d;
    memset(&d, 0, sizeof d);
    d.topic = "dpstream.updates";
    d.partition = variant;
    d.offset = variant == 2 ? -1 : 123456789012;
    d.reason = (dp_reject_reason)(1 + variant % 9);
    d.text = "step 3 already closed";
    d.raw = RAW_BYTES;
    d.raw_len = sizeof RAW_BYTES;
    if (variant == 1) {
        d.key = "";            /* present but empty */
        d.key_len = 0;
        d.raw = NULL;
        d.raw_len = 0;
    } else if (variant == 2) {
        d.key = RAW_BYTES;
        d.key_len = 3;
    }
    return d;
}

static inline dp_codec_snapshot sample_snapshot(int encrypted)
{
    dp_codec_snapshot s;
    memset(&s, 0, sizeof s);
    s.schema_version = DP_CODEC_SNAPSHOT_VERSION;
    s.stream_id = STREAM_TEXT;
    s.stream_id_len = STREAM_LEN;
    s.last_closed_step = encrypted ? 7 : 0;
    s.input_topic = "dpstream.updates";
    s.input_partition = 3;
    s.input_offset = 99887766;
    s.synthesizer = "cumulative";
    s.state = STATE_BYTES;
    s.state_len = sizeof STATE_BYTES;
    s.ledger = encrypted ? LEDGER_BYTES : NULL;
    s.ledger_len = encrypted ? sizeof LEDGER_BYTES : 0;
    s.chunk_index = encrypted ? 2 : 0;
    s.chunk_count = encrypted ? 3 : 1;
    s.encrypted = encrypted;
    if (encrypted)
        for (int i = 0; i < DP_CODEC_NONCE_BYTES; i++)
            s.nonce[i] = (uint8_t)(0xF0 ^ i);
    return s;
}


#endif
