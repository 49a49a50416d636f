/* counter_simple.c — the simple counter (Chan, Shi, Song 2011, "Simple
 * Counting Mechanism II"): every x_t gets its own noise and the output is
 * the running sum of noisy values.
 *
 * Privacy: each entry appears in exactly one noised quantity (ℓ1 = ℓ2² = 1),
 * so DLap(entries·Δ/ε) or N_Z(entries·Δ²/(2ρ)) per step spends the whole
 * budget for an unbounded stream.  Error variance at t: t·Var(noise); of
 * the increment output_b − output_a: (b − a)·Var(noise).
 * Memory O(1); time O(1) per step. */
#include "core/counter_impl.h"
#include "core/dp_error.h"

#include <stdlib.h>

typedef struct simple_state {
    dp_dlap     dlap;
    dp_dgauss   dgauss;
    double      noise_var;
    int64_t     noisy_sum;
} simple_state;

static int simple_init(dp_counter *c, char *errstr, size_t errstr_size)
{
    simple_state *s = calloc(1, sizeof *s);
    if (!s)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    dp_rational param;
    int rc = c->cfg.budget.model == DP_PRIVACY_PURE
                 ? dp_counter_calibrate_dlap(c, 1.0, 1.0, &s->dlap, &param, errstr, errstr_size)
                 : dp_counter_calibrate_dgauss(c, 1.0, 1.0, &s->dgauss, &param, errstr, errstr_size);
    if (rc != DP_OK) {
        free(s);
        return rc;
    }
    s->noise_var = c->cfg.budget.model == DP_PRIVACY_PURE ? dp_dlap_variance(param)
                                                          : dp_dgauss_variance(param);
    c->impl = s;
    return DP_OK;
}

static int simple_add(dp_counter *c, int64_t x, int64_t *out)
{
    simple_state *s = c->impl;
    dp_drbg g;
    dp_counter_drbg(c, &g, c->t + 1, "simple");
    int64_t z = c->cfg.budget.model == DP_PRIVACY_PURE ? dp_dlap_sample(&s->dlap, &g)
                                                       : dp_dgauss_sample(&s->dgauss, &g);
    dp_drbg_wipe(&g);
    /* Checked: a restored (or absurdly large) sum must give DP_ERANGE, not overflow. */
    int64_t sum;
    if (__builtin_add_overflow(x, z, &sum) || __builtin_add_overflow(s->noisy_sum, sum, &sum))
        return DP_ERANGE;
    s->noisy_sum = sum;
    *out = s->noisy_sum;
    return DP_OK;
}

static double simple_variance(const dp_counter *c, uint64_t t)
{
    const simple_state *s = c->impl;
    return (double)t * s->noise_var;
}

/* The noise draws are independent, so an increment's error is its own draws'. */
static double simple_variance_between(const dp_counter *c, uint64_t a, uint64_t b)
{
    const simple_state *s = c->impl;
    return (double)(b - a) * s->noise_var;
}

static int simple_sensitivity(const dp_counter *c, double *l1, double *l2sq)
{
    *l1 = 1.0;
    *l2sq = 1.0;
    return DP_OK;
}

static int simple_save(const dp_counter *c, dp_buf *b)
{
    const simple_state *s = c->impl;
    dp_buf_put_i64(b, s->noisy_sum);
    return dp_buf_status(b);
}

static int simple_load(dp_counter *c, dp_reader *r)
{
    simple_state *s = c->impl;
    s->noisy_sum = dp_reader_i64(r);
    return dp_reader_status(r);
}

static void simple_fini(dp_counter *c)
{
    free(c->impl);
}

const dp_counter_ops dp_counter_ops_simple = {
    .kind = DP_COUNTER_SIMPLE,
    .bounded = 0,
    .supports_pure = 1,
    .supports_zcdp = 1,
    .exact_variance = 1,
    .init = simple_init,
    .add = simple_add,
    .variance = simple_variance,
    .variance_between = simple_variance_between,
    .sensitivity = simple_sensitivity,
    .save = simple_save,
    .load = simple_load,
    .fini = simple_fini,
};
