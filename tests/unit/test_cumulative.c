/* test_cumulative.c — `cumulative` (seed 000 Alg. 2): Lemma 4.2's
 * monotonization on random streams, the z_b statistics, exactness without
 * noise, the Cor. B.1 budget split (and the variance-derived split of other
 * counter kinds), the replace calibration, exhaustion, snapshot/restore. */
#include "dptest.h"
#include "synth_testkit.h"

#include "core/counter.h"

#include "synth/longitudinal/longitudinal_math.h"

#include <math.h>

static json_t *cfg_of(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    return j;
}

static dp_synth *make(const char *cfg_text, const dp_key *key, int *rc_out)
{
    json_t *cfg = cfg_of(cfg_text);
    dp_synth_env env = {key, "s", 1};
    dp_synth *s = NULL;
    char err[256] = "";
    int rc = dp_synth_create(&s, "cumulative", cfg, &env, err, sizeof err);
    if (rc != DP_OK && !rc_out)
        fprintf(stderr, "create failed: %s\n", err);
    json_decref(cfg);
    if (rc_out)
        *rc_out = rc;
    else
        CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
    return s;
}

static int64_t iabs(int64_t x) { return x < 0 ? -x : x; }

/* Lemma 4.2, eq. (10): |Ŝ_b^t - S_b^t| <= max(|S̃_b^t - S_b^t|,
 * |Ŝ_b^{t-1} - S_b^{t-1}|, |Ŝ_{b-1}^{t-1} - S_{b-1}^{t-1}|), on random
 * data and noise of random scale; plus the sandwich the synthesis needs. */
static void test_monotonize_lemma42(void)
{
    dp_key key;
    dptest_key(&key, 11);
    dp_drbg g;
    dp_drbg_init(&g, &key, "t", 1, 0, "test/mono");
    enum { N = 40, T = 16 };
    int violations = 0, clamps = 0, checks = 0;
    for (int run = 0; run < 400; run++) {
        int w[N] = {0};
        int64_t S[T + 2] = {0}, Sprev[T + 2] = {0}, hat[T + 2] = {0}, hatprev[T + 2] = {0};
        int64_t noisy[T + 2];
        int64_t scale = 1 + (int64_t)dp_drbg_uniform(&g, run % 3 == 0 ? 40 : 6);
        Sprev[0] = hatprev[0] = N;
        for (int t = 1; t <= T; t++) {
            for (int i = 0; i < N; i++)
                w[i] += (int)dp_drbg_uniform(&g, 2);
            for (int b = 0; b <= T + 1; b++) {
                S[b] = 0;
                for (int i = 0; i < N; i++)
                    S[b] += w[i] >= b;
            }
            for (int b = 1; b <= t; b++)
                noisy[b] = S[b] + (int64_t)dp_drbg_uniform(&g, 2 * scale + 1) - scale;
            dp_cumulative_monotonize(hatprev, noisy, (uint64_t)t, hat);
            CU_ASSERT_EQUAL(hat[0], N);
            for (int b = 1; b <= t; b++) {
                int64_t prevb = b < t ? hatprev[b] : 0;
                CU_ASSERT(hat[b] >= prevb && hat[b] <= hatprev[b - 1]);
                int64_t bound = iabs(noisy[b] - S[b]);
                int64_t e2 = iabs(prevb - (b < t ? Sprev[b] : 0));
                int64_t e3 = iabs(hatprev[b - 1] - Sprev[b - 1]);
                if (e2 > bound)
                    bound = e2;
                if (e3 > bound)
                    bound = e3;
                violations += iabs(hat[b] - S[b]) > bound;
                clamps += hat[b] != noisy[b];
                checks++;
            }
            for (int b = 0; b <= T + 1; b++) {
                hatprev[b] = b <= t ? hat[b] : 0;
                Sprev[b] = S[b];
            }
        }
    }
    CU_ASSERT_EQUAL(violations, 0);
    CU_ASSERT(clamps > checks / 20);   /* the clamp is really exercised */
}

/* A deliberately wrong monotonization (clamping only from below) breaks
 * the sandwich on the same streams: the check above can fail. */
static void test_monotonize_check_can_fail(void)
{
    int64_t prev[4] = {10, 4, 0, 0}, noisy[4] = {0, 12, 7, 0}, out[4];
    dp_cumulative_monotonize(prev, noisy, 2, out);
    CU_ASSERT_EQUAL(out[1], 10);   /* capped by Ŝ_0 = n = 10, not 12 */
    CU_ASSERT_EQUAL(out[2], 4);    /* capped by Ŝ_1^{t-1} = 4, not 7 */
}

/* z_b^t of the ingest half against brute force. */
static void test_zb_statistics(void)
{
    const dp_synth_ops *ops = dp_synth_ops_find("cumulative");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ops);
    json_t *cfg = cfg_of("{\"horizon\":9,\"rho\":1,\"impute\":{\"policy\":\"fixed\",\"value\":1}}");
    dp_ingest_half *in;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(ops->ingest_create(&in, cfg, err, sizeof err), DP_OK);
    dp_key key;
    dptest_key(&key, 12);
    dp_drbg g;
    dp_drbg_init(&g, &key, "t", 1, 0, "test/zb");
    enum { N = 300 };
    int w[N] = {0};
    dp_stats st;
    dp_stats_init(&st, 1);
    char id[16];
    dp_reject_reason why;
    for (uint64_t t = 1; t <= 9; t++) {
        int64_t z[11] = {0};
        int64_t missing = 0;
        for (int i = 0; i < N; i++) {
            int x = (int)dp_drbg_uniform(&g, 2);
            if (t > 1 && dp_drbg_uniform(&g, 10) == 0) {
                x = 1;   /* missing → fixed value 1 */
                missing++;
            } else {
                snprintf(id, sizeof id, "i%d", i);
                dp_update u = tk_update(t, id, strlen(id), x);
                ops->ingest_update(in, &u, &why);
                CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
            }
            if (x)
                z[w[i] + 1]++;
            w[i] += x;
        }
        dp_update bad = tk_update(t, "i0", 2, 2);
        ops->ingest_update(in, &bad, &why);
        CU_ASSERT(why == DP_REJECT_OUT_OF_DOMAIN || why == DP_REJECT_DUPLICATE_REPORT);
        dp_stats_clear(&st, t);
        CU_ASSERT_EQUAL_FATAL(ops->ingest_close(in, t, &st), DP_OK);
        CU_ASSERT_EQUAL(st.scalars[0], N);
        CU_ASSERT_EQUAL(st.scalars[1], missing);
        for (uint64_t b = 1; b <= 10; b++)
            CU_ASSERT_EQUAL(dp_stats_get(&st, b), b <= t ? z[b] : 0);
    }
    dp_stats_free(&st);
    ops->ingest_destroy(in);
    json_decref(cfg);
}

static unsigned ceil_log2(uint64_t h)
{
    unsigned L = 0;
    while (((uint64_t)1 << L) < h)
        L++;
    return L;
}

/* Run n individuals with weight-dependent bits; return synthetic S_b^t
 * and true S_b^t at every step, plus spends. */
typedef struct cum_track {
    uint64_t n;
    int *w;   /* synthetic weights */
} cum_track;

static void cum_record(void *ctx, const dp_synth_record *r)
{
    cum_track *c = ctx;
    if (r->synthetic_id < c->n)
        c->w[r->synthetic_id] += (int)r->value.category;
}

static void run_exact(int T, const char *counter, double rho)
{
    /* ρ large → every counter draw is 0 except with probability < 1e-9
     * (all σ² <= 0.02 here); synthetic S_b^t must equal the truth at every
     * b, t, with n synthetic individuals.  Spends follow Cor. B.1 (tree)
     * or ρ_b ∝ T-b+1 (simple: worst-case variance H·σ²). */
    dp_key key;
    dptest_key(&key, 13);
    enum { N = 500 };
    int tree = strcmp(counter, "tree") == 0;
    char cfgtext[128];
    snprintf(cfgtext, sizeof cfgtext, "{\"horizon\":%d,\"rho\":%g,\"counter\":\"%s\"}", T, rho, counter);
    dp_synth *s = make(cfgtext, &key, NULL);
    tk_sink k;
    tk_sink_init(&k);
    cum_track tr = {N, calloc(N, sizeof(int))};
    k.on_record = cum_record;
    k.hook_ctx = &tr;
    dp_release_sink sink = tk_sink_of(&k);
    int *w = calloc(N, sizeof(int));
    double sumL3 = 0;
    for (int b = 1; b <= T; b++) {
        double L = ceil_log2((uint64_t)(T - b + 1));
        L = L > 1 ? L : 1;
        sumL3 += L * L * L;
    }
    char id[16], err[256];
    dp_reject_reason why;
    double spent = 0;
    for (int t = 1; t <= T; t++) {
        for (int i = 0; i < N; i++) {
            int x = ((i * 7 + t * 3) % 5) < (i % 4) ? 1 : 0;
            snprintf(id, sizeof id, "i%d", i);
            tk_report(s, (uint64_t)t, id, x, &why);
            w[i] += x;
        }
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &sink, err, sizeof err), DP_OK);
        CU_ASSERT_EQUAL(k.m_records, N);
        for (int b = 1; b <= t; b++) {
            int S = 0, Sh = 0;
            for (int i = 0; i < N; i++) {
                S += w[i] >= b;
                Sh += tr.w[i] >= b;
            }
            CU_ASSERT_EQUAL(Sh, S);
        }
        double L = ceil_log2((uint64_t)(T - t + 1));
        L = L > 1 ? L : 1;
        double rho_t = tree ? rho * L * L * L / sumL3                  /* Cor. B.1 */
                            : rho * (T - t + 1) / (T * (T + 1) / 2.0);
        CU_ASSERT_DOUBLE_EQUAL(k.b_spent_step, rho_t, 1e-9 * rho);
        spent += rho_t;
        CU_ASSERT_DOUBLE_EQUAL(k.b_spent_total, spent, 1e-9 * rho);
        CU_ASSERT(strncmp(k.b_mechanism, "cumulative/", 11) == 0 && strcmp(k.b_mechanism + 11, counter) == 0);
        CU_ASSERT_STRING_EQUAL(k.b_neighbors, "replace");
        CU_ASSERT_STRING_EQUAL(k.b_unit, "user-level over horizon T");
        /* The stated bound: a union bound over the T(T+1)/2 released counts
         * with the counters' largest actual variance (not Cor. B.1's
         * L = ceil(log2 H) form, which undercounts the tree's levels). */
        double vmax = 0;
        for (int b = 1; b <= T; b++) {
            double Lb = ceil_log2((uint64_t)(T - b + 1));
            Lb = Lb > 1 ? Lb : 1;
            double rb = tree ? rho * Lb * Lb * Lb / sumL3 : rho * (T - b + 1) / (T * (T + 1) / 2.0);
            dp_counter_config cc = {.kind = tree ? DP_COUNTER_TREE : DP_COUNTER_SIMPLE,
                                    .horizon = (uint64_t)(T - b + 1), .budget = {DP_PRIVACY_ZCDP, rb},
                                    .neighbor_entries = 2, .max_abs_change = 1};
            dp_noise_source ns = {&key, "s", 1, "probe"};
            dp_counter *c;
            CU_ASSERT_EQUAL_FATAL(dp_counter_create(&c, &cc, &ns, NULL, 0), DP_OK);
            for (uint64_t u = 1; u <= (uint64_t)(T - b + 1); u++)
                vmax = fmax(vmax, dp_counter_variance(c, u));
            dp_counter_destroy(c);
        }
        double alpha = sqrt(2 * vmax * log(T * (T + 1) / 0.05));
        CU_ASSERT_DOUBLE_EQUAL(tk_kv(k.b_acc, k.b_acc_keys, k.b_n_acc, "max_abs_error"), alpha, 1e-6 * alpha);
        CU_ASSERT_EQUAL(k.b_status, t == T ? DP_BUDGET_EXHAUSTED : DP_BUDGET_ACTIVE);
    }
    CU_ASSERT_DOUBLE_EQUAL(spent, rho, 1e-9 * rho);
    CU_ASSERT_TRUE(dp_synth_exhausted(s));
    CU_ASSERT_EQUAL(dp_synth_close_step(s, &sink, err, sizeof err), DP_EHORIZON);
    tk_report(s, T + 1, "i1", 1, &why);
    CU_ASSERT_EQUAL(why, DP_REJECT_EXHAUSTED);
    free(tr.w);
    free(w);
    tk_sink_free(&k);
    dp_synth_destroy(s);
}

static void test_exact_without_noise_and_budget_split(void)
{
    run_exact(4, "tree", 1800);
    run_exact(11, "simple", 4000);
}

static double sigma2_first_step(const char *cfg_text)
{
    dp_key key;
    dptest_key(&key, 14);
    dp_synth *s = make(cfg_text, &key, NULL);
    tk_sink k;
    tk_sink_init(&k);
    dp_release_sink sink = tk_sink_of(&k);
    dp_reject_reason why;
    tk_report(s, 1, "a", 1, &why);
    char err[256];
    CU_ASSERT_EQUAL(dp_synth_close_step(s, &sink, err, sizeof err), DP_OK);
    double v = tk_kv(k.b_noise, k.b_noise_keys, k.b_n_noise, "sigma2_max");
    tk_sink_free(&k);
    dp_synth_destroy(s);
    return v;
}

static void test_replace_doubles_variance(void)
{
    double rep = sigma2_first_step("{\"horizon\":12,\"rho\":0.01}");
    double add = sigma2_first_step("{\"horizon\":12,\"rho\":0.01,\"neighbors\":\"add_remove\",\"assume_public_n\":true}");
    CU_ASSERT(add > 1);
    CU_ASSERT_DOUBLE_EQUAL(rep / add, 2.0, 1e-4);
}

/* Non-tree kinds: ρ_b ∝ the counter's worst-case variance at unit budget.
 * simple(H): Var(t) = t·σ², max at H, so ρ_b ∝ T-b+1. */
static void test_other_counter_kinds(void)
{
    dp_key key;
    dptest_key(&key, 15);
    const int T = 10;
    const double rho = 2.0;
    dp_synth *s = make("{\"horizon\":10,\"rho\":2,\"counter\":\"simple\"}", &key, NULL);
    tk_sink k;
    tk_sink_init(&k);
    dp_release_sink sink = tk_sink_of(&k);
    char err[256];
    double total = 0;
    for (int t = 1; t <= T; t++) {
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &sink, err, sizeof err), DP_OK);
        double expect = rho * (T - t + 1) / (T * (T + 1) / 2.0);
        CU_ASSERT_DOUBLE_EQUAL(k.b_spent_step, expect, 1e-3 * expect);
        total += k.b_spent_step;
        CU_ASSERT_STRING_EQUAL(k.b_mechanism, "cumulative/simple");
    }
    CU_ASSERT_DOUBLE_EQUAL(total, rho, 1e-9);
    tk_sink_free(&k);
    dp_synth_destroy(s);

    /* Every other kind either runs to exhaustion spending exactly ρ, or is
     * refused at creation with a message (e.g. not yet built, or no zCDP). */
    const char *kinds[] = {"block", "honaker", "sqrt", "blt", "hybrid", "block_unbounded",
                           "sparse", "sparse_inhomogeneous"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        char cfg[128];
        snprintf(cfg, sizeof cfg, "{\"horizon\":10,\"rho\":2,\"counter\":\"%s\"}", kinds[i]);
        int rc;
        s = make(cfg, &key, &rc);
        if (rc != DP_OK) {
            printf("\n  counter %s: refused at create (rc %d)", kinds[i], rc);
            continue;
        }
        tk_sink_init(&k);
        sink = tk_sink_of(&k);
        int ok = 1;
        for (int t = 1; t <= T && ok; t++)
            ok = dp_synth_close_step(s, &sink, err, sizeof err) == DP_OK;
        CU_ASSERT_TRUE(ok);
        CU_ASSERT_DOUBLE_EQUAL(k.b_spent_total, rho, 1e-9);
        CU_ASSERT(tk_kv(k.b_acc, k.b_acc_keys, k.b_n_acc, "max_abs_error") > 0);
        printf("\n  counter %s: max_abs_error %.1f", kinds[i],
               tk_kv(k.b_acc, k.b_acc_keys, k.b_n_acc, "max_abs_error"));
        tk_sink_free(&k);
        dp_synth_destroy(s);
    }
    printf("\n");
}

static void test_config_errors(void)
{
    dp_key key;
    dptest_key(&key, 16);
    const char *bad[] = {
        "{\"horizon\":10,\"rho\":1,\"k\":3}",
        "{\"horizon\":10,\"rho\":1,\"categories\":3}",
        "{\"horizon\":10,\"rho\":1,\"counter\":\"quantum\"}",
        "{\"horizon\":10,\"rho\":1,\"counter\":{\"kind\":\"tree\",\"x\":1}}",
        "{\"horizon\":10,\"rho\":1,\"n_pad\":3}",
        "{\"horizon\":5000,\"rho\":1}",
        "{\"rho\":1}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc;
        dp_synth *s = make(bad[i], &key, &rc);
        CU_ASSERT_NOT_EQUAL(rc, DP_OK);
        CU_ASSERT_PTR_NULL(s);
    }
    int rc;
    dp_synth *s = make("{\"horizon\":10,\"rho\":1,\"categories\":2,\"counter\":{\"kind\":\"tree\"}}", &key, &rc);
    CU_ASSERT_EQUAL(rc, DP_OK);
    dp_synth_destroy(s);
}

static void run_panel(const char *cfg_text, int n, int T, int snap_step, int snap_after, dp_buf *out)
{
    dp_key key;
    dptest_key(&key, 17);
    json_t *cfg = cfg_of(cfg_text);
    dp_synth_env env = {&key, "s", 1};
    dp_synth *s = NULL;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, "cumulative", cfg, &env, err, sizeof err), DP_OK);
    tk_sink k;
    tk_sink_init(&k);
    dp_release_sink sink = tk_sink_of(&k);
    dp_reject_reason why;
    char id[24];
    for (int t = 1; t <= T; t++) {
        for (int i = 0; i < n; i++) {
            if (t > 1 && (i * 31 + t) % 13 == 0)
                continue;
            snprintf(id, sizeof id, "id-%d", i);
            tk_report(s, (uint64_t)t, id, (i * i + t * (i % 5)) % 3 == 0, &why);
            if (t == snap_step && i == snap_after) {
                dp_buf b;
                dp_buf_init(&b);
                CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(s, &b), DP_OK);
                dp_synth_destroy(s);
                s = NULL;
                CU_ASSERT_EQUAL_FATAL(dp_synth_restore(&s, "cumulative", cfg, &env, b.data, b.len, err, sizeof err),
                                      DP_OK);
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

static void test_snapshot_restore(void)
{
    const char *cfgs[] = {"{\"horizon\":9,\"rho\":0.5}", "{\"horizon\":9,\"rho\":0.5,\"counter\":\"simple\"}"};
    for (int c = 0; c < 2; c++) {
        dp_buf a, b, d;
        dp_buf_init(&a);
        dp_buf_init(&b);
        dp_buf_init(&d);
        run_panel(cfgs[c], 700, 9, 0, 0, &a);
        run_panel(cfgs[c], 700, 9, 6, 350, &b);
        run_panel(cfgs[c], 700, 9, 1, 10, &d);
        CU_ASSERT(a.len > 1000);
        CU_ASSERT(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
        CU_ASSERT(a.len == d.len && memcmp(a.data, d.data, a.len) == 0);
        dp_buf_free(&a);
        dp_buf_free(&b);
        dp_buf_free(&d);
    }
}

int main(void)
{
    static const dptest_case cases[] = {
        {"monotonization satisfies Lemma 4.2 on random streams", test_monotonize_lemma42},
        {"monotonization caps by the previous lower threshold", test_monotonize_check_can_fail},
        {"z_b statistics equal brute force (with imputation)", test_zb_statistics},
        {"exact without noise; Cor. B.1 budget split; exhaustion", test_exact_without_noise_and_budget_split},
        {"replace doubles the counters' variance", test_replace_doubles_variance},
        {"other counter kinds: variance-derived split", test_other_counter_kinds},
        {"config validation", test_config_errors},
        {"snapshot/restore byte-identical", test_snapshot_restore},
        {NULL, NULL},
    };
    return dptest_run("cumulative", cases);
}
