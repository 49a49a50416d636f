/* round.c — see round.h. */
#include "core/round.h"

#include <math.h>

void dp_round_systematic(const double *w, uint64_t c, uint64_t n, dp_drbg *g, uint64_t *out)
{
    /* Weights are scaled by their largest value first: a restored or fitted
     * vector near DBL_MAX would otherwise overflow the sum (and w·n) to inf
     * and the shares to NaN. Non-positive and non-finite weights count as 0;
     * with no positive weight the n rows are spread evenly. */
    double top = 0, sum = 0, s = 0;
    for (uint64_t i = 0; i < c; i++)
        if (w[i] > top && isfinite(w[i]))
            top = w[i];
    for (uint64_t i = 0; i < c && top > 0; i++)
        sum += w[i] > 0 && isfinite(w[i]) ? w[i] / top : 0;
    double u = (double)(dp_drbg_u64(g) >> 11) * 0x1.0p-53;
    uint64_t given = 0;
    for (uint64_t i = 0; i < c; i++) {
        double prev = floor(s + u);
        double share = sum > 0 ? (w[i] > 0 && isfinite(w[i]) ? w[i] / top : 0) / sum : 1.0 / (double)c;
        s += share * (double)n;
        /* the last cell takes what is left: the total is n whatever the rounding of s */
        double step = floor(s + u) - prev;
        uint64_t k = i + 1 == c ? n - given : step > 0 && step < (double)(n - given) ? (uint64_t)step
                                                          : step > 0 ? n - given : 0;
        out[i] = k;
        given += k;
    }
}
