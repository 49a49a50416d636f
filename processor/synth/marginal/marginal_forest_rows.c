/* marginal_forest_rows.c — method forest's model as a table (docs/privacy.md
 * §5): the trees of the kept edges, the model's marginal on a pair or an
 * attribute (the base of a marginal newly kept at an epoch's start), and the
 * released rows.  Owns nothing persistent (the structure it fills is
 * marginal_forest.h's); calls core/round and the DRBG; marginal_forest.c
 * and marginal.c call it.  All of it is post-processing of the fitted model.
 *
 * Structure: each tree's root is its smallest attribute; children are
 * visited breadth first, neighbours by attribute index; the trees by root.
 *
 * Model marginals (× N̂): a 1-way marginal is the node marginal; a pair in
 * two trees the product of node marginals / N̂; a pair (i, j) in one tree
 * Σ_l P(l)·P(i | l)·P(j | l), l their lowest common ancestor, P(l) its
 * marginal propagated from the root through the conditionals, P(i | l) the
 * product of the conditionals down the path (the identity if i = l).
 *
 * Rows (exact, keyed DRBG "rows" label): n = round(N̂).  A root's column
 * holds exactly dp_round_systematic(node marginal, n) values, shuffled
 * (Fisher–Yates) over all rows — except the first tree's root, left in
 * value order (as independent's first column); each child, for each value v
 * of its parent held by n_v rows, gets round_systematic(n_v·P(child | v))
 * values shuffled over those rows.  So an edge's released 2-way table is
 * exactly the rounded conditionals, and trees are joined independently (a
 * pair in two trees meets hypergeometrically, as independent's columns). */
#include "synth/marginal/marginal_forest.h"

#include "core/dp_error.h"
#include "core/round.h"

#include <stdlib.h>
#include <string.h>

#define FOREST_MAX_ROWS ((uint64_t)1 << 28)

void dp_forest_structure(marginal_release *m)
{
    const dp_marginal_config *c = &m->cfg;
    dp_forest *f = m->forest;
    static const uint32_t NO = FOREST_NONE;
    uint32_t adj[DP_MARGINAL_MAX_ATTRS][DP_MARGINAL_MAX_ATTRS];
    uint8_t seen[DP_MARGINAL_MAX_ATTRS] = {0};
    for (uint32_t a = 0; a < c->n_attrs; a++) {
        f->parent[a] = -1;
        for (uint32_t b = 0; b < c->n_attrs; b++)
            adj[a][b] = NO;
    }
    for (uint32_t i = 0; i < f->n_kept; i++)
        if (f->kept[i].b != FOREST_NONE)
            adj[f->kept[i].a][f->kept[i].b] = adj[f->kept[i].b][f->kept[i].a] = i;
    uint32_t n = 0;
    for (uint32_t r = 0; r < c->n_attrs; r++) {
        if (seen[r])
            continue;
        seen[r] = 1;
        uint32_t head = n;
        f->order[n++] = r;
        while (head < n) {
            uint32_t u = f->order[head++];
            for (uint32_t v = 0; v < c->n_attrs; v++)
                if (adj[u][v] != NO && !seen[v]) {
                    seen[v] = 1;
                    f->parent[v] = (int32_t)u;
                    f->parent_k[v] = adj[u][v];
                    f->order[n++] = v;
                }
        }
    }
    uint64_t off = 0;
    for (uint32_t a = 0; a < c->n_attrs; a++) {
        f->cond_off[a] = off;
        if (f->parent[a] >= 0)
            off += (uint64_t)c->sizes[f->parent[a]] * c->sizes[a];
    }
    free(f->cond);
    f->cond = calloc(off ? off : 1, sizeof *f->cond);
}

static uint32_t root_of(const dp_forest *f, uint32_t a)
{
    while (f->parent[a] >= 0)
        a = (uint32_t)f->parent[a];
    return a;
}

static uint32_t depth_of(const dp_forest *f, uint32_t a)
{
    uint32_t d = 0;
    while (f->parent[a] >= 0)
        a = (uint32_t)f->parent[a], d++;
    return d;
}

/* P(a | l) for l an ancestor of a (or a itself): sizes[l] × sizes[a] into out (scratch: tmp, same size bound). */
static void down_path(const marginal_release *m, uint32_t l, uint32_t a, double *out, double *tmp)
{
    const dp_marginal_config *c = &m->cfg;
    const dp_forest *f = m->forest;
    uint32_t path[DP_MARGINAL_MAX_ATTRS], n = 0;
    for (uint32_t x = a; x != l; x = (uint32_t)f->parent[x])
        path[n++] = x;
    uint32_t sl = c->sizes[l], cur = l;
    memset(out, 0, (uint64_t)sl * sl * sizeof *out);
    for (uint32_t v = 0; v < sl; v++)
        out[(uint64_t)v * sl + v] = 1;
    while (n-- > 0) {   /* out (sl × sizes[cur]) · P(path[n] | cur) */
        uint32_t nx = path[n], sc = c->sizes[cur], sn = c->sizes[nx];
        const double *cd = f->cond + f->cond_off[nx];
        memset(tmp, 0, (uint64_t)sl * sn * sizeof *tmp);
        for (uint32_t v = 0; v < sl; v++)
            for (uint32_t x = 0; x < sc; x++)
                for (uint32_t y = 0; y < sn && out[(uint64_t)v * sc + x] != 0; y++)
                    tmp[(uint64_t)v * sn + y] += out[(uint64_t)v * sc + x] * cd[(uint64_t)x * sn + y];
        memcpy(out, tmp, (uint64_t)sl * sn * sizeof *out);
        cur = nx;
    }
}

/* A pair in one tree: N̂·Σ_l P(l)·P(a | l)·P(b | l). */
static int tree_pair(const marginal_release *m, uint32_t a, uint32_t b, double *out)
{
    const dp_marginal_config *c = &m->cfg;
    const dp_forest *f = m->forest;
    uint32_t smax = 1;
    for (uint32_t x = 0; x < c->n_attrs; x++)
        smax = c->sizes[x] > smax ? c->sizes[x] : smax;
    double *prop = malloc(m->one_off[c->n_attrs] * sizeof *prop);
    double *pa = malloc((uint64_t)smax * smax * sizeof *pa), *pb = malloc((uint64_t)smax * smax * sizeof *pb);
    double *tmp = malloc((uint64_t)smax * smax * sizeof *tmp);
    if (!prop || !pa || !pb || !tmp) {
        free(prop), free(pa), free(pb), free(tmp);
        return DP_ENOMEM;
    }
    for (uint32_t i = 0; i < c->n_attrs; i++) {   /* BFS order: a parent before its children */
        uint32_t x = f->order[i], sx = c->sizes[x];
        double *px = prop + m->one_off[x];
        if (f->parent[x] < 0) {
            for (uint32_t v = 0; v < sx; v++)
                px[v] = f->N > 0 ? f->node[m->one_off[x] + v] / f->N : 0;
            continue;
        }
        uint32_t p = (uint32_t)f->parent[x];
        const double *pp = prop + m->one_off[p], *cd = f->cond + f->cond_off[x];
        memset(px, 0, sx * sizeof *px);
        for (uint32_t v = 0; v < c->sizes[p]; v++)
            for (uint32_t y = 0; y < sx; y++)
                px[y] += pp[v] * cd[(uint64_t)v * sx + y];
    }
    uint32_t x = a, y = b, dx = depth_of(f, a), dy = depth_of(f, b);
    for (; dx > dy; dx--)
        x = (uint32_t)f->parent[x];
    for (; dy > dx; dy--)
        y = (uint32_t)f->parent[y];
    while (x != y)
        x = (uint32_t)f->parent[x], y = (uint32_t)f->parent[y];
    down_path(m, x, a, pa, tmp);
    down_path(m, x, b, pb, tmp);
    uint32_t sl = c->sizes[x], sa = c->sizes[a], sb = c->sizes[b];
    const double *pl = prop + m->one_off[x];
    memset(out, 0, (uint64_t)sa * sb * sizeof *out);
    for (uint32_t v = 0; v < sl; v++)
        for (uint32_t i = 0; i < sa; i++)
            for (uint32_t j = 0; j < sb; j++)
                out[(uint64_t)i * sb + j] += f->N * pl[v] * pa[(uint64_t)v * sa + i] * pb[(uint64_t)v * sb + j];
    free(prop), free(pa), free(pb), free(tmp);
    return DP_OK;
}

int dp_forest_model_marginal(const marginal_release *m, const forest_kept *A, double *out)
{
    const dp_marginal_config *c = &m->cfg;
    const dp_forest *f = m->forest;
    const double *na = f->node + m->one_off[A->a];
    if (A->b == FOREST_NONE) {
        memcpy(out, na, c->sizes[A->a] * sizeof *out);
        return DP_OK;
    }
    if (root_of(f, A->a) == root_of(f, A->b))
        return tree_pair(m, A->a, A->b, out);
    const double *nb = f->node + m->one_off[A->b];
    uint32_t sb = c->sizes[A->b];
    for (uint64_t k = 0; k < A->cells; k++)
        out[k] = f->N > 0 ? na[k / sb] * nb[k % sb] / f->N : 0;
    return DP_OK;
}

/* Fisher–Yates over the values of column a at rows idx[0..n). */
static void shuffle(int32_t *rows, uint32_t p, uint32_t a, const uint64_t *idx, uint64_t n, dp_drbg *g)
{
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = dp_drbg_uniform(g, i);
        uint64_t ri = idx ? idx[i - 1] : i - 1, rj = idx ? idx[j] : j;
        int32_t t = rows[ri * p + a];
        rows[ri * p + a] = rows[rj * p + a];
        rows[rj * p + a] = t;
    }
}

/* Column a from round_systematic(w, n) values, at rows idx[0..n) (NULL: rows 0..n). */
static void fill(int32_t *rows, uint32_t p, uint32_t a, const double *w, uint32_t size, const uint64_t *idx,
                 uint64_t n, dp_drbg *g, uint64_t *counts)
{
    dp_round_systematic(w, size, n, g, counts);
    uint64_t r = 0;
    for (uint32_t v = 0; v < size; v++)
        for (uint64_t q = 0; q < counts[v]; q++, r++)
            rows[(idx ? idx[r] : r) * p + a] = (int32_t)v;
}

int dp_marginal_forest_rows(const marginal_release *m, uint64_t n, dp_drbg *g, dp_mrow_fn emit, void *ctx)
{
    const dp_marginal_config *c = &m->cfg;
    const dp_forest *f = m->forest;
    const uint32_t p = c->n_attrs;
    if (n == 0)
        return DP_OK;
    if (n > FOREST_MAX_ROWS)
        return DP_ERANGE;
    int32_t *rows = malloc(n * p * sizeof *rows);
    uint64_t *counts = malloc(m->one_off[p] * sizeof *counts), *idx = malloc(n * sizeof *idx);
    uint64_t *start = malloc((m->one_off[p] + 1) * sizeof *start);
    int rc = rows && counts && idx && start ? DP_OK : DP_ENOMEM;
    for (uint32_t i = 0; i < p && rc == DP_OK; i++) {
        uint32_t a = f->order[i], sa = c->sizes[a];
        if (f->parent[a] < 0) {
            fill(rows, p, a, f->node + m->one_off[a], sa, NULL, n, g, counts);
            if (i > 0)
                shuffle(rows, p, a, NULL, n, g);
            continue;
        }
        uint32_t par = (uint32_t)f->parent[a], sp = c->sizes[par];
        memset(start, 0, (sp + 1) * sizeof *start);   /* the rows grouped by the parent's value, in row order */
        for (uint64_t r = 0; r < n; r++)
            start[rows[r * p + par] + 1]++;
        for (uint32_t v = 0; v < sp; v++)
            start[v + 1] += start[v];
        for (uint64_t r = 0; r < n; r++)
            idx[start[rows[r * p + par]]++] = r;
        for (uint32_t v = sp; v > 0; v--)
            start[v] = start[v - 1];
        start[0] = 0;
        for (uint32_t v = 0; v < sp; v++) {
            uint64_t nv = start[v + 1] - start[v];
            if (nv == 0)
                continue;
            fill(rows, p, a, f->cond + f->cond_off[a] + (uint64_t)v * sa, sa, idx + start[v], nv, g, counts);
            shuffle(rows, p, a, idx + start[v], nv, g);
        }
    }
    for (uint64_t i = 0; i < n && rc == DP_OK; i++)
        rc = emit(ctx, rows + i * p);
    free(rows);
    free(counts);
    free(idx);
    free(start);
    return rc;
}
