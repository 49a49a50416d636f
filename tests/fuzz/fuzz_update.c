/* fuzz_update.c — libFuzzer harness (issue 13): an input update in both
 * of its forms — the Avro bytes of the updates topic (the processor's
 * direct decoder, codec.h) and a JSON line (update_json.h, replay's
 * input) — and the same bytes as the body of an Update framed with a
 * foreign writer schema id, through Avro schema resolution
 * (codec_update_resolve.c): the first byte picks one of two writers
 * (dpstream's own schema under another id; an extra leading field and no
 * optional fields).  Seeds: tests/fuzz/seeds/update. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "connectors/jsonl/update_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    static dp_codec *codec;
    char err[512];
    if (!codec) {
        dp_codec_options o = {0};
        if (dp_codec_create(&codec, &o, err, sizeof err) != 0)
            __builtin_trap();
    }
    static dp_codec *resolving;
    if (!resolving) {
        dp_codec_options o = {.framing = DP_CODEC_FRAMING_CONFLUENT, .resolve_update_writers = 1};
        for (int t = 0; t < DP_CODEC_TYPE_COUNT; t++)
            o.schema_id[t] = 1;
        static const char extra_first[] =
            "{\"type\":\"record\",\"name\":\"Update\",\"namespace\":\"org.dpstream.v1\",\"fields\":["
            "{\"name\":\"source\",\"type\":[\"null\",\"string\"]},{\"name\":\"stream\",\"type\":\"string\"},"
            "{\"name\":\"step\",\"type\":\"long\"},{\"name\":\"kind\",\"type\":{\"type\":\"enum\","
            "\"name\":\"UpdateKind\",\"symbols\":[\"REPORT\",\"INSERT\",\"DELETE\",\"CLOSE_STEP\"]}}]}";
        if (dp_codec_create(&resolving, &o, err, sizeof err) != 0 ||
            dp_codec_add_update_writer(resolving, 2, dp_codec_schema_json(DP_CODEC_UPDATE), err, sizeof err) != 0 ||
            dp_codec_add_update_writer(resolving, 3, extra_first, err, sizeof err) != 0)
            __builtin_trap();
    }
    dp_update u;
    dp_update_store st = {0};
    (void)dp_codec_decode_update_into(codec, data, n, &u, &st, err, sizeof err);
    if (n > 0) {
        uint8_t *framed = malloc(n + 4);
        if (!framed)
            __builtin_trap();
        framed[0] = 0;
        framed[1] = framed[2] = framed[3] = 0;
        framed[4] = (uint8_t)(2 + (data[0] & 1));
        memcpy(framed + 5, data + 1, n - 1);
        (void)dp_codec_decode_update_into(resolving, framed, n + 4, &u, &st, err, sizeof err);
        free(framed);
    }
    dp_update_store_free(&st);
    dp_update_owned o;
    dp_update_owned_init(&o);
    (void)dp_update_json_parse((const char *)data, n, &o, err, sizeof err);
    dp_update_owned_free(&o);
    return 0;
}
