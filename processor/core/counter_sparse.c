/* PLACEHOLDER-REPLACE: being implemented. */
#include "core/counter_impl.h"
#include "core/dp_error.h"
static int ph_init(dp_counter *c, char *e, size_t n) { return dp_err(e, n, DP_EINVAL, "counter sparse not built yet"); }
const dp_counter_ops dp_counter_ops_sparse = { .init = ph_init };
