#include "dptest.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>

int dptest_run(const char *suite, const dptest_case *cases)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    CU_pSuite s = CU_add_suite(suite, NULL, NULL);
    if (!s) {
        CU_cleanup_registry();
        return 2;
    }
    for (const dptest_case *c = cases; c->name; c++)
        if (!CU_add_test(s, c->name, c->fn)) {
            CU_cleanup_registry();
            return 2;
        }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}

void dptest_key(dp_key *key, uint8_t variant)
{
    for (int i = 0; i < DP_KEY_BYTES; i++)
        key->bytes[i] = (uint8_t)(i + variant);
}

/* Numerical Recipes-style series / continued fraction for the incomplete
 * gamma function; double precision is ample for test thresholds. */
static double gamma_p_series(double a, double x)
{
    double sum = 1.0 / a, term = sum;
    for (int n = 1; n < 100000; n++) {
        term *= x / (a + n);
        sum += term;
        if (fabs(term) < fabs(sum) * 1e-15)
            break;
    }
    return sum * exp(-x + a * log(x) - lgamma(a));
}

static double gamma_q_cf(double a, double x)
{
    const double tiny = 1e-300;
    double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
    for (int i = 1; i < 100000; i++) {
        double an = -i * (i - a);
        b += 2.0;
        d = an * d + b;
        if (fabs(d) < tiny) d = tiny;
        c = b + an / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1.0) < 1e-15)
            break;
    }
    return exp(-x + a * log(x) - lgamma(a)) * h;
}

double dptest_gamma_q(double a, double x)
{
    if (x <= 0)
        return 1.0;
    if (x < a + 1.0)
        return 1.0 - gamma_p_series(a, x);
    return gamma_q_cf(a, x);
}

double dptest_chi2_sf(double x, double k)
{
    return dptest_gamma_q(k / 2.0, x / 2.0);
}

double dptest_chi2_isf(double p, double k)
{
    double lo = 0.0, hi = k + 100.0 * sqrt(2.0 * k) + 200.0;
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (lo + hi);
        if (dptest_chi2_sf(mid, k) > p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

double dptest_normal_isf(double p)
{
    double lo = -40.0, hi = 40.0;
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (lo + hi);
        if (0.5 * erfc(mid / sqrt(2.0)) > p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}
