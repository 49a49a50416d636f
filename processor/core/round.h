/* round.h — systematic rounding: n whole items spread over cells in
 * proportion to non-negative weights, exactly n in total, each cell its
 * expected share rounded up or down.  `marginal` turns fitted tables into
 * rows with it, `spatial` its leaves' values into points. */
#ifndef DP_CORE_ROUND_H
#define DP_CORE_ROUND_H

#include <stdint.h>

#include "core/drbg.h"

/* One uniform offset U from g; cell i gets floor(S_i + U) - floor(S_{i-1} + U)
 * where S is the running sum of n·w/Σw.  Negative and non-finite weights
 * count as 0; with no positive weight the n items are spread evenly.
 * Post-processing only: no privacy cost. */
void dp_round_systematic(const double *w, uint64_t c, uint64_t n, dp_drbg *g, uint64_t *out);

#endif
