/* test_exp_mech.c — the exact exponential mechanism (core/exp_mech.h):
 * selections follow exp(ε·U/(2ΔU)) exactly (chi-square goodness of fit at
 * a threshold from the χ² quantile), and the same test rejects two wrong
 * samplers: acceptance probabilities rounded like a low-precision float,
 * and the scale missing its factor 2 — so it can fail. */
#include "dptest.h"

#include "core/dp_error.h"
#include "core/exp_mech.h"
#include "core/sample.h"

#include <math.h>

#define N_DRAWS 200000
#define N_CAND 6
#define P_FALSE_ALARM 1e-6

static const int64_t UTIL[N_CAND] = {0, 1 << 16, 3 << 16, (5 << 16) + 7, -(1 << 16), 3 << 16};

typedef int (*sampler_fn)(const dp_exp_mech *m, dp_drbg *g, const int64_t *u, size_t n, size_t *out);

/* Wrong on purpose: the acceptance probability exp(-γ) computed in floating
 * point and rounded to 3 bits, as a careless float implementation would. */
static int coarse_float_sampler(const dp_exp_mech *m, dp_drbg *g, const int64_t *u, size_t n, size_t *out)
{
    int64_t umax = u[0];
    for (size_t i = 1; i < n; i++)
        umax = u[i] > umax ? u[i] : umax;
    for (;;) {
        size_t i = (size_t)dp_drbg_uniform(g, n);
        double p = exp(-m->epsilon * (double)(umax - u[i]) / (2.0 * (double)m->delta_u));
        uint64_t num = (uint64_t)floor(p * 8 + 0.5);
        int b = 0;
        dp_sample_bernoulli(g, num, 8, &b);
        if (b) {
            *out = i;
            return DP_OK;
        }
    }
}

/* Wrong on purpose: the exponent without its factor 1/2 (as exp(ε·u/Δu)). */
static int double_scale_sampler(const dp_exp_mech *m, dp_drbg *g, const int64_t *u, size_t n, size_t *out)
{
    dp_exp_mech twice = *m;
    twice.eps_num *= 2;
    return dp_exp_mech_select(&twice, g, u, n, out);
}

static double chi2_of(sampler_fn f, const dp_exp_mech *m, uint8_t key_variant)
{
    dp_key key;
    dptest_key(&key, key_variant);
    dp_drbg g;
    dp_drbg_init(&g, &key, "s", 1, 1, "test/exp_mech");
    uint64_t hits[N_CAND] = {0};
    for (int d = 0; d < N_DRAWS; d++) {
        size_t i = N_CAND;
        CU_ASSERT_EQUAL_FATAL(f(m, &g, UTIL, N_CAND, &i), DP_OK);
        CU_ASSERT_FATAL(i < N_CAND);
        hits[i]++;
    }
    double p[N_CAND], x2 = 0;
    CU_ASSERT_EQUAL_FATAL(dp_exp_mech_probabilities(m, UTIL, N_CAND, p), DP_OK);
    for (int i = 0; i < N_CAND; i++) {
        double e = p[i] * N_DRAWS;
        x2 += (hits[i] - e) * (hits[i] - e) / e;
    }
    return x2;
}

static void test_exact_law(void)
{
    dp_exp_mech m;
    CU_ASSERT_EQUAL_FATAL(dp_exp_mech_prepare(&m, 1.0, 1 << 16, NULL, 0), DP_OK);
    double limit = dptest_chi2_isf(P_FALSE_ALARM, N_CAND - 1);
    for (uint8_t k = 0; k < 3; k++) {
        double x2 = chi2_of(dp_exp_mech_select, &m, k);
        printf("\n    exact sampler, key %u: chi2 = %.2f (limit %.2f at p = %g, %d df)", k, x2, limit,
               P_FALSE_ALARM, N_CAND - 1);
        CU_ASSERT(x2 < limit);
    }
}

static void test_wrong_samplers_fail(void)
{
    dp_exp_mech m;
    CU_ASSERT_EQUAL_FATAL(dp_exp_mech_prepare(&m, 1.0, 1 << 16, NULL, 0), DP_OK);
    double limit = dptest_chi2_isf(P_FALSE_ALARM, N_CAND - 1);
    double a = chi2_of(coarse_float_sampler, &m, 0), b = chi2_of(double_scale_sampler, &m, 0);
    printf("\n    coarse float sampler chi2 = %.1f, doubled-scale sampler chi2 = %.1f (limit %.2f)", a, b, limit);
    CU_ASSERT(a > limit);
    CU_ASSERT(b > limit);
}

static void test_far_candidates_and_ranges(void)
{
    dp_exp_mech m;
    CU_ASSERT_EQUAL_FATAL(dp_exp_mech_prepare(&m, 4.0, 1, NULL, 0), DP_OK);
    /* A gap of 2^40 grid units: γ far above 2^20, that candidate is never chosen. */
    int64_t u[2] = {0, (int64_t)1 << 40};
    dp_key key;
    dptest_key(&key, 9);
    dp_drbg g;
    dp_drbg_init(&g, &key, "s", 1, 1, "test/far");
    for (int i = 0; i < 1000; i++) {
        size_t k = 9;
        CU_ASSERT_EQUAL(dp_exp_mech_select(&m, &g, u, 2, &k), DP_OK);
        CU_ASSERT_EQUAL(k, 1);
    }
    int64_t bad[1] = {(int64_t)1 << 62};
    size_t k;
    CU_ASSERT_EQUAL(dp_exp_mech_select(&m, &g, bad, 1, &k), DP_ERANGE);
    CU_ASSERT_EQUAL(dp_exp_mech_prepare(&m, 1e-9, 1, NULL, 0), DP_ERANGE);
    CU_ASSERT_EQUAL(dp_exp_mech_prepare(&m, 1.0, 0, NULL, 0), DP_ERANGE);
    CU_ASSERT_EQUAL(dp_exp_mech_prepare(&m, 1.0, DP_EXP_MECH_MAX_DELTA + 1, NULL, 0), DP_ERANGE);
    /* ε is rounded down onto its 2^-20 grid (never more than asked). */
    CU_ASSERT_EQUAL(dp_exp_mech_prepare(&m, 0.1, 1, NULL, 0), DP_OK);
    CU_ASSERT(m.epsilon <= 0.1 && m.epsilon > 0.1 - 1e-6);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"selections follow exp(eps*U/(2 dU)) (chi-square, 3 keys)", test_exact_law},
        {"the same test rejects a float-rounded and a doubled-scale sampler", test_wrong_samplers_fail},
        {"far candidates, range checks, epsilon rounded down", test_far_candidates_and_ranges},
        {NULL, NULL},
    };
    return dptest_run("exponential mechanism", cases);
}
