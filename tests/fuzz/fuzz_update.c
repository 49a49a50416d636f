/* fuzz_update.c — libFuzzer harness (issue 13): an input update in both
 * of its forms — the Avro bytes of the updates topic (the processor's
 * direct decoder, codec.h) and a JSON line (update_json.h, replay's
 * input).  Seeds: tests/fuzz/seeds/update. */
#include <stddef.h>
#include <stdint.h>

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
    dp_update u;
    dp_update_store st = {0};
    (void)dp_codec_decode_update_into(codec, data, n, &u, &st, err, sizeof err);
    dp_update_store_free(&st);
    dp_update_owned o;
    dp_update_owned_init(&o);
    (void)dp_update_json_parse((const char *)data, n, &o, err, sizeof err);
    dp_update_owned_free(&o);
    return 0;
}
