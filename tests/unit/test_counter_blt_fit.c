/* test_counter_blt_fit.c — the BLT fit (counter_blt_fit.c) is the plain
 * coordinate search of counter_blt.c's header, bit for bit, however it is
 * run: one horizon at a time, or many horizons side by side in vector
 * lanes (dp_blt_fit_horizons, what `cumulative` uses).  The fitted
 * doubles set each counter's quantised parameters and so every release;
 * a fit that differed in one bit would change the noise of a restored
 * stream (blt_load refuses it) and break replay's byte-identity.
 *
 * The specification is written out here the simple way: the objective as
 * its two recursions in two loops (sens² = Σ r_k², max variance = Σ l_t²
 * with k = R^{-1} e_1 by the feedback recursion, l its prefix sums), and
 * the search as nested loops over rounds, passes, coordinates and signs
 * with every probe costed afresh. */
#include "dptest.h"

#include "core/counter_blt.h"
#include "core/dp_error.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void spec_objective(uint64_t T, unsigned d, const double *theta, const double *omega,
                           double *s2, double *maxvar, double *meanvar)
{
    double pw[DP_BLT_MAX_BUFFERS], b[DP_BLT_MAX_BUFFERS];
    for (unsigned i = 0; i < d; i++)
        pw[i] = 1.0;
    *s2 = 1.0;
    for (uint64_t k = 1; k < T; k++) {   /* r_k = Σ_i ω_i θ_i^{k-1} */
        double r = 0;
        for (unsigned i = 0; i < d; i++) {
            r += omega[i] * pw[i];
            pw[i] *= theta[i];
        }
        *s2 += r * r;
    }
    for (unsigned i = 0; i < d; i++)
        b[i] = 0;
    double kprev = 0, l = 0, acc = 0, accsum = 0;
    for (uint64_t t = 0; t < T; t++) {   /* k = R^{-1} e_1 by feedback */
        double fbk = 0;
        for (unsigned i = 0; i < d; i++) {
            b[i] = theta[i] * b[i] + kprev;
            fbk += omega[i] * b[i];
        }
        double k = (t == 0 ? 1.0 : 0.0) - fbk;
        kprev = k;
        l += k;
        acc += l * l;
        accsum += acc;
    }
    *maxvar = acc;
    *meanvar = accsum / (double)T;
}

static double spec_cost(uint64_t T, unsigned d, const double *p)
{
    double th[DP_BLT_MAX_BUFFERS], om[DP_BLT_MAX_BUFFERS], s2, mv, mean;
    dp_blt_quadrature(d, p[0], p[1], exp(p[2]), th, om);
    spec_objective(T, d, th, om, &s2, &mv, &mean);
    return isfinite(s2 * mv) ? s2 * mv : INFINITY;
}

static void spec_fit(uint64_t T, unsigned d, double *theta, double *omega)
{
    double p[3] = {log(1.0 / (double)(T + 1)), log(0.5), 0.0};
    double lo[3] = {log(1.0 / (64.0 * (double)T + 64.0)), log(1.0 / (64.0 * (double)T + 64.0)), -3.0};
    double hi[3] = {log(0.999), log(0.999), 3.0};
    double step[3] = {1.0, 1.0, 0.25};
    double best = spec_cost(T, d, p);
    for (int round = 0; round < 12; round++) {
        int improved = 1;
        while (improved) {
            improved = 0;
            for (int k = 0; k < 3; k++)
                for (int sgn = -1; sgn <= 1; sgn += 2) {
                    double q[3] = {p[0], p[1], p[2]};
                    q[k] += sgn * step[k];
                    if (q[k] < lo[k] || q[k] > hi[k] || q[0] >= q[1] - 1e-3)
                        continue;
                    double c = spec_cost(T, d, q);
                    if (c < best * (1.0 - 1e-9)) {
                        best = c;
                        memcpy(p, q, sizeof p);
                        improved = 1;
                    }
                }
        }
        for (int k = 0; k < 3; k++)
            step[k] *= 0.5;
    }
    dp_blt_quadrature(d, p[0], p[1], exp(p[2]), theta, omega);
}

/* Bitwise equality of d doubles (== would let -0 pass for +0). */
static int same_bits(const double *a, const double *b, unsigned d)
{
    return memcmp(a, b, d * sizeof *a) == 0;
}

static int check_fit_against_spec(uint64_t T, unsigned d)
{
    double th[DP_BLT_MAX_BUFFERS], om[DP_BLT_MAX_BUFFERS], sth[DP_BLT_MAX_BUFFERS], som[DP_BLT_MAX_BUFFERS];
    if (dp_blt_fit(T, d, th, om) != DP_OK)
        return 0;
    spec_fit(T, d, sth, som);
    if (same_bits(th, sth, d) && same_bits(om, som, d))
        return 1;
    fprintf(stderr, "\n  fit differs from the spec at T = %llu, d = %u: theta_0 %a vs %a\n",
            (unsigned long long)T, d, th[0], sth[0]);
    return 0;
}

/* Horizons fitted side by side (FIT_LANES lanes, lanes of different T,
 * lanes refilled as searches end) give the spec's doubles: every T of
 * 1..160 at d = 6 (the default) and 1..64 at d = 1, 3 and 16. */
static void test_fit_side_by_side_is_the_spec(void)
{
    static const struct { unsigned d; uint64_t T; } cases[] = {{6, 160}, {1, 64}, {3, 64}, {16, 64}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        CU_ASSERT_EQUAL(dp_blt_fit_horizons(cases[c].T, cases[c].d), DP_OK);
        unsigned bad = 0;
        for (uint64_t T = 1; T <= cases[c].T; T++)
            bad += !check_fit_against_spec(T, cases[c].d);   /* dp_blt_fit: from the memo */
        CU_ASSERT_EQUAL(bad, 0);
    }
}

/* One horizon alone (dp_blt_fit of an unfitted (T, d): one live lane) is
 * the spec too, including horizons the side-by-side runs never saw. */
static void test_fit_alone_is_the_spec(void)
{
    static const uint64_t Ts[] = {1, 2, 3, 7, 64, 200, 1000};
    unsigned bad = 0;
    for (size_t i = 0; i < sizeof Ts / sizeof Ts[0]; i++)
        bad += !check_fit_against_spec(Ts[i], 5);
    CU_ASSERT_EQUAL(bad, 0);
}

/* The objective at arbitrary parameters, all three outputs, bit for bit
 * (one lane of the vector kernel, the others idle). */
static void test_objective_is_the_spec(void)
{
    static const uint64_t Ts[] = {1, 2, 5, 100, 1024};
    for (unsigned d = 1; d <= DP_BLT_MAX_BUFFERS; d += 5)
        for (size_t k = 0; k < sizeof Ts / sizeof Ts[0]; k++) {
            double th[DP_BLT_MAX_BUFFERS], om[DP_BLT_MAX_BUFFERS];
            dp_blt_quadrature(d, log(1e-3), log(0.4), 0.9, th, om);
            double s2, mv, mean, es2, emv, emean;
            CU_ASSERT_EQUAL(dp_blt_objective(Ts[k], d, th, om, &s2, &mv, &mean), DP_OK);
            spec_objective(Ts[k], d, th, om, &es2, &emv, &emean);
            CU_ASSERT(same_bits(&s2, &es2, 1) && same_bits(&mv, &emv, 1) && same_bits(&mean, &emean, 1));
        }
}

static void test_fit_validation(void)
{
    double th[DP_BLT_MAX_BUFFERS], om[DP_BLT_MAX_BUFFERS];
    CU_ASSERT_EQUAL(dp_blt_fit(0, 6, th, om), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_blt_fit(10, 0, th, om), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_blt_fit(10, DP_BLT_MAX_BUFFERS + 1, th, om), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_blt_fit_horizons(0, 6), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_blt_fit_horizons(10, 0), DP_EINVAL);
}

static const dptest_case CASES[] = {
    {"blt fit: horizons fitted side by side are the plain search's doubles, bit for bit",
     test_fit_side_by_side_is_the_spec},
    {"blt fit: one horizon alone is the plain search's doubles, bit for bit", test_fit_alone_is_the_spec},
    {"blt fit: the objective (sens², max and mean variance) is the two recursions' doubles",
     test_objective_is_the_spec},
    {"blt fit: horizon 0 and buffers outside 1..16 are refused", test_fit_validation},
    {NULL, NULL},
};

int main(void)
{
    return dptest_run("counter_blt_fit", CASES);
}
