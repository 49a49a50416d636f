/* test_codec.c — the Avro codec (processor/codec): the embedded schemas
 * equal schemas/<Name>.avsc, every message type round-trips in both framings
 * (every payload variant), the encoding matches the Avro specification
 * byte for byte on hand-built vectors, the release checksum is what
 * ReleaseManifest.avsc defines, malformed input of every kind (every
 * truncation, random garbage, mutations, crafted length bombs, wrong magic
 * byte, wrong schema id) is refused with an error and without large
 * allocations, and reused value objects do not grow over 10^5 messages.
 *
 * avro-c's allocations are counted through avro_set_allocator (a size
 * header per block), so "no growth" and "no length-bomb allocation" are
 * measured exactly, also under ASan where malloc statistics are not. */
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

static void *counting_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
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

static void reset_peak(void) { g_peak = g_live; }

/* --- helpers --------------------------------------------------------------------- */

static dp_codec *new_codec(dp_codec_framing framing)
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

static int str_eq(const char *a, size_t alen, const char *b, size_t blen)
{
    if (alen != blen)
        return 0;
    return alen == 0 || memcmp(a, b, alen) == 0;
}

static int payload_eq(const dp_payload *a, const dp_payload *b)
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

static int update_eq(const dp_update *a, const dp_update *b)
{
    return str_eq(a->stream_id, a->stream_id_len, b->stream_id, b->stream_id_len) &&
           a->step == b->step && a->kind == b->kind &&
           (a->entity_id == NULL) == (b->entity_id == NULL) &&
           (!a->entity_id || str_eq(a->entity_id, a->entity_id_len, b->entity_id, b->entity_id_len)) &&
           payload_eq(&a->payload, &b->payload) && a->has_event_time == b->has_event_time &&
           (!a->has_event_time || a->event_time_ms == b->event_time_ms);
}

static int double_same(double a, double b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

static int kv_eq(const dp_kv *a, size_t na, const dp_kv *b, size_t nb)
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

static uint8_t *encode_both(dp_codec *c, encode_fn enc, encode_buf_fn enc_buf, const void *msg,
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
    static int enc_##name(dp_codec *c, const void *m, void *buf, size_t cap, size_t *len,          \
                          char *e, size_t n)                                                       \
    {                                                                                              \
        return dp_codec_encode_##name(c, (const type *)m, buf, cap, len, e, n);                    \
    }                                                                                              \
    static int encb_##name(dp_codec *c, const void *m, dp_buf *out, char *e, size_t n)             \
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
static int decode_any(dp_codec *c, dp_codec_type t, const void *data, size_t len, char *err,
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

static dp_update sample_update(int variant)
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

static void make_records(void)
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

static dp_codec_manifest sample_manifest(void)
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

static dp_budget_event sample_budget(int pure)
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

static dp_codec_dead_letter sample_dead_letter(int variant)
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

static dp_codec_snapshot sample_snapshot(int encrypted)
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

/* --- schemas ---------------------------------------------------------------------------- */

static char *read_schema_file(const char *name, size_t *len)
{
    const char *root = getenv("DPSTREAM_SOURCE_DIR");
    char path[1024];
    if (root && *root) {
        snprintf(path, sizeof path, "%s/schemas/%s", root, name);
    } else {
        /* __FILE__ is tests/unit/test_codec.c under the source root */
        snprintf(path, sizeof path, "%s", __FILE__);
        char *slash = strrchr(path, '/');
        CU_ASSERT_FATAL(slash != NULL);
        snprintf(slash, sizeof path - (size_t)(slash - path), "/../../schemas/%s", name);
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        fprintf(stderr, "cannot open %s\n", path);
    CU_ASSERT_FATAL(f != NULL);
    char *buf = malloc(1 << 16);
    CU_ASSERT_FATAL(buf != NULL);
    *len = fread(buf, 1, (1 << 16) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

/* Every record schema and every field carries a "doc". */
static void check_docs(json_t *t, const char *where, int *n_fields)
{
    if (json_is_array(t)) {
        size_t i;
        json_t *b;
        json_array_foreach(t, i, b) check_docs(b, where, n_fields);
        return;
    }
    if (!json_is_object(t))
        return;
    const char *type = json_string_value(json_object_get(t, "type"));
    if (type && strcmp(type, "record") == 0) {
        if (!json_is_string(json_object_get(t, "doc")))
            fprintf(stderr, "%s: record without doc\n", where);
        CU_ASSERT(json_is_string(json_object_get(t, "doc")));
        size_t i;
        json_t *fld;
        json_array_foreach(json_object_get(t, "fields"), i, fld)
        {
            (*n_fields)++;
            if (!json_is_string(json_object_get(fld, "doc")))
                fprintf(stderr, "%s: field %s without doc\n", where,
                        json_string_value(json_object_get(fld, "name")));
            CU_ASSERT(json_is_string(json_object_get(fld, "doc")));
            check_docs(json_object_get(fld, "type"), where, n_fields);
        }
    } else if (type && strcmp(type, "array") == 0) {
        check_docs(json_object_get(t, "items"), where, n_fields);
    } else if (json_is_object(json_object_get(t, "type")) || json_is_array(json_object_get(t, "type"))) {
        check_docs(json_object_get(t, "type"), where, n_fields);
    }
}

static void test_schemas_match_files(void)
{
    for (int t = 0; t < DP_CODEC_TYPE_COUNT; t++) {
        size_t len;
        char *file = read_schema_file(dp_codec_schema_file((dp_codec_type)t), &len);
        const char *emb = dp_codec_schema_json((dp_codec_type)t);
        CU_ASSERT_FATAL(emb != NULL);
        int same = strlen(emb) == len && memcmp(emb, file, len) == 0;
        if (!same)
            fprintf(stderr, "embedded %s differs from schemas/%s: run python3 schemas/embed.py\n",
                    dp_codec_type_name((dp_codec_type)t), dp_codec_schema_file((dp_codec_type)t));
        CU_ASSERT(same);
        json_error_t jerr;
        json_t *j = json_loadb(file, len, 0, &jerr);
        CU_ASSERT_FATAL(j != NULL);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "name")),
                               dp_codec_type_name((dp_codec_type)t));
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "namespace")), "org.dpstream.v1");
        int n_fields = 0;
        check_docs(j, dp_codec_type_name((dp_codec_type)t), &n_fields);
        CU_ASSERT(n_fields >= 6);
        json_decref(j);
        free(file);
    }
    CU_ASSERT_PTR_NULL(dp_codec_schema_json(DP_CODEC_TYPE_COUNT));
}

/* --- round trips -------------------------------------------------------------------------- */

static void test_update_round_trip(void)
{
    for (int f = 0; f < 2; f++) {
        dp_codec *c = new_codec(FRAMINGS[f]);
        for (int v = 0; v < 21; v++) {
            dp_update u = sample_update(v);
            size_t len;
            uint8_t *enc = encode_both(c, enc_update, encb_update, &u, &len);
            if (FRAMINGS[f] == DP_CODEC_FRAMING_CONFLUENT) {
                CU_ASSERT_EQUAL(enc[0], 0);
                uint32_t id = (uint32_t)enc[1] << 24 | (uint32_t)enc[2] << 16 | (uint32_t)enc[3] << 8 | enc[4];
                CU_ASSERT_EQUAL(id, 100u);
            }
            dp_update d;
            char err[256] = "";
            int rc = dp_codec_decode_update(c, enc, len, &d, err, sizeof err);
            if (rc != DP_OK)
                fprintf(stderr, "decode variant %d: %s\n", v, err);
            CU_ASSERT_FATAL(rc == DP_OK);
            CU_ASSERT(update_eq(&u, &d));
            /* Decoded -> encoded again gives the same bytes. */
            size_t len2;
            uint8_t *enc2 = encode_both(c, enc_update, encb_update, &d, &len2);
            CU_ASSERT(len2 == len && memcmp(enc, enc2, len) == 0);
            free(enc);
            free(enc2);
        }
        dp_codec_destroy(c);
    }
}

/* Hand-built from the Avro 1.11 specification (zigzag varints, unions as
 * branch index + value, doubles little-endian, arrays as blocks). */
static void test_update_golden_bytes(void)
{
    static const uint8_t expect_cat[] = {
        0x02, 's',          /* stream "s" */
        0x02,               /* step 1 */
        0x00,               /* kind REPORT */
        0x02, 0x02, 'u',    /* entity: branch 1, "u" */
        0x02, 0x06,         /* payload: branch 1 (Category), value 3 */
        0x00,               /* event_time: null */
    };
    static const uint8_t expect_point[] = {
        0x02, 's', 0x04,    /* stream "s", step 2 */
        0x04,               /* kind DELETE */
        0x00,               /* entity null */
        0x06,               /* payload branch 3 (Point) */
        0x02,               /* one item */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0x3f,   /* 0.5 */
        0x00,               /* end of array */
        0x02, 0x80, 0x01,   /* event_time: branch 1, 64 */
    };
    static const double half = 0.5;
    dp_update cat = {.stream_id = "s", .stream_id_len = 1, .step = 1, .kind = DP_UPDATE_REPORT,
                     .entity_id = "u", .entity_id_len = 1,
                     .payload = {.kind = DP_PAYLOAD_CATEGORY, .category = 3}};
    dp_update pt = {.stream_id = "s", .stream_id_len = 1, .step = 2, .kind = DP_UPDATE_DELETE,
                    .payload = {.kind = DP_PAYLOAD_POINT, .point = &half, .point_len = 1},
                    .has_event_time = 1, .event_time_ms = 64};
    for (int f = 0; f < 2; f++) {
        dp_codec *c = new_codec(FRAMINGS[f]);
        size_t h = FRAMINGS[f] == DP_CODEC_FRAMING_CONFLUENT ? 5 : 0;
        uint8_t buf[64];
        size_t len;
        char err[256];
        CU_ASSERT_FATAL(dp_codec_encode_update(c, &cat, buf, sizeof buf, &len, err, sizeof err) == DP_OK);
        CU_ASSERT_EQUAL(len, h + sizeof expect_cat);
        CU_ASSERT(memcmp(buf + h, expect_cat, sizeof expect_cat) == 0);
        if (h) {
            static const uint8_t hdr[] = {0x00, 0x00, 0x00, 0x00, 100};
            CU_ASSERT(memcmp(buf, hdr, 5) == 0);
        }
        CU_ASSERT_FATAL(dp_codec_encode_update(c, &pt, buf, sizeof buf, &len, err, sizeof err) == DP_OK);
        CU_ASSERT_EQUAL(len, h + sizeof expect_point);
        CU_ASSERT(memcmp(buf + h, expect_point, sizeof expect_point) == 0);
        dp_codec_destroy(c);
    }
}

/* A spec-valid encoding avro-c itself never writes: an array block with a
 * negative count followed by its byte size.  Decoded like the plain form;
 * a wrong byte size is refused. */
static void test_negative_block_count(void)
{
    uint8_t msg[] = {
        0x02, 's', 0x02, 0x02 /* INSERT */, 0x00 /* no entity */,
        0x04,             /* payload branch 2 (CategoricalRow) */
        0x03, 0x04,       /* block count -2, block size 2 bytes */
        0x02, 0x08,       /* 1, 4 */
        0x00,             /* end */
        0x00,             /* no event time */
    };
    dp_codec *c = new_codec(DP_CODEC_FRAMING_PLAIN);
    dp_update d;
    char err[256];
    CU_ASSERT_FATAL(dp_codec_decode_update(c, msg, sizeof msg, &d, err, sizeof err) == DP_OK);
    CU_ASSERT_EQUAL(d.payload.kind, DP_PAYLOAD_ROW);
    CU_ASSERT_EQUAL(d.payload.row_len, 2);
    CU_ASSERT(d.payload.row_len == 2 && d.payload.row[0] == 1 && d.payload.row[1] == 4);
    msg[7] = 0x06;   /* claim 3 bytes */
    CU_ASSERT_EQUAL(dp_codec_decode_update(c, msg, sizeof msg, &d, err, sizeof err), DP_EINVAL);
    dp_codec_destroy(c);
}

static void check_chunk_eq(const dp_codec_chunk *a, const dp_codec_chunk *b)
{
    CU_ASSERT(str_eq(a->stream_id, a->stream_id_len, b->stream_id, b->stream_id_len));
    CU_ASSERT_EQUAL(a->step, b->step);
    CU_ASSERT_EQUAL(a->chunk_index, b->chunk_index);
    CU_ASSERT_FATAL(a->n_records == b->n_records);
    for (size_t i = 0; i < a->n_records; i++) {
        CU_ASSERT_EQUAL(a->records[i].synthetic_id, b->records[i].synthetic_id);
        CU_ASSERT(payload_eq(&a->records[i].value, &b->records[i].value));
    }
}

/* Length of the Avro long varint of v. */
static size_t varint_len(int64_t v)
{
    uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    size_t n = 1;
    while (u >= 0x80) {
        u >>= 7;
        n++;
    }
    return n;
}

static void test_chunk_round_trip_and_checksum(void)
{
    make_records();
    for (int f = 0; f < 2; f++) {
        dp_codec *c = new_codec(FRAMINGS[f]);
        size_t h = FRAMINGS[f] == DP_CODEC_FRAMING_CONFLUENT ? 5 : 0;
        /* Header length: an empty chunk is header ‖ 0x00. */
        dp_codec_chunk empty = {.stream_id = STREAM_TEXT, .stream_id_len = STREAM_LEN, .step = 5,
                                .chunk_index = 0, .records = NULL, .n_records = 0};
        size_t elen;
        uint8_t *eenc = encode_both(c, enc_chunk, encb_chunk, &empty, &elen);
        size_t prefix = elen - h - 1;
        dp_codec_chunk dec;
        char err[256];
        CU_ASSERT_FATAL(dp_codec_decode_chunk(c, eenc, elen, &dec, err, sizeof err) == DP_OK);
        check_chunk_eq(&empty, &dec);
        free(eenc);

        /* The release = 64 records, split into chunks of 1, 20 and 43. */
        static const size_t splits[][2] = {{0, 1}, {1, 21}, {21, 64}};
        crypto_generichash_state bytes_hash;
        crypto_generichash_init(&bytes_hash, NULL, 0, 32);
        for (int k = 0; k < 3; k++) {
            size_t lo = splits[k][0], n = splits[k][1] - lo;
            dp_codec_chunk ch = {.stream_id = STREAM_TEXT, .stream_id_len = STREAM_LEN, .step = 5,
                                 .chunk_index = (uint32_t)k, .records = RECORDS + lo, .n_records = n};
            size_t len;
            uint8_t *enc = encode_both(c, enc_chunk, encb_chunk, &ch, &len);
            CU_ASSERT_FATAL(dp_codec_decode_chunk(c, enc, len, &dec, err, sizeof err) == DP_OK);
            check_chunk_eq(&ch, &dec);
            /* The canonical record bytes are the array body of the chunk:
             * after header and block count, before the final 0x00. */
            size_t start = h + prefix + varint_len((int64_t)n);
            CU_ASSERT_FATAL(start < len);
            crypto_generichash_update(&bytes_hash, enc + start, len - 1 - start);
            free(enc);
        }
        uint8_t from_bytes[32], from_api[32];
        crypto_generichash_final(&bytes_hash, from_bytes, 32);
        dp_codec_checksum ck;
        dp_codec_checksum_init(&ck);
        for (size_t i = 0; i < 64; i++)
            CU_ASSERT(dp_codec_checksum_add(&ck, &RECORDS[i]) == DP_OK);
        dp_codec_checksum_final(&ck, from_api);
        CU_ASSERT(memcmp(from_bytes, from_api, 32) == 0);

        /* The checksum sees every record: changing one coordinate's last
         * bit, or the order of two records, changes it. */
        dp_synth_record rec2[2] = {RECORDS[2], RECORDS[1]};
        uint8_t swapped[32], base[32];
        dp_codec_checksum_init(&ck);
        dp_codec_checksum_add(&ck, &RECORDS[1]);
        dp_codec_checksum_add(&ck, &RECORDS[2]);
        dp_codec_checksum_final(&ck, base);
        dp_codec_checksum_init(&ck);
        dp_codec_checksum_add(&ck, &rec2[0]);
        dp_codec_checksum_add(&ck, &rec2[1]);
        dp_codec_checksum_final(&ck, swapped);
        CU_ASSERT(memcmp(base, swapped, 32) != 0);
        /* Empty release: BLAKE2b-256 of the empty string. */
        uint8_t empty_sum[32], empty_ref[32];
        dp_codec_checksum_init(&ck);
        dp_codec_checksum_final(&ck, empty_sum);
        crypto_generichash(empty_ref, 32, NULL, 0, NULL, 0);
        CU_ASSERT(memcmp(empty_sum, empty_ref, 32) == 0);
        dp_codec_destroy(c);
    }
}

static void test_manifest_budget_dead_letter_snapshot_round_trip(void)
{
    for (int f = 0; f < 2; f++) {
        dp_codec *c = new_codec(FRAMINGS[f]);
        char err[256];
        size_t len;
        uint8_t *enc;

        dp_codec_manifest m = sample_manifest(), md;
        enc = encode_both(c, enc_manifest, encb_manifest, &m, &len);
        CU_ASSERT_FATAL(dp_codec_decode_manifest(c, enc, len, &md, err, sizeof err) == DP_OK);
        CU_ASSERT(str_eq(m.m.stream_id, m.m.stream_id_len, md.m.stream_id, md.m.stream_id_len));
        CU_ASSERT_EQUAL(md.m.step, 42);
        CU_ASSERT_STRING_EQUAL(md.m.synthesizer, "window");
        CU_ASSERT_EQUAL(md.m.mode, DP_RELEASE_DELTA);
        CU_ASSERT_EQUAL(md.m.record_count, 1000000);
        CU_ASSERT_EQUAL(md.m.clamped, 1);
        CU_ASSERT(kv_eq(m.m.debias, m.m.n_debias, md.m.debias, md.m.n_debias));
        CU_ASSERT_EQUAL(md.chunk_count, 977);
        CU_ASSERT(memcmp(m.checksum, md.checksum, 32) == 0);
        free(enc);
        /* FULL, unclamped, no debias entries */
        m.m.mode = DP_RELEASE_FULL;
        m.m.clamped = 0;
        m.m.n_debias = 0;
        m.chunk_count = 0;
        enc = encode_both(c, enc_manifest, encb_manifest, &m, &len);
        CU_ASSERT_FATAL(dp_codec_decode_manifest(c, enc, len, &md, err, sizeof err) == DP_OK);
        CU_ASSERT(md.m.mode == DP_RELEASE_FULL && md.m.clamped == 0 && md.m.n_debias == 0 &&
                  md.chunk_count == 0);
        free(enc);
        /* NONE (no dataset yet) holds no records: round-trips with 0, refused with any */
        m.m.mode = DP_RELEASE_NONE;
        m.m.record_count = 0;
        enc = encode_both(c, enc_manifest, encb_manifest, &m, &len);
        CU_ASSERT_FATAL(dp_codec_decode_manifest(c, enc, len, &md, err, sizeof err) == DP_OK);
        CU_ASSERT(md.m.mode == DP_RELEASE_NONE && md.m.record_count == 0);
        free(enc);
        m.m.record_count = 3;
        dp_buf nb;
        dp_buf_init(&nb);
        CU_ASSERT_EQUAL(dp_codec_encode_manifest_buf(c, &m, &nb, err, sizeof err), DP_EINVAL);
        CU_ASSERT(strstr(err, "NONE") != NULL);
        dp_buf_free(&nb);

        for (int pure = 0; pure < 2; pure++) {
            dp_budget_event e = sample_budget(pure), ed;
            enc = encode_both(c, enc_budget, encb_budget, &e, &len);
            CU_ASSERT_FATAL(dp_codec_decode_budget(c, enc, len, &ed, err, sizeof err) == DP_OK);
            CU_ASSERT(str_eq(e.stream_id, e.stream_id_len, ed.stream_id, ed.stream_id_len));
            CU_ASSERT_EQUAL(ed.step, e.step);
            CU_ASSERT_EQUAL(ed.status, e.status);
            CU_ASSERT_STRING_EQUAL(ed.mechanism, e.mechanism);
            CU_ASSERT_STRING_EQUAL(ed.unit, e.unit);
            CU_ASSERT_STRING_EQUAL(ed.neighbors, e.neighbors);
            CU_ASSERT_EQUAL(ed.model, e.model);
            CU_ASSERT(double_same(ed.spent_step, e.spent_step));
            CU_ASSERT(double_same(ed.spent_total, e.spent_total));
            CU_ASSERT(double_same(ed.budget_total, e.budget_total));
            CU_ASSERT(double_same(ed.delta, e.delta));
            CU_ASSERT(double_same(ed.eps_simple, e.eps_simple));
            CU_ASSERT(double_same(ed.eps_cks, e.eps_cks));
            CU_ASSERT(kv_eq(e.noise, e.n_noise, ed.noise, ed.n_noise));
            CU_ASSERT(kv_eq(e.accuracy, e.n_accuracy, ed.accuracy, ed.n_accuracy));
            free(enc);
        }

        for (int v = 0; v < 9; v++) {
            dp_codec_dead_letter d = sample_dead_letter(v), dd;
            enc = encode_both(c, enc_dead_letter, encb_dead_letter, &d, &len);
            CU_ASSERT_FATAL(dp_codec_decode_dead_letter(c, enc, len, &dd, err, sizeof err) == DP_OK);
            CU_ASSERT_STRING_EQUAL(dd.topic, d.topic);
            CU_ASSERT_EQUAL(dd.partition, d.partition);
            CU_ASSERT_EQUAL(dd.offset, d.offset);
            CU_ASSERT_EQUAL(dd.reason, d.reason);
            CU_ASSERT_STRING_EQUAL(dd.text, d.text);
            CU_ASSERT((dd.key == NULL) == (d.key == NULL));
            CU_ASSERT(dd.key_len == d.key_len && (d.key_len == 0 || memcmp(dd.key, d.key, d.key_len) == 0));
            CU_ASSERT(dd.raw_len == d.raw_len && (d.raw_len == 0 || memcmp(dd.raw, d.raw, d.raw_len) == 0));
            free(enc);
        }
        /* Ill-formed UTF-8 in the reason text is replaced, not refused. */
        dp_codec_dead_letter bad = sample_dead_letter(0), bd;
        bad.text = "id \xff\xc3(\xed\xa0\x80 ok \xe2\x82\xac";
        enc = encode_both(c, enc_dead_letter, encb_dead_letter, &bad, &len);
        CU_ASSERT_FATAL(dp_codec_decode_dead_letter(c, enc, len, &bd, err, sizeof err) == DP_OK);
        CU_ASSERT_STRING_EQUAL(bd.text, "id \xef\xbf\xbd\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                                        " ok \xe2\x82\xac");
        free(enc);

        for (int encr = 0; encr < 2; encr++) {
            dp_codec_snapshot s = sample_snapshot(encr), sd;
            enc = encode_both(c, enc_snapshot, encb_snapshot, &s, &len);
            CU_ASSERT_FATAL(dp_codec_decode_snapshot(c, enc, len, &sd, err, sizeof err) == DP_OK);
            CU_ASSERT_EQUAL(sd.schema_version, DP_CODEC_SNAPSHOT_VERSION);
            CU_ASSERT(str_eq(s.stream_id, s.stream_id_len, sd.stream_id, sd.stream_id_len));
            CU_ASSERT_EQUAL(sd.last_closed_step, s.last_closed_step);
            CU_ASSERT_STRING_EQUAL(sd.input_topic, s.input_topic);
            CU_ASSERT_EQUAL(sd.input_partition, s.input_partition);
            CU_ASSERT_EQUAL(sd.input_offset, s.input_offset);
            CU_ASSERT_STRING_EQUAL(sd.synthesizer, s.synthesizer);
            CU_ASSERT(sd.state_len == s.state_len && memcmp(sd.state, s.state, s.state_len) == 0);
            CU_ASSERT(sd.ledger_len == s.ledger_len &&
                      (s.ledger_len == 0 || memcmp(sd.ledger, s.ledger, s.ledger_len) == 0));
            CU_ASSERT_EQUAL(sd.chunk_index, s.chunk_index);
            CU_ASSERT_EQUAL(sd.chunk_count, s.chunk_count);
            CU_ASSERT_EQUAL(sd.encrypted, s.encrypted);
            CU_ASSERT(!encr || memcmp(sd.nonce, s.nonce, DP_CODEC_NONCE_BYTES) == 0);
            free(enc);
        }
        dp_codec_destroy(c);
    }
}

/* Decoding one type does not invalidate the borrowed result of another. */
static void test_decodes_of_different_types_coexist(void)
{
    dp_codec *c = new_codec(DP_CODEC_FRAMING_PLAIN);
    char err[256];
    dp_update u = sample_update(5), ud, ud2;
    dp_budget_event e = sample_budget(0), ed;
    dp_buf bu, be;
    dp_buf_init(&bu);
    dp_buf_init(&be);
    CU_ASSERT_FATAL(dp_codec_encode_update_buf(c, &u, &bu, err, sizeof err) == DP_OK);
    CU_ASSERT_FATAL(dp_codec_encode_budget_buf(c, &e, &be, err, sizeof err) == DP_OK);
    CU_ASSERT_FATAL(dp_codec_decode_update(c, bu.data, bu.len, &ud, err, sizeof err) == DP_OK);
    CU_ASSERT_FATAL(dp_codec_decode_budget(c, be.data, be.len, &ed, err, sizeof err) == DP_OK);
    CU_ASSERT(update_eq(&u, &ud));
    CU_ASSERT_STRING_EQUAL(ed.mechanism, e.mechanism);
    /* ...while a second decode of the same type replaces the first. */
    dp_update u2 = sample_update(3);
    dp_buf_free(&bu);
    dp_buf_init(&bu);
    CU_ASSERT_FATAL(dp_codec_encode_update_buf(c, &u2, &bu, err, sizeof err) == DP_OK);
    CU_ASSERT_FATAL(dp_codec_decode_update(c, bu.data, bu.len, &ud2, err, sizeof err) == DP_OK);
    CU_ASSERT(update_eq(&u2, &ud2));
    dp_buf_free(&bu);
    dp_buf_free(&be);
    dp_codec_destroy(c);
}

/* --- refusals on encode ----------------------------------------------------------------- */

static void test_encode_refusals(void)
{
    dp_codec *c = new_codec(DP_CODEC_FRAMING_PLAIN);
    uint8_t buf[4096];
    size_t len;
    char err[256];
    static const double bad_pt[] = {0.5, NAN};
    static const double inf_pt[] = {INFINITY};

    dp_update u = sample_update(1);
    u.stream_id_len = 0;
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    u = sample_update(1);
    u.stream_id = "a\0b";
    u.stream_id_len = 3;
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    u = sample_update(1);
    u.stream_id = "\xc0\xaf";   /* overlong '/' */
    u.stream_id_len = 2;
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    u = sample_update(1);
    u.step = 0;
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    u.step = (uint64_t)INT64_MAX + 1;
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    u = sample_update(1);
    u.kind = DP_UPDATE_CLOSE_STEP;   /* with entity and payload */
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    u = sample_update(1);
    u.entity_id_len = 0;             /* present but empty */
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    u = sample_update(5);
    u.payload.point = bad_pt;
    u.payload.point_len = 2;
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    u.payload.point = inf_pt;
    u.payload.point_len = 1;
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);

    dp_synth_record r = {.synthetic_id = 1, .value = {.kind = DP_PAYLOAD_NONE}};
    dp_codec_chunk ch = {.stream_id = "s", .stream_id_len = 1, .step = 1, .records = &r, .n_records = 1};
    CU_ASSERT_EQUAL(dp_codec_encode_chunk(c, &ch, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    dp_codec_checksum ck;
    dp_codec_checksum_init(&ck);
    CU_ASSERT_EQUAL(dp_codec_checksum_add(&ck, &r), DP_EINVAL);
    r.value.kind = DP_PAYLOAD_CATEGORY;
    r.synthetic_id = (uint64_t)INT64_MAX + 1;
    CU_ASSERT_EQUAL(dp_codec_encode_chunk(c, &ch, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_codec_checksum_add(&ck, &r), DP_EINVAL);

    dp_codec_manifest m = sample_manifest();
    m.m.synthesizer = "";
    CU_ASSERT_EQUAL(dp_codec_encode_manifest(c, &m, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    m = sample_manifest();
    m.chunk_count = (uint32_t)INT32_MAX + 1;
    CU_ASSERT_EQUAL(dp_codec_encode_manifest(c, &m, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);

    dp_budget_event e = sample_budget(0);
    e.neighbors = "swap";
    CU_ASSERT_EQUAL(dp_codec_encode_budget(c, &e, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    e = sample_budget(0);
    e.model = (dp_privacy_model)0;
    CU_ASSERT_EQUAL(dp_codec_encode_budget(c, &e, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    e = sample_budget(0);
    dp_kv nameless[] = {{NULL, 1.0}};
    e.noise = nameless;
    e.n_noise = 1;
    CU_ASSERT_EQUAL(dp_codec_encode_budget(c, &e, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);

    dp_codec_dead_letter d = sample_dead_letter(0);
    d.reason = DP_REJECT_NONE;
    CU_ASSERT_EQUAL(dp_codec_encode_dead_letter(c, &d, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);

    dp_codec_snapshot s = sample_snapshot(1);
    s.chunk_index = 3;
    CU_ASSERT_EQUAL(dp_codec_encode_snapshot(c, &s, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    s = sample_snapshot(0);
    s.schema_version = 2;
    CU_ASSERT_EQUAL(dp_codec_encode_snapshot(c, &s, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    s = sample_snapshot(0);
    s.input_offset = -1;
    CU_ASSERT_EQUAL(dp_codec_encode_snapshot(c, &s, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);

    /* A refused encode leaves the codec usable. */
    u = sample_update(3);
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_OK);
    dp_codec_destroy(c);
}

/* --- malformed input ----------------------------------------------------------------------- */

/* One valid encoding of every type (varied content). */
static uint8_t *valid_message(dp_codec *c, dp_codec_type t, int variant, size_t *len)
{
    dp_buf b;
    dp_buf_init(&b);
    char err[256];
    int rc = DP_EINVAL;
    make_records();
    switch (t) {
    case DP_CODEC_UPDATE: {
        dp_update u = sample_update(variant);
        rc = dp_codec_encode_update_buf(c, &u, &b, err, sizeof err);
        break;
    }
    case DP_CODEC_SYNTHETIC_RECORD: {
        dp_codec_chunk ch = {.stream_id = STREAM_TEXT, .stream_id_len = STREAM_LEN, .step = 3,
                             .chunk_index = (uint32_t)variant, .records = RECORDS + variant % 8,
                             .n_records = 5 + (size_t)variant % 9};
        rc = dp_codec_encode_chunk_buf(c, &ch, &b, err, sizeof err);
        break;
    }
    case DP_CODEC_RELEASE_MANIFEST: {
        dp_codec_manifest m = sample_manifest();
        m.m.n_debias = (size_t)variant % 4;
        rc = dp_codec_encode_manifest_buf(c, &m, &b, err, sizeof err);
        break;
    }
    case DP_CODEC_BUDGET_EVENT: {
        dp_budget_event e = sample_budget(variant & 1);
        rc = dp_codec_encode_budget_buf(c, &e, &b, err, sizeof err);
        break;
    }
    case DP_CODEC_DEAD_LETTER: {
        dp_codec_dead_letter d = sample_dead_letter(variant % 3);
        rc = dp_codec_encode_dead_letter_buf(c, &d, &b, err, sizeof err);
        break;
    }
    case DP_CODEC_SNAPSHOT: {
        dp_codec_snapshot s = sample_snapshot(variant & 1);
        rc = dp_codec_encode_snapshot_buf(c, &s, &b, err, sizeof err);
        break;
    }
    default:
        break;
    }
    CU_ASSERT_FATAL(rc == DP_OK);
    *len = b.len;
    return b.data;
}

/* Every strict prefix of a datum is refused (Avro's binary encoding of a
 * record is prefix-free: each field is needed).  Each prefix is copied to
 * an exact-size heap block so ASan catches any read past its end. */
static void test_truncated_at_every_length(void)
{
    size_t refused = 0;
    reset_peak();
    size_t live0 = g_live;
    for (int f = 0; f < 2; f++) {
        dp_codec *c = new_codec(FRAMINGS[f]);
        for (int t = 0; t < DP_CODEC_TYPE_COUNT; t++) {
            for (int variant = 0; variant < 4; variant++) {
                size_t len;
                uint8_t *msg = valid_message(c, (dp_codec_type)t, variant, &len);
                char err[256];
                CU_ASSERT_EQUAL(decode_any(c, (dp_codec_type)t, msg, len, err, sizeof err), DP_OK);
                for (size_t cut = 0; cut < len; cut++) {
                    uint8_t *p = malloc(cut ? cut : 1);
                    CU_ASSERT_FATAL(p != NULL);
                    memcpy(p, msg, cut);
                    err[0] = '\0';
                    int rc = decode_any(c, (dp_codec_type)t, cut ? p : NULL, cut, err, sizeof err);
                    if (rc != DP_EINVAL)
                        fprintf(stderr, "%s cut at %zu of %zu: rc %d\n",
                                dp_codec_type_name((dp_codec_type)t), cut, len, rc);
                    CU_ASSERT_EQUAL(rc, DP_EINVAL);
                    CU_ASSERT(err[0] != '\0');
                    refused += rc == DP_EINVAL;
                    free(p);
                }
                /* One byte too many is refused as well. */
                uint8_t *longer = malloc(len + 1);
                memcpy(longer, msg, len);
                longer[len] = 0;
                CU_ASSERT_EQUAL(decode_any(c, (dp_codec_type)t, longer, len + 1, err, sizeof err),
                                DP_EINVAL);
                free(longer);
                free(msg);
            }
        }
        dp_codec_destroy(c);
    }
    CU_ASSERT(refused > 1000);
    CU_ASSERT_EQUAL(g_live, live0);
    printf("\n    truncation: %zu prefixes refused; avro peak %zu bytes above baseline\n", refused,
           g_peak - live0);
}

static void test_framing_errors(void)
{
    dp_codec *plain = new_codec(DP_CODEC_FRAMING_PLAIN);
    dp_codec *conf = new_codec(DP_CODEC_FRAMING_CONFLUENT);
    char err[256];
    dp_update d;
    size_t len;
    uint8_t *msg = valid_message(conf, DP_CODEC_UPDATE, 1, &len);
    CU_ASSERT_EQUAL(dp_codec_decode_update(conf, msg, len, &d, err, sizeof err), DP_OK);
    /* Wrong magic byte. */
    msg[0] = 1;
    CU_ASSERT_EQUAL(dp_codec_decode_update(conf, msg, len, &d, err, sizeof err), DP_EINVAL);
    CU_ASSERT(strstr(err, "magic") != NULL);
    msg[0] = 0;
    /* Wrong schema id: one bit off in each byte of the id. */
    for (int i = 1; i <= 4; i++) {
        msg[i] ^= 0x10;
        CU_ASSERT_EQUAL(dp_codec_decode_update(conf, msg, len, &d, err, sizeof err), DP_EINVAL);
        CU_ASSERT(strstr(err, "schema id") != NULL);
        msg[i] ^= 0x10;
    }
    /* The id of another message type is refused too. */
    size_t blen;
    uint8_t *budget = valid_message(conf, DP_CODEC_BUDGET_EVENT, 0, &blen);
    CU_ASSERT_EQUAL(dp_codec_decode_update(conf, budget, blen, &d, err, sizeof err), DP_EINVAL);
    CU_ASSERT(strstr(err, "schema id") != NULL);
    /* A framed message given to a plain codec does not parse as an Update
     * (0x00 is the empty stream id, refused). */
    CU_ASSERT_EQUAL(dp_codec_decode_update(plain, msg, len, &d, err, sizeof err), DP_EINVAL);
    /* And a plain message to a framed codec: first byte 0x12 is no magic. */
    size_t plen;
    uint8_t *pm = valid_message(plain, DP_CODEC_UPDATE, 1, &plen);
    CU_ASSERT_EQUAL(dp_codec_decode_update(conf, pm, plen, &d, err, sizeof err), DP_EINVAL);
    /* Empty and NULL input. */
    CU_ASSERT_EQUAL(dp_codec_decode_update(conf, NULL, 0, &d, err, sizeof err), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_codec_decode_update(plain, NULL, 0, &d, err, sizeof err), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_codec_decode_update(plain, NULL, 5, &d, err, sizeof err), DP_EINVAL);
    free(msg);
    free(budget);
    free(pm);
    dp_codec_destroy(plain);
    dp_codec_destroy(conf);
}

/* Crafted bodies: each is well-formed up to one defect. */
static void test_crafted_malformed(void)
{
    dp_codec *c = new_codec(DP_CODEC_FRAMING_PLAIN);
    struct {
        const char *what;
        uint8_t bytes[40];
        size_t len;
    } cases[] = {
        /* stream length 2^62: a length bomb avro-c would try to allocate */
        {"huge string length", {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 's'}, 11},
        {"negative string length", {0x01, 's', 0x02, 0x00, 0x00, 0x00, 0x00}, 7},
        {"11-byte varint", {0x02, 's', 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00,
                            0x00, 0x00, 0x00, 0x00}, 17},
        {"10th varint byte too large", {0x02, 's', 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                        0x02, 0x00, 0x00, 0x00, 0x00}, 16},
        {"enum index 4", {0x02, 's', 0x02, 0x08, 0x00, 0x00, 0x00}, 7},
        {"enum index -1", {0x02, 's', 0x02, 0x01, 0x00, 0x00, 0x00}, 7},
        {"union branch 2 of 2", {0x02, 's', 0x02, 0x00, 0x04, 0x00, 0x00}, 7},
        {"payload branch 4 of 4", {0x02, 's', 0x02, 0x00, 0x00, 0x08, 0x00}, 7},
        {"array count beyond input", {0x02, 's', 0x02, 0x02, 0x00, 0x04, 0xfe, 0xff, 0xff, 0xff, 0x0f}, 11},
        {"array count INT64_MIN", {0x02, 's', 0x02, 0x02, 0x00, 0x04, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0x01}, 16},
        {"int item wider than 32 bits", {0x02, 's', 0x02, 0x02, 0x00, 0x04, 0x02, 0xff, 0xff, 0xff, 0xff,
                                         0x7f, 0x00, 0x00}, 14},
        {"trailing byte", {0x02, 's', 0x02, 0x06, 0x00, 0x00, 0x00, 0x00}, 8},
        /* well-formed Avro, refused for meaning */
        {"empty stream", {0x00, 0x02, 0x06, 0x00, 0x00, 0x00}, 6},
        {"step 0", {0x02, 's', 0x00, 0x06, 0x00, 0x00, 0x00}, 7},
        {"step -1", {0x02, 's', 0x01, 0x06, 0x00, 0x00, 0x00}, 7},
        {"CLOSE_STEP with entity", {0x02, 's', 0x02, 0x06, 0x02, 0x02, 'u', 0x00, 0x00}, 9},
        {"CLOSE_STEP with payload", {0x02, 's', 0x02, 0x06, 0x00, 0x02, 0x02, 0x00}, 8},
        {"empty entity", {0x02, 's', 0x02, 0x00, 0x02, 0x00, 0x02, 0x02, 0x00}, 9},
        {"stream with NUL", {0x04, 's', 0x00, 0x02, 0x06, 0x00, 0x00, 0x00}, 8},
        {"stream not UTF-8", {0x04, 0xc3, 0x28, 0x02, 0x06, 0x00, 0x00, 0x00}, 8},
        {"surrogate in entity", {0x02, 's', 0x02, 0x00, 0x02, 0x06, 0xed, 0xa0, 0x80, 0x02, 0x02, 0x00}, 12},
        {"NaN coordinate", {0x02, 's', 0x02, 0x02, 0x00, 0x06, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                            0xf8, 0x7f, 0x00, 0x00}, 17},
        {"infinite coordinate", {0x02, 's', 0x02, 0x02, 0x00, 0x06, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
                                 0x00, 0xf0, 0xff, 0x00, 0x00}, 17},
    };
    reset_peak();
    size_t live0 = g_live;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dp_update d;
        char err[256] = "";
        uint8_t *p = malloc(cases[i].len);
        memcpy(p, cases[i].bytes, cases[i].len);
        int rc = dp_codec_decode_update(c, p, cases[i].len, &d, err, sizeof err);
        if (rc != DP_EINVAL)
            fprintf(stderr, "crafted '%s' not refused (rc %d)\n", cases[i].what, rc);
        CU_ASSERT_EQUAL(rc, DP_EINVAL);
        CU_ASSERT(err[0] != '\0');
        free(p);
    }
    /* No crafted length made avro-c allocate more than a few KiB. */
    CU_ASSERT(g_peak - live0 < 16384);
    /* Control: the same shape without the defect decodes. */
    static const uint8_t ok[] = {0x02, 's', 0x02, 0x06, 0x00, 0x00, 0x00};
    dp_update d;
    char err[256];
    CU_ASSERT_EQUAL(dp_codec_decode_update(c, ok, sizeof ok, &d, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(d.kind, DP_UPDATE_CLOSE_STEP);

    /* Snapshot of an unknown version; manifest with a negative count;
     * snapshot whose nonce disagrees with its encrypted flag. */
    dp_buf b;
    dp_buf_init(&b);
    dp_codec_snapshot s = sample_snapshot(0), sd;
    CU_ASSERT_FATAL(dp_codec_encode_snapshot_buf(c, &s, &b, err, sizeof err) == DP_OK);
    CU_ASSERT_EQUAL(b.data[0], 0x02);   /* schema_version 1 */
    b.data[0] = 0x04;                   /* version 2 */
    CU_ASSERT_EQUAL(dp_codec_decode_snapshot(c, b.data, b.len, &sd, err, sizeof err), DP_EINVAL);
    CU_ASSERT(strstr(err, "version") != NULL);
    b.data[0] = 0x02;
    CU_ASSERT_EQUAL(b.data[b.len - 2], 0x00);   /* encrypted = false */
    b.data[b.len - 2] = 0x01;                   /* encrypted = true, nonce still null */
    CU_ASSERT_EQUAL(dp_codec_decode_snapshot(c, b.data, b.len, &sd, err, sizeof err), DP_EINVAL);
    dp_buf_free(&b);
    dp_codec_destroy(c);
}

/* Random bytes and random mutations of valid messages: every result is
 * DP_OK or DP_EINVAL, and whatever decodes re-encodes and decodes again
 * (decode enforces exactly what encode does). */
static void test_random_garbage_and_mutations(void)
{
    dp_key key;
    dptest_key(&key, 61);
    dp_drbg g;
    dp_drbg_init(&g, &key, "codec", 5, 1, "test.codec.garbage");
    size_t n_ok = 0, n_bad = 0, n_total = 0;
    reset_peak();
    size_t live0 = g_live;
    for (int f = 0; f < 2; f++) {
        dp_codec *c = new_codec(FRAMINGS[f]);
        for (int t = 0; t < DP_CODEC_TYPE_COUNT; t++) {
            size_t vlen;
            uint8_t *valid = valid_message(c, (dp_codec_type)t, 2, &vlen);
            for (int i = 0; i < 3000; i++) {
                size_t len;
                uint8_t *p;
                if (i % 2 == 0) {
                    /* random bytes, behind a correct header half of the time */
                    len = (size_t)(dp_drbg_u64(&g) % 120);
                    p = malloc(len ? len : 1);
                    for (size_t k = 0; k < len; k++)
                        p[k] = (uint8_t)dp_drbg_u64(&g);
                    if (FRAMINGS[f] == DP_CODEC_FRAMING_CONFLUENT && len >= 5 && i % 4 == 0)
                        memcpy(p, valid, 5);
                } else {
                    /* 1-4 byte mutations of a valid message */
                    len = vlen;
                    p = malloc(len);
                    memcpy(p, valid, len);
                    int muts = 1 + (int)(dp_drbg_u64(&g) % 4);
                    for (int k = 0; k < muts; k++) {
                        size_t at = (size_t)(dp_drbg_u64(&g) % len);
                        p[at] = (uint8_t)dp_drbg_u64(&g);
                    }
                }
                char err[256];
                int rc = decode_any(c, (dp_codec_type)t, p, len, err, sizeof err);
                CU_ASSERT(rc == DP_OK || rc == DP_EINVAL);
                n_total++;
                if (rc == DP_OK) {
                    n_ok++;
                    /* re-encode what was decoded (only the Update here: its
                     * struct is the one the processor's DLQ path sees) */
                    if (t == DP_CODEC_UPDATE) {
                        dp_update d;
                        CU_ASSERT_FATAL(dp_codec_decode_update(c, p, len, &d, err, sizeof err) == DP_OK);
                        dp_buf b;
                        dp_buf_init(&b);
                        int erc = dp_codec_encode_update_buf(c, &d, &b, err, sizeof err);
                        if (erc != DP_OK)
                            fprintf(stderr, "decoded update does not re-encode: %s\n", err);
                        CU_ASSERT(erc == DP_OK);
                        dp_update d2;
                        CU_ASSERT(erc != DP_OK ||
                                  dp_codec_decode_update(c, b.data, b.len, &d2, err, sizeof err) == DP_OK);
                        dp_buf_free(&b);
                    }
                } else {
                    n_bad++;
                }
                free(p);
            }
            free(valid);
        }
        dp_codec_destroy(c);
    }
    CU_ASSERT_EQUAL(n_ok + n_bad, n_total);
    CU_ASSERT(n_bad > n_total / 2);   /* garbage is mostly refused... */
    CU_ASSERT(n_ok > 0);              /* ...but mutations of values still decode */
    CU_ASSERT(g_peak - live0 < (1u << 20));
    CU_ASSERT_EQUAL(g_live, live0);
    printf("\n    garbage/mutations: %zu inputs, %zu decoded, %zu refused; avro peak +%zu bytes\n",
           n_total, n_ok, n_bad, g_peak - live0);
}

/* --- value reuse ------------------------------------------------------------------------------ */

static void test_value_reuse_no_growth(void)
{
    make_records();
    dp_codec *c = new_codec(DP_CODEC_FRAMING_CONFLUENT);
    dp_buf b;
    dp_buf_init(&b);
    char err[256];
    /* The message cycle is 60 long (20 shapes x 3 dead-letter variants);
     * N >= 10^5 and WARM are multiples of it. */
    const int N = 100020, WARM = 1980, PERIOD = 20;
    size_t live_warm = 0, heap_warm = 0;
    int ok = 1;
    for (int i = 0; i < N && ok; i++) {
        b.len = 0;
        int v = i % PERIOD;
        if (v < 14) {
            dp_update u = sample_update(v), d;
            ok &= dp_codec_encode_update_buf(c, &u, &b, err, sizeof err) == DP_OK;
            ok &= dp_codec_decode_update(c, b.data, b.len, &d, err, sizeof err) == DP_OK;
            ok &= update_eq(&u, &d);
        } else if (v < 17) {
            dp_codec_chunk ch = {.stream_id = STREAM_TEXT, .stream_id_len = STREAM_LEN, .step = 1,
                                 .chunk_index = (uint32_t)v, .records = RECORDS,
                                 .n_records = (size_t)(v - 13) * 16};
            dp_codec_chunk d;
            ok &= dp_codec_encode_chunk_buf(c, &ch, &b, err, sizeof err) == DP_OK;
            ok &= dp_codec_decode_chunk(c, b.data, b.len, &d, err, sizeof err) == DP_OK;
            ok &= d.n_records == ch.n_records;
        } else if (v < 19) {
            dp_budget_event e = sample_budget(v & 1), d;
            ok &= dp_codec_encode_budget_buf(c, &e, &b, err, sizeof err) == DP_OK;
            ok &= dp_codec_decode_budget(c, b.data, b.len, &d, err, sizeof err) == DP_OK;
        } else {
            dp_codec_dead_letter dl = sample_dead_letter((i / PERIOD) % 3), d;
            ok &= dp_codec_encode_dead_letter_buf(c, &dl, &b, err, sizeof err) == DP_OK;
            ok &= dp_codec_decode_dead_letter(c, b.data, b.len, &d, err, sizeof err) == DP_OK;
        }
        if (i + 1 == WARM) {
            live_warm = g_live;
            reset_peak();
#if !defined(__SANITIZE_ADDRESS__)
            heap_warm = mallinfo2().uordblks;
#endif
        }
    }
    CU_ASSERT(ok);
    size_t live_end = g_live;
    printf("\n    reuse: %d messages; avro live %zu bytes after %d, %zu at the end, peak %zu\n", N,
           live_warm, WARM, live_end, g_peak);
    /* Same phase of the message cycle at both points, so the retained set
     * must be identical. */
    CU_ASSERT_EQUAL(live_end, live_warm);
    CU_ASSERT(g_peak <= live_warm + 65536);
#if !defined(__SANITIZE_ADDRESS__)
    size_t heap_end = mallinfo2().uordblks;
    printf("    reuse: malloc in use %zu bytes after warm-up, %zu at the end\n", heap_warm, heap_end);
    CU_ASSERT(heap_end <= heap_warm + 65536);
#else
    (void)heap_warm;
#endif
    dp_buf_free(&b);
    dp_codec_destroy(c);
}

static void test_destroy_releases_everything(void)
{
    size_t before = g_live;
    dp_codec *c = new_codec(DP_CODEC_FRAMING_PLAIN);
    CU_ASSERT(g_live > before);
    size_t len;
    uint8_t *m = valid_message(c, DP_CODEC_SYNTHETIC_RECORD, 3, &len);
    dp_codec_chunk d;
    char err[256];
    CU_ASSERT(dp_codec_decode_chunk(c, m, len, &d, err, sizeof err) == DP_OK);
    free(m);
    dp_codec_destroy(c);
    CU_ASSERT_EQUAL(g_live, before);
    dp_codec_destroy(NULL);

    dp_codec_options bad = {.framing = (dp_codec_framing)7};
    CU_ASSERT_EQUAL(dp_codec_create(&c, &bad, err, sizeof err), DP_EINVAL);
    CU_ASSERT_PTR_NULL(c);
}

static const dptest_case CASES[] = {
    {"embedded schemas equal schemas/<Name>.avsc, every field documented", test_schemas_match_files},
    {"Update round trip, every payload variant, both framings", test_update_round_trip},
    {"Update bytes equal hand-built Avro vectors", test_update_golden_bytes},
    {"negative array block count (spec-valid) decodes; wrong size refused", test_negative_block_count},
    {"SyntheticRecord chunks round trip; checksum = BLAKE2b of canonical bytes", test_chunk_round_trip_and_checksum},
    {"ReleaseManifest, BudgetEvent, DeadLetter, Snapshot round trip", test_manifest_budget_dead_letter_snapshot_round_trip},
    {"decodes of different types coexist", test_decodes_of_different_types_coexist},
    {"unencodable structs are refused", test_encode_refusals},
    {"every truncation and one extra byte refused", test_truncated_at_every_length},
    {"wrong magic byte / schema id / framing refused", test_framing_errors},
    {"crafted malformed bodies refused without length-bomb allocation", test_crafted_malformed},
    {"random garbage and mutations: error or consistent decode", test_random_garbage_and_mutations},
    {"value reuse over 10^5 messages: no memory growth", test_value_reuse_no_growth},
    {"destroy releases all avro memory", test_destroy_releases_everything},
    {NULL, NULL},
};

int main(void)
{
    /* Before anything touches avro-c, so every block carries our header. */
    avro_set_allocator(counting_alloc, NULL);
    return dptest_run("codec", CASES);
}
