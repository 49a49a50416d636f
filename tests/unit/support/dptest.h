/* dptest.h — a thin layer over CUnit so each test file is just its cases.
 *
 *   static void test_x(void) { CU_ASSERT_EQUAL(...); }
 *   static const dptest_case CASES[] = { {"x does y", test_x}, {NULL, NULL} };
 *   int main(void) { return dptest_run("suite name", CASES); }
 *
 * dptest_run registers one suite, runs it verbosely and returns non-zero
 * if any assertion failed (so ctest sees the failure). */
#ifndef DPTEST_H
#define DPTEST_H

#include <CUnit/CUnit.h>
#include <stdint.h>

#include "core/drbg.h"

typedef struct dptest_case {
    const char *name;
    void (*fn)(void);
} dptest_case;

int dptest_run(const char *suite, const dptest_case *cases);

/* A fixed, documented test key: bytes 0x00..0x1f plus `variant`. */
void dptest_key(dp_key *key, uint8_t variant);

/* --- statistics for tolerances derived from the maths ------------------ */

/* Regularised upper incomplete gamma Q(a, x). */
double dptest_gamma_q(double a, double x);
/* P[χ²_k >= x]. */
double dptest_chi2_sf(double x, double k);
/* x such that P[χ²_k >= x] = p (bisection on dptest_chi2_sf). */
double dptest_chi2_isf(double p, double k);
/* x such that P[N(0,1) >= x] = p. */
double dptest_normal_isf(double p);

#endif
