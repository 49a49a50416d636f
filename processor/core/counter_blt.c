/* counter_blt.c — blt(T, d): buffered linear Toeplitz factorization
 * (Dvijotham, McMahan, Pillutla, Steinke, Thakurta, "Efficient and
 * near-optimal noise generation for streaming differential privacy",
 * FOCS 2024; jax_privacy's buffered_toeplitz).
 *
 * Factorization.  A = L·R with R = Toeplitz(r) a BLT matrix,
 *   r(X) = 1 + Σ_{i<d} ω_i X/(1 - θ_i X):  r_0 = 1, r_k = Σ_i ω_i θ_i^{k-1},
 * and L = A R^{-1}.  R x and R^{-1} w are both computed with d buffers:
 *   (R v)_t      = v_t + Σ_i ω_i B_i(t),  B_i(t) = θ_i B_i(t-1) + v_{t-1};
 *   (R^{-1} w)_t = u_t = w_t - Σ_i ω_i B_i(t) with B fed by u (feedback),
 * so every step costs O(d) time and the mechanism keeps O(d) state.
 *
 * Parameters for horizon T (dp_blt_fit, computed in counter_blt_fit.c,
 * not pasted).  The
 * square-root coefficients c_k = C(2k,k)/4^k are the moments of the
 * arcsine law, c_k = ∫_0^1 θ^k dμ(θ), dμ = dθ/(π sqrt(θ(1-θ))), so a
 * positive quadrature of μ gives a sum of geometric sequences with
 * positive weights: we put d nodes equally spaced in log(1-θ) between
 * log(1-θ_max) and log(1-θ_min), give node i the exact μ-mass of its cell
 * (F(θ) = (2/π) asin sqrt θ, cells split at the midpoints in log(1-θ)),
 * and set ω_i = λ·mass_i·θ_i.  The three numbers (θ_min, θ_max, λ) are
 * then chosen by coordinate search to minimise the exact objective
 * sens²(R)·max_t ‖row_t(L)‖² (the max-over-t variance at a fixed privacy
 * cost), evaluated in O(T·d) by the two recursions above.  Positivity of
 * ω, θ makes R >= 0 entrywise (used for entries = 2 below).
 *
 * Privacy, exact on the lattice (the argument of counter_sqrt.c, with a
 * rounding term).  θ, ω are quantised to θ̂ = Θ/2^32, ω̂ = Ω/2^32 and
 * everything below is for R̂ = BLT(θ̂, ω̂).  The encoder computes the integer
 *   f_t = M x_t + floor(Σ_i Ω_i B_i(t) / 2^(32+G)),
 *   B_i(t) = floor(Θ_i B_i(t-1) / 2^32) + (M x_{t-1}) 2^G      (G = 20)
 * from x alone, M = 2^m.  Each floor errs by < 1 unit and B_i's errors
 * decay by θ̂_i, so |f_t - M (R̂ x)_t| <= e_f = 1 + 2^-G Σ_i ω̂_i/(1-θ̂_i)
 * for EVERY x.  For neighbours (one entry changed by <= Δ; two with
 * opposite signs for entries = 2), f_t = f'_t for t before the change and
 *   ‖f - f'‖₂ <= M Δ sqrt(entries) ‖r̂‖₂ + 2 e_f sqrt(T)
 *   ‖f - f'‖₁ <= M Δ entries ‖r̂‖₁ + 2 e_f T
 * (R̂ >= 0 makes the ℓ2 cross term of opposite-sign changes <= 0), with
 * ‖r̂‖₂² = Σ_{k<T} r̂_k² the largest column norm of R̂.  w = f + z with z iid
 * exact N_Z(‖f-f'‖₂²/(2ρ)) or DLap(‖f-f'‖₁/ε) is therefore exactly
 * ρ-zCDP / ε-DP whatever f's rounding does, and the output is a function
 * of w only: the decoder (fixed point, G fractional bits, floors) computes
 * Y_t = Σ_{s<=t} u_s ≈ 2^G (A R̂^{-1} w)_t and releases
 * round_rand(Y_t / 2^(m+G)).  Spends exactly the configured budget over
 * the horizon T (the accounting is for T even though BLT could run on).
 *
 * Error at t (counter_factor.h): N_t = (1/M) Σ_{j<t} l̂_j z_{t-j} with
 * l̂ = coefficients of A R̂^{-1}; β_t = (Σ_{j<t}|l̂_j|)(e_f + 2^-G(1 + Σ_i
 * ω̂_i/(1-θ̂_i)))/M bounds the encoder's and the decoder's rounding (both
 * reach the output through A R̂^{-1}); variance() returns
 * (sqrt(Var N_t) + β_t)² + 1/4, a bound (variance_is_exact = 0).
 *
 * Memory O(d) for the mechanism (variance() builds an O(T) table on first
 * use); time O(d) per step plus O(T·d·iterations) once at creation for the
 * fit.  d = cfg.buffers, default 6, at most 16.  Horizon <= 2^24 and
 * |x| <= 2^24 (DP_EINVAL), which keeps all 128-bit intermediates below
 * 2^125. */
#include "core/counter_blt.h"
#include "core/counter_factor.h"
#include "core/dp_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BLT_PARAM_BITS 32u
#define BLT_G 20u

typedef struct blt_state {
    uint64_t T;
    unsigned d, m;
    int64_t  Th[DP_BLT_MAX_BUFFERS], Om[DP_BLT_MAX_BUFFERS];  /* Θ_i, Ω_i */
    double   e_f, e_dec;          /* encoder bound; decoder injection bound */
    double   norm1, norm2;        /* ‖r̂‖₁, ‖r̂‖₂² */
    double   sens_l1, sens_l2sq;  /* lattice units, incl. entries, Δ, rounding */
    dp_fac_noise noise;
    /* encoder */
    dp_i128  fb[DP_BLT_MAX_BUFFERS];
    int64_t  xprev;
    /* decoder */
    dp_i128  ub[DP_BLT_MAX_BUFFERS];
    dp_i128  uprev, Y;
    /* lazy variance tables: Σ_{j<t} l̂_j², Σ_{j<t} |l̂_j| */
    double  *lsq, *labs;
} blt_state;

/* --- the counter ---------------------------------------------------------- */

static int blt_init(dp_counter *c, char *errstr, size_t errstr_size)
{
    uint64_t T = c->cfg.horizon;
    unsigned d = c->cfg.buffers ? c->cfg.buffers : DP_BLT_DEFAULT_BUFFERS;
    if (T > DP_FACTOR_MAX_HORIZON)
        return dp_err(errstr, errstr_size, DP_EINVAL, "counter blt: horizon %llu above 2^24",
                      (unsigned long long)T);
    if (d > DP_BLT_MAX_BUFFERS)
        return dp_err(errstr, errstr_size, DP_EINVAL, "counter blt: buffers d = %u, must be 1..%u",
                      d, DP_BLT_MAX_BUFFERS);
    blt_state *s = calloc(1, sizeof *s);
    if (!s)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    c->impl = s;
    s->T = T;
    s->d = d;
    double th[DP_BLT_MAX_BUFFERS], om[DP_BLT_MAX_BUFFERS];
    dp_blt_fit(T, d, th, om);
    double q = ldexp(1.0, (int)BLT_PARAM_BITS), sum_w = 0;
    for (unsigned i = 0; i < d; i++) {
        int64_t Th = llround(th[i] * q), Om = llround(om[i] * q);
        if (Th < 1)
            Th = 1;
        if (Th > (int64_t)q - 1)
            Th = (int64_t)q - 1;
        if (Om < 0)
            Om = 0;
        s->Th[i] = Th;
        s->Om[i] = Om;
        th[i] = (double)Th / q;
        om[i] = (double)Om / q;
        sum_w += om[i] / (1.0 - th[i]);
    }
    /* ‖r̂‖₁, ‖r̂‖₂² over the horizon for the quantised parameters. */
    double pw[DP_BLT_MAX_BUFFERS];
    for (unsigned i = 0; i < d; i++)
        pw[i] = 1.0;
    s->norm1 = 1.0;
    s->norm2 = 1.0;
    for (uint64_t k = 1; k < T; k++) {
        double r = 0;
        for (unsigned i = 0; i < d; i++) {
            r += om[i] * pw[i];
            pw[i] *= th[i];
        }
        s->norm1 += r;
        s->norm2 += r * r;
    }
    s->e_f = 1.0 + ldexp(sum_w, -(int)BLT_G);
    s->e_dec = ldexp(1.0 + sum_w, -(int)BLT_G);
    double ent = (double)c->cfg.neighbor_entries, delta = (double)c->cfg.max_abs_change;
    double unit = c->cfg.budget.model == DP_PRIVACY_ZCDP
                      ? ent * delta * delta * s->norm2 / (2.0 * c->cfg.budget.value)
                      : ent * delta * s->norm1 / c->cfg.budget.value;
    s->m = dp_fac_scale_bits(c->cfg.budget.model, unit, 8, 20);
    double M = ldexp(1.0, (int)s->m);
    double l2 = M * delta * sqrt(ent) * sqrt(s->norm2) + 2.0 * s->e_f * sqrt((double)T);
    s->sens_l2sq = l2 * l2;
    s->sens_l1 = M * delta * ent * s->norm1 + 2.0 * s->e_f * (double)T;
    int rc = dp_fac_noise_calibrate(c, s->sens_l1, s->sens_l2sq, &s->noise, errstr, errstr_size);
    if (rc != DP_OK) {
        free(s);
        c->impl = NULL;
        return rc;
    }
    return DP_OK;
}

/* Encoder: f_t from x_t (and the buffers fed with x_{t-1}). */
static dp_i128 blt_encode(blt_state *s, int64_t x)
{
    dp_i128 in = (dp_i128)s->xprev * ((dp_i128)1 << (s->m + BLT_G)), acc = 0;
    for (unsigned i = 0; i < s->d; i++) {
        s->fb[i] = dp_fac_floor_shift((dp_i128)s->Th[i] * s->fb[i], BLT_PARAM_BITS) + in;
        acc += (dp_i128)s->Om[i] * s->fb[i];
    }
    s->xprev = x;
    return (dp_i128)x * ((dp_i128)1 << s->m) + dp_fac_floor_shift(acc, BLT_PARAM_BITS + BLT_G);
}

/* Decoder: u_t = 2^G w_t - Σ ω̂_i B_i(t) (B fed with u_{t-1}); Y += u_t. */
static void blt_decode(blt_state *s, dp_i128 w)
{
    dp_i128 acc = 0;
    for (unsigned i = 0; i < s->d; i++) {
        s->ub[i] = dp_fac_floor_shift((dp_i128)s->Th[i] * s->ub[i], BLT_PARAM_BITS) + s->uprev;
        acc += (dp_i128)s->Om[i] * s->ub[i];
    }
    dp_i128 u = w * ((dp_i128)1 << BLT_G) - dp_fac_floor_shift(acc, BLT_PARAM_BITS);
    s->uprev = u;
    s->Y += u;
}

static int blt_add(dp_counter *c, int64_t x, int64_t *out)
{
    blt_state *s = c->impl;
    if (x > DP_FACTOR_MAX_INPUT || x < -DP_FACTOR_MAX_INPUT)
        return DP_EINVAL;
    uint64_t t = c->t + 1;
    blt_state saved = *s;
    dp_i128 f = blt_encode(s, x);
    dp_counter_trace_noised(c, t, "w", (int64_t)f);
    blt_decode(s, f + dp_fac_noise_draw(c, &s->noise, t));
    int rc = dp_fac_round(c, t, s->Y, s->m + BLT_G, out);
    if (rc != DP_OK) {
        *s = saved;   /* state unchanged on failure */
        return rc;
    }
    return DP_OK;
}

/* Σ_{j<t} l̂_j² and Σ_{j<t} |l̂_j| for t = 1..T, l̂ = A R̂^{-1} e_1. */
static int blt_tables(blt_state *s)
{
    if (s->lsq)
        return DP_OK;
    s->lsq = malloc(s->T * sizeof *s->lsq);
    s->labs = malloc(s->T * sizeof *s->labs);
    if (!s->lsq || !s->labs) {
        free(s->lsq);
        free(s->labs);
        s->lsq = s->labs = NULL;
        return DP_ENOMEM;
    }
    double q = ldexp(1.0, (int)BLT_PARAM_BITS), b[DP_BLT_MAX_BUFFERS] = {0};
    double kprev = 0, l = 0, a2 = 0, a1 = 0;
    for (uint64_t t = 0; t < s->T; t++) {
        double fbk = 0;
        for (unsigned i = 0; i < s->d; i++) {
            b[i] = ((double)s->Th[i] / q) * b[i] + kprev;
            fbk += ((double)s->Om[i] / q) * b[i];
        }
        double k = (t == 0 ? 1.0 : 0.0) - fbk;
        kprev = k;
        l += k;
        a2 += l * l;
        a1 += fabs(l);
        s->lsq[t] = a2;
        s->labs[t] = a1;
    }
    return DP_OK;
}

static double blt_variance(const dp_counter *c, uint64_t t)
{
    blt_state *s = c->impl;
    if (blt_tables(s) != DP_OK)
        return NAN;
    double M = ldexp(1.0, (int)s->m);
    double var = s->noise.var * s->lsq[t - 1] / (M * M);
    double beta = s->labs[t - 1] * (s->e_f + s->e_dec) / M;
    return dp_fac_mse_bound(var, beta);
}

static int blt_sensitivity(const dp_counter *c, double *l1, double *l2sq)
{
    const blt_state *s = c->impl;
    double M = ldexp(1.0, (int)s->m), T = (double)s->T;
    /* Per unit change (entries = 1, Δ = 1), including the encoder's
     * rounding allowance as calibrated. */
    double l2 = sqrt(s->norm2) + 2.0 * s->e_f * sqrt(T) / M;
    *l1 = s->norm1 + 2.0 * s->e_f * T / M;
    *l2sq = l2 * l2;
    return DP_OK;
}

static int blt_save(const dp_counter *c, dp_buf *b)
{
    const blt_state *s = c->impl;
    dp_buf_put_u32(b, s->d);
    dp_buf_put_u32(b, s->m);
    for (unsigned i = 0; i < s->d; i++) {
        dp_buf_put_i64(b, s->Th[i]);
        dp_buf_put_i64(b, s->Om[i]);
        dp_fac_put_i128(b, s->fb[i]);
        dp_fac_put_i128(b, s->ub[i]);
    }
    dp_buf_put_i64(b, s->xprev);
    dp_fac_put_i128(b, s->uprev);
    dp_fac_put_i128(b, s->Y);
    return dp_buf_status(b);
}

static int blt_load(dp_counter *c, dp_reader *r)
{
    blt_state *s = c->impl;
    /* The fit is recomputed at creation; a snapshot from a platform whose
     * floating point fitted different parameters is refused. */
    if (dp_reader_u32(r) != s->d || dp_reader_u32(r) != s->m)
        return DP_ECORRUPT;
    for (unsigned i = 0; i < s->d; i++) {
        if (dp_reader_i64(r) != s->Th[i] || dp_reader_i64(r) != s->Om[i])
            return DP_ECORRUPT;
        s->fb[i] = dp_fac_get_i128(r);
        s->ub[i] = dp_fac_get_i128(r);
    }
    s->xprev = dp_reader_i64(r);
    s->uprev = dp_fac_get_i128(r);
    s->Y = dp_fac_get_i128(r);
    if (dp_reader_status(r) != DP_OK)
        return DP_ECORRUPT;
    /* Range checks as for a fresh state, so that the next step's 128-bit
     * arithmetic cannot overflow: an input is at most DP_FACTOR_MAX_INPUT
     * (2^24), a buffer holds a geometric sum of inputs scaled by 2^(m+G)
     * with |θ| < 1 — far below 2^88, and θ̂, ω̂ < 2^33 times d <= 2^5
     * buffers of 2^88 stays below 2^127 — and Y, the running sum, must
     * round to an int64 output (|Y| < 2^(62+m+G)). */
    const dp_i128 buf_max = (dp_i128)1 << 88;
    if (s->xprev > DP_FACTOR_MAX_INPUT || s->xprev < -DP_FACTOR_MAX_INPUT || s->uprev > buf_max ||
        s->uprev < -buf_max || s->m + BLT_G > 60)
        return DP_ECORRUPT;
    for (unsigned i = 0; i < s->d; i++)
        if (s->fb[i] > buf_max || s->fb[i] < -buf_max || s->ub[i] > buf_max || s->ub[i] < -buf_max)
            return DP_ECORRUPT;
    const dp_i128 y_max = (dp_i128)1 << (62 + s->m + BLT_G);
    if (s->Y > y_max || s->Y < -y_max)
        return DP_ECORRUPT;
    return DP_OK;
}

static void blt_fini(dp_counter *c)
{
    blt_state *s = c->impl;
    if (!s)
        return;
    free(s->lsq);
    free(s->labs);
    free(s);
    c->impl = NULL;
}

int dp_blt_params(const dp_counter *c, unsigned *d, double *theta, double *omega,
                  unsigned *m, double *e_f)
{
    if (c->cfg.kind != DP_COUNTER_BLT)
        return DP_EINVAL;
    const blt_state *s = c->impl;
    double q = ldexp(1.0, (int)BLT_PARAM_BITS);
    *d = s->d;
    for (unsigned i = 0; i < s->d; i++) {
        theta[i] = (double)s->Th[i] / q;
        omega[i] = (double)s->Om[i] / q;
    }
    *m = s->m;
    *e_f = s->e_f;
    return DP_OK;
}

int dp_blt_decode_only(const dp_counter *c, const int64_t *z, uint64_t n, double *out)
{
    if (c->cfg.kind != DP_COUNTER_BLT)
        return DP_EINVAL;
    blt_state s = *(const blt_state *)c->impl;
    memset(s.ub, 0, sizeof s.ub);
    s.uprev = s.Y = 0;
    s.lsq = s.labs = NULL;
    for (uint64_t t = 0; t < n; t++) {
        blt_decode(&s, z[t]);
        out[t] = ldexp((double)s.Y, -(int)(s.m + BLT_G));
    }
    return DP_OK;
}

static int blt_prepare_horizons(const dp_counter_config *cfg, uint64_t max_horizon)
{
    unsigned d = cfg->buffers ? cfg->buffers : DP_BLT_DEFAULT_BUFFERS;
    if (d > DP_BLT_MAX_BUFFERS || max_horizon > DP_FACTOR_MAX_HORIZON)
        return DP_OK;   /* blt_init refuses it, with the reason */
    return dp_blt_fit_horizons(max_horizon, d);
}

const dp_counter_ops dp_counter_ops_blt = {
    .kind = DP_COUNTER_BLT,
    .bounded = 1,
    .supports_pure = 1,
    .supports_zcdp = 1,
    .exact_variance = 0,
    .init = blt_init,
    .add = blt_add,
    .variance = blt_variance,
    .sensitivity = blt_sensitivity,
    .save = blt_save,
    .load = blt_load,
    .fini = blt_fini,
    .prepare_horizons = blt_prepare_horizons,
};
