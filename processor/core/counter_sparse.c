/* counter_sparse.c — sparse(T): sparse counting with a finite horizon
 * (seed 004 = He et al., Alg. 2, modified from Dwork, Naor, Reingold,
 * Rothblum 2015), pure ε only.
 *
 * Mechanism (one instance = the engine of counter_sparse.h, also used per
 * level by sparse_inhomogeneous).  The timeline is cut into segments by a
 * sparse-vector (AboveThreshold) test; each closed segment's count N_j is
 * fed as one entry to a binary-mechanism tree, and the release at every
 * step is the tree's latest output Ñ:
 *   open segment j at step s:  λ_j ~ Lap_Z(b), threshold T0 + λ_j
 *   every step t:              N_j += x_t;  λ'_t ~ Lap_Z(b)
 *                              if |N_j| + λ'_t > T0 + λ_j: close segment j,
 *                                  Ñ <- tree.add(N_j), N_{j+1} = 0
 *                              release Ñ
 * T0 = ceil(9 ln h / ε_alg) (seed 004's partition threshold).  Two
 * documented departures from the seed: (1) the test comes after x_t is
 * added and the step releases the updated Ñ (the seed tests first and
 * releases the old Ñ one step longer) — a reordering of post-processing,
 * same privacy, lower error; (2) the query is |N_j| instead of N_j, so
 * signed inputs (deletions) are supported: |·| is 1-Lipschitz, so the
 * query still has sensitivity entries·Δ, and the error bound below holds
 * for every input stream.  Seed 004's inputs are bits; any integer with
 * |x| <= 2^40 is accepted here (DP_EINVAL beyond), the O(log T) error
 * regime being sparse streams.
 *
 * Privacy (ε_alg for the instance; the kind uses ε_alg = ε):
 *  - Threshold test, budget ε_svt = ε_alg/2.  Both the threshold noise and
 *    every query noise are Lap_Z(b), b = 4·entries·Δ/ε_svt (docs/privacy.md
 *    §2's Lap_Z(4/ε'), ε' = ε_svt; we do not use the tighter Lap_Z(2/ε')).
 *    AboveThreshold with threshold noise Lap(b1) and query noise Lap(b2)
 *    for queries of sensitivity D costs D/b1 + 2D/b2 (Dwork–Roth Thm 3.23;
 *    Lyu–Su–Li 2017 with c = 1; the shift argument is over integers, so it
 *    holds for the discrete Laplace): here 3ε_svt/4 <= ε_svt.  Each
 *    segment is a fresh AboveThreshold instance that halts at its first
 *    "above"; a changed entry at time t lies in exactly one instance (the
 *    one running at t; earlier ones ended before t, later ones' queries
 *    do not contain x_t), so the whole partition costs ε_svt.  With
 *    entries = 2 the two changes hit one instance (D = 2Δ) or two
 *    (D = Δ each): both are covered by the entries·Δ in b.
 *  - Tree, budget ε_tree = ε_alg/2: given the partition, the segment
 *    counts differ in one entry (two for entries = 2) by <= Δ each, so the
 *    binary mechanism with L = floor(log2 h)+1 levels and per-node
 *    Lap_Z(L·entries·Δ/ε_tree) is ε_tree-DP (counter_tree.c); the tree's
 *    noise is independent of the test's, so P[partition, tree outputs]
 *    factorises and the costs add: ε_svt + ε_tree = ε_alg.
 *
 * Error bound (variance_is_exact = 0).  After local step u with j closed
 * segments, out - truth = (tree noise at j) - N_open.  The tree noise has
 * mean 0 given the partition and is independent of N_open, so
 *   E[err²] = E[popcount(j)]·v_tree + E[N_open²]
 *          <= (floor(log2 u)+1)·v_tree + (T0 + sqrt(E M_u²) + sqrt(v_svt))²,
 * because an open segment passed its test at u: |N_open| <= T0 + λ_j - λ'_u
 * <= T0 + M_u + |λ'_u| with M_u = max_{s<=u} |λ_s| over the (conceptual)
 * per-step threshold draws (a segment's λ is the draw keyed at its first
 * step), and Minkowski's inequality.  E M_u² is bounded in closed form by
 * dp_sparse_max_lap_sq.  Error is O(log T / ε) on any stream, plus the
 * tree's O(log^{1.5} n) for n closed segments.
 *
 * Memory O(log T); time O(log T) per step.  Snapshot holds the counts and
 * tree state; a segment's threshold noise is re-derived from its key. */
#include "core/counter_sparse.h"
#include "core/dp_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- engine ---------------------------------------------------------------- */

int dp_sparse_seg_setup(const dp_counter *c, dp_sparse_seg *e, uint64_t h, double fraction,
                        const char *prefix, char *errstr, size_t errstr_size)
{
    memset(e, 0, sizeof *e);
    if (h == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "sparse counting: empty window");
    e->h = h;
    double eps_alg = c->cfg.budget.value * fraction;
    double t0 = ceil(9.0 * log((double)h) / eps_alg);
    if (!(t0 >= 0) || t0 > 1e15)
        return dp_err(errstr, errstr_size, DP_ERANGE, "sparse counting: threshold %g out of range", t0);
    e->T0 = (int64_t)t0;
    snprintf(e->prefix, sizeof e->prefix, "%s", prefix);
    dp_rational scale;
    int rc = dp_counter_calibrate_dlap(c, 4.0, fraction / 2.0, &e->svt, &scale, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    e->svt_var = dp_dlap_variance(scale);
    unsigned L = dp_floor_log2(h) + 1;
    rc = dp_cnoise_calibrate(c, (double)L, (double)L, fraction / 2.0, &e->tree_noise, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    dp_bintree_reset(&e->tree, L);
    return DP_OK;
}

static int64_t seg_draw(const dp_counter *c, const dp_sparse_seg *e, uint64_t step, const char *what)
{
    char purpose[64];
    snprintf(purpose, sizeof purpose, "%s%s", e->prefix, what);
    dp_drbg g;
    dp_counter_drbg(c, &g, step, purpose);
    int64_t v = dp_dlap_sample(&e->svt, &g);
    dp_drbg_wipe(&g);
    return v;
}

int dp_sparse_seg_add(const dp_counter *c, dp_sparse_seg *e, uint64_t step, int64_t x, int64_t *out)
{
    if (e->u >= e->h)
        return DP_EHORIZON;
    int64_t N;
    if (dp_cadd(e->N, x, &N) != DP_OK || N == INT64_MIN)
        return DP_ERANGE;
    uint64_t seg_start = e->seg_start;
    int64_t lambda = e->lambda;
    if (seg_start == 0) {
        seg_start = step;
        lambda = seg_draw(c, e, step, "thr");
    }
    int64_t q = seg_draw(c, e, step, "q");
    /* |N| + λ' > T0 + λ, in 128 bits (no overflow for |N| <= 2^62). */
    int above = (__int128)(N < 0 ? -N : N) + q > (__int128)e->T0 + lambda;
    if (above) {
        int64_t nt;
        int rc = dp_bintree_add(c, &e->tree, &e->tree_noise, e->prefix, step, e->nseg + 1, N, &nt);
        if (rc != DP_OK)
            return rc;
        e->Ntil = nt;
        e->nseg++;
        e->N = 0;
        e->seg_start = 0;
        e->lambda = 0;
    } else {
        e->N = N;
        e->seg_start = seg_start;
        e->lambda = lambda;
    }
    e->u++;
    *out = e->Ntil;
    return DP_OK;
}

/* E[max_{s<=n} λ_s²] for iid λ ~ Lap_Z(b):  M² <= m² + Σ_s λ_s² 1{|λ_s| > m}
 * for every m, so E M² <= min_m (m² + n·E[λ² 1{|λ| > m}]), with
 * P[λ = k] = (1-q)/(1+q) q^|k|, q = e^{-1/b}, and
 * Σ_{k>=a} k² q^k = q^a (a²/(1-q) + 2aq/(1-q)² + q(1+q)/(1-q)³). */
static double lap_tail_sq(double q, double omq, double a)
{
    double s = a * a / omq + 2.0 * a * q / (omq * omq) + q * (1.0 + q) / (omq * omq * omq);
    return 2.0 * omq / (1.0 + q) * pow(q, a) * s;
}

double dp_sparse_max_lap_sq(dp_rational scale, uint64_t n)
{
    double b = dp_rational_to_double(scale);
    double q = exp(-1.0 / b), omq = -expm1(-1.0 / b), nn = (double)(n ? n : 1);
    /* f(m) = m² + n·tail(m+1) is convex in m: ternary search, then scan. */
    double lo = 0, hi = ceil(b * (log(nn) + 40.0)) + 2.0;
    while (hi - lo > 3) {
        double m1 = floor(lo + (hi - lo) / 3), m2 = floor(hi - (hi - lo) / 3);
        double f1 = m1 * m1 + nn * lap_tail_sq(q, omq, m1 + 1);
        double f2 = m2 * m2 + nn * lap_tail_sq(q, omq, m2 + 1);
        if (f1 <= f2)
            hi = m2;
        else
            lo = m1;
    }
    double best = INFINITY;
    for (double m = lo; m <= hi; m += 1) {
        double f = m * m + nn * lap_tail_sq(q, omq, m + 1);
        if (f < best)
            best = f;
    }
    return best;
}

double dp_sparse_seg_bound(const dp_sparse_seg *e, uint64_t u)
{
    if (u == 0)
        return 0;
    dp_rational scale = {e->svt.t, e->svt.s};
    double levels = (double)(dp_floor_log2(u) + 1);
    double open = (double)e->T0 + sqrt(dp_sparse_max_lap_sq(scale, u)) + sqrt(e->svt_var);
    return levels * e->tree_noise.var + open * open;
}

void dp_sparse_seg_save(const dp_sparse_seg *e, dp_buf *b)
{
    dp_buf_put_u64(b, e->u);
    dp_buf_put_u64(b, e->nseg);
    dp_buf_put_u64(b, e->seg_start);
    dp_buf_put_i64(b, e->N);
    dp_buf_put_i64(b, e->Ntil);
    dp_bintree_save(&e->tree, b);
}

int dp_sparse_seg_load(const dp_counter *c, dp_sparse_seg *e, dp_reader *r)
{
    e->u = dp_reader_u64(r);
    e->nseg = dp_reader_u64(r);
    e->seg_start = dp_reader_u64(r);
    e->N = dp_reader_i64(r);
    e->Ntil = dp_reader_i64(r);
    if (dp_reader_status(r) != DP_OK || e->u > e->h || e->nseg > e->u)
        return DP_ECORRUPT;
    if (dp_bintree_load(&e->tree, r) != DP_OK)
        return DP_ECORRUPT;
    e->lambda = e->seg_start ? seg_draw(c, e, e->seg_start, "thr") : 0;
    return DP_OK;
}

/* --- the sparse kind -------------------------------------------------------- */

static int sparse_init(dp_counter *c, char *errstr, size_t errstr_size)
{
    dp_sparse_seg *e = calloc(1, sizeof *e);
    if (!e)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    int rc = dp_sparse_seg_setup(c, e, c->cfg.horizon, 1.0, "", errstr, errstr_size);
    if (rc != DP_OK) {
        free(e);
        return rc;
    }
    c->impl = e;
    return DP_OK;
}

static int sparse_add(dp_counter *c, int64_t x, int64_t *out)
{
    if (x > DP_SPARSE_MAX_INPUT || x < -DP_SPARSE_MAX_INPUT)
        return DP_EINVAL;
    return dp_sparse_seg_add(c, c->impl, c->t + 1, x, out);
}

static double sparse_variance(const dp_counter *c, uint64_t t)
{
    return dp_sparse_seg_bound(c->impl, t);
}

static int sparse_sensitivity(const dp_counter *c, double *l1, double *l2sq)
{
    /* The linear noised quantities are the tree's p-sums of segment
     * counts: L per unit change (the threshold test is not a linear
     * release and is accounted separately above). */
    const dp_sparse_seg *e = c->impl;
    *l1 = (double)e->tree.levels;
    *l2sq = (double)e->tree.levels;
    return DP_OK;
}

static int sparse_save(const dp_counter *c, dp_buf *b)
{
    dp_sparse_seg_save(c->impl, b);
    return dp_buf_status(b);
}

static int sparse_load(dp_counter *c, dp_reader *r)
{
    return dp_sparse_seg_load(c, c->impl, r);
}

static void sparse_fini(dp_counter *c)
{
    free(c->impl);
}

const dp_counter_ops dp_counter_ops_sparse = {
    .kind = DP_COUNTER_SPARSE,
    .bounded = 1,
    .supports_pure = 1,
    .supports_zcdp = 0,
    .exact_variance = 0,
    .init = sparse_init,
    .add = sparse_add,
    .variance = sparse_variance,
    .sensitivity = sparse_sensitivity,
    .save = sparse_save,
    .load = sparse_load,
    .fini = sparse_fini,
};
