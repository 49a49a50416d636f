/* simplex.c — see simplex.h. */
#include "core/simplex.h"

#include "core/dp_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

int dp_project_simplex(double *v, uint64_t n, double total)
{
    if (n == 0)
        return DP_OK;
    if (!v)
        return DP_EINVAL;
    if (!(total > 0) || !isfinite(total)) {
        memset(v, 0, n * sizeof *v);
        return DP_OK;
    }
    double *s = malloc(n * sizeof *s);
    if (!s)
        return DP_ENOMEM;
    for (uint64_t i = 0; i < n; i++)
        s[i] = isfinite(v[i]) ? v[i] : -INFINITY;
    qsort(s, n, sizeof *s, desc);
    /* Duchi et al. Fig. 1: ρ = the largest k with s_k − (Σ_{i≤k} s_i − total)/k > 0,
     * δ = (Σ_{i≤ρ} s_i − total)/ρ.  The condition holds for k = 1 (s_1 − (s_1 −
     * total) = total > 0) and, once false, stays false: one pass from the top. */
    double run = 0, delta = s[0] - total;
    for (uint64_t k = 0; k < n && isfinite(s[k]); k++) {
        double d = (run + s[k] - total) / (double)(k + 1);
        if (!(s[k] > d))
            break;
        run += s[k];
        delta = d;
    }
    free(s);
    for (uint64_t i = 0; i < n; i++)
        v[i] = isfinite(v[i]) && v[i] > delta ? v[i] - delta : 0;
    return DP_OK;
}
