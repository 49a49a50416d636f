/* spatial_nodes.c — `spatial`'s per-node arrays: grown with the partition
 * tree, and the consistent extension over them; used by the step
 * (spatial.c) and by snapshot restore (spatial_snapshot.c). */
#include "synth/spatial/spatial_release.h"

#include "core/dp_error.h"

#include <stdlib.h>
#include <string.h>

/* Grow the per-node arrays to the tree's node count (new nodes zeroed). */
int sp_reserve_nodes(spatial_release *m, uint32_t n)
{
    if (n <= m->cap)
        return DP_OK;
    uint32_t cap = m->cap ? m->cap : 16;
    while (cap < n)
        cap = cap > UINT32_MAX / 2 ? n : cap * 2;
#define GROW(field)                                                              \
    do {                                                                         \
        void *p_ = realloc(m->field, (size_t)cap * sizeof *m->field);            \
        if (!p_)                                                                 \
            return DP_ENOMEM;                                                    \
        m->field = p_;                                                           \
        memset(m->field + m->cap, 0, (size_t)(cap - m->cap) * sizeof *m->field); \
    } while (0)
    GROW(cnt);
    GROW(C);
    GROW(A);
    GROW(D);
    GROW(syn);
    GROW(status);
    GROW(prev_status);
    GROW(gen);
    GROW(prev_pts);
    GROW(queue);
    GROW(leaf_pts);
    GROW(weights);
#undef GROW
    m->cap = cap;
    return DP_OK;
}

void sp_extend(spatial_release *m) { dp_ptree_extend(&m->tree, m->C, m->A, m->D); }
