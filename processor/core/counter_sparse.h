/* counter_sparse.h — the sparse-counting engine (seed 004 Alg. 2, after
 * Dwork, Naor, Reingold, Rothblum 2015) shared by the sparse and
 * sparse_inhomogeneous kinds (private to core/; counter_sparse.c).
 *
 * One instance runs Alg. 2 over a window of h steps with privacy
 * parameter ε_alg = fraction·ε (half to the threshold test, half to the
 * tree over segment counts).  Draws are labelled "<prefix>thr",
 * "<prefix>q" and "<prefix>node/…" and keyed by the global step. */
#ifndef DP_COUNTER_SPARSE_H
#define DP_COUNTER_SPARSE_H

#include "core/counter_family.h"

/* Inputs accepted by the sparse kinds (DP_EINVAL beyond). */
#define DP_SPARSE_MAX_INPUT ((int64_t)1 << 40)

typedef struct dp_sparse_seg {
    /* parameters */
    uint64_t   h;
    int64_t    T0;             /* partition threshold ceil(9 ln h / ε_alg) */
    dp_dlap    svt;            /* Lap_Z(4·entries·Δ/ε_svt), threshold and queries */
    double     svt_var;
    dp_cnoise  tree_noise;     /* per node, L = floor(log2 h)+1 levels */
    char       prefix[40];
    /* state */
    dp_bintree tree;
    uint64_t   u;              /* local steps consumed */
    uint64_t   nseg;           /* closed segments */
    uint64_t   seg_start;      /* global step that opened the current segment (0: none yet) */
    int64_t    lambda;         /* its threshold noise (derived from seg_start) */
    int64_t    N;              /* count of the open segment */
    int64_t    Ntil;           /* last tree output */
} dp_sparse_seg;

int  dp_sparse_seg_setup(const dp_counter *c, dp_sparse_seg *e, uint64_t h, double fraction,
                         const char *prefix, char *errstr, size_t errstr_size);
/* Consume x at global step `step`; *out = the current noisy count. */
int  dp_sparse_seg_add(const dp_counter *c, dp_sparse_seg *e, uint64_t step, int64_t x, int64_t *out);
/* Upper bound on E[(out - true count)²] after u local steps (see .c). */
double dp_sparse_seg_bound(const dp_sparse_seg *e, uint64_t u);
void dp_sparse_seg_save(const dp_sparse_seg *e, dp_buf *b);
int  dp_sparse_seg_load(const dp_counter *c, dp_sparse_seg *e, dp_reader *r);

/* E[max of n iid |Lap_Z(b)|²] upper bound (see .c); exposed for tests. */
double dp_sparse_max_lap_sq(dp_rational scale, uint64_t n);

#endif
