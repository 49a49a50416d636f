/* sample.c — exact discrete Bernoulli, Laplace and Gaussian samplers.
 *
 * Canonne, Kamath, Steinke 2020 ("CKS"), Algorithms 1 (BernExp),
 * 2 (discrete Laplace), 3 (discrete Gaussian), in integer arithmetic.
 *
 * Exactness and its one documented limit: every probability below is an
 * exact rational evaluated with integer comparisons against unbiased
 * uniform integers.  The only departure is in the far tails where an
 * intermediate would overflow 128 bits; there the exact algorithm would
 * accept with probability below e^(-2^20) (see the comments at each site),
 * and we reject instead.  That changes the output distribution by less
 * than e^(-2^20) in total variation, far below the ~2^-128 distinguishing
 * advantage of the ChaCha20 DRBG that supplies the randomness anyway. */
#include "core/sample.h"
#include "core/dp_error.h"

#include <math.h>

typedef unsigned __int128 u128;

/* Bernoulli(num/den) for 128-bit num <= den. */
static int bern128(dp_drbg *g, u128 num, u128 den)
{
    if (num >= den)
        return 1;
    if (num == 0)
        return 0;
    return dp_drbg_uniform128(g, den) < num;
}

/* Bernoulli(exp(-num/den)) for 0 <= num/den <= 1 (CKS Alg. 1, first part):
 *   K <- 1; while Bernoulli(γ/K): K <- K+1; return K odd.
 * Bernoulli(γ/K) is drawn as Bernoulli(1/K) ∧ Bernoulli(num/den): the two
 * coins are independent, so the product has probability γ/K exactly, and
 * den·K never has to be formed (it could overflow). */
static int bern_exp_le1(dp_drbg *g, u128 num, u128 den)
{
    uint64_t k = 1;
    for (;;) {
        int a = (k == 1 || dp_drbg_uniform(g, k) == 0) && bern128(g, num, den);
        if (!a)
            break;
        k++;
    }
    return (int)(k & 1);
}

/* Bernoulli(exp(-num/den)) for any num/den >= 0 (CKS Alg. 1):
 *   exp(-γ) = exp(-1)^floor(γ) · exp(-(γ - floor(γ))). */
static int bern_exp128(dp_drbg *g, u128 num, u128 den)
{
    u128 whole = num / den, frac = num % den;
    for (u128 i = 0; i < whole; i++)
        if (!bern_exp_le1(g, 1, 1))
            return 0;
    return bern_exp_le1(g, frac, den);
}

int dp_sample_bernoulli(dp_drbg *g, uint64_t n, uint64_t d, int *out)
{
    if (d == 0 || n > d)
        return DP_ERANGE;
    *out = bern128(g, n, d);
    return DP_OK;
}

#define BERNEXP_MAX_DEN   ((uint64_t)1 << 62)
#define BERNEXP_MAX_RATIO ((uint64_t)1 << 20)

int dp_sample_bernoulli_exp(dp_drbg *g, uint64_t n, uint64_t d, int *out)
{
    if (d == 0 || d > BERNEXP_MAX_DEN || n / d > BERNEXP_MAX_RATIO)
        return DP_ERANGE;
    *out = bern_exp128(g, n, d);
    return DP_OK;
}

/* --- discrete Laplace ----------------------------------------------------- */

#define DLAP_MAX_PART  ((uint64_t)1 << 62)   /* t, s */
#define DLAP_MAX_SCALE ((double)((uint64_t)1 << 40))
#define DLAP_MIN_SCALE (1.0 / (double)((uint64_t)1 << 20))

int dp_dlap_prepare(dp_dlap *p, dp_rational scale, char *errstr, size_t errstr_size)
{
    if (scale.den == 0 || scale.num == 0)
        return dp_err(errstr, errstr_size, DP_ERANGE, "discrete Laplace scale must be > 0");
    scale = dp_rational_reduce(scale);
    double b = (double)scale.num / (double)scale.den;
    if (scale.num > DLAP_MAX_PART || scale.den > DLAP_MAX_PART || b > DLAP_MAX_SCALE || b < DLAP_MIN_SCALE)
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
 *   Y <- floor(X / s); sign B; reject (B=1, Y=0) to avoid double-counting 0. */
int64_t dp_dlap_sample(const dp_dlap *p, dp_drbg *g)
{
    for (;;) {
        uint64_t u = dp_drbg_uniform(g, p->t);
        if (!bern_exp_le1(g, u, p->t))
            continue;
        uint64_t v = 0;
        while (bern_exp_le1(g, 1, 1))
            v++;
        /* t <= 2^62 and v < 2^64: the product fits 128 bits. */
        u128 x = (u128)u + (u128)p->t * v;
        u128 y = x / p->s;
        /* |Y| > 2^62 needs v >~ 2^22 consecutive BernExp(1) successes
         * (probability < e^(-2^22)); treat as a rejection, see header. */
        if (y > ((u128)1 << 62))
            continue;
        int b = dp_drbg_bit(g);
        if (b && y == 0)
            continue;
        return b ? -(int64_t)y : (int64_t)y;
    }
}

/* --- discrete Gaussian ---------------------------------------------------- */

#define DGAUSS_MAX_DEN  ((uint64_t)1 << 30)
#define DGAUSS_MAX_SIGMA2 ((double)((uint64_t)1 << 40))
#define DGAUSS_MIN_SIGMA2 (1.0 / 1024.0)

static uint64_t isqrt_floor_rational(uint64_t n, uint64_t d)
{
    /* floor(sqrt(n/d)) = largest r with r²·d <= n. */
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
    double v = (double)sigma2.num / (double)sigma2.den;
    if (sigma2.den > DGAUSS_MAX_DEN || v > DGAUSS_MAX_SIGMA2 || v < DGAUSS_MIN_SIGMA2)
        return dp_err(errstr, errstr_size, DP_ERANGE,
                      "discrete Gaussian sigma^2 = %llu/%llu outside supported range "
                      "[2^-10, 2^40] with denominator <= 2^30",
                      (unsigned long long)sigma2.num, (unsigned long long)sigma2.den);
    p->n = sigma2.num;
    p->d = sigma2.den;
    p->t = isqrt_floor_rational(p->n, p->d) + 1;
    /* Keep 2·n·d·t² <= 2^106.  Then in dp_dgauss_sample any |Y|·t·d - n
     * that reaches 2^63 (whose square would overflow) has acceptance
     * probability exp(-γ) with γ >= 2^126 / 2^106 = 2^20, which we treat
     * as a rejection (see the header comment). */
    u128 t2 = (u128)p->t * p->t;
    if ((u128)2 * p->n * p->d > (((u128)1 << 106) / t2))
        return dp_err(errstr, errstr_size, DP_ERANGE,
                      "discrete Gaussian sigma^2 = %llu/%llu: sigma^2 * denominator too large "
                      "for exact 128-bit arithmetic (need 2*n*d*t^2 <= 2^106)",
                      (unsigned long long)p->n, (unsigned long long)p->d);
    return dp_dlap_prepare(&p->proposal, (dp_rational){p->t, 1}, errstr, errstr_size);
}

/* CKS Alg. 3: propose Y ~ DLap(t) with t = floor(σ)+1 and accept with
 * probability exp(-(|Y| - σ²/t)² / (2σ²))
 *   = exp(-(|Y|·t·d - n)² / (2·n·d·t²))   for σ² = n/d. */
int64_t dp_dgauss_sample(const dp_dgauss *p, dp_drbg *g)
{
    const u128 td = (u128)p->t * p->d;
    const u128 den = (u128)2 * p->n * p->d * p->t * p->t;
    for (;;) {
        int64_t y = dp_dlap_sample(&p->proposal, g);
        uint64_t ay = y < 0 ? (uint64_t)(-(y + 1)) + 1 : (uint64_t)y;
        u128 a = (u128)ay * td;          /* ay < 2^63, td < 2^51: may exceed 2^64 */
        u128 diff = a >= p->n ? a - p->n : p->n - a;
        if (diff >> 63)
            continue;   /* γ >= 2^20: acceptance below e^(-2^20), see prepare */
        if (bern_exp128(g, diff * diff, den))
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

/* Σ over |x| <= 40σ + 40: the omitted tail mass is below e^{-800}. */
static void dgauss_sums(double s2, double *z, double *m2)
{
    double sigma = sqrt(s2);
    int64_t lim = (int64_t)(40.0 * sigma) + 40;
    double zz = 1.0, mm = 0.0;
    for (int64_t x = lim; x >= 1; x--) {   /* small terms first */
        double w = exp(-(double)x * (double)x / (2.0 * s2));
        zz += 2.0 * w;
        mm += 2.0 * (double)x * (double)x * w;
    }
    *z = zz;
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
