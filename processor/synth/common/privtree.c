/* privtree.c — see privtree.h. */
#include "synth/common/privtree.h"

#include "core/dp_error.h"

#include <math.h>

#define GRID ((double)(1 << DP_PRIVTREE_GRID_BITS))
#define VALUE_LIMIT 1e12   /* |base|, |delta| clamp before scaling: int64 room for c·S and the noise */

int dp_privtree_prepare(dp_privtree *p, double epsilon, double theta, uint32_t max_depth, char *errstr,
                        size_t errstr_size)
{
    p->epsilon = epsilon;
    p->max_depth = max_depth;
    p->lambda = 3.0 / epsilon;   /* (2β−1)/((β−1)ε), β = 2 */
    char why[256] = "";
    int rc;
    if (!(epsilon > 0) || dp_rational_from_double_up(p->lambda * GRID, &p->scale) != DP_OK ||
        (rc = dp_dlap_prepare(&p->noise, p->scale, why, sizeof why)) != DP_OK)
        return dp_err(errstr, errstr_size, DP_ERANGE, "PrivTree noise scale %g out of range%s%s", p->lambda,
                      why[0] ? ": " : "", why);
    p->delta_grid = (int64_t)ceil(p->lambda * log(2.0) * GRID);   /* δ = λ·ln β */
    p->theta_grid = (int64_t)llround(theta * GRID);
    return DP_OK;
}

int dp_privtree_split(const dp_privtree *p, double base, int64_t delta, uint32_t depth, dp_drbg *g)
{
    if (depth >= p->max_depth)
        return 0;
    base = base > VALUE_LIMIT ? VALUE_LIMIT : base < -VALUE_LIMIT ? -VALUE_LIMIT : base;
    delta = delta > (int64_t)VALUE_LIMIT ? (int64_t)VALUE_LIMIT : delta < -(int64_t)VALUE_LIMIT ? -(int64_t)VALUE_LIMIT : delta;
    int64_t c = (int64_t)floor(base * GRID) + delta * (int64_t)GRID;
    int64_t b = c - (int64_t)depth * p->delta_grid;
    if (b < p->theta_grid - p->delta_grid)
        b = p->theta_grid - p->delta_grid;
    return b + dp_dlap_sample(&p->noise, g) > p->theta_grid;
}
