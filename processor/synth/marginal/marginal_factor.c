/* marginal_factor.c — see marginal_factor.h.  Junction-tree inference as
 * in Koller & Friedman, Probabilistic Graphical Models (2009), §10.2–10.3
 * (clique trees from variable elimination, sum-product calibration with
 * Hugin-style division), used by Private-PGM (McKenna, Sheldon, Miklau 2019)
 * as its exact marginal oracle. */
#include "synth/marginal/marginal_factor.h"
#include "synth/marginal/marginal_factor_runs.h"

#include "core/dp_error.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


int dp_factor_init(dp_factor *f, const uint32_t *attrs, uint32_t k, const uint32_t *sizes)
{
    memset(f, 0, sizeof *f);
    if (k > DP_FACTOR_MAX_ATTRS)
        return DP_ERANGE;
    f->k = k;
    f->cells = 1;
    for (uint32_t i = 0; i < k; i++) {
        f->attrs[i] = attrs[i];
        f->cells *= sizes[attrs[i]];
    }
    f->v = calloc(f->cells, sizeof *f->v);
    return f->v ? DP_OK : DP_ENOMEM;
}

void dp_factor_free(dp_factor *f)
{
    free(f->v);
    memset(f, 0, sizeof *f);
}

int dp_factor_subset(const uint32_t *a, uint32_t ka, const uint32_t *b, uint32_t kb)
{
    for (uint32_t i = 0; i < ka; i++) {
        int in = 0;
        for (uint32_t j = 0; j < kb && !in; j++)
            in = a[i] == b[j];
        if (!in)
            return 0;
    }
    return 1;
}

typedef enum { REDUCE_SUM, REDUCE_MAX } reduce_op;

/* out.v[s] ∘= f.v[x] over f's cells x with x_S = s (out's attributes S ⊆
 * f's), ∘ = + or max; inlined with a constant op, so each is its own loop. */
static inline void reduce_into(const dp_factor *f, dp_factor *out, const uint32_t *sizes, reduce_op op)
{
    odo o;
    uint64_t s;
    uint32_t n;
    runs_init(&o, f, out, sizes, &s, &n);
    const double *x = f->v;
    for (uint64_t r = 0; r < f->cells / n; r++, x += n, odo_next(&o)) {
        double *y = out->v + o.idx;
        for (uint32_t d = 0; d < n; d++)
            y[d * s] = op == REDUCE_SUM ? y[d * s] + x[d] : x[d] > y[d * s] ? x[d] : y[d * s];
    }
}

void dp_factor_sum_into(const dp_factor *f, dp_factor *out, const uint32_t *sizes)
{
    reduce_into(f, out, sizes, REDUCE_SUM);
}

typedef enum { APPLY_MUL, APPLY_DIV, APPLY_ADD, APPLY_EXP_SUB } apply_op;

/* f.v[x] ∘= g.v[x restricted to g's attributes], run by run. */
static void apply_runs(dp_factor *f, const dp_factor *g, const uint32_t *sizes, apply_op op)
{
    odo o;
    uint64_t s;
    uint32_t n;
    runs_init(&o, f, g, sizes, &s, &n);
    double *x = f->v;
    for (uint64_t r = 0; r < f->cells / n; r++, x += n, odo_next(&o)) {
        const double *y = g->v + o.idx;
        for (uint32_t d = 0; d < n; d++) {
            double gy = y[d * s];
            /* A denormal divisor counts as 0: the Hugin update divides a
             * separator marginal (≤ 1) by the message, and 1/denormal can
             * overflow to inf (then inf·0 = NaN in the beliefs).  Below
             * DBL_MIN the ratio ≤ 1/DBL_MIN stays finite; what is dropped
             * is mass under 2^-1022. */
            x[d] = op == APPLY_ADD ? x[d] + gy : op == APPLY_MUL ? x[d] * gy : op == APPLY_EXP_SUB ? exp(x[d] - gy)
                   : gy >= DBL_MIN ? x[d] / gy : 0;
        }
    }
}

void dp_factor_mul(dp_factor *f, const dp_factor *g, const uint32_t *sizes, int divide)
{
    apply_runs(f, g, sizes, divide ? APPLY_DIV : APPLY_MUL);
}

void dp_factor_add(dp_factor *f, const dp_factor *g, const uint32_t *sizes)
{
    apply_runs(f, g, sizes, APPLY_ADD);
}

static void normalize(dp_factor *f)
{
    double s = 0;
    for (uint64_t i = 0; i < f->cells; i++)
        s += f->v[i];
    if (s > 0)
        for (uint64_t i = 0; i < f->cells; i++)
            f->v[i] /= s;
}

/* --- junction tree ------------------------------------------------------------- */

static uint32_t mask_attrs(uint64_t m, uint32_t *out)
{
    uint32_t k = 0;
    for (uint32_t a = 0; a < 64; a++)
        if (m >> a & 1)
            out[k++] = a;
    return k;
}

static void memo_clear(dp_jtree *jt)
{
    for (size_t i = 0; i < jt->n_memo; i++)
        dp_factor_free(&jt->memo[i]);
    jt->n_memo = 0;
}

void dp_jtree_beliefs_replaced(dp_jtree *jt, int32_t focus)
{
    memo_clear(jt);
    jt->focus = focus;
}

void dp_jtree_free(dp_jtree *jt)
{
    if (!jt)
        return;
    memo_clear(jt);
    free(jt->memo);
    free(jt->memo_key);
    for (uint32_t i = 0; i < jt->n_cliques; i++) {
        if (jt->belief)
            dp_factor_free(&jt->belief[i]);
        if (jt->logpot)
            dp_factor_free(&jt->logpot[i]);
        if (jt->up)
            dp_factor_free(&jt->up[i]);
    }
    free(jt->belief);
    free(jt->logpot);
    free(jt->up);
    free(jt->parent);
    free(jt->order);
    memset(jt, 0, sizeof *jt);
}

int dp_jtree_build(dp_jtree *jt, uint32_t n_attrs, const uint32_t *sizes, uint32_t n_groups,
                   const uint32_t *const *attrs, const uint32_t *k, uint64_t max_cells, uint64_t *cells)
{
    if (n_attrs == 0 || n_attrs > 64)
        return DP_ERANGE;
    uint64_t adj[64] = {0};
    for (uint32_t g = 0; g < n_groups; g++)
        for (uint32_t i = 0; i < k[g]; i++)
            for (uint32_t j = 0; j < k[g]; j++)
                if (i != j)
                    adj[attrs[g][i]] |= (uint64_t)1 << attrs[g][j];
    /* Greedy min-fill elimination: the elimination cliques cover every
     * group, and the maximal ones form a junction tree. */
    uint64_t remaining = n_attrs == 64 ? ~(uint64_t)0 : (((uint64_t)1 << n_attrs) - 1), cl[64];
    uint32_t ncl = 0;
    for (uint32_t step = 0; step < n_attrs; step++) {
        uint32_t best = 64, best_fill = UINT32_MAX;
        for (uint32_t v = 0; v < n_attrs; v++) {
            if (!(remaining >> v & 1))
                continue;
            uint64_t nb = adj[v] & remaining & ~((uint64_t)1 << v);
            uint32_t fill = 0;
            for (uint32_t u = 0; u < n_attrs; u++)
                if (nb >> u & 1)
                    fill += (uint32_t)__builtin_popcountll(nb & ~adj[u] & ~((uint64_t)1 << u));
            if (fill < best_fill) {
                best_fill = fill;
                best = v;
            }
        }
        uint64_t nb = adj[best] & remaining & ~((uint64_t)1 << best);
        for (uint32_t u = 0; u < n_attrs; u++)
            if (nb >> u & 1)
                adj[u] |= nb & ~((uint64_t)1 << u);
        cl[ncl++] = nb | (uint64_t)1 << best;
        remaining &= ~((uint64_t)1 << best);
    }
    /* keep the maximal cliques, first occurrence of duplicates */
    uint64_t keep[64];
    uint32_t nk = 0;
    for (uint32_t i = 0; i < ncl; i++) {
        int dominated = 0;
        for (uint32_t j = 0; j < ncl && !dominated; j++)
            dominated = j != i && (cl[i] & cl[j]) == cl[i] && (cl[i] != cl[j] || j < i);
        if (!dominated)
            keep[nk++] = cl[i];
    }
    /* sort cliques by their attribute bitmask for a canonical numbering */
    for (uint32_t i = 1; i < nk; i++)
        for (uint32_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
            uint64_t t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    double total = 0;
    for (uint32_t i = 0; i < nk; i++) {
        if (__builtin_popcountll(keep[i]) > DP_FACTOR_MAX_ATTRS)
            return DP_ERANGE;
        double c = 1;
        for (uint32_t a = 0; a < n_attrs; a++)
            if (keep[i] >> a & 1)
                c *= sizes[a];
        total += c;
    }
    if (total > (double)max_cells)
        return DP_ERANGE;
    if (cells)
        *cells = (uint64_t)total;
    if (!jt)
        return DP_OK;
    memset(jt, 0, sizeof *jt);
    jt->focus = -1;
    jt->n_cliques = nk;
    jt->cells = (uint64_t)total;
    jt->belief = calloc(nk, sizeof *jt->belief);
    jt->logpot = calloc(nk, sizeof *jt->logpot);
    jt->up = calloc(nk, sizeof *jt->up);
    jt->parent = malloc(nk * sizeof *jt->parent);
    jt->order = malloc(nk * sizeof *jt->order);
    if (!jt->belief || !jt->logpot || !jt->up || !jt->parent || !jt->order) {
        dp_jtree_free(jt);
        return DP_ENOMEM;
    }
    uint32_t a[64];
    for (uint32_t i = 0; i < nk; i++) {
        uint32_t ka = mask_attrs(keep[i], a);
        if (dp_factor_init(&jt->belief[i], a, ka, sizes) != DP_OK || dp_factor_init(&jt->logpot[i], a, ka, sizes) != DP_OK) {
            dp_jtree_free(jt);
            return DP_ENOMEM;
        }
    }
    /* Prim: a maximum-weight spanning tree on |K_i ∩ K_j| (ties: lowest
     * index); weight-0 edges join disconnected parts (empty separator). */
    uint8_t in[64] = {0};
    in[0] = 1;
    jt->parent[0] = -1;
    jt->order[0] = 0;
    for (uint32_t n = 1; n < nk; n++) {
        int bw = -1;
        uint32_t bi = 0, bj = 0;
        for (uint32_t j = 0; j < nk; j++) {
            if (in[j])
                continue;
            for (uint32_t i = 0; i < nk; i++) {
                if (!in[i])
                    continue;
                int w = __builtin_popcountll(keep[i] & keep[j]);
                if (w > bw) {
                    bw = w;
                    bi = i;
                    bj = j;
                }
            }
        }
        in[bj] = 1;
        jt->parent[bj] = (int32_t)bi;
        jt->order[n] = bj;
        uint32_t ka = mask_attrs(keep[bi] & keep[bj], a);
        if (dp_factor_init(&jt->up[bj], a, ka, sizes) != DP_OK) {
            dp_jtree_free(jt);
            return DP_ENOMEM;
        }
    }
    if (dp_factor_init(&jt->up[0], a, 0, sizes) != DP_OK) {
        dp_jtree_free(jt);
        return DP_ENOMEM;
    }
    return DP_OK;
}

int dp_jtree_find(const dp_jtree *jt, const uint32_t *attrs, uint32_t k)
{
    for (uint32_t i = 0; i < jt->n_cliques; i++)
        if (dp_factor_subset(attrs, k, jt->belief[i].attrs, jt->belief[i].k))
            return (int)i;
    return -1;
}

/* Condition a clique on its separator, in the log domain: on entry f holds
 * log-values; on exit f(x) = exp(f(x) − L(x_S)), the distribution of the
 * clique's other attributes given the separator value, and sep(s) = L(s) =
 * log Σ_{x_S = s} exp f(x), the message to the parent.  The largest cell of
 * each separator value is exp(0) = 1, so the sum is ≥ 1 and nothing divides
 * by an underflowed value; tmp is a scratch factor over the separator. */
static void condition_on_separator(dp_factor *f, dp_factor *sep, dp_factor *tmp, const uint32_t *sizes)
{
    for (uint64_t c = 0; c < sep->cells; c++)
        sep->v[c] = -INFINITY;
    reduce_into(f, sep, sizes, REDUCE_MAX);
    apply_runs(f, sep, sizes, APPLY_EXP_SUB);
    memset(tmp->v, 0, tmp->cells * sizeof *tmp->v);
    dp_factor_sum_into(f, tmp, sizes);
    apply_runs(f, tmp, sizes, APPLY_DIV);
    for (uint64_t c = 0; c < sep->cells; c++)
        sep->v[c] += log(tmp->v[c]);
}

/* Sum-product calibration.  The upward pass runs in the log domain: the
 * log-potentials of cliques that share attributes can drift apart without
 * bound (iterative proportional fitting on measurements that disagree on a
 * shared attribute moves +φ into one factor and −φ into the other at every
 * cycle, the model itself unchanged), and exponentiating each clique on its
 * own then underflows the cells the other clique keeps, so the product of a
 * belief and its child's message could be 0 everywhere — the whole model
 * collapsed to uniform (full Adult, ordered stream, ε = 2: at step 36,
 * |θ| ≈ 770 > 745).  In the log domain the two drifts cancel before
 * anything is exponentiated.  Each non-root belief becomes the clique's
 * conditional given its separator, the root's its marginal; the downward
 * pass multiplies each conditional by the parent's (already calibrated)
 * separator marginal, which it leaves in up[K]. */
int dp_jtree_calibrate(dp_jtree *jt, const uint32_t *sizes)
{
    memo_clear(jt);
    jt->focus = -1;
    for (uint32_t i = 0; i < jt->n_cliques; i++)
        memcpy(jt->belief[i].v, jt->logpot[i].v, jt->logpot[i].cells * sizeof *jt->logpot[i].v);
    /* upward: children first */
    for (uint32_t n = jt->n_cliques; n-- > 1;) {
        uint32_t K = jt->order[n];
        dp_factor tmp;
        int rc = dp_factor_init(&tmp, jt->up[K].attrs, jt->up[K].k, sizes);
        if (rc != DP_OK)
            return rc;
        condition_on_separator(&jt->belief[K], &jt->up[K], &tmp, sizes);
        dp_factor_free(&tmp);
        dp_factor_add(&jt->belief[jt->parent[K]], &jt->up[K], sizes);
    }
    dp_factor *root = &jt->belief[jt->order[0]];
    double mx = -INFINITY;
    for (uint64_t c = 0; c < root->cells; c++)
        mx = root->v[c] > mx ? root->v[c] : mx;
    for (uint64_t c = 0; c < root->cells; c++)
        root->v[c] = exp(root->v[c] - mx);
    normalize(root);
    /* downward: belief_K = P(K∖S | S) · P(S), P(S) summed from the parent */
    for (uint32_t n = 1; n < jt->n_cliques; n++) {
        uint32_t K = jt->order[n];
        dp_factor *sep = &jt->up[K];
        memset(sep->v, 0, sep->cells * sizeof *sep->v);
        dp_factor_sum_into(&jt->belief[jt->parent[K]], sep, sizes);
        dp_factor_mul(&jt->belief[K], sep, sizes, 0);
        normalize(&jt->belief[K]);
    }
    return DP_OK;
}


/* --- incremental updates (see the header) -------------------------------------- */

/* belief_y ·= P_x(S) / P_y(S) over the separator S of adjacent cliques x, y
 * (an empty separator carries nothing: both sides sum to 1). */
static int absorb(dp_jtree *jt, const uint32_t *sizes, uint32_t x, uint32_t y)
{
    const dp_factor *sep = &jt->up[jt->parent[y] == (int32_t)x ? y : x];
    if (sep->k == 0)
        return DP_OK;
    dp_factor from, to;
    int rc = dp_factor_init(&from, sep->attrs, sep->k, sizes);
    if (rc != DP_OK)
        return rc;
    if ((rc = dp_factor_init(&to, sep->attrs, sep->k, sizes)) != DP_OK) {
        dp_factor_free(&from);
        return rc;
    }
    dp_factor_sum_into(&jt->belief[x], &from, sizes);
    dp_factor_sum_into(&jt->belief[y], &to, sizes);
    /* to(s) = 0 only where belief_y is 0 on all of s: the ratio there is
     * irrelevant, and apply_runs' division yields 0 for it */
    apply_runs(&from, &to, sizes, APPLY_DIV);
    apply_runs(&jt->belief[y], &from, sizes, APPLY_MUL);
    dp_factor_free(&from);
    dp_factor_free(&to);
    return DP_OK;
}

static uint32_t depth_of(const dp_jtree *jt, uint32_t q)
{
    uint32_t d = 0;
    for (int32_t p = jt->parent[q]; p >= 0; p = jt->parent[p])
        d++;
    return d;
}

int dp_jtree_move_focus(dp_jtree *jt, const uint32_t *sizes, uint32_t q)
{
    if (q >= jt->n_cliques)
        return DP_ERANGE;
    if (jt->focus < 0 || (uint32_t)jt->focus == q) {
        jt->focus = (int32_t)q;
        return DP_OK;
    }
    memo_clear(jt);
    /* the path focus → q: up from the focus to the common ancestor, then
     * down to q (the down half collected from q upwards, then reversed) */
    uint32_t a = (uint32_t)jt->focus, b = q, da = depth_of(jt, a), db = depth_of(jt, b);
    uint32_t down[64], nd = 0;
    int rc = DP_OK;
    while (rc == DP_OK && da > db) {
        rc = absorb(jt, sizes, a, (uint32_t)jt->parent[a]);
        a = (uint32_t)jt->parent[a];
        da--;
    }
    while (db > da) {
        down[nd++] = b;
        b = (uint32_t)jt->parent[b];
        db--;
    }
    while (rc == DP_OK && a != b) {
        rc = absorb(jt, sizes, a, (uint32_t)jt->parent[a]);
        a = (uint32_t)jt->parent[a];
        down[nd++] = b;
        b = (uint32_t)jt->parent[b];
    }
    while (rc == DP_OK && nd > 0) {
        uint32_t y = down[--nd];
        rc = absorb(jt, sizes, (uint32_t)jt->parent[y], y);
    }
    if (rc == DP_OK)
        jt->focus = (int32_t)q;
    return rc;
}

int dp_jtree_scale(dp_jtree *jt, const uint32_t *sizes, uint32_t q, const dp_factor *ratio)
{
    int rc = dp_jtree_move_focus(jt, sizes, q);
    if (rc != DP_OK)
        return rc;
    memo_clear(jt);   /* the conditionals of the calibrated tree */
    apply_runs(&jt->belief[q], ratio, sizes, APPLY_MUL);
    normalize(&jt->belief[q]);
    return DP_OK;
}
