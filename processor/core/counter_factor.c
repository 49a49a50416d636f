/* counter_factor.c — lattice noise, randomized rounding and the error
 * bound shared by the sqrt and blt counters (see counter_factor.h). */
#include "core/counter_factor.h"
#include "core/dp_error.h"

#include <math.h>
#include <string.h>

unsigned dp_fac_scale_bits(dp_privacy_model model, double unit, unsigned lo, unsigned hi)
{
    double top = 38.0, l = log2(unit);
    double m = model == DP_PRIVACY_ZCDP ? floor((top - l) / 2.0) : floor(top - l);
    if (!(m >= (double)lo))
        return lo;
    if (m > (double)hi)
        return hi;
    return (unsigned)m;
}

/* Round a positive double up to a rational the samplers accept: an
 * integer when large (so DGauss keeps its 2·n·d·t² <= 2^106 headroom), a
 * multiple of 2^-20 otherwise.  The 2^-40 relative margin exceeds the few
 * ulps of error of the double computation that produced v. */
static int fac_rational_up(double v, dp_rational *out)
{
    v *= 1.0 + ldexp(1.0, -40);
    if (!(v > 0) || !isfinite(v))
        return DP_ERANGE;
    if (v >= ldexp(1.0, 20)) {
        if (v >= ldexp(1.0, 62))
            return DP_ERANGE;
        out->num = (uint64_t)ceil(v);
        out->den = 1;
        return DP_OK;
    }
    return dp_rational_from_double_up(v, out);
}

int dp_fac_noise_calibrate(const dp_counter *c, double l1, double l2sq, dp_fac_noise *n,
                           char *errstr, size_t errstr_size)
{
    memset(n, 0, sizeof *n);
    n->model = c->cfg.budget.model;
    const char *name = dp_counter_kind_name(c->cfg.kind);
    if (n->model == DP_PRIVACY_PURE) {
        double b = l1 / c->cfg.budget.value;
        if (fac_rational_up(b, &n->param) != DP_OK)
            return dp_err(errstr, errstr_size, DP_ERANGE, "counter %s: Laplace scale %g out of range", name, b);
        int rc = dp_dlap_prepare(&n->dlap, n->param, errstr, errstr_size);
        if (rc != DP_OK)
            return rc;
        n->var = dp_dlap_variance(n->param);
        return DP_OK;
    }
    double s2 = l2sq / (2.0 * c->cfg.budget.value);
    if (fac_rational_up(s2, &n->param) != DP_OK)
        return dp_err(errstr, errstr_size, DP_ERANGE, "counter %s: Gaussian variance %g out of range", name, s2);
    int rc = dp_dgauss_prepare(&n->dgauss, n->param, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    /* Poisson summation: Var N_Z(σ²) = σ²(1 - O(σ² e^{-2π²σ²})), below one
     * ulp of σ² once σ² >= 64, so the (slow, O(σ)) exact sum is skipped. */
    double v = dp_rational_to_double(n->param);
    n->var = v >= 64.0 ? v : dp_dgauss_variance(n->param);
    return DP_OK;
}

int64_t dp_fac_noise_draw(const dp_counter *c, const dp_fac_noise *n, uint64_t step)
{
    dp_drbg g;
    dp_counter_drbg(c, &g, step, "z");
    int64_t z = n->model == DP_PRIVACY_PURE ? dp_dlap_sample(&n->dlap, &g)
                                            : dp_dgauss_sample(&n->dgauss, &g);
    dp_drbg_wipe(&g);
    return z;
}

int dp_fac_round(const dp_counter *c, uint64_t step, dp_i128 v, unsigned shift, int64_t *out)
{
    dp_i128 fl = dp_fac_floor_shift(v, shift);
    uint64_t frac = (uint64_t)(v - fl * ((dp_i128)1 << shift));
    int bit = 0;
    if (frac) {
        dp_drbg g;
        dp_counter_drbg(c, &g, step, "round");
        int rc = dp_sample_bernoulli(&g, frac, (uint64_t)1 << shift, &bit);
        dp_drbg_wipe(&g);
        if (rc != DP_OK)
            return rc;
    }
    fl += bit;
    if (fl > INT64_MAX || fl < INT64_MIN)
        return DP_ERANGE;
    *out = (int64_t)fl;
    return DP_OK;
}

double dp_fac_mse_bound(double var, double beta)
{
    double s = sqrt(var) + beta;
    return s * s + 0.25;
}

void dp_fac_put_i128(dp_buf *b, dp_i128 v)
{
    unsigned __int128 u = (unsigned __int128)v;
    dp_buf_put_u64(b, (uint64_t)u);
    dp_buf_put_u64(b, (uint64_t)(u >> 64));
}

dp_i128 dp_fac_get_i128(dp_reader *r)
{
    uint64_t lo = dp_reader_u64(r), hi = dp_reader_u64(r);
    return (dp_i128)(((unsigned __int128)hi << 64) | lo);
}
