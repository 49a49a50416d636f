/* numfmt.c — see numfmt.h. */
#include "core/numfmt.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

size_t dp_fmt_double(double v, char *out, size_t out_size)
{
    if (out_size == 0)
        return 0;
    if (!isfinite(v)) {
        int n = snprintf(out, out_size, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        return n < 0 ? 0 : (size_t)n;
    }
    /* A (normal) double has 15.95 significant decimal digits.  If its shortest
     * round-trip form has k <= 15 digits, then rounding the double to 15
     * digits gives exactly that form (the double lies within half an ulp,
     * ~1.1e-16 relative, of it, far inside half a 15-digit step, >= 5e-16
     * relative), and %g drops the padding zeros: so %.15g either is the
     * shortest form or does not round-trip, and then 16 or 17 digits are
     * needed.  Three tries at most instead of seventeen: record
     * coordinates, the bulk of a spatial release, mostly need 16-17.
     * Subnormals have fewer digits of precision, so the argument fails for
     * them: they (rare) try every precision. */
    int first = fabs(v) < DBL_MIN ? 1 : 15;
    for (int p = first; p <= 17; p++) {
        int n = snprintf(out, out_size, "%.*g", p, v);
        if (n < 0)
            return 0;
        if (p == 17 || strtod(out, NULL) == v)
            return (size_t)n < out_size ? (size_t)n : out_size - 1;
    }
    return 0;   /* not reached */
}
