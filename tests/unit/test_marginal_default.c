/* test_marginal_default.c — `marginal`'s default method is "forest" (issue 39
 * item 4), and the change is safe for deployments written for the old
 * default, "select_measure_fit" (Alg. 3).  Owns these claims; calls the
 * synth.h interface, marginal_config.c and synth_testkit.h's sink:
 *   1. a configuration naming no method runs forest — the same bytes as one
 *      naming "forest";
 *   2. one naming no method but setting a key only Alg. 3 or mwem reads is
 *      refused, the error naming the key, the new default and the fix; with
 *      "method": "select_measure_fit" the same keys are accepted;
 *   3. those keys under an explicit "forest" or "independent" are refused
 *      (nothing would read them), as the forest keys are under the others;
 *   4. a state written under the old default (no "method", so Alg. 3) is
 *      refused by a restore under the same configuration text — which now
 *      means forest — with a message that says so and what to add; with the
 *      method added it restores and continues byte for byte. */
#include "dptest.h"
#include "synth_testkit.h"

#include "synth/marginal/marginal_config.h"

static const char *ATTRS = "\"attributes\": [{\"name\": \"a\", \"categories\": [\"0\",\"1\",\"2\"]},"
                           " {\"name\": \"b\", \"categories\": [\"x\",\"y\"]},"
                           " {\"name\": \"c\", \"categories\": [\"p\",\"q\",\"r\",\"s\"]}]";

static json_t *cfg_of(const char *extra)
{
    char text[1024];
    snprintf(text, sizeof text, "{%s, \"horizon\": 6, \"epsilon\": 2%s}", ATTRS, extra);
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    return j;
}

/* dp_marginal_config_parse's status on the configuration with `extra`; its error into err. */
static int parse(const char *extra, dp_marginal_config *c, char *err, size_t n)
{
    json_t *j = cfg_of(extra);
    err[0] = '\0';
    int rc = dp_marginal_config_parse(c, j, err, n);
    json_decref(j);
    return rc;
}

/* A skewed, correlated row (c follows a): every method has something to fit. */
static void make_row(uint64_t i, int32_t *r)
{
    uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    r[0] = (int32_t)(h % 5 < 3 ? 0 : h % 5 < 4 ? 1 : 2);
    r[1] = (int32_t)((h >> 8) % 4 < (uint64_t)(1 + r[0]) ? 1 : 0);
    r[2] = (int32_t)(((h >> 16) % 4 == 0) ? (h >> 20) % 4 : (uint64_t)r[0]);
}

/* Steps from..to of 120 inserts each (row i by entity "r<i>") into s, released into k. */
static void feed(dp_synth *s, tk_sink *k, int from, int to, uint64_t *next)
{
    dp_release_sink rs = tk_sink_of(k);
    char err[256], id[24];
    int32_t r[3];
    for (int t = from; t <= to; t++) {
        for (int i = 0; i < 120; i++, (*next)++) {
            snprintf(id, sizeof id, "r%llu", (unsigned long long)*next);
            make_row(*next, r);
            dp_update u = {.stream_id = "m/1", .stream_id_len = 3, .step = (uint64_t)t, .kind = DP_UPDATE_INSERT,
                           .entity_id = id, .entity_id_len = strlen(id),
                           .payload = {.kind = DP_PAYLOAD_ROW, .row = r, .row_len = 3}};
            dp_reject_reason why;
            CU_ASSERT_EQUAL(dp_synth_ingest(s, &u, &why), DP_OK);
        }
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &rs, err, sizeof err), DP_OK);
    }
}

static dp_synth *make(const json_t *j, const dp_key *key)
{
    dp_synth_env env = {key, "m/1", 3};
    dp_synth *s = NULL;
    char err[512] = "";
    int rc = dp_synth_create(&s, "marginal", j, &env, err, sizeof err);
    if (rc != DP_OK)
        printf("\n    %s", err);
    CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
    return s;
}

/* The release bytes (records, manifests, budget events) of 4 steps under the configuration with `extra`. */
static void release_bytes(const char *extra, dp_buf *out)
{
    dp_key key;
    dptest_key(&key, 7);
    json_t *j = cfg_of(extra);
    dp_synth *s = make(j, &key);
    tk_sink k;
    tk_sink_init(&k);
    uint64_t next = 0;
    feed(s, &k, 1, 4, &next);
    dp_buf_put_bytes(out, k.out.data, k.out.len);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(j);
}

/* 1. No "method": forest, byte for byte the stream that names it (and not Alg. 3's). */
static void test_no_method_runs_forest(void)
{
    dp_marginal_config c;
    char err[512];
    CU_ASSERT_EQUAL_FATAL(parse("", &c, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(c.method, DP_MARGINAL_FOREST);
    CU_ASSERT_EQUAL(c.method_named, 0);
    dp_marginal_config_free(&c);
    dp_buf none, forest, smf;
    dp_buf_init(&none);
    dp_buf_init(&forest);
    dp_buf_init(&smf);
    release_bytes("", &none);
    release_bytes(", \"method\": \"forest\"", &forest);
    release_bytes(", \"method\": \"select_measure_fit\"", &smf);
    CU_ASSERT(none.len > 0);
    CU_ASSERT(none.len == forest.len && memcmp(none.data, forest.data, none.len) == 0);
    CU_ASSERT(none.len != smf.len || memcmp(none.data, smf.data, none.len) != 0);
    dp_buf_free(&none);
    dp_buf_free(&forest);
    dp_buf_free(&smf);
}

/* Every key only Alg. 3 or mwem reads, with a valid value; the last needs estimate all_measurements. */
static const char *const ALG3_ONLY[][2] = {
    {"selections_per_step", ", \"selections_per_step\": 2"}, {"fit", ", \"fit\": \"mw\""},
    {"fit_iterations", ", \"fit_iterations\": 5"},           {"aggregate", ", \"aggregate\": \"last\""},
    {"max_model_cells", ", \"max_model_cells\": 4096"},      {"estimate", ", \"estimate\": \"all_measurements\""},
    {"drift_rows_per_step", ", \"drift_rows_per_step\": 50, \"estimate\": \"all_measurements\""},
};
#define N_ALG3 (sizeof ALG3_ONLY / sizeof ALG3_ONLY[0])

/* 2. No "method" and a key of the old default's: refused, saying which key, that the default changed and
 * how to keep Alg. 3; the same keys with the method named are fine (and mwem takes the first five). */
static void test_old_default_keys_without_method_refused(void)
{
    dp_marginal_config c;
    char err[512], extra[256];
    for (size_t i = 0; i < N_ALG3; i++) {
        int rc = parse(ALG3_ONLY[i][1], &c, err, sizeof err);
        CU_ASSERT_EQUAL(rc, DP_EINVAL);
        if (rc == DP_OK)
            dp_marginal_config_free(&c);
        int named = strstr(err, ALG3_ONLY[i][0]) == err + strlen("marginal: ");   /* the error starts with it */
        int says = strstr(err, "default method changed to \"forest\"") != NULL &&
                   strstr(err, "\"method\": \"select_measure_fit\"") != NULL;
        if (!named || !says)
            printf("\n    %s: \"%s\"", ALG3_ONLY[i][0], err);
        CU_ASSERT(named && says);
        snprintf(extra, sizeof extra, "%s, \"method\": \"select_measure_fit\"", ALG3_ONLY[i][1]);
        CU_ASSERT_EQUAL(rc = parse(extra, &c, err, sizeof err), DP_OK);
        if (rc == DP_OK) {
            CU_ASSERT_EQUAL(c.method, DP_MARGINAL_SMF);
            dp_marginal_config_free(&c);
        }
        if (i >= 5)
            continue;
        snprintf(extra, sizeof extra, "%s, \"method\": \"mwem\"", ALG3_ONLY[i][1]);
        CU_ASSERT_EQUAL(rc = parse(extra, &c, err, sizeof err), DP_OK);
        if (rc == DP_OK)
            dp_marginal_config_free(&c);
    }
}

/* 3. Under an explicit forest or independent nothing reads those keys: refused, naming the key and the method
 * (estimate and drift_rows_per_step keep their own refusals, test_marginal_estimate.c). */
static void test_old_default_keys_under_forest_refused(void)
{
    static const char *const methods[] = {"forest", "independent"};
    dp_marginal_config c;
    char err[512], extra[256], want[96];
    for (size_t mi = 0; mi < 2; mi++)
        for (size_t i = 0; i < 5; i++) {
            snprintf(extra, sizeof extra, "%s, \"method\": \"%s\"", ALG3_ONLY[i][1], methods[mi]);
            int rc = parse(extra, &c, err, sizeof err);
            CU_ASSERT_EQUAL(rc, DP_EINVAL);
            if (rc == DP_OK)
                dp_marginal_config_free(&c);
            snprintf(want, sizeof want, "method \"%s\" does not read it", methods[mi]);
            CU_ASSERT(strstr(err, ALG3_ONLY[i][0]) && strstr(err, want));
        }
}

/* The snapshot `snap` with the configuration it records replaced by `cfg`'s canonical text (synth.c). */
static void with_recorded_config(const dp_buf *snap, const json_t *cfg, dp_buf *out)
{
    dp_synth_snapshot_head h;
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot_header(snap->data, snap->len, &h), DP_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h.config);
    dp_reader r;
    dp_reader_init(&r, snap->data, snap->len);
    char *text = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    dp_buf_put_u32(out, dp_reader_u32(&r));
    dp_buf_put_blob(out, h.name, h.name_len);
    dp_buf_put_blob(out, h.key_fp, h.key_fp_len);
    dp_buf_put_blob(out, text, strlen(text));
    dp_buf_put_u64(out, h.open_step);
    dp_buf_put_bytes(out, snap->data + h.state_offset, snap->len - h.state_offset);
    free(text);
}

/* 4. A stream started under the old default: its configuration names no method, so its state is Alg. 3's.
 * That state is made here by a stream naming "select_measure_fit", its snapshot's recorded configuration
 * then replaced by the text without "method": the two are the same bytes a dpstream before the change
 * wrote — the method was resolved to select_measure_fit either way and the state does not record whether it
 * was named (marginal_snapshot.c), so only the recorded text differs.  A restore under the text without
 * "method" (now forest) must refuse, saying which method wrote the state and what to add; one with the
 * method added restores and continues exactly as the stream that never stopped. */
static void test_old_default_state_refused_then_continued(void)
{
    dp_key key;
    dptest_key(&key, 9);
    dp_synth_env env = {&key, "m/1", 3};
    json_t *old = cfg_of(""), *smf = cfg_of(", \"method\": \"select_measure_fit\"");
    dp_synth *s = make(smf, &key), *whole = make(smf, &key);
    tk_sink k, kw;
    tk_sink_init(&k);
    tk_sink_init(&kw);
    uint64_t next = 0, next_w = 0;
    feed(s, &k, 1, 3, &next);
    feed(whole, &kw, 1, 6, &next_w);
    dp_buf snap, old_snap;
    dp_buf_init(&snap);
    dp_buf_init(&old_snap);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(s, &snap), DP_OK);
    dp_synth_destroy(s);
    with_recorded_config(&snap, old, &old_snap);
    char err[1024] = "";
    dp_synth *r = NULL;
    CU_ASSERT_EQUAL(dp_synth_restore(&r, "marginal", old, &env, old_snap.data, old_snap.len, err, sizeof err),
                    DP_ECORRUPT);
    CU_ASSERT_PTR_NULL(r);
    static const char *const says[] = {"written by method \"select_measure_fit\"", "names no method",
                                       "\"forest\"", "add \"method\": \"select_measure_fit\"", "left as it was"};
    for (size_t i = 0; i < sizeof says / sizeof *says; i++)
        if (!strstr(err, says[i]))
            printf("\n    refusal \"%s\" does not say \"%s\"", err, says[i]);
    for (size_t i = 0; i < sizeof says / sizeof *says; i++)
        CU_ASSERT_PTR_NOT_NULL(strstr(err, says[i]));
    CU_ASSERT_PTR_NULL(strstr(err, "damaged"));
    /* read-only inspection is refused the same way: the state is never opened as forest's */
    CU_ASSERT_EQUAL(dp_synth_open_read_only(&r, "marginal", old, &env, old_snap.data, old_snap.len, err, sizeof err),
                    DP_ECORRUPT);
    /* the fix: the method named; the state continues byte for byte */
    CU_ASSERT_EQUAL_FATAL(dp_synth_restore(&r, "marginal", smf, &env, old_snap.data, old_snap.len, err, sizeof err),
                          DP_OK);
    feed(r, &k, 4, 6, &next);
    CU_ASSERT(k.out.len == kw.out.len && memcmp(k.out.data, kw.out.data, k.out.len) == 0);
    dp_synth_destroy(r);
    dp_synth_destroy(whole);
    tk_sink_free(&k);
    tk_sink_free(&kw);
    dp_buf_free(&snap);
    dp_buf_free(&old_snap);
    json_decref(old);
    json_decref(smf);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"no method: forest, byte for byte as \"method\": \"forest\"", test_no_method_runs_forest},
        {"no method and a key of Alg. 3 / mwem: refused, naming the key, the new default and the fix; accepted "
         "with the method named", test_old_default_keys_without_method_refused},
        {"Alg. 3 / mwem keys under an explicit forest or independent: refused", test_old_default_keys_under_forest_refused},
        {"a state written under the old default is refused under the same text (now forest), saying why; with the "
         "method named it continues byte for byte", test_old_default_state_refused_then_continued},
        {NULL, NULL},
    };
    return dptest_run("marginal_default", cases);
}
