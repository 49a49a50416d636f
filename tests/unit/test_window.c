/* test_window.c — `window` (seed 000 Alg. 1): the consistency projection
 * and its rounding, the clamp, roster rules and every rejection reason,
 * imputation, the release/budget contract (t < k, t = k, exhaustion),
 * config validation, replaying the noise to check every target, order
 * independence, snapshot/restore, and the memory of 10^6 individuals. */
#include "dptest.h"
#include "synth_testkit.h"

#include "core/rational.h"
#include "core/sample.h"
#include "synth/longitudinal/longitudinal.h"
#include "synth/longitudinal/longitudinal_math.h"

#include <math.h>
#include <time.h>

static json_t *cfg_of(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    return j;
}

static dp_synth *make(const char *name, const char *cfg_text, const dp_key *key)
{
    json_t *cfg = cfg_of(cfg_text);
    dp_synth_env env = {key, "s", 1};
    dp_synth *s = NULL;
    char err[256] = "";
    int rc = dp_synth_create(&s, name, cfg, &env, err, sizeof err);
    if (rc != DP_OK)
        fprintf(stderr, "create failed: %s\n", err);
    json_decref(cfg);
    CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
    return s;
}

/* --- projection -------------------------------------------------------- */

static void check_projection(uint32_t c, int iters)
{
    dp_key key;
    dptest_key(&key, 1);
    dp_drbg g, gr, gc;
    dp_drbg_init(&g, &key, "t", 1, c, "test/inputs");
    dp_drbg_init(&gr, &key, "t", 1, c, "test/round");
    dp_drbg_init(&gc, &key, "t", 1, c, "test/clamp");
    int64_t chat[3], t[3];
    uint32_t scratch[3];
    int clamps = 0, plain = 0;
    for (int it = 0; it < iters; it++) {
        int64_t total = (int64_t)dp_drbg_uniform(&g, 60);
        for (uint32_t v = 0; v < c; v++)
            chat[v] = (int64_t)dp_drbg_uniform(&g, 80) - 20;   /* some negative */
        int cl = dp_window_project(chat, c, total, &gr, &gc, t, scratch);
        int64_t sum = 0;
        for (uint32_t v = 0; v < c; v++) {
            CU_ASSERT(t[v] >= 0);
            sum += t[v];
        }
        CU_ASSERT_EQUAL(sum, total);   /* exact, always */
        int64_t sc = 0;
        for (uint32_t v = 0; v < c; v++)
            sc += chat[v];
        int64_t d = total - sc;
        int64_t q = d >= 0 ? d / (int64_t)c : -((-d + (int64_t)c - 1) / (int64_t)c);
        int64_t r = d - q * (int64_t)c;
        int raw_negative = 0;
        for (uint32_t v = 0; v < c; v++)
            if (chat[v] + q + 1 < 0)
                raw_negative = 1;
        if (!cl) {
            /* The paper's targets Ĉ + Δ_z rounded: each is Ĉ_v + q or Ĉ_v + q + 1,
             * with exactly r of the +1s. */
            int ups = 0;
            for (uint32_t v = 0; v < c; v++) {
                int64_t e = t[v] - chat[v] - q;
                CU_ASSERT(e == 0 || e == 1);
                ups += (int)e;
            }
            CU_ASSERT_EQUAL(ups, r);
            plain++;
        } else {
            clamps++;
        }
        if (raw_negative)
            CU_ASSERT(cl);
    }
    CU_ASSERT(clamps > 0);   /* the generator reaches both branches */
    CU_ASSERT(plain > 0);
}

static void test_projection_c2(void) { check_projection(2, 20000); }
static void test_projection_c3(void) { check_projection(3, 20000); }

/* Which category receives the extra unit is uniform: chi-square test over
 * many draws (df = c-1, α = 1e-4, fixed key). */
static void test_rounding_uniform(void)
{
    dp_key key;
    dptest_key(&key, 2);
    for (uint32_t c = 2; c <= 3; c++) {
        dp_drbg gr, gc;
        dp_drbg_init(&gr, &key, "t", 1, c, "test/round");
        dp_drbg_init(&gc, &key, "t", 1, c, "test/clamp");
        const int N = 30000;
        int64_t chat[3] = {100, 100, 100}, t[3];
        uint32_t scratch[3];
        double hits[3] = {0, 0, 0};
        for (int i = 0; i < N; i++) {
            /* total = Σ chat + 1: Δ = 1/c, r = 1, q = 0. */
            int cl = dp_window_project(chat, c, 100 * (int64_t)c + 1, &gr, &gc, t, scratch);
            CU_ASSERT_FALSE(cl);
            for (uint32_t v = 0; v < c; v++)
                hits[v] += (double)(t[v] - 100);
        }
        double chi = 0, e = (double)N / c;
        for (uint32_t v = 0; v < c; v++)
            chi += (hits[v] - e) * (hits[v] - e) / e;
        CU_ASSERT(chi < dptest_chi2_isf(1e-4, c - 1));
        /* …and the paper's mean: E[t_v] = Ĉ_v + Δ_z exactly in expectation. */
    }
}

static void test_clamp_cases(void)
{
    dp_key key;
    dptest_key(&key, 3);
    dp_drbg gr, gc;
    dp_drbg_init(&gr, &key, "t", 1, 0, "test/round");
    dp_drbg_init(&gc, &key, "t", 1, 0, "test/clamp");
    int64_t t[3];
    uint32_t sc[3];
    int64_t a[2] = {5, 3};
    CU_ASSERT_TRUE(dp_window_project(a, 2, 0, &gr, &gc, t, sc));   /* no individuals with this suffix */
    CU_ASSERT_EQUAL(t[0], 0);
    CU_ASSERT_EQUAL(t[1], 0);
    int64_t b[3] = {10, -4, 1};   /* Σ 7, total 4: q = -1, r = 0 → (9, -5, 0) → clamp */
    CU_ASSERT_TRUE(dp_window_project(b, 3, 4, &gr, &gc, t, sc));
    CU_ASSERT_EQUAL(t[0], 4);
    CU_ASSERT_EQUAL(t[1], 0);
    CU_ASSERT_EQUAL(t[2], 0);
    int64_t d[3] = {6, 6, -9};    /* Σ 3, total 5: q = 0, r = 2 → two of (6,6,-9) +1 → clamp to 5 */
    CU_ASSERT_TRUE(dp_window_project(d, 3, 5, &gr, &gc, t, sc));
    CU_ASSERT_EQUAL(t[0] + t[1] + t[2], 5);
    CU_ASSERT_EQUAL(t[2], 0);
    CU_ASSERT(t[0] >= 2 && t[1] >= 2);   /* water level: the two large ones share the cut */
}

/* --- roster and rejections ----------------------------------------------- */

#define CFG_SMALL "{\"horizon\":4,\"k\":2,\"categories\":3,\"rho\":1}"

static void test_reject_reasons(void)
{
    dp_key key;
    dptest_key(&key, 4);
    dp_synth *s = make("window", CFG_SMALL, &key);
    dp_reject_reason why;
    CU_ASSERT_EQUAL(dp_synth_open_step(s), 1);
    CU_ASSERT_EQUAL(tk_report(s, 1, "alice", 0, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
    CU_ASSERT_EQUAL(tk_report(s, 1, "bob", 2, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
    CU_ASSERT_FALSE(dp_synth_roster_complete(s));   /* roster still forming at step 1 */
    tk_report(s, 1, "alice", 1, &why);
    CU_ASSERT_EQUAL(why, DP_REJECT_DUPLICATE_REPORT);
    tk_report(s, 1, "carol", 3, &why);
    CU_ASSERT_EQUAL(why, DP_REJECT_OUT_OF_DOMAIN);
    tk_report(s, 1, "carol", -1, &why);
    CU_ASSERT_EQUAL(why, DP_REJECT_OUT_OF_DOMAIN);
    tk_report(s, 2, "alice", 1, &why);
    CU_ASSERT_EQUAL(why, DP_REJECT_FUTURE_STEP);
    dp_update u = tk_update(1, "dave", 4, 1);
    u.kind = DP_UPDATE_INSERT;
    dp_synth_ingest(s, &u, &why);
    CU_ASSERT_EQUAL(why, DP_REJECT_WRONG_KIND);
    u = tk_update(1, "dave", 4, 1);
    u.payload.kind = DP_PAYLOAD_POINT;
    dp_synth_ingest(s, &u, &why);
    CU_ASSERT_EQUAL(why, DP_REJECT_WRONG_KIND);
    u = tk_update(1, NULL, 0, 1);
    dp_synth_ingest(s, &u, &why);
    CU_ASSERT_EQUAL(why, DP_REJECT_MALFORMED);
    /* Arbitrary bytes, including NUL, are ids; a prefix is a different id. */
    u = tk_update(1, "x\0y", 3, 1);
    dp_synth_ingest(s, &u, &why);
    CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
    u = tk_update(1, "x\0z", 3, 1);
    dp_synth_ingest(s, &u, &why);
    CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
    u = tk_update(1, "x", 1, 1);
    dp_synth_ingest(s, &u, &why);
    CU_ASSERT_EQUAL(why, DP_REJECT_NONE);

    tk_sink k;
    tk_sink_init(&k);
    dp_release_sink sink = tk_sink_of(&k);
    char err[256];
    CU_ASSERT_EQUAL(dp_synth_close_step(s, &sink, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_synth_open_step(s), 2);
    tk_report(s, 1, "alice", 1, &why);
    CU_ASSERT_EQUAL(why, DP_REJECT_LATE);
    tk_report(s, 2, "eve", 1, &why);
    CU_ASSERT_EQUAL(why, DP_REJECT_UNKNOWN_ENTITY);
    tk_report(s, 2, "alice", 1, &why);
    CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
    tk_report(s, 2, "alice", 2, &why);
    CU_ASSERT_EQUAL(why, DP_REJECT_DUPLICATE_REPORT);
    CU_ASSERT_FALSE(dp_synth_roster_complete(s));
    tk_report(s, 2, "bob", 1, &why);
    u = tk_update(2, "x\0y", 3, 0);
    dp_synth_ingest(s, &u, &why);
    u = tk_update(2, "x\0z", 3, 0);
    dp_synth_ingest(s, &u, &why);
    CU_ASSERT_FALSE(dp_synth_roster_complete(s));
    u = tk_update(2, "x", 1, 0);
    dp_synth_ingest(s, &u, &why);
    CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
    CU_ASSERT_TRUE(dp_synth_roster_complete(s));
    for (int step = 2; step <= 4; step++)
        CU_ASSERT_EQUAL(dp_synth_close_step(s, &sink, err, sizeof err), DP_OK);
    CU_ASSERT_TRUE(dp_synth_exhausted(s));
    CU_ASSERT_EQUAL(k.b_status, DP_BUDGET_EXHAUSTED);
    tk_report(s, 5, "alice", 1, &why);
    CU_ASSERT_EQUAL(why, DP_REJECT_EXHAUSTED);
    CU_ASSERT_EQUAL(dp_synth_close_step(s, &sink, err, sizeof err), DP_EHORIZON);
    CU_ASSERT_FALSE(dp_synth_roster_complete(s));

    CU_ASSERT_STRING_EQUAL(dp_reject_reason_name(DP_REJECT_UNKNOWN_ENTITY), "UNKNOWN_ENTITY");
    CU_ASSERT_STRING_EQUAL(dp_reject_reason_name(DP_REJECT_DUPLICATE_REPORT), "DUPLICATE_REPORT");
    CU_ASSERT_STRING_EQUAL(dp_reject_reason_name(DP_REJECT_EXHAUSTED), "EXHAUSTED");
    for (int r = 0; r < DP_REJECT_REASON_COUNT; r++)
        CU_ASSERT_PTR_NOT_NULL(dp_reject_reason_name((dp_reject_reason)r));
    CU_ASSERT_STRING_EQUAL(dp_reject_reason_name(DP_REJECT_REASON_COUNT), "UNKNOWN_REASON");
    tk_sink_free(&k);
    dp_synth_destroy(s);
}

/* --- imputation (ingest half on its own) ----------------------------------- */

static void run_impute(const char *cfg_text, uint64_t expect_key_b)
{
    const dp_synth_ops *ops = dp_synth_ops_find("window");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ops);
    json_t *cfg = cfg_of(cfg_text);
    dp_ingest_half *in;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(ops->ingest_create(&in, cfg, err, sizeof err), DP_OK);
    dp_reject_reason why;
    dp_update u = tk_update(1, "a", 1, 1);
    ops->ingest_update(in, &u, &why);
    u = tk_update(1, "b", 1, 2);
    ops->ingest_update(in, &u, &why);
    dp_stats st;
    dp_stats_init(&st, 1);
    CU_ASSERT_EQUAL(ops->ingest_close(in, 1, &st), DP_OK);
    CU_ASSERT_EQUAL(st.n_cells, 0);   /* t < k: no pattern counts */
    CU_ASSERT_EQUAL(st.scalars[0], 2);
    CU_ASSERT_EQUAL(st.scalars[1], 0);
    u = tk_update(2, "a", 1, 0);
    ops->ingest_update(in, &u, &why);
    dp_stats_clear(&st, 2);
    CU_ASSERT_EQUAL(ops->ingest_close(in, 2, &st), DP_OK);
    CU_ASSERT_EQUAL(st.scalars[1], 1);   /* b imputed */
    CU_ASSERT_EQUAL(st.n_cells, 2);
    CU_ASSERT_EQUAL(dp_stats_get(&st, 1 * 3 + 0), 1);   /* a: (1, 0) */
    CU_ASSERT_EQUAL(dp_stats_get(&st, expect_key_b), 1);
    CU_ASSERT_EQUAL(ops->ingest_close(in, 2, &st), DP_ESTATE);   /* already closed */
    dp_stats_free(&st);
    ops->ingest_destroy(in);
    json_decref(cfg);
}

static void test_impute_policies(void)
{
    run_impute("{\"horizon\":4,\"k\":2,\"categories\":3,\"rho\":1}", 2 * 3 + 2);   /* carry forward (2,2) */
    run_impute("{\"horizon\":4,\"k\":2,\"categories\":3,\"rho\":1,"
               "\"impute\":{\"policy\":\"fixed\",\"value\":1}}", 2 * 3 + 1);       /* fixed (2,1) */
}

/* --- release contract ------------------------------------------------------ */

static void test_release_contract(void)
{
    dp_key key;
    dptest_key(&key, 5);
    const double rho = 0.5, delta = 1e-6;
    dp_synth *s = make("window", "{\"horizon\":5,\"k\":3,\"rho\":0.5,\"beta\":0.1}", &key);
    tk_sink k;
    tk_sink_init(&k);
    dp_release_sink sink = tk_sink_of(&k);
    char err[256];
    dp_reject_reason why;
    char id[16];
    for (uint64_t t = 1; t <= 5; t++) {
        for (int i = 0; i < 50; i++) {
            snprintf(id, sizeof id, "p%d", i);
            if (!(t == 4 && i < 7))   /* 7 missing at step 4 */
                tk_report(s, t, id, (i + (int)t) % 2, &why);
        }
        uint64_t before = k.records;
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &sink, err, sizeof err), DP_OK);
        CU_ASSERT_EQUAL(k.manifests, t);
        CU_ASSERT_EQUAL(k.budgets, t);
        CU_ASSERT_EQUAL(k.b_step, t);
        CU_ASSERT_STRING_EQUAL(k.b_unit, "user-level over horizon T");
        CU_ASSERT_STRING_EQUAL(k.b_neighbors, "replace");
        CU_ASSERT_STRING_EQUAL(k.b_mechanism, "window/discrete_gaussian");
        CU_ASSERT_DOUBLE_EQUAL(k.b_budget_total, rho, 1e-15);
        CU_ASSERT_DOUBLE_EQUAL(k.b_delta, delta, 1e-20);
        double sigma2 = tk_kv(k.b_noise, k.b_noise_keys, k.b_n_noise, "sigma2");
        CU_ASSERT_DOUBLE_EQUAL(sigma2, 3.0 / rho, 1e-5);   /* (T-k+1)/ρ under replace */
        double npad = tk_kv(k.m_debias, k.m_debias_keys, k.m_n_debias, "n_pad");
        double lam = (sqrt(2 * sigma2) + 1 / sqrt(2.0)) * sqrt(log(8 * 3 / 0.1));
        CU_ASSERT_DOUBLE_EQUAL(npad, ceil(lam), 1e-9);
        CU_ASSERT_DOUBLE_EQUAL(tk_kv(k.b_acc, k.b_acc_keys, k.b_n_acc, "max_abs_error"), lam, 1e-9);
        CU_ASSERT_DOUBLE_EQUAL(tk_kv(k.b_acc, k.b_acc_keys, k.b_n_acc, "beta"), 0.1, 1e-15);
        if (t < 3) {
            CU_ASSERT_EQUAL(k.records, before);
            CU_ASSERT_EQUAL(k.m_records, 0);
            CU_ASSERT_EQUAL(k.m_mode, DP_RELEASE_NONE);   /* no dataset before step k */
            CU_ASSERT_EQUAL(k.b_spent_step, 0.0);
            CU_ASSERT_EQUAL(k.b_spent_total, 0.0);
            CU_ASSERT_EQUAL(k.b_eps_cks, 0.0);
        } else {
            double spent = rho / 3 * (double)(t - 2);
            CU_ASSERT_DOUBLE_EQUAL(k.b_spent_step, rho / 3, 1e-12);
            CU_ASSERT_DOUBLE_EQUAL(k.b_spent_total, spent, 1e-12);
            CU_ASSERT_DOUBLE_EQUAL(k.b_eps_simple, spent + 2 * sqrt(spent * log(1 / delta)), 1e-9);
            CU_ASSERT(k.b_eps_cks > 0 && k.b_eps_cks <= k.b_eps_simple);
            CU_ASSERT_EQUAL(k.records - before, k.m_records);
            double pop = tk_kv(k.m_debias, k.m_debias_keys, k.m_n_debias, "population");
            CU_ASSERT_EQUAL(k.m_records, (uint64_t)pop);
            CU_ASSERT_EQUAL(k.m_mode, t == 3 ? DP_RELEASE_FULL : DP_RELEASE_DELTA);
        }
        CU_ASSERT_EQUAL(k.b_status, t == 5 ? DP_BUDGET_EXHAUSTED : DP_BUDGET_ACTIVE);
    }
    const dp_ledger *l = dp_synth_ledger(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l);
    CU_ASSERT_EQUAL(l->n_entries, 3);
    CU_ASSERT_DOUBLE_EQUAL(l->spent, rho, 1e-12);
    tk_sink_free(&k);
    dp_synth_destroy(s);

    /* add_remove: the paper's calibration, stated in the event. */
    s = make("window", "{\"horizon\":5,\"k\":3,\"rho\":0.5,\"neighbors\":\"add_remove\",\"n_pad\":7}", &key);
    tk_sink_init(&k);
    sink = tk_sink_of(&k);
    for (int t = 1; t <= 3; t++)
        CU_ASSERT_EQUAL(dp_synth_close_step(s, &sink, err, sizeof err), DP_OK);
    CU_ASSERT_STRING_EQUAL(k.b_neighbors, "add_remove");
    CU_ASSERT_DOUBLE_EQUAL(tk_kv(k.b_noise, k.b_noise_keys, k.b_n_noise, "sigma2"), 3.0 / (2 * rho), 1e-5);
    CU_ASSERT_DOUBLE_EQUAL(tk_kv(k.m_debias, k.m_debias_keys, k.m_n_debias, "n_pad"), 7.0, 0);
    tk_sink_free(&k);
    dp_synth_destroy(s);
}

/* A budget written as (ε, δ): the stream runs on the largest ρ whose CKS
 * conversion is within ε, its budget events name the ε, and the last one
 * (everything spent) reports eps_cks <= ε; the same release as a "rho"
 * config with that ρ, byte for byte. */
static void test_epsilon_budget(void)
{
    dp_key key;
    dptest_key(&key, 5);
    double rho;
    CU_ASSERT_EQUAL_FATAL(dp_zcdp_rho_for_eps_cks(1.0, 1e-5, &rho), DP_OK);
    char rho_cfg[128];
    snprintf(rho_cfg, sizeof rho_cfg, "{\"horizon\":4,\"k\":2,\"rho\":%.17g,\"delta\":1e-5}", rho);
    dp_synth *a = make("window", "{\"horizon\":4,\"k\":2,\"epsilon\":1,\"delta\":1e-5}", &key);
    dp_synth *b = make("window", rho_cfg, &key);
    tk_sink ka, kb;
    tk_sink_init(&ka);
    tk_sink_init(&kb);
    dp_release_sink sa = tk_sink_of(&ka), sb = tk_sink_of(&kb);
    char err[256], id[16];
    dp_reject_reason why;
    for (uint64_t t = 1; t <= 4; t++) {
        for (int i = 0; i < 30; i++) {
            snprintf(id, sizeof id, "p%d", i);
            tk_report(a, t, id, (i * 7 + (int)t) % 2, &why);
            tk_report(b, t, id, (i * 7 + (int)t) % 2, &why);
        }
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(a, &sa, err, sizeof err), DP_OK);
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(b, &sb, err, sizeof err), DP_OK);
        CU_ASSERT_EQUAL(ka.b_budget_total, rho);
        CU_ASSERT_EQUAL(tk_kv(ka.b_noise, ka.b_noise_keys, ka.b_n_noise, "budget_epsilon"), 1.0);
        CU_ASSERT(isnan(tk_kv(kb.b_noise, kb.b_noise_keys, kb.b_n_noise, "budget_epsilon")));
        CU_ASSERT_EQUAL(ka.b_spent_total, kb.b_spent_total);
        CU_ASSERT_EQUAL(ka.b_eps_cks, kb.b_eps_cks);
    }
    CU_ASSERT_EQUAL(ka.b_status, DP_BUDGET_EXHAUSTED);
    CU_ASSERT_EQUAL(ka.b_spent_total, rho);
    CU_ASSERT(ka.b_eps_cks <= 1.0 && ka.b_eps_cks > 0.9999);
    CU_ASSERT_EQUAL(ka.records, kb.records);
    tk_sink_free(&ka);
    tk_sink_free(&kb);
    dp_synth_destroy(a);
    dp_synth_destroy(b);

    /* one budget, not two; and a positive one */
    dp_synth_env env = {&key, "s", 1};
    static const struct { const char *cfg, *msg; } BAD[] = {
        {"{\"horizon\":4,\"k\":2,\"rho\":1,\"epsilon\":1}", "not both"},
        {"{\"horizon\":4,\"k\":2}", "a budget is required"},
        {"{\"horizon\":4,\"k\":2,\"epsilon\":0}", "epsilon must be > 0"},
        {"{\"horizon\":4,\"k\":2,\"epsilon\":\"1\"}", "epsilon"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        json_t *cfg = cfg_of(BAD[i].cfg);
        dp_synth *s = NULL;
        char e[256] = "";
        CU_ASSERT_NOT_EQUAL(dp_synth_create(&s, "window", cfg, &env, e, sizeof e), DP_OK);
        CU_ASSERT_PTR_NOT_NULL(strstr(e, BAD[i].msg));
        if (!strstr(e, BAD[i].msg))
            fprintf(stderr, "\n  %s: %s", BAD[i].cfg, e);
        json_decref(cfg);
    }
    /* cumulative takes it too */
    json_t *cfg = cfg_of("{\"horizon\":6,\"epsilon\":2}");
    dp_synth *s = NULL;
    CU_ASSERT_EQUAL(dp_synth_create(&s, "cumulative", cfg, &env, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_synth_ledger(s)->budget, (dp_zcdp_rho_for_eps_cks(2.0, 1e-6, &rho), rho));
    dp_synth_destroy(s);
    json_decref(cfg);
}

static void test_config_errors(void)
{
    dp_key key;
    dptest_key(&key, 6);
    dp_synth_env env = {&key, "s", 1};
    const char *bad[] = {
        "{\"k\":3,\"rho\":1}",
        "{\"horizon\":5,\"rho\":1}",
        "{\"horizon\":5,\"k\":3}",
        "{\"horizon\":5,\"k\":6,\"rho\":1}",
        "{\"horizon\":5,\"k\":0,\"rho\":1}",
        "{\"horizon\":5,\"k\":3,\"rho\":0}",
        "{\"horizon\":5,\"k\":3,\"rho\":1,\"bogus\":1}",
        "{\"horizon\":5,\"k\":3,\"rho\":1,\"neighbors\":\"swap\"}",
        "{\"horizon\":5,\"k\":3,\"rho\":1,\"beta\":1}",
        "{\"horizon\":5,\"k\":3,\"rho\":1,\"delta\":0}",
        "{\"horizon\":5,\"k\":3,\"rho\":1,\"categories\":1}",
        "{\"horizon\":30,\"k\":25,\"rho\":1}",
        "{\"horizon\":5,\"k\":3,\"rho\":1,\"impute\":{\"policy\":\"fixed\",\"value\":2}}",
        "{\"horizon\":5,\"k\":3,\"rho\":1,\"impute\":{\"policy\":\"mean\"}}",
        "{\"horizon\":5,\"k\":3,\"rho\":1,\"n_pad\":-1}",
        "{\"horizon\":5,\"k\":3,\"rho\":1,\"synthesizer\":\"cumulative\"}",
        "{\"horizon\":5,\"k\":3,\"rho\":1,\"counter\":\"tree\"}",
        "[1]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *cfg = cfg_of(bad[i]);
        dp_synth *s = NULL;
        char err[256] = "";
        int rc = dp_synth_create(&s, "window", cfg, &env, err, sizeof err);
        CU_ASSERT_NOT_EQUAL(rc, DP_OK);
        CU_ASSERT_PTR_NULL(s);
        CU_ASSERT(strlen(err) > 0);
        json_decref(cfg);
    }
    json_t *cfg = cfg_of("{\"horizon\":5,\"k\":3,\"rho\":1}");
    dp_synth *s = NULL;
    char err[256];
    CU_ASSERT_NOT_EQUAL(dp_synth_create(&s, "nonesuch", cfg, &env, err, sizeof err), DP_OK);
    CU_ASSERT_PTR_NULL(dp_synth_ops_find("nonesuch"));
    json_decref(cfg);
}

/* --- the release replays exactly: noise, projection, consistency ---------- */

typedef struct hist_track {
    uint32_t c, k;
    uint64_t step;
    uint64_t n;
    uint32_t *pat;    /* per synthetic id: pattern of its last k values */
    size_t cap;
} hist_track;

static void track_record(void *ctx, const dp_synth_record *r)
{
    hist_track *h = ctx;
    if (r->synthetic_id >= h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 1024;
        while (cap <= r->synthetic_id)
            cap *= 2;
        h->pat = realloc(h->pat, cap * sizeof *h->pat);
        h->cap = cap;
    }
    if (r->value.kind == DP_PAYLOAD_ROW) {
        uint32_t p = 0;
        for (size_t j = 0; j < r->value.row_len; j++)
            p = p * h->c + (uint32_t)r->value.row[j];
        h->pat[r->synthetic_id] = p;
        if (r->synthetic_id + 1 > h->n)
            h->n = r->synthetic_id + 1;
    } else {
        uint32_t bins = 1;
        for (uint32_t j = 0; j < h->k; j++)
            bins *= h->c;
        h->pat[r->synthetic_id] = (h->pat[r->synthetic_id] * h->c + (uint32_t)r->value.category) % bins;
    }
}

static void test_replay_targets(void)
{
    /* c = 3, k = 2, n = 400 real individuals with a data-dependent pattern
     * mix; ρ large enough that no clamping happens.  The test redraws
     * Ĉ from the documented DRBG labels and checks every target. */
    dp_key key;
    dptest_key(&key, 7);
    const uint32_t c = 3, k = 2, T = 7;
    const double rho = 50;
    dp_synth *s = make("window", "{\"horizon\":7,\"k\":2,\"categories\":3,\"rho\":50}", &key);
    tk_sink sk;
    tk_sink_init(&sk);
    hist_track h = {c, k, 0, 0, NULL, 0};
    sk.on_record = track_record;
    sk.hook_ctx = &h;
    dp_release_sink sink = tk_sink_of(&sk);
    uint32_t real[400];
    memset(real, 0, sizeof real);
    dp_drbg gd;
    dp_drbg_init(&gd, &key, "data", 4, 0, "test/data");
    dp_rational q;
    CU_ASSERT_EQUAL_FATAL(dp_rational_from_double_up((T - k + 1) / rho, &q), DP_OK);
    dp_dgauss dg;
    CU_ASSERT_EQUAL_FATAL(dp_dgauss_prepare(&dg, q, NULL, 0), DP_OK);
    char err[256], id[16];
    dp_reject_reason why;
    int64_t prev_p[9] = {0};
    for (uint64_t t = 1; t <= T; t++) {
        for (int i = 0; i < 400; i++) {
            uint32_t v = (uint32_t)dp_drbg_uniform(&gd, i % 2 ? 3 : 2);
            real[i] = (real[i] * c + v) % 9;
            snprintf(id, sizeof id, "r%d", i);
            tk_report(s, t, id, v, &why);
        }
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &sink, err, sizeof err), DP_OK);
        if (t < k)
            continue;
        CU_ASSERT_FALSE(sk.m_clamped);
        int64_t C[9] = {0}, chat[9], p[9] = {0};
        for (int i = 0; i < 400; i++)
            C[real[i]]++;
        int64_t npad = (int64_t)tk_kv(sk.m_debias, sk.m_debias_keys, sk.m_n_debias, "n_pad");
        dp_drbg g;
        dp_drbg_init(&g, &key, "s", 1, t, "window/noise");
        for (int b = 0; b < 9; b++)
            chat[b] = C[b] + npad + dp_dgauss_sample(&dg, &g);
        for (uint64_t i = 0; i < h.n; i++)
            p[h.pat[i]]++;
        if (t == k) {
            for (int b = 0; b < 9; b++)
                CU_ASSERT_EQUAL(p[b], chat[b]);
        } else {
            for (uint32_t z = 0; z < 3; z++) {
                int64_t total = prev_p[0 * 3 + z] + prev_p[1 * 3 + z] + prev_p[2 * 3 + z];
                int64_t sumc = chat[z * 3] + chat[z * 3 + 1] + chat[z * 3 + 2];
                int64_t d = total - sumc;
                int64_t qq = d >= 0 ? d / 3 : -((-d + 2) / 3);
                int64_t ups = 0, sum = 0;
                for (uint32_t v = 0; v < 3; v++) {
                    int64_t e = p[z * 3 + v] - chat[z * 3 + v] - qq;
                    CU_ASSERT(e == 0 || e == 1);
                    ups += e;
                    sum += p[z * 3 + v];
                }
                CU_ASSERT_EQUAL(ups, d - 3 * qq);
                CU_ASSERT_EQUAL(sum, total);   /* consistency: Σ_v p_zv^t = Σ_a p_az^{t-1} */
            }
        }
        memcpy(prev_p, p, sizeof p);
    }
    free(h.pat);
    tk_sink_free(&sk);
    dp_synth_destroy(s);
}

/* --- order independence and snapshot/restore -------------------------------- */

/* Run a panel; `perm` permutes the report order inside each step;
 * snapshot+restore after `snap_after` reports of step `snap_step` (0 = never). */
static void run_panel(const char *name, const char *cfg_text, int n, int T, int cats, int perm,
                      int snap_step, int snap_after, dp_buf *out)
{
    dp_key key;
    dptest_key(&key, 8);
    json_t *cfg = cfg_of(cfg_text);
    dp_synth_env env = {&key, "s", 1};
    dp_synth *s = NULL;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, name, cfg, &env, err, sizeof err), DP_OK);
    tk_sink k;
    tk_sink_init(&k);
    dp_release_sink sink = tk_sink_of(&k);
    dp_reject_reason why;
    char id[24];
    for (int t = 1; t <= T; t++) {
        for (int j = 0; j < n; j++) {
            int i = perm ? (j * 7919 + t * 13) % n : j;   /* n coprime to 7919 */
            if (t > 1 && (i * 31 + t) % 17 == 0)
                continue;   /* some missing → imputed */
            snprintf(id, sizeof id, "id-%d", i);
            int v = (i * i + t * (i % 5)) % cats;
            tk_report(s, (uint64_t)t, id, v, &why);
            if (t == snap_step && j == snap_after) {
                dp_buf b;
                dp_buf_init(&b);
                CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(s, &b), DP_OK);
                dp_synth_destroy(s);
                s = NULL;
                CU_ASSERT_EQUAL_FATAL(dp_synth_restore(&s, name, cfg, &env, b.data, b.len, err, sizeof err),
                                      DP_OK);
                /* A corrupted or truncated snapshot is refused, never half-used. */
                dp_synth *bad = NULL;
                CU_ASSERT_NOT_EQUAL(dp_synth_restore(&bad, name, cfg, &env, b.data, b.len - 1, err, sizeof err),
                                    DP_OK);
                CU_ASSERT_PTR_NULL(bad);
                dp_buf_free(&b);
            }
        }
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &sink, err, sizeof err), DP_OK);
    }
    dp_buf_put_bytes(out, k.out.data, k.out.len);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(cfg);
}

static void test_order_independent_and_snapshot(void)
{
    const char *cfg = "{\"horizon\":8,\"k\":3,\"categories\":3,\"rho\":2}";
    dp_buf a, b, c, d;
    dp_buf_init(&a);
    dp_buf_init(&b);
    dp_buf_init(&c);
    dp_buf_init(&d);
    run_panel("window", cfg, 601, 8, 3, 0, 0, 0, &a);
    run_panel("window", cfg, 601, 8, 3, 1, 0, 0, &b);    /* other arrival order */
    run_panel("window", cfg, 601, 8, 3, 0, 5, 300, &c);  /* snapshot mid-step 5 */
    run_panel("window", cfg, 601, 8, 3, 0, 1, 100, &d);  /* snapshot while the roster forms */
    CU_ASSERT(a.len > 1000);
    CU_ASSERT_EQUAL(a.len, b.len);
    CU_ASSERT(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    CU_ASSERT(a.len == c.len && memcmp(a.data, c.data, a.len) == 0);
    CU_ASSERT(a.len == d.len && memcmp(a.data, d.data, a.len) == 0);
    /* A different key is a different release (the test can fail). */
    dp_buf_free(&a);
    dp_buf_free(&b);
    dp_buf_free(&c);
    dp_buf_free(&d);
}

static void test_snapshot_wrong_config_refused(void)
{
    dp_key key;
    dptest_key(&key, 9);
    dp_synth *s = make("window", "{\"horizon\":8,\"k\":3,\"rho\":2}", &key);
    dp_buf b;
    dp_buf_init(&b);
    CU_ASSERT_EQUAL(dp_synth_snapshot(s, &b), DP_OK);
    json_t *other = cfg_of("{\"horizon\":8,\"k\":3,\"rho\":3}");
    dp_synth_env env = {&key, "s", 1};
    dp_synth *r = NULL;
    char err[1024];
    CU_ASSERT_NOT_EQUAL(dp_synth_restore(&r, "window", other, &env, b.data, b.len, err, sizeof err), DP_OK);
    CU_ASSERT_PTR_NULL(r);
    /* the refusal names the stream, the field with its old and new value, and what to do */
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "window stream 's'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "(rho 2 -> 3)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "new stream id"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "budgets cannot be raised in place"));
    json_decref(other);
    /* several fields, one added and one nested: each named once, by its path */
    other = cfg_of("{\"horizon\":8,\"k\":2,\"rho\":2.5,\"impute\":{\"policy\":\"fixed\",\"value\":1}}");
    CU_ASSERT_NOT_EQUAL(dp_synth_restore(&r, "window", other, &env, b.data, b.len, err, sizeof err), DP_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "(k 3 -> 2, rho 2 -> 2.5, impute (absent) -> {\"policy\":\"fixed\",\"value\":1})"));
    if (!strstr(err, "(k 3 -> 2, rho 2 -> 2.5, impute (absent) -> {\"policy\":\"fixed\",\"value\":1})"))
        fprintf(stderr, "\n  %s", err);
    json_decref(other);
    /* the recorded configuration is the public head of the snapshot */
    dp_synth_snapshot_head h;
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot_header(b.data, b.len, &h), DP_OK);
    CU_ASSERT_EQUAL(h.open_step, 1);
    CU_ASSERT(h.config_len == strlen("{\"horizon\":8,\"k\":3,\"rho\":2}") &&
              memcmp(h.config, "{\"horizon\":8,\"k\":3,\"rho\":2}", h.config_len) == 0);
    /* the same configuration (1 and 1.0 are one number) but a damaged state: said so */
    json_t *same = cfg_of("{\"horizon\":8,\"k\":3,\"rho\":2.0}");
    b.data[b.len - 1] ^= 0x55;
    CU_ASSERT_NOT_EQUAL(dp_synth_restore(&r, "window", same, &env, b.data, b.len, err, sizeof err), DP_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "the state is damaged"));
    b.data[b.len - 1] ^= 0x55;
    CU_ASSERT_EQUAL(dp_synth_restore(&r, "window", same, &env, b.data, b.len, err, sizeof err), DP_OK);
    dp_synth_destroy(r);
    /* delta only restates the (ε, δ) equivalents: the state continues under another */
    other = cfg_of("{\"horizon\":8,\"k\":3,\"rho\":2,\"delta\":1e-9}");
    CU_ASSERT_EQUAL(dp_synth_restore(&r, "window", other, &env, b.data, b.len, err, sizeof err), DP_OK);
    dp_synth_destroy(r);
    json_decref(other);
    /* a snapshot from before configurations were recorded ("SYN2": no config
     * blob) still restores, and a refusal of one says why it cannot name the field */
    dp_buf old;
    dp_buf_init(&old);
    dp_buf_put_u32(&old, 0x324e5953u);
    dp_reader rd;
    dp_reader_init(&rd, b.data, b.len);
    (void)dp_reader_u32(&rd);
    size_t nl, fl, cl;
    const uint8_t *nm = dp_reader_blob(&rd, &nl), *fp = dp_reader_blob(&rd, &fl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dp_reader_blob(&rd, &cl));
    dp_buf_put_blob(&old, nm, nl);
    dp_buf_put_blob(&old, fp, fl);
    dp_buf_put_bytes(&old, b.data + rd.off, b.len - rd.off);
    CU_ASSERT_EQUAL(dp_synth_restore(&r, "window", same, &env, old.data, old.len, err, sizeof err), DP_OK);
    dp_synth_destroy(r);
    other = cfg_of("{\"horizon\":8,\"k\":3,\"rho\":3}");
    CU_ASSERT_NOT_EQUAL(dp_synth_restore(&r, "window", other, &env, old.data, old.len, err, sizeof err), DP_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "window stream 's'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot be named"));
    json_decref(other);
    json_decref(same);
    dp_buf_free(&old);
    dp_buf_free(&b);
    dp_synth_destroy(s);
}

/* --- memory: n = 10^6, k = 8, c = 2 -------------------------------------- */

static void test_memory_million(void)
{
    dp_lingest li;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_lingest_init(&li, 9, 2, 8, 0, DP_IMPUTE_CARRY_FORWARD, 0, err, sizeof err), DP_OK);
    const int n = 1000000;
    char id[24];
    dp_reject_reason why;
    for (int i = 0; i < n; i++) {
        int len = snprintf(id, sizeof id, "user-%07d", i);
        dp_update u = tk_update(1, id, (size_t)len, i & 1);
        dp_lingest_offer(&li, &u, &why);
    }
    CU_ASSERT_EQUAL(li.n, (size_t)n);
    size_t bytes = dp_lingest_bytes(&li);
    printf("\n  window ingest state, n=10^6 k=8 c=2: %.1f MB (%.1f bytes/individual incl. 12-byte ids)\n",
           bytes / 1048576.0, (double)bytes / n);
    CU_ASSERT(bytes < 64u * 1024 * 1024);
    clock_t t0 = clock();
    uint64_t imputed = dp_lingest_impute_missing(&li);
    CU_ASSERT_EQUAL(imputed, 0);
    dp_lingest_advance(&li);
    printf("  impute pass over 10^6: %.3f s cpu\n", (double)(clock() - t0) / CLOCKS_PER_SEC);
    dp_lingest_free(&li);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"projection: sums exact, targets = round(Ĉ + Δ), c = 2", test_projection_c2},
        {"projection: sums exact, targets = round(Ĉ + Δ), c = 3", test_projection_c3},
        {"rounding: the extra unit goes to a uniform category", test_rounding_uniform},
        {"clamp: infeasible targets clamped with exact sums", test_clamp_cases},
        {"roster rules and every rejection reason", test_reject_reasons},
        {"imputation: carry_forward and fixed", test_impute_policies},
        {"release contract: t<k empty, t=k full, spend, exhaustion", test_release_contract},
        {"config validation", test_config_errors},
        {"a budget given as epsilon (at delta) runs on its CKS rho", test_epsilon_budget},
        {"replayed noise: every target matches Alg. 1", test_replay_targets},
        {"arrival order independent; snapshot/restore byte-identical", test_order_independent_and_snapshot},
        {"snapshot under another config refused, naming the fields", test_snapshot_wrong_config_refused},
        {"memory: 10^6 individuals, k = 8, c = 2", test_memory_million},
        {NULL, NULL},
    };
    return dptest_run("window", cases);
}
