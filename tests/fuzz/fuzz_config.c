/* fuzz_config.c — libFuzzer harness (issue 13): the processor's
 * configuration parser, every route and synthesizer config check
 * (stream_config.h).  Seeds: tests/fuzz/seeds/config. */
#include <stddef.h>
#include <stdint.h>

#include "stream/stream_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    dp_stream_config *c = NULL;
    char err[1024];
    if (dp_stream_config_parse(&c, (const char *)data, n, err, sizeof err) == 0)
        dp_stream_config_free(c);
    return 0;
}
