/* fuzz_config.c — libFuzzer harness (issue 13): the processor's
 * configuration parser, every route and synthesizer config check
 * (stream_config.h).  Seeds: tests/fuzz/seeds/config (window.json holds a
 * cumulative BLT stream).  docs/design.md §7. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stream/stream_config.h"

/* The BLT counter is fitted at config time, one coordinate search per
 * (horizon, buffers) pair — O(T·d·iterations) — and a cumulative stream of
 * horizon T needs a fit for every horizon 1..T (its ρ split probes each
 * counter's variance): ~0.8 s at T = 1024 in the release build, more under
 * ASan, and a config may hold many such streams of distinct horizons and
 * buffer counts.  That is a fuzzer timeout, not a finding (issue 41).  So
 * an input that can name the BLT counter — it holds "blt", or a \u escape
 * that could spell it — is fuzzed only while every number in it is at
 * most BLT_MAX_NUMBER: every horizon is then <= 64 and, with buffers <= 16,
 * there are at most 64 × 16 distinct fits of ~0.05 ms each, which the
 * process-wide fit memo (counter_blt.c) pays once per fuzzing run.  The
 * bound reads every digit run with strtod (so 1e3 and 0.5e3 count as
 * 1000 and 500): conservative, it may skip some configs it need not. */
#define BLT_MAX_NUMBER 64.0

static int mentions_blt(const uint8_t *data, size_t n)
{
    for (size_t i = 0; i + 2 <= n; i++)
        if ((i + 3 <= n && memcmp(data + i, "blt", 3) == 0) || memcmp(data + i, "\\u", 2) == 0)
            return 1;
    return 0;
}

static int numbers_small(const uint8_t *data, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (data[i] < '0' || data[i] > '9' || (i > 0 && data[i - 1] >= '0' && data[i - 1] <= '9'))
            continue;
        char num[48];
        size_t k = 0;
        while (i + k < n && k + 1 < sizeof num && data[i + k] && strchr("0123456789.eE+-", data[i + k])) {
            num[k] = (char)data[i + k];
            k++;
        }
        if (k + 1 == sizeof num)
            return 0;             /* a digit run this long: not small */
        num[k] = '\0';
        double v = strtod(num, NULL);
        if (!(v <= BLT_MAX_NUMBER))
            return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    if (mentions_blt(data, n) && !numbers_small(data, n))
        return 0;
    dp_stream_config *c = NULL;
    char err[1024];
    if (dp_stream_config_parse(&c, (const char *)data, n, err, sizeof err) == 0)
        dp_stream_config_free(c);
    return 0;
}
