/* test_synth_contract.c — what every registered synthesizer owes the rest
 * of dpstream, checked by walking the registry (dp_synth_ops_at), so a new
 * synthesizer is held to it by its one registration line in
 * processor/synth/common/synth.c:
 *
 *   1. it creates from its ops' example_config and takes a few valid data
 *      updates (made here from its update_kind and payload_kind: a
 *      category, a row of the example's attributes, a point of the
 *      example's dimension) and closes two steps;
 *   2. its snapshot restores into a fresh instance whose snapshot is the
 *      same bytes, and a further step closes to byte-identical output in
 *      both;
 *   3. its plaintext snapshot, sealed into a state record as the processor
 *      writes it, has every flipped byte refused (the MAC, issue 13.A1;
 *      test_stream_state.c checks window and cumulative in more detail);
 *   4. it appears in the demo and in the restore fuzzer.  The fuzz list is
 *      FUZZ_SYNTH_NAMES, included from tests/fuzz/fuzz_synths.h; the demo
 *      list is the dp_synth_create calls of processor/demo/
 *      demo_longitudinal.c (the offline demo, which the Kafka demo's routes
 *      mirror), read from the source tree (DPSTREAM_SOURCE_DIR, set by
 *      ctest): a line with `dp_synth_create(` and the quoted name. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "../fuzz/fuzz_synths.h"
#include "codec/codec.h"
#include "dptest.h"
#include "stream/state_record.h"
#include "synth_testkit.h"

#define CONTRACT_ENTITIES 4
#define CONTRACT_MAX_DIMS 8

/* The shape of a synthesizer's payload, read from its example config. */
typedef struct contract_shape {
    size_t row_len;   /* ROW: the number of attributes */
    size_t dims;      /* POINT: the box's dimension, or "dims", else 2 */
} contract_shape;

static contract_shape shape_of(const json_t *cfg)
{
    contract_shape sh = {0, 2};
    const json_t *attrs = json_object_get(cfg, "attributes");
    if (json_is_array(attrs))
        sh.row_len = json_array_size(attrs);
    const json_t *box = json_object_get(cfg, "box");
    const json_t *dims = json_object_get(cfg, "dims");
    if (json_is_array(box))
        sh.dims = json_array_size(box);
    else if (json_is_integer(dims))
        sh.dims = (size_t)json_integer_value(dims);
    return sh;
}

/* Ingest entity i's update of `step`; it must be used. */
static void ingest_one(dp_synth *s, const dp_synth_ops *ops, const contract_shape *sh, uint64_t step, int i)
{
    char id[32];
    int32_t row[CONTRACT_MAX_DIMS] = {0};
    double point[CONTRACT_MAX_DIMS] = {0};
    /* reports: the same entities every step (a roster); inserts: new rows */
    if (ops->update_kind == DP_UPDATE_REPORT)
        snprintf(id, sizeof id, "e%d", i);
    else
        snprintf(id, sizeof id, "e%llu_%d", (unsigned long long)step, i);
    dp_update u = {.stream_id = "contract", .stream_id_len = 8, .step = step, .kind = ops->update_kind,
                   .entity_id = id, .entity_id_len = strlen(id)};
    u.payload.kind = ops->payload_kind;
    switch (ops->payload_kind) {
    case DP_PAYLOAD_CATEGORY:
        u.payload.category = (int64_t)((step + (uint64_t)i) % 2);
        break;
    case DP_PAYLOAD_ROW:
        CU_ASSERT_FATAL(sh->row_len > 0 && sh->row_len <= CONTRACT_MAX_DIMS);
        for (size_t a = 0; a < sh->row_len; a++)
            row[a] = (int32_t)((step + (uint64_t)i + a) % 2);
        u.payload.row = row;
        u.payload.row_len = sh->row_len;
        break;
    case DP_PAYLOAD_POINT:
        CU_ASSERT_FATAL(sh->dims > 0 && sh->dims <= CONTRACT_MAX_DIMS);
        for (size_t d = 0; d < sh->dims; d++)
            point[d] = 0.1 + 0.2 * (double)i + 0.05 * (double)d + 0.01 * (double)step;
        u.payload.point = point;
        u.payload.point_len = sh->dims;
        break;
    default:
        CU_FAIL_FATAL("a synthesizer without a payload kind");
    }
    dp_reject_reason why = DP_REJECT_NONE;
    CU_ASSERT_EQUAL_FATAL(dp_synth_ingest(s, &u, &why), DP_OK);
    if (why != DP_REJECT_NONE)
        printf("\n    %s: the example update of step %llu was %s", ops->name, (unsigned long long)step,
               dp_reject_reason_name(why));
    CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
}

static void ingest_step(dp_synth *s, const dp_synth_ops *ops, const contract_shape *sh, uint64_t step)
{
    for (int i = 0; i < CONTRACT_ENTITIES; i++)
        ingest_one(s, ops, sh, step, i);
}

static void close_into(dp_synth *s, tk_sink *sink)
{
    dp_release_sink rs = tk_sink_of(sink);
    char err[256];
    int rc = dp_synth_close_step(s, &rs, err, sizeof err);
    if (rc != DP_OK)
        printf("\n    close: %s", err);
    CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
}

/* 3: every flipped byte of the sealed plaintext snapshot is refused. */
static void check_flips(const dp_synth_ops *ops, const dp_buf *st, const dp_key *noise)
{
    dp_codec *c = NULL;
    dp_codec_options o = {0};
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_codec_create(&c, &o, err, sizeof err), DP_OK);
    dp_state_record r = {.kind = DP_STATE_SNAPSHOT, .updates_topic = "t.updates", .updates_topic_len = 9,
                         .partition = 0, .stream_id = "contract", .stream_id_len = 8, .skip_below = 17,
                         .open_step = 3, .synthesizer = ops->name, .state = st->data, .state_len = st->len};
    dp_buf enc, scratch;
    dp_buf_init(&enc);
    dp_buf_init(&scratch);
    CU_ASSERT_EQUAL_FATAL(dp_state_encode_snapshot(c, &r, NULL, noise, &enc, err, sizeof err), DP_OK);
    dp_state_record out;
    CU_ASSERT_EQUAL_FATAL(dp_state_decode(c, enc.data, enc.len, NULL, noise, &out, &scratch, err, sizeof err),
                          DP_OK);
    size_t accepted = 0;
    for (size_t i = 0; i < enc.len; i++) {
        enc.data[i] ^= 0x01;
        if (dp_state_decode(c, enc.data, enc.len, NULL, noise, &out, &scratch, NULL, 0) == DP_OK)
            accepted++;
        enc.data[i] ^= 0x01;
    }
    printf("\n    %s: %zu of %zu flipped positions accepted", ops->name, accepted, enc.len);
    CU_ASSERT_EQUAL(accepted, 0);
    dp_buf_free(&enc);
    dp_buf_free(&scratch);
    dp_codec_destroy(c);
}

/* 1-3 for one synthesizer. */
static void check_one(const dp_synth_ops *ops)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(ops->example_config);
    json_error_t je;
    json_t *cfg = json_loads(ops->example_config, 0, &je);
    if (!cfg)
        printf("\n    %s: example_config: %s", ops->name, je.text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    contract_shape sh = shape_of(cfg);
    dp_key noise;
    dptest_key(&noise, 37);
    dp_synth_env env = {&noise, "contract", 8};
    dp_synth *s = NULL;
    char err[256];
    int rc = dp_synth_create(&s, ops->name, cfg, &env, err, sizeof err);
    if (rc != DP_OK)
        printf("\n    %s: create from its example: %s", ops->name, err);
    CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
    tk_sink first, again;
    tk_sink_init(&first);
    tk_sink_init(&again);
    for (uint64_t step = 1; step <= 2; step++) {
        ingest_step(s, ops, &sh, step);
        close_into(s, &first);
    }
    CU_ASSERT(first.budgets == 2);
    /* 2: restore into a fresh instance; the same bytes, the same next step */
    dp_buf snap, snap2;
    dp_buf_init(&snap);
    dp_buf_init(&snap2);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(s, &snap), DP_OK);
    dp_synth *r = NULL;
    rc = dp_synth_restore(&r, ops->name, cfg, &env, snap.data, snap.len, err, sizeof err);
    if (rc != DP_OK)
        printf("\n    %s: restore: %s", ops->name, err);
    CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(r, &snap2), DP_OK);
    CU_ASSERT(snap.len == snap2.len && memcmp(snap.data, snap2.data, snap.len) == 0);
    tk_sink_free(&first);
    tk_sink_init(&first);
    ingest_step(s, ops, &sh, 3);
    ingest_step(r, ops, &sh, 3);
    close_into(s, &first);
    close_into(r, &again);
    CU_ASSERT(first.out.len > 0);
    CU_ASSERT(first.out.len == again.out.len && memcmp(first.out.data, again.out.data, first.out.len) == 0);
    /* 3 */
    check_flips(ops, &snap, &noise);
    dp_buf_free(&snap);
    dp_buf_free(&snap2);
    tk_sink_free(&first);
    tk_sink_free(&again);
    dp_synth_destroy(s);
    dp_synth_destroy(r);
    json_decref(cfg);
}

static void test_every_synthesizer_keeps_the_contract(void)
{
    size_t n = 0;
    for (const dp_synth_ops *ops; (ops = dp_synth_ops_at(n)) != NULL; n++) {
        printf("\n  %s", ops->name);
        CU_ASSERT_PTR_EQUAL(dp_synth_ops_find(ops->name), ops);
        check_one(ops);
    }
    CU_ASSERT(n >= 6);
}

/* The whole text of a source file (NULL-terminated), or NULL. */
static char *read_source(const char *rel)
{
    const char *root = getenv("DPSTREAM_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root ? root : "..", rel);
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("\n    cannot read %s", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (text && fread(text, 1, (size_t)len, f) == (size_t)len)
        text[len] = '\0';
    else {
        free(text);
        text = NULL;
    }
    fclose(f);
    return text;
}

/* 1 if a line of text has both `call` and `"name"`. */
static int line_names(const char *text, const char *call, const char *name)
{
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", name);
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *c = strstr(line, call), *q = strstr(line, quoted);
        if (c && q && (size_t)(c - line) < len && (size_t)(q - line) < len)
            return 1;
        line = end ? end + 1 : NULL;
    }
    return 0;
}

static void test_every_synthesizer_in_demo_and_fuzz(void)
{
    char *demo = read_source("processor/demo/demo_longitudinal.c");
    CU_ASSERT_PTR_NOT_NULL_FATAL(demo);
    for (size_t i = 0; dp_synth_ops_at(i); i++) {
        const char *name = dp_synth_ops_at(i)->name;
        int in_fuzz = 0;
        for (int k = 0; k < FUZZ_SYNTHS; k++)
            in_fuzz |= strcmp(FUZZ_SYNTH_NAMES[k], name) == 0;
        if (!in_fuzz)
            printf("\n    %s is not in tests/fuzz/fuzz_synths.h", name);
        CU_ASSERT(in_fuzz);
        int in_demo = line_names(demo, "dp_synth_create(", name);
        if (!in_demo)
            printf("\n    %s is not created by processor/demo/demo_longitudinal.c", name);
        CU_ASSERT(in_demo);
    }
    free(demo);
}

static const dptest_case CASES[] = {
    {"every synthesizer: example, ingest, close, restore byte-identically, flips refused",
     test_every_synthesizer_keeps_the_contract},
    {"every synthesizer is in the demo and the fuzz lists", test_every_synthesizer_in_demo_and_fuzz},
    {NULL, NULL},
};

int main(void) { return dptest_run("synth_contract", CASES); }
