/* w1.c — exact Wasserstein-1 solvers for bench_accuracy_hypercube (w1.h). */
#include "w1.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "bench_accuracy_hypercube: out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

static void *xcalloc(size_t n, size_t s)
{
    void *p = calloc(n ? n : 1, s);
    if (!p) {
        fprintf(stderr, "bench_accuracy_hypercube: out of memory\n");
        exit(2);
    }
    return p;
}

/* --- d = 1 ------------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* On the line the monotone matching is optimal for any convex cost of |x − y|. */
double w1_1d(double *x, double *y, size_t n)
{
    if (n == 0)
        return 0;
    qsort(x, n, sizeof *x, cmp_double);
    qsort(y, n, sizeof *y, cmp_double);
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += fabs(x[i] - y[i]);
    return s / (double)n;
}

/* --- exact assignment (any d) ------------------------------------------------------------ */

static double linf(const double *a, const double *b, unsigned d)
{
    double m = 0;
    for (unsigned k = 0; k < d; k++) {
        double v = fabs(a[k] - b[k]);
        if (v > m)
            m = v;
    }
    return m;
}

/* The Hungarian method in its shortest-augmenting-path form (Kuhn–Munkres
 * with potentials u, v; row i is added by a Dijkstra over columns).  Costs
 * are computed on the fly, so memory is O(n). */
double w1_assignment(const double *x, const double *y, size_t n, unsigned d)
{
    if (n == 0)
        return 0;
    double *u = xcalloc(n + 1, sizeof *u), *v = xcalloc(n + 1, sizeof *v), *minv = xmalloc((n + 1) * sizeof *minv);
    size_t *p = xcalloc(n + 1, sizeof *p), *way = xcalloc(n + 1, sizeof *way);
    char *used = xmalloc(n + 1);
    for (size_t i = 1; i <= n; i++) {
        p[0] = i;
        size_t j0 = 0;
        for (size_t j = 0; j <= n; j++)
            minv[j] = INFINITY;
        memset(used, 0, n + 1);
        do {
            used[j0] = 1;
            size_t i0 = p[j0], j1 = 0;
            double delta = INFINITY;
            const double *xi = x + (i0 - 1) * d;
            for (size_t j = 1; j <= n; j++) {
                if (used[j])
                    continue;
                double cur = linf(xi, y + (j - 1) * d, d) - u[i0] - v[j];
                if (cur < minv[j]) {
                    minv[j] = cur;
                    way[j] = j0;
                }
                if (minv[j] < delta) {
                    delta = minv[j];
                    j1 = j;
                }
            }
            for (size_t j = 0; j <= n; j++) {
                if (used[j]) {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
        } while (p[j0] != 0);
        do {
            size_t j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
        } while (j0);
    }
    double cost = 0;
    for (size_t j = 1; j <= n; j++)
        cost += linf(x + (p[j] - 1) * d, y + (j - 1) * d, d);
    free(u), free(v), free(minv), free(p), free(way), free(used);
    return cost / (double)n;
}

/* --- d = 2: network simplex on the king graph -------------------------------------------
 *
 * Uncapacitated transshipment: minimise Σ c_e f_e, f >= 0, net outflow of
 * node v = b[v].  Primal network simplex (Dantzig; the data structures of
 * LEMON's NetworkSimplex simplified): a spanning tree rooted at an
 * artificial node R, joined to every node by an artificial arc of cost M
 * (larger than any path, so an optimum uses none); block-search pricing;
 * the leaving arc chosen by the strongly-feasible rule (the last blocking
 * arc met going around the cycle from the join node in the flow's
 * direction), which rules out cycling under degeneracy.  The tree is kept
 * as parent / pred arc / direction, depth (for the join) and doubly linked
 * child lists (to walk the re-hung subtree and shift its potentials).
 * Integer costs and flows: the result is exact. */

enum { UP = 1, DOWN = -1 };        /* pred arc points to the parent (UP) or from it (DOWN) */
enum { TREE = 0, LOWER = 1 };      /* arc states: in the tree, or non-tree at flow 0 */

typedef struct ns {
    int64_t  n, m;                 /* nodes (root = n), arcs (artificial ones last) */
    int32_t *src, *tgt;
    int64_t *cost, *flow;
    int8_t  *state;
    int64_t *pi;
    int32_t *parent, *pred, *depth, *first, *next, *prev, *stack;
    int8_t  *dir;
} ns;

static inline int64_t reduced(const ns *s, int64_t e) { return s->cost[e] + s->pi[s->src[e]] - s->pi[s->tgt[e]]; }

static void add_child(ns *s, int32_t p, int32_t c)
{
    s->next[c] = s->first[p];
    s->prev[c] = -1;
    if (s->first[p] >= 0)
        s->prev[s->first[p]] = c;
    s->first[p] = c;
}

static void remove_child(ns *s, int32_t p, int32_t c)
{
    if (s->prev[c] >= 0)
        s->next[s->prev[c]] = s->next[c];
    else
        s->first[p] = s->next[c];
    if (s->next[c] >= 0)
        s->prev[s->next[c]] = s->prev[c];
}

static int64_t ns_solve(ns *s)
{
    const int64_t n = s->n, m = s->m;
    const int32_t R = (int32_t)n;
    int64_t block = (int64_t)sqrt((double)m);
    if (block < 10)
        block = 10;
    int64_t next_arc = 0;
    for (;;) {
        /* pricing: the most negative reduced cost within the first block
         * (scanned cyclically from where the last search stopped) that has one */
        int64_t in = -1, best = 0, cnt = block, scanned = 0;
        for (int64_t e = next_arc; scanned < m; scanned++, e = e + 1 == m ? 0 : e + 1) {
            if (s->state[e] == LOWER) {
                int64_t c = reduced(s, e);
                if (c < best) {
                    best = c;
                    in = e;
                }
            }
            if (--cnt == 0) {
                if (in >= 0) {
                    next_arc = e + 1 == m ? 0 : e + 1;
                    break;
                }
                cnt = block;
            }
        }
        if (in < 0)
            break;   /* optimal */
        int32_t first = s->src[in], second = s->tgt[in];
        /* the join: the deepest common ancestor of the two endpoints */
        int32_t a = first, b = second;
        while (a != b) {
            if (s->depth[a] >= s->depth[b])
                a = s->parent[a];
            else
                b = s->parent[b];
        }
        int32_t join = a;
        /* Flow goes join → … → first → (in) → second → … → join.  Only arcs
         * traversed backwards can block (the others are uncapacitated). */
        int64_t delta = INT64_MAX;
        int32_t u_out = -1;
        int result = 0;
        for (int32_t u = first; u != join; u = s->parent[u])
            if (s->dir[u] == UP && s->flow[s->pred[u]] < delta) {
                delta = s->flow[s->pred[u]];
                u_out = u;
                result = 1;
            }
        for (int32_t u = second; u != join; u = s->parent[u])
            if (s->dir[u] == DOWN && s->flow[s->pred[u]] <= delta) {
                delta = s->flow[s->pred[u]];
                u_out = u;
                result = 2;
            }
        if (result == 0) {
            fprintf(stderr, "bench_accuracy_hypercube: network simplex: unbounded cycle (bug)\n");
            exit(2);
        }
        if (delta > 0) {
            s->flow[in] += delta;
            for (int32_t u = first; u != join; u = s->parent[u])
                s->flow[s->pred[u]] += s->dir[u] == UP ? -delta : delta;
            for (int32_t u = second; u != join; u = s->parent[u])
                s->flow[s->pred[u]] += s->dir[u] == UP ? delta : -delta;
        }
        /* the tree: drop pred[u_out], re-hang u_out's subtree from u_in by `in` */
        int32_t u_in = result == 1 ? first : second, v_in = result == 1 ? second : first;
        int64_t rc = reduced(s, in);
        int64_t sigma = u_in == s->src[in] ? -rc : rc;   /* makes `in` tight */
        s->state[s->pred[u_out]] = LOWER;
        s->state[in] = TREE;
        remove_child(s, s->parent[u_out], u_out);
        int32_t w = u_in, new_parent = v_in, new_arc = (int32_t)in;
        for (;;) {
            int32_t old_parent = s->parent[w], old_arc = s->pred[w];
            if (w != u_out)
                remove_child(s, old_parent, w);
            s->parent[w] = new_parent;
            s->pred[w] = new_arc;
            s->dir[w] = s->src[new_arc] == w ? UP : DOWN;
            add_child(s, new_parent, w);
            if (w == u_out)
                break;
            new_parent = w;
            new_arc = old_arc;
            w = old_parent;
        }
        /* potentials and depths of the re-hung subtree */
        int64_t sp = 0;
        s->stack[sp++] = u_in;
        while (sp) {
            int32_t x = s->stack[--sp];
            s->pi[x] += sigma;
            s->depth[x] = s->depth[s->parent[x]] + 1;
            for (int32_t c = s->first[x]; c >= 0; c = s->next[c])
                s->stack[sp++] = c;
        }
    }
    int64_t total = 0;
    for (int64_t e = 0; e < m; e++) {
        if (s->src[e] == R || s->tgt[e] == R) {
            if (s->flow[e] != 0) {
                fprintf(stderr, "bench_accuracy_hypercube: network simplex: infeasible (bug)\n");
                exit(2);
            }
            continue;
        }
        total += s->cost[e] * s->flow[e];
    }
    return total;
}

long long w1_king_flow(const long long *bal, unsigned G)
{
    static const int DX[8] = {-1, -1, -1, 0, 0, 1, 1, 1}, DY[8] = {-1, 0, 1, -1, 1, -1, 0, 1};
    ns s;
    s.n = (int64_t)G * G;
    int64_t real = 0;
    for (unsigned i = 0; i < G; i++)
        for (unsigned j = 0; j < G; j++)
            for (int k = 0; k < 8; k++) {
                long ii = (long)i + DX[k], jj = (long)j + DY[k];
                real += ii >= 0 && jj >= 0 && ii < (long)G && jj < (long)G;
            }
    s.m = real + s.n;
    if (s.n + 1 > INT32_MAX || s.m > INT32_MAX) {
        fprintf(stderr, "bench_accuracy_hypercube: grid %u too large\n", G);
        exit(2);
    }
    s.src = xmalloc(s.m * sizeof *s.src);
    s.tgt = xmalloc(s.m * sizeof *s.tgt);
    s.cost = xmalloc(s.m * sizeof *s.cost);
    s.flow = xcalloc(s.m, sizeof *s.flow);
    s.state = xmalloc(s.m);
    s.pi = xcalloc(s.n + 1, sizeof *s.pi);
    s.parent = xmalloc((s.n + 1) * sizeof *s.parent);
    s.pred = xmalloc((s.n + 1) * sizeof *s.pred);
    s.depth = xcalloc(s.n + 1, sizeof *s.depth);
    s.first = xmalloc((s.n + 1) * sizeof *s.first);
    s.next = xmalloc((s.n + 1) * sizeof *s.next);
    s.prev = xmalloc((s.n + 1) * sizeof *s.prev);
    s.stack = xmalloc((s.n + 1) * sizeof *s.stack);
    s.dir = xmalloc(s.n + 1);
    int64_t e = 0;
    for (unsigned i = 0; i < G; i++)
        for (unsigned j = 0; j < G; j++)
            for (int k = 0; k < 8; k++) {
                long ii = (long)i + DX[k], jj = (long)j + DY[k];
                if (ii < 0 || jj < 0 || ii >= (long)G || jj >= (long)G)
                    continue;
                s.src[e] = (int32_t)(i * G + j);
                s.tgt[e] = (int32_t)(ii * (long)G + jj);
                s.cost[e] = 1;
                s.state[e] = LOWER;
                e++;
            }
    /* the artificial tree: every node a child of R; M exceeds any path's cost */
    const int32_t R = (int32_t)s.n;
    const int64_t M = (int64_t)G * 2 + 1;
    for (int32_t v = 0; v <= R; v++)
        s.first[v] = -1;
    s.parent[R] = -1;
    s.depth[R] = 0;
    for (int32_t v = 0; v < R; v++, e++) {
        if (bal[v] >= 0) {
            s.src[e] = v, s.tgt[e] = R, s.flow[e] = bal[v], s.pi[v] = -M, s.dir[v] = UP;
        } else {
            s.src[e] = R, s.tgt[e] = v, s.flow[e] = -bal[v], s.pi[v] = M, s.dir[v] = DOWN;
        }
        s.cost[e] = M;
        s.state[e] = TREE;
        s.parent[v] = R;
        s.pred[v] = (int32_t)e;
        s.depth[v] = 1;
        add_child(&s, R, v);
    }
    int64_t total = ns_solve(&s);
    free(s.src), free(s.tgt), free(s.cost), free(s.flow), free(s.state), free(s.pi), free(s.parent), free(s.pred);
    free(s.depth), free(s.first), free(s.next), free(s.prev), free(s.stack), free(s.dir);
    return (long long)total;
}

static unsigned grid_index(double v, unsigned G)
{
    double c = floor(v * G);
    return c < 0 ? 0 : c >= G ? G - 1 : (unsigned)c;
}

double w1_grid2(const double *x, const double *y, size_t n, unsigned G, double *disc)
{
    long long *bal = xcalloc((size_t)G * G, sizeof *bal);
    double dsum = 0;
    for (int side = 0; side < 2; side++) {
        const double *p = side ? y : x;
        for (size_t i = 0; i < n; i++) {
            unsigned a = grid_index(p[2 * i], G), b = grid_index(p[2 * i + 1], G);
            bal[(size_t)a * G + b] += side ? -1 : 1;
            double ca = (a + 0.5) / G, cb = (b + 0.5) / G;   /* the cell's centre */
            dsum += fmax(fabs(p[2 * i] - ca), fabs(p[2 * i + 1] - cb));
        }
    }
    long long steps = w1_king_flow(bal, G);
    free(bal);
    if (disc)
        *disc = n ? dsum / (double)n : 0;
    return n ? (double)steps / ((double)G * (double)n) : 0;
}
