/* fuzz_seeds.c — seeds that need the code to make them:
 *   fuzz_seeds synth_restore DIR   real synthesizer snapshots (every entry of
 *                                  fuzz_synths.h after 0..3 steps)
 *   fuzz_seeds update DIR          Avro Updates of every kind and payload
 *   fuzz_seeds state_cas DIR       one-chunk incremental snapshots (manifest
 *                                  and chunk record, plain and sealed) */
#include <stdio.h>
#include <string.h>

#include "codec/codec.h"
#include "stream/state_cas.h"
#include "synth/common/synth.h"

#include "fuzz_synths.h"

static int seed(const char *dir, int which, int steps)
{
    json_error_t je;
    json_t *cfg = json_loads(FUZZ_SYNTH_CONFIGS[which], 0, &je);
    dp_key key;
    memset(&key, 7, sizeof key);
    dp_synth_env env = {&key, "fuzz", 4};
    dp_synth *s = NULL;
    char err[256];
    if (dp_synth_create(&s, FUZZ_SYNTH_NAMES[which], cfg, &env, err, sizeof err) != 0)
        return 1;
    dp_release_sink none = {0};
    for (int t = 1; t <= steps; t++) {
        for (int i = 0; i < 5; i++) {
            char id[8];
            snprintf(id, sizeof id, "u%d", i);
            int32_t row[3] = {(i + t) % 2, i % 3, t % 2};
            double point[3] = {0.1 * i, 0.3 + 0.1 * t, 0.5};
            int family = fuzz_synth_family(which);
            dp_update u = {.stream_id = "fuzz", .stream_id_len = 4, .step = (uint64_t)t,
                           .kind = family == 1 || family == 2 ? DP_UPDATE_INSERT : DP_UPDATE_REPORT,
                           .entity_id = id, .entity_id_len = strlen(id),
                           .payload = {.kind = family >= 2 ? DP_PAYLOAD_POINT
                                               : family ? DP_PAYLOAD_ROW : DP_PAYLOAD_CATEGORY,
                                       .category = (i + t) % 2,
                                       .row = row, .row_len = which == 3 ? 2 : 3,
                                       .point = point, .point_len = (size_t)fuzz_synth_dims(which)}};
            dp_reject_reason why;
            dp_synth_ingest(s, &u, &why);
        }
        dp_synth_close_step(s, &none, err, sizeof err);
    }
    dp_buf b;
    dp_buf_init(&b);
    int rc = dp_synth_snapshot(s, &b);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s%d-%d", dir, FUZZ_SYNTH_NAMES[which], which, steps);
    FILE *f = rc == 0 ? fopen(path, "wb") : NULL;
    uint8_t tag = (uint8_t)which;
    if (!f || fwrite(&tag, 1, 1, f) != 1 || fwrite(b.data, 1, b.len, f) != b.len)
        rc = 1;
    if (f)
        fclose(f);
    dp_buf_free(&b);
    dp_synth_destroy(s);
    json_decref(cfg);
    return rc;
}

static int avro_updates(const char *dir)
{
    dp_codec *c = NULL;
    dp_codec_options o = {0};
    char err[256];
    if (dp_codec_create(&c, &o, err, sizeof err) != 0)
        return 1;
    static const int32_t row[3] = {1, 0, 2};
    static const double pt[2] = {0.25, -3.5};
    dp_update us[4] = {
        {.stream_id = "p", .stream_id_len = 1, .step = 3, .kind = DP_UPDATE_REPORT, .entity_id = "u1",
         .entity_id_len = 2, .payload = {.kind = DP_PAYLOAD_CATEGORY, .category = 1}},
        {.stream_id = "t", .stream_id_len = 1, .step = 2, .kind = DP_UPDATE_INSERT,
         .payload = {.kind = DP_PAYLOAD_ROW, .row = row, .row_len = 3}},
        {.stream_id = "s", .stream_id_len = 1, .step = 9, .kind = DP_UPDATE_DELETE, .entity_id = "e",
         .entity_id_len = 1, .payload = {.kind = DP_PAYLOAD_POINT, .point = pt, .point_len = 2},
         .has_event_time = 1, .event_time_ms = 1700000000000},
        {.stream_id = "p", .stream_id_len = 1, .step = 4, .kind = DP_UPDATE_CLOSE_STEP},
    };
    int rc = 0;
    for (int i = 0; i < 4; i++) {
        dp_buf b;
        dp_buf_init(&b);
        char path[4096];
        snprintf(path, sizeof path, "%s/avro-%d", dir, i);
        FILE *f = NULL;
        if (dp_codec_encode_update_buf(c, &us[i], &b, err, sizeof err) != 0 || !(f = fopen(path, "wb")) ||
            fwrite(b.data, 1, b.len, f) != b.len)
            rc = 1;
        if (f)
            fclose(f);
        dp_buf_free(&b);
    }
    dp_codec_destroy(c);
    return rc;
}

static int keep_chunk(void *ctx, const uint8_t *key, size_t key_len, const uint8_t *val, size_t val_len)
{
    (void)key;
    (void)key_len;
    dp_buf *b = ctx;
    b->len = 0;
    dp_buf_put_bytes(b, val, val_len);
    return dp_buf_status(b);
}

/* u16 manifest length ‖ manifest ‖ chunk record (fuzz_state_cas.c) */
static int cas_seeds(const char *dir)
{
    dp_key k;
    memset(&k, 7, sizeof k);
    static const uint8_t state[] = "a small synthesizer state: roster u1 u2 u3, histories 0 1 1";
    int rc = 0;
    for (int sealed = 0; sealed <= 1; sealed++) {
        dp_cas_stream cs = {.stream_id = "fuzz", .stream_id_len = 4, .updates_topic = "t", .updates_topic_len = 1,
                            .partition = 0};
        dp_buf manifest, digests, chunk, out;
        dp_buf_init(&manifest);
        dp_buf_init(&digests);
        dp_buf_init(&chunk);
        dp_buf_init(&out);
        size_t nw = 0, w = 0;
        char err[256], path[4096];
        FILE *f = NULL;
        if (dp_cas_write(&cs, state, sizeof state, 4096, sealed ? &k : NULL, &k, NULL, 0, &manifest, &digests,
                         keep_chunk, &chunk, &nw, &w, err, sizeof err) != 0 || nw != 1)
            rc = 1;
        dp_buf_put_u8(&out, (uint8_t)manifest.len);
        dp_buf_put_u8(&out, (uint8_t)(manifest.len >> 8));
        dp_buf_put_bytes(&out, manifest.data, manifest.len);
        dp_buf_put_bytes(&out, chunk.data, chunk.len);
        snprintf(path, sizeof path, "%s/cas-%d", dir, sealed);
        if (rc || !(f = fopen(path, "wb")) || fwrite(out.data, 1, out.len, f) != out.len)
            rc = 1;
        if (f)
            fclose(f);
        dp_buf_free(&manifest);
        dp_buf_free(&digests);
        dp_buf_free(&chunk);
        dp_buf_free(&out);
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    if (strcmp(argv[1], "update") == 0)
        return avro_updates(argv[2]);
    if (strcmp(argv[1], "state_cas") == 0)
        return cas_seeds(argv[2]);
    if (strcmp(argv[1], "synth_restore") != 0)
        return 0;   /* the other harnesses' seeds are files in tests/fuzz/seeds */
    int rc = 0;
    for (int which = 0; which < FUZZ_SYNTHS; which++)
        for (int steps = 0; steps <= 3; steps++)
            rc |= seed(argv[2], which, steps);
    return rc;
}
