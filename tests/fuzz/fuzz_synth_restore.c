/* fuzz_synth_restore.c — libFuzzer harness (issue 13): a synthesizer state
 * as restore reads it after the snapshot's MAC or seal has verified it
 * (synth.h dp_synth_restore), then one step closed on the restored state,
 * where an out-of-range field would overflow.  Byte 0 picks window,
 * cumulative, marginal or spatial configurations (fuzz_synths.h).  Seeds:
 * fuzz_seeds writes real snapshots (scripts/fuzz.sh). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/dp_error.h"
#include "synth/common/synth.h"

#include "fuzz_synths.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    if (n < 1)
        return 0;
    int which = data[0] % FUZZ_SYNTHS;
    json_error_t je;
    json_t *cfg = json_loads(FUZZ_SYNTH_CONFIGS[which], 0, &je);
    dp_key key;
    memset(&key, 7, sizeof key);
    dp_synth_env env = {&key, "fuzz", 4};
    dp_synth *s = NULL;
    char err[512];
    if (dp_synth_restore(&s, FUZZ_SYNTH_NAMES[which], cfg, &env, data + 1, n - 1, err, sizeof err) == DP_OK) {
        dp_release_sink none = {0};
        if (!dp_synth_exhausted(s))
            (void)dp_synth_close_step(s, &none, err, sizeof err);
        dp_synth_destroy(s);
    }
    json_decref(cfg);
    return 0;
}
