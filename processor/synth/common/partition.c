/* partition.c — see partition.h. */
#include "synth/common/partition.h"
#include "synth/common/synth.h"

#include "core/dp_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int dp_box_contains(const dp_box *b, const double *x)
{
    for (uint32_t i = 0; i < b->d; i++)
        if (!(x[i] >= b->lo[i] && x[i] <= b->hi[i]))
            return 0;
    return 1;
}

/* Halving in the same floating-point steps everywhere (path, region,
 * sample) is what makes a point's cell and the cell's region agree. */
uint64_t dp_partition_path(const dp_box *b, const double *x, uint32_t depth)
{
    double lo[DP_PARTITION_MAX_DIM], hi[DP_PARTITION_MAX_DIM];
    memcpy(lo, b->lo, sizeof lo);
    memcpy(hi, b->hi, sizeof hi);
    uint64_t path = 0;
    for (uint32_t k = 0; k < depth; k++) {
        uint32_t i = k % b->d;
        double mid = lo[i] + (hi[i] - lo[i]) / 2;
        int up = x[i] >= mid;
        path = path << 1 | (uint64_t)up;
        if (up)
            lo[i] = mid;
        else
            hi[i] = mid;
    }
    return path;
}

void dp_partition_region(const dp_box *b, uint32_t depth, uint64_t path, double *lo, double *hi)
{
    memcpy(lo, b->lo, b->d * sizeof *lo);
    memcpy(hi, b->hi, b->d * sizeof *hi);
    for (uint32_t k = 0; k < depth; k++) {
        uint32_t i = k % b->d;
        double mid = lo[i] + (hi[i] - lo[i]) / 2;
        if (path >> (depth - 1 - k) & 1)
            lo[i] = mid;
        else
            hi[i] = mid;
    }
}

void dp_partition_sample(const dp_box *b, uint32_t depth, uint64_t path, dp_drbg *g, double *out)
{
    double lo[DP_PARTITION_MAX_DIM], hi[DP_PARTITION_MAX_DIM];
    dp_partition_region(b, depth, path, lo, hi);
    dp_partition_sample_region(b->d, lo, hi, g, out);
}

void dp_partition_sample_region(uint32_t d, const double *lo, const double *hi, dp_drbg *g, double *out)
{
    for (uint32_t i = 0; i < d; i++) {
        double u = (double)(dp_drbg_u64(g) >> 11) * 0x1.0p-53;   /* [0, 1) */
        double x = lo[i] + u * (hi[i] - lo[i]);
        /* rounding may land on hi: keep the point in its own cell */
        out[i] = x < hi[i] ? x : nextafter(hi[i], lo[i]);
        if (out[i] < lo[i])
            out[i] = lo[i];
    }
}

void dp_cell_sums_init(dp_cell_sums *s, uint32_t depth)
{
    memset(s, 0, sizeof *s);
    s->depth = depth;
}

void dp_cell_sums_free(dp_cell_sums *s)
{
    free(s->keys);
    free(s->cum);
    memset(s, 0, sizeof *s);
}

void dp_cell_sums_reset(dp_cell_sums *s) { s->n = 0; }

int dp_cell_sums_add(dp_cell_sums *s, uint64_t key, int64_t count)
{
    if (s->n + 1 >= s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        uint64_t *k = realloc(s->keys, cap * sizeof *k);
        if (k)
            s->keys = k;
        int64_t *c = realloc(s->cum, (cap + 1) * sizeof *c);
        if (c)
            s->cum = c;
        if (!k || !c)
            return DP_ENOMEM;
        s->cap = cap;
    }
    if (s->n == 0)
        s->cum[0] = 0;
    if (__builtin_add_overflow(s->cum[s->n], count, &s->cum[s->n + 1]))
        return DP_ERANGE;
    s->keys[s->n] = key;
    s->n++;
    return DP_OK;
}

static size_t lower_bound(const uint64_t *k, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int64_t dp_cell_sums_range(const dp_cell_sums *s, uint32_t k, uint64_t path)
{
    if (s->n == 0)
        return 0;
    size_t a = lower_bound(s->keys, s->n, dp_partition_first(k, path, s->depth));
    size_t b = k == 0 ? s->n : lower_bound(s->keys, s->n, dp_partition_first(k, path + 1, s->depth));
    return s->cum[b] - s->cum[a];
}

int dp_ptree_init(dp_ptree *t, uint32_t max_nodes)
{
    memset(t, 0, sizeof *t);
    t->max_nodes = max_nodes < 1 ? 1 : max_nodes;
    if (!(t->nodes = malloc(16 * sizeof *t->nodes)))
        return DP_ENOMEM;
    t->cap = 16;
    t->n = 1;
    t->nodes[0] = (dp_pnode){0, 0, DP_PTREE_NONE, DP_PTREE_NONE};
    return DP_OK;
}

void dp_ptree_free(dp_ptree *t)
{
    free(t->nodes);
    memset(t, 0, sizeof *t);
}

int dp_ptree_split(dp_ptree *t, uint32_t v)
{
    if (t->nodes[v].child != DP_PTREE_NONE)
        return DP_OK;
    if (t->nodes[v].depth >= DP_PARTITION_MAX_DEPTH || t->n > t->max_nodes - 2 || t->max_nodes < 2)
        return DP_ERANGE;
    if (t->n + 2 > t->cap) {
        uint32_t cap = t->cap > t->max_nodes / 2 ? t->max_nodes : t->cap * 2;
        if (cap < t->n + 2)   /* a restored tree has cap = n, perhaps 1 */
            cap = t->n + 2;
        dp_pnode *p = realloc(t->nodes, (size_t)cap * sizeof *p);
        if (!p)
            return DP_ENOMEM;
        t->nodes = p;
        t->cap = cap;
    }
    dp_pnode *n = &t->nodes[v];
    for (uint32_t j = 0; j < 2; j++)
        t->nodes[t->n + j] = (dp_pnode){n->path << 1 | j, n->depth + 1, v, DP_PTREE_NONE};
    n->child = t->n;
    t->n += 2;
    return DP_OK;
}

void dp_ptree_extend(const dp_ptree *t, const int64_t *C, double *A, double *D)
{
    A[0] = 0;
    for (uint32_t v = 0; v < t->n; v++) {
        uint32_t c = t->nodes[v].child;
        if (c != DP_PTREE_NONE)
            A[c] = A[c + 1] = (A[v] + (double)C[v]) / 2;
    }
    for (uint32_t v = t->n; v-- > 0;) {
        uint32_t c = t->nodes[v].child;
        D[v] = c == DP_PTREE_NONE ? 0 : (double)C[c] + D[c] + (double)C[c + 1] + D[c + 1];
    }
}

int dp_ptree_save(const dp_ptree *t, dp_buf *b)
{
    dp_buf_put_u32(b, t->n);
    for (uint32_t v = 0; v < t->n; v++)
        dp_buf_put_u32(b, t->nodes[v].child);
    return dp_buf_status(b);
}

/* Children are allocated in pairs after their parent (a parent's id is
 * smaller than its children's), but not in parent order: a valid shape has
 * every pair (1,2), (3,4), … claimed by exactly one earlier node. */
int dp_ptree_load(dp_ptree *t, dp_reader *r)
{
    uint32_t n = dp_reader_u32(r);
    /* 4 bytes per node follow: a shorter input is refused before allocating */
    if (dp_reader_status(r) != DP_OK || n < 1 || n > t->max_nodes || n % 2 == 0 || (size_t)n * 4 > r->len - r->off)
        return DP_ECORRUPT;
    dp_pnode *p = realloc(t->nodes, (size_t)n * sizeof *p);
    if (!p)
        return DP_ENOMEM;
    t->nodes = p;
    t->cap = n;
    t->n = 1;   /* a failed load leaves a valid one-node tree */
    for (uint32_t v = 0; v < n; v++)
        t->nodes[v] = (dp_pnode){0, 0, DP_PTREE_NONE, DP_PTREE_NONE};
    for (uint32_t v = 0; v < n; v++) {
        uint32_t c = dp_reader_u32(r);
        if (dp_reader_status(r) != DP_OK)
            return DP_ECORRUPT;
        if (c == DP_PTREE_NONE)
            continue;
        if (c % 2 == 0 || c <= v || c >= n - 1 || t->nodes[c].parent != DP_PTREE_NONE)
            return DP_ECORRUPT;
        t->nodes[v].child = c;
        t->nodes[c].parent = t->nodes[c + 1].parent = v;
    }
    for (uint32_t v = 1; v < n; v++) {   /* parents first: depth and path from the parent */
        uint32_t q = t->nodes[v].parent;
        if (q == DP_PTREE_NONE || t->nodes[q].depth >= DP_PARTITION_MAX_DEPTH)
            return DP_ECORRUPT;
        t->nodes[v].depth = t->nodes[q].depth + 1;
        t->nodes[v].path = t->nodes[q].path << 1 | (uint64_t)(v != t->nodes[q].child);
    }
    t->n = n;
    return DP_OK;
}

void dp_partition_split_count(uint64_t m, int64_t na, int64_t nb, uint64_t *m0, uint64_t *m1)
{
    uint64_t a = na > 0 ? (uint64_t)na : 0, b = nb > 0 ? (uint64_t)nb : 0;
    unsigned __int128 s = (unsigned __int128)a + b;
    *m0 = s == 0 ? m / 2 : (uint64_t)((unsigned __int128)m * a / s);
    *m1 = m - *m0;
}

int dp_box_check_point(const dp_box *b, const dp_payload *p)
{
    if (p->kind != DP_PAYLOAD_POINT)
        return DP_REJECT_WRONG_KIND;
    if (!p->point || p->point_len != b->d)
        return DP_REJECT_OUT_OF_DOMAIN;
    for (uint32_t i = 0; i < b->d; i++)
        if (!isfinite(p->point[i]))
            return DP_REJECT_MALFORMED;
    return dp_box_contains(b, p->point) ? DP_REJECT_NONE : DP_REJECT_OUT_OF_DOMAIN;
}
