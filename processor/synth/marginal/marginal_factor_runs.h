/* marginal_factor_runs.h — private to marginal_factor*.c and
 * marginal_jtree_query.c: walking a factor's cells in row-major order while
 * tracking each cell's index in another factor over other attributes. */
#ifndef DP_SYNTH_MARGINAL_FACTOR_RUNS_H
#define DP_SYNTH_MARGINAL_FACTOR_RUNS_H

#include <string.h>

#include "synth/marginal/marginal_factor.h"

/* Odometer over f's cells giving each cell's index in g (g's attributes
 * not in f contribute 0: callers only map onto subsets, or broadcast). */
typedef struct odo {
    uint32_t k;
    uint32_t size[DP_FACTOR_MAX_ATTRS];
    uint64_t mult[DP_FACTOR_MAX_ATTRS];
    uint32_t d[DP_FACTOR_MAX_ATTRS];
    uint64_t idx;
} odo;

static inline void odo_init(odo *o, const dp_factor *f, const dp_factor *g, const uint32_t *sizes)
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
static inline void runs_init(odo *o, const dp_factor *f, const dp_factor *g, const uint32_t *sizes, uint64_t *stride,
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

#endif
