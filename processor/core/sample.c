/* sample.c — exact discrete Bernoulli, Laplace and Gaussian samplers.
 *
 * Canonne, Kamath, Steinke 2020 ("CKS"), Algorithms 1 (BernExp),
 * 2 (discrete Laplace), 3 (discrete Gaussian), in integer arithmetic.
 *
 * Exactness argument.  Every coin below is Bernoulli(a/b) for an exact
 * rational a/b, decided as [uniform(b) < a] with an unbiased uniform
 * (Lemire rejection, drbg.h): its probability is exactly a/b.  BernExp,
 * DLap and DGauss combine such coins exactly as CKS Alg. 1–3 do, so they
 * inherit exactness, with one documented, deterministic truncation:
 *
 *  - DLap returns only |Y| <= 2^62 (int64 output with margin).  A larger Y
 *    is treated as a rejection, so the output is *exactly* DLap(t/s)
 *    conditioned on |Y| <= 2^62 (rejection sampling of a deterministic
 *    set = conditioning).  Excluded mass <= 2·exp(-2^62·s/t) <= 2·e^(-2^22)
 *    for t/s <= 2^40.
 *  - DGauss additionally rejects proposals |Y| > ymax, where ymax is the
 *    largest |Y| with | |Y|·t·d - n | < 2^63, so that the acceptance
 *    exponent's numerator (|Y|·t·d - n)² < 2^126 fits 128 bits.  Output is
 *    exactly N_Z(σ²) conditioned on |Y| <= ymax.  Because prepare enforces
 *    den = 2·n·d·t² <= 2^106, every excluded Y has
 *    γ(Y) = (|Y| - σ²/t)²/(2σ²) = diff²/den >= 2^126/2^106 = 2^20, and
 *    Y²/(2σ²) >= γ(Y) there, so the excluded mass is at most
 *    2·Σ_{|y|>ymax} e^{-y²/2σ²} / Z <= 2^32·e^(-2^20) < e^(-2^19)
 *    (Z >= 1; ymax >= 2^10·σ and σ² <= 2^40 bound the geometric tail sum).
 *
 * Privacy: truncating noise to a deterministic set adds at most the
 * excluded mass to δ: DLap(Δ/ε) is (ε, 2e^(-2^22))-DP, DGauss(σ²) is
 * Δ²/(2σ²)-zCDP up to δ < e^(-2^19) — both far below the ChaCha20 DRBG's
 * own ~2^-128 distinguishing advantage, which bounds any real-world
 * deviation anyway.
 *
 * Speed: coins with a small denominator use 32-bit uniforms, fair coins
 * one cached bit, and BernExp(1) (the inner loop of DLap) has its own
 * path — all without changing any probability. */
#include "core/sample.h"
#include "core/dp_error.h"

#include <math.h>

typedef unsigned __int128 u128;

#define DP_LIKELY(x)   __builtin_expect(!!(x), 1)
#define DP_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* --- Bernoulli coins ------------------------------------------------------ */

/* Bernoulli(num/den) for 64-bit den >= 1 (num >= den gives 1). */
static inline int bern64(dp_drbg *g, uint64_t num, uint64_t den)
{
    if (num >= den)
        return 1;
    if (num == 0)
        return 0;
    return dp_drbg_uniform(g, den) < num;
}

/* Bernoulli(num/den) for 128-bit den >= 1. */
static inline int bern128(dp_drbg *g, u128 num, u128 den)
{
    if (num >= den)
        return 1;
    if ((den >> 64) == 0)
        return bern64(g, (uint64_t)num, (uint64_t)den);
    if (num == 0)
        return 0;
    return dp_drbg_uniform128(g, den) < num;
}

/* Bernoulli(1/k) for k >= 2: one fair bit for k = 2, else one 32-bit
 * Lemire uniform (k never reaches 2^32 in practice: P[K >= k] <= 1/(k-1)!). */
static inline int bern_inv(dp_drbg *g, uint64_t k)
{
    if (k == 2)
        return dp_drbg_bit(g);
    if (DP_LIKELY(k <= ((uint64_t)1 << 32)))
        return dp_drbg_uniform32(g, k) == 0;
    return dp_drbg_uniform(g, k) == 0;
}

/* Bernoulli(exp(-1)) (CKS Alg. 1 with γ = 1): K <- 1; while Bern(1/K):
 * K <- K+1; return K odd.  Bern(γ/1) = Bern(1) is certain, so the loop
 * starts at K = 2.  P[K odd] = Σ_k odd (1/(k-1)! - 1/k!) = e^-1. */
static inline int bern_exp1(dp_drbg *g)
{
    uint64_t k = 2;
    while (bern_inv(g, k))
        k++;
    return (int)(k & 1);
}

/* Bernoulli(exp(-num/den)) for 0 <= num <= den, den < 2^64 (CKS Alg. 1):
 *   K <- 1; while Bernoulli(γ/K): K <- K+1; return K odd.
 * Bernoulli(γ/K) is drawn as Bernoulli(1/K) ∧ Bernoulli(num/den): the two
 * coins are independent, so the conjunction has probability γ/K exactly,
 * and den·K never has to be formed (it could overflow). */
static inline int bern_exp_le1_64(dp_drbg *g, uint64_t num, uint64_t den)
{
    if (num == 0 || !bern64(g, num, den))
        return 1;                       /* loop ended at K = 1 */
    uint64_t k = 2;
    for (;;) {
        int a;
        /* When K·den fits 32 bits, Bernoulli(γ/K) = [uniform(K·den) < num]
         * is one coin instead of two (same probability num/(K·den)). */
        if (den <= (((uint64_t)1 << 32) / k))
            a = dp_drbg_uniform32(g, k * den) < num;
        else
            a = bern_inv(g, k) && bern64(g, num, den);
        if (!a)
            return (int)(k & 1);
        k++;
    }
}

static int bern_exp_le1_128(dp_drbg *g, u128 num, u128 den)
{
    if ((den >> 64) == 0)
        return bern_exp_le1_64(g, (uint64_t)num, (uint64_t)den);
    if (num == 0 || !bern128(g, num, den))
        return 1;
    uint64_t k = 2;
    while (bern_inv(g, k) && bern128(g, num, den))
        k++;
    return (int)(k & 1);
}

/* Bernoulli(exp(-num/den)) for any num/den >= 0 (CKS Alg. 1):
 *   exp(-γ) = exp(-1)^floor(γ) · exp(-(γ - floor(γ))).
 * The loop over floor(γ) stops at the first failed BernExp(1), so its
 * expected length is below 1/(1 - e^-1) ≈ 1.58 whatever γ is. */
static int bern_exp128(dp_drbg *g, u128 num, u128 den)
{
    if (num <= den)
        return bern_exp_le1_128(g, num, den);
    u128 whole, frac;
    if (((num | den) >> 64) == 0) {     /* 64-bit division is much cheaper */
        whole = (uint64_t)num / (uint64_t)den;
        frac = (uint64_t)num % (uint64_t)den;
    } else {
        whole = num / den;
        frac = num % den;
    }
    for (u128 i = 0; i < whole; i++)
        if (!bern_exp1(g))
            return 0;
    return bern_exp_le1_128(g, frac, den);
}

int dp_sample_bernoulli(dp_drbg *g, uint64_t n, uint64_t d, int *out)
{
    if (d == 0 || n > d)
        return DP_ERANGE;
    *out = bern64(g, n, d);
    return DP_OK;
}

#define BERNEXP_MAX_DEN   ((uint64_t)1 << 62)
#define BERNEXP_MAX_RATIO ((uint64_t)1 << 20)

int dp_sample_bernoulli_exp(dp_drbg *g, uint64_t n, uint64_t d, int *out)
{
    if (d == 0 || d > BERNEXP_MAX_DEN || n / d > BERNEXP_MAX_RATIO ||
        (n / d == BERNEXP_MAX_RATIO && n % d != 0))
        return DP_ERANGE;
    *out = bern_exp128(g, n, d);
    return DP_OK;
}

/* --- discrete Laplace ----------------------------------------------------- */

#define DLAP_MAX_PART     ((uint64_t)1 << 62)   /* t, s */
#define DLAP_MAX_SCALE_L2 40                    /* t/s <= 2^40 */
#define DLAP_MIN_SCALE_L2 20                    /* t/s >= 2^-20 */
#define DLAP_YMAX         ((uint64_t)1 << 62)   /* truncation, see header */

int dp_dlap_prepare(dp_dlap *p, dp_rational scale, char *errstr, size_t errstr_size)
{
    if (scale.den == 0 || scale.num == 0)
        return dp_err(errstr, errstr_size, DP_ERANGE, "discrete Laplace scale must be > 0");
    scale = dp_rational_reduce(scale);
    if (scale.num > DLAP_MAX_PART || scale.den > DLAP_MAX_PART ||
        (u128)scale.num > ((u128)scale.den << DLAP_MAX_SCALE_L2) ||
        ((u128)scale.num << DLAP_MIN_SCALE_L2) < (u128)scale.den)
        return dp_err(errstr, errstr_size, DP_ERANGE,
                      "discrete Laplace scale %llu/%llu outside supported range "
                      "[2^-20, 2^40] with numerator and denominator <= 2^62",
                      (unsigned long long)scale.num, (unsigned long long)scale.den);
    p->t = scale.num;
    p->s = scale.den;
    return DP_OK;
}

/* CKS Alg. 2: DLap with scale t/s, i.e. P[x] ∝ exp(-|x|·s/t).
 *   U <- uniform(t); reject unless BernExp(U/t)
 *   V <- number of successes of BernExp(1) before the first failure
 *   X <- U + t·V is geometric with parameter 1 - e^{-1/t}
 *   Y <- floor(X / s); sign B; reject (B=1, Y=0) to avoid double-counting 0.
 * |Y| > 2^62 is rejected too (deterministic truncation, see the header).
 * Inlined into the discrete Gaussian's proposal loop. */
static inline __attribute__((always_inline)) int64_t dlap_draw(const dp_dlap *p, dp_drbg *g)
{
    const uint64_t t = p->t, s = p->s;
    for (;;) {
        uint64_t u = 0;
        if (t > 1) {
            u = dp_drbg_uniform(g, t);
            if (!bern_exp_le1_64(g, u, t))
                continue;
        }
        uint64_t v = 0;
        while (bern_exp1(g))
            v++;
        uint64_t y;
        u128 x = (u128)u + (u128)t * v;     /* t <= 2^62, v < 2^64: fits */
        if (DP_LIKELY((x >> 64) == 0))
            y = s == 1 ? (uint64_t)x : (uint64_t)x / s;
        else {
            u128 yy = x / s;
            if (yy > DLAP_YMAX)
                continue;
            y = (uint64_t)yy;
        }
        if (DP_UNLIKELY(y > DLAP_YMAX))
            continue;
        int b = dp_drbg_bit(g);
        if (b && y == 0)
            continue;
        return b ? -(int64_t)y : (int64_t)y;
    }
}

int64_t dp_dlap_sample(const dp_dlap *p, dp_drbg *g)
{
    return dlap_draw(p, g);
}

/* --- discrete Gaussian ---------------------------------------------------- */

#define DGAUSS_MAX_DEN       ((uint64_t)1 << 30)
#define DGAUSS_MAX_SIGMA2_L2 40     /* σ² <= 2^40 */
#define DGAUSS_MIN_SIGMA2_L2 10     /* σ² >= 2^-10 */
#define DGAUSS_MAX_DEN_L2    106    /* 2·n·d·t² <= 2^106 */

/* floor(sqrt(n/d)) = largest r with r²·d <= n (exact; the double is only a
 * starting guess). */
static uint64_t isqrt_floor_rational(uint64_t n, uint64_t d)
{
    uint64_t r = (uint64_t)sqrt((double)n / (double)d);
    while (r > 0 && (u128)r * r * d > n)
        r--;
    while ((u128)(r + 1) * (r + 1) * d <= n)
        r++;
    return r;
}

int dp_dgauss_prepare(dp_dgauss *p, dp_rational sigma2, char *errstr, size_t errstr_size)
{
    if (sigma2.den == 0 || sigma2.num == 0)
        return dp_err(errstr, errstr_size, DP_ERANGE, "discrete Gaussian variance must be > 0");
    sigma2 = dp_rational_reduce(sigma2);
    const uint64_t n = sigma2.num, d = sigma2.den;
    if (d > DGAUSS_MAX_DEN || (u128)n > ((u128)d << DGAUSS_MAX_SIGMA2_L2) ||
        ((u128)n << DGAUSS_MIN_SIGMA2_L2) < (u128)d)
        return dp_err(errstr, errstr_size, DP_ERANGE,
                      "discrete Gaussian sigma^2 = %llu/%llu outside supported range "
                      "[2^-10, 2^40] with denominator <= 2^30",
                      (unsigned long long)n, (unsigned long long)d);
    const uint64_t t = isqrt_floor_rational(n, d) + 1;    /* <= 2^20 + 1 */
    /* 2·n·d <= 2^65·2^30 and t² <= 2^41: test 2nd·t² <= 2^106 without
     * forming the product, which could overflow 128 bits. */
    const u128 t2 = (u128)t * t;
    if ((u128)2 * n * d > (((u128)1 << DGAUSS_MAX_DEN_L2) / t2))
        return dp_err(errstr, errstr_size, DP_ERANGE,
                      "discrete Gaussian sigma^2 = %llu/%llu: sigma^2 * denominator too large "
                      "for exact 128-bit arithmetic (need 2*n*d*(floor(sigma)+1)^2 <= 2^106)",
                      (unsigned long long)n, (unsigned long long)d);
    int rc = dp_dlap_prepare(&p->proposal, (dp_rational){t, 1}, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    p->n = n;
    p->d = d;
    p->t = t;
    p->td = t * d;                          /* <= (2^20+1)·2^30 < 2^51 */
    p->den = (u128)2 * n * d * t2;          /* <= 2^106 by the check above */
    /* n·d·t² <= 2^105 and t² > n/d give n < 2^53, so n + 2^63 - 1 fits. */
    uint64_t ymax = (n + (((uint64_t)1 << 63) - 1)) / p->td;
    p->ymax = ymax < DLAP_YMAX ? ymax : DLAP_YMAX;
    return DP_OK;
}

/* CKS Alg. 3: propose Y ~ DLap(t) with t = floor(σ)+1 and accept with
 * probability exp(-(|Y| - σ²/t)² / (2σ²))
 *   = exp(-(|Y|·t·d - n)² / (2·n·d·t²))   for σ² = n/d. */
int64_t dp_dgauss_sample(const dp_dgauss *p, dp_drbg *g)
{
    const uint64_t n = p->n, td = p->td, ymax = p->ymax;
    const u128 den = p->den;
    const int den64 = (den >> 64) == 0;
    for (;;) {
        int64_t y = dlap_draw(&p->proposal, g);
        uint64_t ay = y < 0 ? (uint64_t)(-(y + 1)) + 1 : (uint64_t)y;
        if (DP_UNLIKELY(ay > ymax))
            continue;                   /* truncation, see the header */
        u128 a = (u128)ay * td;         /* <= n + 2^63 - 1 */
        u128 diff = a >= n ? a - n : n - a;   /* < 2^63 */
        int accept;
        if (DP_LIKELY(den64 && (diff >> 32) == 0)) {
            uint64_t num = (uint64_t)diff * (uint64_t)diff;
            uint64_t dd = (uint64_t)den;
            accept = num <= dd ? bern_exp_le1_64(g, num, dd) : bern_exp128(g, num, dd);
        } else {
            accept = bern_exp128(g, diff * diff, den);
        }
        if (accept)
            return y;
    }
}

/* --- moments and PMFs ----------------------------------------------------- */

double dp_dlap_variance(dp_rational scale)
{
    double b = (double)scale.num / (double)scale.den;
    double q = exp(-1.0 / b);
    return 2.0 * q / ((1.0 - q) * (1.0 - q));
}

double dp_dlap_pmf(dp_rational scale, int64_t x)
{
    double b = (double)scale.num / (double)scale.den;
    double q = exp(-1.0 / b);
    double ax = x < 0 ? -(double)x : (double)x;
    return (1.0 - q) / (1.0 + q) * exp(-ax / b);
}

/* Normaliser Z = Σ_x e^{-x²/2σ²} and second moment M = Σ_x x² e^{-x²/2σ²}.
 * For σ² >= 16, Poisson summation gives Z = sqrt(2πσ²)(1 + 2Σ_k e^{-2π²σ²k²})
 * and M = σ²·sqrt(2πσ²)(1 + 2Σ_k (1 - 4π²σ²k²) e^{-2π²σ²k²}); the
 * corrections are below e^{-300}, far under double precision, so Z and
 * M/Z = σ² are exact to double precision.  Below that, sum directly over
 * |x| <= 40σ + 40 (omitted tail mass below e^{-800}), small terms first. */
static void dgauss_sums(double s2, double *z, double *m2)
{
    if (s2 >= 16.0) {
        *z = sqrt(2.0 * M_PI * s2);
        *m2 = s2 * *z;
        return;
    }
    double sigma = sqrt(s2);
    int64_t lim = (int64_t)(40.0 * sigma) + 40;
    double zz = 0.0, mm = 0.0;
    for (int64_t x = lim; x >= 1; x--) {
        double w = exp(-(double)x * (double)x / (2.0 * s2));
        zz += 2.0 * w;
        mm += 2.0 * (double)x * (double)x * w;
    }
    *z = zz + 1.0;
    *m2 = mm;
}

double dp_dgauss_variance(dp_rational sigma2)
{
    double s2 = (double)sigma2.num / (double)sigma2.den, z, m2;
    dgauss_sums(s2, &z, &m2);
    return m2 / z;
}

double dp_dgauss_pmf(dp_rational sigma2, int64_t x)
{
    double s2 = (double)sigma2.num / (double)sigma2.den, z, m2;
    dgauss_sums(s2, &z, &m2);
    double ax = (double)x;
    return exp(-ax * ax / (2.0 * s2)) / z;
}
