/* counter_tree.c — tree(T): the binary mechanism (Bun et al. 2024 = seed
 * 000, Alg. 3 "tree-based aggregation"; Chan, Shi, Song 2011 "Binary
 * Mechanism"; Dwork, Naor, Pitassi, Rothblum 2010).
 *
 * Every step t completes the dyadic node at level i = ctz(t), covering
 * (t - 2^i, t]; its p-sum α_i is released once with fresh noise and
 * out_t = Σ_{bit i of t set} α̂_i, a sum of popcount(t) noisy p-sums.
 *
 * Privacy: with L = floor(log2 T) + 1 levels, entry s enters one node per
 * level whose interval ends by T, so at most L p-sums, and entry 1 enters
 * exactly L (the nodes ending at 2^i <= 2^{L-1} <= T); the enumeration in
 * test_counter_tree_family checks this on the real code path.  The vector of noised p-sums therefore has
 * ℓ1 = L and ℓ2² = L per unit change, and each p-sum gets
 *   pure ε:  DLap(L·entries·Δ/ε)            (Laplace mechanism on ℓ1 = L)
 *   ρ-zCDP:  N_Z(L·entries·Δ²/(2ρ))          (seed 000: σ² = log T/(2ρ))
 * (dp_counter_calibrate_*); outputs are post-processing.  Spends exactly
 * the configured budget over the horizon.
 *
 * Error at t: popcount(t)·Var(noise), exact (linear in independent draws).
 * Memory O(log T) (two int64 per level); time O(log T) per step (one draw).
 *
 * This file also holds the helpers of counter_family.h shared by the
 * block / hybrid / honaker kinds. */
#include "core/counter_family.h"
#include "core/dp_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- shared helpers ------------------------------------------------------ */

int dp_cnoise_calibrate(const dp_counter *c, double l1, double l2sq, double fraction,
                        dp_cnoise *n, char *errstr, size_t errstr_size)
{
    memset(n, 0, sizeof *n);
    n->model = c->cfg.budget.model;
    int rc;
    if (n->model == DP_PRIVACY_PURE) {
        rc = dp_counter_calibrate_dlap(c, l1, fraction, &n->dlap, &n->param, errstr, errstr_size);
        if (rc == DP_OK)
            n->var = dp_dlap_variance(n->param);
    } else {
        rc = dp_counter_calibrate_dgauss(c, l2sq, fraction, &n->dgauss, &n->param, errstr, errstr_size);
        if (rc == DP_OK)
            n->var = dp_dgauss_variance(n->param);
    }
    return rc;
}

int64_t dp_cnoise_draw(const dp_counter *c, const dp_cnoise *n, uint64_t step, const char *purpose)
{
    dp_drbg g;
    dp_counter_drbg(c, &g, step, purpose);
    int64_t z = n->model == DP_PRIVACY_PURE ? dp_dlap_sample(&n->dlap, &g)
                                            : dp_dgauss_sample(&n->dgauss, &g);
    dp_drbg_wipe(&g);
    return z;
}

int dp_cadd(int64_t a, int64_t b, int64_t *out)
{
    return __builtin_add_overflow(a, b, out) ? DP_ERANGE : DP_OK;
}

unsigned dp_floor_log2(uint64_t x)
{
    return 63u - (unsigned)__builtin_clzll(x);
}

void dp_bintree_reset(dp_bintree *b, unsigned levels)
{
    memset(b, 0, sizeof *b);
    b->levels = levels;
}

int dp_bintree_add(const dp_counter *c, dp_bintree *b, const dp_cnoise *n,
                   const char *prefix, uint64_t step, uint64_t u, int64_t x, int64_t *out)
{
    unsigned i = (unsigned)__builtin_ctzll(u);
    if (i >= b->levels)
        return DP_ERANGE;
    /* α_i = Σ_{j<i} α_j + x: the completed node's children are exactly
     * the lower levels still held (their intervals tile (u - 2^i, u]). */
    int64_t a = x;
    for (unsigned j = 0; j < i; j++)
        if (dp_cadd(a, b->alpha[j], &a) != DP_OK)
            return DP_ERANGE;
    char purpose[96];
    snprintf(purpose, sizeof purpose, "%snode/%u/%llu", prefix, i, (unsigned long long)(u >> i));
    dp_counter_trace_noised(c, step, purpose, a);
    int64_t noisy, sum = 0;
    if (dp_cadd(a, dp_cnoise_draw(c, n, step, purpose), &noisy) != DP_OK)
        return DP_ERANGE;
    /* Bits of u above i are the levels whose nodes stay in the prefix. */
    if (dp_cadd(sum, noisy, &sum) != DP_OK)
        return DP_ERANGE;
    for (unsigned j = i + 1; j < b->levels; j++)
        if (((u >> j) & 1u) && dp_cadd(sum, b->noisy[j], &sum) != DP_OK)
            return DP_ERANGE;
    for (unsigned j = 0; j < i; j++)
        b->alpha[j] = b->noisy[j] = 0;
    b->alpha[i] = a;
    b->noisy[i] = noisy;
    *out = sum;
    return DP_OK;
}

void dp_bintree_save(const dp_bintree *b, dp_buf *buf)
{
    dp_buf_put_u32(buf, b->levels);
    for (unsigned j = 0; j < b->levels; j++) {
        dp_buf_put_i64(buf, b->alpha[j]);
        dp_buf_put_i64(buf, b->noisy[j]);
    }
}

int dp_bintree_load(dp_bintree *b, dp_reader *r)
{
    uint32_t levels = dp_reader_u32(r);
    if (dp_reader_status(r) != DP_OK || levels != b->levels)
        return DP_ECORRUPT;
    for (unsigned j = 0; j < b->levels; j++) {
        b->alpha[j] = dp_reader_i64(r);
        b->noisy[j] = dp_reader_i64(r);
    }
    return dp_reader_status(r);
}

/* --- the tree kind -------------------------------------------------------- */

typedef struct tree_state {
    dp_bintree tree;
    dp_cnoise  noise;
} tree_state;

static unsigned tree_levels(uint64_t horizon)
{
    return dp_floor_log2(horizon) + 1;
}

static int tree_init(dp_counter *c, char *errstr, size_t errstr_size)
{
    tree_state *s = calloc(1, sizeof *s);
    if (!s)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    unsigned L = tree_levels(c->cfg.horizon);
    int rc = dp_cnoise_calibrate(c, (double)L, (double)L, 1.0, &s->noise, errstr, errstr_size);
    if (rc != DP_OK) {
        free(s);
        return rc;
    }
    dp_bintree_reset(&s->tree, L);
    c->impl = s;
    return DP_OK;
}

static int tree_add(dp_counter *c, int64_t x, int64_t *out)
{
    tree_state *s = c->impl;
    return dp_bintree_add(c, &s->tree, &s->noise, "tree/", c->t + 1, c->t + 1, x, out);
}

static double tree_variance(const dp_counter *c, uint64_t t)
{
    const tree_state *s = c->impl;
    return (double)__builtin_popcountll(t) * s->noise.var;
}

static int tree_sensitivity(const dp_counter *c, double *l1, double *l2sq)
{
    const tree_state *s = c->impl;
    *l1 = (double)s->tree.levels;
    *l2sq = (double)s->tree.levels;
    return DP_OK;
}

static int tree_save(const dp_counter *c, dp_buf *b)
{
    const tree_state *s = c->impl;
    dp_bintree_save(&s->tree, b);
    return dp_buf_status(b);
}

static int tree_load(dp_counter *c, dp_reader *r)
{
    tree_state *s = c->impl;
    return dp_bintree_load(&s->tree, r);
}

static void tree_fini(dp_counter *c)
{
    free(c->impl);
}

const dp_counter_ops dp_counter_ops_tree = {
    .kind = DP_COUNTER_TREE,
    .bounded = 1,
    .supports_pure = 1,
    .supports_zcdp = 1,
    .exact_variance = 1,
    .init = tree_init,
    .add = tree_add,
    .variance = tree_variance,
    .sensitivity = tree_sensitivity,
    .save = tree_save,
    .load = tree_load,
    .fini = tree_fini,
};
