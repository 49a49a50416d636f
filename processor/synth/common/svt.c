/* svt.c — see svt.h. */
#include "synth/common/svt.h"

#include "core/dp_error.h"

#include <math.h>

static int prepare(dp_dlap *d, dp_rational *q, double scale, char *errstr, size_t errstr_size)
{
    char why[256] = "";
    if (!(scale > 0) || dp_rational_from_double_up(scale, q) != DP_OK || dp_dlap_prepare(d, *q, why, sizeof why))
        return dp_err(errstr, errstr_size, DP_ERANGE, "sparse vector noise scale %g out of range%s%s", scale,
                      why[0] ? ": " : "", why);
    return DP_OK;
}

int dp_svt_prepare(dp_svt *s, double eps1, uint64_t c, uint64_t C, int64_t delta, int64_t clip_hi, int paper,
                   char *errstr, size_t errstr_size)
{
    *s = (dp_svt){.paper = paper, .delta = delta, .clip_hi = clip_hi};
    int rc;
    if (paper) {
        /* the published scales (Alg. 1 lines 2 and 7) */
        if ((rc = prepare(&s->rho_noise, &s->rho_scale, 2.0 * (double)delta / eps1, errstr, errstr_size)) ||
            (rc = prepare(&s->query_noise, &s->query_scale, 4.0 * (double)C * (double)delta / eps1, errstr,
                          errstr_size)))
            return rc;
        return DP_OK;
    }
    /* Lyu, Su, Li 2017 Thm 4's optimal split for c positives */
    double ratio = pow(2.0 * (double)c, 2.0 / 3.0);
    s->eps_a = eps1 / (1 + ratio);
    s->eps_b = eps1 - s->eps_a;
    if ((rc = prepare(&s->rho_noise, &s->rho_scale, (double)delta / s->eps_a, errstr, errstr_size)) ||
        (rc = prepare(&s->query_noise, &s->query_scale, 2.0 * (double)c * (double)delta / s->eps_b, errstr,
                      errstr_size)))
        return rc;
    return DP_OK;
}

void dp_svt_start(dp_svt *s, int64_t T0, dp_drbg *g)
{
    int64_t n = dp_dlap_sample(&s->rho_noise, g);
    if (s->paper)
        s->noisy_threshold = T0 + n;
    else
        s->rho = n;
}

void dp_svt_move(dp_svt *s, int64_t u, int up)
{
    if (!s->paper)
        return;
    int64_t t = up ? s->noisy_threshold + u : s->noisy_threshold - u;
    s->noisy_threshold = t < 0 ? 0 : t > s->clip_hi ? s->clip_hi : t;   /* the published clip of T̃ */
}

int dp_svt_decide(const dp_svt *s, int64_t q, int64_t T, dp_drbg *g)
{
    int64_t noisy = q + dp_dlap_sample(&s->query_noise, g);
    return s->paper ? noisy >= s->noisy_threshold : noisy >= T + s->rho;
}
