/* test_accountant.c — privacy conversions against independently computed
 * references, composition and the fail-closed ledger (its snapshot:
 * test_accountant_serialize.c). */
#include "dptest.h"

#include "core/accountant.h"
#include "core/dp_error.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- reference values -------------------------------------------------------
 *
 * Computed offline with python3 + mpmath 1.3.0 at mp.dps = 60 (60 significant
 * digits), by a method independent of accountant.c:
 *   simple: rho + 2*sqrt(rho*log(1/delta)) evaluated in mpmath;
 *   delta:  the ORIGINAL CKS 2020 Prop. 12 expression
 *           exp((a-1)*(a*rho-eps))/(a-1) * (1-1/a)**a
 *           minimised by golden-section search (no derivative) over
 *           u = log(a-1) in [-60, 60] until the bracket is < 1e-25;
 *   eps:    bisection on eps over [0, simple bound] until the bracket is
 *           < 1e-40 relative, keeping the end whose delta <= target.
 * (accountant.c instead bisects on the root of the derivative of the log
 * objective in double precision.)  Printed with mp.nstr(x, 20). */
typedef struct conv_ref {
    double rho, delta, eps_simple, eps_cks;
} conv_ref;

static const conv_ref CONV_REFS[] = {
    {0.001, 1e-5, 0.21559660262893472396, 0.15733539316121550425},
    {0.001, 1e-6, 0.23607880004767996181, 0.18289537719007623123},
    {0.001, 1e-9, 0.28891155473128487245, 0.24511925387195137881},
    {0.005, 1e-5, 0.48485259121880812076, 0.37526123569902315124},
    {0.005, 1e-6, 0.53065217697569319786, 0.42994146883694927347},
    {0.005, 1e-9, 0.64878980788680417189, 0.56489328430203605083},
    {0.1, 1e-5, 2.2459660262893472396, 1.9142388320035977985},
    {0.1, 1e-6, 2.4507880004767996181, 2.1419389283854736614},
    {0.1, 1e-9, 2.9791155473128487245, 2.7154818867305019302},
    {0.5, 1e-5, 5.2985259121880812076, 4.7283869849433139},
    {0.5, 1e-6, 5.7565217697569319786, 5.2215344445301690442},
    {0.5, 1e-9, 6.9378980788680417189, 6.4740700207264861443},
    {1, 1e-5, 7.7861404244151117979, 7.0771966958063397586},
    {1, 1e-6, 8.4338443776996768939, 7.7662166253117207364},
    {1, 1e-9, 10.104562776310878105, 9.5214636717922322495},
    {10, 1e-5, 31.459660262893472396, 30.110857303795729523},
    {10, 1e-6, 33.507880004767996181, 32.221660949097595599},
    {10, 1e-9, 38.791155473128487245, 37.637453577913263766},
    /* extremes of the supported range */
    {1e-8, 1e-9, 0.00091046627763108781052, 0.00061218125201731155742},
    {1e-8, 1e-6, 0.00074339443776996768939, 0.0003455881788010125679},
    {100, 1e-9, 191.04562776310878105, 189.05565290211156867},
    {100, 1e-5, 167.86140424415111798, 165.62190403244519615},
};

/* delta(rho, eps) by the same golden-section method. */
typedef struct delta_ref {
    double rho, eps, delta;
} delta_ref;

static const delta_ref DELTA_REFS[] = {
    {0.5, 1, 0.24684633078294448707},
    {0.5, 3, 0.0051431840638621492912},
    {1, 5, 0.0026120345066204870031},
    {0.001, 0.1, 0.00058317891957458681552},
    {10, 30, 0.000011217702240171202099},
    {1e-8, 0.001, 1.0123524708409625054e-16},
    {100, 150, 0.0010262149742724309303},
    {0.1, 0.05, 0.24360542916126733822},
    /* ε = 0: ρ-zCDP still gives (0, δ)-DP with these δ */
    {1e-8, 0, 0.000085776388353110032321},
    {0.001, 0, 0.02712035542587797383},
};

#define NREFS(a) (sizeof(a) / sizeof((a)[0]))

/* Tolerances: the references are exact to ~1e-20 after rounding to double
 * (half an ulp, 1.1e-16 relative).  The simple bound is a handful of
 * correctly rounded operations: 8 ulp.  For CKS, accountant.h promises
 * ln δ to 1e-13 absolute and ε to 1e-12 relative. */
#define TOL_SIMPLE_REL (8 * DBL_EPSILON)
#define TOL_CKS_EPS_REL 1e-12
#define TOL_CKS_LOGDELTA_ABS 1e-13

static double rel_err(double got, double want)
{
    return fabs(got - want) / fabs(want);
}

static void test_simple_reference(void)
{
    double worst = 0;
    for (size_t i = 0; i < NREFS(CONV_REFS); i++) {
        const conv_ref *r = &CONV_REFS[i];
        double e = dp_zcdp_to_eps_simple(r->rho, r->delta);
        double err = rel_err(e, r->eps_simple);
        if (err > worst)
            worst = err;
        if (err > TOL_SIMPLE_REL)
            fprintf(stderr, "simple rho=%g delta=%g: got %.17g want %.17g\n",
                    r->rho, r->delta, e, r->eps_simple);
        CU_ASSERT(err <= TOL_SIMPLE_REL);
    }
    fprintf(stderr, "  simple bound: worst relative error %.3g\n", worst);
}

static void test_cks_eps_reference(void)
{
    double worst = 0;
    for (size_t i = 0; i < NREFS(CONV_REFS); i++) {
        const conv_ref *r = &CONV_REFS[i];
        double e = -1;
        CU_ASSERT_EQUAL_FATAL(dp_zcdp_to_eps_cks(r->rho, r->delta, &e), DP_OK);
        double err = rel_err(e, r->eps_cks);
        if (err > worst)
            worst = err;
        if (err > TOL_CKS_EPS_REL)
            fprintf(stderr, "cks rho=%g delta=%g: got %.17g want %.17g\n",
                    r->rho, r->delta, e, r->eps_cks);
        CU_ASSERT(err <= TOL_CKS_EPS_REL);
    }
    fprintf(stderr, "  CKS eps: worst relative error %.3g over %zu points\n", worst, NREFS(CONV_REFS));
}

static void test_cks_delta_reference(void)
{
    double worst = 0;
    for (size_t i = 0; i < NREFS(DELTA_REFS); i++) {
        const delta_ref *r = &DELTA_REFS[i];
        double d = -1;
        CU_ASSERT_EQUAL_FATAL(dp_zcdp_delta_cks(r->rho, r->eps, &d), DP_OK);
        double err = fabs(log(d) - log(r->delta));
        if (err > worst)
            worst = err;
        if (err > TOL_CKS_LOGDELTA_ABS)
            fprintf(stderr, "delta rho=%g eps=%g: got %.17g want %.17g\n", r->rho, r->eps, d, r->delta);
        CU_ASSERT(err <= TOL_CKS_LOGDELTA_ABS);
    }
    fprintf(stderr, "  CKS delta: worst |ln delta error| %.3g\n", worst);
}

/* The tolerance is tight enough to tell CKS apart from a plausible wrong
 * variant: the RDP conversion without CKS's (1-1/α)^α/(α-1) factor, i.e.
 * δ = inf_α exp((α-1)(αρ-ε)), whose ε-for-δ is exactly the simple bound. */
static void test_cks_tolerance_rejects_wrong_variant(void)
{
    for (size_t i = 0; i < NREFS(CONV_REFS); i++) {
        const conv_ref *r = &CONV_REFS[i];
        CU_ASSERT(rel_err(r->eps_simple, r->eps_cks) > 1000 * TOL_CKS_EPS_REL);
    }
}

/* Properties across ρ ∈ [1e-8, 100] and δ ∈ [1e-12, 0.5]. */
static void test_cks_properties(void)
{
    static const double deltas[] = {0.5, 1e-2, 1e-3, 1e-5, 1e-6, 1e-9, 1e-12};
    size_t nd = sizeof deltas / sizeof deltas[0];
    unsigned checked = 0, zero_eps = 0;
    for (size_t j = 0; j < nd; j++) {
        double prev = -1;
        for (int k = 0; k <= 40; k++) {
            double rho = 1e-8 * pow(10.0, k * 0.25);   /* 1e-8 .. 100 */
            double eps = -1, d = -1, d_below = -1;
            CU_ASSERT_EQUAL_FATAL(dp_zcdp_to_eps_cks(rho, deltas[j], &eps), DP_OK);
            double simple = dp_zcdp_to_eps_simple(rho, deltas[j]);
            CU_ASSERT(eps >= 0);
            CU_ASSERT(eps < simple);
            /* non-decreasing in ρ, strictly once positive */
            CU_ASSERT(prev > 0 ? eps > prev : eps >= prev);
            prev = eps;
            /* returned ε is valid and (to 1e-9 relative) the smallest one.
             * ε = 0 is legitimate when ρ is small next to δ: CKS gives
             * (0, δ')-DP with δ' ≈ sqrt(ρ)-ish, e.g. δ' ≈ 4e-5 at ρ = 1e-8. */
            CU_ASSERT_EQUAL(dp_zcdp_delta_cks(rho, eps, &d), DP_OK);
            CU_ASSERT(d <= deltas[j]);
            if (eps > 0) {
                CU_ASSERT_EQUAL(dp_zcdp_delta_cks(rho, eps * (1 - 1e-9), &d_below), DP_OK);
                CU_ASSERT(d_below > deltas[j]);
            } else {
                zero_eps++;
            }
            if (j > 0) {                                    /* non-increasing in δ */
                double eps_prev_delta = -1;
                CU_ASSERT_EQUAL(dp_zcdp_to_eps_cks(rho, deltas[j - 1], &eps_prev_delta), DP_OK);
                CU_ASSERT(eps_prev_delta > 0 ? eps > eps_prev_delta : eps >= eps_prev_delta);
            }
            checked++;
        }
    }
    CU_ASSERT_EQUAL(checked, 41 * nd);
    CU_ASSERT(zero_eps < checked / 4);   /* the strict checks did most of the work */

    /* δ(ε) decreases in ε and increases in ρ. */
    double prev = 2;
    for (int k = 0; k <= 50; k++) {
        double d = -1;
        CU_ASSERT_EQUAL(dp_zcdp_delta_cks(0.5, 0.2 * k, &d), DP_OK);
        CU_ASSERT(d <= prev && d >= 0 && d <= 1);
        if (k > 0 && prev < 1)
            CU_ASSERT(d < prev);
        prev = d;
    }
}

static void test_zero_and_invalid(void)
{
    double e = -1, d = -1;
    CU_ASSERT_EQUAL(dp_zcdp_to_eps_simple(0, 1e-6), 0.0);
    CU_ASSERT_EQUAL(dp_zcdp_to_eps_cks(0, 1e-6, &e), DP_OK);
    CU_ASSERT_EQUAL(e, 0.0);
    CU_ASSERT_EQUAL(dp_zcdp_delta_cks(0, 0, &d), DP_OK);
    CU_ASSERT_EQUAL(d, 0.0);
    CU_ASSERT_EQUAL(dp_zcdp_delta_cks(0, 1.0, &d), DP_OK);
    CU_ASSERT_EQUAL(d, 0.0);
    /* ρ > 0 and ε = 0: δ is at most 1 but positive. */
    CU_ASSERT_EQUAL(dp_zcdp_delta_cks(1e-3, 0, &d), DP_OK);
    CU_ASSERT(d > 0 && d <= 1);
    /* so a target δ above δ(ρ, 0) (reference: 8.58e-5 at ρ = 1e-8) needs ε = 0 */
    CU_ASSERT_EQUAL(dp_zcdp_to_eps_cks(1e-8, 1e-4, &e), DP_OK);
    CU_ASSERT_EQUAL(e, 0.0);
    CU_ASSERT_EQUAL(dp_zcdp_to_eps_cks(1e-8, 8e-5, &e), DP_OK);
    CU_ASSERT(e > 0);
    /* large ρ and small ε: the minimiser is near α = 1 and δ ≈ 1 */
    CU_ASSERT_EQUAL(dp_zcdp_delta_cks(1e4, 1.0, &d), DP_OK);
    CU_ASSERT(d > 0.99 && d <= 1);

    CU_ASSERT(isnan(dp_zcdp_to_eps_simple(-1, 1e-6)));
    CU_ASSERT(isnan(dp_zcdp_to_eps_simple(1, 0)));
    CU_ASSERT(isnan(dp_zcdp_to_eps_simple(1, 1)));
    CU_ASSERT(isnan(dp_zcdp_to_eps_simple(NAN, 0.1)));
    CU_ASSERT_EQUAL(dp_zcdp_to_eps_cks(-1e-9, 1e-6, &e), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_zcdp_to_eps_cks(1, 0, &e), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_zcdp_to_eps_cks(1, 1, &e), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_zcdp_to_eps_cks(INFINITY, 1e-6, &e), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_zcdp_to_eps_cks(1, NAN, &e), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_zcdp_to_eps_cks(1, 1e-6, NULL), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_zcdp_delta_cks(1, -1, &d), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_zcdp_delta_cks(NAN, 1, &d), DP_EINVAL);

    CU_ASSERT_EQUAL(dp_pure_to_zcdp(0.3), 0.3 * 0.3 / 2);
    CU_ASSERT(isnan(dp_pure_to_zcdp(-0.1)));

    double out = -1;
    CU_ASSERT_EQUAL(dp_privacy_convert((dp_privacy){DP_PRIVACY_PURE, 2.0}, DP_PRIVACY_ZCDP, &out), DP_OK);
    CU_ASSERT_EQUAL(out, 2.0);
    CU_ASSERT_EQUAL(dp_privacy_convert((dp_privacy){DP_PRIVACY_PURE, 2.0}, DP_PRIVACY_PURE, &out), DP_OK);
    CU_ASSERT_EQUAL(out, 2.0);
    CU_ASSERT_EQUAL(dp_privacy_convert((dp_privacy){DP_PRIVACY_ZCDP, 0.5}, DP_PRIVACY_ZCDP, &out), DP_OK);
    CU_ASSERT_EQUAL(out, 0.5);
    CU_ASSERT_EQUAL(dp_privacy_convert((dp_privacy){DP_PRIVACY_ZCDP, 0.5}, DP_PRIVACY_PURE, &out), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_privacy_convert((dp_privacy){(dp_privacy_model)7, 0.5}, DP_PRIVACY_ZCDP, &out), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_privacy_convert((dp_privacy){DP_PRIVACY_PURE, -0.5}, DP_PRIVACY_ZCDP, &out), DP_EINVAL);

    CU_ASSERT_STRING_EQUAL(dp_privacy_model_name(DP_PRIVACY_ZCDP), "zcdp");
    CU_ASSERT_STRING_EQUAL(dp_privacy_model_name(DP_PRIVACY_PURE), "pure");
}

/* ε → ρ (budgets as people write them): the largest ρ whose CKS ε at δ is
 * within the given ε, to its 8 significant digits.  One more unit in the
 * 8th digit must overshoot ε, or the bisection stopped short. */
static void test_rho_for_eps(void)
{
    const double eps[] = {1e-3, 0.01, 0.1, 0.5, 1, 2, 5, 10, 50};
    const double deltas[] = {1e-12, 1e-9, 1e-6, 1e-3, 0.1};
    for (size_t i = 0; i < sizeof eps / sizeof eps[0]; i++)
        for (size_t j = 0; j < sizeof deltas / sizeof deltas[0]; j++) {
            double rho = -1, back = -1, next_back = -1;
            CU_ASSERT_EQUAL_FATAL(dp_zcdp_rho_for_eps_cks(eps[i], deltas[j], &rho), DP_OK);
            CU_ASSERT_EQUAL(dp_zcdp_to_eps_cks(rho, deltas[j], &back), DP_OK);
            CU_ASSERT(back <= eps[i]);
            /* the CKS bound is tighter than the simple one: more ρ for the same ε */
            CU_ASSERT(dp_zcdp_to_eps_simple(rho, deltas[j]) >= back);
            double L = -log(deltas[j]), simple_rho = pow(sqrt(L + eps[i]) - sqrt(L), 2);
            CU_ASSERT(rho >= simple_rho * (1 - 1e-7));
            /* 8 significant digits: its text is at most 8 digits long ... */
            char text[40];
            snprintf(text, sizeof text, "%.8g", rho);
            CU_ASSERT_EQUAL(strtod(text, NULL), rho);
            /* ... and the next 8-digit value is over the budget */
            int e10 = (int)floor(log10(rho));
            double up = rho + pow(10.0, e10 - 7) * 1.000001;
            CU_ASSERT_EQUAL(dp_zcdp_to_eps_cks(up, deltas[j], &next_back), DP_OK);
            CU_ASSERT(next_back > eps[i] * (1 - 1e-9));
            if (!(back <= eps[i]) || !(next_back > eps[i] * (1 - 1e-9)))
                fprintf(stderr, "\n  eps %g delta %g: rho %.17g gives %.17g, next %.17g", eps[i], deltas[j], rho,
                        back, next_back);
        }
    /* a known value: ε = 1 at δ = 1e-6 allows ρ ≈ 0.0244 (the simple bound would allow 0.0170) */
    double rho;
    CU_ASSERT_EQUAL(dp_zcdp_rho_for_eps_cks(1.0, 1e-6, &rho), DP_OK);
    CU_ASSERT(rho > 0.0243 && rho < 0.0245);
    /* deterministic, and invalid arguments refused */
    double again;
    CU_ASSERT_EQUAL(dp_zcdp_rho_for_eps_cks(1.0, 1e-6, &again), DP_OK);
    CU_ASSERT_EQUAL(memcmp(&rho, &again, sizeof rho), 0);
    CU_ASSERT_EQUAL(dp_zcdp_rho_for_eps_cks(0.0, 1e-6, &rho), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_zcdp_rho_for_eps_cks(-1.0, 1e-6, &rho), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_zcdp_rho_for_eps_cks(INFINITY, 1e-6, &rho), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_zcdp_rho_for_eps_cks(1.0, 0.0, &rho), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_zcdp_rho_for_eps_cks(1.0, 1.0, &rho), DP_EINVAL);
}

static void test_describe(void)
{
    double s = -1, c = -1, want = -1;
    CU_ASSERT_EQUAL(dp_privacy_describe((dp_privacy){DP_PRIVACY_ZCDP, 0.5}, 1e-6, &s, &c), DP_OK);
    CU_ASSERT_EQUAL(s, dp_zcdp_to_eps_simple(0.5, 1e-6));
    CU_ASSERT_EQUAL(dp_zcdp_to_eps_cks(0.5, 1e-6, &want), DP_OK);
    CU_ASSERT_EQUAL(c, want);
    CU_ASSERT(rel_err(c, 5.2215344445301690442) <= TOL_CKS_EPS_REL);

    CU_ASSERT_EQUAL(dp_privacy_describe((dp_privacy){DP_PRIVACY_PURE, 1.25}, 0, &s, &c), DP_OK);
    CU_ASSERT(isnan(s));
    CU_ASSERT_EQUAL(c, 1.25);

    CU_ASSERT_EQUAL(dp_privacy_describe((dp_privacy){DP_PRIVACY_ZCDP, 0.5}, 0, &s, &c), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_privacy_describe((dp_privacy){DP_PRIVACY_ZCDP, -0.5}, 1e-6, &s, &c), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_privacy_describe((dp_privacy){(dp_privacy_model)0, 0.5}, 1e-6, &s, &c), DP_EINVAL);
}

/* --- ledger ------------------------------------------------------------------ */

static dp_privacy pure(double e) { return (dp_privacy){DP_PRIVACY_PURE, e}; }
static dp_privacy zcdp(double r) { return (dp_privacy){DP_PRIVACY_ZCDP, r}; }

static void test_ledger_init(void)
{
    dp_ledger l;
    char err[256];
    CU_ASSERT_EQUAL(dp_ledger_init(&l, DP_PRIVACY_ZCDP, 0.0, err, sizeof err), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_ledger_init(&l, DP_PRIVACY_ZCDP, -1.0, err, sizeof err), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_ledger_init(&l, DP_PRIVACY_ZCDP, NAN, err, sizeof err), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_ledger_init(&l, DP_PRIVACY_PURE, INFINITY, err, sizeof err), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_ledger_init(&l, (dp_privacy_model)3, 1.0, err, sizeof err), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_ledger_init(&l, DP_PRIVACY_PURE, 2.0, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(l.n_entries, 0);
    CU_ASSERT_EQUAL(l.spent, 0.0);
    CU_ASSERT_FALSE(l.exhausted);
    CU_ASSERT_EQUAL(dp_ledger_remaining(&l), 2.0);
    dp_ledger_free(&l);
}

static void test_ledger_composition(void)
{
    dp_ledger l;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_ledger_init(&l, DP_PRIVACY_PURE, 1.0, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_spend(&l, 1, "a", pure(0.1), err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_spend(&l, 1, "b", pure(0.2), err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_spend(&l, 2, "c", pure(0.3), err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(l.n_entries, 3);
    CU_ASSERT_EQUAL(l.spent, (0.1 + 0.2) + 0.3);
    CU_ASSERT_EQUAL(dp_ledger_remaining(&l), 1.0 - ((0.1 + 0.2) + 0.3));
    CU_ASSERT_EQUAL(l.entries[1].step, 1);
    CU_ASSERT_EQUAL(l.entries[2].step, 2);
    CU_ASSERT_EQUAL(l.entries[1].amount, 0.2);
    CU_ASSERT_STRING_EQUAL(l.entries[2].mechanism, "c");
    CU_ASSERT_FALSE(l.exhausted);
    dp_ledger_free(&l);

    /* zCDP ledger: ρ adds; a pure ε spend is recorded as ε²/2. */
    CU_ASSERT_EQUAL_FATAL(dp_ledger_init(&l, DP_PRIVACY_ZCDP, 1.0, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_spend(&l, 0, "gauss", zcdp(0.25), err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_spend(&l, 0, "laplace", pure(0.5), err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(l.entries[1].amount, 0.125);
    CU_ASSERT_EQUAL(l.spent, 0.375);
    CU_ASSERT_EQUAL(dp_ledger_remaining(&l), 0.625);
    /* a pure ε whose ε²/2 exceeds what is left is refused: sqrt(2·0.625) + a bit */
    CU_ASSERT_EQUAL(dp_ledger_spend(&l, 1, "laplace", pure(sqrt(1.25) * 1.001), err, sizeof err), DP_EBUDGET);
    CU_ASSERT_EQUAL(l.n_entries, 2);
    CU_ASSERT_EQUAL(l.spent, 0.375);
    CU_ASSERT(l.exhausted);
    dp_ledger_free(&l);
}

/* Fill a budget with n equal parts; return how many were accepted. */
static size_t fill_equal_parts(dp_ledger *l, double budget, size_t n)
{
    char err[256];
    size_t ok = 0;
    for (size_t i = 0; i < n; i++)
        if (dp_ledger_spend(l, i, "part", zcdp(budget / (double)n), err, sizeof err) == DP_OK)
            ok++;
    return ok;
}

static void test_ledger_slack(void)
{
    static const double budgets[] = {1.0, 0.7, 0.3, 5e-3, 123.456};
    static const size_t parts[] = {1000, 3, 7, 1000};
    int some_sum_exceeds = 0;
    for (size_t i = 0; i < sizeof budgets / sizeof budgets[0]; i++) {
        for (size_t j = 0; j < sizeof parts / sizeof parts[0]; j++) {
            dp_ledger l;
            char err[256];
            CU_ASSERT_EQUAL_FATAL(dp_ledger_init(&l, DP_PRIVACY_ZCDP, budgets[i], err, sizeof err), DP_OK);
            CU_ASSERT_EQUAL(fill_equal_parts(&l, budgets[i], parts[j]), parts[j]);
            CU_ASSERT_EQUAL(l.n_entries, parts[j]);
            if (l.spent > budgets[i])
                some_sum_exceeds = 1;   /* the case the slack exists for */
            CU_ASSERT(l.exhausted);     /* budget met */
            CU_ASSERT_EQUAL(dp_ledger_remaining(&l), 0.0);
            double spent = l.spent;
            /* one more tiny spend is refused and changes nothing */
            CU_ASSERT_EQUAL(dp_ledger_spend(&l, 99999, "tiny", zcdp(budgets[i] * 1e-12), err, sizeof err),
                            DP_EBUDGET);
            CU_ASSERT_EQUAL(l.n_entries, parts[j]);
            CU_ASSERT_EQUAL(l.spent, spent);
            dp_ledger_free(&l);
        }
    }
    /* Without the slack at least one of these splits would have been refused. */
    CU_ASSERT(some_sum_exceeds);

    /* The slack is tiny: exceeding by 1e-6 relative is refused even when not
     * yet exhausted. */
    dp_ledger l;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_ledger_init(&l, DP_PRIVACY_PURE, 1.0, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_spend(&l, 0, "half", pure(0.5), err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_spend(&l, 1, "over", pure(0.5 + 1e-6), err, sizeof err), DP_EBUDGET);
    CU_ASSERT(strstr(err, "over") != NULL);
    CU_ASSERT_EQUAL(l.n_entries, 1);
    CU_ASSERT_EQUAL(l.spent, 0.5);
    CU_ASSERT(l.exhausted);
    CU_ASSERT_EQUAL(dp_ledger_remaining(&l), 0.0);
    /* fail closed: a spend that would have fit is now refused too */
    CU_ASSERT_EQUAL(dp_ledger_spend(&l, 2, "fits", pure(0.1), err, sizeof err), DP_EBUDGET);
    CU_ASSERT_EQUAL(dp_ledger_spend(&l, 2, "zero", pure(0), err, sizeof err), DP_EBUDGET);
    CU_ASSERT_EQUAL(l.n_entries, 1);
    CU_ASSERT_EQUAL(dp_ledger_check_plan(&l, pure(0.1), err, sizeof err), DP_EBUDGET);
    dp_ledger_free(&l);
}

static void test_ledger_exhausted_and_invalid(void)
{
    dp_ledger l;
    char err[256];
    /* budget met exactly: exhausted, but the spend itself succeeded */
    CU_ASSERT_EQUAL_FATAL(dp_ledger_init(&l, DP_PRIVACY_ZCDP, 0.5, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_spend(&l, 0, "a", zcdp(0.25), err, sizeof err), DP_OK);
    CU_ASSERT_FALSE(l.exhausted);
    CU_ASSERT_EQUAL(dp_ledger_spend(&l, 1, "b", zcdp(0.25), err, sizeof err), DP_OK);
    CU_ASSERT(l.exhausted);
    CU_ASSERT_EQUAL(l.n_entries, 2);
    dp_ledger_free(&l);

    /* each malformed spend is refused, records nothing, and exhausts */
    struct {
        const char *mech;
        dp_privacy cost;
        int want;
    } bad[] = {
        {"nan", {DP_PRIVACY_ZCDP, NAN}, DP_EINVAL},
        {"neg", {DP_PRIVACY_ZCDP, -0.1}, DP_EINVAL},
        {"inf", {DP_PRIVACY_ZCDP, INFINITY}, DP_EINVAL},
        {"model", {(dp_privacy_model)9, 0.1}, DP_EINVAL},
        {NULL, {DP_PRIVACY_ZCDP, 0.1}, DP_EINVAL},
        {"", {DP_PRIVACY_ZCDP, 0.1}, DP_EINVAL},
        {"0123456789012345678901234567890123456789", {DP_PRIVACY_ZCDP, 0.1}, DP_EINVAL},  /* 40 chars */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL_FATAL(dp_ledger_init(&l, DP_PRIVACY_ZCDP, 1.0, err, sizeof err), DP_OK);
        CU_ASSERT_EQUAL(dp_ledger_spend(&l, 0, bad[i].mech, bad[i].cost, err, sizeof err), bad[i].want);
        CU_ASSERT_EQUAL(l.n_entries, 0);
        CU_ASSERT_EQUAL(l.spent, 0.0);
        CU_ASSERT(l.exhausted);
        dp_ledger_free(&l);
    }
    /* the longest allowed label (39 characters) is kept intact */
    CU_ASSERT_EQUAL_FATAL(dp_ledger_init(&l, DP_PRIVACY_ZCDP, 1.0, err, sizeof err), DP_OK);
    const char *max_label = "012345678901234567890123456789012345678";
    CU_ASSERT_EQUAL(dp_ledger_spend(&l, 0, max_label, zcdp(0.1), err, sizeof err), DP_OK);
    CU_ASSERT_STRING_EQUAL(l.entries[0].mechanism, max_label);
    dp_ledger_free(&l);
}

static void test_ledger_pure_zcdp(void)
{
    dp_ledger l;
    char err[256];
    /* zCDP into a pure ledger: refused, nothing recorded, exhausted */
    CU_ASSERT_EQUAL_FATAL(dp_ledger_init(&l, DP_PRIVACY_PURE, 10.0, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_check_plan(&l, zcdp(0.01), err, sizeof err), DP_EINVAL);
    CU_ASSERT_FALSE(l.exhausted);   /* checking a plan never changes the ledger */
    CU_ASSERT_EQUAL(dp_ledger_spend(&l, 0, "gauss", zcdp(0.01), err, sizeof err), DP_EINVAL);
    CU_ASSERT_EQUAL(l.n_entries, 0);
    CU_ASSERT(l.exhausted);
    dp_ledger_free(&l);

    /* pure spends into a zCDP ledger: ε²/2 each, composing in ρ */
    CU_ASSERT_EQUAL_FATAL(dp_ledger_init(&l, DP_PRIVACY_ZCDP, 0.5, err, sizeof err), DP_OK);
    double eps = 0.1, expect = 0;
    for (int i = 0; i < 100; i++) {
        CU_ASSERT_EQUAL(dp_ledger_spend(&l, (uint64_t)i, "laplace", pure(eps), err, sizeof err), DP_OK);
        expect += eps * eps / 2;
    }
    CU_ASSERT_EQUAL(l.spent, expect);
    CU_ASSERT(fabs(l.spent - 0.5) <= 1e-15);
    CU_ASSERT(l.exhausted);   /* 100 · 0.01/2 = 0.5 */
    dp_ledger_free(&l);
}

static void test_ledger_check_plan(void)
{
    dp_ledger l;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_ledger_init(&l, DP_PRIVACY_ZCDP, 0.5, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_check_plan(&l, zcdp(0.5), err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_check_plan(&l, zcdp(0.5 * (1 + 1e-6)), err, sizeof err), DP_EBUDGET);
    CU_ASSERT_FALSE(l.exhausted);
    CU_ASSERT_EQUAL(dp_ledger_check_plan(&l, pure(1.0), err, sizeof err), DP_OK);        /* 1²/2 */
    CU_ASSERT_EQUAL(dp_ledger_check_plan(&l, pure(1.001), err, sizeof err), DP_EBUDGET);
    CU_ASSERT_EQUAL(dp_ledger_check_plan(&l, zcdp(NAN), err, sizeof err), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_ledger_spend(&l, 0, "a", zcdp(0.2), err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_check_plan(&l, zcdp(0.3), err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_check_plan(&l, zcdp(0.31), err, sizeof err), DP_EBUDGET);
    CU_ASSERT_EQUAL(l.n_entries, 1);
    CU_ASSERT_FALSE(l.exhausted);
    dp_ledger_free(&l);
}

static const dptest_case CASES[] = {
    {"simple zCDP->eps bound vs mpmath references", test_simple_reference},
    {"CKS zCDP->eps vs mpmath references", test_cks_eps_reference},
    {"CKS delta(eps) vs mpmath references", test_cks_delta_reference},
    {"reference tolerance rejects the simple bound as CKS", test_cks_tolerance_rejects_wrong_variant},
    {"CKS <= simple, monotone, minimal, valid", test_cks_properties},
    {"rho = 0, conversions and invalid arguments", test_zero_and_invalid},
    {"dp_privacy_describe for budget metadata", test_describe},
    {"epsilon -> rho: the largest rho within (eps, delta) by CKS", test_rho_for_eps},
    {"ledger init validation", test_ledger_init},
    {"ledger composition (sum of spends)", test_ledger_composition},
    {"ledger slack: equal splits fit, then refusal", test_ledger_slack},
    {"ledger exhausted flag and malformed spends", test_ledger_exhausted_and_invalid},
    {"pure -> zCDP ledger; zCDP refused by pure ledger", test_ledger_pure_zcdp},
    {"ledger plan check", test_ledger_check_plan},
    {NULL, NULL},
};

int main(void)
{
    return dptest_run("accountant", CASES);
}
