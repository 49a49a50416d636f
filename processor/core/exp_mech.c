/* exp_mech.c — see exp_mech.h for the method and its exactness argument. */
#include "core/exp_mech.h"

#include "core/dp_error.h"
#include "core/sample.h"

#include <math.h>

#define EPS_DEN_BITS 20
#define GAMMA_MAX_BITS 20   /* γ <= 2^20: dp_sample_bernoulli_exp's range */

int dp_exp_mech_prepare(dp_exp_mech *m, double epsilon, uint64_t delta_u, char *errstr, size_t errstr_size)
{
    if (!(epsilon >= ldexp(1.0, -EPS_DEN_BITS)) || !(epsilon <= ldexp(1.0, 20)))
        return dp_err(errstr, errstr_size, DP_ERANGE, "exponential mechanism: ε = %g outside [2^-20, 2^20]",
                      epsilon);
    if (delta_u < 1 || delta_u > DP_EXP_MECH_MAX_DELTA)
        return dp_err(errstr, errstr_size, DP_ERANGE,
                      "exponential mechanism: utility sensitivity %llu grid units outside [1, 2^21]",
                      (unsigned long long)delta_u);
    m->eps_num = (uint64_t)floor(ldexp(epsilon, EPS_DEN_BITS));
    m->delta_u = delta_u;
    m->epsilon = ldexp((double)m->eps_num, -EPS_DEN_BITS);
    return DP_OK;
}

static int utilities_in_range(const int64_t *u, size_t n, int64_t *umax)
{
    if (n == 0)
        return 0;
    *umax = u[0];
    for (size_t i = 0; i < n; i++) {
        if (u[i] > DP_EXP_MECH_MAX_UTILITY || u[i] < -DP_EXP_MECH_MAX_UTILITY)
            return 0;
        if (u[i] > *umax)
            *umax = u[i];
    }
    return 1;
}

int dp_exp_mech_select(const dp_exp_mech *m, dp_drbg *g, const int64_t *utility, size_t n, size_t *chosen)
{
    int64_t umax;
    if (!utilities_in_range(utility, n, &umax))
        return DP_ERANGE;
    /* γ_i = eps_num·(U_max - U_i) / (2^21 · ΔU): denominator <= 2^42, and
     * for γ <= 2^20 the numerator is <= 2^62 — both inside
     * dp_sample_bernoulli_exp's range (d <= 2^62, n/d <= 2^20). */
    const unsigned __int128 den = (unsigned __int128)m->delta_u << (EPS_DEN_BITS + 1);
    for (;;) {
        size_t i = (size_t)dp_drbg_uniform(g, n);
        unsigned __int128 num = (unsigned __int128)m->eps_num * (uint64_t)(umax - utility[i]);
        if (num > (den << GAMMA_MAX_BITS))
            continue;   /* weight < e^{-2^20}: see the header */
        int accept = 0;
        int rc = dp_sample_bernoulli_exp(g, (uint64_t)num, (uint64_t)den, &accept);
        if (rc != DP_OK)
            return rc;
        if (accept) {
            *chosen = i;
            return DP_OK;
        }
    }
}

int dp_exp_mech_probabilities(const dp_exp_mech *m, const int64_t *utility, size_t n, double *p)
{
    int64_t umax;
    if (!utilities_in_range(utility, n, &umax))
        return DP_ERANGE;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        p[i] = exp(-m->epsilon * (double)(umax - utility[i]) / (2.0 * (double)m->delta_u));
        sum += p[i];
    }
    for (size_t i = 0; i < n; i++)
        p[i] /= sum;
    return DP_OK;
}
