/* test_snapshot_inspect.c — opening a stream's snapshot for inspection
 * (stream/snapshot_inspect.h), from state-topic records built as the
 * processor writes them (chunked, sealed or plain):
 *   - with the right state key: authenticated, the ledger, open step and
 *     key fingerprint are the synthesizer's; its state bytes come back only
 *     when asked for;
 *   - the noise key, given, is checked against the state's; another one is
 *     refused (DP_EKEY); without it the synthesizer opens read-only and can
 *     neither release nor be snapshotted;
 *   - a wrong state key, a tampered or missing chunk, a plaintext MAC
 *     under another noise key: refused (DP_ECORRUPT) with the public
 *     header still reported; a missing key: DP_EINVAL naming the option;
 *   - a stream the configuration no longer routes to its synthesizer. */
#include "dptest.h"
#include "synth_testkit.h"

#include "codec/codec.h"
#include "core/bytes_map.h"
#include "stream/snapshot_inspect.h"
#include "stream/state_read.h"
#include "stream/state_record.h"
#include "stream/stream_config.h"

static const char WINDOW_CFG[] = "{\"horizon\": 6, \"k\": 2, \"categories\": 2, \"rho\": 0.5}";

/* A window stream "win/a" after `steps` closed steps, its state bytes in *out. */
static void window_state(const dp_key *key, int steps, dp_buf *out, double *spent)
{
    json_t *cfg = tk_cfg_text("%s", WINDOW_CFG);
    dp_synth_env env = {key, "win/a", 5};
    dp_synth *s = NULL;
    char err[256] = "";
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, "window", cfg, &env, err, sizeof err), DP_OK);
    tk_sink k;
    tk_sink_init(&k);
    dp_release_sink sink = tk_sink_of(&k);
    dp_reject_reason why;
    for (int t = 1; t <= steps; t++) {
        for (int i = 0; i < 30; i++) {
            char id[8];
            snprintf(id, sizeof id, "u%d", i);
            tk_report(s, (uint64_t)t, id, (i + t) % 2, &why);
        }
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &sink, err, sizeof err), DP_OK);
    }
    *spent = dp_synth_ledger(s)->spent;
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(s, out), DP_OK);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(cfg);
}

typedef struct emit_ctx {
    dp_bytes_map *map;
    const char   *id;
} emit_ctx;

/* Each encoded chunk under its state-topic key, as a state reader holds it. */
static int put_chunk(void *ctx, uint32_t index, uint32_t count, const dp_buf *enc)
{
    (void)count;
    emit_ctx *e = ctx;
    dp_buf key;
    dp_buf_init(&key);
    CU_ASSERT_EQUAL_FATAL(dp_state_snapshot_key(e->id, strlen(e->id), index, &key), DP_OK);
    dp_bytes_map_slot *s = dp_bytes_map_upsert(e->map, key.data, key.len);
    dp_state_piece *v = malloc(sizeof *v);
    uint8_t *bytes = malloc(enc->len);
    memcpy(bytes, enc->data, enc->len);
    *v = (dp_state_piece){.data = bytes, .len = enc->len};
    s->value = v;
    dp_buf_free(&key);
    return DP_OK;
}

static void build_topic(dp_codec *codec, dp_bytes_map *map, const dp_buf *state, const dp_key *state_key,
                        const dp_key *mac_key, size_t chunk_bytes)
{
    dp_state_record r = {.kind = DP_STATE_SNAPSHOT, .updates_topic = "t.updates", .updates_topic_len = 9,
                         .partition = 2, .stream_id = "win/a", .stream_id_len = 5, .skip_below = 4321,
                         .open_step = 4, .synthesizer = "window", .state = state->data, .state_len = state->len};
    dp_buf enc;
    dp_buf_init(&enc);
    emit_ctx e = {map, "win/a"};
    char err[256] = "";
    CU_ASSERT_EQUAL_FATAL(dp_state_encode_snapshot_chunks(codec, &r, state_key, mac_key, chunk_bytes, &enc, put_chunk,
                                                          &e, err, sizeof err), DP_OK);
    dp_buf_free(&enc);
}

static dp_stream_config *config(const char *synth)
{
    char text[512];
    snprintf(text, sizeof text, "{\"streams\": [{\"match\": \"win/a\", \"synthesizer\": \"%s\", \"config\": %s}]}",
             synth, strcmp(synth, "window") == 0 ? WINDOW_CFG : "{\"horizon\": 6, \"rho\": 0.5}");
    dp_stream_config *c = NULL;
    char err[512] = "";
    CU_ASSERT_EQUAL_FATAL(dp_stream_config_parse(&c, text, strlen(text), err, sizeof err), DP_OK);
    return c;
}

static int inspect(dp_codec *codec, const dp_stream_config *cfg, dp_bytes_map *map, const dp_key *state_key,
                   const dp_key *noise_key, int keep, dp_snapshot_view *v)
{
    const dp_state_piece *first = dp_state_read_lookup(map, "win/a", 5);
    CU_ASSERT_PTR_NOT_NULL_FATAL(first);
    return dp_snapshot_inspect(codec, cfg, "win/a", 5, first, dp_state_read_lookup, map, map->count, state_key,
                               noise_key, keep, v);
}

static dp_codec *codec_new(void)
{
    dp_codec *c = NULL;
    dp_codec_options o;
    memset(&o, 0, sizeof o);
    CU_ASSERT_EQUAL_FATAL(dp_codec_create(&c, &o, NULL, 0), DP_OK);
    return c;
}

static void check_header(const dp_snapshot_view *v, int sealed)
{
    CU_ASSERT_TRUE(v->header_ok);
    CU_ASSERT_STRING_EQUAL(v->stream_id, "win/a");
    CU_ASSERT_STRING_EQUAL(v->synthesizer, "window");
    CU_ASSERT_STRING_EQUAL(v->updates_topic, "t.updates");
    CU_ASSERT_EQUAL(v->partition, 2);
    CU_ASSERT_EQUAL(v->input_offset, 4321);
    CU_ASSERT_EQUAL(v->last_closed_step, 3);
    CU_ASSERT(v->chunk_count > 1);
    CU_ASSERT_EQUAL(v->sealed, sealed);
}

static void test_sealed(void)
{
    dp_key noise, other, skey, wrong;
    dptest_key(&noise, 1);
    dptest_key(&other, 2);
    dptest_key(&skey, 3);
    dptest_key(&wrong, 4);
    dp_buf state;
    dp_buf_init(&state);
    double spent;
    window_state(&noise, 3, &state, &spent);
    dp_codec *codec = codec_new();
    dp_stream_config *cfg = config("window");
    dp_bytes_map map;
    dp_bytes_map_init(&map);
    build_topic(codec, &map, &state, &skey, &noise, 64);

    /* the state key alone: opened read-only, the state's key reported */
    dp_snapshot_view v;
    CU_ASSERT_EQUAL(inspect(codec, cfg, &map, &skey, NULL, 0, &v), DP_OK);
    check_header(&v, 1);
    CU_ASSERT_TRUE(v.authenticated);
    CU_ASSERT_FALSE(v.key_checked);
    char fp[DP_KEY_FINGERPRINT_HEX];
    dp_key_fingerprint(&noise, fp);
    CU_ASSERT_STRING_EQUAL(v.key_fingerprint, fp);
    CU_ASSERT_EQUAL(dp_synth_open_step(v.synth), 4);
    CU_ASSERT_EQUAL(dp_synth_ledger(v.synth)->spent, spent);
    CU_ASSERT_EQUAL(dp_synth_ledger(v.synth)->n_entries, 2);   /* steps 2 and 3 (k = 2) */
    CU_ASSERT_TRUE(v.has_plan);
    CU_ASSERT_STRING_EQUAL(v.plan.mechanism, "window/discrete_gaussian");
    CU_ASSERT_EQUAL(v.state.len, 0);   /* not asked for */
    /* read-only: it can neither release nor be stored */
    char err[256] = "";
    dp_release_sink none = {0};
    CU_ASSERT_EQUAL(dp_synth_close_step(v.synth, &none, err, sizeof err), DP_ESTATE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "read-only"));
    dp_buf again;
    dp_buf_init(&again);
    CU_ASSERT_EQUAL(dp_synth_snapshot(v.synth, &again), DP_ESTATE);
    dp_buf_free(&again);
    dp_snapshot_view_free(&v);

    /* asked for: the exact state bytes */
    CU_ASSERT_EQUAL(inspect(codec, cfg, &map, &skey, NULL, 1, &v), DP_OK);
    CU_ASSERT_EQUAL_FATAL(v.state.len, state.len);
    CU_ASSERT(memcmp(v.state.data, state.data, state.len) == 0);
    dp_snapshot_view_free(&v);

    /* with its noise key: checked; with another: refused as run refuses it */
    CU_ASSERT_EQUAL(inspect(codec, cfg, &map, &skey, &noise, 0, &v), DP_OK);
    CU_ASSERT_TRUE(v.key_checked);
    dp_snapshot_view_free(&v);
    CU_ASSERT_EQUAL(inspect(codec, cfg, &map, &skey, &other, 0, &v), DP_EKEY);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.error, "another noise key"));
    CU_ASSERT_PTR_NULL(v.synth);
    dp_snapshot_view_free(&v);

    /* a wrong state key: refused, naming the stream; the header is still there */
    CU_ASSERT_EQUAL(inspect(codec, cfg, &map, &wrong, NULL, 1, &v), DP_ECORRUPT);
    check_header(&v, 1);
    CU_ASSERT_FALSE(v.authenticated);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.error, "'win/a'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(v.error, "does not authenticate"));
    CU_ASSERT_EQUAL(v.state.len, 0);
    dp_snapshot_view_free(&v);

    /* no state key */
    CU_ASSERT_EQUAL(inspect(codec, cfg, &map, NULL, &noise, 0, &v), DP_EINVAL);
    CU_ASSERT_TRUE(v.needs_key);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.error, "--state-key-file"));
    dp_snapshot_view_free(&v);

    /* a stream routed to another synthesizer */
    dp_stream_config *cum = config("cumulative");
    CU_ASSERT_EQUAL(inspect(codec, cum, &map, &skey, NULL, 0, &v), DP_EINVAL);
    CU_ASSERT_FALSE(v.needs_key);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.error, "does not route"));
    dp_snapshot_view_free(&v);
    dp_stream_config_free(cum);

    /* a tampered ciphertext byte in chunk 1, then chunk 1 missing */
    dp_buf k1;
    dp_buf_init(&k1);
    dp_state_snapshot_key("win/a", 5, 1, &k1);
    dp_state_piece *c1 = dp_bytes_map_find(&map, k1.data, k1.len)->value;
    uint8_t *b = (uint8_t *)c1->data;
    b[c1->len - 3] ^= 1;
    CU_ASSERT_EQUAL(inspect(codec, cfg, &map, &skey, NULL, 0, &v), DP_ECORRUPT);
    dp_snapshot_view_free(&v);
    b[c1->len - 3] ^= 1;
    dp_bytes_map_find(&map, k1.data, k1.len)->value = NULL;
    CU_ASSERT_EQUAL(inspect(codec, cfg, &map, &skey, NULL, 0, &v), DP_ECORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.error, "incomplete"));
    dp_snapshot_view_free(&v);
    dp_bytes_map_find(&map, k1.data, k1.len)->value = c1;
    CU_ASSERT_EQUAL(inspect(codec, cfg, &map, &skey, NULL, 0, &v), DP_OK);
    dp_snapshot_view_free(&v);
    dp_buf_free(&k1);

    dp_state_read_free(&map);
    dp_stream_config_free(cfg);
    dp_codec_destroy(codec);
    dp_buf_free(&state);
}

static void test_plaintext(void)
{
    dp_key noise, other;
    dptest_key(&noise, 1);
    dptest_key(&other, 2);
    dp_buf state;
    dp_buf_init(&state);
    double spent;
    window_state(&noise, 3, &state, &spent);
    dp_codec *codec = codec_new();
    dp_stream_config *cfg = config("window");
    dp_bytes_map map;
    dp_bytes_map_init(&map);
    build_topic(codec, &map, &state, NULL, &noise, 100);
    dp_snapshot_view v;
    /* the MAC verifies under the noise key */
    CU_ASSERT_EQUAL(inspect(codec, cfg, &map, NULL, &noise, 0, &v), DP_OK);
    check_header(&v, 0);
    CU_ASSERT_TRUE(v.authenticated && v.key_checked);
    CU_ASSERT_EQUAL(dp_synth_ledger(v.synth)->spent, spent);
    dp_snapshot_view_free(&v);
    /* a state key given for a plaintext snapshot is not needed */
    CU_ASSERT_EQUAL(inspect(codec, cfg, &map, &other, &noise, 0, &v), DP_OK);
    dp_snapshot_view_free(&v);
    /* another noise key: the MAC fails (unauthentic) */
    CU_ASSERT_EQUAL(inspect(codec, cfg, &map, NULL, &other, 0, &v), DP_ECORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.error, "fails authentication"));
    dp_snapshot_view_free(&v);
    /* no noise key: it cannot be verified, so it is not read */
    CU_ASSERT_EQUAL(inspect(codec, cfg, &map, NULL, NULL, 1, &v), DP_EINVAL);
    CU_ASSERT_TRUE(v.needs_key);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.error, "--key-file"));
    CU_ASSERT_EQUAL(v.state.len, 0);
    dp_snapshot_view_free(&v);
    dp_state_read_free(&map);
    dp_stream_config_free(cfg);
    dp_codec_destroy(codec);
    dp_buf_free(&state);
}

static void test_not_a_snapshot(void)
{
    dp_codec *codec = codec_new();
    dp_stream_config *cfg = config("window");
    static const uint8_t junk[] = "not avro at all";
    dp_state_piece p = {junk, sizeof junk};
    dp_snapshot_view v;
    CU_ASSERT_EQUAL(dp_snapshot_inspect(codec, cfg, "win/a", 5, &p, dp_state_read_lookup, NULL, 1, NULL, NULL, 0, &v),
                    DP_ECORRUPT);
    CU_ASSERT_FALSE(v.header_ok);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.error, "not a snapshot"));
    dp_snapshot_view_free(&v);
    dp_stream_config_free(cfg);
    dp_codec_destroy(codec);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"sealed: opened with the state key, keys checked, refusals", test_sealed},
        {"plaintext: verified by its MAC under the noise key", test_plaintext},
        {"a record that is not a snapshot", test_not_a_snapshot},
        {NULL, NULL},
    };
    return dptest_run("snapshot_inspect", cases);
}
