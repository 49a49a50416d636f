/* fuzz_load.c — libFuzzer harness (issue 13): `dpstream load` end to end
 * on one input (connectors/load/load_run.h): byte 0 picks the row source,
 * CSV (odd) or JSON lines (even), the rest is the file, loaded with a fixed mapping (time column,
 * labels, close-step markers) into /dev/null.  Seeds: tests/fuzz/seeds/load. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "connectors/load/load_run.h"

static dp_load_mapping g_map;
static int g_ready;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    if (n < 1)
        return 0;
    char err[512];
    if (!g_ready) {
        json_error_t je;
        json_t *m = json_loads("{\"stream\": {\"column\": \"s\"}, \"step\": {\"column\": \"t\", \"origin\": 1},"
                               " \"entity\": {\"column\": \"e\"}, \"payload\": {\"type\": \"category\","
                               " \"column\": \"v\", \"labels\": {\"no\": 0, \"yes\": 1}}}", 0, &je);
        if (!m || dp_load_mapping_from_json(&g_map, m, err, sizeof err) != 0)
            __builtin_trap();
        json_decref(m);
        g_ready = 1;
    }
    FILE *in = fmemopen((void *)(data + 1), n - 1 ? n - 1 : 1, "rb");
    FILE *out = fopen("/dev/null", "wb");
    if (in && out) {
        dp_load_options o = {.map = &g_map, .in = in, .input_name = "fuzz", .format = (data[0] & 1) ? DP_ROW_CSV : DP_ROW_JSONL, .out = out,
                             .close_steps = 1, .max_gap = 16, .quiet = 1};
        dp_load_summary sum;
        (void)dp_load_run(&o, &sum, err, sizeof err);
    }
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    return 0;
}
