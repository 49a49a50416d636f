/* test_longitudinal_stat.c — statistical validation of `window` and
 * `cumulative` against seed 000's theorems, over many fixed keys.
 *
 * window, App. C.1 setup (n = 25 000, T = 12, k = 3, all-ones data,
 * ρ = 0.005), K keys, neighbors add_remove (the paper's calibration) and
 * replace:
 *   * Thm 3.2: the per-bin error e = p_s - (C_s + n_pad) has mean 0 and
 *     variance in [Var N_Z(σ²), σ² + ¼] at every step.  For each (step,
 *     bin), K·mean(e²)/v ~ χ²_K (Gaussian approximation); we reject when
 *     K·mean(e²)/(σ²+¼) exceeds the upper χ²_K quantile or
 *     K·mean(e²)/Var N_Z(σ²) is below the lower one, at α = 10^-3 split
 *     (Bonferroni) over both tails and all 80 (step, bin) cells.
 *   * eq. (5): max_{s,t} |e| <= the published bound (β = 0.05) in >= 95 %
 *     of runs: the number of successes must not be improbably low for
 *     p = 0.95 (one-sided binomial test at α = 10^-3).
 *   * A deliberately wrong σ² (the mechanism run at half the variance while
 *     the check uses the claimed σ²) must fail the variance check.
 * cumulative (tree, replace, same n, T, ρ; fixed Bernoulli(½) data):
 *   * mean error 0 in every cell whose monotonization constraints are far
 *     (>= 8 sd) from binding: |mean| <= z_{α/2m}·sqrt(Var/K) with the
 *     counter's analytic variance;
 *   * max error within the published Cor. B.1 bound in >= 1-β of runs
 *     (binomial test as above).
 * The release halves are driven directly with the exact statistics of the
 * data (the ingest half is tested elsewhere); one run per synthesizer goes
 * through the full bundle to show both paths agree byte for byte. */
#include "dptest.h"
#include "synth_testkit.h"

#include "core/counter.h"
#include "core/rational.h"
#include "core/sample.h"

#include <math.h>

enum { KEYS = 200, N = 25000, T = 12, K = 3, BINS = 8 };
static const double RHO = 0.005;

/* P[Bin(n, p) <= x] */
static double binom_cdf(int x, int n, double p)
{
    double s = 0;
    for (int j = 0; j <= x; j++)
        s += exp(lgamma(n + 1.0) - lgamma(j + 1.0) - lgamma(n - j + 1.0) + j * log(p) + (n - j) * log1p(-p));
    return s;
}

/* --- window --------------------------------------------------------------- */

typedef struct wtrack {
    uint64_t n;
    uint8_t pat[40000];
} wtrack;

static void wtrack_record(void *ctx, const dp_synth_record *r)
{
    wtrack *h = ctx;
    if (r->synthetic_id >= sizeof h->pat)
        return;
    if (r->value.kind == DP_PAYLOAD_ROW) {
        unsigned p = 0;
        for (size_t j = 0; j < r->value.row_len; j++)
            p = p * 2 + (unsigned)r->value.row[j];
        h->pat[r->synthetic_id] = (uint8_t)p;
        if (r->synthetic_id + 1 > h->n)
            h->n = r->synthetic_id + 1;
    } else {
        h->pat[r->synthetic_id] = (uint8_t)(((h->pat[r->synthetic_id] << 1) | (unsigned)r->value.category) & 7);
    }
}

/* Errors e[key][step k..T][bin] of one configuration. */
static void window_runs(const char *cfg_text, double (*err)[T - K + 1][BINS], double *bound_out,
                        double *sigma2_out, int *clamped_runs)
{
    json_error_t je;
    json_t *cfg = json_loads(cfg_text, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    const dp_synth_ops *ops = dp_synth_ops_find("window");
    static wtrack tr;
    *clamped_runs = 0;
    for (int key_i = 0; key_i < KEYS; key_i++) {
        dp_key key;
        dptest_key(&key, (uint8_t)key_i);
        dp_synth_env env = {&key, "s", 1};
        dp_release_half *rel;
        char e[256];
        CU_ASSERT_EQUAL_FATAL(ops->release_create(&rel, cfg, &env, e, sizeof e), DP_OK);
        tk_sink sk;
        tk_sink_init(&sk);
        memset(&tr, 0, sizeof tr);
        sk.on_record = wtrack_record;
        sk.hook_ctx = &tr;
        dp_release_sink sink = tk_sink_of(&sk);
        dp_stats st;
        dp_stats_init(&st, 1);
        int clamped = 0;
        for (int t = 1; t <= T; t++) {
            dp_stats_clear(&st, (uint64_t)t);
            st.scalars[0] = N;
            if (t >= K)
                dp_stats_add(&st, BINS - 1, N);   /* all-ones: every individual ends in 111 */
            dp_stats_finish(&st);
            CU_ASSERT_EQUAL_FATAL(ops->release_step(rel, (uint64_t)t, &st, &sink, e, sizeof e), DP_OK);
            clamped |= sk.m_clamped;
            if (t < K)
                continue;
            double npad = tk_kv(sk.m_debias, sk.m_debias_keys, sk.m_n_debias, "n_pad");
            long p[BINS] = {0};
            for (uint64_t i = 0; i < tr.n; i++)
                p[tr.pat[i]]++;
            for (int s = 0; s < BINS; s++)
                err[key_i][t - K][s] = (double)p[s] - ((s == BINS - 1 ? N : 0) + npad);
        }
        *bound_out = tk_kv(sk.b_acc, sk.b_acc_keys, sk.b_n_acc, "max_abs_error");
        *sigma2_out = tk_kv(sk.b_noise, sk.b_noise_keys, sk.b_n_noise, "sigma2");
        *clamped_runs += clamped;
        dp_stats_free(&st);
        tk_sink_free(&sk);
        ops->release_destroy(rel);
    }
    json_decref(cfg);
}

/* Variance check of Thm 3.2; returns the number of rejected cells. */
static int variance_rejections(double (*err)[T - K + 1][BINS], double sigma2, int verbose)
{
    dp_rational q;
    dp_rational_from_double_up(sigma2, &q);
    double vlo = dp_dgauss_variance(q), vhi = sigma2 + 0.25;
    const int cells = (T - K + 1) * BINS;
    const double alpha = 1e-3 / (2.0 * cells);
    const double chi_hi = dptest_chi2_isf(alpha, KEYS), chi_lo = dptest_chi2_isf(1 - alpha, KEYS);
    int rejected = 0;
    double worst_lo = INFINITY, worst_hi = 0;
    for (int t = 0; t <= T - K; t++)
        for (int s = 0; s < BINS; s++) {
            double ss = 0;
            for (int k = 0; k < KEYS; k++)
                ss += err[k][t][s] * err[k][t][s];
            if (ss / vhi > chi_hi || ss / vlo < chi_lo)
                rejected++;
            if (ss / KEYS < worst_lo)
                worst_lo = ss / KEYS;
            if (ss / KEYS > worst_hi)
                worst_hi = ss / KEYS;
        }
    if (verbose)
        printf("\n    sigma2 %.1f: per-cell mean e^2 in [%.1f, %.1f], accept band [%.1f, %.1f]; rejected %d/%d",
               sigma2, worst_lo, worst_hi, vlo * chi_lo / KEYS, vhi * chi_hi / KEYS, rejected, cells);
    return rejected;
}

static int max_error_successes(double (*err)[T - K + 1][BINS], double bound)
{
    int ok = 0;
    for (int k = 0; k < KEYS; k++) {
        double mx = 0;
        for (int t = 0; t <= T - K; t++)
            for (int s = 0; s < BINS; s++)
                if (fabs(err[k][t][s]) > mx)
                    mx = fabs(err[k][t][s]);
        ok += mx <= bound;
    }
    return ok;
}

static void window_check(const char *neighbors)
{
    static double err[KEYS][T - K + 1][BINS];
    char cfg[160];
    snprintf(cfg, sizeof cfg, "{\"horizon\":%d,\"k\":%d,\"rho\":%g,\"neighbors\":\"%s\",\"beta\":0.05}", T, K,
             RHO, neighbors);
    double bound, sigma2;
    int clamped;
    window_runs(cfg, err, &bound, &sigma2, &clamped);
    double expect_s2 = (T - K + 1) / (2 * RHO) * (strcmp(neighbors, "replace") == 0 ? 2 : 1);
    CU_ASSERT_DOUBLE_EQUAL(sigma2, expect_s2, 1e-4);
    /* mean 0 per cell (normal quantile, Bonferroni over cells) */
    const int cells = (T - K + 1) * BINS;
    double z = dptest_normal_isf(1e-3 / (2.0 * cells));
    int mean_bad = 0;
    for (int t = 0; t <= T - K; t++)
        for (int s = 0; s < BINS; s++) {
            double m = 0;
            for (int k = 0; k < KEYS; k++)
                m += err[k][t][s];
            m /= KEYS;
            mean_bad += fabs(m) > z * sqrt((sigma2 + 0.25) / KEYS);
        }
    CU_ASSERT_EQUAL(mean_bad, 0);
    CU_ASSERT_EQUAL(variance_rejections(err, sigma2, 1), 0);
    int ok = max_error_successes(err, bound);
    double pval = binom_cdf(ok, KEYS, 0.95);
    printf("\n    %s: max error <= eq.(5) bound %.1f in %d/%d runs (P[Bin<=x | 0.95] = %.3g); clamped runs %d",
           neighbors, bound, ok, KEYS, pval, clamped);
    CU_ASSERT(pval >= 1e-3);
}

static void test_window_add_remove(void) { window_check("add_remove"); }
static void test_window_replace(void) { window_check("replace"); }

/* The mechanism run with twice the budget has half the claimed variance:
 * the same check must reject it. */
static void test_window_wrong_sigma_rejected(void)
{
    static double err[KEYS][T - K + 1][BINS];
    char cfg[160];
    snprintf(cfg, sizeof cfg, "{\"horizon\":%d,\"k\":%d,\"rho\":%g,\"neighbors\":\"add_remove\"}", T, K, 2 * RHO);
    double bound, sigma2;
    int clamped;
    window_runs(cfg, err, &bound, &sigma2, &clamped);
    double claimed = (T - K + 1) / (2 * RHO);
    CU_ASSERT_DOUBLE_EQUAL(sigma2 * 2, claimed, 1e-3);
    int rej = variance_rejections(err, claimed, 1);
    printf("\n");
    CU_ASSERT(rej > 0);
}

/* The direct release path equals the bundle fed real reports. */
static void test_window_bundle_agrees(void)
{
    dp_key key;
    dptest_key(&key, 0);
    json_error_t je;
    json_t *cfg = json_loads("{\"horizon\":12,\"k\":3,\"rho\":0.005}", 0, &je);
    dp_synth_env env = {&key, "s", 1};
    dp_synth *s;
    char e[256], id[16];
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, "window", cfg, &env, e, sizeof e), DP_OK);
    const dp_synth_ops *ops = dp_synth_ops_find("window");
    dp_release_half *rel;
    CU_ASSERT_EQUAL_FATAL(ops->release_create(&rel, cfg, &env, e, sizeof e), DP_OK);
    tk_sink a, b;
    tk_sink_init(&a);
    tk_sink_init(&b);
    dp_release_sink sa = tk_sink_of(&a), sb = tk_sink_of(&b);
    dp_stats st;
    dp_stats_init(&st, 1);
    dp_reject_reason why;
    for (int t = 1; t <= T; t++) {
        for (int i = 0; i < N; i++) {
            snprintf(id, sizeof id, "%d", i);
            tk_report(s, (uint64_t)t, id, 1, &why);
        }
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &sa, e, sizeof e), DP_OK);
        dp_stats_clear(&st, (uint64_t)t);
        st.scalars[0] = N;
        if (t >= K)
            dp_stats_add(&st, BINS - 1, N);
        dp_stats_finish(&st);
        CU_ASSERT_EQUAL_FATAL(ops->release_step(rel, (uint64_t)t, &st, &sb, e, sizeof e), DP_OK);
    }
    CU_ASSERT(a.out.len == b.out.len && memcmp(a.out.data, b.out.data, a.out.len) == 0);
    dp_stats_free(&st);
    tk_sink_free(&a);
    tk_sink_free(&b);
    ops->release_destroy(rel);
    dp_synth_destroy(s);
    json_decref(cfg);
}

/* --- cumulative ------------------------------------------------------------ */

typedef struct ctrack {
    uint8_t w[N];
} ctrack;

static void ctrack_record(void *ctx, const dp_synth_record *r)
{
    ctrack *c = ctx;
    if (r->synthetic_id < N)
        c->w[r->synthetic_id] = (uint8_t)(c->w[r->synthetic_id] + r->value.category);
}

static unsigned ceil_log2(uint64_t h)
{
    unsigned L = 0;
    while (((uint64_t)1 << L) < h)
        L++;
    return L;
}

static void test_cumulative_unbiased_and_bounded(void)
{
    /* Fixed data: Bernoulli(½) bits from a data-only generator. */
    static uint8_t x[T + 1][N];
    static int64_t S[T + 1][T + 2], z[T + 1][T + 2];
    dp_key dk;
    dptest_key(&dk, 250);
    dp_drbg g;
    dp_drbg_init(&g, &dk, "data", 4, 0, "test/cumulative-data");
    static uint8_t w[N];
    memset(w, 0, sizeof w);
    for (int t = 1; t <= T; t++) {
        for (int i = 0; i < N; i++) {
            x[t][i] = (uint8_t)dp_drbg_bit(&g);
            if (x[t][i])
                z[t][w[i] + 1]++;
            w[i] = (uint8_t)(w[i] + x[t][i]);
        }
        for (int b = 0; b <= T + 1; b++) {
            S[t][b] = 0;
            for (int i = 0; i < N; i++)
                S[t][b] += w[i] >= b;
        }
    }
    /* Analytic variance of every counter output (Cor. B.1 split, replace). */
    static double var[T + 1][T + 1];
    double sumL3 = 0, vmax = 0;
    for (int b = 1; b <= T; b++) {
        double L = ceil_log2((uint64_t)(T - b + 1));
        L = L > 1 ? L : 1;
        sumL3 += L * L * L;
    }
    dp_key key0;
    dptest_key(&key0, 0);
    for (int b = 1; b <= T; b++) {
        double L = ceil_log2((uint64_t)(T - b + 1));
        L = L > 1 ? L : 1;
        dp_counter_config cc = {.kind = DP_COUNTER_TREE, .horizon = (uint64_t)(T - b + 1),
                                .budget = {DP_PRIVACY_ZCDP, RHO * L * L * L / sumL3},
                                .neighbor_entries = 2, .max_abs_change = 1};
        dp_noise_source ns = {&key0, "s", 1, "probe"};
        dp_counter *c;
        CU_ASSERT_EQUAL_FATAL(dp_counter_create(&c, &cc, &ns, NULL, 0), DP_OK);
        for (int t = b; t <= T; t++) {
            var[b][t] = dp_counter_variance(c, (uint64_t)(t - b + 1));
            if (var[b][t] > vmax)
                vmax = var[b][t];
        }
        dp_counter_destroy(c);
    }
    /* Cells far from every monotonization constraint. */
    int interior[T + 1][T + 1];
    int m = 0;
    double sd = sqrt(vmax);
    for (int t = 1; t <= T; t++)
        for (int b = 1; b <= t; b++) {
            int64_t prev_b = t > 1 ? S[t - 1][b] : 0, prev_b1 = t > 1 ? S[t - 1][b - 1] : N;
            interior[b][t] = (S[t][b] - prev_b) > 8 * sd && (prev_b1 - S[t][b]) > 8 * sd;
            m += interior[b][t];
        }
    CU_ASSERT(m >= 10);

    json_error_t je;
    json_t *cfg = json_loads("{\"horizon\":12,\"rho\":0.005,\"beta\":0.05}", 0, &je);
    const dp_synth_ops *ops = dp_synth_ops_find("cumulative");
    static double sum_e[T + 1][T + 1];
    memset(sum_e, 0, sizeof sum_e);
    static ctrack tr;
    int ok = 0;
    double bound = 0;
    for (int key_i = 0; key_i < KEYS; key_i++) {
        dp_key key;
        dptest_key(&key, (uint8_t)key_i);
        dp_synth_env env = {&key, "s", 1};
        dp_release_half *rel;
        char e[256];
        CU_ASSERT_EQUAL_FATAL(ops->release_create(&rel, cfg, &env, e, sizeof e), DP_OK);
        tk_sink sk;
        tk_sink_init(&sk);
        memset(&tr, 0, sizeof tr);
        sk.on_record = ctrack_record;
        sk.hook_ctx = &tr;
        dp_release_sink sink = tk_sink_of(&sk);
        dp_stats st;
        dp_stats_init(&st, 1);
        double mx = 0;
        for (int t = 1; t <= T; t++) {
            dp_stats_clear(&st, (uint64_t)t);
            st.scalars[0] = N;
            for (int b = 1; b <= t; b++)
                dp_stats_add(&st, (uint64_t)b, z[t][b]);
            dp_stats_finish(&st);
            CU_ASSERT_EQUAL_FATAL(ops->release_step(rel, (uint64_t)t, &st, &sink, e, sizeof e), DP_OK);
            int64_t Sh[T + 2] = {0};
            for (int i = 0; i < N; i++)
                for (int b = 1; b <= tr.w[i]; b++)
                    Sh[b]++;
            for (int b = 1; b <= t; b++) {
                double err = (double)(Sh[b] - S[t][b]);
                sum_e[b][t] += err;
                if (fabs(err) > mx)
                    mx = fabs(err);
            }
        }
        bound = tk_kv(sk.b_acc, sk.b_acc_keys, sk.b_n_acc, "max_abs_error");
        ok += mx <= bound;
        dp_stats_free(&st);
        tk_sink_free(&sk);
        ops->release_destroy(rel);
    }
    double zq = dptest_normal_isf(1e-3 / (2.0 * m));
    int bad = 0;
    double worst = 0;
    for (int t = 1; t <= T; t++)
        for (int b = 1; b <= t; b++)
            if (interior[b][t]) {
                double mean = sum_e[b][t] / KEYS, tol = zq * sqrt(var[b][t] / KEYS);
                bad += fabs(mean) > tol;
                if (fabs(mean) / tol > worst)
                    worst = fabs(mean) / tol;
            }
    CU_ASSERT_EQUAL(bad, 0);
    double pval = binom_cdf(ok, KEYS, 0.95);
    printf("\n    cumulative: %d interior cells, worst |mean|/tol %.2f; max error <= Cor. B.1 bound %.1f in %d/%d runs"
           " (P = %.3g)\n", m, worst, bound, ok, KEYS, pval);
    CU_ASSERT(pval >= 1e-3);
    json_decref(cfg);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"window App. C.1, add_remove: Thm 3.2 variance + eq. (5)", test_window_add_remove},
        {"window App. C.1, replace: Thm 3.2 variance + eq. (5)", test_window_replace},
        {"window: half the claimed sigma2 is rejected", test_window_wrong_sigma_rejected},
        {"window: release path equals the bundle", test_window_bundle_agrees},
        {"cumulative: unbiased interior cells, Cor. B.1 bound", test_cumulative_unbiased_and_bounded},
        {NULL, NULL},
    };
    return dptest_run("longitudinal statistics", cases);
}
