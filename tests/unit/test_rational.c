/* test_rational.c — exact parsing of noise parameters and the fixed-point
 * grid helpers (processor/core/rational.{h,c}). */
#include "dptest.h"

#include "core/dp_error.h"
#include "core/rational.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int parse_ok(const char *s, uint64_t num, uint64_t den)
{
    dp_rational r = {0, 0};
    char err[256] = "";
    int rc = dp_rational_parse(s, &r, err, sizeof err);
    if (rc != DP_OK || r.num != num || r.den != den) {
        fprintf(stderr, "\n  parse('%s') rc=%d -> %llu/%llu (%s), want %llu/%llu\n", s, rc,
                (unsigned long long)r.num, (unsigned long long)r.den, err,
                (unsigned long long)num, (unsigned long long)den);
        return 0;
    }
    return 1;
}

static int parse_fails(const char *s, int want_status)
{
    dp_rational r = {12345, 678};
    char err[256] = "";
    int rc = dp_rational_parse(s, &r, err, sizeof err);
    if (rc != want_status || err[0] == '\0') {
        fprintf(stderr, "\n  parse('%s') rc=%d (%s), want %d with a message\n", s, rc, err, want_status);
        return 0;
    }
    return 1;
}

static void test_parse_fractions(void)
{
    CU_ASSERT(parse_ok("1/3", 1, 3));
    CU_ASSERT(parse_ok("6/4", 3, 2));              /* reduced */
    CU_ASSERT(parse_ok("0/5", 0, 1));
    CU_ASSERT(parse_ok("7", 7, 1));
    CU_ASSERT(parse_ok("+7/2", 7, 2));
    CU_ASSERT(parse_ok("18446744073709551615/1", UINT64_MAX, 1));
    /* 2^64 / 2 reduces to 2^63, which fits even though the input did not. */
    CU_ASSERT(parse_ok("18446744073709551616/2", (uint64_t)1 << 63, 1));
}

static void test_parse_decimals_exact(void)
{
    CU_ASSERT(parse_ok("0.1", 1, 10));             /* exactly 1/10, not the double */
    CU_ASSERT(parse_ok("1e-3", 1, 1000));
    CU_ASSERT(parse_ok("1E-3", 1, 1000));
    CU_ASSERT(parse_ok("2.50", 5, 2));
    CU_ASSERT(parse_ok(".5", 1, 2));
    CU_ASSERT(parse_ok("1.1", 11, 10));
    CU_ASSERT(parse_ok("12.375", 99, 8));
    CU_ASSERT(parse_ok("2.5e2", 250, 1));
    CU_ASSERT(parse_ok("1.5e+1", 15, 1));
    CU_ASSERT(parse_ok("0.000001", 1, 1000000));
    CU_ASSERT(parse_ok("100", 100, 1));
    /* Trailing zeros do not count against the 128-bit accumulator. */
    CU_ASSERT(parse_ok("0.10000000000000000000000000000000000000000000000000", 1, 10));
    CU_ASSERT(parse_ok("000000000000000000000000000000000000000000000003", 3, 1));
}

static void test_parse_rejects(void)
{
    CU_ASSERT(parse_fails("-1", DP_EINVAL));
    CU_ASSERT(parse_fails("-0.5", DP_EINVAL));
    CU_ASSERT(parse_fails("1/0", DP_EINVAL));
    CU_ASSERT(parse_fails("abc", DP_EINVAL));
    CU_ASSERT(parse_fails("", DP_EINVAL));
    CU_ASSERT(parse_fails("1/", DP_EINVAL));
    CU_ASSERT(parse_fails("/2", DP_EINVAL));
    CU_ASSERT(parse_fails("1/2/3", DP_EINVAL));
    CU_ASSERT(parse_fails("1.5/2", DP_EINVAL));
    CU_ASSERT(parse_fails("1/-2", DP_EINVAL));
    CU_ASSERT(parse_fails(".", DP_EINVAL));
    CU_ASSERT(parse_fails("1e", DP_EINVAL));
    CU_ASSERT(parse_fails("1e+", DP_EINVAL));
    CU_ASSERT(parse_fails(" 1", DP_EINVAL));
    CU_ASSERT(parse_fails("1 ", DP_EINVAL));
    CU_ASSERT(parse_fails("0x10", DP_EINVAL));
    CU_ASSERT(parse_fails("nan", DP_EINVAL));
    /* Overflow: reduced numerator or denominator beyond 64 bits. */
    CU_ASSERT(parse_fails("18446744073709551616", DP_ERANGE));          /* 2^64 */
    CU_ASSERT(parse_fails("1/18446744073709551616", DP_ERANGE));
    CU_ASSERT(parse_fails("1e20", DP_ERANGE));
    CU_ASSERT(parse_fails("1e-20", DP_ERANGE));
    CU_ASSERT(parse_fails("1e999", DP_ERANGE));
    CU_ASSERT(parse_fails("99999999999999999999999999999999999999999999999999", DP_ERANGE));
    CU_ASSERT(parse_fails("0.33333333333333333333333333333333333333333333333", DP_ERANGE));
    CU_ASSERT(dp_rational_parse(NULL, &(dp_rational){0, 0}, NULL, 0) == DP_EINVAL);
}

static void test_reduce_and_double(void)
{
    dp_rational r = dp_rational_reduce((dp_rational){UINT64_MAX - 1, UINT64_MAX - 1});
    CU_ASSERT(r.num == 1 && r.den == 1);
    r = dp_rational_reduce((dp_rational){12, 18});
    CU_ASSERT(r.num == 2 && r.den == 3);
    CU_ASSERT_DOUBLE_EQUAL(dp_rational_to_double((dp_rational){1, 4}), 0.25, 0.0);

    /* from_double_up never rounds down (towards less noise). */
    const double xs[] = {0.1, 1.0 / 3.0, 2.0, 123.456789, 1e-9, 0x1p43, 0.0};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        CU_ASSERT_EQUAL_FATAL(dp_rational_from_double_up(xs[i], &r), DP_OK);
        CU_ASSERT((long double)r.num / (long double)r.den >= (long double)xs[i]);
        CU_ASSERT((long double)r.num / (long double)r.den - (long double)xs[i] <= 1.0L / (1 << 20));
        CU_ASSERT(((uint64_t)1 << 20) % r.den == 0);
    }
    CU_ASSERT(dp_rational_from_double_up(-0.5, &r) == DP_ERANGE);
    CU_ASSERT(dp_rational_from_double_up(NAN, &r) == DP_ERANGE);
    CU_ASSERT(dp_rational_from_double_up(INFINITY, &r) == DP_ERANGE);
    CU_ASSERT(dp_rational_from_double_up(0x1p44, &r) == DP_ERANGE);
}

static void test_fixed_grid(void)
{
    int64_t q;
    CU_ASSERT(dp_fixed_encode(1.5, 0, &q) == DP_OK && q == 2);
    CU_ASSERT(dp_fixed_encode(-1.5, 0, &q) == DP_OK && q == -1);   /* half up, not away from 0 */
    CU_ASSERT(dp_fixed_encode(0.3, 4, &q) == DP_OK && q == 5);      /* 4.8 -> 5 */
    CU_ASSERT(dp_fixed_encode(-0.3, 4, &q) == DP_OK && q == -5);
    /* The classic floor(x + 0.5) double-rounding trap. */
    CU_ASSERT(dp_fixed_encode(0.49999999999999994, 0, &q) == DP_OK && q == 0);
    CU_ASSERT(dp_fixed_encode(0x1p52 + 1, 0, &q) == DP_OK && q == ((int64_t)1 << 52) + 1);
    CU_ASSERT(dp_fixed_encode(NAN, 4, &q) == DP_ERANGE);
    CU_ASSERT(dp_fixed_encode(INFINITY, 4, &q) == DP_ERANGE);
    CU_ASSERT(dp_fixed_encode(0x1p62, 0, &q) == DP_ERANGE);
    CU_ASSERT(dp_fixed_encode(1.0, 63, &q) == DP_ERANGE);
    CU_ASSERT_DOUBLE_EQUAL(dp_fixed_to_double(5, 4), 0.3125, 0.0);
    CU_ASSERT(dp_fixed_from_double(1e300, 8) == ((int64_t)1 << 62));
    CU_ASSERT(dp_fixed_from_double(-1e300, 8) == -((int64_t)1 << 62));
    CU_ASSERT(dp_fixed_from_double(NAN, 8) == 0);

    uint64_t s;
    CU_ASSERT(dp_fixed_sensitivity(1.0, 10, &s) == DP_OK && s == 1024);
    CU_ASSERT(dp_fixed_sensitivity(0.3, 4, &s) == DP_OK && s == 5);   /* ceil(4.8) */
    CU_ASSERT(dp_fixed_sensitivity(-1.0, 4, &s) == DP_ERANGE);
    CU_ASSERT(dp_fixed_sensitivity(INFINITY, 4, &s) == DP_ERANGE);

    /* The documented sensitivity bound: for pairs (a, b) with |a - b| <= Δ,
     * |enc(a) - enc(b)| <= ceil(Δ·2^k).  Sweep a fine grid of offsets,
     * including exact half-way points where round-half-away would break it. */
    const double delta = 0.3;
    const unsigned k = 4;
    uint64_t sens;
    CU_ASSERT_FATAL(dp_fixed_sensitivity(delta, k, &sens) == DP_OK);
    int worst = 0;
    for (int i = -4000; i <= 4000; i++) {
        double a = i / 1024.0, b = a + delta;
        int64_t qa, qb;
        CU_ASSERT_FATAL(dp_fixed_encode(a, k, &qa) == DP_OK && dp_fixed_encode(b, k, &qb) == DP_OK);
        int64_t d = qb > qa ? qb - qa : qa - qb;
        if (d > worst)
            worst = (int)d;
    }
    CU_ASSERT(worst == (int)sens);   /* the bound is attained, and never exceeded */
    /* Translation by an exact grid multiple shifts the code by exactly that. */
    for (int i = -50; i <= 50; i++) {
        double a = i / 32.0 - 0.5;   /* includes exact ties */
        int64_t qa, qb;
        CU_ASSERT(dp_fixed_encode(a, k, &qa) == DP_OK && dp_fixed_encode(a + 1.0, k, &qb) == DP_OK);
        CU_ASSERT(qb - qa == 16);
    }
}

static const dptest_case CASES[] = {
    {"parse a/b and integers, reduced", test_parse_fractions},
    {"parse decimals exactly (0.1 = 1/10)", test_parse_decimals_exact},
    {"parse rejects malformed, negative, zero-denominator, overflow", test_parse_rejects},
    {"reduce, to_double, from_double_up rounds up", test_reduce_and_double},
    {"fixed-point grid encode/sensitivity", test_fixed_grid},
    {NULL, NULL},
};

int main(void)
{
    return dptest_run("rational", CASES);
}
