/* test_marginal.c — `marginal` (seed 001 Alg. 3 and the StreamingMWEM
 * baseline) through the synth.h interface: config errors name their JSON
 * path; the selection utility's sensitivity is the derived ΔU (and the bound
 * is tight); the ledger spends exactly the budget per step and stops at the
 * horizon; replays are byte-identical, a snapshot/restore continues
 * byte-identically, another key changes the release; bad rows are rejected
 * with their reason and change nothing; deletes match (entity, row); the
 * fit reduces the measured workloads' error; a delete-heavy stream's
 * synthetic size follows the true size; entity-sharded ingest merged equals
 * the single-shard bundle byte for byte. */
#include "dptest.h"
#include "synth_testkit.h"

#include "synth/marginal/marginal.h"
#include "synth/marginal/marginal_factor.h"
#include "core/round.h"

#include <math.h>

static const char *CFG3 =
    "{\"attributes\": [{\"name\": \"a\", \"categories\": [\"0\",\"1\",\"2\"]},"
    "                  {\"name\": \"b\", \"categories\": [\"x\",\"y\"]},"
    "                  {\"name\": \"c\", \"categories\": [\"p\",\"q\",\"r\",\"s\"]}],"
    " \"horizon\": %d, \"%s\": %g, \"selections_per_step\": %d%s}";

static json_t *cfg_of(int T, const char *budget, double value, int K, const char *extra)
{
    char text[1024];
    /* the method named: these tests are about Alg. 3 and mwem (the default is forest, test_marginal_default.c) */
    char ex[512];
    snprintf(ex, sizeof ex, "%s%s", extra && strstr(extra, "\"method\"") ? "" : ", \"method\": \"select_measure_fit\"",
             extra ? extra : "");
    snprintf(text, sizeof text, CFG3, T, budget, value, K, ex);
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    return j;
}

static int create(dp_synth **s, json_t *cfg, uint8_t key_variant, dp_key *key, char *err, size_t errsz)
{
    dptest_key(key, key_variant);
    dp_synth_env env = {key, "m/1", 3};
    return dp_synth_create(s, "marginal", cfg, &env, err, errsz);
}

/* A synthesizer from j (key variant v) and an empty sink: most tests' start.
 * The synthesizer borrows its key, so the key outlives this frame. */
static dp_synth *start(const json_t *j, uint8_t v, tk_sink *k)
{
    static dp_key keys[256];
    dp_synth *s = NULL;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(create(&s, (json_t *)j, v, &keys[v], err, sizeof err), DP_OK);
    tk_sink_init(k);
    return s;
}

static dp_update row_update(uint64_t step, dp_update_kind kind, const int32_t *row, size_t n, const char *entity)
{
    dp_update u = {.stream_id = "m/1", .stream_id_len = 3, .step = step, .kind = kind,
                   .entity_id = entity, .entity_id_len = entity ? strlen(entity) : 0,
                   .payload = {.kind = DP_PAYLOAD_ROW, .row = row, .row_len = n}};
    return u;
}

/* A skewed, correlated row: c follows a, b is a coin biased by a. */
static void make_row(uint64_t i, int32_t *r)
{
    uint64_t h = i * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    r[0] = (int32_t)(h % 5 < 3 ? 0 : h % 5 < 4 ? 1 : 2);
    r[1] = (int32_t)((h >> 8) % 4 < (uint64_t)(1 + r[0]) ? 1 : 0);
    r[2] = (int32_t)(((h >> 16) % 4 == 0) ? (h >> 20) % 4 : (uint64_t)r[0]);
}

/* Run T steps of `per_step` inserts (and deletes of the oldest `del` live
 * rows); row i is entity "r<i>"'s, so its delete names that entity. */
static void run(dp_synth *s, tk_sink *sink, int from, int T, int per_step, int del, uint64_t *next, uint64_t *oldest)
{
    dp_release_sink rs = tk_sink_of(sink);
    char err[256], id[24];
    int32_t r[3];
    for (int t = from; t <= T; t++) {
        for (int i = 0; i < per_step; i++) {
            snprintf(id, sizeof id, "r%llu", (unsigned long long)*next);
            make_row((*next)++, r);
            dp_update u = row_update((uint64_t)t, DP_UPDATE_INSERT, r, 3, id);
            dp_reject_reason why;
            CU_ASSERT_EQUAL(dp_synth_ingest(s, &u, &why), DP_OK);
            CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
        }
        for (int i = 0; i < del; i++) {
            snprintf(id, sizeof id, "r%llu", (unsigned long long)*oldest);
            make_row((*oldest)++, r);
            dp_update u = row_update((uint64_t)t, DP_UPDATE_DELETE, r, 3, id);
            dp_reject_reason why;
            CU_ASSERT_EQUAL(dp_synth_ingest(s, &u, &why), DP_OK);
            CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
        }
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &rs, err, sizeof err), DP_OK);
    }
}

static void expect_refused(const char *text, const char *needle)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    dp_synth *s = NULL;
    dp_key key;
    char err[512] = "";
    int rc = create(&s, j, 1, &key, err, sizeof err);
    CU_ASSERT_NOT_EQUAL(rc, DP_OK);
    if (!strstr(err, needle))
        printf("\n    error \"%s\" does not name \"%s\"", err, needle);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, needle));
    dp_synth_destroy(s);
    json_decref(j);
}

static void test_config_errors(void)
{
    const char *A = "\"attributes\": [{\"name\": \"a\", \"categories\": [\"0\",\"1\"]}, {\"name\": \"b\", \"categories\": [\"0\",\"1\"]}], "
                    "\"method\": \"select_measure_fit\"";
    char t[1024];
    snprintf(t, sizeof t, "{%s, \"horizon\": 4, \"epsilon\": 1, \"colour\": 1}", A);
    expect_refused(t, "\"colour\"");
    snprintf(t, sizeof t, "{%s, \"horizon\": 4, \"epsilon\": 1, \"rho\": 1}", A);
    expect_refused(t, "exactly one of");
    snprintf(t, sizeof t, "{%s, \"horizon\": 4, \"epsilon\": 1, \"workloads\": [[\"a\", \"zz\"]]}", A);
    expect_refused(t, "workloads[0][1]");
    snprintf(t, sizeof t, "{%s, \"horizon\": 4, \"epsilon\": 1, \"workloads\": [[\"a\", \"a\"]]}", A);
    expect_refused(t, "twice");
    snprintf(t, sizeof t, "{%s, \"horizon\": 4, \"epsilon\": 1, \"selections_per_step\": 2}", A);
    expect_refused(t, "selections_per_step");   /* one 2-way workload only */
    snprintf(t, sizeof t, "{%s, \"horizon\": 4, \"epsilon\": 1, \"counter\": \"nope\"}", A);
    expect_refused(t, "nope");
    expect_refused("{\"attributes\": [{\"name\": \"a\", \"categories\": \"x\"}], \"horizon\": 4, \"epsilon\": 1}",
                   "attributes[0].categories");
    snprintf(t, sizeof t, "{%s, \"horizon\": 4, \"epsilon\": 1, \"aggregate\": \"median\"}", A);
    expect_refused(t, "aggregate must be one of");
    snprintf(t, sizeof t, "{%s, \"horizon\": 4, \"epsilon\": 1, \"fit\": \"pgm\", \"aggregate\": \"mean\"}", A);
    expect_refused(t, "aggregate");   /* models do not average */
    /* 2^24 cells with mw asked explicitly */
    expect_refused("{\"attributes\": [{\"name\": \"a\", \"categories\": [" 
                   "\"0\",\"1\"]}], \"horizon\": 4, \"epsilon\": 1, \"workloads\": \"all_3way\"}", "at least 3");
}

/* K when the config omits selections_per_step: 4, or every workload when there are fewer. */
static void test_default_selections(void)
{
    static const struct { int attrs; uint32_t workloads, k; } CASES[] = {{2, 1, 1}, {3, 3, 3}, {4, 6, 4}, {6, 15, 4}};
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char text[1024] = "{\"attributes\": [";
        for (int a = 0; a < CASES[i].attrs; a++)
            snprintf(text + strlen(text), sizeof text - strlen(text), "%s{\"name\": \"a%d\", \"categories\": [\"0\",\"1\"]}",
                     a ? ", " : "", a);
        snprintf(text + strlen(text), sizeof text - strlen(text), "], \"horizon\": 4, \"epsilon\": 1}");
        json_error_t e;
        json_t *j = json_loads(text, 0, &e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(j);
        dp_marginal_config c;
        char err[256];
        CU_ASSERT_EQUAL_FATAL(dp_marginal_config_parse(&c, j, err, sizeof err), DP_OK);
        CU_ASSERT_EQUAL(c.n_workloads, CASES[i].workloads);
        CU_ASSERT_EQUAL(c.selections, CASES[i].k);
        dp_marginal_config_free(&c);
        json_decref(j);
    }
}

/* ΔU: random neighbouring bases (one cell ±1), utility moves by at most ΔU, and
 * by nearly that much when the moved cell dominates (the bound is tight). */
static void test_utility_sensitivity(void)
{
    json_t *j = cfg_of(4, "epsilon", 1, 1, NULL);
    dp_marginal_config c;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_marginal_config_parse(&c, j, err, sizeof err), DP_OK);
    dp_key key;
    dptest_key(&key, 3);
    dp_drbg g;
    dp_drbg_init(&g, &key, "s", 1, 1, "test/util");
    double base[64], nb[64], q[64];
    int64_t worst = 0;
    for (int trial = 0; trial < 20000; trial++) {
        size_t i = (size_t)dp_drbg_uniform(&g, c.n_workloads);
        const dp_marginal_workload *w = &c.workloads[i];
        for (uint64_t k = 0; k < w->cells; k++) {
            base[k] = (double)dp_drbg_uniform(&g, 1000000) / 7.0;
            q[k] = (double)dp_drbg_uniform(&g, 1000000) / 3.0;
        }
        memcpy(nb, base, sizeof base);
        nb[dp_drbg_uniform(&g, w->cells)] += dp_drbg_bit(&g) ? 1 : -1;
        int64_t d = llabs(dp_marginal_grid_utility(&c, i, base, q, 2.5) - dp_marginal_grid_utility(&c, i, nb, q, 2.5));
        CU_ASSERT(d <= (int64_t)DP_MARGINAL_UTILITY_DELTA);
        if (w->cells == c.min_cells && d > worst)
            worst = d;
    }
    CU_ASSERT(worst >= (int64_t)DP_MARGINAL_UTILITY_DELTA - 3);
    dp_marginal_config_free(&c);
    json_decref(j);
}

static void test_ledger_and_horizon(void)
{
    const char *models[2] = {"epsilon", "rho"};
    for (int mi = 0; mi < 2; mi++) {
        json_t *j = cfg_of(5, models[mi], 1.5, 2, NULL);
        tk_sink k;
        dp_synth *s = start(j, 1, &k);
        uint64_t next = 0, oldest = 0;
        for (int t = 1; t <= 5; t++) {
            run(s, &k, t, t, 100, 0, &next, &oldest);
            CU_ASSERT_EQUAL(k.b_step, (uint64_t)t);
            CU_ASSERT_EQUAL(k.b_spent_step, 1.5);      /* exactly the budget, every step */
            CU_ASSERT_EQUAL(k.b_spent_total, 1.5);     /* parallel over steps: the max */
            CU_ASSERT_EQUAL(k.b_budget_total, 1.5);
            CU_ASSERT_EQUAL(k.b_status, t == 5 ? DP_BUDGET_EXHAUSTED : DP_BUDGET_ACTIVE);
            const dp_ledger *l = dp_synth_ledger(s);
            CU_ASSERT_EQUAL(l->n_entries, 4);          /* K selections + K measurements */
            CU_ASSERT_EQUAL(l->units_spent, l->units_total);
            CU_ASSERT_EQUAL(k.m_records, k.records - (k.records - k.m_records));
        }
        CU_ASSERT(dp_synth_exhausted(s));
        dp_release_sink rs = tk_sink_of(&k);
        char err[256];
        CU_ASSERT_EQUAL(dp_synth_close_step(s, &rs, err, sizeof err), DP_EHORIZON);
        int32_t r[3] = {0, 0, 0};
        dp_update u = row_update(6, DP_UPDATE_INSERT, r, 3, NULL);
        dp_reject_reason why;
        CU_ASSERT_EQUAL(dp_synth_ingest(s, &u, &why), DP_OK);
        CU_ASSERT_EQUAL(why, DP_REJECT_EXHAUSTED);
        tk_sink_free(&k);
        dp_synth_destroy(s);
        json_decref(j);
    }
}

#define MWEM_PGM ", \"method\": \"mwem\", \"fit\": \"pgm\""

static void run_bytes(void *ctx, uint8_t key_variant, int restore_at, dp_buf *out)
{
    /* mwem with pgm takes insert-only streams (marginal_mixture.c) */
    const int del = ctx && strcmp(ctx, MWEM_PGM) == 0 ? 0 : 20;
    const int T = 6;
    json_t *j = cfg_of(T, "epsilon", 2, 2, ctx);
    dp_synth *s;
    dp_key key;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(create(&s, j, key_variant, &key, err, sizeof err), DP_OK);
    tk_sink k;
    tk_sink_init(&k);
    uint64_t next = 0, oldest = 0;
    if (restore_at) {
        run(s, &k, 1, restore_at, 150, del, &next, &oldest);
        dp_buf snap;
        dp_buf_init(&snap);
        dp_synth_env env = {&key, "m/1", 3};
        tk_snapshot_restore(&s, "marginal", j, &env, &snap);
        /* a damaged snapshot is refused */
        snap.data[snap.len / 2] ^= 0x40;
        dp_synth *bad = NULL;
        int rc = dp_synth_restore(&bad, "marginal", j, &env, snap.data, snap.len, err, sizeof err);
        if (rc == DP_OK) {   /* a flipped bit inside a double may still parse: then it must differ */
            dp_buf a, b;
            dp_buf_init(&a);
            dp_buf_init(&b);
            dp_synth_snapshot(s, &a);
            dp_synth_snapshot(bad, &b);
            CU_ASSERT(a.len != b.len || memcmp(a.data, b.data, a.len) != 0);
            dp_buf_free(&a);
            dp_buf_free(&b);
        }
        dp_synth_destroy(bad);
        dp_buf_free(&snap);
    }
    run(s, &k, restore_at + 1, T, 150, del, &next, &oldest);
    dp_buf_put_bytes(out, k.out.data, k.out.len);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(j);
}

static void test_determinism_and_restore(void)
{
    static const char *const methods[5] = {NULL, ", \"method\": \"mwem\"", ", \"fit\": \"pgm\"",
                                           ", \"aggregate\": \"last\"", MWEM_PGM};
    for (int mi = 0; mi < 5; mi++)
        tk_check_replays(run_bytes, (void *)methods[mi], 1, 2, 3, 1000);
}

/* aggregate: with K = 1 the mean of the step's fits is its only fit, so
 * "mean" and "last" release the same rows (the manifests differ only in the
 * key naming the choice, which is stated); with K = 2 they differ. */
static void aggregate_run(int K, const char *agg, dp_buf *out, double *stated)
{
    char extra[64];
    snprintf(extra, sizeof extra, ", \"aggregate\": \"%s\"", agg);
    json_t *j = cfg_of(5, "epsilon", 2, K, extra);
    tk_sink k;
    dp_synth *s = start(j, 1, &k);
    uint64_t next = 0, oldest = 0;
    run(s, &k, 1, 5, 150, 20, &next, &oldest);
    char name[32];
    snprintf(name, sizeof name, "aggregate_%s", agg);
    *stated = tk_kv(k.m_debias, k.m_debias_keys, k.m_n_debias, name);
    dp_buf_put_bytes(out, k.out.data, k.out.len);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(j);
}

static void test_aggregate(void)
{
    for (int K = 1; K <= 2; K++) {
        dp_buf mean, last;
        dp_buf_init(&mean);
        dp_buf_init(&last);
        double sm = 0, sl = 0;
        aggregate_run(K, "mean", &mean, &sm);
        aggregate_run(K, "last", &last, &sl);
        CU_ASSERT(sm == 1 && sl == 1);
        /* the key names have the same length: rename and compare everything else */
        for (size_t i = 0; i + 14 <= mean.len; i++)
            if (memcmp(mean.data + i, "aggregate_mean", 14) == 0)
                memcpy(mean.data + i, "aggregate_last", 14);
        int same = mean.len == last.len && memcmp(mean.data, last.data, mean.len) == 0;
        CU_ASSERT(K == 1 ? same : !same);
        dp_buf_free(&mean);
        dp_buf_free(&last);
    }
}

static void test_bad_input(void)
{
    json_t *j = cfg_of(4, "epsilon", 1, 1, NULL);
    dp_synth *s;
    dp_key key;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(create(&s, j, 1, &key, err, sizeof err), DP_OK);
    dp_buf before, after;
    dp_buf_init(&before);
    dp_buf_init(&after);
    int32_t ok[3] = {1, 1, 3}, wide[4] = {0, 0, 0, 0}, out[3] = {3, 0, 0}, neg[3] = {0, -1, 0}, absent[3] = {2, 0, 1};
    dp_update ins = row_update(1, DP_UPDATE_INSERT, ok, 3, "alice");
    dp_reject_reason why;
    CU_ASSERT_EQUAL(dp_synth_ingest(s, &ins, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(s, &before), DP_OK);
    struct { dp_update u; dp_reject_reason want; } cases[] = {
        {row_update(1, DP_UPDATE_INSERT, wide, 4, NULL), DP_REJECT_OUT_OF_DOMAIN},
        {row_update(1, DP_UPDATE_INSERT, wide, 2, NULL), DP_REJECT_OUT_OF_DOMAIN},
        {row_update(1, DP_UPDATE_INSERT, out, 3, NULL), DP_REJECT_OUT_OF_DOMAIN},
        {row_update(1, DP_UPDATE_DELETE, neg, 3, NULL), DP_REJECT_OUT_OF_DOMAIN},
        {row_update(1, DP_UPDATE_DELETE, absent, 3, "alice"), DP_REJECT_NOT_PRESENT},
        {row_update(1, DP_UPDATE_DELETE, ok, 3, "bob"), DP_REJECT_NOT_PRESENT},    /* alice's row, not bob's */
        {row_update(1, DP_UPDATE_DELETE, ok, 3, NULL), DP_REJECT_ENTITY_REQUIRED},
        {row_update(1, DP_UPDATE_REPORT, ok, 3, "alice"), DP_REJECT_WRONG_KIND},
        {row_update(2, DP_UPDATE_INSERT, ok, 3, NULL), DP_REJECT_FUTURE_STEP},
    };
    cases[7].u.payload.kind = DP_PAYLOAD_ROW;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CU_ASSERT_EQUAL(dp_synth_ingest(s, &cases[i].u, &why), DP_OK);
        if (why != cases[i].want)
            printf("\n    case %zu: %s, want %s", i, dp_reject_reason_name(why), dp_reject_reason_name(cases[i].want));
        CU_ASSERT_EQUAL(why, cases[i].want);
    }
    dp_update cat = row_update(1, DP_UPDATE_INSERT, NULL, 0, NULL);
    cat.payload = (dp_payload){.kind = DP_PAYLOAD_CATEGORY, .category = 1};
    CU_ASSERT_EQUAL(dp_synth_ingest(s, &cat, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_WRONG_KIND);
    /* rejected updates changed nothing */
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(s, &after), DP_OK);
    CU_ASSERT(before.len == after.len && memcmp(before.data, after.data, before.len) == 0);
    /* alice deletes her own row: used; a second delete: NOT_PRESENT */
    dp_update del = row_update(1, DP_UPDATE_DELETE, ok, 3, "alice");
    CU_ASSERT_EQUAL(dp_synth_ingest(s, &del, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
    CU_ASSERT_EQUAL(dp_synth_ingest(s, &del, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_NOT_PRESENT);
    dp_buf_free(&before);
    dp_buf_free(&after);
    dp_synth_destroy(s);
    json_decref(j);

    /* user-level: entity required, at most max_rows_per_user events each */
    j = cfg_of(4, "epsilon", 1, 1, ", \"max_rows_per_user\": 2");
    CU_ASSERT_EQUAL_FATAL(create(&s, j, 1, &key, err, sizeof err), DP_OK);
    dp_update anon = row_update(1, DP_UPDATE_INSERT, ok, 3, NULL);
    CU_ASSERT_EQUAL(dp_synth_ingest(s, &anon, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_USER_LIMIT);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(dp_synth_ingest(s, &ins, &why), DP_OK);
        CU_ASSERT_EQUAL(why, i < 2 ? DP_REJECT_NONE : DP_REJECT_USER_LIMIT);
    }
    tk_sink k;
    tk_sink_init(&k);
    dp_release_sink rs = tk_sink_of(&k);
    CU_ASSERT_EQUAL(dp_synth_close_step(s, &rs, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(tk_kv(k.b_noise, k.b_noise_keys, k.b_n_noise, "group"), 2);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(j);
}

/* An entity-less DELETE is ENTITY_REQUIRED whatever others inserted, on
 * event- and user-level streams (synth_testkit.h says why). */
static void test_entityless_delete(void)
{
    static const char *const level[2] = {NULL, ", \"max_rows_per_user\": 2"};
    static const int32_t row[3] = {1, 0, 2};
    dp_key key;
    dptest_key(&key, 1);
    dp_synth_env env = {&key, "m/1", 3};
    for (int l = 0; l < 2; l++) {
        json_t *j = cfg_of(4, "epsilon", 1, 1, level[l]);
        tk_check_entityless_delete("marginal", j, &env, row_update(1, DP_UPDATE_DELETE, row, 3, NULL));
        json_decref(j);
    }
}

/* The mw fit pulls the model's workload marginals towards the measurements. */
static void test_fit_reduces_error(void)
{
    json_t *j = cfg_of(4, "epsilon", 1, 1, NULL);
    dp_marginal_config c;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_marginal_config_parse(&c, j, err, sizeof err), DP_OK);
    dp_mmodel *m;
    CU_ASSERT_EQUAL_FATAL(dp_mmodel_mw.create(&m, &c, err, sizeof err), DP_OK);
    /* measurements: the exact marginals of 1000 skewed rows, plus ±3 */
    double dense[24] = {0}, meas[3][12], q[12];
    int32_t r[3];
    for (uint64_t i = 0; i < 1000; i++) {
        make_row(i, r);
        dense[(r[0] * 2 + r[1]) * 4 + r[2]]++;
    }
    dp_mmeasure ms[3];
    for (size_t w = 0; w < 3; w++) {
        dp_marginal_dense_marginal(&c, dense, &c.workloads[w], meas[w]);
        for (uint64_t k = 0; k < c.workloads[w].cells; k++)
            meas[w][k] += (k % 2 ? 3 : -3);
        ms[w] = (dp_mmeasure){&c.workloads[w], meas[w], 1, 0};
    }
    double before = 0, after = 0;
    for (size_t w = 0; w < 3; w++) {
        dp_mmodel_mw.fit(m, ms, 0, 1000, 1);   /* total only */
        dp_mmodel_mw.marginal(m, &c.workloads[w], q);
        for (uint64_t k = 0; k < c.workloads[w].cells; k++)
            before += fabs(q[k] - meas[w][k]);
    }
    CU_ASSERT_EQUAL(dp_mmodel_mw.fit(m, ms, 3, 1000, 30), DP_OK);
    for (size_t w = 0; w < 3; w++) {
        dp_mmodel_mw.marginal(m, &c.workloads[w], q);
        for (uint64_t k = 0; k < c.workloads[w].cells; k++)
            after += fabs(q[k] - meas[w][k]);
    }
    printf("\n    measured-workload L1 error: %.1f before the fit, %.1f after", before, after);
    CU_ASSERT(after < 0.25 * before);
    CU_ASSERT(fabs(dp_mmodel_mw.total(m) - 1000) < 1e-9);
    dp_mmodel_mw.destroy(m);
    dp_marginal_config_free(&c);
    json_decref(j);
}

/* Net shrinking stream: 100 in, 300 out per step after a 3000-row start.
 * The released row count is the rounded noisy total; its error is a sum of
 * per-cell counter noises (each DLap with b = 2K/ε): bound it at 8 sd. */
/* m(t, W) = W(g_τ) + C_W(t) − C_W(τ) (§6.2): the noise of a measurement is
 * the counter increment since W's anchor τ (its last step unselected), so
 * with the simple counter selected_sd = sqrt(selections since the anchor)
 * × one draw's sd — not sqrt(all of W's selections), which is what the
 * selection's bias once used and what made it stop re-selecting a
 * workload the more often it had been measured. */
static void test_measurement_sd_since_anchor(void)
{
    const int T = 40;
    json_t *j = cfg_of(T, "epsilon", 1, 1, NULL);   /* K = 1 of the 3 pairs a step */
    tk_sink k;
    dp_synth *s = start(j, 1, &k);
    uint64_t next = 0, oldest = 0, count[3] = {0}, anchor[3] = {0};
    double sd1 = 0;
    int reselected_after_gap = 0, consecutive = 0;
    for (int t = 1; t <= T; t++) {
        run(s, &k, t, t, 60, 0, &next, &oldest);
        double sel = tk_kv(k.m_debias, k.m_debias_keys, k.m_n_debias, "selected.0");
        double sd = tk_kv(k.m_debias, k.m_debias_keys, k.m_n_debias, "selected_sd.0");
        CU_ASSERT_FATAL(sel >= 0 && sel < 3 && sd > 0);
        size_t w = (size_t)sel;
        count[w]++;
        if (sd1 == 0)
            sd1 = sd;   /* the first selection: one draw since anchor 0 */
        uint64_t since = count[w] - anchor[w];
        reselected_after_gap += since == 1 && count[w] > 1;
        consecutive += since > 1;
        if (fabs(sd - sqrt((double)since) * sd1) > 1e-9 * sd)
            printf("\n    step %d workload %zu: selected_sd %.6f, want sqrt(%llu) x %.6f", t, w, sd,
                   (unsigned long long)since, sd1);
        CU_ASSERT(fabs(sd - sqrt((double)since) * sd1) <= 1e-9 * sd);
        for (size_t i = 0; i < 3; i++)
            if (i != w)
                anchor[i] = count[i];
    }
    /* both cases occurred, so the old rule (sqrt(count)) would have failed */
    CU_ASSERT(reselected_after_gap > 0);
    CU_ASSERT(consecutive > 0);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(j);
}

/* A pgm model whose junction tree cannot take a workload leaves that
 * workload's measurement out of the fit (marginal_pgm.c); the selection
 * must not spend budget on it while an unselected workload it can take
 * remains.  Six attributes of 12 categories (all 15 pairs would triangulate
 * into 12^6 cells) under max_model_cells = 2048: the test replays the
 * model's structure from the manifests' selections (a selected workload
 * joins it if its junction tree stays within the cap) and counts the
 * selections that could not join although another unselected one could. */
static void test_selection_skips_unfittable(void)
{
    enum { P = 6, CATS = 12, T = 40, K = 2 };
    json_t *attrs = json_array();
    for (int a = 0; a < P; a++) {
        json_t *cats = json_array();
        for (int i = 0; i < CATS; i++) {
            char label[16];
            snprintf(label, sizeof label, "%d", i);
            json_array_append_new(cats, json_string(label));
        }
        char name[2] = {(char)('a' + a), 0};
        json_array_append_new(attrs, json_pack("{s:s, s:o}", "name", name, "categories", cats));
    }
    json_t *j = json_pack("{s:o, s:i, s:f, s:i, s:s, s:i}", "attributes", attrs, "horizon", T, "epsilon", 2.0,
                          "selections_per_step", K, "fit", "pgm", "max_model_cells", 2048);
    json_object_set_new(j, "method", json_string("select_measure_fit"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    uint32_t pair[15][2], n_pairs = 0, sizes[P];
    for (uint32_t a = 0; a < P; a++) {
        sizes[a] = CATS;
        for (uint32_t b = a + 1; b < P; b++) {
            pair[n_pairs][0] = a;
            pair[n_pairs++][1] = b;
        }
    }
    tk_sink k;
    dp_synth *s = start(j, 3, &k);
    dp_release_sink rs = tk_sink_of(&k);
    const uint32_t *groups[16];
    uint32_t ks[16], n_groups = 0, in_model[15] = {0};
    int wasted = 0, fallback = 0;
    uint64_t row_i = 0;
    for (int t = 1; t <= T; t++) {
        for (int i = 0; i < 300; i++, row_i++) {   /* a chain: each attribute copies the previous one often */
            int32_t r[P];
            uint64_t h = (row_i + 1) * 0x9e3779b97f4a7c15ull;
            for (int a = 0; a < P; a++) {
                h ^= h >> 31;
                h *= 0xbf58476d1ce4e5b9ull;
                r[a] = a > 0 && (h >> 40) % 10 < 7 ? r[a - 1] : (int32_t)((h >> 8) % CATS);
            }
            dp_update u = row_update((uint64_t)t, DP_UPDATE_INSERT, r, P, NULL);
            dp_reject_reason why;
            CU_ASSERT_EQUAL(dp_synth_ingest(s, &u, &why), DP_OK);
        }
        char err[256];
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &rs, err, sizeof err), DP_OK);
        uint32_t chosen[K];
        for (int l = 0; l < K; l++) {
            char key[32];
            snprintf(key, sizeof key, "selected.%d", l);
            double v = tk_kv(k.m_debias, k.m_debias_keys, k.m_n_debias, key);
            CU_ASSERT_FATAL(v >= 0 && v < n_pairs);
            chosen[l] = (uint32_t)v;
        }
        for (int l = 0; l < K; l++) {
            /* which unselected workloads could join the model now? */
            int fits[15], any = 0;
            for (uint32_t w = 0; w < n_pairs; w++) {
                int taken = 0;
                for (int q = 0; q < l; q++)
                    taken |= chosen[q] == w;
                groups[n_groups] = pair[w];
                ks[n_groups] = 2;
                uint64_t cells;
                fits[w] = in_model[w] ||
                          dp_jtree_build(NULL, P, sizes, n_groups + 1, groups, ks, 2048, &cells) == DP_OK;
                any |= fits[w] && !taken;
            }
            uint32_t w = chosen[l];
            wasted += !fits[w] && any;
            fallback += !any;
            if (fits[w] && !in_model[w]) {
                in_model[w] = 1;
                groups[n_groups] = pair[w];
                ks[n_groups++] = 2;
            }
        }
    }
    printf("\n    %u of 15 pairs in the model, %d selections wasted, %d with no usable candidate", n_groups,
           wasted, fallback);
    CU_ASSERT(n_groups < 15);   /* the cap did bind */
    CU_ASSERT_EQUAL(wasted, 0);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(j);
}

static void test_delete_heavy(void)
{
    for (int mi = 0; mi < 2; mi++) {
        json_t *j = cfg_of(10, "epsilon", 4, 1, mi ? ", \"method\": \"mwem\"" : NULL);
        dp_synth *s;
        dp_key key;
        char err[256];
        CU_ASSERT_EQUAL_FATAL(create(&s, j, 5, &key, err, sizeof err), DP_OK);
        tk_sink k;
        tk_sink_init(&k);
        uint64_t next = 0, oldest = 0;
        run(s, &k, 1, 1, 3000, 0, &next, &oldest);
        for (int t = 2; t <= 10; t++) {
            uint64_t before = k.records;
            run(s, &k, t, t, 100, 300, &next, &oldest);
            double truth = (double)(next - oldest), got = (double)(k.records - before);
            /* per step: ≤ 24 cells' noise (sd sqrt(2)·b each, b = 2K/ε = 0.5) summed over ≤ t steps */
            double sd = sqrt(24.0 * t) * sqrt(2.0) * 0.5;
            if (fabs(got - truth) > 8 * sd + 2)
                printf("\n    %s step %d: %g synthetic rows for %g true", mi ? "mwem" : "smf", t, got, truth);
            CU_ASSERT(fabs(got - truth) <= 8 * sd + 2);
        }
        tk_sink_free(&k);
        dp_synth_destroy(s);
        json_decref(j);
    }
}


/* mwem with fit pgm (g_t as the sum of the steps' models): on an
 * insert-only stream it releases what mwem with fit mw releases — the same
 * selections and measurements (the fits agree to ~1e-16, test_marginal_pgm),
 * so the same noisy totals and row counts — and it rejects DELETE. */
static void test_mwem_pgm_mixture(void)
{
    json_t *jm = cfg_of(8, "epsilon", 4, 2, ", \"method\": \"mwem\", \"fit\": \"mw\", \"aggregate\": \"last\"");
    json_t *jp = cfg_of(8, "epsilon", 4, 2, MWEM_PGM);
    tk_sink km, kp;
    dp_synth *sm = start(jm, 3, &km), *sp = start(jp, 3, &kp);
    uint64_t nm = 0, om = 0, np = 0, op = 0;
    int same = 1;
    for (int t = 1; t <= 8; t++) {
        if (t == 2) {   /* a DELETE of a present row: rejected by the mixture only */
            int32_t r[3];
            make_row(0, r);
            dp_update u = row_update(2, DP_UPDATE_DELETE, r, 3, "r0");
            dp_reject_reason why;
            CU_ASSERT_EQUAL(dp_synth_ingest(sp, &u, &why), DP_OK);
            CU_ASSERT_EQUAL(why, DP_REJECT_WRONG_KIND);
        }
        uint64_t bm = km.records, bp = kp.records;
        run(sm, &km, t, t, 120, 0, &nm, &om);
        run(sp, &kp, t, t, 120, 0, &np, &op);
        double tm = tk_kv(km.m_debias, km.m_debias_keys, km.m_n_debias, "noisy_total");
        double tp = tk_kv(kp.m_debias, kp.m_debias_keys, kp.m_n_debias, "noisy_total");
        /* rows = the total rounded: a total at .5 may round either way */
        int rows_ok = llabs((long long)(km.records - bm) - (long long)(kp.records - bp)) <= 1;
        if (!(fabs(tm - tp) <= 1e-6 * (1 + fabs(tm)) && rows_ok))
            printf("\n    step %d: mw total %.6f rows %llu, pgm total %.6f rows %llu", t, tm,
                   (unsigned long long)(km.records - bm), tp, (unsigned long long)(kp.records - bp));
        same &= fabs(tm - tp) <= 1e-6 * (1 + fabs(tm)) && rows_ok;
        CU_ASSERT(fabs(tp - 120.0 * t) < 0.2 * 120 * t);   /* follows the true size */
    }
    CU_ASSERT(same);
    tk_sink_free(&km);
    tk_sink_free(&kp);
    dp_synth_destroy(sm);
    dp_synth_destroy(sp);
    json_decref(jm);
    json_decref(jp);
}

typedef struct shard_ctx { char id[32]; int32_t r[3]; } shard_ctx;

/* 400 updates a step by 97 users and anonymous rows: from step 2 every
 * fifth deletes that user's row of the step before (NOT_PRESENT when that
 * row was anonymous), every eleventh inserts without an entity (the shard of
 * key stream ‖ 0x00). */
static dp_update shard_update(void *ctx, int t, int i)
{
    shard_ctx *c = ctx;
    snprintf(c->id, sizeof c->id, "user-%d", i % 97);
    int del = i % 5 == 4 && t > 1, anon = !del && i % 11 == 0;
    make_row((uint64_t)((del ? t - 1 : t) * 1000 + i), c->r);
    return row_update((uint64_t)t, del ? DP_UPDATE_DELETE : DP_UPDATE_INSERT, c->r, 3, anon ? NULL : c->id);
}

/* Every method over 4 shards: the default forest, independent, and
 * select_measure_fit (docs/kafka.md §10). */
static void test_shards_merge(void)
{
    static const char *const methods[] = {"forest", "independent", NULL};
    for (int m = 0; m < 3; m++) {
        json_t *j = cfg_of(4, "epsilon", 2, 2, NULL);
        if (methods[m]) {   /* Alg. 3's keys are refused under these methods */
            json_object_del(j, "selections_per_step");
            json_object_set_new(j, "method", json_string(methods[m]));
        }
        shard_ctx c;
        CU_ASSERT(tk_check_shards_on("marginal", j, "m/1", 4, 400, shard_update, &c) > 1000);
        json_decref(j);
    }
    CU_ASSERT(dp_synth_shards_by_entity("marginal"));
}

/* dp_round_systematic (core/round.h) hands out exactly n rows whatever the weights:
 * ordinary weights get floor or ceil of their share (systematic rounding),
 * and weights near DBL_MAX, inf, NaN or all non-positive (a corrupt or
 * extreme restored model) neither overflow nor lose the total. */
static void test_round_counts(void)
{
    dp_key key;
    memset(&key, 7, sizeof key);
    dp_drbg g;
    dp_drbg_init(&g, &key, "round", 5, 1, "test.round");
    const double ordinary[5] = {1, 2, 3, 4, 0};
    uint64_t out[5];
    for (int rep = 0; rep < 50; rep++) {
        dp_round_systematic(ordinary, 5, 1001, &g, out);
        uint64_t sum = 0;
        for (int i = 0; i < 5; i++) {
            double share = 1001.0 * ordinary[i] / 10.0;
            CU_ASSERT(out[i] >= (uint64_t)floor(share) && out[i] <= (uint64_t)ceil(share));
            sum += out[i];
        }
        CU_ASSERT_EQUAL(sum, 1001);
        CU_ASSERT_EQUAL(out[4], 0);
    }
    const double extreme[4][4] = {
        {1.7e308, 1.7e308, 1.7e308, 0},
        {INFINITY, 1, 1, 2},
        {NAN, 1, 0, 1},
        {-1, 0, -5, 0},
    };
    for (int t = 0; t < 4; t++) {
        dp_round_systematic(extreme[t], 4, 999, &g, out);
        uint64_t sum = 0;
        for (int i = 0; i < 4; i++)
            sum += out[i];
        CU_ASSERT_EQUAL(sum, 999);
    }
    dp_round_systematic(extreme[0], 4, 999, &g, out);
    CU_ASSERT(out[0] >= 332 && out[0] <= 334 && out[3] == 0);
    dp_round_systematic(extreme[3], 4, 1000, &g, out);   /* no positive weight: evenly */
    CU_ASSERT(out[0] == 250 && out[1] == 250 && out[2] == 250 && out[3] == 250);
    dp_drbg_wipe(&g);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"config errors name their JSON path", test_config_errors},
        {"selections_per_step defaults to 4, or every workload when fewer", test_default_selections},
        {"utility sensitivity is the derived dU, and tight", test_utility_sensitivity},
        {"ledger: the budget per step, exhausted at the horizon (pure and zCDP)", test_ledger_and_horizon},
        {"replay byte-identical, restore continues byte-identically, key matters (smf mw, mwem, smf pgm, last, mwem pgm)",
         test_determinism_and_restore},
        {"aggregate: mean = last at K = 1 (stated in the manifest), different at K = 2", test_aggregate},
        {"bad rows rejected with their reason, changing nothing; deletes match (entity, row)", test_bad_input},
        {"an entity-less DELETE is ENTITY_REQUIRED whatever others inserted", test_entityless_delete},
        {"the mw fit reduces the measured workloads' error", test_fit_reduces_error},
        {"a measurement's sd is the counter increment's since the workload's anchor (selected_sd)",
         test_measurement_sd_since_anchor},
        {"the selection skips workloads the pgm model cannot fit", test_selection_skips_unfittable},
        {"delete-heavy stream: synthetic size follows the true size (both methods)", test_delete_heavy},
        {"mwem with fit pgm: the sum of step models = mwem with mw on inserts; DELETE rejected", test_mwem_pgm_mixture},
        {"4 shards by the real key (forest, independent, select_measure_fit) = the bundle at every step", test_shards_merge},
        {"row rounding: exactly n rows, extreme weights neither overflow nor lose rows", test_round_counts},
        {NULL, NULL},
    };
    return dptest_run("marginal", cases);
}
