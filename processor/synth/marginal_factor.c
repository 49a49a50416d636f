/* marginal_factor.c — see marginal_factor.h.  Junction-tree inference as
 * in Koller & Friedman, Probabilistic Graphical Models (2009), §10.2–10.3
 * (clique trees from variable elimination, sum-product calibration with
 * Hugin-style division), used by Private-PGM (McKenna, Sheldon, Miklau 2019)
 * as its exact marginal oracle. */
#include "synth/marginal_factor.h"

#include "core/dp_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A pair query's product runs over {a} ∪ two separators of one clique — at
 * most max_model_cells × |a| cells, nothing of that size allocated (Adult at
 * the default cap: 2^20 × 100).  This only guards against a runaway loop;
 * hitting the old 2^26 stopped a stream mid-way once the tree grew. */
#define MAX_QUERY_CELLS ((uint64_t)1 << 40)

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

/* Odometer over f's cells giving each cell's index in g (g's attributes
 * not in f contribute 0: callers only map onto subsets, or broadcast). */
typedef struct odo {
    uint32_t k;
    uint32_t size[DP_FACTOR_MAX_ATTRS];
    uint64_t mult[DP_FACTOR_MAX_ATTRS];
    uint32_t d[DP_FACTOR_MAX_ATTRS];
    uint64_t idx;
} odo;

static void odo_init(odo *o, const dp_factor *f, const dp_factor *g, const uint32_t *sizes)
{
    memset(o, 0, sizeof *o);
    o->k = f->k;
    for (uint32_t j = 0; j < f->k; j++) {
        o->size[j] = sizes[f->attrs[j]];
        uint64_t stride = 1;
        int found = 0;
        for (uint32_t i = g->k; i-- > 0;) {
            if (g->attrs[i] == f->attrs[j]) {
                found = 1;
                break;
            }
            stride *= sizes[g->attrs[i]];
        }
        o->mult[j] = found ? stride : 0;
    }
}

static inline void odo_next(odo *o)
{
    for (uint32_t j = o->k; j-- > 0;) {
        if (++o->d[j] < o->size[j]) {
            o->idx += o->mult[j];
            return;
        }
        o->idx -= o->mult[j] * (o->size[j] - 1);
        o->d[j] = 0;
    }
}

/* f's cells as runs over its last attribute: an odometer over the others
 * (each run's start in g) and the last attribute's stride in g and run
 * length.  Loops over runs visit f's cells in the same order as one
 * odometer step per cell, without paying for one. */
static void runs_init(odo *o, const dp_factor *f, const dp_factor *g, const uint32_t *sizes, uint64_t *stride,
                      uint32_t *n_last)
{
    if (f->k == 0) {
        memset(o, 0, sizeof *o);
        *stride = 0;
        *n_last = 1;
        return;
    }
    odo whole;
    odo_init(&whole, f, g, sizes);
    *stride = whole.mult[f->k - 1];
    *n_last = whole.size[f->k - 1];
    dp_factor prefix = *f;
    prefix.k = f->k - 1;
    odo_init(o, &prefix, g, sizes);
}

void dp_factor_sum_into(const dp_factor *f, dp_factor *out, const uint32_t *sizes)
{
    odo o;
    uint64_t s;
    uint32_t n;
    runs_init(&o, f, out, sizes, &s, &n);
    const double *x = f->v;
    for (uint64_t r = 0; r < f->cells / n; r++, x += n, odo_next(&o)) {
        double *y = out->v + o.idx;
        for (uint32_t d = 0; d < n; d++)
            y[d * s] += x[d];
    }
}

typedef enum { APPLY_MUL, APPLY_DIV, APPLY_ADD } apply_op;

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
            x[d] = op == APPLY_ADD ? x[d] + gy : op == APPLY_MUL ? x[d] * gy : gy > 0 ? x[d] / gy : 0;
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

int dp_jtree_calibrate(dp_jtree *jt, const uint32_t *sizes)
{
    memo_clear(jt);
    for (uint32_t i = 0; i < jt->n_cliques; i++) {
        const dp_factor *lp = &jt->logpot[i];
        double mx = -INFINITY;
        for (uint64_t c = 0; c < lp->cells; c++)
            mx = lp->v[c] > mx ? lp->v[c] : mx;
        for (uint64_t c = 0; c < lp->cells; c++)
            jt->belief[i].v[c] = exp(lp->v[c] - mx);
    }
    /* upward: each clique's message to its parent, children first */
    for (uint32_t n = jt->n_cliques; n-- > 1;) {
        uint32_t K = jt->order[n];
        dp_factor *up = &jt->up[K];
        memset(up->v, 0, up->cells * sizeof *up->v);
        dp_factor_sum_into(&jt->belief[K], up, sizes);
        normalize(up);
        dp_factor_mul(&jt->belief[jt->parent[K]], up, sizes, 0);
        normalize(&jt->belief[jt->parent[K]]);
    }
    normalize(&jt->belief[jt->order[0]]);
    /* downward: belief_K *= (Σ_{P∖S} belief_P) / up_K */
    for (uint32_t n = 1; n < jt->n_cliques; n++) {
        uint32_t K = jt->order[n];
        dp_factor s;
        int rc = dp_factor_init(&s, jt->up[K].attrs, jt->up[K].k, sizes);
        if (rc != DP_OK)
            return rc;
        dp_factor_sum_into(&jt->belief[jt->parent[K]], &s, sizes);
        dp_factor_mul(&s, &jt->up[K], sizes, 1);
        dp_factor_mul(&jt->belief[K], &s, sizes, 0);
        normalize(&jt->belief[K]);
        dp_factor_free(&s);
    }
    return DP_OK;
}

/* out = Σ onto `keep` of (a × b), a and b over any attributes: one pass over
 * the union's cells with three running indices (nothing of that size is
 * allocated). */
static int product_onto(const dp_factor *a, const dp_factor *b, const uint32_t *keep, uint32_t kk,
                        const uint32_t *sizes, dp_factor *out)
{
    uint32_t u[2 * DP_FACTOR_MAX_ATTRS], ku = 0;
    for (uint32_t x = 0; x < 64; x++) {
        int in = 0;
        for (uint32_t i = 0; i < a->k && !in; i++)
            in = a->attrs[i] == x;
        for (uint32_t i = 0; i < b->k && !in; i++)
            in = b->attrs[i] == x;
        if (in)
            u[ku++] = x;
    }
    double c = 1;
    for (uint32_t i = 0; i < ku; i++)
        c *= sizes[u[i]];
    if (ku > DP_FACTOR_MAX_ATTRS || c > (double)MAX_QUERY_CELLS)
        return DP_ERANGE;
    int rc = dp_factor_init(out, keep, kk, sizes);
    if (rc != DP_OK)
        return rc;
    if (ku == 0) {
        out->v[0] += a->v[0] * b->v[0];
        return DP_OK;
    }
    /* The union's cells as one odometer over all attributes but the largest
     * and a strided run over the largest (this loop is most of a pgm step's
     * time — the pair queries — and an odometer step per cell cost more
     * than the product when the last attribute is binary). */
    dp_factor shape = {.k = ku};   /* the union, values never allocated */
    memcpy(shape.attrs, u, ku * sizeof *u);
    uint32_t L = 0;
    for (uint32_t i = 1; i < ku; i++)
        if (sizes[u[i]] > sizes[u[L]])
            L = i;
    odo la, lb, lo;
    odo_init(&la, &shape, a, sizes);
    odo_init(&lb, &shape, b, sizes);
    odo_init(&lo, &shape, out, sizes);
    const uint64_t sa = la.mult[L], sb = lb.mult[L], so = lo.mult[L];
    const uint32_t n_last = sizes[u[L]];
    memmove(shape.attrs + L, shape.attrs + L + 1, (ku - 1 - L) * sizeof *shape.attrs);
    shape.k = ku - 1;
    odo oa, ob, oo;
    odo_init(&oa, &shape, a, sizes);
    odo_init(&ob, &shape, b, sizes);
    odo_init(&oo, &shape, out, sizes);
    uint64_t runs = (uint64_t)c / n_last;
    for (uint64_t r = 0; r < runs; r++) {
        const double *pa = a->v + oa.idx, *pb = b->v + ob.idx;
        double *po = out->v + oo.idx;
        for (uint32_t d = 0; d < n_last; d++)
            po[d * so] += pa[d * sa] * pb[d * sb];
        odo_next(&oa);
        odo_next(&ob);
        odo_next(&oo);
    }
    return DP_OK;
}

/* P(attrs(sub2) | attrs(sub1)) from clique K's belief: marg(K → sub1 ∪ sub2) / marg(K → sub1),
 * computed once per calibration (jt->memo) and copied into *out. */
static int conditional_uncached(const dp_jtree *jt, uint32_t K, const uint32_t *given, uint32_t kg,
                                const uint32_t *also, uint32_t ka, const uint32_t *sizes, dp_factor *out);

static int conditional(const dp_jtree *cjt, uint32_t K, const uint32_t *given, uint32_t kg, const uint32_t *also,
                       uint32_t ka, const uint32_t *sizes, dp_factor *out)
{
    dp_jtree *jt = (dp_jtree *)cjt;   /* the memo is a cache of the calibrated beliefs */
    uint64_t gm = 0, am = 0;
    for (uint32_t i = 0; i < kg; i++)
        gm |= (uint64_t)1 << given[i];
    for (uint32_t i = 0; i < ka; i++)
        am |= (uint64_t)1 << also[i];
    size_t hit = SIZE_MAX;
    for (size_t i = 0; i < jt->n_memo && hit == SIZE_MAX; i++)
        if (jt->memo_key[i][0] == K && jt->memo_key[i][1] == gm && jt->memo_key[i][2] == am)
            hit = i;
    if (hit == SIZE_MAX) {
        if (jt->n_memo == jt->cap_memo) {
            size_t cap = jt->cap_memo ? jt->cap_memo * 2 : 64;
            dp_factor *f = realloc(jt->memo, cap * sizeof *f);
            if (!f)
                return DP_ENOMEM;
            jt->memo = f;
            uint64_t(*k)[3] = realloc(jt->memo_key, cap * sizeof *k);
            if (!k)
                return DP_ENOMEM;
            jt->memo_key = k;
            jt->cap_memo = cap;
        }
        int rc = conditional_uncached(jt, K, given, kg, also, ka, sizes, &jt->memo[jt->n_memo]);
        if (rc != DP_OK)
            return rc;
        jt->memo_key[jt->n_memo][0] = K;
        jt->memo_key[jt->n_memo][1] = gm;
        jt->memo_key[jt->n_memo][2] = am;
        hit = jt->n_memo++;
    }
    const dp_factor *src = &jt->memo[hit];
    int rc = dp_factor_init(out, src->attrs, src->k, sizes);
    if (rc == DP_OK)
        memcpy(out->v, src->v, src->cells * sizeof *src->v);
    return rc;
}

static int conditional_uncached(const dp_jtree *jt, uint32_t K, const uint32_t *given, uint32_t kg,
                                const uint32_t *also, uint32_t ka, const uint32_t *sizes, dp_factor *out)
{
    uint32_t u[2 * DP_FACTOR_MAX_ATTRS], ku = 0;
    for (uint32_t x = 0; x < 64; x++) {
        int in = 0;
        for (uint32_t i = 0; i < kg && !in; i++)
            in = given[i] == x;
        for (uint32_t i = 0; i < ka && !in; i++)
            in = also[i] == x;
        if (in)
            u[ku++] = x;
    }
    dp_factor den;
    int rc = dp_factor_init(out, u, ku, sizes);
    if (rc == DP_OK)
        rc = dp_factor_init(&den, given, kg, sizes);
    if (rc != DP_OK)
        return rc;
    dp_factor_sum_into(&jt->belief[K], out, sizes);
    dp_factor_sum_into(&jt->belief[K], &den, sizes);
    dp_factor_mul(out, &den, sizes, 1);
    dp_factor_free(&den);
    return DP_OK;
}

static int pair_chain(const dp_jtree *jt, const uint32_t *sizes, const uint32_t *attrs, double *out);

int dp_jtree_marginal(const dp_jtree *jt, const uint32_t *sizes, const uint32_t *attrs, uint32_t k, double *out)
{
    int K = dp_jtree_find(jt, attrs, k);
    if (K >= 0) {
        dp_factor f;
        int rc = dp_factor_init(&f, attrs, k, sizes);
        if (rc != DP_OK)
            return rc;
        dp_factor_sum_into(&jt->belief[K], &f, sizes);
        memcpy(out, f.v, f.cells * sizeof *out);
        dp_factor_free(&f);
        return DP_OK;
    }
    if (k != 2)
        return DP_ERANGE;
    /* Carry the attribute with fewer categories along the path (the chain's
     * tables are that attribute × separators), then transpose if swapped. */
    if (sizes[attrs[1]] < sizes[attrs[0]]) {
        uint32_t sw[2] = {attrs[1], attrs[0]};
        dp_factor tmp;
        int rc = dp_factor_init(&tmp, attrs, 2, sizes);   /* cell order of (attrs[0], attrs[1]) */
        if (rc != DP_OK)
            return rc;
        rc = pair_chain(jt, sizes, sw, tmp.v);   /* fills P(attrs[0], attrs[1]) in ascending order */
        if (rc == DP_OK)
            memcpy(out, tmp.v, tmp.cells * sizeof *out);
        dp_factor_free(&tmp);
        return rc;
    }
    return pair_chain(jt, sizes, attrs, out);
}

/* P(attrs[0], attrs[1]) for two attributes in different cliques, carrying
 * attrs[0] along the tree path; out in ascending attribute order. */
static int pair_chain(const dp_jtree *jt, const uint32_t *sizes, const uint32_t *attrs, double *out)
{
    /* a and b in different cliques: along the tree path Ka = K0, …, Km = Kb,
     * φ_j(a, S_{j+1}) = Σ_{S_j} φ_{j-1}(a, S_j) · P(S_{j+1} | S_j) and finally
     * P(a, b) = Σ_{S_m} φ_{m-1}(a, S_m) · P(b | S_m): each step only sums
     * over a separator pair, never a whole clique times a. */
    int ka = dp_jtree_find(jt, attrs, 1), kb = dp_jtree_find(jt, attrs + 1, 1);
    if (ka < 0 || kb < 0)
        return DP_ERANGE;
    uint32_t up_a[64], up_b[64], na = 0, nb = 0;
    for (int x = ka; x >= 0; x = jt->parent[x])
        up_a[na++] = (uint32_t)x;
    for (int x = kb; x >= 0; x = jt->parent[x])
        up_b[nb++] = (uint32_t)x;
    while (na > 1 && nb > 1 && up_a[na - 2] == up_b[nb - 2]) {   /* strip the common ancestors above the LCA */
        na--;
        nb--;
    }
    uint32_t path[128], m = 0;
    for (uint32_t i = 0; i < na; i++)
        path[m++] = up_a[i];
    for (uint32_t i = nb - 1; i-- > 0;)
        path[m++] = up_b[i];
    /* separators along the path: S_j = K_{j-1} ∩ K_j */
    dp_factor phi;
    uint32_t s[DP_FACTOR_MAX_ATTRS + 1], ks = 0;
    const dp_factor *k0 = &jt->belief[path[0]], *k1 = &jt->belief[path[1]];
    s[ks++] = attrs[0];
    for (uint32_t i = 0; i < k0->k; i++)
        for (uint32_t j = 0; j < k1->k; j++)
            if (k0->attrs[i] == k1->attrs[j] && k0->attrs[i] != attrs[0])
                s[ks++] = k0->attrs[i];
    for (uint32_t i = 1; i < ks; i++)   /* ascending */
        for (uint32_t j = i; j > 0 && s[j - 1] > s[j]; j--) {
            uint32_t t = s[j];
            s[j] = s[j - 1];
            s[j - 1] = t;
        }
    int rc = conditional(jt, path[0], NULL, 0, s, ks, sizes, &phi);
    if (rc != DP_OK)
        return rc;
    for (uint32_t j = 1; j < m; j++) {
        const dp_factor *kj = &jt->belief[path[j]];
        /* given = K_{j-1} ∩ K_j (phi's attributes other than a), also = next separator (or b) */
        uint32_t given[DP_FACTOR_MAX_ATTRS], kg = 0, nxt[DP_FACTOR_MAX_ATTRS + 1], kn = 0;
        const dp_factor *prev = &jt->belief[path[j - 1]];
        for (uint32_t i = 0; i < kj->k; i++)
            for (uint32_t q = 0; q < prev->k; q++)
                if (kj->attrs[i] == prev->attrs[q])
                    given[kg++] = kj->attrs[i];
        if (j + 1 < m) {
            const dp_factor *kn1 = &jt->belief[path[j + 1]];
            for (uint32_t i = 0; i < kj->k; i++)
                for (uint32_t q = 0; q < kn1->k; q++)
                    if (kj->attrs[i] == kn1->attrs[q])
                        nxt[kn++] = kj->attrs[i];
        } else {
            nxt[kn++] = attrs[1];
        }
        dp_factor cond, next;
        if ((rc = conditional(jt, path[j], given, kg, nxt, kn, sizes, &cond)) != DP_OK) {
            dp_factor_free(&phi);
            return rc;
        }
        uint32_t keep[DP_FACTOR_MAX_ATTRS + 2], kk = 0;
        int a_in = 0;
        for (uint32_t i = 0; i < kn; i++)
            a_in |= nxt[i] == attrs[0];
        for (uint32_t i = 0; i < kn; i++)
            keep[kk++] = nxt[i];
        if (!a_in)
            keep[kk++] = attrs[0];
        for (uint32_t i = 1; i < kk; i++)
            for (uint32_t q = i; q > 0 && keep[q - 1] > keep[q]; q--) {
                uint32_t t = keep[q];
                keep[q] = keep[q - 1];
                keep[q - 1] = t;
            }
        rc = product_onto(&phi, &cond, keep, kk, sizes, &next);
        dp_factor_free(&cond);
        dp_factor_free(&phi);
        if (rc != DP_OK)
            return rc;
        phi = next;
    }
    /* phi is over {a, b}; written out in ascending attribute order */
    uint32_t asc[2] = {attrs[0] < attrs[1] ? attrs[0] : attrs[1], attrs[0] < attrs[1] ? attrs[1] : attrs[0]};
    dp_factor f;
    rc = dp_factor_init(&f, asc, 2, sizes);
    if (rc == DP_OK) {
        dp_factor_sum_into(&phi, &f, sizes);
        memcpy(out, f.v, f.cells * sizeof *out);
        dp_factor_free(&f);
    }
    dp_factor_free(&phi);
    return rc;
}

/* --- every pair of one attribute, in one traversal ------------------------------- */

static void sort_attrs(uint32_t *x, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t q = i; q > 0 && x[q - 1] > x[q]; q--) {
            uint32_t t = x[q];
            x[q] = x[q - 1];
            x[q - 1] = t;
        }
}

/* attributes of K ∩ N, in K's (ascending) order */
static uint32_t shared_attrs(const dp_factor *K, const dp_factor *N, uint32_t *out)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < K->k; i++)
        for (uint32_t q = 0; q < N->k; q++)
            if (K->attrs[i] == N->attrs[q])
                out[n++] = K->attrs[i];
    return n;
}

typedef struct pairs_walk {
    const dp_jtree  *jt;
    const uint32_t  *sizes;
    uint32_t         a;
    const uint8_t   *want;    /* per attribute b: emit P(a, b) */
    int32_t         *home;    /* per attribute: dp_jtree_find of it alone */
    dp_jtree_pair_fn emit;
    void            *ctx;
} pairs_walk;

/* φ(a, S_K) · P(· | S_K) onto {a} ∪ also, from clique K's belief (the step of pair_chain). */
static int carry(const pairs_walk *w, uint32_t K, const dp_factor *phi, const uint32_t *given, uint32_t kg,
                 const uint32_t *also, uint32_t ka, dp_factor *out)
{
    dp_factor cond;
    int rc = conditional(w->jt, K, given, kg, also, ka, w->sizes, &cond);
    if (rc != DP_OK)
        return rc;
    uint32_t keep[DP_FACTOR_MAX_ATTRS + 2], kk = 0;
    int a_in = 0;
    for (uint32_t i = 0; i < ka; i++) {
        keep[kk++] = also[i];
        a_in |= also[i] == w->a;
    }
    if (!a_in)
        keep[kk++] = w->a;
    sort_attrs(keep, kk);
    rc = product_onto(phi, &cond, keep, kk, w->sizes, out);
    dp_factor_free(&cond);
    return rc;
}

static int emit_pair(const pairs_walk *w, uint32_t b, const dp_factor *phi)
{
    uint32_t asc[2] = {w->a < b ? w->a : b, w->a < b ? b : w->a};
    dp_factor f;
    int rc = dp_factor_init(&f, asc, 2, w->sizes);
    if (rc != DP_OK)
        return rc;
    dp_factor_sum_into(phi, &f, w->sizes);
    rc = w->emit(w->ctx, b, f.v);
    dp_factor_free(&f);
    return rc;
}

static int adjacent(const dp_jtree *jt, uint32_t x, uint32_t y)
{
    return jt->parent[x] == (int32_t)y || jt->parent[y] == (int32_t)x;
}

/* 1 if a wanted pair ends in the part of the tree that K leads to, away from
 * `from` (a subtree with none is not walked: its tables would be unused). */
static int leads_to_target(const pairs_walk *w, uint32_t K, uint32_t from)
{
    for (uint32_t i = 0; i < w->jt->belief[K].k; i++) {
        uint32_t b = w->jt->belief[K].attrs[i];
        if (w->want[b] && w->home[b] == (int32_t)K)
            return 1;
    }
    for (uint32_t N = 0; N < w->jt->n_cliques; N++)
        if (N != from && adjacent(w->jt, K, N) && leads_to_target(w, N, K))
            return 1;
    return 0;
}

/* Clique K, entered from `from` with phi = P(a, K ∩ from): emit the wanted
 * pairs whose second attribute lives first in K, then carry phi on. */
static int walk(const pairs_walk *w, uint32_t K, uint32_t from, const dp_factor *phi)
{
    const dp_jtree *jt = w->jt;
    const dp_factor *k = &jt->belief[K];
    uint32_t given[DP_FACTOR_MAX_ATTRS], kg = shared_attrs(k, &jt->belief[from], given);
    int rc = DP_OK;
    for (uint32_t i = 0; i < k->k && rc == DP_OK; i++) {
        uint32_t b = k->attrs[i];
        if (!w->want[b] || w->home[b] != (int32_t)K)
            continue;
        dp_factor last;
        if ((rc = carry(w, K, phi, given, kg, &b, 1, &last)) == DP_OK) {
            rc = emit_pair(w, b, &last);
            dp_factor_free(&last);
        }
    }
    for (uint32_t N = 0; N < jt->n_cliques && rc == DP_OK; N++) {
        if (N == from || !adjacent(jt, K, N) || !leads_to_target(w, N, K))
            continue;
        uint32_t nxt[DP_FACTOR_MAX_ATTRS];
        uint32_t kn = shared_attrs(k, &jt->belief[N], nxt);
        dp_factor next;
        if ((rc = carry(w, K, phi, given, kg, nxt, kn, &next)) == DP_OK) {
            rc = walk(w, N, K, &next);
            dp_factor_free(&next);
        }
    }
    return rc;
}

int dp_jtree_pairs_of(const dp_jtree *jt, const uint32_t *sizes, uint32_t n_attrs, uint32_t a, const uint8_t *want,
                      dp_jtree_pair_fn emit, void *ctx)
{
    int32_t home[64];
    if (n_attrs > 64)
        return DP_ERANGE;
    for (uint32_t x = 0; x < n_attrs; x++)
        home[x] = dp_jtree_find(jt, &x, 1);
    int ka = home[a];
    if (ka < 0)
        return DP_ERANGE;
    pairs_walk w = {jt, sizes, a, want, home, emit, ctx};
    int rc = DP_OK;
    /* The start is pair_chain's first table: P({a} ∪ (K_a ∩ N)) for each neighbour N. */
    for (uint32_t N = 0; N < jt->n_cliques && rc == DP_OK; N++) {
        if (!adjacent(jt, (uint32_t)ka, N) || !leads_to_target(&w, N, (uint32_t)ka))
            continue;
        uint32_t s[DP_FACTOR_MAX_ATTRS + 1], ks = 0, sh[DP_FACTOR_MAX_ATTRS];
        s[ks++] = a;
        uint32_t n = shared_attrs(&jt->belief[ka], &jt->belief[N], sh);
        for (uint32_t i = 0; i < n; i++)
            if (sh[i] != a)
                s[ks++] = sh[i];
        sort_attrs(s, ks);
        dp_factor phi;
        if ((rc = conditional(jt, (uint32_t)ka, NULL, 0, s, ks, sizes, &phi)) == DP_OK) {
            rc = walk(&w, N, (uint32_t)ka, &phi);
            dp_factor_free(&phi);
        }
    }
    return rc;
}
