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
#include "synth/common/synth.h"

/* The noise key the snapshots' MACs derive from (state_record.h). */
static dp_key g_mac = {{0x6d, 0x61, 0x63, 1}};

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
        CU_ASSERT_EQUAL(dp_state_encode_snapshot(c, &in, sealed ? &k : NULL, &g_mac, &enc, err, sizeof err), DP_OK);
        CU_ASSERT_EQUAL(contains(&enc, STATE, sizeof STATE), !sealed);   /* sealed: no plaintext */
        CU_ASSERT_EQUAL(dp_state_decode(c, enc.data, enc.len, sealed ? &k : NULL, &g_mac, &out, &scratch, err, sizeof err),
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
        CU_ASSERT_EQUAL(dp_state_decode(c, enc.data, enc.len, sealed ? NULL : &k, &g_mac, &out, &scratch, err, sizeof err),
                        DP_EINVAL);
        dp_buf_free(&enc);
        dp_buf_free(&scratch);
    }
    dp_codec_destroy(c);
}

static void encode_sealed(dp_codec *c, const dp_state_record *r, const dp_key *k, dp_buf *out)
{
    dp_buf_init(out);
    CU_ASSERT_EQUAL(dp_state_encode_snapshot(c, r, k, &g_mac, out, NULL, 0), DP_OK);
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
    CU_ASSERT_EQUAL(dp_state_decode(c, enc.data, enc.len, &k2, &g_mac, &out, &scratch, err, sizeof err), DP_ECORRUPT);
    /* every single flipped bit anywhere in the record: public fields are
     * associated data, the state is authenticated, the rest is Avro
     * structure the codec checks */
    for (size_t pos = 0; pos < enc.len; pos++) {
        enc.data[pos] ^= 0x01;
        int rc = dp_state_decode(c, enc.data, enc.len, &k, &g_mac, &out, &scratch, err, sizeof err);
        enc.data[pos] ^= 0x01;
        if (rc == DP_OK) {
            /* only a change that decodes to the very same record may pass */
            CU_FAIL("a modified sealed snapshot was accepted");
            fprintf(stderr, "\n  byte %zu of %zu\n", pos, enc.len);
            break;
        }
    }
    CU_ASSERT_EQUAL(dp_state_decode(c, enc.data, enc.len, &k, &g_mac, &out, &scratch, err, sizeof err), DP_OK);
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
    in.partition_count = 16;
    dp_buf enc, scratch;
    dp_buf_init(&enc);
    dp_buf_init(&scratch);
    CU_ASSERT_EQUAL(dp_state_encode_progress(&in, &enc), DP_OK);
    CU_ASSERT_EQUAL(dp_state_decode(c, enc.data, enc.len, NULL, &g_mac, &out, &scratch, NULL, 0), DP_OK);
    CU_ASSERT_EQUAL(out.kind, DP_STATE_PROGRESS);
    CU_ASSERT_EQUAL(out.partition, 11);
    CU_ASSERT_EQUAL(out.position, 9001);
    CU_ASSERT_EQUAL(out.resume, 8990);
    CU_ASSERT_EQUAL(out.partition_count, 16);
    CU_ASSERT_STRING_EQUAL(out.updates_topic, "t.updates");
    /* the owner is read from the public fields, as before */
    const char *topic;
    size_t topic_len;
    int32_t part;
    CU_ASSERT_EQUAL(dp_state_owner(c, enc.data, enc.len, &topic, &topic_len, &part), DP_OK);
    CU_ASSERT(topic_len == 9 && memcmp(topic, "t.updates", 9) == 0 && part == 11);
    /* truncations are corrupt, not crashes */
    for (size_t n = 0; n < enc.len; n++)
        CU_ASSERT_NOT_EQUAL(dp_state_decode(c, enc.data, n, NULL, &g_mac, &out, &scratch, NULL, 0), DP_OK);
    /* a "DPP1" record (written before the partition count was kept) still
     * decodes, its count unknown (0): the same bytes without the last u32 */
    enc.data[3] = '1';
    CU_ASSERT_EQUAL(dp_state_decode(c, enc.data, enc.len - 4, NULL, &g_mac, &out, &scratch, NULL, 0), DP_OK);
    CU_ASSERT_EQUAL(out.partition_count, 0);
    CU_ASSERT_EQUAL(out.resume, 8990);
    CU_ASSERT_NOT_EQUAL(dp_state_decode(c, enc.data, enc.len, NULL, &g_mac, &out, &scratch, NULL, 0), DP_OK);
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

/* --- chunked snapshots ------------------------------------------------------ */

#define MAX_CHUNKS 64

typedef struct chunk_set {
    dp_buf   msg[MAX_CHUNKS];
    uint32_t n;
    uint32_t count_seen;
} chunk_set;

static int collect_chunk(void *ctx, uint32_t index, uint32_t count, const dp_buf *enc)
{
    chunk_set *cs = ctx;
    if (index != cs->n || cs->n >= MAX_CHUNKS)
        return DP_EINVAL;   /* chunks must come in index order */
    dp_buf_init(&cs->msg[cs->n]);
    dp_buf_put_bytes(&cs->msg[cs->n], enc->data, enc->len);
    cs->n++;
    cs->count_seen = count;
    return dp_buf_status(&cs->msg[index]);
}

static void chunk_set_free(chunk_set *cs)
{
    for (uint32_t i = 0; i < cs->n; i++)
        dp_buf_free(&cs->msg[i]);
    cs->n = 0;
}

/* Encode a snapshot of `len` patterned state bytes (the pattern depends on
 * seed, so two snapshots' pieces differ) in chunks of chunk_bytes. */
static void encode_chunked(dp_codec *c, const dp_key *k, uint64_t open_step, int64_t skip, size_t len,
                           uint8_t seed, size_t chunk_bytes, uint8_t *state, chunk_set *cs)
{
    for (size_t i = 0; i < len; i++)
        state[i] = (uint8_t)(i * 31u + seed);
    dp_state_record r = snap(open_step, skip);
    r.state = state;
    r.state_len = len;
    dp_buf tmp;
    dp_buf_init(&tmp);
    memset(cs, 0, sizeof *cs);
    CU_ASSERT_EQUAL(dp_state_encode_snapshot_chunks(c, &r, k, &g_mac, chunk_bytes, &tmp, collect_chunk, cs, NULL, 0), DP_OK);
    dp_buf_free(&tmp);
}

static int assemble(dp_codec *c, const dp_key *k, const dp_buf *const *msgs, size_t n, dp_state_record *out,
                    dp_buf *scratch)
{
    dp_state_piece pieces[2 * MAX_CHUNKS];
    for (size_t i = 0; i < n; i++)
        pieces[i] = (dp_state_piece){.data = msgs[i]->data, .len = msgs[i]->len};
    return dp_state_decode_chunks(c, pieces, n, k, &g_mac, out, scratch, NULL, 0);
}

static void test_chunked_snapshots(void)
{
    dp_codec *c = codec_new();
    dp_key key;
    dptest_key(&key, 21);
    for (int sealed = 0; sealed <= 1; sealed++) {
        const dp_key *k = sealed ? &key : NULL;
        static uint8_t now_state[1000], old_state[1700], same_step_state[1000];
        chunk_set now, old, same_step;
        /* the current snapshot: step 5, 1000 state bytes in pieces of 128 */
        encode_chunked(c, k, 6, 900, sizeof now_state, 1, 128, now_state, &now);
        size_t stored = sizeof now_state + (sealed ? DP_SEAL_OVERHEAD - DP_SEAL_NONCE_BYTES : DP_STATE_MAC_BYTES);
        CU_ASSERT_EQUAL_FATAL(now.n, (stored + 127) / 128);
        CU_ASSERT_EQUAL(now.count_seen, now.n);
        /* an older, larger one (step 4): its higher indices outlive it under compaction */
        encode_chunked(c, k, 5, 800, sizeof old_state, 2, 128, old_state, &old);
        CU_ASSERT_FATAL(old.n > now.n);
        /* same step, other skip offset (a different history): never mixed in */
        encode_chunked(c, k, 6, 901, sizeof same_step_state, 3, 128, same_step_state, &same_step);
        CU_ASSERT_EQUAL_FATAL(same_step.n, now.n);

        /* every chunk carries the step, the count and a piece of at most 128 bytes */
        for (uint32_t i = 0; i < now.n; i++) {
            dp_codec_snapshot s;
            CU_ASSERT_EQUAL_FATAL(dp_codec_decode_snapshot(c, now.msg[i].data, now.msg[i].len, &s, NULL, 0), DP_OK);
            CU_ASSERT_EQUAL(s.chunk_index, i);
            CU_ASSERT_EQUAL(s.chunk_count, now.n);
            CU_ASSERT_EQUAL(s.last_closed_step, 5);
            CU_ASSERT_EQUAL(s.input_offset, 900);
            CU_ASSERT(s.state_len <= 128 && s.state_len > 0);
            CU_ASSERT_EQUAL(s.encrypted, sealed);
        }

        const dp_buf *pick[2 * MAX_CHUNKS];
        size_t n = 0;
        dp_state_record out;
        dp_buf scratch;
        dp_buf_init(&scratch);

        /* out of order, with the stale tail of the old snapshot, the old
         * chunk 0 (older step: not the authority) and same-step chunks of
         * another history (other skip offset) interleaved; chunk 0 is
         * unique per key, so only the current one is given */
        n = 0;
        for (uint32_t i = old.n; i-- > 0;)
            pick[n++] = &old.msg[i];
        for (uint32_t i = now.n; i-- > 0;) {
            if (i > 0)
                pick[n++] = &same_step.msg[i];
            pick[n++] = &now.msg[i];
        }
        CU_ASSERT_EQUAL_FATAL(assemble(c, k, pick, n, &out, &scratch), DP_OK);
        CU_ASSERT_EQUAL(out.kind, DP_STATE_SNAPSHOT);
        CU_ASSERT_EQUAL(out.open_step, 6);
        CU_ASSERT_EQUAL(out.skip_below, 900);
        CU_ASSERT_EQUAL(out.stream_id_len, 5);
        CU_ASSERT_TRUE(out.state_len == sizeof now_state && memcmp(out.state, now_state, sizeof now_state) == 0);

        /* a shuffled order (odd indices first) gives the same bytes */
        n = 0;
        for (uint32_t i = 1; i < now.n; i += 2)
            pick[n++] = &now.msg[i];
        for (uint32_t i = 0; i < now.n; i += 2)
            pick[n++] = &now.msg[i];
        CU_ASSERT_EQUAL_FATAL(assemble(c, k, pick, n, &out, &scratch), DP_OK);
        CU_ASSERT_TRUE(out.state_len == sizeof now_state && memcmp(out.state, now_state, sizeof now_state) == 0);

        /* a missing middle chunk, even with stale chunks of that index
         * (older step; same step but other offset) present: refused */
        n = 0;
        for (uint32_t i = 0; i < now.n; i++)
            if (i != 2)
                pick[n++] = &now.msg[i];
        pick[n++] = &old.msg[2];
        pick[n++] = &same_step.msg[2];
        CU_ASSERT_EQUAL(assemble(c, k, pick, n, &out, &scratch), DP_ECORRUPT);
        /* the missing last chunk */
        CU_ASSERT_EQUAL(assemble(c, k, (const dp_buf *const[]){&now.msg[0]}, 1, &out, &scratch), DP_ECORRUPT);
        n = 0;
        for (uint32_t i = 0; i + 1 < now.n; i++)
            pick[n++] = &now.msg[i];
        CU_ASSERT_EQUAL(assemble(c, k, pick, n, &out, &scratch), DP_ECORRUPT);
        /* no chunk 0 */
        n = 0;
        for (uint32_t i = 1; i < now.n; i++)
            pick[n++] = &now.msg[i];
        CU_ASSERT_EQUAL(assemble(c, k, pick, n, &out, &scratch), DP_ECORRUPT);
        /* a lone chunk of a multi-chunk snapshot is not a whole snapshot */
        CU_ASSERT_EQUAL(dp_state_decode(c, now.msg[0].data, now.msg[0].len, k, &g_mac, &out, &scratch, NULL, 0), DP_ECORRUPT);
        /* the old snapshot alone is complete and restores as itself */
        n = 0;
        for (uint32_t i = 0; i < old.n; i++)
            pick[n++] = &old.msg[i];
        CU_ASSERT_EQUAL_FATAL(assemble(c, k, pick, n, &out, &scratch), DP_OK);
        CU_ASSERT_EQUAL(out.open_step, 5);
        CU_ASSERT_TRUE(out.state_len == sizeof old_state && memcmp(out.state, old_state, sizeof old_state) == 0);

        /* a state that fits is one chunk, readable by dp_state_decode */
        chunk_set one;
        encode_chunked(c, k, 6, 900, sizeof now_state, 1, 4096, now_state, &one);
        CU_ASSERT_EQUAL_FATAL(one.n, 1);
        CU_ASSERT_EQUAL(dp_state_decode(c, one.msg[0].data, one.msg[0].len, k, &g_mac, &out, &scratch, NULL, 0), DP_OK);
        CU_ASSERT_TRUE(out.state_len == sizeof now_state && memcmp(out.state, now_state, sizeof now_state) == 0);
        /* and identical to the single-message encoder's output */
        dp_state_record r1 = snap(6, 900);
        r1.state = now_state;
        r1.state_len = sizeof now_state;
        dp_buf single;
        dp_buf_init(&single);
        CU_ASSERT_EQUAL(dp_state_encode_snapshot(c, &r1, k, &g_mac, &single, NULL, 0), DP_OK);
        CU_ASSERT_TRUE(single.len == one.msg[0].len && memcmp(single.data, one.msg[0].data, single.len) == 0);
        dp_buf_free(&single);

        chunk_set_free(&one);
        chunk_set_free(&now);
        chunk_set_free(&old);
        chunk_set_free(&same_step);
        dp_buf_free(&scratch);
    }
    dp_codec_destroy(c);
}

/* Chunk keys: chunk 0 is the stream id; later ones carry a 0xFF separator,
 * which no stream id can contain (the codec refuses ids that are not UTF-8). */
static void test_chunk_keys(void)
{
    dp_buf k;
    dp_buf_init(&k);
    CU_ASSERT_EQUAL(dp_state_snapshot_key("cum/a", 5, 0, &k), DP_OK);
    CU_ASSERT_TRUE(k.len == 5 && memcmp(k.data, "cum/a", 5) == 0);
    CU_ASSERT_FALSE(dp_state_key_is_chunk(k.data, k.len));
    CU_ASSERT_EQUAL(dp_state_snapshot_key("cum/a", 5, 258, &k), DP_OK);
    CU_ASSERT_TRUE(k.len == 10 && memcmp(k.data, "cum/a\xff\x00\x00\x01\x02", 10) == 0);
    CU_ASSERT_TRUE(dp_state_key_is_chunk(k.data, k.len));
    CU_ASSERT_FALSE(dp_state_key_is_chunk(DP_STATE_PROGRESS_KEY_PREFIX "t/0",
                                          strlen(DP_STATE_PROGRESS_KEY_PREFIX "t/0")));
    /* a stream whose id would spell another stream's chunk key cannot exist */
    dp_codec *c = codec_new();
    dp_update u = {.stream_id = (const char *)k.data, .stream_id_len = k.len, .step = 1,
                   .kind = DP_UPDATE_CLOSE_STEP};
    dp_buf enc;
    dp_buf_init(&enc);
    CU_ASSERT_NOT_EQUAL(dp_codec_encode_update_buf(c, &u, &enc, NULL, 0), DP_OK);
    dp_buf_free(&enc);
    dp_codec_destroy(c);
    dp_buf_free(&k);
}

/* Every byte of a real plaintext snapshot (window and cumulative states
 * with a roster and a released step), flipped one at a time: each altered
 * record is refused (issue 13.A1: before the MAC, 92 of 1317 window and
 * 1305 of 4101 cumulative positions were accepted with altered state).
 * A snapshot written under another noise key is refused too. */
static void flip_all(dp_codec *c, const char *synth, const char *cfg_text)
{
    json_error_t je;
    json_t *cfg = json_loads(cfg_text, 0, &je);
    dp_key noise;
    dptest_key(&noise, 40);
    dp_synth_env env = {&noise, "flip", 4};
    dp_synth *sy = NULL;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&sy, synth, cfg, &env, err, sizeof err), DP_OK);
    for (int i = 0; i < 12; i++) {
        char id[8];
        snprintf(id, sizeof id, "u%d", i);
        dp_update u = {.stream_id = "flip", .stream_id_len = 4, .step = 1, .kind = DP_UPDATE_REPORT,
                       .entity_id = id, .entity_id_len = strlen(id),
                       .payload = {.kind = DP_PAYLOAD_CATEGORY, .category = i % 2}};
        dp_reject_reason why;
        CU_ASSERT_EQUAL_FATAL(dp_synth_ingest(sy, &u, &why), DP_OK);
    }
    dp_release_sink none = {0};
    CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(sy, &none, err, sizeof err), DP_OK);
    dp_buf st, enc, scratch;
    dp_buf_init(&st);
    dp_buf_init(&enc);
    dp_buf_init(&scratch);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(sy, &st), DP_OK);
    dp_state_record r = {.kind = DP_STATE_SNAPSHOT, .updates_topic = "t.updates", .updates_topic_len = 9,
                         .partition = 0, .stream_id = "flip", .stream_id_len = 4, .skip_below = 17,
                         .open_step = 2, .synthesizer = synth, .state = st.data, .state_len = st.len};
    CU_ASSERT_EQUAL_FATAL(dp_state_encode_snapshot(c, &r, NULL, &noise, &enc, err, sizeof err), DP_OK);
    dp_state_record out;
    CU_ASSERT_EQUAL_FATAL(dp_state_decode(c, enc.data, enc.len, NULL, &noise, &out, &scratch, err, sizeof err), DP_OK);
    size_t accepted = 0;
    for (size_t i = 0; i < enc.len; i++) {
        enc.data[i] ^= 0x01;
        if (dp_state_decode(c, enc.data, enc.len, NULL, &noise, &out, &scratch, NULL, 0) == DP_OK)
            accepted++;
        enc.data[i] ^= 0x01;
    }
    CU_ASSERT_EQUAL(accepted, 0);
    printf("\n    %s: %zu of %zu flipped positions accepted", synth, accepted, enc.len);
    dp_key other;
    dptest_key(&other, 41);
    err[0] = '\0';
    CU_ASSERT_EQUAL(dp_state_decode(c, enc.data, enc.len, NULL, &other, &out, &scratch, err, sizeof err), DP_ECORRUPT);
    CU_ASSERT(strstr(err, "stream 'flip' at step 1 fails authentication") != NULL);
    dp_buf_free(&st);
    dp_buf_free(&enc);
    dp_buf_free(&scratch);
    dp_synth_destroy(sy);
    json_decref(cfg);
}

static void test_plaintext_snapshots_authenticated(void)
{
    dp_codec *c = NULL;
    dp_codec_options o = {0};
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_codec_create(&c, &o, err, sizeof err), DP_OK);
    flip_all(c, "window", "{\"horizon\":4,\"k\":2,\"rho\":1}");
    flip_all(c, "cumulative", "{\"horizon\":4,\"rho\":1}");
    dp_codec_destroy(c);
}

static const dptest_case CASES[] = {
    {"plaintext snapshots are authenticated: every flipped byte refused", test_plaintext_snapshots_authenticated},
    {"snapshot records round-trip, plain and sealed", test_roundtrip_plain_and_sealed},
    {"sealing is deterministic; the nonce follows plaintext and step", test_deterministic_nonce},
    {"any modified byte or another key is detected", test_tamper_detected},
    {"progress records round-trip; truncations refused", test_progress_roundtrip},
    {"the AEAD binds its associated data", test_seal_binds_associated_data},
    {"chunked snapshots: out of order, stale and missing chunks", test_chunked_snapshots},
    {"chunk keys cannot collide with stream ids", test_chunk_keys},
    {NULL, NULL},
};

int main(void) { return dptest_run("stream_state", CASES); }
