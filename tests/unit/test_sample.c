/* test_sample.c — exact samplers (processor/core/sample.{h,c}).
 *
 * Goodness of fit: >= 10^6 draws at fixed keys, chi-square against the
 * exact PMF (computed here independently in long double), one cell per
 * integer while the expected count is >= 5 and the two tails pooled into
 * one cell each (merged into the neighbour if still < 5).  Threshold: the
 * upper ALPHA = 1e-4 quantile of χ²(cells - 1).
 *
 * Teeth: the same check, fed draws from DGauss(1.1·σ²) but tested against
 * the PMF of σ², must reject.  The power is computed from the
 * non-centrality λ = N·Σ_cells (p₁ - p₀)²/p₀ of the statistic under the
 * wrong sampler (noncentral χ²(k, λ), normal approximation); at N = 10^6:
 *   σ² = 1:     λ ≈ 5035, k = 8    threshold 31.8  -> threshold is 35 sd
 *   σ² = 9:     λ ≈ 5037, k = 26   threshold 61.7     below the mean k + λ:
 *   σ² = 10^4:  λ ≈ 5029, k = 732  threshold 882.9    power > 1 - 10^-200
 * (the observed statistics are printed too).  10^6 draws would still give
 * power > 0.999 down to a variance error of about 3%.  The test prints
 * the λ, k and power it computes and asserts power > 0.999 before
 * asserting rejection, so the claim is checked, not assumed. */
#include "dptest.h"

#include "core/dp_error.h"
#include "core/sample.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALPHA 1e-4
#define NGOF  1000000

typedef long double ld;

/* --- reference PMFs (independent of sample.c) ------------------------------ */

typedef struct ref_pmf {
    int is_gauss;
    ld  param;       /* DLap scale b, or DGauss σ² */
    ld  norm;        /* normaliser */
} ref_pmf;

static ref_pmf ref_dlap(ld b)
{
    ref_pmf r = {0, b, 0};
    ld q = expl(-1.0L / b);
    r.norm = (1 - q) / (1 + q);
    return r;
}

static ref_pmf ref_dgauss(ld s2)
{
    ref_pmf r = {1, s2, 0};
    int64_t lim = (int64_t)(60 * sqrtl(s2)) + 60;
    ld z = 0;
    for (int64_t x = lim; x >= 1; x--)
        z += 2 * expl(-(ld)x * (ld)x / (2 * s2));
    r.norm = 1 / (z + 1);
    return r;
}

static ld ref_p(const ref_pmf *r, int64_t x)
{
    ld ax = x < 0 ? -(ld)x : (ld)x;
    return r->is_gauss ? r->norm * expl(-ax * ax / (2 * r->param)) : r->norm * expl(-ax / r->param);
}

/* P[X > R] for the symmetric PMF (sum until terms vanish). */
static ld ref_tail(const ref_pmf *r, int64_t R)
{
    ld s = 0;
    for (int64_t x = R + 1;; x++) {
        ld p = ref_p(r, x);
        s += p;
        if (p < 1e-30L * s || p == 0)
            break;
    }
    return s;
}

/* --- binning and the chi-square statistic ---------------------------------- */

typedef struct bins {
    int64_t R;           /* cells: (-inf, -R-1], -R..R, [R+1, inf) (tails may be merged) */
    int     tails_merged;
    int     cells;
    double *expected;    /* probability per cell */
} bins;

static bins make_bins(const ref_pmf *r, long n)
{
    bins b = {0, 0, 0, NULL};
    while ((double)(n * ref_p(r, b.R + 1)) >= 5.0)
        b.R++;
    ld tail = ref_tail(r, b.R);
    b.tails_merged = (double)(n * tail) < 5.0;
    b.cells = (int)(2 * b.R + 1) + (b.tails_merged ? 0 : 2);
    b.expected = calloc((size_t)b.cells, sizeof *b.expected);
    int off = b.tails_merged ? 0 : 1;
    for (int64_t x = -b.R; x <= b.R; x++)
        b.expected[off + x + b.R] = (double)ref_p(r, x);
    if (b.tails_merged) {
        b.expected[0] += (double)tail;
        b.expected[b.cells - 1] += (double)tail;
    } else {
        b.expected[0] = (double)tail;
        b.expected[b.cells - 1] = (double)tail;
    }
    return b;
}

static int cell_of(const bins *b, int64_t x)
{
    int off = b->tails_merged ? 0 : 1;
    if (x < -b->R)
        return 0;
    if (x > b->R)
        return b->cells - 1;
    return (int)(off + x + b->R);
}

static double chi2_of(const bins *b, const uint64_t *obs, long n)
{
    double s = 0;
    for (int i = 0; i < b->cells; i++) {
        double e = (double)n * b->expected[i], d = (double)obs[i] - e;
        s += d * d / e;
    }
    return s;
}

typedef int64_t (*draw_fn)(const void *p, dp_drbg *g);
static int64_t draw_dlap(const void *p, dp_drbg *g) { return dp_dlap_sample(p, g); }
static int64_t draw_dgauss(const void *p, dp_drbg *g) { return dp_dgauss_sample(p, g); }

static dp_drbg test_drbg(uint8_t variant, const char *label)
{
    dp_key key;
    dptest_key(&key, variant);
    dp_drbg g;
    dp_drbg_init(&g, &key, "sample-tests", 12, 0, label);
    return g;
}

/* Draw n values and return the chi-square statistic against `b`. */
static double gof_stat(const bins *b, draw_fn f, const void *p, const char *label, long n)
{
    dp_drbg g = test_drbg(0, label);
    uint64_t *obs = calloc((size_t)b->cells, sizeof *obs);
    for (long i = 0; i < n; i++)
        obs[cell_of(b, f(p, &g))]++;
    double s = chi2_of(b, obs, n);
    free(obs);
    return s;
}

static void check_gof(const char *what, const ref_pmf *ref, draw_fn f, const void *p, long n)
{
    bins b = make_bins(ref, n);
    double stat = gof_stat(&b, f, p, what, n);
    double thr = dptest_chi2_isf(ALPHA, b.cells - 1);
    printf("\n    %s: chi2 = %.1f, df = %d, threshold(p=1e-4) = %.1f ", what, stat, b.cells - 1, thr);
    CU_ASSERT(stat < thr);
    free(b.expected);
}

static void test_gof_dlap(void)
{
    dp_dlap d;
    CU_ASSERT_FATAL(dp_dlap_prepare(&d, (dp_rational){1, 1}, NULL, 0) == DP_OK);
    ref_pmf r = ref_dlap(1);
    check_gof("DLap(1)", &r, draw_dlap, &d, NGOF);

    CU_ASSERT_FATAL(dp_dlap_prepare(&d, (dp_rational){10, 1}, NULL, 0) == DP_OK);
    r = ref_dlap(10);
    check_gof("DLap(10)", &r, draw_dlap, &d, NGOF);

    /* Non-integer scales exercise Y = floor(X/s) with s > 1. */
    CU_ASSERT_FATAL(dp_dlap_prepare(&d, (dp_rational){10, 3}, NULL, 0) == DP_OK);
    r = ref_dlap(10.0L / 3);
    check_gof("DLap(10/3)", &r, draw_dlap, &d, NGOF / 4);
    CU_ASSERT_FATAL(dp_dlap_prepare(&d, (dp_rational){2, 7}, NULL, 0) == DP_OK);
    r = ref_dlap(2.0L / 7);
    check_gof("DLap(2/7)", &r, draw_dlap, &d, NGOF / 4);
}

static void test_gof_dgauss(void)
{
    const uint64_t s2s[] = {1, 9, 10000};
    for (size_t i = 0; i < 3; i++) {
        dp_dgauss d;
        CU_ASSERT_FATAL(dp_dgauss_prepare(&d, (dp_rational){s2s[i], 1}, NULL, 0) == DP_OK);
        ref_pmf r = ref_dgauss((ld)s2s[i]);
        char name[64];
        snprintf(name, sizeof name, "DGauss(%llu)", (unsigned long long)s2s[i]);
        check_gof(name, &r, draw_dgauss, &d, NGOF);
    }
    /* Rational σ² with d > 1, and a small σ² (proposal t = 1). */
    dp_dgauss d;
    CU_ASSERT_FATAL(dp_dgauss_prepare(&d, (dp_rational){7, 3}, NULL, 0) == DP_OK);
    ref_pmf r = ref_dgauss(7.0L / 3);
    check_gof("DGauss(7/3)", &r, draw_dgauss, &d, NGOF / 4);
    CU_ASSERT_FATAL(dp_dgauss_prepare(&d, (dp_rational){1, 5}, NULL, 0) == DP_OK);
    r = ref_dgauss(0.2L);
    check_gof("DGauss(1/5)", &r, draw_dgauss, &d, NGOF / 4);
}

/* P[N(0,1) <= x] */
static double phi(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

static void test_teeth_dgauss_variance_off_by_10pct(void)
{
    const uint64_t s2s[] = {1, 9, 10000};
    for (size_t i = 0; i < 3; i++) {
        const uint64_t s2 = s2s[i];
        ref_pmf r0 = ref_dgauss((ld)s2), r1 = ref_dgauss((ld)s2 * 11 / 10);
        bins b = make_bins(&r0, NGOF);
        /* Power of the test against the wrong sampler. */
        double lambda = 0;
        for (int c = 0; c < b.cells; c++) {
            double p1;
            if (c == 0 || c == b.cells - 1) {
                int64_t edge = b.tails_merged ? b.R - 1 : b.R;
                p1 = (double)ref_tail(&r1, edge);
            } else {
                p1 = (double)ref_p(&r1, (int64_t)c - (b.tails_merged ? 0 : 1) - b.R);
            }
            double diff = p1 - b.expected[c];
            lambda += (double)NGOF * diff * diff / b.expected[c];
        }
        int k = b.cells - 1;
        double thr = dptest_chi2_isf(ALPHA, k);
        double power = 1.0 - phi((thr - (k + lambda)) / sqrt(2.0 * (k + 2.0 * lambda)));
        printf("\n    DGauss(%llu) vs draws from DGauss(1.1x): lambda = %.0f, df = %d, power ~ %.6f ",
               (unsigned long long)s2, lambda, k, power);
        CU_ASSERT(power > 0.999);

        dp_dgauss wrong;
        CU_ASSERT_FATAL(dp_dgauss_prepare(&wrong, (dp_rational){11 * s2, 10}, NULL, 0) == DP_OK);
        double stat = gof_stat(&b, draw_dgauss, &wrong, "teeth", NGOF);
        printf("chi2 = %.1f > %.1f ", stat, thr);
        CU_ASSERT(stat > thr);
        free(b.expected);
    }
}

/* The 128-bit acceptance path (den = 2·n·d·t² >= 2^64) at σ² = 2^40, and
 * the largest σ² allowed with d = 2^20: coarse GoF on 20 bins of width σ/2
 * over ±5σ (+ two tails).  For σ >= 2^10 the discrete Gaussian CDF is the
 * normal CDF at half-integers to within e^{-2π²σ²}: negligible. */
static void gof_coarse_huge(dp_rational s2r, const char *label)
{
    dp_dgauss d;
    CU_ASSERT_FATAL(dp_dgauss_prepare(&d, s2r, NULL, 0) == DP_OK);
    CU_ASSERT((d.den >> 64) != 0);
    double sigma = sqrt((double)s2r.num / (double)s2r.den);
    enum { NB = 22 };
    double cut[NB - 1];
    for (int i = 0; i < NB - 1; i++)
        cut[i] = floor((-5.0 + 0.5 * i) * sigma) + 0.5;  /* cells split at half-integers */
    double e[NB];
    for (int i = 0; i < NB; i++) {
        double lo = i == 0 ? 0.0 : phi(cut[i - 1] / sigma);
        double hi = i == NB - 1 ? 1.0 : phi(cut[i] / sigma);
        e[i] = hi - lo;
    }
    const long n = 200000;
    uint64_t obs[NB] = {0};
    dp_drbg g = test_drbg(0, label);
    for (long i = 0; i < n; i++) {
        double y = (double)dp_dgauss_sample(&d, &g);
        int c = 0;
        while (c < NB - 1 && y > cut[c])
            c++;
        obs[c]++;
    }
    double s = 0;
    for (int i = 0; i < NB; i++)
        s += ((double)obs[i] - n * e[i]) * ((double)obs[i] - n * e[i]) / (n * e[i]);
    CU_ASSERT(s < dptest_chi2_isf(ALPHA, NB - 1));
}

static void test_gof_huge_sigma(void)
{
    gof_coarse_huge((dp_rational){(uint64_t)1 << 40, 1}, "huge.2^40");
    gof_coarse_huge((dp_rational){((uint64_t)1 << 52) + 12345, (uint64_t)1 << 20}, "huge.d2^20");
}

/* --- Bernoulli ------------------------------------------------------------- */

static int binom_ok(uint64_t k, uint64_t n, double p)
{
    double z = dptest_normal_isf(ALPHA / 2);
    double mean = (double)n * p, sd = sqrt((double)n * p * (1 - p));
    return fabs((double)k - mean) <= z * sd;
}

static void test_bernoulli(void)
{
    const struct { uint64_t n, d; } c[] = {
        {1, 3}, {2, 7}, {999999, 1000000}, {1, 2},
        {(uint64_t)1 << 63, UINT64_MAX},                 /* 64-bit denominator */
        {12345678901ULL, 98765432109ULL},
    };
    dp_drbg g = test_drbg(0, "bern");
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint64_t k = 0;
        for (int j = 0; j < NGOF; j++) {
            int b;
            CU_ASSERT_FATAL(dp_sample_bernoulli(&g, c[i].n, c[i].d, &b) == DP_OK);
            k += (uint64_t)b;
        }
        CU_ASSERT(binom_ok(k, NGOF, (double)((ld)c[i].n / (ld)c[i].d)));
    }
    int b = -1;
    CU_ASSERT(dp_sample_bernoulli(&g, 0, 5, &b) == DP_OK && b == 0);
    CU_ASSERT(dp_sample_bernoulli(&g, 5, 5, &b) == DP_OK && b == 1);
    /* teeth: the bound rejects a 1% error at p = 1/3 (gap 3333 ≈ 7 sd) */
    CU_ASSERT(!binom_ok((uint64_t)(NGOF / 3.0 * 1.01), NGOF, 1.0 / 3));
}

static void test_bernoulli_exp(void)
{
    const struct { uint64_t n, d; } c[] = {
        {1, 1}, {5, 2}, {1, 1000}, {3, 7}, {7, 3}, {0, 1},
        {((uint64_t)1 << 62) - 1, (uint64_t)1 << 62},    /* γ just below 1, 62-bit den */
    };
    dp_drbg g = test_drbg(0, "bernexp");
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint64_t k = 0;
        for (int j = 0; j < NGOF; j++) {
            int b;
            CU_ASSERT_FATAL(dp_sample_bernoulli_exp(&g, c[i].n, c[i].d, &b) == DP_OK);
            k += (uint64_t)b;
        }
        double p = (double)expl(-(ld)c[i].n / (ld)c[i].d);
        if (p == 1.0) {
            CU_ASSERT(k == NGOF);
        } else {
            CU_ASSERT(binom_ok(k, NGOF, p));
        }
    }
    /* Resolution of the check at exp(-1/1000): expected failures 999.5,
     * sd ≈ 31.6, bound ± 3.89 sd ≈ 123; a 20% error in γ (1199.3
     * failures) is rejected, a 10% error (1099.4) would not be. */
    CU_ASSERT(!binom_ok((uint64_t)llround(NGOF * exp(-1.2 / 1000)), NGOF, exp(-1.0 / 1000)));
}

/* --- determinism and ranges ------------------------------------------------ */

static void test_sampler_determinism(void)
{
    dp_dgauss dg;
    dp_dlap dl;
    CU_ASSERT_FATAL(dp_dgauss_prepare(&dg, (dp_rational){9, 1}, NULL, 0) == DP_OK);
    CU_ASSERT_FATAL(dp_dlap_prepare(&dl, (dp_rational){10, 1}, NULL, 0) == DP_OK);
    int64_t a[2000], b[2000], c[2000];
    dp_drbg g1 = test_drbg(5, "det"), g2 = test_drbg(5, "det"), g3 = test_drbg(5, "det2");
    for (int i = 0; i < 2000; i++) {
        a[i] = i & 1 ? dp_dgauss_sample(&dg, &g1) : dp_dlap_sample(&dl, &g1);
        b[i] = i & 1 ? dp_dgauss_sample(&dg, &g2) : dp_dlap_sample(&dl, &g2);
        c[i] = i & 1 ? dp_dgauss_sample(&dg, &g3) : dp_dlap_sample(&dl, &g3);
    }
    CU_ASSERT(memcmp(a, b, sizeof a) == 0);
    int eq = 0;
    for (int i = 0; i < 2000; i++)
        eq += a[i] == c[i];
    /* P[two independent draws agree] is at most ~0.13 here: far below 1000. */
    CU_ASSERT(eq < 600);
}

static void test_ranges(void)
{
    char err[256];
    dp_dlap dl;
    dp_dgauss dg;
    dp_drbg g = test_drbg(0, "ranges");
    int b;
    const uint64_t P62 = (uint64_t)1 << 62;

    CU_ASSERT(dp_sample_bernoulli(&g, 1, 0, &b) == DP_ERANGE);
    CU_ASSERT(dp_sample_bernoulli(&g, 6, 5, &b) == DP_ERANGE);
    CU_ASSERT(dp_sample_bernoulli_exp(&g, 1, 0, &b) == DP_ERANGE);
    CU_ASSERT(dp_sample_bernoulli_exp(&g, 1, P62 + 1, &b) == DP_ERANGE);
    CU_ASSERT(dp_sample_bernoulli_exp(&g, ((uint64_t)1 << 20) + 1, 1, &b) == DP_ERANGE);
    CU_ASSERT(dp_sample_bernoulli_exp(&g, (((uint64_t)1 << 20) * 3) + 1, 3, &b) == DP_ERANGE);
    CU_ASSERT(dp_sample_bernoulli_exp(&g, (uint64_t)1 << 20, 1, &b) == DP_OK && b == 0);

    err[0] = 0;
    CU_ASSERT(dp_dlap_prepare(&dl, (dp_rational){0, 1}, err, sizeof err) == DP_ERANGE && err[0]);
    CU_ASSERT(dp_dlap_prepare(&dl, (dp_rational){1, 0}, err, sizeof err) == DP_ERANGE);
    CU_ASSERT(dp_dlap_prepare(&dl, (dp_rational){((uint64_t)1 << 40) + 1, 1}, err, sizeof err) == DP_ERANGE);
    CU_ASSERT(dp_dlap_prepare(&dl, (dp_rational){1, ((uint64_t)1 << 20) + 1}, err, sizeof err) == DP_ERANGE);
    CU_ASSERT(dp_dlap_prepare(&dl, (dp_rational){P62 + 1, P62 - 1}, err, sizeof err) == DP_ERANGE);
    CU_ASSERT(dp_dlap_prepare(&dl, (dp_rational){UINT64_MAX, UINT64_MAX - 2}, err, sizeof err) == DP_ERANGE);
    /* reduction happens before the range check */
    CU_ASSERT(dp_dlap_prepare(&dl, (dp_rational){UINT64_MAX, UINT64_MAX}, err, sizeof err) == DP_OK);

    CU_ASSERT(dp_dgauss_prepare(&dg, (dp_rational){0, 1}, err, sizeof err) == DP_ERANGE);
    CU_ASSERT(dp_dgauss_prepare(&dg, (dp_rational){1, 0}, err, sizeof err) == DP_ERANGE);
    CU_ASSERT(dp_dgauss_prepare(&dg, (dp_rational){((uint64_t)1 << 40) + 1, 1}, err, sizeof err) == DP_ERANGE);
    CU_ASSERT(dp_dgauss_prepare(&dg, (dp_rational){1, 1025}, err, sizeof err) == DP_ERANGE);
    CU_ASSERT(dp_dgauss_prepare(&dg, (dp_rational){1, ((uint64_t)1 << 30) + 1}, err, sizeof err) == DP_ERANGE);
    /* σ² = 2^39 + 1/2^20 is within [2^-10, 2^40] but 2·n·d·t² ≈ 2^119 > 2^106 */
    CU_ASSERT(dp_dgauss_prepare(&dg, (dp_rational){((uint64_t)1 << 59) + 1, (uint64_t)1 << 20},
                                err, sizeof err) == DP_ERANGE);
    CU_ASSERT(strstr(err, "2^106") != NULL);
}

/* Extreme but supported parameters run cleanly (also under UBSan) and
 * produce plausible values. */
static void test_extremes(void)
{
    dp_dlap dl;
    dp_dgauss dg;
    dp_drbg g = test_drbg(0, "extremes");
    const struct { uint64_t n, d; double bound; } lap[] = {
        {(uint64_t)1 << 40, 1, 0x1p40 * 50}, {1, (uint64_t)1 << 20, 50},
        {((uint64_t)1 << 62) - 1, ((uint64_t)1 << 62) - 3, 100},
    };
    for (size_t i = 0; i < 3; i++) {
        CU_ASSERT_FATAL(dp_dlap_prepare(&dl, (dp_rational){lap[i].n, lap[i].d}, NULL, 0) == DP_OK);
        for (int j = 0; j < 2000; j++)
            CU_ASSERT(fabs((double)dp_dlap_sample(&dl, &g)) < lap[i].bound);
    }
    const struct { uint64_t n, d; } gs[] = {
        {(uint64_t)1 << 40, 1}, {1, 1024}, {((uint64_t)1 << 20) + 1, (uint64_t)1 << 30}, {(uint64_t)1 << 30, (uint64_t)1 << 30},
        {((uint64_t)1 << 40) - 1, 4096},
    };
    for (size_t i = 0; i < sizeof gs / sizeof gs[0]; i++) {
        CU_ASSERT_FATAL(dp_dgauss_prepare(&dg, (dp_rational){gs[i].n, gs[i].d}, NULL, 0) == DP_OK);
        double sigma = sqrt((double)gs[i].n / (double)gs[i].d);
        CU_ASSERT(dg.ymax >= (uint64_t)(1024 * sigma));
        for (int j = 0; j < 2000; j++)
            CU_ASSERT(fabs((double)dp_dgauss_sample(&dg, &g)) <= 10 * sigma + 1);
    }
    /* σ² = 2^-10: essentially always 0 (P[|Y| >= 1] ≈ 2e^{-512}). */
    CU_ASSERT_FATAL(dp_dgauss_prepare(&dg, (dp_rational){1, 1024}, NULL, 0) == DP_OK);
    int nonzero = 0;
    for (int j = 0; j < 10000; j++)
        nonzero += dp_dgauss_sample(&dg, &g) != 0;
    CU_ASSERT(nonzero == 0);
}

/* The library's double-precision PMF/variance helpers agree with the
 * long-double reference. */
static void test_pmf_helpers(void)
{
    const uint64_t s2s[] = {1, 9, 10000, 3};
    for (size_t i = 0; i < 4; i++) {
        ref_pmf r = ref_dgauss((ld)s2s[i]);
        dp_rational q = {s2s[i], 1};
        ld m2 = 0;
        for (int64_t x = -2000; x <= 2000; x++)
            m2 += (ld)x * (ld)x * ref_p(&r, x);
        CU_ASSERT(fabs(dp_dgauss_variance(q) / (double)m2 - 1) < 1e-12);
        const int64_t xs[] = {0, 1, 2, (int64_t)(3 * sqrt((double)s2s[i])), -5};
        for (size_t j = 0; j < 5; j++)
            CU_ASSERT(fabs(dp_dgauss_pmf(q, xs[j]) / (double)ref_p(&r, xs[j]) - 1) < 1e-12);
    }
    ref_pmf r = ref_dlap(10);
    ld m2 = 0;
    for (int64_t x = -2000; x <= 2000; x++)
        m2 += (ld)x * (ld)x * ref_p(&r, x);
    CU_ASSERT(fabs(dp_dlap_variance((dp_rational){10, 1}) / (double)m2 - 1) < 1e-12);
    CU_ASSERT(fabs(dp_dlap_pmf((dp_rational){10, 1}, -3) / (double)ref_p(&r, -3) - 1) < 1e-12);
}

static const dptest_case CASES[] = {
    {"GoF DLap(1), DLap(10) (10^6 each), DLap(10/3), DLap(2/7)", test_gof_dlap},
    {"GoF DGauss(1), DGauss(9), DGauss(10^4) (10^6 each), 7/3, 1/5", test_gof_dgauss},
    {"GoF check rejects DGauss with sigma^2 10% off", test_teeth_dgauss_variance_off_by_10pct},
    {"GoF DGauss(2^40), DGauss(~2^32, d=2^20): 128-bit path", test_gof_huge_sigma},
    {"Bernoulli(n/d) frequencies", test_bernoulli},
    {"BernoulliExp: exp(-1), exp(-2.5), exp(-1/1000), ...", test_bernoulli_exp},
    {"samplers deterministic per key/label", test_sampler_determinism},
    {"out-of-range parameters -> DP_ERANGE", test_ranges},
    {"extreme supported parameters", test_extremes},
    {"PMF / variance helpers", test_pmf_helpers},
    {NULL, NULL},
};

int main(void)
{
    return dptest_run("sample", CASES);
}
