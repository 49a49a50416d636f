/* test_counter_factorization.c — sqrt(T) and blt(T, d): coefficient
 * identities, sensitivities computed two ways and on the real encoder
 * path, the BLT fit against the square-root factorization, the BLT
 * noise recursion against an explicit Toeplitz convolution, validation.
 * (Empirical-vs-analytic variance and snapshot continuity for these kinds
 * run in test_counter_common over 2000 keys.) */
#include "dptest.h"

#include "core/counter.h"
#include "core/counter_blt.h"
#include "core/counter_factor.h"
#include "core/dp_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static dp_counter *make(dp_counter_kind kind, uint64_t T, unsigned d, dp_privacy_model m, double v,
                        const dp_key *key)
{
    dp_counter_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = kind;
    cfg.horizon = T;
    cfg.buffers = d;
    cfg.budget.model = m;
    cfg.budget.value = v;
    dp_noise_source ns = {key, "fac", 3, "f"};
    dp_counter *c = NULL;
    char err[256] = "";
    if (dp_counter_create(&c, &cfg, &ns, err, sizeof err) != DP_OK) {
        fprintf(stderr, "\n  create failed: %s\n", err);
        return NULL;
    }
    return c;
}

/* --- sqrt ----------------------------------------------------------------- */

/* (1-X)^{-1/2} squared is (1-X)^{-1}: Σ_{j<=k} c_j c_{k-j} = 1 for every k;
 * and c_k = C(2k,k)/4^k against exact integer binomials for small k. */
static void test_sqrt_coefficient_identity(void)
{
    enum { N = 4096 };
    double *c = malloc(N * sizeof *c);
    CU_ASSERT_FATAL(c != NULL);
    dp_sqrt_coeffs(c, N);
    double worst = 0;
    for (int k = 0; k < N; k++) {
        double s = 0;
        for (int j = 0; j <= k; j++)
            s += c[j] * c[k - j];
        worst = fmax(worst, fabs(s - 1.0));
    }
    printf("\n  max_k |Σ c_j c_{k-j} - 1| = %.3g (k < %d)", worst, N);
    CU_ASSERT(worst < 1e-12);
    unsigned long long binom = 1;   /* C(2k, k): exact, < 2^53, no overflow up to k = 27 */
    for (int k = 0; k <= 27; k++) {
        if (k)
            binom = binom * (unsigned long long)(2 * k) * (unsigned long long)(2 * k - 1) /
                    ((unsigned long long)k * (unsigned long long)k);
        /* k multiplications, each within half an ulp */
        CU_ASSERT(fabs(c[k] - (double)binom / ldexp(1.0, 2 * k)) <= (k + 1) * ldexp(c[k], -52));
    }
    free(c);
}

/* ℓ2² = Σ_{k<T} r̂_k²/Q² with r̂_k = round(Q c_k): exact for T = 1, 2;
 * within the quantisation bound Σ c_k/Q + T/(4Q²) of Σ c_k² otherwise;
 * and equal to what the encoder actually emits for a unit impulse. */
static double traced_sq;
static void trace_sum_sq(void *ctx, uint64_t step, const char *purpose, int64_t v)
{
    (void)ctx;
    (void)step;
    (void)purpose;
    traced_sq += (double)v * (double)v;
}

static void test_sqrt_sensitivity(void)
{
    dp_key key;
    dptest_key(&key, 1);
    const uint64_t Ts[] = {1, 2, 16, 256};
    for (size_t i = 0; i < 4; i++) {
        uint64_t T = Ts[i];
        dp_counter *c = make(DP_COUNTER_SQRT, T, 0, DP_PRIVACY_ZCDP, 1.0, &key);
        CU_ASSERT_FATAL(c != NULL);
        double l1, l2sq, *cc = malloc(T * sizeof *cc), s2 = 0, s1 = 0;
        dp_sqrt_coeffs(cc, T);
        for (uint64_t k = 0; k < T; k++) {
            s2 += cc[k] * cc[k];
            s1 += cc[k];
        }
        CU_ASSERT_EQUAL(dp_counter_sensitivity(c, &l1, &l2sq), DP_OK);
        double Q = ldexp(1.0, (int)dp_sqrt_lattice_bits(c));
        double tol = s1 / Q + (double)T / (4.0 * Q * Q);
        printf("\n  T=%-4llu Q=2^%u l2sq=%.9f Σc²=%.9f (tol %.2g) l1=%.6f Σc=%.6f",
               (unsigned long long)T, dp_sqrt_lattice_bits(c), l2sq, s2, tol, l1, s1);
        CU_ASSERT(fabs(l2sq - s2) <= tol);
        CU_ASSERT(fabs(l1 - s1) <= (double)T / (2.0 * Q));
        if (T == 1)
            CU_ASSERT_EQUAL(l2sq, 1.0);
        if (T == 2)
            CU_ASSERT_EQUAL(l2sq, 1.25);
        /* Real code path: impulse at step 1, zeros after. */
        traced_sq = 0;
        dp_counter_set_trace(c, trace_sum_sq, NULL);
        for (uint64_t t = 1; t <= T; t++) {
            int64_t out;
            CU_ASSERT_EQUAL(dp_counter_add(c, t == 1 ? 1 : 0, &out), DP_OK);
        }
        CU_ASSERT(fabs(traced_sq / (Q * Q) - l2sq) <= 1e-12 * l2sq);
        free(cc);
        dp_counter_destroy(c);
    }
}

/* --- blt ------------------------------------------------------------------ */

static double sqrt_objective(uint64_t T)
{
    double c = 1, s = 0;
    for (uint64_t k = 0; k < T; k++) {
        if (k)
            c *= (double)(2 * k - 1) / (double)(2 * k);
        s += c * c;
    }
    return s * s;   /* sens² · max_t Σ_{j<t} c_j² with L = R = A^{1/2} */
}

/* The max-over-t variance at fixed privacy cost of the quantised BLT the
 * counter uses, relative to sqrt(T): target <= 1.10 (d = 4, 6, 8); the
 * same check rejects d = 1 (one geometric sequence cannot follow
 * 1/sqrt(k)). */
static void test_blt_fit_quality(void)
{
    dp_key key;
    dptest_key(&key, 2);
    const uint64_t Ts[] = {1024, 65536};
    const unsigned ds[] = {1, 4, 6, 8};
    for (size_t i = 0; i < 2; i++) {
        for (size_t j = 0; j < 4; j++) {
            if (Ts[i] == 65536 && ds[j] == 8)
                continue;   /* runtime */
            dp_counter *c = make(DP_COUNTER_BLT, Ts[i], ds[j], DP_PRIVACY_ZCDP, 1.0, &key);
            CU_ASSERT_FATAL(c != NULL);
            unsigned d, m;
            double th[DP_BLT_MAX_BUFFERS], om[DP_BLT_MAX_BUFFERS], ef, s2, mv;
            CU_ASSERT_EQUAL(dp_blt_params(c, &d, th, om, &m, &ef), DP_OK);
            CU_ASSERT_EQUAL(d, ds[j]);
            CU_ASSERT_EQUAL(dp_blt_objective(Ts[i], d, th, om, &s2, &mv, NULL), DP_OK);
            double ratio = s2 * mv / sqrt_objective(Ts[i]);
            printf("\n  T=%-6llu d=%u  blt/sqrt max variance = %.4f", (unsigned long long)Ts[i], d, ratio);
            CU_ASSERT(ratio >= 1.0 - 1e-9);   /* sqrt is optimal among these (FHU 2023) */
            if (d >= 4) {
                CU_ASSERT(ratio <= 1.10);
            } else {
                CU_ASSERT(ratio > 1.10);
            }
            for (unsigned k = 0; k < d; k++)
                CU_ASSERT(th[k] > 0 && th[k] < 1 && om[k] >= 0);
            dp_counter_destroy(c);
        }
    }
}

/* r̂_k = Σ ω̂_i θ̂_i^{k-1} by explicit powers. */
static double blt_coef(unsigned d, const double *th, const double *om, uint64_t k)
{
    if (k == 0)
        return 1.0;
    double r = 0;
    for (unsigned i = 0; i < d; i++)
        r += om[i] * pow(th[i], (double)(k - 1));
    return r;
}

static void trace_f(void *ctx, uint64_t step, const char *purpose, int64_t v)
{
    int64_t *f = ctx;
    if (strcmp(purpose, "w") == 0 && step <= 96)
        f[step] = v;
}

static void test_blt_sensitivity_two_ways(void)
{
    dp_key key;
    dptest_key(&key, 3);
    enum { T = 96 };
    dp_counter *c = make(DP_COUNTER_BLT, T, 5, DP_PRIVACY_ZCDP, 0.7, &key);
    CU_ASSERT_FATAL(c != NULL);
    unsigned d, m;
    double th[DP_BLT_MAX_BUFFERS], om[DP_BLT_MAX_BUFFERS], ef, s2_rec;
    dp_blt_params(c, &d, th, om, &m, &ef);
    dp_blt_objective(T, d, th, om, &s2_rec, NULL, NULL);
    /* Direct: every column norm of the explicit T x T matrix R̂. */
    double best = 0;
    int argbest = -1;
    for (int col = 0; col < T; col++) {
        double s = 0;
        for (int row = col; row < T; row++) {
            double v = blt_coef(d, th, om, (uint64_t)(row - col));
            s += v * v;
        }
        if (s > best) {
            best = s;
            argbest = col;
        }
    }
    printf("\n  direct max column ‖R̂e_s‖² = %.15f (s=%d), recursion = %.15f", best, argbest + 1, s2_rec);
    CU_ASSERT_EQUAL(argbest, 0);
    CU_ASSERT(fabs(best - s2_rec) <= 1e-12 * best);
    /* The counter's reported ℓ2 includes its encoder rounding allowance. */
    double l1, l2sq, M = ldexp(1.0, (int)m);
    dp_counter_sensitivity(c, &l1, &l2sq);
    CU_ASSERT(fabs(sqrt(l2sq) - 2.0 * ef * sqrt((double)T) / M - sqrt(best)) <= 1e-12);
    /* Real encoder path: a unit impulse at step s gives f_t with
     * |f_t - M r̂_{t-s}| <= e_f (zeros elsewhere give f = 0 exactly). */
    enum { S = 7 };
    static int64_t f[T + 1];
    dp_counter_set_trace(c, trace_f, f);
    int ok = 1;
    for (uint64_t t = 1; t <= T; t++) {
        int64_t out;
        ok &= dp_counter_add(c, t == S ? 1 : 0, &out) == DP_OK;
    }
    CU_ASSERT(ok);
    double worst = 0, sq = 0;
    for (uint64_t t = 1; t <= T; t++) {
        double exact = t < S ? 0.0 : M * blt_coef(d, th, om, t - S);
        worst = fmax(worst, fabs((double)f[t] - exact));
        sq += (double)f[t] * (double)f[t];
    }
    printf("\n  encoder impulse: max |f_t - M r̂_{t-s}| = %.3f <= e_f = %.6f; Σf²/M² = %.9f",
           worst, ef, sq / (M * M));
    CU_ASSERT(worst <= ef);
    CU_ASSERT(sqrt(sq) / M <= sqrt(l2sq) + 1e-12);
    dp_counter_destroy(c);
}

/* The O(d) decoder on w = z must equal (1/M)(A R̂^{-1} z)_t computed by an
 * explicit matrix inversion, up to its fixed-point bound
 * (Σ_{j<t}|l̂_j|)·2^-20·(1 + Σ ω̂/(1-θ̂))/M.  An off-by-one Toeplitz
 * (a deliberately wrong reference) must fail the same check. */
static void test_blt_noise_recursion(void)
{
    dp_key key;
    dptest_key(&key, 4);
    enum { T = 64 };
    dp_counter *c = make(DP_COUNTER_BLT, T, 6, DP_PRIVACY_ZCDP, 1.0, &key);
    CU_ASSERT_FATAL(c != NULL);
    unsigned d, m;
    double th[DP_BLT_MAX_BUFFERS], om[DP_BLT_MAX_BUFFERS], ef;
    dp_blt_params(c, &d, th, om, &m, &ef);
    double M = ldexp(1.0, (int)m), sw = 0;
    for (unsigned i = 0; i < d; i++)
        sw += om[i] / (1.0 - th[i]);
    /* k = R̂^{-1} e_1 by forward substitution on the explicit matrix. */
    double r[T], k[T], l[T];
    for (int j = 0; j < T; j++)
        r[j] = blt_coef(d, th, om, (uint64_t)j);
    for (int j = 0; j < T; j++) {
        double a = j == 0 ? 1.0 : 0.0;
        for (int i = 1; i <= j; i++)
            a -= r[i] * k[j - i];
        k[j] = a;
        l[j] = (j ? l[j - 1] : 0.0) + a;
    }
    int64_t z[T];
    uint64_t st = 0x9e3779b97f4a7c15ull;
    for (int t = 0; t < T; t++) {   /* fixed test vector of lattice-scale values */
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        z[t] = (int64_t)(st >> 40) - ((int64_t)1 << 23);
    }
    double out[T];
    CU_ASSERT_EQUAL(dp_blt_decode_only(c, z, T, out), DP_OK);
    int ok = 1, wrong_ok = 1;
    double worst = 0, labs = 0;
    for (int t = 0; t < T; t++) {
        double e = 0, ew = 0;
        for (int j = 0; j <= t; j++) {
            e += l[j] * (double)z[t - j];
            ew += (j ? l[j - 1] : 0.0) * (double)z[t - j];   /* wrong: shifted */
        }
        e /= M;
        ew /= M;
        labs += fabs(l[t]);
        double tol = labs * ldexp(1.0 + sw, -20) / M + 1e-9 * (1.0 + fabs(e));
        worst = fmax(worst, fabs(out[t] - e) / tol);
        ok &= fabs(out[t] - e) <= tol;
        wrong_ok &= fabs(out[t] - ew) <= tol;
    }
    printf("\n  decoder vs explicit A R̂^{-1} z: max |diff|/tolerance = %.3g", worst);
    CU_ASSERT(ok);
    CU_ASSERT(!wrong_ok);
    dp_counter_destroy(c);
}

/* --- validation ----------------------------------------------------------- */

static void test_validation(void)
{
    dp_key key;
    dptest_key(&key, 5);
    dp_counter_config cfg;
    dp_noise_source ns = {&key, "fac", 3, "f"};
    dp_counter *c = NULL;
    char err[256];
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = DP_COUNTER_BLT;
    cfg.horizon = 64;
    cfg.buffers = DP_BLT_MAX_BUFFERS + 1;
    cfg.budget.model = DP_PRIVACY_ZCDP;
    cfg.budget.value = 1.0;
    CU_ASSERT_EQUAL(dp_counter_create(&c, &cfg, &ns, err, sizeof err), DP_EINVAL);
    CU_ASSERT(strstr(err, "buffers") != NULL);
    cfg.buffers = 0;
    cfg.horizon = DP_FACTOR_MAX_HORIZON + 1;
    CU_ASSERT_EQUAL(dp_counter_create(&c, &cfg, &ns, err, sizeof err), DP_EINVAL);
    cfg.kind = DP_COUNTER_SQRT;
    CU_ASSERT_EQUAL(dp_counter_create(&c, &cfg, &ns, err, sizeof err), DP_EINVAL);
    cfg.horizon = 0;
    CU_ASSERT_EQUAL(dp_counter_create(&c, &cfg, &ns, err, sizeof err), DP_EINVAL);
    cfg.horizon = 8;
    cfg.budget.value = 0;
    CU_ASSERT_NOT_EQUAL(dp_counter_create(&c, &cfg, &ns, err, sizeof err), DP_OK);

    /* Out-of-range inputs are refused and leave the state unchanged: the
     * run continues exactly like one that never saw them. */
    dp_counter_kind kinds[2] = {DP_COUNTER_SQRT, DP_COUNTER_BLT};
    for (int i = 0; i < 2; i++) {
        dp_counter *a = make(kinds[i], 8, 0, DP_PRIVACY_PURE, 1.0, &key);
        dp_counter *b = make(kinds[i], 8, 0, DP_PRIVACY_PURE, 1.0, &key);
        CU_ASSERT_FATAL(a && b);
        int64_t oa, ob;
        CU_ASSERT_EQUAL(dp_counter_add(a, DP_FACTOR_MAX_INPUT + 1, &oa), DP_EINVAL);
        CU_ASSERT_EQUAL(dp_counter_add(a, -DP_FACTOR_MAX_INPUT - 1, &oa), DP_EINVAL);
        CU_ASSERT_EQUAL(dp_counter_steps(a), 0);
        for (int t = 0; t < 8; t++) {
            CU_ASSERT_EQUAL(dp_counter_add(a, -3 + t, &oa), DP_OK);
            CU_ASSERT_EQUAL(dp_counter_add(b, -3 + t, &ob), DP_OK);
            CU_ASSERT_EQUAL(oa, ob);
        }
        CU_ASSERT_EQUAL(dp_counter_add(a, 0, &oa), DP_EHORIZON);
        dp_counter_destroy(a);
        dp_counter_destroy(b);
    }
}

/* A restored BLT state gets a fresh state's range checks (issue 13.A2):
 * an out-of-range running sum or buffer is refused, not carried into
 * 128-bit arithmetic that would overflow at the next step. */
static void test_blt_restore_ranges(void)
{
    dp_key key;
    dptest_key(&key, 6);
    dp_counter_config cfg = {.kind = DP_COUNTER_BLT, .horizon = 64, .budget = {DP_PRIVACY_ZCDP, 1.0},
                             .neighbor_entries = 1, .max_abs_change = 1};
    dp_noise_source ns = {&key, "blt", 3, "r"};
    dp_counter *c = NULL, *back = NULL;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_counter_create(&c, &cfg, &ns, err, sizeof err), DP_OK);
    int64_t out;
    for (int t = 0; t < 10; t++)
        CU_ASSERT_EQUAL_FATAL(dp_counter_add(c, t % 2, &out), DP_OK);
    dp_buf b;
    dp_buf_init(&b);
    CU_ASSERT_EQUAL_FATAL(dp_counter_snapshot(c, &b), DP_OK);
    CU_ASSERT_EQUAL(dp_counter_restore(&back, b.data, b.len, &key, err, sizeof err), DP_OK);
    dp_counter_destroy(back);
    back = NULL;
    /* Y (the last 16 bytes, little endian) set to 2^126 */
    uint8_t saved[16];
    memcpy(saved, b.data + b.len - 16, 16);
    memset(b.data + b.len - 16, 0, 16);
    b.data[b.len - 1] = 0x40;
    CU_ASSERT_NOT_EQUAL(dp_counter_restore(&back, b.data, b.len, &key, err, sizeof err), DP_OK);
    CU_ASSERT_PTR_NULL(back);
    memcpy(b.data + b.len - 16, saved, 16);
    /* uprev (the 16 bytes before Y) set to -2^100 */
    memset(b.data + b.len - 32, 0, 16);
    b.data[b.len - 32 + 12] = 0xf0;
    memset(b.data + b.len - 32 + 13, 0xff, 3);
    CU_ASSERT_NOT_EQUAL(dp_counter_restore(&back, b.data, b.len, &key, err, sizeof err), DP_OK);
    CU_ASSERT_PTR_NULL(back);
    dp_buf_free(&b);
    dp_counter_destroy(c);
}

static const dptest_case CASES[] = {
    {"blt: a restored state out of range is refused", test_blt_restore_ranges},
    {"sqrt: Σ_j c_j c_{k-j} = 1 and c_k = C(2k,k)/4^k", test_sqrt_coefficient_identity},
    {"sqrt: ℓ2² = Σ c_k² (quantised) at T = 1, 2, 16, 256, also on the encoder path", test_sqrt_sensitivity},
    {"blt: fitted max variance within 10% of sqrt (d >= 4), d = 1 rejected", test_blt_fit_quality},
    {"blt: sensitivity by O(T²) column norms = O(T·d) recursion = encoder impulse", test_blt_sensitivity_two_ways},
    {"blt: O(d) noise decoder = explicit Toeplitz convolution", test_blt_noise_recursion},
    {"sqrt/blt: configuration and input validation", test_validation},
    {NULL, NULL},
};

int main(void)
{
    return dptest_run("counter_factorization", CASES);
}
