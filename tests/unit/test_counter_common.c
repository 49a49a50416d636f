/* test_counter_common.c — generic checks over EVERY counter kind of
 * docs/privacy.md §2, in both privacy models: the analytic error variance
 * against the empirical one over many keys, snapshot/restore continuity,
 * fail-closed horizons, unbounded operation, and config validation.
 *
 * Statistical tolerance.  For a kind at step t, e_i = out_t − Σ_{s≤t} x_s
 * over n = 2000 independent keys are iid with mean 0 (symmetric noise) and
 * variance v (dp_counter_variance).  m2 = (1/n)Σ e_i² has E m2 = v and
 * Var m2 = (μ4 − v²)/n exactly.  For the linear kinds e is a weighted sum
 * of independent symmetric draws (plus a rounding residue for the kinds
 * that round), and excess kurtosis of such a sum is at most the largest
 * summand's: κ4(Σ) = Σ γ_i v_i² ≤ γ_max (Σ v_i)².  Discrete Laplace with
 * scale b is the difference of two geometric variables, with excess
 * kurtosis 3 + (1−p)²/(2p), p = e^{−1/b}, decreasing in b; at the budgets
 * used here (ε = 1, ρ = 1/2) every kind's noise has b ≥ 1 or is a
 * discrete Gaussian with σ² ≥ 1 (excess kurtosis ≈ 0), so γ_max =
 * 3 + (1−e^{−1})²/(2e^{−1}) ≈ 3.54 and μ4 ≤ (3 + γ_max)v².  The standard
 * error used is the larger of that bound and the plug-in (m4 − m2²)/n (the
 * plug-in covers the non-linear sparse kinds, whose kurtosis has no such
 * bound).  Each check is |m2 − v| ≤ z·se (one-sided m2 ≤ v + z·se where the
 * variance is only a bound), with z the two-sided normal quantile at
 * p = 1e-6 per check; there are 10 kinds × 2 models × (10 steps × 2 checks
 * (variance, mean) + 9 increments between the check steps, against
 * dp_counter_variance_between: exact for simple, a bound otherwise) = 580
 * checks, a Bonferroni family error ≤ 6e-4.  The
 * mean check is |m1| ≤ z·sqrt(v/n).  The keys are fixed, so results are
 * reproducible; test_counter_tree_family shows the same check rejects a
 * deliberately mis-calibrated counter. */
#include "dptest.h"

#include "core/counter.h"
#include "core/dp_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T_STAT   256
#define N_KEYS   2000
#define EPS      1.0
#define RHO      0.5
#define P_CHECK  1e-6

static const uint64_t CHECK_T[] = {1, 2, 3, 64, 127, 128, 129, 200, 255, 256};
#define N_CHECK_T (sizeof CHECK_T / sizeof CHECK_T[0])

static const dp_privacy_model MODELS[2] = {DP_PRIVACY_PURE, DP_PRIVACY_ZCDP};

static void key_for(dp_key *key, uint32_t i)
{
    dptest_key(key, 0);
    key->bytes[28] ^= (uint8_t)i;
    key->bytes[29] ^= (uint8_t)(i >> 8);
    key->bytes[30] ^= (uint8_t)(i >> 16);
    key->bytes[31] ^= 0xa5;
}

/* Varied input streams, including negative entries and sparse ones. */
static int64_t input_for(uint32_t i, uint64_t t)
{
    switch (i % 4) {
    case 0:  return 1;
    case 1:  return (t & 1) ? 3 : -2;
    case 2:  return (int64_t)((t * 7 + i) % 11) - 5;
    default: return t % 17 == 0 ? 1 : (t % 29 == 0 ? -1 : 0);
    }
}

static dp_counter_config config_for(dp_counter_kind kind, dp_privacy_model m, uint64_t horizon)
{
    dp_counter_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = kind;
    cfg.horizon = horizon;
    cfg.budget.model = m;
    cfg.budget.value = m == DP_PRIVACY_PURE ? EPS : RHO;
    return cfg;
}

/* DP_OK; 1 if the kind cannot use this model (skip); -1 otherwise (fail). */
static int make(dp_counter **c, dp_counter_kind kind, dp_privacy_model m, uint64_t horizon,
                const dp_key *key, const char *label)
{
    dp_counter_config cfg = config_for(kind, m, horizon);
    dp_noise_source ns = {key, "common-stream", 13, label};
    char err[256] = "";
    int rc = dp_counter_create(c, &cfg, &ns, err, sizeof err);
    if (rc == DP_OK)
        return DP_OK;
    if (strstr(err, "cannot be calibrated"))
        return 1;
    fprintf(stderr, "\n  create %s/%s failed: %s\n", dp_counter_kind_name(kind),
            m == DP_PRIVACY_PURE ? "eps" : "rho", err);
    return -1;
}

static double gamma_max(void)
{
    double p = exp(-1.0);
    return 3.0 + (1.0 - p) * (1.0 - p) / (2.0 * p);
}

/* --- empirical vs analytic variance ----------------------------------- */

/* Returns 1 if the kind supports the model (and was checked), else 0. */
static int variance_for(dp_counter_kind kind, dp_privacy_model m)
{
    double s1[N_CHECK_T] = {0}, s2[N_CHECK_T] = {0}, s4[N_CHECK_T] = {0}, v[N_CHECK_T];
    /* increments e_{t_j} − e_{t_{j−1}} against dp_counter_variance_between */
    double d2[N_CHECK_T] = {0}, d4[N_CHECK_T] = {0}, vb[N_CHECK_T] = {0};
    int exact = 1, exact_between = 1;
    for (uint32_t i = 0; i < N_KEYS; i++) {
        dp_key key;
        key_for(&key, i);
        dp_counter *c;
        int rc = make(&c, kind, m, T_STAT, &key, "var");
        if (rc == 1) {
            printf("\n  %-21s %s: model not supported by the kind (skipped)", dp_counter_kind_name(kind),
                   m == DP_PRIVACY_PURE ? "eps" : "rho");
            return 0;
        }
        if (rc != DP_OK) {
            CU_FAIL("counter create failed (kind not built?)");
            return 1;
        }
        if (i == 0) {
            for (size_t j = 0; j < N_CHECK_T; j++) {
                v[j] = dp_counter_variance(c, CHECK_T[j]);
                vb[j] = j ? dp_counter_variance_between(c, CHECK_T[j - 1], CHECK_T[j]) : v[0];
            }
            exact = dp_counter_variance_is_exact(c);
            exact_between = dp_counter_variance_between_is_exact(c);
        }
        int64_t prefix = 0;
        double e_prev = 0;
        size_t j = 0;
        for (uint64_t t = 1; t <= T_STAT; t++) {
            int64_t x = input_for(i, t), out;
            prefix += x;
            if (dp_counter_add(c, x, &out) != DP_OK) {
                CU_FAIL("dp_counter_add failed inside the horizon");
                dp_counter_destroy(c);
                return 1;
            }
            if (j < N_CHECK_T && CHECK_T[j] == t) {
                double e = (double)(out - prefix);
                s1[j] += e;
                s2[j] += e * e;
                s4[j] += e * e * e * e;
                d2[j] += (e - e_prev) * (e - e_prev);
                d4[j] += (e - e_prev) * (e - e_prev) * (e - e_prev) * (e - e_prev);
                e_prev = e;
                j++;
            }
        }
        dp_counter_destroy(c);
    }
    double z = dptest_normal_isf(P_CHECK / 2.0), g = gamma_max(), n = N_KEYS;
    printf("\n  %-21s %s %s emp/analytic:", dp_counter_kind_name(kind),
           m == DP_PRIVACY_PURE ? "eps" : "rho", exact ? "exact" : "bound");
    for (size_t j = 0; j < N_CHECK_T; j++) {
        double m1 = s1[j] / n, m2 = s2[j] / n, m4 = s4[j] / n;
        double se = sqrt(fmax((2.0 + g) * v[j] * v[j], m4 - m2 * m2) / n);
        printf(" t%llu=%.3f", (unsigned long long)CHECK_T[j], m2 / v[j]);
        CU_ASSERT(isfinite(v[j]) && v[j] > 0);
        if (exact) {
            if (!(fabs(m2 - v[j]) <= z * se))
                printf(" <-- |m2-v|=%.4g > %.4g", fabs(m2 - v[j]), z * se);
            CU_ASSERT(fabs(m2 - v[j]) <= z * se);
            CU_ASSERT(fabs(m1) <= z * sqrt(v[j] / n));
        } else {
            if (!(m2 <= v[j] + z * se))
                printf(" <-- m2=%.4g > bound %.4g + %.4g", m2, v[j], z * se);
            CU_ASSERT(m2 <= v[j] + z * se);
        }
    }
    printf("\n  %-21s %s increments (%s):", "", m == DP_PRIVACY_PURE ? "eps" : "rho", exact_between ? "exact" : "bound");
    for (size_t j = 1; j < N_CHECK_T; j++) {
        double m2 = d2[j] / n, m4 = d4[j] / n;
        double se = sqrt(fmax((2.0 + g) * vb[j] * vb[j], m4 - m2 * m2) / n);
        printf(" %.3f", m2 / vb[j]);
        CU_ASSERT(isfinite(vb[j]) && vb[j] > 0);
        int ok = exact_between ? fabs(m2 - vb[j]) <= z * se : m2 <= vb[j] + z * se;
        if (!ok)
            printf(" <-- m2=%.4g vs %.4g ± %.4g", m2, vb[j], z * se);
        CU_ASSERT(ok);
    }
    return 1;
}

static void test_variance_all_kinds(void)
{
    for (int k = 0; k < DP_COUNTER_KIND_COUNT; k++) {
        int supported = 0;
        for (int m = 0; m < 2; m++)
            supported += variance_for((dp_counter_kind)k, MODELS[m]);
        /* Every kind must work in at least one model (a placeholder
         * supports none and fails here). */
        if (!supported)
            printf("\n  %-21s supports no privacy model: NOT BUILT", dp_counter_kind_name((dp_counter_kind)k));
        CU_ASSERT(supported >= 1);
    }
    printf("\n");
}

/* --- snapshot / restore ------------------------------------------------ */

static void snapshot_for(dp_counter_kind kind, dp_privacy_model m)
{
    static const uint64_t CUTS[] = {0, 1, 37, 128, 129, 255};
    const uint64_t T = 256;
    int64_t ref[256];
    dp_key key;
    key_for(&key, 4242);
    dp_counter *c;
    int rc = make(&c, kind, m, T, &key, "snap");
    if (rc == 1)
        return;
    if (rc != DP_OK) {
        CU_FAIL("counter create failed (kind not built?)");
        return;
    }
    for (uint64_t t = 1; t <= T; t++)
        CU_ASSERT_EQUAL_FATAL(dp_counter_add(c, input_for(7, t), &ref[t - 1]), DP_OK);
    dp_counter_destroy(c);

    for (size_t k = 0; k < sizeof CUTS / sizeof CUTS[0]; k++) {
        uint64_t cut = CUTS[k];
        CU_ASSERT_EQUAL_FATAL(make(&c, kind, m, T, &key, "snap"), DP_OK);
        int64_t out;
        for (uint64_t t = 1; t <= cut; t++)
            CU_ASSERT_EQUAL_FATAL(dp_counter_add(c, input_for(7, t), &out), DP_OK);
        dp_buf b, b2;
        dp_buf_init(&b);
        dp_buf_init(&b2);
        CU_ASSERT_EQUAL_FATAL(dp_counter_snapshot(c, &b), DP_OK);
        dp_counter_destroy(c);
        char err[256] = "";
        dp_counter *r = NULL;
        rc = dp_counter_restore(&r, b.data, b.len, &key, err, sizeof err);
        if (rc != DP_OK)
            fprintf(stderr, "\n  restore %s failed: %s\n", dp_counter_kind_name(kind), err);
        CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
        CU_ASSERT_EQUAL(dp_counter_steps(r), cut);
        /* A restored counter snapshots to the same bytes. */
        CU_ASSERT_EQUAL(dp_counter_snapshot(r, &b2), DP_OK);
        CU_ASSERT(b.len == b2.len && memcmp(b.data, b2.data, b.len) == 0);
        int same = 1;
        for (uint64_t t = cut + 1; t <= T; t++) {
            CU_ASSERT_EQUAL_FATAL(dp_counter_add(r, input_for(7, t), &out), DP_OK);
            same &= out == ref[t - 1];
        }
        CU_ASSERT(same);
        /* A truncated snapshot is refused, not misread. */
        dp_counter *bad = NULL;
        CU_ASSERT_NOT_EQUAL(dp_counter_restore(&bad, b.data, b.len - 1, &key, err, sizeof err), DP_OK);
        CU_ASSERT_PTR_NULL(bad);
        dp_counter_destroy(r);
        dp_buf_free(&b);
        dp_buf_free(&b2);
    }
}

static void test_snapshot_all_kinds(void)
{
    for (int k = 0; k < DP_COUNTER_KIND_COUNT; k++)
        for (int m = 0; m < 2; m++)
            snapshot_for((dp_counter_kind)k, MODELS[m]);
}

/* --- horizons ----------------------------------------------------------- */

/* A kind is bounded iff create refuses horizon 0. */
static int is_bounded(dp_counter_kind kind, const dp_key *key)
{
    dp_counter *c;
    for (int m = 0; m < 2; m++) {
        dp_counter_config cfg = config_for(kind, MODELS[m], 0);
        dp_noise_source ns = {key, "", 0, "b"};
        char err[256] = "";
        int rc = dp_counter_create(&c, &cfg, &ns, err, sizeof err);
        if (rc == DP_OK) {
            dp_counter_destroy(c);
            return 0;
        }
        if (strstr(err, "horizon"))
            return 1;
    }
    return -1;   /* neither model works: not built */
}

static void test_bounded_horizon_fails_closed(void)
{
    dp_key key;
    key_for(&key, 9);
    int n_bounded = 0;
    for (int k = 0; k < DP_COUNTER_KIND_COUNT; k++) {
        int b = is_bounded((dp_counter_kind)k, &key);
        CU_ASSERT(b >= 0);
        if (b != 1)
            continue;
        n_bounded++;
        for (int m = 0; m < 2; m++) {
            dp_counter *c;
            int rc = make(&c, (dp_counter_kind)k, MODELS[m], 16, &key, "h");
            if (rc == 1)
                continue;
            CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
            int64_t out = 0;
            for (uint64_t t = 1; t <= 16; t++)
                CU_ASSERT_EQUAL_FATAL(dp_counter_add(c, input_for(2, t), &out), DP_OK);
            dp_buf b1, b2;
            dp_buf_init(&b1);
            dp_buf_init(&b2);
            CU_ASSERT_EQUAL(dp_counter_snapshot(c, &b1), DP_OK);
            for (int rep = 0; rep < 3; rep++) {
                int64_t o = 12345;
                CU_ASSERT_EQUAL(dp_counter_add(c, 1, &o), DP_EHORIZON);
                CU_ASSERT_EQUAL(o, 12345);           /* nothing released */
            }
            CU_ASSERT_EQUAL(dp_counter_steps(c), 16);
            CU_ASSERT_EQUAL(dp_counter_snapshot(c, &b2), DP_OK);
            CU_ASSERT(b1.len == b2.len && memcmp(b1.data, b2.data, b1.len) == 0);
            CU_ASSERT(isnan(dp_counter_variance(c, 17)));
            dp_buf_free(&b1);
            dp_buf_free(&b2);
            dp_counter_destroy(c);
        }
    }
    /* tree, block, honaker at least (bounded by definition). */
    CU_ASSERT(n_bounded >= 3);
}

static void test_unbounded_kinds_run_long(void)
{
    const uint64_t STEPS = 100000 + 7;
    dp_key key;
    key_for(&key, 10);
    int n_unbounded = 0;
    for (int k = 0; k < DP_COUNTER_KIND_COUNT; k++) {
        if (is_bounded((dp_counter_kind)k, &key) != 0)
            continue;
        n_unbounded++;
        for (int m = 0; m < 2; m++) {
            dp_counter *c;
            int rc = make(&c, (dp_counter_kind)k, MODELS[m], 0, &key, "long");
            if (rc == 1)
                continue;
            CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
            int64_t prefix = 0, out = 0;
            int ok = 1;
            for (uint64_t t = 1; t <= STEPS; t++) {
                int64_t x = input_for(1, t);
                prefix += x;
                ok &= dp_counter_add(c, x, &out) == DP_OK;
            }
            CU_ASSERT(ok);
            CU_ASSERT_EQUAL(dp_counter_steps(c), STEPS);
            double v = dp_counter_variance(c, STEPS);
            CU_ASSERT(isfinite(v) && v > 0);
            /* One draw from a distribution with variance v: beyond 12 sd
             * has probability < e^{-12·√2} ≈ 4e-8 for Laplace-type tails. */
            CU_ASSERT(fabs((double)(out - prefix)) <= 12.0 * sqrt(v));
            dp_counter_destroy(c);
        }
    }
    /* simple, block_unbounded, hybrid at least. */
    CU_ASSERT(n_unbounded >= 3);
}

/* --- config validation ------------------------------------------------ */

static void expect_reject(dp_counter_config cfg, const dp_key *key, const char *what)
{
    dp_counter *c = NULL;
    dp_noise_source ns = {key, "", 0, "bad"};
    char err[256] = "";
    int rc = dp_counter_create(&c, &cfg, &ns, err, sizeof err);
    if (rc == DP_OK) {
        fprintf(stderr, "\n  %s: %s accepted\n", dp_counter_kind_name(cfg.kind), what);
        dp_counter_destroy(c);
    }
    CU_ASSERT_NOT_EQUAL(rc, DP_OK);
    CU_ASSERT(strlen(err) > 10);
}

static void test_create_rejects_bad_configs(void)
{
    dp_key key;
    key_for(&key, 11);
    for (int k = 0; k < DP_COUNTER_KIND_COUNT; k++) {
        dp_counter_config cfg = config_for((dp_counter_kind)k, DP_PRIVACY_PURE, 64);
        cfg.budget.value = 0.0;
        expect_reject(cfg, &key, "zero budget");
        cfg.budget.value = -1.0;
        expect_reject(cfg, &key, "negative budget");
        cfg.budget.value = NAN;
        expect_reject(cfg, &key, "NaN budget");
        cfg = config_for((dp_counter_kind)k, DP_PRIVACY_ZCDP, 64);
        cfg.budget.value = INFINITY;
        expect_reject(cfg, &key, "infinite budget");
        cfg = config_for((dp_counter_kind)k, DP_PRIVACY_PURE, 64);
        cfg.neighbor_entries = 3;
        expect_reject(cfg, &key, "neighbor_entries 3");
        cfg = config_for((dp_counter_kind)k, DP_PRIVACY_PURE, 64);
        cfg.budget.model = (dp_privacy_model)7;
        expect_reject(cfg, &key, "unknown model");
        if (is_bounded((dp_counter_kind)k, &key) == 1) {
            cfg = config_for((dp_counter_kind)k, DP_PRIVACY_ZCDP, 0);
            expect_reject(cfg, &key, "no horizon");
        }
    }
    dp_counter_config cfg = config_for((dp_counter_kind)99, DP_PRIVACY_PURE, 64);
    expect_reject(cfg, &key, "unknown kind");
    cfg = config_for(DP_COUNTER_BLOCK, DP_PRIVACY_PURE, 64);
    cfg.block = 65;
    expect_reject(cfg, &key, "block larger than the horizon");
    /* No key. */
    dp_counter *c = NULL;
    dp_noise_source ns = {NULL, "", 0, "x"};
    char err[256] = "";
    cfg = config_for(DP_COUNTER_TREE, DP_PRIVACY_PURE, 64);
    CU_ASSERT_NOT_EQUAL(dp_counter_create(&c, &cfg, &ns, err, sizeof err), DP_OK);
    CU_ASSERT(strlen(err) > 0);
}

static const dptest_case CASES[] = {
    {"empirical variance matches the analytic variance (all kinds, eps and rho)", test_variance_all_kinds},
    {"snapshot, restore, continue = uninterrupted run (all kinds)", test_snapshot_all_kinds},
    {"bounded kinds fail closed past the horizon, state unchanged", test_bounded_horizon_fails_closed},
    {"unbounded kinds run past 1e5 steps", test_unbounded_kinds_run_long},
    {"create rejects bad configurations with a message", test_create_rejects_bad_configs},
    {NULL, NULL},
};

int main(void) { return dptest_run("counter_common", CASES); }
