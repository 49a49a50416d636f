/* marginal_jtree_query.c — marginals of a calibrated junction tree
 * (marginal_factor.h): inside one clique from its belief; a pair across
 * cliques by carrying one attribute along the tree path (variable
 * elimination on the calibrated tree, Koller & Friedman 2009 §10.3.3 "queries
 * outside a clique"), all pairs of one attribute in one walk.  The
 * conditionals P(S' | S) of a clique are memoised per calibration. */
#include "synth/marginal/marginal_factor.h"
#include "synth/marginal/marginal_factor_runs.h"

#include "core/dp_error.h"

#include <stdlib.h>
#include <string.h>

/* A pair query's product runs over {a} ∪ two separators of one clique — at
 * most max_model_cells × |a| cells, nothing of that size allocated (Adult at
 * the default cap: 2^20 × 100).  This only guards against a runaway loop;
 * hitting the old 2^26 stopped a stream mid-way once the tree grew. */
#define MAX_QUERY_CELLS ((uint64_t)1 << 40)

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
 * computed once per calibration (jt->memo).  *out is the memo's table
 * itself (a shallow copy, not to be freed): its values live until the
 * beliefs change, though the memo's array of entries may move. */
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
    *out = jt->memo[hit];
    return DP_OK;
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

typedef struct pair_out { double *out; uint64_t cells; } pair_out;
static int copy_pair(void *ctx, uint32_t b, const double *p_ab);

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
    /* Across cliques: carry the attribute with fewer categories along the
     * path (the carried tables are that attribute × separators). */
    uint32_t a = sizes[attrs[1]] < sizes[attrs[0]] ? attrs[1] : attrs[0], b = a == attrs[0] ? attrs[1] : attrs[0];
    if (b >= 64)
        return DP_ERANGE;
    uint8_t want[64] = {0};
    want[b] = 1;
    pair_out po = {out, (uint64_t)sizes[a] * sizes[b]};
    return dp_jtree_pairs_of(jt, sizes, a, want, copy_pair, &po);
}

/* --- every pair of one attribute, in one traversal ------------------------------- */

/* Along the tree path K_a = K_0, …, K_m = K_b (S_j = K_{j-1} ∩ K_j):
 *   φ_1(a, S_1) = P({a} ∪ S_1) from K_0's belief,
 *   φ_{j+1}(a, S_{j+1}) = Σ_{S_j \ S_{j+1}} φ_j(a, S_j) · P(S_{j+1} | S_j),
 *   P(a, b) = Σ_{S_m} φ_m(a, S_m) · P(b | S_m):
 * each step sums over a separator pair, never a clique times a.  Paths from
 * K_a share their prefixes, so one walk from K_a answers every b. */

static int copy_pair(void *ctx, uint32_t b, const double *p_ab)
{
    (void)b;
    pair_out *po = ctx;
    memcpy(po->out, p_ab, po->cells * sizeof *p_ab);
    return DP_OK;
}

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
    return product_onto(phi, &cond, keep, kk, w->sizes, out);
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

int dp_jtree_pairs_of(const dp_jtree *jt, const uint32_t *sizes, uint32_t a, const uint8_t *want,
                      dp_jtree_pair_fn emit, void *ctx)
{
    int32_t home[64];
    for (uint32_t x = 0; x < 64; x++)
        home[x] = -1;
    for (uint32_t K = jt->n_cliques; K-- > 0;)   /* the lowest clique holding x, as dp_jtree_find */
        for (uint32_t i = 0; i < jt->belief[K].k; i++)
            home[jt->belief[K].attrs[i]] = (int32_t)K;
    if (a >= 64)
        return DP_ERANGE;
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
        if ((rc = conditional(jt, (uint32_t)ka, NULL, 0, s, ks, sizes, &phi)) == DP_OK)
            rc = walk(&w, N, (uint32_t)ka, &phi);
    }
    return rc;
}
