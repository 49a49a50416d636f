/* hypercube_state.c — the pieces of `hypercube`'s release state that both
 * the step (hypercube.c) and the snapshots (hypercube_snapshot.c) use: the
 * level schedule t_j = ceil(2^j/ε) with each (depth, level)'s counter
 * calibration, a depth's scratch arrays, and the d = 1 history. */
#include "synth/hypercube/hypercube_release.h"

#include "core/dp_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NAME "hypercube"

/* t_j = ceil(2^j/ε); UINT64_MAX past 2^62. */
uint64_t hc_level_start(const hc_release *m, unsigned j)
{
    double v = ceil(ldexp(1.0, (int)j) / m->cfg.epsilon);
    return v < 4.6e18 ? (uint64_t)(v < 1 ? 1 : v) : UINT64_MAX;
}
unsigned hc_level_of(const hc_release *m, uint64_t t)
{
    unsigned r = 0;
    while (r < MAX_LEVEL + 1 && hc_level_start(m, r + 1) <= t)
        r++;
    return r;
}
/* "dense" epochs (docs/privacy.md §8.1): the grid s_k = ceil(2^(k/q)/ε),
 * k = 0, 1, …, which holds every level start t_r = s_{qr}; e(t) = the
 * largest k with s_k <= t (−1 below s_0).  A step taking t from tb to ta
 * ends its epoch iff e(ta) > e(tb): a function of public counts only. */
static uint64_t grid_point(const hc_release *m, int64_t k)
{
    double v = ceil(exp2((double)k / (double)m->cfg.epochs_per_level) / m->cfg.epsilon);
    return v < 4.6e18 ? (uint64_t)(v < 1 ? 1 : v) : UINT64_MAX;
}
static int64_t epoch_index(const hc_release *m, uint64_t t)
{
    if (t < grid_point(m, 0))
        return -1;
    int64_t k = (int64_t)floor((double)m->cfg.epochs_per_level * log2(m->cfg.epsilon * (double)t));
    if (k < 0)
        k = 0;
    while (k > 0 && grid_point(m, k) > t)   /* floating point: settle on the exact integers */
        k--;
    while (grid_point(m, k + 1) <= t)
        k++;
    return k;
}
int hc_epoch_ends(const hc_release *m, uint64_t t_before, uint64_t t_after)
{
    return epoch_index(m, t_after) > epoch_index(m, t_before);
}
/* Counter steps level r can hold, at most (distinct t in it). */
static uint64_t level_horizon(const hc_release *m, unsigned r)
{
    uint64_t lo = r == 0 ? 1 : hc_level_start(m, r), hi = hc_level_start(m, r + 1);
    return hi > lo ? hi - lo : 0;
}
int hc_level_params(hc_release *m, unsigned j, unsigned r, const dp_isc_level **out, char *errstr,
                        size_t errstr_size)
{
    if (r > MAX_LEVEL || j > m->cfg.max_depth)
        return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": level %u beyond %u", r, MAX_LEVEL);
    size_t i = (size_t)j * (MAX_LEVEL + 1) + r;
    if (!m->lv_ready[i]) {
        char why[160] = "";
        int rc = dp_isc_level_prepare(&m->lv[i], dp_hypercube_eps(&m->cfg, j, r), level_horizon(m, r), why, sizeof why);
        if (rc != DP_OK)
            return dp_err(errstr, errstr_size, rc, NAME ": depth %u level %u: %s", j, r, why);
        m->lv_ready[i] = 1;
    }
    *out = &m->lv[i];
    return DP_OK;
}
int hc_grow_scratch(hc_release *m, unsigned depth)
{
    size_t n = (size_t)1 << depth;
    uint64_t *a = realloc(m->m, n * sizeof *a), *b;
    if (!a)
        return DP_ENOMEM;
    m->m = a;
    if (!(b = realloc(m->m_next, n * sizeof *b)))
        return DP_ENOMEM;
    m->m_next = b;
    double *w = realloc(m->weights, n * sizeof *w);
    if (!w)
        return DP_ENOMEM;
    m->weights = w;
    if (!(a = realloc(m->cut, n * sizeof *a)))
        return DP_ENOMEM;
    m->cut = a;
    return DP_OK;
}
int hc_history_append(hc_history *h, uint64_t t, const dp_stats *st)
{
    if (h->steps + 1 >= h->cap_steps) {
        uint64_t cap = h->cap_steps ? h->cap_steps * 2 : 64;
        uint64_t *a = realloc(h->t, cap * sizeof *a);
        if (!a)
            return DP_ENOMEM;
        h->t = a;
        if (!(a = realloc(h->off, (cap + 1) * sizeof *a)))
            return DP_ENOMEM;
        h->off = a;
        h->cap_steps = cap;
    }
    if (h->cells + st->n_cells > h->cap_cells) {
        uint64_t cap = h->cap_cells ? h->cap_cells : 256;
        while (cap < h->cells + st->n_cells)
            cap *= 2;
        uint64_t *k = realloc(h->keys, cap * sizeof *k);
        if (!k)
            return DP_ENOMEM;
        h->keys = k;
        int64_t *c = realloc(h->counts, cap * sizeof *c);
        if (!c)
            return DP_ENOMEM;
        h->counts = c;
        h->cap_cells = cap;
    }
    if (h->steps == 0)
        h->off[0] = 0;
    memcpy(h->keys + h->cells, st->keys, st->n_cells * sizeof *h->keys);
    memcpy(h->counts + h->cells, st->counts, st->n_cells * sizeof *h->counts);
    h->cells += st->n_cells;
    h->t[h->steps++] = t;
    h->off[h->steps] = h->cells;
    return DP_OK;
}
