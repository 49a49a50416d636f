/* fuzz_state_cas.c — libFuzzer harness (issue 20): what a restore makes of
 * an incremental snapshot's parts (stream/state_cas.h).  Input: u16 (little
 * endian) length L ‖ L bytes of chunk manifest ‖ one content-chunk record,
 * which the lookup returns under every key.  The manifest is authenticated
 * in a real restore, the chunk record is not (it is checked against the
 * manifest's keyed digest after parsing), so both parsers must survive any
 * bytes; also the content-defined cutter on the raw input.  Seeds:
 * fuzz_seeds state_cas (a real one-chunk snapshot, plain and sealed). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "stream/state_cas.h"

static dp_state_piece g_chunk;

static const dp_state_piece *any_key(void *ctx, const void *key, size_t key_len)
{
    (void)ctx;
    (void)key;
    (void)key_len;
    return &g_chunk;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    dp_key k;
    memset(&k, 7, sizeof k);
    size_t *ends = NULL, n_ends = 0;
    if (dp_cas_split(data, n, 64, &ends, &n_ends) == 0) {
        size_t prev = 0;
        for (size_t i = 0; i < n_ends; i++) {
            if (ends[i] <= prev || ends[i] - prev > 64)
                __builtin_trap();
            prev = ends[i];
        }
        if (prev != n)
            __builtin_trap();
    }
    free(ends);
    if (n < 2)
        return 0;
    size_t l = (size_t)data[0] | (size_t)data[1] << 8;
    if (l > n - 2)
        l = n - 2;
    const uint8_t *manifest = data + 2;
    g_chunk.data = data + 2 + l;
    g_chunk.len = n - 2 - l;
    const char *topic;
    size_t topic_len;
    int32_t part;
    (void)dp_cas_chunk_owner(g_chunk.data, g_chunk.len, &topic, &topic_len, &part);
    dp_buf state, digests;
    dp_buf_init(&state);
    dp_buf_init(&digests);
    char err[512];
    for (int sealed = 0; sealed <= 1; sealed++) {
        int rc = dp_cas_assemble("fuzz", 4, 1, manifest, l, any_key, NULL, sealed ? &k : NULL, &k, &state,
                                 &digests, err, sizeof err);
        if (rc != 0 && state.len != 0)
            __builtin_trap();   /* a refused restore leaves no partial state */
    }
    dp_buf_free(&state);
    dp_buf_free(&digests);
    return 0;
}
