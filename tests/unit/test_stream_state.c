/* test_stream_state.c — the state-topic records of the Kafka processor
 * (processor/stream/state_record.h, seal.h):
 *   - snapshot and progress records round-trip, sealed and plain;
 *   - sealing is deterministic (a replay writes byte-identical state) yet
 *     the nonce changes with the plaintext, the stream and the step (no
 *     (key, nonce) pair ever encrypts two different plaintexts);
 *   - a sealed state never contains the plaintext;
 *   - tampering with any public field, the ciphertext, or using another
 *     key is detected; a plaintext snapshot is refused when a state key is
 *     configured and a sealed one when none is. */
#include <string.h>

#include "codec/codec.h"
#include "core/dp_error.h"
#include "dptest.h"
#include "stream/seal.h"
#include "stream/state_record.h"

static const uint8_t STATE[] = "exact synthesizer state: roster u1 u2 u3, counts 4 7 1";

static dp_state_record snap(uint64_t open_step, int64_t skip_below)
{
    dp_state_record r;
    memset(&r, 0, sizeof r);
    r.kind = DP_STATE_SNAPSHOT;
    r.updates_topic = "t.updates";
    r.updates_topic_len = strlen(r.updates_topic);
    r.partition = 3;
    r.stream_id = "cum/a";
    r.stream_id_len = 5;
    r.skip_below = skip_below;
    r.open_step = open_step;
    r.synthesizer = "cumulative";
    r.state = STATE;
    r.state_len = sizeof STATE;
    return r;
}

static dp_codec *codec_new(void)
{
    dp_codec *c = NULL;
    dp_codec_options o;
    memset(&o, 0, sizeof o);
    CU_ASSERT_EQUAL_FATAL(dp_codec_create(&c, &o, NULL, 0), DP_OK);
    return c;
}

static int contains(const dp_buf *b, const void *needle, size_t n)
{
    for (size_t i = 0; i + n <= b->len; i++)
        if (memcmp(b->data + i, needle, n) == 0)
            return 1;
    return 0;
}

static void test_roundtrip_plain_and_sealed(void)
{
    dp_codec *c = codec_new();
    dp_key k;
    dptest_key(&k, 7);
    for (int sealed = 0; sealed <= 1; sealed++) {
        dp_state_record in = snap(5, 1234), out;
        dp_buf enc, scratch;
        dp_buf_init(&enc);
        dp_buf_init(&scratch);
        char err[256] = "";
        CU_ASSERT_EQUAL(dp_state_encode_snapshot(c, &in, sealed ? &k : NULL, &enc, err, sizeof err), DP_OK);
        CU_ASSERT_EQUAL(contains(&enc, STATE, sizeof STATE), !sealed);   /* sealed: no plaintext */
        CU_ASSERT_EQUAL(dp_state_decode(c, enc.data, enc.len, sealed ? &k : NULL, &out, &scratch, err, sizeof err),
                        DP_OK);
        CU_ASSERT_EQUAL(out.kind, DP_STATE_SNAPSHOT);
        CU_ASSERT_EQUAL(out.partition, 3);
        CU_ASSERT_EQUAL(out.skip_below, 1234);
        CU_ASSERT_EQUAL(out.open_step, 5);
        CU_ASSERT_STRING_EQUAL(out.synthesizer, "cumulative");
        CU_ASSERT_STRING_EQUAL(out.updates_topic, "t.updates");
        CU_ASSERT_TRUE(out.stream_id_len == 5 && memcmp(out.stream_id, "cum/a", 5) == 0);
        CU_ASSERT_TRUE(out.state_len == sizeof STATE && memcmp(out.state, STATE, sizeof STATE) == 0);
        /* the wrong configuration is refused either way */
        CU_ASSERT_EQUAL(dp_state_decode(c, enc.data, enc.len, sealed ? NULL : &k, &out, &scratch, err, sizeof err),
                        DP_EINVAL);
        dp_buf_free(&enc);
        dp_buf_free(&scratch);
    }
    dp_codec_destroy(c);
}

static void encode_sealed(dp_codec *c, const dp_state_record *r, const dp_key *k, dp_buf *out)
{
    dp_buf_init(out);
    CU_ASSERT_EQUAL(dp_state_encode_snapshot(c, r, k, out, NULL, 0), DP_OK);
}

static void test_deterministic_nonce(void)
{
    dp_codec *c = codec_new();
    dp_key k;
    dptest_key(&k, 1);
    dp_state_record r = snap(3, 77);
    dp_buf a, b, other_step, other_state;
    encode_sealed(c, &r, &k, &a);
    encode_sealed(c, &r, &k, &b);
    CU_ASSERT_TRUE(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);   /* replay: identical bytes */
    dp_state_record r2 = snap(4, 77);
    encode_sealed(c, &r2, &k, &other_step);
    static const uint8_t STATE2[] = "exact synthesizer state: roster u1 u2 u3, counts 4 7 2";
    dp_state_record r3 = snap(3, 77);
    r3.state = STATE2;
    r3.state_len = sizeof STATE2;
    encode_sealed(c, &r3, &k, &other_state);

    /* The nonces (the Snapshot's nonce field) must differ whenever the
     * plaintext or the step does. */
    dp_codec_snapshot sa, sb;
    uint8_t na[DP_CODEC_NONCE_BYTES];
    CU_ASSERT_EQUAL_FATAL(dp_codec_decode_snapshot(c, a.data, a.len, &sa, NULL, 0), DP_OK);
    memcpy(na, sa.nonce, sizeof na);
    CU_ASSERT_EQUAL_FATAL(dp_codec_decode_snapshot(c, other_step.data, other_step.len, &sb, NULL, 0), DP_OK);
    CU_ASSERT_NOT_EQUAL(memcmp(na, sb.nonce, sizeof na), 0);
    CU_ASSERT_EQUAL_FATAL(dp_codec_decode_snapshot(c, other_state.data, other_state.len, &sb, NULL, 0), DP_OK);
    CU_ASSERT_NOT_EQUAL(memcmp(na, sb.nonce, sizeof na), 0);
    dp_buf_free(&a);
    dp_buf_free(&b);
    dp_buf_free(&other_step);
    dp_buf_free(&other_state);
    dp_codec_destroy(c);
}

static void test_tamper_detected(void)
{
    dp_codec *c = codec_new();
    dp_key k, k2;
    dptest_key(&k, 2);
    dptest_key(&k2, 3);
    dp_state_record r = snap(6, 500);
    dp_buf enc, scratch;
    encode_sealed(c, &r, &k, &enc);
    dp_buf_init(&scratch);
    dp_state_record out;
    char err[256];
    /* another key */
    CU_ASSERT_EQUAL(dp_state_decode(c, enc.data, enc.len, &k2, &out, &scratch, err, sizeof err), DP_ECORRUPT);
    /* every single flipped bit anywhere in the record: public fields are
     * associated data, the state is authenticated, the rest is Avro
     * structure the codec checks */
    for (size_t pos = 0; pos < enc.len; pos++) {
        enc.data[pos] ^= 0x01;
        int rc = dp_state_decode(c, enc.data, enc.len, &k, &out, &scratch, err, sizeof err);
        enc.data[pos] ^= 0x01;
        if (rc == DP_OK) {
            /* only a change that decodes to the very same record may pass */
            CU_FAIL("a modified sealed snapshot was accepted");
            fprintf(stderr, "\n  byte %zu of %zu\n", pos, enc.len);
            break;
        }
    }
    CU_ASSERT_EQUAL(dp_state_decode(c, enc.data, enc.len, &k, &out, &scratch, err, sizeof err), DP_OK);
    dp_buf_free(&enc);
    dp_buf_free(&scratch);
    dp_codec_destroy(c);
}

static void test_progress_roundtrip(void)
{
    dp_codec *c = codec_new();
    dp_state_record in, out;
    memset(&in, 0, sizeof in);
    in.kind = DP_STATE_PROGRESS;
    in.updates_topic = "t.updates";
    in.updates_topic_len = 9;
    in.partition = 11;
    in.position = 9001;
    in.resume = 8990;
    dp_buf enc, scratch;
    dp_buf_init(&enc);
    dp_buf_init(&scratch);
    CU_ASSERT_EQUAL(dp_state_encode_progress(&in, &enc), DP_OK);
    CU_ASSERT_EQUAL(dp_state_decode(c, enc.data, enc.len, NULL, &out, &scratch, NULL, 0), DP_OK);
    CU_ASSERT_EQUAL(out.kind, DP_STATE_PROGRESS);
    CU_ASSERT_EQUAL(out.partition, 11);
    CU_ASSERT_EQUAL(out.position, 9001);
    CU_ASSERT_EQUAL(out.resume, 8990);
    CU_ASSERT_STRING_EQUAL(out.updates_topic, "t.updates");
    /* truncations are corrupt, not crashes */
    for (size_t n = 0; n < enc.len; n++)
        CU_ASSERT_NOT_EQUAL(dp_state_decode(c, enc.data, n, NULL, &out, &scratch, NULL, 0), DP_OK);
    dp_buf_free(&enc);
    dp_buf_free(&scratch);
    dp_codec_destroy(c);
}

static void test_seal_binds_associated_data(void)
{
    dp_key k;
    dptest_key(&k, 9);
    dp_buf s, o;
    dp_buf_init(&s);
    dp_buf_init(&o);
    CU_ASSERT_EQUAL(dp_seal(&k, "s", 1, 2, (const uint8_t *)"ad-1", 4, STATE, sizeof STATE, &s), DP_OK);
    CU_ASSERT_EQUAL(s.len, sizeof STATE + DP_SEAL_OVERHEAD);
    CU_ASSERT_EQUAL(dp_unseal(&k, (const uint8_t *)"ad-1", 4, s.data, s.len, &o, NULL, 0), DP_OK);
    CU_ASSERT_TRUE(o.len == sizeof STATE && memcmp(o.data, STATE, sizeof STATE) == 0);
    o.len = 0;
    CU_ASSERT_EQUAL(dp_unseal(&k, (const uint8_t *)"ad-2", 4, s.data, s.len, &o, NULL, 0), DP_ECORRUPT);
    CU_ASSERT_EQUAL(o.len, 0);
    CU_ASSERT_EQUAL(dp_unseal(&k, (const uint8_t *)"ad-1", 4, s.data, DP_SEAL_OVERHEAD - 1, &o, NULL, 0), DP_ECORRUPT);
    dp_buf_free(&s);
    dp_buf_free(&o);
}

static const dptest_case CASES[] = {
    {"snapshot records round-trip, plain and sealed", test_roundtrip_plain_and_sealed},
    {"sealing is deterministic; the nonce follows plaintext and step", test_deterministic_nonce},
    {"any modified byte or another key is detected", test_tamper_detected},
    {"progress records round-trip; truncations refused", test_progress_roundtrip},
    {"the AEAD binds its associated data", test_seal_binds_associated_data},
    {NULL, NULL},
};

int main(void) { return dptest_run("stream_state", CASES); }
