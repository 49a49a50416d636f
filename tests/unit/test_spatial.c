/* test_spatial.c — `spatial` (PHDStream, seed 002) through synth.h: config
 * errors name their key; PrivTree splits a hand-computed example exactly
 * when the noise is negligible; the released total's variance is the
 * counter's discrete Laplace variance (a chi-square-style bound; halving
 * the count budget wrongly fails it); the ledger spends the budget per
 * step and stops at the horizon; init_steps releases nothing before t₀;
 * replays are byte-identical, a restore continues byte-identically, another
 * key changes the release; bad points are rejected with their reason and
 * change nothing; the safe variant's PrivTree input stays monotone on a
 * deletion-heavy stream where the paper variant's does not; entity-sharded
 * ingest merged equals the bundle byte for byte. */
#include "dptest.h"
#include "synth_testkit.h"

#include "core/rational.h"
#include "core/sample.h"
#include "synth/spatial/spatial.h"

#include <math.h>


static int create(dp_synth **s, json_t *cfg, uint8_t key_variant, dp_key *key, char *err, size_t errsz)
{
    dptest_key(key, key_variant);
    dp_synth_env env = {key, "sp/1", 4};
    return dp_synth_create(s, "spatial", cfg, &env, err, errsz);
}

static dp_update pt_update(uint64_t step, dp_update_kind kind, const double *x, size_t d, const char *entity)
{
    dp_update u = {.stream_id = "sp/1", .stream_id_len = 4, .step = step, .kind = kind,
                   .entity_id = entity, .entity_id_len = entity ? strlen(entity) : 0,
                   .payload = {.kind = DP_PAYLOAD_POINT, .point = x, .point_len = d}};
    return u;
}

static void ingest_ok(dp_synth *s, const dp_update *u)
{
    dp_reject_reason why;
    CU_ASSERT_EQUAL(dp_synth_ingest(s, u, &why), DP_OK);
    if (why != DP_REJECT_NONE)
        printf("\n    rejected: %s", dp_reject_reason_name(why));
    CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
}

/* The i-th point of a clustered stream: two blobs on [0,1]². */
static void make_point(uint64_t i, double *x)
{
    uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 31;
    double u = (double)(h & 0xfffff) / 1048576.0, v = (double)((h >> 20) & 0xfffff) / 1048576.0;
    int blob = (h >> 40) % 3 == 0;
    x[0] = blob ? 0.7 + 0.2 * u : 0.1 + 0.3 * u;
    x[1] = blob ? 0.6 + 0.3 * v : 0.2 + 0.2 * v;
}

/* Steps from..T: `ins` inserts, then deletes of the `del` oldest live
 * points; point i is entity "p<i>"'s, so its delete names that entity. */
static void run(dp_synth *s, tk_sink *k, int from, int T, int ins, int del, uint64_t *next, uint64_t *oldest)
{
    dp_release_sink rs = tk_sink_of(k);
    char err[256], id[24];
    double x[2];
    for (int t = from; t <= T; t++) {
        for (int i = 0; i < ins; i++) {
            snprintf(id, sizeof id, "p%llu", (unsigned long long)*next);
            make_point((*next)++, x);
            dp_update u = pt_update((uint64_t)t, DP_UPDATE_INSERT, x, 2, id);
            ingest_ok(s, &u);
        }
        for (int i = 0; i < del && *oldest < *next; i++) {
            snprintf(id, sizeof id, "p%llu", (unsigned long long)*oldest);
            make_point((*oldest)++, x);
            dp_update u = pt_update((uint64_t)t, DP_UPDATE_DELETE, x, 2, id);
            ingest_ok(s, &u);
        }
        int rc = dp_synth_close_step(s, &rs, err, sizeof err);
        if (rc != DP_OK)
            printf("\n    close %d: %s", t, err);
        CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
    }
}

static void expect_refused(const char *text, const char *needle) { tk_expect_refused("spatial", text, needle); }

static void test_config_errors(void)
{
    expect_refused("{\"epsilon\": 1, \"colour\": 2}", "\"colour\"");
    expect_refused("{\"box\": [[0, 1]]}", "epsilon");
    expect_refused("{\"epsilon\": 1, \"box\": [[1, 0]]}", "box[0]");
    expect_refused("{\"epsilon\": 1, \"box\": [[0, 1], [0]]}", "box[1]");
    expect_refused("{\"epsilon\": 1, \"box\": [[-1e308, 1e308]]}", "box[0]");
    expect_refused("{\"epsilon\": 1, \"fanout\": 4}", "fanout");
    expect_refused("{\"epsilon\": 1, \"variant\": \"fast\"}", "variant");
    expect_refused("{\"epsilon\": 1, \"variant\": \"paper\"}", "\"unsafe_paper_variant\": true");
    expect_refused("{\"epsilon\": 1, \"unsafe_paper_variant\": 1}", "unsafe_paper_variant must be true or false");
    expect_refused("{\"epsilon\": 1, \"max_depth\": 61}", "max_depth");
    expect_refused("{\"epsilon\": 1, \"horizon\": 4, \"init_steps\": 5}", "init_steps");
    expect_refused("{\"epsilon\": 1, \"counter\": {\"kind\": \"block\", \"block\": 8}}", "horizon");
    expect_refused("{\"epsilon\": 1, \"tree_budget_fraction\": 1}", "tree_budget_fraction");
}

/* unsafe_paper_variant is labelled like adaptive's: every budget event
 * and the plan carry dp 0 beside a mechanism text saying NOT
 * DIFFERENTIALLY PRIVATE; the default carries dp 1.  (`variant: "paper"`
 * is refused naming the switch: test_config_errors.) */
static void test_unsafe_paper_labelled(void)
{
    for (int unsafe = 0; unsafe < 2; unsafe++) {
        json_t *j = tk_cfg_text("{\"epsilon\": 1, \"max_depth\": 8, \"init_steps\": 2%s}",
                                unsafe ? ", \"unsafe_paper_variant\": true" : "");
        tk_sink k;
        dp_synth *s;
        dp_key key;
        char err[256];
        CU_ASSERT_EQUAL_FATAL(create(&s, j, 1, &key, err, sizeof err), DP_OK);
        tk_sink_init(&k);
        uint64_t next = 0, oldest = 0;
        for (int t = 1; t <= 4; t++) {   /* step 1 warms up: its event is labelled too */
            uint64_t events = k.budgets;
            run(s, &k, t, t, 50, 10, &next, &oldest);
            CU_ASSERT_EQUAL(k.budgets, events + 1);
            CU_ASSERT_EQUAL(tk_kv(k.b_noise, k.b_noise_keys, k.b_n_noise, "dp"), unsafe ? 0 : 1);
        }
        dp_synth_plan p;
        CU_ASSERT_EQUAL_FATAL(dp_synth_describe(s, &p, err, sizeof err), DP_OK);
        double dp = NAN;
        for (size_t i = 0; i < p.n_noise; i++)
            if (strcmp(p.noise[i].key, "dp") == 0)
                dp = p.noise[i].value;
        CU_ASSERT_EQUAL(dp, unsafe ? 0 : 1);
        CU_ASSERT_EQUAL(strstr(p.mechanism, "NOT DIFFERENTIALLY PRIVATE") != NULL, unsafe);
        dp_synth_plan_free(&p);
        tk_sink_free(&k);
        dp_synth_destroy(s);
        json_decref(j);
    }
}

/* ε = 10^4: PrivTree's noise (λ = 6e-4) and the counters' are negligible
 * against the counts, so a node well above the threshold always splits —
 * but a node at the bias floor θ - δ splits with probability
 * P[DLap(λS) > δS] ≈ e^{-ln 2}/2 = 1/4 whatever ε is (PrivTree's design,
 * Zhang et al. 2016 §4).  Points (0.1,0.1), (0.2,0.2), (0.3,0.4), (0.8,0.3),
 * θ = 2.5, max_depth 2: the root (4) splits on x; the left half (3 - δ >
 * θ) splits on y; the right half (1: at the floor) splits 1/4 of the time.
 * Leaves: 3 or 4; the points always land 3 / 0 / 1 in the left-lower,
 * left-upper and right cells.  Over many keys the share of 5-leaf trees is
 * the discrete Laplace tail, exactly. */
static void test_privtree_hand_splits(void)
{
    enum { KEYS = 2000 };
    for (int variant = 0; variant < 2; variant++) {
        json_t *j = tk_cfg_text("{\"epsilon\": 10000, \"theta\": 2.5, \"max_depth\": 2, "
                                "\"unsafe_paper_variant\": %s}", variant ? "true" : "false");
        const double pts[4][2] = {{0.1, 0.1}, {0.2, 0.2}, {0.3, 0.4}, {0.8, 0.3}};
        int split_floor = 0;
        double lambda = 0, delta = 0;
        for (int key_i = 0; key_i < KEYS; key_i++) {
            dp_key key;
            dptest_key(&key, 0);
            memcpy(key.bytes, &key_i, sizeof key_i);
            dp_synth_env env = {&key, "sp/1", 4};
            dp_synth *s;
            char err[256];
            CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, "spatial", j, &env, err, sizeof err), DP_OK);
            for (int i = 0; i < 4; i++) {
                dp_update u = pt_update(1, DP_UPDATE_INSERT, pts[i], 2, NULL);
                ingest_ok(s, &u);
            }
            tk_sink k;
            tk_sink_init(&k);
            dp_release_sink rs = tk_sink_of(&k);
            CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &rs, err, sizeof err), DP_OK);
            double leaves = tk_kv(k.m_debias, k.m_debias_keys, k.m_n_debias, "leaves");
            CU_ASSERT(leaves == 3 || leaves == 4);
            split_floor += leaves == 4;
            CU_ASSERT_EQUAL(tk_kv(k.m_debias, k.m_debias_keys, k.m_n_debias, "depth"), 2);
            lambda = tk_kv(k.b_noise, k.b_noise_keys, k.b_n_noise, "privtree_lambda");
            delta = tk_kv(k.b_noise, k.b_noise_keys, k.b_n_noise, "privtree_delta");
            CU_ASSERT_EQUAL(k.records, 4);
            /* the records, decoded from the sink's bytes: R id kind cat rowlen pointlen x y */
            int in_cell[3] = {0, 0, 0};
            dp_reader r;
            dp_reader_init(&r, k.out.data, k.out.len);
            for (uint64_t i = 0; i < k.records; i++) {
                CU_ASSERT_EQUAL(dp_reader_u8(&r), 'R');
                dp_reader_u64(&r);
                dp_reader_u32(&r);
                dp_reader_i64(&r);
                CU_ASSERT_EQUAL(dp_reader_u64(&r), 0);
                CU_ASSERT_EQUAL(dp_reader_u64(&r), 2);
                double x = dp_reader_f64(&r), y = dp_reader_f64(&r);
                in_cell[x >= 0.5 ? 2 : y >= 0.5]++;
            }
            CU_ASSERT(in_cell[0] == 3 && in_cell[1] == 0 && in_cell[2] == 1);
            tk_sink_free(&k);
            dp_synth_destroy(s);
        }
        /* P[X > δS] for DLap with scale b = λS: e^{-(δS+1)/b} / (1 + e^{-1/b}) */
        double S = 65536, b = lambda * S, p = exp(-(delta * S + 1) / b) / (1 + exp(-1 / b));
        double sd = sqrt(KEYS * p * (1 - p));
        printf("\n    %s: %d of %d trees split the floor node (expected %.1f ± %.1f)", variant ? "paper" : "safe",
               split_floor, KEYS, KEYS * p, sd);
        CU_ASSERT(fabs(p - 0.25) < 0.02);   /* δ is rounded up to the grid */
        CU_ASSERT(fabs(split_floor - KEYS * p) <= 5 * sd);
        json_decref(j);
    }
}

/* max_depth 0: the tree is the root alone, and the released total is
 * round⁺(n + DLap(1/ε_count)).  Over many keys its sample variance must
 * match the discrete Laplace variance: with kurtosis 6 for a Laplace-like
 * law, Var(s²)/σ⁴ ≈ 2/(N-1) + 3/N, so ±5 sd of the ratio is the bound. */
static void test_count_noise_variance(void)
{
    enum { KEYS = 1000, N = 500 };
    json_t *j = tk_cfg_text("{\"epsilon\": 1, \"max_depth\": 0}");
    double sum = 0, sumsq = 0, eps_count = 0;
    double x[2];
    for (int key_i = 0; key_i < KEYS; key_i++) {
        dp_key key;
        dptest_key(&key, 0);
        memcpy(key.bytes, &key_i, sizeof key_i);
        dp_synth_env env = {&key, "sp/1", 4};
        dp_synth *s;
        char err[256];
        CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, "spatial", j, &env, err, sizeof err), DP_OK);
        for (int i = 0; i < N; i++) {
            make_point((uint64_t)i, x);
            dp_update u = pt_update(1, DP_UPDATE_INSERT, x, 2, NULL);
            ingest_ok(s, &u);
        }
        tk_sink k;
        tk_sink_init(&k);
        dp_release_sink rs = tk_sink_of(&k);
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &rs, err, sizeof err), DP_OK);
        CU_ASSERT_EQUAL(tk_kv(k.m_debias, k.m_debias_keys, k.m_n_debias, "leaves"), 1);
        double e = (double)k.records - N;
        sum += e;
        sumsq += e * e;
        eps_count = tk_kv(k.b_noise, k.b_noise_keys, k.b_n_noise, "count_epsilon");
        tk_sink_free(&k);
        dp_synth_destroy(s);
    }
    CU_ASSERT_DOUBLE_EQUAL(eps_count, 0.5, 1e-12);   /* half of ε to the counts */
    dp_rational scale;
    CU_ASSERT_EQUAL_FATAL(dp_rational_from_double_up(1.0 / eps_count, &scale), DP_OK);
    double want = dp_dlap_variance(scale);
    double mean = sum / KEYS, var = (sumsq - KEYS * mean * mean) / (KEYS - 1);
    double sd_ratio = sqrt(2.0 / (KEYS - 1) + 3.0 / KEYS);
    printf("\n    released-total variance %.3f, discrete Laplace(2) %.3f (bound ±%.2f)", var, want,
           5 * sd_ratio * want);
    CU_ASSERT(fabs(var / want - 1) <= 5 * sd_ratio);
    CU_ASSERT(fabs(mean) <= 5 * sqrt(want / KEYS));
    json_decref(j);
}

static void test_ledger_horizon_init(void)
{
    json_t *j = tk_cfg_text("{\"epsilon\": 2, \"horizon\": 5, \"init_steps\": 2, \"counter\": {\"kind\": \"block\", "
                         "\"block\": 2}}");
    dp_synth *s;
    dp_key key;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(create(&s, j, 3, &key, err, sizeof err), DP_OK);
    tk_sink k;
    tk_sink_init(&k);
    uint64_t next = 0, oldest = 0;
    run(s, &k, 1, 1, 300, 0, &next, &oldest);
    CU_ASSERT_EQUAL(k.records, 0);   /* t₀ = 2: step 1 is collected, not released */
    CU_ASSERT_EQUAL(tk_kv(k.m_debias, k.m_debias_keys, k.m_n_debias, "warming_up"), 1);
    CU_ASSERT_EQUAL(k.b_spent_step, 0);
    run(s, &k, 2, 2, 300, 0, &next, &oldest);
    CU_ASSERT(fabs((double)k.records - 600) < 60);   /* both steps' points */
    CU_ASSERT_EQUAL(k.b_spent_step, 2);
    CU_ASSERT_EQUAL(k.b_spent_total, 2);
    CU_ASSERT_EQUAL(k.b_status, DP_BUDGET_ACTIVE);
    run(s, &k, 3, 5, 100, 50, &next, &oldest);
    CU_ASSERT_EQUAL(k.b_status, DP_BUDGET_EXHAUSTED);
    CU_ASSERT(dp_synth_exhausted(s));
    dp_release_sink rs = tk_sink_of(&k);
    CU_ASSERT_EQUAL(dp_synth_close_step(s, &rs, err, sizeof err), DP_EHORIZON);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(j);
}

typedef struct replay_case { int unsafe_paper; int delta; int horizon; } replay_case;

static void run_bytes(void *ctx, uint8_t key_variant, int restore_at, dp_buf *out)
{
    const replay_case *rc = ctx;
    json_t *j = tk_cfg_text("{\"epsilon\": 1, \"unsafe_paper_variant\": %s, \"max_depth\": 12%s%s}",
                            rc->unsafe_paper ? "true" : "false", rc->delta ? ", \"output\": \"delta\"" : "",
                            rc->horizon ? ", \"horizon\": 6" : "");
    dp_synth *s;
    dp_key key;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(create(&s, j, key_variant, &key, err, sizeof err), DP_OK);
    tk_sink k;
    tk_sink_init(&k);
    uint64_t next = 0, oldest = 0;
    if (restore_at) {
        run(s, &k, 1, restore_at, 400, 150, &next, &oldest);
        dp_synth_env env = {&key, "sp/1", 4};
        tk_snapshot_restore(&s, "spatial", j, &env, NULL);
    }
    run(s, &k, restore_at + 1, 6, 400, 150, &next, &oldest);
    dp_buf_put_bytes(out, k.out.data, k.out.len);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(j);
}

static void test_determinism_and_restore(void)
{
    /* the last: a horizon with the (unbounded) simple counter, whose
     * snapshot records no horizon */
    replay_case cases[4] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    for (int i = 0; i < 4; i++)
        tk_check_replays(run_bytes, &cases[i], 1, 2, 3, 10000);
}

/* An entity-less DELETE is ENTITY_REQUIRED whatever others inserted, on
 * event- and user-level streams (synth_testkit.h says why). */
static void test_entityless_delete(void)
{
    static const char *const level[2] = {"{\"epsilon\": 1}", "{\"epsilon\": 1, \"sensitivity\": 2}"};
    static const double pt[2] = {0.25, 0.75};
    dp_key key;
    dptest_key(&key, 1);
    dp_synth_env env = {&key, "sp/1", 4};
    for (int l = 0; l < 2; l++) {
        json_t *j = tk_cfg_text("%s", level[l]);
        tk_check_entityless_delete("spatial", j, &env, pt_update(1, DP_UPDATE_DELETE, pt, 2, NULL));
        json_decref(j);
    }
}

static void test_bad_input(void)
{
    json_t *j = tk_cfg_text("{\"epsilon\": 1, \"box\": [[0, 10], [-5, 5]]}");
    dp_synth *s;
    dp_key key;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(create(&s, j, 1, &key, err, sizeof err), DP_OK);
    double ok[2] = {1, 1}, out[2] = {11, 0}, nan_[2] = {NAN, 0}, inf_[2] = {1, INFINITY}, absent[2] = {2, 2},
           three[3] = {1, 1, 1};
    dp_update ins = pt_update(1, DP_UPDATE_INSERT, ok, 2, "alice");
    ingest_ok(s, &ins);
    dp_buf before, after;
    dp_buf_init(&before);
    dp_buf_init(&after);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(s, &before), DP_OK);
    struct { dp_update u; dp_reject_reason want; } cases[] = {
        {pt_update(1, DP_UPDATE_INSERT, out, 2, NULL), DP_REJECT_OUT_OF_DOMAIN},
        {pt_update(1, DP_UPDATE_INSERT, nan_, 2, NULL), DP_REJECT_MALFORMED},
        {pt_update(1, DP_UPDATE_INSERT, inf_, 2, NULL), DP_REJECT_MALFORMED},
        {pt_update(1, DP_UPDATE_INSERT, three, 3, NULL), DP_REJECT_OUT_OF_DOMAIN},
        {pt_update(1, DP_UPDATE_DELETE, absent, 2, "alice"), DP_REJECT_NOT_PRESENT},
        {pt_update(1, DP_UPDATE_DELETE, ok, 2, "bob"), DP_REJECT_NOT_PRESENT},
        {pt_update(1, DP_UPDATE_DELETE, ok, 2, NULL), DP_REJECT_ENTITY_REQUIRED},
        {pt_update(1, DP_UPDATE_REPORT, ok, 2, "alice"), DP_REJECT_WRONG_KIND},
        {pt_update(2, DP_UPDATE_INSERT, ok, 2, NULL), DP_REJECT_FUTURE_STEP},
    };
    dp_reject_reason why;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CU_ASSERT_EQUAL(dp_synth_ingest(s, &cases[i].u, &why), DP_OK);
        if (why != cases[i].want)
            printf("\n    case %zu: %s, want %s", i, dp_reject_reason_name(why), dp_reject_reason_name(cases[i].want));
        CU_ASSERT_EQUAL(why, cases[i].want);
    }
    dp_update cat = pt_update(1, DP_UPDATE_INSERT, NULL, 0, NULL);
    cat.payload = (dp_payload){.kind = DP_PAYLOAD_CATEGORY, .category = 1};
    CU_ASSERT_EQUAL(dp_synth_ingest(s, &cat, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_WRONG_KIND);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(s, &after), DP_OK);
    CU_ASSERT(before.len == after.len && memcmp(before.data, after.data, before.len) == 0);
    /* -0.0 is the point 0.0: a delete matches */
    double z[2] = {0.0, 1}, mz[2] = {-0.0, 1};
    dp_update iz = pt_update(1, DP_UPDATE_INSERT, z, 2, "zed"), dz = pt_update(1, DP_UPDATE_DELETE, mz, 2, "zed");
    ingest_ok(s, &iz);
    ingest_ok(s, &dz);
    dp_update del = pt_update(1, DP_UPDATE_DELETE, ok, 2, "alice");
    ingest_ok(s, &del);
    CU_ASSERT_EQUAL(dp_synth_ingest(s, &del, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_NOT_PRESENT);
    dp_buf_free(&before);
    dp_buf_free(&after);
    dp_synth_destroy(s);
    json_decref(j);
    /* user-level: entities required, `sensitivity` events each */
    j = tk_cfg_text("{\"epsilon\": 1, \"box\": [[0, 10], [-5, 5]], \"sensitivity\": 2}");
    CU_ASSERT_EQUAL_FATAL(create(&s, j, 1, &key, err, sizeof err), DP_OK);
    dp_update anon = pt_update(1, DP_UPDATE_INSERT, ok, 2, NULL);
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
    CU_ASSERT_DOUBLE_EQUAL(tk_kv(k.b_noise, k.b_noise_keys, k.b_n_noise, "tree_epsilon"), 0.25, 1e-12);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(j);
}

/* Deletion-heavy: a big first step, then mostly deletions.  The paper
 * variant's base g (noisy counts, extended) breaks c(child) <= c(parent)
 * somewhere; the safe variant's never does. */
static void test_monotone_safe_variant(void)
{
    double worst[2] = {0, 0};
    for (int vi = 0; vi < 2; vi++) {
        for (uint8_t kv = 1; kv <= 4; kv++) {
            json_t *j = tk_cfg_text("{\"epsilon\": 0.5, \"unsafe_paper_variant\": %s, \"max_depth\": 10}",
                                    vi ? "true" : "false");
            dp_synth *s;
            dp_key key;
            char err[256];
            CU_ASSERT_EQUAL_FATAL(create(&s, j, kv, &key, err, sizeof err), DP_OK);
            tk_sink k;
            tk_sink_init(&k);
            uint64_t next = 0, oldest = 0;
            run(s, &k, 1, 1, 3000, 0, &next, &oldest);
            for (int t = 2; t <= 8; t++) {
                run(s, &k, t, t, 20, 400, &next, &oldest);
                double v = tk_kv(k.m_debias, k.m_debias_keys, k.m_n_debias, "monotone_violations");
                worst[vi] = v > worst[vi] ? v : worst[vi];
            }
            tk_sink_free(&k);
            dp_synth_destroy(s);
            json_decref(j);
        }
    }
    printf("\n    monotonicity violations: safe %g, paper %g", worst[0], worst[1]);
    CU_ASSERT_EQUAL(worst[0], 0);
    CU_ASSERT(worst[1] > 0);
}

/* The safe variant releases round(max(0, g(root))) points — the sum of all
 * counters, unbiased for the true count — spread consistently; the paper
 * rounds every leaf at 0 and so adds mass in empty cells.  Over many keys
 * the safe total's mean error is within 5 standard errors of 0, and the
 * paper's is well above it (deliberately the biased rule). */
static void test_safe_total_unbiased(void)
{
    enum { KEYS = 150 };
    double sum[2] = {0, 0}, sumsq[2] = {0, 0};
    for (int vi = 0; vi < 2; vi++)
        for (int key_i = 0; key_i < KEYS; key_i++) {
            json_t *j = tk_cfg_text("{\"epsilon\": 1, \"unsafe_paper_variant\": %s, \"max_depth\": 10}",
                                    vi ? "true" : "false");
            dp_key key;
            dptest_key(&key, 0);
            memcpy(key.bytes, &key_i, sizeof key_i);
            dp_synth_env env = {&key, "sp/1", 4};
            dp_synth *s;
            char err[256];
            CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, "spatial", j, &env, err, sizeof err), DP_OK);
            tk_sink k;
            tk_sink_init(&k);
            uint64_t next = 0, oldest = 0, before = 0;
            for (int t = 1; t <= 4; t++) {
                before = k.records;
                run(s, &k, t, t, 400, 100, &next, &oldest);
            }
            double e = (double)(k.records - before) - (double)(next - oldest);
            sum[vi] += e;
            sumsq[vi] += e * e;
            tk_sink_free(&k);
            dp_synth_destroy(s);
            json_decref(j);
        }
    double mean[2], se[2];
    for (int vi = 0; vi < 2; vi++) {
        mean[vi] = sum[vi] / KEYS;
        se[vi] = sqrt((sumsq[vi] / KEYS - mean[vi] * mean[vi]) / (KEYS - 1));
    }
    printf("\n    released total - true: safe %+.1f ± %.1f, paper %+.1f ± %.1f", mean[0], se[0], mean[1], se[1]);
    CU_ASSERT(fabs(mean[0]) <= 5 * se[0] + 0.5);
    CU_ASSERT(mean[1] > 5 * se[1]);
}

/* output "delta": applying each release's removals (empty points) and
 * additions to the previous set gives exactly the FULL release of the same
 * key and input, ids and coordinates; and a quiet stream's deltas are small. */
typedef struct pt_set { size_t n, cap; uint64_t *id; double (*xy)[2]; int bad; } pt_set;

static long pt_find(const pt_set *s, uint64_t id)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->id[i] == id)
            return (long)i;
    return -1;
}

static void pt_on_record(void *ctx, const dp_synth_record *r)
{
    pt_set *s = ctx;
    long i = pt_find(s, r->synthetic_id);
    if (r->value.point_len == 0) {   /* removal */
        if (i < 0) {
            s->bad = 1;
            return;
        }
        s->id[i] = s->id[s->n - 1];
        memcpy(s->xy[i], s->xy[s->n - 1], sizeof s->xy[i]);
        s->n--;
        return;
    }
    if (i >= 0) {   /* an addition of an id already present */
        s->bad = 1;
        return;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->id = realloc(s->id, s->cap * sizeof *s->id);
        s->xy = realloc(s->xy, s->cap * sizeof *s->xy);
    }
    s->id[s->n] = r->synthetic_id;
    s->xy[s->n][0] = r->value.point[0];
    s->xy[s->n][1] = r->value.point[1];
    s->n++;
}

static void test_delta_output(void)
{
    json_t *jf = tk_cfg_text("{\"epsilon\": 2, \"max_depth\": 10}");
    json_t *jd = tk_cfg_text("{\"epsilon\": 2, \"max_depth\": 10, \"output\": \"delta\"}");
    dp_synth *sf, *sd;
    dp_key key;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(create(&sf, jf, 4, &key, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL_FATAL(create(&sd, jd, 4, &key, err, sizeof err), DP_OK);
    pt_set full = {0}, applied = {0};
    tk_sink kf, kd;
    tk_sink_init(&kf);
    tk_sink_init(&kd);
    kf.on_record = pt_on_record;
    kf.hook_ctx = &full;
    kd.on_record = pt_on_record;
    kd.hook_ctx = &applied;
    uint64_t nf = 0, of = 0, nd = 0, od = 0, delta_records = 0, full_records = 0;
    for (int t = 1; t <= 8; t++) {
        full.n = 0;
        uint64_t before_f = kf.records, before_d = kd.records;
        int ins = t == 1 ? 2000 : 60, del = t == 1 ? 0 : 40;
        run(sf, &kf, t, t, ins, del, &nf, &of);
        run(sd, &kd, t, t, ins, del, &nd, &od);
        CU_ASSERT_EQUAL(kd.m_mode, DP_RELEASE_DELTA);
        CU_ASSERT_EQUAL(kf.m_mode, DP_RELEASE_FULL);
        CU_ASSERT_EQUAL(kd.m_records, kd.records - before_d);
        if (t > 1) {
            delta_records += kd.records - before_d;
            full_records += kf.records - before_f;
        }
        CU_ASSERT_FATAL(!full.bad && !applied.bad);
        CU_ASSERT_EQUAL(full.n, applied.n);
        size_t same = 0;
        for (size_t i = 0; i < full.n; i++) {
            long j = pt_find(&applied, full.id[i]);
            same += j >= 0 && applied.xy[j][0] == full.xy[i][0] && applied.xy[j][1] == full.xy[i][1];
        }
        CU_ASSERT_EQUAL(same, full.n);
    }
    printf("\n    steps 2..8: %llu delta records for %llu full records",
           (unsigned long long)delta_records, (unsigned long long)full_records);
    CU_ASSERT(delta_records * 2 < full_records);
    free(full.id);
    free(full.xy);
    free(applied.id);
    free(applied.xy);
    tk_sink_free(&kf);
    tk_sink_free(&kd);
    dp_synth_destroy(sf);
    dp_synth_destroy(sd);
    json_decref(jf);
    json_decref(jd);
}


typedef struct shard_ctx { char id[32]; double x[2]; } shard_ctx;

/* 600 updates a step by 97 users; from step 2 every fifth deletes one of
 * that user's earlier points. */
static dp_update shard_update(void *ctx, int t, int i)
{
    shard_ctx *c = ctx;
    snprintf(c->id, sizeof c->id, "user-%d", i % 97);
    int del = i % 5 == 4 && t > 1;
    make_point((uint64_t)((del ? t - 1 : t) * 1000 + i), c->x);
    return pt_update((uint64_t)t, del ? DP_UPDATE_DELETE : DP_UPDATE_INSERT, c->x, 2, c->id);
}

static void test_shards_merge(void)
{
    json_t *j = tk_cfg_text("{\"epsilon\": 1, \"sensitivity\": 40}");
    shard_ctx c;
    CU_ASSERT(tk_check_shards_on("spatial", j, "sp/1", 4, 600, shard_update, &c) > 1000);
    json_decref(j);
    CU_ASSERT(dp_synth_shards_by_entity("spatial"));
}

int main(void)
{
    static const dptest_case cases[] = {
        {"config errors name their key", test_config_errors},
        {"unsafe_paper_variant says dp 0 in every budget event and the plan (the default dp 1)",
         test_unsafe_paper_labelled},
        {"PrivTree: hand-computed splits with negligible noise (both variants)", test_privtree_hand_splits},
        {"released total: discrete Laplace variance of the count budget", test_count_noise_variance},
        {"ledger: the budget per step, init_steps warm-up, exhausted at the horizon", test_ledger_horizon_init},
        {"replay byte-identical, restore continues byte-identically, key matters", test_determinism_and_restore},
        {"bad points rejected with their reason, changing nothing; user limits", test_bad_input},
        {"an entity-less DELETE is ENTITY_REQUIRED whatever others inserted", test_entityless_delete},
        {"safe variant keeps PrivTree's input monotone where the paper's does not", test_monotone_safe_variant},
        {"safe variant's released total is unbiased; the paper's rounding is not", test_safe_total_unbiased},
        {"output delta: removals + additions applied = the FULL release; small on a quiet stream", test_delta_output},
        {"4 shards by the real key: inserts and deletes merged = the bundle at every step", test_shards_merge},
        {NULL, NULL},
    };
    return dptest_run("spatial", cases);
}
