/* counter_noise.c — what every counter kind uses to draw its noise: the
 * kind names (for labels and messages), the per-step DRBG under the
 * counter's own label, samplers calibrated from the counter's budget and
 * sensitivity, and the audit trace hook.  A leaf below counter.c and the
 * counter_<kind>.c files: it calls neither. */
#include "core/counter_impl.h"
#include "core/dp_error.h"

#include <stdio.h>
#include <string.h>

static const char *const KIND_NAMES[DP_COUNTER_KIND_COUNT] = {
    [DP_COUNTER_SIMPLE] = "simple",
    [DP_COUNTER_BLOCK] = "block",
    [DP_COUNTER_BLOCK_UNBOUNDED] = "block_unbounded",
    [DP_COUNTER_TREE] = "tree",
    [DP_COUNTER_HYBRID] = "hybrid",
    [DP_COUNTER_HONAKER] = "honaker",
    [DP_COUNTER_SQRT] = "sqrt",
    [DP_COUNTER_BLT] = "blt",
    [DP_COUNTER_SPARSE] = "sparse",
    [DP_COUNTER_SPARSE_INHOMOGENEOUS] = "sparse_inhomogeneous",
};

const char *dp_counter_kind_name(dp_counter_kind kind)
{
    if ((unsigned)kind >= DP_COUNTER_KIND_COUNT)
        return "unknown";
    return KIND_NAMES[kind];
}

int dp_counter_kind_parse(const char *name, dp_counter_kind *kind)
{
    for (int k = 0; k < DP_COUNTER_KIND_COUNT; k++) {
        if (name && strcmp(name, KIND_NAMES[k]) == 0) {
            *kind = (dp_counter_kind)k;
            return DP_OK;
        }
    }
    return DP_EINVAL;
}

void dp_counter_drbg(const dp_counter *c, dp_drbg *g, uint64_t step, const char *purpose)
{
    char label[256];
    snprintf(label, sizeof label, "%s/%s", c->label, purpose);
    dp_drbg_init(g, c->key, c->stream_id, c->stream_id_len, step, label);
}

void dp_counter_trace_noised(const dp_counter *c, uint64_t step, const char *purpose, int64_t value)
{
    if (c->trace)
        c->trace(c->trace_ctx, step, purpose, value);
}

void dp_counter_set_trace(dp_counter *c,
                          void (*trace)(void *ctx, uint64_t step, const char *purpose, int64_t value),
                          void *ctx)
{
    c->trace = trace;
    c->trace_ctx = ctx;
}

static double counter_budget_part(const dp_counter *c, double fraction)
{
    return c->cfg.budget.value * fraction;
}

int dp_counter_calibrate_dlap(const dp_counter *c, double l1, double budget_fraction,
                              dp_dlap *out, dp_rational *scale, char *errstr, size_t errstr_size)
{
    double eps = counter_budget_part(c, budget_fraction);
    double b = l1 * (double)c->cfg.neighbor_entries * (double)c->cfg.max_abs_change / eps;
    dp_rational r;
    if (dp_rational_from_double_up(b, &r) != DP_OK || r.num == 0)
        return dp_err(errstr, errstr_size, DP_ERANGE,
                      "counter %s: Laplace scale %g out of range", dp_counter_kind_name(c->cfg.kind), b);
    if (scale)
        *scale = r;
    return dp_dlap_prepare(out, r, errstr, errstr_size);
}

int dp_counter_calibrate_dgauss(const dp_counter *c, double l2sq, double budget_fraction,
                                dp_dgauss *out, dp_rational *sigma2, char *errstr, size_t errstr_size)
{
    double rho = counter_budget_part(c, budget_fraction);
    double d = (double)c->cfg.max_abs_change;
    double s2 = l2sq * (double)c->cfg.neighbor_entries * d * d / (2.0 * rho);
    dp_rational r;
    if (dp_rational_from_double_up(s2, &r) != DP_OK || r.num == 0)
        return dp_err(errstr, errstr_size, DP_ERANGE,
                      "counter %s: Gaussian variance %g out of range", dp_counter_kind_name(c->cfg.kind), s2);
    if (sigma2)
        *sigma2 = r;
    return dp_dgauss_prepare(out, r, errstr, errstr_size);
}

