/* counter_sqrt.c — sqrt(T): the square-root factorization counter
 * (Fichtenberger, Henzinger, Upadhyay, "Constant matters: fine-grained
 * error bound on differentially private continual observation", ICML 2023).
 *
 * The prefix-sum matrix A (lower-triangular ones) factors as A = L·R with
 * L = R = A^{1/2}, the lower-triangular Toeplitz matrix of
 *   c_0 = 1,  c_k = C(2k,k)/4^k = c_{k-1}·(2k-1)/(2k)
 * (the power series of (1-X)^{-1/2}; Σ_{j<=k} c_j c_{k-j} = 1).  The
 * continuous mechanism releases A x + L z = L (R x + z).
 *
 * Lattice version with exact privacy.  Quantise R, not L:
 *   r̂_k = round(2^g · c_k)  (integers, r̂_0 = Q = 2^g, all >= 0),
 *   w   = R̂ x + z,  z iid exact N_Z(σ_z²) (ρ-zCDP) or DLap(b) (ε-DP).
 * R̂ x is an integer vector for integer x, and one entry changing by Δ
 * moves it by Δ·(column of R̂); the longest column is (r̂_0..r̂_{T-1}), so
 *   ℓ2² = Σ_{k<T} r̂_k²,  ℓ1 = Σ_{k<T} r̂_k   (lattice units)
 * and σ_z² = entries·Δ²·ℓ2²/(2ρ), b = entries·Δ·ℓ1/ε make w exactly
 * ρ-zCDP / ε-DP (CKS 2020; for entries = 2 the two changes have opposite
 * signs and R̂ >= 0, so the ℓ2 cross term is <= 0; ℓ1 by the triangle
 * inequality).  Pure ε is supported — it is the Laplace mechanism on R̂ x —
 * but is a poor choice: ℓ1 grows like 2·sqrt(T/π).
 * The output is a function of w alone (post-processing):
 *   u = R̂^{-1} w = x + R̂^{-1} z,  y_t = round_rand(Σ_{s<=t} u_s),
 * with R̂^{-1} applied by forward substitution in fixed point (F = 32
 * fractional bits, floor at each step).  Only R̂'s sensitivity matters;
 * quantising L and R independently would NOT be private: L̂R̂ != A, and
 * the released lattice coset would then depend on the data.
 *
 * Implementation of the decoder without storing x or w: with d_s =
 * 2^F·u_s - 2^F·x_s (the fixed-point noise estimate),
 *   2^F w_t - Σ_{j>=1} r̂_j (2^F x_{t-j} + d_{t-j}) = Q·2^F x_t + 2^F z_t - Σ_{j>=1} r̂_j d_{t-j}
 * is an exact integer identity, so d_t = floor((2^F z_t - Σ_{j>=1} r̂_j d_{t-j})/Q)
 * gives bit for bit the decoder's output on w (it stays post-processing).
 *
 * Error at t: y_t - S_t = N_t + β_t + e_t with N_t = (1/Q)Σ_{j<t} l̂_j z_{t-j},
 * l̂ = coefficients of A (R̂/Q)^{-1} (prefix sums of the inverse power
 * series), |β_t| <= 2^-F Σ_{j<t} |l̂_j| (floor errors through the same
 * filter) and the randomized rounding e_t; variance() returns the bound
 * (sqrt(Var N_t) + β_t)² + 1/4 (counter_factor.h), so variance_is_exact = 0
 * (it overstates the true MSE by at most 1/4 + O(β)).  The l̂ table is built
 * lazily, O(t²) once for the largest t asked.
 *
 * Lattice scale g: chosen from the configuration so that σ_z² = Q²σ² <= 2^38
 * (b <= 2^38), g in [8, 20]; stated in the snapshot-independent config.
 * Memory O(T) (the r̂ table, the noise history d and the input history for
 * tracing); time O(t) per step (one convolution), O(T²) per stream —
 * use blt for long horizons.  Horizon <= 2^24, |x| <= 2^24 (DP_EINVAL). */
#include "core/counter_factor.h"
#include "core/dp_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SQRT_FRAC_BITS 32u

typedef struct sqrt_state {
    uint64_t    T;
    unsigned    g;            /* Q = 2^g */
    int64_t    *r;            /* r̂_k, k < T */
    int64_t    *d;            /* d_s, s < t */
    int64_t    *x;            /* inputs (for dp_counter_trace_noised only) */
    int64_t     S;            /* Σ x */
    dp_i128     D;            /* Σ d */
    dp_fac_noise noise;
    double      l2sq, l1;     /* Σ r̂², Σ r̂ (lattice units) */
    /* lazy tables for variance(): k = (R̂/Q)^{-1} coefficients, prefix sums */
    uint64_t    nvar;
    double     *k, *lsq, *labs;
    double      lrun;
} sqrt_state;

/* c_k = C(2k,k)/4^k for k < n. */
void dp_sqrt_coeffs(double *c, uint64_t n)
{
    if (n)
        c[0] = 1.0;
    for (uint64_t k = 1; k < n; k++)
        c[k] = c[k - 1] * (double)(2 * k - 1) / (double)(2 * k);
}

static void sqrt_fini(dp_counter *c)
{
    sqrt_state *s = c->impl;
    if (!s)
        return;
    free(s->r);
    free(s->d);
    free(s->x);
    free(s->k);
    free(s->lsq);
    free(s->labs);
    free(s);
    c->impl = NULL;
}

static int sqrt_init(dp_counter *c, char *errstr, size_t errstr_size)
{
    uint64_t T = c->cfg.horizon;
    if (T > DP_FACTOR_MAX_HORIZON)
        return dp_err(errstr, errstr_size, DP_EINVAL, "counter sqrt: horizon %llu above 2^24",
                      (unsigned long long)T);
    sqrt_state *s = calloc(1, sizeof *s);
    if (!s)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    c->impl = s;
    s->T = T;
    s->r = malloc(T * sizeof *s->r);
    s->d = malloc(T * sizeof *s->d);
    s->x = malloc(T * sizeof *s->x);
    double *cc = malloc(T * sizeof *cc);
    if (!s->r || !s->d || !s->x || !cc) {
        free(cc);
        sqrt_fini(c);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    }
    dp_sqrt_coeffs(cc, T);
    double ent = (double)c->cfg.neighbor_entries, delta = (double)c->cfg.max_abs_change;
    double sum1 = 0, sum2 = 0;
    for (uint64_t k = 0; k < T; k++) {
        sum1 += cc[k];
        sum2 += cc[k] * cc[k];
    }
    double unit = c->cfg.budget.model == DP_PRIVACY_ZCDP
                      ? ent * delta * delta * sum2 / (2.0 * c->cfg.budget.value)
                      : ent * delta * sum1 / c->cfg.budget.value;
    s->g = dp_fac_scale_bits(c->cfg.budget.model, unit, 8, 20);
    double Q = ldexp(1.0, (int)s->g);
    unsigned __int128 e2 = 0, e1 = 0;
    for (uint64_t k = 0; k < T; k++) {
        s->r[k] = (int64_t)llround(Q * cc[k]);
        e1 += (unsigned __int128)s->r[k];
        e2 += (unsigned __int128)s->r[k] * (unsigned __int128)s->r[k];
    }
    free(cc);
    s->l1 = (double)e1;
    s->l2sq = (double)e2;
    /* entries: ℓ1 by the triangle inequality, ℓ2² by the non-positive
     * cross term of two opposite-sign changes on a non-negative R̂. */
    int rc = dp_fac_noise_calibrate(c, ent * delta * s->l1, ent * delta * delta * s->l2sq, &s->noise,
                                    errstr, errstr_size);
    if (rc != DP_OK) {
        sqrt_fini(c);
        return rc;
    }
    return DP_OK;
}

static int sqrt_add(dp_counter *c, int64_t x, int64_t *out)
{
    sqrt_state *s = c->impl;
    if (x > DP_FACTOR_MAX_INPUT || x < -DP_FACTOR_MAX_INPUT)
        return DP_EINVAL;
    uint64_t t = c->t + 1, i = c->t;
    if (c->trace) {
        /* The noised quantity of step t: (R̂ x)_t. */
        dp_i128 rx = (dp_i128)s->r[0] * x;
        for (uint64_t j = 1; j <= i; j++)
            rx += (dp_i128)s->r[j] * s->x[i - j];
        dp_counter_trace_noised(c, t, "w", (int64_t)rx);
    }
    int64_t z = dp_fac_noise_draw(c, &s->noise, t);
    dp_i128 acc = (dp_i128)z * ((dp_i128)1 << SQRT_FRAC_BITS);
    const int64_t *r = s->r, *d = s->d;
    for (uint64_t j = 1; j <= i; j++)
        acc -= (dp_i128)r[j] * d[i - j];
    dp_i128 dt = dp_fac_floor_shift(acc, s->g);
    if (dt > INT64_MAX || dt < INT64_MIN)
        return DP_ERANGE;
    dp_i128 D = s->D + dt;
    int64_t S;
    if (__builtin_add_overflow(s->S, x, &S))
        return DP_ERANGE;
    int64_t y;
    int rc = dp_fac_round(c, t, D + (dp_i128)S * ((dp_i128)1 << SQRT_FRAC_BITS), SQRT_FRAC_BITS, &y);
    if (rc != DP_OK)
        return rc;
    s->d[i] = (int64_t)dt;
    s->x[i] = x;
    s->D = D;
    s->S = S;
    *out = y;
    return DP_OK;
}

/* Extend the l̂ tables to n coefficients: k = (R̂/Q)^{-1} by forward
 * substitution, l̂_j = Σ_{i<=j} k_i, lsq/labs their running Σ l̂² / Σ|l̂|. */
static int sqrt_extend(sqrt_state *s, uint64_t n)
{
    if (n <= s->nvar)
        return DP_OK;
    if (!s->k) {
        s->k = malloc(s->T * sizeof *s->k);
        s->lsq = malloc(s->T * sizeof *s->lsq);
        s->labs = malloc(s->T * sizeof *s->labs);
        if (!s->k || !s->lsq || !s->labs)
            return DP_ENOMEM;
    }
    double Q = ldexp(1.0, (int)s->g);
    for (uint64_t j = s->nvar; j < n; j++) {
        double acc = j == 0 ? 1.0 : 0.0;
        for (uint64_t i = 1; i <= j; i++)
            acc -= ((double)s->r[i] / Q) * s->k[j - i];
        s->k[j] = acc;
        s->lrun += acc;          /* l̂_j = Σ_{i<=j} k_i */
        double l = s->lrun;
        s->lsq[j] = (j ? s->lsq[j - 1] : 0.0) + l * l;
        s->labs[j] = (j ? s->labs[j - 1] : 0.0) + fabs(l);
    }
    s->nvar = n;
    return DP_OK;
}

static double sqrt_variance(const dp_counter *c, uint64_t t)
{
    sqrt_state *s = c->impl;
    if (sqrt_extend(s, t) != DP_OK)
        return NAN;
    double Q = ldexp(1.0, (int)s->g);
    double var = s->noise.var * s->lsq[t - 1] / (Q * Q);
    double beta = s->labs[t - 1] * ldexp(1.0, -(int)SQRT_FRAC_BITS);
    return dp_fac_mse_bound(var, beta);
}

static int sqrt_sensitivity(const dp_counter *c, double *l1, double *l2sq)
{
    const sqrt_state *s = c->impl;
    double Q = ldexp(1.0, (int)s->g);
    *l1 = s->l1 / Q;
    *l2sq = s->l2sq / (Q * Q);
    return DP_OK;
}

static int sqrt_save(const dp_counter *c, dp_buf *b)
{
    const sqrt_state *s = c->impl;
    dp_buf_put_u32(b, s->g);
    dp_buf_put_i64(b, s->S);
    dp_fac_put_i128(b, s->D);
    for (uint64_t i = 0; i < c->t; i++) {
        dp_buf_put_i64(b, s->d[i]);
        dp_buf_put_i64(b, s->x[i]);
    }
    return dp_buf_status(b);
}

static int sqrt_load(dp_counter *c, dp_reader *r)
{
    sqrt_state *s = c->impl;
    if (dp_reader_u32(r) != s->g)
        return DP_ECORRUPT;
    s->S = dp_reader_i64(r);
    s->D = dp_fac_get_i128(r);
    for (uint64_t i = 0; i < c->t; i++) {
        s->d[i] = dp_reader_i64(r);
        s->x[i] = dp_reader_i64(r);
    }
    return dp_reader_status(r);
}

unsigned dp_sqrt_lattice_bits(const dp_counter *c)
{
    return c->cfg.kind == DP_COUNTER_SQRT ? ((const sqrt_state *)c->impl)->g : 0;
}

const dp_counter_ops dp_counter_ops_sqrt = {
    .kind = DP_COUNTER_SQRT,
    .bounded = 1,
    .supports_pure = 1,
    .supports_zcdp = 1,
    .exact_variance = 0,
    .init = sqrt_init,
    .add = sqrt_add,
    .variance = sqrt_variance,
    .sensitivity = sqrt_sensitivity,
    .save = sqrt_save,
    .load = sqrt_load,
    .fini = sqrt_fini,
};
