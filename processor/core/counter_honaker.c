/* PLACEHOLDER-REPLACE: being implemented. */
#include "core/counter_impl.h"
#include "core/dp_error.h"
static int ph_init(dp_counter *c, char *e, size_t n) { return dp_err(e, n, DP_EINVAL, "counter honaker not built yet"); }
const dp_counter_ops dp_counter_ops_honaker = { .init = ph_init };
